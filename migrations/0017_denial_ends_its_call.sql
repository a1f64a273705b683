-- 0017: a `permission_denied` event naming the provider call id of an open call of its session
-- ends that call `denied` (sql/20_apply.sql: project_dispatch sends it to apply_end; spec/
-- projections.md §6). Before, Claude Code's PreToolUse → PermissionRequest → PermissionDenied
-- (no PostToolUse ever comes) left the call in flight forever: the attempt holding a denied edit
-- read `succeeded`, the session's failure_count missed it, and the edit that never happened
-- counted as an edit of its path, so another agent really editing that file was a conflict.
-- Also (attemptdb/projections/units.py): a call that ended `denied` edits nothing for work units
-- (`unit_edits`, and so rule 1 links, edit windows and conflicts). No table changes.

-- @after-install
-- Sessions holding a denial that names one of their calls re-derive once (from_key '' = the
-- whole session; each insert replays its session: project_replay_session), and the turns of
-- every other call that ended denied are marked, so the store's refresh after the upgrade draws
-- their units again without the denied edits.
INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key)
  SELECT DISTINCT 1, @gsid(e), e.session_id, e.project_id, ''
  FROM events e
  WHERE e.kind = 'permission_denied' AND e.tool_call_id IS NOT NULL
    AND EXISTS (SELECT 1 FROM tool_call_facts c WHERE c.session_id = @gsid(e) AND c.provider_call_id = e.tool_call_id);
INSERT OR IGNORE INTO unit_dirty (turn_id)
  SELECT turn_id FROM tool_call_facts
  WHERE outcome_status = 'denied' AND tool_category IN ('file_write', 'file_edit', 'notebook');
