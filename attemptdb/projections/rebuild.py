"""Rebuilding the projections from the fact log, and comparing states.

Invariant: `reproject` derives every *_facts and checkpoint row from `events` alone (the same
apply trigger the incremental path uses, fed every fact event in sort order) and reports each
row the incremental state had that the rebuild does not, and vice versa — none is expected.
`events.retracted` can only go 0 -> 1: a missing mark is set, an extra one is only reported.
"""

import time

from ..store import schema_integrity
from ..store.database import request_replays
from . import CHECKPOINT_TABLES, FACT_TABLES, PUBLIC_VIEWS, READ_CLOCK_COLUMNS, units

STATE_TABLES = FACT_TABLES + CHECKPOINT_TABLES + units.UNIT_TABLES
META_TABLES = ("correction_facts", "retraction_facts")

_REPLAY_ALL = """
INSERT OR REPLACE INTO project_queue
  SELECT 1, p.* FROM project_input p
  WHERE p.kind NOT IN ('correction', 'retraction', 'capture_test') AND p.telemetry = 0
    AND NOT EXISTS (SELECT 1 FROM retraction_facts r WHERE r.target = p.event_id AND r.target_type = 'event')
  ORDER BY p.gsid, p.ekey
"""

# events that a Retraction removes: named directly, in a named session, or a call event of a
# named attempt (spec/projections.md §7)
_SHOULD_BE_RETRACTED = """
SELECT e.event_id FROM events e JOIN retraction_facts r ON r.target = e.event_id AND r.target_type = 'event'
 WHERE e.kind NOT IN ('correction', 'retraction')
UNION
SELECT e.event_id FROM retraction_facts r JOIN events e ON e.session_id = r.target
 WHERE r.target_type = 'session' AND e.kind NOT IN ('correction', 'retraction')
UNION
SELECT c.start_event_id FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
  JOIN tool_call_facts c ON c.attempt_key = a.group_key WHERE r.target_type = 'attempt' AND c.start_event_id IS NOT NULL
UNION
SELECT c.end_event_id FROM retraction_facts r JOIN attempt_facts a ON a.attempt_id = r.target
  JOIN tool_call_facts c ON c.attempt_key = a.group_key WHERE r.target_type = 'attempt' AND c.end_event_id IS NOT NULL
"""


def table_rows(conn, table: str, portable: bool = False) -> list[tuple]:
    """Every row of `table` (or view), sorted: a comparable, order-free snapshot. `portable`
    drops the arrival-assigned parts (hlc, source_seq) of stored sort keys, for comparing two
    files that received the same events in different orders."""
    rows = conn.execute(f"SELECT * FROM {table}").fetchall()
    if portable:
        rows = [tuple(_portable(v) for v in r) for r in rows]
    return sorted(rows, key=_sort_key)


def _portable(v):
    # ekey = observed_at (27) | hlc (20) | source_seq (20) | event_id
    if isinstance(v, str) and len(v) > 70 and v[27:28] == "|" and v[48:49] == "|" and v[69:70] == "|":
        return v[:27] + "|" + v[70:]
    return v


def _sort_key(row):
    return tuple((0, "") if v is None else (1, v) if isinstance(v, str) else (2, str(v)) for v in row)


def dump(conn, tables=STATE_TABLES, portable: bool = False) -> dict:
    return {t: table_rows(conn, t, portable) for t in tables}


def dump_views(conn, views=PUBLIC_VIEWS) -> dict:
    """Every row of each view, sorted; columns that quote the read's own clock are blanked."""
    out = {}
    for v in views:
        rows = table_rows(conn, v)
        clocked = READ_CLOCK_COLUMNS.get(v)
        if clocked:
            names = [r[1] for r in conn.execute(f"PRAGMA table_info({v})")]
            blank = {names.index(c) for c in clocked}
            rows = sorted((tuple(None if i in blank else x for i, x in enumerate(r)) for r in rows), key=_sort_key)
        out[v] = rows
    return out


def retracted_events(conn) -> set:
    return {r[0] for r in conn.execute("SELECT event_id FROM events WHERE retracted = 1")}


