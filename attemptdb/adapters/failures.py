"""Failure classification: failure text → a content-free class token and an exit code
(reference/capture.md §2.6).

Invariants: `classify_text` returns a class from CLASSES and never any part of the text except
a parsed integer; the first matching rule wins, in the documented order; `snake` turns a
provider-supplied class into a lowercase token. str methods only (hook path).
"""

CLASSES = ("string_mismatch", "file_not_found", "permission_denied", "timeout", "interrupted",
           "nonzero_exit", "unknown")
_RULES = (
    ("string_mismatch", ("string to replace not found", "old_string")),
    ("file_not_found", ("no such file", "not found", "enoent", "does not exist")),
    ("permission_denied", ("permission denied", "eacces", "eperm")),
    ("timeout", ("timed out", "timeout")),
    ("interrupted", ("interrupted", "cancelled", "canceled", "aborted")),
)
_EXIT_MARKERS = ("exit code ", "exit status ", "exited with code ", "exited with ",
                 "returned exit code ")
_NUMBER_CHARS = frozenset("0123456789-")
TOKEN_MAX_BYTES = 48


def exit_code_in(lowered: str) -> int | None:
    """The first non-zero exit code a (lowercased) text states after one of the markers."""
    for marker in _EXIT_MARKERS:
        start = lowered.find(marker)
        while start >= 0:
            i = j = start + len(marker)
            while j < len(lowered) and lowered[j] in _NUMBER_CHARS:
                j += 1
            if j > i:
                try:
                    code = int(lowered[i:j])
                except ValueError:
                    code = 0
                if code and -2**63 <= code < 2**63:  # a stated code beyond 64 bits is no exit code
                    return code
            start = lowered.find(marker, start + 1)
    return None


def classify_text(text) -> tuple:
    """(class, exit code or None) of a failure message."""
    if not isinstance(text, str) or not text:
        return ("unknown", None)
    t = text.lower()
    for cls, needles in _RULES:
        for needle in needles:
            if needle in t:
                return (cls, exit_code_in(t))
    code = exit_code_in(t)
    if code is not None:
        return ("nonzero_exit", code)
    if "non-zero" in t or "nonzero" in t:
        return ("nonzero_exit", None)
    return ("unknown", None)


def is_token(value) -> bool:
    """A bare classification token: non-empty, at most 48 bytes, no whitespace."""
    if not isinstance(value, str) or not value or len(value.encode("utf-8", "replace")) > TOKEN_MAX_BYTES:
        return False
    return len(value.split()) == 1 and value.strip() == value


def snake(value: str) -> str:
    """Provider class → snake token: lowercase, spaces and hyphens to `_`."""
    return value.strip().lower().replace(" ", "_").replace("-", "_")
