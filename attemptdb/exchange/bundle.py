"""Evidence bundles: a scope of the history in one signed file that verifies offline
(spec/bundle.md).

Invariants:
- A bundle is a ZIP holding `manifest.json` and one `sessions/<ses_id>/events.jsonl` per
  session: canonical Event v1 lines (the bytes `attempt events --jsonl` prints), chain order.
- The manifest lists every file with its SHA-256, size and event count, and is signed with the
  device's Ed25519 key over SIGNED_PREFIX + the canonical JSON (sorted keys, compact) of the
  manifest without `signature`; `key_id` is the fingerprint of the enclosed public key.
- Content (`content`, `raw`, `x_*` extensions) is left out unless the exporter opts in; the
  events then say `metadata_only`, and the manifest says `content: false`.
- Reading treats the file as hostile: nothing is extracted by name, every read is bounded by
  what the signed manifest declares, an unknown major version is refused (fail closed), and
  problems name files and line numbers, never content. Import writes nothing unless the whole
  bundle verified, and imports the bytes it verified (a private copy), not a second read.
- Import adds new events of a device whose key this file knows (its own; one pinned for sync,
  spec/sync.md "Trust") only from a bundle that key signed; otherwise it refuses the whole
  bundle (`bundle.device_key`, naming the device). In a file whose pins `attempt recover`
  could not read whole, new events of a device without a pin are refused too
  (`bundle.pin_unconfirmed`), as sync refuses them (attemptdb.exchange.bundle_trust). Events
  already stored are duplicates, whoever relays them.
- Export writes a temporary file `.attempt-bundle-<pid>-XXXXXXXX.tmp` beside OUT, renamed into
  place once whole; an OSError (a full disk) is `bundle.unwritable` and removes it. One a writer
  killed with -9 left is removed by a later export there (exchange/stale_temp.py).
"""

import base64
import contextlib
import hashlib
import os
import re
import stat
import struct
import tempfile
import zipfile
import zlib

from .. import __version__, resources
from ..errors import AttemptError, printable
from ..ingest import privacy
from ..integrity import keys
from ..model import clock, event, fastjson, ids
from ..model.event import MAX_LINE
from ..render.termtable import plural
from ..store import plainfile
from . import stale_temp

SCHEMA_VERSION = "attestack.bundle.v1"
SIGNED_PREFIX = b"attestack.bundle.v1 manifest\n"
MANIFEST = "manifest.json"
MEDIA_TYPE = "application/jsonl"
MAX_MANIFEST = 64 << 20
MAX_MEMBERS = 200_001  # the schema's 100,000 files, 100,000 artifacts and the manifest
ARTIFACTS = "artifacts/"
OMITTED_ROOT = "<repo>"  # evidence.omit.ROOT
_ATTRS = event.COLUMNS.index("attrs_json")
MAX_PROBLEMS = 20
_VERSION = re.compile(r"attestack\.bundle\.v([0-9]{1,9})\Z")
TMP_PREFIX = ".attempt-bundle-"
_STALE_TMP = re.compile(r"\.attempt-bundle-([0-9]{1,10})-[a-z0-9_]{8}\.tmp\Z")  # export's mkstemp name
_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError,
                NotImplementedError, RuntimeError)  # corrupt, truncated, encrypted, unknown method


def session_path(session_id: str) -> str:
    return f"sessions/{session_id}/events.jsonl"


def signed_bytes(manifest: dict) -> bytes:
    return keys.manifest_bytes(SIGNED_PREFIX, manifest)


def sign_manifest(manifest: dict, key: keys.DeviceKey) -> dict:
    """`manifest` with its `signature` (any old one replaced)."""
    return keys.sign_manifest(SIGNED_PREFIX, manifest, key)


# --- export ---------------------------------------------------------------------------------

