"""Reads at scale stay index reads: the plans AttemptQL's hot statements get from the stored
projection (spec/projections.md §13), and TRACE over the per-kind edge views equals a walk of
the whole `edges` view. Plans are checked on a small file — the plan, not the timing, is what a
large file would inherit. No timed assertions."""

import pytest

from attemptdb.projections import scenario
from attemptdb.query import fixed_sql as F
from attemptdb.query import result as query_result
from attemptdb.query import sqlgen as C
from attemptdb.query.parse import parse
from attemptdb.store.database import Store
from attemptdb.store.readonly import connect

NAMES = ("retry_supersession", "agents_and_supersession", "checks_and_failed_turns", "handoffs",
         "waits_per_agent", "retractions_and_late_events", "corrections")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = {}
    for name in NAMES:
        path = str(tmp_path_factory.mktemp("reads") / f"{name}.db")
        st = Store.open(path)
        for env in scenario.arrival(scenario.build(scenario.load(name))):
            st.append([env])
        st.close()
        out[name] = path
    return out


def plan(conn, sql, params=()):
    return [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def test_show_failed_attempts_reads_the_outcome_index_in_order(files):
    conn, gate = connect(files["retry_supersession"])
    ctx = query_result.Context(conn, "SHOW FAILED ATTEMPTS")
    p = C.compile_show(ctx, parse("SHOW FAILED ATTEMPTS").command)
    rows = plan(conn, p.rows.sql, p.rows.params)
    # the filter and the whole ORDER BY come off one index: no sort of the failed attempts
    assert any("attempt_facts_outcome (outcome=? AND retracted=?)" in r for r in rows), rows
    inner = [r for r in rows if "attempt_facts_outcome" in r or "TEMP B-TREE FOR ORDER BY" in r]
    assert inner[0].startswith("SEARCH a USING INDEX attempt_facts_outcome"), rows
    hidden = plan(conn, p.hidden.sql, p.hidden.params)
    # the count of hidden (retracted) failures: either index on (outcome, retracted, ...) serves it
    assert any("attempt_facts_outcome" in r or "attempt_facts_class" in r for r in hidden), hidden
    assert not any(r.startswith("SCAN") for r in hidden), hidden
    conn.close()


def test_counting_attempts_by_class_never_leaves_the_attempt_rows(files):
    conn, _ = connect(files["retry_supersession"])
    rows = plan(conn, "SELECT failure_class, count(*) FROM attempts WHERE outcome = 'failed' AND retracted = false "
                      "GROUP BY failure_class")
    assert any("attempt_facts_class (outcome=? AND retracted=?)" in r for r in rows), rows
    assert not any("GROUP BY" in r for r in rows), rows
    joined = [r for r in rows if any(t in r for t in ("session_facts", "turn_facts", "tool_call_facts"))]
    assert joined == [], rows
    conn.close()


def test_lookups_by_session_and_turn_use_indexes(files):
    conn, _ = connect(files["agents_and_supersession"])
    sid = conn.execute("SELECT session_id FROM sessions LIMIT 1").fetchone()[0]
    tid = conn.execute("SELECT turn_id FROM turns LIMIT 1").fetchone()[0]
    for sql, arg in (("SELECT attempt_id FROM attempts WHERE session_id = ? ORDER BY started_at", sid),
                     ("SELECT turn_id FROM turns WHERE session_id = ? ORDER BY started_at", sid),
                     ("SELECT tool_call_id FROM tool_calls WHERE turn_id = ?", tid),
                     ("SELECT tool_call_id FROM tool_calls WHERE session_id = ?", sid)):
        rows = plan(conn, sql, (arg,))
        assert not any(r.startswith("SCAN") and "CONSTANT" not in r for r in rows), (sql, rows)
    conn.close()


def test_trace_over_the_kind_views_equals_a_walk_of_the_edges_view(files):
    walked = 0
    for name, path in files.items():
        conn, _ = connect(path)
        nodes = [r[0] for r in conn.execute(
            "SELECT attempt_id FROM attempts UNION ALL SELECT session_id FROM sessions "
            "UNION ALL SELECT turn_id FROM turns UNION ALL SELECT event_id FROM events")]
        for node in nodes:
            for direction in ("UP", "DOWN", "BOTH"):
                arms = conn.execute(F.trace_sql(direction, True), {"start": node, "depth": 10}).fetchall()
                whole = conn.execute(F.trace_sql(direction, False), {"start": node, "depth": 10}).fetchall()
                assert [r[:12] for r in arms] == [r[:12] for r in whole], (name, node, direction)
                walked += len(arms)
        conn.close()
    assert walked > 0


def test_trace_steps_are_index_lookups(files, monkeypatch):
    """Every arm but the handoffs (judged across sessions when read, opened only for session
    nodes) is an index lookup per step: the plan scans only the walk itself."""
    monkeypatch.setattr(F, "EDGE_ARMS", tuple(a for a in F.EDGE_ARMS if a[0] != "edge_handoff"))
    conn, _ = connect(files["retry_supersession"])
    aid = conn.execute("SELECT attempt_id FROM attempts WHERE superseded_by IS NOT NULL").fetchone()[0]
    for direction in ("UP", "DOWN", "BOTH"):
        rows = plan(conn, F.trace_sql(direction, True), {"start": aid, "depth": 10})
        scans = [r for r in rows if r.startswith("SCAN ") and r.split()[1] not in ("w", "r", "CONSTANT")
                 and "VIRTUAL TABLE" not in r and not r.split()[1].startswith("(subquery")]
        assert scans == [], (direction, scans)
    conn.close()
