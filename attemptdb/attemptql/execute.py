"""Run one statement (AttemptQL or read-only SQL) on a read-only connection → a `Result`.

Invariants:
- `run()` takes the text of exactly one statement and returns rows or raises `AQLError`
  (every failure coded, positional when it has a position, never a traceback, never
  database content in a message). It never writes: the connection it is given must come from
  `attemptdb.readonly` (authorizer + read-only open), and SQL that would write is refused.
- Every AttemptQL row has `evidence` (a list of event ids) and `uncertainty`
  (`{"confidence", "reason", "note"}`); reason is one of deterministic, heuristic, corrected,
  content_unavailable, insufficient_evidence, state_mismatch, depth_limit. A row that claims
  something without evidence is withheld and reported (AQL0601).
- parsimonious is imported only when the text is AttemptQL.
"""

import time

import apsw

from .. import clock, fastjson
from ..store import let_signals_in
from . import compile as C
from .errors import AQLError
from .resolve import (PLANNED_TABLES, planned_error, project_of_directory, resolve_agent, resolve_id,
                      resolve_project, resolve_time, table_exists)

DEFAULT_TIMEOUT_S = 30.0
REASONS = ("deterministic", "heuristic", "model", "corrected", "insufficient_evidence", "content_unavailable",
           "state_mismatch", "depth_limit")
_NO_CLAIM = ("insufficient_evidence", "state_mismatch", "depth_limit")
COVERAGE_CONFIDENCE = {"full": 1.0, "partial": 0.8, "minimal": 0.6, "unknown": 0.4}
_FAILED = ("failed", "superseded")

SQL_VERBS = ("SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA")
WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "CREATE", "DROP", "ALTER", "ATTACH", "DETACH",
               "VACUUM", "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")
AQL_VERBS = ("SHOW", "WHY", "TRACE", "STATE", "DIFF", "WHAT")
TABLE_FUNCTIONS = ("attempt_trace", "state_at", "evidence")


class Result:
    """Rows of one statement. `kind`: rows, explanation or empty; `display` lists the columns
    a terminal table shows (every column goes to --json/--csv)."""

    __slots__ = ("columns", "rows", "notes", "kind", "display", "language")

    def __init__(self, columns, rows, notes=None, kind=None, display=None, language="attemptql"):
        self.columns = list(columns)
        self.rows = [tuple(r) for r in rows]
        self.notes = list(notes or [])
        self.kind = kind or ("rows" if self.rows else "empty")
        self.display = [c for c in (display or self.columns) if c in self.columns]
        self.language = language

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
        self._columns = {}

    def iso(self, us: int) -> str:
        try:
            return clock.iso(us)
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


def fetch(conn, sql, params=()):
    cur = conn.cursor()
    desc = []

    def trace(cursor, statement, bindings):
        desc.append(cursor.get_description())
        return True

    cur.exec_trace = trace
    rows = cur.execute(sql, params).fetchall()
    cols = [d[0] for d in desc[0]] if desc else []
    return cols, rows


def _loads_list(v):
    if v is None:
        return []
    if isinstance(v, list):
        return v
    try:
        out = fastjson.loads(v)
    except (ValueError, TypeError):
        return [v]
    return out if isinstance(out, list) else [out]


def _dedup(items):
    seen = set()
    out = []
    for x in items:
        if x is not None and x not in seen:
            seen.add(x)
            out.append(x)
    return out


def decode_rows(columns, rows):
    """JSON text → Python lists/dicts for list columns and uncertainty."""
    idx_list = [i for i, c in enumerate(columns) if c in C.LIST_COLUMNS]
    idx_unc = [i for i, c in enumerate(columns) if c == "uncertainty"]
    if not idx_list and not idx_unc:
        return rows
    out = []
    for r in rows:
        r = list(r)
        for i in idx_list:
            r[i] = _loads_list(r[i])
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
    kept = []
    for r in result.rows:
        u = r[iu] if isinstance(r[iu], dict) else {}
        if not r[ie] and u.get("reason") not in _NO_CLAIM:
            continue
        kept.append(r)
    if len(kept) != len(result.rows):
        n = len(result.rows) - len(kept)
        result.notes.append(f"AQL0601: {n} row(s) claimed something without evidence and were withheld "
                            "(an internal invariant violation; `attempt reproject` rebuilds the projections)")
        result.rows = kept
        if not kept:
            result.kind = "empty"
    return result


# --- classification ------------------------------------------------------------------------

def _skip_ws(text: str, i: int = 0) -> int:
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


def _word(text: str, i: int) -> tuple[str, int]:
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
        j += 1
    return text[i:j].upper(), j


def classify(text: str) -> str:
    """'sql', 'describe', 'tables', 'write' or 'attemptql' (the default)."""
    i = _skip_ws(text)
    w, j = _word(text, i)
    if w in ("SELECT", "WITH", "VALUES", "PRAGMA"):
        return "sql"
    if w == "EXPLAIN":
        w2, _ = _word(text, _skip_ws(text, j))
        return "attemptql" if w2 in AQL_VERBS else "sql"
    if w in ("DESCRIBE", "DESC"):
        return "describe"
    if w == "SHOW":
        w2, _ = _word(text, _skip_ws(text, j))
        if w2 == "TABLES":
            return "tables"
    if w in WRITE_VERBS:
        return "write"
    return "attemptql"


# --- entry point ---------------------------------------------------------------------------

def run(conn, text: str, *, now_us: int | None = None, cwd: str | None = None, explain: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S, gate=None) -> Result:
    """Run one statement. `conn` must be read-only (attemptdb.readonly)."""
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
    kind = classify(text)
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 20000)
    try:
        if kind == "sql":
            return run_sql(ctx, text, explain=explain, gate=gate)
        if kind == "describe":
            return describe(ctx, text)
        if kind == "tables":
            return tables(ctx)
        if kind == "write":
            w, _ = _word(text, _skip_ws(text))
            raise AQLError("AQL0506", f"read-only: {w} statements are not accepted; use SELECT/WITH/VALUES/"
                           "EXPLAIN/DESCRIBE (SQL) or SHOW/WHY/TRACE/STATE/DIFF/WHAT IS (AttemptQL)",
                           source=text, pos=_skip_ws(text), end=_skip_ws(text) + len(w), label="writes are refused")
        return run_attemptql(ctx, explain=explain)
    except AQLError as e:
        raise e.located(text)
    except apsw.Error as e:
        raise sqlite_error(e, gate, text) from None
    except RecursionError:
        raise AQLError("AQL0208", "the statement nests too deeply to run safely; simplify it (IN (...) "
                       "instead of long OR chains)", source=text) from None
    finally:
        let_signals_in(conn)  # the connection's own handler again (Ctrl-C between statements)


def sqlite_error(e: apsw.Error, gate, text: str | None = None) -> AQLError:
    """A SQLite failure as an AQL05xx error (messages name tables/columns, never values)."""
    if isinstance(e, apsw.InterruptError):
        return AQLError("AQL0501", "the statement ran past its time limit and was stopped; narrow it with "
                        "WHERE, a time range or LIMIT", source=text)
    if isinstance(e, (apsw.AuthError, apsw.ReadOnlyError)):
        what = (gate.refused if gate is not None and gate.refused else None) or "writing"
        return AQLError("AQL0506", f"read-only: {what} is refused on the query connection; history is "
                        "appended by capture, never by a query", source=text)
    if isinstance(e, (apsw.NoMemError, apsw.TooBigError, apsw.FullError)):
        return AQLError("AQL0502", "the statement needed too much memory and was stopped; narrow it with "
                        "WHERE or LIMIT", source=text)
    if isinstance(e, (apsw.CorruptError, apsw.NotADBError, apsw.IOError, apsw.CantOpenError)):
        return AQLError("AQL0504", "the database file could not be read (SQLite reports it damaged or "
                        "unreadable); run `attempt verify`", source=text)
    if isinstance(e, apsw.BusyError):
        return AQLError("AQL0501", "the database stayed locked by a writer; try again", source=text)
    msg = str(e)
    head, sep, tail = msg.partition(": ")
    if sep and head.endswith("Error") and head.isidentifier():
        msg = tail
    for t in PLANNED_TABLES:
        if f"no such table: {t}" in msg:
            return planned_error(t.replace("_", " "))
    if msg.startswith("no such table"):
        msg += " (SHOW TABLES lists the tables; `attempt schema` describes them)"
    if "not authorized" in msg:
        what = (gate.refused if gate is not None and gate.refused else None) or "this statement"
        return AQLError("AQL0506", f"read-only: {what} is refused on the query connection", source=text)
    return AQLError("AQL0505", f"SQLite: {msg[:300]}", source=text)


