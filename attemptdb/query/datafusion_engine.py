"""`attempt query --engine datafusion`: one SQL statement in DataFusion's dialect over the public
tables, loaded from the live database (one snapshot) or from an `attempt export` directory
(spec/export.md).

Invariants: read-only — DataFusion's own SQL options refuse DDL, DML (COPY, INSERT) and
statements (SET), and no table but the public ones registered here is reachable (a
SessionContext reads no file by name); only the tables a statement names are loaded; the
result is the same Result the SQLite engine returns, times as ISO-8601 `Z` text, every other
value Arrow cannot hand to Python (nanosecond times, decimals) as text; a statement run from the
main thread stops at the SQLite engine's time limit (AQL0501), as a Ctrl-C stops it.
"""

import datetime
import decimal
import os
import re
import signal
import threading

from ..errors import AttemptError
from .errors import AQLError
from .result import DEFAULT_TIMEOUT_S

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _named(sql: str, names) -> list:
    words = {w.lower() for w in _WORD.findall(sql)}
    return [n for n in names if n in words]


def _context():
    from ..exchange.arrow_export import INSTALL_ARROW, require_pyarrow
    require_pyarrow()
    try:
        from datafusion import SessionContext
    except ImportError:
        raise AttemptError("query.needs_datafusion", f"--engine datafusion needs datafusion; {INSTALL_ARROW}") from None
    return SessionContext()


def _load_live(ctx, conn, sql: str) -> None:
    import pyarrow as pa

    from ..exchange.arrow_export import batches, public_tables, schema
    conn.execute("BEGIN")  # one snapshot across the tables
    try:
        tables = public_tables(conn)
        needed = set(_named(sql, [t["name"] for t in tables]))
        for t in tables:
            if t["name"] in needed:
                got = list(batches(conn, t, include_content=True))  # the user's own machine
                ctx.from_arrow(pa.Table.from_batches(got, schema=schema(t)), t["name"])
    finally:
        conn.execute("COMMIT")


def _load_export(ctx, directory: str, sql: str) -> list:
    """Register the tables of an export directory the statement names; returns notes."""
    import pyarrow as pa

    from ..exchange.arrow_export import FORMATS, MANIFEST
    from ..model import fastjson
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as f:
            m = fastjson.loads(f.read(16 << 20).decode("utf-8"))
        fmt = m["format"]
        entries = {e["table"]: e["file"] for e in m["tables"]}
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise AttemptError("query.bad_export", f"{directory} holds no readable {MANIFEST} of "
                           "`attempt export`") from None
    if fmt not in FORMATS:
        raise AttemptError("query.bad_export", f"{directory}/{MANIFEST}: unknown format")
    for name in _named(sql, [n for n in entries if isinstance(n, str) and re.fullmatch(r"[a-z_]{1,64}", n)]):
        file = entries[name]
        if file != name + FORMATS[fmt]:  # a manifest naming some other path is not followed
            raise AttemptError("query.bad_export", f"{directory}/{MANIFEST}: table {name} names an unexpected file")
        path = os.path.join(directory, file)
        try:
            if fmt == "parquet":
                ctx.register_parquet(name, path)
            else:
                with pa.memory_map(path) as source:
                    ctx.from_arrow(pa.ipc.open_file(source).read_all(), name)
        except BaseException as e:  # OSError, ArrowException, DataFusion's own (a bare Exception)
            _reraise_unless_failure(e)
            raise AttemptError("query.bad_export", f"{path} cannot be read ({type(e).__name__})") from None
    return [f"tables from the export in {directory} ({m.get('created_at', '?')}, chain size "
            f"{(m.get('chain') or {}).get('size', '?')})"]


def _reraise_unless_failure(e: BaseException) -> None:
    """Raise `e` again unless it is DataFusion failing: an Exception, or the panic its Rust code
    raises on some damaged Parquet files (pyo3's PanicException derives from BaseException, so
    `except Exception` let it reach the terminal as a traceback)."""
    if not (isinstance(e, Exception) or type(e).__name__ == "PanicException"):
        raise e


