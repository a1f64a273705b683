"""Read helpers over the projection views: scopes, the timeline tree, failures.

Invariant: these only read the public views (what the sqlite3 shell sees), hide retracted
rows (SHOW semantics), and return plain data; rendering lives in the CLI. Times in and out are
the stored ISO-8601 µs `Z` text.
"""

import time as _time

from ..errors import printable
from ..model import clock
from ..projections import ALGORITHM_VERSION
from ..store.database import dict_rows as rows


def _fill_turns(conn, turns: list, tools: bool) -> None:
    """Each turn's live attempts in order, and with `tools` its live tool calls."""
    for t in turns:
        t["attempts"] = rows(conn, "SELECT * FROM attempts WHERE turn_id = ? AND NOT retracted "
                                   "ORDER BY attempt_index", (t["turn_id"],))
        if tools:
            t["tool_calls"] = rows(conn, "SELECT * FROM tool_calls WHERE turn_id = ? AND NOT retracted "
                                         "ORDER BY coalesce(started_at, finished_at), tool_call_id",
                                   (t["turn_id"],))


def _events_in_scope(conn, cond: str, params: list, scoped: bool) -> int:
    """The events a timeline was read from: the file's, or (scoped by session, project, time)
    those of the sessions in scope (a scoped timeline said "from 11,587 events" of a session
    that holds 10)."""
    if not scoped:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0]
    return conn.execute(f"SELECT coalesce(sum(s.event_count), 0) FROM sessions s WHERE {cond}", params).fetchone()[0]


def timeline(conn, cond: str = "1", params=(), *, limit: int = 10, show_all: bool = False,
             tools: bool = False, turns: int | None = None) -> dict:
    """Sessions (newest first) matching `cond` (over the sessions view aliased `s`) → turns →
    attempts, plus the handoffs that involve a listed session. Retracted rows are left out.
    With `turns`, each session keeps only its last `turns` turns and counts the rest in
    `more_turns`. Without `show_all`, a session with no prompt and no tool call is left out and
    counted (`sessions_without_turns`); each session shown counts its notes and approvals."""
    scoped = cond != "1"
    cond = f"({cond}) AND NOT s.retracted"
    params = list(params)
    events = _events_in_scope(conn, cond, params, scoped)
    quiet = 0  # sessions left out: no prompt and no tool call (only notes, approvals, snapshots)
    if not show_all:
        quiet = conn.execute(f"SELECT count(*) FROM sessions s WHERE {cond} AND s.prompt_count = 0 "
                             "AND s.tool_call_count = 0", params).fetchone()[0]
        cond += " AND (s.prompt_count > 0 OR s.tool_call_count > 0)"
    total = conn.execute(f"SELECT count(*) FROM sessions s WHERE {cond}", params).fetchone()[0]
    sessions = rows(conn, f"SELECT * FROM sessions s WHERE {cond} ORDER BY s.started_at DESC, s.session_id "
                          f"LIMIT ?", params + [limit])
    out = {"algorithm_version": ALGORITHM_VERSION, "events": events, "sessions_matching": total, "more_sessions": max(0, total - len(sessions)), "sessions_without_turns": quiet,
           "sessions": [], "handoffs": []}
    ids = []
    recorded = conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'notes'").fetchone() is not None
    for s in sessions:
        ids.append(s["session_id"])
        cap = -1 if turns is None else turns
        found = rows(conn, "SELECT * FROM turns WHERE session_id = ? AND NOT retracted ORDER BY turn_index DESC "
                           "LIMIT ?", (s["session_id"], cap))[::-1]
        s["more_turns"] = 0 if turns is None or len(found) < turns else conn.execute(
            "SELECT count(*) FROM turns WHERE session_id = ? AND NOT retracted", (s["session_id"],)).fetchone()[0] \
            - len(found)
        _fill_turns(conn, found, tools)
        s["turns"] = found
        if recorded:  # what people recorded in it (public views of migration 0020)
            s["notes"], s["approvals"] = conn.execute(
                "SELECT (SELECT count(*) FROM notes WHERE session_id = ?), "
                "(SELECT count(*) FROM approvals WHERE session_id = ?)", (s["session_id"],) * 2).fetchone()
        out["sessions"].append(s)
    if ids:
        marks = ",".join("?" * len(ids))
        out["handoffs"] = rows(conn, f"SELECT * FROM handoffs WHERE from_session IN ({marks}) "
                                     f"OR to_session IN ({marks}) ORDER BY handoff_at", ids + ids)
    out["counts"] = {
        "sessions": len(out["sessions"]),
        "turns": sum(len(s["turns"]) for s in out["sessions"]),
        "attempts": sum(len(t["attempts"]) for s in out["sessions"] for t in s["turns"]),
        "handoffs": len(out["handoffs"]),
    }
    return out


