-- 0004: Correction and Retraction events (written by AttemptDB itself, provider `attemptdb`,
-- kinds `correction` / `retraction`). They are never session activity. A correction only
-- records itself: the views apply the latest valid one per target (spec/projections.md §7), so
-- it takes effect whether it arrived before or after its target. A retraction records itself,
-- marks the events it removes (events.retracted, 0 -> 1 only) and, for an event, re-derives
-- that event's session without it.

-- Attribute parsing. Targets are prefixed ids (att_, trn_, ses_, ev_); a bare UUID is read
-- by the declared type. Anything unreadable is kept and reported (invalid / matched = 0).
CREATE VIEW correction_input AS
SELECT seq, event_id, ekey, corrected_at, session_id, project_id, correction_type, target_type,
       coalesce(target, raw_target, '') AS target, outcome, failure_class, note, note_chars,
       CASE WHEN correction_type IS NULL OR correction_type NOT IN ('attempt_outcome', 'attempt_note', 'turn_objective') THEN 1
            WHEN target IS NULL THEN 1
            WHEN correction_type = 'attempt_outcome' AND outcome IS NULL THEN 1
            WHEN correction_type IN ('attempt_outcome', 'attempt_note') AND target_type IS NOT 'attempt' THEN 1
            WHEN correction_type = 'turn_objective' AND target_type IS NOT 'turn' THEN 1
            ELSE 0 END AS invalid
FROM (
  SELECT seq, event_id, ekey, corrected_at, session_id, project_id, correction_type, raw_target,
         outcome, failure_class, note, note_chars,
         CASE WHEN substr(t, 1, 4) IN ('att_', 'trn_', 'ses_') AND substr(t, 5) GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' THEN t
              WHEN t GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
                   THEN CASE WHEN correction_type IN ('attempt_outcome', 'attempt_note') OR declared = 'attempt' THEN 'att_' || t
                             WHEN correction_type = 'turn_objective' OR declared = 'turn' THEN 'trn_' || t
                             WHEN declared = 'session' THEN 'ses_' || t END
         END AS target,
         CASE substr(t, 1, 4) WHEN 'att_' THEN 'attempt' WHEN 'trn_' THEN 'turn' WHEN 'ses_' THEN 'session'
              ELSE CASE WHEN correction_type IN ('attempt_outcome', 'attempt_note') OR declared = 'attempt' THEN 'attempt'
                        WHEN correction_type = 'turn_objective' OR declared = 'turn' THEN 'turn'
                        WHEN declared = 'session' THEN 'session' END
         END AS target_type
  FROM (
    SELECT e.event_id AS event_id,
           e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id AS ekey,
           e.observed_at AS corrected_at, e.session_id AS session_id, e.project_id AS project_id,
           CASE WHEN json_type(e.attrs_json, '$.correction_type') = 'text' THEN json_extract(e.attrs_json, '$.correction_type') END AS correction_type,
           CASE WHEN json_type(e.attrs_json, '$.target') = 'text' THEN json_extract(e.attrs_json, '$.target') END AS raw_target,
           CASE WHEN json_type(e.attrs_json, '$.target') = 'text' THEN lower(trim(json_extract(e.attrs_json, '$.target'))) END AS t,
           CASE WHEN json_type(e.attrs_json, '$.target_type') = 'text' THEN lower(json_extract(e.attrs_json, '$.target_type')) END AS declared,
           CASE CASE WHEN json_type(e.attrs_json, '$.outcome') = 'text' THEN lower(trim(json_extract(e.attrs_json, '$.outcome'))) END
                WHEN 'succeeded' THEN 'succeeded' WHEN 'success' THEN 'succeeded'
                WHEN 'failed' THEN 'failed' WHEN 'failure' THEN 'failed'
                WHEN 'abandoned' THEN 'abandoned' WHEN 'superseded' THEN 'superseded' END AS outcome,
           CASE WHEN json_type(e.attrs_json, '$.failure_class') = 'text' THEN json_extract(e.attrs_json, '$.failure_class') END AS failure_class,
           coalesce(CASE WHEN json_type(e.content_json, '$.note') = 'text' THEN json_extract(e.content_json, '$.note') END,
                    CASE WHEN json_type(e.content_json, '$.message') = 'text' THEN json_extract(e.content_json, '$.message') END) AS note,
           coalesce(CASE WHEN json_type(e.attrs_json, '$.note_chars') = 'integer' THEN json_extract(e.attrs_json, '$.note_chars') END,
                    length(coalesce(CASE WHEN json_type(e.content_json, '$.note') = 'text' THEN json_extract(e.content_json, '$.note') END,
                                    CASE WHEN json_type(e.content_json, '$.message') = 'text' THEN json_extract(e.content_json, '$.message') END))) AS note_chars,
           e.seq AS seq
    FROM events e WHERE e.kind = 'correction'
  )
);

