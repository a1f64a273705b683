-- 0010: evidence (spec/evidence.md, spec/proof.md). Two tables, no view or trigger.
--
-- merkle_nodes: the stored nodes of the RFC 9162 Merkle tree over the chain (leaf i = the event
-- of seq i + 1): the hash of every complete, aligned subtree whose height is a multiple of 8,
-- i.e. the root of leaves [idx * 2^level, (idx + 1) * 2^level). Derived from event_hash and
-- kept by the writer (attemptdb/evidence/merkle.py); `attempt verify` recomputes every row.
CREATE TABLE merkle_nodes (
  level INTEGER NOT NULL,
  idx   INTEGER NOT NULL,
  hash  BLOB NOT NULL,
  PRIMARY KEY (level, idx)
) WITHOUT ROWID;

-- artifacts: content-addressed outputs (seed 001 "Artifact"), one row per SHA-256 of the bytes
-- kept (deduplicated). `content` holds the zlib-compressed bytes only when the capture mode
-- allowed content and the writer attached them; otherwise the row is the hash, size and media
-- type alone. Events name artifacts by artifact_id (art_ + the first 32 hex digits of sha256).
CREATE TABLE artifacts (
  artifact_id  TEXT NOT NULL UNIQUE,
  sha256       TEXT NOT NULL UNIQUE,
  size_bytes   INTEGER NOT NULL,
  media_type   TEXT NOT NULL,
  purpose      TEXT NOT NULL,
  redacted     INTEGER NOT NULL DEFAULT 0,
  created_at   TEXT NOT NULL,
  encoding     TEXT,
  stored_bytes INTEGER,
  content      BLOB
);
