"""query/sqltext.select_columns: a view's SELECT list cut at its top-level commas, each column
named by the word that ends it, the rest from the top-level FROM on."""

import pytest

from attemptdb.query.sqltext import select_columns


def test_columns_are_cut_at_top_level_commas_only():
    body = ("SELECT u.work_unit_id, 1 AS version,\n"
            "  (SELECT json_group_array(x) FROM (SELECT a, b FROM t WHERE c IN (1, 2))) AS lists,\n"
            "  coalesce(u.a, 'x, FROM y') AS quoted, \"from\" AS q2, u.fromage\n"
            "FROM unit_index u JOIN v ON v.id = u.id WHERE u.x IN (SELECT y FROM z)")
    cols, rest = select_columns(body)
    assert [n for n, _ in cols] == ["work_unit_id", "version", "lists", "quoted", "q2", "fromage"]
    assert cols[2][1].startswith("(SELECT json_group_array(x)") and cols[2][1].endswith("AS lists")
    assert cols[3][1] == "coalesce(u.a, 'x, FROM y') AS quoted"
    assert rest.startswith("FROM unit_index u JOIN v") and rest.endswith("(SELECT y FROM z)")


def test_the_work_unit_views_are_cut_into_their_declared_columns(tmp_path):
    from attemptdb.query import units
    from attemptdb.store.database import Store
    store = Store.open(str(tmp_path / "a.db"))
    for name, body in units.view_bodies():
        declared = [r[1] for r in store.conn.execute(f"PRAGMA table_info({name})")]
        assert [n for n, _ in select_columns(body)[0]] == declared, name
    store.close()


@pytest.mark.parametrize("text", ["WITH x AS (SELECT 1) SELECT 1 FROM x", "SELECT 1"])
def test_what_is_not_a_plain_select_from_is_refused(text):
    with pytest.raises(ValueError):
        select_columns(text)


def _by_re(body: str):
    """select_columns as it was written with `re`: the reference the scanner must equal."""
    import re

    from attemptdb.query.sqltext import skip_ws, word
    w, i = word(body, skip_ws(body))
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
            return [(c.rstrip().rsplit(None, 1)[-1].rsplit(".", 1)[-1], c.strip()) for c in cols], body[j:]
    raise ValueError("expected FROM")


def _outcome(fn, body):
    try:
        return fn(body)
    except (ValueError, IndexError) as e:
        return type(e).__name__


def test_the_scanner_cuts_as_the_regex_did():
    """Random SELECT texts of the pieces that decide a cut (quotes, open and closed; parentheses;
    commas; FROM in any case, inside words, after a dot, before non-ASCII letters)."""
    import random

    from attemptdb.query import units
    pieces = ["a", " ", ",", "(", ")", "'", '"', "FROM", "from", "From", ".", "_", "x1", "é", " FROM ", "fromage",
              "xfrom", ".from", "from_", "fromé", "\n"]
    rng = random.Random(7)
    bodies = ["SELECT " + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14))) for _ in range(30000)]
    bodies += [b for _, b in units.view_bodies()] + [b for _, b in units.view_bodies(":t")]
    for body in bodies:
        assert _outcome(select_columns, body) == _outcome(_by_re, body), body


def test_the_names_of_a_unit_program_are_what_the_identifier_regex_finds():
    import random
    import re

    from attemptdb.query import units
    rng = random.Random(3)
    texts = ["".join(rng.choice("aZ_09 .é(-\n") for _ in range(rng.randint(0, 12))) for _ in range(20000)]
    texts += [b for _, b in units.view_bodies(":t")]
    for t in texts:
        units._MEMO.pop(("words", t), None)
        assert units._words(t) == frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t)), t
