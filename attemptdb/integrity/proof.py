"""Inclusion proofs of one event (spec/proof.md): `prove` writes one from a database,
`verify` checks one with nothing but the proof (and optionally a pinned signer).

Invariants:
- A proof discloses one event: its canonical line (content clamped as bundles do, unless the
  caller includes it), its leaf index, the RFC 9162 inclusion path, and a signed checkpoint
  whose `merkle` line is the tree head the path must lead to.
- The leaf commits to the stored event's hash. When the line is the stored one, its SHA-256
  is that hash (`binding: hash`); when content was clamped the line hashes differently, and
  the device key signs that the two belong together (`binding: attested`).
- `prove` checks what it wrote with `verify` before returning it; `verify` treats the proof as
  hostile (bounded size, strict types, no duplicate keys, fail closed on unknown major
  versions) and reports the first problem with a code, never content.
"""

import base64
import json
import re

from ..errors import AttemptError, printable
from ..model.ids import sha256

FORMAT = "attemptdb.proof.v1"
ATTEST_PREFIX = b"attemptdb.proof.v1 clamp\n"
MAX_BYTES = (64 << 20) + (1 << 20)  # one event line (64 MiB at most) and the rest
_VERSION = re.compile(r"attemptdb\.proof\.v([0-9]{1,9})\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")


def attestation_bytes(event_hash: str, line: str) -> bytes:
    """What the device key signs when the disclosed line is the stored one with its content
    removed: the prefix, the stored event's hash and the SHA-256 of the disclosed line (hex),
    each line ending in a newline."""
    return (ATTEST_PREFIX + event_hash.encode("ascii") + b"\n"
            + sha256(line.encode("utf-8")).hexdigest().encode("ascii") + b"\n")


# --- prove ------------------------------------------------------------------------------------

def _resolve(conn, ref: str):
    from ..model import event
    text = ref.strip()
    bare = text[3:] if text.startswith("ev_") else text
    cols = ", ".join(event.COLUMNS)
    if len(bare) == 36:
        rows = conn.execute(f"SELECT seq, event_hash, {cols} FROM events WHERE event_id = ?", ("ev_" + bare,)).fetchall()
    elif 8 <= len(bare) < 36 and not bare.strip("0123456789abcdef-"):
        rows = conn.execute(f"SELECT seq, event_hash, {cols} FROM events WHERE event_id >= ? AND event_id < ? LIMIT 2",
                            ("ev_" + bare, "ev_" + bare + "\U0010ffff")).fetchall()
    else:
        rows = []
    if not rows:
        raise AttemptError("prove.unknown_event", "no such event in this file (give its ev_ id, or at least its "
                           "first 8 hex digits)")
    if len(rows) > 1:
        raise AttemptError("prove.ambiguous", "more than one event starts with those digits: give more")
    return rows[0]


def _checkpoint_for(conn, seq: int):
    from . import checkpoint
    if checkpoint.recovered(conn):
        raise AttemptError("prove.recovered_file", "this file was rebuilt by `attempt recover`: its log has the "
                           "gaps its recovery note declares, and no Merkle tree is kept for it (spec/recover.md); "
                           "prove events from the original file or a bundle", exit_status=1)
    for (note,) in conn.execute("SELECT note FROM checkpoints WHERE size >= ? ORDER BY size DESC", (seq,)):
        try:
            cp = checkpoint.parse(note)
        except AttemptError:
            continue
        if cp.merkle is not None:
            return cp, note
    raise AttemptError("prove.no_checkpoint", "no signed checkpoint with a Merkle tree head covers this event yet; "
                       "`attempt checkpoint` signs one when the chain has grown (any new event)", exit_status=1)


