"""A copy of a database (`cp attempt.db try.db`) holds the same device's history; the checkpoint
kept beside the key is the original's. Writing to the copy signed it and replaced that
checkpoint, so the original read as rolled back: marked damaged, every later hook spooled."""

import json
import shutil

from conftest import run_attempt

NO_DAEMON = {"ATTEMPTDB_NO_DAEMON": "1"}


def _prompt(db, text):
    payload = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit", "prompt": text}
    r = run_attempt(["capture", "claude-code", "--db", str(db)], input=json.dumps(payload).encode(), env=NO_DAEMON)
    assert r.returncode == 0 and r.stdout == b""


def _events(db) -> int:
    r = run_attempt(["status", "--db", str(db), "--json"], env=NO_DAEMON)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["events"]


def _signed_original(tmp_path):
    db = tmp_path / "a.db"
    assert run_attempt(["init", "--db", str(db)], env=NO_DAEMON).returncode == 0
    _prompt(db, "hi")
    assert run_attempt(["verify", "--db", str(db)], env=NO_DAEMON).returncode == 0
    assert run_attempt(["checkpoint", "--db", str(db)], env=NO_DAEMON).returncode in (0, 1)
    return db


def test_writing_to_a_copy_leaves_the_original_whole(tmp_path, home):
    db = _signed_original(tmp_path)
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "a.db"
    for side in ("", "-wal", "-shm"):
        if (tmp_path / f"a.db{side}").exists():
            shutil.copy(tmp_path / f"a.db{side}", tmp_path / "copy" / f"a.db{side}")
    r = run_attempt(["note", "trying something on a copy", "--db", str(copy)], env=NO_DAEMON)
    assert r.returncode == 0, r.stderr  # the note is recorded: only the signature is refused
    err = r.stderr.decode()
    assert "error[checkpoint.copy]: this file is a copy of" in err and str(db) in err.replace("\n  ", " ")
    r = run_attempt(["checkpoint", "--db", str(copy)], env=NO_DAEMON)
    assert r.returncode == 1 and b"error[checkpoint.copy]" in r.stderr
    # the original: sound, and it goes on taking hooks
    v = run_attempt(["verify", "--db", str(db)], env=NO_DAEMON)
    assert v.returncode == 0 and v.stdout.startswith(b"ok: 1 event"), v.stdout + v.stderr
    _prompt(db, "again")
    assert _events(db) == 2 and not (tmp_path / "a.db.spool").exists()
    v = run_attempt(["verify", "--db", str(db)], env=NO_DAEMON)
    assert v.returncode == 0 and v.stdout.startswith(b"ok: 2 events, 2 checkpoints"), v.stdout + v.stderr


def test_a_moved_file_is_the_history_and_signs(tmp_path, home):
    db = _signed_original(tmp_path)
    moved = tmp_path / "moved.db"
    for side in ("", "-wal", "-shm"):
        if (tmp_path / f"a.db{side}").exists():
            (tmp_path / f"a.db{side}").rename(tmp_path / f"moved.db{side}")
    assert not db.exists()
    r = run_attempt(["note", "after the move", "--db", str(moved)], env=NO_DAEMON)
    assert r.returncode == 0 and b"checkpoint" not in r.stderr, r.stderr
    v = run_attempt(["verify", "--db", str(moved)], env=NO_DAEMON)
    assert v.returncode == 0 and v.stdout.endswith(b" events, 2 checkpoints\n"), v.stdout + v.stderr
