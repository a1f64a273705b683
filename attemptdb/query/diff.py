"""DIFF: what changed between two times, for sessions and work units."""



from ..model import fastjson
from .errors import AQLError
from .resolve import resolve_time
from .result import Result, dedup, uncertainty
from .scope import Scope, scope_of
from .state import (
    NO_UNITS_NOTE,
    STATE_COLUMNS,
    state_at,
    state_queries,
    state_query,
    state_row,
    states,
    unit_state_row,
    units_at,
    units_query,
)

# ... DIFF

DIFF_COLUMNS = ("subject_type", "subject_id", "session_id", "provider", "change", "field", "before", "after",
                "confidence", "evidence", "uncertainty")
DIFF_FIELDS = ("status", "current_turn", "turn_status", "in_flight_tool_calls", "last_attempt", "last_attempt_outcome",
               "last_failure_class", "blocked", "attempts", "failed")


def _summary(d: dict | None) -> str:
    if d is None:
        return "absent"
    s = f"{d['status']}; turn {d['turn_index'] if d['turn_index'] is not None else '-'}"
    if d["last_attempt"]:
        s += f"; last attempt {d['last_attempt_outcome']}"
    if d["blocked"]:
        s += "; blocked"
    return s


def _text_value(v):
    if v is None:
        return None
    if isinstance(v, list):
        return fastjson.dumps(v)
    return str(v)


