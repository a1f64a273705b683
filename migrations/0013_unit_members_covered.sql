-- 0013: a unit's members read from one index alone. STATE … AT t reads every member of the units
-- it lists as it stood at t (started by then, with its activity, calls, stop, attempts and wait),
-- and each place the work-unit views read a member searches them by unit: with every column in
-- the unit's member index, none of these reads goes back to the table (a search of the table by
-- turn id per member cost ~3 µs, ~10 ms for the 3,300 members of a bench STATE). The table is a
-- few hundred bytes per turn, so the copy is small beside the events.
DROP INDEX unit_turns_unit;
-- (attempt_ids, the one long column, comes last, after the turn id: SQLite reads a long entry's
-- overflow pages, never cached, only for a column stored past the end of its page)
CREATE INDEX unit_turns_unit ON unit_turns (work_unit_id, order_key, session_id, provider, failed_attempts,
                                            first_event_id, stop_event_id, started_at, active_until, ended_at,
                                            open_calls, loose_calls, waiting_since, turn_index, project_id, begins,
                                            span_end, giver_turn_id, giver_session_id, turn_id, attempt_ids);

-- The members of a unit active after t and started by t (those STATE … AT t judges again) read
-- from this index alone.
DROP INDEX unit_turns_unit_active;
CREATE INDEX unit_turns_unit_active ON unit_turns (work_unit_id, active_until, started_at);
