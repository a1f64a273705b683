"""`attempt query` and `attempt needs-you` without click (attemptdb/cli/lean.py): the hand parser
accepts an argument list only when it yields exactly the keyword arguments the click command
would get, and a process that takes the lean path prints and exits exactly as the click path
does, byte for byte."""

import io
import os
import subprocess
import sys

import click
import pytest
import scenario_db
from conftest import ROOT

from attemptdb.cli import LEAN, common, lean
from attemptdb.cli.query import needs_you_cmd, query_cmd

pytestmark = pytest.mark.usefixtures("private_grammar_cache")


# --- the parser against click ------------------------------------------------------------------

def click_params(cmd, args):
    """The keyword arguments click would call `cmd` with, or None when click refuses `args`
    (or prints help)."""
    try:
        return cmd.make_context(cmd.name, list(args)).params
    except (click.ClickException, click.exceptions.Exit):
        return None


QUERY_HANDLED = [
    ["SELECT 1"], ["SELECT 1", "--json"], ["--json", "SELECT 1"], ["SHOW X", "--csv", "--evidence", "--explain"],
    ["S", "-n", "5"], ["S", "--limit", "5"], ["S", "--limit=5"], ["S", "-n", " 7 "], ["S", "-n", "1_000"],
    ["S", "-n", "10000000"], ["S", "-n", "1"], ["S", "--engine", "sqlite"], ["S", "--engine=sqlite"],
    ["S", "--db", "x.db"], ["--db=x.db", "S"], ["S", "--db="], ["S", "--db", ""], ["S", "--json", "--json"],
    ["", "--json"], ["S", "--db", "/tmp/a b.db", "--evidence", "-n", "3"], ["SELECT '--json'"],
]
QUERY_REFUSED_OR_FALLBACK = [
    [], ["a", "b"], ["S", "--nope"], ["S", "-n", "0"], ["S", "-n", "x"], ["S", "-n"], ["S", "--limit", "10000001"],
    ["S", "--limit", "-3"], ["S", "--engine", "SQLITE"], ["S", "--engine", "duckdb"], ["S", "--json=1"], ["S", "-n5"],
    ["S", "-h"], ["S", "--help"], ["--", "-S"], ["-"], ["S", "--db", "--json"], ["S", "--limit", "5", "-n", "6"],
    ["S", "--db", "a", "--db", "b"], ["S", "--from", "d"], ["S", "--engine", "datafusion"], ["-- note\nSELECT 1"],
    ["S", "--lim=5"], ["S", "-n=5"], ["S", "--js"],
    ["S", "--json", "--csv"],  # click parses it and the command refuses it: that stays click's
]
NEEDS_HANDLED = [[], ["--json"], ["--evidence", "--json"], ["--project", "demo"], ["--project=demo", "--db", "x"],
                 ["--project", ""], ["--db="]]
NEEDS_REFUSED_OR_FALLBACK = [["x"], ["--help"], ["--project"], ["--project", "-x"], ["--nope"], ["--json=1"],
                             ["--project", "a", "--project", "b"], ["--", "x"]]


@pytest.mark.parametrize("env", [None, "", "/env/attempt.db"])
def test_the_lean_parser_gives_click_s_arguments_or_leaves_them_to_click(env, monkeypatch, capsys):
    if env is None:
        monkeypatch.delenv("ATTEMPTDB_PATH", raising=False)
    else:
        monkeypatch.setenv("ATTEMPTDB_PATH", env)
    for cmd, parse, handled, other in ((query_cmd, lean.parse_query, QUERY_HANDLED, QUERY_REFUSED_OR_FALLBACK),
                                       (needs_you_cmd, lean.parse_needs_you, NEEDS_HANDLED,
                                        NEEDS_REFUSED_OR_FALLBACK)):
        for args in handled:
            mine = parse(list(args))
            assert mine is not None and mine == click_params(cmd, args), args
        for args in other:
            assert parse(list(args)) is None, args


def test_the_lean_parser_knows_every_option_of_the_click_commands():
    """A new option in cli/query.py is unknown here, so its use falls back to click; the options
    handled here must be the click command's, with the same names, range, choice and envvar."""
    def options(cmd):
        return {o: p for p in cmd.params for o in p.opts if isinstance(p, click.Option)}
    q = options(query_cmd)
    assert set(q) == set(lean.QUERY_FLAGS) | set(lean.QUERY_VALUES) | {"--from"}
    for opt, name in {**lean.QUERY_FLAGS, **lean.QUERY_VALUES}.items():
        assert q[opt].name == name and q[opt].is_flag == (opt in lean.QUERY_FLAGS), opt
    limit = q["--limit"].type
    assert (limit.min, limit.max, limit.min_open, limit.max_open, limit.clamp) == (*lean.LIMIT_RANGE, False, False,
                                                                                     False)
    assert q["--engine"].default == "sqlite" and "sqlite" in q["--engine"].type.choices
    assert q["--db"].envvar == lean.DB_ENV
    assert [p.name for p in query_cmd.params if isinstance(p, click.Argument)] == ["statement"]
    n = options(needs_you_cmd)
    assert set(n) == set(lean.NEEDS_YOU_FLAGS) | set(lean.NEEDS_YOU_VALUES)
    for opt, name in {**lean.NEEDS_YOU_FLAGS, **lean.NEEDS_YOU_VALUES}.items():
        assert n[opt].name == name and n[opt].is_flag == (opt in lean.NEEDS_YOU_FLAGS), opt
    assert n["--db"].envvar == lean.DB_ENV
    assert not [p for p in needs_you_cmd.params if isinstance(p, click.Argument)]
    assert set(lean.PARSERS) == set(LEAN)


