"""`attempt export --dataset DIR`: the team dataset, hive-partitioned Parquet that DataFusion,
Spark, DuckDB and Trino read without an adapter (spec/sync.md "Dataset").

Layout:
    DIR/<table>/device=dev_<uuid>/date=YYYY-MM-DD/part-<generation:06d>.parquet
    DIR/_manifests/dev_<uuid>/<generation:06d>.json     (signed, one per export)

Invariants:
- Incremental: an export writes only new files (a new generation number) and never rewrites,
  renames or deletes an old one; a device writes only under its own `device=` partitions and
  its own manifest folder, so copying several devices' DIRs into one is the merge.
- `events`: each device writes its own events (device_id = its own), those after the last
  source_seq it exported, partitioned by the date of observed_at. Across devices the union
  is every event once.
- Every other public table is a projection whose rows can span devices: each export that
  saw the chain grow writes a full snapshot of it (one file per table under date = the export's
  date) with one more column, `_snapshot`: text that sorts by how much of the team's history
  the writer had seen (events covered, then its HLC), so `WHERE _snapshot = (SELECT
  max(_snapshot) FROM t)` — the latest, fullest picture — is the dedupe rule, in any engine.
- Each manifest lists its files (path, table, rows, SHA-256, size), the chain it was written
  from and the previous manifest's digest, and is signed with the device's key. Readers here
  accept only files some verified manifest lists, under that manifest's device. A public
  table no such file holds (`events` when no device exported events of its own yet) is
  queried as an empty table with the columns an export writes (empty_schema).
- Content columns are null unless the user opts in (export_arrow.CONTENT_COLUMNS).
- An export that fails (an OSError: a full disk, an I/O error, is `dataset.unwritable` naming
  DIR and the OS's reason) publishes nothing: the files of its generation it wrote and its
  temporary files are removed, so no file stays that no manifest lists and the next export
  writes that generation again (but when another export of the same generation ran at once,
  `dataset.exists`: the paths are its files too).
"""

import base64
import contextlib
import hashlib
import os
import re
import tempfile

from .. import __version__
from ..errors import AttemptError
from ..integrity import keys
from ..model import clock, fastjson
from ..render.termtable import plural
from ..store import plainfile
from . import arrow_export as export_arrow

