"""AttemptQL grammar, AST and coded errors (RFC 0004 §3, §7)."""

import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attemptdb.query import nodes as ast
from attemptdb.query.errors import CODES, RANGES, AQLError
from attemptdb.query.parse import parse

pytestmark = pytest.mark.usefixtures("private_grammar_cache")


def err(text) -> AQLError:
    with pytest.raises(AQLError) as e:
        parse(text)
    return e.value


def cmd(text):
    return parse(text).command


# --- the RFC §7 rendering, exactly --------------------------------------------------------

def test_rfc_error_example_renders_code_position_source_and_caret():
    e = err("WHAT IS project 'attemptdb' NOW")
    assert e.code == "AQL0102"
    assert str(e) == "\n".join([
        "error[AQL0102]: expected DOING after subject",
        "  --> query:1:29",
        "   |",
        " 1 | WHAT IS project 'attemptdb' NOW",
        "   |                             ^^^ expected 'DOING'",
    ])


def test_the_caret_sits_under_the_mark_as_a_terminal_lays_out_the_line():
    """A wide character takes two columns: the caret was placed by characters, left of the
    mark by one column per wide character before it."""
    from attemptdb.render.termtable import cols
    text = "SHOW ATTEMPTS WHERE outcome = '日本語' AND bogus"
    e = AQLError("AQL0405", "unknown column", source=text, pos=text.index("bogus"), end=len(text),
                 label="unknown column")
    src, caret = str(e).split("\n")[3:5]
    at = cols(src[:src.index("bogus")])
    assert caret.index("^") == at and caret[at:at + 5] == "^^^^^"


def test_a_long_line_is_echoed_around_the_mark_only():
    """An error late in a 50,000-character line echoed all of it and a caret line as wide."""
    text = "SHOW ATTEMPTS WHERE " + " AND ".join(["outcome = 1"] * 4000) + " AND bogus"
    pos = text.index("bogus")
    e = AQLError("AQL0405", "unknown column", source=text, pos=pos, end=pos + 5, label="unknown column")
    lines = str(e).split("\n")
    assert lines[1] == f"  --> query:1:{pos + 1}"  # the position is still the real one
    src, caret = lines[3], lines[4]
    assert len(src) < 140 and len(caret) < 160 and "…" in src
    assert src[caret.index("^"):caret.index("^") + 5] == "bogus"


def test_error_on_a_later_line_points_at_that_line():
    e = err("SHOW ATTEMPTS\n  LIMIT ten")
    assert e.line_col() == (2, 9)
    lines = str(e).split("\n")
    assert lines[1] == "  --> query:2:9"
    assert lines[3] == " 2 |   LIMIT ten"
    assert lines[4] == "   |         ^^^ expected a whole number"


@pytest.mark.parametrize("text, code, fragment", [
    ("", "AQL0203", "empty statement"),
    ("   -- only a comment", "AQL0203", "empty statement"),
    ("SHOWW ATTEMPTS", "AQL0206", "did you mean SHOW?"),
    ("SHOW FAILED", "AQL0102", "expected ATTEMPTS after FAILED"),
    ("SHOW ATTEMPTS FOO", "AQL0201", "expected FOR, WHERE, SINCE, UNTIL, ORDER, LIMIT, INCLUDING, ';' or end of statement"),
    ("STATE project AT", "AQL0202", "expected a timestamp"),
    ("SHOW ATTEMPTS WHERE 'abc", "AQL0101", "unterminated string"),
    ("SHOW ATTEMPTS WHERE \"abc", "AQL0101", "unterminated quoted name"),
    ("SHOW ATTEMPTS # x", "AQL0106", "unexpected character"),
    ("SHOW ATTEMPTS; SHOW SESSIONS", "AQL0204", "one statement per call"),
    ("SHOW ATTEMPTS LIMIT 3 LIMIT 4", "AQL0205", "LIMIT is given twice"),
    ("TRACE att_01234567 CAUSES DEPTH 1 DEPTH 2", "AQL0205", "DEPTH is given twice"),
    ("SHOW ATTEMPTS WHERE x IN (SELECT 1)", "AQL0207", "exactly one SQL expression"),
    ("SHOW ATTEMPTS WHERE outcome = 'x'; DROP TABLE events", "AQL0207", "exactly one SQL expression"),
    ("SHOW ATTEMPTS LIMIT 99999999999", "AQL0107", "too large"),
    ("WHY session ses_1234abcd STATUS", "AQL0202", "a state name"),
    ("TRACE attempt att_01234567 CAUSES DIRECTION SIDEWAYS", "AQL0102", "UP, DOWN or BOTH"),
])
def test_coded_errors(text, code, fragment):
    e = err(text)
    assert e.code == code
    assert fragment in e.message
    assert str(e).startswith(f"error[{code}]: ")