def export(store, out_path: str, key: keys.DeviceKey, *, where: str = "1", params=(),
           include_content: bool = False, force: bool = False, now_us: int | None = None,
           include_artifacts: bool = False, omit_paths: bool = False, consistency_from=None,
           progress=None) -> tuple[dict, dict]:
    """Write the events matching `where` (an SQL condition on `events`) to a new bundle at
    `out_path` (atomically: a temporary file, synced, renamed into place). Returns the manifest
    and what of the artifacts the events name stays behind (`left_out`).
    `include_artifacts`: the stored artifacts the events name travel in `artifacts/`;
    `omit_paths`: local paths become placeholders (evidence/omit.py); `consistency_from`: a
    tree size, or the text of a signed note of this device, the bundle's checkpoint is proven
    to extend (RFC 9162 consistency proof). `progress(n, total=…)` hears of the events written."""
    if os.path.lexists(out_path) and not force:
        raise AttemptError("bundle.exists", f"{out_path} exists; pass --force to replace it")
    if os.path.exists(out_path) and not stat.S_ISREG(os.stat(out_path).st_mode):  # a rename would replace it
        raise AttemptError("bundle.unwritable", f"cannot write {out_path}: not a regular file (a bundle is "
                           "written whole, to a file); nothing was written")
    out_dir = os.path.dirname(os.path.abspath(out_path))
    stale_temp.clear(out_dir, _STALE_TMP)
    try:
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".tmp")
    except OSError as e:
        raise AttemptError("bundle.unwritable", f"cannot write in {out_dir}: {e.strerror}") from None
    conn = store.conn
    try:
        with os.fdopen(fd, "wb") as raw_out:
            conn.execute("BEGIN")  # one snapshot: the rows and the chain head agree
            try:
                size, head = store.head()
                rows = conn.execute(f"SELECT {', '.join(event.COLUMNS)}, seq, event_hash FROM events "
                                    f"WHERE {where} ORDER BY session_id, seq", params)
                if progress is not None:
                    progress(0, total=conn.execute(f"SELECT count(*) FROM events WHERE {where}", params).fetchone()[0])
                cp_note, cp = _bundle_checkpoint(conn, size)
                consistency = _consistency(store, cp, consistency_from) if consistency_from is not None else None
                named: set = set()
                with zipfile.ZipFile(raw_out, "w", zipfile.ZIP_DEFLATED) as zf:
                    try:
                        files = _write_sessions(zf, rows, include_content, omit_paths, named, progress)
                    except UnicodeDecodeError:  # text SQLite hands back as bytes that are not UTF-8
                        from ..integrity.chain import unreadable_text
                        found = unreadable_text(conn, 0)
                        if found is None:
                            raise
                        raise AttemptError("bundle.row_changed", f"row seq={found[0]} ({found[1]}) holds text "
                                           "that is not valid UTF-8: it is not what was written; `attempt "
                                           "verify` says more. Nothing was exported", exit_status=1) from None
                    arts = _write_artifacts(zf, conn, named) if include_artifacts else None
                    left = left_out(conn, named, arts)
                    body = {
                        "schema_version": SCHEMA_VERSION,
                        "bundle_id": "bun_" + ids.uuid7(),
                        "created_at": clock.iso(clock.now_us() if now_us is None else now_us),
                        "producer": f"attemptdb {__version__}",
                        "device_id": "dev_" + store.device_id,
                        "content": bool(include_content),
                        "sessions": [f["path"].split("/")[1] for f in files],
                        "events": sum(f["events"] for f in files),
                        "chain": {"size": size, "head": head},
                        "files": files,
                    }
                    if omit_paths:
                        body["paths_omitted"] = True
                    if arts is not None:
                        body["artifacts"] = arts
                    if cp_note is not None:
                        body["checkpoint"] = {"note": cp_note}
                    if consistency is not None:
                        body["consistency"] = consistency
                    manifest = sign_manifest(body, key)
                    zf.writestr(MANIFEST, fastjson.dumps(manifest) + "\n")
            finally:
                conn.execute("COMMIT")
            raw_out.flush()
            os.fsync(raw_out.fileno())
        os.replace(tmp, out_path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise AttemptError("bundle.unwritable", f"cannot write in {out_dir}: {e.strerror or e}; nothing was "
                               f"written to {out_path} (the temporary file is removed)") from None
        raise
    return manifest, left


def stored_line(r) -> str:
    """The canonical line of a row (COLUMNS, seq, event_hash), refused unless it still hashes to
    the stored event_hash: a bundle never signs a row edited in the file."""
    from ..integrity.chain import hash_line
    n = len(event.COLUMNS)
    try:
        text = event.line_from_row(r[:n])
        ok = hash_line(text, hashlib.sha256) == r[n + 1]
    except (ValueError, TypeError, AttributeError, event.EventError):
        ok = False
    if not ok:
        raise AttemptError("bundle.row_changed", f"row seq={r[n]} ({r[0]}) is not what was written; "
                           "`attempt verify` says more. Nothing was exported", exit_status=1)
    return text


def _bundle_checkpoint(conn, size: int):
    """(note, Checkpoint) of the newest signed checkpoint of at most `size` rows that signs a
    Merkle head, (None, None) when there is none."""
    from ..integrity import checkpoint
    for (note,) in conn.execute("SELECT note FROM checkpoints WHERE size <= ? ORDER BY size DESC", (size,)):
        try:
            cp = checkpoint.parse(note)
        except AttemptError:
            continue
        if cp.merkle is not None:
            return note, cp
    return None, None


def _consistency(store, cp, source) -> dict:
    """{"from": {"note"}, "path"}: the RFC 9162 consistency proof from an earlier checkpoint
    (`source`: its tree size among the stored ones, or a note's text) to `cp`."""
    from ..integrity import checkpoint, merkle
    if cp is None:
        raise AttemptError("bundle.no_checkpoint", "no signed checkpoint with a Merkle tree head yet: nothing to "
                           "prove consistency with (`attempt checkpoint` signs one once the chain grows)")
    if isinstance(source, int):
        row = store.conn.execute("SELECT note FROM checkpoints WHERE size = ?", (source,)).fetchone()
        if row is None:
            raise AttemptError("bundle.consistency", f"no signed checkpoint of size {source} in this file")
        source = row[0]
    try:
        old = checkpoint.parse(source)
    except AttemptError:
        raise AttemptError("bundle.consistency", "the earlier checkpoint is not a signed AttemptDB note") from None
    if old.origin != cp.origin or old.merkle is None or not 0 < old.size <= cp.size:
        raise AttemptError("bundle.consistency", "the earlier checkpoint is not one of this log's with a Merkle head "
                           f"and at most {cp.size:,} events")
    try:
        path = merkle.StoredTree(store.conn, cp.size).consistency(old.size)
    except merkle.MerkleError as e:
        raise AttemptError("bundle.consistency", f"the tree cannot be read ({e}); run `attempt verify`") from None
    if not merkle.verify_consistency(old.size, cp.size, bytes.fromhex(old.merkle), bytes.fromhex(cp.merkle), path):
        raise AttemptError("bundle.not_extended", f"this log at {cp.size:,} events does not extend the checkpoint of "
                           f"{old.size:,} events given: it is not this log's, or history was rewritten", exit_status=1)
    return {"from": {"note": source}, "path": [h.hex() for h in path]}


def consistency_source(text: str):
    """A `--consistency-from` value: a tree size, else a file (an earlier bundle or proof) whose
    signed checkpoint note is read."""
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        if zipfile.is_zipfile(text):
            with zipfile.ZipFile(text) as zf, zf.open(MANIFEST) as f:
                doc = fastjson.loads(f.read(MAX_MANIFEST + 1).decode("utf-8"))
        else:
            with open(text, "rb") as f:
                doc = fastjson.loads(f.read(1 << 26).decode("utf-8"))
        note = doc["checkpoint"]["note"]
    except (OSError, KeyError, TypeError, ValueError, UnicodeDecodeError, zipfile.BadZipFile):
        raise AttemptError("bundle.consistency", f"{_shown(text)}: not a bundle or proof holding a signed "
                           "checkpoint") from None
    if not isinstance(note, str):
        raise AttemptError("bundle.consistency", f"{_shown(text)}: its checkpoint is not a note")
    return note


def _write_artifacts(zf: zipfile.ZipFile, conn, named: set) -> list[dict]:
    """`artifacts/<art_id>` for each named artifact whose bytes are stored, checked against its
    SHA-256 while it is copied; their manifest entries (seed 001's Artifact objects)."""
    from ..evidence import artifacts
    out = []
    for aid in sorted(named):
        meta = artifacts.row(conn, aid)
        if meta is None or not meta["stored"]:
            continue
        path = f"{ARTIFACTS}{aid}"
        digest, n = hashlib.sha256(), 0
        with zf.open(path, "w", force_zip64=True) as member:
            for chunk in artifacts.read_chunks(conn, aid):
                digest.update(chunk)
                n += len(chunk)
                member.write(chunk)
        if digest.hexdigest() != meta["sha256"] or n != meta["size_bytes"]:
            raise AttemptError("bundle.artifact_changed", f"the stored bytes of {aid} do not match its SHA-256; "
                               "nothing was exported", exit_status=1)
        out.append({"artifact_id": aid, "path": path, "sha256": meta["sha256"], "size_bytes": n,
                    "media_type": meta["media_type"], "purpose": meta["purpose"], "redacted": meta["redacted"]})
    return out


def left_out(conn, named: set, carried: list | None) -> dict:
    """Of the artifacts the exported events name, how many stay behind: `stored` ones whose
    bytes this file holds (no --include-artifacts), `not_stored` ones whose bytes it never held
    (not kept when recorded, or brought by a bundle or sync without them). A reader of the
    bundle finds their ids, hashes and sizes in the events, not their bytes."""
    from ..evidence import artifacts
    in_bundle = {a["artifact_id"] for a in carried or ()}
    stored = not_stored = 0
    for aid in named - in_bundle:
        try:
            meta = artifacts.row(conn, aid)
        except AttemptError:  # a malformed row: its bytes are not carried either
            meta = None
        if meta is not None and meta["stored"]:
            stored += 1
        else:
            not_stored += 1
    return {"stored": stored, "not_stored": not_stored}


def _named_artifacts(attrs_json: str, named: set) -> None:
    if '_artifact"' not in attrs_json:
        return
    from ..evidence.artifacts import is_artifact_id
    for k, v in fastjson.loads(attrs_json).items():
        if k.endswith("_artifact") and is_artifact_id(v):
            named.add(v)


def _write_sessions(zf: zipfile.ZipFile, rows, include_content: bool, omit_paths: bool, named: set,
                    progress=None) -> list[dict]:
    """One member per session from rows ordered by session; their manifest entries. `named`
    collects the artifact ids the events name."""
    sid = event.COLUMNS.index("session_id")
    files, current, member = [], None, None

    def close_member():
        member.close()
        if progress is not None and count % 1000:
            progress(count % 1000)
        files.append({"path": session_path(current), "sha256": digest.hexdigest(), "size_bytes": nbytes,
                      "media_type": MEDIA_TYPE, "events": count})

    try:
        for r in rows:
            if r[sid] != current:
                if member is not None:
                    close_member()
                current, digest, nbytes, count = r[sid], hashlib.sha256(), 0, 0
                member = zf.open(session_path(current), "w", force_zip64=True)
            text = stored_line(r)
            if not include_content:
                text = privacy.clamp_line(text)
            if omit_paths:
                from ..evidence.omit import omit_paths as omit
                text = event.line(event.canonical(omit(fastjson.loads(text))))
            _named_artifacts(r[_ATTRS], named)
            data = text.encode("utf-8") + b"\n"
            member.write(data)
            digest.update(data)
            nbytes += len(data)
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(1000)
    except BaseException:
        if member is not None:  # else the ZIP cannot close, and its error would hide this one
            member.close()
        raise
    if member is None:
        raise AttemptError("bundle.empty", "no events in this scope: nothing to export")
    close_member()
    return files


# --- verify ---------------------------------------------------------------------------------

def _shown(name) -> str:
    """A name from the bundle made safe to print: control characters as `?`, at most 80."""
    text = str(name)
    return printable(text[:80] + "…" if len(text) > 80 else text)


class Report:
    """What `verify` found. `ok` exactly when there is no problem."""

    def __init__(self, path: str):
        self.path = path
        self.problems: list[str] = []
        self.code: str | None = None  # the first problem's code, when it has one (import's refusals)
        self.notes: list[str] = []
        self.manifest: dict | None = None
        self.signer: str | None = None
        self.pinned = False
        self.events = 0
        self.checkpoint = None  # the bundle's signed checkpoint (checkpoint.Checkpoint), when it has one
        self.consistent_from = None  # the earlier checkpoint it was proven to extend
        self.artifacts_kept = 0
        self.devices: set = set()  # the device ids (bare) of the events read

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, message: str, code: str | None = None) -> None:
        if not self.problems:
            self.code = code
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)

    def line(self) -> str:
        if not self.ok:
            return f"problem[{self.code}]: {self.problems[0]}" if self.code else f"problem: {self.problems[0]}"
        m = self.manifest
        how = "the key you named" if self.pinned else "not pinned: pass --key to require a signer"
        extra = ""
        if m.get("artifacts"):
            extra += ", " + plural(len(m["artifacts"]), "artifact", grouped=True)
        if m.get("paths_omitted"):
            extra += ", local paths omitted"
        if self.consistent_from is not None:
            extra += (f", its log of {self.checkpoint.size:,} events proven to extend the checkpoint of "
                      f"{self.consistent_from.size:,}")
        return (f"ok: bundle {m['bundle_id']}: {plural(m['events'], 'event', grouped=True)} in "
                f"{plural(len(m['sessions']), 'session', grouped=True)}, "
                f"content {'included' if m['content'] else 'left out'}{extra}, signed by {self.signer} ({how})")

    def as_dict(self) -> dict:
        m = self.manifest or {}
        return {"ok": self.ok, "code": self.code, "bundle": self.path,
                "bundle_id": m.get("bundle_id") if self.ok else None,
                "signer": self.signer, "pinned": self.pinned,
                "events": m.get("events") if self.ok else None,
                "sessions": len(m.get("sessions", ())) if self.ok else None,
                "content": m.get("content") if self.ok else None,
                "artifacts": len(m.get("artifacts", ())) if self.ok else None,
                "paths_omitted": bool(m.get("paths_omitted")) if self.ok else None,
                "checkpoint": self.checkpoint.as_dict() if self.ok and self.checkpoint else None,
                "consistent_from": self.consistent_from.as_dict() if self.ok and self.consistent_from else None,
                "problems": self.problems, "notes": self.notes}


