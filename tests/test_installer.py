"""attempt hook install / uninstall on each agent's real config shape, in several styles:
idempotent, byte-identical round trips, dry runs, refusals, backups, symlinks, locking."""

import json
import os
import stat
import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT, run_attempt

from attemptdb.adapters import registry
from attemptdb.installer import agents, codexconfig, fileops, install, merge
from attemptdb.installer.command import Executable, find_executable, is_ours, parse_ours, shell_quote, split_command

EXE = Executable(["/opt/attemptdb/bin/attempt"], "test")

# Each agent's real config shape, with the user's own hooks and other keys.
REAL = {
    "claude_code": {
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "permissions": {"allow": ["Bash(npm run lint)", "Read(~/.zshrc)"], "deny": []},
        "env": {"FOO": "bär"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "~/bin/check.sh", "timeout": 30}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        },
        "model": "opus",
        "includeCoAuthoredBy": False,
    },
    "codex": {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "python3 ~/.codex/hooks/policy.py", "timeout": 30,
                 "statusMessage": "Checking Bash command"}]}],
            "SessionStart": [{"matcher": "startup|resume", "hooks": [
                {"type": "command", "command": "sh ~/.codex/hooks/start.sh"}]}],
        },
    },
    "cursor": {
        "version": 1,
        "hooks": {
            "beforeShellExecution": [{"command": "./hooks/guard.sh"}],
            "afterFileEdit": [{"command": "./hooks/format.sh", "timeout": 30}],
            "stop": [{"command": "./hooks/notify.sh"}],
        },
    },
    "gemini_cli": {
        "theme": "GitHub",
        "security": {"auth": {"selectedType": "oauth-personal"}},
        "mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}},
        "hooks": {
            "BeforeTool": [{"matcher": "write_file|replace", "hooks": [
                {"name": "secret-scan", "type": "command",
                 "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/scan.sh", "timeout": 5000}]}],
        },
        "hooksConfig": {"enabled": True},
    },
}

STYLES = {
    "2sp": dict(indent=2, crlf=False, final_nl=True),
    "4sp": dict(indent=4, crlf=False, final_nl=True),
    "tab": dict(indent="\t", crlf=False, final_nl=True),
    "crlf": dict(indent=2, crlf=True, final_nl=True),
    "no-final-newline": dict(indent=4, crlf=False, final_nl=False),
    "crlf-tab-no-final": dict(indent="\t", crlf=True, final_nl=False),
}


def styled(value, indent, crlf, final_nl):
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if crlf:
        text = text.replace("\n", "\r\n")
    if final_nl:
        text += "\r\n" if crlf else "\n"
    return text.encode("utf-8")


def make_home(home, *providers):
    for p in providers or agents.AGENTS:
        os.makedirs(os.path.dirname(agents.AGENTS[p].config_path()), exist_ok=True)


def bak_files(path):
    return fileops.backups(path)


def check_installed(provider, data, original_value, command):
    """The installed file keeps every user key and hook, and holds exactly our set."""
    agent = agents.AGENTS[provider]
    doc = json.loads(data)
    for k, v in original_value.items():
        if k != "hooks":
            assert doc[k] == v
    assert list(doc)[: len(original_value)] == list(original_value) or provider == "cursor"
    hooks = doc["hooks"]
    for ev, groups in original_value.get("hooks", {}).items():
        mine = [g for g in hooks[ev] if not _ours_unit(agent, g)]
        assert mine == groups, f"user hooks of {ev} changed"
    for ev in agent.events:
        units = [g for g in hooks[ev] if _ours_unit(agent, g)]
        assert units == [agent.unit(ev, command)], ev
    for ev in hooks:
        if ev not in agent.events:
            assert not any(_ours_unit(agent, g) for g in hooks[ev])


def _ours_unit(agent, g):
    if agent.shape == agents.FLAT:
        return agent.is_ours_object(g)
    return any(agent.is_ours_object(h) for h in g.get("hooks", []))


# --- round trips ------------------------------------------------------------------------------

