"""Cursor hook payloads (`~/.cursor/hooks.json`) → Event v1 (reference/capture.md §2.3).

Invariants: the session is the first non-empty of `parent_conversation_id`, `conversation_id`,
`session_id` (subagent conversations fold into the parent); `generation_id` is the turn; the
content-free scalars of PROVIDER_SCALARS go to attrs.provider; `cursor_version` is the provider
version when the context has none; `tool_output` that arrives as JSON text is decoded.
"""

from ..model import fastjson
from .draft import class_token, count, exit_code_of, text
from .failures import classify_text

SESSION_KEYS = ("parent_conversation_id", "conversation_id", "session_id")
TURN_KEYS = ("generation_id",)
PROVIDER_SCALARS = ("generation_id", "status", "loop_count", "failure_type", "is_interrupt",
                    "final_status", "is_background_agent")

KINDS = {
    "sessionStart": "session_started", "sessionEnd": "session_ended",
    "beforeSubmitPrompt": "prompt_submitted", "afterAgentResponse": "agent_message",
    "stop": "turn_stopped", "afterFileEdit": "tool_call_finished",
    "afterShellExecution": "tool_call_finished", "postToolUseFailure": "tool_call_failed",
    "preToolUse": "tool_call_started", "postToolUse": "tool_call_finished",
    "subagentStart": "subagent_started", "subagentStop": "subagent_stopped",
    "preCompact": "compaction_started",
}


def decoded_output(value):
    """Cursor sends `tool_output` as JSON inside a JSON string; anything else passes through."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return fastjson.loads(value, exact_errors=False)
        except (ValueError, RecursionError):
            return value
    return value


def normalise(d, p: dict) -> None:
    d.common(p, SESSION_KEYS, TURN_KEYS)
    if text(p.get("cursor_version")):
        d.provider_version = p["cursor_version"]
    for key in PROVIDER_SCALARS:
        if key in p:
            d.provider_attr(key, p[key])
    d.kind = KINDS.get(d.name, "unknown")
    handler = _HANDLERS.get(d.name)
    if handler is not None:
        handler(d, p)
    elif "tool_name" in p:
        d.tool_call(p.get("tool_name"), p.get("tool_use_id"), p.get("tool_input"))


def _session_end(d, p):
    d.token_attr("reason", p.get("reason"))
    if d.duration is not None:
        d.attr("duration_ms", d.duration)


def _prompt(d, p):
    d.prompt(p.get("prompt"))
    attachments = p.get("attachments")
    if isinstance(attachments, list):
        for a in attachments:
            if isinstance(a, dict):
                d.add_path(a.get("file_path"))
        d.provider_attr("attachment_count", len(attachments))


def _agent_response(d, p):
    message = text(p.get("text"))
    if message is not None:
        d.attr("message_chars", len(message))
        d.put("message", message)


def _stop(d, p):
    status = p.get("status")
    if status == "aborted":
        d.kind = "turn_failed"
        d.failure(cls="aborted", status="cancelled")
    elif status == "error":
        d.kind = "turn_failed"
        d.failure(cls="error")


def _file_edit(d, p):
    tool_input = {k: p[k] for k in ("file_path", "edits") if k in p}
    d.tool_call("Edit", p.get("tool_use_id"), tool_input)
    if isinstance(p.get("edits"), list):
        d.provider_attr("edit_count", len(p["edits"]))
    d.success()


def _shell_execution(d, p):
    tool_input = {"command": p["command"]} if "command" in p else {}
    d.tool_call("Shell", p.get("tool_use_id"), tool_input)
    d.output(p.get("output"), scan_tests=True)
    code = exit_code_of(p)
    if code:
        d.kind = "tool_call_failed"
        d.failure(cls="nonzero_exit", exit_code=code)
    else:
        d.success(code)


def _tool(d, p):
    d.tool_call(p.get("tool_name"), p.get("tool_use_id"), p.get("tool_input"))


def _post_tool_use(d, p):
    _tool(d, p)
    output = decoded_output(p.get("tool_output"))
    d.output(output, scan_tests=d.tool is not None and d.tool["category"] == "shell")
    code = exit_code_of(output)
    if code is None:
        code = exit_code_of(p)
    if code:
        d.kind = "tool_call_failed"
        d.failure(cls="nonzero_exit", exit_code=code)
    else:
        d.success(code)


def _post_tool_use_failure(d, p):
    _tool(d, p)
    message = text(p.get("error_message")) or text(p.get("error"))
    if p.get("is_interrupt") is True:
        d.failure(message, cls="interrupted", status="cancelled")
        return
    cls = None
    if classify_text(message)[0] == "unknown":
        cls = class_token(p.get("failure_type"), bare=False)
    d.failure(message, cls=cls, exit_code=exit_code_of(p))


def _subagent(d, p):
    if text(p.get("subagent_id")):
        d.subagent(p["subagent_id"], p.get("subagent_type"))
    else:
        d.token_attr("agent_type", p.get("subagent_type"))
    for key in ("task", "description", "summary"):
        d.put(key, p.get(key))


def _pre_compact(d, p):
    d.token_attr("trigger", p.get("trigger"))
    tokens = count(p.get("context_tokens"))
    if tokens is not None:
        d.attr("pre_tokens", tokens)


_HANDLERS = {
    "sessionEnd": _session_end, "beforeSubmitPrompt": _prompt,
    "afterAgentResponse": _agent_response, "stop": _stop, "afterFileEdit": _file_edit,
    "afterShellExecution": _shell_execution, "preToolUse": _tool, "postToolUse": _post_tool_use,
    "postToolUseFailure": _post_tool_use_failure, "subagentStart": _subagent,
    "subagentStop": _subagent, "preCompact": _pre_compact,
}
