"""Core commands: init, capture (help), verify, checkpoint, keys, conformance, import, events,
demo. Each parses options, calls the library, renders; nothing else."""

import os
import sys

import click

from ..errors import AttemptError
from ..model import ids
from ..store import location
from .common import db_option, db_path, echo_json, err, json_option, no_db_option, open_store, printable, say, style
from .scope import scope_options, scope_where
from .stores import checkpoint_after_import, ensure_key, read_store, write_store


def _mode(value):
    if value is None:
        return None
    from ..ingest.privacy import parse_mode
    mode = parse_mode(value)
    if mode is None:
        raise click.BadParameter("expected metadata_only, local_semantic or full_sync", param_hint="--capture-mode")
    return mode


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
    from ..store.database import Store
    st = Store.open(path, create=True, capture_mode=mode)
    try:  # a lost key refuses the whole command before anything is written (keys.lost)
        key, _ = ensure_key(st)
    except BaseException:
        st.close()
        raise
    if existed and mode and st.capture_mode != mode:
        st.set_meta("capture_mode", mode)
    if local:  # a database put in its place later (a `git pull` of an ignored path) is refused
        location.remember_local(path, "dev_" + st.device_id)
    from ..capture import spool
    spool.prepare()
    report = {"path": path, "created": not existed or st.created, "device_id": "dev_" + st.device_id,
              "capture_mode": st.capture_mode, "key_id": key.identity, "events": st.count()}
    st.close()
    from ..store.sidefiles import exposed
    loose = exposed(path)
    if loose:
        report["exposed"] = [{"path": f, "mode": f"{m:o}"} for f, m in loose]
    if as_json:
        echo_json(report)
        return
    verb = "created" if report["created"] else "already there"
    click.echo(f"{printable(path)}: {verb}")
    click.echo(f"  device        {report['device_id']}")
    click.echo(f"  capture mode  {report['capture_mode']}")
    click.echo(f"  signing key   {report['key_id']}")
    click.echo(f"  events        {report['events']}")
    if loose:
        from ..installer.doctor import exposed_problem
        say(f"warning: {exposed_problem(loose)}", err=True, paths=[f for f, _ in loose])


@click.command("capture", context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
               add_help_option=False)
@click.argument("provider", required=False)
@click.pass_context
def capture_cmd(ctx, provider):
    """The hook entrypoint: one payload on stdin → one stored event (always exits 0).

    Run `attempt capture --help` for its options. Agents call it through the entries
    `attempt hook install` writes.
    """
    from ..capture.hook import main
    sys.exit(main(([provider] if provider else []) + list(ctx.args)))


@click.command("verify")
@db_option
@json_option
def verify_cmd(db, as_json):
    """Recompute every hash and chain link and check every signed checkpoint, offline.

    Also checks the schema against the migrations that wrote it (a view or trigger rewritten,
    dropped or added on AttemptDB's tables). Prints `ok: N events, M checkpoints` (exit 0) or
    `problem: …` naming the first bad row (exit 1). A finding that leaves the chain intact (stored
    attrs outside today's bounds) is a `warning[kind]: …` line on stderr (exit 0).
    """
    from ..integrity.verify import in_use, unopenable, verify
    from .progress import Ticker, rate
    used = in_use(db_path(db), location.resolve(None))  # before SQLite makes a -wal and -shm
    try:
        st = open_store(db, readonly=True)
    except AttemptError as e:  # a file SQLite cannot open may be a damaged AttemptDB: say so (spec/recover.md)
        rep = unopenable(db_path(db), e.code, used)
        if rep is None:
            raise
        st = tick = None
    if st is not None:
        with Ticker("verifying", quiet=as_json) as tick:
            rep = verify(st)
        st.close()
    if rep.events:
        from ..render.termtable import plural
        tick.done(f"verified {plural(rep.events, 'event', grouped=True)} {rate(rep.events, tick.seconds)}")
    if as_json:
        echo_json(rep.as_dict())
    else:
        say(rep.line(), fg="green" if rep.ok else "red")
        for p in rep.problems[1:6]:
            say(f"problem: {p['message']}")
        for w in rep.warnings:  # a coded line, as an error is: one line
            click.echo(printable(f"warning[{w['kind']}]: {w['message']}"), err=True)
        for n in rep.notes:
            say(f"note: {n}", err=True)
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
    from ..integrity import checkpoint
    st = write_store(db)
    ensure_key(st)
    if adopt:
        from ..integrity import verify
        rep = verify.verify(st)
        other = [p for p in rep.problems if p["kind"] != "checkpoint_missing"]
        if other:
            st.close()
            raise AttemptError("checkpoint.unverified", f"nothing was signed: {other[0]['message']}",
                               exit_status=1)
    cp = checkpoint.create(st, adopt=adopt)
    # nothing new to sign: an adopted file's newest checkpoint is the copy beside the key again
    restored = checkpoint.restore_outside(st) if adopt and cp is None else None
    last = checkpoint.latest(st)
    st.close()
    if cp is None:
        out = {"created": False, "size": last[0] if last else 0, "restored_outside": restored is not None}
        if as_json:
            echo_json(out)
        else:
            click.echo(f"checkpoint: unchanged (the chain has not grown since size {out['size']})"
                       if last else "checkpoint: nothing to sign (no events yet)")
            if restored is not None:
                click.echo(f"checkpoint: the copy beside the key is the newest checkpoint again (size {restored.size})")
        return
    if as_json:
        echo_json({"created": True, **cp.as_dict()})
    else:
        say(f"checkpoint: size {cp.size}, head {cp.head[:16]}…, signed by {cp.signer}")