# --- plain SQL -------------------------------------------------------------------------------

def split_first_statement(sql: str) -> tuple[str, str]:
    """(first statement, the rest). Uses sqlite3_complete, so quotes, comments and
    CREATE TRIGGER bodies are handled the way SQLite itself does."""
    start = 0
    while True:
        k = sql.find(";", start)
        if k < 0:
            return sql, ""
        if apsw.complete(sql[: k + 1]):
            return sql[: k + 1], sql[k + 1:]
        start = k + 1


def _only_trivia(rest: str) -> bool:
    i = _skip_ws(rest)
    while i < len(rest) and rest[i] == ";":
        i = _skip_ws(rest, i + 1)
    return i >= len(rest)


MAX_SQL_CHARS = 512 * 1024


def run_sql(ctx, text: str, *, explain: bool = False, gate=None) -> Result:
    if len(text) > MAX_SQL_CHARS:
        raise AQLError("AQL0208", f"the statement is too large to run safely (more than {MAX_SQL_CHARS} "
                       "characters); split it, or use IN (...) / GROUP BY instead of long OR chains", source=None)
    first, rest = split_first_statement(text)
    if not _only_trivia(rest):
        pos = len(first) + _skip_ws(rest)
        raise AQLError("AQL0204", "one statement per call: text follows the ';' that ended the statement",
                       source=text, pos=pos, end=pos + 1, label="a second statement starts here")
    i = _skip_ws(first)
    w, j = _word(first, i)
    notes = []
    sql = first
    if w == "EXPLAIN":
        k = _skip_ws(first, j)
        w2, j2 = _word(first, k)
        if w2 != "QUERY":
            sql = first[:i] + "EXPLAIN QUERY PLAN " + first[k:]
            notes.append("EXPLAIN shows SQLite's query plan (EXPLAIN QUERY PLAN): the indexes a statement "
                         "uses and the tables it scans")
    elif explain:
        sql = "EXPLAIN QUERY PLAN " + first[i:]
    if _mentions_table_function(sql):
        register_table_functions(ctx)
    cols, rows = fetch(ctx.conn, sql)
    if gate is not None and gate.refused:
        raise AQLError("AQL0506", f"read-only: {gate.refused} is refused on the query connection", source=text)
    if sql.lstrip().upper().startswith("EXPLAIN QUERY PLAN"):
        return Result(["id", "parent", "detail"], rows, notes, kind="explanation", language="sql")
    return Result(cols, rows, notes, language="sql")


def _mentions_table_function(sql: str) -> bool:
    low = sql.lower()
    return any(f + "(" in low.replace(" (", "(") for f in TABLE_FUNCTIONS)


def describe(ctx, text: str) -> Result:
    i = _skip_ws(text)
    _, j = _word(text, i)
    k = _skip_ws(text, j)
    w, j2 = _word(text, k)
    if w == "TABLE":
        k = _skip_ws(text, j2)
        w, j2 = _word(text, k)
    name = text[k:j2].lower()
    if not name or not _only_trivia(text[j2:]):
        raise AQLError("AQL0201", "DESCRIBE takes one table name (DESCRIBE attempts)", source=text, pos=k,
                       end=k + 1, label="expected a table name")
    if not table_exists(ctx.conn, name):
        if name in PLANNED_TABLES:
            raise planned_error(name.replace("_", " "), (text, k, j2))
        names = ", ".join(public_tables(ctx.conn))
        raise AQLError("AQL0307", f"unknown table; the tables are {names} (`attempt schema` describes them)",
                       source=text, pos=k, end=j2, label="unknown table")
    documented = _documented_types(name)
    # a view's columns declare no type: the catalog's type says what they hold ("any" when not documented)
    rows = [(r[1], (r[2] or "").lower() or documented.get(r[1], "any"), "" if r[3] else "yes", r[5] > 0)
            for r in ctx.conn.execute(f"PRAGMA table_xinfo({name})") if not r[6]]
    return Result(["column", "type", "null", "primary_key"], rows,
                  [f"{name}: {len(rows)} columns; `attempt schema {name}` says what they mean"], language="sql")


def _documented_types(table: str) -> dict:
    """{column: type} the table catalog (spec/) documents for `table`."""
    from .. import catalog
    for t in catalog.load_docs()["tables"]:
        if t["name"] == table:
            return {c["name"]: c["type"] for c in t.get("columns", [])}
    return {}


INTERNAL_TABLES = ("meta", "device_clock", "checkpoints")


def public_tables(conn) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name") if r[0] not in INTERNAL_TABLES]


def tables(ctx) -> Result:
    rows = []
    for name in public_tables(ctx.conn):
        kind = ctx.conn.execute("SELECT type FROM sqlite_schema WHERE name = ?", (name,)).fetchone()[0]
        ncol = sum(1 for r in ctx.conn.execute(f"PRAGMA table_xinfo({name})") if not r[6])
        rows.append((name, kind, "fact" if name == "events" else "inference", ncol))
    return Result(["table", "type", "layer", "columns"], rows,
                  ["DESCRIBE <table> lists a table's columns; `attempt schema` says what they mean"], language="sql")


# --- AttemptQL -------------------------------------------------------------------------------

def run_attemptql(ctx, *, explain: bool = False) -> Result:
    from .parse import parse
    stmt = parse(ctx.source)
    cmd = stmt.command
    handler = HANDLERS[type(cmd)]
    if stmt.explain or explain:
        return explain_statement(ctx, stmt, handler)
    result = handler.run(ctx, cmd)
    return enforce_evidence(result)


# ... subject scoping shared by STATE, WHY, DIFF, WHAT IS

class Scope:
    """Which sessions and work units a statement looks at: SQL on the sessions (alias s) and on
    the units' member turns (alias m of unit_turns), their named params, and a label."""

    def __init__(self, sql="", params=None, label="all projects", single=None, notes=None, units="",
                 unit_single=None):
        self.sql = sql
        self.params = params or {}
        self.label = label
        self.single = single       # session id when the subject is one session
        self.notes = notes or []
        self.units = units         # condition on a unit's member turns (m)
        self.unit_single = unit_single  # work unit id when the subject is one unit


