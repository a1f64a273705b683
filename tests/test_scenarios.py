"""Every scenario in fixtures/scenarios/ produces its expected rows — read through attemptdb's own
connection (what `attempt` reads), through the `attempt timeline --json` command, and through the
plain sqlite3 shell on the same file — and a rebuild from the events equals the incremental state."""

import json
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from attemptdb.projections import PUBLIC_VIEWS, READ_CLOCK_COLUMNS, rebuild, scenario
from attemptdb.query.read import rows
from attemptdb.store.database import Store

NAMES = scenario.names()
SQLITE3 = shutil.which("sqlite3") or "/usr/bin/sqlite3"
TABLES = tuple(scenario.ID_COLUMNS)


def load(path: str, name: str):
    b = scenario.build(scenario.load(name))
    st = Store.open(path)
    for env in scenario.arrival(b):
        st.append([env])
    return st, b


def read_all(conn) -> dict:
    return {t: rows(conn, f"SELECT * FROM {t}") for t in TABLES}


def test_every_scenario_is_listed_and_covers_something():
    assert len(NAMES) >= 10
    for name in NAMES:
        scn = scenario.load(name)
        assert scn.get("covers") and scn.get("description") and scn.get("expect"), name


@pytest.mark.parametrize("name", NAMES)
def test_scenario_rows(tmp_path, name):
    st, b = load(str(tmp_path / "s.db"), name)
    try:
        problems = scenario.check(read_all(st.conn), b)
        assert problems == [], "\n".join(problems)
        rep = rebuild.reproject(st.conn, write=False)
        assert rep.clean, rep.as_dict()
    finally:
        st.close()


@pytest.mark.skipif(not os.path.exists(SQLITE3), reason="the sqlite3 shell is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_scenario_rows_through_sqlite3_shell(tmp_path, name):
    path = str(tmp_path / "s.db")
    st, b = load(path, name)
    ours = {v: rows(st.conn, f"SELECT * FROM {v}") for v in PUBLIC_VIEWS}
    st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.close()
    shell = {}
    for t in TABLES:
        p = subprocess.run([SQLITE3, "-readonly", "-json", path, f"SELECT * FROM {t}"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and not p.stderr, p.stderr
        shell[t] = json.loads(p.stdout) if p.stdout.strip() else []
    problems = scenario.check(shell, b)
    assert problems == [], "\n".join(problems)
    for v in PUBLIC_VIEWS:  # the shell reads exactly what attemptdb reads (but the read's own clock)
        clocked = READ_CLOCK_COLUMNS.get(v, ())
        key = lambda r: json.dumps({k: x for k, x in r.items() if k not in clocked}, sort_keys=True, default=str)
        assert sorted(map(key, shell[v])) == sorted(map(key, ours[v])), v


@pytest.mark.parametrize("name", NAMES)
def test_scenario_attempts_through_timeline_command(tmp_path, name, monkeypatch):
    from attemptdb.cli.main import cli
    path = str(tmp_path / "s.db")
    st, b = load(path, name)
    st.close()
    monkeypatch.setenv("TZ", "UTC")
    res = CliRunner().invoke(cli, ["timeline", "--json", "--all", "-n", "100", "--db", path])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    shown = {a["attempt_id"]: a for s in data["sessions"] for t in s["turns"] for a in t["attempts"]}
    want = [r for r in scenario.expected(b).get("attempts", []) if not r.get("retracted")]
    for w in want:
        got = shown.get(w["attempt_id"])
        if got is None:  # a live attempt the timeline must show, unless its session is retracted
            sessions = {s["session_id"] for s in data["sessions"]}
            assert w.get("session_id") not in sessions, w["attempt_id"]
            continue
        for col, v in w.items():
            assert scenario.equal(got[col], v), (w["attempt_id"], col, got[col], v)
    for aid, a in shown.items():
        assert not a["retracted"], aid
