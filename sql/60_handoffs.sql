-- ---- handoffs (spec/projections.md) -------------------------------------------------------

-- Turn spans that can give or receive: [turn start, last event attributed to the turn], from
-- agents' sessions that are not retracted and had a prompt or a tool call. A session's first span
-- begins at the session's start when that is earlier. A call still in flight is work in progress:
-- its span lasts at least until @in_flight_until (its start + 30 min, cut at the turn's close or
-- the session's end after it; sql/00_predicates.sql), so another agent beginning meanwhile is
-- concurrent, not a handoff. Sessions of provider `attempt` (what
-- people and CI record themselves: `attempt run`, `attempt note`, the Recorder) are no agent's:
-- they neither give nor take, and the agents' spans around them are judged as if they were not
-- there.
CREATE VIEW handoff_spans AS
SELECT t.turn_id AS turn_id, t.session_id AS session_id, s.provider AS provider, s.project_id AS project_id,
  t.started_at AS span_start,
  max(t.started_at, CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_at, t.last_at) ELSE t.last_at END,
      coalesce(@in_flight_until(t), '')) AS span_end,
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN min(s.started_at, t.started_at) ELSE t.started_at END AS begins,
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN s.first_event_id ELSE t.first_event_id END AS begin_event_id
FROM turn_facts t
JOIN session_facts s ON s.session_id = t.session_id
WHERE (s.prompt_count > 0 OR s.call_seq > 0) AND s.retraction = 0 AND s.provider <> 'attempt';

-- Receivers on a quiet project, each with the one giver considered: the span whose end is the
-- latest among those sorted before it (a window over the project's spans, then key lookups).
-- Whether the giver had ended by then: its last session end at or before the handoff, with no
-- resume (a start, a tool call start, a permission request or a human prompt) after it; read
-- from the log by the session index, only for givers that ever ended.
CREATE VIEW handoff_candidates AS
SELECT c.*,
  (c.giver_end_key IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM events p
                   WHERE p.session_id = c.giver_raw AND p.observed_at >= substr(c.giver_end_key, 1, 27)
                     AND p.observed_at <= c.handoff_at AND p.observed_at || printf('|%020d|%020d|', p.hlc, p.source_seq) || p.event_id > c.giver_end_key
                     AND (p.kind IN ('session_started', 'tool_call_started', 'permission_requested')
                          OR (p.kind = 'prompt_submitted'
                              AND EXISTS (SELECT 1 FROM turn_facts h WHERE h.prompt_event_id = p.event_id)))
                     AND @gsid(p) = c.from_session
                     AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event'))
  ) AS giver_ended,
  substr(c.giver_end_key, 1, 27) AS giver_ended_at,
  substr(c.giver_end_key, 71) AS giver_end_event
FROM (
  SELECT r.turn_id AS to_turn, r.session_id AS to_session, r.provider AS to_provider,
    r.project_id AS project_id, r.begins AS handoff_at, r.begin_event_id AS to_event,
    gt.turn_id AS from_turn, gt.session_id AS from_session, gs.provider AS from_provider,
    substr(r.prior, 1, 27) AS giver_end,
    CASE WHEN gs.cur_turn_id = gt.turn_id THEN coalesce(gs.turn_last_event_id, gt.last_event_id)
         ELSE gt.last_event_id END AS giver_last_event,
    gs.raw_session_id AS giver_raw,
    CASE WHEN gs.saw_end THEN (
      SELECT p.observed_at || printf('|%020d|%020d|', p.hlc, p.source_seq) || p.event_id FROM events p
      WHERE p.session_id = gs.raw_session_id AND p.kind = 'session_ended' AND p.observed_at <= r.begins
        AND @gsid(p) = gs.session_id
        AND NOT EXISTS (SELECT 1 FROM retraction_facts x WHERE x.target = p.event_id AND x.target_type = 'event')
      ORDER BY p.observed_at DESC, p.hlc DESC, p.source_seq DESC, p.event_id DESC LIMIT 1) END AS giver_end_key
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
     FROM session_facts gs JOIN tool_call_facts gc ON gc.session_id = gs.session_id, json_each(gc.paths) q
     WHERE gs.session_id = c.from_session AND (NOT gs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = gc.attempt_key AND r.retraction > 0))
       AND gc.tool_category IN ('file_write', 'file_edit', 'notebook') AND gc.first_at <= c.handoff_at
       AND q.value IN (
         SELECT q2.value FROM session_facts rs JOIN tool_call_facts rc ON rc.session_id = rs.session_id, json_each(rc.paths) q2
         WHERE rs.session_id = c.to_session AND (NOT rs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = rc.attempt_key AND r.retraction > 0))
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
             SELECT gc.start_event_id AS ev, gc.started_at AS at FROM session_facts gs JOIN tool_call_facts gc ON gc.session_id = gs.session_id, json_each(gc.paths) q
              WHERE gs.session_id = h.from_session AND (NOT gs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = gc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND gc.start_event_id IS NOT NULL AND gc.started_at <= h.handoff_at
             UNION ALL
             SELECT gc.end_event_id, gc.finished_at FROM session_facts gs JOIN tool_call_facts gc ON gc.session_id = gs.session_id, json_each(gc.paths) q
              WHERE gs.session_id = h.from_session AND (NOT gs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = gc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND gc.end_event_id IS NOT NULL AND gc.finished_at <= h.handoff_at)
           ORDER BY at DESC, ev DESC LIMIT 1)
         UNION ALL SELECT 4, (SELECT ev FROM (
             SELECT rc.start_event_id AS ev, rc.started_at AS at FROM session_facts rs JOIN tool_call_facts rc ON rc.session_id = rs.session_id, json_each(rc.paths) q
              WHERE rs.session_id = h.to_session AND (NOT rs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = rc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND rc.start_event_id IS NOT NULL AND rc.started_at >= h.handoff_at
             UNION ALL
             SELECT rc.end_event_id, rc.finished_at FROM session_facts rs JOIN tool_call_facts rc ON rc.session_id = rs.session_id, json_each(rc.paths) q
              WHERE rs.session_id = h.to_session AND (NOT rs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = rc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
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
