-- How facts reach the projections (spec/projections.md §1-§2): the queue and replay triggers.
-- The triggers on `events` that feed them are in 40_events.sql.
--
-- One state machine, written once: the triggers on `project_queue` apply ONE fact event (one
-- queue row: the event's fields as `project_input` derives them) to the stored state of its
-- projection session, in the append's transaction. Feeding them:
--   * an event newer than everything its session has seen (the usual case) is applied on its
--     own: O(its turn), never O(session);
--   * an event that sorts before the session's latest (late imports, racing hooks, merges) or a
--     Retraction of an event makes `replay_requests` restore the session's state and re-apply its
--     events in sort order: from the checkpoint taken before the current turn's prompt when the
--     late event falls inside the current turn, else from the start of the session;
--   * `attempt reproject` replays every session from nothing.
-- Because every path runs the same triggers over the same ordered events, the stored state is
-- a function of the event set alone, whatever order the events arrived in.
--
-- How the work is dispatched (this runs on every tool call of every agent):
--   * SQLite allocates and clears a frame for a trigger's whole program the first time the
--     trigger fires in a statement, before its WHEN is tested (later rows of the same statement
--     reuse it: the store appends a batch as one statement): a large trigger costs even when it
--     does nothing. So the only trigger on the queue's INSERT is a small dispatcher: it sets
--     one gate column of the queue row (`go_start`, `go_end`, …) with an UPDATE whose condition
--     is a constant of NEW, and only the matching `AFTER UPDATE OF go_…` trigger runs. Rare
--     follow-ups (a new attempt, an end-only call, judging a closed call) are gated the same way.
--   * Triggers hold no variables: per-event values are computed once into the queue row (by
--     `project_input`, on the append path and on replays alike), and the working context of the
--     event being applied is kept on its session_facts row (cur_turn_id, ev_call_id,
--     ev_attempt_key, ev_prev_head).
--   * Inside the apply triggers, no INSERT ... SELECT into a table with row triggers or that the
--     SELECT reads, and no UPDATE ... FROM: SQLite materialises those into an ephemeral table.
--     (The one queue insert per event does; measured, it costs nothing visible.)
--   * The queue is written with INSERT OR REPLACE, and SQLite applies an outer statement's
--     conflict policy to the trigger statements it fires: bodies say `ON CONFLICT DO NOTHING` (an
--     upsert clause, which is not overridden), never `INSERT OR IGNORE`.
-- Comments stay outside the CREATE statements: SQLite keeps a statement's text, comments
-- included, and parses it whenever a connection opens the file.

-- The fields of an events row that the projections read, with aliases resolved and the
-- content-free attrs typed (a wrongly typed attr is ignored, never compared as text); then
-- whether it is in order for its session, and the dispatch gates (0).
-- A prompt's text may be megabytes, and SQLite keeps each value a trigger statement reads until
-- the append's INSERT ends (migration 0014): the text never rides in the queue row (`objective`
-- stays NULL there; apply_prompt reads it off the events row), and `human_prompt` extracts it
-- once (the LIMIT 1 subqueries are not flattened, so `a` and `h` are computed once) and trims
-- only its first 64 characters, the whole text only when fewer than 22 are left of those (its
-- tests read at most 22 characters after the leading blanks).
CREATE VIEW project_input AS
SELECT
  e.seq AS seq,
  e.event_id AS event_id,
  substr(e.event_id, 4) AS uid,
  e.session_id AS raw_sid,
  @gsid(e) AS gsid,
  @ekey(e) AS ekey,
  e.observed_at AS at,
  e.kind AS kind,
  e.provider AS provider,
  e.provider_session_id AS psid,
  e.project_id AS project_id,
  e.project_name AS project_name,
  e.head AS head,
  e.branch AS branch,
  e.agent_id AS agent_id,
  coalesce(e.agent_id, '') AS akey,
  e.tool_name AS tool_name,
  e.tool_category AS tool_category,
  e.tool_call_id AS call_id,
  coalesce(e.paths_json, '[]') AS paths,
  e.path_relative AS path_relative,
  e.outcome_status AS outcome_status,
  e.outcome_class AS outcome_class,
  e.exit_code AS exit_code,
  e.duration_ms AS duration_ms,
  CASE WHEN e.kind = 'prompt_submitted' AND NOT (
         SELECT substr(h, 1, 19) = '<task-notification>' OR substr(h, 1, 17) = '<system-reminder>'
             OR substr(h, 1, 22) IN ('<local-command-stdout>', '<local-command-caveat>')
             OR substr(h, 1, 13) IN ('<bash-stdout>', '<bash-stderr>') OR substr(h, 1, 20) = '[SYSTEM NOTIFICATION'
         FROM (SELECT CASE WHEN length(a) >= 22 THEN a
                           ELSE substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 22) END AS h
               FROM (SELECT ltrim(substr(coalesce(json_extract(e.content_json, '$.prompt'), ''), 1, 64), ' ' || char(9, 10, 13)) AS a
                     LIMIT 1) LIMIT 1))
       THEN 1 ELSE 0 END AS human_prompt,
  NULL AS objective,
  CASE WHEN e.kind = 'prompt_submitted' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.prompt_chars') = 'integer' THEN json_extract(e.attrs_json, '$.prompt_chars') END,
         CASE WHEN json_type(e.attrs_json, '$.prompt_length') = 'integer' THEN json_extract(e.attrs_json, '$.prompt_length') END,
         CASE WHEN json_type(e.attrs_json, '$.prompt_len') = 'integer' THEN json_extract(e.attrs_json, '$.prompt_len') END,
         CASE WHEN json_type(e.content_json, '$.prompt') = 'text' THEN length(json_extract(e.content_json, '$.prompt')) END)
       END AS prompt_chars,
  CASE WHEN e.kind = 'session_started' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.source') = 'text' THEN json_extract(e.attrs_json, '$.source') END,
         CASE WHEN json_type(e.attrs_json, '$.start_source') = 'text' THEN json_extract(e.attrs_json, '$.start_source') END)
       END AS start_source,
  CASE WHEN e.kind = 'session_ended' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.reason') = 'text' THEN json_extract(e.attrs_json, '$.reason') END,
         CASE WHEN json_type(e.attrs_json, '$.end_reason') = 'text' THEN json_extract(e.attrs_json, '$.end_reason') END)
       END AS end_reason,
  CASE WHEN e.kind = 'notification' THEN coalesce(
         CASE WHEN json_type(e.attrs_json, '$.notification_type') = 'text' THEN json_extract(e.attrs_json, '$.notification_type') END,
         CASE WHEN json_type(e.attrs_json, '$.type') = 'text' THEN json_extract(e.attrs_json, '$.type') END,
         CASE WHEN json_type(e.attrs_json, '$.matcher') = 'text' THEN json_extract(e.attrs_json, '$.matcher') END)
       END AS ntype,
  CASE WHEN e.kind = 'turn_failed' THEN coalesce(e.outcome_class,
         CASE WHEN json_type(e.attrs_json, '$.class') = 'text' THEN json_extract(e.attrs_json, '$.class') END,
         CASE WHEN json_type(e.attrs_json, '$.failure_class') = 'text' THEN json_extract(e.attrs_json, '$.failure_class') END,
         CASE WHEN json_type(e.attrs_json, '$.reason') = 'text' THEN json_extract(e.attrs_json, '$.reason') END)
       END AS turn_class,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.command_category') = 'text'
       THEN json_extract(e.attrs_json, '$.command_category') END AS command_category,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.git_subcommand') = 'text'
       THEN json_extract(e.attrs_json, '$.git_subcommand') END AS git_subcommand,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.lines_added') = 'integer'
       THEN json_extract(e.attrs_json, '$.lines_added') END AS lines_added,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.lines_removed') = 'integer'
       THEN json_extract(e.attrs_json, '$.lines_removed') END AS lines_removed,
  CASE WHEN e.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
        AND json_type(e.attrs_json, '$.tests_failed') = 'integer'
       THEN json_extract(e.attrs_json, '$.tests_failed') END AS tests_failed,
  CASE WHEN @telemetry(e) THEN 1 ELSE 0 END AS telemetry,
  NOT EXISTS (SELECT 1 FROM session_facts s WHERE s.session_id = @gsid(e)
              AND s.last_key >= @ekey(e)) AS in_order,
  0 AS go_prepare,
  0 AS go_start,
  0 AS go_end,
  0 AS go_prompt,
  0 AS go_other,
  0 AS go_attempt,
  0 AS go_end_only,
  0 AS go_start_more,
  0 AS go_judge
