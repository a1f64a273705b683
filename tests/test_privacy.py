"""Capture modes, the attrs sanitiser (layer 2 of reference/capture.md §2.10), the ingestion
contract and the privacy canaries of §2.13 / RFC 0006 §6."""

import copy
import glob
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attemptdb.ingest import privacy
from attemptdb.ingest import redaction as secrets
from attemptdb.model import event, fastjson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# RFC 0006 §6 sentinel classes.
CANARY_TEXT = ["CANARY_PROMPT_7f3a", "CANARY_MESSAGE_2c91", "CANARY_CMD_5e08 --flag", "CANARY_FILE_b6d4",
               "CANARY_STDOUT_91af", "CANARY_STDERR_0c37", "CANARY_ERROR_44e2", "CANARY_INSTRUCTIONS_ae12",
               "CANARY_CLAUDE_CODE_5d1e", "CANARY_CODEX_9a0b"]
CANARY_EMAIL = "canary.7f3a@example.invalid"
CANARY_TOKEN = "ghp_CANARY0000000000000000000000000000"
CANARY_HOMES = ["/Users/canary7f3a/secret-project/x.ts", "C:/Users/canary7f3a/x.ts",
                "C:\\Users\\canary7f3a\\x.ts", "/home/canary7f3a/x.ts"]
CANARIES = CANARY_TEXT + [CANARY_EMAIL, CANARY_TOKEN] + CANARY_HOMES


def leaks(canaries, value) -> list:
    """Canaries found in `value` serialised, verbatim or JSON-escaped."""
    text = fastjson.dumps(value)
    return [c for c in canaries if c in text or json.dumps(c)[1:-1] in text]


# --- capture modes --------------------------------------------------------------------------

@pytest.mark.parametrize("text,mode", [
    ("metadata_only", "metadata_only"), ("metadata", "metadata_only"), ("METADATA-ONLY", "metadata_only"),
    ("Metadata", "metadata_only"), ("local_semantic", "local_semantic"), ("local", "local_semantic"),
    ("Local-Semantic", "local_semantic"), (" local\n", "local_semantic"), ("full_sync", "full_sync"),
    ("full", "full_sync"), ("FULL-SYNC", "full_sync"),
])
def test_parse_mode_accepts_every_spelling(text, mode):
    assert privacy.parse_mode(text) == mode


@pytest.mark.parametrize("text", ["", "meta", "local semantic", "full_sync_", "none", "metadata_only!", None, 1, b"local"])
def test_parse_mode_refuses_anything_else(text):
    assert privacy.parse_mode(text) is None


def envelope(**over):
    env = {
        "event_id": "0192a7c4-2b3f-7a11-9c2b-1f2e3d4c5b6a", "schema_version": 1,
        "device_id": "7ad45812-ed79-58c6-91d7-a7509417e0c6", "source_seq": 0, "hlc": 0,
        "observed_at": 1787904000000000, "captured_at": 1787904000000000, "provider": "claude_code",
        "adapter_version": "0.1.1", "capture_mode": "local_semantic", "provider_event_name": "PostToolUse",
        "kind": "tool_call_finished",
        "project": {"project_id": "2c38b208-07f6-59a6-9871-ceaf11d5bf00", "root": "/home/dev/example/project",
                    "name": "example/project"},
        "session_id": "9f5bbaa5-2cae-55ea-bcdd-bad9fcf881ab", "provider_session_id": "sess-1",
        "agent": {}, "tool": {"name": "Bash", "category": "shell"},
        "attrs": {"hook_event_name": "PostToolUse", "cwd": "~/example/project", "command_bytes": 30},
        "content": {"command": "export DB_PASSWORD=hunter2 && make",
                    "tool_input": {"command": "export DB_PASSWORD=hunter2 && make"},
                    "tool_output": {"stdout": "ok", "stderr": ""}},
        "raw": {"hook_event_name": "PostToolUse", "tool_input": {"command": "export DB_PASSWORD=hunter2 && make"}},
    }
    env.update(over)
    return env


def test_apply_capture_mode_metadata_only_drops_content_and_raw():
    env = envelope()
    before = copy.deepcopy(env)
    out = privacy.apply_capture_mode(env, "metadata")
    assert "content" not in out and "raw" not in out and out["capture_mode"] == "metadata_only"
    assert out["attrs"] == env["attrs"] and env == before, "the input is not mutated"


