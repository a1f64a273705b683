"""Work-unit refresh (attemptdb/projections/units.py): its two ways of doing a step — one turn at a
time through indexes, or many at once (a rebuild: givers from one window over the project,
components labelled in one pass) — give the same state, on every scenario and on all of them
interleaved; the state equals `attempt reproject`'s; and a unit split by a hot path or a
retraction is labelled again."""

import pytest

from attemptdb.projections import rebuild, scenario, units
from attemptdb.store.database import Store

NAMES = scenario.names()
ALL = [e for n in NAMES for e in scenario.build(scenario.load(n)).events]


def unit_state(path, envs, one_by_one=True):
    st = Store.open(path)
    try:
        if one_by_one:
            for e in envs:
                st.append([dict(e)])
        else:
            st.append([dict(e) for e in envs])
        return rebuild.dump(st.conn, units.UNIT_TABLES, portable=True)
    finally:
        st.close()


@pytest.mark.parametrize("name", NAMES)
def test_bulk_and_per_turn_steps_agree(tmp_path, monkeypatch, name):
    envs = scenario.build(scenario.load(name)).events
    want = unit_state(str(tmp_path / "a.db"), envs)
    monkeypatch.setattr(units, "BULK_GIVERS", -1)
    monkeypatch.setattr(units, "FULL_RELABEL_LINKS", -1)
    assert unit_state(str(tmp_path / "b.db"), envs) == want
    assert unit_state(str(tmp_path / "c.db"), envs, one_by_one=False) == want


def test_every_scenario_interleaved_in_one_batch_equals_one_by_one(tmp_path):
    want = unit_state(str(tmp_path / "a.db"), ALL)
    assert unit_state(str(tmp_path / "b.db"), ALL, one_by_one=False) == want


def assert_kept_equals_rebuilt(st):
    """`reproject --check` is clean and a unit build from nothing gives the kept unit state."""
    rep = rebuild.reproject(st.conn, write=False)
    assert rep.clean, rep.as_dict()
    before = rebuild.dump(st.conn, units.UNIT_TABLES)
    st.conn.execute("BEGIN IMMEDIATE")
    try:
        units.rebuild(st.conn)
        after = rebuild.dump(st.conn, units.UNIT_TABLES)
    finally:
        st.conn.execute("ROLLBACK")
    assert before == after


def test_units_rebuilt_from_nothing_equal_the_kept_state(tmp_path):
    path = str(tmp_path / "a.db")
    unit_state(path, ALL)
    st = Store.open(path)
    try:
        assert_kept_equals_rebuilt(st)
    finally:
        st.close()


def test_a_retracted_session_leaves_its_unit(tmp_path):
    """Two sessions linked by a shared edited path are one unit; retracting the first leaves the
    second a unit of its own (a removed member relabels the unit), and its id follows its own
    earliest turn."""
    from attemptdb.projections import meta
    b = scenario.build(scenario.load("units_shared_path"))
    st = Store.open(str(tmp_path / "a.db"))
    try:
        st.append([dict(e) for e in b.events])
        unit = b.expand("{wu:a_p}")
        assert st.conn.execute("SELECT session_count FROM work_units WHERE work_unit_id = ?", (unit,)).fetchone() == (2,)
        sid = b.expand("{ses:claude_code:sp-a1}")
        env = meta.retraction_envelope(target=sid, target_type="session", session={
            "session_id": sid[4:], "provider_session_id": "sp-a1", "project": b.project(None)},
            reason="test", note=None, device_id=b.device_id, capture_mode="local_semantic",
            observed_at=b.at("23:00:00"))
        st.append([env])
        rows = st.conn.execute("SELECT work_unit_id, sessions FROM work_units ORDER BY started_at").fetchall()
        assert (unit,) not in [(r[0],) for r in rows]
        assert (b.expand("{wu:b_p}"), f'["{b.expand("{ses:codex:sp-b1}")}"]') in rows
        assert rebuild.reproject(st.conn, write=False).clean
    finally:
        st.close()


def test_every_evidence_id_resolves_to_an_event_and_confidence_stays_under_the_cap(tmp_path):
    """Evidence on work_units, decisions, conflicts and needs_you names stored events only, never
    an empty list; units and decisions claim at most 0.7 (inferred, never observed)."""
    import json
    st = Store.open(str(tmp_path / "a.db"))
    try:
        st.append([dict(e) for e in ALL])
        seen = {}
        for view in ("work_units", "decisions", "conflicts", "needs_you"):
            rows = st.conn.execute(f"SELECT evidence, confidence FROM {view}").fetchall()
            seen[view] = len(rows)
            for evidence, confidence in rows:
                ids = json.loads(evidence)
                assert ids, view
                for ev in ids:
                    hit = st.conn.execute("SELECT 1 FROM events WHERE event_id = ?", (ev,)).fetchone()
                    assert hit, (view, ev)
                if view in ("work_units", "decisions"):
                    assert 0 < confidence <= 0.7, (view, confidence)
        assert all(seen.values()), seen
    finally:
        st.close()


@pytest.mark.parametrize("name", NAMES)
def test_the_stored_unit_state_equals_the_view_after_every_append(tmp_path, name):
    """unit_state is kept for the units each append touched: after every event of the scenario
    (and after a session's end or first capture, which reach units through unit_state_dirty),
    the stored rows are exactly what unit_state_live computes, one per unit."""
    envs = scenario.build(scenario.load(name)).events
    st = Store.open(str(tmp_path / "a.db"))
    try:
        for i, e in enumerate(envs):
            st.append([dict(e)])
            stored = st.conn.execute("SELECT * FROM unit_state ORDER BY work_unit_id").fetchall()
            live = st.conn.execute("SELECT * FROM unit_state_live ORDER BY work_unit_id").fetchall()
            assert stored == live, (name, i, e.get("kind"))
            assert [r[0] for r in stored] == [r[0] for r in st.conn.execute(
                "SELECT work_unit_id FROM unit_index ORDER BY work_unit_id")]
    finally:
        st.close()


@pytest.mark.parametrize("name", NAMES)
def test_members_at_t_are_the_same_read_only_where_they_may_differ(tmp_path, name):
    """STATE … AT t evaluates the as-of-t expressions only for members that may read otherwise
    at t (query/units._may_differ: activity after t, a wait pending now or at t, a correction
    after t); at every instant of the scenario, and a microsecond either side, the members it
    finds are exactly those a judgement of every member finds."""
    from attemptdb.model import clock
    from attemptdb.query import units as unit_rules
    envs = scenario.build(scenario.load(name)).events
    st = Store.open(str(tmp_path / "a.db"))
    try:
        for e in envs:
            st.append([dict(e)])
        conn = st.conn
        ids = [r[0] for r in conn.execute("SELECT work_unit_id FROM unit_index ORDER BY work_unit_id")]
        params = {f"unit_{i}": u for i, u in enumerate(ids)}
        unit_in = "(" + ", ".join(f":unit_{i}" for i in range(len(ids))) + ")"
        times = sorted({clock.from_iso(t) for (t,) in conn.execute("SELECT observed_at FROM events")})
        differing = 0
        for t in times:
            for at in (t - 1, t, t + 1):
                p = dict(params, t=clock.iso(at))
                want = unit_rules.members_at(conn, unit_in, p, candidates="SELECT turn_id FROM main.unit_turns")
                assert unit_rules.members_at(conn, unit_in, p) == want, (name, clock.iso(at))
                differing += want != "{}"
        assert differing > 0 or not ids
    finally:
        st.close()


def test_a_hot_flip_redraws_only_that_paths_links_and_equals_a_rebuild(tmp_path, monkeypatch):
    """One project of six paths and many sessions: paths turn hot and cold again as sessions
    come. A turn on a flipped path that nothing else marked re-draws only its link on that path
    (temp.unit_f), and the state still equals a build from nothing and `reproject`'s."""
    from attemptdb.devtools import synth
    monkeypatch.setattr(synth, "PROJECTS", 1)
    monkeypatch.setattr(synth, "PATHS_PER_PROJECT", 6)
    partial = []
    real = units.refresh

    def spy(conn):
        class Counting:
            def execute(self, sql, *args):
                got = conn.execute(sql, *args)
                if sql == units._sql("flipped_links"):
                    partial.append(conn.execute("SELECT count(*) FROM temp.unit_f").fetchone()[0])
                return got

            def __getattr__(self, name):
                return getattr(conn, name)
        return real(Counting())

    monkeypatch.setattr(units, "refresh", spy)
    st = Store.open(str(tmp_path / "a.db"))
    try:
        evs = list(synth.generate(12_000, seed=4, device_id=st.device_id))
        for i in range(0, len(evs), 100):
            st.append(evs[i:i + 100])
        assert sum(1 for n in partial if n) >= 3  # flips re-drew some turns' links in part
        assert_kept_equals_rebuilt(st)
    finally:
        st.close()
