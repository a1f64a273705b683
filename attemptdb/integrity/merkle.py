"""The RFC 9162 Merkle tree over the chain (spec/proof.md).

Leaf i (0-based) is the event of `seq` i + 1: `SHA-256(0x00 ‖ its 32-byte event_hash)`; an
interior node is `SHA-256(0x01 ‖ left ‖ right)`; the tree head of n leaves is RFC 9162 §2.1.1's
MTH (split at the largest power of two below n). Proofs are §2.1.3 (inclusion) and §2.1.4
(consistency), verified with the algorithms of §2.1.3.2 and §2.1.4.2.

What is stored: the hash of every complete, aligned subtree whose height is a multiple of
NODE_LEVEL (8), in `merkle_nodes(level, idx, hash)`: the root of leaves [idx·2^level,
(idx+1)·2^level). Leaf hashes are not stored (each is one hash of a stored event_hash), so the
table holds about n/255 rows, and any subtree hash needs at most 255 hashes of stored values.

Invariants:
- The append path (`maintain`) only adds the nodes a batch completes, and only while the table
  is complete up to the batch (a file from before the tree is filled by the checkpoint signer,
  never by a hook): an append that completes no 256-leaf block costs two integer shifts.
- Nothing here decides what is true: a signer checks what it reads from this table against
  the Merkle head it signed before (checkpoint.py), a proof is verified before it is written,
  and `attempt verify` recomputes every stored node from the events.
- Pure functions (`mth`, `CompactRange`, `root_from_inclusion`, `verify_consistency`, the
  proof builders over any `subtree` source) need no database. Hook-path imports only.
"""

from ..model.ids import sha256
from . import chain

NODE_LEVEL = 8
BLOCK = 1 << NODE_LEVEL
EMPTY_ROOT = sha256(b"").digest()
MAX_PATH = 64  # a path longer than the height of a 2^64-leaf tree is no path


class MerkleError(Exception):
    """The stored rows do not make the tree asked for (a gap, a hash that is not hex)."""


def leaf_of(event_hash_hex: str, sha=sha256) -> bytes:
    """The leaf hash of an event: SHA-256(0x00 ‖ the 32 bytes of its event_hash)."""
    try:
        raw = bytes.fromhex(event_hash_hex)
    except (ValueError, TypeError):
        raise MerkleError("an event_hash is not hex") from None
    if len(raw) != 32:
        raise MerkleError("an event_hash is not 32 bytes")
    return sha(b"\x00" + raw).digest()


