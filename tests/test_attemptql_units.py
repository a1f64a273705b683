"""Work units, decisions, conflicts and Needs You through AttemptQL and the CLI (issue #13), on a
real database built from fixtures/scenarios/aql_units.json through the adapters and the store:

* as recorded (2026-08-28): statements judged at a given instant (`STATE … AT t`, `DIFF`, `WHY`,
  `WHAT IS` with a fixed now) — the time-travel rules;
* rebased so its last event was a minute ago: what the views judge against the clock (status,
  Needs You, overlapping conflicts), read by `attempt`, by AttemptQL and by the sqlite3 shell.
"""

import copy
import json
import shutil
import subprocess

import pytest
from conftest import SQLITE3, needs_shell, run_attempt

from attemptdb.model import clock
from attemptdb.projections import catalog, scenario
from attemptdb.query import execute, read, sqltext
from attemptdb.query import result as query_result
from attemptdb.query.errors import AQLError
from attemptdb.store.database import Store
from attemptdb.store.readonly import connect

pytestmark = pytest.mark.usefixtures("private_grammar_cache")

NAME = "aql_units"
DAY = "2026-08-28"


def at(hms: str) -> int:
    return clock.from_iso(f"{DAY}T{hms}Z")


def build(path: str, end_us: int | None = None) -> scenario.Built:
    """The scenario appended to a new file at `path`; with `end_us`, every event moved so the
    last one is at end_us (ids do not change: they derive from the scenario's labels)."""
    scn = scenario.load(NAME)
    if end_us is not None:
        first = scenario.build(scn)
        times = [first.at(s["at"]) for s in scn["events"]]
        shift = end_us - max(times)
        scn = copy.deepcopy(scn)
        for s, t in zip(scn["events"], times):
            s["at"] = clock.iso(t + shift)
    b = scenario.build(scn)
    st = Store.open(path)
    try:
        for env in scenario.arrival(b):
            st.append([env])
    finally:
        st.close()
    return b


class Ids:
    def __init__(self, b):
        ev = b.labels
        self.U_DOC, self.U_FIX, self.U_CODEX, self.U_PERM = ("wu_" + ev[k] for k in ("d_p", "p1", "x_p", "b_p"))
        self.A1, self.A2 = "att_" + ev["c2e"], "att_" + ev["c4e"]
        self.T_FIX = "trn_" + ev["p1"]
        self.P1, self.PERM = "ev_" + ev["p1"], "ev_" + ev["b_perm"]
        self.S_FIX = b.ref("ses", "claude_code:aql-fix")
        self.S_CODEX = b.ref("ses", "codex:aql-codex")
        self.S_PERM = b.ref("ses", "claude_code:aql-perm")
        self.S_DOC = b.ref("ses", "claude_code:aql-doc")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("units") / "recorded.db")
    b = build(path)
    conn, gate = connect(path)
    yield path, conn, gate, Ids(b)
    conn.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("units") / "live.db")
    b = build(path, clock.now_us() - 60 * 1_000_000)
    conn, gate = connect(path)
    yield path, conn, gate, Ids(b)
    conn.close()


def run(db, text, now=None, **kw):
    _, conn, gate, _ = db
    return execute.run(conn, text, gate=gate, now_us=now, **kw)


def units(result) -> dict:
    return {d["subject_id"]: d for d in result.dicts() if d["subject_type"] == "work_unit"}


def contract(result):
    assert "evidence" in result.columns and "uncertainty" in result.columns
    for d in result.dicts():
        assert d["uncertainty"]["reason"] in query_result.REASONS
        if d["uncertainty"]["reason"] not in ("insufficient_evidence", "state_mismatch", "depth_limit"):
            assert d["evidence"], d


# --- STATE … AT t: unit rows judged at t ----------------------------------------------------

