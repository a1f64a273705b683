-- 0003: how facts reach the projections (spec/projections.md §2–§4).
--
-- One state machine, written once: the AFTER INSERT trigger on `project_queue` applies ONE fact
-- event (one queue row, the event's fields as `project_input` derives them) to the stored state
-- of its projection session. Everything else feeds it:
--   * an event newer than everything its session has seen (the usual case) is applied on its
--     own, in the append's transaction: O(its turn), never O(session);
--   * an event that sorts before the session's latest (late imports, racing hooks, merges) or a
--     Retraction of an event makes `replay_requests` restore the session's state and re-apply its
--     events in sort order: from the checkpoint taken before the current turn's prompt when the
--     late event falls inside the current turn, else from the start of the session;
--   * `attempt reproject` replays every session from nothing.
-- Because every path runs the same apply trigger over the same ordered events, the stored state
-- is a function of the event set alone, whatever order the events arrived in.
--
-- Triggers cannot hold variables, so per-event values are computed once into the queue row and
-- the working context of the event being applied is kept on its session_facts row (cur_turn_id,
-- ev_call_id, ev_prev_head). The append path inserts its queue row with VALUES (computed from
-- NEW by the same expressions as `project_input`; a test holds the two lists equal): an
-- INSERT ... SELECT into a table with triggers materialises an ephemeral table first.

-- The fields of an events row that the projections read, with aliases resolved and the
-- content-free attrs typed (a wrongly typed attr is ignored, never compared as text).
CREATE VIEW project_input AS
SELECT
  e.seq AS seq,
  e.event_id AS event_id,
  substr(e.event_id, 4) AS uid,
  e.session_id AS raw_sid,
  CASE WHEN e.provider_session_id IN ('', 'unknown')
       THEN 'ses_' || substr(e.session_id, 5, 19) || substr(e.project_id, 24)
       ELSE e.session_id END AS gsid,
  e.observed_at || '|' || printf('%020d|%020d|', e.hlc, e.source_seq) || e.event_id AS ekey,
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
         substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 19) = '<task-notification>'
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 17) = '<system-reminder>'
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 22) IN ('<local-command-stdout>', '<local-command-caveat>')
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 13) IN ('<bash-stdout>', '<bash-stderr>')
      OR substr(ltrim(coalesce(json_extract(e.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 20) = '[SYSTEM NOTIFICATION')
       THEN 1 ELSE 0 END AS human_prompt,
  CASE WHEN e.kind = 'prompt_submitted' AND json_type(e.content_json, '$.prompt') = 'text'
       THEN json_extract(e.content_json, '$.prompt') END AS objective,
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
  CASE WHEN e.kind = 'unknown' AND json_extract(e.attrs_json, '$.source') = 'otel' THEN 1 ELSE 0 END AS telemetry
FROM events e;

-- Rows inserted here are applied, one by one in insertion order, by the trigger below, when
-- they sort after everything their session has applied (always true on a replay, which restores
-- an earlier state first). Every row is written with qid = 1 and INSERT OR REPLACE, so the table
-- holds at most the last event applied (deleting inside a trigger costs a statement journal).
CREATE TABLE project_queue (
  qid INTEGER PRIMARY KEY,
  seq,
  event_id,
  uid,
  raw_sid,
  gsid,
  ekey,
  at,
  kind,
  provider,
  psid,
  project_id,
  project_name,
  head,
  branch,
  agent_id,
  akey,
  tool_name,
  tool_category,
  call_id,
  paths,
  path_relative,
  outcome_status,
  outcome_class,
  exit_code,
  duration_ms,
  human_prompt,
  objective,
  prompt_chars,
  start_source,
  end_reason,
  ntype,
  turn_class,
  command_category,
  git_subcommand,
  lines_added,
  lines_removed,
  tests_failed,
  telemetry
);

CREATE TRIGGER project_apply_event AFTER INSERT ON project_queue
WHEN (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND NOT EXISTS (SELECT 1 FROM session_facts WHERE session_id = NEW.gsid AND last_key >= NEW.ekey)
BEGIN
  -- A. Waits this event ends, judged before it is applied (so a new request from the same
  --    agent replaces the old one). A human prompt or the session's end clears every wait;
  --    progress, decisions, stops and new requests clear only their own agent's (a nil agent
  --    on either side matches); background notifications and a non-blocking idle prompt clear
  --    nothing.
  UPDATE signal_facts SET cleared_at = NEW.at, cleared_by = NEW.event_id
  WHERE session_id = NEW.gsid AND cleared_at IS NULL
    AND (NEW.human_prompt = 1 OR NEW.kind = 'session_ended'
         OR ((NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed',
                           'permission_requested', 'permission_denied', 'turn_stopped', 'turn_failed')
              OR (NEW.kind = 'notification'
                  AND (NEW.ntype IN ('elicitation_result', 'permission_prompt', 'agent_needs_input')
                       OR (NEW.ntype = 'idle_prompt'
                           AND EXISTS (SELECT 1 FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
                                       WHERE s.session_id = NEW.gsid AND t.ended_at IS NULL)))))
             AND (agent_id IS NULL OR NEW.agent_id IS NULL OR agent_id = NEW.agent_id)));

  -- B. Checkpoint before a human prompt (project_checkpoint below copies the state; for any
  --    other event the guarded UPDATE matches no row).
  INSERT OR IGNORE INTO snap_points (session_id, snap_key) SELECT NEW.gsid, '' WHERE NEW.human_prompt = 1;
  UPDATE snap_points SET snap_key = NEW.ekey WHERE session_id = (SELECT NEW.gsid WHERE NEW.human_prompt = 1);

  -- C. Turn boundaries owned by the previous state: a human prompt or the session's end closes
  --    the current turn when nothing stopped it (status unknown).
  --    A prompt also hands the closing turn its last attributed event.
  UPDATE turn_facts SET
    status = CASE WHEN ended_at IS NULL THEN 'unknown' ELSE status END,
    ended_at = coalesce(ended_at, NEW.at),
    last_event_id = CASE WHEN NEW.human_prompt = 1
                         THEN coalesce((SELECT turn_last_event_id FROM session_facts WHERE session_id = NEW.gsid), last_event_id)
                         ELSE last_event_id END,
    last_at = CASE WHEN NEW.human_prompt = 1
                   THEN coalesce((SELECT turn_last_at FROM session_facts WHERE session_id = NEW.gsid), last_at)
                   ELSE last_at END
  WHERE turn_id = (SELECT cur_turn_id FROM session_facts
                   WHERE session_id = NEW.gsid AND (NEW.human_prompt = 1 OR NEW.kind = 'session_ended'))
    AND (ended_at IS NULL OR NEW.human_prompt = 1);

  -- D. The session row: counters, first/last, start/end/resume, agents, HEAD, and the context
  --    of this event (its turn, the tool call it opens or closes).
  INSERT INTO session_facts (session_id, raw_session_id, provider, provider_session_id,
      project_id, project_name, first_event_id, first_at, started_at)
    SELECT NEW.gsid, NEW.raw_sid, NEW.provider, NEW.psid, NEW.project_id, NEW.project_name,
           NEW.event_id, NEW.at, NEW.at
    WHERE NOT EXISTS (SELECT 1 FROM session_facts WHERE session_id = NEW.gsid);
  UPDATE session_facts SET
    event_count = event_count + 1,
    last_event_id = NEW.event_id,
    last_at = NEW.at,
    last_key = NEW.ekey,
    last_activity_at = CASE WHEN NEW.kind = 'session_ended' THEN last_activity_at ELSE NEW.at END,
    started_at = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.at ELSE started_at END,
    start_source = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.start_source ELSE start_source END,
    start_event_id = CASE WHEN NEW.kind = 'session_started' AND start_event_id IS NULL THEN NEW.event_id ELSE start_event_id END,
    saw_start = saw_start OR NEW.kind = 'session_started',
    saw_end = saw_end OR NEW.kind = 'session_ended',
    ended_at = CASE WHEN NEW.kind = 'session_ended' THEN NEW.at
                    WHEN NEW.kind IN ('session_started', 'tool_call_started', 'permission_requested') OR NEW.human_prompt = 1 THEN NULL
                    ELSE ended_at END,
    end_event_id = CASE WHEN NEW.kind = 'session_ended' THEN NEW.event_id
                        WHEN NEW.kind IN ('session_started', 'tool_call_started', 'permission_requested') OR NEW.human_prompt = 1 THEN NULL
                        ELSE end_event_id END,
    end_reason = CASE WHEN NEW.kind = 'session_ended' THEN NEW.end_reason
                      WHEN NEW.kind IN ('session_started', 'tool_call_started', 'permission_requested') OR NEW.human_prompt = 1 THEN NULL
                      ELSE end_reason END,
    prompt_count = prompt_count + NEW.human_prompt,
    next_turn_index = next_turn_index + NEW.human_prompt,
    turn_count = turn_count + CASE
        WHEN NEW.human_prompt = 1 THEN 1
        WHEN cur_turn_id IS NULL AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed',
                                                  'turn_stopped', 'turn_failed', 'permission_denied') THEN 1
        ELSE 0 END,
    cur_turn_id = CASE
        WHEN NEW.human_prompt = 1 THEN 'trn_' || NEW.uid
        WHEN cur_turn_id IS NULL AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed',
                                                  'turn_stopped', 'turn_failed', 'permission_denied')
          THEN 'trn_' || substr(NEW.gsid, 5)
        ELSE cur_turn_id END,
    turn_last_event_id = CASE WHEN NEW.kind IN ('session_started', 'session_ended') THEN turn_last_event_id ELSE NEW.event_id END,
    turn_last_at = CASE WHEN NEW.kind IN ('session_started', 'session_ended') THEN turn_last_at ELSE NEW.at END,
    call_seq = call_seq + (NEW.kind = 'tool_call_started'),
    failure_count = failure_count + (NEW.kind = 'turn_failed')
      + (NEW.kind IN ('tool_call_finished', 'tool_call_failed')
         AND coalesce(NEW.outcome_status, CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END)
             IN ('failure', 'denied')),
    ev_prev_head = head,
    head = coalesce(NEW.head, head),
    -- pairing: 1. an open call with the same provider call id; 2. FIFO over open calls of the
    -- same (agent, tool name), where an end carrying a call id may only take a start without one;
    -- 3. none: the end is a complete call of its own (end_only).
    ev_call_id = CASE
        WHEN NEW.kind = 'tool_call_started' THEN 'tc_' || NEW.uid
        WHEN NEW.kind IN ('tool_call_finished', 'tool_call_failed') THEN coalesce(
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
        END
  WHERE session_id = NEW.gsid;
  UPDATE session_facts SET call_seq = call_seq + 1
  WHERE session_id = NEW.gsid AND NEW.kind IN ('tool_call_finished', 'tool_call_failed')
    AND ev_call_id = 'tc_' || NEW.uid;
  INSERT INTO session_agents (session_id, agent_id, ord, first_key)
    SELECT NEW.gsid, NEW.agent_id, (SELECT count(*) FROM session_agents WHERE session_id = NEW.gsid), NEW.ekey
    WHERE NEW.agent_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM session_agents WHERE session_id = NEW.gsid AND agent_id = NEW.agent_id);

  -- E. Turns: a human prompt opens one (index 1, 2, …); activity before any prompt opens the
  --    implicit turn 0; stops end the current turn (a later stop moves the end). Every event but
  --    session start/end is attributed to the current turn (session_facts.turn_last_*, above).
  INSERT INTO turn_prompts (turn_id, session_id, objective)
    SELECT 'trn_' || NEW.uid, NEW.gsid, NEW.objective WHERE NEW.human_prompt = 1 AND NEW.objective IS NOT NULL;
  INSERT OR IGNORE INTO turn_facts (turn_id, session_id, turn_index, started_at, status,
      prompt_event_id, prompt_chars, first_event_id, last_event_id, last_at, start_key)
    SELECT s.cur_turn_id, NEW.gsid,
           CASE WHEN NEW.human_prompt = 1 THEN s.next_turn_index - 1 ELSE 0 END,
           NEW.at, 'in_progress',
           CASE WHEN NEW.human_prompt = 1 THEN NEW.event_id END,
           CASE WHEN NEW.human_prompt = 1 THEN NEW.prompt_chars END,
           NEW.event_id, NEW.event_id, NEW.at, NEW.ekey
    FROM session_facts s
    WHERE s.session_id = NEW.gsid
      AND (NEW.human_prompt = 1
           OR (s.prompt_count = 0 AND NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed',
                                                   'turn_stopped', 'turn_failed', 'permission_denied')));
  UPDATE turn_facts SET
    stop_event_id = NEW.event_id,
    ended_at = NEW.at,
    status = CASE NEW.kind WHEN 'turn_stopped' THEN 'completed' ELSE 'failed' END,
    failure_class = CASE NEW.kind WHEN 'turn_stopped' THEN NULL ELSE NEW.turn_class END
  WHERE turn_id = (SELECT cur_turn_id FROM session_facts
                   WHERE session_id = NEW.gsid AND NEW.kind IN ('turn_stopped', 'turn_failed'));

  -- F. A new call (a start, or an end nothing was waiting for) joins its agent's current attempt
  --    in the turn, unless that attempt has failed and this call began strictly after the
  --    failure landed: then it opens the agent's next attempt.
  INSERT INTO attempt_facts (group_key, attempt_id, session_id, turn_id, turn_index, agent_id,
      agent_key, group_no, attempt_index, first_at, first_event_id)
    SELECT s.ev_call_id, 'att_' || NEW.uid, NEW.gsid, s.cur_turn_id, t.turn_index, NEW.agent_id, NEW.akey,
           (SELECT count(*) FROM attempt_facts a WHERE a.turn_id = s.cur_turn_id AND a.agent_key = NEW.akey),
           (SELECT count(*) FROM attempt_facts a WHERE a.turn_id = s.cur_turn_id),
           NEW.at, NEW.event_id
    FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
    WHERE s.session_id = NEW.gsid AND s.ev_call_id = 'tc_' || NEW.uid
      AND NOT EXISTS (SELECT 1 FROM attempt_facts a
                      WHERE a.turn_id = s.cur_turn_id AND a.agent_key = NEW.akey
                        AND (a.boundary IS NULL OR NEW.at <= a.boundary));
  INSERT INTO tool_call_facts (tool_call_id, session_id, turn_id, agent_id, agent_key, tool_name,
      tool_category, provider_call_id, started_at, finished_at, first_at, duration_ms,
      outcome_status, outcome_class, exit_code, path_relative, paths, command_category,
      git_subcommand, lines_added, lines_removed, tests_failed, pairing, start_event_id,
      end_event_id, call_ord, attempt_key)
    SELECT s.ev_call_id, NEW.gsid, s.cur_turn_id, NEW.agent_id, NEW.akey, NEW.tool_name,
           NEW.tool_category, NEW.call_id,
           CASE WHEN NEW.kind = 'tool_call_started' THEN NEW.at END,
           CASE WHEN NEW.kind <> 'tool_call_started' THEN NEW.at END,
           NEW.at,
           CASE WHEN NEW.kind <> 'tool_call_started' THEN NEW.duration_ms END,
           CASE WHEN NEW.kind <> 'tool_call_started' THEN coalesce(NEW.outcome_status,
                CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END) END,
           CASE WHEN NEW.kind <> 'tool_call_started' THEN NEW.outcome_class END,
           CASE WHEN NEW.kind <> 'tool_call_started' THEN NEW.exit_code END,
           NEW.path_relative, NEW.paths, NEW.command_category, NEW.git_subcommand,
           NEW.lines_added, NEW.lines_removed, NEW.tests_failed,
           CASE WHEN NEW.kind = 'tool_call_started' THEN 'in_flight' ELSE 'end_only' END,
           CASE WHEN NEW.kind = 'tool_call_started' THEN NEW.event_id END,
           CASE WHEN NEW.kind <> 'tool_call_started' THEN NEW.event_id END,
           s.call_seq,
           (SELECT a.group_key FROM attempt_facts a WHERE a.turn_id = s.cur_turn_id AND a.agent_key = NEW.akey
             ORDER BY a.group_no DESC LIMIT 1)
    FROM session_facts s
    WHERE s.session_id = NEW.gsid AND s.ev_call_id = 'tc_' || NEW.uid;

  -- G. An end closes its open call.
  UPDATE tool_call_facts SET
    finished_at = NEW.at,
    end_event_id = NEW.event_id,
    outcome_status = coalesce(NEW.outcome_status, CASE NEW.kind WHEN 'tool_call_failed' THEN 'failure' ELSE 'success' END),
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
    pairing = CASE WHEN NEW.call_id IS NOT NULL AND provider_call_id = NEW.call_id THEN 'call_id' ELSE 'fifo' END,
    provider_call_id = coalesce(provider_call_id, NEW.call_id)
  WHERE tool_call_id = (SELECT ev_call_id FROM session_facts WHERE session_id = NEW.gsid)
    AND NEW.kind IN ('tool_call_finished', 'tool_call_failed')
    AND end_event_id IS NULL;

  -- H. The first failure observed in an attempt ends it (and re-anchors its id on the failing
  --    call's end event): a failed or denied edit/write/notebook; a failed test or build (or one
  --    that exited 0 reporting failing tests); a failed shell command that was denied or came
  --    after an edit in the attempt. A failing read, search or exploratory command is a failed
  --    call, not a failed attempt.
  UPDATE attempt_facts SET
    failing_call_id = (SELECT ev_call_id FROM session_facts WHERE session_id = NEW.gsid),
    fail_event_id = NEW.event_id,
    boundary = NEW.at,
    attempt_id = 'att_' || NEW.uid
  WHERE failing_call_id IS NULL
    AND group_key = (
      SELECT c.attempt_key FROM session_facts s JOIN tool_call_facts c ON c.tool_call_id = s.ev_call_id
      WHERE s.session_id = NEW.gsid AND NEW.kind IN ('tool_call_finished', 'tool_call_failed')
        AND ((c.outcome_status IN ('failure', 'denied')
              AND (c.tool_category IN ('file_write', 'file_edit', 'notebook')
                   OR (c.tool_category = 'shell'
                       AND (c.command_category IN ('test', 'build') OR c.tests_failed IS NOT NULL
                            OR c.outcome_status = 'denied'
                            OR EXISTS (SELECT 1 FROM tool_call_facts p
                                       WHERE p.attempt_key = c.attempt_key AND p.call_ord < c.call_ord
                                         AND p.tool_category IN ('file_write', 'file_edit', 'notebook'))))))
             OR (c.tool_category = 'shell' AND c.tests_failed > 0)));

  -- J. Commits: a successful `git commit` call is a commit; its sha is the HEAD its own end event
  --    reported (end_event), else the first later HEAD change of the session moving away from the
  --    HEAD it started from (next_head, each change consumed once), else unresolved.
  INSERT INTO commit_facts (commit_id, session_id, tool_call_id, branch, previous_sha, sha,
      linkage, committed_at, end_event_id, head_event_id, end_key)
    SELECT 'cmt_' || substr(c.tool_call_id, 4), NEW.gsid, c.tool_call_id, NEW.branch, s.ev_prev_head,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN NEW.head END,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN 'end_event' ELSE 'unresolved' END,
           NEW.at, NEW.event_id,
           CASE WHEN NEW.head IS NOT NULL AND NEW.head IS NOT s.ev_prev_head THEN NEW.event_id END,
           NEW.ekey
    FROM session_facts s JOIN tool_call_facts c ON c.tool_call_id = s.ev_call_id
    WHERE s.session_id = NEW.gsid AND NEW.kind IN ('tool_call_finished', 'tool_call_failed')
      AND c.git_subcommand = 'commit' AND c.outcome_status = 'success';
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

  -- K. Waits raised: permission requests and blocking notifications. An idle prompt while no
  --    turn is running is kept but does not block.
  INSERT INTO signal_facts (event_id, session_id, turn_id, raised_at, agent_id, kind, signal_type, blocking)
    SELECT NEW.event_id, NEW.gsid, s.cur_turn_id, NEW.at, NEW.agent_id, NEW.kind, NEW.ntype,
           CASE WHEN NEW.kind = 'notification' AND NEW.ntype = 'idle_prompt'
                 AND NOT EXISTS (SELECT 1 FROM turn_facts t WHERE t.turn_id = s.cur_turn_id AND t.ended_at IS NULL)
                THEN 0 ELSE 1 END
    FROM session_facts s
    WHERE s.session_id = NEW.gsid
      AND (NEW.kind = 'permission_requested'
           OR (NEW.kind = 'notification' AND NEW.ntype IN ('permission_prompt', 'idle_prompt', 'agent_needs_input')));

  -- L. Call events of an attempt a Retraction names leave the projections too (the attempt may
  --    only now carry the retracted id: its failing end just arrived, or a call just joined).
  --    project_mark_retracted_calls does it; the guarded UPDATE matches no row unless some
  --    attempt is retracted at all.
  UPDATE projection_control SET mark_session = NEW.gsid
  WHERE id = (SELECT 1 WHERE NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
                         AND EXISTS (SELECT 1 FROM retraction_facts WHERE target_type = 'attempt'));
