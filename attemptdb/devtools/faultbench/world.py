"""An isolated place to break things in: a temporary home (data, state, runtime and key
directories of its own), a template database to copy per trial, `attempt` run as a child
process exactly as a user or a hook runs it, and the checks every trial ends with.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import apsw

import attemptdb

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(attemptdb.__file__)))


class Tally:
    """The figures of one fault family (the rows of `attempt bench faults`)."""

    FIELDS = ("trials", "faults", "integrity_failures", "verify_failures", "acked_lost", "tracebacks")

    def __init__(self, family: str):
        self.family = family
        self.trials = self.faults = 0
        self.integrity_failures = self.verify_failures = 0
        self.acked_lost = self.tracebacks = 0
        self.extra: dict = {}
        self.failures: list[str] = []

    def add(self, key: str, n: int = 1):
        self.extra[key] = self.extra.get(key, 0) + n

    def fail(self, what: str):
        if len(self.failures) < 50:
            self.failures.append(what)

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict:
        return {"family": self.family, **{f: getattr(self, f) for f in self.FIELDS}, **self.extra,
                "failures": self.failures}


class Ran:
    __slots__ = ("args", "rc", "out", "err")

    def __init__(self, args, rc, out, err):
        self.args, self.rc, self.out, self.err = args, rc, out, err

    @property
    def traceback(self) -> bool:
        """A traceback or an internal error reached the terminal."""
        text = self.err.decode("utf-8", "replace") + self.out.decode("utf-8", "replace")
        return "Traceback (most recent call last)" in text or "error[internal]" in text

    @property
    def coded(self) -> bool:
        """Exit 0; or 1 (a problem found) with the report printed; or a coded `error[...]`
        line on stderr. Never a traceback, never an internal error."""
        if self.traceback:
            return False
        if self.rc == 0:
            return True
        err = self.err.decode("utf-8", "replace")
        if "error[" in err and "error[internal]" not in err:
            return True
        return self.rc == 1 and bool(self.out.strip())

    def __repr__(self):
        return f"Ran({' '.join(self.args[:3])} rc={self.rc} err={self.err[-300:]!r})"


class World:
    """A temporary home; `trial(name)` gives each trial its own directory, database and key
    directory (copies of the template), so no trial sees another's spool, log or checkpoint."""

    def __init__(self, root: str | None = None):
        self.root = root or tempfile.mkdtemp(prefix="attempt-faults-")
        self._own = root is None
        self.n = 0

    def close(self):
        if self._own:
            shutil.rmtree(self.root, ignore_errors=True)

    def trial(self, name: str, template: "Trial | None" = None) -> "Trial":
        self.n += 1
        t = Trial(os.path.join(self.root, f"{self.n:04d}-{name}"))
        if template is not None:
            template.copy_into(t)
        return t


