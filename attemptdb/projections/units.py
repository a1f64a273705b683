"""Work-unit membership (reference inference §2.9, spec/projections.md §16), kept current at the
end of every append, in its transaction, for the turns the append touched.

The triggers of sql/80_unit_marks.sql note in `unit_dirty` every turn whose inputs may have
changed; `refresh` then, with SQL statements over those turns:
1. re-reads each marked turn's span and edits (`unit_turns`, `unit_edits`) from the projected
   turns and calls (a retracted session takes no part; a retracted attempt's calls and a denied
   call edit nothing);
2. keeps the per-project session counts that make a path hot (`unit_projects`, `unit_paths`);
3. re-draws the links (`unit_links`) of every turn whose rule inputs changed: a marked turn whose
   start or edited paths changed, the turns after a marked one on its paths within the
   look-back (its activity and last edits are their inputs), the next turn of its session, the
   receivers a handoff from its span could reach; and, of every other turn on a path whose
   hotness flipped, only its link on that path (`unit_f`: nothing else it links by reads a
   path's hotness);
4. labels components: links only added merge units (the unit whose earliest member is earlier
   keeps its id, the other's members take it); a link or member removed labels the units it
   touched again from their links (a SQLite trigger cannot loop, so this one step is Python);
5. keeps each unit's edit window per path (`unit_path_windows`, what conflicts pair up): an
   edit that only grew widens it, anything else recounts it from the unit's members;
6. stores the state (`unit_state`, the view `unit_state_live` of sql/85_work_units.sql) of every
   unit a marked turn belongs or belonged to, that a merge or relabelling touched, or that a
   trigger noted in `unit_state_dirty` (a session's end or first capture); each of its columns is
   read by key or a bounded index range, so this too costs the append, not the unit.
The result equals a build from nothing (every turn marked), whatever order the events arrived
in: each row is a function of the projected turns and calls alone. A turn's own links do not
read its activity (a candidate edited the path before it did, so started before its activity
ends): a call that adds no path costs re-reading one turn and one probe per path it edited.
Only apsw and our own modules: the hook path appends through this.
"""

from ..store import schema

SIX_HOURS_US = 6 * 3600 * 1_000_000
ADJACENT_US = 10 * 60 * 1_000_000
LOOK_BACK = 32
HOT_MIN_SESSIONS = 5
MUTATING = "('file_write', 'file_edit', 'notebook')"
FULL_RELABEL_LINKS = 2000  # past this many new links (a rebuild), label components in one pass
BULK_GIVERS = 200  # past this many re-linked turns, find givers with one window over their projects

UNIT_TABLES = ("unit_turns", "unit_edits", "unit_projects", "unit_paths", "unit_links", "unit_index",
               "unit_path_windows", "unit_state")
"""The stored unit state (compared by `attempt reproject` like every other projection table)."""

_SQL: dict = {}


def _sql(name: str) -> str:
    """A statement of this module with the shared predicates (sql/00_predicates.sql) expanded."""
    got = _SQL.get(name)
    if got is None:
        got = _SQL[name] = schema.expand(_STATEMENTS[name], schema.predicates())
    return got


_OTHERS_DIRTY = "turn_id NOT IN (SELECT turn_id FROM temp.unit_d)"
_RELINKED = "SELECT turn_id FROM temp.unit_w UNION SELECT turn_id FROM temp.unit_f"
"""The turns whose links are drawn again, in whole (unit_w) or in part (unit_f)."""

# links: one per edited path (the best of the LOOK_BACK turns before it on that path that is
# not concurrent and edited it within 6 h), for the edits `edits` names. A candidate holding a
# call in flight is at work through its handoff span's end (spec/projections.md §16, Rule 1)
_PATH_LINKS = f"""
INSERT INTO unit_links (turn_id, kind, path, target_turn_id)
SELECT * FROM (
  SELECT e.turn_id AS turn_id, 'path' AS kind, e.path AS path, (
    SELECT c.turn_id FROM unit_edits c JOIN unit_turns ct ON ct.turn_id = c.turn_id
    WHERE c.project_id = e.project_id AND c.path = e.path AND c.edit_key < e.edit_key
      AND c.edit_key >= coalesce((SELECT f.edit_key FROM unit_edits f
                                  WHERE f.project_id = e.project_id AND f.path = e.path AND f.edit_key < e.edit_key
                                  ORDER BY f.edit_key DESC LIMIT 1 OFFSET {LOOK_BACK - 1}), '')
      AND NOT (ct.session_id <> t.session_id AND ct.started_at <= t.active_until
               AND t.started_at <= max(ct.active_until, CASE WHEN ct.open_calls > 0 THEN ct.span_end ELSE '' END))
      AND @us(c.last_edit) >= @us(e.first_edit) - {SIX_HOURS_US}
    ORDER BY ct.session_id = t.session_id DESC, c.last_edit DESC, c.edit_key DESC LIMIT 1) AS target
  FROM {{edits}} JOIN unit_turns t ON t.turn_id = e.turn_id
  WHERE NOT coalesce((SELECT p.hot FROM unit_paths p WHERE p.project_id = e.project_id AND p.path = e.path), 0))
WHERE target IS NOT NULL"""