def prove(store, ref: str, *, include_content: bool = False) -> dict:
    """The proof of the event `ref` (an ev_ id or a unique prefix) against the newest signed
    checkpoint that covers it and signs a Merkle head."""
    from ..ingest import privacy
    from ..model import event
    from . import chain, keys, merkle
    conn = store.conn
    conn.execute("BEGIN")  # one snapshot: the row, the checkpoint and the tree agree
    try:
        row = _resolve(conn, ref)
        seq, stored_hash = row[0], row[1]
        try:
            line = event.line_from_row(row[2:])
            ok = chain.hash_line(line) == stored_hash
        except (ValueError, TypeError, AttributeError, event.EventError):
            ok = False
        if not ok:
            raise AttemptError("prove.row_changed", f"row seq={seq} is not what was written; `attempt verify` says "
                               "more. Nothing was proven", exit_status=1)
        cp, note = _checkpoint_for(conn, seq)
        try:
            path = merkle.StoredTree(conn, cp.size).inclusion(seq - 1)
        except merkle.MerkleError as e:
            raise AttemptError("prove.inconsistent", f"the tree cannot be read ({e}); run `attempt verify`",
                               exit_status=1) from None
    finally:
        conn.execute("COMMIT")
    key, _ = keys.signing_key(store)  # a lost or wrong key file: keys.lost / keys.mismatch
    if key is None:
        raise AttemptError("keys.missing", "this device has no signing key (run `attempt keys init`)", exit_status=1)
    disclosed = line if include_content else privacy.clamp_line(line)
    ev = {"line": disclosed, "event_hash": stored_hash}
    if disclosed == line:
        ev["binding"] = "hash"
    else:
        ev["binding"] = "attested"
        ev["attestation"] = base64.b64encode(key.sign(attestation_bytes(stored_hash, disclosed))).decode("ascii")
    doc = {"format": FORMAT, "event": ev,
           "inclusion": {"leaf_index": seq - 1, "tree_size": cp.size, "path": [h.hex() for h in path]},
           "checkpoint": {"note": note, "public_key": key.public_b64}}
    rep = verify(json.dumps(doc).encode("utf-8"), key=key.identity)
    if not rep.ok:
        raise AttemptError("prove.inconsistent", f"the proof drawn from this file does not verify ({rep.problems[0][1]}); "
                           "run `attempt verify`", exit_status=1)
    return doc


# --- verify -----------------------------------------------------------------------------------

class Report:
    def __init__(self):
        self.problems: list = []  # (code, message)
        self.notes: list = []
        self.signer = None
        self.pinned = False
        self.event_id = None
        self.leaf_index = None
        self.tree_size = None
        self.binding = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        if not self.ok:
            code, message = self.problems[0]
            return f"problem[{code}]: {message}"
        how = "the key you named" if self.pinned else "not pinned: pass --key to require a signer"
        what = "the stored event" if self.binding == "hash" else "the stored event with its content removed (attested)"
        return (f"ok: event ev_{self.event_id} is leaf {self.leaf_index:,} of {self.tree_size:,} in the log signed by "
                f"{self.signer} ({how}); the line shown is {what}")

    def as_dict(self) -> dict:
        return {"ok": self.ok, "event_id": f"ev_{self.event_id}" if self.ok else None,
                "leaf_index": self.leaf_index if self.ok else None, "tree_size": self.tree_size if self.ok else None,
                "binding": self.binding if self.ok else None, "signer": self.signer, "pinned": self.pinned,
                "problems": [{"code": c, "message": m} for c, m in self.problems], "notes": self.notes}