END;

-- Re-derive one projection session: restore the checkpoint taken before its current turn's
-- prompt when `from_key` (the earliest event that changed) sorts after that prompt, else drop
-- the whole session; then re-apply its events from there in sort order.
-- The checkpoint a human prompt takes before it is applied (see B above): the session row, its
-- closing turn, its open calls and the attempts holding them, its pending signals and
-- unresolved commits — everything an event after the prompt can still change.
CREATE TRIGGER project_checkpoint AFTER UPDATE OF snap_key ON snap_points
BEGIN
  DELETE FROM snap_sessions WHERE session_id = NEW.session_id;
  DELETE FROM snap_turns WHERE session_id = NEW.session_id;
  DELETE FROM snap_calls WHERE session_id = NEW.session_id;
  DELETE FROM snap_attempts WHERE session_id = NEW.session_id;
  DELETE FROM snap_signals WHERE session_id = NEW.session_id;
  DELETE FROM snap_commits WHERE session_id = NEW.session_id;
  INSERT INTO snap_sessions SELECT * FROM session_facts WHERE session_id = NEW.session_id;
  INSERT INTO snap_turns SELECT t.* FROM session_facts s JOIN turn_facts t ON t.turn_id = s.cur_turn_id
    WHERE s.session_id = NEW.session_id;
  INSERT INTO snap_calls SELECT * FROM tool_call_facts WHERE session_id = NEW.session_id AND end_event_id IS NULL;
  INSERT INTO snap_attempts SELECT a.* FROM attempt_facts a
    WHERE a.group_key IN (SELECT c.attempt_key FROM snap_calls c WHERE c.session_id = NEW.session_id);
  INSERT INTO snap_signals SELECT * FROM signal_facts WHERE session_id = NEW.session_id AND cleared_at IS NULL;
  INSERT INTO snap_commits SELECT * FROM commit_facts WHERE session_id = NEW.session_id AND linkage = 'unresolved';
