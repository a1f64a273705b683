"""Core commands: init, capture (help), verify, checkpoint, keys, conformance, import, events,
demo. Each parses options, calls the library, renders; nothing else."""

import os
import sys

import click

from .. import clock, ids, location
from ..errors import AttemptError
from .common import db_option, db_path, echo_json, err, json_option, open_store, printable, style

def _mode(value):
    if value is None:
        return None
    from ..privacy import parse_mode
    mode = parse_mode(value)
    if mode is None:
        raise click.BadParameter("expected metadata_only, local_semantic or full_sync", param_hint="--capture-mode")
    return mode


def _ensure_key(store):
    from .. import keys
    key, created = keys.create(store.device_id)
    if store.meta("public_key") != key.public_b64:
        store.set_meta("public_key", key.public_b64)
        store.set_meta("key_id", key.identity)
    return key, created


def housekeeping(path: str, conn) -> None:
    """Before a read on a read-only connection `conn`: when the spool holds events or a
    checkpoint is due, open the file for writing just long enough to ingest and sign
    (spec/checkpoint.md). Nothing to do costs a directory listing and two indexed reads; any
    failure (read-only file, lock) leaves the read to go on."""
    from .. import checkpoint, spool
    try:
        spool.prepare()
        if not (spool.pending(path) or checkpoint.signable(conn)):
            return
        from ..store import Store
        st = Store.open(path, create=False)
        try:
            if _writable(st, path):
                spool.drain(st)
                checkpoint.maybe_checkpoint(st)
        finally:
            st.close()
    except Exception:
        pass


def _writable(st, path: str) -> bool:
    """Nothing is drained into or signed on a damaged file (attemptdb.damage): say so."""
    from .. import damage
    why = damage.refusal(st, path)
    if why is not None:
        err(printable(f"note: nothing was written to {path}: it is damaged ({why}); {damage.ADVICE}"))
        return False
    return True


def checkpoint_after_import(st) -> None:
    """An import that appended events signs the new head before it returns
    (spec/checkpoint.md); the events are stored whatever happens to the signature."""
    from .. import checkpoint
    try:
        checkpoint.maybe_checkpoint(st)
    except Exception:
        pass


def write_store(db, *, create=False, read=False):
    """Open the database for a command that appends (imports, corrections, checkpoints):
    refused with `error[store.damaged]` when the file is damaged (attemptdb.damage), since
    nothing may be written to it. `read`: a read_store (spool drained, head signed) first."""
    from .. import damage
    st = read_store(db) if read else open_store(db, create=create)
    why = None if st.readonly else damage.refusal(st, st.path)
    if why is not None:
        st.close()
        raise AttemptError("store.damaged", f"{st.path} is damaged ({why}); nothing was written: "
                           f"{damage.ADVICE}", exit_status=1)
    return st


def read_store(db, *, readonly=False, sign=True):
    """Open the database for a read command: ingest the spool first, and sign the new head
    when the chain grew (spec/checkpoint.md; `sign=False` for repair tools, which must not
    vouch for a file they are about to judge). Never creates the database."""
    from .. import checkpoint, spool
    try:
        st = open_store(db, readonly=readonly)
    except AttemptError as e:  # a full disk still reads (nothing is drained or signed)
        if e.code != "store.disk_full" or readonly:
            raise
        st = open_store(db, readonly=True)
    if not st.readonly and _writable(st, st.path):
        spool.prepare()
        try:
            spool.drain(st)
        except Exception:
            pass
        if sign:
            checkpoint.maybe_checkpoint(st)
    return st


@click.command("init")
@click.option("--local", is_flag=True,
              help="Create ./.attemptdb/attempt.db in this directory (found by walking up), with a .gitignore "
                   "that keeps it out of git; an existing .attemptdb/ you did not create here is refused.")
@click.option("--capture-mode", "capture_mode", metavar="M",
              help="metadata_only | local_semantic | full_sync (default local_semantic for a new database).")
