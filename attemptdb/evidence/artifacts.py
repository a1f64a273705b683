"""Content-addressed artifacts (seed 001 "Artifact"; spec/evidence.md §3): command output
hashed as it streams past, and kept only when the capture mode allows content and the writer
asked for it.

Invariants:
- An output is never held whole in memory: `Sink.feed` hashes each chunk (SHA-256 of the
  bytes exactly as the command wrote them, always) and, when keeping, redacts secrets line by
  line (attemptdb.ingest.redaction, as the ingestion contract does for all content), compresses and
  writes the result to a private temporary file; `store` copies that file into the database
  through SQLite's incremental blob I/O, a chunk at a time.
- When nothing may be kept (metadata_only, or no `--attach-output`), no byte of the output is
  written anywhere: no temporary file, no row content; the artifact row holds the hash, size
  and media type alone.
- Artifacts are deduplicated by the SHA-256 of the bytes kept (the redacted bytes when a
  secret was found: `redacted` = 1): the same output twice is one row. `artifact_id` is `art_`
  + the first 32 hex digits of that SHA-256.
"""

import codecs
import hashlib
import os
import tempfile
import zlib

from ..errors import AttemptError
from ..ingest import redaction as secrets
from ..model import clock

ID_HEX = 32
CHUNK = 1 << 16
MAX_LINE = 1 << 20       # a line longer than this is redacted in pieces of about this size
LOOK_AHEAD = 64 << 10    # what a piece's scan sees past its end (a secret is far shorter)
MAX_KEPT = 512 << 20     # compressed bytes one artifact may take in the file (SQLite blobs stop at 1 GB)
TAIL = 8 << 10           # the end of an output, scanned for a test summary
TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"


def artifact_id(sha256_hex: str) -> str:
    return "art_" + sha256_hex[:ID_HEX]


def is_artifact_id(text) -> bool:
    return (isinstance(text, str) and len(text) == 4 + ID_HEX and text.startswith("art_")
            and not text[4:].strip("0123456789abcdef"))


class Output:
    """What one stream carried: `sha256`/`size` of the bytes as written, `media_type`, and when
    kept: the kept (redacted) bytes' `kept_sha256`, `kept_size`, `redacted` and the path of the
    compressed temporary file."""

    __slots__ = ("purpose", "sha256", "size", "media_type", "tail", "kept_path", "kept_sha256",
                 "kept_size", "redacted", "compressed", "dropped")

    def __init__(self, purpose):
        self.purpose = purpose
        self.sha256 = self.kept_path = self.kept_sha256 = None
        self.size = self.kept_size = self.compressed = 0
        self.media_type = TEXT
        self.tail = b""
        self.redacted = False
        self.dropped = None  # why bytes that were to be kept were not

    def discard(self) -> None:
        if self.kept_path:
            try:
                os.unlink(self.kept_path)
            except OSError:
                pass
            self.kept_path = None


