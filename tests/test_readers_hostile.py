"""The read surfaces under hostile stored values: what a hook payload (a tool name, a path, a
project directory, an error) or a recorded command's output can make `attempt mcp` answer and
`attempt ui` serve. Values are data: never markup, never a control character in what a client
shows, never an answer without bounds, never content the user did not opt into."""

import json
import urllib.parse

import pytest
import scenario_db
from conftest import run_attempt
from test_readers_mcp import talk
from test_readers_ui import UI

from attemptdb.readers import bounded, mcp_server
from attemptdb.readers.web import plugin, serve

pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")
pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

# what a terminal acts on: C0 (ESC), DEL, C1 (U+009B is CSI), line separators, bidi overrides
CONTROL = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f\u2028\u202e"
MARKUP = "\"><img src=x onerror=alert(1)>{{7*7}}</textarea>"
UNSAFE = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F),
                           *range(0x2066, 0x206A)]}
SECRET = "SECRET-OUTPUT-4f1c"
LONG_TOOL = "T" * 50_000
SPOOF_TOOL = "Read\u202egnp.exe"        # shows as "Readexe.png" where bidi overrides act
SPOOF_PATH = "notes\u2066\x1b[8m\u2069"  # an isolate and a terminal control


def _scenario(name, events, *, project="hostile"):
    return {"name": name, "date": "now", "description": "d", "covers": ["x"], "expect": {"x": []},
            "projects": {"default": {"root": f"/work/{project}", "remote": None}}, "events": events}


def _calls(n, tool_name, path, *, session="h1"):
    """A session start and `n` failed tool calls with these names and paths."""
    events = [{"label": "s", "at": "-00:30:00", "session": session, "payload": {"hook_event_name": "SessionStart"}}]
    for i in range(n):
        tin = {"file_path": f"/work/hostile/{path}{i}", "command": "x"}
        events.append({"label": f"a{i}", "at": f"-00:20:{i:02d}", "session": session, "payload": {
            "hook_event_name": "PreToolUse", "tool_name": tool_name, "tool_use_id": f"t{i}", "tool_input": tin}})
        events.append({"label": f"b{i}", "at": f"-00:10:{i:02d}", "session": session, "payload": {
            "hook_event_name": "PostToolUseFailure", "tool_name": tool_name, "tool_use_id": f"t{i}",
            "tool_input": tin, "error": "failed"}})
    return events


