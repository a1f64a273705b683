-- The public projection surface (seed 003: every catalog table, same columns, same names), as
-- thin views over the stored state (the *_facts tables of migration 0002). What a view adds is only what depends on
-- the time of reading (sessions.state and confidence) or is cheap per row it returns: renames,
-- lookups by key, and list columns assembled from rows (so an append never rewrites a growing
-- list). Every filter AttemptQL applies (outcome, failure class, retracted, session, turn, time)
-- is a stored column with an index (spec/projections.md §13).
-- Every inferred row carries evidence (a JSON array of ev_ ids), confidence and
-- algorithm_version = 'tier1-v5-sql1'. Plain SQL sees retracted rows (retracted = 1).
-- Comments stay outside the CREATE statements (SQLite re-parses their text on every open).
CREATE VIEW projection_version (algorithm_version) AS SELECT 'tier1-v5-sql1';

-- Session counts without the calls of retracted attempts (read only when some attempt of the
-- session is retracted), and the coverage class they imply. `events` also leaves out those calls'
-- start and end events (each applied event counted once, and each is the start or end of one
-- call), so it equals the count of the session's fact events the log reads as not retracted,
-- as when the same events are retracted one by one (migration 0019).
CREATE VIEW session_base AS
SELECT s.*,
  s.call_seq - CASE WHEN s.retracted_attempts THEN (
      SELECT count(*) FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE a.session_id = s.session_id AND a.retraction > 0) ELSE 0 END AS calls,
  s.failure_count - CASE WHEN s.retracted_attempts THEN (
      SELECT count(*) FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE a.session_id = s.session_id AND a.retraction > 0 AND c.outcome_status IN ('failure', 'denied')) ELSE 0 END AS failures,
  s.event_count - CASE WHEN s.retracted_attempts THEN (
      SELECT count(c.start_event_id) + count(c.end_event_id) FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE a.session_id = s.session_id AND a.retraction > 0) ELSE 0 END AS events
FROM session_facts s;

CREATE VIEW session_cover AS
SELECT b.*,
  CASE WHEN b.prompt_count = 0 AND b.calls = 0 THEN 'unknown'
       WHEN b.saw_start AND b.saw_end AND b.prompt_count > 0 AND b.calls > 0 THEN 'full'
       WHEN b.saw_start OR b.saw_end THEN 'partial'
       ELSE 'minimal' END AS coverage
FROM session_base b;

-- A turn's text after corrections and privacy retractions: blanked when its session or one of its
-- attempts was retracted for privacy, else the latest applied objective correction, else the
-- prompt (read by key, one turn at a time).
CREATE VIEW turn_text_base AS
SELECT t.turn_id AS turn_id,
  (s.retraction = 2 OR (s.retracted_attempts
                        AND EXISTS (SELECT 1 FROM attempt_facts ba WHERE ba.turn_id = t.turn_id AND ba.retraction = 2))) AS blanked,
  (SELECT cf.event_id FROM correction_facts cf
    WHERE cf.target = t.turn_id AND cf.invalid = 0 AND cf.correction_type = 'turn_objective' AND cf.note IS NOT NULL
      AND s.retraction = 0
    ORDER BY cf.ekey DESC LIMIT 1) AS correction_id,
  s.retraction > 0 AS session_retracted
FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id;

CREATE VIEW turn_text AS
SELECT x.*,
  CASE WHEN x.blanked THEN NULL
       WHEN x.correction_id IS NOT NULL THEN (SELECT note FROM correction_facts WHERE event_id = x.correction_id)
       ELSE (SELECT objective FROM turn_prompts WHERE turn_id = x.turn_id) END AS objective,
  CASE WHEN x.correction_id IS NOT NULL AND NOT x.blanked
       THEN (SELECT objective FROM turn_prompts WHERE turn_id = x.turn_id) END AS inferred_objective,
  (SELECT corrected_at FROM correction_facts WHERE event_id = x.correction_id) AS corrected_at
FROM turn_text_base x;

-- ---- sessions: state and confidence depend on the wall clock ---------------------------
CREATE VIEW session_state AS
SELECT c.*,
  CASE WHEN c.ended_at IS NOT NULL THEN 'closed'
       WHEN coalesce(c.last_activity_at, c.last_at)
            < strftime('%Y-%m-%dT%H:%M:%f', 'now',
                       CASE WHEN EXISTS (SELECT 1 FROM signal_facts g WHERE g.session_id = c.session_id
                                         AND g.cleared_at IS NULL AND g.blocking = 1)
                            THEN '-12 hours' ELSE '-30 minutes' END) || '000Z'
         THEN 'stale'
       ELSE 'open' END AS state
