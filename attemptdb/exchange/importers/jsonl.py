"""`attempt import jsonl FILE`: append canonical Event v1 lines to the store.

Invariants: idempotent (events already stored are counted as duplicates, never re-linked; a
line whose event differs from the one stored under its id is a conflict, reported, never stored);
one transaction per batch; every line of a batch is parsed and validated before the batch's
transaction starts, so a malformed line (reported with its number, never its content) leaves
nothing of its batch written and stops the import; every event passes the ingestion contract
before it is stored. Large files are prepared (parse, validate, ingestion contract, row and
line pieces) in forked processes, one per core beyond the writer (at least two, at most
four: `preparers`; batches dealt round, each read back in the stream's order), while this one
links and writes: the result is byte-identical to the single-process path, and a bad line
is reported as it would be.
"""

import gc
import io
import marshal
import os

import apsw

from ...errors import AttemptError
from ...model import event
from ...model.event import MAX_LINE
from ...store import cores
from ..conformance import bounded_lines

BATCH = 2500  # events per transaction (one lock hold of ~0.3 s on a laptop)
PIPELINE_MIN_BYTES = 4 << 20
IMPORT_CACHE_KIB = 64 << 10
IMPORT_WAL_BYTES = 256 << 20
"""The WAL an import lets grow between two checkpoints (checkpoint_pages turns it into the
file's pages: 16,384 of 16 KiB). Counted in bytes since files moved to 16 KiB pages: 65,536 pages
had become 1 GiB. The writer alone (200k prepared events, every projection, alternated twice)
took 92-102 µs an event with 256 MiB against 106-108 µs with 1 GiB, its final checkpoint 0.2 s
against 0.6 s; whole `attempt bench ingest` runs did not resolve the difference on a drifting host."""
IMPORT_TRUNCATE_WAIT_S = 1.0
IMPORT_BUSY_S = 300.0
PIPE_BYTES = 1 << 20  # the default /proc/sys/fs/pipe-max-size
READ_BYTES = 1 << 20  # a preparer's read buffer