def _recorded_output(tmp_path, home):
    """A database holding a command's output as an artifact (`attempt run --attach-output`)."""
    db = str(tmp_path / "artifacts.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    p = run_attempt(["run", "--db", db, "--attach-output", "--", "sh", "-c", f"echo {SECRET}"])
    assert p.returncode == 0 and SECRET.encode() in p.stdout, p.stderr.decode()
    n = json.loads(run_attempt(["query", "SELECT count(content) AS n FROM artifacts", "--json", "--db", db]).stdout)
    assert n == [{"n": 1}], "the output was kept as an artifact"
    return db


# --- attempt mcp ---------------------------------------------------------------------------------

def test_a_commands_output_kept_as_an_artifact_is_content(tmp_path, home):
    """Artifact bytes are a command's output: behind the content wall like every other content
    column, in any form a statement reads them (the bytes are zlib: hex() would carry them)."""
    db = _recorded_output(tmp_path, home)
    reads = "SELECT hex(content) AS h, length(content) AS n, CAST(content AS BLOB) AS b FROM artifacts"
    hidden = mcp_server.Reader(db).call("query", {"statement": reads})
    assert hidden["rows"] == [{"h": "", "n": None, "b": None}]  # hex(NULL) is ''
    shown = mcp_server.Reader(db, include_content=True).call("query", {"statement": reads})
    assert shown["rows"][0]["h"] and shown["rows"][0]["n"] > 0
    meta = mcp_server.Reader(db).call("query", {"statement": "SELECT size_bytes, purpose FROM artifacts"})
    assert meta["rows"] == [{"size_bytes": len(SECRET) + 1, "purpose": "command.stdout"}]  # metadata stays


def test_an_answer_is_bounded_in_size_whatever_the_values_hold(tmp_path, home):
    """Tool names and paths of 100,000 characters in 40 calls: values are cut at
    the MCP reader's VALUE_CHARS (said in `values_cut` and a note) and the rows stop at its
    ANSWER_CHARS."""
    db = str(tmp_path / "big.db")
    name, path = "T" * 100_000, "p" * 100_000
    scenario_db.build(db, _scenario("big", _calls(40, name, path)))
    r = mcp_server.Reader(db)
    wide = r.call("query", {"statement": "SELECT * FROM tool_calls"})
    size = len(json.dumps(wide, ensure_ascii=False))
    assert size <= mcp_server.ANSWER_CHARS + 4 * mcp_server.VALUE_CHARS, size
    assert wide["truncated"] and wide["total"] == 40 and 0 < wide["row_count"] < 40
    assert wide["values_cut"] > 0 and any("cut" in n for n in wide["notes"])
    row = wide["rows"][0]
    assert row["tool_name"] == name[:mcp_server.VALUE_CHARS] + bounded.CUT_MARK
    assert all(len(p) <= mcp_server.VALUE_CHARS + len(bounded.CUT_MARK) for p in row["paths"])
    # one narrow column of a few rows: every row fits, each value cut
    narrow = r.call("query", {"statement": "SELECT tool_name FROM tool_calls LIMIT 5"})
    assert narrow["row_count"] == 5 and not narrow["truncated"] and narrow["values_cut"] == 5
    # the rest of a value stays readable, a piece at a time
    piece = r.call("query", {"statement": "SELECT substr(tool_name, 90001, 10) AS t FROM tool_calls LIMIT 1"})
    assert piece["rows"] == [{"t": "T" * 10}] and piece["values_cut"] == 0
    for tool, args in (("query", {"statement": "SHOW ATTEMPTS"}), ("timeline", {})):
        out = r.call(tool, args)
        assert len(json.dumps(out, ensure_ascii=False)) <= mcp_server.ANSWER_CHARS + 8 * mcp_server.VALUE_CHARS, tool
        assert out["values_cut"] > 0, tool


def test_no_control_character_reaches_the_text_a_client_shows(tmp_path, home):
    """A tool name and path full of terminal controls, and an argument echoed by a refusal:
    the text of every result carries none (escaped in the JSON, `?` in the error line), and
    the JSON still decodes to the stored value."""
    db = str(tmp_path / "ctl.db")
    tool = "Bash" + CONTROL + MARKUP
    scenario_db.build(db, _scenario("ctl", _calls(1, tool, CONTROL)))
    _, (rows, refused) = talk(db, home, [("query", {"statement": "SELECT tool_name, path_relative FROM tool_calls"}),
                                         ("needs_you", {"project": "x" + CONTROL})])
    assert not rows.is_error and rows.structured_content["rows"][0]["tool_name"] == tool  # the data, whole
    text = rows.content[0].text
    assert not UNSAFE & set(text), sorted(UNSAFE & set(text))
    assert json.loads(text)["rows"] == rows.structured_content["rows"]
    assert refused.is_error and refused.structured_content["error"]["code"] == "AQL0303"
    line, _, rest = refused.content[0].text.partition("\n")
    assert line.startswith("error[AQL0303]: ") and not UNSAFE & set(line)
    assert not UNSAFE & set(rest) and json.loads(rest) == refused.structured_content


# --- attempt ui ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_ui(tmp_path_factory):
    """`attempt ui` (content hidden) over a database with markup in a project name, a tool name
    and paths, and a command's output kept as an artifact."""
    tmp = tmp_path_factory.mktemp("hostile-ui")
    home = tmp / "home"
    home.mkdir()
    db = str(tmp / "attempt.db")
    assert run_attempt(["init", "--db", db], env={"HOME": str(home)}).returncode == 0
    p = run_attempt(["run", "--db", db, "--attach-output", "--", "sh", "-c", f"echo {SECRET}"],
                    env={"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")})
    assert p.returncode == 0, p.stderr.decode()
    scenario_db.build(db, _scenario("markup", _calls(2, MARKUP, MARKUP), project="<img src=x onerror=alert(9)>"))
    long = scenario_db.build(db, _scenario("long", _calls(3, LONG_TOOL, "p" * 50_000, session="L1"), project="long"))
    spoof = scenario_db.build(db, _scenario("spoof", _calls(1, SPOOF_TOOL, SPOOF_PATH, session="B1")))
    u = UI(db, home)
    u.long_session = long[0].expand("{ses:claude_code:L1}")
    u.spoof_session = spoof[0].expand("{ses:claude_code:B1}")
    yield u
    u.stop()


