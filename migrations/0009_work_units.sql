-- 0009: work units (reference inference §2.9, spec/projections.md §16): the stored inputs of
-- unit building and its result, kept by attemptdb/projections/units.py at the end of every append
-- (the same transaction) for the turns the append touched (`unit_dirty`, marked by the triggers
-- of sql/80_unit_marks.sql). Decisions, conflicts and Needs You are views (sql/8x, 9x).
--
-- Every row is a function of the projected turns and calls alone (so a rebuild equals the
-- incremental state): which turns take part, their spans and edits, the links the rules of §2.9
-- draw between them, and the components those links make.

-- A turn that takes part: in a session that is not retracted.
--   active_until = its last activity (start, visible end, call starts and finishes);
--   order_key = started_at '|' session_id '|' turn_index: "earliest by (turn start, position)";
--   begins / span_end = its span as handoffs read it (sql/60_handoffs.sql: a session's first turn
--   begins at the session's start; the span ends at its last attributed event), and giver_turn_id
--   the giver a handoff to it can come from (the project's span with the latest end among those
--   sorted before it, of another session and provider, ended by its begin and at most 30 min
--   before it); open_calls and waiting_since feed the views (what is in flight, who waits).
CREATE TABLE unit_turns (
  turn_id        TEXT PRIMARY KEY,
  project_id     TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  provider       TEXT NOT NULL,
  turn_index     INTEGER NOT NULL,
  started_at     TEXT NOT NULL,
  ended_at       TEXT,
  active_until   TEXT NOT NULL,
  begins         TEXT NOT NULL,
  span_end       TEXT NOT NULL,
  first_event_id TEXT NOT NULL,
  stop_event_id  TEXT,
  order_key      TEXT NOT NULL,
  giver_turn_id  TEXT,
  giver_session_id TEXT,
  open_calls     INTEGER NOT NULL,   -- calls in flight (started, not finished)
  loose_calls    INTEGER NOT NULL,   -- calls paired by order or seen at one end only (pairing not call_id)
  attempt_ids    TEXT NOT NULL,      -- its attempts that are not retracted, in order (a JSON array)
  failed_attempts INTEGER NOT NULL,  -- how many of them failed or were superseded
  waiting_since  TEXT,               -- raised_at '|' event_id of its latest pending blocking signal
  work_unit_id   TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX unit_turns_unit ON unit_turns (work_unit_id, order_key);
CREATE INDEX unit_turns_unit_active ON unit_turns (work_unit_id, active_until);
CREATE INDEX unit_turns_session ON unit_turns (session_id, turn_index);
CREATE INDEX unit_turns_span_end ON unit_turns (project_id, span_end, turn_id);
CREATE INDEX unit_turns_begins ON unit_turns (project_id, begins);
CREATE INDEX unit_turns_giver ON unit_turns (giver_turn_id) WHERE giver_turn_id IS NOT NULL;
CREATE INDEX unit_turns_giver_session ON unit_turns (giver_session_id) WHERE giver_session_id IS NOT NULL;
CREATE INDEX unit_turns_receivers ON unit_turns (session_id) WHERE giver_turn_id IS NOT NULL;
CREATE INDEX unit_turns_open ON unit_turns (work_unit_id) WHERE open_calls > 0;
CREATE INDEX unit_turns_waiting ON unit_turns (work_unit_id, waiting_since) WHERE waiting_since IS NOT NULL;
CREATE INDEX unit_turns_active ON unit_turns (active_until);

-- What a turn edited (mutating calls of attempts that are not retracted), per path: the first and
-- last edit (a call's finish, else its start) and the lines it changed there.
-- edit_key = first_edit '|' turn_id orders a path's turns by their first edit.
CREATE TABLE unit_edits (
  project_id     TEXT NOT NULL,
  path           TEXT NOT NULL,
  edit_key       TEXT NOT NULL,
  turn_id        TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  first_edit     TEXT NOT NULL,
  last_edit      TEXT NOT NULL,
  lines_added    INTEGER NOT NULL,
  lines_removed  INTEGER NOT NULL,
  first_event    TEXT NOT NULL,      -- the events of its first and last edit there
  last_event     TEXT NOT NULL,
  PRIMARY KEY (project_id, path, edit_key)
) WITHOUT ROWID;
CREATE UNIQUE INDEX unit_edits_turn ON unit_edits (turn_id, path);
CREATE INDEX unit_edits_session ON unit_edits (project_id, path, session_id);

-- How many sessions of a project take part, and how many edited each path: a path edited by at
-- least 5 sessions and at least a quarter of the project's sessions is hot and links nothing.
CREATE TABLE unit_projects (
  project_id     TEXT PRIMARY KEY,
  sessions       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE unit_paths (
  project_id     TEXT NOT NULL,
  path           TEXT NOT NULL,
  sessions       INTEGER NOT NULL,
  hot            INTEGER NOT NULL,
  PRIMARY KEY (project_id, path)
) WITHOUT ROWID;
CREATE INDEX unit_paths_sessions ON unit_paths (project_id, sessions);

-- A turn's links to earlier turns: kind 'path' (one per edited path, path = that path), 'adjacent'
-- (the same session's previous turn) and 'handoff' (the giving turn), path '' for the last two.
CREATE TABLE unit_links (
  turn_id        TEXT NOT NULL,
  kind           TEXT NOT NULL,
  path           TEXT NOT NULL,
  target_turn_id TEXT NOT NULL,
  PRIMARY KEY (turn_id, kind, path)
) WITHOUT ROWID;
CREATE INDEX unit_links_target ON unit_links (target_turn_id);

-- One row per unit: its project and earliest member (the unit's id is wu_ + that turn's first
-- event uuid, so it survives new turns joining).
CREATE TABLE unit_index (
  work_unit_id   TEXT PRIMARY KEY,
  project_id     TEXT NOT NULL,
  first_turn_id  TEXT NOT NULL,
  started_at     TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX unit_index_started ON unit_index (started_at);
CREATE INDEX unit_index_project ON unit_index (project_id, started_at);

-- Per unit and path, its edit window (first_key / last_key = the first and last edit '|' its event)
-- and the lines it changed there: what conflicts pair up.
CREATE TABLE unit_path_windows (
  work_unit_id   TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  path           TEXT NOT NULL,
  first_key      TEXT NOT NULL,
  last_key       TEXT NOT NULL,
  lines_added    INTEGER NOT NULL,
  lines_removed  INTEGER NOT NULL,
  PRIMARY KEY (work_unit_id, path)
) WITHOUT ROWID;
CREATE INDEX unit_path_windows_path ON unit_path_windows (project_id, path);

-- Turns whose unit inputs may have changed since the last refresh (marked by triggers).
CREATE TABLE unit_dirty (
  turn_id        TEXT PRIMARY KEY
) WITHOUT ROWID;

-- @after-install
-- Every turn of a file from before work units is built into units at this upgrade.
INSERT OR IGNORE INTO unit_dirty (turn_id) SELECT turn_id FROM turn_facts;
