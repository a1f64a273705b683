"""What a new user's walkthrough found, each pinned: handoffs are between agents (sessions of
provider `attempt` neither give nor take), `attempt handoffs --between` says when there are
handoffs but none between the two agents, `attempt why` names a human correction, and
`attempt doctor` is not ok while Codex has not trusted its hooks."""

import json
import random

import pytest
from conftest import run_attempt

from attemptdb import adapters
from attemptdb.adapters.draft import Draft
from attemptdb.ingest import privacy
from attemptdb.model import event
from attemptdb.projections import rebuild, scenario
from attemptdb.store.database import Store

# --- 1. handoffs are between agents --------------------------------------------------------

AGENTS_AROUND_A_RUN = {
    "name": "agents_around_a_run",
    "description": "Gemini writes a file; someone runs `attempt run -- pytest` in the project; "
                   "Claude Code then picks the file up.",
    "projects": {"default": {"root": "/work/demo", "remote": "github.com/acme/demo"}},
    "defaults": {"provider": "gemini_cli", "session": "g1"},
    "events": [
        {"label": "g_p", "at": "09:00:00", "payload": {"hook_event_name": "BeforeAgent", "prompt": "add the parser"}},
        {"label": "g_ws", "at": "09:00:01", "payload": {
            "hook_event_name": "BeforeTool", "tool_name": "write_file",
            "tool_input": {"file_path": "/work/demo/src/parse.py", "content": "x = 1\n"}}},
        {"label": "g_we", "at": "09:00:02", "payload": {
            "hook_event_name": "AfterTool", "tool_name": "write_file",
            "tool_input": {"file_path": "/work/demo/src/parse.py", "content": "x = 1\n"}, "tool_response": {}}},
        {"label": "c_p", "at": "09:02:00", "provider": "claude_code", "session": "c1",
         "payload": {"hook_event_name": "UserPromptSubmit", "prompt": "finish the parser"}},
        {"label": "c_es", "at": "09:02:01", "provider": "claude_code", "session": "c1", "payload": {
            "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "t1",
            "tool_input": {"file_path": "/work/demo/src/parse.py", "old_string": "1", "new_string": "2"}}},
        {"label": "c_ee", "at": "09:02:02", "provider": "claude_code", "session": "c1", "payload": {
            "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "t1",
            "tool_input": {"file_path": "/work/demo/src/parse.py", "old_string": "1", "new_string": "2"},
            "tool_response": {}}},
    ],
}


def _attempt_env(b, kind, name, at_text, psid, *, call=None, ok=None):
    """An event of provider `attempt` as `attempt run` writes it (evidence/record.py's drafts),
    at a scenario time."""
    proj = b.project(None)
    d = Draft("attempt", name, proj["root"])
    d.kind, d.psid, d.session_missing, d.attrs = kind, psid, False, {}
    if call:
        d.tool = {"name": "run", "category": "shell", "call_id": call}
        d.put("command", "pytest -q")
        if ok is True:
            d.success(0)
        elif ok is False:
            d.failure(cls="test_failure", exit_code=1)
    ctx = adapters.Context(b.device_id, "local_semantic", proj, b.at(at_text), hook_version="test")
    env = event.canonical(privacy.ingest(d.envelope(ctx), db_mode="local_semantic"))
    event.validate(env)
    return env


@pytest.fixture(scope="module")
def agents_around_a_run():
    b = scenario.build(AGENTS_AROUND_A_RUN)
    run = [_attempt_env(b, "session_started", "session.started", "09:01:00", "cli-run"),
           _attempt_env(b, "tool_call_started", "command.started", "09:01:01", "cli-run", call="r1"),
           _attempt_env(b, "tool_call_failed", "command.finished", "09:01:30", "cli-run", call="r1", ok=False),
           _attempt_env(b, "session_ended", "session.stopped", "09:01:31", "cli-run")]
    return b, list(b.events) + run


