"""Projections: sessions, turns, tool calls, attempts, signals, commits, corrections,
retractions, handoffs, edges, work units, decisions, conflicts and Needs You, derived from the
fact log inside the SQLite file.

Invariant: the projection state is a pure function of the set of fact events. SQL triggers
(tables: migrations 0002 onwards; views and triggers: sql/) keep it current in the append's own transaction, whatever order events
arrive in; this package only reads it, writes Correction/Retraction events through
`Store.append`, and can rebuild it from nothing (`rebuild.reproject`) to prove the point.
The rules and every deliberate difference from the original are in spec/projections.md.
"""

ALGORITHM_VERSION = "tier1-v5-sql1"

PUBLIC_VIEWS = ("sessions", "turns", "tool_calls", "attempts", "signals", "edges", "handoffs",
                "commits", "corrections", "retractions", "notes", "approvals", "work_units", "decisions",
                "conflicts", "needs_you")
"""The catalog names this package maintains (seed 003, and the notes and approvals people record:
spec/evidence.md §5), all views over the stored state."""

READ_CLOCK_COLUMNS = {"work_units": ("status_reason",)}
"""Columns that quote the clock of the read itself (idle seconds): two reads a second apart
differ there and nowhere else, so comparisons of two reads leave them out."""

FACT_TABLES = ("session_facts", "session_agents", "turn_facts", "turn_prompts", "tool_call_facts",
               "attempt_facts", "signal_facts", "commit_facts", "correction_facts", "correction_targets",
               "retraction_facts")
"""The stored projection state (one row set per projection session, plus the meta events and
what the corrections of each attempt id decide)."""

CHECKPOINT_TABLES = ("snap_points", "snap_sessions", "snap_turns", "snap_calls", "snap_attempts",
                     "snap_signals", "snap_commits")
"""Per-session checkpoints taken before each human prompt (turn-local re-derivation)."""