def test_every_code_lies_in_its_category_range():
    for code, (category, _) in CODES.items():
        assert code.startswith(RANGES[category]), code
    with pytest.raises(ValueError):
        AQLError("AQL9999", "no such code")


def test_where_cannot_break_out_of_its_expression():
    # the RFC's own example of an escape attempt is a syntax error, not a wider filter
    e = err("SHOW ATTEMPTS WHERE true) OR (retracted")
    assert e.code == "AQL0201"
    assert e.pos == len("SHOW ATTEMPTS WHERE true")


@pytest.mark.parametrize("text, first, second", [
    ("SHOW ATTEMPTS FOR since = -1d SINCE -2d", "FOR since", "SINCE"),
    ("SHOW ATTEMPTS SINCE -2d FOR since = -1d", "SINCE", "FOR since"),
    ("SHOW ATTEMPTS FOR since = -1d AND project = 'x' AND since = -2d", "FOR since", "FOR since"),
    ("SHOW ATTEMPTS UNTIL now FOR project = 'widget' AND until = -2d", "UNTIL", "FOR until"),
])
def test_a_time_bound_given_twice_is_refused_naming_both(text, first, second):
    """`FOR since = …` and SINCE set one bound: given twice (which would win?) is AQL0205 like
    LIMIT 1 LIMIT 2, naming both ways it was given, the caret on the second."""
    e = err(text)
    bound = first.split()[-1].upper()
    assert e.code == "AQL0205" and e.message == f"{bound} is given twice: as {first} and as {second}"
    assert text[e.pos:e.end].split()[0].upper() in (bound, "SINCE", "UNTIL") and e.pos > text.find(first.split()[-1])
    assert len(str(e).split("\n")[0]) <= 80


def test_one_since_and_one_until_still_go_together():
    c = cmd("SHOW ATTEMPTS FOR since = -2d UNTIL -1d")
    assert [f.key for f in c.filters] == ["since"] and c.until.text == "-1d"


@pytest.mark.parametrize("text", ["SHOW NOPE", "SHOW", "SHOW VERDICTS LIMIT 3", "show attempt"])
def test_an_unknown_target_lists_every_target_within_80_columns(text):
    from attemptdb.query.syntax_errors import TARGET_WORDS
    e = err(text)
    assert e.code in ("AQL0201", "AQL0202")
    lines = str(e).split("\n")
    assert max(len(line) for line in lines) <= 80, lines
    listed = " ".join(lines[5:])
    assert listed.lstrip().startswith("= targets: ") and all(w in listed for w in TARGET_WORDS)
    assert e.label == "expected a SHOW target"
    assert e.message.endswith("targets: " + ", ".join(TARGET_WORDS))  # one line for machines
    assert e.to_json()["choices"] == list(TARGET_WORDS)
    if "attempt" in text:
        assert "did you mean `ATTEMPTS`?" in lines[0]


def test_a_listing_is_packed_whole_and_the_caret_stays_put():
    e = AQLError("AQL0405", "unknown column", source="SHOW X ORDER BY nope", pos=16, end=20, label="unknown column",
                 listing=("columns of SHOW X", [f"column_number_{i}" for i in range(30)] + ["a b c"]))
    lines = str(e).split("\n")
    assert lines[0] == "error[AQL0405]: unknown column"
    assert lines[3] == " 1 | SHOW X ORDER BY nope" and lines[4] == "   | " + " " * 16 + "^^^^ unknown column"
    assert lines[5].startswith("   = columns of SHOW X: column_number_0, ")
    assert all(len(line) <= 80 for line in lines) and all(line.startswith("     ") for line in lines[6:])
    words = " ".join(lines[5:])[len("   = columns of SHOW X: "):].replace(",", "").split()
    assert words == [f"column_number_{i}" for i in range(30)] + ["a", "b", "c"]
    assert "a b c" in lines[-1]  # an alternative is never split between lines
    short = AQLError("AQL0406", "unknown status", listing=("valid values", ["approved", "rejected"]))
    assert str(short) == "error[AQL0406]: unknown status; valid values: approved, rejected"  # fits: one line


def test_article():
    from attemptdb.query.errors import article
    assert [article(w) for w in ("attempt", "event", "id", "outcome", "session", "tool call", "work unit",
                                 "unit", "update", "agent")] == [
        "an attempt", "an event", "an id", "an outcome", "a session", "a tool call", "a work unit", "a unit",
        "an update", "an agent"]


