"""`attempt ui`: Datasette over the live AttemptDB file, read-only, on the loopback interface.

Invariants:
- The file is opened `mode=ro` (the WAL is read; `immutable=1` would ignore it) on every
  connection, with `query_only` and the read-only authorizer of `attempt query`
  (attemptdb.store.readonly.Gate) behind the content wall (readers.content: content reads as NULL
  unless `--include-content`); a write connection is never opened (`connect(write=True)`
  raises), downloads of the file are off, and no canned query is a write.
- What one request may make the server hold is bounded on every connection (limits: no text or
  BLOB past SQLITE_LIMIT_LENGTH, no statement's rows past a fetch budget; AQL0502 past either).
- Only GET and HEAD reach Datasette: every other method is 405, before any view runs.
- Every request carries the access token printed at start-up (as `?token=`, which is turned
  into a cookie and stripped by a redirect, or as that cookie); others get 403. So other
  accounts on the machine, and web pages that rebind a name to 127.0.0.1, read nothing. On
  loopback the Host header must name the loopback address too (`name` or `name:port`, nothing
  else after the colon).
- The cookie is this server instance's own (Guard): its name holds the port and a random
  server id (`attemptdb_ui_<port>_<id>`), its value is a random session secret of this
  instance (never the printed token), `Path=/; HttpOnly; SameSite=Strict`, no Domain (host-only)
  and no Expires (gone with the browser session; useless once this server stops). Another
  instance's cookie (another port, an earlier run on this one) is never accepted, and the
  redirect that sets ours expires the cookies of earlier runs on this port. It is taken out of
  the request before Datasette sees it. Cookies are not port-scoped (RFC 6265 §8.5): the
  browser sends it to every port of the same host name, so a web app on another port of
  127.0.0.1 that the user opens in the same browser receives it (and can set or delete
  cookies of that name): spec/readers.md says what this does and does not protect.
- Every response, uvicorn's own 400 for a request it cannot read too (http_protocol), says:
  never framed (`frame-ancestors 'none'`, X-Frame-Options), never sniffed (nosniff), no
  referrer, nothing loaded from or sent to another origin (CSP). The
  plugin's pages allow no inline script (plugin.PAGE_CSP); Datasette's own need theirs (policy.CSP).
- The token's redirect only leads to a path of this server (never `//host/…`).
- Listening anywhere but loopback needs `allow_remote` (the command's explicit flag) and is
  announced with a warning on stderr.
"""

import hmac
import ipaddress
import os
import secrets
import sys
import urllib.parse

from ...errors import AttemptError
from .policy import CSP, SECURITY_HEADERS

DB_NAME = "attempt"
UI_EXTRA = ("datasette",)
INSTALL_UI = ("add the ui extra: from a checkout pip install '.[ui]'; under pipx: "
              f"pipx inject attemptdb {' '.join(UI_EXTRA)}")
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
SETTINGS = {
    "allow_download": False,       # the file itself would carry every column, content included
    "default_cache_ttl": 0,        # the file is live: never serve yesterday's page
    "suggest_facets": False,       # facet suggestions scan whole tables
    "sql_time_limit_ms": 5000,
    "max_returned_rows": 1000,
    "num_sql_threads": 3,
}
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
BAD_REQUEST = ("bad request: this server could not read it (not HTTP/1.1, or a request line or headers "
               "too long)\n")


def require_datasette():
    try:
        import datasette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise AttemptError("ui.needs_datasette", f"`attempt ui` needs Datasette; {INSTALL_UI}") from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _uri(path: str) -> str:
    return "file:" + urllib.parse.quote(os.path.abspath(path), safe="/") + "?mode=ro"


def _database_class():
    from datasette.database import Database

    class ReadOnlyDatabase(Database):
        """The AttemptDB file, read-only on every connection (see the module invariants)."""

        def __init__(self, ds, path: str, include_content: bool):
            super().__init__(ds, path=path, is_mutable=True)
            self.include_content = include_content

        def connect(self, write=False):
            if write:
                raise AttemptError("ui.read_only", "the UI never writes the database")
            import sqlite3

            from ...store.readonly import Gate
            from .. import content
            from . import limits
            conn = sqlite3.connect(_uri(self.path), uri=True, check_same_thread=False, factory=limits.Connection)
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.MAX_VALUE_BYTES)  # limits: what a request holds
            # trusted_schema stays as the system SQLite sets it: before 3.41 the JSON functions the
            # views call were not marked innocuous (OFF would refuse every view). The authorizer
            # refuses the harmful functions (load_extension, readfile, writefile, edit) instead.
            conn.execute("PRAGMA query_only = 1")
            conn.set_authorizer(content.authorizer(Gate(), self.include_content))
            self._all_file_connections.append(conn)
            return conn

    return ReadOnlyDatabase


