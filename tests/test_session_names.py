"""A session named by what its agent calls it (Claude Code's `session_id`, the one a user sees)
or by the name `attempt run`/`note` recorded: `FOR session = 'x'`, `--session x`. A name no
session has said "malformed session id; expected hex digits", about a well-formed name."""

import json

from conftest import run_attempt

ENV = {"ATTEMPTDB_NO_DAEMON": "1"}


def _db(tmp_path):
    db = str(tmp_path / "s.db")
    for p in ({"hook_event_name": "SessionStart", "session_id": "sess-day-1", "cwd": "/tmp", "source": "startup"},
              {"hook_event_name": "UserPromptSubmit", "session_id": "sess-day-1", "cwd": "/tmp", "prompt": "hi"}):
        r = run_attempt(["capture", "claude-code", "--db", db], input=json.dumps(p).encode(), env=ENV)
        assert r.returncode == 0
    assert run_attempt(["note", "hello", "--session", "ci-4711", "--db", db], env=ENV).returncode == 0
    return db


def test_an_agent_s_own_session_id_names_its_session(tmp_path, home):
    db = _db(tmp_path)
    r = run_attempt(["query", "SHOW SESSIONS FOR session = 'sess-day-1'", "--json", "--db", db], env=ENV)
    rows = json.loads(r.stdout)
    assert r.returncode == 0 and [x["provider"] for x in rows] == ["claude_code"], r.stderr
    r = run_attempt(["events", "--session", "sess-day-1", "--jsonl", "--db", db], env=ENV)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2
    r = run_attempt(["query", "SHOW NOTES FOR session = 'ci-4711'", "--json", "--db", db], env=ENV)
    assert r.returncode == 0 and len(json.loads(r.stdout)) == 1


def test_a_name_no_session_has_says_so(tmp_path, home):
    db = _db(tmp_path)
    r = run_attempt(["query", "SHOW APPROVALS FOR session = 'ci-9999'", "--db", db], env=ENV)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("error[AQL0301]: no session named 'ci-9999'"), err
    assert "malformed" not in err
    r = run_attempt(["events", "--session", "ci-9999", "--db", db], env=ENV)
    assert r.returncode == 2 and b"no session named 'ci-9999'" in r.stderr