FROM events e;

-- The dispatcher: for an event in order, the session row and turn 0 when needed, then exactly one
-- of the kinds. (A late event is events_late's: a replay started from here would find this
-- trigger on the trigger stack, and SQLite does not fire a trigger recursively.)
-- A `permission_denied` naming the provider call id of an open call of its session is that
-- call's end (apply_end closes it `denied`: the denied call is never in flight forever, counts
-- as a failed call and is judged like any other end, migration 0017); any other denial is
-- apply_other's.
CREATE TRIGGER project_dispatch AFTER INSERT ON project_queue
BEGIN
  UPDATE project_queue SET go_prepare = 1
  WHERE qid = 1 AND NEW.in_order
    AND coalesce((SELECT cur_turn_id IS NULL AND NEW.human_prompt = 0 AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed', 'turn_stopped', 'turn_failed', 'permission_denied')
                  FROM session_facts WHERE session_id = NEW.gsid), 1);
  UPDATE project_queue SET go_start = 1 WHERE qid = 1 AND NEW.in_order AND NEW.kind = 'tool_call_started';
  UPDATE project_queue SET go_end = 1
  WHERE qid = 1 AND NEW.in_order
    AND (NEW.kind IN ('tool_call_finished', 'tool_call_failed')
         OR (NEW.kind = 'permission_denied' AND NEW.call_id IS NOT NULL
             AND EXISTS (SELECT 1 FROM tool_call_facts c WHERE c.session_id = NEW.gsid
                         AND c.provider_call_id = NEW.call_id AND c.end_event_id IS NULL)));
  UPDATE project_queue SET go_prompt = 1 WHERE qid = 1 AND NEW.in_order AND NEW.human_prompt = 1;
  UPDATE project_queue SET go_other = 1
  WHERE qid = 1 AND NEW.in_order AND NEW.human_prompt = 0 AND NEW.kind NOT IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
    AND go_end = 0;
END;

-- The session row on its first event; turn 0 when activity (a tool call, a stop, a failure, a
-- denial) comes before any prompt, with its placeholder attempt unless a tool call opened it.
CREATE TRIGGER apply_prepare AFTER UPDATE OF go_prepare ON project_queue
BEGIN
  INSERT INTO session_facts (session_id, raw_session_id, provider, provider_session_id,
      project_id, project_name, first_event_id, first_at, started_at, retraction)
    VALUES (NEW.gsid, NEW.raw_sid, NEW.provider, NEW.psid, NEW.project_id, NEW.project_name, NEW.event_id,
            NEW.at, NEW.at, coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts
                                      WHERE target = NEW.raw_sid AND target_type = 'session'), 0))
    ON CONFLICT DO NOTHING;
  INSERT INTO turn_facts (turn_id, session_id, turn_index, started_at, status, first_event_id, last_event_id,
      last_at, start_key)
    SELECT 'trn_' || substr(NEW.gsid, 5), NEW.gsid, 0, NEW.at, 'in_progress', NEW.event_id, NEW.event_id, NEW.at, NEW.ekey
    FROM session_facts s
    WHERE s.session_id = NEW.gsid AND s.cur_turn_id IS NULL AND NEW.human_prompt = 0 AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed', 'turn_stopped', 'turn_failed', 'permission_denied');
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id,
      turn_index, agent_id, group_no, attempt_index, placeholder, started_at, first_at, first_event_id,
      turn_status, retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT t.turn_id, 'att_' || NEW.uid, NEW.gsid, s.provider, s.project_id, s.project_name, t.turn_id, t.turn_index,
           'agt_00000000-0000-0000-0000-000000000000', 0, 0, 1, NEW.at, NEW.at, NEW.event_id, t.status,
           coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || NEW.uid AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
    FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
      LEFT JOIN correction_targets ct ON ct.target = 'att_' || NEW.uid
    WHERE t.turn_id = 'trn_' || substr(NEW.gsid, 5) AND t.first_event_id = NEW.event_id AND NEW.kind NOT IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed');
END;

-- A tool call starts: its agent's waits end; the session row (the call opens, a resumed session
-- is no longer ended, ev_attempt_key names the agent's current attempt unless that one failed
-- strictly before this call: NULL, and apply_attempt opens the next); the call row; an edit with
-- paths (or a session with a retracted attempt) goes on to apply_start_more.
CREATE TRIGGER apply_start AFTER UPDATE OF go_start ON project_queue
BEGIN
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = NEW.at, ended_at = NULL, end_event_id = NULL, end_reason = NULL,
    turn_count = turn_count + (cur_turn_id IS NULL),
    cur_turn_id = coalesce(cur_turn_id, 'trn_' || substr(NEW.gsid, 5)),
    turn_last_event_id = NEW.event_id, turn_last_at = NEW.at,
    call_seq = call_seq + 1, ev_call_id = 'tc_' || NEW.uid, ev_agent = NEW.agent_id,
    ev_attempt_key = (SELECT CASE WHEN a.boundary IS NULL OR NEW.at <= a.boundary THEN a.group_key END
                      FROM attempt_facts a
                      WHERE a.turn_id = coalesce(session_facts.cur_turn_id, 'trn_' || substr(NEW.gsid, 5))
                        AND a.agent_key = NEW.akey
                      ORDER BY a.group_no DESC LIMIT 1),
    ev_prev_head = head, head = coalesce(NEW.head, head)
  WHERE session_id = NEW.gsid;
  UPDATE project_queue SET go_attempt = 1
  WHERE qid = 1 AND (SELECT ev_attempt_key IS NULL FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO tool_call_facts (tool_call_id, session_id, turn_id, agent_id, agent_key, tool_name,
      tool_category, provider_call_id, started_at, first_at, path_relative, paths, command_category,
      git_subcommand, lines_added, lines_removed, tests_failed, pairing, start_event_id, call_ord, attempt_key)
    SELECT s.ev_call_id, NEW.gsid, s.cur_turn_id, NEW.agent_id, NEW.akey, NEW.tool_name, NEW.tool_category,
           NEW.call_id, NEW.at, NEW.at, NEW.path_relative, NEW.paths, NEW.command_category, NEW.git_subcommand,
           NEW.lines_added, NEW.lines_removed, NEW.tests_failed, 'in_flight', NEW.event_id, s.call_seq,
           coalesce(s.ev_attempt_key, s.ev_call_id)
    FROM session_facts s WHERE s.session_id = NEW.gsid;
  UPDATE project_queue SET go_start_more = 1
  WHERE qid = 1 AND ((NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> '[]')
                     OR (SELECT retracted_attempts FROM session_facts WHERE session_id = NEW.gsid));
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1);
END;