@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("provider", sorted(REAL))
def test_round_trip_real_shapes_in_every_style(home, provider, style):
    make_home(home, provider)
    agent = agents.AGENTS[provider]
    path = agent.config_path()
    original = styled(REAL[provider], **STYLES[style])
    with open(path, "wb") as f:
        f.write(original)

    r1 = install.install([provider], executable=EXE, verify=False)
    assert r1.ok and r1.actions[0].outcome == merge.INSTALLED
    once = open(path, "rb").read()
    check_installed(provider, once, REAL[provider], EXE.command(agent.hook_id))
    if STYLES[style]["crlf"]:
        assert b"\n" not in once.replace(b"\r\n", b"")
    assert once.endswith(b"\n") == STYLES[style]["final_nl"]
    assert [open(b, "rb").read() for b in bak_files(path)] == [original]

    r2 = install.install([provider], executable=EXE, verify=False)
    assert r2.actions[0].outcome == merge.CURRENT
    assert open(path, "rb").read() == once
    assert len(bak_files(path)) == 1, "a no-op install must not back up again"

    r3 = install.uninstall([provider])
    assert r3.ok and r3.actions[0].outcome == merge.REMOVED
    assert open(path, "rb").read() == original
    assert not os.path.exists(path + ".attemptdb.lock")
    assert not os.path.exists(path + ".attemptdb.tmp")


@pytest.mark.parametrize("provider", sorted(REAL))
def test_round_trip_hand_formatted_file(home, provider):
    """Inline arrays, odd spacing, \\u escapes and number spellings are kept byte for byte."""
    make_home(home, provider)
    path = agents.AGENTS[provider].config_path()
    body = json.dumps(REAL[provider], indent=2)
    body = body.replace('{\n  "', '{\n  "zz_user": ["a",  "b"], "n" : 1.50E+1, "s": "caf\\u00e9",\n  "', 1)
    original = body.encode()
    open(path, "wb").write(original)
    assert install.install([provider], executable=EXE, verify=False).ok
    once = open(path, "rb").read()
    assert b'"zz_user": ["a",  "b"], "n" : 1.50E+1, "s": "caf\\u00e9",' in once
    install.uninstall([provider])
    assert open(path, "rb").read() == original


def test_gemini_settings_with_comments_round_trip(home):
    make_home(home, "gemini_cli")
    path = agents.AGENTS["gemini_cli"].config_path()
    original = (b'// my settings\n{\n  "theme": "GitHub", // dark one\n  /* hooks below */\n'
                b'  "hooks": {\n    // mine\n    "BeforeTool": [{"hooks": [{"type": "command", "command": "x.sh"}]}]\n  }\n}\n')
    open(path, "wb").write(original)
    assert install.install(["gemini"], executable=EXE, verify=False).ok
    assert b"// dark one" in open(path, "rb").read()
    install.uninstall(["gemini"])
    assert open(path, "rb").read() == original


