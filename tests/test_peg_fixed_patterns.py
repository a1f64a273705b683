"""The grammar's patterns matched without the regex engine (peg_runtime.FIXED) end where `re`
ends on every input: every string of a small alphabet up to a length, at every position, and
many longer strings assembled from the fragments each pattern is made of."""

import itertools
import random
import re

import pytest

from attemptdb.query import parse as P
from attemptdb.query import peg_runtime as peg

# per pattern: the characters that decide it (and a few that do not), and its fragments
ALPHABETS = {
    r"[A-Za-z_][A-Za-z0-9_]*": ("a", "Z", "_", "0", "-", "é", " "),
    r"[A-Za-z0-9][A-Za-z0-9_-]*": ("a", "Z", "_", "0", "-", "é", "."),
    r"[0-9]+(?![A-Za-z0-9_.])": ("1", "0", ".", "a", "_", " ", "٣"),
    r"-[0-9]+[A-Za-z]*(?![A-Za-z0-9_])": ("-", "1", "d", "_", " ", "."),
    r"(?:\s+|--[^\n]*)*": (" ", "\n", "-", "x", "\u00a0", "\x1c", "\t"),
    r"(?![\s\S])": ("a", " "),
    r"'(?:[^']|'')*'": ("'", "a", " "),
    r'"(?:[^"]|"")+"': ('"', "a", "'"),
}
FRAGMENTS = {
    "datetime": ("2026", "-01", "-2", "-02", "T", "t", " ", "10", ":00", ":3", ".5", ".", "5", "Z", "z", "+01:00",
                 "-0130", "+01:", "+1", "x", "_", "-"),
    "number": ("12", "0", ".", ".5", "e", "E", "+", "-", "3", "x", "_", " ", ".x"),
}


def _patterns():
    text = P.grammar_text()
    found = set(re.findall(r'~r"((?:[^"\\]|\\.)*)"|~r\'((?:[^\'\\]|\\.)*)\'', text))
    return {a or b for a, b in found}


def _end(compiled, text, pos):
    m = compiled.match(text, pos)
    return -1 if m is None else m.end()


def _agree(pattern, texts):
    compiled = re.compile(pattern)
    find = peg.FIXED[pattern]
    for t in texts:
        for pos in range(len(t) + 1):
            assert find(t, pos) == _end(compiled, t, pos), (pattern, t, pos)


def test_every_pattern_of_the_grammar_is_a_keyword_or_fixed():
    """A pattern the grammar gains must join FIXED (or be a keyword), or a statement would import
    `re` again (the shortcut's point)."""
    for pattern in _patterns():
        word, _, tail = pattern.partition("(")
        keyword = "(" + tail == peg._KEYWORD_TAIL and word.replace("_", "").isalpha() and word.isupper()
        assert keyword or pattern in peg.FIXED, pattern


@pytest.mark.parametrize("pattern", sorted(ALPHABETS))
def test_fixed_pattern_equals_re_on_every_short_string(pattern):
    alphabet = ALPHABETS[pattern]
    texts = ["".join(p) for n in range(6) for p in itertools.product(alphabet, repeat=n)]
    _agree(pattern, texts)


@pytest.mark.parametrize("kind", sorted(FRAGMENTS))
def test_fixed_pattern_equals_re_on_assembled_strings(kind):
    pattern = next(p for p in peg.FIXED if peg.FIXED[p].__name__ == f"_{kind}")
    rng = random.Random(19)
    parts = FRAGMENTS[kind]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(1, 9))) for _ in range(20000)]
    texts += ["2026-09-06T02:05:18.366312Z", "2026-09-06 02:05", "2026-09-06T02:05:18+01:00x", "1.5e3", "1.e3"]
    _agree(pattern, texts)


def test_a_parse_imports_no_regex_engine(tmp_path):
    """With a warm grammar cache, parsing a statement that uses every kind of token leaves `re`
    (and `enum`) unimported."""
    import subprocess
    import sys

    from conftest import ROOT, skip_when_the_interpreter_loads
    code = ("import sys\nfrom attemptdb.query import parse as P\n"
            "P.parse(\"STATE project 'x' AT '2026-09-06T02:05:18Z'\")\n"
            "P.parse('SHOW ATTEMPTS WHERE \"outcome\" = \\'failed\\' AND exit_code >= 1.5e0 LIMIT 5')\n"
            "P.parse('SHOW ATTEMPTS SINCE -2d -- a comment')\n"
            "print(sorted(m for m in ('re', 'enum') if m in sys.modules))")
    env = {"XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": ROOT, "PATH": "/usr/bin:/bin"}
    skip_when_the_interpreter_loads(("re", "enum"), env)
    for _ in range(2):  # cold (the grammar is built: re is imported), then warm
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_a_cold_read_that_prints_tables_and_records_imports_no_regex_engine(tmp_path):
    """`attempt query` printing a table, a record (STATE … AT, wrapped at 80 columns) and notes,
    and `attempt needs-you`, as a process on a file with rows: `re`, `enum` and `textwrap` stay
    unimported (the shapes of termtable and shortids are written out, lines_of wraps)."""
    import subprocess
    import sys

    from conftest import ROOT, skip_when_the_interpreter_loads
    env = {"XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": ROOT, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "COLUMNS": "80"}
    skip_when_the_interpreter_loads(("re", "enum", "textwrap"), env)
    db = str(tmp_path / "demo.db")
    p = subprocess.run([sys.executable, "-m", "attemptdb", "demo", "--db", db], capture_output=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    probe = ("import sys\n"
             "sys.argv = ['attempt'] + sys.argv[1:]\n"
             "import attemptdb.capture.hookclient as h\n"
             "h.leave = lambda code: (print('IMPORTED', sorted(m for m in ('re', 'enum', 'textwrap') "
             "if m in sys.modules), file=sys.stderr), sys.exit(code))\n"
             "from attemptdb import launcher\n"
             "launcher.main()\n")
    for args in (["query", "SHOW SESSIONS"], ["query", "SHOW FAILED ATTEMPTS"],
                 ["query", "STATE project AT '2030-01-01T00:00:00Z'"], ["needs-you"]):
        for _ in range(2):  # the first run may build the grammar cache (which imports re)
            p = subprocess.run([sys.executable, "-c", probe, *args, "--db", db], capture_output=True, text=True,
                               env=env, timeout=120)
        assert p.returncode == 0, (args, p.stderr)
        assert p.stdout.strip(), args  # it printed rows
        assert "IMPORTED []" in p.stderr, (args, p.stderr[-500:])
