"""A provider clock ahead of the capture clock (spec/canonical-event.md: observed_at keeps the
provider's time up to 7 days after the capture) stamps a work unit's latest activity after the
moment it is read. Its idle time reads 0, never negative, and the status reason says how far
ahead the activity is stamped (sql/85_work_units.sql unit_verdicts, spec/projections.md §16,
migration 0021); the unit stays open, and Needs You looks at it as SHOW WORK UNITS lists it."""

import json
import os
import re

import apsw
import pytest
from conftest import SQLITE3, needs_shell, run_attempt

from attemptdb import adapters, resources
from attemptdb.ingest import privacy
from attemptdb.model import clock, ids
from attemptdb.query import read
from attemptdb.store import schema
from attemptdb.store.database import Store

MIN = 60
DAY = 86400
SPAN = r"(\d+(?:s| min| h| d))"
OPEN_AHEAD = re.compile(r"session open and 0s idle \(<= 30 min; its last activity is stamped " + SPAN + r" after now\)")
ENDED_AHEAD = re.compile(r"session ended but the work did not finish: 0s idle \(<= 2 h; "
                         r"its last activity is stamped " + SPAN + r" after now\)")
UNITS = {"s": 1, " min": 60, " h": 3600, " d": 86400}
NEGATIVE = re.compile(r"-\d+s idle")


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "ATTEMPTDB_SESSION": "", "COLUMNS": "220", "TZ": "UTC"}


def _hook(root: str, session: str, name: str, **fields) -> dict:
    return {"hook_event_name": name, "session_id": session, "cwd": root, **fields}


def _edit_turn(root: str, session: str) -> list:
    path = os.path.join(root, "a.py")
    call = {"tool_name": "Edit", "tool_use_id": "e1", "tool_input": {"file_path": path}}
    return [_hook(root, session, "SessionStart", source="startup"),
            _hook(root, session, "UserPromptSubmit", prompt="rename the helper"),
            _hook(root, session, "PreToolUse", **call),
            _hook(root, session, "PostToolUse", tool_response={}, **call)]


def _failing_tests(root: str, session: str, times: int = 2) -> list:
    out = [_hook(root, session, "SessionStart", source="startup"),
           _hook(root, session, "UserPromptSubmit", prompt="make the suite green")]
    for i in range(times):
        call = {"tool_name": "Bash", "tool_use_id": f"t{i}", "tool_input": {"command": "pytest -q"}}
        out += [_hook(root, session, "PreToolUse", **call),
                _hook(root, session, "PostToolUseFailure", error="Exit code 1\n1 failed", **call)]
    return out


def _append(db: str, payloads: list, ahead_s: int) -> None:
    """Build each payload as `attempt capture` would, captured now (a microsecond apart) with the
    provider's own timestamp `ahead_s` seconds after its capture."""
    dev = ids.derive("dev_", "clock-ahead")
    now = clock.now_us()
    envs = []
    for i, p in enumerate(payloads):
        project = ids.project_identity(p["cwd"], None, dev)
        captured = now + i
        ctx = adapters.Context(dev, "local_semantic", project, captured, hook_version="test")
        p = dict(p, timestamp=clock.iso(captured + ahead_s * 1_000_000))
        envs.append(privacy.ingest(adapters.build_event("claude_code", p, None, ctx), db_mode="local_semantic"))
    st = Store.open(db)
    try:
        st.append(envs)
    finally:
        st.close()


def _units(conn) -> dict:
    return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT work_unit_id, status, status_reason FROM work_units")}


def _span(text: str) -> tuple[int, int]:
    """The seconds [lo, hi) a span text (`448s`, `7 min`, `2 h`, `5 d`: floored) stands for."""
    m = re.fullmatch(r"(\d+)(s| min| h| d)", text)
    assert m, text
    unit = UNITS[m.group(2)]
    return int(m.group(1)) * unit, (int(m.group(1)) + 1) * unit


def _ahead(pattern, reason: str) -> int:
    """The seconds ahead the reason names (the span's low end)."""
    m = pattern.fullmatch(reason)
    assert m, reason
    return _span(m.group(1))[0]


# --- through the hook: `attempt capture claude-code` ------------------------------------------

