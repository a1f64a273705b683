"""secrets-v2: every rule of reference/capture.md §4.2, held against an independent,
regex-based reference implementation (below) with hand-written and generated cases."""

import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attemptdb.ingest import redaction as secrets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --- the reference implementation: one regex per rule, tried at every position ---------------

REF_PREFIXED = [
    ("aws_access_key_id", "AKIA", 16), ("aws_access_key_id", "ASIA", 16),
    ("github_token", "ghp_", 36), ("github_token", "gho_", 36), ("github_token", "ghu_", 36),
    ("github_token", "ghs_", 36), ("github_token", "ghr_", 36),
    ("github_token", "github_pat_", 22),
    ("slack_token", "xoxb-", 10), ("slack_token", "xoxp-", 10), ("slack_token", "xoxa-", 10),
    ("slack_token", "xoxr-", 10), ("google_api_key", "AIza", 35),
    ("stripe_key", "sk_live_", 20), ("stripe_key", "sk_test_", 20), ("stripe_key", "rk_live_", 20),
    ("anthropic_api_key", "sk-ant-", 20), ("openai_api_key", "sk-proj-", 20),
    ("npm_token", "npm_", 36), ("supabase_service_key", "sbp_", 20), ("vercel_token", "vercel_", 20),
] + [("gitlab_token", p, 20) for p in ("glpat-", "gloas-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-",
                                       "glimt-", "glagent-", "glsoat-", "glffct-", "GR1348941")]
R_ROUTABLE = re.compile(r"\.[0-9]{1,2}\.[A-Za-z0-9]{1,16}(?![A-Za-z0-9])")
R_PREFIXED = [(rule, re.compile(re.escape(p) + r"([A-Za-z0-9_\-+/=]*)"), n) for rule, p, n in REF_PREFIXED]
R_PEM = re.compile("-----BEGIN (RSA PRIVATE KEY|EC PRIVATE KEY|DSA PRIVATE KEY|OPENSSH PRIVATE KEY|"
                   "PRIVATE KEY|ENCRYPTED PRIVATE KEY|PGP PRIVATE KEY BLOCK)-----")
R_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{7,}\.eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{10,}")
R_LEGACY = re.compile(r"sk-([A-Za-z0-9]{32,200})(?![A-Za-z0-9_-])")
R_WORDCH = re.compile(r"[A-Za-z0-9_]")
R_AUTH = re.compile(r"(?ai:authorization)(?![A-Za-z0-9_])[ \t\"'\\:=]{0,8}+(?ai:bearer|basic)[ \t]++")
R_BEARER = re.compile(r"[A-Za-z0-9._~+/=-]*")
R_AWS = re.compile(r"(?>(?ai:aws_secret_access_key|aws_secret_key|awssecretaccesskey|secretaccesskey|"
                   r"secret_access_key))(?![A-Za-z0-9_])[ \t\"'\\:=]{0,8}+([A-Za-z0-9/+=]*)")
R_SCHEME = re.compile(r"[A-Za-z0-9+.\-]+\Z")
R_USERINFO = re.compile(r"[^/?# \t\n\r\"'<>`)\]}\\]*")
WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
R_WS = re.compile("[" + WS + "]")
R_TRIM = re.compile("^[" + WS + "]+|[" + WS + "]+$")
R_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")
R_AFTER_NAME = re.compile(r"(?P<q>[\"'\\`]{0,3}+)(?P<sp>[ \t]*+)(?P<sep>==|:[:?\-+]|:=|=>|[=:])?(?P<sa>[ \t]*+)")
R_UNQUOTED = re.compile(r"[^ \t\n\x0c\r\"'`,;&|<>(){}\[\]\\]*")
R_QUOTED = {q: re.compile(r"[^%s\\\n\r]*" % q) for q in "\"'"}
R_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+", re.ASCII)
R_DECL = re.compile(r"(?<![A-Za-z0-9_])(?:let|const|var|mut|val|final|static|pub|def)[ \t]*\Z")
R_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
PLACEHOLDER_WORDS = {"null", "none", "nil", "true", "false", "undefined", "string", "str", "bool",
                     "boolean", "number", "int", "integer", "required", "optional", "redacted",
                     "masked", "empty", "todo", "tbd", "value", "example"}


def alower(s):
    return re.sub("[A-Z]", lambda m: m.group().lower(), s)


def blen(s):
    return len(s.encode("utf-8", "surrogatepass"))


def cut_bytes(s, limit):
    while blen(s) > limit:
        s = s[:-1]
    return s