def test_messages_do_not_echo_string_contents():
    secret = "hunter2-secret-token"
    e = err(f"SHOW ATTEMPTS WHERE note = '{secret}' LIMIT x")
    assert secret not in e.message and secret not in (e.label or "")


# --- ASTs ------------------------------------------------------------------------------------

def test_show_with_every_clause():
    c = cmd("show failed attempts for project = 'attemptdb' and path = 'src/*' where json_array_length(paths) > 1 "
            "since '-7d' until now order by started_at asc limit 20 including retracted;")
    assert isinstance(c, ast.Show)
    assert c.target == "failed_attempts"
    assert [(f.key, f.value.text) for f in c.filters] == [("project", "attemptdb"), ("path", "src/*")]
    assert isinstance(c.where, ast.SqlBinary) and c.where.op == ">"
    assert c.since.text == "-7d" and c.until.text == "NOW"
    assert c.order[:2] == ("started_at", "ASC")
    assert c.limit == 20 and c.including_retracted


@pytest.mark.parametrize("text, target", [
    ("SHOW ATTEMPTS", "attempts"), ("SHOW SUPERSEDED ATTEMPTS", "superseded_attempts"),
    ("SHOW HANDOFFS", "handoffs"), ("SHOW WORK UNITS", "work_units"), ("SHOW WORK_UNITS", "work_units"),
    ("SHOW DECISIONS", "decisions"), ("SHOW SESSIONS", "sessions"), ("SHOW TURNS", "turns"),
    ("SHOW TOOL CALLS", "tool_calls"), ("SHOW TOOL_CALLS", "tool_calls"), ("SHOW EDGES", "edges"),
    ("SHOW SIGNALS", "signals"), ("SHOW CORRECTIONS", "corrections"), ("SHOW RETRACTIONS", "retractions"),
    ("SHOW COMMITS", "commits"), ("SHOW NOTES", "notes"), ("SHOW APPROVALS", "approvals"),
    ("SHOW EVIDENCE FOR att_01a03f10", "evidence"),
])
def test_every_show_target(text, target):
    assert cmd(text).target == target


def test_handoffs_between():
    c = cmd("SHOW HANDOFFS BETWEEN agent = 'claude_code' AND provider = codex")
    a, b = c.between
    assert (a.key, a.value.text, b.key, b.value.text) == ("AGENT", "claude_code", "PROVIDER", "codex")


@pytest.mark.parametrize("text, kind, value", [
    ("WHAT IS project DOING NOW", "project", None),
    ("WHAT IS project 'acme/widget' DOING NOW", "project", "acme/widget"),
    ("WHAT IS session ses_01a04762 DOING NOW", "session", "ses_01a04762"),
    ("WHAT IS work_unit wu_01a03e00 DOING NOW", "work_unit", "wu_01a03e00"),
    ("WHAT IS work unit wu_01a03e00 DOING NOW", "work_unit", "wu_01a03e00"),
    ("WHAT IS WORK -- a comment\n  UNIT wu_01a03e00 DOING NOW", "work_unit", "wu_01a03e00"),
    ("WHAT IS work --\n--\nunit wu_01a03e00 DOING NOW", "work_unit", "wu_01a03e00"),
    ("WHAT IS attempt 'att_01a03f10' DOING NOW", "attempt", "att_01a03f10"),
    ("WHAT IS span tc_01a03f10 DOING NOW", "span", "tc_01a03f10"),
    ("WHAT IS tool_call tc_01a03f10 DOING NOW", "span", "tc_01a03f10"),
    ("WHAT IS event ev_01a03f10 DOING NOW", "event", "ev_01a03f10"),
    ("WHAT IS agent 'claude-code' DOING NOW", "agent", "claude-code"),
    ("WHAT IS att_01a03f10 DOING NOW", "ref", "att_01a03f10"),
])
def test_subjects(text, kind, value):
    s = cmd(text).subject
    assert (s.kind, s.value) == (kind, value)


