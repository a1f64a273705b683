"""`attempt export --format parquet|arrow` and `attempt query --engine datafusion`
(spec/export.md): the public tables, with the catalog's columns and the SQLite answers."""

import hashlib
import json
import os
import sys

import pytest

pa = pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is part of the test extra")
pytest.importorskip("datafusion", reason="the arrow extra (datafusion) is part of the test extra")
import pyarrow.parquet as pq  # noqa: E402
from conftest import needs_shell, sqlite3_shell  # noqa: E402

from attemptdb.cli.main import run  # noqa: E402
from attemptdb.devtools import synth
from attemptdb.exchange import arrow_export as export_arrow
from attemptdb.projections import catalog
from attemptdb.store.database import Store

QUERIES = [
    "SELECT provider, kind, count(*) AS n FROM events GROUP BY provider, kind ORDER BY provider, kind",
    "SELECT a.outcome, count(*) AS n, sum(a.tool_call_count) AS calls FROM attempts a "
    "JOIN sessions s ON a.session_id = s.session_id GROUP BY a.outcome ORDER BY a.outcome",
    "SELECT tool_name, count(*) AS n FROM tool_calls WHERE outcome_status = 'failure' GROUP BY tool_name "
    "ORDER BY n DESC, tool_name LIMIT 5",
    "SELECT count(*) AS n FROM edges",
    # booleans: 0/1 from both engines (datafusion gave false/true)
    "SELECT retracted, count(*) AS n FROM sessions GROUP BY retracted ORDER BY retracted",
]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    d = tmp_path_factory.mktemp("src")
    db = str(d / "attempt.db")
    st = Store.open(db)
    st.append(list(synth.generate(600, seed=21)))
    st.close()
    return db


def cli(capsys, *args):
    capsys.readouterr()
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def sqlite_rows(db, sql):
    st = Store.open(db, readonly=True)
    try:
        return [tuple(r) for r in st.conn.execute(sql)]
    finally:
        st.close()


def query_json(capsys, *args):
    code, out, err = cli(capsys, "query", "--json", *args)
    assert code == 0, err
    return [tuple(r.values()) for r in json.loads(out)]


@pytest.fixture(scope="module")
def parquet_dir(source, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("pq") / "export")
    assert run(["export", out, "--db", source]) == 0
    return out


def test_every_public_table_with_the_catalog_columns(source, parquet_dir):
    m = json.load(open(os.path.join(parquet_dir, "manifest.json")))
    st = Store.open(source, readonly=True)
    tables = catalog.build(st.conn)["tables"]
    size, head = st.head()
    st.close()
    assert m["format"] == "parquet" and m["content"] is False
    assert m["chain"] == {"size": size, "head": head}
    assert [t["table"] for t in m["tables"]] == [t["name"] for t in tables]
    for t, entry in zip(tables, m["tables"]):
        path = os.path.join(parquet_dir, entry["file"])
        assert entry["file"] == t["name"] + ".parquet"
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == entry["sha256"]
        got = pq.read_table(path)
        assert got.column_names == [c["name"] for c in t["columns"]]
        assert got.num_rows == entry["rows"] == sqlite_rows(source, f'SELECT count(*) FROM "{t["name"]}"')[0][0]
        for c in t["columns"]:
            want = export_arrow.arrow_type(c["type"])
            assert got.schema.field(c["name"]).type == want, (t["name"], c["name"])
    assert not [p for p in os.listdir(parquet_dir) if p.startswith(".attempt-export-")]


def test_values_equal_sqlite(source, parquet_dir):
    """Every value of every non-content column, times compared as ISO text (but for the columns
    that state the read's own clock, e.g. a work unit's idle seconds: the two reads are moments
    apart)."""
    from attemptdb.projections import READ_CLOCK_COLUMNS
    st = Store.open(source, readonly=True)
    tables = catalog.build(st.conn)["tables"]
    st.close()
    for t in tables:
        hidden = export_arrow.CONTENT_COLUMNS.get(t["name"], ()) + READ_CLOCK_COLUMNS.get(t["name"], ())
        names = [c["name"] for c in t["columns"] if c["name"] not in hidden]
        got = pq.read_table(os.path.join(parquet_dir, t["name"] + ".parquet"), columns=names)
        cols = []
        for c in t["columns"]:
            if c["name"] in hidden:
                continue
            vals = got.column(c["name"]).to_pylist()
            if c["type"] == "timestamp":
                vals = [None if v is None else v.strftime("%Y-%m-%dT%H:%M:%S.%fZ") for v in vals]
            elif c["type"] == "bool":
                vals = [None if v is None else int(v) for v in vals]
            cols.append(vals)
        ours = sorted(zip(*cols), key=repr)
        cols_sql = ", ".join(f'"{n}"' for n in names)
        theirs = sorted(sqlite_rows(source, f'SELECT {cols_sql} FROM "{t["name"]}"'), key=repr)
        assert ours == theirs, t["name"]


