-- ---- work units (reference inference §2.9, spec/projections.md §16) -------------------------
-- Membership is stored (unit_turns, kept by attemptdb/projections/units.py), and so is each
-- unit's state (unit_state: what its status and phase read that does not depend on the time of
-- reading, computed by unit_state_live below for the units an append touched). Everything that
-- depends on the time of reading (status, idleness, whether a wait still blocks) is judged here,
-- against @now(). Every read is by key or an index range of the unit's members.

-- A unit's newest activity, last turn and attempt, calls in flight, and whether anything of its
-- sessions was captured.
CREATE VIEW unit_state_base AS
SELECT u.work_unit_id,
  (SELECT max(m.active_until) FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) AS updated_at,
  (SELECT m.turn_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id
    ORDER BY m.order_key DESC LIMIT 1) AS last_turn_id,
  -- the latest attempt: only turns active since the latest start in the most recently active
  -- turn can hold it (an attempt starts within its turn's activity); that bound read once
  (WITH lb AS MATERIALIZED (
     SELECT coalesce((SELECT max(a2.started_at) FROM attempt_facts a2
                      WHERE a2.retraction = 0 AND a2.turn_id = (SELECT m2.turn_id FROM unit_turns m2
                                                                WHERE m2.work_unit_id = u.work_unit_id
                                                                ORDER BY m2.active_until DESC LIMIT 1)), '') AS bound)
   SELECT a.group_key FROM lb CROSS JOIN unit_turns m CROSS JOIN attempt_facts a ON a.turn_id = m.turn_id
   WHERE m.work_unit_id = u.work_unit_id AND m.active_until >= lb.bound AND a.retraction = 0
   ORDER BY a.started_at DESC, m.order_key DESC, a.attempt_index DESC LIMIT 1) AS last_attempt_key,
  EXISTS (SELECT 1 FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id AND m.open_calls > 0) AS in_flight,
  NOT EXISTS (SELECT 1 FROM unit_turns m CROSS JOIN session_facts s ON s.session_id = m.session_id
              WHERE m.work_unit_id = u.work_unit_id AND (s.prompt_count > 0 OR s.call_seq > 0)) AS coverage_unknown
FROM unit_index u;

-- The stored state of a unit (table unit_state, same columns): the base above, what status reads
-- of its last turn, that turn's session and its last attempt, and the phase as if nothing waited
-- on a human (calm_phase: the verdict padded to 9 characters, then its reason). The phase reads
-- the last five calls (newest first: a turn's calls are numbered in the order they were first
-- seen) among the five most recently active turns; the decisive one is the newest edit, shell
-- command or plan.
CREATE VIEW unit_state_live AS
SELECT b.work_unit_id, b.updated_at, b.last_turn_id, b.last_attempt_key, b.in_flight, b.coverage_unknown,
  (SELECT t.status FROM turn_facts t WHERE t.turn_id = b.last_turn_id) AS last_turn_status,
  (SELECT f.ended_at IS NOT NULL FROM unit_turns t CROSS JOIN session_facts f ON f.session_id = t.session_id
    WHERE t.turn_id = b.last_turn_id) AS last_session_ended,
  (SELECT a.outcome FROM attempt_facts a WHERE a.group_key = b.last_attempt_key) AS last_outcome,
  (WITH r AS MATERIALIZED (
          SELECT (SELECT json_group_array(json_array(k.cat, k.status, k.git, k.cmd, k.at)) FROM (
               SELECT c.tool_category AS cat, CASE WHEN c.end_event_id IS NOT NULL THEN c.outcome_status END AS status,
                      c.git_subcommand AS git, c.command_category AS cmd, coalesce(c.started_at, c.finished_at) AS at
               FROM (SELECT x.turn_id FROM unit_turns x WHERE x.work_unit_id = b.work_unit_id
                     ORDER BY x.active_until DESC LIMIT 5) x
               CROSS JOIN tool_call_facts c ON c.turn_id = x.turn_id
                 AND c.call_ord >= coalesce((SELECT c5.call_ord FROM tool_call_facts c5 WHERE c5.turn_id = x.turn_id
                                             ORDER BY c5.call_ord DESC LIMIT 1 OFFSET 4), 0)
               WHERE NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)
               ORDER BY at DESC, c.call_ord DESC LIMIT 5) k) AS recent),
        d AS MATERIALIZED (
          SELECT r.*, (SELECT min(CAST(j.key AS INTEGER)) FROM json_each(r.recent) j
                       WHERE json_extract(j.value, '$[0]') IN ('file_write', 'file_edit', 'notebook', 'shell', 'plan')) AS dec_pos
          FROM r),
        k AS MATERIALIZED (
          SELECT d.*,
            json_extract(d.recent, '$[' || d.dec_pos || '][0]') AS dec_cat,
            json_extract(d.recent, '$[' || d.dec_pos || '][1]') AS dec_status,
            json_extract(d.recent, '$[' || d.dec_pos || '][2]') AS dec_git,
            json_extract(d.recent, '$[' || d.dec_pos || '][3]') AS dec_cmd,
            json_array_length(d.recent) AS n_recent,
            coalesce((SELECT min(w.first_key) FROM unit_path_windows w WHERE w.work_unit_id = b.work_unit_id), '~')
              < coalesce(json_extract(d.recent, '$[' || d.dec_pos || '][4]'), json_extract(d.recent, '$[#-1][4]'), '')
              AS edit_before
          FROM d)
   SELECT substr(CASE WHEN k.dec_pos IS NULL THEN CASE WHEN k.edit_before THEN 'review' ELSE 'explore' END
               WHEN k.dec_cat IN ('file_write', 'file_edit', 'notebook', 'shell') AND k.dec_status IN ('failure', 'denied') THEN 'debug'
               WHEN k.dec_cat = 'shell' AND k.dec_git IN ('commit', 'push') THEN 'deliver'
               WHEN k.dec_cat = 'shell' AND k.dec_cmd = 'test' THEN CASE WHEN k.edit_before THEN 'verify' ELSE 'explore' END
               WHEN k.dec_cat = 'shell' THEN 'implement'
               WHEN k.dec_cat = 'plan' THEN 'plan'
               WHEN k.dec_pos > 0 THEN 'review'
               ELSE 'implement' END || '         ', 1, 9) ||
          CASE WHEN k.dec_pos IS NULL THEN 'no edit, shell command or plan among the last ' || k.n_recent
                      || ' calls' || CASE WHEN k.edit_before THEN ', after earlier edits' ELSE ' and no edit yet' END
               WHEN k.dec_cat IN ('file_write', 'file_edit', 'notebook', 'shell') AND k.dec_status IN ('failure', 'denied')
                 THEN 'the last ' || CASE WHEN k.dec_cat = 'shell' THEN 'shell command' ELSE 'edit' END || ' ended ' || k.dec_status
               WHEN k.dec_cat = 'shell' AND k.dec_git IN ('commit', 'push') THEN 'the last decisive call is a git ' || k.dec_git
               WHEN k.dec_cat = 'shell' AND k.dec_cmd = 'test'
                 THEN CASE WHEN k.edit_before THEN 'tests ran after an edit' ELSE 'tests ran with no edit before them' END
               WHEN k.dec_cat = 'shell' THEN 'the last decisive call is a shell command'
               WHEN k.dec_cat = 'plan' THEN 'the last decisive call is a plan'
               WHEN k.dec_pos > 0 THEN 'an edit followed by ' || k.dec_pos || ' other call' || CASE WHEN k.dec_pos > 1 THEN 's' ELSE '' END
               ELSE 'the last call is an edit' END
   FROM k) AS calm_phase
