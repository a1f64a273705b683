-- Correction and Retraction events (written by AttemptDB itself, provider `attemptdb`,
-- kinds `correction` / `retraction`). They are never session activity. Both are applied to the
-- stored rows when they arrive, and the rows pick them up when they are created or take a new
-- id later (20_apply.sql), so a correction or retraction takes effect whether it arrived before or after
-- its target (spec/projections.md §11):
--   * a correction records itself and recomputes what the corrections of its target decide
--     (correction_targets: latest wins); an attempt holding that id copies the result;
--   * a retraction records itself, flags the rows it retracts (session_facts.retraction,
--     attempt_facts.retraction / session_retracted), marks the events it removes
--     (events.retracted, 0 -> 1 only) and, for an event, re-derives that event's session
--     without it.

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
         CASE WHEN substr(t, 1, 4) IN ('att_', 'trn_', 'ses_') AND (length(substr(t, 5)) = 36 AND substr(substr(t, 5), 9, 1) || substr(substr(t, 5), 14, 1) || substr(substr(t, 5), 19, 1) || substr(substr(t, 5), 24, 1) = '----' AND length(replace(substr(t, 5), '-', '')) = 32 AND ltrim(substr(t, 5), '0123456789abcdef-') = '') THEN t
              WHEN (length(t) = 36 AND substr(t, 9, 1) || substr(t, 14, 1) || substr(t, 19, 1) || substr(t, 24, 1) = '----' AND length(replace(t, '-', '')) = 32 AND ltrim(t, '0123456789abcdef-') = '')
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
           @ekey(e) AS ekey,
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
       @ekey(e) AS ekey,
       e.observed_at AS retracted_at, e.session_id AS session_id, e.project_id AS project_id,
       CASE WHEN substr(t.t, 1, 4) IN ('ses_', 'att_') AND (length(substr(t.t, 5)) = 36 AND substr(substr(t.t, 5), 9, 1) || substr(substr(t.t, 5), 14, 1) || substr(substr(t.t, 5), 19, 1) || substr(substr(t.t, 5), 24, 1) = '----' AND length(replace(substr(t.t, 5), '-', '')) = 32 AND ltrim(substr(t.t, 5), '0123456789abcdef-') = '')
              THEN CASE substr(t.t, 1, 4) WHEN 'ses_' THEN 'session' ELSE 'attempt' END
            WHEN substr(t.t, 1, 3) = 'ev_' AND (length(substr(t.t, 4)) = 36 AND substr(substr(t.t, 4), 9, 1) || substr(substr(t.t, 4), 14, 1) || substr(substr(t.t, 4), 19, 1) || substr(substr(t.t, 4), 24, 1) = '----' AND length(replace(substr(t.t, 4), '-', '')) = 32 AND ltrim(substr(t.t, 4), '0123456789abcdef-') = '')
              THEN 'event'
            WHEN (length(t.t) = 36 AND substr(t.t, 9, 1) || substr(t.t, 14, 1) || substr(t.t, 19, 1) || substr(t.t, 24, 1) = '----' AND length(replace(t.t, '-', '')) = 32 AND ltrim(t.t, '0123456789abcdef-') = '')
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

-- What the valid corrections of each attempt id decide (spec/projections.md §11): the latest
-- outcome correction (or latest one carrying a note) is `corrected_by`; the latest outcome
-- correction sets the outcome; the latest one that named a class or moved the outcome out of
-- the failures sets the class; the latest note wins. Read by the trigger below and by rebuilds.
CREATE VIEW correction_decisions AS
SELECT t.target AS target,
  (SELECT event_id FROM correction_facts WHERE target = t.target AND invalid = 0 AND target_type = 'attempt'
     AND (correction_type = 'attempt_outcome' OR note IS NOT NULL) ORDER BY ekey DESC LIMIT 1) AS corr_by,
  (SELECT outcome FROM correction_facts WHERE target = t.target AND invalid = 0 AND target_type = 'attempt'
     AND correction_type = 'attempt_outcome' ORDER BY ekey DESC LIMIT 1) AS corr_outcome,
  EXISTS (SELECT 1 FROM correction_facts WHERE target = t.target AND invalid = 0 AND target_type = 'attempt'
     AND correction_type = 'attempt_outcome' AND (failure_class IS NOT NULL OR outcome NOT IN ('failed', 'superseded'))) AS corr_class_set,
  (SELECT failure_class FROM correction_facts WHERE target = t.target AND invalid = 0 AND target_type = 'attempt'
     AND correction_type = 'attempt_outcome' AND (failure_class IS NOT NULL OR outcome NOT IN ('failed', 'superseded'))
   ORDER BY ekey DESC LIMIT 1) AS corr_class,
  (SELECT event_id FROM correction_facts WHERE target = t.target AND invalid = 0 AND target_type = 'attempt'
     AND note IS NOT NULL ORDER BY ekey DESC LIMIT 1) AS corr_note_by
