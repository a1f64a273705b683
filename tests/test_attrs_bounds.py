"""`attrs` are short, content-free facts, and bounded (spec/canonical-event.md, "Bounds on attrs"):
every string at most 256 UTF-8 bytes (the original's rule), every key at most 64 bytes, integers
within signed 64 bits, no container inside a container, and the whole object at most 16 KiB as
compact JSON. Each way an event arrives keeps the bound: a hook capture drops what breaks it
(counted in `attrs.redactions`, the capture never fails); `import jsonl`, a bundle and a sync
pull refuse the line with a code, never rewriting an imported event."""

import json
import os
import uuid

import pytest
from conftest import run_attempt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sync_world import Device, events_by_device, forge_segment, teammate_key
from test_hostile_bundles_datasets import resigned

from attemptdb.devtools import synth
from attemptdb.errors import AttemptError
from attemptdb.ingest import privacy
from attemptdb.integrity import chain
from attemptdb.integrity import segments as segment
from attemptdb.model import event, fastjson
from attemptdb.store.database import Store

MAX_BYTES = 16 << 10
SECRET = "zq9CONTENTzq9"  # a marker no message may echo


def _attrs_bytes(attrs) -> int:
    return len(json.dumps(attrs, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _filler(n_bytes: int, key_prefix: str = "x_fill_k") -> dict:
    """Content-free x_ entries whose compact JSON is exactly `n_bytes` (n_bytes >= 200)."""
    out, i, last = {}, 0, None
    while _attrs_bytes({**out, f"{key_prefix}{i}": "v" * 200}) <= n_bytes:
        last = f"{key_prefix}{i}"
        out[last] = "v" * 200
        i += 1
    rest = n_bytes - _attrs_bytes(out)
    key = f"{key_prefix}{i}"
    if rest >= len(key) + 6:  # ,"key":"value"
        out[key] = "v" * (rest - len(key) - 6)
    else:
        out[last] += "v" * rest
    assert _attrs_bytes(out) == n_bytes
    return out


# --- the sanitiser (every capture) ----------------------------------------------------------------

def test_the_sanitiser_bounds_keys_integers_and_the_whole_object():
    key64, key65 = "x_p_" + "k" * 60, "x_p_" + "k" * 61
    attrs = {"hook_event_name": "PostToolUse", key64: 1, key65: 2,
             "exit_code": 2**63 - 1, "duration_ms": 2**63, "tests_passed": -2**63 - 1,
             "path_extensions": ["py", 2**64], "provider": {"loop_count": 2**70, "status": "ok"}}
    out, drops = privacy.sanitise_attrs(attrs)
    assert out == {"hook_event_name": "PostToolUse", key64: 1, "exit_code": 2**63 - 1,
                   "provider": {"status": "ok"}, "redactions": 5}
    assert drops == 5


def test_the_sanitiser_drops_the_largest_entries_until_the_object_fits_and_counts_them():
    big = _filler(MAX_BYTES + 3000)
    attrs = {"hook_event_name": "PostToolUse", "cwd": "~/proj", **big,
             "path_extensions": [f"e{i}" for i in range(3000)]}
    out, drops = privacy.sanitise_attrs(attrs)
    assert _attrs_bytes(out) <= MAX_BYTES
    assert "path_extensions" not in out  # the largest entry goes first
    assert out["hook_event_name"] == "PostToolUse" and out["cwd"] == "~/proj"
    assert drops >= 2 and out["redactions"] == drops
    assert list(out)[:2] == ["hook_event_name", "cwd"]  # order kept
    again, more = privacy.sanitise_attrs(out)
    assert again == out and more == 0  # idempotent
    # exactly at the bound nothing is dropped
    exact = _filler(MAX_BYTES)
    assert privacy.sanitise_attrs(exact) == (exact, 0)
    over = _filler(MAX_BYTES + 1)
    out, drops = privacy.sanitise_attrs(over)
    assert drops >= 1 and _attrs_bytes(out) <= MAX_BYTES


_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=300), st.text(alphabet="é\u001f😀", min_size=40, max_size=90),
              st.text(alphabet="abc", min_size=200, max_size=257)),
    lambda inner: st.one_of(st.lists(inner, max_size=40),
                            st.lists(st.text(alphabet="xyz", min_size=100, max_size=256), max_size=80),
                            st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,70}", fullmatch=True), inner, max_size=40)),
    max_leaves=60)
_keys = st.one_of(st.sampled_from(sorted(privacy.ALLOWED_ATTR_KEYS)),
                  st.from_regex(r"x_[a-z]{1,5}_[a-z_]{1,70}", fullmatch=True))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.builds(lambda bulk, attrs: {**bulk, **attrs},  # near the 16 KiB bound about half the time
                 st.builds(lambda n, size: {f"x_bulk_k{i}": "b" * (size - i % 7) for i in range(n)},
                           st.integers(40, 80), st.integers(150, 256)),
                 st.dictionaries(_keys, _values, max_size=30)))
