"""The public table catalog, generated from the live schema plus the column documentation in
`spec/catalog-columns.json` (seed 003's layout: per table its layer, grain, summary, joins and
every column with type, null and meaning; then the query recipes).

Invariants:
- Table and column names and their order come from the live schema (`pragma_table_xinfo`);
  only meanings, logical types, nullability and vocabularies come from the documentation.
- The public tables are the documented ones (seed 003's list); other tables and views in the
  file (projection machinery) are internal and never listed.
- `problems(conn)` lists every drift between the two (an undocumented column, a documented
  column the schema lacks, a table's declared type that does not fit the documented one, a
  join naming a missing column); tests fail on any, and on `spec/catalog.md` differing from
  `render_markdown(build(...))` of a freshly migrated database.
- A name read from the file is never spliced into SQL text: the schema is read with the name
  as a bound parameter, and SQL that must name a table or column quotes it (`quoted`), so a
  table named `t"); UPDATE …` is one odd name, not a statement.
- Rendering is deterministic: the same schema and documentation give the same bytes.
"""

import os

from .. import resources
from ..model import fastjson

INTERNAL_TABLES = ("meta", "device_clock", "checkpoints")
AFFINITY = {  # documented logical type → declared SQLite types that fit it
    "text": ("TEXT",), "timestamp": ("TEXT",), "list": ("TEXT",), "int32": ("INTEGER",),
    "int64": ("INTEGER",), "uint16": ("INTEGER",), "uint64": ("INTEGER",), "bool": ("INTEGER",),
    "float32": ("REAL",),
}
_DOCS = None


def docs_path() -> str:
    return resources.path("spec", "catalog-columns.json")


def load_docs() -> dict:
    global _DOCS
    if _DOCS is None:
        with open(docs_path(), encoding="utf-8") as f:
            _DOCS = fastjson.loads(f.read())
    return _DOCS


def shipped_schema_connection():
    """An in-memory database with every shipped migration applied (the schema this version
    of AttemptDB creates)."""
    import apsw

    from ..store import schema
    conn = apsw.Connection(":memory:")
    schema.build(conn, schema.latest())
    return conn


def quoted(name: str) -> str:
    """`name` as an SQL identifier: in double quotes, each `"` in it doubled."""
    return '"' + name.replace('"', '""') + '"'


def live_tables(conn) -> dict:
    """name → [(column, declared type, notnull)] for every public table and view."""
    out = {}
    for name, kind in conn.execute(
            "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name"):
        if name in INTERNAL_TABLES:
            continue
        cols = [(c, (t or "").upper(), bool(nn)) for c, t, nn in conn.execute(
            "SELECT name, type, \"notnull\" FROM pragma_table_xinfo(?) WHERE hidden = 0", (name,))]
        out[name] = {"kind": kind, "columns": cols}
    return out


def _declared_fits(logical: str, declared: str) -> bool:
    if not declared:  # views and expressions carry no declared type
        return True
    fits = AFFINITY.get(logical)
    return fits is None or any(declared.startswith(f) for f in fits)


def build(conn, table: str | None = None) -> dict:
    """The catalog as data, from the live schema of `conn` and the documentation."""
    docs = load_docs()
    live = live_tables(conn)
    documented = {t["name"]: t for t in docs["tables"]}
    names = [t["name"] for t in docs["tables"] if t["name"] in live]
    tables = []
    for name in names:
        if table is not None and name != table:
            continue
        doc = documented[name]
        coldocs = {c["name"]: c for c in doc.get("columns", [])}
        cols = []
        for cname, declared, notnull in live[name]["columns"]:
            d = coldocs.get(cname)
            if d is None:
                cols.append({"name": cname, "type": (declared or "any").lower(), "null": not notnull,
                             "meaning": "", "undocumented": True})
                continue
            c = {"name": cname, "type": d["type"], "null": bool(d.get("null")), "meaning": d["meaning"]}
            if d.get("values"):
                c["values"] = list(d["values"])
                c["open"] = bool(d.get("open"))
            cols.append(c)
        tables.append({"name": name, "kind": live[name]["kind"], "layer": doc["layer"], "grain": doc["grain"],
                       "summary": doc["summary"], "joins": [list(j) for j in doc.get("joins", [])], "columns": cols})
    planned = [t["name"] for t in docs["tables"] if t.get("planned") and t["name"] not in live]
    return {"title": docs["title"], "overview": docs["overview"], "rules": docs["rules"], "types": docs["types"],
            "tables": tables, "planned": planned if table is None else [],
            "placeholders": docs["placeholders"], "recipes": docs["recipes"] if table is None else []}


