"""Where the database lives: `--db` / `ATTEMPTDB_PATH`, a trusted project-local
`.attemptdb/attempt.db` found by walking up, else the per-user data directory.

Invariant: a project-local database is used only when its `.attemptdb` directory is a real
directory (not a symlink) owned by the current user and not group- or world-writable, and the
database file is a regular file owned by the user — a cloned repository is attacker input.
Only `os` is imported: this runs on the hook path.
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


def default_db() -> str:
    return os.path.join(data_dir(), DB_NAME)


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
    return True


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
