"""The fixed SQL of EVIDENCE FOR, TRACE, STATE and WHY: an entity's evidence, the causal edges
and their recursive walk, the state of sessions at a time, the rows WHY explains."""

from ..projections import ALGORITHM_VERSION
from .sqlgen import CAUSAL_EDGE_KINDS

# --- TRACE --------------------------------------------------------------------------------

# The causal edges, one view per kind of link (sql/70_edges.sql): (view, edge_kind, to-side guard,
# from-side guard). Each view is a join over stored, indexed columns, so a step of the walk is
# an index lookup per arm; a guard keeps an arm that can only touch one type of node (and that
# is costly to open: handoffs are judged when read) closed for the other nodes.
EDGE_ARMS = (
    ("edge_prompt_turn", "triggered", "turn", "event"),
    ("edge_prompt_attempt", "triggered", "attempt", "event"),
    ("edge_superseded", "superseded", "attempt", "attempt"),
    ("edge_retry_cause", "caused", "event", "event"),
    ("edge_failure_cause", "caused", "attempt", "event"),
    ("edge_blocked", "blocked", "session", "event"),
    ("edge_handoff", "handed_off", "session", "session"),
)
_NODE_PREFIX = {"turn": "trn_", "event": "ev_", "attempt": "att_", "session": "ses_", "work_unit": "wu_"}

UNIT_TURN_EDGES_SQL = """SELECT 'parent_of' AS edge_kind, 'work_unit' AS from_type, m.work_unit_id AS from_id,
       'turn' AS to_type, m.turn_id AS to_id, json_array(coalesce(t.prompt_event_id, t.first_event_id)) AS evidence,
       (SELECT w.confidence FROM work_units w WHERE w.work_unit_id = m.work_unit_id) AS confidence,
       'projection' AS edge_source
  FROM unit_turns m JOIN turn_facts t ON t.turn_id = m.turn_id"""
"""The structural edges from a work unit to its member turns (seed 003: parent_of also links
work_unit → turn; evidence the turn's prompt, else its first event; confidence the unit's).
sql/70_edges.sql has no view of them yet: TRACE reads this text, which is the view it asks for
(`CREATE VIEW edge_unit_turn AS` + this SELECT)."""
_EDGE_COLS = "e.edge_kind, e.from_type, e.from_id, e.to_type, e.to_id, e.evidence, e.confidence, e.edge_source"
EDGE_ORDER = "edge_source DESC, edge_kind, from_type, from_id, to_type, to_id"
"""The order of the `edges` view (its ordinal): TRACE lists edges of one depth in this order."""