_STATEMENTS = {
    "temp": """
CREATE TEMP TABLE IF NOT EXISTS unit_d (turn_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_w (turn_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_f (turn_id, path, PRIMARY KEY (turn_id, path)) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_old_turns (turn_id TEXT PRIMARY KEY, project_id, session_id, turn_index,
  started_at, first_event_id, order_key, work_unit_id, begins, span_end, giver_turn_id, giver_session_id) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_old_edits (project_id, path, edit_key, turn_id, session_id, first_edit,
  last_edit, lines_added, lines_removed, first_event, last_event, PRIMARY KEY (project_id, path, edit_key)) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_recounted (work_unit_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_priors (turn_id TEXT PRIMARY KEY, prior) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_old_links (turn_id, kind, path, target_turn_id,
  PRIMARY KEY (turn_id, kind, path)) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS unit_s (work_unit_id TEXT PRIMARY KEY) WITHOUT ROWID;""",
    "save": """
INSERT INTO temp.unit_d SELECT turn_id FROM unit_dirty;
DELETE FROM unit_dirty;
INSERT INTO temp.unit_old_turns SELECT u.turn_id, u.project_id, u.session_id, u.turn_index, u.started_at,
  u.first_event_id, u.order_key, u.work_unit_id, u.begins, u.span_end, u.giver_turn_id, u.giver_session_id
  FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id;
INSERT INTO temp.unit_old_edits SELECT e.project_id, e.path, e.edit_key, e.turn_id, e.session_id, e.first_edit,
  e.last_edit, e.lines_added, e.lines_removed, e.first_event, e.last_event
  FROM temp.unit_d d CROSS JOIN unit_edits e ON e.turn_id = d.turn_id;
DELETE FROM unit_edits WHERE turn_id IN (SELECT turn_id FROM temp.unit_d);
DELETE FROM unit_turns WHERE turn_id IN (SELECT turn_id FROM temp.unit_d);""",
    # 1. the marked turns' inputs, read again (span_end: the handoff span of sql/60_handoffs.sql,
    # a call in flight holding it open: @in_flight_until)
    "turns": """
INSERT INTO unit_turns (turn_id, project_id, session_id, provider, turn_index, started_at, ended_at, active_until,
                        begins, span_end, first_event_id, stop_event_id, order_key, giver_turn_id, giver_session_id, open_calls,
                        loose_calls, attempt_ids, failed_attempts, waiting_since, work_unit_id)
SELECT t.turn_id, s.project_id, t.session_id, s.provider, t.turn_index, t.started_at, t.ended_at,
  max(t.started_at, coalesce(t.ended_at, ''), coalesce(k.last_at, '')),
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN min(s.started_at, t.started_at) ELSE t.started_at END,
  max(t.started_at, CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_at, t.last_at) ELSE t.last_at END,
      coalesce(@in_flight_until(t), '')),
  t.first_event_id, t.stop_event_id, t.started_at || '|' || t.session_id || '|' || printf('%010d', t.turn_index),
  o.giver_turn_id, o.giver_session_id, coalesce(k.open_calls, 0), coalesce(k.loose_calls, 0),
  (SELECT json_group_array(attempt_id) FROM (SELECT a.attempt_id FROM attempt_facts a
     WHERE a.turn_id = t.turn_id AND a.retraction = 0 ORDER BY a.started_at, a.attempt_index)),
  (SELECT count(*) FROM attempt_facts a WHERE a.turn_id = t.turn_id AND a.retraction = 0
     AND a.outcome IN ('failed', 'superseded')),
  (SELECT g.raised_at || '|' || g.event_id FROM signal_facts g WHERE g.session_id = t.session_id AND g.turn_id = t.turn_id
     AND g.cleared_at IS NULL AND g.blocking = 1 ORDER BY g.raised_at DESC, g.event_id DESC LIMIT 1),
  coalesce(o.work_unit_id, 'wu_' || substr(t.first_event_id, 4))
FROM temp.unit_d d CROSS JOIN turn_facts t ON t.turn_id = d.turn_id
JOIN session_facts s ON s.session_id = t.session_id
LEFT JOIN temp.unit_old_turns o ON o.turn_id = t.turn_id
-- the turn's calls, read once (a retracted attempt's calls do not count; checked only when the
-- session has one)
LEFT JOIN (SELECT c.turn_id, max(max(c.first_at, coalesce(c.finished_at, c.first_at))) AS last_at,
                  sum(c.end_event_id IS NULL) AS open_calls, sum(c.pairing <> 'call_id') AS loose_calls
           FROM temp.unit_d d2 CROSS JOIN tool_call_facts c ON c.turn_id = d2.turn_id
           CROSS JOIN session_facts cs ON cs.session_id = c.session_id
           WHERE NOT cs.retracted_attempts
              OR NOT EXISTS (SELECT 1 FROM attempt_facts a WHERE a.group_key = c.attempt_key AND a.retraction > 0)
           GROUP BY c.turn_id) k ON k.turn_id = t.turn_id
WHERE s.retraction = 0""",
    "edits": f"""
INSERT INTO unit_edits (project_id, path, edit_key, turn_id, session_id, first_edit, last_edit,
                        lines_added, lines_removed, first_event, last_event)
SELECT project_id, path, substr(min(k), 1, 27) || '|' || turn_id, turn_id, session_id, substr(min(k), 1, 27),
  substr(max(k), 1, 27), sum(added), sum(removed), substr(min(k), 29), substr(max(k), 29)
FROM (
  SELECT u.project_id, q.value AS path, u.turn_id, u.session_id,
    coalesce(c.finished_at, c.started_at, c.first_at) || '|' || coalesce(c.end_event_id, c.start_event_id) AS k,
    coalesce(c.lines_added, 0) AS added, coalesce(c.lines_removed, 0) AS removed
  FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id CROSS JOIN tool_call_facts c ON c.turn_id = u.turn_id
  CROSS JOIN session_facts cs ON cs.session_id = c.session_id, json_each(c.paths) q
  WHERE c.tool_category IN {MUTATING} AND q.type = 'text' AND c.outcome_status IS NOT 'denied'
    AND (NOT cs.retracted_attempts
         OR NOT EXISTS (SELECT 1 FROM attempt_facts a WHERE a.group_key = c.attempt_key AND a.retraction > 0)))
GROUP BY turn_id, path""",
    # 2. counters: the (project, session) and (project, path, session) pairs that appeared or left
    # (compound SELECTs run left to right: each difference is a subquery of its own)
    "session_pairs": """
SELECT * FROM (SELECT project_id, session_id FROM temp.unit_old_turns
               EXCEPT SELECT u.project_id, u.session_id FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id)
UNION
SELECT * FROM (SELECT u.project_id, u.session_id FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id
               EXCEPT SELECT project_id, session_id FROM temp.unit_old_turns)""",
    "path_pairs": """
SELECT * FROM (SELECT project_id, path, session_id FROM temp.unit_old_edits
               EXCEPT SELECT e.project_id, e.path, e.session_id FROM temp.unit_d d CROSS JOIN unit_edits e ON e.turn_id = d.turn_id)
UNION
SELECT * FROM (SELECT e.project_id, e.path, e.session_id FROM temp.unit_d d CROSS JOIN unit_edits e ON e.turn_id = d.turn_id
               EXCEPT SELECT project_id, path, session_id FROM temp.unit_old_edits)""",
    # 3. the turns whose links are drawn again: marked turns that are new or gone, whose start,
    # session or first edits changed ...
    "own": """
INSERT OR IGNORE INTO temp.unit_w
SELECT turn_id FROM (
  SELECT turn_id, session_id, started_at, first_event_id, begins FROM temp.unit_old_turns
  EXCEPT SELECT u.turn_id, u.session_id, u.started_at, u.first_event_id, u.begins
         FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id)
UNION
SELECT turn_id FROM (
  SELECT u.turn_id, u.session_id, u.started_at, u.first_event_id, u.begins
  FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id
  EXCEPT SELECT turn_id, session_id, started_at, first_event_id, begins FROM temp.unit_old_turns)
UNION
SELECT turn_id FROM (
  SELECT turn_id, path, edit_key FROM temp.unit_old_edits
  EXCEPT SELECT e.turn_id, e.path, e.edit_key FROM temp.unit_d d CROSS JOIN unit_edits e ON e.turn_id = d.turn_id)
UNION
SELECT turn_id FROM (
  SELECT e.turn_id, e.path, e.edit_key FROM temp.unit_d d CROSS JOIN unit_edits e ON e.turn_id = d.turn_id
  EXCEPT SELECT turn_id, path, edit_key FROM temp.unit_old_edits)""",
    # ... the LOOK_BACK + 1 turns after a marked turn on each path it edits or edited ...
    "after_on_path": f"""
INSERT OR IGNORE INTO temp.unit_w
SELECT e.turn_id FROM (
    SELECT project_id, path, edit_key FROM temp.unit_old_edits
    UNION SELECT e.project_id, e.path, e.edit_key FROM temp.unit_d d CROSS JOIN unit_edits e ON e.turn_id = d.turn_id) k
CROSS JOIN unit_edits e ON e.project_id = k.project_id AND e.path = k.path AND e.edit_key > k.edit_key
  AND e.edit_key <= coalesce((SELECT f.edit_key FROM unit_edits f WHERE f.project_id = k.project_id
                              AND f.path = k.path AND f.edit_key > k.edit_key
                              ORDER BY f.edit_key LIMIT 1 OFFSET {LOOK_BACK}), '~')""",
    # ... and the next turn of its session (its adjacency reads the marked turn's end)
    "next_in_session": """
INSERT OR IGNORE INTO temp.unit_w
SELECT nx FROM (
  SELECT (SELECT x.turn_id FROM unit_turns x WHERE x.session_id = o.session_id AND x.turn_index > o.turn_index
          ORDER BY x.turn_index LIMIT 1) AS nx
  FROM (SELECT session_id, turn_index FROM temp.unit_old_turns
        UNION SELECT u.session_id, u.turn_index FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id) o)
WHERE nx IS NOT NULL""",
    # ... and the receivers a handoff from a marked turn's span could reach or stop reaching
    # (their giver is the latest-ending span sorted before them, which must end by their begin:
    # the spans beginning after a marked one, up to 30 min past its end), and the receivers in a
    # marked turn's session, or with a giver there, whose shared paths that session may change
    "handoff_receivers": """
INSERT OR IGNORE INTO temp.unit_w
SELECT r.turn_id FROM (
    SELECT o.project_id, o.begins, max(o.span_end, coalesce(s.ended_at, '')) AS ends FROM temp.unit_old_turns o
      LEFT JOIN session_facts s ON s.session_id = o.session_id
    UNION SELECT u.project_id, u.begins, max(u.span_end, coalesce(s.ended_at, '')) FROM temp.unit_d d
      CROSS JOIN unit_turns u ON u.turn_id = d.turn_id LEFT JOIN session_facts s ON s.session_id = u.session_id) k
CROSS JOIN unit_turns r ON r.project_id = k.project_id AND r.begins > k.begins
  AND r.begins <= strftime('%Y-%m-%dT%H:%M:%f', k.ends, '+31 minutes') || '000Z'
  AND @us(r.begins) <= @us(k.ends) + 1800000000
UNION
SELECT r.turn_id FROM (
    SELECT session_id FROM temp.unit_old_turns
    UNION SELECT u.session_id FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id) k
CROSS JOIN unit_turns r INDEXED BY unit_turns_receivers ON r.session_id = k.session_id AND r.giver_turn_id IS NOT NULL
UNION
SELECT r.turn_id FROM (
    SELECT session_id FROM temp.unit_old_turns
    UNION SELECT u.session_id FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id) k
CROSS JOIN unit_turns r INDEXED BY unit_turns_giver_session ON r.giver_session_id = k.session_id""",
    # ... and every turn with a link to a marked turn (whatever the rule: a target may be gone)
    "linked_to": """
INSERT OR IGNORE INTO temp.unit_w
SELECT l.turn_id FROM temp.unit_d d CROSS JOIN unit_links l ON l.target_turn_id = d.turn_id
UNION SELECT r.turn_id FROM temp.unit_d d CROSS JOIN unit_turns r ON r.giver_turn_id = d.turn_id""",
    "flipped": """
INSERT OR IGNORE INTO temp.unit_f
SELECT turn_id, path FROM unit_edits WHERE project_id = ? AND path = ? AND turn_id NOT IN (SELECT turn_id FROM temp.unit_w)""",
    # the links before: every link of a re-linked turn (all re-drawn) or of a turn with a flipped
    # path (only the ones on that path re-drawn), so the labelling compares whole link sets
    "save_links": f"""
INSERT INTO temp.unit_old_links SELECT l.* FROM ({_RELINKED}) w CROSS JOIN unit_links l ON l.turn_id = w.turn_id;
DELETE FROM unit_links WHERE turn_id IN (SELECT turn_id FROM temp.unit_w);
DELETE FROM unit_links WHERE kind = 'path' AND (turn_id, path) IN (SELECT turn_id, path FROM temp.unit_f);""",
    # links: one per edited path (_PATH_LINKS), of every edit of a re-linked turn and of the
    # other turns' edits on a flipped path ...
    "path_links": _PATH_LINKS.format(edits="temp.unit_w w CROSS JOIN unit_edits e ON e.turn_id = w.turn_id"),
    "flipped_links": _PATH_LINKS.format(
        edits="temp.unit_f f CROSS JOIN unit_edits e ON e.turn_id = f.turn_id AND e.path = f.path"),
    # ... and the same session's previous turn, when this one started within 10 min of its end
    "adjacent_links": f"""
INSERT INTO unit_links (turn_id, kind, path, target_turn_id)
SELECT t.turn_id, 'adjacent', '', p.turn_id
FROM temp.unit_w w CROSS JOIN unit_turns t ON t.turn_id = w.turn_id
CROSS JOIN unit_turns p ON p.turn_id = (SELECT x.turn_id FROM unit_turns x WHERE x.session_id = t.session_id
                                   AND x.turn_index < t.turn_index ORDER BY x.turn_index DESC LIMIT 1)
WHERE p.ended_at IS NOT NULL AND @us(t.started_at) - @us(p.ended_at) <= {ADJACENT_US}""",
    # ... and a handoff's receiving turn to its giver (sql/60_handoffs.sql's rule: the giver of
    # another session and provider ended by the receiver's begin; within 30 min with an edited
    # path the receiving session touches from its begin on, or within 5 min without one). Only
    # agents give and take: a turn of provider `attempt` (`attempt run`, `attempt note`, the
    # Recorder) has no giver, and its span is not among those a giver is sought in
    "givers_bulk": """
UPDATE unit_turns SET (giver_turn_id, giver_session_id) = (
  SELECT x.giver, x.gs FROM (
    SELECT substr(p.prior, 29) AS giver, g.session_id AS gs, g.provider AS gp, g.span_end AS ge,
      max(g.span_end, coalesce((SELECT s.ended_at FROM session_facts s WHERE s.session_id = g.session_id
                                AND s.ended_at <= unit_turns.begins), '')) AS giver_last
    FROM temp.unit_priors p JOIN unit_turns g ON g.turn_id = substr(p.prior, 29)
    WHERE p.turn_id = unit_turns.turn_id) x
  WHERE x.ge <= unit_turns.begins AND x.gs <> unit_turns.session_id AND x.gp <> unit_turns.provider
    AND unit_turns.provider <> 'attempt' AND @us(unit_turns.begins) - @us(x.giver_last) BETWEEN 0 AND 1800000000)
WHERE turn_id IN (SELECT turn_id FROM temp.unit_w)""",
    # the latest-ending agent span sorted before each agent turn of the projects of many re-linked turns
    "priors": """
INSERT INTO temp.unit_priors (turn_id, prior)
SELECT turn_id, prior FROM (
  SELECT sp.turn_id, max(sp.span_end || ' ' || sp.turn_id) OVER (
           PARTITION BY sp.project_id ORDER BY sp.begins, sp.session_id, sp.started_at, sp.turn_id
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior
  FROM unit_turns sp
  WHERE sp.provider <> 'attempt' AND sp.project_id IN (SELECT DISTINCT t.project_id FROM temp.unit_w w CROSS JOIN unit_turns t ON t.turn_id = w.turn_id))
WHERE prior IS NOT NULL AND turn_id IN (SELECT turn_id FROM temp.unit_w)""",
    "givers": """
UPDATE unit_turns SET (giver_turn_id, giver_session_id) = (
  SELECT x.giver, x.gs FROM (
    SELECT g.turn_id AS giver, g.session_id AS gs, g.provider AS gp, g.span_end AS ge,
      max(g.span_end, coalesce((SELECT s.ended_at FROM session_facts s WHERE s.session_id = g.session_id
                                AND s.ended_at <= unit_turns.begins), '')) AS giver_last
    FROM unit_turns g INDEXED BY unit_turns_span_end  -- newest end first: the first span sorted before wins
    WHERE g.project_id = unit_turns.project_id AND g.provider <> 'attempt'
      AND (g.begins, g.session_id, g.started_at, g.turn_id)
          < (unit_turns.begins, unit_turns.session_id, unit_turns.started_at, unit_turns.turn_id)
    ORDER BY g.span_end DESC, g.turn_id DESC LIMIT 1) x
  WHERE x.ge <= unit_turns.begins AND x.gs <> unit_turns.session_id AND x.gp <> unit_turns.provider
    AND unit_turns.provider <> 'attempt' AND @us(unit_turns.begins) - @us(x.giver_last) BETWEEN 0 AND 1800000000)
WHERE turn_id IN (SELECT turn_id FROM temp.unit_w)""",
    "handoff_links": f"""
INSERT INTO unit_links (turn_id, kind, path, target_turn_id)
SELECT h.turn_id, 'handoff', '', h.giver FROM (
  SELECT r.turn_id, g.turn_id AS giver, r.begins, r.session_id AS rs, g.session_id AS gs,
    max(g.span_end, coalesce((SELECT s.ended_at FROM session_facts s WHERE s.session_id = g.session_id
                              AND s.ended_at <= r.begins), '')) AS giver_last
  FROM temp.unit_w w CROSS JOIN unit_turns r ON r.turn_id = w.turn_id CROSS JOIN unit_turns g ON g.turn_id = r.giver_turn_id) h
WHERE @us(h.begins) - @us(h.giver_last) <= 300000000 OR EXISTS (
  SELECT 1 FROM tool_call_facts gc, json_each(gc.paths) q
  WHERE gc.session_id = h.gs AND gc.tool_category IN {MUTATING} AND gc.first_at <= h.begins
    AND NOT EXISTS (SELECT 1 FROM attempt_facts a WHERE a.group_key = gc.attempt_key AND a.retraction > 0)
    AND EXISTS (SELECT 1 FROM tool_call_facts rc, json_each(rc.paths) q2
                WHERE rc.session_id = h.rs AND q2.value = q.value
                  AND max(rc.first_at, coalesce(rc.finished_at, rc.first_at)) >= h.begins
                  AND NOT EXISTS (SELECT 1 FROM attempt_facts a WHERE a.group_key = rc.attempt_key AND a.retraction > 0)))""",
    # 4. what changed for the labelling
    "added": f"""
SELECT turn_id, target_turn_id FROM unit_links WHERE turn_id IN ({_RELINKED})
EXCEPT SELECT turn_id, target_turn_id FROM temp.unit_old_links""",
    "removed": f"""
SELECT 1 FROM (SELECT turn_id, target_turn_id FROM temp.unit_old_links
               EXCEPT SELECT turn_id, target_turn_id FROM unit_links WHERE turn_id IN ({_RELINKED}))
LIMIT 1""",
    "moved": """
SELECT 1 FROM temp.unit_old_turns o
WHERE NOT EXISTS (SELECT 1 FROM unit_turns u WHERE u.turn_id = o.turn_id AND u.order_key = o.order_key
                  AND u.first_event_id = o.first_event_id)
LIMIT 1""",
    "new": """
INSERT OR REPLACE INTO unit_index (work_unit_id, project_id, first_turn_id, started_at)
SELECT u.work_unit_id, u.project_id, u.turn_id, u.started_at FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id
WHERE u.turn_id NOT IN (SELECT turn_id FROM temp.unit_old_turns)""",
    # 5. edit windows per unit and path: a marked turn's edit that only grew (a new path, a later
    # last edit, more lines) widens its unit's window; anything else (a row gone, a first edit
    # moved, fewer lines) recounts that window from the unit's members. Units labelled again
    # were recounted whole (unit_recounted).
    "window_growth": """
INSERT INTO unit_path_windows (work_unit_id, project_id, path, first_key, last_key, lines_added, lines_removed)
SELECT u.work_unit_id, n.project_id, n.path, n.first_edit || '|' || n.first_event, n.last_edit || '|' || n.last_event,
  n.lines_added - coalesce(o.lines_added, 0), n.lines_removed - coalesce(o.lines_removed, 0)
FROM temp.unit_d d CROSS JOIN unit_edits n ON n.turn_id = d.turn_id CROSS JOIN unit_turns u ON u.turn_id = n.turn_id
LEFT JOIN temp.unit_old_edits o ON o.turn_id = n.turn_id AND o.path = n.path
WHERE u.work_unit_id NOT IN (SELECT work_unit_id FROM temp.unit_recounted)
  AND (o.turn_id IS NULL OR (n.first_edit = o.first_edit AND n.first_event = o.first_event AND n.last_edit >= o.last_edit
                             AND n.lines_added >= o.lines_added AND n.lines_removed >= o.lines_removed))
ON CONFLICT (work_unit_id, path) DO UPDATE SET first_key = min(first_key, excluded.first_key),
  last_key = max(last_key, excluded.last_key), lines_added = lines_added + excluded.lines_added,
  lines_removed = lines_removed + excluded.lines_removed""",
    "window_shrunk": """
SELECT u.work_unit_id, n.project_id, n.path
FROM temp.unit_d d CROSS JOIN unit_edits n ON n.turn_id = d.turn_id CROSS JOIN unit_turns u ON u.turn_id = n.turn_id
JOIN temp.unit_old_edits o ON o.turn_id = n.turn_id AND o.path = n.path
WHERE u.work_unit_id NOT IN (SELECT work_unit_id FROM temp.unit_recounted)
  AND NOT (n.first_edit = o.first_edit AND n.first_event = o.first_event AND n.last_edit >= o.last_edit
           AND n.lines_added >= o.lines_added AND n.lines_removed >= o.lines_removed)
UNION
SELECT u.work_unit_id, o.project_id, o.path
FROM temp.unit_old_edits o CROSS JOIN unit_turns u ON u.turn_id = o.turn_id
WHERE u.work_unit_id NOT IN (SELECT work_unit_id FROM temp.unit_recounted)
  AND NOT EXISTS (SELECT 1 FROM unit_edits n WHERE n.turn_id = o.turn_id AND n.path = o.path)""",
    "window_recount": """
INSERT OR REPLACE INTO unit_path_windows (work_unit_id, project_id, path, first_key, last_key, lines_added, lines_removed)
SELECT m.work_unit_id, e.project_id, e.path, min(e.first_edit || '|' || e.first_event),
  max(e.last_edit || '|' || e.last_event), sum(e.lines_added), sum(e.lines_removed)
FROM unit_edits e CROSS JOIN unit_turns m ON m.turn_id = e.turn_id
WHERE e.project_id = ?1 AND e.path = ?2 AND m.work_unit_id = ?3
GROUP BY m.work_unit_id, e.path""",
    "windows_of_units": """
INSERT INTO unit_path_windows (work_unit_id, project_id, path, first_key, last_key, lines_added, lines_removed)
SELECT m.work_unit_id, e.project_id, e.path, min(e.first_edit || '|' || e.first_event),
  max(e.last_edit || '|' || e.last_event), sum(e.lines_added), sum(e.lines_removed)
FROM temp.unit_recounted r CROSS JOIN unit_turns m ON m.work_unit_id = r.work_unit_id
CROSS JOIN unit_edits e ON e.turn_id = m.turn_id
GROUP BY m.work_unit_id, e.path""",
    # 6. the state of every unit whose members, membership or state inputs changed
    "state_touched": """
INSERT OR IGNORE INTO temp.unit_s SELECT work_unit_id FROM unit_state_dirty;
DELETE FROM unit_state_dirty;
INSERT OR IGNORE INTO temp.unit_s SELECT work_unit_id FROM temp.unit_old_turns;
INSERT OR IGNORE INTO temp.unit_s SELECT work_unit_id FROM temp.unit_recounted;
INSERT OR IGNORE INTO temp.unit_s SELECT u.work_unit_id FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id;""",
    "state": """
DELETE FROM unit_state WHERE work_unit_id IN (SELECT work_unit_id FROM temp.unit_s);
INSERT INTO unit_state SELECT s.* FROM temp.unit_s t CROSS JOIN unit_state_live s ON s.work_unit_id = t.work_unit_id;""",
    "clear": """
DELETE FROM temp.unit_d; DELETE FROM temp.unit_w; DELETE FROM temp.unit_f; DELETE FROM temp.unit_old_turns;
DELETE FROM temp.unit_old_edits; DELETE FROM temp.unit_old_links; DELETE FROM temp.unit_recounted;
DELETE FROM temp.unit_priors; DELETE FROM temp.unit_s;""",
}


