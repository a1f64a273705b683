"""`attempt ui`: a real `attempt ui` process over a scenario database, its pages loaded in a
real headless browser (Debian's chromium; `.ci/run` installs it), its refusals checked on
the wire, and the file's bytes compared before and after."""

import html
import html.parser
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import scenario_db
from conftest import ROOT, attempt_cmd, run_attempt

from attemptdb.projections import catalog
from attemptdb.readers.web import metadata, serve

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UI:
    """A running `attempt ui`: its port, token and process."""

    def __init__(self, db, home, *args, port=None):
        self.db = db
        self.port = port or _free_port()
        env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"),
                   XDG_STATE_HOME=str(home / ".local" / "state"), XDG_CONFIG_HOME=str(home / ".config"),
                   PYTHONPATH=ROOT, ATTEMPTDB_NO_DAEMON="1")
        self.proc = subprocess.Popen(attempt_cmd() + ["ui", "--db", db, "--port", str(self.port), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        line = self.proc.stdout.readline()
        assert "token=" in line, line + self.proc.stderr.read()
        self.url = line.split(": ", 1)[1].strip()
        self.token = self.url.rsplit("token=", 1)[1]
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and self.proc.poll() is None, self.proc.stderr.read()
                time.sleep(0.1)
        self.set_cookies = self.sign_in()
        self.cookie = self.set_cookies[0].split(";", 1)[0]  # `name=value`, as a browser sends it back

    def sign_in(self, cookie=None) -> list:
        """The Set-Cookie values of the token's redirect (ours first), as a browser opening the
        printed address gets them (`cookie`: what it already holds for this host)."""
        req = urllib.request.Request(self.base(f"/-/attemptdb?token={self.token}"))
        if cookie:
            req.add_header("Cookie", cookie)
        try:
            urllib.request.build_opener(NoRedirect).open(req, timeout=30)
        except urllib.error.HTTPError as e:
            assert e.code == 302, e.code
            return e.headers.get_all("Set-Cookie")
        raise AssertionError("the token's address did not redirect")

    def base(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, path, *, method="GET", data=None, cookie=True, headers=None):
        """(status, body) of one request, without following redirects."""
        req = urllib.request.Request(self.base(path), method=method, data=data, headers=dict(headers or {}))
        if cookie:
            req.add_header("Cookie", self.cookie if cookie is True else cookie)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(req, timeout=30) as r:
                return r.status, r.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")

    def browser(self, path, budget_ms=3000):
        """The DOM of `path` after a real browser ran its scripts (the token in the URL, as a
        person opening the printed address has it)."""
        if CHROMIUM is None:
            pytest.fail("chromium is not installed: the UI tests need a real headless browser "
                        "(apt-get install -y chromium; .ci/run installs it)")
        sep = "&" if "?" in path else "?"
        # a short directory, and chromium's TMPDIR in it: its singleton socket path must fit
        # sun_path (~100 bytes), which a test's deep temporary directory does not
        with tempfile.TemporaryDirectory(prefix="chr", dir="/tmp" if os.path.isdir("/tmp") else None) as profile:
            p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom",
                                self.base(path) + f"{sep}token={self.token}"],
                               capture_output=True, text=True, timeout=120, env=dict(os.environ, TMPDIR=profile))
        assert p.returncode == 0 and p.stdout.strip(), p.stderr[-2000:]
        return p.stdout

    def stop(self) -> str:
        """Stop the server; returns what it wrote on stderr."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


def scenario_ui(tmp_path_factory, label: str, scenario: str = "units_needs_you") -> UI:
    """A real `attempt ui` over a scenario history, in a temporary folder of its own (a module
    fixture's: the caller stops it)."""
    tmp = tmp_path_factory.mktemp(label)
    db = str(tmp / "attempt.db")
    scenario_db.build(db, scenario)
    home = tmp / "home"
    home.mkdir()
    return UI(db, home)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **kw):
        return None


