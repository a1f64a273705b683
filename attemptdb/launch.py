"""Run AttemptDB by absolute path, isolated from the working directory and PYTHON* variables:
`<python> -I <dir>/attemptdb/launch.py ARGS…` runs `attempt ARGS…` (spec/capture-daemon.md).

Invariant (DESIGN.md invariant 8): a process started this way imports nothing from the
directory it was started in nor from PYTHONPATH/PYTHONSTARTUP/PYTHONHOME. `-I` keeps the
current and the script's directory, user site-packages and every PYTHON* variable away from
`sys.path`; this file then drops any relative entry left and puts the directory holding *this*
`attemptdb` package first (unless the interpreter's own paths already hold it), so the process
runs the same AttemptDB code as the process that chose this file: an installed package or a
source checkout alike. It is what the capture daemon is started with, and the hook command the
installer writes when no `attempt` executable exists.
"""

import os
import sys


def argv() -> list:
    """`[python, "-I", <this file>]`, absolute: how to start AttemptDB isolated, with the running
    interpreter (its path as given, so a virtual environment stays itself) and this package."""
    return [os.path.abspath(sys.executable), "-I", os.path.abspath(__file__)]


def _main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and p != here]
    if parent not in sys.path:
        sys.path.insert(0, parent)
    import attemptdb
    if os.path.dirname(os.path.abspath(attemptdb.__file__)) != here:
        return 70  # another attemptdb comes first: run nothing rather than the wrong code
    from attemptdb.__main__ import main
    return main()


if __name__ == "__main__":
    sys.exit(_main())
