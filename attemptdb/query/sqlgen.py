"""AST → SQLite SQL: a small table-driven generator (sqlglot style).

Invariants:
- All SQL an AttemptQL statement runs is produced here, from tables (`TARGETS`, `FILTERS`,
  `_PRINT`, `FUNCTIONS`) and parameterised builders; values typed by the user are always bound
  parameters, never spliced into the text. Column names are checked against the live schema
  and printed quoted.
- A WHERE predicate is exactly one SQL expression printed from its parse tree, wrapped in
  parentheses and AND-ed with the statement's own conditions (the hidden-retracted filter
  among them), so it cannot widen what SHOW returns. No subqueries, no aggregates, only the
  scalar functions in `FUNCTIONS`.
- Every SHOW row carries `evidence` (event ids) and `uncertainty`
  (`{"confidence", "reason", "note"}`, a JSON object built in SQL).
"""

from ..errors import did_you_mean
from . import nodes as ast
from .errors import AQLError
from .evidence_of import KIND_LABEL, evidence_source, resolve_subject_entity
from .for_keys import check_filters
from .resolve import (
    PLANNED_TABLES,
    planned_error,
    providers,
    resolve_agent,
    resolve_id,
    resolve_project,
    resolve_time,
    table_exists,
)
from .sqltext import skip_space

__all__ = ["KIND_LABEL", "resolve_subject_entity"]  # read by why, trace, scope as sqlgen's (C.…)

DEFAULT_LIMIT = 100
MAX_LIMIT = 1_000_000
DEFAULT_DEPTH = 5
MAX_DEPTH = 100
OPEN_WINDOW_US = 30 * 60 * 1_000_000
WAIT_WINDOW_US = 12 * 3600 * 1_000_000

CAUSAL_EDGE_KINDS = ("caused", "triggered", "blocked", "resolved", "superseded", "contradicted", "handed_off")
TOOL_CATEGORIES = ("shell", "file_read", "file_write", "file_edit", "search", "web", "mcp", "subagent",
                   "plan", "notebook", "other")

# closed vocabularies a FOR filter value is checked against (spec/catalog-columns.json holds
# the same lists; tests/test_catalog.py keeps them equal)
VOCAB = {
    ("attempts", "outcome"): ("succeeded", "failed", "abandoned", "superseded", "in_progress", "unknown"),
    ("sessions", "state"): ("open", "stale", "closed"),
    ("turns", "status"): ("completed", "failed", "in_progress", "unknown"),
    ("tool_calls", "outcome_status"): ("success", "failure", "denied", "cancelled", "unknown"),
    ("work_units", "phase"): ("explore", "plan", "implement", "debug", "verify", "review", "deliver", "blocked"),
    ("work_units", "status"): ("open", "completed", "abandoned", "unknown"),
    ("corrections", "status"): ("applied", "target_not_found", "target_retracted", "invalid", "content_unavailable"),
    ("signals", "kind"): ("permission_requested", "permission_denied", "notification"),
}

LIST_COLUMNS = frozenset({
    "evidence", "paths", "agents", "tool_call_ids", "commit_shas", "shared_paths", "sessions",
    "turns", "attempts", "actors", "alternatives", "in_flight_tool_call_ids",
})


class Query:
    """One SQL statement with its bound parameters (named `:p1…` or positional `?`)."""

    __slots__ = ("purpose", "sql", "params")

    def __init__(self, purpose: str, sql: str, params=()):
        self.purpose = purpose
        self.sql = sql
        self.params = params


class Target:
    """One SHOW target: its table, id column, primary time column (SINCE/UNTIL), default
    ORDER BY items, whether the table holds retracted rows, the columns a terminal shows, a
    fixed condition (FAILED/SUPERSEDED) and the note that says what the table is."""

    __slots__ = ("name", "table", "key", "time", "order", "retracted", "display", "condition", "note")

    def __init__(self, name, table, key, time, order, retracted, display, condition=None, note=""):
        self.name, self.table, self.key, self.time, self.order = name, table, key, time, order
        self.retracted, self.display, self.condition, self.note = retracted, display, condition, note


_ATT_DISPLAY = ("attempt_id", "outcome", "failure_class", "approach", "superseded_by", "paths",
                "started_at", "evidence", "uncertainty")

