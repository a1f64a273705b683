-- 0006: a batch's late events replay their session once, after the batch (spec/projections.md §1).
--
-- A late event re-derives its session (events_late → project_replay_session): from the checkpoint
-- before the current turn, or from the session's start when it sorts into an earlier turn. A batch
-- that brings many late events of one session (a merge, an import overlapping another) would
-- re-derive the session once per event: quadratic in the session's size. While the writer sets
-- projection_control.defer_replays = 1 around the one INSERT of a batch, a late event only notes
-- its session and its key in replay_pending (the smallest key wins) and the session's further
-- events of the batch are not applied on their own; the writer then clears the flag and sends
-- each noted session to replay_requests once, in the same transaction. The replay re-applies
-- every event from its restore point in sort order, the skipped ones included, so the state is
-- the one the per-event path reaches. With the flag at 0 (every other writer, the sqlite3 shell)
-- nothing changes.

ALTER TABLE projection_control ADD COLUMN defer_replays INTEGER NOT NULL DEFAULT 0;

CREATE TABLE replay_pending (
  session_id     TEXT PRIMARY KEY,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  from_key       TEXT NOT NULL
) WITHOUT ROWID;

DROP TRIGGER events_late;

CREATE TRIGGER events_late AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction', 'capture_test')
 AND NOT (NEW.kind = 'unknown' AND json_extract(NEW.attrs_json, '$.source') = 'otel')
 AND EXISTS (SELECT 1 FROM session_facts
             WHERE session_id = CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                                     THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24)
                                     ELSE NEW.session_id END
               AND last_key > NEW.observed_at || '|' || printf('%020d|%020d|', NEW.hlc, NEW.source_seq) || NEW.event_id)
 AND (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND NOT EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
BEGIN
  INSERT INTO replay_pending (session_id, raw_session_id, project_id, from_key)
    SELECT CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24) ELSE NEW.session_id END,
           NEW.session_id, NEW.project_id,
           NEW.observed_at || '|' || printf('%020d|%020d|', NEW.hlc, NEW.source_seq) || NEW.event_id
    WHERE (SELECT defer_replays FROM projection_control WHERE id = 1) = 1
    ON CONFLICT (session_id) DO UPDATE SET from_key = min(from_key, excluded.from_key);
  INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
    SELECT 1,
           CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24) ELSE NEW.session_id END,
           NEW.session_id, NEW.project_id,
           NEW.observed_at || '|' || printf('%020d|%020d|', NEW.hlc, NEW.source_seq) || NEW.event_id
    WHERE (SELECT defer_replays FROM projection_control WHERE id = 1) = 0;
END;

-- The append path of 0003, except for a session whose replay is pending (the replay applies it).

DROP TRIGGER events_apply;

CREATE TRIGGER events_apply AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction', 'capture_test')
 AND NOT (NEW.kind = 'unknown' AND json_extract(NEW.attrs_json, '$.source') = 'otel')
 AND (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND NOT EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
 AND NOT EXISTS (SELECT 1 FROM replay_pending
                 WHERE session_id = CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                                         THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24)
                                         ELSE NEW.session_id END)
BEGIN
  INSERT OR REPLACE INTO project_queue SELECT 1, p.* FROM project_input p WHERE p.seq = NEW.seq;
END;
