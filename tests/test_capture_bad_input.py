"""Hostile and broken hook input (issue 3 §5): whatever arrives on stdin, `attempt capture`
exits 0, prints nothing (Gemini CLI: exactly its JSON ack), writes nothing to stderr, and
stores exactly one event — `unknown` with the right `attrs.capture_gap` where nothing better
fits — in a chain `attempt verify` accepts. Real subprocesses, real files."""

import json
import os

import pytest
from test_capture import PROMPT, as_bytes, assert_silent, capture, spool_files, stored, tool_payload, verify_ok

STDIN_CAP = 16 * 1024 * 1024


def one_event(db, home):
    rows = stored(db)
    assert len(rows) == 1, rows
    assert spool_files(db, home) == []
    verify_ok(db, 1)
    return rows[0]


def gap_event(db, home, gap, provider="claude_code", name="unknown"):
    row = one_event(db, home)
    assert row["kind"] == "unknown"
    assert row["provider"] == provider
    assert row["provider_event_name"] == name
    assert row["attrs"]["capture_gap"] == gap
    assert row["content"] is None
    return row


@pytest.mark.parametrize("data, gap", [
    (b'{"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash",', "invalid_json"),
    (b"NaN", "invalid_json"),
], ids=["truncated_object", "nan"])
def test_not_json(db, home, data, gap):
    assert_silent(capture(db, "claude-code", data))
    row = gap_event(db, home, gap)
    assert row["attrs"]["x_attemptdb_payload_bytes"] == len(data)
    assert row["raw"] is None  # nothing readable to keep, and the unreadable bytes are not kept


def test_a_json_array(db, home):
    data = b'[{"hook_event_name": "PostToolUse", "session_id": "s1"}]'
    assert_silent(capture(db, "claude-code", data))
    row = gap_event(db, home, "payload_not_object")
    assert row["attrs"]["x_attemptdb_payload_bytes"] == len(data)
    assert row["provider_session_id"] == "unknown"


@pytest.mark.parametrize("data", [
    bytes(range(256)) * 4,
    b"\xff\xfe\x00\x00" + os.urandom(4096),
    b"\x1f\x8b\x08\x00" + b"\x00" * 64,  # a gzip header
], ids=["all_bytes", "utf32_bom_random", "gzip"])
def test_binary_garbage(db, home, data):
    assert_silent(capture(db, "claude-code", data))
    row = gap_event(db, home, "invalid_json")
    assert row["attrs"]["x_attemptdb_payload_bytes"] == len(data)


@pytest.mark.parametrize("data", [b"", b" \n\t\r\n"], ids=["empty", "whitespace"])
def test_empty_stdin(db, home, data):
    assert_silent(capture(db, "claude-code", data))
    row = gap_event(db, home, "empty_payload")
    assert row["attrs"]["x_attemptdb_payload_bytes"] == len(data)


