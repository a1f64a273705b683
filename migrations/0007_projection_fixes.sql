-- 0007: two fixes to the projection triggers (spec/projections.md §1).
--
-- 1. A prompt costs O(its turn), not O(session): apply_prompt's checkpoint reads found their rows
-- by session alone and so scanned every call and attempt the session ever had (10 ms a prompt at
-- 3,600 turns, measured; importing a long transcript was quadratic). These indexes lead with the
-- session and the condition (the reads: sql/20_apply.sql, apply_prompt).
--
-- 2. An `unknown` event without attrs.source was never applied incrementally (the telemetry test
-- compared with = and was NULL for it), while a rebuild applied it: sql/40_events.sql tests IS.
-- The sessions an old file left short re-derive once, after the triggers are installed.

CREATE INDEX tool_call_facts_open_session ON tool_call_facts (session_id) WHERE end_event_id IS NULL;
CREATE INDEX attempt_facts_turn_order ON attempt_facts (session_id, turn_index);
CREATE INDEX attempt_facts_superseded ON attempt_facts (session_id, superseded_key) WHERE superseded_key IS NOT NULL;

-- @after-install
-- Sessions the old test left short re-derive once (from_key '' = the whole session): those
-- holding an `unknown` event without a source. Few files have any (an unrecognised hook name,
-- a payload that could not be read).

INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
  SELECT DISTINCT 1, @gsid(e), e.session_id, e.project_id, ''
  FROM events e
  WHERE e.kind = 'unknown' AND json_extract(e.attrs_json, '$.source') IS NULL;
