"""Run one statement (AttemptQL or read-only SQL) on a read-only connection → a `Result`.

Invariants:
- `run()` takes the text of exactly one statement and returns rows or raises `AQLError`
  (every failure coded, positional when it has a position, never a traceback, never
  database content in a message). It never writes: the connection it is given must come from
  `attemptdb.store.readonly` (authorizer + read-only open), and SQL that would write is refused.
- Every AttemptQL row has `evidence` (a list of event ids) and `uncertainty`
  (`{"confidence", "reason", "note"}`); reason is one of deterministic, heuristic, corrected,
  content_unavailable, insufficient_evidence, state_mismatch, depth_limit. A row that claims
  something without evidence is withheld and reported (AQL0601).
- parsimonious is imported only when the text is AttemptQL, a statement family's module
  (show, why, trace, state, diff) only when a statement of that family runs, the table
  functions only when the SQL names one: `attempt query` is a fresh process every time.
"""

import apsw

from ..errors import did_you_mean
from ..model import fastjson
from ..store.database import let_signals_in
from ..store.sqlerrors import condition
from .errors import AQLError
from .resolve import PLANNED_TABLES, planned_error, table_exists
from .result import DEFAULT_TIMEOUT_S, Context, Result, dedup, enforce_evidence, fetch, uncertainty
from .sqltext import TABLE_FUNCTIONS, classify, explain_refusal, only_trivia, skip_ws, split_first_statement, word

# --- entry point ---------------------------------------------------------------------------

def run(conn, text: str, *, now_us: int | None = None, cwd: str | None = None, explain: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S, gate=None) -> Result:
    """Run one statement. `conn` must be read-only (attemptdb.store.readonly)."""
    if not isinstance(text, str):
        raise AQLError("AQL0203", "empty statement; expected SHOW, WHY, TRACE, STATE, DIFF, WHAT IS or EXPLAIN")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:  # argv bytes that were not UTF-8 arrive as lone surrogates
        raise AQLError("AQL0108", f"the statement is not valid UTF-8 text (character {e.start + 1})") from None
    if "\x00" in text:  # SQLite would end the statement there (apsw refuses it outright)
        raise AQLError("AQL0106", f"a NUL character cannot appear in a statement (character {text.index(chr(0)) + 1})")
    ctx = Context(conn, text, now_us, cwd, timeout_s)
    if gate is not None:
        gate.refused = None
    refused = explain_refusal(text)
    if refused is not None:
        raise refused
    kind = classify(text)
    conn.set_progress_handler(ctx.past_deadline, 20000)
    try:
        if kind == "sql":
            return run_sql(ctx, text, explain=explain, gate=gate)
        if kind == "describe":
            return describe(ctx, text)
        if kind == "tables":
            return tables(ctx, text)
        if kind == "write":
            w, _ = word(text, skip_ws(text))
            raise AQLError("AQL0506", f"read-only: {w} statements are not accepted; use SELECT/WITH/VALUES/"
                           "EXPLAIN/DESCRIBE (SQL) or SHOW/WHY/TRACE/STATE/DIFF/WHAT IS (AttemptQL)",
                           source=text, pos=skip_ws(text), end=skip_ws(text) + len(w), label="writes are refused")
        return run_attemptql(ctx, explain=explain)
    except AQLError as e:
        raise e.located(text)
    except apsw.Error as e:
        raise sqlite_error(e, gate, text) from None
    except RecursionError:
        raise AQLError("AQL0208", "the statement nests too deeply to run safely; simplify it (IN (...) "
                       "instead of long OR chains)", source=text) from None
    except UnicodeDecodeError:  # apsw decoding a value: made by the statement (char(55296),
        # CAST(x'ff' AS TEXT)) or a stored row edited outside AttemptDB; not a verdict on the file
        raise AQLError("AQL0505", "a value the statement reads or returns is text that is not valid UTF-8; "
                       "read it as hex(...) or CAST(... AS BLOB) (`attempt verify` checks the stored rows)",
                       source=text) from None
    except MemoryError:
        raise AQLError("AQL0502", "the result needed more memory than this process could get; narrow it "
                       "with WHERE or LIMIT", source=text) from None
    finally:
        let_signals_in(conn)  # the connection's own handler again (Ctrl-C between statements)


