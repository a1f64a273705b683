"""`attempt hook install / uninstall`: apply the merge to each agent's config, safely.

Invariants: per agent, the config is read, merged and written under its lock; nothing is
written when the merge changes nothing (no write, no backup — a second install is a no-op);
a change is backed up and written atomically through symlinks; what install created is
recorded beside the config after the write (see `record`: with the whitespace of each empty
container of the user's it filled) and uninstall takes back exactly that, so install then
uninstall gives back the bytes before (a file install created is
removed, after a backup, once nothing else is in it); `recording` / `unrecording` do the same
for the MCP server's JSON configs (attemptdb.installer.mcpconfig), in the one record per file
both installs share (Gemini CLI's settings.json); a malformed config, or one the user made
read-only (`installer.config_read_only`, for Codex also a config.toml that would change,
checked before hooks.json is touched), is reported as `failed` with a coded error and left
untouched; a switch in the config that keeps the agent from running hooks is noted and left
as set (`state.silencing`); `dry_run` computes everything
and writes nothing (no lock file, no directory, no backup). Directories are created only
for detected agents. For Codex, `config.toml` gets the minimal feature-flag edit of
`codexconfig` (never trust state), through the same `edit` and record (shared there with
the MCP server's table). A database install is given (`db`, else ATTEMPTDB_PATH) is named in
every hook command (`--db '<absolute path>'`): agents do not see the installing shell's
variables. After a real install each installed agent gets a capture test (see `capturetest`)
of that very command, against that database.
"""

import os

from ..errors import AttemptError
from ..store import location
from . import agents as agents_mod
from . import codexconfig, fileops, jsonstyle, mcpentry, merge, record, state
from .command import Executable, find_hook_executable

FAILED = "failed"
SKIPPED = "skipped"
ACTIVE_OUTCOMES = (merge.INSTALLED, merge.UPDATED, merge.CURRENT)


class Action:
    """What happened (or would happen) to one agent's config."""

    def __init__(self, agent, config_path):
        self.agent = agent
        self.config_path = config_path
        self.detected = None
        self.detected_how = None
        self.outcome = None
        self.reason = None
        self.error = None            # (code, message)
        self.backup = None
        self.removed = []
        self.added = []
        self.notes = []
        self.settings = None         # Codex config.toml: {path, outcome, backup}

    @property
    def failed(self) -> bool:
        return self.outcome == FAILED

    def to_json(self):
        out = {"provider": self.agent.provider, "hook_id": self.agent.hook_id,
               "agent": self.agent.label, "config_path": self.config_path,
               "detected": self.detected, "outcome": self.outcome}
        if self.reason:
            out["reason"] = self.reason
        if self.error:
            out["error"] = {"code": self.error[0], "message": self.error[1]}
        if self.backup:
            out["backup"] = self.backup
        out["events_added"] = self.added
        out["events_removed"] = self.removed
        if self.settings:
            out["settings"] = self.settings
        out["notes"] = self.notes
        return out


class Report:
    def __init__(self, operation, executable, dry_run):
        self.operation = operation
        self.executable = executable
        self.dry_run = dry_run
        self.actions: list[Action] = []
        self.capture_tests: list[dict] = []
        self.missing: list[Action] = []  # agents named to install that are not detected (not forced)
        self.database = None  # install: the database the hooks name (`--db`), None: resolved as usual

    @property
    def ok(self) -> bool:
        return (not any(a.failed for a in self.actions) and not self.missing
                and all(t.get("ok") for t in self.capture_tests))

    def to_json(self):
        out = {"ok": self.ok, "operation": self.operation, "dry_run": self.dry_run}
        if self.executable is not None:
            out["executable"] = self.executable.to_json()
        if self.operation == "install":
            out["database"] = self.database
        out["actions"] = [a.to_json() for a in self.actions]
        if self.operation == "install":
            out["capture_tests"] = self.capture_tests
        return out


def _read_text(path):
    data = fileops.read_config(path)
    return data, (None if data is None else jsonstyle.decode(data))


