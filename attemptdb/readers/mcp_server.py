"""`attempt mcp`: the history as Model Context Protocol tools, served over stdio with the
official MCP Python SDK (the `mcp` extra, 2.x).

Tools: `query` (one AttemptQL or read-only SQL statement), `schema` (the catalog), `needs_you`,
`timeline` (a session or project: turns with their attempts), `why`, `trace`, `evidence`.

Invariants:
- The database is opened read-only (attemptdb.store.readonly: read-only open + an authorizer that
  refuses every write, PRAGMA change and ATTACH); every tool runs one or two AttemptQL/SQL
  statements through the engine of `attempt query` (readers.bounded), values quoted.
- Content (prompt, command and output text, raw payloads, notes) reads as NULL unless the
  server was started with `--include-content` (readers.content, at the SQLite level).
- Every answer is bounded (MAX_ROWS rows, `truncated`, `total` when known; long values cut and
  the answer's size capped, `values_cut`: readers.bounded) and AttemptQL rows keep their
  `evidence` and `uncertainty`. The size fits an agent's context (BUDGET: rows of at most
  ANSWER_CHARS characters of JSON, values cut at VALUE_CHARS; a `timeline` shares one budget
  between its turns and their attempts; `schema` without a table lists the columns by name):
  Claude Code refuses a tool answer over 25,000 tokens (MAX_MCP_OUTPUT_TOKENS) and files one
  over 50,000 characters away from the conversation.
- The text of a result (what a client shows) carries no control character whatever the stored
  values hold: the JSON escapes C0, DEL, C1, line-separator and bidi characters (it decodes to
  the same value), and an error's first line shows them as `?`.
- Every refusal — a write, a second statement, an oversized or malformed request, an unknown
  id — is a tool error (`isError`) carrying the coded error (`AQL0506`, `AQL0204`, …) as
  JSON; an unexpected failure is the coded `internal` error naming only its type. Nothing
  the server does ends the session: the process stops when the client closes stdin.
- A call the client cancels (notifications/cancelled) stops: its running statement is interrupted
  (Connection.interrupt, from the event loop, again and again until the call's thread is done,
  and only while that call holds the connection), a statement it has not begun yet never runs,
  and the call ends in AQL0503 (cancelled), which the SDK never sends (MCP: a cancelled request
  is not answered); the next call runs at once.
- `timeline` reads at most MAX_ROWS turns and the attempts of exactly those turns (at most
  MAX_TIMELINE_ATTEMPTS, newest first); `truncated` says older turns were left out (`total`
  unknown then) or a turn's attempt list was cut (that turn's `attempts_complete` false).
- Every line that carries an `id` gets exactly one reply: a line the SDK cannot read (not JSON,
  a request of the wrong shape, an `id` of the wrong type, a batch, a line over
  MAX_REQUEST_BYTES) is answered here with a JSON-RPC error (-32700, -32600) instead of being
  dropped; a notification or a response is never answered (screen()).
"""

import os
import re
import threading
import time

from ..errors import AttemptError, printable
from ..model import fastjson
from ..query.errors import AQLError
from ..render import jsonterm
from . import bounded, content

SERVER_NAME = "attemptdb"
MCP_EXTRA = ("mcp",)
INSTALL_MCP = ("add the mcp extra: from a checkout pip install '.[mcp]'; under pipx: "
               f"pipx inject attemptdb {' '.join(MCP_EXTRA)}")
MAX_SUBJECT_CHARS = 200
HOUSEKEEPING_EVERY_S = 1.0
MAX_TIMELINE_ATTEMPTS = 1000
ANSWER_CHARS = 32_000
"""Characters of row JSON in one answer: ids and JSON punctuation take 2-4 characters a token, so
this stays under Claude Code's 25,000-token refusal and its 50,000-character threshold."""
VALUE_CHARS = 4_000
BUDGET = bounded.Budget(ANSWER_CHARS, VALUE_CHARS)
INTERRUPT_EVERY_S = 0.05

