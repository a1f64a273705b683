"""The spool: where a capture puts its event when the database cannot take it right now
(locked, unwritable, corrupt, missing directory), so that nothing is ever lost.

Layout: `<database>.spool/` beside the database file (fallback:
`$XDG_STATE_HOME/attemptdb/spool/<sha of the database path>/` when that cannot be written),
one file per event named `<unix ns, 19 digits>-<uuid7>.event` holding its canonical line after
the ingestion contract (so a metadata_only capture spools no content either), written to a
private temp file and renamed into place. `drain` appends spooled events in name (= time)
order; an event already stored is a duplicate, never a second row; a file is removed only after
its event is committed; a file that cannot be read as an event, or whose event the store
refuses, is moved aside to `quarantine/` (never deleted, never blocking the rest); a database
error stops the drain and leaves every file for the next one.
Only os and C modules: the hook path writes here.
"""

import os
import time

import apsw

from . import event, fastjson, ids
from .errors import AttemptError

SUFFIX = ".event"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def primary_dir(db_path: str) -> str:
    return db_path + ".spool"


def fallback_dir(db_path: str) -> str:
    from . import location
    from .ids import sha256
    tag = sha256(os.path.abspath(db_path).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(location.state_dir(), "spool", tag)


def _write_in(directory: str, name: str, data: bytes) -> str:
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    final = os.path.join(directory, name)
    os.rename(tmp, final)
    return final


def put(db_path: str, env: dict) -> str:
    """Spool one canonical envelope; returns the file written. Raises OSError only when
    neither spool directory can be written."""
    data = (event.line(env) + "\n").encode("utf-8", "surrogatepass")
    # a uuid7 alone orders only by millisecond; the ns prefix keeps one hook's events in order
    name = f"{time.time_ns():019d}-{ids.uuid7()}{SUFFIX}"
    try:
        return _write_in(primary_dir(db_path), name, data)
    except OSError:
        return _write_in(fallback_dir(db_path), name, data)


def pending(db_path: str) -> list[str]:
    """Spooled files waiting for `db_path`, oldest first (cheap when there are none)."""
    out = []
    for d in (primary_dir(db_path), fallback_dir(db_path)):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out.extend(os.path.join(d, n) for n in names if n.endswith(SUFFIX))
    out.sort(key=os.path.basename)
    return out


def _quarantine(path: str):
    qdir = os.path.join(os.path.dirname(path), "quarantine")
    try:
        os.makedirs(qdir, mode=0o700, exist_ok=True)
        os.rename(path, os.path.join(qdir, os.path.basename(path)))
    except OSError:
        pass


def _read(path: str):
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW)
    try:
        data = b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    env = fastjson.loads(data.decode("utf-8"))
    event.validate(env)
    env = event.canonical(env)
    event.check_storable(env)
    return env


EVENT_REFUSED = (ValueError, TypeError, OverflowError, AttemptError)  # EventError and UnicodeError included
"""What the store raises about one envelope itself: quarantine that one."""
ROW_REFUSED = (apsw.ConstraintError, apsw.TooBigError, apsw.MismatchError, apsw.SQLError)
"""What SQLite may raise about one row (a trigger's abort, a size limit) — or about every row
when the schema itself is wrong; told apart by whether any other event went in."""


def _unlink(path: str):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


FALLBACK_DEVICE_FILE = "fallback-device-id"


def fallback_device(create: bool = True) -> str | None:
    """The stable per-user device id a capture stamps on an event when it cannot read the
    database's own identity (the file is locked mid-creation, unreadable, corrupt)."""
    from . import location
    path = os.path.join(location.data_dir(), FALLBACK_DEVICE_FILE)
    try:
        with open(path, encoding="ascii") as f:
            dev = f.read(64).strip()  # a UUID; anything longer is not one
        if ids.is_uuid(dev):
            return dev
    except (OSError, ValueError):
        pass
    if not create:
        return None
    dev = ids.uuid7()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(dev + "\n")
    except FileExistsError:  # another capture won the race: use its id
        return fallback_device(create=False) or dev
    except OSError:
        pass
    return dev


def _adopt_identity(env: dict, fallback: str | None, device: str) -> dict:
    """A spooled event stamped with the fallback device was captured on this machine while the
    database's identity could not be read: it takes the database's device id (and the project
    id derived from it, for a project known only by its root) as it is ingested."""
    if fallback is None or env["device_id"] != fallback or fallback == device:
        return env
    env = dict(env, device_id=device)
    proj = env["project"]
    if proj["project_id"] == ids.derive("prj_", "root", fallback, proj["root"]):
        env["project"] = dict(proj, project_id=ids.derive("prj_", "root", device, proj["root"]))
    return env


def drain(store, db_path: str | None = None, limit: int = 10_000) -> int:
    """Append every spooled event for this store; returns how many files were consumed
    (stored, already stored, or quarantined). A database error (locked, read-only, …) is
    raised with every unconsumed file left in place."""
    files = pending(db_path or store.path)[:limit]
    if not files:
        return 0
    good, paths = [], []
    consumed = 0
    for path in files:
        try:
            env = _read(path)
        except FileNotFoundError:  # another process drained it
            continue
        except Exception:
            _quarantine(path)
            consumed += 1
            continue
        good.append(env)
        paths.append(path)
    if not good:
        return consumed
    fallback = fallback_device(create=False)
    good = [_adopt_identity(e, fallback, store.device_id) for e in good]
    try:
        store.append(good)
    except EVENT_REFUSED + ROW_REFUSED:
        return consumed + _one_by_one(store, good, paths)
    for path in paths:
        _unlink(path)
    return consumed + len(paths)


def _one_by_one(store, envs, paths) -> int:
    """The batch was refused: append each event alone so that one bad entry cannot hold back
    the rest. Row errors are the event's fault only if some other event went in; when every
    event fails that way the database is at fault and every file stays for later."""
    stored, row_refused = 0, []
    for env, path in zip(envs, paths):
        try:
            store.append([env])
        except EVENT_REFUSED:
            _quarantine(path)
            continue
        except ROW_REFUSED as e:
            row_refused.append((path, e))
            continue
        _unlink(path)
        stored += 1
    if row_refused and stored == 0:
        raise row_refused[0][1]
    for path, _e in row_refused:
        _quarantine(path)
    return len(paths)