FROM session_cover c;

CREATE VIEW sessions AS
SELECT session_id, provider, provider_session_id, project_id, project_name, state, started_at,
  ended_at, end_reason, start_source, events AS event_count, turn_count, prompt_count,
  calls AS tool_call_count, failures AS failure_count,
  (SELECT json_group_array(agent_id) FROM (
     SELECT agent_id FROM session_agents g WHERE g.session_id = session_state.session_id ORDER BY first_key)) AS agents,
  coverage, first_event_id,
  last_event_id, last_at AS last_event_at, start_event_id, end_event_id,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, start_event_id AS x UNION ALL SELECT 2, first_event_id
                    UNION ALL SELECT 3, last_event_id UNION ALL SELECT 4, end_event_id)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  min(CASE coverage WHEN 'full' THEN 1.0 WHEN 'partial' THEN 0.8 WHEN 'minimal' THEN 0.6 ELSE 0.4 END,
      CASE WHEN state = 'stale' THEN 0.7 ELSE 1.0 END) AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  retraction > 0 AS retracted
FROM session_state;

-- ---- turns --------------------------------------------------------------------------------

-- The events of calls in retracted attempts, per turn, and the turn's events that remain: a
-- turn's first/last event is repointed past a retracted call (read only when the session has a
-- retracted attempt).
CREATE VIEW retracted_call_events AS
SELECT a.turn_id AS turn_id, c.start_event_id AS ev
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
  WHERE a.retraction > 0 AND c.start_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.end_event_id
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
  WHERE a.retraction > 0 AND c.end_event_id IS NOT NULL;

CREATE VIEW turn_surviving_events AS
SELECT t.turn_id AS turn_id, t.prompt_event_id AS ev, t.started_at || '|0' AS k FROM turn_facts t WHERE t.prompt_event_id IS NOT NULL
UNION ALL
SELECT t.turn_id, t.stop_event_id, t.ended_at || '|3' FROM turn_facts t WHERE t.stop_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.start_event_id, c.started_at || '|1|' || printf('%012d', c.call_ord)
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
 WHERE a.retraction = 0 AND c.start_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.end_event_id, c.finished_at || '|2|' || printf('%012d', c.call_ord)
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
 WHERE a.retraction = 0 AND c.end_event_id IS NOT NULL;

CREATE VIEW turns AS
SELECT t.turn_id, t.session_id, s.provider, s.project_id, s.project_name, t.turn_index,
  t.started_at, t.ended_at, t.status, t.prompt_event_id, t.stop_event_id,
  (SELECT json_group_array(tool_call_id) FROM (
     SELECT c.tool_call_id FROM tool_call_facts c
     WHERE c.turn_id = t.turn_id AND (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)) ORDER BY c.call_ord)) AS tool_call_ids,
  (SELECT count(*) FROM tool_call_facts c WHERE c.turn_id = t.turn_id AND (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0))) AS tool_call_count,
  (SELECT x.objective FROM turn_text x WHERE x.turn_id = t.turn_id) AS objective,
  t.prompt_chars,
  CASE WHEN s.retracted_attempts AND t.first_event_id IN (SELECT ev FROM retracted_call_events WHERE turn_id = t.turn_id)
       THEN (SELECT ev FROM turn_surviving_events WHERE turn_id = t.turn_id ORDER BY k LIMIT 1)
       ELSE t.first_event_id END AS first_event_id,
  CASE WHEN s.retracted_attempts
        AND (CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_event_id, t.last_event_id) ELSE t.last_event_id END)
            IN (SELECT ev FROM retracted_call_events WHERE turn_id = t.turn_id)
       THEN (SELECT ev FROM turn_surviving_events WHERE turn_id = t.turn_id ORDER BY k DESC LIMIT 1)
       ELSE CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_event_id, t.last_event_id) ELSE t.last_event_id END
  END AS last_event_id,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, coalesce(t.prompt_event_id, t.first_event_id) AS x
                    UNION ALL SELECT 2, t.stop_event_id)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  CASE WHEN t.prompt_event_id IS NULL THEN 0.9 ELSE 1.0 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  (SELECT x.correction_id FROM turn_text_base x WHERE x.turn_id = t.turn_id) AS corrected_by,
  (SELECT x.corrected_at FROM turn_text x WHERE x.turn_id = t.turn_id) AS corrected_at,
  (SELECT x.inferred_objective FROM turn_text x WHERE x.turn_id = t.turn_id) AS inferred_objective,
  s.retraction > 0 AS retracted
