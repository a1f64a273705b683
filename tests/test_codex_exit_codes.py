"""Exit codes in Codex rollouts read as the adapters read them (spec/canonical-event.md
"`outcome.exit_code` of an event our adapters build"; attemptdb.adapters.draft.exit_code): any
nonzero code is a failure, and `exit_code` records it only within signed 64 bits. Before, the
importer read the numbers as counts (a negative code or one past 2**63 dropped, so the call read
as a success unless its status said failed) and `Process exited with code N` only below 12
characters."""

import json

import pytest
from test_codex_import import imported, rows

I64_MAX, I64_MIN = 2**63 - 1, -2**63
META = {"timestamp": "2026-09-01T08:00:00.000Z", "type": "session_meta",
        "payload": {"id": "33333333-3333-4333-8333-333333333333", "session_id": "33333333-3333-4333-8333-333333333333",
                    "cwd": "/home/dev/example/project", "cli_version": "0.154.0"}}


def _write(tmp_path, lines) -> str:
    path = tmp_path / "rollout-exit.jsonl"
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in [META] + lines))
    return str(path)


def _ended(db, call_id):
    got = rows(db, "SELECT kind, outcome_status, exit_code FROM events WHERE tool_call_id = ? "
                   "AND kind IN ('tool_call_finished', 'tool_call_failed')", (call_id,))
    assert len(got) == 1, got
    return got[0]


def _item(n, code, status="completed"):
    item = {"type": "CommandExecution", "id": f"exec-{n}", "command": ["/bin/sh", "-lc", "make"],
            "status": status, "aggregated_output": "done"}
    if code is not ...:
        item["exit_code"] = code
    return {"timestamp": f"2026-09-01T08:00:{n:02d}.000Z", "type": "event_msg",
            "payload": {"type": "item_completed", "turn_id": "turn-1", "item": item}}


# (the item's exit_code as JSON text, the event kind, the exit_code stored)
ITEM_CODES = [
    ("0", "tool_call_finished", 0),
    ("-1", "tool_call_failed", -1),
    ("1", "tool_call_failed", 1),
    ("3221225477", "tool_call_failed", 3221225477),  # a Windows NTSTATUS (0xC0000005): past int32
    (str(I64_MAX), "tool_call_failed", I64_MAX),
    (str(I64_MIN), "tool_call_failed", I64_MIN),
    ("2.0", "tool_call_failed", 2),
    (str(2**63), "tool_call_failed", None),  # past 64 bits: a failure, its code not recorded
    ("18446744073709551617", "tool_call_failed", None),
    ("-" + "9" * 400, "tool_call_failed", None),
    ("-1e300", "tool_call_failed", None),
    ("1.5", "tool_call_failed", None),
    ('"1"', "tool_call_finished", None),  # not a number: no exit code
    ("true", "tool_call_finished", None),
    ("null", "tool_call_finished", None),
]


def test_a_modern_items_exit_code_is_read_as_the_adapters_read_it(tmp_path, db, capsys):
    lines = []
    for n, (code, _, _) in enumerate(ITEM_CODES):
        line = json.dumps(_item(n, 0))
        lines.append(line.replace('"exit_code": 0', f'"exit_code": {code}') + "\n")
    lines.append(_item(90, -1, status="failed"))  # failed either way
    lines.append(_item(91, ..., status="failed"))
    rep = imported(capsys, _write(tmp_path, lines), "--db", db)
    assert rep["skipped_lines"] == 0 and rep["rejected"] == 0
    for n, (code, kind, stored) in enumerate(ITEM_CODES):
        status = "success" if kind == "tool_call_finished" else "failure"
        assert _ended(db, f"exec-{n}") == (kind, status, stored), code
    assert _ended(db, "exec-90") == ("tool_call_failed", "failure", -1)
    assert _ended(db, "exec-91") == ("tool_call_failed", "failure", None)
    # the projection agrees: the call failed, its code recorded when it is one
    assert rows(db, "SELECT outcome_status, exit_code FROM tool_calls WHERE provider_call_id = 'exec-3'") == \
        [("failure", 3221225477)]


def _classic(n, output, custom=False):
    call = f"call_{n:02d}"
    kind = "custom_tool_call" if custom else "function_call"
    start = {"type": kind, "name": "exec_command" if not custom else "apply_patch", "call_id": call}
    if custom:
        start["input"] = "*** Begin Patch\n*** End Patch\n"
    else:
        start["arguments"] = json.dumps({"cmd": "make"})
    return [{"timestamp": f"2026-09-01T08:01:{n:02d}.000Z", "type": "response_item", "payload": start},
            {"timestamp": f"2026-09-01T08:01:{n:02d}.500Z", "type": "response_item",
             "payload": {"type": kind + "_output", "call_id": call, "output": output}}]


STATED = [  # a `Process exited with code N` line: (N as written, kind, exit_code stored)
    ("0", "tool_call_finished", 0),
    ("-1", "tool_call_failed", -1),
    ("123456789012", "tool_call_failed", 123456789012),  # 12 characters: once not read (a success)
    ("3221225477", "tool_call_failed", 3221225477),
    (str(I64_MAX), "tool_call_failed", I64_MAX),
    (str(I64_MIN), "tool_call_failed", I64_MIN),
    ("-000000000000000000000007", "tool_call_failed", -7),
    (str(2**63), "tool_call_failed", None),
    ("99999999999999999999", "tool_call_failed", None),
    ("9" * 5000, "tool_call_failed", None),  # more digits than int() converts: never converted
    ("--5", "tool_call_finished", None),  # no number
    ("x", "tool_call_finished", None),
]


def test_a_stated_exit_code_is_read_whatever_its_length(tmp_path, db, capsys):
    lines = []
    for n, (code, _, _) in enumerate(STATED):
        lines += _classic(n, f"Chunk ID: a1\nWall time: 0.1 seconds\nProcess exited with code {code}\nOutput:\nok\n")
    imported(capsys, _write(tmp_path, lines), "--db", db)
    for n, (code, kind, stored) in enumerate(STATED):
        assert _ended(db, f"call_{n:02d}")[::2] == (kind, stored), code[:40]


@pytest.mark.parametrize("code,kind,stored", [
    ("0", "tool_call_finished", 0),
    ("-1", "tool_call_failed", -1),
    ("3221225477", "tool_call_failed", 3221225477),
    ("18446744073709551617", "tool_call_failed", None),
    ("1e300", "tool_call_failed", None),
])
def test_a_custom_tool_outputs_metadata_exit_code_too(tmp_path, db, capsys, code, kind, stored):
    output = '{"output": "Done", "metadata": {"exit_code": ' + code + ', "duration_seconds": 0.1}}'
    imported(capsys, _write(tmp_path, _classic(1, output, custom=True)), "--db", db)
    assert _ended(db, "call_01")[::2] == (kind, stored)