def sqlite_error(e: apsw.Error, gate, text: str | None = None) -> AQLError:
    """A SQLite failure as an AQL05xx error (messages name tables/columns, never values)."""
    found = condition(e)
    if found == "interrupted":
        return AQLError("AQL0501", "the statement ran past its time limit and was stopped; narrow it with "
                        "WHERE, a time range or LIMIT", source=text)
    if found in ("denied", "read_only"):
        what = (gate.refused if gate is not None and gate.refused else None) or "writing"
        return AQLError("AQL0506", f"read-only: {what} is refused on the query connection; history is "
                        "appended by capture, never by a query", source=text)
    if found in ("too_big", "full"):
        return AQLError("AQL0502", "the statement needed too much memory and was stopped; narrow it with "
                        "WHERE or LIMIT", source=text)
    if found in ("corrupt", "io", "cannot_open"):
        return AQLError("AQL0504", "the database file could not be read (SQLite reports it damaged or "
                        "unreadable); run `attempt verify`", source=text)
    if found == "busy":
        return AQLError("AQL0501", "the database stayed locked by a writer; try again", source=text)
    msg = str(e)
    head, sep, tail = msg.partition(": ")
    if sep and head.endswith("Error") and head.isidentifier():
        msg = tail
    for t in PLANNED_TABLES:
        if f"no such table: {t}" in msg:
            return planned_error(t.replace("_", " "))
    if msg.startswith("Expression tree is too large"):  # SQLite's own depth limit (SQLITE_MAX_EXPR_DEPTH)
        return AQLError("AQL0208", "the statement nests too deeply to run safely; simplify it (IN (...) "
                        "instead of long OR chains)", source=text)
    if msg.startswith("no such table"):
        msg += " (SHOW TABLES lists the tables; `attempt schema` describes them)"
    if msg.startswith("bad JSON path"):  # SQLite quotes the path, which may be a stored value
        msg = "bad JSON path (a path is '$', '$.key' or '$[0]' and so on)"
    if "not authorized" in msg:
        what = (gate.refused if gate is not None and gate.refused else None) or "this statement"
        return AQLError("AQL0506", f"read-only: {what} is refused on the query connection", source=text)
    return AQLError("AQL0505", f"SQLite: {msg[:300]}", source=text)


MAX_SQL_CHARS = 512 * 1024


def run_sql(ctx, text: str, *, explain: bool = False, gate=None) -> Result:
    if len(text) > MAX_SQL_CHARS:
        raise AQLError("AQL0208", f"the statement is too large to run safely (more than {MAX_SQL_CHARS} "
                       "characters); split it, or use IN (...) / GROUP BY instead of long OR chains", source=None)
    first, rest = split_first_statement(text)
    if not only_trivia(rest):
        pos = len(first) + skip_ws(rest)
        raise AQLError("AQL0204", "one statement per call: text follows the ';' that ended the statement",
                       source=text, pos=pos, end=pos + 1, label="a second statement starts here")
    i = skip_ws(first)
    w, j = word(first, i)
    notes = []
    sql = first
    if w == "EXPLAIN":
        k = skip_ws(first, j)
        w2, j2 = word(first, k)
        if w2 != "QUERY":
            sql = first[:i] + "EXPLAIN QUERY PLAN " + first[k:]
            notes.append("EXPLAIN shows SQLite's query plan (EXPLAIN QUERY PLAN): the indexes a statement "
                         "uses and the tables it scans")
    elif explain:
        sql = "EXPLAIN QUERY PLAN " + first[i:]
    if _mentions_table_function(sql):
        from .table_functions import register_table_functions
        register_table_functions(ctx)
    try:
        cols, rows = fetch(ctx.conn, sql)
    except apsw.SQLError as e:  # SQLite says where in the statement (the user's own text when unchanged)
        off = getattr(e, "error_offset", -1)
        if sql != first or not 0 <= off < len(sql) or (gate is not None and gate.refused):
            raise
        end = off + 1
        while end < len(sql) and (sql[end].isalnum() or sql[end] in "_$"):
            end += 1
        raise sqlite_error(e, gate, text).located(text, off, end, "here") from None
    if gate is not None and gate.refused:
        raise AQLError("AQL0506", f"read-only: {gate.refused} is refused on the query connection", source=text)
    if sql.lstrip().upper().startswith("EXPLAIN QUERY PLAN") and all(c in cols for c in PLAN_COLUMNS):
        # SQLite answers (id, parent, notused, detail): the plan is what its named columns hold
        at = [cols.index(c) for c in PLAN_COLUMNS]
        return Result(list(PLAN_COLUMNS), [tuple(r[i] for i in at) for r in rows], notes, kind="explanation",
                      language="sql")
    return Result(cols, rows, notes, language="sql")