def _write(path, before, new_text, dry_run):
    """Back up and replace (unless dry-run); returns the backup path."""
    if dry_run:
        return None
    bak = fileops.backup(path, before) if before is not None else None
    fileops.atomic_write(path, new_text.encode("utf-8"), expect=before)
    return bak


def edit(path, plan, dry_run, after=None):
    """Read → plan(text) → write (or remove, `res.delete`) → after(res), under the config's
    lock (no lock, no write and no `after` for a dry run). A change to a file made read-only is
    refused before anything is written (`fileops.check_writable`; a dry run says so too)."""
    if dry_run:
        before, text = _read_text(path)
        res = plan(text)
        if res.changed:
            fileops.check_writable(path)
        return res, None
    with fileops.Lock(path):
        before, text = _read_text(path)
        res = plan(text)
        if res.changed:
            fileops.check_writable(path)
        bak = None
        if res.delete:
            bak = fileops.backup(path, before)
            fileops.remove_created(path, expect=before)
        elif res.changed:
            bak = _write(path, before, res.text, False)
        if after is not None:
            after(res)
    return res, bak


def present(agent, path, text) -> set:
    """The installs (record.HOOKS, record.MCP) whose entries the config at `path` holds in
    `text`: a file holds the hooks' when it is the agent's hooks config, the MCP server's when
    it is its MCP config (Gemini CLI's settings.json is both)."""
    out = set()
    if text is None:
        return out
    if agent.provider == "codex" and path == agent.settings_path():  # config.toml: marked lines
        if codexconfig.ours(text):
            out.add(record.HOOKS)
        if mcpentry.registered(agent, text):
            out.add(record.MCP)
        return out
    if path == agent.config_path():
        try:
            root = merge.parse_config(agent, text)
        except AttemptError:
            root = None
        if root is not None and merge.find_ours(agent, root):
            out.add(record.HOOKS)
    if path == mcpentry.config_path(agent) and mcpentry.registered(agent, text):
        out.add(record.MCP)
    return out


def _now(res, text):
    """What the config holds once `res` is applied to `text` (None: no file)."""
    return None if res.delete else (text if res.text is None else res.text)


def recording(agent, path, owner, plan_fn, fresh_fn):
    """(plan(text), after(res), notes) for `owner`'s install (record.HOOKS, record.MCP): the
    plan, then the record of what it created (`res.created`; `fresh_fn(res)`: none of its
    entries was there), written beside the config after it."""
    notes, seen = [], {}

    def plan(text):
        seen["prior"] = record.load(path)
        seen["text"] = text
        return plan_fn(text)

    def after(res):
        if not res.changed:
            return
        prior = seen["prior"]
        new = record.after_install(prior, owner, seen["text"], res.created, fresh_fn(res),
                                   present(agent, path, _now(res, seen["text"])), getattr(res, "filled", ()))
        if new is not None and new != prior:
            record.save_quietly(path, new, notes)

    return plan, after, notes


def unrecording(agent, path, owner, plan_fn):
    """(plan(text), after(res), notes) for `owner`'s uninstall: `plan_fn(text, record)`, then
    the record less what it listed for `owner` (none once no other install's entries are
    left)."""
    notes, seen = [], {}

    def plan(text):
        seen["prior"] = record.load(path)
        seen["text"] = text
        return plan_fn(text, seen["prior"])

    def after(res):  # our entries are out (or were gone): nothing of ours left to take back
        prior = seen["prior"]
        now = _now(res, seen["text"])
        new = record.after_uninstall(prior, owner, present(agent, path, now))
        if new is not None and new.filled:  # those written back (or gone) are done with
            kept = merge.still_filled(now, new.filled, agent.allow_comments)
            new = new.pending(lambda p: p in [f["path"] for f in kept])
        if (new is None and os.path.lexists(record.record_path(path))) or (new is not None and new != prior):
            record.save_quietly(path, new, notes)

    return plan, after, notes


