"""`attempt query`, `why`, `trace`, `handoffs`, `status`, `needs-you` and `schema`: thin click
layers over attemptdb.query and attemptdb.projections.catalog (how a statement is opened, run and
printed, and the bodies of `query` and `needs-you`, are in cli/reads.py: cli/lean.py runs those
two without click).

Invariants: every command opens the database read-only (attemptdb.store.readonly: authorizer +
read-only open), so none of them can change the file; options are turned into one AttemptQL
statement (values quoted, never spliced raw) and run through the same engine as
`attempt query`; table output collapses evidence to counts (`--evidence` shows the ids),
`--json` prints rows as objects and never imports anything heavy; errors are AQL-coded.
"""

import os

import click

from .common import db_option, db_path, echo_json, json_option, json_text, printable, say
from .reads import emit, needs_you, open_read, run_statement
from .scope import scope_options


def _q(value: str) -> str:
    """An AttemptQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def _clauses(project=None, session=None, since=None, until=None, limit=None, filters=True) -> str:
    parts = []
    fors = []
    if project:
        fors.append(f"project = {_q(project)}")
    if session:
        fors.append(f"session = {_q(session)}")
    if fors and filters:
        parts.append("FOR " + " AND ".join(fors))
    if since:
        parts.append(f"SINCE {_q(since)}")
    if until:
        parts.append(f"UNTIL {_q(until)}")
    if limit:
        parts.append(f"LIMIT {int(limit)}")
    return (" " + " ".join(parts)) if parts else ""


@click.command("query")
@click.argument("statement")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the rows as CSV (RFC 4180, with a header).")
@click.option("--evidence", is_flag=True, help="Show evidence event ids instead of counts.")
@click.option("--explain", is_flag=True, help="Show the AST, generated SQL and SQLite's plan; do not run.")
@click.option("-n", "--limit", type=click.IntRange(1, 10_000_000), default=None, metavar="N",
              help="Print at most N rows (the statement itself is not changed).")
@click.option("--engine", type=click.Choice(["sqlite", "datafusion"]), default="sqlite", show_default=True,
              help="datafusion: SQL in DataFusion's dialect over the public tables (needs the arrow extra).")
@click.option("--from", "from_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="With --engine datafusion: read the tables of an `attempt export` directory instead.")
@db_option
def query_cmd(statement, as_json, as_csv, evidence, explain, limit, engine, from_dir, db):
    """Run one AttemptQL statement or one read-only SQL statement.

    AttemptQL: SHOW, WHY, TRACE, STATE, DIFF, WHAT IS, EXPLAIN (grammar/attemptql.peg). SQL: SELECT, WITH,
    VALUES, EXPLAIN, DESCRIBE <table>, SHOW TABLES, and the table functions
    attempt_trace(id, depth, direction), state_at(ts), evidence(id). Writes are refused.

    \b
    Examples:
      attempt query "SHOW FAILED ATTEMPTS FOR project = 'attemptdb' SINCE '-7d'"
      attempt query "WHY session ses_1a2b3c4d STATUS BLOCKED"
      attempt query "SELECT kind, count(*) FROM events GROUP BY kind"
    """
    if as_json and as_csv:
        raise click.UsageError("--json and --csv are exclusive")
    if engine == "datafusion":
        _run_datafusion(db, statement, from_dir, explain=explain, as_json=as_json, as_csv=as_csv,
                        evidence=evidence, limit=limit)
        return
    if from_dir:
        raise click.UsageError("--from needs --engine datafusion")
    run_statement(db, statement, explain=explain, as_json=as_json, as_csv=as_csv, evidence=evidence, limit=limit)


def _run_datafusion(db, statement, from_dir, *, explain=False, **emit_as):
    from ..errors import AttemptError
    from ..query import datafusion_engine as engine_datafusion
    from ..query.sqltext import classify
    if classify(statement) != "sql":
        raise AttemptError("query.engine", "--engine datafusion runs SQL (SELECT, WITH, VALUES, EXPLAIN); "
                           "AttemptQL, DESCRIBE and SHOW TABLES run on the sqlite engine")
    if from_dir:
        result = engine_datafusion.run(statement, directory=from_dir, explain=explain)
    else:  # SQLite runs only the engine's own SELECTs here: a read-only open is the wall
        from .common import open_store
        from .stores import housekeeping
        st = open_store(db, readonly=True)
        try:
            housekeeping(db_path(db), st.conn)
            result = engine_datafusion.run(statement, conn=st.conn, explain=explain)
        finally:
            st.close()
    if from_dir and not (emit_as.get("as_json") or emit_as.get("as_csv")):  # a team dataset's note
        from ..render.termtable import terminal_width
        from .dataset_cmd import fit_snapshot_keys
        result.notes = [fit_snapshot_keys(n, terminal_width()) for n in result.notes]
    emit(result, **emit_as)


@click.command("why")
@click.argument("subject", required=False)
@click.option("--project", metavar="NAME", help="Ask about this project instead of the current one.")
@click.option("--session", metavar="ID", help="Ask about one session.")
@click.option("--evidence", is_flag=True, help="Show evidence event ids instead of counts.")
@json_option
@db_option
def why_cmd(subject, project, session, evidence, as_json, db):
    """Why is this blocked, or why did this attempt fail?

    SUBJECT: an attempt id (att_… → WHY … FAILED), a session id (ses_… → WHY session …
    STATUS BLOCKED); without one, the current project (or --project / --session)."""
    if subject and session:
        raise click.UsageError("give SUBJECT or --session, not both")
    if session:  # an id (ses_…, bare or short) or the name `attempt run --session` gave it
        stmt = f"WHY session {_q(session)} STATUS BLOCKED"
    elif subject:
        low = subject.lower()
        if low.startswith("att_"):
            stmt = f"WHY attempt {_q(subject)} STATUS FAILED"
        elif low.startswith("ses_"):
            stmt = f"WHY session {_q(subject)} STATUS BLOCKED"
        elif low.startswith(("wu_", "trn_", "tc_", "ev_")):
            stmt = f"WHY {_q(subject)} STATUS BLOCKED"
        else:
            stmt = f"WHY {_q(subject)} STATUS FAILED"
    elif project:
        stmt = f"WHY project {_q(project)} STATUS BLOCKED"
    else:
        stmt = "WHY project STATUS BLOCKED"
    run_statement(db, stmt, as_json=as_json, evidence=evidence, built_by="attempt why")


@click.command("trace")
@click.argument("subject")
@click.option("--depth", type=click.IntRange(1, 100), default=None, help="How many edges deep (default 5).")
@click.option("--direction", type=click.Choice(["up", "down", "both"], case_sensitive=False), default=None,
              help="up: toward causes (default); down: toward consequences; both.")
@click.option("--evidence", is_flag=True, help="Show evidence event ids instead of counts.")
@json_option
@db_option
def trace_cmd(subject, depth, direction, evidence, as_json, db):
    """Walk the causal edges from an attempt, session, turn, tool call or event.

    TRACE <id> CAUSES: one row per edge (depth, edge type, from → to, when, evidence,
    uncertainty), cycles cut, and a depth_limit row where the walk stopped."""
    stmt = f"TRACE {_q(subject)} CAUSES"
    if depth:
        stmt += f" DEPTH {int(depth)}"
    if direction:
        stmt += f" DIRECTION {direction.upper()}"
    run_statement(db, stmt, as_json=as_json, evidence=evidence, built_by="attempt trace")


@click.command("handoffs")
@scope_options
@click.option("--between", nargs=2, metavar="AGENT AGENT", default=None,
              help="Only handoffs between these two agents, in either direction.")
@click.option("--evidence", is_flag=True, help="Show evidence event ids instead of counts.")
@json_option
@db_option
def handoffs_cmd(project, session, since, until, limit, between, evidence, as_json, db):
    """Where work passed from one agent's session to another's (SHOW HANDOFFS).

    Read gap_ms and shared_paths before believing a handoff: they are its evidence."""
    stmt = "SHOW HANDOFFS"
    if between:
        stmt += f" BETWEEN agent = {_q(between[0])} AND agent = {_q(between[1])}"
    stmt += _clauses(project, session, since, until, limit or 50)
    result = run_statement(db, stmt, as_json=as_json, evidence=evidence, built_by="attempt handoffs")
    if not result.rows and not as_json:
        from ..render.termtable import terminal_width, wrap
        others = _other_handoffs(db, project, session, since, until) if between else 0
        if others:
            scoped = " in this scope" if (project or session or since or until) else ""
            note = (f"note: none between these agents: no handoffs detected between {printable(between[0])} "
                    f"and {printable(between[1])}, but {others} other handoff{'s' if others != 1 else ''}{scoped} "
                    f"{'are' if others != 1 else 'is'} recorded between other agents "
                    f"(`attempt handoffs` without --between lists {'them' if others != 1 else 'it'}).")
        else:
            note = NO_HANDOFFS
        click.echo("\n".join(wrap(note, terminal_width(), "  ")))


def _other_handoffs(db, project, session, since, until) -> int:
    """How many handoffs the same scope holds without --between (up to OTHERS_CAP)."""
    from ..query import execute
    conn, gate = open_read(db)
    try:
        stmt = "SHOW HANDOFFS" + _clauses(project, session, since, until, OTHERS_CAP)
        return len(execute.run(conn, stmt, cwd=os.getcwd(), gate=gate).rows)
    finally:
        conn.close()


OTHERS_CAP = 100_000
NO_HANDOFFS = (
    "note: no handoffs detected. One is inferred (the handoffs view) when, in one project, a turn of one "
    "agent begins after the last activity before it belongs to a different agent's session (no other work in "
    "between), and that agent wrote or edited a file the new turn then touches within 30 minutes, or the gap "
    "is at most 5 minutes; only agents' sessions with a prompt or a tool call, not retracted, count "
    "(not what `attempt run` or `attempt note` record).")


# --- status ------------------------------------------------------------------------------------

def _rows_held(conn) -> int:
    """The rows the file holds, without counting them (no scan): the last sequence number less
    the rows its recovery note declares lost (recover leaves their numbers unused)."""
    last = conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
    from ..integrity import recovery
    note = recovery.read(conn) if _has(conn, "meta") else None
    lost = sum(max(0, min(hi, last) - lo + 1) for lo, hi, _ in (note.lost if note is not None else ()))
    return last - lost


def _key_missing(meta: dict) -> str | None:
    """The warning when the file was signed with a key its device's key file no longer holds
    (missing or another key): nothing new is signed (the read commands that sign say so)."""
    from ..integrity import keys
    if not (meta.get("key_id") and meta.get("device_id")):
        return None
    try:
        key = keys.load(meta["device_id"])
    except Exception:  # unreadable, exposed: doctor says which
        key = None
    if key is not None and key.identity == meta["key_id"]:
        return None
    what = "is missing" if key is None else f"holds another key ({key.identity})"
    return (f"the signing key file {what}: this database was signed with {meta['key_id']}, and nothing new is "
            "signed until it is back (`attempt doctor` says what to do)")


def status_report(conn, path: str, project: str | None = None, since: str | None = None,
                  until: str | None = None, limit: int = 20) -> dict:
    """Counts from the projection tables (indexed, no scan of events), and whether the schema
    is the one the migrations wrote (schema_integrity)."""
    from ..query import resolve
    from ..query.execute import public_tables
    tables = set(public_tables(conn))
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall()) if _has(conn, "meta") else {}
    events = _rows_held(conn)
    report = {"database": path, "schema_version": conn.execute("PRAGMA user_version").fetchone()[0],
              "capture_mode": meta.get("capture_mode"), "device_id": ("dev_" + meta["device_id"])
              if meta.get("device_id") else None, "events": events, "size_bytes": _size(path),
              "wal_bytes": _size(path + "-wal"), "sessions": None, "work_units": None, "needs_you": None,
              "providers": [], "projects": [], "warnings": []}
    from ..integrity import damage
    from ..store import schema_integrity
    mark = damage.marked(path)
    if mark is not None:
        report["warnings"].append(f"the database is damaged ({mark.get('what')}, found by {mark.get('by')} at "
                                  f"{mark.get('at')}): {damage.ADVICE}")
    lost = _key_missing(meta)
    if lost:
        report["warnings"].append(lost)
    changed = report["schema_changes"] = schema_integrity.differences(conn, report["schema_version"])
    if changed:  # the counts would run views someone changed (one that never ends, one that lies)
        report["warnings"].append("the schema: " + schema_integrity.summary(changed) + "; no counts are read "
                                  "from it until then")
        return report
    if "sessions" not in tables:
        report["warnings"].append("the projection tables are not built in this database yet")
        return report
    cond, params = ["NOT retracted"], []
    if project:
        ids = [pid for pid, _ in resolve.resolve_project(conn, project)]
        cond.append(f"project_id IN ({', '.join('?' * len(ids))})")
        params += ids
    now = None
    for bound, op in ((since, ">="), (until, "<=")):
        if bound:
            from ..model import clock
            now = now or clock.now_us()
            cond.append(f"last_event_at {op} ?")
            params.append(clock.iso(resolve.resolve_time("string", bound, now)))
    where = " AND ".join(cond)
    report["sessions"] = conn.execute(f"SELECT count(*) FROM sessions WHERE {where}", params).fetchone()[0]
    from ..projections import sessioncount
    report["capture_test_sessions"] = sessioncount.capture_test_sessions(conn) if not project and not since \
        and not until else None
    report["providers"] = [
        {"provider": p, "sessions": n, "events": e or 0, "last_event_at": last}
        for p, n, e, last in conn.execute(
            f"SELECT provider, count(*), sum(event_count), max(last_event_at) FROM sessions WHERE {where} "
            f"GROUP BY provider ORDER BY sum(event_count) DESC, provider", params)]
    report["projects"] = [
        {"project_name": name, "project_id": pid, "sessions": n, "events": e or 0, "last_event_at": last}
        for name, pid, n, e, last in conn.execute(
            f"SELECT project_name, project_id, count(*), sum(event_count), max(last_event_at) FROM sessions "
            f"WHERE {where} GROUP BY project_id ORDER BY sum(event_count) DESC, project_name LIMIT ?",
            params + [limit])]
    if {"needs_you", "unit_index"} <= tables:
        names = [r[0] for r in conn.execute(
            f"SELECT DISTINCT project_name FROM sessions WHERE {where}", params)] if project else None
        cond = f" WHERE project_name IN ({', '.join('?' * len(names))})" if names else ""
        report["work_units"] = conn.execute(
            "SELECT count(*) FROM unit_index" + (f" WHERE project_id IN ({', '.join('?' * len(ids))})" if project else ""),
            ids if project else []).fetchone()[0]
        report["needs_you"] = conn.execute(f"SELECT count(*) FROM needs_you{cond}", names or []).fetchone()[0]
    else:
        report["warnings"].append("work units, decisions, conflicts and Needs You are not in this file (written "
                                  "before they existed; the next capture or import upgrades it)")
    return report


def _has(conn, table):
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (table,)).fetchone() is not None


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@click.command("status")
@scope_options
@json_option
@db_option
def status_cmd(project, session, since, until, limit, as_json, db):
    """What this database holds: capture mode, events, sessions per agent and per project.

    The lines fit the terminal (COLUMNS, else its width, else 80 when not a terminal)."""
    path = db_path(db)
    conn, _ = open_read(db)
    try:
        rep = status_report(conn, path, project, since, until, limit or 20)
    finally:
        conn.close()
    if session:
        rep["warnings"].append("--session is ignored by status; use `attempt query \"SHOW SESSIONS FOR session = …\"`")
    if as_json:
        echo_json(rep)
        return
    from ..render.termtable import terminal_width
    click.echo("\n".join(status_lines(rep, terminal_width())))
    for w in rep["warnings"]:
        say(f"warning: {w}", err=True)


LABEL = 14
"""The width of status's labels (`capture mode  `): continuation lines start under the values."""


