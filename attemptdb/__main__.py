"""`attempt` entry point. `attempt capture …` takes the lean hook path (capture.hookclient: no
click, no apsw, not even `os` when a daemon serves it); everything else goes to
attemptdb.cli.run (the click CLI, except a plain `attempt query` / `attempt needs-you`, which
cli/lean.py runs without click). Run as a command, those two reads end the process once they have
printed, without the interpreter's teardown (spec/projections.md §13).

Also runnable by absolute path in isolated mode, `<python> -I [-S] <dir>/attemptdb/__main__.py
ARGS…` (resources.isolated_argv, resources.lean_hook_argv): how the capture daemon is started
and the hook command the installer writes (spec/capture-daemon.md). Such a process imports
nothing from its working directory nor from PYTHON* variables (DESIGN.md invariant 8): `-I`
keeps those off `sys.path`; the bootstrap below drops any relative entry left, puts the
directory holding *this* package on the path when the interpreter's own paths lack it, and
refuses to run (exit 70) when another `attemptdb` would be imported. With `-S` (no `site`) a
hook a daemon serves runs the interpreter and the standard library only; whatever else runs
in such a process loads the site-packages first (`capture.hookclient.full_interpreter`).
This file is compiled on every such start: it stays short.
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


def _run_by_path() -> int:
    """`python -I [-S] <dir>/attemptdb/__main__.py ARGS…`: this very package, then `main`."""
    parts = __file__.split("/")
    if parts[0] == "" and "" not in parts[1:] and "." not in parts and ".." not in parts:
        here = __file__[:__file__.rfind("/")]  # absolute and plain: no `os` needed
        parent = here[:here.rfind("/")] or "/"
        paths = [p for p in sys.path if p.startswith("/") and p != here]
    else:
        import os
        here = os.path.dirname(os.path.abspath(__file__))
        parent = os.path.dirname(here)
        paths = [p for p in sys.path if os.path.isabs(p) and p != here]
    if parent not in paths:
        # `-S`: only the standard library is on the path; it stays first (an installed
        # package's parent is the site-packages, which never shadows the standard library)
        paths.insert(len(paths) if sys.flags.no_site else 0, parent)
    sys.path[:] = paths
    import attemptdb
    if list(attemptdb.__path__) != [here]:
        return 70  # another attemptdb comes first: run nothing rather than the wrong code
    from attemptdb.capture import hookclient
    hookclient.lean = bool(sys.flags.no_site)
    globals()["__package__"] = "attemptdb"  # main's relative imports, from this package
    return main()


if __name__ == "__main__":
    sys.exit(main() if __package__ else _run_by_path())
