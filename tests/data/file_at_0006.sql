-- A file as AttemptDB wrote it at schema version 6 (before views and triggers moved to sql/):
-- `sqlite3 .dump` of a database made by that code (git e9019a6 with migrations limited to 0001-0006),
-- holding one hook session with an unknown event its triggers skipped (fixed by migration 0007).
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta VALUES('capture_mode','local_semantic');
INSERT INTO meta VALUES('created_at','2026-12-01T13:14:03.065416Z');
INSERT INTO meta VALUES('device_id','01a231bd-a9b9-7647-88bf-2fba6d3c434d');
INSERT INTO meta VALUES('last_hlc','117711230931173378');
CREATE TABLE device_clock (
  device_id       TEXT PRIMARY KEY,
  last_source_seq INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO device_clock VALUES('dev_de952309-6919-51a7-8847-a6f360277306',3);
CREATE TABLE events (
  seq                 INTEGER PRIMARY KEY,
  event_id            TEXT NOT NULL UNIQUE,
  schema_version      INTEGER NOT NULL,
  device_id           TEXT NOT NULL,
  source_seq          INTEGER NOT NULL,
  hlc                 INTEGER NOT NULL,
  observed_at         TEXT NOT NULL,
  captured_at         TEXT NOT NULL,
  ingested_at         TEXT,
  provider            TEXT NOT NULL,
  provider_version    TEXT,
  adapter_version     TEXT NOT NULL,
  hook_version        TEXT,
  capture_mode        TEXT NOT NULL,
  provider_event_name TEXT NOT NULL,
  kind                TEXT NOT NULL,
  project_id          TEXT NOT NULL,
  project_root        TEXT NOT NULL,
  project_name        TEXT NOT NULL,
  repo_remote         TEXT,
  branch              TEXT,
  head                TEXT,
  session_id          TEXT NOT NULL,
  provider_session_id TEXT NOT NULL,
  provider_turn_id    TEXT,
  span_id             TEXT,
  parent_span_id      TEXT,
  agent_id            TEXT,
  agent_type          TEXT,
  parent_agent_id     TEXT,
  model               TEXT,
  provider_agent_id   TEXT,
  tool_name           TEXT,
  tool_category       TEXT,
  tool_call_id        TEXT,
  path_logical        TEXT,
  path_relative       TEXT,
  paths_json          TEXT,
  outcome_status      TEXT,
  outcome_class       TEXT,
  exit_code           INTEGER,
  duration_ms         INTEGER,
  attrs_json          TEXT NOT NULL,
  content_json        TEXT,
  raw_json            TEXT,
  content_ref         TEXT,
  raw_ref             TEXT,
  unknown_json        TEXT,
  path_objects_json   TEXT,
  retracted           INTEGER NOT NULL DEFAULT 0,
  event_hash          TEXT NOT NULL,
  chain_hash          TEXT NOT NULL
);
INSERT INTO events VALUES(1,'ev_01a04762-0000-79cb-9606-d90ad9af6ef0',1,'dev_de952309-6919-51a7-8847-a6f360277306',1,117711230931173376,'2026-08-20T09:00:00.000000Z','2026-08-28T08:00:00.000000Z','2026-12-01T13:14:03.066598Z','claude_code',NULL,'0.1.1','t','local_semantic','SessionStart','session_started','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','/home/dev/p','p',NULL,NULL,NULL,'ses_589796bc-33b2-5927-87f8-9e437c438b8b','s-old',NULL,NULL,NULL,'agt_5ad95459-4b82-5579-8884-2b9ec1260836',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'{"hook_event_name":"SessionStart"}',NULL,'{"hook_event_name":"SessionStart","session_id":"s-old","timestamp":"2026-08-20T09:00:00Z"}',NULL,NULL,NULL,NULL,0,'8f96ed745df3eb6e47bd584b421427abf2f89a36b388cb3935b0ff0b0161c52a','d355a022a1d1c917ade92074670f5d4923100f3999cf0f7f7f6adbb9331acb0e');
INSERT INTO events VALUES(2,'ev_01a04762-0000-7c62-a037-d3c479fe65c4',1,'dev_de952309-6919-51a7-8847-a6f360277306',2,117711230931173377,'2026-08-20T09:00:01.000000Z','2026-08-28T08:00:00.000000Z','2026-12-01T13:14:03.066598Z','claude_code',NULL,'0.1.1','t','local_semantic','SomethingNew','unknown','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','/home/dev/p','p',NULL,NULL,NULL,'ses_589796bc-33b2-5927-87f8-9e437c438b8b','s-old',NULL,NULL,NULL,'agt_5ad95459-4b82-5579-8884-2b9ec1260836',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'{"hook_event_name":"SomethingNew"}',NULL,'{"hook_event_name":"SomethingNew","session_id":"s-old","timestamp":"2026-08-20T09:00:01Z"}',NULL,NULL,NULL,NULL,0,'acf59faab86f6b02a4a90a6ef4e3ed263117cd7be24ac5c7b449cac0fe6a3b8c','f6a4f50948267e6fc033a61e5ec1f6175f0709b6e35d4f62f689de94a2389071');
INSERT INTO events VALUES(3,'ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4',1,'dev_de952309-6919-51a7-8847-a6f360277306',3,117711230931173378,'2026-08-20T09:00:02.000000Z','2026-08-28T08:00:00.000000Z','2026-12-01T13:14:03.066598Z','claude_code',NULL,'0.1.1','t','local_semantic','UserPromptSubmit','prompt_submitted','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','/home/dev/p','p',NULL,NULL,NULL,'ses_589796bc-33b2-5927-87f8-9e437c438b8b','s-old',NULL,NULL,NULL,'agt_5ad95459-4b82-5579-8884-2b9ec1260836',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'{"hook_event_name":"UserPromptSubmit"}',NULL,'{"hook_event_name":"UserPromptSubmit","session_id":"s-old","timestamp":"2026-08-20T09:00:02Z"}',NULL,NULL,NULL,NULL,0,'8936109a6e7e57b902f02380f60b20177ba25f9e6f200d3a06d9f8fa47e66c1b','58e754bf363f67a024800e36ff4358852fe5b4121372f4f917111e206c35e67e');
CREATE TABLE checkpoints (
  size       INTEGER PRIMARY KEY,
  head_hash  TEXT NOT NULL,
  created_at TEXT NOT NULL,
  key_id     TEXT NOT NULL,
  note       TEXT NOT NULL
);
CREATE TABLE session_facts (
  session_id          TEXT PRIMARY KEY,
  raw_session_id      TEXT NOT NULL,   -- events.session_id (retractions match this)
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
  started_at          TEXT NOT NULL,
  start_event_id      TEXT,
  start_source        TEXT,
  ended_at            TEXT,
  end_event_id        TEXT,
  end_reason          TEXT,
  saw_start           INTEGER NOT NULL DEFAULT 0,
  saw_end             INTEGER NOT NULL DEFAULT 0,
  event_count         INTEGER NOT NULL DEFAULT 0,
  prompt_count        INTEGER NOT NULL DEFAULT 0,  -- = index of the latest human turn
  turn_count          INTEGER NOT NULL DEFAULT 0,
  call_seq            INTEGER NOT NULL DEFAULT 0,  -- tool calls created (end-only included)
  failure_count       INTEGER NOT NULL DEFAULT 0,  -- calls ending failure/denied + turn_failed
  head                TEXT,
  cur_turn_id         TEXT,
  turn_last_event_id  TEXT,            -- last event of the current turn (the turn row gets it
  turn_last_at        TEXT,            --   when the next prompt closes the turn)
  ev_call_id          TEXT,            -- the call the event being applied opened or closed
  ev_attempt_key      TEXT,            -- the attempt a new call joins (NULL: it opens one)
  ev_own_call         TEXT,            -- tc_ + the uuid of the tool end being applied
  ev_agent            TEXT,            -- the agent of the event being applied
  ev_prev_head        TEXT,
  retraction          INTEGER NOT NULL DEFAULT 0,  -- 0, 1 retracted, 2 retracted for privacy
  retracted_attempts  INTEGER NOT NULL DEFAULT 0   -- 1 once any attempt of it is retracted
) WITHOUT ROWID;
INSERT INTO session_facts VALUES('ses_589796bc-33b2-5927-87f8-9e437c438b8b','ses_589796bc-33b2-5927-87f8-9e437c438b8b','claude_code','s-old','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','p','ev_01a04762-0000-79cb-9606-d90ad9af6ef0','2026-08-20T09:00:00.000000Z','ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','2026-08-20T09:00:02.000000Z','2026-08-20T09:00:02.000000Z|00117711230931173378|00000000000000000003|ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','2026-08-20T09:00:02.000000Z','2026-08-20T09:00:00.000000Z','ev_01a04762-0000-79cb-9606-d90ad9af6ef0',NULL,NULL,NULL,NULL,1,0,2,1,1,0,0,NULL,'trn_01a04762-0000-7e3b-a1a8-3d15c7923ca4','ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','2026-08-20T09:00:02.000000Z',NULL,NULL,NULL,'agt_5ad95459-4b82-5579-8884-2b9ec1260836',NULL,0,0);
CREATE TABLE session_agents (
  session_id TEXT NOT NULL,
  agent_id   TEXT NOT NULL,
  first_key  TEXT NOT NULL,
  PRIMARY KEY (session_id, agent_id)
) WITHOUT ROWID;
INSERT INTO session_agents VALUES('ses_589796bc-33b2-5927-87f8-9e437c438b8b','agt_5ad95459-4b82-5579-8884-2b9ec1260836','2026-08-20T09:00:00.000000Z|00117711230931173376|00000000000000000001|ev_01a04762-0000-79cb-9606-d90ad9af6ef0');
CREATE TABLE turn_facts (
  turn_id         TEXT PRIMARY KEY,
  session_id      TEXT NOT NULL,
  turn_index      INTEGER NOT NULL,
  started_at      TEXT NOT NULL,
  ended_at        TEXT,
  status          TEXT NOT NULL,       -- in_progress | completed | failed | unknown
  failure_class   TEXT,
  prompt_event_id TEXT,
  stop_event_id   TEXT,
  prompt_chars    INTEGER,
  first_event_id  TEXT NOT NULL,
  last_event_id   TEXT NOT NULL,       -- of a closed turn (the current one's is on its session)
  last_at         TEXT NOT NULL,
  start_key       TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO turn_facts VALUES('trn_01a04762-0000-7e3b-a1a8-3d15c7923ca4','ses_589796bc-33b2-5927-87f8-9e437c438b8b',1,'2026-08-20T09:00:02.000000Z',NULL,'in_progress',NULL,'ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4',NULL,NULL,'ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','2026-08-20T09:00:02.000000Z','2026-08-20T09:00:02.000000Z|00117711230931173378|00000000000000000003|ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4');
CREATE TABLE turn_prompts (
  turn_id    TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  objective  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE tool_call_facts (
  tool_call_id     TEXT NOT NULL,
  session_id       TEXT NOT NULL,
  turn_id          TEXT NOT NULL,
  agent_id         TEXT,
  agent_key        TEXT NOT NULL,
  tool_name        TEXT,
  tool_category    TEXT,
  provider_call_id TEXT,
  started_at       TEXT,
  finished_at      TEXT,
  first_at         TEXT NOT NULL,
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
  call_ord         INTEGER NOT NULL,
  attempt_key      TEXT NOT NULL,
  PRIMARY KEY (attempt_key, call_ord)
) WITHOUT ROWID;
CREATE TABLE attempt_facts (
  group_key       TEXT PRIMARY KEY,    -- the first call's tool_call_id; a placeholder's turn_id
  attempt_id      TEXT NOT NULL,       -- re-anchors on the failing call's end event
  session_id      TEXT NOT NULL,
  provider        TEXT NOT NULL,       -- its session's (copied: a read needs no join)
  project_id      TEXT NOT NULL,
  project_name    TEXT NOT NULL,
  turn_id         TEXT NOT NULL,
  turn_index      INTEGER NOT NULL,
  agent_id        TEXT,
  agent_key       TEXT,                -- coalesce(agent_id, ''); NULL for a placeholder
  group_no        INTEGER NOT NULL,    -- position among its agent's attempts in the turn
  attempt_index   INTEGER NOT NULL,    -- position in the turn
  placeholder     INTEGER NOT NULL DEFAULT 0,
  started_at      TEXT NOT NULL,       -- the turn's start for attempt 0, else the first call's
  first_at        TEXT NOT NULL,
  first_event_id  TEXT NOT NULL,
  failing_call_id TEXT,
  fail_event_id   TEXT,
  fail_class      TEXT,
  boundary        TEXT,                -- the failing call's finish
  last_of_agent   INTEGER NOT NULL DEFAULT 1,
  turn_status     TEXT NOT NULL,       -- copies of its turn's status, end, class and stop
  turn_ended_at   TEXT,
  turn_class      TEXT,
  turn_stop_id    TEXT,
  verification    TEXT,
  verify_key      TEXT,                -- finished_at | call_ord of the check that decided it
  last_fail_ev    TEXT,                -- end event of the last call ending failure/denied
  last_fail_key   TEXT,
  superseded_key  TEXT,                -- group_key of the first later attempt that retried it
  successor_live  INTEGER NOT NULL DEFAULT 1, -- 0 when that attempt is retracted
  retraction      INTEGER NOT NULL DEFAULT 0, -- 0, 1 retracted, 2 retracted for privacy
  session_retracted INTEGER NOT NULL DEFAULT 0,
  corr_by         TEXT,                -- correction_targets of attempt_id, copied
  corr_outcome    TEXT,
  corr_class_set  INTEGER NOT NULL DEFAULT 0,
  corr_class      TEXT,
  corr_note_by    TEXT,
  failed INTEGER GENERATED ALWAYS AS (failing_call_id IS NOT NULL OR (last_of_agent AND turn_status = 'failed')) VIRTUAL,
  retracted INTEGER GENERATED ALWAYS AS (retraction > 0 OR session_retracted) VIRTUAL,
  superseded_by_key TEXT GENERATED ALWAYS AS (
    CASE WHEN successor_live AND (failing_call_id IS NOT NULL OR (last_of_agent AND turn_status = 'failed'))
         THEN superseded_key END) VIRTUAL,
  inferred_outcome TEXT GENERATED ALWAYS AS (
    CASE WHEN failing_call_id IS NOT NULL OR (last_of_agent AND turn_status = 'failed')
           THEN CASE WHEN superseded_key IS NOT NULL AND successor_live THEN 'superseded' ELSE 'failed' END
         WHEN turn_status = 'completed' THEN CASE WHEN placeholder THEN 'unknown' ELSE 'succeeded' END
         WHEN turn_status = 'unknown' THEN 'abandoned'
         ELSE 'in_progress' END) VIRTUAL,
  inferred_failure_class TEXT GENERATED ALWAYS AS (
    CASE WHEN failing_call_id IS NOT NULL THEN fail_class
         WHEN last_of_agent AND turn_status = 'failed' THEN coalesce(turn_class, 'turn_failed') END) VIRTUAL,
  outcome TEXT GENERATED ALWAYS AS (
    CASE WHEN corr_outcome IS NOT NULL AND retraction = 0 AND NOT session_retracted THEN corr_outcome
         WHEN failing_call_id IS NOT NULL OR (last_of_agent AND turn_status = 'failed')
           THEN CASE WHEN superseded_key IS NOT NULL AND successor_live THEN 'superseded' ELSE 'failed' END
         WHEN turn_status = 'completed' THEN CASE WHEN placeholder THEN 'unknown' ELSE 'succeeded' END
         WHEN turn_status = 'unknown' THEN 'abandoned'
         ELSE 'in_progress' END) VIRTUAL,
  failure_class TEXT GENERATED ALWAYS AS (
    CASE WHEN corr_class_set AND retraction = 0 AND NOT session_retracted THEN corr_class
         WHEN failing_call_id IS NOT NULL THEN fail_class
         WHEN last_of_agent AND turn_status = 'failed' THEN coalesce(turn_class, 'turn_failed') END) VIRTUAL,
  ended_at TEXT GENERATED ALWAYS AS (CASE WHEN failing_call_id IS NOT NULL THEN boundary ELSE turn_ended_at END) VIRTUAL,
  retry_from TEXT GENERATED ALWAYS AS (coalesce(fail_event_id, turn_stop_id)) VIRTUAL,
  cause_ev TEXT GENERATED ALWAYS AS (coalesce(last_fail_ev, CASE WHEN turn_status = 'failed' THEN turn_stop_id END)) VIRTUAL
) WITHOUT ROWID;
INSERT INTO attempt_facts VALUES('trn_01a04762-0000-7e3b-a1a8-3d15c7923ca4','att_01a04762-0000-7e3b-a1a8-3d15c7923ca4','ses_589796bc-33b2-5927-87f8-9e437c438b8b','claude_code','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','p','trn_01a04762-0000-7e3b-a1a8-3d15c7923ca4',1,'agt_00000000-0000-0000-0000-000000000000',NULL,0,0,1,'2026-08-20T09:00:02.000000Z','2026-08-20T09:00:02.000000Z','ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4',NULL,NULL,NULL,NULL,1,'in_progress',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,1,0,0,NULL,NULL,0,NULL,NULL);
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
  invalid         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE correction_targets (
  target         TEXT PRIMARY KEY,
  corr_by        TEXT,                 -- latest outcome correction, or latest with a note
  corr_outcome   TEXT,                 -- outcome of the latest outcome correction
  corr_class_set INTEGER NOT NULL,     -- some outcome correction named a class or left the failures
  corr_class     TEXT,                 --   the latest such one's class
  corr_note_by   TEXT                  -- latest correction with a note
) WITHOUT ROWID;
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
CREATE TABLE snap_points (
  session_id TEXT PRIMARY KEY,
  snap_key   TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO snap_points VALUES('ses_589796bc-33b2-5927-87f8-9e437c438b8b','2026-08-20T09:00:02.000000Z|00117711230931173378|00000000000000000003|ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4');
CREATE TABLE snap_sessions(
  session_id TEXT,
  raw_session_id TEXT,
  provider TEXT,
  provider_session_id TEXT,
  project_id TEXT,
  project_name TEXT,
  first_event_id TEXT,
  first_at TEXT,
  last_event_id TEXT,
  last_at TEXT,
  last_key TEXT,
  last_activity_at TEXT,
  started_at TEXT,
  start_event_id TEXT,
  start_source TEXT,
  ended_at TEXT,
  end_event_id TEXT,
  end_reason TEXT,
  saw_start INT,
  saw_end INT,
  event_count INT,
  prompt_count INT,
  turn_count INT,
  call_seq INT,
  failure_count INT,
  head TEXT,
  cur_turn_id TEXT,
  turn_last_event_id TEXT,
  turn_last_at TEXT,
  ev_call_id TEXT,
  ev_attempt_key TEXT,
  ev_own_call TEXT,
  ev_agent TEXT,
  ev_prev_head TEXT,
  retraction INT,
  retracted_attempts INT
);
INSERT INTO snap_sessions VALUES('ses_589796bc-33b2-5927-87f8-9e437c438b8b','ses_589796bc-33b2-5927-87f8-9e437c438b8b','claude_code','s-old','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','p','ev_01a04762-0000-79cb-9606-d90ad9af6ef0','2026-08-20T09:00:00.000000Z','ev_01a04762-0000-79cb-9606-d90ad9af6ef0','2026-08-20T09:00:00.000000Z','2026-08-20T09:00:00.000000Z|00117711230931173376|00000000000000000001|ev_01a04762-0000-79cb-9606-d90ad9af6ef0','2026-08-20T09:00:00.000000Z','2026-08-20T09:00:00.000000Z','ev_01a04762-0000-79cb-9606-d90ad9af6ef0',NULL,NULL,NULL,NULL,1,0,1,0,0,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'agt_5ad95459-4b82-5579-8884-2b9ec1260836',NULL,0,0);
CREATE TABLE snap_turns(
  turn_id TEXT,
  session_id TEXT,
  turn_index INT,
  started_at TEXT,
  ended_at TEXT,
  status TEXT,
  failure_class TEXT,
  prompt_event_id TEXT,
  stop_event_id TEXT,
  prompt_chars INT,
  first_event_id TEXT,
  last_event_id TEXT,
  last_at TEXT,
  start_key TEXT
);
CREATE TABLE snap_calls(
  tool_call_id TEXT,
  session_id TEXT,
  turn_id TEXT,
  agent_id TEXT,
  agent_key TEXT,
  tool_name TEXT,
  tool_category TEXT,
  provider_call_id TEXT,
  started_at TEXT,
  finished_at TEXT,
  first_at TEXT,
  duration_ms INT,
  outcome_status TEXT,
  outcome_class TEXT,
  exit_code INT,
  path_relative TEXT,
  paths TEXT,
  command_category TEXT,
  git_subcommand TEXT,
  lines_added INT,
  lines_removed INT,
  tests_failed INT,
  pairing TEXT,
  start_event_id TEXT,
  end_event_id TEXT,
  call_ord INT,
  attempt_key TEXT
);
CREATE TABLE snap_attempts(
  group_key TEXT,
  attempt_id TEXT,
  session_id TEXT,
  provider TEXT,
  project_id TEXT,
  project_name TEXT,
  turn_id TEXT,
  turn_index INT,
  agent_id TEXT,
  agent_key TEXT,
  group_no INT,
  attempt_index INT,
  placeholder INT,
  started_at TEXT,
  first_at TEXT,
  first_event_id TEXT,
  failing_call_id TEXT,
  fail_event_id TEXT,
  fail_class TEXT,
  boundary TEXT,
  last_of_agent INT,
  turn_status TEXT,
  turn_ended_at TEXT,
  turn_class TEXT,
  turn_stop_id TEXT,
  verification TEXT,
  verify_key TEXT,
  last_fail_ev TEXT,
  last_fail_key TEXT,
  superseded_key TEXT,
  successor_live INT,
  retraction INT,
  session_retracted INT,
  corr_by TEXT,
  corr_outcome TEXT,
  corr_class_set INT,
  corr_class TEXT,
  corr_note_by TEXT
);
CREATE TABLE snap_signals(
  event_id TEXT,
  session_id TEXT,
  turn_id TEXT,
  raised_at TEXT,
  agent_id TEXT,
  kind TEXT,
  signal_type TEXT,
  blocking INT,
  cleared_at TEXT,
  cleared_by TEXT
);
CREATE TABLE snap_commits(
  commit_id TEXT,
  session_id TEXT,
  tool_call_id TEXT,
  branch TEXT,
  previous_sha TEXT,
  sha TEXT,
  linkage TEXT,
  committed_at TEXT,
  end_event_id TEXT,
  head_event_id TEXT,
  end_key TEXT
);
CREATE TABLE projection_control (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  paused         INTEGER NOT NULL DEFAULT 0,
  correction_seq INTEGER,              -- the Correction / Retraction being applied (0004)
  retraction_seq INTEGER
, defer_replays INTEGER NOT NULL DEFAULT 0);
INSERT INTO projection_control VALUES(1,0,NULL,NULL,0);
CREATE TABLE projection_dirty (
  session_id     TEXT PRIMARY KEY,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE project_queue (
  qid INTEGER PRIMARY KEY,
  seq,
  event_id,
  uid,
  raw_sid,
  gsid,
  ekey,
  at,
  kind,
  provider,
  psid,
  project_id,
  project_name,
  head,
  branch,
  agent_id,
  akey,
  tool_name,
  tool_category,
  call_id,
  paths,
  path_relative,
  outcome_status,
  outcome_class,
  exit_code,
  duration_ms,
  human_prompt,
  objective,
  prompt_chars,
  start_source,
  end_reason,
  ntype,
  turn_class,
  command_category,
  git_subcommand,
  lines_added,
  lines_removed,
  tests_failed,
  telemetry,
  in_order,
  go_prepare,
  go_start,
  go_end,
  go_prompt,
  go_other,
  go_attempt,
  go_end_only,
  go_start_more,
  go_judge
);
INSERT INTO project_queue VALUES(1,3,'ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','01a04762-0000-7e3b-a1a8-3d15c7923ca4','ses_589796bc-33b2-5927-87f8-9e437c438b8b','ses_589796bc-33b2-5927-87f8-9e437c438b8b','2026-08-20T09:00:02.000000Z|00117711230931173378|00000000000000000003|ev_01a04762-0000-7e3b-a1a8-3d15c7923ca4','2026-08-20T09:00:02.000000Z','prompt_submitted','claude_code','s-old','prj_693f6aa4-285e-5190-bc6e-ed177caee0c0','p',NULL,NULL,'agt_5ad95459-4b82-5579-8884-2b9ec1260836','agt_5ad95459-4b82-5579-8884-2b9ec1260836',NULL,NULL,NULL,'[]',NULL,NULL,NULL,NULL,NULL,1,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,1,0,0,0,1,0,0,0,0,0);
CREATE TABLE replay_requests (
  rid            INTEGER PRIMARY KEY,
  session_id     TEXT NOT NULL,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  from_key       TEXT NOT NULL
);
CREATE TABLE replay_pending (
  session_id     TEXT PRIMARY KEY,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  from_key       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX events_session ON events (session_id, observed_at);
CREATE INDEX events_kind ON events (kind, retracted);
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
  SELECT RAISE(ABORT, 'events are immutable: append a Retraction event instead');
END;
CREATE TRIGGER events_no_update BEFORE UPDATE OF
  seq, event_id, schema_version, device_id, source_seq, hlc, observed_at, captured_at,
  ingested_at, provider, provider_version, adapter_version, hook_version, capture_mode,
  provider_event_name, kind, project_id, project_root, project_name, repo_remote, branch, head,
  session_id, provider_session_id, provider_turn_id, span_id, parent_span_id, agent_id,
  agent_type, parent_agent_id, model, provider_agent_id, tool_name, tool_category, tool_call_id,
  path_logical, path_relative, paths_json, outcome_status, outcome_class, exit_code, duration_ms,
  attrs_json, content_json, raw_json, content_ref, raw_ref, unknown_json, path_objects_json,
  event_hash, chain_hash
ON events
BEGIN
  SELECT RAISE(ABORT, 'events are immutable: append a Correction event instead');
END;
CREATE TRIGGER events_retracted_only_set BEFORE UPDATE OF retracted ON events
WHEN NEW.retracted IS NOT 1 OR OLD.retracted IS NOT 0
BEGIN
  SELECT RAISE(ABORT, 'events.retracted only goes from 0 to 1');
END;
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
BEGIN
  SELECT RAISE(ABORT, 'checkpoints are immutable');
END;
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN
  SELECT RAISE(ABORT, 'checkpoints are immutable');
END;
CREATE INDEX session_facts_raw ON session_facts (raw_session_id);
CREATE INDEX session_facts_project ON session_facts (project_id, started_at);
CREATE INDEX session_facts_started ON session_facts (started_at);
CREATE INDEX turn_facts_session ON turn_facts (session_id, turn_index);
CREATE INDEX turn_facts_started ON turn_facts (session_id, started_at);
CREATE INDEX turn_facts_prompt ON turn_facts (prompt_event_id) WHERE prompt_event_id IS NOT NULL;
CREATE INDEX turn_facts_stop ON turn_facts (stop_event_id) WHERE stop_event_id IS NOT NULL;
CREATE INDEX turn_prompts_session ON turn_prompts (session_id);
CREATE UNIQUE INDEX tool_call_facts_id ON tool_call_facts (tool_call_id);
CREATE INDEX tool_call_facts_open ON tool_call_facts (session_id, provider_call_id, agent_key, tool_name, call_ord)
  WHERE end_event_id IS NULL;
CREATE INDEX tool_call_facts_turn ON tool_call_facts (turn_id, call_ord);
CREATE INDEX tool_call_facts_session ON tool_call_facts (session_id, first_at);
CREATE UNIQUE INDEX attempt_facts_id ON attempt_facts (attempt_id);
CREATE INDEX attempt_facts_turn ON attempt_facts (turn_id, agent_key, group_no);
CREATE INDEX attempt_facts_agent ON attempt_facts (session_id, agent_key, turn_index, attempt_index);
CREATE INDEX attempt_facts_session ON attempt_facts (session_id, started_at);
CREATE INDEX attempt_facts_started ON attempt_facts (started_at);
CREATE INDEX attempt_facts_outcome ON attempt_facts (outcome, retracted, started_at DESC, turn_index DESC,
  attempt_index DESC, attempt_id);
CREATE INDEX attempt_facts_class ON attempt_facts (outcome, retracted, failure_class);
CREATE INDEX attempt_facts_successor ON attempt_facts (superseded_key, turn_index, attempt_index)
  WHERE superseded_key IS NOT NULL;
CREATE INDEX attempt_facts_first_event ON attempt_facts (first_event_id);
CREATE INDEX attempt_facts_retry_from ON attempt_facts (retry_from) WHERE superseded_key IS NOT NULL;
CREATE INDEX attempt_facts_cause ON attempt_facts (cause_ev) WHERE cause_ev IS NOT NULL;
CREATE INDEX signal_facts_open ON signal_facts (session_id) WHERE cleared_at IS NULL;
CREATE INDEX signal_facts_session ON signal_facts (session_id, raised_at);
CREATE INDEX commit_facts_pending ON commit_facts (session_id, end_key) WHERE linkage = 'unresolved';
CREATE INDEX commit_facts_session ON commit_facts (session_id, end_key);
CREATE INDEX commit_facts_call ON commit_facts (tool_call_id);
CREATE INDEX correction_facts_target ON correction_facts (target, ekey);
CREATE INDEX retraction_facts_target ON retraction_facts (target, target_type);
CREATE INDEX snap_sessions_id ON snap_sessions (session_id);
CREATE INDEX snap_turns_session ON snap_turns (session_id);
CREATE INDEX snap_calls_session ON snap_calls (session_id);
CREATE INDEX snap_attempts_session ON snap_attempts (session_id);
CREATE INDEX snap_signals_session ON snap_signals (session_id);
CREATE INDEX snap_commits_session ON snap_commits (session_id);
CREATE VIEW project_input AS
SELECT
  e.seq AS seq,
  e.event_id AS event_id,
  substr(e.event_id, 4) AS uid,
  e.session_id AS raw_sid,
  CASE WHEN e.provider_session_id IN ('', 'unknown')
       THEN 'ses_' || substr(e.session_id, 5, 19) || substr(e.project_id, 24)
       ELSE e.session_id END AS gsid,
  e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id AS ekey,
  e.observed_at AS at,
  e.kind AS kind,
  e.provider AS provider,
  e.provider_session_id AS psid,
  e.project_id AS project_id,
  e.project_name AS project_name,
  e.head AS head,
  e.branch AS branch,
  e.agent_id AS agent_id,
  coalesce(e.agent_id, '') AS akey,
  e.tool_name AS tool_name,
  e.tool_category AS tool_category,
  e.tool_call_id AS call_id,
  coalesce(e.paths_json, '[]') AS paths,
  e.path_relative AS path_relative,
  e.outcome_status AS outcome_status,
  e.outcome_class AS outcome_class,
  e.exit_code AS exit_code,
  e.duration_ms AS duration_ms,
  CASE WHEN e.kind = 'prompt_submitted' AND NOT (
         substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 19) = '<task-notification>'
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 17) = '<system-reminder>'
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 22) IN ('<local-command-stdout>', '<local-command-caveat>')
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 13) IN ('<bash-stdout>', '<bash-stderr>')
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 20) = '[SYSTEM NOTIFICATION')
       THEN 1 ELSE 0 END AS human_prompt,
  CASE WHEN e.kind = 'prompt_submitted' AND json_type(e.content_json, '$.prompt') = 'text'
       THEN json_extract(e.content_json, '$.prompt') END AS objective,
  CASE WHEN e.kind = 'prompt_submitted' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.prompt_chars') = 'integer' THEN json_extract(e.attrs_json, '$.prompt_chars') END,
         CASE WHEN json_type(e.attrs_json, '$.prompt_length') = 'integer' THEN json_extract(e.attrs_json, '$.prompt_length') END,
         CASE WHEN json_type(e.attrs_json, '$.prompt_len') = 'integer' THEN json_extract(e.attrs_json, '$.prompt_len') END,
         CASE WHEN json_type(e.content_json, '$.prompt') = 'text' THEN length(json_extract(e.content_json, '$.prompt')) END)
       END AS prompt_chars,
  CASE WHEN e.kind = 'session_started' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.source') = 'text' THEN json_extract(e.attrs_json, '$.source') END,
         CASE WHEN json_type(e.attrs_json, '$.start_source') = 'text' THEN json_extract(e.attrs_json, '$.start_source') END)
       END AS start_source,
  CASE WHEN e.kind = 'session_ended' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.reason') = 'text' THEN json_extract(e.attrs_json, '$.reason') END,
         CASE WHEN json_type(e.attrs_json, '$.end_reason') = 'text' THEN json_extract(e.attrs_json, '$.end_reason') END)
       END AS end_reason,
  CASE WHEN e.kind = 'notification' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.notification_type') = 'text' THEN json_extract(e.attrs_json, '$.notification_type') END,
         CASE WHEN json_type(e.attrs_json, '$.type') = 'text' THEN json_extract(e.attrs_json, '$.type') END,
         CASE WHEN json_type(e.attrs_json, '$.matcher') = 'text' THEN json_extract(e.attrs_json, '$.matcher') END)
       END AS ntype,
  CASE WHEN e.kind = 'turn_failed' THEN coalesce(e.outcome_class,
         CASE WHEN json_type(e.attrs_json, '$.class') = 'text' THEN json_extract(e.attrs_json, '$.class') END,
         CASE WHEN json_type(e.attrs_json, '$.failure_class') = 'text' THEN json_extract(e.attrs_json, '$.failure_class') END,
         CASE WHEN json_type(e.attrs_json, '$.reason') = 'text' THEN json_extract(e.attrs_json, '$.reason') END)
       END AS turn_class,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.command_category') = 'text'
       THEN json_extract(e.attrs_json, '$.command_category') END AS command_category,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.git_subcommand') = 'text'
       THEN json_extract(e.attrs_json, '$.git_subcommand') END AS git_subcommand,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.lines_added') = 'integer'
       THEN json_extract(e.attrs_json, '$.lines_added') END AS lines_added,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.lines_removed') = 'integer'
       THEN json_extract(e.attrs_json, '$.lines_removed') END AS lines_removed,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.tests_failed') = 'integer'
       THEN json_extract(e.attrs_json, '$.tests_failed') END AS tests_failed,
  CASE WHEN e.kind = 'unknown' AND json_extract(e.attrs_json, '$.source') = 'otel' THEN 1 ELSE 0 END AS telemetry,
  NOT EXISTS (SELECT 1 FROM session_facts s WHERE s.session_id = CASE WHEN e.provider_session_id IN ('', 'unknown') THEN 'ses_' || substr(e.session_id, 5, 19) || substr(e.project_id, 24) ELSE e.session_id END
              AND s.last_key >= e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id) AS in_order,
  0 AS go_prepare,
  0 AS go_start,
  0 AS go_end,
  0 AS go_prompt,
  0 AS go_other,
  0 AS go_attempt,
  0 AS go_end_only,
  0 AS go_start_more,
  0 AS go_judge
