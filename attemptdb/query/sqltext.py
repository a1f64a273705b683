"""SQL text without a parser: skip whitespace and comments, read the first word, classify a
statement (AttemptQL, read-only SQL, write), split the first statement off."""


import apsw

SQL_VERBS = ("SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA")
WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "CREATE", "DROP", "ALTER", "ATTACH", "DETACH",
               "VACUUM", "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")
AQL_VERBS = ("SHOW", "WHY", "TRACE", "STATE", "DIFF", "WHAT")
TABLE_FUNCTIONS = ("attempt_trace", "state_at", "evidence")


# --- classification ------------------------------------------------------------------------

def skip_space(text: str, i: int = 0) -> int:
    r"""The end of whitespace and `--` comments from i: AttemptQL's `_`, (?:\s+|--[^\n]*)*
    (\s is str.isspace, as in `re`)."""
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        else:
            break
    return i


def skip_ws(text: str, i: int = 0) -> int:
    """The end of SQL's whitespace and comments from i (`--` and `/* */`)."""
    while True:
        i = skip_space(text, i)
        if not text.startswith("/*", i):
            return i
        j = text.find("*/", i + 2)
        i = len(text) if j < 0 else j + 2


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


def explain_refusal(text: str):
    """The AQL02xx error of an EXPLAIN that has nothing to explain, or None: EXPLAIN alone, EXPLAIN
    EXPLAIN, EXPLAIN of DESCRIBE or SHOW TABLES (they read the catalog, no plan) and EXPLAIN QUERY
    PLAN of AttemptQL (EXPLAIN SHOW … is its plan). Caught here, before SQLite or the grammar
    would answer for them."""
    from .errors import AQLError
    i = skip_ws(text)
    w, j = word(text, i)
    if w != "EXPLAIN":
        return None
    k = skip_ws(text, j)
    w2, j2 = word(text, k)
    if only_trivia(text[j:]):
        return AQLError("AQL0202", "EXPLAIN needs a statement: EXPLAIN SHOW … or EXPLAIN SELECT …", source=text, pos=k, end=k + 1,
                        label="expected a statement after EXPLAIN")
    if w2 == "EXPLAIN":
        return AQLError("AQL0205", "EXPLAIN is given twice", source=text, pos=k, end=j2, label="second time")
    if w2 in ("DESCRIBE", "DESC") or (w2 == "SHOW" and word(text, skip_ws(text, j2))[0] == "TABLES"):
        what = "DESCRIBE" if w2 != "SHOW" else "SHOW TABLES"
        end = j2 if w2 != "SHOW" else word(text, skip_ws(text, j2))[1]
        return AQLError("AQL0201", f"EXPLAIN cannot take {what} (no query plan to show)", source=text, pos=k, end=end, label="nothing to explain")
    if w2 == "QUERY":
        m = skip_ws(text, j2)
        w3, j3 = word(text, m)
        w4, j4 = word(text, skip_ws(text, j3)) if w3 == "PLAN" else ("", j3)
        if w4 in AQL_VERBS:
            at = skip_ws(text, j3)
            return AQLError("AQL0201", f"EXPLAIN QUERY PLAN takes SQL; for AttemptQL write EXPLAIN {w4} …", source=text, pos=at, end=j4, label="AttemptQL after EXPLAIN QUERY PLAN")
    return None


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


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}  # same length, unlike str.lower
_MARKS = ("'", '"', "(", ")", ",", "from")


def _word_char(c: str) -> bool:  # `\w` of `re`
    return c.isalnum() or c == "_"


def select_columns(body: str) -> tuple[list[tuple[str, str]], str]:
    r"""A plain `SELECT a, b AS c, … FROM …` text (no comments, no leading WITH) cut into its
    result columns, each (name, text), and the rest from its top-level FROM on. A column's name
    is the word that ends it (`AS name`, or the column of `x.name`). Quoted texts are skipped
    whole, a FROM counts where no word character or `.` is before it and no word character
    after it (what `'[^']*'|"[^"]*"|[(),]|(?<![\w.])FROM\b`, case-insensitive, finds; without
    `re`, which a cold `attempt query` does not import)."""
    head = skip_ws(body)
    w, i = word(body, head)
    if w != "SELECT":
        raise ValueError("expected SELECT")
    low = body.translate(_ASCII_LOWER)
    ahead = {m: low.find(m, i) for m in _MARKS}  # the next place of each mark from where we are
    cols, depth, start = [], 0, i
    while True:
        found = [(p, m) for m, p in ahead.items() if p >= 0]
        if not found:
            raise ValueError("expected FROM")
        j, m = min(found)
        on = j + 1
        if m in ("'", '"'):
            k = body.find(m, j + 1)
            on = k + 1 if k >= 0 else on  # an unclosed quote is passed over
        elif m == "(":
            depth += 1
        elif m == ")":
            depth -= 1
        elif m == ",":
            if depth == 0:
                cols.append(body[start:j])
                start = j + 1
        elif depth == 0 and not (j > i and (_word_char(body[j - 1]) or body[j - 1] == ".")) \
                and not (j + 4 < len(body) and _word_char(body[j + 4])):
            cols.append(body[start:j])
            named = [(c.rstrip().rsplit(None, 1)[-1].rsplit(".", 1)[-1], c.strip()) for c in cols]
            return named, body[j:]
        for mark, p in ahead.items():
            if 0 <= p < on:
                ahead[mark] = low.find(mark, on)
