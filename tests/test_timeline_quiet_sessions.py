"""A session that holds only what people recorded (notes, approvals, git snapshots) has no
prompt and no tool call: `attempt timeline` leaves it out unless `--all`, and said "no sessions
yet" (or "no sessions in this scope" for the very session named). A session named is shown,
with its notes and approvals counted; otherwise the timeline says how many it left out and why."""

import json

from conftest import run_attempt


def _env(db):
    return {"ATTEMPTDB_PATH": db, "ATTEMPTDB_NO_DAEMON": "1", "COLUMNS": "80"}


def recorded(db):
    for args in (["note", "the deploy waits for QA"], ["approve", "release 4.2"], ["note", "QA passed"]):
        p = run_attempt(args, env=dict(_env(db), ATTEMPTDB_SESSION="ci-9"))
        assert p.returncode == 0, p.stderr


def test_a_session_named_is_shown_with_what_people_recorded_in_it(db):
    recorded(db)
    p = run_attempt(["timeline", "--session", "ci-9"], env=_env(db))
    out = p.stdout.decode()
    assert p.returncode == 0 and "no sessions" not in out, out
    assert "0 turns · 0 tool calls · 0 failures · 2 notes · 1 approval" in out, out


def test_an_unscoped_timeline_says_what_it_left_out(db):
    recorded(db)
    p = run_attempt(["timeline"], env=_env(db))
    out = " ".join(p.stdout.decode().split())
    assert p.returncode == 0 and "no sessions yet" not in out, out
    assert "no session with a prompt or a tool call: 1 session holds only notes, approvals or snapshots" in out
    assert "`--all` shows them" in out
    data = json.loads(run_attempt(["timeline", "--json"], env=_env(db)).stdout)
    assert data["sessions"] == [] and data["sessions_without_turns"] == 1
    data = json.loads(run_attempt(["timeline", "--all", "--json"], env=_env(db)).stdout)
    assert [(s["notes"], s["approvals"]) for s in data["sessions"]] == [(2, 1)]


def test_a_scoped_timeline_counts_the_events_of_its_scope(db):
    """`timeline --session X` said "from 11,587 events" (the whole file) of a session of 10."""
    recorded(db)
    p = run_attempt(["note", "elsewhere"], env=dict(_env(db), ATTEMPTDB_SESSION="other"))
    assert p.returncode == 0
    whole = json.loads(run_attempt(["timeline", "--all", "--json"], env=_env(db)).stdout)["events"]
    one = json.loads(run_attempt(["timeline", "--session", "ci-9", "--json"], env=_env(db)).stdout)["events"]
    mine = json.loads(run_attempt(["query", "SELECT event_count FROM sessions WHERE provider_session_id = 'ci-9'",
                                   "--json"], env=_env(db)).stdout)[0]["event_count"]
    assert one == mine == 4 and whole > one  # session.started and three records; the other session's too