FROM events e;
CREATE TRIGGER project_dispatch AFTER INSERT ON project_queue
BEGIN
  UPDATE project_queue SET go_prepare = 1
  WHERE qid = 1 AND NEW.in_order
    AND coalesce((SELECT cur_turn_id IS NULL AND NEW.human_prompt = 0 AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed', 'turn_stopped', 'turn_failed', 'permission_denied')
                  FROM session_facts WHERE session_id = NEW.gsid), 1);
  UPDATE project_queue SET go_start = 1 WHERE qid = 1 AND NEW.in_order AND NEW.kind = 'tool_call_started';
  UPDATE project_queue SET go_end = 1 WHERE qid = 1 AND NEW.in_order AND NEW.kind IN ('tool_call_finished', 'tool_call_failed');
  UPDATE project_queue SET go_prompt = 1 WHERE qid = 1 AND NEW.in_order AND NEW.human_prompt = 1;
  UPDATE project_queue SET go_other = 1
  WHERE qid = 1 AND NEW.in_order AND NEW.human_prompt = 0 AND NEW.kind NOT IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed');
END;
CREATE TRIGGER apply_prepare AFTER UPDATE OF go_prepare ON project_queue
BEGIN
  INSERT INTO session_facts (session_id, raw_session_id, provider, provider_session_id,
      project_id, project_name, first_event_id, first_at, started_at, retraction)
    VALUES (NEW.gsid, NEW.raw_sid, NEW.provider, NEW.psid, NEW.project_id, NEW.project_name, NEW.event_id,
            NEW.at, NEW.at, coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts
                                      WHERE target = NEW.raw_sid AND target_type = 'session'), 0))
    ON CONFLICT DO NOTHING;
  INSERT INTO turn_facts (turn_id, session_id, turn_index, started_at, status, first_event_id, last_event_id,
      last_at, start_key)
    SELECT 'trn_' || substr(NEW.gsid, 5), NEW.gsid, 0, NEW.at, 'in_progress', NEW.event_id, NEW.event_id, NEW.at, NEW.ekey
    FROM session_facts s
    WHERE s.session_id = NEW.gsid AND s.cur_turn_id IS NULL AND NEW.human_prompt = 0 AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed', 'turn_stopped', 'turn_failed', 'permission_denied');
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id,
      turn_index, agent_id, group_no, attempt_index, placeholder, started_at, first_at, first_event_id,
      turn_status, retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT t.turn_id, 'att_' || NEW.uid, NEW.gsid, s.provider, s.project_id, s.project_name, t.turn_id, t.turn_index,
           'agt_00000000-0000-0000-0000-000000000000', 0, 0, 1, NEW.at, NEW.at, NEW.event_id, t.status,
           coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || NEW.uid AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
    FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
      LEFT JOIN correction_targets ct ON ct.target = 'att_' || NEW.uid
    WHERE t.turn_id = 'trn_' || substr(NEW.gsid, 5) AND t.first_event_id = NEW.event_id AND NEW.kind NOT IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed');