def test_a_hook_payload_stamped_minutes_ahead_reads_zero_idle_never_negative(tmp_path, home):
    db, env = str(tmp_path / "attempt.db"), _env(home)
    root = str(tmp_path / "proj")
    os.mkdir(root)
    ahead = clock.iso(clock.now_us() + 8 * MIN * 1_000_000)
    for payload in _edit_turn(root, "s-ahead"):
        p = run_attempt(["capture", "claude-code", "--db", db], input=json.dumps(dict(payload, timestamp=ahead)).encode(),
                        env=env, cwd=root)
        assert p.returncode == 0 and not p.stdout, p.stderr
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    stamped = conn.execute("SELECT max(observed_at) > max(captured_at) FROM events").fetchone()[0]
    conn.close()
    assert stamped, "the provider's time is kept (under the 7-day bound)"

    p = run_attempt(["query", "--db", db, "--json", "SHOW WORK UNITS"], env=env)
    assert p.returncode == 0, p.stderr
    (unit,) = json.loads(p.stdout)
    assert unit["status"] == "open"
    assert 0 < _ahead(OPEN_AHEAD, unit["status_reason"]) <= 8 * MIN

    p = run_attempt(["timeline", "--db", db, "--units"], env=env)
    assert p.returncode == 0, p.stderr
    assert b"0s idle (<= 30 min; its last activity is stamped" in p.stdout
    assert not NEGATIVE.search(p.stdout.decode())
    p = run_attempt(["why", "--db", db, unit["work_unit_id"]], env=env)
    assert p.returncode == 0, p.stderr
    assert not NEGATIVE.search(p.stdout.decode())


