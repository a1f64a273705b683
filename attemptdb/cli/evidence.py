"""Evidence commands (spec/evidence.md, spec/proof.md): run, snapshot, note, approve, reject,
close, artifact, prove, verify-proof. Each parses options, calls attemptdb.evidence, renders."""

import contextlib
import os
import signal
import sys

import click

from ..errors import AttemptError
from ..render.termtable import plural
from .common import db_option, echo_json, err, json_option, no_db_option, open_store, printable, say

_SESSION_HELP = ("Record into this session: a name (it is opened by its first event and stays open until "
                 "`attempt close`) or an attempt session's ses_ id. Default: $ATTEMPTDB_SESSION, else a session "
                 "of this command's own, closed when it ends.")
_KEY_HELP = "Require this signer: an id_… identity or a base64 public key (`attempt keys show`)."


def session_option(f):
    return click.option("--session", metavar="S", help=_SESSION_HELP)(f)


def _writer(st, session, source, damaged=None):
    from ..evidence.record import Writer
    return Writer(st, session=session, source=source, damaged=damaged)


def _store_to_record(db):
    """(the store a recording command writes through, the error saying the file is damaged or
    None). A damaged file (store.damaged, or store.corrupt when SQLite finds it so) is opened
    read-only: what the events need is read from it where it can be, and the events wait in the
    spool (spec/evidence.md §6), as a hook's do."""
    from .stores import write_store
    try:
        return write_store(db, create=True), None
    except AttemptError as e:
        if e.code not in ("store.damaged", "store.corrupt"):
            raise
        try:
            return open_store(db, readonly=True), e
        except Exception:  # not even readable: the file's own error says it
            raise e from None


def _say_spooled(w) -> None:
    """The one line saying where the events went when the file did not take them."""
    if w.damaged is not None:
        n = w.spooled
        err(f"warning: {plural(n, 'event')} " + ("waits" if n == 1 else "wait") + " in the spool, not in the file "
            f"(stored once attempt recover made a sound file): error[{w.damaged.code}]: {printable(w.damaged.message)}")
    elif w.spooled:
        err(f"note: the database could not be written; {plural(w.spooled, 'event')} "
            + ("waits" if w.spooled == 1 else "wait") + " in the spool")


def _finish(st, w, as_json, what, extra=None):
    """Sign what was written (as imports do), close, report."""
    from .stores import checkpoint_after_import
    if w.damaged is None:
        checkpoint_after_import(st)
    st.close()
    _say_spooled(w)
    out = {"session_id": "ses_" + w.session_id, "session": w.psid, "events": w.written, **(extra or {})}
    if as_json:
        echo_json(out)
    else:
        click.echo(f"{what} in ses_{w.session_id} ({printable(w.psid)})")


def _record(db, session, title, source, make, as_json, what, extra=None):
    """Write the events `make(writer)` returns, opening (and, for its own session, closing)
    the session around them."""
    st, damaged = _store_to_record(db)
    try:
        w = _writer(st, session, source, damaged)
        envs = [] if w.is_open() else [w.started(title)]
        envs += make(w)
        if w.own:
            envs.append(w.ended("done"))
        w.write(envs)
    except BaseException:
        st.close()
        raise
    _finish(st, w, as_json, what, extra)


class _RunCommand(click.Command):
    """`attempt run`'s own options end at `--` or at the command's first word; before that, a word
    starting with `-` that names none of them is a mistyped option (usage.unknown_option), never a
    command to run and record as failed (`attempt run --jsn -- true`)."""

    def parse_args(self, ctx, args):
        takes_value, flags = set(), set(ctx.help_option_names)
        for p in self.params:
            if isinstance(p, click.Option):
                (flags if p.is_flag else takes_value).update(p.opts + p.secondary_opts)
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            name = args[i].split("=", 1)[0]
            if name not in flags and name not in takes_value:
                raise click.NoSuchOption(name, possibilities=sorted(flags | takes_value), ctx=ctx)
            i += 2 if name in takes_value and "=" not in args[i] else 1
        return super().parse_args(ctx, args)


