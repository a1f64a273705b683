"""Reads run beside the statement's own: one part of a statement on a second connection, in a
thread, while the statement's connection runs the rest.

SQLite releases Python's lock while it prepares and steps a statement, so two connections read
at once on two cores: STATE … AT t reads its sessions on one and its work units on the other.

Invariants: the second connection is `store.readonly.companion` of the first (the same file,
walls and authorizer), opened in the part's thread (its schema parse is not the caller's), its
statements stop at the same deadline, it is interrupted and closed before `beside` returns
however the caller's part ended (an error, Ctrl-C), and the caller sees the part's result or
its exception as if it had run in line. Where there can be no companion (a connection in
memory, an `immutable` open), the part runs in line, after the caller's. Each connection reads
its own snapshot, as each statement on one connection does.

The thread comes from `_thread`, the standard library's documented low-level API (`threading`
costs a cold `attempt query` ~1.5 ms of imports): the part's lock is held while it runs, and
`result()` waits by taking it.
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


class beside:
    """`with beside(ctx, fn, *args) as part:` starts `fn(ctx2, *args)`, ctx2 a Context on a
    companion connection; `part.result()` waits for its value (or raises its exception).
    `with beside(ctx) as part:` opens the companion at once and `part.give(fn, *args)` hands it
    its part later: a caller that will read beside before it knows what has the schema parse
    overlap its own work. A part never given never runs."""

    def __init__(self, ctx, fn=None, *args):
        self.ctx = ctx
        self.part = None if fn is None else (fn, args)
        self.given = _thread.allocate_lock()  # held until the part is given (or the caller is done)
        self.conn = None  # the companion, once the part's thread opened it
        self.running = None  # the lock the part holds while it runs
        self.stopped = False  # the caller is done: the part stops (or does not start)
        self.value = self.error = None

    @property
    def companion(self) -> bool:
        """Whether the part runs on a companion (else in line, at result())."""
        return self.running is not None

    def __enter__(self):
        if self.part is None:
            self.given.acquire()
        pair = pairing(self.ctx.conn)
        if pair is not None:
            self.running = _thread.allocate_lock()
            self.running.acquire()
            try:
                _thread.start_new_thread(self._run, (pair,))
            except BaseException:
                self.running = None
                raise
        return self

    def give(self, fn, *args):
        self.part = (fn, args)
        self.given.release()

    def _run(self, pair):
        try:
            conn = companion(pair)
            self.conn = conn
            conn.set_progress_handler(self._past, 20000)
            self.given.acquire()  # the part, or the caller done without one
            if not self.stopped:
                fn, args = self.part
                self.value = fn(self.ctx.on(conn), *args)
        except BaseException as e:  # handed to the caller by result()
            self.error = e
        finally:
            self.running.release()

    def _past(self) -> bool:
        return self.stopped or self.ctx.past_deadline()

    def _join(self):
        self.running.acquire()
        self.running.release()

    def result(self):
        if self.running is None:
            fn, args = self.part
            return fn(self.ctx, *args)
        self._join()
        if self.error is not None:
            raise self.error
        return self.value

    def __exit__(self, *exc):
        if self.running is not None:
            if self.running.locked():
                self.stopped = True  # seen by the progress handler, or before the part starts
                if self.part is None:
                    self.given.release()  # a companion waiting for a part that never came
                conn = self.conn
                if conn is not None:
                    conn.interrupt()
                self._join()
            if self.conn is not None:
                self.conn.close()
        return False


def in_halves(ctx, other: beside, count, part):
    """(columns, rows) of a read whose rows are the concatenation of slices (`part(offset, n)`:
    the query of the n rows from offset; `count`: the query of how many rows there are), read as
    two halves at once, the second given to `other` (a beside opened without a part), both as of
    the caller's snapshot: the caller holds one read transaction throughout, the companion reads
    in one of its own, and a companion that saw another snapshot (snapshot_mark) has its half
    read again on the caller's connection. One read of the whole when `other` has no companion
    or there are fewer than MIN_SPLIT rows."""
    with snapshot(ctx.conn):
        n = ctx.conn.execute(count.sql, count.params).fetchone()[0]
        if n < MIN_SPLIT or not other.companion:
            return ctx.fetch(part(0, n))
        mark = snapshot_mark(ctx.conn)
        first = (n + 1) // 2
        second = part(first, n - first)
        other.give(_marked, second)
        cols, rows = ctx.fetch(part(0, first))
        seen, got = other.result()
        if seen != mark:
            got = ctx.fetch(second)[1]
        return cols, rows + got


def _marked(ctx, q):
    """(the snapshot's mark, ctx.fetch(q)) read in one snapshot."""
    with snapshot(ctx.conn):
        return snapshot_mark(ctx.conn), ctx.fetch(q)[1]
