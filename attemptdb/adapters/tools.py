"""Tool name → Event v1 `tool.category` (reference/capture.md §2.5, plus the names the anchor
goldens show: Codex `exec_command` is a shell, Cursor `Delete` edits files, Cursor names MCP tools
`MCP:<server>:<tool>` and Gemini `mcp_<server>_<tool>`).

Invariant: `category(name)` is total — any value (even a non-string) gives one of
`event.TOOL_CATEGORIES`; matching is case-insensitive on the trimmed name.
"""

_TABLE = {
    "shell": ("bash", "shell", "run_shell_command", "execute", "run_command", "run_terminal_cmd",
              "exec_command", "shell_command", "local_shell"),
    "file_read": ("read", "read_file", "read_many_files"),
    "file_write": ("write", "write_file", "create_file"),
    "file_edit": ("edit", "multiedit", "multi_edit", "replace", "apply_patch", "str_replace",
                  "str_replace_editor", "edit_file", "search_replace", "delete", "delete_file"),
    "notebook": ("notebookedit", "notebook_edit"),
    "search": ("glob", "grep", "search_file_content", "list_directory", "ls", "codebase_search",
               "grep_search", "file_search"),
    "web": ("webfetch", "websearch", "web_fetch", "web_search", "google_web_search"),
    "subagent": ("task", "agent", "spawn_agent"),
    "plan": ("enterplanmode", "exitplanmode", "todowrite", "todo_write", "update_plan",
             "write_todos"),
}
CATEGORY_OF = {name: cat for cat, names in _TABLE.items() for name in names}
_MCP_PREFIXES = ("mcp__", "mcp_", "mcp:")


def category(name) -> str:
    """The tool category of a provider tool name; "other" for anything unrecognised."""
    if not isinstance(name, str):
        return "other"
    n = name.strip().lower()
    if n.startswith(_MCP_PREFIXES):
        return "mcp"
    return CATEGORY_OF.get(n, "other")
