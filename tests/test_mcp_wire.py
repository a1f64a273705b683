"""`attempt mcp` on the wire: every request line that carries an `id` gets exactly one JSON-RPC
reply, whatever its shape (spec/readers.md); a notification or a response gets none. Driven
as a client would drive it, raw JSON-RPC lines over the stdio of a real `attempt mcp` process,
every read bounded by a timeout, so a request left unanswered fails the test instead of hanging it."""

import json
import os
import select
import subprocess

import pytest
from conftest import ROOT, attempt_cmd, run_attempt

pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")

REPLY_TIMEOUT_S = 30


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPATH": ROOT, "ATTEMPTDB_NO_DAEMON": "1"}


class Wire:
    """A raw JSON-RPC client of one `attempt mcp` process."""

    def __init__(self, db, home):
        self.proc = subprocess.Popen(attempt_cmd() + ["mcp", "--db", db], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=dict(os.environ, **_env(home)))
        self.pings = 0

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout=REPLY_TIMEOUT_S):
        """The next line the server writes, decoded; None when none came in time."""
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            return None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return json.loads(line)

    def ask(self, message: dict):
        self.send(json.dumps(message))
        return self.reply()

    def nothing_more(self) -> None:
        """No reply is pending: the next reply is the one to a ping sent now."""
        self.pings += 1
        ident = f"ping-{self.pings}"
        got = self.ask({"jsonrpc": "2.0", "id": ident, "method": "ping"})
        assert got == {"jsonrpc": "2.0", "id": ident, "result": {}}, got

    def close(self) -> int:
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp-wire")
    home = tmp / "home"
    home.mkdir()
    db = str(tmp / "attempt.db")
    assert run_attempt(["init", "--db", db], env=_env(home)).returncode == 0
    w = Wire(db, home)
    init = w.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    assert init and init["result"]["serverInfo"]["name"] == "attemptdb"
    w.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    yield w
    assert w.close() == 0


def _req(ident, method, **extra):
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, **extra})


# (line, the id the reply names, its error code): each answered by exactly one JSON-RPC error
ANSWERED = [
    # the finding: params not an object, after a normal initialize
    ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}', 3, -32600),
    *[(_req(ident, method, params=params), ident, -32600)
      for ident, (method, params) in enumerate(
          [(m, p) for m in ("tools/call", "tools/list", "ping", "initialize", "resources/list", "nosuch/method")
           for p in ([1], [], 5, "x", True)], start=100)],
    (_req("a-string-id", "tools/call", params=[{"name": "query"}]), "a-string-id", -32600),
    (_req(10, "notifications/initialized", params="x"), 10, -32600),  # an id makes it a request
    # method not a string, or missing
    (json.dumps({"jsonrpc": "2.0", "id": 11, "method": 5}), 11, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": 12, "method": None}), 12, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": 13, "method": ["tools/call"]}), 13, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": 14}), 14, -32600),
    # not JSON-RPC 2.0
    (json.dumps({"id": 15, "method": "ping"}), 15, -32600),
    (json.dumps({"jsonrpc": "1.0", "id": 16, "method": "ping"}), 16, -32600),
    # an id MCP does not take (JSON-RPC: a string, a number or null; MCP: a string or an integer)
    (json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}), None, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": [17], "method": "ping"}), None, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": True, "method": "ping"}), None, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}), None, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}), None, -32600),
    (json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/call", "params": "x"}), None, -32600),
    # JSON that is no object
    ("5", None, -32600),
    ('"tools/call"', None, -32600),
    ("null", None, -32600),
    # not JSON (a lone surrogate, a cut line, text): its id when one can be read
    ('{"jsonrpc":"2.0","id":18,"method":"ping","params":{"a":"\\ud800"}}', 18, -32700),
    ('{"jsonrpc":"2.0","id":19,"method":"ping"', 19, -32700),
    ('{"jsonrpc":"2.0","method":"ping","params":{"a":', None, -32700),
    ("not json at all", None, -32700),
    # nested deeper than the SDK reads, in a request that is valid JSON
    ('{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"query","arguments":{"statement":'
     + "[" * 100_000 + "]" * 100_000 + "}}}", 20, -32700),
]


@pytest.mark.parametrize("line,ident,code", ANSWERED, ids=[f"{i}:{c[0][:40]}" for i, c in enumerate(ANSWERED)])
def test_a_malformed_request_gets_exactly_one_error_reply(wire, line, ident, code):
    wire.send(line)
    got = wire.reply()
    assert got is not None, "no reply: the client would wait for ever"
    assert got["jsonrpc"] == "2.0" and got["id"] == ident and got["error"]["code"] == code, got
    assert set(got) == {"jsonrpc", "id", "error"} and got["error"]["message"]
    # the message names what is wrong, never what the request held
    assert "ud800" not in got["error"]["message"] and "tools/call" not in got["error"]["message"]
    wire.nothing_more()