def scope_of(ctx, subject, statement: str) -> Scope:
    loc = (ctx.source, subject.pos, subject.end)
    if subject.kind == "project":
        if subject.value is None:
            here = project_of_directory(ctx.conn, ctx.cwd)
            if here is None:
                return Scope(label="all projects",
                             notes=["project: all projects (the current directory is not a captured project)"])
            return Scope(" AND s.project_id = :p0", {"p0": here[0]}, f"project {here[1]}",
                         units=" AND m.project_id = :p0")
        projects = resolve_project(ctx.conn, subject.value, loc)
        names = {f"p{i}": pid for i, (pid, _) in enumerate(projects)}
        label = "project " + ", ".join(sorted({n for _, n in projects}))
        marks = ", ".join(":" + k for k in names)
        return Scope(f" AND s.project_id IN ({marks})", names, label, units=f" AND m.project_id IN ({marks})")
    if subject.kind == "agent":
        kind, value = resolve_agent(ctx.conn, subject.value, loc)
        if kind == "agent":
            return Scope(" AND EXISTS (SELECT 1 FROM json_each(s.agents) WHERE value = :agent)", {"agent": value},
                         f"agent {value}", units=" AND m.session_id IN (SELECT g.session_id FROM main.session_agents g "
                                                 "WHERE g.agent_id = :agent)")
        return Scope(" AND s.provider = :provider", {"provider": value}, f"agent {value}",
                     units=" AND m.provider = :provider")
    if subject.kind == "work_unit" or (subject.kind == "ref" and subject.value.lower().startswith("wu_")):
        _, wu = C.resolve_subject_entity(ctx, subject)
        return Scope(" AND s.session_id IN (SELECT u.session_id FROM unit_turns u WHERE u.work_unit_id = :wu)",
                     {"wu": wu}, f"work unit {wu}", units=" AND m.work_unit_id = :wu", unit_single=wu)
    kind, ident = C.resolve_subject_entity(ctx, subject)
    if kind != "session":
        if statement in ("STATE", "DIFF STATE"):
            raise AQLError("AQL0409", f"{statement} takes a project, a session, an agent or a work unit, "
                           f"not a {C.KIND_LABEL[kind]}", source=ctx.source, pos=subject.pos, end=subject.end,
                           label="not a state subject")
        turn = _turn_of(ctx, kind, ident)
        ident = _session_of(ctx, kind, ident)
        if turn is not None:  # the session, and the one unit holding the attempt, turn or call
            return Scope(" AND s.session_id = :session", {"session": ident, "turn": turn}, f"session {ident}",
                         single=ident, units=" AND m.work_unit_id IN (SELECT u.work_unit_id FROM main.unit_turns u "
                                             "WHERE u.turn_id = :turn AND u.started_at <= :t)")
    return Scope(" AND s.session_id = :session", {"session": ident}, f"session {ident}", single=ident,
                 units=" AND m.work_unit_id IN (SELECT u.work_unit_id FROM main.unit_turns u "
                       "WHERE u.session_id = :session AND u.started_at <= :t)")


_TURN_OF = {"attempt": "SELECT turn_id FROM attempt_facts WHERE attempt_id = ?",
            "turn": "SELECT ?",
            "span": "SELECT turn_id FROM tool_call_facts WHERE tool_call_id = ?"}


def _turn_of(ctx, kind, ident):
    if kind not in _TURN_OF or not table_exists(ctx.conn, "attempt_facts"):
        return None
    row = ctx.conn.execute(_TURN_OF[kind], (ident,)).fetchone()
    return row[0] if row else None


_SESSION_OF = {"attempt": "SELECT session_id FROM attempts WHERE attempt_id = ?",
               "turn": "SELECT session_id FROM turns WHERE turn_id = ?",
               "span": "SELECT session_id FROM tool_calls WHERE tool_call_id = ?",
               "event": "SELECT session_id FROM events WHERE event_id = ?",
               "decision": "SELECT session_id FROM decisions WHERE decision_id = ?"}


def _session_of(ctx, kind, ident):
    row = ctx.conn.execute(_SESSION_OF[kind], (ident,)).fetchone()
    return row[0]


def state_query(ctx, scope: Scope, t_us: int, pick_open: bool) -> C.Query:
    params = dict(scope.params)
    params.update(t=ctx.iso(t_us), t_open=ctx.iso(t_us - C.OPEN_WINDOW_US), t_wait=ctx.iso(t_us - C.WAIT_WINDOW_US))
    return C.Query(f"sessions at {ctx.iso(t_us)}", C.state_sessions_sql(scope.sql, pick_open), params)


def state_queries(ctx, scope: Scope, t_us: int, pick_open: bool) -> list:
    """Every query STATE runs (for EXPLAIN); the per-session ones with an empty id list."""
    t = ctx.iso(t_us)
    return [state_query(ctx, scope, t_us, pick_open),
            C.Query("attempts", C.STATE_ATTEMPTS_SQL, {"t": t, "sessions": "[]"}),
            C.Query("attempt evidence", C.STATE_EVIDENCE_SQL, {"attempts": "[]"}),
            C.Query("signals", C.STATE_SIGNALS_SQL, {"t": t, "sessions": "[]"}),
            C.Query("turns", C.STATE_TURNS_SQL, {"t": t, "sessions": "[]"}),
            C.Query("in-flight tool calls", C.STATE_IN_FLIGHT_SQL, {"t": t, "turns": "[]"})] + (
        [units_query(ctx, scope, t_us, pick_open)] if table_exists(ctx.conn, "unit_index") else [])


def _group(rows, key="session_id"):
    out = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def _states(ctx, sessions: list[dict], t_us: int) -> list[dict]:
    """Complete the session rows with their turn, attempts (outcomes as known at t), pending
    signal and in-flight calls at t."""
    if not sessions:
        return sessions
    t = ctx.iso(t_us)
    ids = fastjson.dumps([r["session_id"] for r in sessions])
    attempts = _group(ctx.dicts(C.Query("attempts", C.STATE_ATTEMPTS_SQL, {"t": t, "sessions": ids})))
    signals = _group(ctx.dicts(C.Query("signals", C.STATE_SIGNALS_SQL, {"t": t, "sessions": ids})))
    turns = _group(ctx.dicts(C.Query("turns", C.STATE_TURNS_SQL, {"t": t, "sessions": ids})))
    current = {sid: ts[-1] for sid, ts in turns.items()}
    in_flight = _group(ctx.dicts(C.Query("in-flight tool calls", C.STATE_IN_FLIGHT_SQL, {
        "t": t, "turns": fastjson.dumps([x["turn_id"] for x in current.values()])})), key="turn_id") if current else {}
    wanted = [a["attempt_id"] for atts in attempts.values() for a in atts[-2:]]
    evidence = {r["attempt_id"]: r["evidence"] for r in ctx.dicts(
        C.Query("attempt evidence", C.STATE_EVIDENCE_SQL, {"attempts": fastjson.dumps(wanted)}))} if wanted else {}
    for r in sessions:
        sid = r["session_id"]
        atts = attempts.get(sid, [])
        started = {a["attempt_id"]: a["started_at"] for a in atts}
        for a in atts:  # outcomes as they were known at t
            if a["ended_at"] is None or a["ended_at"] > t:
                a["outcome_t"] = "in_progress"
            elif a["outcome"] == "superseded" and (a["superseded_by"] not in started or started[a["superseded_by"]] > t):
                a["outcome_t"] = "failed"  # the retry had not started yet: at t it read as a failure
            else:
                a["outcome_t"] = a["outcome"]
        r["attempts"] = len(atts)
        r["failed"] = sum(1 for a in atts if a["outcome_t"] in _FAILED)
        last = atts[-1] if atts else {}
        prev = atts[-2] if len(atts) > 1 else {}
        r["last_attempt"] = last.get("attempt_id")
        r["last_attempt_outcome"] = last.get("outcome_t")
        r["last_failure_class"] = last.get("failure_class") if last.get("outcome_t") in _FAILED else None
        r["last_attempt_evidence"] = evidence.get(last.get("attempt_id"))
        r["last_attempt_ended_at"] = last.get("ended_at")
        r["previous_attempt"] = prev.get("attempt_id")
        r["previous_attempt_outcome"] = prev.get("outcome_t")
        r["previous_failure_class"] = prev.get("failure_class")
        r["previous_attempt_evidence"] = evidence.get(prev.get("attempt_id"))
        r["previous_attempt_ended_at"] = prev.get("ended_at")
        sig = signals.get(sid, [])
        g = sig[-1] if sig else {}
        r["signal_event_id"] = g.get("event_id")
        r["signal_kind"] = g.get("kind")
        r["signal_raised_at"] = g.get("raised_at")
        r["signal_confidence"] = g.get("confidence")
        r["signal_evidence"] = g.get("evidence")
        tr = current.get(sid)
        r["current_turn"] = tr["turn_id"] if tr else None
        r["turn_index"] = tr["turn_index"] if tr else None
        r["turn_status"] = None if not tr else (
            "in_progress" if tr["ended_at"] is None or tr["ended_at"] > t else tr["status"])
        r["prompt_event_id"] = tr["prompt_event_id"] if tr else None
        r["in_flight_tool_call_ids"] = [k["tool_call_id"] for k in in_flight.get(r["current_turn"], [])]
    return sessions