-- After a start: an edit with paths retries earlier failed attempts of its agent, in its turn
-- or the previous one, that edited one of those paths (supersession, §8); a call joining a
-- retracted attempt leaves the log's projections.
CREATE TRIGGER apply_start_more AFTER UPDATE OF go_start_more ON project_queue
BEGIN
  UPDATE attempt_facts SET superseded_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = 'tc_' || NEW.uid),
      successor_live = (SELECT retraction = 0 FROM attempt_facts WHERE group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = 'tc_' || NEW.uid))
  WHERE group_key IN (
    SELECT f.group_key FROM attempt_facts j JOIN attempt_facts f
      ON f.session_id = j.session_id AND f.agent_key = j.agent_key
     AND f.turn_index BETWEEN j.turn_index - 1 AND j.turn_index
     AND (f.turn_index < j.turn_index OR f.attempt_index < j.attempt_index)
    WHERE j.group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = 'tc_' || NEW.uid) AND f.failed
      AND (f.superseded_key IS NULL
           OR EXISTS (SELECT 1 FROM attempt_facts o WHERE o.group_key = f.superseded_key
                      AND (o.turn_index, o.attempt_index) > (j.turn_index, j.attempt_index)))
      AND NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> '[]' AND EXISTS (SELECT 1 FROM tool_call_facts x, json_each(x.paths) p
                 WHERE x.attempt_key = f.group_key AND x.tool_category IN ('file_write', 'file_edit', 'notebook')
                   AND p.value IN (SELECT value FROM json_each(NEW.paths))));
  UPDATE events SET retracted = 1
  WHERE seq = NEW.seq AND retracted = 0
    AND EXISTS (SELECT 1 FROM tool_call_facts c JOIN attempt_facts a ON a.group_key = c.attempt_key
                WHERE c.tool_call_id = 'tc_' || NEW.uid AND a.retraction > 0);
END;

-- A tool call ends (or a denial names an open call's id: it ends that call `denied`, see
-- project_dispatch): its agent's waits end; it closes (1) the earliest open call of the session
-- with the same provider call id; else (2) the earliest open call of the same (agent, tool
-- name), where an end carrying a call id may only take a start without one; else (3) it is a
-- complete call of its own (end_only: apply_end_only opens it first). Closing the call fires
-- call_closed, which sends a check, a failure, new edit paths, a commit or a call of a failed or
-- retracted attempt on to apply_judge.
CREATE TRIGGER apply_end AFTER UPDATE OF go_end ON project_queue
BEGIN
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = NEW.at,
    turn_count = turn_count + (cur_turn_id IS NULL),
    cur_turn_id = coalesce(cur_turn_id, 'trn_' || substr(NEW.gsid, 5)),
    turn_last_event_id = NEW.event_id, turn_last_at = NEW.at,
    failure_count = failure_count + (NEW.kind = 'permission_denied' OR coalesce(NEW.outcome_status,
        CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END) IN ('failure', 'denied')),
    ev_prev_head = head, head = coalesce(NEW.head, head), ev_agent = NEW.agent_id,
    ev_call_id = coalesce(
      (SELECT c.tool_call_id FROM tool_call_facts c
        WHERE c.session_id = NEW.gsid AND NEW.call_id IS NOT NULL AND c.provider_call_id = NEW.call_id
          AND c.end_event_id IS NULL ORDER BY c.call_ord LIMIT 1),
      (SELECT tool_call_id FROM (
         SELECT c.tool_call_id, c.call_ord FROM tool_call_facts c
         WHERE c.session_id = NEW.gsid AND c.provider_call_id IS NULL AND c.agent_key = NEW.akey
           AND c.tool_name IS NEW.tool_name AND c.end_event_id IS NULL
         UNION ALL
         SELECT c.tool_call_id, c.call_ord FROM tool_call_facts c
         WHERE NEW.call_id IS NULL AND c.session_id = NEW.gsid AND c.provider_call_id IS NOT NULL
           AND c.agent_key = NEW.akey AND c.tool_name IS NEW.tool_name AND c.end_event_id IS NULL)
       ORDER BY call_ord LIMIT 1),
      'tc_' || NEW.uid)
  WHERE session_id = NEW.gsid;
  UPDATE project_queue SET go_end_only = 1
  WHERE qid = 1 AND (SELECT ev_call_id FROM session_facts WHERE session_id = NEW.gsid) = 'tc_' || NEW.uid;
  UPDATE tool_call_facts SET
    finished_at = NEW.at,
    end_event_id = NEW.event_id,
    outcome_status = CASE WHEN NEW.kind = 'permission_denied' THEN 'denied'
                          ELSE coalesce(NEW.outcome_status, CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END) END,
    outcome_class = NEW.outcome_class,
    exit_code = NEW.exit_code,
    duration_ms = coalesce(NEW.duration_ms, max(0,
      ((CAST(strftime('%s', NEW.at) AS INTEGER) * 1000000 + CAST(substr(NEW.at, 21, 6) AS INTEGER))
       - (CAST(strftime('%s', started_at) AS INTEGER) * 1000000 + CAST(substr(started_at, 21, 6) AS INTEGER))) / 1000)),
    paths = CASE WHEN NEW.paths = '[]' OR NEW.paths = paths THEN paths
                 WHEN paths = '[]' THEN NEW.paths
                 ELSE (SELECT json_group_array(value) FROM (
                         SELECT value FROM (SELECT value, 0 AS src, key AS k FROM json_each(paths)
                                            UNION ALL
                                            SELECT value, 1, key FROM json_each(NEW.paths)
                                            WHERE value NOT IN (SELECT value FROM json_each(paths)))
                         ORDER BY src, k)) END,
    path_relative = coalesce(path_relative, NEW.path_relative),
    command_category = coalesce(command_category, NEW.command_category),
    git_subcommand = coalesce(git_subcommand, NEW.git_subcommand),
    lines_added = coalesce(NEW.lines_added, lines_added),
    lines_removed = coalesce(NEW.lines_removed, lines_removed),
    tests_failed = coalesce(NEW.tests_failed, tests_failed),
    pairing = CASE WHEN pairing = 'end_only' THEN 'end_only'
                   WHEN NEW.call_id IS NOT NULL AND provider_call_id = NEW.call_id THEN 'call_id' ELSE 'fifo' END,
    provider_call_id = coalesce(provider_call_id, NEW.call_id)
  WHERE tool_call_id = (SELECT ev_call_id FROM session_facts WHERE session_id = NEW.gsid) AND end_event_id IS NULL;
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1)
    AND NOT EXISTS (SELECT 1 FROM commit_facts q WHERE q.session_id = NEW.gsid AND q.end_key = NEW.ekey
                    AND q.linkage = 'end_event');