def ref_placeholder(v):
    t = R_TRIM.sub("", v)
    if not t:
        return True
    low = alower(t)
    if low in PLACEHOLDER_WORDS or re.match(r"your_|your-|<|\[redacted|…", low) or re.search(r"(…|\.\.\.)\Z", low):
        return True
    if re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", t) and "_" in t:
        return True
    return bool(re.fullmatch(r"([*xX.\-_#])\1{2,}", t))


def ref_reference(v):
    return bool(re.match(r"[$%{*]", v))


def ref_secret_shaped(v):
    return blen(v) >= 4 and not ref_placeholder(v) and not ref_reference(v) and bool(re.search(r"[^A-Za-z_.\-]", v))


def ref_secret_name(name):
    if not re.search(r"(?ai:password|passwd|passphrase|secret|token|key|pwd|pass)\Z", name):
        return False
    parts = [alower(w) for chunk in re.split(r"[_.\-]", name) if chunk for w in R_CAMEL.split(chunk)]
    if not parts or "public" in parts:
        return False
    last = parts[-1]
    if last in {"password", "passwd", "passphrase", "secret", "token", "apikey", "secretkey",
                "accesskey", "privatekey", "authtoken", "clientsecret"}:
        return True
    if last in ("pwd", "pass"):
        return len(parts) >= 2
    return last == "key" and len(parts) >= 2 and parts[-2] in {"api", "secret", "access", "private", "auth"}


def ref_flag_name(arg):
    """`--token`, `--api-key`: a whole secret-named long option (argv lists)."""
    m = re.fullmatch(r"--([A-Za-z][A-Za-z0-9_.\-]{4,63})", arg)
    return bool(m) and not arg.endswith((".", "-")) and ref_secret_name(m.group(1))


def ref_flag_value(v):
    """The argument after such an option, when it is a value shaped like a secret."""
    return (not v.startswith("-") and blen(v) >= 3 and not ref_placeholder(v) and not ref_reference(v)
            and not R_WS.search(v) and "://" not in v and not v.endswith(":") and "::" not in v
            and not R_DOTTED.fullmatch(v) and ref_secret_shaped(v))


def ref_token(s, i):
    if i >= len(s):
        return None
    for rule, rx, mn in R_PREFIXED:
        m = rx.match(s, i)
        if m and len(m.group(1)) >= mn:
            if rule != "gitlab_token":
                return (rule, i, m.end())
            if re.search(r"[^a-z_\-]", m.group(1)):  # a kebab/snake identifier is not a token
                r = R_ROUTABLE.match(s, m.end())
                return (rule, i, r.end() if r else m.end())
    m = R_PEM.match(s, i)
    if m:
        end = s.find("-----END " + m.group(1) + "-----", i)
        return ("private_key", i, len(s) if end < 0 else end + len("-----END " + m.group(1) + "-----"))
    m = R_JWT.match(s, i)
    if m:
        return ("jwt", i, m.end())
    m = R_LEGACY.match(s, i)
    if m and re.search("[0-9]", m.group(1)) and re.search("[A-Za-z]", m.group(1)):
        return ("openai_api_key", i, m.end())
    return None


def ref_auth(s, i):
    m = R_AUTH.match(s, i)
    if not m:
        return None
    v = m.end()
    t = ref_token(s, v)
    if t:
        return t
    tok = R_BEARER.match(s, v).group()
    if len(tok) < 8 or not (len(tok) >= 24 or ref_secret_shaped(tok)):
        return None
    return ("authorization_header", v, v + len(tok))


def ref_aws(s, i):
    m = R_AWS.match(s, i)
    if m and len(m.group(1)) == 40:
        return ("aws_secret_key", m.start(1), m.end(1))
    return None


def ref_url(s, i):
    m = R_SCHEME.search(s[max(0, i - 16):i])
    if not m or not re.match("[A-Za-z]", m.group()):
        return None
    a = i + 3
    window = cut_bytes(s[a:a + 512], 512)
    info = R_USERINFO.match(window).group()
    if "@" not in info:
        return None
    userinfo = info[:info.rindex("@")]
    if ":" not in userinfo:
        return None
    pw = userinfo.split(":", 1)[1]
    if not pw or ref_placeholder(pw) or ref_reference(pw):
        return None
    return ("url_credentials", a, a + len(userinfo))


