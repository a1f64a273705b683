"""`attempt import jsonl` (and every reader of canonical lines: `event.parse_line`) says of a line
holding JSON no event can hold (`1e999`, a 5,000-digit integer, nesting past the parser's ~1,000
levels) that it holds such a value, never that it is malformed JSON (spec/capture.md "A payload
that cannot be read or held": valid JSON is never called invalid); a line that also breaks the
grammar is still malformed. The line is named as other bad lines are, and what the batches
before it stored stays stored."""

import io

import pytest
from conftest import run_attempt
from test_import_jsonl import _stream

from attemptdb.errors import AttemptError
from attemptdb.exchange.importers import jsonl
from attemptdb.model import event
from attemptdb.store.database import Store

NUMBER = "holds a number no event can hold"
NESTING = "holds a value nested more deeply than an event can hold"


def _with_raw(line: bytes, value: bytes) -> bytes:
    """A canonical line with `value` as the first member of its raw payload."""
    assert b'"raw":{' in line
    return line.replace(b'"raw":{', b'"raw":{"x":' + value + b",", 1)


UNREPRESENTABLE = {  # (the value put into a good line's raw payload, what the message says)
    "float_1e999": (b"1e999", NUMBER),
    "float_minus_1e999": (b"-1e999", NUMBER),
    "int_5000_digits": (b"7" * 5000, NUMBER),
    "nesting_5000_arrays": (b"[" * 5000 + b"]" * 5000, NESTING),
    "nesting_5000_objects": (b'{"a":' * 5000 + b"1" + b"}" * 5000, NESTING),
}
MALFORMED = {  # the first problem is a value too large or deep, but the text is no JSON either
    "float_then_garbage": b"1e999 garbage",
    "deep_then_unclosed": b"[" * 5000 + b"]" * 4999,
    "deep_then_nan": b"[" * 3000 + b"NaN" + b"]" * 3000,
}


def _lines(bad_value: bytes) -> bytes:
    good = _stream(25).splitlines()
    assert all(b'"raw":{' in g for g in good[12:13])
    return b"\n".join(good[:12] + [_with_raw(good[12], bad_value)] + good[13:]) + b"\n"


@pytest.mark.parametrize("value,says", UNREPRESENTABLE.values(), ids=UNREPRESENTABLE.keys())
def test_a_line_no_event_can_hold_is_named_as_such_not_as_malformed(tmp_path, home, value, says):
    data = _lines(value)
    st = Store.open(str(tmp_path / "a.db"))
    with pytest.raises(AttemptError) as e:
        jsonl.import_stream(st, io.BytesIO(data), batch=10)
    assert e.value.code == "import.bad_line"
    assert e.value.message.startswith("line 13: ") and says in e.value.message, e.value.message
    assert "malformed" not in e.value.message
    assert st.count() == 10  # the batch before it stays stored; nothing of lines 11-20
    st.close()


@pytest.mark.parametrize("value", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_line_that_also_breaks_the_grammar_is_malformed(value):
    good = _stream(1).splitlines()[0]
    with pytest.raises(AttemptError) as e:
        event.parse_line(_with_raw(good, value), 7)
    assert e.value.message.startswith("line 7: malformed JSON"), e.value.message


def test_the_cli_names_the_line_and_keeps_what_it_stored(tmp_path, home):
    good = _stream(jsonl.BATCH + 5).splitlines()
    n = jsonl.BATCH + 3
    data = b"\n".join(good[:n - 1] + [_with_raw(good[n - 1], b"1e999")] + good[n:]) + b"\n"
    db = str(tmp_path / "a.db")
    r = run_attempt(["import", "jsonl", "-", "--db", db], input=data)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert f"line {n}: {NUMBER}".encode() in r.stderr, r.stderr
    assert b"malformed" not in r.stderr
    assert f"{jsonl.BATCH:,} events of the lines before its batch stored".encode() in r.stderr
    st = Store.open(db, readonly=True)
    assert st.count() == jsonl.BATCH
    st.close()


@pytest.mark.parametrize("parts", [2, 3])
def test_the_pipeline_names_it_too(tmp_path, home, parts):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_lines(b"[" * 5000 + b"]" * 5000))
    st = Store.open(str(tmp_path / "a.db"))
    with pytest.raises(AttemptError) as e:
        jsonl.import_file(st, str(src), pipeline=parts, batch=10)
    assert e.value.message.startswith("line 13: ") and NESTING in e.value.message, e.value.message
    assert st.count() == 10
    st.close()