@pytest.mark.parametrize("mode", ["local_semantic", "full"])
def test_apply_capture_mode_keeps_content_in_content_modes(mode):
    out = privacy.apply_capture_mode(envelope(), mode)
    assert out["content"] == envelope()["content"] and out["raw"] == envelope()["raw"]
    assert out["capture_mode"] == privacy.parse_mode(mode)


def test_apply_capture_mode_fails_closed_on_an_unreadable_mode():
    out = privacy.apply_capture_mode(envelope(), "loose")
    assert out["capture_mode"] == "metadata_only" and "content" not in out and "raw" not in out


# --- the attrs sanitiser --------------------------------------------------------------------

def test_allowlisted_metadata_survives_untouched_and_in_order():
    attrs = {"hook_event_name": "PostToolUse", "prompt_chars": 42, "file_is_test": True, "cwd": "~/proj",
             "path_extensions": ["rs", "md"], "provider": {"tool_use_id": "toolu_01", "n": 3, "ok": None},
             "x_codex_turn_kind": "main", "x_gemini_cli_mode": "auto", "duration_ms": 12.5,
             "tests_failed": 1, "model": "claude-sonnet-4-5", "reason": "prompt_input_exit"}
    out, drops = privacy.sanitise_attrs(attrs)
    assert (out, drops) == (attrs, 0)
    assert list(out) == list(attrs) and "redactions" not in out


def test_unknown_keys_are_dropped_and_counted():
    out, drops = privacy.sanitise_attrs({"prompt": "please rewrite auth.ts", "prompt_chars": 22})
    assert drops == 1 and out == {"prompt_chars": 22, "redactions": 1}


@pytest.mark.parametrize("key,ok", [
    ("x_codex_turn_kind", True), ("x_gemini_cli_mode", True), ("x_attemptdb_payload_bytes", True),
    ("x_", False), ("x_codex", False), ("x_codex_", False), ("x_codex__a", True), ("x__kind", False), ("x_Codex_kind", False),
    ("xcodex_kind", False), ("x_codex-kind", False), ("x_côdex_kind", False), ("prompt", False),
    ("Hook_event_name", False), ("", False),
])
def test_provider_extension_keys_follow_the_pattern(key, ok):
    assert privacy.key_allowed(key) is ok


@pytest.mark.parametrize("value", [
    "a" * 257, "é" * 129, "line one\nline two", "cr\rhere", "dev@example.com", "mail canary.7f3a@example.invalid now",
    "a.b+c@example.co", "/Users/chung/streamize/attemptdb", "C:\\Users\\chung\\proj", "D:/Users/x/y", "c:\\users\\bob\\x",
    "prefix /home/x", "/home/dev", "DB_PASSWORD=hunter2", "postgres://u:p4ss@db/app", CANARY_TOKEN,
    "AKIAIOSFODNN7EXAMPLE", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "sk-ant-abcdefgh", "xoxb-12345678", "\ud800lone",
])
def test_content_shaped_strings_are_dropped(value):
    assert not privacy.value_allowed(value)
    out, drops = privacy.sanitise_attrs({"reason": value, "provider": {"v": value}, "path_extensions": ["rs", value]})
    assert drops == 3 and out == {"provider": {}, "redactions": 3}


@pytest.mark.parametrize("value", [
    "~/proj/.worktrees/a", "~", "claude-sonnet-4-5", "a" * 256, "é" * 128, "token_count=5",
    "https://github.com/acme/repo", "@", "user@host", "not an email @ all", "C:/Program Files/x",
    "general-purpose", "sk-learn", "Bash|Edit|Write", "/usr/lib/x", "ghp_short",
])
def test_content_free_strings_pass(value):
    assert privacy.value_allowed(value)


def test_objects_only_under_provider_and_provider_members_are_scalars_with_attr_keys():
    attrs = {"reason": {"nested": "x"}, "provider": {"a": 1, "b": [1], "c": {"x": 1}, "CANARY_PROMPT_7f3a": 1,
                                                      "d": "ok", "e e": 1, "f" * 65: 1, "g": float("nan")}}
    out, drops = privacy.sanitise_attrs(attrs)
    assert out == {"provider": {"a": 1, "d": "ok"}, "redactions": 7} and drops == 7


