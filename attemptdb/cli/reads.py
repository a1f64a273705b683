"""How the read commands open the file, run one statement and print its result, and the bodies
of `attempt query` (its sqlite engine) and `attempt needs-you`: without click, so the click
commands (cli/query.py) and the lean dispatch (cli/lean.py) run this very code.

Invariants: every read opens the database read-only (attemptdb.store.readonly: authorizer +
read-only open) after the spool and a due checkpoint were seen to (cli/stores.housekeeping);
table output collapses evidence to counts (`evidence` shows the ids) and prints ids in their
short forms; JSON prints rows as objects and imports nothing heavy; all output goes through
common.echo (what click.echo prints). An AttemptQL statement is parsed while its file opens
(`opening`); errors come in the same order as one after the other (the file's first).
"""

import os
import sys

from .common import OPENED, db_path, echo, echo_json, printable


def open_read(db):
    """(read-only connection, its gate) on the database `db` names, housekeeping done."""
    from ..store.readonly import connect
    from .stores import housekeeping
    path = db_path(db)
    OPENED.append(path)
    conn, gate = connect(path)
    housekeeping(path, conn)
    return conn, gate


def emit(result, *, as_json=False, as_csv=False, evidence=False, limit=None, shorten=None):
    from ..render import results as render
    from ..render.jsonterm import is_terminal
    if as_json:
        echo(render.json_rows(result, terminal=is_terminal(sys.stdout)))
        for n in result.notes:
            echo(render.note(n), err=True)
        return
    if as_csv:
        echo(render.csv_text(result, terminal=is_terminal(sys.stdout)), nl=False, whole=True)
        return
    from ..render.termtable import terminal_width
    echo(render.text(result, evidence_ids=evidence, max_rows=limit, term_width=terminal_width(), shorten=shorten))


def short_ids(conn, result, limit=None) -> dict:
    """Short forms (attemptdb.query.shortids) of the ids a table of `result` would print."""
    from ..query import shortids
    from ..render.results import shown
    _, index = shown(result)
    rows = result.rows if limit is None else result.rows[:limit]
    return shortids.shorten(conn, (r[i] for r in rows for i in index))


def opening(db):
    """`open_read(db)` begun in a thread of its own (store.readonly.begun); calling the returned
    function waits for its (connection, gate) or raises its error. SQLite parses the file's
    schema without holding Python's lock, so the caller meanwhile parses the statement and
    imports its family (cold: ~7 ms to open, ~5 ms to parse; spec/projections.md)."""
    from ..store import readonly  # apsw and the store: here, not both threads at once
    return readonly.begun(open_read, db)


def _open_spare(db) -> None:
    """The statement's second reader begins to open beside the first (store.readonly.open_spare)."""
    from ..store import readonly
    try:
        readonly.open_spare(db_path(db))
    except Exception:  # a speed-up only: what fails here, the opening reports
        pass


def run_statement(db, statement, *, explain=False, built_by=None, **emit_as):
    """Run one statement (AttemptQL or read-only SQL) on `db` and print it; the Result.
    `built_by`: the command that wrote the statement for the user (`attempt why`), named where
    an error points into it (the user never typed that text)."""
    from ..query.errors import AQLError
    try:
        return _run_statement(db, statement, explain=explain, **emit_as)
    except AQLError as e:
        if built_by:
            e.origin = f"the statement `{built_by}` ran"
        raise


def _run_statement(db, statement, *, explain=False, **emit_as):
    from ..query.sqltext import classify
    from ..store import readonly
    try:
        if isinstance(statement, str) and classify(statement) == "attemptql":  # parse, family: while it opens
            opened = opening(db)
            from ..query import execute
            execute.prepare(statement, None if explain else lambda: _open_spare(db))
            conn, gate = opened()
        else:  # SQL has nothing to load meanwhile that pays for the thread
            from ..query import execute
            conn, gate = open_read(db)
        try:
            result = execute.run(conn, statement, explain=explain, cwd=os.getcwd(), gate=gate)
            if not (emit_as.get("as_json") or emit_as.get("as_csv") or emit_as.get("evidence")) and result.rows:
                emit_as["shorten"] = short_ids(conn, result, emit_as.get("limit"))
        finally:
            conn.close()
    finally:
        readonly.close_spares()
    emit(result, **emit_as)
    return result


