"""`attempt ui`: a query parameter a person gets wrong on Datasette's pages (a column that is not
there, a number that is not one, JSON that does not parse, a search where no full-text index
is) is a 4xx with the security headers, never a 500 and never a traceback on the server's
stderr; what stays a fault of the server stays a 500 (readers.web.mistakes). A real
`attempt ui` process, on the wire."""

import json
import urllib.parse

import pytest
import scenario_db
from test_readers_hostile import _directives, _headers
from test_readers_ui import UI, scenario_ui

from attemptdb.readers.web import serve

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

DB = "/" + serve.DB_NAME
THROUGH_NO_FK = json.dumps({"table": "nope", "column": "x", "value": 1})

# (path and query, what the answer must say): each a request's own mistake
MISTAKES = [
    # the walkthrough's finding: a column Datasette cannot sort by, every format, tables and views
    (f"{DB}/events?_sort=nope", "Cannot sort table by nope"),
    (f"{DB}/events?_sort_desc=nope", "Cannot sort table by nope"),
    (f"{DB}/events.json?_sort=nope", "Cannot sort table by nope"),
    (f"{DB}/events.csv?_sort=nope", "Cannot sort table by nope"),
    (f"{DB}/events.csv?_stream=on&_sort=nope", "Cannot sort table by nope"),
    (f"{DB}/sessions?_sort=nope", "Cannot sort table by nope"),           # a view
    (f"{DB}/sessions.json?_sort_desc=nope", "Cannot sort table by nope"),
    (f"{DB}/events.json?_sort=seq&_sort_desc=seq", "Cannot use _sort and _sort_desc"),
    # numbers that are not numbers, JSON that does not parse or has the wrong shape
    (f"{DB}/events?_size=abc", "_size"),
    (f"{DB}/events.json?_size=-1", "_size"),
    (f"{DB}/sessions.json?_next=garbage", "_next"),                       # a view pages by offset
    (f"{DB}/events.json?_timelimit=x", "_timelimit"),
    (f"{DB}/events.csv?_timelimit=x", "_timelimit"),
    (f"{DB}.json?sql=select+1&_timelimit=x", "_timelimit"),
    (f"{DB}/events.json?_through=nope", "_through"),
    (f"{DB}/events.json?_through=1", "_through"),
    (f"{DB}/events.json?_through=" + urllib.parse.quote(THROUGH_NO_FK), "_through"),
    (f"{DB}/events.json?kind__in=%5B", "kind__in"),
    (f"{DB}/events.json?_facet=%7B", "_facet"),
    (f"{DB}/events.json?_facet=%7B%22nope%22%3A1%7D", "_facet"),
    (f"{DB}/events.json?_facet_date=%7B%22x%22", "_facet_date"),
    # names that are not there
    (f"{DB}/events?_col=nope", "_col=nope"),
    (f"{DB}/events?_nocol=nope", "_nocol=nope"),
    (f"{DB}/events.json?_facet=nope", "no such column: nope"),
    (f"{DB}/events.json?_json=nope", "_json=nope"),
    (f"{DB}/events?_shape=nope", "Invalid _shape: nope"),
    (f"{DB}/events.json?_shape=nope", "Invalid _shape: nope"),
    (f"{DB}/events.json?_search=x", "no full-text index"),
    (f"{DB}/sessions?_search=x", "no full-text index"),
    (f"{DB}/events.json?_search_kind=x", "no full-text index"),
    # SQL that is not one statement or does not parse
    (f"{DB}/events.json?_where=" + urllib.parse.quote("1=1; select 2"), "one statement"),
    (f"{DB}/events.json?_where=" + urllib.parse.quote("bad sql (("), "syntax error"),
    (f"{DB}.json?sql=select+nope", "no such column"),
    # a CSV with bad parameters
    (f"{DB}/events.csv?_size=abc", "_size"),
    (f"{DB}/events.csv?_through=x", "_through"),
]
NOT_FOUND = [f"{DB}/nope", f"{DB}/nope.json", f"{DB}/nope.csv", "/nope", f"{DB}/sessions/nope.json",
             "/-/allow-debug?actor=1&allow=1"]  # Datasette's debug page: not part of the UI (test_ui_debug_pages)