TARGETS = {
    "attempts": Target("ATTEMPTS", "attempts", "attempt_id", "started_at",
                       (("started_at", "DESC"), ("turn_index", "DESC"), ("attempt_index", "DESC"), ("attempt_id", "ASC")),
                       True, _ATT_DISPLAY,
                       note="attempts are tier-1 inferences from tool calls; SHOW EVIDENCE FOR <attempt_id> opens one"),
    "failed_attempts": Target("FAILED ATTEMPTS", "attempts", "attempt_id", "started_at",
                              (("started_at", "DESC"), ("turn_index", "DESC"), ("attempt_index", "DESC"), ("attempt_id", "ASC")),
                              True, _ATT_DISPLAY, condition="{a}.outcome = 'failed'",
                              note="outcome = 'failed' only: superseded attempts are retries (SHOW SUPERSEDED ATTEMPTS)"),
    "superseded_attempts": Target("SUPERSEDED ATTEMPTS", "attempts", "attempt_id", "started_at",
                                  (("started_at", "DESC"), ("turn_index", "DESC"), ("attempt_index", "DESC"), ("attempt_id", "ASC")),
                                  True, ("attempt_id", "outcome", "superseded_by", "successor_outcome", "paths",
                                         "started_at", "evidence", "uncertainty"),
                                  condition="{a}.superseded_by IS NOT NULL",
                                  note="each row is an attempt a later one replaced, with the successor's outcome"),
    "sessions": Target("SESSIONS", "sessions", "session_id", "started_at",
                       (("started_at", "DESC"), ("session_id", "ASC")), True,
                       ("session_id", "provider", "project_name", "state", "started_at", "last_event_at",
                        "turn_count", "tool_call_count", "failure_count", "coverage", "evidence", "uncertainty")),
    "turns": Target("TURNS", "turns", "turn_id", "started_at",
                    (("started_at", "DESC"), ("session_id", "ASC"), ("turn_index", "DESC")), True,
                    ("turn_id", "session_id", "turn_index", "status", "started_at", "tool_call_count",
                     "prompt_chars", "evidence", "uncertainty")),
    "tool_calls": Target("TOOL CALLS", "tool_calls", "tool_call_id", "started_at",
                         (("started_at", "DESC NULLS LAST"), ("tool_call_id", "ASC")), True,
                         ("tool_call_id", "tool_name", "tool_category", "outcome_status", "duration_ms",
                          "path_relative", "started_at", "evidence", "uncertainty")),
    "handoffs": Target("HANDOFFS", "handoffs", "to_session", "handoff_at",
                       (("handoff_at", "DESC"), ("to_session", "ASC"), ("from_session", "ASC")), False,
                       ("from_session", "to_session", "from_provider", "to_provider", "handoff_at", "gap_ms",
                        "shared_paths", "evidence", "uncertainty"),
                       note="read gap_ms and shared_paths before believing a handoff: they are its evidence"),
    "edges": Target("EDGES", "edges", "ordinal", None, (("ordinal", "ASC"),), False,
                    ("ordinal", "edge_kind", "from_type", "from_id", "to_type", "to_id", "edge_source",
                     "evidence", "uncertainty")),
    "signals": Target("SIGNALS", "signals", "event_id", "raised_at", (("raised_at", "DESC"), ("event_id", "ASC")), False,
                      ("session_id", "event_id", "kind", "raised_at", "pending", "blocking", "cleared_at",
                       "evidence", "uncertainty")),
    "commits": Target("COMMITS", "commits", "commit_id", "committed_at",
                      (("committed_at", "DESC"), ("commit_id", "ASC")), False,
                      ("commit_id", "sha", "branch", "linkage", "committed_at", "evidence", "uncertainty"),
                      note="linkage end_event is the call's own report; next_head is weaker; unresolved has no sha"),
    "corrections": Target("CORRECTIONS", "corrections", "event_id", "corrected_at",
                          (("corrected_at", "DESC"), ("event_id", "ASC")), False,
                          ("event_id", "corrected_at", "correction_type", "target", "status", "evidence", "uncertainty")),
    "retractions": Target("RETRACTIONS", "retractions", "event_id", "retracted_at",
                          (("retracted_at", "DESC"), ("event_id", "ASC")), False,
                          ("event_id", "retracted_at", "target_type", "target", "reason", "retracted_events",
                           "evidence", "uncertainty")),
    "work_units": Target("WORK UNITS", "work_units", "work_unit_id", "started_at",
                         (("started_at", "DESC"), ("work_unit_id", "ASC")), False,
                         ("work_unit_id", "phase", "status", "status_reason", "attempt_count", "failed_attempt_count",
                          "updated_at", "evidence", "uncertainty"),
                         note="work units are tier-1 heuristics (capped at 0.7): quote phase_reason and "
                              "status_reason with the labels; status is judged when read"),
    "decisions": Target("DECISIONS", "decisions", "decision_id", "decided_at",
                        (("decided_at", "DESC"), ("decision_id", "ASC")), False,
                        ("decision_id", "kind", "selected", "decided_at", "evidence", "uncertainty"),
                        note="decisions are derived from what happened around a change of direction; "
                             "nothing here was stated by a human (rationale_source = derived)"),
    "conflicts": Target("CONFLICTS", "conflicts", "conflict_id", "started_at",
                        (("started_at", "DESC"), ("conflict_id", "ASC")), False,
                        ("first_work_unit", "second_work_unit", "paths", "overlapping", "first_committed",
                         "second_committed", "started_at", "evidence", "uncertainty"),
                        note="overlapping = 1: both work units are open now, two agents editing the same files"),
    "notes": Target("NOTES", "notes", "event_id", "observed_at", (("observed_at", "DESC"), ("event_id", "ASC")), False,
                    ("event_id", "observed_at", "session_name", "note", "evidence", "uncertainty"),
                    note="notes people recorded (attempt note): facts, not inferences"),
    "approvals": Target("APPROVALS", "approvals", "event_id", "observed_at",
                        (("observed_at", "DESC"), ("event_id", "ASC")), False,
                        ("event_id", "observed_at", "session_name", "approved", "subject", "note", "evidence",
                         "uncertainty"),
                        note="approved = 1: attempt approve; 0: attempt reject (recorded facts, not inferences)"),
    "evidence": Target("EVIDENCE", "events", "event_id", "observed_at", (("observed_at", "ASC"), ("seq", "ASC")), True,
                       ("observed_at", "kind", "provider", "tool_name", "path_relative", "outcome_status",
                        "event_id", "session_id")),
}


