"""The data of the UI's own pages, read from the public views on one read-only connection (a
stdlib sqlite3 connection from Datasette, or any DB-API connection): Needs You, open work
units, recent sessions, one session's timeline, one attempt's evidence.

Invariants: only the public views are read (needs_you, work_units, sessions, turns, attempts,
tool_calls, events, retractions), with bound parameters; list columns come back as lists;
retracted rows are left out of every list (as SHOW leaves them out); a retracted session or
attempt reads as `{"retracted": …}`, its retractions and nothing else of it (no outcome,
evidence or content: a retraction for `privacy` or `revoked` took them out); every page is bounded, in rows (LIMIT) and in the size of each
text (a value longer than MAX_TEXT_CHARS, which a hostile hook payload can make megabytes
long, is shown cut, ending in `…`; Datasette's table pages show it whole, as they truncate
cells themselves); control and bidi characters read as U+FFFD; the functions return plain
data and never render (templates escape everything). Pure: no Datasette import.
"""

import json

from ...errors import DISGUISING

LIMIT = 200
MAX_TEXT_CHARS = 2048
LIST_COLUMNS = ("evidence", "paths", "sessions", "turns", "attempts", "actors", "commit_shas",
                "tool_call_ids", "agents")


# controls (but tab, newline and return, which a page shows as blanks) and the characters that
# disguise text (errors.DISGUISING: `exe.txt` shown for `txt.exe`): U+FFFD, as the CLI shows `?`
_SPOOF = {c: "\ufffd" for c in [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0),
                                *map(ord, DISGUISING)]}


def shown(text: str) -> str:
    """A text with its control and disguising characters as U+FFFD (every page's rule)."""
    return text.translate(_SPOOF)


