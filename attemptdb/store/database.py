"""The single-file store: open/create the SQLite file, migrate it, append facts to the chain.

Invariants:
- One file in WAL mode; `PRAGMA user_version` = the last migration applied; migrations run in
  order, each in its own transaction; a file newer than this code is refused (fail closed).
- The device identity (`dev_`, UUIDv7) is created once per file, race-free.
- A file is private from its first byte: created with mode 0600, and a file of the user's with
  nothing in it yet (`touch`) gets 0600 before a writer opens it (`sidefiles.make_private`:
  never through a symlink). A database with content keeps the mode it has: `sidefiles.exposed`
  names the files others can read, for doctor to say so.
- `append` runs in one `BEGIN IMMEDIATE` transaction: duplicates (by event id, within the batch
  and against the file) are found before anything is linked, and a duplicate whose event differs
  from the one stored under its id (its canonical line, with the clocks it leaves to the writer
  taken from the stored row) is also a conflict: never stored, the stored event kept; every new
  row gets `source_seq` (per device, strictly increasing), `hlc` (never backwards),
  `ingested_at`, `event_hash` and `chain_hash`; projection triggers run in the same transaction,
  and each INSERT must store every row it was given (a foreign trigger's RAISE(IGNORE):
  store.write_ignored, all rolled back). A batch is one INSERT, and a
  session its late events touch is re-derived once, after that INSERT (migrations/0006). An
  append that completes a 256-leaf block of the Merkle tree over the chain stores that block's
  node (evidence/merkle.py) in the same transaction.
Only apsw and C modules are imported: `attempt capture` uses this module.
"""

import _thread
import os
import stat
import time

import apsw

from ..errors import AttemptError
from ..model import clock
from . import schema, sidefiles

BUSY_TIMEOUT_S = 10.0
APPEND_BATCH = 500
PAGE_SIZE = 16384
WAL_FOLD_BYTES = 4 << 20
"""A writer closing beside a -wal larger than this folds it into the file (Store.close)."""
"""A new file's page size (spec/storage.md): an events row is 1-3 KB, so 4 KB pages held one or
two and left a fifth of the file unused; 16 KB pages leave about a twentieth."""
HLC_HORIZON_MS = 86_400_000  # foreign clocks more than a day ahead of ours are not followed
_WRITE_SQL: dict = {}


def _write_sql() -> dict:
    """The statements an append writes `events` with, named by event.COLUMNS (built at the first
    append: a read never loads the event model, the chain or the projections)."""
    if not _WRITE_SQL:
        from ..model import event
        row = f"{', '.join(event.COLUMNS)}, event_hash, chain_hash"
        params = f"({', '.join('?' * (len(event.COLUMNS) + 2))})"
        _WRITE_SQL.update(
            insert=f"INSERT INTO events ({row}) VALUES {params}",
            # the first row after the rows a recovery declared lost at the end of the chain takes
            # the seq after them (meta seq_floor), never one of theirs (spec/recover.md)
            insert_at=f"INSERT INTO events (seq, {row}) VALUES (?, {params[1:]}",
            # A batch goes into `events` as ONE statement, from rows staged in a connection-private
            # TEMP table: SQLite allocates the frames of the projection triggers once per statement
            # and reuses them for every row, instead of once per row as a statement per row would
            # (measured: the writer spends ~15% less per event on a 50k-event import; the rows and
            # triggers are the same).
            stage=f"CREATE TEMP TABLE IF NOT EXISTS append_stage ({row})",
            stage_insert=f"INSERT INTO temp.append_stage VALUES {params}",
            from_stage=f"INSERT INTO events ({row}) SELECT {row} FROM temp.append_stage ORDER BY rowid")
    return _WRITE_SQL


def request_replays(conn, sessions) -> None:
    """Re-derive each (session_id, raw_session_id, project_id, from_key), one replay request at
    a time (project_replay_session runs per request; from_key '' = the whole session)."""
    for row in sessions:
        conn.execute("INSERT OR REPLACE INTO replay_requests (rid, session_id, raw_session_id, "
                     "project_id, from_key) VALUES (1, ?, ?, ?, ?)", row)


PROGRESS_STEPS = 100_000  # SQLite VM instructions between two chances for Ctrl-C (a few ms)


def _signals_in() -> bool:
    return False