# --- echo against click.echo -------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "latin-1"])
def test_echo_writes_what_click_echo_writes(encoding, monkeypatch):
    messages = ["", "plain", "ü ✓ 漢", "a\x1b[31mred\x1b[0m b", "tab\tand\nlines", "\x1b]0;title\x07x", "é" * 3]
    for err in (False, True):
        for nl in (True, False):
            for m in messages:
                out = []
                for echo in (common.echo, click.echo):
                    buf = io.BytesIO()
                    stream = io.TextIOWrapper(buf, encoding=encoding, errors="replace", write_through=True)
                    monkeypatch.setattr(sys, "stderr" if err else "stdout", stream)
                    echo(m, err=err, nl=nl)
                    stream.flush()
                    out.append(buf.getvalue())
                assert out[0] == out[1], (m, err, nl, encoding)


# --- both paths, as processes ------------------------------------------------------------------

CLICK_PATH = "import sys; from attemptdb.cli.main import run; sys.exit(run(sys.argv[1:]))"


@pytest.fixture(scope="module")
def scen(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("lean") / "attempt.db")
    scenario_db.build(path, "units_needs_you", "corrections")
    return path


def both(args, env):
    lean_p = subprocess.run([sys.executable, "-m", "attemptdb", *args], capture_output=True, env=env, timeout=120)
    click_p = subprocess.run([sys.executable, "-c", CLICK_PATH, *args], capture_output=True, env=env, timeout=120)
    return lean_p, click_p


def cases(db, tmp):
    return [
        ["query", "SELECT 1", "--json", "--db", db],
        ["query", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind", "--db", db],
        ["query", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind", "--csv", "--db", db],
        ["query", "SHOW FAILED ATTEMPTS", "--db", db],
        ["query", "SHOW FAILED ATTEMPTS", "--json", "--db", db],
        ["query", "SHOW SESSIONS", "-n", "1", "--db", db],
        ["query", "SHOW SESSIONS", "--evidence", "--db", db],
        ["query", "SHOW WORK UNITS", "--explain", "--db", db],
        ["query", "SHOW CORRECTIONS", "--csv", "--db", db],
        ["query", "SELECT char(27) || '[31mred' AS x, 'a' || char(10) || 'b' AS y", "--csv", "--db", db],
        ["query", "SELECT char(27) || '[31mred' AS x", "--json", "--db", db],
        ["query", "SELECT char(27) || '[31mred' AS x", "--db", db],
        ["query", "SHOW FAILD ATTEMPTS", "--db", db],  # AQL parse error
        ["query", "DELETE FROM events", "--json", "--db", db],  # refused write
        ["query", "SELECT nosuch FROM events", "--db", db],
        ["query", "SELECT 1", "--json", "--db", os.path.join(tmp, "missing", "x.db")],  # bad --db
        ["query", "SELECT 1", "--json", "--db", tmp],  # a directory
        ["query", "SELECT 1", "--bogus", "--db", db],  # unknown option: click's error
        ["query", "--help"],
        ["query"],
        ["query", "SELECT 1", "-n", "0", "--db", db],
        ["query", "SELECT 1", "--json", "--csv", "--db", db],
        ["query", "SELECT 1", "--from", tmp, "--db", db],
        ["query", "", "--db", db],
        ["query", b"SELECT '\xff'", "--db", db],  # not UTF-8
        ["needs-you", "--json", "--db", db],
        ["needs-you", "--db", db],
        ["needs-you", "--evidence", "--db", db],
        ["needs-you", "--project", "nowhere", "--db", db],
        ["needs-you", "--project", "gate", "--json", "--db", db],
        ["needs-you", "extra", "--db", db],
    ]


def test_the_lean_path_prints_and_exits_as_the_click_path(scen, tmp_path, home):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100", NO_COLOR="1")
    for args in cases(scen, str(tmp_path)):
        lean_p, click_p = both(args, env)
        assert b"Traceback" not in lean_p.stderr, (args, lean_p.stderr)
        assert (lean_p.returncode, lean_p.stdout, lean_p.stderr) == \
            (click_p.returncode, click_p.stdout, click_p.stderr), args
    # ATTEMPTDB_PATH in place of --db
    lean_p, click_p = both(["query", "SHOW SESSIONS", "--json"], dict(env, ATTEMPTDB_PATH=scen))
    assert lean_p.returncode == 0 and (lean_p.stdout, lean_p.stderr) == (click_p.stdout, click_p.stderr)


def imported(args, env) -> set:
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "attemptdb", *args], capture_output=True,
                       env=env, timeout=120)
    return {line.split("|")[-1].strip() for line in p.stderr.decode().splitlines() if line.startswith("import time:")}


