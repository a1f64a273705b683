"""Rendering a `Result` for a terminal, as JSON or as CSV.

Invariants: the table and vertical forms collapse evidence to a count ("3 events") unless
asked for the ids, show uncertainty as "<confidence> <reason>", write a decimal as the sqlite3
shell does (`real`: 15 significant digits, a decimal point always), never emit control characters
from cell values or column names (they show as `?`, errors.printable, as everywhere else), and truncate long cells with "…" (widths in display columns: a wide character takes two); JSON
prints every column of every row as objects (repeated names made unique, infinities as text), on a
terminal with C1 controls and disguising characters written as \\u escapes (the same values to a
parser, none raw there); CSV is RFC 4180 with formula-looking cells and names neutralised (a leading `'` unless a
plain decimal number), every character kept, except on a terminal where controls show as `?`.
No third-party imports: `--json` output must stay within the start-up budget.
"""

import math

from ..errors import printable
from ..model import fastjson
from . import jsonterm

MAX_CELL = 60


def safe_chars(text: str) -> str:
    """The rule of every terminal line (errors.printable): each control character (ESC and
    its sequences included) and each disguising one shows as `?`; any other unprintable
    character (a private-use or unassigned one, an odd space) as `?` too, a space as a space.
    One character for one: the length stays."""
    if text.isprintable():
        return text
    text = printable(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else (" " if c.isspace() else "?") for c in text)


def real(value) -> str:
    """A decimal (REAL) as the sqlite3 shell prints it (its `%!.15g`): 15 significant digits and
    always a decimal point (`1234567.891`, `100000.5`, `1.0`, `1.23456789012346e+29`), infinities
    `Inf` and `-Inf`. The one spelling of a decimal in every table and record on the terminal
    (--json and --csv print the value exactly)."""
    v = float(value) or 0.0  # SQLite writes no sign on a zero
    if not math.isfinite(v):
        return "NaN" if v != v else ("Inf" if v > 0 else "-Inf")
    mantissa, e, exponent = ("%.15g" % v).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def cell(column: str, value, *, evidence_ids: bool = False, width: int = MAX_CELL) -> str:
    if value is None:
        return ""
    if column == "evidence" and isinstance(value, list) and not evidence_ids:
        return f"{len(value)} event" + ("" if len(value) == 1 else "s")
    if column == "uncertainty" and isinstance(value, dict):
        c = value.get("confidence")
        shown = "" if c is None else (real(c) if isinstance(c, (int, float)) else str(c)) + " "
        text = shown + str(value.get("reason") or "")
    elif isinstance(value, list):
        text = ", ".join(str(v) for v in value)
    elif isinstance(value, dict):
        text = fastjson.dumps(value)
    elif isinstance(value, bool):  # SQL's spelling, not Python's (DESCRIBE's primary_key)
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = real(value)
    elif isinstance(value, bytes):
        text = f"<{len(value)} bytes>"
    else:
        text = str(value)
    if width and len(text) > width:  # cut first: cleaning keeps lengths, and cells can be long
        from .termtable import clip
        text = clip(text, width)
    return safe_chars(text)


def shown(result) -> tuple[list, list]:
    """(names, row indexes) of the columns a terminal shows: the display subset a SHOW names
    (unique names), else every column by position, so two result columns of one name (`SELECT
    a.confidence, s.confidence`) each show their own value."""
    if not result.display or list(result.display) == list(result.columns):
        return list(result.columns), list(range(len(result.columns)))
    return list(result.display), [result.columns.index(c) for c in result.display]


