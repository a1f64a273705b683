"""Queries cannot write (DESIGN.md invariant 6): every write attempted through `attempt query`
is refused with a coded error and the database file's bytes are unchanged."""

import hashlib
import os

import apsw
import pytest
from conftest import run_attempt
from test_attemptql_scenario import NOW, build

from attemptdb.query import execute
from attemptdb.query.errors import AQLError
from attemptdb.store.readonly import connect

WRITES = [
    "INSERT INTO events (event_id) VALUES ('x')",
    "UPDATE events SET retracted = 1",
    "DELETE FROM events",
    "REPLACE INTO meta (key, value) VALUES ('capture_mode', 'full_sync')",
    "INSERT OR REPLACE INTO meta VALUES ('a', 'b')",
    "CREATE TABLE x (a)",
    "CREATE TEMP TABLE x (a)",
    "CREATE INDEX x ON events (kind)",
    "CREATE VIEW v AS SELECT 1",
    "CREATE TRIGGER t AFTER INSERT ON events BEGIN SELECT 1; END",
    "CREATE VIRTUAL TABLE v USING json_each('[1]')",
    "DROP TABLE events",
    "DROP VIEW sessions",
    "ALTER TABLE events ADD COLUMN x",
    "ATTACH DATABASE '{tmp}/other.db' AS other",
    "DETACH DATABASE main",
    "VACUUM",
    "VACUUM INTO '{tmp}/copy.db'",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "SAVEPOINT s",
    "PRAGMA user_version = 9",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA writable_schema = 1",
    "PRAGMA query_only = 0",
    "PRAGMA wal_checkpoint(TRUNCATE)",
    "SELECT load_extension('/tmp/x.so')",
    "WITH x AS (SELECT 1) INSERT INTO meta SELECT 'a', 'b'",
    "WITH x AS (SELECT 1) DELETE FROM events",
    "EXPLAIN DELETE FROM events",
    "EXPLAIN QUERY PLAN UPDATE events SET kind = 'x'",
    "SELECT 1; DELETE FROM events",
    "SELECT 1;\n-- harmless?\nDROP TABLE events;",
    "/* comment */ DELETE FROM events",
    "-- comment\nINSERT INTO meta VALUES ('a', 'b')",
    "  delete from events",
    "SHOW ATTEMPTS WHERE 1 = 1; DELETE FROM events",
    "SHOW ATTEMPTS WHERE (SELECT 1) = 1",
]


def _digest(path):
    """Hashes of the database and its non-empty journal files (a reader may leave an empty
    -wal behind; it holds no bytes of the database)."""
    out = {}
    for p in (path, path + "-wal", path + "-journal"):
        if os.path.exists(p) and os.path.getsize(p) > 0:
            with open(p, "rb") as f:
                out[os.path.basename(p)] = hashlib.sha256(f.read()).hexdigest()
    return out


pytestmark = pytest.mark.usefixtures("private_grammar_cache")


@pytest.fixture
def wal_db(tmp_path):
    path = str(tmp_path / "q.db")
    build(path)
    c = apsw.Connection(path)
    c.execute("PRAGMA journal_mode = WAL")
    c.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    c.execute("INSERT INTO meta (key, value) VALUES ('capture_mode', 'metadata_only')")  # leave WAL content
    c.close()
    assert os.path.getsize(path + "-wal") > 0
    return path


def test_every_write_is_refused_and_the_bytes_are_unchanged(wal_db, tmp_path):
    before = _digest(wal_db)
    conn, gate = connect(wal_db)
    for text in WRITES:
        stmt = text.format(tmp=tmp_path)
        with pytest.raises(AQLError) as e:
            execute.run(conn, stmt, now_us=NOW, gate=gate)
        assert e.value.code in ("AQL0506", "AQL0204", "AQL0207"), (stmt, e.value.code)
    # reads still work on the same connection afterwards
    assert execute.run(conn, "SELECT count(*) FROM events", gate=gate).rows[0][0] > 0
    conn.close()
    assert not os.path.exists(tmp_path / "copy.db") and not os.path.exists(tmp_path / "other.db")
    assert _digest(wal_db) == before


def test_the_authorizer_itself_denies_writes_behind_the_pre_check(wal_db):
    conn, gate = connect(wal_db)
    for sql in ("INSERT INTO meta VALUES ('a', 'b')", "DELETE FROM events", "CREATE TABLE x (a)",
                "DROP TABLE events", "PRAGMA user_version = 3", "ATTACH ':memory:' AS m",
                "SELECT load_extension('x')", "BEGIN"):
        with pytest.raises((apsw.AuthError, apsw.ReadOnlyError, apsw.SQLError)):
            conn.execute(sql).fetchall()
        assert gate.refused, sql
        gate.refused = None
    # reading pragmas that only describe the schema stays allowed
    assert conn.execute("PRAGMA table_info(events)").fetchall()
    assert conn.execute("SELECT name FROM pragma_table_info('events')").fetchall()
    assert conn.execute("PRAGMA user_version").fetchone() is not None
    conn.close()


def test_attempt_query_refuses_writes_from_the_command_line(wal_db, home):
    before = _digest(wal_db)
    for stmt in ("DELETE FROM events", "PRAGMA user_version = 7", "SELECT 1; DROP TABLE events"):
        p = run_attempt(["query", stmt, "--db", wal_db])
        assert p.returncode != 0
        err = p.stderr.decode()
        assert "error[AQL05" in err or "error[AQL0204]" in err, err
        assert "Traceback" not in err
    assert _digest(wal_db) == before


def test_with_the_gate_lifted_for_package_sql_the_file_still_cannot_change(wal_db):
    """store.readonly.lifted: the package's own statements run without the Python authorizer,
    but the read-only open and query_only still refuse every write, the gate comes back after,
    and a content wall (any authorizer other than the plain gate) is never lifted."""
    from attemptdb.readers import content
    from attemptdb.store.readonly import lifted
    before = _digest(wal_db)
    conn, gate = connect(wal_db)
    with lifted(conn):
        assert conn.authorizer is None
        for sql in ("INSERT INTO meta VALUES ('a', 'b')", "DELETE FROM events", "CREATE TABLE x (a)",
                    "PRAGMA user_version = 3", "UPDATE events SET kind = 'x'"):
            with pytest.raises((apsw.ReadOnlyError, apsw.SQLError)):
                conn.execute(sql).fetchall()
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] > 0
    assert conn.authorizer is gate
    with pytest.raises(apsw.AuthError):
        conn.execute("DELETE FROM events").fetchall()
    wall = content.authorizer(gate, include_content=False)
    conn.authorizer = wall
    with lifted(conn):
        assert conn.authorizer is wall
    assert conn.authorizer is wall
    conn.close()
    assert _digest(wal_db) == before