_schema_validator = None


def _validator():
    global _schema_validator
    if _schema_validator is None:
        import jsonschema
        with open(resources.path("spec", "bundle-v1.schema.json"), encoding="utf-8") as f:
            schema = fastjson.loads(f.read())
        _schema_validator = jsonschema.Draft202012Validator(schema)
    return _schema_validator


def _has_trailing_newline(v) -> bool:
    if isinstance(v, str):
        return v.endswith("\n")
    items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
    return any(_has_trailing_newline(x) for x in items)


def _pin_matches(pin: str, sig: dict) -> bool:
    if pin.startswith("id_"):
        return pin.lower() == sig["key_id"]
    return pin == sig["public_key"]


def _check_manifest(rep: Report, zf: zipfile.ZipFile, pin: str | None) -> dict | None:
    """The manifest, when it is readable, of a known version, valid and correctly signed."""
    try:
        with zf.open(MANIFEST) as f:
            data = f.read(MAX_MANIFEST + 1)
    except KeyError:
        rep.problem("no manifest.json in the bundle", code="bundle.not_a_bundle")
        return None
    if len(data) > MAX_MANIFEST:
        rep.problem(f"manifest.json is larger than {MAX_MANIFEST:,} bytes", code="bundle.manifest")
        return None
    try:
        m = fastjson.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        rep.problem(f"manifest.json is not JSON ({getattr(e, 'msg', 'not UTF-8')})", code="bundle.manifest")
        return None
    if not isinstance(m, dict):
        rep.problem("manifest.json is not a JSON object", code="bundle.manifest")
        return None
    found = _VERSION.match(m.get("schema_version")) if isinstance(m.get("schema_version"), str) else None
    if found is None:
        rep.problem("manifest.json has no attestack.bundle.vN schema_version", code="bundle.manifest")
        return None
    if int(found.group(1)) != 1:
        rep.problem(f"bundle version v{int(found.group(1))} is not supported (this attempt reads v1)", code="bundle.version")
        return None
    errors = sorted(_validator().iter_errors(m), key=lambda e: list(map(str, e.absolute_path)))
    for e in errors[:5]:
        where = "/".join(map(str, e.absolute_path)) or "(top level)"
        rep.problem(f"manifest.json {_shown(where)}: fails its schema ({e.validator})", code="bundle.manifest")
    if errors:
        return None
    # JSON Schema's `$` lets one final "\n" through in Python's re; a signed note ends in one and
    # is read by its own strict parser
    if _has_trailing_newline({k: v for k, v in m.items() if k not in ("checkpoint", "consistency")}):
        rep.problem("manifest.json: a value ends in a newline", code="bundle.manifest")
        return None
    for k in m:
        if k not in _validator().schema["properties"]:
            rep.notes.append(f"manifest field {_shown(k)!r} is unknown to this version; ignored")
    sig = m["signature"]
    public = base64.b64decode(sig["public_key"])
    if keys.fingerprint(public) != sig["key_id"]:
        rep.problem("the signature's key_id is not the fingerprint of its public key", code="bundle.signature")
        return None
    if not keys.DeviceKey(public).verify(base64.b64decode(sig["value"]), signed_bytes(m)):
        rep.problem("the manifest's signature does not verify: it was changed after signing", code="bundle.signature")
        return None
    rep.signer = sig["key_id"]
    if pin is not None:
        if not _pin_matches(pin, sig):
            rep.problem(f"signed by {sig['key_id']}, not by the key you named ({_shown(pin)})", code="bundle.signer")
            return None
        rep.pinned = True
    paths = [f["path"] for f in m["files"]]
    if len(set(paths)) != len(paths):
        rep.problem("the manifest lists a file twice", code="bundle.manifest")
    if sorted(p.split("/")[1] for p in paths) != sorted(m["sessions"]):
        rep.problem("the manifest's sessions are not the sessions of its files", code="bundle.manifest")
    if sum(f["events"] for f in m["files"]) != m["events"]:
        rep.problem("the manifest's event count is not the sum of its files' counts", code="bundle.manifest")
    arts = m.get("artifacts", [])
    if len({a["artifact_id"] for a in arts}) != len(arts):
        rep.problem("the manifest lists an artifact twice", code="bundle.manifest")
    for a in arts:
        if a["path"] != ARTIFACTS + a["artifact_id"] or a["artifact_id"] != "art_" + a["sha256"][:32]:
            rep.problem(f"artifact {a['artifact_id']} is not stored under its own name and digest", code="bundle.manifest")
            break
    if rep.ok and "checkpoint" in m:
        _check_checkpoints(rep, m, keys.DeviceKey(public))
    return m if rep.ok else None


