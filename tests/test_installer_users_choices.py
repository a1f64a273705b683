"""`attempt hook install / uninstall` respects what the user chose in an agent's config: a hook of
theirs is theirs whatever its name (ours only by its command), a config they made read-only is
refused rather than replaced, a switch that turns the hooks off is left as they set it and said,
and Cursor's `"version": 1` stays while a hook of theirs is read under it."""

import json
import os
import stat

import pytest
from conftest import run_attempt
from test_installer import EXE, REAL, make_home, styled

from attemptdb.installer import agents, fileops, install, mcpconfig, merge, record
from attemptdb.installer.command import Executable

PROVIDERS = sorted(REAL)
READ_ONLY = "installer.config_read_only"


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)


def _install(provider, **kw):
    return install.install([provider], executable=EXE, verify=False, **kw)


def _beside(path):
    """Our files beside the config: backups, the record, a temp file, a lock."""
    d, base = os.path.split(path)
    return sorted(n for n in os.listdir(d) if n.startswith(base + ".attemptdb."))


def _users_hook(provider, command, name=None):
    agent = agents.AGENTS[provider]
    h = {"type": "command", "command": command} if agent.shape == agents.NESTED else {"command": command}
    if name:
        h["name"] = name
    return {"hooks": [h]} if agent.shape == agents.NESTED else h


# --- 1. ours by the command, never by a name --------------------------------------------------

def test_a_gemini_hook_of_the_users_named_attemptdb_survives_install_and_uninstall(home):
    """The walkthrough's repro: install replaced it with ours, uninstall left `{}`."""
    make_home(home, "gemini_cli")
    path = agents.AGENTS["gemini_cli"].config_path()
    original = (b'{"hooks": {"AfterAgent": [{"hooks": [{"name": "attemptdb-sync", "type": "command", '
                b'"command": "~/bin/my-attemptdb-sync.sh"}]}]}}\n')
    _write(path, original)
    a = _install("gemini_cli").actions[0]
    assert a.outcome == merge.INSTALLED and a.removed == []
    groups = json.loads(_read(path))["hooks"]["AfterAgent"]
    assert groups[0] == {"hooks": [{"name": "attemptdb-sync", "type": "command",
                                    "command": "~/bin/my-attemptdb-sync.sh"}]}
    assert len(groups) == 2 and agents.AGENTS["gemini_cli"].is_ours_object(groups[1]["hooks"][0])
    assert install.uninstall(["gemini_cli"]).actions[0].outcome == merge.REMOVED
    assert _read(path) == original


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_users_hook_whose_command_only_mentions_attemptdb_is_theirs(home, provider):
    """A command that contains the legacy marker `attemptdb-hook` (a script of theirs) is not
    the legacy program: every agent keeps it through install and uninstall."""
    make_home(home, provider)
    agent = agents.AGENTS[provider]
    ev = agent.events[0]
    doc = {"version": 1} if provider == "cursor" else {}
    doc["hooks"] = {ev: [_users_hook(provider, "~/bin/my-attemptdb-hook.sh", name="attemptdb-mine")]}
    original = styled(doc, 2, False, True)
    path = agent.config_path()
    _write(path, original)
    a = _install(provider).actions[0]
    assert a.outcome == merge.INSTALLED and a.removed == []
    assert json.loads(_read(path))["hooks"][ev][0] == doc["hooks"][ev][0]
    install.uninstall([provider])
    assert _read(path) == original


# --- 2. a config made read-only ---------------------------------------------------------------

def _read_only_case(home, provider, installed_first):
    make_home(home, provider)
    path = agents.AGENTS[provider].config_path()
    _write(path, styled(REAL[provider], 2, False, True))
    if installed_first:
        assert _install(provider).ok
    before, listing = _read(path), _beside(path)
    os.chmod(path, 0o444)
    return path, before, listing


