"""The schema a file holds against the one its migrations wrote: `attempt verify` names a view,
table or trigger that was rewritten or dropped, and a foreign trigger on one of AttemptDB's
tables; a read command that SQLite fails on such a file says so with a coded error instead of
an internal one. The edits are made with the real sqlite3 shell, as someone with the file would."""

import json
import os

import apsw
import pytest
from conftest import needs_shell, run_attempt
from conftest import sqlite3_shell as shell

from attemptdb.devtools import synth
from attemptdb.store import schema, schema_integrity
from attemptdb.store.database import Store

LATEST = schema.latest()


def differences(db):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return schema_integrity.differences(conn, conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def filled(db):
    st = Store.open(db)
    st.append(list(synth.generate(80, seed=3)))
    st.close()
    return db


def verify_json(db):
    p = run_attempt(["verify", "--json", "--db", db])
    return p.returncode, json.loads(p.stdout)


def test_a_fresh_file_and_one_migrated_step_by_step_match(db, tmp_path):
    st = Store.open(db)
    st.close()
    assert differences(db) == []
    # an older file: migrations up to 0005 only (its views and triggers were those of the code
    # that wrote it: not compared), its tables are judged against those
    old = str(tmp_path / "old.db")
    conn = apsw.Connection(old)
    schema.build(conn, 5)
    conn.execute("PRAGMA user_version = 5")
    assert schema_integrity.differences(conn, 5) == []
    assert "replay_pending" not in schema_integrity.expected(5)
    assert "turns" not in schema_integrity.expected(5)
    conn.close()
    # then the pending migrations, the way a writer applies them: the result matches the latest
    Store.open(old).close()
    assert differences(old) == []


def test_an_old_file_is_upgraded_to_the_current_views_and_triggers_in_firing_order(tmp_path, db):
    """A file written at version 6 by the code of its time (tests/data/file_at_0006.sql) ends
    with exactly the schema of a fresh file, triggers created in the same order."""
    old = str(tmp_path / "old6.db")
    conn = apsw.Connection(old)
    with open(os.path.join(os.path.dirname(__file__), "data", "file_at_0006.sql"), encoding="utf-8") as f:
        conn.execute(f.read())
    conn.close()
    Store.open(old).close()
    Store.open(db).close()
    order = ("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('trigger', 'view') "
             "ORDER BY tbl_name, rowid")
    got = [apsw.Connection(p).execute(order).fetchall() for p in (old, db)]
    assert got[0] == got[1]
    assert differences(old) == []


def test_each_object_is_attributed_to_where_its_text_lives():
    want = schema_integrity.expected(LATEST)
    assert want["events"][0] == "table" and want["events"][3] == "migration 0001"
    assert want["apply_start"][:2] == ("trigger", "project_queue") and want["apply_start"][3] == "sql/20_apply.sql"
    assert want["events_late"][3] == "sql/40_events.sql"
    assert want["attempt_facts_turn_order"][3] == "migration 0007"  # an index
    assert want["projection_control"][3] == "migration 0006"  # a column added by 0006


@needs_shell
def test_verify_names_a_rewritten_view(filled):
    assert verify_json(filled)[0] == 0
    shell(filled, "DROP VIEW turns; CREATE VIEW turns AS SELECT 'trn_x' AS turn_id;")
    code, rep = verify_json(filled)
    assert code == 1 and not rep["ok"]
    assert [(p["kind"], p["message"]) for p in rep["problems"]] == [
        ("schema_changed", "view turns is not what sql/50_views.sql writes")]


@needs_shell
def test_verify_names_a_dropped_projection_trigger_and_a_foreign_one(filled):
    shell(filled, "DROP TRIGGER apply_start;\n"
                  "CREATE TABLE mine (x); CREATE INDEX mine_x ON mine (x);\n"
                  "CREATE INDEX events_by_kind_mine ON events (kind, provider);\n"
                  "CREATE TRIGGER mine_log AFTER INSERT ON mine BEGIN SELECT 1; END;\n"
                  "CREATE TRIGGER sneaky AFTER INSERT ON events BEGIN DELETE FROM session_facts; END;")
    code, rep = verify_json(filled)
    assert code == 1
    # a user's own table, index and a trigger on their own table are left alone
    assert [p["message"] for p in rep["problems"]] == [
        "trigger apply_start is missing (sql/20_apply.sql creates it)",
        "trigger sneaky on events is not AttemptDB's: it runs inside every write there"]


@needs_shell
def test_a_no_op_trigger_under_an_immutability_triggers_name_does_not_pass(filled):
    shell(filled, "DROP TRIGGER events_no_delete;\n"
                  "CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT 1; END;")
    code, rep = verify_json(filled)
    assert code == 1
    assert [p["message"] for p in rep["problems"]] == [
        "trigger events_no_delete is not what sql/10_immutability.sql writes"]


@needs_shell
def test_a_missing_immutability_trigger_is_reported_once(filled):
    shell(filled, "DROP TRIGGER events_no_update; DROP TRIGGER events_retracted_only_set;")
    code, rep = verify_json(filled)
    assert code == 1
    assert sorted(p["kind"] for p in rep["problems"]) == ["trigger_missing", "trigger_missing"]


@needs_shell
def test_a_read_command_on_a_rewritten_view_gets_a_coded_error(filled, home):
    # a view that SQLite refuses to run from a file's schema
    shell(filled, "DROP VIEW turns; CREATE VIEW turns AS SELECT name AS turn_id FROM dbstat;")
    p = run_attempt(["timeline", "--db", filled])
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert err.startswith("error[store.schema_changed]: ") and "view turns is not what sql/50_views.sql writes" in err
    assert "internal" not in err and "Traceback" not in err
    assert not (home / ".local" / "state" / "attemptdb" / "reports").exists()


@needs_shell
def test_schema_names_are_printed_without_terminal_escapes(filled):
    shell(filled, "CREATE TRIGGER \"x\x1b[2Jy\" AFTER INSERT ON events BEGIN SELECT 1; END;\n"
                  "DROP VIEW turns; CREATE VIEW turns AS SELECT 1 AS x;")
    p = run_attempt(["timeline", "--db", filled])
    err = p.stderr.decode()
    assert p.returncode == 2 and "\x1b" not in err, err
    assert "(and 1 more)" in err
    for args in (["verify"], ["reproject", "--check"], ["status"]):
        p = run_attempt([*args, "--db", filled])
        assert b"\x1b" not in p.stdout + p.stderr, args
        assert args == ["status"] or b"x?[2Jy" in p.stdout + p.stderr, args


def test_status_says_when_the_schema_is_not_the_migrations(filled):
    p = run_attempt(["status", "--json", "--db", filled])
    assert p.returncode == 0 and json.loads(p.stdout)["schema_changes"] == []
    conn = apsw.Connection(filled)
    conn.execute("DROP TRIGGER apply_end")
    conn.close()
    p = run_attempt(["status", "--json", "--db", filled])
    rep = json.loads(p.stdout)
    assert rep["schema_changes"] == ["trigger apply_end is missing (sql/20_apply.sql creates it)"]
    p = run_attempt(["status", "--db", filled])
    assert p.returncode == 0
    said = b" ".join(p.stderr.split())  # the warning is wrapped to the terminal (80 columns through a pipe)
    assert b"warning: the schema: trigger apply_end is missing (sql/20_apply.sql creates it); it was changed" in said


@needs_shell
def test_a_files_views_run_untrusted(filled):
    """Every connection sets trusted_schema=OFF: what a file's own views and triggers may call
    is limited to what SQLite marks harmless (here: a pragma table-valued function is not)."""
    shell(filled, "CREATE VIEW mine AS SELECT name FROM pragma_function_list;")
    p = run_attempt(["query", "--db", filled, "SELECT count(*) AS n FROM mine"])
    assert p.returncode == 2 and b"unsafe use of virtual table" in p.stderr, p.stderr
    p = run_attempt(["query", "--db", filled, "SELECT count(*) AS n FROM pragma_function_list"])
    assert p.returncode == 0, p.stderr  # typed by the user, not taken from the file: allowed


# --- putting it back: `attempt reproject` ------------------------------------------------------

def trigger_order(db):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = {}
        for tbl, name in conn.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger' "
                                      "ORDER BY rowid"):
            out.setdefault(tbl, []).append(name)
        return out
    finally:
        conn.close()


