"""Where the database lives: `--db` / `ATTEMPTDB_PATH`, a trusted project-local
`.attemptdb/attempt.db` found by walking up, else the per-user data directory.

Invariant: a project-local database is used only when `attempt init --local` created it on
this account (its path is in `<data dir>/local-databases`), its `.attemptdb` directory is a
real directory (not a symlink) owned by the current user and not group- or world-writable, and
the database file is a regular file owned by the user. A cloned repository is attacker input:
`git clone` gives a shipped `.attemptdb` exactly the owner and modes of one made here, so only
the account's own record can tell them apart. Only `os` is imported: this runs on the hook path.
"""

import os
import stat

LOCAL_DIR = ".attemptdb"
DB_NAME = "attempt.db"
MAX_WALK = 64


def data_dir() -> str:
    """Per-user data directory: `$XDG_DATA_HOME/attemptdb` (absolute values only), else
    `~/.local/share/attemptdb`."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "attemptdb")
    return os.path.join(os.path.expanduser("~"), ".local", "share", "attemptdb")


def state_dir() -> str:
    """Per-user state (hook log, fallback spool, crash reports): `$XDG_STATE_HOME/attemptdb`
    (absolute values only), else `~/.local/state/attemptdb`."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "attemptdb")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "attemptdb")


def default_db() -> str:
    return os.path.join(data_dir(), DB_NAME)


LOCAL_REGISTRY = "local-databases"


def _registry() -> str:
    return os.path.join(data_dir(), LOCAL_REGISTRY)


def _entries() -> dict:
    """{absolute database path: recorded device id or None} of the registry. A line is the path,
    then (since the device id is recorded) a tab and `dev_<uuid>`."""
    out = {}
    try:
        with open(_registry(), encoding="utf-8", errors="replace") as f:
            for line in f:
                path, _, dev = line.rstrip("\n").partition("\t")
                out[path] = dev or None
    except OSError:
        pass
    return out


def registered_local(db_path: str) -> bool:
    """Was this project-local database created by `attempt init --local` on this account?"""
    return os.path.abspath(db_path) in _entries()


def local_device(db_path: str) -> str | None:
    """The device id `attempt init --local` recorded for this database (`dev_…`), if any."""
    return _entries().get(os.path.abspath(db_path))


def remember_local(db_path: str, device_id: str | None = None) -> None:
    """Record a project-local database `attempt init --local` made, with its device id once it
    has one (idempotent; the registry is rewritten whole, atomically)."""
    db_path = os.path.abspath(db_path)
    if "\n" in db_path or "\t" in db_path:
        return
    entries = _entries()
    if db_path in entries and (device_id is None or entries[db_path] == device_id):
        return
    entries[db_path] = device_id or entries.get(db_path)
    os.makedirs(data_dir(), mode=0o700, exist_ok=True)
    tmp = f"{_registry()}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(f"{p}\t{d}\n" if d else f"{p}\n" for p, d in entries.items()))
    os.replace(tmp, _registry())


DATABASES = "databases"
"""`<data dir>/databases`: for each database file this account gave an identity or signed, its real
path, a tab and its device id: what tells a history emptied in place (`> attempt.db`) from a file
nobody used yet."""


def _recorded() -> list:
    """(real path, device id) of every record of `<data dir>/databases` ([] when unreadable)."""
    try:
        with open(os.path.join(data_dir(), DATABASES), encoding="utf-8", errors="replace") as f:
            return [line.rstrip("\n").partition("\t")[::2] for line in f]
    except OSError:
        return []


def device_at(db_path: str) -> str | None:
    """The device id (`dev_…`) of the history this account last kept at `db_path`, if any."""
    real, found = os.path.realpath(db_path), None
    for path, dev in _recorded():
        if path == real and dev:
            found = dev
    return found


def other_holder(db_path: str, device_id: str) -> str | None:
    """Another file recorded as holding device `device_id`'s history that still exists: then the
    file at `db_path` is a copy of it (`cp attempt.db try.db`), or it of this one."""
    real = os.path.realpath(db_path)
    return next((path for path, dev in _recorded()
                 if dev == device_id and _other_file(path, real) and os.path.realpath(path) != real), None)


def _other_file(path: str, real: str) -> bool:
    """A record of another path that still names a file (a file removed on purpose begins a new
    history when made again: its record, a throwaway demo's, is dropped)."""
    return path != real and os.path.lexists(path)


