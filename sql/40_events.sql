-- What an append fires: the triggers on `events`, in the order they are created. SQLite runs a
-- table's triggers newest first, so events_apply runs first and events_retracted_on_arrival last;
-- their conditions keep the work each does apart (meta events, paused imports, late events, the
-- append path). A fact event is projected unless it is a Correction, Retraction or wiring check,
-- OTel telemetry (an unknown event with attrs.source 'otel': IS, not =, so an unknown event
-- without a source IS projected), or named by a Retraction.

-- Every fact event: marked retracted when a Retraction already named it or its session (a
-- retracted event is never applied).
CREATE TRIGGER events_retracted_on_arrival AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction')
 AND (EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
      OR EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.session_id AND target_type = 'session'))
BEGIN
  UPDATE events SET retracted = 1 WHERE seq = NEW.seq;
END;

-- While projection is paused (bulk import) an event only notes its session.
CREATE TRIGGER events_paused AFTER INSERT ON events
WHEN @projected_kind(NEW)
 AND (SELECT paused FROM projection_control WHERE id = 1) = 1
BEGIN
  INSERT OR IGNORE INTO projection_dirty (session_id, raw_session_id, project_id)
    VALUES (@gsid(NEW),
            NEW.session_id, NEW.project_id);
END;

-- A meta event reaches its trigger through a gate (the projection_control row): SQLite allocates
-- a trigger's whole frame each time it fires, before testing its WHEN, so the trigger every
-- event passes through stays this small.
CREATE TRIGGER events_meta AFTER INSERT ON events WHEN NEW.kind IN ('correction', 'retraction')
BEGIN
  UPDATE OR REPLACE projection_control SET correction_seq = NEW.seq WHERE id = 1 AND NEW.kind = 'correction';
  UPDATE OR REPLACE projection_control SET retraction_seq = NEW.seq WHERE id = 1 AND NEW.kind = 'retraction';
END;

-- An event that sorts before something its session already applied re-derives the session.
-- Strictly before: once it has been applied, last_key equals its key. Either this trigger or
-- events_apply may fire first: the queue row of a late event is not in order, so the apply
-- triggers leave it alone. Inside a batch (projection_control.defer_replays = 1, migration 0006)
-- it only notes its session in replay_pending; the writer replays each noted session once,
-- after the batch's INSERT.
CREATE TRIGGER events_late AFTER INSERT ON events
WHEN @projected_kind(NEW)
 AND NOT @telemetry(NEW)
 AND EXISTS (SELECT 1 FROM session_facts
             WHERE session_id = @gsid(NEW)
               AND last_key > @ekey(NEW))
 AND (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND NOT EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
BEGIN
  INSERT INTO replay_pending (session_id, raw_session_id, project_id, from_key)
    SELECT @gsid(NEW),
           NEW.session_id, NEW.project_id,
           @ekey(NEW)
    WHERE (SELECT defer_replays FROM projection_control WHERE id = 1) = 1
    ON CONFLICT (session_id) DO UPDATE SET from_key = min(from_key, excluded.from_key);
  INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
    SELECT 1,
           @gsid(NEW),
           NEW.session_id, NEW.project_id,
           @ekey(NEW)
    WHERE (SELECT defer_replays FROM projection_control WHERE id = 1) = 0;
END;

-- The append path: a fact event becomes one queue row, read through project_input (the same
-- expressions a replay uses), except for a session whose replay is pending (the replay applies it).
CREATE TRIGGER events_apply AFTER INSERT ON events
WHEN @projected_kind(NEW)
 AND NOT @telemetry(NEW)
 AND (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND NOT EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
 AND NOT EXISTS (SELECT 1 FROM replay_pending
                 WHERE session_id = @gsid(NEW))
BEGIN
  INSERT OR REPLACE INTO project_queue SELECT 1, p.* FROM project_input p WHERE p.seq = NEW.seq;
END;

-- The provider payload of every event that has one, as the provider sent it: `events.raw_json`
-- stores each text it shares with the rest of its row once, as a reference (U+0001 start:length
-- U+0002) into the row's dictionary: content_json, then U+001F and the quoted provider_session_id,
-- tool_call_id and provider_event_name (attemptdb/model/payload.py). This view resolves the
-- references, so the stock sqlite3 shell reads the payload whole.
CREATE VIEW event_payloads AS
WITH RECURSIVE x(seq, event_id, done, rest, dict) AS (
  SELECT e.seq, e.event_id, '', e.raw_json,
    coalesce(e.content_json, '') || char(31) || '"' || coalesce(e.provider_session_id, '') || '"'
      || char(31) || '"' || coalesce(e.tool_call_id, '') || '"' || char(31) || '"' || coalesce(e.provider_event_name, '') || '"'
  FROM events e WHERE e.raw_json IS NOT NULL
  UNION ALL
  SELECT seq, event_id,
    done || substr(rest, 1, instr(rest, char(1)) - 1)
         || substr(dict, CAST(substr(rest, instr(rest, char(1)) + 1) AS INTEGER),
                   CAST(substr(rest, instr(rest, char(1)) + instr(substr(rest, instr(rest, char(1))), ':')) AS INTEGER)),
    substr(rest, instr(rest, char(2)) + 1), dict
  FROM x WHERE instr(rest, char(1)) > 0)
SELECT seq, event_id, done || rest AS raw_json FROM x WHERE instr(rest, char(1)) = 0;
