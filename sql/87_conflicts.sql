-- ---- conflicts (conflict-v0, reference inference §2.12, spec/projections.md §16) -------------
-- Two work units of one project with no session in common that both edited a path, their edit
-- windows on it overlapping or at most 2 h apart. overlapping = both units are open now (two
-- agents editing the same files right now). Ids: 'cfl_' + the first unit's uuid '+' the second's
-- (a pair; no SHA-1 in SQL). Each unit's window per path is stored (unit_path_windows, kept by
-- attemptdb/projections/units.py); pairs are grouped by plain unit columns, so a filter on
-- first_work_unit / second_work_unit reaches the windows' index (Needs You asks only about
-- open units).

-- Every path two units both edited within 2 h of each other; first = the unit that started first.
CREATE VIEW conflict_paths AS
SELECT x.work_unit_id AS first_unit, y.work_unit_id AS second_unit, x.project_id, x.path,
  substr(x.first_key, 1, 27) <= substr(y.last_key, 1, 27) AND substr(y.first_key, 1, 27) <= substr(x.last_key, 1, 27)
    AS windows_overlap,
  substr(x.first_key, 1, 27) AS x_first, substr(x.last_key, 1, 27) AS x_last, x.lines_added AS x_added,
  x.lines_removed AS x_removed, substr(x.first_key, 29) AS x_ev1, substr(x.last_key, 29) AS x_ev2,
  substr(y.first_key, 1, 27) AS y_first, substr(y.last_key, 1, 27) AS y_last, y.lines_added AS y_added,
  y.lines_removed AS y_removed, substr(y.first_key, 29) AS y_ev1, substr(y.last_key, 29) AS y_ev2
FROM unit_path_windows x
JOIN unit_index ux ON ux.work_unit_id = x.work_unit_id
JOIN unit_path_windows y ON y.project_id = x.project_id AND y.path = x.path AND y.work_unit_id <> x.work_unit_id
JOIN unit_index uy ON uy.work_unit_id = y.work_unit_id
WHERE (ux.started_at, ux.work_unit_id) < (uy.started_at, uy.work_unit_id)
  AND (substr(x.first_key, 1, 27) <= substr(y.last_key, 1, 27) AND substr(y.first_key, 1, 27) <= substr(x.last_key, 1, 27)
       OR abs(@us(substr(x.first_key, 1, 27)) - @us(substr(y.last_key, 1, 27))) <= 7200000000
       OR abs(@us(substr(y.first_key, 1, 27)) - @us(substr(x.last_key, 1, 27))) <= 7200000000);

