"""Whose events a bundle may add (spec/bundle.md "Whose events a bundle may add", spec/sync.md
"Trust"): new events of a device whose key this file knows (its own; one pinned for sync) come
only from a bundle that key signed; a revoked pin lets none in; in a file whose pins `attempt
recover` could not read whole, a device without a pin adds none either. The check runs on the
verified, staged lines before anything is imported, and names devices and counts, never content.
"""

from ..integrity import keys
from ..model import fastjson


def known_keys(store, devices: set) -> dict:
    """bare device id → (the key id its new events need, or None when none may add them, and
    how that key is known) for each device of `devices` whose key this file knows: its own
    (the device key) and every one pinned for sync (`sync_keys`: first use or `keys trust`;
    revoked: none); in a file whose pins are unconfirmed, every other device without a pin
    (none)."""
    from ..integrity import sync_state
    known = {}
    if store.device_id in devices:
        mine = keys.load(store.device_id)
        known[store.device_id] = (mine.identity if mine is not None else None, "own")
    pins = sync_state.pins(store.conn)
    for dev, pin in pins.items():
        bare = dev[4:]
        if bare in devices and bare != store.device_id:
            known[bare] = (None if pin["revoked"] else pin["key_id"], "revoked" if pin["revoked"] else pin["how"])
    if store.meta(sync_state.PINS_UNCONFIRMED) is not None:
        # a file `attempt recover` made without reading every pin: a device without one may be a
        # revoked device whose pin was lost, so none may add new events until it is pinned again
        for bare in devices:
            if bare != store.device_id and "dev_" + bare not in pins:
                known[bare] = (None, "unconfirmed")
    return known


def check_known_devices(store, staged: str, rep) -> None:
    """Events of a device whose key this file knows (`known_keys`) that are not stored here yet
    come only from a bundle that key signed. From anyone else's they would enter the history as
    that device's: as this device's own (sync would sign and publish them, or find two of its
    events at one source_seq), or as a synced device's that its signed segments never held
    (`attempt verify` would report them for good, the device's next segments collide). Events
    already stored are duplicates: they add nothing, whoever relays them."""
    known = {d: k for d, k in known_keys(store, rep.devices).items() if k[0] is None or k[0] != rep.signer}
    if not known:
        return
    new: dict = {}
    marks = [d.encode() for d in known]
    with open(staged, "rb") as f:
        for raw in f:
            if not any(m in raw for m in marks):  # no line of a known device without its id
                continue
            env = fastjson.loads(raw)
            dev = env["device_id"]
            if dev in known and store.conn.execute(
                    "SELECT 1 FROM events WHERE event_id = ?", ("ev_" + env["event_id"],)).fetchone() is None:
                new[dev] = new.get(dev, 0) + 1
    for dev in sorted(new, key=lambda d: (d != store.device_id, d)):
        key_id, how = known[dev]
        if how == "own":
            rep.problem(f"it holds {new[dev]:,} events of this device (dev_{dev}) that this file does not have, and "
                        "is not signed by this device's key: they would become this device's own; nothing was "
                        "imported", code="bundle.device_key")
        elif how == "unconfirmed":
            rep.problem(f"it holds {new[dev]:,} events of dev_{dev} that this file does not have, and no key is pinned "
                        "for that device in a file `attempt recover` made without reading all its pins (a revoked "
                        "device's pin may be among those lost): nothing was imported; `attempt keys trust` that "
                        "device's key first (check it with `attempt keys show` on that device)",
                        code="bundle.pin_unconfirmed")
        elif how == "revoked":
            rep.problem(f"it holds {new[dev]:,} events of dev_{dev} that this file does not have, and the key pinned "
                        "for that device was revoked (`attempt keys trust` pins a new one): nothing was imported",
                        code="bundle.device_key")
        else:
            pinned = "by sync on first use" if how == "first_use" else "with `attempt keys trust`"
            rep.problem(f"it holds {new[dev]:,} events of dev_{dev} that this file does not have, and is signed by "
                        f"{rep.signer}, not by {key_id}, the key pinned for that device ({pinned}): nothing was "
                        "imported (they come through `attempt sync`, or a bundle that device signed)",
                        code="bundle.device_key")
