"""What an SQLite failure means for the user, as a coded error (DESIGN.md invariant 7).

The same condition gets the same code wherever it is met: a full disk is `store.disk_full`
whether an import's COMMIT or a read's shared-memory file ran out of space; a malformed file is
`store.corrupt` (and marked damaged: attemptdb.integrity.damage) whether SQLite found it while opening,
verifying or reading; a file that cannot be written is `store.read_only`. Messages say what is
wrong and what to do, and never quote the file's content.
Only os and apsw: Store.open uses it.
"""

import os

import apsw

from ..errors import AttemptError


def no_space(path: str | None) -> bool:
    """The filesystem holding `path` has no space left for us (statvfs; False if unknown)."""
    if not path or not hasattr(os, "statvfs"):
        return False
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)) or ".")
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024 or (st.f_files and st.f_favail == 0)


def unwritable(path: str) -> bool:
    """The database file or its folder cannot be written (a read-only file, folder or
    filesystem), so SQLite cannot create the -wal/-shm files beside it."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    try:
        if hasattr(os, "statvfs") and os.statvfs(d).f_flag & getattr(os, "ST_RDONLY", 1):
            return True
    except OSError:
        pass
    return not os.access(d, os.W_OK) or not os.access(path, os.W_OK)


def read_only_sides(path: str | None) -> list:
    """[(file, mode, owner uid)] of the -wal and -shm beside the database at `path` (beside the
    file a symlink names) that this user cannot write while it can write the file itself.
    SQLite then opens them read-only and every write fails as if the file were read-only: it
    gives them the file's mode when it makes them, so a -shm made while the file was 0400 stays
    0400 after a `chmod 600` of the file (sidefiles.free_sides repairs one of ours)."""
    if not path or os.name != "posix":
        return []
    import stat
    real = os.path.realpath(path)
    try:
        if not os.access(real, os.W_OK):
            return []
    except (OSError, ValueError):
        return []
    out = []
    for side in ("-wal", "-shm"):
        try:
            st = os.lstat(real + side)
            if stat.S_ISREG(st.st_mode) and not os.access(real + side, os.W_OK):
                out.append((real + side, stat.S_IMODE(st.st_mode), st.st_uid))
        except (OSError, ValueError):
            continue
    return out


def sides_said(sides) -> str:
    """`read_only_sides` in words, with what to do: a file of ours needs its write bit back
    (sidefiles.free_sides gives it the file's mode on a capture's or a read's next write);
    another user's must be made ours first."""
    import shlex
    mine = os.geteuid() if hasattr(os, "geteuid") else None
    ours = [f for f, _m, uid in sides if uid == mine]
    theirs = [f for f, _m, uid in sides if uid != mine]
    named = " and ".join(f"{f} (mode {m:o}" + ("" if uid == mine else f", owned by uid {uid}") + ")"
                         for f, m, uid in sides)
    todo = []
    if ours:
        todo.append(f"run `chmod u+w {' '.join(shlex.quote(f) for f in ours)}` (the next capture or read "
                    "command does it for you)")
    if theirs:
        todo.append(f"have it made yours: `sudo chown {mine} {' '.join(shlex.quote(f) for f in theirs)}`")
    return (f"{named} beside it cannot be written while the file itself can, so SQLite opens the database "
            f"read-only and refuses every write; {' and '.join(todo)}")


def disk_full(path: str | None) -> AttemptError:
    where = f" ({path})" if path else ""
    return AttemptError("store.disk_full", f"the disk holding the database{where} is full; what was already "
                        "committed stays, free some space and run the command again")


def corrupt(path: str | None, by: str = "a command") -> AttemptError:
    from ..integrity import damage
    if path:
        damage.mark(path, "SQLite reports the file malformed", by)
    return AttemptError("store.corrupt", f"{path or 'the database'} is damaged: SQLite cannot read part of it "
                        "(a malformed page); nothing more is written to it. `attempt verify` says more, "
                        "`attempt recover` builds a sound copy from what is readable (spec/recover.md)")


def condition(e: BaseException, path: str | None = None) -> str | None:
    """The one reading of an SQLite failure: `corrupt`, `full`, `read_only`, `io`, `cannot_open`,
    `busy`, `interrupted`, `denied` (the authorizer refused), `too_big`, `bad_json` (a stored
    row's JSON no longer parses), `not_utf8`, or None (an SQL error of the statement itself).
    Store commands (`coded`) and queries (attemptdb.query.execute) name each condition in their
    own codes."""
    if isinstance(e, UnicodeDecodeError):
        return "not_utf8"
    if isinstance(e, (apsw.CorruptError, apsw.NotADBError)):
        return "corrupt"
    if isinstance(e, apsw.FullError) or (isinstance(e, (apsw.IOError, apsw.CantOpenError)) and no_space(path)):
        return "full"
    if isinstance(e, apsw.AuthError):
        return "denied"
    if isinstance(e, (apsw.ReadOnlyError, apsw.PermissionsError)):
        return "read_only"
    if isinstance(e, apsw.IOError):
        return "io"
    if isinstance(e, apsw.CantOpenError):
        return "cannot_open"
    if isinstance(e, (apsw.BusyError, apsw.LockedError)):
        return "busy"
    if isinstance(e, apsw.InterruptError):
        return "interrupted"
    if isinstance(e, (apsw.NoMemError, apsw.TooBigError)):
        return "too_big"
    if isinstance(e, apsw.SQLError) and "JSON" in str(e):
        return "bad_json"
    return None


def coded(e: BaseException, path: str | None, by: str = "a command") -> AttemptError | None:
    """The coded error for an SQLite (or undecodable text) failure on the file at `path`, or
    None when it is none of the conditions named here."""
    found = condition(e, path)
    where = path or "the database"
    if found == "corrupt":
        return corrupt(path, by)
    if found == "full":
        return disk_full(path)
    if found in ("read_only", "denied"):
        sides = read_only_sides(path) if found == "read_only" else []
        if sides:
            return AttemptError("store.read_only", f"{where} cannot be written: {sides_said(sides)}; "
                                "commands that only read still work")
        return AttemptError("store.read_only", f"{where} cannot be written (a read-only file, "
                            "directory or filesystem); commands that only read still work")
    if found == "io":
        return AttemptError("store.io", f"the disk returned an I/O error on {where}; what was "
                            "committed stays (SQLite rolls back what was not); check the disk, then run the "
                            "command again and `attempt verify`")
    if found == "cannot_open":
        return AttemptError("store.cannot_open", f"cannot open {where} (or its -wal/-shm files beside it)")
    if found == "not_utf8":
        return AttemptError("store.text_not_utf8", f"{where} holds text that is not valid UTF-8: "
                            "a row was edited outside AttemptDB or the file is damaged; `attempt verify` names "
                            "it", exit_status=1)
    if found == "busy":
        # the busy timeout ran out: a long writer (import, reproject) holds the lock
        return AttemptError("store.busy", "another process held the database's write lock too long (an "
                            "import or a reproject); what was already committed stays, try again when it has "
                            "finished")
    if found == "bad_json":  # the projections read a stored row's JSON and it is no longer JSON
        return AttemptError("store.bad_row", f"{where} holds an event whose JSON is malformed: the row was "
                            "edited outside AttemptDB or the file is damaged; `attempt verify` names it, "
                            "`attempt recover` builds a copy without it (spec/recover.md)", exit_status=1)
    return None
