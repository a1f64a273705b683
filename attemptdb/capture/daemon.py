"""The capture daemon, as its starters see it: spawning one for a database and finding the
one serving it (the hook's side of a request is capture.hookclient, the daemon's own side
capture.daemon_server). A hook hands its payload to a process that already has the database
open, so a tool call pays for the interpreter and a socket round trip, not for importing
apsw, parsing the schema and compiling the projection triggers (spec/capture-daemon.md).

Invariants:
- Same result as without it: the daemon runs the hook pipeline (capture.hook.prepare) with the
  hook's argv, stdin bytes, working directory, `CLAUDE_PROJECT_DIR`, capture time and event
  id. It answers `ok` once the event is spooled (then commits it right after) or, when no
  spool takes it, committed; on any other answer, or none within REPLY_S, the hook does the
  work itself with the same event id, so an event the daemon spooled or committed before
  dying is stored once (dedup by event id).
- One daemon per database and state directory (the socket name is a hash of both and every
  request names the database and the code it runs; a daemon whose file was replaced, or whose
  code is not the hook's or changed on disk, says `stale` and exits). Only the user's own
  processes talk to it: the socket directory is 0700 and owned by the user, and both ends
  check the peer's uid.
- Never in the way: the hook side (capture.hookclient) is the standard library alone (not even
  `os`); a daemon leaves after IDLE_S without a call; `ATTEMPTDB_NO_DAEMON=1` turns it off.
- Isolated from the repository a hook ran in (DESIGN.md invariant 8): the daemon is started
  as `python -I …/attemptdb/__main__.py` (no working directory, script directory or PYTHON*
  variable reaches its imports; it runs the hook's own package) and works from `/`, never
  changing into a hook's directory.
"""

import os
import sys
import time

from . import hookclient


def unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


STARTING_S = 10.0  # a start marker older than this belongs to a daemon that never came up


def spawn(db_path: str) -> None:
    """Start a daemon for `db_path` in its own session, detached from the hook's pipes. Of
    many hooks arriving together, the one that creates `<socket>.starting` starts it (the
    daemon removes the marker once it listens); a second daemon would find the lock taken
    and exit anyway."""
    path = hookclient.endpoint(db_path)
    if path is None:
        return
    run_dir = os.path.dirname(path)
    try:
        os.makedirs(run_dir, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not hookclient.private_dir(run_dir):
        return
    marker = path + ".starting"
    for _ in range(2):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600))
            break
        except FileExistsError:
            try:
                if time.time() - os.lstat(marker).st_mtime < STARTING_S:
                    return  # another hook is starting one
                os.unlink(marker)
            except OSError:
                return
    else:
        return
    if not sys.executable:
        unlink_quietly(marker)
        return  # no interpreter to name: hooks keep writing the file themselves
    from ..resources import isolated_argv
    cmd = isolated_argv() + ["daemon", "run", "--db", os.path.abspath(db_path)]
    null = os.devnull
    try:
        # isolated (`-I`, an absolute script: nothing from the hook's working directory or its
        # PYTHON* variables is imported); the daemon moves to `/` before anything else
        os.posix_spawn(cmd[0], cmd, dict(os.environ),
                       file_actions=[(os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0)],
                       setsid=True)
    except NotImplementedError:  # no POSIX_SPAWN_SETSID here: hooks keep writing the file themselves
        pass


def serving_pid(db_path: str, state: str | None = None) -> int | None:
    """The pid of the daemon serving this database right now, or None. Asked of the socket
    itself — the listening process's credentials (SO_PEERCRED, Linux), of our own uid — never
    taken from the `.pid` file alone: after a `kill -9` that file is left behind, and once its
    pid is reused it names an unrelated process. (Elsewhere: the pid file, but only while a
    daemon answers on the socket, which it binds before writing that file.) The connection is
    closed at once; the daemon reads end-of-file and drops it."""
    path = hookclient.endpoint(db_path, state)
    if path is None or not hookclient.private_dir(os.path.dirname(path)):
        return None
    import _socket
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(1.0)
        try:
            s.connect(path)
        except OSError:
            return None
        if not hasattr(_socket, "SO_PEERCRED"):
            return pid(db_path, state)
        try:
            cred = s.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        except OSError:
            return None
        peer = int.from_bytes(cred[0:4], sys.byteorder)
        uid = int.from_bytes(cred[4:8], sys.byteorder)
        return peer if peer > 0 and uid == os.getuid() else None
    finally:
        s.close()


def pid(db_path: str, state: str | None = None) -> int | None:
    """The pid a daemon for this database recorded (it may have died since, and the number may
    belong to another process by now: to signal a daemon, use serving_pid)."""
    path = hookclient.endpoint(db_path, state)
    try:
        with open(path + ".pid") as f:
            return int(f.read(32).strip())  # a pid; a larger file is not ours
    except (OSError, ValueError, TypeError):
        return None
