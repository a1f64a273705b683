"""The device's Ed25519 identity: one key per device (= per database file), kept outside the
database in the key directory (`location.key_dir()`), mode 0600.

Invariants: the private key never enters the database or any output; the identity is
`id_<first 16 bytes of SHA-256(public key), hex>`; files are created exclusively (an existing
key is never overwritten) and read without following symlinks.

A database has one signing key for its whole life (spec/checkpoint.md "The key"): a key is made
only for a file that never had one (`signing_key(create=True)`). A file that records a key
(`meta.public_key`, `meta.key_id`, a checkpoint, a recovery or replacement note, the copy of its
checkpoint beside the key) whose key file is gone is `keys.lost`, and a key file that is not the
recorded one is `keys.mismatch`: nothing is signed or written, never a fresh key in its place.
Replacing a key that is truly gone is explicit (`replace_lost`, `attempt keys init
--replace-lost`): the new key signs a replacement note naming the old key (its public key as the
file recorded it) and the chain size it had; checkpoints the old key signed up to that size
still verify (`DeviceKey.previous`, `DeviceKey.vouches`).
"""

import base64
import hashlib
import os

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..errors import AttemptError
from ..store import location, plainfile


def fingerprint(public_raw: bytes) -> str:
    return "id_" + hashlib.sha256(public_raw).digest()[:16].hex()


BAD_PIN = "KEY is id_ followed by 32 hex digits, or a base64 public key"


def parse_pin(key: str) -> tuple[str, str | None]:
    """(key id, base64 public key or None) of a key a user names (`--key`, `keys trust`): an
    `id_` identity, its prefix and hex digits in either case, or a base64 Ed25519 public key.
    Anything else is keys.bad_key (a usage error, not a signature that fails to match)."""
    import binascii
    if key[:3].lower() == "id_":
        if len(key) != 35 or any(c not in "0123456789abcdef" for c in key[3:].lower()):
            raise AttemptError("keys.bad_key", BAD_PIN)
        return key.lower(), None
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise AttemptError("keys.bad_key", BAD_PIN)
    return fingerprint(raw), key


class DeviceKey:
    """A loaded key pair (private part optional: verify-only when None)."""

    def __init__(self, public_raw: bytes, private: Ed25519PrivateKey | None = None, *,
                 device: str | None = None, directory: str | None = None):
        self.public_raw = public_raw
        self.private = private
        self.identity = fingerprint(public_raw)
        self.upto = None  # a replaced key: the chain size it vouches for (replacement note)
        self.replaced_at = None
        self._device, self._directory = device, directory
        self._notes: list = []  # replacement notes seen (text), trusted or not
        self._previous: list | None = None
        self._trusted: list = []  # the notes of _notes this key (or one it replaced) signed

    @property
    def previous(self) -> list:
        """The keys this one replaced (`attempt keys init --replace-lost`), each with `upto` and
        `replaced_at`: those of the replacement notes, beside the key or added from the file
        (`add_notes`), that this key signed, and the keys those replaced in turn."""
        if self._previous is None:
            if self._device is not None and self.private is not None:
                self._notes += [n for n in _read_replaced(self._device, self._directory) if n not in self._notes]
            self._previous, self._trusted = _trusted_previous(self, self._notes, self._device)
        return self._previous

    @property
    def trusted_notes(self) -> list:
        """The replacement notes (text) behind `previous`."""
        _ = self.previous  # computes _trusted
        return list(self._trusted)

    def add_notes(self, notes) -> None:
        """Replacement notes found elsewhere (the file's `meta.key_replaced`): trusted only when
        this key (or a key it replaced) signed them."""
        fresh = [n for n in notes if n not in self._notes]
        if fresh:
            self._notes += fresh
            if self._previous is not None:
                self._previous = None

    def vouches(self, key_id: str, size: int | None = None):
        """The key (this one or a replaced one) that stands behind a signature by `key_id` over
        the first `size` rows, or None: a replaced key only for what the file held when it was
        replaced."""
        if key_id == self.identity:
            return self
        for k in self.previous:
            if k.identity == key_id and (size is None or k.upto is None or size <= k.upto):
                return k
        return None

    @property
    def note_hash(self) -> bytes:
        """C2SP signed-note key hash for Ed25519: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
        return hashlib.sha256(self.identity.encode() + b"\n\x01" + self.public_raw).digest()[:4]

    @property
    def public_b64(self) -> str:
        return base64.b64encode(self.public_raw).decode("ascii")

    def sign(self, data: bytes) -> bytes:
        if self.private is None:
            raise AttemptError("keys.no_private_key", "this key is verify-only")
        return self.private.sign(data)

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_raw).verify(signature, data)
            return True
        except (InvalidSignature, ValueError):
            return False


def key_path(device_id: str, directory: str | None = None) -> str:
    return os.path.join(directory or location.key_dir(), f"{device_id}.key")


def _read_private(path: str) -> bytes:
    try:
        fd = plainfile.open_regular(path)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise AttemptError("keys.unreadable", f"cannot read the device key {path}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if os.name == "posix":  # a private key others can read (or replace) signs nothing
            st = os.fstat(f.fileno())
            if st.st_uid != os.geteuid() or st.st_mode & 0o077:
                raise AttemptError("keys.exposed", f"the device key {path} is not private to this user "
                                   f"(mode {st.st_mode & 0o777:o}); `chmod 600` it, or make a new key if "
                                   "someone else may have read it", exit_status=1)
        data = f.read(4096)
    try:
        text = data.decode("ascii").strip()
        raw = bytes.fromhex(text)
        if len(raw) != 32:
            raise ValueError
    except ValueError:
        raise AttemptError("keys.corrupt", f"the device key {path} is not 64 hex digits") from None
    return raw


def load(device_id: str, directory: str | None = None) -> DeviceKey | None:
    """The device's key, or None when it has none yet."""
    try:
        raw = _read_private(key_path(device_id, directory))
    except FileNotFoundError:
        return None
    priv = Ed25519PrivateKey.from_private_bytes(raw)
    pub = priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return DeviceKey(pub, priv, device=device_id, directory=directory)


