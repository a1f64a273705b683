"""Statements and options a fuzzing pass found mishandled: each gets its coded error (never
`error[internal]`, never a verdict on the file), and the machine formats print every value whole."""

import json
import os
import subprocess

import pytest
from conftest import ROOT, attempt_cmd
from test_attemptql_scenario import NOW, build, open_readonly

from attemptdb.query import execute
from attemptdb.query.errors import AQLError
from attemptdb.store.database import Store

pytestmark = pytest.mark.usefixtures("private_grammar_cache")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("hostile") / "scenario.db")
    build(path)
    return path


@pytest.fixture(scope="module")
def aql(scenario):
    conn, gate = open_readonly(scenario)
    yield conn, gate
    conn.close()


def fails(aql, text) -> AQLError:
    conn, gate = aql
    with pytest.raises(AQLError) as e:
        execute.run(conn, text, gate=gate, now_us=NOW)
    return e.value


def attempt(path, *args):
    env = dict(os.environ, ATTEMPTDB_PATH=path, PYTHONPATH=ROOT)
    p = subprocess.run(attempt_cmd() + list(args), capture_output=True, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("depth", ["9e999", "-9e999"])
def test_an_infinite_trace_depth_is_a_bad_depth(aql, depth):
    assert fails(aql, f"SELECT * FROM attempt_trace('att_01a03f10', {depth})").code == "AQL0410"


@pytest.mark.parametrize("sql", ["SELECT char(55296)", "SELECT CAST(x'ff' AS TEXT)",
                                 "SELECT * FROM evidence(char(55296))"])
def test_text_a_statement_makes_that_is_not_utf8_is_its_error_not_the_file_s(aql, scenario, home, sql):
    e = fails(aql, sql)
    assert e.code == "AQL0505" and "not valid UTF-8" in e.message
    code, out, err = attempt(scenario, "query", sql)
    assert (code, out) == (2, b"") and err.startswith("error[AQL0505]") and "Traceback" not in err


@pytest.mark.parametrize("tail", ["; DELETE FROM events", " x", "; SELECT 1"])
def test_show_tables_takes_nothing_after_it(aql, tail):
    e = fails(aql, "SHOW TABLES" + tail)
    assert e.code == "AQL0204"
    conn, gate = aql
    assert execute.run(conn, "show tables ;  -- fine", gate=gate).rows  # trivia is not a statement


def test_a_bad_json_path_error_does_not_echo_the_value(aql):
    e = fails(aql, "SELECT json_extract('{}', 'x' || session_id) FROM sessions LIMIT 1")
    assert e.code == "AQL0505" and "bad JSON path" in e.message
    conn, _ = aql
    ids = [r[0] for r in conn.execute("SELECT session_id FROM sessions")]
    assert ids and not any(i in e.message for i in ids)


@pytest.mark.parametrize("args", [("status", "--since", "-999999999w"), ("events", "--until", "-999999999w"),
                                  ("timeline", "--since", "-999999999w"), ("failures", "--since", "-999999999w")])
def test_a_relative_time_before_year_one_is_a_usage_error(db, args):
    Store.open(db).close()
    code, out, err = attempt(db, *args)
    assert code == 2 and "internal" not in err and "Traceback" not in err, err


def test_json_rows_keep_every_column_and_stay_json(scenario, home):
    code, out, err = attempt(scenario, "query", "--json", "SELECT 1e999 AS a, -1e999 AS b, 1 AS c, 2 AS c, 3 AS c")
    assert code == 0, err
    assert json.loads(out) == [{"a": "inf", "b": "-inf", "c": 1, "c:1": 2, "c:2": 3}]  # json.loads: no Infinity


def test_csv_through_a_pipe_keeps_escape_characters(scenario, home):
    code, out, err = attempt(scenario, "query", "--csv", "SELECT char(27) || '[31mRED' || char(27) || '[0m' AS e")
    assert code == 0, err
    assert out == b"e\r\n\x1b[31mRED\x1b[0m\r\n"


def test_a_result_larger_than_the_memory_the_process_may_have_is_a_limit_error(scenario, home):
    import resource

    def cap():  # 800 MB of address space: the interpreter and its libraries fit, 2 GB of rows do not
        resource.setrlimit(resource.RLIMIT_AS, (800 << 20, 800 << 20))

    env = dict(os.environ, ATTEMPTDB_PATH=scenario, PYTHONPATH=ROOT)
    p = subprocess.run(attempt_cmd() + ["query", "--csv", "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                                        "FROM r LIMIT 2000000) SELECT x, printf('%.1000c', 'a') AS pad FROM r"],
                       capture_output=True, env=env, timeout=120, preexec_fn=cap)
    err = p.stderr.decode()
    assert p.returncode == 1 and err.startswith("error[AQL0502]") and p.stdout == b"", err
