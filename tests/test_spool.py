"""The spool: nothing a hook captured is ever lost, nothing is ever stored twice.

Library level (attemptdb.capture.spool against a real Store): private files beside the database, the
per-user fallback, ingestion in spool order, a re-drained file (a crash between commit and
unlink) stays one event, hostile spool entries (garbage, symlinks, events that cannot be
stored) are quarantined without blocking the rest.

End to end (real `attempt` subprocesses): a database that cannot be written right now — its
path is a directory, its WAL cannot be opened, its file is read-only (non-root only: root
ignores permissions), it is garbage bytes, another process holds a write transaction longer
than the capture's busy timeout — sends the event to the spool silently; once the database is
usable again the next capture or a read command (`attempt events`) ingests it exactly once.
"""

import json
import os
import shutil
import stat
import subprocess

import apsw
import pytest
from conftest import ROOT, attempt_cmd, run_attempt
from test_capture import (
    PROMPT,
    as_bytes,
    assert_silent,
    capture,
    hold_write_lock,
    spool_files,
    stored,
    tool_payload,
    verify_ok,
)

from attemptdb.capture import spool
from attemptdb.model import event, ids
from attemptdb.store.database import Store

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def envelope(device, n=0, **over):
    env = {"event_id": ids.uuid7(), "schema_version": 1, "device_id": device, "source_seq": 0, "hlc": 0,
           "observed_at": 1787904000000000 + n, "captured_at": 1787904000000000 + n, "provider": "codex",
           "adapter_version": "0.1.1", "capture_mode": "metadata_only", "provider_event_name": "Stop",
           "kind": "turn_stopped", "project": ids.project_identity("/work/p", None, device),
           "session_id": ids.derive("ses_", "codex", "s"), "provider_session_id": "s", "agent": {},
           "attrs": {"hook_event_name": "Stop"}}
    env.update(over)
    return event.canonical(env)


@pytest.fixture
def store(db):
    st = Store.open(db)
    yield st
    st.close()


def event_ids(db):
    return [r["event_id"][len("ev_"):] for r in stored(db)]


# --- library level --------------------------------------------------------------------------

def test_put_writes_one_private_canonical_file_beside_the_database(store, db):
    env = envelope(store.device_id)
    path = spool.put(db, env)
    assert os.path.dirname(path) == db + ".spool" and path.endswith(".event")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(db + ".spool").st_mode) == 0o700
    with open(path, encoding="utf-8") as f:
        line, seal = f.read().split("\n")[:2]
    assert line == event.line(env) and len(seal) == 64  # the line, then its HMAC under the spool key
    assert stat.S_IMODE(os.stat(os.path.join(os.environ["XDG_DATA_HOME"], "attemptdb", "spool-key")).st_mode) == 0o600
    assert spool.pending(db) == [path]
    assert [n for n in os.listdir(db + ".spool") if n.endswith(".tmp")] == []


def test_drain_ingests_in_spool_order_and_removes_the_files(store, db):
    envs = [envelope(store.device_id, n) for n in range(5)]
    for env in envs:
        spool.put(db, env)
    assert spool.drain(store) == 5
    assert spool.pending(db) == []
    assert event_ids(db) == [e["event_id"] for e in envs]
    assert [r["source_seq"] for r in stored(db)] == [1, 2, 3, 4, 5]
    assert spool.drain(store) == 0


def test_a_file_drained_twice_is_still_one_event(store, db):
    """A crash between the commit and the unlink leaves the file behind: no second row."""
    env = envelope(store.device_id)
    path = spool.put(db, env)
    keep = path + ".copy"
    shutil.copy2(path, keep)  # with its mode: a spool file of any other mode is never read
    assert spool.drain(store) == 1
    os.rename(keep, path)
    assert spool.drain(store) == 1  # consumed, as a duplicate
    assert event_ids(db) == [env["event_id"]]
    assert spool.pending(db) == []


