-- 0016: work units' Rule 3 (handoff) is the handoffs view's rule (0015, spec/projections.md §16):
-- a turn of a provider `attempt` session (`attempt run`, `attempt note`, the Recorder: what people
-- and CI record themselves) neither gives nor takes the handoff link, and its span is not among
-- those a giver is sought in, so the agents' link across it is drawn as if it were not there
-- (attemptdb/projections/units.py). Before, `attempt run -- pytest` between two agents' turns
-- could join unrelated work into one unit, or hide the agent that really handed the work on.
-- No table changes. Rules 1 and 2 are unchanged, and a project without a provider `attempt` turn
-- has the same units under both rules, so only the projects with one are drawn again.

-- @after-install
-- The unit state of every project holding a provider `attempt` turn is built again from nothing
-- (its turns marked; the store's refresh after the upgrade draws them, as for a new file: 0009).
-- Units never span projects (every link joins turns of one project), so the other projects'
-- state, counters included, stays as it is.
INSERT OR IGNORE INTO unit_dirty (turn_id)
  SELECT t.turn_id FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
  WHERE s.project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
DELETE FROM unit_state WHERE work_unit_id IN (
  SELECT work_unit_id FROM unit_index WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt'));
DELETE FROM unit_path_windows WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
DELETE FROM unit_index WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
DELETE FROM unit_links WHERE turn_id IN (
  SELECT turn_id FROM unit_turns WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt'));
DELETE FROM unit_paths WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
DELETE FROM unit_projects WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
DELETE FROM unit_edits WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
DELETE FROM unit_turns WHERE project_id IN (SELECT project_id FROM unit_turns WHERE provider = 'attempt');
