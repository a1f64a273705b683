"""Recording what a person or a CI job did, as Event v1 facts of provider `attempt`
(spec/evidence.md): commands with their output as artifacts, git snapshots, notes, approvals.

Invariants:
- Every event goes through the pipeline a hook's does: assembled by the adapters' Draft (ids,
  agent, canonical key order), the ingestion contract (attemptdb.ingest.privacy.ingest: capture mode,
  secret redaction, attrs allowlist), validated, then `Store.append` (chained, projected). If
  the file cannot take it, it is spooled like a hook's event: nothing is lost.
- Content (argv, the working directory, note text, subject, title) goes in `content` only;
  `attrs` hold allowlisted or `x_attempt_`-namespaced content-free values (hashes, sizes,
  artifact ids, counts, tokens).
- Sessions: the one named (`--session S`, `ATTEMPTDB_SESSION`, `Recorder(session=…)`) is opened
  by its first event and stays open until closed explicitly; one without a name is this
  command's own, closed when it ends.
- The seed-001 kinds map onto Event v1 kinds (spec/evidence.md §2). Each run (and each command
  the Recorder records) is a turn of its own: `run.started` (a prompt_submitted whose text is the
  command line: content, so absent under metadata_only) opens it, the command is a tool call
  (category `shell`) in it, and `run.stopped` (turn_stopped/turn_failed) ends it. So every run is
  an attempt with its own outcome, a failing one failed with a class, through the same
  projections as a hook's; a later run never makes an earlier one's failure disappear.
- Recording never holds up the command for long: the run's own writes wait at most RUN_BUSY_S
  for a locked file, then go to the spool (drained, in order, by the next write or read).
"""

import errno
import os
import shlex
import shutil
import tempfile

from ..errors import AttemptError
from ..ingest import privacy
from ..model import clock, event, ids

PROVIDER = "attempt"
SESSION_ENV = "ATTEMPTDB_SESSION"
TOOL_NAME = "run"
MAX_NAME = 128
MAX_TEXT = 64 << 10  # a note, subject or title (content) is at most this many characters
RUN_BUSY_S = 0.25  # how long a run's own writes wait for a locked file before they are spooled
DRAIN_LIMIT = 100  # spooled events a write ingests before its own (as a hook does; reads take the rest)
_CRASH = frozenset(("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP"))