def test_why_trace_state_diff():
    w = cmd("WHY work_unit wu_01a03e00 STATUS blocked")
    assert (w.subject.kind, w.state) == ("work_unit", "BLOCKED")
    assert cmd("WHY att_01a03f10 FAILED").state == "FAILED"
    t = cmd("TRACE attempt att_01a03f9c CAUSES DEPTH 10 DIRECTION both")
    assert (t.depth, t.direction) == (10, "BOTH")
    assert cmd("TRACE att_01a03f9c CAUSES").depth is None
    s = cmd("STATE project AT '2026-08-27T09:30:00Z' AS KNOWN AT '-1d'")
    assert s.at.text == "2026-08-27T09:30:00Z" and s.known_at.text == "-1d"
    d = cmd("DIFF STATE '2026-08-27T09:00:00Z' '2026-08-27T11:00:00Z'")
    assert d.subject is None and (d.t1.text, d.t2.text) == ("2026-08-27T09:00:00Z", "2026-08-27T11:00:00Z")
    d = cmd("DIFF STATE project '-1d' NOW")
    assert (d.subject.kind, d.subject.value, d.t1.text) == ("project", None, "-1d")
    d = cmd("DIFF STATE project 'acme' '-1d' NOW")
    assert (d.subject.value, d.t1.text, d.t2.text) == ("acme", "-1d", "NOW")
    d = cmd("DIFF STATE 2026-08-27 -2h")
    assert (d.t1.kind, d.t2.kind) == ("datetime", "relative")


def test_explain_comments_and_case():
    s = parse("-- what failed?\nexplain Show Failed Attempts -- trailing\n;")
    assert s.explain and s.command.target == "failed_attempts"


def test_where_prints_one_tree_with_precedence():
    w = cmd("SHOW ATTEMPTS WHERE a = 1 OR b = 2 AND NOT c IS NULL").where
    assert w.op == "OR" and w.right.op == "AND" and isinstance(w.right.right, ast.SqlUnary)
    w = cmd("SHOW ATTEMPTS WHERE x NOT IN (1, 2) AND y BETWEEN 1 AND 3 AND z NOT LIKE 'a%'").where
    assert isinstance(w.left.left, ast.SqlIn) and w.left.left.negated and len(w.left.left.items) == 2
    assert isinstance(w.left.right, ast.SqlBetween)
    assert w.right.op == "NOT LIKE"


# --- fuzz: only coded errors, never a traceback ---------------------------------------------

VALID = [
    "SHOW FAILED ATTEMPTS FOR project = 'attemptdb' SINCE '-7d';",
    "WHY work_unit wu_01a03e00 STATUS BLOCKED;",
    "TRACE attempt att_01a03f9c CAUSES DEPTH 3 DIRECTION DOWN;",
    "STATE project AT '2026-08-27T09:30:00Z';",
    "SHOW HANDOFFS BETWEEN agent = 'claude_code' AND agent = 'codex';",
    "SHOW EVIDENCE FOR att_01a03f10;",
    "DIFF STATE '2026-08-27T09:00:00Z' '2026-08-27T11:00:00Z';",
    "WHAT IS project DOING NOW",
    "SHOW ATTEMPTS WHERE outcome = 'failed' AND (json_array_length(paths) > 2 OR x IS NOT NULL) LIMIT 5",
    "EXPLAIN SHOW SESSIONS ORDER BY started_at DESC",
]
ALPHABET = string.ascii_letters + string.digits + " _-'\"(),;=<>!|+*/%.:\n\t#@$é\x00"
TOKENS = ["SHOW", "WHY", "TRACE", "STATE", "DIFF", "WHAT", "IS", "DOING", "NOW", "EXPLAIN", "FOR", "WHERE",
          "SINCE", "UNTIL", "ORDER", "BY", "LIMIT", "INCLUDING", "RETRACTED", "AND", "OR", "NOT", "(", ")",
          "'x'", "'", "=", ";", "project", "session", "att_01a03f10", "-2h", "42", "CAUSES", "DEPTH", "AT",
          "ATTEMPTS", "FAILED", "NULL", "IN", "BETWEEN", ",", "--", "\n", "\"q\"", "SELECT", "*"]


def _check(text):
    try:
        parse(text)
    except AQLError as e:
        assert e.code in CODES
        e.render()  # rendering never fails either
        e.to_json()


FUZZ = settings(max_examples=int(os.environ.get("AQL_FUZZ_EXAMPLES", "300")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_fuzz_random_text(text):
    _check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=14).map(" ".join))
def test_fuzz_token_soup(text):
    _check(text)


@FUZZ
@given(st.sampled_from(VALID), st.data())
def test_fuzz_mutated_statements(base, data):
    ops = data.draw(st.lists(st.tuples(st.sampled_from(["del", "ins", "swap", "dup"]),
                                       st.integers(0, 200), st.sampled_from(TOKENS + list("'();=-"))),
                             min_size=1, max_size=4))
    text = base
    for op, at, tok in ops:
        i = at % (len(text) + 1)
        if op == "del":
            text = text[:i] + text[i + 1 + at % 5:]
        elif op == "ins":
            text = text[:i] + tok + text[i:]
        elif op == "swap":
            words = text.split(" ")
            k = at % len(words)
            words[k] = tok
            text = " ".join(words)
        else:
            text = text[:i] + text[i:i + 7] + text[i:]
    _check(text)


