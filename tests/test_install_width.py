"""Lines that fit 80 columns, found by a new user's walkthrough at COLUMNS=80: `attempt hook
install` (and `--dry-run`, `uninstall`: ~400-column lists of event names and a ~150-column hook
command line), `attempt status` (its `events … (not counted: … capture-test sessions …)` line,
125 columns) and `attempt daemon status` (the socket path, 103). Prose is wrapped at spaces
(termtable.prose): a list of event names at its `, `, never inside a name, a path or a
backticked command; a word wider than a line gets a line of its own. --json is unchanged."""

import json
import os
import shutil
import tempfile
import time

import pytest
from conftest import run_attempt
from test_term_prose import fits, joined

from attemptdb.adapters import registry
from attemptdb.installer import agents


def _env(home, **extra):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "COLUMNS": "80", "NO_COLOR": "1", "TZ": "UTC", **extra}


def run(home, args, ok=(0,), **env):
    p = run_attempt(list(args), env=_env(home, **env))
    assert p.returncode in ok and b"Traceback" not in p.stderr, (args, p.returncode, p.stderr.decode())
    return p.stdout.decode(), p.stderr.decode()


@pytest.fixture
def wired(home, tmp_path):
    """Every agent detected (its directory there), and a database with a space in its path."""
    for a in agents.AGENTS.values():
        os.makedirs(os.path.dirname(a.config_path()), exist_ok=True)
    d = tmp_path / "my dbs"
    d.mkdir()
    return home, str(d / "attempt.db")


def _lists_whole(text: str, verb: str) -> None:
    """Each agent's list of event names is there in full, in order, once joined back."""
    flat = joined(text)
    for p in registry.PROVIDERS:
        names = ", ".join(agents.AGENTS[p].events)
        assert f"{len(agents.AGENTS[p].events)} event(s): {names}" in flat, (verb, p)


def test_hook_install_dry_run_install_and_uninstall_fit_80_columns(wired):
    home, db = wired
    whole = (db, f"'{db}'")  # (the path, and quoted in the hook command: each a word wider than a line here)
    out, err = run(home, ["hook", "install", "--dry-run", "--db", db])
    fits(out + err, whole=whole)
    _lists_whole(out, "would subscribe")
    assert "would subscribe" in out and "hook command: " in out
    flat = joined(out)
    assert f"--db '{db}'" in flat and f"hooks write to: {db}" in flat  # the path whole: no break at its space
    assert not any(ln.rstrip().endswith("'my") for ln in out.splitlines())

    out, err = run(home, ["hook", "install", "--db", db])
    fits(out + err, whole=whole)
    _lists_whole(out, "subscribe")
    assert sum(ln.startswith("capture test ") and ln.endswith(" ms)") for ln in out.splitlines()) == 4, out

    out, err = run(home, ["hook", "install", "--db", db, "--json"])  # --json: as before, one line
    rep = json.loads(out)
    assert rep["database"] == db and all(a["outcome"] == "already_current" for a in rep["actions"])

    out, err = run(home, ["hook", "uninstall", "--dry-run"])
    fits(out + err, whole=whole)
    out, err = run(home, ["hook", "uninstall"])
    fits(out + err, whole=whole)
    _lists_whole(out, "remove entries for")
    for line in out.splitlines():
        if line.startswith("    "):  # a continuation line of a list starts with a name, not a comma
            assert not line.strip().startswith(","), line


def test_a_narrow_terminal_still_never_breaks_an_event_name(wired):
    home, db = wired
    out, _ = run(home, ["hook", "install", "--dry-run", "-p", "claude-code"], COLUMNS="40")
    lines = out.splitlines()
    first = next(i for i, ln in enumerate(lines) if "would subscribe" in ln)
    listed = [lines[first]] + [ln for ln in lines[first + 1:] if ln.startswith("    ")][:12]
    fits("\n".join(listed), width=40)
    words = set(joined("\n".join(listed)).replace(",", " ").split())
    assert set(agents.AGENTS["claude_code"].events) <= words  # every name whole


def test_status_counts_line_fits_80_columns(wired):
    home, db = wired
    run(home, ["hook", "install", "--db", db])  # four capture tests: four sessions status does not count
    out, err = run(home, ["status", "--db", db])
    fits(out + err, whole=(db,))
    text = joined(out)
    assert "(not counted: 4 capture-test sessions, from `attempt hook install`'s checks)" in text, out
    line = next(ln for ln in out.splitlines() if ln.startswith("events "))
    rest = out.splitlines()[out.splitlines().index(line) + 1]
    assert rest.startswith(" " * 14) and rest.strip()  # continued under the value column
    wide, _ = run(home, ["status", "--db", db], COLUMNS="200")
    assert any(ln.startswith("events ") and "hook install`'s checks)" in ln for ln in wide.splitlines())


@pytest.fixture
def state_dir():
    """A state directory whose socket path fits a Unix socket (this test's tmp_path is too long:
    the socket would go to /tmp/attemptdb-<uid>) yet not a line beside the pid."""
    d = tempfile.mkdtemp(prefix="adb-width-", dir="/tmp")
    yield os.path.join(d, "state")
    shutil.rmtree(d, ignore_errors=True)


def test_daemon_status_fits_80_columns_with_the_socket_whole(home, tmp_path, state_dir):
    db = str(tmp_path / "d.db")
    env = {"ATTEMPTDB_NO_DAEMON": "", "XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": state_dir}
    payload = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi",
                          "cwd": "/tmp"}).encode()
    p = run_attempt(["capture", "claude-code", "--db", db], input=payload, env=_env(home, **env))
    assert p.returncode == 0
    try:
        end = time.monotonic() + 15
        while time.monotonic() < end:
            rep = json.loads(run(home, ["daemon", "status", "--db", db, "--json"], **env)[0])
            if rep["running"]:
                break
            time.sleep(0.05)
        assert rep["running"], rep
        out, _ = run(home, ["daemon", "status", "--db", db], **env)
        sock = rep["socket"]
        fits(out, whole=(sock,))
        assert out.startswith(f"running: pid {rep['pid']}, socket") and sock in out.splitlines()[-1], out
        assert sock.startswith(state_dir) and len(sock) > 60  # (the walkthrough's case: too wide beside the pid)
    finally:
        run(home, ["daemon", "stop", "--db", db], **env)


def test_doctor_with_hooks_installed_fits_80_columns(wired):
    home, db = wired
    run(home, ["hook", "install", "--db", db])
    out, err = run(home, ["doctor"], ok=(0, 1))
    fits(out + err, whole=(db,))
    assert joined(out).count(f"writes to: {db}") == 4, out
