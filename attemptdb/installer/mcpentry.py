"""Our MCP server entry in an agent's JSON config: its name, where each agent keeps it, what it
runs, and whether a config's text holds it. Below both the MCP registration (mcpconfig) and the
hooks' install (install.present: Gemini CLI's settings.json holds both).

Codex's config.toml holds it as a marked table (`TOML_HEADER`: the block mcpconfig writes).

Invariant: an entry is ours only when it runs `attempt … mcp` or `<python> -I …/attemptdb/__main__.py
mcp` (`is_ours`); a config whose shape is not an object with an `mcpServers` object is refused
(installer.config_shape), never guessed at.
"""

import os
import tomllib

from ..errors import AttemptError
from . import agents as agents_mod
from . import jsonstyle
from .command import Executable, command_basename, is_python

NAME = "attemptdb"
TOML_MARK = "# added by attemptdb (mcp)"
TOML_HEADER = f"[mcp_servers.{NAME}]  {TOML_MARK}"


def config_path(agent) -> str:
    if agent.provider == "claude_code":
        d = agents_mod.env_dir("CLAUDE_CONFIG_DIR")
        return os.path.join(d, ".claude.json") if d else os.path.join(os.path.expanduser("~"), ".claude.json")
    if agent.provider == "codex":
        return agent.settings_path()
    if agent.provider == "cursor":
        return os.path.join(agent.home()[0], "mcp.json")
    return agent.config_path()  # Gemini CLI: settings.json holds hooks and mcpServers


def server_entry(agent, exe: Executable, db: str | None = None) -> dict:
    """Our server entry: the `attempt` the hooks call, with `mcp` (and `--db <absolute path>`
    when install was given a database, as the hooks carry it)."""
    args = list(exe.argv[1:]) + ["mcp"] + (["--db", db] if db else [])
    if agent.provider == "claude_code":
        return {"type": "stdio", "command": exe.argv[0], "args": args}
    return {"command": exe.argv[0], "args": args}


def is_ours(entry) -> bool:
    """An entry that runs `attempt … mcp` or `<python> -I …/attemptdb/__main__.py mcp`."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or "mcp" not in args:
        return False
    name = command_basename(entry["command"])
    if name in ("attempt", "attempt.exe"):
        return args[0] == "mcp"
    return (is_python(name) and len(args) >= 3 and args[0] == "-I"
            and args[1].replace("\\", "/").endswith("/attemptdb/__main__.py") and args[2] == "mcp")


def servers_member(text, allow_comments, where):
    """(root, the mcpServers member or None); None root for a missing or blank file."""
    if text is None or not text.lstrip(jsonstyle.BOM).strip():
        return None, None
    root = jsonstyle.parse(text, allow_comments=allow_comments)
    if root.kind != "object":
        raise jsonstyle.JSONStyleError("installer.config_shape", f"{where}: the top level is not a JSON object; "
                                       "refusing to modify it")
    servers = root.get("mcpServers")
    if servers is not None and servers.value.kind != "object":
        raise jsonstyle.JSONStyleError("installer.config_shape", f'{where}: "mcpServers" is not an object; '
                                       "refusing to modify it")
    return root, servers


CREATED_SERVERS = {"path": ["mcpServers"], "kind": "object"}


def toml_registered(text) -> bool:
    """Whether Codex's config.toml `text` holds our marked server table, as ours."""
    if text is None or TOML_MARK not in text or not any(ln.rstrip() == TOML_HEADER for ln in text.splitlines()):
        return False
    try:
        servers = tomllib.loads(text).get("mcp_servers")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(servers, dict) and is_ours(servers.get(NAME))


def registered(agent, text) -> bool:
    """Whether an MCP config's `text` holds our server entry."""
    if agent.provider == "codex":
        return toml_registered(text)
    try:
        _, servers = servers_member(text, agent.allow_comments, "the config")
    except AttemptError:
        return False
    member = servers.value.get(NAME) if servers is not None else None
    return member is not None and is_ours(member.value.to_python())
