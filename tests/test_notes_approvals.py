"""Notes and approvals read back (spec/evidence.md §5, spec/attemptql.md): `attempt note`,
`attempt approve` / `reject` and the Recorder write events; the views `notes` and `approvals`
and AttemptQL's SHOW NOTES / SHOW APPROVALS list them — retracted ones left out, their texts
content (null under metadata_only, behind the readers' content wall and in exports unless
asked), in `attempt query`, plain SQL and the sqlite3 shell alike."""

import json
import os
import re
import subprocess

import apsw
import pytest
from conftest import ROOT, SQLITE3, needs_shell, run_attempt, sqlite3_shell

from attemptdb.query import sqlgen
from attemptdb.query.errors import AQLError
from attemptdb.query.parse import parse
from attemptdb.readers import mcp_server
from attemptdb.store import schema
from attemptdb.store.database import Store

WIDE = {"COLUMNS": "220", "TZ": "UTC"}


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "ATTEMPTDB_SESSION": "", **WIDE}


def attempt(db, env, *args, ok=True):
    p = run_attempt([args[0], "--db", db, *args[1:]], env=env)
    if ok:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def query(db, env, statement):
    """The rows `attempt query --json` prints."""
    p = attempt(db, env, "query", "--json", statement)
    return json.loads(p.stdout)