def _check_checkpoints(rep: Report, m: dict, key) -> None:
    """The bundle's signed checkpoint (the source's log when it was exported: same key, same
    device, its chain head when it covers the whole chain) and, when present, the consistency
    proof from an earlier checkpoint of the same log to it."""
    from ..integrity import checkpoint, merkle
    origin = checkpoint.ORIGIN_PREFIX + m["device_id"][4:]

    def signed(note, what):
        try:
            cp = checkpoint.parse(note)
        except AttemptError:
            rep.problem(f"the {what} is not a signed AttemptDB checkpoint", code="bundle.checkpoint")
            return None
        if cp.origin != origin or not checkpoint.check_signature(cp, key) or cp.merkle is None:
            rep.problem(f"the {what} is not signed by the bundle's key for its device, or signs no Merkle head", code="bundle.checkpoint")
            return None
        return cp

    cp = signed(m["checkpoint"]["note"], "checkpoint")
    if cp is None:
        return
    chain = m["chain"]
    if cp.size > chain["size"] or (cp.size == chain["size"] and cp.head != chain["head"]):
        rep.problem("the checkpoint does not belong to the chain the manifest names", code="bundle.checkpoint")
        return
    rep.checkpoint = cp
    if "consistency" not in m:
        return
    old = signed(m["consistency"]["from"]["note"], "earlier checkpoint")
    if old is None:
        return
    path = [bytes.fromhex(h) for h in m["consistency"]["path"]]
    if old.size > cp.size or not merkle.verify_consistency(old.size, cp.size, bytes.fromhex(old.merkle),
                                                           bytes.fromhex(cp.merkle), path):
        rep.problem(f"the consistency proof does not show the log of {cp.size:,} events extending the earlier "
                    f"checkpoint of {old.size:,}", code="bundle.checkpoint")
        return
    rep.consistent_from = old


