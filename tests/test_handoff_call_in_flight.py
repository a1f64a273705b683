"""A call still in flight is work in progress, not a quiet project (spec/projections.md §12, §16,
migration 0018): while Claude Code's long build runs (PreToolUse, no PostToolUse yet), Codex
beginning in the same project is concurrent, not a handoff, so the two agents editing one file
stay two units and their collision is a conflict. The call holds the span for at most 30 min
after its start (STALE_AFTER), and no longer than its turn's close or its session's end after
it; once it ends, the span ends at its last event as before. Kept per append and rebuilt from
nothing alike, in any arrival order; a file whose handoffs and units the old rule drew gets the
new ones when opened."""

import json
import os
import random

import apsw
import pytest
from test_projections_order import assert_same, state_of

from attemptdb import resources
from attemptdb.projections import rebuild, scenario, units
from attemptdb.store import schema
from attemptdb.store.database import Store

ROOT = "/work/demo"
PROJECTS = {"default": {"root": ROOT, "remote": "github.com/acme/demo"}}
CONFIG = "src/config.ts"


def _edit(path):
    return {"file_path": f"{ROOT}/{path}", "old_string": "3", "new_string": "5"}


def _patch(path):
    return {"input": f"*** Begin Patch\n*** Update File: {path}\n@@\n-3\n+5\n*** End Patch"}


def _ev(label, at, provider, session, payload):
    return {"label": label, "at": at, "provider": provider, "session": session, "payload": payload}


def _claude(build_end=None, session_end=None, start="10:00:00", stop=None):
    """Claude Code: a prompt, an edit of src/config.ts, then `npm run build` started at 10:00:05
    (ended at `build_end` if given); a stop and a session end when given (a stop before 10:00:05
    comes before the build)."""
    bash = {"command": "npm run build"}
    out = [_ev("a_st", start, "claude_code", "cc-1", {"hook_event_name": "SessionStart", "source": "startup"}),
           _ev("a_p", "10:00:01", "claude_code", "cc-1", {"hook_event_name": "UserPromptSubmit", "prompt": "tune config"}),
           _ev("a_e1", "10:00:02", "claude_code", "cc-1", {"hook_event_name": "PreToolUse", "tool_name": "Edit",
                                                          "tool_use_id": "t1", "tool_input": _edit(CONFIG)}),
           _ev("a_e1x", "10:00:03", "claude_code", "cc-1", {"hook_event_name": "PostToolUse", "tool_name": "Edit",
                                                           "tool_use_id": "t1", "tool_input": _edit(CONFIG),
                                                           "tool_response": {}}),
           _ev("a_b", "10:00:05", "claude_code", "cc-1", {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                                         "tool_use_id": "t2", "tool_input": bash})]
    if stop and stop < "10:00:05":
        out.insert(-1, _ev("a_stop", stop, "claude_code", "cc-1", {"hook_event_name": "Stop"}))
        stop = None
    if build_end:
        out.append(_ev("a_bx", build_end, "claude_code", "cc-1",
                       {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t2",
                        "tool_input": bash, "tool_response": {"exit_code": 0, "stdout": "built"}}))
    if stop:
        out.append(_ev("a_stop", stop, "claude_code", "cc-1", {"hook_event_name": "Stop"}))
    if session_end:
        out.append(_ev("a_end", session_end, "claude_code", "cc-1", {"hook_event_name": "SessionEnd",
                                                                     "reason": "logout"}))
    return out


def _codex(begin):
    """Codex begins at `begin` (HH:MM) and patches src/config.ts within the next few seconds."""
    at = [f"{begin}:0{i}" for i in range(5)]
    cx = "cx-1"
    return [_ev("b_st", at[0], "codex", cx, {"hook_event_name": "SessionStart", "source": "startup"}),
            _ev("b_p", at[1], "codex", cx, {"hook_event_name": "UserPromptSubmit", "prompt": "bump retries",
                                            "turn_id": "x1"}),
            _ev("b_c", at[2], "codex", cx, {"hook_event_name": "PreToolUse", "tool_name": "apply_patch",
                                            "tool_use_id": "c1", "tool_input": _patch(CONFIG), "turn_id": "x1"}),
            _ev("b_cx", at[3], "codex", cx, {"hook_event_name": "PostToolUse", "tool_name": "apply_patch",
                                             "tool_use_id": "c1", "tool_input": _patch(CONFIG), "turn_id": "x1",
                                             "tool_response": {"output": "Success. Updated the following files:\n"
                                                                         f"M {CONFIG}"}}),
            _ev("b_stop", at[4], "codex", cx, {"hook_event_name": "Stop", "turn_id": "x1"})]


def _built(name, events):
    return scenario.build({"name": name, "projects": PROJECTS, "events": events})


def _file(path, envs):
    st = Store.open(path)
    for e in envs:
        st.append([dict(e)])
    return st