def test_state_at_judges_units_as_of_t(recorded):
    i = recorded[3]
    r = run(recorded, "STATE project AT '2026-08-28T09:00:25Z'")
    contract(r)
    u = units(r)
    assert set(u) == {i.U_FIX, i.U_CODEX}  # the doc unit had completed; the permission one had not begun
    fix = u[i.U_FIX]
    # A1 failed at 09:00:20; A2, which superseded it, started only at 09:00:30: at t A1 read failed
    assert (fix["last_attempt"], fix["last_attempt_outcome"], fix["attempts"], fix["failed"]) == (i.A1, "failed", 1, 1)
    assert (fix["phase"], fix["status"], fix["blocked"], fix["turn_status"]) == ("debug", "open", 0, "in_progress")
    assert fix["last_activity_at"] == "2026-08-28T09:00:20.000000Z"
    assert all(e != "ev_" + i.A2[4:] for e in fix["evidence"])  # nothing observed after t
    assert u[i.U_CODEX]["last_attempt_outcome"] == "in_progress"
    assert any("2 work unit(s)" in n and "1 completed or abandoned" in n for n in r.notes)

    u = units(run(recorded, "STATE project AT '2026-08-28T09:00:55Z'"))
    fix = u[i.U_FIX]
    assert (fix["last_attempt"], fix["attempts"], fix["failed"], fix["blocked"]) == (i.A2, 2, 2, 1)
    assert "repeating itself" in fix["block_reason"]

    u = units(run(recorded, "STATE project AT '2026-08-28T09:10:30Z'"))
    perm = u[i.U_PERM]
    assert (perm["phase"], perm["status"], perm["blocked"]) == ("blocked", "open", 1)
    assert i.PERM in perm["evidence"] and "permission_requested" in perm["block_reason"]

    # three hours on: the failing units were abandoned (2 h idle), the waiting one stays open
    r = run(recorded, "STATE project AT '2026-08-28T12:00:00Z'")
    assert set(units(r)) == {i.U_PERM}
    assert any("3 completed or abandoned" in n for n in r.notes)


def test_state_subjects_session_and_work_unit(recorded):
    i = recorded[3]
    r = run(recorded, f"STATE session {i.S_FIX} AT '2026-08-28T09:00:55Z'")
    assert [(d["subject_type"], d["subject_id"]) for d in r.dicts()] == [("session", i.S_FIX), ("work_unit", i.U_FIX)]
    r = run(recorded, f"STATE work_unit {i.U_FIX[:11]} AT '2026-08-28T12:00:00Z'")
    u = units(r)
    assert u[i.U_FIX]["status"] == "abandoned"  # a single unit is shown whatever its status
    r = run(recorded, f"STATE {i.U_PERM} AT '2026-08-28T09:05:00Z'")
    assert r.dicts()[-1]["uncertainty"]["reason"] == "insufficient_evidence"


def test_the_same_file_read_later_answers_for_that_time(recorded):
    i = recorded[3]
    early = run(recorded, "WHAT IS project DOING NOW", now=at("09:10:30"))
    late = run(recorded, "WHAT IS project DOING NOW", now=at("11:30:00"))
    assert set(units(early)) == {i.U_FIX, i.U_CODEX, i.U_PERM}
    assert set(units(late)) == {i.U_PERM}
    assert units(early)[i.U_FIX]["status_reason"] != units(late).get(i.U_FIX, {}).get("status_reason")
    same = run(recorded, "STATE project AT '2026-08-28T09:10:30Z'")
    assert units(same) == units(early)


