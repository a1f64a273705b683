"""The file's schema against the migrations that made it.

Invariant: `differences(conn, version)` lists every table, view, index and trigger that
migrations 1..`version` create and the file lacks or holds with other SQL text, and every
trigger the migrations do not create on one of their tables or views (it would run inside
every write there). Other additions (a user's own index, view or table) are left alone. The
expected schema is built by running the shipped migrations on an in-memory database (~15 ms,
once per process and version), never kept as a second copy that could drift.
"""

import functools

import apsw

_OBJECTS = ("SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")


@functools.lru_cache(maxsize=4)
def expected(version: int) -> dict:
    """{name: (type, tbl_name, sql, number of the migration that last wrote it)}."""
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


def differences(conn, version: int, *, reported_missing=()) -> list:
    """What differs, as sentences (missing and changed objects by name, then foreign
    triggers). `reported_missing`: names whose absence the caller reports itself (a changed
    one is still listed: a no-op trigger under the old name must not pass)."""
    want = expected(version)
    have = {name: (t, tbl, sql) for t, name, tbl, sql in conn.execute(_OBJECTS)}
    out = []
    for name in sorted(want):
        t, tbl, sql, n = want[name]
        if name not in have:
            if name not in reported_missing:
                out.append(f"{t} {name} is missing (migration {n:04d} creates it)")
        elif have[name] != (t, tbl, sql):
            out.append(f"{t} {name} is not what migration {n:04d} wrote")
    ours = {name for name, (t, *_) in want.items() if t in ("table", "view")}
    for name in sorted(have):
        t, tbl, _ = have[name]
        if t == "trigger" and name not in want and tbl in ours:
            out.append(f"trigger {name} on {tbl} is not AttemptDB's: it runs inside every write there")
    return out
