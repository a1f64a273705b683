"""The hook command written into agent configs, and recognising commands that are ours.

Invariant: the command is `'<python>' -I -S '<dir>/attemptdb/__main__.py' capture <hook-id>`
where a capture daemon can run (isolated, without `site`: spec/capture-daemon.md), else
`'<absolute path of attempt>' capture <hook-id>` (POSIX quoting:
the path single-quoted, `'` written `'\\''`), or, when no `attempt` executable exists,
`'<python>' -I '<dir>/attemptdb/__main__.py' capture <hook-id>`: isolated mode and an absolute
script, so the repository the agent works in (the hook's working directory) and PYTHON*
variables never reach its imports (`python -m attemptdb` would import a repository's own
`attemptdb/` first). Install given a database (`--db`, ATTEMPTDB_PATH) adds `--db '<absolute
path>'` after the hook id, so the hooks write where the user chose. Recognition accepts every form any AttemptDB ever wrote: first token
named `attempt`/`attempt.exe` followed by `capture` (or the legacy `hook`),
`attempt-hook <provider>`, a Python interpreter running `-I …/attemptdb/__main__.py` or (the
old, unsafe form, recognised so that `hook install` replaces it) `-m attemptdb`, then
`capture|hook`, or a command with a word that is the legacy hook program (its file name is the
legacy marker `attemptdb-hook`, or `attemptdb-hook.exe`). Nothing else is ever ours: a
command that merely contains the marker (`~/bin/my-attemptdb-hook.sh`) is the user's.
"""

import os
import shutil
import sys

from ..adapters import registry

LEGACY_MARKER = "attemptdb-hook"
VERBS = ("capture", "hook")
_EXE_NAMES = ("attempt", "attempt.exe")
_HOOK_BIN_NAMES = ("attempt-hook", "attempt-hook.exe")
_LEGACY_NAMES = (LEGACY_MARKER, LEGACY_MARKER + ".exe")


class Executable:
    """How hooks run AttemptDB: `argv` (absolute paths) and where it was found (`source`:
    running-script | environment | path | python-module, the last being the isolated
    interpreter form, resources.isolated_argv)."""

    __slots__ = ("argv", "source")

    def __init__(self, argv, source):
        self.argv = list(argv)
        self.source = source

    def command(self, hook_id: str, db: str | None = None) -> str:
        """The hook command for `hook_id`; with `db` (an absolute path), `--db '<db>'` after it:
        the hooks then write to that database whatever the agent's working directory and
        environment (without it they resolve the database as every command does)."""
        cmd = " ".join([shell_quote(self.argv[0])] + [_word(a) for a in self.argv[1:]] + ["capture", hook_id])
        return cmd if db is None else f"{cmd} --db {shell_quote(db)}"

    @property
    def path(self) -> str:
        return self.argv[0]

    def to_json(self):
        return {"argv": self.argv, "source": self.source}


def _is_attempt_script(p: str) -> bool:
    return os.path.basename(p) in _EXE_NAMES and os.path.isfile(p) and os.access(p, os.X_OK)


def find_executable(argv0: str | None = None) -> Executable:
    """The `attempt` that hooks should call: the running `attempt` script when that is what
    runs; else the `attempt` script of this interpreter's environment; else `attempt` on PATH;
    else this interpreter in isolated mode running this package's `__main__.py` by path. Paths are
    absolute but symlinks are kept (a pipx `~/.local/bin/attempt` link survives upgrades)."""
    a0 = sys.argv[0] if argv0 is None else argv0
    if a0 and _is_attempt_script(a0):
        return Executable([os.path.abspath(a0)], "running-script")
    beside = os.path.join(os.path.dirname(sys.executable), "attempt")
    if _is_attempt_script(beside):
        return Executable([os.path.abspath(beside)], "environment")
    found = shutil.which("attempt")
    if found:
        return Executable([os.path.abspath(found)], "path")
    from ..resources import isolated_argv
    return Executable(isolated_argv(), "python-module")


def find_hook_executable(argv0: str | None = None) -> Executable:
    """What hooks run: this interpreter, isolated and without `site`, on this package's
    `__main__.py` (resources.lean_hook_argv, source `lean`) — a hook the capture daemon serves
    then costs less than a bare `python -c pass` (spec/capture-daemon.md). Where no daemon can
    run (no posix_spawn or getuid: Windows), `site` saves nothing: find_executable's `attempt`."""
    if hasattr(os, "posix_spawn") and hasattr(os, "getuid") and sys.executable:
        from ..resources import lean_hook_argv
        return Executable(lean_hook_argv(), "lean")
    return find_executable(argv0)


def _word(s: str) -> str:
    """A flag stays bare (`-I`); anything else (a path) is quoted."""
    return s if s.startswith("-") and s[1:].isalnum() else shell_quote(s)