SCHEMA_VERSION = "attemptdb.exchange.dataset.v1"
SIGNED_PREFIX = b"attemptdb.exchange.dataset.v1 manifest\n"
MANIFESTS = "_manifests"
SNAPSHOT_COLUMN = "_snapshot"
EVENTS = "events"
_DEVICE = re.compile(r"dev_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_GEN = re.compile(r"([0-9]{6,9})\.json\Z")
SNAPSHOT_KEY = re.compile(r"[0-9]{12}/[0-9]{20}/dev_[0-9a-f-]{36}/[0-9]{6,9}")  # export's f-string below
LOCK = ".lock"
_TABLE = re.compile(r"[a-z_]{1,64}\Z")
_DATE = re.compile(r"date=[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_PART = re.compile(r"part-([0-9]{6,9})\.parquet\Z")
_TMP = re.compile(r"\.attempt-dataset-[a-z0-9_]{8}\.tmp\Z")  # _write_parquet's mkstemp names
_PATH = re.compile(r"([a-z_]{1,64})/device=(dev_[0-9a-f-]{36})/date=([0-9]{4}-[0-9]{2}-[0-9]{2})/part-([0-9]{6,9})\.parquet\Z")
MAX_MANIFEST = 16 << 20


def signed_bytes(m: dict) -> bytes:
    return keys.manifest_bytes(SIGNED_PREFIX, m)


def _sign(body: dict, key) -> dict:
    return keys.sign_manifest(SIGNED_PREFIX, body, key)


def is_dataset(directory: str) -> bool:
    return os.path.isdir(os.path.join(directory, MANIFESTS))


# --- reading manifests (hostile input) ------------------------------------------------------

def check_manifest(data: bytes, device: str, gen: int) -> dict:
    """A manifest of `device`'s generation `gen`, signed by the key it encloses; AttemptError
    (dataset.*) naming the device otherwise."""
    where = f"{MANIFESTS}/{device}/{gen:06d}.json"
    try:
        m = fastjson.loads(data.decode("utf-8"))
        sig = m["signature"]
        public = base64.b64decode(sig["public_key"], validate=True)
        value = base64.b64decode(sig["value"], validate=True)
        ok_shape = (m["schema_version"] == SCHEMA_VERSION and isinstance(m["files"], list)
                    and all(isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("table"), str)
                            and isinstance(f.get("rows"), int) and isinstance(f.get("size_bytes"), int)
                            and isinstance(f.get("sha256"), str) for f in m["files"]))
    except (UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError, AttributeError):
        raise AttemptError("dataset.bad_manifest", f"{where} is not a dataset manifest", exit_status=1) from None
    if not ok_shape or m.get("device_id") != device or m.get("generation") != gen:
        raise AttemptError("dataset.bad_manifest", f"{where} is not a manifest of {device} generation {gen}",
                           exit_status=1)
    if len(public) != 32 or keys.fingerprint(public) != sig.get("key_id") \
            or not keys.DeviceKey(public).verify(value, signed_bytes(m)):
        raise AttemptError("dataset.signature", f"{where}: its signature does not verify (device {device})",
                           exit_status=1)
    snap = m.get("snapshot")
    if snap is not None and not (isinstance(snap, str) and SNAPSHOT_KEY.fullmatch(snap)
                                 and snap.endswith(f"/{device}/{gen:06d}")):
        raise AttemptError("dataset.bad_manifest", f"{where}: its snapshot key is not one an export writes",
                           exit_status=1)
    for f in m["files"]:
        found = _PATH.match(f["path"])
        if found is None or found.group(2) != device or found.group(1) != f["table"]:
            raise AttemptError("dataset.bad_manifest", f"{where} lists a file outside {device}'s partitions",
                               exit_status=1)
    _check_counts(m, where)
    return m


def _count(v) -> bool:
    return type(v) is int and 0 <= v < 10 ** 12


def _check_counts(m: dict, where: str) -> None:
    """A manifest consistent with itself (every signed one an export writes is): its counts are
    counts, the snapshot key repeats `covered_events` and `hlc`, the events it covers are no more
    than its chain's size (`covered_events` = count(*) and `chain.size` = max(seq) of one read:
    equal, or fewer where `attempt recover` left gaps in seq), its own event rows are no more
    than `events_through`, and it lists projection files exactly when it has a snapshot, one per
    table. The reader's dedupe trusts the snapshot key; a key no export of that file could write
    is refused here (dataset.bad_manifest), not compared."""
    chain, covered, hlc, through = m.get("chain"), m.get("covered_events"), m.get("hlc"), m.get("events_through")
    if not (isinstance(chain, dict) and _count(chain.get("size")) and isinstance(chain.get("head"), str)
            and _count(covered) and type(hlc) is int and 0 <= hlc < 10 ** 20 and _count(through)
            and all(_count(f["rows"]) and f["size_bytes"] >= 0 for f in m["files"])):
        raise AttemptError("dataset.bad_manifest", f"{where}: its chain, covered_events, hlc, events_through or "
                           "file rows are not counts an export writes", exit_status=1)
    if len({f["path"] for f in m["files"]}) != len(m["files"]):
        raise AttemptError("dataset.bad_manifest", f"{where} lists a file twice", exit_status=1)
    projections = [f["table"] for f in m["files"] if f["table"] != EVENTS]
    if len(set(projections)) != len(projections):
        raise AttemptError("dataset.bad_manifest", f"{where}: its snapshot lists a table twice", exit_status=1)
    snap = m.get("snapshot")
    if (snap is None) != (not projections):
        raise AttemptError("dataset.bad_manifest", f"{where}: its snapshot key and its files disagree (a snapshot "
                           "lists the projection tables' files, and only a snapshot does)", exit_status=1)
    if covered > chain["size"]:
        raise AttemptError("dataset.bad_manifest", f"{where}: its covered_events {covered} exceed its chain's size "
                           f"{chain['size']} (a snapshot cannot cover more events than its chain holds)",
                           exit_status=1)
    if snap is not None and (int(snap[:12]) != covered or int(snap[13:33]) != hlc):
        raise AttemptError("dataset.bad_manifest", f"{where}: its snapshot key does not repeat its covered_events "
                           "and hlc", exit_status=1)
    own = sum(f["rows"] for f in m["files"] if f["table"] == EVENTS)
    if own > through or own > covered:
        raise AttemptError("dataset.bad_manifest", f"{where}: it lists {own} events of its own, more than its "
                           f"events_through {through} or its covered_events {covered}", exit_status=1)


def manifests(directory: str, device: str) -> list[dict]:
    """Every manifest of `device`, checked, in generation order (no gaps, one key, chained)."""
    d = os.path.join(directory, MANIFESTS, device)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise AttemptError("dataset.unreadable", f"cannot list {d}: {e.strerror}") from None
    gens = sorted(int(m.group(1)) for m in map(_GEN.match, names) if m)
    out, prev, key_id, own = [], None, None, 0
    for i, g in enumerate(gens, 1):
        if g != i:
            raise AttemptError("dataset.gap", f"{MANIFESTS}/{device}: generation {i} is missing", exit_status=1)
        path = os.path.join(d, f"{g:06d}.json")
        try:
            with os.fdopen(plainfile.open_regular(path), "rb") as f:
                data = f.read(MAX_MANIFEST + 1)
        except OSError as e:
            raise AttemptError("dataset.unreadable", f"cannot read {path}: {e.strerror}") from None
        m = check_manifest(data, device, g)
        if key_id is not None and m["signature"]["key_id"] != key_id:
            raise AttemptError("dataset.key_mismatch", f"{MANIFESTS}/{device}: generation {g} is signed by another "
                               "key than the generations before it", exit_status=1)
        if m.get("previous") != prev:
            raise AttemptError("dataset.chain", f"{MANIFESTS}/{device}: generation {g} does not continue the one "
                               "before it", exit_status=1)
        # own events: source_seq is per device, strictly increasing, so the rows of every generation
        # so far are at most its events_through, which never goes back
        own += sum(f["rows"] for f in m["files"] if f["table"] == EVENTS)
        if (out and m["events_through"] < out[-1]["events_through"]) or own > m["events_through"]:
            raise AttemptError("dataset.chain", f"{MANIFESTS}/{device}: generation {g} lists more events of its own "
                               "than its events_through, or goes back from the one before it", exit_status=1)
        key_id, prev = m["signature"]["key_id"], hashlib.sha256(data).hexdigest()
        out.append(m)
    return out


def devices(directory: str) -> list[str]:
    d = os.path.join(directory, MANIFESTS)
    try:
        return sorted(n for n in os.listdir(d) if _DEVICE.match(n))
    except OSError:
        return []


# --- export ---------------------------------------------------------------------------------

def _folder(directory: str, rel: str) -> str:
    """`directory`/`rel` (a folder path with `/`), made as needed. A link or a file on the way is
    refused: an export never writes through a link planted in the dataset."""
    path = directory
    for part in rel.split("/"):
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            if os.path.islink(path) or not os.path.isdir(path):
                raise AttemptError("dataset.unwritable", f"cannot write in {directory}: {path} is a link or "
                                   "not a folder") from None
        except OSError as e:
            raise AttemptError("dataset.unwritable", f"cannot write in {directory}: {e.strerror}") from None
    return path


def _write_parquet(directory: str, rel: str, schema, batches) -> int:
    import pyarrow.parquet as pq
    _folder(directory, rel.rsplit("/", 1)[0])
    path = os.path.join(directory, rel)
    if os.path.lexists(path):
        raise AttemptError("dataset.exists", f"{path} exists: a dataset file is never rewritten", exit_status=1)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".attempt-dataset-", suffix=".tmp")
    os.close(fd)
    n = 0
    try:
        w = pq.ParquetWriter(tmp, schema, compression="zstd")
        try:
            for b in batches:
                w.write_batch(b)
                n += b.num_rows
        finally:
            w.close()
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return n