def test_a_reserved_file_is_filled_linked_under_a_spool_name_and_used_again(store, db):
    """The daemon's receipt: a file made ahead (invisible to readers), written and linked under
    the name put would give it; once that event is drained, the same file serves again."""
    res = spool.reserve(db)
    assert res is not None and spool.pending(db) == []
    tmp = os.path.join(db + ".spool", res.tmp)
    assert res.tmp.startswith(".") and not res.tmp.endswith(spool.SUFFIX) and os.path.getsize(tmp) == 0
    assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o600
    env = envelope(store.device_id)
    path = spool.put(db, env, res)
    assert spool.pending(db) == [path] and os.path.samefile(path, tmp)
    with open(path, encoding="utf-8") as f:
        assert f.read().split("\n")[0] == event.line(env)
    other, third = envelope(store.device_id, 1), envelope(store.device_id, 2)
    busy = spool.put(db, other, res)  # its last event is still spooled: written the usual way
    assert not os.path.samefile(busy, tmp) and not res.closed
    assert spool.drain(store, known={path: env}) == 2 and event_ids(db) == [env["event_id"], other["event_id"]]
    again = spool.put(db, third, res)  # drained: the same file again
    assert os.path.samefile(again, tmp) and again != path and spool.pending(db) == [again]
    assert spool.drain(store) == 1 and event_ids(db)[-1] == third["event_id"]
    res.close()
    assert os.listdir(db + ".spool") == []


def test_a_reservation_in_a_directory_moved_away_is_not_used(store, db, tmp_path):
    """An event must land where readers look: a spool directory replaced since the reservation
    gets the event the usual way, and the reservation is given up."""
    res = spool.reserve(db)
    os.rename(db + ".spool", str(tmp_path / "moved"))
    env = envelope(store.device_id)
    path = spool.put(db, env, res)
    assert os.path.dirname(path) == db + ".spool" and spool.pending(db) == [path]
    assert os.listdir(tmp_path / "moved") == [] and res.closed


def test_reservations_nobody_holds_are_cleared_and_held_ones_kept(store, db):
    held = spool.reserve(db)
    dead = spool.reserve(db)
    env = envelope(store.device_id)
    path = spool.put(db, env, dead)
    os.close(dead.fd)  # its holder died with its last event spooled: the lock went with it
    os.close(dead.dfd)
    spool.clear_reservations(db)
    assert sorted(n for n in os.listdir(db + ".spool")) == sorted([held.tmp, os.path.basename(path)])
    assert spool.drain(store) == 1 and event_ids(db) == [env["event_id"]]  # the event is not lost
    held.close()
    assert os.listdir(db + ".spool") == []


def test_the_fallback_spool_when_the_primary_cannot_be_written(store, db, home):
    with open(db + ".spool", "w") as f:  # a file where the spool directory should be
        f.write("not a directory")
    env = envelope(store.device_id)
    path = spool.put(db, env)
    assert path.startswith(str(home / ".local" / "state" / "attemptdb" / "spool") + os.sep)
    assert os.path.dirname(path) == spool.fallback_dir(db)
    assert spool.pending(db) == [path]
    assert spool.drain(store) == 1
    assert event_ids(db) == [env["event_id"]]
    with open(db + ".spool") as f:
        assert f.read() == "not a directory"  # never replaced


def test_both_spool_directories_drain_together_in_time_order(store, db, home):
    first = envelope(store.device_id, 1)
    spool.put(db, first)
    os.rename(db + ".spool", db + ".spool.away")
    with open(db + ".spool", "w") as f:
        f.write("x")
    second = envelope(store.device_id, 2)
    spool.put(db, second)  # lands in the fallback
    os.remove(db + ".spool")
    os.rename(db + ".spool.away", db + ".spool")
    assert len(spool.pending(db)) == 2
    assert spool.drain(store) == 2
    assert event_ids(db) == [first["event_id"], second["event_id"]]