def ref_generic(s, i):
    m = R_IDENT.match(s, i)
    if not m:
        return None
    name = m.group().rstrip(".-")
    if not ref_secret_name(name):
        return None
    flag = s[max(0, i - 2):i] == "--"
    a = R_AFTER_NAME.match(s, i + len(name))
    sep = a.group("sep")
    if sep == "==" or (sep and sep[0] == ":" and sep[1:] in (":", "?", "-", "+")):
        return None
    if sep == ":=" and not a.group("sp"):
        return None
    v = a.end()
    if sep is None and (not flag or not a.group("sp") or s[v:v + 1] == "-"):
        return None
    if s[v:v + 1] == "\\" and s[v + 1:v + 2] in ("\"", "'") and s[v + 1:v + 2]:
        v += 1
    quoted = s[v:v + 1] in ("\"", "'") and s[v:v + 1] != ""
    vs = v + 1 if quoted else v
    rx = R_QUOTED[s[v]] if quoted else R_UNQUOTED
    value = cut_bytes(rx.match(s, vs).group()[:512], 512)
    ve = vs + len(value)
    if blen(value) < 3:
        return None
    if (ref_placeholder(value) or ref_reference(value) or R_WS.search(value) or "://" in value
            or value.endswith(":") or ref_token(s, vs)):
        return None
    env_style = sep == "=" and not a.group("sp") and not a.group("sa")
    if not quoted:
        nxt = s[ve:ve + 1]
        after = re.match(r"[ \t]*(.?)", s[ve:], re.S).group(1)
        if (nxt in ("(", "[", "<") and nxt) or "::" in value or R_DOTTED.fullmatch(value) \
                or R_DECL.search(s[:i]) or (value.endswith("!") and after in ("{", "(", "[") and after) \
                or (not env_style and nxt in (",", ";") and nxt) or (not env_style and "*" in value):
            return None
    if not env_style and (not ref_secret_shaped(value) or (re.fullmatch("[0-9]+", value) and not flag)):
        return None
    return ("generic_assignment", vs, ve)


def ref_at(s, i):
    c = s[i]
    if c == ":":
        return ref_url(s, i) if s.startswith("://", i) else None
    if i > 0 and R_WORDCH.match(s[i - 1]):
        return None
    if re.match("[A-Za-z]", c):
        return ref_token(s, i) or ref_auth(s, i) or ref_aws(s, i) or ref_generic(s, i)
    if c == "-":
        return ref_token(s, i)
    return None


def ref_find(s):
    hits = []
    i = 0
    while i < len(s):
        h = ref_at(s, i)
        if h:
            hits.append(h)
            i = h[2]
        else:
            i += 1
    return hits


def ref_redact(s):
    out, last = [], 0
    for rule, a, b in ref_find(s):
        out += [s[last:a], f"[REDACTED:{rule}]"]
        last = b
    return "".join(out) + s[last:]


def check(text):
    """The module and the reference agree, and redaction is a fixed point."""
    got = secrets.find(text)
    assert got == ref_find(text), text
    red, n = secrets.redact(text)
    if got and not ref_find(ref_redact(text)):
        assert red == ref_redact(text) and n == len(got)
    assert secrets.redact(red) == (red, 0)
    return got


R = lambda rule: f"[REDACTED:{rule}]"  # noqa: E731
PEM_RSA = "-----BEGIN " + "RSA PRIVATE KEY-----"
PEM_RSA_END = "-----END " + "RSA PRIVATE KEY-----"
JWT = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
GHP = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


# --- issuer formats ---------------------------------------------------------------------------

ISSUER_CASES = [
    ("AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"),
    ("ASIAY34FZKBOKMUTVV7A", "aws_access_key_id"),
    (GHP, "github_token"),
    ("gho_" + "a" * 36, "github_token"),
    ("ghu_" + "B1" * 18, "github_token"),
    ("ghs_" + "x9" * 18, "github_token"),
    ("ghr_" + "Zz" * 18, "github_token"),
    ("github_pat_11ABCDEFG0123456789abcdefghij", "github_token"),
    ("xoxb-1234567890-abcdefghijkl", "slack_token"),
    ("xoxp-1234567890-abc", "slack_token"),
    ("xoxa-2-abcdefghij", "slack_token"),
    ("xoxr-abcdefghij", "slack_token"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "google_api_key"),
    ("sk_live_51H1234567890abcdefghijkl", "stripe_key"),
    ("sk_test_51H1234567890abcdefghijkl", "stripe_key"),
    ("rk_live_51H1234567890abcdefghijkl", "stripe_key"),
    ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "anthropic_api_key"),
    ("sk-proj-abcdefghijklmnopqrstuvwxyz0123", "openai_api_key"),
    ("sk-" + "a1B2c3D4" * 6, "openai_api_key"),
    ("npm_" + "abcdef0123" * 4, "npm_token"),
    ("sbp_" + "0123456789abcdef0123", "supabase_service_key"),
    ("vercel_" + "AbCdEfGhIjKlMnOpQrSt", "vercel_token"),
    (JWT, "jwt"),
]


