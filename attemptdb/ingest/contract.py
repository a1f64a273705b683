"""The ingestion contract, applied to every event before the store links it: the database's
capture-mode clamp, secret redaction of content and raw, the attrs sanitiser (attemptdb.ingest.privacy).

Invariant: idempotent — an event that went through it once comes out byte-identical the second
time, so streams exported from one database re-import with the same hashes.
"""


def ingest_for(store, *, redact_secrets: bool = True):
    """A function env → env applying the contract under `store`'s capture mode."""
    from . import privacy
    from . import redaction as secrets
    mode = store.capture_mode
    memo = secrets.RedactionMemo()  # texts that recur across the stream are scanned once

    def ingest(env):
        return privacy.ingest(env, redact_secrets=redact_secrets, db_mode=mode, memo=memo)

    return ingest
