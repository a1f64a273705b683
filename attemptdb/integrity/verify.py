"""`attempt verify`: recompute every event hash and chain link, check every checkpoint, offline.

Invariants: reads only (a read-only connection is enough); names the FIRST problem by sequence
and event id; detects a row edited in any stored column but `retracted` (hashed columns by the
event hash, and the cuts between its spliced JSON texts by chain.spliced_ok: text moved
between those columns keeps the hash; the path columns derived from the hashed paths by
recomputing them; the unused `content_ref`/`raw_ref` must stay NULL), deleted, inserted,
reordered, the tail truncated below a checkpoint (in the file or the copy beside the key), a
chain rewritten by someone without the key (named by the first checkpoint it breaks), missing
immutability triggers, a schema newer than the code, and any other object of the migrations
missing or rewritten, or a foreign trigger on one of their tables
(attemptdb.store.schema_integrity). Without any checkpoint a consistent rewrite cannot be
seen: a note says so.
A large file's rows are checked by worker processes on every core, in ranges
(attemptdb.integrity.bulkcheck, which leaves naming any problem to chain.check_rows), with
SQLite's integrity check as one more of their tasks, while this process does the other checks.
Findings that leave the chain intact are warnings (exit 0): stored attrs that break the bounds
every arrival path keeps now (attemptdb.integrity.attrs_bounds, in the same per-row pass).
Every artifact row holding bytes is read as `attempt artifact` reads it and re-hashed
(attemptdb.store.artifact_rows.stored_findings; one more task of the workers, or here after the
chain): bytes that are not the ones the row and the events name are a problem
(`artifact_changed`, `artifact_unreadable`) named by artifact id, with no damage mark (the rows
are not the chain; a run keeping the same output replaces them).
"""

import os

from ..model import event, ids
from ..render.termtable import plural
from ..store import schema, schema_integrity
from . import attrs_bounds, bulkcheck, chain, checkpoint, keys, merkle

_TRIGGERS = ("events_no_update", "events_no_delete")

# the first row marked retracted that no Retraction in the log covers: one naming it, its
# session, or the attempt it is a call event of (spec/projections.md §7). Retraction targets are
# read from the hashed Retraction events (the retraction_input view), not from the projection;
# only the attempt -> call events mapping comes from the projection. The kind list lets the
# (kind, retracted) index find the marked rows without reading the whole table.
_UNCOVERED_RETRACTION = f"""
WITH t AS (SELECT target_type, target FROM retraction_input WHERE target_type IS NOT NULL)
SELECT e.seq, e.event_id FROM events e
 WHERE e.kind IN ({', '.join("'" + k + "'" for k in event.KINDS)}) AND e.retracted = 1
   AND e.event_id NOT IN (SELECT target FROM t WHERE target_type = 'event')
   AND e.session_id NOT IN (SELECT target FROM t WHERE target_type = 'session')
   AND e.event_id NOT IN (
     SELECT c.start_event_id FROM t JOIN attempt_facts a ON a.attempt_id = t.target
       JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE t.target_type = 'attempt' AND c.start_event_id IS NOT NULL
     UNION ALL
     SELECT c.end_event_id FROM t JOIN attempt_facts a ON a.attempt_id = t.target
       JOIN tool_call_facts c ON c.attempt_key = a.group_key
      WHERE t.target_type = 'attempt' AND c.end_event_id IS NOT NULL)
 ORDER BY e.seq LIMIT 1
"""


class Report:
    def __init__(self):
        self.events = 0
        self.last_seq = 0
        self.gaps = {}
        self.recovery = None
        self.recorded_key = None  # the key the file records, when the key file holds another one
        self.checkpoints = 0
        self.problems: list[dict] = []
        self.warnings: list[dict] = []
        self.notes: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, kind: str, message: str, seq=None, event_id=None):
        self.problems.append(chain.problem(kind, message, seq, event_id))

    def warning(self, kind: str, message: str, **details):
        """A finding that leaves the file sound (exit 0): `kind` is its code."""
        self.warnings.append({"kind": kind, "message": message, **details})

    def as_dict(self):
        return {"ok": self.ok, "events": self.events, "checkpoints": self.checkpoints,
                "problems": self.problems, "warnings": self.warnings, "notes": self.notes}

    def line(self) -> str:
        if self.ok:
            return f"ok: {plural(self.events, 'event')}, {plural(self.checkpoints, 'checkpoint')}"
        return f"problem: {self.problems[0]['message']}"


PARALLEL_MIN = 50_000
CHUNKS_PER_WORKER = 8  # ranges per worker process: the integrity check (one task) and uneven rows balance out


def _span(st) -> tuple:
    """(first seq, last seq) of the chain, (None, None) when empty: two rowid seeks, no count."""
    return tuple(st.conn.execute("SELECT min(seq), max(seq) FROM events").fetchone())


def _workers(st, span: tuple, workers: int | None = None) -> int:
    """How many worker processes check the chain: 0 (this process checks it) unless the file
    is large and there is more than one core."""
    n = workers or (os.cpu_count() or 1)
    first, last = span
    if n < 2 or st.path == ":memory:" or first is None or last - first + 1 < PARALLEL_MIN:
        return 0
    return n


def _integrity_of(path: str) -> list[str]:
    """`integrity` through a read-only connection of its own (a worker process's task)."""
    conn = bulkcheck.connect(path)
    try:
        return integrity(conn)
    finally:
        conn.close()


def _artifacts_of(path: str | None, conn=None) -> tuple[list, str | None]:
    """(artifact_rows.stored_findings, None), or ([], what SQLite said) when it cannot read the
    artifacts or the events naming them (damage), or (None, what it said) when it cannot query
    them (the schema changed: its own check names that). A worker process's task when `path`
    is given."""
    import apsw

    from ..store import artifact_rows
    own = conn is None
    try:
        if own:
            conn = bulkcheck.connect(path)
        return artifact_rows.stored_findings(conn), None
    except (apsw.CorruptError, apsw.NotADBError) as e:
        return [], f"{e.__class__.__name__}: {_sqlite_text(e)}"
    except UnicodeDecodeError:
        return [], "text that is not UTF-8"
    except apsw.SQLError as e:  # a table or column dropped: the schema's check names it
        return None, _sqlite_text(e)
    finally:
        if own and conn is not None:
            conn.close()


def _report_artifacts(rep: Report, found: tuple[list | None, str | None]) -> None:
    findings, unreadable = found
    if findings is None:
        rep.notes.append(f"the stored artifacts were not checked: SQLite cannot query them ({unreadable})")
        return
    if unreadable is not None:
        if not any(p["kind"] == "damaged" for p in rep.problems):
            rep.problem("damaged", f"the file is damaged: SQLite cannot read its artifacts ({unreadable}); "
                        f"{DAMAGE_ADVICE}")
        return
    for shown, kind, why in findings:
        rep.problems.append({**chain.problem(kind, f"artifact {shown}: {why}"),
                             "artifact_id": shown if shown.startswith("art_") else None})


def _damaged(rep: Report, found: list[str]) -> None:
    if found:
        rep.problem("damaged", f"the file is damaged: SQLite's integrity check fails ({_sqlite_text(found[0])}"
                    f"{f', and {len(found) - 1} more' if len(found) > 1 else ''}); {DAMAGE_ADVICE}")