def test_content_columns_null_unless_opted_in(source, parquet_dir, tmp_path, capsys):
    ev = pq.read_table(os.path.join(parquet_dir, "events.parquet"))
    for col in export_arrow.CONTENT_COLUMNS["events"]:
        assert ev.column(col).null_count == ev.num_rows
    assert sqlite_rows(source, "SELECT count(*) FROM events WHERE content_json IS NOT NULL")[0][0] > 0
    full = str(tmp_path / "full")
    code, out, err = cli(capsys, "export", full, "--db", source, "--include-content", "--format", "arrow")
    assert code == 0, err
    assert "content included" in out
    m = json.load(open(os.path.join(full, "manifest.json")))
    assert m["format"] == "arrow" and m["content"] is True
    import pyarrow.ipc as ipc
    with pa.memory_map(os.path.join(full, "events.arrow")) as f:
        events = ipc.open_file(f).read_all()
    got = sorted(zip(events.column("event_id").to_pylist(), events.column("content_json").to_pylist()))
    assert got == sorted(sqlite_rows(source, "SELECT event_id, content_json FROM events"))


def test_content_columns_follow_the_catalog():
    docs = catalog.load_docs()
    content = {(t["name"], c["name"]) for t in docs["tables"] for c in t["columns"]
               if "Content:" in c["meaning"] or "Content," in c["meaning"]}
    ours = {(t, c) for t, cols in export_arrow.CONTENT_COLUMNS.items() for c in cols}
    assert content <= ours
    assert ours - content == {("events", "unknown_json")}


@pytest.mark.parametrize("sql", QUERIES)
def test_datafusion_answers_as_sqlite(source, parquet_dir, capsys, sql):
    want = query_json(capsys, sql, "--db", source)
    assert want  # the queries have answers on this history
    assert query_json(capsys, sql, "--engine", "datafusion", "--db", source) == want
    assert query_json(capsys, sql, "--engine", "datafusion", "--from", parquet_dir) == want
    # the same JSON text too (false == 0 in Python: a boolean printed as false passed above)
    texts = {cli(capsys, "query", "--json", sql, *where)[1]
             for where in (("--db", source), ("--engine", "datafusion", "--from", parquet_dir))}
    assert len(texts) == 1, texts


def test_datafusion_is_read_only(source, parquet_dir, tmp_path, capsys):
    target = tmp_path / "written.csv"
    for sql in (f"COPY (SELECT 1) TO '{target}'", "CREATE TABLE t AS SELECT 1", "INSERT INTO events VALUES (1)",
                "SET datafusion.execution.batch_size = 1", "DROP TABLE events",
                "WITH x AS (SELECT 1) INSERT INTO events SELECT * FROM x",
                f"SELECT 1; COPY (SELECT 1) TO '{target}'",
                "SELECT * FROM '/etc/passwd'", "SELECT * FROM read_csv('/etc/passwd')"):
        for where in (("--db", source), ("--from", parquet_dir)):
            code, out, err = cli(capsys, "query", "--engine", "datafusion", sql, *where)
            assert code == 2 and err.startswith("error[query."), (sql, err)
            assert out == ""
    assert not target.exists()
    # the engine itself refuses, whatever its caller let through
    from attemptdb.errors import AttemptError
    from attemptdb.query import datafusion_engine as engine_datafusion
    for sql in (f"COPY (SELECT 1 AS a) TO '{target}' STORED AS CSV", "CREATE TABLE t AS SELECT 1",
                "SET datafusion.execution.batch_size = 1"):
        with pytest.raises(AttemptError, match="not supported"):
            engine_datafusion.run(sql, directory=parquet_dir)
    assert not target.exists()
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SHOW FAILED ATTEMPTS", "--db", source)
    assert code == 2 and "error[query.engine]" in err
    code, _, err = cli(capsys, "query", "SELECT 1", "--from", parquet_dir, "--db", source)
    assert code == 2 and "--from needs --engine datafusion" in err


def test_export_directory_rules(source, tmp_path, capsys):
    d = tmp_path / "out"
    d.mkdir()
    (d / "mine.txt").write_text("keep me")
    code, _, err = cli(capsys, "export", str(d), "--db", source)
    assert code == 2 and "error[export.exists]" in err and os.listdir(d) == ["mine.txt"]
    assert cli(capsys, "export", str(d), "--db", source, "--force")[0] == 0
    assert (d / "mine.txt").read_text() == "keep me" and (d / "events.parquet").exists()
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = cli(capsys, "export", str(f), "--db", source)
    assert code == 2 and "is a file" in err and f.read_text() == "x"
    code, _, err = cli(capsys, "export", str(tmp_path / "nodb"), "--db", str(tmp_path / "missing.db"))
    assert code == 2 and "error[" in err and not (tmp_path / "nodb" / "manifest.json").exists()