def test_symlinked_config_is_written_through(home, tmp_path):
    make_home(home, "claude_code")
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    target = dotfiles / "settings.json"
    original = styled(REAL["claude_code"], 2, False, True)
    target.write_bytes(original)
    os.chmod(target, 0o640)
    link = agents.AGENTS["claude_code"].config_path()
    os.symlink(os.path.relpath(target, os.path.dirname(link)), link)
    link_text = os.readlink(link)

    assert install.install(["claude"], executable=EXE, verify=False).ok
    assert os.path.islink(link) and os.readlink(link) == link_text
    assert json.loads(target.read_bytes())["hooks"]["SessionStart"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert bak_files(link)  # backups sit beside the link, not in the dotfiles repo
    assert sorted(os.listdir(dotfiles)) == ["settings.json"]

    install.uninstall(["claude"])
    assert os.path.islink(link) and os.readlink(link) == link_text
    assert target.read_bytes() == original


def test_a_relative_link_inside_a_linked_folder_is_followed_as_the_kernel_does(home):
    # the dotfiles layout: ~/.claude -> dotfiles/claude, whose settings.json -> ../settings.json
    dotfiles = home / "dotfiles"
    (dotfiles / "claude").mkdir(parents=True)
    target = dotfiles / "settings.json"
    target.write_text('{"model": "real"}\n')
    os.symlink("dotfiles/claude", home / ".claude")
    os.symlink("../settings.json", dotfiles / "claude" / "settings.json")
    link = agents.AGENTS["claude_code"].config_path()
    assert os.path.realpath(link) == str(target)
    assert install.install(["claude"], executable=EXE, verify=False).ok
    doc = json.loads(target.read_bytes())
    assert doc["model"] == "real" and doc["hooks"]["SessionStart"]
    assert not (home / "settings.json").exists()  # `..` taken from the link's name, before
    assert fileops.resolve_links(link) == str(target)


def test_a_file_where_the_config_folder_goes_or_a_link_at_the_lock_is_a_coded_refusal(home):
    (home / ".claude.json").write_text("{}")  # Claude Code is detected
    (home / ".claude").write_text("x")  # a file where ~/.claude/ should be
    report = install.install(["claude"], executable=EXE, verify=False)
    (a,) = report.actions
    assert a.outcome == install.FAILED and a.error[0] == "installer.write_failed", a.error
    assert (home / ".claude").read_text() == "x"
    (home / ".claude").unlink()
    make_home(home, "claude_code")
    path = agents.AGENTS["claude_code"].config_path()
    open(path, "w").write("{}")
    for lock in ("symlink", "dir"):
        if lock == "symlink":
            os.symlink("/nowhere", path + ".attemptdb.lock")
        else:
            os.unlink(path + ".attemptdb.lock")
            os.mkdir(path + ".attemptdb.lock")
        (a,) = install.install(["claude"], executable=EXE, verify=False).actions
        assert a.outcome == install.FAILED and a.error[0] == "installer.lock_failed", (lock, a.error)
        assert open(path).read() == "{}"


@pytest.mark.parametrize("provider", ["claude_code", "cursor"])  # nested and flat entries
def test_a_capture_mode_someone_added_to_our_commands_survives_a_reinstall(home, provider):
    make_home(home, provider)
    agent = agents.AGENTS[provider]
    assert install.install([provider], executable=EXE, verify=False).ok
    path = agent.config_path()
    ours = EXE.command(agent.hook_id)
    text = open(path).read()
    open(path, "w").write(text.replace(json.dumps(ours)[1:-1], json.dumps(ours + " --capture-mode metadata_only")[1:-1]))
    moved = Executable(["/opt/attemptdb2/bin/attempt"], "test")  # a reinstall that rewrites every entry
    (a,) = install.install([provider], executable=moved, verify=False).actions
    assert a.outcome == merge.UPDATED
    commands = [c for c in json.dumps(json.load(open(path))).split('"') if "capture" in c and "/opt/" in c]
    assert commands and all(c == moved.command(agent.hook_id) + " --capture-mode metadata_only" for c in commands)
    (a,) = install.install([provider], executable=moved, verify=False).actions
    assert a.outcome == merge.CURRENT  # and it is what install writes: a second run changes nothing
    from attemptdb.installer import state as hook_state
    assert not [p for p in hook_state.inspect(agent, moved).problems if "differ" in p]  # `hook status` agrees


def test_new_config_files_are_created_for_detected_agents(home):
    make_home(home)
    report = install.install(None, executable=EXE, verify=False)
    assert [a.outcome for a in report.actions] == [merge.INSTALLED] * 4
    for p, agent in agents.AGENTS.items():
        doc = json.load(open(agent.config_path()))
        assert set(doc["hooks"]) == set(registry.CAPTURE_EVENTS[p])
        assert stat.S_IMODE(os.stat(agent.config_path()).st_mode) == 0o600
    cursor = json.load(open(agents.AGENTS["cursor"].config_path()))
    assert list(cursor) == ["version", "hooks"] and cursor["version"] == 1
    assert cursor["hooks"]["preToolUse"] == [{"command": EXE.command("cursor"), "timeout": 10}]
    codex = json.load(open(agents.AGENTS["codex"].config_path()))
    assert list(codex) == ["hooks"]
    assert codex["hooks"]["SessionEnd"][0]["hooks"][0] == {"type": "command", "command": EXE.command("codex"), "timeout": 3}
    assert codex["hooks"]["PreToolUse"][0] == {"hooks": [{"type": "command", "command": EXE.command("codex"), "timeout": 5}]}
    gem = json.load(open(agents.AGENTS["gemini_cli"].config_path()))
    assert gem["hooks"]["BeforeTool"][0]["hooks"][0] == {
        "name": "attemptdb-beforetool", "type": "command", "command": EXE.command("gemini-cli"), "timeout": 5000}
    claude = json.load(open(agents.AGENTS["claude_code"].config_path()))
    assert claude["hooks"]["PostToolUse"] == [{"hooks": [{"type": "command", "command": EXE.command("claude-code"), "timeout": 5}]}]
    assert "WorktreeCreate" not in claude["hooks"] and "FileChanged" not in claude["hooks"]
    assert "afterFileEdit" not in cursor["hooks"]


def test_capture_set_comes_from_the_registry(home):
    for p, agent in agents.AGENTS.items():
        assert agent.events == registry.CAPTURE_EVENTS[p]
        assert set(agent.events) <= set(registry.SUPPORTED_EVENTS[p])


# --- upgrades and recognition -----------------------------------------------------------------

def test_update_replaces_stale_entries_in_place(home):
    make_home(home, "claude_code")
    path = agents.AGENTS["claude_code"].config_path()
    old = "'/old/bin/attempt' hook claude-code"
    doc = {"hooks": {
        "PreToolUse": [{"hooks": [{"type": "command", "command": old, "timeout": 5}]},
                       {"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"}]}],
        "WorktreeCreate": [{"hooks": [{"type": "command", "command": old, "timeout": 5}]}],
        "FileChanged": [{"hooks": [{"type": "command", "command": old},
                                   {"type": "command", "command": "user-watch.sh"}]}],
    }}
    open(path, "w").write(json.dumps(doc, indent=2) + "\n")
    r = install.install(["claude-code"], executable=EXE, verify=False)
    a = r.actions[0]
    assert a.outcome == merge.UPDATED
    assert set(a.removed) == {"PreToolUse", "WorktreeCreate", "FileChanged"}
    new = json.load(open(path))["hooks"]
    assert new["PreToolUse"][0] == {"hooks": [{"type": "command", "command": EXE.command("claude-code"), "timeout": 5}]}
    assert new["PreToolUse"][1]["matcher"] == "Bash"
    assert "WorktreeCreate" not in new  # stale event emptied by removal: dropped
    assert new["FileChanged"] == [{"hooks": [{"type": "command", "command": "user-watch.sh"}]}]
    assert install.install(["claude-code"], executable=EXE, verify=False).actions[0].outcome == merge.CURRENT


