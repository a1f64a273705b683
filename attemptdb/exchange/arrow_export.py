"""`attempt export --format arrow|parquet DIR`: the public tables as Arrow IPC or Parquet
files, for DataFusion and friends (spec/export.md).

Invariants:
- The tables and their columns are the catalog's (attemptdb.projections.catalog), in its order; Arrow
  types follow the documented logical types (ARROW_TYPES); every table is read in one
  snapshot of the database, whose chain head the manifest records.
- Content columns (CONTENT_COLUMNS: prompt, message and command text, raw payloads, free text
  a human wrote) are null unless the user opts in; the manifest says which.
- Files are written under a temporary name in DIR and renamed into place, the manifest last,
  so a reader that finds manifest.json finds every file it lists, complete. A DIR holding
  anything else is refused unless --force (then only the files of the export are replaced).
- An OSError while writing (a full disk, an I/O error) is `export.unwritable` naming DIR and the
  OS's reason: the files this export placed are removed and no manifest is written, so no
  half-written file is ever taken as an export (os_reason: the reason without pyarrow's wording).
- pyarrow is imported only here and in attemptdb.query.datafusion_engine (the `arrow` extra).
"""

import contextlib
import hashlib
import os
import re

from .. import __version__
from ..errors import AttemptError
from ..model import clock, payload
from ..projections import catalog
from . import stale_temp

FORMATS = {"parquet": ".parquet", "arrow": ".arrow"}
MANIFEST = "manifest.json"
_TMP = re.compile(r"\.attempt-export-([0-9]{1,10})-[a-z_]{1,64}\.(?:parquet|arrow|json)")  # a file being written
BATCH_ROWS = 10_000  # rows read per batch: Python holds each row and its column copy at once (≈ 10 KB a row)
CONTENT_COLUMNS = {
    "events": ("content_json", "raw_json", "unknown_json"),
    "turns": ("objective",),
    "attempts": ("objective", "note"),
    "work_units": ("objective",),
    "corrections": ("note",),
    "retractions": ("note",),
    "notes": ("note",),
    "approvals": ("subject", "note"),
}
"""Per table, the columns that carry content: those the catalog calls Content, and the events'
unknown top-level fields (a writer's extensions carry anything, as in the ingestion contract).
A test keeps this in step with spec/catalog-columns.json."""


ARROW_EXTRA = ("pyarrow", "datafusion")
INSTALL_ARROW = ("add the arrow extra: from a checkout pip install '.[arrow]'; "
                 f"under pipx: pipx inject attemptdb {' '.join(ARROW_EXTRA)}")
"""How to get pyarrow and datafusion (no `attemptdb` is published on PyPI to name an extra of)."""


def require_pyarrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise AttemptError("export.needs_arrow", f"this needs pyarrow; {INSTALL_ARROW}") from None


def arrow_type(logical: str):
    import pyarrow as pa
    return {
        "text": pa.string(), "list": pa.string(), "timestamp": pa.timestamp("us", tz="UTC"),
        "int32": pa.int64(), "int64": pa.int64(), "uint16": pa.int64(), "uint64": pa.int64(),
        "bool": pa.bool_(), "float32": pa.float64(),
    }.get(logical)


def column_of(values, logical: str, table: str, name: str):
    import pyarrow as pa
    import pyarrow.compute as pc
    want = arrow_type(logical)
    try:
        if want is None:  # undocumented (a column someone added): its values as text, one type for every batch
            return pa.array([None if v is None else (v.hex() if isinstance(v, bytes) else str(v)) for v in values],
                            pa.string())
        if pa.types.is_timestamp(want):
            return pc.cast(pa.array(values, pa.string()), want)
        if pa.types.is_boolean(want):
            return pc.cast(pa.array(values, pa.int64()), want)
        return pa.array(values, want)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        raise AttemptError("export.bad_value", f"{table}.{name} holds a value that is not {logical}; "
                           "`attempt verify` and `attempt reproject --check` say what changed") from None


def schema(table: dict):
    """The Arrow schema of a public table (an undocumented column is text)."""
    import pyarrow as pa
    return pa.schema([pa.field(n, arrow_type(t) or pa.string()) for n, t in table["columns"]])


def public_tables(conn) -> list[dict]:
    """[{name, columns: [(name, logical type)]}] of every public table, catalog order."""
    return [{"name": t["name"], "columns": [(c["name"], c["type"]) for c in t["columns"]]}
            for t in catalog.build(conn)["tables"]]


