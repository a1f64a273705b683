"""The RFC 9162 Merkle tree over the chain (spec/proof.md §1, spec/checkpoint.md): the published
RFC 6962 test vectors, proofs of every shape, the nodes the append path stores, the head every
signature commits to (also for a file from before the tree), and what `attempt verify` finds
when the tree or a signed head does not match the events."""

import base64
import hashlib
import json
import random

import pytest
from conftest import needs_shell, run_attempt
from test_verify import tamper

from attemptdb.devtools import synth
from attemptdb.integrity import checkpoint, keys
from attemptdb.integrity import merkle as M
from attemptdb.store.database import Store

# RFC 6962's reference data (certificate-transparency's test vectors): leaves, the heads of
# the first n of them, and proofs, with leaf indexes 0-based here
CT_DATA = [bytes.fromhex(x) for x in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                                      "606162636465666768696a6b6c6d6e6f")]
CT_ROOTS = ["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"]
CT_INCLUSION = [
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]
CT_CONSISTENCY = [
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]
CT_LEAVES = [hashlib.sha256(b"\x00" + d).digest() for d in CT_DATA]


def reference(leaves):
    """subtree(lo, level) straight from the definition."""
    return lambda lo, level: M.mth(leaves[lo:lo + (1 << level)])


def test_rfc6962_reference_heads_and_proofs():
    for n in range(9):
        assert M.mth(CT_LEAVES[:n]).hex() == CT_ROOTS[n]
        cr = M.CompactRange()
        for leaf in CT_LEAVES[:n]:
            cr.push_leaf(leaf)
        assert cr.root().hex() == CT_ROOTS[n]
    for m, n, want in CT_INCLUSION:
        path = M.inclusion_path(reference(CT_LEAVES), m, n)
        assert [p.hex() for p in path] == want
        assert M.root_from_inclusion(m, n, CT_LEAVES[m], path).hex() == CT_ROOTS[n]
    for m, n, want in CT_CONSISTENCY:
        path = M.consistency_path(reference(CT_LEAVES), m, n)
        assert [p.hex() for p in path] == want
        assert M.verify_consistency(m, n, bytes.fromhex(CT_ROOTS[m]), bytes.fromhex(CT_ROOTS[n]), path)


def test_every_inclusion_and_consistency_proof_of_small_trees_verifies_and_a_changed_one_does_not():
    rng = random.Random(9162)
    for n in range(1, 70):
        leaves = [hashlib.sha256(bytes([i, n])).digest() for i in range(n)]
        src, root = reference(leaves), M.mth(leaves)
        for m in range(n):
            path = M.inclusion_path(src, m, n)
            assert M.root_from_inclusion(m, n, leaves[m], path) == root
            assert M.root_from_inclusion(m, n, leaves[(m + 1) % n], path) != root or n == 1
            if path:
                bad = list(path)
                i = rng.randrange(len(bad))
                bad[i] = bytes([bad[i][0] ^ 1]) + bad[i][1:]
                assert M.root_from_inclusion(m, n, leaves[m], bad) != root
                assert M.root_from_inclusion(m, n, leaves[m], path + [path[0]]) is None  # too long
        for m in range(1, n + 1):
            path = M.consistency_path(src, m, n)
            old = M.mth(leaves[:m])
            assert M.verify_consistency(m, n, old, root, path)
            if m < n:
                assert not M.verify_consistency(m, n, hashlib.sha256(old).digest(), root, path)
                assert not M.verify_consistency(m, n, old, root, path[:-1])


