"""The fallback device id: the stable per-user device id a capture stamps on an event when it
cannot read the database's own identity (the file locked mid-creation, unreadable, corrupt),
and the database identity such an event takes when a drain ingests it (`adopt`).

Invariant: `<data dir>/fallback-device-id` holds one UUID from the first capture that needed
it on. It is made whole or not at all — written in full to a temp file, synced, then linked
into place (never replacing the id another capture just made: of two, one wins) — so a full
disk never leaves it empty; a file that holds no UUID (left empty by an older version on a
full disk) is replaced the same way (a rename), never believed and never the reason for a new
id on every event. Nothing is left behind when a write fails.
Only os and C modules: the hook path uses it.
"""

import os
import time

from ..model import ids

FILE = "fallback-device-id"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _read(path: str) -> tuple:
    """(the UUID the file holds or None, whether there is a file at all)."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except FileNotFoundError:
        return None, False
    except OSError:
        return None, True
    try:
        dev = os.read(fd, 64).decode("ascii").strip()  # a UUID; anything longer is not one
    except (OSError, ValueError):
        return None, True
    finally:
        os.close(fd)
    return (dev if ids.is_uuid(dev) else None), True


def device(create: bool = True) -> str | None:
    """The fallback device id (bare UUID); made when there is none and `create` (None when not).
    When it cannot be stored (a full or read-only disk) the id made now is returned all the
    same, and the next capture tries again."""
    from ..store import location
    path = os.path.join(location.data_dir(), FILE)
    dev, present = _read(path)
    if dev is not None or not create:
        return dev
    dev = ids.uuid7()
    tmp = f"{path}.{os.getpid()}.{time.time_ns()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    except OSError:
        return dev
    try:
        try:
            data = (dev + "\n").encode("ascii")
            if os.write(fd, data) != len(data):
                raise OSError(28, "short write")
            os.fsync(fd)
        finally:
            os.close(fd)
        if present and _read(path)[0] is None:
            os.rename(tmp, path)  # an empty or invalid file: replaced whole
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:  # another capture won the race: its id
                pass
    except OSError:
        return dev
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return _read(path)[0] or dev


def adopt(env: dict, fallback: str | None, device: str) -> dict:
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
