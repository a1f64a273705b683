"""A hand-built scenario database with the catalog's tables, shared by the AttemptQL tests.

Until the projection migrations exist, the projection tables are created from the catalog
documentation (attemptdb.projections.catalog.scratch_ddl) and filled by hand, so the compiler and the
executor are tested against exactly the catalog's column names. The events table is the real
one (migrations/0001_events.sql).
"""

import os

import apsw
import pytest

from attemptdb import resources
from attemptdb.model import clock
from attemptdb.projections import catalog

NOW = clock.from_iso("2026-08-28T12:00:00Z")
MIN = 60 * 1_000_000
HOUR = 60 * MIN
DAY = 24 * HOUR

PRJ = "prj_11111111-1111-5111-8111-111111111111"
PRJ2 = "prj_22222222-2222-5222-8222-222222222222"


def _id(prefix: str, n: int, fill: str = "a") -> str:
    h = f"{n:08x}" + fill * 24
    return f"{prefix}{h[:8]}-{h[8:12]}-5{h[13:16]}-8{h[17:20]}-{h[20:32]}"


S1, S2, S3, S4, S5 = (_id("ses_", i) for i in range(1, 6))
T1, T2, T3, T4, T5 = (_id("trn_", i) for i in range(1, 6))
A1, A2, A3, A4, A5 = (_id("att_", i) for i in range(1, 6))
C1, C2, C3, C4 = (_id("tc_", i) for i in range(1, 5))
# two attempts whose ids share their first 8 hex digits (ambiguous short id)
AMB1 = "att_abcdef01-0000-5000-8000-000000000001"
AMB2 = "att_abcdef01-0000-5000-8000-000000000002"


def t(us_offset: int) -> str:
    return clock.iso(NOW + us_offset)


class Ev:
    """Event ids by name, created on first use."""

    def __init__(self):
        self.n = 0
        self.ids = {}

    def __call__(self, name: str) -> str:
        if name not in self.ids:
            self.n += 1
            self.ids[name] = _id("ev_", self.n, "e")
        return self.ids[name]


EV = Ev()

EVENT_DEFAULTS = {
    "schema_version": 1, "device_id": "dev_" + "d" * 8 + "-dddd-7ddd-8ddd-" + "d" * 12, "hlc": 0,
    "adapter_version": "test", "capture_mode": "local_semantic", "project_root": "/work/widget",
    "provider_session_id": "psid", "attrs_json": "{}", "event_hash": "0" * 64, "chain_hash": "0" * 64,
}


def insert(conn, table: str, row: dict):
    cols = ", ".join(f'"{k}"' for k in row)
    conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({", ".join("?" * len(row))})', tuple(row.values()))


def event(conn, name, session, kind, at, *, provider="claude_code", project=(PRJ, "acme/widget"), **kw):
    row = dict(EVENT_DEFAULTS)
    row.update(event_id=EV(name), observed_at=at, captured_at=at, ingested_at=at, provider=provider,
               provider_event_name=kind, kind=kind, project_id=project[0], project_name=project[1],
               session_id=session, agent_id=_id("agt_", 1), source_seq=EV.n)
    row.update(kw)
    insert(conn, "events", row)
    return row["event_id"]


def j(*items):
    return "[" + ",".join(f'"{x}"' for x in items) + "]"


def build(path: str) -> dict:
    """Create the scenario database at `path`."""
    conn = apsw.Connection(path)
    with open(resources.path("migrations", "0001_events.sql"), encoding="utf-8") as f:
        conn.execute(f.read())
    for ddl in catalog.scratch_ddl():
        name = ddl.split('"')[1]
        if name in ("events", "work_units", "decisions", "conflicts"):
            continue
        conn.execute(ddl)
    conn.execute("BEGIN")
    _fill(conn)
    conn.execute("COMMIT")
    conn.close()
    return {"S1": S1, "S2": S2, "S3": S3, "S4": S4, "S5": S5, "A1": A1, "A2": A2, "A3": A3, "A4": A4, "A5": A5,
            "T1": T1, "T2": T2, "C1": C1, "EV": EV.ids, "PRJ": PRJ}


