"""Sync segments: the immutable, signed unit a device appends to a shared folder (spec/sync.md).

Layout: `DIR/dev_<uuid>/<n:06d>.jsonl` (canonical Event v1 lines of that device's own events,
in source_seq order) and `DIR/dev_<uuid>/<n:06d>.manifest.json` (written last: a segment
exists when its manifest does). Segment numbers start at 1 and have no gaps.

Invariants:
- The manifest is signed with the device's Ed25519 key over SIGNED_PREFIX + canonical JSON
  (sorted keys, compact) of the manifest without `signature`; `key_id` is the fingerprint of
  the enclosed public key.
- Leaves: the SHA-256 of each line (the event_hash a file stores for it). The device chain
  links them (`chain.link`) from `chain.prev` (the head of the segment before, GENESIS for the
  first) to `chain.head`: a segment continues exactly the one before it.
- Reading is bounded by what the manifest declares and streamed (memory holds one line, not a
  segment); problems are coded, name the device and the segment, never echo content.
"""

import base64
import hashlib
import os
import re

from ..errors import AttemptError
from ..integrity import chain, keys
from ..model import event, fastjson
from ..model.event import MAX_LINE
from ..store import plainfile

SCHEMA_VERSION = "attemptdb.sync.segment.v1"
SIGNED_PREFIX = b"attemptdb.sync.segment.v1 manifest\n"
MAX_MANIFEST = 1 << 20
MAX_SEGMENT_EVENTS = 20_000
MAX_SEGMENT_BYTES = 256 << 20
DEVICE_DIR = re.compile(r"dev_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
MANIFEST_NAME = re.compile(r"([0-9]{6,9})\.manifest\.json\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
FIELDS = {"schema_version": str, "device_id": str, "segment": int, "file": str, "sha256": str,
          "size_bytes": int, "events": int, "first_source_seq": int, "last_source_seq": int,
          "chain": dict, "content": bool, "created_at": str, "producer": str, "signature": dict}


def data_name(n: int) -> str:
    return f"{n:06d}.jsonl"


def manifest_name(n: int) -> str:
    return f"{n:06d}.manifest.json"


def signed_bytes(manifest: dict) -> bytes:
    return keys.manifest_bytes(SIGNED_PREFIX, manifest)


def sign(body: dict, key: keys.DeviceKey) -> dict:
    return keys.sign_manifest(SIGNED_PREFIX, body, key)


class SegmentProblem(AttemptError):
    """A segment that is refused: `code` (sync.*), the device and the segment number."""

    def __init__(self, code: str, device: str, segment, message: str):
        where = f"device {device}" + (f", segment {segment}" if segment is not None else "")
        super().__init__(code, f"{where}: {message}", exit_status=1)
        self.device = device
        self.segment = segment


def check_manifest(data: bytes, device: str, n: int) -> dict:
    """The manifest of segment `n` of `device` (dev_…), read from `data`: well-formed, its own,
    correctly signed by the key it encloses. Raises SegmentProblem."""
    def bad(code, msg):
        return SegmentProblem(code, device, n, msg)
    if len(data) > MAX_MANIFEST:
        raise bad("sync.bad_manifest", f"its manifest is larger than {MAX_MANIFEST:,} bytes")
    try:
        m = fastjson.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("sync.bad_manifest", "its manifest is not JSON") from None
    if not isinstance(m, dict) or m.get("schema_version") != SCHEMA_VERSION:
        raise bad("sync.bad_manifest", f"its manifest is not a {SCHEMA_VERSION} manifest")
    for k, t in FIELDS.items():
        v = m.get(k)
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            raise bad("sync.bad_manifest", f"its manifest field {k} is missing or of the wrong type")
    for k in m:
        if k not in FIELDS:
            raise bad("sync.bad_manifest", "its manifest has a field this version does not know")
    sig, ch = m["signature"], m["chain"]
    if set(ch) != {"prev", "head"} or not all(isinstance(ch[k], str) and _HEX64.match(ch[k]) for k in ch):
        raise bad("sync.bad_manifest", "its manifest's chain is not {prev, head} hex digests")
    if not _HEX64.match(m["sha256"]) or not 0 < m["size_bytes"] <= MAX_SEGMENT_BYTES or not 0 < m["events"] <= MAX_SEGMENT_EVENTS:
        raise bad("sync.bad_manifest", "its manifest's digest, size or event count is not valid")
    if not 0 < m["first_source_seq"] <= m["last_source_seq"] or m["last_source_seq"] - m["first_source_seq"] + 1 < m["events"]:
        raise bad("sync.bad_manifest", "its manifest's source_seq range cannot hold its events")
    if m["device_id"] != device or m["segment"] != n or m["file"] != data_name(n):
        other = m["device_id"] if DEVICE_DIR.match(m["device_id"]) else "another device"  # never echoed
        raise bad("sync.misplaced", f"its manifest describes {other} segment {m['segment']}, not "
                  "this one: segments were moved, renamed or reordered")
    if set(sig) != {"alg", "key_id", "public_key", "value"} or sig["alg"] != "Ed25519" \
            or not all(isinstance(v, str) for v in sig.values()):
        raise bad("sync.bad_manifest", "its manifest's signature block is not valid")
    try:
        public = base64.b64decode(sig["public_key"], validate=True)
        value = base64.b64decode(sig["value"], validate=True)
    except ValueError:
        raise bad("sync.bad_manifest", "its manifest's signature is not base64") from None
    if len(public) != 32 or keys.fingerprint(public) != sig["key_id"]:
        raise bad("sync.bad_manifest", "its signature's key_id is not the fingerprint of its public key")
    if not keys.DeviceKey(public).verify(value, signed_bytes(m)):
        raise bad("sync.signature", "its manifest's signature does not verify: it was changed after signing")
    return m


READ_CHUNK = 1 << 20


def iter_lines(path: str, m: dict, device: str, dir_fd: int | None = None):
    """The segment's data file (`path`, relative to the device folder's descriptor `dir_fd` when
    given) checked against its manifest `m`, streamed: yields (envelope, leaf, line bytes) in
    order, every line a canonical event of `device` whose attrs hold only what the ingestion
    contract keeps (content_free_attrs), source_seq strictly increasing within the
    declared range; after the last line, the count, range and chain of leaves from chain.prev to
    chain.head are checked (a SegmentProblem then, so a caller imports nothing before the
    generator is exhausted and rolls back on a raise). The whole file is never held in memory:
    one pass hashes it, a second reads it one line (at most MAX_LINE bytes) at a time."""
    from ..model.event import parse_line
    n = m["segment"]

    def bad(code, msg):
        return SegmentProblem(code, device, n, msg)
    declared = m["size_bytes"]
    sha = hashlib.sha256
    head = m["chain"]["prev"]
    last_seq = m["first_source_seq"] - 1
    bare = device[4:]
    try:
        fd = plainfile.open_regular(path, dir_fd=dir_fd)
    except FileNotFoundError:
        raise bad("sync.missing_data", f"its data file {data_name(n)} is missing") from None
    except plainfile.NotRegular:
        raise bad("sync.unreadable", "its data file is not a regular file") from None
    except OSError as e:
        raise bad("sync.unreadable", f"its data file cannot be read ({e.strerror})") from None
    changed = "its data file differs from what was signed (SHA-256 or size)"
    with os.fdopen(fd, "rb") as f:
        try:
            # the bytes first: a changed file is reported as that, whatever its lines now say
            digest, size = sha(), 0
            while size <= declared:  # bounded by what was signed (check_manifest caps it)
                buf = f.read(min(READ_CHUNK, declared + 1 - size))
                if not buf:
                    break
                digest.update(buf)
                size += len(buf)
            if size != declared or digest.hexdigest() != m["sha256"]:
                raise bad("sync.file_changed", changed)
            f.seek(0)
            digest, size, lineno, first = sha(), 0, 0, None
            while True:
                raw = f.readline(MAX_LINE + 1)
                if not raw:
                    break
                size += len(raw)
                if size > declared:  # rewritten since the first pass
                    raise bad("sync.file_changed", changed)
                digest.update(raw)
                lineno += 1
                if not raw.endswith(b"\n") or len(raw) > MAX_LINE:
                    raise bad("sync.bad_line", f"line {lineno} is not a complete line of at most {MAX_LINE:,} bytes")
                text = raw[:-1]
                try:
                    env = parse_line(text, lineno)
                except AttemptError as e:
                    raise bad("sync.bad_line", e.message) from None
                try:
                    same = event.line(env).encode("utf-8") == text
                except UnicodeEncodeError:  # a \ud800 escape: a lone surrogate is no Unicode text
                    raise bad("sync.bad_line", f"line {lineno} holds a string that is not Unicode text "
                              "(a lone surrogate)") from None
                if not same:
                    raise bad("sync.bad_line", f"line {lineno} is not a canonical Event v1 line")
                if env["device_id"] != bare:
                    raise bad("sync.foreign_event", f"line {lineno} is an event of another device")
                if not last_seq < env["source_seq"] <= m["last_source_seq"]:
                    raise bad("sync.order", f"line {lineno}: source_seq {env['source_seq']} is out of order or "
                              "outside the signed range")
                if not m["content"] and ("content" in env or "raw" in env or any(k.startswith("x_") for k in env)):
                    raise bad("sync.bad_line", f"line {lineno} carries content, but the manifest says it was left out")
                if "attrs" in env:
                    why = content_free_attrs(env["attrs"])
                    if why is not None:
                        raise bad("sync.bad_line", f"line {lineno}: {why[0]}: {why[1]}")
                if first is None:
                    first = env["source_seq"]
                last_seq = env["source_seq"]
                leaf = sha(text).hexdigest()
                head = chain.link(head, leaf, sha)
                yield env, leaf, len(raw)
        except OSError as e:  # an I/O error, or the file went away under a sync tool
            raise bad("sync.unreadable", f"its data file cannot be read ({e.strerror})") from None
    if size != declared or digest.hexdigest() != m["sha256"]:
        raise bad("sync.file_changed", changed)
    if lineno != m["events"] or first != m["first_source_seq"] or last_seq != m["last_source_seq"]:
        raise bad("sync.file_changed", "its data file does not hold the events its manifest counts")
    if head != m["chain"]["head"]:
        raise bad("sync.chain", "its events do not chain to the signed head")


def content_free_attrs(attrs: dict):
    """(JSON path, what) of the first entry of a line's `attrs` that the ingestion contract
    would drop (privacy.sanitise_attrs: a key off the allowlist, a value that is not
    content-free), else None. An imported line loses such an entry (counted in
    `attrs.redactions`); a signed segment's line cannot be rewritten, so pull refuses it. Names
    the key (attr-shaped: `validate` passed), never the value."""
    from ..ingest import privacy
    if not privacy.sanitise_attrs(attrs)[1]:
        return None
    rule = "attrs keep only allowlisted, content-free entries"
    for k, v in attrs.items():
        if not privacy.sanitise_attrs({k: v})[1]:
            continue
        if not privacy.key_allowed(k):
            return f"$.attrs.{k}", f"a key off the attrs allowlist ({rule})"
        return f"$.attrs.{k}", (f"a value that is not content-free: text, an email address, a home directory "
                                f"or a secret ({rule})")
    return "$.attrs", f"entries the ingestion contract drops ({rule})"


def list_segments(device_dir) -> tuple[list[int], list[int]]:
    """(segment numbers that have a manifest, sorted; numbers with only a data file) of a device
    folder: its path, or a descriptor of it (plainfile.open_directory)."""
    try:
        names = os.listdir(device_dir)
    except FileNotFoundError:  # (an OSError other than this is the caller's: never "no segments")
        return [], []
    manifests, data = set(), set()
    for name in names:
        found = MANIFEST_NAME.match(name)
        if found:
            manifests.add(int(found.group(1)))
        elif name.endswith(".jsonl") and name[:-6].isascii() and name[:-6].isdigit():  # not '²'
            data.add(int(name[:-6]))
    return sorted(manifests), sorted(data - manifests)


def read_manifest_bytes(path: str, dir_fd: int | None = None) -> bytes:
    """At most MAX_MANIFEST + 1 bytes of the manifest at `path` (relative to `dir_fd` when
    given): a regular file, never followed through a symlink. OSError."""
    fd = plainfile.open_regular(path, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_MANIFEST + 1)


def leaves_blob(leaves) -> bytes:
    return b"".join(bytes.fromhex(h) for h in leaves)


def chain_of(prev: str, blob: bytes) -> str:
    """The device chain head after linking the 32-byte leaves of `blob` to `prev`."""
    sha = hashlib.sha256
    head = bytes.fromhex(prev)
    for i in range(0, len(blob), 32):
        head = sha(head + blob[i:i + 32]).digest()
    return head.hex()
