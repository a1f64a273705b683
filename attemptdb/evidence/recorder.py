"""`attemptdb.Recorder`: the Python API for CI and agent integrations (README "Recording
from Python"). It writes the same facts as `attempt run/snapshot/note/approve/reject/close`,
through the same contract (attemptdb.evidence.record).

    import attemptdb

    with attemptdb.Recorder(title="nightly build") as rec:
        result = rec.run(["pytest", "-q"], attach_output=True)
        rec.note(f"pytest exited {result.returncode}")
        rec.approve("release 1.4.2")

Invariants: the session is opened by the first event and closed when the `with` block ends
(reason `exit`, or `error` when it ends with an exception) or by `close()`; a named session
(`session=`) is left open on exit when `keep_open=True`. Whatever was written is signed
(a checkpoint) on close, as an import would. A command recorded with `command()` (run
elsewhere, e.g. by a CI step) streams its output from bytes, a file path or a binary file,
never holding it whole.
"""

import os

from ..errors import AttemptError


class Recorder:
    """Record commands, git snapshots, notes and approvals into one session of provider
    `attempt` (see the module docstring)."""

    def __init__(self, title: str | None = None, *, session: str | None = None, db: str | None = None,
                 cwd: str | None = None, attach_output: bool = False, keep_open: bool = False):
        self.title = title
        self.session = session
        self.db = db
        self.cwd = cwd
        self.attach_output = attach_output
        self.keep_open = keep_open
        self.store = None
        self.writer = None

    # --- lifecycle ------------------------------------------------------------------------

    def open(self) -> "Recorder":
        from ..store import location
        from ..store.database import Store
        from .record import Writer
        if self.store is not None:
            return self
        self.store = Store.open(location.resolve(self.db), create=True)
        try:
            self.writer = Writer(self.store, session=self.session, cwd=self.cwd, source="api")
            if not self.writer.is_open():
                self.writer.write([self.writer.started(self.title)])
        except BaseException:
            self.store.close()
            self.store = None
            raise
        return self

    def close(self, reason: str = "closed") -> None:
        """End the session (session.stopped), sign what was written, release the file."""
        if self.store is None:
            return
        try:
            if self.writer.is_open():
                self.writer.write([self.writer.ended(reason)])
        finally:
            self._release()

    def _release(self) -> None:
        from ..integrity import checkpoint
        try:
            checkpoint.maybe_checkpoint(self.store, quiet=True)
        finally:
            self.store.close()
            self.store = None

    def __enter__(self) -> "Recorder":
        return self.open()

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.store is None:
            return
        if self.keep_open and not self.writer.own:
            self._release()
        else:
            self.close("error" if exc_type is not None else "exit")

    @property
    def session_id(self) -> str:
        """The session's `ses_` id."""
        return "ses_" + self._w().session_id

    def _w(self):
        if self.writer is None:
            self.open()
        return self.writer

    # --- what it records ------------------------------------------------------------------

    def run(self, argv, *, attach_output: bool | None = None, echo: bool = True, env=None):
        """Run `argv` (stdout/stderr echoed unless `echo=False`), record it, return a
        record.RunResult (`returncode`, `exit_status`, `artifacts`, `outputs`, `events`)."""
        from . import process, record
        w = self._w()
        res = record.run(w, argv, attach_output=self.attach_output if attach_output is None else attach_output,
                         echo=echo, close=False, env=env)
        process.restore_signals(res.exit.mask)
        return res

    def command(self, argv, *, exit_code: int, duration_ms: int = 0, stdout=None, stderr=None,
                attach_output: bool | None = None, signal: str | None = None):
        """Record a command that ran elsewhere: its argv, exit code, duration and output
        (bytes, a path, or a binary file object; read in chunks)."""
        from ..model import clock, ids
        from . import process, record
        w = self._w()
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise AttemptError("record.bad_exit_code", "exit_code must be an integer")
        keep = (self.attach_output if attach_output is None else attach_output) and w.mode != "metadata_only"
        argv = [str(a) for a in argv]
        if not argv:
            raise AttemptError("run.no_command", "no command")
        ex = process.Exit()
        ex.ended_us = clock.now_us()
        ex.duration_ms = max(0, int(duration_ms))
        ex.started_us = ex.ended_us - ex.duration_ms * 1000
        ex.returncode = exit_code
        if signal is not None:
            import signal as signals
            try:
                ex.returncode = -int(signals.Signals[signal])
            except KeyError:
                raise AttemptError("record.bad_signal", "signal must be a name such as SIGTERM") from None
        notes: list = []
        with record.streams(w, keep, notes) as sinks:
            for name, source in (("stdout", stdout), ("stderr", stderr)):
                for chunk in _chunks(source):
                    sinks[name].feed(chunk)
        # its own turn, after what the session holds (it started duration_ms ago: maybe before the
        # previous run ended), like a run's (spec/evidence.md §2)
        opened = w.after_session(ex.started_us)
        ex.ended_us = max(ex.ended_us, opened)
        call_id = "cmd_" + ids.uuid7()
        w.write([w.run_started(argv, opened, source="command"), w.command_started(call_id, argv, opened),
                 w.command_finished(call_id, argv, ex, sinks.outputs, sinks.artifacts), w.run_stopped(ex)])
        return sinks.artifacts

    def snapshot(self) -> None:
        """A git snapshot of the working directory's repository."""
        w = self._w()
        w.write([w.snapshot("api")])

    def note(self, text: str) -> None:
        w = self._w()
        w.write([w.note(text)])

    def approve(self, subject: str, note: str | None = None) -> None:
        w = self._w()
        w.write([w.approval(subject, True, note)])

    def reject(self, subject: str, note: str | None = None) -> None:
        w = self._w()
        w.write([w.approval(subject, False, note)])


def _chunks(source, size: int = 1 << 16):
    if source is None:
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        for i in range(0, len(data), size):
            yield data[i:i + size]
        return
    if isinstance(source, (str, os.PathLike)):
        try:
            f = open(source, "rb")
        except OSError as e:  # missing, a directory, not allowed: said with its code, as a bad output
            raise AttemptError("record.bad_output", f"cannot read the output {os.fsdecode(source)}: "
                               f"{e.strerror}") from None
        with f:
            try:
                yield from iter(lambda: f.read(size), b"")
            except OSError as e:
                raise AttemptError("record.bad_output", f"cannot read the output {os.fsdecode(source)}: "
                                   f"{e.strerror}") from None
        return
    if hasattr(source, "read"):
        yield from iter(lambda: source.read(size), b"")
        return
    raise AttemptError("record.bad_output", "output must be bytes, a path or a binary file")
