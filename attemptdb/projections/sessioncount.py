"""Which sessions a count counts.

Invariant: `attempt status` counts the sessions of the `sessions` view that no retraction
removed; a bundle (or anything else listing the sessions of events) names every session its
events belong to. `classify` splits such a list the way status counts it, so the two numbers
can be put side by side and the difference said: sessions only a capture test wrote (hook
install's check: not projected), retracted sessions, and sessions none of whose events are
projected (all retracted, or telemetry).
"""


def classify(conn, session_ids) -> dict:
    """How the sessions of events (`session_ids`, ses_ ids as events carry them) are counted
    by `attempt status`: {'counted': projected sessions no retraction removed (a session the
    projections split per project counts once per project, as status counts it), 'retracted':
    projected sessions a retraction removed, 'capture_test': sessions only capture tests
    wrote, 'not_projected': sessions none of whose events reached a projection}. A projected
    session is tied to its events through its evidence."""
    ids = list(dict.fromkeys(session_ids))
    from ..model import fastjson
    rows = conn.execute(
        "SELECT DISTINCT s.session_id, s.retracted, e.session_id FROM sessions s, json_each(s.evidence) j "
        "JOIN events e ON e.event_id = j.value WHERE e.session_id IN (SELECT value FROM json_each(?))",
        (fastjson.dumps(ids),)).fetchall()
    projected = {}
    reached = set()
    for sid, retracted, source in rows:
        projected[sid] = retracted
        reached.add(source)
    out = {"counted": sum(1 for r in projected.values() if not r),
           "retracted": sum(1 for r in projected.values() if r), "capture_test": 0, "not_projected": 0}
    for sid in ids:
        if sid in reached:
            continue
        kinds = {r[0] for r in conn.execute("SELECT DISTINCT kind FROM events WHERE session_id = ?", (sid,))}
        out["capture_test" if kinds == {"capture_test"} else "not_projected"] += 1
    return out


def capture_test_sessions(conn) -> int:
    """Sessions only capture tests wrote (not in the sessions view, so status leaves them out)."""
    return conn.execute("SELECT count(DISTINCT session_id) FROM events e WHERE kind = 'capture_test' AND NOT EXISTS "
                        "(SELECT 1 FROM events o WHERE o.session_id = e.session_id AND o.kind != 'capture_test')"
                        ).fetchone()[0]


def explain(c: dict, total: int) -> str:
    """`53 as `attempt status` counts them; not counted there: 1 retracted, 2 capture-test
    sessions` for the `total` sessions of some events, or '' when status counts the same."""
    from ..render.termtable import plural
    parts = []
    if c["retracted"]:
        parts.append(f"{c['retracted']} retracted")
    if c["capture_test"]:
        parts.append(plural(c["capture_test"], "capture-test session"))
    if c["not_projected"]:
        parts.append(f"{c['not_projected']} with no projected event")
    if not parts and c["counted"] == total:
        return ""
    return f"{c['counted']:,} as `attempt status` counts them" + (f"; not counted there: {', '.join(parts)}"
                                                                  if parts else "")
