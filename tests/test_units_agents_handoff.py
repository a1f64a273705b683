"""Work units' Rule 3 (handoff) is the handoffs view's rule (spec/projections.md §12, §16): a turn
of a provider `attempt` session (`attempt run`, `attempt note`, the Recorder: people and CI)
neither gives nor takes the link, and its span leaves the window, so the agents' link across it
is drawn as if it were not there. Kept per append and rebuilt from nothing alike, in any arrival
order; a file whose units were drawn by the old rule gets the new ones when opened (migration
0016)."""

import json
import random
import re

import apsw
import pytest
from test_projections_order import assert_same, state_of
from test_walkthrough_fixes import _attempt_env

from attemptdb.projections import rebuild, scenario, units
from attemptdb.store import schema
from attemptdb.store.database import Store

ROOT = "/work/demo"
HOOKS = {"claude_code": ("UserPromptSubmit", "Stop", "PreToolUse", "PostToolUse"),
         "codex": ("UserPromptSubmit", "Stop", "PreToolUse", "PostToolUse"),
         "gemini_cli": ("BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool")}


def _session(prefix, provider, session, times, prompt, tool, tool_input):
    """A session of one turn: start, prompt, one call (start, end), stop, end; `times` are the
    six instants."""
    prompt_hook, stop_hook, pre, post = HOOKS[provider]
    payloads = [{"hook_event_name": "SessionStart", "source": "startup"},
                {"hook_event_name": prompt_hook, "prompt": prompt},
                {"hook_event_name": pre, "tool_name": tool, "tool_use_id": f"{prefix}1", "tool_input": tool_input},
                {"hook_event_name": post, "tool_name": tool, "tool_use_id": f"{prefix}1", "tool_input": tool_input,
                 "tool_response": {}},
                {"hook_event_name": stop_hook},
                {"hook_event_name": "SessionEnd", "reason": "logout"}]
    return [{"label": f"{prefix}_{n}", "at": at, "provider": provider, "session": session, "payload": p}
            for n, at, p in zip(("st", "p", "cs", "ce", "stop", "end"), times, payloads)]


def _edit(path):
    return {"file_path": f"{ROOT}/{path}", "old_string": "a", "new_string": "b"}


