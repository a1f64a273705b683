"""SQL text without a parser: skip whitespace and comments, read the first word, classify a
statement (AttemptQL, read-only SQL, write), split the first statement off."""


import apsw

SQL_VERBS = ("SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA")
WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "CREATE", "DROP", "ALTER", "ATTACH", "DETACH",
               "VACUUM", "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")
AQL_VERBS = ("SHOW", "WHY", "TRACE", "STATE", "DIFF", "WHAT")
TABLE_FUNCTIONS = ("attempt_trace", "state_at", "evidence")


# --- classification ------------------------------------------------------------------------

def skip_ws(text: str, i: int = 0) -> int:
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


def word(text: str, i: int) -> tuple[str, int]:
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
        j += 1
    return text[i:j].upper(), j


def classify(text: str) -> str:
    """'sql', 'describe', 'tables', 'write' or 'attemptql' (the default)."""
    i = skip_ws(text)
    w, j = word(text, i)
    if w in ("SELECT", "WITH", "VALUES", "PRAGMA"):
        return "sql"
    if w == "EXPLAIN":
        w2, _ = word(text, skip_ws(text, j))
        return "attemptql" if w2 in AQL_VERBS else "sql"
    if w in ("DESCRIBE", "DESC"):
        return "describe"
    if w == "SHOW":
        w2, _ = word(text, skip_ws(text, j))
        if w2 == "TABLES":
            return "tables"
    if w in WRITE_VERBS:
        return "write"
    return "attemptql"


# --- plain SQL -------------------------------------------------------------------------------

def split_first_statement(sql: str) -> tuple[str, str]:
    """(first statement, the rest). Uses sqlite3_complete, so quotes, comments and
    CREATE TRIGGER bodies are handled the way SQLite itself does."""
    start = 0
    while True:
        k = sql.find(";", start)
        if k < 0:
            return sql, ""
        if apsw.complete(sql[: k + 1]):
            return sql[: k + 1], sql[k + 1:]
        start = k + 1


def only_trivia(rest: str) -> bool:
    i = skip_ws(rest)
    while i < len(rest) and rest[i] == ";":
        i = skip_ws(rest, i + 1)
    return i >= len(rest)


def select_columns(body: str) -> tuple[list[tuple[str, str]], str]:
    """A plain `SELECT a, b AS c, … FROM …` text (no comments, no leading WITH) cut into its
    result columns, each (name, text), and the rest from its top-level FROM on. A column's name
    is the word that ends it (`AS name`, or the column of `x.name`)."""
    import re
    head = skip_ws(body)
    w, i = word(body, head)
    if w != "SELECT":
        raise ValueError("expected SELECT")
    cols, depth, start = [], 0, i
    for m in re.finditer(r"'[^']*'|\"[^\"]*\"|[(),]|(?<![\w.])FROM\b", body[i:], re.IGNORECASE):
        tok, j = m.group(), i + m.start()
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok == ",":
            cols.append(body[start:j])
            start = j + 1
        elif depth == 0 and tok.upper() == "FROM":
            cols.append(body[start:j])
            named = [(c.rstrip().rsplit(None, 1)[-1].rsplit(".", 1)[-1], c.strip()) for c in cols]
            return named, body[j:]
    raise ValueError("expected FROM")
