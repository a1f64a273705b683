"""JSON without importing the `json` package (which pulls in `re`): the C scanner and encoder.

Invariant: `dumps` produces exactly what `json.dumps(obj, ensure_ascii=False,
separators=(",", ":"))` does, so bytes written on the hook path are identical to those written
anywhere else; `loads` accepts what `json.loads` does except NaN, Infinity and numbers that
overflow to infinity (not JSON: stored text must stay valid JSON for SQLite's json functions). Used on the capture path, where
every import costs milliseconds on every tool call of every agent.
"""

import _json

from ..errors import AttemptError

_INF = float("inf")


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text):
    v = float(text)
    if v in (_INF, -_INF):  # a literal like 1e400: no finite number, and not JSON's to store
        raise ValueError("number out of range")
    return v


class JSONError(AttemptError, ValueError):
    """Malformed JSON text (`json.malformed`): `pos` is the character offset where it went wrong;
    `str()` is `msg at character pos`."""

    def __init__(self, msg, pos=0):
        super().__init__("json.malformed", f"{msg} at character {pos}")
        self.msg = msg
        self.pos = pos

    def __str__(self) -> str:
        return self.message


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(_finite_float)
    parse_int = int
    parse_constant = staticmethod(_reject_constant)
    memo = {}


_ctx = _Context()
_ctx.memo = {}
_c_scan = _json.make_scanner(_ctx)


def _scan(text, i, exact=True):
    try:
        return _c_scan(text, i)
    except SystemError:
        # The C scanner reports a syntax error through json.decoder.JSONDecodeError and only
        # finds that class when `json.decoder` is already imported. A caller that wants the
        # message and position (import, conformance) pays for that import (json + re, ~8 ms)
        # on the error path; the hook path only needs to know the payload is malformed.
        if not exact:
            raise JSONError("malformed JSON", i) from None
        import json.decoder  # noqa: F401
        return _c_scan(text, i)

WHITESPACE = " \t\n\r"
"""JSON's whitespace characters."""


def loads(text, exact_errors=True):
    """Parse one JSON document from `text` (str). Raises JSONError on anything else; with
    `exact_errors=False` its message and position are not exact, and no module is imported."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    n = len(text)
    i = 0
    while i < n and text[i] in WHITESPACE:
        i += 1
    try:
        obj, end = _scan(text, i, exact_errors)
    except StopIteration as e:
        raise JSONError("expected a JSON value", e.value) from None
    except ValueError as e:  # json.decoder.JSONDecodeError is not importable without `json`
        raise JSONError(getattr(e, "msg", "malformed JSON"), getattr(e, "pos", 0)) from None
    except RecursionError:
        raise JSONError("nested too deeply", i) from None
    finally:
        _ctx.memo.clear()
    while end < n and text[end] in WHITESPACE:
        end += 1
    if end != n:
        raise JSONError("extra data after the JSON value", end)
    return obj


def _default(o):
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


_compact = _json.make_encoder(None, _default, _json.encode_basestring, None, ":", ",", False, False, True)
_sorted = _json.make_encoder(None, _default, _json.encode_basestring, None, ":", ",", True, False, True)

quote = _json.encode_basestring
"""JSON string literal of a str, non-ASCII kept (as `json.dumps(s, ensure_ascii=False)`)."""


def dumps(obj, sort_keys=False):
    """Compact JSON text, non-ASCII kept, keys in insertion order (or sorted)."""
    if isinstance(obj, str):
        return quote(obj)
    return "".join((_sorted if sort_keys else _compact)(obj, 0))


def is_compact_string_array(text: str) -> bool:
    """True when `text` is exactly what `dumps` writes for some list of strings (SQLite's
    json_group_array of texts without escapes): `[]`, or `["…","…"]` whose strings hold no
    quote, backslash or unprintable character. Such a text can be written out as it is in
    place of `dumps(loads(text))`. False says nothing (the caller decodes)."""
    n = len(text)
    if n < 2 or text[0] != "[" or text[-1] != "]" or "\\" in text or not text.isprintable():
        return False
    if n == 2:
        return True
    if n < 4 or text[1] != '"' or text[-2] != '"':
        return False
    # with no backslash no quote is escaped: every quote of the body must be one of a separator
    body = text[2:-2]
    return body.count('"') == 2 * body.count('","')


_HOLE = "\x00attemptdb:json-text\x00"
_HOLE_QUOTED = quote(_HOLE)


def dumps_spliced(obj, texts: list[str], fallback):
    """`dumps(obj)` where the str values equal to `hole()` stand, in order, for the JSON texts
    of `texts`, each written out as it is (the caller vouches that dumps would write the same:
    is_compact_string_array). When the holes do not match the texts one for one (a value of
    `obj` spelled like a hole), returns `dumps(fallback())` instead."""
    pieces = dumps(obj).split(_HOLE_QUOTED)
    if len(pieces) != len(texts) + 1:
        return dumps(fallback())
    out = [pieces[0]]
    for t, p in zip(texts, pieces[1:]):
        out.append(t)
        out.append(p)
    return "".join(out)


def hole() -> str:
    """The value that marks a place `dumps_spliced` fills."""
    return _HOLE