STATE_COLUMNS = ("subject_type", "subject_id", "session_id", "work_unit_id", "provider", "project_name", "status",
                 "phase", "current_turn", "turn_index", "turn_status", "in_flight_tool_calls",
                 "in_flight_tool_call_ids", "last_attempt", "last_attempt_outcome", "last_failure_class",
                 "last_activity_at", "blocked", "block_reason", "attempts", "failed", "sessions", "phase_reason",
                 "status_reason", "evidence", "uncertainty")
STATE_DISPLAY = ("subject_type", "subject_id", "provider", "status", "phase", "turn_status", "last_attempt_outcome",
                 "blocked", "attempts", "failed", "last_activity_at", "evidence", "uncertainty")


def block_of(r: dict):
    """('signal'|'repeat', reason text, confidence, evidence) when the session was blocked, else None."""
    if r.get("signal_event_id"):
        kind = (r.get("signal_kind") or "signal").replace("_", " ")
        conf = r.get("signal_confidence")
        ev = _loads_list(r.get("signal_evidence")) or [r["signal_event_id"]]
        return ("signal", f"waiting on a {kind} raised at {r['signal_raised_at']} with no later progress observed",
                0.65 if conf is None else conf, ev)
    o1, o2 = r.get("last_attempt_outcome"), r.get("previous_attempt_outcome")
    c1, c2 = r.get("last_failure_class"), r.get("previous_failure_class")
    if o1 in _FAILED and o2 in _FAILED and c1 and c1 == c2:
        conf = 0.7 if r.get("coverage") == "full" else 0.5
        ev = _loads_list(r.get("last_attempt_evidence")) + _loads_list(r.get("previous_attempt_evidence"))
        return ("repeat", f"the last two attempts both failed with {c1}: the agent is repeating itself", conf, ev)
    return None


def state_row(r: dict, t_iso: str) -> tuple:
    block = block_of(r)
    in_flight = _loads_list(r.get("in_flight_tool_call_ids"))
    status = r["status"]
    base = COVERAGE_CONFIDENCE.get(r.get("coverage") or "unknown", 0.4)
    if status == "open":
        base = min(base, 0.8)
    elif status == "stale":
        base = min(base, 0.7)
    conf = block[2] if block else base
    note = f"session state at {t_iso} inferred from the events observed by then ({r.get('coverage') or 'unknown'} coverage)"
    if block:
        note = f"blocked: {block[1]}"
    evidence = _dedup([r.get("last_event_id"), r.get("prompt_event_id")] + (block[3] if block else [])
                      + _loads_list(r.get("last_attempt_evidence")))
    return ("session", r["session_id"], r["session_id"], None, r["provider"], r["project_name"], status, None,
            r.get("current_turn"), r.get("turn_index"), r.get("turn_status"), len(in_flight), in_flight,
            r.get("last_attempt"), r.get("last_attempt_outcome"), r.get("last_failure_class"),
            r.get("last_activity_at"), 1 if block else 0, block[1] if block else None, r.get("attempts") or 0,
            r.get("failed") or 0, [r["session_id"]], None, None, evidence, uncertainty(conf, "heuristic", note))


def _no_state_row(label_type, label_id, note, evidence=()):
    row = [None] * len(STATE_COLUMNS)
    row[0], row[1] = label_type, label_id
    row[STATE_COLUMNS.index("evidence")] = list(evidence)
    row[STATE_COLUMNS.index("uncertainty")] = uncertainty(0.0, "insufficient_evidence", note)
    return tuple(row)


NO_UNITS_NOTE = "this file holds no work-unit tables (written before they existed): rows are sessions"


# ... work units at t (the rules of the work_units view, judged as of t: attemptql/units.py)

def units_query(ctx, scope: Scope, t_us: int, pick_open: bool = True, ids=None) -> C.Query:
    """The work units of `scope` judged as of t: with `pick_open`, only units with member activity
    in the 12 h before t (a unit silent longer is completed, abandoned or stale); `ids` judges
    exactly these units."""
    from . import units
    params = dict(scope.params)
    params.update(t=ctx.iso(t_us), t_wait=ctx.iso(t_us - units.WAIT_WINDOW_US))
    if ids is not None:
        params["unit_ids"] = fastjson.dumps(list(ids))
        units_sql = units.candidates_sql(" AND m.work_unit_id IN (SELECT value FROM json_each(:unit_ids))",
                                         window=False)
    else:
        window = pick_open and scope.single is None and scope.unit_single is None
        units_sql = units.candidates_sql(scope.units, window=window)
    return C.Query(f"work units at {ctx.iso(t_us)}",
                   units.state_sql(ctx.conn, units_sql, params, now=t_us >= ctx.now_us), params)


UNITS_STARTED_SQL = ("SELECT count(DISTINCT m.work_unit_id) FROM unit_turns m WHERE m.started_at <= :t{cond}")


def units_at(ctx, scope: Scope, t_us: int, pick_open: bool = True):
    """(the work units of `scope` as they stood at t — those open at t, or every one judged when
    the subject is a single session or unit, or pick_open is false — and a summary: judged,
    closed (completed or abandoned by t), started (units with a member started by t)); None
    and an empty summary when the file holds no work units."""
    if not table_exists(ctx.conn, "unit_index"):
        return None, {}
    rows = ctx.dicts(units_query(ctx, scope, t_us, pick_open))
    closed = sum(1 for r in rows if r["status"] in ("completed", "abandoned"))
    params = dict(scope.params)
    params["t"] = ctx.iso(t_us)
    started = ctx.conn.execute(UNITS_STARTED_SQL.format(cond=scope.units), params).fetchone()[0]
    summary = {"judged": len(rows), "closed": closed, "started": started}
    if pick_open and scope.single is None and scope.unit_single is None:
        rows = [r for r in rows if r["status"] not in ("completed", "abandoned")]
    return rows, summary


def units_note(scope: Scope, t_iso: str, units, summary: dict) -> str:
    if units is None:
        return NO_UNITS_NOTE
    if scope.unit_single or scope.single:
        return (f"{len(units)} work unit(s) of {scope.label} judged as of {t_iso} by the rules of the work_units "
                "view, whatever their status")
    label = scope.label
    silent = max(0, summary["started"] - summary["judged"])
    return (f"{len(units)} work unit(s) of {label} open at {t_iso} ({summary['closed']} completed or abandoned by "
            f"then are not listed; {silent} more started by then had no activity in the 12 h before it)")


def unit_block(u: dict):
    """('signal'|'repeat', reason, evidence) when the unit was blocked: a pending wait (its phase
    is blocked), else its last two attempts failing with the same class; None otherwise."""
    if u.get("blocking_signal"):
        return ("signal", u["phase_reason"], [u["blocking_signal"]])
    o1, o2 = u.get("last_outcome"), u.get("previous_outcome")
    c1, c2 = u.get("last_failure_class"), u.get("previous_failure_class")
    if o1 in _FAILED and o2 in _FAILED and c1 and c1 == c2:
        return ("repeat", f"the last two attempts both failed with {c1}: the work is repeating itself",
                _dedup([u.get("last_fail_event") or u.get("last_first_event"),
                        u.get("previous_fail_event") or u.get("previous_first_event")]))
    return None


def unit_evidence(u: dict) -> list:
    """A unit row's evidence as of its instant: the objective's prompt, the last turn's prompt, the
    last attempt's first and failing events, the wait holding it (all observed by then)."""
    block = unit_block(u)
    return _dedup([u.get("objective_event_id"), u.get("turn_event_id"), u.get("last_first_event"),
                   u.get("last_fail_event")] + (block[2] if block else []))


def unit_uncertainty(u: dict, t_iso: str | None, reason: str = "heuristic") -> dict:
    when = f" as of {t_iso}, from what was observed by then" if t_iso else ""
    return uncertainty(u.get("confidence"), reason,
                       f"work-unit grouping, phase and status are tier1-v5 heuristics (confidence "
                       f"{u.get('confidence')}, capped at 0.7){when}. Phase: {u.get('phase_reason')}. "
                       f"Status: {u.get('status_reason')}.")


