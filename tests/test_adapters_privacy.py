"""Privacy at the adapter (reference/capture.md §2.10–§2.13, golden-harness.md §7).

Over every payload we have (the anchor's 78 when present, and our own fixtures):
- metadata_only: no content, no raw, none of the payload's canaries (verbatim or JSON-escaped),
  none of the global forbidden substrings, and no "@" anywhere in the envelope;
- every mode: attrs keys only from the adapter allowlist, attr values content-free (no canary,
  no home path, no email, short single-line strings, scalars under attrs.provider);
- raw never carries `_` keys, transcript paths or `.jsonl`; content keeps the content;
- paths never name a home directory.
Plus hypothesis: wrong-typed fields never raise nor fall back to adapter_error, and sentinel
canaries placed in any content key never reach attrs.
"""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attemptdb import adapters
from attemptdb.adapters import failures, registry
from attemptdb.model import event, ids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = os.path.join(ROOT, "fixtures", "providers")
ANCHOR = os.path.normpath(os.path.join(ROOT, "..", "shared", "anchor", "fixtures", "providers"))

CONTENT_KEYS = frozenset((
    "prompt", "prompt_response", "command", "cmd", "input", "chars", "content", "new_string",
    "old_string", "edits", "output", "tool_response", "error", "error_message", "error_details",
    "last_assistant_message", "message", "title", "description", "patch", "stdout", "stderr",
    "custom_instructions", "task_subject", "task_description", "text", "user_email",
    "transcript_path", "agent_transcript_path"))
TOKEN_KEYS = ("error", "error_type", "failure_type")
FORBIDDEN = ("CANARY_", "sk-live-", "SECRET_TOKEN", ".jsonl", "@example.com", "noreply@anthropic.com",
             "transcript_path", "/home/dev/.claude", "/home/dev/.gemini", "ghp_CANARY", "canary7f3a",
             "canary.7f3a@example.invalid")
HOME_MARKS = ("/home/", "/Users/", ":\\Users\\", ":/Users/")
SENTINELS = ("CANARY_PROMPT_7f3a", "CANARY_MESSAGE_2c91", "CANARY_CMD_5e08 --flag", "CANARY_FILE_b6d4",
             "CANARY_STDOUT_91af", "CANARY_STDERR_0c37", "CANARY_ERROR_44e2", "canary.7f3a@example.invalid",
             "ghp_CANARY0000000000000000000000000000", "/Users/canary7f3a/secret-project/x.ts",
             "C:/Users/canary7f3a/x.ts", "CANARY_INSTRUCTIONS_ae12")
DEVICE = ids.derive("dev_", "privacy-tests")
PROJECT = ids.project_identity("/home/dev/example/project", "git@github.com:example/project.git", DEVICE)


def ctx(mode):
    return adapters.Context(DEVICE, mode, PROJECT, 1787904000000000, hook_version="test")


def payloads():
    out = []
    for label, root, skip in (("anchor", ANCHOR, ".golden.json"), ("ours", OURS, ".expected.json")):
        if not os.path.isdir(root):
            continue
        for provider in sorted(os.listdir(root)):
            if not os.path.isdir(os.path.join(root, provider)):
                continue
            for name in sorted(os.listdir(os.path.join(root, provider))):
                if name.endswith(".json") and not name.endswith(skip):
                    out.append((label, provider, os.path.join(root, provider, name)))
    return out


PAYLOADS = payloads()


def canaries(payload) -> set:
    """§2.13: every string (length ≥ 6) under a content key, recursively; bare tokens under
    error/error_type/failure_type are classifications, not canaries; `_` keys are ignored."""
    found = set()

    def walk(value, under_content):
        if isinstance(value, dict):
            for k, v in value.items():
                if k.startswith("_"):
                    continue
                if k in TOKEN_KEYS and failures.is_token(v):
                    continue
                walk(v, under_content or k in CONTENT_KEYS)
        elif isinstance(value, list):
            for v in value:
                walk(v, under_content)
        elif isinstance(value, str) and under_content and len(value) >= 6:
            found.add(value)

    walk(payload, False)
    return found


