"""Secret detection and redaction, ruleset `secrets-v2` (reference/capture.md §4.2).

Invariants:
- `find(text)` returns every secret span as (rule, start, end) in str indices, ordered and
  non-overlapping. The semantics are those of one left-to-right walk that, at each position,
  asks the rules in a fixed priority order (issuer formats, authorization header, AWS secret
  key, generic assignment; URL credentials at a `://`), takes the first hit and resumes after
  it. Positions are visited only through anchors found with `str.find` (`ghp_`, `eyJ`,
  `://`, `authorization`, the last words of secret names, …), so a 64 KiB tool output costs a
  few dozen C-level searches, never a Python loop over every character. Each anchor is marked
  with the rules that can start there, and only those are asked (secretscan.py); the output is
  pinned byte for byte by tests/test_redaction_equivalence.py (it decides what is stored and
  hashed), including the dead-run memo's effect (`sk-sk-<key>` is not a hit).
- `redact(text)` replaces every span with `[REDACTED:<rule>]` and repeats until nothing more
  is found, so `redact(redact(t)[0]) == (redact(t)[0], 0)` holds for every text.
- Precision over recall: names, types, references (`$TOKEN`, `${{ … }}`), placeholders
  (`<your-key>`, `****`, `YOUR_API_KEY`), code (`let token = next()`) and prose stay.
- In a list (an argv), the item after a whole secret-named long option (`["--token", v]`) is
  replaced whole when it is a value the generic rule would take after `--token ` in a command
  line and no other rule finds anything in it (`_list_text`; short options are left alone).
- `redact_value` walks a JSON value up to MAX_DEPTH (950) levels deep whatever the caller's
  stack, and raises TooDeep past it (the ingestion contract then drops the content: fails safe).
- No `re`, `json` or `hashlib` import: this module is on the hook path.
"""

from ..errors import AttemptError
from .secretscan import (
    AWS_SECRET_LABELS,
    GITLAB_PREFIXES,
    MAX_ASSIGNED_VALUE,
    MAX_IDENT,
    MAX_TOKEN,
    PEM_KINDS,
    PREFIXED,
    find,
    is_flag_name,
    is_flag_value,
    is_placeholder,
    is_reference,
    is_secret_name,
    secret_shaped,
)
from .secretscan import B64ISH as _B64ISH
from .secretscan import PEM_BEGIN as _PEM_BEGIN
from .secretscan import UWS as _UWS
from .secretscan import WORD as _WORD
from .secretscan import ascii_lower as _alower
from .secretscan import blen as _blen
from .secretscan import dotted_identifier as _dotted_identifier
from .secretscan import has_ws as _has_ws
from .secretscan import run_end as _run_end

RULESET = "secrets-v2"

# the scanner's public names are this module's face too
__all__ = ["AWS_SECRET_LABELS", "GITLAB_PREFIXES", "MAX_ASSIGNED_VALUE", "MAX_DEPTH", "MAX_IDENT", "MAX_PASSES", "MAX_TOKEN",
           "PEM_KINDS", "PREFIXED", "RULESET", "RedactionError", "RedactionMemo", "TooDeep",
           "contains_secret", "find", "has_issuer_prefix", "is_flag_name", "is_flag_value",
           "is_placeholder", "is_reference", "is_secret_name", "redact", "redact_value", "secret_shaped", "splice"]


def _splice(text: str, hits: list) -> str:
    parts = []
    last = 0
    for rule, a, b in hits:
        parts.append(text[last:a])
        parts.append("[REDACTED:" + rule + "]")
        last = b
    parts.append(text[last:])
    return "".join(parts)


MAX_PASSES = 8


class RedactionError(AttemptError, RuntimeError):
    """Redaction did not reach a fixed point (`redaction.no_fixed_point`; never seen: the caller
    drops the content)."""

    def __init__(self, message: str = "redaction did not reach a fixed point"):
        super().__init__("redaction.no_fixed_point", message)

    def __str__(self) -> str:
        return self.message


def splice(text: str, hits: list) -> str:
    """`text` with the spans `hits` ([(rule, start, end)], ordered, non-overlapping: what `find`
    returns, maybe found in a longer text that began where this one does) replaced."""
    return _splice(text, hits)


def redact(text: str) -> tuple:
    """(text with every secret replaced by `[REDACTED:<rule>]`, number of spans replaced).
    Repeats until a pass finds nothing, so the result is a fixed point."""
    total = 0
    for _ in range(MAX_PASSES):
        hits = find(text)
        if not hits:
            return text, total
        text = _splice(text, hits)
        total += len(hits)
    raise RedactionError("secret redaction did not converge")


def contains_secret(text: str) -> bool:
    return bool(find(text))


