"""The chain and its proofs of health: chain rule, verify, checkpoints, keys, recovery."""
