"""DataFusion over a team dataset answers for every public table the catalog documents, even when
no file of the dataset holds it: a dataset exported from a device with no events of its own (it
only pulled other devices' events by sync: "events through source_seq 0") has no events file,
and `SELECT count(*) FROM events` said "table events not found" (a user's walkthrough). Such a
table is there with the columns an export writes and no rows (dataset.View.register)."""

import json
import os

import pytest
from conftest import run_attempt
from test_term_prose import _home

from attemptdb.projections import catalog

pytest.importorskip("pyarrow", reason="the arrow extra is part of the test extra")
pytest.importorskip("datafusion", reason="the arrow extra is part of the test extra")

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TZ": "UTC", "ATTEMPTDB_NO_DAEMON": "1"}


def run(home: dict, *args, ok=(0,)):
    p = run_attempt(list(args), env=dict(ENV, **home))
    assert p.returncode in ok and b"Traceback" not in p.stderr, (args, p.stdout.decode(), p.stderr.decode())
    return p.stdout.decode(), p.stderr.decode()


def df(home, ds, sql) -> list[dict]:
    out, _ = run(home, "query", "--engine", "datafusion", "--from", ds, sql, "--json")
    return json.loads(out)


def columns(home, ds, sql) -> list[str]:
    out, _ = run(home, "query", "--engine", "datafusion", "--from", ds, sql, "--csv")
    return out.splitlines()[0].split(",")


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """Device A records three events and pushes them; device B only pulls, then exports the team
    dataset (B has no events of its own); A exports its own dataset too, to compare."""
    root = tmp_path_factory.mktemp("ds-empty")
    homes, dbs = {}, {}
    for name in ("a", "b"):
        (root / name).mkdir()
        homes[name], dbs[name] = _home(root / name), str(root / f"{name}.db")
        run(homes[name], "init", "--db", dbs[name])
    for i in range(3):
        p = run_attempt(["capture", "claude_code", "--db", dbs["a"]], env=dict(ENV, **homes["a"]),
                        input=json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1",
                                          "prompt": f"p{i}", "cwd": "/tmp"}).encode())
        assert p.returncode == 0, p.stderr
    folder = str(root / "shared")
    os.mkdir(folder)
    run(homes["a"], "sync", folder, "--db", dbs["a"])
    run(homes["b"], "sync", folder, "--db", dbs["b"])
    ds_b, ds_a = str(root / "ds_b"), str(root / "ds_a")
    out, _ = run(homes["b"], "export", "--dataset", ds_b, "--db", dbs["b"], "--json")
    assert json.loads(out)["events_through"] == 0  # "events through source_seq 0"
    run(homes["a"], "export", "--dataset", ds_a, "--db", dbs["a"])
    return homes["b"], ds_b, ds_a


def test_events_of_a_dataset_with_no_events_file_is_an_empty_table(team):
    home, ds, _ = team
    assert not os.path.exists(os.path.join(ds, "events"))  # no file holds events
    assert df(home, ds, "SELECT count(*) AS n FROM events") == [{"n": 0}]
    out, _ = run(home, "query", "--engine", "datafusion", "--from", ds, "SELECT count(*) AS n FROM events")
    assert "no file of the dataset holds events yet" in out.replace("\n  ", " ")
    # the projections B pulled are in its snapshot: they answer as before
    assert df(home, ds, "SELECT count(*) AS n FROM sessions") == [{"n": 1}]
    # a join and a filter on its columns plan and run
    assert df(home, ds, "SELECT e.kind, e.device, e.date FROM events e JOIN sessions s ON e.session_id = "
                        "s.session_id WHERE e.observed_at IS NOT NULL") == []


def test_the_empty_table_has_the_columns_an_export_writes(team):
    home, ds_b, ds_a = team
    cols_b = columns(home, ds_b, "SELECT * FROM events LIMIT 0")
    cols_a = columns(home, ds_a, "SELECT * FROM events LIMIT 0")
    assert cols_b == cols_a and cols_b[-2:] == ["device", "date"], (cols_b, cols_a)


def test_every_documented_table_answers_on_a_dataset_before_any_file(tmp_path):
    """A device with no events at all: its export holds empty snapshots; every public table the
    catalog documents answers, events included."""
    (tmp_path / "h").mkdir()
    home = _home(tmp_path / "h")
    db, ds = str(tmp_path / "a.db"), str(tmp_path / "ds")
    run(home, "init", "--db", db)
    run(home, "export", "--dataset", ds, "--db", db)
    names = [t["name"] for t in catalog.load_docs()["tables"] if not t.get("planned")]
    assert "events" in names and len(names) >= 15
    sql = " UNION ALL ".join(f"SELECT '{n}' AS t, count(*) AS n FROM {n}" for n in names)
    got = {(r["t"], r["n"]) for r in df(home, ds, sql)}
    assert got == {(n, 0) for n in names}, got