@db_option
@json_option
def init_cmd(local, capture_mode, db, as_json):
    """Create the database and this device's identity (id and signing key)."""
    mode = _mode(capture_mode)
    if local:
        if db:
            raise click.UsageError("--local and --db name two different places; give one")
        d = os.path.abspath(location.LOCAL_DIR)
        location.prepare_local(d)  # refuses a `.attemptdb/` a repository shipped
        path = os.path.join(d, location.DB_NAME)
        location.remember_local(path)
    else:
        path = db_path(db)
    existed = os.path.exists(path)
    from ..store import Store
    st = Store.open(path, create=True, capture_mode=mode)
    if existed and mode and st.capture_mode != mode:
        st.set_meta("capture_mode", mode)
    key, _ = _ensure_key(st)
    if local:  # a database put in its place later (a `git pull` of an ignored path) is refused
        location.remember_local(path, "dev_" + st.device_id)
    from .. import spool
    spool.prepare()
    report = {"path": path, "created": not existed, "device_id": "dev_" + st.device_id,
              "capture_mode": st.capture_mode, "key_id": key.identity, "events": st.count()}
    st.close()
    if as_json:
        echo_json(report)
        return
    verb = "created" if report["created"] else "already there"
    click.echo(f"{printable(path)}: {verb}")
    click.echo(f"  device        {report['device_id']}")
    click.echo(f"  capture mode  {report['capture_mode']}")
    click.echo(f"  signing key   {report['key_id']}")
    click.echo(f"  events        {report['events']}")


@click.command("capture", context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
               add_help_option=False)
@click.argument("provider", required=False)
@click.pass_context
def capture_cmd(ctx, provider):
    """The hook entrypoint: one payload on stdin → one stored event (always exits 0).

    Run `attempt capture --help` for its options. Agents call it through the entries
    `attempt hook install` writes.
    """
    from ..capture import main
    sys.exit(main(([provider] if provider else []) + list(ctx.args)))


@click.command("verify")
@db_option
@json_option
def verify_cmd(db, as_json):
    """Recompute every hash and chain link and check every signed checkpoint, offline.

    Also checks the schema against the migrations that wrote it (a view or trigger rewritten,
    dropped or added on AttemptDB's tables). Prints `ok: N events, M checkpoints` (exit 0) or
    `problem: …` naming the first bad row (exit 1).
    """
    from ..verify import verify
    st = open_store(db, readonly=True)
    rep = verify(st)
    st.close()
    if as_json:
        echo_json(rep.as_dict())
    else:
        click.echo(style(printable(rep.line()), fg="green" if rep.ok else "red"))
        for p in rep.problems[1:6]:
            click.echo(printable(f"problem: {p['message']}"))
        for n in rep.notes:
            click.echo(printable(f"note: {n}"), err=True)
    sys.exit(0 if rep.ok else 1)


@click.command("checkpoint")
@click.option("--adopt", is_flag=True,
              help="The copy beside the key is gone (restored key, moved file): verify the whole file "
                   "and, when nothing else is wrong, sign it anew.")
@db_option
@json_option
def checkpoint_cmd(adopt, db, as_json):
    """Verify the rows since the last signature, then sign the chain head (size + head hash)
    with this device's key."""
    from .. import checkpoint
    st = write_store(db)
    _ensure_key(st)
    if adopt:
        from .. import verify
        rep = verify.verify(st)
        other = [p for p in rep.problems if p["kind"] != "checkpoint_missing"]
        if other:
            st.close()
            raise AttemptError("checkpoint.unverified", f"nothing was signed: {other[0]['message']}",
                               exit_status=1)
    cp = checkpoint.create(st, adopt=adopt)
    last = checkpoint.latest(st)
    st.close()
    if cp is None:
        out = {"created": False, "size": last[0] if last else 0}
        if as_json:
            echo_json(out)
        else:
            click.echo(f"checkpoint: unchanged (the chain has not grown since size {out['size']})"
                       if last else "checkpoint: nothing to sign (no events yet)")
        return
    if as_json:
        echo_json({"created": True, **cp.as_dict()})
    else:
        click.echo(f"checkpoint: size {cp.size}, head {cp.head[:16]}…, signed by {cp.signer}")


@click.group("keys")
def keys_group():
    """This device's Ed25519 identity (id_<fingerprint>), kept outside the database, and the
    keys pinned for other devices (`attempt sync`: trust, list, revoke)."""


@keys_group.command("init")
@db_option
@json_option
def keys_init(db, as_json):
    """Create the device's signing key if it has none (never replaces one)."""
    from .. import keys
    st = open_store(db, create=True)
    key, created = _ensure_key(st)
    path = keys.key_path(st.device_id)
    st.close()
    if as_json:
        echo_json({"key_id": key.identity, "public_key": key.public_b64, "created": created, "path": path})
    else:
        click.echo(f"{'created' if created else 'exists'}: {key.identity} ({path}, mode 0600)")


