"""Evidence beyond the hooks (seed 001): commands and their output as artifacts, git snapshots,
notes and approvals, the RFC 9162 Merkle tree over the chain and the inclusion proofs drawn
from it.

Importing this package loads nothing: `evidence.merkle` is on the hook path (the store keeps
the tree's stored nodes current as it appends); everything else loads on first use.
"""