def test_diff_state_carries_unit_rows(recorded):
    i = recorded[3]
    r = run(recorded, "DIFF STATE '2026-08-28T09:00:25Z' '2026-08-28T09:10:30Z'")
    contract(r)
    ch = {(d["subject_id"], d["field"]): (d["change"], d["before"], d["after"]) for d in r.dicts()
          if d["subject_type"] == "work_unit"}
    assert ch[(i.U_FIX, "attempts")] == ("changed", "1", "2")
    assert ch[(i.U_FIX, "failed")] == ("changed", "1", "2")
    assert ch[(i.U_FIX, "last_attempt")] == ("changed", i.A1, i.A2)
    assert ch[(i.U_FIX, "blocked")] == ("changed", "0", "1")
    assert ch[(i.U_PERM, "presence")][:2] == ("added", "absent")
    r = run(recorded, "DIFF STATE '2026-08-28T09:10:30Z' '2026-08-28T12:00:00Z'")
    ch = {(d["subject_id"], d["field"]): (d["change"], d["before"], d["after"]) for d in r.dicts()
          if d["subject_type"] == "work_unit"}
    change, before, after = ch[(i.U_FIX, "presence")]
    assert change == "removed" and "status open" in before and "status abandoned" in after


def test_diff_state_of_a_session_removes_a_unit_that_closed_as_project_wide_does(recorded):
    """A session's DIFF listed its units at both times whatever their status, so a unit that was
    abandoned in between read `changed status open → abandoned` and the note counted it open at
    both times; project-wide the same unit is `removed` (RFC 0004 §4): now both say so."""
    i = recorded[3]
    t1, t2 = "'2026-08-28T09:10:30Z'", "'2026-08-28T12:00:00Z'"
    whole = run(recorded, f"DIFF STATE {t1} {t2}")
    one = run(recorded, f"DIFF STATE session {i.S_FIX} {t1} {t2}")
    contract(one)

    def unit_rows(r):
        return {(d["field"], d["change"], d["before"], d["after"]) for d in r.dicts()
                if d["subject_type"] == "work_unit" and d["subject_id"] == i.U_FIX}
    assert unit_rows(one) == unit_rows(whole) and {f for f, *_ in unit_rows(one)} == {"presence"}
    [note] = [n for n in one.notes if "work unit(s)" in n]
    assert "open at 2026-08-28T09:10:30.000000Z, 0 at" in note


# --- WHY wu_… STATUS BLOCKED -------------------------------------------------------------

def test_why_work_unit_blocked(recorded):
    i = recorded[3]
    r = run(recorded, f"WHY {i.U_PERM} STATUS BLOCKED", now=at("09:10:30"))
    contract(r)
    [row] = r.dicts()
    assert (row["edge_type"], row["from_type"], row["from_id"], row["kind"]) == \
        ("blocked", "event", i.PERM, "permission_requested")
    assert row["evidence"] == [i.PERM] and "is blocked" in row["claim"]
    r = run(recorded, f"WHY work_unit {i.U_FIX} STATUS BLOCKED", now=at("09:00:55"))
    assert [d["from_id"] for d in r.dicts()] == [i.A2, i.A1]
    assert all(d["edge_type"] == "failed" and d["evidence"] for d in r.dicts())
    r = run(recorded, f"WHY {i.U_DOC} STATUS BLOCKED", now=at("09:00:55"))
    [row] = r.dicts()
    assert row["uncertainty"]["reason"] == "state_mismatch" and "status completed" in row["claim"]
    with pytest.raises(AQLError) as e:
        run(recorded, f"WHY {i.U_FIX} STATUS FAILED")
    assert e.value.code == "AQL0411"
    r = run(recorded, "WHY project STATUS BLOCKED", now=at("09:10:30"))
    assert any(i.U_PERM in n and i.U_FIX in n for n in r.notes)


# --- SHOW WORK UNITS / DECISIONS / CONFLICTS, EVIDENCE, TRACE -----------------------------

def test_show_work_units_equals_the_view(live):
    _, conn, _, i = live
    r = run(live, "SHOW WORK UNITS")
    contract(r)
    view = read.rows(conn, "SELECT * FROM work_units ORDER BY started_at DESC, work_unit_id")
    got = [{k: v for k, v in d.items() if k != "uncertainty"} for d in r.dicts()]
    for d in view:
        for k in ("sessions", "turns", "attempts", "paths", "commit_shas", "actors", "evidence"):
            d[k] = json.loads(d[k])
        d.pop("status_reason")
    for d in got:
        d.pop("status_reason")  # idle seconds move between the two reads
    assert got == view
    by = {d["work_unit_id"]: d for d in r.dicts()}
    assert by[i.U_PERM]["phase"] == "blocked" and by[i.U_DOC]["status"] == "completed"
    assert by[i.U_FIX]["status"] == by[i.U_CODEX]["status"] == "open"


