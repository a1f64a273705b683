"""Hostile text never reaches a terminal as control characters (DESIGN invariant 8): the commands
run on a real pseudo-terminal (click strips ANSI codes only when stdout is not one, so a pipe
would hide exactly these cases), and the bytes the terminal received are checked.

The values come from what a hostile repository or file controls: a directory name (the working
directory `demo` writes in, a database's folder shown by `doctor` and `recover`, an agent's
config directory), a column name in a statement's text."""

import os
import subprocess

import pytest
from conftest import ROOT, attempt_cmd, attempt_on_pty

from attemptdb.query.result import Result
from attemptdb.render import results

# ESC sequences (clear screen, window title, OSC 8 hyperlink, hidden text), CR, backspace, BEL, C1
EVIL = "A\x1b[2J\x1b]0;T\x07\x1b]8;;http:__e\x1b\\L\x1b[8mH\rB\x08C\x9bD\x85E"
SHOWN = "A?[2J?]0;T??]8;;http:__e?\\L?[8mH?B?C?D?E"  # errors.printable: every C0/C1 control as `?`
CONTROLS = [b"\x1b", b"\r", b"\x08", b"\x07", b"\xc2\x9b", b"\xc2\x85"]


def on_pty(args, *, cwd=None, env=None):
    """Run `attempt args` with stdout and stderr on one pseudo-terminal whose output processing
    is off (a CR the command wrote stays a CR): (exit status, every byte the terminal got)."""
    e = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1", COLUMNS="200", TZ="UTC", ATTEMPTDB_NO_DAEMON="1")
    e.update(env or {})
    code, _, seen = attempt_on_pty(args, env=e, cwd=cwd, stdout_too=True, raw=True, timeout=120)
    return code, seen


def no_controls(out: bytes, allowed=()):
    rest = out
    for ok in allowed:  # our own drawing (a progress line's erase), not the hostile text
        rest = rest.replace(ok, b"")
    found = [c for c in CONTROLS if c in rest]
    assert not found, (found, out[:2000])


@pytest.fixture
def evil_dir(tmp_path, home):
    d = tmp_path / ("d" + EVIL)
    d.mkdir()
    return d


