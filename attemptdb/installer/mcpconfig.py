"""`attempt hook install --mcp`: register `attempt mcp` as the MCP server `attemptdb` in each
agent's own config, and `attempt hook uninstall --mcp`: take it out again.

Where each agent reads its (user-wide) MCP servers (agents' documentation):
- Claude Code: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when that is set), top-level
  `mcpServers.<name> = {type: "stdio", command, args}` — the user scope of `claude mcp add`.
- Codex: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), table
  `[mcp_servers.<name>]` with `command` and `args`.
- Cursor: `~/.cursor/mcp.json`, `mcpServers.<name> = {command, args}`.
- Gemini CLI: `~/.gemini/settings.json` (comments allowed), `mcpServers.<name> = {command, args}`.

Invariants (the hooks' rules, attemptdb.installer.install): per agent the config is read,
planned and written under its lock; a plan that changes nothing writes nothing (a second
install is a no-op, byte for byte); a change is backed up and written atomically through
symlinks; only the entry named `attemptdb` is ever touched, and only when it is ours (it runs
an `attempt` executable, or this package's `__main__.py`, with `mcp`) — an `attemptdb` entry
someone else wrote is reported as failed and left alone; every other byte of the file stays
(JSON: jsonstyle splices; TOML: our table is one marked block, edited line by line and
re-parsed to prove nothing else moved); a malformed config is failed and untouched;
`dry_run` writes nothing. Install then uninstall gives back the original bytes: a JSON config
is edited with the hooks' `install.edit` and what install created in it (`mcpServers`, the file
itself) is recorded beside it (attemptdb.installer.record, under record.MCP: Gemini CLI's
settings.json has one record for both installs, and each uninstall takes back only its own
parts); a user's own `mcpServers`, even empty, stays (with the whitespace it held: the record
names an empty container install filled, see record), and a file install created goes once
nothing else is in it. Codex's config.toml goes the same way, in the record the hooks' feature
flag shares there: our table is a marked block (its lines are what uninstall takes out), and
the record keeps what the file was before (none, empty, blank) to give it back.
"""

import json
import os
import re
import tomllib

from ..errors import AttemptError
from . import agents as agents_mod
from . import codexconfig, fileops, install, jsonstyle, merge, record
from .command import Executable, find_executable
from .install import FAILED, SKIPPED, Action
from .mcpentry import CREATED_SERVERS, NAME, TOML_HEADER, TOML_MARK, config_path, is_ours, server_entry, servers_member
from .merge import CURRENT, INSTALLED, NOT_INSTALLED, REMOVED, UPDATED, same_value

_OUR_KEY = re.compile(r"\s*(command|args)\s*=")


class NameTaken(AttemptError):
    exit_status = 1

    def __init__(self, where):
        super().__init__("installer.mcp_name_taken", f"{where} names an MCP server `{NAME}` that is not "
                         "AttemptDB's; left untouched (rename or remove it, then install again)", exit_status=1)


class Plan:
    """`text` (None = unchanged), `outcome`, the parts install `created` and the user's empty
    containers it `filled` (record.Record's, JSON only) and `delete`: the file goes (uninstall
    of a JSON config install created)."""

    __slots__ = ("text", "outcome", "created", "filled", "delete")

    def __init__(self, text, outcome, created=(), delete=False, filled=()):
        self.text, self.outcome = text, outcome
        self.created, self.delete = list(created), delete
        self.filled = [f for f in filled if f is not None]

    @property
    def changed(self):
        return self.text is not None or self.delete


# --- JSON configs (Claude Code, Cursor, Gemini CLI) -------------------------------------------

def plan_install_json(text, entry: dict, *, allow_comments=False, where="the config") -> Plan:
    root, servers = servers_member(text, allow_comments, where)
    if root is None:
        prefix = jsonstyle.BOM if text and text.startswith(jsonstyle.BOM) else ""
        return Plan(prefix + jsonstyle.render_document({"mcpServers": {NAME: entry}}), INSTALLED,
                    created=[CREATED_SERVERS])
    style = jsonstyle.detect_style(text, root)
    if servers is None:
        return Plan(jsonstyle.insert_member(text, root, None, "mcpServers", {NAME: entry}, style), INSTALLED,
                    created=[CREATED_SERVERS], filled=[merge.filled_part(text, root, [])])
    obj = servers.value
    names = [m.key for m in obj.members]
    if NAME not in names:
        return Plan(jsonstyle.insert_member(text, obj, None, NAME, entry, style), INSTALLED,
                    filled=[merge.filled_part(text, obj, ["mcpServers"])])
    current = obj.get(NAME).value.to_python()
    if not is_ours(current):
        raise NameTaken(where)
    if same_value(current, entry):
        return Plan(None, CURRENT)
    at = names.index(NAME)
    text = jsonstyle.remove_member(text, obj, NAME)
    _, servers = servers_member(text, allow_comments, where)
    return Plan(jsonstyle.insert_member(text, servers.value, at, NAME, entry, style), UPDATED)


