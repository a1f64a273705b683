"""`attempt recover`: a sound file from a damaged one, and a report of what was lost
(spec/recover.md).

Invariants:
- The damaged file is never written: it (and its `-wal`) is copied into a private temporary
  directory first, reading around unreadable blocks, and only the copy is opened.
- Rows are read two ways: through SQLite's b-tree, range by range, narrowing a range that
  fails down to single rows (a damaged page costs only its own rows); then, for the rows still
  missing, by scanning every page of the copy for table cells shaped like an `events` row
  (SQLite's file format, overflow chains followed), which also finds rows whose interior page
  was lost. A row is kept only when it verifies as `verify` checks it (its canonical line
  hashes to its event_hash, its derived columns follow) and its chain hash is proven: by the
  link from the row before it, or by the stored link of the row after it.
- Nothing is re-chained: kept rows keep their seq, event hash and chain hash, so every signed
  checkpoint of the rows kept still holds. Lost rows leave gaps that a recovery note signed
  with the device key declares (attemptdb.integrity.recovery); the report says where the recovered chain
  stops matching the device's last signed checkpoint when it does.
- The new file has the same device id, capture mode, public key and key replacement notes; the
  outside checkpoint copy is never rewritten by recover; the projections are rebuilt from the
  kept events. The recovery note is signed only with the file's own key (keys.signing_key).
- Sync trust is never lost silently: the pins (revocations included) and kept manifests SQLite
  reads are carried over, each checked (spec/sync.md "Trust"); pins that cannot be read whole
  make the new file refuse first-use pinning (sync_state.PINS_UNCONFIRMED), with a coded
  warning in the report.
- The device's own source_seq clock in the new file is past every number a lost row may have
  had (recovery.clock_floor): no new event takes a signed or published source_seq.
- A damaged file header does not stop the page scan: the page size is probed (_Pages).
- The output must not exist; it is written beside its final name and renamed into place last.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import struct
import tempfile

import apsw

from ..errors import AttemptError
from ..model import clock, event
from . import chain, recover_sync, recovery, walframes

RANGE = 512  # rows read per b-tree query before a failing range is narrowed
COPY_CHUNK = 1 << 20
_ROW_COLS = ("seq",) + tuple(event.COLUMNS) + ("content_ref", "raw_ref", "event_hash", "chain_hash")
META_KEYS = ("device_id", "capture_mode", "public_key", "key_id", "created_at", "last_hlc", "key_replaced")


class Report:
    def __init__(self, source: str, out: str):
        self.source, self.out = source, out
        self.device_id = None
        self.kept = 0
        self.from_sqlite = 0
        self.from_pages = 0
        self.repaired_links = 0
        self.lost: list[dict] = []
        self.unreadable_bytes = 0
        self.signed = None
        self.checkpoints_kept = 0
        self.checkpoints_dropped: list[int] = []
        self.notes: list[str] = []
        self.verify_line = None
        self.verify_ok = None
        self.source_seq_floor = None  # the device's own source_seq clock in the new file
        self.note_signed = False
        self.sync = {"pins": 0, "revoked": 0, "segments": 0, "pins_unreadable": False}
        self.warnings: list[dict] = []  # coded findings the user must act on (the new file is still sound)

    def warn(self, code: str, message: str) -> None:
        self.warnings.append({"code": code, "message": message})
        self.notes.append(f"warning[{code}]: {message}")

    def lost_rows(self) -> int:
        return sum(r["to"] - r["from"] + 1 for r in self.lost)

    def as_dict(self) -> dict:
        return {"source": self.source, "out": self.out, "device_id": self.device_id,
                "kept": self.kept, "read_by_sqlite": self.from_sqlite, "read_from_pages": self.from_pages,
                "repaired_chain_columns": self.repaired_links, "lost_rows": self.lost_rows(), "lost": self.lost,
                "unreadable_bytes": self.unreadable_bytes, "signed_checkpoint": self.signed,
                "checkpoints_kept": self.checkpoints_kept, "checkpoints_dropped": self.checkpoints_dropped,
                "recovery_note_signed": self.note_signed, "verify": self.verify_line,
                "verify_ok": self.verify_ok, "own_source_seq_floor": self.source_seq_floor, "sync": self.sync, "warnings": self.warnings, "notes": self.notes}


class _Rows:
    """The rows read so far that verify on their own, by seq, in a scratch SQLite file beside
    the copy (a large file's rows do not fit in memory); only their seqs are kept here."""

    def __init__(self, path: str):
        self.conn = apsw.Connection(path)
        self.conn.execute("PRAGMA journal_mode=OFF").fetchall()
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute("CREATE TABLE r (seq INTEGER PRIMARY KEY, eh TEXT, ch TEXT, body BLOB)")
        self.conn.execute("BEGIN")  # never committed: a scratch file, read on this connection only
        self.seqs: set = set()
        self.bad: set = set()  # seqs of rows read that did not verify

    def offer(self, r) -> bool:
        """Keep `r` (a row in check_rows layout) if it verifies and its seq is not held yet."""
        seq = r[0]
        if seq in self.seqs:
            return False
        if not chain.row_verifies(r, self.conn):
            self.bad.add(seq)
            return False
        self.conn.execute("INSERT INTO r VALUES (?, ?, ?, ?)", (seq, r[-2], r[-1], marshal.dumps(tuple(r))))
        self.seqs.add(seq)
        self.bad.discard(seq)
        return True

    def heads(self):
        """(seq, event hash, chain hash) in seq order."""
        return self.conn.execute("SELECT seq, eh, ch FROM r ORDER BY seq")

    def head(self, seq: int):
        return self.conn.execute("SELECT eh, ch FROM r WHERE seq = ?", (seq,)).fetchone()

    def rows(self):
        for (body,) in self.conn.execute("SELECT body FROM r ORDER BY seq"):
            yield marshal.loads(body)

    def close(self):
        self.conn.close()


# --- copying the damaged file ----------------------------------------------------------------

def _copy(src: str, dst: str) -> int:
    """Copy what can be read of `src` to `dst`; unreadable blocks become zeros. Returns how
    many bytes could not be read."""
    lost = 0
    fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        size = os.fstat(fd).st_size
        with open(dst, "wb") as out:
            off = 0
            while off < size:
                n = min(COPY_CHUNK, size - off)
                try:
                    data = os.pread(fd, n, off)
                except OSError:
                    data = b""
                    for sub in range(off, off + n, 4096):  # narrow it down to 4 KiB blocks
                        k = min(4096, off + n - sub)
                        try:
                            part = os.pread(fd, k, sub)
                        except OSError:
                            part = b""
                            lost += k
                        data += part.ljust(k, b"\0")
                if not data:
                    break
                out.write(data)
                off += len(data)
    finally:
        os.close(fd)
    return lost


# --- reading rows through SQLite ----------------------------------------------------------------

_SELECT = f"SELECT {', '.join(_ROW_COLS)} FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq"


def _sqlite_rows(conn, top: int, sink: "_Rows") -> None:
    """Rows 1..top through the b-tree; a range that fails is halved down to single rows."""
    todo = [(lo, min(lo + RANGE - 1, top)) for lo in range(1, top + 1, RANGE)][::-1]
    while todo:
        lo, hi = todo.pop()
        try:
            rows = conn.execute(_SELECT, (lo, hi)).fetchall()
        except (apsw.Error, UnicodeDecodeError, MemoryError):
            if hi > lo:
                mid = (lo + hi) // 2
                todo += [(mid + 1, hi), (lo, mid)]
            continue
        for r in rows:
            sink.offer(r)


def _top(conn) -> int:
    try:
        return conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
    except (apsw.Error, UnicodeDecodeError):
        return 0


def _meta(conn) -> dict:
    out = {}
    for k in META_KEYS + (recovery.META_KEY, recovery.FLOOR_KEY):
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()
        except (apsw.Error, UnicodeDecodeError):
            continue
        if row is not None:
            out[k] = row[0]
    return out


def _checkpoint_rows(conn) -> list:
    try:
        return conn.execute("SELECT size, head_hash, created_at, key_id, note FROM checkpoints ORDER BY size").fetchall()
    except (apsw.Error, UnicodeDecodeError):
        return []


def _device_clock(conn) -> dict:
    try:
        return dict(conn.execute("SELECT device_id, last_source_seq FROM device_clock").fetchall())
    except (apsw.Error, UnicodeDecodeError):
        return {}


# --- reading rows from the pages ------------------------------------------------------------------

def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = 0
    for k in range(8):
        c = b[i + k]
        v = (v << 7) | (c & 0x7F)
        if c < 0x80:
            return v, i + k + 1
    return (v << 8) | b[i + 8], i + 9


def _record(payload: bytes) -> list:
    hlen, i = _varint(payload, 0)
    types = []
    while i < hlen:
        t, i = _varint(payload, i)
        types.append(t)
    pos = hlen
    out = []
    for t in types:
        if t == 0:
            out.append(None)
        elif 1 <= t <= 6:
            n = (1, 2, 3, 4, 6, 8)[t - 1]
            out.append(int.from_bytes(payload[pos:pos + n], "big", signed=True))
            pos += n
        elif t == 7:
            out.append(struct.unpack(">d", payload[pos:pos + 8])[0])
            pos += 8
        elif t in (8, 9):
            out.append(t - 8)
        elif t >= 12:
            n = (t - 12) // 2
            raw = payload[pos:pos + n]
            if len(raw) != n:
                raise ValueError("record runs past its payload")
            out.append(raw if t % 2 == 0 else raw.decode("utf-8"))
            pos += n
        else:
            raise ValueError("reserved serial type")
    if pos > len(payload):
        raise ValueError("record runs past its payload")
    return out


def _btree_page(page: bytes) -> bool:
    """Does `page` (not page 1) begin with a b-tree page header that fits its size?"""
    size = len(page)
    if size < 12 or page[0] not in (0x02, 0x05, 0x0A, 0x0D):
        return False
    hdr = 12 if page[0] in (0x02, 0x05) else 8
    ncells, start = struct.unpack(">HH", page[3:7])
    start = start or 65536
    if not 0 < ncells <= (size - hdr) // 4 or not hdr + 2 * ncells <= start <= size:
        return False
    ptrs = struct.unpack(f">{ncells}H", page[hdr:hdr + 2 * ncells])
    return all(start <= p < size for p in ptrs)


class _Pages:
    """The pages of a database file, read directly (SQLite's file format)."""

    def __init__(self, path: str):
        self.f = open(path, "rb")
        head = self.f.read(100).ljust(100, b"\0")
        ps = struct.unpack(">H", head[16:18])[0]
        self.size = 65536 if ps == 1 else ps
        if head.startswith(b"SQLite format 3\0") and 512 <= self.size and not self.size & (self.size - 1):
            self.usable = self.size - head[20]
        else:  # a damaged header: the page size AttemptDB wrote, told by the pages themselves
            self.size = self._probe()
            self.usable = self.size  # AttemptDB never reserves bytes at the end of a page
        self.count = os.fstat(self.f.fileno()).st_size // self.size

    def _probe(self) -> int:
        """Of the page sizes AttemptDB has used (store.database.PAGE_SIZE, older files 4096), the
        one at whose every multiple the most b-tree pages begin (a header whose flag, cell count,
        content start and cell pointers all fit a page of that size); ValueError when none."""
        size = os.fstat(self.f.fileno()).st_size
        best, score = None, 0
        for cand in (16384, 4096):
            found = 0
            for off in range(cand, size - cand + 1, cand):  # page 1 is the damaged one
                self.f.seek(off)
                if _btree_page(self.f.read(cand)):
                    found += 1
            if found > score:
                best, score = cand, found
        if best is None:
            raise ValueError("no SQLite header, and no b-tree pages of a size AttemptDB writes")
        return best

    def close(self):
        self.f.close()

    def page(self, n: int) -> bytes:
        self.f.seek((n - 1) * self.size)
        return self.f.read(self.size)

    def _payload(self, page: bytes, i: int, total: int, index: bool) -> bytes:
        u = self.usable
        x = u - 35 if not index else ((u - 12) * 64 // 255) - 23
        m = ((u - 12) * 32 // 255) - 23
        if total <= x:
            return page[i:i + total]
        k = m + ((total - m) % (u - 4))
        local = k if k <= x else m
        data = bytearray(page[i:i + local])
        nxt = struct.unpack(">I", page[i + local:i + local + 4])[0]
        seen = set()
        while len(data) < total:
            if not 1 <= nxt <= self.count or nxt in seen:
                raise ValueError("broken overflow chain")
            seen.add(nxt)
            ov = self.page(nxt)
            nxt = struct.unpack(">I", ov[:4])[0]
            data += ov[4:u][:total - len(data)]
        return bytes(data)

    def cells(self, n: int, skip=frozenset()):
        """(rowid or None, record values) of every readable cell of page n when it is a leaf
        of a table (rowid) or of an index (WITHOUT ROWID tables); rowids in `skip` are passed
        over without reading their payload."""
        page = self.page(n)
        base = 100 if n == 1 else 0
        if len(page) < base + 8:
            return
        flag = page[base]
        if flag not in (0x0D, 0x0A):
            return
        ncells = struct.unpack(">H", page[base + 3:base + 5])[0]
        for c in range(ncells):
            try:
                off = struct.unpack(">H", page[base + 8 + 2 * c:base + 10 + 2 * c])[0]
                if not base + 8 <= off < self.usable:
                    continue
                total, i = _varint(page, off)
                rowid = None
                if flag == 0x0D:
                    rowid, i = _varint(page, i)
                    if rowid in skip:
                        continue
                if total > 1 << 30:
                    continue
                yield rowid, _record(self._payload(page, i, total, flag == 0x0A))
            except (ValueError, IndexError, struct.error, UnicodeDecodeError, OverflowError):
                continue


def _scan_pages(path: str, columns: list, sink: "_Rows | None") -> tuple[int, dict, list]:
    """Every page of `path`: rows shaped like an `events` row whose seq `sink` does not hold yet
    are offered to it; (the largest such seq seen, meta key -> value, checkpoint rows)."""
    top, meta, cps = 0, {}, []
    try:
        pages = _Pages(path)
    except (OSError, ValueError):
        return top, meta, cps
    ncol = len(columns)
    idx = {c: i for i, c in enumerate(columns)}
    have = sink.seqs if sink is not None else frozenset()
    try:
        for n in range(1, pages.count + 1):
            for rowid, rec in pages.cells(n, have):
                if rowid is not None and sink is not None and len(rec) == ncol and rowid > 0:
                    eid = rec[idx["event_id"]]
                    if isinstance(eid, str) and eid.startswith("ev_"):
                        top = max(top, rowid)
                        sink.offer(tuple(rowid if c == "seq" else rec[idx[c]] for c in _ROW_COLS))
                elif rowid is not None and len(rec) == 5 and isinstance(rec[4], str) \
                        and rec[4].startswith("attemptdb.local/") and "\n\n" in rec[4]:
                    cps.append((rowid, rec[1], rec[2], rec[3], rec[4]))
                elif rowid is None and len(rec) == 2 and rec[0] in META_KEYS + (recovery.META_KEY,) \
                        and isinstance(rec[1], str):
                    meta.setdefault(rec[0], rec[1])
    finally:
        pages.close()
    return top, meta, cps


def _events_columns(conn) -> list:
    if conn is not None:
        try:
            cols = [r[1] for r in conn.execute("PRAGMA table_info(events)")]
            if set(_ROW_COLS) <= set(cols):
                return cols
        except (apsw.Error, UnicodeDecodeError):
            pass
    from ..store import schema
    mem = apsw.Connection(":memory:")
    try:
        schema.build(mem, schema.latest())
        return [r[1] for r in mem.execute("PRAGMA table_info(events)")]
    finally:
        mem.close()


# --- deciding what is kept ------------------------------------------------------------------------

def _links(prev_ch: str, eh, ch) -> bool:
    try:
        return chain.link(prev_ch, eh) == ch
    except (ValueError, TypeError):
        return False


def _assemble(sink: "_Rows", rep: Report) -> tuple[set, dict, list]:
    """(kept seqs, restored chain hashes by seq, [(seq, why lost)]): a row is kept when its
    chain hash is proven by the link from the row before it (or the row before it is lost)."""
    unlinked, fixed = [], {}
    prev_seq, prev_ch = 0, chain.GENESIS
    for item in _pairs(sink.heads()):
        (seq, eh, ch), nxt = item
        if prev_seq == seq - 1 and not _links(prev_ch, eh, ch):
            # its chain column was damaged? the link it would have must be the one the next
            # row was written after
            new = chain.link(prev_ch, eh)
            if nxt is not None and nxt[0] == seq + 1 and _links(new, nxt[1], nxt[2]):
                fixed[seq] = new
                ch = new
                rep.repaired_links += 1
            else:
                unlinked.append((seq, "its chain column is not the link from the row before"))
                continue
        prev_seq, prev_ch = seq, ch
    kept = sink.seqs - {s for s, _ in unlinked}
    return kept, fixed, unlinked


def _pairs(it):
    """(item, the item after it or None)."""
    prev = None
    for x in it:
        if prev is not None:
            yield prev, x
        prev = x
    if prev is not None:
        yield prev, None


def _ranges(seqs: list) -> list:
    """[(lo, hi)] of sorted seqs, consecutive ones merged."""
    out = []
    for s in seqs:
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return [tuple(x) for x in out]


# --- the whole operation ----------------------------------------------------------------------------

def recover(source: str, out: str, *, now_us: int | None = None) -> Report:
    src = os.path.abspath(source)
    dst = os.path.abspath(out)
    if not os.path.isfile(src):
        raise AttemptError("recover.missing", f"no database file at {src}")
    if os.path.lexists(dst):
        raise AttemptError("recover.exists", f"{dst} exists: recover writes a new file and never replaces one; "
                           "choose another --out")
    if dst in (src, src + "-wal", src + "-shm"):
        raise AttemptError("recover.same_file", "the recovered file must not be the damaged file")
    rep = Report(src, dst)
    out_dir = os.path.dirname(dst)
    try:
        os.makedirs(out_dir, mode=0o700, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".attempt-recover-", dir=out_dir)
    except OSError as e:
        raise AttemptError("recover.unwritable", f"cannot write in {out_dir}: {e.strerror}") from None
    try:
        return _recover(src, dst, work, rep, now_us)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _recover(src: str, dst: str, work: str, rep: Report, now_us) -> Report:
    copy = os.path.join(work, "damaged.db")
    try:
        rep.unreadable_bytes = _copy(src, copy)
        if os.path.exists(src + "-wal"):
            rep.unreadable_bytes += _copy(src + "-wal", copy + "-wal")
    except OSError as e:
        raise AttemptError("recover.unreadable", f"cannot read {src}: {e.strerror}") from None
    if rep.unreadable_bytes:
        rep.notes.append(f"{rep.unreadable_bytes} bytes of the damaged file could not be read (read as zeros)")
    if not os.path.getsize(copy) and os.path.exists(copy + "-wal"):  # SQLite would delete this -wal
        laid = walframes.lay_into(copy)
        if laid:
            rep.notes.append(f"the file was empty: only the {laid} pages its -wal holds were read (the rest of "
                             "the file, and the rows on it, are lost)")
    sink = _Rows(os.path.join(work, "rows.db"))
    try:
        return _recover_rows(copy, dst, work, rep, sink, now_us)
    finally:
        sink.close()


def _recover_rows(copy: str, dst: str, work: str, rep: Report, sink: _Rows, now_us) -> Report:
    meta: dict = {}
    cps: list = []
    clocks: dict = {}
    sync = None
    top = 0
    columns = None
    try:
        conn = apsw.Connection(copy)
        try:
            try:  # the WAL's committed pages into the copy, so the page scan sees them too
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except apsw.Error:
                if os.path.exists(copy + "-wal"):
                    rep.notes.append("the -wal could not be folded into the copy; rows only in it were read "
                                     "through SQLite")
            columns = _events_columns(conn)
            meta = _meta(conn)
            top = _top(conn)
            _sqlite_rows(conn, max(top, 1), sink)
            cps = _checkpoint_rows(conn)
            clocks = _device_clock(conn)
            sync = recover_sync.read_tables(conn)
        finally:
            conn.close()
    except apsw.Error:
        rep.notes.append("SQLite could not open the copy at all: every row was read from its pages")
    if sync is None:  # whether the file had pins cannot be told from SQLite: from its bytes
        sync = recover_sync.SyncRead()
        sync.unreadable = rep.unreadable_bytes > 0 or recover_sync.mentions(copy, b"sync_keys")
    columns = columns or _events_columns(None)
    rep.from_sqlite = len(sink.seqs)
    page_top, page_meta, page_cps = _scan_pages(copy, columns, sink)
    rep.from_pages = len(sink.seqs) - rep.from_sqlite
    for k, v in page_meta.items():
        meta.setdefault(k, v)
    if not cps and page_cps:
        cps = page_cps
    elif not cps and sink.seqs:  # the checkpoints table could not be read: its cells, whatever their rowid
        cps = _scan_pages(copy, columns, None)[2]
    device = meta.get("device_id")
    from ..model import ids
    if not ids.is_uuid(device):
        raise AttemptError("recover.no_identity", "the damaged file's device identity (meta device_id) cannot be "
                           "read, so its rows cannot be tied to its key and checkpoints; nothing was written",
                           exit_status=1)
    rep.device_id = "dev_" + device
    kept, fixed, unlinked = _assemble(sink, rep)

    def head(seq):  # (event hash, chain hash) of a kept row, its chain hash as restored
        if seq not in kept:
            return None
        eh, ch = sink.head(seq)
        return eh, fixed.get(seq, ch)

    signed = _signed(device, rep)
    # the chain ran at least this far: the file's own idea, the pages, and what was signed
    end = max([top, page_top, max(sink.seqs | sink.bad, default=0), signed[0] if signed else 0]
              + [c[0] for c in cps])
    reasons = {}
    for s in range(1, end + 1):
        if s not in kept:
            reasons[s] = ("its row does not verify (edited or damaged)" if s in sink.bad
                          else "its row could not be read")
    for s, why in unlinked:
        reasons[s] = why
    lost_seqs = sorted(reasons)
    for lo, hi in _ranges(lost_seqs):
        start = lo  # one entry per stretch with the same reason
        for s in range(lo, hi + 1):
            if s == hi or reasons[s + 1] != reasons[s]:
                rep.lost.append({"from": start, "to": s, "why": reasons[s]})
                start = s + 1
    lost = []
    for lo, hi in _ranges(lost_seqs):
        nxt = head(hi + 1)
        lost.append((lo, hi, None if nxt is None else (hi + 1, nxt[0], nxt[1])))
    rep.kept = len(kept)
    _describe_signed(rep, signed, head, lost)
    _build(dst, work, rep, device, meta, sink, kept, fixed, head, cps, clocks, lost, signed, sync, now_us)
    return rep


def _signed(device: str, rep: Report):
    """(size, head) of the device's last signed checkpoint (the copy beside the key) when its
    signature verifies with the device key; None when there is none (or no key)."""
    from . import checkpoint, keys
    try:
        note = checkpoint.read_outside(device)
        key = keys.load(device)
    except AttemptError as e:
        rep.notes.append(f"the device's signed checkpoint or key cannot be read ({e.code})")
        return None
    if note is None:
        return None
    try:
        cp = checkpoint.parse(note)
    except AttemptError:
        rep.notes.append("the checkpoint kept beside the key is not a valid signed note: ignored")
        return None
    if key is None or cp.origin != checkpoint.ORIGIN_PREFIX + device or not checkpoint.check_signature(cp, key):
        rep.notes.append("the checkpoint kept beside the key does not verify with this device's key: ignored")
        return None
    return cp.size, cp.head


def _describe_signed(rep: Report, signed, head_of, lost: list) -> None:
    """Does the recovered chain still match the device's last signed checkpoint, and if not,
    where does it stop matching?"""
    if signed is None:
        rep.signed = None
        return
    size, head = signed
    row = head_of(size)
    holds = row is not None and row[1] == head
    before = [(lo, hi) for lo, hi, _p in lost if lo <= size]
    first_lost = before[0][0] if before else None
    rep.signed = {"size": size, "matches": holds, "stops_matching_at": None if holds else (first_lost or size),
                  "rows_lost_before_it": sum(min(hi, size) - lo + 1 for lo, hi in before)}
    if holds and not before:
        rep.notes.append(f"the recovered chain matches the device's last signed checkpoint (size {size})")
    elif holds:
        rep.notes.append(f"the device's last signed checkpoint (size {size}) still holds: its head row is kept with "
                         f"the signed chain hash; the {rep.signed['rows_lost_before_it']} row(s) lost before it are "
                         "declared in the signed recovery note, which pins the row after each gap")
    else:
        stop = first_lost or size
        rep.notes.append(f"the recovered chain matches the device's last signed checkpoint (size {size}) up to "
                         f"seq={stop - 1} and stops matching at seq={stop}: the rows from there to its head were "
                         "lost or no longer verify")


def _own_clock(rep: Report, clock_was, own_rows, lost, published) -> int:
    """The device's own source_seq clock in the new file: past every source_seq its events may
    have had, so no new event takes the number of a lost one (a checkpoint signed it, a dataset
    export or a sync push published it): the damaged file's clock, its own rows kept, the
    manifests of its own segments the file kept, and each lost row counted as its own."""
    was = max([clock_was if isinstance(clock_was, int) else 0] + [s for _, s in own_rows])
    floor = max(was, recovery.clock_floor(own_rows, lost))
    for row in published:
        try:
            last = json.loads(row[2])["last_source_seq"]
        except (ValueError, TypeError, KeyError, IndexError):
            continue
        if isinstance(last, int):
            floor = max(floor, last)
    rep.source_seq_floor = floor
    if floor > was:
        rep.notes.append(f"this device's next event takes source_seq {floor + 1}: its events up to {floor} may be "
                         "among the rows lost (signed, exported or pushed), and no new event takes their numbers")
    return floor


def _build(dst, work, rep, device, meta, sink, kept, fixed, head_of, cps, clocks, lost, signed, sync, now_us) -> None:
    from ..projections import rebuild
    from ..store.database import Store
    from . import keys
    tmp = os.path.join(work, "recovered.db")
    st = Store.open(tmp, create=True, capture_mode=meta.get("capture_mode") or "metadata_only")
    c = st.conn
    try:
        c.execute("BEGIN IMMEDIATE")
        st.set_meta("device_id", device)
        st._device_id = None  # the identity just set, not the one the new file was made with
        for k in ("capture_mode", "public_key", "key_id", "created_at", keys.REPLACED_META):
            if meta.get(k):
                st.set_meta(k, meta[k])
        rebuild.pause(c)
        cols = ", ".join(_ROW_COLS)
        insert = f"INSERT INTO events ({cols}) VALUES ({', '.join('?' * len(_ROW_COLS))})"
        ticks = dict(clocks)
        i_dev, i_src, i_hlc = (_ROW_COLS.index(k) for k in ("device_id", "source_seq", "hlc"))
        hlc = int(meta.get("last_hlc") or 0)
        batch, own_rows, own = [], [], "dev_" + device
        for r in sink.rows():
            if r[0] not in kept:
                continue
            if r[0] in fixed:
                r = r[:-1] + (fixed[r[0]],)
            d = r[i_dev]
            if isinstance(d, str) and isinstance(r[i_src], int):
                ticks[d] = max(ticks.get(d) or 0, r[i_src])
                if d == own:
                    own_rows.append((r[0], r[i_src]))
            if isinstance(r[i_hlc], int):
                hlc = max(hlc, r[i_hlc])
            batch.append(r)
            if len(batch) >= 2000:
                c.executemany(insert, batch)
                batch = []
        if batch:
            c.executemany(insert, batch)
        st.set_meta("last_hlc", str(hlc))
        ticks[own] = _own_clock(rep, ticks.get(own), own_rows, lost, sync.segments.get(own, ()))
        c.executemany("INSERT INTO device_clock(device_id, last_source_seq) VALUES (?, ?) ON CONFLICT(device_id) "
                      "DO UPDATE SET last_source_seq = max(last_source_seq, excluded.last_source_seq)",
                      [(d, int(n)) for d, n in ticks.items() if isinstance(d, str) and isinstance(n, int)])
        for size, head, created, key_id, note in cps:
            row = head_of(size)
            if row is not None and row[1] == head:
                c.execute("INSERT OR IGNORE INTO checkpoints(size, head_hash, created_at, key_id, note) "
                          "VALUES (?, ?, ?, ?, ?)", (size, head, created, key_id, note))
                rep.checkpoints_kept += 1
            else:
                rep.checkpoints_dropped.append(size)
        stamp = clock.iso(clock.now_us() if now_us is None else now_us)
        recover_sync.carry(st, rep, sync, device, stamp)
        if lost:
            key = None
            try:
                key, _ = keys.signing_key(st)  # never a key that is not this file's (keys.mismatch)
            except AttemptError as e:
                rep.notes.append(f"the recovery note could not be signed: error[{e.code}]: {e.message}")
            s_size, s_head = signed if signed else (0, None)
            if key is not None:
                text = recovery.sign(key, device, s_size, s_head, lost, stamp)
                rep.note_signed = True
            else:
                text = recovery.body_text(device, s_size, s_head, lost, stamp) + "\n"
                rep.notes.append("no signing key for this device here: the recovery note is unsigned, so `attempt "
                                 "verify` reports the gaps it declares (restore the key, then recover again)")
            st.set_meta(recovery.META_KEY, text)
            floor = max(hi for _lo, hi, _p in lost)
            top_kept = max(kept) if kept else 0
            if floor > top_kept:
                st.set_meta(recovery.FLOOR_KEY, str(floor))
        c.execute("COMMIT")
    except BaseException:
        if not c.getautocommit():
            c.execute("ROLLBACK")
        st.close()
        raise
    rebuild.reproject(c, write=True)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    from .verify import verify
    vr = verify(st)
    rep.verify_ok, rep.verify_line = vr.ok, vr.line()
    st.close()
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(tmp + suffix)
        except FileNotFoundError:
            pass
    try:
        os.link(tmp, dst)  # never replaces a file that appeared meanwhile
    except FileExistsError:
        raise AttemptError("recover.exists", f"{dst} appeared while recovering; nothing was replaced") from None
    except OSError:
        if os.path.lexists(dst):
            raise AttemptError("recover.exists", f"{dst} appeared while recovering; nothing was replaced") from None
        os.rename(tmp, dst)
    os.chmod(dst, 0o600)