def _refused(a, path, before, listing):
    assert a.outcome == install.FAILED and a.error[0] == READ_ONLY, a.to_json()
    assert path in a.error[1] and "chmod u+w" in a.error[1]
    assert _read(path) == before
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert _beside(path) == listing  # no backup, no record, no temp file, no lock left


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_install_refuses_a_config_made_read_only(home, provider, dry_run):
    path, before, listing = _read_only_case(home, provider, installed_first=False)
    r = _install(provider, dry_run=dry_run)
    assert not r.ok
    _refused(r.actions[0], path, before, listing)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_uninstall_refuses_a_config_made_read_only(home, provider):
    path, before, listing = _read_only_case(home, provider, installed_first=True)
    r = install.uninstall([provider])
    assert not r.ok
    _refused(r.actions[0], path, before, listing)
    os.chmod(path, 0o644)  # as the message says: then it works
    assert install.uninstall([provider]).actions[0].outcome == merge.REMOVED


def test_a_read_only_config_that_needs_no_change_is_no_failure(home):
    path, before, _ = _read_only_case(home, "claude_code", installed_first=True)
    r = _install("claude_code")
    assert r.ok and r.actions[0].outcome == merge.CURRENT


def test_a_read_only_file_behind_a_symlink_is_refused(home, tmp_path):
    make_home(home, "cursor")
    target = tmp_path / "dotfiles" / "cursor-hooks.json"
    target.parent.mkdir()
    target.write_text(json.dumps(REAL["cursor"]))
    target.chmod(0o444)
    path = agents.AGENTS["cursor"].config_path()
    os.symlink(target, path)
    a = _install("cursor").actions[0]
    assert a.error[0] == READ_ONLY and os.path.islink(path)
    assert json.loads(target.read_text()) == REAL["cursor"]


def test_codex_refuses_before_hooks_json_when_config_toml_is_read_only(home):
    """config.toml would get `[features] hooks = true`: with it read-only, hooks.json is not
    written either (nothing half done)."""
    make_home(home, "codex")
    codex = agents.AGENTS["codex"]
    toml = codex.settings_path()
    _write(toml, b'model = "gpt-5-codex"\n')
    os.chmod(toml, 0o444)
    a = _install("codex").actions[0]
    assert a.outcome == install.FAILED and a.error[0] == READ_ONLY and toml in a.error[1]
    assert not os.path.exists(codex.config_path())
    assert _read(toml) == b'model = "gpt-5-codex"\n'


def test_a_config_owned_by_someone_else_is_refused(home, monkeypatch):
    make_home(home, "claude_code")
    path = agents.AGENTS["claude_code"].config_path()
    _write(path, b"{}\n")
    real = os.access
    monkeypatch.setattr(fileops.os, "access", lambda p, m, **kw: False if p.endswith("settings.json") else real(p, m))
    a = _install("claude_code").actions[0]
    assert a.error[0] == READ_ONLY and "not writable by you" in a.error[1]
    assert _read(path) == b"{}\n"


def test_mcp_registration_refuses_a_read_only_mcp_config(home):
    make_home(home, "cursor")
    path = os.path.join(agents.AGENTS["cursor"].home()[0], "mcp.json")
    _write(path, b'{"mcpServers": {}}\n')
    os.chmod(path, 0o444)
    exe = Executable(["/opt/attemptdb/bin/attempt"], "path")
    r, = mcpconfig.register(["cursor"], executable=exe)
    assert r.outcome == "failed" and r.error[0] == READ_ONLY
    assert _read(path) == b'{"mcpServers": {}}\n'