# --- needs-you ---------------------------------------------------------------------------------

NEEDS_KIND = {"permission_gate": "permission", "input_request": "input", "repeated_failure": "repeated failure",
              "work_conflict": "conflict"}


CONFLICTS_SHOWN = 5
"""Work conflicts the needs-you table lists before it counts the rest (--json has every row)."""

NEEDS_YOU_SQL = "90_needs_you.sql"
"""The view-and-trigger file (sql/) that creates the `needs_you` view."""


def since_text(iso: str | None) -> str:
    """When a need began, short: `09:58` within the last 24 hours (the latest 09:58: a wait
    begun at 23:50 still reads short after midnight), `12-06 17:40` earlier (local time, as the
    other summaries print it; --json has the stored value); a value that is no time, as
    terminal-safe text."""
    from ..model import clock
    from ..query import read
    if not iso:
        return "-"
    try:
        recent = 0 <= clock.now_us() - clock.from_iso(iso) < DAY_US
        return read.local_time(iso, "%H:%M" if recent else "%m-%d %H:%M")
    except (ValueError, TypeError, OverflowError, OSError):
        return read.clean(iso, 20)


DAY_US = 86_400_000_000


def _confidence(value) -> str:
    """A row's confidence, two decimals; a value that is no number, as terminal-safe text."""
    from ..query import read
    return f"{value:.2f}" if isinstance(value, (int, float)) else read.clean(value, 8)


def _evidence(value) -> list:
    """A row's evidence ids as a list (a forged view may hold any JSON there)."""
    return value if isinstance(value, list) else [] if value is None else [value]


def changed_needs_you(conn) -> str | None:
    """The warning line when the file's `needs_you` view is not the text this version installs
    (someone rewrote it: the rows it gives may be forged), else None. Only that view is compared,
    in <1 ms: the whole-schema check `attempt status` runs (store/schema_integrity) builds every
    migration in memory, ~60 ms, more than the rest of the command. SQLite keeps a view's
    CREATE statement as written, without its `;`: NEEDS_YOU_SQL ends with that one statement
    (tests/test_hostile_names.py: a freshly built file draws no warning). A file at an older
    schema version has the view its own code wrote: not compared (`attempt verify` says so)."""
    from .. import resources
    from ..store import schema
    if conn.execute("PRAGMA user_version").fetchone()[0] != schema.latest():
        return None
    have = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'needs_you' AND type = 'view'").fetchone()
    with open(os.path.join(resources.folder("sql"), NEEDS_YOU_SQL), encoding="utf-8") as f:
        text = schema.expand(f.read(), schema.predicates())
    want = text[text.find("CREATE VIEW needs_you "):].rstrip().removesuffix(";").rstrip()
    if have is None or have[0] == want:
        return None  # a missing view fails the read itself, with its own coded error
    from ..store import schema_integrity
    found = [f"view needs_you is not what sql/{NEEDS_YOU_SQL} writes"]
    return "warning: the schema: " + schema_integrity.summary(found) + "; the rows below come from it"


_PUNCT = str.maketrans("(),;:[]", "       ")


def _words(text: str | None) -> list:
    """The words of a reason, punctuation around them left out (the ids it names)."""
    return (text or "").translate(_PUNCT).split()


def _shortened(text: str, shorts: dict) -> str:
    """A reason with the ids it names in their short forms (each resolves back to its row)."""
    for w in set(_words(text)):
        if w in shorts:
            text = text.replace(w, printable(shorts[w]))
    return text


