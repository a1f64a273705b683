"""What an agent's config says about our hooks (read only): installed, stale, disabled,
trusted.

Invariant: the expected configuration is exactly what `install` would write now (the same
`registry.CAPTURE_EVENTS` list, the same command for the executable found now), so
`inspect` reports `broken` for every difference install would repair — entries missing,
for obsolete events, duplicated, pointing at another or a missing binary, or differing in
shape — and for every switch that silences them (Claude Code `disableAllHooks`, Codex
`[features] hooks = false` or a hook disabled in `/hooks`, Gemini `hooksConfig`). A database
the entries name (`--db`) is where they write (`database`), not a difference; nor is a hook
timeout the user set to another positive number (a note: install keeps it). Codex
trust is computed as Codex computes it and reported separately (`trust`), because only the
user can grant it.
"""

import os

from . import codexconfig, fileops, jsonstyle, merge

NOT_INSTALLED = "not_installed"
INSTALLED = "installed"
BROKEN = "broken"


class AgentState:
    def __init__(self, agent):
        self.agent = agent
        self.config_path = agent.config_path()
        self.detected, self.detected_how = agent.detect()
        self.config_state = NOT_INSTALLED
        self.entries = []          # [{event, group, handler, command}]
        self.problems = []         # reasons for `broken`
        self.notes = []
        self.trust = None          # Codex: trusted | untrusted | modified | None
        self.trust_detail = None
        self.database = None       # the database the hooks name (`--db`), None: resolved as usual

    def to_json(self):
        out = {"provider": self.agent.provider, "hook_id": self.agent.hook_id,
               "agent": self.agent.label, "detected": self.detected,
               "config_path": self.config_path, "config_state": self.config_state,
               "entries": len(self.entries), "problems": list(self.problems),
               "notes": list(self.notes)}
        if self.entries:
            out["hooks_database"] = self.database
        if self.trust is not None:
            out["trust"] = self.trust
        return out


def _entries(agent, root):
    out = []
    hooks = root.get("hooks")
    if hooks is None or hooks.value.kind != "object":
        return out
    for ev, f in merge.find_ours(agent, root).items():
        arr = hooks.value.get(ev).value
        for gi, hi in f.spots:
            node = arr.items[gi] if hi is None else arr.items[gi].get("hooks").value.items[hi]
            obj = node.to_python()
            out.append({"event": ev, "group": gi, "handler": hi, "object": obj,
                        "command": obj.get("command"), "whole_group": gi in f.whole_groups,
                        "unit": arr.items[gi].to_python()})
    return out


def _binary(command):
    from .command import parse_ours
    p = parse_ours(command)
    return p["binary"] if p else None


def _script(command):
    from .command import parse_ours
    p = parse_ours(command)
    return p.get("script") if p else None


def inspect(agent, executable) -> AgentState:
    st = AgentState(agent)
    try:
        data = fileops.read_config(st.config_path)
        text = None if data is None else jsonstyle.decode(data)
        root = merge.parse_config(agent, text)
    except Exception as e:  # AttemptError (malformed) or anything unreadable
        code = getattr(e, "code", "installer.config_unreadable")
        msg = getattr(e, "message", type(e).__name__)
        st.config_state = BROKEN
        st.problems.append(f"config cannot be read: {msg} [{code}]")
        return st
    if root is None:
        return st
    st.entries = _entries(agent, root)
    if not st.entries:
        return st
    st.config_state = INSTALLED
    from .command import hook_db
    dbs = sorted({hook_db(e["command"]) for e in st.entries}, key=lambda d: d or "")
    st.database = dbs[0]
    if len(dbs) > 1:
        st.problems.append(f"entries write to {len(dbs)} different databases")
    expected = merge.written_command(agent, root, executable.command(agent.hook_id, st.database))
    wanted = set(agent.events)
    have = {}
    for e in st.entries:
        have.setdefault(e["event"], []).append(e)
    missing = [ev for ev in agent.events if ev not in have]
    obsolete = sorted(ev for ev in have if ev not in wanted)
    dupes = sorted(ev for ev, es in have.items() if len(es) > 1)
    if missing:
        st.problems.append(f"missing events: {', '.join(missing)}")
    if obsolete:
        st.problems.append(f"entries for events no longer captured: {', '.join(obsolete)}")
    if dupes:
        st.problems.append(f"duplicate entries: {', '.join(dupes)}")
    binaries = sorted({b for b in (_binary(e["command"]) for e in st.entries) if b})
    if len(binaries) > 1:
        st.problems.append(f"entries call {len(binaries)} different executables")
    for b in binaries:
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            st.problems.append(f"the executable in the hooks does not exist: {b}")
    for script in sorted({s for s in (_script(e["command"]) for e in st.entries) if s}):
        if not os.path.isfile(script):  # the lean form names the package's __main__.py (moved by a rebuild)
            st.problems.append(f"the script in the hooks does not exist: {script}")
    if binaries and executable.path not in binaries:
        st.problems.append(f"entries call {binaries[0]}, not this attempt ({executable.path})")
    else:
        units = [(e["unit"], agent.unit(e["event"], expected)) for e in st.entries if e["event"] in wanted]
        if any(not merge.same_value(merge.untimed(have_), merge.untimed(want)) for have_, want in units):
            st.problems.append("entries differ from what `attempt hook install` writes")
        elif any(not merge.same_value(have_, want) for have_, want in units):
            # a timeout the user set is theirs: install keeps it and it is not a difference to repair
            st.notes.append("a hook timeout differs from the one `attempt hook install` writes (kept as you set it)")
    _switches(agent, root, st)
    if st.problems:
        st.config_state = BROKEN
    return st