def test_arrays_hold_content_free_scalars_only():
    out, drops = privacy.sanitise_attrs({"path_extensions": ["rs", 1, None, True],
                                         "file_count": [["/home/dev/leak"]], "line_count": [{"a": 1}]})
    assert out == {"path_extensions": ["rs", 1, None, True], "redactions": 2} and drops == 2


def test_redactions_accumulate_and_a_clean_pass_changes_nothing():
    out, drops = privacy.sanitise_attrs({"redactions": 2, "prompt": "x"})
    assert (out, drops) == ({"redactions": 3}, 1)
    assert privacy.sanitise_attrs(out) == (out, 0)
    # a redactions value that is not a count is itself a drop
    for bad in ["3", -1, 1.5, True, None, 2**60]:
        out, drops = privacy.sanitise_attrs({"redactions": bad, "cwd": "~/p"})
        assert out == {"cwd": "~/p", "redactions": 1} and drops == 1


def test_non_finite_numbers_and_non_dict_attrs_are_dropped():
    assert privacy.sanitise_attrs({"duration_ms": float("inf")}) == ({"redactions": 1}, 1)
    assert privacy.sanitise_attrs(["not", "a", "dict"]) == ({"redactions": 1}, 1)
    assert privacy.sanitise_attrs({1: "x"}) == ({"redactions": 1}, 1)


def test_every_sentinel_class_is_dropped_from_attrs_under_any_key():
    for c in CANARIES:
        attrs = {"hook_event_name": "X", "prompt": c, "reason": c, "provider": {"a": c, "b": 1},
                 "x_codex_note": c, "path_extensions": [c]}
        out, _ = privacy.sanitise_attrs(attrs)
        # content keys never survive; token/email/home classes never survive anywhere
        assert "prompt" not in out
        if c in [CANARY_EMAIL, CANARY_TOKEN] + CANARY_HOMES:
            assert leaks([c], out) == [], c