def _event_batches(conn, table: dict, device: str, after: int, include_content: bool, rows: int = 20_000):
    """{date: [record batches]} of this device's own events after source_seq `after`."""
    import pyarrow as pa
    hidden = () if include_content else export_arrow.CONTENT_COLUMNS.get("events", ())
    cols = table["columns"]
    names = [n for n, _ in cols]
    select = ", ".join("NULL" if n in hidden else '"' + n.replace('"', '""') + '"' for n in names)
    cur = conn.execute(f'SELECT substr(observed_at, 1, 10), {select} FROM events WHERE device_id = ? '
                       'AND source_seq > ? ORDER BY source_seq', (device, after))
    by_date: dict = {}
    last = after
    src = names.index("source_seq")

    def flush(date, chunk):
        values = list(zip(*chunk))
        arrays = [export_arrow.column_of(list(values[i]), t, "events", n) for i, (n, t) in enumerate(cols)]
        by_date.setdefault(date, []).append(pa.RecordBatch.from_arrays(arrays, names=names))

    pending: dict = {}
    for r in cur:
        pending.setdefault(r[0], []).append(r[1:])
        last = max(last, r[1 + src])
        if len(pending[r[0]]) >= rows:
            flush(r[0], pending.pop(r[0]))
    for date, chunk in pending.items():
        flush(date, chunk)
    return by_date, last