def test_what_the_sanitiser_keeps_always_passes_the_import_bounds_and_is_kept_again(attrs):
    """A captured event is always importable: the sanitiser's output is within every bound
    `parse_line` checks, and a second pass keeps it whole."""
    out, drops = privacy.sanitise_attrs(attrs)
    assert event.attrs_problem(out) is None, out
    assert _attrs_bytes(out) <= MAX_BYTES
    assert privacy.sanitise_attrs(out) == (out, 0)


# --- capture ------------------------------------------------------------------------------------

def test_a_capture_whose_attrs_would_be_huge_drops_the_over_long_value_and_still_stores_the_event(tmp_path, home):
    """A Codex apply_patch touching 20,000 files of distinct extensions: `path_extensions`
    alone was 169 KB of attrs (a full 16 MiB payload made megabytes)."""
    db = str(tmp_path / "a.db")
    files = "".join(f"*** Add File: src/f{i}.e{i}\n+x\n" for i in range(20000))
    payload = {"hook_event_name": "PostToolUse", "session_id": "sess", "turn_id": "t", "cwd": str(tmp_path),
               "tool_name": "apply_patch", "tool_use_id": "c1",
               "tool_input": {"patch": "*** Begin Patch\n" + files + "*** End Patch"},
               "tool_response": {"output": "ok"}}
    r = run_attempt(["capture", "codex", "--db", db], input=json.dumps(payload).encode())
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    st = Store.open(db, readonly=True)
    try:
        rows = st.conn.execute("SELECT attrs_json FROM events").fetchall()
    finally:
        st.close()
    assert len(rows) == 1
    attrs = json.loads(rows[0][0])
    assert len(rows[0][0].encode()) <= MAX_BYTES
    assert "path_extensions" not in attrs and attrs["redactions"] >= 1
    assert attrs["file_count"] == 20000 and attrs["hook_event_name"] == "PostToolUse"


# --- import jsonl ---------------------------------------------------------------------------------

def _line(attrs_update: dict, **top) -> str:
    env = next(synth.generate(1, seed=7))
    env = dict(env, attrs=dict(env.get("attrs") or {}, **attrs_update), **top)
    return event.line(event.canonical(env))


OVER = [  # (attrs that break a bound, the JSON path the refusal names)
    ({"cwd": "~/" + SECRET + "a" * 242}, "$.attrs.cwd"),  # 256 + 1 bytes
    ({"cwd": "~/" + SECRET + "é" * 121}, "$.attrs.cwd"),  # 257 UTF-8 bytes, 136 characters
    ({"cwd": "~/" + SECRET + "a" * (10 << 20)}, "$.attrs.cwd"),
    ({"path_extensions": ["py", SECRET + "x" * 250]}, "$.attrs.path_extensions"),
    ({"provider": {"status": SECRET + "x" * 250}}, "$.attrs.provider"),
    ({"provider": {"k" * 65: 1}}, "$.attrs.provider"),
    ({"x_zz_" + "k" * 60: 1}, "$.attrs"),
    ({"exit_code": 2**63}, "$.attrs.exit_code"),
    ({"path_extensions": [-2**63 - 1]}, "$.attrs.path_extensions"),
    ({"path_extensions": [[SECRET]]}, "$.attrs.path_extensions"),
    ({"provider": {"k": {"deep": [SECRET]}}}, "$.attrs.provider"),
    ({"x_zz_nested": [[[[[[1]]]]]]}, "$.attrs.x_zz_nested"),
    ({"path_extensions": [SECRET] * 5000}, "$.attrs"),
    ({"provider": {f"k{i}": i for i in range(5000)}}, "$.attrs"),
    (_filler(MAX_BYTES + 1), "$.attrs"),
]


@pytest.mark.parametrize("attrs,where", OVER, ids=[f"{w}-{i}" for i, (_, w) in enumerate(OVER)])
def test_import_jsonl_refuses_a_line_whose_attrs_break_a_bound_with_a_code(tmp_path, home, attrs, where):
    db = str(tmp_path / "a.db")
    good = [event.line(e) for e in synth.generate(3, seed=3)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([good[0], _line(attrs), good[1]]) + "\n", encoding="utf-8")
    r = run_attempt(["import", "jsonl", str(src), "--db", db])
    err = r.stderr.decode()
    assert r.returncode == 2, (r.stdout, err)
    assert err.startswith("error[import.bad_line]: line 2: " + where + ":"), err
    assert SECRET not in err and "Traceback" not in err
    st = Store.open(db, readonly=True)
    try:
        assert st.count() == 0  # the batch holding the line: nothing of it
    finally:
        st.close()
    with pytest.raises(AttemptError) as e:
        event.parse_line(_line(attrs).encode(), 9)
    assert e.value.code == "import.bad_line" and e.value.message.startswith(f"line 9: {where}:")


