"""Correction and Retraction events: AttemptDB's own facts about its inferences.

Invariants:
- Both are canonical Event v1 envelopes (provider `attemptdb`, kinds `correction` /
  `retraction`, provider_event_name `Correction` / `Retraction`) placed in the session of their
  target (its provider session id copied, its projection session id forced), appended through
  `Store.append` like any fact. Nothing is ever edited: a wrong correction is corrected again, a
  wrong retraction can only be documented.
- Attrs hold ids and vocabulary only (correction_type, target, target_type, outcome,
  failure_class, reason, note_chars); the note text is content (`content.note`) and is left out
  under metadata_only, where only note_chars survives.
- A target is named by its full prefixed id or a unique prefix of at least 8 hex digits; an
  unknown, ambiguous or too-short id is a coded error listing candidates, never a guess.
- `--dry-run` appends inside a transaction, reads the changed rows, and rolls back.
"""

from .. import ADAPTER_VERSION, __version__
from ..errors import AttemptError
from ..model import clock, event, fastjson, ids

OUTCOMES = ("succeeded", "failed", "abandoned", "superseded")
OUTCOME_ALIASES = {"success": "succeeded", "failure": "failed"}
REASONS = ("benchmark", "test", "duplicate", "mistaken_import", "privacy", "revoked", "other")
MIN_HEX = ids.MIN_SHORT_HEX  # as every command that takes a short id
_HEX = set("0123456789abcdef")


# --- envelopes ----------------------------------------------------------------------------