@pytest.mark.parametrize("token,rule", ISSUER_CASES)
def test_each_issuer_format_is_found_alone_and_in_context(token, rule):
    assert check(token) == [(rule, 0, len(token))]
    text = f"use {token} now"
    assert check(text) == [(rule, 4, 4 + len(token))]
    assert secrets.redact(text) == (f"use {R(rule)} now", 1)
    # a secret must start a word: glued to an identifier it is not one
    assert check("x" + token) == []
    assert check("x_" + token) == []


@pytest.mark.parametrize("rule,prefix,minimum", REF_PREFIXED)
def test_an_issuer_prefix_needs_its_minimum_tail(rule, prefix, minimum):
    tail = ("Ab3-_+/=" * 10)[:minimum]
    assert check(prefix + tail[:-1]) == []
    assert check(prefix + tail) == [(rule, 0, len(prefix) + minimum)]
    assert check(prefix + tail + "Zz9 rest") == [(rule, 0, len(prefix) + minimum + 3)]


def test_private_key_blocks_are_redacted_whole_and_to_the_end_without_an_end_marker():
    for kind in secrets.PEM_KINDS:
        block = f"-----BEGIN {kind}-----\nMIIEowIBAAKCAQEA\nabc\n-----END {kind}-----"
        text = "config:\n" + block + "\ndone"
        assert check(text) == [("private_key", 8, 8 + len(block))]
        assert secrets.redact(text)[0] == "config:\n[REDACTED:private_key]\ndone"
    assert secrets.redact("key:\n" + PEM_RSA + "\nMIIE...")[0] == "key:\n[REDACTED:private_key]"
    # a public key or certificate is not a secret; a different END marker does not close it
    assert check("-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----") == []
    assert secrets.redact(PEM_RSA + "\nx\n-----END EC PRIVATE KEY-----\ntail")[0] == "[REDACTED:private_key]"
    assert secrets.redact(PEM_RSA + "\nx\n" + PEM_RSA_END + "\ntail")[0] == "[REDACTED:private_key]\ntail"


def test_jwts_need_three_long_segments():
    assert check("eyJ.eyJ.x") == []
    assert check("eyJhbGciOiJI.eyJzdWIiOiIx.short") == []
    assert check("eyJhbGciOiJI.notaheader.abcdefghijkl") == []
    assert check("Bearer " + JWT) == [("jwt", 7, 7 + len(JWT))]


def test_legacy_openai_keys_need_letters_and_digits_and_no_kebab_tail():
    legacy = "sk-" + "a1B2c3D4" * 6
    assert check(f"key {legacy} end") == [("openai_api_key", 4, 4 + len(legacy))]
    assert check("sk-" + "a" * 40) == []            # no digit
    assert check("sk-" + "1" * 40) == []            # no letter
    assert check("sk-" + "a1" * 101) == []          # longer than 200
    assert check("sk-" + "a1" * 20 + "-more") == []  # a kebab-case identifier
    assert check("sk-learn-pipeline-with-a-very-long-kebab-case-name-1234567890") == []


# --- structural rules ----------------------------------------------------------------------