def test_cli_says_which_file_and_how_to_proceed(home):
    make_home(home, "claude_code")
    path = agents.AGENTS["claude_code"].config_path()
    _write(path, b'{"model": "opus"}\n')
    os.chmod(path, 0o444)
    p = run_attempt(["hook", "install", "--provider", "claude-code", "--no-verify"], env={"COLUMNS": "200"})
    out = " ".join(p.stdout.decode().split())  # (lines fitted to the terminal)
    assert p.returncode == 1, out + p.stderr.decode()
    assert f"error[{READ_ONLY}]: {path} is read-only (mode 0444): to let attempt edit it, run " in out
    assert f"`chmod u+w {path}` and run the command again (file left untouched)" in out
    assert _read(path) == b'{"model": "opus"}\n'


# --- 3. a switch that turns the hooks off -----------------------------------------------------

@pytest.mark.parametrize("provider,switch,says", [
    ("gemini_cli", {"hooksConfig": {"enabled": False}}, "hooksConfig.enabled = false in settings.json"),
    ("claude_code", {"disableAllHooks": True}, "disableAllHooks set to true in settings.json"),
    ("gemini_cli", {"hooksConfig": {"disabled": ["attemptdb-beforetool"]}}, "listed in hooksConfig.disabled"),
])
def test_install_notes_hooks_turned_off_and_leaves_the_switch(home, provider, switch, says):
    """Install said `installed` and the capture test `ok`, with no word that the agent will not
    run the hooks (doctor then said so); Codex's `[features] hooks = false` had its note."""
    make_home(home, provider)
    path = agents.AGENTS[provider].config_path()
    _write(path, json.dumps(switch).encode())
    for outcome in (merge.INSTALLED, merge.CURRENT):  # said again by a second install
        a = _install(provider).actions[0]
        assert a.outcome == outcome
        notes = [n for n in a.notes if says in n]
        assert len(notes) == 1 and "left as you set it" in notes[0], a.notes
    doc = json.loads(_read(path))
    assert {k: doc[k] for k in switch} == switch


def test_no_note_when_the_hooks_are_on(home):
    make_home(home, "gemini_cli")
    path = agents.AGENTS["gemini_cli"].config_path()
    _write(path, json.dumps(REAL["gemini_cli"]).encode())  # hooksConfig.enabled = true
    assert not any("left as you set it" in n for n in _install("gemini_cli").actions[0].notes)


def test_cli_prints_the_gemini_note(home):
    make_home(home, "gemini_cli")
    _write(agents.AGENTS["gemini_cli"].config_path(), b'{"hooksConfig": {"enabled": false}}\n')
    p = run_attempt(["hook", "install", "--provider", "gemini-cli", "--no-verify"], env={"COLUMNS": "200"})
    out = " ".join(p.stdout.decode().split())
    assert p.returncode == 0 and "note: Gemini CLI hooks are turned off (hooksConfig.enabled = false" in out


# --- 4. Cursor's "version" --------------------------------------------------------------------

def _add_users_hook(path):
    doc = json.loads(_read(path))
    doc["hooks"]["stop"].append({"command": "~/bin/mine.sh"})
    doc["hooks"]["beforeMCPExecution"] = [{"command": "~/bin/mcp.sh"}]
    _write(path, json.dumps(doc, indent=2).encode())


MINE = {"stop": [{"command": "~/bin/mine.sh"}], "beforeMCPExecution": [{"command": "~/bin/mcp.sh"}]}


def test_cursor_version_stays_while_the_users_hooks_do(home):
    """A hooks.json install created, a hook the user added: uninstall took `version` out from
    under it."""
    make_home(home, "cursor")
    path = agents.AGENTS["cursor"].config_path()
    _install("cursor")
    _add_users_hook(path)
    assert install.uninstall(["cursor"]).actions[0].outcome == merge.REMOVED
    assert json.loads(_read(path)) == {"version": 1, "hooks": MINE}


def test_cursor_version_added_to_the_users_file_stays_once_they_add_a_hook(home):
    make_home(home, "cursor")
    path = agents.AGENTS["cursor"].config_path()
    _write(path, styled({"hooks": {"stop": [{"command": "~/bin/mine.sh"}]}}, 2, False, True))
    _install("cursor")
    doc = json.loads(_read(path))
    doc["hooks"]["beforeMCPExecution"] = [{"command": "~/bin/mcp.sh"}]
    _write(path, json.dumps(doc, indent=2).encode())
    install.uninstall(["cursor"])
    assert json.loads(_read(path)) == {"version": 1, "hooks": MINE}


