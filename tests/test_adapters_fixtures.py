"""Our own provider fixtures: fixtures/providers/<provider>/<name>.json → <name>.expected.json.

Every event name an adapter supports (registry.SUPPORTED_EVENTS) has at least one fixture. The
expected envelope is compared as a JSON value; random (UUIDv7) event ids are stored as the nil
UUID and checked to be UUIDv7, deterministic tool-call ids are stored as they are;
adapter_version is left out. `ATTEMPTDB_UPDATE_FIXTURES=1` rewrites the expected files (review
the diff before committing).
"""

import json
import os

import pytest

from attemptdb import adapters
from attemptdb.adapters import registry
from attemptdb.model import event, ids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures", "providers")
NIL = "00000000-0000-0000-0000-000000000000"
UPDATE = os.environ.get("ATTEMPTDB_UPDATE_FIXTURES") == "1"


def fixture_context(mode="local_semantic"):
    dev = ids.derive("dev_", "fixture-tests")
    project = ids.project_identity("/Users/ana/src/shop", "https://github.com/acme/shop.git", dev)
    return adapters.Context(dev, mode, project, 1796025600000000, hook_version="test")


def payload_files():
    out = []
    for provider in sorted(os.listdir(FIXTURES)):
        d = os.path.join(FIXTURES, provider)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".json") and not name.endswith(".expected.json"):
                out.append((provider, name[:-5]))
    return out


def build(provider, name, mode="local_semantic"):
    with open(os.path.join(FIXTURES, provider, name + ".json"), "rb") as f:
        data = f.read()
    payload, gap = adapters.parse_payload(data, False)
    return adapters.build_event(provider, payload, gap, fixture_context(mode), payload_bytes=len(data))


def comparable(env):
    env = json.loads(json.dumps(env))
    env.pop("adapter_version")
    if not (env["event_id"][14] == "5"):  # a UUIDv5 tool-call id is deterministic; v7 is not
        assert env["event_id"][14] == "7", "hook events get UUIDv7 ids"
        env["event_id"] = NIL
    return env


@pytest.mark.parametrize("provider,name", payload_files(), ids="/".join)
def test_fixture_matches_expected(provider, name):
    env = build(provider, name)
    event.validate(env)
    assert list(env) == list(event.canonical(env)), "canonical key order"
    got = comparable(env)
    path = os.path.join(FIXTURES, provider, name + ".expected.json")
    if UPDATE:
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    with open(path, encoding="utf-8") as f:
        expected = json.load(f)
    assert got == expected


def test_every_supported_event_has_a_fixture():
    seen = {}
    for provider, name in payload_files():
        with open(os.path.join(FIXTURES, provider, name + ".json"), encoding="utf-8") as f:
            seen.setdefault(provider, set()).add(json.load(f).get("hook_event_name"))
    for provider, names in registry.SUPPORTED_EVENTS.items():
        missing = set(names) - seen.get(provider, set())
        assert not missing, f"{provider}: no fixture for {sorted(missing)}"


def test_every_supported_event_maps_to_a_known_kind():
    # a supported (documented) event never falls through to `unknown`
    for provider, name in payload_files():
        env = build(provider, name)
        supported = registry.SUPPORTED_EVENTS[provider]
        if env["provider_event_name"] in supported:
            assert env["kind"] != "unknown", (provider, name)


def test_fixtures_are_not_anchor_copies(shared):
    anchor_root = os.path.join(shared, "anchor", "fixtures", "providers")
    theirs = set()
    for provider in os.listdir(anchor_root):
        for name in os.listdir(os.path.join(anchor_root, provider)):
            with open(os.path.join(anchor_root, provider, name), "rb") as f:
                theirs.add(f.read())
    for provider, name in payload_files():
        for suffix in (".json", ".expected.json"):
            with open(os.path.join(FIXTURES, provider, name + suffix), "rb") as f:
                assert f.read() not in theirs