-- One row per pair: the row of its first path (by name), the rest read by the pair's key. No
-- GROUP BY: an aggregate view is computed whole before a filter applies, a plain one takes the
-- filter into its joins (Needs You asks about a handful of open units).
CREATE VIEW conflict_sides AS
SELECT p.first_unit, p.second_unit, p.project_id,
  (SELECT count(*) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit) AS path_count,
  (SELECT max(q.windows_overlap) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS any_overlap,
  (SELECT min(min(q.x_first, q.y_first)) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS started_at,
  (SELECT max(max(q.x_last, q.y_last)) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS updated_at,
  (SELECT sum(q.x_added) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS first_lines_added,
  (SELECT sum(q.x_removed) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS first_lines_removed,
  (SELECT sum(q.y_added) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS second_lines_added,
  (SELECT sum(q.y_removed) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS second_lines_removed,
  (SELECT max(q.x_last) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS first_last_edit,
  (SELECT max(q.y_last) FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit)
    AS second_last_edit
FROM conflict_paths p
WHERE NOT EXISTS (SELECT 1 FROM conflict_paths q WHERE q.first_unit = p.first_unit AND q.second_unit = p.second_unit
                  AND q.path < p.path);

CREATE VIEW conflicts AS
SELECT 'cfl_' || substr(s.first_unit, 4) || '+' || substr(s.second_unit, 4) AS conflict_id, s.project_id,
  s.first_unit AS first_work_unit, s.second_unit AS second_work_unit,
  (SELECT i.started_at FROM unit_index i WHERE i.work_unit_id = s.first_unit) AS first_started_at,
  (SELECT i.started_at FROM unit_index i WHERE i.work_unit_id = s.second_unit) AS second_started_at,
  s.started_at, s.updated_at,
  (SELECT json_group_array(path) FROM (SELECT p.path FROM conflict_paths p
                                       WHERE p.first_unit = s.first_unit AND p.second_unit = s.second_unit
                                       ORDER BY p.path)) AS paths,
  s.path_count,
  (SELECT substr(f.status_x, 1, 9) FROM unit_verdicts f WHERE f.work_unit_id = s.first_unit) = 'open     '
    AND (SELECT substr(g.status_x, 1, 9) FROM unit_verdicts g WHERE g.work_unit_id = s.second_unit) = 'open     '
    AS overlapping,
  EXISTS (SELECT 1 FROM (SELECT DISTINCT m.session_id FROM unit_turns m WHERE m.work_unit_id = s.first_unit) ms
          CROSS JOIN commit_facts k ON k.session_id = ms.session_id
          WHERE k.committed_at >= s.first_last_edit) AS first_committed,
  EXISTS (SELECT 1 FROM (SELECT DISTINCT m.session_id FROM unit_turns m WHERE m.work_unit_id = s.second_unit) ms
          CROSS JOIN commit_facts k ON k.session_id = ms.session_id
          WHERE k.committed_at >= s.second_last_edit) AS second_committed,
  s.first_lines_added, s.first_lines_removed, s.second_lines_added, s.second_lines_removed,
  (SELECT json_group_array(ev) FROM (
     SELECT ev FROM (SELECT p.path, 0 AS o, p.x_ev1 AS ev FROM conflict_paths p WHERE p.first_unit = s.first_unit AND p.second_unit = s.second_unit
                     UNION ALL SELECT p.path, 1, p.x_ev2 FROM conflict_paths p WHERE p.first_unit = s.first_unit AND p.second_unit = s.second_unit
                     UNION ALL SELECT p.path, 2, p.y_ev1 FROM conflict_paths p WHERE p.first_unit = s.first_unit AND p.second_unit = s.second_unit
                     UNION ALL SELECT p.path, 3, p.y_ev2 FROM conflict_paths p WHERE p.first_unit = s.first_unit AND p.second_unit = s.second_unit)
     WHERE ev IS NOT NULL GROUP BY ev ORDER BY min(path), min(o))) AS evidence,
  CASE WHEN s.any_overlap
        AND NOT EXISTS (SELECT 1 FROM (SELECT DISTINCT m.session_id FROM unit_turns m WHERE m.work_unit_id = s.first_unit) ms
                        CROSS JOIN commit_facts k ON k.session_id = ms.session_id WHERE k.committed_at >= s.first_last_edit)
        AND NOT EXISTS (SELECT 1 FROM (SELECT DISTINCT m.session_id FROM unit_turns m WHERE m.work_unit_id = s.second_unit) ms
                        CROSS JOIN commit_facts k ON k.session_id = ms.session_id WHERE k.committed_at >= s.second_last_edit)
       THEN 0.7 ELSE 0.5 END AS confidence,
  'conflict-v0' AS algorithm_version
FROM conflict_sides s
WHERE NOT EXISTS (SELECT 1 FROM (SELECT DISTINCT a.session_id FROM unit_turns a WHERE a.work_unit_id = s.first_unit) a
                  CROSS JOIN unit_turns b ON b.session_id = a.session_id
                  WHERE b.work_unit_id = s.second_unit);

-- The units that may be open now: active within the last 12 h (an open unit is never idle longer,
-- §16), then judged.
CREATE VIEW units_open_now AS
SELECT r.work_unit_id FROM (
  SELECT DISTINCT m.work_unit_id FROM unit_turns m
  WHERE m.active_until >= strftime('%Y-%m-%dT%H:%M:%f', @now(), '-12 hours') || '000Z') r
JOIN unit_verdicts v ON v.work_unit_id = r.work_unit_id
WHERE substr(v.status_x, 1, 9) = 'open     ';
