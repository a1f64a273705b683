"""The catalog (seed 003's layout) is generated from the live schema plus spec/catalog-columns.json,
and spec/catalog.md is exactly what `attempt schema --format markdown` prints.
Regenerate the file with `UPDATE_GOLDEN=1 python -m pytest tests/test_catalog.py`."""

import json
import os

import pytest
from conftest import run_attempt

from attemptdb.projections import catalog
from attemptdb.query import sqlgen as C
from attemptdb.query import sqltext
from attemptdb.query.parse import parse


@pytest.fixture(scope="module")
def shipped():
    conn = catalog.shipped_schema_connection()
    yield conn
    conn.close()


def test_live_schema_and_documentation_agree(shipped):
    assert catalog.problems(shipped) == []


def test_spec_catalog_md_is_the_generated_markdown(shipped):
    text = catalog.render_markdown(catalog.build(shipped))
    path = catalog.catalog_md_path()
    if os.environ.get("UPDATE_GOLDEN") == "1":
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        assert f.read() == text, "spec/catalog.md is stale: UPDATE_GOLDEN=1 regenerates it"


def test_attempt_schema_markdown_regenerates_the_file_byte_for_byte(home, tmp_path):
    p = run_attempt(["schema", "--format", "markdown", "--db", str(tmp_path / "none.db")])
    assert p.returncode == 0, p.stderr.decode()
    with open(catalog.catalog_md_path(), "rb") as f:
        assert p.stdout == f.read()


def test_schema_formats_and_one_table(home, tmp_path):
    db = str(tmp_path / "none.db")
    p = run_attempt(["schema", "events", "--format", "json", "--db", db])
    cat = json.loads(p.stdout)
    assert [t["name"] for t in cat["tables"]] == ["events"]
    assert {"event_id", "observed_at", "retracted"} <= {c["name"] for c in cat["tables"][0]["columns"]}
    assert run_attempt(["schema", "events", "--json", "--db", db]).stdout == p.stdout  # --json as everywhere
    p = run_attempt(["schema", "events", "--db", db])
    assert p.returncode == 0 and b"observed_at" in p.stdout and b"When the agent did the thing" in p.stdout
    p = run_attempt(["schema", "nope", "--db", db])
    assert p.returncode == 2 and b"AQL0307" in p.stderr
    p = run_attempt(["schema", "attempt", "--db", db], env={"COLUMNS": "80"})
    lines = p.stderr.decode().splitlines()
    assert p.returncode == 2 and "did you mean `attempts`?" in lines[0], lines
    assert max(len(line) for line in lines) <= 80 and "sessions" in p.stderr.decode(), lines  # the list, wrapped


def test_the_text_catalog_fits_the_terminal_and_keeps_every_word(home, tmp_path):
    """`attempt schema` is read in a terminal: its lines fit COLUMNS (a recipe's statement stays
    one line, to copy) and wrapping loses no word of any meaning."""
    from attemptdb.render.termtable import cols
    db = str(tmp_path / "none.db")
    for width in (80, 60):
        p = run_attempt(["schema", "--db", db], env={"COLUMNS": str(width)})
        assert p.returncode == 0, p.stderr.decode()
        text = p.stdout.decode()
        statements = {r["statement"] for r in catalog.load_docs()["recipes"]}
        wide = [ln for ln in text.splitlines() if cols(ln) > width and ln.strip() not in statements]
        assert wide == []
        words = text.split()
        for t in catalog.load_docs()["tables"]:
            for c in t["columns"]:
                first = c["meaning"].split()[:4]
                assert any(words[i:i + len(first)] == first for i in range(len(words))), (t["name"], c["name"])


def test_every_documented_column_has_a_meaning_and_a_known_type():
    for t in catalog.load_docs()["tables"]:
        assert t["grain"].startswith("one row per"), t["name"]
        for c in t["columns"]:
            assert c["meaning"].strip(), (t["name"], c["name"])
            assert c["type"] in catalog.AFFINITY or c["type"] in ("uuid", "dict"), (t["name"], c["name"])


def test_markdown_layout(shipped):
    md = catalog.render_markdown(catalog.build(shipped))
    assert md.startswith("# AttemptDB table catalog\n")
    assert "### `events`\n\n**fact** · one row per observed event\n" in md
    assert "| `kind` | text |  | The canonical event kind." in md
    assert "Values: `session_started`, `session_ended`" in md
    assert "(open vocabulary — others appear)." in md
    assert "## Recipes" in md and "```sql\nSHOW FAILED ATTEMPTS\n```" in md


def test_filter_vocabularies_match_the_documentation():
    docs = {t["name"]: {c["name"]: c for c in t["columns"]} for t in catalog.load_docs()["tables"]}
    for (table, column), values in C.VOCAB.items():
        doc = docs[table][column]
        assert tuple(doc["values"]) == values and not doc.get("open"), (table, column)
    assert tuple(docs["tool_calls"]["tool_category"]["values"]) == C.TOOL_CATEGORIES
    assert set(C.LIST_COLUMNS) >= {c for t in docs.values() for c, d in t.items() if d["type"] == "list"}


def test_every_recipe_is_a_statement_the_engine_accepts():
    for r in catalog.load_docs()["recipes"]:
        text = r["statement"].replace("{session}", "ses_01a04762").replace("{attempt}", "att_01a04762")
        kind = sqltext.classify(text)
        if kind == "attemptql":
            parse(text)
        else:
            assert kind in ("sql", "describe"), text


def test_scratch_ddl_has_every_documented_table():
    names = [d.split('"')[1] for d in catalog.scratch_ddl()]
    assert names == [t["name"] for t in catalog.load_docs()["tables"]]

