"""The AttemptQL abstract syntax tree: one small class per construct.

Invariant: an AST holds only what the user wrote, normalised (keywords upper-cased, quotes
removed) and with the character span it came from (`pos`, `end`) so later stages can raise
positional errors. Nothing here resolves ids or times or touches the database. (Plain slotted
classes rather than dataclasses: building dataclasses costs ~10 ms of every statement's
start-up.)
"""


class Node:
    """Base: `FIELDS` names the constructor's keyword fields (with defaults in `DEFAULTS`)."""

    __slots__ = ("pos", "end")
    FIELDS: tuple = ()
    DEFAULTS: dict = {}

    def __init__(self, pos: int, end: int, **kw):
        self.pos = pos
        self.end = end
        for name in self.FIELDS:
            if name in kw:
                setattr(self, name, kw.pop(name))
            elif name in self.DEFAULTS:
                setattr(self, name, self.DEFAULTS[name])
            else:
                raise TypeError(f"{type(self).__name__} needs {name}")
        if kw:
            raise TypeError(f"{type(self).__name__} has no field {sorted(kw)[0]}")

    def describe(self) -> dict:
        """The node as plain data (for EXPLAIN): class name plus its fields."""
        out = {"node": type(self).__name__}
        for name in self.FIELDS:
            out[name] = _plain(getattr(self, name))
        return out

    def __eq__(self, other):
        return type(self) is type(other) and self.describe() == other.describe()

    __hash__ = None

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.FIELDS)})"


def _plain(v):
    if isinstance(v, Node):
        return v.describe()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _node(name: str, fields: str, defaults: dict | None = None, doc: str = ""):
    names = tuple(fields.split())
    return type(name, (Node,), {"__slots__": names, "FIELDS": names, "DEFAULTS": defaults or {},
                                "__doc__": doc, "__module__": __name__})


# --- values -------------------------------------------------------------------------------

Time = _node("Time", "kind text", doc="A timestamp as written: kind is 'string', 'relative', 'datetime' or "
             "'word' (NOW/TODAY/YESTERDAY); text has quotes removed.")
Value = _node("Value", "kind text", doc="A filter value: kind is 'string', 'number', 'relative' or 'word'.")
Subject = _node("Subject", "kind value", doc="What a statement is about. kind: project, session, work_unit, "
                "attempt, turn, span, event, agent, or ref (a bare id whose type comes from its prefix). "
                "value is None for a bare `project`.")
Filter = _node("Filter", "key value key_pos", {"key_pos": 0})
AgentFilter = _node("AgentFilter", "key value", doc="BETWEEN side: key is AGENT or PROVIDER.")

# --- WHERE: one SQL expression ------------------------------------------------------------

SqlColumn = _node("SqlColumn", "name")
SqlLiteral = _node("SqlLiteral", "kind value", doc="kind: string, number, null, true, false.")
SqlUnary = _node("SqlUnary", "op operand", doc="op: NOT or -.")
SqlBinary = _node("SqlBinary", "op left right", doc="op: OR AND = != < <= > >= || + - * / % IS, IS NOT, "
                  "LIKE, NOT LIKE, GLOB, NOT GLOB.")
SqlIn = _node("SqlIn", "operand items negated")
SqlBetween = _node("SqlBetween", "operand low high negated")
SqlCall = _node("SqlCall", "name args star", {"star": False})

# --- statements ---------------------------------------------------------------------------

Show = _node("Show", "target target_pos ref between filters where since until order limit limit_pos "
             "including_retracted",
             {"target_pos": 0, "ref": None, "between": None, "filters": (), "where": None, "since": None,
              "until": None, "order": None, "limit": None, "limit_pos": 0, "including_retracted": False},
             doc="SHOW <target>: target is attempts, failed_attempts, superseded_attempts, handoffs, "
                 "work_units, decisions, conflicts, evidence (ref = SHOW EVIDENCE FOR <ref>), sessions, turns, "
                 "tool_calls, edges, signals, corrections, retractions or commits; between is "
                 "(AgentFilter, AgentFilter); order is (column, ASC|DESC, pos, end).")
WhatIs = _node("WhatIs", "subject")
Why = _node("Why", "subject state state_pos state_end", {"state_pos": 0, "state_end": 0})
Trace = _node("Trace", "subject depth depth_pos direction", {"depth": None, "depth_pos": 0, "direction": None})
State = _node("State", "subject at known_at", {"known_at": None})
Diff = _node("Diff", "subject t1 t2")
Statement = _node("Statement", "command explain source", {"explain": False, "source": ""})
