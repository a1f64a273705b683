"""parsimonious as AttemptQL uses it: the one module that relies on parsimonious's internals.

The parser needs more than parsimonious's public names (Grammar, Node, NodeVisitor,
ParseError): the furthest-failure protocol of `Expression.match_core` (it sets `pos` and `expr`
on a ParseError as it goes), the packrat memo that call fills, `Expression.members`, the
compiled pattern a `Regex` keeps in `.re` (and in `identity_tuple`), and, for start-up time,
the package's layout. All of that lives here; parse.py uses only what this module exports.

Invariants:
- Importing this module leaves a parsimonious that passed a smoke parse through every internal
  used here, or raises AttemptError `query.parser_unavailable` (never a bare ImportError).
- The start-up shortcut (below) is kept only when its preconditions hold, its imports succeed
  and the smoke parse passes through it; otherwise everything it loaded is dropped and a plain
  `import parsimonious` runs instead (with parsimonious's own choice of regex engine).
- `fingerprint()` names all a pickled grammar depends on: the installed parsimonious
  distribution's version and location, the regex engine its expressions use, and `FORMAT` (the
  meaning of the pickled classes below).
- Tested with parsimonious 0.10.0 and 0.11.0 (setup.cfg allows >=0.10,<0.12).

The shortcut: measured on these machines, `import parsimonious` costs ~18 ms of a cold query's
~50 ms budget above `attempt --version`: ~8 ms of it parsimonious/__init__ building its own rule
grammar and ~8 ms the third-party `regex` module. A cached AttemptQL grammar needs neither
(unpickling it needs parsimonious.expressions; the visitor needs parsimonious.nodes). So the
package is registered without running its __init__ (the stub runs the real __init__ the first
time anything asks it for a name it lacks, e.g. `parsimonious.Grammar`), and, when nothing has
imported `regex` yet, `regex` is blocked while the core modules load, so that parsimonious 0.11
takes its documented fallback to the standard `re`. parsimonious 0.10 has no such fallback:
there the shortcut fails and the plain import runs. While the core modules load, the standard
modules they import but only call into when building a grammar with custom rules, formatting
an error or evaluating a grammar's string literal (`inspect`, `ast`, `textwrap`: ~6 ms, with
`dis`, `tokenize` and `linecache`), and the regex engine itself (`re`, ~9 ms with `enum`), are
stand-ins (`standin`) that import the real module the first time anything is taken from them;
they leave sys.modules when the core modules are loaded. A loaded grammar matches without an
engine: its keywords are KeywordPatterns and its other patterns FixedPatterns (FIXED), so the
engine is imported, and checked, only when a grammar is built (`build`), and a broken engine
there has parsimonious imported the ordinary way.
"""

import os
import sys
from collections import defaultdict

from ..errors import AttemptError
from .sqltext import skip_space

FORMAT = 3  # bump when LazyPattern, KeywordPattern, FixedPattern, FIXED or Rules change what a pickle means
TESTED = ">=0.10,<0.12"
_KEYWORD_TAIL = "(?![A-Za-z0-9_])"

# bound by _bind() to the parsimonious in use
ParseError = Node = NodeVisitor = Furthest = None
_E = None  # parsimonious.expressions
_ENGINE = None  # the regex module parsimonious.expressions compiles with (`re` or `regex`)
SHORTCUT = False  # whether the start-up shortcut was kept (tests and `--explain`-style diagnostics)


# --- what a cached grammar is made of ----------------------------------------------------

class Rules(dict):
    """A compiled grammar: rule name → parsimonious Expression (what `parsimonious.Grammar`
    holds, without its class: unpickling this needs only parsimonious.expressions)."""


class LazyPattern:
    """A regular expression compiled on first use, by the engine parsimonious compiles with.
    The cached grammar holds these instead of compiled patterns: unpickling ~110 compiled
    patterns recompiles every one (~10 ms), while a statement only ever tries a few dozen."""

    def __init__(self, pattern: str, flags: int):
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name):  # match, search, groups, …: compile once, then delegate
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = _ENGINE.compile(self.pattern, self.flags)
        self.match = compiled.match
        self.search = compiled.search
        return getattr(compiled, name)

    def __reduce__(self):
        return (LazyPattern, (self.pattern, self.flags))


class _Span:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start, self.end = start, end

    def span(self):
        return self.start, self.end