def create(device_id: str, directory: str | None = None) -> tuple[DeviceKey, bool]:
    """Load the device key, creating it when absent. Returns (key, created). Low level: a
    command that signs for a database asks `signing_key`, which never makes a key for a file
    that had one."""
    existing = load(device_id, directory)
    if existing is not None:
        return existing, False
    d = directory or location.key_dir()
    priv = Ed25519PrivateKey.generate()
    raw = priv.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())
    path = key_path(device_id, d)
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        if not write_private(path, (raw.hex() + "\n").encode("ascii"), replace=False):
            return load(device_id, d), False  # another process won the race: use its key
    except OSError as e:  # a full or read-only disk: no key, and nothing half-written (write_private)
        raise AttemptError("keys.unwritable", f"cannot write the device key in {d}: "
                           f"{e.strerror or type(e).__name__}; no key was made", exit_status=1) from None
    return load(device_id, d), True


def write_private(path: str, data: bytes, *, replace: bool = True) -> bool:
    """`data` as the file `path` (0600), whole or not at all: written to a temp file beside it
    and synced, then renamed over `path` (`replace`), or linked to it (never replacing an
    existing file: False when there is one). The temp file is removed whatever fails, so a full
    disk leaves neither it nor a part-written file behind; the OSError is raised."""
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def from_public_b64(text: str) -> DeviceKey | None:
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        return None
    return DeviceKey(raw) if len(raw) == 32 else None


def manifest_bytes(prefix: bytes, manifest: dict) -> bytes:
    """What a signed JSON manifest's signature covers: `prefix` (the manifest's kind and version)
    and the canonical JSON (sorted keys, compact) of the manifest without its `signature`."""
    from ..model import fastjson
    body = {k: v for k, v in manifest.items() if k != "signature"}
    return prefix + fastjson.dumps(body, sort_keys=True).encode("utf-8")


def sign_manifest(prefix: bytes, manifest: dict, key: DeviceKey) -> dict:
    """`manifest` with its `signature` block (any old one replaced): algorithm, key id, public
    key and the base64 signature over manifest_bytes. Bundles, sync segments and the team
    dataset sign their manifests this one way."""
    out = {k: v for k, v in manifest.items() if k != "signature"}
    value = base64.b64encode(key.sign(manifest_bytes(prefix, out))).decode("ascii")
    out["signature"] = {"alg": "Ed25519", "key_id": key.identity, "public_key": key.public_b64, "value": value}
    return out


# --- one key per database: lost, wrong and replaced keys ------------------------------------

REPLACED_META = "key_replaced"
"""meta key: a JSON array of the replacement notes (text) of this file's keys, oldest first."""
REPLACED_HEADER = "key replaced v1"


def is_identity(text) -> bool:
    return (isinstance(text, str) and len(text) == 35 and text.startswith("id_")
            and all(c in "0123456789abcdef" for c in text[3:]))