def _plan_install(agent, path, command, before, off):
    """(plan(text), after(res), notes) for install: the merge given the record of earlier
    installs, then the record of what this one created (a fresh install's starts anew).
    `before` gets the databases the hooks already there wrote to (`merge.hook_dbs`), `off` a
    note for each switch in the config that keeps our hooks from running (`state.silencing`:
    left as the user set it, as Codex's `[features] hooks = false` is)."""
    def plan(text):
        root = merge.parse_config(agent, text)
        before.update(merge.hook_dbs(agent, root))
        off[:] = _silenced_notes(agent, path, root, command)
        return merge.plan_install(agent, text, command)
    return recording(agent, path, record.HOOKS, plan, lambda res: not res.removed)


def _silenced_notes(agent, path, root, command) -> list:
    if root is None:
        return []
    names = {agent.entry(ev, command).get("name") for ev in agent.events} - {None}
    where = os.path.basename(path)
    out = []
    for problem, every in state.silencing(agent, root.to_python(), names):
        said = f"{problem[:-1]} in {where})" if problem.endswith(")") else f"{problem} in {where}"
        out.append(f"{said}; left as you set it — attempt captures nothing "
                   + (f"from {agent.label} until you turn its hooks on" if every
                      else "through those hooks until you take them out of that list"))
    return out


def hook_database(db) -> str | None:
    """The database installed hooks name (`--db`): the one install was given (`db`, else
    ATTEMPTDB_PATH), as an absolute path; None when neither names one (the hooks then resolve
    it as every command does: a trusted ./.attemptdb where the agent works, else the default)."""
    chosen = db or os.environ.get("ATTEMPTDB_PATH")
    return location.resolve(chosen) if chosen else None


def _where(db_path) -> str:
    return db_path if db_path is not None else f"the default database ({location.default_db()})"


def _codex_settings(agent, action, uninstalling, dry_run):
    """Codex's config.toml: the feature flag on (`codexconfig.plan_enable`) or our lines out
    again (`plan_cleanup`), recorded as the JSON configs' edits are (record.HOOKS)."""
    path = agent.settings_path()
    out = {"path": path, "outcome": "unchanged"}
    if uninstalling:
        plan, after, notes = unrecording(agent, path, record.HOOKS, codexconfig.plan_cleanup)
    else:  # fresh: none of our lines was there (plan_enable never changes our key)
        had = {}

        def enable(text):
            had["ours"] = codexconfig.ours(text)
            return codexconfig.plan_enable(text)

        plan, after, notes = recording(agent, path, record.HOOKS, enable, lambda res: not had["ours"])
    try:
        p, bak = edit(path, plan, dry_run or not os.path.isdir(os.path.dirname(path)), after)
        action.notes.extend(notes)
        if p.delete:
            action.notes.append(f"{'would remove' if dry_run else 'removed'} {path}: install had created it")
        if p.changed:
            out["outcome"] = ("would change" if dry_run else "changed")
            if not p.delete:  # (a removal is said in a note)
                out["change"] = ("takes out the lines marked `# added by attemptdb`" if uninstalling
                                 else "adds `hooks = true` under [features], marked `# added by attemptdb`")
        if bak:
            out["backup"] = bak
        if p.state:
            out["hooks_feature"] = p.state
        if p.note:
            action.notes.append(p.note)
        if p.error:
            out["error"] = p.error
    except AttemptError as e:
        out["outcome"] = "failed"
        out["error"] = e.code
        action.notes.append(f"config.toml: {e.message}")
    action.settings = out


def _settings_writable(agent, uninstalling):
    """Codex: refuse the agent's whole change up front (`installer.config_read_only`, before
    hooks.json is touched) when config.toml would change but was made read-only."""
    path = agent.settings_path()
    if not os.path.isdir(os.path.dirname(path)):
        return
    if uninstalling:
        def plan(text):
            return codexconfig.plan_cleanup(text, record.load(path))
    else:
        plan = codexconfig.plan_enable
    try:
        edit(path, plan, True)
    except AttemptError as e:  # anything else is the settings step's to report
        if e.code == "installer.config_read_only":
            raise