class KeywordPattern(LazyPattern):
    """A keyword rule (`~r"WORD(?![A-Za-z0-9_])"i`) matched without the regex engine."""

    def __init__(self, pattern: str, flags: int):
        super().__init__(pattern, flags)
        self.word = pattern.split("(", 1)[0]

    def match(self, text, pos=0):
        end = pos + len(self.word)
        if text[pos:end].upper() != self.word:
            return None
        if end < len(text) and (text[end] == "_" or (text[end].isascii() and text[end].isalnum())):
            return None
        return _Span(pos, end)

    def __reduce__(self):
        return (KeywordPattern, (self.pattern, self.flags))


# --- the grammar's other patterns, matched without the regex engine -------------------------

_DIGITS = frozenset("0123456789")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_WORD = _LETTERS | _DIGITS | {"_"}


def _run(text: str, i: int, chars) -> int:
    """The end of the run of `chars` from i."""
    n = len(text)
    while i < n and text[i] in chars:
        i += 1
    return i


def _free(text: str, i: int, after=_WORD) -> bool:
    """(?![…]) at i: no character of `after` there."""
    return i >= len(text) or text[i] not in after


def _identifier(text, i):  # [A-Za-z_][A-Za-z0-9_]*
    return _run(text, i + 1, _WORD) if i < len(text) and (text[i] in _LETTERS or text[i] == "_") else -1


_ALNUM = _LETTERS | _DIGITS
_NAME_TAIL = _WORD | {"-"}


def _name(text, i):  # [A-Za-z0-9][A-Za-z0-9_-]*
    return _run(text, i + 1, _NAME_TAIL) if i < len(text) and text[i] in _ALNUM else -1


def _digits(text: str, i: int, k: int) -> bool:
    return len(text) >= i + k and all(c in _DIGITS for c in text[i:i + k])


def _at(text: str, i: int, chars: str) -> bool:
    return i < len(text) and text[i] in chars


def _first_free(text: str, ends, after=_WORD) -> int:
    """The first of `ends` (the regex's order of preference) not followed by a word character."""
    for e in ends:
        if _free(text, e, after):
            return e
    return -1


def _zones(text: str, i: int) -> list:
    """Ends of (?:[Zz]|[+-][0-9]{2}:?[0-9]{2})? from i, in the order the regex tries them."""
    out = []
    if _at(text, i, "Zz"):
        out.append(i + 1)
    if _at(text, i, "+-") and _digits(text, i + 1, 2):
        if _at(text, i + 3, ":") and _digits(text, i + 4, 2):
            out.append(i + 6)
        elif _digits(text, i + 3, 2):
            out.append(i + 5)
    return out + [i]


def _datetime(text, i):
    r"""[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?
    (?:[Zz]|[+-][0-9]{2}:?[0-9]{2})?)?(?![A-Za-z0-9_])"""
    if not (_digits(text, i, 4) and _at(text, i + 4, "-") and _digits(text, i + 5, 2) and _at(text, i + 7, "-")
            and _digits(text, i + 8, 2)):
        return -1
    date = i + 10
    ends = []
    if _at(text, date, "Tt ") and _digits(text, date + 1, 2) and _at(text, date + 3, ":") and _digits(text, date + 4, 2):
        minute = date + 6
        seconds = []
        if _at(text, minute, ":") and _digits(text, minute + 1, 2):
            s = minute + 3
            if _at(text, s, ".") and _digits(text, s + 1, 1):
                seconds.append(_run(text, s + 1, _DIGITS))
            seconds.append(s)
        seconds.append(minute)
        for s in seconds:
            ends += _zones(text, s)
    return _first_free(text, ends + [date])


def _number(text, i):  # [0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_])
    if not _at(text, i, _DIGITS):
        return -1
    whole = _run(text, i, _DIGITS)
    ends = []
    for f in ([_run(text, whole + 1, _DIGITS)] if _at(text, whole, ".") and _at(text, whole + 1, _DIGITS) else []) + [whole]:
        if _at(text, f, "eE"):
            d = f + 2 if _at(text, f + 1, "+-") else f + 1
            if _at(text, d, _DIGITS):
                ends.append(_run(text, d, _DIGITS))
        ends.append(f)
    return _first_free(text, ends)


def _integer(text, i):  # [0-9]+(?![A-Za-z0-9_.])
    return _first_free(text, [_run(text, i, _DIGITS)], _WORD | {"."}) if _at(text, i, _DIGITS) else -1


def _relative(text, i):  # -[0-9]+[A-Za-z]*(?![A-Za-z0-9_])
    if not (_at(text, i, "-") and _at(text, i + 1, _DIGITS)):
        return -1
    return _first_free(text, [_run(text, _run(text, i + 1, _DIGITS), _LETTERS)])