@click.group("keys")
def keys_group():
    """This device's Ed25519 identity (id_<fingerprint>), kept outside the database, and the
    keys pinned for other devices (`attempt sync`: trust, list, revoke)."""


@keys_group.command("init")
@click.option("--replace-lost", "replace_lost", is_flag=True,
              help="The database's key file is truly gone (no backup): make a new key and record in the "
                   "file that it replaced the lost one (its old checkpoints keep verifying). Other devices "
                   "must then `attempt keys trust` the new key.")
@db_option
@json_option
def keys_init(replace_lost, db, as_json):
    """Create the device's signing key if the database never had one (never replaces one).

    A database whose key file is missing is refused (`keys.lost`): restore the file from a
    backup; only when it is truly gone, `--replace-lost` starts a new identity.
    """
    from ..integrity import keys
    st = open_store(db, create=True)
    replaced = None
    try:
        try:
            key, created = ensure_key(st)
        except AttemptError as e:
            if e.code != "keys.lost" or not replace_lost:
                raise
            key, replaced = keys.replace_lost(st)
            created = True
        device = st.device_id
        signed = st.conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchone() is not None
    finally:
        st.close()
    path = keys.key_path(device)
    from ..integrity import checkpoint
    outside_gone = signed and not os.path.exists(checkpoint.outside_path(device))
    if as_json:
        out = {"key_id": key.identity, "public_key": key.public_b64, "created": created, "path": path}
        if replaced is not None:
            out["replaced"] = {"key_ids": [k for k, _ in replaced.old], "time": replaced.time,
                               "upto": replaced.upto, "device_id": "dev_" + device,
                               "checkpoint_adopt_needed": outside_gone}
        echo_json(out)
        return
    if replaced is None:
        click.echo(f"{'created' if created else 'exists'}: {key.identity} ({path}, mode 0600)")
        return
    olds = ", ".join(k for k, _ in replaced.old) or "a key whose id the file did not record"
    # (each path last, a word of its own: wider than a line, it then stands alone, to copy)
    say(f"replaced: {key.identity} is this database's signing key from now on; it replaces the lost key "
        f"{olds}; key file (mode 0600): {path}", paths=(path,))
    say(f"  recorded in the file and beside the key: checkpoints the old key signed over the first "
        f"{replaced.upto:,} rows still verify against its recorded public key; the record beside the key: "
        f"{keys.replaced_path(device)}", paths=(keys.replaced_path(device),), indent="    ")
    if outside_gone:
        say("  next: `attempt checkpoint --adopt` verifies the whole file and signs it with the new key "
            "(the checkpoint copy kept beside the key is gone too)", indent="    ")
    say(f"  other devices that sync with this one refuse its new segments until you run there: "
        f"`attempt keys trust dev_{device} {key.identity}`", indent="    ")


