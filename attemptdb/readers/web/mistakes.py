"""A request's own mistakes are a 4xx, never a 500: what the plugin's Datasette hooks
(plugin.handle_exception, plugin.filters_from_request) decide about a failed or odd request.

Invariants:
- Datasette raises DatasetteError with its default status 500 only for what a request asked
  (a column it cannot sort by, `_sort` with `_sort_desc`, a `_through` without its foreign
  key): answered 400 with Datasette's own message and title.
- A ValueError, LookupError, TypeError or AttributeError (sqlite3's one-statement Warning /
  ProgrammingError too) while serving a request that carries query parameters is Datasette
  failing to read one of them (`_timelimit=x`, `_next=x` on a view, `_through=1`, `kind__in=[`,
  a `_facet` object without its type, two statements in `_where`):
  answered 400 naming the parameters. The same without query parameters stays a 500 (a fault
  of the server), as does every other exception.
- A 400 of this module prints no traceback on the server's stderr (the client's mistake, not
  the server's); what stays a 500 is Datasette's to report, as before.
- On a table or view page, a parameter Datasette would silently ignore is refused with a 400
  rather than answered as if it were not there: `_search` where no full-text index is found
  (every row would show, unfiltered), `_json` naming no column, `_shape` naming no shape.
- Every answer is rendered by Datasette's own error handler (JSON for `.json`, its error page
  otherwise); serve.Guard adds the security headers to it as to every response.
"""

import sqlite3

from datasette.utils.asgi import BadRequest, Base400
from datasette.views.base import DatasetteError

READ_ERRORS = (ValueError, LookupError, TypeError, AttributeError, sqlite3.Warning, sqlite3.ProgrammingError)
SHAPES = ("arrays", "objects", "object", "array", "arrayfirst")
MAX_SHOWN = 200  # characters of a parameter name or an error message an answer repeats


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…"


def client_mistake(request, exception) -> DatasetteError | None:
    """The 400 that answers `exception` when the request caused it, else None (Datasette's
    answer stands: a 4xx it chose, or a 500)."""
    if isinstance(exception, Base400):
        return None
    if isinstance(exception, DatasetteError):
        if exception.status < 500:
            return None
        return DatasetteError(exception.message, title=exception.title or "Bad request",
                              error_dict=exception.error_dict, status=400,
                              message_is_html=exception.message_is_html)
    if isinstance(exception, READ_ERRORS) and request.query_string:
        names = list(dict.fromkeys(request.args.keys()))
        shown = ", ".join(_cut(n) for n in names[:8]) + (", …" if len(names) > 8 else "")
        detail = _cut(f"{type(exception).__name__}: {exception}")
        return DatasetteError(f"Bad request: a query parameter could not be used ({shown}): {detail}",
                              title="Bad request", status=400)
    return None


def answer(datasette, request, mistake: DatasetteError):
    """Datasette's own error answer for `mistake` (a coroutine function, as a handle_exception
    hook returns)."""
    from datasette import handle_exception as default
    return default.handle_exception(datasette=datasette, request=request, exception=mistake)


async def refuse_ignored(request, database: str, table: str, datasette) -> None:
    """BadRequest for a table or view page's parameter Datasette would ignore (module invariants)."""
    args = request.args
    db = datasette.get_database(database)
    if any(k.startswith("_search") and k != "_searchmode" for k in args.keys()):
        fts = args.get("_fts_table") or datasette.table_metadata(database, table).get("fts_table")
        if not fts and not await db.fts_table(table):
            raise BadRequest(f"_search is not available: {_cut(table)} has no full-text index; filter a "
                             "column instead (?column__contains=text)")
    if "_json" in args:
        columns = set(await db.table_columns(table)) | {"rowid"}
        bad = [c for c in args.getlist("_json") if c not in columns]
        if bad:
            raise BadRequest("_json={} - invalid columns".format(", ".join(_cut(c) for c in bad)))
    shape = args.get("_shape")
    if shape is not None and shape not in SHAPES:
        raise BadRequest(f"Invalid _shape: {_cut(shape)} (one of {', '.join(SHAPES)})")