PLAN_COLUMNS = ("id", "parent", "detail")


def _mentions_table_function(sql: str) -> bool:
    low = sql.lower()
    return any(f + "(" in low.replace(" (", "(") for f in TABLE_FUNCTIONS)


def describe(ctx, text: str) -> Result:
    i = skip_ws(text)
    _, j = word(text, i)
    k = skip_ws(text, j)
    w, j2 = word(text, k)
    if w == "TABLE":
        k = skip_ws(text, j2)
        w, j2 = word(text, k)
    name = text[k:j2].lower()
    if not name or not only_trivia(text[j2:]):
        raise AQLError("AQL0201", "DESCRIBE takes one table name (DESCRIBE attempts)", source=text, pos=k,
                       end=k + 1, label="expected a table name")
    if not table_exists(ctx.conn, name):
        if name in PLANNED_TABLES:
            raise planned_error(name.replace("_", " "), (text, k, j2))
        names = [n for n, _ in documented_tables(ctx.conn)]
        raise AQLError("AQL0307", "unknown table" + (did_you_mean(name, names) or "; `attempt schema` describes each"),
                       source=text, pos=k, end=j2, label="unknown table", listing=("tables", names))
    documented = _documented_columns(name)
    # the catalog's type and nullability where it documents the column (what `attempt schema`
    # says: a view's columns declare no type or an affinity only); else what SQLite declares
    rows = []
    for r in ctx.conn.execute(f"PRAGMA table_xinfo({name})"):
        if r[6]:
            continue
        doc = documented.get(r[1])
        kind = doc["type"] if doc else (r[2] or "").lower() or "any"
        nullable = doc["null"] if doc and "null" in doc else not (r[3] or r[5])
        rows.append((r[1], kind, bool(nullable), r[5] > 0))  # booleans: true/false, as primary_key
    return Result(["column", "type", "null", "primary_key"], rows,
                  [f"{name}: {len(rows)} columns; `attempt schema {name}` says what they mean"], language="sql")


def _documented_columns(table: str) -> dict:
    """{column: its catalog entry (type, null, …)} the table catalog (spec/) documents for `table`."""
    from ..projections import catalog
    for t in catalog.load_docs()["tables"]:
        if t["name"] == table:
            return {c["name"]: c for c in t.get("columns", [])}
    return {}


INTERNAL_TABLES = ("meta", "device_clock", "checkpoints")


def public_tables(conn) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name") if r[0] not in INTERNAL_TABLES]


def documented_tables(conn) -> list[tuple[str, str]]:
    """[(name, layer)] of the tables the catalog documents (spec/catalog-columns.json) that the
    file holds, in the catalog's order: the query surface. The rest (the projections' stored
    state, the chain's bookkeeping) is internal: its shape may change between versions."""
    from ..projections import catalog
    live = set(public_tables(conn))
    return [(t["name"], t["layer"]) for t in catalog.load_docs()["tables"] if t["name"] in live]


def tables(ctx, text: str) -> Result:
    _, j = word(text, skip_ws(text))
    _, j = word(text, skip_ws(text, j))
    if not only_trivia(text[j:]):
        k = skip_ws(text, j)
        raise AQLError("AQL0204", "SHOW TABLES takes nothing after it (one statement per call)", source=text,
                       pos=k, end=len(text.rstrip()), label="unexpected text")
    rows = []
    listed = documented_tables(ctx.conn)
    for name, layer in listed:
        kind = ctx.conn.execute("SELECT type FROM sqlite_schema WHERE name = ?", (name,)).fetchone()[0]
        ncol = sum(1 for r in ctx.conn.execute(f"PRAGMA table_xinfo({name})") if not r[6])
        rows.append((name, kind, layer, ncol))
    hidden = len(public_tables(ctx.conn)) - len(listed)
    notes = ["DESCRIBE <table> lists a table's columns; `attempt schema` says what they mean"]
    if hidden:
        notes.append(f"{hidden} internal tables and views (the projections' stored state) are not listed: their "
                     "shape may change between versions; SELECT name FROM sqlite_schema lists every object")
    return Result(["table", "type", "layer", "columns"], rows, notes, language="sql")


