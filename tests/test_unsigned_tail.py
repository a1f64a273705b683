"""The newest events are covered by a signature kept outside the file (issue 12, item 1):
imports sign before they return, the capture daemon signs after its commits, read commands
sign whenever the chain grew, and no command signs a chain it has not just verified. So a tail
deleted in the sqlite3 shell, or a lost `-wal`, makes `attempt verify` exit 1 naming what is
missing."""

import json
import os
import signal

import apsw
import pytest
from conftest import ROOT, needs_shell, run_attempt
from test_daemon import Env, alive, tool, wait_dead
from test_verify import tamper

from attemptdb.devtools import synth
from attemptdb.integrity import checkpoint
from attemptdb.model import event
from attemptdb.store.database import Store

RESUME = os.path.join(ROOT, "fixtures", "providers", "claude_code", "session_start_resume.json")


def cut(db, n):
    """What someone with the sqlite3 shell does: drop the guard, delete the tail, put it back."""
    tamper(db, f"DELETE FROM events WHERE seq > {n}")


def attempt(*args, env=None, ok=True, **kw):
    p = run_attempt(list(args), env=dict(env or {}, ATTEMPTDB_NO_DAEMON="1"), **kw)
    if ok:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def outside_size(db) -> int | None:
    st = Store.open(db, readonly=True)
    try:
        note = checkpoint.read_outside(st.device_id)
    finally:
        st.close()
    return None if note is None else checkpoint.parse(note).size


def jsonl(tmp_path, n, seed=3):
    src = tmp_path / "more.jsonl"
    src.write_bytes("".join(event.line(e) + "\n" for e in synth.generate(n, seed=seed)).encode())
    return str(src)


def verify_json(db):
    p = attempt("verify", "--json", "--db", db, ok=False)
    return p.returncode, json.loads(p.stdout)


@pytest.fixture
def signed_then_imported(tmp_path, home):
    """The issue's sequence: init, one capture, a read that signs at size 1, an import."""
    db = str(tmp_path / "c.db")
    attempt("init", "--db", db)
    with open(RESUME, "rb") as f:
        attempt("capture", "claude-code", "--db", db, input=f.read())
    attempt("timeline", "--db", db)
    assert outside_size(db) == 1
    attempt("import", "jsonl", jsonl(tmp_path, 63), "--db", db)
    return db


def test_an_import_signs_the_head_before_it_returns(signed_then_imported):
    assert outside_size(signed_then_imported) == 64
    st = Store.open(signed_then_imported, readonly=True)
    assert checkpoint.latest(st)[0] == 64
    st.close()


@needs_shell
def test_a_tail_deleted_after_an_import_is_caught(signed_then_imported):
    db = signed_then_imported
    cut(db, 30)
    code, rep = verify_json(db)
    assert code == 1
    kinds = {p["kind"] for p in rep["problems"]}
    assert "truncated" in kinds, rep
    assert any("seq=31..64 are missing" in p["message"] for p in rep["problems"]), rep


@needs_shell
def test_reproject_never_re_signs_a_shortened_chain(signed_then_imported):
    db = signed_then_imported
    cut(db, 30)
    for args in (["reproject", "--check"], ["reproject"], ["timeline"], ["checkpoint"]):
        attempt(*args, "--db", db, ok=False)
        assert outside_size(db) == 64, args  # the last trace stays
        code, rep = verify_json(db)
        assert code == 1 and "truncated" in {p["kind"] for p in rep["problems"]}, (args, rep)


@needs_shell
def test_checkpoint_refuses_a_row_that_does_not_verify(signed_then_imported, tmp_path):
    """Rows after the last signature are verified before they are signed: a row edited in the
    shell is never vouched for."""
    db = signed_then_imported
    attempt("import", "jsonl", jsonl(tmp_path, 5, seed=8), "--db", db)
    assert outside_size(db) == 69
    # append rows without a signature (a direct capture's way: no signing stack) ...
    st = Store.open(db)
    st.append([event.canonical(e) for e in synth.generate(4, seed=11)])
    st.close()
    # ... and edit one of them
    tamper(db, "UPDATE events SET tool_name = 'Forged' WHERE seq = 71")
    p = attempt("checkpoint", "--db", db, ok=False)
    assert p.returncode == 1 and p.stderr.startswith(b"error[checkpoint.unverified]"), p.stderr
    assert b"seq=71" in p.stderr
    p = attempt("timeline", "--db", db)  # a read still works and says why it signed nothing
    assert b"note: no checkpoint signed: error[checkpoint.unverified]" in p.stderr
    assert outside_size(db) == 69