class Tables(html.parser.HTMLParser):
    """Every <table> of a page: its id/class, header texts, and rows of cell texts; and the
    attributes of every element (to find injected ones)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tables, self.elements, self.scripts, self._cell = [], [], [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag == "script":
            self.scripts.append("")
        if tag == "table":
            self.tables.append({"id": a.get("id"), "class": a.get("class") or "", "head": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append({"attrs": a, "cells": []})
        elif tag in ("td", "th") and self.tables:
            self._cell = (tag, [])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell and self.tables:
            text = " ".join("".join(self._cell[1]).split())
            t = self.tables[-1]
            if self._cell[0] == "th" and len(t["rows"]) <= 1 and not any(r["cells"] for r in t["rows"]):
                t["head"].append(text)
            else:
                t["rows"][-1]["cells"].append(text)
            self._cell = None

    def handle_data(self, data):
        if self.lasttag == "script" and self.scripts:
            self.scripts[-1] += data
        if self._cell:
            self._cell[1].append(data)

    def table(self, *, id=None, cls=None):
        for t in self.tables:
            if (id and t["id"] == id) or (cls and cls in t["class"].split()):
                t["rows"] = [r for r in t["rows"] if r["cells"]]
                return t
        raise AssertionError(f"no table {id or cls} on the page")


@pytest.fixture(scope="module")
def scen(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ui") / "attempt.db")
    built = scenario_db.build(path, "units_needs_you")
    return path, built[0]


@pytest.fixture(scope="module")
def ui(scen, tmp_path_factory):
    home = tmp_path_factory.mktemp("ui-home")
    u = UI(scen[0], home)
    yield u
    u.stop()


def cli_rows(db, statement):
    p = run_attempt(["query", statement, "--json", "--db", db])
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


# --- acceptance ----------------------------------------------------------------------------------

def test_needs_you_lists_the_pending_permission_request_and_refreshes_itself(ui, scen):
    _, built = scen
    dom = ui.browser("/-/attemptdb/needs-you")
    page = Tables(dom)
    rows = page.table(id="adb-needs-you")["rows"]
    kinds = [r["attrs"].get("data-kind") for r in rows]
    assert kinds == ["permission_gate", "repeated_failure", "work_conflict"]
    gate = rows[0]["cells"]
    assert built.expand("{ses:claude_code:ny-g1}") in gate and "acme/gate" in gate
    assert any(c.startswith("waiting on a permission decision since") for c in gate)
    # the page's script polled the JSON endpoint and drew the rows itself
    assert any(tag == "body" and a.get("data-adb-polled") == "yes" for tag, a in page.elements)


def test_a_canned_recipe_page_returns_the_rows_of_attempt_query(ui, scen):
    db, _ = scen
    recipe = next(r for r in metadata.recipes(catalog.build(catalog.shipped_schema_connection()))
                  if r["question"] == "What needs me now?")
    assert recipe["kind"] == "canned"
    want = cli_rows(db, recipe["statement"])
    assert want, "the scenario has rows for this recipe"
    table = Tables(ui.browser(f"/{serve.DB_NAME}/{recipe['slug']}")).table(cls="rows-and-columns")
    assert table["head"] == list(want[0])
    got = [r["cells"] for r in table["rows"]]
    assert got == [[_text(v) for v in row.values()] for row in want]


def test_an_attemptql_recipe_page_returns_the_rows_of_attempt_query(ui, scen):
    db, _ = scen
    want = cli_rows(db, "SHOW FAILED ATTEMPTS")
    table = Tables(ui.browser("/-/attemptdb/recipes/what-failed")).table(id="adb-rows")
    col = table["head"].index("attempt_id")
    assert [r["cells"][col] for r in table["rows"]] == [r["attempt_id"] for r in want] and len(want) == 2
    fc = table["head"].index("failure_class")
    assert [r["cells"][fc] for r in table["rows"]] == [r["failure_class"] for r in want]


def test_posts_and_write_sql_are_refused_and_the_file_is_unchanged(ui, scen):
    db, built = scen
    before = scenario_db.file_hashes(db)
    for path in (f"/{serve.DB_NAME}/what-needs-me-now", f"/{serve.DB_NAME}", "/-/attemptdb/needs-you", "/-/messages"):
        status, _ = ui.request(path, method="POST", data=b"sql=DELETE+FROM+events")
        assert status == 405, path
    for sql in ("DELETE FROM events", "WITH x AS (SELECT 1) DELETE FROM events",
                "WITH x AS (SELECT 1) INSERT INTO meta (key, value) VALUES ('k', 'v')",
                "SELECT load_extension('/tmp/x')"):
        status, body = ui.request(f"/{serve.DB_NAME}.json?" + urllib.parse.urlencode({"sql": sql}))
        assert status >= 400 and json.loads(body)["ok"] is False, (sql, status)
    # and in the browser: the page shows the refusal, no rows
    dom = ui.browser(f"/{serve.DB_NAME}?" + urllib.parse.urlencode({"sql": "WITH x AS (SELECT 1) DELETE FROM events"}))
    assert "not authorized" in dom or "readonly" in dom or "read-only" in dom
    assert "rows-and-columns" not in dom
    status, _ = ui.request(f"/{serve.DB_NAME}.db")
    assert status == 403  # no download of the file (it holds every column)
    assert ui.request("/-/metadata.json")[0] == 404  # Datasette's introspection pages: not served
    cat = catalog.build(catalog.shipped_schema_connection())
    queries = metadata.datasette_metadata(cat, serve.DB_NAME, [])["databases"][serve.DB_NAME]["queries"]
    assert queries and not any(q.get("write") for q in queries.values())
    served = json.loads(ui.request(f"/{serve.DB_NAME}.json")[1])["queries"]  # the canned queries it serves
    assert {q["name"] for q in served} == set(queries)
    assert scenario_db.file_hashes(db) == before
    assert cli_rows(db, "SELECT count(*) AS n FROM events") == [{"n": len(built.events)}]


# --- the rest of the UI ------------------------------------------------------------------------

def test_every_recipe_is_offered_and_answers(ui, scen):
    cat = catalog.build(catalog.shipped_schema_connection())
    recipes = metadata.recipes(cat)
    assert len(recipes) == len(cat["recipes"]) and len({r["slug"] for r in recipes}) == len(recipes)
    status, body = ui.request("/-/attemptdb")
    assert status == 200
    for r in recipes:
        assert f"/{r['slug']}\"" in body, r["slug"]
        if r["kind"] == "canned":
            status, _ = ui.request(f"/{serve.DB_NAME}/{r['slug']}.json")
        else:
            status, page = ui.request(f"/-/attemptdb/recipes/{r['slug']}?_format=json")
            if status == 200:
                answer = json.loads(page)
                assert r["placeholders"] or answer["answer"] is not None, r["slug"]
        assert status == 200, (r["slug"], status)


def test_a_recipe_with_placeholders_runs_on_the_values_given(ui, scen):
    _, built = scen
    att = built.expand("{att:f_t2e}")
    status, page = ui.request("/-/attemptdb/recipes/what-is-this-claim-based-on?" + urllib.parse.urlencode(
        {"attempt": att, "_format": "json"}))
    assert status == 200
    answer = json.loads(page)["answer"]
    assert answer["statement"] == f"SHOW EVIDENCE FOR attempt '{att}'"
    assert answer["rows"][-1]["event_id"] == built.expand("{ev:f_t2e}")
    status, page = ui.request("/-/attemptdb/recipes/what-is-this-claim-based-on?" + urllib.parse.urlencode(
        {"attempt": "x' OR 1=1 --", "_format": "json"}))
    assert status == 400 and json.loads(page)["error"]["code"] == "AQL0105"  # a malformed id, not SQL


def test_the_database_page_lists_the_catalogs_tables_and_no_machinery(ui):
    cat = catalog.build(catalog.shipped_schema_connection())
    status, body = ui.request(f"/{serve.DB_NAME}.json")
    assert status == 200
    data = json.loads(body)
    listed = {t["name"] for t in data["tables"] if not t.get("hidden")} | {v["name"] for v in data["views"]}
    assert listed == {t["name"] for t in cat["tables"]}
    assert ui.request(f"/{serve.DB_NAME}/attempt_facts")[0] == 403
    status, body = ui.request(f"/{serve.DB_NAME}.json?sql=SELECT+count(*)+AS+n+FROM+attempt_facts&_shape=array")
    assert status == 200 and json.loads(body)[0]["n"] > 0


def test_column_descriptions_come_from_the_catalog(ui):
    cat = catalog.build(catalog.shipped_schema_connection(), "attempts")
    meaning = next(c["meaning"] for c in cat["tables"][0]["columns"] if c["name"] == "failure_class")
    status, body = ui.request(f"/{serve.DB_NAME}/attempts")
    assert status == 200 and html.escape(meaning, quote=False) in body


def test_timeline_and_evidence_pages(ui, scen):
    _, built = scen
    session = built.expand("{ses:claude_code:ny-f1}")
    dom = ui.browser(f"/-/attemptdb/session/{session}")
    page = Tables(dom)
    failed = [a for t, a in page.elements if t == "div" and "adb-is-failed" in (a.get("class") or "")]
    assert len(failed) == 2 and all(a.get("data-outcome") == "failed" for a in failed)
    assert built.expand("{att:f_t2e}") in dom and "FAILED" in dom
    att = built.expand("{att:f_t2e}")
    ev = Tables(ui.browser(f"/-/attemptdb/attempt/{att}")).table(id="adb-evidence")
    col = ev["head"].index("event")
    want = [r["event_id"] for r in cli_rows(scen[0], f"SHOW EVIDENCE FOR attempt {att}")]
    assert [r["cells"][col] for r in ev["rows"]] == want
    assert ui.request("/-/attemptdb/session/ses_nosuch")[0] == 404
    # a short id, as the CLI prints it, is read back on both pages
    status, body = ui.request(f"/-/attemptdb/session/{session[:12]}")
    assert status == 200 and att in body
    status, body = ui.request(f"/-/attemptdb/attempt/{att[:12]}")
    assert status == 200 and want[0] in body
    assert ui.request("/-/attemptdb/attempt/att_0000")[0] == 404  # too short to read back
    status, units = ui.request("/-/attemptdb/units")
    assert status == 200 and built.expand("{wu:g_p}") in units and built.expand("{wu:f_p}") in units


def test_content_is_hidden_unless_asked(ui, scen, tmp_path):
    status, body = ui.request(f"/{serve.DB_NAME}.json?" + urllib.parse.urlencode(
        {"sql": "SELECT objective FROM turns WHERE objective IS NOT NULL", "_shape": "array"}))
    assert status == 200 and json.loads(body) == []
    shown = UI(scen[0], tmp_path, "--include-content")
    try:
        status, body = shown.request(f"/{serve.DB_NAME}.json?" + urllib.parse.urlencode(
            {"sql": "SELECT objective FROM turns WHERE objective IS NOT NULL", "_shape": "array"}))
        assert status == 200 and {"objective": "Clean the build folder"} in json.loads(body)
    finally:
        shown.stop()


def test_the_token_and_the_host_are_checked(ui):
    assert ui.request("/-/attemptdb/needs-you", cookie=False)[0] == 403
    # the printed token is not the cookie's value, nor is the cookie of the old name accepted
    name = ui.cookie.split("=", 1)[0]
    assert ui.request("/-/attemptdb/needs-you", cookie=f"{name}={ui.token}")[0] == 403
    assert ui.request("/-/attemptdb/needs-you", cookie=f"attemptdb_ui_{ui.port}={ui.token}")[0] == 403
    assert ui.request("/-/attemptdb/needs-you?token=wrong", cookie=False)[0] == 403
    status, _ = ui.request(f"/-/attemptdb/needs-you?token={ui.token}", cookie=False)
    assert status == 302
    assert ui.request("/-/attemptdb/needs-you", headers={"Host": f"attacker.example:{ui.port}"})[0] == 403
    assert ui.request("/-/attemptdb/needs-you", headers={"Host": f"localhost:{ui.port}"})[0] == 200


def test_the_page_follows_the_live_file(tmp_path, home):
    """A permission answered while the UI runs leaves Needs You at the next poll (the UI reads
    the live file, WAL included); a new request that waited in the spool appears (the UI hands
    the spool to the store first, as `attempt query` does)."""
    from attemptdb.capture import spool
    from attemptdb.store.database import Store
    db = str(tmp_path / "live.db")
    built = scenario_db.build(db, "units_needs_you")[0]
    u = UI(db, home)
    try:
        kinds = lambda: [r["kind"] for r in json.loads(u.request("/-/attemptdb/needs-you.json")[1])["rows"]]
        assert "permission_gate" in kinds()
        st = Store.open(db)
        try:
            st.append([scenario_db.hook_event(built, project="gate", session="ny-g1", payload=scenario_db.ANSWER_GATE)])
        finally:
            st.close()
        assert "permission_gate" not in kinds()
        spool.put(db, scenario_db.hook_event(built, project="gate", session="ny-g1", payload={
            "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_use_id": "t9",
            "tool_input": {"command": "rm -rf dist"}}))
        time.sleep(2.1)  # the UI hands the spool over at most every 2 s
        assert "permission_gate" in kinds() and not spool.pending(db)
    finally:
        u.stop()


def test_hostile_values_are_escaped(tmp_path, home):
    """A project directory and a prompt made of markup: shown as text on every page (the
    project name in the UI's own pages and Datasette's, the prompt as content)."""
    name = "<img src=x onerror=alert(1)><marquee>x"  # a directory name: no '/'
    prompt = "<script>alert(2)</script><img src=y onerror=alert(3)>"
    scn = {"name": "hostile_ui", "date": "now", "description": "d", "covers": ["x"], "expect": {"x": []},
           "projects": {"default": {"root": f"/work/{name}", "remote": None}},
           "events": [
               {"label": "s", "at": "-00:05:00", "session": "h1", "payload": {"hook_event_name": "SessionStart"}},
               {"label": "p", "at": "-00:04:59", "session": "h1",
                "payload": {"hook_event_name": "UserPromptSubmit", "prompt": prompt}},
               {"label": "r", "at": "-00:04:58", "session": "h1", "payload": {
                   "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_use_id": "t1",
                   "tool_input": {"command": prompt}}}]}
    db = str(tmp_path / "hostile.db")
    built = scenario_db.build(db, scn)[0]
    u = UI(db, home, "--include-content")
    try:
        status, index = u.request("/-/attemptdb")
        assert status == 200 and html.escape(name, quote=False) in index and name not in index
        pages = {"/-/attemptdb/needs-you": html.escape(name, quote=False),
                 f"/-/attemptdb/session/{built.expand('{ses:claude_code:h1}')}": html.escape(prompt, quote=False),
                 f"/{serve.DB_NAME}/turns": html.escape(prompt, quote=False)}
        for path, shown in pages.items():
            dom = u.browser(path)
            page = Tables(dom)
            assert not any(tag in ("img", "marquee") for tag, _ in page.elements), path
            assert not any("alert" in s for s in page.scripts), path
            assert shown in dom, path
    finally:
        u.stop()


def test_a_remote_host_needs_the_explicit_flag(scen, tmp_path):
    p = run_attempt(["ui", "--db", scen[0], "--host", "0.0.0.0", "--port", str(_free_port())],
                    env={"HOME": str(tmp_path)}, timeout=60)
    assert p.returncode == 2 and b"error[ui.remote_host]" in p.stderr
    u = UI(scen[0], tmp_path, "--host", "0.0.0.0", "--allow-remote")
    try:
        assert u.request("/-/attemptdb/needs-you", headers={"Host": f"192.0.2.7:{u.port}"})[0] == 200
        assert u.request("/-/attemptdb/needs-you", cookie=False)[0] == 403
    finally:
        err = u.stop()
    assert "warning: listening on 0.0.0.0" in err


def test_a_busy_port_is_a_coded_error(scen, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        p = run_attempt(["ui", "--db", scen[0], "--port", str(busy.getsockname()[1])], env={"HOME": str(tmp_path)},
                        timeout=60)
    assert p.returncode == 2 and b"error[ui.cannot_listen]" in p.stderr and b"Traceback" not in p.stderr


def test_without_datasette_a_coded_error_says_how_to_install_it(tmp_path):
    import sys
    code = ("import sys; sys.modules['datasette'] = None\n"
            "from attemptdb.cli.main import run\n"
            f"sys.exit(run(['ui', '--db', {str(tmp_path / 'x.db')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 2 and "error[ui.needs_datasette]" in p.stderr and serve.INSTALL_UI in p.stderr


# --- the cookie: this server instance's own --------------------------------------------------------

def test_the_cookie_is_this_instances_own_and_as_documented(scen, tmp_path):
    """Cookies are not port-scoped: a browser sends every cookie of 127.0.0.1 to each of its
    ports. The cookie was `attemptdb_ui_<port>=<the printed token>`: any other local web app
    the browser opened got the token itself, a cookie another app set could collide, and a
    server on another port (or a new run on the same one) was one name away. Now its name holds
    the port and a random server id, its value is a session secret of that run only, and two
    servers do not accept each other's cookie, whichever way it is named."""
    a, b = UI(scen[0], tmp_path), UI(scen[0], tmp_path)
    try:
        for u in (a, b):
            name, value = u.cookie.split("=", 1)
            assert re.fullmatch(rf"attemptdb_ui_{u.port}_[0-9a-f]{{16}}", name), name
            assert value and value != u.token and u.token not in u.set_cookies[0]
            attrs = [x.strip() for x in u.set_cookies[0].split(";")[1:]]
            assert sorted(attrs) == ["HttpOnly", "Path=/", "SameSite=Strict"]  # host-only, session
            assert u.request("/-/attemptdb/needs-you")[0] == 200
        assert a.cookie.split("=")[0] != b.cookie.split("=")[0]
        # what the browser sends each of them: both cookies of the host; each takes its own only
        both = f"{a.cookie}; {b.cookie}"
        assert a.request("/-/attemptdb/needs-you", cookie=both)[0] == 200
        assert b.request("/-/attemptdb/needs-you", cookie=both)[0] == 200
        assert a.request("/-/attemptdb/needs-you", cookie=b.cookie)[0] == 403
        assert b.request("/-/attemptdb/needs-you", cookie=a.cookie)[0] == 403
        # nor the other's value under one's own name
        a_name, b_value = a.cookie.split("=")[0], b.cookie.split("=", 1)[1]
        assert a.request("/-/attemptdb/needs-you", cookie=f"{a_name}={b_value}")[0] == 403
        # signing in again keeps the same cookie; an earlier run's on this port is expired
        stale = f"attemptdb_ui_{a.port}_0123456789abcdef=x; attemptdb_ui_{a.port}=old; {b.cookie}"
        again = a.sign_in(stale)
        assert again[0].split(";", 1)[0] == a.cookie
        assert sorted(c.split("=", 1)[0] for c in again[1:]) == [f"attemptdb_ui_{a.port}",
                                                                  f"attemptdb_ui_{a.port}_0123456789abcdef"]
        assert all("Max-Age=0" in c for c in again[1:])  # b's, a live server's, is left alone
    finally:
        a.stop()
        b.stop()


