-- ---- notes and approvals (spec/evidence.md §5) ----------------------------------------------
-- What a person or a CI job wrote down: `attempt note`, `attempt approve|reject` and the
-- Recorder's note() / approve(), read back. One row per such event of provider `attempt`
-- (session.note_added / ai.approval, kind notification), read off the event itself: a recorded
-- fact, not an inference (confidence 1.0, its evidence the event). An event a Retraction removed
-- (named itself, or its session) is left out (events.retracted, as decision_denials reads it).
-- The texts are content (events.content_json): NULL under metadata_only, where nothing was
-- stored, and NULL behind the content wall of `attempt mcp` / `attempt ui` without
-- --include-content (attemptdb/readers/content.py hides events.content_json, so the views read
-- NULL); their lengths are attrs and stay. `session_name` is the name the session was given
-- (`--session ci-4711`, or the one a command made up: `note-…`), which AttemptQL's
-- `FOR session = '…'` takes too. The partial index events_notes (migration 0020) holds exactly
-- these events, so both views are a range of it whatever the size of the log.

CREATE VIEW notes AS
SELECT e.event_id AS event_id,
  @gsid(e) AS session_id,
  e.provider_session_id AS session_name,
  e.project_id AS project_id,
  e.project_name AS project_name,
  e.device_id AS device_id,
  e.observed_at AS observed_at,
  CASE WHEN json_type(e.content_json, '$.note') = 'text' THEN json_extract(e.content_json, '$.note') END AS note,
  CASE WHEN json_type(e.attrs_json, '$.note_chars') = 'integer' THEN json_extract(e.attrs_json, '$.note_chars') END
    AS note_chars,
  json_array(e.event_id) AS evidence,
  1.0 AS confidence
FROM events e
WHERE e.kind = 'notification' AND e.provider = 'attempt' AND e.provider_event_name = 'session.note_added'
  AND e.retracted = 0;

CREATE VIEW approvals AS
SELECT e.event_id AS event_id,
  @gsid(e) AS session_id,
  e.provider_session_id AS session_name,
  e.project_id AS project_id,
  e.project_name AS project_name,
  e.device_id AS device_id,
  e.observed_at AS observed_at,
  CASE json_type(e.attrs_json, '$.x_attempt_approved') WHEN 'true' THEN 1 WHEN 'false' THEN 0 END AS approved,
  CASE WHEN json_type(e.content_json, '$.subject') = 'text' THEN json_extract(e.content_json, '$.subject') END
    AS subject,
  CASE WHEN json_type(e.attrs_json, '$.x_attempt_subject_chars') = 'integer'
       THEN json_extract(e.attrs_json, '$.x_attempt_subject_chars') END AS subject_chars,
  CASE WHEN json_type(e.content_json, '$.note') = 'text' THEN json_extract(e.content_json, '$.note') END AS note,
  CASE WHEN json_type(e.attrs_json, '$.note_chars') = 'integer' THEN json_extract(e.attrs_json, '$.note_chars') END
    AS note_chars,
  json_array(e.event_id) AS evidence,
  1.0 AS confidence
FROM events e
WHERE e.kind = 'notification' AND e.provider = 'attempt' AND e.provider_event_name = 'ai.approval'
  AND e.retracted = 0;
