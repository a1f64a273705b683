"""What running a statement returns: `Result` (columns, rows, notes, uncertainty), the run
context, and the rule that an inferred claim never goes out without its evidence."""



import time

from ..model import clock, fastjson
from . import sqlgen as C
from .errors import AQLError

DEFAULT_TIMEOUT_S = 30.0
REASONS = ("deterministic", "heuristic", "model", "corrected", "insufficient_evidence", "content_unavailable",
           "state_mismatch", "depth_limit")
_NO_CLAIM = ("insufficient_evidence", "state_mismatch", "depth_limit")
COVERAGE_CONFIDENCE = {"full": 1.0, "partial": 0.8, "minimal": 0.6, "unknown": 0.4}
FAILED = ("failed", "superseded")


class Result:
    """Rows of one statement. `kind`: rows, explanation or empty; `display` lists the columns
    a terminal table shows (every column goes to --json/--csv). `encoded`: the indexes of list
    columns whose values are still the JSON text SQL returned; `rows` decodes them when first
    read, `encoded_rows` hands them over as they are (JSON output writes most of them unchanged)."""

    __slots__ = ("columns", "_rows", "_encoded", "notes", "kind", "display", "language")

    def __init__(self, columns, rows, notes=None, kind=None, display=None, language="attemptql", encoded=()):
        self.columns = list(columns)
        self._rows = [tuple(r) for r in rows]
        self._encoded = frozenset(encoded)
        self.notes = list(notes or [])
        self.kind = kind or ("rows" if self._rows else "empty")
        self.display = [c for c in (display or self.columns) if c in self.columns]
        self.language = language

    @property
    def rows(self) -> list[tuple]:
        if self._encoded:
            self._rows = _decode_lists(self._rows, sorted(self._encoded))
            self._encoded = frozenset()
        return self._rows

    @rows.setter
    def rows(self, rows):
        self._rows = [tuple(r) for r in rows]
        self._encoded = frozenset()

    def encoded_rows(self) -> tuple[list[tuple], frozenset]:
        """(rows, indexes of the list columns in them still as JSON text): nothing decoded."""
        return self._rows, self._encoded

    def dicts(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows]

    def __repr__(self):
        return f"Result({len(self.rows)} rows, columns={self.columns})"


def uncertainty(confidence, reason, note=None) -> dict:
    assert reason in REASONS
    return {"confidence": None if confidence is None else round(float(confidence), 4), "reason": reason,
            "note": note}


# --- context -----------------------------------------------------------------------------

class Context:
    """What compiling and running one statement needs: the connection, the statement text
    (for positions), the instant `now`, the working directory (bare `project`)."""

    def __init__(self, conn, source: str, now_us: int | None = None, cwd: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S):
        self.conn = conn
        self.source = source
        self.now_us = clock.now_us() if now_us is None else now_us
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.target = None
        self.deadline = time.monotonic() + timeout_s
        self._columns = {}

    def past_deadline(self) -> bool:
        """The progress handler of this statement's connections: True stops the statement."""
        return time.monotonic() > self.deadline

    def on(self, conn) -> "Context":
        """This context on another connection (attemptdb.query.beside)."""
        other = object.__new__(Context)
        other.__dict__.update(self.__dict__)
        other.conn = conn
        other._columns = {}
        return other

    def iso(self, us: int) -> str:
        """Storage text of `us`. A window that starts before year 1 (STATE or DIFF at a time of
        year 1, less its 12 h) starts at year 1's first instant: no stored time is earlier, so
        every comparison answers the same (the statement's own times are checked when read)."""
        try:
            return clock.iso(max(us, clock.MIN_US))
        except OverflowError:
            raise AQLError("AQL0104", "timestamp outside years 0001-9999") from None

    def columns(self, table: str) -> set:
        if table not in self._columns:
            self._columns[table] = {r[1] for r in self.conn.execute(f"PRAGMA table_xinfo({table})")}
        return self._columns[table]

    def fetch(self, q: C.Query):
        """(column names, rows) of a query."""
        return fetch(self.conn, q.sql, q.params)

    def dicts(self, q: C.Query) -> list[dict]:
        cols, rows = self.fetch(q)
        return [dict(zip(cols, r)) for r in rows]


_FETCH_BYTES: dict = {}
"""id(connection) → the bytes of text and BLOB values one fetch on it may hold (bound_fetches)."""


