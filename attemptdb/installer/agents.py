"""The four agents whose configs we edit: where each keeps its hooks, the shape of its hook
list, our hook object per event, and whether the agent is present on this machine.

Invariant: the events we subscribe are exactly `registry.CAPTURE_EVENTS[provider]` (one list
drives installer and doctor); each hook object has exactly the fields the agent reads (Codex
rejects unknown fields); detection only reads — it never creates a directory, and an
override variable (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`) naming a missing directory means the
agent is not detected. `HOME` is honoured through `os.path.expanduser`.

Shapes (agents' current documentation):
- Claude Code `~/.claude/settings.json`: `hooks.<Event>: [{matcher?, hooks: [{type, command,
  timeout (s)}]}]`; we write a group without `matcher` (all tools), timeout 5.
- Codex `$CODEX_HOME/hooks.json` (default `~/.codex/hooks.json`): the same nested shape;
  exactly `{type, command, timeout}`, 5 s (3 s for SessionEnd/Interrupt, Codex's maximum).
- Cursor `~/.cursor/hooks.json`: `{"version": 1, "hooks": {<event>: [{command, timeout (s)}]}}`
  (flat), timeout 10.
- Gemini CLI `~/.gemini/settings.json` (comments allowed): nested, `{name, type, command,
  timeout (ms)}` with name `attemptdb-<event lowercased>`, timeout 5000.

A hook object is ours only when its `command` is one of ours (`command.is_ours`), for every
agent: a name (Gemini CLI's `attemptdb-…`) is the user's to choose too, so a hook of theirs
named so stays through install and uninstall.
"""

import os
import shutil

from ..adapters import registry

NESTED = "nested"
FLAT = "flat"
GEMINI_NAME_PREFIX = "attemptdb-"


class Agent:
    """One agent: `provider` (Event v1 id), `hook_id` (written into commands), `label`."""

    def __init__(self, provider, label, launcher, shape, allow_comments=False):
        self.provider = provider
        self.hook_id = registry.HOOK_IDS[provider]
        self.label = label
        self.launcher = launcher
        self.shape = shape
        self.allow_comments = allow_comments

    # --- where ----------------------------------------------------------------------------

    def home(self) -> tuple[str, bool]:
        """(the agent's directory, whether an override variable chose it)."""
        raise NotImplementedError

    def config_path(self) -> str:
        raise NotImplementedError

    def detect(self) -> tuple[bool, str]:
        """(detected, how): its directory exists, or its launcher is on PATH."""
        home, from_env = self.home()
        if os.path.isdir(home):
            return True, "directory"
        if from_env:  # never trust PATH over an explicit, wrong override
            return False, "override names a missing directory"
        if shutil.which(self.launcher):
            return True, "launcher on PATH"
        return False, "not found"

    # --- what -----------------------------------------------------------------------------

    @property
    def events(self) -> tuple[str, ...]:
        return registry.CAPTURE_EVENTS[self.provider]

    def base_document(self) -> dict:
        return {}

    def entry(self, event: str, command: str) -> dict:
        """Our hook object for `event`."""
        raise NotImplementedError

    def unit(self, event: str, command: str):
        """What one subscription looks like in the event's array: a group (nested) or the
        hook object itself (flat)."""
        e = self.entry(event, command)
        return {"hooks": [e]} if self.shape == NESTED else e

    def is_ours_object(self, obj) -> bool:
        from .command import is_ours
        if not isinstance(obj, dict):
            return False
        return is_ours(obj.get("command"))

    def __repr__(self):
        return f"Agent({self.provider})"


def _user(*parts):
    return os.path.join(os.path.expanduser("~"), *parts)


def env_dir(var):
    v = os.environ.get(var, "")
    if v:
        return os.path.abspath(os.path.expanduser(v))
    return None


class ClaudeCode(Agent):
    TIMEOUT = 5

    def __init__(self):
        super().__init__("claude_code", "Claude Code", "claude", NESTED)

    def home(self):
        d = env_dir("CLAUDE_CONFIG_DIR")
        return (d, True) if d else (_user(".claude"), False)

    def config_path(self):
        return os.path.join(self.home()[0], "settings.json")

    def detect(self):
        found, how = super().detect()
        if not found and not self.home()[1] and os.path.isfile(_user(".claude.json")):
            return True, "~/.claude.json"
        return found, how

    def entry(self, event, command):
        return {"type": "command", "command": command, "timeout": self.TIMEOUT}


class Codex(Agent):
    TIMEOUT = 5
    SHORT_TIMEOUT = 3          # Codex clamps SessionEnd / Interrupt hooks to 3 s
    SHORT_EVENTS = ("SessionEnd", "Interrupt")

    def __init__(self):
        super().__init__("codex", "Codex", "codex", NESTED)

    def home(self):
        d = env_dir("CODEX_HOME")
        return (d, True) if d else (_user(".codex"), False)

    def config_path(self):
        return os.path.join(self.home()[0], "hooks.json")

    def settings_path(self):
        """`config.toml`: feature flags and Codex's own hook trust records (never ours)."""
        return os.path.join(self.home()[0], "config.toml")

    def entry(self, event, command):
        t = self.SHORT_TIMEOUT if event in self.SHORT_EVENTS else self.TIMEOUT
        return {"type": "command", "command": command, "timeout": t}


class Cursor(Agent):
    TIMEOUT = 10  # seconds

    def __init__(self):
        super().__init__("cursor", "Cursor", "cursor", FLAT)

    def home(self):
        return _user(".cursor"), False

    def config_path(self):
        return os.path.join(self.home()[0], "hooks.json")

    def base_document(self):
        return {"version": 1}

    def entry(self, event, command):
        return {"command": command, "timeout": self.TIMEOUT}


class GeminiCLI(Agent):
    TIMEOUT_MS = 5000

    def __init__(self):
        super().__init__("gemini_cli", "Gemini CLI", "gemini", NESTED, allow_comments=True)

    def home(self):
        return _user(".gemini"), False

    def config_path(self):
        return os.path.join(self.home()[0], "settings.json")

    def entry(self, event, command):
        return {"name": GEMINI_NAME_PREFIX + event.lower(), "type": "command",
                "command": command, "timeout": self.TIMEOUT_MS}


AGENTS = {a.provider: a for a in (ClaudeCode(), Codex(), Cursor(), GeminiCLI())}


def get(name: str) -> Agent:
    """The agent for a provider id, hook id or alias; AttemptError on anything else."""
    from ..errors import AttemptError, did_you_mean
    pid = registry.provider_id(name)
    if pid is None or pid not in AGENTS:
        names = list(registry.HOOK_IDS.values())
        raise AttemptError("installer.unknown_provider", f"unknown provider {name!r}{did_you_mean(name, names)} "
                           f"(use one of: {', '.join(names)})")
    return AGENTS[pid]


def select(names=None) -> list[Agent]:
    """The agents named (in registry order, no repeats), or all four."""
    if not names:
        return list(AGENTS.values())
    wanted = {get(n).provider for n in names}
    return [a for a in AGENTS.values() if a.provider in wanted]
