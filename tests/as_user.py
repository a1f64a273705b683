"""Hooks and commands run as an account whose file modes are honoured: this user when it is not
root, else `nobody` (root writes a 0400 file all the same, so a read-only -shm can only be seen
by someone else). Everything such a run touches lives in a private directory of that account's
own (HOME, XDG directories, the database), outside the test's root-only tmp_path.

As root the interpreter must be one `nobody` can run: this one when it can (an interpreter under
/root usually cannot), else a virtual environment of the system's python of the same version
made for the session, whose .pth file adds this interpreter's site-packages (apsw, …). The tests
that need one skip, saying why, where neither works."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import pytest
from conftest import ROOT

MAIN = os.path.join(ROOT, "attemptdb", "__main__.py")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
_PYTHON: dict = {}


def _works(python: str, uid, gid) -> bool:
    try:
        p = subprocess.run([python, "-I", "-c", "import apsw, cryptography, click"], capture_output=True,
                           timeout=60, user=uid, group=gid, extra_groups=[] if uid is not None else None,
                           cwd="/")
    except OSError:
        return False
    return p.returncode == 0


def _python_for(uid, gid) -> str | None:
    if uid is None:
        return sys.executable
    if "python" not in _PYTHON:
        found = sys.executable if _works(sys.executable, uid, gid) else None
        system = f"/usr/bin/python3.{sys.version_info.minor}"
        if found is None and os.access(system, os.X_OK):
            d = tempfile.mkdtemp(prefix="attemptdb-venv-", dir="/tmp")
            import atexit
            atexit.register(shutil.rmtree, d, True)  # this test process's own, gone when it ends
            os.chmod(d, 0o755)
            if subprocess.run([system, "-m", "venv", "--without-pip", d], capture_output=True,
                              timeout=120).returncode == 0:
                site = subprocess.run([os.path.join(d, "bin", "python"), "-c",
                                       "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                      capture_output=True, text=True, timeout=60).stdout.strip()
                with open(os.path.join(site, "zz_attemptdb_tests.pth"), "w") as f:
                    f.write(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
                if _works(os.path.join(d, "bin", "python"), uid, gid):
                    found = os.path.join(d, "bin", "python")
        _PYTHON["python"] = found
    return _PYTHON["python"]


class Account:
    """A HOME of its own for an unprivileged account, with the database at `db`."""

    def __init__(self, base: str, python: str, uid, gid):
        self.base, self.python, self.uid, self.gid = base, python, uid, gid
        self.db = os.path.join(base, "db", "attempt.db")
        self.state = os.path.join(base, "state")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": base,
                    "XDG_DATA_HOME": os.path.join(base, "data"), "XDG_STATE_HOME": self.state,
                    "XDG_RUNTIME_DIR": os.path.join(base, "run"), "ATTEMPTDB_PATH": self.db,
                    "ATTEMPTDB_NO_DAEMON": "1"}
        self.mkdir("db")
        self.mkdir("run", 0o700)

    def mkdir(self, name: str, mode: int = 0o755) -> str:
        path = os.path.join(self.base, name)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
        if self.uid is not None:
            os.chown(path, self.uid, self.gid)
        return path

    def run(self, args, *, input=None, daemon=False, timeout=120, python_args=None):
        env = dict(self.env, ATTEMPTDB_NO_DAEMON="" if daemon else "1")
        cmd = [self.python] + (python_args or ["-I", MAIN]) + list(args)
        return subprocess.run(cmd, input=input, capture_output=True, env=env, cwd=self.base, timeout=timeout,
                              user=self.uid, group=self.gid, extra_groups=[] if self.uid is not None else None)

    def hook(self, n: int, *, daemon=False, lean=False):
        """One Claude Code prompt hook (prompt `prompt <n>`): exits 0 and says nothing."""
        payload = json.dumps({"session_id": "sess-ro", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
                              "prompt": f"prompt {n}"}).encode()
        p = self.run(["capture", "claude-code"], input=payload, daemon=daemon,
                     python_args=["-I", "-S", MAIN] if lean else None)
        assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p
        return p

    def sql(self, query: str) -> list:
        """Rows of `query`, read by this account with a plain read-only connection."""
        code = ("import apsw, json, sys; c = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY); "
                "c.set_busy_timeout(10000); print(json.dumps([list(r) for r in c.execute(sys.argv[2])]))")
        p = self.run([self.db, query], python_args=["-c", code])
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def prompts(self) -> list:
        return [r[0] for r in self.sql("SELECT json_extract(content_json, '$.prompt') FROM events "
                                       "WHERE kind = 'prompt_submitted' ORDER BY seq")]

    def spooled(self) -> list:
        out = []
        for base, dirs, files in os.walk(self.base):
            if os.path.basename(base) != "quarantine":
                out.extend(os.path.join(base, f) for f in files if f.endswith(".event"))
        return sorted(out)

    def hook_log(self) -> str:
        path = os.path.join(self.state, "attemptdb", "hook.log")
        return open(path).read() if os.path.exists(path) else ""

    def settle_file(self) -> None:
        """Fold the -wal into the file and remove the -wal and -shm (as when the last connection
        to a quiet file closes), as this account."""
        code = ("import apsw, sys; c = apsw.Connection(sys.argv[1]); "
                "c.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall(); c.close()")
        assert self.run([self.db], python_args=["-c", code]).returncode == 0
        for side in ("-wal", "-shm"):
            if os.path.exists(self.db + side):
                os.unlink(self.db + side)


@pytest.fixture
def account(tmp_path):
    """An Account: this user's own when not root (in tmp_path), else nobody's (in /tmp)."""
    if not IS_ROOT:
        base = str(tmp_path / "acct")
        os.makedirs(base)
        try:
            yield Account(base, sys.executable, None, None)
        finally:
            stop_daemons(base)
        return
    import pwd
    try:
        who = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root, and there is no `nobody` account to honour file modes")
    python = _python_for(who.pw_uid, who.pw_gid)
    if python is None:
        pytest.skip("running as root, and no python that `nobody` can run imports apsw (modes are "
                    "ignored for root, so a read-only -shm cannot be shown)")
    base = tempfile.mkdtemp(prefix="attemptdb-acct-", dir="/tmp")
    os.chown(base, who.pw_uid, who.pw_gid)
    os.chmod(base, 0o700)
    try:
        yield Account(base, python, who.pw_uid, who.pw_gid)
    finally:
        stop_daemons(base)
        shutil.rmtree(base, ignore_errors=True)


def stop_daemons(base: str) -> None:
    """Kill (by pid) each capture daemon serving a database under `base`."""
    import signal
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"daemon" in args and any(a.startswith(base.encode()) for a in args):
            try:
                os.kill(int(d), signal.SIGKILL)
            except OSError:
                pass