END;
CREATE TRIGGER apply_start AFTER UPDATE OF go_start ON project_queue
BEGIN
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = NEW.at, ended_at = NULL, end_event_id = NULL, end_reason = NULL,
    turn_count = turn_count + (cur_turn_id IS NULL),
    cur_turn_id = coalesce(cur_turn_id, 'trn_' || substr(NEW.gsid, 5)),
    turn_last_event_id = NEW.event_id, turn_last_at = NEW.at,
    call_seq = call_seq + 1, ev_call_id = 'tc_' || NEW.uid, ev_agent = NEW.agent_id,
    ev_attempt_key = (SELECT CASE WHEN a.boundary IS NULL OR NEW.at <= a.boundary THEN a.group_key END
                      FROM attempt_facts a
                      WHERE a.turn_id = coalesce(session_facts.cur_turn_id, 'trn_' || substr(NEW.gsid, 5))
                        AND a.agent_key = NEW.akey
                      ORDER BY a.group_no DESC LIMIT 1),
    ev_prev_head = head, head = coalesce(NEW.head, head)
  WHERE session_id = NEW.gsid;
  UPDATE project_queue SET go_attempt = 1
  WHERE qid = 1 AND (SELECT ev_attempt_key IS NULL FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO tool_call_facts (tool_call_id, session_id, turn_id, agent_id, agent_key, tool_name,
      tool_category, provider_call_id, started_at, first_at, path_relative, paths, command_category,
      git_subcommand, lines_added, lines_removed, tests_failed, pairing, start_event_id, call_ord, attempt_key)
    SELECT s.ev_call_id, NEW.gsid, s.cur_turn_id, NEW.agent_id, NEW.akey, NEW.tool_name, NEW.tool_category,
           NEW.call_id, NEW.at, NEW.at, NEW.path_relative, NEW.paths, NEW.command_category, NEW.git_subcommand,
           NEW.lines_added, NEW.lines_removed, NEW.tests_failed, 'in_flight', NEW.event_id, s.call_seq,
           coalesce(s.ev_attempt_key, s.ev_call_id)
    FROM session_facts s WHERE s.session_id = NEW.gsid;
  UPDATE project_queue SET go_start_more = 1
  WHERE qid = 1 AND ((NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> '[]')
                     OR (SELECT retracted_attempts FROM session_facts WHERE session_id = NEW.gsid));
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1);
END;
CREATE TRIGGER apply_start_more AFTER UPDATE OF go_start_more ON project_queue
BEGIN
  UPDATE attempt_facts SET superseded_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = 'tc_' || NEW.uid),
      successor_live = (SELECT retraction = 0 FROM attempt_facts WHERE group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = 'tc_' || NEW.uid))
  WHERE group_key IN (
    SELECT f.group_key FROM attempt_facts j JOIN attempt_facts f
      ON f.session_id = j.session_id AND f.agent_key = j.agent_key
     AND f.turn_index BETWEEN j.turn_index - 1 AND j.turn_index
     AND (f.turn_index < j.turn_index OR f.attempt_index < j.attempt_index)
    WHERE j.group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = 'tc_' || NEW.uid) AND f.failed
      AND (f.superseded_key IS NULL
           OR EXISTS (SELECT 1 FROM attempt_facts o WHERE o.group_key = f.superseded_key
                      AND (o.turn_index, o.attempt_index) > (j.turn_index, j.attempt_index)))
      AND NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> '[]' AND EXISTS (SELECT 1 FROM tool_call_facts x, json_each(x.paths) p
                 WHERE x.attempt_key = f.group_key AND x.tool_category IN ('file_write', 'file_edit', 'notebook')
                   AND p.value IN (SELECT value FROM json_each(NEW.paths))));
  UPDATE events SET retracted = 1
  WHERE seq = NEW.seq AND retracted = 0
    AND EXISTS (SELECT 1 FROM tool_call_facts c JOIN attempt_facts a ON a.group_key = c.attempt_key
                WHERE c.tool_call_id = 'tc_' || NEW.uid AND a.retraction > 0);
