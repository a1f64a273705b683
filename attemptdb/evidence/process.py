"""Running a command the way a shell would, while its output streams through sinks
(spec/evidence.md §2).

Invariants:
- stdin is the command's own (inherited); stdout and stderr reach this process's stdout and
  stderr as they arrive (`echo`), and every byte also goes to that stream's sink; nothing is
  held beyond one 64 KiB read.
- Signals reach the child exactly once: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this
  process alone (`kill PID`, a CI's timeout) are forwarded to it; one sent to the whole
  process group — the terminal's Ctrl-C and Ctrl-\\ (to the foreground group), `kill -INT
  -PGID`, a supervisor or CI runner stopping a job, kill(-1) — already reached the child,
  which stays in our group, so it is not sent again. siginfo cannot tell the two apart
  (`kill(pid)` and `kill(-pgid)` give the same si_code and si_pid; only a terminal's are
  SI_KERNEL), so a witness tells: a small idle process (`_Witness`, `python -I -S`, started
  in our group with those signals blocked) in which a group signal stays pending, where
  /proc/<pid>/status (`ShdPnd`) shows it; one sent to us alone never reaches it. A witness
  that showed a signal is replaced (a signal pending stays so). A signal is forwarded
  whenever the child has left our process group (a group signal did not reach it then).
  Without a witness (no /proc, it could not start, it died) the terminal's SI_KERNEL signals
  are the ones not forwarded, as before. Limit: a second group signal of the same kind in
  the few milliseconds it takes to replace the witness is taken for one sent to us alone.
  While the command runs those signals are taken synchronously (sigtimedwait) and the caller
  learns which arrived (`Exit.signals`) and which were forwarded (`Exit.forwarded`); the
  caller decides what to do after recording (attemptdb.evidence.record re-raises the child's
  fatal signal on itself).
- After the command exits, its streams are drained until EOF, or until they stay silent for
  DRAIN_IDLE_S (a background process the command left behind may hold them open forever), or
  until a process left behind shows it is still writing: more bytes come from one stream than
  its pipe can hold, or waiting for them adds up to DRAIN_MAX_S (what the command itself wrote
  is all in the pipe when it exits: it never makes us wait, however slow our own reader is).
  Then they are closed: the writer left behind gets SIGPIPE.
  When the reader of this process's stdout or stderr goes away (EPIPE), that pipe is closed, so
  the command gets the SIGPIPE it would have got without `attempt run` in between. Any other
  failure to write one of them (a full disk, an I/O error, a closed descriptor) stops the echo
  of that stream only: the command runs on, its output still goes to the sink to its end, and
  the caller learns which stream could not be delivered and why (`Exit.undelivered`).
- An empty command name is not found (127), as a shell has it, not "permission denied".
"""

import errno
import os
import selectors
import signal
import subprocess
import sys
import threading
import time

from ..model import clock

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel (the terminal) sent
# when a signal came, how long to wait before each look at the witness (a group signal reaches
# every member in one kill(2), the newest first: the witness before us; these cover the rest)
WITNESS_LOOKS_S = (0.0, 0.002, 0.01)
_WITNESS = "import os\nos.read(0, 1)\n"  # until our end closes its stdin (even a SIGKILL's)
DRAIN_IDLE_S = 0.5
DRAIN_MAX_S = 2.0
READ = 1 << 16


class Exit:
    """How the command ended: `returncode` (negative: killed by that signal), `signals` this
    process received while it ran (names), start/end times (µs), `duration_ms`, and `error`
    (the OSError text when it could not be started: returncode 127 or 126 then), and
    `undelivered`: {stream: errno number} for each stream this process could not write to its
    own stdout or stderr (the reader going away, EPIPE, is not one: module invariants)."""

    __slots__ = ("returncode", "signals", "forwarded", "started_us", "ended_us", "duration_ms", "error",
                 "pid", "mask", "undelivered")

    def __init__(self):
        self.mask = None  # the signal mask to restore once the run is recorded (restore_signals)
        self.returncode = None
        self.signals: list = []
        self.forwarded: list = []  # the ones of `signals` sent on to the command (names)
        self.started_us = self.ended_us = self.duration_ms = None
        self.error = None
        self.pid = None
        self.undelivered: dict = {}

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


