-- ---- Needs You (reference inference §2.13, spec/projections.md §16) ------------------------
-- Is anyone waiting on me, what is stuck, who is colliding: four kinds, ranked 1..4. Sessions
-- that ended, or are stale under the 12 h rule (no activity for 12 h), are left out; so is a row
-- under 0.5 confidence. Sorted by rank, oldest first, then higher confidence, then id.

CREATE VIEW needs_you AS
SELECT kind, rank, session_id, work_unit_id, provider, project_name, since, confidence, reason, evidence
FROM (
  -- 1 permission_gate, 2 input_request: an agent waiting on a human right now
  SELECT CASE WHEN g.kind = 'permission_requested' OR g.signal_type = 'permission_prompt'
              THEN 'permission_gate' ELSE 'input_request' END AS kind,
    CASE WHEN g.kind = 'permission_requested' OR g.signal_type = 'permission_prompt' THEN 1 ELSE 2 END AS rank,
    g.session_id, (SELECT m.work_unit_id FROM unit_turns m WHERE m.turn_id = g.turn_id) AS work_unit_id,
    s.provider, s.project_name, g.raised_at AS since,
    CASE WHEN s.coverage = 'full' THEN 0.85 ELSE 0.65 END AS confidence,
    CASE WHEN g.kind = 'permission_requested' OR g.signal_type = 'permission_prompt'
         THEN 'waiting on a permission decision since ' || g.raised_at
         ELSE 'waiting for input (' || coalesce(g.signal_type, g.kind) || ') since ' || g.raised_at END
      || ', with no later progress or response observed' AS reason,
    json_array(g.event_id) AS evidence, g.event_id AS sort_id
  FROM signal_facts g JOIN session_cover s ON s.session_id = g.session_id
  WHERE g.cleared_at IS NULL AND g.blocking = 1 AND s.retraction = 0 AND s.ended_at IS NULL
    AND @us(coalesce(s.last_activity_at, s.last_at)) >= @us(@now()) - 43200000000
    AND (g.kind = 'permission_requested' OR g.signal_type IN ('permission_prompt', 'agent_needs_input', 'idle_prompt'))
    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = g.event_id AND e.retracted = 1)
  UNION ALL
  -- 3 repeated_failure: an open unit whose last two attempts ended as failures of one class, and
  -- neither was retried into a success
  SELECT 'repeated_failure', 3, a1.session_id, r.work_unit_id, a1.provider, r.project_name,
    coalesce(a1.ended_at, a1.started_at),
    CASE WHEN (SELECT c.coverage FROM session_cover c WHERE c.session_id = a1.session_id) = 'full' THEN 0.7 ELSE 0.5 END,
    'the last two attempts failed the same way (' || a1.failure_class || '); nothing has succeeded since',
    (SELECT json_group_array(ev) FROM (SELECT coalesce(a2.cause_ev, a2.first_event_id) AS ev
                                       UNION ALL SELECT coalesce(a1.cause_ev, a1.first_event_id))),
    r.work_unit_id
  FROM (SELECT p.work_unit_id,
          (SELECT s.project_name FROM unit_turns f CROSS JOIN session_facts s ON s.session_id = f.session_id
            WHERE f.turn_id = p.first_turn_id) AS project_name,
          p.last_attempt_key AS k1,
          (SELECT a.group_key FROM unit_turns m CROSS JOIN attempt_facts a ON a.turn_id = m.turn_id
            WHERE m.work_unit_id = p.work_unit_id AND a.retraction = 0 AND a.group_key <> p.last_attempt_key
              AND (a.started_at, m.order_key, a.attempt_index)
                  <= (SELECT x.started_at, mx.order_key, x.attempt_index FROM attempt_facts x
                        JOIN unit_turns mx ON mx.turn_id = x.turn_id WHERE x.group_key = p.last_attempt_key)
            ORDER BY a.started_at DESC, m.order_key DESC, a.attempt_index DESC LIMIT 1) AS k2
        FROM units_open_now o JOIN unit_base p ON p.work_unit_id = o.work_unit_id
        WHERE (SELECT a.outcome FROM attempt_facts a WHERE a.group_key = p.last_attempt_key) IN ('failed', 'superseded')) r
  JOIN attempt_facts a1 ON a1.group_key = r.k1
  JOIN attempt_facts a2 ON a2.group_key = r.k2
  WHERE a1.failed AND a2.failed AND a1.failure_class IS NOT NULL AND a1.failure_class = a2.failure_class
    AND a1.ended_at IS NOT NULL AND a2.ended_at IS NOT NULL
    AND coalesce((SELECT s.outcome FROM attempt_facts s WHERE s.group_key = a1.superseded_by_key), '') <> 'succeeded'
    AND coalesce((SELECT s.outcome FROM attempt_facts s WHERE s.group_key = a2.superseded_by_key), '') <> 'succeeded'
  UNION ALL
  -- 4 work_conflict: two open units editing the same files
  SELECT 'work_conflict', 4, NULL, c.second_work_unit,
    (SELECT m.provider FROM unit_turns m WHERE m.work_unit_id = c.second_work_unit ORDER BY m.order_key LIMIT 1),
    (SELECT s.project_name FROM unit_turns m JOIN session_facts s ON s.session_id = m.session_id
      WHERE m.work_unit_id = c.second_work_unit ORDER BY m.order_key LIMIT 1),
    c.started_at, c.confidence,
    c.path_count || ' path' || CASE WHEN c.path_count > 1 THEN 's' ELSE '' END || ' edited by two open units ('
      || c.first_work_unit || ', ' || c.second_work_unit || '): ' || json_extract(c.paths, '$[0]')
      || CASE WHEN c.path_count > 1 THEN ' +' || (c.path_count - 1) || ' more' ELSE '' END,
    c.evidence, c.conflict_id
  FROM conflicts c
  WHERE c.first_work_unit IN (SELECT work_unit_id FROM units_open_now)
    AND c.second_work_unit IN (SELECT work_unit_id FROM units_open_now) AND c.overlapping
)
WHERE confidence >= 0.5
ORDER BY rank, since, confidence DESC, sort_id;
