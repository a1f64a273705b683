-- ---- decisions (reference inference §2.10, spec/projections.md §16) --------------------------
-- Derived, never typed: rationale_source is always 'derived' and confidence is capped at 0.7.
-- Ids: 'dec_' + the anchor's uuid with its version digit set to 'a' (approach_change: the
-- abandoned attempt) or 'b' (human_intervention: the retry event), so the two never collide
-- (no SHA-1 in SQL; spec/projections.md §12).

-- approach_change: an attempt abandoned for the one that retried it.
CREATE VIEW decision_approach AS
SELECT 'dec_' || substr(a.attempt_id, 5, 14) || 'a' || substr(a.attempt_id, 20) AS decision_id,
  'approach_change' AS kind,
  (SELECT m.work_unit_id FROM unit_turns m WHERE m.turn_id = b.turn_id) AS work_unit_id,
  b.session_id, b.provider, b.project_id, b.project_name, b.turn_id,
  b.attempt_id AS selected, json_array(a.attempt_id) AS alternatives,
  'abandoned approach after ' || coalesce(a.failure_class, 'a failure') || ' on '
    || coalesce((SELECT group_concat(p, ', ') || CASE WHEN n > 3 THEN ' +' || (n - 3) || ' more' ELSE '' END
                 FROM (SELECT p, n FROM (
                         SELECT q.value AS p, min(c.call_ord * 1000000 + q.key) AS k, count(*) OVER () AS n
                         FROM tool_call_facts c, json_each(c.paths) q
                         WHERE c.attempt_key = a.group_key
                           AND q.value IN (SELECT q2.value FROM tool_call_facts c2, json_each(c2.paths) q2
                                           WHERE c2.attempt_key = b.group_key)
                         GROUP BY q.value) ORDER BY k LIMIT 3)), 'no shared path')
    || '; retried with '
    || CASE WHEN (SELECT x.approach FROM attempts x WHERE x.attempt_id = a.attempt_id)
                 = (SELECT y.approach FROM attempts y WHERE y.attempt_id = b.attempt_id)
            THEN 'the same kind of change (' ELSE 'a different edit (' END
    || coalesce((SELECT y.approach FROM attempts y WHERE y.attempt_id = b.attempt_id), 'no tool calls') || ')' AS rationale,
  'derived' AS rationale_source,
  b.started_at AS decided_at,
  (SELECT json_group_array(ev) FROM (
     SELECT coalesce(a.cause_ev, (SELECT json_extract(x.evidence, '$[#-1]') FROM attempts x WHERE x.attempt_id = a.attempt_id)) AS ev
     UNION ALL
     SELECT coalesce((SELECT coalesce(c.start_event_id, c.end_event_id) FROM tool_call_facts c
                      WHERE c.attempt_key = b.group_key ORDER BY c.call_ord LIMIT 1), b.first_event_id))
   WHERE ev IS NOT NULL) AS evidence,
  min(0.7, ra.confidence, rb.confidence) AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM attempt_rows a JOIN attempt_rows b ON b.group_key = a.superseded_by_key
JOIN attempt_rows ra ON ra.group_key = a.group_key JOIN attempt_rows rb ON rb.group_key = b.group_key
WHERE a.retracted = 0 AND b.retracted = 0;

-- human_intervention: a denial (a permission_denied event, or a call that ended denied), and the
-- next call of its session (by its first observation, the denied call itself excluded) when that
-- one uses another tool; one decision per retry, from its earliest denial.
CREATE VIEW decision_denials AS
SELECT d.*,
  (SELECT c.tool_call_id FROM tool_call_facts c
    WHERE c.session_id = d.session_id AND c.first_at >= d.denied_at AND c.tool_call_id IS NOT d.denied_call
    ORDER BY c.first_at, c.tool_call_id LIMIT 1) AS retry_call
FROM (
  SELECT e.event_id AS denial_event, e.observed_at AS denied_at, e.tool_name AS denied_tool,
    @gsid(e) AS session_id,
    (SELECT c.tool_call_id FROM tool_call_facts c WHERE c.session_id = @gsid(e) AND c.provider_call_id = e.tool_call_id
      ORDER BY c.first_at DESC LIMIT 1) AS denied_call
  FROM events e WHERE e.kind = 'permission_denied' AND e.retracted = 0
  UNION ALL
  SELECT c.end_event_id, c.finished_at, c.tool_name, c.session_id, c.tool_call_id
  FROM tool_call_facts c WHERE c.outcome_status = 'denied' AND c.end_event_id IS NOT NULL
) d
JOIN session_facts s ON s.session_id = d.session_id AND s.retraction = 0;

CREATE VIEW decision_interventions AS
SELECT 'dec_' || substr(x.retry_event, 4, 14) || 'b' || substr(x.retry_event, 19) AS decision_id,
  'human_intervention' AS kind,
  (SELECT m.work_unit_id FROM unit_turns m WHERE m.turn_id = sel.turn_id) AS work_unit_id,
  sel.session_id, sel.provider, sel.project_id, sel.project_name, sel.turn_id,
  sel.attempt_id AS selected,
  CASE WHEN alt.attempt_id IS NOT NULL AND alt.attempt_id <> sel.attempt_id THEN json_array(alt.attempt_id)
       ELSE json_array() END AS alternatives,
  'permission denied for ' || coalesce(x.denied_tool, 'a tool') || '; continued with '
    || coalesce(x.retry_tool, 'a tool') || ' (' || coalesce(x.retry_category, 'other') || ')' AS rationale,
  'derived' AS rationale_source,
  x.retry_at AS decided_at,
  json_array(x.denial_event, x.retry_event) AS evidence,
  min(0.7, sel.confidence, coalesce(alt.confidence, 1.0)) AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM (
  SELECT d.denial_event, d.denied_tool, d.denied_call, r.tool_name AS retry_tool, r.tool_category AS retry_category,
    coalesce(r.started_at, r.finished_at) AS retry_at, coalesce(r.start_event_id, r.end_event_id) AS retry_event,
    r.attempt_key AS retry_attempt, min(d.denied_at || '|' || d.denial_event) AS first_denial
  FROM decision_denials d JOIN tool_call_facts r ON r.tool_call_id = d.retry_call
  WHERE r.tool_name IS NOT d.denied_tool
  GROUP BY retry_event
) x
JOIN attempt_rows sel ON sel.group_key = x.retry_attempt
LEFT JOIN tool_call_facts dc ON dc.tool_call_id = x.denied_call
LEFT JOIN attempt_rows alt ON alt.group_key = dc.attempt_key AND alt.retracted = 0
WHERE sel.retracted = 0;

CREATE VIEW decisions AS
SELECT decision_id, kind, work_unit_id, session_id, provider, project_id, project_name, turn_id, selected,
  alternatives, rationale, rationale_source, decided_at, evidence, confidence, algorithm_version
FROM (SELECT * FROM decision_approach UNION ALL SELECT * FROM decision_interventions)
ORDER BY decided_at, decision_id;
