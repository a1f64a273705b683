"""STATE [AT t] and WHAT IS: the state of sessions and work units at a time."""



from ..model import fastjson
from ..store.readonly import lifted, snapshot
from . import fixed_sql as F
from . import sqlgen as C
from .beside import beside, marked, snapshot_mark
from .errors import AQLError
from .resolve import resolve_time, table_exists
from .result import COVERAGE_CONFIDENCE, FAILED, Result, dedup, loads_list, uncertainty
from .scope import Scope, scope_of


def state_query(ctx, scope: Scope, t_us: int, pick_open: bool) -> C.Query:
    params = dict(scope.params)
    params.update(t=ctx.iso(t_us), t_open=ctx.iso(t_us - C.OPEN_WINDOW_US), t_wait=ctx.iso(t_us - C.WAIT_WINDOW_US))
    return C.Query(f"sessions at {ctx.iso(t_us)}", F.state_sessions_sql(scope.sql, pick_open), params)


def state_queries(ctx, scope: Scope, t_us: int, pick_open: bool) -> list:
    """Every query STATE runs (for EXPLAIN); the per-session ones with an empty id list."""
    t = ctx.iso(t_us)
    return [state_query(ctx, scope, t_us, pick_open),
            C.Query("attempts", F.STATE_ATTEMPTS_SQL, {"t": t, "sessions": "[]"}),
            C.Query("attempt evidence", F.STATE_EVIDENCE_SQL, {"attempts": "[]"}),
            C.Query("signals", F.STATE_SIGNALS_SQL, {"t": t, "sessions": "[]"}),
            C.Query("turns", F.STATE_TURNS_SQL, {"t": t, "sessions": "[]"}),
            C.Query("in-flight tool calls", F.STATE_IN_FLIGHT_SQL, {"t": t, "turns": "[]"})] + (
        [units_query(ctx, scope, t_us, pick_open, open_only=lists_open(scope, pick_open))]
        if table_exists(ctx.conn, "unit_index") else [])


def _group(rows, key="session_id"):
    out = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def states(ctx, sessions: list[dict], t_us: int) -> list[dict]:
    """Complete the session rows with their turn, attempts (outcomes as known at t), pending
    signal and in-flight calls at t."""
    if not sessions:
        return sessions
    t = ctx.iso(t_us)
    ids = fastjson.dumps([r["session_id"] for r in sessions])
    attempts = _group(ctx.dicts(C.Query("attempts", F.STATE_ATTEMPTS_SQL, {"t": t, "sessions": ids})))
    signals = _group(ctx.dicts(C.Query("signals", F.STATE_SIGNALS_SQL, {"t": t, "sessions": ids})))
    turns = _group(ctx.dicts(C.Query("turns", F.STATE_TURNS_SQL, {"t": t, "sessions": ids})))
    current = {sid: ts[-1] for sid, ts in turns.items()}
    in_flight = _group(ctx.dicts(C.Query("in-flight tool calls", F.STATE_IN_FLIGHT_SQL, {
        "t": t, "turns": fastjson.dumps([x["turn_id"] for x in current.values()])})), key="turn_id") if current else {}
    wanted = [a["attempt_id"] for atts in attempts.values() for a in atts[-2:]]
    evidence = {r["attempt_id"]: r["evidence"] for r in ctx.dicts(
        C.Query("attempt evidence", F.STATE_EVIDENCE_SQL, {"attempts": fastjson.dumps(wanted)}))} if wanted else {}
    for r in sessions:
        sid = r["session_id"]
        atts = attempts.get(sid, [])
        started = {a["attempt_id"]: a["started_at"] for a in atts}
        for a in atts:  # outcomes as they were known at t
            if a["ended_at"] is None or a["ended_at"] > t:
                a["outcome_t"] = "in_progress"
            elif a["outcome"] == "superseded" and (a["superseded_by"] not in started or started[a["superseded_by"]] > t):
                a["outcome_t"] = "failed"  # the retry had not started yet: at t it read as a failure
            else:
                a["outcome_t"] = a["outcome"]
        r["attempts"] = len(atts)
        r["failed"] = sum(1 for a in atts if a["outcome_t"] in FAILED)
        last = atts[-1] if atts else {}
        prev = atts[-2] if len(atts) > 1 else {}
        r["last_attempt"] = last.get("attempt_id")
        r["last_attempt_outcome"] = last.get("outcome_t")
        r["last_failure_class"] = last.get("failure_class") if last.get("outcome_t") in FAILED else None
        r["last_attempt_evidence"] = evidence.get(last.get("attempt_id"))
        r["last_attempt_ended_at"] = last.get("ended_at")
        r["previous_attempt"] = prev.get("attempt_id")
        r["previous_attempt_outcome"] = prev.get("outcome_t")
        r["previous_failure_class"] = prev.get("failure_class")
        r["previous_attempt_evidence"] = evidence.get(prev.get("attempt_id"))
        r["previous_attempt_ended_at"] = prev.get("ended_at")
        sig = signals.get(sid, [])
        g = sig[-1] if sig else {}
        r["signal_event_id"] = g.get("event_id")
        r["signal_kind"] = g.get("kind")
        r["signal_raised_at"] = g.get("raised_at")
        r["signal_confidence"] = g.get("confidence")
        r["signal_evidence"] = g.get("evidence")
        tr = current.get(sid)
        r["current_turn"] = tr["turn_id"] if tr else None
        r["turn_index"] = tr["turn_index"] if tr else None
        r["turn_status"] = None if not tr else (
            "in_progress" if tr["ended_at"] is None or tr["ended_at"] > t else tr["status"])
        r["prompt_event_id"] = tr["prompt_event_id"] if tr else None
        r["in_flight_tool_call_ids"] = [k["tool_call_id"] for k in in_flight.get(r["current_turn"], [])]
    return sessions