def _check_artifact(rep: Report, zf: zipfile.ZipFile, entry: dict, copy_dir) -> None:
    """Hash one artifact member, bounded by its declared size; with `copy_dir`, keep the bytes
    checked in a file named after the artifact."""
    path, declared = entry["path"], entry["size_bytes"]
    digest, nbytes = hashlib.sha256(), 0
    out = open(os.path.join(copy_dir, entry["artifact_id"]), "wb") if copy_dir is not None else None
    try:
        with zf.open(path) as f:
            while True:
                chunk = f.read(min(1 << 16, declared - nbytes + 1))
                if not chunk:
                    break
                nbytes += len(chunk)
                if nbytes > declared:
                    rep.problem(f"{path} holds more than the {declared:,} bytes the manifest declares", code="bundle.member")
                    return
                digest.update(chunk)
                if out is not None:
                    out.write(chunk)
    except KeyError:
        rep.problem(f"{path} is listed in the manifest but missing from the bundle", code="bundle.member")
        return
    except _READ_ERRORS as e:
        rep.problem(f"{path} cannot be read ({_shown(type(e).__name__)}: the bundle is corrupt or truncated)", code="bundle.member")
        return
    finally:
        if out is not None:
            out.close()
    if nbytes != declared or digest.hexdigest() != entry["sha256"]:
        rep.problem(f"{path} differs from what was signed (its SHA-256 or size changed)", code="bundle.member")