ASSIGNMENTS = [
    ("DB_PASSWORD=hunter2", "DB_PASSWORD=" + R("generic_assignment")),
    ("POSTGRES_PASSWORD=postgres\nPORT=5432", "POSTGRES_PASSWORD=" + R("generic_assignment") + "\nPORT=5432"),
    ("export SECRET_KEY=changeit && ./run", "export SECRET_KEY=" + R("generic_assignment") + " && ./run"),
    ('PASSWORD="hunter" ./login', 'PASSWORD="' + R("generic_assignment") + '" ./login'),
    ("GET /cb?access_token=abc123def&state=1", "GET /cb?access_token=" + R("generic_assignment") + "&state=1"),
    ('{"password": "hunter2", "user": "bob"}', '{"password": "' + R("generic_assignment") + '", "user": "bob"}'),
    ('{"apiKey":"abcd1234","n":1}', '{"apiKey":"' + R("generic_assignment") + '","n":1}'),
    ('{\\"client_secret\\": \\"abcd1234\\"}', '{\\"client_secret\\": \\"' + R("generic_assignment") + '\\"}'),
    ("const clientSecret = 'abcd1234';", "const clientSecret = '" + R("generic_assignment") + "';"),
    ("password: s3cr3t!", "password: " + R("generic_assignment")),
    ("X-Api-Key: abc123def456", "X-Api-Key: " + R("generic_assignment")),
    ("psql --password hunter2 -h db", "psql --password " + R("generic_assignment") + " -h db"),
    ("tool --api-key=abc123def456 run", "tool --api-key=" + R("generic_assignment") + " run"),
    ("tool --token 9f8e7d6c5b", "tool --token " + R("generic_assignment")),
    ("auth_token := \"x9y8z7\"", "auth_token := \"" + R("generic_assignment") + "\""),
    ("'db_pwd' => 'pa55w0rd'", "'db_pwd' => '" + R("generic_assignment") + "'"),
    ("PASSWORD=>hunter2", "PASSWORD=>" + R("generic_assignment")),
    ("PASSWORD=>hunter", "PASSWORD=>hunter"),      # `=>` is not env-style: needs a digit/symbol
    ("api_key:=abcdef", "api_key:=abcdef"),        # `${VAR:=x}` shape, not an assignment
    ("api_key := abcdef", "api_key := abcdef"),
    ("api_key = abcdef", "api_key = abcdef"),
    ("api_key=abcdef", "api_key=" + R("generic_assignment")),
    ("privateKey: abc$def1", "privateKey: " + R("generic_assignment")),
    ("비밀번호 password=한글비밀번호 끝 — token: 알수없음1 🚀",
     "비밀번호 password=" + R("generic_assignment") + " 끝 — token: " + R("generic_assignment") + " 🚀"),
]


@pytest.mark.parametrize("text,expected", ASSIGNMENTS)
def test_assignments_of_secret_named_keys_are_redacted(text, expected):
    check(text)
    assert secrets.redact(text)[0] == expected


def test_a_token_after_a_secret_name_keeps_its_own_rule():
    for text, rule in [("GITHUB_TOKEN=" + GHP, "github_token"),
                       ('{"token": "' + JWT + '"}', "jwt"),
                       ("api_key = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789'", "anthropic_api_key"),
                       ("secret=AKIAIOSFODNN7EXAMPLE", "aws_access_key_id")]:
        assert [h[0] for h in check(text)] == [rule], text


URLS = [
    ("postgres://app:hunter2@db.internal:5432/app", "postgres://" + R("url_credentials") + "@db.internal:5432/app"),
    ("REDIS_URL=redis://:pw0rd@cache:6379/0", "REDIS_URL=redis://" + R("url_credentials") + "@cache:6379/0"),
    ("git clone https://oauth2:abc123@gitlab.com/acme/repo.git",
     "git clone https://" + R("url_credentials") + "@gitlab.com/acme/repo.git"),
    ("amqps://u:pa%40ss@mq.example.com/vhost, next", "amqps://" + R("url_credentials") + "@mq.example.com/vhost, next"),
]


@pytest.mark.parametrize("text,expected", URLS)
def test_url_credentials_lose_the_userinfo_and_keep_the_host(text, expected):
    check(text)
    assert secrets.redact(text)[0] == expected


AUTH = [
    ("Authorization: Bearer abc123def456ghi789", "Authorization: Bearer " + R("authorization_header")),
    ('curl -H "authorization: bearer abc123def456ghi789" https://x',
     'curl -H "authorization: bearer ' + R("authorization_header") + '" https://x'),
    ('{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}', '{"Authorization": "Basic ' + R("authorization_header") + '"}'),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyzabcdef", "Authorization: Bearer " + R("authorization_header")),
    ("Proxy-Authorization: Basic dXNlcjpwYXNz1", "Proxy-Authorization: Basic " + R("authorization_header")),
    ("Authorization: Bearer " + GHP, "Authorization: Bearer " + R("github_token")),
]


@pytest.mark.parametrize("text,expected", AUTH)
def test_authorization_headers_lose_their_credential_only(text, expected):
    check(text)
    assert secrets.redact(text)[0] == expected


def test_aws_secret_keys_next_to_their_label():
    for text in [f"aws_secret_access_key = {AWS_SECRET}", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
                 f'"SecretAccessKey": "{AWS_SECRET}"', f"secret_access_key: {AWS_SECRET}",
                 f"aws_secret_key={AWS_SECRET}", f"awsSecretAccessKey='{AWS_SECRET}'"]:
        assert [h[0] for h in check(text)] == ["aws_secret_key"], text
        assert AWS_SECRET not in secrets.redact(text)[0]
    assert check(f"checksum {AWS_SECRET}") == []
    assert check("aws_secret_access_key = changeme") == []
    assert check("aws_secret_access_key=$AWS_SECRET") == []


# --- what must NOT be redacted ---------------------------------------------------------------