def _handoffs(path, envs):
    s = Store.open(path)
    try:
        for e in envs:
            s.append([dict(e)])
        rows = [dict(zip(("from_provider", "to_provider", "from_session", "to_session", "shared_paths",
                          "confidence"), r))
                for r in s.conn.execute("SELECT from_provider, to_provider, from_session, to_session, "
                                        "shared_paths, confidence FROM handoffs ORDER BY handoff_at")]
        assert rebuild.reproject(s.conn, write=False).clean
        return rows
    finally:
        s.close()


def test_attempt_run_sessions_take_no_part_in_handoffs(tmp_path, agents_around_a_run):
    b, envs = agents_around_a_run
    rows = _handoffs(str(tmp_path / "h.db"), envs)
    assert [(r["from_provider"], r["to_provider"]) for r in rows] == [("gemini_cli", "claude_code")]
    assert rows[0]["from_session"] == b.expand("{ses:gemini_cli:g1}")
    assert rows[0]["to_session"] == b.expand("{ses:claude_code:c1}")
    # the agents' handoff is judged as if the run were not there: the same row as without it
    without = _handoffs(str(tmp_path / "w.db"), b.events)
    assert rows == without and json.loads(rows[0]["shared_paths"]) == ["src/parse.py"]


def test_attempt_run_sessions_and_handoffs_any_arrival_order(tmp_path, agents_around_a_run):
    _b, envs = agents_around_a_run
    from test_projections_order import assert_same, state_of
    want = state_of(envs, str(tmp_path / "base.db"))
    assert want["reproject_clean"]
    rng = random.Random(15)
    for i in range(4):
        order = list(envs)
        rng.shuffle(order)
        assert_same(state_of(order, str(tmp_path / f"s{i}.db")), want)


# --- 2. `attempt handoffs --between` when other agents handed off --------------------------

@pytest.fixture(scope="module")
def handoffs_db(tmp_path_factory):
    import scenario_db
    path = str(tmp_path_factory.mktemp("handoffs") / "h.db")
    scenario_db.build(path, "handoffs")  # claude ⇄ codex, claude → gemini
    return path


def test_handoffs_between_two_agents_without_any_says_none_between_them(handoffs_db, home):
    p = run_attempt(["handoffs", "--between", "cursor", "codex", "--db", handoffs_db], env={"COLUMNS": "200"})
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode()
    assert "none between these agents" in out
    assert "3 other handoffs are recorded between other agents" in out
    assert "One is inferred" not in out  # not the note for a database without any
    p = run_attempt(["handoffs", "--between", "cursor", "codex", "--project", "demo", "--db", handoffs_db],
                    env={"COLUMNS": "200"})
    assert "2 other handoffs in this scope are recorded" in p.stdout.decode()
    p = run_attempt(["handoffs", "--between", "cursor", "codex", "--json", "--db", handoffs_db])
    assert json.loads(p.stdout) == []


def test_handoffs_in_a_database_without_any_still_explain_the_rule(tmp_path, home):
    import scenario_db
    path = str(tmp_path / "r.db")
    scenario_db.build(path, "retry_supersession")
    out = run_attempt(["handoffs", "--between", "cursor", "codex", "--db", path],
                      env={"COLUMNS": "200"}).stdout.decode()
    assert "no handoffs detected. One is inferred" in out and "none between these agents" not in out
    assert "`attempt run` or `attempt note`" in out


# --- 3. `attempt why` names a human correction and counts its evidence once ---------------