# --- FOR filters -------------------------------------------------------------------------
# Each rule: (builder, argument). Builders take (ctx, filter, alias, argument) and return
# (sql, [params]) with `?` placeholders.

FILTER_KEYS = ("project", "provider", "agent", "session", "turn", "path", "outcome", "tool", "phase",
               "status", "since", "until")
UNIT_INDEX_FILTERS = ("project", "provider", "agent", "session", "turn", "since", "until")
"""SHOW WORK UNITS filters that read only unit_index columns (work_unit_id, project_id,
started_at) and the stored membership: applied before any unit is judged."""
UNIT_INDEX_COLUMNS = ("work_unit_id", "project_id", "started_at")


def _text(f: ast.Filter) -> str:
    return f.value.text


def _loc(ctx, node):
    return (ctx.source, node.pos, node.end)


def _in(col, values):
    return f"{col} IN ({', '.join('?' * len(values))})", list(values)


def f_project(ctx, f, a, how):
    ids = [pid for pid, _ in resolve_project(ctx.conn, _text(f), _loc(ctx, f.value))]
    if how == "via_session":
        sql, p = _in("s.project_id", ids)
        return f"{a}.session_id IN (SELECT s.session_id FROM sessions s WHERE {sql})", p
    return _in(f"{a}.project_id", ids)


def not_a_provider(ctx, f, message="provider takes a provider name; agent = 'agt_…' names one agent",
                   label="not a provider"):
    """AQL0404 for an agt_ id where a provider name goes, listing the providers."""
    return AQLError("AQL0404", message, source=ctx.source, pos=f.value.pos, end=f.value.end, label=label,
                    listing=("providers", providers()))


def f_provider(ctx, f, a, cols):
    kind, value = resolve_agent(ctx.conn, _text(f), _loc(ctx, f.value))
    if kind == "agent":
        raise not_a_provider(ctx, f)
    return _provider_sql(a, cols, value)


def _provider_sql(a, cols, value):
    if cols == "actors":
        return f"EXISTS (SELECT 1 FROM json_each({a}.actors) WHERE value = ?)", [value]
    if cols == "via_session":
        return f"{a}.session_id IN (SELECT s.session_id FROM sessions s WHERE s.provider = ?)", [value]
    if isinstance(cols, tuple):
        return "(" + " OR ".join(f"{a}.{c} = ?" for c in cols) + ")", [value] * len(cols)
    return f"{a}.{cols} = ?", [value]


def f_agent(ctx, f, a, arg):
    agent_col, provider_cols = arg
    kind, value = resolve_agent(ctx.conn, _text(f), _loc(ctx, f.value))
    if kind == "provider":
        return _provider_sql(a, provider_cols, value)
    if isinstance(agent_col, tuple):  # ("sessions", columns): rows of a session the agent took part in
        if not table_exists(ctx.conn, "session_agents"):
            raise not_a_provider(ctx, f, f"this file predates agent ids on SHOW {ctx.target.name}",
                                 "use a provider name")
        sub = "(SELECT g.session_id FROM session_agents g WHERE g.agent_id = ?)"
        return "(" + " OR ".join(f"{a}.{c} IN {sub}" for c in agent_col[1]) + ")", [value] * len(agent_col[1])
    if agent_col == "agents":
        return f"EXISTS (SELECT 1 FROM json_each({a}.agents) WHERE value = ?)", [value]
    return f"{a}.{agent_col} = ?", [value]


def _entity(ctx, f, kind):
    # filters may name retracted entities (INCLUDING RETRACTED shows their rows)
    return resolve_id(ctx.conn, kind, _text(f), _loc(ctx, f.value), live=False)[1]


def f_entity(ctx, f, a, arg):
    kind, how, cols = arg
    value = _entity(ctx, f, kind)
    if how == "eq":
        return f"{a}.{cols} = ?", [value]
    if how == "either":
        return "(" + " OR ".join(f"{a}.{c} = ?" for c in cols) + ")", [value] * len(cols)
    return f"EXISTS (SELECT 1 FROM json_each({a}.{cols}) WHERE value = ?)", [value]