def build(path: str, *, include_content: bool = False, before_read=None):
    """A configured Datasette instance over `path` (the file is checked like every read
    command's: attemptdb.store.readonly.connect refuses what is not a readable AttemptDB). The
    connection that checks it is the plugin's reader from then on (plugin.UIConfig), opened
    before any of Datasette's and never closed: the plugin's module invariants say why."""
    from datasette.app import Datasette
    from datasette.plugins import pm

    from ...projections import catalog
    from ...store.readonly import connect
    from . import metadata, pages, plugin

    conn, gate = connect(path)
    try:
        cat = catalog.build(conn)
        public = {t["name"] for t in cat["tables"]}
        internal = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")
            if r[0] not in public]
    except BaseException:
        conn.close()  # no connection of Datasette's is open yet
        raise
    if not pm.is_registered(plugin):
        pm.register(plugin, name="attemptdb")
    ds = Datasette(files=[], metadata=metadata.datasette_metadata(cat, DB_NAME, internal),
                   settings=SETTINGS, template_dir=TEMPLATES)
    ds.remove_database("_memory")  # a scratch database with no guard of ours: not offered
    ds.add_database(_database_class()(ds, path, include_content), name=DB_NAME)
    ds.attemptdb_ui = plugin.UIConfig(path, DB_NAME, include_content, metadata.recipes(cat), before_read,
                                      reader=(conn, gate))
    ds.jinja_env.filters["attemptdb_cell"] = cell_text
    # every value a template prints (Datasette's facet labels and filters too, which skip
    # render_cell) shows control and disguising characters as U+FFFD; Markup stays Markup
    # (its translate returns Markup)
    ds.jinja_env.finalize = lambda value: pages.shown(value) if isinstance(value, str) else value
    return ds


def cell_text(value) -> str:
    """A value of a recipe row as text (lists and objects as JSON; escaped by the template)."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        import json
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _with_security_headers(headers) -> list:
    headers = list(headers or ())
    have = {bytes(k).lower() for k, _ in headers}
    extra = [(k, v) for k, v in SECURITY_HEADERS if k not in have]
    if b"content-security-policy" not in have:
        extra.append((b"content-security-policy", CSP.encode("ascii")))
    return headers + extra


COOKIE_PREFIX = "attemptdb_ui_"


def cookie_name(port: int, server_id: str) -> str:
    """The name of one server instance's cookie: unique per port and per run."""
    return f"{COOKIE_PREFIX}{port}_{server_id}"


def _cookies(header: str):
    """(name, value) of each cookie in a Cookie header."""
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name:
            yield name, value


def host_name(header: str) -> str | None:
    """The name a Host header gives (`name`, `name:port`, `[v6]`, `[v6]:port`), lowercase, or None
    when it is not one of those forms (so `localhost:1.evil.example` names nothing)."""
    h = header.strip().lower()
    if h.startswith("["):
        name, sep, rest = h[1:].partition("]")
        if not sep or (rest and not (rest[0] == ":" and rest[1:].isdigit() and rest[1:].isascii())):
            return None
        return name
    name, sep, port = h.partition(":")
    if sep and not (port.isdigit() and port.isascii()):
        return None
    return name or None