def _check_file(rep: Report, zf: zipfile.ZipFile, entry: dict, content: bool, seen: set, copy_to,
                paths_omitted: bool = False) -> None:
    """Hash and read one session file, bounded by its declared size; check every line. A file
    that differs from what was signed is reported as that first, then its first bad line."""
    from ..model.event import parse_line
    path, declared = entry["path"], entry["size_bytes"]
    session = path.split("/")[1]
    digest, nbytes, count, bad = hashlib.sha256(), 0, 0, None
    try:
        with zf.open(path) as f:
            while True:
                raw = f.readline(min(MAX_LINE, declared - nbytes) + 1)
                if not raw:
                    break
                nbytes += len(raw)
                digest.update(raw)
                if nbytes > declared:
                    rep.problem(f"{path} holds more than the {declared:,} bytes the manifest declares", code="bundle.member")
                    return
                count += 1
                if bad is None:
                    bad = _bad_line(raw, count, parse_line, session, content, seen, paths_omitted, rep.devices)
                    if bad is None and copy_to is not None:
                        copy_to.write(raw)
    except KeyError:
        rep.problem(f"{path} is listed in the manifest but missing from the bundle", code="bundle.member")
        return
    except _READ_ERRORS as e:
        rep.problem(f"{path} cannot be read ({_shown(type(e).__name__)}: the bundle is corrupt or truncated)", code="bundle.member")
        return
    if nbytes != declared or digest.hexdigest() != entry["sha256"]:
        rep.problem(f"{path} differs from what was signed (its SHA-256 or size changed)", code="bundle.member")
    elif count != entry["events"]:
        rep.problem(f"{path} holds {count:,} events, the manifest says {entry['events']:,}", code="bundle.events")
    if bad is not None:
        rep.problem(f"{path} {bad}", code="bundle.events")
    rep.events += count


