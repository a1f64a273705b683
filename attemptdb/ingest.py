"""The ingestion contract, applied to every event before the store links it: the database's
capture-mode clamp, secret redaction of content and raw, the attrs sanitiser.

Invariant: idempotent — an event that went through it once comes out byte-identical the second
time, so streams exported from one database re-import with the same hashes.
"""


def ingest_for(store, *, redact_secrets: bool = True):
    """A function env → env applying the contract under `store`'s capture mode."""
    mode = store.capture_mode
    try:
        from . import privacy
    except ImportError:  # privacy module not built yet: clamp only
        privacy = None

    def ingest(env):
        if privacy is not None:
            return privacy.ingest(env, redact_secrets=redact_secrets, db_mode=mode)
        if mode == "metadata_only":
            env.pop("content", None)
            env.pop("raw", None)
            env["capture_mode"] = "metadata_only"
        return env

    return ingest