class Guard:
    """ASGI middleware in front of Datasette: methods, Host, the access token, and the security
    headers of every response (SECURITY_HEADERS, CSP)."""

    def __init__(self, app, token: str, port: int, hosts=None, server_id: str | None = None):
        self.app = app
        self.token = token
        self.port = port
        self.server_id = server_id or secrets.token_hex(8)
        self.cookie = cookie_name(port, self.server_id)
        self.session = secrets.token_urlsafe(32)  # the cookie's value: not the printed token
        self.hosts = None if hosts is None else {h.lower() for h in hosts}

    def set_cookie(self) -> str:
        """The Set-Cookie value the token's redirect sends (module invariants)."""
        return f"{self.cookie}={self.session}; Path=/; HttpOnly; SameSite=Strict"

    def _stale(self, scope) -> list:
        """Set-Cookie values expiring the cookies of earlier runs on this port that the request
        carries (only one server listens on a port: those are dead), so restarts do not pile up
        cookies that every request to this host then carries."""
        out = []
        for name in dict.fromkeys(n for n, _ in _cookies(self._header(scope, b"cookie"))):
            if name != self.cookie and (name == COOKIE_PREFIX + str(self.port)
                                        or name.startswith(f"{COOKIE_PREFIX}{self.port}_")):
                out.append(f"{name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        return out

    async def _reply(self, send, status, text, headers=()):
        body = text.encode("utf-8")
        await send({"type": "http.response.start", "status": status,
                    "headers": _with_security_headers([(b"content-type", b"text/plain; charset=utf-8"),
                                                       (b"content-length", str(len(body)).encode()),
                                                       (b"cache-control", b"no-store")] + list(headers))})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _secured(send):
        async def send_secured(message):
            if message.get("type") == "http.response.start":
                message = dict(message, headers=_with_security_headers(message.get("headers")))
            await send(message)
        return send_secured

    def _header(self, scope, name: bytes) -> str:
        for k, v in scope.get("headers") or ():
            if k.lower() == name:
                return v.decode("latin-1")
        return ""

    def _has_cookie(self, scope) -> bool:
        return any(k == self.cookie and hmac.compare_digest(v.encode("latin-1"), self.session.encode())
                   for k, v in _cookies(self._header(scope, b"cookie")))

    def _without_cookie(self, scope):
        """`scope` with our cookie taken out of its Cookie header(s): what lies behind the guard
        (Datasette, its plugins) never holds it."""
        headers = []
        for k, v in scope.get("headers") or ():
            if k.lower() == b"cookie":
                kept = [part for part in v.decode("latin-1").split(";")
                        if part.strip().partition("=")[0] != self.cookie]
                if not any(part.strip() for part in kept):
                    continue
                v = ";".join(kept).strip().encode("latin-1")
            headers.append((k, v))
        return dict(scope, headers=headers)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":
            return  # no websockets
        if scope["method"] not in ("GET", "HEAD"):
            return await self._reply(send, 405, "read-only: only GET and HEAD are served\n",
                                     [(b"allow", b"GET, HEAD")])
        if self.hosts is not None:
            if host_name(self._header(scope, b"host")) not in self.hosts:
                return await self._reply(send, 403, "unknown Host: open the address `attempt ui` printed\n")
        query = urllib.parse.parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given:
            if not hmac.compare_digest(given[0].encode(), self.token.encode()):
                return await self._reply(send, 403, "wrong token: open the address `attempt ui` printed\n")
            rest = urllib.parse.urlencode([(k, v) for k, v in query if k != "token"])
            # a path of this server only: `//host/…` would be another site's address
            target = "/" + urllib.parse.quote(scope["path"]).lstrip("/\\") + ("?" + rest if rest else "")
            cookies = [self.set_cookie(), *self._stale(scope)]
            return await self._reply(send, 302, "", [(b"location", target.encode("latin-1"))]
                                     + [(b"set-cookie", c.encode("latin-1")) for c in cookies])
        if not self._has_cookie(scope):
            return await self._reply(send, 403, "this AttemptDB UI needs its access token: open the address "
                                                "`attempt ui` printed (it ends in ?token=…)\n")
        return await self.app(self._without_cookie(scope), receive, self._secured(send))


def http_protocol():
    """uvicorn's h11 protocol, whose own answer to a request it cannot read (a request line or
    headers past h11's limit, a line that is not HTTP/1.1) carries the security headers as every
    other answer does: uvicorn writes that 400 itself, before any ASGI app (the Guard) is called.
    h11 always, even where httptools is installed: h11 refuses a head it has buffered past 16 KiB
    without its end; httptools' protocol holds a request line of any length."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        def send_400_response(self, msg: str) -> None:
            body = BAD_REQUEST.encode("ascii")
            head = [b"HTTP/1.1 400 Bad Request", b"connection: close"] + [
                k + b": " + v for k, v in _with_security_headers([
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode("ascii")), (b"cache-control", b"no-store")])]
            self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
            self.transport.close()

    return Protocol


def _check_port(host: str, port: int) -> None:
    """A coded error now rather than the web server's log line after start-up."""
    import socket
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError as e:
            raise AttemptError("ui.cannot_listen", f"cannot listen on {host} port {port} ({e.strerror}); "
                               "choose another with --port (or --host)") from None


def serve(ds, *, host: str = "127.0.0.1", port: int = 8001, allow_remote: bool = False,
          open_browser: bool = False, token: str | None = None, echo=print) -> None:
    """Serve `ds` until interrupted."""
    import uvicorn
    if not is_loopback(host):
        if not allow_remote:
            raise AttemptError("ui.remote_host", f"--host {host} is not a loopback address: the history "
                               "would be reachable from other machines; add --allow-remote to mean it")
        print(f"warning: listening on {host}: anyone who can reach this machine on port {port} and holds "
              "the token can read this history", file=sys.stderr)
    _check_port(host, port)
    token = token or secrets.token_urlsafe(24)
    hosts = [*LOOPBACK_NAMES, host] if is_loopback(host) else None
    app = Guard(ds.app(), token, port, hosts)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/-/attemptdb/needs-you?token={token}"
    echo(f"AttemptDB UI (read-only): {url}")
    if open_browser:
        import webbrowser
        webbrowser.open(url)
    uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on", http=http_protocol())