def _sync_keys():
    from .sync import keys_list, keys_revoke, keys_trust  # other devices' keys (attempt sync)
    for cmd in (keys_trust, keys_list, keys_revoke):
        keys_group.add_command(cmd)


@keys_group.command("show")
@db_option
@json_option
def keys_show(db, as_json):
    """Print the public part of the device's key."""
    from ..integrity import keys
    st = open_store(db, readonly=True)
    try:  # a lost or wrong key file is reported with the way back, never `keys init`
        key, _ = keys.signing_key(st)
        device = st.device_id
    finally:
        st.close()
    if key is None:
        raise AttemptError("keys.missing", "this device has no signing key yet (run `attempt keys init`)", exit_status=1)
    out = {"key_id": key.identity, "algorithm": "Ed25519", "public_key": key.public_b64,
           "device_id": "dev_" + device, "path": keys.key_path(device),
           "replaced": [{"key_id": k.identity, "time": k.replaced_at, "upto": k.upto} for k in key.previous]}
    if as_json:
        echo_json(out)
    else:
        click.echo(f"{key.identity}\nEd25519 {key.public_b64}\ndevice dev_{device}")
        for k in out["replaced"]:
            click.echo(f"replaces {k['key_id']} (lost; replaced {printable(k['time'])}, its checkpoints count up to "
                       f"{k['upto']:,} rows)")


@click.command("conformance")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@json_option
@no_db_option("it checks the JSONL stream FILE alone (`import jsonl` stores one)")
def conformance_cmd(file, as_json):
    """Check a JSONL stream against AttemptDB Event v1 (exit 0 COMPATIBLE, 1 otherwise)."""
    from ..exchange import conformance
    if file == "-":
        rep = conformance.check_stream(sys.stdin.buffer)
    else:
        rep = conformance.check_file(file)
    if as_json:
        echo_json(rep.as_dict())
    else:
        color = (lambda s, ok: style(s, fg="green" if ok else "red"))
        from ..render.termtable import terminal_width
        click.echo(rep.render(color, terminal_width()))
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
    from ..exchange.importers.jsonl import ImportReport, import_file, import_stream
    from .progress import Progress, count_lines
    st = write_store(db, create=True)
    rep = ImportReport()
    bar = Progress("importing", quiet=as_json)
    if bar.enabled and file != "-":
        bar.set_total(count_lines(file))
    try:
        if file == "-":
            import_stream(st, sys.stdin.buffer, report=rep, progress=bar.update)
        else:
            import_file(st, file, report=rep, progress=bar.update)
    except AttemptError as e:
        bar.close()
        st.close()
        if e.code == "import.bad_line" and file != "-":  # a transcript or rollout given here: say so
            from ..exchange.importers import formats
            looks = formats.looks_like(file, formats.EVENT_V1)
            if looks is not None:
                e = AttemptError(e.code, f"{e.message}; {formats.hint(looks)}", exit_status=e.exit_status)
        if rep.lines:
            raise AttemptError(e.code, f"{e.message} (stopped there: {rep.accepted:,} event{'' if rep.accepted == 1 else 's'} of the "
                               f"lines before its batch stored, {rep.duplicates:,} already were)",
                               exit_status=e.exit_status) from None
        raise e
    checkpoint_after_import(st)
    st.close()
    bar.close()
    if as_json:
        echo_json(rep.as_dict())
    else:
        from ..render.termtable import plural
        click.echo(f"imported {plural(rep.accepted, 'event', grouped=True)} ({rep.duplicates:,} already stored) from "
                   f"{plural(rep.lines, 'line', grouped=True)} "
                   f"{bar.rate(rep.lines, 'events')}")
    if rep.conflicts:
        raise conflicting_events(rep.conflicts)


def conflicting_events(ids: list[str]) -> AttemptError:
    """The error of `import jsonl` lines that carry a stored event's id with other content: not
    stored, the stored events kept (a bundle import notes them; a sync pull refuses the segment,
    sync.conflict)."""
    n = len(ids)
    shown = ", ".join("ev_" + i for i in ids[:3]) + (f" and {n - 3:,} more" if n > 3 else "")
    return AttemptError("import.conflicting_events",
                        f"{n:,} event{' differs' if n == 1 else 's differ'} from the one stored under "
                        f"{'its' if n == 1 else 'their'} id ({shown}): not imported, the stored "
                        f"event{'' if n == 1 else 's'} kept (`attempt events --jsonl` shows what is stored)",
                        exit_status=1)