def plan_uninstall_json(text, *, allow_comments=False, where="the config", rec=None) -> Plan:
    """Take our entry out, then what install created for it (`rec`: record.Record; None, or
    one that does not list the MCP install, when unknown: an `mcpServers` only ours filled)."""
    root, servers = servers_member(text, allow_comments, where)
    member = servers.value.get(NAME) if servers is not None else None
    if member is None or not is_ours(member.value.to_python()):
        return Plan(None, NOT_INSTALLED)
    text = jsonstyle.remove_member(text, servers.value, NAME)
    root, servers = servers_member(text, allow_comments, where)
    if rec is not None and rec.knows(record.MCP):
        text, delete = merge.take_back(text, root, rec, record.MCP, allow_comments)
        return Plan(text, REMOVED, delete=delete)
    if not servers.value.members:
        text = jsonstyle.remove_member(text, root, "mcpServers")
        root = jsonstyle.parse(text, allow_comments=allow_comments)
    if rec is not None:  # the hooks' record: a document they filled, emptied now
        text, root = merge.restore_filled(text, root, rec.filled, allow_comments)
    return Plan(text, REMOVED)


# --- Codex config.toml -------------------------------------------------------------------------

def _toml(text, where):
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        raise AttemptError("installer.codex_config_invalid", f"{where} is not valid TOML"
                           f"{codexconfig.invalid_at(text)}; left untouched", exit_status=1) from None


def _newline(text: str) -> str:
    i = text.find("\n")
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def _toml_lines(entry: dict, nl: str) -> list[str]:
    # JSON string escapes are TOML basic-string escapes
    args = ", ".join(json.dumps(a, ensure_ascii=False) for a in entry["args"])
    return [f"command = {json.dumps(entry['command'], ensure_ascii=False)}{nl}", f"args = [{args}]{nl}"]


def _our_block(lines: list[str]):
    """(start, end) line indexes of our marked table: its header to the next table or the end,
    less the blank and comment lines just before that (they introduce what follows: someone
    else's)."""
    for i, ln in enumerate(lines):
        if ln.rstrip("\r\n").rstrip() == TOML_HEADER:
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("["):
                j += 1
            while j > i + 1 and (not lines[j - 1].strip() or lines[j - 1].lstrip().startswith("#")):
                j -= 1
            return i, j
    return None


def _without_ours(doc: dict) -> dict:
    out = dict(doc)
    if not isinstance(out.get("mcp_servers", {}), dict):
        return out
    servers = dict(out.get("mcp_servers") or {})
    servers.pop(NAME, None)
    if servers:
        out["mcp_servers"] = servers
    else:
        out.pop("mcp_servers", None)
    return out


def _checked(before: dict, new_text: str, want, where) -> str:
    """`new_text`, if it parses to `before` with only our server changed to `want` (None:
    gone); else a coded refusal (nothing is written)."""
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    servers = None if after is None else after.get("mcp_servers")
    got = servers.get(NAME) if isinstance(servers, dict) else None
    if after is None or got != want or _without_ours(after) != _without_ours(before):
        raise AttemptError("installer.codex_config_shape", f"could not change [mcp_servers.{NAME}] in {where} "
                           "without touching anything else; left untouched", exit_status=1)
    return new_text


def plan_install_toml(text, entry: dict, *, where="config.toml") -> Plan:
    doc = _toml(text, where)
    want = {"command": entry["command"], "args": entry["args"]}
    current = (doc.get("mcp_servers") or {}).get(NAME) if isinstance(doc.get("mcp_servers"), dict) else None
    body = text or ""
    nl = _newline(body) if body else "\n"
    lines = body.splitlines(keepends=True)
    block = _our_block(lines)
    if current is None:
        if "mcp_servers" in doc and not isinstance(doc["mcp_servers"], dict):
            raise AttemptError("installer.codex_config_shape", f"{where}: `mcp_servers` is not a table; left "
                               "untouched", exit_status=1)
        # a file without a final newline keeps that style: our block then ends unterminated
        unterminated = bool(body) and not body.endswith("\n")
        block_text = TOML_HEADER + nl + "".join(_toml_lines(want, nl))
        new = body + (nl if unterminated else "") + (nl if body.strip() else "") + block_text
        if unterminated:
            new = new[: -len(nl)]
        return Plan(_checked(doc, new, want, where), INSTALLED)
    if not isinstance(current, dict) or not is_ours(current):
        raise NameTaken(where)
    if {k: current.get(k) for k in ("command", "args")} == want:
        return Plan(None, CURRENT)
    if block is None:  # ours by content, but a table we did not write: not ours to edit
        raise NameTaken(where)
    start, end = block
    keep = [ln for ln in lines[start + 1:end] if not _OUR_KEY.match(ln)]
    new = "".join(lines[:start + 1] + _toml_lines(want, nl) + keep + lines[end:])
    if end == len(lines) and not body.endswith("\n"):  # the block ended the file unterminated
        new = new[: -len(nl)]
    return Plan(_checked(doc, new, dict(current, **want), where), UPDATED)


