"""Defects a walkthrough of the evidence commands found (spec/evidence.md): a damaged file
never stops `attempt run` (the command runs, its events wait in the spool), and `note` /
`approve` on one spool too; parallel runs into one named session open it once."""

import json
import os
import sqlite3

import pytest
from test_evidence_run import PY, attempt


def spooled(db):
    from attemptdb.capture import spool
    return len(spool.pending(db))


def damage_an_index(db):
    """Overwrite 4000 bytes of the root page of the index a session's reads use (the file's
    header and the events table stay readable)."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = con.execute("PRAGMA page_size").fetchone()[0]
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events_session'").fetchone()[0]
    finally:
        con.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xa5" * 4000)


@pytest.fixture
def damaged(tmp_path, home):
    db = str(tmp_path / "d.db")
    attempt("run", "--", PY, "-c", "pass", db=db, cwd=str(tmp_path))
    attempt("note", "first", db=db)
    damage_an_index(db)
    return db


def test_a_damaged_file_runs_the_command_and_its_events_wait_in_the_spool(damaged, tmp_path):
    prog = "print('damaged-run'); raise SystemExit(3)"
    for code in ("store.corrupt", "store.damaged"):  # found by this run, then as marked
        before = spooled(damaged)
        p = attempt("run", "--attach-output", "--", PY, "-c", prog, db=damaged, ok=False, cwd=str(tmp_path))
        assert p.returncode == 3 and p.stdout == b"damaged-run\n", p.stderr
        lines = p.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("warning: ") and "wait in the spool" in lines[0], lines
        assert f"error[{code}]" in lines[0], lines
        assert spooled(damaged) - before >= 5  # session.started, run.started, command.started/finished, run.stopped…


@pytest.mark.parametrize("args", [["note", "hi"], ["approve", "release 1.4", "--json"], ["reject", "plan"]])
def test_note_and_approve_on_a_damaged_file_wait_in_the_spool(damaged, args):
    attempt("verify", db=damaged, ok=False)  # marks it damaged
    before = spooled(damaged)
    p = attempt(*args, db=damaged)
    assert b"error[store.damaged]" in p.stderr and b"wait in the spool" in p.stderr, p.stderr
    assert p.stderr.count(b"\n") == 1, p.stderr
    assert spooled(damaged) - before == 3  # session.started, the note or approval, session.stopped
    if "--json" in args:
        assert len(json.loads(p.stdout)["events"]) == 3


def test_a_sound_file_still_takes_the_run_and_says_nothing(db, tmp_path):
    p = attempt("run", "--", PY, "-c", "print(1)", db=db, cwd=str(tmp_path))
    assert p.stdout == b"1\n" and p.stderr == b"", p.stderr
    assert spooled(db) == 0 and os.path.exists(db)


def test_of_two_commands_opening_one_named_session_at_once_only_the_first_writes_session_started(db, tmp_path):
    """Both looked before either wrote (parallel `attempt run --session par-1`): the check is
    made again inside the write transaction, so the session is opened once (spec §1)."""
    from attemptdb.evidence.record import Writer
    from attemptdb.store.database import Store
    attempt("note", "make the file", db=db)
    stores = [Store.open(db) for _ in range(2)]
    try:
        writers = [Writer(st, session="par-1", source="note", cwd=str(tmp_path)) for st in stores]
        batches = [[w.started("t"), w.note(f"note {i}")] for i, w in enumerate(writers)]  # both saw it closed
        for w, envs in zip(writers, batches):
            w.write(envs)
        assert [len(w.written) for w in writers] == [2, 1] and not any(w.spooled for w in writers)
    finally:
        for st in stores:
            st.close()
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT provider_event_name, count(*) FROM events WHERE provider_session_id = 'par-1' "
                           "GROUP BY 1 ORDER BY 1").fetchall()
    finally:
        con.close()
    assert rows == [("session.note_added", 2), ("session.started", 1)]