@import_group.command("claude-transcripts")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--all-projects", is_flag=True, help="Every project's transcripts, not only this repository's.")
@click.option("--dry-run", is_flag=True, help="Count what would be imported; write nothing.")
@click.option("--finished", is_flag=True,
              help="Every file is finished: import what its end decides too, even of a file written to in the "
                   "last 10 min (copied files are new; a session still writing would be frozen as it stands).")
@db_option
@json_option
def import_claude_cmd(paths, all_projects, dry_run, finished, db, as_json):
    """Reconstruct history from Claude Code transcripts (~/.claude/projects/…/*.jsonl).

    PATHS: transcript files or directories; default: this repository's transcripts. Events
    carry the hooks' ids where a hook could have seen them (tool calls), so nothing is counted
    twice; prompts and turn ends a hook already stored within 10 s are skipped. Idempotent.
    """
    from ..exchange.importers import claude_transcript as ct
    files = ct.discover(paths, all_projects=all_projects, cwd=os.getcwd())
    if not files:
        if paths:
            raise AttemptError("import.nothing", f"no Claude Code transcripts found ({_looked_in(paths)})")
        where = " or ".join(ct.projects_dirs()) or "~/.claude/projects"
        raise AttemptError("import.nothing", f"no Claude Code transcripts found (looked in {where}"
                           f"{'' if all_projects else ' for this directory; --all-projects takes every project'})")
    _import_reconstructed(db, files, dry_run, finished, as_json, ct.claude_reader, "transcripts", "claude_code",
                          paths)


@import_group.command("codex")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--days", type=click.IntRange(0, 100_000), default=30, show_default=True,
              help="Rollouts modified in the last N days (0: all); ignored with PATHS.")
@click.option("--dry-run", is_flag=True, help="Count what would be imported; write nothing.")
@click.option("--finished", is_flag=True,
              help="Every file is finished: import what its end decides too, even of a file written to in the "
                   "last 10 min (copied files are new; a session still writing would be frozen as it stands).")
@db_option
@json_option
def import_codex_cmd(paths, days, dry_run, finished, db, as_json):
    """Reconstruct history from Codex rollouts ($CODEX_HOME/sessions/…/rollout-*.jsonl).

    PATHS: rollout files or directories; default: $CODEX_HOME (~/.codex) sessions and archived
    sessions. Tool calls take the hooks' ids; idempotent.
    """
    from ..exchange.importers import codex_rollout
    files = codex_rollout.discover(paths, days=days)
    if not files:
        if paths:
            raise AttemptError("import.nothing", f"no Codex rollouts found ({_looked_in(paths)})")
        raise AttemptError("import.nothing", "no Codex rollouts found (looked in $CODEX_HOME or ~/.codex: "
                           f"sessions/ and archived_sessions/{f', the last {days} days' if days else ''})")
    _import_reconstructed(db, files, dry_run, finished, as_json, codex_rollout.read, "rollouts", "codex", paths)


def _looked_in(paths) -> str:
    """`looked for *.jsonl files in A, B and 2 more`: where an import given PATHS searched."""
    shown = ", ".join(paths[:3])
    return f"looked for *.jsonl files in {shown}" + (f" and {len(paths) - 3:,} more" if len(paths) > 3 else "")


