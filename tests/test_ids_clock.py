"""Identifiers and clocks (reference/capture.md §1.2–1.5, golden-harness §2, §5).

The UUIDv5 test vectors are the normative ones; Python's own `uuid.uuid5` is the independent
oracle for arbitrary names; `datetime` is the oracle for the ISO storage text."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attemptdb.model import clock, ids

NS = uuid.UUID("3b9ac08e-7f21-4b1d-8e5a-1c2d9f6e4a77")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# --- UUIDv5 -----------------------------------------------------------------------------------

VECTORS = [  # reference/capture.md §1.3
    ("ses_", ["claude_code", "abc"], "454a41e5-90f7-5286-b08b-ea2d1f7f806b"),
    ("prj_", ["claude_code", "abc"], "a73107b7-a0e0-5389-98ea-5a1cec84552c"),
    ("ses_", ["claude_code", "9f1c2b7e-3d44-4a0e-9b1a-6c7d8e9f0a1b"], "f35dc30f-10c8-5e26-8738-b66d9d51a764"),
    ("prj_", ["remote", "github.com/streamize/attemptdb"], "b2c07819-b40b-5dc6-9012-b8d1dc193b15"),
    ("prj_", ["remote", "github.com/nullarch/attemptdb"], "19ed61bb-d7f8-53bd-9d11-181f31c36663"),
    ("agt_", ["session", "f35dc30f-10c8-5e26-8738-b66d9d51a764"], "8a8cbaf9-6ead-51a9-962f-6a4ff79b0a39"),
    ("ev_", ["event-v1", "claude_code", "s", "tool_call_started", "call:c"], "85d39602-8d32-5d49-9740-c2c74daabb65"),
    ("ev_", ["event-v1", "codex", "s", "tool_call_end", "call:c"], "46f8db97-7cd5-5bed-a370-090b55d565fa"),
    # golden-harness §2 and §5
    ("dev_", ["adapter-tests"], "7ad45812-ed79-58c6-91d7-a7509417e0c6"),
    ("ses_", ["claude_code", "sess-start-1"], "d72f27a2-7a08-59e5-a307-ccc3c44ca836"),
    ("ses_", ["claude_code", "unknown"], "a58fa39d-ab35-52b1-82da-c1a669390cbb"),
    ("prj_", ["remote", "github.com/example/project"], "2c38b208-07f6-59a6-9871-ceaf11d5bf00"),
]


@pytest.mark.parametrize("prefix,parts,want", VECTORS, ids=[f"{p}{'|'.join(a)}"[:48] for p, a, _ in VECTORS])
def test_uuid5_vectors(prefix, parts, want):
    assert ids.derive(prefix, *parts) == want


def test_named_helpers_use_the_vectors():
    assert ids.session_id("claude_code", "abc") == "454a41e5-90f7-5286-b08b-ea2d1f7f806b"
    assert ids.agent_id("f35dc30f-10c8-5e26-8738-b66d9d51a764") == "8a8cbaf9-6ead-51a9-962f-6a4ff79b0a39"
    assert ids.tool_event_id("claude_code", "s", "tool_call_started", "c") == "85d39602-8d32-5d49-9740-c2c74daabb65"
    # finished and failed share the end slot
    for kind in ("tool_call_finished", "tool_call_failed"):
        assert ids.tool_event_id("codex", "s", kind, "c") == "46f8db97-7cd5-5bed-a370-090b55d565fa"
    assert ids.subagent_id("s", "a") == ids.derive("agt_", "subagent", "s", "a")
    block = ids.project_identity("/home/dev/example/project", "git@github.com:example/project.git", "x")
    assert block == {"project_id": "2c38b208-07f6-59a6-9871-ceaf11d5bf00", "root": "/home/dev/example/project",
                     "name": "example/project", "repo_remote": "github.com/example/project"}


def test_project_without_remote_derives_from_device_and_root():
    dev = "7ad45812-ed79-58c6-91d7-a7509417e0c6"
    block = ids.project_identity("/srv/work/tool", None, dev)
    assert block == {"project_id": ids.derive("prj_", "root", dev, "/srv/work/tool"),
                     "root": "/srv/work/tool", "name": "tool"}
    assert ids.project_identity("/", "nonsense", dev)["name"] == "project"
    # the device is part of the name: two devices, same root, two projects
    assert ids.project_identity("/srv/work/tool", None, ids.NIL)["project_id"] != block["project_id"]


def test_uuid5_is_type_scoped_and_verbatim():
    assert ids.derive("ses_", "a", "b") != ids.derive("prj_", "a", "b")
    # every part is preceded by 0x1F, so the split between parts matters
    assert ids.derive("ses_", "ab", "c") != ids.derive("ses_", "a", "bc")
    assert ids.derive("ses_", "a") != ids.derive("ses_", "a", "")
    # no trimming or case folding inside derive
    assert ids.derive("ses_", "claude_code", "abc ") != ids.derive("ses_", "claude_code", "abc")
    assert ids.derive("ses_", "claude_code", "ABC") != ids.derive("ses_", "claude_code", "abc")


@settings(max_examples=200, deadline=None)
@given(prefix=st.sampled_from(ids.PREFIXES), parts=st.lists(st.text(), max_size=5))
def test_uuid5_matches_python_uuid5(prefix, parts):
    name = prefix + "".join("\x1f" + p for p in parts)
    want = uuid.uuid5(NS, name)
    got = ids.derive(prefix, *parts)
    assert got == str(want)
    assert ids.is_uuid(got) and want.version == 5 and want.variant == uuid.RFC_4122


# --- remote normalisation ---------------------------------------------------------------------

@pytest.mark.parametrize("remote,want", [
    ("git@github.com:Streamize/AttemptDB.git", "github.com/streamize/attemptdb"),
    ("https://user:tok@github.com/streamize/attemptdb.git/", "github.com/streamize/attemptdb"),
    ("ssh://git@gitlab.com:2222/group/sub/repo.git", "gitlab.com/2222/group/sub/repo"),
    ("  https://github.com/streamize/attemptdb  ", "github.com/streamize/attemptdb"),
    ("git@github.com:example/project.git", "github.com/example/project"),
    ("nonsense", None),
    ("github.com/only", None),
    ("", None),
    ("   ", None),
    (None, None),
    (42, None),
])
def test_remote_normalisation(remote, want):
    assert ids.normalise_remote(remote) == want


def test_remote_credentials_never_survive():
    for r in ("https://alice:s3cret@github.com/o/r.git", "https://tok@github.com/o/r", "ssh://a@b@host.example/o/r"):
        norm = ids.normalise_remote(r)
        assert norm is not None and "@" not in norm and "s3cret" not in norm and "tok" not in norm


# --- UUIDv7 ----------------------------------------------------------------------------------

def test_uuid7_layout():
    ms = 1787904000131
    u = ids.uuid7(ms)
    assert ids.is_uuid(u)
    parsed = uuid.UUID(u)
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert int(u.replace("-", "")[:12], 16) == ms  # 48-bit big-endian Unix milliseconds
    assert u[14] == "7" and u[19] in "89ab"


def test_uuid7_now_is_fresh_and_time_ordered_by_millisecond():
    before = clock.now_us() // 1000
    many = [ids.uuid7() for _ in range(2000)]
    after = clock.now_us() // 1000
    assert len(set(many)) == len(many)  # 74 random bits each
    stamps = [int(u.replace("-", "")[:12], 16) for u in many]
    assert all(before <= s <= after for s in stamps)
    assert stamps == sorted(stamps)
    assert ids.uuid7(0)[:13] == "00000000-0000"
    assert int(ids.uuid7(2**48 - 1).replace("-", "")[:12], 16) == 2**48 - 1


def test_id_text_helpers():
    u = ids.derive("ses_", "x")
    assert ids.is_uuid(u) and not ids.is_uuid(u.upper()) and not ids.is_uuid(u + "\n")
    assert not ids.is_uuid(u.replace("-", "")) and not ids.is_uuid("ses_" + u) and not ids.is_uuid(None)
    assert ids.bare("ses_" + u) == u and ids.bare(u) == u and ids.bare(None) is None
    assert ids.prefixed("ev_", u) == "ev_" + u and ids.prefixed("ev_", None) is None
    assert ids.short("ev_" + u) == "ev_" + u[:8]


# --- the hybrid logical clock ----------------------------------------------------------------

P = clock.hlc_pack


def test_hlc_example_and_packing():
    assert clock.hlc_unpack(117172076552585216) == (1787904000131, 0)
    assert P(1787904000131, 0) == 117172076552585216
    assert clock.hlc_display(117172076552585216) == "1787904000131.00000"
    assert clock.hlc_display(P(5, 42)) == "5.00042"
    assert clock.hlc_unpack(P(2**48 - 1, 0xFFFF)) == (2**48 - 1, 0xFFFF)


def test_hlc_next_rules():
    assert clock.hlc_next(P(100, 7), 200) == P(200, 0)      # wall clock moved on
    assert clock.hlc_next(P(100, 7), 100) == P(100, 8)      # same millisecond
    assert clock.hlc_next(P(100, 7), 50) == P(100, 8)       # wall clock went back
    assert clock.hlc_next(P(100, 0xFFFE), 100) == P(100, 0xFFFF)
    assert clock.hlc_next(P(100, 0xFFFF), 100) == P(101, 0)  # logical saturated: borrow a ms
    assert clock.hlc_next(P(100, 0xFFFF), 99) == P(101, 0)
    assert clock.hlc_next(0, 1787904000131) == 117172076552585216
    assert clock.hlc_next(0, -5) == P(0, 1)                 # now is clamped at 0
    assert clock.hlc_next(P(0, 3), -1) == P(0, 4)


@settings(max_examples=200, deadline=None)
@given(start=st.integers(0, 2**40), nows=st.lists(st.integers(-10, 2**40), max_size=60))
def test_hlc_next_strictly_increases(start, nows):
    last = P(start, 0)
    for now in nows:
        nxt = clock.hlc_next(last, now)
        assert nxt > last
        lw = clock.hlc_unpack(last)[0]
        if max(now, 0) > lw:
            assert nxt == P(now, 0)
        else:  # never ahead of the last reading by more than the borrowed millisecond
            assert clock.hlc_unpack(nxt)[0] in (lw, lw + 1)
        last = nxt


def test_hlc_observe_rules():
    # wall = max(now, last.wall, remote.wall)
    assert clock.hlc_observe(P(100, 3), P(90, 9), 200) == P(200, 0)    # now wins: logical 0
    assert clock.hlc_observe(P(100, 3), P(100, 9), 50) == P(100, 10)   # equals both: max + 1
    assert clock.hlc_observe(P(100, 9), P(100, 3), 100) == P(100, 10)
    assert clock.hlc_observe(P(100, 3), P(90, 9), 50) == P(100, 4)     # equals last only
    assert clock.hlc_observe(P(90, 3), P(100, 9), 50) == P(100, 10)    # equals remote only
    assert clock.hlc_observe(P(100, 3), P(100, 9), 100) == P(100, 10)  # now ties both too
    # saturation at 0xFFFF
    assert clock.hlc_observe(P(100, 0xFFFF), P(100, 0xFFFF), 0) == P(100, 0xFFFF)
    assert clock.hlc_observe(P(100, 0xFFFF), P(90, 0), 0) == P(100, 0xFFFF)
    assert clock.hlc_observe(P(90, 0), P(100, 0xFFFF), 0) == P(100, 0xFFFF)


@settings(max_examples=300, deadline=None)
@given(lw=st.integers(0, 1000), ll=st.integers(0, 0xFFFF), rw=st.integers(0, 1000),
       rl=st.integers(0, 0xFFFF), now=st.integers(0, 1000))
def test_hlc_observe_dominates_both_clocks(lw, ll, rw, rl, now):
    last, remote = P(lw, ll), P(rw, rl)
    out = clock.hlc_observe(last, remote, now)
    w, l = clock.hlc_unpack(out)
    assert w == max(now, lw, rw) and 0 <= l <= 0xFFFF
    if l < 0xFFFF:  # below saturation the merge is strictly after both inputs
        assert out > last and out > remote
    else:
        assert out >= last and out >= remote


# --- µs timestamps and their storage text ----------------------------------------------------

def _oracle(us: int) -> str:
    return (EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0")


EDGES = [
    (clock.MIN_US, "0001-01-01T00:00:00.000000Z"),
    (clock.MIN_US + 1, "0001-01-01T00:00:00.000001Z"),
    (-1, "1969-12-31T23:59:59.999999Z"),
    (0, "1970-01-01T00:00:00.000000Z"),
    (1, "1970-01-01T00:00:00.000001Z"),
    (951782400000000, "2000-02-29T00:00:00.000000Z"),
    (1709251199999999, "2024-02-29T23:59:59.999999Z"),
    (1787904000000000, "2026-08-28T08:00:00.000000Z"),
    (-2203891200000000, "1900-03-01T00:00:00.000000Z"),
    (clock.MAX_US - 1, "9999-12-31T23:59:59.999998Z"),
    (clock.MAX_US, "9999-12-31T23:59:59.999999Z"),
]


@pytest.mark.parametrize("us,text", EDGES, ids=[t for _, t in EDGES])
def test_iso_edges_round_trip(us, text):
    assert clock.iso(us) == text
    assert clock.iso_fast(us) == text
    assert clock.from_iso(text) == us
    assert len(text) == 27


@pytest.mark.parametrize("us", [clock.MIN_US - 1, clock.MAX_US + 1, -2**63, 2**63 - 1])
def test_iso_refuses_outside_years_1_to_9999(us):
    with pytest.raises(OverflowError):
        clock.iso(us)
    with pytest.raises(OverflowError):
        clock.iso_fast(us)


@settings(max_examples=400, deadline=None)
@given(us=st.integers(clock.MIN_US, clock.MAX_US))
def test_iso_round_trip_everywhere_in_range(us):
    text = clock.iso(us)
    assert text == _oracle(us)
    assert clock.iso_fast(us) == text
    assert clock.from_iso(text) == us


@settings(max_examples=200, deadline=None)
@given(a=st.integers(clock.MIN_US, clock.MAX_US), b=st.integers(clock.MIN_US, clock.MAX_US))
def test_text_order_is_time_order(a, b):
    assert (clock.iso(a) < clock.iso(b)) == (a < b)


@settings(max_examples=400, deadline=None)
@given(us=st.integers(clock.MIN_US, clock.MAX_US))
def test_the_storage_form_is_read_without_datetime_as_datetime_reads_it(us):
    """clock._storage_text_us (from_iso's fast path) agrees with datetime on every storage text
    and on its whole-second `…Z` form."""
    text = clock.iso(us)
    assert clock._storage_text_us(text) == us
    whole = text[:19] + "Z"
    want = (datetime.fromisoformat(whole[:-1] + "+00:00") - datetime(1970, 1, 1, tzinfo=timezone.utc)) \
        // timedelta(microseconds=1)
    assert clock._storage_text_us(whole) == want


@pytest.mark.parametrize("text", ["2026-02-30T00:00:00Z", "2026-13-01T00:00:00.000000Z", "2026-01-01T24:00:00Z",
                                  "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z", "\uff12026-01-01T00:00:00Z",
                                  "2026-01-01T00:00:00.00000aZ", "0000-01-01T00:00:00Z"])
def test_a_text_that_is_not_a_valid_storage_form_is_left_to_datetime(text):
    assert clock._storage_text_us(text) is None
    with pytest.raises(ValueError):
        clock.from_iso(text)


def test_from_iso_accepts_offsets_naive_and_dates():
    base = 1787904000000000  # 2026-08-28T08:00:00Z
    assert clock.from_iso("2026-08-28T08:00:00Z") == base
    assert clock.from_iso("2026-08-28T08:00:00z") == base
    assert clock.from_iso("2026-08-28T10:00:00+02:00") == base
    assert clock.from_iso("2026-08-28T08:00:00") == base            # naive = UTC
    assert clock.from_iso(" 2026-08-28T08:00:00.000000Z ") == base
    assert clock.from_iso("2026-08-28") == base - 8 * 3600 * 1_000_000
    with pytest.raises(ValueError):
        clock.from_iso("yesterday")


@pytest.mark.parametrize("value,want", [
    ("2026-08-28T08:00:00Z", 1787904000000000),
    (1787904000, 1787904000000000),               # seconds
    (1787904000.5, 1787904000500000),
    (1787904000131, 1787904000131000),            # milliseconds (> 1e10)
    (1787904000131123, 1787904000131123),         # microseconds (> 1e14)
    (0, None), (-5, None), (float("nan"), None), (float("inf"), None), (True, None),
    ("", None), ("not a time", None), ("1960-01-01T00:00:00Z", None), (None, None), ([1], None),
])
def test_observed_from_payload(value, want):
    assert clock.observed_from_payload(value) == want
