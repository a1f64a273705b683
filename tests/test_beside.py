"""query.beside and store.readonly.companion: a statement's part read on a second connection, in
a thread, gives what it gives in line, behind the same walls, stops at the same deadline, and
leaves no connection open however it ends."""

import gc
import hashlib
import threading
import time

import apsw
import pytest
from test_attemptql_scenario import NOW, build

from attemptdb.query import execute
from attemptdb.query.beside import beside
from attemptdb.query.errors import AQLError
from attemptdb.query.result import Context
from attemptdb.store.readonly import Gate, companion, connect, lifted, pairing


@pytest.fixture(scope="module")
def scenario_db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("beside") / "attempt.db")
    build(path)
    return path


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _open_count():
    """Open connections, after collecting what earlier tests dropped (a connection closed by the
    collector mid-test would change the count)."""
    gc.collect()
    return len(apsw.connections())


def test_companion_reads_the_same_file_behind_the_same_walls(scenario_db):
    before = _digest(scenario_db)
    conn, gate = connect(scenario_db)
    other = companion(pairing(conn))
    assert other.filename == conn.filename
    assert other.authorizer is gate  # a refusal is named by the caller's gate
    assert (other.execute("SELECT count(*) FROM events").fetchone()
            == conn.execute("SELECT count(*) FROM events").fetchone())
    assert other.execute("PRAGMA query_only").fetchone()[0] == 1
    for sql in ("DELETE FROM events", "CREATE TABLE x (a)", "PRAGMA query_only = 0"):
        with pytest.raises(apsw.AuthError):
            other.execute(sql).fetchall()
    assert gate.refused  # the caller's gate saw it
    other.authorizer = None  # even without the gate, the read-only open holds
    with pytest.raises((apsw.ReadOnlyError, apsw.SQLError)):
        other.execute("DELETE FROM events").fetchall()
    with lifted(conn):  # paired while the caller's gate is lifted: a gate of its own
        lone = companion(pairing(conn))
    assert type(lone.authorizer) is Gate and lone.authorizer is not gate
    with pytest.raises(apsw.AuthError):
        lone.execute("DELETE FROM events").fetchall()
    from attemptdb.readers import content
    wall = content.authorizer(gate, include_content=False)  # MCP without content: the wall goes along
    conn.authorizer = wall
    walled = companion(pairing(conn))
    assert walled.authorizer is wall
    for c in (other, lone, walled, conn):
        c.close()
    assert _digest(scenario_db) == before


def test_no_companion_where_the_first_connection_is_not_a_plain_read_only_file(scenario_db, tmp_path):
    assert pairing(apsw.Connection(":memory:")) is None
    writer = apsw.Connection(scenario_db)
    assert pairing(writer) is None
    writer.close()
    uri = apsw.Connection(f"file:{scenario_db}?immutable=1",
                          flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    assert pairing(uri) is None
    uri.close()


def _count(ctx, table):
    return (ctx.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0], threading.get_ident(),
            (id(ctx.conn), ctx.conn.filename), len(apsw.connections()))


def test_the_part_runs_on_another_connection_in_another_thread_and_is_closed_after(scenario_db):
    conn, _ = connect(scenario_db)
    ctx = Context(conn, "", NOW)
    before = _open_count()
    with beside(ctx, _count, "attempts") as part:
        mine = _count(ctx, "attempts")
        theirs = part.result()
    assert theirs[0] == mine[0] > 0 and theirs[1] != mine[1]  # the same rows, another thread,
    assert theirs[2][0] != id(conn) and theirs[2][1] == conn.filename  # another connection, the same file
    assert theirs[3] == before + 1
    assert _open_count() == before  # closed on the way out
    # in memory there is no second reader: the part runs in line, on the caller's connection
    mem = Context(apsw.Connection(":memory:"), "", NOW)
    with beside(mem, lambda c: (c.conn, threading.get_ident())) as part:
        assert part.result() == (mem.conn, threading.get_ident())
    conn.close()


def _fail(ctx):
    ctx.conn.execute("SELECT * FROM no_such_table").fetchall()


def test_the_parts_error_reaches_the_caller_and_the_companion_still_closes(scenario_db):
    conn, _ = connect(scenario_db)
    ctx = Context(conn, "", NOW)
    before = _open_count()
    with pytest.raises(apsw.SQLError, match="no_such_table"):
        with beside(ctx, _fail) as part:
            part.result()
    assert _open_count() == before
    conn.close()


_SLOW = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
         "SELECT count(*) FROM n WHERE i < 0")


def _forever(ctx):
    return ctx.conn.execute(_SLOW).fetchone()


def test_the_part_stops_at_the_statements_deadline(scenario_db):
    conn, _ = connect(scenario_db)
    ctx = Context(conn, "", NOW, timeout_s=0.2)
    t0 = time.monotonic()
    with pytest.raises(apsw.InterruptError):
        with beside(ctx, _forever) as part:
            part.result()
    assert time.monotonic() - t0 < 10
    conn.close()


@pytest.mark.parametrize("after", [0.0, 0.1])
def test_a_caller_that_fails_interrupts_and_closes_the_part(scenario_db, after):
    """The caller's own part ends in an error (Ctrl-C arrives as KeyboardInterrupt) while the
    companion still runs, or is still being opened (`after` 0): it is stopped, joined and closed
    before the error goes on."""
    conn, _ = connect(scenario_db)
    ctx = Context(conn, "", NOW)  # 30 s deadline: only the interrupt can stop it this soon
    before = _open_count()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with beside(ctx, _forever):
            time.sleep(after)
            raise KeyboardInterrupt
    assert time.monotonic() - t0 < 10
    assert _open_count() == before
    conn.close()


def test_state_at_reads_the_same_through_the_companion_as_in_line(scenario_db, monkeypatch):
    """STATE … AT t reads its sessions beside its work units: the rows and notes are those of
    the same statement run on one connection."""
    from attemptdb.store import readonly
    stmts = ["STATE project AT now", "STATE project AT '2026-08-28T10:30:00Z'", "WHAT IS project DOING NOW"]
    import attemptdb.query.beside as b
    made = []
    monkeypatch.setattr(b, "companion", lambda pair: made.append(readonly.companion(pair)) or made[-1])
    conn, gate = connect(scenario_db)
    two = [execute.run(conn, s, now_us=NOW, gate=gate) for s in stmts]
    assert len(made) == len(stmts) and all(m is not None for m in made), made
    monkeypatch.setattr(b, "pairing", lambda c: None)
    one = [execute.run(conn, s, now_us=NOW, gate=gate) for s in stmts]
    assert [(r.rows, r.notes) for r in two] == [(r.rows, r.notes) for r in one]
    assert any(r.rows for r in one)
    conn.close()


# --- reads split in halves, one snapshot --------------------------------------------------

@pytest.fixture(scope="module")
def units_db(tmp_path_factory):
    from test_attemptql_units import build as build_units
    path = str(tmp_path_factory.mktemp("beside-units") / "units.db")
    build_units(path)
    return path


SHOWS = ["SHOW WORK UNITS", "SHOW WORK UNITS LIMIT 3", "SHOW WORK UNITS ORDER BY started_at ASC LIMIT 3",
         "SHOW WORK UNITS FOR project = 'acme/demo'"]


def _settled(result):
    """Rows without status_reason (its idle seconds move between two reads)."""
    i = result.columns.index("status_reason")
    return [r[:i] + r[i + 1:] for r in result.rows], result.notes


def _fetches(monkeypatch):
    """(connection, statement) of every Context.fetch, in order."""
    seen = []
    real = Context.fetch

    def fetch(self, q):
        seen.append((self.conn, q))
        return real(self, q)
    monkeypatch.setattr(Context, "fetch", fetch)
    return seen


def test_show_work_units_read_in_halves_gives_what_one_connection_gives(units_db, monkeypatch):
    import attemptdb.query.beside as b
    monkeypatch.setattr(b, "MIN_SPLIT", 2)
    conn, gate = connect(units_db)
    seen = _fetches(monkeypatch)
    two = [execute.run(conn, s, gate=gate) for s in SHOWS]
    halves = [q for c, q in seen if c is not conn]
    assert len(halves) == len(SHOWS), "each statement read one half on the companion"
    monkeypatch.setattr(b, "pairing", lambda c: None)
    one = [execute.run(conn, s, gate=gate) for s in SHOWS]
    assert [_settled(r) for r in two] == [_settled(r) for r in one]
    assert len(one[0].rows) == 4 and len(one[1].rows) == 3
    assert not conn.in_transaction
    conn.close()


def test_a_half_read_in_another_snapshot_is_read_again_on_the_callers_connection(units_db, monkeypatch):
    """The companion saw another snapshot (a commit between the two reads): its half is read
    again on the caller's connection, in the caller's snapshot."""
    import attemptdb.query.beside as b
    monkeypatch.setattr(b, "MIN_SPLIT", 2)
    real_mark = b.snapshot_mark
    main = threading.get_ident()
    monkeypatch.setattr(b, "snapshot_mark", lambda c: real_mark(c) + ((threading.get_ident() == main),))
    conn, gate = connect(units_db)
    seen = _fetches(monkeypatch)
    got = execute.run(conn, "SHOW WORK UNITS", gate=gate)
    mine = [q.params for c, q in seen if c is conn]
    theirs = [q.params for c, q in seen if c is not conn]
    assert len(theirs) == 1 and theirs[0] in mine  # the companion's half, read again here
    monkeypatch.setattr(b, "pairing", lambda c: None)
    assert _settled(got) == _settled(execute.run(conn, "SHOW WORK UNITS", gate=gate))
    conn.close()


def test_state_rereads_sessions_a_companion_read_in_another_snapshot(units_db, monkeypatch):
    import attemptdb.query.beside as b
    from attemptdb.query import state
    calls = []
    real_state_at = state.state_at
    monkeypatch.setattr(state, "state_at", lambda ctx, *a: calls.append(ctx.conn) or real_state_at(ctx, *a))
    real_mark = b.snapshot_mark
    main = threading.get_ident()
    monkeypatch.setattr(state, "snapshot_mark", lambda c: real_mark(c) + ((threading.get_ident() == main),))
    conn, gate = connect(units_db)
    got = execute.run(conn, "STATE project AT now", now_us=NOW, gate=gate)
    assert len(calls) == 2 and calls[0] is not conn and calls[1] is conn
    monkeypatch.setattr(b, "pairing", lambda c: None)
    again = execute.run(conn, "STATE project AT now", now_us=NOW, gate=gate)
    assert (got.rows, got.notes) == (again.rows, again.notes)
    conn.close()


def test_a_companion_opened_before_its_parts_are_known(scenario_db):
    """`beside(ctx)` opens the companion at once; parts submitted later run on it in order, one
    submitted after the caller is done never runs, and the companion is closed either way."""
    conn, _ = connect(scenario_db)
    ctx = Context(conn, "", NOW)
    before = _open_count()
    with beside(ctx) as other:
        assert other.companion
        first = other.submit(_count, "attempts")
        second = other.submit(_count, "events")
        assert second.result()[0] == _count(ctx, "events")[0] and first.result()[0] == _count(ctx, "attempts")[0]
        assert first.result()[1] == second.result()[1] != threading.get_ident()  # one thread, in order
        assert first.result()[2] == second.result()[2]  # one connection
    with beside(ctx, _count, "attempts") as other:
        late = other.submit(_forever)  # runs after the first part; the caller leaves without it
        assert other.result()[0] > 0
    with pytest.raises((RuntimeError, apsw.InterruptError)):
        late.result()
    with beside(ctx):
        time.sleep(0.05)
    assert _open_count() == before
    mem = Context(apsw.Connection(":memory:"), "", NOW)
    with beside(mem) as other:  # no companion: a part runs in line at its result()
        assert not other.companion
        assert other.submit(lambda c: c.conn).result() is mem.conn
    conn.close()


def test_one_snapshot_for_a_block_behind_the_gate(scenario_db):
    """snapshot() holds one read transaction even though the gate refuses transaction control
    to a user's statement, and nests as a no-op."""
    from attemptdb.store.readonly import snapshot
    conn, gate = connect(scenario_db)
    with pytest.raises(apsw.AuthError):
        conn.execute("BEGIN")
    with snapshot(conn):
        assert conn.in_transaction
        with snapshot(conn):
            conn.execute("SELECT count(*) FROM events").fetchone()
        assert conn.in_transaction
    assert not conn.in_transaction and conn.authorizer is gate
    with pytest.raises(ValueError):  # the block's error goes on; the transaction ends with it
        with snapshot(conn):
            conn.execute("SELECT count(*) FROM events").fetchone()
            raise ValueError("stopped")
    assert not conn.in_transaction and conn.authorizer is gate
    conn.close()


def test_a_split_read_stopped_at_its_deadline_leaves_no_transaction(units_db, monkeypatch):
    """A long-lived reader (MCP, the web UI) reuses its connection: a statement that ran past
    its time limit leaves it outside any transaction, with nothing left open beside it."""
    import attemptdb.query.beside as b
    monkeypatch.setattr(b, "MIN_SPLIT", 2)
    conn, gate = connect(units_db)
    before = _open_count()
    real = Context.fetch

    def stopped(self, q):  # the caller's own read is the one that runs past the limit
        if self.conn is conn:
            raise AQLError("AQL0501", "the statement ran past its time limit and was stopped")
        return real(self, q)
    monkeypatch.setattr(Context, "fetch", stopped)
    for text in ("SHOW WORK UNITS", "STATE project AT '2026-08-28T10:30:00Z'"):
        with pytest.raises(AQLError) as e:
            execute.run(conn, text, gate=gate)
        assert e.value.code == "AQL0501" and not conn.in_transaction and _open_count() == before
    conn.close()


def test_split_point_is_the_most_even_cut():
    """The first half is the prefix whose weight is nearest half the total (each side keeps a
    row), checked against every cut of random weights; no weight at all halves the rows."""
    import random

    from attemptdb.query.beside import split_point
    rng = random.Random(5)
    for _ in range(3000):
        n = rng.randrange(2, 12)
        w = [rng.choice([0, 0, 1, 2, 5, 40, 300]) for _ in range(n)]
        k = split_point(w)
        assert 1 <= k <= n - 1
        gap = [abs(2 * sum(w[:j]) - sum(w)) for j in range(1, n)]
        if sum(w):
            assert gap[k - 1] == min(gap), (w, k)
        else:
            assert k == (n + 1) // 2 or n == 2


def test_show_work_units_weighs_its_units_by_their_members(tmp_path):
    """The weights SHOW WORK UNITS splits by are the units' member counts, newest first (on
    every scenario in one file: units of one member and of several)."""
    from attemptdb.projections import scenario
    from attemptdb.query import sqlgen
    from attemptdb.query.parse import parse
    from attemptdb.store.database import Store
    path = str(tmp_path / "all.db")
    st = Store.open(path)
    st.append([dict(e) for n in scenario.names() for e in scenario.build(scenario.load(n)).events])
    st.close()
    conn, gate = connect(path)
    ctx = Context(conn, "SHOW WORK UNITS", NOW)
    plan = sqlgen.compile_show(ctx, parse("SHOW WORK UNITS").command)
    weights, _part = plan.units
    got = [r[0] for r in conn.execute(weights.sql, weights.params)]
    want = [r[0] for r in conn.execute(
        "SELECT (SELECT count(*) FROM unit_turns m WHERE m.work_unit_id = u.work_unit_id) FROM unit_index u "
        "ORDER BY u.started_at DESC, u.work_unit_id LIMIT 100")]
    assert got == want and len(got) > 1 and max(got) > 1 and min(got) == 1
    conn.close()


def test_a_spare_opened_ahead_is_the_next_companion_of_its_file(scenario_db, tmp_path, monkeypatch):
    """store.readonly.open_spare: the companion of the same file takes the spare (no second open),
    behind the caller's gate; a spare of another file, or one that failed to open, is never
    taken (the companion opens its own) and close_spares closes what was left; one core opens
    none."""
    from attemptdb.store import cores, readonly
    monkeypatch.setattr(cores, "available", lambda: 2)  # whatever this machine has
    base = _open_count()
    conn, gate = connect(scenario_db)
    opened = []
    real = readonly.connect
    monkeypatch.setattr(readonly, "connect", lambda p: opened.append(p) or real(p))
    readonly.open_spare(scenario_db)
    other = companion(pairing(conn))
    assert opened == [scenario_db] and other.filename == conn.filename and other.authorizer is gate
    assert other.execute("SELECT count(*) FROM events").fetchone() == conn.execute(
        "SELECT count(*) FROM events").fetchone()
    other.close()
    assert _open_count() == base + 1

    elsewhere = str(tmp_path / "other.db")
    build(elsewhere)
    opened.clear()
    readonly.open_spare(elsewhere)  # another file's spare: not this companion's
    readonly.open_spare(str(tmp_path / "missing.db"))  # fails in its thread, quietly
    other = companion(pairing(conn))
    assert other.filename == conn.filename
    other.close()
    assert _open_count() == base + 2  # the caller's and the other file's spare
    readonly.close_spares()  # waits for the spares still opening, closes the other file's
    assert sorted(opened) == sorted([elsewhere, str(tmp_path / "missing.db"), scenario_db])
    assert _open_count() == base + 1 and readonly._SPARES == []

    monkeypatch.setattr(cores, "available", lambda: 1)
    readonly.open_spare(scenario_db)
    assert readonly._SPARES == [] and _open_count() == base + 1
    conn.close()


def test_statements_that_read_beside_open_their_second_reader_while_the_file_opens(scenario_db, monkeypatch):
    """execute.prepare calls `open_beside` for exactly the statements whose handler reads on a
    second connection (STATE, WHAT IS, SHOW WORK UNITS; not under EXPLAIN); `attempt query`'s
    run_statement gives the same rows with the spare, and leaves no connection open."""
    from attemptdb.cli import reads
    asked = []
    for text, wanted in [("STATE project AT '2026-04-02T10:00:00Z'", True), ("WHAT IS project DOING NOW", True),
                         ("SHOW WORK UNITS", True), ("SHOW SESSIONS", False),
                         ("EXPLAIN STATE project AT '2026-04-02T10:00:00Z'", False), ("SELECT 1", False),
                         ("SHOW WORK UNITZ", False)]:
        asked.clear()
        execute.prepare(text, lambda: asked.append(text))
        assert asked == ([text] if wanted else []), text

    gc.collect()  # connections an earlier test left to the collector are not counted as this one's
    base = _open_count()
    spares = []
    from attemptdb.store import readonly
    real = readonly.open_spare
    monkeypatch.setattr(readonly, "open_spare", lambda p: spares.append(p) or real(p))
    text = "STATE project AT '2026-04-02T10:00:00Z'"
    monkeypatch.setattr(reads, "emit", lambda result, **kw: None)
    got = reads.run_statement(scenario_db, text, as_json=True)
    assert len(spares) == 1 and _open_count() == base and readonly._SPARES == []
    conn, gate = connect(scenario_db)
    try:
        want = execute.run(conn, text, gate=gate)
    finally:
        conn.close()
    assert got.rows == want.rows and got.notes == want.notes


def test_connections_open_one_at_a_time_with_sqlites_reconfiguration(scenario_db, monkeypatch):
    """A read and its spare open in two threads at once: Store.open's turning off SQLite's
    allocation counting (a shutdown and initialize, allowed only before the first connection)
    and its apsw.Connection run under one lock, so neither thread opens while the other has
    SQLite stopped."""
    from attemptdb.store import database
    seen = []
    real_stop, real_conn = database.stop_counting_allocations, database.apsw.Connection

    class Spy:
        def __call__(self, *a, **k):
            seen.append(("open", database._OPENING.locked()))
            return real_conn(*a, **k)

        def __getattr__(self, name):
            return getattr(real_conn, name)
    monkeypatch.setattr(database, "stop_counting_allocations", lambda: seen.append(
        ("stop", database._OPENING.locked())) or real_stop())
    monkeypatch.setattr(database.apsw, "Connection", Spy())
    threads = [threading.Thread(target=lambda: connect(scenario_db)[0].close()) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [("stop", True), ("open", True)] * 4
