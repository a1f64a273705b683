"""Push and pull through a shared sync folder (spec/sync.md).

Invariants:
- Push writes only under `DIR/dev_<own uuid>/`, only new segment numbers, each data file then
  its manifest, each under a temporary name, synced and renamed into place: a published
  segment (one with a manifest) is never rewritten. Before writing, the device's own published
  segments are checked (its key, or a key it replaced within what that key vouches for; its
  chain): a folder someone else wrote under our name is refused, not continued; and the file
  must still hold, byte for byte as push renders them, the events of its last published
  segment (`sync.own_diverged`: another copy of this device, or an older copy of the file). Push holds the file's write lock (one push at a time); an OSError
  writing is `sync.unwritable`, never a half-published segment.
- Push publishes this device's own events (device_id = this file's) after the last published
  source_seq, each line checked against its stored event_hash first; content is left out
  (privacy.clamp_line) unless the user opts in.
- Pull treats every other device folder as hostile: each new segment's manifest, signature,
  pinned key, place (number, no gap, continuing the previous head), data bytes and every line
  are checked before anything of that device is committed; a device's new segments are
  imported in one transaction with their manifests and leaves (all or nothing per device),
  streamed a chunk at a time (memory holds a chunk, never a segment); what was checked against
  the file's kept state is checked again under the write lock (another pull may have imported
  the device meanwhile); a problem is a coded SegmentProblem naming the device, and other
  devices go on. A device this file kept segments of whose whole folder is gone is
  `sync.dropped`, as when its segments alone are (our own folder is push's: pull never reads it).
- An event id already stored here as another device's own capture of the same provider event
  (derived ids: spec/sync.md "One event id on two devices") is a duplicate: skipped, first come
  stays, a note; its signed line kept for verify (integrity/sync_duplicates.py). Any other stored event
  with that id and other bytes is `sync.conflict`.
- The first key seen for a device is pinned (trust on first use) in the same transaction as
  its first import; a segment signed by another key is refused until `attempt keys trust`
  (whose key then vouches, through the chain, for earlier-key segments before its own). A file
  `attempt recover` made without reading all its pins pins nothing on first use
  (`sync.pin_unconfirmed`).
- A device folder is opened once, without following a symlink (plainfile.open_directory,
  relative to the sync folder's descriptor), and every file in it is listed, opened, written,
  renamed and removed relative to that descriptor: a folder swapped for a symlink after it was
  checked never makes push write, or pull read, anywhere but the folder that was opened.
"""

import contextlib
import os
import secrets
import stat

from .. import __version__
from ..errors import AttemptError
from ..ingest import privacy
from ..integrity import chain
from ..integrity import segments as segment
from ..integrity import sync_duplicates as duplicates
from ..integrity import sync_state as state
from ..integrity.segments import SegmentProblem
from ..model import clock, event, fastjson
from ..store import plainfile

_SELECT_OWN = (f"SELECT {', '.join(event.COLUMNS)}, seq, event_hash FROM events "
               "WHERE device_id = ? AND source_seq > ? ORDER BY source_seq")
_SRC = event.COLUMNS.index("source_seq")
SEGMENT_BYTES = 64 << 20  # a segment closes at this size (UTF-8 may count a line up to 4x its len)
TMP_PREFIX = ".attempt-sync-"
IMPORT_CHUNK = 1000  # events appended at a time (in the device's one transaction): memory stays bounded
IMPORT_BYTES = 8 << 20  # … or this many bytes of lines
MAX_IGNORED_NOTES = 20  # notes about entries that are no device folder (a folder may hold millions)