def test_query_column_names_are_shown_through_the_cells_rule(db):
    stmt = f"SELECT 'v' AS \"{EVIL}\""
    subprocess.run(attempt_cmd() + ["init", "--db", db], capture_output=True, check=True,
                   env=dict(os.environ, PYTHONPATH=ROOT))
    cleaned = SHOWN  # results.safe_chars: each control a `?`, the rule of every other line (errors.printable)
    for args in (["query", stmt, "--db", db], ["query", "-n", "5", stmt, "--db", db]):  # lean path, click's
        code, out = on_pty(args)
        assert code == 0
        no_controls(out)
        assert out.split(b"\n")[0] == cleaned.encode()
        code, out = on_pty(args, env={"COLUMNS": "20"})  # fitted to the width: termtable.fit cuts it
        assert code == 0
        no_controls(out)
        assert out.split(b"\n")[0] == (cleaned[:7] + "…").encode()
    # machine formats keep the name whole
    p = subprocess.run(attempt_cmd() + ["query", stmt, "--db", db, "--csv"], capture_output=True,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.stdout.split(b"\r\n")[0].startswith(b'"A\x1b[2J\x1b]0;T\x07')


def test_vertical_form_cleans_column_names():
    r = Result(columns=["claim", "x\x1b[2Jy"], rows=[["why", "v"]], kind="explanation")
    out = results.vertical(r)
    assert "\x1b" not in out and "x?[2Jy" in out.split("\n")[1]


def test_demo_in_a_hostile_directory(evil_dir):
    code, out = on_pty(["demo"], cwd=str(evil_dir))
    assert code == 0
    no_controls(out, allowed=(b"\r\x1b[2K",))
    path = f"{os.path.dirname(str(evil_dir))}/d{SHOWN}/attemptdb-demo.db"
    assert f"recorded in {path}\n".encode() in out
    assert f"  sqlite3 '{path}' ".encode() in out


def test_doctor_names_a_hostile_database_path(evil_dir):
    db = str(evil_dir / "x.db")
    subprocess.run(attempt_cmd() + ["init", "--db", db], capture_output=True, check=True,
                   env=dict(os.environ, PYTHONPATH=ROOT))
    code, out = on_pty(["doctor", "--db", db])
    no_controls(out)
    shown = db.replace(str(evil_dir), os.path.dirname(str(evil_dir)) + "/d" + SHOWN)
    shown = shown.replace(os.path.expanduser("~"), "~", 1) if shown.startswith(os.path.expanduser("~")) else shown
    assert f"database     {shown}: 0 events, schema ".encode() in out


def test_hook_status_names_a_hostile_config_directory(evil_dir):
    code, out = on_pty(["hook", "status", "--provider", "claude-code"], env={"CLAUDE_CONFIG_DIR": str(evil_dir)})
    no_controls(out)
    shown = os.path.dirname(str(evil_dir)) + "/d" + SHOWN + "/settings.json"
    assert out.startswith(b"Claude Code  not_installed") and shown.encode() in out


def test_recover_names_a_hostile_database_path(evil_dir):
    db = str(evil_dir / "x.db")
    subprocess.run(attempt_cmd() + ["init", "--db", db], capture_output=True, check=True,
                   env=dict(os.environ, PYTHONPATH=ROOT))
    code, out = on_pty(["recover", "--db", db])
    assert code == 0
    no_controls(out, allowed=(b"\r\x1b[2K",))
    shown = os.path.dirname(str(evil_dir)) + "/d" + SHOWN + "/x.db"
    assert f"  attempt daemon stop --db '{shown}'\n".encode() in out
    assert f"  mv '{shown}'".encode() in out and f"'{shown}.damaged'\n".encode() in out  # wrapped at COLUMNS


def test_query_notes_with_json_name_a_stored_project_through_the_cells_rule(db):
    """A project's name is stored as an event carried it (an Event v1 import, a bundle, a sync
    folder): a note naming it goes to the terminal on stderr beside --json's data."""
    from attemptdb import adapters
    from attemptdb.model import clock, ids
    from attemptdb.store.database import Store
    dev = ids.derive("dev_", "term-hostile")
    proj = dict(ids.project_identity("/work/p", "github.com/acme/p", dev), name="p\x1b[2J\rq")
    ctx = adapters.Context(dev, "local_semantic", proj, clock.now_us(), hook_version="t")
    st = Store.open(db)
    st.append([adapters.build_event("claude_code", dict(hook_event_name="UserPromptSubmit", session_id="s1",
                                                        cwd="/work/p", prompt="hi"), None, ctx)])
    st.close()
    stmt = "WHAT IS project 'p\x1b[2J\rq' DOING NOW"
    for args in (["query", stmt, "--json", "--db", db], ["query", "-n", "5", stmt, "--json", "--db", db]):
        code, out = on_pty(args)
        assert code == 0
        no_controls(out)
        assert b"note: state of project p?[2J?q at " in out
        assert b"note: 1 work unit(s) of project p?[2J?q open at " in out
    # the data itself stays whole: JSON escapes the controls
    p = subprocess.run(attempt_cmd() + ["query", stmt, "--json", "--db", db], capture_output=True,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert b'"project_name":"p\\u001b[2J\\rq"' in p.stdout


def test_artifact_to_a_terminal_shows_controls_and_a_pipe_gets_the_exact_bytes(db, tmp_path):
    import hashlib
    import sys
    e = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run(attempt_cmd() + ["init", "--db", db], capture_output=True, check=True, env=e)
    raw = EVIL.encode() + b"\nnext\tline \xff\xfe end \xe2\x82\xac\n"  # controls, a tab, bytes that are not UTF-8
    prog = f"import sys; sys.stdout.buffer.write({raw!r})"
    p = subprocess.run(attempt_cmd() + ["run", "--attach-output", "--db", db, "--", sys.executable, "-c", prog],
                       capture_output=True, env=e, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == raw, p.stderr
    import apsw
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    (aid, sha), = conn.execute("SELECT artifact_id, sha256 FROM artifacts").fetchall()
    conn.close()
    assert sha == hashlib.sha256(raw).hexdigest()  # nothing in it is secret-shaped: kept as written
    piped = subprocess.run(attempt_cmd() + ["artifact", aid, "--db", db], capture_output=True, env=e)
    assert piped.returncode == 0 and piped.stdout == raw and piped.stderr == b""  # a pipe: exact bytes, no note
    code, out = on_pty(["artifact", aid, "--db", db])
    assert code == 0
    no_controls(out.replace(b"\n", b""))  # raw terminal: the newlines it shows are the artifact's own
    assert out.startswith(SHOWN.encode() + b"\nnext\tline \xef\xbf\xbd\xef\xbf\xbd end \xe2\x82\xac\n"), out
    assert b"note: shown for a terminal" in out
