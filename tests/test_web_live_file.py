"""`attempt ui` over a file written while it serves: a real `attempt ui` process, real `attempt
capture` processes writing sessions meanwhile, and another process cutting the -wal to nothing
again and again (a TRUNCATE checkpoint, as a daemon that leaves folds it). Every page answers 200
throughout, and the counts it shows only grow, to the final one.

The UI process holds the file through two copies of SQLite (Datasette's, the standard library's;
the plugin's, apsw's): when it closed a descriptor of the file (an apsw connection opened per
recipe and per spool drain), every POSIX lock of the process on the file went, Datasette's too,
and every page then answered 500 (`database disk image is malformed`) until a restart
(readers/web/plugin.py, its module invariants)."""

import json
import os
import subprocess
import threading
import time
import urllib.parse

import pytest
from conftest import ROOT, attempt_cmd, run_attempt

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

from test_readers_ui import UI  # noqa: E402  (needs datasette)

from attemptdb.readers.web import plugin, serve  # noqa: E402

WRITERS = 4
SESSIONS_EACH = 60
RECIPE = "what-did-the-agents-try"  # run by the engine on the plugin's apsw connection


def _env(home, db) -> dict:
    return dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"),
                XDG_STATE_HOME=str(home / ".local" / "state"), XDG_CONFIG_HOME=str(home / ".config"),
                PYTHONPATH=ROOT, ATTEMPTDB_NO_DAEMON="1", ATTEMPTDB_PATH=db)


def _write(env, writer: int, cwd: str, failures: list) -> None:
    for i in range(SESSIONS_EACH):
        payload = json.dumps({"session_id": f"live-{writer}-{i}", "cwd": cwd, "hook_event_name": "SessionStart"})
        p = subprocess.run(attempt_cmd() + ["capture", "claude-code"], input=payload.encode(), env=env,
                           capture_output=True, timeout=60)
        if p.returncode:
            failures.append(p.stderr.decode("utf-8", "replace"))


def _truncate_wal(db: str) -> None:
    """A TRUNCATE checkpoint from this process (not the UI's): the -wal folded and cut to nothing."""
    import apsw
    conn = apsw.Connection(db)
    try:
        conn.set_busy_timeout(2000)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.BusyError:
        pass
    finally:
        conn.close()


def _count(ui, answers: list) -> int | None:
    """The sessions Datasette's connection counts now (None when the page did not answer 200)."""
    sql = urllib.parse.urlencode({"sql": "SELECT count(*) AS n FROM sessions", "_shape": "array"})
    status, body = ui.request(f"/{serve.DB_NAME}.json?{sql}")
    answers.append(("count", status, body[:300]))
    return json.loads(body)[0]["n"] if status == 200 else None


def _pages(ui, answers: list) -> None:
    for path in (f"/{serve.DB_NAME}/sessions", plugin.PREFIX, f"{plugin.PREFIX}/needs-you.json",
                 f"{plugin.PREFIX}/recipes/{RECIPE}?_format=json"):
        status, body = ui.request(path)
        answers.append((path, status, body[:300]))


def test_every_page_answers_while_the_file_is_written_and_its_wal_cut(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    db = str(tmp_path / "attempt.db")
    env = _env(home, db)
    p = run_attempt(["init", "--db", db], env=env)
    assert p.returncode == 0, p.stderr
    ui = UI(db, home)
    answers, counts, failures = [], [], []
    try:
        writers = [threading.Thread(target=_write, args=(env, k, str(project), failures)) for k in range(WRITERS)]
        for w in writers:
            w.start()
        while any(w.is_alive() for w in writers):
            _pages(ui, answers)
            counts.append(_count(ui, answers))
            _truncate_wal(db)
        for w in writers:
            w.join()
        assert not failures, failures[0]
        final = WRITERS * SESSIONS_EACH
        deadline = time.monotonic() + 15  # events a busy file left in the spool: the UI drains them
        while counts[-1] != final and time.monotonic() < deadline:
            _pages(ui, answers)
            counts.append(_count(ui, answers))
            time.sleep(0.2)
    finally:
        err = ui.stop()
    bad = [a for a in answers if a[1] != 200]
    assert not bad, (f"{len(bad)} of {len(answers)} answers were not 200, the first: {bad[0]}\n"
                     + err[-2000:])
    assert "malformed" not in err, err[-2000:]
    assert counts[-1] == final, counts
    assert counts == sorted(counts), counts  # a later read never shows fewer sessions