END;

-- An end no open call was waiting for: a call of its own (counted, in the agent's current
-- attempt or a new one), inserted open for apply_end to close like any other.
CREATE TRIGGER apply_end_only AFTER UPDATE OF go_end_only ON project_queue
BEGIN
  UPDATE session_facts SET call_seq = call_seq + 1, ev_attempt_key = (SELECT CASE WHEN a.boundary IS NULL OR NEW.at <= a.boundary THEN a.group_key END
                      FROM attempt_facts a
                      WHERE a.turn_id = coalesce(session_facts.cur_turn_id, 'trn_' || substr(NEW.gsid, 5))
                        AND a.agent_key = NEW.akey
                      ORDER BY a.group_no DESC LIMIT 1)
  WHERE session_id = NEW.gsid;
  UPDATE project_queue SET go_attempt = 1
  WHERE qid = 1 AND (SELECT ev_attempt_key IS NULL FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO tool_call_facts (tool_call_id, session_id, turn_id, agent_id, agent_key, tool_name,
      tool_category, provider_call_id, first_at, path_relative, paths, command_category, git_subcommand,
      lines_added, lines_removed, tests_failed, pairing, call_ord, attempt_key)
    SELECT s.ev_call_id, NEW.gsid, s.cur_turn_id, NEW.agent_id, NEW.akey, NEW.tool_name, NEW.tool_category,
           NEW.call_id, NEW.at, NEW.path_relative, NEW.paths, NEW.command_category, NEW.git_subcommand,
           NEW.lines_added, NEW.lines_removed, NEW.tests_failed, 'end_only', s.call_seq,
           coalesce(s.ev_attempt_key, s.ev_call_id)
    FROM session_facts s WHERE s.session_id = NEW.gsid;
  UPDATE project_queue SET go_start_more = 1
  WHERE qid = 1 AND NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> '[]';
END;

-- A call that needs an attempt of its own: the agent's next attempt in the turn, anchored on the
-- call's first event (this event).
CREATE TRIGGER apply_attempt AFTER UPDATE OF go_attempt ON project_queue
BEGIN
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id,
      turn_index, agent_id, agent_key, group_no, attempt_index, started_at, first_at, first_event_id, turn_status,
      turn_ended_at, turn_class, turn_stop_id, retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT s.ev_call_id, 'att_' || NEW.uid, NEW.gsid, s.provider, s.project_id, s.project_name, t.turn_id,
           t.turn_index, NEW.agent_id, NEW.akey,
           (SELECT count(*) FROM attempt_facts a WHERE a.turn_id = t.turn_id AND a.agent_key = NEW.akey),
           (SELECT count(agent_key) FROM attempt_facts a WHERE a.turn_id = t.turn_id),
           CASE WHEN EXISTS (SELECT 1 FROM attempt_facts a WHERE a.turn_id = t.turn_id AND a.agent_key IS NOT NULL)
                THEN NEW.at ELSE t.started_at END,
           NEW.at, NEW.event_id, t.status, t.ended_at, t.failure_class, t.stop_event_id,
           coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || NEW.uid AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
    FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
      LEFT JOIN correction_targets ct ON ct.target = 'att_' || NEW.uid
    WHERE s.session_id = NEW.gsid;
END;

-- A closed call that can change its attempt (a check, a failure, new edit paths, a commit, or any
-- call of an attempt that failed or is retracted) goes on to apply_judge, the call's id in the
-- gate. Everything else about a close is already done.
CREATE TRIGGER call_closed AFTER UPDATE OF end_event_id ON tool_call_facts
WHEN OLD.end_event_id IS NULL
BEGIN
  UPDATE project_queue SET go_judge = NEW.tool_call_id
  WHERE qid = 1
    AND (NEW.outcome_status IN ('failure', 'denied') OR NEW.tests_failed IS NOT NULL
         OR (NEW.tool_category = 'shell' AND NEW.command_category IN ('test', 'build'))
         OR (NEW.tool_category IN ('file_write', 'file_edit', 'notebook') AND NEW.paths <> OLD.paths)
         OR NEW.git_subcommand = 'commit'
         OR EXISTS (SELECT 1 FROM attempt_facts WHERE group_key = NEW.attempt_key AND (failed OR retraction > 0)));
END;

-- Judging a closed call (NEW.go_judge): its attempt's verification (the last finished check
-- decides) and last failing call (the `caused` edge); the first failure observed, which ends the
-- attempt and re-anchors its id on this end event (a failed or denied edit/write/notebook; a
-- failed test or build, or one that exited 0 reporting failing tests; a failed shell command
-- that was denied or came after an edit in the attempt; a failing read, search or exploratory
-- command is a failed call, not a failed attempt); supersession both ways; a commit; the end
-- event of a call in a retracted attempt leaves the log's projections.
CREATE TRIGGER apply_judge AFTER UPDATE OF go_judge ON project_queue
BEGIN
  UPDATE attempt_facts SET (verification, verify_key, last_fail_ev, last_fail_key) = (
      SELECT CASE WHEN k.is_check AND k.key > coalesce(verify_key, '') THEN k.verdict ELSE verification END,
             CASE WHEN k.is_check AND k.key > coalesce(verify_key, '') THEN k.key ELSE verify_key END,
             CASE WHEN k.is_fail AND k.key > coalesce(last_fail_key, '') THEN k.end_event_id ELSE last_fail_ev END,
             CASE WHEN k.is_fail AND k.key > coalesce(last_fail_key, '') THEN k.key ELSE last_fail_key END
      FROM (SELECT c.end_event_id, c.finished_at || printf('|%012d', c.call_ord) AS key,
                   c.outcome_status IN ('failure', 'denied') AS is_fail, c.tool_category = 'shell' AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL) AS is_check,
                   CASE WHEN c.outcome_status IN ('failure', 'denied') OR c.tests_failed > 0 THEN 'failed'
                        ELSE 'passed' END AS verdict
            FROM tool_call_facts c WHERE c.tool_call_id = NEW.go_judge) k)
  WHERE group_key = (SELECT c.attempt_key FROM tool_call_facts c WHERE c.tool_call_id = NEW.go_judge
                     AND (c.outcome_status IN ('failure', 'denied') OR (c.tool_category = 'shell' AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL))));
  UPDATE attempt_facts SET (failing_call_id, fail_event_id, boundary, fail_class, attempt_id, retraction,
                            corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by) = (
      SELECT c.tool_call_id, c.end_event_id, c.finished_at,
             coalesce(c.outcome_class, CASE WHEN c.outcome_status IN ('failure', 'denied') THEN c.outcome_status
                                            WHEN c.tests_failed > 0 THEN 'tests_failed' ELSE 'failure' END),
             'att_' || substr(c.end_event_id, 4), coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || substr(c.end_event_id, 4) AND r.target_type = 'attempt'), 0), ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
      FROM tool_call_facts c LEFT JOIN correction_targets ct ON ct.target = 'att_' || substr(c.end_event_id, 4)
      WHERE c.tool_call_id = NEW.go_judge)
  WHERE failing_call_id IS NULL
    AND group_key = (
      SELECT c.attempt_key FROM tool_call_facts c
      WHERE c.tool_call_id = NEW.go_judge
        AND ((c.outcome_status IN ('failure', 'denied')
              AND (c.tool_category IN ('file_write', 'file_edit', 'notebook')
                   OR (c.tool_category = 'shell'
                       AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL
                            OR c.outcome_status = 'denied'
                            OR EXISTS (SELECT 1 FROM tool_call_facts p
                                       WHERE p.attempt_key = c.attempt_key AND p.call_ord < c.call_ord
                                         AND p.tool_category IN ('file_write', 'file_edit', 'notebook'))))))
             OR (c.tool_category = 'shell' AND c.tests_failed > 0)));
  UPDATE attempt_facts SET superseded_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge),
      successor_live = (SELECT retraction = 0 FROM attempt_facts WHERE group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge))
  WHERE group_key IN (
    SELECT f.group_key FROM attempt_facts j JOIN attempt_facts f
      ON f.session_id = j.session_id AND f.agent_key = j.agent_key
     AND f.turn_index BETWEEN j.turn_index - 1 AND j.turn_index
     AND (f.turn_index < j.turn_index OR f.attempt_index < j.attempt_index)
    WHERE j.group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge) AND f.failed
      AND (f.superseded_key IS NULL
           OR EXISTS (SELECT 1 FROM attempt_facts o WHERE o.group_key = f.superseded_key
                      AND (o.turn_index, o.attempt_index) > (j.turn_index, j.attempt_index)))
      AND EXISTS (SELECT 1 FROM tool_call_facts c
                WHERE c.tool_call_id = NEW.go_judge
                  AND ((c.tool_category IN ('file_write', 'file_edit', 'notebook') AND EXISTS (SELECT 1 FROM tool_call_facts x, json_each(x.paths) p
                 WHERE x.attempt_key = f.group_key AND x.tool_category IN ('file_write', 'file_edit', 'notebook')
                   AND p.value IN (SELECT value FROM json_each(c.paths))))
                       OR ((c.tool_category = 'shell' AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL) AND c.end_event_id IS NOT NULL AND c.outcome_status NOT IN ('failure', 'denied') AND coalesce(c.tests_failed, 0) <= 0) AND EXISTS (SELECT 1 FROM tool_call_facts x
                 WHERE x.attempt_key = f.group_key AND x.tool_category = 'shell' AND (x.command_category IN ('test', 'build') OR x.tests_failed IS NOT NULL)
                   AND (x.outcome_status IN ('failure', 'denied') OR x.tests_failed > 0)
                   AND (CASE WHEN x.command_category = 'test' OR x.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END) = CASE WHEN c.command_category = 'test' OR c.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END)))));
  UPDATE attempt_facts SET (superseded_key, successor_live) =
      (SELECT x.k, coalesce(x.live, 1) FROM (SELECT 1) LEFT JOIN (SELECT j.group_key AS k, j.retraction = 0 AS live FROM attempt_facts j
       WHERE j.session_id = attempt_facts.session_id AND j.agent_key = attempt_facts.agent_key
         AND j.turn_index BETWEEN attempt_facts.turn_index AND attempt_facts.turn_index + 1
         AND (j.turn_index > attempt_facts.turn_index OR j.attempt_index > attempt_facts.attempt_index)
         AND (EXISTS (SELECT 1 FROM tool_call_facts y, json_each(y.paths) q
                      WHERE y.attempt_key = j.group_key AND y.tool_category IN ('file_write', 'file_edit', 'notebook')
                        AND q.value IN (SELECT p.value FROM tool_call_facts x, json_each(x.paths) p
                                        WHERE x.attempt_key = attempt_facts.group_key AND x.tool_category IN ('file_write', 'file_edit', 'notebook')))
              OR EXISTS (SELECT 1 FROM tool_call_facts y
                         WHERE y.attempt_key = j.group_key AND (y.tool_category = 'shell' AND (y.command_category IN ('test', 'build') OR y.tests_failed IS NOT NULL) AND y.end_event_id IS NOT NULL AND y.outcome_status NOT IN ('failure', 'denied') AND coalesce(y.tests_failed, 0) <= 0)
                           AND EXISTS (SELECT 1 FROM tool_call_facts x
                 WHERE x.attempt_key = attempt_facts.group_key AND x.tool_category = 'shell' AND (x.command_category IN ('test', 'build') OR x.tests_failed IS NOT NULL)
                   AND (x.outcome_status IN ('failure', 'denied') OR x.tests_failed > 0)
                   AND (CASE WHEN x.command_category = 'test' OR x.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END) = CASE WHEN y.command_category = 'test' OR y.tests_failed IS NOT NULL THEN 'test' ELSE 'build' END)))
       ORDER BY j.turn_index, j.attempt_index LIMIT 1) x)
  WHERE group_key = (SELECT attempt_key FROM tool_call_facts WHERE tool_call_id = NEW.go_judge)
    AND failed
    AND EXISTS (SELECT 1 FROM attempt_facts j WHERE j.session_id = attempt_facts.session_id
                AND j.agent_key = attempt_facts.agent_key
                AND j.turn_index BETWEEN attempt_facts.turn_index AND attempt_facts.turn_index + 1
                AND (j.turn_index > attempt_facts.turn_index OR j.attempt_index > attempt_facts.attempt_index));
  INSERT INTO commit_facts (commit_id, session_id, tool_call_id, branch, previous_sha, sha,
      linkage, committed_at, end_event_id, head_event_id, end_key)
    SELECT 'cmt_' || substr(c.tool_call_id, 4), NEW.gsid, c.tool_call_id, NEW.branch, s.ev_prev_head,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN NEW.head END,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN 'end_event' ELSE 'unresolved' END,
           NEW.at, NEW.event_id,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN NEW.event_id END,
           NEW.ekey
    FROM tool_call_facts c JOIN session_facts s ON s.session_id = NEW.gsid
    WHERE c.tool_call_id = NEW.go_judge AND c.git_subcommand = 'commit' AND c.outcome_status = 'success';
  UPDATE events SET retracted = 1
  WHERE seq = NEW.seq AND retracted = 0
    AND EXISTS (SELECT 1 FROM tool_call_facts c JOIN attempt_facts a ON a.group_key = c.attempt_key
                WHERE c.tool_call_id = NEW.go_judge AND a.retraction > 0);
