"""`attempt mcp`: the MCP server as an agent meets it (the SDK's own stdio client talking to a
real `attempt mcp` process over a scenario database), and its parts: bounded answers, the
content wall, coded refusals."""

import configparser
import json
import os
import sys

import anyio
import pytest
import scenario_db
from conftest import ROOT, attempt_cmd, run_attempt

from attemptdb.readers import bounded, mcp_server

pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")


CONTENT = {"statement": "SELECT objective FROM turns WHERE objective IS NOT NULL"}


@pytest.fixture(scope="module")
def scen(tmp_path_factory):
    """Happening now: a pending permission request, a repeated failure, a collision."""
    path = str(tmp_path_factory.mktemp("mcp") / "attempt.db")
    built = scenario_db.build(path, "units_needs_you")
    return path, built[0]


@pytest.fixture(scope="module")
def notes_db(tmp_path_factory):
    """Prompts, a correction note and a retraction note: content in every hidden column."""
    path = str(tmp_path_factory.mktemp("mcp-notes") / "attempt.db")
    scenario_db.build(path, "corrections", "retractions_and_late_events", "units_needs_you")
    return path


def _env(home):
    """The server's environment: the test's home and XDG directories (the `home` fixture's)."""
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPATH": ROOT, "ATTEMPTDB_NO_DAEMON": "1"}


