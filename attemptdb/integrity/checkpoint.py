"""Signed checkpoints of the chain head, in C2SP signed-note form (spec/checkpoint.md).

A checkpoint commits to (size, head chain hash): the chain of the first `size` rows ends in
that hash; and, in a `merkle` extension line, to the RFC 9162 Merkle tree head of the same
rows (spec/proof.md), which inclusion and consistency proofs are checked against. Each is stored in the `checkpoints` table and the newest is also written beside the
device key, outside the database, so deleting checkpoints from the file or rolling the whole
file back is caught by `attempt verify`.

Invariants: only this module signs; the hook path never imports it; a checkpoint is written only
when the chain grew since the last one; the Merkle head it signs is computed from the verified
rows after the last signed checkpoint on top of that checkpoint's own Merkle head (or, for a
base signed without one, from every row up to it, each checked against the chain), never
taken from the stored tree nodes unchecked. Notes without a `merkle` line (signed before the
tree existed) stay valid.
"""

from __future__ import annotations

import os

from ..errors import AttemptError, printable
from ..model import clock
from ..store import location, plainfile
from . import signednote

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing `typing` on every read
if TYPE_CHECKING:
    from . import keys

ORIGIN_PREFIX = "attemptdb.local/"
MERKLE = "merkle "


class Checkpoint:
    __slots__ = ("origin", "size", "head", "time", "body", "signer", "key_hash", "signature", "merkle")

    def __init__(self, origin, size, head, time, body, signer=None, key_hash=None, signature=None, merkle=None):
        self.origin, self.size, self.head, self.time = origin, size, head, time
        self.body, self.signer, self.key_hash, self.signature = body, signer, key_hash, signature
        self.merkle = merkle  # hex of the signed Merkle tree head, None in notes without one

    def as_dict(self):
        return {"origin": self.origin, "size": self.size, "head_hash": self.head,
                "time": self.time, "signer": self.signer, "merkle_root": self.merkle}


def body_text(device_id: str, size: int, head_hex: str, time_text: str, merkle_hex: str | None = None) -> str:
    head_b64 = signednote.b64encode(bytes.fromhex(head_hex))
    body = f"{ORIGIN_PREFIX}{device_id}\n{size}\n{head_b64}\ntime {time_text}\n"
    if merkle_hex is not None:
        body += MERKLE + signednote.b64encode(bytes.fromhex(merkle_hex)) + "\n"
    return body


def sign(key: keys.DeviceKey, device_id: str, size: int, head_hex: str, time_text: str,
         merkle_hex: str | None = None) -> str:
    return signednote.signed(body_text(device_id, size, head_hex, time_text, merkle_hex), key)


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
    if not (lines[1].isascii() and lines[1].isdigit()) or (len(lines[1]) > 1 and lines[1][0] == "0"):
        raise bad("size unreadable")
    try:
        size = int(lines[1])
        head = signednote.b64decode(lines[2]).hex()
    except ValueError:
        raise bad("size or hash unreadable") from None
    if size < 0 or len(head) != 64:
        raise bad("size or hash out of range")
    merkle = None
    for ext in lines[4:-1]:  # extension lines: `merkle` is ours, others are ignored
        if ext.startswith(MERKLE):
            try:
                raw = signednote.b64decode(ext[len(MERKLE):])
            except ValueError:
                raise bad("merkle head unreadable") from None
            if len(raw) != 32 or merkle is not None:
                raise bad("merkle head out of range or repeated")
            merkle = raw.hex()
    cp = Checkpoint(lines[0], size, head, lines[3][5:], body, merkle=merkle)
    found = signednote.signatures(sigs)
    if not found:
        raise bad("no signature line")
    cp.signer, cp.key_hash, cp.signature = found[0]
    return cp


def check_signature(cp: Checkpoint, key: keys.DeviceKey) -> bool:
    """The note is signed by `key`, or by a key `key` replaced (`attempt keys init
    --replace-lost`) over no more rows than the file had when it was replaced."""
    if cp.signature is None:
        return False
    by = key.vouches(cp.signer, cp.size)
    if by is None or cp.key_hash != by.note_hash:
        return False
    return by.verify(cp.signature, cp.body.encode("utf-8"))


def outside_path(device_id: str) -> str:
    return os.path.join(location.key_dir(), f"{device_id}.checkpoint")


