"""Small truths (issue 17 item 5): --db where the README says so (and a reason where not);
`schema nosuch`; DESCRIBE's values and types; readers never turn a 0-byte file into a
database; bundle export and status agree on session counts; the no-handoffs hint; hook
install for an agent that is not detected."""

import json
import os

import click
import pytest
import scenario_db
from conftest import ROOT, run_attempt

from attemptdb.cli.main import cli
from attemptdb.installer import capturetest
from attemptdb.projections import catalog
from attemptdb.query.execute import public_tables
from attemptdb.store.database import Store

NO_DB = {"capture", "bundle verify", "conformance", "hook uninstall", "verify-proof", "bench capture",
         "bench faults", "bench ingest", "bench proof", "bench query", "bench sync", "bench verify"}


def attempt(args, **env):
    p = run_attempt(list(args), env=dict({"NO_COLOR": "1", "COLUMNS": "100"}, **env))
    assert b"Traceback" not in p.stderr, p.stderr.decode()
    return p


def _commands():
    ctx = click.Context(cli)
    out = {}

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name])
        else:
            out[" ".join(path)] = cmd
    walk(cli, [])
    return out


def test_every_command_takes_db_except_the_ones_the_readme_names():
    cmds = _commands()
    without = {name for name, c in cmds.items()
               if not any(p.name == "db" for p in c.params) or any(p.name == "no_db" for p in c.params)}
    assert without == NO_DB
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for name in sorted(NO_DB - {"capture"}):
        assert f"`attempt {name.split()[0]}" in readme
    assert "do not take `--db`" in readme


@pytest.mark.parametrize("args", [["bundle", "verify", "x.zip"], ["conformance", "x.jsonl"], ["hook", "uninstall"],
                                  ["bench", "ingest"], ["verify-proof", "p.json"]])
def test_db_on_a_command_that_opens_none_is_refused_with_the_reason(args, tmp_path):
    p = attempt(args + ["--db", str(tmp_path / "a.db")], HOME=str(tmp_path))
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("error[usage.no_db]: `attempt " + " ".join(args[:2 if args[0] in (
        "bundle", "hook", "bench") else 1]) + "` takes no --db: "), err
    assert not os.path.exists(tmp_path / "a.db")


@pytest.fixture(scope="module")
def scen(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("truths") / "s.db")
    scenario_db.build(path, "retry_supersession", "retractions_and_late_events")
    return path


def test_schema_of_an_unknown_table_names_it_and_lists_the_real_ones(scen):
    p = attempt(["schema", "nosuch", "--db", scen])
    err = p.stderr.decode()
    assert p.returncode == 2 and "unknown table 'nosuch'" in err
    for t in ("events", "sessions", "attempts", "handoffs"):
        assert t in err


def test_describe_prints_sql_values_and_every_type(scen):
    p = attempt(["query", "DESCRIBE events", "--db", scen])
    out = p.stdout.decode()
    assert "False" not in out and "True" not in out and "false" in out and "true" in out
    st = Store.open(scen, readonly=True)
    try:
        names = public_tables(st.conn)
    finally:
        st.close()
    for t in names:
        rows = json.loads(attempt(["query", f"DESCRIBE {t}", "--json", "--db", scen]).stdout)
        assert rows and all(r["type"] not in ("", None) for r in rows), (t, [r for r in rows if not r["type"]])
        assert all(isinstance(r["primary_key"], bool) and isinstance(r["null"], bool) for r in rows)
        documented = next((d for d in catalog.load_docs()["tables"] if d["name"] == t), {"columns": []})
        for c in documented["columns"]:  # the catalog's word, as `attempt schema` says it
            row = next((r for r in rows if r["column"] == c["name"]), None)
            assert row is None or (row["type"], row["null"]) == (c["type"], c["null"]), (t, row, c)
    csv = attempt(["query", "DESCRIBE events", "--csv", "--db", scen]).stdout.decode()
    assert "seq,int64,false,true" in csv.replace("\r", "")  # a primary key is never null
    # the text table too: `null` and `primary_key` both print true/false (README), never yes/empty
    seq = next(ln.split() for ln in out.splitlines() if ln.startswith("seq "))
    assert seq == ["seq", "int64", "false", "true"], seq
    nullable = [ln.split() for ln in out.splitlines() if ln.split()[:1] == ["parent_span_id"]]
    assert nullable and nullable[0][2:] == ["true", "false"], nullable