def _short_session(store, text: str) -> str:
    """The full id of the one session whose id begins with the short id `text` (`ses_` and 8-32
    hex digits, hyphens where the full id has them or none), or `text` unchanged when it is
    no short id (then it is judged as a name or a mistake)."""
    digits = text[4:].replace("-", "")
    if not 8 <= len(digits) <= 32 or digits.strip("0123456789abcdef"):
        return text
    canon = ids.hyphenated(digits)
    found = [r[0] for r in store.conn.execute("SELECT DISTINCT session_id FROM events WHERE session_id GLOB ? "
                                              "LIMIT 6", ("ses_" + canon + "*",))]
    if not found:
        raise AttemptError("session.unknown", f"no session {text} in this file (a new session takes a name, not an id)")
    if len(found) > 1:
        raise AttemptError("session.unknown", f"{text} is the start of several sessions' ids ({', '.join(found[:5])}"
                           f"{', …' if len(found) > 5 else ''}): give more hex digits")
    return found[0]


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AttemptError("record.empty", f"the {what} is empty")
    if len(value) > MAX_TEXT:
        raise AttemptError("record.too_long", f"the {what} is longer than {MAX_TEXT:,} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise AttemptError("input.not_utf8", f"the {what} is not valid UTF-8 text") from None
    return value


def session_name(store, text: str) -> str:
    """The provider session id a `--session` value names: an `attempt` session's `ses_` id
    (full, or short as the tables print it: 8+ hex digits that one stored session's id begins
    with), else the text itself as a name (1–128 printable characters)."""
    if text.startswith("ses_") and not ids.is_uuid(text[4:]):
        text = _short_session(store, text)
    if text.startswith("ses_") and ids.is_uuid(text[4:]):
        row = store.conn.execute("SELECT provider, provider_session_id FROM events WHERE session_id = ? LIMIT 1",
                                 (text,)).fetchone()
        if row is None:
            raise AttemptError("session.unknown", f"no session {text} in this file (a new session takes a name, "
                               "not an id)")
        if row[0] != PROVIDER:
            raise AttemptError("session.foreign", f"{text} is a {row[0]} session; runs, notes and approvals go "
                               "into sessions of their own (provider attempt): pass a name instead")
        return row[1]
    k = text.find("_") + 1
    if k and text[:k] in ids.PREFIXES and text[k:] and not text[k:].strip("0123456789abcdef-"):
        # an id (of another kind, or a ses_ id cut short) is a mistake, not a name for a new session
        raise AttemptError("session.bad_name", f"{text[:k]}… is how ids are written, not a session name: pass a name, "
                           "or the id of an attempt session (ses_ and 8+ hex digits)")
    if not 0 < len(text) <= MAX_NAME or not text.isprintable() or text.strip() != text:
        raise AttemptError("session.bad_name", f"a session name is 1-{MAX_NAME} printable characters without "
                           "leading or trailing blanks")
    return text


class Writer:
    """Writes `attempt` events into one session of an open store."""

    def __init__(self, store, *, session: str | None = None, cwd: str | None = None, source: str = "cli",
                 damaged: Exception | None = None):
        self.store = store
        # a file that takes no writes (store.damaged, store.corrupt; the store is then opened
        # read-only): every event goes to the spool, and what cannot be read from it is unknown
        self.damaged = damaged
        self.cwd_gone = False  # the working directory was deleted: commands run in it as a shell's do
        if cwd is None:
            try:
                cwd = os.getcwd()
            except FileNotFoundError:  # recorded as the shell names it ($PWD), else /
                pwd = os.environ.get("PWD", "")
                cwd, self.cwd_gone = (pwd if os.path.isabs(pwd) else "/"), True
        self.cwd = os.path.abspath(cwd)  # where commands run and git is read
        # as events record it: a directory name that is not UTF-8 with U+FFFD for those bytes
        from ..capture.project import valid_text
        self.shown_cwd = valid_text(self.cwd)
        self.device = store.device_id
        self.mode = store.capture_mode
        self.source = source
        if session is None:
            session = os.environ.get(SESSION_ENV) or None
        self.own = session is None  # this command's own session: closed when it ends
        self.psid = f"{source}-{ids.uuid7()}" if self.own else session_name(store, session)
        self.session_id = ids.session_id(PROVIDER, self.psid)
        self.written: list = []  # ev_ ids written (or spooled)
        self.spooled = 0
        self.last_us = None  # the latest observed_at (µs) this writer wrote into the session

    # --- state ----------------------------------------------------------------------------

    def is_open(self) -> bool:
        row = self._read("SELECT kind FROM events WHERE session_id = ? AND kind IN ('session_started', "
                         "'session_ended') ORDER BY seq DESC LIMIT 1", ("ses_" + self.session_id,))
        return row is not None and row[0] == "session_started"

    def _read(self, sql: str, args: tuple):
        """The first row of a read, or None; on a damaged file a read that fails (a malformed
        page) is taken as knowing nothing: the events go to the spool either way."""
        try:
            return self.store.conn.execute(sql, args).fetchone()
        except Exception as e:
            if not self.found_damaged(e):
                raise
            return None

    def found_damaged(self, e: Exception) -> bool:
        """Whether the file is damaged (known before, or `e` says SQLite found a malformed page:
        then it is marked so, store.sqlerrors.corrupt); from then on every event waits in the spool."""
        if self.damaged is None:
            from ..integrity import damage
            if isinstance(e, AttemptError) and e.code in ("store.corrupt", "store.damaged"):
                self.damaged = e
            elif damage.is_corruption(e):
                from ..store import sqlerrors
                self.damaged = sqlerrors.corrupt(self.store.path, self.source)
        return self.damaged is not None

    # --- envelopes ------------------------------------------------------------------------

    def _draft(self, kind: str, name: str):
        from ..adapters.draft import Draft
        d = Draft(PROVIDER, name, self.shown_cwd)
        d.kind = kind
        d.psid, d.session_missing = self.psid, False
        d.attrs = {}
        return d

    def _envelope(self, d, at_us: int, extra_attrs: dict | None = None) -> dict:
        from ..adapters import Context
        from ..capture.project import project_of
        project, root = project_of(self.cwd, self.device)
        d.root = root
        ctx = Context(self.device, self.mode, project, at_us, hook_version=_version())
        env = d.envelope(ctx)
        if extra_attrs:
            env["attrs"] = {**env.get("attrs", {}), **{k: v for k, v in extra_attrs.items() if v is not None}}
        env = event.canonical(privacy.ingest(env, db_mode=self.mode))
        event.validate(env)
        event.check_storable(env)
        return env

    def started(self, title: str | None = None) -> dict:
        d = self._draft("session_started", "session.started")
        d.attr("source", self.source)
        if title:
            d.put("title", _text(title, "title"))
        return self._envelope(d, clock.now_us())

    def ended(self, reason: str) -> dict:
        d = self._draft("session_ended", "session.stopped")
        d.attr("reason", reason)
        return self._envelope(d, clock.now_us())

    def snapshot(self, point: str, snap: dict | None = None) -> dict:
        """A git.snapshot event of `snap` (default: taken now; AttemptError outside a
        repository or when git fails)."""
        from . import gitsnap
        snap = snap or gitsnap.take(self.cwd)
        d = self._draft("unknown", "git.snapshot")
        return self._envelope(d, clock.now_us(), {
            "git_dirty": snap["dirty"], "x_attempt_snapshot": point, "x_attempt_repo_root_hash": snap["repo_root_hash"],
            "x_attempt_staged_diff_hash": snap["staged_diff_hash"],
            "x_attempt_unstaged_diff_hash": snap["unstaged_diff_hash"],
            "x_attempt_untracked_files_hash": snap["untracked_files_hash"],
            "x_attempt_untracked_count": snap["untracked_count"]})

    def note(self, text: str) -> dict:
        text = _text(text, "note")
        d = self._draft("notification", "session.note_added")
        d.attr("notification_type", "note")
        d.put("note", text)
        return self._envelope(d, clock.now_us(), {"note_chars": len(text)})

    def approval(self, subject: str, approved: bool, note: str | None = None) -> dict:
        subject = _text(subject, "subject")
        d = self._draft("notification", "ai.approval")
        d.attr("notification_type", "approval")
        d.put("subject", subject)
        if note is not None:
            d.put("note", _text(note, "note"))
        return self._envelope(d, clock.now_us(), {"x_attempt_approved": bool(approved),
                                                  "x_attempt_subject_chars": len(subject),
                                                  "note_chars": len(note) if note is not None else None})

    def after_session(self, at_us: int) -> int:
        """`at_us`, or just after the latest event the session holds (or this writer spooled)
        when that is later, but never later than now: a run's turn opens after everything before
        it, so a command recorded after the fact (`Recorder.command`, which started
        `duration_ms` ago) never opens its turn inside the previous run's; an event stamped in
        the future (another device's clock) moves nothing past the present."""
        row = self._read("SELECT max(observed_at) FROM events WHERE session_id = ?", ("ses_" + self.session_id,))
        latest = self.last_us
        if row and isinstance(row[0], str):
            try:
                latest = max(latest or 0, clock.from_iso(row[0]))
            except (ValueError, OverflowError):  # an edited row: the writer's own clock decides
                pass
        if latest is None or at_us > latest:
            return at_us
        return max(at_us, min(latest + 1, clock.now_us()))

    def run_started(self, argv, at_us: int, source: str = "run") -> dict:
        """The event that opens a run's own turn (spec/evidence.md §2): a prompt_submitted whose
        text is the command line (content: the objective of the run's turn and attempt, stored
        secret-redacted, not at all under metadata_only), attrs `source` and `prompt_chars`. A
        shell-quoted line never starts with `<` or `[`, so it is never read as an injected prompt."""
        line = shlex.join(argv)
        text = line if len(line) <= MAX_TEXT else line[:MAX_TEXT - 1] + "…"
        d = self._draft("prompt_submitted", "run.started")
        d.attr("source", source)
        d.attr("prompt_chars", len(text))
        d.put("prompt", text)
        return self._envelope(d, at_us)

    def _command_draft(self, kind: str, name: str, call_id: str, argv) -> object:
        from ..adapters import commands
        d = self._draft(kind, name)
        d.tool = {"name": TOOL_NAME, "category": "shell", "call_id": call_id}
        line = shlex.join(argv)
        category, subcategory, git_sub = commands.classify(line)
        d.attr("command_bytes", len(line.encode("utf-8", "surrogatepass")))
        d.attr("command_category", category)
        d.attr("command_subcategory", subcategory)
        from ..adapters.draft import KNOWN_GIT_SUBCOMMANDS
        if git_sub in KNOWN_GIT_SUBCOMMANDS:
            d.attr("git_subcommand", git_sub)
        return d

    def command_started(self, call_id: str, argv, at_us: int) -> dict:
        d = self._command_draft("tool_call_started", "command.started", call_id, argv)
        d.put("command", shlex.join(argv))
        d.put("tool_input", {"argv": list(argv), "cwd": self.shown_cwd})
        return self._envelope(d, at_us)

    def command_finished(self, call_id: str, argv, ex, outputs: dict, artifact_ids: dict) -> dict:
        from ..adapters import signals
        ok = ex.returncode == 0 and ex.error is None
        d = self._command_draft("tool_call_finished" if ok else "tool_call_failed", "command.finished",
                                call_id, argv)
        d.duration = ex.duration_ms
        status, cls, code = outcome_of(ex)
        if ok:
            d.success(0)
        else:
            d.failure(cls=cls, exit_code=code, status=status)
            if ex.error:
                d.put("error", ex.error)
        tail = "\n".join(o.tail.decode("utf-8", "replace") for o in outputs.values() if o.tail)
        counts = signals.test_counts(tail) if tail else None
        if counts is not None:
            d.attr("tests_passed", counts[0])
            d.attr("tests_failed", counts[1])
            d.attr("tests_skipped", counts[2])
        extra = {"x_attempt_signal": signal_name(ex)}
        for name, number in sorted(ex.undelivered.items()):
            # its output could not be passed on to this process's own stream (a full disk, …)
            extra[f"x_attempt_{name}_undelivered"] = errno.errorcode.get(number, "EIO")
        for name, out in outputs.items():
            if out.size:
                extra[f"x_attempt_{name}_sha256"] = "sha256:" + out.sha256
                extra[f"x_attempt_{name}_bytes"] = out.size
                if name in artifact_ids:
                    extra[f"x_attempt_{name}_artifact"] = artifact_ids[name]
        return self._envelope(d, ex.ended_us or clock.now_us(), extra)

    def run_stopped(self, ex) -> dict:
        ok = ex.returncode == 0 and ex.error is None
        d = self._draft("turn_stopped" if ok else "turn_failed", "run.stopped")
        if not ok:
            status, cls, code = outcome_of(ex)
            d.outcome = {"status": "failure", "class": cls, "exit_code": code}
        return self._envelope(d, clock.now_us())

    # --- writing --------------------------------------------------------------------------

    def write(self, envs: list, busy_s: float | None = None) -> None:
        """Append (one transaction), after a bounded share of the spool (events spooled earlier,
        this writer's own included, go first, as a hook's do); when the file cannot take them,
        spool them. `busy_s`: how long to wait for a locked file (default: the store's). A
        session.started at the head of `envs` (a named session) is written only when the session
        is not open at that moment, checked inside the write transaction: of parallel commands
        naming one session, only the first opens it (spec/evidence.md §1)."""
        if not envs:
            return
        from ..capture import spool
        old = self.store.busy_timeout_s
        if busy_s is not None:
            self.store.set_busy_timeout(busy_s)
        try:
            if self.damaged is not None:  # nothing is written into a damaged file: the events wait
                raise LookupError("the file is damaged")
            # events spooled earlier go first: when some stay behind (more than the share), or the
            # drain met a file it cannot write now (locked past the wait, read-only), these are
            # spooled after them, not appended ahead (chain order = arrival order) and without
            # paying the wait twice (spec/capture.md)
            if not spool.drain_ahead(self.store, self.store.path, DRAIN_LIMIT):
                raise LookupError("spooled events wait ahead of these")
            if envs[0]["kind"] == "session_started" and not self.own:
                envs = self._append_opening(envs)
            else:
                spool.append(self.store, envs)
        except Exception as e:
            self.found_damaged(e)
            for env in envs:
                spool.put(self.store.path, env)
            self.spooled += len(envs)
        finally:
            if busy_s is not None:
                self.store.set_busy_timeout(old)
        self.written += ["ev_" + e["event_id"] for e in envs]
        self.last_us = max([self.last_us or 0] + [e["observed_at"] for e in envs])

    def _append_opening(self, envs: list) -> list:
        """Append `envs` in one write transaction, without their leading session.started when the
        session is open by then (another command opened it since this one looked); the events
        written. A connection that failed as read-only is reopened once, as spool.append does."""
        import apsw
        st = self.store
        for again in (False, True):
            try:
                st.conn.execute("BEGIN IMMEDIATE")
                try:
                    if self.is_open():
                        envs = envs[1:]
                    if envs:
                        st.append_uncommitted(envs)
                    st.conn.execute("COMMIT")
                except BaseException:
                    if not st.conn.getautocommit():
                        st.conn.execute("ROLLBACK")
                    raise
                return envs
            except apsw.ReadOnlyError:
                if again or not st.reopen():
                    raise
        return envs


def check_argv(argv, env=None) -> None:
    """Refuse (`run.bad_argument`) what no process can be started with: a NUL byte in the
    command, an argument or the environment, or an environment name holding `=`. Checked before
    any event is written, so no command.started is left without its end."""
    def text(x) -> str:
        return os.fsdecode(x) if isinstance(x, (str, bytes)) else "\0"  # (not text: no process takes it)
    bad = any("\0" in a for a in argv)
    if env is not None:
        bad = bad or any("\0" in text(k) or "=" in text(k) or not text(k) or "\0" in text(v)
                         for k, v in env.items())
    if bad:
        raise AttemptError("run.bad_argument", "the command, an argument or its environment holds a NUL byte "
                           "(or a name with =): no process can take it")


def signal_name(ex) -> str | None:
    import signal
    if ex.signal is None:
        return None
    try:
        return signal.Signals(ex.signal).name
    except ValueError:
        return f"SIG{ex.signal}"


def outcome_of(ex) -> tuple:
    """(outcome status, failure class, exit code as a shell reports it) of a command's end."""
    if ex.error is not None:
        return "failure", "permission_denied" if ex.returncode == 126 else "file_not_found", ex.returncode
    if ex.signal is not None:
        name = signal_name(ex)
        code = 128 + ex.signal
        if name in ex.signals:  # it was sent to us (Ctrl-C, a CI's timeout) and reached the command
            return "cancelled", "interrupted", code
        return "failure", "crashed" if name in _CRASH else "killed", code
    if ex.returncode:
        return "failure", "nonzero_exit", ex.returncode
    return "success", None, 0


class RunResult:
    """What `run` did: the command's `returncode` (negative: its signal), `exit_status` as a
    shell reports it, `artifacts` {stream: art_ id}, `outputs` {stream: artifacts.Output},
    the session, the ev_ ids written, notes for the user, and the Exit (`process.Exit`)."""

    __slots__ = ("exit", "returncode", "exit_status", "artifacts", "outputs", "session_id", "events", "notes")


def run(writer: Writer, argv, *, title: str | None = None, attach_output: bool = False, echo: bool = True,
        snapshots: bool = True, close: bool | None = None, env=None) -> RunResult:
    """Run `argv` in the writer's directory and record it (module invariants). The caller
    restores the signal mask (`result.exit.mask`, process.restore_signals) once it is done."""
    from . import process
    argv = [str(a) for a in argv]
    if not argv:
        raise AttemptError("run.no_command", "no command to run (attempt run [OPTIONS] -- COMMAND [ARGS…])")
    try:  # bytes a shell passes (the CLI's surrogateescape): run as they are, recorded as text
        shown = [a.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for a in argv]
    except UnicodeEncodeError:  # a lone surrogate (the Python API): no bytes to run
        raise AttemptError("input.not_utf8", "an argument of the command is not valid UTF-8 text") from None
    check_argv(argv, env)
    res = RunResult()
    res.notes, res.artifacts = [], {}
    if shown != argv:
        res.notes.append("an argument is not UTF-8 text: it ran as given and is recorded with U+FFFD "
                         "in place of the bytes that are not")
    keep = attach_output and writer.mode != "metadata_only"
    if attach_output and not keep:
        res.notes.append("output not kept: the capture mode is metadata_only (its hashes are recorded)")
    first = []
    if not writer.is_open():
        line = shlex.join(shown)  # the default title: the command line, cut to what a title may hold
        first.append(writer.started(title or (line if len(line) <= MAX_TEXT else line[:MAX_TEXT - 1] + "…")))
    opened = writer.after_session(clock.now_us())
    first.append(writer.run_started(shown, opened))  # the run's own turn (module invariants)
    if snapshots:
        first += _snapshot(writer, "run.start", res.notes)
    call_id = "cmd_" + ids.uuid7()
    first.append(writer.command_started(call_id, shown, max(clock.now_us(), opened)))
    writer.write(first, busy_s=RUN_BUSY_S)
    with streams(writer, keep, res.notes, busy_s=RUN_BUSY_S) as sinks:
        ex = process.execute(argv, sinks, cwd=None if writer.cwd_gone else writer.cwd, env=env, echo=echo)
    outputs, res.artifacts = sinks.outputs, sinks.artifacts
    last = [writer.command_finished(call_id, shown, ex, outputs, res.artifacts)]
    if snapshots:
        last += _snapshot(writer, "run.end", res.notes)
    last.append(writer.run_stopped(ex))
    if writer.own if close is None else close:
        last.append(writer.ended("run_finished"))
    writer.write(last, busy_s=RUN_BUSY_S)
    res.exit, res.outputs, res.session_id, res.events = ex, outputs, writer.session_id, list(writer.written)
    res.returncode = ex.returncode
    res.exit_status = 128 + ex.signal if ex.signal is not None else ex.returncode
    return res


class streams(dict):
    """`with streams(writer, keep, notes) as sinks`: a Sink for stdout and stderr (keeping the
    bytes in a private temporary directory when `keep`); on leaving, each is closed and its
    artifact stored (`sinks.outputs`, `sinks.artifacts`), and the directory removed."""

    def __init__(self, writer: Writer, keep: bool, notes: list, busy_s: float | None = None):
        super().__init__()
        self.writer, self.keep, self.notes, self.busy_s = writer, keep, notes, busy_s
        self.outputs: dict = {}
        self.artifacts: dict = {}
        self.dir = None

    def __enter__(self) -> "streams":
        from . import artifacts
        self.dir = tempfile.mkdtemp(prefix="attempt-run-") if self.keep else None
        for name in ("stdout", "stderr"):
            self[name] = artifacts.Sink(f"command.{name}", self.dir)
        return self

    def __exit__(self, *exc) -> None:
        try:
            for name, sink in self.items():
                out = self.outputs[name] = sink.close()
                if out.dropped:
                    self.notes.append(f"{name} not kept ({out.dropped.replace('_', ' ')}): its hash is recorded")
                if out.size and exc[0] is None:
                    kept = out.kept_path is not None
                    try:
                        self.artifacts[name] = self._store(out)
                    except Exception as e:  # the run's facts matter more than its output's bytes
                        if not self.writer.found_damaged(e):  # (a damaged file: the run's warning says it)
                            self.notes.append(_not_stored(name, kept, e))
                out.discard()
        finally:
            if self.dir:
                shutil.rmtree(self.dir, ignore_errors=True)

    def _store(self, out) -> str:
        from . import artifacts
        if self.writer.damaged is not None:  # a row is not an event: it is not spooled, and the file takes none
            raise self.writer.damaged
        st = self.writer.store
        old = st.busy_timeout_s
        if self.busy_s is not None:
            st.set_busy_timeout(self.busy_s)
        try:
            return artifacts.store(st.conn, out)
        finally:
            if self.busy_s is not None:
                st.set_busy_timeout(old)


def _not_stored(name: str, kept: bool, e: Exception) -> str:
    """The note for an output whose artifact row could not be written: its code (the store's
    reading of the failure, store.sqlerrors.coded), never a Python class name. The row is not
    spooled (the spool holds events): the run's command.finished still records the output's
    SHA-256 and size."""
    from ..store import sqlerrors
    coded = e if isinstance(e, AttemptError) else sqlerrors.coded(e, None)
    found = f"error[{coded.code}]" if coded is not None else "an error"
    why = " (the database was locked by another process)" if coded is not None and coded.code == "store.busy" else ""
    lost = "; its bytes were not kept" if kept else ""
    return (f"{name} artifact not stored: {found}{why}; its SHA-256 and size are recorded in the "
            f"run's events{lost}")


def _snapshot(writer: Writer, point: str, notes: list) -> list:
    try:
        return [writer.snapshot(point)]
    except AttemptError as e:
        if e.code != "snapshot.not_git":
            notes.append(f"no git snapshot at {point}: {e}")
        return []


def _version() -> str:
    from .. import __version__
    return __version__
