"""The capture daemon's server side: one process per database and state directory that keeps
the file open and runs the hook pipeline for each hook that connects (spec/capture-daemon.md;
the hook side, and the request both ends keep, are in `hookclient`).

Invariants: it answers `ok` only once the event is durably received — its envelope, after the
privacy contract, spooled (`hook.receive`, into a spool file made ahead: `spool.reserve`), or
when no spool can take it, committed or counted as the hook would have — and then, once the
hook has let go of the connection, drains the spool into the file (`hook.settle`; a burst of
hooks, one transaction) before it reads anything more than the hooks already waiting. Its own
writes (the drain, the signature) wait at most SETTLE_BUSY_S for another writer's lock; a file
that stays busy (or read-only) is tried again after a growing pause while hooks keep being
received and answered, so no hook waits on another writer's lock through the daemon; after a
read-only failure the next request finds the connection opened again (`_reopen`). It
serves only its own user (0700 socket directory, peer uid checked); it leaves when idle,
stopped, or when its file or its code changed (`stale`: capture.codewatch); it works from `/`.
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
HOOK_CLOSE_S = 0.05  # how long an answered hook may keep its connection before the commit goes on
SETTLE_BATCH = 32  # received events stored together at most (a burst of hooks: one transaction)
SETTLE_AFTER_S = 0.2  # and none waits longer for its commit while hooks keep arriving
SETTLE_BUSY_S = 0.2  # how long the daemon's own writes wait for another writer's lock
RETRY_MIN_S, RETRY_MAX_S = 0.05, 1.0  # the pause before a busy (or read-only) file is tried again


class Daemon:
    def __init__(self, db_path: str):
        self.db = os.path.abspath(db_path)
        self.sock_path = hookclient.endpoint(self.db)
        self.code = hookclient.code_id()
        self.watch = None  # capture.codewatch: did this daemon's own code change since it started?
        self.store = None
        self.file_id = None
        self.stopping = False
        self.unsigned_since = None  # monotonic time of the oldest request not yet signed
        self.reserved = None  # the spool file the next receipt fills (spool.reserve)
        self.pending = False  # answered events wait in the spool with no receipt in hand (a failed or partial drain)
        self.retry_at = 0.0  # monotonic time before which a busy or read-only file is not tried again
        self.pause = 0.0
        self.reopen_due = False  # a write failed as read-only: open the file again on the next request

    def _open(self) -> None:
        """Open (creating or migrating) the database. Hooks are arriving meanwhile and writing it
        themselves (a first burst creates the file): the daemon waits for their locks as long as
        OPEN_BUSY_S, where a hook gives up after CAPTURE_BUSY_S (a daemon that gave up at start
        would leave no daemon for the hooks after the burst), then serves with the hooks' timeout."""
        from ..store.database import Store
        from . import codewatch, spool
        self.watch = codewatch.CodeWatch()
        self.store = Store.open(self.db, create=True, busy_timeout_s=OPEN_BUSY_S)
        self.store.set_busy_timeout(SETTLE_BUSY_S)
        spool.prepare()
        spool.clear_reservations(self.db)
        self.reserve()
        st = os.stat(self.db)
        self.file_id = (st.st_dev, st.st_ino)

    def _reopen(self) -> None:
        """After a write failed as read-only: close the connection and open the file again, now
        that it can be written (SQLite keeps what it opened read-only for as long as the process
        has the file open: a file read-only or on read-only media when this daemon opened it, a
        -shm made while it was read-only, whose mode sidefiles.free_sides gives back). A file
        still read-only is left as it is (tried again on the next request); one that cannot be
        opened makes the daemon leave (hooks then write themselves)."""
        from ..store.database import Store
        from ..store.sidefiles import free_sides
        try:
            if not os.access(self.db, os.W_OK):
                return
        except OSError:
            return
        self.reopen_due = False
        try:
            self.store.close()
        except Exception:
            pass
        try:
            free_sides(self.db)
            self.store = Store.open(self.db, create=False, busy_timeout_s=SETTLE_BUSY_S)
        except Exception as e:
            hooklog.log(f"daemon err=reopen:{hooklog.why(e)}")
            self.stopping = True
            return
        self.retry_at = 0.0

    def same_file(self) -> bool:
        """The file this daemon opened, still holding its pages: one truncated to nothing leaves
        only its -wal, which the daemon must not write on (Store.close leaves it untouched)."""
        try:
            st = os.stat(self.db)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.file_id and st.st_size > 0

    def handle(self, conn):
        """One connection: read the request, run the hook pipeline up to the receipt, answer.
        Returns the event when it was answered `ok` on its receipt (spooled: `settle` stores it),
        else None (answered otherwise, or stored before the answer)."""
        from ..model import fastjson, ids
        deadline = time.monotonic() + READ_S  # for the whole request, not each read of it
        conn.settimeout(READ_S)
        if not hookclient.peer_uid_ok(conn):
            return
        buf = b""
        while b"\n" not in buf:
            chunk = _recv(conn, 65536, deadline)
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
        if (req.get("code") != self.code or req.get("db") != self.db or not self.same_file()
                or self.watch is None or self.watch.changed()):
            conn.sendall(b"stale\n")
            self.stopping = True
            return
        while len(data) < n:
            chunk = _recv(conn, min(1 << 20, n - len(data)), deadline)
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
            event = capture.prepare(req["argv"] + ["--db", self.db], hook, store=self.store)
            received = event is not None and capture.receive(event, self.reserved)
            if event is not None and not received:  # no spool took it: stored (or counted) first
                self.store.set_busy_timeout(capture.CAPTURE_BUSY_S)  # as a hook would wait
                try:
                    capture.deliver(event)
                finally:
                    self.store.set_busy_timeout(SETTLE_BUSY_S)
        except Exception as e:
            hooklog.log(f"daemon err=internal:{hooklog.why(e)}")
            conn.sendall(b"error\n")
            return
        if capture.seen.get("unsaid"):  # not stored, spooled or counted: the hook says so itself
            conn.sendall(b"error\n")
            return
        try:
            conn.sendall(b"ok\n")
        except OSError:  # the hook went away: what it sent is spooled or stored all the same
            pass
        return event if received else None

    def settle(self, received: list) -> None:
        """The events answered on their receipt, into the file: one drain of the spool, so one
        transaction for a burst. A drain that failed (the file busy beyond SETTLE_BUSY_S,
        read-only) or left events behind leaves them in the spool, `pending`: a failed one is
        tried again after a pause that doubles up to RETRY_MAX_S (hooks are received and
        answered meanwhile), one that left events behind at once."""
        if not (received or self.pending):
            return
        if time.monotonic() < self.retry_at:  # their files wait in the spool (read back later): none held here
            self.pending = self.pending or bool(received)
            received.clear()
            return
        try:
            more, err = capture.settle(received, self.store, self.db, log=self.pause == 0.0)
        except Exception as e:
            hooklog.log(f"daemon err=settle:{hooklog.why(e)}")
            more, err = True, e
        received.clear()
        self.pending = more
        if err is None:
            self.pause = self.retry_at = 0.0
            return
        from ..store import sqlerrors
        self.pause = min(RETRY_MAX_S, max(RETRY_MIN_S, 2 * self.pause))
        self.retry_at = time.monotonic() + self.pause
        if sqlerrors.condition(err) == "read_only":
            self.reopen_due = True

    def _wait(self, received: list) -> float:
        """How long the next accept may wait: not at all with events to settle (only a hook
        already waiting comes first), until the pause ends for a file found busy, else until a
        signature is due (or a second, to check the file)."""
        now = time.monotonic()
        if received or self.pending:
            return max(0.01, self.retry_at - now) if now < self.retry_at else 0.0
        unsigned = self.unsigned_since
        return 1.0 if unsigned is None else max(0.01, SIGN_AFTER_S - (now - unsigned))

    def reserve(self) -> None:
        """Make the spool file the next receipts fill, if there is none (or it was given up)."""
        if self.reserved is None or self.reserved.closed:
            from . import spool
            try:
                self.reserved = spool.reserve(self.db)
            except Exception as e:
                hooklog.log(f"daemon err=reserve:{hooklog.why(e)}")

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
            if self.same_file():  # never a checkpoint into a file truncated under the daemon
                self.sign_if_due(now=True)
        finally:
            for suffix in ("", ".pid", ".starting"):
                daemon.unlink_quietly(self.sock_path + suffix)
            if srv is not None:
                srv.close()
            if self.reserved is not None:
                self.reserved.close()
            if self.watch is not None:
                self.watch.close()
            if self.store is not None:
                self.store.close()
            lock.close()
        return 0

    def _loop(self, srv) -> None:
        last = time.monotonic()
        received, since = [], 0.0  # answered on their receipt, not in the file yet; the first one's time
        try:
            while not self.stopping and time.monotonic() - last < IDLE_S:
                if received and (len(received) >= SETTLE_BATCH or time.monotonic() - since > SETTLE_AFTER_S):
                    self.settle(received)
                    self.reserve()
                    self.sign_if_due()
                srv.settimeout(self._wait(received))
                try:
                    conn, _ = srv.accept()
                except OSError:  # none waiting: settle; or the accept timeout: sign, check the file
                    if received or self.pending:
                        self.settle(received)
                        self.reserve()
                        self.sign_if_due()
                        if self.pending and not self.same_file():
                            break
                        continue
                    self.sign_if_due()
                    if not self.same_file():
                        break
                    continue
                if self.reopen_due:
                    self._reopen()
                    if self.stopping:  # not answered: the hook stores the event itself
                        conn.close()
                        continue
                try:
                    event = self.handle(conn)
                    if event is not None:
                        if not received:
                            since = time.monotonic()
                        received.append(event)
                        _let_the_hook_go(conn)
                except Exception as e:
                    hooklog.log(f"daemon err=connection:{hooklog.why(e)}")
                finally:
                    conn.close()
                if self.unsigned_since is None:
                    self.unsigned_since = time.monotonic()
                last = time.monotonic()
                if not received:
                    self.reserve()
                    self.sign_if_due()
        finally:
            self.settle(received)

    def sign_if_due(self, now: bool = False) -> None:
        """Sign the head once the oldest unsigned request is SIGN_AFTER_S old (or `now`), so a
        committed capture is covered by a signature outside the file within a second
        (spec/checkpoint.md); nothing to sign (a spooled event, no key) costs two reads."""
        since = self.unsigned_since
        if since is None or (not now and (time.monotonic() - since < SIGN_AFTER_S or self.pending)):
            return  # nothing new, or not yet; or the file is busy: once the spool is drained
        self.unsigned_since = None
        from ..integrity import checkpoint
        try:
            checkpoint.maybe_checkpoint(self.store, quiet=True)
        except Exception as e:
            hooklog.log(f"daemon err=checkpoint:{hooklog.why(e)}")


def _let_the_hook_go(conn) -> None:
    """After `ok`, before the rest of the work: wait (briefly) for the hook to close its end,
    then give up the processor. The answer's wake-up puts the hook on this processor; a daemon
    that went on at once would hold it there for the millisecond or two of the commit."""
    try:
        conn.settimeout(HOOK_CLOSE_S)
        conn.recv(1)
    except OSError:
        pass
    conn.close()
    if hasattr(os, "sched_yield"):
        os.sched_yield()


def _recv(conn, n: int, deadline: float) -> bytes:
    """conn.recv(n) within what is left of the connection's READ_S: a client that trickles
    its request (a byte every few seconds) is dropped (TimeoutError) instead of holding the
    daemon, and every hook waiting behind it, for as long as it likes."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request was not delivered within READ_S")
    conn.settimeout(left)
    return conn.recv(n)


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
