"""One statement → at most `max_rows` rows as JSON-ready objects, for the read surfaces.

Invariants:
- The statement runs through the engine `attempt query` uses (attemptql.execute.run) on a
  read-only connection, split and classified by that engine's own rules; every failure is
  its coded AQLError, naming the statement as it was written.
- A request longer than MAX_STATEMENT_CHARS is refused before anything runs (AQL0208).
- A plain SQL SELECT/WITH/VALUES is read through an outer `LIMIT max_rows + 1`, so a table
  of a million rows is never held in memory to return 200; AttemptQL statements carry their
  own LIMIT (default 100, at most 1,000,000) and are cut after they ran.
- `truncated` is true whenever the statement has rows the answer leaves out: rows past
  `max_rows` or the size cap, or rows a LIMIT stopped the read before (the outer LIMIT; a
  SHOW's own LIMIT when as many rows as it allows came back and the same SHOW with one more
  (the probe) finds another). `total` is how many rows the statement has when every one was
  seen, else None: never a LIMIT passed off as a count. A SHOW whose LIMIT stopped the read
  says so in its own note (`more`, given by the caller in its own terms, else how to ask for
  more), in place of the engine's.
- Values are JSON-safe: list columns and uncertainty decoded, BLOBs shown as their size,
  non-finite floats as text; nothing is rendered inside a value.
- An answer is bounded in size as well as in rows, whatever the stored values hold (a hostile
  hook payload can make one tool name or path megabytes long): a text value longer than
  MAX_VALUE_CHARS (a list longer than MAX_LIST_ITEMS items or MAX_VALUE_CHARS characters) is
  cut there and ends in CUT_MARK, counted in `values_cut` and said in a note (`substr(column,
  start, length)` reads the rest); rows after the first whose JSON would take the answer past
  MAX_ANSWER_CHARS are left out, and the answer says `truncated`; a first row past it alone has
  its values cut shorter (down to MIN_VALUE_CHARS). A caller may give a smaller Budget.
- What a statement may make a reader hold before any of that is bounded too: no text or BLOB
  longer than MAX_VALUE_BYTES (SQLite's SQLITE_LIMIT_LENGTH on the reader's connection) and no
  more than a fetch budget of text and BLOB bytes (query.result.value_bytes) in one statement's
  rows; past either, AQL0502 (query.result.fetch_refusal).
"""

import math
import re
import time

from ..model import fastjson
from ..query import execute, nodes, sqlgen, sqltext
from ..query.errors import AQLError
from ..query.result import decode_rows

MAX_ROWS = 200
MAX_STATEMENT_CHARS = 64 * 1024
DEFAULT_TIMEOUT_S = 20.0
MAX_VALUE_CHARS = 16 * 1024
MAX_LIST_ITEMS = 1000
MAX_ANSWER_CHARS = 1024 * 1024
CUT_MARK = "…[cut]"
MIN_VALUE_CHARS = 64
"""A row that alone passes an answer's budget has its values cut shorter, down to this."""
MAX_VALUE_BYTES = 64 << 20
"""The longest text or BLOB a reader's statement may build or read (SQLITE_LIMIT_LENGTH): a stored
value is at most a 64 MiB line; `randomblob(1e9)` is refused (AQL0502), not allocated."""
MAX_FETCH_BYTES = 128 << 20
"""The text and BLOB bytes one statement's rows may hold in the MCP reader (query.result.bound_fetches)
before its answer is cut to MAX_ANSWER_CHARS; the web UI's budget is smaller (web.limits)."""
_BOUNDABLE = ("SELECT", "WITH", "VALUES")
_LIMIT_DIGITS = re.compile(r"LIMIT(?:\s+|--[^\n]*)*([0-9]+)", re.IGNORECASE)  # AttemptQL's `LIMIT _ integer`


def bounded_sql(text: str, limit: int) -> str | None:
    """`text` (one plain SQL SELECT/WITH/VALUES) read through an outer LIMIT, or None when
    the statement is anything else (it then runs as it is, and is refused there if it must be)."""
    if sqltext.classify(text) != "sql":
        return None
    word, _ = sqltext.word(text, sqltext.skip_ws(text))
    if word not in _BOUNDABLE:
        return None
    first, rest = sqltext.split_first_statement(text)
    if not sqltext.only_trivia(rest):
        return None  # a second statement: execute.run refuses it (AQL0204)
    body = first.rstrip()
    if body.endswith(";"):
        body = body[:-1]
    return f"SELECT * FROM (\n{body}\n) LIMIT {int(limit) + 1}"


