"""Time: microsecond timestamps, their ISO-8601 storage text, and the hybrid logical clock.

Invariants: a timestamp is signed 64-bit microseconds since the Unix epoch (UTC); its storage
text is `YYYY-MM-DDTHH:MM:SS.ffffffZ` (exactly six fractional digits), so text order is time
order; the two convert losslessly inside years 0001–9999. An HLC is `(wall_ms << 16) | logical`
(reference/capture.md §1.5) and the generator never goes backwards.
"""

import time
from datetime import datetime, timedelta, timezone

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_NAIVE = datetime(1970, 1, 1)
_US = timedelta(microseconds=1)
MIN_US = -62135596800000000  # 0001-01-01T00:00:00Z
MAX_US = 253402300799999999  # 9999-12-31T23:59:59.999999Z


def now_us() -> int:
    return time.time_ns() // 1000


def iso(us: int) -> str:
    """Storage text of a µs timestamp. Raises OverflowError outside years 0001–9999."""
    if not MIN_US <= us <= MAX_US:
        raise OverflowError(f"timestamp {us} is outside years 0001-9999")
    return (_EPOCH_NAIVE + timedelta(microseconds=us)).isoformat(timespec="microseconds") + "Z"


def from_iso(text: str) -> int:
    """µs of an ISO-8601 timestamp (`Z`, offsets, or naive = UTC; a bare date is midnight UTC)."""
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - _EPOCH) // _US


def observed_from_payload(value) -> int | None:
    """A provider `timestamp`: ISO text, or a number scaled by magnitude (µs > 1e14, ms > 1e10,
    else seconds). Non-finite, non-positive or unreadable values give None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        if v != v or v in (float("inf"), float("-inf")) or v <= 0:
            return None
        if v > 1e14:
            return int(value)
        if v > 1e10:
            return int(round(v * 1000))
        return int(round(v * 1_000_000))
    if isinstance(value, str) and value.strip():
        try:
            us = from_iso(value)
        except (ValueError, OverflowError):
            return None
        return us if us > 0 else None
    return None


HLC_LOGICAL_MAX = 0xFFFF


def hlc_pack(wall_ms: int, logical: int) -> int:
    return (wall_ms << 16) | logical


def hlc_unpack(h: int) -> tuple[int, int]:
    return h >> 16, h & 0xFFFF


def hlc_display(h: int) -> str:
    w, l = hlc_unpack(h)
    return f"{w}.{l:05d}"


def hlc_next(last: int, now_ms: int) -> int:
    """Send/local event: strictly greater than `last`, tracking the wall clock."""
    lw, ll = hlc_unpack(last)
    now_ms = max(now_ms, 0)
    if now_ms > lw:
        return hlc_pack(now_ms, 0)
    if ll < HLC_LOGICAL_MAX:
        return hlc_pack(lw, ll + 1)
    return hlc_pack(lw + 1, 0)


def hlc_observe(last: int, remote: int, now_ms: int) -> int:
    """Receive: merge a remote clock reading (sync / bundle import)."""
    lw, ll = hlc_unpack(last)
    rw, rl = hlc_unpack(remote)
    wall = max(now_ms, lw, rw)
    if wall == lw and wall == rw:
        logical = max(ll, rl) + 1
    elif wall == lw:
        logical = ll + 1
    elif wall == rw:
        logical = rl + 1
    else:
        logical = 0
    return hlc_pack(wall, min(logical, HLC_LOGICAL_MAX))