def _read(conn, b):
    """(handoffs as (from_turn, to_turn, confidence), the two turns share a unit, conflicts as
    (first unit, second unit, paths)) of Claude's and Codex's turns."""
    a, c = b.expand("{trn:a_p}"), b.expand("{trn:b_p}")
    handoffs = conn.execute("SELECT from_turn, to_turn, confidence FROM handoffs").fetchall()
    members = dict(conn.execute("SELECT turn_id, work_unit_id FROM unit_turns"))
    conflicts = conn.execute("SELECT first_work_unit, second_work_unit, paths FROM conflicts").fetchall()
    return handoffs, members[a] == members[c], [(x, y, json.loads(p)) for x, y, p in conflicts], (a, c, members)


def _no_handoff_two_units_a_conflict(conn, b):
    handoffs, joined, conflicts, (a, c, members) = _read(conn, b)
    assert handoffs == []
    assert not joined
    assert conn.execute("SELECT count(*) FROM unit_links WHERE kind = 'handoff'").fetchone()[0] == 0
    assert conflicts == [(members[a], members[c], [CONFIG])]


def _handed_off(conn, b):
    handoffs, joined, conflicts, (a, c, _m) = _read(conn, b)
    assert [(f, t) for f, t, _c in handoffs] == [(a, c)]
    assert joined
    assert conflicts == []


# --- the rule ---------------------------------------------------------------------------------

def test_another_agent_beginning_while_a_call_is_in_flight_is_no_handoff(tmp_path):
    """Claude's build is still running when Codex begins (2 min later) and edits the file Claude
    edited: no handoff, two units, and the collision is a conflict. Then the build ends and
    Claude edits the file again: still two units and a conflict."""
    b = _built("in_flight", _claude() + _codex("10:02"))
    with _file(str(tmp_path / "a.db"), b.events) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)
        assert st.conn.execute("SELECT count(*) FROM tool_call_facts WHERE end_event_id IS NULL").fetchone()[0] == 1
        later = _built("in_flight", _claude() + _codex("10:02") + [
            _ev("a_bx", "10:09:00", "claude_code", "cc-1",
                {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t2",
                 "tool_input": {"command": "npm run build"}, "tool_response": {"exit_code": 0}}),
            _ev("a_e2", "10:09:30", "claude_code", "cc-1", {"hook_event_name": "PreToolUse", "tool_name": "Edit",
                                                           "tool_use_id": "t3", "tool_input": _edit(CONFIG)}),
            _ev("a_e2x", "10:09:31", "claude_code", "cc-1", {"hook_event_name": "PostToolUse", "tool_name": "Edit",
                                                            "tool_use_id": "t3", "tool_input": _edit(CONFIG),
                                                            "tool_response": {}})])
        for e in later.events[len(b.events):]:
            st.append([dict(e)])
        _no_handoff_two_units_a_conflict(st.conn, later)


def _minutes_ago(events, now="10:06:00"):
    """The same events dated "now": each HH:MM:SS becomes -HH:MM:SS before `now`."""
    def ago(at):
        h, m, sec = (int(x) for x in at.split(":"))
        nh, nm, ns = (int(x) for x in now.split(":"))
        d = (nh * 3600 + nm * 60 + ns) - (h * 3600 + m * 60 + sec)
        return f"-{d // 3600:02d}:{d // 60 % 60:02d}:{d % 60:02d}"
    return [dict(e, at=ago(e["at"])) for e in events]


def test_needs_you_names_the_collision_while_the_call_runs(tmp_path):
    """Happening now: Claude's build started six minutes ago and still runs, Codex began four
    minutes ago and patched the file Claude edited. Needs You lists the two open units colliding
    (before 0018, the handoff had joined them into one unit and nothing was listed)."""
    b = scenario.build({"name": "in_flight_now", "date": "now", "projects": PROJECTS,
                        "events": _minutes_ago(_claude() + _codex("10:02"))})
    with _file(str(tmp_path / "a.db"), b.events) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)
        _h, _j, conflicts, _m = _read(st.conn, b)
        rows = st.conn.execute("SELECT kind, work_unit_id, reason FROM needs_you WHERE kind = 'work_conflict'").fetchall()
        assert [(k, u) for k, u, _r in rows] == [("work_conflict", conflicts[0][1])]
        assert CONFIG in rows[0][2]


@pytest.mark.parametrize("bulk", [False, True], ids=["per_turn", "bulk"])
def test_the_same_when_givers_are_found_in_bulk(tmp_path, monkeypatch, bulk):
    """Per turn or from one window over the project (a rebuild), the units agree."""
    if bulk:
        monkeypatch.setattr(units, "BULK_GIVERS", -1)
        monkeypatch.setattr(units, "FULL_RELABEL_LINKS", -1)
    b = _built("in_flight", _claude() + _codex("10:02"))
    with _file(str(tmp_path / "a.db"), b.events) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)


