"""The one list per adapter that drives the installer and doctor (reference/capture.md §2).

Invariant: `CAPTURE_EVENTS[p]` ⊆ `SUPPORTED_EVENTS[p]`; the installer subscribes exactly
`CAPTURE_EVENTS[p]` and doctor expects exactly those — never the supported list.
Provider ids here are the Event v1 `provider` values; `HOOK_IDS` are the kebab-case ids written
into agent configs (`attempt capture claude-code`); `ALIASES` are accepted when parsing.
"""

PROVIDERS = ("claude_code", "codex", "cursor", "gemini_cli")

HOOK_IDS = {"claude_code": "claude-code", "codex": "codex", "cursor": "cursor", "gemini_cli": "gemini-cli"}

ALIASES = {
    "claude_code": "claude_code", "claude-code": "claude_code", "claude": "claude_code",
    "claudecode": "claude_code", "codex": "codex", "codex-cli": "codex", "codex_cli": "codex",
    "cursor": "cursor", "gemini_cli": "gemini_cli", "gemini-cli": "gemini_cli", "gemini": "gemini_cli",
}

_CLAUDE_MAPPED = (
    "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
    "PostToolUseFailure", "PermissionRequest", "PermissionDenied", "Notification", "Stop",
    "StopFailure", "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "PreCompact",
    "PostCompact", "ConfigChange", "CwdChanged", "FileChanged", "WorktreeCreate", "WorktreeRemove",
    "InstructionsLoaded", "TeammateIdle", "DirectoryAdded", "Elicitation", "ElicitationResult",
)

SUPPORTED_EVENTS = {
    "claude_code": _CLAUDE_MAPPED,
    "codex": ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
              "PermissionRequest", "SubagentStart", "SubagentStop", "Stop", "PreCompact",
              "PostCompact", "Interrupt"),
    "cursor": ("sessionStart", "sessionEnd", "beforeSubmitPrompt", "afterAgentResponse", "stop",
               "afterFileEdit", "afterShellExecution", "postToolUseFailure", "preToolUse",
               "postToolUse", "subagentStart", "subagentStop", "preCompact"),
    "gemini_cli": ("SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeTool",
                   "AfterTool", "Notification", "PreCompress"),
}

CAPTURE_EVENTS = {
    # WorktreeCreate replaces native worktree creation (a passive observer cannot answer it);
    # FileChanged needs explicit watch paths.
    "claude_code": tuple(e for e in _CLAUDE_MAPPED if e not in ("WorktreeCreate", "FileChanged")),
    "codex": SUPPORTED_EVENTS["codex"],
    # the generic tool hooks describe the same operations; both would double count
    "cursor": tuple(e for e in SUPPORTED_EVENTS["cursor"] if e not in ("afterFileEdit", "afterShellExecution")),
    "gemini_cli": SUPPORTED_EVENTS["gemini_cli"],
}

CAPTURE_TEST_EVENT = {"claude_code": "AttemptDBCaptureTest", "codex": "AttemptDBCaptureTest",
                      "cursor": "attemptdbCaptureTest", "gemini_cli": "AttemptDBCaptureTest"}


def provider_id(name: str) -> str | None:
    """Canonical provider id for a name or alias (case-insensitive), None when unknown."""
    if not isinstance(name, str):
        return None
    return ALIASES.get(name.strip().lower())
