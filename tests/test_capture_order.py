"""A hook behind a spool it cannot drain whole, or in front of a file another writer holds:
chain order stays arrival order, and no hook pays for another writer's lock more than once.

- A direct hook drains at most HOOK_DRAIN_LIMIT spooled events before its own; with more
  waiting, its own event goes to the spool after them (it used to be appended ahead of the
  older ones).
- A direct hook whose drain met a busy file spools its own event at once: the busy timeout is
  paid once, not once for the drain and again for the append (4 s a hook).
- Through the daemon, hooks are received and answered while another writer holds the lock;
  the daemon tries the file again after a pause (its own writes wait SETTLE_BUSY_S at most), so
  hooks no longer wait, one after another, for its 2 s busy wait; once the lock is gone the
  events are stored without any read command.
"""

import os
import time

from test_capture import PROMPT, assert_silent, capture, hold_write_lock, spool_files, stored, tool_payload
from test_daemon import hooks, tool  # noqa: F401  (the fixture)
from test_spool import envelope

from attemptdb.capture import spool
from attemptdb.capture.hook import CAPTURE_BUSY_S, HOOK_DRAIN_LIMIT
from attemptdb.store.database import Store


def device(db):
    st = Store.open(db)
    try:
        return st.device_id
    finally:
        st.close()


def release(holder):
    try:
        if holder.poll() is None:
            holder.stdin.write("go\n")
            holder.stdin.flush()
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdin.close()
        holder.stdout.close()


def test_a_hook_behind_more_spooled_events_than_it_drains_goes_after_them(db, home):
    assert_silent(capture(db, "claude-code", PROMPT))
    dev = device(db)
    waiting = [envelope(dev, i) for i in range(HOOK_DRAIN_LIMIT + 30)]
    for env in waiting:
        spool.put(db, env)
    assert_silent(capture(db, "claude-code", tool_payload("toolu_after_the_spool")))
    rows = stored(db)
    assert len(rows) == 1 + HOOK_DRAIN_LIMIT  # a bounded share went in, the hook's own did not
    assert "tool_call_finished" not in [r["kind"] for r in rows]
    assert len(spool_files(db, home)) == 30 + 1
    assert "spooled reason=spool_backlog" in open(os.path.join(home, ".local", "state", "attemptdb",
                                                               "hook.log")).read()
    from conftest import run_attempt
    assert run_attempt(["events", "--db", db]).returncode == 0  # a read drains the rest, in order
    rows = stored(db)
    assert spool_files(db, home) == []
    assert [r["event_id"][3:] for r in rows[1:-1]] == [e["event_id"] for e in waiting]
    assert rows[-1]["kind"] == "tool_call_finished"  # arrival order: the hook came last


def test_a_direct_hook_pays_a_held_lock_once(db, home):
    """Something spooled to drain first, the lock held past the busy timeout: the drain waits
    CAPTURE_BUSY_S, then the hook spools its own event at once (it waited twice before: 4 s)."""
    assert_silent(capture(db, "claude-code", PROMPT))
    spool.put(db, envelope(device(db)))
    holder = hold_write_lock(db, "stdin")
    try:
        started = time.monotonic()
        assert_silent(capture(db, "claude-code", tool_payload("toolu_behind_the_lock")))
        took = time.monotonic() - started
    finally:
        release(holder)
    assert CAPTURE_BUSY_S <= took < 2 * CAPTURE_BUSY_S - 0.5, took
    assert len(spool_files(db, home)) == 2 and len(stored(db)) == 1
    from conftest import run_attempt
    assert run_attempt(["events", "--db", db]).returncode == 0
    assert [r["kind"] for r in stored(db)] == ["prompt_submitted", "turn_stopped", "tool_call_finished"]


def test_hooks_through_the_daemon_do_not_wait_on_a_held_lock_one_after_another(hooks):  # noqa: F811
    e = hooks()
    e.capture(tool(0))  # no daemon yet: stored by the hook, which starts one
    e.wait_running()
    e.capture(tool(1))
    e.settled()
    holder = hold_write_lock(e.db, "stdin")
    try:
        started = time.monotonic()
        for i in range(2, 8):
            e.capture(tool(i))
            assert len(spool.pending(e.db)) == i - 1  # acknowledged: spooled, sealed
        took = time.monotonic() - started
    finally:
        release(holder)
    # each used to wait for the daemon's 2 s busy wait on the hook before it (≈ 10 s for 6)
    assert took < 6 * CAPTURE_BUSY_S / 2, took
    deadline = time.monotonic() + 15
    while spool.pending(e.db) and time.monotonic() < deadline:  # no read command: the daemon retries
        time.sleep(0.05)
    assert spool.pending(e.db) == []
    assert [r[2] for r in e.rows()] == ["tool_call_finished"] * 8
    assert e.hook_log().count("err=spool_drain") <= 1  # said once, not on every try


def test_a_run_behind_more_spooled_events_than_it_drains_goes_after_them(db, home, tmp_path):
    """`attempt run` writes as a hook does: with more spooled than its share, its events are
    spooled after the older ones, and the next read stores everything in arrival order."""
    import sys

    from conftest import run_attempt

    from attemptdb.evidence.record import DRAIN_LIMIT
    assert_silent(capture(db, "claude-code", PROMPT))
    dev = device(db)
    waiting = [envelope(dev, i) for i in range(DRAIN_LIMIT + 30)]
    for env in waiting:
        spool.put(db, env)
    p = run_attempt(["run", "--db", db, "--", sys.executable, "-c", "pass"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert run_attempt(["events", "--db", db]).returncode == 0  # a read drains the rest
    rows = stored(db)
    assert spool_files(db, home) == []
    ids = [r["event_id"][3:] for r in rows]
    assert ids[1:1 + len(waiting)] == [e["event_id"] for e in waiting]  # the older ones first, in order
    assert {r["provider_event_name"] for r in rows[1 + len(waiting):]} >= {"run.started", "command.finished"}


def test_a_first_opener_waits_for_another_turning_a_new_file_to_wal(tmp_path):
    """A hook and the daemon it starts create a new file together: while one holds it in the
    rollback-journal transaction that turns it to WAL, the other's `PRAGMA journal_mode=WAL` is
    answered busy at once (SQLite calls no busy handler for it). It waits as for any lock."""
    import subprocess
    import sys
    path = str(tmp_path / "new.db")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, apsw\n"
        f"c = apsw.Connection({path!r})\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('CREATE TABLE t (x)')\n"
        "print('held', flush=True); time.sleep(0.5); c.execute('ROLLBACK'); c.close()\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        st = Store.open(path, create=True)  # busy at once before: BusyError
        try:
            assert st.created and st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            st.close()
    finally:
        holder.wait(timeout=30)
        holder.stdout.close()