def read_outside(device_id: str) -> str | None:
    path = outside_path(device_id)
    try:  # a named pipe there must not hang a hook
        fd = plainfile.open_regular(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise AttemptError("checkpoint.unreadable", f"cannot read {path}: {e.strerror}") from None
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        return f.read(65536)


def _write_outside(device_id: str, note: str):
    """The signed note as the copy beside the key; checkpoint.unwritable (nothing signed: the
    caller rolls back) when the disk refuses it."""
    path = outside_path(device_id)
    from . import keys  # loaded already: a note is written once it was signed
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        keys.write_private(path, note.encode("utf-8"))  # whole or not at all, no temp file left
    except OSError as e:
        raise AttemptError("checkpoint.unwritable", f"cannot write the checkpoint beside the key ({printable(path)}): "
                           f"{e.strerror or type(e).__name__}; nothing was signed", exit_status=1) from None


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


def _signed_base(store, device: str, key, size: int, adopt: bool) -> tuple[int, Checkpoint | None]:
    """(rows already vouched for, the device's last signed checkpoint or None: nothing signed
    yet), which the chain must still extend: the key signs only the file it signed before (a
    copy carrying the same device id, or a file rolled back, must not get a fresh signature or
    replace the outside copy). Rows up to that count were verified by whoever signed them (or by
    `attempt recover`, for a signed tail it declared lost: then no checkpoint is the base); the
    caller verifies the rows after them."""
    note = read_outside(device)
    if note is None:
        # the outside copy is what makes a deleted tail visible: a file that holds checkpoints
        # without it is reported by verify, and a new signature would hide that
        if not adopt and store.conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchone():
            raise AttemptError("checkpoint.outside_missing", "the file holds signed checkpoints but the "
                               f"copy beside the key ({outside_path(device)}) is missing, so rows deleted "
                               "after the last one could not be seen; nothing was signed. Run `attempt "
                               "verify`; restore that file, or `attempt checkpoint --adopt` to verify the "
                               "whole chain and sign it anew", exit_status=1)
        return 0, None
    try:
        cp = parse(note)
    except AttemptError:
        raise AttemptError("checkpoint.outside_unreadable", "the checkpoint kept beside the key is not a "
                           "valid signed note; run `attempt verify`", exit_status=1) from None
    row = store.conn.execute("SELECT chain_hash FROM events WHERE seq = ?", (cp.size,)).fetchone()
    if row is None and cp.origin == ORIGIN_PREFIX + device and check_signature(cp, key):
        # a row `attempt recover` declared lost, in a note this key signed: the rows up to the
        # last one kept before it were checked by recover (spec/recover.md)
        from . import recovery
        gaps, note, _ = recovery.trusted_gaps(store.conn, key, device)
        if note is not None and note.covers(cp.size) and gaps:
            before = store.conn.execute("SELECT max(seq) FROM events WHERE seq < ?", (cp.size,)).fetchone()[0]
            return before or 0, None
    if (cp.origin != ORIGIN_PREFIX + device or not check_signature(cp, key) or cp.size > size
            or row is None or row[0] != cp.head):
        raise AttemptError("checkpoint.diverged", "this file's chain does not extend the device's last "
                           f"signed checkpoint (size {cp.size}): rows were removed, the file was rolled "
                           "back or rewritten, or it is a copy of another file; nothing was signed. Run "
                           "`attempt verify`", exit_status=1)
    return cp.size, cp


_SIGNED_RANGES: dict = {}
"""(path, size, Merkle head) → the compact range this process last signed: the next signature
starts from it instead of reading the stored nodes again."""


def _merkle_base(store, base: Checkpoint | None, found: list):
    """The Merkle compact range of the first `base.size` rows, checked: from the stored tree
    nodes when that reproduces the head `base` signed; else (a base signed before the tree, or
    nodes that do not reproduce it) from every row up to it, each checked against the chain,
    whose head `base` signed. Nodes it had to compute go to `found` (to be stored)."""
    from . import merkle
    from .chain import bulk_sha256
    sha = bulk_sha256()
    collect = lambda *n: found.append(n)  # noqa: E731
    if base is None or base.size == 0:
        return merkle.CompactRange(sha, on_node=collect)
    c = store.conn
    known = _SIGNED_RANGES.get((store.path, base.size, base.merkle))
    if known is not None:  # this process signed that head (the capture daemon signs again and again)
        cr = merkle.CompactRange(sha, on_node=collect)
        cr.end, cr.nodes = base.size, list(known)
        return cr
    if base.merkle is not None:
        tree = merkle.StoredTree(c, base.size, sha)
        try:
            cr = tree.compact()
        except merkle.MerkleError:
            cr = None
        if cr is not None and cr.root().hex() == base.merkle:
            found.extend(tree.recomputed)
            cr.on_node = collect
            return cr
    cr = merkle.CompactRange(sha, on_node=collect)
    try:
        merkle.extend_checked(c, cr, base.size, sha=sha)
    except merkle.MerkleError as e:
        raise AttemptError("checkpoint.unverified", f"nothing was signed: {e}; run `attempt verify`",
                           exit_status=1) from None
    if base.merkle is not None and cr.root().hex() != base.merkle:
        raise AttemptError("checkpoint.diverged", f"the rows up to the last signed checkpoint (size {base.size}) "
                           "no longer make the Merkle head it signed; nothing was signed. Run `attempt verify`",
                           exit_status=1)
    return cr


def _verify_rows(store, lo: int, hi: int, leaves=None) -> None:
    """Recompute the hashes and links of rows lo+1..hi (chain.check_rows) before they are
    signed: no signature ever vouches for a row that does not verify. Each row that verified
    goes on to `leaves` (the Merkle compact range being signed)."""
    if hi <= lo:
        return
    from . import chain, keys, recovery
    device = store.device_id
    gaps = {}
    if store.conn.execute("SELECT 1 FROM meta WHERE key = ?", (recovery.META_KEY,)).fetchone():
        gaps = recovery.trusted_gaps(store.conn, keys.load(device), device)[0]
    n, found = chain.check_rows(store.conn, lo + 1, hi + 1, leaves, gaps)
    if found is None:
        last, count = store.conn.execute("SELECT max(seq), count(*) FROM events WHERE seq > ? AND seq <= ?",
                                         (lo, hi)).fetchone()
        if last != hi:
            found = chain.problem("truncated", f"rows up to seq={hi} are missing")
        elif n != count:  # a damaged page can end SQLite's scan early without an error
            found = chain.problem("damaged", f"only {n} of the {count} rows after seq={lo} could be read")
    if found is not None:
        raise AttemptError("checkpoint.unverified", f"nothing was signed: {found['message']}; run "
                           "`attempt verify`", exit_status=1)


def _refuse_a_copy(store, device: str) -> None:
    """checkpoint.copy when another file this account recorded holds the same device's history
    and is not damaged: the copy beside the key is that file's, and a signature of this one
    (rows the other never had) would make the other read as rolled back. A damaged file is never
    written again, and a file `attempt recover` made (from one damaged, marked or not yet) signs
    in its place (spec/recover.md)."""
    other = location.other_holder(store.path, "dev_" + device)
    if other is None or recovered(store.conn):
        return
    from . import damage
    if damage.marked(other) is not None:
        return
    raise AttemptError("checkpoint.copy", f"this file is a copy of {printable(other)} (both hold the history of "
                       f"dev_{device}, whose checkpoint is kept beside its key): nothing was signed, so that "
                       "file stays whole. Sign one of them only: keep using the original, or remove or move it "
                       "(this file is then the history, and signs)", exit_status=1)


def create(store, key: keys.DeviceKey | None = None, *, now_us: int | None = None,
           adopt: bool = False) -> Checkpoint | None:
    """Verify the rows after the last signed checkpoint, then sign the current head and store
    it (in the file and beside the key). None when the chain is empty or has not grown since
    the last checkpoint; AttemptError when the chain does not extend the last signed one
    (`checkpoint.diverged`), a row after it does not verify (`checkpoint.unverified`), or the
    outside copy is gone while the file holds checkpoints (`checkpoint.outside_missing`, unless
    `adopt`: the whole chain is verified instead)."""
    from . import keys
    device = store.device_id
    key, _ = keys.signing_key(store, key)  # the file's own key: never a lost one's stand-in
    if key is None:
        raise AttemptError("keys.missing", "this device has no signing key yet (run `attempt keys init`)", exit_status=1)
    _refuse_a_copy(store, device)
    stamp = clock.iso(clock.now_us() if now_us is None else now_us)
    c = store.conn
    with _OutsideLock(device):
        # the long part (the rows since the last signature) reads a snapshot without the write
        # lock, so hooks are not held up; the rows that arrive meanwhile are checked under it
        seen, _ = store.head()
        last = latest(store)
        if seen == 0 or (last is not None and last[0] >= seen):
            return None
        vouched, base = _signed_base(store, device, key, seen, adopt)
        tree = has_tree(c) and not recovered(c)
        nodes: list = []
        leaves = _merkle_base(store, base, nodes) if tree else None
        _verify_rows(store, vouched, seen, leaves)
        c.execute("BEGIN IMMEDIATE")
        try:
            size, head = store.head()
            if size < seen:
                raise AttemptError("checkpoint.diverged", f"rows after seq={size} were removed while "
                                   "they were being verified; nothing was signed", exit_status=1)
            _verify_rows(store, seen, size, leaves)
            root = leaves.root().hex() if tree else None
            note = sign(key, device, size, head, stamp, root)
            if tree:
                _SIGNED_RANGES.clear()
                _SIGNED_RANGES[(store.path, size, root)] = tuple(leaves.nodes)
            # the copy beside the key first: it only names rows already committed, so a signer
            # killed (or a COMMIT failing) after it leaves a file that verifies; the other way
            # round, a first checkpoint committed without its outside copy would leave a file
            # that verify reports and nothing signs again (checkpoint.outside_missing)
            _write_outside(device, note)
            location.remember_database(store.path, "dev_" + device)  # a file signed before the record began
            c.execute("INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) VALUES (?,?,?,?,?)",
                      (size, head, stamp, key.identity, note))
            if nodes:  # what a file written before the tree lacked, now checked: later appends keep it
                from . import merkle
                merkle.store(c, nodes)
            c.execute("COMMIT")
        except BaseException:
            if not c.getautocommit():
                c.execute("ROLLBACK")
            raise
    return parse(note)


def restore_outside(store, key: keys.DeviceKey | None = None) -> Checkpoint | None:
    """`attempt checkpoint --adopt` on a chain that has not grown since its newest checkpoint
    (so there is nothing new to sign): when the copy beside the key is gone, that checkpoint,
    which the caller's full verify has just checked, becomes the copy again, if it is this
    file's, signed by the file's key (or a key it replaced) and still ends the chain. None when
    nothing was restored."""
    from . import keys
    device = store.device_id
    key, _ = keys.signing_key(store, key)
    if key is None:
        return None
    with _OutsideLock(device):
        if read_outside(device) is not None:
            return None
        row = store.conn.execute("SELECT note FROM checkpoints ORDER BY size DESC LIMIT 1").fetchone()
        if row is None:
            return None
        cp = parse(row[0])
        head = store.conn.execute("SELECT chain_hash FROM events WHERE seq = ?", (cp.size,)).fetchone()
        if cp.origin != ORIGIN_PREFIX + device or not check_signature(cp, key) or head is None or head[0] != cp.head:
            return None
        _write_outside(device, row[0])
    return cp


def recovered(conn) -> bool:
    """A file `attempt recover` rebuilt: its seq has the gaps a recovery note declares, and the
    Merkle tree (leaf i = row seq i) is not kept for it (spec/recover.md)."""
    from .recovery import META_KEY
    return conn.execute("SELECT 1 FROM meta WHERE key = ?", (META_KEY,)).fetchone() is not None


def has_tree(conn) -> bool:
    """The file has the Merkle tree's table (migration 0010; every file Store.open made)."""
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'merkle_nodes'").fetchall())


def due(conn) -> bool:
    """A checkpoint is due whenever the chain grew since the newest one in the file (read on
    any connection; read-only is enough): no tail stays unsigned longer than the next signer
    that can write takes to come (spec/checkpoint.md)."""
    row = conn.execute("SELECT seq FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    size = row[0] if row else 0
    last = conn.execute("SELECT max(size) FROM checkpoints").fetchone()[0]
    return size > (last or 0)


def signable(conn) -> bool:
    """A checkpoint is due and this device holds its key (no cryptography import)."""
    if not due(conn):
        return False
    dev = conn.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone()
    from ..model import ids
    if not dev or not ids.is_uuid(dev[0]):
        return False
    return os.path.exists(os.path.join(location.key_dir(), f"{dev[0]}.key"))


def maybe_checkpoint(store, *, quiet: bool = False, say=None) -> Checkpoint | None:
    """Called by imports, read commands and the capture daemon: sign when due and a key
    exists; never fails the caller (a read-only or locked file simply skips). A chain that
    cannot be signed (rows removed, a row that does not verify, the file's key lost or another
    key in its place: keys.signing_key) is one `note:` line on stderr unless `quiet` (handed to
    `say` instead when given: the CLI wraps it); `attempt verify` says what is wrong. It never
    makes a key."""
    try:
        if store.readonly or not due(store.conn):
            return None
    except Exception:  # an unreadable checkpoint row: `attempt verify` reports it
        return None
    from . import keys
    try:
        key, _ = keys.signing_key(store)  # a lost or wrong key: a note, and nothing signed
        if key is None:
            return None
        return create(store, key)
    except AttemptError as e:  # say so on every due read; sign nothing
        if e.code == "keys.lost" and store.meta("demo") == "1":
            return None  # `attempt demo`'s file: its one-off key was deleted by design (devtools/demo.py)
        if not quiet:
            import sys
            note = f"note: no checkpoint signed: {e}"
            if say is None:
                print(note, file=sys.stderr)
            else:
                say(note)
        return None
    except Exception:  # a busy or read-only file must not fail a read command
        return None