END;

-- Marks the start/end events of every call of the attempt that holds the call just applied in
-- session NEW.mark_session, when a Retraction names that attempt (see L above).
CREATE TRIGGER project_mark_retracted_calls AFTER UPDATE OF mark_session ON projection_control
WHEN NEW.mark_session IS NOT NULL
BEGIN
  UPDATE events SET retracted = 1
  WHERE retracted = 0
    AND event_id IN (
      SELECT c.start_event_id FROM tool_call_facts c
      WHERE c.attempt_key = (SELECT a.group_key FROM session_facts s
                             JOIN tool_call_facts k ON k.tool_call_id = s.ev_call_id
                             JOIN attempt_facts a ON a.group_key = k.attempt_key
                             WHERE s.session_id = NEW.mark_session
                               AND EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = a.attempt_id
                                           AND r.target_type = 'attempt'))
      UNION ALL
      SELECT c.end_event_id FROM tool_call_facts c
      WHERE c.attempt_key = (SELECT a.group_key FROM session_facts s
                             JOIN tool_call_facts k ON k.tool_call_id = s.ev_call_id
                             JOIN attempt_facts a ON a.group_key = k.attempt_key
                             WHERE s.session_id = NEW.mark_session
                               AND EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = a.attempt_id
                                           AND r.target_type = 'attempt')));