def export(store, directory: str, key, *, include_content: bool = False, now_us: int | None = None) -> dict:
    """Add this device's new files and a signed manifest to the dataset at `directory`.
    Returns the manifest (its `files` empty when nothing changed: then nothing is written)."""
    export_arrow.require_pyarrow()
    device = "dev_" + store.device_id
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise AttemptError("dataset.unwritable", f"cannot write in {directory}: {e.strerror}") from None
    own = _folder(directory, f"{MANIFESTS}/{device}")
    with _DeviceLock(own, directory):
        before = manifests(directory, device)
        if before and before[-1]["signature"]["key_id"] != key.identity:
            raise AttemptError("dataset.key_mismatch", f"{directory}: the manifests under {device} are signed by "
                               "another key than this device's: nothing was written", exit_status=1)
        _clear_unpublished(directory, device, len(before))
        return _export_locked(store, directory, key, before, include_content, now_us)


class _DeviceLock:
    """One export of a device into a dataset at a time (an flock on `.lock` in the device's
    manifest folder, held for the export): what its partitions hold past its last manifest is
    then a dead export's, never a live one's. `dataset.busy` while another holds it."""

    def __init__(self, folder: str, directory: str):
        self.path, self.directory, self.fd = os.path.join(folder, LOCK), directory, None

    def __enter__(self):
        import fcntl
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise AttemptError("dataset.busy", f"{self.directory}: another export of this device into it is running; "
                               "nothing was written (run it again when that one is done)", exit_status=1) from None
        except OSError as e:
            if self.fd is not None:
                os.close(self.fd)
            raise AttemptError("dataset.unwritable", f"cannot write in {self.directory}: {e.strerror}") from None
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # the lock goes with it


def _clear_unpublished(directory: str, device: str, published: int) -> None:
    """Remove what an export of `device` killed before its manifest left in its own partitions:
    part files of a generation past `published` (no manifest lists them: readers refuse the
    dataset while they are there) and its temporary files. Only regular files of those exact
    names, under `<table>/device=<device>/date=…/`; never a link, never followed."""
    try:
        tables = [t for t in os.listdir(directory) if _TABLE.match(t)]
    except OSError:
        return
    for t in tables:
        part = os.path.join(directory, t, f"device={device}")
        if os.path.islink(part) or not os.path.isdir(part):
            continue
        for date in os.listdir(part):
            folder = os.path.join(part, date)
            if not _DATE.match(date) or os.path.islink(folder) or not os.path.isdir(folder):
                continue
            for name in os.listdir(folder):
                found = _PART.match(name)
                if (found and int(found.group(1)) > published) or _TMP.match(name):
                    path = os.path.join(folder, name)
                    with contextlib.suppress(OSError):
                        if os.path.isfile(path) and not os.path.islink(path):
                            os.unlink(path)


def _export_locked(store, directory: str, key, before: list, include_content: bool, now_us):
    device = "dev_" + store.device_id
    files = []
    try:
        m = _publish(store, directory, key, before, files, include_content, now_us)
    except BaseException as e:  # nothing half-published: no file stays that no manifest lists
        raced = isinstance(e, AttemptError) and e.code == "dataset.exists"  # the paths are the other export's too
        for f in [] if raced else files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, f["path"]))
        if isinstance(e, OSError):
            raise AttemptError("dataset.unwritable", f"cannot write in {directory}: {export_arrow.os_reason(e)}; "
                               "nothing was published (no new manifest; the files this export wrote are "
                               "removed)") from None
        raise
    return m if m is not None else {"device_id": device, "generation": len(before), "files": [], "unchanged": True}


