"""End to end on a real database: synthetic events appended through the ingest path, the
projection migrations maintaining the catalog's tables, every statement kind and every recipe
read back through `attempt query`'s engine."""

import json
import os

import pytest
from conftest import run_attempt

from attemptdb.devtools import bench_query
from attemptdb.projections import catalog
from attemptdb.query import execute, resolve
from attemptdb.query import result as query_result
from attemptdb.store.readonly import connect

EVENTS = int(os.environ.get("AQL_REALDB_EVENTS", "400"))


pytestmark = pytest.mark.usefixtures("private_grammar_cache")


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    import apsw

    from attemptdb.devtools import bench_query
    path = str(tmp_path_factory.mktemp("real") / "history.db")
    try:
        bench_query.build_history(path, EVENTS, seed=7)
    except apsw.SQLError as e:  # the projection migrations are someone else's work in progress
        pytest.skip(f"the projection migrations in this checkout do not build a database ({e})")
    conn, gate = connect(path)
    if not resolve.table_exists(conn, "attempts"):
        pytest.skip("the projection migrations are not in this checkout yet")
    ids = bench_query.subjects(path)
    yield path, conn, gate, ids
    conn.close()


def run(real, text):
    _, conn, gate, _ = real
    return execute.run(conn, text, gate=gate)


def contract(result):
    assert "evidence" in result.columns and "uncertainty" in result.columns, result.columns
    for d in result.dicts():
        assert d["uncertainty"]["reason"] in query_result.REASONS
        if d["uncertainty"]["reason"] not in ("insufficient_evidence", "state_mismatch", "depth_limit"):
            assert d["evidence"], d


def test_show_every_target(real):
    for target in ("ATTEMPTS", "FAILED ATTEMPTS", "SUPERSEDED ATTEMPTS", "SESSIONS", "TURNS", "TOOL CALLS",
                   "HANDOFFS", "EDGES", "SIGNALS", "COMMITS", "CORRECTIONS", "RETRACTIONS", "WORK UNITS",
                   "DECISIONS", "CONFLICTS"):
        r = run(real, f"SHOW {target} LIMIT 5")
        contract(r)
    assert run(real, "SHOW ATTEMPTS").rows


def test_verbs_on_real_ids(real):
    ids = real[3]
    contract(run(real, f"SHOW EVIDENCE FOR attempt {ids['attempt']}"))
    contract(run(real, f"WHY session {ids['session']} STATUS BLOCKED"))
    contract(run(real, f"WHY attempt {ids['attempt']} STATUS FAILED"))
    r = run(real, f"STATE project AT '{ids['at']}'")
    contract(r)
    assert "work_unit" in {d["subject_type"] for d in r.dicts()}  # units open in the middle of the history
    contract(run(real, f"DIFF STATE '{ids['at']}' NOW"))
    unit = real[1].execute("SELECT work_unit_id FROM unit_index ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    contract(run(real, f"WHY {unit} STATUS BLOCKED"))
    contract(run(real, f"TRACE {unit} CAUSES"))
    contract(run(real, f"SHOW EVIDENCE FOR {unit}"))
    contract(run(real, "WHAT IS project DOING NOW"))
    assert "plan" in [r[0] for r in run(real, "EXPLAIN SHOW FAILED ATTEMPTS").rows]


def test_trace_on_the_real_edges(real):
    _, conn, _, ids = real
    kind = conn.execute("SELECT type FROM sqlite_schema WHERE name = 'edges'").fetchone()[0]
    for direction in ("UP", "DOWN", "BOTH"):
        r = run(real, f"TRACE attempt {ids['attempt']} CAUSES DEPTH 10 DIRECTION {direction}")
        contract(r)
        assert kind in ("table", "view")


def test_recipes(real):
    ids = real[3]
    for recipe in catalog.load_docs()["recipes"]:
        text = recipe["statement"].replace("{session}", ids["session"]).replace("{attempt}", ids["attempt"])
        r = run(real, text)
        assert r.columns, text


def test_cli_reads_the_real_file_without_changing_it(real, home):
    path = real[0]
    with open(path, "rb") as f:
        before = f.read()
    p = run_attempt(["query", "SHOW SESSIONS", "--json", "--db", path])
    assert p.returncode == 0, p.stderr.decode()
    assert isinstance(json.loads(p.stdout), list)
    p = run_attempt(["query", "DELETE FROM events", "--db", path])
    assert p.returncode == 2 and b"AQL0506" in p.stderr
    with open(path, "rb") as f:
        assert f.read() == before


@pytest.mark.slow
def test_bench_query_json_shape(home, tmp_path):
    p = run_attempt(["bench", "query", "--events", "300", "--runs", "1", "--json",
                     "--reuse", str(tmp_path / "bench.db")], timeout=600)
    assert p.returncode == 0, p.stderr.decode()
    rep = json.loads(p.stdout)
    assert set(rep) == {"events", "version_wall_ms", "statements"} and rep["events"] == 300
    assert [s["statement"].split()[0] for s in rep["statements"]] == ["SHOW", "SHOW", "WHY", "TRACE", "STATE", "SELECT",
                                                                      "SHOW", "SELECT", "attempt"]
    assert [s["statement"] for s in rep["statements"]][-3:] == ["SHOW WORK UNITS", bench_query.STUCK_RECIPE,
                                                               "attempt needs-you"]
    assert not any("error" in s for s in rep["statements"]), rep
    for s in rep["statements"]:
        assert {"statement", "wall_ms", "ratio", "peak_rss_mb"} <= set(s) <= {"statement", "wall_ms", "ratio",
                                                                              "peak_rss_mb", "error"}
        assert s["wall_ms"] > 0 and s["peak_rss_mb"] > 0
