"""Names and cells read from a database file are hostile input: a table or column named with
a `"` (an innocent one, or `t"); UPDATE …` built to close the quote and run a statement) is
one odd name to every command that reads the schema, never SQL it runs (apsw runs every
statement of a string); and every cell of the `needs_you` view reaches the terminal through
the one escaping rule (errors.printable), with a warning when the view is not ours."""

import sqlite3

import pytest
from conftest import run_attempt

INJECTED = "t\"); UPDATE meta SET value='full_sync' WHERE key='capture_mode'; --"


def _quoted(name):
    return '"' + name.replace('"', '""') + '"'


def _sql(path, script):
    c = sqlite3.connect(path)
    try:
        c.executescript(script)
    finally:
        c.close()


def _capture_mode(path):
    c = sqlite3.connect(path)
    try:
        return c.execute("SELECT value FROM meta WHERE key = 'capture_mode'").fetchone()[0]
    finally:
        c.close()


def _init(tmp_path, name="attempt.db"):
    path = str(tmp_path / name)
    r = run_attempt(["init", "--db", path, "--capture-mode", "metadata_only"])
    assert r.returncode == 0, r.stderr
    assert _capture_mode(path) == "metadata_only"
    return path


def _commands(tmp_path, path):
    return {"export --dataset": ["export", "--dataset", str(tmp_path / "ds"), "--db", path],
            "export DIR": ["export", str(tmp_path / "out"), "--db", path],
            "schema": ["schema", "--db", path], "verify": ["verify", "--db", path],
            "status": ["status", "--db", path]}


COMMANDS = ("export --dataset", "export DIR", "schema", "verify", "status")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_table_name_that_closes_its_quote_runs_no_statement(home, tmp_path, command):
    path = _init(tmp_path)
    _sql(path, f"CREATE TABLE {_quoted(INJECTED)}(a);")
    r = run_attempt(_commands(tmp_path, path)[command])
    err = r.stderr.decode("utf-8", "replace")
    assert "error[internal]" not in err, err
    assert r.returncode == 0, err
    assert _capture_mode(path) == "metadata_only"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_table_named_with_a_quote_is_left_alone(home, tmp_path, command):
    path = _init(tmp_path)
    _sql(path, 'CREATE TABLE "a""b"(x); INSERT INTO "a""b" VALUES (1);')
    r = run_attempt(_commands(tmp_path, path)[command])
    err = r.stderr.decode("utf-8", "replace")
    assert "error[internal]" not in err, err
    assert r.returncode == 0, err
    assert 'a"b' not in r.stdout.decode("utf-8", "replace")  # not a public table: never listed


def test_a_column_named_with_a_quote_is_listed_and_exported(home, tmp_path):
    """A column added to a public table (the schema check of a dataset export refuses such a
    file; `schema` and `export DIR` read it): one more undocumented column, its name as is."""
    path = _init(tmp_path)
    _sql(path, 'ALTER TABLE events ADD COLUMN "y""z" TEXT;')
    r = run_attempt(["schema", "events", "--db", path])
    assert r.returncode == 0 and b'y"z' in r.stdout, r.stderr
    r = run_attempt(["export", str(tmp_path / "out"), "--db", path])
    assert b"error[internal]" not in r.stderr and r.returncode == 0, r.stderr
    assert _capture_mode(path) == "metadata_only"


FORGED = ("DROP VIEW needs_you; CREATE VIEW needs_you AS SELECT 'permission_gate' kind, 1 rank, "
          "'ses_' || char(27) || ']0;PWNED' || char(7) session_id, 'wu_' || char(27) || '[2J' work_unit_id, "
          "'claude_code' provider, 'evil' project_name, '2026-12-07T22:00:00.000000Z' since, 0.99 confidence, "
          "'FORGED ses_' || char(27) || ']0;X' || char(7) reason, '[\"ev_\\u001b[31m\"]' evidence;")  # JSON's escape: the list parses, its id holds ESC


@pytest.mark.parametrize("flags", [[], ["--evidence"]])
def test_needs_you_prints_no_control_byte_of_a_forged_view(home, tmp_path, flags):
    path = _init(tmp_path)
    _sql(path, FORGED)
    r = run_attempt(["needs-you", "--db", path] + flags, env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert b"FORGED" in r.stdout
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout, r.stdout
    assert b"\x1b" not in r.stderr and b"\x07" not in r.stderr, r.stderr
    assert b"view needs_you is not what" in r.stderr, r.stderr


def test_needs_you_of_a_forged_view_warns_with_json_too(home, tmp_path):
    path = _init(tmp_path)
    _sql(path, FORGED)
    r = run_attempt(["needs-you", "--db", path, "--json"])
    assert r.returncode == 0, r.stderr
    assert b"\x1b" not in r.stdout  # JSON escapes it
    assert b"view needs_you is not what" in r.stderr, r.stderr


def test_needs_you_of_a_view_of_any_shape_does_not_crash(home, tmp_path):
    """Cells a forged view fills with what our view never holds (text for numbers and times,
    a JSON number for the evidence list) are shown as text, never an internal error."""
    path = _init(tmp_path)
    _sql(path, "DROP VIEW needs_you; CREATE VIEW needs_you AS SELECT 'k' || char(27) kind, "
               "'r' || char(27) || '[2J' rank, 1 session_id, char(27) work_unit_id, NULL provider, "
               "'evil' project_name, 'nope' || char(27) since, 'c' || char(27) confidence, 'FORGED' reason, "
               "'5' evidence;")
    r = run_attempt(["needs-you", "--db", path, "--evidence"], env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert b"FORGED" in r.stdout and b"\x1b" not in r.stdout, r.stdout
    assert b"error[internal]" not in r.stderr


def test_needs_you_of_our_own_view_warns_nothing(home, tmp_path):
    path = _init(tmp_path)
    r = run_attempt(["needs-you", "--db", path])
    assert r.returncode == 0, r.stderr
    assert b"warning" not in r.stderr, r.stderr


def test_the_needs_you_check_reads_the_view_text_this_version_installs(home, tmp_path):
    """changed_needs_you compares the stored text with sql/'s without building a schema: on a
    file this version builds it finds nothing, on an edited view it finds the change."""
    from attemptdb.cli import reads
    from attemptdb.store.readonly import connect
    path = _init(tmp_path)
    conn, _ = connect(path)
    try:
        assert reads.changed_needs_you(conn) is None
    finally:
        conn.close()
    _sql(path, FORGED)
    conn, _ = connect(path)
    try:
        assert "view needs_you is not what" in reads.changed_needs_you(conn)
    finally:
        conn.close()
