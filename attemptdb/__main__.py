"""`attempt` run as `python -m attemptdb`, or by absolute path in isolated mode,
`<python> -I [-S] <dir>/attemptdb/__main__.py ARGS…` (resources.isolated_argv,
resources.lean_hook_argv): how the capture daemon is started and the hook command the installer
writes (spec/capture-daemon.md). The dispatch is attemptdb.launcher's.

Such a process imports nothing from its working directory nor from PYTHON* variables (DESIGN.md
invariant 8): `-I` keeps those off `sys.path`; the bootstrap below drops any relative entry
left, puts the directory holding *this* package on the path when the interpreter's own paths
lack it, and refuses to run (exit 70) when another `attemptdb` would be imported. With `-S` (no
`site`) a hook a daemon serves runs the interpreter and the standard library only; whatever else
runs in such a process loads the site-packages first (`capture.hookclient.full_interpreter`).
This file is compiled on every such start: it holds the bootstrap only.
"""

import sys


def _run_by_path() -> int:
    """This very package, then its launcher."""
    f = __file__
    parts = f.split("/")
    if parts[0] != "" or "" in parts[1:] or "." in parts or ".." in parts:
        import os  # the hook command names it absolute and plain: no `os` needed then
        f = os.path.abspath(f)
    here = f[:f.rfind("/")]
    parent = here[:here.rfind("/")] or "/"
    paths = [p for p in sys.path if p.startswith("/") and p != here]
    if parent not in paths:
        # `-S`: only the standard library is on the path; it stays first (an installed
        # package's parent is the site-packages, which never shadows the standard library)
        paths.insert(len(paths) if sys.flags.no_site else 0, parent)
    sys.path[:] = paths
    import attemptdb
    if list(attemptdb.__path__) != [here]:
        return 70  # another attemptdb comes first: run nothing rather than the wrong code
    from attemptdb.launcher import by_path
    return by_path()


if __name__ != "__main__":
    from .launcher import main  # an `attempt` script installed before launcher.py imports it from here
elif __package__:
    from .launcher import main
    sys.exit(main())
else:
    sys.exit(_run_by_path())
