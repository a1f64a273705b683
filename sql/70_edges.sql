-- ---- edges ---------------------------------------------------------------------------------

-- One view per kind of link, each a join over stored, indexed columns, so a lookup by from_id
-- or to_id is an index seek in every arm; TRACE walks the causal ones directly (attemptql
-- compile.EDGE_ARMS), `edge_links` is all of them, `edges` numbers them.

-- a session holds its turns
CREATE VIEW edge_session_turn AS
SELECT 'parent_of' AS edge_kind, 'session' AS from_type, t.session_id AS from_id, 'turn' AS to_type,
       t.turn_id AS to_id, json_array(coalesce(t.prompt_event_id, t.first_event_id)) AS evidence,
       1.0 AS confidence, 'projection' AS edge_source
  FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id WHERE s.retraction = 0;

-- a human prompt opened the turn
CREATE VIEW edge_prompt_turn AS
SELECT 'triggered' AS edge_kind, 'event' AS from_type, t.prompt_event_id AS from_id, 'turn' AS to_type,
       t.turn_id AS to_id, json_array(t.prompt_event_id) AS evidence, 1.0 AS confidence, 'projection' AS edge_source
  FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
  WHERE s.retraction = 0 AND t.prompt_event_id IS NOT NULL;

-- a turn holds its tool calls
CREATE VIEW edge_turn_call AS
SELECT 'parent_of' AS edge_kind, 'turn' AS from_type, c.turn_id AS from_id, 'tool_call' AS to_type,
       c.tool_call_id AS to_id, c.evidence AS evidence, c.confidence AS confidence, 'projection' AS edge_source
  FROM tool_calls c WHERE NOT c.retracted;

-- each evidence event of an attempt
CREATE VIEW edge_evidence AS
SELECT 'evidence_for' AS edge_kind, 'event' AS from_type, q.value AS from_id, 'attempt' AS to_type,
       a.attempt_id AS to_id, json_array(q.value) AS evidence, 1.0 AS confidence, 'projection' AS edge_source
  FROM attempts a, json_each(a.evidence) q WHERE NOT a.retracted;

-- a failed attempt and the first later attempt of its agent that retried it (same_edit keeps the
-- failed attempt's confidence, passed_check caps it at 0.6)
CREATE VIEW edge_superseded AS
SELECT 'superseded' AS edge_kind, 'attempt' AS from_type, f.attempt_id AS from_id, 'attempt' AS to_type,
       j.attempt_id AS to_id, json_array(f.retry_from, j.first_event_id) AS evidence,
       CASE WHEN EXISTS (SELECT 1 FROM tool_call_facts xj, json_each(xj.paths) pj
                         WHERE xj.attempt_key = j.group_key AND xj.tool_category IN ('file_write', 'file_edit', 'notebook')
                           AND pj.value IN (SELECT pi.value FROM tool_call_facts xi, json_each(xi.paths) pi
                                            WHERE xi.attempt_key = f.group_key
                                              AND xi.tool_category IN ('file_write', 'file_edit', 'notebook')))
            THEN f.confidence ELSE min(f.confidence, 0.6) END AS confidence,
       'projection' AS edge_source
  FROM attempt_rows f JOIN attempt_facts j ON j.group_key = f.superseded_key
  WHERE f.superseded_by_key IS NOT NULL AND NOT f.retracted;

-- the failing event and the retry's first action
CREATE VIEW edge_retry_cause AS
SELECT 'caused' AS edge_kind, 'event' AS from_type, f.retry_from AS from_id,
       'event' AS to_type, j.first_event_id AS to_id,
       json_array(f.retry_from, j.first_event_id) AS evidence,
       min(f.confidence, 0.6) AS confidence, 'projection' AS edge_source
  FROM attempt_rows f JOIN attempt_facts j ON j.group_key = f.superseded_key
  WHERE f.superseded_by_key IS NOT NULL AND NOT f.retracted;

-- a handoff between sessions
CREATE VIEW edge_handoff AS
SELECT 'handed_off' AS edge_kind, 'session' AS from_type, h.from_session AS from_id, 'session' AS to_type,
       h.to_session AS to_id, h.evidence AS evidence, h.confidence AS confidence, 'projection' AS edge_source
  FROM handoffs h;

-- the prompt behind each attempt of its turn
CREATE VIEW edge_prompt_attempt AS
SELECT 'triggered' AS edge_kind, 'event' AS from_type, t.prompt_event_id AS from_id, 'attempt' AS to_type,
       a.attempt_id AS to_id, json_array(t.prompt_event_id) AS evidence, a.confidence AS confidence, 'derived' AS edge_source
  FROM attempt_rows a JOIN turn_facts t ON t.turn_id = a.turn_id
  WHERE NOT a.retracted AND t.prompt_event_id IS NOT NULL;

-- the last failing event of a failed attempt (its last failing call's end, else a failed turn's stop)
CREATE VIEW edge_failure_cause AS
SELECT 'caused' AS edge_kind, 'event' AS from_type, a.cause_ev AS from_id, 'attempt' AS to_type,
       a.attempt_id AS to_id, json_array(a.cause_ev) AS evidence, a.confidence AS confidence, 'derived' AS edge_source
  FROM attempt_rows a
  WHERE NOT a.retracted AND a.outcome IN ('failed', 'superseded') AND a.cause_ev IS NOT NULL;

-- a pending blocking wait and its session
CREATE VIEW edge_blocked AS
SELECT 'blocked' AS edge_kind, 'event' AS from_type, g.event_id AS from_id, 'session' AS to_type,
       g.session_id AS to_id, json_array(g.event_id) AS evidence, g.confidence AS confidence, 'derived' AS edge_source
  FROM signals g WHERE g.pending AND g.blocking;

-- The causal and structural graph without the ordinal (a WHERE on from_id / to_id reaches each
-- arm's index).
CREATE VIEW edge_links AS
SELECT * FROM edge_session_turn
UNION ALL
SELECT * FROM edge_prompt_turn
UNION ALL
SELECT * FROM edge_turn_call
UNION ALL
SELECT * FROM edge_evidence
UNION ALL
SELECT * FROM edge_superseded
UNION ALL
SELECT * FROM edge_retry_cause
UNION ALL
SELECT * FROM edge_handoff
UNION ALL
SELECT * FROM edge_prompt_attempt
UNION ALL
SELECT * FROM edge_failure_cause
UNION ALL
SELECT * FROM edge_blocked;

CREATE VIEW edges AS
SELECT row_number() OVER (ORDER BY edge_source DESC, edge_kind, from_type, from_id, to_type, to_id) - 1 AS ordinal,
  edge_kind, from_type, from_id, to_type, to_id, evidence, confidence, edge_source,
  'tier1-v5-sql1' AS algorithm_version
FROM edge_links;
