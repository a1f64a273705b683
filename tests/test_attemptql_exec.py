"""Every AttemptQL statement run against the scenario database (tests/test_attemptql_scenario.py):
the RFC §8 examples, the catalog recipes, ids, times, retraction, evidence and uncertainty."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_attemptql_scenario import A1, A2, A3, A4, AMB1, NOW, S1, S2, S3, S4, S5, T1, build, open_readonly

from attemptdb.projections import catalog
from attemptdb.query import execute, sqltext, state
from attemptdb.query import result as query_result
from attemptdb.query.errors import CODES, AQLError

pytestmark = pytest.mark.usefixtures("private_grammar_cache")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("aql") / "scenario.db")
    build(path)
    conn, gate = open_readonly(path)
    yield conn, gate
    conn.close()


def run(db, text, **kw):
    conn, gate = db
    kw.setdefault("now_us", NOW)
    return execute.run(conn, text, gate=gate, **kw)


def fails(db, text, **kw) -> AQLError:
    with pytest.raises(AQLError) as e:
        run(db, text, **kw)
    return e.value


def col(result, name):
    i = result.columns.index(name)
    return [r[i] for r in result.rows]


def assert_evidence_contract(result):
    assert "evidence" in result.columns and "uncertainty" in result.columns
    for d in result.dicts():
        u = d["uncertainty"]
        assert set(u) == {"confidence", "reason", "note"}
        assert u["reason"] in query_result.REASONS
        assert isinstance(d["evidence"], list)
        if u["reason"] not in ("insufficient_evidence", "state_mismatch", "depth_limit"):
            assert d["evidence"], d


# --- RFC §8 examples, with real ids -------------------------------------------------------

RFC_EXAMPLES = [
    ("SHOW FAILED ATTEMPTS FOR project = 'widget' SINCE '-7d';",
     ["attempt_id", "outcome", "superseded_by", "paths", "started_at", "evidence", "uncertainty"]),
    ("WHY session {S2} STATUS BLOCKED;",
     ["inference_id", "edge_type", "from_type", "from_id", "at", "evidence", "uncertainty"]),
    ("TRACE attempt {A2} CAUSES;",
     ["depth", "edge_type", "from_type", "from_id", "to_type", "to_id", "at", "evidence", "uncertainty"]),
    ("STATE project AT '2026-08-28T11:50:00Z';",
     ["subject_type", "subject_id", "phase", "status", "attempts", "failed", "evidence", "uncertainty"]),
    ("SHOW HANDOFFS BETWEEN agent = 'claude_code' AND agent = 'cursor';",
     ["from_session", "to_session", "from_provider", "to_provider", "handoff_at", "shared_paths", "evidence",
      "uncertainty"]),
    ("SHOW EVIDENCE FOR {A1};", ["event_id", "kind", "observed_at", "evidence", "uncertainty"]),
    ("DIFF STATE '2026-08-28T11:00:00Z' '2026-08-28T11:58:00Z';",
     ["subject_type", "subject_id", "change", "field", "before", "after", "evidence", "uncertainty"]),
]


def fill(text):
    return text.format(S1=S1, S2=S2, A1=A1, A2=A2, A3=A3, session=S1, attempt=A2)


@pytest.mark.parametrize("text, columns", RFC_EXAMPLES)
def test_rfc_examples_return_rows_with_the_rfc_columns(db, text, columns):
    r = run(db, fill(text))
    assert r.rows, text
    assert set(columns) <= set(r.columns)
    assert_evidence_contract(r)


def test_a_file_without_the_unit_tables_says_so(db):
    """This hand-built file has the catalog's session-level tables only (a file from before work
    units existed): statements about units answer AQL0408, never a wrong answer. Real files
    have them: tests/test_attemptql_units.py."""
    e = fails(db, "WHY work_unit wu_01a03e00 STATUS BLOCKED;")
    assert e.code == "AQL0408" and "not in this file" in e.message
    for text in ("SHOW WORK UNITS", "SHOW DECISIONS", "SHOW CONFLICTS", "STATE work_unit wu_01a03e00 AT NOW",
                 "SELECT * FROM work_units", "SELECT conflict_id FROM conflicts", "DESCRIBE decisions"):
        assert fails(db, text).code == "AQL0408", text


def test_catalog_recipes_run(db):
    docs = catalog.load_docs()
    for r in docs["recipes"]:
        text = fill(r["statement"].replace("{session}", "{S1}").replace("{attempt}", "{A2}"))
        if "work_units" in text or "conflicts" in text:  # not in this file (see above)
            assert fails(db, text).code == "AQL0408"
            continue
        res = run(db, text)
        assert res.columns, text
        if res.language == "attemptql" and res.kind != "explanation" or text.startswith(("SHOW", "WHY", "TRACE")):
            assert_evidence_contract(res)


# --- SHOW ---------------------------------------------------------------------------------------

def test_show_failed_is_failed_only_and_hides_retracted(db):
    r = run(db, "SHOW FAILED ATTEMPTS")
    assert set(col(r, "outcome")) == {"failed"}
    assert A1 not in col(r, "attempt_id")  # superseded is a retry, not a failure
    assert any("1 retracted row(s) hidden" in n for n in r.notes)
    r = run(db, "SHOW FAILED ATTEMPTS INCLUDING RETRACTED")
    assert 1 in col(r, "retracted")
    assert any("including 1 retracted" in n for n in r.notes)


def test_show_superseded_joins_the_successor_outcome(db):
    r = run(db, "SHOW SUPERSEDED ATTEMPTS")
    d = {x["attempt_id"]: x for x in r.dicts()}
    assert d[A1]["superseded_by"] == A2 and d[A1]["successor_outcome"] == "failed"


def _ids(db, where):
    return set(col(run(db, f"SHOW ATTEMPTS WHERE {where} LIMIT 1000"), "attempt_id"))


@pytest.mark.parametrize("a, b, c", [
    ("outcome = 'failed'", "provider = 'codex'", "outcome = 'succeeded'"),
    ("outcome = 'succeeded'", "provider = 'cursor'", "outcome = 'failed'"),  # both sides have rows
])
def test_where_and_binds_tighter_than_or(db, a, b, c):
    """`a AND b OR c` is `(a AND b) OR c`, whichever side the AND is on: the rows of the two
    queries run apart, and not those of `a OR b OR c` (which the data here tells apart)."""
    union = _ids(db, f"{a} AND {b}") | _ids(db, c)
    assert union
    assert union != _ids(db, f"({a}) OR ({b}) OR ({c})") and union != _ids(db, f"{a} AND ({b} OR {c})")
    assert _ids(db, f"{a} AND {b} OR {c}") == union
    assert _ids(db, f"{c} OR {a} AND {b}") == union
    assert _ids(db, f"NOT {c} AND {a} AND {b} OR {c}") == union


def test_where_is_one_expression_anded_with_the_retraction_filter(db):
    r = run(db, "SHOW SESSIONS WHERE retracted = 1 OR 1 = 1")
    assert S4 not in col(r, "session_id")
    r = run(db, "SHOW ATTEMPTS WHERE outcome IN ('failed', 'superseded') AND json_array_length(paths) >= 1")
    assert set(col(r, "outcome")) == {"failed", "superseded"}
    assert fails(db, "SHOW ATTEMPTS WHERE nope = 1").code == "AQL0405"
    assert fails(db, "SHOW ATTEMPTS WHERE count(*) > 1").code == "AQL0412"
    assert fails(db, "SHOW ATTEMPTS WHERE load_extension('x') IS NULL").code == "AQL0412"
    assert fails(db, "SHOW ATTEMPTS WHERE x IN (SELECT attempt_id FROM attempts)").code == "AQL0207"


def test_filters_and_vocabulary(db):
    assert col(run(db, "SHOW ATTEMPTS FOR provider = 'codex'"), "attempt_id") == [A4]
    assert set(col(run(db, "SHOW SESSIONS FOR agent = 'Claude Code'"), "session_id")) == {S1}
    assert col(run(db, "SHOW ATTEMPTS FOR path = 'crates/*/src/*.rs'"), "outcome") == ["succeeded"]
    assert run(db, "SHOW TOOL CALLS FOR tool = 'shell'").rows
    assert col(run(db, "SHOW SESSIONS FOR status = stale"), "session_id") == [S5]
    assert col(run(db, f"SHOW HANDOFFS FOR session = '{S3}'"), "from_session") == [S3]
    assert col(run(db, "SHOW SIGNALS FOR status = pending"), "session_id") == [S2]
    assert fails(db, "SHOW ATTEMPTS FOR outcome = 'exploded'").code == "AQL0406"
    assert fails(db, "SHOW ATTEMPTS FOR colour = 'red'").code == "AQL0404"
    assert fails(db, "SHOW EDGES FOR project = 'widget'").code == "AQL0404"
    assert fails(db, "SHOW EDGES SINCE '-1d'").code == "AQL0404"
    assert fails(db, "SHOW ATTEMPTS FOR project = 'nowhere'").code == "AQL0303"
    assert fails(db, "SHOW ATTEMPTS FOR provider = 'notanagent'").code == "AQL0306"
    assert fails(db, "SHOW HANDOFFS BETWEEN agent = 'codex' AND agent = 'codex'").code == "AQL0402"


def test_provider_vocabulary_is_the_providers_sessions_have(db):
    """FOR provider names the providers SHOW prints: the agents' and `attempt` (attempt run,
    note, approve), in every spelling a user sees (hook id, display name); `attemptdb` (only
    corrections and retractions have it) is refused instead of matching nothing."""
    from attemptdb.adapters import registry
    from attemptdb.evidence import record
    from attemptdb.query.resolve import providers
    assert providers() == registry.PROVIDERS + (record.PROVIDER,) and "attemptdb" not in providers()
    e = fails(db, "SHOW ATTEMPTS FOR provider = 'nope'")
    assert e.code == "AQL0306" and e.message.endswith("providers: claude_code, codex, cursor, gemini_cli, attempt")
    assert e.to_json()["choices"] == list(providers()) and "nope" not in e.message
    assert all(len(line) <= 80 for line in str(e).split("\n"))
    assert "did you mean `codex`?" in fails(db, "SHOW SESSIONS FOR provider = 'codx'").message
    for text in ("SHOW ATTEMPTS FOR provider = 'attemptdb'", "SHOW TURNS FOR agent = 'AttemptDB'",
                 "STATE agent 'attemptdb' AT NOW"):
        e = fails(db, text)
        assert e.code == "AQL0306" and "corrections and retractions" in e.message, text
    r = run(db, "SHOW ATTEMPTS FOR provider = 'attempt'")  # this file has no attempt run session: none, no error
    assert r.rows == [] and any("no attempts matched" in n for n in r.notes)
    assert run(db, "SHOW SESSIONS FOR agent = 'attempt'").rows == []
    claude = set(col(run(db, "SHOW SESSIONS FOR provider = 'claude_code'"), "session_id"))
    assert claude == {S1}
    for spelling in ("claude-code", "Claude Code", "CLAUDE_CODE", "claude"):
        assert set(col(run(db, f"SHOW SESSIONS FOR provider = '{spelling}'"), "session_id")) == claude, spelling
    assert col(run(db, "SHOW ATTEMPTS FOR provider = 'gemini-cli'"), "attempt_id") == \
        col(run(db, "SHOW ATTEMPTS FOR provider = 'gemini_cli'"), "attempt_id")


def test_an_id_example_is_of_the_kind_typed(db):
    for text, kind, example in (("WHY 'ses_zzzz' BLOCKED", "session", "ses_01a04762"),
                                ("SHOW EVIDENCE FOR 'tc_zzzz'", "tool call", "tc_01a04762"),
                                ("TRACE 'trn_zz-zz' CAUSES", "turn", "trn_01a04762"),
                                ("WHY attempt 'att_zz' STATUS FAILED", "attempt", "att_01a04762"),
                                ("WHY session 'ses_zz' STATUS BLOCKED", "session", "ses_01a04762")):
        e = fails(db, text)
        assert e.code == "AQL0105" and e.message.startswith(f"malformed {kind} id;") and f"(e.g. {example})" in e.message
    e = fails(db, "WHY 'foo_12345678' BLOCKED")
    assert e.code == "AQL0105" and e.message.endswith("id prefixes: att_, dec_, ev_, ses_, spn_, tc_, trn_, wu_")


def test_messages_use_the_right_article(db):
    cases = {
        f"WHY attempt {A1} STATUS BLOCKED": "not an attempt; for an attempt ask STATUS FAILED",
        f"WHY '{A1}' BLOCKED": "not an attempt; for an attempt ask STATUS FAILED",
        "WHY event ev_00000001 STATUS FAILED": "FAILED applies to an attempt, not an event",
        f"WHY turn {T1} STATUS FAILED": "FAILED applies to an attempt, not a turn",
        f"WHY '{S1}' STATUS FAILED": "not a session; for a session ask STATUS BLOCKED",
        "WHY agent 'codex' STATUS FAILED": "for an agent ask STATUS BLOCKED",
        f"STATE attempt {A1} AT NOW": "not an attempt",
        f"WHY session '{A1}' STATUS BLOCKED": "expected a session id (ses_…), got an attempt id",
        f"WHY attempt '{S1}' STATUS FAILED": "expected an attempt id (att_…), got a session id",
        "TRACE agent 'codex' CAUSES": "not an agent",
    }
    import re
    for text, fragment in cases.items():
        e = fails(db, text)
        assert fragment in e.message, (text, e.message)
        assert not re.search(r"\ba [aeio]", e.message + " " + (e.label or "")), e.message


WIDE_ERRORS = ["SHOW ATTEMPTS ORDER BY nope", "SHOW ATTEMPTS WHERE outcom = 1", "SHOW TOOL CALLS WHERE foo(1)",
               "SHOW ATTEMPTS FOR colour = 'red'", "SHOW NOTES FOR provider = 'codex'", "DESCRIBE attempt",
               "SHOW ATTEMPTS FOR outcome = 'exploded'", "SHOW HANDOFFS FOR agent = 'agt_00000001'",
               "SHOW SUPERSEDED ATTEMPTS ORDER BY successor", "SHOW ATTEMPTS FOR provider = 'agt_00000001'"]


@pytest.mark.parametrize("text", WIDE_ERRORS)
def test_an_error_listing_many_alternatives_fits_80_columns(db, text):
    """The lists of AQL0405 (a target's columns), AQL0404, AQL0412, AQL0307, AQL0406 and
    AQL0306 go under the statement in lines of at most 80 columns; message and to_json keep
    them whole on one line."""
    e = fails(db, text)
    lines = str(e).split("\n")
    assert all(len(line) <= 80 for line in lines), lines
    name, items = e.listing
    assert e.message.endswith(f"{name}: {', '.join(items)}") and e.to_json()["choices"] == list(items)
    if len(f"error[{e.code}]: {e.message}") > 80:
        assert lines[0] == f"error[{e.code}]: {e.brief}" and lines[5].startswith(f"   = {name}: ")
        assert " ".join(" ".join(lines[5:]).replace(",", "").split()) == f"= {name}: " + " ".join(items)


def test_a_near_name_is_suggested(db):
    assert fails(db, "SHOW ATTEMPTS ORDER BY outcom").brief == "unknown column; did you mean `outcome`?"
    assert fails(db, "SHOW ATTEMPTS WHERE failure_clas IS NULL").brief == \
        "unknown column; did you mean `failure_class`?"
    assert fails(db, "SHOW ATTEMPTS FOR projct = 'x'").brief == "unknown filter; did you mean `project`?"
    assert fails(db, "SHOW ATTEMPTS FOR outcome = 'faild'").brief == "unknown outcome; did you mean `failed`?"
    assert fails(db, "DESCRIBE sesions").brief == "unknown table; did you mean `sessions`?"


def test_order_limit_and_notes(db):
    r = run(db, "SHOW ATTEMPTS ORDER BY started_at ASC LIMIT 2")
    assert len(r.rows) == 2 and col(r, "started_at") == sorted(col(r, "started_at"))
    assert any("showing the first 2 rows" in n for n in r.notes)
    assert fails(db, "SHOW ATTEMPTS ORDER BY nope").code == "AQL0405"
    assert fails(db, "SHOW ATTEMPTS LIMIT 0").code == "AQL0410"
    r = run(db, "SHOW COMMITS FOR provider = 'cursor'")
    assert r.kind == "empty" and any("no commits matched" in n for n in r.notes)
    r = run(db, "SHOW CORRECTIONS INCLUDING RETRACTED")
    assert any("no effect" in n for n in r.notes)


def test_content_unavailable_and_corrected_reasons(db):
    d = {x["attempt_id"]: x["uncertainty"]["reason"] for x in run(db, "SHOW ATTEMPTS").dicts()}
    assert d[A3] == "corrected"
    assert d[A2] == "content_unavailable"
    assert d[A4] == "heuristic"


def test_show_evidence_for_each_kind(db):
    r = run(db, f"SHOW EVIDENCE FOR attempt {A1}")
    assert col(r, "observed_at") == sorted(col(r, "observed_at")) and len(r.rows) == 2
    assert all(u["reason"] == "deterministic" for u in col(r, "uncertainty"))
    assert len(run(db, f"SHOW EVIDENCE FOR session {S1}").rows) >= 5
    assert run(db, "SHOW EVIDENCE FOR turn " + S1.replace("ses_", "trn_")).rows
    assert fails(db, f"SHOW EVIDENCE FOR session {S4}").code == "AQL0301"  # retracted: not a subject


# --- ids and times ------------------------------------------------------------------------------

def test_id_forms(db):
    bare = A1[4:]
    for form in (A1, bare, A1[:12], A1[:4] + bare.replace("-", "")[:10], A1.upper()):
        r = run(db, f"WHY attempt '{form}' STATUS FAILED")
        assert col(r, "subject_id") == [A1], form
    assert run(db, f"TRACE {A1[:12]} CAUSES").rows


def test_id_errors(db):
    e = fails(db, "WHY attempt att_abcdef01 STATUS FAILED")
    assert e.code == "AQL0302" and AMB1 in e.message
    assert fails(db, "WHY attempt att_0000 STATUS FAILED").code == "AQL0305"
    assert fails(db, "WHY attempt att_zzzzzzzzzz STATUS FAILED").code == "AQL0105"
    assert fails(db, f"WHY attempt {S1} STATUS FAILED").code == "AQL0304"
    assert fails(db, "WHY attempt att_99999999 STATUS FAILED").code == "AQL0301"
    assert fails(db, "WHY attempt xyz_12345678 STATUS FAILED").code == "AQL0105"


def test_times(db):
    assert run(db, "SHOW ATTEMPTS SINCE '-30m'").rows
    assert not run(db, "SHOW ATTEMPTS SINCE '-28m' UNTIL '-27m'").rows
    assert run(db, "SHOW ATTEMPTS SINCE 2026-08-28 UNTIL today").rows == []
    assert run(db, "SHOW ATTEMPTS SINCE yesterday").rows
    assert fails(db, "SHOW ATTEMPTS SINCE '-5x'").code == "AQL0103"
    assert fails(db, "SHOW ATTEMPTS SINCE 'last tuesday'").code == "AQL0104"
    assert fails(db, "DIFF STATE NOW '-1d'").code == "AQL0403"


# --- WHY / TRACE / STATE / DIFF / WHAT IS ----------------------------------------------------------

def test_why_blocked_by_signal_and_by_repeated_failure(db):
    r = run(db, f"WHY session {S2} STATUS BLOCKED")
    assert col(r, "edge_type") == ["blocked"] and col(r, "kind") == ["permission_requested"]
    r = run(db, f"WHY session {S1} STATUS BLOCKED")
    assert set(col(r, "inference_id")) == {A2, A3}
    r = run(db, "WHY project 'acme/widget' STATUS BLOCKED")
    assert set(col(r, "subject_id")) == {S1, S2}


def test_why_state_mismatch_and_insufficient_evidence(db):
    r = run(db, f"WHY session {S3} STATUS BLOCKED")
    assert [u["reason"] for u in col(r, "uncertainty")] == ["state_mismatch"]
    assert "closed" in col(r, "claim")[0]
    r = run(db, f"WHY attempt {A4} STATUS FAILED")
    assert col(r, "uncertainty")[0]["reason"] == "state_mismatch"
    r = run(db, "WHY project 'other' STATUS BLOCKED")
    assert col(r, "uncertainty")[0]["reason"] == "insufficient_evidence"
    assert fails(db, f"WHY session {S1} STATUS EXPLODED").code == "AQL0401"
    assert fails(db, f"WHY session {S1} STATUS ACTIVE").code == "AQL0407"
    assert fails(db, f"WHY session {S1} STATUS FAILED").code == "AQL0411"
    assert fails(db, f"WHY attempt {A1} STATUS BLOCKED").code == "AQL0411"


def test_why_failed_names_the_failing_event_and_the_correction(db):
    d = run(db, f"WHY {A3} FAILED").dicts()[0]
    assert d["from_type"] == "event" and d["kind"] == "tool_call_failed"
    assert d["corrected_by"] and d["uncertainty"]["reason"] == "corrected"
    assert d["corrected_by"] in d["evidence"]


def test_trace_cuts_cycles_and_marks_the_depth_limit(db):
    r = run(db, f"TRACE attempt {A3} CAUSES DEPTH 10")
    pairs = [(x["edge_type"], x["from_id"], x["to_id"]) for x in r.dicts()]
    assert len(pairs) == len(set(pairs))                  # every edge once
    assert ("contradicted", A2, A1) in pairs             # the cycle-closing edge is shown once
    assert all(x["edge_type"] != "evidence_for" and x["edge_type"] != "parent_of" for x in r.dicts())
    assert col(r, "depth") == sorted(col(r, "depth"))
    r = run(db, f"TRACE attempt {A3} CAUSES DEPTH 1")
    last = r.dicts()[-1]
    assert last["uncertainty"]["reason"] == "depth_limit" and last["evidence"]
    r = run(db, f"TRACE attempt {A1} CAUSES DIRECTION DOWN")
    assert (A1, A2) in [(x["from_id"], x["to_id"]) for x in r.dicts()]
    r = run(db, f"TRACE attempt {A4} CAUSES")
    assert col(r, "uncertainty")[0]["reason"] == "insufficient_evidence"
    assert fails(db, f"TRACE {A1} CAUSES DEPTH 1000").code == "AQL0410"
    assert fails(db, "TRACE project CAUSES").code == "AQL0409"


def test_state_at_a_time_masks_later_knowledge(db):
    r = run(db, "STATE project 'widget' AT '2026-08-28T11:35:00Z'")
    d = {x["subject_id"]: x for x in r.dicts()}
    assert set(d) == {S1}  # S2 had not started yet
    assert d[S1]["last_attempt"] == A3 and d[S1]["last_attempt_outcome"] == "in_progress"
    assert d[S1]["attempts"] == 5 and d[S1]["failed"] == 2
    assert_evidence_contract(r)
    # A1 ended 11:15 and is superseded by A2, which started 11:16: in between it reads as failed
    r = run(db, f"STATE session {S1} AT '2026-08-28T11:15:30Z'")
    assert col(r, "failed") == [1] and col(r, "attempts") == [3]
    r = run(db, "STATE project AT '2026-08-28T11:50:00Z'")
    assert {x["subject_id"]: x["blocked"] for x in r.dicts()} == {S1: 0, S2: 1}
    r = run(db, "STATE project AT '2026-01-01'")
    assert col(r, "uncertainty")[0]["reason"] == "insufficient_evidence"
    r = run(db, f"STATE session {S5} AT NOW")
    assert col(r, "status") == ["stale"]
    assert fails(db, f"STATE attempt {A1} AT NOW").code == "AQL0409"
    assert fails(db, "STATE project AT NOW AS KNOWN AT '-1d'").code == "AQL0407"


def test_diff_state_rows_per_changed_field(db):
    r = run(db, "DIFF STATE '2026-08-28T11:35:00Z' '2026-08-28T11:58:00Z'")
    changes = {(x["subject_id"], x["field"]): (x["before"], x["after"]) for x in r.dicts()}
    assert changes[(S1, "last_attempt_outcome")] == ("in_progress", "failed")
    assert changes[(S2, "presence")][0] == "absent"   # S2 started in between: added
    r2 = run(db, "DIFF STATE '2026-08-28T11:45:00Z' '2026-08-28T11:58:00Z'")
    changes = {(x["subject_id"], x["field"]): (x["before"], x["after"]) for x in r2.dicts()}
    assert changes[(S2, "blocked")] == ("0", "1")
    assert all(x["change"] in ("added", "removed", "changed") for x in r.dicts())
    assert_evidence_contract(r)


def test_what_is_doing_now(db):
    r = run(db, "WHAT IS project DOING NOW")
    assert set(col(r, "subject_id")) == {S1, S2}
    assert state.NO_UNITS_NOTE in r.notes
    assert col(run(db, f"WHAT IS attempt {A2} DOING NOW"), "subject_id") == [S1]
    assert col(run(db, "WHAT IS agent 'codex' DOING NOW"), "subject_id") == [S2]
    r = run(db, "WHAT IS project DOING NOW", now_us=NOW + 30 * 24 * 3600 * 1_000_000)
    u = col(r, "uncertainty")[0]
    assert u["reason"] == "insufficient_evidence" and "last event" in u["note"]


def test_explain_shows_ast_sql_plan_and_indexes(db):
    r = run(db, "EXPLAIN SHOW FAILED ATTEMPTS FOR project = 'widget'")
    steps = col(r, "step")
    for s in ("statement", "ast", "sql", "parameters", "plan", "indexes"):
        assert s in steps
    sql = col(r, "detail")[steps.index("sql")]
    assert "a.retracted = 0" in sql and "outcome = 'failed'" in sql
    assert "widget" not in sql  # values are bound, never spliced
    r2 = run(db, "SHOW FAILED ATTEMPTS", explain=True)
    assert r2.kind == "explanation" and "plan" in col(r2, "step")
    assert "plan" in col(run(db, f"EXPLAIN TRACE {A1} CAUSES"), "step")


def test_explain_of_sql_shows_the_plan_text(db):
    """SQLite answers EXPLAIN QUERY PLAN with (id, parent, notused, detail): the detail column
    is the plan's text, never the unused number."""
    for r in (run(db, "EXPLAIN SELECT count(*) FROM events WHERE kind = 'tool_call_failed'"),
              run(db, "SELECT count(*) FROM events", explain=True)):
        assert r.kind == "explanation" and r.columns == ["id", "parent", "detail"]
        assert all(len(row) == 3 for row in r.rows)
        assert any(isinstance(d, str) and "events" in d for d in col(r, "detail")), r.rows


# --- plain SQL, DESCRIBE, SHOW TABLES, table functions -------------------------------------------

def test_sql_describe_tables(db):
    r = run(db, "SELECT kind, count(*) AS events FROM events WHERE retracted = false GROUP BY kind ORDER BY events DESC")
    assert r.columns == ["kind", "events"] and r.language == "sql"
    r = run(db, "VALUES (1), (2)")
    assert len(r.rows) == 2
    assert "outcome" in col(run(db, "DESCRIBE attempts"), "column")
    assert fails(db, "DESCRIBE nope").code == "AQL0307"
    r = run(db, "SHOW TABLES")
    names = col(r, "table")
    assert "attempts" in names and "meta" not in names
    # the query surface is the catalog's tables, each with its layer
    documented = [t["name"] for t in catalog.load_docs()["tables"]]
    assert names == [n for n in documented if n in names] and "session_facts" not in names
    assert dict(zip(names, col(r, "layer")))["events"] == "fact"
    assert fails(db, "SELECT * FROM nope").code == "AQL0505"


def test_table_functions(db):
    r = run(db, f"SELECT depth, edge_type FROM attempt_trace('{A3}', 2, 'UP')")
    assert r.rows and max(col(r, "depth")) <= 3
    r = run(db, "SELECT subject_id FROM state_at('2026-08-28T11:50:00Z') ORDER BY subject_id")
    assert col(r, "subject_id") == sorted([S1, S2])
    r = run(db, f"SELECT e.kind FROM evidence('{A1}') e JOIN events x ON x.event_id = e.event_id")
    assert col(r, "kind") == ["prompt_submitted", "tool_call_failed"]
    assert fails(db, "SELECT * FROM attempt_trace('att_nope')").code.startswith("AQL")


# --- fuzz through the whole engine ------------------------------------------------------------------

STATEMENTS = [fill(t) for t, _ in RFC_EXAMPLES] + [
    "WHAT IS project DOING NOW", f"WHY {A3} FAILED", "SHOW SESSIONS WHERE state = 'open' ORDER BY started_at",
    "SELECT count(*) FROM attempts", f"SHOW TOOL CALLS FOR session = '{S1}' AND tool = 'Bash' LIMIT 3",
]
PIECES = ["'", ";", " LIMIT 0", " WHERE x", " FOR project = 'q'", " DEPTH 999", "att_", "ses_1", " AND ",
          " INCLUDING RETRACTED", " AT '-9x'", "(", ")", "--", "\n", " SINCE 'now'", " ORDER BY 1", "DROP",
          "\x00", "\udcff"]


@pytest.mark.parametrize("text,code", [
    ("SELECT count(*) \x00 FROM events", "AQL0106"),
    ("SHOW FAILED ATTEMPTS FOR path = 'a\x00b'", "AQL0106"),
    ("SELECT '\udcff'", "AQL0108"),
    ("SHOW FAILED ATTEMPTS FOR path = '\ud800'", "AQL0108"),
])
def test_characters_sqlite_cannot_take_are_coded_errors(db, text, code):
    """NUL ends a statement early in SQLite and a lone surrogate (argv bytes that were not
    UTF-8) cannot be encoded at all: both are refused before anything runs."""
    e = fails(db, text)
    assert e.code == code
    e.render()


@settings(max_examples=int(os.environ.get("AQL_FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(STATEMENTS), st.lists(st.tuples(st.integers(0, 300), st.sampled_from(PIECES),
                                                        st.booleans()), max_size=3))
def test_fuzz_engine_yields_only_coded_errors(db, base, edits):
    text = base
    for at, piece, delete in edits:
        i = at % (len(text) + 1)
        text = text[:i] + text[i + len(piece):] if delete else text[:i] + piece + text[i:]
    try:
        r = run(db, text)
        assert isinstance(r.rows, list)
    except AQLError as e:
        assert e.code in CODES
        e.render()


def test_a_claim_without_evidence_is_withheld_and_reported():
    u = query_result.uncertainty
    r = query_result.Result(["subject_id", "evidence", "uncertainty"], [
        ("a", ["ev_1"], u(0.7, "heuristic")),
        ("b", [], u(0.7, "heuristic")),                    # an inference citing nothing
        ("c", [], u(0.0, "insufficient_evidence", "nothing to cite")),
    ])
    query_result.enforce_evidence(r)
    assert [row[0] for row in r.rows] == ["a", "c"]
    assert any(n.startswith("AQL0601:") for n in r.notes)


@pytest.mark.parametrize("text, kind", [
    ("SELECT 1", "sql"), ("  with x as (select 1) select * from x", "sql"), ("VALUES (1)", "sql"),
    ("-- c\nEXPLAIN SELECT 1", "sql"), ("EXPLAIN QUERY PLAN SELECT 1", "sql"), ("EXPLAIN DELETE FROM x", "sql"),
    ("EXPLAIN SHOW ATTEMPTS", "attemptql"), ("/* c */ SHOW TABLES", "tables"), ("DESCRIBE attempts", "describe"),
    ("SHOW SESSIONS", "attemptql"), ("DROP TABLE events", "write"), ("PRAGMA table_info(events)", "sql"),
])
def test_classify(text, kind):
    assert sqltext.classify(text) == kind


def test_bare_project_means_the_repository_of_the_working_directory(tmp_path):
    import apsw

    from attemptdb.model import ids
    from attemptdb.query.resolve import project_of_directory
    repo = tmp_path / "widget"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Acme/Widget.git\n')
    pid = "prj_" + ids.project_identity(str(repo), "git@github.com:Acme/Widget.git", ids.NIL)["project_id"]
    conn = apsw.Connection(str(tmp_path / "p.db"))
    conn.execute("CREATE TABLE sessions (session_id, project_id, project_name)")
    conn.execute("INSERT INTO sessions VALUES ('ses_x', ?, 'acme/widget')", (pid,))
    assert project_of_directory(conn, str(repo / "src")) == (pid, "acme/widget")
    assert project_of_directory(conn, str(tmp_path)) is None
    r = execute.run(conn, "SHOW TABLES")  # the connection works for other statements too
    assert "sessions" in [x[0] for x in r.rows]


def test_oversized_statements_are_refused_with_a_code(db):
    assert fails(db, "SELECT 1 WHERE " + " OR ".join(["1 = 1"] * 120000)).code == "AQL0208"
    assert fails(db, "SHOW ATTEMPTS WHERE " + " OR ".join(["outcome = 'x'"] * 6000)).code == "AQL0208"
    assert run(db, "SHOW ATTEMPTS WHERE " + " OR ".join(["outcome = 'x'"] * 500)).rows == []  # printed flat
    assert fails(db, "SHOW ATTEMPTS WHERE " + " OR ".join(["outcome = 'x'"] * 2000)).code.startswith("AQL0")
    assert fails(db, "EXPLAIN SHOW ATTEMPTS WHERE " + " OR ".join(["outcome = 'x'"] * 2000)).code.startswith("AQL0")


def test_a_prepared_statement_is_parsed_once_and_its_errors_wait_for_the_run(db, monkeypatch):
    """`execute.prepare` (called while the file opens) parses the statement and loads its family;
    the run takes that parse. A statement that does not parse prepares nothing and the run
    reports the same coded error as without it; SQL prepares nothing."""
    from attemptdb.query import parse as parse_mod
    calls = []
    real = parse_mod.parse
    monkeypatch.setattr(parse_mod, "parse", lambda t: calls.append(t) or real(t))
    text = "SHOW FAILED ATTEMPTS LIMIT 2"
    execute.prepare(text)
    assert calls == [text]
    got = run(db, text)
    assert calls == [text] and got.rows == run(db, text).rows and calls == [text, text]
    bad = "SHOW FAILD ATTEMPTS"
    want = fails(db, bad)
    execute.prepare(bad)
    again = fails(db, bad)
    assert (again.code, again.message) == (want.code, want.message)
    n = len(calls)
    execute.prepare("SELECT 1")
    assert len(calls) == n and execute.run(db[0], "SELECT 1", gate=db[1]).rows == [(1,)]


def test_show_evidence_opens_the_commits_show_lists(db):
    """A commit's id (cmt_…, full or its first 8 hex digits) opens with SHOW EVIDENCE FOR, as
    every id SHOW prints does (it was an unknown prefix)."""
    conn, _ = db
    [(cid, evidence)] = conn.execute("SELECT commit_id, evidence FROM commits").fetchall()
    for text in (f"SHOW EVIDENCE FOR {cid}", f"SHOW EVIDENCE FOR {cid[:12]}", f"SHOW EVIDENCE FOR '{cid}'"):
        r = run(db, text)
        assert sorted(d["event_id"] for d in r.dicts()) == sorted(json.loads(evidence)), text
    assert fails(db, "SHOW EVIDENCE FOR cmt_ffffffff").code == "AQL0301"
    assert fails(db, "SHOW EVIDENCE FOR cmt_0000").code == "AQL0305"


@pytest.mark.parametrize("statement, listed", [
    ("WHY attempt att_99999999 STATUS FAILED", "SHOW ATTEMPTS lists attempt ids"),
    ("SHOW EVIDENCE FOR ev_99999999", "`attempt events` lists event ids"),
    ("SHOW EVIDENCE FOR tc_99999999", "SHOW TOOL CALLS lists tool call ids"),
    ("SHOW EVIDENCE FOR turn trn_99999999", "SHOW TURNS lists turn ids"),
    ("SHOW EVIDENCE FOR 99999999", "SHOW SESSIONS / SHOW ATTEMPTS list ids"),
])
def test_an_unknown_id_points_to_where_its_kind_is_listed(db, statement, listed):
    """`attempt why wu_…` that matched nothing said "SHOW SESSIONS / SHOW ATTEMPTS list ids"."""
    e = fails(db, statement)
    assert e.code == "AQL0301" and e.message.endswith(listed), e.message