FALSE_POSITIVES = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    "550e8400-e29b-41d4-a716-446655440000",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "task-queue-worker-12345678901234567890123456789012",
    "The password reset flow emails a one-time token to the user.",
    "Enter your password: then press return",
    "Please rotate the secret and update the token in the vault.",
    "Authorization: Bearer authentication is described in RFC 6750",
    "passwordless login uses a magic link",
    "let token = next_token();", "let password = user_input;", "password = user_password",
    "self.token = token", 'api_key = os.getenv("API_KEY")', "secret = secrets.token_hex(32)",
    'token = request.headers["x-token"]', "const apiKey = settings.apiKey;",
    "pub token: Option<String>,", "password: String,", "token: string;",
    "password: str = Field(...)", "if token == other_token { return }",
    'std::env::var("API_KEY")', "process.env.API_KEY", "TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "PASSWORD=$(cat /run/secrets/pw)", "export TOKEN=${TOKEN}", "password=<your-password>",
    "password: ********", "api_key: null", '"password": ""', '"token": "string"',
    '"secret": "a description of what the secret is for"', "password: null",
    "token_count=5", "max_tokens: 4096", "input_tokens=1200 output_tokens=340", "tokenizer = load()",
    "secret_name: db-credentials", "password_field: pw", "password_hash: abc123", "SECRET_KEY_BASE=",
    "--password-stdin", "--password-file /run/secrets/pw", "--token-file ~/.config/tool/token",
    "--token to authenticate", "pass: 1", "PWD=/home/dev/project", "key: value", "key=abc123def456",
    "monkey=banana1234", "pub password: *const c_char,", "password: *mut *mut c_char,",
    "colon2_token: Colon2,", "dot2_token: node.dot2_token,",
    'inner: ErrorKind::Unexpected { token: "error" },',
    'Self::AccessKey => "azure_storage_account_key",', 'Password = "password",',
    "let geometry_token = display2", "let token = match_byte! { b,", "token          = 1*tchar",
    'password: "pass",', 'publicKeyToken="6595b64144ccf1df"', "NEXT_PUBLIC_API_KEY=pk_abc123xyz",
    '-H "Authorization: Bearer OAUTH2_TOKEN" \\', "API_KEY=YOUR_API_KEY",
    "token: ${{ secrets.NPM_TOKEN }}", "#[unsafe(method(initWithUser:password:persistence:))]",
    "${VAR:-default} and ${TOKEN:?set TOKEN}", "token: 12345", "secret: 0",
    "https://github.com/nullarch/attemptdb/issues/12", "/Users/dev/project/src/auth/password.rs",
    "src/lib.rs:42", "cargo test -p attemptdb-core", "AKIA is a prefix, not a key", "ghp_short",
    "https://github.com/acme/repo.git", "ssh://git@github.com/acme/repo.git", "git@github.com:acme/repo.git",
    "http://localhost:8080/path@x:y", "https://example.com:443/a", "postgres://user:${DB_PASSWORD}@host/db",
    "postgres://user:$PASSWORD@host/db", "https://user:@host/", "mailto:me@example.com",
    "see http://host:3000?email=a@b.com", "postgres://user:****@host/db",
    "Authorization: Bearer $TOKEN", "Authorization: Bearer <token>", "Authorization: Bearer ${{ secrets.TOKEN }}",
    "the Authorization header: Bearer authentication is used", "Authorization: Bearer token",
    "Authorization required", "bearer abc123def456ghi789",
    "password = \"correct horse\"x", "한글만 있는 프롬프트 🚀 — no secret here",
    "[REDACTED:github_token] [REDACTED:generic_assignment]",
]


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_placeholders_references_code_and_prose_stay(text):
    assert check(text) == []
    assert secrets.redact(text) == (text, 0)


def test_the_false_positive_corpus_as_one_document_stays():
    doc = "\n".join(FALSE_POSITIVES)
    assert check(doc) == []


# --- properties ------------------------------------------------------------------------------