def _bad_line(raw: bytes, n: int, parse_line, session: str, content: bool, seen: set,
              paths_omitted: bool = False, devices: set | None = None) -> str | None:
    """What is wrong with line `n` of a session file (never its content), or None; `devices`
    collects the device ids of the good lines."""
    if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
        return f"line {n}: longer than {MAX_LINE:,} bytes (not read)"
    text = raw[:-1] if raw.endswith(b"\n") else raw
    try:
        env = parse_line(text, n)
    except AttemptError as e:
        return e.message
    if not raw.endswith(b"\n") or event.line(env).encode("utf-8") != text:
        return f"line {n}: not a canonical Event v1 line"
    if "ses_" + env["session_id"] != session:
        return f"line {n}: an event of another session"
    if not content and ("content" in env or "raw" in env or any(k.startswith("x_") for k in env)):
        return f"line {n}: carries content, but the manifest says it was left out"
    if paths_omitted and env["project"]["root"] != OMITTED_ROOT:
        return f"line {n}: carries a local path, but the manifest says paths were omitted"
    if env["event_id"] in seen:
        return f"line {n}: event ev_{env['event_id']} is in the bundle twice"
    seen.add(env["event_id"])
    if devices is not None:
        devices.add(env["device_id"])
    return None


MAX_INDEX_ENTRY = 256
"""Bytes of one member's record in the ZIP's file index (central directory) a bundle can need:
46 fixed, a name of at most ~80 characters, a zip64 extra field."""
_INDEX_RECORD = 46  # the fixed part of a central-directory record: its smallest size


def _index_fits(f) -> bool:
    """Whether the ZIP file `f`'s file index (central directory) can belong to a bundle of at
    most MAX_MEMBERS members: its size at most MAX_MEMBERS * MAX_INDEX_ENTRY bytes and, when it
    could hold more, at most MAX_MEMBERS records (counted record by record, stopping at the
    first too many). zipfile reads the whole index and builds an object for every record before
    anyone can count them: gigabytes for a hostile index of millions. True when no index is
    found where zipfile looks (zipfile then refuses the file)."""
    size = f.seek(0, 2)
    tail = min(size, 22 + 65535)
    f.seek(size - tail)
    data = f.read(tail)
    at = data.rfind(b"PK\x05\x06")
    if at < 0 or len(data) - at < 22:
        return True
    end = size - tail + at  # where zipfile finds the end record; the index ends before it
    index_size = struct.unpack_from("<I", data, at + 12)[0]
    if at >= 20 and data[at - 20:at - 16] == b"PK\x06\x07":  # zip64: the sizes in its own end record
        where = struct.unpack_from("<Q", data, at - 12)[0]
        if where > size - 56:
            return True
        f.seek(where)
        rec = f.read(56)
        if len(rec) < 56 or rec[:4] != b"PK\x06\x06":
            return True
        index_size = struct.unpack_from("<Q", rec, 40)[0]
        end = size - tail + at - 20 - 56
    if index_size > MAX_MEMBERS * MAX_INDEX_ENTRY:
        return False
    if index_size <= MAX_MEMBERS * _INDEX_RECORD or index_size > end:
        return True
    f.seek(end - index_size)
    index = f.read(index_size)
    pos = count = 0
    while pos + _INDEX_RECORD <= len(index):
        count += 1
        if count > MAX_MEMBERS:
            return False
        if index[pos:pos + 4] != b"PK\x01\x02":
            return True  # not an index zipfile reads either: it refuses the file
        n, m, k = struct.unpack_from("<HHH", index, pos + 28)
        pos += _INDEX_RECORD + n + m + k
    return True