INSTRUCTIONS = (
    "AttemptDB records what AI coding agents tried in this and other repositories: sessions, turns, "
    "attempts (with outcome and failure class), tool calls, handoffs, work units and the events behind "
    "them. Before retrying something, ask what was already tried: `timeline` for this project, "
    "`query` with SHOW FAILED ATTEMPTS FOR path = '<file>', `why` for a failed attempt. Every inferred "
    "row carries `evidence` (event ids) and `uncertainty`; `evidence` opens the facts. Read-only.")

_SUBJECT = {"type": "string", "minLength": 1, "maxLength": MAX_SUBJECT_CHARS,
            "description": "An id: att_…, ses_…, wu_…, trn_…, tc_…, ev_… (a short id of ≥ 8 hex digits works)."}
_PROJECT = {"type": "string", "maxLength": MAX_SUBJECT_CHARS,
            "description": "A project: owner/repo, its last part, or prj_…"}

TOOLS = {
    "query": ("Run ONE AttemptQL statement (SHOW FAILED ATTEMPTS FOR path = 'src/x.rs', SHOW ATTEMPTS, "
              "SHOW HANDOFFS, SHOW WORK UNITS, SHOW APPROVALS, SHOW NOTES, WHY …, TRACE …, STATE …, DIFF STATE …, "
              "WHAT IS project DOING NOW) or ONE read-only SQL statement (SELECT/WITH/VALUES/EXPLAIN/DESCRIBE "
              "<table>/SHOW TABLES) over the history. At most 200 rows and 32,000 characters (`truncated`, `total`; "
              "select the columns you need, or narrow with WHERE/SINCE/LIMIT). Writes and multiple "
              "statements are refused.",
              {"statement": {"type": "string", "maxLength": bounded.MAX_STATEMENT_CHARS,
                             "description": "One AttemptQL or SQL statement."}}, ("statement",)),
    "schema": ("The table catalog: every public table with its column names, and the query recipes. "
               "Give `table` for one table's columns with their types and meanings.",
               {"table": {"type": "string", "maxLength": 64, "description": "One table, e.g. attempts."}}, ()),
    "needs_you": ("Who is waiting on a human right now, what is stuck, who is colliding: permission gates, "
                  "input requests, repeated failures, conflicting work units, ranked, each with evidence "
                  "and confidence.", {"project": _PROJECT}, ()),
    "timeline": ("The turns of one session or project, newest first, each with its attempts (outcome, "
                 "failure class, superseded_by). Without session or project: the project of the server's "
                 "working directory when the history knows it, else every project.",
                 {"session": dict(_SUBJECT, description="A session id (ses_…)."), "project": _PROJECT,
                  "since": {"type": "string", "maxLength": 64,
                            "description": "From this time: RFC 3339, a date, -2h, -1d, today."}}, ()),
    "why": ("Why is this blocked, or why did this attempt fail: evidence-backed claims (WHY … STATUS "
            "BLOCKED|FAILED) about an attempt, session, work unit, turn, tool call or event.",
            {"subject": _SUBJECT, "status": {"type": "string", "enum": ["blocked", "failed"],
                                            "description": "Default: failed for attempts, blocked otherwise."}},
            ("subject",)),
    "trace": ("Walk the causal edges from an id (TRACE … CAUSES): one row per edge with depth, type, "
              "evidence and uncertainty.",
              {"subject": _SUBJECT, "depth": {"type": "integer", "minimum": 1, "maximum": 100},
               "direction": {"type": "string", "enum": ["up", "down", "both"],
                             "description": "up: toward causes (default); down: toward consequences."}},
              ("subject",)),
    "evidence": ("The events (immutable facts) an inference rests on, in observation order "
                 "(SHOW EVIDENCE FOR <id>).", {"subject": _SUBJECT}, ("subject",)),
}


def q(value: str) -> str:
    """An AttemptQL string literal."""
    return "'" + value.replace("'", "''") + "'"


class BadArguments(AttemptError):
    def __init__(self, message):
        super().__init__("mcp.bad_arguments", message)


def cancelled() -> AQLError:
    """What a call the client cancelled ends in (never database content)."""
    return AQLError("AQL0503", "cancelled by the client; the statement was stopped")