class SyncReport:
    def __init__(self, folder: str):
        self.folder = folder
        self.pushed_segments = 0
        self.pushed_events = 0
        self.devices: dict = {}
        self.problems: list[SegmentProblem] = []
        self.notes: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def imported(self) -> int:
        return sum(d["accepted"] for d in self.devices.values())

    def as_dict(self) -> dict:
        return {"ok": self.ok, "folder": self.folder, "pushed": {"segments": self.pushed_segments,
                                                                "events": self.pushed_events},
                "pulled": self.devices, "imported": self.imported,
                "problems": [{"code": p.code, "device": p.device, "segment": p.segment, "message": p.message}
                             for p in self.problems],
                "notes": self.notes}


class _Folder:
    """An open folder: `fd` (a directory descriptor every file operation is relative to) and
    `path` (for messages only). A context manager closing the descriptor."""

    def __init__(self, fd: int, path: str):
        self.fd, self.path = fd, path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _open_folder(folder: str) -> _Folder:
    """The sync folder the user named (a symlink to it is the user's own choice), opened."""
    try:
        return _Folder(plainfile.open_directory(folder, follow_links=True), folder)
    except FileNotFoundError:
        raise AttemptError("sync.no_folder", f"{folder} does not exist (create the shared folder first)") from None
    except plainfile.NotDirectory:
        raise AttemptError("sync.not_a_folder", f"{folder} is not a directory") from None
    except OSError as e:
        raise AttemptError("sync.unreadable", f"cannot read {folder}: {e.strerror}") from None


def _device_dir(top: _Folder, device: str, create: bool) -> _Folder | None:
    """The device folder `device` inside the open sync folder `top`, opened without following a
    symlink (None when it does not exist and not `create`). A symlink or a file under its name,
    now or swapped in between a check and the open, is `sync.not_a_directory`."""
    path = os.path.join(top.path, device)
    if create:
        try:
            os.mkdir(device, 0o755, dir_fd=top.fd)  # never follows a symlink in its name
        except FileExistsError:
            pass
        except OSError as e:
            raise AttemptError("sync.unwritable", f"cannot create {path}: {e.strerror}") from None
    try:
        return _Folder(plainfile.open_directory(device, dir_fd=top.fd), path)
    except FileNotFoundError:
        if create:
            raise AttemptError("sync.unwritable", f"cannot create {path}: it went away as it was made") from None
        return None
    except plainfile.NotDirectory:
        raise AttemptError("sync.not_a_directory", f"{path} is not a directory (a symlink or a file): "
                           "refused", exit_status=1) from None
    except OSError as e:
        raise AttemptError("sync.unreadable", f"cannot read {path}: {e.strerror}") from None


