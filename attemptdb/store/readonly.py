"""Read-only connections for queries: the file is opened SQLITE_OPEN_READONLY and an apsw
authorizer denies every write, schema change, PRAGMA change, ATTACH/DETACH, transaction
control and extension loading.

Invariant (DESIGN.md #6): nothing run on a connection from `connect()` (or its `companion`, a
second reader of the same file for one statement's parallel part) can change the file.
The authorizer is the gate; the read-only open flag, `query_only` and disabled extension
loading are further walls behind it. Reading pragmas that only describe the schema
(`table_info`, `index_list`, …) stays allowed, so DESCRIBE and the catalog work. Statements the
package builds from its own text alone (STATE's) may run with the plain gate lifted (`lifted`):
the walls behind it still hold, and a content wall is never lifted.
"""

import _thread

import apsw

from . import cores

# pragmas that only read; with an argument they name a table/index, never set a value
READ_PRAGMAS_WITH_ARG = frozenset({
    "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    "table_list",
})
# pragmas that are harmless to read but would change something when given a value
READ_PRAGMAS_NO_ARG = frozenset({
    "user_version", "schema_version", "application_id", "data_version", "page_count", "page_size",
    "freelist_count", "encoding", "compile_options", "function_list", "module_list", "pragma_list",
    "collation_list", "database_list", "journal_mode", "query_only", "foreign_keys",
})
DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "writefile", "edit", "readfile"})

_ALLOWED = {apsw.SQLITE_SELECT, apsw.SQLITE_READ, apsw.SQLITE_RECURSIVE}

# what a refusal names (action code → words); anything not listed is "this operation"
_WHAT = {
    apsw.SQLITE_INSERT: "INSERT", apsw.SQLITE_UPDATE: "UPDATE", apsw.SQLITE_DELETE: "DELETE",
    apsw.SQLITE_CREATE_TABLE: "CREATE TABLE", apsw.SQLITE_CREATE_INDEX: "CREATE INDEX",
    apsw.SQLITE_CREATE_VIEW: "CREATE VIEW", apsw.SQLITE_CREATE_TRIGGER: "CREATE TRIGGER",
    apsw.SQLITE_CREATE_TEMP_TABLE: "CREATE TEMP TABLE", apsw.SQLITE_CREATE_TEMP_INDEX: "CREATE INDEX",
    apsw.SQLITE_CREATE_TEMP_VIEW: "CREATE VIEW", apsw.SQLITE_CREATE_TEMP_TRIGGER: "CREATE TRIGGER",
    apsw.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE", apsw.SQLITE_DROP_TABLE: "DROP TABLE",
    apsw.SQLITE_DROP_INDEX: "DROP INDEX", apsw.SQLITE_DROP_VIEW: "DROP VIEW",
    apsw.SQLITE_DROP_TRIGGER: "DROP TRIGGER", apsw.SQLITE_DROP_TEMP_TABLE: "DROP TABLE",
    apsw.SQLITE_DROP_TEMP_INDEX: "DROP INDEX", apsw.SQLITE_DROP_TEMP_VIEW: "DROP VIEW",
    apsw.SQLITE_DROP_TEMP_TRIGGER: "DROP TRIGGER", apsw.SQLITE_DROP_VTABLE: "DROP VIRTUAL TABLE",
    apsw.SQLITE_ALTER_TABLE: "ALTER TABLE", apsw.SQLITE_ATTACH: "ATTACH", apsw.SQLITE_DETACH: "DETACH",
    apsw.SQLITE_TRANSACTION: "transaction control", apsw.SQLITE_SAVEPOINT: "SAVEPOINT",
    apsw.SQLITE_REINDEX: "REINDEX", apsw.SQLITE_ANALYZE: "ANALYZE", apsw.SQLITE_PRAGMA: "PRAGMA",
    apsw.SQLITE_FUNCTION: "this function",
}


class Gate:
    """The authorizer. Remembers the first refusal so the caller can name it."""

    def __init__(self):
        self.refused = None

    def __call__(self, action, arg1, arg2, dbname, trigger):
        if action in _ALLOWED:
            return apsw.SQLITE_OK
        if action == apsw.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            if name in DENIED_FUNCTIONS:
                return self._deny(action, f"the function {name}")
            return apsw.SQLITE_OK
        if action == apsw.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in READ_PRAGMAS_WITH_ARG or (name in READ_PRAGMAS_NO_ARG and arg2 is None):
                return apsw.SQLITE_OK
            return self._deny(action, f"PRAGMA {name}" + (" with a value" if arg2 is not None else ""))
        return self._deny(action, _WHAT.get(action, "this operation"))

    def _deny(self, action, what):
        if self.refused is None:
            self.refused = what
        return apsw.SQLITE_DENY