END;

-- A request is acted on only when the session has applied something at or after from_key
-- (from_key '' = rebuild the whole session, e.g. after a paused bulk import). Written with
-- INSERT OR REPLACE on rid = 1: the table holds at most the last request.
CREATE TABLE replay_requests (
  rid            INTEGER PRIMARY KEY,
  session_id     TEXT NOT NULL,
  raw_session_id TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  from_key       TEXT NOT NULL
);

CREATE TRIGGER project_replay_session AFTER INSERT ON replay_requests
WHEN (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND (NEW.from_key = ''
      OR EXISTS (SELECT 1 FROM session_facts WHERE session_id = NEW.session_id AND last_key >= NEW.from_key))
BEGIN
  -- a checkpoint at or after from_key is useless: drop it, which selects the full replay
  DELETE FROM snap_points WHERE session_id = NEW.session_id AND snap_key >= NEW.from_key;

  -- full replay: nothing of the session survives
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
  DELETE FROM tool_call_facts WHERE attempt_key IN (SELECT group_key FROM attempt_facts WHERE session_id = NEW.session_id)
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM session_agents WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM turn_prompts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM attempt_facts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM signal_facts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM commit_facts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM turn_facts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM session_facts WHERE session_id = NEW.session_id
    AND NOT EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);

  -- turn replay: drop what the current turn created, put back what it changed
  DELETE FROM tool_call_facts WHERE attempt_key IN (
    SELECT a.group_key FROM turn_facts t JOIN snap_points p ON p.session_id = t.session_id
      JOIN attempt_facts a ON a.turn_id = t.turn_id
    WHERE t.session_id = NEW.session_id AND t.start_key >= p.snap_key);
  DELETE FROM turn_prompts WHERE turn_id IN (
    SELECT t.turn_id FROM turn_facts t JOIN snap_points p ON p.session_id = t.session_id
    WHERE t.session_id = NEW.session_id AND t.start_key >= p.snap_key);
  DELETE FROM session_agents WHERE session_id = NEW.session_id
    AND first_key >= (SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM attempt_facts WHERE turn_id IN (
    SELECT t.turn_id FROM turn_facts t JOIN snap_points p ON p.session_id = t.session_id
    WHERE t.session_id = NEW.session_id AND t.start_key >= p.snap_key);
  DELETE FROM signal_facts WHERE session_id = NEW.session_id AND turn_id IN (
    SELECT t.turn_id FROM turn_facts t JOIN snap_points p ON p.session_id = t.session_id
    WHERE t.session_id = NEW.session_id AND t.start_key >= p.snap_key);
  DELETE FROM commit_facts WHERE session_id = NEW.session_id
    AND end_key >= (SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM turn_facts WHERE session_id = NEW.session_id
    AND start_key >= (SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id);
  DELETE FROM session_facts WHERE session_id = NEW.session_id
    AND EXISTS (SELECT 1 FROM snap_points WHERE session_id = NEW.session_id);
  INSERT INTO session_facts SELECT * FROM snap_sessions WHERE session_id = NEW.session_id;
  DELETE FROM turn_facts WHERE turn_id IN (SELECT turn_id FROM snap_turns WHERE session_id = NEW.session_id);
  INSERT INTO turn_facts SELECT * FROM snap_turns WHERE session_id = NEW.session_id;
  DELETE FROM tool_call_facts WHERE tool_call_id IN (SELECT tool_call_id FROM snap_calls WHERE session_id = NEW.session_id);
  INSERT INTO tool_call_facts SELECT * FROM snap_calls WHERE session_id = NEW.session_id;
  DELETE FROM attempt_facts WHERE group_key IN (SELECT group_key FROM snap_attempts WHERE session_id = NEW.session_id);
  INSERT INTO attempt_facts SELECT * FROM snap_attempts WHERE session_id = NEW.session_id;
  DELETE FROM signal_facts WHERE event_id IN (SELECT event_id FROM snap_signals WHERE session_id = NEW.session_id);
  INSERT INTO signal_facts SELECT * FROM snap_signals WHERE session_id = NEW.session_id;
  DELETE FROM commit_facts WHERE commit_id IN (SELECT commit_id FROM snap_commits WHERE session_id = NEW.session_id);
  INSERT INTO commit_facts SELECT * FROM snap_commits WHERE session_id = NEW.session_id;

  -- re-apply, in sort order, every fact event of the session from the checkpoint (or all)
  INSERT OR REPLACE INTO project_queue
    SELECT 1, p.* FROM project_input p
    WHERE p.raw_sid = NEW.raw_session_id AND p.gsid = NEW.session_id
      AND p.kind NOT IN ('correction', 'retraction', 'capture_test') AND p.telemetry = 0
      AND p.ekey >= coalesce((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), '')
      AND p.at >= coalesce(substr((SELECT snap_key FROM snap_points WHERE session_id = NEW.session_id), 1, 27), '')
      AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event')
    ORDER BY p.ekey;

  -- events of calls in retracted attempts leave the projections (retracted only goes 0 -> 1)
  UPDATE events SET retracted = 1
  WHERE retracted = 0 AND event_id IN (
    SELECT c.start_event_id FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
      JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE r.target_type = 'attempt' AND a.session_id = NEW.session_id
    UNION ALL
    SELECT c.end_event_id FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
      JOIN tool_call_facts c ON c.attempt_key = a.group_key
    WHERE r.target_type = 'attempt' AND a.session_id = NEW.session_id);
END;

-- Every fact event: marked retracted when a Retraction already named it or its session (a
-- retracted event is never applied).
CREATE TRIGGER events_retracted_on_arrival AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction')
 AND (EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
      OR EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.session_id AND target_type = 'session'))
BEGIN
  UPDATE events SET retracted = 1 WHERE seq = NEW.seq;
END;

-- While projection is paused (bulk import) an event only notes its session.
CREATE TRIGGER events_paused AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction', 'capture_test')
 AND (SELECT paused FROM projection_control WHERE id = 1) = 1
BEGIN
  INSERT OR IGNORE INTO projection_dirty (session_id, raw_session_id, project_id)
    VALUES (CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                 THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24) ELSE NEW.session_id END,
            NEW.session_id, NEW.project_id);
