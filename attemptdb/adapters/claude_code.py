"""Claude Code hook payloads → Event v1 (reference/capture.md §2.2). Codex sends Claude-shaped
payloads and uses this normaliser too (its extra event `Interrupt`, `turn_id`, argv commands and
`exec_command`'s `cmd` are handled here).

Invariant: every native name in KINDS maps to its documented kind; any other name is an
`unknown` event that still keeps the common facts and, if present, the tool call.
"""

from .draft import class_token, exit_code, exit_code_of, text

SESSION_KEYS = ("session_id",)
TURN_KEYS = ("prompt_id", "turn_id")

KINDS = {
    "SessionStart": "session_started", "SessionEnd": "session_ended",
    "UserPromptSubmit": "prompt_submitted", "PreToolUse": "tool_call_started",
    "PostToolUse": "tool_call_finished", "PostToolUseFailure": "tool_call_failed",
    "PermissionRequest": "permission_requested", "PermissionDenied": "permission_denied",
    "Notification": "notification", "Stop": "turn_stopped", "StopFailure": "turn_failed",
    "SubagentStart": "subagent_started", "SubagentStop": "subagent_stopped",
    "TaskCreated": "task_created", "TaskCompleted": "task_completed",
    "PreCompact": "compaction_started", "PostCompact": "compaction_finished",
    "ConfigChange": "config_changed", "CwdChanged": "cwd_changed", "FileChanged": "file_changed",
    "WorktreeCreate": "worktree_created", "WorktreeRemove": "worktree_removed",
    "InstructionsLoaded": "notification", "TeammateIdle": "notification",
    "DirectoryAdded": "notification", "Elicitation": "notification",
    "ElicitationResult": "notification", "Interrupt": "turn_failed",
}
_NOTIFICATION_TYPES = {"InstructionsLoaded": "instructions_loaded", "TeammateIdle": "teammate_idle",
                       "DirectoryAdded": "directory_added", "Elicitation": "agent_needs_input",
                       "ElicitationResult": "elicitation_result"}

INJECTED_PREFIXES = (
    ("<task-notification>", "task_notification"), ("[SYSTEM NOTIFICATION", "task_notification"),
    ("<system-reminder>", "system_reminder"), ("<local-command-stdout>", "local_command"),
    ("<local-command-caveat>", "local_command"), ("<bash-stdout>", "shell_output"),
    ("<bash-stderr>", "shell_output"),
)
"""Prompt prefixes of text the harness injects (shared with the transcript importer)."""


def injected_source(prompt) -> str | None:
    """The injection tag of a prompt that is not the user's own words, else None."""
    if not isinstance(prompt, str):
        return None
    head = prompt.lstrip()
    for prefix, tag in INJECTED_PREFIXES:
        if head.startswith(prefix):
            return tag
    return None


def normalise(d, p: dict) -> None:
    d.common(p, SESSION_KEYS, TURN_KEYS)
    if text(p.get("agent_id")):
        d.subagent(p["agent_id"], p.get("agent_type"))
    else:
        d.token_attr("agent_type", p.get("agent_type"))
    name = d.name
    d.kind = KINDS.get(name, "unknown")
    handler = _HANDLERS.get(name)
    if handler is not None:
        handler(d, p)
    elif "tool_name" in p:
        _tool(d, p)


def _tool(d, p) -> None:
    d.tool_call(p.get("tool_name"), p.get("tool_use_id"), p.get("tool_input"))


def _session_start(d, p):
    d.token_attr("source", p.get("source"))


def _session_end(d, p):
    d.token_attr("reason", p.get("reason"))


def _prompt(d, p):
    prompt = p.get("prompt")
    d.prompt(prompt)
    tag = injected_source(prompt)
    if tag is not None:
        d.kind = "notification"
        d.attr("notification_type", "injected_prompt")
        d.attr("source", tag)


def _post_tool_use(d, p):
    _tool(d, p)
    response = p.get("tool_response")
    d.output(response, scan_tests=d.tool is not None and d.tool["category"] == "shell")
    code = exit_code_of(response)
    if isinstance(response, dict) and response.get("interrupted") is True:
        d.kind = "tool_call_failed"
        d.failure(cls="interrupted", status="cancelled")
    elif code:
        d.kind = "tool_call_failed"
        d.failure(cls="nonzero_exit", exit_code=code)
    else:
        d.success(code)


def _post_tool_use_failure(d, p):
    _tool(d, p)
    response = p.get("tool_response")
    message = text(p.get("error")) or text(p.get("error_message"))
    if message is None:
        if isinstance(response, str):
            message = text(response)
        elif isinstance(response, dict):
            for key in ("error", "message", "stderr"):
                if text(response.get(key)):
                    message = response[key]
                    break
    if isinstance(response, dict):
        d.output(response)
    code = exit_code_of(response)
    if code is None:
        code = exit_code(p.get("exit_code"))
    if p.get("is_interrupt") is True:
        d.failure(message, cls="interrupted", status="cancelled")
    else:
        d.failure(message, exit_code=code)


