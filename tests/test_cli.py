"""CLI conventions: --version, help text and --help on every command, --json where data is
printed, NO_COLOR, exit statuses, and never a traceback."""

import json
import os

import click
import pytest
from click.testing import CliRunner
from conftest import run_attempt

from attemptdb import __version__
from attemptdb.cli.main import COMMANDS, cli

# capture and the daemon's foreground server print nothing; schema has --format json
# run: stdout is the command's own; prove: what it prints is a JSON document already (spec/proof.md);
# mcp and ui are servers (JSON-RPC on stdio, HTTP)
NO_JSON = {"capture", "schema", "daemon run", "run", "prove", "mcp", "ui"}


def _leaves(group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        path = prefix + (name,)
        yield path, cmd
        if isinstance(cmd, click.Group):
            yield from _leaves(cmd, path)


ALL = list(_leaves(cli))


def test_every_registered_command_loads():
    loaded = {p[0] for p, _ in ALL}
    assert loaded == set(COMMANDS), f"commands that fail to load: {set(COMMANDS) - loaded}"


@pytest.mark.parametrize("path,cmd", ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_help(path, cmd):
    assert (cmd.help or "").strip(), f"`attempt {' '.join(path)}` has no help text"
    for p in cmd.params:
        if isinstance(p, click.Option) and not p.hidden:
            assert (p.help or "").strip(), f"`attempt {' '.join(path)} {p.opts[0]}` has no help text"
    r = CliRunner().invoke(cli, list(path) + ["--help"])
    assert r.exit_code == 0, r.output
    assert "Usage:" in r.output


@pytest.mark.parametrize("path,cmd", [(p, c) for p, c in ALL if not isinstance(c, click.Group)],
                         ids=[" ".join(p) for p, c in ALL if not isinstance(c, click.Group)])
def test_data_commands_take_json(path, cmd):
    if path[0] in NO_JSON or " ".join(path) in NO_JSON:
        return
    names = {o for p in cmd.params for o in getattr(p, "opts", [])}
    assert "--json" in names, f"`attempt {' '.join(path)}` prints data but has no --json"


def test_version_and_capture_help(home):
    r = run_attempt(["--version"])
    assert r.returncode == 0 and r.stdout.decode().strip() == f"attempt {__version__}"
    r = run_attempt(["capture", "--help"])
    assert r.returncode == 0 and b"--dry-run" in r.stdout


def test_missing_database_is_a_coded_error_not_a_traceback(tmp_path, home):
    r = run_attempt(["events", "--db", str(tmp_path / "none.db")])
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("error[store.missing]") and "Traceback" not in err
    assert r.stdout == b""


@pytest.mark.parametrize("args", [["note", "hello"], ["query", "SHOW SESSIONS"], ["needs-you"], ["status"],
                                  ["doctor"], ["events", "--jsonl"]])
def test_an_empty_db_option_is_refused_not_read_as_the_default(tmp_path, home, args):
    """`--db "$DB"` with DB unset: it wrote to (and created) the default database, silently."""
    env = {"ATTEMPTDB_PATH": str(tmp_path / "env.db"), "XDG_DATA_HOME": str(tmp_path / "data")}
    for empty in ("", "  "):
        r = run_attempt(args + ["--db", empty], env=env)
        assert r.returncode == 2, r.stderr
        assert r.stderr.decode().startswith("error[usage.bad_value]: --db is empty"), r.stderr
    assert not (tmp_path / "env.db").exists() and not (tmp_path / "data").exists()


@pytest.mark.parametrize("args,code,says", [
    (["query", "--bogus", "SELECT 1"], "usage.unknown_option", "No such option '--bogus' (`attempt query --help`"),
    (["events", "-n", "abc"], "usage.bad_value", "'abc' is not a valid integer range (`attempt events --help`"),
    (["query"], "usage.missing", "Missing argument 'STATEMENT' (`attempt query --help`"),
    (["evnts"], "usage.unknown_command", "No such command 'evnts'; did you mean `events`? (`attempt --help`"),
    (["zzzz"], "usage.unknown_command", "No such command 'zzzz' (`attempt --help`"),
    (["query", "--json", "--csv", "SELECT 1"], "usage.bad_usage", "--json and --csv are exclusive"),
])
def test_a_command_line_click_refuses_is_one_coded_line(tmp_path, home, args, code, says):
    """As every other error: `error[usage.…]: …` on one line of stderr, exit 2, nothing on
    stdout, and where the help is (no click usage block)."""
    r = run_attempt(args)  # refused before any database is opened
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b""
    assert err.startswith(f"error[{code}]: ") and err.count("\n") == 1 and says in err, err


@pytest.mark.parametrize("group", ["bundle", "hook", "keys", "daemon"])
def test_a_group_run_bare_prints_its_help_not_a_flattened_error(home, group):
    r = run_attempt([group])
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith(f"Usage: attempt {group} ") and "\nCommands:\n" in err, err


@pytest.mark.parametrize("cmd", [["verify"], ["events"], ["query", "SELECT 1"], ["needs-you"]])
def test_a_coded_error_never_prints_control_characters(tmp_path, home, cmd):
    """A path (or any value) in an error message comes from hostile input: BEL, CR, backspace,
    C1 controls, bidi overrides and zero-width characters in it are shown as `?` on the lean
    path and through click alike, so no message can rewrite the terminal or disguise what it
    says (only the closing newline is left)."""
    name = "a\x07b\rc\x08d\x85e\x1b]0;title\x07\u202ef\u200bg.db"  # BEL CR BS NEL OSC RLO ZWSP
    r = run_attempt(cmd + ["--db", str(tmp_path / name)])
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("error[store.missing]") and err.endswith("\n")
    assert not [c for c in err[:-1] if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u200b"]
    assert "a?b?c?d?e?]0;title??f?g.db" in err


def test_a_statement_error_shows_control_characters_of_the_statement_as_marks(tmp_path, home):
    db = str(tmp_path / "q.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    r = run_attempt(["query", "--db", db, 'SELECT x FROM "t\x07b\x1b[2Jc"'])
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("error[AQL0505]") and "no such table: t?b?[2Jc" in err
    assert not [c for c in err if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0]


@pytest.mark.parametrize("empty", ["file", "devnull"])
@pytest.mark.parametrize("cmd", [["verify"], ["status"], ["query", "SELECT 1"]])
def test_an_empty_file_is_a_coded_error_for_every_reader(tmp_path, home, empty, cmd):
    """A 0-byte file (or /dev/null) is no database yet: the read-only readers say so (they
    used to fail inside SQL with an internal error). Commands that open the file for writing
    (events, timeline, …) make it a new database, as for a path that does not exist yet."""
    path = str(tmp_path / "empty.db") if empty == "file" else os.devnull
    if empty == "file":
        open(path, "wb").close()
    r = run_attempt(cmd[:1] + ["--db", path] + cmd[1:])
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert err.startswith("error[store.") and "internal" not in err and "Traceback" not in err
    if empty == "devnull":
        assert err.startswith("error[store.not_a_file]")  # a device (a pipe would block SQLite)
    elif cmd == ["verify"]:
        assert err.startswith("error[store.empty]") and os.path.getsize(path) == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("cmd", [["verify"], ["status"], ["timeline"], ["query", "SELECT 1"]])
def test_a_named_pipe_as_the_database_is_refused_not_waited_on(tmp_path, home, cmd):
    """SQLite opening a FIFO read-only blocks until someone writes to it: forever."""
    fifo = str(tmp_path / "pipe.db")
    os.mkfifo(fifo)
    r = run_attempt(cmd[:1] + ["--db", fifo] + cmd[1:], timeout=30)
    assert r.returncode == 2 and r.stderr.startswith(b"error[store.not_a_file]"), r.stderr


@pytest.mark.parametrize("cmd", [["timeline"], ["failures"], ["events"], ["handoffs"]])
def test_a_limit_beyond_any_table_is_bad_usage(tmp_path, home, cmd):
    r = run_attempt(cmd + ["-n", "99999999999999999999", "--db", str(tmp_path / "a.db")])
    assert r.returncode == 2 and b"is not in the range" in r.stderr and b"internal" not in r.stderr


@pytest.mark.parametrize("args,code", [
    ([b"query", b"SELECT '\xff'"], b"error[AQL0108]"),
    ([b"query", b"SHOW FAILED ATTEMPTS FOR path = '\xfe\xff'"], b"error[AQL0108]"),
    ([b"timeline", b"--project", b"\xff"], b"error[input.not_utf8]"),
    ([b"failures", b"--session", b"ses_\xff"], b"error["),
    ([b"status", b"--db", b"/tmp/\xff.db"], b"error[store.path_not_utf8]: the database path /tmp/\\xff.db"),
])
def test_arguments_that_are_not_utf8_are_bad_input(tmp_path, home, args, code):
    """Bytes a terminal passes that are not UTF-8 reach Python as lone surrogates, which
    SQLite cannot take: a coded error (exit 2), never an internal one."""
    import subprocess

    from conftest import ROOT, attempt_cmd
    db = str(tmp_path / "a.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    if b"--db" not in args:
        args = args + [b"--db", os.fsencode(db)]
    r = subprocess.run([os.fsencode(a) for a in attempt_cmd()] + args,
                       capture_output=True, env=env, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith(code), r.stderr
    assert b"internal" not in r.stderr and b"Traceback" not in r.stderr


def test_bad_usage_exits_2(home):
    r = run_attempt(["events", "--since", "yesterday-ish"])
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    r = run_attempt(["no-such-command"])
    assert r.returncode == 2


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux) to fill the output")
def test_output_that_cannot_be_written_is_a_coded_error_not_a_crash(tmp_path, home):
    """Standard output on a full disk (/dev/full: every write fails with ENOSPC), on the lean
    path and on click's: one coded line, exit 2, no crash report; the file is untouched."""
    import subprocess

    from conftest import ROOT, attempt_cmd
    db = str(tmp_path / "a.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    before = open(db, "rb").read()
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    for args in (["query", "SELECT 1 AS one"], ["query", "SELECT 1 AS one", "--json"], ["needs-you"],
                 ["status"], ["query", "SHOW SESSIONS", "-n5"]):  # -n5: click's to parse
        with open("/dev/full", "wb") as full:
            r = subprocess.run(attempt_cmd() + args + ["--db", db], stdout=full, stderr=subprocess.PIPE,
                               env=env, timeout=60)
        assert (r.returncode, r.stderr) == (
            2, b"error[output.unwritable]: cannot write the output: No space left on device\n"), args
    assert open(db, "rb").read() == before


def test_unexpected_errors_print_one_line_and_a_report(tmp_path, home, monkeypatch):
    # a database file that is really a directory: apsw raises something we do not map
    bad = tmp_path / "dir.db"
    bad.mkdir()
    r = run_attempt(["verify", "--db", str(bad)])
    err = r.stderr.decode()
    assert r.returncode in (1, 2) and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    if "error[internal]" in err:
        report = err.split("full report: ")[1].rstrip(")\n")
        assert os.path.exists(report)


def test_no_color_and_non_tty_output_has_no_escape_codes(tmp_path, home):
    db = str(tmp_path / "a.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    r = run_attempt(["verify", "--db", db], env={"NO_COLOR": "1"})
    assert r.returncode == 0 and b"\x1b[" not in r.stdout
    assert r.stdout.decode().startswith("ok: 0 events")


def test_init_json_and_keys(tmp_path, home):
    db = str(tmp_path / "a.db")
    r = run_attempt(["init", "--db", db, "--capture-mode", "metadata", "--json"])
    info = json.loads(r.stdout)
    assert info["created"] and info["capture_mode"] == "metadata_only"
    assert info["device_id"].startswith("dev_") and info["key_id"].startswith("id_")
    show = json.loads(run_attempt(["keys", "show", "--db", db, "--json"]).stdout)
    assert show["key_id"] == info["key_id"] and show["algorithm"] == "Ed25519"
    key_file = show["path"]
    assert os.stat(key_file).st_mode & 0o077 == 0
    assert run_attempt(["init", "--db", db, "--capture-mode", "bogus"]).returncode == 2


def test_init_local_is_found_by_walking_up(tmp_path, home):
    proj = tmp_path / "proj"
    (proj / "sub" / "deeper").mkdir(parents=True)
    r = run_attempt(["init", "--local", "--json"], cwd=str(proj))
    info = json.loads(r.stdout)
    assert info["path"] == str(proj / ".attemptdb" / "attempt.db")
    r = run_attempt(["verify", "--json"], cwd=str(proj / "sub" / "deeper"))
    assert json.loads(r.stdout)["ok"]
    from attemptdb.store import location
    assert location.find_local(str(proj / "sub")) == info["path"]
    # a group-writable .attemptdb is not trusted: the walk ignores it (and the default is used)
    os.chmod(proj / ".attemptdb", 0o770)
    assert location.find_local(str(proj / "sub")) is None


def test_a_database_shipped_in_a_repository_is_not_trusted(tmp_path, home):
    """`git clone` gives a shipped .attemptdb this user's ownership and ordinary modes; only
    the account's record of `init --local` tells it apart. Captures there go to the user's
    own database, never into the repository's."""
    src = tmp_path / "upstream"
    src.mkdir()
    assert run_attempt(["init", "--local", "--capture-mode", "full_sync"], cwd=str(src)).returncode == 0
    clone = tmp_path / "clone"
    import shutil
    shutil.copytree(src, clone)  # same owner, same modes: what a clone looks like
    from attemptdb.store import location
    assert location.find_local(str(clone)) is None
    payload = b'{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"my private prompt"}'
    assert run_attempt(["capture", "claude-code"], input=payload, cwd=str(clone)).returncode == 0
    assert b"my private prompt" not in (clone / ".attemptdb" / "attempt.db").read_bytes()
    assert os.path.exists(location.default_db())


def test_a_write_lock_held_too_long_is_a_coded_error(tmp_path, home, monkeypatch, capsys):
    """Another process (a long import or reproject) holds the write lock past the busy
    timeout: `error[store.busy]`, exit 2, not an internal error."""
    import apsw

    from attemptdb.cli.main import run
    from attemptdb.devtools import synth
    from attemptdb.store import database as store_mod
    from attemptdb.store.database import Store
    db = str(tmp_path / "a.db")
    assert run(["init", "--db", db]) == 0
    st = Store.open(db)
    st.append(list(synth.generate(3, seed=4, device_id=st.device_id)))
    st.close()
    capsys.readouterr()
    monkeypatch.setattr(store_mod, "_busy_handler", lambda deadline_s: (lambda count: False))
    holder = apsw.Connection(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert run(["checkpoint", "--db", db]) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert err.startswith("error[store.busy]") and "internal" not in err


def test_the_demo_never_touches_your_own_history(tmp_path, home):
    """`attempt demo` writes ./attemptdb-demo.db even when ATTEMPTDB_PATH names the user's
    database (the Quick start must work in a shell that sets it), and refuses a --db that the
    demo did not make."""
    from attemptdb.store.database import Store
    real = str(tmp_path / "real.db")
    assert run_attempt(["init", "--db", real]).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    r = run_attempt(["demo"], env={"ATTEMPTDB_PATH": real}, cwd=str(work), timeout=300)
    assert r.returncode == 0, r.stderr
    assert (work / "attemptdb-demo.db").exists()
    r = run_attempt(["demo", "--db", real], timeout=300)
    assert r.returncode == 2 and r.stderr.startswith(b"error[demo.not_a_demo_database]"), r.stderr
    st = Store.open(real, readonly=True)
    assert st.count() == 0
    st.close()


def _demo_hints(stdout: bytes) -> list[str]:
    text = stdout.decode()
    block = text.split("Look around:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines()]


@pytest.mark.parametrize("how", ["script-typed-relative", "script-absolute", "script-on-path", "module"])
def test_the_demo_hints_run_as_printed(tmp_path, home, how):
    """Right after Quick start 1 `attempt` is only in .venv/bin: the demo's closing hints start
    the same `attempt` the way it was started (as typed, or `python -m attemptdb`), and say just
    `attempt` only when PATH finds that same one. Every hint runs, as printed, in a shell with
    the demo's directory and PATH."""
    import shlex
    import subprocess
    import sys

    from conftest import ROOT, SQLITE3
    script = os.path.join(os.path.dirname(sys.executable), "attempt")
    if how.startswith("script") and not os.path.exists(script):
        pytest.skip("no installed `attempt` script beside this interpreter")
    work = tmp_path / "work"
    work.mkdir()
    path = "/usr/bin:/bin"
    if how == "script-typed-relative":
        os.symlink(os.path.dirname(script), work / "venvbin")  # like `.venv/bin/attempt demo`
        cmd, prefix = ["venvbin/attempt"], "venvbin/attempt"
    elif how == "script-absolute":
        cmd, prefix = [script], shlex.quote(script)
    elif how == "script-on-path":
        path = os.path.dirname(script) + os.pathsep + path
        cmd, prefix = [script], "attempt"
    else:
        cmd, prefix = [sys.executable, "-m", "attemptdb"], f"{shlex.quote(sys.executable)} -m attemptdb"
    env = dict(os.environ, PATH=path, PYTHONPATH=ROOT)
    env.pop("ATTEMPTDB_PATH", None)
    p = subprocess.run(cmd + ["demo"], capture_output=True, cwd=work, env=env, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    hints = _demo_hints(p.stdout)
    db = str(work / "attemptdb-demo.db")
    assert hints[0] == f"{prefix} events --db {shlex.quote(db)}", hints
    ours = [h for h in hints if not h.startswith("sqlite3 ")]
    assert len(ours) == 4 and all(h.startswith(prefix + " ") for h in ours), hints
    if how == "script-on-path":
        return  # the others already ran each hint's subcommand
    for hint in hints:
        if hint.startswith("sqlite3 ") and not os.access(SQLITE3, os.X_OK):
            continue
        r = subprocess.run(hint, shell=True, capture_output=True, cwd=work, env=env, timeout=120)
        assert r.returncode == 0 and r.stdout, (hint, r.stderr.decode())


def test_the_demo_database_is_git_ignored_in_this_repository():
    """Quick start 1 runs `attempt demo` in the checkout: its file must not show up as a change."""
    import shutil
    import subprocess

    from conftest import ROOT
    git = shutil.which("git")
    inside = git and subprocess.run([git, "rev-parse", "--is-inside-work-tree"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip() == "true"
    if not inside:
        pytest.skip("not a git checkout")
    names = ["attemptdb-demo.db", "attemptdb-demo.db-wal", "attemptdb-demo.db-shm"]
    p = subprocess.run([git, "check-ignore", "--no-index", *names], cwd=ROOT, capture_output=True, text=True)
    assert p.stdout.split() == names, p.stdout


def test_a_crash_report_is_private_and_holds_no_secret(tmp_path, home, monkeypatch, capsys):
    """The report wrote the whole command line and the exception's text unredacted, 0644."""
    import stat
    import sys

    from attemptdb.cli import main, query
    token = "ghp_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "0123456789"
    db = str(tmp_path / "a.db")
    assert main.run(["init", "--db", db]) == 0

    def boom(*a, **k):
        raise RuntimeError(f"unexpected, near {token}")
    monkeypatch.setattr(query, "status_report", boom)
    monkeypatch.setattr(sys, "argv", ["attempt", "status", "--db", db, "--note", f"GITHUB_TOKEN={token}"])
    capsys.readouterr()
    assert main.run(["status", "--db", db]) == 2
    err = capsys.readouterr().err
    report = err.split("full report: ")[1].rstrip(")\n")
    text = open(report, encoding="utf-8").read()
    assert "RuntimeError" in text and token not in text and "[REDACTED:github_token]" in text
    assert stat.S_IMODE(os.stat(report).st_mode) == 0o600


def test_the_hook_log_is_the_user_s_alone(tmp_path, home):
    from attemptdb.capture import hooklog
    from attemptdb.store import location
    hooklog.log("daemon answer=timeout")
    path = os.path.join(location.state_dir(), "hook.log")
    assert open(path).read().endswith(" daemon answer=timeout\n")
    assert os.stat(path).st_mode & 0o777 == 0o600