END;

-- An event that sorts before something its session already applied re-derives the session.
-- Strictly before: when events_apply has already applied this event, last_key equals its key.
CREATE TRIGGER events_late AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction', 'capture_test')
 AND NOT (NEW.kind = 'unknown' AND json_extract(NEW.attrs_json, '$.source') = 'otel')
 AND (SELECT paused FROM projection_control WHERE id = 1) = 0
 AND NOT EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
 AND EXISTS (SELECT 1 FROM session_facts
             WHERE session_id = CASE WHEN NEW.provider_session_id IN ('', 'unknown')
                                     THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24)
                                     ELSE NEW.session_id END
               AND last_key > NEW.observed_at || '|' || printf('%020d|%020d|', NEW.hlc, NEW.source_seq) || NEW.event_id)
BEGIN
  INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, project_id, from_key) VALUES (
    1,
    CASE WHEN NEW.provider_session_id IN ('', 'unknown')
         THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24) ELSE NEW.session_id END,
    NEW.session_id, NEW.project_id,
    NEW.observed_at || '|' || printf('%020d|%020d|', NEW.hlc, NEW.source_seq) || NEW.event_id);
END;

-- The append path: an in-order fact event becomes one queue row (INSERT ... VALUES, computed
-- from NEW by exactly the expressions of project_input, in the same order — a test holds the two
-- lists equal) and project_apply_event applies it. A late event is left to events_late (the
-- queue trigger's WHEN sees it is not in order). Either trigger may fire first.
CREATE TRIGGER events_apply AFTER INSERT ON events
WHEN NEW.kind NOT IN ('correction', 'retraction', 'capture_test')
 AND NOT (NEW.kind = 'unknown' AND json_extract(NEW.attrs_json, '$.source') = 'otel')
 AND NOT EXISTS (SELECT 1 FROM retraction_facts WHERE target = NEW.event_id AND target_type = 'event')
BEGIN
  INSERT OR REPLACE INTO project_queue VALUES (
    1,
    NEW.seq,  -- seq
    NEW.event_id,  -- event_id
    substr(NEW.event_id, 4),  -- uid
    NEW.session_id,  -- raw_sid
    CASE WHEN NEW.provider_session_id IN ('', 'unknown')
         THEN 'ses_' || substr(NEW.session_id, 5, 19) || substr(NEW.project_id, 24)
         ELSE NEW.session_id END,  -- gsid
    NEW.observed_at || '|' || printf('%020d|%020d|', NEW.hlc, NEW.source_seq) || NEW.event_id,  -- ekey
    NEW.observed_at,  -- at
    NEW.kind,  -- kind
    NEW.provider,  -- provider
    NEW.provider_session_id,  -- psid
    NEW.project_id,  -- project_id
    NEW.project_name,  -- project_name
    NEW.head,  -- head
    NEW.branch,  -- branch
    NEW.agent_id,  -- agent_id
    coalesce(NEW.agent_id, ''),  -- akey
    NEW.tool_name,  -- tool_name
    NEW.tool_category,  -- tool_category
    NEW.tool_call_id,  -- call_id
    coalesce(NEW.paths_json, '[]'),  -- paths
    NEW.path_relative,  -- path_relative
    NEW.outcome_status,  -- outcome_status
    NEW.outcome_class,  -- outcome_class
    NEW.exit_code,  -- exit_code
    NEW.duration_ms,  -- duration_ms
    CASE WHEN NEW.kind = 'prompt_submitted' AND NOT (
           substr(ltrim(coalesce(json_extract(NEW.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 19) = '<task-notification>'
        OR substr(ltrim(coalesce(json_extract(NEW.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 17) = '<system-reminder>'
        OR substr(ltrim(coalesce(json_extract(NEW.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 22) IN ('<local-command-stdout>', '<local-command-caveat>')
        OR substr(ltrim(coalesce(json_extract(NEW.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 13) IN ('<bash-stdout>', '<bash-stderr>')
        OR substr(ltrim(coalesce(json_extract(NEW.content_json, '$.prompt'), ''), ' ' || char(9, 10, 13)), 1, 20) = '[SYSTEM NOTIFICATION')
         THEN 1 ELSE 0 END,  -- human_prompt
    CASE WHEN NEW.kind = 'prompt_submitted' AND json_type(NEW.content_json, '$.prompt') = 'text'
         THEN json_extract(NEW.content_json, '$.prompt') END,  -- objective
    CASE WHEN NEW.kind = 'prompt_submitted' THEN coalesce(
           CASE WHEN json_type(NEW.attrs_json, '$.prompt_chars') = 'integer' THEN json_extract(NEW.attrs_json, '$.prompt_chars') END,
           CASE WHEN json_type(NEW.attrs_json, '$.prompt_length') = 'integer' THEN json_extract(NEW.attrs_json, '$.prompt_length') END,
           CASE WHEN json_type(NEW.attrs_json, '$.prompt_len') = 'integer' THEN json_extract(NEW.attrs_json, '$.prompt_len') END,
           CASE WHEN json_type(NEW.content_json, '$.prompt') = 'text' THEN length(json_extract(NEW.content_json, '$.prompt')) END)
         END,  -- prompt_chars
    CASE WHEN NEW.kind = 'session_started' THEN coalesce(
           CASE WHEN json_type(NEW.attrs_json, '$.source') = 'text' THEN json_extract(NEW.attrs_json, '$.source') END,
           CASE WHEN json_type(NEW.attrs_json, '$.start_source') = 'text' THEN json_extract(NEW.attrs_json, '$.start_source') END)
         END,  -- start_source
    CASE WHEN NEW.kind = 'session_ended' THEN coalesce(
           CASE WHEN json_type(NEW.attrs_json, '$.reason') = 'text' THEN json_extract(NEW.attrs_json, '$.reason') END,
           CASE WHEN json_type(NEW.attrs_json, '$.end_reason') = 'text' THEN json_extract(NEW.attrs_json, '$.end_reason') END)
         END,  -- end_reason
    CASE WHEN NEW.kind = 'notification' THEN coalesce(
           CASE WHEN json_type(NEW.attrs_json, '$.notification_type') = 'text' THEN json_extract(NEW.attrs_json, '$.notification_type') END,
           CASE WHEN json_type(NEW.attrs_json, '$.type') = 'text' THEN json_extract(NEW.attrs_json, '$.type') END,
           CASE WHEN json_type(NEW.attrs_json, '$.matcher') = 'text' THEN json_extract(NEW.attrs_json, '$.matcher') END)
         END,  -- ntype
    CASE WHEN NEW.kind = 'turn_failed' THEN coalesce(NEW.outcome_class,
           CASE WHEN json_type(NEW.attrs_json, '$.class') = 'text' THEN json_extract(NEW.attrs_json, '$.class') END,
           CASE WHEN json_type(NEW.attrs_json, '$.failure_class') = 'text' THEN json_extract(NEW.attrs_json, '$.failure_class') END,
           CASE WHEN json_type(NEW.attrs_json, '$.reason') = 'text' THEN json_extract(NEW.attrs_json, '$.reason') END)
         END,  -- turn_class
    CASE WHEN NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
          AND json_type(NEW.attrs_json, '$.command_category') = 'text'
         THEN json_extract(NEW.attrs_json, '$.command_category') END,  -- command_category
    CASE WHEN NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
          AND json_type(NEW.attrs_json, '$.git_subcommand') = 'text'
         THEN json_extract(NEW.attrs_json, '$.git_subcommand') END,  -- git_subcommand
    CASE WHEN NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
          AND json_type(NEW.attrs_json, '$.lines_added') = 'integer'
         THEN json_extract(NEW.attrs_json, '$.lines_added') END,  -- lines_added
    CASE WHEN NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
          AND json_type(NEW.attrs_json, '$.lines_removed') = 'integer'
         THEN json_extract(NEW.attrs_json, '$.lines_removed') END,  -- lines_removed
    CASE WHEN NEW.kind IN ('tool_call_started', 'tool_call_finished', 'tool_call_failed')
          AND json_type(NEW.attrs_json, '$.tests_failed') = 'integer'
         THEN json_extract(NEW.attrs_json, '$.tests_failed') END,  -- tests_failed
    CASE WHEN NEW.kind = 'unknown' AND json_extract(NEW.attrs_json, '$.source') = 'otel' THEN 1 ELSE 0 END  -- telemetry
  );
END;