def status_lines(rep: dict, width: int) -> list[str]:
    """`attempt status` as lines of at most `width` display columns (termtable.cols: a wide
    character takes two). Every value from the file (or a repository, through a captured project
    name) is shown through the read commands' rule (query.read.clean: a control or disguising
    character as `?`) and cut by display width with "…"; counts and times are never cut."""
    from ..query.read import clean
    from ..render import termtable
    from ..render.termtable import clip, compact_time, plural, size_text

    def field(label, text, whole=()):  # a labelled value, wrapped under the values
        return termtable.prose(f"{label:<{LABEL}}{text}", width, " " * LABEL, whole=whole)
    out = field("database", printable(rep["database"]), whole=(printable(rep["database"]),))
    out += field("schema", str(rep["schema_version"]))
    mode = clean(rep["capture_mode"] or "unknown")  # a vocabulary value whole; anything else cut
    out += field("capture mode", mode if termtable.is_token(mode) else clip(mode, max(min(40, width - LABEL), 8)))
    events = (f"{rep['events']}" + (f" · {plural(rep['sessions'], 'session')}" if rep["sessions"] is not None else "")
              + (f" · {plural(rep['work_units'], 'work unit')}" if rep.get("work_units") is not None else "")
              + (f" (not counted: {plural(rep['capture_test_sessions'], 'capture-test session')}, from "
                 "`attempt hook install`'s checks)" if rep.get("capture_test_sessions") else ""))
    out += field("events", events)
    if rep.get("needs_you") is not None:
        out += field("needs you", f"{rep['needs_you']}" + ("  (attempt needs-you lists them)" if rep["needs_you"] else ""))
    out += field("on disk", f"{size_text(rep['size_bytes'])} · WAL {size_text(rep['wal_bytes'])}"
                 + (" (the WAL's space is reused)" if rep["wal_bytes"] > rep["size_bytes"] else ""))
    out += _count_rows([[clean(p["provider"]), plural(p["events"], "event"), plural(p["sessions"], "session"),
                         "last " + compact_time(clean(p["last_event_at"], 32))] for p in rep["providers"]],
                       width, name_width=12, name_max=24)
    if rep["projects"]:
        out.append("projects")
        out += _count_rows([[clean(p["project_name"]), plural(p["events"], "event"), plural(p["sessions"], "session")]
                            for p in rep["projects"]], width, name_width=40, name_max=40)
    return out


