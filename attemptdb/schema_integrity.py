"""The file's schema against the migrations that made it.

Invariants: `differences(conn, version)` lists every table, view, index and trigger that
migrations 1..`version` create and the file lacks or holds with other SQL text, and every
trigger the migrations do not create on one of their tables or views (it would run inside
every write there). Other additions (a user's own index, view or table) are left alone. The
expected schema is built by running the shipped migrations on an in-memory database (~15 ms,
once per process and version), never kept as a second copy that could drift. `restore` makes
every view, index and trigger of the migrations exactly what they wrote again, and drops foreign
triggers on their tables, keeping the order a table's triggers fire in; it never touches a
table (tables hold the data).
"""

import functools

import apsw

from .errors import AttemptError

_OBJECTS = ("SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid")


@functools.lru_cache(maxsize=4)
def expected(version: int) -> dict:
    """{name: (type, tbl_name, sql, number of the migration that last wrote it)}, in creation
    order (which is also the order SQLite fires a table's triggers in, last created first)."""
    from .store import migrations
    mem = apsw.Connection(":memory:")
    try:
        out: dict = {}
        for n, path in migrations():
            if n > version:
                break
            with open(path, encoding="utf-8") as f:
                mem.execute(f.read())
            now = {name: (t, tbl, sql) for t, name, tbl, sql in mem.execute(_OBJECTS)}
            out = {name: (*d, out[name][3] if name in out and out[name][:3] == d else n)
                   for name, d in now.items()}
        return out
    finally:
        mem.close()


def _compare(conn, version: int):
    """(expected objects, the file's {name: (type, tbl_name, sql)}, the names of foreign
    triggers on the migrations' tables and views)."""
    want = expected(version)
    have = {name: (t, tbl, sql) for t, name, tbl, sql in conn.execute(_OBJECTS)}
    ours = {name for name, (t, *_) in want.items() if t in ("table", "view")}
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
                out.append(f"{t} {name} is missing (migration {n:04d} creates it)")
        elif have[name] != (t, tbl, sql):
            out.append(f"{t} {name} is not what migration {n:04d} wrote")
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
            what = "is missing" if got is None else f"is not what migration {n:04d} wrote"
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
            done.append(f"put back {t} {name} (migration {n:04d})")
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
                done.append(f"put back trigger {name} (migration {n:04d})")
    return done