class _Chain:
    """The check of every row (in worker processes on a large file); with the Merkle tree's
    table, also the tree: the stored nodes are compared, and `finish` returns the heads at
    `cuts` (the sizes of the checkpoints that sign one), {size: head bytes}. Begun when made
    (the workers read while this process does the other checks), reported by `finish`.
    `with_integrity`: SQLite's integrity check runs too, as the first task of the same worker
    processes (every core works on both), reported as `_verify` would report it.
    `with_artifacts`: every stored artifact is re-hashed too (`_artifacts_of`), by the workers
    when there are any, else here after the chain (not on a damaged file)."""

    def __init__(self, st, rep: Report, span: tuple, cuts=(), workers: int = 0, with_integrity: bool = False,
                 with_artifacts: bool = False):
        self.st, self.rep, self.with_integrity, self.with_artifacts = st, rep, with_integrity, with_artifacts
        self.first, self.last = span
        self.pool = self.arts = None
        if self.first is None:
            return
        rep.last_seq = self.last
        # the Merkle tree is over a gapless chain: a recovered file (gaps a note declares) has none
        self.tree = checkpoint.has_tree(st.conn) and self.first == 1 and not checkpoint.recovered(st.conn)
        self.want = sorted({c for c in cuts if 0 < c <= self.last}) if self.tree else None
        if not workers:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        k = workers * CHUNKS_PER_WORKER
        step = (self.last - self.first + k) // k
        bounds = [(self.first + i * step, min(self.first + (i + 1) * step, self.last + 1)) for i in range(k)]
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        try:
            self.checked = self.pool.submit(_integrity_of, st.path) if with_integrity else None
            self.arts = self.pool.submit(_artifacts_of, st.path) if with_artifacts else None
            self.ranges = [self.pool.submit(bulkcheck.check_range, st.path, lo, hi, rep.gaps or None, self.want)
                           for lo, hi in bounds if lo < hi]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None

    def finish(self) -> dict:
        st, rep = self.st, self.rep
        try:
            heads = self._finish(st, rep)
            if self.arts is not None:
                _report_artifacts(rep, self.arts.result())
            elif self.with_artifacts and not any(p["kind"] == "damaged" for p in rep.problems):
                _report_artifacts(rep, _artifacts_of(None, st.conn))
            return heads
        finally:
            self.close()

    def _finish(self, st, rep: Report) -> dict:
        if self.first is None:
            if self.with_integrity:
                _damaged(rep, integrity(st.conn))
            return {}
        # an independent count (SQLite reads it from an index) while the workers read the table
        total = st.conn.execute("SELECT count(*) FROM events").fetchone()[0]
        rep.events, last = total, self.last
        if self.pool is None:
            if self.with_integrity:
                _damaged(rep, integrity(st.conn))
            acc = merkle.Accumulator(self.first - 1, self.want) if self.tree else None
            bounds = attrs_bounds.Findings()
            results = [bulkcheck.check_rows(st.conn, self.first, last + 1, acc, rep.gaps, bounds)
                       + (acc and acc.result(), bounds.result())]
        else:
            results = [f.result() for f in self.ranges]
            if self.checked is not None:
                _damaged(rep, self.checked.result())
        _attrs_bounds(rep, attrs_bounds.merged(r[3] for r in results))
        found = [r[1] for r in results if r[1]]
        if found:
            rep.problems.append(min(found, key=lambda p: p["seq"] if p["seq"] is not None else last + 1))
            return {}
        if sum(r[0] for r in results) != total:
            # SQLite can end a scan at a page whose cells it cannot reach without an error
            rep.problem("damaged", f"the file is damaged: only {sum(r[0] for r in results)} of its {total} rows "
                        f"could be read in order (SQLite stops early in the events table); {DAMAGE_ADVICE}")
            return {}
        if not self.tree:
            return {}
        heads, nodes = merkle.join([r[2] for r in results])
        _merkle_nodes(st, rep, nodes, last)
        return heads


def _attrs_bounds(rep: Report, found: attrs_bounds.Findings) -> None:
    """Stored events whose attrs break the bounds every arrival path keeps now: a warning (the
    chain is intact), naming how many and the first few, never a value."""
    if not found.count:
        return
    seq, eid, path, what = found.first[0]
    ids_ = ", ".join(f[1] for f in found.first) + (", …" if found.count > len(found.first) else "")
    rep.warning("attrs_bounds", f"{plural(found.count, 'stored event')} {'has' if found.count == 1 else 'have'} "
                f"attrs outside the bounds every arrival path keeps now (strings <= 256 UTF-8 bytes, keys <= 64, "
                f"int64, one level of nesting, <= 16 KiB; spec/canonical-event.md \"Bounds on attrs\"): {ids_}; "
                f"the first, seq={seq}, at {path}: {what}. The chain is intact, but such an event would be refused "
                "if re-imported (`import jsonl` of its line, a bundle or a sync segment holding it)",
                count=found.count, event_ids=[f[1] for f in found.first],
                first={"seq": seq, "event_id": eid, "path": path, "problem": what})


def _chain(st, rep: Report, cuts=(), workers: int | None = None, with_integrity: bool = False) -> dict:
    """`_Chain` begun and finished at once (with `workers`, or as many as there are cores)."""
    span = _span(st)
    return _Chain(st, rep, span, cuts, _workers(st, span, workers), with_integrity).finish()


def _merkle_nodes(st, rep: Report, computed: list, size: int) -> None:
    """Every stored node of the Merkle tree is the one the events make (a node is derived, but
    proofs are drawn from it); nodes not stored yet are a note (the next signature adds them)."""
    want = {(level, idx): h for level, idx, h in computed}
    for level, idx, h in st.conn.execute("SELECT level, idx, hash FROM merkle_nodes ORDER BY level, idx"):
        if want.pop((level, idx), None) != h:
            first = idx << level
            rep.problem("merkle_node", f"the stored Merkle tree node of rows seq={first + 1}..{first + (1 << level)} "
                        f"(level {level}) is not the one the events make: the merkle_nodes table was edited",
                        min(first + 1, size) if first < size else None)
            return
    if want:
        rep.notes.append(f"{len(want)} Merkle tree nodes are not stored yet (the next checkpoint stores them)")


def _retractions(st, rep: Report, triggers: set):
    """`retracted` is outside the hashed line; a mark no Retraction covers hides a fact."""
    if "events_retracted_only_set" not in triggers:
        rep.problem("trigger_missing", "trigger events_retracted_only_set is missing: events.retracted "
                    "can be cleared or set without an error")
    names = {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if not {"retraction_input", "attempt_facts", "tool_call_facts"} <= names:
        return  # a file from before the projections: nothing maintains the mark yet
    row = st.conn.execute(_UNCOVERED_RETRACTION).fetchone()
    if row:
        rep.problem("retraction_uncovered", f"row seq={row[0]} ({row[1]}) is marked retracted but no "
                    "Retraction names it, its session or its attempt: the mark hides a fact", row[0], row[1])


def _recovery(st, rep: Report, key, device: str) -> None:
    """The gaps a recovery note signed with the device key declares (attemptdb.integrity.recovery)."""
    from . import recovery
    gaps, note, untrusted = recovery.trusted_gaps(st.conn, key, device)
    if untrusted:
        rep.problem("recovery_note", "the file's recovery note (meta recovery) is not one this device's key "
                    "signed: the gaps it declares are not honoured")
        return
    if note is None:
        return
    rep.gaps, rep.recovery = gaps, note
    rep.notes.append(f"`attempt recover` rebuilt this file on {note.time}: rows {note.ranges()} were lost to "
                     "damage; the note declaring them is signed with this device's key and pins the row "
                     "after each gap (spec/recover.md)")


def _trusted_key(st, rep: Report):
    """(the key checkpoints are checked against, the key the file records when the key file holds
    another one, else None). keys.verifying_key: the device key file when it is this file's,
    knowing the keys it replaced; else the public key the file records (a note says what that
    proves). A key file holding another key is a `key_mismatch` problem, reported as that; the
    checkpoints are still checked against the key file's key (the only key trusted,
    spec/checkpoint.md: a file rewritten with an attacker's key records the attacker's), and one
    that only the recorded key verifies says so instead of "not made with this device's key"."""
    key, notes, problems = keys.verifying_key(st)
    rep.notes += notes
    for p in problems:
        rep.problem("key_mismatch", p)
    if problems:
        own = keys.load(st.device_id)
        if own is not None:
            return keys.with_history(st, own), key
    return key, None


def _check_cp(cp: checkpoint.Checkpoint, where: str, key, st, rep: Report, device: str,
              proven: int = 0, heads: dict | None = None) -> bool:
    """Check one checkpoint; True when it holds. `proven`: the largest size an earlier
    checkpoint already proved, so a mismatch is narrowed to the rows after it. `heads`: the
    Merkle heads the events make at checkpoint sizes (a signed one must be among them)."""
    if key is None:
        rep.problem("checkpoint_unverifiable", f"checkpoint of size {cp.size} ({where}) cannot be "
                    "verified: no key for this device")
        return False
    if cp.origin != checkpoint.ORIGIN_PREFIX + device:
        rep.problem("checkpoint_origin", f"checkpoint of size {cp.size} ({where}) is for another database")
        return False
    if not checkpoint.check_signature(cp, key):
        other = rep.recorded_key
        if other is not None and checkpoint.check_signature(cp, other):
            rep.problem("checkpoint_signature", f"checkpoint of size {cp.size} ({where}) is signed by {cp.signer}, "
                        f"the key the file records, not by the key file's {key.identity} (see the key_mismatch "
                        "problem: either the key file is not this database's, or the file was rewritten with "
                        "another key)")
        else:
            rep.problem("checkpoint_signature", f"checkpoint of size {cp.size} ({where}) has a bad "
                        "signature: it was not made with this device's key")
        return False
    n = rep.last_seq
    if rep.recovery is not None and rep.recovery.covers(cp.size) and not st.conn.execute(
            "SELECT 1 FROM events WHERE seq = ?", (cp.size,)).fetchone():
        rep.notes.append(f"the checkpoint of size {cp.size} ({where}) ends in a row `attempt recover` declared "
                         f"lost on {rep.recovery.time}; the rows kept before it still match")
        return True
    if cp.size > n:
        last = st.conn.execute("SELECT event_id FROM events WHERE seq = ?", (n,)).fetchone() if n else None
        after = f" after row seq={n} ({last[0]})" if last else ""
        rep.problem("truncated", f"rows seq={n + 1}..{cp.size} are missing{after}: the checkpoint of "
                    f"{cp.time} ({where}) covers {cp.size} rows, the chain has {n}; the tail was removed "
                    "or the file was rolled back", n + 1)
        return False
    row = st.conn.execute("SELECT chain_hash, event_id FROM events WHERE seq = ?", (cp.size,)).fetchone()
    if row is None or row[0] != cp.head:
        eid = row[1] if row else None
        span = f"between seq={proven + 1} and seq={cp.size}" if proven else f"up to seq={cp.size}"
        rep.problem("checkpoint_mismatch", f"row seq={cp.size} ({eid}) does not end the chain the checkpoint "
                    f"of {cp.time} ({where}) signed: history {span} was rewritten", cp.size, eid)
        return False
    if cp.merkle is not None and heads is not None and cp.size in heads and heads[cp.size].hex() != cp.merkle:
        rep.problem("merkle_head", f"the checkpoint of size {cp.size} ({where}) signs a Merkle tree head the "
                    "events up to it do not make", cp.size)
        return False
    return True


def _merkle_sizes(st) -> list:
    """The sizes of the checkpoints (in the file and beside the key) that sign a Merkle head."""
    notes = [r[0] for r in st.conn.execute("SELECT note FROM checkpoints")]
    device = st.meta("device_id")
    if ids.is_uuid(device):
        outside = checkpoint.read_outside(device)
        if outside is not None:
            notes.append(outside)
    sizes = []
    for note in notes:
        try:
            cp = checkpoint.parse(note)
        except Exception:
            continue
        if cp.merkle is not None:
            sizes.append(cp.size)
    return sizes


DAMAGE_ADVICE = ("nothing more is written to it; `attempt recover` builds a sound copy from what is "
                 "readable (spec/recover.md)")


def verify(st) -> Report:
    """Everything below, as a Report; a file SQLite cannot read is a `damaged` problem (and is
    marked so: attemptdb.integrity.damage), never an exception."""
    import apsw

    from . import damage
    try:
        rep = _verify(st)
    except (apsw.CorruptError, apsw.NotADBError) as e:
        rep = Report()
        rep.problem("damaged", f"the file is damaged: SQLite cannot read part of it ({e.__class__.__name__}: "
                    f"{_sqlite_text(e)}); {DAMAGE_ADVICE}")
    except UnicodeDecodeError:  # outside the event rows (those are named by chain.check_rows)
        rep = Report()
        rep.problem("damaged", "the file is damaged: text AttemptDB wrote as UTF-8 (its schema, settings or "
                    f"checkpoints) no longer is; {DAMAGE_ADVICE}")
    if st.path != ":memory:":
        found = [p for p in rep.problems if p["kind"] in DAMAGE_KINDS]
        if found:  # nothing is written to it until `attempt recover` (attemptdb.integrity.damage)
            damage.mark(st.path, _mark_what(found[0]), "verify")
            if found[0]["kind"] != "damaged":  # that message says it already
                rep.notes.append(f"the file is marked damaged: {DAMAGE_ADVICE}")
        elif rep.ok:  # sound after all (a mark from a passing I/O error): writes may resume
            damage.clear(st.path)
    return rep


DAMAGE_KINDS = ("damaged", "event_hash", "json_column", "derived_column", "chain", "sequence_gap", "not_utf8",
                "truncated", "checkpoint_mismatch")
"""Problems that mean the rows themselves are not what was written, or no longer what a checkpoint
signed (rolled back, a lost -wal, rows removed: `truncated`, `checkpoint_mismatch`; a signed one,
so never a forged note): the file is marked damaged. Not the others: a missing checkpoint copy, a
bad signature, a changed view or attrs out of bounds say nothing about the rows' pages."""


def _mark_what(p: dict) -> str:
    """What the mark says of the first damage problem (no content: sequence numbers and kinds)."""
    if p["kind"] == "damaged":
        return "SQLite cannot read all of it (integrity check)"
    if p["kind"] == "truncated":
        return (f"rows seq={p['seq']} on, which a checkpoint signed, are missing: the file was rolled back, "
                "its -wal lost or its tail removed")
    if p["kind"] == "checkpoint_mismatch":
        return f"row seq={p['seq']} is not the row a checkpoint signed: the file was rolled back or rewritten"
    return f"its chain does not verify at row seq={p['seq']} ({p['kind']})"


def in_use(path: str, configured: str | None = None) -> str | None:
    """Why the file at `path` was an AttemptDB in use, asked BEFORE SQLite opens it (which makes
    a -wal and -shm even when it then refuses the file): a `-wal` or `-shm` beside it (SQLite made
    them when it was a database), or it is the database this invocation uses by default
    (`configured`); None otherwise."""
    absolute = os.path.abspath(path)
    beside = [s for s in ("-wal", "-shm") if os.path.exists(absolute + s)]
    if beside:
        return f"a {beside[0]} lies beside it, so SQLite had it open as a database"
    if configured is not None and os.path.abspath(configured) == absolute:
        return "it is the database AttemptDB uses here"
    return None


def unopenable(path: str, code: str, used: str | None = None) -> Report | None:
    """The report on a file SQLite cannot open (`store.corrupt`, or `store.not_a_database` for a
    file whose header SQLite does not know), marked damaged; None when it is no damaged AttemptDB
    (the refusal stands). A malformed page is damage wherever it is. A file that is no SQLite
    file SQLite knows is damage only where an AttemptDB was in use (`used`: `in_use`'s reason);
    any other such file (a text file passed to --db) is just not an AttemptDB."""
    from . import damage
    rep = Report()
    if code == "store.corrupt":
        what = "SQLite cannot open it (a malformed page)"
        rep.problem("damaged", f"the file is damaged: SQLite cannot open it (a malformed page); {DAMAGE_ADVICE}")
    elif code == "store.not_a_database" and used is not None:
        what = "SQLite no longer reads it as a database (its header is damaged)"
        rep.problem("damaged", "the file is damaged, most likely: SQLite no longer reads it as a database (its "
                    f"header, the first 100 bytes, is not one SQLite knows), yet {used}; {DAMAGE_ADVICE}")
    else:
        return None
    damage.mark(path, what, "verify")
    return rep


def _sqlite_text(e) -> str:
    text = str(e).split(":", 1)[-1].strip()
    return "".join(ch for ch in text if ch.isprintable())[:120]


def integrity(conn) -> list[str]:
    """SQLite's own check of the file's pages and indexes (`PRAGMA integrity_check`): [] when sound,
    else its first messages."""
    rows = [r[0] for r in conn.execute("PRAGMA integrity_check(20)")]
    return [] if rows == ["ok"] else rows


def _version_hint(conn, known: int) -> str:
    """How to put back a reset schema version: the newest whose objects the file's match."""
    from ..store import schema_integrity
    for n in range(known, 0, -1):
        if not schema_integrity.differences(conn, n):
            return f"; its objects are those of version {n}: `sqlite3 FILE 'PRAGMA user_version = {n}'` puts it back"
    return "; its objects match no version of this AttemptDB: `attempt recover` builds a sound file from it"


def _verify(st) -> Report:
    rep = Report()
    c = st.conn
    known = schema.latest()
    v = st.user_version()
    span = _span(st) if v <= known else (None, None)
    # a large file's chain is checked in worker processes: SQLite's integrity check is one more
    # of their tasks (reported the same); otherwise it runs first, here
    workers = _workers(st, span)
    deferred = workers > 0
    if not deferred:
        _damaged(rep, integrity(c))
    if v > known:
        rep.problem("migrations", f"schema version {v} is newer than this code ({known})")
        return rep
    if v == 0:  # the writer refuses it (store.version_reset): every capture spools
        rep.problem("migrations", "schema version 0 (a file never written) on a file that holds AttemptDB's "
                    "tables: its `PRAGMA user_version` was changed outside AttemptDB, and every write is refused"
                    + _version_hint(c, known))
    elif v < known:
        rep.notes.append(f"schema version {v}; {known} after the next write (migrations pending); its views "
                         "and triggers are those of the AttemptDB that wrote it and were not compared")
    present = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    for t in _TRIGGERS:
        if t not in present:
            rep.problem("trigger_missing", f"immutability trigger {t} is missing: the events table "
                        "can be changed without an error")
    device = st.meta("device_id")  # read raw: Store.device_id refuses a bad one, we report it
    identified = ids.is_uuid(device)  # hostile text must never become a key or checkpoint path
    key, cuts = None, ()
    early = Report()  # what the key and a recovery note say: reported after the schema's findings
    if identified:
        key, rep.recorded_key = _trusted_key(st, early)
        _recovery(st, early, key, device)
        rep.gaps, rep.recovery = early.gaps, early.recovery
        cuts = _merkle_sizes(st)
    run = _Chain(st, rep, span, cuts, workers, deferred, True)  # the workers read while this process goes on
    try:
        for d in schema_integrity.differences(
                c, v, reported_missing=_TRIGGERS + ("events_retracted_only_set",)):
            rep.problem("schema_changed", d)
        rep.problems += early.problems
        rep.notes += early.notes
        heads = run.finish()
    finally:
        run.close()
    _retractions(st, rep, present)
    if not identified:
        rep.problem("identity", "the file's device identity (meta device_id) is missing or not a UUID: "
                    "its checkpoints cannot be checked")
        rep.problems.sort(key=lambda p: (p["kind"] != "damaged", p["seq"] is None, p["seq"] or 0))
        return rep
    from . import provenance  # other devices' events against their signed sync segments
    provenance.check(c, rep.problem, rep.notes)
    proven = 0
    for (note,) in c.execute("SELECT note FROM checkpoints ORDER BY size"):
        rep.checkpoints += 1
        try:
            cp = checkpoint.parse(note)
        except Exception:
            rep.problem("checkpoint_malformed", "a stored checkpoint is not a valid signed note")
            continue
        if _check_cp(cp, "in the file", key, st, rep, device, proven, heads):
            proven = max(proven, cp.size)
    outside = checkpoint.read_outside(device)
    if outside is not None:
        try:
            cp = checkpoint.parse(outside)
        except Exception:
            rep.problem("checkpoint_malformed", "the checkpoint kept beside the key is not a valid signed note")
        else:
            _check_cp(cp, "kept beside the key", key, st, rep, device, proven if proven < cp.size else 0, heads)
    elif rep.checkpoints and keys.load(device) is not None:
        rep.problem("checkpoint_missing", "the file has checkpoints but the copy beside the key is missing")
    if rep.events and not rep.checkpoints and outside is None:
        rep.notes.append("no signed checkpoint yet: a consistent rewrite of the whole chain would not "
                         "be detected (`attempt checkpoint` signs the head)")
    # report problems in chain order: the first bad row first
    rep.problems.sort(key=lambda p: (p["kind"] != "damaged", p["seq"] is None, p["seq"] or 0))
    return rep


def chain_only(st) -> Report:
    """Every row's hash, derived columns and link, and the Merkle tree's nodes, checked as
    verify checks them (on every core for a large file), without SQLite's integrity check or
    anything else verify does: how long the chain alone takes (`attempt bench verify`)."""
    rep = Report()
    _chain(st, rep)
    return rep


def integrity_only(path: str) -> list[str]:
    """SQLite's integrity check as verify's worker process runs it (its own read-only,
    memory-mapped connection), alone in this process (`attempt bench verify`)."""
    return _integrity_of(path)