class _Bad(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise _Bad("proof.malformed", "a JSON object names a key twice")
        out[k] = v
    return out


def _no_constant(name):
    raise _Bad("proof.unreadable", f"{name} is not JSON")


def _obj(parent: dict, key: str, where: str) -> dict:
    v = parent.get(key)
    if not isinstance(v, dict):
        raise _Bad("proof.malformed", f"{where}.{key} is missing or not an object")
    return v


def _str(parent: dict, key: str, where: str) -> str:
    v = parent.get(key)
    if not isinstance(v, str):
        raise _Bad("proof.malformed", f"{where}.{key} is missing or not a string")
    return v


def _int(parent: dict, key: str, where: str) -> int:
    v = parent.get(key)
    if type(v) is not int or not 0 <= v < 2**63:
        raise _Bad("proof.malformed", f"{where}.{key} is missing or not a non-negative integer")
    return v


def _b64(text: str, n: int, code: str, what: str) -> bytes:
    if not _B64.match(text):
        raise _Bad(code, f"{what} is not base64")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise _Bad(code, f"{what} is not base64") from None
    if len(raw) != n:
        raise _Bad(code, f"{what} is not {n} bytes")
    return raw


def verify(data: bytes, *, key: str | None = None) -> Report:
    """Check a proof document (its bytes) offline; `key` pins the signer (an id_ identity or a
    base64 public key)."""
    rep = Report()
    try:
        _verify(rep, data, key)
    except _Bad as e:
        rep.problems.append((e.code, e.message))
    return rep


def _verify(rep: Report, data: bytes, pin: str | None) -> None:
    from ..model import event
    from . import checkpoint, keys, merkle
    if len(data) > MAX_BYTES:
        raise _Bad("proof.unreadable", f"larger than {MAX_BYTES:,} bytes")
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Bad("proof.unreadable", "not a JSON document in UTF-8") from None
    if not isinstance(doc, dict):
        raise _Bad("proof.unreadable", "not a JSON object")
    fmt = doc.get("format")
    found = _VERSION.match(fmt) if isinstance(fmt, str) else None
    if found is None:
        raise _Bad("proof.version", "no attemptdb.proof.vN format")
    if int(found.group(1)) != 1:
        raise _Bad("proof.version", f"proof format v{int(found.group(1))} is not supported (this attempt reads v1)")
    for k in doc:
        if k not in ("format", "event", "inclusion", "checkpoint"):
            rep.notes.append(f"field {_shown(k)!r} is unknown to this version; ignored")
    ev, inc, cpd = _obj(doc, "event", "$"), _obj(doc, "inclusion", "$"), _obj(doc, "checkpoint", "$")
    line, event_hash, binding = _str(ev, "line", "event"), _str(ev, "event_hash", "event"), _str(ev, "binding", "event")
    index, size = _int(inc, "leaf_index", "inclusion"), _int(inc, "tree_size", "inclusion")
    path = inc.get("path")
    if not isinstance(path, list) or len(path) > merkle.MAX_PATH or not all(
            isinstance(p, str) and _HEX64.match(p) for p in path):
        raise _Bad("proof.malformed", "inclusion.path is not a list of at most 64 hashes (64 lowercase hex digits)")
    if not _HEX64.match(event_hash):
        raise _Bad("proof.malformed", "event.event_hash is not 64 lowercase hex digits")
    if binding not in ("hash", "attested"):
        raise _Bad("proof.malformed", "event.binding is neither hash nor attested")
    note, pub_b64 = _str(cpd, "note", "checkpoint"), _str(cpd, "public_key", "checkpoint")
    # the signer
    public = _b64(pub_b64, 32, "proof.key", "checkpoint.public_key")
    identity = keys.fingerprint(public)
    rep.signer = identity
    if pin is not None:
        wanted = pin.lower() if pin.startswith("id_") else None
        if (wanted is not None and wanted != identity) or (wanted is None and pin != pub_b64):
            raise _Bad("proof.signer", f"signed by {identity}, not by the key you named ({_shown(pin)})")
        rep.pinned = True
    # the checkpoint
    try:
        cp = checkpoint.parse(note)
    except AttemptError:
        raise _Bad("proof.checkpoint", "checkpoint.note is not a signed AttemptDB checkpoint") from None
    signer_key = keys.DeviceKey(public)
    if cp.signer != identity or not checkpoint.check_signature(cp, signer_key):
        raise _Bad("proof.signature", "the checkpoint's signature does not verify with checkpoint.public_key")
    if cp.merkle is None:
        raise _Bad("proof.checkpoint", "the checkpoint signs no Merkle tree head")
    if cp.size != size:
        raise _Bad("proof.checkpoint", f"inclusion.tree_size is {size:,}, the checkpoint signs {cp.size:,} events")
    if index >= size:
        raise _Bad("proof.path", f"leaf {index:,} is not in a tree of {size:,} leaves")
    # the event
    if "\n" in line or "\r" in line:
        raise _Bad("proof.event", "event.line is not one line")
    from ..model.event import parse_line
    try:
        env = parse_line(line.encode("utf-8"), 1)
        canonical = event.line(env) == line
    except (AttemptError, UnicodeEncodeError):
        canonical = False
    if not canonical:
        raise _Bad("proof.event", "event.line is not a canonical Event v1 line")
    rep.event_id = env["event_id"]
    if binding == "hash":
        if sha256(line.encode("utf-8")).hexdigest() != event_hash:
            raise _Bad("proof.event_hash", "the SHA-256 of event.line is not event.event_hash")
    else:
        if "content" in env or "raw" in env or any(k.startswith("x_") for k in env) or env["capture_mode"] != "metadata_only":
            raise _Bad("proof.attestation", "an attested line must be the event without content (metadata_only)")
        sig = _b64(_str(ev, "attestation", "event"), 64, "proof.attestation", "event.attestation")
        if not signer_key.verify(sig, attestation_bytes(event_hash, line)):
            raise _Bad("proof.attestation", "the attestation does not verify: the line is not the signed clamp of "
                       "the event")
    # the path
    leaf = sha256(b"\x00" + bytes.fromhex(event_hash)).digest()
    root = merkle.root_from_inclusion(index, size, leaf, [bytes.fromhex(p) for p in path])
    if root is None or root.hex() != cp.merkle:
        raise _Bad("proof.path", "the inclusion path does not lead from the event to the signed Merkle tree head")
    rep.leaf_index, rep.tree_size, rep.binding = index, size, binding


def _shown(text) -> str:
    text = str(text)
    return printable(text[:80] + "…" if len(text) > 80 else text)