def trace_sql(direction: str, arms: bool = True, units: bool = False) -> str:
    """The recursive CTE of TRACE (named parameters :start, :depth): one row per edge reached,
    at the first depth it was reached (kind 'edge'), then the edges one level past the limit
    (kind 'beyond': what the depth limit cut; the executor folds them into one `depth_limit`
    row with their evidence).

    Each causal kind of edge is its own view; the walk joins them one by one (one recursive
    SELECT per arm and direction) so every step is an index lookup, never a read of the whole
    graph. A node already on the path is not expanded again: cycles are cut, the closing edge
    is shown once. `arms=False` walks an `edges` table instead (a file whose edges are one
    stored table, such as the hand-built catalog databases of the tests).

    With `units`, a walk that starts at a work unit first steps to the unit's member turns (its
    structural parent_of edges, whatever the direction: a unit is made of its turns, and has no
    causes of its own), then walks the causal edges from them; no causal edge leads to a unit,
    so a walk from anything else never passes through one."""
    if not arms:
        return _trace_edges_sql(direction)
    seeds, steps = [], []
    pre = ""
    if units:
        pre = ("unit_conf(c) AS MATERIALIZED (SELECT w.confidence FROM work_units w "
               "WHERE substr(:start, 1, 3) = 'wu_' AND w.work_unit_id = :start),\n")
        arm = UNIT_TURN_EDGES_SQL.replace(
            "(SELECT w.confidence FROM work_units w WHERE w.work_unit_id = m.work_unit_id)", "(SELECT c FROM unit_conf)")
        seeds.append(f"SELECT 1, e.to_id, '|' || :start || '|', {_EDGE_COLS} FROM ({arm}) e "
                     f"WHERE substr(:start, 1, 3) = 'wu_' AND e.from_id = :start")
    for view, kind, to_type, from_type in EDGE_ARMS:
        if kind not in CAUSAL_EDGE_KINDS:
            continue
        for d, near, far, near_type in (("UP", "to_id", "from_id", to_type), ("DOWN", "from_id", "to_id", from_type)):
            if direction not in (d, "BOTH"):
                continue
            guard = f"substr(:start, 1, {len(_NODE_PREFIX[near_type])}) = '{_NODE_PREFIX[near_type]}'"
            seeds.append(f"SELECT 1, e.{far}, '|' || :start || '|', {_EDGE_COLS} FROM {view} e "
                         f"WHERE {guard} AND e.{near} = :start")
            wguard = f"substr(w.node, 1, {len(_NODE_PREFIX[near_type])}) = '{_NODE_PREFIX[near_type]}'"
            steps.append(f"SELECT w.depth + 1, e.{far}, w.path || w.node || '|', {_EDGE_COLS} FROM walk w "
                         f"JOIN {view} e ON e.{near} = w.node "
                         f"WHERE {wguard} AND w.depth <= :depth AND instr(w.path, '|' || w.node || '|') = 0")
    return f"""WITH RECURSIVE
{pre}walk(depth, node, path, edge_kind, from_type, from_id, to_type, to_id, evidence, confidence, edge_source) AS (
  {chr(10).join(("  UNION " if i else "") + q for i, q in enumerate(seeds))}
  UNION
  {chr(10).join(("  UNION " if i else "") + q for i, q in enumerate(steps))}
)
SELECT CASE WHEN r.first_depth <= :depth THEN 'edge' ELSE 'beyond' END AS row_kind, r.first_depth AS depth,
       r.edge_kind AS edge_type, r.from_type, r.from_id, r.to_type, r.to_id,
       (SELECT max(ev.observed_at) FROM events ev WHERE ev.event_id IN (SELECT value FROM json_each(r.evidence))) AS at,
       r.edge_source, r.evidence, r.confidence, '{ALGORITHM_VERSION}' AS algorithm_version
  FROM (SELECT w.*, min(w.depth) AS first_depth FROM walk w
        GROUP BY w.edge_kind, w.from_type, w.from_id, w.to_type, w.to_id, w.edge_source) r
 ORDER BY 2, 8 DESC, r.{EDGE_ORDER.replace(', ', ', r.')}"""


def _trace_edges_sql(direction: str) -> str:
    kinds = ", ".join(f"'{k}'" for k in CAUSAL_EDGE_KINDS)
    cols = _EDGE_COLS + ", e.algorithm_version"
    seeds, steps = [], []
    if direction in ("UP", "BOTH"):
        seeds.append(f"SELECT 1, e.ordinal, e.from_id, '|' || :start || '|', {cols} FROM edges e "
                     f"WHERE e.to_id = :start AND e.edge_kind IN ({kinds})")
        steps.append(f"SELECT w.depth + 1, e.ordinal, e.from_id, w.path || w.node || '|', {cols} FROM walk w "
                     f"JOIN edges e ON e.to_id = w.node AND e.edge_kind IN ({kinds}) "
                     f"WHERE w.depth <= :depth AND instr(w.path, '|' || w.node || '|') = 0")
    if direction in ("DOWN", "BOTH"):
        seeds.append(f"SELECT 1, e.ordinal, e.to_id, '|' || :start || '|', {cols} FROM edges e "
                     f"WHERE e.from_id = :start AND e.edge_kind IN ({kinds})")
        steps.append(f"SELECT w.depth + 1, e.ordinal, e.to_id, w.path || w.node || '|', {cols} FROM walk w "
                     f"JOIN edges e ON e.from_id = w.node AND e.edge_kind IN ({kinds}) "
                     f"WHERE w.depth <= :depth AND instr(w.path, '|' || w.node || '|') = 0")
    return f"""WITH RECURSIVE
walk(depth, ordinal, node, path, edge_kind, from_type, from_id, to_type, to_id, evidence, confidence,
     edge_source, algorithm_version) AS (
  {' UNION '.join(seeds)}
  UNION
  {' UNION '.join(steps)}
)
SELECT CASE WHEN r.first_depth <= :depth THEN 'edge' ELSE 'beyond' END AS row_kind, r.first_depth AS depth,
       r.edge_kind AS edge_type, r.from_type, r.from_id, r.to_type, r.to_id,
       (SELECT max(ev.observed_at) FROM events ev WHERE ev.event_id IN (SELECT value FROM json_each(r.evidence))) AS at,
       r.edge_source, r.evidence, r.confidence, r.algorithm_version
  FROM (SELECT w.*, min(w.depth) AS first_depth FROM walk w GROUP BY w.ordinal) r
 ORDER BY 2, 8 DESC, r.ordinal"""


