"""Progress on long work (imports, bundles, export, reproject, verify).

Invariants: progress is drawn on stderr only while stderr is a terminal and the command is
not printing --json; piped, redirected or with --json nothing of it is written. The library
only calls `update(n)` (a plain callable); drawing lives here. `rate(n, unit)` is the "how
many and how fast" the commands' final lines carry.
"""

import sys
import time

import click


class Progress:
    """A click progress bar (a known total) or a running count (no total) on stderr."""

    def __init__(self, label: str, total: int | None = None, *, unit: str = "events", quiet: bool = False,
                 stream=None):
        self.stream = stream or sys.stderr
        self.unit, self.label = unit, label
        self.count = 0
        self.started = time.monotonic()
        self._last = 0.0
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.enabled = tty and not quiet
        self.bar = None
        if self.enabled and total:
            self.bar = click.progressbar(length=total, label=label, file=self.stream, show_pos=True,
                                         show_eta=True, width=24)
            self.bar.__enter__()

    def update(self, n: int = 1, total: int | None = None) -> None:
        """`n` more done; `total`, when the work learns it late (a bundle's manifest)."""
        if total is not None:
            self.set_total(total)
        self.count += n
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self.stream.write(f"\r{self.label} {self.count:,} {self.unit}")
            self.stream.flush()

    def set_total(self, total: int) -> None:
        """A total learnt after the start (a bundle's manifest): the bar starts now."""
        if self.enabled and self.bar is None and total:
            self.bar = click.progressbar(length=total, label=self.label, file=self.stream, show_pos=True,
                                         show_eta=True, width=24)
            self.bar.__enter__()
            if self.count:
                self.bar.update(self.count)

    def close(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        else:
            self.stream.write("\r\x1b[2K" if self.count else "")
            self.stream.flush()
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def rate(self, n: int | None = None, unit: str | None = None) -> str:
        return rate(self.count if n is None else n, self.seconds(), unit or self.unit)


class Ticker:
    """For work with no count to report as it goes (one long SQL statement, worker processes):
    `label · 12 s` on a terminal's stderr, redrawn every half second by a thread; nothing when
    not a terminal or `quiet`."""

    def __init__(self, label: str, *, quiet: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.label = label
        self.started = time.monotonic()
        try:
            self.enabled = self.stream.isatty() and not quiet
        except (AttributeError, ValueError):
            self.enabled = False
        self._stop = None

    def __enter__(self):
        if self.enabled:
            import threading
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.5):
            self.stream.write(f"\r{self.label} · {time.monotonic() - self.started:.0f} s")
            self.stream.flush()

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
        self.seconds = time.monotonic() - self.started

    def done(self, text: str) -> None:
        """The final line on the terminal: how many and how fast (nothing when not shown)."""
        if self.enabled:
            self.stream.write(text + "\n")
            self.stream.flush()


def rate(n: int, seconds: float, unit: str = "events") -> str:
    """`in 2.4 s (20,833 events/s)`."""
    per = f"{n / seconds:,.0f}" if seconds > 0 else "∞"
    return f"in {seconds:.1f} s ({per} {unit}/s)"


def count_lines(path: str, limit_bytes: int = 4 << 30) -> int | None:
    """Newlines in a regular file (the total of a JSONL import's bar), or None (a stream, or a
    file over `limit_bytes`: counting would cost more than the bar is worth)."""
    import os
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > limit_bytes:
            return None
        n = 0
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                n += chunk.count(b"\n")
        return n
    except OSError:
        return None