def test_duplicates_and_misplaced_entries_are_repaired(home):
    make_home(home, "cursor")
    path = agents.AGENTS["cursor"].config_path()
    ours = {"command": EXE.command("cursor"), "timeout": 10}
    r = install.install(["cursor"], executable=EXE, verify=False)
    doc = json.load(open(path))
    doc["hooks"]["stop"].append(dict(ours))
    doc["hooks"]["afterShellExecution"] = [dict(ours)]
    open(path, "w").write(json.dumps(doc, indent=2))
    r = install.install(["cursor"], executable=EXE, verify=False)
    assert r.actions[0].outcome == merge.UPDATED
    doc = json.load(open(path))
    assert doc["hooks"]["stop"] == [ours]
    assert "afterShellExecution" not in doc["hooks"]


@pytest.mark.parametrize("cmd", [
    "'/usr/local/bin/attempt' capture claude-code",
    "/usr/local/bin/attempt capture codex",
    "'/usr/local/bin/attempt' hook claude-code",
    '"C:\\Program Files\\AttemptDB\\attempt.exe" hook codex',
    '& "C:\\AttemptDB\\attempt.exe" hook claude-code',
    "'/opt/x/attempt-hook' gemini-cli",
    "'/usr/bin/python3.11' -m attemptdb capture cursor",
    "'/usr/bin/python3.11' -I '/opt/lib/site-packages/attemptdb/__main__.py' capture cursor",
    "/some/where/attemptdb-hook --provider x",
    "'/tmp/it'\\''s here/attempt' capture codex",
])
def test_recognises_every_form_of_ours(cmd):
    assert is_ours(cmd)


