-- ---- work units (reference inference §2.9, spec/projections.md §16) -------------------------
-- Membership is stored (unit_turns, kept by attemptdb/projections/units.py); everything that
-- depends on the time of reading (status, idleness, whether a wait still blocks) is judged here,
-- against @now(). Every read is by key or an index range of the unit's members.

-- What a unit's phase and status read: its newest activity, last turn and attempt, calls in
-- flight, the wait holding it up, and its last five calls (newest first) among its five most
-- recently active turns.
CREATE VIEW unit_base AS
SELECT u.work_unit_id, u.project_id, u.first_turn_id, u.started_at,
  (SELECT s.project_name FROM unit_turns f JOIN session_facts s ON s.session_id = f.session_id
    WHERE f.turn_id = u.first_turn_id) AS project_name,
  (SELECT m.active_until FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id
    ORDER BY m.active_until DESC LIMIT 1) AS updated_at,
  (SELECT m.turn_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id
    ORDER BY m.order_key DESC LIMIT 1) AS last_turn_id,
  (SELECT a.group_key FROM unit_turns m JOIN attempt_facts a ON a.turn_id = m.turn_id
    WHERE m.work_unit_id = u.work_unit_id AND a.retraction = 0
      AND m.active_until >= coalesce((
        SELECT max(a2.started_at) FROM attempt_facts a2
        WHERE a2.retraction = 0 AND a2.turn_id = (SELECT m2.turn_id FROM unit_turns m2 WHERE m2.work_unit_id = u.work_unit_id
                                                 ORDER BY m2.active_until DESC LIMIT 1)), '')
    ORDER BY a.started_at DESC, m.order_key DESC, a.attempt_index DESC LIMIT 1) AS last_attempt_key,
  EXISTS (SELECT 1 FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id AND m.open_calls > 0) AS in_flight,
  (SELECT substr(m.waiting_since, 29) FROM unit_turns m JOIN session_facts s ON s.session_id = m.session_id
    WHERE m.work_unit_id = u.work_unit_id AND m.waiting_since IS NOT NULL
      AND @us(coalesce(s.last_activity_at, s.last_at)) >= @us(@now()) - 43200000000
    ORDER BY m.waiting_since DESC LIMIT 1) AS blocking_signal,
  NOT EXISTS (SELECT 1 FROM unit_turns m JOIN session_facts s ON s.session_id = m.session_id
              WHERE m.work_unit_id = u.work_unit_id AND (s.prompt_count > 0 OR s.call_seq > 0)) AS coverage_unknown,
  (SELECT json_group_array(json_array(k.cat, k.status, k.git, k.cmd, k.at)) FROM (
     SELECT c.tool_category AS cat, CASE WHEN c.end_event_id IS NOT NULL THEN c.outcome_status END AS status,
            c.git_subcommand AS git, c.command_category AS cmd, coalesce(c.started_at, c.finished_at) AS at
     FROM tool_call_facts c
     WHERE c.turn_id IN (SELECT x.turn_id FROM unit_turns x WHERE x.work_unit_id = u.work_unit_id
                         ORDER BY x.active_until DESC LIMIT 5)
       AND NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)
     ORDER BY at DESC, c.tool_call_id DESC LIMIT 5) k) AS recent
FROM unit_index u;

-- The decisive call (an edit, a shell command or a plan) among the recent ones, the verdicts on
-- the last turn and attempt, and the idle time.
CREATE VIEW unit_judged AS
SELECT b.*,
  (SELECT min(CAST(j.key AS INTEGER)) FROM json_each(b.recent) j
    WHERE json_extract(j.value, '$[0]') IN ('file_write', 'file_edit', 'notebook', 'shell', 'plan')) AS dec_pos,
  (SELECT t.status FROM turn_facts t WHERE t.turn_id = b.last_turn_id) AS last_turn_status,
  (SELECT s.ended_at IS NOT NULL FROM unit_turns t JOIN session_facts s ON s.session_id = t.session_id
    WHERE t.turn_id = b.last_turn_id) AS last_session_ended,
  (SELECT a.outcome FROM attempt_facts a WHERE a.group_key = b.last_attempt_key) AS last_outcome,
  (SELECT attempt_id FROM attempt_facts a WHERE a.group_key = b.last_attempt_key) AS last_attempt,
  (@us(@now()) - @us(b.updated_at)) / 1000000 AS idle_s,
  (SELECT m.turn_id FROM unit_turns m JOIN turn_facts t ON t.turn_id = m.turn_id
    WHERE m.work_unit_id = b.work_unit_id AND t.prompt_event_id IS NOT NULL ORDER BY m.order_key LIMIT 1) AS objective_turn
FROM unit_base b;

