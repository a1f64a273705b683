"""`attempt bench`: performance figures as medians and as ratios against a baseline measured
in the same run (these machines are noisy; absolute numbers alone mislead).

- ingest: import a synthetic JSONL stream into a fresh file vs a plain INSERT of the same rows
  into a bare table (same columns, no index, no trigger, no chain) with the same batching,
  page cache and checkpoint interval; both timings end after the WAL is checkpointed and
  truncated, as an import ends. The same run times each half alone (prepare-only: parse,
  validate, canonical form, privacy contract, rows, no database; write-only: those prepared
  rows into a fresh file with every projection) and reports bytes per event of the file
  and of the JSONL. Chain-only: the same import with the projections paused (each event
  only notes its session, rebuild.pause), timed to the end of its appends: parse, prepare,
  chain, row and indexes, the floor under every projection. And a bound: the JSON floor (each
  line parsed and serialised once by the C codec, nothing else, one process), and the best ratio
  any import could reach if every core did only that (`json_floor_ratio_bound`).
- verify: full verification rate against the same run's floor (SHA-256 of the same canonical
  lines read from a file), and its two big parts alone (SQLite's integrity check, the chain).
  And a bound: every row's three texts read and hashed, no check (`read_hash_seconds`, one
  process), and the best ratio to the floor a verify reading the rows and running the
  integrity check could reach on every core (`ceiling_ratio`).
- capture: the installed `attempt capture` on a realistic payload vs `python -c pass` from the
  same interpreter, interleaved.
Never used by tests as timed assertions; tests only check the JSON shape on tiny sizes.
"""

import marshal
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from ..exchange.importers.jsonl import IMPORT_CACHE_KIB, checkpoint_pages
from ..model import event
from ..store import cores
from ..store.database import Store
from . import synth

BARE_TABLE = f"CREATE TABLE bare ({', '.join(event.COLUMNS)}, event_hash, chain_hash)"


def _fresh(tmp: str, name: str) -> str:
    path = os.path.join(tmp, name)
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    return path


def _settle():
    """Flush what earlier runs left dirty in the OS page cache, so neither side of a comparison
    pays for the other's write-back (on two cores it takes a visible share of one)."""
    if hasattr(os, "sync"):
        os.sync()


