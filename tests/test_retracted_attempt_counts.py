"""A retracted attempt's events leave the session's counts (spec/projections.md §4, §11; seed 003:
a retraction's projections "behave as if they never happened", and counts have the retraction
rules applied; migration 0019). `sessions.event_count` drops the call events of a retracted
attempt exactly as retracting those events one by one does, whichever of the retraction and the
events arrives first; `status` and the retraction preview read the same number, and a later
session retraction's preview counts only the events still in the projections. A file written
before 0019 reads the right count once opened."""

import os

import apsw
import pytest

from attemptdb import resources
from attemptdb.projections import meta, rebuild, scenario
from attemptdb.store import schema
from attemptdb.store.database import Store

CACHE = "/work/demo/src/cache.py"


def _edit(tid, old, new):
    return {"tool_name": "Edit", "tool_use_id": tid, "tool_input": {"file_path": CACHE, "old_string": old, "new_string": new}}


def _pre(tid, old, new):
    return dict(_edit(tid, old, new), hook_event_name="PreToolUse")


EVENTS = [
    {"label": "st", "at": "09:00:00", "payload": {"hook_event_name": "SessionStart", "source": "startup"}},
    {"label": "p1", "at": "09:00:01", "payload": {"hook_event_name": "UserPromptSubmit", "prompt": "Speed up the cache"}},
    {"label": "e1s", "at": "09:00:02", "payload": _pre("t1", "a", "b")},
    {"label": "e1f", "at": "09:00:03", "payload": dict(_edit("t1", "a", "b"), hook_event_name="PostToolUseFailure",
                                                        error="String to replace not found in file")},
    {"label": "n1", "at": "09:00:04", "payload": {"hook_event_name": "Notification", "message": "waiting",
                                                   "notification_type": "idle_prompt"}},
    {"label": "e2s", "at": "09:00:05", "payload": _pre("t2", "c", "d")},
    {"label": "e2e", "at": "09:00:06", "payload": dict(_edit("t2", "c", "d"), hook_event_name="PostToolUse",
                                                        tool_response={})},
    {"label": "stop", "at": "09:00:07", "payload": {"hook_event_name": "Stop"}},
]
# the failed first attempt (anchored on its failing end) and its two call events
ATTEMPT_RETRACTION = {"label": "r", "at": "09:05:00", "retract": {"attempt": "{att:e1f}", "reason": "test"}}
EVENT_RETRACTIONS = [{"label": "r", "at": "09:05:00", "retract": {"event": "{ev:e1s}", "reason": "test"}},
                     {"label": "r2", "at": "09:05:01", "retract": {"event": "{ev:e1f}", "reason": "test"}}]


def _built(name, retractions, first):
    """The session with `retractions`, which arrive before every other event when `first`."""
    steps = list(EVENTS) + list(retractions)
    scn = {"name": name, "defaults": {"provider": "claude_code", "session": "m1"}, "events": steps}
    if first:
        labels = [s["label"] for s in steps]
        scn["arrival"] = [lab for lab in labels if lab.startswith("r")] + [lab for lab in labels if not lab.startswith("r")]
    return scenario.build(scn)


def _store(path, b):
    st = Store.open(path)
    st.append(scenario.arrival(b))
    return st


def _session(conn):
    """(event_count, tool_call_count, failure_count) of the one session, and the count of its
    fact events SQL reads as not retracted."""
    row = conn.execute("SELECT session_id, event_count, tool_call_count, failure_count FROM sessions").fetchall()
    assert len(row) == 1
    sid, events, calls, failures = row[0]
    sql = conn.execute("SELECT count(*) FROM events WHERE session_id = ? AND NOT retracted "
                       "AND kind NOT IN ('correction', 'retraction')", (sid,)).fetchone()[0]
    return (events, calls, failures), sql