@pytest.mark.slow
def test_a_20_mb_payload_is_truncated_at_the_cap(db, home):
    filler = b"CANARY_BIG_PAYLOAD_5d1e "
    head = b'{"hook_event_name": "UserPromptSubmit", "session_id": "s-big", "prompt": "'
    data = head + filler * ((20 * 1024 * 1024) // len(filler)) + b'"}'
    assert len(data) > 20 * 1024 * 1024 - 64
    assert_silent(capture(db, "claude-code", data, timeout=120))
    row = gap_event(db, home, "payload_truncated")
    assert row["attrs"]["x_attemptdb_payload_bytes"] == STDIN_CAP
    assert row["raw"] is None
    # nothing of the payload reached the file (the truncated text is not kept anywhere)
    for path in (db, db + "-wal"):
        if os.path.exists(path):
            assert os.path.getsize(path) < 4 * 1024 * 1024
            with open(path, "rb") as f:
                assert filler.strip() not in f.read()


def test_wrong_typed_fields(db, home):
    payload = {"hook_event_name": "PreToolUse", "session_id": 123, "cwd": 5, "tool_name": ["Bash"],
               "tool_input": "pytest -q", "tool_use_id": 7, "permission_mode": {"a": 1},
               "transcript_path": False, "model": 3.5}
    assert_silent(capture(db, "claude-code", payload))
    row = one_event(db, home)
    # the event name was readable, so the event keeps its kind; the session id was not
    assert row["provider_event_name"] == "PreToolUse"
    assert row["kind"] == "tool_call_started"
    assert row["provider_session_id"] == "unknown"
    assert row["attrs"]["capture_gap"] == "missing_session_id"
    assert "adapter_error" not in json.dumps(row["attrs"])


@pytest.mark.parametrize("name", [None, "", "   ", 42], ids=["absent", "empty", "blank", "number"])
def test_no_hook_event_name(db, home, name):
    payload = {k: v for k, v in PROMPT.items() if k != "hook_event_name"}
    if name is not None:
        payload["hook_event_name"] = name
    assert_silent(capture(db, "claude-code", payload))
    row = gap_event(db, home, "missing_event_name")
    assert row["provider_session_id"] == PROMPT["session_id"]


@pytest.mark.parametrize("session", [None, "", "  "], ids=["absent", "empty", "blank"])
def test_no_session_id(db, home, session):
    payload = tool_payload()
    del payload["session_id"]
    if session is not None:
        payload["session_id"] = session
    assert_silent(capture(db, "claude-code", payload))
    row = one_event(db, home)
    assert row["kind"] == "tool_call_finished"  # everything else was readable
    assert row["provider_session_id"] == "unknown"
    assert row["attrs"]["capture_gap"] == "missing_session_id"


@pytest.mark.parametrize("provider, slug", [
    ("frobnicator", "frobnicator"),
    ("Some Agent-2.0", "some_agent_2_0"),
    ("../../etc/passwd", "etcpasswd"),
    ("ǝɯoɥ\u202e", "o"),
    ("\u202e∅", "unknown"),
], ids=["plain", "spaces", "path", "non_ascii", "nothing_left"])
def test_an_unknown_provider_name(db, home, provider, slug):
    assert_silent(capture(db, provider, PROMPT))
    row = gap_event(db, home, "unsupported_provider", provider=slug, name="UserPromptSubmit")
    assert row["provider_session_id"] == PROMPT["session_id"]


def test_no_provider_at_all(db, home):
    assert_silent(capture(db, None, PROMPT))
    gap_event(db, home, "unsupported_provider", provider="unknown", name="UserPromptSubmit")


def test_unknown_flags_and_a_missing_flag_value_are_ignored(db, home):
    assert_silent(capture(db, "claude-code", PROMPT, "--frobnicate", "--hook-version"))
    row = one_event(db, home)
    assert row["kind"] == "prompt_submitted"


# --- what the agent reads on stdout ---------------------------------------------------------

GEMINI_PROMPT = {"session_id": "g-1", "cwd": "/tmp", "hook_event_name": "BeforeAgent", "prompt": "hello"}


@pytest.mark.parametrize("provider", ["gemini-cli", "gemini_cli", "gemini"])
@pytest.mark.parametrize("payload", [GEMINI_PROMPT, b"{oops", b""], ids=["good", "not_json", "empty"])
def test_gemini_cli_gets_exactly_its_json_ack(db, home, provider, payload):
    p = capture(db, provider, payload)
    assert p.returncode == 0 and p.stderr == b""
    assert json.loads(p.stdout) == {"decision": "allow"}
    assert p.stdout.strip() == b'{"decision":"allow"}' and p.stdout.count(b"\n") <= 1
    row = one_event(db, home)
    assert row["provider"] == "gemini_cli"
    assert row["kind"] == ("prompt_submitted" if isinstance(payload, dict) else "unknown")


def test_gemini_cli_ack_even_when_the_event_is_spooled(db, home):
    os.mkdir(db)  # the database path is a directory: nothing can be stored right now
    p = capture(db, "gemini-cli", GEMINI_PROMPT)
    assert p.returncode == 0 and p.stderr == b""
    assert json.loads(p.stdout) == {"decision": "allow"}
    assert len(spool_files(db, home)) == 1


@pytest.mark.parametrize("provider, payload", [
    ("claude-code", PROMPT),
    ("claude-code", b"{oops"),
    ("codex", PROMPT),
    ("cursor", {"conversation_id": "c-1", "hook_event_name": "beforeSubmitPrompt", "prompt": "hi",
                "workspace_roots": ["/tmp"]}),
    ("cursor", b""),
    ("frobnicator", PROMPT),
], ids=["claude", "claude_bad", "codex", "cursor", "cursor_empty", "unknown"])
def test_every_other_provider_prints_nothing(db, home, provider, payload):
    assert_silent(capture(db, provider, as_bytes(payload)))
    assert len(stored(db)) == 1


def test_a_database_path_that_is_not_utf8_spools_the_event(tmp_path, home):
    """SQLite takes UTF-8 file names only. The hook still exits 0 silently and the event waits
    in the spool beside that path; no stray empty file is left where the database would be."""
    db = os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff.db")
    assert_silent(capture(db, "claude-code", tool_payload("toolu_not_utf8")))
    assert not os.path.exists(db)
    assert len(spool_files(db, home)) == 1
