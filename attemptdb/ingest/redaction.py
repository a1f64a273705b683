"""Secret detection and redaction, ruleset `secrets-v2` (reference/capture.md §4.2).

Invariants:
- `find(text)` returns every secret span as (rule, start, end) in str indices, ordered and
  non-overlapping. The semantics are those of one left-to-right walk that, at each position,
  asks the rules in a fixed priority order (issuer formats, authorization header, AWS secret
  key, generic assignment; URL credentials at a `://`), takes the first hit and resumes after
  it. Positions are visited only through anchors found with `str.find` (`ghp_`, `eyJ`,
  `://`, `authorization`, the last words of secret names, …), so a 64 KiB tool output costs a
  few dozen C-level searches, never a Python loop over every character.
- `redact(text)` replaces every span with `[REDACTED:<rule>]` and repeats until nothing more
  is found, so `redact(redact(t)[0]) == (redact(t)[0], 0)` holds for every text.
- Precision over recall: names, types, references (`$TOKEN`, `${{ … }}`), placeholders
  (`<your-key>`, `****`, `YOUR_API_KEY`), code (`let token = next()`) and prose stay.
- No `re`, `json` or `hashlib` import: this module is on the hook path.
"""

from ..errors import AttemptError

RULESET = "secrets-v2"

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_LETTERS = _UPPER + _LOWER
_ALNUM = _LETTERS + _DIGITS
_WORD_CHARS = _ALNUM + "_"
_WORD = frozenset(_WORD_CHARS)
_ALPHA = frozenset(_LETTERS)
_ALNUM_SET = frozenset(_ALNUM)
_B64ISH = _ALNUM + "_-+/="                  # issuer-format token tails
_B64URL = _ALNUM + "_-"                     # JWT segments
_BEARER_CHARS = _ALNUM + "._~+/=-"          # an Authorization credential
_AWS_SECRET_CHARS = _ALNUM + "/+="          # an AWS secret access key
_IDENT = _WORD_CHARS + ".-"                 # an assignment's name
_LABEL_SKIP = " \t\"'\\:="                  # between a label and its value (at most 8)
_ASCII_LOWER = {ord(c): ord(c) + 32 for c in _UPPER}
# Unicode White_Space (what Rust's char::is_whitespace and str::trim use).
_UWS = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
        "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")

MAX_IDENT = 64
"""Longest name the assignment rule reads (keeps the scan linear on hostile input)."""
MAX_ASSIGNED_VALUE = 512
"""Longest value (UTF-8 bytes) one assignment hit covers; a longer run is cut there."""
_URL_USERINFO_MAX = 512
_SCHEME_MAX = 16

# Issuer formats: (rule, prefix, minimum tail of _B64ISH characters), in priority order.
PREFIXED = (
    ("aws_access_key_id", "AKIA", 16),
    ("aws_access_key_id", "ASIA", 16),
    ("github_token", "ghp_", 36),
    ("github_token", "gho_", 36),
    ("github_token", "ghu_", 36),
    ("github_token", "ghs_", 36),
    ("github_token", "ghr_", 36),
    ("github_token", "github_pat_", 22),
    ("slack_token", "xoxb-", 10),
    ("slack_token", "xoxp-", 10),
    ("slack_token", "xoxa-", 10),
    ("slack_token", "xoxr-", 10),
    ("google_api_key", "AIza", 35),
    ("stripe_key", "sk_live_", 20),
    ("stripe_key", "sk_test_", 20),
    ("stripe_key", "rk_live_", 20),
    ("anthropic_api_key", "sk-ant-", 20),
    ("openai_api_key", "sk-proj-", 20),
    ("npm_token", "npm_", 36),
    ("supabase_service_key", "sbp_", 20),
    ("vercel_token", "vercel_", 20),
)
_PREFIX_BY_FIRST: dict = {}
for _rule, _prefix, _min in PREFIXED:
    _PREFIX_BY_FIRST.setdefault(_prefix[0], []).append((_rule, _prefix, _min))