def bound_fetches(conn, max_bytes: int | None) -> None:
    """Every fetch on `conn` stops with AQL0502 once its rows hold more than `max_bytes` bytes of
    text and BLOB values (None: no bound; set it back to None before closing `conn`). For a
    connection that answers others (the MCP server's): 200 rows of a hostile SELECT must not
    take the process's memory before the answer is cut."""
    if max_bytes is None:
        _FETCH_BYTES.pop(id(conn), None)
    else:
        _FETCH_BYTES[id(conn)] = max_bytes


def fetch(conn, sql, params=()):
    cur = conn.cursor()
    desc = []

    def trace(cursor, statement, bindings):
        desc.append(cursor.get_description())
        return True

    cur.exec_trace = trace
    limit = _FETCH_BYTES.get(id(conn))
    rows = cur.execute(sql, params).fetchall() if limit is None else _within(cur.execute(sql, params), limit)
    cols = [d[0] for d in desc[0]] if desc else []
    return cols, rows


def value_bytes(row) -> int:
    """The text and BLOB size of one row (what a fetch bound counts)."""
    return sum(len(v) for v in row if v.__class__ is str or v.__class__ is bytes)


def fetch_refusal(max_bytes: int) -> str:
    """The AQL0502 message of a statement whose rows would hold more than `max_bytes`."""
    return (f"the answer holds more than {max_bytes // (1 << 20)} MiB of text and BLOB values; "
            "select fewer rows or shorter values (substr, length)")


def _within(cursor, limit: int) -> list:
    rows, left = [], limit
    for r in cursor:
        left -= value_bytes(r)
        if left < 0:
            raise AQLError("AQL0502", fetch_refusal(limit))
        rows.append(r)
    return rows


def loads_list(v):
    if v is None:
        return []
    if isinstance(v, list):
        return v
    try:
        out = fastjson.loads(v)
    except (ValueError, TypeError):
        return [v]
    return out if isinstance(out, list) else [out]


def dedup(items):
    seen = set()
    out = []
    for x in items:
        if x is not None and x not in seen:
            seen.add(x)
            out.append(x)
    return out


def list_columns(columns) -> list[int]:
    """The indexes of the list columns (sqlgen.LIST_COLUMNS: JSON arrays in SQL) of `columns`."""
    return [i for i, c in enumerate(columns) if c in C.LIST_COLUMNS]


def _decode_lists(rows, idx_list):
    out = []
    for r in rows:
        r = list(r)
        for i in idx_list:
            r[i] = loads_list(r[i])
        out.append(tuple(r))
    return out


def is_empty_list(v) -> bool:
    """`not loads_list(v)`, without decoding a JSON text that is not an empty array."""
    if isinstance(v, str):
        t = v.strip(fastjson.WHITESPACE)
        return t[:1] == "[" and t[-1:] == "]" and not t[1:-1].strip(fastjson.WHITESPACE)
    return not loads_list(v)


def decode_rows(columns, rows, *, lists: bool = True):
    """JSON text → Python lists/dicts for list columns (unless `lists` is false) and uncertainty."""
    idx_list = list_columns(columns) if lists else []
    idx_unc = [i for i, c in enumerate(columns) if c == "uncertainty"]
    if not idx_list and not idx_unc:
        return rows
    out = []
    for r in rows:
        r = list(r)
        for i in idx_list:
            r[i] = loads_list(r[i])
        for i in idx_unc:
            if isinstance(r[i], str):
                try:
                    r[i] = fastjson.loads(r[i])
                except ValueError:
                    pass
        out.append(tuple(r))
    return out


def enforce_evidence(result: Result) -> Result:
    """AQL0601: an inference row without evidence is withheld and reported, never rendered."""
    if "evidence" not in result.columns or "uncertainty" not in result.columns:
        return result
    ie = result.columns.index("evidence")
    iu = result.columns.index("uncertainty")
    rows, encoded = result.encoded_rows()
    empty = is_empty_list if ie in encoded else (lambda v: not v)
    kept = []
    for r in rows:
        u = r[iu] if isinstance(r[iu], dict) else {}
        if empty(r[ie]) and u.get("reason") not in _NO_CLAIM:
            continue
        kept.append(r)
    if len(kept) != len(rows):
        n = len(rows) - len(kept)
        result.notes.append(f"AQL0601: {n} row(s) claimed something without evidence and were withheld "
                            "(an internal invariant violation; `attempt reproject` rebuilds the projections)")
        result._rows = kept  # as they were: still encoded where they were
        if not kept:
            result.kind = "empty"
    return result
