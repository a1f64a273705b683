"""Ids and times as a statement names them → the values stored in the database.

Invariants:
- An id resolves to exactly one live (not retracted) row of its table, or the statement fails
  with a coded error: unknown (AQL0301), ambiguous short id listing candidates (AQL0302), too
  short (AQL0305, fewer than 8 hex digits), malformed (AQL0105), wrong kind (AQL0304). Never a
  guess. Accepted forms: `att_<uuid>`, a bare UUID, `att_` + ≥ 8 hex digits (hyphens optional).
- A time resolves to microseconds UTC: RFC 3339, `YYYY-MM-DD` (UTC midnight), `now`, `today`,
  `yesterday` (UTC midnights), `-15m/-2h/-3d/-1w` (and `-30s`) relative to `now`.
- Lookups are index range scans on the id columns (prefix → [lo, hi) text range).
"""

from ..errors import did_you_mean
from ..model import clock, ids
from .errors import AQLError, article

MIN_SHORT_HEX = ids.MIN_SHORT_HEX
MAX_CANDIDATES = 5

# subject kind → (accepted prefixes, table, id column, table has `retracted`, human name)
KINDS = {
    "attempt": (("att_",), "attempts", "attempt_id", True, "attempt"),
    "session": (("ses_",), "sessions", "session_id", True, "session"),
    "turn": (("trn_",), "turns", "turn_id", True, "turn"),
    "span": (("tc_", "spn_"), "tool_calls", "tool_call_id", True, "tool call"),
    "work_unit": (("wu_",), "work_units", "work_unit_id", False, "work unit"),
    "event": (("ev_",), "events", "event_id", True, "event"),
    "decision": (("dec_",), "decisions", "decision_id", False, "decision"),
}
_LISTED = {"attempt": "SHOW ATTEMPTS lists attempt ids", "session": "SHOW SESSIONS lists session ids",
           "turn": "SHOW TURNS lists turn ids", "span": "SHOW TOOL CALLS lists tool call ids",
           "work_unit": "SHOW WORK UNITS lists work unit ids", "event": "`attempt events` lists event ids",
           "decision": "SHOW DECISIONS lists decision ids"}
"""Where a user finds the ids of a kind, for an id that matched nothing."""
# a bare id (no prefix, no kind word) is tried against these, in this order
BARE_ORDER = ("attempt", "session", "turn", "span", "work_unit", "event")
PREFIX_KIND = {p: k for k, v in KINDS.items() for p in v[0]}
PLANNED_TABLES = ("work_units", "decisions", "conflicts")  # absent from files written before work units (AQL0408)

RECORDER_PROVIDER = "attempt"
"""The provider of what `attempt run`, `note` and `approve` record: attemptdb.evidence.record.PROVIDER
(a test keeps the two equal; importing the recorder would cost a statement ~25 ms)."""

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _err(code, message, loc, label=None, listing=None):
    source, pos, end = loc if loc else (None, None, None)
    return AQLError(code, message, source=source, pos=pos, end=end, label=label, listing=listing)


# --- times -------------------------------------------------------------------------------

def local_midnight_us(us: int) -> int:
    """µs UTC of the local midnight that begins the day holding `us` (TZ; UTC when unset)."""
    import time as _time
    t = _time.localtime(us // 1_000_000)
    return int(_time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1))) * 1_000_000


def resolve_time(kind: str, text: str, now_us: int, loc=None) -> int:
    """µs UTC of a timestamp as written (`kind` as in ast.Time)."""
    t = text.strip()
    low = t.lower()
    if low == "now":
        return now_us
    if low in ("today", "yesterday"):  # the user's day: local midnight, as the summaries print local times
        midnight = local_midnight_us(now_us)
        return midnight if low == "today" else local_midnight_us(midnight - 1)
    if low.startswith("-"):
        digits = low[1:].rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = low[1 + len(digits):]
        if not digits.isdigit() or unit not in _UNITS or len(digits) > 9:
            raise _err("AQL0103", "bad relative timestamp; expected -N followed by m, h, d or w "
                       "(e.g. -15m, -2h, -3d, -1w)", loc, "bad relative time")
        us = now_us - int(digits) * _UNITS[unit] * 1_000_000
        try:
            clock.iso(us)  # before year 1: no time to compare with (-999999999w)
        except (ValueError, OverflowError):
            _bad_time(loc)
        return us
    if low.isdigit() and len(low) >= 9:  # epoch seconds
        try:
            return int(low) * 1_000_000 if int(low) < 10 ** 11 else _bad_time(loc)
        except ValueError:
            _bad_time(loc)
    try:
        us = clock.from_iso(t.replace(" ", "T", 1) if len(t) > 10 else t)
        clock.iso(us)
        return us
    except (ValueError, OverflowError):
        _bad_time(loc)