def test_accumulated_ranges_join_into_the_heads_and_nodes_of_the_whole():
    """What verify's parallel workers compute, in any split, equals the tree of the whole."""
    hexes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(70_000)]
    leaves = [hashlib.sha256(b"\x00" + bytes.fromhex(h)).digest() for h in hexes]
    cuts = [1, 255, 256, 257, 4096, 65_536, 65_537, 69_999, 70_000]
    whole = M.Accumulator(0, cuts)
    for h in hexes:
        whole.add(h)
    heads, nodes = M.join([whole.result()])
    for c in (1, 255, 256, 257, 4096):
        assert heads[c] == M.mth(leaves[:c])
    cr = M.CompactRange()
    for leaf in leaves:
        cr.push_leaf(leaf)
    assert heads[70_000] == cr.root()
    assert {(lv, i) for lv, i, _ in nodes} == {(8, b) for b in range(70_000 // 256)} | {(16, 0)}
    assert all(h == M.fold(leaves[i << lv:(i + 1) << lv]) for lv, i, h in nodes if lv == 8)
    for bounds in ([0, 30_001, 70_000], [0, 77, 65_536, 65_600, 70_000]):
        parts = []
        for lo, hi in zip(bounds, bounds[1:]):
            acc = M.Accumulator(lo, cuts)
            for h in hexes[lo:hi]:
                acc.add(h)
            parts.append(acc.result())
        h2, n2 = M.join(parts)
        assert h2 == heads and sorted(n2) == sorted(nodes)


def _leaves_of(st):
    return [hashlib.sha256(b"\x00" + bytes.fromhex(r[0])).digest()
            for r in st.conn.execute("SELECT event_hash FROM events ORDER BY seq")]


def test_appends_of_any_batch_size_store_exactly_the_complete_blocks(db):
    st = Store.open(db)
    rng = random.Random(5)
    envs = list(synth.generate(1500, seed=5))
    i = 0
    while i < len(envs):
        k = rng.choice([1, 2, 7, 255, 256, 257, 300])
        st.append(envs[i:i + k])
        i += k
    leaves = _leaves_of(st)
    stored = {(lv, idx): h for lv, idx, h in st.conn.execute("SELECT level, idx, hash FROM merkle_nodes")}
    assert stored == {(8, b): M.fold(leaves[b * 256:(b + 1) * 256]) for b in range(len(leaves) // 256)}
    tree = M.StoredTree(st.conn, len(leaves))
    assert tree.root() == M.mth(leaves) and tree.compact().root() == M.mth(leaves)
    assert not tree.recomputed
    for m in (0, 1, 255, 256, 700, 1023, 1024, len(leaves) - 1):
        assert M.root_from_inclusion(m, len(leaves), leaves[m], tree.inclusion(m)) == M.mth(leaves)
    for m in (1, 256, 513, 1499):
        assert M.verify_consistency(m, len(leaves), M.mth(leaves[:m]), M.mth(leaves), tree.consistency(m))
    st.close()


def test_every_signature_commits_to_the_merkle_head_of_its_rows(db):
    st = Store.open(db)
    key, _ = keys.create(st.device_id)
    for n in (10, 300, 1):
        st.append(list(synth.generate(n, seed=n)))
        cp = checkpoint.create(st, key)
        assert cp.merkle == M.mth(_leaves_of(st)).hex() and cp.size == st.count()
        assert checkpoint.parse(checkpoint.read_outside(st.device_id)).merkle == cp.merkle
    st.close()
    p = run_attempt(["verify", "--json", "--db", db])
    assert p.returncode == 0 and json.loads(p.stdout)["checkpoints"] == 3


def test_a_file_signed_before_the_tree_gets_its_head_and_nodes_at_its_next_signature(db):
    """An old file: checkpoints without a `merkle` line, no stored nodes. Verify accepts the
    old notes; the next signature reads every row (checked against the chain), signs the head
    and stores the nodes, after which appends keep them."""
    st = Store.open(db)
    key, _ = keys.create(st.device_id)
    st.append(list(synth.generate(700, seed=1)))
    st.conn.execute("DELETE FROM merkle_nodes")
    size, head = st.head()
    note = checkpoint.sign(key, st.device_id, size, head, "2026-01-01T00:00:00.000000Z")
    assert "merkle" not in note and checkpoint.parse(note).merkle is None
    st.conn.execute("INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) VALUES (?,?,?,?,?)",
                    (size, head, "2026-01-01T00:00:00.000000Z", key.identity, note))
    checkpoint._write_outside(st.device_id, note)
    st.close()
    p = run_attempt(["verify", "--db", db])
    assert p.returncode == 0, p.stdout
    assert b"not stored yet" in p.stderr  # the nodes the old file lacks
    st = Store.open(db)
    st.append(list(synth.generate(60, seed=2)))
    cp = checkpoint.create(st, key)
    leaves = _leaves_of(st)
    assert cp.merkle == M.mth(leaves).hex()
    assert M.stored_blocks(st.conn) == len(leaves) // 256 == 2
    st.append(list(synth.generate(300, seed=3)))  # the append path has taken over
    assert M.stored_blocks(st.conn) == 4
    st.close()
    p = run_attempt(["verify", "--db", db])
    assert p.returncode == 0 and b"not stored yet" not in p.stderr, (p.stdout, p.stderr)


@needs_shell
def test_an_edited_node_is_a_problem_and_the_next_signer_does_not_trust_it(db):
    st = Store.open(db)
    key, _ = keys.create(st.device_id)
    st.append(list(synth.generate(600, seed=4)))
    checkpoint.create(st, key)
    st.close()
    tamper(db, "UPDATE merkle_nodes SET hash = zeroblob(32) WHERE level = 8 AND idx = 1")
    p = run_attempt(["verify", "--json", "--db", db])
    rep = json.loads(p.stdout)
    assert p.returncode == 1 and [x["kind"] for x in rep["problems"]] == ["merkle_node"], rep
    assert "seq=257..512" in rep["problems"][0]["message"]
    st = Store.open(db)
    st.append(list(synth.generate(5, seed=6)))
    cp = checkpoint.create(st, key)  # the stored nodes do not reproduce the signed head: rows read instead
    assert cp.merkle == M.mth(_leaves_of(st)).hex()
    st.close()


@needs_shell
def test_a_checkpoint_signing_a_head_the_events_do_not_make_is_a_problem(db):
    st = Store.open(db)
    key, _ = keys.create(st.device_id)
    st.append(list(synth.generate(40, seed=8)))
    size, head = st.head()
    forged = checkpoint.sign(key, st.device_id, size, head, "2026-01-01T00:00:00.000000Z", "ab" * 32)
    st.close()
    tamper(db, f"INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) VALUES "
               f"({size}, '{head}', '2026-01-01T00:00:00.000000Z', '{key.identity}', '{forged}')")
    p = run_attempt(["verify", "--json", "--db", db])
    rep = json.loads(p.stdout)
    assert p.returncode == 1 and "merkle_head" in {x["kind"] for x in rep["problems"]}, rep


def test_notes_with_unknown_extension_lines_parse_and_bad_ones_do_not():
    body = "attemptdb.local/x\n5\n" + "A" * 43 + "=\ntime t\n"
    sig = "\n\u2014 id_x " + "A" * 91 + "=\n"
    assert checkpoint.parse(body + "future value\n" + sig).merkle is None
    assert checkpoint.parse(body + "merkle " + "B" * 43 + "=\n" + sig).merkle == base64.b64decode("B" * 43 + "=").hex()
    for bad in (body + "merkle nope\n", body + "merkle " + "B" * 40 + "==\n",
                body + "merkle " + "B" * 43 + "=\nmerkle " + "B" * 43 + "=\n",
                body.replace("\n5\n", "\n05\n"), body.replace("\n5\n", "\n+5\n")):
        with pytest.raises(Exception) as e:
            checkpoint.parse(bad + sig)
        assert getattr(e.value, "code", None) == "checkpoint.malformed"