class _Witness:
    """A process in our process group that blocks the forwarded signals (inherited: it starts
    while they are blocked here) and does nothing until we go: a signal sent to the whole
    group stays pending in it, one sent to us alone never reaches it (module invariants)."""

    def __init__(self):
        self.proc = None
        self._start()

    def _start(self):
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _WITNESS], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", env={})
        except (OSError, ValueError, subprocess.SubprocessError):
            self.proc = None

    def pending(self) -> int | None:
        """The witness's pending process-wide signals (bit n-1 for signal n); None when there is
        no live witness to ask."""
        if self.proc is None:
            return None
        mask = None
        try:
            with open(f"/proc/{self.proc.pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"State:") and line.split()[1:2] in ([b"Z"], [b"X"]):
                        return None  # it died: what it shows is nothing
                    if line.startswith(b"ShdPnd:"):
                        mask = int(line.split()[1], 16)
        except (OSError, ValueError, IndexError):
            return None
        return mask

    def saw(self, signo: int) -> bool | None:
        """Whether `signo` was sent to our whole process group (None: no witness to tell). A
        witness that saw it is replaced: it would show that signal pending for good."""
        for delay in WITNESS_LOOKS_S:
            if delay:
                time.sleep(delay)
            mask = self.pending()
            if mask is None:
                return None
            if mask >> (signo - 1) & 1:
                old = self.proc
                self._start()  # before the old one goes: a group signal from now on has a witness
                _end(old)
                return True
        return False

    def close(self):
        _end(self.proc)
        self.proc = None


def _end(proc) -> None:
    if proc is None:
        return
    try:
        proc.kill()
        proc.stdin.close()
        proc.wait()
    except OSError:
        pass


def reached_child(info, child_pid: int, witness: "_Witness | None") -> bool:
    """Whether the signal `info` (sigtimedwait's) already reached the command: it was sent to
    our whole process group and the command is still in it (module invariants)."""
    try:
        if os.getpgid(child_pid) != os.getpgrp():
            return False  # it left our group: what was sent to the group missed it
    except OSError:
        return False
    seen = witness.saw(info.si_signo) if witness is not None else None
    return info.si_code == SI_KERNEL if seen is None else seen


def _write_all(fd: int, data: bytes) -> int | None:
    """None once `data` is all written, else the errno of the write that failed (EPIPE: the
    reader is gone)."""
    try:
        while data:
            n = os.write(fd, data)
            data = data[n:]
        return None
    except OSError as e:
        return e.errno or errno.EIO


def _pipe_max() -> int:
    """The most a pipe can hold (a program may grow its pipe up to this with F_SETPIPE_SZ)."""
    try:
        with open("/proc/sys/fs/pipe-max-size", "rb") as f:
            return max(int(f.read().strip() or 0), 1 << 20)
    except (OSError, ValueError):
        return 1 << 20


def _pump(streams, exited: threading.Event, echo: bool, undelivered: dict | None = None) -> None:
    """Copy each pipe to its echo fd and its sink until EOF (or, after the exit, silence or a
    writer left behind: module invariants). A stream whose echo failed otherwise than by EPIPE
    goes on into its sink only, and `undelivered[name]` is set to the errno."""
    sel = selectors.DefaultSelector()
    undelivered = {} if undelivered is None else undelivered
    for pipe, fd, sink, name in streams:
        sel.register(pipe, selectors.EVENT_READ, [fd if echo else None, sink, 0, name])
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
            failed = _write_all(target, chunk) if target is not None and chunk else None
            if failed is None:
                continue
            key.data[0] = None  # no more echo of this stream
            if failed != errno.EPIPE:
                # a full disk, an I/O error, a closed descriptor: the output is not wanted less;
                # the command runs on, its bytes still reach the sink, the caller says so
                undelivered.setdefault(key.data[3], failed)
            elif more:
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
        if not argv[0]:  # a shell's "command not found"; exec would try "" in each PATH directory
            raise FileNotFoundError(errno.ENOENT, "command not found")
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        ex.ended_us = clock.now_us()
        ex.duration_ms = 0
        ex.error = e.strerror or type(e).__name__
        ex.returncode = 126 if isinstance(e, PermissionError) else 127
        return ex
    ex.pid = child.pid
    witness = None
    if main:
        ex.mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED + (signal.SIGCHLD,))
        witness = _Witness()  # after the block: it starts with those signals blocked
    exited = threading.Event()
    pump = threading.Thread(target=_pump, name="attempt-run-tee", daemon=True, args=(
        [(child.stdout, 1, sinks["stdout"], "stdout"), (child.stderr, 2, sinks["stderr"], "stderr")], exited, echo,
        ex.undelivered))
    pump.start()
    try:
        if main:
            while child.poll() is None:
                info = signal.sigtimedwait(FORWARDED + (signal.SIGCHLD,), 0.2)
                if info is None or info.si_signo == signal.SIGCHLD:
                    continue
                name = signal.Signals(info.si_signo).name
                ex.signals.append(name)
                if not reached_child(info, child.pid, witness):
                    try:
                        child.send_signal(info.si_signo)
                        ex.forwarded.append(name)
                    except OSError:
                        pass
        else:
            child.wait()
    finally:
        if witness is not None:
            witness.close()
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
