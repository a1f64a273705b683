"""The canonical event and its parts: ids, the hybrid clock, canonical JSON."""
