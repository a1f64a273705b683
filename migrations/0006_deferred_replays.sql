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
-- nothing changes. The triggers that read the flag: events_late, events_apply (sql/40_events.sql).

ALTER TABLE projection_control ADD COLUMN defer_replays INTEGER NOT NULL DEFAULT 0;

CREATE TABLE replay_pending (
  session_id     TEXT PRIMARY KEY,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  from_key       TEXT NOT NULL
) WITHOUT ROWID;