def silencing(agent, doc, names) -> list[tuple[str, bool]]:
    """What in the agent's hooks config (`doc`, parsed) keeps our hooks from running, as
    (problem, whether it silences every hook): Claude Code's `disableAllHooks`, Gemini CLI's
    `hooksConfig.enabled = false`, or one of `names` (our hooks' names) in its
    `hooksConfig.disabled`. (Codex's switch is in config.toml: codexconfig.hooks_feature.)
    Doctor reports each as a problem; install notes it and leaves it as the user set it."""
    out = []
    if not isinstance(doc, dict):
        return out
    if agent.provider == "claude_code" and doc.get("disableAllHooks") is True:
        out.append(("Claude Code has disableAllHooks set to true", True))
    elif agent.provider == "gemini_cli":
        hc = doc.get("hooksConfig")
        if isinstance(hc, dict):
            if hc.get("enabled") is False:
                out.append(("Gemini CLI hooks are turned off (hooksConfig.enabled = false)", True))
            disabled = hc.get("disabled")
            if isinstance(disabled, list) and set(names) & {x for x in disabled if isinstance(x, str)}:
                out.append(("some attemptdb hooks are listed in hooksConfig.disabled", False))
    return out


def _switches(agent, root, st):
    names = {e["object"].get("name") for e in st.entries}
    st.problems.extend(p for p, _ in silencing(agent, root.to_python(), names))
    if agent.provider == "codex":
        _codex(agent, st)


def _codex(agent, st):
    try:
        data = fileops.read_config(agent.settings_path())
        doc, err = codexconfig.load(None if data is None else jsonstyle.decode(data))
    except Exception:
        doc, err = None, "installer.codex_config_unreadable"
    if err:
        st.problems.append("Codex config.toml cannot be read or parsed; Codex will not run hooks")
        st.trust = codexconfig.UNTRUSTED
        return
    state, key = codexconfig.hooks_feature(doc)
    if state == codexconfig.DISABLED:
        st.problems.append(f"Codex hooks are turned off ([features].{key} = false in config.toml)")
    hooks_json = os.path.abspath(st.config_path)
    paths = [hooks_json]
    real = os.path.realpath(hooks_json)
    if real != hooks_json:
        paths.append(real)
    statuses, disabled = [], []
    for e in st.entries:
        obj = e["object"]
        t = obj.get("timeout")
        timeout = t if isinstance(t, int) and not isinstance(t, bool) else 600
        cmd = obj.get("command") if isinstance(obj.get("command"), str) else ""
        trust, enabled = codexconfig.hook_state(doc, paths, e["event"], e["group"],
                                                e["handler"] or 0, cmd, timeout)
        statuses.append(trust)
        if not enabled:
            disabled.append(e["event"])
    if disabled:
        st.problems.append(f"hooks disabled in Codex (/hooks): {', '.join(disabled)}")
    if all(s == codexconfig.TRUSTED for s in statuses):
        st.trust = codexconfig.TRUSTED
    elif any(s == codexconfig.MODIFIED for s in statuses):
        st.trust = codexconfig.MODIFIED
    else:
        st.trust = codexconfig.UNTRUSTED
    n_ok = statuses.count(codexconfig.TRUSTED)
    st.trust_detail = f"{n_ok}/{len(statuses)} hook{'' if len(statuses) == 1 else 's'} trusted"