class DiffHandler:
    @staticmethod
    def _args(ctx, cmd):
        scope = scope_of(ctx, cmd.subject, "DIFF STATE") if cmd.subject is not None else Scope()
        s = cmd.subject
        if s is not None and s.kind == "project" and s.value is None and cmd.t1.kind == "string":
            try:  # `DIFF STATE project 'acme/shop' now`: the name was read as the first timestamp
                resolve_time("string", cmd.t1.text, ctx.now_us)
            except AQLError:
                raise AQLError("AQL0202", "DIFF STATE needs two timestamps after the project name", source=ctx.source, pos=cmd.t2.end, end=cmd.t2.end + 1,
                               label="expected a second timestamp") from None
        t1 = resolve_time(cmd.t1.kind, cmd.t1.text, ctx.now_us, (ctx.source, cmd.t1.pos, cmd.t1.end))
        t2 = resolve_time(cmd.t2.kind, cmd.t2.text, ctx.now_us, (ctx.source, cmd.t2.pos, cmd.t2.end))
        if t1 >= t2:
            raise AQLError("AQL0403", "DIFF STATE needs the earlier timestamp first (t1 < t2)", source=ctx.source,
                           pos=cmd.t1.pos, end=cmd.t2.end, label="t1 is not before t2")
        return scope, t1, t2

    @classmethod
    def queries(cls, ctx, cmd):
        scope, t1, t2 = cls._args(ctx, cmd)
        return state_queries(ctx, scope, t1, scope.single is None) + state_queries(ctx, scope, t2, scope.single is None)

    @classmethod
    def run(cls, ctx, cmd):
        scope, t1, t2 = cls._args(ctx, cmd)
        i1, i2 = ctx.iso(t1), ctx.iso(t2)
        r1, _ = state_at(ctx, scope, t1)
        r2, _ = state_at(ctx, scope, t2)
        a = {r["session_id"]: dict(zip(STATE_COLUMNS, state_row(r, i1))) for r in r1}
        b = {r["session_id"]: dict(zip(STATE_COLUMNS, state_row(r, i2))) for r in r2}
        open1 = {r["session_id"] for r in r1 if r["status"] == "open"}
        open2 = {r["session_id"] for r in r2 if r["status"] == "open"}
        missing_b = [s for s in a if s not in b]
        missing_a = [s for s in b if s not in a]
        for missing, t, iso_t, into in ((missing_b, t2, i2, b), (missing_a, t1, i1, a)):
            if missing:
                names = {f"x{i}": s for i, s in enumerate(missing)}
                sc = Scope(f" AND s.session_id IN ({', '.join(':' + k for k in names)})", names, scope.label)
                for r in states(ctx, ctx.dicts(state_query(ctx, sc, t, False)), t):
                    into[r["session_id"]] = dict(zip(STATE_COLUMNS, state_row(r, iso_t)))
        rows = []
        order = list(a) + [s for s in b if s not in a]
        for sid in order:
            x, y = a.get(sid), b.get(sid)
            in1, in2 = sid in open1 or (scope.single and x), sid in open2 or (scope.single and y)
            ux = x["uncertainty"]["confidence"] if x else None
            uy = y["uncertainty"]["confidence"] if y else None
            conf = min(c for c in (ux, uy) if c is not None) if (ux is not None or uy is not None) else None
            ev = dedup((x["evidence"] if x else []) + (y["evidence"] if y else []))
            provider = (x or y)["provider"]
            unc = uncertainty(conf, "heuristic", f"STATE at {i1} compared with STATE at {i2}")
            if in1 and not in2:
                rows.append(("session", sid, sid, provider, "removed", "presence", _summary(x), _summary(y), conf, ev, unc))
            elif in2 and not in1:
                rows.append(("session", sid, sid, provider, "added", "presence", _summary(x), _summary(y), conf, ev, unc))
            elif x and y:
                for f in DIFF_FIELDS:
                    if x[f] != y[f]:
                        rows.append(("session", sid, sid, provider, "changed", f, _text_value(x[f]), _text_value(y[f]),
                                     conf, ev, unc))
        notes = list(scope.notes) + [f"DIFF STATE of {scope.label}: {len(open1)} open session(s) at {i1}, "
                                     f"{len(open2)} at {i2}; one row per changed field"]
        unit_rows, unit_note = cls._units(ctx, scope, t1, t2)
        rows += unit_rows
        notes.append(unit_note)
        if not rows:
            if not a and not b and not unit_rows:
                note = f"no session of {scope.label} was active at {i1} or at {i2}"
                rows.append((*scope.subject, None, None, None, None, None, None, None, [],
                             uncertainty(0.0, "insufficient_evidence", note)))
            else:
                notes.append(f"no state change for {scope.label} between {i1} and {i2}")
        return Result(DIFF_COLUMNS, rows, notes, kind="explanation")


    @staticmethod
    def _units(ctx, scope, t1, t2):
        """DIFF rows of the work units open at t1 or t2: a unit listed at one time only is added
        or removed (its state at the other time, judged there, is the other side); a unit listed
        at both has one row per changed field."""
        i1, i2 = ctx.iso(t1), ctx.iso(t2)
        u1, s1 = units_at(ctx, scope, t1)
        u2, s2 = units_at(ctx, scope, t2)
        if u1 is None:
            return [], NO_UNITS_NOTE
        a = {u["work_unit_id"]: u for u in u1}
        b = {u["work_unit_id"]: u for u in u2}
        # open at each time: a single session's or unit's units are all listed, whatever their
        # status (units_at), and one that completed in between is still removed, as project-wide
        listed_a = {w for w, u in a.items() if u["status"] not in CLOSED}
        listed_b = {w for w, u in b.items() if u["status"] not in CLOSED}
        for missing, t, into in (([w for w in a if w not in b], t2, b), ([w for w in b if w not in a], t1, a)):
            if missing:
                for u in ctx.dicts(units_query(ctx, scope, t, ids=missing)):
                    into[u["work_unit_id"]] = u
        rows = []
        for wu in list(a) + [w for w in b if w not in a]:
            x = dict(zip(STATE_COLUMNS, unit_state_row(a[wu], i1))) if wu in a else None
            y = dict(zip(STATE_COLUMNS, unit_state_row(b[wu], i2))) if wu in b else None
            for d in (x, y):
                if d is not None:
                    d["session_count"] = len(d["sessions"])
            confs = [d["uncertainty"]["confidence"] for d in (x, y) if d and d["uncertainty"]["confidence"] is not None]
            conf = min(confs) if confs else None
            ev = dedup((x["evidence"] if x else []) + (y["evidence"] if y else []))
            provider = (y or x)["provider"]
            unc = uncertainty(conf, "heuristic", f"work unit judged at {i1} and at {i2} (tier1-v5 heuristics, capped "
                                                 f"at 0.7)")
            in1, in2 = wu in listed_a, wu in listed_b
            if in1 and not in2:
                rows.append(("work_unit", wu, None, provider, "removed", "presence", _unit_summary(x), _unit_summary(y),
                             conf, ev, unc))
            elif in2 and not in1:
                rows.append(("work_unit", wu, None, provider, "added", "presence", _unit_summary(x), _unit_summary(y),
                             conf, ev, unc))
            elif in1 and in2:  # (a unit closed at both times is no change of the state)
                for f in DIFF_UNIT_FIELDS:
                    if x[f] != y[f]:
                        rows.append(("work_unit", wu, None, provider, "changed", f, _text_value(x[f]),
                                     _text_value(y[f]), conf, ev, unc))
        note = (f"{len(listed_a)} work unit(s) of {scope.label} open at {i1}, {len(listed_b)} at {i2}; a unit that "
                "completed or was abandoned in between is removed, with its state at the later time")
        return rows, note


DIFF_UNIT_FIELDS = ("phase", "status", "attempts", "failed", "session_count", "last_attempt", "blocked")
CLOSED = ("completed", "abandoned")


def _unit_summary(d: dict | None) -> str:
    if d is None:
        return "absent"
    return f"phase {d['phase']}; status {d['status']}; {d['attempts']} attempt(s), {d['failed']} failed"