FROM (SELECT DISTINCT target FROM correction_facts WHERE target_type = 'attempt') t;

-- A correction records itself and recomputes what the corrections of its target decide; an
-- attempt holding that id copies the result.
CREATE TRIGGER meta_correction AFTER UPDATE OF correction_seq ON projection_control
BEGIN
  INSERT OR IGNORE INTO correction_facts (event_id, ekey, corrected_at, session_id, project_id,
      correction_type, target_type, target, outcome, failure_class, note, note_chars, invalid)
    SELECT event_id, ekey, corrected_at, session_id, project_id, correction_type, target_type,
           target, outcome, failure_class, note, note_chars, invalid
    FROM correction_input WHERE seq = NEW.correction_seq;
  INSERT OR REPLACE INTO correction_targets (target, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT x.target, x.corr_by, x.corr_outcome, x.corr_class_set, x.corr_class, x.corr_note_by
    FROM correction_decisions x
    WHERE x.target = (SELECT target FROM correction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.correction_seq) AND target_type = 'attempt');
  UPDATE attempt_facts SET corr_by = ct.corr_by, corr_outcome = ct.corr_outcome, corr_class_set = ct.corr_class_set,
      corr_class = ct.corr_class, corr_note_by = ct.corr_note_by
    FROM correction_targets ct
    WHERE ct.target = (SELECT target FROM correction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.correction_seq) AND target_type = 'attempt')
      AND attempt_facts.attempt_id = ct.target;
END;

-- A retraction records itself, flags what it retracts and marks the events it removes; an
-- event's session is re-derived without it (unless the event is OTel telemetry, which is never
-- projected: the telemetry predicate of 00_predicates.sql).
CREATE TRIGGER meta_retraction AFTER UPDATE OF retraction_seq ON projection_control
BEGIN
  INSERT OR IGNORE INTO retraction_facts (event_id, ekey, retracted_at, session_id, project_id,
      target_type, target, reason, note, note_chars)
    SELECT event_id, ekey, retracted_at, session_id, project_id, target_type, target, reason,
           note, note_chars
    FROM retraction_input WHERE seq = NEW.retraction_seq;
  UPDATE session_facts SET retraction = coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts WHERE target = session_facts.raw_session_id AND target_type = 'session'), 0)
    WHERE raw_session_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'session');
  UPDATE attempt_facts SET session_retracted = 1
    WHERE session_retracted = 0 AND session_id IN (
      SELECT session_id FROM session_facts
      WHERE raw_session_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'session'));
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND kind NOT IN ('correction', 'retraction')
    AND session_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'session');
  UPDATE attempt_facts SET retraction = coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts WHERE target = attempt_facts.attempt_id AND target_type = 'attempt'), 0)
    WHERE attempt_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'attempt');
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND kind NOT IN ('correction', 'retraction')
    AND event_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'event');
  INSERT OR IGNORE INTO projection_dirty (session_id, raw_session_id, project_id)
    SELECT @gsid(e), e.session_id, e.project_id FROM events e
    WHERE e.event_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'event') AND @projected_kind(e) AND NOT @telemetry(e)
      AND (SELECT paused FROM projection_control WHERE id = 1) = 1;
  INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
    SELECT 1, @gsid(e), e.session_id, e.project_id,
           @ekey(e) FROM events e
    WHERE e.event_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'event') AND @projected_kind(e) AND NOT @telemetry(e);
END;