def refresh(conn) -> int:
    """Bring the unit state up to date with the turns marked in `unit_dirty` (the caller holds
    the write transaction). Returns how many turns were marked."""
    if (conn.execute("SELECT 1 FROM unit_dirty LIMIT 1").fetchone() is None
            and conn.execute("SELECT 1 FROM unit_state_dirty LIMIT 1").fetchone() is None):
        return 0
    conn.execute(_sql("temp"))
    try:
        conn.execute(_sql("save"))
        n = conn.execute("SELECT count(*) FROM temp.unit_d").fetchone()[0]
        conn.execute(_sql("turns"))
        conn.execute(_sql("edits"))
        flipped = _counts(conn)
        conn.execute(_sql("own"))
        conn.execute(_sql("after_on_path"))
        conn.execute(_sql("next_in_session"))
        conn.execute(_sql("handoff_receivers"))
        conn.execute(_sql("linked_to"))
        for project, path in flipped:
            conn.execute(_sql("flipped"), (project, path))
        conn.execute(_sql("save_links"))
        conn.execute(_sql("path_links"))
        conn.execute(_sql("flipped_links"))
        conn.execute(_sql("adjacent_links"))
        if conn.execute("SELECT count(*) FROM temp.unit_w").fetchone()[0] > BULK_GIVERS:
            conn.execute(_sql("priors"))
            conn.execute(_sql("givers_bulk"))
        else:
            conn.execute(_sql("givers"))
        conn.execute(_sql("handoff_links"))
        _label(conn)
        _windows(conn)
        conn.execute(_sql("state_touched"))
        conn.execute(_sql("state"))
        return n
    finally:
        conn.execute(_sql("clear"))


