"""Each defect the fault suite found (issue 14), as a test of its own that fails without its fix:
undecodable text and malformed pages named instead of internal errors, the repair tools'
clean-up hiding the real error, captures writing into damaged files, losses without a trace,
temp files left in the spool, a full disk reported as "cannot open", reads on read-only media,
the spool key missing when it is needed, a signer killed between its two writes."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import apsw
import pytest
from conftest import ROOT, run_attempt

from attemptdb.capture import spool
from attemptdb.cli.main import run as cli
from attemptdb.devtools.faultbench import disk
from attemptdb.integrity import damage
from attemptdb.store.database import Store

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT_USER, reason="needs root to mount a small or read-only filesystem")


def mounted(reason):
    """A mount this test needs: skipped, with why, where mounting is not allowed (a container
    without the capability)."""
    if reason is not None:
        pytest.skip(reason)


def payload(i, session="fault-defects"):
    return json.dumps({"session_id": session, "cwd": "/tmp", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_use_id": f"toolu_defect_{i}", "tool_input": {"command": "make test"},
                       "tool_response": {"stdout": "ok " * 50, "stderr": "", "interrupted": False}}).encode()


def attempt(capsys, *args):
    rc = cli(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def history(db, capsys):
    """A database of 600 synthetic events, imported (so signed)."""
    from attemptdb.devtools import synth
    src = os.path.join(os.path.dirname(db), "history.jsonl")
    synth.write_jsonl(src, 600, 41)
    assert attempt(capsys, "init", "--db", db)[0] == 0
    assert attempt(capsys, "import", "jsonl", src, "--db", db)[0] == 0
    return db


def shell(db, sql):
    conn = apsw.Connection(db)
    try:
        conn.execute(sql)
    finally:
        conn.close()


def digest(db):
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        if os.path.exists(db + suffix):
            with open(db + suffix, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def capture(db, i, **env):
    p = run_attempt(["capture", "claude-code", "--db", db], input=payload(i), env=env)
    assert p.returncode == 0 and p.stdout == b"", p
    return p


def stored(db, i):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT count(*) FROM events WHERE tool_call_id = ?", (f"toolu_defect_{i}",)).fetchone()[0]
    finally:
        conn.close()


def spooled(db, i):
    return sum(1 for p in spool.pending(db) if f"toolu_defect_{i}".encode() in open(p, "rb").read())


def events_page(db, where="middle"):
    """An events leaf page in the middle of the table and the seqs on it."""
    from attemptdb.integrity.recover import _Pages
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' "
                                        "ORDER BY pageno")]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    p = pages[len(pages) // 2]
    pg = _Pages(db)
    try:
        seqs = sorted(rowid for rowid, _rec in pg.cells(p))
    finally:
        pg.close()
    return p, size, seqs


def malform(db):
    """Damage the b-tree of a page in the middle of the events table (its cell pointers)."""
    p, size, seqs = events_page(db)
    with open(db, "r+b") as f:
        f.seek((p - 1) * size + 8)
        f.write(b"\xff" * 8)
    return seqs


# --- one row whose text is not UTF-8 --------------------------------------------------------------

@pytest.fixture
def bad_text(history):
    shell(history, "DROP TRIGGER events_no_update; UPDATE events SET model = CAST(X'80FF41' AS TEXT) WHERE seq = 300")
    return history


def test_verify_names_the_row_whose_text_is_not_utf8(bad_text, capsys):
    rc, out, err = attempt(capsys, "verify", "--db", bad_text)
    assert rc == 1 and "error[internal]" not in err
    assert out.startswith("problem: row seq=300 (ev_") and "not valid UTF-8" in out


def test_verify_names_the_row_whatever_column_holds_the_bad_text(history, capsys):
    shell(history, "DROP TRIGGER events_no_update; UPDATE events SET chain_hash = CAST(X'80FF41' AS TEXT) "
                   "WHERE seq = 42")
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: row seq=42 (ev_") and "not valid UTF-8" in out, (out, err)


def test_bad_text_outside_the_rows_is_damage_verify_reports(history, capsys):
    shell(history, "DROP TRIGGER checkpoints_no_update; UPDATE checkpoints SET note = CAST(X'80FF41' AS TEXT)")
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: the file is damaged: text AttemptDB wrote as UTF-8"), (out, err)


def test_events_jsonl_and_bundle_export_name_the_row(bad_text, capsys, tmp_path):
    rc, out, err = attempt(capsys, "events", "--jsonl", "--db", bad_text)
    assert rc == 1 and err.startswith("error[events.row_unreadable]: row seq=300 (ev_"), err
    rc, out, err = attempt(capsys, "bundle", "export", str(tmp_path / "b.bundle"), "--db", bad_text)
    assert rc == 1 and err.startswith("error[bundle.row_changed]: row seq=300 (ev_"), err
    assert not os.path.exists(tmp_path / "b.bundle")


def test_any_other_read_of_such_text_is_a_coded_error(history, capsys):
    shell(history, "UPDATE session_facts SET project_name = CAST(X'80FF41' AS TEXT)")
    for args in (("status",), ("timeline",)):
        rc, out, err = attempt(capsys, *args, "--db", history)
        assert rc == 1 and err.startswith("error[store.text_not_utf8]"), (args, err)


# --- a malformed page ------------------------------------------------------------------------------

def test_a_malformed_page_is_a_problem_verify_names_and_reads_a_coded_error(history, capsys):
    malform(history)
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: the file is damaged") and "attempt recover" in out, (out, err)
    for args in (("events", "--jsonl"), ("reproject", "--check"), ("doctor",)):
        rc, out, err = attempt(capsys, *args, "--db", history)
        assert rc in (1, 2) and "error[internal]" not in err, (args, err)
    before = digest(history)
    for args in (("reproject", "--check"), ("reproject",)):  # seen damaged: nothing rebuilt, read or written
        rc, out, err = attempt(capsys, *args, "--db", history)
        assert rc == 1 and "error[store.damaged]" in err and "attempt recover" in err, (args, err)
    assert digest(history) == before
    rc, out, err = attempt(capsys, "status", "--db", history)
    assert "the database is damaged" in err and "attempt recover" in err


def test_a_capture_writes_nothing_into_a_file_seen_damaged(history, capsys):
    malform(history)
    assert attempt(capsys, "verify", "--db", history)[0] == 1
    before = digest(history)
    capture(history, 1)
    assert digest(history) == before and spooled(history, 1) == 1
    assert "spooled reason=store.damaged" in open(os.path.join(os.environ["XDG_STATE_HOME"], "attemptdb",
                                                                "hook.log")).read()
    # nor does a read drain the spool into it
    attempt(capsys, "events", "-n", "1", "--db", history)
    assert digest(history) == before and spooled(history, 1) == 1


def test_a_capture_into_a_file_behind_its_signed_head_spools(history, capsys, tmp_path):
    """The -wal with signed rows is lost: the file is behind the device's signature; a capture
    must not put new rows where signed ones were."""
    holder = apsw.Connection(history)
    holder.execute("SELECT 1").fetchall()
    for i in range(3):
        capture(history, 100 + i)
    assert attempt(capsys, "checkpoint", "--db", history)[0] == 0
    shutil.copyfile(history, str(tmp_path / "main-only.db"))
    holder.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(history + suffix):
            os.unlink(history + suffix)
    shutil.move(str(tmp_path / "main-only.db"), history)
    before = digest(history)
    capture(history, 2)
    assert digest(history) == before and spooled(history, 2) == 1
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and "the tail was removed or the file was rolled back" in out


# --- the repair tools ---------------------------------------------------------------------------------

def test_reproject_reports_a_bad_projection_row_instead_of_failing_on_it(history, capsys):
    shell(history, "UPDATE session_facts SET provider = CAST(X'80FF41' AS TEXT) "
                   "WHERE session_id = (SELECT min(session_id) FROM session_facts)")
    rc, out, err = attempt(capsys, "reproject", "--check", "--db", history)
    assert rc == 1 and "differs: session_facts" in out and "error[" not in err, (out, err)
    rc, out, err = attempt(capsys, "reproject", "--db", history)
    assert rc == 1 and "differs: session_facts" in out, (out, err)
    assert attempt(capsys, "reproject", "--check", "--db", history)[0] == 0


def test_reproject_clean_up_never_hides_the_first_error(history, monkeypatch):
    """A rebuild that fails part-way reports its own error, whatever the clean-up meets."""
    from attemptdb.projections import rebuild

    held = []

    def boom(conn, limit=5):
        cur = conn.cursor()
        held.append(cur)
        cur.execute("SELECT * FROM events")  # a statement left open, as a failing fetch leaves it
        raise RuntimeError("the first error")
    monkeypatch.setattr(rebuild, "_compared", lambda conn, limit=5: boom(conn))
    st = Store.open(history)
    try:
        with pytest.raises(RuntimeError, match="the first error"):
            rebuild.reproject(st.conn, write=False)
        assert st.conn.getautocommit()
    finally:
        st.close()


@needs_root
def test_reproject_check_on_a_read_only_file_is_a_coded_error(history, capsys):
    mounted(disk.bind_ro(history))
    try:
        rc, out, err = attempt(capsys, "reproject", "--check", "--db", history)
        assert rc == 2 and err.startswith("error[store.read_only]"), err
    finally:
        disk.umount(history)


# --- captures that can go nowhere -------------------------------------------------------------------------

def nowhere(tmp_path):
    """Environment where no spool directory can exist: each parent is a regular file."""
    wall = tmp_path / "wall"
    wall.write_text("")
    return {"XDG_RUNTIME_DIR": str(wall / "run"), "XDG_STATE_HOME": str(wall / "state"), "TMPDIR": str(wall / "tmp")}


def test_a_capture_that_can_go_nowhere_says_so_on_stderr(tmp_path, home):
    env = nowhere(tmp_path)
    db = str(tmp_path / "wall" / "db" / "attempt.db")
    p = run_attempt(["capture", "claude-code", "--db", db], input=payload(1), env=env)
    assert p.returncode == 0 and p.stdout == b""
    assert p.stderr.startswith(b"attempt capture: error[capture.lost]: "), p.stderr


def test_a_loss_is_counted_where_doctor_finds_it(tmp_path, home, capsys, monkeypatch):
    """The spool directories cannot be made, but the loss counter made ahead of need can be
    rewritten in place: the hook stays silent and `attempt doctor` reports the loss."""
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state), "XDG_RUNTIME_DIR": str(tmp_path / "wall" / "run"),
           "TMPDIR": str(tmp_path / "wall" / "tmp")}
    (tmp_path / "wall").write_text("")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    spool.prepare()
    (state / "attemptdb" / "spool").write_text("")  # the fallback spool cannot be a directory
    db = str(tmp_path / "wall" / "db" / "attempt.db")
    for i in range(3):
        p = run_attempt(["capture", "claude-code", "--db", db], input=payload(i), env=env)
        assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p
    assert spool.losses()["count"] == 3
    rc, out, err = attempt(capsys, "doctor", "--json", "--db", db)
    health = json.loads(out)["database"]["capture_health"]
    assert health["lost"] == 3
    assert any("could not be stored or spooled anywhere" in p for p in json.loads(out)["problems"])


def test_a_full_disk_leaves_no_temp_file_in_the_spool(db, home, monkeypatch):
    Store.open(db).close()
    real = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(28, "No space left on device")
        return real(fd, data)
    monkeypatch.setattr(os, "write", full)
    env = {"event_id": "01a23200-0000-7000-8000-000000000001", "schema_version": 1}
    from attemptdb.model import ids
    env = {"event_id": ids.uuid7(), "schema_version": 1, "device_id": ids.uuid7(), "source_seq": 0, "hlc": 0,
           "observed_at": 1, "captured_at": 1, "provider": "p", "adapter_version": "1",
           "capture_mode": "metadata_only", "provider_event_name": "x", "kind": "unknown",
           "project": ids.project_identity("/", None, ids.NIL), "session_id": ids.session_id("p", "s"),
           "provider_session_id": "s", "agent": {}}
    with pytest.raises(OSError):
        spool.put(db, env)
    monkeypatch.setattr(os, "write", real)
    for d in spool.directories(db):
        assert not (os.path.isdir(d) and [n for n in os.listdir(d) if n.endswith(".tmp")]), os.listdir(d)


def test_init_makes_the_spool_key_and_loss_counter_ahead_of_need(db, home, capsys):
    """Made while there is space: on a full disk an unsealed spool file is never ingested,
    and a counter that does not exist cannot be created."""
    assert attempt(capsys, "init", "--db", db)[0] == 0
    data = os.path.join(os.environ["XDG_DATA_HOME"], "attemptdb")
    assert os.path.exists(os.path.join(data, spool.KEY_FILE))
    assert os.path.getsize(os.path.join(os.environ["XDG_STATE_HOME"], "attemptdb", spool.LOST_FILE)) == spool.LOST_SIZE


# --- full disk and read-only media (real mounts) ------------------------------------------------------------

@needs_root
def test_on_a_full_disk_reads_work_and_imports_say_disk_full(tmp_path, home, capsys):
    small = str(tmp_path / "small")
    mounted(disk.mount_tmpfs(small, "4m"))
    try:
        db = os.path.join(small, "attempt.db")
        assert attempt(capsys, "init", "--db", db)[0] == 0
        capture(db, 1)
        for suffix in ("-wal", "-shm"):  # a quiet file: SQLite must make its -shm to read it
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
        disk.fill(small)
        for args in (("status",), ("events", "-n", "1"), ("verify",)):
            rc, out, err = attempt(capsys, *args, "--db", db)
            assert rc == 0 and "cannot_open" not in err, (args, out, err)
        from attemptdb.devtools import synth
        src = str(tmp_path / "more.jsonl")
        synth.write_jsonl(src, 50, 1)
        rc, out, err = attempt(capsys, "import", "jsonl", src, "--db", db)
        assert rc == 2 and err.startswith("error[store.disk_full]"), err
    finally:
        disk.umount(small)


@needs_root
def test_reads_work_on_a_read_only_filesystem(tmp_path, home, capsys):
    fs = str(tmp_path / "ro")
    mounted(disk.mount_tmpfs(fs, "16m"))
    try:
        db = os.path.join(fs, "attempt.db")
        assert attempt(capsys, "init", "--db", db)[0] == 0
        capture(db, 1)
        assert attempt(capsys, "events", "-n", "1", "--db", db)[0] == 0  # settled: no -wal content
        assert disk.remount(fs, "ro") is None
        for args in (("events", "-n", "1"), ("status",), ("verify",), ("timeline",)):
            rc, out, err = attempt(capsys, *args, "--db", db)
            assert rc == 0, (args, out, err)
        assert "toolu_defect_1" not in out
        capture(db, 2)
        assert spooled(db, 2) == 1
    finally:
        disk.umount(fs)


# --- a signer killed between its two writes ------------------------------------------------------------------

DRIVER = """
import os, sys
sys.path.insert(0, {root!r})
from attemptdb.integrity import checkpoint
real = checkpoint._write_outside
def dies(device, note):
    os._exit(9)  # kill -9 right before the copy beside the key is written