class Sink:
    """One output stream of a command. `keep_dir`: a private directory for the kept bytes
    (None: hash only)."""

    def __init__(self, purpose: str, keep_dir: str | None = None):
        self.out = Output(purpose)
        self._sha = hashlib.sha256()
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._text = True
        self._tail = bytearray()
        self._file = None
        if keep_dir is not None:
            fd, path = tempfile.mkstemp(prefix="artifact-", dir=keep_dir)
            self._file = os.fdopen(fd, "wb")
            self.out.kept_path = path
            self._kept = hashlib.sha256()
            self._zip = zlib.compressobj(6)
            self._pending = b""
            self._carry = []  # secret spans found in the pending bytes by the scan that cut them

    def feed(self, chunk: bytes) -> None:
        out = self.out
        self._sha.update(chunk)
        out.size += len(chunk)
        if self._text:
            try:
                self._utf8.decode(chunk)
            except UnicodeDecodeError:
                self._text = False
        tail = self._tail
        tail += chunk[-TAIL:]
        if len(tail) > TAIL:
            del tail[:len(tail) - TAIL]
        if self._file is not None:
            data = self._pending + chunk
            cut = data.rfind(b"\n") + 1
            if cut:  # the pending bytes hold no newline: every carried span lies before the cut
                self._pending, carry, self._carry = data[cut:], self._carry, []
                self._keep(data[:cut], carry)
            elif len(data) > MAX_LINE:
                self._keep_piece(data)
            else:
                self._pending = data

    def _keep_piece(self, data: bytes) -> None:
        """Keep the front of one line too long to wait for its end, redacted as the whole line
        would be: the scan sees LOOK_AHEAD past the cut, a secret across the cut moves the cut
        past it, and the spans found beyond the cut (a value whose name came before the cut)
        are carried to the next piece."""
        try:
            text = data.decode("utf-8", "surrogateescape")
            spans = []
            for hit in sorted(self._carry + secrets.find(text), key=lambda h: (h[1], -h[2])):
                if not spans or hit[1] >= spans[-1][2]:
                    spans.append(hit)
            cut = len(text) - LOOK_AHEAD
            for _, start, end in spans:
                if start < cut < end:
                    cut = end
        except Exception:  # the scanner must never let unscanned bytes through: keep nothing
            self._drop("redaction_failed")
            return
        self._carry = [(rule, start - cut, end - cut) for rule, start, end in spans if start >= cut]
        self._pending = text[cut:].encode("utf-8", "surrogateescape")
        self._keep(text[:cut].encode("utf-8", "surrogateescape"), [h for h in spans if h[2] <= cut])

    def _keep(self, data: bytes, spans=()) -> None:
        """Redact a run of whole lines (or a piece of one) and write it (compressed) to the
        temporary file; `spans`, secrets a longer scan found in it, are replaced first."""
        out = self.out
        try:
            text = data.decode("utf-8", "surrogateescape")
            if spans:
                text = secrets.splice(text, spans)
            clean, found = secrets.redact(text)
            found += len(spans)
        except Exception:  # the scanner must never let unscanned bytes through: keep nothing
            self._drop("redaction_failed")
            return
        if found:
            out.redacted = True
            data = clean.encode("utf-8", "surrogateescape")
        self._kept.update(data)
        out.kept_size += len(data)
        z = self._zip.compress(data)
        out.compressed += len(z)
        if out.compressed > MAX_KEPT:
            self._drop("too_large")
            return
        self._file.write(z)

    def _drop(self, why: str) -> None:
        self._file.close()
        self._file = None
        self.out.discard()
        self.out.dropped = why

    def close(self) -> Output:
        out = self.out
        out.sha256 = self._sha.hexdigest()
        if self._text:
            try:
                self._utf8.decode(b"", True)
            except UnicodeDecodeError:
                self._text = False
        out.media_type = TEXT if self._text else BINARY
        out.tail = bytes(self._tail)
        if self._file is not None:
            if self._pending:
                self._keep(self._pending, self._carry)
                self._pending, self._carry = b"", []
        if self._file is not None:
            z = self._zip.flush()
            out.compressed += len(z)
            self._file.write(z)
            self._file.close()
            self._file = None
            out.kept_sha256 = self._kept.hexdigest()
        return out


def _blob(conn, rowid: int):
    opener = getattr(conn, "blob_open", None) or conn.blobopen
    return opener("main", "artifacts", "content", rowid, True)


