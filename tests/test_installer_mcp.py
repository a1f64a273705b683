"""`attempt hook install --mcp`: the MCP server registered in each agent's real config format
(Claude Code ~/.claude.json, Codex config.toml, Cursor mcp.json, Gemini CLI settings.json with
comments) under the hooks' rules: idempotent to the byte, backed up, others' entries kept,
uninstall takes out only ours."""

import json
import os
import subprocess
import tomllib

import pytest
from conftest import run_attempt

from attemptdb.installer import agents, fileops, jsonstyle, mcpconfig, mcpentry
from attemptdb.installer.command import Executable

EXE = Executable(["/opt/attempt tools/bin/attempt"], "path")
EXE2 = Executable(["/usr/local/bin/attempt"], "path")

CLAUDE = """{
  "numStartups": 42,
  "installMethod": "native",
  "autoUpdates": false,
  "projects": {
    "/home/u/src/app": {
      "allowedTools": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true
    }
  },
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    }
  },
  "userID": "0f1e2d3c"
}
"""
CODEX = """model = "gpt-5-codex"
approval_policy = "on-request"

# servers I use everywhere
[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-server-docs"]
env = { "API_KEY" = "value" }

[projects."/home/u/src/app"]
trust_level = "trusted"
"""
CURSOR = """{
    "mcpServers": {
        "playwright": {
            "command": "npx",
            "args": ["@playwright/mcp@latest"]
        }
    }
}
"""
GEMINI = """{
  // my settings
  "theme": "GitHub",
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "cwd": "./mcp-servers/python",
      "timeout": 15000 /* ms */
    }
  }
}"""
CONFIGS = {"claude_code": CLAUDE, "codex": CODEX, "cursor": CURSOR, "gemini_cli": GEMINI}


def parse(provider, text):
    if provider == "codex":
        return tomllib.loads(text)
    return jsonstyle.parse(text, allow_comments=provider == "gemini_cli").to_python()


def servers(provider, doc):
    return doc.get("mcp_servers" if provider == "codex" else "mcpServers", {})


@pytest.fixture
def wired(home):
    """The four agents present, each with its config as a user has it."""
    for d in (".claude", ".codex", ".cursor", ".gemini"):
        (home / d).mkdir()
    paths = {}
    for provider, text in CONFIGS.items():
        path = mcpentry.config_path(agents.AGENTS[provider])
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths[provider] = path
    return paths


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def by_provider(regs):
    return {r.agent.provider: r for r in regs}


def test_the_config_paths_are_the_agents_own(home, monkeypatch):
    assert mcpentry.config_path(agents.AGENTS["claude_code"]) == str(home / ".claude.json")
    assert mcpentry.config_path(agents.AGENTS["codex"]) == str(home / ".codex" / "config.toml")
    assert mcpentry.config_path(agents.AGENTS["cursor"]) == str(home / ".cursor" / "mcp.json")
    assert mcpentry.config_path(agents.AGENTS["gemini_cli"]) == str(home / ".gemini" / "settings.json")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(home / "cx"))
    assert mcpentry.config_path(agents.AGENTS["claude_code"]) == str(home / "cc" / ".claude.json")
    assert mcpentry.config_path(agents.AGENTS["codex"]) == str(home / "cx" / "config.toml")


@pytest.mark.parametrize("provider", sorted(CONFIGS))
def test_install_twice_is_one_change_backed_up_and_others_kept(wired, provider):
    path = wired[provider]
    original = read(path)
    first = by_provider(mcpconfig.register([provider], executable=EXE))[provider]
    assert first.outcome == "installed" and first.error is None
    after = read(path)
    with open(first.backup, encoding="utf-8") as f:
        assert f.read() == original
    doc, before = parse(provider, after), parse(provider, original)
    ours = servers(provider, doc).pop("attemptdb")
    assert ours["command"] == EXE.argv[0] and ours["args"] == ["mcp"]
    if provider == "claude_code":
        assert ours["type"] == "stdio"
    assert doc == before  # every other entry and setting as it was

    backups = fileops.backups(path)
    second = by_provider(mcpconfig.register([provider], executable=EXE))[provider]
    assert second.outcome == "already_current" and second.backup is None
    assert read(path) == after and fileops.backups(path) == backups

    removed = by_provider(mcpconfig.register([provider], remove=True))[provider]
    assert removed.outcome == "removed" and read(path) == original
    assert by_provider(mcpconfig.register([provider], remove=True))[provider].outcome == "not_installed"
    assert read(path) == original


