"""Privacy is a storage property (DESIGN invariant 5; reference/capture.md §2.12–§2.13,
golden-harness.md §7), proven on the bytes a real `attempt capture` leaves behind.

Every privacy canary fixture — the anchor suite's (when ../shared is present) and ours in
fixtures/providers — is captured by real subprocesses into a `metadata_only` database made by
`attempt init --capture-mode metadata_only`, half of them while the database cannot be opened
(so they are spooled first, then ingested by a read command). Then the raw bytes of the
database file, its WAL, the spool directories and the hook log hold no canary string
(verbatim or JSON-escaped) and no sentinel class, no stored text value contains "@", and no
email-shaped byte sequence exists anywhere. Under `local_semantic` the content is kept (so the
check above is not vacuous) but `attrs` never carry a canary.
"""

import json
import os

import apsw
import pytest
from conftest import ROOT, run_attempt
from test_adapters_privacy import canaries  # the §2.13 canary rule, one copy
from test_capture import assert_silent, capture, spool_files, stored
from test_spool import _block_wal

OURS = os.path.join(ROOT, "fixtures", "providers")
# sentinel classes (RFC 0006 §6) and the harness's global forbidden substrings
GEMINI_ACK = b'{"decision":"allow"}\n'
SENTINELS = ("CANARY_", "sk-live-", "SECRET_TOKEN", "ghp_CANARY", "canary7f3a", "canary.7f3a",
             "@example.com", "@example.invalid", "noreply@anthropic.com", "/home/dev/.claude",
             "/home/dev/.gemini")


def canary_fixtures(root):
    out = []
    for provider in sorted(os.listdir(root)):
        folder = os.path.join(root, provider)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.startswith("canary") and name.endswith(".json") and \
                    not name.endswith((".golden.json", ".expected.json")):
                out.append((provider, os.path.join(folder, name)))
    return out


def forms(secret: str) -> set:
    """A canary as it could appear in bytes: verbatim, and JSON-escaped (both ASCII styles)."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


def leaks(data: bytes, secrets) -> list:
    out = []
    for s in secrets:
        for f in forms(s):
            if f.encode("utf-8", "surrogatepass") in data:
                out.append(s)
                break
    return out + [s for s in SENTINELS if s.encode() in data]


LOCAL = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
DOMAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")


def email_shaped(data: bytes) -> list:
    """`local@domain.tld`-shaped byte runs. (A bare 0x40 byte is everywhere in SQLite's page
    and record headers, so "no @ at all" is checked on stored text values instead.)"""
    hits, i = [], data.find(b"@")
    while i != -1:
        a = i
        while a > 0 and data[a - 1] in LOCAL:
            a -= 1
        b = i + 1
        while b < len(data) and data[b] in DOMAIN:
            b += 1
        labels = data[i + 1:b].split(b".")
        if a < i and len(labels) >= 2 and all(labels[:2]):
            hits.append(data[a:b])
        i = data.find(b"@", i + 1)
    return hits


def test_the_email_detector_finds_emails_and_ignores_page_bytes():
    assert email_shaped(b"\x00x canary.7f3a@example.invalid\x01") == [b"canary.7f3a@example.invalid"]
    assert email_shaped(b'"a\\u0040b"') == [] and email_shaped(b"x@y.z") == [b"x@y.z"]
    assert email_shaped(b"lay_requests@CREATE TABLE t (a.b)\x00\x02@ \x93r@\x07") == []


def files_under(*roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
        for base, _dirs, files in os.walk(root):
            for f in files:
                yield os.path.join(base, f)


def text_cells(db):
    """Every text value stored in any table of the database."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for t in tables:
            for row in conn.execute(f'SELECT * FROM "{t}"'):
                for v in row:
                    if isinstance(v, str):
                        yield t, v
    finally:
        conn.close()


@pytest.fixture(params=["ours", "anchor"])
def fixtures(request):
    root = OURS
    if request.param == "anchor":
        root = os.path.join(request.getfixturevalue("anchor"), "fixtures", "providers")
    found = canary_fixtures(root)
    assert len(found) >= 6, f"expected at least 6 canary fixtures under {root}"
    out = []
    for provider, path in found:
        with open(path, "rb") as f:
            data = f.read()
        out.append((provider, data, canaries(json.loads(data))))
    assert all(c for _p, _d, c in out), "a canary fixture without canaries"
    return out


def init(db, mode):
    p = run_attempt(["init", "--db", db, "--capture-mode", mode, "--json"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["capture_mode"] == mode


def quiet_capture(db, provider, data):
    p = capture(db, provider, data)
    assert_silent(p, stdout=GEMINI_ACK if provider.startswith("gemini") else b"")


def check_bytes(paths, secrets):
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        assert leaks(data, secrets) == [], path
        assert email_shaped(data) == [], path


def test_metadata_only_leaves_no_canary_in_any_byte(fixtures, db, home):
    init(db, "metadata_only")
    secrets = set().union(*(c for _p, _d, c in fixtures))
    log = str(home / ".local" / "state" / "attemptdb")
    wal = db + "-wal"
    half = len(fixtures) // 2
    for provider, data, _c in fixtures[:half]:
        quiet_capture(db, provider, data)
    assert os.path.getsize(wal) > 0  # the captures' transactions sit in the WAL
    check_bytes([db, wal], secrets)
    _block_wal(db)  # the next ones wait in the spool: it must be just as clean
    for provider, data, _c in fixtures[half:-1]:
        quiet_capture(db, provider, data)
    spooled = spool_files(db, home)
    assert len(spooled) == len(fixtures) - half - 1
    check_bytes(files_under(db + ".spool", log), secrets)
    for path in spooled:
        with open(path, "rb") as f:
            data = f.read()
        assert b"@" not in data, path  # plain JSON text (and its hex seal): no "@" at all
        env = json.loads(data.split(b"\n")[0])
        assert env["capture_mode"] == "metadata_only" and "content" not in env and "raw" not in env
    os.rmdir(wal)
    quiet_capture(db, *fixtures[-1][:2])  # ingests the spool, then stores its own event
    assert spool_files(db, home) == []
    rows = stored(db)
    assert len(rows) == len(fixtures)
    assert {r["capture_mode"] for r in rows} == {"metadata_only"}
    assert all(r["content"] is None and r["raw"] is None for r in rows)
    assert os.path.getsize(wal) > 0
    check_bytes(files_under(db, wal, db + ".spool", log), secrets)
    assert [(t, v) for t, v in text_cells(db) if "@" in v or leaks(v.encode(), secrets)] == []


def test_local_semantic_keeps_content_but_attrs_never_hold_a_canary(fixtures, db, home):
    init(db, "local_semantic")
    secrets = set().union(*(c for _p, _d, c in fixtures))
    for provider, data, _c in fixtures:
        quiet_capture(db, provider, data)
    rows = stored(db)
    assert len(rows) == len(fixtures)
    assert {r["capture_mode"] for r in rows} == {"local_semantic"}
    for r in rows:
        text = r["attrs_json"].encode()
        assert leaks(text, secrets) == [], r["attrs_json"]
        assert b"@" not in text
    # not vacuous: the content itself is kept, canaries included (redaction aside)
    kept = b"".join((r["content_json"] or "").encode() + (r["raw_json"] or "").encode() for r in rows)
    assert leaks(kept, secrets)