def _hostile(db, name, data: bytes, mode=0o600):
    """A file in the spool directory as a capture of ours would leave it (0600), holding `data`."""
    d = db + ".spool"
    os.makedirs(d, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return os.path.join(d, name)


def test_unreadable_entries_are_quarantined_and_the_rest_ingested(store, db, tmp_path):
    good = envelope(store.device_id)
    spool.put(db, good)
    _hostile(db, "00000000-0000-7000-8000-000000000001.event", spool.seal("\x00garbage\xff"))
    _hostile(db, "00000000-0000-7000-8000-000000000002.event", spool.seal('{"event_id": "not an event"}'))
    # a valid event without its seal, or with another key's: not written by this account
    _hostile(db, "00000000-0000-7000-8000-000000000003.event", (event.line(envelope(store.device_id)) + "\n").encode())
    _hostile(db, "00000000-0000-7000-8000-000000000004.event",
             (event.line(envelope(store.device_id)) + "\n" + "0" * 64 + "\n").encode())
    outside = tmp_path / "elsewhere.event"
    outside.write_bytes(spool.seal(event.line(envelope(store.device_id))))
    os.chmod(outside, 0o600)
    os.symlink(outside, os.path.join(db + ".spool", "00000000-0000-7000-8000-000000000005.event"))
    assert spool.drain(store) == 5  # one stored, four quarantined; the symlink skipped
    assert event_ids(db) == [good["event_id"]]  # the symlink was not followed
    quarantined = sorted(os.listdir(os.path.join(db + ".spool", "quarantine")))
    assert quarantined == [f"00000000-0000-7000-8000-00000000000{i}.event" for i in (1, 2, 3, 4)]
    assert spool.pending(db) == []
    assert os.path.islink(os.path.join(db + ".spool", "00000000-0000-7000-8000-000000000005.event"))
    assert outside.exists()


def test_entries_not_ours_or_not_0600_are_skipped_untouched(store, db):
    """Only a regular file of this user with mode 0600 is read at all; anything else stays where
    it is (never read, moved or deleted) and is not counted as pending."""
    good = envelope(store.device_id, 1)
    spool.put(db, good)
    loose = _hostile(db, "0000000000000000001-loose.event", spool.seal(event.line(envelope(store.device_id, 2))),
                     mode=0o644)
    os.mkdir(os.path.join(db + ".spool", "0000000000000000002-dir.event"), 0o700)
    paths = [loose]
    if hasattr(os, "chown") and IS_ROOT:  # only root can give a file away
        other = _hostile(db, "0000000000000000003-other.event", spool.seal(event.line(envelope(store.device_id, 3))))
        os.chown(other, 12345, 12345)
        paths.append(other)
    assert len(spool.pending(db)) == 1
    assert spool.drain(store) == 1
    assert event_ids(db) == [good["event_id"]]
    assert all(os.path.exists(p) for p in paths)
    assert not os.path.exists(os.path.join(db + ".spool", "quarantine"))


@pytest.mark.parametrize("how", ["symlink", "group-writable", "not-ours"])
def test_a_spool_directory_that_is_not_private_is_never_used(store, db, tmp_path, how):
    """`<db>.spool` a symlink (to a directory of ours, even), or with group/other bits, or
    another user's: a capture writes to the per-user fallback instead, and a drain neither
    reads, moves nor deletes anything in it."""
    if how == "not-ours" and not IS_ROOT:
        pytest.skip("only root can make a directory another user's")
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    planted = target / "0000000000000000001-planted.event"
    planted.write_bytes(spool.seal(event.line(envelope(store.device_id, 1))))
    os.chmod(planted, 0o600)
    if how == "symlink":
        os.symlink(target, db + ".spool")
    else:
        os.rename(target, db + ".spool")
        planted = type(planted)(db + ".spool") / planted.name
        if how == "group-writable":
            os.chmod(db + ".spool", 0o770)
        else:
            os.chown(db + ".spool", 12345, 12345)
    before = sorted(os.listdir(db + ".spool"))
    assert spool.pending(db) == []
    env = envelope(store.device_id, 2)
    path = spool.put(db, env)
    assert os.path.dirname(path) == spool.fallback_dir(db)
    assert spool.drain(store) == 1
    assert event_ids(db) == [env["event_id"]]
    assert sorted(os.listdir(db + ".spool")) == before and planted.exists()


def test_the_spool_key_is_made_once_and_never_read_through_a_link_or_when_others_can_read_it(store, db, home):
    from attemptdb.store import location
    env = envelope(store.device_id)
    spool.put(db, env)
    key_path = os.path.join(location.data_dir(), spool.KEY_FILE)
    key = open(key_path).read()
    spool.put(db, envelope(store.device_id, 1))
    assert open(key_path).read() == key and [n for n in os.listdir(location.data_dir()) if n.endswith(".tmp")] == []
    os.chmod(key_path, 0o644)  # a key others can read authenticates nothing: the files wait
    assert spool.drain(store) == 0 and event_ids(db) == [] and len(spool.pending(db)) == 2
    os.chmod(key_path, 0o600)
    assert spool.drain(store) == 2 and len(event_ids(db)) == 2
    assert not os.path.exists(os.path.join(db + ".spool", "quarantine"))


def test_an_event_the_store_refuses_never_blocks_the_spool(store, db):
    """A spooled line that parses and validates but cannot be stored (here a lone surrogate
    escape, which cannot be hashed as UTF-8) is quarantined; the events around it land."""
    before, after = envelope(store.device_id, 1), envelope(store.device_id, 3)
    spool.put(db, before)
    poison = envelope(store.device_id, 2)
    line = event.line(poison).replace('"provider_session_id":"s"', '"provider_session_id":"\\udc80"')
    assert line != event.line(poison)
    spool.put(db, after)
    _hostile(db, "00000000-0000-7000-8000-00000000000a.event", spool.seal(line))  # drained first
    _hostile(db, "ffffffff-ffff-7fff-bfff-ffffffffffff.event", spool.seal(line))  # drained last
    spool.drain(store)
    assert event_ids(db) == [before["event_id"], after["event_id"]]
    assert spool.pending(db) == []
    assert len(os.listdir(os.path.join(db + ".spool", "quarantine"))) == 2
    verify_ok(db, 2)


def test_a_row_only_one_event_cannot_be_stored_is_quarantined(store, db):
    """A row SQLite refuses (a trigger's abort here) is that event's problem when the others
    go in: quarantined, the rest stored."""
    store.conn.execute("CREATE TEMP TRIGGER refuse_one BEFORE INSERT ON events "
                       "WHEN NEW.provider_session_id = 'poison' BEGIN SELECT RAISE(ABORT, 'refused'); END")
    envs = [envelope(store.device_id, 1), envelope(store.device_id, 2, provider_session_id="poison"),
            envelope(store.device_id, 3)]
    for env in envs:
        spool.put(db, env)
    assert spool.drain(store) == 3
    assert event_ids(db) == [envs[0]["event_id"], envs[2]["event_id"]]
    assert len(os.listdir(os.path.join(db + ".spool", "quarantine"))) == 1


def test_when_every_row_is_refused_the_database_is_at_fault_and_files_stay(store, db):
    store.conn.execute("CREATE TEMP TRIGGER refuse_all BEFORE INSERT ON events "
                       "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    envs = [envelope(store.device_id, n) for n in range(3)]
    for env in envs:
        spool.put(db, env)
    with pytest.raises(apsw.ConstraintError):
        spool.drain(store)
    assert len(spool.pending(db)) == 3
    assert not os.path.exists(os.path.join(db + ".spool", "quarantine"))
    store.conn.execute("DROP TRIGGER temp.refuse_all")
    assert spool.drain(store) == 3
    assert event_ids(db) == [e["event_id"] for e in envs]


def test_a_database_error_keeps_every_file_for_later(store, db):
    env = envelope(store.device_id)
    path = spool.put(db, env)
    store.close()
    ro = Store.open(db, readonly=True)
    try:
        with pytest.raises(Exception):
            spool.drain(ro)
    finally:
        ro.close()
    assert spool.pending(db) == [path]
    assert not os.path.exists(os.path.join(db + ".spool", "quarantine"))
    with Store.open(db) as st:
        assert spool.drain(st) == 1
    assert event_ids(db) == [env["event_id"]]


# --- end to end: a database that cannot take the event right now -----------------------------

def events_cmd(db):
    """`attempt events --json` (a read command: it ingests the spool first)."""
    p = run_attempt(["events", "--db", db, "--json"])
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def spool_then_ingest(db, home, block, unblock, ingest_by="events"):
    """Capture while `block` is in force (→ spooled, silent), then `unblock` and ingest by a
    read command or a capture; a second ingestion of the same spool file adds nothing."""
    assert_silent(capture(db, "claude-code", PROMPT))  # the database exists and works
    block()
    assert_silent(capture(db, "claude-code", tool_payload("toolu_spooled")))
    files = spool_files(db, home)
    assert len(files) == 1, files
    backup = files[0] + ".bak"
    shutil.copy2(files[0], backup)
    unblock()
    if ingest_by == "events":
        assert [e["kind"] for e in events_cmd(db)] == ["prompt_submitted", "tool_call_finished"]
    else:
        assert_silent(capture(db, "claude-code", tool_payload("toolu_after")))
    assert spool_files(db, home) == []
    rows = stored(db)
    assert [r["tool_call_id"] for r in rows][:2] == [None, "toolu_spooled"]
    # the same file again (a crash before its removal): still one event
    os.rename(backup, files[0])
    events_cmd(db)
    assert spool_files(db, home) == []
    assert stored(db) == rows
    verify_ok(db, len(rows))
    return rows


def test_database_path_is_a_directory(db, home):
    """Root-proof stand-in for an unwritable database: nothing can open the path."""
    os.mkdir(db)
    assert_silent(capture(db, "claude-code", tool_payload("toolu_spooled")))
    assert len(spool_files(db)) == 1  # beside it
    os.rmdir(db)
    assert_silent(capture(db, "claude-code", tool_payload("toolu_next")))  # creates it, drains first
    assert [r["tool_call_id"] for r in stored(db)] == ["toolu_spooled", "toolu_next"]
    assert spool_files(db, home) == []
    verify_ok(db, 2)


def test_database_path_is_a_directory_and_so_is_nothing_beside_it(db, home):
    """Neither the database nor `<db>.spool` can be written: the per-user fallback spool."""
    os.mkdir(db)
    with open(db + ".spool", "w") as f:
        f.write("in the way")
    assert_silent(capture(db, "claude-code", tool_payload("toolu_spooled")))
    (path,) = spool_files(db, home)
    assert path.startswith(str(home / ".local" / "state" / "attemptdb" / "spool"))
    os.rmdir(db)
    os.remove(db + ".spool")
    assert_silent(capture(db, "claude-code", tool_payload("toolu_next")))
    assert [r["tool_call_id"] for r in stored(db)] == ["toolu_spooled", "toolu_next"]
    assert spool_files(db, home) == []


def _block_wal(db):
    """Root-proof stand-in for an unwritable database: fold the WAL into the file (nothing
    committed is lost), then put a directory where the WAL must go — no connection can open
    the database for reading or writing until it is removed."""
    conn = apsw.Connection(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for p in (db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    os.mkdir(db + "-wal")


def test_wal_cannot_be_opened_then_a_read_command_ingests(db, home):
    spool_then_ingest(db, home, lambda: _block_wal(db), lambda: os.rmdir(db + "-wal"))


def test_wal_cannot_be_opened_then_the_next_capture_ingests(db, home):
    rows = spool_then_ingest(db, home, lambda: _block_wal(db), lambda: os.rmdir(db + "-wal"),
                             ingest_by="capture")
    assert [r["tool_call_id"] for r in rows] == [None, "toolu_spooled", "toolu_after"]


@pytest.mark.skipif(IS_ROOT, reason="running as root, which ignores file permissions; "
                                    "test_wal_cannot_be_opened_* and test_database_path_is_a_directory "
                                    "prove the same spool path without chmod")
def test_read_only_database_file(db, home):
    modes = {}

    def block():
        for p in (db, db + "-wal", db + "-shm"):
            if os.path.exists(p):
                modes[p] = stat.S_IMODE(os.stat(p).st_mode)
                os.chmod(p, 0o400)

    def unblock():
        for p, m in modes.items():
            os.chmod(p, m)

    spool_then_ingest(db, home, block, unblock)


@pytest.mark.skipif(IS_ROOT, reason="running as root, which ignores file permissions; "
                                    "test_database_path_is_a_directory_and_so_is_nothing_beside_it "
                                    "proves the fallback spool without chmod")
def test_read_only_database_directory(db, home):
    d = os.path.dirname(db)
    old = stat.S_IMODE(os.stat(d).st_mode)
    files = {}

    def block():
        for p in (db, db + "-wal", db + "-shm"):
            if os.path.exists(p):
                files[p] = stat.S_IMODE(os.stat(p).st_mode)
                os.chmod(p, 0o400)
        os.chmod(d, 0o500)  # nor can `<db>.spool` be created: the fallback spool

    def unblock():
        os.chmod(d, old)
        for p, m in files.items():
            os.chmod(p, m)

    try:
        spool_then_ingest(db, home, block, unblock)
    finally:
        os.chmod(d, old)


def test_corrupt_database_file(db, home):
    garbage = b"\x00\x01 this is not SQLite \xff" * 512
    with open(db, "wb") as f:
        f.write(garbage)
    assert_silent(capture(db, "claude-code", tool_payload("toolu_spooled")))
    with open(db, "rb") as f:
        assert f.read() == garbage  # the user's file is never overwritten
    assert len(spool_files(db, home)) == 1
    p = run_attempt(["events", "--db", db])  # a read command says what is wrong, no traceback
    assert p.returncode != 0 and b"Traceback" not in p.stderr
    assert b"store.not_a_database" in p.stderr
    assert len(spool_files(db, home)) == 1  # and keeps the spool
    os.rename(db, db + ".corrupt")  # the user moves it aside
    assert_silent(capture(db, "claude-code", tool_payload("toolu_next")))
    assert [r["tool_call_id"] for r in stored(db)] == ["toolu_spooled", "toolu_next"]
    assert spool_files(db, home) == []
    verify_ok(db, 2)


def test_database_locked_longer_than_the_busy_timeout(db, home):
    from attemptdb.capture.hook import CAPTURE_BUSY_S
    holder = None

    def block():
        nonlocal holder
        holder = hold_write_lock(db, "stdin")

    def unblock():
        holder.stdin.write("\n")
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
        holder.stdout.close()

    try:
        assert CAPTURE_BUSY_S <= 5  # a hook never waits long
        spool_then_ingest(db, home, block, unblock)
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()


def test_concurrent_captures_drain_a_full_spool_exactly_once(db, home):
    with Store.open(db) as st:
        envs = [envelope(st.device_id, n) for n in range(24)]
    for env in envs:
        spool.put(db, env)
    n = 8
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    procs = [subprocess.Popen(attempt_cmd() + ["capture", "claude-code", "--db", db], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(n)]
    for i, p in enumerate(procs):
        p.stdin.write(as_bytes(tool_payload(f"toolu_d{i}")))
        p.stdin.close()
    for p in procs:
        assert (p.wait(timeout=120), p.stdout.read(), p.stderr.read()) == (0, b"", b"")
        p.stdout.close()
        p.stderr.close()
    rows = stored(db)
    assert len(rows) == len(envs) + n
    assert len({r["event_id"] for r in rows}) == len(rows)
    assert {e["event_id"] for e in envs} <= {r["event_id"][len("ev_"):] for r in rows}
    assert spool_files(db, home) == []
    verify_ok(db, len(rows))


def test_a_database_from_a_newer_attemptdb_is_never_written(db, home):
    """A file whose schema is newer than this code is refused (fail closed): the capture
    spools instead and leaves the file byte for byte as it was."""
    assert_silent(capture(db, "claude-code", PROMPT))
    conn = apsw.Connection(db)
    conn.execute("PRAGMA user_version = 9999")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(db, "rb") as f:
        before = f.read()
    assert_silent(capture(db, "claude-code", tool_payload("toolu_spooled")))
    assert len(spool_files(db, home)) == 1
    with open(db, "rb") as f:
        assert f.read() == before
    p = run_attempt(["events", "--db", db])
    assert p.returncode != 0 and b"store.newer_schema" in p.stderr and b"Traceback" not in p.stderr
    assert len(spool_files(db, home)) == 1


def test_a_spooled_event_stamped_with_the_fallback_device_takes_the_database_identity(tmp_path, home):
    """Captured while the file's identity was unreadable: on ingest the event takes the
    database's device id, and a root-derived project id follows it (one file, one device)."""
    from attemptdb.capture import fallback as fallback_mod
    from attemptdb.capture import spool as spool_mod
    from attemptdb.devtools import synth
    from attemptdb.model import ids
    from attemptdb.store.database import Store
    db = str(tmp_path / "identity.db")
    st = Store.open(db)
    fallback = fallback_mod.device()
    assert fallback != st.device_id
    env = next(synth.generate(1, seed=5, device_id=fallback))
    env["project"] = ids.project_identity("/work/somewhere", None, fallback)
    spool_mod.put(db, env)
    assert spool_mod.drain(st) == 1
    row = st.conn.execute("SELECT device_id, project_id FROM events").fetchone()
    assert row == ("dev_" + st.device_id, "prj_" + ids.derive("prj_", "root", st.device_id, "/work/somewhere"))
    assert st.conn.execute("SELECT count(DISTINCT device_id) FROM events").fetchone()[0] == 1


def test_a_query_command_ingests_the_spool_and_signs_a_due_checkpoint(db, home):
    """`attempt query` reads through a read-only connection; before it reads, the spool is
    ingested and a due checkpoint signed (spec/checkpoint.md), through a short writable open."""
    assert run_attempt(["init", "--db", db]).returncode == 0
    st = Store.open(db)
    env = envelope(st.device_id)
    st.close()
    spool.put(db, env)
    r = run_attempt(["query", "--db", db, "--json", "SELECT count(*) AS n FROM events"])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"n": 1}]
    assert spool.pending(db) == []
    st = Store.open(db, readonly=True)
    assert st.conn.execute("SELECT size FROM checkpoints").fetchall() == [(1,)]