def shell_quote(s: str) -> str:
    """POSIX single-quoting: `'` becomes `'\\''`."""
    return "'" + s.replace("'", "'\\''") + "'"


def split_command(cmd: str, limit: int = 6) -> list[str]:
    """The first `limit` shell words of `cmd`, with '…' (and the '\\'' idiom), "…" and
    backslash escapes undone; a leading PowerShell `& ` is dropped. Never raises."""
    s = cmd.strip()
    if s.startswith("& ") or s.startswith("&\t"):
        s = s[2:].lstrip()
    words, cur, i, n, have = [], [], 0, len(s), False
    while i < n and len(words) < limit:
        c = s[i]
        if c in " \t\n":
            if have:
                words.append("".join(cur))
                cur, have = [], False
            i += 1
        elif c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                cur.append(s[i + 1:])
                i = n
            else:
                cur.append(s[i + 1:j])
                i = j + 1
            have = True
        elif c == '"':
            i += 1
            while i < n and s[i] != '"':
                if s[i] == "\\" and i + 1 < n and s[i + 1] in '"\\$`':
                    i += 1
                cur.append(s[i])
                i += 1
            i += 1
            have = True
        elif c == "\\" and i + 1 < n:
            cur.append(s[i + 1])
            i += 2
            have = True
        else:
            cur.append(c)
            i += 1
            have = True
    if have and len(words) < limit:
        words.append("".join(cur))
    return words


def command_basename(token: str) -> str:
    return token.replace("\\", "/").rsplit("/", 1)[-1]


def is_python(name: str) -> bool:
    name = name.lower()
    if name.endswith(".exe"):
        name = name[:-4]
    return name.startswith("python") or name == "py"


def parse_ours(cmd) -> dict | None:
    """If `cmd` is one of our hook commands: {"binary": path, "verb": capture|hook|None,
    "hook_id": id or None, "form": attempt|attempt-hook|python-module|legacy-marker}."""
    if not isinstance(cmd, str) or not cmd.strip():
        return None
    w = split_command(cmd)
    if w:
        name = command_basename(w[0])
        if name in _EXE_NAMES and len(w) >= 2 and w[1] in VERBS:
            return {"binary": w[0], "verb": w[1], "hook_id": w[2] if len(w) > 2 else None,
                    "form": "attempt"}
        if name.lower() in _HOOK_BIN_NAMES and len(w) >= 2 and registry.provider_id(w[1]):
            return {"binary": w[0], "verb": None, "hook_id": w[1], "form": "attempt-hook"}
        if is_python(name) and len(w) >= 5 and w[1] == "-I" and w[2] == "-S" and w[4] in VERBS \
                and w[3].replace("\\", "/").endswith("/attemptdb/__main__.py"):
            return {"binary": w[0], "verb": w[4], "hook_id": w[5] if len(w) > 5 else None,
                    "form": "python-lean", "script": w[3]}
        if (is_python(name) and len(w) >= 4 and w[3] in VERBS
                and ((w[1] == "-m" and w[2] == "attemptdb")
                     or (w[1] == "-I" and w[2].replace("\\", "/").endswith("/attemptdb/__main__.py")))):
            return {"binary": w[0], "verb": w[3], "hook_id": w[4] if len(w) > 4 else None,
                    "form": "python-module"}
    if LEGACY_MARKER in cmd and any(command_basename(x).lower() in _LEGACY_NAMES
                                    for x in split_command(cmd, limit=64)):
        return {"binary": w[0] if w else None, "verb": None, "hook_id": None, "form": "legacy-marker"}
    return None


def is_ours(cmd) -> bool:
    return parse_ours(cmd) is not None


def with_capture_mode(cmd: str, mode: str) -> str:
    """One of our hook commands with `--capture-mode mode` after it (added_capture_mode reads it)."""
    bare = mode.isascii() and mode.replace("_", "").isalnum()  # metadata_only: as one types it
    return f"{cmd} --capture-mode {mode if bare else shell_quote(mode)}"


def _option(cmd, flag: str) -> str | None:
    """The value of `flag` (`--flag V` or `--flag=V`) in one of our hook commands, or None."""
    if not is_ours(cmd):
        return None
    words = split_command(cmd, limit=64)
    for i, w in enumerate(words):
        if w == flag and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(flag + "="):
            return w.split("=", 1)[1]
    return None


def hook_db(cmd) -> str | None:
    """The database one of our hook commands writes to when it names one (`--db PATH`, as
    `attempt hook install --db` writes it), else None: the hook resolves it as every command
    does (ATTEMPTDB_PATH, a trusted ./.attemptdb, the per-user default)."""
    return _option(cmd, "--db")


def added_capture_mode(cmd) -> str | None:
    """The `--capture-mode M` someone added to one of our hook commands (the flag can only lower
    the database's mode): a rewritten command keeps it."""
    return _option(cmd, "--capture-mode")
