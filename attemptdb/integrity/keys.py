"""The device's Ed25519 identity: one key per device (= per database file), kept outside the
database in the key directory (`location.key_dir()`), mode 0600.

Invariants: the private key never enters the database or any output; the identity is
`id_<first 16 bytes of SHA-256(public key), hex>`; files are created exclusively (an existing
key is never overwritten) and read without following symlinks.
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


class DeviceKey:
    """A loaded key pair (private part optional: verify-only when None)."""

    def __init__(self, public_raw: bytes, private: Ed25519PrivateKey | None = None):
        self.public_raw = public_raw
        self.private = private
        self.identity = fingerprint(public_raw)

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
    return DeviceKey(pub, priv)


def create(device_id: str, directory: str | None = None) -> tuple[DeviceKey, bool]:
    """Load the device key, creating it when absent. Returns (key, created)."""
    existing = load(device_id, directory)
    if existing is not None:
        return existing, False
    d = directory or location.key_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    priv = Ed25519PrivateKey.generate()
    raw = priv.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())
    path = key_path(device_id, d)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # another process won the race: use its key
        return load(device_id, d), False
    with os.fdopen(fd, "w") as f:
        f.write(raw.hex() + "\n")
        f.flush()
        os.fsync(f.fileno())
    return load(device_id, d), True


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
