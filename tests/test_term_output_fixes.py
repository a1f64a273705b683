"""Terminal output defects a walkthrough found, each held here.

1. Decimals in tables were printed with 6 significant digits (`{:g}`): 1234567.891 as
   `1.23457e+06` and 100000.5 as `100000`, a wrong value. Every table and record on the
   terminal now writes a REAL as the sqlite3 shell does (`%!.15g`: 15 significant digits and
   always a decimal point); --json and --csv keep printing the exact value.
2. On a terminal, `attempt query --json` wrote bidi and zero-width characters as \\u escapes,
   but `events --json`, `events --jsonl`, `timeline --json` and `failures --json` wrote them
   raw (Trojan-Source reordering on the terminal). Every JSON output now takes the same rule
   (render/jsonterm); through a pipe the text is unchanged.
3. `attempt status` cut project names by characters, not display columns (a name of wide
   characters made a 96-column line at COLUMNS=80), and ignored COLUMNS (rows of 74-75 columns at
   COLUMNS=40). Its lines now fit the terminal by display width.
"""

import json
import os
import subprocess

import pytest
from conftest import ROOT, SQLITE3, attempt_cmd, attempt_on_pty, needs_shell

from attemptdb.cli import query as status_cli
from attemptdb.query.result import Result
from attemptdb.render import jsonterm, results, termtable

# --- 1. decimals --------------------------------------------------------------------------------

WALKTHROUGH = "SELECT 1234567.891 AS x, 100000.5 AS y, 123456789012345678901234567890 AS d, 1.0 AS g"


@pytest.mark.parametrize("value,text", [
    (1234567.891, "1234567.891"), (100000.5, "100000.5"), (1.2345678901234568e29, "1.23456789012346e+29"),
    (1.0, "1.0"), (0.1 + 0.2, "0.3"), (-2.5, "-2.5"), (1e16, "1.0e+16"), (1e-7, "1.0e-07"),
    (123456789012345.6, "123456789012346.0"), (-0.0, "0.0"), (float("inf"), "Inf"), (float("-inf"), "-Inf"),
    (5e-324, "4.94065645841247e-324"), (0.000123, "0.000123")])
def test_a_decimal_reads_as_the_sqlite3_shell_prints_it(value, text):
    assert results.real(value) == text
    assert results.cell("x", value) == text


def test_a_table_never_shows_a_decimal_rounded_to_six_digits():
    r = Result(columns=["x", "y", "d", "g"], rows=[[1234567.891, 100000.5, 1.2345678901234568e29, 1.0]])
    lines = results.table(r).split("\n")
    assert lines[2].split() == ["1234567.891", "100000.5", "1.23456789012346e+29", "1.0"]
    # fitted to a narrow terminal, a number is never cut (an exponent is a number's)
    narrow = Result(columns=["d", "t"], rows=[[1.2345678901234568e29, "some text " * 6]])
    assert "1.23456789012346e+29" in results.table(narrow, term_width=40)
    assert termtable.is_number("1.23456789012346e+29") and termtable.is_number("-1.0e-07")
    assert not termtable.is_number("1e") and not termtable.is_number("1e5") and not termtable.is_number("e+5")


def test_the_uncertainty_and_the_record_form_write_decimals_the_same_way():
    assert results.cell("uncertainty", {"confidence": 0.85, "reason": "heuristic"}) == "0.85 heuristic"
    assert results.cell("uncertainty", {"confidence": 1.0, "reason": "exact"}) == "1.0 exact"
    assert results.cell("uncertainty", {"confidence": "high\x1b", "reason": "r"}) == "high? r"  # an edited file
    r = Result(columns=["claim", "ratio"], rows=[["why", 100000.5]], kind="explanation")
    assert "100000.5" in results.vertical(r)


