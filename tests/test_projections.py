"""Projection behaviour outside the scenarios: read-time state, rules needing hand-made events,
kinds the projections ignore, hostile attribute values, pause/resume, reproject on a damaged
state, the timeline/failures rendering, and the append path's expression list."""

import json

import pytest
from click.testing import CliRunner

from attemptdb import adapters
from attemptdb.cli.main import cli
from attemptdb.model import clock, ids
from attemptdb.projections import ALGORITHM_VERSION, rebuild, scenario
from attemptdb.query.read import clean, rows
from attemptdb.store.database import Store

DEV = ids.derive("dev_", "tests")
PROJ = ids.project_identity("/work/demo", "github.com/acme/demo", DEV)


def hook(provider, payload, at_us, mode="local_semantic"):
    ctx = adapters.Context(DEV, mode, PROJ, at_us, hook_version="t")
    payload = dict(payload)
    payload.setdefault("cwd", "/work/demo")
    return adapters.build_event(provider, payload, None, ctx)


def claude(name, at_us, session="s", **kw):
    return hook("claude_code", dict(hook_event_name=name, session_id=session, **kw), at_us)


def q(st, sql, params=()):
    return rows(st.conn, sql, params)


# --- the append path ----------------------------------------------------------------------

def test_append_path_values_match_project_input(db):
    """The append path applies exactly what project_input derives from the events row (the row a
    replay would feed): after every in-order append the queue holds that row."""
    envs = [e for n in scenario.names() for e in scenario.build(scenario.load(n)).events
            if e["kind"] not in ("correction", "retraction")]
    envs.sort(key=lambda e: e["observed_at"])
    st = Store.open(db)
    cols = [r["name"] for r in q(st, "PRAGMA table_info(project_queue)")][1:]
    assert cols == [r["name"] for r in q(st, "PRAGMA table_info(project_input)")]
    seen = 0
    for e in envs:
        st.append([dict(e)])
        got = q(st, "SELECT * FROM project_queue")
        want = q(st, "SELECT * FROM project_input WHERE event_id = ?", ("ev_" + e["event_id"],))
        if got and got[0]["event_id"] == want[0]["event_id"]:
            got[0].pop("qid")
            # dispatch state, not event fields: in_order was judged before the event applied
            # (it was), the go_* gates are set while it applies
            assert got[0]["in_order"] == 1
            for k in [k for k in got[0] if k == "in_order" or k.startswith("go_")]:
                got[0].pop(k)
                want[0].pop(k)
            assert got[0] == want[0]
            seen += 1
    assert seen == len(envs)
    st.close()


# --- read-time state ----------------------------------------------------------------------

@pytest.mark.parametrize("age_min, blocked, state, conf", [
    (29, False, "open", 0.8), (31, False, "stale", 0.7), (31, True, "open", 0.8), (13 * 60, True, "stale", 0.7)])
def test_session_state_is_judged_when_read(db, age_min, blocked, state, conf):
    now = clock.now_us()
    t = now - age_min * 60_000_000 - 5_000_000
    st = Store.open(db)
    envs = [claude("SessionStart", t, source="startup"),
            claude("UserPromptSubmit", t + 1, prompt="go"),
            claude("PreToolUse", t + 2, tool_name="Bash", tool_use_id="a", tool_input={"command": "ls"})]
    if blocked:
        envs.append(claude("PermissionRequest", t + 3, tool_name="Bash", tool_use_id="b", tool_input={"command": "rm x"}))
    st.append(envs)
    s = q(st, "SELECT state, confidence, ended_at FROM sessions")[0]
    assert (s["state"], s["confidence"], s["ended_at"]) == (state, conf, None)
    st.append([claude("SessionEnd", t + 4, reason="logout")])
    assert q(st, "SELECT state FROM sessions")[0]["state"] == "closed"
    st.close()


