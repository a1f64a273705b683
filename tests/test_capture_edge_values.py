"""Hook payloads at the edges of what JSON and the store can hold (spec/capture.md "A payload
that cannot be read or held", spec/canonical-event.md "`outcome.exit_code`").

Proves: valid JSON that no event can hold (a 5,000-digit integer, `1e999`, 5,000 levels of
nesting) is recorded as `payload_unrepresentable`, never as `invalid_json`, by a silent hook
that exits 0 and keeps nothing of the bytes; a text that also breaks the grammar after such a
value is still `invalid_json`; `fastjson.is_json` agrees with the grammar at any depth and
number size, within its bound; and a nonzero exit code no event can hold as an integer
(past 64 bits, not whole) reads as a failure with no `exit_code`, for every provider.
"""

import json
import random

import pytest
from test_capture import assert_silent, capture, spool_files, stored, verify_ok

from attemptdb import adapters
from attemptdb.adapters import draft
from attemptdb.model import event, fastjson, ids

DEVICE = ids.derive("dev_", "edge-values")
PROJECT = ids.project_identity("/home/dev/work/app", None, DEVICE)
NOW = 1796025600000000
HEAD = b'{"hook_event_name": "PostToolUse", "session_id": "s-edge", "tool_name": "Bash", "x": '
HUGE_INT = b"7" * 5000
DEEP = b"[" * 5000 + b"]" * 5000
DEEP_OBJECT = b'{"a":' * 5000 + b"1" + b"}" * 5000

UNREPRESENTABLE = {
    "int_5000_digits": HEAD + HUGE_INT + b"}",
    "negative_int_5000_digits": HEAD + b"-" + HUGE_INT + b"}",
    "float_1e999": HEAD + b"1e999}",
    "float_minus_1e999": HEAD + b"-1e999}",
    "float_long_mantissa_overflow": HEAD + b"9" * 400 + b".5e400}",
    "nesting_5000_arrays": HEAD + DEEP + b"}",
    "nesting_5000_objects": HEAD + DEEP_OBJECT + b"}",
    "whole_payload_nested": b"[" * 5000 + b"{}" + b"]" * 5000,
    "pretty_printed_nesting": HEAD + b"[\n " * 3000 + b"1" + b"\n]" * 3000 + b"}",
    "big_int_then_deep": HEAD + b"[" + HUGE_INT + b"," + DEEP + b"]}",
}
MALFORMED_AFTER = {  # the first problem is a value too large or deep; the text is not JSON
    "int_then_cut": HEAD + HUGE_INT,
    "float_then_garbage": HEAD + b"1e999, garbage}",
    "deep_then_unclosed": HEAD + b"[" * 5000 + b"]" * 4999 + b"}",
    "deep_then_trailing_comma": HEAD + DEEP + b",}",
    "deep_mismatched": HEAD + b"[" * 5000 + b"}" * 5000,
    "only_open_brackets": b"[" * 100000,
    "deep_then_nan": HEAD + b"[" * 3000 + b"NaN" + b"]" * 3000 + b"}",
    "deep_then_second_document": b"[" * 5000 + b"]" * 5000 + b" {}",
}


def ctx(mode="full_sync"):
    return adapters.Context(DEVICE, mode, PROJECT, NOW)


# --- the payload gap -----------------------------------------------------------------------

@pytest.mark.parametrize("data", UNREPRESENTABLE.values(), ids=UNREPRESENTABLE.keys())
def test_valid_json_no_event_can_hold_is_unrepresentable_not_invalid(data):
    try:
        json.loads(data, parse_int=float)  # valid JSON to the standard library (any number size)
    except RecursionError:  # too deep for it too: the data is built of balanced brackets
        assert data.count(b"[") == data.count(b"]") and data.count(b"{") == data.count(b"}")
    assert adapters.parse_payload(data) == (None, "payload_unrepresentable")
    assert "payload_unrepresentable" in adapters.PAYLOAD_GAPS


@pytest.mark.parametrize("data", MALFORMED_AFTER.values(), ids=MALFORMED_AFTER.keys())
def test_malformed_json_stays_invalid_json_whatever_comes_first(data):
    assert adapters.parse_payload(data) == (None, "invalid_json")


