"""`attempt verify` and stored attrs outside the bounds every arrival path keeps now
(spec/canonical-event.md "Bounds on attrs"): events stored before those bounds (or by a sync pull
that did not check them) are intact facts, so verify still says `ok:` and exits 0, but warns
(`warning[attrs_bounds]`, JSON `warnings`) how many such events there are, naming the first few,
because a bundle, a sync segment or `import jsonl` of them would be refused. The check is sound
(a cheap test of the stored bytes picks the rows to parse: every row breaking a bound is one)
and the same on every path verify takes (row by row, the bulk pass, worker processes)."""

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_

from attemptdb.cli.main import run
from attemptdb.devtools import synth
from attemptdb.integrity import attrs_bounds, bulkcheck
from attemptdb.integrity import verify as verify_mod
from attemptdb.model import event, fastjson
from attemptdb.store.database import Store

SECRET = "zq9VALUEzq9"  # a marker no message may echo

# each breaks one bound (what an older AttemptDB stored: a sync pull stored any attrs)
BAD = [
    ("string", {"cwd": "/w/" + SECRET + "a" * 300}, "$.attrs.cwd"),
    ("key", {"x_zz_" + "k" * 70: 1}, "$.attrs"),
    ("integer", {"exit_code": 2**64}, "$.attrs.exit_code"),
    ("nesting", {"path_extensions": [[SECRET]]}, "$.attrs.path_extensions"),
    ("whole", {f"x_fill_k{i}": "v" * 200 for i in range(90)}, "$.attrs"),
    ("member_key", {"provider": {"k" * 65: 1}}, "$.attrs.provider"),
    ("negative", {"tests_passed": -2**63 - 1}, "$.attrs.tests_passed"),
]
# each exactly at a bound, or looking like a break without being one: no warning
AT_BOUNDS = [
    {"cwd": "~/" + "é" * 127},  # 256 bytes
    {"x_zz_" + "k" * 59: 2**63 - 1, "exit_code": -2**63},  # a 64-byte key, the int64 range
    {"path_extensions": ["py", "md"], "provider": {"status": "ok", "n": 2}},  # one level of nesting
    {"reason": 'say "[x]" {y} \\ 1234567890123456789012'},  # brackets, escapes, digits in a string
    {"duration_ms": 1.5e300},  # a float is no integer
]