def _import_reconstructed(db, files, dry_run, finished, as_json, reader, what, fmt, paths):
    """Import reconstructed history; files of another format are refused when named in PATHS
    (error[import.wrong_format], nothing written), and skipped and reported when found."""
    from ..exchange.importers import base
    from .progress import Progress
    named = [p for p in paths if os.path.isfile(p)]
    st = open_store(db, create=True) if dry_run else write_store(db, create=True)
    bar = Progress(f"reading {what}", len(files), unit=what, quiet=as_json)
    try:
        rep = base.import_files(st, files, dry_run=dry_run, reader=reader, fmt=fmt, named=named,
                                progress=bar.update, finished=finished)
        if not dry_run:
            checkpoint_after_import(st)
    finally:
        bar.close()
        st.close()
    if as_json:
        echo_json({"dry_run": dry_run, **rep.as_dict()})
        return
    from ..exchange.importers import formats
    from ..render.termtable import plural
    verb = "would import" if dry_run else "imported"
    click.echo(f"{verb} {plural(rep.accepted, 'event', grouped=True)} ({rep.duplicates:,} already stored, {rep.skipped_captured:,} "
               f"captured by hooks) from {plural(rep.files, what[:-1], what)}, {plural(len(rep.sessions), 'session')} "
               f"{bar.rate(rep.events, 'events')}"
               + (f"; {plural(rep.skipped_lines, 'unreadable line')} skipped ({_where(rep)})" if rep.skipped_lines else "")
               + (f"; {plural(rep.rejected, 'event')} could not be stored" if rep.rejected else "")
               + (f"; {plural(rep.held_back, 'event')} held back from {plural(rep.held_back_files, what[:-1], what)} "
                  f"written to in the last {base.LIVE_S // 60} min (the end of a file still being written may change; "
                  "the next import takes them; --finished takes them now)" if rep.held_back else "")
               + (f"; {plural(len(rep.wrong_format), 'file')} skipped, not {what}: {formats.brief(rep.wrong_format)}"
                  if rep.wrong_format else "")
               + (f"; {plural(len(rep.unreadable), 'file')} skipped, unreadable: "
                  + ", ".join(f"{printable(f)} ({why})" for f, why in rep.unreadable[:3])
                  + (f", and {len(rep.unreadable) - 3:,} more" if len(rep.unreadable) > 3 else "")
                  if rep.unreadable else ""))


def _where(rep) -> str:
    """`a.jsonl line 3, b.jsonl line 7, and 4 more`: the unreadable lines an import skipped."""
    named = [f"{printable(path)} line {n}" for path, n in rep.skipped_where]
    more = rep.skipped_lines - len(named)
    return ", ".join(named) + (f", and {more:,} more" if more > 0 else "")


@click.command("events")
@scope_options
@click.option("--kind", metavar="K1,K2", help="Only these kinds (comma-separated).")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="Print canonical Event v1 lines (what `import jsonl` reads).")
@db_option
@json_option
def events_cmd(session, project, since, until, limit, kind, as_jsonl, db, as_json):
    """List the raw events (facts), oldest first."""
    from ..model import event as ev
    st = read_store(db)
    where, params = scope_where(st.conn, session, project, since, until)
    if kind:
        kinds = [k.strip() for k in kind.split(",") if k.strip()]
        unknown = [k for k in kinds if k not in ev.KINDS]
        if unknown:
            import difflib
            near = difflib.get_close_matches(unknown[0], ev.KINDS, n=1)
            raise AttemptError("usage.bad_value", f"--kind: {printable(unknown[0])} is no event kind"
                               + (f" (did you mean {near[0]}?)" if near else "") + "; the kinds: " + ", ".join(ev.KINDS))
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
        from ..integrity.chain import unreadable_text
        found = unreadable_text(st.conn, 0)
        if found is None:
            raise
        raise AttemptError("events.row_unreadable", f"row seq={found[0]} ({printable(found[1])}) holds text that "
                           "is not valid UTF-8: it was edited outside AttemptDB or the file is damaged; run "
                           "`attempt verify`", exit_status=1) from None
    st.close()