def problems(conn) -> list[str]:
    """Every disagreement between the live schema and the documentation."""
    docs = load_docs()
    live = live_tables(conn)
    documented = {t["name"]: t for t in docs["tables"]}
    out = []
    for name, info in live.items():
        doc = documented.get(name)
        if doc is None:  # projection machinery and other internal tables are not public
            continue
        coldocs = {c["name"]: c for c in doc["columns"]}
        livecols = {c for c, _, _ in info["columns"]}
        for cname, declared, notnull in info["columns"]:
            d = coldocs.get(cname)
            if d is None:
                out.append(f"column {name}.{cname} is not documented")
                continue
            if not d.get("meaning"):
                out.append(f"column {name}.{cname} has an empty meaning")
            if info["kind"] == "table" and not _declared_fits(d["type"], declared):
                out.append(f"column {name}.{cname} is declared {declared} but documented as {d['type']}")
            if notnull and d.get("null"):
                out.append(f"column {name}.{cname} is NOT NULL but documented as nullable")
        for cname in coldocs:
            if cname not in livecols:
                out.append(f"column {name}.{cname} is documented but the schema has no such column")
        for left, right in doc.get("joins", []):
            if left not in livecols:
                out.append(f"join of {name} names the missing column {left}")
            rt, _, rc = right.partition(".")
            if rt in live and rc not in {c for c, _, _ in live[rt]["columns"]}:
                out.append(f"join of {name} names the missing column {right}")
    return out


# --- rendering -----------------------------------------------------------------------------------

def _vocab_md(c) -> str:
    vals = ", ".join(f"`{v}`" for v in c["values"])
    if c.get("open"):
        return f" Common values: {vals} (open vocabulary — others appear)."
    return f" Values: {vals}."


def _vocab_text(c) -> str:
    vals = ", ".join(c["values"])
    if c.get("open"):
        return f" Common values: {vals} (open vocabulary — others appear)."
    return f" Values: {vals}."


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


GENERATED = ("Generated by `attempt schema --format markdown` from the live schema and "
             "`spec/catalog-columns.json`. Do not edit by hand: `tests/test_catalog.py` fails when this file "
             "and the schema disagree, and `UPDATE_GOLDEN=1` regenerates it.")


def render_markdown(cat: dict) -> str:
    out = []
    if cat["recipes"] or cat["planned"] or len(cat["tables"]) != 1:
        out += [f"# {cat['title']}", "", GENERATED, "", cat["overview"], "", "## Rules", ""]
        for i, (title, text) in enumerate(cat["rules"], 1):
            out.append(f"{i}. **{title}** {text}")
        out += ["", "## Types", "", "| type | stored as |", "|---|---|"]
        for k, v in cat["types"].items():
            out.append(f"| `{k}` | {_cell(v)} |")
        out += ["", "## Tables", ""]
    for t in cat["tables"]:
        out += [f"### `{t['name']}`", "", f"**{t['layer']}** · {t['grain'] or '(undocumented)'}", ""]
        if t["summary"]:
            out += [t["summary"], ""]
        if t["joins"]:
            out += ["Joins: " + " · ".join(f"`{a}` → `{b}`" for a, b in t["joins"]), ""]
        out += ["| column | type | null | meaning |", "|---|---|---|---|"]
        for c in t["columns"]:
            meaning = c["meaning"] + (_vocab_md(c) if c.get("values") else "")
            out.append(f"| `{c['name']}` | {c['type']} | {'yes' if c['null'] else ''} | {_cell(meaning)} |")
        out.append("")
    if cat["planned"]:
        out += ["Not built yet (a later release): " + ", ".join(f"`{p}`" for p in cat["planned"])
                + ". Statements that name them answer with the coded error AQL0408.", ""]
    if cat["recipes"]:
        out += ["## Recipes", "", cat["placeholders"], ""]
        for r in cat["recipes"]:
            out += [f"### {r['question']}", "", "```sql", r["statement"], "```", "", r["note"], ""]
    return "\n".join(out).rstrip("\n") + "\n"


