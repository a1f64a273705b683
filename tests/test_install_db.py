"""`attempt hook install --db X` (or ATTEMPTDB_PATH=X): the installed hooks write to X, not to
the default database. The hook command carries `--db '<absolute X>'` (POSIX-quoted inside each
agent's JSON config), both the lean hook path (through the capture daemon) and the full path
honour it, install stays idempotent (the same database: no change; another: the entries are
replaced, never duplicated), uninstall still gives the user's file back byte for byte, and
`attempt doctor` says where each agent's hooks write (and reads that database when the hooks
all name the same one and it was given none)."""

import json
import os
import shlex
import subprocess
import time

import apsw
import pytest
from conftest import run_attempt

from attemptdb.installer import agents, command, install, merge
from attemptdb.installer.command import Executable

EXE = Executable(["/opt/attemptdb/bin/attempt"], "test")
ODD = "o'th\"er db"  # a space, a single and a double quote in the database's name

PAYLOADS = {
    "claude_code": {"session_id": "sess-db-1", "hook_event_name": "UserPromptSubmit", "prompt": "hi",
                    "cwd": "/tmp"},
    "cursor": {"conversation_id": "conv-db-1", "hook_event_name": "beforeSubmitPrompt", "prompt": "hi",
               "cwd": "/tmp", "generation_id": "gen-1"},
    "gemini_cli": {"session_id": "sess-db-2", "hook_event_name": "BeforeAgent", "prompt": "hi", "cwd": "/tmp"},
    "codex": {"session_id": "sess-db-3", "hook_event_name": "UserPromptSubmit", "prompt": "hi", "cwd": "/tmp",
              "turn_id": "t1"},
}
FLAGS = {"claude_code": "claude-code", "cursor": "cursor", "gemini_cli": "gemini-cli", "codex": "codex"}


def _env(home, **extra):
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
           "COLUMNS": "80", "NO_COLOR": "1"}
    env.update(extra)
    return env


def _commands(provider) -> list:
    """Every hook command of ours in the agent's config."""
    with open(agents.AGENTS[provider].config_path(), encoding="utf-8") as f:
        doc = json.load(f)
    out = []
    for units in doc.get("hooks", {}).values():
        for unit in units:
            for h in unit.get("hooks", [unit]):  # nested groups, or Cursor's flat hook objects
                if command.is_ours(h.get("command")):
                    out.append(h["command"])
    return out


def _run_hook(cmd, payload, home, **env):
    """The command as the agent runs it: through /bin/sh, the payload on stdin, from another
    directory, in an environment with no ATTEMPTDB_PATH."""
    e = {k: v for k, v in os.environ.items() if k != "ATTEMPTDB_PATH"}
    e.update(_env(home, **env))
    p = subprocess.run(cmd, shell=True, input=json.dumps(payload).encode(), capture_output=True, env=e,
                       cwd="/", timeout=60)
    assert p.returncode == 0 and p.stderr == b"", p.stderr.decode()
    return p


def _kinds(db, session=None):
    if not os.path.exists(db):
        return []
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        sql = "SELECT provider, kind, provider_session_id FROM events ORDER BY seq"
        return [r for r in conn.execute(sql).fetchall() if session is None or r[2] == session]
    finally:
        conn.close()


def _joined(text: str) -> str:
    """The messages of a wrapped output, continuation lines joined back with one space."""
    return " ".join(ln.strip() for ln in text.splitlines())


def _default_db(home):
    return str(home / ".local" / "share" / "attemptdb" / "attempt.db")


def test_the_hook_command_names_the_database_quoted_for_the_shell():
    db = f"/tmp/a dir/{ODD}.db"
    cmd = EXE.command("claude-code", db)
    assert cmd == "'/opt/attemptdb/bin/attempt' capture claude-code --db '/tmp/a dir/o'\\''th\"er db.db'"
    assert shlex.split(cmd) == ["/opt/attemptdb/bin/attempt", "capture", "claude-code", "--db", db]
    assert command.is_ours(cmd) and command.hook_db(cmd) == db
    assert command.hook_db(EXE.command("claude-code")) is None
    assert command.hook_db(command.with_capture_mode(cmd, "metadata_only")) == db
    assert command.added_capture_mode(command.with_capture_mode(cmd, "metadata_only")) == "metadata_only"


