"""The AttemptDB Datasette plugin: pages of its own under `/-/attemptdb/` (Needs You, open work
units, recent sessions, a session's timeline, an attempt's evidence, the recipes) and links to
them in Datasette's menu.

Invariants: a hook does nothing for a Datasette instance `serve.build` did not configure (its
`attemptdb_ui` attribute); pages read through Datasette's read connection of the AttemptDB database
(read-only, content hidden unless asked: serve.ReadOnlyDatabase) or, for a recipe Datasette cannot
run, through the engine of `attempt query` on the plugin's one apsw read-only connection
(UIConfig.conn) with the same content rule and the same bounds (limits: AQL0502 past them, a 400 on
the plugin's pages); a request's own mistake on Datasette's pages is a 400, never a 500 (mistakes);
every value reaches the page through Jinja's autoescaping or the DOM's textContent, never as
markup; the pages run no inline script of their own (Needs You's is served as `needs-you.js`) under
a Content-Security-Policy that allows none (PAGE_CSP); an unknown id or recipe is a 404, never an
exception; a retracted session or attempt is a 410 that names its retractions and shows nothing
else of it (pages.retracted); a recipe the engine refuses is a 400, its page as its JSON; of
Datasette's own pages under `/-/` only its static files are served, its introspection and debug
pages answer 404 (KEPT_DATASETTE_PAGES).

The process never closes a descriptor of the file while Datasette's connections to it are open.
Datasette reads through the standard library's SQLite, the plugin through apsw's own copy, and
a POSIX lock belongs to the process: closing any descriptor of a file drops every lock the
process holds on it, the other copy's too (sqlite.org/howtocorrupt.html, §2.2). A writer then
takes Datasette's connections for gone and may reset or delete the -wal under them: every page
answers 500 (`database disk image is malformed`) until a restart. So the plugin's apsw
connection is opened once, before Datasette's (serve.build), kept for the server's whole life
and used by one thread at a time; it holds a lock on the file all along, and SQLite defers the
close of a descriptor of a file its own copy holds a lock on, so the other apsw connections of
the process (the spool drain's writer, a query's companion) close without closing one.
"""

import asyncio
import base64
import hashlib
import os
import re
import threading
import time

from datasette import hookimpl
from datasette.utils.asgi import BadRequest, NotFound, Response

from ...errors import AttemptError
from ...query.errors import AQLError
from .. import bounded, content
from . import limits, metadata, mistakes, pages, policy

PREFIX = "/-/attemptdb"
_ID = r"(?P<ident>[A-Za-z0-9_-]{1,80})"
REFRESH_EVERY_S = 2.0

def _inline_script_hashes() -> list[str]:
    """CSP hashes of the inline scripts Datasette's base template includes on every page (its
    menu closer, a template without variables); none when it cannot be read."""
    try:
        import datasette
        path = os.path.join(os.path.dirname(datasette.__file__), "templates", "_close_open_menus.html")
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    return ["'sha256-" + base64.b64encode(hashlib.sha256(m.encode("utf-8")).digest()).decode("ascii") + "'"
            for m in re.findall(r"<script>(.*?)</script>", text, re.S) if "{" + "{" not in m and "{%" not in m]


# The plugin's own pages: no inline script but those hashes, no inline event handler, nothing
# from elsewhere (policy.CSP, the policy of Datasette's pages, also allows inline scripts).
PAGE_CSP = policy.csp(" ".join(["'self'", *_inline_script_hashes()]))