def store(conn, out: Output, now_us: int | None = None) -> str:
    """The artifact row of an output (created, or given the bytes it lacked), its id. The kept
    bytes are copied from the temporary file in chunks, in one transaction."""
    kept = out.kept_path is not None
    digest = out.kept_sha256 if kept else out.sha256
    size = out.kept_size if kept else out.size
    aid = artifact_id(digest)
    stamp = clock.iso(clock.now_us() if now_us is None else now_us)
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT rowid, content IS NOT NULL FROM artifacts WHERE sha256 = ?", (digest,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO artifacts (artifact_id, sha256, size_bytes, media_type, purpose, redacted, "
                         "created_at, encoding, stored_bytes, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "CASE WHEN ? THEN zeroblob(?) END)",
                         (aid, digest, size, out.media_type, out.purpose, int(out.redacted), stamp,
                          "zlib" if kept else None, out.compressed if kept else None, kept, out.compressed))
            rowid = conn.last_insert_rowid()
        else:
            rowid = row[0]
            if kept and (not row[1] or not _intact(conn, rowid, digest, size)):
                # no bytes yet, or bytes that do not verify (the file was edited): ours replace them
                conn.execute("UPDATE artifacts SET artifact_id = ?, size_bytes = ?, encoding = 'zlib', "
                             "stored_bytes = ?, content = zeroblob(?) WHERE rowid = ?",
                             (aid, size, out.compressed, out.compressed, rowid))
            else:
                kept = False  # the bytes are there already
        if kept:
            blob = _blob(conn, rowid)
            try:
                with open(out.kept_path, "rb") as f:
                    while True:
                        chunk = f.read(CHUNK)
                        if not chunk:
                            break
                        blob.write(chunk)
            finally:
                blob.close()
        conn.execute("COMMIT")
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    finally:
        out.discard()
    return aid


_HEX = frozenset("0123456789abcdef")


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
    if not (isinstance(sha, str) and len(sha) == 64 and _HEX.issuperset(sha)):
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


MAX_SHOWN = 5  # ids an ambiguous short id names


def resolve(conn, text: str) -> str:
    """The full id a typed artifact id stands for: itself when whole, else the one stored
    artifact (or, failing that, the one id an event names) it is a prefix of, as every other
    short id: `art_` and at least ids.MIN_SHORT_HEX hex digits. `artifact.unknown` when none
    matches or it is no artifact id, `artifact.ambiguous` naming them when more than one does."""
    from ..model.ids import MIN_SHORT_HEX
    text = text.strip()
    if is_artifact_id(text):
        return text
    hexpart = text[4:] if text.startswith("art_") else ""
    if not (MIN_SHORT_HEX <= len(hexpart) < ID_HEX and _HEX.issuperset(hexpart)):
        raise AttemptError("artifact.unknown", f"no such artifact in this file (an artifact id is art_ and "
                           f"{MIN_SHORT_HEX} to {ID_HEX} lowercase hex digits)", exit_status=1)
    found = [r[0] for r in conn.execute("SELECT artifact_id FROM artifacts WHERE artifact_id > ? AND artifact_id < ? "
                                        "ORDER BY artifact_id LIMIT ?", (text, text + "g", MAX_SHOWN + 1))]
    if not found:  # named by events only (its bytes never came here)
        import re
        pattern = re.compile('"(' + text + '[0-9a-f]{' + str(ID_HEX - len(hexpart)) + '})"')
        seen = set()
        for (attrs_json,) in conn.execute("SELECT attrs_json FROM events WHERE instr(attrs_json, ?) > 0",
                                          ('"' + text,)):
            seen.update(pattern.findall(attrs_json) if isinstance(attrs_json, str) else ())
            if len(seen) > MAX_SHOWN:
                break
        found = sorted(seen)
    if not found:
        raise AttemptError("artifact.unknown", "no such artifact in this file", exit_status=1)
    if len(found) > 1:
        more = ", and more" if len(found) > MAX_SHOWN else ""
        raise AttemptError("artifact.ambiguous", f"ambiguous short id: matches {', '.join(found[:MAX_SHOWN])}{more}; "
                           "give more hex digits", exit_status=1)
    return found[0]