FROM unit_state_base b;

-- What a unit's status reads: its stored state and the wait holding it up (a pending blocking
-- signal of a member whose session was active in the last 12 h).
CREATE VIEW unit_base AS
SELECT u.work_unit_id, u.project_id, u.first_turn_id, u.started_at, s.updated_at, s.last_turn_id, s.last_attempt_key,
  s.in_flight,
  (SELECT substr(m.waiting_since, 29) FROM unit_turns m CROSS JOIN session_facts f ON f.session_id = m.session_id
    WHERE m.work_unit_id = u.work_unit_id AND m.waiting_since IS NOT NULL
      AND @us(coalesce(f.last_activity_at, f.last_at)) >= @us(@now()) - 43200000000
    ORDER BY m.waiting_since DESC LIMIT 1) AS blocking_signal,
  s.coverage_unknown, s.last_turn_status, s.last_session_ended, s.last_outcome, s.calm_phase
FROM unit_index u JOIN unit_state s ON s.work_unit_id = u.work_unit_id;

-- Status and phase of each unit, each the verdict padded to 9 characters, then its reason: one
-- reference to the column reads either part (a view's expression is copied into every use).
CREATE VIEW unit_verdicts AS
SELECT u.work_unit_id,
  (WITH b AS MATERIALIZED (SELECT * FROM unit_base x WHERE x.work_unit_id = u.work_unit_id),
        -- idle = now - updated_at, never below 0: a member's activity stamped after now (a
        -- provider clock ahead of the capture clock, up to the 7-day bound of
        -- spec/canonical-event.md) reads 0 s idle, and `ahead_s` says by how much (§16)
        v AS MATERIALIZED (
          SELECT b.*, max(0, (@us(@now()) - @us(b.updated_at)) / 1000000) AS idle_s,
                 (@us(b.updated_at) - @us(@now())) / 1000000 AS ahead_s FROM b),
        w AS MATERIALIZED (
          SELECT v.*,
            CASE WHEN v.coverage_unknown THEN 'unknown'
                 WHEN v.last_turn_status = 'completed' AND v.last_outcome = 'succeeded' AND NOT v.in_flight
                      AND (v.last_session_ended OR v.idle_s > 1800) THEN 'completed'
                 WHEN v.blocking_signal IS NULL AND v.idle_s > 7200
                      AND (v.last_outcome IN ('failed', 'superseded', 'abandoned', 'in_progress') OR v.in_flight
                           OR v.last_turn_status = 'in_progress') THEN 'abandoned'
                 ELSE 'open' END AS status
          FROM v)
   SELECT substr(w.status || '         ', 1, 9) || CASE w.status
     WHEN 'unknown' THEN 'nothing of its sessions was captured beyond their existence (coverage unknown)'
     WHEN 'completed' THEN 'last turn completed with a succeeded attempt, nothing in flight, '
                           || CASE WHEN w.last_session_ended THEN 'session ended' ELSE @span(w.idle_s) || ' idle (> 30 min)' END
     WHEN 'abandoned' THEN CASE WHEN w.in_flight OR w.last_turn_status = 'in_progress' OR w.last_outcome = 'in_progress'
                                THEN 'the last turn never stopped and ' ELSE 'last attempt ' || w.last_outcome || ' and ' END
                           || @span(w.idle_s) || ' idle (> 2 h)'
     ELSE CASE WHEN w.blocking_signal IS NOT NULL THEN 'the last turn is waiting on a human'
               WHEN w.last_session_ended THEN 'session ended but the work did not finish: ' || @span(w.idle_s) || ' idle (<= 2 h'
                                              || CASE WHEN w.ahead_s > 0 THEN '; its last activity is stamped ' || @span(w.ahead_s)
                                                      || ' after now' ELSE '' END || ')'
               ELSE 'session open and ' || @span(w.idle_s) || ' idle'
                    || CASE WHEN w.ahead_s > 0 THEN ' (<= 30 min; its last activity is stamped ' || @span(w.ahead_s) || ' after now)'
                            WHEN w.idle_s <= 1800 THEN ' (<= 30 min)' ELSE '' END END
     END FROM w) AS status_x,
  -- phase: blocked while a wait is pending, otherwise the stored verdict of the recent calls
  (SELECT CASE WHEN b.blocking_signal IS NULL THEN b.calm_phase
               ELSE 'blocked  waiting on a human: '
                    || coalesce((SELECT g.kind || CASE WHEN g.signal_type IS NOT NULL THEN ' (' || g.signal_type || ')' ELSE '' END
                                        || ' raised at ' || g.raised_at
                                 FROM signal_facts g WHERE g.event_id = b.blocking_signal), 'a signal')
                    || ' is still pending' END
   FROM unit_base b WHERE b.work_unit_id = u.work_unit_id) AS phase_x