@pytest.mark.parametrize("cmd", [
    "attempt-notify", "/usr/bin/attempt2 capture codex", "echo attempt capture", "attempt",
    "python -m attemptdbx capture codex", "python -I /x/__main__.py capture codex", "/bin/attempt run", "~/bin/check.sh", "", None, 42,
    "'/opt/x/attempt-hook' not-a-provider",
    "~/bin/my-attemptdb-hook.sh", "/opt/run-attemptdb-hook-tests --all", "echo attemptdb-hooks",
])
def test_never_claims_other_commands(cmd):
    assert not is_ours(cmd)


def test_a_hook_is_ours_by_its_command_never_its_name():
    """Gemini CLI's `attemptdb-…` name is what we write, but a user may name a hook so too."""
    for agent in agents.AGENTS.values():
        assert not agent.is_ours_object({"name": "attemptdb-beforetool", "type": "command", "command": "x"})
        assert agent.is_ours_object({"name": "mine", "type": "command", "command": EXE.command(agent.hook_id)})
    assert not agents.AGENTS["gemini_cli"].is_ours_object({"name": "vibemon-beforetool", "command": "x"})


def test_quoted_command_runs_the_right_file(tmp_path):
    d = tmp_path / "it's a dir $HOME `x`"
    d.mkdir()
    exe = d / "attempt"
    exe.write_text("#!/bin/sh\nprintf '%s|' \"$@\"\n")
    exe.chmod(0o755)
    cmd = Executable([str(exe)], "test").command("claude-code")
    assert cmd == shell_quote(str(exe)) + " capture claude-code"
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    assert out.stdout == "capture|claude-code|"
    assert split_command(cmd)[0] == str(exe)
    assert parse_ours(cmd)["binary"] == str(exe)


def test_find_executable_prefers_the_running_script(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "attempt"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    e = find_executable(str(script))
    assert e.argv == [str(script)] and e.source == "running-script"
    monkeypatch.setenv("PATH", str(script.parent))
    e = find_executable("/usr/lib/python3/pytest")
    assert e.source in ("environment", "path")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    e = find_executable("/usr/lib/python3/pytest")
    if e.source == "python-module":
        assert e.argv[:2] == [os.path.abspath(sys.executable), "-I"] and e.argv[2].endswith("/attemptdb/__main__.py")
        assert is_ours(e.command("codex"))


@pytest.mark.skipif(not hasattr(os, "posix_spawn"), reason="the lean form is written where a daemon can run")
def test_hook_install_writes_the_lean_command_and_recognises_it(tmp_path, monkeypatch):
    from attemptdb.installer import state
    from attemptdb.installer.command import find_hook_executable
    e = find_hook_executable()
    main = os.path.join(ROOT, "attemptdb", "__main__.py")
    assert e.source == "lean" and e.argv == [os.path.abspath(sys.executable), "-I", "-S", main]
    cmd = e.command("claude-code")
    assert cmd == f"{shell_quote(e.argv[0])} -I -S {shell_quote(main)} capture claude-code"
    assert parse_ours(cmd) == {"binary": e.argv[0], "verb": "capture", "hook_id": "claude-code",
                               "form": "python-lean", "script": main}
    # the older forms stay ours (hook install replaces them)
    assert parse_ours(f"{shell_quote(e.argv[0])} -I {shell_quote(main)} capture codex")["form"] == "python-module"
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".cursor").mkdir()
    rep = install.install(["cursor"], verify=False)
    assert rep.executable.source == "lean"
    cursor = json.loads((tmp_path / ".cursor" / "hooks.json").read_text())
    assert cursor["hooks"]["preToolUse"] == [{"command": e.command("cursor"), "timeout": 10}]
    assert state.inspect(agents.AGENTS["cursor"], e).problems == []
    moved = Executable([e.argv[0], "-I", "-S", str(tmp_path / "gone" / "attemptdb" / "__main__.py")], "lean")
    install.install(["cursor"], executable=moved, verify=False)
    assert any("the script in the hooks does not exist" in p
               for p in state.inspect(agents.AGENTS["cursor"], moved).problems)


# --- detection --------------------------------------------------------------------------------

def test_undetected_agents_are_skipped_and_nothing_is_created(home, monkeypatch):
    monkeypatch.setenv("PATH", str(home / "empty-bin"))
    r = install.install(None, executable=EXE, verify=False)
    assert [a.outcome for a in r.actions] == [install.SKIPPED] * 4
    assert r.ok
    assert sorted(os.listdir(home)) == []


