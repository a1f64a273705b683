"""The scope flags every read command takes (--session, --project, --since, --until, -n),
one definition, resolved the way AttemptQL resolves ids, names and times."""

import os

import click

from ..errors import AttemptError
from ..model import clock


def scope_options(f):
    """--session, --project, --since, --until, -n: the scope flags of every read command."""
    f = click.option("-n", "--limit", type=click.IntRange(1, 10**9), default=None, metavar="N",
                     help="At most N rows (newest).")(f)
    f = click.option("--until", metavar="T", help="Up to T (RFC 3339, YYYY-MM-DD, now, -2h, …).")(f)
    f = click.option("--since", metavar="T", help="From T (RFC 3339, YYYY-MM-DD, today, yesterday, -15m, -2h, -3d, -1w).")(f)
    f = click.option("--project", metavar="P", help="Project name (owner/repo), prj_ id or directory.")(f)
    f = click.option("--session", metavar="S", help="Session id (ses_…, bare or short), or the name `attempt run --session` gave it.")(f)
    return f


def scope_time(flag, text):
    from ..query.errors import AQLError
    from ..query.resolve import resolve_time
    try:
        return resolve_time("text", text, clock.now_us())
    except AQLError:
        raise click.BadParameter("expected RFC 3339, YYYY-MM-DD, now, today, yesterday or -15m/-2h/-3d/-1w",
                                 param_hint=flag) from None


def scope_where(conn, session, project, since, until, table="events", time_col="observed_at"):
    """(SQL condition, params) for the scope flags (ids, names and times resolved the way
    AttemptQL resolves them)."""
    from ..query import resolve
    from ..query.errors import AQLError
    conds, params = [], []
    try:
        if session:
            _, sid = resolve.resolve_id(conn, "session", session, live=False)
            conds.append(f"{table}.session_id = ?")
            params.append(sid)
        if project:
            if os.path.isdir(project):
                found = resolve.project_of_directory(conn, project)
                if found is None:
                    raise AttemptError("scope.project", f"no sessions recorded for the repository at {project}")
                pids = [found[0]]
            else:
                pids = [pid for pid, _ in resolve.resolve_project(conn, project)]
            conds.append(f"{table}.project_id IN ({','.join('?' * len(pids))})")
            params += pids
    except AQLError as e:
        raise AttemptError("scope.unresolved", e.message) from None
    if since:
        conds.append(f"{table}.{time_col} >= ?")
        params.append(clock.iso(scope_time("--since", since)))
    if until:
        conds.append(f"{table}.{time_col} <= ?")
        params.append(clock.iso(scope_time("--until", until)))
    return (" AND ".join(conds) or "1"), params