# --- STATE --------------------------------------------------------------------------------

# STATE at :t is six queries, each reading one projection table once (a public table may be a
# view over the projection's facts; SQLite refuses a statement that expands deep views many
# times), and each looking rows up by the key the projection indexes: sessions, then attempts
# and turns by session, evidence by attempt id, tool calls by the ids their turn lists. The
# executor joins their rows by session.

def state_sessions_sql(scope: str, pick_open: bool) -> str:
    """Sessions in scope that had started by :t (with `pick_open`, only those that could be open
    at :t), with their status at :t: closed (ended by :t), open (activity within 30 minutes
    before :t, 12 hours while a blocking signal was pending) or stale. Named parameters :t, :t_open, :t_wait plus the scope's. `cand` is
    materialised: its last-event lookup is referenced several times and must run once per
    session, not once per reference. A session whose last event is at or before :t takes it
    from the session row; only sessions still active at :t look their last event up in the log."""
    # a session whose last event came more than 12 hours before :t cannot be open at :t; the
    # sessions still active at :t all pass (their last event is after :t)
    could_open = " AND s.last_event_at >= :t_wait" if pick_open else ""
    return f"""WITH cand AS MATERIALIZED (
  SELECT l.session_id, l.provider, l.project_id, l.project_name, l.coverage, l.started_at, l.ended_at,
         substr(l.le, 1, instr(l.le, ' ') - 1) AS last_activity_at, substr(l.le, instr(l.le, ' ') + 1) AS last_event_id
    FROM (SELECT s.session_id, s.provider, s.project_id, s.project_name, s.coverage, s.started_at, s.ended_at,
                 CASE WHEN s.last_event_at <= :t THEN s.last_event_at || ' ' || s.last_event_id
                      ELSE (SELECT e.observed_at || ' ' || e.event_id FROM events e
                             WHERE e.session_id = s.session_id AND e.observed_at <= :t
                               AND e.kind NOT IN ('correction', 'retraction') ORDER BY e.observed_at DESC LIMIT 1)
                 END AS le
            FROM sessions s
           WHERE s.retracted = 0 AND s.started_at <= :t{could_open}{scope}) l
),
st AS (
  SELECT c.*,
         CASE WHEN c.ended_at IS NOT NULL AND c.ended_at <= :t THEN 'closed'
              WHEN c.last_activity_at >= :t_open THEN 'open'
              WHEN c.last_activity_at >= :t_wait AND EXISTS (
                   SELECT 1 FROM signals g WHERE g.session_id = c.session_id AND g.blocking
                      AND g.raised_at <= :t AND (g.cleared_at IS NULL OR g.cleared_at > :t)) THEN 'open'
              ELSE 'stale' END AS status
    FROM cand c
)
SELECT * FROM st ORDER BY st.last_activity_at DESC, st.session_id"""