@pytest.mark.parametrize("clause, expected", [
    ("FOR provider = 'codex'", {"U_CODEX"}),
    ("FOR agent = 'Codex'", {"U_CODEX"}),
    ("FOR session = '{S_PERM}'", {"U_PERM"}),
    ("FOR turn = '{T_FIX}'", {"U_FIX"}),
    ("FOR path = 'src/*'", {"U_FIX", "U_CODEX"}),
    ("FOR path = 'docs/parser.md'", {"U_DOC"}),
    ("FOR phase = 'blocked'", {"U_PERM"}),
    ("FOR status = 'completed'", {"U_DOC"}),
    ("FOR status = 'open' AND provider = 'claude_code'", {"U_FIX", "U_PERM"}),
    ("FOR project = 'acme/demo' LIMIT 2", {"U_PERM", "U_CODEX"}),
    ("WHERE failed_attempt_count >= 2", {"U_FIX"}),
    ("ORDER BY started_at ASC LIMIT 1", {"U_DOC"}),
])
def test_show_work_units_filters(live, clause, expected):
    i = live[3]
    text = "SHOW WORK UNITS " + clause.format(S_PERM=i.S_PERM, T_FIX=i.T_FIX)
    got = {d["work_unit_id"] for d in run(live, text).dicts()}
    assert got == {getattr(i, k) for k in expected}, text


def test_show_work_units_reads_the_unit_index_first(live):
    r = run(live, "EXPLAIN SHOW WORK UNITS FOR project = 'acme/demo' SINCE '-1d'")
    d = dict((row[0], row[1]) for row in r.rows if row[0] in ("indexes", "full scans"))
    assert "unit_index_project" in d["indexes"] or "unit_index_started" in d["indexes"], d
    for table in ("tool_call_facts", "attempt_facts", "events"):
        assert table not in d["full scans"], d
    with pytest.raises(AQLError) as e:
        run(live, "SHOW WORK UNITS FOR phase = 'coding'")
    assert e.value.code == "AQL0406"


def test_show_decisions_and_conflicts(live):
    i = live[3]
    r = run(live, "SHOW DECISIONS")
    contract(r)
    [d] = r.dicts()
    assert (d["kind"], d["selected"], d["alternatives"], d["work_unit_id"]) == ("approach_change", i.A2, [i.A1], i.U_FIX)
    assert run(live, f"SHOW DECISIONS FOR session = '{i.S_CODEX}'").rows == []
    r = run(live, "SHOW CONFLICTS")
    contract(r)
    [c] = r.dicts()
    assert {c["first_work_unit"], c["second_work_unit"]} == {i.U_FIX, i.U_CODEX}
    assert c["paths"] == ["src/parser.py"] and c["overlapping"] == 1
    assert len(run(live, "SHOW CONFLICTS FOR provider = 'codex' AND path = 'src/*'").rows) == 1
    assert any("overlapping = 1" in n for n in r.notes)
    none = run(live, f"SHOW CONFLICTS FOR session = '{i.S_PERM}'")
    # the note explaining the `overlapping` column goes with the rows it explains
    assert none.rows == [] and not any("overlapping" in n for n in none.notes)
    assert any("no conflicts matched" in n for n in none.notes)
    assert run(live, "SHOW CONFLICTS SINCE '-1d' LIMIT 5").rows
    with pytest.raises(AQLError) as e:
        run(live, "SHOW CONFLICTS FOR phase = 'debug'")
    assert e.value.code == "AQL0404"