def test_launcher_on_path_means_detected(home, monkeypatch):
    bindir = home / "bin"
    bindir.mkdir()
    (bindir / "gemini").write_text("#!/bin/sh\n")
    (bindir / "gemini").chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    r = install.install(["gemini-cli"], executable=EXE, verify=False)
    assert r.actions[0].outcome == merge.INSTALLED
    assert os.path.isfile(home / ".gemini" / "settings.json")


def test_override_dirs(home, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(home / "empty-bin"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "missing-codex"))
    (home / ".codex").mkdir()
    r = install.install(["codex"], executable=EXE, verify=False)
    assert r.actions[0].outcome == install.SKIPPED  # never trust ~/.codex over the override
    assert not (tmp_path / "missing-codex").exists()
    cdir = tmp_path / "claude-cfg"
    cdir.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cdir))
    r = install.install(["claude"], executable=EXE, verify=False)
    assert r.actions[0].config_path == str(cdir / "settings.json")
    assert os.path.isfile(cdir / "settings.json")


# --- refusals and dry runs --------------------------------------------------------------------

MALFORMED = {
    "invalid-json": b'{"hooks": {"PreToolUse": [}',
    "trailing-comma": b'{"model": "opus",}\n',
    "not-utf8": b'{"model": "\xff\xfe"}\n',
    "top-level-array": b"[]\n",
    "hooks-not-object": b'{"hooks": []}\n',
    "event-not-array": b'{"hooks": {"Stop": {"hooks": []}}}\n',
    "duplicate-key": b'{"hooks": {}, "hooks": {}}\n',
    "comments-in-claude": b'// no\n{}\n',
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_config_is_refused_and_untouched(home, case):
    make_home(home, "claude_code")
    path = agents.AGENTS["claude_code"].config_path()
    open(path, "wb").write(MALFORMED[case])
    for op in (lambda: install.install(["claude"], executable=EXE, verify=False),
               lambda: install.uninstall(["claude"])):
        r = op()
        a = r.actions[0]
        assert not r.ok and a.outcome == install.FAILED
        assert a.error[0].startswith("installer.config_")
        assert open(path, "rb").read() == MALFORMED[case]
        assert bak_files(path) == []


def test_cli_malformed_exit_1_with_coded_error(home):
    make_home(home, "codex")
    path = agents.AGENTS["codex"].config_path()
    bad = b'{"hooks": {"Stop": 1}}'
    open(path, "wb").write(bad)
    p = run_attempt(["hook", "install", "--provider", "codex", "--no-verify"], env={"HOME": str(home)})
    assert p.returncode == 1
    out = p.stdout.decode() + p.stderr.decode()
    assert "installer.config_shape" in out and "Traceback" not in out
    assert open(path, "rb").read() == bad
    p = run_attempt(["hook", "install", "--provider", "codex", "--no-verify", "--json"], env={"HOME": str(home)})
    rep = json.loads(p.stdout)
    assert p.returncode == 1 and rep["ok"] is False
    assert rep["actions"][0]["error"]["code"] == "installer.config_shape"


def test_dry_run_changes_nothing(home):
    make_home(home)
    paths = {p: a.config_path() for p, a in agents.AGENTS.items()}
    open(paths["claude_code"], "wb").write(styled(REAL["claude_code"], 2, False, True))
    before = {p: sorted(os.listdir(os.path.dirname(x))) for p, x in paths.items()}
    data = open(paths["claude_code"], "rb").read()
    r = install.install(None, executable=EXE, verify=False, dry_run=True)
    assert r.dry_run and [a.outcome for a in r.actions] == [merge.INSTALLED] * 4
    assert r.actions[0].added == list(registry.CAPTURE_EVENTS["claude_code"])
    assert {p: sorted(os.listdir(os.path.dirname(x))) for p, x in paths.items()} == before
    assert open(paths["claude_code"], "rb").read() == data
    assert r.capture_tests == []
    install.install(None, executable=EXE, verify=False)
    snap = {p: open(x, "rb").read() for p, x in paths.items()}
    listing = {p: sorted(os.listdir(os.path.dirname(x))) for p, x in paths.items()}
    r = install.uninstall(None, dry_run=True)
    assert [a.outcome for a in r.actions] == [merge.REMOVED] * 4
    assert {p: open(x, "rb").read() for p, x in paths.items()} == snap
    assert {p: sorted(os.listdir(os.path.dirname(x))) for p, x in paths.items()} == listing


def test_cli_dry_run_json(home):
    make_home(home, "cursor")
    p = run_attempt(["hook", "install", "-p", "cursor", "--dry-run", "--json"], env={"HOME": str(home)})
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["dry_run"] and rep["actions"][0]["outcome"] == "installed"
    assert rep["actions"][0]["events_added"] == list(registry.CAPTURE_EVENTS["cursor"])
    assert os.listdir(home / ".cursor") == []


def test_cli_dry_run_says_what_would_change_in_codex_config_toml(home):
    make_home(home, "codex")
    p = run_attempt(["hook", "install", "-p", "codex", "--dry-run"], env={"HOME": str(home)})
    assert p.returncode == 0, p.stderr
    assert b"config.toml: would change (adds `hooks = true` under [features]" in p.stdout, p.stdout
    assert not os.path.exists(home / ".codex" / "config.toml")


def test_uninstall_leaves_other_hooks_and_missing_configs_alone(home):
    make_home(home, "claude_code")
    r = install.uninstall(None)
    assert r.ok and all(a.outcome == merge.NOT_INSTALLED for a in r.actions)
    assert os.listdir(home / ".claude") == []


# --- file safety ------------------------------------------------------------------------------

def test_backups_keep_the_five_newest(tmp_path):
    cfg = str(tmp_path / "settings.json")
    made = [fileops.backup(cfg, b"v%d" % i, now=1000 + i) for i in range(7)]
    kept = fileops.backups(cfg)
    assert kept == made[2:]
    assert open(kept[-1], "rb").read() == b"v6"
    same_second = fileops.backup(cfg, b"x", now=1006)
    assert same_second.endswith(".attemptdb.bak-1006-1")
    assert stat.S_IMODE(os.stat(same_second).st_mode) == 0o600


def test_lock_is_exclusive_across_processes(tmp_path):
    cfg = str(tmp_path / "hooks.json")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path.insert(0, sys.argv[1]);"
         "from attemptdb.installer import fileops;"
         "l = fileops.Lock(sys.argv[2]); l.__enter__(); print('held', flush=True);"
         "sys.stdin.readline(); l.__exit__(None, None, None)", ROOT, cfg],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(fileops.FileOpError) as e:
            with fileops.Lock(cfg, tries=4, sleep_s=0.01):
                pass
        assert e.value.code == "installer.lock_timeout"
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(10)
    with fileops.Lock(cfg, tries=4, sleep_s=0.01):
        assert os.path.exists(cfg + ".attemptdb.lock")
    assert not os.path.exists(cfg + ".attemptdb.lock")


