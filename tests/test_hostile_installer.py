"""`attempt hook install|uninstall|status` and `doctor` against hostile agent configs: every
refusal is one coded line with the file left as it was, nothing a user wrote is lost (a
comment, a write the agent made while we edited), and no half-written file is left behind."""

import errno
import json
import os

import pytest
from conftest import run_attempt

from attemptdb.installer import agents, fileops, install, jsonstyle, mcpconfig, merge
from attemptdb.installer.command import Executable

EXE = Executable(["/opt/attemptdb/bin/attempt"], "test")


def _cli(home, *args):
    p = run_attempt(list(args), env={"HOME": str(home)})
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out and "error[internal]" not in out, out
    return p.returncode, out


def _config(home, provider, data: bytes) -> str:
    path = agents.AGENTS[provider].config_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


# --- numbers Python will not convert ----------------------------------------------------------

@pytest.mark.parametrize("provider,flag", [("claude_code", "claude-code"), ("gemini_cli", "gemini-cli")])
def test_an_integer_too_long_for_int_is_a_coded_refusal_at_its_place(home, provider, flag):
    """JSON numbers have no length limit, Python's int() has one (4300 digits): such a config
    was an `error[internal]: unexpected ValueError` crash for install and uninstall."""
    data = b'{\n  "permissions": {"n": [' + b"7" * 5000 + b']}\n}\n'
    path = _config(home, provider, data)
    for op in (["hook", "install", "-p", flag, "--no-verify"], ["hook", "uninstall", "-p", flag],
               ["hook", "install", "-p", flag, "--no-verify", "--mcp"]):
        rc, out = _cli(home, *op)
        out = " ".join(ln.strip() for ln in out.splitlines())  # the message, wrapped to 80 columns
        assert rc == 1 and "error[installer.config_invalid_json]" in out and "(line 2, column 25)" in out
        assert "7777" not in out
    rc, out = _cli(home, "doctor", "-p", flag)
    assert rc == 1 and "broken" in out and "[installer.config_invalid_json]" in out and "ValueError" not in out
    assert open(path, "rb").read() == data and fileops.backups(path) == []


@pytest.mark.parametrize("text,col", [('{"a": [1\u0661]}', 9), ('{"a": 1.5\u0662}', 10), ('{"a": {"b": 2\u0663}}', 14)])
def test_digits_that_are_not_ascii_are_not_json(text, col):
    """RFC 8259 digits are 0-9; `\\d` in json.scanner's NUMBER_RE also took Arabic-Indic digits,
    so `1١` was read as the number 11 and the file edited as if it were JSON."""
    with pytest.raises(jsonstyle.JSONStyleError) as e:
        jsonstyle.parse(text)
    assert e.value.code == "installer.config_invalid_json" and (e.value.line, e.value.col) == (1, col)


def test_a_subtree_the_c_scanner_refused_is_not_scanned_again_at_every_level(monkeypatch):
    """A comment (Gemini) or an error deep inside a large value: each level was handed to the C
    scanner again, the subtree's size once per level (a 5 MB file 250 levels deep: 4 s a parse,
    and install parses the file again after each edit)."""
    calls = []
    real = jsonstyle._Parser.scan

    def counting(self, i, depth):
        calls.append(depth)
        return real(self, i, depth)

    monkeypatch.setattr(jsonstyle._Parser, "scan", counting)
    deep = 200
    text = '{"a": ' + "[" * deep + '1 /* c */' + "]" * deep + ', "b": [1, 2], "c": {"d": [3]}}'
    root = jsonstyle.parse(text, allow_comments=True)
    assert len(calls) <= 4, len(calls)
    assert root.to_python()["c"] == {"d": [3]}
    node = root.get("a").value
    for _ in range(deep - 1):
        node = node.items[0]
    assert text[node.start:node.end] == "[1 /* c */]"
    with pytest.raises(jsonstyle.JSONStyleError) as e:
        jsonstyle.parse(text)
    assert (e.value.line, e.value.col) == (1, 6 + deep + 3)


# --- a full disk ------------------------------------------------------------------------------