def let_signals_in(conn: apsw.Connection) -> None:
    """The progress handler every connection has when no statement needs another. SQLite runs
    a statement without returning to Python, so a Ctrl-C (SIGINT) would wait for the statement
    to end (minutes for `reproject` of a large file); entering Python every PROGRESS_STEPS
    (an import's writer: once per ~60 events) lets the pending KeyboardInterrupt raise, which
    aborts the statement (a write rolls back with its transaction). A query swaps in its own
    deadline handler, also Python, for its length (attemptql.execute)."""
    conn.set_progress_handler(_signals_in, PROGRESS_STEPS)


_ALLOCATION_COUNTED = [True]


def stop_counting_allocations() -> None:
    """Turn off SQLite's memory statistics (sqlite3_memory_used: nothing here reads them). While
    they are kept, every allocation SQLite makes takes a global mutex; preparing a large
    statement allocates hundreds of thousands of times (a tenth of its cost). SQLite takes this
    only while stopped, so it is done before the process's first connection, or not at all."""
    open_now = getattr(apsw, "connections", None)  # an apsw without it: SQLite is left as it is
    if _ALLOCATION_COUNTED[0] and open_now is not None and not open_now():
        apsw.shutdown()
        apsw.config(apsw.SQLITE_CONFIG_MEMSTATUS, 0)
        apsw.initialize()
        _ALLOCATION_COUNTED[0] = False


_OPENING = _thread.allocate_lock()


def _connection(path: str, flags: int) -> apsw.Connection:
    """apsw.Connection(path, flags) after stop_counting_allocations, the two under one lock: two
    threads may open at once (a read and its spare, store/readonly.py), and SQLite must not be
    stopped to change its configuration while another thread opens a connection."""
    with _OPENING:
        stop_counting_allocations()
        return apsw.Connection(path, flags=flags)


def _busy_handler(deadline_s: float):
    # Retry about every millisecond: SQLite's default handler sleeps up to 100 ms between tries,
    # which times out hooks when a writer holds the lock a little longer (DESIGN.md).
    start = [None]

    def handler(count: int) -> bool:
        now = time.monotonic()
        if count == 0 or start[0] is None:
            start[0] = now
        if now - start[0] > deadline_s:
            return False
        time.sleep(0.001 if count < 200 else 0.005)
        return True

    return handler


def keep_untouched(conn: apsw.Connection) -> None:
    """When `conn` closes, SQLite does not checkpoint the file's -wal into it (it does when the
    last connection to a file closes). For a file a command refuses or finds damaged: a -wal
    beside it may be another database's, whose pages would replace the file's own."""
    try:
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    except (AttributeError, apsw.Error):
        pass


def close_untouched(conn: apsw.Connection) -> None:
    keep_untouched(conn)
    try:
        conn.close()
    except apsw.Error:
        pass


def _uri_path(path: str) -> str:
    """`path` for a `file:` URI (percent-encoded where SQLite's URI parser would read it)."""
    return "".join(c if c.isalnum() or c in "/._-~" else "%{:02X}".format(ord(c)) if ord(c) < 128
                   else c for c in os.path.abspath(path))


def _clocked(p) -> tuple:
    """An event.Prepared as the writer would store it, less the clocks it has yet to assign."""
    return p.row, p.source_seq, p.hlc, p.ingested_at, p.pre, p.mid, p.rest, p.tail


class IgnoredWriteError(AttemptError):
    """store.write_ignored: the file dropped rows written to it (the database's fault, not an
    event's: a spool keeps its events for later)."""


def _landed(c, n: int) -> None:
    """The INSERT just run stored its `n` rows (a trigger that is not ours can drop a row with
    RAISE(IGNORE), and the append would count an event stored that is nowhere: the caller's
    ROLLBACK undoes the rest, a capture spools)."""
    got = c.changes()
    if got != n:
        raise IgnoredWriteError("store.write_ignored", f"{n - got:,} of {n:,} events written did not land in the "
                                "events table: a trigger that is not AttemptDB's dropped them; nothing of this write "
                                "was kept. `attempt verify` names the trigger; `attempt reproject` removes it",
                                exit_status=1)