_RACER = """
import sys
sys.path.insert(0, sys.argv[1])
from attemptdb.installer import install
from attemptdb.installer.command import Executable
for i in range(int(sys.argv[3])):
    r = install.install(["claude", "cursor"], executable=Executable([sys.argv[2]], "t"), verify=False)
    assert r.ok, [a.error for a in r.actions]
"""


def test_concurrent_installs_leave_a_valid_file(home):
    make_home(home, "claude_code", "cursor")
    path = agents.AGENTS["claude_code"].config_path()
    open(path, "wb").write(styled(REAL["claude_code"], 2, False, True))
    env = dict(os.environ, HOME=str(home))
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, ROOT, f"/opt/v{i}/attempt", "12"], env=env)
             for i in range(4)]
    assert [p.wait(120) for p in procs] == [0] * 4
    for prov in ("claude_code", "cursor"):
        agent = agents.AGENTS[prov]
        data = open(agent.config_path(), "rb").read()
        doc = json.loads(data)
        commands = {json.dumps(u) for ev in agent.events for u in doc["hooks"][ev] if _ours_unit(agent, u)}
        exes = {c.split("'")[1] for c in (json.loads(x)["hooks"][0]["command"] if agent.shape == agents.NESTED
                                           else json.loads(x)["command"] for x in commands)}
        assert len(exes) == 1  # one writer's complete set, never a mix
        for ev in agent.events:
            assert sum(_ours_unit(agent, u) for u in doc["hooks"][ev]) == 1
        leftovers = [n for n in os.listdir(os.path.dirname(agent.config_path()))
                     if n.endswith((".lock", ".tmp"))]
        assert leftovers == []
    check_installed("claude_code", open(path, "rb").read(), REAL["claude_code"],
                    json.load(open(path))["hooks"]["SessionStart"][0]["hooks"][0]["command"])