def _patch(path):
    return {"input": f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch"}


# Claude Code edits src/parse.py; `attempt run -- pytest` a minute later; Codex starts within
# 5 minutes of Claude's end and edits another file (no shared path: Rule 1 does not link them).
WITHIN_FIVE = {
    "name": "run_between_agents",
    "projects": {"default": {"root": ROOT, "remote": "github.com/acme/demo"}},
    "events": _session("a", "claude_code", "a1", ("09:00:00", "09:00:01", "09:00:02", "09:00:03", "09:00:04",
                                                  "09:00:05"), "add the parser", "Edit", _edit("src/parse.py"))
    + _session("b", "codex", "b1", ("09:02:00", "09:02:01", "09:02:02", "09:02:03", "09:02:04", "09:02:05"),
               "wire the parser in", "apply_patch", _patch("src/main.py")),
}
WITHIN_FIVE_RUN = (("09:01:00", "09:01:01", "09:01:30", "09:01:31"), "cli-run-1")

# Claude Code edits src/parse.py and ends at 11:00:05; a long `attempt run` from 11:06 to 11:20;
# Gemini starts at 11:21 and reads src/parse.py (reads never link by Rule 1). Under the old rule
# Gemini took the handoff from the run (1 min) and the run none from Claude (6 min, no shared
# path): Gemini joined the run's unit, and Claude's, its real giver (21 min, a shared path), was
# hidden.
ACROSS_A_LONG_RUN = {
    "name": "long_run_between_agents",
    "projects": {"default": {"root": ROOT, "remote": "github.com/acme/demo"}},
    "events": _session("a", "claude_code", "a2", ("11:00:00", "11:00:01", "11:00:02", "11:00:03", "11:00:04",
                                                  "11:00:05"), "add the parser", "Edit", _edit("src/parse.py"))
    + _session("g", "gemini_cli", "g2", ("11:21:00", "11:21:01", "11:21:02", "11:21:03", "11:21:04", "11:21:05"),
               "review the parser", "read_file", {"file_path": f"{ROOT}/src/parse.py"}),
}
ACROSS_A_LONG_RUN_RUN = (("11:06:00", "11:06:01", "11:20:00", "11:20:01"), "cli-run-2")


def _with_run(scn, run):
    """The scenario's events, and the same with an `attempt run -- pytest` session (as
    evidence/record.py writes it) at the given times."""
    (start, call, finish, stop), psid = run
    b = scenario.build(scn)
    envs = [_attempt_env(b, "session_started", "session.started", start, psid),
            _attempt_env(b, "tool_call_started", "command.started", call, psid, call="r1"),
            _attempt_env(b, "tool_call_failed", "command.finished", finish, psid, call="r1", ok=False),
            _attempt_env(b, "session_ended", "session.stopped", stop, psid)]
    return b, list(b.events), list(b.events) + envs


def _units(path, envs):
    """(links, {turn: unit}, the portable unit tables) of a fresh file fed `envs` one by one."""
    st = Store.open(path)
    try:
        for e in envs:
            st.append([dict(e)])
        return _read(st.conn)
    finally:
        st.close()


def _read(conn):
    links = sorted(conn.execute("SELECT turn_id, kind, path, target_turn_id FROM unit_links"))
    members = dict(conn.execute("SELECT turn_id, work_unit_id FROM unit_turns"))
    return links, members, rebuild.dump(conn, units.UNIT_TABLES, portable=True)


def _run_turn(path):
    """The one turn of provider `attempt` in the file."""
    conn = apsw.Connection(path)
    try:
        return conn.execute("SELECT turn_id FROM unit_turns WHERE provider = 'attempt'").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("bulk", [False, True], ids=["per_turn", "bulk"])
def test_a_run_between_two_agents_takes_no_part_in_their_handoff(tmp_path, monkeypatch, bulk):
    """Claude Code edits, `attempt run` runs, Codex starts within 5 minutes: Codex's turn takes
    the handoff from Claude's (as if the run were not there), and the run's turn neither gives
    nor takes one; it is a unit of its own. The same whether givers are found one turn at a time
    or from one window over the project (a rebuild)."""
    if bulk:
        monkeypatch.setattr(units, "BULK_GIVERS", -1)
        monkeypatch.setattr(units, "FULL_RELABEL_LINKS", -1)
    b, without, envs = _with_run(WITHIN_FIVE, WITHIN_FIVE_RUN)
    path = str(tmp_path / "r.db")
    links, members, _ = _units(path, envs)
    run = _run_turn(path)
    a, c = b.expand("{trn:a_p}"), b.expand("{trn:b_p}")
    handoffs = [(t, g) for t, kind, _p, g in links if kind == "handoff"]
    assert handoffs == [(c, a)]
    assert all(run not in (t, g) for t, _k, _p, g in links)
    assert members[a] == members[c] != members[run]
    # judged as if the run were absent: the agents' links and units are those of the file without it
    links0, members0, _ = _units(str(tmp_path / "w.db"), without)
    assert [x for x in links if run not in (x[0], x[3])] == links0
    assert {t: u for t, u in members.items() if t != run} == members0


def test_a_long_run_neither_joins_the_next_agent_nor_hides_its_giver(tmp_path):
    """A run ending a minute before Gemini starts no longer gives Gemini the handoff (the old
    rule put Gemini in the run's unit); Claude's span, the latest-ending agent span before
    Gemini, gives it (21 min, src/parse.py shared), as in the file without the run."""
    b, without, envs = _with_run(ACROSS_A_LONG_RUN, ACROSS_A_LONG_RUN_RUN)
    path = str(tmp_path / "r.db")
    links, members, _ = _units(path, envs)
    run = _run_turn(path)
    a, g = b.expand("{trn:a_p}"), b.expand("{trn:g_p}")
    assert [(t, k, tgt) for t, k, _p, tgt in links] == [(g, "handoff", a)]
    assert members[a] == members[g] != members[run]
    links0, members0, _ = _units(str(tmp_path / "w.db"), without)
    assert links == links0 and {t: u for t, u in members.items() if t != run} == members0


def test_runs_between_agents_any_arrival_order_equal_a_rebuild(tmp_path):
    """Both scenarios in one project-stream: shuffled arrivals, one batch or several, give the
    same projection state (unit tables included), and `reproject` finds it clean."""
    envs = _with_run(WITHIN_FIVE, WITHIN_FIVE_RUN)[2] + _with_run(ACROSS_A_LONG_RUN, ACROSS_A_LONG_RUN_RUN)[2]
    want = state_of(envs, str(tmp_path / "base.db"))
    assert want["reproject_clean"]
    rng = random.Random(16)
    for i in range(4):
        order = list(envs)
        rng.shuffle(order)
        assert_same(state_of(order, str(tmp_path / f"s{i}.db"), batches=[3, 7] if i % 2 else None), want)


# --- a file whose units the old rule drew ----------------------------------------------------

OLD_RULE = re.compile(r"[\w.]*provider <> 'attempt'")
"""The conditions that leave provider `attempt` turns out of Rule 3: without them, the rule of
files written before migration 0016."""


def _old_rule(monkeypatch):
    """units.refresh runs the rule before 0016 (the run's turns give and take the handoff)."""
    real = units._sql
    changed = [n for n in units._STATEMENTS if OLD_RULE.sub("1", real(n)) != real(n)]
    assert {"givers", "priors"} <= set(changed), changed
    monkeypatch.setattr(units, "_sql", lambda name: OLD_RULE.sub("1", real(name)))


def test_a_file_from_before_0016_gets_the_new_units_when_opened(tmp_path, monkeypatch):
    """Units drawn by the old rule (the run between Claude and Codex gave and took the handoff)
    in a file at schema 15: opening it migrates it (0016), and its units are those of a file
    written by this rule, `reproject --check` clean. A project without a run is left as it was."""
    b, _without, envs = _with_run(WITHIN_FIVE, WITHIN_FIVE_RUN)
    other = json.loads(json.dumps(scenario.load("units_shared_path")).replace(ROOT, "/work/other")
                       .replace("acme/demo", "acme/other"))
    elsewhere = list(scenario.build(other).events)
    path, fresh = str(tmp_path / "old.db"), str(tmp_path / "new.db")
    want = _units(fresh, envs + elsewhere)
    with monkeypatch.context() as m:
        _old_rule(m)
        old = _units(path, envs + elsewhere)
    run = _run_turn(path)
    a, c = b.expand("{trn:a_p}"), b.expand("{trn:b_p}")
    assert sorted((t, g) for t, k, _p, g in old[0] if k == "handoff") == sorted([(run, a), (c, run)])
    assert old[2] != want[2]
    conn = apsw.Connection(path)
    conn.execute("PRAGMA user_version = 15")
    conn.close()
    marked = []
    real = units.refresh

    def spy(conn):
        marked.extend(r[0] for r in conn.execute(
            "SELECT DISTINCT s.project_id FROM unit_dirty d JOIN turn_facts t ON t.turn_id = d.turn_id "
            "JOIN session_facts s ON s.session_id = t.session_id"))
        return real(conn)
    monkeypatch.setattr(units, "refresh", spy)
    st = Store.open(path)
    try:
        assert st.user_version() == schema.latest()
        assert marked == [b.expand("{prj:default}")]  # only the project with a run is drawn again
        assert _read(st.conn) == want
        rep = rebuild.reproject(st.conn, write=False)
        assert rep.clean, rep.as_dict()
    finally:
        st.close()


def _runs(device, project, times, rng):
    """`attempt run` sessions in `project`, one at each of `times` (µs), 10 s to 15 min long,
    some failing (evidence/record.py's drafts, as `_attempt_env` builds them)."""
    from attemptdb import adapters
    from attemptdb.adapters.draft import Draft
    from attemptdb.ingest import privacy
    from attemptdb.model import event
    out = []
    for i, t in enumerate(times):
        psid, ok = f"cli-synth-{i}", rng.random() < 0.7
        steps = [("session_started", "session.started", t, None),
                 ("tool_call_started", "command.started", t + 1_000_000, None),
                 ("tool_call_finished" if ok else "tool_call_failed", "command.finished",
                  t + rng.randint(10, 900) * 1_000_000, ok)]
        steps.append(("session_ended", "session.stopped", steps[-1][2] + 1_000_000, None))
        for kind, name, at, result in steps:
            d = Draft("attempt", name, project["root"])
            d.kind, d.psid, d.session_missing, d.attrs = kind, psid, False, {}
            if kind.startswith("tool_call"):
                d.tool = {"name": "run", "category": "shell", "call_id": "r1"}
                d.put("command", "pytest -q")
                if result is True:
                    d.success(0)
                elif result is False:
                    d.failure(cls="test_failure", exit_code=1)
            ctx = adapters.Context(device, "local_semantic", project, at, hook_version="test")
            env = event.canonical(privacy.ingest(d.envelope(ctx), db_mode="local_semantic"))
            event.validate(env)
            out.append(env)
    return out


def test_runs_among_many_agent_sessions_kept_equal_rebuilt_in_any_batch_order(tmp_path, monkeypatch):
    """A project of many agents' sessions (synth) with `attempt run` sessions dropped between
    and inside their turns: appended in time order or in shuffled batches, the unit state is the
    same, equals a build from nothing, and `reproject` finds it clean."""
    from test_units import assert_kept_equals_rebuilt

    from attemptdb.devtools import synth
    monkeypatch.setattr(synth, "PROJECTS", 1)
    rng = random.Random(16)
    agents = list(synth.generate(6000, seed=7))
    first, last = agents[0]["observed_at"], agents[-1]["observed_at"]
    project = {k: v for k, v in agents[0]["project"].items() if k != "branch"}
    runs = _runs(agents[0]["device_id"], project, sorted(rng.randint(first, last) for _ in range(40)), rng)
    envs = sorted(agents + runs, key=lambda e: e["observed_at"])
    states = []
    for name, order in (("time", envs), ("shuffled", None)):
        if order is None:
            chunks = [envs[i:i + 100] for i in range(0, len(envs), 100)]
            rng.shuffle(chunks)
            order = [e for c in chunks for e in c]
        st = Store.open(str(tmp_path / f"{name}.db"))
        try:
            for i in range(0, len(order), 100):
                st.append([dict(e) for e in order[i:i + 100]])
            assert st.conn.execute("SELECT count(DISTINCT session_id) FROM unit_turns "
                                   "WHERE provider = 'attempt'").fetchone()[0] == 40
            assert st.conn.execute("SELECT count(*) FROM unit_links WHERE kind = 'handoff'").fetchone()[0] > 0
            assert_kept_equals_rebuilt(st)
            states.append(rebuild.dump(st.conn, units.UNIT_TABLES, portable=True))
        finally:
            st.close()
    assert states[0] == states[1]
