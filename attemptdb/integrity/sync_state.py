"""What a file keeps of other devices (spec/sync.md): pinned keys and the signed segment
manifests it imported, with their leaves, in two tables created on first use (not public,
not part of the migrations: an older AttemptDB ignores them).

Invariants:
- `sync_keys`: one row per foreign device: its pinned key (id_ fingerprint, and the public key
  once seen), how it was pinned (`first_use` or `trusted`), and whether it was revoked.
- `sync_segments`: one row per imported segment: the manifest exactly as signed, the device
  chain head, and `leaves` (the 32-byte SHA-256 of each line, in order). `attempt verify`
  recomputes the head from the leaves and checks the signature, so the leaves need not be
  trusted; every imported event of the device must hash to one of them.
"""

from ..errors import AttemptError
from ..model import clock

DDL = """
CREATE TABLE IF NOT EXISTS sync_keys (
  device_id  TEXT PRIMARY KEY,
  key_id     TEXT NOT NULL,
  public_key TEXT,
  how        TEXT NOT NULL,
  revoked    INTEGER NOT NULL DEFAULT 0,
  pinned_at  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sync_segments (
  device_id        TEXT NOT NULL,
  segment          INTEGER NOT NULL,
  manifest         TEXT NOT NULL,
  head             TEXT NOT NULL,
  first_source_seq INTEGER NOT NULL,
  last_source_seq  INTEGER NOT NULL,
  events           INTEGER NOT NULL,
  leaves           BLOB NOT NULL,
  imported_at      TEXT NOT NULL,
  PRIMARY KEY (device_id, segment)
) WITHOUT ROWID;
"""


PINS_UNCONFIRMED = "sync_pins_unconfirmed"
"""meta key: set by `attempt recover` when the damaged file's pins could not all be read (a
revocation may be among those lost): pull then pins no device on first use; each device without
a pin is refused (`sync.pin_unconfirmed`) until `attempt keys trust` pins it."""


COLUMNS = {"sync_keys": {"device_id", "key_id", "public_key", "how", "revoked", "pinned_at"},
           "sync_segments": {"device_id", "segment", "manifest", "head", "first_source_seq", "last_source_seq",
                             "events", "leaves", "imported_at"}}


def tables(conn) -> set:
    """Which of the two tables the file has; one of another shape (dropped and made again, a view
    under its name) is `sync.state_changed`, never an SQL error."""
    found = set()
    for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE name IN ('sync_keys', 'sync_segments')"):
        cols = {r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (name,))}
        if kind != "table" or not COLUMNS[name] <= cols:
            raise AttemptError("sync.state_changed", f"the table {name} of this file is not the one AttemptDB made: it "
                               "was edited outside AttemptDB; `attempt recover` rebuilds a sound file", exit_status=1)
        found.add(name)
    return found


def exists(conn) -> bool:
    return "sync_segments" in tables(conn)


def ensure(conn) -> None:
    """Create the tables (inside the caller's write transaction, or alone)."""
    if len(tables(conn)) < 2:
        conn.execute(DDL)


def pins(conn) -> dict:
    """device_id → {key_id, public_key, how, revoked, pinned_at}."""
    if "sync_keys" not in tables(conn):
        return {}
    return {r[0]: {"key_id": r[1], "public_key": r[2], "how": r[3], "revoked": bool(r[4]), "pinned_at": r[5]}
            for r in conn.execute("SELECT device_id, key_id, public_key, how, revoked, pinned_at FROM sync_keys")}


def last_segment(conn, device: str):
    """(segment, head, last_source_seq, manifest text) of the newest imported segment, or None."""
    if not exists(conn):
        return None
    return conn.execute("SELECT segment, head, last_source_seq, manifest FROM sync_segments WHERE device_id = ? "
                        "ORDER BY segment DESC LIMIT 1", (device,)).fetchone()


def stored_manifests(conn, device: str) -> dict:
    if not exists(conn):
        return {}
    return {r[0]: r[1] for r in conn.execute("SELECT segment, manifest FROM sync_segments WHERE device_id = ?",
                                             (device,))}


def pin(conn, device: str, key_id: str, public_key: str | None, how: str) -> None:
    conn.execute("INSERT INTO sync_keys(device_id, key_id, public_key, how, revoked, pinned_at) VALUES (?, ?, ?, ?, 0, ?) "
                 "ON CONFLICT(device_id) DO UPDATE SET key_id = excluded.key_id, public_key = excluded.public_key, "
                 "how = excluded.how, revoked = 0, pinned_at = excluded.pinned_at",
                 (device, key_id, public_key, how, clock.iso(clock.now_us())))


def revoke(conn, device: str) -> None:
    if device not in pins(conn):
        raise AttemptError("keys.not_pinned", f"no key is pinned for {device}", exit_status=1)
    conn.execute("UPDATE sync_keys SET revoked = 1 WHERE device_id = ?", (device,))


def summary(conn) -> list[dict]:
    """Per foreign device: its pin and what was imported from it."""
    out = {}
    for dev, p in pins(conn).items():
        out[dev] = {"device_id": dev, **p, "segments": 0, "events": 0, "last_source_seq": None}
    if exists(conn):
        for dev, n, ev, last in conn.execute("SELECT device_id, count(*), sum(events), max(last_source_seq) "
                                             "FROM sync_segments GROUP BY device_id"):
            row = out.setdefault(dev, {"device_id": dev, "key_id": None, "public_key": None, "how": None,
                                       "revoked": False, "pinned_at": None})
            row.update(segments=n, events=ev, last_source_seq=last)
    return [out[k] for k in sorted(out)]
