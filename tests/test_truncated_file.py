"""A database file truncated to nothing beside its -wal (a tool, a bad restore, a full disk's
`> attempt.db`): SQLite deletes such a -wal when it opens the file, and with it the newest rows.
No command opens it (store.wal_without_file, the -wal's bytes untouched), a hook still exits 0
with its event spooled, a daemon that had the file open leaves without writing on it, and
`attempt recover` reads the rows the -wal holds (integrity/walframes.py)."""

import hashlib
import json
import os

import pytest
from conftest import run_attempt
from test_daemon import Env, tool, wait_dead

from attemptdb.capture import spool
from attemptdb.devtools import synth
from attemptdb.errors import AttemptError
from attemptdb.integrity import walframes
from attemptdb.store.database import Store


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def truncated(e, n, fold_first=False):
    """`n` hooks written by the hooks themselves (no daemon), with `fold_first` after what the
    file held before was folded into it; then the file truncated to nothing. Returns the -wal's
    digest."""
    if fold_first:
        st = Store.open(e.db)
        st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        st.close()
    for i in range(n):
        e.capture(tool(i), daemon_on=False)
    assert os.path.getsize(e.db + "-wal") > 0
    os.truncate(e.db, 0)
    return digest(e.db + "-wal")


@pytest.mark.parametrize("readonly", [True, False])
def test_no_store_opens_an_empty_file_beside_its_wal(tmp_path, readonly):
    e = Env(tmp_path)
    wal = truncated(e, 3)
    with pytest.raises(AttemptError) as err:
        Store.open(e.db, readonly=readonly)
    assert err.value.code == "store.wal_without_file"
    assert os.path.getsize(e.db) == 0 and digest(e.db + "-wal") == wal


def test_commands_refuse_it_and_a_hook_spools_its_event(tmp_path):
    e = Env(tmp_path)
    wal = truncated(e, 2)
    for args in (["status"], ["verify"], ["query", "SHOW SESSIONS"], ["doctor"]):
        p = run_attempt([*args, "--db", e.db], env=e.vars, cwd=e.cwd)
        assert p.returncode == 1 and b"[store.wal_without_file]" in p.stdout + p.stderr, (args, p)
    e.capture(tool(9), daemon_on=False)  # exit 0, nothing on stdout or stderr (Env.capture)
    assert len(spool.pending(e.db)) == 1 and "store.wal_without_file" in e.hook_log()
    assert os.path.getsize(e.db) == 0 and digest(e.db + "-wal") == wal


def test_a_daemon_leaves_a_file_truncated_under_it_untouched(tmp_path):
    e = Env(tmp_path)
    try:
        e.capture(tool(0))
        pid = e.wait_running()
        e.settled()
        os.truncate(e.db, 0)
        wal = digest(e.db + "-wal")
        e.capture(tool(1))  # the daemon says stale and leaves; the hook spools its event
        wait_dead(pid)
        assert os.path.getsize(e.db) == 0 and digest(e.db + "-wal") == wal
        assert len(spool.pending(e.db)) == 1
    finally:
        e.stop()


def test_recover_reads_the_rows_the_wal_holds(tmp_path):
    e = Env(tmp_path)
    src = str(tmp_path / "history.jsonl")
    synth.write_jsonl(src, 600, 1)
    p = run_attempt(["import", "jsonl", src, "--db", e.db], env=e.vars, cwd=e.cwd)
    assert p.returncode == 0, p
    p = run_attempt(["checkpoint", "--db", e.db], env=e.vars, cwd=e.cwd)  # the device key the note is signed with
    assert p.returncode == 0, p
    # 600 rows folded into the file: lost with it, but for the pages the -wal holds; 4 more only in the -wal
    truncated(e, 4, fold_first=True)
    out = str(tmp_path / "recovered.db")
    p = run_attempt(["recover", "--db", e.db, "--out", out, "--json"], env=e.vars, cwd=e.cwd)
    assert p.returncode == 0, p
    rep = json.loads(p.stdout)
    lost = sum(r["to"] - r["from"] + 1 for r in rep["lost"])
    assert 4 <= rep["kept"] < 604 and rep["kept"] + lost == 604, rep
    assert rep["lost"][0]["from"] == 1 and rep["lost"][-1]["to"] < 601, rep["lost"]
    assert any("only the" in n and "-wal holds" in n for n in rep["notes"]), rep["notes"]
    st = Store.open(out, readonly=True)
    try:
        device = st.device_id
        calls = [r[0] for r in st.conn.execute("SELECT tool_call_id FROM events WHERE seq > 600 ORDER BY seq")]
    finally:
        st.close()
    assert "dev_" + device == rep["device_id"] and calls == [f"toolu_daemon_{i}" for i in range(4)]
    p = run_attempt(["verify", "--db", out], env=e.vars, cwd=e.cwd)
    assert p.returncode == 0, p
    assert os.path.getsize(e.db) == 0 and os.path.getsize(e.db + "-wal") > 0  # the damaged pair kept


