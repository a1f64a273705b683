"""A Codex subagent's rollout opens with its parent's history copied (spec/transcripts.md, Codex
rollouts): however long that history is, its calls stay the parent's, and importing the
parent's own rollout afterwards stores every one of them as the parent's."""

import json
import os

import pytest

from attemptdb.cli.main import run
from attemptdb.store.database import Store

PARENT = "44444444-4444-4444-8444-444444444444"
SUB = "55555555-5555-4555-8555-555555555555"
INHERITED = 300  # parent call pairs: far past the importer's 256-line peek


def _pairs(n):
    """n parent function_call / function_call_output pairs of turn-p001."""
    out = []
    for i in range(n):
        t = f"2026-08-30T07:5{i // 100}:{i % 60:02d}.{i % 1000:03d}Z"
        out.append({"timestamp": t, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["ls", str(i)]}),
            "call_id": f"call_par{i:04d}"}})
        out.append({"timestamp": t, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"call_par{i:04d}", "output": "Process exited with code 0\n"}})
    return out


def _numbered(entries):
    for i, e in enumerate(entries):
        e["ordinal"] = i
    return entries


def subagent_rollout(anchor, path, *, start_ordinal=True):
    """The anchor's subagent thread with INHERITED parent call pairs inserted before its spawn
    call (ordinal 4), ordinals renumbered; its meta's `subagent_history_start_ordinal` moved
    with its own part, or dropped."""
    with open(os.path.join(anchor, "fixtures", "transcripts", "codex", "subagent_thread.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    own_at = lines[0]["payload"]["subagent_history_start_ordinal"]
    entries = _numbered(lines[:4] + _pairs(INHERITED) + lines[4:])
    meta = entries[0]["payload"]
    if start_ordinal:
        meta["subagent_history_start_ordinal"] = own_at + 2 * INHERITED
        assert entries[own_at + 2 * INHERITED]["ordinal"] == own_at + 2 * INHERITED
    else:
        del meta["subagent_history_start_ordinal"]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return str(path)


def parent_rollout(path):
    """The parent's own rollout: its turn with the same calls and the spawn call."""
    entries = [
        {"timestamp": "2026-08-30T07:50:00.000Z", "type": "session_meta", "payload": {
            "id": PARENT, "session_id": PARENT, "cwd": "/home/dev/example/project", "originator": "codex-tui",
            "cli_version": "0.154.0", "source": "cli", "thread_source": "user"}},
        {"timestamp": "2026-08-30T07:50:00.001Z", "type": "event_msg", "payload": {
            "type": "task_started", "turn_id": "turn-p001"}},
        {"timestamp": "2026-08-30T07:50:00.021Z", "type": "event_msg", "payload": {
            "type": "item_completed", "thread_id": PARENT, "turn_id": "turn-p001", "item": {
                "type": "UserMessage", "id": "user-p001", "content": [{"type": "text", "text": "explore"}]}}},
        *_pairs(INHERITED),
        {"timestamp": "2026-08-30T08:00:00.321Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "spawn_agent", "arguments": "{}", "call_id": "call_sp99"}},
        {"timestamp": "2026-08-30T08:00:02.000Z", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_sp99", "output": "done"}},
        {"timestamp": "2026-08-30T08:00:03.000Z", "type": "event_msg", "payload": {
            "type": "task_complete", "turn_id": "turn-p001", "duration_ms": 600000}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in _numbered(entries)))
    return str(path)


def calls_by_agent(db):
    st = Store.open(db, readonly=True)
    try:
        return dict(st.conn.execute(
            "SELECT coalesce(provider_agent_id, 'main'), count(*) FROM events WHERE kind = 'tool_call_started' "
            "GROUP BY 1").fetchall())
    finally:
        st.close()


@pytest.mark.parametrize("start_ordinal", [True, False], ids=["start_ordinal", "thread_items"])
def test_a_long_parent_history_stays_the_parents(anchor, db, tmp_path, capsys, start_ordinal):
    sub = subagent_rollout(anchor, tmp_path / "rollout-sub.jsonl", start_ordinal=start_ordinal)
    parent = parent_rollout(tmp_path / "rollout-parent.jsonl")
    for path in (sub, parent):  # the subagent's first: its copy of the parent's calls must not shadow them
        capsys.readouterr()
        assert run(["import", "codex", path, "--db", db, "--json"]) == 0, capsys.readouterr().err
    assert calls_by_agent(db) == {SUB: 1, "main": INHERITED + 1}
    st = Store.open(db, readonly=True)
    try:
        sub_prompts = st.conn.execute("SELECT content_json ->> '$.prompt' FROM events WHERE kind = 'prompt_submitted' "
                                      "AND provider_agent_id = ?", (SUB,)).fetchall()
        sub_calls = st.conn.execute("SELECT DISTINCT tool_call_id FROM events WHERE provider_agent_id = ? "
                                    "AND tool_call_id IS NOT NULL", (SUB,)).fetchall()
    finally:
        st.close()
    assert sub_prompts == [("CANARY_SUBAGENT_TASK list the modules",)]
    assert sub_calls == [("exec-sss0001",)]
    assert run(["verify", "--db", db]) == 0