def _session(conn, sid, provider, started, last, *, ended=None, state="open", coverage="full", retracted=0,
             project=(PRJ, "acme/widget"), evidence=(), conf=0.8, turns=1, calls=0, failures=0):
    insert(conn, "sessions", dict(
        session_id=sid, provider=provider, provider_session_id="psid-" + sid[-4:], project_id=project[0],
        project_name=project[1], state=state, started_at=started, ended_at=ended, end_reason=None,
        start_source="startup", event_count=len(evidence), turn_count=turns, prompt_count=turns,
        tool_call_count=calls, failure_count=failures, agents=j(_id("agt_", 1)), coverage=coverage,
        first_event_id=evidence[0], last_event_id=evidence[-1], last_event_at=last, start_event_id=evidence[0],
        end_event_id=None, evidence=j(*evidence), confidence=conf, algorithm_version="tier1-v5",
        retracted=retracted))


def _attempt(conn, aid, sid, turn, idx, started, ended, outcome, *, fclass=None, superseded_by=None,
             supersedes=None, evidence=(), paths=("src/app.py",), conf=0.7, retracted=0, provider="claude_code",
             corrected_by=None, corrected_at=None, inferred_outcome=None, objective=None, project=(PRJ, "acme/widget")):
    insert(conn, "attempts", dict(
        attempt_id=aid, session_id=sid, provider=provider, project_id=project[0], project_name=project[1],
        turn_id=turn, turn_index=0, attempt_index=idx, agent_id=_id("agt_", 1), objective=objective,
        approach="edit", started_at=started, ended_at=ended, outcome=outcome, failure_class=fclass,
        verification=None, tool_call_ids=j(), tool_call_count=1, paths=j(*paths), commit_shas=j(),
        superseded_by=superseded_by, supersedes=supersedes, evidence=j(*evidence), confidence=conf,
        algorithm_version="tier1-v5", work_unit_id=None, corrected_by=corrected_by, corrected_at=corrected_at,
        correction_type="attempt_outcome" if corrected_by else None, inferred_outcome=inferred_outcome,
        inferred_failure_class=None, note=None, retracted=retracted))


