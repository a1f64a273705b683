-- 0005: the public projection surface (seed 003: every catalog table, same columns, same
-- names). Each public name is a VIEW over the stored *_facts state, so that
--   * values that depend on the time of reading (sessions.state, session confidence) are
--     computed when read, against the wall clock;
--   * corrections (latest wins) and retractions (flags, cleared pointers, adjusted counts)
--     apply whatever order they arrived in;
--   * list columns are assembled from rows, so an append never rewrites a growing list.
-- Every inferred row carries evidence (a JSON array of ev_ ids), confidence and
-- algorithm_version = 'tier1-v5-sql1' (spec/projections.md §1).
-- Plain SQL sees retracted rows (retracted = 1); filter them yourself.

-- ---- helpers ------------------------------------------------------------------------------

CREATE VIEW projection_version (algorithm_version) AS SELECT 'tier1-v5-sql1';

-- placeholder attempts (a turn with no tool call still has one attempt, for the nil agent)
CREATE INDEX turn_facts_placeholder ON turn_facts ('att_' || substr(coalesce(prompt_event_id, first_event_id), 4));

CREATE VIEW session_rows AS
SELECT s.*,
  EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = s.raw_session_id AND r.target_type = 'session') AS retracted,
  EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = s.raw_session_id AND r.target_type = 'session'
          AND r.reason = 'privacy') AS privacy_retracted,
  s.call_seq - (SELECT count(*) FROM retraction_facts r CROSS JOIN attempt_facts a CROSS JOIN tool_call_facts c
                WHERE r.target_type = 'attempt' AND a.attempt_id = r.target AND a.session_id = s.session_id
                  AND c.attempt_key = a.group_key) AS calls,
  s.failure_count - (SELECT count(*) FROM retraction_facts r CROSS JOIN attempt_facts a CROSS JOIN tool_call_facts c
                     WHERE r.target_type = 'attempt' AND a.attempt_id = r.target AND a.session_id = s.session_id
                       AND c.attempt_key = a.group_key AND c.outcome_status IN ('failure', 'denied')) AS failures,
  EXISTS (SELECT 1 FROM signal_facts g WHERE g.session_id = s.session_id AND g.cleared_at IS NULL AND g.blocking = 1) AS awaiting
FROM session_facts s;

CREATE VIEW session_cover AS
SELECT r.*,
  CASE WHEN r.prompt_count = 0 AND r.calls = 0 THEN 'unknown'
       WHEN r.saw_start AND r.saw_end AND r.prompt_count > 0 AND r.calls > 0 THEN 'full'
       WHEN r.saw_start OR r.saw_end THEN 'partial'
       ELSE 'minimal' END AS coverage
FROM session_rows r;

-- One row per attempt, stored or placeholder, with the structural facts the views need.
CREATE VIEW attempt_base AS
SELECT a.group_key AS group_key, a.attempt_id AS attempt_id, a.session_id AS session_id,
       a.turn_id AS turn_id, a.turn_index AS turn_index, a.agent_id AS agent_id, a.agent_key AS agent_key,
       a.attempt_index AS attempt_index, a.first_at AS first_at, a.first_event_id AS first_event_id,
       a.failing_call_id AS failing_call_id, a.fail_event_id AS fail_event_id, a.boundary AS boundary,
       0 AS placeholder,
       NOT EXISTS (SELECT 1 FROM attempt_facts x WHERE x.turn_id = a.turn_id AND x.agent_key = a.agent_key
                   AND x.group_no > a.group_no) AS last_of_agent
FROM attempt_facts a
UNION ALL
SELECT NULL, 'att_' || substr(coalesce(t.prompt_event_id, t.first_event_id), 4), t.session_id, t.turn_id,
       t.turn_index, 'agt_00000000-0000-0000-0000-000000000000', NULL, 0, t.started_at,
       coalesce(t.prompt_event_id, t.first_event_id), NULL, NULL, NULL, 1, 1
FROM turn_facts t
WHERE NOT EXISTS (SELECT 1 FROM attempt_facts x WHERE x.turn_id = t.turn_id);

-- Supersession, judged on what the attempts hold now: a failed attempt (a failing call, or the
-- last attempt of its agent in a failed turn) is retried by the first later attempt of the same
-- agent, in its turn or the next, that edited a path it edited (same_edit) or passed a check of
-- a kind it failed (passed_check).
CREATE VIEW attempt_failure AS
SELECT a.group_key AS group_key, a.session_id AS session_id, a.agent_key AS agent_key,
       a.turn_index AS turn_index, a.attempt_index AS attempt_index, a.attempt_id AS attempt_id,
       (a.failing_call_id IS NOT NULL
        OR ((SELECT status FROM turn_facts WHERE turn_id = a.turn_id) = 'failed'
            AND NOT EXISTS (SELECT 1 FROM attempt_facts x WHERE x.turn_id = a.turn_id AND x.agent_key = a.agent_key
                            AND x.group_no > a.group_no))) AS failed
FROM attempt_facts a;

