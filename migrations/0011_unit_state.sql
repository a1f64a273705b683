-- 0011: the stored state of each work unit (spec/projections.md §16): what its status and phase
-- read that does not depend on the time of reading, kept by attemptdb/projections/units.py for
-- the units each append touches, as the view unit_state_live (sql/85_work_units.sql) computes it.
-- The views then judge a unit against the clock from this row and its pending wait alone; a
-- reading as of an earlier time (STATE … AT t) computes the row as of t instead.
--
--   updated_at         its newest member activity;
--   last_turn_id       its latest member turn (by order_key);
--   last_attempt_key   its latest attempt that is not retracted (by start, turn, index);
--   in_flight          1 when a member has a call started and not finished;
--   coverage_unknown   1 when nothing of its sessions was captured beyond their existence;
--   last_turn_status, last_session_ended, last_outcome   what status reads of the last turn,
--                      its session, and the last attempt;
--   calm_phase         the phase verdict padded to 9 characters, then its reason, read off the
--                      recent calls as if nothing waited on a human (a pending wait, judged when
--                      read, makes the phase `blocked`).
CREATE TABLE unit_state (
  work_unit_id       TEXT PRIMARY KEY,
  updated_at         TEXT,
  last_turn_id       TEXT,
  last_attempt_key   TEXT,
  in_flight          INTEGER NOT NULL,
  coverage_unknown   INTEGER NOT NULL,
  last_turn_status   TEXT,
  last_session_ended INTEGER,
  last_outcome       TEXT,
  calm_phase         TEXT
) WITHOUT ROWID;

-- Units whose state inputs changed outside their member turns (a session's end or first capture
-- reaches every unit holding one of its turns); refreshed with the marked turns' units.
CREATE TABLE unit_state_dirty (
  work_unit_id       TEXT PRIMARY KEY
) WITHOUT ROWID;

-- A unit's lists and counts (sessions, actors, attempts, failures, evidence) read its members in
-- order from this index alone.
DROP INDEX unit_turns_unit;
CREATE INDEX unit_turns_unit ON unit_turns (work_unit_id, order_key, session_id, provider, failed_attempts,
                                            first_event_id, stop_event_id, attempt_ids);

-- @after-install
-- Every unit of a file from before 0011 gets its state at this upgrade.
INSERT OR IGNORE INTO unit_state_dirty (work_unit_id) SELECT work_unit_id FROM unit_index;
