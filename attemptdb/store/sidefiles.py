"""The files SQLite keeps beside a database (`-wal`, `-shm`, `-journal`): what they say about
the main file before SQLite opens it, and their modes.

Invariants: nothing here opens the file through SQLite or holds a descriptor of it while SQLite
does (closing one would drop the POSIX locks SQLite holds); modes are changed only on files of
this process's user, never through a symlink. Only the standard library's C-backed modules are
imported: `attempt capture` uses this module.
"""

import os
import stat
import time

JOURNAL_SETTLE_S = 1.0
"""How long a `-journal` beside a WAL file may take to go before it is taken for a stray one: the
process creating the file turns it to WAL in a first, rollback-journal transaction, and a hook
and the daemon it starts open a new file at the same moment (milliseconds, longer under load)."""


def stray_journal(path: str) -> bool:
    """A non-empty `-journal` beside a file whose header says WAL (bytes 18-19 = 2) that stays
    there (JOURNAL_SETTLE_S). SQLite plays a hot journal back into the file before it looks at
    the WAL, whatever database the journal came from; an AttemptDB file is in WAL mode from its
    first write, so it has one only while another process is creating it."""
    end = None
    while journal_beside_wal(path):
        now = time.monotonic()
        end = now + JOURNAL_SETTLE_S if end is None else end
        if now >= end:
            return True
        time.sleep(0.01)
    return False


def journal_beside_wal(path: str) -> bool:
    """A non-empty -journal beside a file in WAL mode (which SQLite would play into it). A -wal
    or -shm beside it says WAL without reading the file: a process that has the file open
    through SQLite (the capture daemon, `attempt ui`) must never open and close a descriptor of
    it, whose close would drop every POSIX lock the process holds on it."""
    real = os.path.realpath(path)  # SQLite puts the journal beside the file a symlink names
    if not size(real + "-journal"):
        return False
    if os.path.lexists(real + "-shm") or os.path.lexists(real + "-wal"):
        return True
    try:
        with open(real, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head[18] == 2 and head[19] == 2


SIDE_FILES = ("", "-wal", "-shm")


def make_private(path: str) -> None:
    """Mode 0600 (at most: `chmod go=`) for a file AttemptDB turns into a database (nothing in it
    yet: a `touch`ed file has the umask's 0644) and a -wal or -shm another opener made beside it;
    SQLite creates them with the file's mode, and they will hold prompts, commands and output.
    Only files of this process's user, never through a symlink (O_NOFOLLOW); anything that fails
    leaves the file as it was. Never while this process has the file open through SQLite: the
    close of the descriptor opened here would drop the POSIX locks SQLite holds on it."""
    if os.name != "posix":
        return
    for p in (path + side for side in SIDE_FILES):
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o600)
        except OSError:
            pass
        finally:
            os.close(fd)


def free_sides(path: str) -> bool:
    """After a read-only failure of a write: a -wal or -shm of this user's that it cannot write
    while it can write the file (sqlerrors.read_only_sides: SQLite made it while the file was
    read-only, with the file's mode) gets the file's mode back. Never through a symlink, never
    another user's file, never a descriptor of the file (closing one would drop the locks SQLite
    holds on it). True when one changed: a connection opened before must be reopened to write."""
    from . import sqlerrors
    stuck = sqlerrors.read_only_sides(path)
    if not stuck:
        return False
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return False
    changed = False
    for side, _mode, uid in stuck:
        if uid != os.geteuid():
            continue
        try:
            st = os.lstat(side)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                os.chmod(side, mode | stat.S_IWUSR, follow_symlinks=False)
                changed = True
        except (OSError, NotImplementedError):
            continue
    return changed


def exposed(path: str) -> list:
    """[(file, mode)] of the database at `path` and its -wal and -shm (beside the file a symlink
    names, where SQLite keeps them) that its group or others may read or write."""
    if os.name != "posix":
        return []
    real = os.path.realpath(path)
    out = []
    for side in SIDE_FILES:
        try:
            st = os.stat(real + side)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
            out.append((real + side, stat.S_IMODE(st.st_mode)))
    return out




def size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def wal_without_file(path: str) -> int:
    """Bytes of a `-wal` beside a main file of none (0 when there is no such -wal). A file turns
    to WAL in a first rollback-journal transaction that writes its page 1, before its -wal holds
    a frame, and a WAL file never shrinks to nothing: so this is a main file truncated, or
    replaced by an empty one. SQLite deletes such a -wal when it opens the file, and with it the
    newest rows, which `attempt recover` reads from a copy."""
    if size(path):  # the file a symlink names, by one stat: the common case, on every writer's close
        return 0
    real = os.path.realpath(path)  # SQLite keeps the -wal beside the file a symlink names
    wal = size(real + "-wal")
    return 0 if not wal or size(real) else wal  # the main looked at again: it is written first