async def _session(db, home, calls, *, extra_args=()):
    """Start `attempt mcp` with the SDK's stdio client; list the tools, then make `calls`."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    cmd = attempt_cmd()
    params = StdioServerParameters(command=cmd[0], args=cmd[1:] + ["mcp", "--db", db, *extra_args], env=_env(home))
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def talk(db, home, calls, **kw):
    return anyio.run(lambda: _session(db, home, calls, **kw))


def test_an_agent_lists_the_tools_reads_failures_with_evidence_and_cannot_delete(scen, home):
    db, built = scen
    before = scenario_db.file_hashes(db)
    tools, (failed, delete, two, huge, where, hidden) = talk(db, home, [
        ("query", {"statement": "SHOW FAILED ATTEMPTS"}),
        ("query", {"statement": "DELETE FROM events"}),
        ("query", {"statement": "SELECT 1; DELETE FROM events"}),
        ("query", {"statement": "SELECT '" + "x" * bounded.MAX_STATEMENT_CHARS + "'"}),
        ("query", {"statement": "WITH x AS (SELECT 1) DELETE FROM events"}),
        ("query", CONTENT),
    ])
    assert sorted(t.name for t in tools.tools) == sorted(
        ["query", "schema", "needs_you", "timeline", "why", "trace", "evidence"])
    assert all(t.annotations.read_only_hint for t in tools.tools)

    assert not failed.is_error
    rows = failed.structured_content["rows"]
    cli = json.loads(run_attempt(["query", "SHOW FAILED ATTEMPTS", "--json", "--db", db]).stdout)
    assert [r["attempt_id"] for r in rows] == [r["attempt_id"] for r in cli] and len(rows) == 2
    for r in rows:
        assert r["outcome"] == "failed" and r["evidence"] and all(e.startswith("ev_") for e in r["evidence"])
        assert 0 < r["uncertainty"]["confidence"] <= 1 and r["uncertainty"]["reason"]
    # the failures are the scenario's two test runs: their failure events are among the evidence
    assert {built.expand("{ev:f_t1e}"), built.expand("{ev:f_t2e}")} <= {e for r in rows for e in r["evidence"]}
    assert failed.structured_content["truncated"] is False and failed.structured_content["total"] == 2

    for res, code in ((delete, "AQL0506"), (two, "AQL0204"), (huge, "AQL0208"), (where, "AQL0506")):
        assert res.is_error, code
        assert res.structured_content["error"]["code"] == code
        assert res.content[0].text.startswith(f"error[{code}]: ")
    # content reads as null without --include-content
    assert hidden.structured_content["rows"] == [] and hidden.structured_content["content_included"] is False
    assert scenario_db.file_hashes(db) == before
    assert json.loads(run_attempt(["query", "SELECT count(*) AS n FROM events", "--json", "--db", db]).stdout) \
        == [{"n": len(built.events)}]


def test_every_tool_answers_over_stdio_and_refusals_never_end_the_session(scen, home):
    db, built = scen
    att = built.expand("{att:f_t2e}")
    gate_session = built.expand("{ses:claude_code:ny-g1}")
    calls = [("needs_you", {}), ("timeline", {"session": gate_session}), ("why", {"subject": att}),
             ("trace", {"subject": att, "depth": 2}), ("evidence", {"subject": att}), ("schema", {"table": "needs_you"}),
             ("why", {"subject": "att_deadbeef"}), ("timeline", {"session": "x", "project": "y"}),
             ("nosuch", {}), ("query", {"statement": 42}), ("trace", {"subject": att, "depth": 0}),
             ("query", {"statement": "SELECT count(*) AS n FROM events"})]
    _, res = talk(db, home, calls)
    ny, timeline, why, trace, evidence, schema, unknown, both, notool, notext, depth, still = res
    kinds = [r["kind"] for r in ny.structured_content["rows"]]
    assert kinds == ["permission_gate", "repeated_failure", "work_conflict"]
    gate = ny.structured_content["rows"][0]
    assert gate["session_id"] == gate_session and gate["evidence"] == [built.expand("{ev:g_req}")]
    assert gate["confidence"] > 0
    turns = timeline.structured_content["rows"]
    assert [t["session_id"] for t in turns] == [gate_session] and turns[0]["attempts"]
    assert turns[0]["evidence"] and turns[0]["uncertainty"]["confidence"]
    assert why.structured_content["rows"] and all(r["evidence"] for r in why.structured_content["rows"])
    assert trace.structured_content["rows"] and all(r["depth"] <= 2 for r in trace.structured_content["rows"])
    assert [r["event_id"] for r in evidence.structured_content["rows"]][-1] == built.expand("{ev:f_t2e}")
    assert schema.structured_content["catalog"]["tables"][0]["name"] == "needs_you"
    for r, code in ((unknown, "AQL0301"), (both, "mcp.bad_arguments"), (notool, "mcp.unknown_tool"),
                    (notext, "mcp.bad_arguments"), (depth, "mcp.bad_arguments")):
        assert r.is_error and r.structured_content["error"]["code"] == code, (code, r.structured_content)
    assert not still.is_error and still.structured_content["rows"] == [{"n": len(built.events)}]


def test_content_is_shown_when_the_server_is_started_with_include_content(scen, home):
    db, _ = scen
    _, (shown,) = talk(db, home, [("query", CONTENT)], extra_args=["--include-content"])
    assert shown.structured_content["content_included"] is True
    assert "Clean the build folder" in {r["objective"] for r in shown.structured_content["rows"]}


def test_events_waiting_in_the_spool_are_read(tmp_path, home):
    """`attempt mcp` hands the spool to the store before it reads, as `attempt query` does."""
    from attemptdb.capture import spool
    db = str(tmp_path / "attempt.db")
    built = scenario_db.build(db, "units_needs_you")[0]
    spool.put(db, scenario_db.hook_event(built, project="gate", session="ny-g1", payload=scenario_db.ANSWER_GATE))
    _, (ny,) = talk(db, home, [("needs_you", {})])
    assert [r["kind"] for r in ny.structured_content["rows"]] == ["repeated_failure", "work_conflict"]
    assert not spool.pending(db)


# --- the parts -----------------------------------------------------------------------------------

CONTENT_READS = [
    "SELECT content_json FROM events WHERE content_json IS NOT NULL",
    "SELECT raw_json AS x FROM events WHERE x IS NOT NULL",
    "SELECT length(content_json) AS n FROM events WHERE n > 0",
    "SELECT turn_id FROM turns WHERE objective LIKE '%suite%'",
    "SELECT objective FROM attempts WHERE objective IS NOT NULL",
    "SELECT objective FROM work_units WHERE objective IS NOT NULL",
    "SELECT note FROM corrections WHERE note IS NOT NULL",
    "SELECT note FROM retractions WHERE note IS NOT NULL",
    "SELECT json_extract(e.content_json, '$.prompt') AS p FROM events e WHERE p IS NOT NULL",
    "SHOW ATTEMPTS WHERE objective IS NOT NULL",
]


@pytest.mark.parametrize("statement", CONTENT_READS)
def test_the_content_wall_holds_whatever_form_the_read_takes(notes_db, home, statement):
    with_content = mcp_server.Reader(notes_db, include_content=True).call("query", {"statement": statement})
    without = mcp_server.Reader(notes_db).call("query", {"statement": statement})
    assert with_content["rows"], "the scenario holds content here, so the statement must find some"
    assert without["rows"] == []


def test_every_exported_content_column_reads_null_behind_the_wall(notes_db, home):
    """The export's list of content columns (kept in step with the catalog) and the wall agree."""
    from attemptdb.exchange.arrow_export import CONTENT_COLUMNS
    reader = mcp_server.Reader(notes_db)
    for table, cols in CONTENT_COLUMNS.items():
        for col in cols:
            got = reader.call("query", {"statement": f"SELECT count(*) AS n FROM {table} WHERE {col} IS NOT NULL"})
            assert got["rows"] == [{"n": 0}], (table, col)


def test_a_withheld_note_reads_as_content_unavailable(notes_db, home):
    """What spec/readers.md says: a correction whose text is withheld reads as if it had not
    been stored (metadata_only), never as applied with an empty text."""
    stmt = {"statement": "SELECT event_id, status FROM corrections WHERE correction_type = 'turn_objective'"}
    shown = mcp_server.Reader(notes_db, include_content=True).call("query", stmt)["rows"]
    hidden = mcp_server.Reader(notes_db).call("query", stmt)["rows"]
    assert [r["status"] for r in shown] == ["applied"] and [r["status"] for r in hidden] == ["content_unavailable"]