def batches(conn, table: dict, *, include_content: bool, rows: int = BATCH_ROWS):
    """Record batches of one public table (content columns null unless `include_content`)."""
    import pyarrow as pa
    hidden = () if include_content else CONTENT_COLUMNS.get(table["name"], ())
    cols = table["columns"]
    select = ", ".join("NULL" if n in hidden else catalog.quoted(n) for n, _ in cols)
    cur = conn.execute(f'SELECT {select} FROM {catalog.quoted(table["name"])}')
    while True:
        chunk = []
        for r in cur:
            chunk.append(r)
            if len(chunk) >= rows:
                break
        if not chunk:
            return
        values = list(zip(*chunk))
        if table["name"] == "events" and "raw_json" not in hidden:  # the payload, not its stored form
            names = [n for n, _ in cols]
            i, j = names.index("raw_json"), names.index("content_json")
            k = [names.index(n) for n in payload.FIELDS]
            values[i] = [payload.expand(r, c, f) for r, c, f in zip(values[i], values[j], zip(*(values[x] for x in k)))]
        arrays = [column_of(list(values[i]), t, table["name"], n) for i, (n, t) in enumerate(cols)]
        yield pa.RecordBatch.from_arrays(arrays, names=[n for n, _ in cols])
        if len(chunk) < rows:
            return


def _write_table(conn, table: dict, path: str, fmt: str, include_content: bool) -> int:
    n = 0
    writer = _writer(path, schema(table), fmt)  # an empty table is still a file with its schema
    try:
        for batch in batches(conn, table, include_content=include_content):
            writer.write_batch(batch)
            n += batch.num_rows
    finally:
        writer.close()
    return n


def _writer(path, schema, fmt):
    if fmt == "parquet":
        import pyarrow.parquet as pq
        return pq.ParquetWriter(path, schema, compression="zstd")
    import pyarrow as pa
    return pa.ipc.new_file(path, schema)


def os_reason(e: OSError) -> str:
    """The OS's words for `e` ("No space left on device"), also when pyarrow wraps them in its own."""
    if e.errno:
        return os.strerror(e.errno)
    return e.strerror or str(e) or type(e).__name__


def file_sha256(path: str) -> str:
    """SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _prepare_dir(out_dir: str, force: bool) -> None:
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise AttemptError("export.not_a_directory", f"{out_dir} exists and is not a directory")
    try:
        os.makedirs(out_dir, exist_ok=True)
        stale_temp.clear(out_dir, _TMP)  # what an export killed with -9 left
        present = [p for p in os.listdir(out_dir) if not p.startswith(".attempt-export-")]
    except OSError as e:
        raise AttemptError("export.unwritable", f"cannot write in {out_dir}: {e.strerror}") from None
    if present and not force:
        raise AttemptError("export.exists", f"{out_dir} is not empty; pass --force to replace the export's "
                           "files in it (other files stay)")
    try:  # an old manifest must not vouch for files being replaced
        os.unlink(os.path.join(out_dir, MANIFEST))
    except FileNotFoundError:
        pass
    except OSError as e:
        raise AttemptError("export.unwritable", f"cannot replace {out_dir}/{MANIFEST}: {e.strerror}") from None


def export(store, out_dir: str, fmt: str, *, include_content: bool = False, force: bool = False,
           now_us: int | None = None, progress=None) -> dict:
    """Write every public table of `store` to `out_dir` in `fmt`; returns the manifest.
    `progress(1, total=…)` hears of every table written."""
    from ..model import fastjson
    if fmt not in FORMATS:
        raise AttemptError("export.format", f"unknown format {fmt!r}: arrow or parquet")
    require_pyarrow()
    conn = store.conn
    conn.execute("BEGIN")  # one snapshot for every table and the chain head
    try:
        size, head = store.head()
        tables = public_tables(conn)
        _prepare_dir(out_dir, force)
    except BaseException:
        conn.execute("COMMIT")
        raise
    listed, placed = [], []
    tmp = None
    try:
        try:
            for t in tables:
                name = t["name"] + FORMATS[fmt]
                tmp = os.path.join(out_dir, f".attempt-export-{os.getpid()}-{name}")
                rows = _write_table(conn, t, tmp, fmt, include_content)
                listed.append({"table": t["name"], "file": name, "rows": rows, "sha256": file_sha256(tmp),
                               "content_columns_null": [] if include_content
                               else list(CONTENT_COLUMNS.get(t["name"], ()))})
                os.replace(tmp, os.path.join(out_dir, name))
                placed.append(name)
                if progress is not None:
                    progress(1, total=len(tables))
        finally:
            conn.execute("COMMIT")
        manifest = {"format": fmt, "producer": f"attemptdb {__version__}",
                    "created_at": clock.iso(clock.now_us() if now_us is None else now_us),
                    "device_id": "dev_" + store.device_id, "chain": {"size": size, "head": head},
                    "content": bool(include_content), "tables": listed}
        tmp = os.path.join(out_dir, f".attempt-export-{os.getpid()}-{MANIFEST}")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(fastjson.dumps(manifest) + "\n")
        os.replace(tmp, os.path.join(out_dir, MANIFEST))
    except BaseException as e:  # no manifest: what this export placed goes too, nothing half-written stays
        for path in ([tmp] if tmp else []) + [os.path.join(out_dir, n) for n in placed]:
            with contextlib.suppress(OSError):
                os.unlink(path)
        if isinstance(e, OSError):
            raise AttemptError("export.unwritable", f"cannot write in {out_dir}: {os_reason(e)}; nothing was "
                               "published (no manifest.json; the files this export wrote are removed)") from None
        raise
    return manifest