def test_show_evidence_opens_the_conflicts_show_lists(live):
    """SHOW EVIDENCE FOR works on every id SHOW prints: a conflict's (two unit ids joined by `+`,
    quoted, or its first 8 hex digits), as on an attempt's."""
    [c] = run(live, "SHOW CONFLICTS").dicts()
    for text in (f"SHOW EVIDENCE FOR '{c['conflict_id']}'", f"SHOW EVIDENCE FOR {c['conflict_id'][:12]}"):
        r = run(live, text)
        assert sorted(d["event_id"] for d in r.dicts()) == sorted(c["evidence"]), text
    with pytest.raises(AQLError) as e:
        run(live, "SHOW EVIDENCE FOR cfl_0000")
    assert e.value.code == "AQL0305"


def test_show_evidence_for_a_work_unit(live):
    _, conn, _, i = live
    want = json.loads(conn.execute("SELECT evidence FROM work_units WHERE work_unit_id = ?", (i.U_FIX,)).fetchone()[0])
    for text in (f"SHOW EVIDENCE FOR {i.U_FIX}", f"SHOW EVIDENCE FOR work_unit {i.U_FIX[:11]}"):
        r = run(live, text)
        assert sorted(d["event_id"] for d in r.dicts()) == sorted(want)
        assert i.P1 in [d["event_id"] for d in r.dicts()]


def test_trace_through_a_work_unit(recorded):
    i = recorded[3]
    r = run(recorded, f"TRACE {i.U_FIX} CAUSES")
    contract(r)
    rows = r.dicts()
    assert (rows[0]["depth"], rows[0]["edge_type"], rows[0]["from_type"], rows[0]["to_id"]) == \
        (1, "parent_of", "work_unit", i.T_FIX)
    assert rows[0]["evidence"] == [i.P1]
    assert (2, "triggered", i.P1, i.T_FIX) in [(d["depth"], d["edge_type"], d["from_id"], d["to_id"]) for d in rows]
    both = run(recorded, f"TRACE work_unit {i.U_FIX} CAUSES DIRECTION BOTH").dicts()
    edges = {(d["edge_type"], d["from_id"], d["to_id"]) for d in both}
    assert ("superseded", i.A1, i.A2) in edges and ("triggered", i.P1, i.A1) in edges
    # no causal edge leads to a unit: a trace from an attempt never passes through one
    assert all(d["from_type"] != "work_unit" for d in run(recorded, f"TRACE {i.A2} CAUSES DIRECTION BOTH").dicts())
    assert "plan" in [row[0] for row in run(recorded, f"EXPLAIN TRACE {i.U_FIX} CAUSES").rows]


def test_state_at_is_index_driven(recorded):
    r = run(recorded, "EXPLAIN STATE project AT '2026-08-28T09:00:55Z'")
    scans = dict((row[0], row[1]) for row in r.rows if row[0] in ("indexes", "full scans"))
    for table in ("tool_call_facts", "attempt_facts", "events", "unit_turns", "signal_facts"):
        assert table not in scans["full scans"].split(", "), scans
    assert "unit_turns_active" in scans["indexes"]


def test_units_at_now_agree_with_the_view(live):
    """The rules are written once: judged at now through the shadows, every unit holds the
    phase, status and counts the work_units view (the sqlite3 user's answer) holds."""
    _, conn, _, i = live
    r = run(live, "STATE project AT NOW")
    view = {d["work_unit_id"]: d for d in read.rows(conn, "SELECT * FROM work_units")}
    got = units(r)
    assert set(got) == {i.U_FIX, i.U_CODEX, i.U_PERM}
    for wu, d in got.items():
        v = view[wu]
        assert (d["phase"], d["status"], d["attempts"], d["failed"], d["last_attempt"], d["phase_reason"]) == \
            (v["phase"], v["status"], v["attempt_count"], v["failed_attempt_count"], v["last_attempt"],
             v["phase_reason"]), wu
        assert d["sessions"] == json.loads(v["sessions"])


# --- the CLI --------------------------------------------------------------------------------

def attempt(args, path, **kw):
    p = run_attempt(list(args) + ["--db", path], **kw)
    assert b"Traceback" not in p.stderr, p.stderr.decode()
    return p