def _count_rows(rows: list, width: int, *, name_width: int, name_max: int) -> list[str]:
    """Rows of [name, events, sessions(, last …)] under two spaces, fitted to `width` columns.
    Where it fits, the fixed layout: the names padded to `name_width` (or the widest, cut to
    `name_max`), the counts right-aligned in columns of 16 and 14 whatever their values. Else
    the counts take only the room they need, the names are cut to what is left, and the
    `last …` time goes to a line of its own; where even that leaves a name fewer than 8
    columns, each row's counts go under its name. Counts and times are never cut, unless a
    terminal is narrower than they are."""
    from ..render.termtable import TEXT_MIN, clip, cols, join_fit, pad
    if not rows:
        return []
    widest = max(cols(clip(r[0], name_max)) for r in rows)
    fixed = ["  " + pad(clip(r[0], name_max), max(name_width, widest)) + f" {r[1]:>16}  {r[2]:>14}"
             + (f"  {r[3]}" if len(r) > 3 else "") for r in rows]
    if all(cols(x) <= width for x in fixed):
        return fixed
    w_counts = [max(len(r[k]) for r in rows) for k in (1, 2)]
    w_name = min(widest, width - 2 - 2 - w_counts[0] - 2 - w_counts[1])
    tail = max((len(r[3]) for r in rows if len(r) > 3), default=0)
    out = []
    if w_name >= min(widest, TEXT_MIN):
        beside = tail and 2 + w_name + 2 + sum(w_counts) + 2 + 2 + tail <= width
        for r in rows:
            out.append("  " + pad(clip(r[0], w_name), w_name) + "  " + r[1].rjust(w_counts[0]) + "  "
                       + r[2].rjust(w_counts[1]) + (f"  {r[3]}" if beside else ""))
            if len(r) > 3 and not beside:
                out.append(clip(f"    {r[3]}", width))
    else:  # too narrow for the counts beside even a short name
        for r in rows:
            out.append(clip("  " + r[0], width))
            out += join_fit(r[1:], width, sep="  ", first="    ", indent="    ")
    return [x.rstrip() for x in out]


