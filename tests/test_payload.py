"""The raw payload stores each string once (attemptdb/model/payload.py): a long value it shares
with content_json is a reference into it; the canonical line, every hash, the export and the
sqlite3 shell's view `event_payloads` all see the payload whole."""

import json
import random
import shutil
import subprocess

import apsw
import pytest

from attemptdb.devtools import synth
from attemptdb.exchange.importers.jsonl import import_file
from attemptdb.integrity.verify import verify
from attemptdb.model import fastjson, payload
from attemptdb.store.database import Store


def _random_value(rng, depth=0):
    pick = rng.random()
    if depth > 2 or pick < 0.4:
        return "".join(rng.choice("ab\"\\/é\n\x01\x02{}:,") for _ in range(rng.randrange(0, 90)))
    if pick < 0.6:
        return rng.randrange(-10**60, 10**60)
    if pick < 0.8:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(0, 4))}


def test_pack_then_expand_gives_the_payload_back_whatever_the_values():
    rng = random.Random(7)
    packed = bytes_path = 0
    for _ in range(3000):
        content = {f"c{i}": _random_value(rng) for i in range(rng.randrange(1, 4))}
        raw = {"hook": "X", **{f"r{i}": _random_value(rng) for i in range(rng.randrange(0, 3))}}
        for k in rng.sample(sorted(content), rng.randrange(0, len(content) + 1)):
            raw[rng.choice([k, "nested"])] = content[k] if rng.random() < 0.7 else {"in": content[k]}
        fields = [rng.choice([None, "", "sess-" + "x" * rng.randrange(0, 40), 'q"\x1f']) for _ in range(3)]
        for f in fields:
            if f is not None and rng.random() < 0.5:
                raw["f" + str(rng.randrange(9))] = f
        cj, values = payload.content_text(content)
        assert cj == fastjson.dumps(content)
        rj = fastjson.dumps(raw)
        stored = payload.pack(rj, cj, values, fields)
        assert payload.expand(stored, cj, fields) == rj
        # verify's bulk pass resolves the UTF-8 bytes as stored while the dictionary is ASCII
        ascii_dict = (cj + "".join(f or "" for f in fields)).isascii()
        got = payload.expand_ascii(stored.encode(), cj.encode(), fields)
        assert got == rj.encode() if ascii_dict or got is not None else got is None
        bytes_path += got is not None and stored != rj
        packed += stored != rj
        assert len(stored) <= len(rj)
    assert packed > 500  # shared values were found and referenced, not merely left alone
    assert 100 < bytes_path < packed  # both paths were taken


def test_a_reference_that_does_not_resolve_is_an_error():
    for bad in ("\x01", "\x01x:3\x02", "\x011:\x02", "\x010:3\x02", "\x011:99\x02"):
        with pytest.raises(ValueError):
            payload.expand('{"a":' + bad + "}", '{"b":"0123456789"}')
    with pytest.raises(ValueError):
        payload.expand("\x011:2\x02", None)
    for bad in ("\x01", "\x01x:3\x02", "\x011:\x02", "\x010:3\x02", "\x011:99\x02", "\x01\u0661:1\x02"):
        with pytest.raises(ValueError):
            payload.expand_ascii(('{"a":' + bad + "}").encode(), b'{"b":"0123456789"}')


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    d = tmp_path_factory.mktemp("payload")
    src, db = str(d / "events.jsonl"), str(d / "attempt.db")
    synth.write_jsonl(src, 1500, 3)
    st = Store.open(db)
    import_file(st, src)
    st.close()
    return src, db