def _end(text, i):  # (?![\s\S])
    return i if i >= len(text) else -1


def _quoted(q: str, least: int):
    """q(?:[^q]|qq)*q (least 0) or q(?:[^q]|qq)+q (least 1)."""
    def find(text, i):
        if not _at(text, i, q):
            return -1
        j, taken, last_pair, before_pair = i + 1, 0, -1, 0
        while True:
            k = text.find(q, j)
            if k < 0:  # unclosed: the regex gives back its last qq and closes on its first quote
                return last_pair + 1 if last_pair >= 0 and before_pair >= least else -1
            taken += k - j
            if text.startswith(q + q, k):
                last_pair, before_pair = k, taken
                taken += 1
                j = k + 2
            else:
                return k + 1 if taken >= least else -1
    return find


FIXED = {
    r"[A-Za-z_][A-Za-z0-9_]*": _identifier,
    r"[A-Za-z0-9][A-Za-z0-9_-]*": _name,
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:[Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
    r"(?![A-Za-z0-9_])": _datetime,
    r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_])": _number,
    r"[0-9]+(?![A-Za-z0-9_.])": _integer,
    r"-[0-9]+[A-Za-z]*(?![A-Za-z0-9_])": _relative,
    r"(?:\s+|--[^\n]*)*": skip_space,
    r"(?![\s\S])": _end,
    r"'(?:[^']|'')*'": _quoted("'", 0),
    r'"(?:[^"]|"")+"': _quoted('"', 1),
}
"""The grammar's patterns other than keywords (pattern text → a function of (text, pos) giving the
end of the match `re` finds there, or -1), so that parsing a statement never imports `re`
(~9 ms of a cold `attempt query`, with `enum`). Tests hold each equal to `re` on every string of
a small alphabet up to a length, and on random longer ones."""


class FixedPattern(LazyPattern):
    """A pattern of FIXED, matched by its function (never compiled)."""

    def __init__(self, pattern: str, flags: int):
        super().__init__(pattern, flags)
        self.find = FIXED[pattern]

    def match(self, text, pos=0):
        end = self.find(text, pos)
        return None if end < 0 else _Span(pos, end)

    def __reduce__(self):
        return (FixedPattern, (self.pattern, self.flags))


def _is_fixed(pattern) -> bool:
    E = _ENGINE
    return pattern.pattern in FIXED and not pattern.flags & (E.I | E.L | E.M | E.S | E.X | E.A)


def _is_keyword(pattern) -> bool:
    word, _, tail = pattern.pattern.partition("(")
    return ("(" + tail == _KEYWORD_TAIL and word.isupper() and word.replace("_", "").isalpha()
            and bool(pattern.flags & _ENGINE.IGNORECASE))


def members(e) -> tuple:
    """The sub-expressions of `e` (none for a Literal or Regex)."""
    return getattr(e, "members", ()) or ()


def build(text: str) -> Rules:
    """Compile a grammar text (the full parsimonious: its __init__ runs here if it has not).
    Under the start-up shortcut, an engine that does not match (a broken fallback) has
    parsimonious imported the ordinary way first."""
    if SHORTCUT and not _engine_works():
        _unload()
        _plain()
    import parsimonious
    return Rules(parsimonious.Grammar(text))


def make_lazy(rules: Rules) -> None:
    """Replace every compiled pattern in `rules` by a LazyPattern (a KeywordPattern for a
    keyword), in place, before the grammar is pickled."""
    seen = set()
    stack = list(rules.values())
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        pattern = getattr(e, "re", None)
        if pattern is not None and hasattr(pattern, "pattern") and not isinstance(pattern, LazyPattern):
            kind = KeywordPattern if _is_keyword(pattern) else FixedPattern if _is_fixed(pattern) else LazyPattern
            e.re = kind(pattern.pattern, pattern.flags)
            ident = getattr(e, "identity_tuple", None)
            if isinstance(ident, tuple) and len(ident) == 2 and ident[1] is pattern:  # it holds the pattern too
                e.identity_tuple = (ident[0], e.re)
        stack.extend(members(e))


# --- matching -------------------------------------------------------------------------------