def _late(st, b, label):
    """Append the event `label` of `b` (one that arrives after the others)."""
    st.append([dict(e) for e, step in zip(b.events, b.steps) if step["label"] == label])


def _without(b, label):
    return [e for e, step in zip(b.events, b.steps) if step["label"] != label]


def test_a_call_that_ended_before_the_other_agent_began_hands_off_as_before(tmp_path):
    """The build ended at 10:01:00, a minute before Codex began, but its end arrives last (a
    transcript import): until it does, the build reads in flight and there is no handoff; once it
    is there the project was quiet, Claude's span ends at its last event, and the handoff (shared
    edited path, 1 min gap) joins the units, as before 0018."""
    b = _built("ended_first", _claude(build_end="10:01:00") + _codex("10:02"))
    with _file(str(tmp_path / "a.db"), _without(b, "a_bx")) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)
        _late(st, b, "a_bx")
        _handed_off(st.conn, b)
        assert st.conn.execute("SELECT gap_ms FROM handoffs").fetchone()[0] == 60_000


def test_a_call_in_flight_holds_the_span_for_30_minutes_at_most(tmp_path):
    """The build started at 10:00:05 and never ended (a crashed agent): Codex beginning at 10:31,
    past the 30 min a call in flight holds, takes the handoff; its gap counts from the bound
    (10:30:05), where the giver was last taken to be at work."""
    b = _built("stale_call", _claude() + _codex("10:31"))
    with _file(str(tmp_path / "a.db"), b.events) as st:
        _handed_off(st.conn, b)
        assert st.conn.execute("SELECT gap_ms FROM handoffs").fetchone()[0] == 55_000
    # and at 10:29, within the bound, it is still concurrent
    b = _built("stale_call", _claude() + _codex("10:29"))
    with _file(str(tmp_path / "b.db"), b.events) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)


def test_a_giver_whose_session_ended_is_done_whatever_its_call(tmp_path):
    """Claude's session ended at 10:01:00 with the build still in flight: the giver is done, the
    handoff to Codex (10:02) stands, its gap from the session's end, with the +0.2 of an ended
    giver; the end arriving last takes the handoff back in. Ended at 10:03, after Codex began,
    the build was still running when Codex began: no handoff."""
    b = _built("session_ended", _claude(session_end="10:01:00") + _codex("10:02"))
    with _file(str(tmp_path / "a.db"), _without(b, "a_end")) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)
        _late(st, b, "a_end")
        _handed_off(st.conn, b)
        assert st.conn.execute("SELECT gap_ms, confidence FROM handoffs").fetchone() == (60_000, 0.8)
    b = _built("session_ended", _claude(session_end="10:03:00") + _codex("10:02"))
    with _file(str(tmp_path / "b.db"), b.events) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)


def test_a_call_started_after_its_turn_stopped_holds_until_the_session_ends(tmp_path):
    """Claude's turn stopped at 10:00:04 and the build started after it (a background agent's
    call): the stop before the call releases nothing, so Codex beginning at 10:02 is concurrent;
    the session's end at 10:01:00 (read from the log, the turn being closed already) ends it."""
    b = _built("after_stop", _claude(stop="10:00:04", session_end="10:01:00") + _codex("10:02"))
    with _file(str(tmp_path / "a.db"), _without(b, "a_end")) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)
        _late(st, b, "a_end")
        _handed_off(st.conn, b)
        assert st.conn.execute("SELECT gap_ms FROM handoffs").fetchone()[0] == 60_000


def test_a_turn_closed_after_its_call_started_releases_it(tmp_path):
    """Claude's turn stopped at 10:01:00 with the build's end never sent (an interrupt whose call
    end was lost; Codex's own Interrupt is a turn_failed with no call end): the turn's close says
    the agent left that call, so Codex beginning at 10:02 takes the handoff once the stop is
    there (before it arrives, the build reads in flight). Stopped at 10:03, after Codex began,
    the call held the span until then: no handoff."""
    b = _built("turn_closed", _claude(stop="10:01:00") + _codex("10:02"))
    with _file(str(tmp_path / "a.db"), _without(b, "a_stop")) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)
        _late(st, b, "a_stop")
        _handed_off(st.conn, b)
    b = _built("turn_closed", _claude(stop="10:03:00") + _codex("10:02"))
    with _file(str(tmp_path / "b.db"), b.events) as st:
        _no_handoff_two_units_a_conflict(st.conn, b)


# --- incremental = rebuilt, any arrival order ---------------------------------------------------

