-- 0008: tool_call_facts holds its primary key columns first.
--
-- Debian's sqlite3 3.40 (the stock shell the README promises reads every file) reports a
-- WITHOUT ROWID table whose composite primary key is not made of its leading columns as
-- corrupt in `PRAGMA integrity_check` / `quick_check` ("NULL value in tool_call_facts.…" for
-- every row: a bug of that release's NOT NULL check, which reads the wrong column). The table and
-- its checkpoint copy snap_calls (same column order: rows move between them with SELECT *) are
-- rebuilt with attempt_key and call_ord first; nothing else changes. The views and triggers that
-- read them are re-installed after this migration (attemptdb/schema.py), so no reference is
-- rewritten here (legacy_alter_table is on while migrations run).
-- Also: the views and triggers moved to sql/ and share their predicates (sql/00_predicates.sql);
-- their text changed without changing what they do.

CREATE TABLE tool_call_facts_0008 (
  attempt_key      TEXT NOT NULL,
  call_ord         INTEGER NOT NULL,
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
  PRIMARY KEY (attempt_key, call_ord)
) WITHOUT ROWID;
INSERT INTO tool_call_facts_0008 SELECT attempt_key, call_ord, tool_call_id, session_id, turn_id,
  agent_id, agent_key, tool_name, tool_category, provider_call_id, started_at, finished_at, first_at,
  duration_ms, outcome_status, outcome_class, exit_code, path_relative, paths, command_category,
  git_subcommand, lines_added, lines_removed, tests_failed, pairing, start_event_id, end_event_id
  FROM tool_call_facts;
DROP TABLE tool_call_facts;
ALTER TABLE tool_call_facts_0008 RENAME TO tool_call_facts;
CREATE UNIQUE INDEX tool_call_facts_id ON tool_call_facts (tool_call_id);
CREATE INDEX tool_call_facts_open ON tool_call_facts (session_id, provider_call_id, agent_key, tool_name, call_ord)
  WHERE end_event_id IS NULL;
CREATE INDEX tool_call_facts_turn ON tool_call_facts (turn_id, call_ord);
CREATE INDEX tool_call_facts_session ON tool_call_facts (session_id, first_at);
CREATE INDEX tool_call_facts_open_session ON tool_call_facts (session_id) WHERE end_event_id IS NULL;

CREATE TABLE snap_calls_0008 AS SELECT * FROM tool_call_facts WHERE 0;
INSERT INTO snap_calls_0008 SELECT attempt_key, call_ord, tool_call_id, session_id, turn_id,
  agent_id, agent_key, tool_name, tool_category, provider_call_id, started_at, finished_at, first_at,
  duration_ms, outcome_status, outcome_class, exit_code, path_relative, paths, command_category,
  git_subcommand, lines_added, lines_removed, tests_failed, pairing, start_event_id, end_event_id
  FROM snap_calls;
DROP TABLE snap_calls;
ALTER TABLE snap_calls_0008 RENAME TO snap_calls;
CREATE INDEX snap_calls_session ON snap_calls (session_id);
