"""What a recovered file keeps of the damaged file's sync trust (spec/sync.md "Trust"): the
pins (revocations included) and kept manifests SQLite can read, each checked before it is
carried; pins that cannot be read whole make the new file refuse first-use pinning
(sync_state.PINS_UNCONFIRMED) and the report carries a coded warning. Used by
integrity.recover only."""

import apsw

from ..errors import AttemptError

READ_CHUNK = 1 << 20  # how much of the damaged copy `mentions` reads at a time


class SyncRead:
    """The damaged file's sync tables as SQLite could read them: `pins` (well-formed sync_keys
    rows), `segments` (sync_segments rows, by device), and whether the pins could not be read
    whole (`unreadable`: a revocation may be among the rows lost) or the segments not at all."""

    def __init__(self):
        self.pins: list = []
        self.segments: dict = {}
        self.unreadable = False
        self.segments_unreadable = False
        self.skipped = 0


def read_tables(conn) -> "SyncRead | None":
    """None when SQLite cannot even say whether the tables exist (its schema is unreadable)."""
    from . import sync_state
    out = SyncRead()
    try:
        found = sync_state.tables(conn)
    except AttemptError:  # a table of another shape: what it held is not known
        out.unreadable = out.segments_unreadable = True
        return out
    except (apsw.Error, UnicodeDecodeError):
        return None
    if "sync_keys" in found:
        try:
            rows = conn.execute("SELECT device_id, key_id, public_key, how, revoked, pinned_at FROM sync_keys").fetchall()
        except (apsw.Error, UnicodeDecodeError, MemoryError):
            out.unreadable = True
            rows = []
        for r in rows:
            if _pin_row_ok(r):
                out.pins.append(tuple(r))
            else:
                out.unreadable = True
    if "sync_segments" in found:
        try:
            for r in conn.execute("SELECT device_id, segment, manifest, leaves, imported_at FROM sync_segments "
                                  "ORDER BY device_id, segment"):
                out.segments.setdefault(r[0], []).append(tuple(r))
        except (apsw.Error, UnicodeDecodeError, MemoryError):
            out.segments, out.segments_unreadable = {}, True
    return out


def _pin_row_ok(r) -> bool:
    from . import keys
    from . import segments as segment
    dev, key_id, public, how, revoked, pinned_at = r
    if not (isinstance(dev, str) and segment.DEVICE_DIR.match(dev) and keys.is_identity(key_id)
            and how in ("first_use", "trusted") and revoked in (0, 1) and not isinstance(revoked, bool)
            and isinstance(pinned_at, str)):
        return False
    if public is None:
        return True
    k = keys.from_public_b64(public) if isinstance(public, str) else None
    return k is not None and k.identity == key_id


def mentions(path: str, needle: bytes) -> bool:
    """Does the file hold `needle` anywhere (read in chunks)?"""
    tail = b""
    try:
        with open(path, "rb") as f:
            while True:
                buf = f.read(READ_CHUNK)
                if not buf:
                    return False
                if needle in tail + buf:
                    return True
                tail = buf[-len(needle):]
    except OSError:
        return True