CREATE VIEW attempt_supersession AS
SELECT f.*,
  CASE WHEN f.failed THEN (
    SELECT j.group_key FROM attempt_facts j
    WHERE j.session_id = f.session_id AND j.agent_key = f.agent_key
      AND (j.turn_index = f.turn_index + 1 OR (j.turn_index = f.turn_index AND j.attempt_index > f.attempt_index))
      AND (EXISTS (SELECT 1 FROM tool_call_facts xj, json_each(xj.paths) pj
                   WHERE xj.attempt_key = j.group_key AND xj.tool_category IN ('file_write', 'file_edit', 'notebook')
                     AND pj.value IN (SELECT pi.value FROM tool_call_facts xi, json_each(xi.paths) pi
                                      WHERE xi.attempt_key = f.group_key
                                        AND xi.tool_category IN ('file_write', 'file_edit', 'notebook')))
           OR EXISTS (SELECT 1 FROM tool_call_facts xj
                      WHERE xj.attempt_key = j.group_key AND xj.tool_category = 'shell' AND xj.end_event_id IS NOT NULL
                        AND (xj.command_category IN ('test', 'build') OR xj.tests_failed IS NOT NULL)
                        AND xj.outcome_status NOT IN ('failure', 'denied') AND coalesce(xj.tests_failed, 0) <= 0
                        AND (CASE WHEN xj.command_category = 'test' OR xj.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END)
                            IN (SELECT CASE WHEN xi.command_category = 'test' OR xi.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END
                                FROM tool_call_facts xi
                                WHERE xi.attempt_key = f.group_key AND xi.tool_category = 'shell'
                                  AND (xi.command_category IN ('test', 'build') OR xi.tests_failed IS NOT NULL)
                                  AND (xi.outcome_status IN ('failure', 'denied') OR xi.tests_failed > 0))))
    ORDER BY j.turn_index, j.attempt_index LIMIT 1) END AS superseded_key
FROM attempt_failure f;

CREATE VIEW attempt_supersede_link AS
SELECT s.group_key AS group_key, s.superseded_key AS superseded_key,
  CASE WHEN EXISTS (SELECT 1 FROM tool_call_facts xj, json_each(xj.paths) pj
                    WHERE xj.attempt_key = s.superseded_key AND xj.tool_category IN ('file_write', 'file_edit', 'notebook')
                      AND pj.value IN (SELECT pi.value FROM tool_call_facts xi, json_each(xi.paths) pi
                                       WHERE xi.attempt_key = s.group_key
                                         AND xi.tool_category IN ('file_write', 'file_edit', 'notebook')))
       THEN 'same_edit' ELSE 'passed_check' END AS supersede_kind
FROM attempt_supersession s WHERE s.superseded_key IS NOT NULL;

-- Whether an attempt id is retracted (directly, or through its session).
CREATE VIEW attempt_retraction AS
SELECT b.attempt_id AS attempt_id, b.group_key AS group_key, b.turn_id AS turn_id, b.session_id AS session_id,
  EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = b.attempt_id AND r.target_type = 'attempt') AS direct,
  EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = b.attempt_id AND r.target_type = 'attempt'
          AND r.reason = 'privacy') AS privacy
FROM attempt_base b;

-- Tool calls with their retraction state (an attempt retraction takes its calls along).
CREATE VIEW call_rows AS
SELECT c.*,
  EXISTS (SELECT 1 FROM attempt_facts a JOIN retraction_facts r ON r.target = a.attempt_id AND r.target_type = 'attempt'
          WHERE a.group_key = c.attempt_key) AS attempt_retracted
FROM tool_call_facts c;

-- Turn text after corrections and privacy retractions.
CREATE VIEW turn_text AS
SELECT t.turn_id AS turn_id,
  (SELECT cf.event_id FROM correction_facts cf
    WHERE cf.target = t.turn_id AND cf.invalid = 0 AND cf.correction_type = 'turn_objective' AND cf.note IS NOT NULL
      AND NOT s.retracted
    ORDER BY cf.ekey DESC LIMIT 1) AS correction_id,
  (s.privacy_retracted
   OR EXISTS (SELECT 1 FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
              WHERE a.turn_id = t.turn_id AND r.target_type = 'attempt' AND r.reason = 'privacy')
   OR EXISTS (SELECT 1 FROM retraction_facts r
              WHERE r.target = 'att_' || substr(coalesce(t.prompt_event_id, t.first_event_id), 4)
                AND r.target_type = 'attempt' AND r.reason = 'privacy'
                AND NOT EXISTS (SELECT 1 FROM attempt_facts x WHERE x.turn_id = t.turn_id))) AS blanked,
  s.retracted AS session_retracted
FROM turn_facts t JOIN session_rows s ON s.session_id = t.session_id;

-- ---- sessions -----------------------------------------------------------------------------

CREATE VIEW session_state AS
SELECT c.*,
  CASE WHEN c.ended_at IS NOT NULL THEN 'closed'
       WHEN coalesce(c.last_activity_at, c.last_at)
            < strftime('%Y-%m-%dT%H:%M:%f', 'now', CASE WHEN c.awaiting THEN '-12 hours' ELSE '-30 minutes' END) || '000Z'
         THEN 'stale'
       ELSE 'open' END AS state
FROM session_cover c;

CREATE VIEW sessions AS
SELECT session_id, provider, provider_session_id, project_id, project_name, state, started_at,
  ended_at, end_reason, start_source, event_count, turn_count, prompt_count,
  calls AS tool_call_count, failures AS failure_count,
  (SELECT json_group_array(agent_id) FROM (
     SELECT agent_id FROM session_agents g WHERE g.session_id = session_state.session_id ORDER BY ord)) AS agents,
  coverage, first_event_id,
  last_event_id, last_at AS last_event_at, start_event_id, end_event_id,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, start_event_id AS x UNION ALL SELECT 2, first_event_id
                    UNION ALL SELECT 3, last_event_id UNION ALL SELECT 4, end_event_id)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  min(CASE coverage WHEN 'full' THEN 1.0 WHEN 'partial' THEN 0.8 WHEN 'minimal' THEN 0.6 ELSE 0.4 END,
      CASE WHEN state = 'stale' THEN 0.7 ELSE 1.0 END) AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  retracted
