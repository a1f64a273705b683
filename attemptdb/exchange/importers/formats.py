"""Which of the importers' formats a file of JSON lines is in (spec/transcripts.md, "Which
files"): a Claude Code transcript, a Codex rollout, or canonical Event v1 lines.

Invariants: a file is an importer's own when at least one of its lines has that format's record
shape (an empty file is nobody's and refused by nobody); a file with no such line is refused
before anything is written, and named as what it looks like when one of the other shapes is
found in it. Reading stops at the first line of the importer's own shape, so screening a file
of the right format costs a line or two; messages name files, never their content.
"""

from ... import adapters
from ...errors import printable
from ...model.event import MAX_LINE

CLAUDE_CODE, CODEX, EVENT_V1 = "claude_code", "codex", "event_v1"

CLAUDE_SKIPPED = frozenset((
    "attachment", "file-history-snapshot", "mode", "last-prompt", "ai-title", "permission-mode",
    "queue-operation", "custom-title", "tag", "agent-name", "pr-link", "progress",
))
"""Claude Code's bookkeeping entries: its transcript importer reads no event from them."""

CLAUDE_TYPES = frozenset(("user", "assistant", "system", "summary", "cost-state")) | CLAUDE_SKIPPED
"""The entry types Claude Code writes (spec/transcripts.md, Entries → events)."""

CODEX_TYPES = frozenset((
    "session_meta", "event_msg", "response_item", "turn_context", "compacted", "world_state",
    "token_usage_record",
))
"""A Codex rollout line is `{"timestamp", "type", "payload"}` with one of these types."""

NAMES = {
    CLAUDE_CODE: ("a Claude Code transcript", "Claude Code transcripts", "attempt import claude-transcripts"),
    CODEX: ("a Codex rollout", "Codex rollouts", "attempt import codex"),
    EVENT_V1: ("canonical Event v1 lines", "canonical Event v1 lines", "attempt import jsonl"),
}
"""format: (one file of it, files of it, the command that imports it)."""

NAMED = 3
"""How many files of another format a message names (the rest are counted)."""


def shape(entry) -> str | None:
    """The format whose record shape a parsed line has, or None."""
    if not isinstance(entry, dict):
        return None
    t = entry.get("type")
    if isinstance(t, str):
        if t in CODEX_TYPES and isinstance(entry.get("payload"), dict):
            return CODEX
        if t in CLAUDE_TYPES:
            return CLAUDE_CODE
    if "event_id" in entry and "schema_version" in entry and "kind" in entry:
        return EVENT_V1
    return None


class Screen:
    """What screening one file found: `own` (a line of the importer's format), `lines` (the
    non-blank lines read), `seen` ({other format: lines of it})."""

    __slots__ = ("own", "lines", "seen")

    def __init__(self):
        self.own = False
        self.lines = 0
        self.seen = {}

    @property
    def accepted(self) -> bool:
        return self.own or self.lines == 0

    @property
    def looks_like(self) -> str | None:
        """The other format most of its recognised lines have (ties: the first seen)."""
        return max(self.seen, key=self.seen.get) if self.seen else None


def screen(stream, own: str, *, limit: int | None = None) -> Screen:
    """Read a binary stream until a line of format `own` (or `limit` non-blank lines)."""
    from ..conformance import bounded_lines
    s = Screen()
    for _, raw in bounded_lines(stream, MAX_LINE):
        if raw is not None and not raw.strip():
            continue
        s.lines += 1
        if raw is not None:
            entry, gap = adapters.parse_payload(raw)
            fmt = shape(entry) if gap is None else None
            if fmt == own:
                s.own = True
                return s
            if fmt is not None:
                s.seen[fmt] = s.seen.get(fmt, 0) + 1
        if limit is not None and s.lines >= limit:
            break
    return s


def screen_file(path: str, own: str) -> Screen:
    """`screen` of a file (unreadable: error[import.unreadable])."""
    from ...errors import AttemptError
    try:
        with open(path, "rb") as f:
            return screen(f, own)
    except OSError as e:
        raise AttemptError("import.unreadable", f"cannot read {path}: {e.strerror}") from None


def looks_like(path: str, own: str, *, limit: int = 64) -> str | None:
    """The other format the first `limit` lines of a file have, when none is `own`'s (a hint for
    an import that stopped); None when unreadable or unrecognised."""
    try:
        with open(path, "rb") as f:
            s = screen(f, own, limit=limit)
    except OSError:
        return None
    return None if s.own else s.looks_like


def hint(fmt: str | None) -> str:
    """`this looks like a Codex rollout: `attempt import codex``, or ``."""
    if fmt is None:
        return ""
    one, _, command = NAMES[fmt]
    return f"this looks like {one}: `{command}`"


def describe(path: str, own: str, s: Screen) -> str:
    """Why a file is refused: what it looks like, or that none of its lines has `own`'s shape (an
    AttemptError's message: shown through `printable`)."""
    if s.looks_like is not None:
        return f"{path} is not {NAMES[own][0]}; {hint(s.looks_like)}"
    return (f"{path} is not {NAMES[own][0]}: none of its {s.lines:,} line{'' if s.lines == 1 else 's'} "
            f"is one of its entries")


def brief(foreign: list) -> str:
    """`a.jsonl (a Codex rollout), b.jsonl, and 2 more`: files of another format, short."""
    named = [printable(p) + (f" ({NAMES[fmt][0]})" if fmt else "") for p, fmt in foreign[:NAMED]]
    more = len(foreign) - len(named)
    return ", ".join(named) + (f", and {more:,} more" if more > 0 else "")