def test_deeply_nested_where_is_refused_with_a_code():
    e = err("SHOW ATTEMPTS WHERE " + "(" * 400 + "1" + ")" * 400)
    assert e.code in ("AQL0208",) or e.code.startswith("AQL02")


# --- the cached grammar parses exactly like a freshly built one ---------------------------

BAD = ["WHAT IS project 'attemptdb' NOW", "SHOW ATTEMPTS FOO", "SHOW FAILED", "STATE project AT",
       "SHOWW ATTEMPTS", "SHOW ATTEMPTS WHERE x IN (SELECT 1)", "TRACE att_01234567 CAUSES DEPTH",
       "show attemptsx", "SHOW ATTEMPTS LIMIT 5 extra", "why session ses_01a04762 status"]


def test_cached_grammar_is_equivalent_to_a_fresh_build(tmp_path, monkeypatch):
    import parsimonious

    from attemptdb.query import parse as P
    from attemptdb.query import peg_runtime as peg
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fresh = peg.Rules(parsimonious.Grammar(P.grammar_text()))
    stored = P._load_grammar()          # builds, converts patterns, stores
    loaded = P._load_grammar()          # loads the pickle: keyword and lazy patterns
    assert isinstance(loaded["DOING"].re, peg.KeywordPattern)
    assert isinstance(loaded["string"].re, peg.LazyPattern)
    assert os.listdir(tmp_path / "attemptdb")[0].startswith("attemptql-")
    outcomes = []
    for rules in (fresh, stored, loaded):
        monkeypatch.setattr(P, "_GRAMMAR", rules)  # syntax_errors works out each grammar's own rule sets
        got = []
        for text in VALID:
            got.append(P.parse(text).command.describe())
        for text in BAD:
            with pytest.raises(AQLError) as e:
                P.parse(text)
            got.append(str(e.value))
        outcomes.append(got)
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_a_damaged_or_foreign_cache_is_rebuilt(tmp_path, monkeypatch):
    from attemptdb.query import parse as P
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    P._load_grammar()
    (f,) = list((tmp_path / "attemptdb").iterdir())
    f.write_bytes(b"not a pickle")
    g = P._load_grammar()
    assert "statement" in g and f.read_bytes() != b"not a pickle"
    os.chmod(f, 0o666)  # world-writable: never trusted, rebuilt
    g = P._load_grammar()
    assert "statement" in g


@pytest.mark.parametrize("text, word", [
    ("SHOW EVIDENCE FOR project 'x'", "project"),
    ("SHOW EVIDENCE FOR project", "project"),
    ("SHOW EVIDENCE FOR Agent 'claude'", "agent"),
    ("SHOW EVIDENCE FOR provider = 'codex'", "provider"),
])
def test_evidence_for_a_project_or_agent_says_what_it_takes(text, word):
    """SHOW EVIDENCE FOR reads `project` as an id: it said "unexpected token" at the name after
    it, or "malformed entity id"; it takes one inference's id, and says where a project's are."""
    e = err(text)
    assert e.code == "AQL0409"
    assert "takes the id of an attempt, session" in e.message
    assert f"SHOW ATTEMPTS FOR {word} = '<name>'" in e.message
    assert text[e.pos:e.end].lower() == word


@pytest.mark.parametrize("text", [
    "SHOW ATTEMPTS FOR project = 'a' AND project = 'b'",
    "SHOW ATTEMPTS FOR project = 'a' FOR PROJECT = 'b'",
    "SHOW WORK UNITS FOR phase = 'x', outcome = 'y', phase = 'z'",
])
def test_a_one_value_filter_given_twice_is_refused(text):
    """A row has one project: `project = 'a' AND project = 'b'` matched nothing, silently."""
    e = err(text)
    assert e.code == "AQL0205" and "is given twice" in e.message
    assert e.pos > text.upper().find(" FOR ") + 5


def test_a_many_value_filter_given_twice_is_an_and():
    c = cmd("SHOW ATTEMPTS FOR path = 'a' AND path = 'b'")
    assert [(f.key, f.value.text) for f in c.filters] == [("path", "a"), ("path", "b")]
    c = cmd("SHOW SIGNALS FOR status = 'pending' AND status = 'blocking'")  # two conditions of one row
    assert [f.value.text for f in c.filters] == ["pending", "blocking"]
