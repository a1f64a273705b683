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
from attemptdb.store import Store

LONG = os.environ.get("ATTEMPTDB_LONG") == "1"
NAMES = scenario.names()
BUILT = {n: scenario.build(scenario.load(n)) for n in NAMES}
ALL_EVENTS = [e for n in NAMES for e in BUILT[n].events]

settings.register_profile("ci", max_examples=4, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
PROFILE = "long" if LONG else "ci"


def state_of(envs, path):
    """Append `envs` one by one to a fresh file; its portable projection state."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    s = Store.open(path)
    try:
        for e in envs:
            s.append([dict(e)])
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
