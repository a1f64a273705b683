"""The capture daemon's server side: one process per database and state directory that keeps
the file open and runs the hook pipeline (`hook.run`) for each hook that connects
(spec/capture-daemon.md; the hook side, and the request both ends keep, are in `hookclient`).

Invariants: it answers `ok` only after the event is committed or spooled, as the hook would
have; it serves only its own user (0700 socket directory, peer uid checked); it leaves when
idle, stopped, or when its file or its code changed (`stale`); it works from `/`.
"""

import os
import time

from . import daemon, hookclient, hooklog
from . import hook as capture

IDLE_S = 300.0
OPEN_BUSY_S = 30.0  # how long a starting daemon waits for the hooks' write locks
HEADER_MAX = 64 * 1024
READ_S = 5.0  # a connection that does not deliver its request in time is dropped
SIGN_AFTER_S = 0.5  # a committed capture is signed outside the file this long after, at most


class Daemon:
    def __init__(self, db_path: str):
        self.db = os.path.abspath(db_path)
        self.sock_path = hookclient.endpoint(self.db)
        self.code = hookclient.code_stamp()
        self.store = None
        self.file_id = None
        self.stopping = False
        self.unsigned_since = None  # monotonic time of the oldest request not yet signed

    def _open(self) -> None:
        """Open (creating or migrating) the database. Hooks are arriving meanwhile and writing it
        themselves (a first burst creates the file): the daemon waits for their locks as long as
        OPEN_BUSY_S, where a hook gives up after CAPTURE_BUSY_S (a daemon that gave up at start
        would leave no daemon for the hooks after the burst), then serves with the hooks' timeout."""
        from ..store.database import Store
        from . import spool
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
        from ..model import fastjson, ids
        conn.settimeout(READ_S)
        if not hookclient.peer_uid_ok(conn):
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
            ok = (req.get("v") == 1 and isinstance(n, int) and 0 <= n <= hookclient.STDIN_CAP
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
        hook = hookclient.Hook(data[:n], req.get("truncated") is True,
                            cwd if cwd is not None and os.path.isabs(cwd) else None,
                            _text(req.get("claude_project_dir")),
                            captured if isinstance(captured, int) and not isinstance(captured, bool) else None,
                            eid if isinstance(eid, str) and ids.is_uuid(eid) else None)
        # no chdir: the daemon stays in `/` and the pipeline resolves the hook's relative paths
        # against hook.cwd, so nothing in the repository is ever this process's directory
        try:
            capture.run(req["argv"] + ["--db", self.db], hook, store=self.store)
        except Exception as e:
            hooklog.log(f"daemon err=internal:{hooklog.why(e)}")
            conn.sendall(b"error\n")
            return
        if capture.seen.get("unsaid"):  # not stored, spooled or counted: the hook says so itself
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
            daemon.unlink_quietly(self.sock_path + ".starting")
            return 0
        srv = None
        try:
            self._open()
            daemon.unlink_quietly(self.sock_path)  # a dead daemon's socket
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
            daemon.unlink_quietly(self.sock_path + ".starting")
            self._loop(srv)
            self.sign_if_due(now=True)
        finally:
            for suffix in ("", ".pid", ".starting"):
                daemon.unlink_quietly(self.sock_path + suffix)
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
                hooklog.log(f"daemon err=connection:{hooklog.why(e)}")
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
        from ..integrity import checkpoint
        try:
            checkpoint.maybe_checkpoint(self.store, quiet=True)
        except Exception as e:
            hooklog.log(f"daemon err=checkpoint:{hooklog.why(e)}")


def _text(v):
    return v if isinstance(v, str) and "\0" not in v else None


def run(db_path: str) -> int:
    """`attempt daemon run`: serve one database in the foreground until idle, from `/` (never
    from the directory of the hook that started it)."""
    db_path = os.path.abspath(db_path)
    os.chdir("/")
    path = hookclient.endpoint(db_path)
    if path is None:
        return 0
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if not hookclient.private_dir(os.path.dirname(path)):
        from ..errors import AttemptError
        raise AttemptError("daemon.socket_dir", "the socket directory is not private to this user")
    return Daemon(db_path).serve()