# Issuer prefixes for `has_issuer_prefix`, grouped under a character each of them holds (a
# text without that character needs none of the group's searches), and a gate substring.
_ISSUER_GROUPS = (
    ("A", (("AKIA", ("AKIA",)), ("ASIA", ("ASIA",)), ("AIza", ("AIza",)))),
    ("_", (("gh", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")), ("github_pat_", ("github_pat_",)),
           ("k_", ("sk_live_", "sk_test_", "rk_live_")),
           ("npm_", ("npm_",)), ("sbp_", ("sbp_",)), ("vercel_", ("vercel_",)))),
    ("-", (("xox", ("xoxb-", "xoxp-", "xoxa-", "xoxr-")), ("sk-", ("sk-",)),
           ("gl", tuple(p for p in GITLAB_PREFIXES if p.endswith("-"))))),
    ("R", (("GR1348941", ("GR1348941",)),)),
    ("J", (("eyJ", ("eyJ",)),)),
)


def has_issuer_prefix(text: str, min_tail: int = 8) -> bool:
    """A looser test for metadata, where a false positive only costs one attr: an issuer
    prefix (`ghp_`, `AKIA`, `sk-ant-`, `xoxb-`, `eyJ`, `sk-`, …) starting a word and followed
    by at least `min_tail` token characters, whatever the issuer's real minimum length."""
    if not isinstance(text, str) or len(text) < min_tail + 3:
        return False
    for char, gates in _ISSUER_GROUPS:
        if char not in text:
            continue
        for gate, prefixes in gates:
            if gate not in text:
                continue
            for p in prefixes:
                k = text.find(p)
                while k >= 0:
                    if k == 0 or text[k - 1] not in _WORD:
                        j = k + len(p)
                        if _run_end(text, j, _B64ISH, min_tail) - j >= min_tail:
                            return True
                    k = text.find(p, k + 1)
    return _PEM_BEGIN in text


# --- JSON values ----------------------------------------------------------------------------

_MEMBER_MARK = "[REDACTED:generic_assignment]"
_AUTH_PROBE = "Authorization: "


def _redact_member(key, v, counter: list, memo: dict):
    """A JSON member: a secret-named key loses its whole literal value, an `authorization`
    key its credential; anything else is redacted as a value."""
    if isinstance(v, str) and isinstance(key, str):
        if is_secret_name(key):
            t = v.strip(_UWS)
            if (_blen(t) >= 3 and not is_placeholder(t) and not is_reference(t)
                    and not _has_ws(t) and not _dotted_identifier(t)):
                counter[0] += 1
                return _MEMBER_MARK
        elif _alower(key).endswith("authorization"):
            out, n = redact(_AUTH_PROBE + v)
            if n:
                counter[0] += n
                v = out[len(_AUTH_PROBE):]
    return _redact_json(v, counter, memo)


_SPECIAL_NAMES: dict = {}


def _special_name(key: str) -> bool:
    """A member name whose value `_redact_member` judges (secret-named, or ends in
    `authorization`); names recur on every event, so the answer is kept (bounded)."""
    special = _SPECIAL_NAMES.get(key)
    if special is None:
        special = is_secret_name(key) or _alower(key).endswith("authorization")
        if len(_SPECIAL_NAMES) >= 4096:
            _SPECIAL_NAMES.clear()
        _SPECIAL_NAMES[key] = special
    return special


def _redact_text(v: str, counter: list, memo: dict) -> str:
    hit = memo.get(v)  # content and raw carry the same strings: scan each text once
    if hit is None:
        hit = memo[v] = redact(v)
    counter[0] += hit[1]
    return hit[0]


_SCALAR_TYPES = (int, float, bool, type(None))
_MEMBER_NAMES: dict = {}


def _member_name(key: str) -> tuple:
    """(the member name redacted, spans replaced, whether `_redact_member` judges its value)
    for a name of at most 256 characters, kept (bounded): names recur on every event."""
    name, n = redact(key) if len(key) >= 7 else (key, 0)
    known = (name, n, _special_name(name))
    if len(key) <= 256:
        if len(_MEMBER_NAMES) >= 4096:
            _MEMBER_NAMES.clear()
        _MEMBER_NAMES[key] = known
    return known


MAX_DEPTH = 950
"""The deepest value `redact_value` walks (a container it is given is level 1); a deeper one
raises TooDeep, and the ingestion contract drops the content (fails safe), whatever the stack
the walk starts from. The recursion limit (1,000) less a margin: `fastjson.loads` holds ~990
levels from a hook's shallow stack, less from a reader's (`attempt import jsonl`, bundles,
sync: ~975), and the store writes an event through the C encoder, which counts against the same
limit from a stack deeper than the parser's (a hook payload of 988 levels, walked whole, was
lost there). So a stored event never holds more than a reader can read back."""


class TooDeep(RecursionError):
    """A value nested more than MAX_DEPTH levels: not walked, so not stored (the caller drops it)."""


def _too_deep():
    raise TooDeep(f"nested more than {MAX_DEPTH} levels deep")


def _redact_json(v, counter: list, memo: dict, depth: int = 1):
    t = type(v)
    if t is dict:
        return _redact_dict(v, counter, memo, depth)
    if t is list:
        return _redact_list(v, counter, memo, depth)
    if isinstance(v, str):
        return v if len(v) < 7 else _redact_text(v, counter, memo)
    if isinstance(v, list):
        return _redact_list(v, counter, memo, depth)
    if isinstance(v, dict):
        return _redact_dict(v, counter, memo, depth)
    return v


# The walk: explicit loops (not comprehensions), one Python frame per nesting level (a list
# in a list or a dict once took two, through _redact_json, and a payload of ~490 nested arrays
# exhausted the recursion limit the parser's ~990 levels stay within), `depth` the level of
# the container at hand. Strings (the memo looked up in place), scalars and containers of the
# exact JSON types are handled in the loop; anything else (subclasses) takes the general path,
# with the same result. A value within MAX_DEPTH but nested more deeply than the interpreter's
# stack allows from where the walk starts is walked again by `_redact_deep`, the same walk with
# a stack of its own (`redact_value`).

def _list_text(x: str, counter: list, memo: dict, flag: bool) -> tuple:
    """(a string item of a list redacted, whether it is a secret-named long option): `flag`
    says the item before was one (`["--token", "<value>"]`, an argv), so this item, when it is
    a value (secretscan.is_flag_value) and holds nothing another rule finds, is replaced whole,
    as the generic rule replaces `--token <value>` in a command line. What `_redact_list`
    does inline."""
    if len(x) >= 7:
        before = counter[0]
        x2 = _redact_text(x, counter, memo)
        if counter[0] != before:
            return x2, False
        if flag and is_flag_value(x):
            counter[0] += 1
            return _MEMBER_MARK, False
        return x, x[0] == "-" and is_flag_name(x)
    if flag and is_flag_value(x):
        counter[0] += 1
        return _MEMBER_MARK, False
    return x, False


def _redact_list(v: list, counter: list, memo: dict, depth: int = 1):
    if depth > MAX_DEPTH:
        _too_deep()
    before = counter[0]
    items = []
    add = items.append
    seen = memo.get
    flag = False  # the item before was a secret-named long option (`--token`): _list_text
    for x in v:
        t = type(x)
        if t is str:
            if len(x) >= 7:
                hit = seen(x)
                if hit is None:
                    hit = memo[x] = redact(x)
                if hit[1]:
                    counter[0] += hit[1]
                    x = hit[0]
                    flag = False
                elif flag and is_flag_value(x):
                    counter[0] += 1
                    x = _MEMBER_MARK
                    flag = False
                else:
                    flag = x[0] == "-" and is_flag_name(x)
            elif flag:
                flag = False
                if is_flag_value(x):
                    counter[0] += 1
                    x = _MEMBER_MARK
            add(x)
        elif t is dict:
            flag = False
            add(_redact_dict(x, counter, memo, depth + 1))
        elif t is int or t is float or t is bool or x is None:
            flag = False
            add(x)
        elif t is list:
            flag = False
            add(_redact_list(x, counter, memo, depth + 1))
        elif isinstance(x, str):
            x, flag = _list_text(x, counter, memo, flag)
            add(x)
        else:
            flag = False
            add(x if isinstance(x, _SCALAR_TYPES) else _redact_json(x, counter, memo, depth + 1))
    return v if counter[0] == before else items


def _redact_dict(v: dict, counter: list, memo: dict, depth: int = 1):
    if depth > MAX_DEPTH:
        _too_deep()
    before = counter[0]
    members = {}
    seen = memo.get
    names = _MEMBER_NAMES
    for k, x in v.items():
        special = False
        if type(k) is str:
            known = names.get(k)
            if known is None:
                known = _member_name(k)
            if known[1]:  # a secret used as a key is still a secret
                counter[0] += known[1]
                k = known[0]
            special = known[2]
        elif isinstance(k, str):
            if len(k) >= 7:
                k = _redact_text(k, counter, memo)
            special = _special_name(k)
        t = type(x)
        if t is str:
            if special:
                members[k] = _redact_member(k, x, counter, memo)
            elif len(x) < 7:
                members[k] = x
            else:
                hit = seen(x)
                if hit is None:
                    hit = memo[x] = redact(x)
                if hit[1]:
                    counter[0] += hit[1]
                    x = hit[0]
                members[k] = x
        elif t is dict:
            members[k] = _redact_dict(x, counter, memo, depth + 1)
        elif t is int or t is float or t is bool or x is None:
            members[k] = x
        elif t is list:
            members[k] = _redact_list(x, counter, memo, depth + 1)
        elif isinstance(x, str):
            if special:
                members[k] = _redact_member(k, x, counter, memo)
            else:
                members[k] = x if len(x) < 7 else _redact_text(x, counter, memo)
        elif isinstance(x, _SCALAR_TYPES):
            members[k] = x
        else:
            members[k] = _redact_json(x, counter, memo, depth + 1)
    return v if counter[0] == before else members


class RedactionMemo(dict):
    """A `memo` for `redact_value` that outlives one event: keys, ids, paths and tool names
    recur on every event of a stream, and `redact` is a pure function of its text. Texts longer
    than SHORT are forgotten at `end_event` (they rarely recur and would hold memory); the whole
    memo is dropped past LIMIT entries."""

    SHORT = 256
    LIMIT = 32768
    __slots__ = ("_long",)

    def __init__(self):
        super().__init__()
        self._long = []

    def __setitem__(self, text, result):
        if len(text) > self.SHORT:
            self._long.append(text)
        dict.__setitem__(self, text, result)

    def end_event(self):
        for text in self._long:
            self.pop(text, None)
        self._long.clear()
        if len(self) > self.LIMIT:
            self.clear()


def redact_value(v, counter: list | None = None, memo: dict | None = None):
    """A JSON value with every string redacted — the value itself (the same object) when
    nothing was, so callers can keep its serialised text — where members whose name says secret
    (`{"password": "hunter2"}`) lose their whole literal value, `authorization` members their
    credential. `counter[0]` accumulates the number of spans replaced; pass the same `memo`
    dict to several calls to scan a long string that occurs in several places only once.
    Up to MAX_DEPTH levels, whatever the caller's stack (a value within it but too deep for the
    stack left here is walked again without recursion); deeper, TooDeep."""
    if counter is None:
        counter = [0]
    if memo is None:
        memo = {}
    before = counter[0]
    try:
        return _redact_json(v, counter, memo)
    except TooDeep:
        raise
    except RecursionError:
        # within MAX_DEPTH, but deeper than the stack left from here allows: the memo only
        # holds finished scans, so the count is reset and the value walked again, iteratively
        counter[0] = before
        return _redact_deep(v, counter, memo)


def _member_key(k, counter: list, memo: dict) -> tuple:
    """(a member name redacted, whether `_redact_member` judges its value), as `_redact_dict`."""
    if type(k) is str:
        known = _MEMBER_NAMES.get(k)
        if known is None:
            known = _member_name(k)
        if known[1]:
            counter[0] += known[1]
            return known[0], known[2]
        return k, known[2]
    if isinstance(k, str):
        if len(k) >= 7:
            k = _redact_text(k, counter, memo)
        return k, _special_name(k)
    return k, False


def _redact_deep(v, counter: list, memo: dict):
    """`_redact_json` with a stack of its own instead of the interpreter's: the same result (the
    same object for a container where nothing was redacted, members judged by their names),
    whatever the caller's stack, up to MAX_DEPTH levels. A frame: [container, its items, the
    redacted copy, counter before it, the member name its open child goes under]."""
    if not isinstance(v, (dict, list)):
        return _redact_json(v, counter, memo)
    stack = [[v, iter(v.items()) if isinstance(v, dict) else iter(v), {} if isinstance(v, dict) else [],
              counter[0], None]]
    while True:
        frame = stack[-1]
        out = frame[2]
        members = type(out) is dict
        child = None
        flag = False  # resumed after a container: no option before the next item
        for item in frame[1]:
            if members:
                k, x = item
                k, special = _member_key(k, counter, memo)
            else:
                k, x, special = None, item, False
            if isinstance(x, (dict, list)):
                child = x
                frame[4] = k
                break
            if isinstance(x, str):
                if special:
                    x = _redact_member(k, x, counter, memo)
                elif not members:
                    x, flag = _list_text(x, counter, memo, flag)
                elif len(x) >= 7:
                    x = _redact_text(x, counter, memo)
            else:
                flag = False
            if members:
                out[k] = x
            else:
                out.append(x)
        if child is not None:
            if len(stack) >= MAX_DEPTH:
                _too_deep()
            is_dict = isinstance(child, dict)
            stack.append([child, iter(child.items()) if is_dict else iter(child), {} if is_dict else [],
                          counter[0], None])
            continue
        stack.pop()
        done = frame[0] if counter[0] == frame[3] else out
        if not stack:
            return done
        parent = stack[-1]
        if type(parent[2]) is dict:
            parent[2][parent[4]] = done
        else:
            parent[2].append(done)
