"""Style-preserving JSON editing: parse with positions, splice minimal edits, render new parts
in the file's own style.

Invariant: an edit changes only the bytes of the element or member it adds or removes (plus
the one separator next to it); every other byte of the document — key order, indentation,
spacing, escapes, number spellings, comments (JSONC), final newline, CRLF, a UTF-8 BOM — is
kept as it was. Adding an element and then removing it gives back the original text, so an
install followed by an uninstall is byte-identical to the file before.

Documents are parsed strictly (RFC 8259; `//` and `/* */` comments only when the caller
allows them, as Gemini CLI does); duplicate keys are refused because an agent would silently
keep only one of them. Errors carry a line and column, never the offending text.
"""

import json
import re
from json.decoder import scanstring

from ..errors import AttemptError

MAX_DEPTH = 256
_WS = " \t\r\n"
# RFC 8259 numbers: ASCII digits only (json.scanner.NUMBER_RE also takes digits such as "\u0661")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class JSONStyleError(AttemptError):
    """A document that is not the JSON we can safely edit (`installer.config_*`)."""

    exit_status = 1

    def __init__(self, code: str, message: str, line: int = 0, col: int = 0):
        where = f" (line {line}, column {col})" if line else ""
        super().__init__(code, message + where, exit_status=1)
        self.line = line
        self.col = col


# --- the tree ---------------------------------------------------------------------------------

class Node:
    """One JSON value in the text: `start`/`end` are offsets of its first and past-last char.

    A container below the top level is first checked whole by the C scanner (`_Parser.scan`)
    and its children are parsed with positions only when `members` or `items` is first read:
    an edit of `hooks` does not walk a large `permissions` list each time the text is parsed
    again. Every error is still raised by `parse`, as the positional parser words it."""

    __slots__ = ("kind", "start", "end", "value", "_members", "_items", "_lazy")

    def __init__(self, kind, start):
        self.kind = kind          # object | array | string | number | true | false | null
        self.start = start
        self.end = start
        self.value = None         # scalars: the Python value
        self._members = None      # objects: [Member]
        self._items = None        # arrays: [Node]
        self._lazy = None         # (parser, depth) of a container whose children are not parsed yet

    @property
    def members(self):
        if self._lazy is not None:
            self._expand()
        return self._members

    @members.setter
    def members(self, v):
        self._members = v

    @property
    def items(self):
        if self._lazy is not None:
            self._expand()
        return self._items

    @items.setter
    def items(self, v):
        self._items = v

    def _expand(self):
        parser, depth = self._lazy
        self._lazy = None
        full = parser.container(self.start, depth)
        self._members, self._items = full._members, full._items

    def get(self, key):
        """The member named `key` of an object node, or None."""
        for m in self.members or ():
            if m.key == key:
                return m
        return None

    def to_python(self):
        if self._lazy is not None:
            return self._lazy[0].scan(self.start, self._lazy[1])[0]
        if self.kind == "object":
            return {m.key: m.value.to_python() for m in self.members}
        if self.kind == "array":
            return [n.to_python() for n in self.items]
        return self.value


class Member:
    __slots__ = ("key", "start", "key_end", "value")

    def __init__(self, key, start, key_end, value):
        self.key = key
        self.start = start        # offset of the key's opening quote
        self.key_end = key_end
        self.value = value

    @property
    def end(self):
        return self.value.end


# --- parsing ----------------------------------------------------------------------------------