def test_reproject_check_that_fails_signs_nothing(tmp_path, home):
    db = str(tmp_path / "d.db")
    attempt("init", "--db", db)
    attempt("import", "jsonl", jsonl(tmp_path, 20), "--db", db)
    assert outside_size(db) == 20
    st = Store.open(db)
    st.append([event.canonical(e) for e in synth.generate(1001, seed=21)])  # unsigned tail (once due by the old schedule too)
    st.conn.execute("DELETE FROM turn_facts WHERE turn_id = (SELECT min(turn_id) FROM turn_facts)")
    st.close()
    p = attempt("reproject", "--check", "--db", db, ok=False)
    assert p.returncode == 1, p.stdout
    assert outside_size(db) == 20  # exit 1, and nothing signed


def test_the_outside_copy_missing_is_its_own_problem_and_blocks_signing(signed_then_imported):
    db = signed_then_imported
    st = Store.open(db, readonly=True)
    dev = st.device_id
    st.close()
    os.unlink(checkpoint.outside_path(dev))
    code, rep = verify_json(db)
    assert code == 1 and [p["kind"] for p in rep["problems"]] == ["checkpoint_missing"], rep
    st = Store.open(db)
    st.append([event.canonical(e) for e in synth.generate(2, seed=31)])
    st.close()
    # a read does not write a fresh copy over the hole (that would hide a deleted tail)
    p = attempt("timeline", "--db", db)
    assert b"error[checkpoint.outside_missing]" in p.stderr
    assert outside_size(db) is None
    p = attempt("checkpoint", "--db", db, ok=False)
    assert p.returncode == 1 and p.stderr.startswith(b"error[checkpoint.outside_missing]")
    # the owner's way back: verify everything, then sign anew
    attempt("checkpoint", "--adopt", "--db", db)
    assert outside_size(db) == 66
    assert verify_json(db)[0] == 0


@needs_shell
def test_adopt_refuses_a_file_with_other_problems(signed_then_imported):
    db = signed_then_imported
    st = Store.open(db, readonly=True)
    os.unlink(checkpoint.outside_path(st.device_id))
    st.close()
    cut(db, 30)
    p = attempt("checkpoint", "--adopt", "--db", db, ok=False)
    assert p.returncode == 1 and p.stderr.startswith(b"error[checkpoint.unverified]"), p.stderr
    assert outside_size(db) is None


# --- captures through the daemon ---------------------------------------------------------------

def wait_outside(db, size, timeout=10.0):
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if outside_size(db) == size:
            return
        time.sleep(0.05)
    raise AssertionError(f"the daemon did not sign size {size} (outside: {outside_size(db)})")


@pytest.fixture
def daemon_env(tmp_path, monkeypatch):
    e = Env(tmp_path, "d")
    monkeypatch.setenv("XDG_DATA_HOME", e.vars["XDG_DATA_HOME"])  # where its key and outside copy live
    p = run_attempt(["init", "--db", e.db], env=e.vars)
    assert p.returncode == 0, p.stderr
    yield e
    e.stop()


def test_the_daemon_signs_its_captures_without_any_read(daemon_env):
    e = daemon_env
    e.capture(tool(0))  # no daemon yet: written directly, starts one
    pid = e.wait_running()
    for i in range(1, 8):
        e.capture(tool(i))
    wait_outside(e.db, 8)  # within a second of the commit, no read, no explicit checkpoint
    assert e.pid == pid
    p = run_attempt(["verify", "--db", e.db], env=e.vars)
    assert p.returncode == 0 and p.stdout.startswith(b"ok: 8 events"), p.stdout


def test_a_lost_wal_after_daemon_captures_is_named(daemon_env):
    """Captures through the daemon, kill -9 of the daemon, the `-wal` deleted with no process
    running: the signed head outside the file names the missing events."""
    e = daemon_env
    e.capture(tool(0))
    e.wait_running()
    for i in range(1, 12):
        e.capture(tool(i))
    wait_outside(e.db, 12)
    pid = e.pid
    os.kill(pid, signal.SIGKILL)
    wait_dead(pid)
    assert not alive(pid)
    wal = e.db + "-wal"
    assert os.path.getsize(wal) > 0  # the daemon's commits were still there
    os.unlink(wal)
    if os.path.exists(e.db + "-shm"):
        os.unlink(e.db + "-shm")
    p = run_attempt(["verify", "--json", "--db", e.db], env=dict(e.vars, ATTEMPTDB_NO_DAEMON="1"))
    assert p.returncode == 1, p.stdout
    rep = json.loads(p.stdout)
    assert [x for x in rep["problems"] if x["kind"] == "truncated"], rep
    assert "..12 are missing" in p.stdout.decode()


def test_the_daemon_signs_before_it_leaves(daemon_env):
    e = daemon_env
    e.capture(tool(0))
    pid = e.wait_running()
    e.capture(tool(1))
    os.kill(pid, signal.SIGTERM)  # `attempt daemon stop`
    wait_dead(pid)
    assert outside_size(e.db) == 2
    conn = apsw.Connection(e.db, flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("SELECT max(size) FROM checkpoints").fetchone()[0] == 2
    conn.close()