# right uses of the same parameters still answer
FINE = [f"{DB}/events.json?_sort=seq", f"{DB}/sessions.json?_sort_desc=session_id",
        f"{DB}/sessions.json?_next=1", f"{DB}/events.json?_shape=array&_json=unknown_json",
        f"{DB}/events?_shape=objects", f"{DB}.json?sql=select+1&_timelimit=100",
        f"{DB}/events.csv?_size=5", f"{DB}/events.json?_facet=kind",
        f"{DB}/events.json?_next=garbage"]  # a table's key position: any text may be one


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    u = scenario_ui(tmp_path_factory, "ui-bad-params")
    yield u
    u.stop()


def _secured(h: dict, what: str) -> None:
    assert h.get("x-content-type-options") == "nosniff", what
    assert h.get("x-frame-options") == "DENY" and h.get("referrer-policy") == "no-referrer", what
    csp = _directives(h.get("content-security-policy", ""))
    assert csp.get("frame-ancestors") == ["'none'"] and csp.get("default-src") == ["'self'"], what


@pytest.mark.parametrize("path,says", MISTAKES, ids=[p for p, _ in MISTAKES])
def test_a_bad_parameter_is_a_400_with_the_security_headers(ui, path, says):
    status, h = _headers(ui, path)
    assert status == 400, (path, status)
    _secured(h, path)
    status, body = ui.request(path)
    assert status == 400 and says in body, (path, body[:400])
    if ".json" in path.split("?")[0]:
        answer = json.loads(body)
        assert answer["ok"] is False and answer.get("status", 400) == 400, answer


@pytest.mark.parametrize("path", NOT_FOUND)
def test_an_unknown_table_or_row_is_a_404_with_the_security_headers(ui, path):
    status, h = _headers(ui, path)
    assert status == 404, (path, status)
    _secured(h, path)


@pytest.mark.parametrize("path", FINE)
def test_the_same_parameters_used_rightly_still_answer(ui, path):
    status, body = ui.request(path)
    assert status == 200, (path, body[:400])


def test_no_traceback_reaches_the_servers_stderr(tmp_path):
    """A client's mistake is not the server's error: nothing on stderr says it crashed."""
    db = str(tmp_path / "attempt.db")
    scenario_db.build(db, "units_needs_you")
    home = tmp_path / "home"
    home.mkdir()
    u = UI(db, home)
    try:
        for path in (f"{DB}/events?_sort=nope", f"{DB}/events.json?_timelimit=x",
                     f"{DB}/events.json?_through=1", f"{DB}/events.json?kind__in=%5B"):
            assert u.request(path)[0] == 400, path
    finally:
        err = u.stop()
    assert "Traceback" not in err, err[-3000:]


def test_an_exception_of_the_server_stays_a_500():
    """Only what the request caused is a 400: the same error without parameters, or an error
    no parameter can cause, is the server's (mistakes.client_mistake answers None)."""
    from datasette.utils.asgi import Request
    from datasette.views.base import DatasetteError

    from attemptdb.readers.web import mistakes
    with_params = Request.fake(f"{DB}/events.json?_timelimit=x")
    without = Request.fake(f"{DB}/events.json")
    assert mistakes.client_mistake(with_params, ValueError("x")).status == 400
    assert mistakes.client_mistake(without, ValueError("x")) is None
    assert mistakes.client_mistake(with_params, RuntimeError("x")) is None
    assert mistakes.client_mistake(with_params, OSError("disk")) is None
    assert mistakes.client_mistake(with_params, DatasetteError("sort", status=500)).status == 400
    assert mistakes.client_mistake(with_params, DatasetteError("gone", status=404)) is None