def test_metadata_and_evidence_stay_readable_behind_the_wall(scen, home):
    db, built = scen
    r = mcp_server.Reader(db)
    turns = r.call("query", {"statement": "SELECT prompt_chars, evidence FROM turns WHERE prompt_chars > 0"})
    assert turns["rows"] and all(t["evidence"] for t in turns["rows"])
    assert r.call("evidence", {"subject": built.expand("{att:f_t2e}")})["rows"]


def test_answers_are_bounded(scen, home):
    db, _ = scen
    conn_reader = mcp_server.Reader(db)
    many = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) SELECT x FROM c"
    big = conn_reader.call("query", {"statement": many.format(n=100_000)})
    assert big["row_count"] == bounded.MAX_ROWS and big["truncated"] and big["total"] is None
    assert [r["x"] for r in big["rows"][:3]] == [1, 2, 3]
    small = conn_reader.call("query", {"statement": many.format(n=150) + ";  -- done"})
    assert small["row_count"] == 150 and not small["truncated"] and small["total"] == 150
    conn_reader._open()
    aql = bounded.run(conn_reader.conn, "SHOW ATTEMPTS", gate=conn_reader.gate, max_rows=2)
    assert aql["row_count"] == 2 and aql["truncated"] and aql["total"] > 2


def test_a_sqlite_error_names_the_statement_as_written(scen, home):
    db, _ = scen
    with pytest.raises(Exception) as e:
        mcp_server.Reader(db).call("query", {"statement": "SELECT nosuch FROM attempts"})
    payload = mcp_server.error_payload(e.value)
    assert payload["code"] == "AQL0505" and "nosuch" in payload["message"] and "LIMIT" not in payload["message"]


def test_query_refuses_a_missing_or_non_string_statement_as_the_other_tools_refuse_their_arguments(scen, home):
    """`query` with no `statement`, or one that is no string, is mcp.bad_arguments naming the
    argument, as `why` and `trace` answer the same mistake; an empty or blank statement is the
    engine's AQL0203, what `attempt query ""` says."""
    db, _ = scen
    r = mcp_server.Reader(db)
    for args, says in (({}, "`statement` is required"), ({"statement": None}, "`statement` is required"),
                       ({"statement": 5}, "`statement` must be a string"),
                       ({"statement": ["SELECT 1"]}, "`statement` must be a string")):
        with pytest.raises(mcp_server.BadArguments) as e:
            r.call("query", args)
        payload = mcp_server.error_payload(e.value)
        assert payload["code"] == "mcp.bad_arguments" and payload["message"].startswith(says), (args, payload)
    for tool in ("why", "trace"):  # the same mistake, the same code
        with pytest.raises(mcp_server.BadArguments) as e:
            r.call(tool, {})
        assert "`subject`" in e.value.message
    cli = run_attempt(["query", "--db", db, ""], env=_env(home))
    assert cli.returncode == 2 and b"error[AQL0203]: empty statement" in cli.stderr
    for blank in ("", "   "):
        with pytest.raises(Exception) as e:
            r.call("query", {"statement": blank})
        payload = mcp_server.error_payload(e.value)
        assert payload["code"] == "AQL0203" and payload["message"].startswith("empty statement"), payload
    r.close()


def test_a_missing_database_is_a_coded_error_of_the_call(tmp_path, home):
    r = mcp_server.Reader(str(tmp_path / "nothing.db"))
    with pytest.raises(Exception) as e:
        r.call("needs_you", {})
    assert mcp_server.error_payload(e.value)["code"] == "store.missing"
    assert not (tmp_path / "nothing.db").exists()


def test_without_the_sdk_a_coded_error_says_how_to_install_it(tmp_path, home):
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from attemptdb.cli.main import run\n"
            f"sys.exit(run(['mcp', '--db', {str(tmp_path / 'x.db')!r}]))")
    import subprocess
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 2 and "error[mcp.needs_mcp]" in p.stderr and mcp_server.INSTALL_MCP in p.stderr


def test_the_install_hint_names_the_mcp_extra_of_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    extra = [line.split(">")[0].split("=")[0].strip()
             for line in cfg["options.extras_require"]["mcp"].splitlines() if line.strip()]
    assert tuple(extra) == mcp_server.MCP_EXTRA
    assert "mcp>=2" in cfg["options.extras_require"]["test"]


def test_an_unknown_table_of_the_schema_tool_suggests_one_and_lists_them_as_choices(scen, home):
    """The schema tool's AQL0307 as the engine's DESCRIBE says it: the nearest table first, the
    tables as `choices` (the message keeps them whole, for a client that shows only it)."""
    db, _ = scen
    r = mcp_server.Reader(db)
    try:
        with pytest.raises(Exception) as e:
            r.call("schema", {"table": "attempt"})
        payload = mcp_server.error_payload(e.value)
    finally:
        r.close()
    assert payload["code"] == "AQL0307" and "did you mean `attempts`?" in payload["message"], payload
    assert "attempts" in payload["choices"] and "sessions" in payload["choices"], payload
