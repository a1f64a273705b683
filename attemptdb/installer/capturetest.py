"""The capture test: prove an installed hook really delivers, end to end.

Invariant: the test runs the exact command written into the agent's config, as a real
subprocess through `/bin/sh` (as the agent would), with the capture-test payload of
reference §3.1 on stdin and this process's environment less `ATTEMPTDB_PATH` (an agent's
hooks do not see the variable of the shell that installed them: a database install was given
is named in the command itself, `--db`); it passes only when a `capture_test` event from that
provider and that test session appears in the database the command writes to (`db`, else
the one resolved from the working directory). Output of the hook is never echoed.
"""

import os
import subprocess
import time

from ..adapters import registry
from ..model.fastjson import dumps
from ..store import location

POLL_S = 2.0


def session_id() -> str:
    return f"attemptdb-capture-test-{os.getpid()}"


def payload(provider: str, cwd: str) -> dict:
    event = registry.CAPTURE_TEST_EVENT[provider]
    sid_key = "conversation_id" if provider == "cursor" else "session_id"
    return {"hook_event_name": event, sid_key: session_id(), "cwd": cwd,
            "_attemptdb_capture_test": True}


def _head(db_path):
    """(max seq, whether the file exists)."""
    if not os.path.exists(db_path):
        return 0, False
    from ..store.database import Store
    try:
        with Store.open(db_path, readonly=True) as s:
            row = s.conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()
            return row[0], True
    except Exception:
        return 0, True


def _find(db_path, after_seq, provider):
    from ..store.database import Store
    with Store.open(db_path, readonly=True) as s:
        row = s.conn.execute(
            "SELECT event_id FROM events WHERE seq > ? AND provider = ? AND kind = 'capture_test' "
            "AND provider_session_id = ? ORDER BY seq DESC LIMIT 1",
            (after_seq, provider, session_id())).fetchone()
    return row[0] if row else None


def run(agent, command: str, *, db=None, timeout_s: float = 20.0, cwd=None) -> dict:
    """Run one capture test; returns {provider, hook_id, ok, event_id | error{code,message}, ms}."""
    cwd = cwd or os.getcwd()
    db_path = location.resolve(db, cwd)
    out = {"provider": agent.provider, "hook_id": agent.hook_id, "database": db_path, "ok": False}
    env = dict(os.environ)
    env.pop("ATTEMPTDB_PATH", None)  # as an agent runs it: the command itself names the database (or not)
    after, _ = _head(db_path)
    data = dumps(payload(agent.provider, cwd)).encode("utf-8")
    t0 = time.monotonic()
    try:
        proc = subprocess.run(command, shell=True, input=data, capture_output=True, env=env,
                              cwd=cwd, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        out["error"] = {"code": "installer.capture_test_timeout",
                        "message": f"the hook command did not finish within {timeout_s:g} s"}
        return out
    except OSError as e:
        out["error"] = {"code": "installer.capture_test_failed",
                        "message": f"the hook command could not start ({e.strerror})"}
        return out
    out["ms"] = round((time.monotonic() - t0) * 1000, 1)
    if proc.returncode != 0:
        out["error"] = {"code": "installer.capture_test_failed",
                        "message": f"the hook command exited with status {proc.returncode}"}
        return out
    deadline = time.monotonic() + POLL_S
    while True:
        try:
            eid = _find(db_path, after, agent.provider) if os.path.exists(db_path) else None
        except Exception as e:  # a database we cannot read is a failed test, not a crash
            out["error"] = {"code": "installer.capture_test_unreadable",
                            "message": f"cannot read the database ({type(e).__name__})"}
            return out
        if eid:
            out["ok"] = True
            out["event_id"] = eid
            return out
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    out["error"] = {"code": "installer.capture_test_missing",
                    "message": "the hook ran but no capture_test event reached the database "
                               "(it may be waiting in the spool; run `attempt doctor`)"}
    return out