def state(db):
    from attemptdb.projections import rebuild
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return rebuild.dump(conn, portable=True)
    finally:
        conn.close()


@needs_shell
def test_reproject_puts_views_and_triggers_back_and_rebuilds_with_them(filled, tmp_path):
    evs = list(synth.generate(200, seed=3))
    clean = str(tmp_path / "clean.db")
    st = Store.open(clean)
    st.append(evs)
    st.close()
    # projections silently wrong from here on: tool call starts are no longer applied
    shell(filled, "DROP TRIGGER apply_start;\n"
                  "CREATE TRIGGER apply_start AFTER UPDATE OF go_start ON project_queue BEGIN SELECT 1; END;\n"
                  "DROP VIEW turns; CREATE VIEW turns AS SELECT 1 AS x;\n"
                  "CREATE TRIGGER sneaky AFTER INSERT ON events BEGIN SELECT 1; END;")
    st = Store.open(filled)
    st.append(evs[80:])
    st.close()
    assert state(filled) != state(clean)

    p = run_attempt(["reproject", "--check", "--json", "--db", filled])
    assert p.returncode == 1 and len(json.loads(p.stdout)["restored"]) == 3
    assert len(differences(filled)) == 3  # --check changed nothing

    p = run_attempt(["reproject", "--db", filled])
    out = p.stdout.decode()
    assert p.returncode == 1, out
    assert "schema: put back view turns (sql/50_views.sql)" in out
    assert "schema: put back trigger apply_start (sql/20_apply.sql)" in out
    assert "schema: dropped trigger sneaky on events (not AttemptDB's)" in out
    assert differences(filled) == []
    assert trigger_order(filled) == trigger_order(clean)  # each table's: the order SQLite fires them in
    assert state(filled) == state(clean)
    assert run_attempt(["reproject", "--db", filled]).returncode == 0
    code, rep = verify_json(filled)
    assert code == 0 and rep["ok"], rep


