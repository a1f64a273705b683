"""Secret redaction at the depths the parser holds (attemptdb.ingest.redaction, privacy.ingest).

A readable hook payload nested ~490 levels of arrays was stored with
`x_attemptdb_redaction_failed` and without its content and raw: the walk took two Python frames
for every list inside a list or a dict, and ran out of stack at half the parser's ~990 levels.
Now it takes one a level, and walks a value up to `MAX_DEPTH` (950) levels whatever the stack it
starts from (a value too deep for the stack left there is walked again with a stack of its own,
`_redact_deep`: the same result, pinned here against the recursive walk). Past MAX_DEPTH the
contract still fails safe, the same from any stack: the event is stored without its content,
flagged, never lost, and every stored event reads back (`events --jsonl` | `import jsonl`)."""

import json
import os
import random
import sys

import pytest
from conftest import run_attempt
from test_capture import assert_silent, capture
from test_redaction_equivalence import generated_json

from attemptdb.ingest import privacy
from attemptdb.ingest import redaction as secrets
from attemptdb.store.database import Store

TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "abcdef"  # an issuer-format token, built from parts
MARK = "[REDACTED:github_token]"


def nested(depth: int, leaf, kind: str = "list"):
    """`leaf` inside `depth` lists (or single-member objects), built without recursion."""
    v = leaf
    for i in range(depth):
        v = [v, "plain"] if kind == "list" else {"k": v, "note": "plain text"}
    return v


def leaf_of(v):
    while isinstance(v, (list, dict)):
        v = v[0] if isinstance(v, list) else v["k"]
    return v


def at_stack_depth(frames: int, fn):
    """Call `fn` from `frames` frames deeper than here (a caller with a deep stack)."""
    if frames <= 0:
        return fn()
    return at_stack_depth(frames - 1, fn)


def _identities(a, b) -> bool:
    """`a` and `b` share (or not) the same objects in the same places: a container the walk left
    unchanged is the input object itself, in both walks."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            stack.extend(zip(x.values(), y.values()))
        elif isinstance(x, list):
            stack.extend(zip(x, y))
    return True


def test_the_deep_walk_is_the_recursive_walk():
    """On the generated values the pinned tests use (secret-named members, secrets as keys,
    authorization members, placeholders), each also wrapped in more levels: same output, same
    count, the same objects kept where nothing was redacted."""
    rng = random.Random(4242)
    values = [generated_json(rng) for _ in range(1500)]
    values += [nested(rng.randrange(1, 40), v, rng.choice(["list", "dict"])) for v in values[:300]]
    values += [{"password": "hunter2-not-a-placeholder"}, {"Authorization": "Bearer abcdefghijklmnop1234"},
               {TOKEN: [TOKEN, {"api_key": "s3cr3t-value-x"}]}, [], {}, "short", TOKEN, 5, None]
    for v in values:
        c1, c2 = [0], [0]
        want = secrets._redact_json(v, c1, {})
        got = secrets._redact_deep(v, c2, {})
        assert got == want and c1 == c2, v
        assert (got is v) == (want is v)
        assert _identities(got, want)
        if isinstance(v, (list, dict)) and c1[0] == 0:
            assert got is v


@pytest.mark.parametrize("kind", ["list", "dict"])
@pytest.mark.parametrize("depth", [490, 700, 940])
def test_a_deep_value_is_redacted_not_dropped(kind, depth):
    env = {"content": {"tool_output": nested(depth, "token=" + TOKEN, kind)},
           "raw": {"tool_response": nested(depth, TOKEN, kind)}, "capture_mode": "full_sync",
           "attrs": {"hook_event_name": "PostToolUse"}}
    for frames in (0, 400):  # the hook's shallow stack, and a caller's deep one
        out = at_stack_depth(frames, lambda: privacy.ingest(env))
        assert privacy.REDACTION_FAILED_KEY not in out["attrs"], (depth, frames)
        assert leaf_of(out["raw"]["tool_response"]) == MARK
        assert leaf_of(out["content"]["tool_output"]) == "token=" + MARK
        assert TOKEN not in repr(out)


def test_a_clean_deep_value_comes_back_as_it_was():
    v = nested(900, "nothing secret here")
    counter = [0]
    assert at_stack_depth(300, lambda: secrets.redact_value(v, counter)) is v and counter == [0]


@pytest.mark.parametrize("frames", [0, 300])
def test_max_depth_is_the_bound_from_any_stack(frames):
    deepest = nested(secrets.MAX_DEPTH - 1, TOKEN)  # MAX_DEPTH containers: [[...]] and its leaf list
    assert leaf_of(at_stack_depth(frames, lambda: secrets.redact_value([deepest]))) == MARK
    with pytest.raises(secrets.TooDeep):
        at_stack_depth(frames, lambda: secrets.redact_value([[deepest]]))
    with pytest.raises(secrets.TooDeep):
        at_stack_depth(frames, lambda: secrets._redact_deep([[deepest]], [0], {}))
    with pytest.raises(RecursionError):  # TooDeep is one: callers that caught that still do
        secrets.redact_value(nested(sys.getrecursionlimit() + 100, "x"))


@pytest.mark.parametrize("frames", [0, 300])
def test_past_max_depth_the_contract_still_fails_safe(frames):
    def env(depth):
        return {"content": {"tool_output": "ok"}, "raw": {"x": nested(depth, TOKEN)},
                "capture_mode": "full_sync", "attrs": {"hook_event_name": "PostToolUse"}}
    kept = at_stack_depth(frames, lambda: privacy.ingest(env(secrets.MAX_DEPTH - 1)))
    assert privacy.REDACTION_FAILED_KEY not in kept["attrs"] and leaf_of(kept["raw"]["x"]) == MARK
    out = at_stack_depth(frames, lambda: privacy.ingest(env(secrets.MAX_DEPTH)))
    assert out["attrs"][privacy.REDACTION_FAILED_KEY] is True
    assert "content" not in out and "raw" not in out


def _payload(depth: int, kind: str) -> bytes:
    value = "[" * depth + json.dumps("token=" + TOKEN) + "]" * depth if kind == "list" else \
        '{"a":' * depth + json.dumps("token=" + TOKEN) + "}" * depth
    return ('{"hook_event_name":"PostToolUse","session_id":"s-deep","tool_name":"Bash","tool_use_id":"t-deep",'
            '"cwd":"/tmp","tool_input":{"command":"ls"},"tool_response":{"stdout":' + value + "}}").encode()


def _rows(db) -> list:
    """(kind, attrs, content_json, raw_json text or None) of every stored event: read as text,
    the deep JSON is never parsed here (the test's own stack is deeper than a hook's)."""
    st = Store.open(db, readonly=True)
    try:
        return [(k, json.loads(a), c, r) for k, a, c, r in st.conn.execute(
            "SELECT kind, attrs_json, content_json, raw_json FROM events ORDER BY seq")]
    finally:
        st.close()


def _file_bytes(db) -> bytes:
    data = b""
    for path in (db, db + "-wal"):
        if os.path.exists(path):
            with open(path, "rb") as f:
                data += f.read()
    return data


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_a_hook_payload_nested_900_levels_keeps_its_content(db, kind):
    assert_silent(capture(db, "claude-code", _payload(900, kind)))
    ((event_kind, attrs, content, raw),) = _rows(db)
    assert event_kind == "tool_call_finished"
    assert privacy.REDACTION_FAILED_KEY not in attrs
    assert content is not None and raw is not None
    data = _file_bytes(db)
    assert TOKEN.encode() not in data and MARK.encode() in data


def test_no_hook_payload_near_the_parsers_limit_is_lost(db):
    """Around the depth where the parser stops (payload_unrepresentable) and the adapter's own
    checks stop (adapter_error): every payload is one stored event, whole or flagged."""
    depths = list(range(975, 996, 2))
    for n in depths:
        assert_silent(capture(db, "claude-code", _payload(n, "list").replace(b"t-deep", f"t-{n}".encode())))
    rows = _rows(db)
    assert len(rows) == len(depths)
    for _, attrs, content, raw in rows:
        whole = privacy.REDACTION_FAILED_KEY not in attrs and attrs.get("capture_gap") is None
        assert whole or content is None, attrs
    assert TOKEN.encode() not in _file_bytes(db)


def test_every_stored_event_reads_back(db, tmp_path):
    """Whole below the bound, flagged above it: either way `attempt events --jsonl` gives lines
    `attempt import jsonl` reads (a reader's parser holds fewer levels than a hook's)."""
    depths = (947, 948, 949, 980)  # the raw payload is 2 levels deeper: 948 is MAX_DEPTH exactly
    for n in depths:
        assert_silent(capture(db, "claude-code", _payload(n, "list").replace(b"t-deep", f"t-{n}".encode())))
    kept = [privacy.REDACTION_FAILED_KEY not in attrs for _, attrs, _, _ in _rows(db)]
    assert kept == [True, True, False, False]
    lines = run_attempt(["events", "--jsonl", "--db", db])
    assert lines.returncode == 0 and lines.stdout.count(b"\n") == len(depths)
    other = str(tmp_path / "other.db")
    r = run_attempt(["import", "jsonl", "-", "--db", other, "--json"], input=lines.stdout)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["accepted"] == len(depths)