FROM turn_facts t LEFT JOIN session_facts s ON s.session_id = t.session_id;

-- ---- tool calls ---------------------------------------------------------------------------
CREATE VIEW tool_calls AS
SELECT c.tool_call_id, c.session_id, s.provider, s.project_id, s.project_name, c.turn_id,
  c.agent_id, c.tool_name, c.tool_category, c.provider_call_id, c.started_at, c.finished_at,
  c.duration_ms, c.outcome_status, c.outcome_class, c.exit_code, c.path_relative, c.paths,
  c.command_category, c.git_subcommand, c.lines_added, c.lines_removed, c.tests_failed,
  c.pairing, c.start_event_id, c.end_event_id,
  CASE WHEN c.start_event_id IS NULL THEN json_array(c.end_event_id)
       WHEN c.end_event_id IS NULL THEN json_array(c.start_event_id)
       ELSE json_array(c.start_event_id, c.end_event_id) END AS evidence,
  CASE c.pairing WHEN 'call_id' THEN 1.0 WHEN 'fifo' THEN 0.9 WHEN 'end_only' THEN 1.0 ELSE 0.7 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  (s.retraction > 0 OR NOT (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0))) AS retracted
FROM tool_call_facts c LEFT JOIN session_facts s ON s.session_id = c.session_id;

-- ---- attempts: outcome, class, verification, supersession and retraction are stored ------

-- An attempt with its confidence (from its session's coverage, its turn's status and the pairing
-- of its calls). No join: everything beyond the stored row is a subquery by key, computed only
-- for the rows and columns a query reads (a count or a GROUP BY touches the stored row alone).
CREATE VIEW attempt_rows AS
SELECT a.*,
  CASE WHEN (SELECT c.coverage FROM session_cover c WHERE c.session_id = a.session_id) IN ('minimal', 'unknown') THEN 0.4
       WHEN a.turn_status NOT IN ('completed', 'failed') THEN 0.6
       WHEN EXISTS (SELECT 1 FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.pairing <> 'call_id') THEN 0.6
       ELSE 0.9 END AS confidence,
  CASE WHEN a.retracted THEN NULL ELSE a.corr_by END AS corrected_by
FROM attempt_facts a;