CREATE VIEW unit_phased AS
SELECT j.*,
  json_extract(j.recent, '$[' || j.dec_pos || '][0]') AS dec_cat,
  json_extract(j.recent, '$[' || j.dec_pos || '][1]') AS dec_status,
  json_extract(j.recent, '$[' || j.dec_pos || '][2]') AS dec_git,
  json_extract(j.recent, '$[' || j.dec_pos || '][3]') AS dec_cmd,
  EXISTS (SELECT 1 FROM unit_turns m JOIN unit_edits e ON e.turn_id = m.turn_id
          WHERE m.work_unit_id = j.work_unit_id
            AND e.first_edit < coalesce(json_extract(j.recent, '$[' || j.dec_pos || '][4]'),
                                        json_extract(j.recent, '$[#-1][4]'), '')) AS edit_before,
  CASE WHEN j.coverage_unknown THEN 'unknown'
       WHEN j.last_turn_status = 'completed' AND j.last_outcome = 'succeeded' AND NOT j.in_flight
            AND (j.last_session_ended OR j.idle_s > 1800) THEN 'completed'
       WHEN j.blocking_signal IS NULL AND j.idle_s > 7200
            AND (j.last_outcome IN ('failed', 'superseded', 'abandoned', 'in_progress') OR j.in_flight
                 OR j.last_turn_status = 'in_progress') THEN 'abandoned'
       ELSE 'open' END AS status
FROM unit_judged j;