STATE_COLUMNS = ("subject_type", "subject_id", "session_id", "work_unit_id", "provider", "project_name", "status",
                 "phase", "current_turn", "turn_index", "turn_status", "in_flight_tool_calls",
                 "in_flight_tool_call_ids", "last_attempt", "last_attempt_outcome", "last_failure_class",
                 "last_activity_at", "blocked", "block_reason", "attempts", "failed", "sessions", "phase_reason",
                 "status_reason", "evidence", "uncertainty")
STATE_DISPLAY = ("subject_type", "subject_id", "provider", "status", "phase", "turn_status", "last_attempt_outcome",
                 "blocked", "attempts", "failed", "last_activity_at", "evidence", "uncertainty")


SIGNAL_NOUNS = {"permission_requested": "permission request", "notification": "notification"}
"""What a blocking signal of each event kind is called in a sentence (sql/20_apply.sql raises
signals from these two kinds)."""


def block_of(r: dict):
    """('signal'|'repeat', reason text, confidence, evidence) when the session was blocked, else None."""
    if r.get("signal_event_id"):
        kind = SIGNAL_NOUNS.get(r.get("signal_kind"), "signal")
        conf = r.get("signal_confidence")
        ev = loads_list(r.get("signal_evidence")) or [r["signal_event_id"]]
        return ("signal", f"waiting on a {kind} raised at {r['signal_raised_at']} with no later progress observed",
                0.65 if conf is None else conf, ev)
    o1, o2 = r.get("last_attempt_outcome"), r.get("previous_attempt_outcome")
    c1, c2 = r.get("last_failure_class"), r.get("previous_failure_class")
    if o1 in FAILED and o2 in FAILED and c1 and c1 == c2:
        conf = 0.7 if r.get("coverage") == "full" else 0.5
        ev = loads_list(r.get("last_attempt_evidence")) + loads_list(r.get("previous_attempt_evidence"))
        return ("repeat", f"the last two attempts both failed with {c1}: the agent is repeating itself", conf, ev)
    return None