def _arg(args: dict, name: str, kind, *, required=False, maximum=None, choices=None, low=None):
    v = args.get(name)
    if v is None:
        if required:
            raise BadArguments(f"`{name}` is required")
        return None
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int) or not (low <= v <= maximum):
            raise BadArguments(f"`{name}` must be an integer from {low} to {maximum}")
        return v
    if not isinstance(v, str) or not v.strip():
        raise BadArguments(f"`{name}` must be a non-empty string")
    if maximum is not None and len(v) > maximum:
        raise BadArguments(f"`{name}` is longer than {maximum} characters")
    if choices is not None and v.lower() not in choices:
        raise BadArguments(f"`{name}` must be one of {', '.join(choices)}")
    return v.lower() if choices is not None else v


class Reader:
    """The tools without the protocol: `call(name, arguments)` → an answer dict, or raises a
    coded AttemptError. One read-only connection, opened at the first call (a database that
    does not exist yet is an error of that call, not of the server), used by one call at a time;
    `interrupt(cancel)` stops the call made with that `cancel` event, from any thread."""

    def __init__(self, path: str, *, include_content: bool = False, before_read=None, cwd: str | None = None):
        self.path = path
        self.include_content = include_content
        self.before_read = before_read
        self.cwd = cwd or os.getcwd()
        self.conn = None
        self.gate = None
        self._lock = threading.Lock()
        self._guard = threading.Lock()  # who holds the connection (`_running`), and interrupting it
        self._running = None
        self._last_housekeeping = 0.0

    def close(self):
        if self.conn is not None:
            from ..query.result import bound_fetches
            bound_fetches(self.conn, None)
            self.conn.close()
            self.conn = None

    def _open(self):
        if self.conn is None:
            import apsw

            from ..query.result import bound_fetches
            from ..store.readonly import connect
            conn, gate = connect(self.path)
            conn.authorizer = content.authorizer(gate, self.include_content)
            # what an agent's statement may make SQLite build (one value) and hold (its rows)
            conn.limit(apsw.SQLITE_LIMIT_LENGTH, bounded.MAX_VALUE_BYTES)
            bound_fetches(conn, bounded.MAX_FETCH_BYTES)
            self.conn, self.gate = conn, gate
        now = time.monotonic()
        if self.before_read is not None and now - self._last_housekeeping >= HOUSEKEEPING_EVERY_S:
            self._last_housekeeping = now
            self.before_read(self.conn)  # events waiting in the spool, as every read command does
        return self.conn

    def interrupt(self, cancel: threading.Event) -> None:
        """Cancel the call made with `cancel`: set it (a statement not yet begun never runs) and
        interrupt the connection while that call holds it, never another call's statement."""
        cancel.set()
        with self._guard:
            if self._running is cancel and self.conn is not None:
                self.conn.interrupt()

    def call(self, name: str, arguments, cancel: threading.Event | None = None) -> dict:
        fn = getattr(self, "tool_" + name, None) if name in TOOLS else None
        if fn is None:
            raise AttemptError("mcp.unknown_tool", f"no tool named that; the tools are {', '.join(TOOLS)}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise BadArguments("arguments must be an object")
        unknown = sorted(set(arguments) - set(TOOLS[name][1]))
        if unknown:
            raise BadArguments(f"unknown argument(s) {', '.join(unknown)[:200]}; {name} takes "
                               f"{', '.join(TOOLS[name][1]) or 'none'}")
        cancel = cancel or threading.Event()
        with self._lock:
            with self._guard:
                self._running = cancel
            try:
                if cancel.is_set():
                    raise cancelled()
                self._open()
                out = fn(arguments)
            except Exception:
                if cancel.is_set():
                    raise cancelled() from None
                raise
            finally:
                with self._guard:
                    self._running = None
        if cancel.is_set():
            raise cancelled()
        out["content_included"] = self.include_content
        return out

    def _run(self, statement: str, **kw) -> dict:
        if self._running is not None and self._running.is_set():
            raise cancelled()
        kw.setdefault("budget", BUDGET)
        return bounded.run(self.conn, statement, gate=self.gate, cwd=self.cwd, **kw)

    # --- the tools ------------------------------------------------------------------------

    def tool_query(self, args):
        # a missing or non-string `statement` is a mistake in the call (as for every tool); an
        # empty or blank one is the engine's AQL0203, what `attempt query ""` says
        statement = args.get("statement")
        if statement is None:
            raise BadArguments("`statement` is required")
        if not isinstance(statement, str):
            raise BadArguments("`statement` must be a string (one AttemptQL or SQL statement)")
        return self._run(statement)

    def tool_schema(self, args):
        from ..projections import catalog
        table = _arg(args, "table", str, maximum=64)
        cat = catalog.build(self.conn, table)
        if table is not None and not cat["tables"]:
            from ..errors import did_you_mean
            names = [t["name"] for t in catalog.build(self.conn)["tables"]]
            raise AQLError("AQL0307", "unknown table" + (did_you_mean(table, names) or ""), listing=("tables", names))
        if table is None:  # every table, its columns by name: the whole catalog is ~75,000 characters
            cat["tables"] = [{**t, "columns": [c["name"] for c in t["columns"]]} for t in cat["tables"]]
            cat["columns_described"] = "give `table` for one table's columns with their types and meanings"
        return {"catalog": bounded.json_safe(cat), "truncated": False}

    def tool_needs_you(self, args):
        project = _arg(args, "project", str, maximum=MAX_SUBJECT_CHARS)
        sql = "SELECT * FROM needs_you"
        if project:
            from ..query import resolve
            names = sorted({n for _, n in resolve.resolve_project(self.conn, project)})
            sql += " WHERE project_name IN (" + ", ".join(q(n) for n in names) + ")"
        return self._run(sql + " ORDER BY rank, since, work_unit_id")

    def tool_timeline(self, args):
        session = _arg(args, "session", str, maximum=MAX_SUBJECT_CHARS)
        project = _arg(args, "project", str, maximum=MAX_SUBJECT_CHARS)
        since = _arg(args, "since", str, maximum=64)
        if session and project:
            raise BadArguments("give `session` or `project`, not both")
        scope = ""
        if session:
            scope = f" FOR session = {q(session)}"
        elif project:
            scope = f" FOR project = {q(project)}"
        else:
            from ..query import resolve
            here = resolve.project_of_directory(self.conn, self.cwd)
            if here:
                scope = f" FOR project = {q(here[0])}"
        if since:
            scope += f" SINCE {q(since)}"
        older = (f"older turns are left out (the newest {bounded.MAX_ROWS} are shown; total unknown): "
                 "give `since` for a shorter span" + ("" if session else ", or `session` for one session"))
        # one budget for the answer: the newest turns that fit with their attempts
        turns = self._run(f"SHOW TURNS{scope} ORDER BY started_at DESC LIMIT {bounded.MAX_ROWS}", more=older)
        ids = [t["turn_id"] for t in turns["rows"] if t.get("turn_id")]
        attempts = {"statement": None, "rows": [], "row_count": 0, "truncated": False, "values_cut": 0, "notes": []}
        if ids:  # the attempts of exactly these turns
            attempts = self._run(f"SHOW ATTEMPTS WHERE turn_id IN ({', '.join(q(i) for i in ids)}) "
                                 f"ORDER BY started_at DESC LIMIT {MAX_TIMELINE_ATTEMPTS}",
                                 max_rows=MAX_TIMELINE_ATTEMPTS, more="")
        by_turn = {}
        for a in attempts["rows"]:
            by_turn.setdefault(a.get("turn_id"), []).append(a)
        # newest first: when attempts were cut, those left out are older than the oldest read, so
        # a turn that began after it has them all
        cut_at = attempts["rows"][-1].get("started_at") if attempts["truncated"] and attempts["rows"] else None
        kept, left, short, shown = [], ANSWER_CHARS, 0, 0
        for t in turns["rows"]:
            mine = sorted(by_turn.get(t.get("turn_id"), []), key=lambda a: a.get("attempt_index") or 0)
            cost = len(fastjson.dumps(t)) + sum(len(fastjson.dumps(a)) for a in mine)
            if kept and cost > left:
                break
            complete = not attempts["truncated"] or (
                cut_at is not None and t.get("started_at") is not None and t["started_at"] > cut_at)
            while mine and cost > left:  # the newest turn alone past the budget: its first attempts
                cost -= len(fastjson.dumps(mine.pop()))
                complete = False
            t["attempts"], t["attempts_complete"] = mine, complete
            left -= cost
            shown += len(mine)
            short += not complete
            kept.append(t)
        notes = [n for n in turns["notes"] + attempts["notes"] if not n.startswith("only the first ")]
        if len(kept) < len(turns["rows"]) or any(n.startswith("only the first ") for n in turns["notes"]):
            notes.append(f"only the newest {len(kept)} turn(s) fit in an answer ({ANSWER_CHARS} characters) with "
                         "their attempts: give `since` for a shorter span"
                         + ("" if session else ", or `session` for one session"))
        if short:
            notes.append(f"the attempts of {short} turn(s) may be incomplete (attempts_complete: false; at most "
                         f"{MAX_TIMELINE_ATTEMPTS} attempts are read, newest first, and they share the answer's "
                         "size): give `since` for a shorter span" + ("" if session else ", or `session` for one session"))
        return {"statements": [s for s in (turns["statement"], attempts["statement"]) if s], "rows": kept,
                "row_count": len(kept), "attempt_count": shown,
                "truncated": turns["truncated"] or attempts["truncated"] or len(kept) < len(turns["rows"]) or short > 0,
                "total": turns["total"] if len(kept) == len(turns["rows"]) else None,
                "values_cut": turns["values_cut"] + attempts["values_cut"],
                "notes": list(dict.fromkeys(notes))}

    def tool_why(self, args):
        subject = _arg(args, "subject", str, required=True, maximum=MAX_SUBJECT_CHARS)
        status = _arg(args, "status", str, choices=("blocked", "failed"))
        low = subject.strip().lower()
        kind = {"att_": "attempt ", "ses_": "session "}.get(low[:4], "")
        if status is None:
            status = "blocked" if low.startswith(("ses_", "wu_", "trn_", "tc_", "ev_")) else "failed"
        return self._run(f"WHY {kind}{q(subject.strip())} STATUS {status.upper()}")

    def tool_trace(self, args):
        subject = _arg(args, "subject", str, required=True, maximum=MAX_SUBJECT_CHARS)
        depth = _arg(args, "depth", int, low=1, maximum=100)
        direction = _arg(args, "direction", str, choices=("up", "down", "both"))
        stmt = f"TRACE {q(subject.strip())} CAUSES"
        if depth:
            stmt += f" DEPTH {depth}"
        if direction:
            stmt += f" DIRECTION {direction.upper()}"
        return self._run(stmt)

    def tool_evidence(self, args):
        subject = _arg(args, "subject", str, required=True, maximum=MAX_SUBJECT_CHARS)
        return self._run(f"SHOW EVIDENCE FOR {q(subject.strip())}")


# --- the protocol ------------------------------------------------------------------------------

def terminal_safe_json(payload) -> str:
    """`payload` as JSON text that decodes to the same value but carries no control character
    (stored values come from hostile hook payloads; the text is what a client shows)."""
    return jsonterm.escaped(fastjson.dumps(payload))  # always: a client shows the text as it is


def error_payload(exc: BaseException) -> dict:
    """A refusal or failure as the JSON a tool error carries (never database content)."""
    if isinstance(exc, AQLError):
        return exc.to_json()
    if isinstance(exc, AttemptError):
        return {"code": exc.code, "message": exc.message}
    return {"code": "internal", "message": f"unexpected {type(exc).__name__}; the server keeps running"}


def require_mcp():
    """The MCP SDK (2.x) or a coded error saying how to add it."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        import mcp.server.lowlevel  # noqa: F401
        major = int(version("mcp").split(".")[0])
    except (ImportError, PackageNotFoundError, ValueError):
        raise AttemptError("mcp.needs_mcp", f"`attempt mcp` needs the MCP SDK; {INSTALL_MCP}") from None
    if major < 2:
        raise AttemptError("mcp.needs_mcp", f"`attempt mcp` needs version 2 of the MCP SDK (found {major}.x); "
                           f"{INSTALL_MCP}")


def build_server(reader: Reader):
    """The low-level MCP server whose tools are `reader`'s."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from .. import __version__

    tools = [types.Tool(name=name, description=desc,
                        input_schema={"type": "object", "properties": props, "required": list(req),
                                      "additionalProperties": False},
                        annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                          idempotent_hint=True, open_world_hint=False))
             for name, (desc, props, req) in TOOLS.items()]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    def answer(name, arguments, cancel, done):
        try:
            return False, reader.call(name, arguments, cancel)
        except Exception as e:  # every refusal is a tool error; the server never goes down
            return True, {"error": error_payload(e)}
        finally:
            done.set()

    async def call_tool(ctx, params):
        cancel, done = threading.Event(), threading.Event()
        try:
            is_error, payload = await anyio.to_thread.run_sync(answer, params.name, params.arguments, cancel, done,
                                                               abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            # the client cancelled the call (or the server stops): stop its statement; again and
            # again, since an interrupt between two statements of the call is lost
            with anyio.CancelScope(shield=True):
                while not done.is_set():
                    reader.interrupt(cancel)
                    await anyio.sleep(INTERRUPT_EVERY_S)
            raise
        text = terminal_safe_json(payload)
        if is_error:
            err = payload["error"]
            text = f"error[{printable(err['code'])}]: {printable(err['message'])}\n{text}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=payload, is_error=is_error)

    return Server(SERVER_NAME, version=__version__, title="AttemptDB",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


# --- the wire ------------------------------------------------------------------------------------
#
# The SDK's stdio transport reads a line, validates it and drops what it cannot read without a
# word (a request whose `params` is not an object, a `method` that is no string, a batch, a lone
# surrogate), and reads a request whose `id` is an object, an array, a bool, a fraction or null as
# a notification it does not answer: its client would wait for ever. So the server reads the
# lines itself, bounded, and hands the SDK only the lines it will answer; every other line that
# carries an `id` is answered here with exactly one JSON-RPC error (spec/readers.md).

MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""The longest request line read (a `query` statement is at most 65,536 characters, ≤ 400 KB as
escaped JSON); the rest of a longer line is read and dropped, never held."""

MAX_BATCH = 1000
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_NOT_JSON = "malformed JSON (not JSON text, or a string holding a lone surrogate or an invalid escape)"
_TOO_DEEP = "JSON nested too deeply to read"
_NO_BATCH = "batches are not supported (MCP has none since 2025-06-18): send one request per line"

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null")
_RUN = re.compile(r'[\[{]+|[\]}]+|[^\[\]{}"]+')
_OBJECT, _ARRAY = object(), object()  # a member whose value is an object / an array (not read)


def _skip_nested(text: str, i: int) -> int:
    """Where the object or array starting at text[i] ends, found without recursion (one pass, so
    a value nested a million deep costs what a flat one does); len(text) when it never ends."""
    from json.decoder import scanstring
    depth, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            i = scanstring(text, i + 1, False)[1]
            continue
        run = _RUN.match(text, i).group()
        if run[0] in "[{":
            depth += len(run)
        elif run[0] in "]}":
            if len(run) >= depth:
                return i + depth
            depth -= len(run)
        i += len(run)
    return n


def _value(text: str, i: int):
    """(value, end) of the JSON value at text[i]: scalars read, objects and arrays skipped."""
    from json.decoder import scanstring
    if text.startswith('"', i):
        return scanstring(text, i + 1, False)
    if text.startswith(("[", "{"), i):
        return (_ARRAY if text[i] == "[" else _OBJECT), _skip_nested(text, i)
    m = _SCALAR.match(text, i)
    if m is None:
        raise ValueError("not JSON")
    word = m.group()
    if word in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[word], m.end()
    return (float(word) if m.group(1) or m.group(2) else int(word)), m.end()  # int: ValueError past 4,300 digits


def top_level(text: str) -> tuple[str, dict, bool]:
    """The top level of one line: its kind (`object`, `array`, `other`, or `` when blank), an
    object's members read up to the first thing that is not JSON (scalars as values, objects and
    arrays as markers, so what names a request's `id` is found in a malformed, cut or deeply
    nested line), and whether the object was read whole."""
    i = _WS.match(text).end()
    if i == len(text):
        return "", {}, True
    if text[i] != "{":
        return ("array" if text[i] == "[" else "other"), {}, False
    members = {}
    try:
        i = _WS.match(text, i + 1).end()
        if text.startswith("}", i):
            return "object", members, _WS.match(text, i + 1).end() == len(text)
        while text.startswith('"', i):
            key, i = _value(text, i)
            i = _WS.match(text, i).end()
            if not text.startswith(":", i):
                break
            members[key], i = _value(text, _WS.match(text, i + 1).end())
            i = _WS.match(text, i).end()
            if text.startswith("}", i):
                return "object", members, _WS.match(text, i + 1).end() == len(text)
            if not text.startswith(",", i):
                break
            i = _WS.match(text, i + 1).end()
    except ValueError:
        pass
    return "object", members, False


def _usable_id(value) -> bool:
    """A request id MCP answers: a string (that UTF-8 can carry back: no lone surrogate) or an
    integer (never a bool, a fraction, null, an object or an array)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return isinstance(value, int) and not isinstance(value, bool)


def _error(ident, code: int, message: str) -> dict:
    """One JSON-RPC error: for `ident` when it is a usable id, else for null (JSON-RPC: the id
    of a request whose id cannot be read)."""
    return {"jsonrpc": "2.0", "id": ident if _usable_id(ident) else None,
            "error": {"code": code, "message": message}}


def _what_is_wrong(m: dict) -> str:
    """Why an object that names an `id` is no request (never echoing what it holds)."""
    if not _usable_id(m["id"]):
        return "`id` must be a string or an integer"
    if m.get("jsonrpc") != "2.0":
        return '`jsonrpc` must be "2.0"'
    if "method" not in m:
        return "a request needs a `method`"
    if not isinstance(m["method"], str):
        return "`method` must be a string"
    if m.get("params") not in (None, _OBJECT):
        return "`params` must be an object"
    return "not a valid JSON-RPC request"


def _is_response(m: dict) -> bool:
    return "method" not in m and ("result" in m or "error" in m)


def _batch_reply(line: str, code: int, message: str):
    """A batch (a JSON array) is refused whole, as JSON-RPC 2.0 answers a batch: an array with
    one -32600 error per element that is a request (its id, or null when unusable), nothing for
    notifications and responses; an empty or unreadable array, or one of more than MAX_BATCH
    elements (whose answer would be many times the request), is one error for null."""
    try:
        items = fastjson.loads(line)
    except (ValueError, RecursionError):
        items = None
    if items is None:
        return _error(None, code, message)
    if not items or len(items) > MAX_BATCH:
        return _error(None, INVALID_REQUEST, _NO_BATCH)
    out = [_error(e.get("id") if isinstance(e, dict) else None, INVALID_REQUEST, _NO_BATCH) for e in items
           if not isinstance(e, dict) or ("id" in e and not _is_response(e))]
    return out or None


def _refusal(line: str, code: int, message: str | None = None):
    """The reply to a line the SDK cannot read: one error for the `id` the line names (for null
    when it names none and is not an object read whole); nothing for a notification or a
    response. `message` None: a -32600 that says what is wrong with the request."""
    kind, m, whole = top_level(line)
    if kind == "array":
        return _batch_reply(line, code, message or "not a valid JSON-RPC request")
    if kind == "object":
        if _is_response(m):
            return None  # a response is never answered
        if "id" in m:
            return _error(m["id"], code, message or _what_is_wrong(m))
        if whole:
            return None  # read whole and no `id`: a notification
    return _error(None, code, message or "not a valid JSON-RPC request")


def screen(line: str, *, cut: bool = False) -> tuple[bool, object]:
    """What becomes of one line from the client: (True, None) hands it to the SDK, which reads
    and answers it; (False, reply) keeps it back, `reply` being the JSON-RPC error (a dict, or a
    list for a batch) to send, or None when there is nothing to answer (a blank line, a
    notification, a response). `cut`: the line was longer than MAX_REQUEST_BYTES (this is its
    start)."""
    import mcp.types as types
    from pydantic import ValidationError
    if not line.strip():
        return False, None
    if cut:
        return False, _refusal(line, INVALID_REQUEST, f"a request longer than {MAX_REQUEST_BYTES >> 20} MiB")
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as e:
        unreadable = [x for x in e.errors() if x.get("type") == "json_invalid"]
        if not unreadable:
            return False, _refusal(line, INVALID_REQUEST)
        deep = any("recursion limit" in str(x.get("msg", "")) for x in unreadable)
        return False, _refusal(line, PARSE_ERROR, _TOO_DEEP if deep else _NOT_JSON)
    if isinstance(message, types.JSONRPCNotification) and "id" in top_level(line)[1]:
        # the SDK drops an `id` it cannot use and reads the rest as a notification
        return False, _error(None, INVALID_REQUEST, "`id` must be a string or an integer")
    return True, None


def _read_line(wire) -> tuple[bytes | None, bool]:
    """(the next line, whether it was cut): at most MAX_REQUEST_BYTES of it is held, the rest
    read and dropped; (None, False) at the end of input."""
    line = wire.readline(MAX_REQUEST_BYTES + 1)
    if not line:
        return None, False
    if len(line) <= MAX_REQUEST_BYTES or line.endswith(b"\n"):
        return line, False
    while True:
        rest = wire.readline(1 << 16)
        if not rest or rest.endswith(b"\n"):
            return line[:MAX_REQUEST_BYTES], True


class _Requests:
    """The lines the SDK's stdio transport reads (its `stdin`): the client's lines that screen()
    hands on; the replies to those it keeps back go to `replies`."""

    def __init__(self, wire, replies):
        self.wire = wire
        self.replies = replies

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        import anyio
        while True:
            raw, cut = await anyio.to_thread.run_sync(_read_line, self.wire)
            if raw is None:
                self.replies.close()
                raise StopAsyncIteration
            line = raw.decode("utf-8", "replace")  # as the SDK decodes
            forward, reply = screen(line, cut=cut)
            if forward:
                return line
            if reply is not None:
                await self.replies.send(reply)


def _wire_message(reply):
    """A reply as the SDK's writer sends it (a batch's array included)."""
    import mcp.types as types
    from mcp.shared.message import SessionMessage
    from pydantic import RootModel
    if isinstance(reply, list):
        return SessionMessage(RootModel[list[types.JSONRPCError]]([types.JSONRPCError.model_validate(r)
                                                                   for r in reply]))
    return SessionMessage(types.JSONRPCError.model_validate(reply))


class _ClaimedStdin:
    """The client's end of stdin, read from a private duplicate while fd 0 itself points at the
    null device (what the SDK does when it reads stdin), so nothing a tool runs reads a request."""

    def __enter__(self):
        import sys
        self.fd = None
        try:
            import fcntl
            self.fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        except (ImportError, OSError):
            return sys.stdin.buffer
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        # never closed: a worker thread may still be blocked reading it when the server stops
        return os.fdopen(self.fd, "rb", closefd=False)

    def __exit__(self, *exc):
        if self.fd is not None:
            os.dup2(self.fd, 0)


def serve(reader: Reader) -> None:
    """Serve `reader` over stdin/stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(reader)

    async def main():
        replies, kept_back = anyio.create_memory_object_stream(0)
        with _ClaimedStdin() as wire:
            async with stdio_server(stdin=_Requests(wire, replies)) as (read_stream, write_stream):

                async def answer_kept_back():
                    async with kept_back:
                        async for reply in kept_back:
                            await write_stream.send(_wire_message(reply))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(answer_kept_back)
                    await server.run(read_stream, write_stream, server.create_initialization_options())
                    tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        reader.close()
