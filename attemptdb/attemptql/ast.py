"""The AttemptQL abstract syntax tree: plain frozen dataclasses, one per construct.

Invariant: an AST holds only what the user wrote, normalised (keywords upper-cased, quotes
removed) and with the character span it came from (`pos`, `end`) so later stages can raise
positional errors. Nothing here resolves ids or times or touches the database.
"""

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class Node:
    pos: int
    end: int

    def describe(self) -> dict:
        """The node as plain data (for EXPLAIN): class name plus non-position fields."""
        out = {"node": type(self).__name__}
        for f in fields(self):
            if f.name in ("pos", "end"):
                continue
            v = getattr(self, f.name)
            out[f.name] = _plain(v)
        return out


def _plain(v):
    if isinstance(v, Node):
        return v.describe()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


# --- values -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Time(Node):
    """A timestamp as written: kind is 'string', 'relative', 'datetime' or 'word'
    (NOW/TODAY/YESTERDAY); text has quotes removed."""
    kind: str
    text: str


@dataclass(frozen=True)
class Value(Node):
    """A filter value: kind is 'string', 'number', 'relative' or 'word'."""
    kind: str
    text: str


@dataclass(frozen=True)
class Subject(Node):
    """What a statement is about. kind: project, session, work_unit, attempt, turn, span,
    event, agent, or ref (a bare id whose type comes from its prefix). value is None for a
    bare `project`."""
    kind: str
    value: str | None


@dataclass(frozen=True)
class Filter(Node):
    key: str
    value: Value
    key_pos: int = 0


@dataclass(frozen=True)
class AgentFilter(Node):
    key: str  # AGENT or PROVIDER
    value: Value


# --- WHERE: one SQL expression ------------------------------------------------------------

@dataclass(frozen=True)
class SqlColumn(Node):
    name: str


@dataclass(frozen=True)
class SqlLiteral(Node):
    kind: str  # string, number, null, true, false
    value: object


@dataclass(frozen=True)
class SqlUnary(Node):
    op: str  # NOT or -
    operand: Node


@dataclass(frozen=True)
class SqlBinary(Node):
    op: str  # OR AND = == != <> < <= > >= || + - * / % IS, IS NOT, LIKE, NOT LIKE, GLOB, NOT GLOB
    left: Node
    right: Node


@dataclass(frozen=True)
class SqlIn(Node):
    operand: Node
    items: tuple
    negated: bool


@dataclass(frozen=True)
class SqlBetween(Node):
    operand: Node
    low: Node
    high: Node
    negated: bool


@dataclass(frozen=True)
class SqlCall(Node):
    name: str
    args: tuple
    star: bool = False


# --- statements ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Show(Node):
    target: str            # attempts, failed_attempts, superseded_attempts, handoffs, work_units,
                           # decisions, evidence, sessions, turns, tool_calls, edges, signals,
                           # corrections, retractions, commits
    target_pos: int = 0
    ref: Subject | None = None               # SHOW EVIDENCE FOR <ref>
    between: tuple | None = None             # (AgentFilter, AgentFilter)
    filters: tuple = ()
    where: Node | None = None
    since: Time | None = None
    until: Time | None = None
    order: tuple | None = None               # (column, 'ASC'|'DESC', pos, end)
    limit: int | None = None
    limit_pos: int = 0
    including_retracted: bool = False


@dataclass(frozen=True)
class WhatIs(Node):
    subject: Subject


@dataclass(frozen=True)
class Why(Node):
    subject: Subject
    state: str
    state_pos: int = 0
    state_end: int = 0


@dataclass(frozen=True)
class Trace(Node):
    subject: Subject
    depth: int | None = None
    depth_pos: int = 0
    direction: str | None = None


@dataclass(frozen=True)
class State(Node):
    subject: Subject
    at: Time
    known_at: Time | None = None


@dataclass(frozen=True)
class Diff(Node):
    subject: Subject | None
    t1: Time
    t2: Time


@dataclass(frozen=True)
class Statement(Node):
    command: Node
    explain: bool = False
    source: str = field(default="", compare=False, repr=False)