FRAGMENTS = [
    "password", "PASSWORD", "passwd", "passphrase", "secret", "token", "key", "api_key", "apiKey",
    "x-api-key", "DB_PASSWORD", "db_pwd", "pwd", "pass", "public_key", "clientSecret", "authToken",
    "secret_access_key", "AWS_SECRET_ACCESS_KEY", "Authorization", "authorization", "Bearer", "basic",
    "--", "-", "=", ":", "==", "::", ":=", "=>", " ", "  ", "\t", "\n", "\"", "'", "`", "\\", ",", ";", "(",
    "[", "<", "{", "!", ".", "*", "$", "%", "@", "://", "https", "postgres", "user:pass@host", "u:p4ss@h",
    "hunter2", "abc123def456", "s3cr3t!", "changeit", "null", "string", "YOUR_API_KEY", "<your-key>",
    "****", "${TOKEN}", "a.b.c", "한글비밀번호", "알수없음1", "…", "...", "let ", "const ", "12345",
    "AKIA", "IOSFODNN7EXAMPLE", "ghp_", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123", "eyJhbGciOiJI", "eyJzdWIiOiIx",
    "sk-", "sk-ant-", "a1B2c3D4a1B2c3D4a1B2c3D4a1B2c3D4", "xoxb-", "1234567890", AWS_SECRET,
    PEM_RSA, PEM_RSA_END, "-----BEGIN ", "npm_", "vercel_", "K", "\u212a", "İ", "x",
    "glpat-", "glrt-", "GR1348941", "abcdefghij1234567890", "runner-authentication-token", ".01.", "1a2b3c4d5",
    "--token", "--api-key", "--password",
]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=24).map("".join))
def test_generated_texts_agree_with_the_reference(text):
    check(text)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_agrees_with_the_reference(text):
    check(text)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([t for t, _ in ISSUER_CASES]), st.text(max_size=40), st.text(max_size=40))
def test_an_issuer_token_between_arbitrary_text(token, before, after):
    check(before + " " + token + " " + after)


def test_seeded_random_texts_agree_with_the_reference():
    import random
    rng = random.Random(20260828)
    frags = FRAGMENTS + ['"password"', '\\"', "--password", "--api-key", "http://", "a@b", "#", "\u3000", "\xa0"]
    for _ in range(6000):
        check("".join(rng.choice(frags) if rng.random() < 0.8 else chr(rng.randrange(32, 0x3100))
                      for _ in range(rng.randrange(1, 20))))


def test_long_values_are_cut_at_the_cap_and_non_ascii_never_split():
    text = "API_TOKEN=" + "a1" * 1000
    hits = check(text)
    assert len(hits) >= 1 and hits[0][2] - hits[0][1] == secrets.MAX_ASSIGNED_VALUE
    text = "PASSWORD=" + "한" * 400
    for rule, a, b in check(text):
        assert len(text[a:b].encode()) <= secrets.MAX_ASSIGNED_VALUE


@pytest.mark.parametrize("text", [
    "password=" * 6000 + "x://", "token:" * 6000 + "x:", 'password="' * 6000 + '"',
    "a." * 5000, "token-" * 2000, "password" * 1000, "http://" + "u:" * 1000, "key: " * 2000,
    "@" * 6000, ":" * 6000, "-----BEGIN " * 500, "eyJ" * 3000, "Authorization: Bearer " * 500,
])
def test_hostile_repetitions_scan_and_agree(text):
    check(text)


def test_text_ending_in_a_scheme_or_a_label_never_fails():
    for prefix in ["Authorization: ", "authorization:", '"Authorization": "', "Proxy-Authorization: "]:
        for scheme in ["Bearer", "bearer", "BEARER", "Basic"]:
            for tail in ["", " ", "\t", " \t "]:
                check(prefix + scheme + tail)
    corpus = ("export DB_PASSWORD=\"hunter2abc\"; curl -H 'Authorization: Bearer abcdefghijklmnop' "
              "postgres://admin:s3cretpass@db/app 비밀번호: x " + GHP + " " + PEM_RSA + "\nabc\n" +
              PEM_RSA_END + " " + JWT)
    for i in range(len(corpus) + 1):
        check(corpus[:i])


# --- JSON values -----------------------------------------------------------------------------

def test_json_members_with_secret_names_lose_their_value():
    v = {"command": "deploy", "password": "hunter2",
         "nested": {"api_key": "abcdefgh", "token": "string", "secret": ""},
         "list": [{"authorization": "Bearer abc123def456ghi789"}],
         "max_tokens": 4096, "token_count": "12345", "env": {"GITHUB_TOKEN": GHP}}
    counter = [0]
    out = secrets.redact_value(v, counter)
    assert out["password"] == R("generic_assignment")
    assert out["nested"] == {"api_key": R("generic_assignment"), "token": "string", "secret": ""}
    assert out["list"][0]["authorization"] == "Bearer " + R("authorization_header")
    assert out["max_tokens"] == 4096 and out["token_count"] == "12345" and out["command"] == "deploy"
    assert out["env"]["GITHUB_TOKEN"] == R("generic_assignment")
    assert counter[0] == 4
    assert v["password"] == "hunter2", "the input is not mutated"
    again = [0]
    assert secrets.redact_value(out, again) == out and again[0] == 0