def remember_database(db_path: str, device_id: str) -> None:
    """Record that `db_path` holds device `device_id`'s history (replacing what was recorded for
    the path, dropping records of files that are gone; the file is rewritten whole, atomically).
    Never raises: a record not written costs only the refusal `device_at` would give."""
    real = os.path.realpath(db_path)
    if "\n" in real or "\t" in real or device_at(real) == device_id:
        return
    registry = os.path.join(data_dir(), DATABASES)
    tmp = f"{registry}.{os.getpid()}.tmp"
    try:
        try:
            with open(registry, encoding="utf-8", errors="replace") as f:
                kept = [line for line in f if line.endswith("\n") and _other_file(line.partition("\t")[0], real)]
        except FileNotFoundError:
            kept = []
        os.makedirs(data_dir(), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(kept) + f"{real}\t{device_id}\n")
        os.replace(tmp, registry)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


GITIGNORE = ("# Written by `attempt init --local`: this directory holds your captured prompts and\n"
             "# commands. Never commit it.\n*\n")


def prepare_local(directory: str) -> None:
    """Make `directory` (`./.attemptdb`) ready for `attempt init --local`, or refuse.

    A repository is hostile (DESIGN.md invariant 8): it can ship `.attemptdb/` with a database,
    spooled events or a symlinked spool in it. So the directory must be absent (made 0700),
    or a real directory of this user that is empty (a `.gitignore` of ours aside) or that holds
    the database this account's `init --local` made there before. Anything else is refused
    (`init.local_not_ours`): nothing in it is adopted, moved or deleted. A `.gitignore`
    holding `*` keeps the directory out of `git status` and out of commits."""
    from ..errors import AttemptError
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow)
    except OSError:
        raise AttemptError("init.local_not_ours", f"{directory} exists and is not a directory of yours; "
                           "move it away, then run `attempt init --local` again") from None
    try:
        st = os.fstat(dfd)
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise AttemptError("init.local_not_ours", f"{directory} belongs to another user; "
                               "move it away, then run `attempt init --local` again")
        names = set(os.listdir(dfd))
        if names and not _ours_before(os.path.join(directory, DB_NAME)) and (
                names != {".gitignore"} or not _is_our_gitignore(dfd)):
            raise AttemptError(
                "init.local_not_ours",
                f"{directory} already holds files AttemptDB did not create on this account "
                "(a repository can ship them); move it away or remove it, then run "
                "`attempt init --local` again")
        os.fchmod(dfd, 0o700)
        try:
            fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600, dir_fd=dfd)
        except FileExistsError:
            return  # ours (checked above), or one the user wrote into their own database's directory
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(GITIGNORE)
    finally:
        os.close(dfd)


def _ours_before(db: str) -> bool:
    """The database this account's `init --local` made here: recorded, a regular file of ours."""
    try:
        st = os.lstat(db)
    except OSError:
        return False
    return (stat.S_ISREG(st.st_mode) and (not hasattr(os, "geteuid") or st.st_uid == os.geteuid())
            and registered_local(db))


def _is_our_gitignore(dfd: int) -> bool:
    try:
        fd = os.open(".gitignore", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dfd)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4096) == GITIGNORE.encode()
    finally:
        os.close(fd)


def trusted_local_dir(path: str) -> bool:
    """True when `path` (a `.attemptdb` directory) may be trusted as the user's own database."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    try:
        fst = os.lstat(os.path.join(path, DB_NAME))
    except OSError:
        return False
    if not stat.S_ISREG(fst.st_mode):
        return False
    if hasattr(os, "geteuid") and fst.st_uid != os.geteuid():
        return False
    return registered_local(os.path.join(path, DB_NAME))


def find_local(start: str | None = None) -> str | None:
    """The nearest trusted `.attemptdb/attempt.db` at or above `start` (default: cwd)."""
    try:
        d = os.path.abspath(start or os.getcwd())
    except OSError:
        return None
    for _ in range(MAX_WALK):
        cand = os.path.join(d, LOCAL_DIR)
        if trusted_local_dir(cand):
            return os.path.join(cand, DB_NAME)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return None


def resolve(explicit: str | None = None, cwd: str | None = None) -> str:
    """The database path for this invocation."""
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    env = os.environ.get("ATTEMPTDB_PATH")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return find_local(cwd) or default_db()


def key_dir() -> str:
    """Where device keys and the out-of-file checkpoint copies live (never inside a database
    directory a repository could ship): `$ATTEMPTDB_KEY_DIR`, else `<data dir>/keys`."""
    env = os.environ.get("ATTEMPTDB_KEY_DIR", "")
    if env and os.path.isabs(env):
        return env
    return os.path.join(data_dir(), "keys")
