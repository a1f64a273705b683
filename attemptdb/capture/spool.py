"""The spool: where a capture puts its event when the database cannot take it right now
(locked, unwritable, corrupt, missing directory), so that nothing is ever lost.

Layout: `<database>.spool/` beside the database file (fallbacks, in order, when that cannot be
used: `$XDG_STATE_HOME/attemptdb/spool/<sha of the database path>/`, then the runtime
directory's `…/attemptdb/spool/<sha>/`, usually another filesystem: see `_runtime_root`),
one file per event named `<unix ns, 19 digits>-<uuid7>.event` holding its canonical line after
the ingestion contract (so a metadata_only capture spools no content either) and, on a second
line, its seal: HMAC-SHA256 of the first line under this account's spool key
(`<data dir>/spool-key`, 0600, made on first use; made in the state or runtime directory when the
data directory cannot take it, and copied to it later: `_key`). A file is never written unsealed
(no key anywhere: the event is counted lost instead). Written to a private temp file and renamed
into place. `drain` appends spooled events in name (= time) order; an event already stored is
a duplicate, never a second row; a file is removed only after its event is committed; a file
that cannot be read as an event, whose seal is missing or wrong, or whose event the store
refuses, is moved aside to `quarantine/` (never deleted, never blocking the rest); a database
error, or a spool key that cannot be read, stops the drain and leaves every file for the next
one.

The spool of a project-local database lies inside a repository, and the repository is hostile
(DESIGN.md invariant 8): it can ship `.attemptdb/attempt.db.spool/` with `.event` files in it,
or as a symlink to somewhere else, in its first commit or in a later `git pull`. So:
- a spool directory is used only when it is a real directory (opened with O_NOFOLLOW, never
  through a symlink) owned by this user with no group or other permission bits (made 0700);
  otherwise a capture writes to the fallback, and a drain ignores it;
- every create, read, rename and unlink happens relative to that directory's descriptor;
- only regular files owned by this user with mode 0600 are considered at all (others are
  skipped: left where they are, never read, moved or deleted), and only a sealed file is
  ingested: under a umask of 077 a file `git` checks out is also ours and 0600, but it cannot
  carry a valid seal without the key, which never lives in a repository.
An event that no spool directory can take is counted (`count_lost`) in a small file made ahead
of need and rewritten in place (a full disk can still take the count); `losses()` is what
`attempt doctor` reports. The capture daemon spools every event it receives before answering
the hook — written into a file it made ahead (`reserve`: `.<ns>-<uuid>.reserved.tmp`, never
read as an event) and linked under its spool name — then drains it into the database.
Only os and C modules: the hook path writes here.
"""

import os
import stat
import time

import apsw

from ..errors import AttemptError
from ..model import fastjson, ids

SUFFIX = ".event"
QUARANTINE = "quarantine"
KEY_FILE = "spool-key"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC


def primary_dir(db_path: str) -> str:
    return db_path + ".spool"


def _tag(db_path: str) -> str:
    from ..model.ids import sha256
    return sha256(os.path.abspath(db_path).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def fallback_dir(db_path: str) -> str:
    from ..store import location
    return os.path.join(location.state_dir(), "spool", _tag(db_path))


def _runtime_root() -> tuple[str, str]:
    """(an existing directory, the private directory of ours to use in it) for the last-resort
    spool and loss counter: `$XDG_RUNTIME_DIR/attemptdb` (a tmpfs of this user's), else
    `$TMPDIR` (else `/tmp`)`/attemptdb-<uid>`, like the daemon's socket. Usually another filesystem than the
    database and the state directory, so a full or read-only home still leaves it."""
    run = os.environ.get("XDG_RUNTIME_DIR", "")
    if run and os.path.isabs(run) and os.path.isdir(run):
        return run, "attemptdb"
    tmp = os.environ.get("TMPDIR", "")
    return (tmp if tmp and os.path.isabs(tmp) else "/tmp"), f"attemptdb-{_uid() or 0}"


def runtime_dir(db_path: str) -> str:
    """The last-resort spool of `db_path` (see _runtime_root); lost at reboot, read by every drain."""
    root, name = _runtime_root()
    return os.path.join(root, name, "spool", _tag(db_path))


def _uid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _ours(st, mode: int | None = None) -> bool:
    """Owned by this user and, for a directory, no group/other bits; for a file, exactly `mode`."""
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        return False
    return not st.st_mode & 0o077 if mode is None else stat.S_IMODE(st.st_mode) == mode


def _open_dir(name: str, dir_fd=None, create: bool = False) -> int | None:
    """A descriptor of the directory `name` when it is private to this user (a real directory,
    ours, no group/other bits), made 0700 when missing and `create`; else None."""
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)  # never follows a symlink in the last component
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _O_DIR, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode) or not _ours(st):
        os.close(fd)
        return None
    return fd