def test_hostile_export_directory(parquet_dir, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SELECT count(*) FROM events", "--from", str(bad))
    assert code == 2 and "error[query.bad_export]" in err
    (bad / "manifest.json").write_text(json.dumps({"format": "parquet", "tables": [
        {"table": "events", "file": "../../../../etc/passwd"}]}))
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SELECT count(*) FROM events", "--from", str(bad))
    assert code == 2 and "unexpected file" in err
    (bad / "manifest.json").write_text(json.dumps({"format": "parquet", "tables": [
        {"table": "events", "file": "events.parquet"}]}))
    (bad / "events.parquet").write_bytes(b"PAR1 not parquet at all")
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SELECT count(*) FROM events", "--from", str(bad))
    assert code == 2 and err.startswith("error[query."), err
    (bad / "manifest.json").write_bytes(b"\xff\xfe")
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SELECT 1 FROM events", "--from", str(bad))
    assert code == 2 and "error[query.bad_export]" in err


def edited_copy(source, tmp_path, sql) -> str:
    """A copy of the module's database, edited in the real sqlite3 shell."""
    import shutil
    db = str(tmp_path / "edited.db")
    shutil.copyfile(source, db)
    sqlite3_shell(db, sql)
    return db


@needs_shell
def test_a_value_of_the_wrong_type_is_a_coded_error(source, tmp_path, capsys):
    db = edited_copy(source, tmp_path, "DROP TRIGGER events_no_update; UPDATE events SET hlc = 'abc' WHERE seq = 3;")
    out = tmp_path / "x"
    code, _, err = cli(capsys, "export", str(out), "--db", db)
    assert code == 2 and "error[export.bad_value]: events.hlc" in err
    assert not (out / "manifest.json").exists()
    assert not [p for p in os.listdir(out) if p.startswith(".attempt-export-")]


# Nothing named attemptdb is published, so `pip install 'attemptdb[arrow]'` cannot work: the hint
# names the extra of a checkout and the packages to inject into a pipx install.
INSTALL_HINT = "from a checkout pip install '.[arrow]'; under pipx: pipx inject attemptdb pyarrow datafusion"


def test_without_pyarrow_a_coded_error(source, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now raises ImportError
    code, _, err = cli(capsys, "export", str(tmp_path / "x"), "--db", source)
    assert code == 2 and "error[export.needs_arrow]" in err and INSTALL_HINT in err
    assert "attemptdb[arrow]" not in err
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SELECT 1", "--db", source)
    assert code == 2 and "error[export.needs_arrow]" in err and INSTALL_HINT in err


def test_without_datafusion_a_coded_error(source, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "datafusion", None)
    code, _, err = cli(capsys, "query", "--engine", "datafusion", "SELECT 1", "--db", source)
    assert code == 2 and "error[query.needs_datafusion]" in err and INSTALL_HINT in err
    assert "attemptdb[arrow]" not in err


def test_the_install_hint_names_the_arrow_extra_of_setup_cfg():
    """`pip install '.[arrow]'` installs what `pipx inject` is told to: the `arrow` extra."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.cfg"))
    extra = [line.split(">")[0].split("=")[0].strip()
             for line in cfg["options.extras_require"]["arrow"].splitlines() if line.strip()]
    assert tuple(extra) == export_arrow.ARROW_EXTRA
    assert export_arrow.INSTALL_ARROW.endswith(INSTALL_HINT)


@needs_shell
def test_a_column_someone_added_is_exported_as_text(source, tmp_path, capsys):
    db = edited_copy(source, tmp_path, "ALTER TABLE events ADD COLUMN mine INTEGER DEFAULT 7;")
    out = tmp_path / "x"
    code, _, err = cli(capsys, "export", str(out), "--db", db)
    assert code == 0, err
    got = pq.read_table(str(out / "events.parquet"), columns=["mine"])
    assert got.schema.field("mine").type == pa.string() and set(got.column("mine").to_pylist()) == {"7"}


def test_datafusion_values_python_has_no_arrow_for_are_text(source, capsys):
    got = query_json(capsys, "SELECT arrow_cast(now(), 'Timestamp(Nanosecond, None)') AS t, "
                     "arrow_cast(1, 'Time64(Nanosecond)') AS c, CAST(1.5 AS DECIMAL(10,2)) AS d",
                     "--engine", "datafusion", "--db", source)
    (t, c, d), = got
    assert t.endswith("Z") and len(t) == 27 and t[10] == "T"  # µs ISO-8601, as every time of the product
    assert (c, d) == ("00:00:00.000000001", "1.50")


def test_datafusion_stops_at_the_time_limit(source):
    from attemptdb.query import datafusion_engine as engine_datafusion
    from attemptdb.query.errors import AQLError
    st = Store.open(source, readonly=True)
    try:
        with pytest.raises(AQLError) as e:
            engine_datafusion.run("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) "
                                  "SELECT count(*) FROM r", conn=st.conn, timeout_s=1.0)
        assert e.value.code == "AQL0501"
        assert engine_datafusion.run("SELECT 1 AS a", conn=st.conn, timeout_s=1.0).rows == [(1,)]
    finally:
        st.close()
    import time
    time.sleep(1.2)  # a limit that was not reached sends nothing later
