"""Gemini CLI hook payloads (`~/.gemini/settings.json`) → Event v1 (reference/capture.md §2.4).

Invariants: tool arguments come from `tool_args`, else `tool_input`; the call id from
`tool_use_id`, `tool_call_id` or `call_id`; an AfterTool is a failure exactly when the payload
or its `tool_response` says so (an `error` of false, null or "" is success).
"""

from ..model import fastjson
from .draft import exit_code, exit_code_of, text

SESSION_KEYS = ("session_id",)
TURN_KEYS = ()
KINDS = {
    "SessionStart": "session_started", "SessionEnd": "session_ended",
    "BeforeAgent": "prompt_submitted", "AfterAgent": "turn_stopped",
    "BeforeTool": "tool_call_started", "AfterTool": "tool_call_finished",
    "Notification": "notification", "PreCompress": "compaction_started",
}
_NOTIFICATION_RENAMES = {"ToolPermission": "permission_prompt"}


def normalise(d, p: dict) -> None:
    d.common(p, SESSION_KEYS, TURN_KEYS)
    d.kind = KINDS.get(d.name, "unknown")
    handler = _HANDLERS.get(d.name)
    if handler is not None:
        handler(d, p)
    elif "tool_name" in p:
        _tool(d, p)


def _call_id(p):
    for key in ("tool_use_id", "tool_call_id", "call_id"):
        if text(p.get(key)):
            return p[key]
    return None


def _tool(d, p):
    args = p["tool_args"] if "tool_args" in p else p.get("tool_input")
    d.tool_call(p.get("tool_name"), _call_id(p), args)


def _after_tool(d, p):
    _tool(d, p)
    response = p.get("tool_response")
    d.output(response, scan_tests=d.tool is not None and d.tool["category"] == "shell")
    failed, message = False, None
    if text(p.get("error")):
        failed, message = True, p["error"]
    if p.get("success") is False:
        failed = True
    code = exit_code(p.get("exit_code"))
    if isinstance(response, dict):
        err = response.get("error")
        if err is not None and err is not False and err != "":
            failed = True
            if message is None and err is not True:
                if isinstance(err, str):
                    message = err
                elif isinstance(err, dict) and text(err.get("message")):
                    message = err["message"]
                else:
                    message = fastjson.dumps(err)
        if response.get("status") in ("error", "failed") or response.get("success") is False:
            failed = True
        if code is None:
            code = exit_code_of(response)
    if code:
        failed = True
    if failed:
        d.kind = "tool_call_failed"
        d.failure(message, exit_code=code)
    else:
        d.success(code)


def _session_start(d, p):
    d.token_attr("source", p.get("source"))


def _session_end(d, p):
    d.token_attr("reason", p.get("reason"))


def _before_agent(d, p):
    d.prompt(p.get("prompt"))


def _after_agent(d, p):
    if isinstance(p.get("stop_hook_active"), bool):
        d.attr("stop_hook_active", p["stop_hook_active"])
    message = text(p.get("prompt_response")) or text(p.get("last_assistant_message"))
    d.put("message", message)


def _notification(d, p):
    kind = p.get("notification_type")
    d.token_attr("notification_type", _NOTIFICATION_RENAMES.get(kind, kind) if isinstance(kind, str) else None)
    d.put("message", p.get("message"))
    d.put("details", p.get("details"))


def _pre_compress(d, p):
    d.token_attr("trigger", p.get("trigger"))


_HANDLERS = {
    "SessionStart": _session_start, "SessionEnd": _session_end, "BeforeAgent": _before_agent,
    "AfterAgent": _after_agent, "BeforeTool": _tool, "AfterTool": _after_tool,
    "Notification": _notification, "PreCompress": _pre_compress,
}