FROM session_state;

-- ---- turns --------------------------------------------------------------------------------

CREATE VIEW turns AS
SELECT t.turn_id, t.session_id, s.provider, s.project_id, s.project_name, t.turn_index,
  t.started_at, t.ended_at, t.status, t.prompt_event_id, t.stop_event_id,
  (SELECT json_group_array(tool_call_id) FROM (
     SELECT c.tool_call_id FROM attempt_facts a JOIN call_rows c ON c.attempt_key = a.group_key
     WHERE a.turn_id = t.turn_id AND NOT c.attempt_retracted ORDER BY c.call_ord)) AS tool_call_ids,
  (SELECT count(*) FROM attempt_facts a JOIN call_rows c ON c.attempt_key = a.group_key
    WHERE a.turn_id = t.turn_id AND NOT c.attempt_retracted) AS tool_call_count,
  CASE WHEN x.blanked THEN NULL
       WHEN x.correction_id IS NOT NULL THEN (SELECT note FROM correction_facts WHERE event_id = x.correction_id)
       ELSE (SELECT objective FROM turn_prompts WHERE turn_id = t.turn_id) END AS objective,
  t.prompt_chars,
  CASE WHEN t.first_event_id IN (SELECT ev FROM retracted_call_events WHERE turn_id = t.turn_id)
       THEN (SELECT ev FROM turn_surviving_events WHERE turn_id = t.turn_id ORDER BY k LIMIT 1)
       ELSE t.first_event_id END AS first_event_id,
  CASE WHEN t.last_event_id IN (SELECT ev FROM retracted_call_events WHERE turn_id = t.turn_id)
       THEN (SELECT ev FROM turn_surviving_events WHERE turn_id = t.turn_id ORDER BY k DESC LIMIT 1)
       ELSE t.last_event_id END AS last_event_id,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, coalesce(t.prompt_event_id, t.first_event_id) AS x
                    UNION ALL SELECT 2, t.stop_event_id)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  CASE WHEN t.prompt_event_id IS NULL THEN 0.9 ELSE 1.0 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  x.correction_id AS corrected_by,
  (SELECT corrected_at FROM correction_facts WHERE event_id = x.correction_id) AS corrected_at,
  CASE WHEN x.correction_id IS NOT NULL AND NOT x.blanked
       THEN (SELECT objective FROM turn_prompts WHERE turn_id = t.turn_id) END AS inferred_objective,
  x.session_retracted AS retracted
FROM (SELECT f.turn_id, f.session_id, f.turn_index, f.started_at, f.ended_at, f.status, f.failure_class,
             f.prompt_event_id, f.stop_event_id, f.prompt_chars, f.first_event_id,
             CASE WHEN g.cur_turn_id = f.turn_id THEN coalesce(g.turn_last_event_id, f.last_event_id)
                  ELSE f.last_event_id END AS last_event_id,
             CASE WHEN g.cur_turn_id = f.turn_id THEN coalesce(g.turn_last_at, f.last_at)
                  ELSE f.last_at END AS last_at, f.start_key
      FROM turn_facts f JOIN session_facts g ON g.session_id = f.session_id) t
JOIN session_facts s ON s.session_id = t.session_id
JOIN turn_text x ON x.turn_id = t.turn_id;

-- events of calls in retracted attempts, per turn; and the turn's events that remain
CREATE VIEW retracted_call_events AS
SELECT a.turn_id AS turn_id, c.start_event_id AS ev
  FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target JOIN tool_call_facts c ON c.attempt_key = a.group_key
  WHERE r.target_type = 'attempt' AND c.start_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.end_event_id
  FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target JOIN tool_call_facts c ON c.attempt_key = a.group_key
  WHERE r.target_type = 'attempt' AND c.end_event_id IS NOT NULL;

CREATE VIEW turn_surviving_events AS
SELECT t.turn_id AS turn_id, t.prompt_event_id AS ev, t.started_at || '|0' AS k FROM turn_facts t WHERE t.prompt_event_id IS NOT NULL
UNION ALL
SELECT t.turn_id, t.stop_event_id, t.ended_at || '|3' FROM turn_facts t WHERE t.stop_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.start_event_id, c.started_at || '|1|' || printf('%012d', c.call_ord)
  FROM attempt_facts a JOIN call_rows c ON c.attempt_key = a.group_key
 WHERE NOT c.attempt_retracted AND c.start_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.end_event_id, c.finished_at || '|2|' || printf('%012d', c.call_ord)
  FROM attempt_facts a JOIN call_rows c ON c.attempt_key = a.group_key
 WHERE NOT c.attempt_retracted AND c.end_event_id IS NOT NULL;

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
  (c.attempt_retracted OR s.retracted) AS retracted
FROM call_rows c JOIN session_rows s ON s.session_id = c.session_id;

-- ---- attempts -----------------------------------------------------------------------------

-- Inferred values (before corrections).
CREATE VIEW attempt_inferred AS
SELECT b.*, t.status AS turn_status, t.started_at AS turn_started_at, t.ended_at AS turn_ended_at,
  t.prompt_event_id AS prompt_event_id, t.stop_event_id AS stop_event_id,
  t.failure_class AS turn_failure_class,
  s.retracted AS session_retracted, s.coverage AS coverage, s.provider AS provider,
  s.project_id AS project_id, s.project_name AS project_name,
  sp.superseded_key AS superseded_key,
  (sp.superseded_key IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM attempt_facts j JOIN retraction_facts r ON r.target = j.attempt_id AND r.target_type = 'attempt'
                   WHERE j.group_key = sp.superseded_key)) AS superseded,
  CASE WHEN b.failing_call_id IS NOT NULL THEN 'fail'
       WHEN b.last_of_agent AND t.status = 'failed' THEN 'turn' END AS failed_by,
  EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = b.attempt_id AND r.target_type = 'attempt') AS direct_retracted
