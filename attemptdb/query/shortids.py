"""Short ids a reader can type back.

Invariant: a short id printed for a stored id is that id cut after at least 8 hex digits, and
no other row of its table (retracted rows included) starts with it, so `attempt why`,
`attempt trace` and `SHOW EVIDENCE FOR` (attemptql.resolve) resolve it to exactly that row.
Ids of kinds the resolver does not look up (prj_, agt_, dev_, …) and ids not found in their
table are kept whole. Lookups are index range scans, one or two per printed id.
"""

from ..model import ids
from . import resolve


def is_id(text) -> bool:
    """A whole stored id: 2-4 lowercase ASCII letters, `_`, a lowercase UUID (ids.is_uuid).
    Without a regular expression: a cold read does not import `re`."""
    if not isinstance(text, str):
        return False
    i = ids.prefix_end(text)
    return i > 0 and ids.is_uuid(text[i + 1:])


# where each kind's ids are stored, indexed: a prefix unique there is unique in the public view
# over it (a view's rows are a subset), and a lookup costs an index probe, not the view's work
STORED = {"attempt": ("attempt_facts", "attempt_id"), "session": ("session_facts", "session_id"),
          "turn": ("turn_facts", "turn_id"), "span": ("tool_call_facts", "tool_call_id"),
          "work_unit": ("unit_index", "work_unit_id"), "event": ("events", "event_id")}


def _table(conn, prefix: str):
    kind = resolve.PREFIX_KIND.get(prefix)
    if kind is None:
        return None
    table, col = STORED.get(kind) or resolve.KINDS[kind][1:3]
    if not resolve.table_exists(conn, table):
        table, col = resolve.KINDS[kind][1:3]
    return (table, col) if resolve.table_exists(conn, table) else None


def shorten(conn, values) -> dict:
    """{full id: shortest unambiguous form} for every id among `values` (other values are
    ignored)."""
    out = {}
    tables = {}
    for v in values:
        if not is_id(v) or v in out:
            continue
        prefix = v[: v.index("_") + 1]
        if prefix not in tables:
            tables[prefix] = _table(conn, prefix)
        where = tables[prefix]
        if where is None:
            out[v] = v
            continue
        table, col = where
        if conn.execute(f"SELECT 1 FROM {table} WHERE {col} = ?", (v,)).fetchone() is None:
            out[v] = v  # not a row of its table here: only the whole id is certain
            continue
        n = len(prefix) + resolve.MIN_SHORT_HEX
        while n < len(v):
            cand = v[:n]
            hits = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {col} >= ? AND {col} < ? "
                                "LIMIT 2)", (cand, resolve.prefix_upper_bound(cand))).fetchone()[0]
            if hits <= 1:
                break
            n += 2 if v[n] == "-" else 1  # never end on a hyphen
        out[v] = v[:n]
    return out


def collect(data, found=None) -> set:
    """Every id string anywhere in a JSON-like structure (for shortening before the connection
    closes)."""
    found = set() if found is None else found
    if isinstance(data, dict):
        for x in data.values():
            collect(x, found)
    elif isinstance(data, (list, tuple)):
        for x in data:
            collect(x, found)
    elif is_id(data):
        found.add(data)
    return found