def render_text(cat: dict, width: int | None = None) -> str:
    """The catalog as plain text, each paragraph wrapped to `width` columns at spaces (never
    inside a word: termtable.prose), later lines indented (a column's meaning under the meaning
    while 32 columns are left for it); without `width` each paragraph is one line. A recipe's
    statement stays one line (it is copied whole)."""
    def para(text: str, indent: str) -> list:
        if width is None:
            return [text]
        from ..render import termtable
        return termtable.prose(text, width, indent if width - len(indent) >= 32 else "      ")
    out = []
    whole = cat["recipes"] or cat["planned"] or len(cat["tables"]) != 1
    if whole:
        out += [cat["title"].upper(), ""] + para(cat["overview"], "") + [""]
        for i, (title, text) in enumerate(cat["rules"], 1):
            out += para(f"{i:2}. {title} {text}".replace("`", ""), "    ")
        out.append("")
    for t in cat["tables"]:
        out += para(f"{t['name']}  ({t['layer']} · {t['grain'] or 'undocumented'})", "  ")
        if t["summary"]:
            out += para(f"  {t['summary']}", "  ")
        if t["joins"]:
            out += para("  joins: " + ", ".join(f"{a} → {b}" for a, b in t["joins"]), "    ")
        w = max(len(c["name"]) for c in t["columns"]) if t["columns"] else 10
        for c in t["columns"]:
            meaning = c["meaning"] + (_vocab_text(c) if c.get("values") else "")
            null = "null" if c["null"] else "    "
            lead = f"  {c['name']:<{w}}  {c['type']:<9} {null}  "
            out += para(lead + meaning, " " * min(len(lead), 40))
        out.append("")
    if cat["planned"]:
        out += para("not built yet (a later release): " + ", ".join(cat["planned"]), "  ") + [""]
    if cat["recipes"]:
        out += ["RECIPES", ""] + para(cat["placeholders"].replace("`", ""), "") + [""]
        for r in cat["recipes"]:
            out += para(f"  {r['question']}", "    ") + [f"    {r['statement']}"]
            out += para(f"    {r['note']}".replace("`", ""), "    ") + [""]
    return "\n".join(out).rstrip("\n") + "\n"


def render_json(cat: dict) -> str:
    return fastjson.dumps(cat) + "\n"


def catalog_md_path() -> str:
    return resources.path("spec", "catalog.md")


def scratch_ddl(names=None) -> list[str]:
    """CREATE TABLE statements for documented tables (tests build scratch databases with the
    catalog's tables before the projection migrations exist)."""
    sql_type = {"text": "TEXT", "timestamp": "TEXT", "list": "TEXT", "float32": "REAL"}
    out = []
    for t in load_docs()["tables"]:
        if names is not None and t["name"] not in names:
            continue
        cols = ", ".join(f'{quoted(c["name"])} {sql_type.get(c["type"], "INTEGER")}' for c in t["columns"])
        out.append(f'CREATE TABLE {quoted(t["name"])} ({cols})')
    return out


def default_connection(path: str | None):
    """The live schema to describe: the database at `path` when it exists (read-only), else
    the schema this version ships (migrations applied in memory)."""
    if path and os.path.exists(path):
        from ..store.readonly import connect
        conn, _ = connect(path)
        return conn
    return shipped_schema_connection()