@pytest.mark.parametrize("provider", sorted(CONFIGS))
def test_a_new_executable_updates_only_our_entry(wired, provider):
    path = wired[provider]
    mcpconfig.register([provider], executable=EXE)
    if provider == "codex":  # a key the user added to our table stays
        with open(path, "a", encoding="utf-8") as f:
            f.write("startup_timeout_sec = 20\n")
    before = parse(provider, read(path))
    r = by_provider(mcpconfig.register([provider], executable=EXE2))[provider]
    assert r.outcome == "updated"
    after = parse(provider, read(path))
    assert servers(provider, after)["attemptdb"]["command"] == EXE2.argv[0]
    servers(provider, before)["attemptdb"]["command"] = EXE2.argv[0]
    assert after == before
    if provider == "codex":
        assert after["mcp_servers"]["attemptdb"]["startup_timeout_sec"] == 20


@pytest.mark.parametrize("provider", sorted(CONFIGS))
def test_an_attemptdb_entry_someone_else_wrote_is_left_alone(wired, provider):
    path = wired[provider]
    if provider == "codex":
        text = CODEX + '\n[mcp_servers.attemptdb]\ncommand = "docker"\nargs = ["run", "attemptdb-image"]\n'
    else:
        doc = parse(provider, CONFIGS[provider]) if provider != "gemini_cli" else json.loads(
            "\n".join(ln.split("//")[0] for ln in GEMINI.replace("/* ms */", "").splitlines()))
        doc["mcpServers"]["attemptdb"] = {"command": "docker", "args": ["run", "attemptdb-image"]}
        text = json.dumps(doc, indent=2)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    for remove in (False, True):
        r = by_provider(mcpconfig.register([provider], executable=EXE, remove=remove))[provider]
        assert (r.outcome, r.error and r.error[0]) == (("failed", "installer.mcp_name_taken") if not remove
                                                       else ("not_installed", None))
        assert read(path) == text and fileops.backups(path) == []


@pytest.mark.parametrize("provider", sorted(CONFIGS))
def test_a_malformed_config_is_refused_untouched(wired, provider):
    path = wired[provider]
    bad = "[mcp_servers\ncommand = " if provider == "codex" else '{"mcpServers": {"x": }'
    with open(path, "w", encoding="utf-8") as f:
        f.write(bad)
    r = by_provider(mcpconfig.register([provider], executable=EXE))[provider]
    assert r.outcome == "failed" and r.error[0].startswith("installer.")
    assert read(path) == bad and fileops.backups(path) == []


def test_dry_run_writes_nothing_and_missing_configs_are_created(home):
    for d in (".cursor", ".codex"):
        (home / d).mkdir()
    regs = by_provider(mcpconfig.register(["cursor", "codex", "gemini-cli"], executable=EXE, dry_run=True))
    assert regs["cursor"].outcome == "installed" and regs["gemini_cli"].outcome == "skipped"
    assert not (home / ".cursor" / "mcp.json").exists() and not (home / ".codex" / "config.toml").exists()
    regs = by_provider(mcpconfig.register(["cursor", "codex"], executable=EXE))
    assert json.loads(read(home / ".cursor" / "mcp.json"))["mcpServers"]["attemptdb"]["args"] == ["mcp"]
    assert tomllib.loads(read(home / ".codex" / "config.toml"))["mcp_servers"]["attemptdb"]["args"] == ["mcp"]
    mcpconfig.register(["codex"], remove=True)
    assert not (home / ".codex" / "config.toml").exists()  # it held only our table: gone again


def test_a_config_without_a_final_newline_comes_back_the_same(home):
    (home / ".codex").mkdir()
    path = home / ".codex" / "config.toml"
    path.write_text('model = "o3"\r\n[mcp_servers.x]\r\ncommand = "y"', encoding="utf-8")
    original = path.read_bytes()
    mcpconfig.register(["codex"], executable=EXE)
    assert b"\r\n[mcp_servers.attemptdb]" in path.read_bytes()
    mcpconfig.register(["codex"], executable=EXE2)
    mcpconfig.register(["codex"], remove=True)
    assert path.read_bytes() == original


def test_comments_after_our_table_belong_to_what_follows_and_stay(home):
    (home / ".codex").mkdir()
    path = home / ".codex" / "config.toml"
    path.write_text('model = "o3"\n', encoding="utf-8")
    mcpconfig.register(["codex"], executable=EXE)
    theirs = '\n# --- my servers (do not delete) ---\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
    path.write_text(path.read_text(encoding="utf-8") + theirs, encoding="utf-8")
    mcpconfig.register(["codex"], executable=EXE2)  # an update keeps them too
    assert path.read_text(encoding="utf-8").endswith(theirs)
    mcpconfig.register(["codex"], remove=True)
    assert path.read_text(encoding="utf-8") == 'model = "o3"\n' + theirs