def _publish(store, directory: str, key, before: list, files: list, include_content: bool, now_us):
    """Write the next generation's files (each appended to `files` once in place), then its
    signed manifest; the manifest, or None when nothing changed."""
    import pyarrow as pa
    device = "dev_" + store.device_id
    last = before[-1] if before else None
    gen = len(before) + 1
    after = last["events_through"] if last else 0
    now = clock.now_us() if now_us is None else now_us
    today = clock.iso(now)[:10]
    conn = store.conn
    conn.execute("BEGIN")  # one snapshot for every table
    try:
        size, head = store.head()
        covered, hlc = conn.execute("SELECT count(*), coalesce(max(hlc), 0) FROM events").fetchone()
        tables = export_arrow.public_tables(conn)
        by_name = {t["name"]: t for t in tables}
        by_date, through = _event_batches(conn, by_name[EVENTS], device, after, include_content)
        for date in sorted(by_date):
            rel = f"{EVENTS}/device={device}/date={date}/part-{gen:06d}.parquet"
            n = _write_parquet(directory, rel, export_arrow.schema(by_name[EVENTS]), by_date[date])
            files.append({"table": EVENTS, "path": rel, "rows": n})
        snapshot = None
        if last is None or last["chain"]["head"] != head:
            snapshot = f"{covered:012d}/{hlc:020d}/{device}/{gen:06d}"
            for t in tables:
                if t["name"] == EVENTS:
                    continue
                schema = export_arrow.schema(t).append(pa.field(SNAPSHOT_COLUMN, pa.string()))

                def tagged(t=t, schema=schema):
                    for b in export_arrow.batches(conn, t, include_content=include_content):
                        yield pa.RecordBatch.from_arrays(b.columns + [pa.array([snapshot] * b.num_rows, pa.string())],
                                                         schema=schema)
                rel = f"{t['name']}/device={device}/date={today}/part-{gen:06d}.parquet"
                n = _write_parquet(directory, rel, schema, tagged())
                files.append({"table": t["name"], "path": rel, "rows": n})
    finally:
        conn.execute("COMMIT")
    if not files:
        return None
    for f in files:
        p = os.path.join(directory, f["path"])
        f["sha256"], f["size_bytes"] = export_arrow.file_sha256(p), os.path.getsize(p)
    prev = None
    if last is not None:
        with open(os.path.join(directory, MANIFESTS, device, f"{gen - 1:06d}.json"), "rb") as fh:
            prev = hashlib.sha256(fh.read()).hexdigest()
    body = {"schema_version": SCHEMA_VERSION, "device_id": device, "generation": gen,
            "created_at": clock.iso(now), "producer": f"attemptdb {__version__}", "content": bool(include_content),
            "chain": {"size": size, "head": head}, "covered_events": covered, "hlc": hlc,
            "events_through": through, "snapshot": snapshot, "previous": prev, "files": files}
    m = _sign(body, key)
    path = os.path.join(directory, MANIFESTS, device, f"{gen:06d}.json")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".attempt-dataset-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write((fastjson.dumps(m) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        if os.path.lexists(path):
            raise AttemptError("dataset.exists", f"{path} exists: another export ran at once; nothing more written",
                               exit_status=1)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return m


# --- reading: what a query sees -------------------------------------------------------------

def _parquet_frame(path: str, size: int) -> bool:
    """Whether the file at `path` (`size` bytes) is framed as Parquet: `PAR1`, then the footer
    whose length the last 8 bytes give, inside the file, then `PAR1`. DataFusion panics (a
    traceback, not an error) on a footer length that points outside the file."""
    if size < 12:
        return False
    try:
        with os.fdopen(plainfile.open_regular(path), "rb") as f:
            head = f.read(4)
            f.seek(size - 8)
            tail = f.read(8)
    except OSError:
        return False
    return (head == b"PAR1" and len(tail) == 8 and tail[4:] == b"PAR1"
            and int.from_bytes(tail[:4], "little") <= size - 12)


