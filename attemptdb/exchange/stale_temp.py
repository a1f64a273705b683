"""Temporary files an export writes beside its output carry the writer's pid in their name; one
a writer killed with -9 left is removed by a later export into the same folder.

Invariants: only a name the caller's pattern matches exactly (group 1: the pid) is ever
considered; only a regular file of this user (never a link, never followed) whose writer's pid is
not alive here and which nobody touched for STALE_AFTER_S (a writer on another machine sharing the
folder has a pid meaningless here, and keeps its file fresher); nothing else is tried."""

import contextlib
import os
import stat
import time

STALE_AFTER_S = 3600


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a process id: kill(0) would signal the group; leave the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's process, alive
        return True
    return True


def clear(out_dir: str, pattern) -> None:
    """Remove the stale temporary files in `out_dir` whose names `pattern` (a compiled regular
    expression, group 1 the writer's pid) matches whole."""
    try:
        names = os.listdir(out_dir)
    except OSError:
        return
    for name in names:
        found = pattern.fullmatch(name)
        if found is None or pid_alive(int(found.group(1))):
            continue
        path = os.path.join(out_dir, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and time.time() - st.st_mtime > STALE_AFTER_S:
            with contextlib.suppress(OSError):
                os.unlink(path)  # unlink never follows a link
