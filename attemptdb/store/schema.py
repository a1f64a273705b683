"""What an AttemptDB file's schema is made of, and how a file gets it.

Two sources, each with one job:
- `migrations/NNNN_name.sql`: tables, indexes and data changes, applied once each, in order;
  `PRAGMA user_version` is the last one applied. A migration may hold an `-- @after-install`
  line: what follows it is a data change that runs through the projection triggers (a re-derive),
  so it runs after the views and triggers are installed.
- `sql/NN_name.sql`: every view and trigger, as the SQL that runs now (one definition of each),
  installed whole in file-name order, statements in file order. Shared predicates are written
  once, in `sql/00_predicates.sql`, as `-- @define name(X) = expression` lines; a body writes
  `@name(NEW)` and the installer substitutes the expression with its parameter replaced by the
  argument (a row name, a column, any expression: `@us(max(c.first_at, x))`).

Invariants:
- An upgrade is one transaction: drop every view and trigger of ours, run the pending
  migrations, install the current views and triggers, run the migrations' after-install parts.
  A file's views and triggers are therefore always exactly the current SQL of the code that
  last migrated it; changing anything in `sql/` needs a new migration (it may hold only a
  comment saying what changed), which `tests/test_schema_files.py` enforces.
- Only os on import (re and the SQL files only when a file is built or upgraded): the hook
  path opens every file through this module.
"""

import os

from .. import resources

AFTER_INSTALL = "-- @after-install"
DEFINE = "-- @define "
PREDICATES_FILE = "00_predicates.sql"
"""The one file of sql/ whose `-- @define` lines are read (tests/test_schema_files.py: no other has one)."""


def migrations() -> list[tuple[int, str]]:
    """(number, path) of every shipped migration, in order."""
    d = resources.folder("migrations")
    out = [(int(name[:4]), os.path.join(d, name)) for name in os.listdir(d)
           if name.endswith(".sql") and name[:4].isdigit()]
    out.sort()
    return out


def latest() -> int:
    return migrations()[-1][0]


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def migration_parts(path: str) -> tuple[str, str]:
    """(the tables-and-data part, the after-install part) of one migration."""
    text = _read(path)
    before, _, after = text.partition(AFTER_INSTALL)
    return before, after


def sql_files() -> list[str]:
    d = resources.folder("sql")
    return [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(".sql")]


def _predicates(texts) -> dict:
    """{name: (parameter, expression)} of every `-- @define name(X) = expression` line."""
    found = {}
    for text in texts:
        for line in text.split("\n"):
            if line.startswith(DEFINE):
                head, _, expr = line[len(DEFINE):].partition(" = ")
                name, _, arg = head.rstrip(")").partition("(")
                found[name] = (arg, expr.strip())
    return found


def _ident(c: str) -> bool:
    return c.isalnum() or c == "_"


def expand(text: str, predicates: dict, _depth: int = 0) -> str:
    """`@name(ARG)` → the predicate's expression, in parentheses, with its parameter (a whole
    word) replaced by ARG, outside comment lines. An unknown name is an error: a typo must
    not reach a file. String scanning, no `re`: a hook may build the first file."""
    if _depth > 8:
        raise ValueError("projection SQL predicates nest too deep (a predicate using itself?)")
    return "\n".join(line if line.lstrip().startswith("--") else _expand_line(line, predicates, _depth)
                     for line in text.split("\n"))


def _expand_line(text: str, predicates: dict, depth: int) -> str:
    out, i = [], 0
    while True:
        at = text.find("@", i)
        if at < 0:
            out.append(text[i:])
            return "".join(out)
        j = at + 1
        while j < len(text) and _ident(text[j]):
            j += 1
        close = _closing(text, j) if j > at + 1 and j < len(text) and text[j] == "(" else -1
        if close < 0:
            out.append(text[i:j])
            i = j
            continue
        name, value = text[at + 1:j], text[j + 1:close]
        if name not in predicates:
            raise ValueError(f"unknown predicate @{name} in the projection SQL")
        arg, expr = predicates[name]
        value = expand(value, predicates, depth + 1)
        out.append(text[i:at] + "(" + expand(_rename(expr, arg, value), predicates, depth + 1) + ")")
        i = close + 1


def _closing(text: str, open_at: int) -> int:
    """The index of the parenthesis closing the one at `open_at` (quoted text skipped), or -1."""
    depth, k, quote = 0, open_at, None
    while k < len(text):
        ch = text[k]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return k
        k += 1
    return -1


def _rename(expr: str, arg: str, value: str) -> str:
    """The definition's parameter `arg`, wherever it stands as a whole word, becomes `value`."""
    out, i = [], 0
    while True:
        k = expr.find(arg, i)
        if k < 0:
            out.append(expr[i:])
            return "".join(out)
        end = k + len(arg)
        whole = (k == 0 or not _ident(expr[k - 1])) and (end == len(expr) or not _ident(expr[end]))
        out.append(expr[i:k] + (value if whole else arg))
        i = end


def predicates() -> dict:
    return _predicates([_read(os.path.join(resources.folder("sql"), PREDICATES_FILE))])


def current_sql() -> list[tuple[str, str]]:
    """(file name, SQL ready to run) of every view-and-trigger file, in install order."""
    texts = [(os.path.basename(p), _read(p)) for p in sql_files()]
    preds = _predicates(t for name, t in texts if name == PREDICATES_FILE)
    return [(name, expand("\n".join(line for line in text.split("\n") if not line.startswith(DEFINE)), preds))
            for name, text in texts]


def object_names() -> dict:
    """{name: 'view' | 'trigger'} of every object the current SQL creates (a statement starts
    a line with `CREATE VIEW name` or `CREATE TRIGGER name`: tests/test_schema_files.py)."""
    found = {}
    for _, text in current_sql():
        for line in text.split("\n"):
            words = line.split(None, 3)
            if len(words) >= 3 and words[0] == "CREATE" and words[1] in ("VIEW", "TRIGGER"):
                found[words[2].split("(")[0]] = words[1].lower()
    return found


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def install(conn) -> None:
    """Create every current view and trigger (none of them may exist yet)."""
    for _name, text in current_sql():
        conn.execute(text)


def drop_ours(conn) -> None:
    """Drop every view and trigger the current SQL creates (a user's own are left alone)."""
    ours = object_names()
    for kind, name in conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger')").fetchall():
        if ours.get(name) == kind:
            conn.execute(f"DROP {kind.upper()} {_quoted(name)}")


def upgrade(conn, pending: list[tuple[int, str]]) -> None:
    """Inside the caller's write transaction: bring a file to the current schema."""
    conn.execute("PRAGMA legacy_alter_table = ON")  # a rebuilt table keeps its name; nothing else is rewritten
    try:
        drop_ours(conn)
        afters = []
        for _n, path in pending:
            before, after = migration_parts(path)
            conn.execute(before)
            if after.strip():
                afters.append(after)
        install(conn)
        preds = predicates()
        for after in afters:
            conn.execute(expand(after, preds))
    finally:
        conn.execute("PRAGMA legacy_alter_table = OFF")


def build(conn, version: int) -> None:
    """The schema of a file at `version`, on an empty connection: migrations 1..version, and
    the current views and triggers when `version` is the latest (for an older version they
    are whatever the code that wrote it installed; verify says it cannot check them)."""
    for n, path in migrations():
        if n > version:
            break
        conn.execute(migration_parts(path)[0])
    if version == latest():
        install(conn)
