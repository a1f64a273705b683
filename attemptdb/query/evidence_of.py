"""SHOW EVIDENCE FOR <id>: the events one entity rests on, and the subjects WHY, TRACE and
STATE take (an id of an attempt, session, turn, tool call, work unit, decision or event).

With INCLUDING RETRACTED the list is what the entity rested on before a Retraction: an event
retracted by `attempt retract --event` leaves the entity's `evidence` list when its
projection is rebuilt, so the retracted events of an attempt's or a tool call's own tool
calls (same session, same provider call id) are listed beside it (and counted as hidden
without INCLUDING RETRACTED, as a session's are).
"""

from . import nodes as ast
from .errors import AQLError, article
from .resolve import MAX_CANDIDATES, MIN_SHORT_HEX, one_match, planned_error, resolve_id, table_exists

_RETRACTED_OF_CALLS = ("SELECT e.event_id FROM events e JOIN tool_calls t ON e.session_id = t.session_id "
                       "AND e.tool_call_id = t.provider_call_id WHERE e.retracted = 1 AND t.tool_call_id IN ({calls})")

EVIDENCE_OF = {  # kind → SQL listing the entity's evidence event ids (one parameter: its id)
    "attempt": "SELECT value FROM json_each((SELECT evidence FROM attempts WHERE attempt_id = ?)) UNION "
               + _RETRACTED_OF_CALLS.format(calls="SELECT value FROM json_each((SELECT tool_call_ids FROM attempts "
                                                  "WHERE attempt_id = ?))"),
    "turn": "SELECT value FROM json_each((SELECT evidence FROM turns WHERE turn_id = ?))",
    "span": "SELECT value FROM json_each((SELECT evidence FROM tool_calls WHERE tool_call_id = ?)) UNION "
            + _RETRACTED_OF_CALLS.format(calls="?"),
    "work_unit": "SELECT value FROM json_each((SELECT evidence FROM work_units WHERE work_unit_id = ?))",
    "decision": "SELECT value FROM json_each((SELECT evidence FROM decisions WHERE decision_id = ?))",
    "session": "SELECT event_id FROM events WHERE session_id = ?",
    "event": "SELECT ?",
}

KIND_LABEL = {"attempt": "attempt", "turn": "turn", "span": "tool call", "work_unit": "work unit",
              "session": "session", "event": "event", "decision": "decision"}


def resolve_subject_entity(ctx, subject: ast.Subject, allowed=None) -> tuple[str, str]:
    """(kind, id) of an entity subject (session/attempt/turn/span/event/work_unit or a bare
    id). Raises AQL0409 for project/agent subjects when not allowed."""
    loc = (ctx.source, subject.pos, subject.end)
    if subject.kind in ("project", "agent"):
        raise AQLError("AQL0409", f"this statement takes an id (attempt, session, turn, tool call, event), "
                       f"not {article(subject.kind)}", source=ctx.source, pos=subject.pos, end=subject.end,
                       label="needs an id")
    kind = None if subject.kind == "ref" else subject.kind
    return resolve_id(ctx.conn, kind, subject.value, loc)


# rows SHOW lists whose ids are no subject of WHY/TRACE/STATE, opened by SHOW EVIDENCE FOR alone:
# prefix → (table, id column, human name)
LISTED_ONLY = {"cmt_": ("commits", "commit_id", "commit"), "cfl_": ("conflicts", "conflict_id", "conflict")}


def listed_only(ctx, ref: ast.Subject):
    """(SQL, params, label) of a commit or conflict id (full, or a prefix of at least
    MIN_SHORT_HEX hex digits after its prefix; a conflict's id is two unit ids joined by `+`),
    or None when `ref` names neither."""
    text = ref.value.strip().lower() if ref.kind == "ref" else ""
    found = next((p for p in LISTED_ONLY if text.startswith(p)), None)
    if found is None:
        return None
    table, col, what = LISTED_ONLY[found]
    loc = (ctx.source, ref.pos, ref.end)
    if len(text[len(found):].replace("-", "")) < MIN_SHORT_HEX:
        raise AQLError("AQL0305", f"short {what} id needs at least {MIN_SHORT_HEX} hex digits", source=loc[0],
                       pos=loc[1], end=loc[2], label="too short")
    if not table_exists(ctx.conn, table):
        raise planned_error(table, loc)
    rows = [r[0] for r in ctx.conn.execute(f"SELECT {col} FROM {table} WHERE substr({col}, 1, ?) = ? "
                                           f"ORDER BY {col} LIMIT {MAX_CANDIDATES + 1}", (len(text), text))]
    ident = rows[one_match(rows, f"{what} matches this id", f"SHOW {table.upper()} lists ids", loc)]
    return (f"SELECT value FROM json_each((SELECT evidence FROM {table} WHERE {col} = ?))", [ident],
            f"{what} {ident}")


def evidence_source(ctx, ref: ast.Subject):
    listed = listed_only(ctx, ref)
    if listed is not None:
        return listed
    kind, ident = resolve_subject_entity(ctx, ref)
    sql = EVIDENCE_OF[kind]
    return sql, [ident] * sql.count("?"), f"{KIND_LABEL[kind]} {ident}"
