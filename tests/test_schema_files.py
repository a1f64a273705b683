"""The schema's two sources keep their jobs (attemptdb/schema.py): migrations hold tables, indexes
and data; sql/ holds every view and trigger once, with shared predicates defined once; changing
sql/ needs a new migration; and the files AttemptDB writes pass the real sqlite3 3.40 shell's
`PRAGMA integrity_check` (issue 12, item 2)."""

import hashlib
import os
import subprocess

import apsw
import pytest
from conftest import ANCHOR, SQLITE3, needs_shell, run_attempt
from test_adapters_fixtures import build, payload_files

from attemptdb.ingest import privacy
from attemptdb.store import schema
from attemptdb.store.database import Store

# (the latest migration, SHA-256 of the installed view-and-trigger SQL). When this fails because
# you changed sql/: add migrations/NNNN_name.sql (a comment saying what changed is enough), so
# files written by the previous code re-install the views and triggers, then update this pair.
RECORDED = (22, "327e906ffdf4b93e27191bdd5aa8fc42d17e82b8d6bce7ca85cdd863b7c5ccc6")


def statements(text):
    out, buf = [], []
    for line in text.split("\n"):
        if not buf and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buf.append(line)
        if apsw.complete("\n".join(buf)):
            out.append("\n".join(buf))
            buf = []
    assert not buf, "an unfinished statement"
    return out


def test_sql_files_hold_only_views_and_triggers_each_once():
    seen = []
    for name, text in schema.current_sql():
        for st in statements(text):
            words = st.split(None, 3)
            assert words[0] == "CREATE" and words[1] in ("VIEW", "TRIGGER"), (name, st[:60])
            seen.append(words[2].split("(")[0])
    assert len(seen) == len(set(seen))
    assert set(seen) == set(schema.object_names())
    mem = apsw.Connection(":memory:")
    schema.build(mem, schema.latest())
    built = {n: t for t, n in mem.execute("SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger')")}
    assert built == schema.object_names()


def test_migrations_hold_no_view_or_trigger_definitions():
    for _n, path in schema.migrations():
        before, after = schema.migration_parts(path)
        for st in statements(before) + statements(after):
            words = st.split(None, 2)
            assert not (words[0] == "CREATE" and words[1] in ("VIEW", "TRIGGER")), (path, st[:60])


def test_every_predicate_is_defined_once_and_used():
    files = {os.path.basename(p): open(p, encoding="utf-8").read() for p in schema.sql_files()}
    texts = list(files.values())
    defines = [line for t in texts for line in t.split("\n") if line.startswith(schema.DEFINE)]
    assert defines == [line for line in files[schema.PREDICATES_FILE].split("\n")
                       if line.startswith(schema.DEFINE)], f"a predicate is defined outside {schema.PREDICATES_FILE}"
    names = [line[len(schema.DEFINE):].split("(")[0] for line in defines]
    assert len(names) == len(set(names)) and names
    body = "\n".join(texts)
    for name in names:
        assert f"@{name}(" in body.replace(f"-- @define {name}(", ""), f"@{name} is never used"
    with pytest.raises(ValueError, match="@nosuch"):
        schema.expand("SELECT @nosuch(NEW)", schema.predicates())
    assert schema.expand("-- @nosuch(NEW) in a comment", schema.predicates()) == "-- @nosuch(NEW) in a comment"


def test_a_change_to_the_views_and_triggers_comes_with_a_migration():
    digest = hashlib.sha256("\n".join(text for _, text in schema.current_sql()).encode()).hexdigest()
    assert (schema.latest(), digest) == RECORDED, (
        "sql/ changed: add a migration (it may hold only a comment) so files written by the previous "
        f"code re-install their views and triggers, then set RECORDED = ({schema.latest()}, {digest!r})")


# --- the real sqlite3 3.40 shell calls the files sound -------------------------------------------

def integrity(db):
    p = subprocess.run([SQLITE3, "-readonly", db, "PRAGMA integrity_check; PRAGMA quick_check;"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


@needs_shell
def test_the_demo_database_passes_integrity_check(tmp_path, home):
    db = str(tmp_path / "demo.db")
    p = run_attempt(["demo", "--db", db], env={"ATTEMPTDB_NO_DAEMON": "1"})
    assert p.returncode == 0, p.stderr
    assert integrity(db) == ["ok", "ok"]


def anchor_payloads():
    out = []
    root = os.path.join(ANCHOR, "fixtures", "providers")
    for provider in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        for name in sorted(os.listdir(os.path.join(root, provider))):
            if name.endswith(".json") and not name.endswith(".golden.json"):
                out.append((provider, os.path.join(root, provider, name)))
    return out


@needs_shell
def test_a_database_of_every_provider_fixture_passes_integrity_check(db):
    from test_adapters_fixtures import fixture_context

    from attemptdb import adapters
    envs = [build(provider, name) for provider, name in payload_files()]
    for provider, path in anchor_payloads():  # the anchor's fixtures too, where ../shared exists
        with open(path, "rb") as f:
            data = f.read()
        payload, gap = adapters.parse_payload(data, False)
        envs.append(adapters.build_event(provider, payload, gap, fixture_context(), payload_bytes=len(data)))
    st = Store.open(db)
    for env in envs:
        st.append([privacy.ingest(env, db_mode="local_semantic")])
    calls = st.conn.execute("SELECT count(*) FROM tool_call_facts").fetchone()[0]
    st.close()
    assert calls > 20
    assert integrity(db) == ["ok", "ok"]