def test_any_arrival_order_equals_a_rebuild(tmp_path):
    """The cases as separate projects of one stream: shuffled arrivals, one by one or in
    batches, give the same projection state (unit tables and views included), and `reproject`
    finds it clean."""
    envs = []
    for i, (name, events) in enumerate((("in_flight", _claude() + _codex("10:02")),
                                        ("ended_first", _claude(build_end="10:01:00") + _codex("10:02")),
                                        ("stale_call", _claude() + _codex("10:31")),
                                        ("session_ended", _claude(session_end="10:01:00") + _codex("10:02")),
                                        ("turn_closed", _claude(stop="10:01:00") + _codex("10:02")),
                                        ("after_stop", _claude(stop="10:00:04", session_end="10:01:00")
                                         + _codex("10:02")),
                                        ("after_stop_open", _claude(stop="10:00:04") + _codex("10:02")))):
        root = f"/work/p{i}"
        scn = json.loads(json.dumps({"name": name, "projects": {"default": {"root": root,
                                                                             "remote": f"github.com/acme/p{i}"}},
                                     "events": events}).replace(ROOT, root).replace('"cc-1"', f'"cc-{i}"').replace('"cx-1"', f'"cx-{i}"'))
        envs += scenario.build(scn).events
    want = state_of(envs, str(tmp_path / "base.db"))
    assert want["reproject_clean"]
    st = _file(str(tmp_path / "check.db"), envs)
    try:  # handoffs in the projects where the giver had left its call, none where it was in it
        assert sorted(r[0] for r in st.conn.execute(
            "SELECT s.project_name FROM handoffs h JOIN sessions s ON s.session_id = h.to_session")) \
            == ["acme/p1", "acme/p2", "acme/p3", "acme/p4", "acme/p5"]
    finally:
        st.close()
    rng = random.Random(18)
    for i in range(4):
        order = list(envs)
        rng.shuffle(order)
        assert_same(state_of(order, str(tmp_path / f"s{i}.db"), batches=[4, 9] if i % 2 else None), want)


# --- a file whose handoffs and units the old rule drew -------------------------------------------

_PREDICATES = schema.predicates


def _old_predicates():
    """The shared predicates with no call in flight holding a span (the rule before 0018)."""
    preds = dict(_PREDICATES())
    preds["in_flight_until"] = ("TRN", "NULL")
    return preds


def _old_rule(monkeypatch):
    """units.refresh runs the rule before 0018: a call in flight holds no span, and Rule 1's
    concurrency reads the turn's activity alone."""
    real = units._STATEMENTS
    old = {k: v.replace("max(ct.active_until, CASE WHEN ct.open_calls > 0 THEN ct.span_end ELSE '' END)",
                        "ct.active_until") for k, v in real.items()}
    assert old["path_links"] != real["path_links"]
    monkeypatch.setattr(units, "_STATEMENTS", old)
    monkeypatch.setattr(units, "_SQL", {})
    monkeypatch.setattr(units.schema, "predicates", _old_predicates)


def _old_handoff_spans(conn):
    """Install the handoff_spans view as 0017 did."""
    with open(os.path.join(resources.folder("sql"), "60_handoffs.sql"), encoding="utf-8") as f:
        text = f.read()
    view = text[text.index("CREATE VIEW handoff_spans"):]
    view = view[:view.index(";\n") + 1]
    conn.execute("DROP VIEW handoff_spans")
    conn.execute(schema.expand(view, _old_predicates()))


def test_a_file_from_before_0018_loses_the_spurious_handoff_when_opened(tmp_path, monkeypatch):
    """A file at schema 17 whose units the old rule drew (Codex joined Claude's unit through the
    handoff while the build ran): opening it migrates it (0018); the handoff is gone, its units
    are those of a file written by this rule, and `reproject --check` is clean."""
    b = _built("in_flight", _claude() + _codex("10:02"))
    fresh, path = str(tmp_path / "new.db"), str(tmp_path / "old.db")
    with _file(fresh, b.events) as st:
        want = rebuild.dump(st.conn, units.UNIT_TABLES, portable=True)
    with monkeypatch.context() as m:
        _old_rule(m)
        with _file(path, b.events) as st:
            assert rebuild.dump(st.conn, units.UNIT_TABLES, portable=True) != want
            assert st.conn.execute("SELECT count(*) FROM unit_links WHERE kind = 'handoff'").fetchone()[0] == 1
    conn = apsw.Connection(path)
    _old_handoff_spans(conn)
    assert len(conn.execute("SELECT * FROM handoffs").fetchall()) == 1
    conn.execute("PRAGMA user_version = 17")
    conn.close()
    st = Store.open(path)
    try:
        assert st.user_version() == schema.latest()
        assert rebuild.dump(st.conn, units.UNIT_TABLES, portable=True) == want
        _no_handoff_two_units_a_conflict(st.conn, b)
        rep = rebuild.reproject(st.conn, write=False)
        assert rep.clean, rep.as_dict()
    finally:
        st.close()
