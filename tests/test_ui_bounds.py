"""`attempt ui`: what one request may make the server hold (SQLite's length limit and a fetch
budget on every connection, AQL0502 past either), and the security headers of the 400 the web
server writes itself for a request it cannot read. A real `attempt ui` process, on the wire."""

import json
import os
import socket
import sqlite3
import urllib.parse

import pytest
import scenario_db
from test_readers_ui import UI

from attemptdb.query.errors import AQLError
from attemptdb.readers.web import limits, plugin, policy, serve

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

BLOBS_PAST_BUDGET = (f"SELECT zeroblob({limits.MAX_FETCH_BYTES // 2}) AS b "
                     "FROM (VALUES (1), (2), (3), (4))")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ui-bounds") / "attempt.db")
    scenario_db.build(path, "units_needs_you")
    return path


@pytest.fixture(scope="module")
def ui(db, tmp_path_factory):
    u = UI(db, tmp_path_factory.mktemp("ui-bounds-home"))
    yield u
    u.stop()


def _sql(ui, sql, fmt=".json"):
    return ui.request(f"/{serve.DB_NAME}{fmt}?" + urllib.parse.urlencode({"sql": sql}))


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak RSS is read from /proc")
def test_a_value_past_the_length_limit_is_refused_not_built(db, tmp_path):
    """`randomblob` past SQLITE_LIMIT_LENGTH is a coded refusal, and the server's peak memory
    grows by far less than the value asked for (Datasette would have held it, base64 and all)."""
    fresh = UI(db, tmp_path)
    try:
        before = _peak_rss_kib(fresh.proc.pid)
        status, body = _sql(fresh, f"SELECT randomblob({limits.MAX_VALUE_BYTES + 1}) AS b")
        grown = _peak_rss_kib(fresh.proc.pid) - before
        answer = json.loads(body)
        assert status == 400 and answer["ok"] is False and answer["rows"] == []
        assert answer["error"].startswith("AQL0502: a text or BLOB value would be longer than 64 MiB")
        assert grown * 1024 < limits.MAX_VALUE_BYTES // 4, grown
    finally:
        fresh.stop()


def test_rows_past_the_fetch_budget_are_refused(ui):
    status, body = _sql(ui, BLOBS_PAST_BUDGET)
    answer = json.loads(body)
    assert status == 400 and answer["ok"] is False and answer["rows"] == []
    assert answer["error"].startswith("AQL0502: the answer holds more than 16 MiB of text and BLOB values")
    # the HTML page says it too
    status, page = _sql(ui, BLOBS_PAST_BUDGET, fmt="")
    assert status == 400 and "AQL0502" in page and "rows-and-columns" not in page
    # within both bounds a query still answers, and the server goes on
    status, body = _sql(ui, "SELECT length(zeroblob(1000000)) AS n, count(*) AS c FROM (VALUES (1), (2))")
    assert status == 200 and json.loads(body)["rows"] == [[1000000, 2]]


def test_every_cursor_of_a_ui_connection_counts_its_rows():
    """conn.execute (the plugin's pages), iteration, fetchone/fetchmany/fetchall: each statement's
    rows are counted against the budget, and the budget is per statement."""
    conn = sqlite3.connect(":memory:", factory=limits.Connection)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.MAX_VALUE_BYTES)
    conn.row_factory = sqlite3.Row
    with pytest.raises(limits.AnswerTooLarge, match="^AQL0502: a text or BLOB"):
        conn.execute(f"SELECT randomblob({limits.MAX_VALUE_BYTES + 1})")
    for read in (lambda c: list(c), lambda c: c.fetchall(), lambda c: c.fetchmany(10),
                 lambda c: [c.fetchone() for _ in range(4)]):
        with pytest.raises(limits.AnswerTooLarge, match="^AQL0502: the answer holds"):
            read(conn.execute(BLOBS_PAST_BUDGET))
        cur = conn.cursor()
        with pytest.raises(limits.AnswerTooLarge):
            read(cur.execute(BLOBS_PAST_BUDGET))
    half = f"SELECT zeroblob({limits.MAX_FETCH_BYTES // 2 - 1}) AS b"
    cur = conn.cursor()
    for _ in range(3):  # the same cursor, statement after statement: each has the whole budget
        assert len(cur.execute(half).fetchall()[0]["b"]) == limits.MAX_FETCH_BYTES // 2 - 1


def test_a_recipe_run_by_the_engine_has_the_same_bounds(db):
    cfg = plugin.UIConfig(db, serve.DB_NAME, False, [])
    for statement in (f"SELECT randomblob({limits.MAX_VALUE_BYTES + 1}) AS b", BLOBS_PAST_BUDGET):
        with pytest.raises(AQLError) as e:
            plugin._run_recipe(cfg, statement)
        assert e.value.code == "AQL0502", statement
    assert plugin._run_recipe(cfg, "SELECT 1 AS n")["rows"] == [{"n": 1}]


def _raw(ui, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", ui.port), timeout=30) as s:
        try:
            s.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before reading it all
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
    return out


@pytest.mark.parametrize("request_bytes", [
    b"GET /" + b"a" * (2 << 20) + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"b" * (2 << 20) + b"\r\n\r\n",
    b"NOT HTTP AT ALL\r\n\r\n",
], ids=["long-request-line", "long-header", "not-http"])
def test_a_request_the_server_cannot_read_gets_the_security_headers(ui, request_bytes):
    answer = _raw(ui, request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 400 Bad Request", answer[:500]
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower()] = v.strip()
    for k, v in policy.SECURITY_HEADERS:
        assert headers.get(k) == v, k
    assert headers.get(b"content-security-policy") == policy.CSP.encode("ascii")
    assert body == serve.BAD_REQUEST.encode("ascii") and int(headers[b"content-length"]) == len(body)
    # and the server goes on answering
    assert ui.request("/-/attemptdb/needs-you.json")[0] == 200
