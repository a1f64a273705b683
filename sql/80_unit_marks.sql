-- Work units (spec/projections.md §16): every change to what unit building reads marks its turn in
-- unit_dirty; attemptdb/projections/units.py refreshes the marked turns at the end of the append,
-- in the same transaction. These triggers only note a turn id (a replay marks every turn it
-- touches): the unit work is done once per append, for the turns it touched. An UPDATE OF a
-- session's column fires whether or not the value changed, so those marks say WHEN it did.
CREATE TRIGGER unit_mark_turn_new AFTER INSERT ON turn_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
END;

CREATE TRIGGER unit_mark_turn_gone AFTER DELETE ON turn_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (OLD.turn_id);
END;

CREATE TRIGGER unit_mark_turn_changed AFTER UPDATE OF started_at, ended_at, first_event_id, stop_event_id, status
    ON turn_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
END;

CREATE TRIGGER unit_mark_call_new AFTER INSERT ON tool_call_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
END;

CREATE TRIGGER unit_mark_call_gone AFTER DELETE ON tool_call_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (OLD.turn_id);
END;

CREATE TRIGGER unit_mark_call_changed AFTER UPDATE OF turn_id, started_at, finished_at, first_at, paths,
    tool_category, lines_added, lines_removed, pairing, end_event_id ON tool_call_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
  INSERT OR IGNORE INTO unit_dirty (turn_id) SELECT OLD.turn_id WHERE OLD.turn_id IS NOT NEW.turn_id;
END;

-- A turn's attempts (their ids, whether they failed) are read by the units' counts and lists.
CREATE TRIGGER unit_mark_attempt_new AFTER INSERT ON attempt_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
END;

CREATE TRIGGER unit_mark_attempt_gone AFTER DELETE ON attempt_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (OLD.turn_id);
END;

CREATE TRIGGER unit_mark_attempt_changed AFTER UPDATE OF retraction, attempt_id, started_at, attempt_index,
    failing_call_id, last_of_agent, turn_status, superseded_key, successor_live, corr_outcome, session_retracted
    ON attempt_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
END;

CREATE TRIGGER unit_mark_session_retraction AFTER UPDATE OF retraction ON session_facts
WHEN NEW.retraction IS NOT OLD.retraction
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) SELECT turn_id FROM turn_facts WHERE session_id = NEW.session_id;
END;

-- A span's end moves with every event of the current turn, a first turn's begin with its session's
-- start (handoffs read both).
CREATE TRIGGER unit_mark_span AFTER UPDATE OF turn_last_at ON session_facts
WHEN NEW.cur_turn_id IS NOT NULL AND NEW.turn_last_at IS NOT OLD.turn_last_at
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.cur_turn_id);
END;

CREATE TRIGGER unit_mark_session_start AFTER UPDATE OF started_at ON session_facts
WHEN NEW.started_at IS NOT OLD.started_at
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id)
    SELECT turn_id FROM turn_facts WHERE session_id = NEW.session_id ORDER BY turn_index LIMIT 1;
END;

-- A session's end is a handoff giver's last moment: its last turn is marked when it changes, and
-- so is every turn holding a call in flight (the end cuts how long that call keeps the turn's
-- span open: @in_flight_until). Every unit holding one of its turns may have that session's end
-- as its last (unit_state).
CREATE TRIGGER unit_mark_session_end AFTER UPDATE OF ended_at ON session_facts
WHEN NEW.ended_at IS NOT OLD.ended_at
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id)
    SELECT turn_id FROM turn_facts WHERE session_id = NEW.session_id ORDER BY turn_index DESC LIMIT 1;
  INSERT OR IGNORE INTO unit_dirty (turn_id)
    SELECT turn_id FROM tool_call_facts WHERE session_id = NEW.session_id AND end_event_id IS NULL;
  INSERT OR IGNORE INTO unit_state_dirty (work_unit_id)
    SELECT work_unit_id FROM unit_turns WHERE session_id = NEW.session_id;
END;

-- A session's first prompt or call makes its units' coverage known (unit_state.coverage_unknown).
CREATE TRIGGER unit_mark_session_captured AFTER UPDATE OF prompt_count, call_seq ON session_facts
WHEN (OLD.prompt_count > 0 OR OLD.call_seq > 0) IS NOT (NEW.prompt_count > 0 OR NEW.call_seq > 0)
BEGIN
  INSERT OR IGNORE INTO unit_state_dirty (work_unit_id)
    SELECT work_unit_id FROM unit_turns WHERE session_id = NEW.session_id;
END;

-- Who waits on a human (a pending blocking signal of the turn) feeds the views too.
CREATE TRIGGER unit_mark_signal_new AFTER INSERT ON signal_facts
WHEN NEW.turn_id IS NOT NULL
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (NEW.turn_id);
END;

CREATE TRIGGER unit_mark_signal_changed AFTER UPDATE OF cleared_at, blocking, turn_id ON signal_facts
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) SELECT NEW.turn_id WHERE NEW.turn_id IS NOT NULL;
  INSERT OR IGNORE INTO unit_dirty (turn_id) SELECT OLD.turn_id WHERE OLD.turn_id IS NOT NULL AND OLD.turn_id IS NOT NEW.turn_id;
END;

CREATE TRIGGER unit_mark_signal_gone AFTER DELETE ON signal_facts
WHEN OLD.turn_id IS NOT NULL
BEGIN
  INSERT OR IGNORE INTO unit_dirty (turn_id) VALUES (OLD.turn_id);
END;
