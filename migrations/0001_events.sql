-- 0001: the fact log. One row per canonical Event v1 envelope, hash-chained in `seq` order.
-- Column names and meanings: spec/catalog.md (the `events` table). Storage columns:
--   seq         chain order (the rowid); never reused
--   path_objects_json  the full PortablePath objects of the envelope (paths_json holds strings)
--   event_hash  SHA-256 (hex) of the canonical line of the envelope (spec/canonical-event.md)
--   chain_hash  SHA-256 (hex) of (previous row's chain_hash || this event_hash), genesis = 32 zero bytes
-- `retracted` is the only column that ever changes, and only from 0 to 1, when a Retraction
-- event covers the row (maintained by the projection triggers).

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE device_clock (
  device_id       TEXT PRIMARY KEY,
  last_source_seq INTEGER NOT NULL
) WITHOUT ROWID;

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

-- Signed checkpoints of the chain head (spec/checkpoint.md).
CREATE TABLE checkpoints (
  size       INTEGER PRIMARY KEY,
  head_hash  TEXT NOT NULL,
  created_at TEXT NOT NULL,
  key_id     TEXT NOT NULL,
  note       TEXT NOT NULL
);

CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
BEGIN
  SELECT RAISE(ABORT, 'checkpoints are immutable');
END;
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN
  SELECT RAISE(ABORT, 'checkpoints are immutable');
END;
