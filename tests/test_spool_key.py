"""What a capture needs beside the database when the disk is full or a directory cannot be
written: the spool key, the fallback device id, and temp files.

- The spool key (spool.py): where the data directory cannot take it, a capture makes it in the
  state directory, else the runtime directory, seals with it, and the first call that can copies
  it to the data directory. So an event spooled on a full disk before any key existed is sealed
  and stored once space is back (it used to be written unsealed, acknowledged, and set aside in
  quarantine/ by the first read). No spool file is ever written unsealed: with no key possible
  anywhere the event is counted lost instead.
- The fallback device id (capture/fallback.py): made whole or not at all; an empty file (a full
  disk left it so) is replaced, so every later fallback event gets one id, not a new one each.
- No temp file is left behind by a write that failed: the spool key's, the signing key's and the
  signed checkpoint copy's (integrity/keys.py write_private).
"""

import errno
import json
import os
import stat

import pytest
from conftest import run_attempt
from test_capture import PROMPT, assert_silent, capture, stored, tool_payload

from attemptdb.capture import fallback, spool
from attemptdb.devtools.faultbench import disk

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def data_dir():
    return os.path.join(os.environ["XDG_DATA_HOME"], "attemptdb")


def state_dir():
    return os.path.join(os.environ["XDG_STATE_HOME"], "attemptdb")


def leftovers(root) -> list:
    return sorted(os.path.join(b, f) for b, _d, fs in os.walk(root) for f in fs if ".tmp" in f)


def quarantined(root) -> list:
    return sorted(os.path.join(b, f) for b, _d, fs in os.walk(root) for f in fs
                  if os.path.basename(b) == "quarantine")


class failing_writes:
    """Within it, os.write fails with ENOSPC for files whose name holds `marker` (a full disk)."""

    def __init__(self, marker: str):
        self.marker, self.real = marker, os.write

    def write(self, fd, data):
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = ""
        if self.marker in os.path.basename(name):
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.real(fd, data)

    def __enter__(self):
        os.write = self.write

    def __exit__(self, *exc):
        os.write = self.real


# --- the spool key --------------------------------------------------------------------------

def test_events_spooled_while_the_data_directory_cannot_take_the_key_are_stored_later(tmp_path, home):
    """The data directory cannot be written (a file in its place: as a full disk, it takes no
    key) and the database cannot be opened: hooks seal with a key made in the state directory;
    once both are back, every event is stored (none set aside), and the data directory holds
    that same key."""
    db = str(tmp_path / "attempt.db")
    os.makedirs(os.environ["XDG_DATA_HOME"])
    with open(data_dir(), "w"):
        pass  # not a directory: nothing can be made in it
    os.mkdir(db)  # not a file: the store cannot open it, the hooks spool
    for i in range(3):
        assert_silent(capture(db, "claude-code", tool_payload(f"toolu_nokey_{i}")))
    files = spool.pending(db)
    assert len(files) == 3
    for f in files:
        assert len(open(f, "rb").read().rstrip(b"\n").split(b"\n")) == 2  # the line and its seal
    made = open(os.path.join(state_dir(), spool.KEY_FILE)).read()
    os.unlink(data_dir())
    os.rmdir(db)
    assert run_attempt(["init", "--db", db]).returncode == 0
    assert run_attempt(["events", "--db", db]).returncode == 0
    assert spool.pending(db) == [] and quarantined(str(tmp_path)) == []
    assert sorted(r["kind"] for r in stored(db)) == ["tool_call_finished"] * 3
    assert open(os.path.join(data_dir(), spool.KEY_FILE)).read() == made  # adopted, not replaced
    assert leftovers(str(tmp_path)) == []


def test_no_spool_file_is_written_unsealed(tmp_path, home, monkeypatch):
    """No place can take a key (data, state and runtime directories all blocked): `put` writes
    nothing and says so (the hook counts the event lost), rather than an unsealed file that
    could never be told from a planted one."""
    db = str(tmp_path / "attempt.db")
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "TMPDIR"):
        blocked = str(tmp_path / f"blocked-{var}")
        open(blocked, "w").close()
        monkeypatch.setenv(var, blocked)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    from test_spool import envelope

    from attemptdb.model import ids
    with pytest.raises(OSError):
        spool.put(db, envelope(ids.uuid7()))
    assert not os.path.exists(db + ".spool") or os.listdir(db + ".spool") == []