@needs_shell
def test_the_sqlite3_shell_reads_the_same_idle(tmp_path, home):
    import subprocess
    db = str(tmp_path / "attempt.db")
    _append(db, _edit_turn("/w/shell", "s1"), 8 * MIN)
    p = subprocess.run([SQLITE3, "-readonly", db, "SELECT status || '|' || status_reason FROM work_units;"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    status, reason = p.stdout.strip().split("|")
    assert status == "open" and 0 < _ahead(OPEN_AHEAD, reason) <= 8 * MIN


# --- the rule, over the skews that keep their time --------------------------------------------

@pytest.mark.parametrize("ahead_s", [2 * MIN, 8 * MIN, 6 * DAY])
def test_idle_is_held_at_zero_and_the_reason_says_how_far_ahead(tmp_path, ahead_s):
    db = str(tmp_path / "attempt.db")
    _append(db, _edit_turn("/w/a", "s1"), ahead_s)
    st = Store.open(db)
    try:
        ((status, reason),) = _units(st.conn).values()
    finally:
        st.close()
    assert status == "open"
    m = OPEN_AHEAD.fullmatch(reason)
    assert m, reason
    lo, hi = _span(m.group(1))
    assert lo <= ahead_s < hi + 60, reason  # floored to its unit; the capture took up to a minute


def test_past_the_seven_day_bound_the_capture_time_stands_in(tmp_path):
    db = str(tmp_path / "attempt.db")
    _append(db, _edit_turn("/w/a", "s1"), 8 * DAY)
    st = Store.open(db)
    try:
        ((status, reason),) = _units(st.conn).values()
    finally:
        st.close()
    assert status == "open" and re.fullmatch(r"session open and \d+s idle \(<= 30 min\)", reason), reason


def test_an_ended_session_s_unfinished_work_reads_zero_idle_too(tmp_path):
    db = str(tmp_path / "attempt.db")
    _append(db, _failing_tests("/w/e", "s1", times=1) + [_hook("/w/e", "s1", "SessionEnd", reason="exit")], 8 * MIN)
    st = Store.open(db)
    try:
        ((status, reason),) = _units(st.conn).values()
    finally:
        st.close()
    assert status == "open"
    assert 0 < _ahead(ENDED_AHEAD, reason) <= 8 * MIN


def test_a_unit_in_time_reads_as_before(tmp_path):
    db = str(tmp_path / "attempt.db")
    _append(db, _edit_turn("/w/a", "s1"), -5 * MIN)
    st = Store.open(db)
    try:
        ((status, reason),) = _units(st.conn).values()
    finally:
        st.close()
    assert status == "open" and reason == "session open and 5 min idle (<= 30 min)", reason


# --- Needs You looks at what SHOW WORK UNITS lists open ---------------------------------------

@pytest.fixture
def ahead_and_failing(tmp_path):
    """A unit whose tests failed twice the same way, stamped 8 minutes ahead."""
    db = str(tmp_path / "attempt.db")
    _append(db, _failing_tests("/w/fail", "f1"), 8 * MIN)
    return db


def test_needs_you_reads_the_open_unit_stamped_ahead(ahead_and_failing):
    st = Store.open(ahead_and_failing)
    try:
        conn = st.conn
        units = _units(conn)
        opened = {u for u, (status, _) in units.items() if status == "open"}
        assert len(opened) == 1
        assert not any(NEGATIVE.search(reason) for _, reason in units.values())
        # the 12 h window of Needs You holds every unit SHOW WORK UNITS lists open
        assert {r[0] for r in conn.execute("SELECT work_unit_id FROM units_open_now")} == opened
        rows = conn.execute("SELECT kind, work_unit_id FROM needs_you").fetchall()
        assert rows == [("repeated_failure", next(iter(opened)))]
    finally:
        st.close()


def test_the_open_units_needs_you_checked_include_the_one_stamped_ahead(ahead_and_failing):
    st = Store.open(ahead_and_failing)
    try:
        got = read.needs_you(st.conn)
    finally:
        st.close()
    assert [r["kind"] for r in got["needs_you"]] == ["repeated_failure"]
    assert got["checked"] == {"open_sessions": 1, "open_work_units": 1}


# --- a file written before 0021 ----------------------------------------------------------------

def _old_verdicts() -> str:
    """The unit_verdicts view as it was before 0021 (idle as now − updated_at, unbounded)."""
    with open(os.path.join(resources.folder("sql"), "85_work_units.sql"), encoding="utf-8") as f:
        text = f.read()
    v = text[text.index("CREATE VIEW unit_verdicts AS"):]
    v = v[:v.index(";\n") + 1]
    new_idle = "max(0, (@us(@now()) - @us(b.updated_at)) / 1000000) AS idle_s"
    assert new_idle in v
    return schema.expand(v.replace(new_idle, "(@us(@now()) - @us(b.updated_at)) / 1000000 AS idle_s"),
                         schema.predicates())


def test_a_file_from_before_0021_reads_no_negative_idle_when_opened(tmp_path):
    db = str(tmp_path / "old.db")
    _append(db, _edit_turn("/w/old", "s1"), 8 * MIN)
    conn = apsw.Connection(db)
    conn.execute("DROP VIEW unit_verdicts")
    conn.execute(_old_verdicts())
    (old,) = [r for _, r in _units(conn).values()]
    assert NEGATIVE.search(old), old  # what the file read before
    conn.execute("PRAGMA user_version = 20")
    conn.close()
    st = Store.open(db)
    try:
        assert st.user_version() == schema.latest() >= 21
        ((status, reason),) = _units(st.conn).values()
        assert status == "open" and 0 < _ahead(OPEN_AHEAD, reason) <= 8 * MIN
    finally:
        st.close()


# --- idle read as a person reads a wait (migration 0022) ---------------------------------------

@pytest.mark.parametrize("secs, text", [(0, "0s"), (119, "119s"), (120, "2 min"), (7199, "119 min"),
                                        (7200, "2 h"), (172799, "47 h"), (172800, "2 d"), (9471056, "109 d")])
def test_a_span_of_seconds_reads_in_the_unit_a_person_reads(secs, text):
    conn = apsw.Connection(":memory:")
    (got,) = conn.execute(schema.expand("SELECT @span(?1)", schema.predicates()), (secs,)).fetchone()
    assert got == text


def test_a_unit_idle_for_days_reads_days_not_seconds(tmp_path):
    db = str(tmp_path / "attempt.db")
    _append(db, _failing_tests("/w/old", "o1", times=1), -40 * DAY)
    st = Store.open(db)
    try:
        ((status, reason),) = _units(st.conn).values()
    finally:
        st.close()
    assert status == "abandoned" and reason.endswith(" and 40 d idle (> 2 h)"), reason