@pytest.mark.parametrize("provider", ["claude_code", "cursor", "gemini_cli", "codex"])
def test_hooks_installed_with_db_write_there(home, tmp_path, provider):
    """The walkthrough's bug: install tested X, the hooks wrote to the default database."""
    os.makedirs(os.path.dirname(agents.AGENTS[provider].config_path()))
    target = str(tmp_path / "other dir" / f"{ODD}.db")
    os.makedirs(os.path.dirname(target))
    p = run_attempt(["hook", "install", "-p", FLAGS[provider], "--db", target], env=_env(home), cwd=str(tmp_path))
    out = p.stdout.decode()
    assert p.returncode == 0, out + p.stderr.decode()
    assert f"capture test {FLAGS[provider]}: ok" in out
    cmds = _commands(provider)
    _run_hook(cmds[0], PAYLOADS[provider], home)
    sid = PAYLOADS[provider].get("session_id") or PAYLOADS[provider]["conversation_id"]
    assert [r[0] for r in _kinds(target, sid)] == [provider]  # the real event is in X
    assert not os.path.exists(_default_db(home))  # and nothing went to the default database
    assert cmds and all(command.hook_db(c) == target for c in cmds), cmds[:1]
    assert f"hooks write to: {target}" in _joined(out)  # (a long path gets a line of its own)