def test_a_denied_shell_call_ends_the_attempt_even_before_an_edit(db):
    t = 1_787_904_000_000_000
    st = Store.open(db)
    denied = claude("PostToolUseFailure", t + 3, tool_name="Bash", tool_use_id="d", tool_input={"command": "curl x"},
                    error="denied")
    denied["outcome"] = {"status": "denied"}
    st.append([claude("UserPromptSubmit", t, prompt="fetch"),
               claude("PreToolUse", t + 2, tool_name="Bash", tool_use_id="d", tool_input={"command": "curl x"}),
               denied,
               claude("PreToolUse", t + 5, tool_name="Bash", tool_use_id="e", tool_input={"command": "ls"}),
               claude("Stop", t + 6)])
    atts = q(st, "SELECT attempt_id, outcome, failure_class FROM attempts ORDER BY attempt_index")
    assert [(a["outcome"], a["failure_class"]) for a in atts] == [("failed", "denied"), ("succeeded", None)]
    assert atts[0]["attempt_id"] == "att_" + denied["event_id"]
    st.close()


def test_telemetry_and_capture_tests_are_not_sessions(db):
    t = 1_787_904_000_000_000
    otel = claude("UserPromptSubmit", t, prompt="x")
    otel.update(kind="unknown", attrs={"source": "otel"})
    otel.pop("content", None)
    ct = claude("UserPromptSubmit", t + 1, session="t", prompt="x")
    ct["kind"] = "capture_test"
    st = Store.open(db)
    st.append([otel, ct])
    assert q(st, "SELECT count(*) AS n FROM sessions")[0]["n"] == 0
    st.close()


def test_hostile_attribute_types_are_ignored(db):
    t = 1_787_904_000_000_000
    st = Store.open(db)
    end = claude("PostToolUse", t + 2, tool_name="Bash", tool_use_id="a", tool_input={"command": "pytest"},
                 tool_response={"exit_code": 0})
    end["attrs"] = dict(end.get("attrs", {}), tests_failed="7", command_category=5, git_subcommand=["commit"])
    st.append([claude("UserPromptSubmit", t, prompt="test"),
               claude("PreToolUse", t + 1, tool_name="Bash", tool_use_id="a", tool_input={"command": "pytest"}), end,
               claude("Stop", t + 3)])
    c = q(st, "SELECT tests_failed, command_category, git_subcommand FROM tool_calls")[0]
    assert c["tests_failed"] is None and c["git_subcommand"] is None
    assert c["command_category"] == "test"  # from the start event; the end's number is ignored
    assert q(st, "SELECT outcome FROM attempts")[0]["outcome"] == "succeeded"
    assert q(st, "SELECT count(*) AS n FROM commits")[0]["n"] == 0
    st.close()


# --- pause / resume / reproject ------------------------------------------------------------

def test_paused_bulk_append_then_resume_equals_live(tmp_path):
    envs = scenario.build(scenario.load("corrections")).events
    live = Store.open(str(tmp_path / "live.db"))
    for e in envs:
        live.append([dict(e)])
    bulk = Store.open(str(tmp_path / "bulk.db"))
    with rebuild.paused(bulk.conn) as p:
        bulk.append([dict(e) for e in envs])
        assert q(bulk, "SELECT count(*) AS n FROM session_facts")[0]["n"] == 0
    assert p.replayed == 1
    assert rebuild.dump(bulk.conn, portable=True) == rebuild.dump(live.conn, portable=True)
    assert rebuild.dump_views(bulk.conn) == rebuild.dump_views(live.conn)
    assert rebuild.retracted_events(bulk.conn) == rebuild.retracted_events(live.conn)
    live.close()
    bulk.close()


def test_reproject_reports_and_repairs_a_damaged_state(tmp_path, monkeypatch):
    path = str(tmp_path / "r.db")
    st = Store.open(path)
    st.append(scenario.build(scenario.load("retry_supersession")).events)
    st.conn.execute("UPDATE tool_call_facts SET outcome_status = 'success' WHERE outcome_status = 'failure'")
    st.close()
    res = CliRunner().invoke(cli, ["reproject", "--check", "--db", path])
    assert res.exit_code == 1 and "differs: tool_call_facts: 1 row(s) only in the incremental state" in res.output
    res = CliRunner().invoke(cli, ["reproject", "--json", "--db", path])
    assert res.exit_code == 1 and json.loads(res.output)["written"] is True
    res = CliRunner().invoke(cli, ["reproject", "--db", path])
    assert res.exit_code == 0 and "ok: the incremental state equals a rebuild from the events" in res.output
    st = Store.open(path)
    assert q(st, "SELECT outcome FROM attempts ORDER BY attempt_index")[0]["outcome"] == "superseded"
    st.close()


# --- rendering ----------------------------------------------------------------------------

