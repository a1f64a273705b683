"""attempt_trace(), state_at() and evidence(): AttemptQL as table functions for SQL users."""


import apsw

from ..model import fastjson
from . import sqlgen as C
from .errors import AQLError
from .resolve import resolve_id, resolve_time
from .scope import Scope
from .show import ShowHandler
from .state import STATE_COLUMNS, state_result
from .trace import TRACE_COLUMNS, trace_result

# --- table functions for SQL users -------------------------------------------------------------

def _sql_value(v):
    if isinstance(v, (list, dict)):
        return fastjson.dumps(v)
    return v


def _tf_trace(ctx, id, depth=C.DEFAULT_DEPTH, direction="UP"):
    if not isinstance(id, str):
        raise AQLError("AQL0105", "attempt_trace(id, depth, direction) needs an id as text")
    d = str(direction or "UP").upper()
    if d not in ("UP", "DOWN", "BOTH"):
        raise AQLError("AQL0201", "attempt_trace direction must be 'UP', 'DOWN' or 'BOTH'")
    try:
        depth = int(depth if depth is not None else C.DEFAULT_DEPTH)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite REAL
        raise AQLError("AQL0410", "attempt_trace depth must be a whole number") from None
    if not 1 <= depth <= C.MAX_DEPTH:
        raise AQLError("AQL0410", f"attempt_trace depth must be between 1 and {C.MAX_DEPTH}")
    kind, ident = resolve_id(ctx.conn, None, id)
    res = trace_result(ctx, kind, ident, depth, d)
    return [tuple(_sql_value(v) for v in r) for r in res.rows]


def _tf_state(ctx, ts):
    if ts is None:
        raise AQLError("AQL0104", "state_at(ts) needs a timestamp")
    t = resolve_time("string", str(ts), ctx.now_us)
    res = state_result(ctx, Scope(), t)
    return [tuple(_sql_value(v) for v in r) for r in res.rows]


def _tf_evidence(ctx, id):
    if not isinstance(id, str):
        raise AQLError("AQL0105", "evidence(id) needs an id as text")
    from . import nodes as ast
    show = ast.Show(0, 0, target="evidence", ref=ast.Subject(0, 0, kind="ref", value=id), limit=C.MAX_LIMIT)
    res = ShowHandler.run(ctx, show)
    return [tuple(_sql_value(v) for v in r) for r in res.rows], res.columns


class _TableFunction:
    """An eponymous virtual table used as a table-valued function: SELECT * FROM f(a, b)."""

    def __init__(self, ctx, columns, params, produce):
        self.ctx = ctx
        self.columns = list(columns)
        self.params = list(params)
        self.produce = produce

    def Create(self, db, modulename, dbname, tablename, *args):
        cols = ", ".join(f'"{c}"' for c in self.columns)
        hidden = ", ".join(f'"arg_{p}" HIDDEN' for p in self.params)
        return f"CREATE TABLE x({cols}, {hidden})", _TFTable(self)

    Connect = Create


class _TFTable:
    def __init__(self, fn):
        self.fn = fn

    def BestIndex(self, constraints, orderbys):
        n = len(self.fn.columns)
        used = [None] * len(constraints)
        argv = 0
        mask = 0
        for i in range(len(self.fn.params)):
            for ci, (col, op) in enumerate(constraints):
                if col == n + i and op == apsw.SQLITE_INDEX_CONSTRAINT_EQ and used[ci] is None:
                    used[ci] = (argv, True)
                    argv += 1
                    mask |= 1 << i
                    break
        return used, mask, None, False, 10.0 if mask & 1 else 1e12

    def Open(self):
        return _TFCursor(self.fn)

    def Disconnect(self):
        pass

    Destroy = Disconnect


class _TFCursor:
    def __init__(self, fn):
        self.fn = fn
        self.rows = []
        self.args = {}
        self.i = 0

    def Filter(self, indexnum, indexname, constraintargs):
        vals = list(constraintargs)
        self.args = {}
        for i, p in enumerate(self.fn.params):
            if indexnum & (1 << i):
                self.args[p] = vals.pop(0)
        if self.fn.params and self.fn.params[0] not in self.args:
            raise AQLError("AQL0505", f"the table function needs its first argument ({self.fn.params[0]})")
        self.rows = self.fn.produce(**self.args)
        self.i = 0

    def Eof(self):
        return self.i >= len(self.rows)

    def Rowid(self):
        return self.i

    def Column(self, col):
        if col == -1:
            return self.i
        n = len(self.fn.columns)
        if col < n:
            return self.rows[self.i][col]
        return self.args.get(self.fn.params[col - n])

    def Next(self):
        self.i += 1

    def Close(self):
        pass


def register_table_functions(ctx) -> None:
    """attempt_trace(id, depth, direction), state_at(ts), evidence(id) on this connection."""
    conn = ctx.conn
    ev_cols = [r[1] for r in conn.execute("PRAGMA table_xinfo(events)") if not r[6]] + ["evidence", "uncertainty"]

    def trace(id, depth=C.DEFAULT_DEPTH, direction="UP"):
        return _tf_trace(ctx, id, depth, direction)

    def state(ts):
        return _tf_state(ctx, ts)

    def evidence(id):
        rows, cols = _tf_evidence(ctx, id)
        index = [cols.index(c) for c in ev_cols]
        return [tuple(r[i] for i in index) for r in rows]

    conn.create_module("attempt_trace", _TableFunction(ctx, TRACE_COLUMNS, ("id", "depth", "direction"), trace),
                       eponymous=True, eponymous_only=True)
    conn.create_module("state_at", _TableFunction(ctx, STATE_COLUMNS, ("ts",), state),
                       eponymous=True, eponymous_only=True)
    conn.create_module("evidence", _TableFunction(ctx, ev_cols, ("id",), evidence),
                       eponymous=True, eponymous_only=True)
