"""The artifacts table as stored (spec/evidence.md): a row's metadata, its bytes decompressed a
chunk at a time, and the check of every stored row that `attempt verify` runs.

Invariants: the file is hostile input: a row of the wrong type or shape is `artifact.malformed`,
bytes that do not decompress are `artifact.corrupt`, and no more than `size_bytes` + 1 bytes ever
come out of a row (a decompression bomb stops there). Reads only; the writer of the table is
attemptdb.evidence.artifacts.
"""

import hashlib
import zlib

from ..errors import AttemptError

ID_HEX = 32
CHUNK = 1 << 16


def artifact_id(sha256_hex: str) -> str:
    return "art_" + sha256_hex[:ID_HEX]


def is_artifact_id(text) -> bool:
    return (isinstance(text, str) and len(text) == 4 + ID_HEX and text.startswith("art_")
            and not text[4:].strip("0123456789abcdef"))


HEX = frozenset("0123456789abcdef")


def _malformed(aid: str, column: str) -> AttemptError:
    return AttemptError("artifact.malformed", f"{aid}: its row in this file is malformed ({column})", exit_status=1)


def row(conn, aid: str) -> dict | None:
    """The artifact's metadata (seed 001's object, plus whether its bytes are stored). The file
    is hostile input: a column of the wrong type or shape, or a `sha256` whose first 32 hex
    digits are not the id (other bytes passed off under the id the events name) is
    `artifact.malformed`."""
    r = conn.execute("SELECT artifact_id, sha256, size_bytes, media_type, purpose, redacted, content IS NOT NULL "
                     "FROM artifacts WHERE artifact_id = ?", (aid,)).fetchone()
    if r is None:
        return None
    shown = aid if is_artifact_id(aid) else "the artifact"
    aid_, sha, size, media, purpose, redacted, stored = r
    if not (isinstance(sha, str) and len(sha) == 64 and HEX.issuperset(sha)):
        raise _malformed(shown, "sha256")
    if aid_ != artifact_id(sha):
        raise _malformed(shown, "sha256 does not match artifact_id")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise _malformed(shown, "size_bytes")
    for column, value in (("media_type", media), ("purpose", purpose)):
        if not isinstance(value, str):
            raise _malformed(shown, column)
    if redacted not in (0, 1):
        raise _malformed(shown, "redacted")
    return {"artifact_id": aid_, "sha256": sha, "size_bytes": size, "media_type": media, "purpose": purpose,
            "redacted": bool(redacted), "stored": bool(stored)}


def read_chunks(conn, aid: str):
    """The stored bytes of an artifact, decompressed a chunk at a time. The caller hashes them
    (bundle export and `attempt artifact` do, and refuse a mismatch); what this checks, before
    or while yielding: the row is well formed (`row`), the bytes are a zlib blob (an encoding
    this version does not read, or content that is no blob, is `artifact.corrupt` before any
    byte), the stream is whole (`artifact.corrupt`), and no more than `size_bytes` + 1 bytes
    come out (a decompression bomb stops there: the caller sees one byte too many)."""
    meta = row(conn, aid)
    if meta is None or not meta["stored"]:
        raise AttemptError("artifact.not_stored", f"{aid}: its bytes are not stored in this file", exit_status=1)
    r = conn.execute("SELECT rowid, encoding, typeof(content) FROM artifacts WHERE artifact_id = ?",
                     (aid,)).fetchone()
    yield from _inflate(conn, aid, r[0], r[1], r[2], meta["size_bytes"])


def intact(conn, rowid: int, digest: str, size: int) -> bool:
    """Whether the bytes stored in row `rowid` decompress to `size` bytes of SHA-256 `digest`."""
    encoding, kind = conn.execute("SELECT encoding, typeof(content) FROM artifacts WHERE rowid = ?",
                                  (rowid,)).fetchone()
    h, n = hashlib.sha256(), 0
    try:
        for data in _inflate(conn, artifact_id(digest), rowid, encoding, kind, size):
            h.update(data)
            n += len(data)
    except AttemptError:
        return False
    return n == size and h.hexdigest() == digest


def _inflate(conn, aid: str, rowid: int, encoding, kind, size: int):
    if encoding != "zlib" or kind != "blob":
        raise AttemptError("artifact.corrupt", f"{aid}: its stored bytes do not decompress (not a zlib blob)",
                           exit_status=1)
    opener = getattr(conn, "blob_open", None) or conn.blobopen
    blob = opener("main", "artifacts", "content", rowid, False)
    unzip = zlib.decompressobj()
    left = size + 1  # what may still come out: one byte past the size tells the caller
    try:
        while left > 0 and not unzip.eof:
            chunk = unzip.unconsumed_tail or blob.read(CHUNK)
            data = unzip.decompress(chunk, min(CHUNK, left))  # b"": what the stream still holds
            if data:
                left -= len(data)
                yield data
            elif not chunk:
                break
        if not unzip.eof and left > 0:
            raise AttemptError("artifact.corrupt", f"{aid}: its stored bytes do not decompress (the stream is cut "
                               "short)", exit_status=1)
    except zlib.error:
        raise AttemptError("artifact.corrupt", f"{aid}: its stored bytes do not decompress", exit_status=1) from None
    finally:
        blob.close()