def named_by(conn, aid: str) -> dict | None:
    """What the first event naming `aid` says of it, for an artifact this file holds no row of
    (its bytes were not kept where it was recorded, or a bundle or sync brought the events
    without them): seed 001's fields the event carries (`sha256` only when the id is the
    digest of the output as written, i.e. nothing was redacted; `media_type` is never in the
    events), `stored` false, and the event. None when no event names it."""
    if not is_artifact_id(aid):
        return None
    from ..model import fastjson
    for event_id, session_id, attrs_json in conn.execute(
            "SELECT event_id, session_id, attrs_json FROM events WHERE instr(attrs_json, ?) > 0 ORDER BY seq",
            ('"' + aid + '"',)):
        try:
            attrs = fastjson.loads(attrs_json)
        except (TypeError, ValueError):
            continue
        if not isinstance(attrs, dict):
            continue
        for key, value in attrs.items():
            if value != aid or not (key.startswith("x_attempt_") and key.endswith("_artifact")):
                continue
            stream = key[len("x_attempt_"):-len("_artifact")]
            sha, size = attrs.get(f"x_attempt_{stream}_sha256"), attrs.get(f"x_attempt_{stream}_bytes")
            whole = isinstance(sha, str) and sha.startswith("sha256:") and artifact_id(sha[7:]) == aid
            return {"artifact_id": aid, "sha256": sha[7:] if whole else None,
                    "size_bytes": size if whole and type(size) is int else None,
                    "media_type": None, "purpose": "command." + stream, "stored": False,
                    "named_by": event_id, "session_id": session_id}
    return None


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


def _intact(conn, rowid: int, digest: str, size: int) -> bool:
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


def ingest(conn, meta: dict, path: str | None, keep: bool, now_us: int | None = None) -> bool:
    """Store an artifact from a verified bundle: `meta` (seed 001's object) and, when `keep`,
    the bytes in the file at `path` (already checked against meta's sha256 and size). Returns
    whether the bytes were stored."""
    sink_out = Output(meta["purpose"])
    sink_out.sha256, sink_out.size, sink_out.media_type = meta["sha256"], meta["size_bytes"], meta["media_type"]
    sink_out.redacted = bool(meta["redacted"])
    if keep and path is not None:
        fd, tmp = tempfile.mkstemp(prefix="artifact-", dir=os.path.dirname(path))
        z = zlib.compressobj(6)
        with os.fdopen(fd, "wb") as dst, open(path, "rb") as src:
            while True:
                chunk = src.read(CHUNK)
                if not chunk:
                    break
                data = z.compress(chunk)
                sink_out.compressed += len(data)
                dst.write(data)
            data = z.flush()
            sink_out.compressed += len(data)
            dst.write(data)
        sink_out.kept_path, sink_out.kept_sha256, sink_out.kept_size = tmp, meta["sha256"], meta["size_bytes"]
    store(conn, sink_out, now_us)
    return keep and path is not None


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


def _named_outputs(conn, wanted: set) -> dict:
    """{artifact id: (sha256 hex, size, event id)} of the first event naming each of `wanted` as
    the output as written (the id is that output's digest: nothing was redacted). One pass over
    the call events naming any artifact (command.finished is a tool_call_finished or
    tool_call_failed event; the kind index finds them), stopping once all are found."""
    from ..model import fastjson
    found = {}
    for event_id, attrs_json in conn.execute(
            "SELECT event_id, attrs_json FROM events WHERE kind IN ('tool_call_finished', 'tool_call_failed') "
            "AND instr(attrs_json, '_artifact\"') > 0 ORDER BY seq"):
        try:
            attrs = fastjson.loads(attrs_json)
        except (TypeError, ValueError):
            continue
        if not isinstance(attrs, dict):
            continue
        for key, value in attrs.items():
            if not (isinstance(value, str) and value in wanted and value not in found
                    and key.startswith("x_attempt_") and key.endswith("_artifact")):
                continue
            stream = key[len("x_attempt_"):-len("_artifact")]
            sha, size = attrs.get(f"x_attempt_{stream}_sha256"), attrs.get(f"x_attempt_{stream}_bytes")
            if isinstance(sha, str) and sha.startswith("sha256:") and artifact_id(sha[7:]) == value:
                found[value] = (sha[7:], size, event_id)
        if len(found) == len(wanted):
            break
    return found