_PEM_BEGIN = "-----BEGIN "
# Built from parts so this file never holds a literal private-key marker.
PEM_KINDS = ("RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY",
             "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK")
_PEM = tuple((_PEM_BEGIN + k + "-----", "-----END " + k + "-----") for k in PEM_KINDS)

AWS_SECRET_LABELS = ("aws_secret_access_key", "aws_secret_key", "awssecretaccesskey",
                     "secretaccesskey", "secret_access_key")

# Sensitive last words of a name, and what they may be the tail of (a name must END in one).
_NAME_TAILS = ("password", "passwd", "passphrase", "secret", "token", "key", "pwd", "pass")
_TAIL_ANCHORS = (("pass", ("password", "passwd", "passphrase", "pass")),
                 ("pwd", ("pwd",)), ("secret", ("secret",)), ("token", ("token",)),
                 ("key", ("key",)))
_SECRET_LAST = frozenset(("password", "passwd", "passphrase", "secret", "token", "apikey",
                          "secretkey", "accesskey", "privatekey", "authtoken", "clientsecret"))
_KEY_BEFORE = frozenset(("api", "secret", "access", "private", "auth"))

_PLACEHOLDER_WORDS = frozenset((
    "null", "none", "nil", "true", "false", "undefined", "string", "str", "bool", "boolean",
    "number", "int", "integer", "required", "optional", "redacted", "masked", "empty", "todo",
    "tbd", "value", "example"))
_DECLARE_WORDS = frozenset(("let", "const", "var", "mut", "val", "final", "static", "pub", "def"))

# Characters that end an unquoted value: ASCII whitespace and punctuation that closes a token.
_VALUE_DELIMS = " \t\n\x0c\r\"'`,;&|<>(){}[]\\"
# Characters that end the userinfo scan of a URL.
_URL_STOPS = "/?# \t\n\r\"'<>`)]}\\"


def _delim_table(chars: str) -> dict:
    t = {ord(c): 0 for c in chars}
    t[0] = 1  # a NUL in the text must not look like a delimiter
    return t


_VALUE_STOP = _delim_table(_VALUE_DELIMS)
_URL_STOP = _delim_table(_URL_STOPS)


# --- small helpers --------------------------------------------------------------------------

def _alower(s: str) -> str:
    """ASCII-only lower-casing (what `eq_ignore_ascii_case` compares)."""
    return s.lower() if s.isascii() else s.translate(_ASCII_LOWER)