def f_unit_member(ctx, f, a, arg):
    """A work unit (or, for conflicts, either of its two units) holding a member turn that
    matches: read from the stored membership (`unit_turns`, indexed by session and turn), so
    the unit's computed lists are never built to be searched."""
    kind, cols = arg
    if kind == "provider" or kind == "agent":
        who, value = resolve_agent(ctx.conn, _text(f), _loc(ctx, f.value))
        if who == "agent":
            if kind == "provider":
                raise not_a_provider(ctx, f)
            member = "m.session_id IN (SELECT g.session_id FROM session_agents g WHERE g.agent_id = ?)"
        else:
            member = "m.provider = ?"
    else:
        value = _entity(ctx, f, kind)
        member = f"m.{kind}_id = ?"
    sub = f"(SELECT m.work_unit_id FROM unit_turns m WHERE {member})"
    return "(" + " OR ".join(f"{a}.{c} IN {sub}" for c in cols) + ")", [value] * len(cols)


def _glob(pattern: str) -> str:
    out = []
    for c in pattern:
        if c in "?[]":
            out.append("[" + c + "]")
        elif c == "%":
            out.append("*")
        else:
            out.append(c)
    return "".join(out)


def f_path(ctx, f, a, col):
    v = _text(f)
    if "*" in v or "%" in v:
        return f"EXISTS (SELECT 1 FROM json_each({a}.{col}) WHERE value GLOB ?)", [_glob(v)]
    return f"EXISTS (SELECT 1 FROM json_each({a}.{col}) WHERE value = ?)", [v]


def f_vocab(ctx, f, a, arg):
    table, col = arg
    v = _text(f).lower()
    allowed = VOCAB.get((table, col))
    if allowed and v not in allowed:
        raise outside_vocabulary(ctx, f, allowed)
    return f"{a}.{col} = ?", [v]


def outside_vocabulary(ctx, f, allowed) -> AQLError:
    """AQL0406 for a FOR value outside its closed vocabulary, listing the vocabulary."""
    return AQLError("AQL0406", f"unknown {f.key}{did_you_mean(_text(f).lower(), allowed)}", source=ctx.source,
                    pos=f.value.pos, end=f.value.end, label="not in the vocabulary", listing=("valid values", allowed))


def f_tool(ctx, f, a, arg):
    v = _text(f)
    if v.lower() in TOOL_CATEGORIES:
        return f"{a}.tool_category = ?", [v.lower()]
    return f"{a}.tool_name = ? COLLATE NOCASE", [v]


def f_signal_status(ctx, f, a, arg):
    v = _text(f).lower()
    conds = {"pending": f"{a}.pending", "cleared": f"NOT {a}.pending", "blocking": f"{a}.blocking",
             "non_blocking": f"NOT {a}.blocking"}
    if v not in conds:
        raise outside_vocabulary(ctx, f, tuple(conds))
    return conds[v], []


def f_correction_outcome(ctx, f, a, arg):
    v = _text(f).lower()
    return f"{a}.outcome = ?", [v]


def f_verdict(ctx, f, a, arg):
    v = _text(f).lower()
    if v not in ("approved", "rejected"):
        raise outside_vocabulary(ctx, f, ("approved", "rejected"))
    return f"{a}.approved = ?", [int(v == "approved")]


def f_time(ctx, f, a, op):
    col = ctx.target.time
    if col is None:
        raise AQLError("AQL0404", f"SHOW {ctx.target.name} has no time column for {f.key}", source=ctx.source,
                       pos=f.pos, end=f.end, label="no time column")
    v = f.value
    us = resolve_time(v.kind, v.text, ctx.now_us, _loc(ctx, v))
    return f"{a}.{col} {op} ?", [ctx.iso(us)]


ONE_VALUE_BUILDERS = (f_vocab, f_verdict, f_correction_outcome)
"""FOR builders of a column a row holds one value of: two keys that read one of them (outcome and
status on SHOW ATTEMPTS) are AQL0205 (for_keys.check_filters)."""

