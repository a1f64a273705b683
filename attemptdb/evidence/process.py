"""Running a command the way a shell would, while its output streams through sinks
(spec/evidence.md §2).

Invariants:
- stdin is the command's own (inherited); stdout and stderr reach this process's stdout and
  stderr as they arrive (`echo`), and every byte also goes to that stream's sink; nothing is
  held beyond one 64 KiB read.
- Signals reach the child: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process with
  kill(2) are forwarded; the ones the terminal sends (Ctrl-C, Ctrl-\\) already went to the
  whole foreground process group, child included, so they are not sent twice (siginfo's
  si_code tells them apart). While the command runs those signals are taken synchronously
  (sigtimedwait) and the caller learns which arrived; the caller decides what to do after
  recording (attemptdb.evidence.record re-raises the child's fatal signal on itself).
- After the command exits, its streams are drained until EOF, or until they stay silent for
  DRAIN_IDLE_S (a background process the command left behind may hold them open forever), or
  until a process left behind shows it is still writing: more bytes come from one stream than
  its pipe can hold, or waiting for them adds up to DRAIN_MAX_S (what the command itself wrote
  is all in the pipe when it exits: it never makes us wait, however slow our own reader is).
  Then they are closed: the writer left behind gets SIGPIPE.
  When the reader of this process's stdout or stderr goes away, that pipe is closed, so the
  command gets the SIGPIPE it would have got without `attempt run` in between.
"""

import os
import selectors
import signal
import subprocess
import threading
import time

from ..model import clock

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel (the terminal) sent
DRAIN_IDLE_S = 0.5
DRAIN_MAX_S = 2.0
READ = 1 << 16


class Exit:
    """How the command ended: `returncode` (negative: killed by that signal), `signals` this
    process received while it ran (names), start/end times (µs), `duration_ms`, and `error`
    (the OSError text when it could not be started: returncode 127 or 126 then)."""

    __slots__ = ("returncode", "signals", "started_us", "ended_us", "duration_ms", "error", "pid", "mask")

    def __init__(self):
        self.mask = None  # the signal mask to restore once the run is recorded (restore_signals)
        self.returncode = None
        self.signals: list = []
        self.started_us = self.ended_us = self.duration_ms = None
        self.error = None
        self.pid = None

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


def _write_all(fd: int, data: bytes) -> bool:
    """False once the reader of `fd` is gone (EPIPE and friends): stop echoing, keep draining."""
    try:
        while data:
            n = os.write(fd, data)
            data = data[n:]
        return True
    except (BrokenPipeError, OSError):
        return False


def _pipe_max() -> int:
    """The most a pipe can hold (a program may grow its pipe up to this with F_SETPIPE_SZ)."""
    try:
        with open("/proc/sys/fs/pipe-max-size", "rb") as f:
            return max(int(f.read().strip() or 0), 1 << 20)
    except (OSError, ValueError):
        return 1 << 20


def _pump(streams, exited: threading.Event, echo: bool) -> None:
    """Copy each pipe to its echo fd and its sink until EOF (or, after the exit, silence or a
    writer left behind: module invariants)."""
    sel = selectors.DefaultSelector()
    for pipe, fd, sink in streams:
        sel.register(pipe, selectors.EVENT_READ, [fd if echo else None, sink, 0])
    last = time.monotonic()
    ended, waited, most = False, 0.0, _pipe_max()  # after the exit: time spent waiting for bytes
    while sel.get_map():
        t = time.monotonic()
        ready = sel.select(0.1)
        now = time.monotonic()
        if ended:
            waited += now - t
            if waited > DRAIN_MAX_S:
                break  # a process left behind keeps writing, slowly
        elif exited.is_set():
            ended = True
        for key, _ in ready:
            try:
                chunk = os.read(key.fd, READ)
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            last = now
            target, sink = key.data[:2]
            more = True
            if ended:
                key.data[2] += len(chunk)
                if key.data[2] > most:  # more than its pipe held at the exit: a writer left behind
                    chunk = chunk[:len(chunk) - (key.data[2] - most)]  # (the exit's backlog is in)
                    sel.unregister(key.fileobj)
                    more = False
            sink.feed(chunk)
            if target is not None and chunk and not _write_all(target, chunk) and more:
                # our reader is gone (`attempt run -- yes | head`): let the command's next write
                # fail as it would have without us (SIGPIPE), instead of draining it forever
                sel.unregister(key.fileobj)
                key.fileobj.close()
        if not ready and exited.is_set() and now - last > DRAIN_IDLE_S:
            break
    sel.close()


def execute(argv, sinks: dict, *, cwd=None, env=None, echo=True) -> Exit:
    """Run `argv` to its end (see module invariants). `sinks`: {"stdout": Sink, "stderr": Sink}."""
    ex = Exit()
    main = threading.current_thread() is threading.main_thread()
    ex.started_us = clock.now_us()
    t0 = time.monotonic()
    try:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        ex.ended_us = clock.now_us()
        ex.duration_ms = 0
        ex.error = e.strerror or type(e).__name__
        ex.returncode = 126 if isinstance(e, PermissionError) else 127
        return ex
    ex.pid = child.pid
    if main:
        ex.mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED + (signal.SIGCHLD,))
    exited = threading.Event()
    pump = threading.Thread(target=_pump, name="attempt-run-tee", daemon=True, args=(
        [(child.stdout, 1, sinks["stdout"]), (child.stderr, 2, sinks["stderr"])], exited, echo))
    pump.start()
    try:
        if main:
            while child.poll() is None:
                info = signal.sigtimedwait(FORWARDED + (signal.SIGCHLD,), 0.2)
                if info is None or info.si_signo == signal.SIGCHLD:
                    continue
                ex.signals.append(signal.Signals(info.si_signo).name)
                if info.si_code != SI_KERNEL:
                    try:
                        child.send_signal(info.si_signo)
                    except OSError:
                        pass
        else:
            child.wait()
    finally:
        ex.ended_us = clock.now_us()
        ex.duration_ms = max(0, int((time.monotonic() - t0) * 1000))
        exited.set()
        pump.join()
        child.stdout.close()
        child.stderr.close()
        # what arrives after the child's end stays pending until the caller has recorded the
        # run (restore_signals)
        ex.returncode = child.wait()
    return ex


def restore_signals(mask) -> None:
    """Unblock what `execute` blocked: anything pending now takes its ordinary course."""
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