def _open_private(root: str, parts, create: bool) -> int | None:
    """A descriptor of root/parts[0]/parts[1]/…, every component a private directory of ours
    opened relative to the one before (never through a symlink), made 0700 when `create`."""
    try:
        if create:
            os.makedirs(root, mode=0o700, exist_ok=True)
        fd = os.open(root, _O_DIR & ~_O_NOFOLLOW)
    except OSError:
        return None
    for part in parts:
        try:
            nxt = _open_dir(part, dir_fd=fd, create=create)
        except OSError:
            nxt = None
        os.close(fd)
        if nxt is None:
            return None
        fd = nxt
    return fd


def _open_spool(directory: str, create: bool) -> int | None:
    root, name = _runtime_root()
    base = os.path.join(root, name) + os.sep
    if directory.startswith(base):  # the last-resort spool: its parents are checked too
        return _open_private(root, [name] + directory[len(base):].split(os.sep), create)
    if create:
        try:
            os.makedirs(os.path.dirname(directory), mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        return _open_dir(directory, create=create)
    except OSError:
        return None


# --- the seal -------------------------------------------------------------------------------

def _key(create: bool) -> bytes | None:
    """This account's spool key (32 random bytes, hex in `<data dir>/spool-key`, 0600), made on
    first use. Where the data directory cannot take it (a full or read-only disk) it is made in
    the first private `attemptdb/` of the state and runtime directories that can (`_lost_places`),
    and copied to the data directory by the first call that can: a key is never made while one
    exists, so every spool file stays sealed under a key of this account's (`_keys`)."""
    from ..store import location
    d = location.data_dir()
    key = _read_key(os.path.join(d, KEY_FILE))
    if key is not None:
        return key
    found = _fallback_keys()
    if not create:
        return found[0] if found else None
    key = found[0] if found else os.urandom(32)
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        dfd = os.open(d, _O_DIR & ~_O_NOFOLLOW)
    except OSError:
        dfd = None
    places = [(None, dfd)] if dfd is not None else []
    if not found:
        places += [(root, parts) for root, parts in _lost_places()]
    for root, where in places:
        dfd = where if root is None else _open_private(root, where, create=True)
        if dfd is None:
            continue
        try:
            if _install_key(dfd, key):
                got = _read_key(KEY_FILE, dfd)
                if got is not None:
                    return got
        finally:
            os.close(dfd)
    return found[0] if found else None


def _install_key(dfd: int, key: bytes) -> bool:
    """`key` as the spool key of the directory `dfd` unless it has one: written in full to a temp
    file, synced, then linked (atomic, never replaces: of two first captures, one key wins).
    Nothing is left behind when a write fails (a full disk): no temp file, no empty key."""
    try:
        os.stat(KEY_FILE, dir_fd=dfd, follow_symlinks=False)
        return True  # one is there (the caller reads it)
    except OSError:
        pass
    tmp = f"{KEY_FILE}.{os.getpid()}.{time.time_ns()}.tmp"
    data = key.hex().encode("ascii") + b"\n"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError:
        return False
    try:
        try:
            os.fchmod(fd, 0o600)
            if os.write(fd, data) != len(data):
                raise OSError(28, "short write")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, KEY_FILE, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            pass
        return True
    except OSError:
        return False
    finally:
        _unlink(dfd, tmp)


def _fallback_keys() -> list:
    """The spool keys made where the data directory could not take one (state, runtime)."""
    out = []
    for root, parts in _lost_places():
        dfd = _open_private(root, parts, create=False)
        if dfd is None:
            continue
        try:
            key = _read_key(KEY_FILE, dfd)
        finally:
            os.close(dfd)
        if key is not None and key not in out:
            out.append(key)
    return out


def _keys() -> list:
    """Every spool key of this account that can be read (the data directory's first): a spool
    file sealed under any of them is this account's."""
    from ..store import location
    key = _read_key(os.path.join(location.data_dir(), KEY_FILE))
    rest = [k for k in _fallback_keys() if k != key]
    return ([key] if key is not None else []) + rest


def _read_key(path: str, dfd=None) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _ours(st, 0o600):
            return None
        key = bytes.fromhex(os.read(fd, 128).decode("ascii").strip())
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return key if len(key) == 32 else None


def _mac(key: bytes, body: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) with the C hash the hook path already has."""
    from ..model.ids import sha256
    k = key.ljust(64, b"\0")
    inner = sha256(bytes(b ^ 0x36 for b in k) + body).digest()
    return sha256(bytes(b ^ 0x5C for b in k) + inner).hexdigest()


def seal(line: str) -> bytes:
    """The bytes of a spool file for one canonical event line: the line, then its seal. OSError
    when no spool key can be read or made anywhere: an unsealed file is never written (it could
    never be told from a planted one, so it would never be ingested; the event is counted lost)."""
    body = (line + "\n").encode("utf-8", "surrogatepass")
    key = _key(create=True)
    if key is None:
        raise PermissionError("no spool key can be read or made (every place for it is full or read-only)")
    return body + (_mac(key, body) + "\n").encode("ascii")


def _unseal(data: bytes, keys) -> bytes:
    """The event line of a spool file whose seal is right under one of `keys`; ValueError otherwise."""
    body, sep, mac = data.rstrip(b"\n").rpartition(b"\n")
    if not sep or not keys or len(mac) != 64:
        raise ValueError("spool file without a valid seal")
    body += b"\n"
    from _operator import _compare_digest  # hmac.compare_digest, without importing hmac
    if not any(_compare_digest(_mac(k, body).encode("ascii"), mac) for k in keys):
        raise ValueError("spool file without a valid seal")
    return body


# --- writing --------------------------------------------------------------------------------

def _write_in(directory: str, name: str, data: bytes) -> str:
    dfd = _open_spool(directory, create=True)
    if dfd is None:
        raise PermissionError(f"not a private spool directory: {directory}")
    tmp = f".{name}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask: a file of any other mode is never read
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:  # a full disk takes the name but not the bytes: leave no empty temp file behind
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise
    finally:
        os.close(dfd)
    return os.path.join(directory, name)


def directories(db_path: str) -> tuple[str, str, str]:
    """Where events for `db_path` are spooled, in the order tried: beside the database, the
    state directory, the runtime directory (each only when private to this user)."""
    return primary_dir(db_path), fallback_dir(db_path), runtime_dir(db_path)


def put(db_path: str, env: dict, reserved: "Reservation | None" = None) -> str:
    """Spool one canonical envelope; returns the file written. Raises OSError only when no
    spool directory can take it. `reserved`: a file made ahead (`reserve`), used when it still
    can be (else the envelope is written as if there were none)."""
    from ..model import event  # the writer has it; a read's housekeeping (pending, prepare) never loads it
    data = seal(event.line(env))
    # a uuid7 alone orders only by millisecond; the ns prefix keeps one hook's events in order
    name = f"{time.time_ns():019d}-{ids.uuid7()}{SUFFIX}"
    if reserved is not None:
        try:
            return reserved.fill(name, data)
        except OSError:
            pass
    err = None
    for d in directories(db_path):
        try:
            return _write_in(d, name, data)
        except OSError as e:
            err = err or e
    raise err


RESERVED = ".reserved.tmp"


class Reservation:
    """A spool file made ahead of need, under a name readers never take for an event
    (`.<ns>-<uuid>.reserved.tmp`): making a file is the slow part of spooling (~0.4 ms on the
    bench host's disk), writing one and linking it under a spool name is not (~0.02 ms). The
    capture daemon holds one, so its receipt (spool the event, then answer `ok`) costs a write
    and a link. The same file serves again once its last spool name is gone (the event drained:
    one link left), so a daemon makes one file, not one per event. The holder keeps an exclusive
    `flock` on it: a reservation nobody holds is a dead daemon's (`clear_reservations`)."""

    def __init__(self, directory: str, dfd: int, fd: int, tmp: str):
        self.directory, self.dfd, self.fd, self.tmp = directory, dfd, fd, tmp

    @property
    def closed(self) -> bool:
        return self.dfd is None

    def fill(self, name: str, data: bytes) -> str:
        """Write `data` into the file and link it as the spool file `name`. OSError when it
        cannot serve now — its last event still in the spool (`BlockingIOError`: it serves
        again once drained) — or at all: the directory moved or replaced since, anything
        failed (the reservation is then given up). The caller spools the usual way."""
        if self.dfd is None:
            raise FileNotFoundError("reservation given up")
        if os.fstat(self.fd).st_nlink != 1:
            raise BlockingIOError("the reserved file still holds a spooled event")
        try:
            here, now = os.fstat(self.dfd), os.lstat(self.directory)
            if (here.st_dev, here.st_ino) != (now.st_dev, now.st_ino):
                raise FileNotFoundError(self.directory)
            os.ftruncate(self.fd, 0)
            view, at = memoryview(data), 0
            while at < len(view):
                at += os.pwrite(self.fd, view[at:], at)
            os.link(self.tmp, name, src_dir_fd=self.dfd, dst_dir_fd=self.dfd, follow_symlinks=False)
        except BaseException:
            self.close()
            raise
        return os.path.join(self.directory, name)

    def close(self) -> None:
        """Give the reservation up (its reserved name removed; a spool name it still has stays)."""
        if self.dfd is not None:
            _unlink(self.dfd, self.tmp)
            os.close(self.fd)
            os.close(self.dfd)
            self.dfd = self.fd = None


def reserve(db_path: str) -> Reservation | None:
    """A spool file for the next event of `db_path`, in the first spool directory that can take
    one; None when none can (the event is then spooled the usual way, or not at all)."""
    import fcntl
    for d in directories(db_path):
        dfd = _open_spool(d, create=True)
        if dfd is None:
            continue
        tmp = f".{time.time_ns():019d}-{ids.uuid7()}{RESERVED}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd)
        except OSError:
            os.close(dfd)
            continue
        try:
            os.fchmod(fd, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            _unlink(dfd, tmp)
            os.close(dfd)
            continue
        return Reservation(d, dfd, fd, tmp)
    return None


def clear_reservations(db_path: str) -> None:
    """Remove the reservations of daemons that died holding one (nobody holds their lock)."""
    import fcntl
    for d in directories(db_path):
        dfd = _open_spool(d, create=False)
        if dfd is None:
            continue
        try:
            for name in os.listdir(dfd):
                if not (name.startswith(".") and name.endswith(RESERVED)):
                    continue
                try:
                    fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0),
                                 dir_fd=dfd)
                except OSError:
                    continue
                try:
                    st = os.fstat(fd)
                    if stat.S_ISREG(st.st_mode) and _ours(st, 0o600):  # never answered for: no loss
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        _unlink(dfd, name)
                except OSError:
                    pass  # held: a live daemon's
                finally:
                    os.close(fd)
        except OSError:
            pass
        finally:
            os.close(dfd)


# --- events that could go nowhere -------------------------------------------------------------

LOST_FILE = "capture-lost"
LOST_SIZE = 160


def _lost_places() -> list[tuple[str, list]]:
    """(root, private path parts) of the loss counters: the state directory's (made ahead of
    need, so a full disk can still take the count: it is rewritten in place, never grown) and
    the runtime directory's."""
    from ..store import location
    state = location.state_dir()
    root, name = _runtime_root()
    return [(os.path.dirname(state), [os.path.basename(state)]), (root, [name])]


def _lost_record(count: int, first: str, last: str) -> bytes:
    text = f"attemptdb capture losses v1\ncount {count}\nfirst {first}\nlast {last}\n"
    return text.encode("ascii").ljust(LOST_SIZE, b"\n")[:LOST_SIZE]


def _parse_lost(data: bytes) -> dict:
    out = {"count": 0, "first": None, "last": None}
    for line in data.decode("ascii", "replace").splitlines():
        k, _, v = line.partition(" ")
        if k == "count" and v.isdigit():
            out["count"] = int(v)
        elif k in ("first", "last") and v and v != "-":
            out[k] = v
    return out


def prepare() -> None:
    """What a capture in trouble will need, made while there is space (best effort): the spool
    key (without it a spooled event cannot be sealed, and an unsealed one is never ingested)
    and the loss counter. `attempt init`, the daemon, doctor and read commands call it."""
    try:
        _key(create=True)
    except OSError:
        pass
    prepare_lost_counter()


def prepare_lost_counter() -> None:
    """Make the state directory's loss counter when it is missing (best effort): created while
    there is space, it can count losses once there is none."""
    root, parts = _lost_places()[0]
    dfd = _open_private(root, parts, create=True)
    if dfd is None:
        return
    try:
        fd = os.open(LOST_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError:
        os.close(dfd)
        return
    try:
        os.write(fd, _lost_record(0, "-", "-"))
        os.fsync(fd)
    except OSError:
        os.close(fd)
        fd = None
        try:
            os.unlink(LOST_FILE, dir_fd=dfd)
        except OSError:
            pass
    finally:
        if fd is not None:
            os.close(fd)
        os.close(dfd)


def count_lost(db_path: str, why: str) -> bool:
    """Count one event that no spool directory could take, in the first loss counter that can
    be written (`attempt doctor` reports them). True when counted."""
    from ..model import clock
    now = clock.iso(clock.now_us())
    for root, parts in _lost_places():
        dfd = _open_private(root, parts, create=True)
        if dfd is None:
            continue
        try:
            fd = os.open(LOST_FILE, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd)
        except OSError:
            os.close(dfd)
            continue
        try:
            import fcntl
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or not _ours(st, 0o600):
                continue
            old = _parse_lost(os.pread(fd, LOST_SIZE, 0))
            rec = _lost_record(old["count"] + 1, old["first"] or now, now)
            if os.pwrite(fd, rec, 0) == len(rec):
                return True
        except (OSError, ImportError):
            continue
        finally:
            os.close(fd)
            os.close(dfd)
    return False


def losses() -> dict:
    """{count, first, last} of the events captures could not store anywhere (both counters)."""
    total = {"count": 0, "first": None, "last": None}
    for root, parts in _lost_places():
        dfd = _open_private(root, parts, create=False)
        if dfd is None:
            continue
        try:
            fd = os.open(LOST_FILE, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dfd)
            try:
                got = _parse_lost(os.pread(fd, LOST_SIZE, 0))
            finally:
                os.close(fd)
        except OSError:
            continue
        finally:
            os.close(dfd)
        total["count"] += got["count"]
        for k, pick in (("first", min), ("last", max)):
            if got[k]:
                total[k] = pick(total[k], got[k]) if total[k] else got[k]
    return total


# --- reading --------------------------------------------------------------------------------

def _candidate(dfd: int, name: str) -> bool:
    """A spool entry worth reading: a regular file of ours with mode 0600 (not followed)."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and _ours(st, 0o600)


class _Spool:
    """The private spool directories of one database, open, and their candidate entries in
    spool order as (name, directory path, descriptor)."""

    def __init__(self, db_path: str):
        self.fds = []
        self.entries = []
        for d in directories(db_path):
            fd = _open_spool(d, create=False)
            if fd is None:
                continue
            self.fds.append(fd)
            try:
                names = os.listdir(fd)
            except OSError:
                continue
            self.entries.extend((n, d, fd) for n in names if n.endswith(SUFFIX) and _candidate(fd, n))
        self.entries.sort()

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def pending(db_path: str) -> list[str]:
    """Spooled files waiting for `db_path`, oldest first (cheap when there are none)."""
    sp = _Spool(db_path)
    sp.close()
    return [os.path.join(d, n) for n, d, _fd in sp.entries]


def _quarantine(dfd: int, name: str):
    try:
        qfd = _open_dir(QUARANTINE, dir_fd=dfd, create=True)
    except OSError:
        qfd = None
    if qfd is None:
        return  # no private quarantine: the file stays where it is
    try:
        os.rename(name, name, src_dir_fd=dfd, dst_dir_fd=qfd)
    except OSError:
        pass
    finally:
        os.close(qfd)


class _NotOurs(Exception):
    """The entry changed between the listing and the open: skip it."""


def _read(dfd: int, name: str, keys):
    fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _ours(st, 0o600):
            raise _NotOurs(name)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    env = fastjson.loads(_unseal(b"".join(chunks), keys).decode("utf-8"))
    from ..model import event
    event.validate(env)
    env = event.canonical(env)
    event.check_storable(env)
    return env


EVENT_REFUSED = (ValueError, TypeError, OverflowError, AttemptError)  # EventError and UnicodeError included
"""What the store raises about one envelope itself: quarantine that one."""
ROW_REFUSED = (apsw.ConstraintError, apsw.TooBigError, apsw.MismatchError, apsw.SQLError)
"""What SQLite may raise about one row (a trigger's abort, a size limit) — or about every row
when the schema itself is wrong; told apart by whether any other event went in."""


def _unlink(dfd: int, name: str):
    try:
        os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def drain(store, db_path: str | None = None, limit: int = 10_000, known: dict | None = None) -> int:
    """Append every spooled event for this store; returns how many files were consumed
    (stored, already stored, or quarantined). A database error (locked, read-only, …) is
    raised with every unconsumed file left in place. `known`: {spool file path: envelope} of
    files this process wrote itself (the daemon's receipts), appended without reading them back."""
    sp = _Spool(db_path or store.path)
    try:
        return _drain(store, sp.entries[:limit], known or {})
    finally:
        sp.close()


def drain_ahead(store, db_path: str, limit: int, known: dict | None = None) -> bool:
    """`drain` of at most `limit` events, before a new event is appended: True when nothing
    spooled is left to go before it (chain order is arrival order), False when events beyond
    the limit wait (the new one must be spooled after them). Spooled files that cannot be
    authenticated now (no spool key) hold nothing back. A database error is raised."""
    sp = _Spool(db_path)
    try:
        _drain(store, sp.entries[:limit], known or {})
        return len(sp.entries) <= limit or not _keys()
    finally:
        sp.close()


def append(store, envelopes):
    """store.append, once more on a reopened connection when it failed as read-only and the
    store could repair or refresh what made it so (Store.reopen: the file writable again, a
    -shm of ours made while it was read-only)."""
    try:
        return store.append(envelopes)
    except apsw.ReadOnlyError:
        if not store.reopen():
            raise
    return store.append(envelopes)


def _drain(store, entries, known: dict) -> int:
    if not entries:
        return 0
    keys = _keys()
    if not keys:  # nothing can be authenticated now (no key, or one others could read): wait
        return 0
    good, files = [], []
    consumed = 0
    for name, d, dfd in entries:
        try:
            env = known.get(os.path.join(d, name)) or _read(dfd, name, keys)
        except (FileNotFoundError, _NotOurs):  # another process drained it; or not ours now
            continue
        except Exception:
            _quarantine(dfd, name)
            consumed += 1
            continue
        good.append(env)
        files.append((dfd, name))
    if not good:
        return consumed
    from . import fallback
    dev = fallback.device(create=False)
    good = [fallback.adopt(e, dev, store.device_id) for e in good]
    from ..store.database import IgnoredWriteError
    try:
        append(store, good)
    except IgnoredWriteError:  # the file drops rows: every file stays for later
        raise
    except EVENT_REFUSED + ROW_REFUSED:
        return consumed + _one_by_one(store, good, files)
    for dfd, name in files:
        _unlink(dfd, name)
    return consumed + len(files)


def _one_by_one(store, envs, files) -> int:
    """The batch was refused: append each event alone so that one bad entry cannot hold back
    the rest. Row errors are the event's fault only if some other event went in; when every
    event fails that way the database is at fault and every file stays for later."""
    stored, row_refused = 0, []
    for env, (dfd, name) in zip(envs, files):
        try:
            store.append([env])
        except EVENT_REFUSED:
            _quarantine(dfd, name)
            continue
        except ROW_REFUSED as e:
            row_refused.append((dfd, name, e))
            continue
        _unlink(dfd, name)
        stored += 1
    if row_refused and stored == 0:
        raise row_refused[0][2]
    for dfd, name, _e in row_refused:
        _quarantine(dfd, name)
    return len(files)