CREATE VIEW attempts AS
SELECT a.attempt_id, a.session_id, a.provider, a.project_id, a.project_name, a.turn_id,
  a.turn_index, a.attempt_index, a.agent_id,
  (SELECT x.objective FROM turn_text x WHERE x.turn_id = a.turn_id) AS objective,
  CASE WHEN a.placeholder THEN 'no tool calls' ELSE (
    SELECT group_concat(seg, ' · ') FROM (
      SELECT seg FROM (
        SELECT 0 AS o, lbl || ' ' || CASE WHEN n <= 4 THEN ps ELSE (
                 SELECT group_concat(p2, ', ') FROM (SELECT p2 FROM (
                     SELECT q.value AS p2, min(c2.call_ord * 1000000 + q.key) AS k2
                     FROM tool_call_facts c2, json_each(c2.paths) q
                     WHERE c2.attempt_key = a.group_key
                       AND (CASE c2.tool_category WHEN 'file_edit' THEN 'edit' WHEN 'file_write' THEN 'write' ELSE 'notebook' END) = lbl
                       AND c2.tool_category IN ('file_edit', 'file_write', 'notebook')
                     GROUP BY q.value) ORDER BY k2 LIMIT 4)) || ' +' || (n - 4) || ' more' END AS seg
        FROM (
          SELECT lbl, count(*) AS n, group_concat(p, ', ') AS ps
          FROM (SELECT CASE c.tool_category WHEN 'file_edit' THEN 'edit' WHEN 'file_write' THEN 'write' ELSE 'notebook' END AS lbl,
                       q.value AS p, min(c.call_ord * 1000000 + q.key) AS k
                FROM tool_call_facts c, json_each(c.paths) q
                WHERE c.attempt_key = a.group_key AND c.tool_category IN ('file_edit', 'file_write', 'notebook')
                GROUP BY lbl, q.value ORDER BY lbl, k)
          GROUP BY lbl)
        UNION ALL
        SELECT 1 + CASE cat WHEN 'shell' THEN 0 WHEN 'read' THEN 1 WHEN 'search' THEN 2 WHEN 'web' THEN 3
                            WHEN 'mcp' THEN 4 WHEN 'subagent' THEN 5 WHEN 'plan' THEN 6 ELSE 7 END,
               cat || CASE WHEN n > 1 THEN ' ×' || n ELSE '' END
        FROM (SELECT CASE c.tool_category WHEN 'shell' THEN 'shell' WHEN 'file_read' THEN 'read'
                                          WHEN 'search' THEN 'search' WHEN 'web' THEN 'web' WHEN 'mcp' THEN 'mcp'
                                          WHEN 'subagent' THEN 'subagent' WHEN 'plan' THEN 'plan' ELSE 'other' END AS cat,
                     count(*) AS n
              FROM tool_call_facts c
              WHERE c.attempt_key = a.group_key
                AND (c.tool_category IS NULL OR c.tool_category NOT IN ('file_edit', 'file_write', 'notebook')
                     OR c.paths = '[]')
              GROUP BY cat)
      ) ORDER BY o)) END AS approach,
  a.started_at,
  a.ended_at,
  a.outcome,
  a.failure_class,
  a.verification,
  coalesce((SELECT json_group_array(tool_call_id) FROM (
     SELECT c.tool_call_id FROM tool_call_facts c WHERE c.attempt_key = a.group_key ORDER BY c.call_ord)), '[]') AS tool_call_ids,
  (SELECT count(*) FROM tool_call_facts c WHERE c.attempt_key = a.group_key) AS tool_call_count,
  (SELECT json_group_array(p) FROM (
     SELECT q.value AS p, min(c.call_ord * 1000000 + q.key) AS k
     FROM tool_call_facts c, json_each(c.paths) q WHERE c.attempt_key = a.group_key
     GROUP BY q.value ORDER BY k)) AS paths,
  (SELECT json_group_array(sha) FROM (
     SELECT m.sha FROM commit_facts m JOIN tool_call_facts c ON c.tool_call_id = m.tool_call_id
     WHERE m.session_id = a.session_id AND c.attempt_key = a.group_key AND m.sha IS NOT NULL
     ORDER BY m.end_key)) AS commit_shas,
  (SELECT attempt_id FROM attempt_facts WHERE group_key = a.superseded_by_key) AS superseded_by,
  (SELECT CASE WHEN f.retraction > 0 THEN NULL ELSE f.attempt_id END FROM attempt_facts f
    WHERE f.superseded_key = a.group_key AND f.failed ORDER BY f.turn_index, f.attempt_index LIMIT 1) AS supersedes,
  (SELECT json_group_array(ev) FROM (
     SELECT ev FROM (
       SELECT coalesce(t.prompt_event_id, CASE WHEN a.placeholder THEN a.first_event_id END) AS ev,
              t.started_at AS at, 0 AS o, 0 AS n
         FROM turn_facts t WHERE t.turn_id = a.turn_id
       UNION ALL
       SELECT c.start_event_id, c.started_at, 1, c.call_ord
         FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.start_event_id IS NOT NULL
       UNION ALL
       SELECT c.end_event_id, c.finished_at, 2, c.call_ord
         FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.end_event_id IS NOT NULL
       UNION ALL
       SELECT CASE WHEN a.last_of_agent THEN a.turn_stop_id END, a.turn_ended_at, 3, 0)
     WHERE ev IS NOT NULL ORDER BY at, o, n)) AS evidence,
  a.confidence,
  'tier1-v5-sql1' AS algorithm_version,
  (SELECT m.work_unit_id FROM unit_turns m WHERE m.turn_id = a.turn_id) AS work_unit_id,
  a.corrected_by,
  (SELECT corrected_at FROM correction_facts WHERE event_id = a.corrected_by) AS corrected_at,
  (SELECT correction_type FROM correction_facts WHERE event_id = a.corrected_by) AS correction_type,
  CASE WHEN a.corrected_by IS NOT NULL THEN a.inferred_outcome END AS inferred_outcome,
  CASE WHEN a.corrected_by IS NOT NULL THEN a.inferred_failure_class END AS inferred_failure_class,
  CASE WHEN a.retracted OR (SELECT x.blanked FROM turn_text_base x WHERE x.turn_id = a.turn_id) THEN NULL
       ELSE (SELECT note FROM correction_facts WHERE event_id = a.corr_note_by) END AS note,
  a.retracted
FROM attempt_rows a;

-- ---- signals ------------------------------------------------------------------------------
CREATE VIEW signals AS
SELECT g.session_id, g.event_id, g.raised_at, g.agent_id, g.kind, g.signal_type, g.cleared_at,
  g.cleared_by, (g.cleared_at IS NULL) AS pending, g.blocking,
  CASE WHEN g.cleared_by IS NULL THEN json_array(g.event_id) ELSE json_array(g.event_id, g.cleared_by) END AS evidence,
  CASE WHEN g.cleared_at IS NOT NULL OR NOT g.blocking THEN 0.9
       WHEN s.coverage = 'full' THEN 0.85 ELSE 0.65 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM signal_facts g JOIN session_cover s ON s.session_id = g.session_id
