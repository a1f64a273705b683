"""The scanner of ruleset `secrets-v2`: character classes, the value and name tests, the rules,
and `find` (every secret span of a text). redaction.py holds the invariants (its docstring),
the replacing (`redact`, a fixed point) and the JSON walk; this module only finds.
No `re`, `json` or `hashlib` import: it is on the hook path.
"""

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
    # GitLab (docs.gitlab.com security/tokens, "Token prefixes"): personal, project, group and
    # impersonation tokens (glpat-), OAuth application secrets, deploy, runner authentication,
    # pipeline trigger, CI/CD job, feed, incoming mail, agent, SCIM and feature-flag client
    # tokens, and the deprecated runner registration tokens (GR1348941, no separator).
    ("gitlab_token", "glpat-", 20),
    ("gitlab_token", "gloas-", 20),
    ("gitlab_token", "gldt-", 20),
    ("gitlab_token", "glrt-", 20),
    ("gitlab_token", "glptt-", 20),
    ("gitlab_token", "glcbt-", 20),
    ("gitlab_token", "glft-", 20),
    ("gitlab_token", "glimt-", 20),
    ("gitlab_token", "glagent-", 20),
    ("gitlab_token", "glsoat-", 20),
    ("gitlab_token", "glffct-", 20),
    ("gitlab_token", "GR1348941", 20),
    # issuers' documented token prefixes beyond the reference's list (a token seen in a command
    # line, an .env or a log is redacted like the others)
    ("pypi_token", "pypi-AgE", 50),  # a macaroon: base64 that begins AgE
    ("huggingface_token", "hf_", 30),  # mixed-case alphanumerics (not a lower-case identifier)
    ("sendgrid_key", "SG.", 16),  # SG.<id>.<secret>: both parts
    ("digitalocean_token", "dop_v1_", 64),
    ("digitalocean_token", "doo_v1_", 64),
    ("digitalocean_token", "dor_v1_", 64),
)
GITLAB_PREFIXES = tuple(p for rule, p, _m in PREFIXED if rule == "gitlab_token")
_GITLAB_DASHED = tuple(p for p in GITLAB_PREFIXES if p.endswith("-"))
_GITLAB_WORDISH = _LOWER + "-_"
_ROUTABLE_CRC = 16
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
_KEY_BEFORE = frozenset(("api", "secret", "access", "private", "auth", "account"))  # account: Azure storage

_PLACEHOLDER_WORDS = frozenset((
    "null", "none", "nil", "true", "false", "undefined", "string", "str", "bool", "boolean",
    "number", "int", "integer", "required", "optional", "redacted", "masked", "empty", "todo",
    "tbd", "value", "example"))
_DECLARE_WORDS = frozenset(("let", "const", "var", "mut", "val", "final", "static", "pub", "def"))

# Characters that end an unquoted value: ASCII whitespace and punctuation that closes a token.
_VALUE_DELIMS = " \t\n\x0c\r\"'`,;&|<>(){}[]\\"
# Characters that end the userinfo scan of a URL.
_URL_STOPS = "/?# \t\n\r\"'<>`)]}\\"


def _delim_table(chars: str) -> bytes:
    """A `bytes.translate` table: the (ASCII) stop characters to 0, a NUL to 1 (a NUL in the
    text must not look like a stop), every other byte to itself (UTF-8 bytes of non-ASCII
    characters are >= 0x80, never a stop)."""
    t = bytearray(range(256))
    for c in chars:
        t[ord(c)] = 0
    t[0] = 1
    return bytes(t)


_VALUE_STOP = _delim_table(_VALUE_DELIMS)
_URL_STOP = _delim_table(_URL_STOPS)


# --- small helpers --------------------------------------------------------------------------

def _alower(s: str) -> str:
    """ASCII-only lower-casing (what `eq_ignore_ascii_case` compares)."""
    if s.isascii():
        return s.lower()
    for c in _UPPER:  # `str.translate` would raise and catch a KeyError per other character
        if c in s:
            s = s.replace(c, _LOWER[ord(c) - 65])
    return s