class Replacement:
    """A parsed replacement note (signature not checked):

    ```
    attemptdb.local/<device uuid>
    key replaced v1
    old <key id> <base64 public key | ->      (one line per replaced key)
    upto <chain size> <head chain hash hex | ->
    time <ISO-8601 UTC>

    — id_<the new key's fingerprint> <base64(key hash ‖ Ed25519 signature)>
    ```
    """

    __slots__ = ("device", "old", "upto", "head", "time", "body", "signer", "key_hash", "signature")

    def __init__(self, device, old, upto, head, time, body):
        self.device, self.old, self.upto, self.head, self.time, self.body = device, old, upto, head, time, body
        self.signer = self.key_hash = self.signature = None


def replacement_body(device: str, old, upto: int, head: str | None, time_text: str) -> str:
    lines = [f"attemptdb.local/{device}", REPLACED_HEADER]
    lines += [f"old {kid} {pub or '-'}" for kid, pub in old]
    lines += [f"upto {upto} {head or '-'}", f"time {time_text}"]
    return "\n".join(lines) + "\n"


def parse_replacement(text) -> Replacement:
    """ValueError unless `text` is a replacement note."""
    from . import signednote
    if not isinstance(text, str) or "\n\n" not in text or len(text) > 8192:
        raise ValueError("not a replacement note")
    body, sigs = text.split("\n\n", 1)
    lines = body.split("\n")
    if len(lines) < 4 or lines[1] != REPLACED_HEADER or not lines[0].startswith("attemptdb.local/"):
        raise ValueError("not a replacement note")
    old = []
    for line in lines[2:-2]:
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "old" or not is_identity(parts[1]):
            raise ValueError("not a replacement note")
        pub = None if parts[2] == "-" else parts[2]
        if pub is not None and (from_public_b64(pub) is None or fingerprint(from_public_b64(pub).public_raw) != parts[1]):
            raise ValueError("not a replacement note")
        old.append((parts[1], pub))
    upto = lines[-2].split(" ")
    if (len(upto) != 3 or upto[0] != "upto" or not upto[1].isascii() or not upto[1].isdigit()
            or not lines[-1].startswith("time ")):
        raise ValueError("not a replacement note")
    note = Replacement(lines[0][len("attemptdb.local/"):], old, int(upto[1]),
                       None if upto[2] == "-" else upto[2], lines[-1][5:], body + "\n")
    found = signednote.signatures(sigs)
    if not found:
        raise ValueError("not a replacement note")
    note.signer, note.key_hash, note.signature = found[0]
    return note


def _signed_by(note: Replacement, key: DeviceKey) -> bool:
    return (note.signer == key.identity and note.key_hash == key.note_hash
            and key.verify(note.signature, note.body.encode("utf-8")))


def _trusted_previous(key: DeviceKey, notes, device: str | None) -> tuple[list, list]:
    """(the keys `key` replaced, by the notes it signed, then those they replaced in turn (a
    replaced key vouches at most for what the key that replaced it does); the notes used)."""
    parsed = []
    for text in notes:
        try:
            n = parse_replacement(text)
        except ValueError:
            continue
        if device is None or n.device == device:
            parsed.append((n, text))
    out, signers, used = [], [key], set()
    while True:
        grew = False
        for i, (n, _) in enumerate(parsed):
            if i in used:
                continue
            by = next((s for s in signers if _signed_by(n, s)), None)
            if by is None:
                continue
            used.add(i)
            for kid, pub in n.old:
                if pub is None or kid == key.identity or any(k.identity == kid for k in out):
                    continue
                k = from_public_b64(pub)
                k.upto = n.upto if by.upto is None else min(n.upto, by.upto)
                k.replaced_at = n.time
                out.append(k)
                signers.append(k)
                grew = True
        if not grew:
            return out, [text for i, (_, text) in enumerate(parsed) if i in used]


def _note_list(text) -> list:
    import json
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [n for n in value if isinstance(n, str)] if isinstance(value, list) else []


def replaced_path(device_id: str, directory: str | None = None) -> str:
    return os.path.join(directory or location.key_dir(), f"{device_id}.replaced")


def _read_replaced(device_id: str, directory: str | None = None) -> list:
    try:
        fd = plainfile.open_regular(replaced_path(device_id, directory))
    except OSError:  # none (the usual case), or unreadable: no replaced key is trusted
        return []
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        return _note_list(f.read(1 << 20))


def _write_replaced(device_id: str, notes: list, directory: str | None = None) -> None:
    import json
    write_private(replaced_path(device_id, directory), (json.dumps(notes, indent=1) + "\n").encode("utf-8"))


def file_notes(store) -> list:
    """The replacement notes the file records (`meta.key_replaced`), as text."""
    return _note_list(store.meta(REPLACED_META))