def unit_state_row(u: dict, t_iso: str) -> tuple:
    block = unit_block(u)
    return ("work_unit", u["work_unit_id"], None, u["work_unit_id"], ", ".join(_loads_list(u.get("actors"))),
            u["project_name"], u["status"], u["phase"], u.get("last_turn_id"), u.get("turn_index"),
            u.get("turn_status"), u.get("in_flight") or 0, [], u.get("last_attempt"), u.get("last_outcome"),
            u.get("last_failure_class") if u.get("last_outcome") in _FAILED else None, u.get("updated_at"),
            1 if block else 0, block[1] if block else None, u.get("attempt_count") or 0,
            u.get("failed_attempt_count") or 0, _loads_list(u.get("sessions")), u.get("phase_reason"),
            u.get("status_reason"), unit_evidence(u), unit_uncertainty(u, t_iso))


def state_at(ctx, scope: Scope, t_us: int, pick_open: bool = True):
    """(one dict per session as it stood at t — the open ones, or every one when the scope is
    a single session or pick_open is false — and a summary of all sessions started by t)."""
    if scope.single or not pick_open:
        every = ctx.dicts(state_query(ctx, scope, t_us, False))
        summary = {"started": len(every), "ended": sum(1 for r in every if r["status"] == "closed"),
                   "last_at": max((r["last_activity_at"] for r in every if r["last_activity_at"]), default=None)}
        return _states(ctx, every, t_us), summary
    # the open ones only: counted by one aggregate, detailed only for sessions that could be open
    params = dict(scope.params)
    params["t"] = ctx.iso(t_us)
    summary = ctx.dicts(C.Query("sessions started", C.state_summary_sql(scope.sql), params))[0]
    near = ctx.dicts(state_query(ctx, scope, t_us, True))
    summary["last_at"] = max([x for x in [summary["last_at"]] + [r["last_activity_at"] for r in near] if x],
                             default=None)
    return _states(ctx, [r for r in near if r["status"] == "open"], t_us), summary


class StateHandler:
    @staticmethod
    def queries(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "STATE")
        t = resolve_time(cmd.at.kind, cmd.at.text, ctx.now_us, (ctx.source, cmd.at.pos, cmd.at.end))
        return state_queries(ctx, scope, t, scope.single is None)

    @staticmethod
    def run(ctx, cmd):
        if cmd.known_at is not None:
            raise AQLError("AQL0407", "AS KNOWN AT is not supported yet (planned in RFC 0004: work_units_history)",
                           source=ctx.source, pos=cmd.known_at.pos, end=cmd.known_at.end, label="planned")
        scope = scope_of(ctx, cmd.subject, "STATE")
        t = resolve_time(cmd.at.kind, cmd.at.text, ctx.now_us, (ctx.source, cmd.at.pos, cmd.at.end))
        return state_result(ctx, scope, t)


def state_result(ctx, scope, t, *, what="STATE"):
    t_iso = ctx.iso(t)
    rows, summary = state_at(ctx, scope, t)  # a work unit: its member sessions open at t
    out = [state_row(r, t_iso) for r in rows]
    units, usummary = units_at(ctx, scope, t)
    out += [unit_state_row(u, t_iso) for u in units or ()]
    notes = list(scope.notes)
    started = summary.get("started") or 0
    ended = summary.get("ended") or 0
    open_n = sum(1 for r in rows if r["status"] == "open")
    notes.append(f"state of {scope.label} at {t_iso}: {open_n} open session(s) of {started} started by then "
                 f"({ended} ended; {max(0, started - ended - open_n)} silent for over 30 minutes, stale)")
    notes.append(units_note(scope, t_iso, units, usummary))
    if scope.unit_single and not units:
        out = [_no_state_row("work_unit", scope.unit_single, f"work unit {scope.unit_single} had no member turn "
                                                             f"started by {t_iso}")]
    if not out:
        last = summary.get("last_at")
        if scope.single:
            note = f"session {scope.single} had not started by {t_iso}"
        elif last:
            note = f"no session was active at {t_iso}; the last event before it was observed at {last}"
        else:
            note = f"no events observed by {t_iso}"
        subject_type = "session" if scope.single else "project"
        out = [_no_state_row(subject_type, scope.single or scope.label, note)]
    return Result(STATE_COLUMNS, out, notes, kind="explanation", display=STATE_DISPLAY)


class WhatIsHandler:
    @staticmethod
    def queries(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "WHAT IS")
        return state_queries(ctx, scope, ctx.now_us, scope.single is None)

    @staticmethod
    def run(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "WHAT IS")
        res = state_result(ctx, scope, ctx.now_us)
        res.notes.append("WHAT IS … DOING NOW = STATE … AT now, most recently active first")
        return res


# ... WHY

WHY_COLUMNS = ("subject_type", "subject_id", "inference_id", "edge_type", "from_type", "from_id", "kind", "at",
               "claim", "superseded_by", "corrected_by", "evidence", "uncertainty")
WHY_DISPLAY = ("subject_id", "inference_id", "edge_type", "from_type", "from_id", "at", "claim", "evidence",
               "uncertainty")
VALID_STATES = ("BLOCKED", "FAILED")
PLANNED_STATES = ("ACTIVE", "ABANDONED", "DONE", "COMPLETED", "WAITING_ON_HUMAN", "IDLE", "SUCCEEDED")


def _why_row(**kw):
    return tuple(kw.get(c) for c in WHY_COLUMNS)