FROM attempt_base b
JOIN turn_facts t ON t.turn_id = b.turn_id
JOIN session_cover s ON s.session_id = b.session_id
LEFT JOIN attempt_supersession sp ON sp.group_key = b.group_key;

CREATE VIEW attempt_rows AS
SELECT i.*,
  CASE WHEN i.failed_by IS NOT NULL THEN CASE WHEN i.superseded THEN 'superseded' ELSE 'failed' END
       WHEN i.turn_status = 'completed' THEN CASE WHEN i.placeholder THEN 'unknown' ELSE 'succeeded' END
       WHEN i.turn_status = 'unknown' THEN 'abandoned'
       ELSE 'in_progress' END AS inferred_outcome,
  CASE WHEN i.failed_by = 'fail' THEN
         (SELECT coalesce(c.outcome_class,
                          CASE WHEN c.outcome_status IN ('failure', 'denied') THEN c.outcome_status
                               WHEN c.tests_failed > 0 THEN 'tests_failed' ELSE 'failure' END)
          FROM tool_call_facts c WHERE c.tool_call_id = i.failing_call_id)
       WHEN i.failed_by = 'turn' THEN coalesce(i.turn_failure_class, 'turn_failed') END AS inferred_failure_class,
  CASE WHEN i.failed_by = 'fail' THEN i.boundary ELSE i.turn_ended_at END AS ended,
  CASE WHEN i.attempt_index = 0 THEN i.turn_started_at ELSE i.first_at END AS started,
  CASE WHEN i.coverage IN ('minimal', 'unknown') THEN 0.4
       WHEN i.turn_status NOT IN ('completed', 'failed') THEN 0.6
       WHEN EXISTS (SELECT 1 FROM tool_call_facts c WHERE c.attempt_key = i.group_key AND c.pairing <> 'call_id') THEN 0.6
       ELSE 0.9 END AS conf,
  (i.direct_retracted OR i.session_retracted) AS retracted,
  -- the latest applicable correction of each kind (never for a retracted attempt)
  (SELECT cf.event_id FROM correction_facts cf
    WHERE cf.target = i.attempt_id AND cf.invalid = 0 AND cf.target_type = 'attempt'
      AND (cf.correction_type = 'attempt_outcome' OR cf.note IS NOT NULL)
      AND NOT i.direct_retracted AND NOT i.session_retracted
    ORDER BY cf.ekey DESC LIMIT 1) AS last_correction,
  (SELECT cf.event_id FROM correction_facts cf
    WHERE cf.target = i.attempt_id AND cf.invalid = 0 AND cf.target_type = 'attempt'
      AND cf.correction_type = 'attempt_outcome'
      AND NOT i.direct_retracted AND NOT i.session_retracted
    ORDER BY cf.ekey DESC LIMIT 1) AS outcome_correction,
  -- the failure class after corrections: the latest outcome correction that named a class or
  -- moved the outcome out of the failures decides; none -> the inferred class
  (SELECT cf.event_id FROM correction_facts cf
    WHERE cf.target = i.attempt_id AND cf.invalid = 0 AND cf.target_type = 'attempt'
      AND cf.correction_type = 'attempt_outcome'
      AND (cf.failure_class IS NOT NULL OR cf.outcome NOT IN ('failed', 'superseded'))
      AND NOT i.direct_retracted AND NOT i.session_retracted
    ORDER BY cf.ekey DESC LIMIT 1) AS class_correction,
  (SELECT cf.note FROM correction_facts cf
    WHERE cf.target = i.attempt_id AND cf.invalid = 0 AND cf.target_type = 'attempt' AND cf.note IS NOT NULL
      AND NOT i.direct_retracted AND NOT i.session_retracted
    ORDER BY cf.ekey DESC LIMIT 1) AS corrected_note
FROM attempt_inferred i;

