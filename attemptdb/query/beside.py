"""Reads run beside the statement's own: parts of a statement on a second connection, in a
thread, while the statement's connection runs the rest.

SQLite releases Python's lock while it prepares and steps a statement, so two connections read
at once on two cores: STATE … AT t reads its sessions on one and its work units on the other;
SHOW WORK UNITS reads its newest units in two halves (`in_halves`).

Invariants: the second connection is `store.readonly.companion` of the first (the same file,
walls and authorizer), opened in its own thread (its schema parse is not the caller's), runs
the parts handed to it in order, its statements stop at the same deadline, it is interrupted and
closed before `beside` returns however the caller's part ended (an error, Ctrl-C), and the
caller sees each part's result or its exception as if it had run in line. Where there can be no
companion (a connection in memory, an `immutable` open, one core), each part runs in line, when
its result is asked for. A caller that needs one snapshot holds a read transaction
(`store.readonly.snapshot`) and compares `snapshot_mark`s: each connection reads its own.

The thread comes from `_thread`, the standard library's documented low-level API (`threading`
costs a cold `attempt query` ~1.5 ms of imports): a lock is held while the thread runs, one per
part while it waits to run, and `result()` waits by taking it.
"""

import _thread

from ..store.readonly import companion, pairing, snapshot


def snapshot_mark(conn) -> tuple:
    """What tells two snapshots of a file apart for the reads split here: every write that
    changes what they read appends an event (work units are refreshed in the append's
    transaction) or resumes paused projections. (A `reproject` writes what was there: the
    projections are a function of the events.)"""
    control = conn.execute("SELECT 1 FROM main.sqlite_schema WHERE name = 'projection_control'").fetchone()
    return conn.execute("SELECT (SELECT max(rowid) FROM main.events)" + (
        ", (SELECT paused FROM main.projection_control WHERE id = 1)" if control else "")).fetchone()


MIN_SPLIT = 32
"""Fewer rows than this are read on one connection: a second one costs its schema parse and the
statement's preparation again (≈ 10 ms of a core)."""


class Part:
    """One part handed to a companion: `result()` waits for its value (or raises its error)."""

    def __init__(self, owner, fn, args):
        self.owner, self.fn, self.args = owner, fn, args
        self.done = _thread.allocate_lock()  # held until the part ran
        self.done.acquire()
        self.value = self.error = None

    def result(self):
        if not self.owner.companion:
            return self.fn(self.owner.ctx, *self.args)
        self.done.acquire()
        self.done.release()
        if self.error is not None:
            raise self.error
        return self.value