def test_redaction_keeps_everything_else():
    assert secrets.redact("export TOKEN=" + GHP + " && echo ok") == \
        ("export TOKEN=" + R("github_token") + " && echo ok", 1)
    out = secrets.redact_value({"cmd": "curl -H 'Authorization: Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789'",
                                "n": 1, "list": ["AKIAIOSFODNN7EXAMPLE"]})
    assert "sk-ant-" not in str(out) and out["list"] == [R("aws_access_key_id")] and out["n"] == 1


def _walk_reference(v, counter):
    """The JSON walk as first written (every string through `redact`, every member name
    tested afresh), the reference the inlined walk must equal."""
    if isinstance(v, str):
        if len(v) < 7:
            return v
        out, n = secrets.redact(v)
        counter[0] += n
        return out
    if isinstance(v, list):
        out, flag = [], False
        for x in v:
            if not isinstance(x, str):
                flag = False
                out.append(x if isinstance(x, (int, float, bool, type(None))) else _walk_reference(x, counter))
                continue
            n = 0
            if len(x) >= 7:
                red, n = secrets.redact(x)
                counter[0] += n
            if n:
                out.append(red)
                flag = False
            elif flag and ref_flag_value(x):
                counter[0] += 1
                out.append(R("generic_assignment"))
                flag = False
            else:
                out.append(x)
                flag = ref_flag_name(x)
        return out
    if isinstance(v, dict):
        members = {}
        for k, x in v.items():
            if isinstance(k, str) and len(k) >= 7:
                k, n = secrets.redact(k)
                counter[0] += n
            if isinstance(x, str) and isinstance(k, str) and (
                    secrets.is_secret_name(k) or secrets._alower(k).endswith("authorization")):
                members[k] = secrets._redact_member(k, x, counter, {})
            elif isinstance(x, (int, float, bool, type(None))):
                members[k] = x
            else:
                members[k] = _walk_reference(x, counter)
        return members
    return v


_TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=8).map("".join)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _TEXTS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXTS, inner, max_size=4)),
    max_leaves=12)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON, st.booleans())
def test_json_values_agree_with_the_reference_walk(v, shared):
    """Same output and count as the reference, with a fresh memo or one shared by a stream."""
    want = [0]
    expected = _walk_reference(v, want)
    memo = STREAM_MEMO if shared else {}
    counter = [0]
    assert secrets.redact_value(v, counter, memo) == expected and counter == want
    if shared:
        memo.end_event()


STREAM_MEMO = secrets.RedactionMemo()


def test_the_module_never_imports_re_or_json():
    code = ("import sys; import attemptdb.ingest.redaction as s; s.redact('password=hunter2 ' * 3); "
            "bad = [m for m in ('re', 'json', 'hashlib', 'uuid') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": ROOT}, check=True).stdout.strip()
    assert out == "[]"


def test_deeply_nested_values_are_redacted_without_failing():
    v = "DB_PASSWORD=hunter2"
    for i in range(300):  # 600 levels, deeper than any hook payload we keep
        v = [{"a": v}]
    out = secrets.redact_value(v)
    for i in range(300):
        out = out[0]["a"]
    assert out == "DB_PASSWORD=" + R("generic_assignment")


def test_the_value_cap_counts_utf8_bytes_even_with_lone_surrogates():
    text = "PASSWORD=" + "\ud800" * 300 + "é" * 200
    assert secrets.find(text) == [("generic_assignment", 9, 9 + 512 // 3)]
    text = "PASSWORD=" + "a" + "é" * 300
    (rule, a, b), = secrets.find(text)
    assert len(text[a:b].encode()) == 511  # a two-byte character never split at the cap


HOSTILE = '["-eyJ" * 40000, "secretaccesskey=" * 8000, "AKIA" * 40000, "sk-" * 50000, "eyJ" * 50000, ' \
          '("eyJ" + "a" * 12 + ".") * 20000, "authorization: bearer " * 8000, "password=" * 60000]'


def test_hostile_repetitions_stay_linear():
    """Each rule scans a run a bounded number of times (the dead-run memo). Quadratic scanning
    made a 160 KB `-eyJ…` payload take 22 s inside a hook; all of these together now take well
    under a second. The generous subprocess timeout catches a regression to quadratic, not a
    slow machine."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from attemptdb.ingest import redaction as secrets\n"
            f"for t in {HOSTILE}: secrets.redact(t)\n")
    from conftest import ROOT
    subprocess.run([sys.executable, "-c", code, ROOT], check=True, timeout=60)