def _counts(c) -> list:
    """Update the session counts a change of membership moved; returns the (project, path)
    pairs whose hotness flipped."""
    projects = set()
    for project, session in c.execute(_sql("session_pairs")).fetchall():
        here = c.execute("SELECT 1 FROM unit_turns WHERE session_id = ? AND project_id = ? LIMIT 1",
                         (session, project)).fetchone() is not None
        before = c.execute(f"SELECT 1 FROM unit_turns WHERE session_id = ? AND project_id = ? AND {_OTHERS_DIRTY} "
                           "UNION ALL SELECT 1 FROM temp.unit_old_turns WHERE session_id = ? AND project_id = ? LIMIT 1",
                           (session, project, session, project)).fetchone() is not None
        if here != before:
            _add(c, "unit_projects", (project,), 1 if here else -1)
            projects.add(project)
    check = set()
    for project, path, session in c.execute(_sql("path_pairs")).fetchall():
        here = c.execute("SELECT 1 FROM unit_edits WHERE project_id = ? AND path = ? AND session_id = ? LIMIT 1",
                         (project, path, session)).fetchone() is not None
        before = c.execute(f"SELECT 1 FROM unit_edits WHERE project_id = ? AND path = ? AND session_id = ? "
                           f"AND {_OTHERS_DIRTY} UNION ALL SELECT 1 FROM temp.unit_old_edits WHERE project_id = ? "
                           "AND path = ? AND session_id = ? LIMIT 1",
                           (project, path, session, project, path, session)).fetchone() is not None
        if here != before:
            _add(c, "unit_paths", (project, path), 1 if here else -1)
            check.add((project, path))
    for project in projects:  # the denominator moved: a path of the project may flip
        check.update((project, p) for (p,) in c.execute(
            "SELECT path FROM unit_paths WHERE project_id = ? AND sessions >= ?", (project, HOT_MIN_SESSIONS)))
    flipped = []
    for project, path in sorted(check):
        row = c.execute("SELECT p.sessions, p.hot, coalesce(u.sessions, 0) FROM unit_paths p "
                        "LEFT JOIN unit_projects u ON u.project_id = p.project_id "
                        "WHERE p.project_id = ? AND p.path = ?", (project, path)).fetchone()
        if row is None:
            continue
        n, hot, total = row
        now_hot = int(n >= HOT_MIN_SESSIONS and 4 * n >= total)
        if now_hot != hot:
            c.execute("UPDATE unit_paths SET hot = ? WHERE project_id = ? AND path = ?", (now_hot, project, path))
            flipped.append((project, path))
    return flipped


