"""verify's check of the stored `attrs` against the bounds every arrival path keeps now
(spec/canonical-event.md "Bounds on attrs"; the rule is attemptdb.model.event.attrs_problem,
which refuses an imported line breaking one). Events stored before those bounds existed (or
pulled by a sync that did not check them) may break one: their chain is intact, so this is a
warning, not a problem; but such an event is refused if it is imported again (`import jsonl` of
its line, a bundle or a sync segment holding it).

Invariants:
- Sound and exact: every stored attrs text is looked at, and the verdict is attrs_problem's. A
  test over the stored bytes (`suspect`) only decides which texts are worth parsing: every text
  that breaks a bound is suspect. Texts seen to pass are remembered (a stream's attrs recur).
- It rides on verify's per-row pass (bulkcheck holds every row's attrs bytes already), or reads
  a range itself (`scan`) where that pass is not taken; reads only.
- Never echoes a value: a finding is a row's seq and event id, the first with the JSON path of
  the entry when its key is attr-shaped.
"""

import re

from ..model import event, fastjson
from ..model.event import MAX_ATTR_STRING

FIRST = 5
"""Rows named in the warning (the first by seq); the count covers all."""

_TOKEN = re.compile(rb'"(?:[^"]{65}|:-?[0-9]{19})').search
_PATH = re.compile(r"\$\.attrs(?:\.[a-z][a-z0-9_]{0,63})?\Z")
_EVENT_ID = re.compile(r"ev_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
PASSED: set = {b"{}"}
"""attrs texts seen to pass, of at most _PASSED_TEXT bytes (cleared past _PASSED_MAX of them: at
most 16 MiB a process; the largest real attrs is 399 bytes)."""
_PASSED_MAX = 1 << 15
_PASSED_TEXT = 512


def suspect(text: bytes) -> bool:
    """Whether the stored attrs JSON `text` (compact, UTF-8) may break a bound. One that does is
    longer than 256 bytes (a string over 256 bytes; the whole over 16 KiB), or holds an escape, an
    array or an object besides its own braces (nesting; a member key), a quote and 65 bytes
    without one (a key over 64 bytes: a key holds no quote but an escaped one), or `":` and 19
    digits (an integer outside 64 bits: a top-level value follows its key's `":`)."""
    return (len(text) > MAX_ATTR_STRING or text.find(b"\\") >= 0 or text.find(b"[") >= 0
            or text.find(b"{", 1) >= 0 or _TOKEN(text) is not None)


def breaks(text: bytes):
    """(JSON path, what) of the first bound the stored attrs `text` breaks (attrs_problem), else
    None; None too for a text that is not a JSON object (the chain check names such a row)."""
    try:
        attrs = fastjson.loads(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if type(attrs) is not dict or not attrs:
        return None
    return event.attrs_problem(attrs)


class Findings:
    """Rows whose attrs break a bound: `count`, and `first`, the first FIRST as (seq, event id,
    JSON path, what) in the order they were seen (a range's rows in seq order)."""

    def __init__(self):
        self.count = 0
        self.first: list = []

    def row(self, seq, event_id, text: bytes) -> None:
        """Judge one stored row's attrs `text` (bytes; anything else is not this check's)."""
        if type(text) is not bytes or text in PASSED:
            return
        why = breaks(text) if suspect(text) else None
        if why is None:
            if len(text) <= _PASSED_TEXT:
                if len(PASSED) >= _PASSED_MAX:
                    PASSED.clear()
                    PASSED.add(b"{}")
                PASSED.add(text)
            return
        self.count += 1
        if len(self.first) < FIRST:
            eid = event_id.decode("utf-8", "replace") if isinstance(event_id, bytes) else str(event_id)
            if not _EVENT_ID.match(eid):  # a row edited by hand (the chain check names it): no text of it
                eid = f"seq={seq}"
            path = why[0] if _PATH.match(why[0]) else "$.attrs"
            self.first.append((seq, eid, path, why[1]))

    def add(self, result) -> None:
        """Take in another range's `result()` (the ranges taken in seq order)."""
        count, first = result
        self.count += count
        self.first = (self.first + list(first))[:FIRST]

    def result(self) -> tuple:
        """(count, first): what a worker process hands back."""
        return self.count, self.first


def merged(results) -> Findings:
    """One Findings of several ranges' results, the first rows by seq."""
    out = Findings()
    for count, first in results:
        out.count += count
        out.first += first
    out.first = sorted(out.first, key=lambda f: f[0])[:FIRST]
    return out


_RANGE = ("SELECT seq, CAST(event_id AS BLOB), CAST(attrs_json AS BLOB) FROM events "
          "WHERE seq >= ? AND seq < ? ORDER BY seq")


def scan(conn, lo: int, hi: int, findings: Findings) -> None:
    """Every row with lo <= seq < hi, read for this check alone (a range the bulk pass did not take)."""
    row = findings.row
    for seq, eid, text in conn.execute(_RANGE, (lo, hi)):
        if text not in PASSED:
            row(seq, eid, text)
