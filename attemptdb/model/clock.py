"""Time: microsecond timestamps, their ISO-8601 storage text, and the hybrid logical clock.

Invariants: a timestamp is signed 64-bit microseconds since the Unix epoch (UTC); its storage
text is `YYYY-MM-DDTHH:MM:SS.ffffffZ` (exactly six fractional digits), so text order is time
order; the two convert losslessly inside years 0001–9999. An HLC is `(wall_ms << 16) | logical`
(reference/capture.md §1.5) and the generator never goes backwards.
"""

import time

MIN_US = -62135596800000000  # 0001-01-01T00:00:00Z
MAX_US = 253402300799999999  # 9999-12-31T23:59:59.999999Z


def now_us() -> int:
    return time.time_ns() // 1000


def _days_to_civil(z: int) -> tuple[int, int, int]:
    # days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm)
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def iso(us: int) -> str:
    """Storage text of a µs timestamp. Raises OverflowError outside years 0001–9999.
    (No `datetime` import: this runs on the hook path.)"""
    if not MIN_US <= us <= MAX_US:
        raise OverflowError(f"timestamp {us} is outside years 0001-9999")
    days, rest = divmod(us, 86_400_000_000)
    y, mo, d = _days_to_civil(days)
    s, f = divmod(rest, 1_000_000)
    mi, s = divmod(s, 60)
    h, mi = divmod(mi, 60)
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{f:06d}Z"


_DAY_TEXT: dict[int, str] = {}
_DAY_US = 86_400_000_000


def iso_fast(us: int) -> str:
    """`iso` with the date part cached per day (bulk paths format millions of times)."""
    day, rest = divmod(us, _DAY_US)
    d = _DAY_TEXT.get(day)
    if d is None:
        d = iso(day * _DAY_US)[:11]
        if len(_DAY_TEXT) > 4096:
            _DAY_TEXT.clear()
        _DAY_TEXT[day] = d
    s, f = divmod(rest, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"{d}{h:02d}:{m:02d}:{s:02d}.{f:06d}Z"


def _civil_to_days(y: int, m: int, d: int) -> int:
    # (year, month, day) → days since 1970-01-01, the inverse of _days_to_civil
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _storage_text_us(t: str) -> int | None:
    """µs of a timestamp written in the storage form (`…T…:…:…[.ffffff]Z`), or None when it is
    not in it: read without `datetime` (an import of some milliseconds on every `AT '…'`),
    accepted only when it formats back to the same text, so a bad date falls to datetime."""
    if len(t) not in (20, 27) or t[-1] != "Z" or t[10] != "T":
        return None
    digits = t[:4] + t[5:7] + t[8:10] + t[11:13] + t[14:16] + t[17:19] + (t[20:26] if len(t) == 27 else "")
    if not digits.isdigit() or not digits.isascii():
        return None
    days = _civil_to_days(int(t[:4]), int(t[5:7]), int(t[8:10]))
    us = ((days * 24 + int(t[11:13])) * 60 + int(t[14:16])) * 60 + int(t[17:19])
    us = us * 1_000_000 + (int(t[20:26]) if len(t) == 27 else 0)
    if not MIN_US <= us <= MAX_US:
        return None
    full = iso(us)
    return us if full == t or (len(t) == 20 and full == t[:19] + ".000000Z") else None


def from_iso(text: str) -> int:
    """µs of an ISO-8601 timestamp (`Z`, offsets, or naive = UTC; a bare date is midnight UTC)."""
    t = text.strip()
    fast = _storage_text_us(t)
    if fast is not None:
        return fast
    from datetime import datetime, timezone
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // _us_delta()


def _us_delta():
    from datetime import timedelta
    return timedelta(microseconds=1)


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


FUTURE_SLACK_US = 7 * 86_400_000_000
"""How far past its capture a provider's own `timestamp` may lie and still be when it happened:
further on it is no clock (`9999-12-31`, a number in the wrong unit), and `observed_at` falls
back to the capture time, as for a timestamp that cannot be read. A week keeps every skewed
clock and the anchors' fixtures (up to 2 days after their capture time)."""


def observed_or_captured(observed_us: int | None, captured_us: int) -> int:
    """`observed_at` of an event: the provider's time when it has one that is not past the
    capture by more than FUTURE_SLACK_US, else the capture time."""
    if observed_us is None or observed_us > captured_us + FUTURE_SLACK_US:
        return captured_us
    return observed_us


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