def check_folder(folder: str) -> None:
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        raise AttemptError("sync.no_folder", f"{folder} does not exist (create the shared folder first)") from None
    except OSError as e:
        raise AttemptError("sync.unreadable", f"cannot read {folder}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise AttemptError("sync.not_a_folder", f"{folder} is not a directory")


# --- push -----------------------------------------------------------------------------------

def _own_published(ddir: _Folder, device: str, key, conn=None) -> tuple[int, str, int, dict | None]:
    """(last segment number, its head, its last source_seq, its manifest or None) of this
    device's own segments in the folder, every one checked: signed by our key (or by a key it
    replaced, `attempt keys init --replace-lost`, for events the file held when it was replaced),
    numbered without gaps, chained."""
    try:
        nums, _ = segment.list_segments(ddir.fd)
    except OSError as e:  # never taken for "nothing published yet": that would write segment 1 again
        raise AttemptError("sync.unreadable", f"cannot read {ddir.path}: {e.strerror}") from None
    n, head, last, manifest = 0, chain.GENESIS, 0, None
    for i in nums:
        if i != n + 1:
            raise SegmentProblem("sync.gap", device, n + 1, "this device's own segment is missing from the folder; "
                                 "nothing was pushed (restore it, or sync to a new folder)")
        try:
            m = segment.check_manifest(segment.read_manifest_bytes(segment.manifest_name(i), ddir.fd), device, i)
        except OSError as e:
            raise SegmentProblem("sync.unreadable", device, i, f"its manifest cannot be read ({e.strerror})") from None
        _own_signer(m, device, key, conn)
        if m["chain"]["prev"] != head:
            raise SegmentProblem("sync.chain", device, i, "does not continue the segment before it; nothing was pushed")
        n, head, last, manifest = i, m["chain"]["head"], m["last_source_seq"], m
    return n, head, last, manifest


def _own_signer(m: dict, device: str, key, conn) -> None:
    """Our own segment `m` is signed by our key, or by a key ours replaced (keys.vouches) over
    events the file held when it was replaced: the local seq of its last event is at most the
    chain size the replacement note names (a lost key may have been stolen: what it signs
    beyond that is refused)."""
    signer = m["signature"]["key_id"]
    if signer == key.identity:
        return
    replaced = key.vouches(signer)
    if replaced is not None and conn is not None:
        row = conn.execute("SELECT max(seq) FROM events WHERE device_id = ? AND source_seq = ?",
                           (device, m["last_source_seq"])).fetchone()
        if row[0] is not None and key.vouches(signer, row[0]) is not None:
            return
        raise SegmentProblem("sync.key_mismatch", device, m["segment"], f"signed by {signer}, the key this device's "
                             f"key {key.identity} replaced, over events it does not vouch for (only the first "
                             f"{replaced.upto:,} rows of this file): someone who holds the lost key wrote under our "
                             "name; nothing was pushed")
    raise SegmentProblem("sync.key_mismatch", device, m["segment"], f"signed by {signer}, not by this device's key "
                         f"{key.identity}: someone else wrote under our name; nothing was pushed")


def _check_own_last(conn, ddir: _Folder, device: str, m: dict) -> None:
    """The file still holds, byte for byte as push renders them, the events of the device's last
    published segment `m` (one segment read, bounded by its signed size): else another copy of
    this device's history published under its name, or this file is an older copy of it, and
    pushing on would skip the file's own events or reuse published source_seqs
    (`sync.own_diverged`, nothing pushed). Published events the file lost to damage (declared
    by `attempt recover`'s note) are not a divergence."""
    import hashlib

    from ..exchange.bundle import stored_line
    from ..integrity import recovery
    rows = conn.execute(_SELECT_OWN.replace("source_seq > ?", "source_seq BETWEEN ? AND ?"),
                        (device, m["first_source_seq"], m["last_source_seq"]))
    mine = {}
    for r in rows:
        if r[_SRC] in mine:
            raise AttemptError("sync.own_order", f"two events of this device share source_seq {r[_SRC]}: "
                               "`attempt verify` says more; nothing more was pushed", exit_status=1)
        text = stored_line(r)
        mine[r[_SRC]] = hashlib.sha256((text if m["content"] else privacy.clamp_line(text)).encode("utf-8")).hexdigest()
    note = recovery.read(conn)
    lost = note is not None and bool(note.lost)
    where = f"segment {m['segment']} of {ddir.path}"

    def diverged(src, what):
        return AttemptError("sync.own_diverged", f"{where} publishes source_seq {src} of this device, but {what}: "
                            "another copy of this device's history (the same device id and key: a copied home "
                            "directory, database or key) published under its name, or this file was restored from "
                            "an older copy. Nothing was pushed: pushing on would leave this file's own events out "
                            "or publish two events under one source_seq. If this file is an older copy, put the "
                            "newest one back; if another machine uses this device's identity, give one of them "
                            "its own (move its database and key aside, then `attempt init`)", exit_status=1)
    for env, leaf, _ in segment.iter_lines(m["file"], m, device, ddir.fd):
        src = env["source_seq"]
        have = mine.pop(src, None)
        if have is None:
            if lost:
                continue
            raise diverged(src, "this file does not hold an event of this device with that number")
        if have != leaf:
            raise diverged(src, "this file's own event with that number is another event (other bytes)")
    if mine:
        raise diverged(min(mine), "the segment skips this file's own event with that number")


def _exists(ddir: _Folder, name: str) -> bool:
    try:
        os.stat(name, dir_fd=ddir.fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _write_atomic(ddir: _Folder, name: str, data: bytes, *, replace: bool) -> None:
    """`data` as `name` in `ddir`: written under a temporary name, synced, renamed into place
    (relative to the folder's descriptor). A name that exists is refused unless `replace`; an
    OSError (a full disk, a folder where the file goes, permissions) is `sync.unwritable`, the
    temporary file removed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = f"{TMP_PREFIX}{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=ddir.fd)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise AttemptError("sync.unwritable", f"cannot create a file in {ddir.path}: {e.strerror}") from None
    else:
        raise AttemptError("sync.unwritable", f"cannot create a file in {ddir.path}: every temporary name is taken")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o644)
        if not replace and _exists(ddir, name):
            raise AttemptError("sync.exists", f"{os.path.join(ddir.path, name)} exists: a published segment is "
                               "never rewritten", exit_status=1)
        os.replace(tmp, name, src_dir_fd=ddir.fd, dst_dir_fd=ddir.fd)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=ddir.fd)
        if isinstance(e, OSError):
            raise AttemptError("sync.unwritable", f"cannot write {name} in {ddir.path}: {e.strerror}; nothing of it "
                               "was published (the next push writes it again)") from None
        raise


def _clear_stale(ddir: _Folder) -> None:
    """Remove the temporary files a push that died (kill -9, power loss) left in our own folder:
    they are not segments, but a sync tool would carry them to every device."""
    with contextlib.suppress(OSError):
        for name in os.listdir(ddir.fd):
            if name.startswith(TMP_PREFIX) and name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=ddir.fd)  # never follows a symlink


def push(store, folder: str, key, *, include_content: bool = False, rep: SyncReport | None = None,
         segment_events: int = segment.MAX_SEGMENT_EVENTS, now_us: int | None = None) -> SyncReport:
    """Append this device's events not yet in the folder as new signed segments."""
    rep = rep or SyncReport(folder)
    check_folder(folder)
    device = "dev_" + store.device_id
    with _open_folder(folder) as top, _device_dir(top, device, create=True) as ddir:
        return _push(store, ddir, device, key, include_content, rep, segment_events, now_us)


def _push(store, ddir: _Folder, device: str, key, include_content: bool, rep: SyncReport, segment_events: int,
          now_us) -> SyncReport:
    from ..exchange.bundle import stored_line
    conn = store.conn
    # the write lock: one push of this file at a time (two would both write the next number, one
    # replacing the other's data file under its signed manifest); hooks meanwhile spool
    conn.execute("BEGIN IMMEDIATE")
    try:
        n, head, last, published = _own_published(ddir, device, key, conn)
        if published is not None:
            _check_own_last(conn, ddir, device, published)
        _clear_stale(ddir)
        rows = conn.execute(_SELECT_OWN, (device, last))
        batch, prev_src, nbytes = [], last, 0
        for r in rows:
            if r[_SRC] <= prev_src:
                raise AttemptError("sync.own_order", f"two events of this device share source_seq {r[_SRC]}: "
                                   "`attempt verify` says more; nothing more was pushed", exit_status=1)
            prev_src = r[_SRC]
            text = stored_line(r)
            if not include_content:
                text = privacy.clamp_line(text)
            batch.append((r[_SRC], text))
            nbytes += len(text) + 1
            if len(batch) >= segment_events or nbytes >= SEGMENT_BYTES:
                n, head = _write_segment(ddir, device, n + 1, head, batch, include_content, key, now_us)
                rep.pushed_segments += 1
                rep.pushed_events += len(batch)
                batch, nbytes = [], 0
        if batch:
            n, head = _write_segment(ddir, device, n + 1, head, batch, include_content, key, now_us)
            rep.pushed_segments += 1
            rep.pushed_events += len(batch)
    finally:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")  # push writes nothing in the file
    return rep


def _write_segment(ddir, device, n, prev, batch, include_content, key, now_us):
    import hashlib
    data = b"".join(t.encode("utf-8") + b"\n" for _, t in batch)
    head = prev
    for _, t in batch:
        head = chain.link(head, hashlib.sha256(t.encode("utf-8")).hexdigest(), hashlib.sha256)
    body = {"schema_version": segment.SCHEMA_VERSION, "device_id": device, "segment": n,
            "file": segment.data_name(n), "sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data),
            "events": len(batch), "first_source_seq": batch[0][0], "last_source_seq": batch[-1][0],
            "chain": {"prev": prev, "head": head}, "content": bool(include_content),
            "created_at": clock.iso(clock.now_us() if now_us is None else now_us),
            "producer": f"attemptdb {__version__}"}
    m = segment.sign(body, key)
    if _exists(ddir, segment.manifest_name(n)):  # its data file is published too
        raise AttemptError("sync.exists", f"{os.path.join(ddir.path, segment.manifest_name(n))} exists: a published "
                           "segment is never rewritten", exit_status=1)
    # a data file without its manifest is a push that died: replaced
    _write_atomic(ddir, segment.data_name(n), data, replace=True)
    _write_atomic(ddir, segment.manifest_name(n), (fastjson.dumps(m) + "\n").encode("utf-8"), replace=False)
    return n, head


# --- pull -----------------------------------------------------------------------------------

def _norm(m: dict) -> str:
    return fastjson.dumps(m, sort_keys=True)


class _StateMoved(Exception):
    """Another pull of this file imported the device between our checks and the write lock."""


def pull(store, folder: str, *, rep: SyncReport | None = None) -> SyncReport:
    """Verify and import every other device's new segments."""
    rep = rep or SyncReport(folder)
    check_folder(folder)
    with _open_folder(folder) as top:
        return _pull(store, top, rep)


def _pull(store, top: _Folder, rep: SyncReport) -> SyncReport:
    own = "dev_" + store.device_id
    try:
        names = sorted(os.listdir(top.fd))
    except OSError as e:
        raise AttemptError("sync.unreadable", f"cannot list {top.path}: {e.strerror}") from None
    ignored = 0
    for name in names:
        if name == own or name.startswith("."):
            continue
        if not segment.DEVICE_DIR.match(name):
            ignored += 1
            if ignored <= MAX_IGNORED_NOTES:
                rep.notes.append(f"ignored {name[:60]!r}: not a device folder (dev_<uuid>)")
            continue
        for _ in range(3):
            try:
                _pull_device(store, top, name, rep)
            except _StateMoved:
                continue  # checked again against what the other pull imported
            except SegmentProblem as p:
                rep.problems.append(p)
            break
        else:
            rep.notes.append(f"{name}: another pull of this file kept importing it; it is left to the next sync")
    if ignored > MAX_IGNORED_NOTES:
        rep.notes.append(f"ignored {ignored - MAX_IGNORED_NOTES:,} more entries that are not device folders")
    # a device this file imported segments of whose whole folder is gone: its history was cut
    # (sync.dropped), as when its segments alone are removed; our own folder is push's business
    listed = set(names)
    for name in _imported_devices(store.conn):
        if name == own or name in listed:
            continue
        try:
            _pull_device(store, top, name, rep)
        except SegmentProblem as p:
            rep.problems.append(p)
        except _StateMoved:  # pragma: no cover - nothing is imported from a folder that is not there
            pass
    return rep


def _imported_devices(conn) -> list[str]:
    """The devices this file keeps imported segments of (sorted; only device folder names)."""
    if not state.exists(conn):
        return []
    out = []
    for (dev,) in conn.execute("SELECT DISTINCT device_id FROM sync_segments ORDER BY device_id"):
        if isinstance(dev, str) and segment.DEVICE_DIR.match(dev):
            out.append(dev)
    return out


def _known(conn, device: str):
    """(pin or None, {segment: kept manifest}) of `device` as this file keeps them, checked: a kept
    state AttemptDB never writes (the sync tables edited by hand) is a SegmentProblem."""
    def edited(n, what):
        return SegmentProblem("sync.state_changed", device, n, f"{what}: the sync tables of this file were edited "
                              "outside AttemptDB; nothing of this device was imported (`attempt verify` says more)")
    try:
        pin = state.pins(conn).get(device)
        rows = state.stored_manifests(conn, device)
    except UnicodeDecodeError:
        raise edited(None, "what this file keeps of it is not UTF-8 text") from None
    if pin is not None and not (isinstance(pin["key_id"], str)
                                and (pin["public_key"] is None or isinstance(pin["public_key"], str))):
        raise edited(None, "its key pin is not valid")
    stored = {}
    for n, text in rows.items():
        if not isinstance(n, int) or n < 1 or not isinstance(text, str):
            raise edited(None, "a segment kept for it has no valid number or manifest")
        try:
            stored[n] = _norm(fastjson.loads(text))
        except (ValueError, RecursionError):
            raise edited(n, "the manifest kept for it is not JSON") from None
    return pin, stored


def _pull_device(store, top: _Folder, device: str, rep: SyncReport) -> None:
    try:
        ddir = _device_dir(top, device, create=False)
    except AttemptError as e:
        raise SegmentProblem(e.code, device, None, "its folder is not a directory (a symlink or a file): refused"
                             if e.code == "sync.not_a_directory" else "its folder cannot be opened") from None
    if ddir is None:  # not there (or gone since the listing): no segments (sync.dropped if some were imported)
        return _pull_segments(store, None, device, rep, gone=os.path.join(top.path, device))
    with ddir:
        return _pull_segments(store, ddir, device, rep)


def _pull_segments(store, ddir: _Folder | None, device: str, rep: SyncReport, gone: str = "") -> None:
    conn = store.conn
    try:
        nums, pending = segment.list_segments(ddir.fd) if ddir is not None else ([], [])
    except OSError as e:
        raise SegmentProblem("sync.unreadable", device, None, f"its folder cannot be listed ({e.strerror})") from None
    if pending and (not nums or min(pending) <= max(nums)):
        raise SegmentProblem("sync.gap", device, min(pending), "a data file without its manifest sits among "
                             "published segments: a manifest was removed")
    expected = list(range(1, len(nums) + 1))
    if nums != expected:
        missing = next(i for i, (a, b) in enumerate(zip(nums, expected), 1) if a != b)
        raise SegmentProblem("sync.gap", device, missing, "this segment is missing from the folder while later ones "
                             "are there: nothing of this device was imported")
    pin, stored = _known(conn, device)
    if pin is None and store.meta(state.PINS_UNCONFIRMED) is not None:
        raise SegmentProblem("sync.pin_unconfirmed", device, None, "no key is pinned for it in this file, and "
                             "`attempt recover` could not read all of the pins the damaged file had (a device you "
                             "revoked may be among them), so no device is pinned on first use here: nothing of it was "
                             f"imported. Check its key on that device (`attempt keys show`), then `attempt keys trust "
                             f"{device} id_…`")
    if pin is not None and pin["revoked"]:
        raise SegmentProblem("sync.key_revoked", device, None, f"its key {pin['key_id']} was revoked; nothing "
                             "imported (`attempt keys trust` pins a new one)")
    if stored and ddir is None:
        raise SegmentProblem("sync.dropped", device, min(stored), f"its folder {gone or device} is gone from the "
                             f"sync folder, but this file imported {len(stored):,} of its segments from it: the device's "
                             "history was cut (restore its folder; nothing of it was imported)")
    if stored and max(stored) > len(nums):
        raise SegmentProblem("sync.dropped", device, len(nums) + 1, "this segment was imported before and is no "
                             "longer in the folder: the device's history was cut or rolled back")
    key_id = pin["key_id"] if pin else None
    public = pin["public_key"] if pin else None
    head, last_src = chain.GENESIS, 0
    new = []
    # a key pinned with `keys trust` after a real key change vouches, through the chain its
    # segments continue, for the device's segments signed by its one earlier key that come
    # before its own first one (as verify's provenance check accepts them); others wait for it
    rotated = pin is not None and pin["how"] == "trusted"
    earlier, waiting, pinned_seen = None, [], False
    for n in nums:
        try:
            data = segment.read_manifest_bytes(segment.manifest_name(n), ddir.fd)
        except OSError as e:
            raise SegmentProblem("sync.unreadable", device, n, f"its manifest cannot be read ({e.strerror})") from None
        m = segment.check_manifest(data, device, n)
        sig = m["signature"]
        if n in stored:
            if _norm(m) != stored[n]:
                raise SegmentProblem("sync.segment_changed", device, n, "differs from the segment imported before "
                                     "under this number: a published segment was rewritten")
            if key_id is None:  # no pin (the table was emptied): the key of what was imported
                key_id, public = sig["key_id"], sig["public_key"]
        else:
            if key_id is None:
                key_id, public = sig["key_id"], sig["public_key"]
            if sig["key_id"] != key_id or (public is not None and sig["public_key"] != public):
                if not (rotated and sig["key_id"] != key_id and not pinned_seen
                        and earlier in (None, sig["key_id"])):
                    raise SegmentProblem("sync.key_mismatch", device, n, f"signed by {sig['key_id']}, but {key_id} "
                                         "is pinned for this device: refused (`attempt keys trust` if the device "
                                         "really has a new key)")
                waiting.append(n)
            else:
                waiting = []
            new.append(m)
        if sig["key_id"] == key_id:
            pinned_seen = True
        elif earlier is None:
            earlier = sig["key_id"]
        if m["chain"]["prev"] != head or m["first_source_seq"] <= last_src:
            raise SegmentProblem("sync.chain", device, n, "does not continue the segment before it (chain or "
                                 "source_seq): segments were dropped, reordered or replaced")
        head, last_src = m["chain"]["head"], m["last_source_seq"]
    if waiting:
        raise SegmentProblem("sync.key_mismatch", device, waiting[0], f"signed by its earlier key, not by {key_id} "
                             "(pinned with `attempt keys trust`), and no segment of that key follows it yet: refused "
                             "until one does (it vouches for the segments before it)")
    info = {"segments": 0, "events": 0, "accepted": 0, "duplicates": 0}
    if not new:
        rep.devices[device] = info
        return
    if store.capture_mode == "metadata_only" and any(m["content"] for m in new):
        raise SegmentProblem("sync.content_not_kept", device, next(m["segment"] for m in new if m["content"]),
                             "carries content, which this metadata_only file does not keep: nothing of this "
                             "device was imported (its owner can sync to a folder without --include-content)")
    now = clock.iso(clock.now_us())
    conn.execute("BEGIN IMMEDIATE")
    try:
        state.ensure(conn)
        # what was checked above still holds under the lock (another `attempt sync` may have
        # imported this device meanwhile: then everything is checked again)
        if _known(conn, device) != (pin, stored):
            raise _StateMoved()
        skipped: dict = {}
        for m in new:
            # streamed, appended a chunk at a time: a problem anywhere rolls all of it back
            leaves = bytearray()
            for items in _chunks(segment.iter_lines(m["file"], m, device, ddir.fd)):
                res = store.append_uncommitted([env for env, _ in items])
                for holder, k in _check_stored(conn, device, m["segment"], items, bool(stored)).items():
                    skipped[holder] = skipped.get(holder, 0) + k
                leaves += segment.leaves_blob(h for _, h in items)
                info["events"] += len(items)
                info["accepted"] += len(res.accepted)
                info["duplicates"] += len(res.duplicates)
            conn.execute("INSERT INTO sync_segments(device_id, segment, manifest, head, first_source_seq, "
                         "last_source_seq, events, leaves, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (device, m["segment"], fastjson.dumps(m), m["chain"]["head"], m["first_source_seq"],
                          m["last_source_seq"], m["events"], bytes(leaves), now))
            info["segments"] += 1
        if pin is None:
            state.pin(conn, device, key_id, public, "first_use")
        elif pin["public_key"] is None:
            state.pin(conn, device, key_id, public, pin["how"])
        conn.execute("COMMIT")
    except BaseException:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        raise
    rep.devices[device] = info
    if skipped:
        rep.notes.append(duplicates.holders_note(device, skipped))
    if pin is None:
        rep.notes.append(f"pinned {key_id} for {device} (first use)")


def _chunks(lines):
    """[(envelope, leaf)] lists of at most IMPORT_CHUNK events or about IMPORT_BYTES of lines."""
    items, size = [], 0
    for env, leaf, n in lines:
        items.append((env, leaf))
        size += n
        if len(items) >= IMPORT_CHUNK or size >= IMPORT_BYTES:
            yield items
            items, size = [], 0
    if items:
        yield items


def _check_stored(conn, device: str, n: int, items, imported_before: bool = True) -> dict:
    """Every event of the segment is stored with the bytes signed (a copy that arrived before,
    e.g. from a bundle, must be the same event), or its id is held here by another device's
    event about the same provider event (a tool call's id is derived from the call: two devices
    that captured it hold one id; the first come stays, the line is kept in sync_duplicates for
    verify). Returns {holder: count} of those skipped."""
    want = {"ev_" + env["event_id"]: (h, env) for env, h in items}
    ids = list(want)
    skipped: dict = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for eid, h, holder, *ident in conn.execute(
                f"SELECT event_id, event_hash, device_id, {duplicates.IDENTITY_COLUMNS} FROM events WHERE event_id "
                f"IN ({','.join('?' * len(chunk))})", chunk):
            leaf, env = want[eid]
            if h == leaf:
                continue
            if (holder != device and duplicates.same_identity(env, tuple(ident))
                    and duplicates.keep(conn, device, n, env, leaf, holder)):
                skipped[holder] = skipped.get(holder, 0) + 1
                continue
            raise SegmentProblem("sync.conflict", device, n, _conflict(device, holder, env["source_seq"],
                                                                       imported_before))
    return skipped


def _conflict(device: str, holder: str, src: int, imported_before: bool) -> str:
    """The sync.conflict message, with the ways on that the design leaves (spec/sync.md)."""
    if holder != device:
        return (f"its event source_seq={src} has the id of an event stored here as an event of {holder}, and is "
                "not a capture of its own of the same provider event (it is about another provider, session, kind "
                "or tool call, or carries that event's own capture clocks): one of the two devices published the "
                "other's event ids; nothing of this device was imported (`attempt keys revoke` the one that should "
                "not have)")
    fresh = ("" if imported_before else "have that device sync with --include-content to a new folder and pull from "
             "there (its segments then carry the bytes stored here, unless the bundle rewrote paths); ")
    return (f"its event source_seq={src} is already stored here with other bytes (an earlier import: a bundle "
            "exported with --include-content or --omit-paths keeps bytes its default segments leave out); nothing "
            "of this device was imported, and its later segments stop here too: the copy stored here stays (an "
            f"event never changes). To go on: {fresh}take its events through bundles it signs (`attempt bundle "
            "import`); or pull it into a fresh file (`attempt sync DIR --pull-only --db NEW.db`)")


def sync(store, folder: str, key, *, include_content: bool = False, push_only=False, pull_only=False) -> SyncReport:
    rep = SyncReport(folder)
    check_folder(folder)
    if not push_only:
        pull(store, folder, rep=rep)
    if not pull_only:
        push(store, folder, key, include_content=include_content, rep=rep)
    return rep