def _print_events(st, sql, params, as_jsonl, as_json, out):
    from ..model import event as ev
    from ..render import jsonterm
    rows = st.conn.execute(sql, params)
    # JSON to a terminal: C1 and disguising characters as \u escapes, the same values to a parser
    shown = jsonterm.escaped if (as_jsonl or as_json) and jsonterm.is_terminal(out) else str
    if as_jsonl:
        for r in rows:
            try:
                line = ev.line_from_row(r)
            except (ValueError, TypeError, AttributeError):
                raise AttemptError("events.row_unreadable", f"row seq={_seq(st, r[0])} ({r[0]}) no longer holds "
                                   "what the writer stored; run `attempt verify`", exit_status=1) from None
            out.write(shown(line) + "\n")
    elif as_json:
        names = ev.COLUMNS
        from ..model import fastjson
        out.write("[")
        first = True
        from ..model import payload
        for r in rows:
            obj = dict(zip(names, r))
            obj.pop("path_objects_json", None)
            try:  # the payload, not its stored form
                obj["raw_json"] = payload.expand(obj["raw_json"], obj["content_json"], [obj[f] for f in payload.FIELDS])
            except (ValueError, TypeError):
                raise AttemptError("events.row_unreadable", f"row seq={_seq(st, r[0])} ({r[0]}) no longer holds "
                                   "what the writer stored; run `attempt verify`", exit_status=1) from None
            out.write(("" if first else ",") + shown(fastjson.dumps(obj)))
            first = False
        out.write("]\n")
    else:
        _print_event_table(rows, out)


EVENT_HEADERS = ["time", "session", "agent", "kind", "tool", "outcome", "path"]
RECORDED_BY_HAND = "attempt"
"""The provider of what people and CI record (spec/evidence.md): its events show their seed-001
name (ai.approval, session.note_added, git.snapshot, run.started …) where an agent's show the
tool, and an approval its verdict as the outcome."""


def _verdict(attrs_json) -> str:
    from ..model import fastjson
    try:
        approved = fastjson.loads(attrs_json or "{}").get("x_attempt_approved")
    except (ValueError, AttributeError):
        return ""
    return {True: "approved", False: "rejected"}.get(approved, "")
BATCH = 500
"""The table is fitted to the first BATCH events; the rest follow in the same columns (a
history of a million events is printed as it is read, never held whole)."""


def _print_event_table(rows, out):
    """One line per event under a header, fitted to the terminal: the time, the session, the
    kind and the outcome (`failure/nonzero_exit`) are kept whole; the agent (its session says
    which), then the path, then the tool give way first, named in a note."""
    import itertools

    from ..model import event as ev
    from ..query.read import local_time  # local, as timeline, failures and needs-you print times
    from ..render import termtable
    width = termtable.terminal_width()

    def cells(row):
        r = dict(zip(ev.COLUMNS, row))
        outcome = r["outcome_status"] or ""
        if r["outcome_class"]:
            outcome += "/" + r["outcome_class"]
        tool = r["tool_name"] or ""
        if not tool and r["provider"] == RECORDED_BY_HAND:  # what `attempt run|note|approve|snapshot` recorded
            tool = r["provider_event_name"] or ""
            if tool == "ai.approval" and not outcome:
                outcome = _verdict(r["attrs_json"])
        return [printable(x) for x in (local_time(r["observed_at"], "%Y-%m-%d %H:%M:%S"), ids.short(r["session_id"]),
                                       r["provider"], r["kind"], tool, outcome,
                                       r["path_relative"] or r["path_logical"] or "")]
    first = [cells(r) for r in itertools.islice(rows, BATCH)]
    if not first:
        err("no events in this scope")
        return
    lines, hidden = termtable.fit(EVENT_HEADERS, first, width, fixed=("kind", "outcome"),
                                   drop_order=["agent", "path", "tool"])
    out.write("\n".join(lines) + "\n")
    keep = [k for k, h in enumerate(EVENT_HEADERS) if h not in hidden]
    widths = [len(x) for x in lines[1].split("  ")]
    for row in rows:
        c = cells(row)
        out.write("  ".join(termtable.pad(termtable.clip(c[k], w), w) for k, w in zip(keep, widths)).rstrip() + "\n")
    note = termtable.hidden_note(hidden, width)
    if note:
        out.write("\n".join(note) + "\n")


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
    from ..devtools.demo import run_demo
    path = db or os.path.abspath("attemptdb-demo.db")
    report = run_demo(path, command=this_attempt())
    if as_json:
        echo_json(report)
        return
    # the report names the database's path (by default in the working directory: a repository's
    # name, which can hold anything): each line shown through the commands' rule
    first, *rest = report["text"].split("\n")
    say(first, paths=(path,))  # wrapped to the terminal, the path whole
    click.echo("\n".join(printable(line) for line in rest))
    from .projections import print_timeline
    click.echo("\nWhat the agents tried (attempt timeline):\n")
    print_timeline(path)


_sync_keys()