def test_needs_you_command(live, home):
    path, _, _, i = live
    p = attempt(["needs-you", "--json"], path)
    assert p.returncode == 0, p.stderr.decode()
    data = json.loads(p.stdout)
    kinds = [(r["kind"], r["rank"]) for r in data["needs_you"]]
    assert kinds == [("permission_gate", 1), ("repeated_failure", 3), ("work_conflict", 4)]
    gate, repeat, conflict = data["needs_you"]
    assert gate["session_id"] == i.S_PERM and gate["evidence"] == [i.PERM] and gate["work_unit_id"] == i.U_PERM
    assert repeat["work_unit_id"] == i.U_FIX and repeat["evidence"]
    assert conflict["session_id"] is None and {i.U_FIX, i.U_CODEX} & {conflict["work_unit_id"]}
    assert data["checked"] == {"open_sessions": 3, "open_work_units": 3}
    p = attempt(["needs-you"], path)
    out = p.stdout.decode()
    assert "3 things need you" in out and "permission" in out and "repeated failure" in out
    assert "3 open sessions, 3 open work units checked" in out
    p = attempt(["needs-you", "--project", "demo", "--json"], path)
    assert len(json.loads(p.stdout)["needs_you"]) == 3
    p = attempt(["needs-you", "--project", "nowhere"], path)
    assert p.returncode == 2 and b"nowhere" in p.stderr
    p = attempt(["status", "--json"], path)
    rep = json.loads(p.stdout)
    assert rep["needs_you"] == 3 and rep["work_units"] == 4
    assert "needs you     3" in attempt(["status"], path).stdout.decode()


def test_needs_you_empty_answer_says_what_it_looked_at(recorded, home):
    p = attempt(["needs-you"], recorded[0])
    assert p.returncode == 0
    assert p.stdout.decode().replace("\n", " ").strip() == (
        "nothing needs you: 0 open sessions, 0 open work units checked; no pending permission or input request, "
        "no repeated failure, no conflicting work")


def test_timeline_by_unit(live, home):
    path, _, _, i = live
    p = attempt(["timeline", "--units", "--json"], path)
    data = json.loads(p.stdout)
    assert [u["work_unit_id"] for u in data["work_units"]] == [i.U_PERM, i.U_CODEX, i.U_FIX, i.U_DOC]
    fix = data["work_units"][2]
    assert [t["turn_id"] for t in fix["turns"]] == [i.T_FIX]
    assert [a["attempt_id"] for a in fix["turns"][0]["attempts"]] == [i.A1, i.A2]
    p = attempt(["timeline", "--units", "--tools", "-n", "2"], path, env={"TZ": "UTC", "NO_COLOR": "1"})
    out = p.stdout.decode()
    assert out.count("◆ ") == 2 and "blocked · open" in out and "phase: waiting on a human" in out
    assert "(2 more work units;" in out
    p = attempt(["timeline", "--units", "--session", i.S_DOC], path, env={"NO_COLOR": "1"})
    assert "implement · completed" in p.stdout.decode() and p.stdout.decode().count("◆ ") == 1


def test_correct_and_retract_report_unit_changes(live, home, tmp_path):
    i = live[3]
    path = str(tmp_path / "copy.db")
    shutil.copy(live[0], path)
    p = attempt(["correct", i.A2, "--outcome", "succeeded", "--dry-run", "--json"], path)
    assert p.returncode == 0, p.stderr.decode()
    ch = {(c["entity"], c["field"]): (c["before"], c["after"]) for c in json.loads(p.stdout)["changes"]}
    assert ch[(i.U_FIX, "failed_attempts")] == (2, 1)
    p = attempt(["correct", i.A2, "--outcome", "succeeded"], path, env={"COLUMNS": "200"})  # ids whole
    out = p.stdout.decode()
    assert p.returncode == 0 and i.U_FIX in out and "failed_attempts" in out
    p = attempt(["retract", "--session", i.S_CODEX, "--reason", "test", "--yes"], path, env={"COLUMNS": "200"})
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode()
    assert ["work_units", "4", "3"] in [ln.split() for ln in out.splitlines()] and f"{i.U_CODEX}" in out