def _sync_keys():
    from .sync import keys_list, keys_revoke, keys_trust  # other devices' keys (attempt sync)
    for cmd in (keys_trust, keys_list, keys_revoke):
        keys_group.add_command(cmd)


@keys_group.command("show")
@db_option
@json_option
def keys_show(db, as_json):
    """Print the public part of the device's key."""
    from .. import keys
    st = open_store(db, readonly=True)
    key = keys.load(st.device_id)
    device = st.device_id
    st.close()
    if key is None:
        raise AttemptError("keys.missing", "this device has no signing key yet (run `attempt keys init`)", exit_status=1)
    out = {"key_id": key.identity, "algorithm": "Ed25519", "public_key": key.public_b64,
           "device_id": "dev_" + device, "path": keys.key_path(device)}
    if as_json:
        echo_json(out)
    else:
        click.echo(f"{key.identity}\nEd25519 {key.public_b64}\ndevice dev_{device}")


@click.command("conformance")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@json_option
def conformance_cmd(file, as_json):
    """Check a JSONL stream against AttemptDB Event v1 (exit 0 COMPATIBLE, 1 otherwise)."""
    from .. import conformance
    if file == "-":
        rep = conformance.check_stream(sys.stdin.buffer)
    else:
        rep = conformance.check_file(file)
    if as_json:
        echo_json(rep.as_dict())
    else:
        color = (lambda s, ok: style(s, fg="green" if ok else "red"))
        click.echo(rep.render(color))
    sys.exit(0 if rep.compatible else 1)


@click.group("import")
def import_group():
    """Bring history in: canonical Event v1 JSONL streams (`attempt events --jsonl` writes them),
    Claude Code transcripts and Codex rollouts."""


@import_group.command("jsonl")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@db_option
@json_option
def import_jsonl(file, db, as_json):
    """Append canonical Event v1 lines (idempotent; one transaction per 2,500 lines). A bad
    line (or one over 64 MiB, which is not read) stops the import: earlier batches stay stored,
    nothing of its batch is written, and running the import again after fixing it skips what
    is already stored."""
    from ..importers.jsonl import ImportReport, import_file, import_stream
    st = write_store(db, create=True)
    rep = ImportReport()
    try:
        if file == "-":
            import_stream(st, sys.stdin.buffer, report=rep)
        else:
            import_file(st, file, report=rep)
    except AttemptError as e:
        st.close()
        if rep.lines:
            raise AttemptError(e.code, f"{e.message} (stopped there: {rep.accepted:,} events of the "
                               f"lines before its batch stored, {rep.duplicates:,} already were)",
                               exit_status=e.exit_status) from None
        raise e
    checkpoint_after_import(st)
    st.close()
    if as_json:
        echo_json(rep.as_dict())
    else:
        click.echo(f"imported {rep.accepted:,} events ({rep.duplicates:,} already stored) from {rep.lines:,} lines")


@import_group.command("claude-transcripts")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--all-projects", is_flag=True, help="Every project's transcripts, not only this repository's.")
@click.option("--dry-run", is_flag=True, help="Count what would be imported; write nothing.")
@db_option
@json_option
def import_claude_cmd(paths, all_projects, dry_run, db, as_json):
    """Reconstruct history from Claude Code transcripts (~/.claude/projects/…/*.jsonl).

    PATHS: transcript files or directories; default: this repository's transcripts. Events
    carry the hooks' ids where a hook could have seen them (tool calls), so nothing is counted
    twice; prompts and turn ends a hook already stored within 10 s are skipped. Idempotent.
    """
    from ..importers import claude_transcript as ct
    files = ct.discover(paths, all_projects=all_projects, cwd=os.getcwd())
    if not files:
        where = " or ".join(ct.projects_dirs()) or "~/.claude/projects"
        raise AttemptError("import.nothing", f"no Claude Code transcripts found (looked in {where}"
                           f"{'' if all_projects else ' for this directory; --all-projects takes every project'})")
    _import_reconstructed(db, files, dry_run, as_json, ct._claude_reader, "transcripts")


@import_group.command("codex")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--days", type=click.IntRange(0, 100_000), default=30, show_default=True,
              help="Rollouts modified in the last N days (0: all); ignored with PATHS.")
