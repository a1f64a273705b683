"""`attempt bench query`: the read surface as a user meets it — each statement a fresh
`attempt query … --json` process against a synthetic history, timed against `attempt --version`
in the same run, with the peak RSS of every process.

Every measured process is started by a small launcher process, never by the bench process
itself: on Linux a child's `ru_maxrss` includes the high-water mark of the memory it ran in
before exec, which for a child of the bench is the bench's (~180 MB after building a history),
whether it was forked, vforked or posix_spawned. The launcher's own high-water mark (~10 MB)
is the floor of every figure.

Invariants: the figures are medians of interleaved runs (statement, version, statement, …) and
ratios against the version baseline measured in the same run, never timed assertions in
tests; the JSON is exactly {"events", "version_wall_ms", "statements": [{"statement",
"wall_ms", "ratio", "peak_rss_mb"}]} (a statement that fails carries one more key, "error",
and is measured once); `reuse` keeps the built history in a file and reuses it
when it already holds the asked-for number of events.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ..errors import AttemptError
from . import synth
from .bench import attempt_exe

GROUP_BY_RECIPE = ("SELECT failure_class, count(*) AS failures FROM attempts WHERE outcome = 'failed' "
                   "AND retracted = false GROUP BY failure_class ORDER BY failures DESC")
STUCK_RECIPE = ("SELECT work_unit_id, phase, phase_reason, failed_attempt_count FROM work_units "
                "WHERE status = 'open' AND failed_attempt_count >= 2 ORDER BY updated_at DESC")


def _bytecode():
    """An installed package carries its bytecode; a source checkout run with
    PYTHONDONTWRITEBYTECODE would compile every module in every process and time that instead."""
    import compileall
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        compileall.compile_dir(pkg, quiet=2)
    except OSError:
        pass


def build_history(path: str, events: int, seed: int = 1) -> int:
    """A database at `path` holding `events` synthetic events (the original's workload shape,
    reference/inference.md §5), imported through the real ingest path. Returns the count."""
    from ..exchange.importers.jsonl import import_file
    from ..store.database import Store
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    d = os.path.dirname(os.path.abspath(path))
    fd, src = tempfile.mkstemp(prefix="attempt-bench-", suffix=".jsonl", dir=d)
    os.close(fd)
    try:
        synth.write_jsonl(src, events, seed)
        store = Store.open(path)
        try:
            import_file(store, src)
            return store.count()
        finally:
            store.close()
    finally:
        os.unlink(src)


def _count(path: str) -> int:
    from ..store.database import Store
    try:
        store = Store.open(path, readonly=True)
    except AttemptError:
        return -1
    try:
        return store.count()
    finally:
        store.close()


def subjects(path: str) -> dict:
    """Real ids and a time to put into the statements: the most recently active session, the
    attempt at the end of the longest supersession chain seen, the middle of the history."""
    from ..store.readonly import connect
    conn, _ = connect(path)
    try:
        session = conn.execute("SELECT session_id FROM sessions WHERE NOT retracted "
                               "ORDER BY last_event_at DESC LIMIT 1").fetchone()
        attempt = (conn.execute("SELECT attempt_id FROM attempts WHERE supersedes IS NOT NULL AND NOT retracted "
                                "ORDER BY started_at DESC LIMIT 1").fetchone()
                   or conn.execute("SELECT attempt_id FROM attempts WHERE NOT retracted "
                                   "ORDER BY started_at DESC LIMIT 1").fetchone())
        middle = conn.execute("SELECT observed_at FROM events WHERE seq = (SELECT (max(seq) + 1) / 2 FROM events)"
                              ).fetchone()
    finally:
        conn.close()
    if not (session and attempt and middle):
        raise AttemptError("bench.empty", "the benchmark history has no sessions or attempts to query")
    return {"session": session[0], "attempt": attempt[0], "at": middle[0]}


def statements(s: dict) -> list[str]:
    return [
        "SHOW FAILED ATTEMPTS",
        "SHOW SESSIONS",
        f"WHY session {s['session']} STATUS BLOCKED",
        f"TRACE attempt {s['attempt']} CAUSES DEPTH 10",
        f"STATE project AT '{s['at']}'",
        GROUP_BY_RECIPE,
        "SHOW WORK UNITS",
        STUCK_RECIPE,
        "attempt needs-you",
    ]


def command(statement: str) -> list[str]:
    """The `attempt` arguments that run one measured entry: a statement through `attempt
    query`, or an entry written as a command ("attempt needs-you") as itself."""
    if statement.startswith("attempt "):
        return statement.split()[1:] + ["--json"]
    return ["query", statement, "--json"]


_LAUNCHER = r"""
import json, os, sys, time
null = os.open(os.devnull, os.O_RDWR)
quiet = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
for line in sys.stdin:
    argv = json.loads(line)
    t0 = time.perf_counter()
    try:
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet)
    except OSError:
        print(json.dumps([0.0, 0, 127]), flush=True)
        continue
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    print(json.dumps([wall, usage.ru_maxrss, os.waitstatus_to_exitcode(status)]), flush=True)
"""


class Launcher:
    """A small process that starts each measured process and reports its wall time, its own
    peak RSS and its exit status (see the module docstring for why the bench cannot)."""

    def __init__(self, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _LAUNCHER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True)

    def run(self, cmd: list[str]) -> tuple[float, float, int]:
        """(wall seconds, peak RSS MiB, exit status) of one fresh process (its output dropped).
        `cmd[0]` is a path (no PATH search); one that cannot be started exits 127."""
        self.proc.stdin.write(json.dumps(list(cmd)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AttemptError("bench.launcher_failed", "the benchmark's process launcher stopped")
        wall, maxrss, status = json.loads(line)
        return wall, maxrss / 1024.0, status  # ru_maxrss is in KiB on Linux

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run(events: int = 1_450_000, reuse: str | None = None, runs: int = 5, seed: int = 1) -> dict:
    tmp = tempfile.mkdtemp(prefix="attempt-bench-query-")
    try:
        path = reuse or os.path.join(tmp, "history.db")
        if not (reuse and os.path.exists(path) and _count(path) == events):
            build_history(path, events, seed)
        n = _count(path)
        _bytecode()
        env = dict(os.environ, ATTEMPTDB_PATH=path)
        exe = attempt_exe()
        stmts = statements(subjects(path))
        version = []
        per = {s: ([], []) for s in stmts}
        failed = {}
        with Launcher(env) as launcher:
            launcher.run(exe + ["--version"])  # warm the file cache and the grammar cache
            for s in stmts:  # a statement that fails (e.g. past its time limit) is measured once
                wall, rss, status = launcher.run(exe + command(s))
                if status != 0:
                    failed[s] = status
                    per[s][0].append(wall)
                    per[s][1].append(rss)
            for i in range(runs):
                for s in (stmts if i % 2 == 0 else list(reversed(stmts))):
                    wall, _, _ = launcher.run(exe + ["--version"])
                    version.append(wall)
                    if s in failed:
                        continue
                    wall, rss, _ = launcher.run(exe + command(s))
                    per[s][0].append(wall)
                    per[s][1].append(rss)
        v = statistics.median(version)
        out = []
        for s in stmts:
            row = {"statement": s, "wall_ms": round(statistics.median(per[s][0]) * 1000, 1),
                   "ratio": round(statistics.median(per[s][0]) / v, 2), "peak_rss_mb": round(max(per[s][1]), 1)}
            if s in failed:
                row["error"] = f"exit status {failed[s]}"
            out.append(row)
        return {"events": n, "version_wall_ms": round(v * 1000, 1), "statements": out}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def work_ms(path: str, statement: str, repeat: int = 5) -> float:
    """Median in-process time of one statement (no process start-up): the "ms of work"."""
    from ..query import execute
    from ..store.readonly import connect
    conn, gate = connect(path)
    try:
        execute.run(conn, statement, gate=gate)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            execute.run(conn, statement, gate=gate)
            times.append(time.perf_counter() - t0)
        return round(statistics.median(times) * 1000, 2)
    finally:
        conn.close()