END;

-- Every other fact event: session start/end (with resume), stops, permission requests and
-- denials, notifications, injected prompts, messages. Waits are cleared first (a session end
-- clears all; progress, decisions, stops and wait notifications their agent's; a nil agent on
-- either side matches), then a session end or a stop closes the current turn, then waits are
-- raised (spec/projections.md §9).
CREATE TRIGGER apply_other AFTER UPDATE OF go_other ON project_queue
BEGIN
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (NEW.kind = 'session_ended'
         OR ((NEW.kind IN ('permission_requested', 'permission_denied', 'turn_stopped', 'turn_failed')
              OR (NEW.kind = 'notification'
                  AND (NEW.ntype IN ('elicitation_result', 'permission_prompt', 'agent_needs_input')
                       OR (NEW.ntype = 'idle_prompt'
                           AND EXISTS (SELECT 1 FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
                                       WHERE s.session_id = NEW.gsid AND t.ended_at IS NULL)))))
             AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id)));
  UPDATE turn_facts SET status = 'unknown', ended_at = NEW.at
  WHERE NEW.kind = 'session_ended' AND ended_at IS NULL
    AND turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = CASE WHEN NEW.kind = 'session_ended' THEN last_activity_at ELSE NEW.at END,
    started_at = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.at ELSE started_at END,
    start_source = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.start_source ELSE start_source END,
    start_event_id = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.event_id ELSE start_event_id END,
    saw_start = saw_start OR NEW.kind = 'session_started',
    saw_end = saw_end OR NEW.kind = 'session_ended',
    ended_at = CASE WHEN NEW.kind = 'session_ended' THEN NEW.at
                    WHEN NEW.kind IN ('session_started', 'permission_requested') THEN NULL ELSE ended_at END,
    end_event_id = CASE WHEN NEW.kind = 'session_ended' THEN NEW.event_id
                        WHEN NEW.kind IN ('session_started', 'permission_requested') THEN NULL ELSE end_event_id END,
    end_reason = CASE WHEN NEW.kind = 'session_ended' THEN NEW.end_reason
                      WHEN NEW.kind IN ('session_started', 'permission_requested') THEN NULL ELSE end_reason END,
    turn_count = turn_count + (cur_turn_id IS NULL AND NEW.kind IN ('turn_stopped', 'turn_failed', 'permission_denied')),
    cur_turn_id = CASE WHEN cur_turn_id IS NULL AND NEW.kind IN ('turn_stopped', 'turn_failed', 'permission_denied')
                       THEN 'trn_' || substr(NEW.gsid, 5) ELSE cur_turn_id END,
    turn_last_event_id = CASE WHEN NEW.kind IN ('session_started', 'session_ended') THEN turn_last_event_id ELSE NEW.event_id END,
    turn_last_at = CASE WHEN NEW.kind IN ('session_started', 'session_ended') THEN turn_last_at ELSE NEW.at END,
    failure_count = failure_count + (NEW.kind = 'turn_failed'),
    ev_call_id = NULL, ev_agent = NEW.agent_id, ev_prev_head = head, head = coalesce(NEW.head, head)
  WHERE session_id = NEW.gsid;
  UPDATE turn_facts SET
    stop_event_id = NEW.event_id, ended_at = NEW.at,
    status = CASE NEW.kind WHEN 'turn_stopped' THEN 'completed' ELSE 'failed' END,
    failure_class = CASE NEW.kind WHEN 'turn_stopped' THEN NULL ELSE NEW.turn_class END
  WHERE NEW.kind IN ('turn_stopped', 'turn_failed')
    AND turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE attempt_facts SET (turn_status, turn_ended_at, turn_class, turn_stop_id) =
      (SELECT t.status, t.ended_at, t.failure_class, t.stop_event_id FROM turn_facts t WHERE t.turn_id = attempt_facts.turn_id)
    WHERE NEW.kind IN ('turn_stopped', 'turn_failed', 'session_ended') AND turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO signal_facts (event_id, session_id, turn_id, raised_at, agent_id, kind, signal_type, blocking)
    SELECT NEW.event_id, NEW.gsid, s.cur_turn_id, NEW.at, NEW.agent_id, NEW.kind, NEW.ntype,
           CASE WHEN NEW.kind = 'notification' AND NEW.ntype = 'idle_prompt'
                 AND NOT EXISTS (SELECT 1 FROM turn_facts t WHERE t.turn_id = s.cur_turn_id AND t.ended_at IS NULL)
                THEN 0 ELSE 1 END
    FROM session_facts s
    WHERE s.session_id = NEW.gsid
      AND (NEW.kind = 'permission_requested'
           OR (NEW.kind = 'notification' AND NEW.ntype IN ('permission_prompt', 'idle_prompt', 'agent_needs_input')));
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1);
END;

