"""The capture daemon: a hook hands its payload to a process that already has the database
open, so a tool call pays for the interpreter and a socket round trip, not for importing
apsw, parsing the schema and compiling the projection triggers (spec/capture-daemon.md).

Invariants:
- Same result as without it: the daemon runs `capture.run`, the hook pipeline, with the hook's
  argv, stdin bytes, working directory, `CLAUDE_PROJECT_DIR`, capture time and event id. It
  answers `ok` only after the event is committed (or spooled, as a hook would); on any other
  answer, or none within REPLY_S, the hook does the work itself with the same event id, so an
  event the daemon committed before dying is stored once (dedup by event id).
- One daemon per database and state directory (the socket name is a hash of both and every
  request names the database; a daemon whose file was replaced or whose code changed on disk
  says `stale` and exits). Only the user's own processes talk to it: the socket directory is
  0700 and owned by the user, and both ends check the peer's uid.
- Never in the way: the hook side imports only `_socket` and what the hook path already has;
  a daemon leaves after IDLE_S without a call; `ATTEMPTDB_NO_DAEMON=1` turns it off.
- Isolated from the repository a hook ran in (DESIGN.md invariant 8): the daemon is started
  as `python -I …/attemptdb/__main__.py` (no working directory, script directory or PYTHON*
  variable reaches its imports; it runs the hook's own package) and works from `/`, never
  changing into a hook's directory.
"""

import os
import sys
import time

REPLY_S = 3.0  # the hook waits this long for the commit, then does the work itself
_SO_PEERCRED = 17  # Linux


def enabled() -> bool:
    """On unless ATTEMPTDB_NO_DAEMON is set; only where Unix sockets and posix_spawn exist."""
    return (os.environ.get("ATTEMPTDB_NO_DAEMON", "") in ("", "0") and hasattr(os, "getuid")
            and hasattr(os, "posix_spawn"))


HOOK_PATH_FOLDERS = ("adapters", "capture", "ingest", "integrity", "model", "store")


def code_stamp() -> str:
    """Changes whenever the installed hook code changes: the version, and the newest mtime and
    the number of the files of the folders the hook path runs from, and of the migrations (an
    upgrade, an edit, a new migration). A daemon started from other code answers `stale`."""
    from .. import __version__
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    newest = count = 0
    for d in (pkg, *(os.path.join(pkg, f) for f in HOOK_PATH_FOLDERS),
              os.path.join(pkg, "migrations"), os.path.join(os.path.dirname(pkg), "migrations")):
        try:
            with os.scandir(d) as it:
                for entry in it:
                    if entry.name.endswith((".py", ".sql")):
                        count += 1
                        newest = max(newest, entry.stat().st_mtime_ns)
        except OSError:
            continue
    return f"{__version__}:{newest}:{count}"


def endpoint(db_path: str, state: str | None = None) -> str | None:
    """The socket for this database and state directory (default: this process's): in
    `$XDG_RUNTIME_DIR/attemptdb`, else `<state>/run`, else (a path too long for a Unix socket)
    `/tmp/attemptdb-<uid>`; None when even that is too long (hooks then write directly)."""
    from ..store import location
    from ..model.ids import sha256
    state = state or location.state_dir()
    digest = sha256(f"{os.path.abspath(db_path)}\0{state}".encode("utf-8", "surrogatepass")).hexdigest()[:20]
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    run_dir = os.path.join(base, "attemptdb") if base and os.path.isabs(base) and os.path.isdir(base) \
        else os.path.join(state, "run")
    for d in (run_dir, os.path.join("/tmp", f"attemptdb-{os.getuid()}")):  # sun_path holds ~100 bytes
        path = os.path.join(d, f"capture-{digest}.sock")
        if len(path.encode("utf-8", "surrogatepass")) < 100:
            return path
    return None


def private_dir(path: str) -> bool:
    """The socket directory is ours alone: a directory (not a symlink), our uid, mode 0700."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    import stat
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def peer_is_us(sock) -> bool:
    import _socket
    if not hasattr(_socket, "SO_PEERCRED"):
        return True  # the 0700 directory is the only check there
    try:
        cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    except OSError:
        return False
    return int.from_bytes(cred[4:8], sys.byteorder) == os.getuid()


def unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# --- the hook side -------------------------------------------------------------------------

def deliver(db_path: str, argv: list, hook) -> str:
    """Hand one hook invocation to the daemon. Returns "ok" (committed or spooled by the
    daemon), "absent" (no daemon: start one), or another word (do the work here)."""
    path = endpoint(db_path)
    if path is None:
        return "unsupported"
    if not private_dir(os.path.dirname(path)):
        return "absent"
    import _socket
    from ..model import fastjson
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(REPLY_S)
        try:
            s.connect(path)
        except OSError:
            return "absent"
        if not peer_is_us(s):
            return "foreign"
        header = {"v": 1, "code": code_stamp(), "db": os.path.abspath(db_path), "argv": list(argv),
                  "cwd": hook.cwd, "claude_project_dir": hook.claude_project_dir,
                  "captured_at": hook.captured_at, "event_id": hook.event_id,
                  "truncated": hook.truncated, "n": len(hook.data)}
        s.sendall(fastjson.dumps(header).encode("utf-8", "surrogatepass") + b"\n" + hook.data)
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 64:
            chunk = s.recv(64)
            if not chunk:
                break
            answer += chunk
        return answer.strip().decode("ascii", "replace") or "closed"
    except OSError:
        return "timeout"
    finally:
        s.close()


STARTING_S = 10.0  # a start marker older than this belongs to a daemon that never came up


def spawn(db_path: str) -> None:
    """Start a daemon for `db_path` in its own session, detached from the hook's pipes. Of
    many hooks arriving together, the one that creates `<socket>.starting` starts it (the
    daemon removes the marker once it listens); a second daemon would find the lock taken
    and exit anyway."""
    path = endpoint(db_path)
    if path is None:
        return
    run_dir = os.path.dirname(path)
    try:
        os.makedirs(run_dir, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not private_dir(run_dir):
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
    path = endpoint(db_path, state)
    if path is None or not private_dir(os.path.dirname(path)):
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
    path = endpoint(db_path, state)
    try:
        with open(path + ".pid") as f:
            return int(f.read(32).strip())  # a pid; a larger file is not ours
    except (OSError, ValueError, TypeError):
        return None
