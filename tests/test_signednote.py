"""Signed notes write and read base64 through binascii (integrity/signednote.py): the same text
as the base64 module, and the same refusals as its validate=True."""

import base64
import random

import pytest

from attemptdb.integrity import signednote


def test_the_same_text_as_the_base64_module():
    rng = random.Random(5)
    for n in list(range(80)) + [rng.randrange(80, 4000) for _ in range(50)]:
        data = bytes(rng.randrange(256) for _ in range(n))
        text = signednote.b64encode(data)
        assert text == base64.b64encode(data).decode("ascii")
        assert signednote.b64decode(text) == data


def _outcome(decode, text):
    try:
        return decode(text)
    except ValueError:
        return ValueError


@pytest.mark.parametrize("text", ["abc", "ab=c", "a b=", "é", "YWJj\n", "YWJj====", "=YWJj", "YW=Jj", "YWJj!", "YWJj"])
def test_the_same_answer_as_validate_true(text):
    want = _outcome(lambda t: base64.b64decode(t, validate=True), text)
    assert _outcome(signednote.b64decode, text) == want
    if text in ("abc", "a b=", "é", "YWJj!"):
        assert want is ValueError  # the cases that must be refused are