-- A human prompt: checkpoint first (the state just before it: the session row, its current
-- turn, open calls, the attempts the new turn can still change, pending waits, unresolved
-- commits; what Corrections and Retractions decide is left neutral there and refreshed after a
-- replay), then it ends every wait, closes the current turn (unknown when nothing stopped it; it
-- takes its last attributed event from the session row) and opens the next turn with its
-- placeholder attempt.
-- A prompt costs O(its turn), not O(session) (migration 0007): every checkpoint read is led by
-- an index on the session and the condition (open calls; the attempts of the current turn and of
-- open calls, read as two index-led reads because an OR of both is one session scan; a unary +
-- keeps the second on the primary key; attempts those supersede).
-- The objective is read off the prompt's events row (migration 0014), not carried in the queue row.
CREATE TRIGGER apply_prompt AFTER UPDATE OF go_prompt ON project_queue
BEGIN
  INSERT INTO session_facts (session_id, raw_session_id, provider, provider_session_id,
      project_id, project_name, first_event_id, first_at, started_at, retraction)
    VALUES (NEW.gsid, NEW.raw_sid, NEW.provider, NEW.psid, NEW.project_id, NEW.project_name, NEW.event_id,
            NEW.at, NEW.at, coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts
                                      WHERE target = NEW.raw_sid AND target_type = 'session'), 0))
    ON CONFLICT DO NOTHING;
  INSERT OR REPLACE INTO snap_points (session_id, snap_key) VALUES (NEW.gsid, NEW.ekey);
  DELETE FROM snap_sessions WHERE session_id = NEW.gsid;
  DELETE FROM snap_turns WHERE session_id = NEW.gsid;
  DELETE FROM snap_calls WHERE session_id = NEW.gsid;
  DELETE FROM snap_attempts WHERE session_id = NEW.gsid;
  DELETE FROM snap_signals WHERE session_id = NEW.gsid;
  DELETE FROM snap_commits WHERE session_id = NEW.gsid;
  INSERT INTO snap_sessions SELECT * FROM session_facts WHERE session_id = NEW.gsid;
  UPDATE snap_sessions SET retraction = 0, retracted_attempts = 0 WHERE session_id = NEW.gsid;
  INSERT INTO snap_turns SELECT t.* FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
    WHERE s.session_id = NEW.gsid;
  INSERT INTO snap_calls SELECT * FROM tool_call_facts WHERE session_id = NEW.gsid AND end_event_id IS NULL;
  INSERT INTO snap_attempts SELECT group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, 1, 0, 0, NULL, NULL, 0, NULL, NULL
    FROM attempt_facts
    WHERE session_id = NEW.gsid
      AND turn_index >= (SELECT prompt_count - 1 FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO snap_attempts SELECT group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, 1, 0, 0, NULL, NULL, 0, NULL, NULL
    FROM attempt_facts
    WHERE group_key IN (SELECT attempt_key FROM snap_calls WHERE session_id = NEW.gsid)
      AND +session_id = NEW.gsid
      AND +turn_index < (SELECT prompt_count - 1 FROM session_facts WHERE session_id = NEW.gsid);
  INSERT INTO snap_attempts SELECT group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, 1, 0, 0, NULL, NULL, 0, NULL, NULL
    FROM attempt_facts
    WHERE session_id = NEW.gsid
      AND superseded_key IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.gsid)
      AND group_key NOT IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.gsid);
  INSERT INTO snap_signals SELECT * FROM signal_facts WHERE session_id = NEW.gsid AND cleared_at IS NULL;
  INSERT INTO snap_commits SELECT * FROM commit_facts WHERE session_id = NEW.gsid AND linkage = 'unresolved';
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL;
  UPDATE turn_facts SET (status, ended_at, last_event_id, last_at) = (
      SELECT CASE WHEN turn_facts.ended_at IS NULL THEN 'unknown' ELSE turn_facts.status END,
             coalesce(turn_facts.ended_at, NEW.at),
             coalesce(s.turn_last_event_id, turn_facts.last_event_id), coalesce(s.turn_last_at, turn_facts.last_at)
      FROM session_facts s WHERE s.session_id = NEW.gsid)
  WHERE turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE attempt_facts SET (turn_status, turn_ended_at, turn_class, turn_stop_id) =
      (SELECT t.status, t.ended_at, t.failure_class, t.stop_event_id FROM turn_facts t WHERE t.turn_id = attempt_facts.turn_id)
    WHERE turn_id = (SELECT cur_turn_id FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE session_facts SET
    event_count = event_count + 1, last_event_id = NEW.event_id, last_at = NEW.at, last_key = NEW.ekey,
    last_activity_at = NEW.at, ended_at = NULL, end_event_id = NULL, end_reason = NULL,
    prompt_count = prompt_count + 1, turn_count = turn_count + 1, cur_turn_id = 'trn_' || NEW.uid,
    turn_last_event_id = NEW.event_id, turn_last_at = NEW.at, ev_call_id = NULL, ev_agent = NEW.agent_id,
    ev_prev_head = head, head = coalesce(NEW.head, head)
  WHERE session_id = NEW.gsid;
  INSERT INTO turn_prompts (turn_id, session_id, objective)
    SELECT 'trn_' || NEW.uid, NEW.gsid, json_extract(e.content_json, '$.prompt')
    FROM events e WHERE e.seq = NEW.seq AND json_type(e.content_json, '$.prompt') = 'text';
  INSERT INTO turn_facts (turn_id, session_id, turn_index, started_at, status, prompt_event_id, prompt_chars,
      first_event_id, last_event_id, last_at, start_key)
    SELECT 'trn_' || NEW.uid, NEW.gsid, s.prompt_count, NEW.at, 'in_progress', NEW.event_id, NEW.prompt_chars,
           NEW.event_id, NEW.event_id, NEW.at, NEW.ekey
    FROM session_facts s WHERE s.session_id = NEW.gsid;
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id,
      turn_index, agent_id, group_no, attempt_index, placeholder, started_at, first_at, first_event_id,
      turn_status, retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by)
    SELECT t.turn_id, 'att_' || NEW.uid, NEW.gsid, s.provider, s.project_id, s.project_name, t.turn_id, t.turn_index,
           'agt_00000000-0000-0000-0000-000000000000', 0, 0, 1, NEW.at, NEW.at, NEW.event_id, t.status,
           coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = 'att_' || NEW.uid AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
    FROM turn_facts t JOIN session_facts s ON s.session_id = t.session_id
      LEFT JOIN correction_targets ct ON ct.target = 'att_' || NEW.uid
    WHERE t.turn_id = 'trn_' || NEW.uid AND t.first_event_id = NEW.event_id;
  UPDATE commit_facts SET sha = NEW.head, linkage = 'next_head', head_event_id = NEW.event_id
  WHERE NEW.head IS NOT NULL
    AND commit_id = (
      SELECT p.commit_id FROM session_facts s JOIN commit_facts p ON p.session_id = s.session_id
      WHERE s.session_id = NEW.gsid AND NEW.head IS NOT s.ev_prev_head
        AND p.linkage = 'unresolved' AND p.end_key < NEW.ekey
        AND (p.previous_sha IS NULL OR p.previous_sha = s.ev_prev_head)
      ORDER BY p.end_key LIMIT 1);
