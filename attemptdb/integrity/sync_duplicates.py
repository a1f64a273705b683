"""One event id held by two devices (spec/sync.md "One event id on two devices").

Event ids of tool calls (and of transcript imports) are derived from what the event is about
(provider, session, slot, call id: model/ids.py), so two devices that captured the same provider
event hold one id with other bytes (each its own device_id, source_seq, clocks). Pull keeps the
first come and skips the other device's copy when both describe the same provider event
(`same_identity`); the skipped line is kept in `sync_duplicates` (created on first use, not
public, not part of the migrations), so `attempt verify`'s provenance check can account for a
signed leaf that is no stored event of its device: the kept line hashes to that leaf, and its
event id is stored here as an event of another device describing the same provider event.

Invariants: a line is kept only when it re-renders to the signed bytes (its SHA-256 is the
leaf); `accounted` trusts nothing in the table it does not recompute (the line's hash, its
parse, the stored holder's identity).
"""

import hashlib

from ..model import clock, event, fastjson, ids

DDL = """
CREATE TABLE IF NOT EXISTS sync_duplicates (
  device_id  TEXT NOT NULL,
  segment    INTEGER NOT NULL,
  leaf       TEXT NOT NULL,
  event_id   TEXT NOT NULL,
  holder     TEXT NOT NULL,
  line       TEXT NOT NULL,
  PRIMARY KEY (device_id, leaf)
) WITHOUT ROWID;
"""

_SLOT = {"tool_call_failed": "tool_call_finished"}  # finished and failed share one id slot (ids.tool_event_id)
IDENTITY_COLUMNS = "provider, kind, session_id, provider_session_id, tool_call_id, hlc, captured_at"


def _bare(v):
    return None if v is None else ids.bare(v)


def identity_of_env(env: dict) -> tuple:
    """What an event id is derived from, as the wire line says it."""
    tool = env.get("tool") if isinstance(env.get("tool"), dict) else {}
    kind = env.get("kind")
    return (env.get("provider"), _SLOT.get(kind, kind), _bare(env.get("session_id")),
            env.get("provider_session_id"), tool.get("call_id"))


def identity_of_row(provider, kind, session_id, provider_session_id, tool_call_id, *_clocks) -> tuple:
    """The same, from the stored columns (IDENTITY_COLUMNS, in order)."""
    return (provider, _SLOT.get(kind, kind), _bare(session_id), provider_session_id, tool_call_id)


def _replayed(env: dict, hlc, captured_at) -> bool:
    """The line carries the stored event's own capture clocks (hlc and captured_at, to the
    microsecond): a copy of that capture, not a capture of its own. A stored row whose clocks
    cannot be read counts as one (the conservative answer: a conflict)."""
    try:
        return env.get("hlc") == hlc or env.get("captured_at") == clock.from_iso(captured_at)
    except (ValueError, TypeError, OverflowError, AttributeError):
        return True


def same_identity(env: dict, row: tuple) -> bool:
    """`env` (another device's line) and the stored row (IDENTITY_COLUMNS) are two captures of
    the same provider event: the same provider, session and kind slot, the same tool call id
    where either has one, and each its own capture (other hlc and captured_at). An id reused for
    another event (another session, kind or call), or a stored event replayed under another
    device's name (its capture clocks copied), is not this."""
    return identity_of_env(env) == identity_of_row(*row) and not _replayed(env, row[5], row[6])


def ensure(conn) -> None:
    conn.execute(DDL)


def exists(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sync_duplicates'").fetchone() \
        is not None


def keep(conn, device: str, n: int, env: dict, leaf: str, holder: str) -> bool:
    """Keep the skipped line of `device`'s segment `n` (its signed leaf `leaf`); False when the
    line does not re-render to the signed bytes (then it is not kept: a conflict)."""
    text = event.line(env)
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != leaf:
        return False
    ensure(conn)
    conn.execute("INSERT OR REPLACE INTO sync_duplicates(device_id, segment, leaf, event_id, holder, line) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (device, n, leaf, "ev_" + env["event_id"], holder, text))
    return True


def accounted(conn, device: str, leaves: set) -> int:
    """Remove from `leaves` (32-byte leaves of `device`'s kept segments) those of lines pull
    skipped because another device's event with the same id and identity was stored first; the
    number removed. Each is recomputed: the kept line hashes to the leaf, it is an event of
    `device`, and the event stored under its id is another device's, describing the same
    provider event."""
    if not leaves or not exists(conn):
        return 0
    done = 0
    bare = device[4:]
    for (text,) in conn.execute("SELECT line FROM sync_duplicates WHERE device_id = ?", (device,)):
        if not isinstance(text, str):
            continue
        try:
            raw = text.encode("utf-8")
            leaf = hashlib.sha256(raw).digest()
            if leaf not in leaves:
                continue
            env = fastjson.loads(text)
        except (ValueError, UnicodeEncodeError, RecursionError):
            continue
        if not isinstance(env, dict) or env.get("device_id") != bare or not isinstance(env.get("event_id"), str):
            continue
        row = conn.execute(f"SELECT device_id, {IDENTITY_COLUMNS} FROM events WHERE event_id = ?",
                           ("ev_" + env["event_id"],)).fetchone()
        if row is None or row[0] == device or not same_identity(env, tuple(row[1:])):
            continue
        leaves.discard(leaf)
        done += 1
    return done


def holders_note(device: str, skipped: dict) -> str:
    """The pull note: {holder: count} of `device`'s events skipped as held by another device."""
    total = sum(skipped.values())
    who = ", ".join(f"{h} ({k:,})" for h, k in sorted(skipped.items())) if len(skipped) > 1 else next(iter(skipped))
    return (f"{device}: {total:,} of its events skipped: {'its id is' if total == 1 else 'their ids are'} held here "
            f"by an event of {who} about the same provider event (captured on both devices); the copy stored first "
            "stays")