def test_the_registered_command_starts_our_server(home):
    (home / ".cursor").mkdir()
    r = by_provider(mcpconfig.register(["cursor"]))["cursor"]
    assert r.outcome == "installed"
    entry = json.loads(read(r.config_path))["mcpServers"]["attemptdb"]
    p = subprocess.run([entry["command"], *entry["args"], "--help"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=str(home)))
    assert p.returncode == 0 and "MCP tools over stdio" in p.stdout


def test_hook_install_and_uninstall_with_mcp(home):
    (home / ".cursor").mkdir()
    p = run_attempt(["hook", "install", "--provider", "cursor", "--mcp", "--no-verify", "--json"],
                    env={"HOME": str(home)})
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["ok"], p.stderr.decode()
    assert [(m["provider"], m["outcome"]) for m in out["mcp"]] == [("cursor", "installed")]
    assert out["actions"][0]["outcome"] == "installed"  # the hooks, as without --mcp
    p = run_attempt(["hook", "install", "--provider", "cursor", "--mcp", "--no-verify"], env={"HOME": str(home)})
    assert p.returncode == 0 and b"MCP server already registered" in p.stdout
    p = run_attempt(["hook", "uninstall", "--provider", "cursor", "--mcp", "--json"], env={"HOME": str(home)})
    out = json.loads(p.stdout)
    assert [(m["provider"], m["outcome"]) for m in out["mcp"]] == [("cursor", "removed")]
    assert not (home / ".cursor" / "mcp.json").exists()  # install created it: gone again, not left as {}
    p = run_attempt(["hook", "uninstall", "--provider", "cursor", "--json"], env={"HOME": str(home)})
    assert "mcp" not in json.loads(p.stdout)  # without --mcp the MCP configs are not read


def test_install_with_a_database_registers_a_server_that_reads_it(home, tmp_path):
    """`hook install --db X --mcp`: the hooks write to X, so the MCP server reads X too (it was
    registered without --db and read the default database); another --db updates the entry."""
    (home / ".cursor").mkdir()
    (home / ".claude").mkdir()
    db = tmp_path / "team dir" / "it's.db"
    db.parent.mkdir()
    assert run_attempt(["init", "--db", str(db)], env={"HOME": str(home)}).returncode == 0
    p = run_attempt(["hook", "install", "--provider", "cursor", "--provider", "claude-code", "--mcp", "--no-verify",
                     "--db", str(db), "--json"], env={"HOME": str(home)})
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["ok"], p.stderr.decode()
    entry = json.loads(read(home / ".cursor" / "mcp.json"))["mcpServers"]["attemptdb"]
    assert entry["args"][-3:] == ["mcp", "--db", str(db)]
    assert servers("claude_code", parse("claude_code", read(home / ".claude.json")))["attemptdb"]["args"][-2:] == [
        "--db", str(db)]
    p = subprocess.run([entry["command"], *entry["args"], "--help"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=str(home)))
    assert p.returncode == 0 and "MCP tools over stdio" in p.stdout  # the registered command runs as written
    other = tmp_path / "other.db"
    p = run_attempt(["hook", "install", "--provider", "cursor", "--mcp", "--no-verify", "--db", str(other), "--json"],
                    env={"HOME": str(home)})
    assert [(m["provider"], m["outcome"]) for m in json.loads(p.stdout)["mcp"]] == [("cursor", "updated")]
    assert json.loads(read(home / ".cursor" / "mcp.json"))["mcpServers"]["attemptdb"]["args"][-1] == str(other)
    p = run_attempt(["hook", "uninstall", "--provider", "cursor", "--mcp", "--json"], env={"HOME": str(home)})
    assert [(m["provider"], m["outcome"]) for m in json.loads(p.stdout)["mcp"]] == [("cursor", "removed")]


def test_the_readme_shows_what_the_installer_writes():
    """The hand-written snippets of the README's MCP section are the entries `--mcp` writes."""
    import re

    from conftest import ROOT
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("### `attempt mcp`", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```(json|toml)\n(.*?)```", section, re.S)
    exe = Executable(["/path/to/attempt"], "path")
    want = {p: mcpentry.server_entry(agents.AGENTS[p], exe) for p in CONFIGS}
    got = [tomllib.loads(b)["mcp_servers"]["attemptdb"] if kind == "toml" else json.loads(b)["mcpServers"]["attemptdb"]
           for kind, b in blocks]
    assert got == [want["claude_code"], want["codex"], want["cursor"], want["gemini_cli"]]
