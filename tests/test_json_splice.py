"""JSON output writes a list column's SQL text unchanged when that is exactly what decoding and
encoding it again would write (fastjson.is_compact_string_array, fastjson.dumps_spliced,
render.results.json_rows), and the rows a Result hands out are decoded whatever path they took."""

import json
import random
import sqlite3

import pytest

from attemptdb.model import fastjson
from attemptdb.query.result import Result, enforce_evidence, is_empty_list, loads_list
from attemptdb.render.results import json_rows

ALPHABET = ['a', 'z', '0', ',', '"', '\\', '[', ']', ' ', ':', '\x00', '\x1f', '\x7f', 'é', '\u2028', '\ud800', '/']


def _reencoded(text: str):
    try:
        return fastjson.dumps(fastjson.loads(text))
    except (ValueError, TypeError):
        return None


def _texts(rng: random.Random, n: int):
    """Random short texts over JSON's punctuation, and the JSON arrays Python and SQLite write."""
    db = sqlite3.connect(":memory:")
    for _ in range(n):
        k = rng.randrange(4)
        if k == 0:  # any text at all
            yield "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(12)))
        elif k == 1:  # bracketed, quote-heavy: where a counting check could be fooled
            yield "[" + "".join(rng.choice(['"', ',', 'a', ' ', '\\', '1']) for _ in range(rng.randrange(10))) + "]"
        else:
            items = ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(6))) for _ in range(rng.randrange(4))]
            if any("\ud800" in s for s in items):
                items = [s.replace("\ud800", "x") for s in items]
            if k == 2:
                yield fastjson.dumps(items)
            else:
                db.execute("CREATE TEMP TABLE IF NOT EXISTS t (v TEXT)")
                db.execute("DELETE FROM t")
                db.executemany("INSERT INTO t VALUES (?)", [(s,) for s in items])
                yield db.execute("SELECT json_group_array(v) FROM t").fetchone()[0]


def test_a_text_called_compact_is_exactly_its_reencoding():
    rng = random.Random(7)
    accepted = 0
    for text in _texts(rng, 40_000):
        if fastjson.is_compact_string_array(text):
            accepted += 1
            assert _reencoded(text) == text, text
            assert all(isinstance(v, str) for v in fastjson.loads(text))
    assert accepted > 5_000


def test_plain_arrays_from_python_and_sqlite_are_compact():
    """Strings without a quote, backslash or unprintable character: the lists SQL builds of ids
    and paths are written as they are."""
    rng = random.Random(3)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (v TEXT)")
    safe = ["a", "Z", "0", ",", " ", "[", "]", ":", "/", "é", "-", "_", "{", "}"]
    for _ in range(3_000):
        items = ["".join(rng.choice(safe) for _ in range(rng.randrange(8))) for _ in range(rng.randrange(5))]
        db.execute("DELETE FROM t")
        db.executemany("INSERT INTO t VALUES (?)", [(s,) for s in items])
        from_sql = db.execute("SELECT json_group_array(v) FROM (SELECT v FROM t ORDER BY rowid)").fetchone()[0]
        assert from_sql == fastjson.dumps(items)
        assert fastjson.is_compact_string_array(from_sql), from_sql


@pytest.mark.parametrize("text,ok", [
    ("[]", True), ('[""]', True), ('["a","b"]', True), ('["a",",","b"]', True), ('["a,b"]', True),
    ('["é","ü/x"]', True),
    ('["a", "b"]', False), ('[ ]', False), ('["a",1]', False), ('[1]', False), ('["a\\"b"]', False),
    ('[","a""]', False), ('["]', False), ('["a""b"]', False), ('["a"],["b"]', False), ("", False), ("[", False),
    ('["a\x00"]', False), ('["\x7f"]', False), ('[["a"]]', False), ('{"a":"b"}', False), ('"a"', False),
])
def test_compact_cases(text, ok):
    assert fastjson.is_compact_string_array(text) is ok
    if ok:
        assert _reencoded(text) == text