def test_large_numbers_that_can_be_held_still_are():
    data = HEAD + b'[18446744073709551617, -' + b"9" * 400 + b", 1e308, 2.5e-400]}"
    payload, gap = adapters.parse_payload(data)
    assert gap is None
    assert payload["x"] == [18446744073709551617, -int("9" * 400), 1e308, 0.0]
    nested = HEAD + b"[" * 500 + b"]" * 500 + b"}"
    assert adapters.parse_payload(nested)[1] is None


def test_the_gap_event_is_content_free_and_counts_the_bytes():
    data = UNREPRESENTABLE["nesting_5000_arrays"]
    payload, gap = adapters.parse_payload(data)
    env = adapters.build_event("claude-code", payload, gap, ctx(), payload_bytes=len(data))
    event.validate(env)
    assert env["kind"] == "unknown"
    assert env["attrs"] == {"hook_event_name": "unknown", "capture_gap": "payload_unrepresentable",
                            "x_attemptdb_payload_bytes": len(data)}
    assert "content" not in env and "raw" not in env
    assert env["provider_session_id"] == "unknown"


def test_loads_names_an_unrepresentable_value_as_such():
    for text in ("1e999", "[" + "7" * 5000 + "]", "[" * 5000 + "]" * 5000):
        with pytest.raises(fastjson.JSONUnrepresentable) as e:
            fastjson.loads(text)
        assert isinstance(e.value, fastjson.JSONError) and e.value.code == "json.malformed"
    for text in ("NaN", "[1,]", "{not json", "[1] [2]"):
        with pytest.raises(fastjson.JSONError) as e:
            fastjson.loads(text, exact_errors=False)
        assert not isinstance(e.value, fastjson.JSONUnrepresentable)


# --- fastjson.is_json: the grammar alone -----------------------------------------------------

def _reference(text) -> bool:
    try:
        json.loads(text, parse_int=float, parse_constant=_refuse)
        return True
    except ValueError:
        return False


def _refuse(name):
    raise ValueError(name)


def _deep_reading(text):
    """is_json's value-at-a-time reading, forced (it otherwise runs only past the C depth)."""
    i = len(text) - len(text.lstrip(fastjson.WHITESPACE))
    return fastjson._is_deep_json(text, i, 10**9)


CASES = ['{}', '[]', ' [ ] ', '{"a":1}', '{"a" : [1, 2 ,{"b":null}] }', '[1,]', '{"a":1,}', '{,}',
         '[,1]', '1', '"x"', '-', '01', '1.', '1e', '-0', '1E+5', 'true', 'tru', 'NaN', '[NaN]',
         '-Infinity', '{"a"}', '{"a":}', '{1:2}', '[1 2]', '[1,2', '"\x01"', '"\\x"', '[] []', '',
         ' ', '[[]]', '[{}]', '{"a":{}}', '{"a":{"b":{"c":1}}}}', '[[]]]', '[[ ]]', '[}', '{]',
         '[1e999]', '[' + '1' * 5000 + ']', '\u00a0[]', '[[[', ']', '[{"a":[{"b":[]}]}]']


@pytest.mark.parametrize("text", CASES)
def test_is_json_agrees_with_the_grammar(text):
    want = _reference(text)
    assert fastjson.is_json(text) is want
    assert _deep_reading(text) is want


def test_is_json_agrees_with_the_grammar_on_mutated_documents():
    rnd = random.Random(20260828)
    bases = [json.dumps({"a": [1, 2.5, {"b": None, "c": "x\"y"}, [], {}], "d": True, "e": -3e5}),
             '{"a":{"b":{"c":[[[1,2],[3]],{"d":{}}]}},"e":[[[]]]}',
             '[[[[{"a":[[{}]]}]]],[ [ ] ],{ "x" : { "y" : [ 1 , { } ] } }]',
             json.dumps({"a": {"b": [{"c": [[]]}, {"d": {"e": {}}}]}}, indent=1)]
    alphabet = '[]{},:"0-1.eE tfn\\'
    for _ in range(20000):
        t = list(rnd.choice(bases))
        for _ in range(rnd.randint(1, 3)):
            k = rnd.randrange(len(t) + 1)
            op = rnd.random()
            if op < .4 and t:
                del t[min(k, len(t) - 1)]
            elif op < .7:
                t.insert(k, rnd.choice(alphabet))
            elif t:
                t[min(k, len(t) - 1)] = rnd.choice(alphabet)
        text = "".join(t)
        want = _reference(text)
        assert fastjson.is_json(text) is want, text
        assert _deep_reading(text) is want, text