class AppendResult:
    """What an append did: ids (bare UUIDs) stored, and ids that were already there; of those,
    `conflicts`: the ids whose event differs from the one stored (or first in the batch)."""

    __slots__ = ("accepted", "duplicates", "conflicts", "first_seq", "last_seq")

    def __init__(self):
        self.accepted: list[str] = []
        self.duplicates: list[str] = []
        self.conflicts: list[str] = []
        self.first_seq = None
        self.last_seq = None

    def __repr__(self):
        return f"AppendResult(accepted={len(self.accepted)}, duplicates={len(self.duplicates)})"


class Store:
    """An open AttemptDB file. `Store.open(path)` creates and migrates it when allowed."""

    def __init__(self, conn: apsw.Connection, path: str, readonly: bool):
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self.busy_timeout_s = BUSY_TIMEOUT_S
        self._device_id = None
        self._defers = None
        self._units = None
        self._merkle = None
        self._floor = None
        self._untouched = False
        self.created = False  # this open made the file a database (its identity is new)
        self.writer = not readonly  # opened to write (read-only media may have made it a reader: `reopen`)
        self._reopened = False

    # --- opening --------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, *, create: bool = True, readonly: bool = False,
             capture_mode: str | None = None, busy_timeout_s: float = BUSY_TIMEOUT_S) -> "Store":
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:  # SQLite takes UTF-8 file names only: refuse before creating
            shown = os.fsencode(path).decode("utf-8", "backslashreplace")
            raise AttemptError("store.path_not_utf8", f"the database path {shown} is not valid UTF-8; "
                               "SQLite cannot open it") from None
        try:
            info = os.stat(path)
        except FileNotFoundError:
            info = None
        except OSError as e:
            raise AttemptError("store.cannot_open", f"cannot open {path} ({e.strerror})") from None
        exists = info is not None
        if exists and not stat.S_ISREG(info.st_mode):  # SQLite would block forever on a pipe
            raise AttemptError("store.not_a_file", f"{path} is not a regular file (a directory, device "
                               "or pipe); choose another --db")
        if exists and sidefiles.stray_journal(path):
            raise AttemptError("store.cannot_open", f"cannot open {path}: a rollback journal ({path}-journal) lies "
                               "beside it, and a file in WAL mode never has one; SQLite would copy its pages into "
                               "the file (another database's, or planted). Move the -journal away (keep it), "
                               "then run the command again")
        if exists and not info.st_size and (wal := sidefiles.wal_without_file(path)):
            raise AttemptError("store.wal_without_file", f"{path} is empty, but the -wal beside it holds "
                               f"{wal:,} bytes of its newest writes: the file was "
                               "truncated or replaced by an empty one. Nothing was opened (SQLite would delete "
                               "that -wal). Keep both files as they are; restore the file from a copy, or read "
                               "what the -wal holds with `attempt recover`", exit_status=1)
        if not exists and (readonly or not create):
            raise AttemptError("store.missing",
                               f"no database at {path} (run `attempt init`, or let a hook create it)")
        # nothing in it yet (a `touch`, a failed copy); a file seen empty is looked at again: the
        # process creating it may have written it while the journal check above waited
        empty = exists and info.st_size == 0 and not sidefiles.size(path) and not sidefiles.size(path + "-wal")
        if empty:
            from . import location
            held = location.device_at(path)
            if held is not None:  # `> attempt.db`: never a new identity in the place of a history
                raise AttemptError("store.emptied", f"{path} is empty, but it held the history of {held}: the "
                                   "file was truncated or replaced by an empty one. Nothing was written to it. "
                                   "Restore it from a copy; or, to begin a new history here, remove the empty "
                                   "file", exit_status=1)
        if empty and (readonly or not create):
            # a reader never turns an empty file into a database
            raise AttemptError("store.empty", f"{path} is empty, not yet an AttemptDB (run `attempt init`, or "
                               "let a hook create it)")
        if not exists:
            d = os.path.dirname(path) or "."
            os.makedirs(d, mode=0o700, exist_ok=True)
            try:  # private from the first byte: the file can hold prompts and output
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600))
            except FileExistsError:
                pass
        elif empty and not readonly:
            # an empty file (a `touch`: the umask's 0644) about to become a database: private
            # before its first byte, and before this process opens it through SQLite (closing a
            # descriptor of a file drops every POSIX lock the process holds on it, SQLite's too)
            sidefiles.make_private(path)
        flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
        conn = None
        try:
            conn = _connection(path, flags)
            store = cls(conn, path, readonly)
            store.set_busy_timeout(busy_timeout_s)
            let_signals_in(conn)
            # the file is input like any other: its views and triggers may only call what
            # SQLite marks harmless (spec/checkpoint.md)
            conn.execute("PRAGMA trusted_schema=OFF")
            if os.path.basename(os.path.dirname(path)) == ".attemptdb":
                store._check_local_identity()  # before anything is read from or written to it
            if not readonly:
                # temp_store=MEMORY: each append touches a dozen pages and SQLite copies them into
                # a statement journal, which otherwise spills to a temp file past 64 KiB
                conn.execute("PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY")
                store._migrate(capture_mode)
            elif store._check_version() == 0 and not conn.execute("SELECT 1 FROM sqlite_master").fetchone():
                # an empty file: a database nobody created yet, nothing to read
                conn.close()
                raise AttemptError("store.empty", f"{path} is empty, not yet an AttemptDB (run `attempt "
                                   "init`, or let a hook create it)")
        except BaseException as e:
            if conn is not None:  # a refused file is left as it was: its -wal is not folded into it
                close_untouched(conn)
            if isinstance(e, apsw.SQLError) and "unsupported file format" in str(e):  # a header field
                raise AttemptError("store.not_a_database", f"{path} is not an AttemptDB (SQLite) file SQLite "
                                   "can read (unsupported file format)") from None
            if isinstance(e, apsw.NotADBError):
                raise AttemptError("store.not_a_database", f"{path} is not an AttemptDB (SQLite) file") from None
            if isinstance(e, apsw.CorruptError):
                from . import sqlerrors
                raise sqlerrors.corrupt(path, "open") from None
            if not isinstance(e, (apsw.CantOpenError, apsw.IOError, apsw.PermissionsError, apsw.ReadOnlyError,
                                  apsw.FullError)):
                raise
            if isinstance(e, apsw.ReadOnlyError) and not readonly and exists and sidefiles.free_sides(path):  # once
                return cls.open(path, create=create, capture_mode=capture_mode, busy_timeout_s=busy_timeout_s)
            from . import sqlerrors
            if (isinstance(e, apsw.FullError) or sqlerrors.no_space(path)) and not (readonly and exists):
                raise sqlerrors.disk_full(path) from None
            if exists and (sqlerrors.unwritable(path) or (readonly and sqlerrors.no_space(path))):
                # read-only media, or a reader on a full disk (no room for a -shm): read it as it is
                store = cls._open_immutable(path, busy_timeout_s, full=not sqlerrors.unwritable(path))
                store.writer = not readonly
                return store
            raise AttemptError("store.cannot_open", f"cannot open {path} ({type(e).__name__})") from None
        return store

    @classmethod
    def _open_immutable(cls, path: str, busy_timeout_s: float, full: bool = False) -> "Store":
        """A file on a read-only filesystem or in a read-only folder, where SQLite cannot make
        the -shm a WAL file needs even to read: opened `immutable` (nothing can change it), so
        reads work. A -wal holding rows would be ignored that way: refused instead."""
        try:
            wal = os.path.getsize(path + "-wal")
        except OSError:
            wal = 0
        if wal and full:
            from . import sqlerrors
            raise sqlerrors.disk_full(path)
        if wal:
            raise AttemptError("store.read_only_wal", f"{path} is on read-only storage and its -wal still holds "
                               "committed rows that only a writer can fold in; copy the file and its -wal "
                               "somewhere writable to read it")
        from urllib.parse import quote
        try:
            conn = apsw.Connection(f"file:{quote(path)}?immutable=1",
                                   flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            store = cls(conn, path, True)
            store.set_busy_timeout(busy_timeout_s)
            let_signals_in(conn)
            conn.execute("PRAGMA trusted_schema=OFF")
            store._check_version()
        except apsw.CorruptError:
            from . import sqlerrors
            raise sqlerrors.corrupt(path, "open") from None
        except apsw.Error as e:
            raise AttemptError("store.cannot_open", f"cannot open {path} ({type(e).__name__})") from None
        return store

    def reopen(self) -> bool:
        """After a write failed as read-only (apsw.ReadOnlyError), when the file can be written
        now: its -wal/-shm of ours get its mode back (free_sides), and the connection is closed
        and opened again, since SQLite keeps what it opened read-only for as long as the process
        has the file open (a file read-only when this store opened it, remounted or chmodded
        since; a -shm made while the file was read-only). True when reopened: the caller retries
        the write once. A reopen that can change nothing (the file still read-only; nothing
        repaired, already reopened once for that) is not done. Only for a store whose
        connection nobody holds on to: `conn` is a new connection after it."""
        if not self.writer or self._untouched:
            return False
        try:
            if not os.access(self.path, os.W_OK):
                return False
        except (OSError, ValueError):
            return False
        freed = sidefiles.free_sides(self.path)
        try:
            stale = self.readonly or self.conn.readonly("main")
        except apsw.Error:  # closed (a reopen that failed half-way)
            stale = True
        if not (freed or stale or not self._reopened):
            return False
        self._reopened = True
        busy = self.busy_timeout_s
        try:
            self.conn.close(True)  # every statement of it too: SQLite lets go of what it opened only then
        except apsw.Error:
            pass
        self.conn = conn = _connection(self.path, apsw.SQLITE_OPEN_READWRITE)
        self.readonly = False
        self.set_busy_timeout(busy)
        let_signals_in(conn)
        conn.execute("PRAGMA trusted_schema=OFF")
        if os.path.basename(os.path.dirname(self.path)) == ".attemptdb":
            self._check_local_identity()
        conn.execute("PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY")
        self._migrate(None)
        return True

    def close(self):
        if not self.readonly and not self._untouched:
            if sidefiles.wal_without_file(self.path):  # truncated while open: the -wal is all there is
                self.keep_untouched()
            else:
                self._fold_wal()
        self.conn.close()

    def _fold_wal(self) -> None:
        """Before a writer closes, a -wal past WAL_FOLD_BYTES is folded into the file and cut to
        nothing (a TRUNCATE checkpoint that never waits: busy, it is left for the next writer).
        SQLite does so itself only when the last connection to the file closes, and a read
        command's writer (cli/stores.housekeeping: a migration, a drained spool) closes before the
        read-only connection it serves, which cannot: the whole -wal then stayed, and every later
        reader that opens the file first reads all of it again to rebuild its index (a 775 MB
        -wal after a migration made each query ~180 ms slower)."""
        try:
            if os.path.getsize(self.path + "-wal") <= WAL_FOLD_BYTES:
                return
            self.conn.set_busy_handler(None)
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except (OSError, apsw.Error):
            pass

    def keep_untouched(self) -> None:
        """Closing this connection writes nothing into the file (a damaged one, spec/recover.md)."""
        self._untouched = True
        keep_untouched(self.conn)

    def _check_local_identity(self):
        """A project-local database must still be the one `attempt init --local` made there: git
        replaces an ignored file on a pull without a word, so a repository can put its own
        database in the place of the user's (DESIGN.md invariant 8). The identity is read from
        the main file alone (SQLite would lay the user's leftover `-wal` over a replaced file and
        show the user's identity), then, for a file never checkpointed yet, through the WAL."""
        from . import location
        recorded = location.local_device(self.path)
        if recorded is None:
            return
        found = None
        for uri in (f"file:{_uri_path(self.path)}?immutable=1", None):
            try:
                if uri is None:
                    found = self.meta("device_id")
                else:
                    main = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
                    try:
                        found = main.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone()
                        found = found and found[0]
                    finally:
                        main.close()
            except apsw.Error:
                found = None
            if found is not None:
                break
        if recorded == f"dev_{found}":
            return
        close_untouched(self.conn)
        raise AttemptError("store.local_replaced", f"{self.path} is not the database `attempt init --local` "
                           "made here (another device identity: a `git pull` or a copy put it in its place); "
                           "nothing was read from or written to it. Move it (and its -wal/-shm) away, then "
                           "run `attempt init --local` again", exit_status=1)

    def set_busy_timeout(self, seconds: float):
        """How long a statement waits for another writer's lock before SQLITE_BUSY."""
        self.conn.set_busy_handler(_busy_handler(seconds))
        self.busy_timeout_s = seconds

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def user_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def _check_version(self) -> int:
        v = self.user_version()
        known = schema.latest()
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if (tables or v > 0) and not {"meta", "events"} <= tables:
            # someone else's SQLite file (or a gutted one): never migrate into it
            raise AttemptError("store.not_attemptdb", f"{self.path} is a SQLite file but not an AttemptDB "
                               "database; choose another --db", exit_status=2)
        if v > known:
            raise AttemptError(
                "store.newer_schema",
                f"{self.path} was written by a newer AttemptDB (schema {v}; this one knows up to "
                f"{known}); upgrade attemptdb to read it", exit_status=1)
        return v

    def _migrate(self, capture_mode: str | None):
        from ..projections import units
        v = self._check_version()
        if v == schema.latest():
            return
        c = self.conn
        if v == 0 and c.execute("PRAGMA page_count").fetchone()[0] == 0:
            c.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # only a file not yet written takes it
        deadline = time.monotonic() + self.busy_timeout_s  # the pragma skips the busy handler: another
        while True:  # first opener of a new file (a hook and its daemon) may hold it, turning it to WAL
            try:
                c.execute("PRAGMA journal_mode=WAL")
                break
            except apsw.BusyError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)
        # every pending migration in one transaction: concurrent first openers (64 hooks on a
        # fresh file) see either nothing or the whole schema and its identity, never a part
        c.execute("BEGIN IMMEDIATE")
        try:
            v = self._check_version()  # another process may have migrated while we waited
            if v == 0 and c.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'").fetchone():
                # read under the write lock: outside it, another first opener may commit the schema
                # between reading the version and the tables. A file at version 0 is one never
                # written: migrating from nothing would fail half way
                raise AttemptError("store.version_reset", f"{self.path} says schema version 0 (a file never "
                                   "written) but holds AttemptDB's tables: its `PRAGMA user_version` was changed "
                                   "outside AttemptDB, and nothing is written to it until it is put back (`attempt "
                                   "verify` names the version its objects are)", exit_status=1)
            todo = [(n, p) for n, p in schema.migrations() if n > v]
            if todo:
                try:
                    schema.upgrade(c, todo)
                except apsw.SQLError as e:  # objects its version says it has not (a hand-edited version)
                    raise AttemptError("store.schema_changed", f"{self.path} holds objects its schema version "
                                       f"({v}) does not account for (upgrading it failed: {e.args[0] if e.args else e});"
                                       " AttemptDB does not rewrite a table: restore the file from a copy") from None
                units.refresh(c)  # turns an after-install part marked (0009: every turn of an old file)
            if v == 0:
                self._create_identity(capture_mode)
                self.created = True
            if todo:
                c.execute(f"PRAGMA user_version = {todo[-1][0]}")
            c.execute("COMMIT")
        except BaseException:
            if not c.getautocommit():
                c.execute("ROLLBACK")
            raise
        if self.created:  # what tells this history emptied in place from a file nobody used yet
            from . import location
            location.remember_database(self.path, "dev_" + self.device_id)

    def _create_identity(self, capture_mode: str | None):
        from ..model import ids
        mode = capture_mode or "local_semantic"
        self.conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('device_id', ?), ('created_at', ?), "
            "('capture_mode', ?), ('last_hlc', '0')",
            (ids.uuid7(), clock.iso(clock.now_us()), mode))

    # --- identity and settings ------------------------------------------------------------

    def meta(self, key: str, default=None):
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str):
        self.conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    @property
    def device_id(self) -> str:
        """This file's device id, bare UUID text. A file whose identity is not a UUID is
        refused: the id names key and checkpoint files, so it must never be a path."""
        from ..model import ids
        if self._device_id is None:
            dev = self.meta("device_id")
            if not ids.is_uuid(dev):
                raise AttemptError("store.identity", f"{self.path} has no valid device identity "
                                   "(meta.device_id is not a UUID)", exit_status=1)
            self._device_id = dev
        return self._device_id

    @property
    def capture_mode(self) -> str:
        """The stored capture mode; anything unreadable fails closed to metadata_only."""
        from ..model import event
        mode = self.meta("capture_mode")
        return mode if mode in event.CAPTURE_MODES else "metadata_only"

    # --- the chain ------------------------------------------------------------------------

    def head(self) -> tuple[int, str]:
        """(size, chain hash of the last row); (0, GENESIS) when empty."""
        from ..integrity import chain
        row = self.conn.execute("SELECT seq, chain_hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (0, chain.GENESIS) if row is None else (row[0], row[1])

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM events").fetchone()[0]

    def append(self, envelopes, *, now_us: int | None = None) -> AppendResult:
        """Append canonical, valid envelopes in order, in one transaction. Duplicates are
        reported, not stored; nothing is written if any envelope cannot be stored."""
        from ..model import event
        items = []
        for e in envelopes:
            event.check_storable(e)
            items.append(event.Prepared(e))
        return self.append_prepared(items, now_us=now_us)

    def append_uncommitted(self, envelopes, *, now_us: int | None = None) -> AppendResult:
        """`append` inside the caller's own open write transaction (`BEGIN IMMEDIATE`): the same
        checks, chain and triggers, committed or rolled back by the caller (dry runs)."""
        from ..model import event
        if self.conn.getautocommit():
            raise AttemptError("store.no_transaction", "append_uncommitted needs an open write transaction")
        items = []
        for e in envelopes:
            event.check_storable(e)
            items.append(event.Prepared(e))
        res = AppendResult()
        self._append_locked(items, res, clock.now_us() if now_us is None else now_us)
        return res

    def append_prepared(self, items, *, now_us: int | None = None) -> AppendResult:
        """Append `event.Prepared` items (the pure part of an append may run elsewhere)."""
        res = AppendResult()
        if not items:
            return res
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            self._append_locked(items, res, clock.now_us() if now_us is None else now_us)
            c.execute("COMMIT")
        except BaseException:
            if not c.getautocommit():
                c.execute("ROLLBACK")
            raise
        return res

    def _existing(self, wanted: list[str]) -> set:
        found = set()
        c = self.conn
        for i in range(0, len(wanted), APPEND_BATCH):
            chunk = wanted[i:i + APPEND_BATCH]
            q = f"SELECT event_id FROM events WHERE event_id IN ({','.join('?' * len(chunk))})"
            found.update(r[0][3:] for r in c.execute(q, ["ev_" + x for x in chunk]))
        return found

    def _differing(self, items) -> list[str]:
        """The ids of `items` (event.Prepared, each id stored) whose event is not the stored one:
        its line, finished with the stored row's clocks where it leaves them to the writer, does
        not hash to the stored event_hash."""
        from ..model import ids
        c = self.conn
        stored = {}
        for i in range(0, len(items), APPEND_BATCH):
            chunk = items[i:i + APPEND_BATCH]
            q = ("SELECT event_id, source_seq, hlc, ingested_at, event_hash FROM events "
                 f"WHERE event_id IN ({','.join('?' * len(chunk))})")
            stored.update((r[0][3:], r[1:]) for r in c.execute(q, ["ev_" + p.event_id for p in chunk]))
        out = []
        for p in items:
            seq, hlc, ing, h = stored[p.event_id]
            try:
                ing = p.ingested_at if p.ingested_at is not None else None if ing is None else clock.from_iso(ing)
                same = p.finish_hashed(p.source_seq or seq, p.hlc or hlc, ing, ids.sha256)[1] == h
            except (ValueError, TypeError, OverflowError):  # a stored row no writer made: not this event
                same = False
            if not same:
                out.append(p.event_id)
        return out

    def _append_locked(self, items, res: AppendResult, now: int):
        from ..integrity import chain
        from ..model import ids
        w = _write_sql()
        c = self.conn
        existing = self._existing([p.event_id for p in items])
        seen = {}
        fresh = []
        stored_again = []
        for p in items:
            eid = p.event_id
            if eid in existing:
                res.duplicates.append(eid)
                stored_again.append(p)
            elif eid in seen:
                res.duplicates.append(eid)
                if _clocked(p) != _clocked(seen[eid]):
                    res.conflicts.append(eid)
            else:
                seen[eid] = p
                fresh.append(p)
        if stored_again:
            res.conflicts.extend(self._differing(stored_again))
        if not fresh:
            return
        size, prev = self.head()
        last_hlc = int(self.meta("last_hlc", "0"))
        seqs = {}
        for dev in {p.device_id for p in fresh}:
            row = c.execute("SELECT last_source_seq FROM device_clock WHERE device_id = ?",
                            ("dev_" + dev,)).fetchone()
            seqs[dev] = row[0] if row else 0
        now_ms = now // 1000
        sha = chain.bulk_sha256() if len(fresh) > 8 else ids.sha256
        hlc_next = clock.hlc_next
        hlc_horizon = clock.hlc_pack(now_ms + HLC_HORIZON_MS, clock.HLC_LOGICAL_MAX)
        rows = []
        hashes = []
        for p in fresh:
            dev = p.device_id
            seq = p.source_seq or seqs[dev] + 1
            if seq > seqs[dev]:
                seqs[dev] = seq
            if p.hlc:
                hlc = p.hlc
                if last_hlc < hlc <= hlc_horizon:  # a clock from the far future is kept, not followed
                    last_hlc = hlc
            else:
                hlc = last_hlc = hlc_next(last_hlc, now_ms)
            row, h = p.finish_hashed(seq, hlc, now if p.ingested_at is None else p.ingested_at, sha)
            prev = chain.link(prev, h, sha)
            rows.append(row + (h, prev))
            hashes.append(h)
            res.accepted.append(p.event_id)
        if self._floor is None:
            self._floor = int(self.meta("seq_floor", "0") or 0)
        first = size + 1
        if self._floor > size:  # a recovered file whose newest rows were lost: after them
            first = self._floor + 1
            c.execute(w["insert_at"], (first,) + rows[0])
        rest = rows if first == size + 1 else rows[1:]
        if first != size + 1:
            _landed(c, 1)
        if len(rest) == 1:
            c.execute(w["insert"], rest[0])
            _landed(c, 1)
        elif rest:
            c.execute(w["stage"])
            c.executemany(w["stage_insert"], rest)
            if self._defers is None:  # a file with the projections (every file Store.open made)
                self._defers = bool(c.execute("SELECT 1 FROM pragma_table_info('projection_control') "
                                              "WHERE name = 'defer_replays'").fetchall())
            if self._defers:
                # late events of the batch note their session; each noted one replays once, after
                # (migrations/0006); on failure the caller's ROLLBACK undoes flag, stage and notes
                c.execute("UPDATE projection_control SET defer_replays = 1 WHERE id = 1")
            c.execute(w["from_stage"])
            _landed(c, len(rest))
            c.execute("DELETE FROM temp.append_stage")
            if self._defers:
                c.execute("UPDATE projection_control SET defer_replays = 0 WHERE id = 1")
                request_replays(c, c.execute("SELECT session_id, raw_session_id, project_id, from_key "
                                             "FROM replay_pending ORDER BY session_id").fetchall())
                c.execute("DELETE FROM replay_pending")
        res.first_seq, res.last_seq = first, first + len(rows) - 1
        if first == size + 1 and (size + len(rows)) >> 8 != size >> 8:  # a 256-leaf block of the Merkle tree completes
            if self._merkle is None:  # every file Store.open made has the table (migration 0010), but a
                # recovered one (gaps in seq: no tree, spec/recover.md)
                from ..integrity.recovery import META_KEY
                self._merkle = bool(c.execute("SELECT 1 FROM sqlite_master WHERE name = 'merkle_nodes'").fetchall()) \
                    and not self.meta(META_KEY)
            if self._merkle:
                from ..integrity import merkle
                merkle.maintain(c, size, hashes, sha)
        c.executemany("INSERT INTO device_clock(device_id, last_source_seq) VALUES (?, ?) "
                      "ON CONFLICT(device_id) DO UPDATE SET last_source_seq = "
                      "max(last_source_seq, excluded.last_source_seq)",
                      [("dev_" + d, s) for d, s in seqs.items()])
        self.set_meta("last_hlc", str(last_hlc))
        if self._units is None:  # a file with the unit tables (every file Store.open made)
            self._units = bool(c.execute("SELECT 1 FROM sqlite_schema WHERE name = 'unit_dirty'").fetchall())
        if self._units:
            from ..projections import units
            units.refresh(c)  # work units of the turns this append touched (sql/80_unit_marks.sql)


def dict_rows(conn, sql: str, params=()) -> list[dict]:
    """Rows of a query as dicts (column name → value)."""
    cur = conn.cursor()
    cur.row_trace = lambda c, r: dict(zip((d[0] for d in c.getdescription()), r))
    return cur.execute(sql, params).fetchall()