def _build(db: str, good: int = 300) -> list:
    """`good` synthetic events with BAD and AT_BOUNDS events among them, appended by the real
    store (which never checked attrs bounds). Returns the BAD events' ids in seq order."""
    evs = list(synth.generate(good, seed=4))
    extra, bad_ids = [], []
    for i, (name, attrs, _) in enumerate(BAD + [(None, a, None) for a in AT_BOUNDS]):
        e = copy.deepcopy(evs[(i * 37) % good])
        e["event_id"] = e["event_id"][:-6] + f"{0xbad000 + i:06x}"
        e["attrs"] = dict(attrs)
        extra.append(e)
        if name:
            bad_ids.append("ev_" + e["event_id"])
    st = Store.open(db)
    try:
        # spread through the file: some in the first rows, the rest later
        st.append(extra[:2] + evs[:good // 2] + extra[2:6] + evs[good // 2:] + extra[6:])
    finally:
        st.close()
    return bad_ids


def _verify(db, capsys, *extra):
    capsys.readouterr()
    code = run(["verify", "--db", db, *extra])
    out, err = capsys.readouterr()
    return code, out, err


PATHS = {
    "row_by_row": {"MIN_ROWS": 10**9},  # chain.check_rows + attrs_bounds.scan
    "bulk": {"MIN_ROWS": 0},  # bulkcheck's pass, in this process
    "workers": {"MIN_ROWS": 0, "PARALLEL_MIN": 100},  # bulkcheck's pass in worker processes
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_verify_warns_of_stored_attrs_outside_the_bounds_and_still_says_ok(db, capsys, monkeypatch, path):
    bad_ids = _build(db)
    for k, v in PATHS[path].items():
        monkeypatch.setattr(bulkcheck if k == "MIN_ROWS" else verify_mod, k, v)
    if path == "workers":
        monkeypatch.setattr(os, "cpu_count", lambda: 2)
    total = 300 + len(BAD) + len(AT_BOUNDS)
    code, out, err = _verify(db, capsys)
    assert code == 0 and out == f"ok: {total} events, 0 checkpoints\n", out + err  # the chain is intact
    warning = [x for x in err.splitlines() if x.startswith("warning[")]
    assert len(warning) == 1, err  # was: no warning
    w = warning[0]
    assert w.startswith(f"warning[attrs_bounds]: {len(BAD)} stored events have attrs outside the bounds"), w
    assert ", ".join(bad_ids[:5]) + ", …" in w and "would be refused if re-imported" in w
    assert "the first, seq=" in w and "at $.attrs.cwd: a string longer than 256 bytes" in w
    assert SECRET not in out + err

    code, out, _ = _verify(db, capsys, "--json")
    rep = json.loads(out)
    assert code == 0 and rep["ok"] and rep["problems"] == []
    [w] = rep["warnings"]
    assert w["kind"] == "attrs_bounds" and w["count"] == len(BAD) and w["event_ids"] == bad_ids[:5]
    assert w["first"]["event_id"] == bad_ids[0] and w["first"]["path"] == "$.attrs.cwd"


def test_one_event_outside_the_bounds_is_named_in_the_singular(db, capsys):
    st = Store.open(db)
    try:
        e = next(iter(synth.generate(1, seed=2)))
        e["attrs"] = {"exit_code": 2**64}
        st.append([e])
    finally:
        st.close()
    code, out, err = _verify(db, capsys)
    assert code == 0 and out == "ok: 1 event, 0 checkpoints\n"
    assert "warning[attrs_bounds]: 1 stored event has attrs outside the bounds" in err
    assert "ev_" + e["event_id"] + "; the first, seq=1, at $.attrs.exit_code: an integer outside signed 64 bits" in err


def test_a_file_within_the_bounds_has_no_warning(db, capsys, monkeypatch):
    st = Store.open(db)
    try:
        st.append(list(synth.generate(200, seed=9)))
    finally:
        st.close()
    for min_rows in (0, 10**9):
        monkeypatch.setattr(bulkcheck, "MIN_ROWS", min_rows)
        code, out, err = _verify(db, capsys, "--json")
        assert code == 0 and json.loads(out)["warnings"] == [] and "warning" not in err


def test_each_bound_is_named_with_its_path_never_its_value():
    eid = "ev_0190c0de-0000-7000-8000-000000000007"
    for name, attrs, where in BAD:
        text = fastjson.dumps(attrs).encode()
        assert attrs_bounds.suspect(text), name
        found = attrs_bounds.Findings()
        found.row(7, eid, text)
        assert found.count == 1 and found.first[0][:3] == (7, eid, where), (name, found.first)
        assert SECRET not in repr(found.first)
    found = attrs_bounds.Findings()  # an event id edited by hand is not shown: the row's seq is
    found.row(8, "ev_" + SECRET, fastjson.dumps(BAD[0][1]).encode())
    assert found.first[0][:2] == (8, "seq=8")
    for attrs in AT_BOUNDS:
        found = attrs_bounds.Findings()
        found.row(1, "ev_y", fastjson.dumps(attrs).encode())
        assert found.count == 0, attrs


_KEYS = st_.sampled_from(["cwd", "exit_code", "provider", "path_extensions", "x_zz_" + "k" * 59, "x_zz_" + "k" * 60,
                          "k" * 65, "a"])
_TEXT = st_.text(alphabet=st_.sampled_from('a"\\[]{}:,é😀\n0123456789 '), max_size=300)
_INTS = st_.sampled_from([0, -1, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 10**30, -10**19])
_SCALAR = st_.one_of(_TEXT, _INTS, st_.booleans(), st_.none(), st_.floats(allow_nan=False, allow_infinity=False))
_VALUE = st_.recursive(_SCALAR, lambda inner: st_.one_of(st_.lists(inner, max_size=4),
                                                         st_.dictionaries(_TEXT, inner, max_size=4)), max_leaves=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st_.dictionaries(_KEYS, _VALUE, min_size=1, max_size=6))
def test_every_attrs_text_breaking_a_bound_is_suspect(attrs):
    """The cheap test is sound: whatever event.attrs_problem refuses, it passes on to it."""
    text = fastjson.dumps(attrs).encode("utf-8", "surrogatepass")
    if event.attrs_problem(attrs) is not None:
        assert attrs_bounds.suspect(text)
        found = attrs_bounds.Findings()
        found.row(1, "ev_z", text)
        assert found.count == 1