def _bad_time(loc):
    raise _err("AQL0104", "invalid timestamp", loc, "not a timestamp",
               listing=("expected", ("RFC 3339 ('2026-08-20T14:00:00Z')", "a date ('2026-08-20')", "now", "today",
                                     "yesterday", "a relative time like -15m / -2h / -1d")))


# --- ids ---------------------------------------------------------------------------------

def table_exists(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ? AND type IN ('table', 'view')",
                        (name,)).fetchone() is not None


def planned_error(table: str, loc=None) -> AQLError:
    return _err("AQL0408", f"{table} are not in this file: it holds no work-unit tables (it was written by an "
                "AttemptDB that did not keep work units, decisions and conflicts; the next write, such as a "
                "capture or an import, upgrades it); ask about sessions, turns, attempts or handoffs instead",
                loc, "not in this file")


def split_id(text: str):
    """(prefix or '', hex digits without hyphens, ok) of an id as typed."""
    t = text.strip().lower()
    prefix = ""
    i = t.find("_")
    if i > 0:
        prefix, t = t[: i + 1], t[i + 1:]
    hexpart = t.replace("-", "")
    ok = bool(hexpart) and all(c in "0123456789abcdef" for c in hexpart) and len(hexpart) <= 32
    return prefix, hexpart, ok


def prefix_upper_bound(lo: str) -> str:
    return lo[:-1] + chr(ord(lo[-1]) + 1)


def _matches(conn, kind: str, prefix: str, hexpart: str, limit: int, live_only: bool) -> list[str]:
    prefixes, table, col, has_retracted, _ = KINDS[kind]
    if not table_exists(conn, table):
        return []
    live = " AND NOT retracted" if has_retracted and live_only else ""
    out = []
    for p in ([prefix] if prefix else prefixes):
        lo = p + ids.hyphenated(hexpart)
        if len(hexpart) == 32:
            rows = conn.execute(f"SELECT {col} FROM {table} WHERE {col} = ?{live} LIMIT 1", (lo,)).fetchall()
        else:
            rows = conn.execute(f"SELECT {col} FROM {table} WHERE {col} >= ? AND {col} < ?{live} "
                                f"ORDER BY {col} LIMIT ?", (lo, prefix_upper_bound(lo), limit)).fetchall()
        out.extend(r[0] for r in rows)
    return out


def _named_session(conn, name: str, live: bool, loc=None) -> str | None:
    """The id of the session named `name`: the `attempt` session of that name, else the one
    session whose agent calls it so (its provider session id: what Claude Code or Codex shows),
    when stored; AQL0302 when several agents' sessions carry that id."""
    if not table_exists(conn, "sessions"):
        return None
    sid = "ses_" + ids.session_id(RECORDER_PROVIDER, name)
    row = conn.execute("SELECT session_id FROM sessions WHERE session_id = ?" + (" AND NOT retracted" if live else ""),
                       (sid,)).fetchone()
    if row:
        return row[0]
    if not table_exists(conn, "session_facts"):
        return None
    found = [r[0] for r in conn.execute("SELECT session_id FROM session_facts WHERE provider_session_id = ?"
                                        + (" AND retraction = 0" if live else "") + " LIMIT ?",
                                        (name, MAX_CANDIDATES + 1))]
    return found[one_match(found, "session", "", loc)] if found else None