def _snapshot(conn) -> None:
    """Copy the state tables into temp tables: the `before` side of a reproject. They stay in
    SQLite (its temp store on disk during a reproject), never in Python: the state of a
    1.45M-event file is ~6 GB as Python tuples."""
    for t in STATE_TABLES:
        conn.execute(f'DROP TABLE IF EXISTS temp."before_{t}"')
        conn.execute(f'CREATE TEMP TABLE "before_{t}" AS SELECT * FROM main."{t}"')


def _compared(conn, limit: int = 5) -> dict:
    """{table: {"only_before": n, "only_after": n, "examples": [...]}} for the state tables whose
    rows differ between the snapshot and now (rows of one side missing from the other; a
    surplus of identical rows counts too), computed in SQL. Drops the snapshot."""
    out = {}
    try:
        for t in STATE_TABLES:
            b, a = f'temp."before_{t}"', f'main."{t}"'
            only_b = f"SELECT * FROM {b} EXCEPT SELECT * FROM {a}"
            only_a = f"SELECT * FROM {a} EXCEPT SELECT * FROM {b}"
            nb = conn.execute(f"SELECT count(*) FROM ({only_b})").fetchone()[0]
            na = conn.execute(f"SELECT count(*) FROM ({only_a})").fetchone()[0]
            if not nb and not na:
                rows_b = conn.execute(f"SELECT count(*) FROM {b}").fetchone()[0]
                rows_a = conn.execute(f"SELECT count(*) FROM {a}").fetchone()[0]
                if rows_b == rows_a:
                    continue
                nb, na = max(rows_b - rows_a, 0), max(rows_a - rows_b, 0)
            out[t] = {"only_before": nb, "only_after": na,
                      "examples": [("incremental", r) for r in _examples(conn, only_b, limit)]
                                  + [("rebuild", r) for r in _examples(conn, only_a, limit)]}
    finally:
        _drop_snapshot(conn)
    return out


def _drop_snapshot(conn) -> None:
    """Drop the `before` tables. When the comparison itself failed, a failure here (a statement
    still open, a connection that is gone) must not hide that first error: it is left to the
    rollback of the whole transaction."""
    import sys
    failing = sys.exc_info()[0] is not None
    for t in STATE_TABLES:
        try:
            conn.execute(f'DROP TABLE IF EXISTS temp."before_{t}"')
        except Exception:
            if not failing:
                raise
            return


def _examples(conn, sql: str, limit: int) -> list:
    """The first three columns of up to `limit` rows of `sql`. A projection row can hold text
    that is not UTF-8 (written outside AttemptDB): it is shown with its bad bytes replaced,
    never fails the comparison it is an example of."""
    cur = conn.cursor()
    try:
        return [list(r[:3]) for r in cur.execute(f"{sql} LIMIT {limit}")]
    except UnicodeDecodeError:
        pass
    finally:
        cur.close()
    cur = conn.cursor()
    try:
        desc = [d[0] for d in cur.execute(f"SELECT * FROM ({sql}) LIMIT 0").getdescription()][:3]
    except Exception:
        desc = []
    finally:
        cur.close()
    cols = ", ".join(f'CAST("{c}" AS BLOB)' for c in desc) or "NULL"
    cur = conn.cursor()
    try:
        return [[v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in r]
                for r in cur.execute(f"SELECT {cols} FROM ({sql}) LIMIT {limit}")]
    finally:
        cur.close()


class Report:
    """What a reproject found: `restored` (views, indexes and triggers put back as their
    migrations wrote them, schema_integrity.restore), `differences` ({table: summary}),
    `missing_marks` (events that should be retracted and were not; now set), `extra_marks`
    (marked, no longer covered)."""

    def __init__(self):
        self.restored = []
        self.differences = {}
        self.missing_marks = []
        self.extra_marks = []
        self.events = 0
        self.sessions = 0
        self.seconds = 0.0
        self.written = False

    @property
    def clean(self) -> bool:
        return not self.restored and not self.differences and not self.missing_marks

    def as_dict(self) -> dict:
        return {"clean": self.clean, "events": self.events, "sessions": self.sessions,
                "seconds": round(self.seconds, 3), "written": self.written,
                "restored": self.restored, "differences": self.differences,
                "missing_retracted_marks": len(self.missing_marks),
                "extra_retracted_marks": len(self.extra_marks)}