def _is_dataset(directory: str) -> bool:
    from ..exchange.dataset import is_dataset
    return is_dataset(directory)


def _plain(v):
    if isinstance(v, bool):  # 0/1, as SQLite answers the same statement (the catalog's rule)
        return int(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc)
        return v.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(v, (datetime.date, datetime.time, datetime.timedelta, decimal.Decimal)):
        return str(v)
    return v


def run(sql: str, *, conn=None, directory: str | None = None, explain: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S):
    """Run `sql` (SELECT, WITH, VALUES, EXPLAIN) on DataFusion; returns an attemptql Result."""
    from .result import Result
    ctx = _context()
    from datafusion import SQLOptions
    if directory and _is_dataset(directory):  # `attempt export --dataset`: the team dataset
        from ..exchange.dataset import View
        view = View(directory)
        try:
            notes = view.register(ctx, _named(sql, view.tables()))
        except BaseException as e:  # DataFusion's own errors are bare Exceptions
            _reraise_unless_failure(e)
            raise AttemptError("query.bad_export", f"{directory}: the dataset cannot be read "
                               f"({type(e).__name__})") from None
    else:
        notes = _load_export(ctx, directory, sql) if directory else []
    if directory is None:
        _load_live(ctx, conn, sql)
    options = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
    text = ("EXPLAIN " + sql) if explain else sql
    try:
        with _deadline(timeout_s):
            table = ctx.sql_with_options(text, options).to_arrow_table()
    except AQLError:  # the time limit
        raise
    except BaseException as e:  # DataFusion reports planning and execution errors as exceptions
        _reraise_unless_failure(e)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AttemptError("query.datafusion", first[:300]) from None
    values = [_column(col) for col in table.columns]
    return Result(table.column_names, list(zip(*values)), notes=notes, language="sql")


class _deadline:
    """Past `seconds`, interrupt the statement as Ctrl-C does (DataFusion's Python bindings stop
    a running statement on KeyboardInterrupt) and raise AQL0501 instead. Only in the main thread
    with Python's own Ctrl-C handler (a signal reaches no other thread); elsewhere, no limit."""

    def __init__(self, seconds: float):
        self.seconds, self.lock, self.done, self.fired, self.timer = seconds, threading.Lock(), False, False, None

    def _fire(self):
        with self.lock:
            if not self.done:
                self.fired = True
                os.kill(os.getpid(), signal.SIGINT)

    def __enter__(self):
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self.timer = threading.Timer(self.seconds, self._fire)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, kind, exc, tb):
        if self.timer is not None:
            try:
                with self.lock:  # a SIGINT sent before this is raised by now, or right here
                    self.done = True
                self.timer.cancel()
            except KeyboardInterrupt:
                kind = KeyboardInterrupt
        if self.fired and kind is not None and issubclass(kind, KeyboardInterrupt):
            raise AQLError("AQL0501", f"the statement ran past its time limit ({self.seconds:g} s) and was "
                           "stopped; narrow it with WHERE, a time range or LIMIT") from None
        return False


def _column(col) -> list:
    """A result column as Python values; as text where Arrow has no Python value for it."""
    try:
        return [_plain(v) for v in col.to_pylist()]
    except (ValueError, TypeError, OverflowError):  # e.g. nanosecond times (pyarrow's ArrowInvalid)
        import pyarrow as pa
        try:
            if pa.types.is_timestamp(col.type):  # to µs, as every time of the product
                return [_plain(v) for v in col.cast(pa.timestamp("us", col.type.tz), safe=False).to_pylist()]
            return col.cast(pa.string()).to_pylist()
        except (ValueError, TypeError, NotImplementedError):
            return [None if not v.is_valid else str(v) for v in col]