def failures(conn, cond: str = "1", params=(), *, limit: int = 50) -> dict:
    """Failed and superseded attempts (superseded counts as a failure), newest first, of the
    sessions matching `cond` (sessions view aliased `s`)."""
    cond = f"({cond}) AND NOT s.retracted"
    params = list(params)
    sql = ("SELECT a.attempt_id, a.provider, a.project_name, a.started_at, a.outcome, a.failure_class, "
           "a.approach, a.superseded_by, a.confidence, a.session_id, a.turn_id, a.paths "
           "FROM attempts a JOIN sessions s ON s.session_id = a.session_id "
           f"WHERE a.outcome IN ('failed', 'superseded') AND NOT a.retracted AND {cond} "
           "ORDER BY a.started_at DESC, a.attempt_id LIMIT ?")
    found = rows(conn, sql, params + [limit])
    total = conn.execute("SELECT count(*) FROM attempts a JOIN sessions s ON s.session_id = a.session_id "
                         f"WHERE NOT a.retracted AND {cond}", params).fetchone()[0]
    return {"algorithm_version": ALGORITHM_VERSION, "attempts_considered": total, "failures": found}


def local_time(iso_text: str | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if not iso_text:
        return "?"
    us = clock.from_iso(iso_text)
    return _time.strftime(fmt, _time.localtime(us / 1_000_000))


def duration_text(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    ms = max(0, (clock.from_iso(end) - clock.from_iso(start)) // 1000)
    if ms < 1000:
        return f"{ms}ms"
    s = ms // 1000
    if s < 60:
        return f"{ms / 1000:.1f}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


_BLANKS = str.maketrans("\n\r\t", "   ")


def clean(text, width: int | None = None) -> str:
    """Text safe for a terminal, one line, cut to `width` with an ellipsis: newlines, returns
    and tabs shown as spaces, every other control or disguising character as `?`
    (errors.printable), runs of blanks as one."""
    if text is None:
        return ""
    s = " ".join(printable(str(text).translate(_BLANKS)).split())
    if width is not None and len(s) > width:
        s = s[: max(0, width - 1)] + "…"
    return s


def needs_you(conn, project_ids=None, now_us: int | None = None) -> dict:
    """The rows of the `needs_you` view (of some projects, or all), and what it looked at: the
    open sessions (state judged now) and the open work units (judged now by the rules of the
    work_units view, among units active in the last 12 hours: attemptql/units.py)."""
    from ..model import fastjson
    from . import units as unit_rules
    ids = list(project_ids or [])
    where, params = "", []
    if ids:
        marks = ", ".join("?" * len(ids))
        names = [r[0] for r in conn.execute(
            f"SELECT DISTINCT project_name FROM sessions WHERE project_id IN ({marks})", ids)]
        where, params = f" WHERE project_name IN ({', '.join('?' * len(names))})", names
    found = rows(conn, f"SELECT * FROM needs_you{where} ORDER BY rank, since, confidence DESC", params)
    for r in found:
        try:
            r["evidence"] = fastjson.loads(r["evidence"] or "[]")
        except (ValueError, TypeError):  # a view someone rewrote (the CLI warns): the text as it is
            r["evidence"] = [r["evidence"]]
    scope = f" AND project_id IN ({', '.join('?' * len(ids))})" if ids else ""
    open_sessions = conn.execute(f"SELECT count(*) FROM sessions WHERE retracted = 0 AND state = 'open'{scope}",
                                 ids).fetchone()[0]
    now = clock.now_us() if now_us is None else now_us
    named = {f"p{i}": pid for i, pid in enumerate(ids)}
    member = (" AND m.project_id IN (" + ", ".join(":" + k for k in named) + ")") if ids else ""
    unit_sql = unit_rules.program(conn, unit_rules.candidates_sql(member, started=False), at=False, materialize=False) + \
        "SELECT count(*) FROM work_units w WHERE w.status = 'open'"
    open_units = conn.execute(unit_sql, dict(named, t=clock.iso(now),
                                             t_wait=clock.iso(now - unit_rules.WAIT_WINDOW_US))).fetchone()[0]
    return {"needs_you": found, "checked": {"open_sessions": open_sessions, "open_work_units": open_units}}


_UNIT_COLUMNS = ("work_unit_id, project_id, project_name, objective, phase, phase_reason, status, status_reason, "
                 "started_at, updated_at, ended_at, sessions, session_count, turn_count, attempt_count, "
                 "failed_attempt_count, actors, last_attempt, blocking_signal, confidence")


def timeline_units(conn, cond: str = "1", params=(), *, limit: int = 10, tools: bool = False) -> dict:
    """Work units (newest first) holding a turn of the sessions matching `cond` (sessions view
    aliased `s`) → their turns in order → attempts: the timeline grouped by thread of work
    rather than by session. Each unit carries its phase and status with their reasons (judged
    now by the rules of the work_units view, attemptql/units.py)."""
    from ..model import fastjson
    from . import units as unit_rules
    scoped = cond != "1"
    cond = f"({cond}) AND NOT s.retracted"
    params = list(params)
    chosen = (f"SELECT DISTINCT m.work_unit_id FROM unit_turns m WHERE m.session_id IN "
              f"(SELECT s.session_id FROM sessions s WHERE {cond})")
    total = conn.execute(f"SELECT count(*) FROM ({chosen})", params).fetchone()[0]
    ids = [r[0] for r in conn.execute(
        f"SELECT u.work_unit_id FROM unit_index u WHERE u.work_unit_id IN ({chosen}) "
        "ORDER BY u.started_at DESC, u.work_unit_id LIMIT ?", params + [limit])]
    sql = unit_rules.program(conn, "SELECT u.* FROM main.unit_index u WHERE u.work_unit_id IN "
                                   "(SELECT value FROM json_each(:ids))", at=False)
    found = {r["work_unit_id"]: r for r in rows(conn, sql + f"SELECT {_UNIT_COLUMNS} FROM work_units",
                                                {"ids": fastjson.dumps(ids)})}
    out = {"algorithm_version": ALGORITHM_VERSION, "events": _events_in_scope(conn, cond, params, scoped),
           "units_matching": total, "more_units": max(0, total - len(ids)), "work_units": []}
    for wu in ids:
        u = found[wu]
        for k in ("sessions", "actors"):
            u[k] = fastjson.loads(u[k] or "[]")
        turns = rows(conn, "SELECT t.*, s.state AS session_state FROM unit_turns m "
                           "JOIN turns t ON t.turn_id = m.turn_id LEFT JOIN sessions s ON s.session_id = t.session_id "
                           "WHERE m.work_unit_id = ? ORDER BY m.order_key", (wu,))
        _fill_turns(conn, turns, tools)
        u["turns"] = turns
        out["work_units"].append(u)
    out["counts"] = {"work_units": len(out["work_units"]),
                     "turns": sum(len(u["turns"]) for u in out["work_units"]),
                     "attempts": sum(len(t["attempts"]) for u in out["work_units"] for t in u["turns"])}
    return out
