"""`attempt query`, `why`, `trace`, `handoffs`, `status`, `schema` as a user runs them."""

import csv
import io
import json

import pytest
from conftest import run_attempt
from test_attemptql_scenario import A1, A2, A3, S1, S2, S3, build  # noqa: F401

from attemptdb.model import ids


@pytest.fixture(scope="module")
def scen(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cli") / "scenario.db")
    build(path)
    return path


def attempt(args, db, **kw):
    p = run_attempt(list(args) + ["--db", db], **kw)
    assert b"Traceback" not in p.stderr, p.stderr.decode()
    return p


def test_query_table_collapses_evidence_to_counts(scen, home):
    p = attempt(["query", "SHOW FAILED ATTEMPTS"], scen, env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["attempt_id", "outcome", "failure_class"]
    assert "uncertainty" in lines[0] and len(lines[2].split()[0]) == len("att_") + 36  # wide enough: all whole
    assert "1 event" in out and "ev_" not in out
    assert "(2 rows)" in out and "note: 1 retracted row(s) hidden" in out
    p = attempt(["query", "SHOW FAILED ATTEMPTS", "--evidence"], scen)
    assert "ev_" in p.stdout.decode()


def test_query_json_prints_rows_as_objects(scen, home):
    p = attempt(["query", "SHOW EVIDENCE FOR " + A1, "--json"], scen)
    rows = json.loads(p.stdout)
    assert [r["kind"] for r in rows] == ["prompt_submitted", "tool_call_failed"]
    assert rows[0]["evidence"] == [rows[0]["event_id"]]
    assert rows[0]["uncertainty"]["reason"] == "deterministic"
    p = attempt(["query", "SELECT count(*) AS n FROM attempts", "--json"], scen)
    assert json.loads(p.stdout) == [{"n": 8}]


def test_query_csv(scen, home):
    p = attempt(["query", "SHOW HANDOFFS", "--csv"], scen)
    rows = list(csv.reader(io.StringIO(p.stdout.decode())))
    assert rows[0][:2] == ["from_session", "to_session"] and rows[1][0] == S3
    assert json.loads(rows[1][rows[0].index("uncertainty")])["reason"] == "heuristic"


def test_query_explain_flag(scen, home):
    p = attempt(["query", "SHOW FAILED ATTEMPTS", "--explain"], scen)
    out = p.stdout.decode()
    assert p.returncode == 0 and "sql" in out and "plan" in out and "indexes" in out


def test_query_errors_are_rendered_with_code_and_caret(scen, home):
    p = attempt(["query", "WHAT IS project 'acme/widget' NOW"], scen)
    assert p.returncode == 2
    err = p.stderr.decode().splitlines()
    assert err[0] == "error[AQL0102]: expected DOING after subject"
    assert err[1] == "  --> query:1:31"
    assert err[4].endswith("^^^ expected 'DOING'")


def test_an_error_in_a_statement_a_command_built_says_so(scen, home):
    """`attempt why` / `trace` write an AttemptQL statement for the user: an error pointing into
    it names the command, not a `query` the user never typed."""
    for args, cmd in ((["why", "att_"], "attempt why"), (["trace", "att_"], "attempt trace")):
        p = attempt(args, scen)
        err = p.stderr.decode().splitlines()
        assert p.returncode == 2 and err[0].startswith("error[AQL0105]")
        assert err[1] == f"  --> the statement `{cmd}` ran:1:{err[1].rsplit(':', 1)[1]}"
    p = attempt(["query", "WHY attempt 'att_' STATUS FAILED"], scen)
    assert p.stderr.decode().splitlines()[1] == "  --> query:1:5"


def test_read_commands_take_the_session_name_attempt_run_gave(home, tmp_path):
    """`attempt run --session ci-9` names a session (spec/evidence.md): the read commands and
    AttemptQL find it by that name too, not only by its ses_ id."""
    db = str(tmp_path / "named.db")
    assert run_attempt(["run", "--session", "ci-9", "--db", db, "--", "true"]).returncode == 0
    assert run_attempt(["run", "--session", "ci_10", "--db", db, "--", "false"]).returncode == 1
    sid = "ses_" + ids.session_id("attempt", "ci-9")
    p = attempt(["why", "--session", "ci-9", "--json"], db)
    assert p.returncode == 0 and json.loads(p.stdout)[0]["subject_id"] == sid
    p = attempt(["events", "--session", "ci-9", "--json"], db)
    rows = json.loads(p.stdout)
    assert p.returncode == 0 and rows and {r["session_id"] for r in rows} == {sid}
    p = attempt(["events", "--session", "ci_10", "--json"], db)  # a name with an underscore
    assert p.returncode == 0 and {r["session_id"] for r in json.loads(p.stdout)} == {"ses_" + ids.session_id("attempt", "ci_10")}
    p = attempt(["query", "SHOW ATTEMPTS FOR session = 'ci-9'", "--json"], db)
    assert p.returncode == 0 and {r["session_id"] for r in json.loads(p.stdout)} == {sid}
    p = attempt(["why", "--session", "nope"], db)  # no such name: the error says names are taken
    assert p.returncode == 2 and b"no session named 'nope'" in p.stderr  # a name no session has, said so


def test_two_result_columns_of_one_name_each_show_their_own_value(scen, home):
    """`SELECT a.confidence, s.confidence …`: the table looked columns up by name, so the second
    showed the first one's value (--json and --csv were right)."""
    p = attempt(["query", "SELECT 1 AS a, 2 AS a, 3 AS b"], scen)
    assert p.returncode == 0 and p.stdout.decode().splitlines()[2].split() == ["1", "2", "3"]
    p = attempt(["query", "SELECT a.attempt_id, a.confidence, s.confidence FROM attempts a "
                          "JOIN sessions s USING (session_id) ORDER BY 1", "--csv"], scen)
    want = [[float(x) for x in r[1:]] for r in list(csv.reader(io.StringIO(p.stdout.decode())))[1:]]
    p = attempt(["query", "SELECT a.attempt_id, a.confidence, s.confidence FROM attempts a "
                          "JOIN sessions s USING (session_id) ORDER BY 1"], scen, env={"COLUMNS": "200"})
    got = [[float(x) for x in ln.split()[1:]] for ln in p.stdout.decode().splitlines()[2:2 + len(want)]]
    assert got == want and any(a != b for a, b in want)  # the two columns differ somewhere


def test_show_tables_lists_the_catalog_and_counts_the_internal_state(home, tmp_path):
    """A real file holds ~90 tables and views; SHOW TABLES lists the catalog's (the query surface,
    each with its catalog layer) and says how many internal ones it leaves out; DESCRIBE of an
    unknown name names only the catalog's; an internal table still describes itself."""
    from attemptdb.projections import catalog
    from attemptdb.store.database import Store
    db = str(tmp_path / "real.db")
    Store.open(db).close()
    p = attempt(["query", "SHOW TABLES", "--json"], db)
    rows = json.loads(p.stdout)
    documented = {t["name"]: t["layer"] for t in catalog.load_docs()["tables"]}
    assert p.returncode == 0 and {r["table"]: r["layer"] for r in rows} == documented
    assert "internal tables and views" in p.stderr.decode() and "session_facts" not in p.stdout.decode()
    p = attempt(["query", "DESCRIBE nope"], db)
    assert p.returncode == 2 and b"attempts" in p.stderr and b"session_facts" not in p.stderr
    assert attempt(["query", "DESCRIBE session_facts"], db).returncode == 0


def test_an_sql_error_points_where_sqlite_says(scen, home):
    """An SQL error (AQL0505) had no location; SQLite names the offset of what it could not read,
    and the caret now sits under it (only in the text the user typed: not in a rewritten one)."""
    p = attempt(["query", "SELECT nosuch FROM attempts"], scen)
    err = p.stderr.decode().splitlines()
    assert p.returncode == 2 and err[0] == "error[AQL0505]: SQLite: no such column: nosuch"
    assert err[1] == "  --> query:1:8" and err[4].endswith("^^^^^^ here")
    p = attempt(["query", "SELECT nosuch FROM attempts", "--json"], scen)
    assert p.returncode == 2 and b"AQL0505" in p.stderr


def test_why_trace_handoffs(scen, home):
    p = attempt(["why", A3, "--json"], scen)
    rows = json.loads(p.stdout)
    assert rows[0]["subject_id"] == A3 and rows[0]["edge_type"] == "failed"
    p = attempt(["why", S2[:12]], scen)
    assert p.returncode == 0 and "blocked" in p.stdout.decode()
    p = attempt(["why", "--project", "acme/widget", "--json"], scen)
    rows = json.loads(p.stdout)  # the scenario lies in the past: nothing is open now
    assert [r["uncertainty"]["reason"] for r in rows] == ["insufficient_evidence"]
    assert "last event was observed at" in rows[0]["claim"]
    p = attempt(["trace", A2, "--depth", "1", "--json"], scen)
    rows = json.loads(p.stdout)
    assert rows[0]["from_id"] == A1 and rows[-1]["uncertainty"]["reason"] == "depth_limit"
    p = attempt(["handoffs", "--json"], scen)
    assert json.loads(p.stdout)[0]["to_session"] == S1
    p = attempt(["handoffs", "--between", "codex", "cursor"], scen)
    assert p.returncode == 0 and "no handoffs detected" in p.stdout.decode()
    p = attempt(["handoffs", "--project", "nowhere"], scen)
    assert p.returncode == 2 and b"AQL0303" in p.stderr


def test_status(scen, home):
    p = attempt(["status", "--json"], scen)
    rep = json.loads(p.stdout)
    assert rep["events"] == 13 and rep["sessions"] == 4
    assert {x["provider"] for x in rep["providers"]} == {"claude_code", "codex", "cursor", "gemini_cli"}
    p = attempt(["status", "--project", "other", "--json"], scen)
    assert json.loads(p.stdout)["sessions"] == 1
    p = attempt(["status"], scen)
    assert p.returncode == 0 and "capture mode" in p.stdout.decode()


def test_missing_database_is_a_coded_error(home, tmp_path):
    p = run_attempt(["query", "SHOW SESSIONS", "--db", str(tmp_path / "nope.db")])
    assert p.returncode == 2 and b"error[store.missing]" in p.stderr


def test_every_command_has_help(home):
    for cmd in ("query", "why", "trace", "handoffs", "status", "schema", "needs-you"):
        p = run_attempt([cmd, "--help"])
        assert p.returncode == 0 and b"Usage:" in p.stdout, cmd


def test_read_commands_sign_a_due_checkpoint_first(tmp_path, home):
    """A read ingests the spool and signs the grown head before it reads (spec/checkpoint.md):
    the read-only connection itself is what the check is given (a (connection, gate) pair made
    the check fail silently, so a grown chain stayed unsigned)."""
    from attemptdb.devtools import synth
    from attemptdb.integrity import checkpoint
    from attemptdb.store.database import Store
    db = str(tmp_path / "c.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    for args in (["query", "SELECT 1", "--json"], ["needs-you", "--json"], ["status", "--json"]):
        st = Store.open(db)
        st.append(list(synth.generate(5, seed=len(args[0]))))
        assert checkpoint.due(st.conn)
        st.close()
        p = attempt(args, db)
        assert p.returncode == 0, p.stderr.decode()
        st = Store.open(db)
        assert not checkpoint.due(st.conn), args
        st.close()


def test_a_missing_database_is_named_before_the_statement_is_judged(home, tmp_path):
    """The file opens while the statement is parsed (cli/reads.opening): which error comes first
    stays as it was: a missing file, then the statement."""
    p = run_attempt(["query", "SHOW FAILD ATTEMPTS", "--db", str(tmp_path / "nope.db")])
    assert p.returncode == 2 and b"error[store.missing]" in p.stderr and b"AQL" not in p.stderr