def table(result, *, evidence_ids: bool = False, max_rows: int | None = None, term_width: int = 0,
          shorten: dict | None = None) -> str:
    """Rows under a header and a rule. With `term_width` (and not listing evidence ids) the
    table fits that width (attemptdb.render.termtable): ids shortened through `shorten` only, times
    never cut, text columns shrink, what cannot fit is named in a note."""
    cols, index = shown(result)
    rows = result.rows if max_rows is None else result.rows[:max_rows]
    width = MAX_CELL if not evidence_ids else 0
    cells = [[cell(c, r[i], evidence_ids=evidence_ids, width=width) for c, i in zip(cols, index)] for r in rows]
    heads = [safe_chars(str(c)) for c in cols]  # a column name is a statement's text (`AS "…"`): the cells' rule
    if term_width and not evidence_ids:
        from . import termtable
        lines, hidden = termtable.fit(heads, cells, term_width, shorten=shorten)
        return "\n".join(lines + termtable.hidden_note(hidden, term_width))
    from .termtable import cols as _cols
    from .termtable import pad
    widths = [max([_cols(c)] + [_cols(row[k]) for row in cells]) for k, c in enumerate(heads)]
    lines = ["  ".join(pad(c, widths[k]) for k, c in enumerate(heads)).rstrip(),
             "  ".join("-" * widths[k] for k in range(len(cols)))]
    for row in cells:
        lines.append("  ".join(pad(v, widths[k]) for k, v in enumerate(row)).rstrip())
    return "\n".join(lines)


