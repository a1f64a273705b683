-- ---- conflicts (conflict-v0, reference inference §2.12, spec/projections.md §16) -------------
-- Two work units of one project with no session in common that both edited a path, their edit
-- windows on it overlapping or at most 2 h apart. overlapping = both units are open now (two
-- agents editing the same files right now). Ids: 'cfl_' + the first unit's uuid '+' the second's
-- (a pair; no SHA-1 in SQL).

-- Per unit and path: the edit window (first..last edit: a call's finish, else its start), the
-- lines changed there, and the events of its first and last edit.
CREATE VIEW unit_path_edits AS
SELECT m.work_unit_id, e.project_id, e.path, min(e.first_edit) AS first_edit, max(e.last_edit) AS last_edit,
  sum(e.lines_added) AS lines_added, sum(e.lines_removed) AS lines_removed,
  min(e.first_edit || '|' || e.first_event) AS first_key, max(e.last_edit || '|' || e.last_event) AS last_key
FROM unit_edits e JOIN unit_turns m ON m.turn_id = e.turn_id
GROUP BY m.work_unit_id, e.path;

CREATE VIEW conflict_paths AS
SELECT CASE WHEN (ux.started_at, ux.work_unit_id) < (uy.started_at, uy.work_unit_id) THEN x.work_unit_id ELSE y.work_unit_id END AS first_unit,
  CASE WHEN (ux.started_at, ux.work_unit_id) < (uy.started_at, uy.work_unit_id) THEN y.work_unit_id ELSE x.work_unit_id END AS second_unit,
  x.project_id, x.path,
  x.first_edit <= y.last_edit AND y.first_edit <= x.last_edit AS windows_overlap,
  x.work_unit_id AS ux_id, x.first_edit AS x_first, x.last_edit AS x_last, x.lines_added AS x_added,
  x.lines_removed AS x_removed, substr(x.first_key, 29) AS x_ev1, substr(x.last_key, 29) AS x_ev2,
  y.first_edit AS y_first, y.last_edit AS y_last, y.lines_added AS y_added, y.lines_removed AS y_removed,
  substr(y.first_key, 29) AS y_ev1, substr(y.last_key, 29) AS y_ev2
FROM unit_path_edits x
JOIN unit_path_edits y ON y.project_id = x.project_id AND y.path = x.path AND y.work_unit_id > x.work_unit_id
JOIN unit_index ux ON ux.work_unit_id = x.work_unit_id
JOIN unit_index uy ON uy.work_unit_id = y.work_unit_id
WHERE (x.first_edit <= y.last_edit AND y.first_edit <= x.last_edit
       OR abs(@us(x.first_edit) - @us(y.last_edit)) <= 7200000000
       OR abs(@us(y.first_edit) - @us(x.last_edit)) <= 7200000000)
  AND NOT EXISTS (SELECT 1 FROM unit_turns a JOIN unit_turns b ON b.session_id = a.session_id
                  WHERE a.work_unit_id = x.work_unit_id AND b.work_unit_id = y.work_unit_id);

-- One row per pair; each side as its own (first / second) columns.
CREATE VIEW conflict_sides AS
SELECT first_unit, second_unit, project_id,
  json_group_array(path) AS paths, count(*) AS path_count, max(windows_overlap) AS any_overlap,
  min(min(x_first, y_first)) AS started_at, max(max(x_last, y_last)) AS updated_at,
  sum(CASE WHEN ux_id = first_unit THEN x_added ELSE y_added END) AS first_lines_added,
  sum(CASE WHEN ux_id = first_unit THEN x_removed ELSE y_removed END) AS first_lines_removed,
  sum(CASE WHEN ux_id = first_unit THEN y_added ELSE x_added END) AS second_lines_added,
  sum(CASE WHEN ux_id = first_unit THEN y_removed ELSE x_removed END) AS second_lines_removed,
  max(CASE WHEN ux_id = first_unit THEN x_last ELSE y_last END) AS first_last_edit,
  max(CASE WHEN ux_id = first_unit THEN y_last ELSE x_last END) AS second_last_edit,
  json_group_array(json_array(CASE WHEN ux_id = first_unit THEN x_ev1 ELSE y_ev1 END,
                              CASE WHEN ux_id = first_unit THEN x_ev2 ELSE y_ev2 END,
                              CASE WHEN ux_id = first_unit THEN y_ev1 ELSE x_ev1 END,
                              CASE WHEN ux_id = first_unit THEN y_ev2 ELSE x_ev2 END)) AS events
FROM (SELECT * FROM conflict_paths ORDER BY path)
GROUP BY first_unit, second_unit;

CREATE VIEW conflicts AS
SELECT c.conflict_id, c.project_id, c.first_work_unit, c.second_work_unit, c.first_started_at,
  c.second_started_at, c.started_at, c.updated_at, c.paths, c.path_count, c.overlapping,
  c.first_committed, c.second_committed, c.first_lines_added, c.first_lines_removed,
  c.second_lines_added, c.second_lines_removed, c.evidence,
  CASE WHEN c.any_overlap AND NOT c.first_committed AND NOT c.second_committed THEN 0.7 ELSE 0.5 END AS confidence,
  'conflict-v0' AS algorithm_version
FROM (
  SELECT 'cfl_' || substr(s.first_unit, 4) || '+' || substr(s.second_unit, 4) AS conflict_id, s.project_id,
    s.first_unit AS first_work_unit, s.second_unit AS second_work_unit,
    (SELECT i.started_at FROM unit_index i WHERE i.work_unit_id = s.first_unit) AS first_started_at,
    (SELECT i.started_at FROM unit_index i WHERE i.work_unit_id = s.second_unit) AS second_started_at,
    s.started_at, s.updated_at,
    s.paths, s.path_count, s.any_overlap,
    (f.status_x LIKE 'open' || char(31) || '%' AND g.status_x LIKE 'open' || char(31) || '%') AS overlapping,
    EXISTS (SELECT 1 FROM unit_turns m JOIN commit_facts k ON k.session_id = m.session_id
            WHERE m.work_unit_id = s.first_unit AND k.committed_at >= s.first_last_edit) AS first_committed,
    EXISTS (SELECT 1 FROM unit_turns m JOIN commit_facts k ON k.session_id = m.session_id
            WHERE m.work_unit_id = s.second_unit AND k.committed_at >= s.second_last_edit) AS second_committed,
    s.first_lines_added, s.first_lines_removed, s.second_lines_added, s.second_lines_removed,
    (SELECT json_group_array(ev) FROM (SELECT DISTINCT q2.value AS ev FROM json_each(s.events) q, json_each(q.value) q2
                                       WHERE q2.value IS NOT NULL)) AS evidence
  FROM conflict_sides s
  JOIN unit_verdicts f ON f.work_unit_id = s.first_unit
  JOIN unit_verdicts g ON g.work_unit_id = s.second_unit
) c
ORDER BY c.first_started_at, c.conflict_id;