CREATE VIEW retraction_input AS
SELECT e.event_id AS event_id,
       e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id AS ekey,
       e.observed_at AS retracted_at, e.session_id AS session_id, e.project_id AS project_id,
       CASE WHEN substr(t.t, 1, 4) IN ('ses_', 'att_') AND substr(t.t, 5) GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
              THEN CASE substr(t.t, 1, 4) WHEN 'ses_' THEN 'session' ELSE 'attempt' END
            WHEN substr(t.t, 1, 3) = 'ev_' AND substr(t.t, 4) GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
              THEN 'event'
            WHEN t.t GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
                 AND t.declared IN ('session', 'event', 'attempt')
              THEN t.declared
       END AS target_type,
       CASE WHEN substr(t.t, 1, 4) IN ('ses_', 'att_') OR substr(t.t, 1, 3) = 'ev_' THEN t.t
            WHEN t.declared = 'session' THEN 'ses_' || t.t
            WHEN t.declared = 'event' THEN 'ev_' || t.t
            WHEN t.declared = 'attempt' THEN 'att_' || t.t
            ELSE coalesce(t.t, '') END AS target,
       CASE WHEN json_type(e.attrs_json, '$.reason') = 'text'
             AND lower(trim(json_extract(e.attrs_json, '$.reason'))) IN
                 ('benchmark', 'test', 'duplicate', 'mistaken_import', 'privacy', 'revoked', 'other')
            THEN lower(trim(json_extract(e.attrs_json, '$.reason'))) ELSE 'other' END AS reason,
       coalesce(CASE WHEN json_type(e.content_json, '$.note') = 'text' THEN json_extract(e.content_json, '$.note') END,
                CASE WHEN json_type(e.content_json, '$.message') = 'text' THEN json_extract(e.content_json, '$.message') END) AS note,
       coalesce(CASE WHEN json_type(e.attrs_json, '$.note_chars') = 'integer' THEN json_extract(e.attrs_json, '$.note_chars') END,
                length(coalesce(CASE WHEN json_type(e.content_json, '$.note') = 'text' THEN json_extract(e.content_json, '$.note') END,
                                CASE WHEN json_type(e.content_json, '$.message') = 'text' THEN json_extract(e.content_json, '$.message') END))) AS note_chars,
       e.seq AS seq
FROM events e
JOIN (SELECT seq,
             CASE WHEN json_type(attrs_json, '$.target') = 'text' THEN lower(trim(json_extract(attrs_json, '$.target'))) END AS t,
             CASE WHEN json_type(attrs_json, '$.target_type') = 'text' THEN lower(json_extract(attrs_json, '$.target_type')) END AS declared
      FROM events WHERE kind = 'retraction') t ON t.seq = e.seq
WHERE e.kind = 'retraction';

CREATE TRIGGER events_correction AFTER INSERT ON events WHEN NEW.kind = 'correction'
BEGIN
  INSERT OR IGNORE INTO correction_facts (event_id, ekey, corrected_at, session_id, project_id,
      correction_type, target_type, target, outcome, failure_class, note, note_chars, invalid)
    SELECT event_id, ekey, corrected_at, session_id, project_id, correction_type, target_type,
           target, outcome, failure_class, note, note_chars, invalid
    FROM correction_input WHERE seq = NEW.seq;
END;

CREATE TRIGGER events_retraction AFTER INSERT ON events WHEN NEW.kind = 'retraction'
BEGIN
  INSERT OR IGNORE INTO retraction_facts (event_id, ekey, retracted_at, session_id, project_id,
      target_type, target, reason, note, note_chars)
    SELECT event_id, ekey, retracted_at, session_id, project_id, target_type, target, reason,
           note, note_chars
    FROM retraction_input WHERE seq = NEW.seq;

  -- a session: its fact events (all projects, by the raw session id) are retracted; its rows
  -- stay, flagged retracted by the views
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND kind NOT IN ('correction', 'retraction')
    AND session_id = (SELECT target FROM retraction_facts WHERE event_id = NEW.event_id AND target_type = 'session');

  -- an attempt: the start/end events of its calls
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND kind NOT IN ('correction', 'retraction') AND event_id IN (
    SELECT c.start_event_id FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
      JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE r.event_id = NEW.event_id AND r.target_type = 'attempt'
    UNION ALL
    SELECT c.end_event_id FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
      JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE r.event_id = NEW.event_id AND r.target_type = 'attempt');

  -- an event: it leaves the log's projections, and its session is re-derived without it
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND kind NOT IN ('correction', 'retraction')
    AND event_id = (SELECT target FROM retraction_facts WHERE event_id = NEW.event_id AND target_type = 'event');
  INSERT OR IGNORE INTO projection_dirty (session_id, raw_session_id, project_id)
    SELECT p.gsid, p.raw_sid, p.project_id FROM project_input p
    WHERE p.event_id = (SELECT target FROM retraction_facts WHERE event_id = NEW.event_id AND target_type = 'event')
      AND p.kind NOT IN ('correction', 'retraction', 'capture_test') AND p.telemetry = 0
      AND (SELECT paused FROM projection_control WHERE id = 1) = 1;
  INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
    SELECT 1, p.gsid, p.raw_sid, p.project_id, p.ekey FROM project_input p
    WHERE p.event_id = (SELECT target FROM retraction_facts WHERE event_id = NEW.event_id AND target_type = 'event')
      AND p.kind NOT IN ('correction', 'retraction', 'capture_test') AND p.telemetry = 0;
END;