def with_history(store, key: DeviceKey | None) -> DeviceKey | None:
    """`key` knowing the replacement notes the file records too (verify on a machine that has
    the file but not the notes beside the key). None stays None."""
    if key is not None:
        if key._device is None:
            key._device = store.meta("device_id")
        key.add_notes(file_notes(store))
    return key


class Recorded:
    """What a file says about its own signing key: `ids`, the key ids it accepts (first: the
    one it records; then the signer of its newest checkpoint when another key's that was not
    replaced); `public`, the recorded public key of `ids[0]` when known; `history`, whether it
    ever had a key (then a missing key file is a lost key, never a reason to make one)."""

    __slots__ = ("ids", "public", "history", "retired")

    def __init__(self, ids, public, history, retired):
        self.ids, self.public, self.history, self.retired = ids, public, history, retired


def recorded(store) -> Recorded:
    c = store.conn
    pub = store.meta("public_key")
    kid = store.meta("key_id")
    notes = file_notes(store)
    retired = set()
    for text in notes:
        try:
            retired.update(k for k, _ in parse_replacement(text).old)
        except ValueError:
            pass
    ids, public = [], None
    k = from_public_b64(pub) if isinstance(pub, str) else None
    if k is not None:
        ids.append(k.identity)
        public = pub
    elif is_identity(kid):
        ids.append(kid)
    row = c.execute("SELECT key_id FROM checkpoints ORDER BY size DESC LIMIT 1").fetchone()
    if row is not None and is_identity(row[0]) and row[0] not in ids and row[0] not in retired:
        ids.append(row[0])
    history = bool(ids or pub or kid or notes or row is not None)
    if not history:
        from . import recovery
        device = store.meta("device_id")
        history = c.execute("SELECT 1 FROM meta WHERE key = ?", (recovery.META_KEY,)).fetchone() is not None
        if not history and isinstance(device, str):
            from ..model import ids as id_mod
            if id_mod.is_uuid(device):  # its checkpoint copy beside the key (checkpoint.outside_path)
                history = os.path.lexists(os.path.join(location.key_dir(), f"{device}.checkpoint"))
    return Recorded(ids, public, history, retired)


def _advice(path: str) -> str:
    return (f"restore the key file from a backup to {path} (mode 0600; if this database was copied from "
            "another machine, the key is on that machine). If the key is truly gone, `attempt keys init "
            "--replace-lost` starts a new signing identity for this database (other devices then have to "
            "`attempt keys trust` it)")


def _expected(rec: Recorded) -> str:
    if not rec.ids:
        return "a key whose id it does not record"
    more = f" (its newest checkpoint was signed by {rec.ids[1]}: either is accepted)" if len(rec.ids) > 1 else ""
    return f"key {rec.ids[0]}{more}"


def lost_error(store, rec: Recorded | None = None) -> AttemptError:
    rec = rec or recorded(store)
    path = key_path(store.device_id)
    return AttemptError("keys.lost", f"this database's signing key is missing: {path} does not exist, but the "
                        f"database was signed with {_expected(rec)}. No new key was made and nothing was "
                        f"signed. R{_advice(path)[1:]}", exit_status=1)


def mismatch_error(store, key: DeviceKey, rec: Recorded) -> AttemptError:
    path = key_path(store.device_id)
    return AttemptError("keys.mismatch", f"the key file {path} holds key {key.identity}, but this database was "
                        f"signed with {_expected(rec)}: nothing was signed with it. Move that file away, "
                        f"then {_advice(path)}", exit_status=1)


def _accepts(rec: Recorded, key: DeviceKey) -> bool:
    if key.identity in rec.ids:
        return True
    if not rec.ids:
        return key.identity not in rec.retired
    # a key that replaced the recorded one, by its notes beside it (a replacement cut short
    # before the file recorded it)
    return any(k.identity in rec.ids for k in key.previous)


create_key = create  # `create` is also signing_key's flag


def signing_key(store, key: DeviceKey | None = None, *, create: bool = False) -> tuple[DeviceKey | None, bool]:
    """(the key that signs for this file, whether it was just made): `key` when given, else the
    device key file. `keys.mismatch` when that is not the key the file records; `keys.lost`
    when there is no key file but the file had a key. No key for a file that never had one:
    made when `create` (the caller records it: `record`), else (None, False)."""
    rec = recorded(store)
    if key is None:
        key = load(store.device_id)
    if key is not None:
        if not _accepts(rec, key):
            raise mismatch_error(store, key, rec)
        with_history(store, key)
        return key, False
    if rec.history:
        raise lost_error(store, rec)
    if not create:
        return None, False
    key, created = create_key(store.device_id)
    rec = recorded(store)  # another process may have recorded its own new key meanwhile
    if not _accepts(rec, key):
        raise mismatch_error(store, key, rec)
    return with_history(store, key), created