def value_refusal(max_bytes: int = MAX_VALUE_BYTES) -> str:
    """The AQL0502 message of a statement that would build a text or BLOB past SQLITE_LIMIT_LENGTH."""
    return (f"a text or BLOB value would be longer than {max_bytes // (1 << 20)} MiB; "
            "select a shorter one (substr, length)")


def json_safe(value):
    if isinstance(value, bytes):
        return {"blob_bytes": len(value)}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return value


def _cut(value, counter: list, max_value: int = MAX_VALUE_CHARS):
    """`value` (JSON-safe) with every text longer than `max_value` cut there, and every list
    cut after MAX_LIST_ITEMS items or where its items' text passes `max_value` characters
    (CUT_MARK appended); counter[0] counts the cuts."""
    if isinstance(value, str):
        if len(value) > max_value:
            counter[0] += 1
            return value[:max_value] + CUT_MARK
        return value
    if isinstance(value, list):
        out, left = [], max_value
        for i, v in enumerate(value):
            if i == MAX_LIST_ITEMS or (out and left <= 0):
                counter[0] += 1
                return out + [CUT_MARK]
            item = _cut(v, counter, max_value)
            left -= len(item) if isinstance(item, str) else len(fastjson.dumps(item))
            out.append(item)
        return out
    if isinstance(value, dict):
        return {k: _cut(v, counter, max_value) for k, v in value.items()}
    return value


def parsed_show(text: str):
    """The parsed SHOW of `text` (an AttemptQL SHOW, not EXPLAIN), else None."""
    if sqltext.classify(text) != "attemptql":
        return None
    from ..query.parse import parse
    try:
        stmt = parse(text)
    except AQLError:
        return None  # execute.run raises it
    return None if stmt.explain or not isinstance(stmt.command, nodes.Show) else stmt.command


def with_limit(text: str, show, limit: int) -> str | None:
    """`text` (whose parse is `show`) reading up to `limit` rows: its LIMIT's digits replaced,
    or `LIMIT n` on a line of its own after the statement (a comment ends at the line's end);
    None unless the new text parses as the same SHOW with that limit."""
    if show.limit is not None:
        digits = _LIMIT_DIGITS.match(text, show.limit_pos)
        if digits is None:
            return None
        out = text[:digits.start(1)] + str(limit) + text[digits.end(1):]
    else:
        first, _ = sqltext.split_first_statement(text)
        body = first.rstrip()
        out = (body[:-1] if body.endswith(";") else body) + f"\nLIMIT {limit}"
    again = parsed_show(out)
    if again is None or again.limit != limit or again.target != show.target:
        return None
    return out


def _limit_note(note) -> bool:
    """The engine's note of a SHOW whose LIMIT was reached (query.show), replaced here."""
    return isinstance(note, str) and note.startswith("showing the first ") and "(LIMIT " in note


class Budget:
    """What one answer may hold: `chars` of row JSON (every row after the first that would pass
    it is left out) and `value` characters in one text (cut there). The defaults suit a browser;
    an agent's context takes far less (readers.mcp_server)."""

    __slots__ = ("chars", "value")

    def __init__(self, chars: int = MAX_ANSWER_CHARS, value: int = MAX_VALUE_CHARS):
        self.chars, self.value = chars, value


DEFAULT_BUDGET = Budget()