END;
CREATE TRIGGER apply_end AFTER UPDATE OF go_end ON project_queue
BEGIN
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = NEW.at,
    turn_count = turn_count + (cur_turn_id IS NULL),
    cur_turn_id = coalesce(cur_turn_id, 'trn_' || substr(NEW.gsid, 5)),
    turn_last_event_id = NEW.event_id, turn_last_at = NEW.at,
    failure_count = failure_count + (coalesce(NEW.outcome_status,
        CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END) IN ('failure', 'denied')),
    ev_prev_head = head, head = coalesce(NEW.head, head), ev_agent = NEW.agent_id,
    ev_call_id = coalesce(
      (SELECT c.tool_call_id FROM tool_call_facts c
        WHERE c.session_id = NEW.gsid AND NEW.call_id IS NOT NULL AND c.provider_call_id = NEW.call_id
          AND c.end_event_id IS NULL ORDER BY c.call_ord LIMIT 1),
      (SELECT tool_call_id FROM (
         SELECT c.tool_call_id, c.call_ord FROM tool_call_facts c
         WHERE c.session_id = NEW.gsid AND c.provider_call_id IS NULL AND c.agent_key = NEW.akey
           AND c.tool_name IS NEW.tool_name AND c.end_event_id IS NULL
         UNION ALL
         SELECT c.tool_call_id, c.call_ord FROM tool_call_facts c
         WHERE NEW.call_id IS NULL AND c.session_id = NEW.gsid AND c.provider_call_id IS NOT NULL
           AND c.agent_key = NEW.akey AND c.tool_name IS NEW.tool_name AND c.end_event_id IS NULL)
       ORDER BY call_ord LIMIT 1),
      'tc_' || NEW.uid)
  WHERE session_id = NEW.gsid;
  UPDATE project_queue SET go_end_only = 1
  WHERE qid = 1 AND (SELECT ev_call_id FROM session_facts WHERE session_id = NEW.gsid) = 'tc_' || NEW.uid;
  UPDATE tool_call_facts SET
    finished_at = NEW.at,
    end_event_id = NEW.event_id,
    outcome_status = coalesce(NEW.outcome_status, CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END),
    outcome_class = NEW.outcome_class,
    exit_code = NEW.exit_code,
    duration_ms = coalesce(NEW.duration_ms, max(0,
      ((CAST(strftime('%s', NEW.at) AS INTEGER) * 1000000 + CAST(substr(NEW.at, 21, 6) AS INTEGER))
       - (CAST(strftime('%s', started_at) AS INTEGER) * 1000000 + CAST(substr(started_at, 21, 6) AS INTEGER))) / 1000)),
    paths = CASE WHEN NEW.paths = '[]' OR NEW.paths = paths THEN paths
                 WHEN paths = '[]' THEN NEW.paths
                 ELSE (SELECT json_group_array(value) FROM (
                         SELECT value FROM (SELECT value, 0 AS src, key AS k FROM json_each(paths)
                                            UNION ALL
                                            SELECT value, 1, key FROM json_each(NEW.paths)
                                            WHERE value NOT IN (SELECT value FROM json_each(paths)))
                         ORDER BY src, k)) END,
    path_relative = coalesce(path_relative, NEW.path_relative),
    command_category = coalesce(command_category, NEW.command_category),
    git_subcommand = coalesce(git_subcommand, NEW.git_subcommand),
    lines_added = coalesce(NEW.lines_added, lines_added),
    lines_removed = coalesce(NEW.lines_removed, lines_removed),
    tests_failed = coalesce(NEW.tests_failed, tests_failed),
    pairing = CASE WHEN pairing = 'end_only' THEN 'end_only'
                   WHEN NEW.call_id IS NOT NULL AND provider_call_id = NEW.call_id THEN 'call_id' ELSE 'fifo' END,
    provider_call_id = coalesce(provider_call_id, NEW.call_id)
  WHERE tool_call_id = (SELECT ev_call_id FROM session_facts WHERE session_id = NEW.gsid) AND end_event_id IS NULL;
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1)
    AND NOT EXISTS (SELECT 1 FROM commit_facts q WHERE q.session_id = NEW.gsid AND q.end_key = NEW.ekey
                    AND q.linkage = 'end_event');
END;
CREATE TRIGGER apply_end_only AFTER UPDATE OF go_end_only ON project_queue
BEGIN
  UPDATE session_facts SET call_seq = call_seq + 1, ev_attempt_key = (SELECT CASE WHEN a.boundary IS NULL OR NEW.at <= a.boundary THEN a.group_key END
                      FROM attempt_facts a
                      WHERE a.turn_id = coalesce(session_facts.cur_turn_id, 'trn_' || substr(NEW.gsid, 5))
                        AND a.agent_key = NEW.akey
                      ORDER BY a.group_no DESC LIMIT 1)
  WHERE session_id = NEW.gsid;
  UPDATE project_queue SET go_attempt = 1
  WHERE qid = 1 AND (SELECT ev_attempt_key IS NULL FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO tool_call_facts (tool_call_id, session_id, turn_id, agent_id, agent_key, tool_name,
      tool_category, provider_call_id, first_at, path_relative, paths, command_category, git_subcommand,
      lines_added, lines_removed, tests_failed, pairing, call_ord, attempt_key)
    SELECT s.ev_call_id, NEW.gsid, s.cur_turn_id, NEW.agent_id, NEW.akey, NEW.tool_name, NEW.tool_category,
           NEW.call_id, NEW.at, NEW.path_relative, NEW.paths, NEW.command_category, NEW.git_subcommand,
           NEW.lines_added, NEW.lines_removed, NEW.tests_failed, 'end_only', s.call_seq,
           coalesce(s.ev_attempt_key, s.ev_call_id)
    FROM session_facts s WHERE s.session_id = NEW.gsid;
  UPDATE project_queue SET go_start_more = 1
  WHERE qid = 1 AND NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> '[]';
END;
CREATE TRIGGER apply_attempt AFTER UPDATE OF go_attempt ON project_queue
BEGIN
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id,
      turn_index, agent_id, agent_key, group_no, attempt_index, started_at, first_at, first_event_id, turn_status,
      turn_ended_at, turn_class, turn_stop_id, retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT s.ev_call_id, 'att_' || NEW.uid, NEW.gsid, s.provider, s.project_id, s.project_name, t.turn_id,
           t.turn_index, NEW.agent_id, NEW.akey,
           (SELECT count(*) FROM attempt_facts a WHERE a.turn_id = t.turn_id AND a.agent_key = NEW.akey),
           (SELECT count(agent_key) FROM attempt_facts a WHERE a.turn_id = t.turn_id),
           CASE WHEN EXISTS (SELECT 1 FROM attempt_facts a WHERE a.turn_id = t.turn_id AND a.agent_key IS NOT NULL)
                THEN NEW.at ELSE t.started_at END,
           NEW.at, NEW.event_id, t.status, t.ended_at, t.failure_class, t.stop_event_id,
           coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || NEW.uid AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
    FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
      LEFT JOIN correction_targets ct ON ct.target = 'att_' || NEW.uid
    WHERE s.session_id = NEW.gsid;
END;
CREATE TRIGGER call_closed AFTER UPDATE OF end_event_id ON tool_call_facts
WHEN OLD.end_event_id IS NULL
BEGIN
  UPDATE project_queue SET go_judge = NEW.tool_call_id
  WHERE qid = 1
    AND (NEW.outcome_status IN ('failure', 'denied') OR NEW.tests_failed IS NOT NULL
         OR (NEW.tool_category = 'shell' AND NEW.command_category IN ('test', 'build'))
         OR (NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> OLD.paths)
         OR NEW.git_subcommand = 'commit'
         OR EXISTS (SELECT 1 FROM attempt_facts WHERE group_key = NEW.attempt_key AND (failed OR retraction > 0)));
END;
CREATE TRIGGER apply_judge AFTER UPDATE OF go_judge ON project_queue
BEGIN
  UPDATE attempt_facts SET (verification, verify_key, last_fail_ev, last_fail_key) = (
      SELECT CASE WHEN k.is_check AND k.key > coalesce(verify_key, '') THEN k.verdict ELSE verification END,
             CASE WHEN k.is_check AND k.key > coalesce(verify_key, '') THEN k.key ELSE verify_key END,
             CASE WHEN k.is_fail AND k.key > coalesce(last_fail_key, '') THEN k.end_event_id ELSE last_fail_ev END,
             CASE WHEN k.is_fail AND k.key > coalesce(last_fail_key, '') THEN k.key ELSE last_fail_key END
      FROM (SELECT c.end_event_id, c.finished_at || printf('|%012d', c.call_ord) AS key,
                   c.outcome_status IN ('failure', 'denied') AS is_fail, c.tool_category = 'shell' AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL) AS is_check,
                   CASE WHEN c.outcome_status IN ('failure', 'denied') OR c.tests_failed > 0 THEN 'failed'
                        ELSE 'passed' END AS verdict
            FROM tool_call_facts c WHERE c.tool_call_id = NEW.go_judge) k)
  WHERE group_key = (SELECT c.attempt_key FROM tool_call_facts c WHERE c.tool_call_id = NEW.go_judge
                     AND (c.outcome_status IN ('failure', 'denied') OR (c.tool_category = 'shell' AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL))));
  UPDATE attempt_facts SET (failing_call_id, fail_event_id, boundary, fail_class, attempt_id, retraction,
                            corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by) = (
      SELECT c.tool_call_id, c.end_event_id, c.finished_at,
             coalesce(c.outcome_class, CASE WHEN c.outcome_status IN ('failure', 'denied') THEN c.outcome_status
                                            WHEN c.tests_failed > 0 THEN 'tests_failed' ELSE 'failure' END),
             'att_' || substr(c.end_event_id, 4), coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || substr(c.end_event_id, 4) AND r.target_type = 'attempt'), 0), ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
      FROM tool_call_facts c LEFT JOIN correction_targets ct ON ct.target = 'att_' || substr(c.end_event_id, 4)
      WHERE c.tool_call_id = NEW.go_judge)
  WHERE failing_call_id IS NULL
    AND group_key = (
      SELECT c.attempt_key FROM tool_call_facts c
      WHERE c.tool_call_id = NEW.go_judge
        AND ((c.outcome_status IN ('failure', 'denied')
              AND (c.tool_category IN ('file_write', 'file_edit', 'notebook')
                   OR (c.tool_category = 'shell'
                       AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL
                            OR c.outcome_status = 'denied'
                            OR EXISTS (SELECT 1 FROM tool_call_facts p
                                       WHERE p.attempt_key = c.attempt_key AND p.call_ord < c.call_ord
                                         AND p.tool_category IN ('file_write', 'file_edit', 'notebook'))))))
             OR (c.tool_category = 'shell' AND c.tests_failed > 0)));
  UPDATE attempt_facts SET superseded_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge),
      successor_live = (SELECT retraction = 0 FROM attempt_facts WHERE group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge))
  WHERE group_key IN (
    SELECT f.group_key FROM attempt_facts j JOIN attempt_facts f
      ON f.session_id = j.session_id AND f.agent_key = j.agent_key
     AND f.turn_index BETWEEN j.turn_index - 1 AND j.turn_index
     AND (f.turn_index < j.turn_index OR f.attempt_index < j.attempt_index)
    WHERE j.group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge) AND f.failed
      AND (f.superseded_key IS NULL
           OR EXISTS (SELECT 1 FROM attempt_facts o WHERE o.group_key = f.superseded_key
                      AND (o.turn_index, o.attempt_index) > (j.turn_index, j.attempt_index)))
      AND EXISTS (SELECT 1 FROM tool_call_facts c
                WHERE c.tool_call_id = NEW.go_judge
                  AND ((c.tool_category IN ('file_write', 'file_edit', 'notebook') AND EXISTS (SELECT 1 FROM tool_call_facts x, json_each(x.paths) p
                 WHERE x.attempt_key = f.group_key AND x.tool_category IN ('file_write', 'file_edit', 'notebook')
                   AND p.value IN (SELECT value FROM json_each(c.paths))))
                       OR ((c.tool_category = 'shell' AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL) AND c.end_event_id IS NOT NULL AND c.outcome_status NOT IN ('failure', 'denied') AND coalesce(c.tests_failed, 0) <= 0) AND EXISTS (SELECT 1 FROM tool_call_facts x
                 WHERE x.attempt_key = f.group_key AND x.tool_category = 'shell' AND (x.command_category IN ('test', 'build') OR x.tests_failed IS NOT NULL)
                   AND (x.outcome_status IN ('failure', 'denied') OR x.tests_failed > 0)
                   AND (CASE WHEN x.command_category = 'test' OR x.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END) = CASE WHEN c.command_category = 'test' OR c.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END)))));
  UPDATE attempt_facts SET (superseded_key, successor_live) =
      (SELECT x.k, coalesce(x.live, 1) FROM (SELECT 1) LEFT JOIN (SELECT j.group_key AS k, j.retraction = 0 AS live FROM attempt_facts j
       WHERE j.session_id = attempt_facts.session_id AND j.agent_key = attempt_facts.agent_key
         AND j.turn_index BETWEEN attempt_facts.turn_index AND attempt_facts.turn_index + 1
         AND (j.turn_index > attempt_facts.turn_index OR j.attempt_index > attempt_facts.attempt_index)
         AND (EXISTS (SELECT 1 FROM tool_call_facts y, json_each(y.paths) q
                      WHERE y.attempt_key = j.group_key AND y.tool_category IN ('file_write', 'file_edit', 'notebook')
                        AND q.value IN (SELECT p.value FROM tool_call_facts x, json_each(x.paths) p
                                        WHERE x.attempt_key = attempt_facts.group_key AND x.tool_category IN ('file_write', 'file_edit', 'notebook')))
              OR EXISTS (SELECT 1 FROM tool_call_facts y
                         WHERE y.attempt_key = j.group_key AND (y.tool_category = 'shell' AND (y.command_category IN ('test', 'build') OR y.tests_failed IS NOT NULL) AND y.end_event_id IS NOT NULL AND y.outcome_status NOT IN ('failure', 'denied') AND coalesce(y.tests_failed, 0) <= 0)
                           AND EXISTS (SELECT 1 FROM tool_call_facts x
                 WHERE x.attempt_key = attempt_facts.group_key AND x.tool_category = 'shell' AND (x.command_category IN ('test', 'build') OR x.tests_failed IS NOT NULL)
                   AND (x.outcome_status IN ('failure', 'denied') OR x.tests_failed > 0)
                   AND (CASE WHEN x.command_category = 'test' OR x.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END) = CASE WHEN y.command_category = 'test' OR y.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END)))
       ORDER BY j.turn_index, j.attempt_index LIMIT 1) x)
  WHERE group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge)
    AND failed
    AND EXISTS (SELECT 1 FROM attempt_facts j WHERE j.session_id = attempt_facts.session_id
                AND j.agent_key = attempt_facts.agent_key
                AND j.turn_index BETWEEN attempt_facts.turn_index AND attempt_facts.turn_index + 1
                AND (j.turn_index > attempt_facts.turn_index OR j.attempt_index > attempt_facts.attempt_index));
  INSERT INTO commit_facts (commit_id, session_id, tool_call_id, branch, previous_sha, sha,
      linkage, committed_at, end_event_id, head_event_id, end_key)
    SELECT 'cmt_' || substr(c.tool_call_id, 4), NEW.gsid, c.tool_call_id, NEW.branch, s.ev_prev_head,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN NEW.head END,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN 'end_event' ELSE 'unresolved' END,
           NEW.at, NEW.event_id,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN NEW.event_id END,
           NEW.ekey
    FROM tool_call_facts c JOIN session_facts s ON s.session_id = NEW.gsid
    WHERE c.tool_call_id = NEW.go_judge AND c.git_subcommand = 'commit' AND c.outcome_status = 'success';
  UPDATE events SET retracted = 1
  WHERE seq = NEW.seq AND retracted = 0
    AND EXISTS (SELECT 1 FROM tool_call_facts c JOIN attempt_facts a ON a.group_key = c.attempt_key
                WHERE c.tool_call_id = NEW.go_judge AND a.retraction > 0);
