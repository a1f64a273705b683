-- 0002: the stored state of the projections (spec/projections.md). Internal tables, named
-- *_facts; the public catalog names (sessions, turns, tool_calls, attempts, signals, commits,
-- corrections, retractions, edges, handoffs) are views over them (0004).
--
-- Every row here is a deterministic function of the ordered fact events of one projection
-- session (the `session_id` column), so a session can be deleted and replayed on its own.
-- WITHOUT ROWID everywhere: no arrival-dependent rowids, so an incremental state and a rebuild
-- compare equal row for row.
--
-- Event sort key (`ekey`): observed_at || '|' || hlc (20 digits) || '|' || source_seq (20
-- digits) || '|' || event_id. Text order = (observed_at, hlc, source_seq, event_id) order.

-- One row per projection session (the event's session, or one per (provider, project) when the
-- provider sent no session id). Also the per-event working context of the apply trigger
-- (cur_turn_id, ev_call_id, ev_prev_head).
CREATE TABLE session_facts (
  session_id          TEXT PRIMARY KEY,
  raw_session_id      TEXT NOT NULL,   -- events.session_id of its events (retractions match this)
  provider            TEXT NOT NULL,
  provider_session_id TEXT NOT NULL,
  project_id          TEXT NOT NULL,
  project_name        TEXT NOT NULL,
  first_event_id      TEXT NOT NULL,
  first_at            TEXT NOT NULL,
  last_event_id       TEXT,
  last_at             TEXT,
  last_key            TEXT,            -- ekey of the last applied event
  last_activity_at    TEXT,            -- every event but session_ended
  started_at          TEXT NOT NULL,   -- first session_started, else the first event
  start_event_id      TEXT,
  start_source        TEXT,
  ended_at            TEXT,
  end_event_id        TEXT,
  end_reason          TEXT,
  saw_start           INTEGER NOT NULL DEFAULT 0,
  saw_end             INTEGER NOT NULL DEFAULT 0,
  event_count         INTEGER NOT NULL DEFAULT 0,
  prompt_count        INTEGER NOT NULL DEFAULT 0,
  turn_count          INTEGER NOT NULL DEFAULT 0,
  next_turn_index     INTEGER NOT NULL DEFAULT 1,
  call_seq            INTEGER NOT NULL DEFAULT 0,  -- tool calls created (incl. end-only)
  failure_count       INTEGER NOT NULL DEFAULT 0,  -- calls ending failure/denied + turn_failed
  head                TEXT,            -- last non-null repo HEAD seen
  cur_turn_id         TEXT,
  turn_last_event_id  TEXT,            -- last event attributed to the current turn (copied to
  turn_last_at        TEXT,            --   the turn row when the next prompt closes it)
  ev_call_id          TEXT,            -- tool call touched by the event being applied
  ev_prev_head        TEXT             -- HEAD before the event being applied
) WITHOUT ROWID;
CREATE INDEX session_facts_raw ON session_facts (raw_session_id);
CREATE INDEX session_facts_project ON session_facts (project_id, started_at);

-- Agents of a session in first-seen order (kept out of session_facts so that row stays small:
-- it is rewritten on every event).
CREATE TABLE session_agents (
  session_id TEXT NOT NULL,
  agent_id   TEXT NOT NULL,
  ord        INTEGER NOT NULL,
  first_key  TEXT NOT NULL,            -- ekey of the event that first named the agent
  PRIMARY KEY (session_id, agent_id)
) WITHOUT ROWID;

