"""`attempt verify`'s check of foreign devices' events (spec/sync.md "Provenance").

Invariants: for every device with imported segments, each kept manifest still verifies
(its signature, by the key pinned for the device), the segments chain without gaps from
GENESIS, and the kept leaves link to each signed head; then every stored event of that device
up to the last signed source_seq hashes (its stored event_hash, which the chain check has
already recomputed from the row) to one of those leaves, and every leaf is a stored event. A
failure is a problem naming the device and the row's seq. Read-only.
"""

from ..render.termtable import plural
from . import segments as segment
from . import sync_duplicates
from . import sync_state as state


def check(conn, problem, notes: list) -> int:
    """Report through `problem(kind, message, seq=None, event_id=None)`; returns the number of
    foreign events proven."""
    if not state.exists(conn):
        return 0
    pins = state.pins(conn)
    proven = 0
    devices = [r[0] for r in conn.execute("SELECT DISTINCT device_id FROM sync_segments ORDER BY device_id")]
    for dev in devices:
        leaves, last_src, ok = check_segments(conn, dev, pins.get(dev), problem)
        if not ok:
            continue
        seen = 0
        for seq, eid, src, h in conn.execute("SELECT seq, event_id, source_seq, event_hash FROM events "
                                             "WHERE device_id = ? ORDER BY seq", (dev,)):
            if src > last_src:
                continue
            try:
                raw = bytes.fromhex(h)
            except (ValueError, TypeError):
                raw = None
            if raw not in leaves:
                problem("provenance", f"event seq={seq} of device {dev} (source_seq {src}) is not one its device "
                        "signed in a sync segment", seq, eid)
                continue
            seen += 1
            leaves.discard(raw)
        held = sync_duplicates.accounted(conn, dev, leaves)  # ids another device's event holds here (spec/sync.md)
        if held:
            notes.append(f"{plural(held, 'event', grouped=True)} of {dev} signed in its segments "
                         + ("is" if held == 1 else "are") + " stored here as another device's event with the same id")
        if leaves:
            problem("provenance", f"device {dev}: {plural(len(leaves), 'event', grouped=True)} its signed segments "
                    "hold " + ("is" if len(leaves) == 1 else "are") + " missing from this file")
        proven += seen
        beyond = conn.execute("SELECT count(*) FROM events WHERE device_id = ? AND source_seq > ?",
                              (dev, last_src)).fetchone()[0]
        if beyond:
            notes.append(f"{plural(beyond, 'event', grouped=True)} of {dev} " + ("is" if beyond == 1 else "are")
                         + " newer than its last signed segment (not synced from it)")
    if proven:
        notes.append(f"{plural(proven, 'event', grouped=True)} of {plural(len(devices), 'other device')} proven "
                     "against their signed sync segments")
    return proven


def check_segments(conn, dev: str, pin, problem):
    """(set of leaves, last signed source_seq, ok)."""
    leaves: set = set()
    head, last_src, expect, prev_key = "0" * 64, 0, 1, None
    for n, text, blob, events in conn.execute("SELECT segment, manifest, leaves, events FROM sync_segments "
                                              "WHERE device_id = ? ORDER BY segment", (dev,)):
        try:
            m = segment.check_manifest(text.encode("utf-8"), dev, n)
        except segment.SegmentProblem as p:
            problem("provenance", f"the kept manifest of {p.message}")
            return leaves, 0, False
        except (AttributeError, UnicodeEncodeError):
            problem("provenance", f"device {dev}, segment {n}: its kept manifest is not text")
            return leaves, 0, False
        signer = m["signature"]["key_id"]
        # one key per device; a change (a real key rotation) only to the key pinned by
        # `keys trust` afterwards, whose pin then vouches for the segments before it too
        allowed = pin is not None and (signer == pin["key_id"] or (
            signer == prev_key if prev_key is not None else pin["how"] == "trusted"))
        if not allowed:
            problem("provenance", f"device {dev}, segment {n}: signed by {signer}, which is not the key pinned "
                    "for the device")
            return leaves, 0, False
        prev_key = signer
        if n != expect or m["chain"]["prev"] != head:
            problem("provenance", f"device {dev}, segment {n}: the kept segments do not chain (a gap or a change)")
            return leaves, 0, False
        if not isinstance(blob, bytes) or len(blob) != 32 * m["events"] or segment.chain_of(head, blob) != m["chain"]["head"]:
            problem("provenance", f"device {dev}, segment {n}: the kept leaves do not link to the signed head")
            return leaves, 0, False
        leaves.update(blob[i:i + 32] for i in range(0, len(blob), 32))
        head, last_src, expect = m["chain"]["head"], m["last_source_seq"], n + 1
    return leaves, last_src, True
