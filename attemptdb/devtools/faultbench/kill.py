"""kill -9 at random moments of the commands that write: `import jsonl` of a large file, a
burst of parallel hooks (direct, and through the capture daemon with hooks and daemons
killed), `reproject`, `bundle import`, `import claude-transcripts`. After each kill the file
must pass integrity_check, `attempt verify` and `attempt reproject --check`, hold no partial
batch, and the interrupted command run again must complete with no duplicates. Every hook
that returned (acknowledged its event) must find the event in the file or the spool, and in
the file after the next read.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time

from .world import Tally, World

BURST_SESSION = "fault-burst"


def _kill_at(proc, delay: float) -> bool:
    """SIGKILL `proc` after `delay` seconds; True when it was still running then."""
    end = time.monotonic() + delay
    while time.monotonic() < end:
        if proc.poll() is not None:
            break
        time.sleep(min(0.005, max(0.0, end - time.monotonic())))
    alive = proc.poll() is None
    if alive:
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    return alive


def _timed(trial, *args) -> float:
    t0 = time.monotonic()
    r = trial.run(*args)
    if r.rc != 0:
        raise RuntimeError(f"calibration run failed: {r}")
    return time.monotonic() - t0


def _count(trial, sql="SELECT count(*), count(DISTINCT event_id) FROM events"):
    return trial.rows(sql)[0]


def template(world: World, name: str = "template"):
    t = world.trial(name)
    r = t.run("init", "--db", t.db)
    if r.rc != 0:
        raise RuntimeError(f"attempt init failed: {r}")
    return t


def _after_rerun(trial, tally: Tally, what: str, expected: int, r) -> None:
    if r.traceback:
        tally.tracebacks += 1
    n, distinct = _count(trial)
    if r.rc != 0 or n != expected or distinct != n:
        tally.fail(f"{what}: re-run rc={r.rc} events={n} distinct={distinct} expected={expected} {r.err[-200:]!r}")
    v = trial.verify()
    if v.traceback:
        tally.tracebacks += 1
    if v.rc != 0:
        tally.verify_failures += 1
        tally.fail(f"{what}: verify after the re-run: {v.out[-300:]!r}")


# --- import jsonl ------------------------------------------------------------------------------

def import_jsonl(world: World, rng, trials: int, events: int) -> Tally:
    from ...exchange.importers.jsonl import BATCH
    from .. import synth
    tally = Tally("kill -9: import jsonl")
    src = os.path.join(world.root, f"import-{events}.jsonl")
    if not os.path.exists(src):
        synth.write_jsonl(src, events, 7)
    base = template(world, "import-base")
    cal = world.trial("import-cal", base)
    span = _timed(cal, "import", "jsonl", src, "--db", cal.db)
    shutil.rmtree(cal.root, ignore_errors=True)
    for k in range(trials):
        t = world.trial("import", base)
        p = t.popen("import", "jsonl", src, "--db", t.db)
        tally.trials += 1
        tally.faults += _kill_at(p, rng.uniform(0.05, 1.0) * span)
        n, _ = _count(t)
        if n % BATCH and n != events:
            tally.fail(f"import trial {k}: {n} events stored, not a whole number of {BATCH}-event batches")
        t.check(tally, f"import trial {k}")
        _after_rerun(t, tally, f"import trial {k}", events, t.run("import", "jsonl", src, "--db", t.db))
        tally.add("events_before_rerun", n)
        shutil.rmtree(t.root, ignore_errors=True)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


# --- hook bursts ---------------------------------------------------------------------------------

def burst_payload(trial_no: int, i: int) -> bytes:
    return json.dumps({
        "session_id": f"{BURST_SESSION}-{trial_no}", "cwd": "/tmp", "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_use_id": f"toolu_burst_{trial_no}_{i}",
        "tool_input": {"command": f"pytest -q tests/test_{i}.py"},
        "tool_response": {"stdout": "collected 3 items\n3 passed\n" * 20, "stderr": "", "interrupted": False},
    }).encode()


def _daemon_pids(db: str) -> list[int]:
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{d}/stat") as f:
                if f.read().split(") ", 1)[1][0] == "Z":
                    continue
        except OSError:
            continue
        if b"daemon" in args and b"run" in args and db.encode() in args:
            found.append(int(d))
    return found


def _kill_daemons(db: str) -> int:
    n = 0
    for pid in _daemon_pids(db):
        try:
            os.kill(pid, signal.SIGKILL)
            n += 1
        except OSError:
            pass
    end = time.monotonic() + 5
    while _daemon_pids(db) and time.monotonic() < end:
        time.sleep(0.01)
    return n


def capture_burst(world: World, rng, trials: int, hooks: int, *, daemon: bool) -> Tally:
    """`hooks` captures started at once; a third of them, and (with `daemon`) the daemon a
    couple of times, killed at random moments."""
    tally = Tally(f"kill -9: hook burst ({'through the daemon' if daemon else 'direct'})")
    base = template(world, "burst-base")
    env = {"ATTEMPTDB_NO_DAEMON": ""} if daemon else {}
    acked_total = 0
    window = 0.1 + 0.02 * hooks  # about how long a burst of this size takes here
    for k in range(trials):
        t = world.trial("burst", base)
        if daemon:  # a daemon serving already, as on a machine in use
            t.run("capture", "claude-code", input=burst_payload(10_000 + k, 0), env=env)
        procs = []
        for i in range(hooks):
            p = t.popen("capture", "claude-code", stdin=True, env=env)
            try:
                p.stdin.write(burst_payload(k, i))
                p.stdin.close()
            except OSError:
                pass
            p.stdin = None
            procs.append(p)
        start = time.monotonic()
        victims = rng.sample(range(hooks), hooks // 3)
        # the first victim at once (a hook is still starting then), the rest at random moments:
        # a burst through the daemon can end before every random moment of the window
        plan = sorted([(0.0, "hook", victims[0])] + [(rng.uniform(0.0, window), "hook", i) for i in victims[1:]])
        if daemon:
            plan += [(rng.uniform(0.0, window), "daemon", None) for _ in range(2)]
            plan.sort(key=lambda x: x[0])
        killed = set()
        for at, what, i in plan:
            delay = at - (time.monotonic() - start)
            if delay > 0:
                time.sleep(delay)
            if what == "hook":
                if procs[i].poll() is None:
                    os.kill(procs[i].pid, signal.SIGKILL)
                    killed.add(i)
                    tally.faults += 1
                    tally.add("hooks_killed")
            else:
                n = _kill_daemons(t.db)
                tally.faults += n
                tally.add("daemons_killed", n)
        acked = set()
        for i, p in enumerate(procs):
            out, err = p.communicate()
            if i in killed:
                continue
            if p.returncode != 0 or out or err:
                tally.fail(f"burst {k} hook {i}: rc={p.returncode} out={out[:100]!r} err={err[-200:]!r}")
                if b"Traceback" in err:
                    tally.tracebacks += 1
                continue
            acked.add(f"toolu_burst_{k}_{i}")
        tally.trials += 1
        acked_total += len(acked)
        # the spool first: a daemon may still be moving what it received into the file, and a
        # spool file is removed only after its commit (spec/capture-daemon.md)
        spooled = {((e.get("tool") or {}).get("call_id")) for e in t.spooled_lines()}
        stored = {r[0] for r in t.rows("SELECT tool_call_id FROM events WHERE tool_call_id LIKE ?",
                                       (f"toolu_burst_{k}_%",))}
        missing = acked - stored - spooled
        if missing:
            tally.acked_lost += len(missing)
            tally.fail(f"burst {k}: {len(missing)} acknowledged event(s) neither stored nor spooled")
        tally.add("acked", len(acked))
        tally.add("spooled_when_checked", len(acked & spooled - stored))
        if daemon:
            _kill_daemons(t.db)
        r = t.run("events", "--json", "-n", "1")
        if r.traceback:
            tally.tracebacks += 1
        stored = {r[0] for r in t.rows("SELECT tool_call_id FROM events WHERE tool_call_id LIKE ?",
                                       (f"toolu_burst_{k}_%",))}
        late = acked - stored - missing
        if late:
            tally.acked_lost += len(late)
            tally.fail(f"burst {k}: {len(late)} acknowledged event(s) not in the file after a read")
        dup = t.rows("SELECT count(*) - count(DISTINCT tool_call_id) FROM events WHERE tool_call_id LIKE ?",
                     (f"toolu_burst_{k}_%",))[0][0]
        if dup:
            tally.fail(f"burst {k}: {dup} duplicate event(s)")
        t.check(tally, f"burst {k}")
        shutil.rmtree(t.root, ignore_errors=True)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


# --- reproject ------------------------------------------------------------------------------------

def history(world: World, events: int, name: str = "history", seed: int = 3):
    """A template holding `events` synthetic events (imported, so signed)."""
    from .. import synth
    t = template(world, name)
    src = os.path.join(t.root, "history.jsonl")
    synth.write_jsonl(src, events, seed)
    r = t.run("import", "jsonl", src, "--db", t.db)
    if r.rc != 0:
        raise RuntimeError(f"building the history failed: {r}")
    os.unlink(src)
    return t


def reproject(world: World, rng, trials: int, events: int) -> Tally:
    tally = Tally("kill -9: reproject")
    base = history(world, events, "reproject-base")
    cal = world.trial("reproject-cal", base)
    span = _timed(cal, "reproject", "--db", cal.db)
    shutil.rmtree(cal.root, ignore_errors=True)
    for k in range(trials):
        t = world.trial("reproject", base)
        p = t.popen("reproject", "--db", t.db)
        tally.trials += 1
        tally.faults += _kill_at(p, rng.uniform(0.05, 1.0) * span)
        t.check(tally, f"reproject trial {k}")
        r = t.run("reproject", "--db", t.db)
        if r.traceback:
            tally.tracebacks += 1
        if r.rc != 0:
            tally.fail(f"reproject trial {k}: re-run rc={r.rc} {r.out[-200:]!r} {r.err[-200:]!r}")
        shutil.rmtree(t.root, ignore_errors=True)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


# --- bundle import --------------------------------------------------------------------------------

def bundle_import(world: World, rng, trials: int, events: int) -> Tally:
    tally = Tally("kill -9: bundle import")
    source = history(world, events, "bundle-source", seed=4)
    bundle = os.path.join(world.root, "history.bundle")
    r = source.run("bundle", "export", bundle, "--db", source.db, "--include-content")
    if r.rc != 0:
        raise RuntimeError(f"bundle export failed: {r}")
    shutil.rmtree(source.root, ignore_errors=True)
    base = template(world, "bundle-base")
    cal = world.trial("bundle-cal", base)
    span = _timed(cal, "bundle", "import", bundle, "--db", cal.db)
    expected = _count(cal)[0]
    shutil.rmtree(cal.root, ignore_errors=True)
    for k in range(trials):
        t = world.trial("bundle", base)
        p = t.popen("bundle", "import", bundle, "--db", t.db)
        tally.trials += 1
        tally.faults += _kill_at(p, rng.uniform(0.05, 1.0) * span)
        n, _ = _count(t)
        if n % 2500 and n != expected:  # imported like a JSONL stream: whole batches
            tally.fail(f"bundle trial {k}: {n} of {expected} events stored: not whole batches")
        t.check(tally, f"bundle trial {k}")
        _after_rerun(t, tally, f"bundle trial {k}", expected, t.run("bundle", "import", bundle, "--db", t.db))
        shutil.rmtree(t.root, ignore_errors=True)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


# --- import claude-transcripts --------------------------------------------------------------------

def transcript_entries(session: int, turns: int) -> list:
    """A Claude Code session of `turns` turns (prompt, a failing then a passing shell call, the
    answer), as transcript entries."""
    sid = f"{session:08x}-7777-4777-8777-777777777777"
    base = {"sessionId": sid, "cwd": "/home/dev/fault/project", "version": "2.1.190", "isSidechain": False}
    out = []
    for r in range(turns):
        t = lambda s: f"2026-08-20T{9 + r // 60:02d}:{r % 60:02d}:{s:02d}.000Z"  # noqa: E731
        u = lambda n: f"{session:04x}{r:04x}-0000-4000-8000-00000000000{n}"  # noqa: E731

        def assistant(uuid, s, blocks, stop):
            return {**base, "type": "assistant", "uuid": uuid, "timestamp": t(s),
                    "message": {"id": f"msg_{session}_{r}_{uuid[-1]}", "role": "assistant", "model": "m",
                                "content": blocks, "stop_reason": stop,
                                "usage": {"input_tokens": 10, "output_tokens": 5}}}
        out += [
            {**base, "type": "user", "uuid": u(1), "timestamp": t(0), "promptId": f"p-{session}-{r}",
             "message": {"role": "user", "content": f"run the tests, round {r}"}},
            assistant(u(2), 1, [{"type": "tool_use", "id": f"a{session}_{r}", "name": "Bash",
                                 "input": {"command": "make test"}}], "tool_use"),
            {**base, "type": "user", "uuid": u(3), "timestamp": t(2), "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"a{session}_{r}", "is_error": True,
                 "content": "Exit code 2\nFAILED " + "x" * 400}]}},
            assistant(u(4), 3, [{"type": "tool_use", "id": f"b{session}_{r}", "name": "Bash",
                                 "input": {"command": "make test"}}], "tool_use"),
            {**base, "type": "user", "uuid": u(5), "timestamp": t(4), "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"b{session}_{r}", "content": "ok"}]}},
            assistant(u(6), 5, [{"type": "text", "text": "fixed"}], "end_turn"),
        ]
    return out


def transcripts(world: World, rng, trials: int, sessions: int, turns: int) -> Tally:
    tally = Tally("kill -9: import claude-transcripts")
    d = os.path.join(world.root, "transcripts")
    os.makedirs(d, exist_ok=True)
    for s in range(sessions):
        with open(os.path.join(d, f"session-{s}.jsonl"), "w") as f:
            for e in transcript_entries(s + 1, turns):
                f.write(json.dumps(e) + "\n")
    base = template(world, "transcripts-base")
    cal = world.trial("transcripts-cal", base)
    span = _timed(cal, "import", "claude-transcripts", d, "--db", cal.db)
    expected = _count(cal)[0]
    per_session = dict(cal.rows("SELECT session_id, count(*) FROM events GROUP BY session_id"))
    shutil.rmtree(cal.root, ignore_errors=True)
    for k in range(trials):
        t = world.trial("transcripts", base)
        p = t.popen("import", "claude-transcripts", d, "--db", t.db)
        tally.trials += 1
        tally.faults += _kill_at(p, rng.uniform(0.05, 1.0) * span)
        for sid, n in t.rows("SELECT session_id, count(*) FROM events GROUP BY session_id"):
            if n != per_session.get(sid) and n % 2500:
                tally.fail(f"transcripts trial {k}: session {sid} holds {n} of {per_session.get(sid)} events")
        t.check(tally, f"transcripts trial {k}")
        _after_rerun(t, tally, f"transcripts trial {k}", expected,
                     t.run("import", "claude-transcripts", d, "--db", t.db))
        shutil.rmtree(t.root, ignore_errors=True)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally
