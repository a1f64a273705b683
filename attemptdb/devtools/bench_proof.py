"""`attempt bench proof`: how long proving one event takes in a large history (the original's
workload shape, built through the real ingest path, so the Merkle tree's nodes are the ones
appends keep).

Figures: the first signature of the whole history (it verifies every row and computes the
tree head; a file written before the tree pays it once), `prove` in this process for events
spread over the log (median, p95, max), `verify-proof` in this process, and `attempt prove`
as a fresh process against `attempt --version` in the same run. Never timed assertions in
tests. `reuse` keeps the history in a file (and its signing key beside it, in FILE.keys/) and
reuses it when it holds the asked-for number of events.
"""

import json
import os
import random
import shutil
import statistics
import tempfile
import time


def _count(path: str) -> int:
    from ..errors import AttemptError
    from ..store.database import Store
    try:
        st = Store.open(path, readonly=True)
    except AttemptError:
        return -1
    try:
        return st.count()
    finally:
        st.close()


def _compile() -> None:
    """Bytecode for the measured processes (a checkout run without it compiles every time)."""
    import compileall
    try:
        compileall.compile_dir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), quiet=2)  # the package
    except OSError:
        pass


def run(events: int = 1_450_000, reuse: str | None = None, runs: int = 21, seed: int = 1) -> dict:
    from ..integrity import checkpoint, keys, proof
    from ..store.database import Store
    from .bench import attempt_exe
    from .bench_query import Launcher, build_history
    tmp = tempfile.mkdtemp(prefix="attempt-bench-proof-")
    old_keys = os.environ.get("ATTEMPTDB_KEY_DIR")
    try:
        path = reuse or os.path.join(tmp, "history.db")
        key_dir = (reuse + ".keys") if reuse else os.path.join(tmp, "keys")
        if not (reuse and os.path.exists(path) and _count(path) == events):
            shutil.rmtree(key_dir, ignore_errors=True)
            build_history(path, events, seed)
        os.makedirs(key_dir, mode=0o700, exist_ok=True)
        os.environ["ATTEMPTDB_KEY_DIR"] = key_dir  # never the user's keys
        st = Store.open(path)
        try:
            key, _ = keys.create(st.device_id)
            st.set_meta("public_key", key.public_b64)
            t0 = time.perf_counter()
            signed = checkpoint.create(st, key, adopt=True)
            sign_s = time.perf_counter() - t0 if signed is not None else None
            size = st.head()[0]
            rng = random.Random(seed)
            seqs = sorted({1, size, (size + 1) // 2} | {rng.randint(1, size) for _ in range(max(0, runs - 3))})
            ids = [r[0] for s in seqs for r in st.conn.execute("SELECT event_id FROM events WHERE seq = ?", (s,))]
            proof.prove(st, ids[0])  # warm the caches once
            prove_t, verify_t, sizes, paths = [], [], [], []
            for eid in ids:
                t0 = time.perf_counter()
                doc = proof.prove(st, eid)
                prove_t.append(time.perf_counter() - t0)
                data = json.dumps(doc).encode()
                t0 = time.perf_counter()
                rep = proof.verify(data)
                verify_t.append(time.perf_counter() - t0)
                if not rep.ok:
                    raise RuntimeError("bench proof: a proof did not verify: " + rep.line())
                sizes.append(len(data))
                paths.append(len(doc["inclusion"]["path"]))
        finally:
            st.close()
        _compile()
        env = dict(os.environ, ATTEMPTDB_PATH=path, ATTEMPTDB_NO_DAEMON="1")
        exe = attempt_exe()
        cli, version = [], []
        with Launcher(env) as launcher:
            launcher.run(exe + ["prove", ids[0]])
            for i, eid in enumerate(ids):
                for which in (("prove", "version") if i % 2 == 0 else ("version", "prove")):
                    wall, _, status = launcher.run(exe + (["prove", eid] if which == "prove" else ["--version"]))
                    if which == "prove" and status != 0:
                        raise RuntimeError(f"bench proof: `attempt prove` exited {status}")
                    (cli if which == "prove" else version).append(wall)
        ms = lambda xs: round(statistics.median(xs) * 1000, 2)  # noqa: E731
        p95 = sorted(prove_t)[min(len(prove_t) - 1, int(0.95 * len(prove_t)))]
        return {"events": size, "proofs": len(ids),
                "first_signature_s": round(sign_s, 2) if sign_s is not None else None,
                "prove_ms_p50": ms(prove_t), "prove_ms_p95": round(p95 * 1000, 2),
                "prove_ms_max": round(max(prove_t) * 1000, 2), "verify_ms_p50": ms(verify_t),
                "path_length_max": max(paths), "proof_bytes_max": max(sizes),
                "cli_prove_wall_ms": ms(cli), "version_wall_ms": ms(version),
                "cli_ratio": round(statistics.median(cli) / statistics.median(version), 2)}
    finally:
        if old_keys is None:
            os.environ.pop("ATTEMPTDB_KEY_DIR", None)
        else:
            os.environ["ATTEMPTDB_KEY_DIR"] = old_keys
        shutil.rmtree(tmp, ignore_errors=True)