END;
CREATE TRIGGER apply_prompt AFTER UPDATE OF go_prompt ON project_queue
BEGIN
  INSERT INTO session_facts (session_id, raw_session_id, provider, provider_session_id,
      project_id, project_name, first_event_id, first_at, started_at, retraction)
    VALUES (NEW.gsid, NEW.raw_sid, NEW.provider, NEW.psid, NEW.project_id, NEW.project_name, NEW.event_id,
            NEW.at, NEW.at, coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts
                                      WHERE target = NEW.raw_sid AND target_type = 'session'), 0))
    ON CONFLICT DO NOTHING;
  INSERT OR REPLACE INTO snap_points (session_id, snap_key) VALUES (NEW.gsid, NEW.ekey);
  DELETE FROM snap_sessions WHERE session_id = NEW.gsid;
  DELETE FROM snap_turns WHERE session_id = NEW.gsid;
  DELETE FROM snap_calls WHERE session_id = NEW.gsid;
  DELETE FROM snap_attempts WHERE session_id = NEW.gsid;
  DELETE FROM snap_signals WHERE session_id = NEW.gsid;
  DELETE FROM snap_commits WHERE session_id = NEW.gsid;
  INSERT INTO snap_sessions SELECT * FROM session_facts WHERE session_id = NEW.gsid;
  UPDATE snap_sessions SET retraction = 0, retracted_attempts = 0 WHERE session_id = NEW.gsid;
  INSERT INTO snap_turns SELECT t.* FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
    WHERE s.session_id = NEW.gsid;
  INSERT INTO snap_calls SELECT * FROM tool_call_facts WHERE session_id = NEW.gsid AND end_event_id IS NULL;
  INSERT INTO snap_attempts SELECT group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, 1, 0, 0, NULL, NULL, 0, NULL, NULL
    FROM attempt_facts
    WHERE session_id = NEW.gsid
      AND (turn_index >= (SELECT prompt_count - 1 FROM session_facts WHERE session_id = NEW.gsid)
           OR group_key IN (SELECT attempt_key FROM snap_calls WHERE session_id = NEW.gsid));
  INSERT INTO snap_attempts SELECT group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, 1, 0, 0, NULL, NULL, 0, NULL, NULL
    FROM attempt_facts
    WHERE session_id = NEW.gsid
      AND superseded_key IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.gsid)
      AND group_key NOT IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.gsid);
  INSERT INTO snap_signals SELECT * FROM signal_facts WHERE session_id = NEW.gsid AND cleared_at IS NULL;
  INSERT INTO snap_commits SELECT * FROM commit_facts WHERE session_id = NEW.gsid AND linkage = 'unresolved';
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL;
  UPDATE turn_facts SET (status, ended_at, last_event_id, last_at) = (
      SELECT CASE WHEN turn_facts.ended_at IS NULL THEN 'unknown' ELSE turn_facts.status END,
             coalesce(turn_facts.ended_at, NEW.at),
             coalesce(s.turn_last_event_id, turn_facts.last_event_id), coalesce(s.turn_last_at, turn_facts.last_at)
      FROM session_facts s WHERE s.session_id = NEW.gsid)
  WHERE turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE attempt_facts SET (turn_status, turn_ended_at, turn_class, turn_stop_id) =
      (SELECT t.status, t.ended_at, t.failure_class, t.stop_event_id FROM turn_facts t WHERE t.turn_id = attempt_facts.turn_id)
    WHERE turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = NEW.at, ended_at = NULL, end_event_id = NULL, end_reason = NULL,
    prompt_count = prompt_count + 1, turn_count = turn_count + 1, cur_turn_id = 'trn_' || NEW.uid,
    turn_last_event_id = NEW.event_id, turn_last_at = NEW.at, ev_call_id = NULL, ev_agent = NEW.agent_id,
    ev_prev_head = head, head = coalesce(NEW.head, head)
  WHERE session_id = NEW.gsid;
  INSERT INTO turn_prompts (turn_id, session_id, objective)
    SELECT 'trn_' || NEW.uid, NEW.gsid, NEW.objective WHERE NEW.objective IS NOT NULL;
  INSERT INTO turn_facts (turn_id, session_id, turn_index, started_at, status, prompt_event_id, prompt_chars,
      first_event_id, last_event_id, last_at, start_key)
    SELECT 'trn_' || NEW.uid, NEW.gsid, s.prompt_count, NEW.at, 'in_progress', NEW.event_id, NEW.prompt_chars,
           NEW.event_id, NEW.event_id, NEW.at, NEW.ekey
    FROM session_facts s WHERE s.session_id = NEW.gsid;
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id,
      turn_index, agent_id, group_no, attempt_index, placeholder, started_at, first_at, first_event_id,
      turn_status, retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT t.turn_id, 'att_' || NEW.uid, NEW.gsid, s.provider, s.project_id, s.project_name, t.turn_id, t.turn_index,
           'agt_00000000-0000-0000-0000-000000000000', 0, 0, 1, NEW.at, NEW.at, NEW.event_id, t.status,
           coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || NEW.uid AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
    FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
      LEFT JOIN correction_targets ct ON ct.target = 'att_' || NEW.uid
    WHERE t.turn_id = 'trn_' || NEW.uid AND t.first_event_id = NEW.event_id;
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1);
END;
CREATE TRIGGER apply_other AFTER UPDATE OF go_other ON project_queue
BEGIN
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (NEW.kind = 'session_ended'
         OR ((NEW.kind IN ('permission_requested', 'permission_denied', 'turn_stopped', 'turn_failed')
              OR (NEW.kind = 'notification'
                  AND (NEW.ntype IN ('elicitation_result', 'permission_prompt', 'agent_needs_input')
                       OR (NEW.ntype = 'idle_prompt'
                           AND EXISTS (SELECT 1 FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
                                       WHERE s.session_id = NEW.gsid AND t.ended_at IS NULL)))))
             AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id)));
  UPDATE turn_facts SET status = 'unknown', ended_at = NEW.at
  WHERE NEW.kind = 'session_ended' AND ended_at IS NULL
    AND turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = CASE WHEN NEW.kind = 'session_ended' THEN last_activity_at ELSE NEW.at END,
    started_at = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.at ELSE started_at END,
    start_source = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.start_source ELSE start_source END,
    start_event_id = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.event_id ELSE start_event_id END,
    saw_start = saw_start OR NEW.kind = 'session_started',
    saw_end = saw_end OR NEW.kind = 'session_ended',
    ended_at = CASE WHEN NEW.kind = 'session_ended' THEN NEW.at
                    WHEN NEW.kind IN ('session_started', 'permission_requested') THEN NULL ELSE ended_at END,
    end_event_id = CASE WHEN NEW.kind = 'session_ended' THEN NEW.event_id
                        WHEN NEW.kind IN ('session_started', 'permission_requested') THEN NULL ELSE end_event_id END,
    end_reason = CASE WHEN NEW.kind = 'session_ended' THEN NEW.end_reason
                      WHEN NEW.kind IN ('session_started', 'permission_requested') THEN NULL ELSE end_reason END,
    turn_count = turn_count + (cur_turn_id IS NULL AND NEW.kind IN ('turn_stopped', 'turn_failed', 'permission_denied')),
    cur_turn_id = CASE WHEN cur_turn_id IS NULL AND NEW.kind IN ('turn_stopped', 'turn_failed', 'permission_denied')
                       THEN 'trn_' || substr(NEW.gsid, 5) ELSE cur_turn_id END,
    turn_last_event_id = CASE WHEN NEW.kind IN ('session_started', 'session_ended') THEN turn_last_event_id ELSE NEW.event_id END,
    turn_last_at = CASE WHEN NEW.kind IN ('session_started', 'session_ended') THEN turn_last_at ELSE NEW.at END,
    failure_count = failure_count + (NEW.kind = 'turn_failed'),
    ev_call_id = NULL, ev_agent = NEW.agent_id, ev_prev_head = head, head = coalesce(NEW.head, head)
  WHERE session_id = NEW.gsid;
  UPDATE turn_facts SET
    stop_event_id = NEW.event_id, ended_at = NEW.at,
    status = CASE NEW.kind WHEN 'turn_stopped' THEN 'completed' ELSE 'failed' END,
    failure_class = CASE NEW.kind WHEN 'turn_stopped' THEN NULL ELSE NEW.turn_class END
  WHERE NEW.kind IN ('turn_stopped', 'turn_failed')
    AND turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE attempt_facts SET (turn_status, turn_ended_at, turn_class, turn_stop_id) =
      (SELECT t.status, t.ended_at, t.failure_class, t.stop_event_id FROM turn_facts t WHERE t.turn_id = attempt_facts.turn_id)
    WHERE NEW.kind IN ('turn_stopped', 'turn_failed', 'session_ended') AND turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO signal_facts (event_id, session_id, turn_id, raised_at, agent_id, kind, signal_type, blocking)
    SELECT NEW.event_id, NEW.gsid, s.cur_turn_id, NEW.at, NEW.agent_id, NEW.kind, NEW.ntype,
           CASE WHEN NEW.kind = 'notification' AND NEW.ntype = 'idle_prompt'
                 AND NOT EXISTS (SELECT 1 FROM turn_facts t WHERE t.turn_id = s.cur_turn_id AND t.ended_at IS NULL)
                THEN 0 ELSE 1 END
    FROM session_facts s
    WHERE s.session_id = NEW.gsid
      AND (NEW.kind = 'permission_requested'
           OR (NEW.kind = 'notification' AND NEW.ntype IN ('permission_prompt', 'idle_prompt', 'agent_needs_input')));
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1);
END;
CREATE TRIGGER session_names_agent AFTER UPDATE OF ev_agent ON session_facts
WHEN NEW.ev_agent IS NOT NULL AND NEW.ev_agent IS NOT OLD.ev_agent
BEGIN
  INSERT INTO session_agents (session_id, agent_id, first_key) VALUES (NEW.session_id, NEW.ev_agent, NEW.last_key)
    ON CONFLICT DO NOTHING;
END;
CREATE TRIGGER attempt_replaces_placeholder BEFORE INSERT ON attempt_facts
WHEN NEW.placeholder = 0 AND NEW.attempt_index = 0
BEGIN
  DELETE FROM attempt_facts WHERE group_key = NEW.turn_id;