def test_attemptdb_path_at_install_time_is_written_into_the_hooks(home, tmp_path):
    os.makedirs(home / ".claude")
    target = str(tmp_path / "env.db")
    p = run_attempt(["hook", "install", "-p", "claude-code"], env=_env(home, ATTEMPTDB_PATH=target),
                    cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    assert {command.hook_db(c) for c in _commands("claude_code")} == {target}
    _run_hook(_commands("claude_code")[0], PAYLOADS["claude_code"], home)
    assert [r[0] for r in _kinds(target, "sess-db-1")] == ["claude_code"]


def test_a_relative_db_is_written_absolute(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs(home / ".cursor")
    install.install(["cursor"], executable=EXE, verify=False, db="rel.db")
    assert {command.hook_db(c) for c in _commands("cursor")} == {str(tmp_path / "rel.db")}


def test_through_the_daemon_and_directly_the_event_lands_in_the_named_database(home, tmp_path):
    """The lean hook command (`python -I -S …/__main__.py capture …`): the first hook stores the
    event itself and starts a daemon for X; the next hands its payload to that daemon."""
    os.makedirs(home / ".claude")
    target = str(tmp_path / f"{ODD}.db")
    env = _env(home, ATTEMPTDB_NO_DAEMON="", XDG_RUNTIME_DIR="")
    p = run_attempt(["hook", "install", "-p", "claude-code", "--db", target], env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    cmd = _commands("claude_code")[0]
    assert " -I -S " in cmd  # the lean form (this machine can run a daemon)
    try:
        for i in range(3):
            _run_hook(cmd, dict(PAYLOADS["claude_code"], prompt=f"try {i}"), home,
                      ATTEMPTDB_NO_DAEMON="", XDG_RUNTIME_DIR="")
            if i == 0:  # wait for the daemon the first hook started
                end = time.monotonic() + 15
                while time.monotonic() < end:
                    st = json.loads(run_attempt(["daemon", "status", "--db", target, "--json"], env=env).stdout)
                    if st["running"]:
                        break
                    time.sleep(0.05)
                assert st["running"], st
        end = time.monotonic() + 15
        while len(_kinds(target, "sess-db-1")) < 3 and time.monotonic() < end:
            time.sleep(0.05)
        assert [r[1] for r in _kinds(target, "sess-db-1")] == ["prompt_submitted"] * 3
        assert not os.path.exists(_default_db(home))
    finally:
        run_attempt(["daemon", "stop", "--db", target], env=env)


USER_FILE = b'{\n  "model": "opus",\n  "hooks": {\n    "PreToolUse": [\n      {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}\n    ]\n  }\n}\n'


def test_reinstall_same_db_is_a_no_op_another_db_replaces_and_uninstall_restores_bytes(home, tmp_path):
    path = agents.AGENTS["claude_code"].config_path()
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(USER_FILE)
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b b.db")
    (r,) = install.install(["claude"], executable=EXE, verify=False, db=a).actions
    assert r.outcome == merge.INSTALLED
    after_a = open(path, "rb").read()
    (r,) = install.install(["claude"], executable=EXE, verify=False, db=a).actions
    assert r.outcome == merge.CURRENT and open(path, "rb").read() == after_a and r.notes == []
    (r,) = install.install(["claude"], executable=EXE, verify=False, db=b).actions
    assert r.outcome == merge.UPDATED
    assert any(f"the hooks wrote to {a}; they now write to {b}" in n for n in r.notes), r.notes
    cmds = _commands("claude_code")
    assert len(cmds) == len(agents.AGENTS["claude_code"].events)  # replaced, one per event
    assert {command.hook_db(c) for c in cmds} == {b}
    (r,) = install.install(["claude"], executable=EXE, verify=False).actions  # no db: the default again
    assert r.outcome == merge.UPDATED and {command.hook_db(c) for c in _commands("claude_code")} == {None}
    assert any("they now write to the default database" in n for n in r.notes), r.notes
    install.install(["claude"], executable=EXE, verify=False, db=a)
    (u,) = install.uninstall(["claude"]).actions
    assert u.outcome == merge.REMOVED and open(path, "rb").read() == USER_FILE


def test_a_capture_mode_the_user_added_survives_a_reinstall_with_db(home, tmp_path):
    path = agents.AGENTS["cursor"].config_path()
    os.makedirs(os.path.dirname(path))
    db = str(tmp_path / "x.db")
    install.install(["cursor"], executable=EXE, verify=False, db=db)
    text = open(path, encoding="utf-8").read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("x.db'\"", "x.db' --capture-mode metadata_only\""))
    (r,) = install.install(["cursor"], executable=EXE, verify=False, db=db).actions
    assert r.outcome == merge.CURRENT
    (r,) = install.install(["cursor"], executable=EXE, verify=False, db=str(tmp_path / "y.db")).actions
    cmds = _commands("cursor")
    assert r.outcome == merge.UPDATED and all(command.added_capture_mode(c) == "metadata_only" for c in cmds)
    assert {command.hook_db(c) for c in cmds} == {str(tmp_path / "y.db")}


def test_doctor_says_where_the_hooks_write_and_reads_that_database(home, tmp_path):
    os.makedirs(home / ".claude")
    target = str(tmp_path / "hooks db" / "x.db")
    os.makedirs(os.path.dirname(target))
    env = _env(home)
    assert run_attempt(["hook", "install", "-p", "claude-code", "--db", target], env=env).returncode == 0
    _run_hook(_commands("claude_code")[0], PAYLOADS["claude_code"], home)
    # no --db: the report reads the database the hooks name, and finds the agent delivering
    p = run_attempt(["doctor", "-p", "claude-code", "--json"], env=env)
    rep = json.loads(p.stdout)
    assert p.returncode == 0, rep
    assert rep["database"]["path"] == target and rep["database"]["named_by_hooks"] is True
    (a,) = rep["agents"]
    assert a["hooks_database"] == target and a["writes_to"] == target and a["state"] == "delivering"
    p = run_attempt(["doctor", "-p", "claude-code"], env=env)
    out = _joined(p.stdout.decode())
    assert p.returncode == 0 and f"writes to: {target}" in out, out
    assert f"database {target} (the hooks name it)" in out
    # another database given: the report reads it, and says the hooks write elsewhere
    other = str(tmp_path / "other.db")
    assert run_attempt(["init", "--db", other], env=env).returncode == 0
    p = run_attempt(["doctor", "-p", "claude-code", "--db", other], env=env)
    text = _joined(p.stdout.decode())
    assert f"these hooks write to {target}, not to the database this report reads ({other})" in text, text
    assert f"`attempt doctor --db {shlex.quote(target)}`" in text
    # hooks without --db: "the default database"
    install.install(["claude"], executable=EXE, verify=False)
    p = run_attempt(["hook", "status", "-p", "claude-code", "--json"], env=env)
    (a,) = json.loads(p.stdout)["agents"]
    assert a["hooks_database"] is None and a["writes_to"] == _default_db(home)


def test_doctor_flags_entries_that_write_to_two_databases(home, tmp_path):
    path = agents.AGENTS["cursor"].config_path()
    os.makedirs(os.path.dirname(path))
    install.install(["cursor"], executable=EXE, verify=False, db=str(tmp_path / "a.db"))
    text = open(path, encoding="utf-8").read()
    i = text.index("a.db")  # the first entry only
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:i] + "b.db" + text[i + 4:])
    from attemptdb.installer import state
    st = state.inspect(agents.AGENTS["cursor"], EXE)
    assert st.config_state == state.BROKEN and "entries write to 2 different databases" in st.problems