def _furthest_class(base):
    class Furthest(base):
        """A ParseError that remembers every named rule failing at the furthest position
        (match_core sets `expr`, then `pos`, each time a rule fails at or past the furthest)."""

        def __init__(self, text):
            self._best = -1
            self._expr = None
            self._pending = None
            self.found = []
            self._ids = set()
            super().__init__(text)

        @property
        def expr(self):
            return self._expr

        @expr.setter
        def expr(self, e):
            self._expr = e
            self._pending = e

        @property
        def pos(self):
            return self._best

        @pos.setter
        def pos(self, p):
            e = self._pending
            named = e is not None and e.name
            if p > self._best:
                self._best = p
                self.found = [e] if named else []
                self._ids = {id(e)}
            elif p == self._best and named and id(e) not in self._ids:
                # by identity (each rule is one object): `e not in found` used parsimonious's `==`,
                # which compares two rules' whole trees; a 4,000-character list took 0.58 s
                self._ids.add(id(e))
                self.found.append(e)

    return Furthest


class Memo:
    """The packrat memo of one match: which rule matched what, where."""

    __slots__ = ("_cache",)

    def __init__(self, cache):
        self._cache = cache

    def at(self, expr) -> list:
        """(start, node) for every place `expr` matched."""
        return [(s, n) for s, n in self._cache.get(id(expr), {}).items() if isinstance(n, Node)]

    def matches(self):
        """(start, node) for every match of every rule."""
        for entries in self._cache.values():
            for s, n in entries.items():
                if isinstance(n, Node):
                    yield s, n


def match(rule, text: str):
    """Match `rule` at the start of `text`: (node or None, Furthest, Memo). The node may end
    before the text does. Raises RecursionError on input nested too deeply."""
    err = Furthest(text)
    cache = defaultdict(dict)
    node = rule.match_core(text, 0, cache, err)
    return node, err, Memo(cache)


# --- version ------------------------------------------------------------------------------

def version() -> str:
    """The installed parsimonious distribution's version (parsimonious defines no
    `__version__`): read from the one `parsimonious-<version>.dist-info` beside the package
    (a directory listing, ~0.1 ms), else from importlib.metadata (~10 ms to import)."""
    site = os.path.dirname(os.path.dirname(os.path.abspath(_E.__file__)))
    try:
        found = [n for n in os.listdir(site)
                 if n.lower().startswith("parsimonious-") and n.endswith(".dist-info")]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0][len("parsimonious-"):-len(".dist-info")]
    try:
        from importlib.metadata import version as dist_version
        return dist_version("parsimonious")
    except Exception:
        return "unknown"


def fingerprint() -> str:
    """What a pickled grammar depends on, besides the grammar text and the pickle protocol."""
    return f"{os.path.abspath(_E.__file__)}|{version()}|{_ENGINE.__name__}|{FORMAT}"


# --- loading ------------------------------------------------------------------------------

# standard modules parsimonious's core modules import at load time → the names they take with
# `from … import` (`import ast` takes none: parsimonious.utils calls ast.literal_eval later;
# `import re` none either: expressions compiles a pattern only when a grammar is built)
DEFERRED = {"inspect": ("getfullargspec", "isfunction", "ismethod", "ismethoddescriptor"),
            "textwrap": ("dedent",), "ast": (), "re": ()}


def standin(name: str, names: tuple):
    """A module object standing in for the standard module `name`: each of `names` is a
    function calling the real one, and any other attribute is the real module's; the real
    module is imported at the first use (the stand-in has left sys.modules by then)."""
    mod = type(sys)(name)

    def real():
        if sys.modules.get(name) is mod:
            del sys.modules[name]
        return __import__(name)

    def forward(attr):
        def call(*args, **kwargs):
            return getattr(real(), attr)(*args, **kwargs)
        call.__name__ = call.__qualname__ = attr
        return call

    def attribute(attr):
        if attr.startswith("__"):  # what the import system asks a module (`__path__`, …): not this one's
            raise AttributeError(attr)
        return getattr(real(), attr)

    for attr in names:
        setattr(mod, attr, forward(attr))
    mod.__getattr__ = attribute
    return mod


def _loaded() -> list[str]:
    return [n for n in sys.modules if n == "parsimonious" or n.startswith("parsimonious.")]