checkpoint._write_outside = dies
from attemptdb.cli.main import run
sys.exit(run(["checkpoint", "--db", {db!r}]))
"""


def test_a_signer_killed_before_its_outside_copy_leaves_a_file_that_verifies(db, home, capsys):
    """The first checkpoint: committed in the file without its copy beside the key, verify
    would report it and nothing would sign again (checkpoint.outside_missing)."""
    assert attempt(capsys, "init", "--db", db)[0] == 0
    capture(db, 1)
    p = subprocess.run([sys.executable, "-c", DRIVER.format(root=ROOT, db=db)], env=dict(os.environ),
                       capture_output=True)
    assert p.returncode == 9
    rc, out, err = attempt(capsys, "verify", "--db", db)
    assert rc == 0, out
    rc, out, err = attempt(capsys, "checkpoint", "--db", db)
    assert rc == 0 and out.startswith("checkpoint: size 1"), (out, err)


def test_the_damage_mark_follows_the_file_not_the_path(history, capsys, tmp_path):
    """A recovered file moved into the damaged one's place is written to again."""
    malform(history)
    assert attempt(capsys, "verify", "--db", history)[0] == 1
    assert damage.marked(history) is not None
    out = str(tmp_path / "recovered.db")
    assert attempt(capsys, "recover", "--db", history, "--out", out)[0] == 0
    os.rename(history, history + ".damaged")
    for suffix in ("-wal", "-shm"):
        if os.path.exists(history + suffix):
            os.unlink(history + suffix)
    os.rename(out, history)
    assert damage.marked(history) is None
    capture(history, 5)
    assert stored(history, 5) == 1