class WhyHandler:
    @staticmethod
    def _check(ctx, cmd):
        st = cmd.state
        if st not in VALID_STATES:
            if st in PLANNED_STATES:
                raise AQLError("AQL0407", f"WHY … STATUS {st} is not supported yet (planned); supported: BLOCKED "
                               "(session, project, work unit) and FAILED (attempt)", source=ctx.source, pos=cmd.state_pos,
                               end=cmd.state_end, label="planned")
            raise AQLError("AQL0401", "unknown state name; valid: BLOCKED (session, project, work unit) and "
                           "FAILED (attempt)", source=ctx.source, pos=cmd.state_pos, end=cmd.state_end,
                           label="unknown state")
        s = cmd.subject
        if s.kind == "work_unit" or (s.kind == "ref" and s.value.lower().startswith("wu_")):
            if st != "BLOCKED":
                raise AQLError("AQL0411", "a work unit answers STATUS BLOCKED; FAILED applies to an attempt",
                               source=ctx.source, pos=cmd.state_pos, end=cmd.state_end, label="not for a work unit")
            return "BLOCKED_UNIT", C.resolve_subject_entity(ctx, s)[1]
        if st == "FAILED":
            if s.kind in ("project", "agent", "session", "turn", "span", "event"):
                raise AQLError("AQL0411", f"FAILED applies to an attempt; for a {s.kind} ask STATUS BLOCKED",
                               source=ctx.source, pos=s.pos, end=s.end, label="not an attempt")
            kind, ident = C.resolve_subject_entity(ctx, s)
            if kind != "attempt":
                raise AQLError("AQL0411", f"FAILED applies to an attempt, not a {C.KIND_LABEL[kind]}",
                               source=ctx.source, pos=s.pos, end=s.end, label="not an attempt")
            return "FAILED", ident
        if s.kind in ("turn", "span", "event", "attempt"):
            raise AQLError("AQL0411", f"BLOCKED applies to a session, a project or a work unit, not a "
                           f"{C.KIND_LABEL.get(s.kind, s.kind)}; for an attempt ask STATUS FAILED",
                           source=ctx.source, pos=s.pos, end=s.end, label="not blockable")
        if s.kind == "ref":
            kind, ident = C.resolve_subject_entity(ctx, s)
            if kind != "session":
                raise AQLError("AQL0411", f"BLOCKED applies to a session, a project or a work unit, not a "
                               f"{C.KIND_LABEL[kind]}", source=ctx.source, pos=s.pos, end=s.end, label="not blockable")
        return "BLOCKED", None

    @classmethod
    def queries(cls, ctx, cmd):
        st, ident = cls._check(ctx, cmd)
        if st == "FAILED":
            return [C.Query("attempt", C.ATTEMPT_SQL, (ident,)),
                    C.Query("failing event", C.FAILING_EVENT_SQL, ("[]",))]
        scope = scope_of(ctx, cmd.subject, "WHY")
        if st == "BLOCKED_UNIT":
            return [units_query(ctx, scope, ctx.now_us)]
        return state_queries(ctx, scope, ctx.now_us, scope.single is None)

    @classmethod
    def run(cls, ctx, cmd):
        st, ident = cls._check(ctx, cmd)
        if st == "FAILED":
            return cls._failed(ctx, ident)
        if st == "BLOCKED_UNIT":
            return cls._blocked_unit(ctx, scope_of(ctx, cmd.subject, "WHY"))
        return cls._blocked(ctx, scope_of(ctx, cmd.subject, "WHY"))

    @staticmethod
    def _blocked_unit(ctx, scope):
        """WHY wu_… STATUS BLOCKED: the unit's blocking signal (the pending wait that makes its
        phase blocked), else its last two attempts failing with the same class; a unit that is
        neither answers state_mismatch with its phase and status, and invents nothing."""
        wu = scope.unit_single
        now_iso = ctx.iso(ctx.now_us)
        found = ctx.dicts(units_query(ctx, scope, ctx.now_us))
        notes = [f"judged at {now_iso} by the rules of the work_units view; SHOW EVIDENCE FOR {wu} lists every "
                 "event the unit was built from"]
        if not found:
            note = f"work unit {wu} has no member turn started by {now_iso}"
            return Result(WHY_COLUMNS, [_why_row(subject_type="work_unit", subject_id=wu, claim=note, evidence=[],
                                                 uncertainty=uncertainty(0.0, "insufficient_evidence", note))],
                          notes, kind="explanation", display=WHY_DISPLAY)
        u = found[0]
        block = unit_block(u)
        out = []
        if block and block[0] == "signal":
            g = ctx.conn.execute("SELECT confidence FROM signals WHERE event_id = ?", (u["blocking_signal"],)).fetchone()
            conf = min(g[0] if g and g[0] is not None else 0.65, u.get("confidence") or 0.7)
            out.append(_why_row(subject_type="work_unit", subject_id=wu, inference_id=u["blocking_signal"],
                                edge_type="blocked", from_type="event", from_id=u["blocking_signal"],
                                kind=u.get("signal_kind"), at=u.get("signal_raised_at"),
                                claim=f"work unit {wu} is blocked: {u['phase_reason']}", evidence=block[2],
                                uncertainty=uncertainty(conf, "heuristic", unit_uncertainty(u, now_iso)["note"])))
        elif block:
            for att, outc, fev, sev in (("last_attempt", "last_outcome", "last_fail_event", "last_first_event"),
                                        ("previous_attempt", "previous_outcome", "previous_fail_event",
                                         "previous_first_event")):
                ev = _dedup([u.get(fev) or u.get(sev)])
                out.append(_why_row(subject_type="work_unit", subject_id=wu, inference_id=u.get(att),
                                    edge_type="failed", from_type="attempt", from_id=u.get(att), kind=u.get(outc),
                                    at=u.get("updated_at"), claim=f"work unit {wu} is blocked: {block[1]}",
                                    evidence=ev, uncertainty=uncertainty(min(0.7, u.get("confidence") or 0.7),
                                                                         "heuristic", "repeated failure of the same "
                                                                         "class within the unit")))
        else:
            claim = (f"work unit {wu} is not blocked: phase {u['phase']} ({u['phase_reason']}); status "
                     f"{u['status']} ({u['status_reason']})")
            out.append(_why_row(subject_type="work_unit", subject_id=wu, claim=claim, evidence=unit_evidence(u),
                                uncertainty=unit_uncertainty(u, now_iso, "state_mismatch")))
        return Result(WHY_COLUMNS, out, notes, kind="explanation", display=WHY_DISPLAY)

    @staticmethod
    def _failed(ctx, ident):
        a = ctx.dicts(C.Query("attempt", C.ATTEMPT_SQL, (ident,)))[0]
        ev = _loads_list(a["evidence"])
        corrected = a.get("corrected_by")
        if a["outcome"] not in _FAILED:
            note = f"attempt {ident} holds outcome {a['outcome']}, not failed"
            if corrected:
                note += f" (set by the correction {corrected})"
            row = _why_row(subject_type="attempt", subject_id=ident, claim=f"attempt {ident} did not fail: "
                           f"its outcome is {a['outcome']}", corrected_by=corrected,
                           evidence=_dedup(ev + [corrected]), uncertainty=uncertainty(a["confidence"], "state_mismatch", note))
            return Result(WHY_COLUMNS, [row], [f"{len(ev)} evidence event(s) for attempt {ident}"],
                          kind="explanation", display=WHY_DISPLAY)
        fail = ctx.dicts(C.Query("failing event", C.FAILING_EVENT_SQL, (fastjson.dumps(ev),)))
        fe = fail[0] if fail else {}
        cls_text = a.get("failure_class") or "an unclassified failure"
        claim = (f"attempt {ident} (turn {a.get('turn_index')} #{a.get('attempt_index')}: {a.get('approach') or 'unknown approach'}) "
                 f"failed with {cls_text}")
        claim += (f"; it was superseded by {a['superseded_by']}" if a.get("superseded_by")
                  else "; no later attempt retried the same paths")
        if fe:
            claim += f". The failing event is {fe['event_id']} ({fe['kind']}{', ' + fe['tool_name'] if fe.get('tool_name') else ''})"
        if corrected:
            claim += f". A human correction ({corrected}) set this outcome; the projection inferred {a.get('inferred_outcome')}"
        reason = "corrected" if corrected else ("deterministic" if (a["confidence"] or 0) >= 1.0 else "heuristic")
        row = _why_row(subject_type="attempt", subject_id=ident, inference_id=ident, edge_type="failed",
                       from_type="event" if fe else None, from_id=fe.get("event_id"), kind=fe.get("kind"),
                       at=fe.get("observed_at") or a.get("ended_at"), claim=claim, superseded_by=a.get("superseded_by"),
                       corrected_by=corrected, evidence=_dedup(ev + [corrected]),
                       uncertainty=uncertainty(a["confidence"], reason, f"outcome {a['outcome']}"))
        return Result(WHY_COLUMNS, [row], [f"{len(ev)} evidence event(s) for attempt {ident}; "
                                           f"SHOW EVIDENCE FOR {ident} lists them"], kind="explanation",
                      display=WHY_DISPLAY)

    @staticmethod
    def _blocked(ctx, scope):
        now_iso = ctx.iso(ctx.now_us)
        rows, summary = state_at(ctx, scope, ctx.now_us)
        out = []
        for r in rows:
            block = block_of(r)
            if not block:
                continue
            sid = r["session_id"]
            if block[0] == "signal":
                out.append(_why_row(subject_type="session", subject_id=sid, inference_id=r["signal_event_id"],
                                    edge_type="blocked", from_type="event", from_id=r["signal_event_id"],
                                    kind=r.get("signal_kind"), at=r.get("signal_raised_at"),
                                    claim=f"session {sid} is {block[1]}", evidence=block[3],
                                    uncertainty=uncertainty(block[2], "heuristic",
                                                            f"session is {r['status']}; {r.get('coverage') or 'unknown'} coverage")))
            else:
                for att, outc, evk in (("last_attempt", "last_attempt_outcome", "last_attempt_evidence"),
                                       ("previous_attempt", "previous_attempt_outcome", "previous_attempt_evidence")):
                    out.append(_why_row(subject_type="session", subject_id=sid, inference_id=r[att], edge_type="failed",
                                        from_type="attempt", from_id=r[att], kind=r[outc], at=r[att + "_ended_at"],
                                        claim=f"session {sid} is blocked: {block[1]}",
                                        evidence=_loads_list(r[evk]),
                                        uncertainty=uncertainty(block[2], "heuristic",
                                                                "repeated failure of the same class")))
        notes = list(scope.notes)
        notes.append(f"{len({r[1] for r in out})} blocked session(s) of {len(rows)} examined for {scope.label}; "
                     "blocked = an uncleared permission request or input wait, or the last two attempts failing "
                     "with the same class")
        units, _ = units_at(ctx, scope, ctx.now_us)
        blocked_units = [u["work_unit_id"] for u in units or () if unit_block(u)]
        if blocked_units:
            notes.append(f"blocked work unit(s): {', '.join(blocked_units[:10])}"
                         + (f" and {len(blocked_units) - 10} more" if len(blocked_units) > 10 else "")
                         + "; WHY <work unit id> STATUS BLOCKED explains one")
        if not out:
            if rows:
                if scope.single:
                    r = rows[0]
                    claim = (f"session {r['session_id']} is not blocked: it is {r['status']}; last event at "
                             f"{r.get('last_activity_at')}; last attempt outcome: {r.get('last_attempt_outcome') or 'none'}")
                    ev = _dedup([r.get("last_event_id")])
                else:
                    claim = f"no blocked session among the {len(rows)} open session(s) of {scope.label}"
                    ev = _dedup([r.get("last_event_id") for r in rows])
                out.append(_why_row(subject_type="session" if scope.single else "project",
                                    subject_id=scope.single or scope.label, claim=claim, evidence=ev,
                                    uncertainty=uncertainty(0.8 if scope.single else 0.7, "state_mismatch",
                                                            "the subject does not hold BLOCKED now")))
            else:
                last = summary.get("last_at")
                note = (f"no session of {scope.label} is open now ({now_iso}); the last event was observed at {last}"
                        if last else f"no events observed for {scope.label}")
                out.append(_why_row(subject_type="session" if scope.single else "project",
                                    subject_id=scope.single or scope.label, claim=note, evidence=[],
                                    uncertainty=uncertainty(0.0, "insufficient_evidence", note)))
        return Result(WHY_COLUMNS, out, notes, kind="explanation", display=WHY_DISPLAY)