@click.option("--dry-run", is_flag=True, help="Count what would be imported; write nothing.")
@db_option
@json_option
def import_codex_cmd(paths, days, dry_run, db, as_json):
    """Reconstruct history from Codex rollouts ($CODEX_HOME/sessions/…/rollout-*.jsonl).

    PATHS: rollout files or directories; default: $CODEX_HOME (~/.codex) sessions and archived
    sessions. Tool calls take the hooks' ids; idempotent.
    """
    from ..importers import codex_rollout
    files = codex_rollout.discover(paths, days=days)
    if not files:
        raise AttemptError("import.nothing", "no Codex rollouts found (looked in $CODEX_HOME or ~/.codex: "
                           f"sessions/ and archived_sessions/{f', the last {days} days' if days else ''})")
    _import_reconstructed(db, files, dry_run, as_json, codex_rollout.read, "rollouts")


def _import_reconstructed(db, files, dry_run, as_json, reader, what):
    from ..importers import claude_transcript as ct
    st = open_store(db, create=True) if dry_run else write_store(db, create=True)
    try:
        rep = ct.import_files(st, files, dry_run=dry_run, reader=reader)
        if not dry_run:
            checkpoint_after_import(st)
    finally:
        st.close()
    if as_json:
        echo_json({"dry_run": dry_run, **rep.as_dict()})
        return
    verb = "would import" if dry_run else "imported"
    click.echo(f"{verb} {rep.accepted:,} events ({rep.duplicates:,} already stored, {rep.skipped_captured:,} "
               f"captured by hooks) from {rep.files:,} {what}, {len(rep.sessions):,} sessions"
               + (f"; {rep.skipped_lines:,} unreadable lines skipped" if rep.skipped_lines else "")
               + (f"; {rep.rejected:,} events could not be stored" if rep.rejected else ""))


def scope_options(f):
    """--session, --project, --since, --until, -n: the scope flags of every read command."""
    f = click.option("-n", "--limit", type=click.IntRange(0, 10**9), default=None, metavar="N",
                     help="At most N rows (newest).")(f)
    f = click.option("--until", metavar="T", help="Up to T (RFC 3339, YYYY-MM-DD, now, -2h, …).")(f)
    f = click.option("--since", metavar="T", help="From T (RFC 3339, YYYY-MM-DD, today, -15m, -2h, -3d, -1w).")(f)
    f = click.option("--project", metavar="P", help="Project name (owner/repo), prj_ id or directory.")(f)
    f = click.option("--session", metavar="S", help="Session id (ses_…, bare or short).")(f)
    return f


def _time(flag, text):
    from ..attemptql.errors import AQLError
    from ..attemptql.resolve import resolve_time
    try:
        return resolve_time("text", text, clock.now_us())
    except AQLError:
        raise click.BadParameter("expected RFC 3339, YYYY-MM-DD, now, today or -15m/-2h/-3d/-1w",
                                 param_hint=flag) from None


def scope_where(conn, session, project, since, until, table="events", time_col="observed_at"):
    """(SQL condition, params) for the scope flags (ids, names and times resolved the way
    AttemptQL resolves them)."""
    from ..attemptql.errors import AQLError
    from ..attemptql import resolve
    conds, params = [], []
    try:
        if session:
            _, sid = resolve.resolve_id(conn, "session", session, live=False)
            conds.append(f"{table}.session_id = ?")
            params.append(sid)
        if project:
            if os.path.isdir(project):
                found = resolve.project_of_directory(conn, project)
                if found is None:
                    raise AttemptError("scope.project", f"no sessions recorded for the repository at {project}")
                pids = [found[0]]
            else:
                pids = [pid for pid, _ in resolve.resolve_project(conn, project)]
            conds.append(f"{table}.project_id IN ({','.join('?' * len(pids))})")
            params += pids
    except AQLError as e:
        raise AttemptError("scope.unresolved", e.message) from None
    if since:
        conds.append(f"{table}.{time_col} >= ?")
        params.append(clock.iso(_time("--since", since)))
    if until:
        conds.append(f"{table}.{time_col} <= ?")
        params.append(clock.iso(_time("--until", until)))
    return (" AND ".join(conds) or "1"), params