@pytest.mark.parametrize("first", [False, True], ids=["retraction_after", "retraction_before"])
def test_attempt_retraction_takes_its_events_out_of_event_count(tmp_path, first):
    by_attempt = _built("att_counts", [ATTEMPT_RETRACTION], first)
    by_events = _built("att_counts", EVENT_RETRACTIONS, first)
    st = _store(str(tmp_path / "a.db"), by_attempt)
    try:
        (got, sql) = _session(st.conn)
        assert st.conn.execute("SELECT retracted FROM attempts WHERE attempt_id = ?",
                               (by_attempt.ref("att", "e1f"),)).fetchone()[0] == 1
        assert rebuild.reproject(st.conn, write=False).clean
    finally:
        st.close()
    st = _store(str(tmp_path / "e.db"), by_events)
    try:
        (one_by_one, sql_events) = _session(st.conn)
    finally:
        st.close()
    assert sql == sql_events == len(EVENTS) - 2
    assert got[0] == sql, "event_count still counts the retracted attempt's call events"
    assert got == one_by_one  # event_count, tool_call_count, failure_count: as if the events never happened


def test_no_retraction_no_change(tmp_path):
    b = _built("att_counts", [], False)
    st = _store(str(tmp_path / "n.db"), b)
    try:
        assert _session(st.conn) == ((len(EVENTS), 2, 1), len(EVENTS))
    finally:
        st.close()


def test_previews_of_a_later_session_retraction_count_what_is_left(tmp_path):
    """After the attempt retraction the session reads 6 events and 1 attempt, and retracting the
    session takes out those 6 (not the 8 it covers: 2 already left)."""
    b = _built("att_counts", [ATTEMPT_RETRACTION], False)
    st = _store(str(tmp_path / "p.db"), b)
    try:
        sid = st.conn.execute("SELECT session_id FROM sessions").fetchone()[0]
        assert meta.describe_target(st.conn, sid, "session")["event_count"] == len(EVENTS) - 2
        res = meta.retract(st, session=sid, reason="test", dry_run=True)
        assert res["retracted_events"] == len(EVENTS) - 2
        assert res["counts"]["retracted_events"] == {"before": 2, "after": len(EVENTS)}
        assert res["description"]["event_count"] == len(EVENTS) - 2
        assert res["description"]["attempts"] == 1  # the retracted one is not described as leaving
        # a first retraction still reports every event it takes out
        other = _built("att_counts", [], False)
        st2 = _store(str(tmp_path / "q.db"), other)
        try:
            res = meta.retract(st2, attempt=other.ref("att", "e1f"), reason="test", dry_run=True)
            assert res["retracted_events"] == 2
        finally:
            st2.close()
    finally:
        st.close()


# --- a file written before 0019 -----------------------------------------------------------------

def _old_session_views(conn):
    """Install `session_base` and `sessions` as they were before 0019 (event_count as stored), and
    the views between them again on the old base."""
    with open(os.path.join(resources.folder("sql"), "50_views.sql"), encoding="utf-8") as f:
        text = f.read()
    views = {}
    for name in ("session_base", "session_cover", "session_state", "sessions"):
        v = text[text.index(f"CREATE VIEW {name} AS"):]
        views[name] = v[:v.index(";\n") + 1]
    old_base = views["session_base"][:views["session_base"].index(",\n  s.event_count - ")] + "\nFROM session_facts s;"
    old_sessions = views["sessions"].replace("events AS event_count", "event_count")
    assert old_sessions != views["sessions"]
    for name in ("sessions", "session_state", "session_cover", "session_base"):
        conn.execute(f"DROP VIEW {name}")
    preds = schema.predicates()
    for v in (old_base, views["session_cover"], views["session_state"], old_sessions):
        conn.execute(schema.expand(v, preds))


def test_a_file_from_before_0019_reads_the_right_event_count_when_opened(tmp_path):
    b = _built("att_counts", [ATTEMPT_RETRACTION], False)
    path = str(tmp_path / "old.db")
    _store(path, b).close()
    conn = apsw.Connection(path)
    _old_session_views(conn)
    assert conn.execute("SELECT event_count FROM sessions").fetchone()[0] == len(EVENTS)  # the old count
    conn.execute("PRAGMA user_version = 18")
    conn.close()
    st = Store.open(path)
    try:
        assert st.user_version() == schema.latest() >= 19
        (got, sql) = _session(st.conn)
        assert got[0] == sql == len(EVENTS) - 2
        rep = rebuild.reproject(st.conn, write=False)
        assert rep.clean, rep.as_dict()
    finally:
        st.close()
