-- 0003: the tables a fact event is applied through (spec/projections.md §1-§2): the one-row
-- queue and the replay requests. The triggers on them are sql/20_apply.sql.

-- The event being applied (qid = 1, written with INSERT OR REPLACE: the table holds one row).

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
  telemetry,
  in_order,
  go_prepare,
  go_start,
  go_end,
  go_prompt,
  go_other,
  go_attempt,
  go_end_only,
  go_start_more,
  go_judge
);

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
