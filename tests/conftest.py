"""Shared test helpers. `../shared/` (the anchor suite, seeds) exists on developer and CI
machines only: tests that need it use the `anchor` / `shared` fixtures, which skip with a
clear reason elsewhere."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Hooks run by the suite write their databases themselves: each of the hundreds of temporary
# databases would otherwise get its own capture daemon for five idle minutes. tests/test_daemon.py
# runs hooks through the daemon (and checks they store exactly what a direct hook stores).
os.environ["ATTEMPTDB_NO_DAEMON"] = "1"
SQLITE3 = "/usr/bin/sqlite3"
needs_shell = pytest.mark.skipif(not os.access(SQLITE3, os.X_OK),
                                 reason=f"the real sqlite3 shell is not installed at {SQLITE3}")


def sqlite3_shell(db, sql, check=True):
    """Run `sql` on `db` in the real sqlite3 shell (stopping at the first error), as someone
    with the file would."""
    p = subprocess.run([SQLITE3, "-bail", db], input=sql, capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, p.stderr
    return p


SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
ANCHOR = os.path.join(SHARED, "anchor")


@pytest.fixture(scope="session")
def shared():
    if not os.path.isdir(SHARED):
        pytest.skip(f"../shared is absent ({SHARED}): the anchor suite lives on developer/CI machines only")
    return SHARED


@pytest.fixture(scope="session")
def anchor(shared):
    if not os.path.isdir(ANCHOR):
        pytest.skip(f"anchor suite missing at {ANCHOR}")
    return ANCHOR


@pytest.fixture(scope="module")
def private_grammar_cache(tmp_path_factory):
    """The AttemptQL grammar cache goes to a temporary directory, never the real ~/.cache
    (modules that compile statements use it with `pytestmark = usefixtures(...)`)."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An isolated HOME / XDG tree so nothing touches the real user's files."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_DATA_HOME", str(h / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(h / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(h / ".config"))
    # the last-resort spool and loss counter (spool._runtime_root) stay in the test's tree too
    (tmp_path / "tmp").mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.delenv("ATTEMPTDB_PATH", raising=False)
    monkeypatch.delenv("ATTEMPTDB_KEY_DIR", raising=False)
    return h


@pytest.fixture
def db(tmp_path, home):
    """Path of a fresh (not yet created) database file."""
    return str(tmp_path / "attempt.db")


def signed_demo(path, key_dir=None, env=None) -> None:
    """The demo history at `path` (what `attempt demo --db path` builds), its signing key and
    checkpoint copy kept in `key_dir` (default: the key directory of this process's HOME) so
    later commands can sign it: `attempt demo` itself deletes its one-off key. `env` (HOME,
    XDG_*: a module fixture's isolated home) is this process's meanwhile, so nothing the
    signing records lands in the real HOME."""
    from attemptdb.devtools.demo import run_demo
    from attemptdb.store import location
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        run_demo(path, key_dir=key_dir or location.key_dir())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def attempt_cmd():
    """How to run the `attempt` CLI in a subprocess: the installed script if it sits beside
    this interpreter, else `python -m attemptdb`."""
    exe = os.path.join(os.path.dirname(sys.executable), "attempt")
    if os.path.exists(exe):
        return [exe]
    return [sys.executable, "-m", "attemptdb"]


def run_attempt(args, *, input=None, env=None, cwd=None, timeout=120):
    e = dict(os.environ)
    if env:
        e.update(env)
    e.setdefault("PYTHONPATH", ROOT)
    return subprocess.run(attempt_cmd() + list(args), input=input, capture_output=True,
                          env=e, cwd=cwd, timeout=timeout)


def attempt_on_pty(args, *, env, cwd=None, stdout_too=False, raw=False, timeout=600):
    """Run `attempt args` with stderr (and, with `stdout_too`, stdout) on a pseudo-terminal, in
    environment `env`; `raw` turns the terminal's output processing off (a CR the command wrote
    stays a CR). Returns (exit status, stdout bytes (b"" when on the terminal), every byte the
    terminal received)."""
    import pty
    import termios
    import threading
    master, slave = pty.openpty()
    if raw:
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen(attempt_cmd() + list(args), stdout=slave if stdout_too else subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    seen = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not chunk:
                return
            seen.extend(chunk)
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    out = b"" if stdout_too else p.stdout.read()
    p.wait(timeout=timeout)
    t.join(timeout=10)
    os.close(master)
    return p.returncode, out, bytes(seen)


def skip_when_the_interpreter_loads(modules, env=None) -> None:
    """Skip the calling test when this interpreter imports any of `modules` before any code
    runs (`site` and its .pth files: setuptools' editable-install finder imports `re`, `enum`
    and `pathlib`): what our own code imports can then not be observed. An ordinary install,
    as the README's commands and CI make, loads none of them."""
    code = f"import sys; print(sorted(m for m in {sorted(modules)!r} if m in sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, **(env or {})})
    loaded = p.stdout.strip()
    if p.returncode == 0 and loaded != "[]":
        pytest.skip(f"this interpreter imports {loaded} at start-up (site, a .pth file: an editable "
                    "install's finder): what a statement's parse imports cannot be told apart here")