@pytest.mark.skipif(not IS_ROOT, reason="a full disk needs root to mount")
def test_a_fresh_home_on_a_full_disk_spools_sealed_and_stores_once_space_is_back(tmp_path, monkeypatch):
    """The tester's case: a fresh HOME (no key, no database) on a full disk; the hooks' events
    go to the runtime directory, sealed under a key made there; once space is back, the next
    hook stores them (then its own) and no event is set aside. Nothing is left behind: no
    temp file of the key, no empty fallback device id."""
    home = str(tmp_path / "full")
    reason = disk.mount_tmpfs(home, "8m")  # room for a new file's schema once the filler is gone
    if reason is not None:
        pytest.skip(reason)
    try:
        run = tmp_path / "run"
        run.mkdir(mode=0o700)
        for k, v in {"HOME": home, "XDG_DATA_HOME": f"{home}/.local/share", "XDG_STATE_HOME": f"{home}/.local/state",
                     "XDG_RUNTIME_DIR": str(run), "TMPDIR": str(run)}.items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("ATTEMPTDB_PATH", raising=False)
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        db = os.path.join(home, "attempt.db")
        disk.fill(home)
        for i in range(3):
            assert_silent(capture(db, "claude-code", tool_payload(f"toolu_full_{i}")))
        assert len(spool.pending(db)) == 3
        assert os.path.exists(os.path.join(str(run), "attemptdb", spool.KEY_FILE))
        assert leftovers(home) == [] and leftovers(str(run)) == []
        dev_file = os.path.join(data_dir(), fallback.FILE)
        assert not os.path.exists(dev_file) or os.path.getsize(dev_file) > 0
        os.unlink(os.path.join(home, "filler"))
        assert_silent(capture(db, "claude-code", PROMPT))
        assert run_attempt(["events", "--db", db]).returncode == 0
        assert [r["kind"] for r in stored(db)] == ["tool_call_finished"] * 3 + ["prompt_submitted"]
        assert spool.pending(db) == [] and quarantined(home) == [] and quarantined(str(run)) == []
        runtime_key = open(os.path.join(str(run), "attemptdb", spool.KEY_FILE)).read()
        assert open(os.path.join(data_dir(), spool.KEY_FILE)).read() == runtime_key
        p = run_attempt(["verify", "--db", db])
        assert p.returncode == 0, p.stdout + p.stderr
    finally:
        disk.umount(home)


def test_a_spool_key_write_that_fails_leaves_no_temp_file(home):
    with failing_writes(spool.KEY_FILE):
        spool.prepare()
    assert leftovers(os.environ["HOME"]) == []
    assert not os.path.exists(os.path.join(data_dir(), spool.KEY_FILE))  # never an empty key


# --- the fallback device id -----------------------------------------------------------------

def test_an_empty_fallback_device_id_is_replaced_once_and_kept(tmp_path, home):
    """A zero-byte fallback-device-id (a full disk left it): the hooks that cannot read the
    database's identity all stamp one device id, which the file then holds."""
    os.makedirs(data_dir())
    open(os.path.join(data_dir(), fallback.FILE), "w").close()
    db = str(tmp_path / "attempt.db")
    os.mkdir(db)  # the database's identity cannot be read: the fallback device is used
    for i in range(3):
        assert_silent(capture(db, "claude-code", tool_payload(f"toolu_fallback_{i}")))
    devices = set()
    for f in spool.pending(db):
        devices.add(json.loads(open(f, "rb").read().split(b"\n")[0])["device_id"])
    held = open(os.path.join(data_dir(), fallback.FILE)).read().strip()
    assert len(devices) == 1 and devices == {held}, devices
    assert stat.S_IMODE(os.stat(os.path.join(data_dir(), fallback.FILE)).st_mode) == 0o600
    assert leftovers(str(tmp_path)) == []


def test_a_fallback_device_id_write_that_fails_leaves_nothing(home):
    with failing_writes(fallback.FILE):
        first = fallback.device()
    assert first and not os.path.exists(os.path.join(data_dir(), fallback.FILE))  # never empty
    assert leftovers(os.environ["HOME"]) == []
    made = fallback.device()
    assert fallback.device() == made == open(os.path.join(data_dir(), fallback.FILE)).read().strip()


# --- temp files of the signing key and the signed checkpoint ---------------------------------

def test_a_signing_key_or_checkpoint_write_that_fails_leaves_no_temp_file(db):
    from test_spool import envelope

    from attemptdb.errors import AttemptError
    from attemptdb.integrity import checkpoint, keys
    from attemptdb.store import location
    from attemptdb.store.database import Store
    st = Store.open(db)
    try:
        st.append([envelope(st.device_id)])
        with failing_writes(".tmp-"), pytest.raises(AttemptError) as e:
            keys.create(st.device_id)
        assert e.value.code == "keys.unwritable"
        assert not os.path.exists(keys.key_path(st.device_id))  # no empty key file either
        keys.create(st.device_id)
        with failing_writes(".tmp-"), pytest.raises(AttemptError) as e:
            checkpoint.create(st)
        assert e.value.code == "checkpoint.unwritable"
        assert leftovers(location.key_dir()) == []
        assert not os.path.exists(checkpoint.outside_path(st.device_id))
    finally:
        st.close()