def test_a_backup_the_disk_cannot_hold_is_a_coded_failure_and_leaves_no_half_backup(home, monkeypatch):
    """ENOSPC while the backup was written: `error[internal]: unexpected OSError` and a
    truncated `settings.json.attemptdb.bak-…` that looked like a whole backup."""
    data = json.dumps({"permissions": {"allow": [f"Bash(x{i})" for i in range(3000)]}}, indent=1).encode()
    path = _config(home, "claude_code", data)
    real = fileops._write_all

    def half_then_full(fd, chunk):
        real(fd, bytes(chunk)[: len(chunk) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileops, "_write_all", half_then_full)
    r = install.install(["claude"], executable=EXE, verify=False)
    a = r.actions[0]
    assert not r.ok and a.outcome == install.FAILED and a.error[0] == "installer.backup_failed"
    assert "No space left on device" in a.error[1]
    assert open(path, "rb").read() == data
    assert sorted(os.listdir(os.path.dirname(path))) == ["settings.json"]


# --- the agent writes its config while we edit it ----------------------------------------------

def _rewrite_during(monkeypatch, module, name, path, new_bytes):
    """Make `module.name` (a planning step run between our read and our write) also write
    `path`, as the agent itself does (it takes no lock of ours)."""
    real = getattr(module, name)

    def plan(*args, **kw):
        res = real(*args, **kw)
        with open(path, "wb") as f:
            f.write(new_bytes)
        return res

    monkeypatch.setattr(module, name, plan)


@pytest.mark.parametrize("op", ["install", "uninstall"])
def test_a_config_the_agent_rewrites_while_we_edit_it_is_not_clobbered(home, monkeypatch, op):
    """Claude Code rewrites settings.json itself (an "always allow" answer): a write that
    landed between our read and our replace was silently lost (the backup held the bytes before
    it, too). Now the replace is refused, with a code, and the agent's bytes stay."""
    start = {"model": "opus", "permissions": {"allow": ["Bash(ls)"]}}
    path = _config(home, "claude_code", json.dumps(start, indent=2).encode())
    if op == "uninstall":
        assert install.install(["claude"], executable=EXE, verify=False).ok
    agents_write = json.dumps(dict(start, permissions={"allow": ["Bash(ls)", "Bash(make)"]}), indent=2).encode()
    name = "plan_install" if op == "install" else "plan_uninstall"
    _rewrite_during(monkeypatch, merge, name, path, agents_write)
    r = getattr(install, op)(["claude"], **({"executable": EXE, "verify": False} if op == "install" else {}))
    a = r.actions[0]
    assert not r.ok and a.outcome == install.FAILED and a.error[0] == "installer.config_changed"
    assert open(path, "rb").read() == agents_write
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".attemptdb.tmp")]


def test_an_mcp_config_the_agent_rewrites_while_we_edit_it_is_not_clobbered(home, monkeypatch):
    """~/.claude.json is rewritten by Claude Code while it runs: the same refusal for --mcp."""
    _config(home, "claude_code", b"{}\n")
    path = os.path.join(str(home), ".claude.json")
    with open(path, "wb") as f:
        f.write(b'{"numStartups": 1}\n')
    _rewrite_during(monkeypatch, mcpconfig, "plan_install_json", path, b'{"numStartups": 2}\n')
    r = mcpconfig.register(["claude"], executable=EXE)[0]
    assert r.failed and r.error[0] == "installer.config_changed"
    assert open(path, "rb").read() == b'{"numStartups": 2}\n'


# --- JSONC: the user's comments ----------------------------------------------------------------

@pytest.mark.parametrize("data", [
    b'{\n  "hooks": { // TODO: my own hooks\n  }\n}\n',
    b'{\n  "hooks": {\n    "BeforeTool": [ // keep this slot\n    ]\n  }\n}\n',
    b'{\r\n\t"theme": "x",\r\n\t"hooks": {\r\n\t\t/* none yet */\r\n\t}\r\n}\r\n',
])
def test_a_comment_in_an_empty_gemini_hooks_object_survives_install_then_uninstall(home, data):
    """Uninstall dropped the `hooks` object (or an event array) that our entries had filled,
    comment and all: `{"hooks": { // TODO }}` came back as `{}`."""
    path = _config(home, "gemini_cli", data)
    rc, out = _cli(home, "hook", "install", "-p", "gemini-cli", "--no-verify")
    assert rc == 0, out
    rc, out = _cli(home, "hook", "uninstall", "-p", "gemini-cli")
    assert rc == 0, out
    assert open(path, "rb").read() == data
