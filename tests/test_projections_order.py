"""Arrival order does not matter: any permutation of a scenario's events (and of all scenarios
interleaved into one multi-session stream) leaves every projection table, every public view and
every `events.retracted` mark equal to the in-order result, and equal to `attempt reproject`.

Short in CI; `ATTEMPTDB_LONG=1` runs 200+ examples per property.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attemptdb.projections import rebuild, scenario
from attemptdb.store.database import Store

LONG = os.environ.get("ATTEMPTDB_LONG") == "1"
NAMES = scenario.names()
BUILT = {n: scenario.build(scenario.load(n)) for n in NAMES}
ALL_EVENTS = [e for n in NAMES for e in BUILT[n].events]

settings.register_profile("ci", max_examples=4, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
PROFILE = "long" if LONG else "ci"


def state_of(envs, path, batches=None):
    """Append `envs` to a fresh file, one by one or in batches of the given sizes (one INSERT
    each, late events replayed once per batch); its portable projection state."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    s = Store.open(path)
    try:
        if batches is None:
            for e in envs:
                s.append([dict(e)])
        else:
            i = 0
            for n in batches:
                s.append([dict(e) for e in envs[i:i + n]])
                i += n
            s.append([dict(e) for e in envs[i:]])
        out = {"facts": rebuild.dump(s.conn, portable=True), "views": rebuild.dump_views(s.conn),
               "retracted": sorted(rebuild.retracted_events(s.conn))}
        rep = rebuild.reproject(s.conn, write=False)
        out["reproject_clean"] = rep.clean
        return out
    finally:
        s.close()


_BASELINES = {}


def baseline(key, envs, tmp_path):
    if key not in _BASELINES:
        _BASELINES[key] = state_of(envs, str(tmp_path / f"base-{len(_BASELINES)}.db"))
        assert _BASELINES[key]["reproject_clean"]
    return _BASELINES[key]


def assert_same(got, want):
    assert got["reproject_clean"], "the shuffled state differs from its own rebuild"
    for t in want["facts"]:
        assert got["facts"][t] == want["facts"][t], f"stored table {t} differs"
    for v in want["views"]:
        assert got["views"][v] == want["views"][v], f"view {v} differs"
    assert got["retracted"] == want["retracted"], "events.retracted differs"


@pytest.mark.parametrize("name", NAMES)
def test_each_scenario_any_arrival_order(tmp_path, name):
    envs = BUILT[name].events
    want = baseline(name, envs, tmp_path)

    @settings.get_profile(PROFILE)
    @given(st.permutations(list(range(len(envs)))))
    def prop(order):
        assert_same(state_of([envs[i] for i in order], str(tmp_path / "shuffled.db")), want)

    prop()


@pytest.mark.slow
def test_all_scenarios_interleaved_any_arrival_order(tmp_path):
    want = baseline("all", ALL_EVENTS, tmp_path)

    @settings(settings.get_profile(PROFILE), max_examples=200 if LONG else 2)
    @given(st.permutations(list(range(len(ALL_EVENTS)))))
    def prop(order):
        assert_same(state_of([ALL_EVENTS[i] for i in order], str(tmp_path / "shuffled.db")), want)

    prop()


def test_reverse_arrival_uses_replays_and_matches(tmp_path):
    """The worst order for the incremental path: every event arrives late."""
    for name in NAMES:
        envs = BUILT[name].events
        assert_same(state_of(list(reversed(envs)), str(tmp_path / "rev.db")), baseline(name, envs, tmp_path))


@pytest.mark.slow
def test_all_scenarios_in_batches_any_arrival_order(tmp_path):
    """Shuffled, and appended in batches of random sizes: a batch's late events replay their
    session once, after the batch; the state is still the in-order one."""
    want = baseline("all", ALL_EVENTS, tmp_path)
    n = len(ALL_EVENTS)

    @settings(settings.get_profile(PROFILE), max_examples=200 if LONG else 3)
    @given(st.permutations(list(range(n))), st.lists(st.integers(1, 60), max_size=12))
    def prop(order, sizes):
        assert_same(state_of([ALL_EVENTS[i] for i in order], str(tmp_path / "batched.db"), sizes), want)

    prop()


def test_late_events_of_a_batch_replay_their_session_once(tmp_path):
    """A session's second half stored first, then its first half in one batch: the batch's
    events are late, and each session is re-derived once for the batch, not once per event."""
    late_events = replayed = 0
    for name in NAMES:
        envs = BUILT[name].events
        half = len(envs) // 2
        path = str(tmp_path / f"late-{name}.db")
        s = Store.open(path)
        try:
            s.append([dict(e) for e in envs[half:]])
            known = {r[0] for r in s.conn.execute("SELECT raw_session_id FROM session_facts")}
            late_events += sum(1 for e in envs[:half] if "ses_" + e["session_id"] in known
                               and e["kind"] not in ("correction", "retraction"))
            s.conn.execute("CREATE TEMP TABLE replays (session_id)")
            s.conn.execute("CREATE TEMP TRIGGER count_replays AFTER INSERT ON main.replay_requests "
                           "BEGIN INSERT INTO replays VALUES (NEW.session_id); END")
            s.append([dict(e) for e in envs[:half]])
            replays = [r[0] for r in s.conn.execute("SELECT session_id FROM replays")]
            assert len(replays) == len(set(replays)), name
            replayed += len(replays)
            assert s.conn.execute("SELECT count(*) FROM replay_pending").fetchone()[0] == 0
            assert s.conn.execute("SELECT defer_replays FROM projection_control").fetchone()[0] == 0
        finally:
            s.close()
        assert_same(state_of(envs[half:] + envs[:half], str(tmp_path / "two.db"), [len(envs) - half]),
                    baseline(name, envs, tmp_path))
    assert replayed and late_events > 3 * replayed, (late_events, replayed)
