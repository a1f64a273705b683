"""A database that was read-only for a while writes again once it is writable: real hooks, real
modes, as an account whose modes count (tests/as_user.py).

SQLite gives a -shm (and a -wal) it creates the database file's mode, so a read while the file
was `chmod 400` leaves a 0400 -shm behind; after `chmod 600` of the file every write was still
refused (every capture spooled, reads could not drain, imports said store.read_only) until the
-shm was chmodded by hand. Now a write that fails as read-only gives a -shm/-wal of the user's
the file's mode and reopens (Store.reopen, sidefiles.free_sides); one that belongs to someone
else is named by the error and by `attempt doctor` ([store.read_only_side]). A capture daemon
that opened the file while it was read-only opens it again once it is writable.
"""

import json
import os
import stat
import time

import pytest
from as_user import IS_ROOT, account  # noqa: F401  (the fixture)

from attemptdb.devtools.faultbench import disk


def read_only_shm(acct):
    """The tester's sequence: events stored, the file quiet (no -wal/-shm), `chmod 400`, a read
    (SQLite makes a 0400 -shm), a capture while read-only (spooled), then `chmod 600`."""
    acct.hook(1)
    acct.settle_file()
    os.chmod(acct.db, 0o400)
    p = acct.run(["events", "--json"])
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(os.stat(acct.db + "-shm").st_mode) == 0o400
    acct.hook(2)  # read-only: spooled
    assert len(acct.spooled()) == 1
    os.chmod(acct.db, 0o600)


def test_a_shm_made_while_the_file_was_read_only_does_not_keep_it_read_only(account):
    read_only_shm(account)
    account.hook(3)  # the file is writable again: the spooled event, then this one
    assert account.spooled() == []
    assert account.prompts() == ["prompt 1", "prompt 2", "prompt 3"]
    assert stat.S_IMODE(os.stat(account.db + "-shm").st_mode) == 0o600  # the file's mode
    p = account.run(["verify"])
    assert p.returncode == 0 and p.stdout.startswith(b"ok: 3 events"), p.stdout + p.stderr
    p = account.run(["doctor", "--json"])
    report = json.loads(p.stdout)
    assert report["database"]["read_only_sides"] == [] and report["database"]["capture_health"]["spooled"] == 0


def test_a_read_drains_the_spool_once_the_file_is_writable_again(account):
    read_only_shm(account)
    p = account.run(["events"])  # a read: the spool drained first
    assert p.returncode == 0, p.stderr
    assert account.spooled() == [] and account.prompts() == ["prompt 1", "prompt 2"]
    assert stat.S_IMODE(os.stat(account.db + "-shm").st_mode) == 0o600


def test_doctor_names_a_read_only_shm_beside_a_writable_file(account):
    read_only_shm(account)
    p = account.run(["doctor", "--json"])
    report = json.loads(p.stdout)
    shm = os.path.realpath(account.db) + "-shm"
    assert report["ok"] is False
    sides = {x["path"]: x for x in report["database"]["read_only_sides"]}  # the -wal was made 0400 too
    assert sides[shm] == {"path": shm, "mode": "400", "uid": os.stat(shm).st_uid}
    said = [x for x in report["problems"] if "[store.read_only_side]" in x]
    assert len(said) == 1 and shm in said[0] and "chmod u+w" in said[0], report["problems"]
    p = account.run(["doctor"])
    assert b"[store.read_only_side]" in p.stdout
    # doctor changes no mode itself
    assert stat.S_IMODE(os.stat(shm).st_mode) == 0o400


@pytest.mark.skipif(not IS_ROOT, reason="a -shm of another user's needs root to make")
def test_a_shm_of_another_user_is_named_by_the_error_and_by_doctor(account, tmp_path):
    account.hook(1)  # leaves its -wal and -shm (0600, the account's)
    os.chown(account.db + "-shm", 0, 0)  # now root's: the account cannot write it, nor chmod it
    os.chmod(account.db + "-shm", 0o644)
    shm = os.path.realpath(account.db) + "-shm"
    account.hook(2)
    assert len(account.spooled()) == 1  # never repaired: not the account's
    src = os.path.join(account.base, "more.jsonl")
    from attemptdb.devtools import synth
    synth.write_jsonl(src, 2, 7)
    os.chmod(src, 0o644)
    p = account.run(["import", "jsonl", src])
    err = p.stderr.decode()
    assert p.returncode != 0 and "error[store.read_only]" in err and shm in err and "owned by uid 0" in err, err
    assert "chown" in err and "Traceback" not in err
    report = json.loads(account.run(["doctor", "--json"]).stdout)
    said = [x for x in report["problems"] if "[store.read_only_side]" in x]
    assert len(said) == 1 and shm in said[0] and "owned by uid 0" in said[0], report["problems"]