_TIME = {"since": (f_time, ">="), "until": (f_time, "<=")}
_ATT = {
    "project": (f_project, "project_id"), "provider": (f_provider, "provider"),
    "agent": (f_agent, ("agent_id", "provider")), "session": (f_entity, ("session", "eq", "session_id")),
    "turn": (f_entity, ("turn", "eq", "turn_id")), "path": (f_path, "paths"),
    "outcome": (f_vocab, ("attempts", "outcome")), "status": (f_vocab, ("attempts", "outcome")), **_TIME,
}
FILTERS = {
    "attempts": _ATT, "failed_attempts": _ATT, "superseded_attempts": _ATT,
    "sessions": {
        "project": (f_project, "project_id"), "provider": (f_provider, "provider"),
        "agent": (f_agent, ("agents", "provider")), "session": (f_entity, ("session", "eq", "session_id")),
        "outcome": (f_vocab, ("sessions", "state")), "status": (f_vocab, ("sessions", "state")), **_TIME,
    },
    "turns": {
        "project": (f_project, "project_id"), "provider": (f_provider, "provider"),
        "agent": (f_agent, (("sessions", ("session_id",)), "provider")),
        "session": (f_entity, ("session", "eq", "session_id")), "turn": (f_entity, ("turn", "eq", "turn_id")),
        "outcome": (f_vocab, ("turns", "status")), "status": (f_vocab, ("turns", "status")), **_TIME,
    },
    "tool_calls": {
        "project": (f_project, "project_id"), "provider": (f_provider, "provider"),
        "agent": (f_agent, ("agent_id", "provider")), "session": (f_entity, ("session", "eq", "session_id")),
        "turn": (f_entity, ("turn", "eq", "turn_id")), "path": (f_path, "paths"),
        "outcome": (f_vocab, ("tool_calls", "outcome_status")), "status": (f_vocab, ("tool_calls", "outcome_status")),
        "tool": (f_tool, None), **_TIME,
    },
    "handoffs": {
        "project": (f_project, "project_id"), "provider": (f_provider, ("from_provider", "to_provider")),
        "agent": (f_agent, (("sessions", ("from_session", "to_session")), ("from_provider", "to_provider"))),
        "session": (f_entity, ("session", "either", ("from_session", "to_session"))),
        "turn": (f_entity, ("turn", "either", ("from_turn", "to_turn"))), "path": (f_path, "shared_paths"), **_TIME,
    },
    "edges": {
        "session": (f_entity, ("session", "either", ("from_id", "to_id"))),
        "turn": (f_entity, ("turn", "either", ("from_id", "to_id"))),
    },
    "signals": {
        "project": (f_project, "via_session"), "provider": (f_provider, "via_session"),
        "agent": (f_agent, ("agent_id", "via_session")), "session": (f_entity, ("session", "eq", "session_id")),
        "status": (f_signal_status, None), **_TIME,
    },
    "commits": {
        "project": (f_project, "project_id"), "provider": (f_provider, "provider"),
        "agent": (f_agent, (("sessions", ("session_id",)), "provider")),
        "session": (f_entity, ("session", "eq", "session_id")), "turn": (f_entity, ("turn", "eq", "turn_id")), **_TIME,
    },
    "corrections": {
        "project": (f_project, "project_id"), "session": (f_entity, ("session", "eq", "session_id")),
        "status": (f_vocab, ("corrections", "status")), "outcome": (f_correction_outcome, None), **_TIME,
    },
    "retractions": {"project": (f_project, "project_id"), **_TIME},
    "work_units": {
        "project": (f_project, "project_id"), "provider": (f_unit_member, ("provider", ("work_unit_id",))),
        "agent": (f_unit_member, ("agent", ("work_unit_id",))),
        "session": (f_unit_member, ("session", ("work_unit_id",))),
        "turn": (f_unit_member, ("turn", ("work_unit_id",))), "path": (f_path, "paths"),
        "status": (f_vocab, ("work_units", "status")), "phase": (f_vocab, ("work_units", "phase")), **_TIME,
    },
    "conflicts": {
        "project": (f_project, "project_id"),
        "provider": (f_unit_member, ("provider", ("first_work_unit", "second_work_unit"))),
        "agent": (f_unit_member, ("agent", ("first_work_unit", "second_work_unit"))),
        "session": (f_unit_member, ("session", ("first_work_unit", "second_work_unit"))),
        "turn": (f_unit_member, ("turn", ("first_work_unit", "second_work_unit"))), "path": (f_path, "paths"),
        **_TIME,
    },
    "decisions": {
        "project": (f_project, "project_id"), "provider": (f_provider, "provider"),
        "session": (f_entity, ("session", "eq", "session_id")), "turn": (f_entity, ("turn", "eq", "turn_id")), **_TIME,
    },
    "notes": {"project": (f_project, "project_id"), "session": (f_entity, ("session", "eq", "session_id")), **_TIME},
    "approvals": {
        "project": (f_project, "project_id"), "session": (f_entity, ("session", "eq", "session_id")),
        "status": (f_verdict, None), "outcome": (f_verdict, None), **_TIME,
    },
    "evidence": {**_TIME},
}


# --- WHERE printer (table-driven: AST node type → printer) --------------------------------

FUNCTIONS = {  # scalar functions allowed in WHERE: name → (min args, max args)
    "abs": (1, 1), "coalesce": (2, 16), "ifnull": (2, 2), "nullif": (2, 2), "length": (1, 1),
    "lower": (1, 1), "upper": (1, 1), "trim": (1, 2), "ltrim": (1, 2), "rtrim": (1, 2),
    "substr": (2, 3), "substring": (2, 3), "instr": (2, 2), "replace": (3, 3), "round": (1, 2),
    "min": (2, 16), "max": (2, 16), "date": (1, 6), "time": (1, 6), "datetime": (1, 6),
    "julianday": (1, 6), "strftime": (2, 7), "unixepoch": (1, 6), "json_extract": (2, 8),
    "json_array_length": (1, 2), "json_type": (1, 2), "json_valid": (1, 1), "typeof": (1, 1),
    "iif": (3, 3), "sign": (1, 1),
}
_BINARY_OPS = {"OR", "AND", "=", "!=", "<", "<=", ">", ">=", "||", "+", "-", "*", "/", "%", "IS",
               "IS NOT", "LIKE", "NOT LIKE", "GLOB", "NOT GLOB"}