def _headers(u, path, *, cookie=True, query=""):
    import urllib.error
    import urllib.request

    from test_readers_ui import NoRedirect
    req = urllib.request.Request(u.base(path) + query)
    if cookie:
        req.add_header("Cookie", u.cookie)
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}


def _directives(csp: str) -> dict:
    out = {}
    for part in csp.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def test_every_response_carries_the_security_headers(hostile_ui):
    """No framing (clickjacking), no MIME sniffing, no referrer, nothing loaded from or sent to
    another origin: on the plugin's pages, Datasette's pages, JSON, and the guard's refusals."""
    u = hostile_ui
    paths = [("/-/attemptdb/needs-you", True, 200), ("/-/attemptdb/needs-you.json", True, 200),
             (f"/{serve.DB_NAME}/tool_calls", True, 200), (f"/{serve.DB_NAME}", True, 200),
             ("/-/attemptdb/needs-you", False, 403), ("/-/attemptdb/session/ses_nosuch", True, 404)]
    for path, cookie, want in paths:
        status, h = _headers(u, path, cookie=cookie)
        assert status == want, path
        assert h.get("x-content-type-options") == "nosniff", path
        assert h.get("x-frame-options") == "DENY" and h.get("referrer-policy") == "no-referrer", path
        csp = _directives(h.get("content-security-policy", ""))
        assert csp.get("frame-ancestors") == ["'none'"] and csp.get("object-src") == ["'none'"], path
        assert csp.get("default-src") == ["'self'"] and csp.get("base-uri") == ["'none'"], path
        assert csp.get("connect-src") == ["'self'"], path
    # the plugin's own pages run no inline script but Datasette's menu closer (by its hash)
    for path in ("/-/attemptdb/needs-you", "/-/attemptdb", "/-/attemptdb/units"):
        script = _directives(_headers(u, path)[1]["content-security-policy"])["script-src"]
        assert "'unsafe-inline'" not in script and "'unsafe-eval'" not in script, path
        assert script[0] == "'self'" and all(s.startswith("'sha256-") for s in script[1:]), path
    status, body = u.request("/-/attemptdb/needs-you")
    assert status == 200 and f'src="{plugin.PREFIX}/needs-you.js"' in body
    assert "<script>" not in body.split("</footer>")[0]  # the page's own script is no longer inline


def test_needs_you_still_refreshes_itself_under_its_policy(hostile_ui):
    """The strict policy of the plugin's pages leaves the page working: its script (from this
    server) polls and draws the rows, the hostile project name as text."""
    from test_readers_ui import Tables
    dom = hostile_ui.browser("/-/attemptdb/needs-you")
    page = Tables(dom)
    assert any(tag == "body" and a.get("data-adb-polled") == "yes" for tag, a in page.elements)
    assert not any(tag == "img" for tag, _ in page.elements)


