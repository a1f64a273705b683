"""The `attempt` command: a thin click layer over the library (parse options, render).

`run` is the entry point (attemptdb.launcher). The read commands in LEAN try cli/lean.py first,
which runs a plain `attempt query …` or `attempt needs-you …` without importing click (~20 ms of
a read's start-up); everything else, and whatever lean.py leaves to click, goes to cli/main.py.
"""

LEAN = ("query", "needs-you")
READ_GC_THRESHOLD = 100_000
"""Run as commands, the LEAN reads start the cyclic collector's first generation after this many
new containers, not 700: a statement makes few cycles and ends soon (~4 ms of a STATE process
went to collections; attemptdb/launcher.py)."""


def run(args) -> int:
    """`attempt ARGS`: the exit status."""
    args = list(args)
    if args and args[0] in LEAN:
        from .lean import run as run_lean
        code = run_lean(args)
        if code is not None:
            return code
    from .main import run as run_click
    return run_click(args)