# ... TRACE

TRACE_COLUMNS = ("depth", "edge_type", "from_type", "from_id", "to_type", "to_id", "at", "edge_source", "evidence",
                 "uncertainty")


class TraceHandler:
    @staticmethod
    def _args(ctx, cmd):
        s = cmd.subject
        if s.kind == "work_unit" or (s.kind == "ref" and s.value.lower().startswith("wu_")):
            if not table_exists(ctx.conn, "work_units"):
                raise planned_error("work units", (ctx.source, s.pos, s.end))
        kind, ident = C.resolve_subject_entity(ctx, s)
        depth = C.DEFAULT_DEPTH if cmd.depth is None else cmd.depth
        if not 1 <= depth <= C.MAX_DEPTH:
            raise AQLError("AQL0410", f"DEPTH must be between 1 and {C.MAX_DEPTH}", source=ctx.source,
                           pos=cmd.depth_pos, end=cmd.depth_pos + len(str(cmd.depth)), label="out of range")
        return kind, ident, depth, cmd.direction or "UP"

    @classmethod
    def queries(cls, ctx, cmd):
        kind, ident, depth, direction = cls._args(ctx, cmd)
        return [_trace_query(ctx, direction, ident, depth)]

    @classmethod
    def run(cls, ctx, cmd):
        kind, ident, depth, direction = cls._args(ctx, cmd)
        return trace_result(ctx, kind, ident, depth, direction)


def _trace_query(ctx, direction, ident, depth) -> C.Query:
    arms = table_exists(ctx.conn, C.EDGE_ARMS[0][0])
    return C.Query("trace", C.trace_sql(direction, arms, arms and table_exists(ctx.conn, "unit_turns")),
                   {"start": ident, "depth": depth})


def trace_result(ctx, kind, ident, depth, direction):
    rows = ctx.dicts(_trace_query(ctx, direction, ident, depth))
    out = []
    beyond, cut_evidence = 0, []
    for r in rows:
        if r["row_kind"] != "edge":
            beyond += 1
            cut_evidence.extend(_loads_list(r["evidence"]))
            continue
        conf = r["confidence"]
        reason = "deterministic" if conf is not None and conf >= 1.0 else "heuristic"
        note = f"{r['edge_source'] or 'projection'} edge ({r['algorithm_version'] or 'unversioned'})"
        out.append((r["depth"], r["edge_type"], r["from_type"], r["from_id"], r["to_type"], r["to_id"], r["at"],
                    r["edge_source"], _loads_list(r["evidence"]), uncertainty(conf, reason, note)))
    edges = len(out)
    if beyond:
        note = (f"depth limit {depth} reached: {beyond} more edge(s) lie beyond; add DEPTH "
                f"{min(C.MAX_DEPTH, depth * 2)} to go further")
        out.append((depth + 1, None, None, None, None, None, None, None, _dedup(cut_evidence)[:50],
                    uncertainty(None, "depth_limit", note)))
    notes = [f"trace from {C.KIND_LABEL[kind]} {ident} (direction {direction}, depth ≤ {depth}): {edges} edge(s) "
             f"over {', '.join(C.CAUSAL_EDGE_KINDS)}"]
    if kind == "work_unit":
        notes.append("a work unit is made of its turns: the walk steps to them first (parent_of, depth 1), then "
                     "follows the causal edges from each; DIRECTION BOTH also reaches the attempts their prompts "
                     "triggered")
    if not out:
        note = f"no causal edges reach {C.KIND_LABEL[kind]} {ident} (direction {direction})"
        out.append((0, None, None, None, None, None, None, None, [], uncertainty(0.0, "insufficient_evidence", note)))
    return Result(TRACE_COLUMNS, out, notes, kind="explanation")


# ... DIFF

DIFF_COLUMNS = ("subject_type", "subject_id", "session_id", "provider", "change", "field", "before", "after",
                "confidence", "evidence", "uncertainty")
DIFF_FIELDS = ("status", "current_turn", "turn_status", "in_flight_tool_calls", "last_attempt", "last_attempt_outcome",
               "last_failure_class", "blocked", "attempts", "failed")


def _summary(d: dict | None) -> str:
    if d is None:
        return "absent"
    s = f"{d['status']}; turn {d['turn_index'] if d['turn_index'] is not None else '-'}"
    if d["last_attempt"]:
        s += f"; last attempt {d['last_attempt_outcome']}"
    if d["blocked"]:
        s += "; blocked"
    return s


def _text_value(v):
    if v is None:
        return None
    if isinstance(v, list):
        return fastjson.dumps(v)
    return str(v)