def needs_you(project, evidence, as_json, db) -> None:
    """`attempt needs-you`: the needs_you view judged now, as JSON or a table that fits."""
    from ..query import read, resolve
    from ..query.errors import AQLError
    conn, _ = open_read(db)
    try:
        ids, label = None, None
        if project:
            from ..errors import AttemptError
            try:
                if os.path.isdir(project):  # a repository directory, as the other read commands take it
                    here = resolve.project_of_directory(conn, project)
                    if here is None:
                        raise AttemptError("scope.project", f"no sessions recorded for the repository at {project}")
                    found = [here]
                else:
                    found = resolve.resolve_project(conn, project)
            except AQLError as e:
                raise AttemptError("scope.unresolved", e.message) from None
            ids, label = [pid for pid, _ in found], ", ".join(sorted({n for _, n in found}))
        changed = changed_needs_you(conn)
        data = read.needs_you(conn, ids)
        shorts = {}
        if not as_json:
            from ..query import shortids
            named = [r[k] for r in data["needs_you"] for k in ("session_id", "work_unit_id") if isinstance(r[k], str)]
            named += [w for r in data["needs_you"] for w in _words(r["reason"]) if shortids.is_id(w)]
            shorts = shortids.shorten(conn, named)
    finally:
        conn.close()
    data["project"] = label
    if changed:  # before the rows, so a forged row is never read without it
        from ..render import termtable
        echo("\n".join(termtable.prose(printable(changed), termtable.terminal_width(sys.stderr), "  ")), err=True)
    if as_json:
        echo_json(data)
        return
    rows, checked = data["needs_you"], data["checked"]
    from ..render import termtable
    plural, width = termtable.plural, termtable.terminal_width()
    where = f" in {read.clean(label, 60)}" if label else ""
    looked = (f"{plural(checked['open_sessions'], 'open session')}, "
              f"{plural(checked['open_work_units'], 'open work unit')} checked")
    if not rows:
        echo("\n".join(termtable.wrap(f"nothing needs you{where}: {looked}; no pending permission or input "
                                      "request, no repeated failure, no conflicting work", width)))
        return
    conflicts = [r for r in rows if r["kind"] == "work_conflict"]
    more = len(conflicts) - CONFLICTS_SHOWN
    total = len(rows)
    if more > 0:  # one file edited by n units is n(n-1)/2 pairs: the waits above must stay in sight
        rows = [r for r in rows if r["kind"] != "work_conflict"] + conflicts[:CONFLICTS_SHOWN]
    table = []  # every cell from the file goes through read.clean (errors.printable): a view can be forged
    for n, r in enumerate(rows, 1):
        table.append([str(n), NEEDS_KIND.get(r["kind"], read.clean(r["kind"], 20)),
                      since_text(r["since"]), read.clean(r["provider"] or "", 16), read.clean(r["session_id"]) or "-",
                      read.clean(r["work_unit_id"]) or "-", _confidence(r["confidence"]),
                      str(len(_evidence(r["evidence"]))), _shortened(read.clean(r["reason"]), shorts)])
    echo("\n".join(termtable.wrap(f"{plural(total, 'thing')} need{'s' if total == 1 else ''} "
                                  f"you{where} ({looked}):", width)))
    headers = ["#", "kind", "since", "agent", "session", "work unit", "conf", "evidence", "reason"]
    # the reason is the point: whole, wrapped, beside what fits of the rest
    lines, hidden = termtable.fit(headers, table, width, shorten={read.clean(k): printable(v) for k, v in shorts.items()},
                                  fixed=("kind",), drop_order=["evidence", "agent", "conf", "#", "since"],
                                  text_min=12, wrap="reason", wrap_min=28)
    lines += termtable.hidden_note(hidden, width)
    if more > 0:
        lines += termtable.prose(f"… and {more:,} more conflicting pair{'s' if more > 1 else ''} of open work units "
                                 f"({len(conflicts):,} in all): `attempt query \"SHOW CONFLICTS\"` lists them, "
                                 "--json prints every row", width, "  ")
    if evidence:  # then each row's evidence ids, whole (an id is never broken), wrapped to the width
        for n, r in enumerate(rows, 1):
            lines += termtable.prose(f"{n}. evidence: "
                                     + ", ".join(printable(x) for x in _evidence(r["evidence"])),
                                     width, "   ")
    echo("\n".join(lines))
    echo("\n".join(termtable.prose("note: inferences with their evidence; `attempt why <id>` explains a session "
                                    "or work unit, `attempt query \"SHOW EVIDENCE FOR <id>\"` opens it",
                                    termtable.terminal_width(sys.stderr), "  ")), err=True)