# --- AttemptQL -------------------------------------------------------------------------------

_PREPARED: dict = {}  # statement text → its parse, made by prepare() and taken by the run


def prepare(text, open_beside=None) -> None:
    """Load now what running `text` needs that does not read the file: its parse and its
    statement family's module (a caller whose file is still opening calls this meanwhile).
    When running it reads on a second connection as well (query/beside.py: the handler's
    `reads_beside`), `open_beside()` is called: the caller may begin to open that one too
    (store.readonly.open_spare). Whatever goes wrong is left for `run` to report, in its
    order."""
    if not isinstance(text, str) or classify(text) != "attemptql":
        return
    try:
        from .parse import parse
        stmt = parse(text)
        handler = HANDLERS[type(stmt.command)]
    except Exception:  # run() parses again and raises it where it belongs
        return
    _PREPARED.clear()
    _PREPARED[text] = stmt
    if stmt.explain:
        return
    beside = getattr(handler, "reads_beside", None)
    if open_beside is not None and beside is not None and beside(stmt.command):
        open_beside()


def run_attemptql(ctx, *, explain: bool = False) -> Result:
    from .parse import parse
    stmt = _PREPARED.pop(ctx.source, None) or parse(ctx.source)
    cmd = stmt.command
    handler = HANDLERS[type(cmd)]
    if stmt.explain or explain:
        return explain_statement(ctx, stmt, handler)
    result = handler.run(ctx, cmd)
    return enforce_evidence(result)


# ... EXPLAIN

def explain_statement(ctx, stmt, handler) -> Result:
    queries = handler.queries(ctx, stmt.command)
    rows = []
    rows.append(("statement", type(stmt.command).__name__.upper()))
    rows.append(("ast", fastjson.dumps(stmt.command.describe())))
    indexes = []
    tables = set()
    for q in queries:
        rows.append(("sql", q.sql))
        params = q.params if isinstance(q.params, dict) else list(q.params)
        rows.append(("parameters", fastjson.dumps(params)))
        plan = ctx.conn.execute("EXPLAIN QUERY PLAN " + q.sql, q.params).fetchall()
        depth = {}
        for pid, parent, _, detail in plan:
            depth[pid] = depth.get(parent, -1) + 1
            rows.append(("plan", "  " * depth[pid] + detail))
            words = detail.split()
            if "USING" in words:
                k = words.index("USING")
                rest = words[k + 1:]
                if rest[:1] == ["AUTOMATIC"]:
                    indexes.append("an automatic index built for this query")
                elif "INDEX" in rest and rest.index("INDEX") + 1 < len(rest):
                    indexes.append(rest[rest.index("INDEX") + 1])
                elif rest[:3] == ["INTEGER", "PRIMARY", "KEY"] or rest[:2] == ["PRIMARY", "KEY"]:
                    indexes.append("the primary key")
            elif words[:1] == ["SCAN"] and len(words) > 1 and not words[1].startswith("("):
                tables.add(words[1])
    rows.append(("indexes", ", ".join(dedup(indexes)) or "none"))
    rows.append(("full scans", ", ".join(sorted(tables)) or "none"))
    notes = ["EXPLAIN compiles the statement and asks SQLite for its plan; it does not run it"]
    out = [(s, d, [], uncertainty(1.0, "deterministic", "query plan")) for s, d in rows]
    return Result(("step", "detail", "evidence", "uncertainty"), out, notes, kind="explanation",
                  display=("step", "detail"))


def _handler(command_type):
    """The handler of an AST command class, its module imported now."""
    from . import nodes as ast
    if command_type is ast.Show:
        from .show import ShowHandler as handler
    elif command_type is ast.Why:
        from .why import WhyHandler as handler
    elif command_type is ast.Trace:
        from .trace import TraceHandler as handler
    elif command_type is ast.State:
        from .state import StateHandler as handler
    elif command_type is ast.WhatIs:
        from .state import WhatIsHandler as handler
    elif command_type is ast.Diff:
        from .diff import DiffHandler as handler
    else:
        raise KeyError(command_type)
    return handler


class _Lazy(dict):
    def __missing__(self, key):
        self[key] = handler = _handler(key)
        return handler


HANDLERS = _Lazy()  # AST command class → handler