CREATE TABLE turn_facts (
  turn_id         TEXT PRIMARY KEY,
  session_id      TEXT NOT NULL,
  turn_index      INTEGER NOT NULL,
  started_at      TEXT NOT NULL,
  ended_at        TEXT,
  status          TEXT NOT NULL,       -- in_progress | completed | failed | unknown
  failure_class   TEXT,                -- turn_failed's class
  prompt_event_id TEXT,
  stop_event_id   TEXT,
  prompt_chars    INTEGER,
  first_event_id  TEXT NOT NULL,
  last_event_id   TEXT NOT NULL,       -- of a closed turn; the current turn's is on its session
  last_at         TEXT NOT NULL,       --   row (session_facts.turn_last_*); the views combine
  start_key       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX turn_facts_session ON turn_facts (session_id, turn_index);

-- The prompt text of a turn (content; absent under metadata_only), written once.
CREATE TABLE turn_prompts (
  turn_id    TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  objective  TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX turn_prompts_session ON turn_prompts (session_id);

CREATE TABLE tool_call_facts (
  tool_call_id     TEXT PRIMARY KEY,
  session_id       TEXT NOT NULL,
  turn_id          TEXT NOT NULL,
  agent_id         TEXT,
  agent_key        TEXT NOT NULL,      -- coalesce(agent_id, '')
  tool_name        TEXT,
  tool_category    TEXT,
  provider_call_id TEXT,
  started_at       TEXT,
  finished_at      TEXT,
  first_at         TEXT NOT NULL,      -- observation time: start, else finish
  duration_ms      INTEGER,
  outcome_status   TEXT,
  outcome_class    TEXT,
  exit_code        INTEGER,
  path_relative    TEXT,
  paths            TEXT NOT NULL DEFAULT '[]',
  command_category TEXT,
  git_subcommand   TEXT,
  lines_added      INTEGER,
  lines_removed    INTEGER,
  tests_failed     INTEGER,
  pairing          TEXT NOT NULL,      -- call_id | fifo | end_only | in_flight
  start_event_id   TEXT,
  end_event_id     TEXT,
  call_ord         INTEGER NOT NULL,   -- position in the session's call list (first observation)
  attempt_key      TEXT NOT NULL       -- attempt_facts.group_key
) WITHOUT ROWID;
-- open calls only: pairing by call id (session, call id) and FIFO (session, NULL call id, agent,
-- tool name) both seek this one index
CREATE INDEX tool_call_facts_open ON tool_call_facts (session_id, provider_call_id, agent_key, tool_name, call_ord)
  WHERE end_event_id IS NULL;
CREATE INDEX tool_call_facts_attempt ON tool_call_facts (attempt_key, call_ord);

-- One row per attempt that holds tool calls (turns without calls get a placeholder attempt in
-- the view). group_key = the tool_call_id of its first call: stable for the row's life, while
-- the public attempt_id re-anchors from the first call to the failing call.
CREATE TABLE attempt_facts (
  group_key       TEXT PRIMARY KEY,
  attempt_id      TEXT NOT NULL,
  session_id      TEXT NOT NULL,
  turn_id         TEXT NOT NULL,
  turn_index      INTEGER NOT NULL,
  agent_id        TEXT,
  agent_key       TEXT NOT NULL,
  group_no        INTEGER NOT NULL,    -- position among this agent's attempts in the turn
  attempt_index   INTEGER NOT NULL,    -- position in the turn
  first_at        TEXT NOT NULL,       -- first call's observation time
  first_event_id  TEXT NOT NULL,       -- first call's first event (the `act` anchor)
  failing_call_id TEXT,
  fail_event_id   TEXT,                -- the `fail` anchor
  boundary        TEXT                 -- failing call's finish: later calls open a new attempt
) WITHOUT ROWID;
CREATE UNIQUE INDEX attempt_facts_id ON attempt_facts (attempt_id);
CREATE INDEX attempt_facts_turn ON attempt_facts (turn_id, agent_key, group_no);
CREATE INDEX attempt_facts_agent ON attempt_facts (session_id, agent_key, turn_index, attempt_index);

CREATE TABLE signal_facts (
  event_id    TEXT PRIMARY KEY,
  session_id  TEXT NOT NULL,
  turn_id     TEXT,
  raised_at   TEXT NOT NULL,
  agent_id    TEXT,
  kind        TEXT NOT NULL,
  signal_type TEXT,
  blocking    INTEGER NOT NULL,
  cleared_at  TEXT,
  cleared_by  TEXT
) WITHOUT ROWID;
CREATE INDEX signal_facts_open ON signal_facts (session_id) WHERE cleared_at IS NULL;
CREATE INDEX signal_facts_session ON signal_facts (session_id, raised_at);

CREATE TABLE commit_facts (
  commit_id     TEXT PRIMARY KEY,
  session_id    TEXT NOT NULL,
  tool_call_id  TEXT NOT NULL,
  branch        TEXT,
  previous_sha  TEXT,
  sha           TEXT,
  linkage       TEXT NOT NULL,         -- end_event | next_head | unresolved
  committed_at  TEXT NOT NULL,
  end_event_id  TEXT NOT NULL,
  head_event_id TEXT,
  end_key       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX commit_facts_pending ON commit_facts (session_id, end_key) WHERE linkage = 'unresolved';
CREATE INDEX commit_facts_session ON commit_facts (session_id, end_key);

-- Corrections and retractions: one row per meta event, whatever its target. What they do to
-- the projections is computed by the views (status, matched, latest-wins), so their effect does
-- not depend on when they arrived relative to their targets.
CREATE TABLE correction_facts (
  event_id        TEXT PRIMARY KEY,
  ekey            TEXT NOT NULL,
  corrected_at    TEXT NOT NULL,
  session_id      TEXT NOT NULL,
  project_id      TEXT NOT NULL,
  correction_type TEXT,
  target_type     TEXT,
  target          TEXT NOT NULL,
  outcome         TEXT,
  failure_class   TEXT,
  note            TEXT,
  note_chars      INTEGER,
  invalid         INTEGER NOT NULL     -- malformed: unknown type, unparseable target or outcome
) WITHOUT ROWID;
CREATE INDEX correction_facts_target ON correction_facts (target, ekey);

CREATE TABLE retraction_facts (
  event_id     TEXT PRIMARY KEY,
  ekey         TEXT NOT NULL,
  retracted_at TEXT NOT NULL,
  session_id   TEXT NOT NULL,
  project_id   TEXT NOT NULL,
  target_type  TEXT,                   -- session | event | attempt; null when unparseable
  target       TEXT NOT NULL,
  reason       TEXT NOT NULL,
  note         TEXT,
  note_chars   INTEGER
) WITHOUT ROWID;
CREATE INDEX retraction_facts_target ON retraction_facts (target, target_type);

-- Turn checkpoints: the state just before the session's latest human prompt, so an event that
-- arrives late but after that prompt re-derives only the current turn (restore, then replay from
-- the prompt). Same columns as the tables they copy.
CREATE TABLE snap_points (
  session_id TEXT PRIMARY KEY,
  snap_key   TEXT NOT NULL             -- ekey of the prompt the snapshot precedes
) WITHOUT ROWID;
CREATE TABLE snap_sessions AS SELECT * FROM session_facts WHERE 0;
CREATE INDEX snap_sessions_id ON snap_sessions (session_id);
CREATE TABLE snap_turns AS SELECT * FROM turn_facts WHERE 0;
CREATE INDEX snap_turns_session ON snap_turns (session_id);
CREATE TABLE snap_calls AS SELECT * FROM tool_call_facts WHERE 0;
CREATE INDEX snap_calls_session ON snap_calls (session_id);
CREATE TABLE snap_attempts AS SELECT * FROM attempt_facts WHERE 0;
CREATE INDEX snap_attempts_session ON snap_attempts (session_id);
CREATE TABLE snap_signals AS SELECT * FROM signal_facts WHERE 0;
CREATE INDEX snap_signals_session ON snap_signals (session_id);
CREATE TABLE snap_commits AS SELECT * FROM commit_facts WHERE 0;
CREATE INDEX snap_commits_session ON snap_commits (session_id);

-- Deferred projection (bulk imports): while `paused` = 1 the events trigger only records the
-- touched sessions; attemptdb.projections.resume() replays them.
CREATE TABLE projection_control (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  paused       INTEGER NOT NULL DEFAULT 0,
  mark_session TEXT                    -- see project_mark_retracted_calls (0003)
);
INSERT INTO projection_control (id, paused) VALUES (1, 0);
CREATE TABLE projection_dirty (
  session_id     TEXT PRIMARY KEY,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL
) WITHOUT ROWID;