# --- every recipe of spec/catalog.md: through `attempt query`, and the SQL ones through sqlite3

def _canon(rows):
    def value(v):
        if isinstance(v, str) and v[:1] == "[":
            try:
                return json.loads(v)
            except ValueError:
                return v
        return v
    return sorted(json.dumps({k: value(v) for k, v in r.items()}, sort_keys=True) for r in rows)


@needs_shell
def test_every_catalog_recipe_runs_through_attempt_and_sqlite3(live, home):
    path, _, _, i = live
    recipes = catalog.load_docs()["recipes"]
    assert any("work_units" in r["statement"] for r in recipes)
    for recipe in recipes:
        text = recipe["statement"].replace("{session}", i.S_FIX).replace("{attempt}", i.A2)
        p = attempt(["query", text, "--json"], path)
        assert p.returncode == 0, (text, p.stderr.decode())
        ours = json.loads(p.stdout)
        if sqltext.classify(text) != "sql" or text.split()[0].upper() == "EXPLAIN":
            assert isinstance(ours, list), text
            continue
        shell = subprocess.run([SQLITE3, "-readonly", "-json", path, text], capture_output=True, text=True,
                               timeout=60)
        assert shell.returncode == 0 and not shell.stderr, (text, shell.stderr)
        theirs = json.loads(shell.stdout) if shell.stdout.strip() else []
        assert _canon(ours) == _canon(theirs), text
        if "needs_you" in text or "work_units" in text or "conflicts" in text:
            assert ours, f"{text}: the live scenario should give this recipe rows"


def test_show_evidence_for_a_decision(live):
    _, conn, _, i = live
    dec, ev = conn.execute("SELECT decision_id, evidence FROM decisions").fetchone()
    r = run(live, f"SHOW EVIDENCE FOR {dec}")
    assert sorted(d["event_id"] for d in r.dicts()) == sorted(json.loads(ev))
    assert any(f"decision {dec}" in n for n in r.notes)


def test_what_is_an_attempt_doing_names_its_unit(recorded):
    i = recorded[3]
    r = run(recorded, f"WHAT IS attempt {i.A2} DOING NOW", now=at("09:00:55"))
    assert [(d["subject_type"], d["subject_id"]) for d in r.dicts()] == [("session", i.S_FIX), ("work_unit", i.U_FIX)]
    r = run(recorded, f"WHAT IS session {i.S_CODEX} DOING NOW", now=at("09:00:55"))
    assert set(units(r)) == {i.U_CODEX}


def test_why_and_trace_commands_take_a_work_unit(live, home):
    path, _, _, i = live
    p = attempt(["why", i.U_PERM, "--json"], path)
    assert p.returncode == 0, p.stderr.decode()
    [row] = json.loads(p.stdout)
    assert row["edge_type"] == "blocked" and row["from_id"] == i.PERM
    p = attempt(["trace", i.U_FIX[:11], "--json"], path)
    rows = json.loads(p.stdout)
    assert rows[0]["edge_type"] == "parent_of" and rows[0]["to_id"] == i.T_FIX


def test_as_of_t_runs_the_views_own_text():
    """`… AT t` changes no word of sql/85_work_units.sql but the clock: every view body read as
    of t is the view's text with @now() bound to :t (the rules are written once)."""
    from attemptdb.query import units as unit_rules
    from attemptdb.store import schema
    clock = schema.expand("@now()", dict(schema.predicates()))
    now, at_t = dict(unit_rules.view_bodies()), dict(unit_rules.view_bodies(":t"))
    assert set(now) == set(unit_rules.VIEWS) and clock in now["unit_verdicts"]
    for name in now:
        assert at_t[name].replace("(:t)", ":t") == now[name].replace(clock, ":t"), name