# --- Codex config.toml ------------------------------------------------------------------------

CODEX_TOML = (
    'model = "gpt-5-codex"\n'
    'approval_policy = "on-request"\n\n'
    '[projects."/home/dev/work"]\n'
    'trust_level = "trusted"\n\n'
    '[hooks.state."/home/dev/.codex/hooks.json:stop:0:0"]\n'
    'trusted_hash = "sha256:0000"\n'
)


def test_codex_feature_flag_added_minimally_and_removed_exactly(home):
    make_home(home, "codex")
    toml_path = agents.AGENTS["codex"].settings_path()
    open(toml_path, "w").write(CODEX_TOML)
    r = install.install(["codex"], executable=EXE, verify=False)
    assert r.actions[0].settings["outcome"] == "changed"
    text = open(toml_path).read()
    assert text.startswith(CODEX_TOML)
    doc = tomllib.loads(text)
    assert doc["features"] == {"hooks": True}
    assert doc["hooks"]["state"] == tomllib.loads(CODEX_TOML)["hooks"]["state"]  # trust untouched
    assert install.install(["codex"], executable=EXE, verify=False).actions[0].settings["outcome"] == "unchanged"
    assert open(toml_path).read() == text
    install.uninstall(["codex"])
    assert open(toml_path).read() == CODEX_TOML


@pytest.mark.parametrize("flags,state", [("hooks = false", "disabled"), ("codex_hooks = false", "disabled"),
                                         ("hooks = true", "enabled"), ("codex_hooks = true", "enabled")])
def test_codex_user_flags_are_never_changed(home, flags, state):
    make_home(home, "codex")
    toml_path = agents.AGENTS["codex"].settings_path()
    text = f"[features]\n{flags}\n"
    open(toml_path, "w").write(text)
    r = install.install(["codex"], executable=EXE, verify=False)
    assert r.actions[0].settings["hooks_feature"] == state
    assert open(toml_path).read() == text
    if state == "disabled":
        assert any("turned off" in n for n in r.actions[0].notes)


def test_codex_missing_config_toml_is_created_then_removed(home):
    make_home(home, "codex")
    toml_path = agents.AGENTS["codex"].settings_path()
    install.install(["codex"], executable=EXE, verify=False)
    assert tomllib.loads(open(toml_path).read())["features"]["hooks"] is True
    install.uninstall(["codex"])
    assert not os.path.exists(toml_path)


def test_codex_invalid_toml_is_left_alone(home):
    make_home(home, "codex")
    toml_path = agents.AGENTS["codex"].settings_path()
    open(toml_path, "w").write("model = \n")
    r = install.install(["codex"], executable=EXE, verify=False)
    assert r.ok and r.actions[0].outcome == merge.INSTALLED
    assert r.actions[0].settings.get("error") == "installer.codex_config_invalid"
    assert open(toml_path).read() == "model = \n"
    # where tomllib stopped, and never the text (a value may be a secret)
    assert "not valid TOML (line 1, column 9);" in codexconfig.plan_enable("model = \n").note
    secret = 'token = "sk-ant-SECRET-canary" junk\n'
    assert codexconfig.invalid_at(secret) == " (line 1, column 32)" and "SECRET" not in codexconfig.invalid_at(secret)
    assert codexconfig.invalid_at('ok = 1\n') == ""


def test_codex_feature_edit_keeps_existing_features_table(home):
    text = '[features]\nweb_search = true\n\n[tui]\ntheme = "dark"\n'
    p = codexconfig.plan_enable(text)
    assert p.text == '[features]\nhooks = true  # added by attemptdb\nweb_search = true\n\n[tui]\ntheme = "dark"\n'
    assert codexconfig.plan_cleanup(p.text).text == text
    assert codexconfig.plan_enable("features.x = 1\n").text is None  # dotted: not edited
