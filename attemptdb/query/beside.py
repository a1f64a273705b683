"""Reads run beside the statement's own: one part of a statement on a second connection, in a
thread, while the statement's connection runs the rest.

SQLite releases Python's lock while it prepares and steps a statement, so two connections read
at once on two cores: STATE … AT t reads its sessions on one and its work units on the other.

Invariants: the second connection is `store.readonly.companion` of the first (the same file,
walls and authorizer), its statements stop at the same deadline, it is interrupted and closed
before `beside` returns however the caller's part ended (an error, Ctrl-C), and the caller sees
the part's result or its exception as if it had run in line. Where no companion can be opened
(a connection in memory, an `immutable` open), the part runs in line, after the caller's.
Each connection reads its own snapshot, as each statement on one connection does.
"""

import threading

from ..store.readonly import companion


class beside:
    """`with beside(ctx, fn, *args) as part:` starts `fn(ctx2, *args)`, ctx2 a Context on a
    companion connection; `part.result()` waits for its value (or raises its exception)."""

    def __init__(self, ctx, fn, *args):
        self.ctx, self.fn, self.args = ctx, fn, args
        self.conn = None
        self.thread = None
        self.value = self.error = None

    def __enter__(self):
        self.conn = companion(self.ctx.conn)
        if self.conn is not None:
            self.conn.set_progress_handler(self.ctx.past_deadline, 20000)
            self.thread = threading.Thread(target=self._run, args=(self.ctx.on(self.conn),), daemon=True)
            self.thread.start()
        return self

    def _run(self, ctx):
        try:
            self.value = self.fn(ctx, *self.args)
        except BaseException as e:  # handed to the caller by result()
            self.error = e

    def result(self):
        if self.thread is None:
            return self.fn(self.ctx, *self.args)
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.value

    def __exit__(self, *exc):
        if self.conn is not None:
            if self.thread.is_alive():
                self.conn.interrupt()
                self.thread.join()
            self.conn.close()
        return False
