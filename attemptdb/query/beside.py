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

from ..store.readonly import companion, pairing


class beside:
    """`with beside(ctx, fn, *args) as part:` starts `fn(ctx2, *args)`, ctx2 a Context on a
    companion connection; `part.result()` waits for its value (or raises its exception)."""

    def __init__(self, ctx, fn, *args):
        self.ctx, self.fn, self.args = ctx, fn, args
        self.conn = None  # the companion, once the part's thread opened it
        self.running = None  # the lock the part holds while it runs
        self.stopped = False  # the caller is done: the part stops (or does not start)
        self.value = self.error = None

    def __enter__(self):
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

    def _run(self, pair):
        try:
            conn = companion(pair)
            self.conn = conn
            conn.set_progress_handler(self._past, 20000)
            self.value = self.fn(self.ctx.on(conn), *self.args)
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
            return self.fn(self.ctx, *self.args)
        self._join()
        if self.error is not None:
            raise self.error
        return self.value

    def __exit__(self, *exc):
        if self.running is not None:
            if self.running.locked():
                self.stopped = True  # seen by the progress handler, or before the part starts
                conn = self.conn
                if conn is not None:
                    conn.interrupt()
                self._join()
            if self.conn is not None:
                self.conn.close()
        return False