def state_summary_sql(scope: str) -> str:
    """Of the sessions in scope started by :t: how many, how many had ended by :t, and the
    last activity among those whose last event came at or before :t (the ones still active at
    :t are read per session by state_sessions_sql)."""
    return f"""SELECT count(*) AS started,
       coalesce(sum(s.ended_at IS NOT NULL AND s.ended_at <= :t), 0) AS ended,
       max(CASE WHEN s.last_event_at <= :t THEN s.last_event_at END) AS last_at
  FROM sessions s
 WHERE s.retracted = 0 AND s.started_at <= :t{scope}"""


STATE_ATTEMPTS_SQL = """SELECT a.session_id, a.attempt_id, a.started_at, a.ended_at, a.attempt_index, a.superseded_by,
       CASE WHEN a.corrected_at IS NOT NULL AND a.corrected_at > :t THEN coalesce(a.inferred_outcome, a.outcome)
            ELSE a.outcome END AS outcome,
       CASE WHEN a.corrected_at IS NOT NULL AND a.corrected_at > :t THEN coalesce(a.inferred_failure_class, a.failure_class)
            ELSE a.failure_class END AS failure_class
  FROM attempts a
 WHERE a.session_id IN (SELECT value FROM json_each(:sessions)) AND a.retracted = 0 AND a.started_at <= :t
 ORDER BY a.session_id, a.started_at, a.attempt_index, a.attempt_id"""

STATE_EVIDENCE_SQL = """SELECT a.attempt_id, a.evidence FROM attempts a
 WHERE a.attempt_id IN (SELECT value FROM json_each(:attempts))"""

STATE_SIGNALS_SQL = """SELECT g.session_id, g.event_id, g.kind, g.raised_at, g.confidence, g.evidence
  FROM signals g
 WHERE g.session_id IN (SELECT value FROM json_each(:sessions)) AND g.blocking AND g.raised_at <= :t
   AND (g.cleared_at IS NULL OR g.cleared_at > :t)
 ORDER BY g.session_id, g.raised_at, g.event_id"""

STATE_TURNS_SQL = """SELECT t.session_id, t.turn_id, t.turn_index, t.started_at, t.ended_at, t.status, t.prompt_event_id
  FROM turns t
 WHERE t.session_id IN (SELECT value FROM json_each(:sessions)) AND t.retracted = 0 AND t.started_at <= :t
 ORDER BY t.session_id, t.started_at, t.turn_index"""

STATE_IN_FLIGHT_SQL = """SELECT k.turn_id, k.tool_call_id
  FROM tool_calls k
 WHERE k.turn_id IN (SELECT value FROM json_each(:turns)) AND k.retracted = 0 AND k.started_at <= :t
   AND (k.finished_at IS NULL OR k.finished_at > :t)
 ORDER BY k.turn_id, k.started_at, k.tool_call_id"""
"""The calls of each session's current turn that were running at :t (read by the turn index)."""


# --- WHY ----------------------------------------------------------------------------------

ATTEMPT_SQL = ("SELECT attempt_id, session_id, provider, turn_id, turn_index, attempt_index, outcome, failure_class, "
               "approach, paths, superseded_by, corrected_by, corrected_at, inferred_outcome, evidence, confidence, "
               "started_at, ended_at FROM attempts WHERE attempt_id = ? AND NOT retracted")

FAILING_EVENT_SQL = ("SELECT e.event_id, e.observed_at, e.kind, e.tool_name FROM events e "
                     "WHERE e.event_id IN (SELECT value FROM json_each(?)) AND (e.kind IN "
                     "('tool_call_failed', 'permission_denied', 'turn_failed') OR e.outcome_status IN "
                     "('failure', 'denied')) ORDER BY e.observed_at DESC, e.seq DESC LIMIT 1")

SESSION_ROW_SQL = ("SELECT session_id, provider, project_name, state, coverage, last_event_id, last_event_at, "
                   "confidence FROM sessions WHERE session_id = ?")
