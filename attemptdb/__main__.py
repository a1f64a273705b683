"""`attempt` entry point. `attempt capture …` takes the lean hook path (no click, no
jsonschema, no cryptography); everything else goes to attemptdb.cli.run (the click CLI, except
a plain `attempt query` / `attempt needs-you`, which cli/lean.py runs without click).

Also runnable by absolute path in isolated mode, `<python> -I <dir>/attemptdb/__main__.py ARGS…`
(attemptdb.resources.isolated_argv): how the capture daemon is started, and the hook command
the installer writes when no `attempt` executable exists (spec/capture-daemon.md). Such a
process imports nothing from its working directory (the repository a hook runs in) nor from
PYTHON* variables (DESIGN.md invariant 8): `-I` keeps the current and the script's directory,
user site-packages and every PYTHON* variable off `sys.path`, and the bootstrap below drops any
relative entry left and puts the directory holding *this* package first when the interpreter's
own paths lack it (a source checkout), so the process runs the same code as its starter.

The installed hook command adds `-S` (`<python> -I -S <dir>/attemptdb/__main__.py capture ID`,
spec/capture-daemon.md): no `site`, so a hook a daemon serves runs the interpreter and the
standard library only. Whatever else runs in such a process (a hook no daemon answered, any
other command) first loads the site-packages (`capture.hookclient.full_interpreter`), as a
normal start would.
"""

import os
import sys


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not (args and args[0] == "capture"):
        from .capture import hookclient
        hookclient.full_interpreter()
    if args and args[0] == "capture":
        from .capture import hookclient  # the standard library alone
        code, hook, answer, db_path = hookclient.through_daemon(args[1:])
        if code is None:  # no daemon stored it: the full capture path, with what the client read
            from .capture.hook import main as capture_main
            code = capture_main(args[1:], hook, answer=answer, db_path=db_path)
        if argv is None:
            # Leave at once: skipping interpreter teardown and the last connection's close-time
            # WAL checkpoint (an fsync) saves ~10 ms on every tool call. Committed work is
            # already durable in the WAL; the next writer's autocheckpoint folds it in.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
        return code
    from .cli import run
    return run(args)


def _run_by_path() -> int:
    """`python -I <dir>/attemptdb/__main__.py ARGS…`: import this very package, then run."""
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and p != here]
    if parent not in sys.path:
        if sys.flags.no_site:
            # `-S`: only the standard library is on the path; it stays first (an installed
            # package's parent is the site-packages, which never shadows the standard library)
            sys.path.append(parent)
        else:
            sys.path.insert(0, parent)
    import attemptdb.__main__ as package_main
    if os.path.dirname(os.path.abspath(package_main.__file__)) != here:
        return 70  # another attemptdb comes first: run nothing rather than the wrong code
    from attemptdb.capture import hookclient
    hookclient.lean = bool(sys.flags.no_site)
    return package_main.main()


if __name__ == "__main__":
    sys.exit(main() if __package__ else _run_by_path())