class View:
    """The dataset as one set of tables: every device's event files, and for every other table
    the files of the latest snapshot (the largest `_snapshot` key)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.listed: dict = {}  # relative path → (table, size)
        self.snapshot = None
        self.snapshot_files: dict = {}
        self.devices = devices(directory)
        for dev in self.devices:
            for m in manifests(directory, dev):
                for f in m["files"]:
                    self.listed[f["path"]] = (f["table"], f["size_bytes"])
                if m.get("snapshot") and (self.snapshot is None or m["snapshot"] > self.snapshot):
                    self.snapshot = m["snapshot"]
                    self.snapshot_files = {f["table"]: f["path"] for f in m["files"] if f["table"] != EVENTS}
        self._check_files()

    def _check_files(self):
        """Every file under events/ and under every other table's folder is listed by a manifest
        (an unlisted file is refused, not read: DuckDB and Spark, reading a table's folder with
        the README's `max(_snapshot)` rule, would read it); the files read here (events, the
        snapshot's) are there with their size."""
        for name in sorted(set(self.tables()) | {t for t, _ in self.listed.values()}):
            root = os.path.join(self.directory, name)
            if os.path.lexists(root):
                self._check_listed(root)
        self._check_read()

    def _check_listed(self, root: str):
        if os.path.islink(root):
            rel = os.path.relpath(root, self.directory).replace(os.sep, "/")
            raise AttemptError("dataset.unlisted", f"{rel} is a link to a folder in the dataset: refused",
                               exit_status=1)
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames:  # os.walk does not enter a linked folder; DataFusion would read it
                if os.path.islink(os.path.join(dirpath, name)):
                    rel = os.path.relpath(os.path.join(dirpath, name), self.directory).replace(os.sep, "/")
                    raise AttemptError("dataset.unlisted", f"{rel} is a link to a folder in the dataset: refused",
                                       exit_status=1)
            for name in filenames:  # hidden and `_` names too: DataFusion reads every file below
                rel = os.path.relpath(os.path.join(dirpath, name), self.directory).replace(os.sep, "/")
                if rel not in self.listed:
                    raise AttemptError("dataset.unlisted", f"{rel} is in the dataset but in no signed manifest: "
                                       "refused", exit_status=1)

    def _check_read(self):
        for rel, (table, size) in self.listed.items():
            if table == EVENTS or self.snapshot_files.get(table) == rel:
                p = os.path.join(self.directory, rel)
                try:
                    st = os.lstat(p)
                except OSError:
                    raise AttemptError("dataset.missing", f"{rel} is listed by a manifest but missing", exit_status=1) from None
                if st.st_size != size or not os.path.isfile(p) or os.path.islink(p):
                    raise AttemptError("dataset.file_changed", f"{rel} is not the file its manifest signed", exit_status=1)
                if not _parquet_frame(p, size):
                    raise AttemptError("dataset.file_changed", f"{rel} is not the file its manifest signed (not a "
                                       "Parquet file: its header or footer is damaged)", exit_status=1)

    def register(self, ctx, names) -> list[str]:
        """Register the tables among `names` on a DataFusion SessionContext. A public table no
        file of the dataset holds (`events` of a dataset whose devices exported none of their
        own yet, every table before a first snapshot) is there with its columns and no rows."""
        import pyarrow as pa
        empty = []
        for name in names:
            if name == EVENTS and any(t == EVENTS for t, _ in self.listed.values()):
                ctx.register_parquet(EVENTS, os.path.join(self.directory, EVENTS),
                                     table_partition_cols=[("device", pa.string()), ("date", pa.string())])
            elif name in self.snapshot_files:
                ctx.register_parquet(name, os.path.join(self.directory, self.snapshot_files[name]))
            else:
                schema = empty_schema(name)
                if schema is not None:
                    ctx.from_arrow(schema.empty_table(), name)
                    empty.append(name)
        notes = [f"team dataset in {self.directory}: {plural(len(self.devices), 'device')}, latest snapshot "
                 f"{self.snapshot or 'none'}"]
        if empty:
            notes.append(f"no file of the dataset holds {', '.join(empty)} yet: queried as "
                         f"{'an empty table' if len(empty) == 1 else 'empty tables'}")
        return notes

    def tables(self) -> list[str]:
        """Every public table: those of the files, and those the catalog documents."""
        from ..projections import catalog
        documented = {t["name"] for t in catalog.load_docs()["tables"] if not t.get("planned")}
        return sorted({EVENTS} | set(self.snapshot_files) | documented)


_SHIPPED: dict = {}


def empty_schema(name: str):
    """The Arrow schema an export of this version writes for the public table `name` (events
    with its `device` and `date` partition columns, every other table with `_snapshot`), from
    the schema this version ships; None for a name that is no public table."""
    import pyarrow as pa
    if not _SHIPPED:
        from ..projections import catalog
        conn = catalog.shipped_schema_connection()
        try:
            _SHIPPED.update({t["name"]: t for t in export_arrow.public_tables(conn)})
        finally:
            conn.close()
    table = _SHIPPED.get(name)
    if table is None:
        return None
    schema = export_arrow.schema(table)
    extra = [("device", pa.string()), ("date", pa.string())] if name == EVENTS else [(SNAPSHOT_COLUMN, pa.string())]
    for col, kind in extra:
        schema = schema.append(pa.field(col, kind))
    return schema
