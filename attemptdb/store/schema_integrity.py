"""The file's schema against what AttemptDB wrote (attemptdb/schema.py).

Invariants: `differences(conn, version)` lists every table and index that migrations
1..`version` create and the file lacks or holds with other SQL text; for a file at the latest
version also every view and trigger of the current SQL (`sql/`) that is missing or rewritten;
and every trigger that is not AttemptDB's on one of its tables or views (it would run inside
every write there). A file at an older version has the views and triggers of the code that
wrote it, which no longer exist as text: they are not compared (verify says so), and the next
write re-installs them. Other additions (a user's own index, view or table) are left alone. The
expected schema is built on an in-memory database by the same code that builds a file (~15 ms,
once per process and version), never kept as a second copy that could drift. `restore` makes
every view, index and trigger exactly what AttemptDB writes again, and drops foreign triggers on
its tables, keeping the order a table's triggers fire in; it never touches a table (tables
hold the data).
"""

import functools

import apsw

from ..errors import AttemptError
from . import schema

_OBJECTS = ("SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid")


@functools.lru_cache(maxsize=4)
def _origins() -> dict:
    """{name: where its current text lives}: the migration that last created a table or index
    with its text, the sql/ file of a view or trigger."""
    mem = apsw.Connection(":memory:")
    try:
        out: dict = {}
        for n, path in schema.migrations():
            mem.execute(schema.migration_parts(path)[0])
            now = {name: (t, tbl, sql) for t, name, tbl, sql in mem.execute(_OBJECTS)}
            out = {name: (*d, out[name][3] if name in out and out[name][:3] == d else f"migration {n:04d}")
                   for name, d in now.items()}
        for fname, text in schema.current_sql():
            mem.execute(text)
            for t, name, tbl, sql in mem.execute(_OBJECTS).fetchall():
                if name not in out:
                    out[name] = (t, tbl, sql, f"sql/{fname}")
        return {name: d[3] for name, d in out.items()}
    finally:
        mem.close()


@functools.lru_cache(maxsize=4)
def expected(version: int) -> dict:
    """{name: (type, tbl_name, sql, where its text lives)}, in creation order (which is also the
    order SQLite fires a table's triggers in, last created first)."""
    mem = apsw.Connection(":memory:")
    try:
        schema.build(mem, version)
        where = _origins()
        return {name: (t, tbl, sql, where.get(name, "?")) for t, name, tbl, sql in mem.execute(_OBJECTS)}
    finally:
        mem.close()


def _compare(conn, version: int):
    """(expected objects, the file's {name: (type, tbl_name, sql)}, the names of foreign
    triggers on AttemptDB's tables and views). For a file at an older version, its views and
    triggers of AttemptDB's names are neither expected nor foreign."""
    want = expected(version)
    have = {name: (t, tbl, sql) for t, name, tbl, sql in conn.execute(_OBJECTS)}
    ours = {name for name, (t, *_) in want.items() if t in ("table", "view")}
    if version != schema.latest():
        ours |= {name for name, t in schema.object_names().items() if t == "view"}
        have = {name: d for name, d in have.items() if name not in schema.object_names()}
    foreign = [name for name, (t, tbl, _) in have.items() if t == "trigger" and name not in want and tbl in ours]
    return want, have, foreign


def differences(conn, version: int, *, reported_missing=()) -> list:
    """What differs, as sentences (missing and changed objects by name, then foreign
    triggers). `reported_missing`: names whose absence the caller reports itself (a changed
    one is still listed: a no-op trigger under the old name must not pass)."""
    want, have, foreign = _compare(conn, version)
    out = []
    for name in sorted(want):
        t, tbl, sql, n = want[name]
        if name not in have:
            if name not in reported_missing:
                out.append(f"{t} {name} is missing ({n} creates it)")
        elif have[name] != (t, tbl, sql):
            out.append(f"{t} {name} is not what {n} writes")
    for name in sorted(foreign):
        out.append(f"trigger {name} on {have[name][1]} is not AttemptDB's: it runs inside every write there")
    return out


def summary(found: list) -> str:
    """One line for a user about a non-empty `differences` result, with what to do."""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"{found[0]}{more}; it was changed after AttemptDB wrote it (`attempt verify` lists what, "
            "`attempt reproject` puts views and triggers back)")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def restore(conn, version: int) -> list:
    """Put back what `differences` finds, inside the caller's write transaction; returns what
    was done, as phrases. A table that is missing or rewritten, or another kind of object under
    one of the migrations' names, cannot be put back: AttemptError, nothing done."""
    want, have, foreign = _compare(conn, version)
    for name, (t, tbl, sql, n) in want.items():
        got = have.get(name)
        if (t == "table" and got != (t, tbl, sql)) or (got is not None and got[0] != t):
            what = "is missing" if got is None else f"is not what {n} writes"
            raise AttemptError("store.schema_changed", f"{t} {name} {what}; AttemptDB does not rewrite a "
                               f"table (or remove another object under its name): restore the file from a copy")
    done = []
    for name, (t, tbl, sql, n) in want.items():
        if t in ("view", "index") and have.get(name) != (t, tbl, sql):
            if name in have:
                conn.execute(f"DROP {t.upper()} {_quoted(name)}")
            try:
                conn.execute(sql)
            except apsw.ConstraintError:  # a unique index whose absence let duplicates in
                raise AttemptError("store.schema_changed", f"index {name} cannot be put back: rows of {tbl} "
                                   "break it; restore the file from a copy") from None
            done.append(f"put back {t} {name} ({n})")
    redo = {tbl for name, (t, tbl, sql, _) in want.items()
            if t == "trigger" and have.get(name) != (t, tbl, sql)}
    redo |= {have[name][1] for name in foreign}
    for name, (t, tbl, _) in have.items():  # a table's triggers are dropped and created again in
        # order (SQLite fires the last created first); one of ours moved to another table goes too
        if t == "trigger" and (tbl in redo or (name in want and want[name][1] != tbl)):
            conn.execute(f"DROP TRIGGER {_quoted(name)}")
            if name not in want:
                done.append(f"dropped trigger {name} on {tbl} (not AttemptDB's)")
    for name, (t, tbl, sql, n) in want.items():
        if t == "trigger" and tbl in redo:
            conn.execute(sql)
            if have.get(name) != (t, tbl, sql):
                done.append(f"put back trigger {name} ({n})")
    return done