class UIConfig:
    """What the plugin needs to know about its database (set by serve.build), and `conn`: the
    plugin's one apsw connection to it (with its `gate`, from store.readonly.connect; `reader`
    gives the two, else they are opened here), behind the content wall and with the bounds of
    every UI read (limits), never closed (module invariants), used by one thread at a time."""

    def __init__(self, path, db_name, include_content, recipes, before_read=None, reader=None):
        import apsw

        from ...query.result import bound_fetches
        from ...store.readonly import connect
        self.path = path
        self.db_name = db_name
        self.include_content = include_content
        self.recipes = recipes
        self.before_read = before_read
        self.conn, self.gate = reader or connect(path)
        self.conn.authorizer = content.authorizer(self.gate, include_content)
        self.conn.limit(apsw.SQLITE_LIMIT_LENGTH, limits.MAX_VALUE_BYTES)
        bound_fetches(self.conn, limits.MAX_FETCH_BYTES)
        self._lock = threading.Lock()  # who uses `conn`
        self._last = 0.0

    def read(self, fn, *args):
        """fn(conn, gate, *args) on the reader, waiting for the thread that uses it."""
        with self._lock:
            return fn(self.conn, self.gate, *args)

    def refresh(self):
        """Hand events waiting in the spool to the store, as every read command does (at most
        every REFRESH_EVERY_S, and not while another thread reads); never fails a page."""
        if self.before_read is None or not self._lock.acquire(blocking=False):
            return
        try:
            now = time.monotonic()
            if now - self._last < REFRESH_EVERY_S:
                return
            self._last = now
            self.before_read(self.conn)
        except Exception:
            pass
        finally:
            self._lock.release()


def _config(datasette) -> UIConfig | None:
    return getattr(datasette, "attemptdb_ui", None)


async def _read(datasette, fn, *args):
    cfg = _config(datasette)
    await asyncio.to_thread(cfg.refresh)
    db = datasette.get_database(cfg.db_name)
    try:
        return await db.execute_fn(lambda conn: fn(conn, *args))
    except limits.AnswerTooLarge as e:
        raise BadRequest(str(e)) from None


async def _page(datasette, request, template, *, status=200, **context):
    cfg = _config(datasette)
    context.update(prefix=PREFIX, db_name=cfg.db_name, include_content=cfg.include_content)
    return Response.html(await datasette.render_template(template, context, request=request),
                         status=status, headers={"content-security-policy": PAGE_CSP})


async def _subject_page(datasette, request, template, data, missing: str):
    """A page of one subject: 404 when there is none, 410 naming its retractions when a
    Retraction removed it (Gone: the id was recorded, and a retraction is never undone)."""
    if data is None:
        raise NotFound(missing)
    if "retracted" in data:
        return await _page(datasette, request, "attemptdb/retracted.html", status=410, **data["retracted"])
    return await _page(datasette, request, template, **data)


_SCRIPTS: dict = {}


async def needs_you_script(datasette, request):
    """templates/attemptdb/needs_you.js: the page's script, from this server (PAGE_CSP)."""
    text = _SCRIPTS.get("needs_you")
    if text is None:
        path = os.path.join(os.path.dirname(__file__), "templates", "attemptdb", "needs_you.js")
        with open(path, encoding="utf-8") as f:
            text = _SCRIPTS["needs_you"] = f.read()
    return Response(text, content_type="text/javascript; charset=utf-8", headers={"cache-control": "no-store"})


async def index_page(datasette, request):
    sessions = await _read(datasette, pages.recent_sessions)
    return await _page(datasette, request, "attemptdb/index.html", sessions=sessions,
                       recipes=_config(datasette).recipes)


async def needs_you_page(datasette, request):
    rows = await _read(datasette, pages.needs_you)
    return await _page(datasette, request, "attemptdb/needs_you.html", rows=rows)


async def needs_you_json(datasette, request):
    rows = await _read(datasette, pages.needs_you)
    return Response.json({"rows": bounded.json_safe(rows), "read_at": time.strftime("%H:%M:%S")},
                         headers={"cache-control": "no-store"})


async def units_page(datasette, request):
    rows = await _read(datasette, pages.open_units)
    return await _page(datasette, request, "attemptdb/units.html", rows=rows)


async def session_page(datasette, request):
    data = await _read(datasette, pages.session_timeline, request.url_vars["ident"])
    return await _subject_page(datasette, request, "attemptdb/session.html", data, "no session with that id")


async def attempt_page(datasette, request):
    data = await _read(datasette, pages.attempt_evidence, request.url_vars["ident"])
    return await _subject_page(datasette, request, "attemptdb/attempt.html", data, "no attempt with that id")


def _run_recipe(cfg: UIConfig, statement: str) -> dict:
    cfg.refresh()
    return cfg.read(lambda conn, gate: bounded.run(conn, statement, gate=gate))