def _add(c, table: str, key: tuple, delta: int) -> None:
    """sessions += delta on one counter row (made at 0 when absent, removed at 0)."""
    if table == "unit_projects":
        cols, where, values = "project_id, sessions", "project_id = ?", "?, 0"
    else:
        cols, where, values = "project_id, path, sessions, hot", "project_id = ? AND path = ?", "?, ?, 0, 0"
    c.execute(f"INSERT INTO {table} ({cols}) VALUES ({values}) ON CONFLICT DO NOTHING", key)
    c.execute(f"UPDATE {table} SET sessions = sessions + ? WHERE {where}", (delta, *key))
    c.execute(f"DELETE FROM {table} WHERE {where} AND sessions <= 0", key)


# --- components ------------------------------------------------------------------------------

def _label(c) -> None:
    added = c.execute(_sql("added")).fetchall()
    c.execute(_sql("new"))  # a new turn starts as a unit of its own
    if (len(added) > FULL_RELABEL_LINKS or c.execute(_sql("removed")).fetchone()
            or c.execute(_sql("moved")).fetchone()):
        _relabel(c)
        return
    for a, b in added:
        _merge(c, a, b)


def _first(c, unit: str) -> str:
    return c.execute("SELECT order_key FROM unit_turns WHERE work_unit_id = ? ORDER BY order_key LIMIT 1",
                     (unit,)).fetchone()[0]