def test_stored_rows_hash_and_read_as_the_imported_payload(history):
    src, db = history
    want = {}
    with open(src, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if "raw" in e:
                want["ev_" + e["event_id"]] = fastjson.dumps(e["raw"])
    st = Store.open(db, readonly=True)
    try:
        assert st.conn.execute("PRAGMA page_size").fetchone()[0] == 16384
        rows = st.conn.execute("SELECT event_id, raw_json, content_json, provider_session_id, tool_call_id, "
                               "provider_event_name FROM events WHERE raw_json IS NOT NULL").fetchall()
        assert len(rows) == len(want)
        stored = sum(len(r[1]) for r in rows)
        assert stored < 0.3 * sum(len(v) for v in want.values())  # most of the payload was shared
        assert all(payload.expand(r[1], r[2], r[3:]) == want[r[0]] for r in rows)
        view = dict(st.conn.execute("SELECT event_id, raw_json FROM event_payloads"))
        assert view == want
        assert verify(st).ok
    finally:
        st.close()


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")
def test_the_sqlite3_shell_reads_the_payload_whole_through_the_view(history):
    src, db = history
    out = subprocess.run(["sqlite3", "-readonly", "-json", db,
                          "SELECT event_id, raw_json FROM event_payloads ORDER BY seq"],
                         capture_output=True, check=True).stdout.decode("utf-8")
    rows = json.loads(out)
    want = {}
    with open(src, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if "raw" in e:
                want["ev_" + e["event_id"]] = json.loads(fastjson.dumps(e["raw"]))
    assert {r["event_id"]: json.loads(r["raw_json"]) for r in rows} == want


def test_verify_finds_a_reference_moved_to_other_content(history, tmp_path):
    _, db = history
    copy = str(tmp_path / "copy.db")
    src = apsw.Connection(db)
    src.execute(f"VACUUM INTO '{copy}'")
    src.close()
    c = apsw.Connection(copy)
    seq, raw = c.execute("SELECT seq, raw_json FROM events WHERE instr(raw_json, char(1)) > 0 LIMIT 1").fetchone()
    start = raw.index("\x01") + 1
    moved = raw[:start] + str(int(raw[start:raw.index(":", start)]) + 1) + raw[raw.index(":", start):]
    for (name,) in c.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'events' "
                             "AND sql LIKE '%BEFORE UPDATE%'").fetchall():
        c.execute(f"DROP TRIGGER {name}")
    c.execute("UPDATE events SET raw_json = ? WHERE seq = ?", (moved, seq))
    c.close()
    st = Store.open(copy, readonly=True)
    try:
        rep = verify(st)
    finally:
        st.close()
    assert not rep.ok


def test_verifys_bulk_pass_reads_stored_payloads_without_falling_back(history, tmp_path):
    """integrity/bulkcheck hashes a row's large texts as stored: a payload with references is
    expanded there too, so a history of them verifies on the fast pass, and a moved reference
    still sends the range to the row-by-row check, which names it."""
    from attemptdb.integrity import bulkcheck, chain
    _, db = history
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        n = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM events WHERE instr(raw_json, char(1)) > 0").fetchone()[0] > n / 2
        got = bulkcheck._fast(conn, 1, n + 1)
        assert got is not None and got[0] == n
    finally:
        conn.close()
    copy = str(tmp_path / "copy.db")
    src = apsw.Connection(db)
    src.execute(f"VACUUM INTO '{copy}'")
    src.close()
    c = apsw.Connection(copy)
    for (name,) in c.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'events' "
                             "AND sql LIKE '%BEFORE UPDATE%'").fetchall():
        c.execute(f"DROP TRIGGER {name}")
    seq, raw = c.execute("SELECT seq, raw_json FROM events WHERE instr(raw_json, char(1)) > 0 "
                         "ORDER BY seq DESC LIMIT 1").fetchone()
    c.execute("UPDATE events SET raw_json = ? WHERE seq = ?", (raw.replace("\x01", "\x012", 1), seq))
    assert bulkcheck._fast(c, 1, n + 1) is None
    count, problem = chain.check_rows(c, 1, n + 1)
    c.close()
    assert problem is not None and problem["seq"] == seq and problem["kind"] == "event_hash"