CREATE VIEW work_units AS
SELECT p.work_unit_id, 1 AS version, p.project_id, p.project_name,
  (SELECT t.prompt_event_id FROM turn_facts t WHERE t.turn_id = p.objective_turn) AS objective_event_id,
  (SELECT x.objective FROM turn_text x WHERE x.turn_id = p.objective_turn) AS objective,
  CASE WHEN p.blocking_signal IS NOT NULL THEN 'blocked'
       WHEN p.dec_pos IS NULL THEN CASE WHEN p.edit_before THEN 'review' ELSE 'explore' END
       WHEN p.dec_cat IN ('file_write', 'file_edit', 'notebook', 'shell') AND p.dec_status IN ('failure', 'denied') THEN 'debug'
       WHEN p.dec_cat = 'shell' AND p.dec_git IN ('commit', 'push') THEN 'deliver'
       WHEN p.dec_cat = 'shell' AND p.dec_cmd = 'test' THEN CASE WHEN p.edit_before THEN 'verify' ELSE 'explore' END
       WHEN p.dec_cat = 'shell' THEN 'implement'
       WHEN p.dec_cat = 'plan' THEN 'plan'
       WHEN p.dec_pos > 0 THEN 'review'
       ELSE 'implement' END AS phase,
  CASE WHEN p.blocking_signal IS NOT NULL
         THEN 'waiting on a human: ' || coalesce((SELECT g.kind || CASE WHEN g.signal_type IS NOT NULL THEN ' (' || g.signal_type || ')' ELSE '' END
                                                  FROM signal_facts g WHERE g.event_id = p.blocking_signal), 'a signal')
              || ' raised at ' || (SELECT g.raised_at FROM signal_facts g WHERE g.event_id = p.blocking_signal)
              || ' is still pending'
       WHEN p.dec_pos IS NULL THEN 'no edit, shell command or plan among the last ' || json_array_length(p.recent)
              || ' calls' || CASE WHEN p.edit_before THEN ', after earlier edits' ELSE ' and no edit yet' END
       WHEN p.dec_cat IN ('file_write', 'file_edit', 'notebook', 'shell') AND p.dec_status IN ('failure', 'denied')
         THEN 'the last ' || CASE WHEN p.dec_cat = 'shell' THEN 'shell command' ELSE 'edit' END || ' ended ' || p.dec_status
       WHEN p.dec_cat = 'shell' AND p.dec_git IN ('commit', 'push') THEN 'the last decisive call is a git ' || p.dec_git
       WHEN p.dec_cat = 'shell' AND p.dec_cmd = 'test'
         THEN CASE WHEN p.edit_before THEN 'tests ran after an edit' ELSE 'tests ran with no edit before them' END
       WHEN p.dec_cat = 'shell' THEN 'the last decisive call is a shell command'
       WHEN p.dec_cat = 'plan' THEN 'the last decisive call is a plan'
       WHEN p.dec_pos > 0 THEN 'an edit followed by ' || p.dec_pos || ' other call' || CASE WHEN p.dec_pos > 1 THEN 's' ELSE '' END
       ELSE 'the last call is an edit' END AS phase_reason,
  p.status,
  CASE p.status
    WHEN 'unknown' THEN 'nothing of its sessions was captured beyond their existence (coverage unknown)'
    WHEN 'completed' THEN 'last turn completed with a succeeded attempt, nothing in flight, '
                          || CASE WHEN p.last_session_ended THEN 'session ended'
                                  ELSE p.idle_s || 's idle (> 30 min)' END
    WHEN 'abandoned' THEN CASE WHEN p.in_flight OR p.last_turn_status = 'in_progress' OR p.last_outcome = 'in_progress'
                               THEN 'the last turn never stopped and ' ELSE 'last attempt ' || p.last_outcome || ' and ' END
                          || p.idle_s || 's idle (> 2 h)'
    ELSE CASE WHEN p.blocking_signal IS NOT NULL THEN 'the last turn is waiting on a human'
              WHEN p.last_session_ended THEN 'session ended but the work did not finish: ' || p.idle_s || 's idle (<= 2 h)'
              ELSE 'session open and ' || p.idle_s || 's idle' || CASE WHEN p.idle_s <= 1800 THEN ' (<= 30 min)' ELSE '' END END
  END AS status_reason,
  p.started_at, p.updated_at,
  CASE WHEN p.status IN ('completed', 'abandoned') THEN p.updated_at END AS ended_at,
  (SELECT json_group_array(session_id) FROM (
     SELECT m.session_id FROM unit_turns m WHERE m.work_unit_id = p.work_unit_id
     GROUP BY m.session_id ORDER BY min(m.order_key))) AS sessions,
  (SELECT count(DISTINCT m.session_id) FROM unit_turns m WHERE m.work_unit_id = p.work_unit_id) AS session_count,
  (SELECT json_group_array(turn_id) FROM (
     SELECT m.turn_id FROM unit_turns m WHERE m.work_unit_id = p.work_unit_id ORDER BY m.order_key)) AS turns,
  (SELECT count(*) FROM unit_turns m WHERE m.work_unit_id = p.work_unit_id) AS turn_count,
  (SELECT json_group_array(attempt_id) FROM (
     SELECT a.attempt_id FROM unit_turns m JOIN attempt_facts a ON a.turn_id = m.turn_id
     WHERE m.work_unit_id = p.work_unit_id AND a.retraction = 0 ORDER BY a.started_at, m.order_key, a.attempt_index))
    AS attempts,
  (SELECT count(*) FROM unit_turns m JOIN attempt_facts a ON a.turn_id = m.turn_id
    WHERE m.work_unit_id = p.work_unit_id AND a.retraction = 0) AS attempt_count,
  (SELECT count(*) FROM unit_turns m JOIN attempt_facts a ON a.turn_id = m.turn_id
    WHERE m.work_unit_id = p.work_unit_id AND a.retraction = 0 AND a.outcome IN ('failed', 'superseded'))
    AS failed_attempt_count,
  (SELECT json_group_array(path) FROM (
     SELECT q.value AS path FROM unit_turns m JOIN tool_call_facts c ON c.turn_id = m.turn_id, json_each(c.paths) q
     WHERE m.work_unit_id = p.work_unit_id AND c.tool_category IN ('file_write', 'file_edit', 'notebook', 'shell')
       AND NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)
     GROUP BY q.value ORDER BY min(coalesce(c.started_at, c.finished_at)), q.value)) AS paths,
  (SELECT json_group_array(sha) FROM (
     SELECT k.sha FROM unit_turns m JOIN tool_call_facts c ON c.turn_id = m.turn_id AND c.git_subcommand = 'commit'
       JOIN commit_facts k ON k.tool_call_id = c.tool_call_id
     WHERE m.work_unit_id = p.work_unit_id AND k.sha IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)
     GROUP BY k.sha ORDER BY min(k.end_key))) AS commit_shas,
  (SELECT json_group_array(provider) FROM (
     SELECT m.provider FROM unit_turns m WHERE m.work_unit_id = p.work_unit_id
     GROUP BY m.provider ORDER BY min(m.order_key))) AS actors,
  p.last_attempt,
  p.blocking_signal,
  (SELECT json_group_array(ev) FROM (
     SELECT ev FROM (
       SELECT coalesce(t.prompt_event_id, t.first_event_id) AS ev, t.started_at AS at, 0 AS o
         FROM unit_turns m JOIN turn_facts t ON t.turn_id = m.turn_id WHERE m.work_unit_id = p.work_unit_id
       UNION ALL
       SELECT a.first_event_id, a.first_at, 1 FROM unit_turns m JOIN attempt_facts a ON a.turn_id = m.turn_id
        WHERE m.work_unit_id = p.work_unit_id AND a.retraction = 0
       UNION ALL
       SELECT a.fail_event_id, a.boundary, 2 FROM unit_turns m JOIN attempt_facts a ON a.turn_id = m.turn_id
        WHERE m.work_unit_id = p.work_unit_id AND a.retraction = 0 AND a.fail_event_id IS NOT NULL
       UNION ALL
       SELECT t.stop_event_id, t.ended_at, 3 FROM unit_turns m JOIN turn_facts t ON t.turn_id = m.turn_id
        WHERE m.work_unit_id = p.work_unit_id AND t.stop_event_id IS NOT NULL
       UNION ALL
       SELECT p.blocking_signal, NULL, 4)
     WHERE ev IS NOT NULL GROUP BY ev ORDER BY min(coalesce(at, '~')), min(o), ev)) AS evidence,
  coalesce(min(0.7, (SELECT min(r.confidence) FROM unit_turns m JOIN attempt_rows r ON r.turn_id = m.turn_id
                     WHERE m.work_unit_id = p.work_unit_id AND r.retraction = 0)), 0.4) AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM unit_phased p;
