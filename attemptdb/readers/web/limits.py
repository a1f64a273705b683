"""What one UI request may make the server hold: the bounds of the UI's SQLite connections.

Invariants:
- No statement on a UI connection builds or reads a text or BLOB longer than
  bounded.MAX_VALUE_BYTES (SQLITE_LIMIT_LENGTH, set by serve.ReadOnlyDatabase.connect):
  `randomblob(4e8)` is refused by SQLite, not allocated.
- One statement's rows hold at most MAX_FETCH_BYTES of text and BLOB values (query.result.value_bytes):
  every row of a cursor of a UI connection is counted as it is fetched, one at a time, and the
  fetch that would pass the budget raises instead of holding the row set (Datasette fetches up to
  max_returned_rows + 1 rows and renders them whole, base64 and JSON escapes included, so the
  budget is well under the MCP reader's).
- Both refusals are AnswerTooLarge, a sqlite3.OperationalError whose message starts with
  `AQL0502:`, so Datasette's query and table pages show it as any SQL error (status 400); the
  plugin's pages answer 400 with it too (plugin._read), and its recipes run by the engine carry
  the same two bounds on their apsw connection (AQL0502).
"""

import sqlite3

from ...query.result import fetch_refusal, value_bytes
from .. import bounded

MAX_VALUE_BYTES = bounded.MAX_VALUE_BYTES
MAX_FETCH_BYTES = 16 << 20
CODE = "AQL0502"


class AnswerTooLarge(sqlite3.OperationalError):
    """A statement past a bound of this module (its message starts with the code)."""

    def __init__(self, message: str):
        super().__init__(f"{CODE}: {message}")


def _coded(fn, *args):
    try:
        return fn(*args)
    except sqlite3.DataError as e:
        if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_TOOBIG:
            raise AnswerTooLarge(bounded.value_refusal(MAX_VALUE_BYTES)) from None
        raise


class Cursor(sqlite3.Cursor):
    """A cursor whose rows are counted one at a time against MAX_FETCH_BYTES (per statement)."""

    def __init__(self, conn):
        super().__init__(conn)
        self._left = MAX_FETCH_BYTES

    def execute(self, sql, parameters=()):
        self._left = MAX_FETCH_BYTES
        return _coded(super().execute, sql, parameters)

    def _charged(self, row):
        self._left -= value_bytes(row)
        if self._left < 0:
            raise AnswerTooLarge(fetch_refusal(MAX_FETCH_BYTES))
        return row

    def __next__(self):
        return self._charged(_coded(super().__next__))

    def fetchone(self):
        row = _coded(super().fetchone)
        return None if row is None else self._charged(row)

    def fetchmany(self, size=None):
        rows = []
        for _ in range(self.arraysize if size is None else size):
            row = self.fetchone()
            if row is None:
                break
            rows.append(row)
        return rows

    def fetchall(self):
        return list(iter(self.fetchone, None))


class Connection(sqlite3.Connection):
    """A connection whose every cursor (conn.execute's too) is a Cursor of this module."""

    def cursor(self, factory=Cursor):
        return super().cursor(factory)

    def execute(self, sql, parameters=()):
        return self.cursor().execute(sql, parameters)
