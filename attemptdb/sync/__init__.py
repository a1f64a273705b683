"""`attempt sync DIR`: many devices, one history (spec/sync.md).

- `segment`: the segment format (canonical Event v1 lines + a signed manifest) and the
  checks of one device's segments read from a shared folder (hostile input).
- `state`: what a file remembers of other devices: pinned keys and imported segment
  manifests with their leaves (the provenance of every imported event).
- `folder`: push (append this device's new segments under its own name) and pull (verify,
  then import everyone else's).
- `provenance`: `attempt verify`'s check of every foreign device's events against the
  signed segments kept in the file.
Nothing here is imported by the hook path.
"""
