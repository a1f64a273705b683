"""A hostile or damaged database file handed to a command (`--db FILE`): whatever the file and
the files beside it hold, a command fails with a coded error (never a traceback or an
`internal` one), and a command that refuses a file, or finds it damaged, writes nothing into
it: not even SQLite's checkpoint of a `-wal` beside it when the connection closes (a `-wal`
from another database would otherwise be folded into the file and replace its pages)."""

import hashlib
import os
import shutil
import sqlite3
import struct

import pytest
from conftest import run_attempt, signed_demo


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    """Two AttemptDB files of the demo's history (each with its own device and key, kept)."""
    root = tmp_path_factory.mktemp("hostile_db")
    env = {"HOME": str(root), "XDG_DATA_HOME": str(root / "share"), "XDG_STATE_HOME": str(root / "state"),
           "XDG_CONFIG_HOME": str(root / "config"), "ATTEMPTDB_KEY_DIR": str(root / "keys"),
           "ATTEMPTDB_NO_DAEMON": "1", "NO_COLOR": "1"}
    out = {}
    for name in ("mine", "other"):
        path = str(root / f"{name}.db")
        signed_demo(path, env["ATTEMPTDB_KEY_DIR"], env)
        out[name] = path
    return root, env, out


def _copy(src, dst):
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o600)
    return dst