def test_cursor_version_recorded_before_hooks_before_goes_only_with_the_last_hook(home):
    """A record an earlier version wrote (no `hooks_before`): `version` stays while any hook
    is left, and goes once none is."""
    make_home(home, "cursor")
    path = agents.AGENTS["cursor"].config_path()
    _install("cursor")
    rec = record.load(path)
    for part in rec.created[record.HOOKS]:
        part.pop("hooks_before", None)
    record.save(path, rec)
    assert record.load(path) == rec
    _add_users_hook(path)
    install.uninstall(["cursor"])
    assert json.loads(_read(path)) == {"version": 1, "hooks": MINE}

    os.unlink(path)
    _install("cursor")
    rec = record.load(path)
    for part in rec.created[record.HOOKS]:
        part.pop("hooks_before", None)
    record.save(path, rec)
    install.uninstall(["cursor"])
    assert not os.path.exists(path)  # nothing else left: the file install created goes


# --- a hook timeout the user tuned is theirs --------------------------------------------------

def _our_handlers(provider, doc, event):
    from attemptdb.installer.command import is_ours
    items = doc["hooks"][event]
    if agents.AGENTS[provider].shape == agents.FLAT:
        return [h for h in items if is_ours(h.get("command"))]
    return [h for g in items for h in g.get("hooks", []) if is_ours(h.get("command"))]


def _tune(path, provider, event, timeout):
    doc = json.loads(_read(path))
    (h,) = _our_handlers(provider, doc, event)
    h["timeout"] = timeout
    _write(path, json.dumps(doc, indent=2).encode())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_timeout_the_user_tuned_is_kept_and_not_called_broken(home, provider):
    from attemptdb.installer import state
    make_home(home, provider)
    agent = agents.AGENTS[provider]
    path = agent.config_path()
    _install(provider)
    first, second = agent.events[0], agent.events[1]
    _tune(path, provider, first, 42_000 if provider == "gemini_cli" else 42)
    tuned = _read(path)
    st = state.inspect(agent, EXE)  # EXE names no real file: that problem is the only one
    assert st.problems == [f"the executable in the hooks does not exist: {EXE.path}"], st.problems
    assert any("timeout" in n for n in st.notes)
    assert _install(provider).actions[0].outcome == merge.CURRENT and _read(path) == tuned

    # a repair (an entry gone) writes every other entry anew and keeps the tuned timeout
    doc = json.loads(tuned)
    del doc["hooks"][second]
    _write(path, json.dumps(doc, indent=2).encode())
    assert _install(provider).actions[0].outcome == merge.UPDATED
    doc = json.loads(_read(path))
    assert [h["timeout"] for h in _our_handlers(provider, doc, first)] == [42_000 if provider == "gemini_cli" else 42]
    assert [h["timeout"] for h in _our_handlers(provider, doc, second)] == [agent.entry(second, "")["timeout"]]


@pytest.mark.parametrize("timeout", ["42", 0, -5, True, None])
def test_a_timeout_that_is_not_a_positive_number_is_a_difference_install_repairs(home, timeout):
    from attemptdb.installer import state
    provider = "claude_code"
    make_home(home, provider)
    agent = agents.AGENTS[provider]
    path = agent.config_path()
    _install(provider)
    _tune(path, provider, agent.events[0], timeout)
    assert "entries differ from what `attempt hook install` writes" in state.inspect(agent, EXE).problems
    assert _install(provider).actions[0].outcome == merge.UPDATED
    doc = json.loads(_read(path))
    assert [h["timeout"] for h in _our_handlers(provider, doc, agent.events[0])] == [5]