CORRECTED = {
    "name": "why_corrected",
    "projects": {"default": {"root": "/work/demo", "remote": "github.com/acme/demo"}},
    "defaults": {"provider": "claude_code", "session": "w1"},
    "events": [
        {"label": "p1", "at": "09:00:00", "payload": {"hook_event_name": "UserPromptSubmit", "prompt": "make the tests pass"}},
        {"label": "t1s", "at": "09:00:01", "payload": {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                                        "tool_use_id": "t1", "tool_input": {"command": "pytest -q"}}},
        {"label": "t1f", "at": "09:00:03", "payload": {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                                                        "tool_use_id": "t1", "tool_input": {"command": "pytest -q"},
                                                        "error": "Command failed with exit code 1"}},
        {"label": "stop", "at": "09:00:04", "payload": {"hook_event_name": "Stop"}},
        {"label": "p2", "at": "09:01:00", "payload": {"hook_event_name": "UserPromptSubmit", "prompt": "now the docs"}},
        {"label": "w2s", "at": "09:01:01", "payload": {"hook_event_name": "PreToolUse", "tool_name": "Write",
                                                        "tool_use_id": "t2", "tool_input": {"file_path": "/work/demo/README.md", "content": "x"}}},
        {"label": "w2e", "at": "09:01:02", "payload": {"hook_event_name": "PostToolUse", "tool_name": "Write",
                                                        "tool_use_id": "t2", "tool_input": {"file_path": "/work/demo/README.md", "content": "x"},
                                                        "tool_response": {}}},
        {"label": "stop2", "at": "09:01:03", "payload": {"hook_event_name": "Stop"}},
        {"label": "c1", "at": "09:10:00", "correct": {"target": "{att:t1f}", "outcome": "succeeded"}},
        {"label": "c2", "at": "09:11:00", "correct": {"target": "{att:w2s}", "outcome": "failed",
                                                       "failure_class": "wrong_file", "note": "wrote the wrong file"}},
    ],
}


@pytest.fixture(scope="module")
def corrected_db(tmp_path_factory):
    import scenario_db
    path = str(tmp_path_factory.mktemp("why") / "w.db")
    (b,) = scenario_db.build(path, CORRECTED)
    return path, b


def _why(path, att, home, json_out=True):
    p = run_attempt(["why", att, "--db", path] + (["--json"] if json_out else []), env={"COLUMNS": "100"})
    assert p.returncode == 0, p.stderr.decode()
    return (json.loads(p.stdout)[0], p.stderr.decode()) if json_out else (p.stdout.decode(), p.stderr.decode())


def test_why_names_the_correction_that_made_an_attempt_succeed(corrected_db, home):
    path, b = corrected_db
    att, corr = b.expand("{att:t1f}"), b.expand("{ev:c1}")
    row, note = _why(path, att, home)
    claim = row["claim"]
    assert claim.startswith(f"attempt {att} did not fail: its outcome is succeeded")
    assert f"A human correction ({corr}, written with `attempt correct` from device dev_{b.device_id}" in claim
    assert "at 2026-08-28T09:10:00" in claim
    assert "changed outcome failed → succeeded" in claim
    assert claim.endswith("the projection inferred failed")
    assert row["corrected_by"] == corr and corr in row["evidence"]
    assert row["at"].startswith("2026-08-28T09:10:00")
    # the note counts what the row lists (several events: the plural)
    assert len(row["evidence"]) > 1
    assert f"note: {len(row['evidence'])} evidence events for attempt {att}" in note
    assert f"its own {len(row['evidence']) - 1}" in note and f"the correction {corr}" in note
    out, err = _why(path, att, home, json_out=False)
    assert f"evidence       {len(row['evidence'])} events" in out
    assert f"note: {len(row['evidence'])} evidence events" in (out + err)


def test_why_names_the_correction_that_made_an_attempt_fail(corrected_db, home):
    path, b = corrected_db
    att, corr = b.expand("{att:w2s}"), b.expand("{ev:c2}")
    row, note = _why(path, att, home)
    claim = row["claim"]
    assert row["edge_type"] == "failed" and row["uncertainty"]["reason"] == "corrected"
    assert (f"A human correction ({corr}, written with `attempt correct` from device dev_{b.device_id} "
            "at 2026-08-28T09:11:00") in claim
    assert "changed outcome succeeded → failed and failure class none → wrong_file" in claim
    assert "with the note “wrote the wrong file”" in claim
    assert claim.endswith("the projection inferred succeeded")
    assert len(row["evidence"]) > 1
    assert f"note: {len(row['evidence'])} evidence events for attempt {att}" in note


# --- 4. `attempt doctor` is not ok while Codex has not trusted its hooks -------------------