def _blen(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _run_end(s: str, i: int, chars: str, limit: int = -1) -> int:
    """End of the run of `chars` starting at `i` (at most `limit` long when limit >= 0),
    measured by `str.lstrip` on bounded windows, so long runs cost C time only."""
    n = len(s) if limit < 0 else min(len(s), i + limit)
    j = i
    while j < n:
        w = s[j:min(n, j + 256)]
        k = len(w) - len(w.lstrip(chars))
        j += k
        if k < len(w):
            break
    return j


def _first_stop(s: str, start: int, table: dict, max_bytes: int) -> int:
    """Index of the first stop character at or after `start` within `max_bytes` UTF-8 bytes,
    or the end of that window (cut back to a whole character)."""
    w = s[start:start + max_bytes]
    k = w.translate(table).find("\x00")
    if k >= 0:
        w = w[:k]
    if not w.isascii():
        b = w.encode("utf-8", "surrogatepass")
        if len(b) > max_bytes:
            cut = max_bytes
            while 0xC0 & b[cut] == 0x80:  # step back to the start of a character
                cut -= 1
            w = b[:cut].decode("utf-8", "surrogatepass")
    return start + len(w)


def _has_ws(v: str) -> bool:
    if v.isascii():
        return " " in v or "\t" in v or "\n" in v or "\r" in v or "\x0b" in v or "\x0c" in v
    return any(c in v for c in _UWS)


def is_placeholder(v: str) -> bool:
    """Words and masks that stand where a value would be (`null`, `<token>`, `****`,
    `YOUR_API_KEY`, `your-key`, `[REDACTED…`, elisions)."""
    t = v.strip(_UWS)
    if not t:
        return True
    low = _alower(t)
    if low in _PLACEHOLDER_WORDS:
        return True
    if (low.startswith(("your_", "your-", "<", "[redacted", "\u2026"))
            or low.endswith(("\u2026", "..."))):
        return True
    if len(t) >= 3 and "A" <= t[0] <= "Z" and "_" in t and t.isascii() \
            and not t.strip(_UPPER + _DIGITS + "_"):
        return True
    first = t[0]
    return _blen(t) >= 3 and first in "*xX.-_#" and t == first * len(t)


def is_reference(v: str) -> bool:
    """`$TOKEN`, `${TOKEN}`, `%TOKEN%`, `{{ secrets.X }}`, `*const T`: names another value."""
    return bool(v) and v[0] in "$%{*"


def _dotted_identifier(v: str) -> bool:
    if "." not in v or not v.isascii():
        return False
    for seg in v.split("."):
        if not seg or not (seg[0] in _ALPHA or seg[0] == "_") or seg.strip(_WORD_CHARS):
            return False
    return True


def secret_shaped(v: str) -> bool:
    """Long enough and holding a digit or a symbol other than `_ - .` (non-ASCII counts)."""
    if _blen(v) < 4 or is_placeholder(v) or is_reference(v):
        return False
    return bool(v.translate(_DEL_WORDLIKE))


_DEL_WORDLIKE = {ord(c): None for c in _LETTERS + "_-."}


def is_secret_name(ident: str) -> bool:
    """A name that ENDS in a sensitive word (`DB_PASSWORD`, `apiKey`, `x-api-key`,
    `clientSecret`); `token_count`, `secret_name`, `PWD`, `NEXT_PUBLIC_API_KEY` are not."""
    low = _alower(ident)
    if not low.endswith(_NAME_TAILS):
        return False
    parts = []
    for chunk in ident.replace("-", "_").replace(".", "_").split("_"):
        if not chunk:
            continue
        start = 0
        for k in range(1, len(chunk)):
            c, p = chunk[k], chunk[k - 1]
            if "A" <= c <= "Z" and ("a" <= p <= "z" or "0" <= p <= "9"):
                parts.append(_alower(chunk[start:k]))
                start = k
        parts.append(_alower(chunk[start:]))
    if not parts or "public" in parts:
        return False
    last = parts[-1]
    if last in _SECRET_LAST:
        return True
    if last in ("pwd", "pass"):
        return len(parts) >= 2
    if last == "key":
        return len(parts) >= 2 and parts[-2] in _KEY_BEFORE
    return False


def _declared_in_code(s: str, i: int) -> bool:
    """`let/const/var/…` right before the name: what follows `name =` is an expression."""
    j = i
    while j > 0:  # skip spaces/tabs backwards, a window at a time
        w = s[max(0, j - 64):j]
        r = w.rstrip(" \t")
        j -= len(w) - len(r)
        if r:
            break
    w = s[max(0, j - 8):j]
    return w[len(w.rstrip(_WORD_CHARS)):] in _DECLARE_WORDS


# --- the rules ------------------------------------------------------------------------------

MAX_TOKEN = 8192
"""Longest Authorization credential the header rule reads (the other rules read whole runs:
with the dead-run memo of `find`, every run is scanned a bounded number of times)."""


def _token_at(s: str, i: int, dead: dict | None = None):
    """Issuer formats at `i`: (rule, start, end) or None. `dead` remembers, per rule, where
    a run that already failed ends: a later start inside that run ends it at the same place
    and fails the same way, so it is not scanned again (hostile `eyJeyJeyJ…` stays linear)."""
    n = len(s)
    if i >= n:
        return None
    if dead is None:
        dead = {}
    c = s[i]
    for rule, prefix, mn in _PREFIX_BY_FIRST.get(c, ()):
        if s.startswith(prefix, i):
            if i < dead.get(prefix, -1):
                continue
            j = i + len(prefix)
            e = _run_end(s, j, _B64ISH)
            if e - j >= mn:
                return (rule, i, e)
            dead[prefix] = e
    if c == "-":
        if s.startswith(_PEM_BEGIN, i):
            for begin, end_marker in _PEM:
                if s.startswith(begin, i):
                    k = s.find(end_marker, i)
                    return ("private_key", i, n if k < 0 else k + len(end_marker))
        return None
    if c == "e" and s.startswith("eyJ", i) and i >= dead.get("eyJ", -1):
        j = _run_end(s, i, _B64URL)
        if j - i >= 10 and j < n and s[j] == "." and s.startswith("eyJ", j + 1):
            k = _run_end(s, j + 1, _B64URL)
            if k - j - 1 >= 10 and k < n and s[k] == ".":
                e = _run_end(s, k + 1, _B64URL)
                if e - k - 1 >= 10:
                    return ("jwt", i, e)
        dead["eyJ"] = j
    if c == "s" and s.startswith("sk-", i) and i >= dead.get("sk-", -1):
        e = _run_end(s, i + 3, _ALNUM, 201)
        tail = e - i - 3
        if 32 <= tail <= 200 and (e >= n or s[e] not in "-_"):
            t = s[i + 3:e]
            if t.strip(_LETTERS) and t.strip(_DIGITS):
                return ("openai_api_key", i, e)
        dead["sk-"] = e
    return None


def _skip_label_gap(s: str, j: int) -> int:
    return _run_end(s, j, _LABEL_SKIP, 8)


def _authorization_header(s: str, low: str, i: int):
    if not low.startswith("authorization", i) or not s[i:i + 13].isascii():
        return None
    n = len(s)
    j = i + 13
    if j < n and s[j] in _WORD:
        return None
    j = _skip_label_gap(s, j)
    if low.startswith("bearer", j) and s[j:j + 6].isascii():
        k = j + 6
    elif low.startswith("basic", j) and s[j:j + 5].isascii():
        k = j + 5
    else:
        return None
    if k >= n or s[k] not in " \t":
        return None
    v = _run_end(s, k, " \t", MAX_TOKEN)
    hit = _token_at(s, v)
    if hit:
        return hit
    e = _run_end(s, v, _BEARER_CHARS, MAX_TOKEN)
    length = e - v
    if length < 8 or not (length >= 24 or secret_shaped(s[v:e])):
        return None
    return ("authorization_header", v, e)


def _aws_secret_key(s: str, low: str, i: int):
    for label in AWS_SECRET_LABELS:
        if low.startswith(label, i) and s[i:i + len(label)].isascii():
            break
    else:
        return None
    j = i + len(label)
    if j < len(s) and s[j] in _WORD:
        return None
    j = _skip_label_gap(s, j)
    e = _run_end(s, j, _AWS_SECRET_CHARS, 41)  # exactly 40: never read past the 41st
    return ("aws_secret_key", j, e) if e - j == 40 else None


def _url_credentials(s: str, i: int):
    """`scheme://user:password@host`: the userinfo is replaced. `i` is the `:` of `://`."""
    w = s[max(0, i - _SCHEME_MAX):i]
    st = i - (len(w) - len(w.rstrip(_ALNUM + "+.-")))
    if st == i or s[st] not in _ALPHA:
        return None
    a = i + 3
    stop = _first_stop(s, a, _URL_STOP, _URL_USERINFO_MAX)
    at = s.rfind("@", a, stop)
    if at < 0:
        return None
    info = s[a:at]
    k = info.find(":")
    if k < 0:
        return None
    pw = info[k + 1:]
    if not pw or is_placeholder(pw) or is_reference(pw):
        return None
    return ("url_credentials", a, at)


def _generic_assignment(s: str, i: int):
    """`KEY=value`, `key: value`, `"key": "value"`, `--password value`: the value."""
    n = len(s)
    if s[i] not in _ALPHA:
        return None
    end = _run_end(s, i, _IDENT, MAX_IDENT)
    while end > i and s[end - 1] in ".-":
        end -= 1
    if not is_secret_name(s[i:end]):
        return None
    flag = i >= 2 and s[i - 1] == "-" and s[i - 2] == "-"
    j = _run_end(s, end, "\"'\\`", 3)
    k = _run_end(s, j, " \t")
    spaced = k > j
    j = k
    sep = None
    if j < n and s[j] in "=:":
        c = s[j]
        nxt = s[j + 1] if j + 1 < n else ""
        if (c == "=" and nxt == "=") or (c == ":" and nxt in (":", "?", "-", "+")) \
                or (c == ":" and nxt == "=" and not spaced):
            return None
        sep = c
        j += 1
        if j < n and ((c == ":" and s[j] == "=") or (c == "=" and s[j] == ">")):
            sep = c + s[j]  # `:=` (Go) and `=>` (Ruby, PHP) assign too, but are not env-style
            j += 1
    v = _run_end(s, j, " \t")
    space_after = v > j
    if sep is None:
        if not flag or not spaced or (v < n and s[v] == "-"):
            return None
    if v + 1 < n and s[v] == "\\" and s[v + 1] in "\"'":
        v += 1
    quoted = v < n and s[v] in "\"'"
    if quoted:
        vs = v + 1
        ve = _first_stop(s, vs, _QUOTE_STOP[s[v]], MAX_ASSIGNED_VALUE)
    else:
        vs = v
        ve = _first_stop(s, vs, _VALUE_STOP, MAX_ASSIGNED_VALUE)
    value = s[vs:ve]
    if _blen(value) < 3:
        return None
    if (is_placeholder(value) or is_reference(value) or _has_ws(value) or "://" in value
            or value.endswith(":") or _token_at(s, vs)):
        return None
    env_style = sep == "=" and not spaced and not space_after
    if not quoted:
        nc = s[ve] if ve < n else ""
        if nc in ("(", "[", "<") or "::" in value or _dotted_identifier(value) \
                or _declared_in_code(s, i):
            return None
        if value.endswith("!"):
            a = _run_end(s, ve, " \t")
            if a < n and s[a] in "{([":
                return None
        if not env_style and (nc in (",", ";") or "*" in value):
            return None
    if not env_style:
        if not secret_shaped(value) or (value.isascii() and value.isdigit() and not flag):
            return None
    return ("generic_assignment", vs, ve)


_QUOTE_STOP = {q: _delim_table(q + "\\\n\r") for q in "\"'"}


def _at(s: str, low: str, i: int, dead: dict):
    """The hit a rule makes when the walk stands at `i`, or None."""
    c = s[i]
    if c == ":":
        return _url_credentials(s, i) if s.startswith("://", i) else None
    if i and s[i - 1] in _WORD:
        return None
    if c in _ALPHA:
        return (_token_at(s, i, dead) or _authorization_header(s, low, i)
                or _aws_secret_key(s, low, i) or _generic_assignment(s, i))
    if c == "-":
        return _token_at(s, i, dead)
    return None


# --- anchors --------------------------------------------------------------------------------

def _all(hay: str, needle: str, out: list, shift: int = 0):
    k = hay.find(needle)
    while k >= 0:
        out.append(k + shift)
        k = hay.find(needle, k + 1)


# (gate searched in the text, exact prefixes whose positions are candidates)
_CASED_GATES = (
    ("AKIA", ("AKIA",)), ("ASIA", ("ASIA",)),
    ("gh", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")), ("github_pat_", ("github_pat_",)),
    ("xox", ("xoxb-", "xoxp-", "xoxa-", "xoxr-")),
    ("AIza", ("AIza",)),
    ("k_", ("sk_live_", "sk_test_", "rk_live_")),
    ("sk-", ("sk-",)),
    ("npm_", ("npm_",)), ("sbp_", ("sbp_",)), ("vercel_", ("vercel_",)),
    ("eyJ", ("eyJ",)), (_PEM_BEGIN, (_PEM_BEGIN,)),
)


def _generic_candidates(s: str, low: str, out: list):
    """Word starts of names that end in a sensitive word and are followed by `=`/`:` (after
    optional closing quotes and blanks) or, for `--flag value`, by blanks."""
    n = len(s)
    for gate, words in _TAIL_ANCHORS:
        t = low.find(gate)
        while t >= 0:
            for word in words:
                if not low.startswith(word, t):
                    continue
                e = t + len(word)
                if e >= n or s[e] in _IDENT:
                    continue  # the name goes on (or is cut), no assignment can follow it
                q = _run_end(s, e, "\"'\\`", 3)
                j = _run_end(s, q, " \t")
                if not (j < n and s[j] in "=:") and not (j > q and "--" in s[max(0, e - 66):t]):
                    continue
                lo = max(0, e - MAX_IDENT)
                w = s[lo:t]
                for p in range(lo + len(w.rstrip(_IDENT)), t + 1):
                    if s[p] in _ALPHA and (p == 0 or s[p - 1] not in _WORD):
                        out.append(p)
            t = low.find(gate, t + 1)


def _lowered(s: str) -> str:
    low = s.lower()
    if len(low) != len(s) or "\u212a" in s:  # keep indices, compare ASCII case only
        low = s.translate(_ASCII_LOWER)
    return low


def _candidates(s: str, low: str) -> list:
    out: list = []
    for gate, prefixes in _CASED_GATES:
        if gate in s:
            for p in prefixes:
                _all(s, p, out)
    if "://" in s:
        _all(s, "://", out)
    if "authorization" in low:
        _all(low, "authorization", out)
    if "secret" in low:
        for label in AWS_SECRET_LABELS:
            _all(low, label, out)
    if "pass" in low or "pwd" in low or "secret" in low or "token" in low or "key" in low:
        _generic_candidates(s, low, out)
    return out


def find(text: str) -> list:
    """Every secret span in `text`: [(rule, start, end)], ordered, non-overlapping."""
    if not isinstance(text, str) or len(text) < 7:
        return []
    low = _lowered(text)
    cands = _candidates(text, low)
    if not cands:
        return []
    hits = []
    pos = 0
    dead: dict = {}
    for i in sorted(set(cands)):
        if i < pos:
            continue
        h = _at(text, low, i, dead)
        if h is not None:
            hits.append(h)
            pos = h[2]
    return hits


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


def has_issuer_prefix(text: str, min_tail: int = 8) -> bool:
    """A looser test for metadata, where a false positive only costs one attr: an issuer
    prefix (`ghp_`, `AKIA`, `sk-ant-`, `xoxb-`, `eyJ`, `sk-`, …) starting a word and followed
    by at least `min_tail` token characters, whatever the issuer's real minimum length."""
    if not isinstance(text, str) or len(text) < min_tail + 3:
        return False
    for gate, prefixes in _CASED_GATES:
        if gate not in text or gate == _PEM_BEGIN:
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


def _redact_json(v, counter: list, memo: dict):
    # explicit loops (not comprehensions): one Python frame per nesting level; short strings
    # and scalars are handled in the loop, without a call
    if isinstance(v, str):
        return v if len(v) < 7 else _redact_text(v, counter, memo)
    if isinstance(v, list):
        before = counter[0]
        items = []
        for x in v:
            if isinstance(x, str):
                items.append(x if len(x) < 7 else _redact_text(x, counter, memo))
            elif isinstance(x, (int, float, bool, type(None))):
                items.append(x)
            else:
                items.append(_redact_json(x, counter, memo))
        return v if counter[0] == before else items
    if isinstance(v, dict):
        before = counter[0]
        members = {}
        for k, x in v.items():
            special = False
            if isinstance(k, str):
                if len(k) >= 7:  # a secret used as a key is still a secret
                    k = _redact_text(k, counter, memo)
                special = _special_name(k)
            if isinstance(x, str):
                if special:
                    members[k] = _redact_member(k, x, counter, memo)
                else:
                    members[k] = x if len(x) < 7 else _redact_text(x, counter, memo)
            elif isinstance(x, (int, float, bool, type(None))):
                members[k] = x
            else:
                members[k] = _redact_json(x, counter, memo)
        return v if counter[0] == before else members
    return v


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
    dict to several calls to scan a long string that occurs in several places only once."""
    return _redact_json(v, [0] if counter is None else counter, {} if memo is None else memo)
