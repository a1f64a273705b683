"""Two redaction gaps found by a walkthrough of `attempt run` (argv and kept output go through
the same redaction): GitLab's prefixed tokens, and the value of a secret-named long option
given as the next argument of an argv list (`["--token", "<value>"]`), which no text joins."""

import pytest

from attemptdb.ingest import privacy
from attemptdb.ingest import redaction as secrets

R = "[REDACTED:{}]".format
GEN = R("generic_assignment")
GLPAT = "glpat-" + "abcdefghij" + "1234567890"  # built from parts: no literal token in the file

GITLAB_CASES = [
    GLPAT,
    "glpat-" + "z_sxgtrfAxKr8q1TPY8Y",
    "gloas-" + "a1B2c3D4" * 8,
    "gldt-" + "Ab3dE" * 4,
    "glrt-" + "t1_" + "AbCdEfGhIjKlMnOpQrSt",
    "glptt-" + "0123456789abcdef" * 2 + "01234567",
    "glcbt-" + "64_" + "AbCdEfGhIjKlMnOpQrSt",
    "glft-" + "AbCdEfGhIjKlMnOpQr5t",
    "glimt-" + "abcde12345" * 3,
    "glagent-" + "Ab1" * 17,
    "glsoat-" + "AbCdEfGhIjKlMnOpQr5t",
    "glffct-" + "AbCdEfGhIjKlMnOpQr5t",
    "GR1348941" + "AbCdEfGhIjKlMnOpQr5t",
]


@pytest.mark.parametrize("token", GITLAB_CASES)
def test_gitlab_tokens_are_redacted_alone_in_text_and_after_a_name(token):
    assert secrets.find(token) == [("gitlab_token", 0, len(token))]
    assert secrets.redact(f"git clone https://oauth2:{token}@gitlab.com/x.git")[1] == 1
    assert secrets.redact(f"export GITLAB_TOKEN={token}") == (f"export GITLAB_TOKEN={R('gitlab_token')}", 1)
    assert secrets.redact(f"token is {token}.") == (f"token is {R('gitlab_token')}.", 1)
    assert secrets.find("x" + token) == []  # glued to a word: not a token start


def test_gitlab_output_and_argv_as_attempt_run_stores_them():
    env = {"event_version": 1, "capture_mode": "local_semantic", "kind": "tool_call_finished", "attrs": {},
           "content": {"command": f"glab auth login --token {GLPAT}",
                       "tool_input": {"argv": ["glab", "auth", "login", "--token", GLPAT]},
                       "output": f"created {GLPAT}\n"}}
    out = privacy.ingest(env)
    assert GLPAT not in str(out)
    assert out["content"]["tool_input"]["argv"][-1] == R("gitlab_token")
    assert out["content"]["output"] == f"created {R('gitlab_token')}\n"


def test_a_gitlab_routable_token_loses_its_version_and_checksum_too():
    tok = "glpat-" + "AbCdEfGhIjKlMnOpQr5tUvWxYz0" + ".01." + "1a2b3c4d5"
    assert secrets.redact(f"use {tok} now") == (f"use {R('gitlab_token')} now", 1)
    # a sentence that goes on after a token keeps its words
    assert secrets.redact(f"{GLPAT}. Then go") == (f"{R('gitlab_token')}. Then go", 1)


@pytest.mark.parametrize("text", [
    "glrt-runner-authentication-token-setup",     # kebab identifiers, CSS classes, doc anchors
    "see #glpat-personal-access-token_prefix",
    "glpat-" + "x" * 19 + "1",                    # 20 characters is the minimum tail: 19 is not
    "glpat-short1",
    "GR1348941 is the runner registration prefix",
    "the glpat- prefix",
])
def test_gitlab_lookalikes_stay(text):
    if text.startswith("glpat-" + "x"):
        text = text[:-2]  # 19 characters of tail
    assert secrets.find(text) == [], text


def test_has_issuer_prefix_knows_gitlab():
    assert secrets.has_issuer_prefix("tok " + GLPAT)
    assert secrets.has_issuer_prefix("GR1348941" + "AbCdEfGhIjKl")
    assert not secrets.has_issuer_prefix("glpat-")


