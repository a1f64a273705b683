"""The raw payload stores each string once (spec/canonical-event.md "Stored payload").

An event's `raw` (the provider's payload) usually repeats what the rest of its row holds: a tool
call's input and output (in `content`), the provider's session id, call id and event name (in
their columns). The events row keeps those as they are (SQL reads them) and writes `raw_json`
with each such text it contains replaced by a reference into the row's *dictionary*:
`content_json`, then for each of provider_session_id, tool_call_id and provider_event_name a
U+001F and the value between double quotes (NULL as empty). A reference is U+0001, the 1-based
character offset and the length (`start:length`), U+0002. JSON text never holds U+0001 or
U+0002 unescaped, so a reference cannot be confused with payload text, and a `raw_json` without
one is the payload itself (every row written before this rule).

Invariant: `expand(pack(raw, …), …) == raw` for every raw text (a reference stands for an equal
substring, wherever it was found); the canonical line (and so every hash) is built from the
expanded text, so the stored form changes no hash. The sqlite3 shell reads a reference as it
is, or the payload whole through the view `event_payloads`, which builds the same dictionary.
"""

from . import fastjson

MIN_SHARED = 48
"""Content values shorter than this stay in the payload."""
MIN_FIELD = 12
"""Column values (quoted) shorter than this stay in the payload (a reference costs ~9 characters)."""

START, END, SEP = "\x01", "\x02", "\x1f"
FIELDS = ("provider_session_id", "tool_call_id", "provider_event_name")
"""The events columns whose values follow content_json in a row's dictionary, in order."""


def _fields(fields) -> str:
    return "".join(f'{SEP}"{f or ""}"' for f in fields)


def content_text(content) -> tuple[str, list]:
    """(`content_json`, [(0-based offset, text) of each top-level member's value]): the text is
    `fastjson.dumps(content)`, assembled member by member so that pack need not serialise the
    values again."""
    if not isinstance(content, dict) or not all(isinstance(k, str) for k in content):
        return fastjson.dumps(content), []
    parts, values, pos = ["{"], [], 1
    for k, v in content.items():
        kt, vt = fastjson.quote(k), fastjson.dumps(v)
        parts += (kt, ":", vt, ",")
        values.append((pos + len(kt) + 1, vt))
        pos += len(kt) + len(vt) + 2
    if values:
        parts[-1] = "}"  # in place of the last separator
    else:
        parts.append("}")
    return "".join(parts), values  # one copy of each value (a prompt may be megabytes)


def _find(hay: str, needle: str) -> int:
    """hay.find(needle), by a short prefix then a comparison in place: str.find prepares a long
    needle in time proportional to its length, several microseconds for a tool's output."""
    head = needle[:32]
    i = hay.find(head)
    while i >= 0 and not hay.startswith(needle, i):
        i = hay.find(head, i + 1)
    return i


def pack(raw_json: str | None, content_json: str | None, values=(), fields=()) -> str | None:
    """`raw_json` with each long content value (`values` as content_text gives them for
    `content_json`) and each quoted value of `fields` (provider_session_id, tool_call_id,
    provider_event_name) that it contains replaced by a reference into the row's dictionary."""
    if raw_json is None or len(raw_json) < MIN_FIELD:
        return raw_json
    out = raw_json
    for start, text in values:
        if len(text) >= MIN_SHARED:
            out = _refer(out, _find(out, text), start, text)
    pos = len(content_json or "")
    for f in fields:
        text = f'"{f or ""}"'
        start = pos + 1
        pos = start + len(text)
        if len(text) >= MIN_FIELD:
            out = _refer(out, out.find(text), start, text)
    return out


def _refer(out: str, i: int, start: int, text: str) -> str:
    """`out` with `text`, found at i (-1: not found), replaced by a reference to the dictionary's
    0-based offset `start`."""
    return out if i < 0 else f"{out[:i]}{START}{start + 1}:{len(text)}{END}{out[i + len(text):]}"


def expand(raw_json: str | None, content_json: str | None, fields=()) -> str | None:
    """The payload text of a stored `raw_json` (references resolved against the row's
    dictionary). Raises ValueError on a reference that does not resolve. (How a reference is
    spelled is not checked beyond what resolving needs: the line's hash holds the text.)"""
    if raw_json is None or START not in raw_json:
        return raw_json
    return _resolve(raw_json, content_json or "", lambda: _fields(fields), START, END, ":")


def expand_ascii(raw_json: bytes, content_json: bytes | None, fields=()) -> bytes | None:
    """`expand` of UTF-8 texts, as UTF-8, without decoding them: the same result whenever the
    row's dictionary is ASCII (a reference counts characters, which are then its bytes); None
    when it is not (the caller decodes and calls `expand`). Raises ValueError as `expand`."""
    d = content_json or b""
    if not d.isascii():
        return None

    def tail():
        t = _fields(fields).encode("utf-8")
        return t if t.isascii() else None
    return _resolve(raw_json, d, tail, START.encode(), END.encode(), b":")


def _resolve(raw, d, tail, start, end, colon):
    """`raw` with each reference replaced by its slice of the dictionary: `d`, extended by
    `tail()` when a reference reaches past it (None from `tail`: give up, return None)."""
    parts = raw.split(start)
    out = [parts[0]]
    extended = False
    for p in parts[1:]:
        spec, sep, rest = p.partition(end)
        s, _, n = spec.partition(colon)
        a = int(s) - 1
        b = a + int(n)
        if b > len(d) and not extended:
            t = tail()
            if t is None:
                return None
            d, extended = d + t, True
        if not sep or a < 0 or b > len(d) or b < a:
            raise ValueError("a raw payload reference that does not resolve")
        out.append(d[a:b])
        out.append(rest)
    return raw[:0].join(out)
