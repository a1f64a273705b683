"""`attempt recover` (spec/recover.md): from a damaged file, a new file holding every event
that still verifies at its own place in the chain, its signed checkpoints still holding, the
lost rows named by seq range; the damaged file never changed."""

import json
import os
import random

import apsw
from test_faults_defects import (
    attempt,
    capture,
    digest,
    events_page,
    history,  # noqa: F401  (the fixture)
    malform,
    shell,
)

from attemptdb.devtools.faultbench import damaged
from attemptdb.integrity import recovery


def seqs(db):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [r[0] for r in conn.execute("SELECT seq FROM events ORDER BY seq")]
    finally:
        conn.close()


def recover(capsys, db, out):
    rc, text, err = attempt(capsys, "recover", "--db", db, "--out", out, "--json")
    assert "error[internal]" not in err, err
    return rc, json.loads(text) if text.strip() else None, err


def sound(capsys, db):
    """integrity_check, verify and a rebuild comparison all pass."""
    conn = apsw.Connection(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    rc, out, err = attempt(capsys, "verify", "--db", db)
    assert rc == 0, out
    rc, out, err = attempt(capsys, "reproject", "--check", "--db", db)
    assert rc == 0, out
    return out


def test_flipped_bytes_in_the_middle_of_the_events_table(history, capsys, tmp_path):
    """The acceptance case: the new file verifies, holds every event whose page was readable,
    and the report names the lost range, which the signed checkpoint still spans."""
    page, size, on_page = events_page(history)
    everything = seqs(history)
    damaged.flip(history, random.Random(3), 3, (page - 1) * size + 200, page * size)
    with open(history, "r+b") as f:  # and its cell pointers: the page cannot be parsed at all
        f.seek((page - 1) * size + 8)
        f.write(b"\xff" * 6)
    before = digest(history)
    out = str(tmp_path / "recovered.db")
    rc, rep, err = recover(capsys, history, out)
    assert rc == 0 and rep["verify_ok"], rep
    assert digest(history) == before  # the damaged file is only read
    kept = seqs(out)
    lost = sorted(set(everything) - set(kept))
    assert lost and set(lost) <= set(on_page), (lost, on_page)  # only rows of the damaged page
    assert set(kept) == set(everything) - set(lost)
    named = [s for r in rep["lost"] for s in range(r["from"], r["to"] + 1)]
    assert named == lost
    assert rep["signed_checkpoint"]["matches"] is True and rep["signed_checkpoint"]["rows_lost_before_it"] == len(lost)
    sound(capsys, out)
    rc, out_text, err = attempt(capsys, "verify", "--db", out)
    flat = " ".join(err.split())  # (a note wrapped to the terminal)
    assert "rows " in flat and "were lost to damage" in flat


def test_rows_whose_interior_page_is_lost_are_found_on_their_pages(history, capsys, tmp_path):
    conn = apsw.Connection(history, flags=apsw.SQLITE_OPEN_READONLY)
    interior = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'events' "
                                           "AND pagetype = 'internal' ORDER BY pageno")]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    root_child = interior[-1]
    with open(history, "r+b") as f:
        f.seek((root_child - 1) * size)
        f.write(b"\0" * size)
    out = str(tmp_path / "recovered.db")
    rc, rep, err = recover(capsys, history, out)
    assert rc == 0 and rep["read_from_pages"] > 0 and rep["lost_rows"] == 0, rep
    assert seqs(out) == list(range(1, 601))
    sound(capsys, out)


def lose_signed_tail(db, tmp_path, capsys, n=3):
    """Captures the device signed, only in the -wal, and the -wal is lost."""
    import shutil
    holder = apsw.Connection(db)
    holder.execute("SELECT 1").fetchall()
    for i in range(n):
        capture(db, 200 + i)
    assert attempt(capsys, "checkpoint", "--db", db)[0] == 0
    shutil.copyfile(db, str(tmp_path / "main-only.db"))
    holder.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    shutil.move(str(tmp_path / "main-only.db"), db)


