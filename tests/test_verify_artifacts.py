"""`attempt verify` re-hashes every stored artifact (spec/checkpoint.md "What `attempt verify`
checks"): bytes in the artifacts table that are not the artifact's, or that do not decompress,
are a problem named by artifact id (exit 1, text and --json), found by one process and by the
worker processes alike, and leave no damage mark (the rows are not the chain)."""

import json
import os
import sys
import zlib

import apsw
import pytest
from conftest import run_attempt

from attemptdb.cli.main import run
from attemptdb.evidence import artifacts
from attemptdb.integrity import damage
from attemptdb.integrity import verify as verify_mod

PY = sys.executable
FIRST, SECOND = b"first output\n" * 500, b"second output\n"


def aid_of(data: bytes) -> str:
    import hashlib
    return artifacts.artifact_id(hashlib.sha256(data).hexdigest())


@pytest.fixture
def kept(db, tmp_path):
    """A database holding two kept stdout artifacts."""
    for data in (FIRST, SECOND):
        p = run_attempt(["run", "--db", db, "--attach-output", "--", PY, "-c",
                         f"import sys; sys.stdout.buffer.write({data!r})"], cwd=tmp_path)
        assert p.returncode == 0, p.stderr
    return db


def edit(db, sql, *params):
    c = apsw.Connection(db)
    try:
        c.execute(sql, params)
    finally:
        c.close()


def verify_json(db, capsys):
    capsys.readouterr()
    code = run(["verify", "--db", db, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(params=["one process", "workers"])
def how(request, monkeypatch):
    if request.param == "workers":  # even a small file is checked by two worker processes
        monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 1)
        monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return request.param


def test_intact_artifacts_verify_ok(kept, capsys, how):
    code, rep = verify_json(kept, capsys)
    assert code == 0 and rep["ok"], rep


def test_other_bytes_under_an_artifact_s_id_are_a_problem_named_by_its_id(kept, capsys, how):
    aid = aid_of(FIRST)
    edit(kept, "UPDATE artifacts SET content = ?, stored_bytes = ? WHERE artifact_id = ?",
         zlib.compress(FIRST + b"x"), len(zlib.compress(FIRST + b"x")), aid)
    code, rep = verify_json(kept, capsys)
    assert code == 1 and not rep["ok"]
    [p] = rep["problems"]
    assert p["kind"] == "artifact_changed" and p["artifact_id"] == aid and aid in p["message"]
    assert damage.marked(kept) is None  # a problem, not a damage mark: the chain is sound
    p = run_attempt(["verify", "--db", kept])
    assert p.returncode == 1 and p.stdout.decode().startswith(f"problem: artifact {aid}: its stored bytes")
    # the readers refuse the same bytes
    p = run_attempt(["artifact", aid, "--db", kept])
    assert p.returncode == 1 and b"error[artifact.changed]" in p.stderr


def test_the_same_bytes_with_another_size_are_a_problem(kept, capsys, how):
    edit(kept, "UPDATE artifacts SET size_bytes = size_bytes + 1 WHERE artifact_id = ?", aid_of(SECOND))
    code, rep = verify_json(kept, capsys)
    assert code == 1 and [p["kind"] for p in rep["problems"]] == ["artifact_changed"]


def test_bytes_that_do_not_decompress_or_a_malformed_row_are_unreadable_artifacts(kept, capsys, how):
    edit(kept, "UPDATE artifacts SET content = x'00112233' WHERE artifact_id = ?", aid_of(SECOND))
    edit(kept, "UPDATE artifacts SET sha256 = 'nothex' WHERE artifact_id = ?", aid_of(FIRST))
    code, rep = verify_json(kept, capsys)
    assert code == 1
    got = sorted((p["kind"], p["artifact_id"]) for p in rep["problems"])
    assert got == sorted([("artifact_unreadable", aid_of(SECOND)), ("artifact_unreadable", aid_of(FIRST))])
    assert damage.marked(kept) is None
    edit(kept, "UPDATE artifacts SET artifact_id = 'junk' WHERE artifact_id = ?", aid_of(FIRST))
    code, rep = verify_json(kept, capsys)
    assert code == 1 and any(p["artifact_id"] is None and "rowid=" in p["message"] for p in rep["problems"])


def test_a_row_without_bytes_is_not_checked(kept, capsys, how):
    edit(kept, "UPDATE artifacts SET content = NULL, encoding = NULL, stored_bytes = NULL")
    code, rep = verify_json(kept, capsys)
    assert code == 0 and rep["ok"], rep


def test_a_row_other_than_what_its_event_records_is_a_changed_artifact(kept):
    """The cross-check with the event naming the id (here the event's size is edited, its
    trigger dropped first: stored_findings reads the events, verify's chain check is apart)."""
    aid = aid_of(SECOND)
    c = apsw.Connection(kept)
    try:
        assert artifacts.stored_findings(c) == []
        c.execute("DROP TRIGGER events_no_update")
        c.execute("UPDATE events SET attrs_json = replace(attrs_json, '\"x_attempt_stdout_bytes\":14', "
                  "'\"x_attempt_stdout_bytes\":15') WHERE instr(attrs_json, ?) > 0", (aid,))
        assert c.changes() == 1
        [(shown, kind, why)] = artifacts.stored_findings(c)
    finally:
        c.close()
    assert (shown, kind) == (aid, "artifact_changed") and "event ev_" in why
