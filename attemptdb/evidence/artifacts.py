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
from ..store.artifact_rows import (  # noqa: F401
    CHUNK,
    HEX,
    ID_HEX,
    artifact_id,
    intact,
    is_artifact_id,
    outputs_named,
    read_chunks,
    row,
    stored_findings,
)

MAX_LINE = 1 << 20       # a line longer than this is redacted in pieces of about this size
LOOK_AHEAD = 64 << 10    # what a piece's scan sees past its end (a secret is far shorter)
MAX_KEPT = 512 << 20     # compressed bytes one artifact may take in the file (SQLite blobs stop at 1 GB)
TAIL = 8 << 10           # the end of an output, scanned for a test summary
TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"


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
            if kept and (not row[1] or not intact(conn, rowid, digest, size)):
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
    if not (MIN_SHORT_HEX <= len(hexpart) < ID_HEX and HEX.issuperset(hexpart)):
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
    for event_id, session_id, attrs_json in conn.execute(
            "SELECT event_id, session_id, attrs_json FROM events WHERE instr(attrs_json, ?) > 0 ORDER BY seq",
            ('"' + aid + '"',)):
        for named, stream, sha, size in outputs_named(attrs_json):
            if named == aid:
                return {"artifact_id": aid, "sha256": sha, "size_bytes": size if sha and type(size) is int else None,
                        "media_type": None, "purpose": "command." + stream, "stored": False,
                        "named_by": event_id, "session_id": session_id}
    return None


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