END;

-- Agents of a session in first-seen order: the session row names the event's agent; a change of
-- agent records a new one (first_key orders them).
CREATE TRIGGER session_names_agent AFTER UPDATE OF ev_agent ON session_facts
WHEN NEW.ev_agent IS NOT NULL AND NEW.ev_agent IS NOT OLD.ev_agent
BEGIN
  INSERT INTO session_agents (session_id, agent_id, first_key) VALUES (NEW.session_id, NEW.ev_agent, NEW.last_key)
    ON CONFLICT DO NOTHING;
END;

-- Side effects of attempt rows, fired only when attempts are created or their retraction changes.
-- Each is idempotent, so restoring a checkpoint (which re-inserts rows) may fire them safely:
--   * the first real attempt of a turn replaces the turn's placeholder;
--   * a new attempt of an agent makes the agent's earlier ones in the turn not the last;
--   * a retracted id (from the start, or taken later) flags the session; an attempt whose id
--     becomes or stops being retracted re-judges whose live successor it is and takes its calls'
--     events out of the log's projections.
CREATE TRIGGER attempt_replaces_placeholder BEFORE INSERT ON attempt_facts
WHEN NEW.placeholder = 0 AND NEW.attempt_index = 0
BEGIN
  DELETE FROM attempt_facts WHERE group_key = NEW.turn_id;
END;