def state_row(r: dict, t_iso: str) -> tuple:
    block = block_of(r)
    in_flight = loads_list(r.get("in_flight_tool_call_ids"))
    status = r["status"]
    base = COVERAGE_CONFIDENCE.get(r.get("coverage") or "unknown", 0.4)
    if status == "open":
        base = min(base, 0.8)
    elif status == "stale":
        base = min(base, 0.7)
    conf = block[2] if block else base
    note = f"session state at {t_iso} inferred from the events observed by then ({r.get('coverage') or 'unknown'} coverage)"
    if block:
        note = f"blocked: {block[1]}"
    evidence = dedup([r.get("last_event_id"), r.get("prompt_event_id")] + (block[3] if block else [])
                      + loads_list(r.get("last_attempt_evidence")))
    return named_state_row(
        subject_type="session", subject_id=r["session_id"], session_id=r["session_id"], provider=r["provider"],
        project_name=r["project_name"], status=status, current_turn=r.get("current_turn"),
        turn_index=r.get("turn_index"), turn_status=r.get("turn_status"), in_flight_tool_calls=len(in_flight),
        in_flight_tool_call_ids=in_flight, last_attempt=r.get("last_attempt"),
        last_attempt_outcome=r.get("last_attempt_outcome"), last_failure_class=r.get("last_failure_class"),
        last_activity_at=r.get("last_activity_at"), blocked=1 if block else 0,
        block_reason=block[1] if block else None, attempts=r.get("attempts") or 0, failed=r.get("failed") or 0,
        sessions=[r["session_id"]], evidence=evidence, uncertainty=uncertainty(conf, "heuristic", note))


def named_state_row(**columns) -> tuple:
    """A STATE row from its columns by name (every name a STATE_COLUMNS name; the rest NULL)."""
    unknown = set(columns) - set(STATE_COLUMNS)
    if unknown:
        raise TypeError(f"not STATE columns: {sorted(unknown)}")
    return tuple(columns.get(c) for c in STATE_COLUMNS)


def _no_state_row(label_type, label_id, note, evidence=()):
    return named_state_row(subject_type=label_type, subject_id=label_id, evidence=list(evidence),
                           uncertainty=uncertainty(0.0, "insufficient_evidence", note))


NO_UNITS_NOTE = "this file holds no work-unit tables (written before they existed): rows are sessions"


# ... work units at t (the rules of the work_units view, judged as of t: attemptql/units.py)

def units_query(ctx, scope: Scope, t_us: int, pick_open: bool = True, ids=None, open_only: bool = False) -> C.Query:
    """The work units of `scope` judged as of t: with `pick_open`, only units with member activity
    in the 12 h before t (a unit silent longer is completed, abandoned or stale); `ids` judges
    exactly these units; `open_only` leaves out the rows of those closed (completed or abandoned)
    by t."""
    from . import units
    params = dict(scope.params)
    params.update(t=ctx.iso(t_us), t_wait=ctx.iso(t_us - units.WAIT_WINDOW_US))
    if ids is not None:
        params["unit_ids"] = fastjson.dumps(list(ids))
    return C.Query(f"work units at {ctx.iso(t_us)}",
                   units.state_sql(ctx.conn, units_sql(scope, pick_open, ids), params, now=t_us >= ctx.now_us,
                                   open_only=open_only), params)


def units_sql(scope: Scope, pick_open: bool, ids=None) -> str:
    """The SELECT of the units units_query judges (named parameters :t, :t_wait and the scope's;
    with `ids`, :unit_ids)."""
    from . import units
    if ids is not None:
        return units.candidates_sql(" AND m.work_unit_id IN (SELECT value FROM json_each(:unit_ids))", window=False)
    return units.candidates_sql(scope.units, window=lists_open(scope, pick_open))


UNITS_STARTED_SQL = ("SELECT count(DISTINCT m.work_unit_id) FROM unit_turns m WHERE m.started_at <= :t{cond}")


def lists_open(scope: Scope, pick_open: bool) -> bool:
    """Whether units_at lists only the units open at t (else every one judged: a single session
    or unit is shown whatever its status)."""
    return pick_open and scope.single is None and scope.unit_single is None


def units_at(ctx, scope: Scope, t_us: int, pick_open: bool = True):
    """(the work units of `scope` as they stood at t — those open at t, or every one judged when
    the subject is a single session or unit, or pick_open is false — and a summary: judged,
    closed (completed or abandoned by t), started (units with a member started by t)); None
    and an empty summary when the file holds no work units."""
    if not table_exists(ctx.conn, "unit_index"):
        return None, {}
    open_only = lists_open(scope, pick_open)
    with lifted(ctx.conn):  # the units program is the package's text (query/units.py)
        q = units_query(ctx, scope, t_us, pick_open, open_only=open_only)
        rows = ctx.dicts(q)
        judged = len(rows)
        if open_only:  # the closed ones were judged, and counted, but their rows not built
            judged = rows[0]["judged_units"] if rows else ctx.conn.execute(
                f"SELECT count(*) FROM ({units_sql(scope, pick_open)})", q.params).fetchone()[0]
    params = dict(scope.params)
    params["t"] = ctx.iso(t_us)
    started = ctx.conn.execute(UNITS_STARTED_SQL.format(cond=scope.units), params).fetchone()[0]
    closed = judged - len(rows) if open_only else sum(1 for r in rows if r["status"] in ("completed", "abandoned"))
    return rows, {"judged": judged, "closed": closed, "started": started}