def test_a_new_run_on_the_same_port_does_not_take_an_earlier_runs_cookie(scen, tmp_path):
    first = UI(scen[0], tmp_path)
    old, port = first.cookie, first.port
    first.stop()
    second = UI(scen[0], tmp_path, port=port)
    try:
        assert second.port == port and second.cookie != old
        assert second.request("/-/attemptdb/needs-you", cookie=old)[0] == 403
        assert second.request("/-/attemptdb/needs-you")[0] == 200
    finally:
        second.stop()


def test_datasette_never_sees_the_cookie():
    """The guard takes its cookie out of the request: what lies behind it (Datasette and its
    plugins, which may echo or log headers) never holds the credential; other cookies pass."""
    import asyncio
    seen = []

    async def app(scope, receive, send):
        seen.append(dict(scope["headers"]).get(b"cookie"))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard = serve.Guard(app, "tok", 8123, ["127.0.0.1"], server_id="00ff")
    assert guard.cookie == "attemptdb_ui_8123_00ff"
    sent = []

    async def send(message):
        sent.append(message)

    def get(query=b"", cookie=None):
        headers = [(b"host", b"127.0.0.1:8123")] + ([(b"cookie", cookie.encode())] if cookie else [])
        scope = {"type": "http", "method": "GET", "path": "/x", "query_string": query, "headers": headers}
        sent.clear()
        asyncio.run(guard(scope, None, send))
        return sent[0]["status"], [v.decode() for k, v in sent[0]["headers"] if k == b"set-cookie"]

    status, cookies = get(b"token=tok")
    assert status == 302 and cookies == [guard.set_cookie()]
    ours = cookies[0].split(";", 1)[0]
    assert get(cookie=f"ds_csrftoken=c; {ours}; theme=dark")[0] == 200
    assert seen[-1] == b"ds_csrftoken=c; theme=dark"
    assert get(cookie=ours)[0] == 200 and seen[-1] is None
    assert get(cookie="attemptdb_ui_8123_00ff=tok")[0] == 403  # the token is not the value
