"""Token formats a privacy walkthrough found kept in content (a command line, an .env, a log)
though the secret scanner redacts their kind: PyPI, Hugging Face, SendGrid and DigitalOcean
tokens by their issuers' prefixes, and an Azure storage `AccountKey=` in a connection string.
Each is built from parts: no literal token in the file."""

import pytest

from attemptdb.ingest import privacy
from attemptdb.ingest import redaction as secrets

R = "[REDACTED:{}]".format
PYPI = "pypi-AgE" + "IcHlwaS5vcmcCJGI4YjE1ZDJjLTBiYjMtNDk2My04OWE4LTk1ZDQ0ZjE3ZWE2NQACJXsi" + "cGVybWlzc2lvbnMi"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz" + "01234567"
SENDGRID = "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
DIGITALOCEAN = "dop_v1_" + "a1B2" * 16


@pytest.mark.parametrize("rule, token", [("pypi_token", PYPI), ("huggingface_token", HF),
                                         ("sendgrid_key", SENDGRID), ("digitalocean_token", DIGITALOCEAN)])
def test_issuer_tokens_are_redacted_whole(rule, token):
    assert secrets.find(token) == [(rule, 0, len(token))]
    assert secrets.redact(f"twine upload -p {token} dist/*") == (f"twine upload -p {R(rule)} dist/*", 1)
    assert secrets.find("x" + token) == []  # glued to a word: not a token start


@pytest.mark.parametrize("text", [
    "from models import hf_transformers_pipeline_configuration_helper",  # a lower-case identifier
    "SG.short",
    "SG." + "ngeVfQFYQlKU0ufo8x5d1A",  # the id alone, no secret part after it
    "pypi-AgE" + "short",
    "pip install pypi-" + "simple-index-mirror-configuration-helper-package-x",
    "dop_v1_" + "ab12" * 4,
])
def test_lookalikes_stay(text):
    assert secrets.find(text) == []


def test_an_azure_account_key_in_a_connection_string_is_redacted():
    key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq" + "/K1SZFPTOtr/KBHBeksoGMGw=="
    text = f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={key};EndpointSuffix=core.windows.net"
    out, n = secrets.redact(text)
    assert key not in out and n == 1 and out.endswith(";EndpointSuffix=core.windows.net")
    assert secrets.find("account_name = 'acme-storage'") == []


def test_kept_content_loses_them_through_the_ingestion_contract():
    env = {"event_version": 1, "capture_mode": "local_semantic", "kind": "tool_call_finished", "attrs": {},
           "content": {"command": f"twine upload -p {PYPI}", "output": f"HF_HOME=/x {HF}\n{SENDGRID}\n"}}
    out = privacy.ingest(env)
    for token in (PYPI, HF, SENDGRID):
        assert token not in str(out)