def plan_uninstall_toml(text, *, where="config.toml", rec=None) -> Plan:
    """Take our marked table out, then give the file back as it was before install (`rec`:
    record.Record of config.toml; see `record.given_back`)."""
    if text is None or TOML_MARK not in text:
        return Plan(None, NOT_INSTALLED)
    doc = _toml(text, where)
    lines = text.splitlines(keepends=True)
    block = _our_block(lines)
    servers = doc.get("mcp_servers")
    current = servers.get(NAME) if isinstance(servers, dict) else None
    if block is None or not is_ours(current):
        return Plan(None, NOT_INSTALLED)
    start, end = block
    if start > 0 and not lines[start - 1].strip():  # the blank line we put before it
        start -= 1
    new = "".join(lines[:start] + lines[end:])
    if not text.endswith("\n") and new.endswith("\n") and end == len(lines):
        new = new[:-2] if new.endswith("\r\n") else new[:-1]
    new, delete = record.given_back(rec, record.MCP, _checked(doc, new, None, where))
    return Plan(new, REMOVED, delete=delete)


# --- applying -------------------------------------------------------------------------------

class Registration(Action):
    """What happened (or would happen) to one agent's MCP config (the hooks' Action, with
    the server's name instead of event lists in its JSON)."""

    def to_json(self):
        out = super().to_json()
        for key in ("hook_id", "detected", "events_added", "events_removed"):
            out.pop(key, None)
        out["server"] = NAME
        return out


def _plan(agent, text, entry, where, rec=None):
    if agent.provider == "codex":
        return plan_install_toml(text, entry, where=where) if entry else plan_uninstall_toml(text, where=where, rec=rec)
    comments = agent.allow_comments
    if entry:
        return plan_install_json(text, entry, allow_comments=comments, where=where)
    return plan_uninstall_json(text, allow_comments=comments, where=where, rec=rec)


def _apply(agent, path, entry, dry_run, notes):
    """Read, plan, write (under the lock unless dry-run); returns (plan, backup). The config is
    edited as the hooks' (attemptdb.installer.install.edit) and what install created in it is
    recorded beside it, in the record the hooks' install shares (Gemini CLI's settings.json,
    Codex's config.toml)."""
    if entry:
        plan, after, more = install.recording(agent, path, record.MCP, lambda text: _plan(agent, text, entry, path),
                                              lambda res: res.outcome == INSTALLED)
    else:
        plan, after, more = install.unrecording(agent, path, record.MCP,
                                                lambda text, rec: _plan(agent, text, None, path, rec))
    try:
        return install.edit(path, plan, dry_run, after)
    finally:
        notes.extend(more)


def register(providers=None, *, dry_run=False, executable: Executable | None = None, remove=False,
             db: str | None = None) -> list:
    """Register (or with `remove`, unregister) our MCP server with the named agents (default:
    every detected agent for a registration, all four for a removal); `db`: the absolute path
    of the database the server reads (`attempt mcp --db`), None for the one it finds."""
    exe = None if remove else (executable or find_executable())
    out = []
    for agent in agents_mod.select(providers):
        path = config_path(agent)
        r = Registration(agent, path)
        out.append(r)
        found, how = agent.detect()
        if not remove and not found:
            r.outcome, r.reason = SKIPPED, f"{agent.label} not detected ({how})"
            continue
        if remove and not os.path.isdir(os.path.dirname(path)):
            r.outcome, r.reason = NOT_INSTALLED, "no config"
            continue
        try:
            if not dry_run:
                fileops.make_parent(path)
            plan, r.backup = _apply(agent, path, None if remove else server_entry(agent, exe, db), dry_run, r.notes)
        except AttemptError as e:
            r.outcome, r.error = FAILED, (e.code, e.message)
            continue
        r.outcome = plan.outcome
        if plan.delete:
            r.notes.insert(0, f"{'would remove' if dry_run else 'removed'} {path}: install had created it")
        if plan.changed:
            r.notes.append(f"restart {agent.label} for the change to take effect"
                           + (" (it rewrites ~/.claude.json while it runs: close it first if the entry "
                              "does not show in `claude mcp list`)" if agent.provider == "claude_code" else ""))
    return out
