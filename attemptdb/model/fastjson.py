"""JSON without importing the `json` package (which pulls in `re`): the C scanner and encoder.

Invariant: `dumps` produces exactly what `json.dumps(obj, ensure_ascii=False,
separators=(",", ":"))` does, so bytes written on the hook path are identical to those written
anywhere else; `loads` accepts what `json.loads` does except NaN, Infinity and numbers that
overflow to infinity (not JSON: stored text must stay valid JSON for SQLite's json functions). Used on the capture path, where
every import costs milliseconds on every tool call of every agent.

A text that is JSON by the grammar but cannot be held as Python values here — a number that
overflows a float (`1e999`) or has more digits than `int()` takes (4,300), or nesting deeper
than the interpreter's recursion limit — fails with `JSONUnrepresentable` (a `JSONError`) when
that is the first thing wrong with it; `is_json` says whether the whole text is JSON.
"""

import _json

from ..errors import AttemptError

_INF = float("inf")


class JSONError(AttemptError, ValueError):
    """Malformed JSON text (`json.malformed`): `pos` is the character offset where it went wrong;
    `str()` is `msg at character pos`."""

    def __init__(self, msg, pos=0):
        super().__init__("json.malformed", f"{msg} at character {pos}")
        self.msg = msg
        self.pos = pos

    def __str__(self) -> str:
        return self.message


class JSONUnrepresentable(JSONError):
    """The first thing wrong with the text is a value it cannot be held as (a number out of
    range, nesting too deep); the text may be JSON (`is_json`) or go wrong further on."""


class _OutOfRange(ValueError):
    pass


def _reject_constant(name):
    raise JSONError(f"{name} is not JSON")


def _finite_float(text):
    v = float(text)
    if v in (_INF, -_INF):  # a literal like 1e400: no finite number, and not JSON's to store
        raise _OutOfRange("number out of range")
    return v


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
    """Parse one JSON document from `text` (str). Raises JSONError on anything else (a
    JSONUnrepresentable when the first problem is a number out of range or nesting too deep);
    with `exact_errors=False` its message and position are not exact, and no module is imported."""
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
    except RecursionError:
        raise JSONUnrepresentable("nested too deeply", i) from None
    except ValueError as e:  # json.decoder.JSONDecodeError is not importable without `json`
        if isinstance(e, _OutOfRange) or not hasattr(e, "msg"):
            # a number the scanner read but could not convert: a float overflowing to infinity,
            # or an integer of more digits than int() takes (sys.get_int_max_str_digits)
            raise JSONUnrepresentable("number out of range", i) from None
        raise JSONError(e.msg, getattr(e, "pos", 0)) from None
    finally:
        _ctx.memo.clear()
    while end < n and text[end] in WHITESPACE:
        end += 1
    if end != n:
        raise JSONError("extra data after the JSON value", end)
    return obj


class _GrammarContext(_Context):
    """A scanner for the grammar alone: a number becomes its length (`len`, a C builtin: no
    conversion, so no number is too large, and 10x faster than `float`)."""
    parse_float = len
    parse_int = len


_grammar_ctx = _GrammarContext()
_grammar_ctx.memo = {}
_grammar = _json.make_scanner(_grammar_ctx)
_NOT_JSON = (StopIteration, ValueError, SystemError)
CHECK_BUDGET = 1 << 19
"""Values `is_json` reads one at a time in a text nested too deeply for the C scanner (a run of
brackets counts as one) before it gives up and answers None; at most about a second."""