def record(store, key: DeviceKey) -> None:
    """Record `key` as the file's signing key (`meta.public_key`, `meta.key_id`) and the
    replacement notes it carries that the file lacks."""
    missing = [n for n in key.trusted_notes if n not in file_notes(store)]
    if store.meta("public_key") == key.public_b64 and store.meta("key_id") == key.identity and not missing:
        return
    import json
    c = store.conn
    own = c.getautocommit()
    if own:
        c.execute("BEGIN IMMEDIATE")
    try:
        store.set_meta("public_key", key.public_b64)
        store.set_meta("key_id", key.identity)
        if missing:
            store.set_meta(REPLACED_META, json.dumps(file_notes(store) + missing))
        if own:
            c.execute("COMMIT")
    except BaseException:
        if own and not c.getautocommit():
            c.execute("ROLLBACK")
        raise


def replace_lost(store, *, now_us: int | None = None) -> tuple[DeviceKey, Replacement]:
    """Make a new key for a file whose key is lost (`keys.lost`; anything else raises as
    signing_key does), and record the replacement: a note signed by the new key naming the old
    key(s) with the public key the file recorded and the chain size and head they signed up
    to, beside the key and in the file (`meta.key_replaced`), with the new `meta.public_key`.
    The key file is made first and removed again when the rest fails."""
    from ..model import clock
    from . import signednote
    try:
        key, _ = signing_key(store)
    except AttemptError as e:
        if e.code != "keys.lost":
            raise
    else:
        raise AttemptError("keys.not_lost", "this database's signing key is there "
                           f"({key.identity if key else 'none yet'}): --replace-lost only replaces a key that is "
                           "lost; `attempt keys init` makes the first one")
    rec = recorded(store)
    device = store.device_id
    old = [(rec.ids[0], rec.public)] + [(k, None) for k in rec.ids[1:]] if rec.ids else []
    key, created = create_key(device)
    if not created:  # another process made one meanwhile: never sign with a key we did not vet
        raise mismatch_error(store, key, rec)
    path = key_path(device)
    try:
        size, head = store.head()
        stamp = clock.iso(clock.now_us() if now_us is None else now_us)
        note = signednote.signed(replacement_body(device, old, size, head if size else None, stamp), key)
        beside = _read_replaced(device)
        _write_replaced(device, beside + [note])
        key.add_notes([note] + beside)
        record(store, key)
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    return key, parse_replacement(note)


def health(store) -> str | None:
    """What is wrong with this file's signing key, as a doctor problem line, or None (a key
    that is fine, or a file that never had one)."""
    try:
        signing_key(store)
    except AttemptError as e:
        return f"signing key: {e.message} [{e.code}]"
    return None


def replacement_lines(key: DeviceKey | None) -> list:
    """One line per replaced key `key` still trusts, for verify's notes: which key, when, and
    up to which size its checkpoints count."""
    if key is None:
        return []
    return [f"checkpoints of up to {k.upto:,} rows signed by the previous key {k.identity} are checked against "
            f"its public key as the file recorded it when `attempt keys init --replace-lost` replaced it on "
            f"{k.replaced_at}" for k in key.previous]


def verifying_key(store) -> tuple[DeviceKey | None, list, list]:
    """For `attempt verify`: (the key its checkpoints are checked against, notes, problems).
    The device key file when it is this file's (knowing the keys it replaced, from beside the
    key and from the file); else the public key the file records (a note says what that proves;
    a key file holding another key is a `key_mismatch` problem, never the key checked against).
    Notes name each replaced key still trusted (replacement_lines)."""
    notes, problems = [], []
    try:
        key, _ = signing_key(store)
    except AttemptError as e:
        if e.code not in ("keys.lost", "keys.mismatch"):
            raise
        if e.code == "keys.mismatch":
            problems.append(e.message)
        key = None
    if key is None:
        recorded_pub = store.meta("public_key")
        key = from_public_b64(recorded_pub) if isinstance(recorded_pub, str) else None
        if key is not None:
            notes.append("no local signing key for this device: checkpoints were checked against the public key "
                         "recorded in the file, which proves integrity only against accidents, not against someone "
                         "who could rewrite the file")
        key = with_history(store, key)
    notes += replacement_lines(key)
    return key, notes, problems