attr_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=True),
              st.text(max_size=30), st.sampled_from(CANARIES + ["~/p", "a@b.co", "DB_PASSWORD=x1y2"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)
attr_keys = st.one_of(st.sampled_from(sorted(privacy.ALLOWED_ATTR_KEYS)), st.text(max_size=12),
                      st.from_regex(r"x_[a-z]{1,5}_[a-z_]{1,5}", fullmatch=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(attr_keys, attr_values, max_size=8))
def test_sanitising_is_idempotent_and_only_keeps_the_contract(attrs):
    out, drops = privacy.sanitise_attrs(attrs)
    assert privacy.sanitise_attrs(out) == (out, 0)
    assert [k for k in out if k != "redactions"] == [k for k in attrs if k in out and k != "redactions"]
    for k, v in out.items():
        assert privacy.key_allowed(k)
        if isinstance(v, str):
            assert privacy.value_allowed(v)
        if isinstance(v, dict):
            assert k == "provider"
    assert leaks([CANARY_EMAIL, CANARY_TOKEN] + CANARY_HOMES, out) == []
    if drops:
        assert isinstance(out["redactions"], int) and out["redactions"] >= drops


# --- the ingestion contract -----------------------------------------------------------------

def test_ingest_redacts_content_raw_and_extensions_and_sanitises_attrs():
    env = envelope(x_vendor={"note": "token: abc123def456"})
    env["attrs"]["prompt"] = "leak"
    out = privacy.ingest(env)
    assert out["content"]["command"] == "export DB_PASSWORD=[REDACTED:generic_assignment] && make"
    assert out["content"]["tool_input"]["command"] == out["content"]["command"]
    assert out["raw"]["tool_input"]["command"] == out["content"]["command"]
    assert out["x_vendor"] == {"note": "token: [REDACTED:generic_assignment]"}
    assert out["attrs"] == {"hook_event_name": "PostToolUse", "cwd": "~/example/project",
                            "command_bytes": 30, "redactions": 1}
    assert "hunter2" not in fastjson.dumps(out)
    assert env["content"]["command"].endswith("hunter2 && make"), "the input is not mutated"


def test_a_stream_memo_gives_the_per_event_result_and_forgets_long_texts():
    """Import shares one RedactionMemo across a stream: recurring texts (keys, paths, a secret
    repeated in several events) are scanned once and still redacted in every event."""
    long_out = "x" * 300 + " AKIAIOSFODNN7EXAMPLE"
    stream = [envelope(),
              envelope(content={"command": "ls", "tool_output": {"stdout": long_out}},
                       raw={"env": {"DB_PASSWORD": "hunter2"}}),
              envelope(), envelope(raw={"hook_event_name": "PostToolUse", "note": long_out})]
    memo = secrets.RedactionMemo()
    shared = [privacy.ingest(copy.deepcopy(e), memo=memo) for e in stream]
    alone = [privacy.ingest(copy.deepcopy(e)) for e in stream]
    assert shared == alone
    assert "hunter2" not in json.dumps(shared) and "AKIAIOSFODNN7EXAMPLE" not in json.dumps(shared)
    assert "export DB_PASSWORD=hunter2 && make" in memo, "short texts are kept for the next event"
    assert long_out not in memo, "long texts are forgotten at the end of their event"
    for i in range(secrets.RedactionMemo.LIMIT + 1):
        memo["text number %d" % i] = ("text number %d" % i, 0)
    memo.end_event()
    assert len(memo) == 0


def test_ingest_without_redaction_keeps_content_but_still_sanitises_attrs():
    env = envelope()
    env["attrs"]["email"] = CANARY_EMAIL
    out = privacy.ingest(env, redact_secrets=False)
    assert out["content"] == env["content"] and out["attrs"]["redactions"] == 1 and "email" not in out["attrs"]


@pytest.mark.parametrize("db_mode,event_mode", [
    ("metadata_only", "local_semantic"), ("metadata", "full_sync"), ("garbage", "local_semantic"),
    ("local_semantic", "metadata_only"), (None, "metadata_only"), (None, "bogus"), ("full_sync", None),
])
def test_ingest_clamps_to_metadata_only_from_either_side_and_fails_closed(db_mode, event_mode):
    env = envelope()
    if event_mode is None:
        del env["capture_mode"]
    else:
        env["capture_mode"] = event_mode
    out = privacy.ingest(env, db_mode=db_mode)
    assert "content" not in out and "raw" not in out and out["capture_mode"] == "metadata_only"


def test_ingest_keeps_content_when_both_modes_allow_it():
    out = privacy.ingest(envelope(capture_mode="full_sync"), db_mode="local_semantic")
    assert out["capture_mode"] == "full_sync" and "content" in out and "raw" in out


def test_a_failing_scanner_costs_the_event_its_content_not_the_event(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("the scanner broke")
    monkeypatch.setattr(secrets, "redact_value", boom)
    out = privacy.ingest(envelope(x_vendor="kept?"))
    assert "content" not in out and "raw" not in out and "x_vendor" not in out
    assert out["attrs"]["x_attemptdb_redaction_failed"] is True
    monkeypatch.undo()
    assert privacy.ingest(out) == out


def test_a_scanner_that_never_converges_is_a_failure_too(monkeypatch):
    monkeypatch.setattr(secrets, "find", lambda text: [("x", 0, 1)] if text else [])
    out = privacy.ingest(envelope())
    assert "content" not in out and out["attrs"]["x_attemptdb_redaction_failed"] is True


def test_an_event_without_attrs_gets_none_and_empty_attrs_stay_empty():
    env = envelope()
    del env["attrs"]
    assert "attrs" not in privacy.ingest(env)
    assert privacy.ingest(envelope(attrs={}))["attrs"] == {}


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
              st.text(max_size=20), st.sampled_from(
                  ["DB_PASSWORD=hunter2", "Authorization: Bearer abc123def456ghi789", CANARY_TOKEN, CANARY_EMAIL,
                   "postgres://u:p4ss@h/db", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123", "hunter2", "a.b.c"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(
        st.one_of(st.sampled_from(["password", "token", "authorization", "api_key", "command", "stdout"]),
                  st.text(max_size=6)), inner, max_size=3)),
    max_leaves=10)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.dictionaries(st.sampled_from(["prompt", "command", "tool_input", "tool_output", "note", "password"]),
                               json_values, max_size=4),
       raw=json_values, attrs=st.dictionaries(attr_keys, attr_values, max_size=5),
       mode=st.sampled_from(["metadata_only", "local_semantic", "full_sync", "bogus"]),
       db_mode=st.sampled_from([None, "metadata_only", "local", "full", "nonsense"]))
def test_ingest_is_idempotent(content, raw, attrs, mode, db_mode):
    env = envelope(content=content, raw=raw, attrs=attrs, capture_mode=mode)
    once = privacy.ingest(env, db_mode=db_mode)
    assert privacy.ingest(once, db_mode=db_mode) == once
    assert fastjson.dumps(privacy.ingest(once, db_mode=db_mode)) == fastjson.dumps(once)
    assert leaks([CANARY_EMAIL, CANARY_TOKEN] + CANARY_HOMES, once.get("attrs", {})) == []


def test_an_exported_stream_reimports_with_identical_bytes_and_hashes():
    import hashlib
    env = envelope(x_vendor={"token": "abc123def456"})
    env["attrs"].update({"prompt": "x", "reason": CANARY_EMAIL})
    line = event.line(event.canonical(privacy.ingest(env)))
    reimported = event.line(event.canonical(privacy.ingest(json.loads(line))))
    assert reimported == line
    assert hashlib.sha256(reimported.encode()).hexdigest() == hashlib.sha256(line.encode()).hexdigest()
    event.validate(json.loads(line))


# --- canaries through whole events ----------------------------------------------------------

def canary_event():
    env = envelope()
    env["content"] = {"prompt": CANARY_TEXT[0], "message": CANARY_TEXT[1], "command": CANARY_TEXT[2],
                      "tool_input": {"file_path": CANARY_HOMES[0], "content": CANARY_TEXT[3]},
                      "tool_output": {"stdout": CANARY_TEXT[4], "stderr": CANARY_TEXT[5]},
                      "error": CANARY_TEXT[6], "custom_instructions": CANARY_TEXT[7],
                      "email": CANARY_EMAIL, "token": CANARY_TOKEN}
    env["raw"] = {"prompt": CANARY_TEXT[0], "user_email": CANARY_EMAIL, "cwd": CANARY_HOMES[1],
                  "x": CANARY_TEXT[8], "y": CANARY_TEXT[9], "auth": CANARY_TOKEN}
    env["attrs"] = {"hook_event_name": "PostToolUse", "prompt": CANARY_TEXT[0], "cwd": CANARY_HOMES[0],
                    "previous_cwd": CANARY_HOMES[2], "reason": CANARY_EMAIL, "source": CANARY_TOKEN,
                    "provider": {"CANARY_CODEX_9a0b": 1, "home": CANARY_HOMES[3], "tool_use_id": "toolu_1"},
                    "x_claude_code_note": CANARY_TOKEN, "path_extensions": ["ts", CANARY_HOMES[1]]}
    # Free text under an allowlisted key (`reason: "CANARY_…"`) is the adapter's promise
    # (layer 1, held by the adapter tests); what layer 2 can recognise is placed here.
    return env


@pytest.mark.parametrize("db_mode", ["metadata_only", "local_semantic", "full_sync"])
def test_attrs_never_carry_a_canary_in_any_mode(db_mode):
    env = canary_event()
    env["capture_mode"] = db_mode
    out = privacy.ingest(env, db_mode=db_mode)
    assert leaks(CANARIES, out["attrs"]) == []
    assert out["attrs"]["provider"] == {"tool_use_id": "toolu_1"}
    assert out["attrs"]["redactions"] == 9
    if db_mode == "metadata_only":
        assert leaks(CANARIES, out) == [] and "@" not in fastjson.dumps(out)
    else:
        assert out["content"]["prompt"] == CANARY_TEXT[0], "content modes keep content"


# --- the anchor's golden events -------------------------------------------------------------

CONTENT_KEYS = {"prompt", "prompt_response", "command", "cmd", "input", "chars", "content", "new_string",
                "old_string", "edits", "output", "tool_response", "error", "error_message", "error_details",
                "last_assistant_message", "message", "title", "description", "patch", "stdout", "stderr",
                "custom_instructions", "task_subject", "task_description", "text", "user_email",
                "transcript_path", "agent_transcript_path"}


def payload_canaries(payload) -> set:
    """§2.13: every string (length >= 6) under a content key, recursively; a bare token under
    error/error_type/failure_type is a classification, not a canary; `_` keys ignored."""
    found = set()

    def strings(v):
        if isinstance(v, str):
            if len(v) >= 6:
                found.add(v)
        elif isinstance(v, list):
            for x in v:
                strings(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                if not k.startswith("_"):
                    strings(x)

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k.startswith("_"):
                    continue
                if k in CONTENT_KEYS:
                    bare = isinstance(x, str) and x.replace("_", "").replace("-", "").isalnum()
                    if not (k in ("error", "error_type", "failure_type") and bare):
                        strings(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(payload)
    return found


def goldens(anchor):
    out = []
    for path in sorted(glob.glob(os.path.join(anchor, "fixtures", "providers", "*", "*.golden.json"))):
        with open(path, encoding="utf-8") as f:
            golden = json.load(f)
        with open(path.replace(".golden.json", ".json"), encoding="utf-8") as f:
            payload = json.load(f)
        out.append((os.path.relpath(path, anchor), golden, payload))
    return out


def test_every_golden_events_attrs_survive_the_sanitiser_with_zero_drops(anchor):
    gs = goldens(anchor)
    assert len(gs) == 78
    for name, golden, _ in gs:
        assert privacy.sanitise_attrs(golden.get("attrs", {})) == (golden.get("attrs", {}), 0), name


@pytest.mark.parametrize("mode", ["metadata_only", "local_semantic", "full_sync"])
def test_golden_events_through_ingest_keep_canaries_out_of_attrs(anchor, mode):
    for name, golden, payload in goldens(anchor):
        env = dict(golden, capture_mode=mode)
        out = privacy.ingest(env, db_mode=mode)
        canaries = sorted(payload_canaries(payload))
        assert leaks(canaries, out.get("attrs", {})) == [], name
        if mode == "metadata_only":
            assert leaks(canaries, out) == [], name
            assert "content" not in out and "raw" not in out
        assert privacy.ingest(out, db_mode=mode) == out, name
        assert out.get("attrs", {}) == golden.get("attrs", {}), name


def test_the_planted_secrets_of_the_canary_fixtures_are_redacted_in_content_modes(anchor):
    seen = 0
    for name, golden, _ in goldens(anchor):
        out = fastjson.dumps(privacy.ingest(golden, db_mode="local_semantic"))
        for planted in ("API_KEY=sk-live-CANARY", "const apiKey = 'CANARY"):
            if planted in fastjson.dumps(golden):
                seen += 1
                assert planted not in out, name
                assert "[REDACTED:generic_assignment]" in out, name
    assert seen >= 3


def test_the_module_never_imports_re_or_json():
    code = ("import sys; import attemptdb.ingest.privacy as p; p.ingest({'capture_mode': 'local', 'attrs': {'a': 1}, "
            "'content': {'prompt': 'password=hunter2'}}); "
            "bad = [m for m in ('re', 'json', 'hashlib', 'uuid', 'typing', 'string') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": ROOT}, check=True).stdout.strip()
    assert out == "[]"


def test_metadata_only_drops_top_level_extensions():
    """A writer's x_* field can carry anything; under metadata_only it does not reach the file."""
    from attemptdb.devtools import synth
    from attemptdb.ingest import privacy
    e = next(synth.generate(1, seed=4))
    e["x_notes"] = {"prompt": "PLEASE fix my private letter"}
    out = privacy.ingest(e, db_mode="metadata_only")
    assert "x_notes" not in out and "content" not in out and "raw" not in out
    kept = privacy.ingest(dict(e), db_mode="local_semantic")
    assert kept["x_notes"] == {"prompt": "PLEASE fix my private letter"}


def test_secrets_used_as_json_keys_are_redacted():
    from attemptdb.devtools import synth
    from attemptdb.ingest import privacy
    e = next(synth.generate(1, seed=5))
    token = "ghp_" + "A1b2C3d4" * 5
    e["content"] = {"tool_input": {token: 1, "https://bob:hunter2pass@example.com/x": "y"}}
    out = privacy.ingest(e)
    text = repr(out["content"])
    assert token not in text and "hunter2pass" not in text and "[REDACTED:" in text