def _env(db, home, **extra):
    return dict(os.environ, ATTEMPTDB_PATH=db, PYTHONPATH=ROOT, NO_COLOR="1", COLUMNS="200", TZ="UTC",
                ATTEMPTDB_NO_DAEMON="1", HOME=str(home), XDG_DATA_HOME=str(home / "share"),
                XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config"), **extra)


def _run(args, env, input=None):
    p = subprocess.run(attempt_cmd() + list(args), env=env, input=input, capture_output=True, timeout=120)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, (args, p.stderr.decode())
    return p.stdout.decode()


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("decimals")
    (d / "home").mkdir()
    db = str(d / "a.db")
    env = _env(db, d / "home")
    _run(["init", "--db", db], env)
    return db, env


def test_the_walkthroughs_statement_prints_every_value(empty_db):
    _, env = empty_db
    for args in (["query", WALKTHROUGH], ["query", "-n", "5", WALKTHROUGH]):  # the lean path and click's
        lines = _run(args, env).split("\n")
        assert lines[2].split() == ["1234567.891", "100000.5", "1.23456789012346e+29", "1.0"], lines
    assert json.loads(_run(["query", "--json", WALKTHROUGH], env)) == [
        {"x": 1234567.891, "y": 100000.5, "d": 1.2345678901234568e29, "g": 1.0}]


@needs_shell
def test_tables_print_decimals_as_the_sqlite3_shell_does(empty_db):
    db, env = empty_db
    values = ["1234567.891", "100000.5", "123456789012345678901234567890", "1.0", "0.1 + 0.2", "-2.5", "1e16",
              "1e-7", "123456789012345.6", "0.000123", "2.0/3", "1e300 * 10", "-1e999", "7e22", "12345.678901234567"]
    stmt = " UNION ALL ".join(f"SELECT {i} AS i, {v} AS v" for i, v in enumerate(values)) + " ORDER BY i"
    shell = subprocess.run([SQLITE3, db, f"SELECT v FROM ({stmt});"], capture_output=True, text=True, timeout=60)
    assert shell.returncode == 0, shell.stderr
    ours = [line.split()[1] for line in _run(["query", f"SELECT i, v FROM ({stmt})"], env).split("\n")[2:-2]]
    assert ours == shell.stdout.split("\n")[:-1]


# --- 2. JSON on a terminal --------------------------------------------------------------------------

BIDI, ZW = "\u202e", "\u200b"
SESSION = "11111111-2222-4333-8444-000000000002"


def _payloads(cwd: str) -> list:
    """A Claude Code session whose prompt, edited path, edit strings and error hold a bidi override
    and a zero-width space: a failed edit, then the same edit again (so the first is superseded)."""
    path = f"{cwd}/src/a{BIDI}b{ZW}.ts"
    edit = {"file_path": path, "old_string": f"x{BIDI}", "new_string": f"y{ZW}"}
    base = {"session_id": SESSION, "cwd": cwd}
    return [dict(base, hook_event_name="UserPromptSubmit", prompt=f"fix bidi{BIDI}gnp.exe zw{ZW}sp"),
            dict(base, hook_event_name="PreToolUse", tool_name="Edit", tool_use_id="toolu_1", tool_input=edit),
            dict(base, hook_event_name="PostToolUseFailure", tool_name="Edit", tool_use_id="toolu_1",
                 tool_input=edit, error=f"String to replace not found in file {BIDI}"),
            dict(base, hook_event_name="PreToolUse", tool_name="Edit", tool_use_id="toolu_2", tool_input=edit),
            dict(base, hook_event_name="PostToolUse", tool_name="Edit", tool_use_id="toolu_2", tool_input=edit,
                 tool_response={"filePath": path}),
            dict(base, hook_event_name="Stop")]


@pytest.fixture(scope="module")
def disguised_db(tmp_path_factory):
    """A history captured by real Claude Code hooks in a directory whose name holds both characters."""
    d = tmp_path_factory.mktemp("json_on_a_terminal")
    (d / "home").mkdir()
    cwd = d / f"re{BIDI}po{ZW}x"
    cwd.mkdir()
    db = str(d / "a.db")
    env = _env(db, d / "home")
    env.pop("CLAUDE_PROJECT_DIR", None)
    for payload in _payloads(str(cwd)):
        p = subprocess.run(attempt_cmd() + ["capture", "claude-code", "--db", db, "--capture-mode", "full_sync"],
                           input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=120)
        assert p.returncode == 0 and not p.stdout and not p.stderr, p
    return db, env


JSON_OUTPUTS = [["events", "--json"], ["events", "--jsonl"], ["timeline", "--json"], ["failures", "--json"],
                ["query", "--json", "SELECT json_extract(content_json, '$.prompt') AS p FROM events"],
                ["query", "--json", "-n", "5", "SHOW ATTEMPTS"], ["needs-you", "--json"], ["status", "--json"]]


def _parsed(args, text: bytes):
    """The JSON values of an output (on the terminal, a query's notes follow its one line)."""
    lines = [line for line in text.decode().replace("\r\n", "\n").splitlines() if line]
    return [json.loads(line) for line in lines] if "--jsonl" in args else json.loads(lines[0])


@pytest.mark.parametrize("args", JSON_OUTPUTS, ids=lambda a: " ".join(a[:2]))
def test_no_json_output_writes_a_bidi_or_zero_width_character_raw_on_a_terminal(disguised_db, args):
    _, env = disguised_db
    piped = subprocess.run(attempt_cmd() + args, env=env, capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    code, _, seen = attempt_on_pty(args, env=env, stdout_too=True, raw=True, timeout=120)
    assert code == 0, seen
    raw = [c for c in (BIDI, ZW, "\x1b", "\u0085") if c.encode() in seen]
    assert not raw, (raw, seen[:600])
    assert _parsed(args, seen) == _parsed(args, piped.stdout)  # the same values to a parser


@pytest.mark.parametrize("args", JSON_OUTPUTS[:4], ids=lambda a: " ".join(a))
def test_through_a_pipe_the_json_keeps_every_character(disguised_db, args):
    _, env = disguised_db
    out = subprocess.run(attempt_cmd() + args, env=env, capture_output=True, timeout=120).stdout
    assert BIDI.encode() in out and ZW.encode() in out  # the stored values, as they are
    assert b"\\u202e" not in out and b"\\u200b" not in out


def test_one_rule_escapes_json_for_a_terminal():
    text = json.dumps({"a": f"x{BIDI}y{ZW}z\u0085\x7f\u2028"}, ensure_ascii=False)
    assert jsonterm.escaped(text) == '{"a": "x\\u202ey\\u200bz\\u0085\\u007f\\u2028"}'
    assert json.loads(jsonterm.escaped(text)) == json.loads(text)
    assert jsonterm.escaped('{"a": "日本"}') == '{"a": "日本"}'  # every other character as it is


# --- 3. status fits the terminal -----------------------------------------------------------------------

WIDE = "日本" * 40


def _rep(projects, providers=None) -> dict:
    return {"database": "/tmp/a.db", "schema_version": 21, "capture_mode": "local_semantic", "events": 3,
            "sessions": 3, "work_units": 3, "needs_you": 0, "size_bytes": 16384, "wal_bytes": 0,
            "capture_test_sessions": None, "warnings": [],
            "providers": providers or [{"provider": "claude_code", "events": 3, "sessions": 3,
                                        "last_event_at": "2026-12-07T20:29:07.123456Z"}],
            "projects": [{"project_name": n, "events": e, "sessions": s} for n, e, s in projects]}


@pytest.mark.parametrize("width", [24, 30, 40, 52, 60, 80, 120, 200])
def test_status_lines_fit_by_display_width_and_keep_counts_whole(width):
    rep = _rep([(WIDE, 1, 1), ("esc\x1b[2J\x9bname", 12345, 678), ("short", 3, 2)])
    lines = status_cli.status_lines(rep, width)
    # (narrower than 30 columns, a word of the labelled lines runs past: prose never breaks one)
    rows = lines[lines.index("projects") - 2:] if width < 30 else lines
    assert all(termtable.cols(line) <= width for line in rows if "2026-12-07" not in line), lines
    text = "\n".join(lines)
    assert "12345 events" in text and "678 sessions" in text and "1 event" in text  # counts are never cut
    assert "esc?[2J?name" in text or "esc?[2J…" in text or "esc?[2J?n…" in text  # the read commands' rule
    assert "\x1b" not in text and "\x9b" not in text
    if width >= 29:  # the time whole, wherever it goes
        assert "last 2026-12-07T20:29:07Z" in text


def test_status_keeps_its_layout_where_it_fits():
    lines = status_cli.status_lines(_rep([("shop", 3, 2)]), 80)
    assert "  claude_code          3 events      3 sessions  last 2026-12-07T20:29:07Z" in lines
    assert "  shop" + " " * 36 + "         3 events      2 sessions" in lines


@pytest.fixture(scope="module")
def wide_names_db(tmp_path_factory):
    """Sessions captured in a directory named with 80 columns of wide characters, one named with
    an escape sequence, and a short one."""
    d = tmp_path_factory.mktemp("status_width")
    (d / "home").mkdir()
    db = str(d / "a.db")
    env = _env(db, d / "home")
    env.pop("CLAUDE_PROJECT_DIR", None)
    for i, name in enumerate([WIDE, "short"]):
        cwd = d / "x" / name
        cwd.mkdir(parents=True)
        payload = {"session_id": f"s{i}", "cwd": str(cwd), "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
        p = subprocess.run(attempt_cmd() + ["capture", "claude-code", "--db", db], input=json.dumps(payload).encode(),
                           env=env, capture_output=True, timeout=120)
        assert p.returncode == 0 and not p.stderr, p
    return db, env


@pytest.mark.parametrize("columns", ["80", "40"])
def test_status_follows_columns_and_counts_wide_characters_as_two(wide_names_db, columns):
    db, env = wide_names_db
    out = _run(["status"], dict(env, COLUMNS=columns))
    width = int(columns)
    long = [line for line in out.splitlines() if termtable.cols(line) > width and db not in line]  # a path whole
    assert not long, long
    assert "日本" in out and "…" in out and "short" in out


def test_status_on_a_terminal_fits_it(wide_names_db):
    db, env = wide_names_db
    env = {k: v for k, v in env.items() if k != "COLUMNS"}
    code, _, seen = attempt_on_pty(["status"], env=env, stdout_too=True, timeout=120)  # a new pty has no size: 80
    assert code == 0, seen
    lines = seen.decode().replace("\r\n", "\n").splitlines()
    assert "日本" in seen.decode()
    assert lines and all(termtable.cols(line) <= 80 for line in lines if db not in line), lines


def test_del_is_escaped_though_it_is_ascii():
    """DEL (U+007F) is one of the characters the rule writes as an escape, in text that is
    otherwise ASCII too (a shortcut for ASCII text passed it through raw)."""
    from attemptdb.readers import mcp_server
    from attemptdb.render import jsonterm
    assert jsonterm.escaped('{"a":"x\x7fy"}') == '{"a":"x\\u007fy"}'
    assert mcp_server.terminal_safe_json({"a": "x\x7f"}) == '{"a":"x\\u007f"}'