def units_note(scope: Scope, t_iso: str, units, summary: dict) -> str:
    if units is None:
        return NO_UNITS_NOTE
    if scope.unit_single or scope.single:
        return (f"{len(units)} work unit(s) of {scope.label} judged as of {t_iso} by the rules of the work_units "
                "view, whatever their status")
    label = scope.label
    silent = max(0, summary["started"] - summary["judged"])
    return (f"{len(units)} work unit(s) of {label} open at {t_iso} ({summary['closed']} completed or abandoned by "
            f"then are not listed; {silent} more started by then had no activity in the 12 h before it)")


def unit_block(u: dict):
    """('signal'|'repeat', reason, evidence) when the unit was blocked: a pending wait (its phase
    is blocked), else its last two attempts failing with the same class; None otherwise."""
    if u.get("blocking_signal"):
        return ("signal", u["phase_reason"], [u["blocking_signal"]])
    o1, o2 = u.get("last_outcome"), u.get("previous_outcome")
    c1, c2 = u.get("last_failure_class"), u.get("previous_failure_class")
    if o1 in FAILED and o2 in FAILED and c1 and c1 == c2:
        return ("repeat", f"the last two attempts both failed with {c1}: the work is repeating itself",
                dedup([u.get("last_fail_event") or u.get("last_first_event"),
                        u.get("previous_fail_event") or u.get("previous_first_event")]))
    return None


def unit_evidence(u: dict) -> list:
    """A unit row's evidence as of its instant: the objective's prompt, the last turn's prompt, the
    last attempt's first and failing events, the wait holding it (all observed by then)."""
    block = unit_block(u)
    return dedup([u.get("objective_event_id"), u.get("turn_event_id"), u.get("last_first_event"),
                   u.get("last_fail_event")] + (block[2] if block else []))


def unit_uncertainty(u: dict, t_iso: str | None, reason: str = "heuristic") -> dict:
    when = f" as of {t_iso}, from what was observed by then" if t_iso else ""
    return uncertainty(u.get("confidence"), reason,
                       f"work-unit grouping, phase and status are tier1-v5 heuristics (confidence "
                       f"{u.get('confidence')}, capped at 0.7){when}. Phase: {u.get('phase_reason')}. "
                       f"Status: {u.get('status_reason')}.")


def unit_state_row(u: dict, t_iso: str) -> tuple:
    block = unit_block(u)
    return named_state_row(
        subject_type="work_unit", subject_id=u["work_unit_id"], work_unit_id=u["work_unit_id"],
        provider=", ".join(loads_list(u.get("actors"))), project_name=u["project_name"], status=u["status"],
        phase=u["phase"], current_turn=u.get("last_turn_id"), turn_index=u.get("turn_index"),
        turn_status=u.get("turn_status"), in_flight_tool_calls=u.get("in_flight") or 0, in_flight_tool_call_ids=[],
        last_attempt=u.get("last_attempt"), last_attempt_outcome=u.get("last_outcome"),
        last_failure_class=u.get("last_failure_class") if u.get("last_outcome") in FAILED else None,
        last_activity_at=u.get("updated_at"), blocked=1 if block else 0, block_reason=block[1] if block else None,
        attempts=u.get("attempt_count") or 0, failed=u.get("failed_attempt_count") or 0,
        sessions=loads_list(u.get("sessions")), phase_reason=u.get("phase_reason"),
        status_reason=u.get("status_reason"), evidence=unit_evidence(u), uncertainty=unit_uncertainty(u, t_iso))