def answer(result, statement: str, *, max_rows: int = MAX_ROWS, seen_all: bool = True, notes=None,
           budget: Budget = DEFAULT_BUDGET) -> dict:
    """A Result as the read surfaces return it (bounded in rows and in size: module invariants).
    `seen_all`: no LIMIT stopped the statement's read; `notes`: the notes (default the Result's)."""
    rows = decode_rows(result.columns, result.rows) if result.language == "sql" else result.rows
    total = len(rows)
    cut, left, out = [0], budget.chars, []
    for r in rows[:max_rows]:
        value, cuts = budget.value, [0]
        row = {c: _cut(json_safe(v), cuts, value) for c, v in zip(result.columns, r)}
        size = len(fastjson.dumps(row))
        if out and left - size < 0:
            break
        while size > budget.chars and value > MIN_VALUE_CHARS:  # one row alone past the budget: cut harder
            value, cuts = max(value // 4, MIN_VALUE_CHARS), [0]
            row = {c: _cut(json_safe(v), cuts, value) for c, v in zip(result.columns, r)}
            size = len(fastjson.dumps(row))
        cut[0] += cuts[0]
        left -= size
        out.append(row)
    notes = [_cut(json_safe(n), [0], budget.value) for n in (result.notes if notes is None else notes)]
    if cut[0]:
        notes.append(f"{cut[0]} value(s) longer than {budget.value} characters (or lists longer than "
                     f"{MAX_LIST_ITEMS} items) were cut (they end in {CUT_MARK}); read a text whole with "
                     "substr(column, start, length)")
    if len(out) < min(total, max_rows):
        notes.append(f"only the first {len(out)} row(s) fit in an answer of {budget.chars} characters; "
                     "ask for fewer columns or rows (LIMIT, WHERE, SINCE)")
    return {
        "statement": statement,
        "language": result.language,
        "columns": list(result.columns),
        "display": list(result.display),
        "rows": out,
        "row_count": len(out),
        "truncated": total > len(out) or not seen_all,
        "total": total if seen_all else None,
        "values_cut": cut[0],
        "notes": notes,
    }


def run(conn, statement, *, gate=None, max_rows: int = MAX_ROWS, cwd: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S, more: str | None = None, budget: Budget = DEFAULT_BUDGET) -> dict:
    """Run one statement on a read-only connection (attemptdb.store.readonly) and bound the answer.
    `more`: the note when a SHOW's LIMIT left rows out (None: how to ask for more; "": none)."""
    if isinstance(statement, str) and len(statement) > MAX_STATEMENT_CHARS:
        raise AQLError("AQL0208", f"the request is too large (more than {MAX_STATEMENT_CHARS} characters); "
                       "ask for less: one statement, with WHERE, a time range or LIMIT")
    wrapped = bounded_sql(statement, max_rows) if isinstance(statement, str) else None
    if wrapped is None:
        started = time.monotonic()
        result = execute.run(conn, statement, cwd=cwd, gate=gate, timeout_s=timeout_s)
        show = parsed_show(statement) if isinstance(statement, str) else None
        if show is None:
            return answer(result, statement, budget=budget, max_rows=max_rows)
        limit = sqlgen.DEFAULT_LIMIT if show.limit is None else show.limit
        notes = [n for n in result.notes if not _limit_note(n)]
        if len(result.rows) < limit:
            return answer(result, statement, budget=budget, max_rows=max_rows, notes=notes)
        left = timeout_s - (time.monotonic() - started)
        beyond = _more_rows(conn, statement, show, limit, gate=gate, cwd=cwd, timeout_s=left)
        if beyond is False:
            return answer(result, statement, budget=budget, max_rows=max_rows, notes=notes)
        if more is None:
            more = (f"the statement's LIMIT {limit} stopped the read: "
                    + ("more rows exist" if beyond else "more rows may exist") + " (total unknown); "
                    + (f"add LIMIT {max_rows} to see up to {max_rows}" if limit < max_rows else
                       f"an answer holds at most {max_rows} rows: narrow it with FOR, WHERE, SINCE or UNTIL"))
        return answer(result, statement, budget=budget, max_rows=max_rows, seen_all=False, notes=notes + ([more] if more else []))
    try:
        result = execute.run(conn, wrapped, cwd=cwd, gate=gate, timeout_s=timeout_s)
    except AQLError as e:
        if e.code == "AQL0505":  # a SQLite error: name the statement as written, not our wrapper
            execute.run(conn, "EXPLAIN " + statement, cwd=cwd, gate=gate, timeout_s=timeout_s)
        e.source, e.pos, e.end, e.label = statement, None, None, None
        raise
    return answer(result, statement, budget=budget, max_rows=max_rows, seen_all=len(result.rows) <= max_rows)


def _more_rows(conn, statement: str, show, limit: int, *, gate, cwd, timeout_s: float):
    """Whether the SHOW `statement`, which returned `limit` rows, has another: the same SHOW
    with LIMIT limit + 1 (the probe); None when that cannot be known (LIMIT at its maximum, the
    probe past the time left or refused)."""
    probe = with_limit(statement, show, limit + 1) if limit < sqlgen.MAX_LIMIT else None
    if probe is None or timeout_s <= 0:
        return None
    try:
        return len(execute.run(conn, probe, cwd=cwd, gate=gate, timeout_s=timeout_s).rows) > limit
    except AQLError:
        return None