def reproject_refuses(db, message_start):
    """`attempt reproject` stops with a coded error starting so, and the schema is unchanged."""
    before = differences(db)
    p = run_attempt(["reproject", "--db", db])
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("error[store.schema_changed]: " + message_start), err
    assert differences(db) == before


@needs_shell
def test_reproject_refuses_a_rewritten_table_and_changes_nothing(filled):
    shell(filled, "DROP VIEW turns; CREATE VIEW turns AS SELECT 1 AS x;\n"
                  "ALTER TABLE session_facts ADD COLUMN mine TEXT;")
    reproject_refuses(filled, "table session_facts is not what migration 0002 writes")


@needs_shell
def test_a_unique_index_that_rows_now_break_is_a_coded_error(filled):
    shell(filled, "DROP INDEX tool_call_facts_id;\n"
                  "CREATE TEMP TABLE dup AS SELECT * FROM tool_call_facts LIMIT 1;\n"
                  "UPDATE dup SET call_ord = call_ord + 100000;\n"
                  "INSERT INTO tool_call_facts SELECT * FROM dup;")
    assert differences(filled) == ["index tool_call_facts_id is missing (migration 0002 creates it)"]
    reproject_refuses(filled, "index tool_call_facts_id cannot be put back")


@needs_shell
def test_one_of_our_trigger_names_on_another_table_is_put_back(filled):
    shell(filled, "DROP TRIGGER call_closed;\n"
                  "CREATE TRIGGER call_closed AFTER INSERT ON turn_facts BEGIN SELECT 1; END;")
    assert differences(filled) == ["trigger call_closed is not what sql/20_apply.sql writes"]
    p = run_attempt(["reproject", "--db", filled])
    assert p.returncode == 1 and b"schema: put back trigger call_closed (sql/20_apply.sql)" in p.stdout, p.stderr
    assert differences(filled) == []
