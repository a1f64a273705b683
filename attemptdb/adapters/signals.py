"""Content-free measurements of content: prompt facts, line counts, test-run summaries and the
tool-output bound (reference/capture.md §2.8–§2.9).

Invariants: every function returns numbers or booleans only, never text from its input
(`bound_output` returns the content itself, cut, for `content.tool_output`). Test counts come
only from recognised summary lines in the last 8 KiB of output (prose never counts); go's
`--- PASS/FAIL/SKIP:` lines count only when no summary line matched. str methods only.
Beyond the reference (spec/capture.md, "Test counts"): pytest's unwrapped `-q` summary line
(`1 failed, 1 passed in 0.85s`: the whole line, with its `in <number>s` timing) and unittest's
`Ran N tests in …s` line with the `OK` / `FAILED (…)` line after it.
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
            return (0, 0, 0) if _pytest_quiet(low.strip("= ")) == (0, 0, 0) else None
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


_PYTEST_WORDS = frozenset(("passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed",
                           "warning", "warnings", "deselected", "rerun", "reruns"))


def _seconds(token: str) -> bool:
    """`0.85s`, `12s`: a duration as pytest and unittest print it."""
    if not token.endswith("s") or len(token) > 24:
        return False
    whole, _, frac = token[:-1].partition(".")
    return whole.isascii() and whole.isdigit() and (not frac or (frac.isascii() and frac.isdigit()))


def _pytest_quiet(low: str):
    """(passed, failed, skipped) of a whole pytest summary line without its `=` wrappers
    (`1 failed, 1 passed, 1 warning in 0.12s`, `no tests ran in 0.01s`, optionally followed by
    `(0:01:02)`), else None (beyond the reference). Every item is `N word` of pytest's own words
    and the timing is required, so prose (`2 passed in review`) never counts."""
    items, sep, timing = low.rpartition(" in ")
    if not sep:
        return None
    t = timing.split()
    if not t or len(t) > 2 or not _seconds(t[0]):
        return None
    if len(t) == 2:
        hms = t[1]
        if not (hms.startswith("(") and hms.endswith(")") and hms[1:-1].replace(":", "").replace(".", "").isdigit()
                and hms[1:-1].isascii()):
            return None
    items = items.strip()
    if items == "no tests ran":
        return 0, 0, 0
    c = {}
    for item in items.split(","):
        w = item.split()
        n = _number(w[0]) if len(w) == 2 else None
        if n is None or w[1] not in _PYTEST_WORDS:
            return None
        c[w[1]] = c.get(w[1], 0) + n
    if not any(k in c for k in ("passed", "failed", "error", "errors", "skipped")):
        return None
    return (c.get("passed", 0), c.get("failed", 0) + c.get("error", 0) + c.get("errors", 0),
            c.get("skipped", 0))


_UNITTEST_KEYS = ("failures", "errors", "skipped", "expected failures", "unexpected successes")


def _unittest(ran: str, outcome: str):
    """(passed, failed, skipped) of unittest's `Ran N tests in 0.001s` line and the status line
    after it (`OK`, `OK (skipped=1)`, `FAILED (failures=1, errors=2)`, `NO TESTS RAN`), else
    None (beyond the reference). failed = failures + errors; passed = the rest of what ran that
    was not skipped nor an expected failure or unexpected success."""
    w = ran.split()
    if len(w) != 5 or w[0] != "ran" or w[2] not in ("test", "tests") or w[3] != "in" or not _seconds(w[4]):
        return None
    n = _number(w[1])
    if n is None:
        return None
    if outcome == "no tests ran":
        return 0, 0, 0
    if outcome == "ok":
        return n, 0, 0
    head, _, detail = outcome.partition(" ")
    if head not in ("ok", "failed") or not detail.startswith("(") or not detail.endswith(")"):
        return None
    c = {}
    for part in detail[1:-1].split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        v = _number(value.strip())
        if not eq or v is None or key not in _UNITTEST_KEYS:
            return None
        c[key] = c.get(key, 0) + v
    failed = c.get("failures", 0) + c.get("errors", 0)
    skipped = c.get("skipped", 0)
    others = c.get("expected failures", 0) + c.get("unexpected successes", 0)
    return max(n - failed - skipped - others, 0), failed, skipped


_MARKERS = ("test result:", "tests run", "tests:", "tests ", " passing", " failing", " pending",
            " example", "ok (", "passed!", "failed!", "\n=", "--- pass:", "--- fail:", "--- skip:")
# lines that can only be pytest's unwrapped summary or unittest's `Ran N tests in` line (beyond
# the reference): read only as those, so no line the reference's rules skip is read by them
_EXTRA_MARKERS = ("passed", "failed", "error", "skipped", "no tests ran", "ran ")


def _line_at(low: str, s: int) -> str:
    e = low.find("\n", s)
    return low[s:] if e < 0 else low[s:e]


def _candidate_lines(low: str, cut: bool = False) -> list:
    """(start, line, reference) of the lines that contain a summary marker (found with str.find,
    not a Python loop over every line), lowercased, in order; `reference` is False for a line
    only an extra marker found. With `cut` (the scan began mid-line) the first line is not one
    of the extra ones."""
    starts = {0: True} if low.startswith(("=", "--- ")) else {}
    for marker in _MARKERS:
        i = low.find(marker)
        while i >= 0:
            starts[i + 1 if marker[0] == "\n" else low.rfind("\n", 0, i) + 1] = True
            i = low.find(marker, i + 1)
    extra = set()
    for marker in _EXTRA_MARKERS:
        i = low.find(marker)
        while i >= 0:
            s = low.rfind("\n", 0, i) + 1
            e = low.find("\n", i)
            if s not in starts and s not in extra:
                extra.add(s)
                line = (low[s:] if e < 0 else low[s:e]).rstrip()
                # both extra forms end with their timing: `… in 0.85s`, `… in 61.02s (0:01:01)`
                if not (cut and s == 0) and " in " in line and line.endswith(("s", ")")):
                    starts[s] = False
            i = -1 if e < 0 else low.find(marker, e + 1)  # the next line with the marker
    return [(s, _line_at(low, s), starts[s]) for s in sorted(starts)]


def _next_line(low: str, s: int) -> str:
    """The first line after the one starting at `s` that is not blank, stripped."""
    e = low.find("\n", s)
    while e >= 0:
        s = e + 1
        e = low.find("\n", s)
        line = (low[s:] if e < 0 else low[s:e]).strip()
        if line:
            return line
    return ""


def test_counts(output) -> tuple | None:
    """(passed, failed, skipped) summed over every recognised summary line, or None."""
    if not isinstance(output, str) or not output:
        return None
    low = _strip_ansi(output[-TEST_SCAN:]).lower().replace("\r", "\n")
    total, matched = [0, 0, 0], False
    go = [0, 0, 0]
    cut = len(output) > TEST_SCAN  # the window may begin mid-line
    for start, line, reference in _candidate_lines(low, cut):
        line = line.strip()
        whole = not (cut and start == 0)
        s = _unittest(line, _next_line(low, start)) if whole and line.startswith("ran ") else None
        if s is None and reference:
            s = _summary(line)
        if s is None and whole:  # `no tests ran in 0.01s` holds the reference's `tests ` marker
            s = _pytest_quiet(line)
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
