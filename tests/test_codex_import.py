"""`attempt import codex` (spec/transcripts.md): the anchor's three Codex rollouts (classic and
modern encodings, a subagent thread). The anchor has no goldens for them, so these tests hold
the importer to the reference's rules: hook ids for calls, outcomes, what is never stored."""

import json
import os
import shutil

from attemptdb.cli.main import run
from attemptdb.model import ids
from attemptdb.store.database import Store


def rollouts(anchor):
    return os.path.join(anchor, "fixtures", "transcripts", "codex")


def imported(capsys, *args):
    capsys.readouterr()
    code = run(["import", "codex", *args, "--json", "--finished"])  # the anchor's files may be new
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def rows(db, sql, params=()):
    st = Store.open(db, readonly=True)
    try:
        return st.conn.execute(sql, params).fetchall()
    finally:
        st.close()


def test_the_three_rollouts(anchor, db, capsys):
    rep = imported(capsys, rollouts(anchor), "--db", db)
    assert rep["files"] == 3 and rep["sessions"] == 3 and rep["accepted"] == rep["events"] > 50
    assert imported(capsys, rollouts(anchor), "--db", db)["duplicates"] == rep["accepted"]  # idempotent
    assert run(["verify", "--db", db]) == 0
    assert run(["reproject", "--check", "--db", db]) == 0
    kinds = dict(rows(db, "SELECT kind, count(*) FROM events GROUP BY kind"))
    assert kinds["session_started"] == 2 and kinds["subagent_started"] == 1 and kinds["subagent_stopped"] == 1
    assert kinds["prompt_submitted"] == 5 and kinds["compaction_finished"] == 2
    # modern: the failing test run (exit 101) then the passing one; an MCP call that timed out
    assert rows(db, "SELECT exit_code, outcome_class FROM events WHERE tool_call_id = 'exec-aaa0001' "
                    "AND kind = 'tool_call_failed'") == [(101, "nonzero_exit")]
    assert rows(db, "SELECT outcome_status FROM tool_calls WHERE tool_name = 'mcp__docs__fetch'") == [("failure",)]
    # turns: one stopped, one interrupted, one failed on the usage limit
    modern = rows(db, "SELECT session_id FROM events WHERE provider_session_id = ?",
                  ("22222222-2222-4222-8222-222222222222",))[0][0]
    ends = rows(db, "SELECT kind, outcome_status, outcome_class, duration_ms FROM events WHERE session_id = ? "
                    "AND kind IN ('turn_stopped', 'turn_failed') ORDER BY observed_at", (modern,))
    assert ends == [("turn_stopped", None, None, 24000), ("turn_failed", "cancelled", "interrupted", 1200),
                    ("turn_failed", "failure", "usage_limit_exceeded", 900)]
    # classic: the build that failed with exit code 1, parsed from the tool output
    assert rows(db, "SELECT kind, exit_code FROM events WHERE tool_call_id = 'call_ec02' ORDER BY seq") == \
        [("tool_call_started", None), ("tool_call_failed", 1)]


def test_tool_calls_take_the_hooks_ids(anchor, db, capsys):
    imported(capsys, rollouts(anchor), "--db", db)
    psid = "33333333-3333-4333-8333-333333333333"
    for kind in ("tool_call_started", "tool_call_finished"):
        want = "ev_" + ids.tool_event_id("codex", psid, kind, "call_ec01")
        assert rows(db, "SELECT kind FROM events WHERE event_id = ?", (want,)) == [(kind,)]


def test_what_is_never_stored(anchor, db, tmp_path, capsys):
    imported(capsys, rollouts(anchor), "--db", db)
    stored = "\n".join(r[0] or "" for r in rows(db, "SELECT content_json FROM events"))
    for never in ("CANARY_REASONING_BLOB", "CANARY_DEVELOPER_CONTEXT", "CANARY_BASE_INSTRUCTIONS",
                  "CANARY_ENVIRONMENT_CONTEXT", "CANARY_WORLD_STATE", "CANARY_INHERITED"):
        assert never not in stored, never
    prompts = [r[0] for r in rows(db, "SELECT content_json ->> '$.prompt' FROM events WHERE kind = 'prompt_submitted'")]
    assert not any("environment_context" in p for p in prompts)
    # the subagent's events are the subagent's, in its parent's session
    sub = rows(db, "SELECT DISTINCT provider_agent_id, provider_session_id FROM events WHERE parent_agent_id IS NOT NULL")
    assert sub == [("55555555-5555-4555-8555-555555555555", "44444444-4444-4444-8444-444444444444")]
    meta = str(tmp_path / "meta.db")
    assert run(["init", "--db", meta, "--capture-mode", "metadata_only"]) == 0
    imported(capsys, rollouts(anchor), "--db", meta)
    st = Store.open(meta)
    st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.close()
    with open(meta, "rb") as f:
        assert b"CANARY" not in f.read()


def test_hostile_rollouts_and_discovery(anchor, tmp_path, monkeypatch, db, capsys):
    home = tmp_path / "codex"
    day = home / "sessions" / "2026" / "08" / "28"
    day.mkdir(parents=True)
    shutil.copy(os.path.join(rollouts(anchor), "modern_turn.jsonl"), day / "rollout-a.jsonl")
    old = home / "archived_sessions"
    old.mkdir()
    shutil.copy(os.path.join(rollouts(anchor), "classic_turn.jsonl"), old / "rollout-b.jsonl")
    os.utime(old / "rollout-b.jsonl", (1, 1))  # 1970: outside --days
    (day / "rollout-bad.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"type": "session_meta", "payload": {"id": 5, "cwd": ["x"]}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "CommandExecution",
                                                                               "command": [1, None], "exit_code": "x"}}},
        {"type": "response_item", "payload": {"type": "function_call", "arguments": "{not json", "call_id": 7}},
        {"type": "response_item", "payload": {"type": "custom_tool_call_output", "output": "{\"metadata\": 5}"}},
        {"type": "event_msg", "payload": {"type": "task_complete", "error": "x", "duration_ms": -1}},
        {"type": "event_msg", "payload": "not an object"}, {"type": 5}, [], "x",
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c9",
                                              "output": "Process exited with code \u00b2\n"}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "ImageView"}}},
    ]) + "\n" + "\x00\xff binary\n")
    monkeypatch.setenv("CODEX_HOME", str(home))
    rep = imported(capsys, "--db", db)
    assert rep["files"] == 2 and rep["accepted"] > 20 and rep["skipped_lines"] >= 3
    assert imported(capsys, "--db", db, "--days", "0")["files"] == 3
    assert run(["verify", "--db", db]) == 0
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "none"))
    capsys.readouterr()
    assert run(["import", "codex", "--db", db]) == 2
    assert "error[import.nothing]" in capsys.readouterr().err
