"""`attempt demo` (Quick start 1) leaves nothing in the user's key directory: it used to make a
signing key and a checkpoint copy there on every run, one per demo database. Its checkpoint is
now signed by a one-off key deleted once it has signed, the demo says so, and `attempt verify`
still checks that signature against the public key the file records."""

import json
import os

from conftest import run_attempt, signed_demo

from attemptdb.store import location


def _files(root) -> list:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_the_demo_leaves_no_key_or_checkpoint_copy_behind(tmp_path, home):
    work = tmp_path / "work"
    work.mkdir()
    for _ in range(2):  # a second run replaces the demo database: still nothing left
        r = run_attempt(["demo"], cwd=str(work), env={"COLUMNS": "80", "ATTEMPTDB_NO_DAEMON": "1"}, timeout=300)
        assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    keydir = location.key_dir()  # this HOME's: the `home` fixture points HOME and XDG_* at tmp_path
    assert not os.path.exists(keydir) or _files(keydir) == [], _files(keydir)
    assert not any(n.startswith("attemptdb-demo-keys-") for n in os.listdir(tmp_path / "tmp"))  # its own: gone
    assert [n for n in _files(home) if n.endswith((".key", ".checkpoint", ".lock", ".replaced"))] == []
    assert ("ok: 31 events, 1 checkpoint\n  (signed by a one-off key, deleted after signing: no key is left behind, "
            "so\n   no signed bundle or team dataset can be made from this file)\n") in out, out
    # what it printed stays true: the signature verifies against the public key in the file
    r = run_attempt(["verify", "--db", str(work / "attemptdb-demo.db")], env={"COLUMNS": "80"})
    assert r.returncode == 0 and r.stdout.decode() == "ok: 31 events, 1 checkpoint\n", r.stderr.decode()
    assert "no local signing key" in r.stderr.decode()
    assert not os.path.exists(keydir) or _files(keydir) == []


def test_a_demo_database_asked_to_keep_its_key_keeps_it_where_it_is_told(tmp_path, home):
    """The library's `key_dir` (tests that need a demo database commands can sign): the key and
    the checkpoint copy there, nowhere else."""
    db, keep = str(tmp_path / "d.db"), str(tmp_path / "kept")
    signed_demo(db, keep)
    assert sorted(n.rsplit(".", 1)[-1] for n in os.listdir(keep) if not n.endswith(".lock")) == ["checkpoint", "key"]
    assert not os.path.exists(location.key_dir())
    r = run_attempt(["checkpoint", "--db", db], env={"ATTEMPTDB_KEY_DIR": keep})
    assert r.returncode == 0, r.stderr.decode()


def test_writing_to_the_demo_database_says_nothing_of_its_deleted_key(tmp_path, home):
    """The README's commands run on the demo file (a retraction, a correction) are not told, on
    every read after, that no checkpoint was signed (`keys.lost`): the demo deleted its key on
    purpose and said so."""
    work = tmp_path / "work"
    work.mkdir()
    r = run_attempt(["demo"], cwd=str(work), env={"ATTEMPTDB_NO_DAEMON": "1"}, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    db = str(work / "attemptdb-demo.db")
    r = run_attempt(["query", "SELECT session_id FROM sessions LIMIT 1", "--db", db, "--json"])
    session = json.loads(r.stdout)[0]["session_id"]
    r = run_attempt(["retract", "--session", session, "--reason", "test", "--yes", "--db", db])
    assert r.returncode == 0, r.stderr.decode()
    assert "keys.lost" not in r.stderr.decode(), r.stderr.decode()
    for read in (["events"], ["status"], ["failures"]):  # each read signs a due head: nothing to say of it
        r = run_attempt([*read, "--db", db])
        assert r.returncode == 0 and "keys.lost" not in (r.stdout + r.stderr).decode(), (read, r)