def verify(path: str, *, key: str | None = None, copy_to=None, artifacts_to: str | None = None) -> Report:
    """Check a bundle offline: container, manifest (version, schema, signature, optional
    pinned signer `key`: an id_ identity or a base64 public key), its checkpoint and
    consistency proof, every file's and artifact's hash and size, every line a canonical event
    of its session. `copy_to` (a binary file) receives the verified lines, `artifacts_to` (a
    directory) the verified artifacts; both are complete only when the report is ok."""
    rep = Report(path)
    try:
        fd = plainfile.open_regular(path, follow_links=True)
    except plainfile.NotRegular:
        raise AttemptError("bundle.unreadable", f"{path} is not a regular file") from None
    except OSError as e:
        raise AttemptError("bundle.unreadable", f"cannot read {path}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        try:
            if not _index_fits(f):
                rep.problem(f"more than {MAX_MEMBERS:,} files in the bundle (its file index is larger than such "
                            "a bundle's)", code="bundle.not_a_bundle")
                return rep
            zf = zipfile.ZipFile(f)
        except _READ_ERRORS:
            rep.problem("not a bundle (not a readable ZIP file)", code="bundle.not_a_bundle")
            return rep
        with zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                rep.problem(f"more than {MAX_MEMBERS:,} files in the bundle", code="bundle.not_a_bundle")
                return rep
            names = [i.filename for i in infos]
            if len(set(names)) != len(names):
                rep.problem("a file name occurs twice in the bundle", code="bundle.not_a_bundle")
                return rep
            try:
                m = _check_manifest(rep, zf, key)
            except _READ_ERRORS as e:
                rep.problem(f"manifest.json cannot be read ({_shown(type(e).__name__)}: the bundle is corrupt)", code="bundle.not_a_bundle")
                return rep
            if m is None:
                return rep
            arts = m.get("artifacts", [])
            listed = {e["path"] for e in m["files"]} | {a["path"] for a in arts} | {MANIFEST}
            for name in names:
                if name not in listed:
                    rep.problem(f"{_shown(name)} is in the bundle but not in its manifest", code="bundle.member")
            seen: set = set()
            for entry in m["files"]:
                _check_file(rep, zf, entry, m["content"], seen, copy_to, m.get("paths_omitted", False))
            for entry in arts:
                _check_artifact(rep, zf, entry, artifacts_to)
            rep.manifest = m
    return rep


def import_bundle(store, path: str, *, key: str | None = None, progress=None):
    """Verify the bundle, then import exactly the lines and artifacts verified (through the
    ingestion contract, deduplicated; an artifact's bytes only when this file's capture mode
    keeps content). Returns (Report, ImportReport or None when it did not verify)."""
    from .importers.jsonl import import_file
    with tempfile.TemporaryDirectory(prefix="attempt-bundle-") as tmp:
        staged = os.path.join(tmp, "events.jsonl")
        arts = os.path.join(tmp, "artifacts")
        os.mkdir(arts, 0o700)
        try:
            with open(staged, "wb") as out:
                rep = verify(path, key=key, copy_to=out, artifacts_to=arts)
        except OSError as e:
            raise AttemptError("bundle.unwritable", f"cannot stage the bundle's events: {e.strerror}") from None
        if not rep.ok:
            return rep, None
        from .bundle_trust import check_known_devices
        check_known_devices(store, staged, rep)
        if not rep.ok:
            return rep, None
        from .bundle_conflicts import import_notes
        conflicts = import_notes(store, staged, rep.manifest, rep.devices)
        if progress is not None:
            progress(0, total=rep.manifest.get("events"))
        imported = import_file(store, staged, progress=progress)
        rep.notes.extend(conflicts)
        from ..evidence import artifacts
        keep = store.capture_mode != "metadata_only"
        for entry in rep.manifest.get("artifacts", []):
            if artifacts.ingest(store.conn, entry, os.path.join(arts, entry["artifact_id"]), keep):
                rep.artifacts_kept += 1
        return rep, imported