def carry(st, rep, sync: "SyncRead", device: str, stamp: str) -> None:
    """Put the pins and kept manifests the damaged file had into the new one (inside its write
    transaction). Every pin row is well-formed (else it is not carried); each device's kept
    segments are checked as `attempt verify` checks them (provenance: schema, signature, the
    pinned key, chained from GENESIS, leaves linking to the signed head) and must match the
    events kept, else they are left out (the next sync pulls them again, with the device's
    events that were lost). Pins that cannot be read whole may have held a revocation: the new
    file then refuses first-use pinning (sync_state.PINS_UNCONFIRMED) until `attempt keys
    trust` pins each device, and the report says so (`recover.sync_pins_unreadable`)."""
    from . import provenance
    from . import sync_state as state
    c = st.conn
    own = "dev_" + device
    if sync.pins or sync.segments:
        state.ensure(c)
    pins = {}
    for dev, key_id, public, how, revoked, pinned_at in sync.pins:
        if dev == own:
            continue
        c.execute("INSERT OR IGNORE INTO sync_keys(device_id, key_id, public_key, how, revoked, pinned_at) "
                  "VALUES (?, ?, ?, ?, ?, ?)", (dev, key_id, public, how, revoked, pinned_at))
        pins[dev] = {"key_id": key_id, "public_key": public, "how": how, "revoked": bool(revoked)}
    rep.sync["pins"] = len(pins)
    rep.sync["revoked"] = sum(p["revoked"] for p in pins.values())
    dropped = []
    for dev, rows in sync.segments.items():
        if dev == own or not (isinstance(dev, str) and _is_device(dev)):
            continue
        if not _carry_segments(c, dev, rows, pins.get(dev), provenance):
            c.execute("DELETE FROM sync_segments WHERE device_id = ?", (dev,))
            dropped.append(dev)
        else:
            rep.sync["segments"] += len(rows)
    if dropped:
        rep.notes.append(f"the kept sync segments of {', '.join(sorted(dropped))} do not match what was recovered "
                         "(or do not verify): left out; the next `attempt sync` pulls them again, with the events of "
                         "those devices that were lost")
    if sync.segments_unreadable:
        rep.notes.append("the kept sync segments (sync_segments) of the damaged file could not be read: the next "
                         "`attempt sync` pulls every device's segments again")
    if rep.sync["pins"]:
        rep.notes.append(f"kept {rep.sync['pins']} pinned sync key(s) ({rep.sync['revoked']} revoked) and "
                         f"{rep.sync['segments']} kept sync segment(s) of other devices")
    if sync.unreadable:
        rep.sync["pins_unreadable"] = True
        st.set_meta(state.PINS_UNCONFIRMED, stamp)
        rep.warn(code="recover.sync_pins_unreadable", message="the pinned sync keys (sync_keys) of the damaged file could not all "
                 "be read: a device you revoked could be among those lost. The new file pins no device on first "
                 "use: `attempt sync` refuses every device without a pin (sync.pin_unconfirmed) until you pin its "
                 "key with `attempt keys trust DEVICE KEY` (the key `attempt keys show` prints on that device)")


def _is_device(dev: str) -> bool:
    from . import segments as segment
    return bool(segment.DEVICE_DIR.match(dev))


def _carry_segments(c, dev: str, rows, pin, provenance) -> bool:
    """Insert `dev`'s kept segments and check them as verify does; False when they do not hold
    (the caller deletes them again)."""
    from . import segments as segment
    for _dev, n, text, leaves, imported_at in rows:
        if not isinstance(n, int) or not isinstance(text, str):
            return False
        try:
            m = segment.check_manifest(text.encode("utf-8"), dev, n)
        except (segment.SegmentProblem, UnicodeEncodeError):
            return False
        c.execute("INSERT INTO sync_segments(device_id, segment, manifest, head, first_source_seq, last_source_seq, "
                  "events, leaves, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (dev, n, text, m["chain"]["head"], m["first_source_seq"], m["last_source_seq"], m["events"],
                   leaves if isinstance(leaves, bytes) else b"",
                   imported_at if isinstance(imported_at, str) else m["created_at"]))
        if pin is None:  # no pin row: the key of the segments imported governs (as pull does)
            pin = {"key_id": m["signature"]["key_id"], "how": "first_use"}
    found = []
    leafset, last_src, ok = provenance.check_segments(c, dev, pin, lambda *a, **k: found.append(a))
    if not ok or found:
        return False
    have = set()
    for src, h in c.execute("SELECT source_seq, event_hash FROM events WHERE device_id = ?", (dev,)):
        if src > last_src:
            continue
        try:
            raw = bytes.fromhex(h)
        except (ValueError, TypeError):
            return False
        if raw not in leafset:
            return False
        have.add(raw)
    return have == leafset