def _detect(agent, action):
    found, how = agent.detect()
    action.detected, action.detected_how = found, how
    return found


def looked_for(agent) -> str:
    """Where detection looked for an agent, for a person: its directory and its launcher."""
    home, from_env = agent.home()
    where = f"the directory {home}" + (" (named by its override variable)" if from_env else "")
    return f"looked for {where} and for `{agent.launcher}` on PATH"


def install(providers=None, *, dry_run=False, executable: Executable | None = None,
            verify=True, db=None, timeout_s=20.0, force=False) -> Report:
    """Install our hooks for the named providers (default: every detected agent). An agent
    that is not detected is skipped, saying where detection looked; one named in `providers`
    is installed anyway with `force` (its config directory is created)."""
    exe = executable or find_hook_executable()
    report = Report("install", exe, dry_run)
    report.database = hook_database(db)
    for agent in agents_mod.select(providers):
        path = agent.config_path()
        a = Action(agent, path)
        report.actions.append(a)
        if not _detect(agent, a) and not (force and providers):
            a.outcome, a.reason = SKIPPED, f"{agent.label} not detected: {looked_for(agent)}"
            if providers:  # asked for by name: not done, and the report says so
                report.missing.append(a)
            continue
        command = exe.command(agent.hook_id, report.database)
        before, off = set(), []
        plan, after, notes = _plan_install(agent, path, command, before, off)
        try:
            if agent.provider == "codex":
                _settings_writable(agent, False)
            if not dry_run:
                fileops.make_parent(path)
            res, bak = edit(path, plan, dry_run, after)
        except AttemptError as e:
            a.outcome, a.error = FAILED, (e.code, e.message)
            continue
        a.outcome, a.backup = res.outcome, bak
        a.notes.extend(notes + off)
        if before - {report.database}:
            a.notes.append(f"the hooks wrote to {', '.join(sorted(_where(d) for d in before))}; "
                           f"{'they would write' if dry_run else 'they now write'} to {_where(report.database)}")
        a.removed, a.added = res.removed, (res.added if res.changed else [])
        if agent.provider == "codex":
            _codex_settings(agent, a, False, dry_run)
            if res.changed:
                a.notes.append("Codex runs new hooks only after you trust them: open Codex and "
                               "approve them with /hooks")
    if verify and not dry_run:
        from . import capturetest
        for a in report.actions:
            if a.outcome in ACTIVE_OUTCOMES:
                report.capture_tests.append(
                    capturetest.run(a.agent, exe.command(a.agent.hook_id, report.database),
                                    db=report.database, timeout_s=timeout_s))
    return report


def uninstall(providers=None, *, dry_run=False) -> Report:
    """Remove our hooks (only ours) from the named providers' configs (default: all)."""
    report = Report("uninstall", None, dry_run)
    for agent in agents_mod.select(providers):
        path = agent.config_path()
        a = Action(agent, path)
        report.actions.append(a)
        _detect(agent, a)
        if not os.path.isdir(os.path.dirname(path)):
            a.outcome, a.reason = merge.NOT_INSTALLED, "no config"
            continue
        plan, after, notes = unrecording(
            agent, path, record.HOOKS, lambda text, rec: merge.plan_uninstall(agent, text, record=rec))
        try:
            if agent.provider == "codex":
                _settings_writable(agent, True)
            res, bak = edit(path, plan, dry_run, after)
        except AttemptError as e:
            a.outcome, a.error = FAILED, (e.code, e.message)
            continue
        a.outcome, a.backup, a.removed = res.outcome, bak, res.removed
        if res.delete:
            notes.insert(0, f"{'would remove' if dry_run else 'removed'} {path}: install had created it")
        a.notes.extend(notes)
        if agent.provider == "codex":
            _codex_settings(agent, a, True, dry_run)
            if res.changed:
                a.notes.append("Codex's trust records for the removed hooks stay in "
                               "config.toml [hooks.state]; they are harmless")
    return report