def test_a_lost_signed_tail_is_declared_and_the_chain_goes_on_after_it(history, capsys, tmp_path):
    """Rows the device signed are gone (a -wal lost): the recovered file ends before them, a
    signed note declares them, and new rows take the seq after them, so the signature beside
    the key is never replaced by a shorter chain."""
    lose_signed_tail(history, tmp_path, capsys)
    out = str(tmp_path / "recovered.db")
    rc, rep, err = recover(capsys, history, out)
    assert rc == 0, rep
    assert rep["lost"] == [{"from": 601, "to": 603, "why": "its row could not be read"}]
    assert rep["signed_checkpoint"] == {"size": 603, "matches": False, "stops_matching_at": 601,
                                        "rows_lost_before_it": 3}
    sound(capsys, out)
    capture(out, 1)
    assert seqs(out)[-2:] == [600, 604]
    assert attempt(capsys, "checkpoint", "--db", out)[0] == 0
    rc, text, err = attempt(capsys, "verify", "--db", out)
    assert rc == 0 and text.startswith("ok: 601 events, 2 checkpoints"), text
    key_dir = os.environ.get("ATTEMPTDB_KEY_DIR") or os.path.join(os.environ["XDG_DATA_HOME"], "attemptdb", "keys")
    note = [f for f in os.listdir(key_dir) if f.endswith(".checkpoint")]
    assert open(os.path.join(key_dir, note[0])).read().split("\n")[1] == "604"
    # a recovered log has gaps in seq: no Merkle tree is kept for it, and prove says so
    from attemptdb.integrity import checkpoint
    conn = apsw.Connection(out)
    notes = [checkpoint.parse(n) for (n,) in conn.execute("SELECT note FROM checkpoints ORDER BY size")]
    event_id = conn.execute("SELECT event_id FROM events ORDER BY seq LIMIT 1").fetchone()[0]
    conn.close()
    assert notes[-1].size == 604 and notes[-1].merkle is None
    rc, text, err = attempt(capsys, "prove", event_id, "--db", out)
    assert rc == 1 and err.startswith("error[prove.recovered_file]"), err


def test_rows_deleted_but_still_on_free_pages_are_found_when_they_verify(history, capsys, tmp_path):
    """Like SQLite's own recovery: a row whose cells survive on a page, verified by its hash
    and its link, is kept even when the b-tree no longer reaches it."""
    # enough rows that whole pages go to the freelist (a 16 KiB page holds several rows)
    shell(history, "DROP TRIGGER events_no_delete; DELETE FROM events WHERE seq > 450")
    out = str(tmp_path / "recovered.db")
    rc, rep, err = recover(capsys, history, out)
    assert rc == 0 and rep["read_from_pages"] > 0, rep
    kept = seqs(out)
    assert kept[:450] == list(range(1, 451)) and set(kept) <= set(range(1, 601)) and len(kept) > 450
    assert [s for r in rep["lost"] for s in range(r["from"], r["to"] + 1)] == sorted(set(range(1, 601)) - set(kept))
    sound(capsys, out)


def test_gaps_are_honoured_only_as_the_signed_note_declares_them(history, capsys, tmp_path):
    malform(history)
    out = str(tmp_path / "recovered.db")
    rc, rep, err = recover(capsys, history, out)
    assert rc == 0 and rep["recovery_note_signed"]
    lo = rep["lost"][0]["from"]
    conn = apsw.Connection(out)
    note = conn.execute("SELECT value FROM meta WHERE key = 'recovery'").fetchone()[0]
    # someone without the key widens the declared gap to hide a row they deleted
    forged = note.replace(f"lost {lo} ", f"lost {lo - 1} ", 1)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'recovery'", (forged,))
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE seq = ?", (lo - 1,))
    conn.close()
    rc, text, err = attempt(capsys, "verify", "--db", out)
    assert rc == 1 and "recovery note" in text and "sequence" not in err
    assert recovery.parse(forged).covers(lo - 1)


def test_recover_never_replaces_a_file_nor_writes_the_damaged_one(history, capsys, tmp_path):
    malform(history)
    before = digest(history)
    out = tmp_path / "exists.db"
    out.write_text("mine")
    rc, text, err = attempt(capsys, "recover", "--db", history, "--out", str(out))
    assert rc == 2 and err.startswith("error[recover.exists]") and out.read_text() == "mine"
    rc, text, err = attempt(capsys, "recover", "--db", history, "--out", history)
    assert rc == 2 and err.startswith("error[recover.exists]")
    assert digest(history) == before


def test_a_sound_file_is_recovered_whole(history, capsys, tmp_path):
    out = str(tmp_path / "copy.db")
    rc, rep, err = recover(capsys, history, out)
    assert rc == 0 and rep["lost"] == [] and rep["kept"] == 600 and rep["signed_checkpoint"]["matches"]
    conn = apsw.Connection(out, flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("SELECT count(*) FROM meta WHERE key IN ('recovery', 'seq_floor')").fetchone()[0] == 0
    conn.close()
    sound(capsys, out)