CREATE TRIGGER attempt_not_last AFTER INSERT ON attempt_facts
WHEN NEW.group_no > 0
BEGIN
  UPDATE attempt_facts SET last_of_agent = 0
  WHERE turn_id = NEW.turn_id AND agent_key = NEW.agent_key AND group_no < NEW.group_no AND last_of_agent = 1;
END;

CREATE TRIGGER attempt_born_retracted AFTER INSERT ON attempt_facts
WHEN NEW.retraction > 0
BEGIN
  UPDATE session_facts SET retracted_attempts = 1 WHERE session_id = NEW.session_id AND retracted_attempts = 0;
END;

CREATE TRIGGER attempt_retraction_changed AFTER UPDATE OF retraction ON attempt_facts
WHEN (NEW.retraction > 0) <> (OLD.retraction > 0)
BEGIN
  UPDATE attempt_facts SET successor_live = (NEW.retraction = 0) WHERE superseded_key = NEW.group_key;
  UPDATE session_facts SET retracted_attempts = EXISTS (
      SELECT 1 FROM attempt_facts WHERE session_id = NEW.session_id AND retraction > 0)
  WHERE session_id = NEW.session_id;
  UPDATE events SET retracted = 1
  WHERE NEW.retraction > 0 AND retracted = 0 AND event_id IN (
    SELECT start_event_id FROM tool_call_facts WHERE attempt_key = NEW.group_key
    UNION ALL
    SELECT end_event_id FROM tool_call_facts WHERE attempt_key = NEW.group_key);
END;

-- Re-derive one projection session: restore the checkpoint taken before its current turn's
-- prompt when from_key sorts after that prompt, else drop the whole session; re-apply its events
-- from there in sort order; then refresh what Corrections and Retractions decide (the checkpoint
-- holds them neutral) and take the events of retracted attempts' calls out.
CREATE TRIGGER project_replay_session AFTER INSERT ON replay_requests
WHEN (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND (NEW.from_key = ''
      OR EXISTS (SELECT 1 FROM session_facts WHERE session_id = NEW.session_id AND last_key >= NEW.from_key))
BEGIN
  DELETE FROM snap_points WHERE session_id = NEW.session_id AND snap_key >= NEW.from_key;
  DELETE FROM snap_sessions WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_turns WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_calls WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_attempts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_signals WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM snap_commits WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM tool_call_facts WHERE session_id = NEW.session_id AND turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), ''));
  DELETE FROM turn_prompts WHERE session_id = NEW.session_id AND turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), ''));
  DELETE FROM session_agents WHERE session_id = NEW.session_id
    AND first_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '');
  DELETE FROM attempt_facts WHERE session_id = NEW.session_id AND turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), ''));
  DELETE FROM signal_facts WHERE session_id = NEW.session_id
    AND (turn_id IN (SELECT t.turn_id FROM turn_facts t WHERE t.session_id = NEW.session_id AND t.start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '')) OR NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id));
  DELETE FROM commit_facts WHERE session_id = NEW.session_id
    AND end_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '');
  DELETE FROM turn_facts WHERE session_id = NEW.session_id
    AND start_key >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '');
  DELETE FROM session_facts WHERE session_id = NEW.session_id;
  INSERT INTO session_facts SELECT * FROM snap_sessions WHERE session_id = NEW.session_id;
  DELETE FROM turn_facts WHERE turn_id IN (SELECT turn_id FROM snap_turns WHERE session_id = NEW.session_id);
  INSERT INTO turn_facts SELECT * FROM snap_turns WHERE session_id = NEW.session_id;
  DELETE FROM attempt_facts WHERE group_key IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.session_id);
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, provider, project_id, project_name, turn_id, turn_index, agent_id, agent_key, group_no,
  attempt_index, placeholder, started_at, first_at, first_event_id, failing_call_id, fail_event_id, fail_class,
  boundary, last_of_agent, turn_status, turn_ended_at, turn_class, turn_stop_id, verification, verify_key,
  last_fail_ev, last_fail_key, superseded_key, successor_live, retraction, session_retracted, corr_by,
  corr_outcome, corr_class_set, corr_class, corr_note_by) SELECT * FROM snap_attempts WHERE session_id = NEW.session_id;
  DELETE FROM tool_call_facts WHERE tool_call_id IN (SELECT tool_call_id FROM snap_calls WHERE session_id = NEW.session_id);
  INSERT INTO tool_call_facts SELECT * FROM snap_calls WHERE session_id = NEW.session_id;
  DELETE FROM signal_facts WHERE event_id IN (SELECT event_id FROM snap_signals WHERE session_id = NEW.session_id);
  INSERT INTO signal_facts SELECT * FROM snap_signals WHERE session_id = NEW.session_id;
  DELETE FROM commit_facts WHERE commit_id IN (SELECT commit_id FROM snap_commits WHERE session_id = NEW.session_id);
  INSERT INTO commit_facts SELECT * FROM snap_commits WHERE session_id = NEW.session_id;
  INSERT OR REPLACE INTO project_queue
    SELECT 1, p.* FROM project_input p
    WHERE p.raw_sid = NEW.raw_session_id AND p.gsid = NEW.session_id
      AND @projected_kind(p) AND p.telemetry = 0
      AND p.ekey >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '')
      AND p.at >= coalesce(substr((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), 1, 27), '')
      AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event')
    ORDER BY p.ekey;
  UPDATE session_facts SET retraction = coalesce((SELECT max(1 + (reason = 'privacy')) FROM retraction_facts
                                                  WHERE target = raw_session_id AND target_type = 'session'), 0)
  WHERE session_id = NEW.session_id;
  UPDATE attempt_facts SET (retraction, session_retracted, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by) = (
      SELECT coalesce((SELECT max(1 + (r.reason = 'privacy')) FROM retraction_facts r WHERE r.target = attempt_facts.attempt_id AND r.target_type = 'attempt'), 0), s.retraction > 0, ct.corr_by, ct.corr_outcome, coalesce(ct.corr_class_set, 0), ct.corr_class, ct.corr_note_by
      FROM session_facts s LEFT JOIN correction_targets ct ON ct.target = attempt_facts.attempt_id
      WHERE s.session_id = attempt_facts.session_id)
  WHERE session_id = NEW.session_id;
  UPDATE attempt_facts SET successor_live = coalesce((SELECT j.retraction = 0 FROM attempt_facts j
                                                      WHERE j.group_key = attempt_facts.superseded_key), 1)
  WHERE session_id = NEW.session_id AND superseded_key IS NOT NULL;
  UPDATE session_facts SET retracted_attempts = EXISTS (
      SELECT 1 FROM attempt_facts WHERE session_id = NEW.session_id AND retraction > 0)
  WHERE session_id = NEW.session_id;
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND event_id IN (
    SELECT c.start_event_id FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE a.session_id = NEW.session_id AND a.retraction > 0
    UNION ALL
    SELECT c.end_event_id FROM attempt_facts a JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE a.session_id = NEW.session_id AND a.retraction > 0);
END;
