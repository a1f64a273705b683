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
  `evidence` and `uncertainty`.
- The text of a result (what a client shows) carries no control character whatever the stored
  values hold: the JSON escapes C0, DEL, C1, line-separator and bidi characters (it decodes to
  the same value), and an error's first line shows them as `?`.
- Every refusal — a write, a second statement, an oversized or malformed request, an unknown
  id — is a tool error (`isError`) carrying the coded error (`AQL0506`, `AQL0204`, …) as
  JSON; an unexpected failure is the coded `internal` error naming only its type. Nothing
  the server does ends the session: the process stops when the client closes stdin.
"""

import os
import threading
import time

from ..errors import DISGUISING, AttemptError, printable
from ..model import fastjson
from ..query.errors import AQLError
from . import bounded, content

SERVER_NAME = "attemptdb"
MCP_EXTRA = ("mcp",)
INSTALL_MCP = ("add the mcp extra: from a checkout pip install '.[mcp]'; under pipx: "
               f"pipx inject attemptdb {' '.join(MCP_EXTRA)}")
MAX_SUBJECT_CHARS = 200
HOUSEKEEPING_EVERY_S = 1.0

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
              "SHOW HANDOFFS, SHOW WORK UNITS, WHY …, TRACE …, STATE …, DIFF STATE …, WHAT IS project DOING NOW) "
              "or ONE read-only SQL statement (SELECT/WITH/VALUES/EXPLAIN/DESCRIBE <table>/SHOW TABLES) over "
              "the history. At most 200 rows (`truncated`, `total`). Writes and multiple statements are refused.",
              {"statement": {"type": "string", "maxLength": bounded.MAX_STATEMENT_CHARS,
                             "description": "One AttemptQL or SQL statement."}}, ("statement",)),
    "schema": ("The table catalog: every public table and column with its meaning, and the query recipes. "
               "Give `table` for one table.",
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
    does not exist yet is an error of that call, not of the server), used by one call at a time."""

    def __init__(self, path: str, *, include_content: bool = False, before_read=None, cwd: str | None = None):
        self.path = path
        self.include_content = include_content
        self.before_read = before_read
        self.cwd = cwd or os.getcwd()
        self.conn = None
        self.gate = None
        self._lock = threading.Lock()
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

    def call(self, name: str, arguments) -> dict:
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
        with self._lock:
            self._open()
            out = fn(arguments)
        out["content_included"] = self.include_content
        return out

    def _run(self, statement: str) -> dict:
        return bounded.run(self.conn, statement, gate=self.gate, cwd=self.cwd)

    # --- the tools ------------------------------------------------------------------------

    def tool_query(self, args):
        statement = args.get("statement")
        if not isinstance(statement, str):
            raise AQLError("AQL0203", "empty statement; expected one AttemptQL or SQL statement in `statement`")
        return self._run(statement)

    def tool_schema(self, args):
        from ..projections import catalog
        table = _arg(args, "table", str, maximum=64)
        cat = catalog.build(self.conn, table)
        if table is not None and not cat["tables"]:
            names = ", ".join(t["name"] for t in catalog.build(self.conn)["tables"])
            raise AQLError("AQL0307", f"unknown table; the tables are {names}")
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
        tail = f" ORDER BY started_at DESC LIMIT {bounded.MAX_ROWS + 1}"
        turns = self._run("SHOW TURNS" + scope + tail)
        attempts = self._run("SHOW ATTEMPTS" + scope + tail)
        by_turn = {}
        for a in attempts["rows"]:
            by_turn.setdefault(a.get("turn_id"), []).append(a)
        for t in turns["rows"]:
            t["attempts"] = sorted(by_turn.get(t.get("turn_id"), []), key=lambda a: a.get("attempt_index") or 0)
        return {"statements": [turns["statement"], attempts["statement"]], "rows": turns["rows"],
                "row_count": turns["row_count"], "attempt_count": attempts["row_count"],
                "truncated": turns["truncated"] or attempts["truncated"],
                "total": turns["total"], "values_cut": turns["values_cut"] + attempts["values_cut"],
                "notes": turns["notes"] + attempts["notes"]}

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

# what JSON leaves raw inside a string but a terminal or a reader acts on: DEL, the C1 controls
# (U+009B is CSI) and the characters that disguise text (errors.DISGUISING: bidi overrides,
# zero-width characters, line separators); JSON itself escapes C0, ESC included
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in [0x7F, *range(0x80, 0xA0), *map(ord, DISGUISING)]}


def terminal_safe_json(payload) -> str:
    """`payload` as JSON text that decodes to the same value but carries no control character
    (stored values come from hostile hook payloads; the text is what a client shows)."""
    return fastjson.dumps(payload).translate(_JSON_ESCAPES)


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

    def answer(name, arguments):
        try:
            return False, reader.call(name, arguments)
        except Exception as e:  # every refusal is a tool error; the server never goes down
            return True, {"error": error_payload(e)}

    async def call_tool(ctx, params):
        is_error, payload = await anyio.to_thread.run_sync(answer, params.name, params.arguments)
        text = terminal_safe_json(payload)
        if is_error:
            err = payload["error"]
            text = f"error[{printable(err['code'])}]: {printable(err['message'])}\n{text}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=payload, is_error=is_error)

    return Server(SERVER_NAME, version=__version__, title="AttemptDB",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


async def unreadable_reply(exc: Exception, write_stream) -> None:
    """A JSON-RPC error (-32700 malformed JSON, -32600 not a request) for a line the SDK could
    not read, sent when the line still names the request's id (else nothing can be answered)."""
    import mcp.types as types
    from mcp.shared.message import SessionMessage
    errors = getattr(exc, "errors", None)
    errors = errors() if callable(errors) else []
    line = next((e.get("input") for e in errors if isinstance(e.get("input"), str)), None)
    try:
        ident = fastjson.loads(line).get("id") if line is not None else None
    except (ValueError, AttributeError, RecursionError):
        ident = None
    if isinstance(ident, bool) or not isinstance(ident, (int, str)):
        return
    parse = any(e.get("type") == "json_invalid" for e in errors)
    message = ("malformed JSON (a string holds a lone surrogate or invalid escape)" if parse
               else "not a valid JSON-RPC request")
    error = types.ErrorData(code=types.PARSE_ERROR if parse else types.INVALID_REQUEST, message=message)
    await write_stream.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=ident, error=error)))


def serve(reader: Reader) -> None:
    """Serve `reader` over stdin/stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(reader)

    async def main():
        async with stdio_server() as (read_stream, write_stream):
            sent, received = anyio.create_memory_object_stream(0)

            async def answer_unreadable():
                # the SDK drops a line it cannot read (a lone surrogate `\ud800` in a string, a
                # request of the wrong shape) without a word, so its client would wait forever
                async with sent:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await unreadable_reply(item, write_stream)
                        else:
                            await sent.send(item)

            async with anyio.create_task_group() as tg:
                tg.start_soon(answer_unreadable)
                await server.run(received, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        reader.close()
