"""Defects a walkthrough of AttemptQL found, each pinned on the demo database (`attempt demo`)
with one retracted event (evidence of an attempt and of its tool call) and one retracted
attempt: retracted rows in the table, the evidence of a retracted event, ORDER BY every
listed column, carets, FOR keys, EXPLAIN edge cases, leading comments and agent subjects."""

import pytest
from conftest import run_attempt

from attemptdb.query import execute, sqlgen
from attemptdb.query.errors import AQLError

pytestmark = pytest.mark.usefixtures("private_grammar_cache")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(path, env, facts): the demo history with event EV (a tool call's finish, evidence of
    attempt ATT and tool call TC) and attempt GONE retracted."""
    root = tmp_path_factory.mktemp("walk")
    home = root / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CONFIG_HOME": str(home / "config"), "ATTEMPTDB_NO_DAEMON": "1"}
    path = str(root / "demo.db")
    p = run_attempt(["demo", "--db", path], env=env)
    assert p.returncode == 0, p.stderr.decode()
    conn, _ = _open(path)
    att, calls = conn.execute(
        "SELECT attempt_id, tool_call_ids FROM attempts WHERE json_array_length(tool_call_ids) > 1 "
        "ORDER BY started_at LIMIT 1").fetchone()
    tc, ev, session = conn.execute(
        "SELECT t.tool_call_id, t.end_event_id, t.session_id FROM tool_calls t WHERE t.tool_call_id IN "
        "(SELECT value FROM json_each(?)) AND t.end_event_id IS NOT NULL ORDER BY t.started_at LIMIT 1",
        (calls,)).fetchone()
    gone = conn.execute("SELECT attempt_id FROM attempts WHERE attempt_id != ? AND session_id != ? "
                        "ORDER BY started_at LIMIT 1", (att, session)).fetchone()[0]
    agent = conn.execute("SELECT agent_id FROM tool_calls WHERE session_id = ?", (session,)).fetchone()[0]
    conn.close()
    for args in (["--event", ev], ["--attempt", gone]):
        p = run_attempt(["retract", *args, "--reason", "test", "--yes", "--db", path], env=env)
        assert p.returncode == 0, p.stderr.decode()
    return path, env, {"ATT": att, "TC": tc, "EV": ev, "SES": session, "GONE": gone, "AGENT": agent}


def _open(path):
    from attemptdb.store.readonly import connect
    return connect(path)


@pytest.fixture(scope="module")
def db(demo):
    conn, gate = _open(demo[0])
    yield conn, gate, demo[2]
    conn.close()


def run(db, text):
    return execute.run(db[0], text, gate=db[1])


def fails(db, text) -> AQLError:
    with pytest.raises(AQLError) as e:
        run(db, text)
    return e.value


def cli(demo, *args, columns="80"):
    path, env, _ = demo
    p = run_attempt(["query", "--db", path, *args], env={**env, "COLUMNS": columns})
    assert b"Traceback" not in p.stderr, p.stderr.decode()
    return p.returncode, p.stdout.decode(), p.stderr.decode()


# --- 1. the table shows which rows are retracted -----------------------------------------

@pytest.mark.parametrize("columns", ["80", "400"])
def test_including_retracted_shows_the_retracted_column_in_the_table(demo, columns):
    gone = demo[2]["GONE"]
    rc, out, err = cli(demo, "SHOW ATTEMPTS INCLUDING RETRACTED", columns=columns)
    assert rc == 0, err
    head, rule, *rows = out.splitlines()
    assert "retracted" in head.split()
    k = head.split().index("retracted")
    flagged = [r.split() for r in rows if r.startswith("att_") and r.split()[k] == "1"]
    assert [gone.startswith(r[0].rstrip("…")) for r in flagged] == [True]
    rc, out, _ = cli(demo, "SHOW ATTEMPTS", columns=columns)
    assert "retracted" not in out.splitlines()[0].split()


# --- 2. evidence of an attempt / a tool call keeps its retracted event -----------------------

@pytest.mark.parametrize("who", ["ATT", "TC", "SES"])
def test_evidence_including_retracted_brings_back_a_retracted_event(db, who):
    facts = db[2]
    ref = facts[who][:12] if who != "SES" else "session " + facts[who]
    shown = run(db, f"SHOW EVIDENCE FOR {ref} INCLUDING RETRACTED").dicts()
    assert facts["EV"] in [d["event_id"] for d in shown]
    assert [d["retracted"] for d in shown if d["event_id"] == facts["EV"]] == [1]
    hidden = run(db, f"SHOW EVIDENCE FOR {ref}")
    assert facts["EV"] not in [d["event_id"] for d in hidden.dicts()]
    assert any("retracted row(s) hidden" in n for n in hidden.notes)


# --- 3. ORDER BY every listed column of every target -----------------------------------------

TARGET_TEXT = {name: "SHOW " + t.name + (" FOR {ATT}" if name == "evidence" else "")
               for name, t in sqlgen.TARGETS.items()}


@pytest.mark.parametrize("name", sorted(sqlgen.TARGETS))
def test_order_by_each_listed_column_sorts_or_is_aql0405(db, name):
    facts = db[2]
    base = TARGET_TEXT[name].format(ATT=facts["ATT"][:12])
    e = fails(db, f"{base} ORDER BY no_such_column_xyz")
    assert e.code == "AQL0405"
    listed = set(e.listing[1]) | set(sqlgen.TARGETS[name].display) | {"retracted"}
    assert "successor_outcome" in listed or name != "superseded_attempts"
    for col in sorted(listed):
        for direction in ("ASC", "DESC"):
            text = f"{base} ORDER BY {col} {direction} LIMIT 5"
            try:
                run(db, text)
            except AQLError as err:
                assert err.code == "AQL0405", (text, err.code, err.message)


def test_superseded_attempts_sort_by_the_successor_outcome(db):
    rows = run(db, "SHOW SUPERSEDED ATTEMPTS ORDER BY successor_outcome DESC").dicts()
    outs = [r["successor_outcome"] for r in rows]
    assert outs == sorted(outs, key=lambda v: (v is not None, v or ""), reverse=True)
    assert fails(db, "SHOW ATTEMPTS ORDER BY successor_outcome").code == "AQL0405"


# --- 4. LIMIT out of range points at the number ----------------------------------------------

@pytest.mark.parametrize("text, number", [("SHOW SESSIONS LIMIT 1000001", "1000001"), ("SHOW SESSIONS LIMIT 0", "0"),
                                          ("SHOW NOTES  LIMIT   0000", "0000")])
def test_limit_out_of_range_points_at_the_number(db, text, number):
    e = fails(db, text)
    assert e.code == "AQL0410"
    assert text[e.pos:e.end] == number


# --- 5. agent = 'agt_…' on every target whose FOR keys list agent ------------------------------

@pytest.mark.parametrize("name", sorted(n for n, rules in sqlgen.FILTERS.items() if "agent" in rules))
def test_every_target_taking_agent_takes_an_agent_id(db, name):
    facts = db[2]
    text = TARGET_TEXT[name].format(ATT="") + f" FOR agent = '{facts['AGENT'][:12]}'"
    run(db, text)  # no AQL0404
    if name in ("turns", "handoffs", "commits"):
        rows = run(db, TARGET_TEXT[name] + f" FOR agent = '{facts['AGENT']}' INCLUDING RETRACTED").dicts()
        if name == "turns":
            assert rows and all(r["session_id"] == facts["SES"] for r in rows)


# --- 6. outcome and status are one key where they read one column ------------------------------

@pytest.mark.parametrize("text", [
    "SHOW ATTEMPTS FOR outcome = 'failed' AND status = 'succeeded'",
    "SHOW SESSIONS FOR outcome = 'open' AND status = 'closed'",
    "SHOW FAILED ATTEMPTS FOR status = 'failed' AND outcome = 'failed'",
    "SHOW ATTEMPTS FOR status = 'failed' AND status = 'succeeded'",
    "SHOW APPROVALS FOR status = 'approved' AND outcome = 'rejected'",
])
def test_outcome_and_status_of_one_column_given_together_is_aql0205(db, text):
    e = fails(db, text)
    assert e.code == "AQL0205"
    assert text[e.pos:].startswith(text.split(" AND ")[1])
    assert len(e.render().splitlines()[0]) <= 80


def test_signal_status_still_takes_two_values(db):
    run(db, "SHOW SIGNALS FOR status = 'pending' AND status = 'blocking'")


# --- 7. an unknown FOR key names only the keys this target takes --------------------------------

@pytest.mark.parametrize("name", sorted(sqlgen.TARGETS))
def test_an_unknown_or_refused_key_lists_only_the_keys_the_target_takes(db, name):
    base = TARGET_TEXT[name].format(ATT=db[2]["ATT"][:12])
    if name == "evidence":
        return  # FOR is its id
    takes = [k for k in sqlgen.FILTER_KEYS if k in sqlgen.FILTERS[name]]
    e = fails(db, f"{base} FOR outcom = 'x'")
    assert e.code == "AQL0404" and list(e.listing[1]) == takes
    refused = [k for k in sqlgen.FILTER_KEYS if k not in sqlgen.FILTERS[name]]
    for k in refused:
        e = fails(db, f"{base} FOR {k} = 'x'")
        assert e.code == "AQL0404" and list(e.listing[1]) == takes, (k, e.message)


# --- 8. EXPLAIN with nothing to explain is a coded syntax error naming EXPLAIN ----------------

@pytest.mark.parametrize("text, code, at", [
    ("EXPLAIN", "AQL0202", ""), ("EXPLAIN ;", "AQL0202", ";"), ("EXPLAIN EXPLAIN SHOW NOTES", "AQL0205", "EXPLAIN"),
    ("EXPLAIN DESCRIBE events", "AQL0201", "DESCRIBE"), ("EXPLAIN SHOW TABLES", "AQL0201", "SHOW TABLES"),
    ("EXPLAIN QUERY PLAN SHOW NOTES", "AQL0201", "SHOW"),
])
def test_explain_edge_cases_are_coded_syntax_errors(db, text, code, at):
    e = fails(db, text)
    assert e.code == code, e.message
    assert "EXPLAIN" in e.message
    assert e.pos is not None and text[e.pos:e.end] == at
    assert all(len(line) <= 80 for line in e.render().splitlines())


def test_explain_still_explains(db):
    assert run(db, "EXPLAIN SHOW NOTES").kind == "explanation"
    assert run(db, "EXPLAIN QUERY PLAN SELECT 1").kind == "explanation"
    assert run(db, "EXPLAIN SELECT 1").kind == "explanation"


# --- 9. a leading comment is skipped before AttemptQL as before SQL ----------------------------

@pytest.mark.parametrize("text", ["/* c */ SHOW NOTES", "/* a */ /* b\n */ -- c\n SHOW NOTES", "-- c\nSHOW NOTES",
                                  "/* c */ EXPLAIN SHOW NOTES", "/* c */ SELECT 1"])
def test_a_leading_comment_is_skipped(db, text):
    run(db, text)


def test_an_error_after_a_leading_comment_shows_the_text_as_written(db):
    text = "/* why */ SHOW NOTS"
    e = fails(db, text)
    assert e.code == "AQL0201" and text[e.pos:e.end] == "NOTS"
    assert "/* why */ SHOW NOTS" in e.render()


# --- 10. agents are labelled agents; a hyphenated bare name is told to be quoted ---------------

@pytest.mark.parametrize("text", ["STATE agent 'codex' AT -30d", "STATE agent codex AT -30d",
                                  "DIFF STATE agent codex -31d -30d"])
def test_an_agent_subject_with_nothing_to_show_is_labelled_an_agent(db, text):
    rows = run(db, text).dicts()
    assert [(r["subject_type"], r["subject_id"]) for r in rows] == [("agent", "codex")]


def test_an_agent_id_subject_is_labelled_an_agent(db):
    agent = db[2]["AGENT"]
    rows = run(db, f"STATE agent '{agent}' AT -30d").dicts()
    assert [(r["subject_type"], r["subject_id"]) for r in rows] == [("agent", agent)]


@pytest.mark.parametrize("text", ["STATE agent claude-code AT now", "WHAT IS agent claude-code DOING NOW",
                                  "DIFF STATE agent claude-code -2h now"])
def test_a_bare_hyphenated_agent_name_is_told_to_be_quoted(db, text):
    e = fails(db, text)
    assert e.code == "AQL0201" and "agent 'claude-code'" in e.message
    assert text[e.pos:e.end] == "claude-code"
    run(db, text.replace("claude-code", "'claude-code'"))


# --- 11. the project's own guards and errors that fit a terminal -------------------------------

def test_a_long_or_chain_is_aql0208_with_the_in_hint(db):
    chain = " OR ".join(["outcome = 'x'"] * 1000)
    for text in (f"SHOW ATTEMPTS WHERE {chain}", f"SELECT 1 FROM attempts WHERE {chain}"):
        e = fails(db, text)
        assert e.code == "AQL0208" and "IN (...)" in e.message


def test_diff_state_of_a_bare_id_names_the_form_it_takes(db):
    ses = db[2]["SES"][:12]
    e = fails(db, f"DIFF STATE {ses} -2h now")
    assert e.code == "AQL0201" and f"session {ses}" in e.message
    e = fails(db, f"DIFF STATE {db[2]['ATT'][:12]} -2h now")
    assert e.code == "AQL0201" and "attempt" not in e.message
    e = fails(db, "DIFF STATE foo -2h now")
    assert "attempt" not in e.message and "turn" not in e.message


def test_diff_state_of_a_project_with_one_timestamp_needs_two(db):
    text = "DIFF STATE project 'acme/shop' now"
    e = fails(db, text)
    assert e.code == "AQL0202" and "two timestamps" in e.message and e.pos == len(text)
    run(db, "DIFF STATE project 'acme/shop' -2h now")
    run(db, "DIFF STATE '-3h' now")


@pytest.mark.parametrize("text", [
    "SHOW ATTEMPTS SINCE 'yesterdayy'", "DIFF STATE foo -2h now", "DIFF STATE -2h", "SHOW TURNS FOR turn = 'x'",
    "WHY session ses_00000000 STATUS", "SHOW ATTEMPTS WHERE (outcome = ", "TRACE attempt att_01 CAUSES DEPTH",
])
def test_every_error_line_fits_80_columns(db, text):
    e = fails(db, text)
    lines = e.render().splitlines()
    assert all(len(line) <= 80 for line in lines), lines


def test_an_ambiguous_id_lists_its_matches_under_the_statement(db):
    conn = db[0]
    ids = [r[0] for r in conn.execute("SELECT event_id FROM events ORDER BY event_id")]
    prefix = next(a[:11] for a, b in zip(ids, ids[1:]) if a[:11] == b[:11])  # ev_ and 8 hex digits
    e = fails(db, f"SHOW EVIDENCE FOR {prefix}")
    assert e.code == "AQL0302" and e.listing[0] == "matches"
    lines = e.render().splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert any(line.lstrip().startswith("= matches: ") for line in lines)