def resolve_id(conn, kind: str | None, text: str, loc=None, live: bool = True) -> tuple[str, str]:
    """(kind, full prefixed id) of an id. kind None = take it from the prefix, else try
    BARE_ORDER. `live` = only rows no retraction removed (subjects); filters pass False.
    Raises AQLError. A session may also be named as `attempt run`/`note`/… name it
    (`--session ci-4711`: the session of provider attempt with that name, spec/evidence.md)."""
    if kind == "session" and text and not text.lower().startswith("ses_"):
        named = _named_session(conn, text, live, loc)
        if named is not None:
            return "session", named
        if not split_id(text)[2]:  # not an id: a name no session has
            raise _err("AQL0301", f"no session named {text!r}: a name is what `attempt run`, `note` or "
                       "`approve` recorded with --session, or an agent's own session id; SHOW SESSIONS "
                       "lists the sessions", loc, "unknown session")
    prefix, hexpart, ok = split_id(text)
    if prefix and prefix not in PREFIX_KIND:
        raise _err("AQL0105", "malformed id: unknown prefix", loc, "unknown id prefix",
                   ("id prefixes", sorted(PREFIX_KIND)))
    # the kind the statement asks for, else the one the typed prefix names: the example is of that kind
    what = KINDS[kind][4] if kind else KINDS[PREFIX_KIND[prefix]][4] if prefix else "entity"
    if prefix and kind and prefix not in KINDS[kind][0]:
        other = KINDS[PREFIX_KIND[prefix]][4]
        raise _err("AQL0304", f"expected {article(what)} id ({KINDS[kind][0][0]}…), got {article(other)} id", loc,
                   f"expected {article(what)} id")
    if not ok:
        named = " or the name of a session `attempt run` or `attempt note` recorded" if kind == "session" else ""
        example = prefix or (KINDS[kind][0][0] if kind else "att_")
        raise _err("AQL0105", f"malformed {what} id; expected hex digits (e.g. {example}01a04762){named}", loc,
                   "not an id")
    if len(hexpart) < MIN_SHORT_HEX:
        raise _err("AQL0305", f"short {what} id needs at least {MIN_SHORT_HEX} hex digits", loc,
                   "too short")
    if prefix:
        kind = kind or PREFIX_KIND[prefix]
        kinds = [kind]
    else:
        kinds = [kind] if kind else list(BARE_ORDER)
    if kind in ("work_unit", "decision") and not table_exists(conn, KINDS[kind][1]):
        raise planned_error(KINDS[kind][1].replace("_", " "), loc)
    found = []
    for k in kinds:
        for m in _matches(conn, k, prefix, hexpart, MAX_CANDIDATES + 1, live):
            found.append((k, m))
        if len(found) > MAX_CANDIDATES:
            break
    hint = " (retracted rows are not subjects)" if live and kinds != ["work_unit"] else ""
    listed = _LISTED.get(kinds[0], "") if len(kinds) == 1 else "SHOW SESSIONS / SHOW ATTEMPTS list ids"
    i = one_match([f for _, f in found], f"{what} matches this id{hint}", listed, loc)
    return found[i]


def one_match(ids: list, none: str, listing: str, loc=None) -> int:
    """The index of the one id of `ids` (the matches of a typed id, at most MAX_CANDIDATES + 1):
    AQL0301 when there is none (`no {none}; {listing}`), AQL0302 naming them when there are more."""
    if not ids:
        raise _err("AQL0301", f"no {none}; {listing}", loc, "unknown id")
    if len(ids) > 1:
        more = ["and more"] if len(ids) > MAX_CANDIDATES else []
        raise _err("AQL0302", "ambiguous short id; give more hex digits", loc, "ambiguous",
                   listing=("matches", list(ids[:MAX_CANDIDATES]) + more))
    return 0


# --- projects and agents -----------------------------------------------------------------

def resolve_project(conn, name: str, loc=None) -> list[tuple[str, str]]:
    """[(project_id, project_name)] a project name or prj_ id stands for (case-insensitive
    name, or the last path part of an owner/repo name)."""
    n = name.strip()
    if n.lower().startswith("prj_"):
        prefix, hexpart, ok = split_id(n)
        if not ok:
            raise _err("AQL0105", "malformed project id; expected hex digits after prj_", loc, "not an id")
        if len(hexpart) < MIN_SHORT_HEX:
            raise _err("AQL0305", f"short project id needs at least {MIN_SHORT_HEX} hex digits", loc, "too short")
        lo = "prj_" + ids.hyphenated(hexpart)
        rows = conn.execute("SELECT DISTINCT project_id, project_name FROM sessions "
                            "WHERE project_id >= ? AND project_id < ? LIMIT 6", (lo, prefix_upper_bound(lo))).fetchall()
        if len({r[0] for r in rows}) > 1:
            raise _err("AQL0302", "ambiguous short project id: matches "
                       + ", ".join(sorted({r[0] for r in rows})[:MAX_CANDIDATES]), loc, "ambiguous")
    else:
        esc = n.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = conn.execute("SELECT DISTINCT project_id, project_name FROM sessions "
                            "WHERE project_name = ?1 COLLATE NOCASE OR project_name LIKE '%/' || ?2 ESCAPE '\\'",
                            (n, esc)).fetchall()
    if not rows:
        raise _err("AQL0303", f"unknown project '{n}'; SHOW SESSIONS lists the projects this database holds",
                   loc, "unknown project")
    return sorted({(r[0], r[1]) for r in rows})


