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

-- Signed checkpoints of the chain head (spec/checkpoint.md).
CREATE TABLE checkpoints (
  size       INTEGER PRIMARY KEY,
  head_hash  TEXT NOT NULL,
  created_at TEXT NOT NULL,
  key_id     TEXT NOT NULL,
  note       TEXT NOT NULL
);