CREATE VIEW attempts AS
SELECT a.attempt_id, a.session_id, a.provider, a.project_id, a.project_name, a.turn_id,
  a.turn_index, a.attempt_index, a.agent_id,
  CASE WHEN x.blanked THEN NULL
       WHEN x.correction_id IS NOT NULL THEN (SELECT note FROM correction_facts WHERE event_id = x.correction_id)
       ELSE (SELECT objective FROM turn_prompts WHERE turn_id = a.turn_id) END AS objective,
  CASE WHEN a.placeholder THEN 'no tool calls' ELSE (
    SELECT group_concat(seg, ' · ') FROM (
      SELECT seg FROM (
        SELECT 0 AS o, lbl || ' ' || CASE WHEN n <= 4 THEN ps ELSE ps4 || ' +' || (n - 4) || ' more' END AS seg
        FROM (
          SELECT lbl, count(*) AS n, group_concat(p, ', ') AS ps,
                 (SELECT group_concat(p2, ', ') FROM (SELECT p2 FROM (
                     SELECT q.value AS p2, min(printf('%012d%06d', c2.call_ord, q.key)) AS k2
                     FROM tool_call_facts c2, json_each(c2.paths) q
                     WHERE c2.attempt_key = a.group_key
                       AND (CASE c2.tool_category WHEN 'file_edit' THEN 'edit' WHEN 'file_write' THEN 'write' ELSE 'notebook' END) = lbl
                       AND c2.tool_category IN ('file_edit', 'file_write', 'notebook')
                     GROUP BY q.value) ORDER BY k2 LIMIT 4)) AS ps4,
                 CASE lbl WHEN 'edit' THEN 0 WHEN 'write' THEN 1 ELSE 2 END AS lo
          FROM (SELECT CASE c.tool_category WHEN 'file_edit' THEN 'edit' WHEN 'file_write' THEN 'write' ELSE 'notebook' END AS lbl,
                       q.value AS p, min(printf('%012d%06d', c.call_ord, q.key)) AS k
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
  a.started AS started_at,
  a.ended AS ended_at,
  coalesce((SELECT outcome FROM correction_facts WHERE event_id = a.outcome_correction), a.inferred_outcome) AS outcome,
  CASE WHEN a.class_correction IS NOT NULL THEN (SELECT failure_class FROM correction_facts WHERE event_id = a.class_correction)
       ELSE a.inferred_failure_class END AS failure_class,
  (SELECT CASE WHEN c.outcome_status IN ('failure', 'denied') OR c.tests_failed > 0 THEN 'failed' ELSE 'passed' END
     FROM tool_call_facts c
    WHERE c.attempt_key = a.group_key AND c.tool_category = 'shell' AND c.end_event_id IS NOT NULL
      AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL)
    ORDER BY c.finished_at DESC, c.call_ord DESC LIMIT 1) AS verification,
  coalesce((SELECT json_group_array(tool_call_id) FROM (
     SELECT c.tool_call_id FROM tool_call_facts c WHERE c.attempt_key = a.group_key ORDER BY c.call_ord)), '[]') AS tool_call_ids,
  (SELECT count(*) FROM tool_call_facts c WHERE c.attempt_key = a.group_key) AS tool_call_count,
  (SELECT json_group_array(p) FROM (
     SELECT q.value AS p, min(printf('%012d%06d', c.call_ord, q.key)) AS k
     FROM tool_call_facts c, json_each(c.paths) q WHERE c.attempt_key = a.group_key
     GROUP BY q.value ORDER BY k)) AS paths,
  (SELECT json_group_array(sha) FROM (
     SELECT m.sha FROM commit_facts m JOIN tool_call_facts c ON c.tool_call_id = m.tool_call_id
     WHERE m.session_id = a.session_id AND c.attempt_key = a.group_key AND m.sha IS NOT NULL
     ORDER BY m.end_key)) AS commit_shas,
  CASE WHEN a.superseded THEN (SELECT attempt_id FROM attempt_facts WHERE group_key = a.superseded_key) END AS superseded_by,
  (SELECT CASE WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = f.attempt_id AND r.target_type = 'attempt')
               THEN NULL ELSE f.attempt_id END
     FROM attempt_supersession f
     WHERE a.group_key IS NOT NULL AND f.session_id = a.session_id AND f.agent_key = a.agent_key
       AND f.turn_index BETWEEN a.turn_index - 1 AND a.turn_index AND f.superseded_key = a.group_key
     ORDER BY f.turn_index, f.attempt_index LIMIT 1) AS supersedes,
  (SELECT json_group_array(ev) FROM (
     SELECT ev FROM (
       SELECT coalesce(a.prompt_event_id, CASE WHEN a.placeholder THEN a.first_event_id END) AS ev,
              a.turn_started_at || '|0' AS k
       UNION ALL
       SELECT c.start_event_id, c.started_at || '|1|' || printf('%012d', c.call_ord)
         FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.start_event_id IS NOT NULL
       UNION ALL
       SELECT c.end_event_id, c.finished_at || '|2|' || printf('%012d', c.call_ord)
         FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.end_event_id IS NOT NULL
       UNION ALL
       SELECT CASE WHEN a.last_of_agent THEN a.stop_event_id END, a.turn_ended_at || '|3')
     WHERE ev IS NOT NULL GROUP BY ev ORDER BY min(k))) AS evidence,
  a.conf AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  NULL AS work_unit_id,
  a.last_correction AS corrected_by,
  (SELECT corrected_at FROM correction_facts WHERE event_id = a.last_correction) AS corrected_at,
  (SELECT correction_type FROM correction_facts WHERE event_id = a.last_correction) AS correction_type,
  CASE WHEN a.last_correction IS NOT NULL THEN a.inferred_outcome END AS inferred_outcome,
  CASE WHEN a.last_correction IS NOT NULL THEN a.inferred_failure_class END AS inferred_failure_class,
  CASE WHEN x.blanked THEN NULL ELSE a.corrected_note END AS note,
  a.retracted AS retracted
FROM attempt_rows a
JOIN turn_text x ON x.turn_id = a.turn_id;

-- ---- signals ------------------------------------------------------------------------------

CREATE VIEW signals AS
SELECT g.session_id, g.event_id, g.raised_at, g.agent_id, g.kind, g.signal_type, g.cleared_at,
  g.cleared_by, (g.cleared_at IS NULL) AS pending, g.blocking,
  CASE WHEN g.cleared_by IS NULL THEN json_array(g.event_id) ELSE json_array(g.event_id, g.cleared_by) END AS evidence,
  CASE WHEN g.cleared_at IS NOT NULL OR NOT g.blocking THEN 0.9
       WHEN s.coverage = 'full' THEN 0.85 ELSE 0.65 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM signal_facts g JOIN session_cover s ON s.session_id = g.session_id
WHERE NOT s.retracted
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = g.event_id AND e.retracted = 1);

-- ---- commits ------------------------------------------------------------------------------

CREATE VIEW commits AS
SELECT m.commit_id, m.session_id, s.provider, s.project_id, s.project_name, c.turn_id,
  (SELECT attempt_id FROM attempt_facts WHERE group_key = c.attempt_key) AS attempt_id,
  m.tool_call_id, m.sha, m.previous_sha, m.branch, m.committed_at,
  CASE m.linkage WHEN 'unresolved' THEN 'unresolved' ELSE m.linkage END AS linkage,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, c.start_event_id AS x UNION ALL SELECT 2, c.end_event_id
                    UNION ALL SELECT 3, CASE WHEN m.linkage = 'next_head' THEN m.head_event_id END)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  CASE m.linkage WHEN 'end_event' THEN 0.9 WHEN 'next_head' THEN 0.7 ELSE 0.4 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM commit_facts m
JOIN call_rows c ON c.tool_call_id = m.tool_call_id
JOIN session_rows s ON s.session_id = m.session_id
WHERE NOT s.retracted AND NOT c.attempt_retracted;

-- ---- corrections and retractions ----------------------------------------------------------

CREATE VIEW corrections AS
SELECT cf.event_id, cf.corrected_at, cf.session_id, cf.project_id, cf.correction_type,
  cf.target_type, cf.target, cf.outcome, cf.failure_class,
  CASE WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = cf.target AND r.reason = 'privacy')
            OR EXISTS (SELECT 1 FROM attempt_base b JOIN session_rows s ON s.session_id = b.session_id
                       WHERE b.attempt_id = cf.target AND s.privacy_retracted)
            OR EXISTS (SELECT 1 FROM turn_facts t JOIN session_rows s ON s.session_id = t.session_id
                       WHERE t.turn_id = cf.target AND s.privacy_retracted)
       THEN NULL ELSE cf.note END AS note,
  cf.note_chars,
  CASE WHEN cf.invalid THEN 'invalid'
       WHEN cf.target_type = 'attempt' THEN
         CASE WHEN EXISTS (SELECT 1 FROM attempt_retraction x WHERE x.attempt_id = cf.target) THEN
                CASE WHEN EXISTS (SELECT 1 FROM attempt_retraction x JOIN session_rows s ON s.session_id = x.session_id
                                  WHERE x.attempt_id = cf.target AND (x.direct OR s.retracted)) THEN 'target_retracted'
                     WHEN cf.correction_type = 'attempt_note' AND cf.note IS NULL THEN 'content_unavailable'
                     ELSE 'applied' END
              WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = cf.target AND r.target_type = 'attempt') THEN 'target_retracted'
              ELSE 'target_not_found' END
       WHEN cf.target_type = 'turn' THEN
         CASE WHEN EXISTS (SELECT 1 FROM turn_facts t WHERE t.turn_id = cf.target) THEN
                CASE WHEN EXISTS (SELECT 1 FROM turn_facts t JOIN session_rows s ON s.session_id = t.session_id
                                  WHERE t.turn_id = cf.target AND s.retracted) THEN 'target_retracted'
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
    WHEN 'attempt' THEN EXISTS (SELECT 1 FROM attempt_base b WHERE b.attempt_id = rf.target)
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