QUIET = [
    # notifications: no id, nothing to answer, whatever their shape
    json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": "x"}),
    json.dumps({"jsonrpc": "2.0", "method": 5}),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": [1, 2]}),
    '{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\ud800"}}',
    json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": 1}}),
    # responses are never answered, well-formed or not
    json.dumps({"jsonrpc": "2.0", "id": 21, "result": {}}),
    json.dumps({"jsonrpc": "2.0", "id": 22, "result": 5}),
    json.dumps({"jsonrpc": "2.0", "id": 23, "error": {"code": 1, "message": "x"}}),
    json.dumps({"jsonrpc": "2.0", "id": [24], "error": "x"}),
    # a batch of notifications only; a blank line
    json.dumps([{"jsonrpc": "2.0", "method": "notifications/x"}]),
    "   ",
]


@pytest.mark.parametrize("line", QUIET, ids=[f"{i}:{q[:40]}" for i, q in enumerate(QUIET)])
def test_a_notification_or_a_response_gets_no_reply(wire, line):
    wire.send(line)
    wire.nothing_more()


def test_a_batch_is_refused_as_json_rpc_answers_a_batch(wire):
    """MCP has no batches (since 2025-06-18): one array holding an Invalid Request per request
    of the batch (for its id; for null when it has none MCP takes), none for notifications."""
    wire.send(json.dumps([{"jsonrpc": "2.0", "id": 30, "method": "ping"},
                          {"jsonrpc": "2.0", "method": "notifications/x"},
                          5,
                          {"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": "x"},
                          {"jsonrpc": "2.0", "id": [1], "method": "ping"},
                          {"jsonrpc": "2.0", "id": 31, "result": {}}]))
    got = wire.reply()
    assert isinstance(got, list), got
    assert [(r["id"], r["error"]["code"]) for r in got] == [(30, -32600), (None, -32600), ("b", -32600),
                                                              (None, -32600)]
    wire.nothing_more()
    for batch in ([], list(range(1001))):  # an empty batch, or too many to answer one by one: one error
        wire.send(json.dumps(batch))
        got = wire.reply()
        assert got is not None and got["id"] is None and got["error"]["code"] == -32600, got
        wire.nothing_more()


def test_a_huge_line_is_answered_without_being_held(wire):
    """A request line past 4 MiB is refused for its id (read and dropped, not held); one just
    under it is read, and the tool refuses the statement as too large (AQL0208)."""
    from attemptdb.readers.mcp_server import MAX_REQUEST_BYTES
    big = {"jsonrpc": "2.0", "id": 40, "method": "tools/call",
           "params": {"name": "query", "arguments": {"statement": "x" * (MAX_REQUEST_BYTES + 10)}}}
    wire.send(json.dumps(big))
    got = wire.reply()
    assert got is not None and got["id"] == 40 and got["error"]["code"] == -32600, got
    assert "4 MiB" in got["error"]["message"]
    wire.nothing_more()
    big["id"], big["params"]["arguments"]["statement"] = 41, "x" * (MAX_REQUEST_BYTES - 200)
    got = wire.ask(big)
    assert got is not None and got["id"] == 41 and got["result"]["isError"], got
    assert got["result"]["structuredContent"]["error"]["code"] == "AQL0208"
    wire.nothing_more()


def test_the_session_goes_on_and_well_formed_requests_answer_as_before(wire):
    """After every malformed line above: the SDK's own errors for a well-formed request, and a
    tool call, answer as they did."""
    got = wire.ask({"jsonrpc": "2.0", "id": 50, "method": "nosuch"})
    assert got["id"] == 50 and got["error"]["code"] == -32601
    got = wire.ask({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": {"name": 5}})
    assert got["id"] == 51 and got["error"]["code"] == -32602
    got = wire.ask({"jsonrpc": "2.0", "id": 52, "method": "tools/list", "params": None})  # null: no params
    assert got["id"] == 52 and [t["name"] for t in got["result"]["tools"]][0] == "query"
    got = wire.ask({"jsonrpc": "2.0", "id": 53, "method": "tools/call",
                    "params": {"name": "query", "arguments": {"statement": "SELECT 1 AS one"}}})
    assert got["id"] == 53 and got["result"]["structuredContent"]["rows"] == [{"one": 1}]
    wire.nothing_more()


# --- the screen, without a process ---------------------------------------------------------------

def test_the_screen_finds_the_id_of_a_deep_or_cut_line_in_one_pass():
    """The id is read from the top level only: a value nested a million deep or a line cut
    in the middle costs one pass, no recursion."""
    import time

    from attemptdb.readers import mcp_server as m
    deep = '{"jsonrpc":"2.0","params":{"a":' + "[" * 1_000_000 + "]" * 1_000_000 + '},"id":7,"method":"x"}'
    t = time.perf_counter()
    kind, members, whole = m.top_level(deep)
    assert (kind, members["id"], whole) == ("object", 7, True)
    assert time.perf_counter() - t < 5  # one pass (a recursive read would fail, not be slow)
    assert m.screen(deep[:1000], cut=True)[1]["error"]["code"] == -32600
    assert m.screen('{"id": 8, "method": "x", "params": "' + "a" * 100)[1]["id"] == 8
    # an id that cannot be written back (a lone surrogate) is answered for null
    assert m.screen('{"jsonrpc":"2.0","id":"\\ud800","method":"ping","params":"x"}')[1]["id"] is None
    assert m.screen(_req(9, "ping")) == (True, None)