@click.command("run", cls=_RunCommand,
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@session_option
@click.option("--title", metavar="T", help="The session's title (content; default: the command line).")
@click.option("--attach-output", is_flag=True,
              help="Keep the output's bytes as artifacts (secrets redacted), when the capture mode allows content. "
                   "Without it only their SHA-256, size and media type are recorded.")
@click.option("-v", "--verbose", is_flag=True, help="Say on stderr what was recorded.")
@db_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def run_cmd(session, title, attach_output, verbose, db, command):
    """Run COMMAND and record it: `attempt run [OPTIONS] -- COMMAND [ARGS…]`.

    stdin, stdout and stderr are the command's own, live; the exit status is the command's
    (a command killed by a signal kills this process with the same signal). Records the run
    as a turn and an attempt of its own (a failed run stays failed whatever runs after it in
    the session): command.started / command.finished (exit code, duration, output hashes and
    artifacts) and git snapshots before and after, in a session of provider `attempt`
    (spec/evidence.md). A locked database never holds the command up: the events wait in the
    spool. Ctrl-C and SIGTERM reach the command once: sent to this process alone they are
    forwarded, sent to its process group (a terminal's Ctrl-C) they are not sent again.
    """
    from ..evidence import process, record
    # a damaged file does not stop the command (recording never holds it up): what the events
    # need is read from it read-only where it can be, and every event waits in the spool
    st, damaged = _store_to_record(db)
    try:
        w = _writer(st, session, "run", damaged)
        res = record.run(w, list(command), title=title, attach_output=attach_output)
    except BaseException:
        st.close()
        raise
    from .stores import checkpoint_after_import
    st.set_busy_timeout(record.RUN_BUSY_S)  # a locked file is signed by the next command instead
    if w.damaged is None:  # (found damaged during the run too: nothing is signed on it)
        checkpoint_after_import(st)
    st.close()
    ex = res.exit
    if ex.error is not None:
        err(f"attempt: {_shown_name(command[0])}: {printable(ex.error)}")
    for n in res.notes:
        err(f"note: {printable(n)}")
    _say_spooled(w)
    for stream, number in sorted(ex.undelivered.items()):
        _say_undelivered(stream, number)
    status = res.exit_status or (1 if ex.undelivered else 0)  # the command's failure, else ours
    if verbose:
        arts = ", ".join(f"{k} {v}" for k, v in res.artifacts.items()) or "no output"
        err(f"attempt: recorded in ses_{w.session_id}: exit {res.exit_status}, {arts}")
    for stream in (sys.stdout, sys.stderr):  # None when the caller closed it (`>&-`)
        if stream is not None:
            stream.flush()
    process.restore_signals(ex.mask)
    if ex.signal is not None:  # die the way the command died, so a shell or CI sees the signal
        try:
            signal.signal(ex.signal, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL, SIGSTOP: no handler to reset
            pass
        try:
            os.kill(os.getpid(), ex.signal)
        except OSError:
            pass
    sys.exit(status)


def _shown_name(name: str) -> str:
    """A command name as a message shows it: `''` when empty, bytes that are not UTF-8 (a
    shell's, surrogate-escaped) as `?` like control characters (errors.printable)."""
    if not name:
        return "''"
    return printable(os.fsencode(name).decode("utf-8", "replace").replace("\ufffd", "?"))


def _say_undelivered(stream: str, number: int) -> None:
    """The one line saying a stream of the command could not be passed on to ours (on stderr,
    when stderr is what still works)."""
    why = os.strerror(number)
    try:
        err(str(AttemptError("output.unwritable", f"cannot write the command's {stream}: {why} (the run is "
                             "recorded, with its output's SHA-256 and size)")))
    except (OSError, ValueError):  # stderr is what failed (or is closed): the exit status says it
        pass


@click.command("snapshot")
@session_option
@click.option("--title", metavar="T", help="The session's title when this opens it.")
@db_option
@json_option
def snapshot_cmd(session, title, db, as_json):
    """Record a git snapshot of this repository: HEAD, branch, dirty, and the hashes of the
    staged diff, the unstaged diff and the sorted untracked files (spec/evidence.md §4)."""
    from ..evidence import gitsnap
    from ..ingest import redaction
    try:
        here = os.getcwd()
    except FileNotFoundError:
        raise AttemptError("snapshot.not_git", "the working directory was deleted: no repository to snapshot",
                           exit_status=1) from None
    snap = gitsnap.take(here)  # outside a repository: nothing is written
    snap = redaction.redact_value(dict(snap))  # what is stored (and so printed): a branch may hold a token
    _record(db, session, title, "snapshot", lambda w: [w.snapshot("manual", snap)], as_json,
            f"snapshot of {printable(snap['root'])} at {snap['head'] or 'no commit'}"
            f"{' (dirty)' if snap['dirty'] else ''}", {"snapshot": dict(snap)})


@click.command("note")
@click.argument("text")
@session_option
@click.option("--title", metavar="T", help="The session's title when this opens it.")
@db_option
@json_option
def note_cmd(text, session, title, db, as_json):
    """Record a note (session.note_added). The text is content: under metadata_only only
    its length is kept."""
    _record(db, session, title, "note", lambda w: [w.note(text)], as_json, "note recorded")


def _approval(approved):
    verb = "approve" if approved else "reject"

    @click.command(verb)
    @click.argument("subject")
    @click.option("--note", metavar="TEXT", help="Why (content).")
    @session_option
    @click.option("--title", metavar="T", help="The session's title when this opens it.")
    @db_option
    @json_option
    def cmd(subject, note, session, title, db, as_json):
        _record(db, session, title, verb, lambda w: [w.approval(subject, approved, note)], as_json,
                f"{'approval' if approved else 'rejection'} recorded")

    cmd.help = (f"Record that SUBJECT (generated work: a migration, a pull request, a plan) was "
                f"{'approved' if approved else 'rejected'} (ai.approval). SUBJECT and --note are content.")
    return cmd


approve_cmd = _approval(True)
reject_cmd = _approval(False)


@click.command("close")
@session_option
@click.option("--reason", default="closed", show_default=True, metavar="R", help="Why (a short token).")
@db_option
@json_option
def close_cmd(session, reason, db, as_json):
    """Close a named session (session.stopped)."""
    from ..adapters.draft import token
    from ..evidence.record import SESSION_ENV
    if not (session or os.environ.get(SESSION_ENV)):
        raise AttemptError("session.none", f"which session? pass --session S (or set {SESSION_ENV})")
    if not token(reason):
        raise click.BadParameter("a short token (letters, digits, _ - . :)", param_hint="--reason")
    st = open_store(db, create=False)
    try:
        w = _writer(st, session, "close")
        if not w.is_open():
            raise AttemptError("session.not_open", f"session {printable(w.psid)} is not open", exit_status=1)
        w.write([w.ended(reason)])
    except BaseException:
        st.close()
        raise
    _finish(st, w, as_json, "closed")


def _show(out, text: str) -> bool:
    """Write `text` to a terminal as printable lines; whether anything was shown otherwise."""
    safe = printable(text, lines=True)
    out.write(safe.encode("utf-8"))
    return safe != text or "\ufffd" in text


@click.command("artifact")
@click.argument("artifact_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the bytes to FILE (default: stdout).")
@click.option("--info", is_flag=True, help="Print the artifact's metadata instead of its bytes.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists (only once the bytes are checked).")
@db_option
@json_option
def artifact_cmd(artifact_id, output, info, force, db, as_json):
    """An artifact's bytes (checked against its SHA-256 as they stream), or its metadata. ART is
    a full or short id (art_ and at least 8 hex digits). To a terminal the bytes are shown as text,
    control characters as `?`; a file or pipe gets them exact."""
    import codecs
    import hashlib
    import stat
    import tempfile

    from ..evidence import artifacts
    from .stores import read_store
    st = read_store(db, readonly=True)
    try:
        aid = artifacts.resolve(st.conn, artifact_id)
        meta = artifacts.row(st.conn, aid)
        if meta is None:
            meta = artifacts.named_by(st.conn, aid)
            if meta is None:
                raise AttemptError("artifact.unknown", "no such artifact in this file", exit_status=1)
            if not (info or as_json):
                raise AttemptError("artifact.not_stored", f"{meta['artifact_id']}: its bytes are not stored in "
                                   f"this file; event {meta['named_by']} names it (its bytes were not kept "
                                   "when recorded, or came without them in a bundle or sync: --info shows "
                                   "what the event says)", exit_status=1)
        if info or as_json:
            if as_json:
                echo_json(meta)
            else:
                for k, v in meta.items():  # booleans as the README prints them: true / false
                    click.echo(f"{k:<12}{('true' if v else 'false') if isinstance(v, bool) else 'unknown' if v is None else printable(v)}")
            return
        digest, n = hashlib.sha256(), 0
        if not output and sys.stdout is None:  # the caller closed it (`>&-`)
            raise AttemptError("artifact.unwritable", "cannot write stdout: it is closed")
        if output and os.path.lexists(output) and not force:
            raise AttemptError("artifact.exists", f"{printable(output)} exists; pass --force to replace it")
        if output and os.path.exists(output) and not stat.S_ISREG(os.stat(output).st_mode):  # a rename would replace it
            raise AttemptError("artifact.unwritable", f"cannot write {printable(output)}: not a regular file "
                               "(without -o the bytes go to standard output)")
        try:  # a file gets the bytes through a temporary file beside it, renamed once they are checked
            out = (tempfile.NamedTemporaryFile(dir=os.path.dirname(os.path.abspath(output)), prefix=".attempt-artifact-",
                                               delete=False) if output else sys.stdout.buffer)
        except OSError as e:
            raise AttemptError("artifact.unwritable", f"cannot write {printable(output)}: {e.strerror}") from None
        # to a terminal the bytes are shown as text, controls as `?` (an artifact is hostile input:
        # an escape sequence in it must not reach the terminal); a file or a pipe gets them exact
        shown = None if output or not out.isatty() else codecs.getincrementaldecoder("utf-8")("replace")
        changed, done = False, False
        try:
            for chunk in artifacts.read_chunks(st.conn, meta["artifact_id"]):
                digest.update(chunk)
                n += len(chunk)
                if n > meta["size_bytes"]:  # more than it holds (a decompression bomb): stop here
                    break
                try:
                    if shown is None:
                        out.write(chunk)
                        continue
                    changed = _show(out, shown.decode(chunk)) or changed
                except BrokenPipeError:
                    raise
                except OSError as e:  # a full disk under standard output (a file: its own error below)
                    if output:
                        raise
                    raise AttemptError("output.unwritable", f"cannot write the output: {e.strerror or e}") from None
            if n > meta["size_bytes"] or digest.hexdigest() != meta["sha256"] or n != meta["size_bytes"]:
                raise AttemptError("artifact.changed", "the stored bytes do not match the artifact's SHA-256",
                                   exit_status=1)
            if shown is not None:
                changed = _show(out, shown.decode(b"", final=True)) or changed
            done = True
        finally:
            if output:
                out.close()
                try:
                    if done:  # the mode a new file gets (the temporary file is private until then)
                        mask = os.umask(0o22)
                        os.umask(mask)
                        os.chmod(out.name, 0o666 & ~mask)
                        os.replace(out.name, output)
                except OSError as e:
                    done = False
                    raise AttemptError("artifact.unwritable",
                                       f"cannot write {printable(output)}: {e.strerror}") from None
                finally:
                    if not done:  # bytes that are not the artifact's are not left behind as if they were
                        with contextlib.suppress(OSError):
                            os.unlink(out.name)
            else:
                try:
                    out.flush()
                except BrokenPipeError:
                    raise
                except OSError as e:
                    raise AttemptError("output.unwritable", f"cannot write the output: {e.strerror or e}") from None
        if changed:
            click.echo("note: shown for a terminal, with control characters and bytes that are not UTF-8 "
                       "as ? or \ufffd; -o FILE or a pipe gets the exact bytes", err=True)
    finally:
        st.close()


@click.command("prove")
@click.argument("event_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the proof to FILE (default: stdout).")
@click.option("--include-content", is_flag=True,
              help="Disclose the event as stored (prompt, command, output…); by default its content is left out.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@db_option
def prove_cmd(event_id, output, include_content, force, db):
    """Write an RFC 9162 inclusion proof of one event against the newest signed checkpoint
    (spec/proof.md): the event line, its leaf index, the path and the signed note. Anyone can
    check it with `attempt verify-proof`, with no database."""
    import json

    from ..integrity import proof
    from .stores import read_store
    st = read_store(db, key=True)  # signs the head first when the chain grew
    try:
        doc = proof.prove(st, event_id, include_content=include_content)
    finally:
        st.close()
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    if os.path.lexists(output) and not force:
        raise AttemptError("prove.exists", f"{printable(output)} exists; pass --force to replace it")
    _write_proof(output, text.encode("utf-8"))
    say(f"proof of ev_{json.loads(doc['event']['line'])['event_id']} (leaf "
        f"{doc['inclusion']['leaf_index']:,} of {doc['inclusion']['tree_size']:,}) written to {output}",
        err=True, paths=(output,))


def _write_proof(output: str, data: bytes) -> None:
    """`data` as the file `output`, whole or not at all: written to a temporary file beside it,
    synced, given the mode a new file gets, then renamed over it (a symlink at `output` is
    replaced, never written through). An OSError (no such folder, a full disk) is
    `prove.unwritable`, and the temporary file is removed; so is an `output` that is there and
    not a regular file (a device, a FIFO: a rename would put a file in its place)."""
    import stat
    import tempfile
    tmp = None
    try:
        if os.path.exists(output) and not stat.S_ISREG(os.stat(output).st_mode):
            raise AttemptError("prove.unwritable", f"cannot write {printable(output)}: not a regular file (the proof "
                               "is written whole, to a file; without -o it goes to standard output); nothing was written")
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(output)), prefix=".attempt-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0o22)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, output)
    except OSError as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise AttemptError("prove.unwritable", f"cannot write {printable(output)}: {e.strerror or e}; nothing was "
                           "written") from None


@click.command("verify-proof")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--key", metavar="ID", help=_KEY_HELP)
@json_option
@no_db_option("it checks the proof FILE alone, offline, against the signed checkpoint it carries")
def verify_proof_cmd(file, key, as_json):
    """Check an inclusion proof offline: the signed checkpoint, the event line, the path to
    the signed Merkle tree head. `ok: …` (exit 0) or `problem[code]: …` (exit 1). Needs no
    database."""
    import stat

    from ..integrity import keys, proof
    if key is not None:
        key = keys.parse_pin(key)[0]
    try:
        if file == "-":
            data = sys.stdin.buffer.read(proof.MAX_BYTES + 1)
        else:
            with open(file, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # a FIFO would block, a device never end
                    raise AttemptError("proof.unreadable", f"cannot read {printable(file)}: not a regular file "
                                       "(`-` reads standard input)")
                data = f.read(proof.MAX_BYTES + 1)
    except OSError as e:
        raise AttemptError("proof.unreadable", f"cannot read {printable(file)}: {e.strerror}") from None
    rep = proof.verify(data, key=key)
    if as_json:
        echo_json(rep.as_dict())
    else:
        say(rep.line(), fg="green" if rep.ok else "red")
        for n in rep.notes:
            say(f"note: {n}", err=True)
    sys.exit(0 if rep.ok else 1)
