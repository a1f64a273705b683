"""Golden parity with the original AttemptDB: every anchor fixture payload, run through
`adapters.build_event` with the harness context of reference/golden-harness.md §2, equals its
`.golden.json` as a JSON value after zeroing event_id/device_id/captured_at and leaving
adapter_version out. Skips (with a reason) where ../shared/anchor is absent."""

import json
import os

import pytest

from attemptdb import adapters
from attemptdb.model import event, ids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROVIDERS_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "anchor", "fixtures", "providers"))
NIL = "00000000-0000-0000-0000-000000000000"
HARNESS_DEVICE = "7ad45812-ed79-58c6-91d7-a7509417e0c6"


def anchor_fixtures():
    if not os.path.isdir(PROVIDERS_DIR):
        return []
    out = []
    for provider in ("claude_code", "codex", "cursor", "gemini_cli"):
        d = os.path.join(PROVIDERS_DIR, provider)
        for name in sorted(os.listdir(d)):
            if name.endswith(".json") and not name.endswith(".golden.json"):
                out.append((provider, name[:-5]))
    return out


def harness_context():
    device = ids.derive("dev_", "adapter-tests")
    assert device == HARNESS_DEVICE
    project = ids.project_identity("/home/dev/example/project", "git@github.com:example/project.git", device)
    return adapters.Context(device, "local_semantic", project, 1787904000000000, hook_version="test")


def first_difference(got, want, path="$"):
    if type(got) is not type(want):
        return f"{path}: {json.dumps(got)[:100]} != {json.dumps(want)[:100]}"
    if isinstance(got, dict):
        for k in list(got) + [k for k in want if k not in got]:
            if k not in want:
                return f"{path}.{k}: unexpected"
            if k not in got:
                return f"{path}.{k}: missing"
            d = first_difference(got[k], want[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(got, list):
        if len(got) != len(want):
            return f"{path}: {len(got)} items != {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            d = first_difference(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if got == want else f"{path}: {json.dumps(got)[:100]} != {json.dumps(want)[:100]}"


def test_the_anchor_suite_has_78_fixtures(anchor):
    assert len(anchor_fixtures()) == 78


@pytest.mark.parametrize("provider,name", anchor_fixtures(), ids="/".join)
def test_golden_parity(anchor, provider, name):
    base = os.path.join(PROVIDERS_DIR, provider, name)
    with open(base + ".json", "rb") as f:
        data = f.read()
    with open(base + ".golden.json", encoding="utf-8") as f:
        golden = json.load(f)
    payload, gap = adapters.parse_payload(data, False)
    assert gap is None
    env = adapters.build_event(provider, payload, gap, harness_context(), payload_bytes=len(data))
    event.validate(env)
    assert list(env) == list(event.canonical(env)), "envelope keys are in canonical order"
    got = json.loads(json.dumps(env))
    got["event_id"], got["device_id"], got["captured_at"] = NIL, NIL, 0
    got.pop("adapter_version")
    golden.pop("adapter_version")
    assert first_difference(got, golden) is None