# --- argv: `--name value` as two items ----------------------------------------------------------

def _argv(*args):
    counter = [0]
    out = secrets.redact_value({"argv": list(args)}, counter)["argv"]
    deep = secrets._redact_deep({"argv": list(args)}, [0], {})["argv"]
    assert deep == out, "the stack-free walk agrees"
    again = [0]
    assert secrets.redact_value(out, again) == out and again[0] == 0, "a fixed point"
    return out, counter[0]


def test_the_value_after_a_secret_named_option_is_redacted_in_an_argv():
    out, n = _argv("echo", "--token", "abcdef1234567890abcdef", "--password", "hunter2secretX")
    assert out == ["echo", "--token", GEN, "--password", GEN] and n == 2
    assert _argv("deploy", "--api-key", "k3y-v4lue") == (["deploy", "--api-key", GEN], 1)
    assert _argv("mysql", "--db-password", "s3cr!") == (["mysql", "--db-password", GEN], 1)
    assert _argv("cli", "--client-secret", "1234567") == (["cli", "--client-secret", GEN], 1)
    assert _argv("x", "--auth-token", "p4ss") == (["x", "--auth-token", GEN], 1)  # short values too


def test_the_command_line_and_the_argv_agree():
    """`command` (the joined line) was already redacted; the argv item now is too."""
    env = {"event_version": 1, "capture_mode": "local_semantic", "kind": "tool_call_started", "attrs": {},
           "content": {"command": "echo --token abcdef1234567890abcdef --password hunter2secretX",
                       "tool_input": {"argv": ["echo", "--token", "abcdef1234567890abcdef",
                                               "--password", "hunter2secretX"]}}}
    out = privacy.ingest(env)
    assert "abcdef1234567890abcdef" not in str(out) and "hunter2secretX" not in str(out)
    assert out["content"]["command"] == f"echo --token {GEN} --password {GEN}"


def test_a_token_after_an_option_keeps_its_own_rule_and_equals_form_is_text():
    ghp = "ghp_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123"
    assert _argv("gh", "--token", ghp) == (["gh", "--token", R("github_token")], 1)
    assert _argv("x", "--token=abcdef1234567890") == (["x", "--token=" + GEN], 1)


@pytest.mark.parametrize("args", [
    ("cmd", "--token", "$TOKEN"),                   # a reference
    ("cmd", "--token", "${GITLAB_TOKEN}"),
    ("cmd", "--api-key", "YOUR_API_KEY"),           # placeholders
    ("cmd", "--password", "<password>"),
    ("cmd", "--password", "****"),
    ("cmd", "--token", "--verbose", "file1.txt"),   # the next item is another option
    ("cmd", "--password", "hunter"),                # no digit or symbol: a word
    ("cmd", "--secret", "my.secret.name"),          # a name
    ("cmd", "--token", "config.v2"),                # code-like dotted identifier
    ("cmd", "--token", "a::b1"),
    ("cmd", "--password", "two words1"),            # blanks: prose
    ("cmd", "--token", "https://x.example/t1"),     # a URL
    ("cmd", "--token-file", "/run/secrets/t1"),     # not a secret name
    ("cmd", "--max-tokens", "4096"),
    ("cmd", "--public-key", "pk_1234567"),
    ("cmd", "--key", "value123"),                   # `key` alone is no secret name
    ("cmd", "-p", "hunter2secretX"),                # short options: ambiguous, left alone
    ("cmd", "--token", 12345678),                   # not a string
    ("cmd", "-token", "abcdef1234567890"),
    ("cmd", "x--token", "abcdef1234567890"),
    ("cmd", "--token", {"a": 1}, "abcdef1234567890"),
])
def test_argv_lookalikes_stay(args):
    out, n = _argv(*args)
    assert out == list(args) and n == 0, args


def test_only_lists_join_an_option_to_its_next_item():
    v = {"flag": "--token", "value": "abcdef1234567890abcdef"}
    assert secrets.redact_value(v) == v
    assert secrets.redact_value([["--token"], "abcdef1234567890abcdef"]) == [["--token"], "abcdef1234567890abcdef"]