def _merge(c, a: str, b: str) -> None:
    """The units of turns a and b become one; the one whose earliest member is earlier keeps its
    id, the other's members take it."""
    ua = c.execute("SELECT work_unit_id FROM unit_turns WHERE turn_id = ?", (a,)).fetchone()[0]
    ub = c.execute("SELECT work_unit_id FROM unit_turns WHERE turn_id = ?", (b,)).fetchone()[0]
    if ua == ub:
        return
    keep, lose = (ua, ub) if _first(c, ua) < _first(c, ub) else (ub, ua)
    c.execute("INSERT OR IGNORE INTO temp.unit_s (work_unit_id) VALUES (?), (?)", (keep, lose))
    c.execute("UPDATE unit_turns SET work_unit_id = ? WHERE work_unit_id = ?", (keep, lose))
    c.execute("DELETE FROM unit_index WHERE work_unit_id = ?", (lose,))
    c.execute("INSERT INTO unit_path_windows (work_unit_id, project_id, path, first_key, last_key, lines_added, "
              "lines_removed) SELECT ?, project_id, path, first_key, last_key, lines_added, lines_removed "
              "FROM unit_path_windows WHERE work_unit_id = ? ON CONFLICT (work_unit_id, path) DO UPDATE SET "
              "first_key = min(first_key, excluded.first_key), last_key = max(last_key, excluded.last_key), "
              "lines_added = lines_added + excluded.lines_added, lines_removed = lines_removed + excluded.lines_removed",
              (keep, lose))
    c.execute("DELETE FROM unit_path_windows WHERE work_unit_id = ?", (lose,))


