"""Content-free measurements of content: prompt facts, line counts, test-run summaries and the
tool-output bound (reference/capture.md §2.8–§2.9).

Invariants: every function returns numbers or booleans only, never text from its input
(`bound_output` returns the content itself, cut, for `content.tool_output`). Test counts come
only from recognised summary lines in the last 8 KiB of output (prose never counts); go's
`--- PASS/FAIL/SKIP:` lines count only when no summary line matched. str methods only.
"""

from ..model import fastjson

OUTPUT_LIMIT = 64 * 1024
TEST_SCAN = 8 * 1024


def line_count(text: str) -> int:
    """Lines as Rust's `str::lines` counts them: 0 for empty, a final newline ends a line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def prompt_facts(text: str) -> tuple:
    """(chars, lines, has_code_fence, has_question) of a prompt."""
    return (len(text), line_count(text), "```" in text, "?" in text or "\uff1f" in text)


def bound_output(value) -> tuple:
    """(value, truncated): strings over 64 KiB are cut at a UTF-8 boundary; anything else over
    64 KiB serialised is replaced by its serialisation, cut the same way."""
    if value is None or isinstance(value, (bool, int, float)):
        return value, False
    text = value if isinstance(value, str) else fastjson.dumps(value)
    if len(text) <= OUTPUT_LIMIT // 4:
        return value, False
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= OUTPUT_LIMIT:
        return value, False
    return raw[:OUTPUT_LIMIT].decode("utf-8", "ignore"), True


# --- test summaries ------------------------------------------------------------------------

def _strip_ansi(s: str) -> str:
    if "\x1b" not in s:
        return s
    out, i, n = [], 0, len(s)
    while i < n:
        j = s.find("\x1b", i)
        if j < 0:
            out.append(s[i:])
            break
        out.append(s[i:j])
        k = j + 1
        if k < n and s[k] == "[":
            k += 1
            while k < n and not "@" <= s[k] <= "~":
                k += 1
        i = k + 1
    return "".join(out)


def _words(low: str) -> list:
    for c in ",;|()[]":
        if c in low:
            low = low.replace(c, " ")
    return low.split()


MAX_DIGITS = 12
"""A count is ASCII digits, at most this many (the output is hostile: `²` is a digit to
str.isdigit that int() refuses, and a sum of a line's counts stays a number JSON keeps exact)."""


def _number(text: str) -> int | None:
    return int(text) if len(text) <= MAX_DIGITS and text.isascii() and text.isdigit() else None


def _counts(low: str) -> dict:
    """`12 passed, 1 failed` → {"passed": 12, "failed": 1} (number before word)."""
    w = _words(low)
    out = {}
    for i in range(len(w) - 1):
        n = _number(w[i])
        if n is not None:
            word = w[i + 1].strip(".:!")
            out[word] = out.get(word, 0) + n
    return out


def _labelled(low: str) -> dict:
    """`failures: 2, errors: 1` → {"failures": 2, "errors": 1} (word before number)."""
    w = _words(low)
    out = {}
    for i in range(len(w) - 1):
        n = _number(w[i + 1].rstrip(".")) if w[i].endswith(":") else None
        if n is not None:
            out[w[i][:-1]] = n
    return out


def _summary(low: str):
    """(passed, failed, skipped) of one recognised summary line (lowercased, stripped), else None."""
    if not low:
        return None
    if "test result:" in low:  # cargo
        c = _counts(low)
        return c.get("passed", 0), c.get("failed", 0), c.get("ignored", 0)
    if low.startswith("summary") and "tests run" in low:  # nextest
        c = _counts(low)
        return c.get("passed", 0), c.get("failed", 0), c.get("skipped", 0)
    if low.startswith("tests:") and "total" in low:  # jest
        c = _counts(low)
        return c.get("passed", 0), c.get("failed", 0), c.get("skipped", 0) + c.get("todo", 0)
    if low.startswith("tests ") and ("passed" in low or "failed" in low):  # vitest
        c = _counts(low)
        return c.get("passed", 0), c.get("failed", 0), c.get("skipped", 0) + c.get("todo", 0)
    if low.startswith("=") and low.endswith("=") and " in " in low:  # pytest
        c = _counts(low)
        if not any(k in c for k in ("passed", "failed", "error", "errors", "skipped")):
            return None
        return (c.get("passed", 0), c.get("failed", 0) + c.get("error", 0) + c.get("errors", 0),
                c.get("skipped", 0))
    w = low.split()
    n = _number(w[0]) if len(w) >= 2 else None
    if n is not None and w[1] in ("passing", "failing", "pending"):  # mocha
        return (n, 0, 0) if w[1] == "passing" else (0, n, 0) if w[1] == "failing" else (0, 0, n)
    if n is not None and w[1].startswith("example"):  # rspec
        c = _counts(low)
        examples = n
        failed = c.get("failures", 0) + c.get("failure", 0)
        pending = c.get("pending", 0)
        return max(examples - failed - pending, 0), failed, pending
    if low.startswith("ok (") and "test" in low:  # phpunit, all green
        c = _counts(low)
        return c.get("tests", 0) + c.get("test", 0), 0, 0
    if low.startswith("tests:") and "assertions:" in low:  # phpunit with problems
        c = _labelled(low)
        failed = c.get("failures", 0) + c.get("errors", 0)
        skipped = c.get("skipped", 0) + c.get("incomplete", 0)
        return max(c.get("tests", 0) - failed - skipped, 0), failed, skipped
    if low.startswith(("passed!", "failed!")) and "total:" in low:  # dotnet
        c = _labelled(low)
        return c.get("passed", 0), c.get("failed", 0), c.get("skipped", 0)
    return None


_MARKERS = ("test result:", "tests run", "tests:", "tests ", " passing", " failing", " pending",
            " example", "ok (", "passed!", "failed!", "\n=", "--- pass:", "--- fail:", "--- skip:")


def _candidate_lines(low: str) -> list:
    """The lines that contain a summary marker (found with str.find, not a Python loop over
    every line), lowercased and stripped, in order."""
    starts = {0} if low.startswith(("=", "--- ")) else set()
    for marker in _MARKERS:
        i = low.find(marker)
        while i >= 0:
            starts.add(i + 1 if marker[0] == "\n" else low.rfind("\n", 0, i) + 1)
            i = low.find(marker, i + 1)
    lines = []
    for s in sorted(starts):
        e = low.find("\n", s)
        lines.append(low[s:] if e < 0 else low[s:e])
    return lines


def test_counts(output) -> tuple | None:
    """(passed, failed, skipped) summed over every recognised summary line, or None."""
    if not isinstance(output, str) or not output:
        return None
    low = _strip_ansi(output[-TEST_SCAN:]).lower().replace("\r", "\n")
    total, matched = [0, 0, 0], False
    go = [0, 0, 0]
    for line in _candidate_lines(low):
        line = line.strip()
        s = _summary(line)
        if s is not None:
            matched = True
            total[0] += s[0]
            total[1] += s[1]
            total[2] += s[2]
        elif line.startswith("--- pass:"):
            go[0] += 1
        elif line.startswith("--- fail:"):
            go[1] += 1
        elif line.startswith("--- skip:"):
            go[2] += 1
    if matched:
        return tuple(total)
    if any(go):
        return tuple(go)
    return None