def _permission_denied(d, p):
    _tool(d, p)
    d.outcome = {"status": "denied"}
    d.put("reason", p.get("reason"))


def _notification(d, p):
    kind = p.get("notification_type") if "notification_type" in p else p.get("type")
    d.token_attr("notification_type", kind)
    d.put("message", p.get("message"))
    d.put("title", p.get("title"))


def _stop(d, p):
    if isinstance(p.get("stop_hook_active"), bool):
        d.attr("stop_hook_active", p["stop_hook_active"])
    d.put("message", p.get("last_assistant_message"))


def _stop_failure(d, p):
    if isinstance(p.get("stop_hook_active"), bool):
        d.attr("stop_hook_active", p["stop_hook_active"])
    error = p.get("error")
    cls = (class_token(p.get("error_type"), bare=False) or class_token(p.get("matcher"), bare=False)
           or class_token(error))
    message = (text(p.get("error_details")) or text(p.get("error_message")) or text(p.get("message"))
               or (error if text(error) and class_token(error) is None else None))
    d.failure(message, cls=cls)


def _task(d, p):
    d.token_attr("task_id", p.get("task_id"))
    d.token_attr("task_status", p.get("task_status") if "task_status" in p else p.get("status"))
    d.put("task_subject", p.get("task_subject"))
    d.put("task_description", p.get("task_description"))


def _compact(d, p):
    d.token_attr("trigger", p.get("trigger"))
    d.put("custom_instructions", p.get("custom_instructions"))
    d.put("compact_summary", p.get("compact_summary"))


def _config_change(d, p):
    d.token_attr("config_source", p.get("source"))
    if d.add_path(p.get("file_path"), file=True):
        d.file_facts()


def _cwd_changed(d, p):
    previous = p.get("previous_cwd") if "previous_cwd" in p else p.get("old_cwd")
    pp = d.add_path(previous)
    if pp is not None:
        d.attr("previous_cwd", pp["logical"])


def _file_changed(d, p):
    d.provider_attr("event", p.get("event"))
    if d.add_path(p.get("file_path"), file=True):
        d.file_facts()


def _worktree(d, p):
    pp = d.add_path(p.get("worktree_path"))
    if pp is not None:
        d.attr("worktree_path", pp["logical"])


def _lifecycle_notification(d, p):
    name = d.name
    d.attr("notification_type", _NOTIFICATION_TYPES[name])
    if name == "InstructionsLoaded":
        d.provider_attr("load_reason", p.get("load_reason"))
        d.provider_attr("memory_type", p.get("memory_type"))
        if d.add_path(p.get("file_path"), file=True):
            d.file_facts()
    elif name == "DirectoryAdded":
        d.add_path(p.get("path") if "path" in p else p.get("directory"))
    elif name == "Elicitation":
        d.provider_attr("mcp_server", p.get("mcp_server") if "mcp_server" in p else p.get("mcp_server_name"))
        d.put("message", p.get("message"))
        d.put("elicitation_data", p.get("elicitation_data") if "elicitation_data" in p
              else p.get("requested_schema"))
    elif name == "ElicitationResult":
        d.provider_attr("mcp_server", p.get("mcp_server") if "mcp_server" in p else p.get("mcp_server_name"))
        answer = p.get("user_response") if isinstance(p.get("user_response"), dict) else p
        d.provider_attr("action", answer.get("action"))
        d.put("elicitation_content", answer.get("content"))


def _interrupt(d, p):
    d.failure(cls="interrupted", status="cancelled")


_HANDLERS = {
    "SessionStart": _session_start, "SessionEnd": _session_end, "UserPromptSubmit": _prompt,
    "PreToolUse": _tool, "PostToolUse": _post_tool_use,
    "PostToolUseFailure": _post_tool_use_failure, "PermissionRequest": _tool,
    "PermissionDenied": _permission_denied, "Notification": _notification, "Stop": _stop,
    "StopFailure": _stop_failure, "SubagentStart": _stop, "SubagentStop": _stop,
    "TaskCreated": _task, "TaskCompleted": _task, "PreCompact": _compact, "PostCompact": _compact,
    "ConfigChange": _config_change, "CwdChanged": _cwd_changed, "FileChanged": _file_changed,
    "WorktreeCreate": _worktree, "WorktreeRemove": _worktree,
    "InstructionsLoaded": _lifecycle_notification, "TeammateIdle": _lifecycle_notification,
    "DirectoryAdded": _lifecycle_notification, "Elicitation": _lifecycle_notification,
    "ElicitationResult": _lifecycle_notification, "Interrupt": _interrupt,
}