def test_a_plain_read_imports_no_click_and_nothing_heavy(scen, home):
    env = dict(os.environ, PYTHONPATH=ROOT)
    heavy = {"click", "jsonschema", "cryptography", "tabulate", "traceback", "typing_extensions", "dataclasses",
             "parsimonious", "attemptdb.query.parse"}
    for args in (["query", "SELECT 1", "--json"], ["query", "SELECT 1"], ["needs-you", "--json"], ["needs-you"]):
        mods = imported(args + ["--db", scen], env)
        assert "attemptdb.query.execute" in mods or args[0] == "needs-you", args
        assert not (mods & heavy), (args, mods & heavy)
    mods = imported(["query", "SHOW FAILED ATTEMPTS", "--json", "--db", scen], env)
    assert "attemptdb.query.parse" in mods and not (mods & {"click", "jsonschema", "cryptography", "tabulate"})
    assert "click" in imported(["query", "SELECT 1", "--bogus", "--db", scen], env)  # click's to refuse


def test_a_reader_that_goes_away_ends_the_lean_query_quietly(scen, home):
    env = dict(os.environ, PYTHONPATH=ROOT)
    stmt = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 200000) SELECT i FROM n"
    for flags in (["--json"], ["--csv"]):
        p = subprocess.Popen([sys.executable, "-m", "attemptdb", "query", stmt, "--db", scen] + flags, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert len(p.stdout.read(100)) == 100
        p.stdout.close()
        assert p.wait(timeout=60) == 0, flags
        assert p.stderr.read() == b"", flags
        p.stderr.close()


def test_ctrl_c_during_a_lean_query_is_reported_as_click_reports_it(scen, home):
    """click turns KeyboardInterrupt into a blank line and Abort, which cli/main.run reports as
    "aborted", exit 1: the lean path says the same."""
    import signal
    import time
    env = dict(os.environ, PYTHONPATH=ROOT)
    stmt = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    got = []
    for cmd in ([sys.executable, "-m", "attemptdb"], [sys.executable, "-c", CLICK_PATH]):
        # SIGINT back to its default in the child: a runner started in the background passes it ignored
        p = subprocess.Popen(cmd + ["query", stmt, "--json", "--db", scen], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(2.5)  # well into the statement (its time limit is 30 s)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        got.append((p.returncode, out, err))
    assert got[0] == got[1] == (1, b"", b"\naborted\n")


LEAVES = ("import atexit, gc, sys; atexit.register(lambda: sys.stderr.write('teardown %d\\n' % gc.get_threshold()[0])); "
          "from attemptdb.launcher import main; sys.exit(main())")


def test_a_read_ends_its_process_once_printed_without_the_interpreter_s_teardown(scen, home):
    """`attempt query` / `needs-you` as a process: everything it prints arrives (a large result
    through a pipe, to the last row), its exit status is kept, and the process ends there: no
    exit handler runs (no teardown). A command click runs, and the library's main called with
    arguments (tests, embedding), return as before."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    stmt = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 200000) SELECT i FROM n"
    p = subprocess.run([sys.executable, "-c", LEAVES, "query", stmt, "--csv", "--db", scen], env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == 0 and p.stderr == b""
    lines = p.stdout.decode().splitlines()
    assert (len(lines), lines[0], lines[-1]) == (200001, "i", "200000")
    p = subprocess.run([sys.executable, "-c", LEAVES, "query", "SHOW FAILD ATTEMPTS", "--db", scen], env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == 2 and b"AQL" in p.stderr and b"teardown" not in p.stderr
    p = subprocess.run([sys.executable, "-c", LEAVES, "needs-you", "--json", "--db", scen], env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith(b"{") and p.stderr == b""
    p = subprocess.run([sys.executable, "-c", LEAVES, "--version"], env=env, capture_output=True, timeout=120)
    assert p.returncode == 0 and p.stderr == b"teardown 700\n"
    p = subprocess.run([sys.executable, "-c", LEAVES.replace("main()", f"main(['query', 'SELECT 1', '--db', {scen!r}])")],
                       env=env, capture_output=True, timeout=120)
    assert p.returncode == 0 and p.stderr == b"teardown 700\n"
