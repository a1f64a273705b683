"""Hostile stored values through every output of `attempt query`: values a hook payload carries
(a prompt, a command, a model name) are data, whatever they look like.

- CSV never turns a value (or a column name) into a spreadsheet formula: a cell that starts
  with =, +, -, @, tab or CR gets a leading `'` unless it is a plain decimal number
  (spec/export.md); Python's float() accepts more than that (inf, nan, 1_0, spaces).
- A terminal never receives a raw control, C1 or bidi character from a stored value, whatever
  the format: --csv and --json run on a real pseudo-terminal here (a pipe would hide it).
- --json stays the same JSON for a parser: on a terminal the C1 and disguising characters are
  written as \\u escapes, so the parsed values equal the stored ones; through a pipe every
  character is kept (escaping costs a read of a megabyte ~20 ms).
"""

import csv
import io
import json
import os
import subprocess

import pytest
from conftest import ROOT, attempt_cmd, attempt_on_pty

FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "@SUM(1)", "\t=1", "\r=1", "-2+3", "-Infinity", "+inf", "-nan",
            "-1_0", "+1 ", "-1\u00a0", "=HYPERLINK(\"http://x\")"]
NUMBERS = ["-1", "+2", "-1.5", "-1e5", "-.5"]
TERMINAL_HOSTILE = ["esc\x1b[2J\x1b]0;title\x07", "c1\x9b31m\x85", "bidi\u202egnp.exe", "zw\u200bsp", "cr\rX"]
RAW = [b"\x1b", b"\x07", b"\xc2\x9b", b"\xc2\x85", "\u202e".encode(), "\u200b".encode(), b"\rX"]


def _env(db, **extra):
    return dict(os.environ, ATTEMPTDB_PATH=db, PYTHONPATH=ROOT, NO_COLOR="1", COLUMNS="200",
                ATTEMPTDB_NO_DAEMON="1", **extra)


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory):
    """A history whose prompts are the hostile values, written by real Claude Code hooks."""
    d = tmp_path_factory.mktemp("hostile_output")
    home = d / "home"
    home.mkdir()
    db = str(d / "a.db")
    env = _env(db, HOME=str(home), XDG_DATA_HOME=str(home / "share"), XDG_STATE_HOME=str(home / "state"),
               XDG_CONFIG_HOME=str(home / "config"))
    for i, value in enumerate(FORMULAS + NUMBERS + TERMINAL_HOSTILE):
        payload = {"session_id": f"11111111-2222-4333-8444-{i:012d}", "cwd": str(d),
                   "hook_event_name": "UserPromptSubmit", "prompt": value}
        p = subprocess.run(attempt_cmd() + ["capture", "claude-code", "--capture-mode", "full_sync"],
                           input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=120)
        assert p.returncode == 0 and not p.stdout and not p.stderr, p
    return db, env


PROMPTS = ("SELECT json_extract(content_json, '$.prompt') AS prompt FROM events "
           "WHERE kind = 'prompt_submitted' ORDER BY seq")


def _query(hostile_db, *args):
    db, env = hostile_db
    p = subprocess.run(attempt_cmd() + ["query", *args], env=env, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_csv_cells_that_look_like_formulas_are_neutralised(hostile_db):
    rows = list(csv.reader(io.StringIO(_query(hostile_db, "--csv", PROMPTS).decode(), newline="")))
    cells = [r[0] for r in rows[1:]]
    for value in FORMULAS:
        assert "'" + value in cells, (value, cells)
        assert value not in cells
    for value in NUMBERS:  # a number stays a number
        assert value in cells


def test_csv_column_names_that_look_like_formulas_are_neutralised(hostile_db):
    out = _query(hostile_db, "--csv", "SELECT 1 AS \"=cmd|' /C calc'!A0\", 2 AS \"-1\"")
    assert out.split(b"\r\n")[0] == b"'=cmd|' /C calc'!A0,-1"


def _on_pty(hostile_db, *args):
    db, env = hostile_db
    code, _, seen = attempt_on_pty(["query", *args], env=env, stdout_too=True, raw=True, timeout=120)
    assert code == 0, seen
    return seen


@pytest.mark.parametrize("fmt", ["--csv", "--json", None])
def test_no_stored_control_or_bidi_character_reaches_a_terminal(hostile_db, fmt):
    seen = _on_pty(hostile_db, *([fmt] if fmt else []), PROMPTS)
    assert b"esc" in seen and b"bidi" in seen
    rest = seen.replace(b"\r\n", b"\n")  # the CSV's own line ends
    found = [c for c in RAW if c in rest]
    assert not found, (found, seen[-600:])


def test_json_escapes_c1_and_bidi_characters_and_keeps_every_value(hostile_db):
    out = _query(hostile_db, "--json", PROMPTS)  # a pipe: the values as stored
    assert [r["prompt"] for r in json.loads(out)] == FORMULAS + NUMBERS + TERMINAL_HOSTILE
    seen = _on_pty(hostile_db, "--json", PROMPTS)  # a terminal: escaped, the same values
    for raw in RAW[:-1]:
        assert raw not in seen, raw
    assert json.loads(seen) == json.loads(out)


def test_csv_through_a_pipe_keeps_every_character(hostile_db):
    rows = list(csv.reader(io.StringIO(_query(hostile_db, "--csv", PROMPTS).decode(), newline="")))
    assert [r[0] for r in rows[-len(TERMINAL_HOSTILE):]] == TERMINAL_HOSTILE


@pytest.mark.parametrize("stmt", ["STATE project AT '0001-01-01'", "DIFF STATE '0001-01-01' '9999-12-31'",
                                  "DIFF STATE agent claude_code '0001-01-01' '0001-01-02'",
                                  "SELECT count(*) FROM state_at('0001-01-01')"])
def test_a_time_in_year_one_is_a_time_not_an_error(hostile_db, stmt):
    """The statement's times are valid; the 12 h windows before them start before year 1, which
    used to stop the statement with AQL0104 and no position."""
    out = _query(hostile_db, "--json", stmt)
    assert isinstance(json.loads(out), list)