END;
CREATE TRIGGER attempt_not_last AFTER INSERT ON attempt_facts
WHEN NEW.group_no > 0
BEGIN
  UPDATE attempt_facts SET last_of_agent = 0
  WHERE turn_id = NEW.turn_id AND agent_key = NEW.agent_key AND group_no < NEW.group_no AND last_of_agent = 1;
END;
CREATE TRIGGER attempt_born_retracted AFTER INSERT ON attempt_facts
WHEN NEW.retraction > 0
BEGIN
  UPDATE session_facts SET retracted_attempts = 1 WHERE session_id = NEW.session_id AND retracted_attempts = 0;
END;
CREATE TRIGGER attempt_retraction_changed AFTER UPDATE OF retraction ON attempt_facts
WHEN (NEW.retraction > 0) <> (OLD.retraction > 0)
BEGIN
  UPDATE attempt_facts SET successor_live = (NEW.retraction = 0) WHERE superseded_key = NEW.group_key;
  UPDATE session_facts SET retracted_attempts = EXISTS (
      SELECT 1 FROM attempt_facts WHERE session_id = NEW.session_id AND retraction > 0)
  WHERE session_id = NEW.session_id;
  UPDATE events SET retracted = 1
  WHERE NEW.retraction > 0 AND retracted = 0 AND event_id IN (
    SELECT start_event_id FROM tool_call_facts WHERE attempt_key = NEW.group_key
    UNION ALL
    SELECT end_event_id FROM tool_call_facts WHERE attempt_key = NEW.group_key);
END;
CREATE TRIGGER project_replay_session AFTER INSERT ON replay_requests
WHEN (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND (NEW.from_key = ''
      OR EXISTS (SELECT 1 FROM session_facts WHERE session_id = NEW.session_id AND last_key >= NEW.from_key))
BEGIN
  DELETE FROM snap_points WHERE session_id = NEW.session_id AND snap_key >= NEW.from_key;
  DELETE FROM snap_sessions WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_turns WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_calls WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_attempts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_signals WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_commits WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM tool_call_facts WHERE session_id = NEW.session_id AND turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), ''));
  DELETE FROM turn_prompts WHERE session_id = NEW.session_id AND turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), ''));
  DELETE FROM session_agents WHERE session_id = NEW.session_id
    AND first_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '');
  DELETE FROM attempt_facts WHERE session_id = NEW.session_id AND turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), ''));
  DELETE FROM signal_facts WHERE session_id = NEW.session_id
    AND (turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '')) OR NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id));
  DELETE FROM commit_facts WHERE session_id = NEW.session_id
    AND end_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '');
  DELETE FROM turn_facts WHERE session_id = NEW.session_id
    AND start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '');
  DELETE FROM session_facts WHERE session_id = NEW.session_id;
  INSERT INTO session_facts SELECT * FROM snap_sessions WHERE session_id = NEW.session_id;
  DELETE FROM turn_facts WHERE turn_id IN (SELECT turn_id FROM snap_turns WHERE session_id = NEW.session_id);
  INSERT INTO turn_facts SELECT * FROM snap_turns WHERE session_id = NEW.session_id;
  DELETE FROM attempt_facts WHERE group_key IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.session_id);
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, successor_live, retraction, session_retracted, corr_by,
  corr_outcome, corr_class_set, corr_class, corr_note_by) SELECT * FROM snap_attempts WHERE session_id = NEW.session_id;
  DELETE FROM tool_call_facts WHERE tool_call_id IN (SELECT tool_call_id FROM snap_calls WHERE session_id = NEW.session_id);
  INSERT INTO tool_call_facts SELECT * FROM snap_calls WHERE session_id = NEW.session_id;
  DELETE FROM signal_facts WHERE event_id IN (SELECT event_id FROM snap_signals WHERE session_id = NEW.session_id);
  INSERT INTO signal_facts SELECT * FROM snap_signals WHERE session_id = NEW.session_id;
  DELETE FROM commit_facts WHERE commit_id IN (SELECT commit_id FROM snap_commits WHERE session_id = NEW.session_id);
  INSERT INTO commit_facts SELECT * FROM snap_commits WHERE session_id = NEW.session_id;
  INSERT OR REPLACE INTO project_queue
    SELECT 1, p.* FROM project_input p
    WHERE p.raw_sid = NEW.raw_session_id AND p.gsid = NEW.session_id
      AND p.kind NOT IN ('correction', 'retraction', 'capture_test') AND p.telemetry = 0
      AND p.ekey >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '')
      AND p.at >= coalesce(substr((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), 1, 27), '')
      AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event')
    ORDER BY p.ekey;
  UPDATE session_facts SET retraction = coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts
                                                  WHERE target = raw_session_id AND target_type = 'session'), 0)
  WHERE session_id = NEW.session_id;
  UPDATE attempt_facts SET (retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by) = (
      SELECT coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = attempt_facts.attempt_id AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
      FROM session_facts s LEFT JOIN correction_targets ct ON ct.target = attempt_facts.attempt_id
      WHERE s.session_id = attempt_facts.session_id)
  WHERE session_id = NEW.session_id;
  UPDATE attempt_facts SET successor_live = coalesce((SELECT j.retraction = 0 FROM attempt_facts j
                                                      WHERE j.group_key = attempt_facts.superseded_key), 1)
  WHERE session_id = NEW.session_id AND superseded_key IS NOT NULL;
  UPDATE session_facts SET retracted_attempts = EXISTS (
      SELECT 1 FROM attempt_facts WHERE session_id = NEW.session_id AND retraction > 0)
  WHERE session_id = NEW.session_id;
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND event_id IN (
    SELECT c.start_event_id FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE a.session_id = NEW.session_id AND a.retraction > 0
    UNION ALL
    SELECT c.end_event_id FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE a.session_id = NEW.session_id AND a.retraction > 0);
END;
CREATE TRIGGER events_retracted_on_arrival AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction')
 AND (EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
      OR EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.session_id AND target_type = 'session'))
BEGIN
  UPDATE events SET retracted = 1 WHERE seq = NEW.seq;
END;
CREATE TRIGGER events_paused AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction', 'capture_test')
 AND (SELECT paused FROM projection_control WHERE id = 1) = 1
BEGIN
  INSERT OR IGNORE INTO projection_dirty (session_id, raw_session_id, project_id)
    VALUES (CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                 THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24) ELSE NEW.session_id END,
            NEW.session_id, NEW.project_id);
END;
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
)
;
CREATE VIEW retraction_input AS
SELECT e.event_id AS event_id,
       e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id AS ekey,
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
WHERE e.kind = 'retraction'
;
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
CREATE TRIGGER events_meta AFTER INSERT ON events WHEN NEW.kind IN ('correction', 'retraction')
BEGIN
  UPDATE OR REPLACE projection_control SET correction_seq = NEW.seq WHERE id = 1 AND NEW.kind = 'correction';
  UPDATE OR REPLACE projection_control SET retraction_seq = NEW.seq WHERE id = 1 AND NEW.kind = 'retraction';
END;
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
    SELECT CASE WHEN e.provider_session_id IN ('', 'unknown') THEN 'ses_' || substr(e.session_id, 5, 19) || substr(e.project_id, 24) ELSE e.session_id END, e.session_id, e.project_id FROM events e
    WHERE e.event_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'event') AND e.kind NOT IN ('correction', 'retraction', 'capture_test') AND NOT (e.kind = 'unknown' AND json_extract(e.attrs_json, '$.source') = 'otel')
      AND (SELECT paused FROM projection_control WHERE id = 1) = 1;
  INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
    SELECT 1, CASE WHEN e.provider_session_id IN ('', 'unknown') THEN 'ses_' || substr(e.session_id, 5, 19) || substr(e.project_id, 24) ELSE e.session_id END, e.session_id, e.project_id,
           e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id FROM events e
    WHERE e.event_id = (SELECT target FROM retraction_facts WHERE event_id = (SELECT event_id FROM events WHERE seq = NEW.retraction_seq) AND target_type = 'event') AND e.kind NOT IN ('correction', 'retraction', 'capture_test') AND NOT (e.kind = 'unknown' AND json_extract(e.attrs_json, '$.source') = 'otel');
END;
CREATE VIEW projection_version (algorithm_version) AS SELECT 'tier1-v5-sql1';
CREATE VIEW session_base AS
SELECT s.*,
  s.call_seq - CASE WHEN s.retracted_attempts THEN (
      SELECT count(*) FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE a.session_id = s.session_id AND a.retraction > 0) ELSE 0 END AS calls,
  s.failure_count - CASE WHEN s.retracted_attempts THEN (
      SELECT count(*) FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE a.session_id = s.session_id AND a.retraction > 0 AND c.outcome_status IN ('failure', 'denied')) ELSE 0 END AS failures
FROM session_facts s;
CREATE VIEW session_cover AS
SELECT b.*,
  CASE WHEN b.prompt_count = 0 AND b.calls = 0 THEN 'unknown'
       WHEN b.saw_start AND b.saw_end AND b.prompt_count > 0 AND b.calls > 0 THEN 'full'
       WHEN b.saw_start OR b.saw_end THEN 'partial'
       ELSE 'minimal' END AS coverage
FROM session_base b;
CREATE VIEW turn_text_base AS
SELECT t.turn_id AS turn_id,
  (s.retraction = 2 OR (s.retracted_attempts
                        AND EXISTS (SELECT 1 FROM attempt_facts ba WHERE ba.turn_id = t.turn_id AND ba.retraction = 2))) AS blanked,
  (SELECT cf.event_id FROM correction_facts cf
    WHERE cf.target = t.turn_id AND cf.invalid = 0 AND cf.correction_type = 'turn_objective' AND cf.note IS NOT NULL
      AND s.retraction = 0
    ORDER BY cf.ekey DESC LIMIT 1) AS correction_id,
  s.retraction > 0 AS session_retracted
FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id;
CREATE VIEW turn_text AS
SELECT x.*,
  CASE WHEN x.blanked THEN NULL
       WHEN x.correction_id IS NOT NULL THEN (SELECT note FROM correction_facts WHERE event_id = x.correction_id)
       ELSE (SELECT objective FROM turn_prompts WHERE turn_id = x.turn_id) END AS objective,
  CASE WHEN x.correction_id IS NOT NULL AND NOT x.blanked
       THEN (SELECT objective FROM turn_prompts WHERE turn_id = x.turn_id) END AS inferred_objective,
  (SELECT corrected_at FROM correction_facts WHERE event_id = x.correction_id) AS corrected_at
FROM turn_text_base x;
CREATE VIEW session_state AS
SELECT c.*,
  CASE WHEN c.ended_at IS NOT NULL THEN 'closed'
       WHEN coalesce(c.last_activity_at, c.last_at)
            < strftime('%Y-%m-%dT%H:%M:%f', 'now',
                       CASE WHEN EXISTS (SELECT 1 FROM signal_facts g WHERE g.session_id = c.session_id
                                         AND g.cleared_at IS NULL AND g.blocking = 1)
                            THEN '-12 hours' ELSE '-30 minutes' END) || '000Z'
         THEN 'stale'
       ELSE 'open' END AS state
FROM session_cover c;
CREATE VIEW sessions AS
SELECT session_id, provider, provider_session_id, project_id, project_name, state, started_at,
  ended_at, end_reason, start_source, event_count, turn_count, prompt_count,
  calls AS tool_call_count, failures AS failure_count,
  (SELECT json_group_array(agent_id) FROM (
     SELECT agent_id FROM session_agents g WHERE g.session_id = session_state.session_id ORDER BY first_key)) AS agents,
  coverage, first_event_id,
  last_event_id, last_at AS last_event_at, start_event_id, end_event_id,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, start_event_id AS x UNION ALL SELECT 2, first_event_id
                    UNION ALL SELECT 3, last_event_id UNION ALL SELECT 4, end_event_id)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  min(CASE coverage WHEN 'full' THEN 1.0 WHEN 'partial' THEN 0.8 WHEN 'minimal' THEN 0.6 ELSE 0.4 END,
      CASE WHEN state = 'stale' THEN 0.7 ELSE 1.0 END) AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  retraction > 0 AS retracted
FROM session_state;
CREATE VIEW retracted_call_events AS
SELECT a.turn_id AS turn_id, c.start_event_id AS ev
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
  WHERE a.retraction > 0 AND c.start_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.end_event_id
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
  WHERE a.retraction > 0 AND c.end_event_id IS NOT NULL;
CREATE VIEW turn_surviving_events AS
SELECT t.turn_id AS turn_id, t.prompt_event_id AS ev, t.started_at || '|0' AS k FROM turn_facts t WHERE t.prompt_event_id IS NOT NULL
UNION ALL
SELECT t.turn_id, t.stop_event_id, t.ended_at || '|3' FROM turn_facts t WHERE t.stop_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.start_event_id, c.started_at || '|1|' || printf('%012d', c.call_ord)
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
 WHERE a.retraction = 0 AND c.start_event_id IS NOT NULL
UNION ALL
SELECT a.turn_id, c.end_event_id, c.finished_at || '|2|' || printf('%012d', c.call_ord)
  FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
 WHERE a.retraction = 0 AND c.end_event_id IS NOT NULL;