async def recipe_page(datasette, request):
    cfg = _config(datasette)
    recipe = next((r for r in cfg.recipes if r["slug"] == request.url_vars["slug"]), None)
    if recipe is None:
        raise NotFound("no recipe with that name")
    if recipe["kind"] == "canned":  # Datasette runs it: one place for its rows
        return Response.redirect(datasette.urls.database(cfg.db_name) + "/" + recipe["slug"])
    values = {p: (request.args.get(p) or "").strip()[:200] for p in recipe["placeholders"]}
    answer, error = None, None
    if all(values.values()):
        statement = metadata.fill(recipe["statement"], values)
        try:
            answer = await asyncio.to_thread(_run_recipe, cfg, statement)
        except AQLError as e:
            error = e.to_json()
        except AttemptError as e:
            error = {"code": e.code, "message": e.message}
    status = 400 if error else 200  # the same for the page and its JSON
    if request.args.get("_format") == "json":
        return Response.json({"recipe": recipe, "answer": answer, "error": error},
                             status=status, headers={"cache-control": "no-store"})
    return await _page(datasette, request, "attemptdb/recipe.html", status=status, recipe=recipe,
                       values=values, answer=answer, error=error)


# Datasette's own pages under /-/ that a reader of this UI uses: its static files (CSS, JS) and
# those of plugins. The others (introspection and debugging: /-/versions, /-/plugins,
# /-/settings, /-/config, /-/metadata, /-/databases, /-/threads, /-/actor, /-/permissions,
# /-/messages, /-/allow-debug, /-/patterns, /-/auth-token, /-/logout, and whatever a later
# Datasette adds) answer 404, as a page that is not there.
KEPT_DATASETTE_PAGES = ("static/", "static-plugins/")
_HIDDEN = re.compile("^/-/(?!" + "|".join(re.escape(k) for k in KEPT_DATASETTE_PAGES)
                     + "|" + re.escape(PREFIX[3:]) + "(?:/|$))")


async def not_here(datasette, request):
    """Datasette's introspection and debug pages: not part of this UI (KEPT_DATASETTE_PAGES)."""
    raise NotFound("no such page")


@hookimpl
def register_routes(datasette):
    if _config(datasette) is None:
        return []
    p = re.escape(PREFIX)
    return [
        (_HIDDEN, not_here),  # a plugin's routes are matched before Datasette's own
        (rf"^{p}/?$", index_page),
        (rf"^{p}/needs-you$", needs_you_page),
        (rf"^{p}/needs-you\.json$", needs_you_json),
        (rf"^{p}/needs-you\.js$", needs_you_script),
        (rf"^{p}/units$", units_page),
        (rf"^{p}/session/{_ID}$", session_page),
        (rf"^{p}/attempt/{_ID}$", attempt_page),
        (rf"^{p}/recipes/(?P<slug>[a-z0-9-]{{1,80}})$", recipe_page),
    ]


@hookimpl
def render_cell(value, datasette):
    """Datasette's own table, row and query pages show a text's control and disguising
    characters as U+FFFD too (pages.shown), escaped as Datasette escapes every cell."""
    if _config(datasette) is None or not isinstance(value, str):
        return None
    text = pages.shown(value)
    if text == value:
        return None
    from markupsafe import escape
    return escape(text)


@hookimpl(wrapper=True)
def handle_exception(datasette, request, exception):
    """A request's own mistake answers 400, with no traceback on stderr (mistakes): only this
    answer is sent, so Datasette's handler, which would print one, never runs."""
    responses = yield
    if _config(datasette) is None:
        return responses
    mistake = mistakes.client_mistake(request, exception)
    if mistake is None:
        return responses
    return [mistakes.answer(datasette, request, mistake)]


@hookimpl
def filters_from_request(request, database, table, datasette):
    """No filter of its own: refuses the parameters Datasette would ignore (mistakes)."""
    if _config(datasette) is None:
        return None

    async def inner():
        await mistakes.refuse_ignored(request, database, table, datasette)
        return None

    return inner


@hookimpl
def menu_links(datasette, actor, request):
    if _config(datasette) is None:
        return []
    return [{"href": PREFIX + "/needs-you", "label": "Needs You"},
            {"href": PREFIX + "/units", "label": "Open work units"},
            {"href": PREFIX, "label": "Sessions and recipes"}]