def state_at(ctx, scope: Scope, t_us: int, pick_open: bool = True):
    """(one dict per session as it stood at t — the open ones, or every one when the scope is
    a single session or pick_open is false — and a summary of all sessions started by t)."""
    with lifted(ctx.conn):  # the sessions' statements are the package's text, values bound
        if scope.single or not pick_open:
            every = ctx.dicts(state_query(ctx, scope, t_us, False))
            summary = {"started": len(every), "ended": sum(1 for r in every if r["status"] == "closed"),
                       "last_at": max((r["last_activity_at"] for r in every if r["last_activity_at"]), default=None)}
            return states(ctx, every, t_us), summary
        # the open ones only: counted by one aggregate, detailed only for sessions that could be open
        params = dict(scope.params)
        params["t"] = ctx.iso(t_us)
        summary = ctx.dicts(C.Query("sessions started", F.state_summary_sql(scope.sql), params))[0]
        near = ctx.dicts(state_query(ctx, scope, t_us, True))
        summary["last_at"] = max([x for x in [summary["last_at"]] + [r["last_activity_at"] for r in near] if x],
                                 default=None)
        return states(ctx, [r for r in near if r["status"] == "open"], t_us), summary


class StateHandler:
    @staticmethod
    def reads_beside(cmd) -> bool:  # its sessions are read beside its work units (state_result)
        return True

    @staticmethod
    def queries(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "STATE")
        t = resolve_time(cmd.at.kind, cmd.at.text, ctx.now_us, (ctx.source, cmd.at.pos, cmd.at.end))
        return state_queries(ctx, scope, t, scope.single is None)

    @staticmethod
    def run(ctx, cmd):
        if cmd.known_at is not None:
            raise AQLError("AQL0407", "AS KNOWN AT is not supported yet (planned in RFC 0004: work_units_history)",
                           source=ctx.source, pos=cmd.known_at.pos, end=cmd.known_at.end, label="planned")
        scope = scope_of(ctx, cmd.subject, "STATE")
        t = resolve_time(cmd.at.kind, cmd.at.text, ctx.now_us, (ctx.source, cmd.at.pos, cmd.at.end))
        return state_result(ctx, scope, t)


def state_result(ctx, scope, t, *, what="STATE"):
    """STATE's rows, read at once on two connections as of one snapshot (query/beside.py): the
    companion reads the sessions, the caller the work units (the longer part); a companion
    that read another snapshot has the sessions read again here."""
    t_iso = ctx.iso(t)
    with snapshot(ctx.conn):
        mark = snapshot_mark(ctx.conn)
        with beside(ctx, marked, state_at, scope, t) as other:
            units, usummary = units_at(ctx, scope, t)
            seen, sessions = other.result()
        if seen != mark:
            sessions = state_at(ctx, scope, t)
    rows, summary = sessions  # a work unit: its member sessions open at t
    out = [state_row(r, t_iso) for r in rows]
    out += [unit_state_row(u, t_iso) for u in units or ()]
    notes = list(scope.notes)
    started = summary.get("started") or 0
    ended = summary.get("ended") or 0
    open_n = sum(1 for r in rows if r["status"] == "open")
    notes.append(f"state of {scope.label} at {t_iso}: {open_n} open session(s) of {started} started by then "
                 f"({ended} ended; {max(0, started - ended - open_n)} silent for over 30 minutes, stale)")
    notes.append(units_note(scope, t_iso, units, usummary))
    if scope.unit_single and not units:
        out = [_no_state_row("work_unit", scope.unit_single, f"work unit {scope.unit_single} had no member turn "
                                                             f"started by {t_iso}")]
    if not out:
        last = summary.get("last_at")
        if scope.single:
            note = f"session {scope.single} had not started by {t_iso}"
        elif last:
            note = f"no session was active at {t_iso}; the last event before it was observed at {last}"
        else:
            note = f"no events observed by {t_iso}"
        out = [_no_state_row(*scope.subject, note)]
    return Result(STATE_COLUMNS, out, notes, kind="explanation", display=STATE_DISPLAY)


class WhatIsHandler:
    reads_beside = staticmethod(StateHandler.reads_beside)  # state_result, as STATE

    @staticmethod
    def queries(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "WHAT IS")
        return state_queries(ctx, scope, ctx.now_us, scope.single is None)

    @staticmethod
    def run(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "WHAT IS")
        res = state_result(ctx, scope, ctx.now_us)
        res.notes.append("WHAT IS … DOING NOW = STATE … AT now, most recently active first")
        return res