CREATE VIEW turns AS
SELECT t.turn_id, t.session_id, s.provider, s.project_id, s.project_name, t.turn_index,
  t.started_at, t.ended_at, t.status, t.prompt_event_id, t.stop_event_id,
  (SELECT json_group_array(tool_call_id) FROM (
     SELECT c.tool_call_id FROM tool_call_facts c
     WHERE c.turn_id = t.turn_id AND (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0)) ORDER BY c.call_ord)) AS tool_call_ids,
  (SELECT count(*) FROM tool_call_facts c WHERE c.turn_id = t.turn_id AND (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0))) AS tool_call_count,
  (SELECT x.objective FROM turn_text x WHERE x.turn_id = t.turn_id) AS objective,
  t.prompt_chars,
  CASE WHEN s.retracted_attempts AND t.first_event_id IN (SELECT ev FROM retracted_call_events WHERE turn_id = t.turn_id)
       THEN (SELECT ev FROM turn_surviving_events WHERE turn_id = t.turn_id ORDER BY k LIMIT 1)
       ELSE t.first_event_id END AS first_event_id,
  CASE WHEN s.retracted_attempts
        AND (CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_event_id, t.last_event_id) ELSE t.last_event_id END)
            IN (SELECT ev FROM retracted_call_events WHERE turn_id = t.turn_id)
       THEN (SELECT ev FROM turn_surviving_events WHERE turn_id = t.turn_id ORDER BY k DESC LIMIT 1)
       ELSE CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_event_id, t.last_event_id) ELSE t.last_event_id END
  END AS last_event_id,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, coalesce(t.prompt_event_id, t.first_event_id) AS x
                    UNION ALL SELECT 2, t.stop_event_id)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  CASE WHEN t.prompt_event_id IS NULL THEN 0.9 ELSE 1.0 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  (SELECT x.correction_id FROM turn_text_base x WHERE x.turn_id = t.turn_id) AS corrected_by,
  (SELECT x.corrected_at FROM turn_text x WHERE x.turn_id = t.turn_id) AS corrected_at,
  (SELECT x.inferred_objective FROM turn_text x WHERE x.turn_id = t.turn_id) AS inferred_objective,
  s.retraction > 0 AS retracted
FROM turn_facts t LEFT JOIN session_facts s ON s.session_id = t.session_id;
CREATE VIEW tool_calls AS
SELECT c.tool_call_id, c.session_id, s.provider, s.project_id, s.project_name, c.turn_id,
  c.agent_id, c.tool_name, c.tool_category, c.provider_call_id, c.started_at, c.finished_at,
  c.duration_ms, c.outcome_status, c.outcome_class, c.exit_code, c.path_relative, c.paths,
  c.command_category, c.git_subcommand, c.lines_added, c.lines_removed, c.tests_failed,
  c.pairing, c.start_event_id, c.end_event_id,
  CASE WHEN c.start_event_id IS NULL THEN json_array(c.end_event_id)
       WHEN c.end_event_id IS NULL THEN json_array(c.start_event_id)
       ELSE json_array(c.start_event_id, c.end_event_id) END AS evidence,
  CASE c.pairing WHEN 'call_id' THEN 1.0 WHEN 'fifo' THEN 0.9 WHEN 'end_only' THEN 1.0 ELSE 0.7 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version,
  (s.retraction > 0 OR NOT (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0))) AS retracted
FROM tool_call_facts c LEFT JOIN session_facts s ON s.session_id = c.session_id;
CREATE VIEW attempt_rows AS
SELECT a.*,
  CASE WHEN (SELECT c.coverage FROM session_cover c WHERE c.session_id = a.session_id) IN ('minimal', 'unknown') THEN 0.4
       WHEN a.turn_status NOT IN ('completed', 'failed') THEN 0.6
       WHEN EXISTS (SELECT 1 FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.pairing <> 'call_id') THEN 0.6
       ELSE 0.9 END AS confidence,
  CASE WHEN a.retracted THEN NULL ELSE a.corr_by END AS corrected_by
FROM attempt_facts a;
CREATE VIEW attempts AS
SELECT a.attempt_id, a.session_id, a.provider, a.project_id, a.project_name, a.turn_id,
  a.turn_index, a.attempt_index, a.agent_id,
  (SELECT x.objective FROM turn_text x WHERE x.turn_id = a.turn_id) AS objective,
  CASE WHEN a.placeholder THEN 'no tool calls' ELSE (
    SELECT group_concat(seg, ' · ') FROM (
      SELECT seg FROM (
        SELECT 0 AS o, lbl || ' ' || CASE WHEN n <= 4 THEN ps ELSE (
                 SELECT group_concat(p2, ', ') FROM (SELECT p2 FROM (
                     SELECT q.value AS p2, min(c2.call_ord * 1000000 + q.key) AS k2
                     FROM tool_call_facts c2, json_each(c2.paths) q
                     WHERE c2.attempt_key = a.group_key
                       AND (CASE c2.tool_category WHEN 'file_edit' THEN 'edit' WHEN 'file_write' THEN 'write' ELSE 'notebook' END) = lbl
                       AND c2.tool_category IN ('file_edit', 'file_write', 'notebook')
                     GROUP BY q.value) ORDER BY k2 LIMIT 4)) || ' +' || (n - 4) || ' more' END AS seg
        FROM (
          SELECT lbl, count(*) AS n, group_concat(p, ', ') AS ps
          FROM (SELECT CASE c.tool_category WHEN 'file_edit' THEN 'edit' WHEN 'file_write' THEN 'write' ELSE 'notebook' END AS lbl,
                       q.value AS p, min(c.call_ord * 1000000 + q.key) AS k
                FROM tool_call_facts c, json_each(c.paths) q
                WHERE c.attempt_key = a.group_key AND c.tool_category IN ('file_edit', 'file_write', 'notebook')
                GROUP BY lbl, q.value ORDER BY lbl, k)
          GROUP BY lbl)
        UNION ALL
        SELECT 1 + CASE cat WHEN 'shell' THEN 0 WHEN 'read' THEN 1 WHEN 'search' THEN 2 WHEN 'web' THEN 3
                            WHEN 'mcp' THEN 4 WHEN 'subagent' THEN 5 WHEN 'plan' THEN 6 ELSE 7 END,
               cat || CASE WHEN n > 1 THEN ' ×' || n ELSE '' END
        FROM (SELECT CASE c.tool_category WHEN 'shell' THEN 'shell' WHEN 'file_read' THEN 'read'
                                          WHEN 'search' THEN 'search' WHEN 'web' THEN 'web' WHEN 'mcp' THEN 'mcp'
                                          WHEN 'subagent' THEN 'subagent' WHEN 'plan' THEN 'plan' ELSE 'other' END AS cat,
                     count(*) AS n
              FROM tool_call_facts c
              WHERE c.attempt_key = a.group_key
                AND (c.tool_category IS NULL OR c.tool_category NOT IN ('file_edit', 'file_write', 'notebook')
                     OR c.paths = '[]')
              GROUP BY cat)
      ) ORDER BY o)) END AS approach,
  a.started_at,
  a.ended_at,
  a.outcome,
  a.failure_class,
  a.verification,
  coalesce((SELECT json_group_array(tool_call_id) FROM (
     SELECT c.tool_call_id FROM tool_call_facts c WHERE c.attempt_key = a.group_key ORDER BY c.call_ord)), '[]') AS tool_call_ids,
  (SELECT count(*) FROM tool_call_facts c WHERE c.attempt_key = a.group_key) AS tool_call_count,
  (SELECT json_group_array(p) FROM (
     SELECT q.value AS p, min(c.call_ord * 1000000 + q.key) AS k
     FROM tool_call_facts c, json_each(c.paths) q WHERE c.attempt_key = a.group_key
     GROUP BY q.value ORDER BY k)) AS paths,
  (SELECT json_group_array(sha) FROM (
     SELECT m.sha FROM commit_facts m JOIN tool_call_facts c ON c.tool_call_id = m.tool_call_id
     WHERE m.session_id = a.session_id AND c.attempt_key = a.group_key AND m.sha IS NOT NULL
     ORDER BY m.end_key)) AS commit_shas,
  (SELECT attempt_id FROM attempt_facts WHERE group_key = a.superseded_by_key) AS superseded_by,
  (SELECT CASE WHEN f.retraction > 0 THEN NULL ELSE f.attempt_id END FROM attempt_facts f
    WHERE f.superseded_key = a.group_key AND f.failed ORDER BY f.turn_index, f.attempt_index LIMIT 1) AS supersedes,
  (SELECT json_group_array(ev) FROM (
     SELECT ev FROM (
       SELECT coalesce(t.prompt_event_id, CASE WHEN a.placeholder THEN a.first_event_id END) AS ev,
              t.started_at AS at, 0 AS o, 0 AS n
         FROM turn_facts t WHERE t.turn_id = a.turn_id
       UNION ALL
       SELECT c.start_event_id, c.started_at, 1, c.call_ord
         FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.start_event_id IS NOT NULL
       UNION ALL
       SELECT c.end_event_id, c.finished_at, 2, c.call_ord
         FROM tool_call_facts c WHERE c.attempt_key = a.group_key AND c.end_event_id IS NOT NULL
       UNION ALL
       SELECT CASE WHEN a.last_of_agent THEN a.turn_stop_id END, a.turn_ended_at, 3, 0)
     WHERE ev IS NOT NULL ORDER BY at, o, n)) AS evidence,
  a.confidence,
  'tier1-v5-sql1' AS algorithm_version,
  NULL AS work_unit_id,
  a.corrected_by,
  (SELECT corrected_at FROM correction_facts WHERE event_id = a.corrected_by) AS corrected_at,
  (SELECT correction_type FROM correction_facts WHERE event_id = a.corrected_by) AS correction_type,
  CASE WHEN a.corrected_by IS NOT NULL THEN a.inferred_outcome END AS inferred_outcome,
  CASE WHEN a.corrected_by IS NOT NULL THEN a.inferred_failure_class END AS inferred_failure_class,
  CASE WHEN a.retracted OR (SELECT x.blanked FROM turn_text_base x WHERE x.turn_id = a.turn_id) THEN NULL
       ELSE (SELECT note FROM correction_facts WHERE event_id = a.corr_note_by) END AS note,
  a.retracted
FROM attempt_rows a;
CREATE VIEW signals AS
SELECT g.session_id, g.event_id, g.raised_at, g.agent_id, g.kind, g.signal_type, g.cleared_at,
  g.cleared_by, (g.cleared_at IS NULL) AS pending, g.blocking,
  CASE WHEN g.cleared_by IS NULL THEN json_array(g.event_id) ELSE json_array(g.event_id, g.cleared_by) END AS evidence,
  CASE WHEN g.cleared_at IS NOT NULL OR NOT g.blocking THEN 0.9
       WHEN s.coverage = 'full' THEN 0.85 ELSE 0.65 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM signal_facts g JOIN session_cover s ON s.session_id = g.session_id
WHERE s.retraction = 0
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = g.event_id AND e.retracted = 1);
CREATE VIEW commits AS
SELECT m.commit_id, m.session_id, s.provider, s.project_id, s.project_name, c.turn_id,
  (SELECT attempt_id FROM attempt_facts WHERE group_key = c.attempt_key) AS attempt_id,
  m.tool_call_id, m.sha, m.previous_sha, m.branch, m.committed_at,
  m.linkage,
  (SELECT json_group_array(x) FROM (
     SELECT x FROM (SELECT 1 AS o, c.start_event_id AS x UNION ALL SELECT 2, c.end_event_id
                    UNION ALL SELECT 3, CASE WHEN m.linkage = 'next_head' THEN m.head_event_id END)
     WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
  CASE m.linkage WHEN 'end_event' THEN 0.9 WHEN 'next_head' THEN 0.7 ELSE 0.4 END AS confidence,
  'tier1-v5-sql1' AS algorithm_version
FROM commit_facts m
JOIN tool_call_facts c ON c.tool_call_id = m.tool_call_id
JOIN session_facts s ON s.session_id = m.session_id
WHERE s.retraction = 0 AND (NOT s.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = c.attempt_key AND r.retraction > 0));
CREATE VIEW corrections AS
SELECT cf.event_id, cf.corrected_at, cf.session_id, cf.project_id, cf.correction_type,
  cf.target_type, cf.target, cf.outcome, cf.failure_class,
  CASE WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = cf.target AND r.reason = 'privacy')
            OR EXISTS (SELECT 1 FROM attempt_facts b JOIN session_facts s ON s.session_id = b.session_id
                       WHERE b.attempt_id = cf.target AND s.retraction = 2)
            OR EXISTS (SELECT 1 FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
                       WHERE t.turn_id = cf.target AND s.retraction = 2)
       THEN NULL ELSE cf.note END AS note,
  cf.note_chars,
  CASE WHEN cf.invalid THEN 'invalid'
       WHEN cf.target_type = 'attempt' THEN
         CASE WHEN EXISTS (SELECT 1 FROM attempt_facts x WHERE x.attempt_id = cf.target) THEN
                CASE WHEN EXISTS (SELECT 1 FROM attempt_facts x WHERE x.attempt_id = cf.target AND x.retracted) THEN 'target_retracted'
                     WHEN cf.correction_type = 'attempt_note' AND cf.note IS NULL THEN 'content_unavailable'
                     ELSE 'applied' END
              WHEN EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = cf.target AND r.target_type = 'attempt') THEN 'target_retracted'
              ELSE 'target_not_found' END
       WHEN cf.target_type = 'turn' THEN
         CASE WHEN EXISTS (SELECT 1 FROM turn_facts t WHERE t.turn_id = cf.target) THEN
                CASE WHEN EXISTS (SELECT 1 FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
                                  WHERE t.turn_id = cf.target AND s.retraction > 0) THEN 'target_retracted'
                     WHEN cf.note IS NULL THEN 'content_unavailable'
                     ELSE 'applied' END
              ELSE 'target_not_found' END
       ELSE 'invalid' END AS status,
  0 AS legacy_position,
  json_array(cf.event_id) AS evidence,
  1.0 AS confidence