WHERE s.retraction = 0
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = g.event_id AND e.retracted = 1);

-- ---- commits ------------------------------------------------------------------------------
CREATE VIEW commits AS
SELECT m.commit_id, m.session_id, s.provider, s.project_id, s.project_name, c.turn_id,
  (SELECT attempt_id FROM attempt_facts WHERE group_key = c.attempt_key) AS attempt_id,
  m.tool_call_id, m.sha, m.previous_sha, m.branch, m.committed_at,
  m.linkage,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, c.start_event_id AS x UNION ALL SELECT 2, c.end_event_id
                    UNION ALL SELECT 3, CASE WHEN m.linkage = 'next_head' THEN m.head_event_id END)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  CASE m.linkage WHEN 'end_event' THEN 0.9 WHEN 'next_head' THEN 0.7 ELSE 0.4 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM commit_facts m
JOIN tool_call_facts c ON c.tool_call_id = m.tool_call_id
JOIN session_facts s ON s.session_id = m.session_id
WHERE s.retraction = 0 AND (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0));

-- ---- corrections and retractions (their status is judged when read) ---------------------
CREATE VIEW corrections AS
SELECT cf.event_id, cf.corrected_at, cf.session_id, cf.project_id, cf.correction_type,
  cf.target_type, cf.target, cf.outcome, cf.failure_class,
  CASE WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = cf.target AND r.reason = 'privacy')
            OR EXISTS (SELECT 1 FROM attempt_facts b JOIN session_facts s ON s.session_id = b.session_id
                       WHERE b.attempt_id = cf.target AND s.retraction = 2)
            OR EXISTS (SELECT 1 FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
                       WHERE t.turn_id = cf.target AND s.retraction = 2)
       THEN NULL ELSE cf.note END AS note,
  cf.note_chars,
  CASE WHEN cf.invalid THEN 'invalid'
       WHEN cf.target_type = 'attempt' THEN
         CASE WHEN EXISTS (SELECT 1 FROM attempt_facts x WHERE x.attempt_id = cf.target) THEN
                CASE WHEN EXISTS (SELECT 1 FROM attempt_facts x WHERE x.attempt_id = cf.target AND x.retracted) THEN 'target_retracted'
                     WHEN cf.correction_type = 'attempt_note' AND cf.note IS NULL THEN 'content_unavailable'
                     ELSE 'applied' END
              WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = cf.target AND r.target_type = 'attempt') THEN 'target_retracted'
              ELSE 'target_not_found' END
       WHEN cf.target_type = 'turn' THEN
         CASE WHEN EXISTS (SELECT 1 FROM turn_facts t WHERE t.turn_id = cf.target) THEN
                CASE WHEN EXISTS (SELECT 1 FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
                                  WHERE t.turn_id = cf.target AND s.retraction > 0) THEN 'target_retracted'
                     WHEN cf.note IS NULL THEN 'content_unavailable'
                     ELSE 'applied' END
              ELSE 'target_not_found' END
       ELSE 'invalid' END AS status,
  0 AS legacy_position,
  json_array(cf.event_id) AS evidence,
  1.0 AS confidence
FROM correction_facts cf;

CREATE VIEW retractions AS
SELECT rf.event_id, rf.retracted_at, rf.project_id, rf.target_type, rf.target, rf.reason,
  CASE WHEN rf.reason = 'privacy' THEN NULL ELSE rf.note END AS note,
  rf.note_chars,
  CASE rf.target_type
    WHEN 'session' THEN EXISTS (SELECT 1 FROM events e WHERE e.session_id = rf.target
                                AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'event' THEN EXISTS (SELECT 1 FROM events e WHERE e.event_id = rf.target
                              AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'attempt' THEN EXISTS (SELECT 1 FROM attempt_facts b WHERE b.attempt_id = rf.target)
    ELSE 0 END AS matched,
  CASE rf.target_type
    WHEN 'session' THEN (SELECT count(*) FROM events e WHERE e.session_id = rf.target
                         AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'event' THEN (SELECT count(*) FROM events e WHERE e.event_id = rf.target
                       AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'attempt' THEN (SELECT count(c.start_event_id) + count(c.end_event_id)
                         FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
                         WHERE a.attempt_id = rf.target)
    ELSE 0 END AS retracted_events,
  0 AS legacy_position,
  json_array(rf.event_id) AS evidence,
  1.0 AS confidence
FROM retraction_facts rf;