@click.command("events")
@scope_options
@click.option("--kind", metavar="K1,K2", help="Only these kinds (comma-separated).")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="Print canonical Event v1 lines (what `import jsonl` reads).")
@db_option
@json_option
def events_cmd(session, project, since, until, limit, kind, as_jsonl, db, as_json):
    """List the raw events (facts), oldest first."""
    from .. import event as ev
    st = read_store(db)
    where, params = scope_where(st.conn, session, project, since, until)
    if kind:
        kinds = [k.strip() for k in kind.split(",") if k.strip()]
        where += f" AND kind IN ({','.join('?' * len(kinds))})"
        params += kinds
    order = "seq" if as_jsonl else "observed_at, seq"
    newest = "seq DESC" if as_jsonl else "observed_at DESC, seq DESC"
    inner = f"SELECT * FROM events WHERE {where} ORDER BY {newest} LIMIT {limit}" if limit is not None else None
    cols = ", ".join(ev.COLUMNS)
    if inner:
        sql = f"SELECT {cols} FROM ({inner}) ORDER BY {order}"
    else:
        sql = f"SELECT {cols} FROM events WHERE {where} ORDER BY {order}"
    out = sys.stdout
    try:
        _print_events(st, sql, params, as_jsonl, as_json, out)
    except UnicodeDecodeError:
        from ..chain import unreadable_text
        found = unreadable_text(st.conn, 0)
        if found is None:
            raise
        raise AttemptError("events.row_unreadable", f"row seq={found[0]} ({printable(found[1])}) holds text that "
                           "is not valid UTF-8: it was edited outside AttemptDB or the file is damaged; run "
                           "`attempt verify`", exit_status=1) from None
    st.close()


def _print_events(st, sql, params, as_jsonl, as_json, out):
    from .. import event as ev
    rows = st.conn.execute(sql, params)
    if as_jsonl:
        for r in rows:
            try:
                line = ev.line_from_row(r)
            except (ValueError, TypeError, AttributeError):
                raise AttemptError("events.row_unreadable", f"row seq={_seq(st, r[0])} ({r[0]}) no longer holds "
                                   "what the writer stored; run `attempt verify`", exit_status=1) from None
            out.write(line + "\n")
    elif as_json:
        names = ev.COLUMNS
        from .. import fastjson
        out.write("[")
        first = True
        for r in rows:
            obj = dict(zip(names, r))
            obj.pop("path_objects_json", None)
            out.write(("" if first else ",") + fastjson.dumps(obj))
            first = False
        out.write("]\n")
    else:
        n = 0
        for r in rows:
            n += 1
            tool = r[31] or ""
            outcome = r[37] or ""
            if r[38]:
                outcome += "/" + r[38]
            path = r[35] or r[34] or ""
            line = (f"{r[5][:19].replace('T', ' ')}  {ids.short(r[21]):<12}  {r[8]:<11}  {r[14]:<20}  "
                    f"{tool:<14}  {outcome:<24}  {path}")
            out.write(printable(line).rstrip() + "\n")
        if n == 0:
            err("no events in this scope")


def _seq(st, event_id):
    row = st.conn.execute("SELECT seq FROM events WHERE event_id = ?", (event_id,)).fetchone()
    return row[0] if row else "?"


def this_attempt() -> str:
    """Shell words that run this same `attempt` again from the current directory: `attempt` when
    that is what PATH finds, else the script's path as it was typed (right after the Quick start
    it is only in .venv/bin), or `python -m attemptdb` when that is how it was started."""
    import shlex
    import shutil
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "__main__.py" and os.path.basename(os.path.dirname(argv0)) == "attemptdb":
        return f"{shlex.quote(sys.executable)} -m attemptdb"
    if os.path.basename(argv0) != "attempt" or not os.path.isfile(argv0):
        return "attempt"  # run from a library or a test harness: no better guess
    found = shutil.which("attempt")
    try:
        if found and os.path.samefile(found, argv0):
            return "attempt"
    except OSError:
        pass
    return shlex.quote(argv0 if os.sep in argv0 else os.path.join(os.curdir, argv0))


@click.command("demo")
@click.option("--db", "db", metavar="PATH",
              help="Demo database file (default: ./attemptdb-demo.db; never ATTEMPTDB_PATH, your own "
                   "history). A file the demo did not make is refused.")
@json_option
@click.pass_context
def demo_cmd(ctx, db, as_json):
    """Build a sample history from the bundled fixtures and show what was recorded.

    Uses a fresh database (default: ./attemptdb-demo.db) so your own history is untouched.
    """
    from ..demo import run_demo
    path = db or os.path.abspath("attemptdb-demo.db")
    report = run_demo(path, command=this_attempt())
    if as_json:
        echo_json(report)
        return
    click.echo(report["text"])
    from .projections import timeline_cmd
    click.echo("\nWhat the agents tried (attempt timeline):\n")
    ctx.invoke(timeline_cmd, db=path, session=None, project=None, since=None, until=None, limit=None,
               tools=False, show_all=False, as_json=False)


_sync_keys()