def test_a_daemon_that_opened_the_file_read_only_writes_once_it_is_writable(account):
    """The daemon started while the file was 0400 (its connection read-only, its -shm 0400):
    after `chmod 600` the next hooks through it are stored, with no read command between."""
    account.hook(1)
    account.settle_file()
    os.chmod(account.db, 0o400)
    account.hook(2, daemon=True, lean=True)  # no daemon yet: spooled by the hook, which starts one
    deadline = time.monotonic() + 10
    while not any(n.endswith(".pid") for n in os.listdir(os.path.join(account.base, "run", "attemptdb"))):
        assert time.monotonic() < deadline, "no daemon started"
        time.sleep(0.05)
    account.hook(3, daemon=True, lean=True)  # through the daemon: received, spooled (read-only)
    time.sleep(0.3)
    assert len(account.spooled()) == 2
    os.chmod(account.db, 0o600)
    for n in (4, 5):
        account.hook(n, daemon=True, lean=True)
    deadline = time.monotonic() + 10
    while account.spooled() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert account.spooled() == []
    assert account.prompts() == ["prompt 1", "prompt 2", "prompt 3", "prompt 4", "prompt 5"]
    assert "err=reopen" not in account.hook_log()
    p = account.run(["daemon", "stop"])
    assert p.returncode == 0, p.stderr


@pytest.mark.skipif(not IS_ROOT, reason="a read-only bind mount needs root")
def test_a_daemon_that_opened_the_file_on_read_only_media_writes_once_remounted(tmp_path, monkeypatch):
    """A read-only bind mount remounted read-write: the daemon that opened the file on it (a
    reader of an immutable file) stores the next hooks' events without any read command."""
    from test_daemon import Env, daemons_for, tool

    from attemptdb.capture import spool
    from attemptdb.store.database import Store
    e = Env(tmp_path)
    media = e.root / "media"
    media.mkdir()
    e.db = e.vars["ATTEMPTDB_PATH"] = str(media / "attempt.db")
    for k, v in e.vars.items():  # spool.pending looks where the hooks spool (their state directory)
        monkeypatch.setenv(k, v)
    e.capture(tool(0), daemon_on=False)
    Store.open(e.db).close()  # quiet: no -wal or -shm (a read-only folder cannot have them made)
    for side in ("-wal", "-shm"):
        assert not os.path.exists(e.db + side)

    def count():
        import apsw
        c = apsw.Connection(e.db, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return c.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            c.close()
    reason = disk.bind_ro(str(media))
    if reason is not None:
        pytest.skip(reason)
    try:
        e.capture(tool(1))  # spooled in the state directory; starts the daemon
        e.wait_running()
        e.capture(tool(2))  # received by the daemon, which cannot write the file
        time.sleep(0.3)
        assert len(spool.pending(e.db)) == 2
        assert disk.remount(str(media), "rw", bind=True) is None
        e.capture(tool(3))
        deadline = time.monotonic() + 10
        while spool.pending(e.db) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert spool.pending(e.db) == [] and count() == 4
        assert sorted(r[2] for r in e.rows()) == ["tool_call_finished"] * 4
    finally:
        for pid in daemons_for(e.db):
            os.kill(pid, 9)
        disk.umount(str(media))


def test_a_read_only_shm_of_ours_does_not_stop_a_file_being_made_a_database(account):
    """The write that fails as read-only is the open's own (making a `touch`ed file a database,
    or a migration): the -shm gets the file's mode and the open is tried once more."""
    open(account.db, "w").close()
    with open(account.db + "-shm", "wb") as f:
        f.write(b"\0" * 32768)
    for path, mode in ((account.db, 0o600), (account.db + "-shm", 0o400)):
        os.chmod(path, mode)
        if account.uid is not None:
            os.chown(path, account.uid, account.gid)
    account.hook(1)
    assert account.spooled() == [] and account.prompts() == ["prompt 1"]
    assert stat.S_IMODE(os.stat(account.db + "-shm").st_mode) == 0o600