_MARKED_UNITS = """
SELECT work_unit_id FROM temp.unit_old_turns
UNION SELECT u.work_unit_id FROM temp.unit_d d CROSS JOIN unit_turns u ON u.turn_id = d.turn_id"""

_TOUCHED_UNITS = f"""
SELECT work_unit_id FROM temp.unit_old_turns
UNION SELECT u.work_unit_id FROM ({_RELINKED}) w JOIN unit_turns u ON u.turn_id = w.turn_id
UNION SELECT u.work_unit_id FROM temp.unit_old_links l JOIN unit_turns u ON u.turn_id = l.target_turn_id
UNION SELECT u.work_unit_id FROM ({_RELINKED}) w JOIN unit_links l ON l.turn_id = w.turn_id
      JOIN unit_turns u ON u.turn_id = l.target_turn_id"""


def _members(c, unit: str) -> dict:
    return {turn: (key, first_event, project, started, unit) for turn, key, first_event, project, started in c.execute(
        "SELECT turn_id, order_key, first_event_id, project_id, started_at FROM unit_turns WHERE work_unit_id = ?",
        (unit,))}


def _relabel(c) -> None:
    """Label again, from their links, every turn of the units a change touched (the marked and
    re-linked turns' units, before and after, and their links' targets'): a component is closed
    under links, so no link leaves the set."""
    units = [r[0] for r in c.execute(_TOUCHED_UNITS)]
    members = {}
    for u in units:
        members.update(_members(c, u))
    parent = {t: t for t in members}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for turn in list(members):
        for (target,) in c.execute("SELECT target_turn_id FROM unit_links WHERE turn_id = ?", (turn,)).fetchall():
            if target not in parent:  # cannot happen (components are closed under links); stay exact anyway
                members.update(_members(c, c.execute("SELECT work_unit_id FROM unit_turns WHERE turn_id = ?",
                                                     (target,)).fetchone()[0]))
                parent.update((t, t) for t in members if t not in parent)
            ra, rb = find(turn), find(target)
            if ra != rb:
                if members[ra][0] < members[rb][0]:
                    parent[rb] = ra
                else:
                    parent[ra] = rb
    before, after = {}, {}
    for turn, m in members.items():
        before.setdefault(m[4], set()).add(turn)
        after.setdefault("wu_" + members[find(turn)][1][3:], set()).add(turn)
    # a unit no marked turn is or was in, whose members are the same, keeps its edit windows
    # (a hot flip relabels large units whose members stay); the others are counted again
    marked = {u for (u,) in c.execute(_MARKED_UNITS)}
    changed = {u for u in before.keys() | after.keys() | set(units) if u in marked or before.get(u) != after.get(u)}
    for u in before.keys() | set(units):
        c.execute("INSERT OR IGNORE INTO temp.unit_s (work_unit_id) VALUES (?)", (u,))
        c.execute("DELETE FROM unit_index WHERE work_unit_id = ?", (u,))
        if u in changed:
            c.execute("DELETE FROM unit_path_windows WHERE work_unit_id = ?", (u,))
    indexed = set()
    for turn, (_key, _first_event, _project, _started, old) in members.items():
        root = find(turn)
        key, first_event, project, started, _ = members[root]
        unit = "wu_" + first_event[3:]
        if unit != old:
            c.execute("UPDATE unit_turns SET work_unit_id = ? WHERE turn_id = ?", (unit, turn))
        if root not in indexed:
            indexed.add(root)
            c.execute("INSERT OR REPLACE INTO unit_index (work_unit_id, project_id, first_turn_id, started_at) "
                      "VALUES (?, ?, ?, ?)", (unit, project, root, started))
            if unit in changed:
                c.execute("INSERT OR IGNORE INTO temp.unit_recounted (work_unit_id) VALUES (?)", (unit,))
    c.execute(_sql("windows_of_units"))


def _windows(c) -> None:
    c.execute(_sql("window_growth"))
    for unit, project, path in c.execute(_sql("window_shrunk")).fetchall():
        c.execute("DELETE FROM unit_path_windows WHERE work_unit_id = ? AND path = ?", (unit, path))
        c.execute(_sql("window_recount"), (project, path, unit))


def rebuild(conn) -> None:
    """Build the unit state from nothing: every turn marked, then one refresh."""
    for t in UNIT_TABLES:
        conn.execute(f"DELETE FROM {t}")
    conn.execute("INSERT OR IGNORE INTO unit_dirty (turn_id) SELECT turn_id FROM turn_facts")
    refresh(conn)