def _cut(value):
    """A text as a page shows it: at most MAX_TEXT_CHARS (then `…`), no control or bidi character."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            value = value[:MAX_TEXT_CHARS] + "…"
        return shown(value)
    return value


def _rows(conn, sql: str, params=()) -> list[dict]:
    cur = conn.execute(sql, params)
    cols = [d[0] for d in cur.description]
    out = []
    for r in cur.fetchall():
        row = dict(zip(cols, tuple(r)))
        for c in LIST_COLUMNS:
            if isinstance(row.get(c), str):
                try:
                    v = json.loads(row[c])
                except ValueError:
                    v = [row[c]]
                row[c] = v if isinstance(v, list) else [v]
        out.append({k: [_cut(x) for x in v] if isinstance(v, list) else _cut(v) for k, v in row.items()})
    return out


def needs_you(conn) -> list[dict]:
    return _rows(conn, "SELECT kind, rank, session_id, work_unit_id, provider, project_name, since, confidence, "
                       "reason, evidence FROM needs_you ORDER BY rank, since, work_unit_id LIMIT ?", (LIMIT,))


def open_units(conn) -> list[dict]:
    return _rows(conn, "SELECT * FROM work_units WHERE status = 'open' ORDER BY updated_at DESC, work_unit_id "
                       "LIMIT ?", (LIMIT,))


def recent_sessions(conn, limit: int = 50) -> list[dict]:
    return _rows(conn, "SELECT session_id, provider, project_name, state, started_at, last_event_at, turn_count, "
                       "tool_call_count, failure_count FROM sessions WHERE NOT retracted "
                       "ORDER BY last_event_at DESC, session_id LIMIT ?", (limit,))


def full_id(conn, kind: str, text: str) -> str:
    """The whole id a (short) id in a page's address stands for, as the CLI reads it back
    (query.resolve.resolve_id: at least 8 hex digits, one match); else `text` as it is (the page
    then says no such row)."""
    from ...query.errors import AQLError
    from ...query.resolve import resolve_id
    try:
        return resolve_id(conn, kind, text, live=False)[1]
    except AQLError:
        return text


def retracted(conn, kind: str, subject_id: str, session_id: str, attempt_id: str | None = None) -> dict:
    """What the page of a retracted subject shows instead of it: its kind and id and the
    retractions that cover it (an attempt's own, its session's), oldest first, each with its
    reason, time and Retraction event. Nothing else of the subject is read."""
    rows = _rows(conn, "SELECT event_id, retracted_at, target_type, target, reason FROM retractions "
                       "WHERE (target_type = 'attempt' AND target = ?1) OR (target_type = 'session' AND target IN "
                       "(?2, (SELECT e.session_id FROM events e WHERE e.event_id = "
                       "(SELECT s.first_event_id FROM sessions s WHERE s.session_id = ?2)))) "
                       "ORDER BY retracted_at, event_id LIMIT ?3", (attempt_id, session_id, LIMIT))
    return {"retracted": {"kind": kind, "subject_id": subject_id, "session_id": session_id, "retractions": rows}}


def session_timeline(conn, session_id: str) -> dict | None:
    """The session, its turns (in order) → attempts → tool calls. An attempt's calls are its
    `tool_call_ids`; calls no attempt lists stay under their turn. Failed and superseded
    attempts and failed calls are flagged (`failed`, `superseded`). A short id is read back; a
    retracted session reads as retracted()."""
    session_id = full_id(conn, "session", session_id)
    found = _rows(conn, "SELECT * FROM sessions WHERE session_id = ?", (session_id,))
    if not found:
        return None
    if found[0]["retracted"]:
        return retracted(conn, "session", session_id, session_id)
    turns = _rows(conn, "SELECT * FROM turns WHERE session_id = ? AND NOT retracted ORDER BY turn_index LIMIT ?",
                  (session_id, LIMIT))
    attempts = _rows(conn, "SELECT * FROM attempts WHERE session_id = ? AND NOT retracted "
                           "ORDER BY turn_index, attempt_index LIMIT ?", (session_id, LIMIT * 5))
    calls = _rows(conn, "SELECT * FROM tool_calls WHERE session_id = ? AND NOT retracted "
                        "ORDER BY coalesce(started_at, finished_at), tool_call_id LIMIT ?", (session_id, LIMIT * 10))
    by_id = {c["tool_call_id"]: c for c in calls}
    for c in calls:
        c["failed"] = c.get("outcome_status") in ("failure", "denied")
    claimed = set()
    by_turn = {}
    for a in attempts:
        a["failed"] = a.get("outcome") == "failed"
        a["superseded"] = a.get("outcome") == "superseded" or bool(a.get("superseded_by"))
        a["calls"] = [by_id[i] for i in a.get("tool_call_ids") or [] if i in by_id]
        claimed.update(c["tool_call_id"] for c in a["calls"])
        by_turn.setdefault(a["turn_id"], []).append(a)
    loose = {}
    for c in calls:
        if c["tool_call_id"] not in claimed:
            loose.setdefault(c["turn_id"], []).append(c)
    for t in turns:
        t["attempts"] = by_turn.get(t["turn_id"], [])
        t["loose_calls"] = loose.get(t["turn_id"], [])
    return {"session": found[0], "turns": turns,
            "counts": {"turns": len(turns), "attempts": len(attempts), "tool_calls": len(calls)}}


def attempt_evidence(conn, attempt_id: str) -> dict | None:
    """The attempt and the events its evidence names, in observation (then chain) order. A
    short id is read back; a retracted attempt (itself or its session) reads as retracted()."""
    attempt_id = full_id(conn, "attempt", attempt_id)
    found = _rows(conn, "SELECT * FROM attempts WHERE attempt_id = ?", (attempt_id,))
    if not found:
        return None
    if found[0]["retracted"]:
        return retracted(conn, "attempt", attempt_id, found[0]["session_id"], attempt_id)
    events = _rows(conn, "SELECT e.seq, e.event_id, e.observed_at, e.provider, e.kind, e.provider_event_name, "
                         "e.tool_name, e.tool_call_id, e.path_relative, e.outcome_status, e.outcome_class, "
                         "e.exit_code, e.duration_ms, e.capture_mode, e.content_json, e.retracted "
                         "FROM events e WHERE e.event_id IN (SELECT value FROM json_each("
                         "(SELECT evidence FROM attempts WHERE attempt_id = ?))) ORDER BY e.observed_at, e.seq",
                   (attempt_id,))
    return {"attempt": found[0], "events": events}