META_PROVIDER = "attemptdb"
"""The provider of corrections and retractions (attemptdb.projections.meta): events only; no
session, turn, attempt or call has it."""


def providers() -> tuple[str, ...]:
    """The providers a session (its turns, attempts, calls …) has, as SHOW prints them: each
    agent adapter's (attemptdb.adapters.registry.PROVIDERS) and RECORDER_PROVIDER. The one list
    FOR provider, agent subjects and their errors name."""
    from ..adapters import registry
    return registry.PROVIDERS + (RECORDER_PROVIDER,)


def resolve_agent(conn, name: str, loc=None) -> tuple[str, str]:
    """('provider', provider id) or ('agent', agt_ id) for an agent name as typed: a provider
    as SHOW prints it ('claude_code', 'attempt'), its hook id or display name ('claude-code',
    'Claude Code'), a provider stored in this file's sessions, or an agt_ id."""
    from ..adapters import registry
    n = name.strip()
    if n.lower().startswith("agt_"):
        prefix, hexpart, ok = split_id(n)
        if not ok or len(hexpart) < MIN_SHORT_HEX:
            raise _err("AQL0105", "malformed agent id; expected agt_ and at least 8 hex digits", loc, "not an id")
        lo = "agt_" + ids.hyphenated(hexpart)
        rows = conn.execute("SELECT DISTINCT agent_id FROM tool_calls WHERE agent_id >= ? AND agent_id < ? LIMIT 6",
                            (lo, prefix_upper_bound(lo))).fetchall()
        if not rows:
            raise _err("AQL0301", "no agent matches this id", loc, "unknown agent")
        if len(rows) > 1:
            raise _err("AQL0302", "ambiguous short agent id: matches "
                       + ", ".join(r[0] for r in rows[:MAX_CANDIDATES]), loc, "ambiguous")
        return "agent", rows[0][0]
    pid = registry.provider_id(n) or registry.provider_id(n.replace(" ", "_")) \
        or registry.provider_id(n.replace(" ", "-"))
    if pid:
        return "provider", pid
    low = n.lower()
    known = providers()
    if low in known or conn.execute("SELECT 1 FROM sessions WHERE provider = ? LIMIT 1", (low,)).fetchone():
        return "provider", low
    if low == META_PROVIDER:  # would silently match nothing
        raise _err("AQL0306", f"{META_PROVIDER} records corrections and retractions, never sessions", loc,
                   "SHOW CORRECTIONS lists them", ("providers", known))
    raise _err("AQL0306", "unknown agent; " + (did_you_mean(low, known)[2:] or "expected a provider or an agt_ id"),
               loc, "unknown agent", ("providers", known))


def project_of_directory(conn, cwd: str | None) -> tuple[str, str] | None:
    """(project_id, project_name) of the repository holding `cwd` — derived exactly as capture
    derives it (attemptdb.capture.gitinfo + ids.project_identity) — when this database has sessions
    for it; None otherwise (then a bare `project` means every project)."""
    if not cwd:
        return None
    from ..capture import gitinfo
    root, remote = gitinfo.git_info(cwd)[:2]
    row = conn.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone() \
        if table_exists(conn, "meta") else None
    device = row[0] if row else ids.NIL
    pid = "prj_" + ids.project_identity(root, remote, device)["project_id"]
    row = conn.execute("SELECT project_id, project_name FROM sessions WHERE project_id = ? LIMIT 1", (pid,)).fetchone()
    return (row[0], row[1]) if row else None