def _line_col(text, pos):
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _unique(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        raise ValueError("duplicate key")
    return d


def _no_constant(name):
    raise ValueError(name)


_SCANNER = json.JSONDecoder(object_pairs_hook=_unique, parse_constant=_no_constant)


def _levels(value) -> int:
    """How many levels of containers `value` nests (0 for a scalar)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        d += 1
        deepest = max(deepest, d)
        stack.extend((c, d) for c in v if isinstance(c, (dict, list)))
    return deepest


class _Parser:
    def __init__(self, text, allow_comments):
        self.text = text
        self.n = len(text)
        self.allow_comments = allow_comments
        self.positional = False   # inside a container the C scanner refused: no scan below it

    def fail(self, message, pos, code="installer.config_invalid_json"):
        line, col = _line_col(self.text, min(pos, self.n))
        raise JSONStyleError(code, message, line, col)

    def skip(self, i):
        t, n = self.text, self.n
        while i < n:
            c = t[i]
            if c in _WS:
                i += 1
            elif c == "/" and self.allow_comments and i + 1 < n and t[i + 1] in "/*":
                if t[i + 1] == "/":
                    j = t.find("\n", i)
                    i = n if j < 0 else j + 1
                else:
                    j = t.find("*/", i + 2)
                    if j < 0:
                        self.fail("unterminated comment", i)
                    i = j + 2
            else:
                break
        return i

    def value(self, i, depth):
        if depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH} levels", i)
        i = self.skip(i)
        if i >= self.n:
            self.fail("unexpected end of document", i)
        c = self.text[i]
        if c in "{[":
            if depth and not self.positional:
                found = self.scan(i, depth)
                if found is not None:
                    node = Node("object" if c == "{" else "array", i)
                    node.end, node._lazy = found[1], (self, depth)
                    return node
                # what the scanner refused (a comment, an error) lies somewhere below: scanning
                # each level again would cost the subtree's size once per level
                self.positional = True
                try:
                    return self.container(i, depth)
                finally:
                    self.positional = False
            return self.container(i, depth)
        if c == '"':
            node = Node("string", i)
            node.value, node.end = self.string(i)
            return node
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, i):
                node = Node(word, i)
                node.value, node.end = val, i + len(word)
                return node
        m = _NUMBER.match(self.text, i)
        if m and m.group(0):
            integer, frac, exp = m.groups()
            node = Node("number", i)
            try:
                node.value = float(integer + (frac or "") + (exp or "")) if (frac or exp) else int(integer)
            except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
                self.fail("a number with too many digits", i)
            node.end = m.end()
            return node
        self.fail("expected a JSON value", i)

    def container(self, i, depth):
        """The object or array at `i`, its children parsed with positions."""
        return self.obj(i, depth) if self.text[i] == "{" else self.arr(i, depth)

    def scan(self, i, depth):
        """(Python value, end) of the object or array at `i` by the C scanner, when it is one
        this parser accepts as it stands (strict JSON, no duplicate key, no NaN or Infinity, no
        deeper than MAX_DEPTH); None otherwise (a comment, an error: the positional parser
        decides, and words the error)."""
        try:
            value, end = _SCANNER.raw_decode(self.text, i)
        except (ValueError, RecursionError):
            return None
        return (value, end) if depth + _levels(value) <= MAX_DEPTH else None

    def string(self, i):
        try:
            s, end = scanstring(self.text, i + 1, True)
        except ValueError as e:
            self.fail("malformed string", getattr(e, "pos", i))
        return s, end

    def obj(self, i, depth):
        node = Node("object", i)
        node.members = []
        seen = set()
        i = self.skip(i + 1)
        if i < self.n and self.text[i] == "}":
            node.end = i + 1
            return node
        while True:
            if i >= self.n or self.text[i] != '"':
                self.fail("expected a quoted key", i)
            key_start = i
            key, i = self.string(i)
            if key in seen:
                self.fail("duplicate key", key_start, code="installer.config_duplicate_key")
            seen.add(key)
            key_end = i
            i = self.skip(i)
            if i >= self.n or self.text[i] != ":":
                self.fail("expected ':' after a key", i)
            val = self.value(i + 1, depth + 1)
            node.members.append(Member(key, key_start, key_end, val))
            i = self.skip(val.end)
            if i < self.n and self.text[i] == ",":
                i = self.skip(i + 1)
                continue
            if i < self.n and self.text[i] == "}":
                node.end = i + 1
                return node
            self.fail("expected ',' or '}'", i)

    def arr(self, i, depth):
        node = Node("array", i)
        node.items = []
        i = self.skip(i + 1)
        if i < self.n and self.text[i] == "]":
            node.end = i + 1
            return node
        while True:
            val = self.value(i, depth + 1)
            node.items.append(val)
            i = self.skip(val.end)
            if i < self.n and self.text[i] == ",":
                i = self.skip(i + 1)
                continue
            if i < self.n and self.text[i] == "]":
                node.end = i + 1
                return node
            self.fail("expected ',' or ']'", i)


BOM = "\ufeff"


def decode(data: bytes) -> str:
    """Bytes of a config → text; non-UTF-8 is refused (we would not write it back faithfully)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JSONStyleError("installer.config_not_utf8",
                             f"the file is not valid UTF-8 (byte {e.start})") from None


def parse(text: str, *, allow_comments: bool = False) -> Node:
    """Parse a whole document (a leading BOM is skipped and kept)."""
    p = _Parser(text, allow_comments)
    start = 1 if text.startswith(BOM) else 0
    node = p.value(start, 0)
    end = p.skip(node.end)
    if end != p.n:
        p.fail("unexpected text after the JSON document", end)
    return node


# --- style ------------------------------------------------------------------------------------

class Style:
    """How a document is laid out: indent unit, newline, final newline, key separator, and
    whether it is written on one line (minified)."""

    __slots__ = ("indent", "newline", "final_newline", "key_sep", "compact")

    def __init__(self, indent="  ", newline="\n", final_newline=True, key_sep=": ", compact=False):
        self.indent = indent
        self.newline = newline
        self.final_newline = final_newline
        self.key_sep = key_sep
        self.compact = compact

    def __repr__(self):
        return (f"Style(indent={self.indent!r}, newline={self.newline!r}, "
                f"final_newline={self.final_newline}, key_sep={self.key_sep!r}, compact={self.compact})")


def detect_style(text: str, root: Node | None = None) -> Style:
    """The style of `text`: indent unit from the first indented line (a tab, or N spaces;
    default 2), CRLF if the first line break is one, whether the text ends with a newline,
    the key/value separator of the first member, and whether the document is one line."""
    nl_at = text.find("\n")
    newline = "\r\n" if nl_at > 0 and text[nl_at - 1] == "\r" else "\n"
    indent = "  "
    for line in text.split("\n")[1:]:
        stripped = line.lstrip(" \t")
        if stripped.strip() and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            indent = "\t" if lead.startswith("\t") else " " * len(lead)
            break
    body = text.rstrip(_WS)
    compact = "\n" not in body
    key_sep = ":" if compact else ": "
    if root is not None:
        m = _first_member(root)
        if m is not None:
            between = text[m.key_end:m.value.start]
            if between.strip(" \t") == ":" and "\n" not in between:
                key_sep = between
    return Style(indent, newline, text.endswith("\n") or text.endswith("\r"), key_sep, compact)


def _first_member(node):
    if node.kind == "object":
        if node.members:
            return node.members[0]
    stack = [node]
    while stack:
        cur = stack.pop(0)
        if cur.kind == "object" and cur.members:
            return cur.members[0]
        if cur.kind == "array":
            stack.extend(cur.items)
    return None


# --- rendering --------------------------------------------------------------------------------

def _scalar(v) -> str:
    return json.dumps(v, ensure_ascii=False)


def render_value(value, style: Style, base_indent: str = "", inline: bool = False) -> str:
    """`value` as JSON text in `style`, its continuation lines indented from `base_indent`.
    `inline` (or a compact style) writes it on one line."""
    if inline or style.compact:
        item_sep = "," if style.compact else ", "
        return json.dumps(value, ensure_ascii=False, separators=(item_sep, style.key_sep))
    return _render(value, style, base_indent)


def _render(value, style, ind):
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = ind + style.indent
        parts = [f"{inner}{_scalar(k)}{style.key_sep}{_render(v, style, inner)}" for k, v in value.items()]
        return "{" + style.newline + ("," + style.newline).join(parts) + style.newline + ind + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        inner = ind + style.indent
        parts = [inner + _render(v, style, inner) for v in value]
        return "[" + style.newline + ("," + style.newline).join(parts) + style.newline + ind + "]"
    return _scalar(value)


def render_document(value, style: Style | None = None) -> str:
    """A whole new document (used when a config does not exist yet)."""
    style = style or Style()
    text = render_value(value, style, "")
    return text + (style.newline if style.final_newline else "")


# --- editing ----------------------------------------------------------------------------------

def bare(text: str, node: Node) -> bool:
    """Whether container `node` holds nothing between its brackets but whitespace (a comment in
    an empty one, JSONC, is the user's text: the container stays)."""
    return not text[node.start + 1:node.end - 1].strip(_WS)


def empty_document(text: str, root: Node) -> bool:
    """Whether the document is `{}` and nothing else (whitespace and a BOM aside; a comment
    anywhere in it is someone's text)."""
    return (root.kind == "object" and not root.members and bare(text, root)
            and not text[:root.start].lstrip(BOM).strip(_WS) and not text[root.end:].strip(_WS))


def line_indent(text: str, pos: int) -> str:
    """The leading whitespace of the line holding offset `pos`."""
    start = text.rfind("\n", 0, pos) + 1
    j = start
    while j < len(text) and text[j] in " \t":
        j += 1
    return text[start:j]


def _starts_line(text, pos):
    start = text.rfind("\n", 0, pos) + 1
    return text[start:pos].strip(" \t") == ""


def _clean_sep(sep: str) -> bool:
    s = sep.strip(_WS)
    return s == ","


def _children(node):
    """(start, end) spans of a container's children (members span key..value)."""
    if node.kind == "object":
        return [(m.start, m.end) for m in node.members]
    return [(n.start, n.end) for n in node.items]


def _layout(text, node, style):
    """(multiline, child_indent, separator) for adding a child to `node`."""
    spans = _children(node)
    own = line_indent(text, node.start)
    if not spans:
        multiline = not style.compact
        child = own + style.indent
        return multiline, child, ("," + style.newline + child) if multiline else ("," if style.compact else ", ")
    first = spans[0][0]
    multiline = "\n" in text[node.start:first]
    if multiline and _starts_line(text, first):
        child = line_indent(text, first)
    else:
        child = own + style.indent
    if len(spans) >= 2 and _clean_sep(text[spans[0][1]:spans[1][0]]):
        sep = text[spans[0][1]:spans[1][0]]
    elif multiline:
        sep = "," + style.newline + child
    else:
        sep = "," if style.compact else ", "
    return multiline, child, sep


def insert_child(text: str, node: Node, index: int | None, fragment_for, style: Style) -> str:
    """Insert a child into container `node` at `index` (None or past the end = append).
    `fragment_for(child_indent, inline)` returns the child's text (a value, or `"key": value`)."""
    spans = _children(node)
    multiline, child, sep = _layout(text, node, style)
    frag = fragment_for(child, not multiline)
    if not spans:
        close = node.end - 1
        # comments inside the empty container (JSONC) are someone else's: the child goes after them
        after = node.start + 1 + len(text[node.start + 1:close].rstrip())
        if multiline:
            own = line_indent(text, node.start)
            return text[:after] + style.newline + child + frag + style.newline + own + text[close:]
        return text[:after] + frag + text[close:]
    if index is None or index >= len(spans):
        at = spans[-1][1]
        eol = _trailing_comment_end(text, at) if multiline and sep.startswith(",") else None
        if eol is not None:  # `last // note`: the note stays on the last child's line, ours follows it
            return text[:at] + "," + text[at:eol] + sep[1:] + frag + text[eol:]
        return text[:at] + sep + frag + text[at:]
    index = max(index, 0)
    at = spans[index][0]
    if index > 0:
        before = text[spans[index - 1][1]:spans[index][0]]
        if _clean_sep(before):
            sep = before
    return text[:at] + frag + sep + text[at:]


def _trailing_comment_end(text: str, at: int) -> int | None:
    """Where the line ends (before its newline) when what follows `at` on it is only a comment
    (`// …`, or one `/* … */`): a JSONC note on the child that ends at `at`; else None."""
    eol = len(text)
    for nl in ("\r\n", "\n"):
        k = text.find(nl, at)
        if k != -1:
            eol = min(eol, k)
    rest = text[at:eol].strip()
    if rest.startswith("//") or (rest.startswith("/*") and rest.endswith("*/") and rest.count("*/") == 1):
        return eol
    return None


def _line_start(text: str, i: int) -> int:
    """`i` moved back over spaces/tabs, and over the newline before them when they open a line."""
    j = i
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j > 0 and text[j - 1] == "\n":
        j -= 1
        if j > 0 and text[j - 1] == "\r":
            j -= 1
    return j


def remove_child(text: str, node: Node, index: int) -> str:
    """Remove the child at `index` of container `node`, with the one separator beside it —
    the exact inverse of `insert_child`. A comment in that separator (JSONC) is someone
    else's and stays: only the comma and the child's own line go."""
    spans = _children(node)
    if len(spans) == 1:
        start, end = spans[0]
        if text[node.start + 1:start].strip():  # a comment before it stays, as insert_child left it
            return text[:_line_start(text, start)] + text[_line_start(text, node.end - 1):]
        return text[:node.start + 1] + text[node.end - 1:]
    start, end = spans[index]
    if index + 1 < len(spans):  # a child follows: ours goes with the separator after it
        nxt = spans[index + 1][0]
        between = text[end:nxt]
        if _clean_sep(between):
            return text[:start] + text[nxt:]
        comma = end + between.find(",")
        return text[:_line_start(text, start)] + text[comma + 1:]
    prev = spans[index - 1][1]  # the last child: it goes with the separator before it
    between = text[prev:start]
    if _clean_sep(between):
        return text[:prev] + text[end:]
    comma = prev + between.find(",")
    return text[:comma] + text[comma + 1:_line_start(text, start)] + text[end:]


def insert_item(text, array: Node, index, value, style: Style) -> str:
    return insert_child(text, array, index,
                        lambda ind, inline: render_value(value, style, ind, inline), style)


def insert_member(text, obj: Node, index, key: str, value, style: Style) -> str:
    def frag(ind, inline):
        sep = style.key_sep if not inline or style.compact else ": "
        return _scalar(key) + sep + render_value(value, style, ind, inline)
    return insert_child(text, obj, index, frag, style)


def remove_member(text, obj: Node, key: str) -> str:
    for i, m in enumerate(obj.members):
        if m.key == key:
            return remove_child(text, obj, i)
    return text
