"""Content withheld at the SQLite level: an authorizer that makes every column holding content
read as NULL, on apsw and stdlib sqlite3 connections alike.

Invariant: with `hide(…)` in place no prompt, command or output text, raw payload or note a
human wrote, and no artifact's bytes (a command's output), can be read through the connection
in any form — not as a column, an alias, an expression (`length(content_json)`), a view (`turns.objective`) or a filter
(`WHERE objective LIKE …`): SQLite substitutes NULL for each read of a hidden base column
(SQLITE_IGNORE on SQLITE_READ). Everything else is decided by the wrapped read-only gate
(attemptdb.store.readonly.Gate), so writes stay refused. Derived values that only say whether a
text exists follow suit (a correction whose note is hidden reads `content_unavailable`).
"""

# base table → columns that hold content (the public views read them from these)
HIDDEN = {
    "events": ("content_json", "raw_json", "unknown_json"),
    "turn_prompts": ("objective",),
    "correction_facts": ("note",),
    "retraction_facts": ("note",),
    "project_queue": ("objective",),
    # a command's output, kept by `attempt run --attach-output` (zlib or plain bytes: hex(…) or
    # CAST(… AS TEXT) would read it whole)
    "artifacts": ("content",),
}
_PAIRS = frozenset((t, c) for t, cols in HIDDEN.items() for c in cols)

# the action and result codes are SQLite's own numbers (the same in apsw and sqlite3)
SQLITE_READ = 20
SQLITE_IGNORE = 2


class ContentGate:
    """An authorizer: hidden columns read as NULL, every other decision is `gate`'s."""

    def __init__(self, gate):
        self.gate = gate

    def __call__(self, action, arg1, arg2, dbname, trigger):
        if action == SQLITE_READ and (arg1, arg2) in _PAIRS:
            return SQLITE_IGNORE
        return self.gate(action, arg1, arg2, dbname, trigger)


def authorizer(gate, include_content: bool):
    """The authorizer for a read connection: `gate` itself, or `gate` behind the content wall."""
    return gate if include_content else ContentGate(gate)
