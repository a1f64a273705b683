"""`attempt sync DIR`: many devices, one history (spec/sync.md).

- `folder`: push (append this device's new segments under its own name) and pull (verify,
  then import everyone else's).
The segment format and its checks (integrity.segments), what a file remembers of other devices
(integrity.sync_state), one event id on two devices (integrity.sync_duplicates: which copy pull
skips, and the skipped lines verify accounts for) and verify's provenance check
(integrity.provenance) live with the chain they extend. Nothing here is imported by the hook path.
"""