def _blen(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _run_end(s: str, i: int, chars: str, limit: int = -1) -> int:
    """End of the run of `chars` starting at `i` (at most `limit` long when limit >= 0),
    measured by `str.lstrip` on bounded windows, so long runs cost C time only."""
    if i >= len(s) or s[i] not in chars or not limit:
        return i  # most runs asked about are empty
    n = len(s) if limit < 0 else min(len(s), i + limit)
    j = i
    while j < n:
        w = s[j:min(n, j + 256)]
        k = len(w) - len(w.lstrip(chars))
        j += k
        if k < len(w):
            break
    return j


def _first_stop(s: str, start: int, table: bytes, max_bytes: int) -> int:
    """Index of the first stop character at or after `start` within `max_bytes` UTF-8 bytes,
    or the end of that window (cut back to a whole character). Measured on the window's
    UTF-8 bytes (`bytes.translate` and `find`: C time, whatever the characters)."""
    w = s[start:start + max_bytes]
    if w.isascii():
        k = w.encode("ascii").translate(table).find(0)
        return start + (k if k >= 0 else len(w))
    b = w.encode("utf-8", "surrogatepass")
    k = b.translate(table).find(0)
    cut = len(b) if k < 0 else k
    if cut > max_bytes:
        cut = max_bytes
        while 0xC0 & b[cut] == 0x80:  # step back to the start of a character
            cut -= 1
    return start + len(b[:cut].decode("utf-8", "surrogatepass"))


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
    return bool(v.strip(_WORDLIKE))  # a character outside them is left, wherever it is


_WORDLIKE = _LETTERS + "_-."


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

# Issuer formats by their first three characters (every prefix has at least four), in
# priority order: at one position only the formats of its three characters can start.
_PREFIX_BY_HEAD: dict = {}
for _rule, _prefix, _min in PREFIXED:
    _PREFIX_BY_HEAD.setdefault(_prefix[:3], []).append((_rule, _prefix, _min))


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
    for rule, prefix, mn in _PREFIX_BY_HEAD.get(s[i:i + 3], ()):
        if s.startswith(prefix, i):
            if i < dead.get(prefix, -1):
                continue
            j = i + len(prefix)
            e = _run_end(s, j, _B64ISH)
            if e - j >= mn:
                if rule == "sendgrid_key":
                    k = _run_end(s, e + 1, _B64ISH) if e < n and s[e] == "." else e
                    if k - e - 1 >= 20:
                        return (rule, i, k)
                elif rule not in ("gitlab_token", "huggingface_token"):
                    return (rule, i, e)
                elif s[j:e].strip(_GITLAB_WORDISH):  # `glrt-runner-authentication-setup` stays
                    return (rule, i, _routable_end(s, e) if rule == "gitlab_token" else e)
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


def _routable_end(s: str, e: int) -> int:
    """A GitLab routable token goes on past its random part as `.<version>.<checksum>`
    (`glpat-<payload>.01.<crc>`): the span takes them too when both are there."""
    if e >= len(s) or s[e] != ".":
        return e
    d = _run_end(s, e + 1, _DIGITS, 3)
    if d == e + 1 or d - e - 1 > 2 or d >= len(s) or s[d] != ".":
        return e
    k = _run_end(s, d + 1, _ALNUM, _ROUTABLE_CRC + 1)
    return k if d + 1 < k <= d + 1 + _ROUTABLE_CRC else e


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


class _Stops:
    """`_first_stop` over one text for one scan. In an ASCII text, a window is measured at a
    time until the windows would add up to the text, then the whole text is translated once
    per table (dense hostile input — `a://a://…`, `password=password=…` — costs one C pass,
    not one per anchor)."""

    __slots__ = ("s", "n", "ascii", "full", "spent")

    def __init__(self, s: str):
        self.s = s
        self.n = len(s)
        self.ascii = s.isascii()
        self.full: dict = {}
        self.spent: dict = {}

    def first(self, start: int, table: bytes, max_bytes: int) -> int:
        if not self.ascii:
            return _first_stop(self.s, start, table, max_bytes)
        tt = self.full.get(table)
        if tt is None:
            spent = self.spent.get(table, 0) + max_bytes
            if spent < self.n:
                self.spent[table] = spent
                return _first_stop(self.s, start, table, max_bytes)
            tt = self.full[table] = self.s.encode("ascii").translate(table)
        k = tt.find(0, start, start + max_bytes)
        return k if k >= 0 else min(self.n, start + max_bytes)


def _url_credentials(s: str, i: int, stops: _Stops | None = None):
    """`scheme://user:password@host`: the userinfo is replaced. `i` is the `:` of `://`."""
    w = s[max(0, i - _SCHEME_MAX):i]
    st = i - (len(w) - len(w.rstrip(_ALNUM + "+.-")))
    if st == i or s[st] not in _ALPHA:
        return None
    a = i + 3
    if s.find("@", a, a + _URL_USERINFO_MAX) < 0:  # the userinfo window is at most that long
        return None
    if stops is None:
        stop = _first_stop(s, a, _URL_STOP, _URL_USERINFO_MAX)
    else:
        stop = stops.first(a, _URL_STOP, _URL_USERINFO_MAX)
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


def _generic_at(s: str, i: int, q: int, j: int, stops: _Stops | None = None):
    """`KEY=value`, `key: value`, `"key": "value"`, `--password value`: the value. `i` starts
    a secret name (`_generic_names` proved it), `q` ends the closing quotes after it (at most
    three) and `j` the blanks after those."""
    n = len(s)
    flag = i >= 2 and s[i - 1] == "-" and s[i - 2] == "-"
    spaced = j > q
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
        table = _QUOTE_STOP[s[v]]
    else:
        vs = v
        table = _VALUE_STOP
    if stops is None:
        ve = _first_stop(s, vs, table, MAX_ASSIGNED_VALUE)
    else:
        ve = stops.first(vs, table, MAX_ASSIGNED_VALUE)
    value = s[vs:ve]
    facts = _VALUE_FACTS.get(value)
    if facts is None:
        facts = _value_facts(value)
    refused, code, shapeless, digits, bang, star = facts
    if refused:
        return None
    env_style = sep == "=" and not spaced and not space_after
    if not env_style and (shapeless or (digits and not flag)):
        return None
    if not quoted:
        if code:
            return None
        nc = s[ve] if ve < n else ""
        if nc in ("(", "[", "<") or (not env_style and (nc in (",", ";") or star)):
            return None
        if bang:
            a = _run_end(s, ve, " \t")
            if a < n and s[a] in "{([":
                return None
        if _declared_in_code(s, i):
            return None
    if s[vs:vs + 3] in _TOKEN_HEADS and _token_at(s, vs):
        return None
    return ("generic_assignment", vs, ve)


_QUOTE_STOP = {q: _delim_table(q + "\\\n\r") for q in "\"'"}
# What starts an issuer format: `_token_at` finds nothing at a position without these.
_TOKEN_HEADS = frozenset(list(_PREFIX_BY_HEAD) + [_PEM_BEGIN[:3], "eyJ", "sk-"])
_VALUE_FACTS: dict = {}


def _value_facts(value: str) -> tuple:
    """What the generic rule asks of a value alone (all pure, so asked once per distinct
    value, bounded): (refused whatever the context: short, a placeholder, a reference,
    blanks, a URL, a trailing `:`; code when unquoted: `a::b`, `a.b.c`; not secret-shaped;
    all digits; ends in `!`; holds `*`)."""
    facts = (_blen(value) < 3 or is_placeholder(value) or is_reference(value)
             or _has_ws(value) or "://" in value or value.endswith(":"),
             "::" in value or _dotted_identifier(value),
             not secret_shaped(value),
             value.isascii() and value.isdigit(),
             value.endswith("!"),
             "*" in value)
    if len(_VALUE_FACTS) >= 4096:
        _VALUE_FACTS.clear()
    _VALUE_FACTS[value] = facts
    return facts


def is_flag_name(arg: str) -> bool:
    """A command-line argument that is a whole secret-named long option (`--token`,
    `--api-key`, `--db-password`): the next argument is its value (argv lists, where no
    text joins the two: redaction.py)."""
    ok = _FLAG_CACHE.get(arg)
    if ok is None:
        name = arg[2:]
        ok = (arg.startswith("--") and 5 <= len(name) <= MAX_IDENT and name[0] in _ALPHA
              and not name.strip(_IDENT) and name[-1] not in ".-" and is_secret_name(name))
        if len(_FLAG_CACHE) >= 4096:
            _FLAG_CACHE.clear()
        _FLAG_CACHE[arg] = ok
    return ok


_FLAG_CACHE: dict = {}


def is_flag_value(v: str) -> bool:
    """Whether the argument after a secret-named long option is its value, judged as the
    generic rule judges `--password VALUE` in a command line: not another option, not a
    placeholder, reference, URL, code (`a::b`, `a.b.c`) or blank-holding text, and shaped like
    a secret (a digit or a symbol other than `_ - .`; all digits count)."""
    if not v or v[0] == "-":
        return False
    facts = _VALUE_FACTS.get(v)
    if facts is None:
        facts = _value_facts(v)
    return not (facts[0] or facts[1] or facts[2])


# --- anchors --------------------------------------------------------------------------------
#
# A rule can only hit where its anchor is: an issuer prefix, `://`, `authorization`, an AWS
# label, or the start of a secret name that a separator follows. `find` marks each anchor
# with the rules it can start (rules whose anchor is elsewhere would return None there, and
# touch nothing), drops anchors that follow a word character (every rule but the URL one
# refuses those), and asks the marked rules only, in priority order.

_T, _AU, _AW, _G, _U = 1, 2, 4, 8, 16   # issuer format, authorization, AWS label, name, URL
_IDENT_SET = frozenset(_IDENT)
_QUOTES = "\"'\\`"
# (gate searched in the lowered text, [(tail word, its length, alone it is never a name)])
_TAILS = tuple((gate, tuple((w, len(w), w in ("pass", "pwd", "key")) for w in words))
               for gate, words in _TAIL_ANCHORS)
_NAME_CACHE: dict = {}


def _secret_name_cached(name: str) -> bool:
    ok = is_secret_name(name)
    if len(_NAME_CACHE) >= 4096:
        _NAME_CACHE.clear()
    _NAME_CACHE[name] = ok
    return ok


def _mark(s: str, hay: str, needle: str, marks: dict, bit: int):
    """Every position of `needle` in `hay` (`s` or its lowered copy: word characters at the
    same places) that does not follow a word character of `s`."""
    k = hay.find(needle)
    while k >= 0:
        if k == 0 or s[k - 1] not in _WORD:
            marks[k] = marks.get(k, 0) | bit
            k = hay.find(needle, k + 1)
        elif needle[0] in _WORD:
            # inside a run of word characters: every later start in it follows one too
            k = hay.find(needle, _run_end(s, k, _WORD_CHARS))
        else:
            k = hay.find(needle, k + 1)


def _generic_names(s: str, low: str, marks: dict, found: dict):
    """Mark the starts of names that end in a sensitive word, are secret names, and are
    followed by `=`/`:` (after optional closing quotes and blanks; not `==`, `::`, `:-`, …)
    or, for `--flag value`, by blanks and a value. `found[start]` = (end of the quotes, end
    of the blanks) for `_generic_at`."""
    n = len(s)
    ident = _IDENT_SET
    names = _NAME_CACHE
    for gate, words in _TAILS:
        nxt = low.find(gate)
        while nxt >= 0:
            t = nxt
            nxt = low.find(gate, t + 1)
            # the first word that matches (`password` before `pass`) is the only one that
            # can end the name: a shorter one is followed by the rest of the longer one
            for word, size, short in words:
                if low.startswith(word, t):
                    break
            else:
                continue
            e = t + size
            if e >= n or s[e] in ident:
                continue  # the name goes on (or is cut), no assignment can follow it
            joined = t > 0 and s[t - 1] in ident
            if short and not joined:
                continue  # `key`, `pass`, `pwd` alone are never secret names
            c = s[e]
            if c == "=" or c == ":":
                q = j = e
            else:
                q = e
                while q < n and q < e + 3 and s[q] in _QUOTES:
                    q += 1
                j = q
                if j < n and s[j] in " \t":
                    j = _run_end(s, j, " \t")
                c = s[j] if j < n else ""
            if c == "=" or c == ":":
                flagged = False
                after = s[j + 1] if j + 1 < n else ""
                if (c == "=" and after == "=") or (c == ":" and after in (":", "?", "-", "+")) \
                        or (c == ":" and after == "=" and j == q):
                    continue
            elif j == q or j >= n or c == "-":
                continue  # a flag needs blanks, then a value that is not another flag
            else:
                flagged = True
            if joined:
                lo = e - MAX_IDENT if e > MAX_IDENT else 0
                w = s[lo:t]
                b = lo + len(w.rstrip(_IDENT))
                starts = []
                if s[b] in _ALPHA and (b == 0 or s[b - 1] not in _WORD):
                    starts.append(b)
                seg = w[b - lo:]
                if "." in seg or "-" in seg:
                    for d in range(b, t):
                        if s[d] in ".-" and s[d + 1] in _ALPHA:
                            starts.append(d + 1)
            elif s[t] in _ALPHA:
                starts = (t,)
            else:
                continue
            for p in starts:
                if flagged and not (p >= 2 and s[p - 1] == "-" and s[p - 2] == "-"):
                    continue
                name = s[p:e]
                ok = names.get(name)
                if ok is None:
                    ok = _secret_name_cached(name)
                if ok:
                    marks[p] = marks.get(p, 0) | _G
                    found[p] = (q, j)


def _lowered(s: str) -> str:
    if s.isascii():
        return s.lower()
    low = s.lower()
    if len(low) != len(s) or "\u212a" in s:  # keep indices, compare ASCII case only
        low = _alower(s)
    return low


def _marks(s: str, low: str, found: dict) -> dict:
    """{position: rules that may start there} for `find`. A gate character absent from the
    text (memchr-fast) rules out the searches of its prefixes."""
    marks: dict = {}
    if "A" in s:
        _mark(s, s, "AKIA", marks, _T)
        _mark(s, s, "ASIA", marks, _T)
        _mark(s, s, "AIza", marks, _T)
    if "_" in s:
        if "gh" in s:
            for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
                _mark(s, s, p, marks, _T)
        _mark(s, s, "github_pat_", marks, _T)
        if "k_" in s:
            for p in ("sk_live_", "sk_test_", "rk_live_"):
                _mark(s, s, p, marks, _T)
        for p in ("npm_", "sbp_", "vercel_", "hf_", "dop_v1_", "doo_v1_", "dor_v1_"):
            _mark(s, s, p, marks, _T)
    if "SG." in s:
        _mark(s, s, "SG.", marks, _T)
    if "pypi-AgE" in s:
        _mark(s, s, "pypi-AgE", marks, _T)
    if "G" in s and "R" in s and "GR1348941" in s:
        _mark(s, s, "GR1348941", marks, _T)
    if "-" in s:
        k = s.find("gl")  # one search for every GitLab prefix (one each costs ten times more)
        while k >= 0:
            if s.startswith(_GITLAB_DASHED, k) and (k == 0 or s[k - 1] not in _WORD):
                marks[k] = marks.get(k, 0) | _T
            k = s.find("gl", k + 2)
        if "xox" in s:
            for p in ("xoxb-", "xoxp-", "xoxa-", "xoxr-"):
                _mark(s, s, p, marks, _T)
        _mark(s, s, "sk-", marks, _T)  # also where `sk-ant-` and `sk-proj-` start
        if _PEM_BEGIN in s:
            for begin, _end in _PEM:
                _mark(s, s, begin, marks, _T)
    if "J" in s:
        _mark(s, s, "eyJ", marks, _T)
    if "@" in s:
        k = s.find("://")
        while k >= 0:
            marks[k] = _U
            k = s.find("://", k + 1)
    if "z" in low and "authorization" in low:
        _mark(s, low, "authorization", marks, _AU)
    if "secret" in low:
        for label in AWS_SECRET_LABELS:
            _mark(s, low, label, marks, _AW)
    if "=" in s or ":" in s or ("-" in s and "--" in s):
        _generic_names(s, low, marks, found)
    return marks


def find(text: str) -> list:
    """Every secret span in `text`: [(rule, start, end)], ordered, non-overlapping."""
    if not isinstance(text, str) or len(text) < 7:
        return []
    s = text
    low = _lowered(s)
    found: dict = {}
    marks = _marks(s, low, found)
    if not marks:
        return []
    hits = []
    pos = 0
    dead: dict = {}
    stops = None
    for i in sorted(marks):
        if i < pos:
            continue
        b = marks[i]
        if b == _U:
            if stops is None:
                stops = _Stops(s)
            h = _url_credentials(s, i, stops)
        else:
            h = None
            if b & _T:
                h = _token_at(s, i, dead)
            if h is None and b & _AU:
                h = _authorization_header(s, low, i)
            if h is None and b & _AW:
                h = _aws_secret_key(s, low, i)
            if h is None and b & _G:
                if stops is None:
                    stops = _Stops(s)
                q, j = found[i]
                h = _generic_at(s, i, q, j, stops)
        if h is not None:
            hits.append(h)
            pos = h[2]
    return hits


# What redaction.py (the metadata test, the JSON walk) takes from here, by public names.
UWS, WORD, B64ISH, PEM_BEGIN = _UWS, _WORD, _B64ISH, _PEM_BEGIN
ascii_lower, blen, run_end = _alower, _blen, _run_end
has_ws, dotted_identifier = _has_ws, _dotted_identifier
