"""Signed checkpoints of the chain head, in C2SP signed-note form (spec/checkpoint.md).

A checkpoint commits to (size, head chain hash): the chain of the first `size` rows ends in
that hash. Each is stored in the `checkpoints` table and the newest is also written beside the
device key, outside the database, so deleting checkpoints from the file or rolling the whole
file back is caught by `attempt verify`.

Invariants: only this module signs; the hook path never imports it; a checkpoint is written only
when the chain grew since the last one.
"""

from __future__ import annotations

import base64
import os

from . import clock, location
from .ids import sha256
from .errors import AttemptError

ORIGIN_PREFIX = "attemptdb.local/"
DASH = "\u2014"
GROW_EVENTS = 1000
GROW_SECONDS = 600


class Checkpoint:
    __slots__ = ("origin", "size", "head", "time", "body", "signer", "key_hash", "signature")

    def __init__(self, origin, size, head, time, body, signer=None, key_hash=None, signature=None):
        self.origin, self.size, self.head, self.time = origin, size, head, time
        self.body, self.signer, self.key_hash, self.signature = body, signer, key_hash, signature

    def as_dict(self):
        return {"origin": self.origin, "size": self.size, "head_hash": self.head,
                "time": self.time, "signer": self.signer}


def key_hash(name: str, public_raw: bytes) -> bytes:
    """C2SP signed-note key hash for Ed25519: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
    return sha256(name.encode() + b"\n\x01" + public_raw).digest()[:4]


def body_text(device_id: str, size: int, head_hex: str, time_text: str) -> str:
    head_b64 = base64.b64encode(bytes.fromhex(head_hex)).decode("ascii")
    return f"{ORIGIN_PREFIX}{device_id}\n{size}\n{head_b64}\ntime {time_text}\n"


def sign(key: keys.DeviceKey, device_id: str, size: int, head_hex: str, time_text: str) -> str:
    body = body_text(device_id, size, head_hex, time_text)
    sig = key.sign(body.encode("utf-8"))
    blob = base64.b64encode(key_hash(key.identity, key.public_raw) + sig).decode("ascii")
    return f"{body}\n{DASH} {key.identity} {blob}\n"


def parse(note: str) -> Checkpoint:
    """Parse a note; AttemptError('checkpoint.malformed') when it is not one of ours."""
    def bad(why):
        return AttemptError("checkpoint.malformed", f"not an AttemptDB checkpoint: {why}")
    if not isinstance(note, str) or "\n\n" not in note:
        raise bad("no signature block")
    body, sigs = note.split("\n\n", 1)
    body += "\n"
    lines = body.split("\n")
    if len(lines) < 5 or not lines[0].startswith(ORIGIN_PREFIX) or not lines[3].startswith("time "):
        raise bad("unexpected header")
    try:
        size = int(lines[1])
        head = base64.b64decode(lines[2], validate=True).hex()
    except ValueError:
        raise bad("size or hash unreadable") from None
    if size < 0 or len(head) != 64:
        raise bad("size or hash out of range")
    cp = Checkpoint(lines[0], size, head, lines[3][5:], body)
    for line in sigs.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == DASH:
            try:
                blob = base64.b64decode(parts[2], validate=True)
            except ValueError:
                continue
            if len(blob) == 68:
                cp.signer, cp.key_hash, cp.signature = parts[1], blob[:4], blob[4:]
                return cp
    raise bad("no signature line")


def check_signature(cp: Checkpoint, key: keys.DeviceKey) -> bool:
    if cp.signature is None or cp.signer != key.identity:
        return False
    if cp.key_hash != key_hash(key.identity, key.public_raw):
        return False
    return key.verify(cp.signature, cp.body.encode("utf-8"))


def outside_path(device_id: str) -> str:
    return os.path.join(location.key_dir(), f"{device_id}.checkpoint")


def read_outside(device_id: str) -> str | None:
    try:
        fd = os.open(outside_path(device_id), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise AttemptError("checkpoint.unreadable", f"cannot read {outside_path(device_id)}: {e.strerror}") from None
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        return f.read(65536)


def _write_outside(device_id: str, note: str):
    path = outside_path(device_id)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(note)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def latest(store) -> tuple[int, str] | None:
    row = store.conn.execute("SELECT size, created_at FROM checkpoints ORDER BY size DESC LIMIT 1").fetchone()
    return None if row is None else (row[0], row[1])


class _OutsideLock:
    """Exclusive lock beside the outside checkpoint copy: two files claiming one device (a
    copied database) cannot interleave their read-check-replace of it."""

    def __init__(self, device_id: str):
        self.path = outside_path(device_id) + ".lock"
        self.fd = None

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            import fcntl
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - no advisory locks on this platform
            pass
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _extends_outside(store, device: str, size: int) -> None:
    """Refuse to sign a chain that does not extend the device's last signed checkpoint: the
    key signs only the file it signed before (a copy carrying the same device id, or a file
    rolled back, must not get a fresh signature or replace the outside copy)."""
    note = read_outside(device)
    if note is None:
        return
    try:
        cp = parse(note)
    except AttemptError:
        raise AttemptError("checkpoint.outside_unreadable", "the checkpoint kept beside the key is not a "
                           "valid signed note; run `attempt verify`", exit_status=1) from None
    row = store.conn.execute("SELECT chain_hash FROM events WHERE seq = ?", (cp.size,)).fetchone()
    if cp.origin != ORIGIN_PREFIX + device or cp.size > size or row is None or row[0] != cp.head:
        raise AttemptError("checkpoint.diverged", "this file's chain does not extend the device's last "
                           f"signed checkpoint (size {cp.size}): it was rolled back, rewritten, or is a "
                           "copy of another file; run `attempt verify`", exit_status=1)


def create(store, key: keys.DeviceKey | None = None, *, now_us: int | None = None) -> Checkpoint | None:
    """Sign the current head and store it (in the file and beside the key). None when the
    chain is empty or has not grown since the last checkpoint; AttemptError
    (`checkpoint.diverged`) when the chain does not extend the last signed one."""
    from . import keys
    device = store.device_id
    key = key or keys.load(device)
    if key is None:
        raise AttemptError("keys.missing", "this device has no signing key yet (run `attempt keys init`)", exit_status=1)
    stamp = clock.iso(clock.now_us() if now_us is None else now_us)
    c = store.conn
    with _OutsideLock(device):
        c.execute("BEGIN IMMEDIATE")
        try:
            size, head = store.head()
            last = latest(store)
            if size == 0 or (last is not None and last[0] >= size):
                c.execute("ROLLBACK")
                return None
            _extends_outside(store, device, size)
            note = sign(key, device, size, head, stamp)
            c.execute("INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) VALUES (?,?,?,?,?)",
                      (size, head, stamp, key.identity, note))
            c.execute("COMMIT")
        except BaseException:
            if not c.getautocommit():
                c.execute("ROLLBACK")
            raise
        _write_outside(device, note)
    return parse(note)


def due(conn, now_us: int | None = None) -> bool:
    """The documented schedule, read on any connection (read-only is enough): a checkpoint is
    due when the chain grew by GROW_EVENTS since the last one, or grew at all and the last one
    is older than GROW_SECONDS (or there is none)."""
    row = conn.execute("SELECT seq FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    size = row[0] if row else 0
    last = conn.execute("SELECT size, created_at FROM checkpoints ORDER BY size DESC LIMIT 1").fetchone()
    if size == 0:
        return False
    if last is None:
        return True
    grown = size - last[0]
    if grown <= 0:
        return False
    if grown >= GROW_EVENTS:
        return True
    now = clock.now_us() if now_us is None else now_us
    return now - clock.from_iso(last[1]) >= GROW_SECONDS * 1_000_000


def signable(conn) -> bool:
    """A checkpoint is due and this device holds its key (no cryptography import)."""
    if not due(conn):
        return False
    dev = conn.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone()
    from . import ids
    if not dev or not ids.is_uuid(dev[0]):
        return False
    return os.path.exists(os.path.join(location.key_dir(), f"{dev[0]}.key"))


def maybe_checkpoint(store) -> Checkpoint | None:
    """Called by imports and read commands: sign when due and a key exists; never fails the
    command (a read-only or locked file simply skips)."""
    try:
        if store.readonly or not due(store.conn):
            return None
    except Exception:  # an unreadable checkpoint row: `attempt verify` reports it
        return None
    from . import keys  # cryptography is imported only when a signature is due
    try:
        key = keys.load(store.device_id)
    except AttemptError as e:  # corrupt or exposed: say so on every due read, sign nothing
        import sys
        print(f"note: no checkpoint signed: {e}", file=sys.stderr)
        return None
    if key is None:
        return None
    try:
        return create(store, key)
    except Exception:  # a busy or read-only file must not fail a read command
        return None
