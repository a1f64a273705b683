"""WHY: the evidence chain behind an inference (attempt outcome, blocked unit, failed turn)."""

from ..model import fastjson
from . import fixed_sql as F
from . import sqlgen as C
from .errors import AQLError, article
from .result import FAILED, Result, dedup, loads_list, uncertainty
from .scope import scope_of
from .state import block_of, state_at, state_queries, unit_block, unit_evidence, unit_uncertainty, units_at, units_query

# ... WHY

WHY_COLUMNS = ("subject_type", "subject_id", "inference_id", "edge_type", "from_type", "from_id", "kind", "at",
               "claim", "superseded_by", "corrected_by", "evidence", "uncertainty")
WHY_DISPLAY = ("subject_id", "inference_id", "edge_type", "from_type", "from_id", "at", "claim", "evidence",
               "uncertainty")
VALID_STATES = ("BLOCKED", "FAILED")
PLANNED_STATES = ("ACTIVE", "ABANDONED", "DONE", "COMPLETED", "WAITING_ON_HUMAN", "IDLE", "SUCCEEDED")


def _why_row(**kw):
    return tuple(kw.get(c) for c in WHY_COLUMNS)


# The applied corrections of an attempt, as their events hold them: when and from which device
# each was written (provider `attemptdb`: `attempt correct`), what it set, its note.
CORRECTIONS_SQL = (
    "SELECT c.event_id, c.corrected_at, c.correction_type, c.outcome, c.failure_class, c.note, c.note_chars, "
    "c.status, e.device_id FROM corrections c LEFT JOIN events e ON e.event_id = c.event_id "
    "WHERE c.target = ? AND c.status = 'applied' ORDER BY c.corrected_at, c.event_id")
INFERRED_SQL = "SELECT inferred_failure_class FROM attempts WHERE attempt_id = ?"
NOTE_SHOWN = 120
"""Characters of a correction's note quoted in a WHY claim."""


def _corrections(ctx, ident: str, a: dict) -> tuple:
    """(the correction that set the outcome, the one that set the note): the latest applied
    correction of each kind, else the attempt's corrected_by alone."""
    rows = ctx.dicts(C.Query("corrections", CORRECTIONS_SQL, (ident,)))
    by = a.get("corrected_by")
    if by not in {r["event_id"] for r in rows}:
        rows = [{"event_id": by, "corrected_at": a.get("corrected_at"), "outcome": a.get("outcome")}]
    outcome = next((r for r in reversed(rows) if r.get("outcome") or r.get("failure_class")), None)
    note = next((r for r in reversed(rows) if r.get("note") or r.get("note_chars")), None)
    return outcome, note


def _who(c: dict) -> str:
    where = f" from device {c['device_id']}" if c.get("device_id") else ""
    when = f" at {c['corrected_at']}" if c.get("corrected_at") else ""
    return f"({c['event_id']}, written with `attempt correct`{where}{when})"


def _note_text(c: dict) -> str:
    if c.get("note"):
        note = c["note"] if len(c["note"]) <= NOTE_SHOWN else c["note"][:NOTE_SHOWN - 1] + "…"
        return f"the note “{note}”"
    return f"a note of {c['note_chars']} characters (its text is not stored)"


def _correction_text(ctx, ident: str, a: dict, out_c, note_c) -> str:
    """The sentence naming the human corrections an attempt carries: who wrote each (as its
    event holds it), when, what it changed (inferred → now), its note; and what was inferred."""
    inferred, now = a.get("inferred_outcome"), a.get("outcome")
    parts = []
    if out_c:
        rows = ctx.dicts(C.Query("inferred class", INFERRED_SQL, (ident,)))
        was_cls, now_cls = (rows[0]["inferred_failure_class"] if rows else None), a.get("failure_class")
        changed = [f"outcome {inferred} → {now}"] if inferred and inferred != now else []
        if was_cls != now_cls:
            changed.append(f"failure class {was_cls or 'none'} → {now_cls or 'none'}")
        text = f"A human correction {_who(out_c)} " + (
            "changed " + " and ".join(changed) if changed else f"confirmed the inferred outcome {now}")
        if note_c is out_c:
            text += f", with {_note_text(note_c)}"
        parts.append(text)
    if note_c and note_c is not out_c:
        parts.append(f"A human correction {_who(note_c)} added {_note_text(note_c)}"
                     + ("" if out_c else ", leaving the outcome as inferred"))
    return ". ".join(parts) + f"; the projection inferred {inferred or now}"