def leaks(text: str, secrets) -> list:
    return [s for s in secrets if s in text or json.dumps(s)[1:-1] in text]


def envelope(path, provider, mode):
    with open(path, "rb") as f:
        data = f.read()
    payload, gap = adapters.parse_payload(data, False)
    env = adapters.build_event(provider, payload, gap, ctx(mode), payload_bytes=len(data))
    event.validate(env)
    return payload, env


def check_attrs(attrs, secrets):
    assert set(attrs) <= adapters.ATTR_KEYS
    text = json.dumps(attrs, ensure_ascii=False)
    assert not leaks(text, secrets)
    assert not [f for f in FORBIDDEN if f in text]
    assert "@" not in text
    assert not [m for m in HOME_MARKS if m in text]
    for k, v in attrs.items():
        if k == "provider":
            assert isinstance(v, dict)
            assert all(isinstance(x, (bool, int, float, str)) for x in v.values())
            assert all(len(x) <= 64 for x in v.values() if isinstance(x, str))
        elif isinstance(v, str):
            assert len(v.encode()) <= 256 and "\n" not in v and "\r" not in v
        elif isinstance(v, list):
            assert all(isinstance(x, str) for x in v)
        else:
            assert isinstance(v, (bool, int, float)), (k, v)


def check_paths(env):
    for p in env.get("paths", []):
        for key in ("original", "logical"):
            assert not [m for m in HOME_MARKS if m in p[key]], p


def test_there_are_canary_fixtures():
    names = [os.path.basename(p) for _, _, p in PAYLOADS if os.path.basename(p).startswith("canary_")]
    assert len(names) >= 6


@pytest.mark.parametrize("label,provider,path", PAYLOADS, ids=lambda v: v if len(v) < 20 else os.path.basename(v))
def test_metadata_only_carries_no_content(label, provider, path):
    payload, env = envelope(path, provider, "metadata_only")
    assert "content" not in env and "raw" not in env
    assert env["capture_mode"] == "metadata_only"
    text = json.dumps(env, ensure_ascii=False)
    secrets = canaries(payload)
    assert not leaks(text, secrets)
    assert not [f for f in FORBIDDEN if f in text]
    assert "@" not in text
    check_attrs(env.get("attrs", {}), secrets)
    check_paths(env)


@pytest.mark.parametrize("mode", ("local_semantic", "full_sync"))
@pytest.mark.parametrize("label,provider,path", PAYLOADS, ids=lambda v: v if len(v) < 20 else os.path.basename(v))
def test_content_modes_keep_content_in_content_and_raw_only(label, provider, path, mode):
    payload, env = envelope(path, provider, mode)
    secrets = canaries(payload)
    check_attrs(env.get("attrs", {}), secrets)
    check_paths(env)
    raw = env["raw"]
    assert not [k for k in raw if k.startswith("_") or k in ("transcript_path", "agent_transcript_path")]
    assert ".jsonl" not in json.dumps(raw)
    everything_but_content = {k: v for k, v in env.items() if k not in ("content", "raw")}
    assert not leaks(json.dumps(everything_but_content, ensure_ascii=False), secrets)
    if os.path.basename(path).startswith("canary_"):
        assert leaks(json.dumps(env.get("content", {}), ensure_ascii=False), secrets), \
            "content is not scrubbed at the adapter"


# --- hypothesis: hostile payloads ----------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8)
FIELDS = ("session_id", "conversation_id", "parent_conversation_id", "cwd", "workspace_roots", "model",
          "prompt_id", "turn_id", "generation_id", "permission_mode", "transcript_path", "timestamp",
          "duration", "duration_ms", "agent_id", "agent_type", "tool_name", "tool_use_id", "tool_call_id",
          "tool_input", "tool_args", "tool_response", "tool_output", "error", "error_message", "error_type",
          "error_details", "matcher", "is_interrupt", "failure_type", "exit_code", "status", "success",
          "prompt", "prompt_response", "text", "message", "title", "notification_type", "type", "source",
          "reason", "trigger", "stop_hook_active", "last_assistant_message", "task_id", "task_status",
          "task_subject", "custom_instructions", "compact_summary", "file_path", "previous_cwd",
          "worktree_path", "attachments", "edits", "command", "output", "subagent_id", "subagent_type",
          "context_tokens", "cursor_version", "loop_count", "user_response", "load_reason", "details")