def is_json(text: str, budget: int = CHECK_BUDGET) -> bool | None:
    """Whether `text` is exactly one JSON document by the grammar (RFC 8259) alone, whatever the
    size of its numbers and the depth of its nesting: True or False, or None when it is nested
    more deeply than the C scanner goes and reading it value by value takes more than `budget`
    values. NaN and Infinity are not JSON. Imports nothing; for telling a text `loads` could not
    hold (JSONUnrepresentable) from a malformed one, not for the hot path."""
    n = len(text)
    i = 0
    while i < n and text[i] in WHITESPACE:
        i += 1
    try:
        end = _grammar(text, i)[1]
    except RecursionError:
        return _is_deep_json(text, i, budget)
    except _NOT_JSON:
        return False
    finally:
        _grammar_ctx.memo.clear()
    while end < n and text[end] in WHITESPACE:
        end += 1
    return end == n


def _run_end(text, i, chars) -> int:
    """The offset after the run of `chars` starting at `i` (read in growing slices)."""
    size = 32
    while True:
        chunk = text[i:i + size]
        rest = len(chunk.lstrip(chars))
        if rest or len(chunk) < size:
            return i + len(chunk) - rest
        i += size
        size *= 2


_OPENERS = "[" + WHITESPACE
_CLOSERS = {"]": "]" + WHITESPACE, "}": "}" + WHITESPACE}


def _is_deep_json(text, i, budget):
    """is_json without recursion: one value at a time from `i` (the first non-blank)."""
    n = len(text)
    ws = WHITESPACE
    scalar = _grammar
    scanstring = _json.scanstring
    closers = []  # the closing bracket of each run of open containers, innermost last
    counts = []  # how many open containers each entry of `closers` stands for
    try:
        while True:
            # a value starts at i
            budget -= 1
            if budget < 0:
                return None
            if i >= n:
                return False
            c = text[i]
            if c == "[":
                j = _run_end(text, i, _OPENERS) if i + 1 < n and text[i + 1] in _OPENERS else i + 1
                k = text.count("[", i, j) if j > i + 1 else 1
                i = j
                if i < n and text[i] == "]":  # the innermost array is empty: a value
                    i += 1
                    k -= 1
                if k:
                    if closers and closers[-1] == "]":
                        counts[-1] += k
                    else:
                        closers.append("]")
                        counts.append(k)
                    if i == j:  # a value starts at i
                        continue
            elif c == "{":
                i += 1
                while i < n and text[i] in ws:
                    i += 1
                if i < n and text[i] == "}":
                    i += 1
                else:
                    if closers and closers[-1] == "}":
                        counts[-1] += 1
                    else:
                        closers.append("}")
                        counts.append(1)
                    i = _after_key(text, i, n, scanstring)
                    if i < 0:
                        return False
                    continue
            else:
                i = scalar(text, i)[1]
            # after a value: a separator, closing brackets, or the end
            while True:
                while i < n and text[i] in ws:
                    i += 1
                if not closers:
                    return i == n
                if i >= n:
                    return False
                c = text[i]
                if c == ",":
                    i += 1
                    while i < n and text[i] in ws:
                        i += 1
                    if closers[-1] == "}":
                        i = _after_key(text, i, n, scanstring)
                        if i < 0:
                            return False
                    break
                if c != closers[-1]:
                    return False
                j = _run_end(text, i, _CLOSERS[c]) if i + 1 < n and text[i + 1] in _CLOSERS[c] else i + 1
                k = text.count(c, i, j) if j > i + 1 else 1
                i = j
                if k > counts[-1]:  # the one below waits for the other bracket, or nothing does
                    return False
                if k == counts[-1]:
                    closers.pop()
                    counts.pop()
                else:
                    counts[-1] -= k
    except _NOT_JSON:
        return False
    finally:
        _grammar_ctx.memo.clear()


def _after_key(text, i, n, scanstring) -> int:
    """The offset of the value after `"key":` at `i`, or -1."""
    if i >= n or text[i] != '"':
        return -1
    i = scanstring(text, i + 1, True)[1]
    while i < n and text[i] in WHITESPACE:
        i += 1
    if i >= n or text[i] != ":":
        return -1
    i += 1
    while i < n and text[i] in WHITESPACE:
        i += 1
    return i


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