def _evidence_note(ident: str, own: list, evidence: list) -> str:
    """The note counting the row's evidence: the same number as the row's list."""
    from ..render.termtable import plural
    extra = [e for e in evidence if e not in own]
    counted = plural(len(evidence), "evidence event")
    if extra:
        return (f"{counted} for attempt {ident}: its own {len(own)} (SHOW EVIDENCE FOR "
                f"{ident} lists them) and the correction{'s' if len(extra) > 1 else ''} {', '.join(extra)}")
    return f"{counted} for attempt {ident}; SHOW EVIDENCE FOR {ident} lists them"


class WhyHandler:
    @staticmethod
    def _check(ctx, cmd):
        st = cmd.state
        if st not in VALID_STATES:
            if st in PLANNED_STATES:
                raise AQLError("AQL0407", f"WHY … STATUS {st} is not supported yet (planned); supported: BLOCKED "
                               "(session, project, work unit) and FAILED (attempt)", source=ctx.source, pos=cmd.state_pos,
                               end=cmd.state_end, label="planned")
            raise AQLError("AQL0401", "unknown state name; valid: BLOCKED (session, project, work unit) and "
                           "FAILED (attempt)", source=ctx.source, pos=cmd.state_pos, end=cmd.state_end,
                           label="unknown state")
        s = cmd.subject
        if s.kind == "work_unit" or (s.kind == "ref" and s.value.lower().startswith("wu_")):
            if st != "BLOCKED":
                raise AQLError("AQL0411", "a work unit answers STATUS BLOCKED; FAILED applies to an attempt",
                               source=ctx.source, pos=cmd.state_pos, end=cmd.state_end, label="not for a work unit")
            return "BLOCKED_UNIT", C.resolve_subject_entity(ctx, s)[1]
        if st == "FAILED":
            if s.kind in ("project", "agent", "session"):  # these answer BLOCKED
                raise AQLError("AQL0411", f"FAILED applies to an attempt; for {article(s.kind)} ask STATUS BLOCKED",
                               source=ctx.source, pos=s.pos, end=s.end, label="not an attempt")
            kind, ident = (s.kind, None) if s.kind in ("turn", "span", "event") else C.resolve_subject_entity(ctx, s)
            if kind != "attempt":
                raise AQLError("AQL0411", f"FAILED applies to an attempt, not {article(C.KIND_LABEL[kind])}"
                               + ("; for a session ask STATUS BLOCKED" if kind == "session" else ""),
                               source=ctx.source, pos=s.pos, end=s.end, label="not an attempt")
            return "FAILED", ident
        kind = s.kind if s.kind in ("turn", "span", "event", "attempt") else None
        if s.kind == "ref":
            kind = C.resolve_subject_entity(ctx, s)[0]
        if kind not in (None, "session"):
            raise AQLError("AQL0411", "BLOCKED applies to a session, a project or a work unit, not "
                           + article(C.KIND_LABEL[kind])
                           + ("; for an attempt ask STATUS FAILED" if kind == "attempt" else ""),
                           source=ctx.source, pos=s.pos, end=s.end, label="not blockable")
        return "BLOCKED", None

    @classmethod
    def queries(cls, ctx, cmd):
        st, ident = cls._check(ctx, cmd)
        if st == "FAILED":
            return [C.Query("attempt", F.ATTEMPT_SQL, (ident,)),
                    C.Query("failing event", F.FAILING_EVENT_SQL, ("[]",)),
                    C.Query("corrections", CORRECTIONS_SQL, (ident,)),
                    C.Query("inferred class", INFERRED_SQL, (ident,))]
        scope = scope_of(ctx, cmd.subject, "WHY")
        if st == "BLOCKED_UNIT":
            return [units_query(ctx, scope, ctx.now_us)]
        return state_queries(ctx, scope, ctx.now_us, scope.single is None)

    @classmethod
    def run(cls, ctx, cmd):
        st, ident = cls._check(ctx, cmd)
        if st == "FAILED":
            return cls._failed(ctx, ident)
        if st == "BLOCKED_UNIT":
            return cls._blocked_unit(ctx, scope_of(ctx, cmd.subject, "WHY"))
        return cls._blocked(ctx, scope_of(ctx, cmd.subject, "WHY"))

    @staticmethod
    def _blocked_unit(ctx, scope):
        """WHY wu_… STATUS BLOCKED: the unit's blocking signal (the pending wait that makes its
        phase blocked), else its last two attempts failing with the same class; a unit that is
        neither answers state_mismatch with its phase and status, and invents nothing."""
        wu = scope.unit_single
        now_iso = ctx.iso(ctx.now_us)
        found = ctx.dicts(units_query(ctx, scope, ctx.now_us))
        notes = [f"judged at {now_iso} by the rules of the work_units view; SHOW EVIDENCE FOR {wu} lists every "
                 "event the unit was built from"]
        if not found:
            note = f"work unit {wu} has no member turn started by {now_iso}"
            return Result(WHY_COLUMNS, [_why_row(subject_type="work_unit", subject_id=wu, claim=note, evidence=[],
                                                 uncertainty=uncertainty(0.0, "insufficient_evidence", note))],
                          notes, kind="explanation", display=WHY_DISPLAY)
        u = found[0]
        block = unit_block(u)
        out = []
        if block and block[0] == "signal":
            g = ctx.conn.execute("SELECT confidence FROM signals WHERE event_id = ?", (u["blocking_signal"],)).fetchone()
            conf = min(g[0] if g and g[0] is not None else 0.65, u.get("confidence") or 0.7)
            out.append(_why_row(subject_type="work_unit", subject_id=wu, inference_id=u["blocking_signal"],
                                edge_type="blocked", from_type="event", from_id=u["blocking_signal"],
                                kind=u.get("signal_kind"), at=u.get("signal_raised_at"),
                                claim=f"work unit {wu} is blocked: {u['phase_reason']}", evidence=block[2],
                                uncertainty=uncertainty(conf, "heuristic", unit_uncertainty(u, now_iso)["note"])))
        elif block:
            for att, outc, fev, sev in (("last_attempt", "last_outcome", "last_fail_event", "last_first_event"),
                                        ("previous_attempt", "previous_outcome", "previous_fail_event",
                                         "previous_first_event")):
                ev = dedup([u.get(fev) or u.get(sev)])
                out.append(_why_row(subject_type="work_unit", subject_id=wu, inference_id=u.get(att),
                                    edge_type="failed", from_type="attempt", from_id=u.get(att), kind=u.get(outc),
                                    at=u.get("updated_at"), claim=f"work unit {wu} is blocked: {block[1]}",
                                    evidence=ev, uncertainty=uncertainty(min(0.7, u.get("confidence") or 0.7),
                                                                         "heuristic", "repeated failure of the same "
                                                                         "class within the unit")))
        else:
            claim = (f"work unit {wu} is not blocked: phase {u['phase']} ({u['phase_reason']}); status "
                     f"{u['status']} ({u['status_reason']})")
            out.append(_why_row(subject_type="work_unit", subject_id=wu, claim=claim, evidence=unit_evidence(u),
                                uncertainty=unit_uncertainty(u, now_iso, "state_mismatch")))
        return Result(WHY_COLUMNS, out, notes, kind="explanation", display=WHY_DISPLAY)

    @staticmethod
    def _failed(ctx, ident):
        a = ctx.dicts(C.Query("attempt", F.ATTEMPT_SQL, (ident,)))[0]
        ev = dedup(loads_list(a["evidence"]))
        corrected = a.get("corrected_by")
        out_c, note_c = _corrections(ctx, ident, a) if corrected else (None, None)
        said = _correction_text(ctx, ident, a, out_c, note_c) if corrected else ""
        evidence = dedup(ev + [c["event_id"] for c in (out_c, note_c) if c] + [corrected])
        count = _evidence_note(ident, ev, evidence)
        if a["outcome"] not in FAILED:
            note = f"attempt {ident} holds outcome {a['outcome']}, not failed"
            if corrected:
                note += f" (set by the correction {corrected}; inferred {a.get('inferred_outcome') or 'unknown'})"
            claim = f"attempt {ident} did not fail: its outcome is {a['outcome']}"
            if corrected:
                claim += f". {said}"
            row = _why_row(subject_type="attempt", subject_id=ident, claim=claim, corrected_by=corrected,
                           at=a.get("corrected_at") if corrected else None, evidence=evidence,
                           uncertainty=uncertainty(a["confidence"], "state_mismatch", note))
            return Result(WHY_COLUMNS, [row], [count], kind="explanation", display=WHY_DISPLAY)
        fail = ctx.dicts(C.Query("failing event", F.FAILING_EVENT_SQL, (fastjson.dumps(ev),)))
        fe = fail[0] if fail else {}
        cls_text = a.get("failure_class") or "an unclassified failure"
        claim = (f"attempt {ident} (turn {a.get('turn_index')} #{a.get('attempt_index')}: {a.get('approach') or 'unknown approach'}) "
                 f"failed with {cls_text}")
        claim += (f"; it was superseded by {a['superseded_by']}" if a.get("superseded_by")
                  else "; no later attempt retried the same paths")
        if fe:
            claim += f". The failing event is {fe['event_id']} ({fe['kind']}{', ' + fe['tool_name'] if fe.get('tool_name') else ''})"
        if corrected:
            claim += f". {said}"
        reason = "corrected" if corrected else ("deterministic" if (a["confidence"] or 0) >= 1.0 else "heuristic")
        row = _why_row(subject_type="attempt", subject_id=ident, inference_id=ident, edge_type="failed",
                       from_type="event" if fe else None, from_id=fe.get("event_id"), kind=fe.get("kind"),
                       at=fe.get("observed_at") or a.get("ended_at"), claim=claim, superseded_by=a.get("superseded_by"),
                       corrected_by=corrected, evidence=evidence,
                       uncertainty=uncertainty(a["confidence"], reason, f"outcome {a['outcome']}"))
        return Result(WHY_COLUMNS, [row], [count], kind="explanation", display=WHY_DISPLAY)

    @staticmethod
    def _blocked(ctx, scope):
        now_iso = ctx.iso(ctx.now_us)
        rows, summary = state_at(ctx, scope, ctx.now_us)
        out = []
        for r in rows:
            block = block_of(r)
            if not block:
                continue
            sid = r["session_id"]
            if block[0] == "signal":
                out.append(_why_row(subject_type="session", subject_id=sid, inference_id=r["signal_event_id"],
                                    edge_type="blocked", from_type="event", from_id=r["signal_event_id"],
                                    kind=r.get("signal_kind"), at=r.get("signal_raised_at"),
                                    claim=f"session {sid} is {block[1]}", evidence=block[3],
                                    uncertainty=uncertainty(block[2], "heuristic",
                                                            f"session is {r['status']}; {r.get('coverage') or 'unknown'} coverage")))
            else:
                for att, outc, evk in (("last_attempt", "last_attempt_outcome", "last_attempt_evidence"),
                                       ("previous_attempt", "previous_attempt_outcome", "previous_attempt_evidence")):
                    out.append(_why_row(subject_type="session", subject_id=sid, inference_id=r[att], edge_type="failed",
                                        from_type="attempt", from_id=r[att], kind=r[outc], at=r[att + "_ended_at"],
                                        claim=f"session {sid} is blocked: {block[1]}",
                                        evidence=loads_list(r[evk]),
                                        uncertainty=uncertainty(block[2], "heuristic",
                                                                "repeated failure of the same class")))
        notes = list(scope.notes)
        notes.append(f"{len({r[1] for r in out})} blocked session(s) of {len(rows)} examined for {scope.label}; "
                     "blocked = an uncleared permission request or input wait, or the last two attempts failing "
                     "with the same class")
        units, _ = units_at(ctx, scope, ctx.now_us)
        blocked_units = [u["work_unit_id"] for u in units or () if unit_block(u)]
        if blocked_units:
            notes.append(f"blocked work unit(s): {', '.join(blocked_units[:10])}"
                         + (f" and {len(blocked_units) - 10} more" if len(blocked_units) > 10 else "")
                         + "; WHY <work unit id> STATUS BLOCKED explains one")
        if not out:
            if rows:
                if scope.single:
                    r = rows[0]
                    claim = (f"session {r['session_id']} is not blocked: it is {r['status']}; last event at "
                             f"{r.get('last_activity_at')}; last attempt outcome: {r.get('last_attempt_outcome') or 'none'}")
                    ev = dedup([r.get("last_event_id")])
                else:
                    claim = f"no blocked session among the {len(rows)} open session(s) of {scope.label}"
                    ev = dedup([r.get("last_event_id") for r in rows])
                out.append(_why_row(subject_type="session" if scope.single else "project",
                                    subject_id=scope.single or scope.label, claim=claim, evidence=ev,
                                    uncertainty=uncertainty(0.8 if scope.single else 0.7, "state_mismatch",
                                                            "the subject does not hold BLOCKED now")))
            else:
                last = summary.get("last_at")
                note = (f"no session of {scope.label} is open now ({now_iso}); the last event was observed at {last}"
                        if last else f"no events observed for {scope.label}")
                out.append(_why_row(subject_type="session" if scope.single else "project",
                                    subject_id=scope.single or scope.label, claim=note, evidence=[],
                                    uncertainty=uncertainty(0.0, "insufficient_evidence", note)))
        return Result(WHY_COLUMNS, out, notes, kind="explanation", display=WHY_DISPLAY)