def recorded_ids(p) -> list:
    """The ids of the note or approval event a command printed (its --json), session events left out."""
    return json.loads(p.stdout)["events"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One file: a note and two verdicts in the named session ci-9, a note and an approval in
    sessions of their own."""
    d = tmp_path_factory.mktemp("notes")
    home = d / "home"
    home.mkdir()
    env = _env(home)
    db = str(d / "attempt.db")
    attempt(db, env, "init")
    attempt(db, env, "note", "flaky test quarantined", "--session", "ci-9")
    attempt(db, env, "approve", "release 1.4.2", "--note", "checked by Ana", "--session", "ci-9")
    attempt(db, env, "reject", "generated SQL migration", "--session", "ci-9")
    attempt(db, env, "approve", "hotfix 7")
    attempt(db, env, "note", "a note of its own")
    return db, env


# --- AttemptQL through the CLI ---------------------------------------------------------------

def test_show_approvals_prints_the_verdict_and_the_subject(recorded):
    db, env = recorded
    text = attempt(db, env, "query", "SHOW APPROVALS").stdout.decode()
    assert "release 1.4.2" in text and "generated SQL migration" in text and "hotfix 7" in text
    assert "checked by Ana" in text and "ci-9" in text
    head = text.splitlines()[0].split()
    assert head[:5] == ["event_id", "observed_at", "session_name", "approved", "subject"]
    rows = query(db, env, "SHOW APPROVALS")
    got = {r["subject"]: (r["approved"], r["note"], r["session_name"]) for r in rows}
    assert got["release 1.4.2"] == (1, "checked by Ana", "ci-9")
    assert got["generated SQL migration"] == (0, None, "ci-9")
    assert got["hotfix 7"][:2] == (1, None) and got["hotfix 7"][2].startswith("approve-")
    for r in rows:
        assert r["evidence"] == [r["event_id"]] and r["confidence"] == 1.0
        assert r["uncertainty"]["reason"] == "deterministic"
        assert r["subject_chars"] == len(r["subject"]) and r["device_id"].startswith("dev_")
        assert r["session_id"].startswith("ses_") and r["project_id"].startswith("prj_")
    assert [r["observed_at"] for r in rows] == sorted((r["observed_at"] for r in rows), reverse=True)


def test_show_approvals_takes_the_filters_and_clauses(recorded):
    db, env = recorded
    subjects = lambda st: [r["subject"] for r in query(db, env, st)]  # noqa: E731
    assert sorted(subjects("SHOW APPROVALS FOR session = 'ci-9'")) == ["generated SQL migration", "release 1.4.2"]
    assert subjects("SHOW APPROVALS FOR status = 'rejected'") == ["generated SQL migration"]
    assert sorted(subjects("SHOW APPROVALS FOR outcome = 'approved' AND session = 'ci-9'")) == ["release 1.4.2"]
    assert len(subjects("SHOW APPROVALS SINCE -1h")) == 3
    assert subjects("SHOW APPROVALS UNTIL '2020-01-01'") == []
    assert subjects("SHOW APPROVALS ORDER BY subject ASC LIMIT 1") == ["generated SQL migration"]
    assert subjects("SHOW APPROVALS WHERE subject LIKE 'release%' AND approved = 1") == ["release 1.4.2"]
    project = query(db, env, "SHOW APPROVALS LIMIT 1")[0]["project_name"]
    assert len(subjects(f"SHOW APPROVALS FOR project = '{project}'")) == 3
    p = attempt(db, env, "query", "SHOW APPROVALS FOR status = 'maybe'", ok=False)
    assert p.returncode == 2 and b"AQL0406" in p.stderr and b"approved, rejected" in p.stderr
    p = attempt(db, env, "query", "SHOW NOTES FOR provider = 'codex'", ok=False)
    assert p.returncode == 2 and b"supported: project, session, since, until" in p.stderr
    p = attempt(db, env, "query", "SHOW APPROVALS INCLUDING RETRACTED")
    assert b"approvals has no retracted rows" in p.stdout


def test_show_notes(recorded):
    db, env = recorded
    rows = query(db, env, "SHOW NOTES")
    assert sorted(r["note"] for r in rows) == ["a note of its own", "flaky test quarantined"]
    ci = query(db, env, "SHOW NOTES FOR session = 'ci-9'")
    assert [(r["note"], r["note_chars"], r["session_name"]) for r in ci] == [("flaky test quarantined", 22, "ci-9")]
    assert query(db, env, "SHOW NOTES SINCE -1h ORDER BY note DESC LIMIT 1")[0]["note"] == "flaky test quarantined"
    text = attempt(db, env, "query", "SHOW NOTES FOR session = 'ci-9'").stdout.decode()
    assert "flaky test quarantined" in text


def test_the_parser_knows_both_targets_and_an_unknown_target_lists_them():
    assert parse("SHOW NOTES").command.target == "notes"
    assert parse("show approvals for session = 'ci-9' since -1d limit 5").command.target == "approvals"
    with pytest.raises(AQLError) as e:
        parse("SHOW VERDICTS")
    assert e.value.code == "AQL0201" and "NOTES, APPROVALS" in str(e.value)


# --- plain SQL, the sqlite3 shell -------------------------------------------------------------

def test_plain_sql_reads_the_views(recorded):
    db, env = recorded
    rows = query(db, env, "SELECT subject, approved FROM approvals ORDER BY subject")
    assert rows == [{"subject": "generated SQL migration", "approved": 0}, {"subject": "hotfix 7", "approved": 1},
                    {"subject": "release 1.4.2", "approved": 1}]
    assert query(db, env, "SELECT count(*) AS n FROM notes") == [{"n": 2}]


@needs_shell
def test_the_sqlite3_shell_reads_them_read_only(recorded):
    db, _ = recorded
    p = sqlite3_shell(db, ".mode list\nSELECT approved, subject FROM approvals ORDER BY subject;\n"
                          "SELECT note FROM notes ORDER BY note;\n")
    assert p.stdout.split("\n")[:5] == ["0|generated SQL migration", "1|hotfix 7", "1|release 1.4.2",
                                        "a note of its own", "flaky test quarantined"]
    ro = subprocess.run([SQLITE3, "-readonly", db, "SELECT count(*) FROM approvals WHERE approved = 1"],
                        capture_output=True, text=True, timeout=60)
    assert ro.returncode == 0 and ro.stdout.strip() == "2", ro.stderr


# --- content --------------------------------------------------------------------------------

def test_the_texts_read_null_behind_the_content_wall(recorded):
    db, _ = recorded
    shown = mcp_server.Reader(db, include_content=True)
    hidden = mcp_server.Reader(db)
    try:
        rows = hidden.call("query", {"statement": "SHOW APPROVALS"})["rows"]
        assert len(rows) == 3 and all(r["subject"] is None and r["note"] is None for r in rows)
        assert sorted(r["approved"] for r in rows) == [0, 1, 1]  # the verdict is metadata
        assert sorted(r["subject_chars"] for r in rows) == [8, 13, 23]
        assert {r["uncertainty"]["reason"] for r in rows} == {"content_unavailable"}
        for statement in ("SELECT subject FROM approvals WHERE subject IS NOT NULL",
                          "SELECT length(note) AS n FROM notes WHERE note IS NOT NULL",
                          "SELECT note FROM approvals WHERE note LIKE 'checked%'",
                          "SHOW NOTES WHERE note IS NOT NULL"):
            assert hidden.call("query", {"statement": statement})["rows"] == [], statement
            assert shown.call("query", {"statement": statement})["rows"], statement
        notes = hidden.call("query", {"statement": "SELECT note, note_chars FROM notes ORDER BY note_chars"})["rows"]
        assert notes == [{"note": None, "note_chars": 17}, {"note": None, "note_chars": 22}]
        rows = shown.call("query", {"statement": "SHOW APPROVALS FOR status = 'approved' AND session = 'ci-9'"})["rows"]
        assert [(r["subject"], r["note"]) for r in rows] == [("release 1.4.2", "checked by Ana")]
        assert rows[0]["uncertainty"]["reason"] == "deterministic"
    finally:
        shown.close()
        hidden.close()


def test_under_metadata_only_only_the_counts_and_the_verdict_are_stored(tmp_path, home):
    db, env = str(tmp_path / "m.db"), _env(home)
    attempt(db, env, "init", "--capture-mode", "metadata_only")
    attempt(db, env, "reject", "SECRETSUBJECT-42", "--note", "SECRETNOTE-42", "--session", "ci-1")
    attempt(db, env, "note", "SECRETNOTE-43", "--session", "ci-1")
    rows = query(db, env, "SHOW APPROVALS")
    assert [(r["approved"], r["subject"], r["subject_chars"], r["note"], r["note_chars"]) for r in rows] == \
        [(0, None, 16, None, 13)]
    assert rows[0]["uncertainty"]["reason"] == "content_unavailable"
    assert [(r["note"], r["note_chars"]) for r in query(db, env, "SELECT * FROM notes")] == [(None, 13)]
    for suffix in ("", "-wal"):
        if os.path.exists(db + suffix):
            data = open(db + suffix, "rb").read()
            assert b"SECRETSUBJECT" not in data and b"SECRETNOTE" not in data


def test_an_export_leaves_the_texts_out_unless_asked(recorded, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="the arrow extra (pyarrow) is part of the test extra")
    db, env = recorded
    for flag, want in (((), None), (("--include-content",), "release 1.4.2")):
        out = str(tmp_path / ("with" if flag else "without"))
        attempt(db, env, "export", out, *flag)
        approvals = pq.read_table(os.path.join(out, "approvals.parquet")).to_pylist()
        notes = pq.read_table(os.path.join(out, "notes.parquet")).to_pylist()
        assert len(approvals) == 3 and len(notes) == 2
        assert sorted(r["approved"] for r in approvals) == [False, True, True]
        ci = [r for r in approvals if r["subject_chars"] == 13][0]
        assert (ci["subject"], ci["note"]) == (want, want and "checked by Ana")
        assert {r["note"] for r in notes} == ({None} if want is None else {"a note of its own", "flaky test quarantined"})
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        nulls = {t["table"]: t["content_columns_null"] for t in manifest["tables"]}
        assert nulls["approvals"] == ([] if flag else ["subject", "note"]) and nulls["notes"] == ([] if flag else ["note"])


# --- retraction -----------------------------------------------------------------------------

def test_a_retracted_approval_and_a_retracted_session_s_notes_disappear(tmp_path, home):
    db, env = str(tmp_path / "r.db"), _env(home)
    attempt(db, env, "init")
    wrong = recorded_ids(attempt(db, env, "approve", "the wrong build", "--session", "rel", "--json"))
    attempt(db, env, "approve", "the right build", "--session", "rel")
    attempt(db, env, "note", "to be forgotten", "--session", "scratch")
    attempt(db, env, "note", "kept", "--session", "rel")
    approval = [e for e in wrong if query(db, env, f"SELECT 1 AS x FROM approvals WHERE event_id = '{e}'")]
    assert len(approval) == 1
    assert len(query(db, env, "SHOW APPROVALS")) == 2
    attempt(db, env, "retract", "--event", approval[0], "--reason", "mistaken_import", "--yes")
    assert [r["subject"] for r in query(db, env, "SHOW APPROVALS")] == ["the right build"]
    assert query(db, env, "SELECT subject FROM approvals") == [{"subject": "the right build"}]
    assert query(db, env, f"SELECT retracted FROM events WHERE event_id = '{approval[0]}'") == [{"retracted": 1}]
    scratch = query(db, env, "SHOW NOTES FOR session = 'scratch'")[0]["session_id"]
    attempt(db, env, "retract", "--session", scratch, "--reason", "test", "--yes")
    assert [r["note"] for r in query(db, env, "SHOW NOTES")] == ["kept"]
    assert json.loads(attempt(db, env, "reproject", "--check", "--json").stdout)["clean"] is True


def test_the_retraction_preview_counts_the_notes_and_approvals_it_hides(tmp_path, home):
    """`attempt retract` without --yes (and --dry-run) shows what leaves each public table:
    the notes and approvals views too, not only sessions, turns, attempts and the like."""
    db, env = str(tmp_path / "p.db"), _env(home)
    attempt(db, env, "init")
    attempt(db, env, "note", "to be forgotten", "--session", "scratch")
    attempt(db, env, "approve", "build 7", "--session", "scratch")
    attempt(db, env, "note", "kept", "--session", "rel")
    scratch = query(db, env, "SHOW NOTES FOR session = 'scratch'")[0]["session_id"]
    p = attempt(db, env, "retract", "--session", scratch, "--reason", "test", "--dry-run", "--json")
    counts = json.loads(p.stdout)["counts"]
    assert counts["notes"] == {"before": 2, "after": 1} and counts["approvals"] == {"before": 1, "after": 0}, counts
    p = attempt(db, env, "retract", "--session", scratch, "--reason", "test", ok=False)  # no terminal: refused
    assert p.returncode == 1 and b"error[retract.unconfirmed]" in p.stderr, p.stderr
    rows = [ln.split() for ln in p.stdout.decode().splitlines()]
    assert ["notes", "2", "1"] in rows and ["approvals", "1", "0"] in rows, p.stdout.decode()
    one = [e for e in recorded_ids(attempt(db, env, "approve", "build 8", "--session", "rel", "--json"))
           if query(db, env, f"SELECT 1 AS x FROM approvals WHERE event_id = '{e}'")]
    counts = json.loads(attempt(db, env, "retract", "--event", one[0], "--reason", "test", "--dry-run",
                                "--json").stdout)["counts"]
    assert counts["approvals"] == {"before": 2, "after": 1} and "notes" not in counts, counts
    assert len(query(db, env, "SHOW APPROVALS")) == 2  # a preview writes nothing


# --- the Python Recorder, the schema ---------------------------------------------------------

def test_the_recorder_s_notes_and_approvals_are_read_back(tmp_path, home):
    import attemptdb
    from attemptdb.query.read import rows
    db = str(tmp_path / "rec.db")
    with attemptdb.Recorder(title="nightly", session="nightly-12", db=db, cwd=str(tmp_path)) as rec:
        rec.note("deployed to staging")
        rec.approve("release 2.0", note="ok by CI")
    st = Store.open(db, readonly=True)
    try:
        got = rows(st.conn, "SELECT session_name, approved, subject, note FROM approvals")
        assert got == [{"session_name": "nightly-12", "approved": 1, "subject": "release 2.0", "note": "ok by CI"}]
        assert rows(st.conn, "SELECT session_name, note FROM notes") == [
            {"session_name": "nightly-12", "note": "deployed to staging"}]
    finally:
        st.close()


def test_both_views_read_their_partial_index_never_the_log():
    conn = apsw.Connection(":memory:")
    schema.build(conn, schema.latest())
    for statement in ("SELECT * FROM notes ORDER BY observed_at DESC LIMIT 5",
                      "SELECT * FROM approvals WHERE approved = 0",
                      "SELECT count(*) FROM approvals WHERE observed_at >= '2026-01-01'"):
        plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + statement))
        assert "USING INDEX events_notes" in plan and "SCAN" not in plan, (statement, plan)


def test_a_file_from_before_0020_gets_the_views_and_the_index_when_opened(tmp_path, home):
    db, env = str(tmp_path / "old.db"), _env(home)
    attempt(db, env, "init")
    attempt(db, env, "approve", "old work", "--session", "ci-old")
    conn = apsw.Connection(db)
    conn.execute("DROP VIEW approvals; DROP VIEW notes; DROP INDEX events_notes; PRAGMA user_version = 19")
    conn.close()
    st = Store.open(db)
    try:
        assert st.user_version() == schema.latest() >= 20
        assert st.conn.execute("SELECT subject, approved FROM approvals").fetchall() == [("old work", 1)]
        assert st.conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'events_notes'").fetchone() == (1,)
    finally:
        st.close()
    assert b"ok" in attempt(db, env, "verify").stdout


def test_spec_attemptql_lists_every_show_target_with_its_filters():
    """spec/attemptql.md's table of targets is sqlgen's TARGETS and FILTERS, row for row."""
    text = open(os.path.join(ROOT, "spec", "attemptql.md"), encoding="utf-8").read()
    documented = re.findall(r"^\| `SHOW ([A-Z ]+)` \| `(\w+)` \| (\S+) \| ([^|]+) \| ([^|]+) \|$", text, re.M)
    want = []
    for key, t in sqlgen.TARGETS.items():
        keys = ", ".join(f"`{k}`" for k in sqlgen.FILTER_KEYS if k in sqlgen.FILTERS.get(key, {})) or "—"
        want.append((t.name, t.table, f"`{t.time}`" if t.time else "—", keys,
                     "hidden unless `INCLUDING RETRACTED`" if t.retracted else "none"))
    assert [tuple(x.strip() for x in row) for row in documented] == want