FROM unit_index u;

CREATE VIEW work_units AS
SELECT u.work_unit_id, 1 AS version, u.project_id,
  (SELECT s.project_name FROM unit_turns f CROSS JOIN session_facts s ON s.session_id = f.session_id
    WHERE f.turn_id = u.first_turn_id) AS project_name,
  (SELECT t.prompt_event_id FROM unit_turns m CROSS JOIN turn_facts t ON t.turn_id = m.turn_id
    WHERE m.work_unit_id = u.work_unit_id AND t.prompt_event_id IS NOT NULL ORDER BY m.order_key LIMIT 1) AS objective_event_id,
  (SELECT x.objective FROM turn_text x WHERE x.turn_id = (
     SELECT m.turn_id FROM unit_turns m CROSS JOIN turn_facts t ON t.turn_id = m.turn_id
     WHERE m.work_unit_id = u.work_unit_id AND t.prompt_event_id IS NOT NULL ORDER BY m.order_key LIMIT 1)) AS objective,
  rtrim(substr(v.phase_x, 1, 9)) AS phase,
  substr(v.phase_x, 10) AS phase_reason,
  rtrim(substr(v.status_x, 1, 9)) AS status,
  substr(v.status_x, 10) AS status_reason,
  u.started_at,
  (SELECT s.updated_at FROM unit_state s WHERE s.work_unit_id = u.work_unit_id) AS updated_at,
  CASE WHEN substr(v.status_x, 1, 9) IN ('completed', 'abandoned')
       THEN (SELECT s.updated_at FROM unit_state s WHERE s.work_unit_id = u.work_unit_id) END AS ended_at,
  (SELECT json_group_array(session_id) FROM (
     SELECT m.session_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id
     GROUP BY m.session_id ORDER BY min(m.order_key))) AS sessions,
  (SELECT count(DISTINCT m.session_id) FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) AS session_count,
  (SELECT json_group_array(turn_id) FROM (
     SELECT m.turn_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id ORDER BY m.order_key)) AS turns,
  (SELECT count(*) FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) AS turn_count,
  -- its attempts, turn by turn (each turn's in their order: unit_turns.attempt_ids)
  (SELECT json_group_array(a) FROM (SELECT q.value AS a FROM unit_turns m, json_each(m.attempt_ids) q
                                     WHERE m.work_unit_id = u.work_unit_id ORDER BY m.order_key, q.key)) AS attempts,
  (SELECT sum(json_array_length(m.attempt_ids)) FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) AS attempt_count,
  (SELECT sum(m.failed_attempts) FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) AS failed_attempt_count,
  -- the paths its calls edited (no shell call carries paths here), first touched first
  (SELECT json_group_array(path) FROM (
     SELECT w.path FROM unit_path_windows w WHERE w.work_unit_id = u.work_unit_id ORDER BY w.first_key, w.path))
    AS paths,
  (SELECT json_group_array(sha) FROM (
     SELECT k.sha FROM (SELECT DISTINCT m.session_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) ms
     CROSS JOIN commit_facts k ON k.session_id = ms.session_id
     CROSS JOIN tool_call_facts c ON c.tool_call_id = k.tool_call_id
     WHERE k.sha IS NOT NULL
       AND EXISTS (SELECT 1 FROM unit_turns m WHERE m.turn_id = c.turn_id AND m.work_unit_id = u.work_unit_id)
       AND NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)
     GROUP BY k.sha ORDER BY min(k.end_key))) AS commit_shas,
  (SELECT json_group_array(provider) FROM (
     SELECT m.provider FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id
     GROUP BY m.provider ORDER BY min(m.order_key))) AS actors,
  (SELECT a.attempt_id FROM unit_base b CROSS JOIN attempt_facts a ON a.group_key = b.last_attempt_key
    WHERE b.work_unit_id = u.work_unit_id) AS last_attempt,
  (SELECT b.blocking_signal FROM unit_base b WHERE b.work_unit_id = u.work_unit_id) AS blocking_signal,
  -- what it was inferred from: each member turn's prompt (or first event) and stop, in member
  -- order, then the last attempt's failing event and the wait holding it up
  (SELECT json_group_array(ev) FROM (
     SELECT q.value AS ev, 0 AS part, m.order_key AS k, q.key AS j
     FROM unit_turns m, json_each(json_array(m.first_event_id, m.stop_event_id)) q
     WHERE m.work_unit_id = u.work_unit_id AND q.value IS NOT NULL
     UNION ALL
     SELECT ev, 1, '', j FROM (SELECT a.fail_event_id AS ev, 0 AS j FROM unit_base b CROSS JOIN attempt_facts a ON a.group_key = b.last_attempt_key
                               WHERE b.work_unit_id = u.work_unit_id
                               UNION ALL SELECT b.blocking_signal, 1 FROM unit_base b WHERE b.work_unit_id = u.work_unit_id)
     WHERE ev IS NOT NULL AND ev NOT IN (SELECT m.stop_event_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id
                                         AND m.stop_event_id IS NOT NULL)
     ORDER BY part, k, j)) AS evidence,
  -- the lowest member attempt's confidence (attempts' rule: 0.4 for a session captured minimally,
  -- 0.6 for a turn that did not finish or a call paired by order), capped at 0.7; 0.4 without attempts
  CASE WHEN NOT EXISTS (SELECT 1 FROM unit_turns m CROSS JOIN attempt_facts a ON a.turn_id = m.turn_id
                        WHERE m.work_unit_id = u.work_unit_id AND a.retraction = 0) THEN 0.4
       WHEN EXISTS (SELECT 1 FROM (SELECT DISTINCT m.session_id FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) ms
                    CROSS JOIN session_cover c ON c.session_id = ms.session_id
                    WHERE c.coverage IN ('minimal', 'unknown')) THEN 0.4
       WHEN EXISTS (SELECT 1 FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id AND m.loose_calls > 0)
         OR EXISTS (SELECT 1 FROM unit_turns m CROSS JOIN attempt_facts a ON a.turn_id = m.turn_id
                    WHERE m.work_unit_id = u.work_unit_id AND a.retraction = 0
                      AND a.turn_status NOT IN ('completed', 'failed')) THEN 0.6
       ELSE 0.7 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM unit_index u JOIN unit_verdicts v ON v.work_unit_id = u.work_unit_id;