@pytest.mark.parametrize("args", [["timeline"], ["failures"], ["events"], ["status"], ["needs-you"], ["handoffs"],
                                  ["query", "SHOW SESSIONS"], ["why", "att_00000000"], ["verify"], ["reproject"],
                                  ["export", "out"]])
def test_a_read_command_never_turns_an_empty_file_into_a_database(args, tmp_path):
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    p = attempt(args + ["--db", str(db)], HOME=str(tmp_path))
    assert p.returncode != 0
    assert db.stat().st_size == 0 and not os.path.exists(str(db) + "-wal")
    if args[0] != "export":  # without pyarrow, export stops before opening anything
        assert "is empty, not yet an AttemptDB" in p.stderr.decode(), p.stderr.decode()


def test_bundle_export_and_status_agree_on_session_counts(scen, tmp_path):
    db = str(tmp_path / "c.db")
    scenario_db.build(db, "retry_supersession")
    # the capture test `attempt hook install` runs: a session only a capture_test event is in
    p = run_attempt(["capture", "claude-code"], input=json.dumps(capturetest.payload("claude_code", str(tmp_path)))
                    .encode(), env={"ATTEMPTDB_PATH": db, "ATTEMPTDB_NO_DAEMON": "1"})
    assert p.returncode == 0
    status = json.loads(attempt(["status", "--json", "--db", db]).stdout)
    assert status["capture_test_sessions"] == 1
    assert "(not counted: 1 capture-test session" in attempt(["status", "--db", db]).stdout.decode()
    p = attempt(["bundle", "export", str(tmp_path / "b.zip"), "--db", db])
    assert p.returncode == 0, p.stderr.decode()
    total = status["sessions"] + 1
    assert f" in {total} sessions to " in p.stdout.decode().replace("\n  ", " ")  # wrapped to the terminal: one line again
    assert (f"note: {total} sessions in the bundle, {status['sessions']} as `attempt status` counts them; "
            "not counted there: 1 capture-test session") in p.stderr.decode().replace("\n  ", " ")
    data = json.loads(attempt(["bundle", "export", str(tmp_path / "b2.zip"), "--json", "--db", db]).stdout)
    assert data["session_counts"]["counted"] == status["sessions"] and data["session_counts"]["capture_test"] == 1
    # a retracted session: status leaves it out, and the bundle says so
    st_status = json.loads(attempt(["status", "--json", "--db", scen]).stdout)
    p = attempt(["bundle", "export", str(tmp_path / "r.zip"), "--json", "--db", scen])
    counts = json.loads(p.stdout)["session_counts"]
    assert counts["counted"] == st_status["sessions"] and counts["retracted"] >= 1


def test_no_handoffs_hint_states_the_conditions(tmp_path):
    db = str(tmp_path / "h.db")
    scenario_db.build(db, "retry_supersession")
    out = attempt(["handoffs", "--db", db]).stdout.decode()
    assert "no handoffs detected" in out
    for words in ("different agent", "in one project", "30 minutes",
                  "5 minutes", "prompt or a tool call"):
        assert words in out.replace("\n  ", " "), words
    assert max(len(x) for x in out.splitlines()) <= 100


def test_hook_install_for_an_agent_that_is_not_detected(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": str(tmp_path / "empty-bin") + os.pathsep + os.path.dirname(os.sys.executable)}
    p = attempt(["hook", "install", "--provider", "gemini-cli", "--no-verify"], **env)
    out = " ".join(ln.strip() for ln in p.stdout.decode().splitlines())  # (wrapped to 80 columns)
    assert p.returncode == 1
    assert f"looked for the directory {home / '.gemini'} and for `gemini` on PATH" in out
    assert "pass --force to install anyway" in p.stderr.decode()
    assert not os.path.exists(home / ".gemini")
    p = attempt(["hook", "install", "--provider", "gemini-cli", "--no-verify", "--json"], **env)
    assert p.returncode == 1 and json.loads(p.stdout)["ok"] is False
    p = attempt(["hook", "install", "--provider", "gemini-cli", "--no-verify", "--force"], **env)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    assert os.path.isfile(home / ".gemini" / "settings.json")
    # without --provider, undetected agents are skipped as before (exit 0)
    p = attempt(["hook", "install", "--no-verify"], HOME=str(tmp_path / "other"), PATH=env["PATH"])
    assert p.returncode == 0 and "looked for the directory" in p.stdout.decode()