# --- verify tells the whole truth about the pages ------------------------------------------------------

def test_verify_sees_a_damaged_index_that_quick_check_misses(history, capsys):
    """A flipped byte inside an index key: every page still parses (quick_check says ok) but
    the index no longer matches its table; SQLite answers queries through it wrongly."""
    conn = apsw.Connection(history, flags=apsw.SQLITE_OPEN_READONLY)
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_autoindex_events_1' "
                                        "AND pagetype = 'leaf'")]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    import struct
    with open(history, "r+b") as f:
        for p in pages:
            f.seek((p - 1) * size)
            data = f.read(size)
            ncells = struct.unpack(">H", data[3:5])[0]
            cells = [struct.unpack(">H", data[8 + 2 * i:10 + 2 * i])[0] for i in range(ncells)]
            hits = [c + data[c:c + 16].find(b"ev_") + 3 for c in cells
                    if data[c:c + 16].find(b"ev_") >= 0]  # an event id inside a live cell
            if hits:
                at = (p - 1) * size + hits[0]
                f.seek(at)
                f.write(b"1" if data[hits[0]:hits[0] + 1] != b"1" else b"2")
                break
        else:
            pytest.fail("no index key to damage")
    conn = apsw.Connection(history, flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    conn.close()
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: the file is damaged: SQLite's integrity check fails"), out
    assert damage.marked(history) is not None


def test_an_import_into_a_damaged_file_writes_nothing(history, capsys, tmp_path):
    malform(history)
    assert attempt(capsys, "verify", "--db", history)[0] == 1
    from attemptdb.devtools import synth
    src = str(tmp_path / "more.jsonl")
    synth.write_jsonl(src, 20, 9)
    before = digest(history)
    rc, out, err = attempt(capsys, "import", "jsonl", src, "--db", history)
    assert rc == 1 and err.startswith("error[store.damaged]"), err
    assert digest(history) == before


def test_a_sound_verify_lifts_a_mark_a_passing_error_left(history, capsys):
    damage.mark(history, "SQLite reports the file malformed", "capture")
    capture(history, 7)
    assert stored(history, 7) == 0 and spooled(history, 7) == 1
    assert attempt(capsys, "verify", "--db", history)[0] == 0
    assert damage.marked(history) is None
    attempt(capsys, "events", "-n", "1", "--db", history)
    assert stored(history, 7) == 1


def test_when_both_spool_directories_fail_the_runtime_directory_takes_the_event(tmp_path, home, capsys, monkeypatch):
    """The database's folder and the state folder cannot take a file (full or read-only):
    the runtime directory, usually another filesystem, does; the next read drains it."""
    db = str(tmp_path / "data" / "attempt.db")
    assert attempt(capsys, "init", "--db", db)[0] == 0
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    state = tmp_path / "state-as-file"
    state.write_text("")
    (tmp_path / "data" / "attempt.db.spool").write_text("")  # the primary spool cannot be a directory
    env = {"XDG_STATE_HOME": str(state), "XDG_RUNTIME_DIR": str(run_dir)}
    shell(db, "PRAGMA user_version = 999")  # the database refuses the capture (newer schema)
    p = run_attempt(["capture", "claude-code", "--db", db], input=payload(3), env=env)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b""
    from attemptdb.store import schema
    shell(db, f"PRAGMA user_version = {schema.latest()}")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert [os.path.dirname(f) for f in spool.pending(db)] == [spool.runtime_dir(db)]
    attempt(capsys, "events", "-n", "1", "--db", db)
    assert stored(db, 3) == 1 and spool.pending(db) == []


def test_sqlite_failing_in_the_middle_of_verify_is_a_problem_not_an_error(history, capsys, monkeypatch):
    """Whatever part of verify meets the damage first (here the row check: the page check is
    skipped), the answer is `problem: the file is damaged`, exit 1."""
    from attemptdb.integrity import verify
    malform(history)
    monkeypatch.setattr(verify, "integrity", lambda conn: [])
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: the file is damaged: "), (out, err)


def test_sqlite_raising_or_stopping_early_while_verify_reads_rows(history, capsys, monkeypatch):
    """SQLite may raise at a page it cannot read, or end the scan there without a word: both
    are `problem: the file is damaged`, never `ok` and never an error."""
    from attemptdb.integrity import chain, verify
    monkeypatch.setattr(verify, "integrity", lambda conn: [])

    def raises(conn, lo, hi, leaves=None, gaps=None):
        raise apsw.CorruptError("database disk image is malformed")
    monkeypatch.setattr(chain, "check_rows", raises)
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: the file is damaged: SQLite cannot read part of it"), (out, err)
    monkeypatch.setattr(chain, "check_rows", lambda conn, lo, hi, leaves=None, gaps=None: (hi - lo - 3, None))
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: the file is damaged: only 597 of its 600 rows"), (out, err)


def test_a_daemon_that_cannot_store_spool_or_count_an_event_lets_the_hook_say_so(tmp_path, monkeypatch):
    """Through the daemon the hook would answer for an event the daemon could only drop: the
    daemon answers `error`, the hook tries itself and says on stderr that the event is lost."""
    from test_daemon import Env
    env = Env(tmp_path)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env.vars["XDG_RUNTIME_DIR"] = str(run)
    first = run_attempt(["capture", "claude-code"], input=payload(0), env=dict(env.vars), cwd=env.cwd)
    assert first.returncode == 0
    env.wait_running()
    try:
        state = os.path.join(env.state, "attemptdb")
        os.makedirs(run / "attemptdb", mode=0o700, exist_ok=True)
        blocked = [env.db + ".spool", os.path.join(state, "spool"), str(run / "attemptdb" / "spool")]
        for path in blocked:  # no spool directory can be made
            if os.path.isdir(path):
                shutil.rmtree(path)
            with open(path, "w"):
                pass
        for path in (os.path.join(state, spool.LOST_FILE), str(run / "attemptdb" / spool.LOST_FILE)):
            if os.path.exists(path):
                os.unlink(path)
            os.mkdir(path)  # nor can a loss counter be written
        monkeypatch.setenv("XDG_STATE_HOME", env.state)  # and the file is known to be damaged
        assert damage.mark(env.db, "SQLite reports the file malformed", "test")
        p = run_attempt(["capture", "claude-code"], input=payload(1), env=dict(env.vars), cwd=env.cwd)
        assert p.returncode == 0 and p.stdout == b""
        assert p.stderr.startswith(b"attempt capture: error[capture.lost]: "), (p.stderr, env.hook_log())
    finally:
        env.stop()


def test_a_signer_never_vouches_for_rows_sqlite_stopped_short_of(history, capsys, monkeypatch):
    """The rows since the last signature are read to be checked; if SQLite ends that read
    early (a damaged page) nothing is signed."""
    from attemptdb.integrity import chain
    capture(history, 9)
    real = chain.check_rows
    monkeypatch.setattr(chain, "check_rows", lambda conn, lo, hi, leaves=None, gaps=None:
                        (real(conn, lo, hi, leaves, gaps)[0] - 1, None))
    rc, out, err = attempt(capsys, "checkpoint", "--db", history)
    assert rc == 1 and err.startswith("error[checkpoint.unverified]: nothing was signed: only 0 of the 1 rows"), err


def test_a_row_whose_json_no_longer_parses_is_a_coded_error_for_the_repair_tools(history, capsys):
    """Found by the long form: bytes flipped inside a stored row's JSON made reproject end in
    error[internal] (SQLError: malformed JSON from a projection trigger)."""
    shell(history, "DROP TRIGGER events_no_update; UPDATE events SET attrs_json = '[1,' "
                   "WHERE seq = (SELECT min(seq) FROM events WHERE kind = 'tool_call_finished')")
    from attemptdb.store import schema, schema_integrity
    conn = apsw.Connection(history)
    schema_integrity.restore(conn, schema.latest())  # the trigger back: only the row differs
    conn.close()
    for args in (("reproject", "--check"), ("reproject",)):
        rc, out, err = attempt(capsys, *args, "--db", history)
        assert rc == 1 and err.startswith("error[store.bad_row]: "), (args, out, err)
    rc, out, err = attempt(capsys, "verify", "--db", history)
    assert rc == 1 and out.startswith("problem: row seq=") and "was edited" in out


# --- objects a file's schema version does not account for ----------------------------------------

def test_a_file_holding_tables_its_version_does_not_have_is_a_coded_error_and_stays_as_it_was(db, capsys):
    from attemptdb import resources
    conn = apsw.Connection(db)
    with open(resources.path("migrations", "0001_events.sql"), encoding="utf-8") as f:
        conn.execute(f.read())
    conn.execute("PRAGMA user_version = 1; CREATE TABLE session_facts (mine TEXT)")  # 0002 makes it
    conn.close()
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    conn = apsw.Connection(db)
    before = conn.execute(schema).fetchall()
    conn.close()
    for args in (("events", "-n", "1"), ("timeline",), ("init",)):  # commands that open it to write
        rc, out, err = attempt(capsys, *args, "--db", db)
        assert rc == 2 and err.startswith("error[store.schema_changed]") and "schema version (1)" in err, (args, err)
    conn = apsw.Connection(db)  # the upgrade's transaction rolled back: nothing of it is left
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1 and conn.execute(schema).fetchall() == before
    conn.close()


# --- a named pipe or a folder where the key or the checkpoint copy belongs ------------------------

@pytest.mark.parametrize("what", ["checkpoint", "key"])
@pytest.mark.parametrize("kind", ["fifo", "dir"])
def test_a_pipe_or_folder_at_the_key_or_checkpoint_is_refused_at_once_and_a_hook_still_stores(
        history, what, kind, capsys):
    from attemptdb.integrity import checkpoint, keys
    st = Store.open(history, readonly=True)
    device = st.device_id  # bare UUID text: it names the key and checkpoint files
    st.close()
    path = checkpoint.outside_path(device) if what == "checkpoint" else keys.key_path(device)
    os.unlink(path)
    os.mkfifo(path) if kind == "fifo" else os.mkdir(path)
    env = {"ATTEMPTDB_PATH": history, "ATTEMPTDB_NO_DAEMON": "1"}
    p = run_attempt(["verify"], env=env, timeout=60)  # a pipe nothing writes to: no hang
    err = p.stderr.decode()
    assert p.returncode in (1, 2) and f"error[{what if what == 'checkpoint' else 'keys'}.unreadable]" in err \
        and "not a regular file" in err and "internal" not in err, err
    p = run_attempt(["capture", "claude-code"], input=payload(1, "pipe-at-the-" + what), env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == b""
    conn = apsw.Connection(history)
    stored = conn.execute("SELECT count(*) FROM events WHERE provider_session_id = ?",
                          ("pipe-at-the-" + what,)).fetchone()[0]
    conn.close()
    assert stored == 1 or os.listdir(history + ".spool"), "the hook's event was neither stored nor spooled"


def test_a_scan_that_goes_back_in_sequence_is_damage_not_an_insert(history):
    """A b-tree whose damaged pointers lead a scan in sequence order back to an earlier row
    (seen once in CI: seq=120 after seq=283) is `damaged`, never a row someone inserted."""
    from attemptdb.integrity import chain

    class Looping:
        """The file's connection, except that the range scan returns seq 120 again after 283."""

        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, params=()):
            rows = self.conn.execute(sql, params)
            if sql != chain.SELECT_RANGE:
                return rows
            rows = list(rows)
            at = next(i for i, r in enumerate(rows) if r[0] == 283)
            return iter(rows[:at + 1] + [r for r in rows if r[0] == 120] + rows[at + 1:])

    conn = apsw.Connection(history, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert chain.check_rows(conn, 1, 601)[1] is None  # the file itself is sound
        n, found = chain.check_rows(Looping(conn), 1, 601)
    finally:
        conn.close()
    assert n == 284 and found["kind"] == "damaged" and found["seq"] == 120, found
    assert found["message"].startswith("the file is damaged: row seq=120 ("), found
