"""The read surfaces over a history captured the way a user's hooks capture it (`attempt
capture claude-code`, hostile payloads on stdin), facing hostile requests: `attempt mcp` driven
with raw JSON-RPC over stdio, `attempt ui` over HTTP. Values are data: never markup, never a
control or bidi character on a page, never a write, never an unbounded answer."""

import json
import os
import subprocess
import urllib.parse

import pytest
from conftest import ROOT, attempt_cmd, run_attempt

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")
pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")

# a right-to-left override, a terminal escape and a NUL: what a page must never carry raw
DISGUISE = "\u202eexe.txt|nul\x00esc\x1b[31m"
MARKUP = "<script>alert(1)</script>|\"><img src=x onerror=alert(2)>|javascript:alert(3)"
HOSTILE = MARKUP + "|" + DISGUISE + "|'; DROP TABLE events; --"
RAW = {"\u202e", "\x1b", "\x00"}


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPATH": ROOT, "ATTEMPTDB_NO_DAEMON": "1"}


def _capture(db, home, payload):
    p = run_attempt(["capture", "claude-code", "--db", db, "--capture-mode", "full_sync"],
                    input=json.dumps(payload).encode(), env=_env(home))
    assert p.returncode == 0 and not p.stdout, p.stderr.decode()


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A session whose id, model, tool names, paths and errors carry markup, a bidi override,
    an escape sequence and a NUL, captured through the hook entrypoint."""
    tmp = tmp_path_factory.mktemp("hostile-capture")
    home = tmp / "home"
    home.mkdir()
    db = str(tmp / "attempt.db")
    assert run_attempt(["init", "--db", db, "--capture-mode", "full_sync"], env=_env(home)).returncode == 0
    base = {"session_id": "s-" + HOSTILE, "transcript_path": "/tmp/x.jsonl", "cwd": "/work/shop",
            "permission_mode": "default"}
    _capture(db, home, dict(base, hook_event_name="SessionStart", source="startup", model=HOSTILE))
    _capture(db, home, dict(base, hook_event_name="UserPromptSubmit", prompt="fix " + HOSTILE))
    for i in range(2):
        tin = {"command": HOSTILE, "file_path": f"/work/shop/src/{DISGUISE}{i}"}
        call = dict(base, tool_name="Bash" + DISGUISE, tool_use_id=f"toolu_{i}", tool_input=tin)
        _capture(db, home, dict(call, hook_event_name="PreToolUse"))
        _capture(db, home, dict(call, hook_event_name="PostToolUseFailure", error="boom " + HOSTILE,
                                tool_response={"stdout": HOSTILE, "stderr": "e"}))
    return db, home


@pytest.fixture(scope="module")
def ui(captured):
    from test_readers_ui import UI
    db, home = captured
    u = UI(db, home)
    yield u
    u.stop()


def test_facets_and_filters_show_no_bidi_or_control_character(ui):
    """Datasette's facet labels and the filter a request gives are shown on the page without
    going through render_cell: they too show a bidi override, ESC and NUL as U+FFFD."""
    pages = ["/attempt/tool_calls?_facet=tool_name&_facet=path_relative",
             "/attempt/events?_facet=tool_name&_facet=model",
             "/attempt/sessions?_facet=provider_session_id",
             "/attempt/events?tool_name__contains=" + urllib.parse.quote("\u202e\x1b")]
    for path in pages:
        status, body = ui.request(path)
        assert status == 200, (path, body[:500])
        assert not RAW & set(body), (path, sorted(RAW & set(body)))
        assert "<script>alert(1)" not in body and "<img src=x" not in body, path
    status, body = ui.request(pages[0])
    assert "Bash\ufffdexe.txt|nul\ufffdesc\ufffd[31m" in body  # the facet label, shown


def _rpc(proc, msg, timeout=60):
    """Send one message (a dict, or a raw line); the reply to a request, None if none came."""
    import select
    proc.stdin.write(((msg if isinstance(msg, str) else json.dumps(msg)) + "\n").encode())
    proc.stdin.flush()
    if isinstance(msg, dict) and "id" not in msg:
        return None
    if not select.select([proc.stdout], [], [], timeout)[0]:
        return None
    return json.loads(proc.stdout.readline())


@pytest.fixture
def mcp(captured):
    db, home = captured
    proc = subprocess.Popen(attempt_cmd() + ["mcp", "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, **_env(home)))
    init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    assert init["result"]["serverInfo"]["name"] == "attemptdb"
    _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    n = [1]

    def call(name, arguments):
        n[0] += 1
        return _rpc(proc, {"jsonrpc": "2.0", "id": n[0], "method": "tools/call",
                           "params": {"name": name, "arguments": arguments}})["result"]
    yield call, lambda line, timeout=60: _rpc(proc, line, timeout)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_a_request_the_sdk_cannot_read_is_answered_and_the_session_goes_on(mcp):
    """A lone surrogate (`\\ud800`, valid JSON text to most encoders) in an argument: the SDK
    cannot read the line and used to drop it without a word, so the client waited forever.
    It is answered with a JSON-RPC parse error for its id; the next call is answered as usual."""
    call, rpc = mcp
    line = ('{"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": "query", '
            '"arguments": {"statement": "SELECT \'\\ud800\' AS x"}}}')
    reply = rpc(line, timeout=30)
    assert reply is not None, "no answer: the client would wait forever"
    assert reply["id"] == 77 and reply["error"]["code"] == -32700
    ok = call("query", {"statement": "SELECT count(*) AS n FROM tool_calls"})
    assert not ok.get("isError") and ok["structuredContent"]["rows"] == [{"n": 2}]


def test_an_agents_statement_cannot_take_the_servers_memory(mcp, captured):
    """One value SQLite would build past MAX_VALUE_BYTES (randomblob of a gigabyte) and rows
    whose values together pass MAX_FETCH_BYTES are refused with AQL0502 before they are held
    (the answer is cut to a megabyte anyway); a statement within both still answers, and the
    session goes on."""
    from attemptdb.readers import bounded, mcp_server
    call, _ = mcp
    for statement in (f"SELECT randomblob({bounded.MAX_VALUE_BYTES + 1}) AS b",
                      f"SELECT zeroblob({bounded.MAX_VALUE_BYTES // 2}) AS b FROM (VALUES (1), (2), (3), (4), (5))"):
        got = call("query", {"statement": statement})
        assert got.get("isError") and "AQL0502" in got["content"][0]["text"], got
    ok = call("query", {"statement": "SELECT length(zeroblob(1000000)) AS n, count(*) AS c FROM tool_calls"})
    assert not ok.get("isError") and ok["structuredContent"]["rows"] == [{"n": 1000000, "c": 2}]
    reader = mcp_server.Reader(captured[0])
    with pytest.raises(Exception) as e:
        reader.call("query", {"statement": f"SELECT zeroblob({bounded.MAX_VALUE_BYTES // 2}) AS b "
                                           "FROM (VALUES (1), (2), (3), (4), (5))"})
    assert getattr(e.value, "code", None) == "AQL0502"
    reader.close()


def test_a_recipe_value_holding_another_placeholder_stays_inside_its_literal():
    """Placeholders are filled in one pass: a value that holds `{b}` is not filled again (it
    used to be, and the second value then landed inside the first one's quotes)."""
    from attemptdb.readers.web import metadata
    statement = "SELECT * FROM t WHERE a = {a} AND b = {b} AND c = {c}"
    got = metadata.fill(statement, {"a": "x{b}y", "b": "it's", "c": "{c}"})
    assert got == "SELECT * FROM t WHERE a = 'x{b}y' AND b = 'it''s' AND c = '{c}'"
    assert metadata.fill("{a} {missing}", {"a": "1"}) == "'1' {missing}"
