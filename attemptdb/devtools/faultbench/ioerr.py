"""I/O errors injected below SQLite (attemptdb.devtools.faultbench.vfs): the Nth read, write, sync or
lock of the database's files fails with EIO, ENOSPC or EACCES (or a read comes back short),
once or from then on, swept over N, while the product runs in this process unchanged:

- the capture path (`capture.main`, what a hook runs): exit 0, nothing on stdout, the event
  stored exactly once or spooled, and stored exactly once after the next drain;
- an import batch (`attempt import jsonl` through the CLI entry point): a coded error or
  success, never a traceback, never part of a batch;
- a checkpoint (`attempt checkpoint`): a coded error or success, and the file and the copy
  beside the key still agree.
After each fault is gone the file passes integrity_check, verify and a rebuild comparison.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys

from . import kill
from .vfs import Fault, FaultVFS
from .world import Tally, World

COMBOS = (("read", "EIO"), ("read", "short"), ("write", "EIO"), ("write", "ENOSPC"), ("write", "EACCES"),
          ("sync", "EIO"), ("sync", "ENOSPC"), ("lock", "EIO"), ("lock", "EACCES"))
IMPORT_EVENTS = 400


def _close_capture_store():
    from ...capture import hook as capture
    st = capture.seen.get("store")
    capture.seen.update(bytes=0, db=None, store=None)
    if st is not None:
        try:
            st.close()
        except Exception:
            pass


def capture_in_process(argv: list, payload: bytes) -> tuple[int, str, str, BaseException | None]:
    """`capture.main(argv)` with `payload` on stdin, as a hook process runs it."""
    from ...capture import hook as capture
    _close_capture_store()
    out, err = io.StringIO(), io.StringIO()
    old_in = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(payload))
    exc = None
    rc = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = capture.main(argv)
    except BaseException as e:  # the agent would have seen this
        exc = e
    finally:
        sys.stdin = old_in
        _close_capture_store()
    return rc, out.getvalue(), err.getvalue(), exc


def cli_in_process(args: list) -> tuple[int, str, str, BaseException | None]:
    """The `attempt` entry point in this process (its own error mapping included)."""
    from ...cli.main import run
    out, err = io.StringIO(), io.StringIO()
    exc = None
    rc = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = run(args)
    except BaseException as e:
        exc = e
    return rc, out.getvalue(), err.getvalue(), exc


def _coded(rc, err: str, exc) -> bool:
    if exc is not None or "Traceback" in err or "error[internal]" in err:
        return False
    if rc == 0:
        return True
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return bool(lines) and any(ln.startswith("error[") for ln in lines)


def _library_checks(t, tally: Tally, what: str, fault: Fault | None = None) -> bool:
    """integrity_check, verify and a rebuild comparison, in this process (fault gone).

    A short read is, by SQLite's VFS contract, the end of the file: the rest of the page is
    zeros. The unix VFS retries partial reads, so it only ever reports one where the file
    really ends; injected in the middle of a file it stands for a file cut short underneath
    SQLite, which SQLite cannot tell from data and may write back. Such a file can be damaged:
    what the product owes then is that `verify` says so (and `recover` repairs it)."""
    from ...integrity.verify import verify
    from ...projections import rebuild
    from ...store.database import Store
    ok = True
    found = t.integrity()
    if found:
        tally.integrity_failures += 1
        if fault is not None and fault.error == "short":
            try:
                st = Store.open(t.db, create=False, readonly=True)
                try:
                    reported = not verify(st).ok
                finally:
                    st.close()
            except Exception as e:
                reported = getattr(e, "code", None) == "store.corrupt"
            if reported:
                tally.add("short_read_damage_reported_by_verify")
                return False
        tally.fail(f"{what}: integrity_check {found[:2]}")
        return False
    try:
        st = Store.open(t.db, create=False)
        try:
            rep = verify(st)
            if not rep.ok:
                tally.verify_failures += 1
                tally.fail(f"{what}: verify: {rep.line()}")
                ok = False
            if not rebuild.reproject(st.conn, write=False).clean:
                tally.fail(f"{what}: the projections differ from a rebuild")
                ok = False
        finally:
            st.close()
    except Exception as e:
        tally.verify_failures += 1
        tally.fail(f"{what}: the file cannot be checked: {type(e).__name__}: {e}")
        ok = False
    return ok


def _nths(rng, total: int, k: int) -> list:
    if total <= 0:
        return []
    if total <= k:
        return list(range(1, total + 1))
    picks = {1, total}
    while len(picks) < k:
        picks.add(rng.randint(1, total))
    return sorted(picks)


def _sweep(world, rng, tally, base, per_op, name, prepare, act, after):
    """Calibrate the calls one clean run makes, then one trial per (op, error, N)."""
    cal = world.trial(f"{name}-cal", base)
    with cal.activated(), FaultVFS.installed(cal.root) as vfs:
        ctx = prepare(cal)
        vfs.arm(None)
        act(cal, ctx)
        counts = dict(vfs.counts)
    shutil.rmtree(cal.root, ignore_errors=True)
    tally.extra[f"calls_{name}"] = counts
    for op, error in COMBOS:
        for nth in _nths(rng, counts[op], per_op):
            persist = rng.random() < 0.3
            t = world.trial(name, base)
            fault = Fault(op, nth, error, persist)
            with t.activated():
                ctx = prepare(t)
                with FaultVFS.installed(t.root) as vfs:
                    vfs.arm(fault)
                    result = act(t, ctx)
                    vfs.arm(None)
                    _close_capture_store()
                tally.trials += 1
                if fault.fired:
                    tally.faults += 1
                after(t, ctx, result, f"{name} {fault!r}", fault)
            shutil.rmtree(t.root, ignore_errors=True)


def sweep(world: World, rng, per_op: int) -> list:
    return [capture_sweep(world, rng, per_op), import_sweep(world, rng, per_op),
            checkpoint_sweep(world, rng, per_op)]


# --- the capture path -------------------------------------------------------------------------------

def capture_sweep(world: World, rng, per_op: int) -> Tally:
    tally = Tally("I/O errors: capture")
    base = kill.template(world, "io-capture-base")
    for i in range(5):  # a file with some history
        base.run("capture", "claude-code", input=kill.burst_payload(99, i))
    counter = [0]

    def prepare(t):
        counter[0] += 1
        return f"toolu_burst_7_{counter[0]}"

    def act(t, marker):
        k, i = marker.rsplit("_", 2)[-2:]
        return capture_in_process(["claude-code", "--db", t.db], kill.burst_payload(int(k), int(i)))

    def after(t, marker, result, what, fault):
        rc, out, err, exc = result
        if exc is not None or rc != 0 or out or err:
            tally.tracebacks += exc is not None or "Traceback" in err
            tally.fail(f"{what}: capture rc={rc} out={out[:80]!r} err={err[-200:]!r} exc={exc!r}")
        stored = t.rows("SELECT count(*) FROM events WHERE tool_call_id = ?", (marker,))[0][0] \
            if not t.integrity() else 0
        spooled = sum(1 for e in t.spooled_lines() if (e.get("tool") or {}).get("call_id") == marker)
        if stored + spooled != 1:
            tally.acked_lost += stored + spooled == 0
            tally.fail(f"{what}: the event is stored {stored} time(s) and spooled {spooled} time(s)")
        tally.add("spooled", spooled)
        _drain(t)
        n = t.rows("SELECT count(*) FROM events WHERE tool_call_id = ?", (marker,))[0][0]
        if n != 1:
            tally.acked_lost += n == 0
            tally.fail(f"{what}: after the next drain the event is stored {n} time(s)")
        _library_checks(t, tally, what, fault)

    _sweep(world, rng, tally, base, per_op, "capture", prepare, act, after)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


def _drain(t):
    from ...capture import spool
    from ...store.database import Store
    st = Store.open(t.db, create=False)
    try:
        spool.drain(st)
    finally:
        st.close()


# --- an import batch --------------------------------------------------------------------------------

def import_sweep(world: World, rng, per_op: int) -> Tally:
    from .. import synth
    tally = Tally("I/O errors: import batch")
    base = kill.template(world, "io-import-base")
    src = os.path.join(world.root, "io-import.jsonl")
    synth.write_jsonl(src, IMPORT_EVENTS, 11)

    def act(t, _ctx):
        return cli_in_process(["import", "jsonl", src, "--db", t.db])

    def after(t, _ctx, result, what, fault):
        rc, out, err, exc = result
        if not _coded(rc, err, exc):
            tally.tracebacks += exc is not None or "Traceback" in err or "error[internal]" in err
            tally.fail(f"{what}: import rc={rc} err={err[-300:]!r} exc={exc!r}")
        tally.add("coded_errors", rc != 0)
        if not _library_checks(t, tally, what, fault):
            return
        n = t.rows("SELECT count(*) FROM events")[0][0]
        if n not in (0, IMPORT_EVENTS):
            tally.fail(f"{what}: {n} of {IMPORT_EVENTS} events of one batch stored")
        rc2, _o, err2, exc2 = cli_in_process(["import", "jsonl", src, "--db", t.db])
        n2, d2 = t.rows("SELECT count(*), count(DISTINCT event_id) FROM events")[0]
        if rc2 != 0 or n2 != IMPORT_EVENTS or d2 != n2:
            tally.fail(f"{what}: the re-run stored {n2} events (rc={rc2}, {err2[-200:]!r})")

    _sweep(world, rng, tally, base, per_op, "import", lambda t: None, act, after)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


# --- a checkpoint ------------------------------------------------------------------------------------

def checkpoint_sweep(world: World, rng, per_op: int) -> Tally:
    tally = Tally("I/O errors: checkpoint")
    base = kill.history(world, 400, "io-checkpoint-base", seed=12)
    for i in range(20):  # the chain grew since the last signature: a checkpoint is due
        base.run("capture", "claude-code", input=kill.burst_payload(98, i))

    def act(t, _ctx):
        return cli_in_process(["checkpoint", "--db", t.db])

    def after(t, _ctx, result, what, fault):
        rc, out, err, exc = result
        if not _coded(rc, err, exc):
            tally.tracebacks += exc is not None or "Traceback" in err or "error[internal]" in err
            tally.fail(f"{what}: checkpoint rc={rc} err={err[-300:]!r} exc={exc!r}")
        tally.add("coded_errors", rc != 0)
        if not _library_checks(t, tally, what, fault):
            return
        rc2, out2, err2, exc2 = cli_in_process(["checkpoint", "--db", t.db])
        if rc2 != 0:
            tally.fail(f"{what}: signing again afterwards: rc={rc2} {err2[-300:]!r}")

    _sweep(world, rng, tally, base, per_op, "checkpoint", lambda t: None, act, after)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally
