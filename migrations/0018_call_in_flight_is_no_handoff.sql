-- 0018: a call still in flight is work in progress (sql/00_predicates.sql @in_flight_until,
-- spec/projections.md §12, §16). A turn span holding a call started and not ended (no end, no
-- denial) lasts, for the handoff rules, until that call's start + 30 min (STALE_AFTER), cut at
-- the turn's close or the session's end after the start. Before, an agent's span ended at its
-- last event, the call's start: another agent beginning in the project while a long build ran
-- (or a stuck agent hung) was taken for a handoff, which joined the two agents' work into one
-- unit, so their edits of one file were no conflict and a stuck agent's failures were hidden.
-- The handoffs view (sql/60_handoffs.sql) and the units' Rule 3 read the longer span; Rule 1
-- counts a turn with a call in flight as concurrent through it (attemptdb/projections/units.py).
-- A session's end now also marks its turns with a call in flight (sql/80_unit_marks.sql).
-- No table changes.

-- @after-install
-- The unit state of every project holding a turn with a call in flight is built again from
-- nothing (its turns marked; the store's refresh after the upgrade draws them, as 0016 does).
-- Only those turns' spans and concurrency changed, and units never span projects, so the other
-- projects' state stays as it is.
INSERT OR IGNORE INTO unit_dirty (turn_id)
  SELECT t.turn_id FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
  WHERE s.project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
DELETE FROM unit_state WHERE work_unit_id IN (
  SELECT work_unit_id FROM unit_index WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0));
DELETE FROM unit_path_windows WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
DELETE FROM unit_index WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
DELETE FROM unit_links WHERE turn_id IN (
  SELECT turn_id FROM unit_turns WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0));
DELETE FROM unit_paths WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
DELETE FROM unit_projects WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
DELETE FROM unit_edits WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
DELETE FROM unit_turns WHERE project_id IN (SELECT project_id FROM unit_turns WHERE open_calls > 0);