def _codex_capture(db, when_us):
    from attemptdb.model import clock, ids
    with Store.open(db) as s:
        proj = ids.project_identity("/p", None, s.device_id)
        ctx = adapters.Context(s.device_id, "local_semantic", proj, when_us, hook_version="test")
        s.append([adapters.build_event("codex", {"hook_event_name": "UserPromptSubmit", "session_id": "x1",
                                                 "cwd": "/p", "prompt": "hi"}, None, ctx)])
    return clock.iso(when_us)


def test_doctor_is_not_ok_when_codex_has_not_trusted_hooks_captured_by_hand_before(home, db):
    import os
    import time

    from attemptdb.model import clock
    os.makedirs(home / ".codex")
    before = _codex_capture(db, clock.now_us() - 5_000_000)  # by hand, before the install
    time.sleep(0.01)
    p = run_attempt(["hook", "install", "-p", "codex", "--no-verify", "--db", db])
    assert p.returncode == 0, p.stderr.decode()
    p = run_attempt(["doctor", "-p", "codex", "--db", db])
    out = p.stdout.decode()
    assert p.returncode == 1, out
    assert "problem: Codex has not trusted these hooks yet" in out and "approve them with /hooks" in out
    assert "delivering" not in out and out.rstrip().endswith("problems found")
    assert f"the last one ({before}) came before" in out
    rep = json.loads(run_attempt(["doctor", "-p", "codex", "--json", "--db", db]).stdout)
    codex = rep["agents"][0]
    assert rep["ok"] is False and codex["state"] == "installed" and codex["last_capture"] == before
    assert codex["installed_at"] > before
    # a capture after the install shows the hooks run: delivering, and the trust a note
    _codex_capture(db, clock.now_us())
    rep = json.loads(run_attempt(["doctor", "-p", "codex", "--json", "--db", db]).stdout)
    assert rep["agents"][0]["state"] == "delivering" and rep["ok"] is True
    assert any("/hooks" in n for n in rep["agents"][0]["notes"])


def test_a_blocking_signal_is_named_as_a_noun():
    """`waiting on a permission requested raised at …` read wrong: the event kind is named as
    what it is in a sentence."""
    from attemptdb.query.state import block_of
    r = {"signal_event_id": "ev_1", "signal_kind": "permission_requested", "signal_raised_at": "2026-01-01T00:00:00Z"}
    assert block_of(r)[1].startswith("waiting on a permission request raised at 2026-01-01T00:00:00Z")
    assert block_of(dict(r, signal_kind="notification"))[1].startswith("waiting on a notification raised at")


def test_an_empty_objective_before_any_prompt_is_not_blamed_on_the_capture_mode(tmp_path):
    """A run recorded before each run had a turn of its own (spec/evidence.md §2: no run.started)
    fails in turn 0 of its session: no prompt, so no objective. The note says so, instead of
    guessing metadata_only. A run recorded now has its command line as its objective."""
    from attemptdb.evidence import process, record
    from attemptdb.model import clock, ids
    db = str(tmp_path / "r.db")
    st = Store.open(db)
    try:
        w = record.Writer(st, cwd=str(tmp_path))
        ex = process.Exit()
        ex.returncode, ex.started_us, ex.ended_us, ex.duration_ms = 1, clock.now_us(), clock.now_us(), 0
        call = "cmd_" + ids.uuid7()
        w.write([w.started(None), w.command_started(call, ["false"], ex.started_us),
                 w.command_finished(call, ["false"], ex, {}, {}), w.run_stopped(ex), w.ended("run_finished")])
    finally:
        st.close()
    p = run_attempt(["query", "SHOW FAILED ATTEMPTS", "--db", db], env={"COLUMNS": "200"})
    err = (p.stdout + p.stderr).decode()  # notes follow the table on a pipe
    assert p.returncode == 0 and "came before any prompt (turn 0)" in err and "metadata_only" not in err, err
    assert run_attempt(["run", "--db", db, "--", "false"], cwd=tmp_path).returncode == 1
    p = run_attempt(["query", "SELECT objective FROM attempts WHERE turn_index > 0", "--json", "--db", db])
    assert json.loads(p.stdout) == [{"objective": "false"}], p.stdout