class lifted:
    """`with lifted(conn):` runs statements the package built from its own text alone (values
    bound, names from its SQL files) without the plain gate: SQLite asks the authorizer about
    every column a statement names, each time a call into Python, some 9,000 for the work-unit
    programs of one `STATE … AT t`. The read-only open and `query_only` still hold, so nothing
    can change the file; any other authorizer (the content wall of readers/content.py, which
    decides what a column reads) stays."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self.gate = None

    def __enter__(self):
        if type(self.conn.authorizer) is Gate:
            self.gate = self.conn.authorizer
            self.conn.authorizer = None
        return self

    def __exit__(self, *exc):
        if self.gate is not None:
            self.conn.authorizer = self.gate
        return False


class snapshot:
    """`with snapshot(conn):` every statement of the block on `conn` reads one snapshot of the
    file (one read transaction); nothing changes when `conn` is inside a transaction already.
    BEGIN, COMMIT (ROLLBACK when the block fails) are the package's own and read nothing: they
    run with the authorizer set aside (the gate refuses transaction control to a user's SQL)."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self.own = False

    def __enter__(self):
        if not self.conn.in_transaction:
            self._run("BEGIN")
            self.own = True
        return self

    def __exit__(self, kind, value, tb):
        if self.own:
            if kind is None:
                self._run("COMMIT")
            else:  # the block's error is what the caller sees; the transaction ends either way
                try:
                    self._run("ROLLBACK")
                except apsw.Error:
                    pass
        return False

    def _run(self, sql: str) -> None:
        authorizer = self.conn.authorizer
        self.conn.authorizer = None
        try:
            self.conn.execute(sql)
        finally:
            self.conn.authorizer = authorizer


def protect(conn: apsw.Connection) -> Gate:
    """Make an open connection read-only (authorizer + query_only); returns the gate."""
    try:
        conn.enable_load_extension(False)
    except (AttributeError, apsw.Error):
        pass
    conn.execute("PRAGMA query_only = 1")
    gate = Gate()
    conn.authorizer = gate
    return gate


def pairing(conn: apsw.Connection) -> tuple | None:
    """What `companion` needs to open a second reader beside `conn`: (its file, the authorizer
    `conn` has now); None where `conn` is not a plain read-only open of a named file (in memory,
    a URI open such as `immutable`, a writer) or the process has one core (two readers would
    only take turns): the caller then reads on `conn` alone. No I/O."""
    flags = getattr(conn, "open_flags", 0)
    path = getattr(conn, "filename", "")
    if not path or flags & apsw.SQLITE_OPEN_URI or not flags & apsw.SQLITE_OPEN_READONLY or cores.available() < 2:
        return None
    return path, conn.authorizer


def companion(pair: tuple) -> apsw.Connection:
    """A second connection to the file of a `pairing`, opened as `connect` opens (the same walls)
    with its authorizer (a gate of its own if the first connection's was lifted): the spare
    (`open_spare`) opened for that very file when there is one, else opened now. Opening it
    parses the schema: a few milliseconds, which a caller may spend in another thread
    (attemptdb.query.beside)."""
    path, authorizer = pair
    other, gate = _take_spare(path) or connect(path)
    other.authorizer = authorizer or gate  # the first connection's gate names what was refused
    return other


# --- a companion opened ahead -------------------------------------------------------------------

_SPARES: list = []  # the `begun` wait of each spare no companion took yet, oldest first


def begun(fn, *args):
    """`fn(*args)` begun in a thread of its own (`_thread`: `threading` costs a cold read ~1.5 ms
    of imports); calling the returned function waits for its value or raises its error."""
    done, box = _thread.allocate_lock(), []
    done.acquire()

    def run():
        try:
            box.append((True, fn(*args)))
        except BaseException as e:  # handed to the caller as it is
            box.append((False, e))
        finally:
            done.release()
    _thread.start_new_thread(run, ())

    def wait():
        done.acquire()
        done.release()
        ok, got = box[0]
        if not ok:
            raise got
        return got
    return wait


def open_spare(path: str) -> None:
    """Begin opening a reader of `path` as `connect` opens, in a thread, for the next `companion`
    of the same file to take instead of opening one (a statement that reads beside its own
    connection, begun while that connection is still opening: the two schema parses overlap).
    `close_spares` closes one that was never taken. None on one core (no companion there)."""
    if cores.available() < 2:
        return
    _SPARES.append(begun(connect, path))


def _opened(spare) -> tuple | None:
    """(conn, gate) of a spare once its thread is done, None when it failed to open."""
    try:
        return spare()
    except Exception:  # a spare that failed to open is never taken: companion opens anew
        return None


def _take_spare(path: str) -> tuple | None:
    """The oldest spare, once open, when it reads the file `path` (as SQLite names it); else
    None (a spare of another file stays for close_spares)."""
    try:
        spare = _SPARES.pop(0)  # one step under Python's lock: no two threads take the same spare
    except IndexError:
        return None
    got = _opened(spare)
    if got is not None and got[0].filename == path:
        return got
    _SPARES.append(spare)
    return None


def close_spares() -> None:
    """Close every spare no companion took (waiting for any still opening)."""
    while _SPARES:
        got = _opened(_SPARES.pop())
        if got is not None:
            got[0].close()


def connect(path: str) -> tuple[apsw.Connection, Gate]:
    """Open the AttemptDB at `path` read-only for queries (refusing a missing file, a non-
    database and a file written by a newer AttemptDB) and protect the connection."""
    from .database import Store
    store = Store.open(path, create=False, readonly=True)
    return store.conn, protect(store.conn)