def test_import_jsonl_keeps_attrs_exactly_at_the_bounds_byte_for_byte_and_refuses_one_more(tmp_path, home):
    at = {"cwd": "~/" + "é" * 127, "x_zz_key_" + "k" * 55: 2**63 - 1, "exit_code": -2**63}
    base = json.loads(_line(at))["attrs"]
    at.update(_filler(MAX_BYTES - _attrs_bytes(base) + 1))  # {base} + {filler} = {base,filler}
    lines = [_line(at, event_id=str(uuid.UUID(int=1, version=4)))]
    env = json.loads(lines[0])
    assert len(env["attrs"]["cwd"].encode()) == 256 and _attrs_bytes(env["attrs"]) == MAX_BYTES
    db = str(tmp_path / "a.db")
    src = tmp_path / "in.jsonl"
    src.write_text(lines[0] + "\n", encoding="utf-8")
    r = run_attempt(["import", "jsonl", str(src), "--db", db, "--json"])
    assert r.returncode == 0 and json.loads(r.stdout)["accepted"] == 1, r.stderr
    st = Store.open(db, readonly=True)
    try:
        stored = st.conn.execute("SELECT attrs_json FROM events").fetchone()[0]
    finally:
        st.close()
    assert stored == fastjson.dumps(env["attrs"])  # not rewritten
    env["attrs"]["cwd"] += "a"
    with pytest.raises(AttemptError) as e:
        event.parse_line(event.line(env).encode(), 1)
    assert e.value.code == "import.bad_line"


# --- sync pull --------------------------------------------------------------------------------------

FORGED = "dev_00000000-0000-4000-8000-000000000001"


def test_a_sync_pull_refuses_a_segment_line_whose_attrs_break_a_bound(tmp_path, monkeypatch, capsys):
    folder = str(tmp_path / "shared")
    os.makedirs(folder)
    evs = events_by_device()
    lap, ci = Device(str(tmp_path), "laptop"), Device(str(tmp_path), "ci")
    for d, name in ((lap, "laptop"), (ci, "ci")):
        assert d.cli(monkeypatch, capsys, "init")[0] == 0
        d.capture(evs[name])
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    ddir = os.path.join(folder, lap.device_id())
    tmpl = open(os.path.join(ddir, segment.data_name(1)), "rb").read().splitlines()
    lines = []
    for i, raw in enumerate(tmpl):
        env = json.loads(raw)
        env.update(device_id=FORGED[4:], event_id=str(uuid.UUID(int=i + 1, version=4)), source_seq=i + 1)
        if i == 2:
            env["attrs"]["cwd"] = "/w/" + SECRET + "a" * 300
        lines.append(event.line(event.canonical(env)).encode())
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, teammate_key(str(tmp_path)),
                  last_source_seq=len(lines))
    code, out, err = ci.cli(monkeypatch, capsys, "sync", folder, "--pull-only", "--json")
    assert code == 1, (out, err)
    rep = json.loads(out)
    assert [(p["code"], p["device"], p["segment"]) for p in rep["problems"]] == [("sync.bad_line", FORGED, 1)]
    assert rep["problems"][0]["message"].endswith("line 3: $.attrs.cwd: a string longer than 256 bytes")
    assert SECRET not in out + err
    assert ci.count("device_id = ?", (FORGED,)) == 0
    assert ci.count("device_id = ?", (lap.device_id(),)) == len(tmpl)  # the other device still pulled


# --- bundle import ----------------------------------------------------------------------------------

def test_a_bundle_whose_event_attrs_break_a_bound_is_refused_and_nothing_is_imported(tmp_path, home):
    src_db, dst_db = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    jl = tmp_path / "in.jsonl"
    jl.write_text("".join(event.line(e) + "\n" for e in synth.generate(6, seed=5)), encoding="utf-8")
    assert run_attempt(["import", "jsonl", str(jl), "--db", src_db]).returncode == 0
    exported, forged = str(tmp_path / "b.zip"), str(tmp_path / "forged.zip")
    r = run_attempt(["bundle", "export", exported, "--db", src_db])
    assert r.returncode == 0, r.stderr

    def edit(env):
        env.setdefault("attrs", {})["path_extensions"] = [SECRET] * 3000
    resigned(exported, forged, edit)
    r = run_attempt(["bundle", "import", forged, "--db", dst_db])
    out = (r.stdout.decode() + r.stderr.decode()).replace("\n  ", " ")  # wrapped to the terminal: one line again
    assert r.returncode == 1, out
    assert "line 1: $.attrs:" in out and SECRET not in out and "Traceback" not in out
    r = run_attempt(["events", "--jsonl", "--db", dst_db])
    assert r.stdout.strip() == b""