def _envelope(kind: str, session: dict, attrs: dict, note, device_id: str, capture_mode: str,
              observed_at: int) -> dict:
    sid = ids.bare(session["session_id"])
    proj = {k: v for k, v in session["project"].items() if k in event.PROJECT_ORDER and v is not None}
    proj["project_id"] = ids.bare(proj["project_id"])
    env = {
        "event_id": ids.uuid7(observed_at // 1000 if observed_at > 0 else None),
        "schema_version": 1, "device_id": ids.bare(device_id), "source_seq": 0, "hlc": 0,
        "observed_at": observed_at, "captured_at": observed_at, "provider": "attemptdb",
        "adapter_version": ADAPTER_VERSION, "hook_version": __version__,
        "capture_mode": capture_mode,
        "provider_event_name": "Correction" if kind == "correction" else "Retraction",
        "kind": kind, "project": proj, "session_id": sid,
        "provider_session_id": session["provider_session_id"],
        "agent": {"agent_id": ids.derive("agt_", "session", sid)},
    }
    if note:
        attrs["note_chars"] = len(note)
    env["attrs"] = attrs
    if note and capture_mode != "metadata_only":
        env["content"] = {"note": note}
    env = event.canonical(env)
    event.validate(env)
    return env


def correction_envelope(*, target: str, session: dict, outcome=None, failure_class=None,
                        note=None, device_id: str, capture_mode: str, observed_at: int,
                        correction_type=None) -> dict:
    """A Correction of `target` (att_/trn_ id) written into `session` ({session_id,
    provider_session_id, project})."""
    if correction_type is None:
        if target.startswith("trn_"):
            correction_type = "turn_objective"
        else:
            correction_type = "attempt_outcome" if outcome else "attempt_note"
    attrs = {"correction_type": correction_type, "target": target,
             "target_type": {"att_": "attempt", "trn_": "turn", "ses_": "session"}.get(target[:4], "attempt")}
    if outcome:
        attrs["outcome"] = OUTCOME_ALIASES.get(outcome, outcome)
    if failure_class:
        attrs["failure_class"] = failure_class
    return _envelope("correction", session, attrs, note, device_id, capture_mode, observed_at)


def retraction_envelope(*, target: str, target_type: str, session: dict, reason: str, note=None,
                        device_id: str, capture_mode: str, observed_at: int) -> dict:
    attrs = {"target_type": target_type, "target": target, "reason": reason}
    return _envelope("retraction", session, attrs, note, device_id, capture_mode, observed_at)


# --- targets ------------------------------------------------------------------------------

_LOOKUPS = {
    # prefix → (kind, SQL listing candidate ids for a GLOB pattern, SQL of the session)
    "att_": ("attempt", "SELECT attempt_id FROM attempt_facts WHERE attempt_id GLOB ? LIMIT 6",
             "SELECT session_id FROM attempt_facts WHERE attempt_id = ?"),
    "trn_": ("turn", "SELECT turn_id FROM turn_facts WHERE turn_id GLOB ? LIMIT 6",
             "SELECT session_id FROM turn_facts WHERE turn_id = ?"),
    # a session is named by its raw id (what events carry) or its projection id (what the views
    # show: they differ for a provider that sent no session id); either resolves to the raw id
    "ses_": ("session", "SELECT DISTINCT raw_session_id FROM session_facts WHERE raw_session_id GLOB ?1 "
                        "OR session_id GLOB ?1 LIMIT 6",
             "SELECT session_id FROM session_facts WHERE session_id = ?1 OR raw_session_id = ?1 "
             "ORDER BY started_at, session_id LIMIT 1"),
    "ev_": ("event", "SELECT event_id FROM events WHERE event_id GLOB ? LIMIT 6", None),
}


_A = {"att_": "an attempt", "trn_": "a turn", "ses_": "a session", "ev_": "an event"}


def resolve(conn, text: str, prefixes: tuple) -> str:
    """The full id `text` names (full id or unique prefix ≥ MIN_HEX hex digits) among `prefixes`."""
    t = (text or "").strip().lower()
    prefix = next((p for p in prefixes if t.startswith(p)), None)
    if prefix is None:
        raise AttemptError("target.kind", f"expected an id starting with {' or '.join(prefixes)}")
    body = t[len(prefix):]
    other = next((p for p in _LOOKUPS if body.startswith(p)), None)
    if other is not None:  # `--session att_…`: the option added its prefix to an id of another kind
        raise AttemptError("target.kind", f"expected {_A[prefix]} id ({prefix}…), got {_A[other]} id "
                           f"({body[:40]})")
    hexpart = body.replace("-", "")
    if not hexpart or any(c not in _HEX for c in hexpart) or len(hexpart) > 32:
        raise AttemptError("target.malformed", f"not {_A[prefix]} id ({prefix} and hex digits expected)")
    if len(hexpart) < MIN_HEX:
        raise AttemptError("target.short", f"give at least {MIN_HEX} hex digits after {prefix}")
    canon = ids.hyphenated(hexpart)
    rows = [r[0] for r in conn.execute(_LOOKUPS[prefix][1], (prefix + canon + "*",))]
    if not rows:
        raise AttemptError("target.not_found", f"no {_LOOKUPS[prefix][0]} {prefix}{canon}", exit_status=1)
    if len(rows) > 1:
        listed = ", ".join(rows[:5]) + (", …" if len(rows) > 5 else "")
        raise AttemptError("target.ambiguous", f"{prefix}{canon} matches several: {listed}; give more hex digits")
    return rows[0]


def named_session(conn, name: str) -> str | None:
    """The raw session id of the session `attempt run`/`note`/… recorded under `name`
    (`--session ci-4711`, spec/evidence.md), when the file holds it; None for anything else."""
    if not name or name.lower().startswith("ses_"):
        return None
    sid = "ses_" + ids.session_id("attempt", name)
    row = conn.execute("SELECT raw_session_id FROM session_facts WHERE raw_session_id = ?1 OR session_id = ?1 "
                       "LIMIT 1", (sid,)).fetchone()
    return row[0] if row else None


def target_session(conn, target: str) -> dict:
    """{session_id, provider_session_id, project} of the projection session holding `target`."""
    if target.startswith("ev_"):
        row = conn.execute("SELECT gsid FROM project_input WHERE event_id = ?", (target,)).fetchone()
    else:
        row = conn.execute(_LOOKUPS[target[:4]][2], (target,)).fetchone()
    info = None if row is None else conn.execute(
        "SELECT s.session_id, s.provider_session_id, e.project_id, e.project_root, e.project_name, "
        "e.repo_remote FROM session_facts s JOIN events e ON e.event_id = s.first_event_id "
        "WHERE s.session_id = ?", (row[0],)).fetchone()
    if info is None:
        raise AttemptError("target.not_found", f"no projected session holds {target}", exit_status=1)
    project = {"project_id": info[2], "root": info[3], "name": info[4]}
    if info[5]:
        project["repo_remote"] = info[5]
    return {"session_id": info[0], "provider_session_id": info[1], "project": project}


# --- writing ------------------------------------------------------------------------------

def parse_outcome(text):
    if text is None:
        return None
    t = OUTCOME_ALIASES.get(text.strip().lower(), text.strip().lower())
    if t not in OUTCOMES:
        raise AttemptError("correct.outcome", f"outcome must be one of {', '.join(OUTCOMES)}")
    return t


def parse_reason(text) -> str:
    t = (text or "").strip().lower()
    if t not in REASONS:
        raise AttemptError("retract.reason", f"reason must be one of {', '.join(REASONS)}")
    return t


def check_class(text):
    if text is None:
        return None
    t = text.strip()
    if not t or len(t) > 64 or not t.isascii() or not all(c.isalnum() or c in "_-." for c in t):
        raise AttemptError("correct.failure_class",
                           "a failure class is a short token (letters, digits, _ - .), e.g. compile_error")
    return t


def check_note(text):
    if text is None:
        return None
    if not text.strip():
        raise AttemptError("meta.note", "an empty note says nothing; leave --note out")
    if len(text) > 4096:
        raise AttemptError("meta.note", "a note is at most 4096 characters")
    return text


# --- appending inside a transaction we control --------------------------------------------

def _append_uncommitted(store, env: dict, now_us: int) -> None:
    """Append one envelope inside the caller's open write transaction (the dry run rolls it
    back). Uses the store's locked append: the same checks, chain and triggers as `append`."""
    res = store.append_uncommitted([env], now_us=now_us)
    if not res.accepted:
        raise AttemptError("meta.duplicate", "this event is already in the log")


_COUNTS = (
    ("sessions", "SELECT count(*) FROM sessions WHERE NOT retracted"),
    ("turns", "SELECT count(*) FROM turns WHERE NOT retracted"),
    ("tool_calls", "SELECT count(*) FROM tool_calls WHERE NOT retracted"),
    ("attempts", "SELECT count(*) FROM attempts WHERE NOT retracted"),
    ("handoffs", "SELECT count(*) FROM handoffs"),
    ("signals", "SELECT count(*) FROM signals"),
    ("retracted_events", "SELECT count(*) FROM events WHERE retracted = 1"),
)
_UNIT_COUNTS = (
    ("work_units", "SELECT count(*) FROM unit_index"),
    ("decisions", "SELECT count(*) FROM decisions"),
)
_NOTE_COUNTS = (  # the public views of migration 0020 (sql/88_notes.sql): a range of events_notes
    ("notes", "SELECT count(*) FROM notes"),
    ("approvals", "SELECT count(*) FROM approvals"),
)
_ATTEMPT_FIELDS = ("outcome", "failure_class", "objective", "note", "corrected_by", "superseded_by",
                   "supersedes", "retracted")
_TURN_FIELDS = ("objective", "corrected_by", "tool_call_count", "retracted")
_UNIT_FIELDS = ("phase", "status", "attempts", "failed_attempts", "last_attempt", "turns", "sessions")
_FIELDS = {"attempt": _ATTEMPT_FIELDS, "turn": _TURN_FIELDS, "work_unit": _UNIT_FIELDS}
_UNIT_ROWS = """SELECT work_unit_id, phase, status, attempt_count AS attempts, failed_attempt_count AS failed_attempts,
  last_attempt, turn_count AS turns, session_count AS sessions FROM work_units
WHERE work_unit_id IN (SELECT value FROM json_each(?))"""


def _snapshot(conn, session_id: str, unit_turns=()) -> dict:
    """The session's attempts and turns, the work units holding its turns (and those holding
    `unit_turns`, the members of its units before a change: a retraction may split or empty a
    unit), and the counts a retraction reports."""
    from ..store.database import dict_rows as rows
    units = _has(conn, "unit_turns")
    counted = _COUNTS + (_UNIT_COUNTS if units else ()) + (_NOTE_COUNTS if _has(conn, "notes") else ())
    snap = {"counts": {k: conn.execute(q).fetchone()[0] for k, q in counted}}
    for r in rows(conn, "SELECT * FROM attempts WHERE session_id = ?", (session_id,)):
        snap[("attempt", r["attempt_id"])] = {f: r[f] for f in _ATTEMPT_FIELDS}
    for r in rows(conn, "SELECT * FROM turns WHERE session_id = ?", (session_id,)):
        snap[("turn", r["turn_id"])] = {f: r[f] for f in _TURN_FIELDS}
    snap["unit_turns"] = []
    if units:
        ids = [r[0] for r in conn.execute(
            "SELECT DISTINCT work_unit_id FROM unit_turns WHERE session_id = ? UNION SELECT work_unit_id FROM unit_turns "
            "WHERE turn_id IN (SELECT value FROM json_each(?))", (session_id, fastjson.dumps(list(unit_turns))))]
        ids_json = fastjson.dumps(ids)
        snap["unit_turns"] = [r[0] for r in conn.execute(
            "SELECT turn_id FROM unit_turns WHERE work_unit_id IN (SELECT value FROM json_each(?))", (ids_json,))]
        for r in rows(conn, _UNIT_ROWS, (ids_json,)):
            snap[("work_unit", r["work_unit_id"])] = {f: r[f] for f in _UNIT_FIELDS}
    return snap


def _unit_text(u: dict):
    if not u:
        return None
    return f"{u['phase']} · {u['status']} · {u['attempts']} attempt(s)"


def _has(conn, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is not None


def _changes(before: dict, after: dict) -> tuple[list, dict]:
    """(field changes of attempts, turns and work units — a unit that appeared or went away
    shows its fields from or to nothing —, count changes) between two snapshots."""
    changes = []
    for key in sorted(set(before) | set(after), key=str):
        if not isinstance(key, tuple):
            continue
        b, a = before.get(key, {}), after.get(key, {})
        if key[0] == "work_unit" and not (a and b):  # a unit that appeared or went away: one line
            changes.append({"entity": key[1], "field": "work_unit", "before": _unit_text(b), "after": _unit_text(a)})
            continue
        for f in _FIELDS[key[0]]:
            if b.get(f) != a.get(f):
                changes.append({"entity": key[1], "field": f, "before": b.get(f), "after": a.get(f)})
    counts = {k: {"before": before["counts"][k], "after": after["counts"][k]}
              for k in before["counts"] if before["counts"][k] != after["counts"][k]}
    return changes, counts


def correct(store, target_text: str, *, outcome=None, failure_class=None, note=None,
            dry_run: bool = False, now_us: int | None = None) -> dict:
    """Write (or, with dry_run, only try) a Correction of an attempt or turn. Refused unless the
    projection would apply it. Returns what was (or would be) written and what changed."""
    conn = store.conn
    target = resolve(conn, target_text, ("att_", "trn_"))
    outcome = parse_outcome(outcome)
    failure_class = check_class(failure_class)
    note = check_note(note)
    if target.startswith("att_"):
        if failure_class is not None and outcome is None:
            raise AttemptError("correct.class_needs_outcome", "--failure-class needs --outcome")
        if outcome is None and note is None:
            raise AttemptError("correct.nothing", "give --outcome and/or --note for an attempt")
        ctype = "attempt_outcome" if outcome else "attempt_note"
    else:
        if outcome is not None or failure_class is not None:
            raise AttemptError("correct.turn_fields", "a turn takes only --note (it becomes the turn's objective)")
        if note is None:
            raise AttemptError("correct.nothing", "give --note: it becomes the turn's objective")
        ctype = "turn_objective"
    now = clock.now_us() if now_us is None else now_us
    mode = store.capture_mode
    env = correction_envelope(target=target, session=target_session(conn, target), outcome=outcome,
                              failure_class=failure_class, note=note, device_id=store.device_id,
                              capture_mode=mode, observed_at=now, correction_type=ctype)
    sid = target_session(conn, target)["session_id"]
    conn.execute("BEGIN IMMEDIATE")
    try:
        before = _snapshot(conn, sid)
        _append_uncommitted(store, env, now)
        status = conn.execute("SELECT status FROM corrections WHERE event_id = ?",
                              ("ev_" + env["event_id"],)).fetchone()[0]
        after = _snapshot(conn, sid, before["unit_turns"])
        changes, _ = _changes(before, after)
        write = status == "applied" and not dry_run
        conn.execute("COMMIT" if write else "ROLLBACK")
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    if status != "applied":
        raise AttemptError("correct.not_applied",
                           f"the projection would not apply this correction (status: {status})", exit_status=1)
    return {"event_id": "ev_" + env["event_id"], "kind": "correction", "correction_type": ctype,
            "target": target, "outcome": outcome, "failure_class": failure_class,
            "note_chars": len(note) if note else None, "note_stored": bool(note) and mode != "metadata_only",
            "capture_mode": mode, "status": status, "written": write, "dry_run": dry_run,
            "changes": changes}


def describe_target(conn, target: str, target_type: str) -> dict:
    """What a retraction would remove, in content-free terms."""
    from ..store.database import dict_rows as rows
    if target_type == "session":
        r = rows(conn, "SELECT provider, project_name, started_at, ended_at, state, event_count, turn_count "
                       "FROM sessions WHERE session_id IN (SELECT session_id FROM session_facts "
                       "WHERE raw_session_id = ?) ORDER BY started_at LIMIT 1", (target,))
        d = r[0] if r else {}
        d["attempts"] = conn.execute("SELECT count(*) FROM attempts WHERE session_id IN (SELECT session_id "
                                     "FROM session_facts WHERE raw_session_id = ?) AND NOT retracted",
                                     (target,)).fetchone()[0]
        return d
    if target_type == "attempt":
        r = rows(conn, "SELECT turn_index, attempt_index, outcome, approach, tool_call_count, session_id "
                       "FROM attempts WHERE attempt_id = ?", (target,))
        return r[0] if r else {}
    r = rows(conn, "SELECT provider, kind, tool_name, observed_at, session_id FROM events WHERE event_id = ?",
             (target,))
    return r[0] if r else {}


def retract(store, *, session=None, attempt=None, event_id=None, reason: str, note=None,
            dry_run: bool = False, now_us: int | None = None) -> dict:
    """Write (or, with dry_run, only try) a Retraction of one session, attempt or event. Returns
    what was (or would be) written, `retracted_events` (how many events it takes out of the
    projections: not those an earlier retraction already took out) and what changed."""
    conn = store.conn
    given = [(k, v) for k, v in (("session", session), ("attempt", attempt), ("event", event_id)) if v]
    if len(given) != 1:
        raise AttemptError("retract.target", "give exactly one of --session, --attempt, --event")
    target_type, text = given[0]
    prefix = {"session": "ses_", "attempt": "att_", "event": "ev_"}[target_type]
    target = named_session(conn, text) if target_type == "session" else None
    if target is None:
        target = resolve(conn, text if text.lower().startswith(prefix) else prefix + text, (prefix,))
    reason = parse_reason(reason)
    note = check_note(note)
    already = conn.execute("SELECT 1 FROM retraction_facts WHERE target = ? AND target_type = ?",
                           (target, target_type)).fetchone()
    if already:
        raise AttemptError("retract.already", f"{target_type} {target} is already retracted")
    if target_type == "event":
        kind = conn.execute("SELECT kind FROM events WHERE event_id = ?", (target,)).fetchone()
        if kind and kind[0] in ("correction", "retraction"):
            raise AttemptError("retract.meta_event",
                               "a correction or retraction cannot be retracted (the audit trail stays)")
        if conn.execute("SELECT retracted FROM events WHERE event_id = ?", (target,)).fetchone()[0]:
            raise AttemptError("retract.already", f"event {target} is already retracted")
    now = clock.now_us() if now_us is None else now_us
    where = target_session(conn, target if target_type != "session" else
                           conn.execute("SELECT session_id FROM session_facts WHERE raw_session_id = ? "
                                        "ORDER BY started_at LIMIT 1", (target,)).fetchone()[0])
    if target_type == "session":
        where = dict(where, session_id=target)
    env = retraction_envelope(target=target, target_type=target_type, session=where, reason=reason,
                              note=note, device_id=store.device_id, capture_mode=store.capture_mode,
                              observed_at=now)
    description = describe_target(conn, target, target_type)
    sid = where["session_id"] if target_type != "session" else conn.execute(
        "SELECT session_id FROM session_facts WHERE raw_session_id = ? ORDER BY started_at LIMIT 1",
        (target,)).fetchone()[0]
    conn.execute("BEGIN IMMEDIATE")
    try:
        before = _snapshot(conn, sid)
        _append_uncommitted(store, env, now)
        row = conn.execute("SELECT matched, retracted_events FROM retractions WHERE event_id = ?",
                           ("ev_" + env["event_id"],)).fetchone()
        after = _snapshot(conn, sid, before["unit_turns"])
        changes, counts = _changes(before, after)
        write = not dry_run
        conn.execute("COMMIT" if write else "ROLLBACK")
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    # The events this retraction takes out: those whose `retracted` mark it sets. The retractions
    # row's count (row[1]) is every event the target covers, those an earlier retraction already
    # took out included (a session retraction after one of its attempts' or events').
    leaving = after["counts"]["retracted_events"] - before["counts"]["retracted_events"]
    return {"event_id": "ev_" + env["event_id"], "kind": "retraction", "target_type": target_type,
            "target": target, "reason": reason, "note_chars": len(note) if note else None,
            "matched": bool(row[0]), "retracted_events": leaving, "description": description,
            "written": write, "dry_run": dry_run, "changes": changes, "counts": counts}