def _shortcut() -> bool:
    """Load parsimonious's core modules the cheap way. False (nothing loaded) when a
    precondition does not hold; an exception when it broke half-way (the caller cleans up)."""
    if _loaded():
        return False  # imported already: use that
    from importlib.machinery import PathFinder, SourceFileLoader
    spec = PathFinder.find_spec("parsimonious")
    if (spec is None or not isinstance(spec.loader, SourceFileLoader) or not spec.submodule_search_locations
            or not spec.origin or os.path.basename(spec.origin) != "__init__.py"):
        return False  # not a package of source files on sys.path (a zip, a custom finder, …)
    stub = type(sys)("parsimonious")
    stub.__path__ = list(spec.submodule_search_locations)
    stub.__file__ = spec.origin
    stub.__spec__ = spec
    stub.__package__ = "parsimonious"

    def complete(name):
        init = stub.__dict__.pop("__getattr__", None)  # run the real __init__ once
        if init is not None:
            with open(spec.origin, encoding="utf-8") as f:
                exec(compile(f.read(), spec.origin, "exec"), stub.__dict__)
        try:
            return stub.__dict__[name]
        except KeyError:
            raise AttributeError(name) from None

    stub.__getattr__ = complete
    sys.modules["parsimonious"] = stub
    blocked = "regex" not in sys.modules
    if blocked:
        sys.modules["regex"] = None  # `import regex` raises ImportError: 0.11 falls back to `re`
    standins = {name: standin(name, names) for name, names in DEFERRED.items() if name not in sys.modules}
    sys.modules.update(standins)
    try:
        import parsimonious.exceptions  # noqa: F401
        import parsimonious.expressions  # noqa: F401
        import parsimonious.nodes  # noqa: F401
    finally:
        if blocked and sys.modules.get("regex", 0) is None:
            del sys.modules["regex"]
        for name, mod in standins.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]
    return True


def _bind() -> None:
    global ParseError, Node, NodeVisitor, Furthest, _E, _ENGINE
    import parsimonious.exceptions
    import parsimonious.expressions
    import parsimonious.nodes
    _E = parsimonious.expressions
    _ENGINE = _E.re
    ParseError = parsimonious.exceptions.ParseError
    Node = parsimonious.nodes.Node
    NodeVisitor = parsimonious.nodes.NodeVisitor
    Furthest = _furthest_class(ParseError)


def _pattern(E, pattern: str, kind, name: str):
    """A parsimonious Regex as a loaded grammar holds one: its pattern one of this module's
    (nothing compiled, no regex engine)."""
    r = E.Regex.__new__(E.Regex)
    E.Expression.__init__(r, name)
    r.re = kind(pattern, 0)
    r.identity_tuple = (r.name, r.re)
    return r


def _smoke() -> None:
    """Exercise every internal this module relies on with a three-rule grammar (~0.2 ms), matched
    as a loaded grammar matches (keyword and fixed patterns); raise AssertionError (or whatever
    breaks) when one of them behaves differently."""
    E = _E
    kw = _pattern(E, "AB" + _KEYWORD_TAIL, KeywordPattern, "AB")
    word = _pattern(E, r"[A-Za-z_][A-Za-z0-9_]*", FixedPattern, "word")
    bang = E.Literal("!", name="bang")
    rule = E.Sequence(kw, E.OneOf(bang, word, name="tail"), name="s")

    class Visitor(NodeVisitor):
        def visit_s(self, node, children):
            return [node.expr_name, children[1]]

        def generic_visit(self, node, children):
            return node.text

    node, err, memo = match(rule, "ab!")
    assert node is not None and node.end == 3 and Visitor().visit(node) == ["s", "!"]
    assert [s for s, n in memo.at(kw)] == [0] and any(n.expr is bang for _, n in memo.matches())
    node, err, memo = match(rule, "ab ?")
    assert node is None and err.pos == 2 and {id(bang), id(word)} <= {id(e) for e in err.found}
    node, err, memo = match(rule, "abc")
    assert node is None and err.pos == 0 and any(e is kw for e in err.found)


def _engine_works() -> bool:
    """Whether the regex engine parsimonious compiles with matches (only building a grammar
    uses it: a loaded one matches with this module's patterns)."""
    try:
        m = _ENGINE.compile("a+").match("xaa", 1)
        return m is not None and m.span() == (1, 3)
    except Exception:
        return False


def _load() -> None:
    global SHORTCUT
    try:
        taken = _shortcut()
    except Exception:
        taken = None
    if taken:
        try:
            _bind()
            _smoke()
            SHORTCUT = True
            return
        except Exception:
            pass
    if taken is not False:  # undo what the shortcut loaded, then import it the ordinary way
        _unload()
    _plain()


def _unload() -> None:
    global SHORTCUT
    SHORTCUT = False
    for name in _loaded():
        del sys.modules[name]


def _plain() -> None:
    """parsimonious imported the ordinary way (with its own choice of regex engine)."""
    try:
        import parsimonious  # noqa: F401
        _bind()
        _smoke()
    except Exception as e:
        raise AttemptError(
            "query.parser_unavailable",
            f"AttemptQL cannot use the installed parsimonious ({type(e).__name__}); install a tested "
            f"version: pip install 'parsimonious{TESTED}'") from None


_load()
