"""A line too long to wait for its end is kept in pieces (evidence/artifacts.py): the pieces,
joined, are redacted exactly as the whole line would have been, wherever the cuts fall."""

import zlib

import pytest

from attemptdb.evidence import artifacts
from attemptdb.ingest import redaction

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def kept(tmp_path, chunks) -> bytes:
    sink = artifacts.Sink("stdout", keep_dir=str(tmp_path))
    for c in chunks:
        sink.feed(c)
    out = sink.close()
    with open(out.kept_path, "rb") as f:
        data = zlib.decompress(f.read())
    out.discard()
    return data


def one_line(tmp_path, line: bytes, step: int) -> bytes:
    return kept(tmp_path, [line[i:i + step] for i in range(0, len(line), step)])


def whole(line: bytes) -> bytes:
    return redaction.redact(line.decode())[0].encode()


@pytest.mark.parametrize("step", [65536, 100_003, 1 << 20])
@pytest.mark.parametrize("secret", [TOKEN, "password = hunter2hunter2x"])
def test_a_secret_at_any_cut_of_a_long_line_is_redacted_as_in_the_whole_line(tmp_path, step, secret):
    # the secret sits where a cut may fall (the bytes held when a line passes MAX_LINE, or 64 KiB
    # before that), and around it: across the cut, name before it and value after, just after it
    for base in {artifacts.MAX_LINE + step, artifacts.MAX_LINE + step - (64 << 10), 2 * artifacts.MAX_LINE}:
        for shift in (-len(secret) - 1, -len(secret) // 2, -9, -1, 0, 1, 7):
            at = base + shift
            line = b"y" * at + b" " + secret.encode() + b" " + b"z" * (256 << 10) + b"\n"
            got = one_line(tmp_path, line, step)
            assert got == whole(line), (step, shift)
            assert b"hunter2" not in got and TOKEN.encode() not in got