def test_is_json_reads_runs_of_brackets_at_once_and_gives_up_past_its_bound():
    assert fastjson.is_json("[" * 2_000_000 + "]" * 2_000_000) is True
    assert fastjson.is_json("[ " * 1_000_000 + " ]" * 1_000_000) is True
    assert fastjson.is_json("[" * 2_000_000 + "]" * 1_999_999) is False
    deep_values = '[1,' * 5000 + "1" + "]" * 5000
    assert fastjson.is_json(deep_values) is True
    assert fastjson.is_json(deep_values, budget=1000) is None  # unknown: too deep to finish
    assert fastjson.is_json("[" + "1," * 100000 + "1]", budget=10) is True  # the C scanner's


def test_a_payload_too_deep_to_check_within_the_bound_is_unrepresentable(monkeypatch):
    monkeypatch.setattr(fastjson.is_json, "__defaults__", (100,))  # the bound, made small
    bad_tail = HEAD + b'[1,' * 3000 + b"1" + b"]" * 3000 + b"garbage"
    assert adapters.parse_payload(bad_tail) == (None, "payload_unrepresentable")


# --- through the real hook -------------------------------------------------------------------

@pytest.mark.parametrize("provider, ack", [("claude-code", b""), ("gemini-cli", b'{"decision":"allow"}\n'),
                                           ("codex", b""), ("cursor", b"")])
@pytest.mark.parametrize("case", ["int_5000_digits", "float_1e999", "nesting_5000_arrays"])
def test_the_hook_records_an_unrepresentable_payload_silently(db, home, provider, ack, case):
    data = UNREPRESENTABLE[case]
    assert_silent(capture(db, provider, data), stdout=ack)
    rows = stored(db)
    assert len(rows) == 1 and spool_files(db, home) == []
    (row,) = rows
    assert row["kind"] == "unknown"
    assert row["attrs"] == {"hook_event_name": "unknown", "capture_gap": "payload_unrepresentable",
                            "x_attemptdb_payload_bytes": len(data)}
    assert row["content"] is None and row["raw"] is None
    verify_ok(db, 1)


def test_the_hook_still_calls_a_malformed_deep_payload_invalid(db, home):
    data = MALFORMED_AFTER["deep_then_unclosed"]
    assert_silent(capture(db, "claude-code", data))
    (row,) = stored(db)
    assert row["attrs"]["capture_gap"] == "invalid_json"


# --- exit codes no event can hold ---------------------------------------------------------------

BEYOND = [2**64 + 1, 2**63, -(2**63) - 1, 10**30, 1e300, -1e300, 1.5, -0.5, 18446744073709551616.0]