def node(left: bytes, right: bytes, sha=sha256) -> bytes:
    return sha(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two strictly below n (n >= 2): RFC 9162's k."""
    return 1 << ((n - 1).bit_length() - 1)


def fold(hashes: list, sha=sha256) -> bytes:
    """The root of a perfect subtree from its 2^k leaves or nodes, left to right."""
    while len(hashes) > 1:
        pairs = iter(hashes)
        hashes = [sha(b"\x01" + a + b).digest() for a, b in zip(pairs, pairs)]
    return hashes[0]


def mth(leaves: list, sha=sha256) -> bytes:
    """MTH(D[n]) of leaf hashes, straight from RFC 9162 §2.1.1 (reference; small trees)."""
    n = len(leaves)
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaves[0]
    k = split(n)
    return node(mth(leaves[:k], sha), mth(leaves[k:], sha), sha)


class CompactRange:
    """The perfect subtrees that make up leaves [0, end) (one per set bit of `end`, largest
    first), grown a leaf or an aligned subtree at a time. `on_node(level, idx, hash)` hears of
    every node it completes at a stored level (a multiple of NODE_LEVEL)."""

    __slots__ = ("end", "nodes", "sha", "on_node")

    def __init__(self, sha=sha256, on_node=None):
        self.end = 0
        self.nodes: list = []  # (level, idx, hash)
        self.sha = sha
        self.on_node = on_node

    def push(self, level: int, idx: int, h: bytes) -> None:
        """Append the subtree of height `level` at index `idx` (it must start at `end`)."""
        nodes, sha = self.nodes, self.sha
        self.end = (idx + 1) << level
        while idx & 1 and nodes and nodes[-1][0] == level:
            h = sha(b"\x01" + nodes.pop()[2] + h).digest()
            level += 1
            idx >>= 1
            if self.on_node is not None and not level % NODE_LEVEL:
                self.on_node(level, idx, h)
        nodes.append((level, idx, h))

    def push_leaf(self, h: bytes) -> None:
        self.push(0, self.end, h)

    def add(self, event_hash_hex: str) -> None:
        """Append the leaf of one event."""
        self.push(0, self.end, leaf_of(event_hash_hex, self.sha))

    def root(self) -> bytes:
        """MTH of leaves [0, end): the peaks folded from the right."""
        if not self.nodes:
            return EMPTY_ROOT
        nodes, sha = self.nodes, self.sha
        r = nodes[-1][2]
        for i in range(len(nodes) - 2, -1, -1):
            r = sha(b"\x01" + nodes[i][2] + r).digest()
        return r

    def copy(self) -> "CompactRange":
        c = CompactRange(self.sha)
        c.end, c.nodes = self.end, list(self.nodes)
        return c


class Accumulator:
    """The leaves of rows lo.. of a chain being verified (one worker's range): their compact
    range, its state at each cut (a checkpoint's size) inside the range, and every node at a
    stored level they complete. `join` puts the workers' ranges together. Leaves are buffered
    and a whole aligned block is hashed in one go (about 1 µs a row)."""

    def __init__(self, begin: int, cuts=(), sha=None):
        self.found: list = []
        self.cr = CompactRange(sha or chain.bulk_sha256(), on_node=lambda *n: self.found.append(n))
        self.cr.end = begin
        self._cuts = sorted(c for c in set(cuts) if c > begin)
        self._buf: list = []
        self._want = self._distance()
        self.snapshots: dict = {}

    def _distance(self) -> int:
        end = self.cr.end
        d = BLOCK - (end & (BLOCK - 1))
        return min(d, self._cuts[0] - end) if self._cuts else d

    def add(self, event_hash_hex: str) -> None:
        """The next row's (already verified) event hash."""
        buf = self._buf
        buf.append(bytes.fromhex(event_hash_hex))
        if len(buf) == self._want:
            self._flush()

    def add_digests(self, digests: list) -> None:
        """The next rows' (already verified) event hashes as raw 32-byte digests, in order."""
        i, n = 0, len(digests)
        while i < n:
            take = self._want - len(self._buf)
            self._buf.extend(digests[i:i + take])
            i += take
            if len(self._buf) == self._want:
                self._flush()

    def _flush(self) -> None:
        cr, buf = self.cr, self._buf
        sha = cr.sha
        leaves = [sha(b"\x00" + d).digest() for d in buf]
        if len(leaves) == BLOCK:  # an aligned block: its node in one fold
            h = fold(leaves, sha)
            idx = cr.end >> NODE_LEVEL
            self.found.append((NODE_LEVEL, idx, h))
            cr.push(NODE_LEVEL, idx, h)
        else:
            for h in leaves:
                cr.push(0, cr.end, h)
        buf.clear()
        if self._cuts and cr.end == self._cuts[0]:
            self.snapshots[cr.end] = list(cr.nodes)
            self._cuts.pop(0)
        self._want = self._distance()

    def result(self) -> tuple:
        """Plain data for the parent process: (end, nodes, snapshots, found)."""
        if self._buf:
            self._flush()
        return self.cr.end, self.cr.nodes, self.snapshots, self.found


def join(results, sha=None) -> tuple[dict, list]:
    """Accumulator results of consecutive ranges from leaf 0, in order → ({cut: MTH of the
    first `cut` leaves}, every stored-level node of the complete blocks)."""
    found = []
    total = CompactRange(sha or chain.bulk_sha256(), on_node=lambda *n: found.append(n))
    heads = {}
    for _end, nodes, snapshots, inner in results:
        for cut, cut_nodes in snapshots.items():
            tmp = total.copy()
            for n in cut_nodes:
                tmp.push(*n)
            heads[cut] = tmp.root()
        for n in nodes:
            total.push(*n)
        found.extend(inner)
    return heads, found


# --- proofs (RFC 9162 §2.1.3, §2.1.4) over any source of subtree hashes ----------------------

def range_hash(subtree, lo: int, hi: int) -> bytes:
    """MTH(D[lo:hi]) for a range of the RFC's recursion, from `subtree(lo, level)` (the hash
    of the perfect subtree of 2^level leaves starting at leaf lo)."""
    n = hi - lo
    if n & (n - 1) == 0 and lo % n == 0:
        return subtree(lo, n.bit_length() - 1)
    k = split(n)
    return node(range_hash(subtree, lo, lo + k), range_hash(subtree, lo + k, hi))


def inclusion_path(subtree, m: int, n: int) -> list:
    """PATH(m, D[n]): the sibling hashes from leaf m up to the root, leaf side first."""
    if not 0 <= m < n:
        raise MerkleError(f"leaf {m} is not in a tree of {n} leaves")
    out, lo, hi = [], 0, n
    while hi - lo > 1:
        k = split(hi - lo)
        if m < lo + k:
            out.append((lo + k, hi))
            hi = lo + k
        else:
            out.append((lo, lo + k))
            lo += k
    return [range_hash(subtree, a, b) for a, b in reversed(out)]


def consistency_path(subtree, m: int, n: int) -> list:
    """PROOF(m, D[n]) of RFC 9162 §2.1.4.1 (0 < m <= n; empty when m == n)."""
    if not 0 < m <= n:
        raise MerkleError(f"no consistency proof from {m} to {n} leaves")
    out = []

    def sub(m, lo, hi, whole):
        if m == hi - lo:
            if not whole:
                out.append(range_hash(subtree, lo, hi))
            return
        k = split(hi - lo)
        if m <= k:
            sub(m, lo, lo + k, whole)
            out.append(range_hash(subtree, lo + k, hi))
        else:
            sub(m - k, lo + k, hi, False)
            out.append(range_hash(subtree, lo, lo + k))

    sub(m, 0, n, True)
    return out


def root_from_inclusion(index: int, size: int, leaf: bytes, path: list, sha=sha256) -> bytes | None:
    """The root an inclusion path leads to (RFC 9162 §2.1.3.2), None when the path does not
    fit a tree of `size` leaves (too long, too short, index out of range)."""
    if not 0 <= index < size or len(path) > MAX_PATH:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = sha(b"\x01" + p + r).digest()
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = sha(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify_consistency(m: int, n: int, first: bytes, second: bytes, path: list, sha=sha256) -> bool:
    """RFC 9162 §2.1.4.2: the tree of n leaves with head `second` extends the tree of m leaves
    with head `first` (0 < m <= n; for m == n the path is empty and the heads are equal)."""
    if not 0 < m <= n or len(path) > MAX_PATH:
        return False
    if m == n:
        return not path and first == second
    if not path:
        return False
    if m & (m - 1) == 0:
        path = [first] + list(path)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = sha(b"\x01" + c + fr).digest()
            sr = sha(b"\x01" + c + sr).digest()
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = sha(b"\x01" + sr + c).digest()
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first and sr == second


# --- the stored tree -------------------------------------------------------------------------

_LEAVES = "SELECT event_hash FROM events WHERE seq > ? AND seq <= ? ORDER BY seq"
_NODES = "SELECT idx, hash FROM merkle_nodes WHERE level = ? AND idx >= ? AND idx < ? ORDER BY idx"
_PUT = "INSERT OR REPLACE INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)"


def _leaves(conn, lo: int, hi: int, sha=sha256) -> list:
    """Leaf hashes of leaves [lo, hi) from the stored event hashes."""
    hexes = [r[0] for r in conn.execute(_LEAVES, (lo, hi))]
    if len(hexes) != hi - lo:
        raise MerkleError(f"rows seq={lo + 1}..{hi} are not all there")
    return [leaf_of(h, sha) for h in hexes]


def _cascade(conn, level: int, idx: int, sha) -> None:
    """After node (level, idx) was stored: the nodes above it that it completes."""
    while idx & (BLOCK - 1) == BLOCK - 1:
        first = idx - (BLOCK - 1)
        hs = [r[1] for r in conn.execute(_NODES, (level, first, idx + 1))]
        if len(hs) != BLOCK:
            return
        level, idx = level + NODE_LEVEL, idx >> NODE_LEVEL
        conn.execute(_PUT, (level, idx, fold(hs, sha)))


def store(conn, nodes) -> None:
    """Write (level, idx, hash) nodes (a signer's, checked against its signed heads)."""
    conn.executemany(_PUT, nodes)


def stored_blocks(conn) -> int:
    """How many 256-leaf blocks have their node stored (the table is filled in order)."""
    row = conn.execute("SELECT max(idx) FROM merkle_nodes WHERE level = ?", (NODE_LEVEL,)).fetchone()
    return 0 if row[0] is None else row[0] + 1


def maintain(conn, size_before: int, event_hashes: list, sha=sha256) -> None:
    """The append path, inside the append's transaction: store the nodes that the events just
    linked (rows size_before+1…, their event hashes in order) complete. Nothing when no
    256-leaf block completes, or when the table is behind (a file written before the tree:
    the next checkpoint signer, which reads those rows anyway, stores what is missing)."""
    n1 = size_before + len(event_hashes)
    b0, b1 = size_before >> NODE_LEVEL, n1 >> NODE_LEVEL
    if b1 == b0 or stored_blocks(conn) != b0:
        return
    for b in range(b0, b1):
        lo = b << NODE_LEVEL
        if lo < size_before:
            leaves = _leaves(conn, lo, size_before, sha)
            leaves += [leaf_of(h, sha) for h in event_hashes[:lo + BLOCK - size_before]]
        else:
            start = lo - size_before
            leaves = [leaf_of(h, sha) for h in event_hashes[start:start + BLOCK]]
        conn.execute(_PUT, (NODE_LEVEL, b, fold(leaves, sha)))
        _cascade(conn, NODE_LEVEL, b, sha)


def extend_checked(conn, cr: CompactRange, hi: int, prev_chain: str | None = None, sha=None) -> str:
    """Push the leaves of rows cr.end+1..hi onto `cr`, checking as it reads that each row's
    event_hash is the one its chain_hash links (and `seq` has no gap), so the leaves are the
    ones the chain commits to. `prev_chain`: the chain hash of row cr.end (read when None).
    Returns the chain hash of row hi; MerkleError names the first row that does not link."""
    sha = sha or chain.bulk_sha256()
    lo = cr.end
    if prev_chain is None:
        if lo == 0:
            prev_chain = chain.GENESIS
        else:
            row = conn.execute("SELECT chain_hash FROM events WHERE seq = ?", (lo,)).fetchone()
            if row is None:
                raise MerkleError(f"row seq={lo} is missing")
            prev_chain = row[0]
    expect = lo + 1
    push = cr.push
    for seq, ev, ch in conn.execute("SELECT seq, event_hash, chain_hash FROM events WHERE seq > ? AND seq <= ? "
                                    "ORDER BY seq", (lo, hi)):
        if seq != expect:
            raise MerkleError(f"row seq={expect} is missing")
        try:
            raw = bytes.fromhex(ev)
            ok = len(raw) == 32 and chain.link(prev_chain, ev, sha) == ch
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise MerkleError(f"row seq={seq} does not link to the row before it")
        push(0, seq - 1, sha(b"\x00" + raw).digest())
        prev_chain = ch
        expect += 1
    if expect != hi + 1:
        raise MerkleError(f"rows after seq={expect - 1} are missing")
    return prev_chain


class StoredTree:
    """Subtree hashes of the tree of the first `size` events, from the stored nodes where they
    exist and from the events' hashes below them. A missing node is recomputed and noted in
    `recomputed` (a signer that checked the result against its signed head may store them).
    One proof reads at most a few hundred rows."""

    def __init__(self, conn, size: int, sha=None):
        self.conn, self.size = conn, size
        self.sha = sha or chain.bulk_sha256()
        self._block = (None, None)  # (first leaf, leaf hashes) of the last block read
        self.recomputed: list = []

    def _leaf_block(self, lo: int, count: int) -> list:
        b = lo >> NODE_LEVEL << NODE_LEVEL
        start, hs = self._block
        if start != b:
            hs = _leaves(self.conn, b, min(b + BLOCK, self.size), self.sha)
            self._block = (b, hs)
        return hs[lo - b:lo - b + count]

    def subtree(self, lo: int, level: int) -> bytes:
        if lo + (1 << level) > self.size:
            raise MerkleError(f"leaves {lo}..{lo + (1 << level)} are beyond the tree")
        q = level // NODE_LEVEL * NODE_LEVEL
        if q:
            hs = self._stored(q, lo >> q, 1 << (level - q))
            if hs is not None:
                return fold(hs, self.sha)
        if level <= NODE_LEVEL:
            h = fold(self._leaf_block(lo, 1 << level), self.sha)
        else:
            half = 1 << (level - 1)
            h = node(self.subtree(lo, level - 1), self.subtree(lo + half, level - 1), self.sha)
        if q and level == q:
            self.recomputed.append((level, lo >> level, h))
        return h

    def _stored(self, level: int, first: int, count: int) -> list | None:
        rows = list(self.conn.execute(_NODES, (level, first, first + count)))
        if len(rows) != count:
            return None
        return [r[1] for r in rows]

    def root(self) -> bytes:
        return EMPTY_ROOT if self.size == 0 else range_hash(self.subtree, 0, self.size)

    def compact(self) -> CompactRange:
        """The compact range of the first `size` leaves (its peaks)."""
        cr = CompactRange(self.sha)
        pos = 0
        for level in range(self.size.bit_length() - 1, -1, -1):
            if self.size >> level & 1:
                cr.nodes.append((level, pos >> level, self.subtree(pos, level)))
                pos += 1 << level
        cr.end = self.size
        return cr

    def inclusion(self, m: int) -> list:
        return inclusion_path(self.subtree, m, self.size)

    def consistency(self, m: int) -> list:
        return consistency_path(self.subtree, m, self.size)
