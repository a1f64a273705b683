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
- Never in the way: the hook side (attemptdb/hookclient.py) is the standard library alone;
  a daemon leaves after IDLE_S without a call; `ATTEMPTDB_NO_DAEMON=1` turns it off.
- Isolated from the repository a hook ran in (DESIGN.md invariant 8): the daemon is started
  as `python -I …/attemptdb/__main__.py` (no working directory, script directory or PYTHON*
  variable reaches its imports; it runs the hook's own package) and works from `/`, never
  changing into a hook's directory.
"""

import os
import sys
import time

IDLE_S = 300.0
OPEN_BUSY_S = 30.0  # how long a starting daemon waits for the hooks' write locks
HEADER_MAX = 64 * 1024
READ_S = 5.0  # a connection that does not deliver its request in time is dropped
SIGN_AFTER_S = 0.5  # a committed capture is signed outside the file this long after, at most
_SO_PEERCRED = 17  # Linux


# the hook's side lives in hookclient (standard library only, run without `site`); one
# definition of the socket name, the code stamp and the request for both ends
from .hookclient import code_stamp, enabled, endpoint, peer_uid_ok as _peer_uid_ok, private_dir  # noqa: E402,F401


# --- the hook side -------------------------------------------------------------------------

def deliver(db_path: str, argv: list, hook) -> str:
    """Hand one hook invocation to the daemon. Returns "ok" (committed or spooled by the
    daemon), "absent" (no daemon: start one), or another word (do the work here)."""
    from .hookclient import request
    return request(db_path, argv, hook, code_stamp())


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
        _unlink(marker)
        return  # no interpreter to name: hooks keep writing the file themselves
    from .resources import isolated_argv
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


# --- the daemon side -----------------------------------------------------------------------

class Daemon:
    def __init__(self, db_path: str):
        self.db = os.path.abspath(db_path)
        self.sock_path = endpoint(self.db)
        self.code = code_stamp()
        self.store = None
        self.file_id = None
        self.stopping = False
        self.unsigned_since = None  # monotonic time of the oldest request not yet signed

    def _open(self) -> None:
        """Open (creating or migrating) the database. Hooks are arriving meanwhile and writing it
        themselves (a first burst creates the file): the daemon waits for their locks as long as
        OPEN_BUSY_S, where a hook gives up after CAPTURE_BUSY_S (a daemon that gave up at start
        would leave no daemon for the hooks after the burst), then serves with the hooks' timeout."""
        from . import capture, spool
        from .store import Store
        self.store = Store.open(self.db, create=True, busy_timeout_s=OPEN_BUSY_S)
        self.store.set_busy_timeout(capture.CAPTURE_BUSY_S)
        spool.prepare()
        st = os.stat(self.db)
        self.file_id = (st.st_dev, st.st_ino)

    def same_file(self) -> bool:
        try:
            st = os.stat(self.db)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.file_id

    def handle(self, conn) -> None:
        """One connection: read the request, run the hook pipeline, answer."""
        from . import capture, fastjson, ids
        conn.settimeout(READ_S)
        if not _peer_uid_ok(conn):
            return
        buf = b""
        while b"\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk or len(buf) > HEADER_MAX:
                return
            buf += chunk
        line, data = buf.split(b"\n", 1)
        try:
            req = fastjson.loads(line.decode("utf-8", "surrogatepass"))
            n = req["n"]
            ok = (req.get("v") == 1 and isinstance(n, int) and 0 <= n <= capture.STDIN_CAP
                  and isinstance(req.get("argv"), list) and all(isinstance(a, str) for a in req["argv"]))
        except Exception:
            ok = False
        if not ok:
            conn.sendall(b"bad\n")
            return
        if req.get("code") != self.code or req.get("db") != self.db or not self.same_file():
            conn.sendall(b"stale\n")
            self.stopping = True
            return
        while len(data) < n:
            chunk = conn.recv(min(1 << 20, n - len(data)))
            if not chunk:
                return
            data += chunk
        eid = req.get("event_id")
        captured = req.get("captured_at")
        cwd = _text(req.get("cwd"))
        hook = capture.Hook(data[:n], req.get("truncated") is True,
                            cwd if cwd is not None and os.path.isabs(cwd) else None,
                            _text(req.get("claude_project_dir")),
                            captured if isinstance(captured, int) and not isinstance(captured, bool) else None,
                            eid if isinstance(eid, str) and ids.is_uuid(eid) else None)
        # no chdir: the daemon stays in `/` and the pipeline resolves the hook's relative paths
        # against hook.cwd, so nothing in the repository is ever this process's directory
        try:
            capture.run(req["argv"] + ["--db", self.db], hook, store=self.store)
        except Exception as e:
            capture._log(f"daemon err=internal:{capture._why(e)}")
            conn.sendall(b"error\n")
            return
        if capture._seen.get("unsaid"):  # not stored, spooled or counted: the hook says so itself
            conn.sendall(b"error\n")
            return
        conn.sendall(b"ok\n")

    def serve(self) -> int:
        """Take the lock (or leave: another daemon serves this database), open the database,
        listen, and answer one connection at a time until idle, stopped or stale."""
        import fcntl
        import signal
        import socket
        lock = open(self.sock_path + ".lock", "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            _unlink(self.sock_path + ".starting")
            return 0
        srv = None
        try:
            self._open()
            _unlink(self.sock_path)  # a dead daemon's socket
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o077)
            try:
                srv.bind(self.sock_path)
            finally:
                os.umask(old)
            srv.listen(128)
            signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
            with open(self.sock_path + ".pid", "w") as f:
                f.write(f"{os.getpid()}\n")
            _unlink(self.sock_path + ".starting")
            self._loop(srv)
            self.sign_if_due(now=True)
        finally:
            for suffix in ("", ".pid", ".starting"):
                _unlink(self.sock_path + suffix)
            if srv is not None:
                srv.close()
            if self.store is not None:
                self.store.close()
            lock.close()
        return 0

    def _loop(self, srv) -> None:
        last = time.monotonic()
        while not self.stopping and time.monotonic() - last < IDLE_S:
            unsigned = self.unsigned_since
            srv.settimeout(1.0 if unsigned is None else max(0.01, SIGN_AFTER_S - (time.monotonic() - unsigned)))
            try:
                conn, _ = srv.accept()
            except OSError:  # the accept timeout: sign, check idle time and the file
                self.sign_if_due()
                if not self.same_file():
                    break
                continue
            try:
                self.handle(conn)
            except Exception as e:
                from . import capture
                capture._log(f"daemon err=connection:{capture._why(e)}")
            finally:
                conn.close()
            if self.unsigned_since is None:
                self.unsigned_since = time.monotonic()
            self.sign_if_due()
            last = time.monotonic()

    def sign_if_due(self, now: bool = False) -> None:
        """Sign the head once the oldest unsigned request is SIGN_AFTER_S old (or `now`), so a
        committed capture is covered by a signature outside the file within a second
        (spec/checkpoint.md); nothing to sign (a spooled event, no key) costs two reads."""
        since = self.unsigned_since
        if since is None or (not now and time.monotonic() - since < SIGN_AFTER_S):
            return
        self.unsigned_since = None
        from . import checkpoint
        try:
            checkpoint.maybe_checkpoint(self.store, quiet=True)
        except Exception as e:
            from . import capture
            capture._log(f"daemon err=checkpoint:{capture._why(e)}")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _text(v):
    return v if isinstance(v, str) and "\0" not in v else None


def run(db_path: str) -> int:
    """`attempt daemon run`: serve one database in the foreground until idle, from `/` (never
    from the directory of the hook that started it)."""
    db_path = os.path.abspath(db_path)
    os.chdir("/")
    path = endpoint(db_path)
    if path is None:
        return 0
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if not private_dir(os.path.dirname(path)):
        from .errors import AttemptError
        raise AttemptError("daemon.socket_dir", "the socket directory is not private to this user")
    return Daemon(db_path).serve()


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
