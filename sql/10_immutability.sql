-- The facts are immutable (DESIGN.md invariant 1): corrections and retractions are new events.
-- The one column outside the hashed line, `retracted`, only goes from 0 to 1 (the Retraction
-- events decide it; verify checks every mark is covered). Signed checkpoints are immutable too.

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