class Trial:
    def __init__(self, root: str):
        self.root = root
        for d in ("home", "data", "state", "run", "keys", "work"):
            os.makedirs(os.path.join(root, d), mode=0o700, exist_ok=True)
        self.db = os.path.join(root, "work", "attempt.db")
        self.env = {"HOME": os.path.join(root, "home"), "XDG_DATA_HOME": os.path.join(root, "data"),
                    "XDG_STATE_HOME": os.path.join(root, "state"), "XDG_RUNTIME_DIR": os.path.join(root, "run"),
                    "ATTEMPTDB_KEY_DIR": os.path.join(root, "keys"), "ATTEMPTDB_PATH": self.db,
                    "ATTEMPTDB_NO_DAEMON": "1", "PYTHONPATH": PACKAGE_ROOT, "NO_COLOR": "1",
                    "XDG_CONFIG_HOME": os.path.join(root, "home", ".config")}

    def copy_into(self, other: "Trial"):
        for suffix in ("", "-wal"):
            if os.path.exists(self.db + suffix):
                shutil.copyfile(self.db + suffix, other.db + suffix)
        for name in os.listdir(os.path.join(self.root, "keys")):
            if name.endswith((".key", ".checkpoint")):
                shutil.copyfile(os.path.join(self.root, "keys", name), os.path.join(other.root, "keys", name))
                os.chmod(os.path.join(other.root, "keys", name), 0o600)
        key = os.path.join(self.root, "data", "attemptdb", "spool-key")
        if os.path.exists(key):
            os.makedirs(os.path.join(other.root, "data", "attemptdb"), mode=0o700, exist_ok=True)
            shutil.copyfile(key, os.path.join(other.root, "data", "attemptdb", "spool-key"))
            os.chmod(os.path.join(other.root, "data", "attemptdb", "spool-key"), 0o600)
        os.chmod(other.db, 0o600)

    # --- running attempt ------------------------------------------------------------------

    def cmd(self, *args) -> list:
        return [sys.executable, "-m", "attemptdb", *args]

    def popen(self, *args, stdin=None, env=None):
        e = {**os.environ, **self.env, **(env or {})}
        return subprocess.Popen(self.cmd(*args), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                                cwd=os.path.join(self.root, "home"))

    def run(self, *args, input: bytes | None = None, env=None, timeout=300) -> Ran:
        e = {**os.environ, **self.env, **(env or {})}
        p = subprocess.run(self.cmd(*args), input=input, capture_output=True, env=e, timeout=timeout,
                           cwd=os.path.join(self.root, "home"))
        return Ran(list(args), p.returncode, p.stdout, p.stderr)

    def activated(self):
        """This trial's environment in this process (in-process trials), restored after."""
        return _Environ(self.env)

    # --- the checks every trial ends with ----------------------------------------------------

    def integrity(self) -> list[str]:
        """SQLite's own `PRAGMA integrity_check` of the file: [] when ok."""
        return integrity(self.db)

    def verify(self) -> Ran:
        return self.run("verify", "--db", self.db)

    def reproject_check(self) -> Ran:
        return self.run("reproject", "--check", "--db", self.db)

    def check(self, tally: Tally, what: str, *, reproject: bool = True) -> bool:
        """integrity_check, `attempt verify`, `attempt reproject --check` on the file; each
        failure counted in `tally`. True when all hold."""
        ok = True
        found = self.integrity()
        if found:
            tally.integrity_failures += 1
            tally.fail(f"{what}: integrity_check: {found[:2]}")
            ok = False
        v = self.verify()
        if v.traceback:
            tally.tracebacks += 1
        if v.rc != 0:
            tally.verify_failures += 1
            tally.fail(f"{what}: verify: {v.out[-300:]!r} {v.err[-300:]!r}")
            ok = False
        if reproject:
            r = self.reproject_check()
            if r.traceback:
                tally.tracebacks += 1
            if r.rc != 0:
                tally.fail(f"{what}: reproject --check: {r.out[-300:]!r} {r.err[-300:]!r}")
                ok = False
        return ok

    def rows(self, sql: str, args=()) -> list:
        conn = apsw.Connection(self.db, flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(30_000)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def spooled_lines(self) -> list[dict]:
        """The events waiting in every spool directory of this trial's database."""
        from ...capture import spool
        out = []
        with self.activated():
            for path in spool.pending(self.db):
                try:
                    with open(path, "rb") as f:
                        out.append(json.loads(f.read().split(b"\n", 1)[0]))
                except (OSError, ValueError):
                    pass
        return out

    def hook_log(self) -> str:
        try:
            with open(os.path.join(self.env["XDG_STATE_HOME"], "attemptdb", "hook.log"), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return ""


def integrity(path: str) -> list[str]:
    try:
        conn = apsw.Connection(path)
        conn.set_busy_timeout(30_000)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        finally:
            conn.close()
    except (apsw.Error, UnicodeDecodeError) as e:
        return [f"{type(e).__name__}: {e}"]
    return [] if rows == ["ok"] else rows


class _Environ:
    def __init__(self, env: dict):
        self.env = env
        self.saved = {}

    def __enter__(self):
        for k, v in self.env.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