# --- needs-you ---------------------------------------------------------------------------------

@click.command("needs-you")
@click.option("--project", metavar="NAME", help="Only this project (owner/repo, its last part, prj_… or a directory).")
@click.option("--evidence", is_flag=True, help="Show evidence event ids instead of counts.")
@json_option
@db_option
def needs_you_cmd(project, evidence, as_json, db):
    """Who is waiting on a human, what is stuck, who is colliding — ranked, with evidence.

    Agents waiting on a permission decision or on input, open work units whose last two attempts
    failed the same way, and two open units editing the same files (the needs_you view), judged
    now: the waits of sessions that ended or went silent for 12 hours drop out; a unit a session
    left unfinished stays open (its status says why) until 12 hours pass without activity."""
    needs_you(project, evidence, as_json, db)


def ids_short(x) -> str:
    from ..model import ids
    return printable(ids.short(x)) if x else "-"


# --- schema ----------------------------------------------------------------------------------------

@click.command("schema")
@click.argument("table", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text",
              help="text (default), markdown (the layout of spec/catalog.md) or json.")
@json_option
@db_option
def schema_cmd(table, fmt, as_json, db):
    """The table catalog: every public table and column with its type, nullability and meaning,
    and the query recipes, generated from the live schema (the database, or the schema this
    version ships when there is none) plus the column documentation in spec/."""
    from ..projections import catalog
    from ..query.errors import AQLError
    path = db_path(db)
    conn = catalog.default_connection(path)
    try:
        cat = catalog.build(conn, table)
        known = [t["name"] for t in catalog.build(conn)["tables"]] if table is not None and not cat["tables"] else []
    finally:
        conn.close()
    if table is not None and not cat["tables"]:
        from ..errors import did_you_mean
        raise AQLError("AQL0307", f"unknown table '{printable(table)[:40]}'" + did_you_mean(table, known),
                       listing=("tables", known))
    if as_json:  # --json, as every other command says it
        fmt = "json"
    if fmt == "markdown":
        click.echo(catalog.render_markdown(cat), nl=False)
    elif fmt == "json":
        click.echo(json_text(catalog.render_json(cat)), nl=False)
    else:
        from ..render.termtable import terminal_width
        click.echo(catalog.render_text(cat, terminal_width()), nl=False)