def test_only_committed_frames_of_the_current_generation_count():
    size = 512
    head = (0x377F0682).to_bytes(4, "big") + (3007000).to_bytes(4, "big") + size.to_bytes(4, "big") \
        + bytes(4) + b"SALTSALT" + bytes(8)

    def frame(pgno, commit, salt=b"SALTSALT", fill=b"x"):
        return pgno.to_bytes(4, "big") + commit.to_bytes(4, "big") + salt + bytes(8) + fill * size
    wal = head + frame(1, 0) + frame(2, 2, fill=b"a") + frame(2, 2, fill=b"b") + frame(3, 0)
    got_size, pages = walframes.committed_pages(wal)
    assert got_size == size and sorted(pages) == [1, 2]  # page 3's transaction never committed
    assert wal[pages[2]:pages[2] + size] == b"b" * size  # the newest committed frame of page 2
    stale = head + frame(1, 1) + frame(2, 2, salt=b"OLDSALTS")
    assert sorted(walframes.committed_pages(stale)[1]) == [1]  # an earlier generation's frame ends it
    assert walframes.committed_pages(b"not a wal" * 10) == (0, {})


def registry(e):
    with open(os.path.join(e.vars["XDG_DATA_HOME"], "attemptdb", "databases")) as f:
        return dict(line.rstrip("\n").split("\t") for line in f)


def test_a_history_emptied_in_place_never_becomes_a_new_identity(tmp_path):
    e = Env(tmp_path)
    e.capture(tool(0), daemon_on=False)
    p = run_attempt(["status", "--db", e.db, "--json"], env=e.vars, cwd=e.cwd)
    held = json.loads(p.stdout)["device_id"]
    assert registry(e) == {os.path.realpath(e.db): held}
    for suffix in ("-wal", "-shm"):  # a clean close: nothing beside it
        if os.path.exists(e.db + suffix):
            os.unlink(e.db + suffix)
    os.truncate(e.db, 0)  # `> attempt.db`
    e.capture(tool(1), daemon_on=False)  # exit 0, silent (Env.capture); the event waits in the spool
    assert len(spool.pending(e.db)) == 1 and "store.emptied" in e.hook_log()
    assert os.path.getsize(e.db) == 0
    for args in (["status"], ["init"], ["verify"]):
        p = run_attempt([*args, "--db", e.db], env=e.vars, cwd=e.cwd)
        assert p.returncode == 1 and b"[store.emptied]" in p.stderr and held.encode() in p.stderr, (args, p)
    os.unlink(e.db)  # what the message says to do to begin a new history here
    e.capture(tool(2), daemon_on=False)
    p = run_attempt(["status", "--db", e.db, "--json"], env=e.vars, cwd=e.cwd)
    new = json.loads(p.stdout)["device_id"]
    assert new != held and registry(e) == {os.path.realpath(e.db): new}
    assert [r[0] for r in e.rows("SELECT tool_call_id FROM events ORDER BY seq")] == ["toolu_daemon_1", "toolu_daemon_2"]


def test_a_file_made_before_the_record_is_recorded_when_signed(tmp_path):
    e = Env(tmp_path)
    e.capture(tool(0), daemon_on=False)
    os.unlink(os.path.join(e.vars["XDG_DATA_HOME"], "attemptdb", "databases"))
    p = run_attempt(["checkpoint", "--db", e.db], env=e.vars, cwd=e.cwd)
    assert p.returncode == 0, p
    assert list(registry(e)) == [os.path.realpath(e.db)]


def test_a_file_nobody_used_yet_still_becomes_a_database(tmp_path):
    e = Env(tmp_path)
    open(e.db, "w").close()  # `touch`: never recorded
    e.capture(tool(0), daemon_on=False)
    assert len(e.rows()) == 1 and not spool.pending(e.db)


def test_the_record_keeps_no_file_that_is_gone(tmp_path, home):
    from attemptdb.store import location
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    for path, dev in ((a, "dev_a"), (b, "dev_b")):
        open(path, "w").close()
        location.remember_database(path, dev)
    assert location.device_at(a) == "dev_a" and location.device_at(b) == "dev_b"
    os.unlink(a)  # a throwaway demo's file, removed
    location.remember_database(b, "dev_c")
    assert location.device_at(a) is None and location.device_at(b) == "dev_c"