def _fill(conn):
    # S1: claude_code, open, its last two attempts failed with test_failure (repeat) -------------
    p1 = event(conn, "s1_prompt", S1, "prompt_submitted", t(-50 * MIN))
    f1 = event(conn, "s1_fail1", S1, "tool_call_failed", t(-45 * MIN), tool_name="Edit", outcome_status="failure")
    f2 = event(conn, "s1_fail2", S1, "tool_call_failed", t(-30 * MIN), tool_name="Bash", outcome_status="failure")
    f3 = event(conn, "s1_fail3", S1, "tool_call_failed", t(-20 * MIN), tool_name="Bash", outcome_status="failure")
    s4 = event(conn, "s1_start4", S1, "tool_call_started", t(-5 * MIN), tool_name="Bash")
    cor = event(conn, "s1_correction", S1, "correction", t(-4 * MIN), provider="attemptdb")
    _session(conn, S1, "claude_code", t(-50 * MIN), t(-4 * MIN), evidence=(p1, f1, f2, f3, s4), turns=1, calls=4,
             failures=3)
    insert(conn, "turns", dict(turn_id=T1, session_id=S1, provider="claude_code", project_id=PRJ,
                               project_name="acme/widget", turn_index=0, started_at=t(-50 * MIN), ended_at=None,
                               status="in_progress", prompt_event_id=p1, tool_call_ids=j(C1, C2, C3, C4),
                               tool_call_count=4, objective=None, prompt_chars=42, first_event_id=p1,
                               last_event_id=s4, evidence=j(p1, f1, f2, f3, s4), confidence=0.9,
                               algorithm_version="tier1-v5", retracted=0))
    _attempt(conn, A1, S1, T1, 0, t(-50 * MIN), t(-45 * MIN), "superseded", fclass="compile_error",
             superseded_by=A2, evidence=(p1, f1))
    _attempt(conn, A2, S1, T1, 1, t(-44 * MIN), t(-30 * MIN), "failed", fclass="test_failure", supersedes=A1,
             evidence=(f2,))
    _attempt(conn, A3, S1, T1, 2, t(-29 * MIN), t(-20 * MIN), "failed", fclass="test_failure", evidence=(f3,),
             corrected_by=cor, corrected_at=t(-4 * MIN), inferred_outcome="succeeded")
    for cid, started, finished, status, ev in ((C1, -46, -45, "failure", (f1,)), (C2, -31, -30, "failure", (f2,)),
                                               (C3, -21, -20, "failure", (f3,)), (C4, -5, None, None, (s4,))):
        insert(conn, "tool_calls", dict(
            tool_call_id=cid, session_id=S1, provider="claude_code", project_id=PRJ, project_name="acme/widget",
            turn_id=T1, agent_id=_id("agt_", 1), tool_name="Bash" if cid != C1 else "Edit",
            tool_category="shell" if cid != C1 else "file_edit", started_at=t(started * MIN),
            finished_at=t(finished * MIN) if finished else None, duration_ms=60000 if finished else None,
            outcome_status=status, path_relative="src/app.py", paths=j("src/app.py"), pairing="call_id",
            start_event_id=None, end_event_id=ev[0], evidence=j(*ev), confidence=1.0 if finished else 0.7,
            algorithm_version="tier1-v5", retracted=0))
    insert(conn, "corrections", dict(event_id=cor, corrected_at=t(-4 * MIN), session_id=S1, project_id=PRJ,
                                     correction_type="attempt_outcome", target_type="attempt", target=A3,
                                     outcome="failed", failure_class="test_failure", note=None, note_chars=None,
                                     status="applied", legacy_position=0, evidence=j(cor), confidence=1.0))
    insert(conn, "commits", dict(commit_id=_id("cmt_", 1), session_id=S1, provider="claude_code", project_id=PRJ,
                                 project_name="acme/widget", turn_id=T1, attempt_id=A2, tool_call_id=C2,
                                 sha="0123456789abcdef0123456789abcdef01234567", previous_sha=None, branch="main",
                                 committed_at=t(-30 * MIN), linkage="end_event", evidence=j(f2), confidence=0.9,
                                 algorithm_version="tier1-v5"))
    # ambiguous short ids (two attempts sharing 8 hex digits), both in S1
    _attempt(conn, AMB1, S1, T1, 3, t(-49 * MIN), t(-49 * MIN), "succeeded", evidence=(p1,))
    _attempt(conn, AMB2, S1, T1, 4, t(-49 * MIN), t(-49 * MIN), "succeeded", evidence=(p1,))

    # S2: codex, open, waiting on a permission request ------------------------------------------
    p2 = event(conn, "s2_prompt", S2, "prompt_submitted", t(-20 * MIN), provider="codex")
    perm = event(conn, "s2_perm", S2, "permission_requested", t(-10 * MIN), provider="codex", tool_name="shell")
    _session(conn, S2, "codex", t(-20 * MIN), t(-10 * MIN), evidence=(p2, perm))
    insert(conn, "turns", dict(turn_id=T2, session_id=S2, provider="codex", project_id=PRJ, project_name="acme/widget",
                               turn_index=0, started_at=t(-20 * MIN), ended_at=None, status="in_progress",
                               prompt_event_id=p2, tool_call_ids=j(), tool_call_count=0, objective="fix the tests",
                               prompt_chars=13, first_event_id=p2, last_event_id=perm, evidence=j(p2, perm),
                               confidence=0.9, algorithm_version="tier1-v5", retracted=0))
    _attempt(conn, A4, S2, T2, 0, t(-19 * MIN), None, "in_progress", evidence=(p2,), provider="codex",
             objective="fix the tests")
    insert(conn, "signals", dict(session_id=S2, event_id=perm, raised_at=t(-10 * MIN), agent_id=_id("agt_", 1),
                                 kind="permission_requested", signal_type=None, cleared_at=None, cleared_by=None,
                                 pending=1, blocking=1, evidence=j(perm), confidence=0.85, algorithm_version="tier1-v5"))

    # S3: cursor, closed two days ago, handed off to S1 -------------------------------------------
    p3 = event(conn, "s3_prompt", S3, "prompt_submitted", t(-2 * DAY - HOUR), provider="cursor")
    e3 = event(conn, "s3_end", S3, "session_ended", t(-2 * DAY), provider="cursor")
    _session(conn, S3, "cursor", t(-2 * DAY - HOUR), t(-2 * DAY), ended=t(-2 * DAY), state="closed",
             evidence=(p3, e3), conf=1.0)
    insert(conn, "turns", dict(turn_id=T3, session_id=S3, provider="cursor", project_id=PRJ, project_name="acme/widget",
                               turn_index=0, started_at=t(-2 * DAY - HOUR), ended_at=t(-2 * DAY), status="completed",
                               prompt_event_id=p3, tool_call_ids=j(), tool_call_count=0, objective="add a feature",
                               prompt_chars=13, first_event_id=p3, last_event_id=e3, evidence=j(p3, e3),
                               confidence=1.0, algorithm_version="tier1-v5", retracted=0))
    _attempt(conn, A5, S3, T3, 0, t(-2 * DAY - HOUR), t(-2 * DAY), "succeeded", evidence=(p3,), provider="cursor",
             objective="add a feature", paths=("crates/core/src/lib.rs",))
    insert(conn, "handoffs", dict(from_session=S3, to_session=S1, from_provider="cursor", to_provider="claude_code",
                                  project_id=PRJ, from_turn=T3, to_turn=T1, handoff_at=t(-50 * MIN),
                                  gap_ms=2 * 86400000, shared_paths=j("src/app.py"), evidence=j(e3, p1),
                                  confidence=0.6, algorithm_version="tier1-v5"))
    insert(conn, "signals", dict(session_id=S1, event_id=p1, raised_at=t(-49 * MIN), agent_id=_id("agt_", 1),
                                 kind="notification", signal_type="idle_prompt", cleared_at=t(-45 * MIN),
                                 cleared_by=f1, pending=0, blocking=0, evidence=j(p1), confidence=0.9,
                                 algorithm_version="tier1-v5"))

    # S4: retracted session with one (retracted) attempt -----------------------------------------
    p4 = event(conn, "s4_prompt", S4, "prompt_submitted", t(-3 * HOUR), retracted=1)
    ret = event(conn, "s4_retraction", S4, "retraction", t(-2 * HOUR), provider="attemptdb")
    _session(conn, S4, "claude_code", t(-3 * HOUR), t(-3 * HOUR), retracted=1, evidence=(p4,))
    _attempt(conn, _id("att_", 9), S4, T4, 0, t(-3 * HOUR), t(-3 * HOUR), "failed", fclass="timeout",
             evidence=(p4,), retracted=1)
    insert(conn, "retractions", dict(event_id=ret, retracted_at=t(-2 * HOUR), project_id=PRJ, target_type="session",
                                     target=S4, reason="test", note=None, note_chars=None, matched=1,
                                     retracted_events=1, legacy_position=0, evidence=j(ret), confidence=1.0))

    # S5: gemini_cli in another project, silent for three hours (stale) ---------------------------
    p5 = event(conn, "s5_prompt", S5, "prompt_submitted", t(-3 * HOUR), provider="gemini_cli",
               project=(PRJ2, "other"))
    _session(conn, S5, "gemini_cli", t(-3 * HOUR), t(-3 * HOUR), state="stale", evidence=(p5,),
             project=(PRJ2, "other"), coverage="partial")

    # the causal graph: A2 superseded A1; A1 caused by a failing edit, triggered by the prompt;
    # a contradicted edge A2 → A1 closes a cycle
    edges = [("superseded", "attempt", A1, "attempt", A2, (f1, f2), 0.7),
             ("caused", "event", f1, "attempt", A1, (f1,), 0.6),
             ("triggered", "event", p1, "attempt", A1, (p1,), 1.0),
             ("contradicted", "attempt", A2, "attempt", A1, (f2,), 0.5),
             ("superseded", "attempt", A2, "attempt", A3, (f2, f3), 0.7),
             ("evidence_for", "event", f3, "attempt", A3, (f3,), 1.0),
             ("parent_of", "turn", T1, "attempt", A1, (p1,), 1.0)]
    for i, (kind, ft, fid, tt, tid, ev, conf) in enumerate(edges, 1):
        insert(conn, "edges", dict(ordinal=i, edge_kind=kind, from_type=ft, from_id=fid, to_type=tt, to_id=tid,
                                   evidence=j(*ev), confidence=conf, edge_source="projection",
                                   algorithm_version="tier1-v5"))


@pytest.fixture
def scenario(tmp_path):
    """(path, ids) of a fresh scenario database."""
    path = str(tmp_path / "scenario.db")
    ids = build(path)
    return path, ids


def open_readonly(path):
    from attemptdb.store.readonly import connect
    return connect(path)


def test_scenario_builds_with_the_catalog_columns(scenario):
    path, ids = scenario
    conn, gate = open_readonly(path)
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 5
    assert conn.execute("SELECT count(*) FROM attempts WHERE retracted").fetchone()[0] == 1
    cols = {r[1] for r in conn.execute("PRAGMA table_info(attempts)")}
    assert {"attempt_id", "outcome", "superseded_by", "evidence", "retracted"} <= cols
    assert os.path.getsize(path) > 0