def stored_findings(conn) -> list[tuple[str, str, str]]:
    """(the artifact id, or `row rowid=N` when the row's is none, kind, why) for every artifact row holding bytes that are not the
    artifact it names, in artifact_id order (`attempt verify`, spec/checkpoint.md): read as
    `attempt artifact` and bundle export read them (`row`, `read_chunks`), hashed and compared
    with the row's `sha256` and `size_bytes` and with what the events naming the id say of the
    bytes as written, when that is the same output (nothing was redacted: the id is its digest).
    `artifact_changed`: the bytes decompress to other bytes (or more, or fewer), or the events
    name other bytes under the id; `artifact_unreadable`: the row is malformed or its bytes do
    not decompress (`artifact.malformed`, `artifact.corrupt`). Nothing when no row holds bytes:
    the events are read only then, and a file from before migration 0010 has no artifacts."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'artifacts'").fetchone():
        return []
    rows = conn.execute("SELECT rowid, artifact_id FROM artifacts WHERE content IS NOT NULL "
                        "ORDER BY artifact_id").fetchall()
    if not rows:
        return []
    named = _named_outputs(conn, {aid for _, aid in rows if is_artifact_id(aid)})
    out = []
    for rowid, aid in rows:
        if not is_artifact_id(aid):
            out.append((f"row rowid={rowid}", "artifact_unreadable",
                        "its artifact_id is not art_ and 32 lowercase hex digits"))
            continue
        try:
            meta = row(conn, aid)
            digest, n = hashlib.sha256(), 0
            for data in read_chunks(conn, aid):
                digest.update(data)
                n += len(data)
        except AttemptError as e:
            out.append((aid, "artifact_unreadable", e.message.removeprefix(aid + ": ")
                        + " (`attempt artifact` and bundle export refuse it)"))
            continue
        if n != meta["size_bytes"] or digest.hexdigest() != meta["sha256"]:
            out.append((aid, "artifact_changed", "its stored bytes do not match its SHA-256 and size (`attempt "
                        "artifact` and bundle export refuse them: the artifacts table was edited or the bytes were "
                        "damaged)"))
            continue
        said = named.get(aid)
        if said is not None and said[:2] != (meta["sha256"], meta["size_bytes"]):
            out.append((aid, "artifact_changed", f"its row's SHA-256 or size is not what the event {said[2]} "
                        "naming it records of the output (the artifacts table was edited)"))
    return out


def outputs_named(attrs_json) -> list[tuple]:
    """(artifact id, stream, SHA-256 hex of the output as written or None, its size as the attrs
    say) of each output an event's attrs name (`x_attempt_<stream>_artifact`, spec/evidence.md);
    the hex only when the id is that digest (nothing was redacted). [] for attrs that are not a
    JSON object."""
    from ..model import fastjson
    try:
        attrs = fastjson.loads(attrs_json)
    except (TypeError, ValueError):
        return []
    if not isinstance(attrs, dict):
        return []
    out = []
    for key, value in attrs.items():
        if not (isinstance(value, str) and key.startswith("x_attempt_") and key.endswith("_artifact")):
            continue
        stream = key[len("x_attempt_"):-len("_artifact")]
        sha, size = attrs.get(f"x_attempt_{stream}_sha256"), attrs.get(f"x_attempt_{stream}_bytes")
        whole = isinstance(sha, str) and sha.startswith("sha256:") and artifact_id(sha[7:]) == value
        out.append((value, stream, sha[7:] if whole else None, size))
    return out


def _named_outputs(conn, wanted: set) -> dict:
    """{artifact id: (sha256 hex, size, event id)} of the first event naming each of `wanted` as
    the output as written (the id is that output's digest: nothing was redacted). One pass over
    the call events naming any artifact (command.finished is a tool_call_finished or
    tool_call_failed event; the kind index finds them), stopping once all are found."""
    found = {}
    for event_id, attrs_json in conn.execute(
            "SELECT event_id, attrs_json FROM events WHERE kind IN ('tool_call_finished', 'tool_call_failed') "
            "AND instr(attrs_json, '_artifact\"') > 0 ORDER BY seq"):
        for aid, _stream, sha, size in outputs_named(attrs_json):
            if sha is not None and aid in wanted and aid not in found:
                found[aid] = (sha, size, event_id)
        if len(found) == len(wanted):
            break
    return found