def vertical(result, *, evidence_ids: bool = False, max_rows: int | None = None, term_width: int = 0) -> str:
    """One `column  value` line per column and row; with `term_width`, long values wrap at
    spaces under the value column (ids and times, single words, are never broken)."""
    cols, index = shown(result)
    rows = result.rows if max_rows is None else result.rows[:max_rows]
    w = max(14, max((len(c) for c in cols), default=0))
    blocks = []
    for r in rows:
        lines = []
        for c, i in zip(cols, index):
            v = cell(c, r[i], evidence_ids=evidence_ids, width=0 if c in ("claim", "detail") else 200)
            v = v if v != "" else "—"
            from . import termtable
            if term_width and w + 1 + termtable.cols(v) > term_width and term_width - w - 1 >= 20:
                parts = termtable.lines_of(v, term_width - w - 1, break_long_words=False) or [v]
                v = ("\n" + " " * (w + 1)).join(parts)
            lines.append(f"{safe_chars(str(c)):<{w}} {v}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def listing(result) -> str:
    """EXPLAIN: one `step  detail` line per row, details in full (SQL keeps its lines)."""
    i, j = result.columns.index("step"), result.columns.index("detail")
    w = max(len(str(r[i])) for r in result.rows)
    lines = []
    for r in result.rows:
        detail = "\n".join(safe_chars(x) for x in str(r[j]).split("\n"))
        lines.append(f"{r[i]:<{w}}  " + detail.replace("\n", "\n" + " " * (w + 2)))
    return "\n".join(lines)


def text(result, *, evidence_ids: bool = False, max_rows: int | None = None, term_width: int = 0,
         shorten: dict | None = None) -> str:
    """The terminal form: a table (or vertical records for explanations, a listing for
    EXPLAIN), the row count and the notes (wrapped to `term_width` when given)."""
    out = []
    if not result.rows:
        out.append("(no rows)")
    elif result.display == ["step", "detail"]:
        out.append(listing(result))
    elif result.kind == "explanation":
        out.append(vertical(result, evidence_ids=evidence_ids, max_rows=max_rows, term_width=term_width))
        out.append("")
        out.append(_count(result, max_rows))
    else:
        out.append(table(result, evidence_ids=evidence_ids, max_rows=max_rows, term_width=term_width,
                         shorten=shorten))
        out.append(_count(result, max_rows))
    for n in result.notes:
        if term_width:
            from . import termtable
            out.extend(termtable.prose(note(n), term_width, "  "))
        else:
            out.append(note(n))
    return "\n".join(out)


def note(text) -> str:
    """A result's note as its line (`note: …`), in every form (--json writes them on stderr):
    notes name stored values (a project's name), shown through the cells' rule."""
    return f"note: {safe_chars(str(text))}"


def _count(result, max_rows):
    n = len(result.rows)
    shown = n if max_rows is None else min(n, max_rows)
    tail = f"; {shown} shown, raise -n to see more" if shown < n else ""
    return f"({n} row{'' if n == 1 else 's'}{tail})"


def _plain(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # JSON has no Infinity: "inf", as the MCP answers write it
    return v


def _unique(cols) -> list[str]:
    """Column names as object keys: a repeated name gets `:1`, `:2`, … (SQLite's own names for a
    subquery's repeated columns, which the MCP answers carry), so no value is lost."""
    seen, out = set(), []
    for c in cols:
        name, k = c, 0
        while name in seen:
            k += 1
            name = f"{c}:{k}"
        seen.add(name)
        out.append(name)
    return out


def json_rows(result, *, terminal: bool = False) -> str:
    """Every row as an object, keyed by the column names made unique. The list columns still as
    SQL's JSON text (Result.encoded_rows) are written as that text when each is what decoding and
    encoding it again would write; otherwise every row is decoded first. `terminal`: the text
    goes to a terminal, so C1 controls and disguising characters are written as \\u escapes
    (render/jsonterm: the rule of every JSON output)."""
    cols = _unique(result.columns)
    text = _spliced(result, cols)
    text = text if text is not None else fastjson.dumps(_objects(cols, result.rows))
    return jsonterm.escaped(text) if terminal else text


def _spliced(result, cols) -> str | None:
    """The rows as JSON with their encoded list columns written as they are; None when there is
    none, or one is not what fastjson would write for it (fastjson.is_compact_string_array;
    NULL reads as [])."""
    rows, encoded = result.encoded_rows()
    if not encoded:
        return None
    hole, texts, objs = fastjson.hole(), [], []
    for r in rows:
        obj = {}
        for i, v in enumerate(r):
            if i not in encoded:
                obj[cols[i]] = _plain(v)
                continue
            if v is None:
                v = "[]"
            elif not (isinstance(v, str) and fastjson.is_compact_string_array(v)):
                return None
            texts.append(v)
            obj[cols[i]] = hole
        objs.append(obj)
    return fastjson.dumps_spliced(objs, texts, lambda: _objects(cols, result.rows))


def _objects(cols, rows) -> list[dict]:
    return [{c: _plain(v) for c, v in zip(cols, r)} for r in rows]


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_text(result, *, terminal: bool = False) -> str:
    """`terminal`: the text goes to a terminal, so control and disguising characters of cells
    and names show as `?` (errors.printable; tab and newline stay); elsewhere every one is kept."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow([_csv_cell(str(c), terminal) for c in result.columns])
    for r in result.rows:
        out = []
        for v in r:
            if v is None:
                out.append("")
                continue
            s = fastjson.dumps(v) if isinstance(v, (list, dict, bool)) else (v.hex() if isinstance(v, bytes) else str(v))
            out.append(_csv_cell(s, terminal))
        w.writerow(out)
    return buf.getvalue()


def _csv_cell(s: str, terminal: bool) -> str:
    if s.startswith(_FORMULA) and not _is_number(s):
        s = "'" + s
    return printable(s, lines=True) if terminal else s


def _is_number(s: str) -> bool:
    """A plain decimal number, as a spreadsheet reads one: a sign, ASCII digits with at most one
    point, an optional exponent. Not what float() also takes (inf, nan, 1_000, spaces): a
    spreadsheet reads `-nan` or `+inf` as a formula."""
    t = s[1:].lower() if s[:1] in "+-" else s.lower()
    mantissa, e, exponent = t.partition("e")
    if e and not _digits(exponent[1:] if exponent[:1] in "+-" else exponent):
        return False
    whole, _, fraction = mantissa.partition(".")
    return _digits(whole + fraction)


def _digits(s: str) -> bool:
    return s.isascii() and s.isdigit()
