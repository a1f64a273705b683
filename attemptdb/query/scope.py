"""The scope of STATE, DIFF and WHAT IS: which sessions or units a subject names."""



from . import sqlgen as C
from .errors import AQLError, article
from .resolve import project_of_directory, resolve_agent, resolve_project, table_exists

# ... subject scoping shared by STATE, WHY, DIFF, WHAT IS

class Scope:
    """Which sessions and work units a statement looks at: SQL on the sessions (alias s) and on
    the units' member turns (alias m of unit_turns), their named params, and a label."""

    def __init__(self, sql="", params=None, label="all projects", single=None, notes=None, units="",
                 unit_single=None, subject=None):
        self.sql = sql
        self.params = params or {}
        self.label = label
        self.single = single       # session id when the subject is one session
        self.notes = notes or []
        self.units = units         # condition on a unit's member turns (m)
        self.unit_single = unit_single  # work unit id when the subject is one unit
        # (subject_type, subject_id) of the row that says nothing matched: the subject as written
        self.subject = subject or (("session", single) if single else ("work_unit", unit_single) if unit_single
                                   else ("project", label))


def scope_of(ctx, subject, statement: str) -> Scope:
    loc = (ctx.source, subject.pos, subject.end)
    if subject.kind == "project":
        if subject.value is None:
            here = project_of_directory(ctx.conn, ctx.cwd)
            if here is None:
                return Scope(label="all projects",
                             notes=["project: all projects (the current directory is not a captured project)"])
            return Scope(" AND s.project_id = :p0", {"p0": here[0]}, f"project {here[1]}",
                         units=" AND m.project_id = :p0")
        projects = resolve_project(ctx.conn, subject.value, loc)
        names = {f"p{i}": pid for i, (pid, _) in enumerate(projects)}
        label = "project " + ", ".join(sorted({n for _, n in projects}))
        marks = ", ".join(":" + k for k in names)
        return Scope(f" AND s.project_id IN ({marks})", names, label, units=f" AND m.project_id IN ({marks})")
    if subject.kind == "agent":
        kind, value = resolve_agent(ctx.conn, subject.value, loc)
        if kind == "agent":
            return Scope(" AND EXISTS (SELECT 1 FROM json_each(s.agents) WHERE value = :agent)", {"agent": value},
                         f"agent {value}", units=" AND m.session_id IN (SELECT g.session_id FROM main.session_agents g "
                                                 "WHERE g.agent_id = :agent)", subject=("agent", value))
        return Scope(" AND s.provider = :provider", {"provider": value}, f"agent {value}",
                     units=" AND m.provider = :provider", subject=("agent", value))
    if subject.kind == "work_unit" or (subject.kind == "ref" and subject.value.lower().startswith("wu_")):
        _, wu = C.resolve_subject_entity(ctx, subject)
        return Scope(" AND s.session_id IN (SELECT u.session_id FROM unit_turns u WHERE u.work_unit_id = :wu)",
                     {"wu": wu}, f"work unit {wu}", units=" AND m.work_unit_id = :wu", unit_single=wu)
    kind, ident = C.resolve_subject_entity(ctx, subject)
    if kind != "session":
        if statement in ("STATE", "DIFF STATE"):
            raise AQLError("AQL0409", f"{statement} takes a project, a session, an agent or a work unit, "
                           f"not {article(C.KIND_LABEL[kind])}", source=ctx.source, pos=subject.pos, end=subject.end,
                           label="not a state subject")
        turn = _turn_of(ctx, kind, ident)
        ident = _session_of(ctx, kind, ident)
        if turn is not None:  # the session, and the one unit holding the attempt, turn or call
            return Scope(" AND s.session_id = :session", {"session": ident, "turn": turn}, f"session {ident}",
                         single=ident, units=" AND m.work_unit_id IN (SELECT u.work_unit_id FROM main.unit_turns u "
                                             "WHERE u.turn_id = :turn AND u.started_at <= :t)")
    return Scope(" AND s.session_id = :session", {"session": ident}, f"session {ident}", single=ident,
                 units=" AND m.work_unit_id IN (SELECT u.work_unit_id FROM main.unit_turns u "
                       "WHERE u.session_id = :session AND u.started_at <= :t)")


_TURN_OF = {"attempt": "SELECT turn_id FROM attempt_facts WHERE attempt_id = ?",
            "turn": "SELECT ?",
            "span": "SELECT turn_id FROM tool_call_facts WHERE tool_call_id = ?"}


def _turn_of(ctx, kind, ident):
    if kind not in _TURN_OF or not table_exists(ctx.conn, "attempt_facts"):
        return None
    row = ctx.conn.execute(_TURN_OF[kind], (ident,)).fetchone()
    return row[0] if row else None


_SESSION_OF = {"attempt": "SELECT session_id FROM attempts WHERE attempt_id = ?",
               "turn": "SELECT session_id FROM turns WHERE turn_id = ?",
               "span": "SELECT session_id FROM tool_calls WHERE tool_call_id = ?",
               "event": "SELECT session_id FROM events WHERE event_id = ?",
               "decision": "SELECT session_id FROM decisions WHERE decision_id = ?"}


def _session_of(ctx, kind, ident):
    row = ctx.conn.execute(_SESSION_OF[kind], (ident,)).fetchone()
    return row[0]