class DiffHandler:
    @staticmethod
    def _args(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "DIFF STATE") if cmd.subject is not None else Scope()
        t1 = resolve_time(cmd.t1.kind, cmd.t1.text, ctx.now_us, (ctx.source, cmd.t1.pos, cmd.t1.end))
        t2 = resolve_time(cmd.t2.kind, cmd.t2.text, ctx.now_us, (ctx.source, cmd.t2.pos, cmd.t2.end))
        if t1 >= t2:
            raise AQLError("AQL0403", "DIFF STATE needs the earlier timestamp first (t1 < t2)", source=ctx.source,
                           pos=cmd.t1.pos, end=cmd.t2.end, label="t1 is not before t2")
        return scope, t1, t2

    @classmethod
    def queries(cls, ctx, cmd):
        scope, t1, t2 = cls._args(ctx, cmd)
        return state_queries(ctx, scope, t1, scope.single is None) + state_queries(ctx, scope, t2, scope.single is None)

    @classmethod
    def run(cls, ctx, cmd):
        scope, t1, t2 = cls._args(ctx, cmd)
        i1, i2 = ctx.iso(t1), ctx.iso(t2)
        r1, _ = state_at(ctx, scope, t1)
        r2, _ = state_at(ctx, scope, t2)
        a = {r["session_id"]: dict(zip(STATE_COLUMNS, state_row(r, i1))) for r in r1}
        b = {r["session_id"]: dict(zip(STATE_COLUMNS, state_row(r, i2))) for r in r2}
        open1 = {r["session_id"] for r in r1 if r["status"] == "open"}
        open2 = {r["session_id"] for r in r2 if r["status"] == "open"}
        missing_b = [s for s in a if s not in b]
        missing_a = [s for s in b if s not in a]
        for missing, t, iso_t, into in ((missing_b, t2, i2, b), (missing_a, t1, i1, a)):
            if missing:
                names = {f"x{i}": s for i, s in enumerate(missing)}
                sc = Scope(f" AND s.session_id IN ({', '.join(':' + k for k in names)})", names, scope.label)
                for r in _states(ctx, ctx.dicts(state_query(ctx, sc, t, False)), t):
                    into[r["session_id"]] = dict(zip(STATE_COLUMNS, state_row(r, iso_t)))
        rows = []
        order = list(a) + [s for s in b if s not in a]
        for sid in order:
            x, y = a.get(sid), b.get(sid)
            in1, in2 = sid in open1 or (scope.single and x), sid in open2 or (scope.single and y)
            ux = x["uncertainty"]["confidence"] if x else None
            uy = y["uncertainty"]["confidence"] if y else None
            conf = min(c for c in (ux, uy) if c is not None) if (ux is not None or uy is not None) else None
            ev = _dedup((x["evidence"] if x else []) + (y["evidence"] if y else []))
            provider = (x or y)["provider"]
            unc = uncertainty(conf, "heuristic", f"STATE at {i1} compared with STATE at {i2}")
            if in1 and not in2:
                rows.append(("session", sid, sid, provider, "removed", "presence", _summary(x), _summary(y), conf, ev, unc))
            elif in2 and not in1:
                rows.append(("session", sid, sid, provider, "added", "presence", _summary(x), _summary(y), conf, ev, unc))
            elif x and y:
                for f in DIFF_FIELDS:
                    if x[f] != y[f]:
                        rows.append(("session", sid, sid, provider, "changed", f, _text_value(x[f]), _text_value(y[f]),
                                     conf, ev, unc))
        notes = list(scope.notes) + [f"DIFF STATE of {scope.label}: {len(open1)} open session(s) at {i1}, "
                                     f"{len(open2)} at {i2}; one row per changed field"]
        unit_rows, unit_note = cls._units(ctx, scope, t1, t2)
        rows += unit_rows
        notes.append(unit_note)
        if not rows:
            if not a and not b and not unit_rows:
                note = f"no session of {scope.label} was active at {i1} or at {i2}"
                rows.append(("project", scope.single or scope.label, None, None, None, None, None, None, None, [],
                             uncertainty(0.0, "insufficient_evidence", note)))
            else:
                notes.append(f"no state change for {scope.label} between {i1} and {i2}")
        return Result(DIFF_COLUMNS, rows, notes, kind="explanation")


    @staticmethod
    def _units(ctx, scope, t1, t2):
        """DIFF rows of the work units open at t1 or t2: a unit listed at one time only is added
        or removed (its state at the other time, judged there, is the other side); a unit listed
        at both has one row per changed field."""
        i1, i2 = ctx.iso(t1), ctx.iso(t2)
        u1, s1 = units_at(ctx, scope, t1)
        u2, s2 = units_at(ctx, scope, t2)
        if u1 is None:
            return [], NO_UNITS_NOTE
        a = {u["work_unit_id"]: u for u in u1}
        b = {u["work_unit_id"]: u for u in u2}
        listed_a, listed_b = set(a), set(b)
        for missing, t, into in (([w for w in a if w not in b], t2, b), ([w for w in b if w not in a], t1, a)):
            if missing:
                for u in ctx.dicts(units_query(ctx, scope, t, ids=missing)):
                    into[u["work_unit_id"]] = u
        rows = []
        for wu in list(a) + [w for w in b if w not in a]:
            x = dict(zip(STATE_COLUMNS, unit_state_row(a[wu], i1))) if wu in a else None
            y = dict(zip(STATE_COLUMNS, unit_state_row(b[wu], i2))) if wu in b else None
            for d in (x, y):
                if d is not None:
                    d["session_count"] = len(d["sessions"])
            confs = [d["uncertainty"]["confidence"] for d in (x, y) if d and d["uncertainty"]["confidence"] is not None]
            conf = min(confs) if confs else None
            ev = _dedup((x["evidence"] if x else []) + (y["evidence"] if y else []))
            provider = (y or x)["provider"]
            unc = uncertainty(conf, "heuristic", f"work unit judged at {i1} and at {i2} (tier1-v5 heuristics, capped "
                                                 f"at 0.7)")
            in1, in2 = wu in listed_a, wu in listed_b
            if in1 and not in2:
                rows.append(("work_unit", wu, None, provider, "removed", "presence", _unit_summary(x), _unit_summary(y),
                             conf, ev, unc))
            elif in2 and not in1:
                rows.append(("work_unit", wu, None, provider, "added", "presence", _unit_summary(x), _unit_summary(y),
                             conf, ev, unc))
            else:
                for f in DIFF_UNIT_FIELDS:
                    if x[f] != y[f]:
                        rows.append(("work_unit", wu, None, provider, "changed", f, _text_value(x[f]),
                                     _text_value(y[f]), conf, ev, unc))
        note = (f"{len(listed_a)} work unit(s) of {scope.label} open at {i1}, {len(listed_b)} at {i2}; a unit that "
                "completed or was abandoned in between is removed, with its state at the later time")
        return rows, note


DIFF_UNIT_FIELDS = ("phase", "status", "attempts", "failed", "session_count", "last_attempt", "blocked")


def _unit_summary(d: dict | None) -> str:
    if d is None:
        return "absent"
    return f"phase {d['phase']}; status {d['status']}; {d['attempts']} attempt(s), {d['failed']} failed"


# ... SHOW

class ShowHandler:
    @staticmethod
    def queries(ctx, cmd):
        plan = C.compile_show(ctx, cmd)
        return [q for q in (plan.rows, plan.hidden) if q is not None]

    @staticmethod
    def run(ctx, cmd):
        plan = C.compile_show(ctx, cmd)
        cols, rows = ctx.fetch(plan.rows)
        notes = list(plan.notes)
        target = plan.target
        if plan.hidden is not None:
            n = ctx.conn.execute(plan.hidden.sql, plan.hidden.params).fetchone()[0]
            if n:
                notes.append(f"{n} retracted row(s) hidden; add INCLUDING RETRACTED to see them")
        elif cmd.including_retracted and target.retracted and "retracted" in cols:
            i = cols.index("retracted")
            notes.append(f"including {sum(1 for r in rows if r[i])} retracted row(s) (retracted = 1)")
        if not rows:
            notes.append(f"no {target.name.lower()} matched")
        elif len(rows) == plan.limit:
            notes.append(f"showing the first {plan.limit} rows (LIMIT {plan.limit}); add LIMIT "
                         f"{min(C.MAX_LIMIT, plan.limit * 10)} for more")
        if target.table == "attempts" and rows and "objective" in cols:
            i = cols.index("objective")
            if all(r[i] is None for r in rows):
                notes.append("objective text is unavailable (no prompt content captured; metadata_only mode?)")
        return Result(cols, decode_rows(cols, rows), notes, display=plan.display)


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
    rows.append(("indexes", ", ".join(_dedup(indexes)) or "none"))
    rows.append(("full scans", ", ".join(sorted(tables)) or "none"))
    notes = ["EXPLAIN compiles the statement and asks SQLite for its plan; it does not run it"]
    out = [(s, d, [], uncertainty(1.0, "deterministic", "query plan")) for s, d in rows]
    return Result(("step", "detail", "evidence", "uncertainty"), out, notes, kind="explanation",
                  display=("step", "detail"))


def _handlers():
    from . import ast
    return {ast.Show: ShowHandler, ast.Why: WhyHandler, ast.Trace: TraceHandler, ast.State: StateHandler,
            ast.Diff: DiffHandler, ast.WhatIs: WhatIsHandler}


class _Lazy(dict):
    def __missing__(self, key):
        self.update(_handlers())
        return dict.__getitem__(self, key)


HANDLERS = _Lazy()


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
    except (TypeError, ValueError):
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
    from . import ast
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
