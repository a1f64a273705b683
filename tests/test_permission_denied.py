"""A tool call the user denied (a user walkthrough): Claude Code sends PreToolUse, then
PermissionRequest, then PermissionDenied with the same `tool_use_id`, and never a PostToolUse.
The denial closes the call `denied` (the canonical `permission_denied` event names the call id
and carries outcome.status = denied), so the call is not in flight forever, the attempt holding
it fails, and the edit that never happened is no edited path: another agent really editing the
same file is no conflict (spec/projections.md §6, §7, §16)."""

import json
import subprocess

import apsw
import pytest
from conftest import ROOT, run_attempt

from attemptdb.projections import rebuild, units
from attemptdb.store import schema
from attemptdb.store.database import Store


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPATH": ROOT, "ATTEMPTDB_NO_DAEMON": "1", "COLUMNS": "120"}


def _payloads(proj):
    patch = "*** Begin Patch\n*** Update File: {0}\n@@\n-a\n+b\n*** End Patch"
    edit = {"file_path": f"{proj}/src/config.ts", "old_string": "3", "new_string": "5"}
    cc = {"cwd": proj, "session_id": "cc-D"}
    cx = {"session_id": "cx-1", "turn_id": "t1", "cwd": proj}
    return [
        ("codex", dict(cx, hook_event_name="UserPromptSubmit", prompt="tune config")),
        ("codex", dict(cx, hook_event_name="PostToolUse", tool_name="apply_patch", tool_use_id="c1",
                       tool_input={"patch": patch.format("src/other.py")},
                       tool_response={"output": "Success. Updated the following files:\nM src/other.py"})),
        ("claude-code", dict(cc, hook_event_name="UserPromptSubmit", prompt="bump retries")),
        ("claude-code", dict(cc, hook_event_name="PreToolUse", tool_name="Edit", tool_use_id="tD1", tool_input=edit)),
        ("claude-code", dict(cc, hook_event_name="PermissionRequest", tool_name="Edit", tool_use_id="tD1",
                             tool_input=edit)),
        ("claude-code", dict(cc, hook_event_name="PermissionDenied", tool_name="Edit", tool_use_id="tD1",
                             tool_input=edit, reason="User rejected the edit")),
        ("claude-code", dict(cc, hook_event_name="Stop", stop_hook_active=False)),
        ("codex", dict(cx, hook_event_name="PostToolUse", tool_name="apply_patch", tool_use_id="c2",
                       tool_input={"patch": patch.format("src/config.ts")},
                       tool_response={"output": "Success. Updated the following files:\nM src/config.ts"})),
    ]


@pytest.fixture(scope="module")
def denied_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("permission-denied")
    home, proj = tmp / "home", tmp / "proj"
    home.mkdir()
    (proj / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    db = str(tmp / "denied.db")
    assert run_attempt(["init", "--db", db], env=_env(home)).returncode == 0
    for provider, p in _payloads(str(proj)):
        r = run_attempt(["capture", provider, "--db", db], input=json.dumps(p).encode(), env=_env(home))
        assert r.returncode == 0, r.stderr.decode()
    return home, db


def _rows(db, sql):
    c = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return c.execute(sql).fetchall()
    finally:
        c.close()


def test_the_denial_closes_the_call_denied(denied_db):
    _, db = denied_db
    rows = _rows(db, "SELECT outcome_status, pairing, end_event_id IS NOT NULL FROM tool_call_facts "
                     "WHERE provider_call_id = 'tD1'")
    assert rows == [("denied", "call_id", 1)]
    e = _rows(db, "SELECT c.end_event_id = e.event_id FROM tool_call_facts c JOIN events e "
                  "ON e.kind = 'permission_denied' WHERE c.provider_call_id = 'tD1'")
    assert e == [(1,)]
    assert _rows(db, "SELECT failure_count FROM session_facts WHERE provider = 'claude_code'") == [(1,)]


def test_the_attempt_holding_the_denied_edit_fails(denied_db):
    _, db = denied_db
    rows = _rows(db, "SELECT outcome, failure_class FROM attempts WHERE provider = 'claude_code'")
    assert rows == [("failed", "denied")]


def test_a_denied_edit_is_no_edited_path_and_no_conflict(denied_db):
    home, db = denied_db
    edits = _rows(db, "SELECT u.provider, e.path FROM unit_edits e JOIN unit_turns u ON u.turn_id = e.turn_id "
                      "ORDER BY 1, 2")
    assert edits == [("codex", "src/config.ts"), ("codex", "src/other.py")]
    assert _rows(db, "SELECT count(*) FROM conflicts") == [(0,)]
    r = run_attempt(["needs-you", "--db", db, "--json"], env=_env(home))
    assert r.returncode in (0, 1), r.stderr.decode()
    assert "conflict" not in r.stdout.decode()


# --- a file whose projections the old rule wrote ----------------------------------------------

def _events(home, db):
    r = run_attempt(["events", "--db", db, "--jsonl"], env=_env(home))
    assert r.returncode == 0, r.stderr.decode()
    return [json.loads(line) for line in r.stdout.decode().splitlines() if line.strip()]


def _state(conn):
    return rebuild.dump(conn, rebuild.STATE_TABLES, portable=True)


def _old_rules(conn, monkeypatch):
    """The rules before migration 0017: a denial is never a call's end (apply_other's), and a
    call that ended denied edits its paths for work units."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'project_dispatch'").fetchone()[0]
    old = sql.replace("NEW.kind = 'permission_denied' AND NEW.call_id IS NOT NULL", "0")
    assert old != sql
    conn.execute("DROP TRIGGER project_dispatch")
    conn.execute(old)
    real = units._sql
    assert "c.outcome_status IS NOT 'denied'" in real("edits")
    monkeypatch.setattr(units, "_sql", lambda name: real(name).replace("AND c.outcome_status IS NOT 'denied'", ""))


def test_a_file_from_before_0017_gets_the_denied_call_closed_when_opened(tmp_path, denied_db, monkeypatch):
    home, db = denied_db
    envs = _events(home, db)
    fresh, path = str(tmp_path / "new.db"), str(tmp_path / "old.db")
    st = Store.open(fresh)
    try:
        for e in envs:
            st.append([dict(e)])
        want = _state(st.conn)
    finally:
        st.close()
    with monkeypatch.context() as m:
        st = Store.open(path)
        try:
            _old_rules(st.conn, m)
            for e in envs:
                st.append([dict(e)])
            assert st.conn.execute("SELECT outcome_status FROM tool_call_facts "
                                   "WHERE provider_call_id = 'tD1'").fetchall() == [(None,)]
            assert _state(st.conn) != want
        finally:
            st.close()
    conn = apsw.Connection(path)
    conn.execute("PRAGMA user_version = 16")
    conn.close()
    st = Store.open(path)
    try:
        assert st.user_version() == schema.latest()
        assert _state(st.conn) == want
        rep = rebuild.reproject(st.conn, write=False)
        assert rep.clean, rep.as_dict()
    finally:
        st.close()
