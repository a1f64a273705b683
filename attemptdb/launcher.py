"""The `attempt` command's dispatch: `attempt capture …` takes the lean hook path
(capture.hookclient: no click, no apsw, not even `os` when a daemon serves it); everything else
goes to attemptdb.cli.run (the click CLI, except a plain `attempt query` / `attempt needs-you`,
which cli/lean.py runs without click). Run as a command, those two reads end the process once
they have printed, without the interpreter's teardown (spec/projections.md §13).

Reached from bin/attempt, from `python -m attemptdb`, and from attemptdb/__main__.py run by path
(the hook command), which keeps only the bootstrap that has to run before this package can be
imported: a script is compiled on every start, a module is read from its cached bytecode
(compiling this dispatch cost a hook ~0.3-0.6 ms).
"""

import sys


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    from .capture import hookclient
    if not (args and args[0] == "capture"):
        hookclient.full_interpreter()
        from .cli import LEAN, READ_GC_THRESHOLD, run
        if argv is None and args[0:1] and args[0] in LEAN:
            import gc
            gc.set_threshold(READ_GC_THRESHOLD)
            hookclient.leave(run(args))  # a read has closed its files and printed: no teardown
        return run(args)
    code, hook, answer, db_path = hookclient.through_daemon(args[1:])
    if code is None:  # no daemon stored it: the full capture path, with what the client read
        from .capture.hook import main as capture_main
        code = capture_main(args[1:], hook, answer=answer, db_path=db_path)
    if argv is None:
        hookclient.leave(code)  # at once: no interpreter teardown, no close-time checkpoint
    return code


def by_path() -> int:
    """`main` for attemptdb/__main__.py run by path (`-I [-S]`), once it has made sure this very
    package is the one imported: without `site` (`-S`), the hook client is lean."""
    from .capture import hookclient
    hookclient.lean = bool(sys.flags.no_site)
    return main()
