"""`attempt recover` (spec/recover.md): the recovered file's own source_seq continues past
every number the lost rows may have had (a checkpoint signed them, a dataset export or a sync
push published them), and a damaged file header does not stop recovery."""

import json
import os
import shutil

import apsw
import pytest
from conftest import run_attempt

from attemptdb.cli.main import run as cli


def attempt(capsys, *args):
    rc = cli(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def capture(db, i):
    payload = json.dumps({"session_id": "recover-seq", "cwd": "/tmp", "hook_event_name": "PostToolUse",
                          "tool_name": "Bash", "tool_use_id": f"toolu_seq_{i}", "tool_input": {"command": "make"},
                          "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}).encode()
    p = run_attempt(["capture", "claude-code", "--db", db], input=payload)
    assert p.returncode == 0 and p.stdout == b"", p


def rows(db, sql):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def fold(db):
    """Everything into the main file (no -wal left beside it)."""
    conn = apsw.Connection(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()


def filled(capsys, db, n):
    """A new file with `n` captures, all in the main file."""
    assert attempt(capsys, "init", "--db", db)[0] == 0
    for i in range(n):
        capture(db, i)
    fold(db)


def test_new_events_never_take_the_source_seq_of_a_lost_row(db, capsys, tmp_path):
    filled(capsys, db, 5)
    old = str(tmp_path / "old.db")
    shutil.copyfile(db, old)
    for i in range(5, 9):  # signed, exported and pushed, then lost (the file rolled back)
        capture(db, i)
    assert attempt(capsys, "checkpoint", "--db", db)[0] == 0
    ds, folder = str(tmp_path / "ds"), str(tmp_path / "sync")
    os.mkdir(folder)
    assert attempt(capsys, "export", "--dataset", ds, "--db", db)[0] == 0
    rc, out, err = attempt(capsys, "sync", folder, "--push-only", "--db", db)
    assert rc == 0, (out, err)
    (used,) = rows(db, "SELECT max(source_seq) FROM events")[0]
    (top,) = rows(db, "SELECT max(seq) FROM events")[0]
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    shutil.copyfile(old, db)
    new = str(tmp_path / "recovered.db")
    rc, text, err = attempt(capsys, "recover", "--db", db, "--out", new, "--json")
    rep = json.loads(text)
    assert rc == 0 and rep["lost"] and rep["lost"][-1]["to"] == top, rep
    os.rename(db, str(tmp_path / "damaged.db"))
    os.rename(new, db)
    capture(db, 100)
    (src,) = rows(db, "SELECT source_seq FROM events WHERE tool_call_id = 'toolu_seq_100'")[0]
    assert src > used
    rc, out, err = attempt(capsys, "export", "--dataset", ds, "--db", db)
    assert rc == 0 and f"through source_seq {src}" in " ".join(out.split()), (out, err)
    rc, out, err = attempt(capsys, "sync", folder, "--push-only", "--db", db)
    assert rc == 0, (out, err)
    assert attempt(capsys, "verify", "--db", db)[0] == 0
    assert rep["own_source_seq_floor"] >= used, rep
    # status counts the rows held, not the last sequence number (the lost rows' numbers stay unused)
    (held, last), = rows(db, "SELECT count(*), max(seq) FROM events")
    rc, out, err = attempt(capsys, "status", "--db", db, "--json")
    assert rc == 0 and held < last and json.loads(out)["events"] == held, (held, last, out)


@pytest.mark.parametrize("damage", ["magic", "page_size", "page_1"])
def test_a_damaged_file_header_costs_no_row(db, capsys, tmp_path, damage):
    filled(capsys, db, 6)
    everything = rows(db, "SELECT seq, event_hash FROM events ORDER BY seq")
    (size,) = rows(db, "PRAGMA page_size")[0]
    with open(db, "r+b") as f:
        if damage == "magic":
            f.write(b"X")
        elif damage == "page_size":
            f.seek(16)
            f.write(b"\0\0")
        else:
            f.write(b"\0" * size)
    new = str(tmp_path / "recovered.db")
    rc, text, err = attempt(capsys, "recover", "--db", db, "--out", new, "--json")
    assert rc == 0, (text, err)
    rep = json.loads(text)
    assert rep["verify_ok"] and rep["lost"] == [], rep
    assert rows(new, "SELECT seq, event_hash FROM events ORDER BY seq") == everything
    rc, out, err = attempt(capsys, "verify", "--db", new)
    assert rc == 0, (out, err)


def test_an_older_file_with_4096_byte_pages_and_a_damaged_header(db, capsys, tmp_path):
    filled(capsys, db, 6)
    small = str(tmp_path / "small.db")
    conn = apsw.Connection(db)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("VACUUM INTO ?", (small,))
    conn.close()
    assert rows(small, "PRAGMA page_size") == [(4096,)]
    everything = rows(small, "SELECT seq, event_hash FROM events ORDER BY seq")
    with open(small, "r+b") as f:
        f.write(b"X")
    new = str(tmp_path / "recovered.db")
    rc, text, err = attempt(capsys, "recover", "--db", small, "--out", new, "--json")
    assert rc == 0 and json.loads(text)["verify_ok"], (text, err)
    assert rows(new, "SELECT seq, event_hash FROM events ORDER BY seq") == everything
