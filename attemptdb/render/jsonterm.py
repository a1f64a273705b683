"""JSON text on its way to a terminal: the one rule of every `--json` and `--jsonl` output.

Invariant: when the text goes to a terminal, C1 controls, DEL and the disguising characters
(errors.DISGUISING: bidi overrides and isolates, zero-width characters, U+2028/U+2029) are
written as `\\uXXXX` escapes (C0 controls always are, by every JSON writer), so none reaches the
terminal raw and a parser reads the same values. Raw, these characters can only stand inside a
JSON string, where an escape means the same character. Through a pipe or into a file the text
is kept as written (escaping a megabyte costs ~20 ms a read). No third-party imports.
"""

import sys

from ..errors import DISGUISING

ESCAPES = {c: f"\\u{c:04x}" for c in list(range(0x7F, 0xA0)) + [ord(ch) for ch in DISGUISING]}
"""code point → its JSON escape, for str.translate."""


def escaped(text: str) -> str:
    """`text` (JSON) with the characters of ESCAPES written as escapes."""
    return text if text.isascii() and "\x7f" not in text else text.translate(ESCAPES)  # DEL is ASCII


def is_terminal(stream=None) -> bool:
    """Whether `stream` (stdout) is a terminal; a closed or replaced stream is not."""
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def for_stream(text: str, stream=None) -> str:
    """JSON `text` as `stream` (stdout) gets it: escaped when that is a terminal, else unchanged."""
    return escaped(text) if is_terminal(stream) else text