EVENTS = [(p, n) for p in registry.PROVIDERS for n in registry.SUPPORTED_EVENTS[p] + ("Mystery",)]
TOOL_INPUT = st.fixed_dictionaries({}, optional={
    "command": JSON | st.lists(st.text(max_size=5), max_size=3), "cmd": JSON, "file_path": JSON,
    "path": JSON, "notebook_path": JSON, "absolute_path": JSON, "old_string": JSON, "new_string": JSON,
    "edits": JSON, "content": JSON, "patch": JSON | st.just("*** Begin Patch\n*** Add File: a\n+x"),
    "input": JSON, "subagent_type": JSON})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EVENTS), st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=12), TOOL_INPUT,
       st.sampled_from(("Bash", "apply_patch", "Edit", "Shell", "read_file", 7, None, "mcp__x__y")),
       st.sampled_from(("metadata_only", "local_semantic")))
def test_wrong_typed_fields_never_break_an_adapter(pe, fields, tool_input, tool_name, mode):
    provider, name = pe
    payload = dict(fields, hook_event_name=name)
    if tool_name is not None:
        payload.setdefault("tool_name", tool_name)
        payload.setdefault("tool_input", tool_input)
    env = adapters.build_event(provider, payload, None, ctx(mode))
    event.validate(env)
    event.check_storable(env)
    attrs = env.get("attrs", {})
    assert attrs.get("capture_gap") != "adapter_error", payload
    assert set(attrs) <= adapters.ATTR_KEYS
    check_paths(env)
    sid_keys = ("parent_conversation_id", "conversation_id", "session_id") if provider == "cursor" else ("session_id",)
    if not any(isinstance(payload.get(k), str) and payload[k].strip() for k in sid_keys):
        assert env["provider_session_id"] == "unknown" and attrs["capture_gap"] == "missing_session_id"
    if mode == "metadata_only":
        assert "content" not in env and "raw" not in env
    json.dumps(env, allow_nan=False)


CONTENT_FIELDS = ("prompt", "prompt_response", "last_assistant_message", "message", "title", "error",
                  "error_message", "error_details", "custom_instructions", "compact_summary",
                  "task_subject", "task_description", "text", "output", "command", "user_email")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(EVENTS), st.dictionaries(st.sampled_from(CONTENT_FIELDS), st.sampled_from(SENTINELS), min_size=1),
       st.dictionaries(st.sampled_from(("command", "cmd", "content", "new_string", "old_string", "patch", "input")),
                       st.sampled_from(SENTINELS), max_size=3),
       st.sampled_from(SENTINELS))
def test_sentinel_canaries_never_reach_attrs(pe, content, tool_input, response):
    provider, name = pe
    payload = dict(content, hook_event_name=name, session_id="s", conversation_id="c",
                   tool_name="Bash", tool_input=tool_input, tool_response={"stdout": response, "stderr": response},
                   tool_output=response)
    for mode in ("metadata_only", "local_semantic"):
        env = adapters.build_event(provider, payload, None, ctx(mode))
        attrs = json.dumps(env.get("attrs", {}), ensure_ascii=False)
        assert not [s for s in SENTINELS if s in attrs]
        assert "CANARY" not in attrs and "canary7f3a" not in attrs and "@" not in attrs
        if mode == "metadata_only":
            text = json.dumps(env, ensure_ascii=False)
            assert not [s for s in SENTINELS if s in text] and "@" not in text and "canary7f3a" not in text


@pytest.mark.parametrize("mode", ("metadata_only", "local_semantic"))
def test_adapter_attrs_survive_the_ingestion_sanitiser_untouched(mode):
    # layer 1 (the adapters) ⊆ layer 2 (ingestion): no fixture's attrs lose anything there
    privacy = pytest.importorskip("attemptdb.ingest.privacy")
    for label, provider, path in PAYLOADS:
        _, env = envelope(path, provider, mode)
        attrs = env.get("attrs", {})
        assert privacy.sanitise_attrs(attrs) == (attrs, 0), (label, path)