def test_the_token_redirect_stays_on_this_server(hostile_ui):
    """`//host/…?token=` would redirect to another site (a protocol-relative address)."""
    u = hostile_ui
    for path in ("//evil.example/x", "///evil.example/x", "/\\evil.example/x"):
        status, h = _headers(u, path, cookie=False, query=f"?token={u.token}&a=1")
        loc = h.get("location", "")
        assert status == 302 and loc.startswith("/") and not loc.startswith("//"), (path, loc)
        assert urllib.parse.urlsplit(urllib.parse.urljoin(u.base("/"), loc)).netloc == f"127.0.0.1:{u.port}"
        assert loc.endswith("?a=1") and "token" not in loc


def test_the_ui_hides_a_commands_output_unless_asked(hostile_ui):
    """Datasette's SQL page reads the artifacts table (projection machinery is not listed, but
    SQL reads it): its bytes read as NULL there too, in any form."""
    status, body = hostile_ui.request(f"/{serve.DB_NAME}.json?" + urllib.parse.urlencode(
        {"sql": "SELECT hex(content) AS h, CAST(content AS TEXT) AS t, length(content) AS n, purpose "
                "FROM artifacts", "_shape": "array"}))
    assert status == 200, body
    assert json.loads(body) == [{"h": "", "t": None, "n": None, "purpose": "command.stdout"}]  # hex(NULL) is ''


def test_the_host_header_must_name_loopback_whatever_follows_a_colon(hostile_ui):
    """DNS rebinding: only a loopback name, with a numeric port if any, passes the Host check."""
    u = hostile_ui
    for host in ("localhost:1.evil.example", "127.0.0.1:80@evil.example", "localhost:", "[::1]evil.example",
                 f"evil.example:{u.port}", "localhost.evil.example"):
        assert u.request("/-/attemptdb/needs-you", headers={"Host": host})[0] == 403, host
    for host in (f"localhost:{u.port}", f"127.0.0.1:{u.port}", f"[::1]:{u.port}", "LOCALHOST"):
        assert u.request("/-/attemptdb/needs-you", headers={"Host": host})[0] == 200, host


def test_a_page_shows_a_long_value_cut(hostile_ui):
    """A tool name and paths of 50,000 characters: the plugin's pages show each cut at
    pages.MAX_TEXT_CHARS (ending in …), so a page stays small; Datasette's pages have the value."""
    from attemptdb.readers.web import pages
    u = hostile_ui
    status, body = u.request(f"/-/attemptdb/session/{u.long_session}")
    assert status == 200 and len(body) < 100_000, len(body)
    assert "T" * pages.MAX_TEXT_CHARS + "…" in body and "T" * (pages.MAX_TEXT_CHARS + 1) not in body
    status, body = u.request(f"/{serve.DB_NAME}.json?" + urllib.parse.urlencode(
        {"sql": "SELECT length(tool_name) AS n FROM tool_calls WHERE session_id = :s", "s": u.long_session,
         "_shape": "array"}))
    assert status == 200 and json.loads(body) == [{"n": 50_000}] * 3


def test_a_page_shows_no_bidi_or_control_character(hostile_ui):
    """A tool name with a right-to-left override reads reversed (`exe.png` for `gnp.exe`): the
    plugin's pages show such characters, and controls, as U+FFFD (the CLI shows `?`)."""
    u = hostile_ui
    status, body = u.request(f"/-/attemptdb/session/{u.spoof_session}")
    assert status == 200
    assert "Read\ufffdgnp.exe" in body and "notes\ufffd\ufffd[8m\ufffd0" in body
    assert not {"\u202e", "\u2066", "\u2069", "\x1b"} & set(body)
    # Datasette's own table page too (plugin.render_cell); its JSON keeps the stored value
    status, body = u.request(f"/{serve.DB_NAME}/tool_calls?" + urllib.parse.urlencode({"session_id": u.spoof_session}))
    assert status == 200 and "Read\ufffdgnp.exe" in body
    assert not {"\u202e", "\u2066", "\u2069", "\x1b"} & set(body)
    status, body = u.request(f"/{serve.DB_NAME}/tool_calls.json?" + urllib.parse.urlencode(
        {"session_id": u.spoof_session, "_shape": "array"}))
    assert status == 200 and "\u202e" in json.loads(body)[0]["tool_name"]