-- ---- handoffs -----------------------------------------------------------------------------

-- Turn spans that can give or receive: [turn start, last event attributed to the turn], from
-- sessions that are not retracted and had a prompt or a tool call. A session's first span
-- begins at the session's start when that is earlier.
CREATE VIEW handoff_spans AS
SELECT t.turn_id AS turn_id, t.session_id AS session_id, s.provider AS provider, s.project_id AS project_id,
  t.started_at AS span_start,
  max(t.started_at, CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_at, t.last_at) ELSE t.last_at END) AS span_end,
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN min(s.started_at, t.started_at) ELSE t.started_at END AS begins,
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN s.first_event_id ELSE t.first_event_id END AS begin_event_id,
  CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_event_id, t.last_event_id) ELSE t.last_event_id END AS last_event_id
FROM turn_facts t
JOIN session_facts s ON s.session_id = t.session_id
WHERE (s.prompt_count > 0 OR s.call_seq > 0)
  AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = s.raw_session_id AND r.target_type = 'session');

-- Receivers on a quiet project, each with the one giver considered: the span whose end is the
-- latest among those sorted before it (a window over the project's spans, then key lookups).
CREATE VIEW handoff_candidates AS
SELECT c.*,
  (c.giver_end_event IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM project_input p
                   WHERE p.raw_sid = c.giver_raw AND p.gsid = c.from_session
                     AND p.at <= c.handoff_at AND p.ekey > c.giver_end_key
                     AND (p.kind IN ('session_started', 'tool_call_started', 'permission_requested') OR p.human_prompt = 1)
                     AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event'))
  ) AS giver_ended,
  substr(c.giver_end_key, 1, 27) AS giver_ended_at
FROM (
  SELECT r.turn_id AS to_turn, r.session_id AS to_session, r.provider AS to_provider,
    r.project_id AS project_id, r.begins AS handoff_at, r.begin_event_id AS to_event,
    gt.turn_id AS from_turn, gt.session_id AS from_session, gs.provider AS from_provider,
    substr(r.prior, 1, 27) AS giver_end,
    CASE WHEN gs.cur_turn_id = gt.turn_id THEN coalesce(gs.turn_last_event_id, gt.last_event_id)
         ELSE gt.last_event_id END AS giver_last_event,
    gs.raw_session_id AS giver_raw,
    -- the giving session's last end observed by the time the receiver began (a later resume
    -- before that instant means it had not ended)
    (SELECT p.ekey FROM project_input p
      WHERE p.raw_sid = gs.raw_session_id AND p.gsid = gs.session_id AND p.kind = 'session_ended'
        AND p.at <= r.begins
        AND NOT EXISTS (SELECT 1 FROM retraction_facts x WHERE x.target = p.event_id AND x.target_type = 'event')
      ORDER BY p.ekey DESC LIMIT 1) AS giver_end_key,
    (SELECT p.event_id FROM project_input p
      WHERE p.raw_sid = gs.raw_session_id AND p.gsid = gs.session_id AND p.kind = 'session_ended'
        AND p.at <= r.begins
        AND NOT EXISTS (SELECT 1 FROM retraction_facts x WHERE x.target = p.event_id AND x.target_type = 'event')
      ORDER BY p.ekey DESC LIMIT 1) AS giver_end_event
  FROM (SELECT sp.*,
               max(sp.span_end || ' ' || sp.turn_id) OVER (
                 PARTITION BY sp.project_id ORDER BY sp.begins, sp.session_id, sp.span_start, sp.turn_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior
        FROM handoff_spans sp) r
  JOIN turn_facts gt ON gt.turn_id = substr(r.prior, 29)
  JOIN session_facts gs ON gs.session_id = gt.session_id
  WHERE r.prior IS NOT NULL AND substr(r.prior, 1, 27) <= r.begins
    AND gt.session_id <> r.session_id AND gs.provider <> r.provider
) c;

CREATE VIEW handoff_judged AS
SELECT c.*,
  CASE WHEN c.giver_ended AND c.giver_ended_at > c.giver_end THEN c.giver_ended_at ELSE c.giver_end END AS giver_last,
  (SELECT json_group_array(p) FROM (
     SELECT DISTINCT q.value AS p
     FROM attempt_facts gt JOIN call_rows gc ON gc.attempt_key = gt.group_key, json_each(gc.paths) q
     WHERE gt.session_id = c.from_session AND NOT gc.attempt_retracted
       AND gc.tool_category IN ('file_write', 'file_edit', 'notebook') AND gc.first_at <= c.handoff_at
       AND q.value IN (
         SELECT q2.value FROM attempt_facts rt JOIN call_rows rc ON rc.attempt_key = rt.group_key, json_each(rc.paths) q2
         WHERE rt.session_id = c.to_session AND NOT rc.attempt_retracted
           AND max(rc.first_at, coalesce(rc.finished_at, rc.first_at)) >= c.handoff_at)
     ORDER BY p)) AS shared
FROM handoff_candidates c;

CREATE VIEW handoffs AS
WITH scored AS MATERIALIZED (
  -- each candidate judged once: the shared-path subquery is expensive and read several times
  SELECT j.*,
    ((CAST(strftime('%s', j.handoff_at) AS INTEGER) * 1000000 + CAST(substr(j.handoff_at, 21, 6) AS INTEGER))
     - (CAST(strftime('%s', j.giver_last) AS INTEGER) * 1000000 + CAST(substr(j.giver_last, 21, 6) AS INTEGER))) / 1000 AS gap,
    json_array_length(j.shared) AS n_shared,
    json_extract(j.shared, '$[0]') AS first_shared
  FROM handoff_judged j
),
hv AS MATERIALIZED (
  SELECT h.from_session, h.to_session, h.from_provider, h.to_provider, h.project_id, h.from_turn,
    h.to_turn, h.handoff_at, h.gap AS gap_ms, h.shared AS shared_paths,
    (SELECT json_group_array(x) FROM (
       SELECT x FROM (
         SELECT 1 AS o, CASE WHEN h.giver_ended THEN h.giver_end_event ELSE h.giver_last_event END AS x
         UNION ALL SELECT 2, h.to_event
         UNION ALL SELECT 3, (SELECT ev FROM (
             SELECT gc.start_event_id AS ev, gc.started_at AS at FROM attempt_facts gt JOIN call_rows gc ON gc.attempt_key = gt.group_key, json_each(gc.paths) q
              WHERE gt.session_id = h.from_session AND NOT gc.attempt_retracted AND q.value = h.first_shared
                AND gc.start_event_id IS NOT NULL AND gc.started_at <= h.handoff_at
             UNION ALL
             SELECT gc.end_event_id, gc.finished_at FROM attempt_facts gt JOIN call_rows gc ON gc.attempt_key = gt.group_key, json_each(gc.paths) q
              WHERE gt.session_id = h.from_session AND NOT gc.attempt_retracted AND q.value = h.first_shared
                AND gc.end_event_id IS NOT NULL AND gc.finished_at <= h.handoff_at)
           ORDER BY at DESC, ev DESC LIMIT 1)
         UNION ALL SELECT 4, (SELECT ev FROM (
             SELECT rc.start_event_id AS ev, rc.started_at AS at FROM attempt_facts rt JOIN call_rows rc ON rc.attempt_key = rt.group_key, json_each(rc.paths) q
              WHERE rt.session_id = h.to_session AND NOT rc.attempt_retracted AND q.value = h.first_shared
                AND rc.start_event_id IS NOT NULL AND rc.started_at >= h.handoff_at
             UNION ALL
             SELECT rc.end_event_id, rc.finished_at FROM attempt_facts rt JOIN call_rows rc ON rc.attempt_key = rt.group_key, json_each(rc.paths) q
              WHERE rt.session_id = h.to_session AND NOT rc.attempt_retracted AND q.value = h.first_shared
                AND rc.end_event_id IS NOT NULL AND rc.finished_at >= h.handoff_at)
           ORDER BY at, ev LIMIT 1))
       WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
    CASE WHEN h.n_shared > 0 AND h.gap <= 1800000 THEN
           CASE WHEN h.giver_ended AND h.n_shared >= 3 THEN 0.9
                WHEN h.giver_ended THEN 0.8
                WHEN h.n_shared >= 3 THEN 0.7
                ELSE 0.6 END
         WHEN h.gap <= 300000 THEN 0.5 END AS confidence,
    'tier1-v5-sql1' AS algorithm_version
  FROM scored h
  WHERE h.gap >= 0
)
SELECT from_session, to_session, from_provider, to_provider, project_id, from_turn, to_turn,
  handoff_at, gap_ms, shared_paths, evidence, confidence, algorithm_version
FROM hv
WHERE confidence IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM json_each(hv.evidence) q JOIN events e ON e.event_id = q.value WHERE e.retracted = 1)
ORDER BY handoff_at, to_session, from_session, to_turn;

-- ---- edges --------------------------------------------------------------------------------

-- The causal and structural graph without the ordinal: what WHY and TRACE walk (a WHERE on
-- from_id / to_id reaches each arm's index).
CREATE VIEW edge_links AS
SELECT 'parent_of' AS edge_kind, 'session' AS from_type, t.session_id AS from_id, 'turn' AS to_type,
       t.turn_id AS to_id, json_array(coalesce(t.prompt_event_id, t.first_event_id)) AS evidence,
       1.0 AS confidence, 'projection' AS edge_source
  FROM turns t WHERE NOT t.retracted
UNION ALL
SELECT 'triggered', 'event', t.prompt_event_id, 'turn', t.turn_id, json_array(t.prompt_event_id), 1.0, 'projection'
  FROM turns t WHERE NOT t.retracted AND t.prompt_event_id IS NOT NULL
UNION ALL
SELECT 'parent_of', 'turn', c.turn_id, 'tool_call', c.tool_call_id, c.evidence, c.confidence, 'projection'
  FROM tool_calls c WHERE NOT c.retracted
UNION ALL
SELECT 'evidence_for', 'event', q.value, 'attempt', a.attempt_id, json_array(q.value), 1.0, 'projection'
  FROM attempts a, json_each(a.evidence) q WHERE NOT a.retracted
UNION ALL
SELECT 'superseded', 'attempt', a.attempt_id, 'attempt', a.superseded_by,
       json_array(coalesce(f.fail_event_id, (SELECT stop_event_id FROM turn_facts WHERE turn_id = a.turn_id)), j.first_event_id),
       CASE WHEN (SELECT l.supersede_kind FROM attempt_supersede_link l WHERE l.group_key = f.group_key) = 'passed_check'
            THEN min(a.confidence, 0.6) ELSE a.confidence END, 'projection'
  FROM attempts a JOIN attempt_facts f ON f.attempt_id = a.attempt_id
  JOIN attempt_facts j ON j.attempt_id = a.superseded_by
  WHERE NOT a.retracted AND a.superseded_by IS NOT NULL
UNION ALL
SELECT 'caused', 'event', coalesce(f.fail_event_id, (SELECT stop_event_id FROM turn_facts WHERE turn_id = a.turn_id)),
       'event', j.first_event_id,
       json_array(coalesce(f.fail_event_id, (SELECT stop_event_id FROM turn_facts WHERE turn_id = a.turn_id)), j.first_event_id),
       min(a.confidence, 0.6), 'projection'
  FROM attempts a JOIN attempt_facts f ON f.attempt_id = a.attempt_id
  JOIN attempt_facts j ON j.attempt_id = a.superseded_by
  WHERE NOT a.retracted AND a.superseded_by IS NOT NULL
UNION ALL
SELECT 'handed_off', 'session', h.from_session, 'session', h.to_session, h.evidence, h.confidence, 'projection'
  FROM handoffs h
UNION ALL
SELECT 'triggered', 'event', t.prompt_event_id, 'attempt', a.attempt_id, json_array(t.prompt_event_id), a.confidence, 'derived'
  FROM attempts a JOIN turn_facts t ON t.turn_id = a.turn_id
  WHERE NOT a.retracted AND t.prompt_event_id IS NOT NULL
UNION ALL
SELECT 'caused', 'event', fe.ev, 'attempt', fe.attempt_id, json_array(fe.ev), fe.confidence, 'derived'
  FROM (SELECT a.attempt_id AS attempt_id, a.confidence AS confidence,
               coalesce((SELECT c.end_event_id FROM attempt_facts b JOIN tool_call_facts c ON c.attempt_key = b.group_key
                          WHERE b.attempt_id = a.attempt_id AND c.outcome_status IN ('failure', 'denied')
                          ORDER BY c.finished_at DESC, c.call_ord DESC LIMIT 1),
                        (SELECT t.stop_event_id FROM turn_facts t WHERE t.turn_id = a.turn_id AND t.status = 'failed')) AS ev
        FROM attempts a
        WHERE NOT a.retracted AND a.outcome IN ('failed', 'superseded')) fe
  WHERE fe.ev IS NOT NULL
UNION ALL
SELECT 'blocked', 'event', g.event_id, 'session', g.session_id, json_array(g.event_id), g.confidence, 'derived'
  FROM signals g WHERE g.pending AND g.blocking;

CREATE VIEW edges AS
SELECT row_number() OVER (ORDER BY edge_source DESC, edge_kind, from_type, from_id, to_type, to_id) - 1 AS ordinal,
  edge_kind, from_type, from_id, to_type, to_id, evidence, confidence, edge_source,
  'tier1-v5-sql1' AS algorithm_version
FROM edge_links;