class WherePrinter:
    """Prints a WHERE AST as SQL over one table alias, binding every literal."""

    def __init__(self, ctx, alias: str, columns: set, extra: dict | None = None):
        self.ctx = ctx
        self.alias = alias
        self.columns = columns
        self.extra = extra or {}   # extra column name → SQL expression (e.g. successor_outcome)
        self.params = []

    def print(self, node) -> str:
        return _PRINT[type(node)](self, node)

    def column(self, n: ast.SqlColumn) -> str:
        if n.name in self.extra:
            return self.extra[n.name]
        if n.name not in self.columns:
            raise unknown_column(self.ctx, self.ctx.target, self.columns | set(self.extra), n.name, n.pos, n.end)
        return f'{self.alias}."{n.name}"'

    def literal(self, n: ast.SqlLiteral) -> str:
        if n.kind in ("string", "number"):
            self.params.append(n.value)
            return "?"
        return {"null": "NULL", "true": "1", "false": "0"}[n.kind]

    def unary(self, n: ast.SqlUnary) -> str:
        return f"(NOT {self.print(n.operand)})" if n.op == "NOT" else f"(- {self.print(n.operand)})"

    def binary(self, n: ast.SqlBinary) -> str:
        if n.op not in _BINARY_OPS:  # the grammar cannot produce one; keep the printer closed anyway
            raise AQLError("AQL0207", "operator not allowed in WHERE", source=self.ctx.source, pos=n.pos, end=n.end)
        if n.op in ("AND", "OR"):  # a long a OR b OR c … chain is printed flat, not recursively
            operands = []
            node = n
            while isinstance(node, ast.SqlBinary) and node.op == n.op:
                operands.append(node.right)
                node = node.left
            operands.append(node)
            return "(" + f" {n.op} ".join(self.print(x) for x in reversed(operands)) + ")"
        return f"({self.print(n.left)} {n.op} {self.print(n.right)})"

    def in_list(self, n: ast.SqlIn) -> str:
        items = ", ".join(self.print(i) for i in n.items)
        return f"({self.print(n.operand)} {'NOT IN' if n.negated else 'IN'} ({items}))"

    def between(self, n: ast.SqlBetween) -> str:
        word = "NOT BETWEEN" if n.negated else "BETWEEN"
        return f"({self.print(n.operand)} {word} {self.print(n.low)} AND {self.print(n.high)})"

    def call(self, n: ast.SqlCall) -> str:
        spec = FUNCTIONS.get(n.name)
        if spec is None or n.star or not spec[0] <= len(n.args) <= spec[1]:
            why = "takes a different number of arguments" if spec and not n.star else "is not allowed in WHERE"
            raise AQLError("AQL0412", f"function {n.name} {why}", source=self.ctx.source, pos=n.pos, end=n.end,
                           label="function not allowed", listing=("scalar functions allowed", sorted(FUNCTIONS)))
        return f"{n.name}({', '.join(self.print(x) for x in n.args)})"


_PRINT = {
    ast.SqlColumn: WherePrinter.column, ast.SqlLiteral: WherePrinter.literal,
    ast.SqlUnary: WherePrinter.unary, ast.SqlBinary: WherePrinter.binary,
    ast.SqlIn: WherePrinter.in_list, ast.SqlBetween: WherePrinter.between,
    ast.SqlCall: WherePrinter.call,
}


# --- uncertainty ---------------------------------------------------------------------------

RECORDED_TEXT = {"notes": ("note", "note_chars"), "approvals": ("subject", "subject_chars")}
"""Tables of recorded facts → (their text column, its length): a row whose text is NULL while
its length is known had its text withheld (metadata_only, or a reader's content wall)."""
_WITHHELD = ("the capture mode kept it out, or this reader withholds it (attempt mcp or attempt ui without "
             "--include-content)")


def uncertainty_sql(table: str, q: str, columns: set) -> str:
    """The `uncertainty` JSON object of a row of `table` (alias q)."""
    if table == "events":
        return ("json_object('confidence', 1.0, 'reason', 'deterministic', "
                "'note', 'an observed event: a fact, not an inference')")
    if table in RECORDED_TEXT:  # what people recorded: facts; a text withheld says so, as a turn's objective does
        text, chars = RECORDED_TEXT[table]
        withheld = f"{q}.{text} IS NULL AND {q}.{chars} IS NOT NULL"
        return (f"json_object('confidence', {q}.confidence, 'reason', CASE WHEN {withheld} THEN 'content_unavailable' "
                f"ELSE 'deterministic' END, 'note', CASE WHEN {withheld} THEN '{text} text unavailable: {_WITHHELD}' "
                "ELSE 'recorded by a person or a CI job: a fact, not an inference' END)")
    whens = []
    note = f"{q}.algorithm_version" if "algorithm_version" in columns else "NULL"
    if "corrected_by" in columns:
        whens.append(f"WHEN {q}.corrected_by IS NOT NULL THEN 'corrected'")
    if table == "attempts":
        whens.append(f"WHEN {q}.objective IS NULL AND EXISTS (SELECT 1 FROM turns ct WHERE ct.turn_id = {q}.turn_id "
                     f"AND ct.prompt_chars IS NOT NULL) THEN 'content_unavailable'")
    elif table == "turns":
        whens.append(f"WHEN {q}.objective IS NULL AND {q}.prompt_chars IS NOT NULL THEN 'content_unavailable'")
    reason = f"CASE {' '.join(whens)} WHEN {q}.confidence >= 1.0 THEN 'deterministic' ELSE 'heuristic' END"
    if "corrected_by" in columns:
        note = (f"CASE WHEN {q}.corrected_by IS NOT NULL THEN 'set by a human correction (' || {q}.corrected_by || ')' "
                f"ELSE {note} END")
    if table in ("attempts", "turns"):
        note = f"CASE WHEN ({reason}) = 'content_unavailable' THEN 'objective text unavailable: {_WITHHELD}' ELSE {note} END"
    return f"json_object('confidence', {q}.confidence, 'reason', {reason}, 'note', {note})"