def _bash(**response):
    return {"session_id": "s-exit", "cwd": "/home/dev/work/app", "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_use_id": "toolu_exit", "tool_input": {"command": "make"},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": False, **response}}


def _payloads(code):
    """(provider, payload) of every road an exit code takes into an outcome."""
    gemini = {"session_id": "g-exit", "cwd": "/home/dev/work/app", "hook_event_name": "AfterTool",
              "tool_name": "run_shell_command", "tool_input": {"command": "make"}}
    cursor_shell = {"conversation_id": "c-exit", "hook_event_name": "afterShellExecution",
                    "workspace_roots": ["/home/dev/work/app"], "command": "make", "output": ""}
    cursor_post = {"conversation_id": "c-exit", "hook_event_name": "postToolUse",
                   "workspace_roots": ["/home/dev/work/app"], "tool_name": "Shell",
                   "tool_input": {"command": "make"}}
    return [
        ("claude_code", _bash(exit_code=code)),
        ("claude_code", _bash(exitCode=code)),
        ("claude_code", _bash(metadata={"exit_code": code})),
        ("codex", _bash(exit_code=code)),
        ("gemini_cli", {**gemini, "tool_response": {"llmContent": "", "exit_code": code}}),
        ("gemini_cli", {**gemini, "tool_response": {"llmContent": ""}, "exit_code": code}),
        ("cursor", {**cursor_shell, "exit_code": code}),
        ("cursor", {**cursor_post, "tool_output": json.dumps({"output": "", "exit_code": code})}),
        ("cursor", {**cursor_post, "tool_output": "{}", "exit_code": code}),
    ]


@pytest.mark.parametrize("code", BEYOND, ids=[repr(c)[:24] for c in BEYOND])
def test_a_nonzero_exit_code_past_64_bits_or_not_whole_is_a_failure_without_a_code(code):
    for provider, payload in _payloads(code):
        env = adapters.build_event(provider, payload, None, ctx())
        event.validate(env)
        event.check_storable(env)
        where = (provider, sorted(payload))
        assert env["kind"] == "tool_call_failed", where
        assert env["outcome"] == {"status": "failure", "class": "nonzero_exit"}, where
        assert env["attrs"]["error_class"] == "nonzero_exit", where
        assert "capture_gap" not in env["attrs"], where


@pytest.mark.parametrize("code, stored_code", [(2**63 - 1, 2**63 - 1), (-(2**63), -(2**63)), (2.0, 2),
                                               (3221225477, 3221225477), (-1, -1)])
def test_exit_codes_within_64_bits_are_recorded(code, stored_code):
    for provider, payload in _payloads(code):
        env = adapters.build_event(provider, payload, None, ctx())
        assert env["kind"] == "tool_call_failed", provider
        assert env["outcome"] == {"status": "failure", "class": "nonzero_exit", "exit_code": stored_code}, provider


@pytest.mark.parametrize("code", [0, 0.0, -0.0, None, "1", True, False])
def test_zero_or_no_number_is_no_failure(code):
    for provider, payload in _payloads(code):
        env = adapters.build_event(provider, payload, None, ctx())
        assert env["kind"] == "tool_call_finished", (provider, code)
        assert env["outcome"]["status"] == "success", (provider, code)
        if code == 0 and not isinstance(code, bool):
            assert env["outcome"]["exit_code"] == 0, (provider, code)
        else:
            assert "exit_code" not in env["outcome"], (provider, code)


def test_a_failure_whose_own_exit_code_is_past_64_bits_is_classed_nonzero_exit():
    p = {"session_id": "s-exit", "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
         "tool_use_id": "toolu_f", "tool_input": {"command": "make"}, "error": "it broke",
         "exit_code": 2**64 + 1}
    env = adapters.build_event("claude_code", p, None, ctx())
    assert env["outcome"] == {"status": "failure", "class": "nonzero_exit"}


def test_the_unstorable_marker_never_reaches_an_outcome():
    d = draft.Draft("claude_code", "PostToolUse", "/r")
    d.success(draft.UNSTORABLE)
    assert d.outcome == {"status": "success"}
    d.failure(exit_code=draft.UNSTORABLE)
    assert d.outcome == {"status": "failure", "class": "nonzero_exit"}
    assert draft.exit_code(2**64) is draft.UNSTORABLE and draft.exit_code(7) == 7
    assert draft.exit_code(float("nan")) is None and draft.exit_code(True) is None


@pytest.mark.parametrize("provider, payload", [
    ("claude-code", _bash(exit_code=18446744073709551617)),
    ("cursor", {"conversation_id": "c-exit", "hook_event_name": "afterShellExecution",
                "workspace_roots": ["/tmp"], "command": "make", "output": "", "exit_code": 18446744073709551617}),
])
def test_the_hook_stores_a_failure_for_an_exit_code_past_64_bits(db, home, provider, payload):
    data = json.dumps(payload).encode()
    assert_silent(capture(db, provider, data))  # a fresh file keeps raw (local_semantic)
    (row,) = stored(db)
    assert row["kind"] == "tool_call_failed"
    assert row["outcome_status"] == "failure" and row["outcome_class"] == "nonzero_exit"
    assert row["exit_code"] is None
    assert "18446744073709551617" in json.dumps(row["raw"])  # the payload as sent
    verify_ok(db, 1)