FROM correction_facts cf;
CREATE VIEW retractions AS
SELECT rf.event_id, rf.retracted_at, rf.project_id, rf.target_type, rf.target, rf.reason,
  CASE WHEN rf.reason = 'privacy' THEN NULL ELSE rf.note END AS note,
  rf.note_chars,
  CASE rf.target_type
    WHEN 'session' THEN EXISTS (SELECT 1 FROM events e WHERE e.session_id = rf.target
                                AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'event' THEN EXISTS (SELECT 1 FROM events e WHERE e.event_id = rf.target
                              AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'attempt' THEN EXISTS (SELECT 1 FROM attempt_facts b WHERE b.attempt_id = rf.target)
    ELSE 0 END AS matched,
  CASE rf.target_type
    WHEN 'session' THEN (SELECT count(*) FROM events e WHERE e.session_id = rf.target
                         AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'event' THEN (SELECT count(*) FROM events e WHERE e.event_id = rf.target
                       AND e.kind NOT IN ('correction', 'retraction'))
    WHEN 'attempt' THEN (SELECT count(c.start_event_id) + count(c.end_event_id)
                         FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
                         WHERE a.attempt_id = rf.target)
    ELSE 0 END AS retracted_events,
  0 AS legacy_position,
  json_array(rf.event_id) AS evidence,
  1.0 AS confidence
FROM retraction_facts rf;
CREATE VIEW handoff_spans AS
SELECT t.turn_id AS turn_id, t.session_id AS session_id, s.provider AS provider, s.project_id AS project_id,
  t.started_at AS span_start,
  max(t.started_at, CASE WHEN s.cur_turn_id = t.turn_id THEN coalesce(s.turn_last_at, t.last_at) ELSE t.last_at END) AS span_end,
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN min(s.started_at, t.started_at) ELSE t.started_at END AS begins,
  CASE WHEN t.turn_index = (SELECT min(f.turn_index) FROM turn_facts f WHERE f.session_id = t.session_id)
       THEN s.first_event_id ELSE t.first_event_id END AS begin_event_id
FROM turn_facts t
JOIN session_facts s ON s.session_id = t.session_id
WHERE (s.prompt_count > 0 OR s.call_seq > 0) AND s.retraction = 0;
CREATE VIEW handoff_candidates AS
SELECT c.*,
  (c.giver_end_key IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM events p
                   WHERE p.session_id = c.giver_raw AND p.observed_at >= substr(c.giver_end_key, 1, 27)
                     AND p.observed_at <= c.handoff_at AND p.observed_at || printf('|%020d|%020d|', p.hlc, p.source_seq) || p.event_id > c.giver_end_key
                     AND (p.kind IN ('session_started', 'tool_call_started', 'permission_requested')
                          OR (p.kind = 'prompt_submitted'
                              AND EXISTS (SELECT 1 FROM turn_facts h WHERE h.prompt_event_id = p.event_id)))
                     AND (CASE WHEN p.provider_session_id IN ('', 'unknown') THEN 'ses_' || substr(p.session_id, 5, 19) || substr(p.project_id, 24) ELSE p.session_id END) = c.from_session
                     AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event'))
  ) AS giver_ended,
  substr(c.giver_end_key, 1, 27) AS giver_ended_at,
  substr(c.giver_end_key, 71) AS giver_end_event
FROM (
  SELECT r.turn_id AS to_turn, r.session_id AS to_session, r.provider AS to_provider,
    r.project_id AS project_id, r.begins AS handoff_at, r.begin_event_id AS to_event,
    gt.turn_id AS from_turn, gt.session_id AS from_session, gs.provider AS from_provider,
    substr(r.prior, 1, 27) AS giver_end,
    CASE WHEN gs.cur_turn_id = gt.turn_id THEN coalesce(gs.turn_last_event_id, gt.last_event_id)
         ELSE gt.last_event_id END AS giver_last_event,
    gs.raw_session_id AS giver_raw,
    CASE WHEN gs.saw_end THEN (
      SELECT p.observed_at || printf('|%020d|%020d|', p.hlc, p.source_seq) || p.event_id FROM events p
      WHERE p.session_id = gs.raw_session_id AND p.kind = 'session_ended' AND p.observed_at <= r.begins
        AND (CASE WHEN p.provider_session_id IN ('', 'unknown') THEN 'ses_' || substr(p.session_id, 5, 19) || substr(p.project_id, 24) ELSE p.session_id END) = gs.session_id
        AND NOT EXISTS (SELECT 1 FROM retraction_facts x WHERE x.target = p.event_id AND x.target_type = 'event')
      ORDER BY p.observed_at DESC, p.hlc DESC, p.source_seq DESC, p.event_id DESC LIMIT 1) END AS giver_end_key
  FROM (SELECT sp.*,
               max(sp.span_end || ' ' || sp.turn_id) OVER (
                 PARTITION BY sp.project_id ORDER BY sp.begins, sp.session_id, sp.span_start, sp.turn_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior
        FROM handoff_spans sp) r
  JOIN turn_facts gt ON gt.turn_id = substr(r.prior, 29)
  JOIN session_facts gs ON gs.session_id = gt.session_id
  WHERE r.prior IS NOT NULL AND substr(r.prior, 1, 27) <= r.begins
    AND gt.session_id <> r.session_id AND gs.provider <> r.provider
) c;
CREATE VIEW handoff_judged AS
SELECT c.*,
  CASE WHEN c.giver_ended AND c.giver_ended_at > c.giver_end THEN c.giver_ended_at ELSE c.giver_end END AS giver_last,
  (SELECT json_group_array(p) FROM (
     SELECT DISTINCT q.value AS p
     FROM session_facts gs JOIN tool_call_facts gc ON gc.session_id = gs.session_id, json_each(gc.paths) q
     WHERE gs.session_id = c.from_session AND (NOT gs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = gc.attempt_key AND r.retraction > 0))
       AND gc.tool_category IN ('file_write', 'file_edit', 'notebook') AND gc.first_at <= c.handoff_at
       AND q.value IN (
         SELECT q2.value FROM session_facts rs JOIN tool_call_facts rc ON rc.session_id = rs.session_id, json_each(rc.paths) q2
         WHERE rs.session_id = c.to_session AND (NOT rs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = rc.attempt_key AND r.retraction > 0))
           AND max(rc.first_at, coalesce(rc.finished_at, rc.first_at)) >= c.handoff_at)
     ORDER BY p)) AS shared
FROM handoff_candidates c;
CREATE VIEW handoffs AS
WITH scored AS MATERIALIZED (
  -- each candidate judged once: the shared-path subquery is expensive and read several times
  SELECT j.*,
    ((CAST(strftime('%s', j.handoff_at) AS INTEGER) * 1000000 + CAST(substr(j.handoff_at, 21, 6) AS INTEGER))
     - (CAST(strftime('%s', j.giver_last) AS INTEGER) * 1000000 + CAST(substr(j.giver_last, 21, 6) AS INTEGER))) / 1000 AS gap,
    json_array_length(j.shared) AS n_shared,
    json_extract(j.shared, '$[0]') AS first_shared
  FROM handoff_judged j
),
hv AS MATERIALIZED (
  SELECT h.from_session, h.to_session, h.from_provider, h.to_provider, h.project_id, h.from_turn,
    h.to_turn, h.handoff_at, h.gap AS gap_ms, h.shared AS shared_paths,
    (SELECT json_group_array(x) FROM (
       SELECT x FROM (
         SELECT 1 AS o, CASE WHEN h.giver_ended THEN h.giver_end_event ELSE h.giver_last_event END AS x
         UNION ALL SELECT 2, h.to_event
         UNION ALL SELECT 3, (SELECT ev FROM (
             SELECT gc.start_event_id AS ev, gc.started_at AS at FROM session_facts gs JOIN tool_call_facts gc ON gc.session_id = gs.session_id, json_each(gc.paths) q
              WHERE gs.session_id = h.from_session AND (NOT gs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = gc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND gc.start_event_id IS NOT NULL AND gc.started_at <= h.handoff_at
             UNION ALL
             SELECT gc.end_event_id, gc.finished_at FROM session_facts gs JOIN tool_call_facts gc ON gc.session_id = gs.session_id, json_each(gc.paths) q
              WHERE gs.session_id = h.from_session AND (NOT gs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = gc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND gc.end_event_id IS NOT NULL AND gc.finished_at <= h.handoff_at)
           ORDER BY at DESC, ev DESC LIMIT 1)
         UNION ALL SELECT 4, (SELECT ev FROM (
             SELECT rc.start_event_id AS ev, rc.started_at AS at FROM session_facts rs JOIN tool_call_facts rc ON rc.session_id = rs.session_id, json_each(rc.paths) q
              WHERE rs.session_id = h.to_session AND (NOT rs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = rc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND rc.start_event_id IS NOT NULL AND rc.started_at >= h.handoff_at
             UNION ALL
             SELECT rc.end_event_id, rc.finished_at FROM session_facts rs JOIN tool_call_facts rc ON rc.session_id = rs.session_id, json_each(rc.paths) q
              WHERE rs.session_id = h.to_session AND (NOT rs.retracted_attempts OR NOT EXISTS (SELECT 1 FROM attempt_facts r WHERE r.group_key = rc.attempt_key AND r.retraction > 0)) AND q.value = h.first_shared
                AND rc.end_event_id IS NOT NULL AND rc.finished_at >= h.handoff_at)
           ORDER BY at, ev LIMIT 1))
       WHERE x IS NOT NULL GROUP BY x ORDER BY min(o))) AS evidence,
    CASE WHEN h.n_shared > 0 AND h.gap <= 1800000 THEN
           CASE WHEN h.giver_ended AND h.n_shared >= 3 THEN 0.9
                WHEN h.giver_ended THEN 0.8
                WHEN h.n_shared >= 3 THEN 0.7
                ELSE 0.6 END
         WHEN h.gap <= 300000 THEN 0.5 END AS confidence,
    'tier1-v5-sql1' AS algorithm_version
  FROM scored h
  WHERE h.gap >= 0
)
SELECT from_session, to_session, from_provider, to_provider, project_id, from_turn, to_turn,
  handoff_at, gap_ms, shared_paths, evidence, confidence, algorithm_version
FROM hv
WHERE confidence IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM json_each(hv.evidence) q JOIN events e ON e.event_id = q.value WHERE e.retracted = 1)
ORDER BY handoff_at, to_session, from_session, to_turn
;
CREATE VIEW edge_session_turn AS
SELECT 'parent_of' AS edge_kind, 'session' AS from_type, t.session_id AS from_id, 'turn' AS to_type,
       t.turn_id AS to_id, json_array(coalesce(t.prompt_event_id, t.first_event_id)) AS evidence,
       1.0 AS confidence, 'projection' AS edge_source
  FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id WHERE s.retraction = 0;
CREATE VIEW edge_prompt_turn AS
SELECT 'triggered' AS edge_kind, 'event' AS from_type, t.prompt_event_id AS from_id, 'turn' AS to_type,
       t.turn_id AS to_id, json_array(t.prompt_event_id) AS evidence, 1.0 AS confidence, 'projection' AS edge_source
  FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
  WHERE s.retraction = 0 AND t.prompt_event_id IS NOT NULL;
CREATE VIEW edge_turn_call AS
SELECT 'parent_of' AS edge_kind, 'turn' AS from_type, c.turn_id AS from_id, 'tool_call' AS to_type,
       c.tool_call_id AS to_id, c.evidence AS evidence, c.confidence AS confidence, 'projection' AS edge_source
  FROM tool_calls c WHERE NOT c.retracted;
CREATE VIEW edge_evidence AS
SELECT 'evidence_for' AS edge_kind, 'event' AS from_type, q.value AS from_id, 'attempt' AS to_type,
       a.attempt_id AS to_id, json_array(q.value) AS evidence, 1.0 AS confidence, 'projection' AS edge_source
  FROM attempts a, json_each(a.evidence) q WHERE NOT a.retracted;
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
CREATE VIEW edge_retry_cause AS
SELECT 'caused' AS edge_kind, 'event' AS from_type, f.retry_from AS from_id,
       'event' AS to_type, j.first_event_id AS to_id,
       json_array(f.retry_from, j.first_event_id) AS evidence,
       min(f.confidence, 0.6) AS confidence, 'projection' AS edge_source
  FROM attempt_rows f JOIN attempt_facts j ON j.group_key = f.superseded_key
  WHERE f.superseded_by_key IS NOT NULL AND NOT f.retracted;
CREATE VIEW edge_handoff AS
SELECT 'handed_off' AS edge_kind, 'session' AS from_type, h.from_session AS from_id, 'session' AS to_type,
       h.to_session AS to_id, h.evidence AS evidence, h.confidence AS confidence, 'projection' AS edge_source
  FROM handoffs h;
CREATE VIEW edge_prompt_attempt AS
SELECT 'triggered' AS edge_kind, 'event' AS from_type, t.prompt_event_id AS from_id, 'attempt' AS to_type,
       a.attempt_id AS to_id, json_array(t.prompt_event_id) AS evidence, a.confidence AS confidence, 'derived' AS edge_source
  FROM attempt_rows a JOIN turn_facts t ON t.turn_id = a.turn_id
  WHERE NOT a.retracted AND t.prompt_event_id IS NOT NULL;
CREATE VIEW edge_failure_cause AS
SELECT 'caused' AS edge_kind, 'event' AS from_type, a.cause_ev AS from_id, 'attempt' AS to_type,
       a.attempt_id AS to_id, json_array(a.cause_ev) AS evidence, a.confidence AS confidence, 'derived' AS edge_source
  FROM attempt_rows a
  WHERE NOT a.retracted AND a.outcome IN ('failed', 'superseded') AND a.cause_ev IS NOT NULL;
CREATE VIEW edge_blocked AS
SELECT 'blocked' AS edge_kind, 'event' AS from_type, g.event_id AS from_id, 'session' AS to_type,
       g.session_id AS to_id, json_array(g.event_id) AS evidence, g.confidence AS confidence, 'derived' AS edge_source
  FROM signals g WHERE g.pending AND g.blocking;
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
COMMIT;
PRAGMA user_version = 6;