# --- SHOW ------------------------------------------------------------------------------------

class ShowPlan:
    """A compiled SHOW: the rows query, the count of rows the hidden-retracted filter removed
    (or None), the limit, the display columns and the notes."""

    __slots__ = ("target", "rows", "hidden", "limit", "display", "notes", "units")

    def __init__(self, target, rows, hidden, limit, display, notes, units=None):
        self.target, self.rows, self.hidden, self.limit, self.display, self.notes = \
            target, rows, hidden, limit, display, notes
        self.units = units
        """For SHOW WORK UNITS reading the newest N units: (the query of their weights, one per
        unit in order: its member count; part(offset, count) → the rows query of that slice of
        them); None otherwise (beside.in_halves)."""


def order_sql(target: Target, show: ast.Show, alias: str, columns: set, ctx, extra: dict | None = None) -> str:
    """The ORDER BY items over `alias`; `extra`: columns the statement adds (name → its SQL
    over `alias`, e.g. SUPERSEDED ATTEMPTS' successor_outcome), which it may sort by too."""
    items = []
    extra = extra or {}
    if show.order:
        col, direction, pos, end = show.order
        if col not in columns and col not in extra:
            raise unknown_column(ctx, target, columns | set(extra), col, pos, end)
        if col in extra:
            items.append(f"{extra[col]} {direction}")
        else:
            items.append(f'"{col}" {direction}' if alias is None else f'{alias}."{col}" {direction}')
    for col, direction in target.order:
        if show.order and show.order[0] == col:
            continue
        items.append(f'"{col}" {direction}' if alias is None else f'{alias}."{col}" {direction}')
    return ", ".join(items)


def unknown_column(ctx, target: Target, columns, name: str, pos: int, end: int) -> AQLError:
    """AQL0405 for a column `target` does not have, the nearest one suggested, all listed."""
    return AQLError("AQL0405", "unknown column" + did_you_mean(name, columns), source=ctx.source, pos=pos, end=end,
                    label="unknown column", listing=(f"columns of SHOW {target.name}", sorted(columns)))