def _baseline(path: str, rows_file: str, batch: int) -> float:
    import apsw
    with open(rows_file, "rb") as f:
        rows = marshal.load(f)
    conn = apsw.Connection(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    # the settings an import writes with (importers.jsonl.bulk_import): only the work differs.
    # The page size stays SQLite's default (4 KiB; the store's files have 16 KiB pages, with which
    # this same INSERT measured 1.4-1.5x faster): the baseline the ratios were always taken against
    conn.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {checkpoint_pages(conn.execute('PRAGMA page_size').fetchone()[0])}")
    conn.execute(BARE_TABLE)
    sql = f"INSERT INTO bare VALUES ({', '.join('?' * (len(event.COLUMNS) + 2))})"
    t0 = time.perf_counter()
    for i in range(0, len(rows), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows[i:i + batch])
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # as an import ends (jsonl.bulk_import)
    dt = time.perf_counter() - t0
    conn.close()
    return dt


def _file_bytes(path: str) -> int:
    """The database as it rests: the file and whatever WAL is left beside it."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(path + suffix)
        except OSError:
            pass
    return total


def _prepare_only(tmp: str, src: str, batch: int, out: str | None = None) -> float:
    """The preparing half alone, in this process: parse, validate, canonical form, the ingestion
    contract, the row and line pieces (importers.jsonl.prepared_batches); no database. With
    `out` (an untimed warm-up), the prepared batches are written there (marshal) for the
    write-only side to read back."""
    from ..exchange.importers.jsonl import prepared_batches
    from ..ingest.contract import ingest_for
    st = Store.open(_fresh(tmp, "mode.db"))  # only its capture mode is read
    ingest = ingest_for(st)
    f = open(out, "wb") if out else None
    try:
        t0 = time.perf_counter()
        with open(src, "rb") as stream:
            for items in prepared_batches(stream, ingest, batch):
                if f is not None:  # as a preparer sends a batch: one message of its own
                    data = marshal.dumps([p.as_tuple() for p in items])
                    f.write(len(data).to_bytes(8, "little") + data)
        dt = time.perf_counter() - t0
    finally:
        if f is not None:
            f.close()
        st.close()
    return dt


def _write_only(path: str, prepared: str, batches: int) -> float:
    """The writing half alone: prepared batches (read back from a file) appended into a fresh
    file with every projection, with the import's settings and final checkpoint. Each batch is
    read whole and decoded with `marshal.loads`, as the writer decodes a preparer's message
    (`marshal.load` on a file reads object by object: ~24 us an event more, measured)."""
    from ..exchange.importers.jsonl import bulk_import
    st = Store.open(path)
    try:
        with open(prepared, "rb") as f:
            t0 = time.perf_counter()
            with bulk_import(st):
                for _ in range(batches):
                    data = f.read(int.from_bytes(f.read(8), "little"))
                    st.append_prepared([event.Prepared.from_tuple(t) for t in marshal.loads(data)])
            dt = time.perf_counter() - t0
    finally:
        st.close()
    return dt


def _chain_only(path: str, src: str, batch: int) -> float:
    """The import of `src` into a fresh file with the projections paused, to the end of its
    appends (the file is scratch: the replay a resume would run is not timed, nor run)."""
    from ..exchange.importers.jsonl import import_file
    from ..projections import rebuild
    st = Store.open(path)
    try:
        rebuild.pause(st.conn)
        t0 = time.perf_counter()
        import_file(st, src, batch=batch)
        return time.perf_counter() - t0
    finally:
        st.close()


def _json_floor(src: str) -> float:
    """Every line of `src` parsed and serialised again by the C codec (fastjson), nothing else, in
    this process: a lower bound on preparing it (an import must at least parse each line and
    write its canonical text)."""
    from ..model import fastjson
    loads, dumps = fastjson.loads, fastjson.dumps
    with open(src, "rb") as f:
        t0 = time.perf_counter()
        for line in f:
            dumps(loads(line))
        return time.perf_counter() - t0


def ingest(events: int, *, seed: int = 1, repeat: int = 3, batch: int | None = None, keep: str | None = None,
           halves: bool = True) -> dict:
    """Import `events` synthetic events into a fresh file `repeat` times, interleaved with the
    baseline; medians of both and their ratio. With `halves`, the same run also times the
    preparing half alone and the writing half alone (each as a ratio to the plain INSERT too),
    and reports the bytes per event of the file and of the JSONL it was imported from."""
    from ..exchange.importers.jsonl import BATCH, import_file
    batch = batch or BATCH  # the import's own transaction size, the baseline's too
    tmp = tempfile.mkdtemp(prefix="attempt-bench-")
    try:
        src = os.path.join(tmp, "events.jsonl")
        size = synth.write_jsonl(src, events, seed)
        # The baseline's rows wait in a file, read back only for the baseline: an `attempt
        # import` process holds no such list, and a gigabyte of live rows in this one made the
        # import's writer ~10 us an event slower at 200k events (measured; most likely
        # copy-on-write faults once the preparer is forked).
        rows_file = os.path.join(tmp, "rows.marshal")
        rows = []
        for env in synth.generate(events, seed):
            env["source_seq"], env["hlc"], env["ingested_at"] = 1, 1, env["captured_at"]
            rows.append(event.to_row(env) + ("0" * 64, "0" * 64))
        with open(rows_file, "wb") as f:
            marshal.dump(rows, f)
        del rows
        ours, base, prep, write, chained, floors = [], [], [], [], [], []
        prepared = os.path.join(tmp, "prepared.marshal")
        nbatches = (events + batch - 1) // batch
        file_bytes = None
        if halves:  # the prepared batches the write-only side reads back (a warm-up, untimed)
            _prepare_only(tmp, src, batch, prepared)
        for _ in range(repeat):
            bare = _fresh(tmp, "bare.db")
            _settle()
            base.append(_baseline(bare, rows_file, batch))
            path = _fresh(tmp, "attempt.db")
            st = Store.open(path)
            _settle()
            t0 = time.perf_counter()
            rep = import_file(st, src, batch=batch)
            ours.append(time.perf_counter() - t0)
            st.close()
            if rep.accepted != events:
                raise RuntimeError(f"bench import stored {rep.accepted} of {events} events")
            file_bytes = _file_bytes(path)
            if keep:
                shutil.copyfile(path, keep)
            if halves:
                _settle()
                prep.append(_prepare_only(tmp, src, batch))
                wpath = _fresh(tmp, "written.db")
                _settle()
                write.append(_write_only(wpath, prepared, nbatches))
                cpath = _fresh(tmp, "chain.db")
                _settle()
                chained.append(_chain_only(cpath, src, batch))
                floors.append(_json_floor(src))
        t_ours, t_base = statistics.median(ours), statistics.median(base)
        out = {"events": events, "bytes": size, "repeat": repeat, "batch": batch,
               "seconds": round(t_ours, 3), "events_per_s": round(events / t_ours),
               "baseline_seconds": round(t_base, 3), "baseline_rows_per_s": round(events / t_base),
               "ratio": round(t_base / t_ours, 3)}
        if halves:
            t_prep, t_write, t_chain = statistics.median(prep), statistics.median(write), statistics.median(chained)
            t_json, n_cores = statistics.median(floors), cores.available()
            out.update({
                "prepare_seconds": round(t_prep, 3), "prepare_events_per_s": round(events / t_prep),
                "prepare_ratio": round(t_base / t_prep, 3),
                "write_seconds": round(t_write, 3), "write_events_per_s": round(events / t_write),
                "write_ratio": round(t_base / t_write, 3),
                "chain_only_seconds": round(t_chain, 3), "chain_only_events_per_s": round(events / t_chain),
                "chain_only_ratio": round(t_base / t_chain, 3),
                "json_floor_seconds": round(t_json, 3), "cores": n_cores,
                "json_floor_ratio_bound": round(t_base / (t_json / n_cores), 3),
                "file_bytes": file_bytes, "file_bytes_per_event": round(file_bytes / events, 1),
                "jsonl_bytes_per_event": round(size / events, 1),
                "file_to_jsonl": round(file_bytes / size, 3)})
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _dump_lines(st, out: str) -> int:
    """The canonical line of every stored row (event.line_from_row, what verify hashes), one
    per line, into `out`; returns the bytes written."""
    from ..integrity.chain import NCOL, SELECT_RANGE
    n = 0
    with open(out, "wb") as f:
        for r in st.conn.execute(SELECT_RANGE, (0, 1 << 62)):
            b = event.line_from_row(r[1:NCOL + 1]).encode("utf-8") + b"\n"
            n += len(b)
            f.write(b)
    return n


def _floor(lines_file: str) -> float:
    """The floor of a verification: SHA-256 of every canonical line, read from a file, in one
    process (no database, no canonical form to rebuild, no chain)."""
    from ..integrity.chain import bulk_sha256
    sha = bulk_sha256()
    t0 = time.perf_counter()
    with open(lines_file, "rb", buffering=1 << 20) as f:
        for line in f:
            sha(line[:-1]).hexdigest()
    return time.perf_counter() - t0


def _read_hash(st) -> float:
    """Every row's three large texts read (as verify's bulk pass reads them) and hashed, no
    check, in this process: what a verify that reads the rows costs before it checks anything."""
    from ..integrity.bulkcheck import connect
    from ..integrity.chain import bulk_sha256
    sha = bulk_sha256()
    conn = connect(st.path)
    try:
        t0 = time.perf_counter()
        for a, c, r in conn.execute("SELECT CAST(attrs_json AS BLOB), CAST(content_json AS BLOB), "
                                    "CAST(raw_json AS BLOB) FROM events ORDER BY seq"):
            h = sha(a or b"")
            if c is not None:
                h.update(c)
            if r is not None:
                h.update(r)
            h.digest()
        return time.perf_counter() - t0
    finally:
        conn.close()


def verify_rate(events: int, *, seed: int = 1, repeat: int = 3, db: str | None = None) -> dict:
    """Full `verify` over a synthetic history (or an existing file `db`); median rate, and the
    same run's floor: SHA-256 of the same canonical lines read from a file, in one process
    (`floor_ratio` = floor seconds / verify seconds; 1.0 would be verify at the floor). The
    same run times verify's two big parts alone, as verify runs them: SQLite's integrity check
    (`integrity_seconds`, one process: verify gives it one core of its workers) and the chain
    (`chain_seconds`: every row's hash, derived columns and link and the Merkle tree, on every
    core; `chain_floor_ratio` against the same floor)."""
    from ..exchange.importers.jsonl import import_file
    from ..integrity.verify import chain_only, integrity_only, verify
    tmp = tempfile.mkdtemp(prefix="attempt-bench-")
    try:
        if db is None:
            db = os.path.join(tmp, "attempt.db")
            src = os.path.join(tmp, "events.jsonl")
            synth.write_jsonl(src, events, seed)
            st = Store.open(db)
            import_file(st, src)
        else:
            st = Store.open(db, readonly=True)
        lines_file = os.path.join(tmp, "lines")
        line_bytes = _dump_lines(st, lines_file)
        times, floors, integrity, chain, reads = [], [], [], [], []
        n = 0
        for _ in range(repeat):
            floors.append(_floor(lines_file))
            t0 = time.perf_counter()
            rep = verify(st)
            times.append(time.perf_counter() - t0)
            n = rep.events
            if not rep.ok:
                raise RuntimeError("bench verify found a problem: " + rep.line())
            t0 = time.perf_counter()
            integrity_only(st.path)
            integrity.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            chain_only(st)
            chain.append(time.perf_counter() - t0)
            reads.append(_read_hash(st))
        st.close()
        t, tf = statistics.median(times), statistics.median(floors)
        ti, tc, tr = statistics.median(integrity), statistics.median(chain), statistics.median(reads)
        n_cores = cores.available()
        return {"events": n, "repeat": repeat, "seconds": round(t, 3), "events_per_s": round(n / t),
                "cores": n_cores, "line_bytes": line_bytes, "floor_seconds": round(tf, 3),
                "floor_events_per_s": round(n / tf), "floor_ratio": round(tf / t, 3),
                "integrity_seconds": round(ti, 3), "chain_seconds": round(tc, 3),
                "chain_floor_ratio": round(tf / tc, 3), "read_hash_seconds": round(tr, 3),
                "ceiling_ratio": round(tf / ((tr + ti) / n_cores), 3)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


CAPTURE_PAYLOAD = {
    "session_id": "bench-session-0001",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-src-app/bench-session-0001.jsonl",
    "cwd": "/home/dev/src/app",
    "permission_mode": "default",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_use_id": "toolu_bench_0001",
    "tool_input": {"command": "npm test -- --runInBand src/billing/webhook.test.ts",
                   "description": "Run the billing webhook tests"},
    "tool_response": {
        "stdout": ("PASS src/billing/webhook.test.ts\n  webhook\n    \u2713 accepts a signed event (12 ms)\n"
                   "    \u2713 rejects a bad signature (3 ms)\n    \u2713 retries on 503 (41 ms)\n") * 14
                  + "Tests: 42 passed, 42 total\nTime: 2.31 s\n",
        "stderr": "", "interrupted": False, "isImage": False, "exit_code": 0},
}


def attempt_exe() -> list[str]:
    """How to run the installed `attempt`: beside this interpreter, on PATH, else `-m`."""
    exe = os.path.join(os.path.dirname(sys.executable), "attempt")
    if os.path.exists(exe):
        return [exe]
    found = shutil.which("attempt")
    return [found] if found else [sys.executable, "-m", "attemptdb"]


def _daemon_pid(db: str, env: dict):
    from ..capture import daemon
    return daemon.pid(db, os.path.join(env["XDG_STATE_HOME"], "attemptdb"))


def _wait_for_daemon(db: str, env: dict, timeout_s: float = 5.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and _daemon_pid(db, env) is None:
        time.sleep(0.02)


def _wait_for_settled(db: str, timeout_s: float = 10.0):
    """Until the daemon has moved what it received into the file: it answers a hook once the
    event is spooled and commits right after (spec/capture-daemon.md); a spool file goes once
    its event is committed."""
    from ..capture import spool
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and spool.pending(db):
        time.sleep(0.01)


def _stop_daemon(db: str, env: dict):
    pid = _daemon_pid(db, env)
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass


def capture(runs: int = 60, *, payload: dict | None = None) -> dict:
    """Wall time of the installed hook command (`hook install`'s: `python -I -S
    …/attemptdb/__main__.py capture claude-code`; a fresh process each run, a realistic 2–4 KB
    payload on stdin, a real database) interleaved with `python -c pass`: as installed (through
    the capture daemon, which the first hook starts), with ATTEMPTDB_NO_DAEMON=1 (each hook
    loads the site-packages, opens the file and runs the projection triggers itself), and
    `attempt capture claude-code` through the same daemon (the `attempt` executable: `site`)."""
    from ..model import fastjson
    template = dict(payload or CAPTURE_PAYLOAD)
    template["tool_use_id"] = "toolu_bench_%06d"

    def payload_for(i: int) -> bytes:  # a fresh call id per run: every capture stores an event
        body = dict(template, tool_use_id=template["tool_use_id"] % i)
        return fastjson.dumps(body).encode()

    data = payload_for(0)
    tmp = tempfile.mkdtemp(prefix="attempt-bench-")
    db = os.path.join(tmp, "attempt.db")
    env = dict(os.environ, ATTEMPTDB_PATH=db, XDG_STATE_HOME=os.path.join(tmp, "state"))
    env.pop("ATTEMPTDB_NO_DAEMON", None)
    # the direct hooks write a file of their own: a daemon's database is written by the daemon
    # alone (as installed), so another writer's pages do not reset its cache between requests
    direct_db = os.path.join(tmp, "direct.db")
    direct_env = dict(env, ATTEMPTDB_NO_DAEMON="1", ATTEMPTDB_PATH=direct_db)
    try:
        from ..installer.command import find_hook_executable
        cmd = find_hook_executable().argv + ["capture", "claude-code"]
        exe_cmd = attempt_exe() + ["capture", "claude-code"]
        base = [sys.executable, "-c", "pass"]
        subprocess.run(cmd, input=data, env=env, capture_output=True, check=False)  # create the file
        _wait_for_daemon(db, env)
        n = 0
        times = {"daemon": [], "direct": [], "python": [], "attempt": []}
        counts = {k: 0 for k in times}
        order = list(times)
        for i in range(runs):
            k = i % len(order)
            for which in order[k:] + order[:k]:
                if which == "python":
                    t0 = time.perf_counter()
                    subprocess.run(base, capture_output=True)
                    times[which].append(time.perf_counter() - t0)
                    continue
                n += 1
                counts[which] += 1
                body = payload_for(n)
                t0 = time.perf_counter()
                p = subprocess.run(exe_cmd if which == "attempt" else cmd, input=body,
                                   env=direct_env if which == "direct" else env, capture_output=True)
                times[which].append(time.perf_counter() - t0)
                if p.returncode != 0 or p.stdout:
                    raise RuntimeError("attempt capture misbehaved during the benchmark")
        served_by = _daemon_pid(db, env)
        _wait_for_settled(db)
        st = Store.open(db, readonly=True)
        stored = st.count()
        st.close()
        st = Store.open(direct_db, readonly=True)
        stored_direct = st.count()
        st.close()
        if stored != counts["daemon"] + counts["attempt"] + 1 or stored_direct != counts["direct"]:
            raise RuntimeError(f"attempt capture stored {stored} + {stored_direct} of {n + 1} events during the benchmark")
        stored += stored_direct
        cap, direct = sorted(times["daemon"]), sorted(times["direct"])
        p50, d50, py50, a50 = (statistics.median(times[k]) for k in ("daemon", "direct", "python", "attempt"))
        return {"runs": runs, "payload_bytes": len(data), "events_stored": stored,
                "capture_p50_ms": round(p50 * 1000, 2),
                "capture_p95_ms": round(cap[min(len(cap) - 1, int(0.95 * len(cap)))] * 1000, 2),
                "python_p50_ms": round(py50 * 1000, 2), "ratio_p50": round(p50 / py50, 3),
                "daemon_running": served_by is not None,
                "direct_p50_ms": round(d50 * 1000, 2),
                "direct_p95_ms": round(direct[min(len(direct) - 1, int(0.95 * len(direct)))] * 1000, 2),
                "direct_ratio_p50": round(d50 / py50, 3),
                "attempt_exe_p50_ms": round(a50 * 1000, 2), "attempt_exe_ratio_p50": round(a50 / py50, 3),
                "command": " ".join(cmd), "attempt_exe_command": " ".join(exe_cmd)}
    finally:
        _stop_daemon(db, env)
        shutil.rmtree(tmp, ignore_errors=True)
