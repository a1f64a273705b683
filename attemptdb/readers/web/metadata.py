"""What the web UI says about the database, from the catalog (spec/catalog-columns.json via
attemptdb.projections.catalog): Datasette metadata (table summaries, every column's meaning, the internal
tables hidden) and the catalog's recipes.

Invariants: nothing here is invented — every description is the catalog's text; every recipe
is listed once, in the catalog's order, under a stable slug. A recipe that is one plain SQL
SELECT/WITH/VALUES becomes a Datasette canned query (never `write: true`, run on the UI's
read-only connection); any other recipe (AttemptQL, DESCRIBE, EXPLAIN) is run by the UI's own
recipe page through the engine of `attempt query`, so it answers what `attempt query` answers.
Pure: no Datasette import.
"""

import re

from ...query import sqltext

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60].rstrip("-") or "recipe"


def is_canned(statement: str) -> bool:
    """A recipe Datasette can run as it is: one plain SQL SELECT/WITH/VALUES, no placeholder."""
    if _PLACEHOLDER.search(statement) or sqltext.classify(statement) != "sql":
        return False
    return statement.lstrip()[:6].upper().startswith(("SELECT", "WITH", "VALUES"))


def recipes(cat: dict) -> list[dict]:
    """The catalog's recipes with a slug, their kind (canned | engine) and placeholders."""
    out, seen = [], set()
    for r in cat["recipes"]:
        base = s = slug(r["question"])
        n = 2
        while s in seen:
            s, n = f"{base}-{n}", n + 1
        seen.add(s)
        out.append({"slug": s, "question": r["question"], "statement": r["statement"], "note": r["note"],
                    "kind": "canned" if is_canned(r["statement"]) else "engine",
                    "placeholders": sorted(set(_PLACEHOLDER.findall(r["statement"])))})
    return out


def fill(statement: str, values: dict) -> str:
    """`statement` with each `{name}` of `values` replaced by its value as an SQL string literal,
    in one pass: a value that holds another placeholder's `{name}` stays inside its literal."""
    return _PLACEHOLDER.sub(lambda m: ("'" + values[m.group(1)].replace("'", "''") + "'")
                            if m.group(1) in values else m.group(0), statement)


def datasette_metadata(cat: dict, db_name: str, internal_tables) -> dict:
    """Metadata for `Datasette(metadata=…)`: the catalog's words on every public table and
    column, the projection machinery hidden, the SQL recipes as canned queries."""
    tables = {}
    for t in cat["tables"]:
        tables[t["name"]] = {
            "description": f"{t['layer']} · {t['grain']}. {t['summary']}".strip(),
            "columns": {c["name"]: c["meaning"] for c in t["columns"] if c.get("meaning")},
        }
    for name in internal_tables:  # projection machinery: not listed, no page (SQL still reads it)
        if name not in tables:
            tables[name] = {"hidden": True, "allow": False}
    queries = {}
    for r in recipes(cat):
        if r["kind"] == "canned":
            queries[r["slug"]] = {"sql": r["statement"], "title": r["question"], "description": r["note"]}
    return {
        "title": "AttemptDB",
        "description": "What AI coding agents tried: read-only, from the live database file.",
        "databases": {db_name: {"tables": tables, "queries": queries}},
    }