def checkpoint_pages(page_size: int) -> int:
    """`PRAGMA wal_autocheckpoint` for IMPORT_WAL_BYTES of a file with pages of `page_size`."""
    return max(1000, IMPORT_WAL_BYTES // max(512, int(page_size)))


class ImportReport:
    """Counts of an import; `conflicts`: the ids (bare) of lines whose event differs from the one
    stored under their id (counted in `duplicates` too; never stored)."""

    __slots__ = ("lines", "accepted", "duplicates", "conflicts")

    def __init__(self):
        self.lines = 0
        self.accepted = 0
        self.duplicates = 0
        self.conflicts = []

    def as_dict(self):
        return {"lines": self.lines, "accepted": self.accepted, "duplicates": self.duplicates,
                "conflicts": len(self.conflicts)}


def _lines(stream):
    """(line number, bytes) of every non-blank line. A line longer than MAX_LINE stops the
    import with its number, after reading at most MAX_LINE + 1 bytes of it: a hostile or
    corrupt file without newlines is never held in memory whole."""
    limit = MAX_LINE
    for lineno, raw in bounded_lines(stream, limit):
        if raw is None:
            raise AttemptError("import.bad_line", f"line {lineno}: longer than {limit:,} bytes (not read)")
        raw = raw.rstrip(b"\r\n")
        if raw.strip():
            yield lineno, raw


def prepared_batches(stream, ingest, batch, part: int = 0, parts: int = 1):
    """Yield lists of event.Prepared, `batch` lines each; an AttemptError for a bad line is
    raised when reached. With `parts` > 1, only batches number part, part + parts, … (from 0):
    the lines of the others are read and counted, not parsed (one of `parts` preparers)."""
    pending = []
    taken = number = 0
    mine = part == 0
    for lineno, raw in _lines(stream):
        if mine:
            env = ingest(event.parse_line(raw, lineno))
            try:
                p = event.Prepared(env)
                # a lone surrogate (a \ud800 escape) is no storable text: refused here, with
                # its line, not by the writer's hash of its batch (an ASCII text is known so)
                for text in (p.pre, p.rest, p.tail):
                    if not text.isascii():
                        text.encode("utf-8")
                pending.append(p)
            except event.EventError as e:
                raise AttemptError("import.bad_line", f"line {lineno}: {e}") from None
            except UnicodeEncodeError:
                raise AttemptError("import.bad_line", f"line {lineno}: text is not valid Unicode "
                                   "(a lone surrogate escape)") from None
        taken += 1
        if taken >= batch:
            if mine:
                yield pending
                pending = []
            taken = 0
            number += 1
            mine = number % parts == part
    if pending:
        yield pending


def _write(store, batches, rep: ImportReport, progress=None):
    # Between two transactions the next batch is unpacked (or prepared), which leaves other
    # writers milliseconds to take the lock: SQLite queues no writers, they poll every 1-5 ms.
    for items in batches:
        rep.lines += len(items)
        res = store.append_prepared(items)
        rep.accepted += len(res.accepted)
        rep.duplicates += len(res.duplicates)
        rep.conflicts += res.conflicts
        if progress is not None:
            progress(len(items))


def import_stream(store, stream, *, batch: int = BATCH, ingest=None, report=None,
                  pipeline: bool | int = False, progress=None) -> ImportReport:
    """Import JSONL from a binary stream. `ingest(env) -> env` is the ingestion contract
    (privacy); it defaults to the store's own. `progress(n)` is told of every batch stored.
    `pipeline`: prepare in forked processes (True: `preparers()` of them; a number: that many)."""
    rep = report or ImportReport()
    if ingest is None:
        from ...ingest.contract import ingest_for
        ingest = ingest_for(store)
    with bulk_import(store):
        if pipeline and cores.available() > 1 and hasattr(os, "fork"):
            parts = preparers() if pipeline is True else int(pipeline)
            _write(store, _from_child(stream, ingest, batch, parts), rep, progress)
        else:
            _write(store, prepared_batches(stream, ingest, batch), rep, progress)
    return rep


class bulk_import:
    """For the length of an import, on the writing connection: a page cache of
    IMPORT_CACHE_KIB (the indexes and projection rows a stream touches stay in memory instead of
    being read back from the OS) and a WAL checkpoint every IMPORT_WAL_BYTES instead of every
    1,000 pages (a page the projections rewrite in every batch is copied into the file once per
    checkpoint, with fewer fsyncs; measured on 200k events with 4 KiB pages: 16,384 pages instead
    of 1,000 took ~15% off each event, 65,536 instead of 16,384 another ~4%, the final checkpoint
    included); waiting up to IMPORT_BUSY_S for
    another writer's lock (a bulk job waits its turn rather than fail); no cyclic garbage
    collection (batches allocate many objects, none in cycles). All restored after; a
    successful import then truncates the WAL (waiting at most IMPORT_TRUNCATE_WAIT_S for
    readers), so a connection that stays open, like the capture daemon's, keeps no 256 MiB file."""

    def __init__(self, store):
        self.store = store

    def __enter__(self):
        st, c = self.store, self.store.conn
        self.cache = c.execute("PRAGMA cache_size").fetchone()[0]
        self.checkpoint = c.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        self.busy = st.busy_timeout_s
        c.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
        c.execute(f"PRAGMA wal_autocheckpoint = {checkpoint_pages(c.execute('PRAGMA page_size').fetchone()[0])}")
        st.set_busy_timeout(max(self.busy, IMPORT_BUSY_S))
        self.gc = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.gc:
            gc.enable()
        try:
            if exc[0] is None:
                self.store.set_busy_timeout(IMPORT_TRUNCATE_WAIT_S)
                try:  # a reader still on an older snapshot: the WAL stays, the next checkpoint has it
                    self.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except apsw.BusyError:
                    pass
            self.store.set_busy_timeout(self.busy)
            self.store.conn.execute(f"PRAGMA cache_size = {int(self.cache)}")
            self.store.conn.execute(f"PRAGMA wal_autocheckpoint = {int(self.checkpoint)}")
        except apsw.Error:
            if exc[0] is None:
                raise
            # the import already failed, maybe with the connection: its error is the one to report


MAX_PREPARERS = 4
"""Four preparers outrun the writer even with its projections paused (≈ 100 µs an event each
against the writer's ≈ 28 µs); more would only each read the whole file to count its lines."""


def preparers() -> int:
    """How many preparing processes an import forks: one per core beyond the writer's, at
    least two (the writer also waits on its disk and on each hand-over, time a second preparer
    fills: measured on two cores, 20k events, two preparers import 1.1x as fast as one, and
    1.5x with the projections paused; three no faster than two) and at most MAX_PREPARERS."""
    return min(MAX_PREPARERS, max(2, cores.available() - 1))


class _PreadRaw(io.RawIOBase):
    """A file descriptor read with pread from an offset of its own: forked preparers share the
    open file (and so its offset) yet each reads the whole stream."""

    def __init__(self, fd: int, offset: int):
        self.fd, self.offset = fd, offset

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = os.pread(self.fd, len(buf), self.offset)
        buf[:len(data)] = data
        self.offset += len(data)
        return len(data)


def _own_reader(stream):
    """A reader of `stream` from where it stands, on an offset of its own; None when the stream
    is no plain file (a pipe, a socket, memory)."""
    try:
        fd, at = stream.fileno(), stream.tell()
        os.pread(fd, 0, at)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return io.BufferedReader(_PreadRaw(fd, at), READ_BYTES)


def _from_child(stream, ingest, batch, parts: int = 1):
    """Run `prepared_batches` in forked children, `parts` of them when the stream is a plain
    file (child i prepares batches i, i + parts, …, each reading the file on its own offset),
    else one; yield their batches here, in the stream's order."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    readers = [_own_reader(stream) for _ in range(parts)] if parts > 1 else [stream]
    if None in readers:
        readers = [stream]
    parts = len(readers)
    pipes, procs = [], []

    def child(reader, part, send):
        for recv in pipes:  # its own and the earlier preparers' read ends: only the writer reads,
            recv.close()  # so a preparer whose writer died meets a closed pipe, not a full one
        try:
            for items in prepared_batches(reader, ingest, batch, part, parts):
                send.send_bytes(marshal.dumps(("batch", [p.as_tuple() for p in items])))
            last = ("done", None)
        except AttemptError as e:
            last = ("error", (e.code, e.message))
        except BaseException as e:  # reported by the parent as an internal failure
            last = ("crash", type(e).__name__)
        try:
            send.send_bytes(marshal.dumps(last))
        except OSError:
            pass  # the writer is gone (it failed or was killed): nobody is left to tell, and no
            # traceback of ours may reach the user's terminal
        finally:
            send.close()

    try:
        for part, reader in enumerate(readers):
            recv, send = ctx.Pipe(duplex=False)
            _widen(recv)
            pipes.append(recv)
            proc = ctx.Process(target=child, args=(reader, part, send), daemon=True)
            proc.start()
            procs.append(proc)
            send.close()
        number = 0
        while True:
            try:
                kind, payload = marshal.loads(pipes[number % parts].recv_bytes())
            except (EOFError, OSError, ValueError):  # gone between messages, or in the middle of one
                raise AttemptError("import.worker", "the import worker stopped unexpectedly") from None
            if kind == "batch":
                number += 1
                yield [event.Prepared.from_tuple(t) for t in payload]
            elif kind == "done":  # the stream ended before this batch: no later one exists either
                return
            elif kind == "error":
                raise AttemptError(*payload)
            else:
                raise AttemptError("import.worker", f"the import worker failed ({payload})")
    finally:
        for recv in pipes:
            recv.close()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def _widen(conn, size: int = PIPE_BYTES):
    """Ask for a pipe buffer of `size` bytes (Linux; 64 KiB by default). The child then gets
    further into sending a batch before it blocks, and each batch crosses in fewer wake-ups:
    measured at 200k events, the writer waits ~35% less for its next batch. Best effort."""
    try:
        import fcntl
        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError):  # not Linux, or over the user's pipe allowance
        pass


def import_file(store, path: str, **kw) -> ImportReport:
    try:
        f = open(path, "rb")
        size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise AttemptError("import.unreadable", f"cannot read {path}: {e.strerror}") from None
    kw.setdefault("pipeline", size >= PIPELINE_MIN_BYTES)
    with f:
        return import_stream(store, f, **kw)
