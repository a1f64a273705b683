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