@pytest.fixture
def demo(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("NO_COLOR", "1")
    path = str(tmp_path / "t.db")
    b = scenario.build(scenario.load("retry_supersession"))
    st = Store.open(path)
    st.append(b.events)
    st.close()
    return path, b


def test_timeline_text(demo):
    path, b = demo
    res = CliRunner().invoke(cli, ["timeline", "--db", path], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == f"1 session, 1 turn, 2 attempts, 0 handoffs from 12 events  [inference {ALGORITHM_VERSION}]"
    assert lines[2] == f"▌ Claude Code  acme/demo  2026-08-28 09:00 → 09:00  {ids.short(b.ref('ses', 'claude_code:s1'))}"
    assert lines[3] == "  full coverage · 1 turn · 4 tool calls · 1 failure"
    assert lines[4] == "  09:00:01 turn 1  completed  Fix the off-by-one in src/pager.py"
    a1, a2 = ids.short(b.ref("att", "e1f")), ids.short(b.ref("att", "e2s"))
    assert lines[5] == f"    {a1} ↻ superseded [string_mismatch] edit src/pager.py · read  (1 path)  4.0s  conf 0.9 → {a2}"
    assert lines[6] == f"    {a2} ✓ succeeded edit src/pager.py · shell  (1 path)  7.0s  conf 0.9"
    narrow = CliRunner().invoke(cli, ["timeline", "--db", path], env={"COLUMNS": "60"}).output.splitlines()
    assert max(len(x) for x in narrow) <= 60
    assert narrow[3:5] == ["▌ Claude Code  acme/demo", f"  2026-08-28 09:00 → 09:00  {ids.short(b.ref('ses', 'claude_code:s1'))}"]
    assert narrow[7] == f"    {a1} ↻ superseded [string_mismatch] edit src/pa…"
    assert narrow[8] == f"      (1 path)  4.0s  conf 0.9 → {a2}"  # the measured tail moves, whole


def test_timeline_json_scope_and_empty(demo, tmp_path):
    path, b = demo
    data = json.loads(CliRunner().invoke(cli, ["timeline", "--json", "--db", path]).output)
    assert data["counts"] == {"sessions": 1, "turns": 1, "attempts": 2, "handoffs": 0}
    assert data["sessions"][0]["turns"][0]["attempts"][1]["verification"] == "passed"
    none = json.loads(CliRunner().invoke(cli, ["timeline", "--json", "--since", "2026-09-01", "--db", path]).output)
    assert none["sessions"] == []
    by_id = json.loads(CliRunner().invoke(cli, ["timeline", "--json", "--session", b.ref("ses", "claude_code:s1"),
                                                "--db", path]).output)
    assert len(by_id["sessions"]) == 1
    empty = str(tmp_path / "empty.db")
    Store.open(empty).close()
    res = CliRunner().invoke(cli, ["timeline", "--db", empty])
    assert res.output.startswith("no sessions yet (0 events)") and "attempt doctor" in res.output


def test_failures_table_and_none(demo, tmp_path):
    path, b = demo
    res = CliRunner().invoke(cli, ["failures", "--db", path])
    assert res.exit_code == 0
    row = [l for l in res.output.splitlines() if l.startswith("att_")]
    assert len(row) == 1 and ids.short(b.ref("att", "e1f")) in row[0] and "superseded" in row[0]
    data = json.loads(CliRunner().invoke(cli, ["failures", "--json", "--db", path]).output)
    assert [f["attempt_id"] for f in data["failures"]] == [b.ref("att", "e1f")]
    empty = str(tmp_path / "e.db")
    Store.open(empty).close()
    res = CliRunner().invoke(cli, ["failures", "--db", empty])
    assert res.output.strip() == f"no failed or superseded attempts among 0 attempts ({ALGORITHM_VERSION})"


def test_terminal_text_is_cleaned():
    assert clean("a\x1b[31mred\x07\nnext\u202eevil", 40) == "a?[31mred? next?evil"
    assert clean("x" * 10, 5) == "xxxx…"


def test_timeline_never_prints_control_characters(db, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    st = Store.open(db)
    st.append([claude("UserPromptSubmit", 1_787_904_000_000_000, prompt="\x1b]0;pwned\x07 do it")])
    st.close()
    out = CliRunner().invoke(cli, ["timeline", "--db", db]).output
    assert "\x1b" not in out and "\x07" not in out and "?]0;pwned? do it" in out