def test_spliced_fills_holes_in_order_and_falls_back_on_a_lookalike():
    h = fastjson.hole()
    obj = [{"a": h, "b": 1, "c": h}, {"a": h, "b": "x", "c": h}]
    texts = ['["1"]', "[]", '["2","3"]', '["4"]']
    got = fastjson.dumps_spliced(obj, texts, lambda: "unused")
    assert json.loads(got) == [{"a": ["1"], "b": 1, "c": []}, {"a": ["2", "3"], "b": "x", "c": ["4"]}]
    # a stored value spelled like the hole: holes and texts no longer pair one for one
    obj[1]["b"] = h
    assert fastjson.dumps_spliced(obj, texts, lambda: {"fallback": True}) == '{"fallback":true}'
    # a key spelled like the hole too
    assert fastjson.dumps_spliced({h: h}, ["[]"], lambda: 0) == "0"


COLUMNS = ["work_unit_id", "evidence", "paths", "confidence", "turns", "blob", "uncertainty"]
ENCODED = (1, 2, 4)


def _row(rng: random.Random, i: int):
    def lst():
        k = rng.randrange(6)
        if k == 0:
            return None
        items = [rng.choice(["ev_1", "ev_2", "a/b.py", 'q"uote', "back\\slash", "tab\there", "ü", ","])
                 for _ in range(rng.randrange(4))]
        if k == 1:
            return json.dumps(items)  # spaces after commas: not compact
        if k == 2:
            return rng.choice(["not json", "null", "7", '{"a":1}', "[1,2.5]", " [ ] "])
        return fastjson.dumps(items)
    return (f"wu_{i}", lst(), lst(), rng.choice([0.4, 0.7, None, 1e20]), lst(),
            rng.choice([None, b"\x00\xff", "x"]), {"confidence": 0.4, "reason": "heuristic", "note": None})


def test_json_rows_equal_the_decoded_rows_written_out():
    rng = random.Random(11)
    for trial in range(400):
        rows = [_row(rng, i) for i in range(rng.randrange(5))]
        if trial % 50 == 0 and rows:
            rows[0] = (fastjson.hole(),) + rows[0][1:]  # a hostile id spelled like the hole
        decoded = [tuple(loads_list(v) if i in ENCODED else v for i, v in enumerate(r)) for r in rows]
        want = Result(COLUMNS, decoded)
        lazy = Result(COLUMNS, rows, encoded=ENCODED)
        assert json_rows(lazy) == json_rows(want)
        assert lazy.rows == want.rows  # decoded when read


def test_rows_decode_once_and_a_new_value_is_taken_as_given():
    r = Result(["evidence", "n"], [('["e1","e2"]', 1)], encoded=[0])
    rows, encoded = r.encoded_rows()
    assert rows == [('["e1","e2"]', 1)] and encoded == {0}
    assert r.rows == [(["e1", "e2"], 1)]
    assert r.encoded_rows()[1] == frozenset()
    r.rows = [(["x"], 2)]
    assert r.rows == [(["x"], 2)] and r.encoded_rows() == ([(["x"], 2)], frozenset())


@pytest.mark.parametrize("v,empty", [
    (None, True), ("[]", True), (" [ \n] ", True), ("[\t]", True), ('[""]', False), ('["e"]', False),
    ("null", False), ("x", False), ("[", False), ([], True), (["e"], False), ("", False),
])
def test_is_empty_list_is_loads_list_empty(v, empty):
    assert is_empty_list(v) is empty
    assert is_empty_list(v) == (not loads_list(v))


def test_evidence_rule_reads_encoded_rows_and_keeps_them_encoded():
    unc = {"confidence": 0.4, "reason": "heuristic", "note": None}
    rows = [("a", '["e1"]', unc), ("b", "[]", unc), ("c", None, unc), ("d", " [ ] ", unc),
            ("e", "[]", {"confidence": 0.0, "reason": "insufficient_evidence", "note": None})]
    r = enforce_evidence(Result(["id", "evidence", "uncertainty"], rows, encoded=[1]))
    kept, encoded = r.encoded_rows()
    assert [x[0] for x in kept] == ["a", "e"] and encoded == {1}
    assert any(n.startswith("AQL0601: 3 row(s)") for n in r.notes)
    assert r.rows[0][1] == ["e1"] and r.rows[1][1] == []
