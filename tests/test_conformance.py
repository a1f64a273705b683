"""`attempt conformance FILE`: the seed-000 report. A real stream (synthetic history imported and
exported again, so source_seq / hlc are set by the writer) is COMPATIBLE with the exact layout;
breaking each rule on purpose flips exactly its line; hostile input never crashes it."""

import io
import json

import pytest
from conftest import run_attempt

from attemptdb.cli.main import run
from attemptdb.devtools import synth
from attemptdb.exchange import conformance
from attemptdb.model import ids

N = 1200
CHECKS = [name for name, _ in conformance.CHECKS]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """The seed's layout is what a terminal of 84 columns or more shows (its longest check line);
    a narrower one gets it wrapped (tests/test_term_walkthrough_80.py)."""
    monkeypatch.setenv("COLUMNS", "100")


def seed_layout(n):
    return (f"AttemptDB Event v1 \u00b7 {n:,} events\n"
            "\n"
            "Envelope            \u2713   every line parses; schema_version 1; ids present and unique\n"
            "Identity            \u2713   session_id derives from (provider, provider_session_id)\n"
            "Temporal            \u2713   source_seq and hlc strictly increase per device\n"
            "Causality           \u2713   every parent_span_id resolves in the stream\n"
            "Provenance          \u2713   adapter_version present; no content under metadata_only\n"
            "Extensions          \u2713   attrs on the allowlist or x_-namespaced; values content-free\n"
            "\n"
            "COMPATIBLE\n")


def _ingest(tmp, name, envelopes):
    """Import envelopes through `attempt import jsonl` and export them with `attempt events
    --jsonl` (a fresh home and file): the writer sets source_seq, hlc and ingested_at."""
    home = tmp / f"home-{name}"
    home.mkdir()
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CONFIG_HOME": str(home / "config"), "ATTEMPTDB_PATH": "", "NO_COLOR": "1"}
    src = tmp / f"{name}.in.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for e in envelopes:
            f.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
    db = str(tmp / f"{name}.db")
    p = run_attempt(["import", "jsonl", str(src), "--db", db], env=env)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    p = run_attempt(["events", "--jsonl", "--db", db], env=env)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    out = tmp / f"{name}.jsonl"
    out.write_bytes(p.stdout)
    return out


def _exercising(envelopes):
    """The same history made to exercise every rule: each session's first event opens a span
    the session's later events point to; tool calls whose end is not in the stream dropped."""
    ends = {(e["session_id"], e["tool"]["call_id"]) for e in envelopes
            if e["kind"] in ("tool_call_finished", "tool_call_failed") and "tool" in e}
    out, roots = [], {}
    for e in envelopes:
        e = dict(e)
        if e["kind"] == "tool_call_started" and (e["session_id"], e["tool"]["call_id"]) not in ends:
            continue
        if e["session_id"] not in roots:
            roots[e["session_id"]] = e["span_id"] = ids.derive("spn_", e["session_id"], "root")
        else:
            e["parent_span_id"] = roots[e["session_id"]]
        out.append(e)
    return out


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conformance")
    plain = list(synth.generate(N, seed=21))
    return {"plain": _ingest(tmp, "plain", plain), "exercised": _ingest(tmp, "exercised", _exercising(plain))}


