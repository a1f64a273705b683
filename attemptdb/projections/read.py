"""Read helpers over the projection views: scopes, the timeline tree, failures.

Invariant: these only read the public views (what the sqlite3 shell sees), hide retracted
rows (SHOW semantics), and return plain data; rendering lives in the CLI. Times in and out are
the stored ISO-8601 µs `Z` text.
"""

import time as _time

from .. import clock
from . import ALGORITHM_VERSION


def rows(conn, sql: str, params=()) -> list[dict]:
    """Rows of a query as dicts (column name → value)."""
    cur = conn.cursor()
    cur.row_trace = lambda c, r: dict(zip((d[0] for d in c.getdescription()), r))
    return cur.execute(sql, params).fetchall()


def timeline(conn, cond: str = "1", params=(), *, limit: int = 10, show_all: bool = False,
             tools: bool = False) -> dict:
    """Sessions (newest first) matching `cond` (over the sessions view aliased `s`) → turns →
    attempts, plus the handoffs that involve a listed session. Retracted rows are left out."""
    cond = f"({cond}) AND NOT s.retracted"
    params = list(params)
    if not show_all:
        cond += " AND (s.prompt_count > 0 OR s.tool_call_count > 0)"
    total = conn.execute(f"SELECT count(*) FROM sessions s WHERE {cond}", params).fetchone()[0]
    sessions = rows(conn, f"SELECT * FROM sessions s WHERE {cond} ORDER BY s.started_at DESC, s.session_id "
                          f"LIMIT ?", params + [limit])
    out = {"algorithm_version": ALGORITHM_VERSION,
           "events": conn.execute("SELECT count(*) FROM events").fetchone()[0],
           "sessions_matching": total, "more_sessions": max(0, total - len(sessions)),
           "sessions": [], "handoffs": []}
    ids = []
    for s in sessions:
        ids.append(s["session_id"])
        turns = rows(conn, "SELECT * FROM turns WHERE session_id = ? AND NOT retracted ORDER BY turn_index",
                     (s["session_id"],))
        for t in turns:
            t["attempts"] = rows(conn, "SELECT * FROM attempts WHERE turn_id = ? AND NOT retracted "
                                       "ORDER BY attempt_index", (t["turn_id"],))
            if tools:
                t["tool_calls"] = rows(conn, "SELECT * FROM tool_calls WHERE turn_id = ? AND NOT retracted "
                                             "ORDER BY coalesce(started_at, finished_at), tool_call_id",
                                       (t["turn_id"],))
        s["turns"] = turns
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


def clean(text, width: int | None = None) -> str:
    """Text safe for a terminal: control characters (escape sequences included) shown as
    spaces or `?`, one line, cut to `width` with an ellipsis."""
    if text is None:
        return ""
    out = []
    for ch in str(text):
        o = ord(ch)
        if ch in "\n\r\t":
            out.append(" ")
        elif o < 32 or o == 127 or 0x80 <= o < 0xA0 or ch in "\u2028\u2029\u202e\u202d\u202a\u202b\u202c\u2066\u2067\u2068\u2069":
            out.append("?")
        else:
            out.append(ch)
    s = " ".join("".join(out).split())
    if width is not None and len(s) > width:
        s = s[: max(0, width - 1)] + "…"
    return s