class beside:
    """`with beside(ctx, fn, *args) as other:` starts `fn(ctx2, *args)`, ctx2 a Context on a
    companion connection; `other.result()` waits for its value (or raises its exception).
    `other.submit(fn, *args)` hands the companion a further part (run after the ones before it,
    on the same connection) and returns it (`Part.result()`); `with beside(ctx) as other:`
    opens the companion at once with no part yet, so that its schema parse overlaps the
    caller's work. Where there is no companion each part runs in line, at its result()."""

    def __init__(self, ctx, fn=None, *args):
        self.ctx = ctx
        self.parts = []  # handed over, in order
        self.ready = _thread.allocate_lock()  # released when a part is handed over or the caller is done
        self.ready.acquire()
        self.conn = None  # the companion, once its thread opened it
        self.running = None  # the lock the thread holds while it runs
        self.stopped = False  # the caller is done: the thread stops (parts not begun never run)
        self.first = None if fn is None else Part(self, fn, args)

    @property
    def companion(self) -> bool:
        """Whether the parts run on a companion (else in line, at their result())."""
        return self.running is not None

    def __enter__(self):
        pair = pairing(self.ctx.conn)
        if pair is not None:
            self.running = _thread.allocate_lock()
            self.running.acquire()
            if self.first is not None:
                self._hand(self.first)
            try:
                _thread.start_new_thread(self._run, (pair,))
            except BaseException:
                self.running = None
                raise
        return self

    def submit(self, fn, *args) -> Part:
        part = Part(self, fn, args)
        if self.companion:
            self._hand(part)
        return part

    def result(self):
        return self.first.result()

    def _hand(self, part):
        self.parts.append(part)
        if self.ready.locked():  # else the thread has not yet taken the last hand-over: it sees this part too
            self.ready.release()

    def _run(self, pair):
        try:
            conn = companion(pair)
            self.conn = conn
            conn.set_progress_handler(self._past, 20000)
            failed = None
        except BaseException as e:  # handed to the caller by each part's result()
            failed = e
        taken = 0
        try:
            while not self.stopped:
                self.ready.acquire()
                while taken < len(self.parts) and not self.stopped:
                    part = self.parts[taken]
                    taken += 1
                    try:
                        if failed is not None:
                            raise failed
                        part.value = part.fn(self.ctx.on(conn), *part.args)
                    except BaseException as e:
                        part.error = e
                    finally:
                        part.done.release()
        finally:
            for part in self.parts[taken:]:  # the caller is done: what never began never runs
                part.error = RuntimeError("the statement ended before this part began")
                part.done.release()
            self.running.release()

    def _past(self) -> bool:
        return self.stopped or self.ctx.past_deadline()

    def __exit__(self, *exc):
        if self.running is not None:
            if self.running.locked():
                self.stopped = True  # seen by the progress handler, and before a part begins
                if self.ready.locked():
                    self.ready.release()
                conn = self.conn
                if conn is not None:
                    conn.interrupt()
                self.running.acquire()
                self.running.release()
            if self.conn is not None:
                self.conn.close()
        return False


def in_halves(ctx, other: beside, weights, part):
    """(columns, rows) of a read whose rows are the concatenation of slices (`part(offset, n)`:
    the query of the n rows from offset; `weights`: the query of one number per row, in their
    order, that grows with what the row costs to read), read as two halves of about equal
    weight at once, the second submitted to `other` (a beside), both as of the caller's
    snapshot: the caller holds one read transaction throughout, the companion reads in one of
    its own, and a companion that saw another snapshot (snapshot_mark) has its half read again
    on the caller's connection. One read of the whole when `other` has no companion or there
    are fewer than MIN_SPLIT rows."""
    with snapshot(ctx.conn):
        w = [r[0] or 0 for r in ctx.conn.execute(weights.sql, weights.params)]
        n = len(w)
        if n < MIN_SPLIT or not other.companion:
            return ctx.fetch(part(0, n))
        mark = snapshot_mark(ctx.conn)
        first = split_point(w)
        second = part(first, n - first)
        theirs = other.submit(marked, _rows, second)
        cols, rows = ctx.fetch(part(0, first))
        seen, got = theirs.result()
        if seen != mark:
            got = ctx.fetch(second)[1]
        return cols, rows + got


def split_point(weights: list) -> int:
    """How many of the first rows make the half whose weight is nearest half the total (at
    least 1, at most all but one; no weight at all: half the rows, rounded up)."""
    n, total = len(weights), sum(weights)
    if total <= 0:
        return max(1, min((n + 1) // 2, n - 1))
    acc = 0
    for k, x in enumerate(weights, 1):
        acc += x
        if 2 * acc >= total:
            if 2 * acc - total > total - 2 * (acc - x):  # the half without this row is nearer
                k -= 1
            return max(1, min(k, n - 1))
    return max(1, n - 1)


def marked(ctx, fn, *args):
    """(the snapshot's mark, fn(ctx, *args)) read in one snapshot: a part for a companion whose
    caller compares the mark with its own and reads the part again when they differ."""
    with snapshot(ctx.conn):
        return snapshot_mark(ctx.conn), fn(ctx, *args)


def _rows(ctx, q):
    return ctx.fetch(q)[1]