def lines_of(path):
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def conformance_cli(path, capsys, *extra):
    capsys.readouterr()
    code = run(["conformance", str(path), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, lines, name="s.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"".join(x + b"\n" for x in lines))
    return p


def check_lines(out):
    """{check name: its report line} from a rendered report."""
    got = {}
    for line in out.splitlines():
        for name in CHECKS:
            if line.startswith(name + " "):
                got[name] = line
    assert list(got) == CHECKS
    return got


# --- a valid stream --------------------------------------------------------------------------

def test_exercised_stream_prints_exactly_the_seed_layout(streams, capsys):
    path = streams["exercised"]
    n = len(lines_of(path))
    assert n >= 1000
    code, out, err = conformance_cli(path, capsys)
    assert code == 0, out
    assert out == seed_layout(n)


def test_real_process_prints_the_layout_and_exits_0(streams):
    path = streams["exercised"]
    p = run_attempt(["conformance", str(path)], env={"NO_COLOR": "1"})
    assert p.returncode == 0
    assert p.stdout.decode("utf-8") == seed_layout(len(lines_of(path)))


def test_plain_synthetic_stream_is_compatible_with_notes_after_the_verdict(streams, capsys):
    path = streams["plain"]
    code, out, _ = conformance_cli(path, capsys)
    assert code == 0
    block = seed_layout(N)
    assert out.startswith(block)
    rest = out[len(block):].splitlines()
    assert rest[0] == "" and rest[1:] and all(x.startswith("note: ") for x in rest[1:])
    assert any("parent_span_id" in x for x in rest)  # causality was not exercised: said, not failed


def test_json_report_is_data(streams, capsys):
    code, out, _ = conformance_cli(streams["plain"], capsys, "--json")
    rep = json.loads(out)
    assert code == 0
    assert rep["format"] == "AttemptDB Event v1" and rep["events"] == N and rep["lines"] == N
    assert rep["compatible"] is True
    assert [c["name"] for c in rep["checks"]] == CHECKS
    assert [c["rule"] for c in rep["checks"]] == [r for _, r in conformance.CHECKS]
    for c in rep["checks"]:
        assert c == {"name": c["name"], "rule": c["rule"], "ok": True, "checked": True, "problem_count": 0,
                     "problems": []}
    assert isinstance(rep["notes"], list) and rep["notes"]


def test_stdin_and_crlf(streams, capsys, monkeypatch):
    data = streams["exercised"].read_bytes().replace(b"\n", b"\r\n")
    rep = conformance.check_stream(io.BytesIO(data))
    assert rep.compatible and rep.events == len(lines_of(streams["exercised"]))
    p = run_attempt(["conformance", "-"], input=data, env={"NO_COLOR": "1"})
    assert p.returncode == 0 and p.stdout.decode().endswith("COMPATIBLE\n")


# --- each rule broken on purpose ---------------------------------------------------------------

def _edit(line: bytes, fn) -> bytes:
    doc = json.loads(line)
    fn(doc)
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _first(lines, pred, start=100):
    for i in range(start, len(lines)):
        if pred(json.loads(lines[i])):
            return i
    raise AssertionError("no line fits")


def _break(rule, lines):
    """Break `rule` once; return (new lines, the 1-based line number to be reported)."""
    lines = list(lines)
    if rule == "Envelope":
        i = 150
        lines[i] = _edit(lines[i], lambda d: d.update(schema_version=2))
    elif rule == "Envelope-duplicate":
        i = 160
        src = json.loads(lines[40])["event_id"]
        lines[i] = _edit(lines[i], lambda d: d.update(event_id=src))
    elif rule == "Envelope-malformed":
        i = 170
        lines[i] = lines[i][:-40]
    elif rule == "Identity":
        i = 200
        lines[i] = _edit(lines[i], lambda d: d.update(session_id=ids.session_id(d["provider"], d["provider_session_id"] + "x")))
    elif rule == "Temporal":
        i = 300
        lines[i - 1], lines[i] = lines[i], lines[i - 1]  # the older event now comes second
    elif rule == "Temporal-repeat-seq":
        i = 310
        prev = json.loads(lines[i - 1])["source_seq"]
        lines[i] = _edit(lines[i], lambda d: d.update(source_seq=prev))
    elif rule == "Temporal-repeat-hlc":
        i = 320
        prev = json.loads(lines[i - 1])["hlc"]
        lines[i] = _edit(lines[i], lambda d: d.update(hlc=prev))
    elif rule == "Causality":
        i = 400
        lines[i] = _edit(lines[i], lambda d: d.update(parent_span_id=ids.uuid7()))
    elif rule == "Provenance":
        i = _first(lines, lambda d: "content" in d, 500)
        lines[i] = _edit(lines[i], lambda d: d.update(capture_mode="metadata_only"))
    elif rule == "Extensions":
        i = 600
        lines[i] = _edit(lines[i], lambda d: d.setdefault("attrs", {}).update(secret_note=1))
    elif rule == "Extensions-content":
        i = _first(lines, lambda d: "attrs" in d, 650)
        lines[i] = _edit(lines[i], lambda d: d["attrs"].update(reason="mail bob@example.com please"))
    elif rule == "Extensions-home":
        i = _first(lines, lambda d: "attrs" in d, 700)
        lines[i] = _edit(lines[i], lambda d: d["attrs"].update(cwd="/home/alice/secret-project"))
    else:
        raise AssertionError(rule)
    return lines, i + 1


@pytest.mark.parametrize("rule", ["Envelope", "Envelope-duplicate", "Envelope-malformed", "Identity", "Temporal",
                                  "Temporal-repeat-seq", "Temporal-repeat-hlc", "Causality", "Provenance", "Extensions", "Extensions-content", "Extensions-home"])
def test_breaking_a_rule_flips_exactly_its_line(streams, tmp_path, capsys, rule):
    lines, lineno = _break(rule, lines_of(streams["plain"]))
    path = write(tmp_path, lines)
    code, out, _ = conformance_cli(path, capsys)
    assert code == 1
    got = check_lines(out)
    name = rule.split("-")[0]
    for check, line in got.items():
        if check == name:
            assert "\u2717" in line and f"\u2717   line {lineno}: " in line, line
        else:
            assert "\u2713" in line, line
    assert "\nNOT COMPATIBLE\n" in out + "\n"
    assert "bob@example.com" not in out and "/home/alice" not in out  # content is never echoed
    rep = json.loads(conformance_cli(path, capsys, "--json")[1])
    assert rep["compatible"] is False
    bad = [c for c in rep["checks"] if not c["ok"]]
    assert [c["name"] for c in bad] == [name] and bad[0]["problems"][0]["line"] == lineno


def test_x_namespaced_attrs_keep_the_stream_compatible(streams, tmp_path, capsys):
    lines = lines_of(streams["plain"])
    lines[10] = _edit(lines[10], lambda d: d.setdefault("attrs", {}).update(x_acme_build_id=7))
    lines[11] = _edit(lines[11], lambda d: d.update(x_writer_note={"free": "form"}))
    code, out, _ = conformance_cli(write(tmp_path, lines), capsys)
    assert code == 0 and out.startswith(seed_layout(N))


def test_corrections_carry_the_session_they_are_about(streams, tmp_path, capsys):
    lines = lines_of(streams["plain"])
    lines[20] = _edit(lines[20], lambda d: d.update(kind="correction", provider="attemptdb",
                                                      provider_event_name="Correction", attrs={"correction_type": "attempt_note"}))
    code, out, _ = conformance_cli(write(tmp_path, lines), capsys)
    assert code == 0, out


def test_many_problems_are_counted_and_listed_up_to_a_limit(streams, tmp_path, capsys):
    lines = [_edit(x, lambda d: d.update(schema_version=3)) if i % 2 else x
             for i, x in enumerate(lines_of(streams["plain"])[:100])]
    rep = conformance.check_file(str(write(tmp_path, lines)))
    d = rep.as_dict()["checks"][0]
    assert d["problem_count"] == 50 and len(d["problems"]) == conformance.MAX_LISTED
    assert [p["line"] for p in d["problems"]][:3] == [2, 4, 6]
    assert "line 2: $.schema_version: must be 1 (+49 more)" in rep.render()


# --- notes -------------------------------------------------------------------------------------

def test_single_event_stream_is_a_note_not_a_failure(streams, tmp_path, capsys):
    path = write(tmp_path, lines_of(streams["exercised"])[:1])
    code, out, _ = conformance_cli(path, capsys)
    assert code == 0
    assert out.startswith(seed_layout(1).replace("1 events", "1 event"))
    assert "note: a single event cannot exercise" in out


def test_unpaired_tool_calls_are_a_note(streams, tmp_path, capsys):
    lines = lines_of(streams["exercised"])
    i = _first(lines, lambda d: d["kind"] == "tool_call_started", 0)
    call = json.loads(lines[i])["tool"]["call_id"]
    kept = [x for x in lines if not (json.loads(x).get("tool", {}).get("call_id") == call
                                     and json.loads(x)["kind"] != "tool_call_started")]
    assert len(kept) == len(lines) - 1
    code, out, _ = conformance_cli(write(tmp_path, kept), capsys)
    assert code == 0
    assert "note: 1 tool call(s) start without an end" in out
    assert "source_seq skips 1 value(s)" in out  # the removed end left a gap: a note too


def test_events_not_yet_ingested_are_a_note(tmp_path, capsys):
    path = tmp_path / "pending.jsonl"
    synth.write_jsonl(str(path), 50, seed=2)  # source_seq / hlc 0: what a hook spools
    code, out, _ = conformance_cli(path, capsys)
    assert code == 0 and "50 event(s) not yet ingested" in out


# --- hostile input -------------------------------------------------------------------------------

def _report(data: bytes, **kw):
    rep = conformance.check_stream(io.BytesIO(data), **kw)
    text = rep.render()
    json.dumps(rep.as_dict())
    return rep, text


def test_binary_garbage(tmp_path, capsys):
    import random
    rnd = random.Random(7)
    data = bytes(rnd.randrange(256) for _ in range(20000)) + b"\n\x00\x00\n\xff\xfe\xfd\n"
    rep, text = _report(data)
    assert not rep.compatible and rep.events == 0 and rep.counts["Envelope"] == rep.lines > 0
    assert all(isinstance(p["line"], int) for p in rep.problems["Envelope"])
    path = tmp_path / "garbage.bin"
    path.write_bytes(data)
    p = run_attempt(["conformance", str(path)], env={"NO_COLOR": "1"})
    assert p.returncode == 1 and b"Traceback" not in p.stderr and b"NOT COMPATIBLE" in p.stdout


def test_truncated_last_line(streams, capsys, tmp_path):
    data = streams["exercised"].read_bytes()
    cut = data[:-300]
    n = cut.count(b"\n") + 1
    rep, text = _report(cut)
    assert rep.counts["Envelope"] == 1 and rep.problems["Envelope"][0] == {
        "line": n, "message": "not a JSON document (malformed or truncated)"}
    assert [c for c in CHECKS if rep.counts[c]] == ["Envelope"]
    assert f"\u2717   line {n}: not a JSON document" in text


def test_empty_and_blank_files(tmp_path, capsys):
    for data in (b"", b"\n\n  \n"):
        path = tmp_path / "empty.jsonl"
        path.write_bytes(data)
        code, out, _ = conformance_cli(path, capsys)
        assert code == 1
        assert out.startswith("AttemptDB Event v1 \u00b7 0 events\n")
        assert "Envelope            \u2717   the stream holds no event" in out and "NOT COMPATIBLE" in out


def test_json_values_that_are_not_objects(tmp_path, capsys):
    good = json.dumps(next(synth.generate(1, seed=3)), separators=(",", ":")).encode()
    data = b"\n".join([b"[1, 2, 3]", b"", b'"text"', b"null", b"42", good, b"[" * 100000 + b"]" * 100000, b"{}"]) + b"\n"
    rep, text = _report(data)
    lines = [p["line"] for p in rep.problems["Envelope"]]
    assert lines == [1, 3, 4, 5, 7, 8]  # blank line 2 skipped but counted; line 6 is an event
    assert rep.problems["Envelope"][0]["message"] == "$: an event must be a JSON object"
    assert rep.events == 1


def test_huge_lines(tmp_path, capsys):
    env = next(synth.generate(1, seed=3))
    env["content"] = {"prompt": "x" * (8 << 20)}
    big = json.dumps(env, separators=(",", ":")).encode()
    rep, _ = _report(big + b"\n")
    assert rep.compatible and rep.events == 1  # 8 MB is a line like any other
    # past the limit a line is reported (and read past in chunks), the next one still counted
    other = json.dumps(dict(env, event_id=ids.uuid7(), content={"prompt": "y"}), separators=(",", ":")).encode()
    rep, text = _report(b"x" * 5000 + b"\n" + other + b"\n" + b"z" * 5000, max_line=1000)
    assert rep.problems["Envelope"] == [{"line": 1, "message": "longer than 1,000 bytes (not read)"},
                                        {"line": 3, "message": "longer than 1,000 bytes (not read)"}]
    assert rep.events == 1 and rep.lines == 3


def test_keys_are_echoed_only_when_plain(tmp_path, capsys):
    env = next(synth.generate(1, seed=3))
    env["\x1b[31mred\x1b[0m"] = 1
    a = json.dumps(env).encode()
    env2 = dict(next(synth.generate(1, seed=4)))
    env2["project"] = dict(env2["project"], **{"bad key \u2028": 1})
    b = json.dumps(env2).encode()
    env3 = dict(next(synth.generate(1, seed=5)), attrs={"\x07bell": 1})
    c = json.dumps(env3).encode()
    env4 = dict(next(synth.generate(1, seed=6)), unknown_plain=1)
    d = json.dumps(env4).encode()
    rep, text = _report(b"\n".join([a, b, c, d]) + b"\n")
    msgs = [p["message"] for p in rep.problems["Envelope"]]
    assert msgs[0] == "$.<key>: unknown top-level field (extensions must be named x_<name>)"
    assert msgs[1] == "$.project.<key>: is not allowed here"
    assert msgs[2] == "$.attrs: keys must match ^[a-z][a-z0-9_]*$"
    assert msgs[3] == "$.unknown_plain: unknown top-level field (extensions must be named x_<name>)"
    assert "\x1b" not in text and "\x07" not in text and "\u2028" not in text


def test_unreadable_file_is_a_coded_error(tmp_path):
    p = run_attempt(["conformance", str(tmp_path / "missing.jsonl")])
    assert p.returncode == 2 and b"Traceback" not in p.stderr
    assert p.stderr.strip()


def test_a_stream_with_no_readable_event_passes_no_check_it_could_not_run():
    """Nothing read, nothing vouched for: the checks after Envelope show `-`, never ✓, and the
    JSON says they were not checked (`checked: false`)."""
    rep = conformance.check_stream(io.BytesIO(b'garbage\n{"x": 1}\n'))
    shown = rep.render().splitlines()
    assert "\u2713" not in rep.render() and not rep.compatible
    assert all(line.split()[1] == "-" for line in shown if line.split()[:1] in (["Identity"], ["Temporal"],
                                                                                 ["Causality"], ["Extensions"]))
    checks = {c["name"]: c for c in rep.as_dict()["checks"]}
    assert checks["Envelope"]["checked"] and not checks["Envelope"]["ok"]
    assert not checks["Identity"]["checked"]
    good = conformance.check_stream(io.BytesIO(b"".join(
        (json.dumps(e) + "\n").encode() for e in synth.generate(3, seed=2))))
    assert all(c["checked"] and c["ok"] for c in good.as_dict()["checks"])
