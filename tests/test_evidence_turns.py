"""Each `attempt run` (and each command the Recorder records) is a turn of its own, so an
attempt of its own with its own outcome (spec/evidence.md §2): in a named session a failed run
stays failed when a later run succeeds. Recording never holds the command up on a locked file
(the run's events go to the spool quickly), and `attempt artifact --info` prints booleans as
true/false."""

import json
import os
import shlex
import subprocess
import sys
import time

import pytest
from conftest import run_attempt
from test_evidence_run import attempt, events, sql

import attemptdb

PY = sys.executable
FAIL = 'import sys; print("deploy failed"); sys.exit(1)'


@pytest.fixture
def where(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    return d


def test_a_failed_run_stays_failed_when_a_later_run_in_the_session_succeeds(db, where):
    """The walkthrough's CI pattern: ATTEMPTDB_SESSION=ci-…, a failing step, a passing one."""
    env = {"ATTEMPTDB_SESSION": "ci-77"}
    p = attempt("run", "--", PY, "-c", FAIL, db=db, cwd=where, env=env, ok=False)
    assert p.returncode == 1 and p.stdout == b"deploy failed\n"
    attempt("run", "--", PY, "-c", "pass", db=db, cwd=where, env=env)
    attempt("close", db=db, env=env)
    failures = json.loads(attempt("failures", "--json", db=db).stdout)["failures"]
    assert [(f["outcome"], f["failure_class"], f["provider"]) for f in failures] == [
        ("failed", "nonzero_exit", "attempt")]
    rows = json.loads(attempt("query", "SHOW ATTEMPTS", "--json", db=db).stdout)
    rows.sort(key=lambda r: r["turn_index"])
    assert [(r["outcome"], r["failure_class"], r["objective"]) for r in rows] == [
        ("failed", "nonzero_exit", shlex.join([PY, "-c", FAIL])), ("succeeded", None, shlex.join([PY, "-c", "pass"]))]
    assert failures[0]["attempt_id"] == rows[0]["attempt_id"]
    assert len({r["turn_id"] for r in rows}) == 2 and len({r["session_id"] for r in rows}) == 1
    shown = attempt("timeline", "--tools", db=db, env={"COLUMNS": "200"}).stdout.decode()
    first, second = shown.find(rows[0]["attempt_id"][:12]), shown.find(rows[1]["attempt_id"][:12])
    assert 0 <= first < second, shown
    assert "failed" in shown[first:second] and "succeeded" in shown[second:], shown
    # the run's turn opener: a prompt_submitted of its own, the command line its text
    opener = [e for e in events(db) if e["provider_event_name"] == "run.started"]
    assert [e["kind"] for e in opener] == ["prompt_submitted"] * 2
    assert opener[0]["content"] == {"prompt": shlex.join([PY, "-c", FAIL])} and opener[0]["attrs"]["source"] == "run"
    assert sql(db, "SELECT prompt_count, turn_count, tool_call_count FROM sessions") == [(2, 2, 2)]
    assert run_attempt(["reproject", "--check", "--db", db]).returncode == 0


def test_the_same_failing_run_twice_is_a_repeated_failure_that_needs_you(db, where):
    env = {"ATTEMPTDB_SESSION": "ci-78"}
    for _ in range(2):
        attempt("run", "--", PY, "-c", FAIL, db=db, cwd=where, env=env, ok=False)
    assert sql(db, "SELECT outcome, failure_class FROM attempts") == [("failed", "nonzero_exit")] * 2
    rows = json.loads(attempt("needs-you", "--json", db=db).stdout)["needs_you"]
    assert [(r["kind"], r["provider"]) for r in rows] == [("repeated_failure", "attempt")], rows


def test_the_recorder_records_each_run_and_command_as_an_attempt_of_its_own(db, where):
    """README's example: rec.run([... exit 2]) then rec.command([...], exit_code=0). The command
    started a minute ago (before the run ended): its turn still opens after the run's."""
    with attemptdb.Recorder(db=db, session="ci-5", cwd=str(where)) as rec:
        res = rec.run([PY, "-c", "import sys; sys.exit(2)"], echo=False)
        assert res.returncode == 2
        rec.command(["make", "deploy"], exit_code=0, duration_ms=60_000)
    rows = sql(db, "SELECT outcome, failure_class, objective FROM attempts ORDER BY turn_index")
    assert rows == [("failed", "nonzero_exit", shlex.join([PY, "-c", "import sys; sys.exit(2)"])),
                    ("succeeded", None, "make deploy")], rows
    evs = events(db)
    opener = [e for e in evs if e["provider_event_name"] == "run.started"]
    assert [e["attrs"]["source"] for e in opener] == ["run", "command"]
    stopped = [e for e in evs if e["provider_event_name"] == "run.stopped"][0]
    assert opener[1]["observed_at"] > stopped["observed_at"]
    deploy = [e for e in evs if e["provider_event_name"] == "command.finished"][1]
    assert deploy["duration_ms"] == 60_000
    failures = json.loads(attempt("failures", "--json", db=db).stdout)["failures"]
    assert [f["failure_class"] for f in failures] == ["nonzero_exit"]


def test_under_metadata_only_a_run_s_turn_keeps_no_command_text(tmp_path, home, where):
    db = str(tmp_path / "m.db")
    attempt("init", "--capture-mode", "metadata_only", db=db)
    marker = "QZ" + "JX" * 12
    env = {"ATTEMPTDB_SESSION": "ci-m"}
    attempt("run", "--", PY, "-c", f"import sys; sys.exit('{marker}' == '')", db=db, cwd=where, env=env)
    attempt("run", "--", PY, "-c", f"import sys; sys.exit('{marker}' != '')", db=db, cwd=where, env=env, ok=False)
    attempt("close", db=db, env=env)
    for suffix in ("", "-wal"):
        if os.path.exists(db + suffix):
            assert marker.encode() not in open(db + suffix, "rb").read(), suffix
    opener = [e for e in events(db) if e["provider_event_name"] == "run.started"]
    assert len(opener) == 2 and all("content" not in e for e in opener)
    assert all(e["attrs"]["prompt_chars"] > len(marker) for e in opener)
    assert sql(db, "SELECT outcome, objective FROM attempts ORDER BY turn_index") == [
        ("succeeded", None), ("failed", None)]


def test_a_secret_in_the_command_line_is_redacted_in_the_run_s_objective(db, where):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    attempt("run", "--", PY, "-c", "pass", f"--token={token}", db=db, cwd=where)
    (objective,), = sql(db, "SELECT objective FROM attempts")
    assert token not in objective and "[REDACTED:" in objective
    for suffix in ("", "-wal"):
        if os.path.exists(db + suffix):
            assert token.encode() not in open(db + suffix, "rb").read(), suffix


_LOCKER = ("import sqlite3, sys\n"
           "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
           "c.execute('BEGIN EXCLUSIVE')\n"
           "print('locked', flush=True)\n"
           "sys.stdin.read()\n")


def test_a_locked_database_does_not_hold_up_the_command_and_loses_nothing(db, where):
    """Another process holds the write lock: the command starts at once, `attempt run` returns
    soon after it ends, its events wait in the spool and are stored by the next read."""
    attempt("init", db=db)
    locker = subprocess.Popen([PY, "-c", _LOCKER, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert locker.stdout.readline() == b"locked\n"
        t0 = time.time()
        p = attempt("run", "--", PY, "-c", "import time; print(repr(time.time()))", db=db, cwd=where)
        t1 = time.time()
        started = float(p.stdout)
        assert started - t0 < 3, (started - t0, p.stderr)  # not the 10 s busy timeout of a write
        assert t1 - started < 3, (t1 - started, p.stderr)
        err = p.stderr.decode()
        assert "wait in the spool" in err and "Error" not in err, err
        assert "stdout artifact not stored: error[store.busy]" in err, err
        assert locker.poll() is None  # the lock was held throughout
    finally:
        locker.stdin.close()
        locker.wait(timeout=30)
    names = [e["provider_event_name"] for e in events(db)]  # a read drains the spool
    assert names == ["session.started", "run.started", "command.started", "command.finished", "run.stopped",
                     "session.stopped"], names
    assert sql(db, "SELECT outcome FROM attempts") == [("succeeded",)]
    assert not [n for n in os.listdir(db + ".spool") if n.endswith(".event")]


def test_artifact_info_prints_booleans_as_true_and_false(db, where):
    attempt("run", "--", PY, "-c", "print('hi')", db=db, cwd=where)
    (aid,), = sql(db, "SELECT artifact_id FROM artifacts")
    lines = attempt("artifact", aid, "--info", db=db).stdout.decode().splitlines()
    fields = dict(line.split(None, 1) for line in lines)
    assert fields["redacted"] == "false" and fields["stored"] == "false", lines
    assert json.loads(attempt("artifact", aid, "--json", db=db).stdout)["stored"] is False