def _wal_of_plain_sqlite(tmp_path):
    """The -wal of an unrelated SQLite database (4 KiB pages), with committed frames."""
    p = str(tmp_path / "plain.db")
    c = sqlite3.connect(p, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("CREATE TABLE t(x)")
    c.execute("INSERT INTO t VALUES (1)")
    wal = p + "-wal"
    data = open(wal, "rb").read()
    c.close()
    return data


def _wal_of_other_attemptdb(other, tmp_path):
    """The -wal of another AttemptDB file (same page size), with committed frames."""
    p = _copy(other, str(tmp_path / "other-copy.db"))
    c = sqlite3.connect(p, isolation_level=None)
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("UPDATE meta SET value = 'metadata_only' WHERE key = 'capture_mode'")
    data = open(p + "-wal", "rb").read()
    c.close()
    return data


@pytest.mark.parametrize("cmd", [["events", "-n", "2"], ["checkpoint"], ["status"], ["verify"]])
def test_a_foreign_wal_is_not_folded_into_a_refused_file(demo_files, tmp_path, cmd):
    """A plain SQLite -wal beside an AttemptDB makes SQLite see another database: the command
    refuses the file (coded), and the file and the -wal stay as they were (before: a writer's
    connection, left open by the refused open, checkpointed the -wal on exit and cut the 1.9 MB
    file down to the other database's 8 KiB)."""
    root, env, files = demo_files
    db = _copy(files["mine"], str(tmp_path / "a.db"))
    wal = _wal_of_plain_sqlite(tmp_path)
    with open(db + "-wal", "wb") as f:
        f.write(wal)
    before = _sha(db)
    r = run_attempt([cmd[0], "--db", db, *cmd[1:]], env=env, timeout=60)
    err = r.stderr.decode()
    assert r.returncode != 0 and "Traceback" not in err and "error[internal]" not in err
    assert "error[store." in err
    assert _sha(db) == before
    assert open(db + "-wal", "rb").read() == wal


@pytest.mark.parametrize("cmd", [["events", "-n", "2"], ["checkpoint"]])
def test_a_damaged_file_keeps_its_wal(demo_files, tmp_path, cmd):
    """Another AttemptDB's -wal beside a file makes it no longer end in the row its device
    signed: the file is damaged and "nothing is written to it" (spec/recover.md): a read
    command says so, and SQLite does not fold the -wal into it when the command closes it (the
    -wal is evidence `attempt recover` reads)."""
    root, env, files = demo_files
    db = _copy(files["mine"], str(tmp_path / "b.db"))
    wal = _wal_of_other_attemptdb(files["other"], tmp_path)
    with open(db + "-wal", "wb") as f:
        f.write(wal)
    before = _sha(db)
    r = run_attempt([cmd[0], "--db", db, *cmd[1:]], env=env, timeout=60)
    err = r.stderr.decode()
    assert "Traceback" not in err and "error[internal]" not in err
    assert "damaged" in err
    assert _sha(db) == before
    assert open(db + "-wal", "rb").read() == wal


@pytest.mark.parametrize("cmd", [["verify"], ["query", "SELECT count(*) FROM events"], ["events", "-n", "1"],
                                 ["checkpoint"]])
def test_an_unknown_schema_format_is_a_coded_error(demo_files, tmp_path, cmd):
    """A header whose schema format number SQLite does not know (byte 44: 1-4) makes SQLite
    refuse the file ("unsupported file format", an SQLError): a coded error, not `internal`."""
    root, env, files = demo_files
    db = _copy(files["mine"], str(tmp_path / "c.db"))
    with open(db, "r+b") as f:
        f.seek(44)
        f.write(struct.pack(">I", 9))
    before = _sha(db)
    r = run_attempt([cmd[0], "--db", db, *cmd[1:]], env=env, timeout=60)
    err = r.stderr.decode()
    assert r.returncode != 0
    assert "Traceback" not in err and "error[internal]" not in err
    assert "error[store." in err
    assert _sha(db) == before


def _hot_journal_of_plain_sqlite(tmp_path):
    """A hot rollback journal of an unrelated SQLite database with AttemptDB's page size: a
    writer killed mid-transaction left it, holding that database's original pages."""
    import subprocess
    import sys
    p = str(tmp_path / "junk.db")
    c = sqlite3.connect(p, isolation_level=None)
    c.execute("PRAGMA page_size=16384")
    c.execute("PRAGMA journal_mode=DELETE")
    c.execute("CREATE TABLE junk(x)")
    c.execute("INSERT INTO junk SELECT randomblob(10000) FROM (WITH RECURSIVE r(i) AS "
              "(SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<100) SELECT i FROM r)")
    c.close()
    code = ("import os, sqlite3\n"
            f"c = sqlite3.connect({p!r}, isolation_level=None)\n"
            "c.execute('PRAGMA cache_size=1')\n"
            "c.execute('BEGIN')\n"
            "c.execute('UPDATE junk SET x = zeroblob(10000)')\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    data = open(p + "-journal", "rb").read()
    assert data
    return data


@pytest.mark.parametrize("cmd", [["events", "-n", "2"], ["verify"], ["checkpoint"]])
def test_a_planted_journal_is_not_played_into_the_file(demo_files, tmp_path, cmd):
    """A `-journal` beside a WAL-mode AttemptDB file: SQLite would play it back into the file on
    the next writer's open (before: `attempt events` replaced the 1.9 MB file by the other
    database's pages, every event gone). The command refuses the file, coded, and both files
    stay as they were."""
    root, env, files = demo_files
    db = _copy(files["mine"], str(tmp_path / "d.db"))
    journal = _hot_journal_of_plain_sqlite(tmp_path)
    with open(db + "-journal", "wb") as f:
        f.write(journal)
    before = _sha(db)
    r = run_attempt([cmd[0], "--db", db, *cmd[1:]], env=env, timeout=60)
    err = r.stderr.decode()
    assert r.returncode != 0 and "Traceback" not in err
    assert "error[store.cannot_open]" in err and "-journal" in err
    assert _sha(db) == before
    assert open(db + "-journal", "rb").read() == journal


def test_status_reads_no_count_from_a_changed_schema(demo_files, tmp_path):
    """A planted `needs_you` view that never ends (an endless recursive query): `status` says the
    schema was changed and reads no count from it (it ran `count(*)` on the view, no time limit,
    forever); the file is left as it was."""
    root, env, files = demo_files
    f = str(tmp_path / "planted.db")
    _copy(files["mine"], f)
    c = sqlite3.connect(f)
    c.execute("DROP VIEW needs_you")
    c.execute("CREATE VIEW needs_you AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
              "SELECT n AS project_name FROM r")
    c.commit()
    c.close()
    before = _sha(f)
    r = run_attempt(["status", "--db", f, "--json"], env=env, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    import json
    rep = json.loads(r.stdout)
    assert rep["needs_you"] is None and rep["sessions"] is None
    assert any("view needs_you is not what" in w for w in rep["warnings"]), rep["warnings"]
    assert _sha(f) == before


def test_a_trigger_that_drops_writes_loses_no_event(tmp_path, home):
    """A foreign `BEFORE INSERT … RAISE(IGNORE)` trigger on events: a capture exited 0 with its
    event nowhere (not stored, not spooled), an import said "imported 31 events" storing none,
    and once `reproject` dropped the trigger `verify` said ok. Now the write is refused as the
    file's fault: the hook spools (the event kept, not quarantined), the import stops with a
    coded error; after `reproject` the next capture brings the spooled event in."""
    import json
    env = NO_DAEMON
    db = str(tmp_path / "x.db")

    def capture(n):
        prompt_hook(db, n)

    def stored():
        r = run_attempt(["events", "--jsonl", "--db", db], env=env)
        return [json.loads(x).get("content", {}).get("prompt") for x in r.stdout.splitlines()]

    assert run_attempt(["init", "--db", db], env=env).returncode == 0
    capture(1)
    with sqlite3.connect(db) as c:
        c.execute("CREATE TRIGGER zz BEFORE INSERT ON events BEGIN SELECT RAISE(IGNORE); END")
    c.close()
    capture(2)
    spooled = [n for n in os.listdir(tmp_path / "x.db.spool") if n.endswith(".event")]
    assert len(spooled) == 1
    src = tmp_path / "in.jsonl"
    src.write_bytes(run_attempt(["events", "--jsonl", "--db", db], env=env).stdout.replace(b"prompt 1", b"prompt 9")
                    .replace(b'"event_id":"0', b'"event_id":"f'))
    r = run_attempt(["import", "jsonl", str(src), "--db", db], env=env)
    assert r.returncode == 1 and r.stderr.startswith(b"error[store.write_ignored]: 1 of 1 events written did not land")
    assert not os.path.exists(tmp_path / "x.db.spool" / "quarantine") or not os.listdir(tmp_path / "x.db.spool" / "quarantine")
    assert stored() == ["prompt 1"]
    assert b"dropped trigger zz on events" in run_attempt(["reproject", "--db", db], env=env).stdout
    capture(3)
    assert stored() == ["prompt 1", "prompt 2", "prompt 3"]
    assert run_attempt(["verify", "--db", db], env=env).returncode == 0


def test_a_reset_schema_version_is_named_by_verify_and_refused_by_writers(tmp_path, home):
    """`PRAGMA user_version = 0` on a good file: verify said ok ("migrations pending") while
    every capture spooled for ever and an import said "restore the file from a copy". Now verify
    fails naming the version to put back, writers refuse with their own code, the hook spools,
    and once the version is back the spooled event comes in."""
    import json
    env = NO_DAEMON
    db = str(tmp_path / "v.db")

    def capture(n):
        prompt_hook(db, n)

    assert run_attempt(["init", "--db", db], env=env).returncode == 0
    capture(1)
    with sqlite3.connect(db) as c:
        latest = c.execute("PRAGMA user_version").fetchone()[0]
        c.execute("PRAGMA user_version = 0")
    c.close()
    v = run_attempt(["verify", "--db", db], env=env)
    said = v.stdout.decode().replace("\n  ", " ")
    assert v.returncode == 1 and "problem: schema version 0" in said, said
    assert f"`sqlite3 FILE 'PRAGMA user_version = {latest}'` puts it back" in said
    capture(2)
    assert len([n for n in os.listdir(tmp_path / "v.db.spool") if n.endswith(".event")]) == 1
    r = run_attempt(["note", "hello", "--db", db], env=env)
    assert r.returncode == 1 and r.stderr.startswith(b"error[store.version_reset]: "), r.stderr
    with sqlite3.connect(db) as c:
        c.execute(f"PRAGMA user_version = {latest}")
    c.close()
    capture(3)
    r = run_attempt(["events", "--jsonl", "--db", db], env=env)
    prompts = [json.loads(x).get("content", {}).get("prompt") for x in r.stdout.splitlines()]
    assert prompts == ["prompt 1", None, "prompt 3"], r.stdout  # spooled without the file's mode: metadata only
    assert run_attempt(["verify", "--db", db], env=env).returncode == 0


def test_a_journal_beside_a_file_with_side_files_is_judged_without_opening_the_file(tmp_path, monkeypatch):
    """sidefiles.journal_beside_wal read the file's header through a descriptor of its own: in
    a process holding the file open through SQLite (the daemon, `attempt ui`) its close dropped
    every POSIX lock of the process. Beside a -wal or -shm the file is not opened at all."""
    from attemptdb.store import sidefiles
    db = tmp_path / "a.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)
    (tmp_path / "a.db-journal").write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\x00" * 504)

    def refuse(*a, **k):
        raise AssertionError("the database file was opened")
    monkeypatch.setattr(sidefiles, "open", refuse, raising=False)
    (tmp_path / "a.db-shm").write_bytes(b"\x00" * 32768)
    assert sidefiles.journal_beside_wal(str(db)) is True
    (tmp_path / "a.db-shm").unlink()
    (tmp_path / "a.db-wal").write_bytes(b"")
    assert sidefiles.journal_beside_wal(str(db)) is True


NO_DAEMON = {"ATTEMPTDB_NO_DAEMON": "1"}


def prompt_hook(db: str, n: int) -> None:
    """A real hook process storing (or spooling) the prompt `prompt n`; it exits 0, silent."""
    import json
    p = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit", "prompt": f"prompt {n}"}
    r = run_attempt(["capture", "claude-code", "--db", db], input=json.dumps(p).encode(), env=NO_DAEMON)
    assert r.returncode == 0 and r.stdout == b""