def compile_show(ctx, show: ast.Show) -> ShowPlan:
    target = TARGETS[show.target]
    ctx.target = target
    if target.table in PLANNED_TABLES and not table_exists(ctx.conn, target.table):
        raise planned_error(target.table.replace("_", " "), (ctx.source, show.target_pos, show.end))
    columns = ctx.columns(target.table)
    a = "a"
    conds, params = [], []
    joins = ""
    extra_select = ""
    extra_cols = {}
    notes = [target.note] if target.note else []

    if show.target == "evidence":
        ev_sql, ev_params, label = evidence_source(ctx, show.ref)
        conds.append(f"{a}.event_id IN ({ev_sql})")
        params.extend(ev_params)
        notes.append(f"evidence for {label}, in observation order")
    if show.target == "superseded_attempts":
        joins = " LEFT JOIN attempts s ON s.attempt_id = a.superseded_by"
        extra_select = ", s.outcome AS successor_outcome"
        extra_cols = {"successor_outcome": "s.outcome"}
    if target.condition:
        conds.append(target.condition.format(a=a))
    if show.between:
        conds_b, params_b = _between(ctx, show.between)
        conds.append(conds_b)
        params.extend(params_b)

    # SHOW WORK UNITS runs the rules of the work_units view over the units its filters select
    # from the unit index (attemptql/units.py): phase and status are judged for those only
    units_program = show.target == "work_units" and table_exists(ctx.conn, "unit_index")
    unit_conds, unit_params = [], []
    rules = FILTERS.get(show.target, {})
    check_filters(ctx, target, show.filters, rules, FILTER_KEYS, ONE_VALUE_BUILDERS)
    for f in show.filters:
        builder, arg = rules[f.key]
        if units_program and f.key in UNIT_INDEX_FILTERS:  # read off the unit index, before any unit is judged
            sql, p = builder(ctx, f, "u", arg)
            unit_conds.append(sql)
            unit_params.extend(p)
            continue
        sql, p = builder(ctx, f, a, arg)
        conds.append(sql)
        params.extend(p)

    for clause, op in ((show.since, ">="), (show.until, "<=")):
        if clause is None:
            continue
        if target.time is None:
            raise AQLError("AQL0404", f"SHOW {target.name} has no time column for SINCE/UNTIL", source=ctx.source,
                           pos=clause.pos, end=clause.end, label="no time column")
        us = resolve_time(clause.kind, clause.text, ctx.now_us, (ctx.source, clause.pos, clause.end))
        if units_program:
            unit_conds.append(f"u.{target.time} {op} ?")
            unit_params.append(ctx.iso(us))
        else:
            conds.append(f"{a}.{target.time} {op} ?")
            params.append(ctx.iso(us))

    if show.where is not None:
        printer = WherePrinter(ctx, a, columns, extra_cols)
        conds.append("(" + printer.print(show.where) + ")")
        params.extend(printer.params)

    limit = DEFAULT_LIMIT if show.limit is None else show.limit
    if not 1 <= limit <= MAX_LIMIT:  # pointing at the number, after LIMIT (show.limit_pos) and its space
        at = skip_space(ctx.source, show.limit_pos + len("LIMIT"))
        raise AQLError("AQL0410", f"LIMIT must be between 1 and {MAX_LIMIT}", source=ctx.source,
                       pos=at, end=_digits_end(ctx.source, at), label="out of range")

    hidden = None
    if target.retracted and not show.including_retracted:
        base = " AND ".join(conds) if conds else "1"
        hidden = Query("hidden retracted rows",
                       f"SELECT count(*) FROM {target.table} AS {a}{joins} WHERE {base} AND {a}.retracted = 1",
                       tuple(params))
        conds.append(f"{a}.retracted = 0")  # an equality, so the (…, retracted, …) indexes serve it
    elif show.including_retracted and not target.retracted:
        notes.append(f"{target.table} has no retracted rows; INCLUDING RETRACTED has no effect")

    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    inner = (f"SELECT {a}.*{extra_select} FROM {target.table} AS {a}{joins}{where} "
             f"ORDER BY {order_sql(target, show, a, columns, ctx, extra_cols)} LIMIT ?")
    prefix = ""
    slices = None
    if units_program:
        from . import units
        units_sql = "SELECT u.* FROM main.unit_index u" + (" WHERE " + " AND ".join(unit_conds) if unit_conds else "")
        if not conds and (show.order is None or show.order[0] in UNIT_INDEX_COLUMNS):
            # nothing left to filter on judged columns: the newest N units are the N rows, and
            # any slice of them (in that order) is the same slice of the rows
            units_sql += f" ORDER BY {order_sql(target, show, 'u', columns, ctx)} LIMIT ? OFFSET ?"
            slices = unit_params
            unit_params = unit_params + [limit, 0]
        prefix = units.program(ctx.conn, units_sql, at=False)
        params = unit_params + params
    if target.table == "events":
        outer_cols = "q.*, json_array(q.event_id) AS evidence"
    else:
        outer_cols = "q.*"
    sql = (f"{prefix}SELECT {outer_cols}, {uncertainty_sql(target.table, 'q', columns)} AS uncertainty "
           f"FROM ({inner}) AS q ORDER BY {order_sql(target, show, 'q', columns | set(extra_cols), ctx)}")
    tail = tuple(params[len(unit_params):]) + (limit,)
    sliced = None
    if slices is not None:
        def part(offset: int, count: int) -> Query:
            return Query("rows", sql, tuple(slices) + (count, offset) + tail)
        # a unit costs about what its members do (each list and count of work_units reads them)
        sliced = (Query("units", "SELECT (SELECT count(*) FROM main.unit_turns m WHERE m.work_unit_id = x.work_unit_id) "
                        f"FROM ({units_sql}) x", tuple(unit_params)), part)
    display = target.display + (("evidence", "uncertainty") if target.table == "events" else ())
    if show.including_retracted and target.retracted:  # which rows are retracted, next to their ids
        display = display[:1] + ("retracted",) + display[1:]
    return ShowPlan(target, Query("rows", sql, tuple(params) + (limit,)), hidden, limit, display, notes, sliced)


def _digits_end(text: str, pos: int) -> int:
    """Where the number written at `pos` ends (`LIMIT 0007`: all four digits)."""
    end = pos
    while end < len(text) and text[end].isdigit():
        end += 1
    return max(end, pos + 1)


def _between(ctx, between):
    f1, f2 = between
    v = []
    for f in (f1, f2):
        kind, value = resolve_agent(ctx.conn, f.value.text, (ctx.source, f.value.pos, f.value.end))
        if kind != "provider":
            raise not_a_provider(ctx, f, "BETWEEN matches the providers on either side of a handoff")
        v.append(value)
    if v[0] == v[1]:
        raise AQLError("AQL0402", "BETWEEN needs two different agents", source=ctx.source, pos=f2.value.pos,
                       end=f2.value.end, label="same agent as the first")
    return ("((a.from_provider = ? AND a.to_provider = ?) OR (a.from_provider = ? AND a.to_provider = ?))",
            [v[0], v[1], v[1], v[0]])