def rebuild_locked(conn) -> None:
    """Delete and re-derive every projection row (caller holds a write transaction)."""
    for t in STATE_TABLES:
        conn.execute(f"DELETE FROM {t}")
    conn.execute("INSERT INTO correction_facts (event_id, ekey, corrected_at, session_id, project_id, "
                 "correction_type, target_type, target, outcome, failure_class, note, note_chars, invalid) "
                 "SELECT event_id, ekey, corrected_at, session_id, project_id, correction_type, target_type, "
                 "target, outcome, failure_class, note, note_chars, invalid FROM correction_input")
    conn.execute("INSERT INTO retraction_facts (event_id, ekey, retracted_at, session_id, project_id, "
                 "target_type, target, reason, note, note_chars) SELECT event_id, ekey, retracted_at, "
                 "session_id, project_id, target_type, target, reason, note, note_chars FROM retraction_input")
    conn.execute("INSERT INTO correction_targets (target, corr_by, corr_outcome, corr_class_set, corr_class, "
                 "corr_note_by) SELECT target, corr_by, corr_outcome, corr_class_set, corr_class, corr_note_by "
                 "FROM correction_decisions")
    conn.execute("DELETE FROM projection_dirty")
    conn.execute("UPDATE projection_control SET paused = 0 WHERE id = 1")
    conn.execute(_REPLAY_ALL)
    units.rebuild(conn)


def reproject(conn, *, write: bool = True) -> Report:
    """Rebuild every projection from `events` and compare with the incremental state. With
    `write=False` nothing changes (the rebuild is rolled back)."""
    rep = Report()
    t0 = time.perf_counter()
    store = conn.execute("PRAGMA temp_store").fetchone()[0]
    conn.execute("PRAGMA temp_store = FILE")  # the snapshot is the size of the state
    conn.execute("BEGIN IMMEDIATE")
    try:
        # the views and triggers the rebuild runs must be the migrations' own (a file edited in
        # the sqlite3 shell gets them back here, and its state is then rebuilt by them)
        rep.restored = schema_integrity.restore(conn, conn.execute("PRAGMA user_version").fetchone()[0])
        _snapshot(conn)
        rebuild_locked(conn)
        rep.differences = _compared(conn)
        should = {r[0] for r in conn.execute(_SHOULD_BE_RETRACTED) if r[0] is not None}
        marked = retracted_events(conn)
        rep.missing_marks = sorted(should - marked)
        rep.extra_marks = sorted(marked - should)
        for eid in rep.missing_marks:
            conn.execute("UPDATE events SET retracted = 1 WHERE event_id = ? AND retracted = 0", (eid,))
        rep.events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        rep.sessions = conn.execute("SELECT count(*) FROM session_facts").fetchone()[0]
        conn.execute("COMMIT" if write else "ROLLBACK")
        rep.written = write
    except BaseException:
        _rollback(conn)
        raise
    finally:
        if conn.getautocommit():  # a pragma cannot change inside a transaction
            try:
                conn.execute(f"PRAGMA temp_store = {int(store)}")
            except Exception:  # only ever a cost: never hide what happened before it
                pass
    rep.seconds = time.perf_counter() - t0
    return rep


def _rollback(conn) -> None:
    """Roll the rebuild back after it failed, without replacing its error with one of the
    clean-up's own (a connection already gone is left as it is)."""
    try:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
    except Exception:
        pass


# --- deferred projection (bulk imports) ---------------------------------------------------

def pause(conn) -> None:
    """Stop projecting on append; appends only note their sessions until `resume`."""
    conn.execute("UPDATE projection_control SET paused = 1 WHERE id = 1")


def resume(conn) -> int:
    """Project again, re-deriving every session touched while paused. Returns how many."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("UPDATE projection_control SET paused = 0 WHERE id = 1")
        dirty = conn.execute("SELECT session_id, raw_session_id, project_id, '' FROM projection_dirty").fetchall()
        request_replays(conn, dirty)
        conn.execute("DELETE FROM projection_dirty")
        units.refresh(conn)
        conn.execute("COMMIT")
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    return len(dirty)


class paused:
    """`with rebuild.paused(store.conn): store.append(...)` — bulk appends project once, at the end."""

    def __init__(self, conn):
        self.conn = conn
        self.replayed = 0

    def __enter__(self):
        pause(self.conn)
        return self

    def __exit__(self, *exc):
        self.replayed = resume(self.conn)
