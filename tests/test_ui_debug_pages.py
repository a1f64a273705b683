"""`attempt ui`: Datasette's introspection and debug pages are not part of this UI. A user's
walkthrough reached `/-/allow-debug`, `/-/messages`, `/-/threads`, `/-/patterns`, `/-/actor`, …
with the cookie (and `/-/versions`, `/-/plugins` told every version installed). Of Datasette's
pages under `/-/` only its static files are served; the others answer 404 with the security
headers, as a page that is not there (plugin.KEPT_DATASETTE_PAGES). A real `attempt ui`
process, on the wire."""

import pytest
from test_readers_hostile import _headers
from test_readers_ui import scenario_ui
from test_ui_bad_params import _secured

from attemptdb.readers.web import serve

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

DB = "/" + serve.DB_NAME
HIDDEN = [
    # the walkthrough's findings
    "/-/allow-debug", "/-/messages", "/-/threads", "/-/patterns", "/-/actor",
    # the other introspection pages, their JSON and the redirects to them
    "/-/actor.json", "/-/threads.json", "/-/permissions", "/-/config", "/-/config.json", "/-/settings",
    "/-/settings.json", "/-/plugins", "/-/plugins.json", "/-/versions", "/-/versions.json", "/-/databases",
    "/-/databases.json", "/-/metadata", "/-/metadata.json", "/-/auth-token", "/-/logout",
    # pages later Datasettes add: never served whatever the installed version
    "/-/actions", "/-/tables", "/-/allowed", "/-/rules", "/-/check", "/-/jinja", "/-/debug",
    "/-/allow-debug?actor=%7B%7D&allow=%7B%7D", "/-/attemptdbx",
]
# what the UI's pages use stays served
SERVED = ["/-/static/app.css", "/-/attemptdb", "/-/attemptdb/", "/-/attemptdb/needs-you", "/-/attemptdb/units",
          "/-/attemptdb/needs-you.js", "/", DB, f"{DB}/events", f"{DB}/sessions.json"]


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    u = scenario_ui(tmp_path_factory, "ui-debug-pages")
    yield u
    u.stop()


@pytest.mark.parametrize("path", HIDDEN)
def test_datasettes_debug_and_introspection_pages_are_404_with_the_security_headers(ui, path):
    status, h = _headers(ui, path)
    assert status == 404, (path, status)
    _secured(h, path)
    status, body = ui.request(path)
    assert status == 404, (path, status, body[:300])
    assert "0.65" not in body and "datasette_version" not in body and "sqlite_version" not in body.lower()


@pytest.mark.parametrize("path", SERVED)
def test_the_pages_of_the_ui_still_answer(ui, path):
    status, body = ui.request(path)
    assert status in (200, 302), (path, status, body[:300])


def test_without_the_cookie_it_stays_403(ui):
    assert ui.request("/-/versions", cookie=False)[0] == 403
