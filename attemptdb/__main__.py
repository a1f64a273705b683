"""`attempt` entry point. `attempt capture …` takes the lean hook path (no click, no
jsonschema, no cryptography); everything else loads the click CLI.

Also runnable by absolute path in isolated mode, `<python> -I <dir>/attemptdb/__main__.py ARGS…`
(attemptdb.resources.isolated_argv): how the capture daemon is started, and the hook command
the installer writes when no `attempt` executable exists (spec/capture-daemon.md). Such a
process imports nothing from its working directory (the repository a hook runs in) nor from
PYTHON* variables (DESIGN.md invariant 8): `-I` keeps the current and the script's directory,
user site-packages and every PYTHON* variable off `sys.path`, and the bootstrap below drops any
relative entry left and puts the directory holding *this* package first when the interpreter's
own paths lack it (a source checkout), so the process runs the same code as its starter.
"""

import os
import sys


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "capture":
        from .capture.hook import main as capture_main
        code = capture_main(args[1:])
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
    from .cli.main import run
    return run(args)


def _run_by_path() -> int:
    """`python -I <dir>/attemptdb/__main__.py ARGS…`: import this very package, then run."""
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and p != here]
    if parent not in sys.path:
        sys.path.insert(0, parent)
    import attemptdb.__main__ as package_main
    if os.path.dirname(os.path.abspath(package_main.__file__)) != here:
        return 70  # another attemptdb comes first: run nothing rather than the wrong code
    return package_main.main()


if __name__ == "__main__":
    sys.exit(main() if __package__ else _run_by_path())
