"""Tables that fit the terminal.

Invariants: no line is longer than the width (`COLUMNS`, else the terminal's, else 80),
measured in display columns (`cols`: East Asian wide characters and most emoji take two,
combining marks none; a wide character is never cut in half); id cells are printed whole or
as the short form the caller vouches for (attemptdb.query.shortids: it resolves back to the
same row), never cut; timestamp cells are never cut (when space runs out an ISO time loses
its fractional seconds, a whole value still); numbers and vocabulary values (an outcome, a
failure class) are never cut; only free-text columns shrink, with "…"; headers and the rule
(`-`, the one rule of every table) line up with the cells; columns that cannot fit even then
are left out, empty ones first, named in a note. No third-party imports; `unicodedata` only
for text that is not ASCII.
"""

import os

from ..model import ids

DEFAULT_WIDTH = 80
GAP = 2
TEXT_MIN = 8

_HEX = frozenset("0123456789abcdef")


# The shapes below are written out rather than as regular expressions: a cold read does not
# import `re` (with `enum` and `textwrap`, 1-2 ms of a cold read here). Digits are ASCII.

def _digits(s: str) -> bool:
    return s.isdigit() and s.isascii()


def is_time(v: str) -> bool:
    """`YYYY-MM-DD[T ]HH:MM`, then optionally `:SS` with an optional fraction, then an optional `Z`."""
    if v.endswith("Z"):
        v = v[:-1]
    if len(v) < 16 or v[4] != "-" or v[7] != "-" or v[10] not in "T " or v[13] != ":" \
            or not _digits(v[:4] + v[5:7] + v[8:10] + v[11:13] + v[14:16]):
        return False
    rest = v[16:]
    if not rest:
        return True
    if len(rest) < 3 or rest[0] != ":" or not _digits(rest[1:3]):
        return False
    frac = rest[3:]
    return not frac or (frac[0] == "." and _digits(frac[1:]))


def is_number(v: str) -> bool:
    """An optional sign, digits, an optional fraction, an optional exponent (`e+29`, `e-07`: how
    a table writes a decimal, results.real), an optional `%`."""
    if v.endswith("%"):
        v = v[:-1]
    if v[:1] in ("-", "+"):
        v = v[1:]
    v, e, exponent = v.partition("e")
    if e and not (exponent[:1] in ("-", "+") and _digits(exponent[1:])):
        return False
    whole, dot, frac = v.partition(".")
    return _digits(whole) and (not dot or _digits(frac))


def is_id_like(v: str) -> bool:
    """A stored id or a short form of one: 2-4 lowercase letters, `_`, 8 hex digits, then hex
    digits with single hyphens between them."""
    i = ids.prefix_end(v)
    if i < 0 or len(v) < i + 9:
        return False
    rest = v[i + 1:]
    return (all(c in _HEX for c in rest[:8]) and all(c in _HEX or c == "-" for c in rest[8:])
            and "--" not in rest and not rest.endswith("-"))


def terminal_width(stream=None) -> int:
    """COLUMNS when set to a positive number, else the size of the terminal `stream` (stdout)
    is, else 80."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    import sys
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            cols = os.get_terminal_size(stream.fileno()).columns
            if cols > 0:
                return cols
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_WIDTH


_COLS: dict = dict.fromkeys("…→←↻⇄▌◆▶✓✗⎇─—", 1)
"""Display columns of each non-ASCII character met so far (unicodedata is imported for the
first one that is not among the marks the commands draw themselves)."""


def _char_cols(c: str) -> int:
    n = _COLS.get(c)
    if n is None:
        import unicodedata  # only for text that is not ASCII: a cold ASCII read never imports it
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            n = 0
        elif unicodedata.east_asian_width(c) in ("W", "F"):
            n = 2
        else:
            n = 1
        _COLS[c] = n
    return n


def cols(text: str) -> int:
    """The columns `text` takes on a terminal: East Asian wide and fullwidth characters (CJK,
    most emoji) 2, combining marks and zero-width characters 0, the others 1."""
    if text.isascii():
        return len(text)
    return sum(1 if c < "\u0300" else _char_cols(c) for c in text)


def cut(text: str, width: int) -> str:
    """The longest start of `text` that takes at most `width` columns (a wide character is never
    cut in half; combining marks stay with the character before them)."""
    if text.isascii():
        return text[:max(width, 0)]
    n = 0
    for i, c in enumerate(text):
        n += 1 if c < "\u0300" else _char_cols(c)
        if n > width:
            return text[:i]
    return text


def pad(text: str, width: int) -> str:
    """`text` followed by spaces up to `width` columns."""
    return text + " " * (width - cols(text))


def clip(text: str, width: int) -> str:
    """`text` cut to `width` columns with an ellipsis."""
    if width <= 0:
        return ""
    return text if cols(text) <= width else cut(text, width - 1) + "…"


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """A message as lines of at most `width` characters (long words are broken)."""
    return lines_of(text, max(width, 10), indent=indent) or [""]


_SPACES = str.maketrans("\t\n\x0b\x0c\r", "     ")


def lines_of(text: str, width: int, *, indent: str = "", break_long_words: bool = True) -> list[str]:
    """`textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False,
    break_long_words=…)`, line for line (tests hold the two equal), without importing
    `textwrap` and `re` into a cold read: words are what ASCII whitespace separates. Widths
    are display columns (`cols`): wide characters count 2, and a long word is broken between
    characters."""
    if width <= 0:
        raise ValueError(f"invalid width {width!r} (must be > 0)")
    chunks, spaces = [], 0
    for k, word in enumerate(text.expandtabs().translate(_SPACES).split(" ")):  # words and runs of spaces
        spaces += k > 0
        if word:
            if spaces:
                chunks.append(" " * spaces)
                spaces = 0
            chunks.append(word)
    if spaces:
        chunks.append(" " * spaces)
    chunks.reverse()
    lines: list[str] = []
    while chunks:
        line, size = [], 0
        lead = indent if lines else ""
        room = width - cols(lead)
        if chunks[-1].strip() == "" and lines:
            del chunks[-1]
        while chunks and size + cols(chunks[-1]) <= room:
            size += cols(chunks[-1])
            line.append(chunks.pop())
        if chunks and cols(chunks[-1]) > room:  # a word longer than a whole line
            if break_long_words:
                piece = cut(chunks[-1], 1 if room < 1 else room - size)
                if not piece and not line:  # one wide character on a line of one column
                    piece = chunks[-1][:1]
                if piece or cols(chunks[-1]) == len(chunks[-1]):  # (textwrap's own empty piece)
                    line.append(piece)
                chunks[-1] = chunks[-1][len(piece):]
            elif not line:
                line.append(chunks.pop())
        if line and line[-1].strip() == "":
            del line[-1]
        if line:
            lines.append(lead + "".join(line))
    return lines


_GLUE = "\x00"  # joins the words of a span kept whole: one column, like the space it stands for,
#                 and never in the text of a message (errors.printable shows NUL as `?`)


def prose(text: str, width: int, indent: str = "", *, whole=()) -> list[str]:
    """A message (a status line, a note, a hint) as lines of at most `width` columns, broken
    only at spaces, never inside a word: an id, a path or a number stays whole to copy (a word
    wider than a line gets a line of its own and runs past it). Nor is any string of `whole`
    (a path with spaces) broken at its spaces, nor a span in backticks (a command to copy)
    that fits on a line."""
    width, glued = max(width, 10), _GLUE not in text
    if glued:
        if "`" in text:
            parts, room = text.split("`"), width - cols(indent) - 2
            for i in range(1, len(parts) - 1, 2):  # inside a pair of backticks
                if cols(parts[i]) <= room:
                    parts[i] = parts[i].replace(" ", _GLUE)
            text = "`".join(parts)
        for w in whole:
            if w and " " in w:
                text = text.replace(w, w.replace(" ", _GLUE))
    lines = lines_of(text, width, indent=indent, break_long_words=False) or [""]
    return [line.replace(_GLUE, " ") for line in lines] if glued else lines


_TOKEN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def is_token(v: str) -> bool:
    """A value of a fixed vocabulary (an outcome, a failure class, a provider): lowercase ASCII
    letters, digits and `_`, at most 32 characters."""
    return 0 < len(v) <= 32 and all(c in _TOKEN for c in v)


def _kind(values) -> str:
    vals = [v for v in values if v not in ("", "-")]  # "-" stands for no value
    if not vals:
        return "empty"
    if all(is_id_like(v) for v in vals):
        return "id"
    if all(is_time(v) for v in vals):
        return "time"
    if all(is_number(v) for v in vals):
        return "number"
    if all(is_token(v) for v in vals):
        return "token"
    return "text"


def compact_time(v: str) -> str:
    i = v.find(".")
    return v[:i] + ("Z" if v.endswith("Z") else "") if i > 0 and is_time(v) else v


def fit(headers: list, rows: list, width: int, *, shorten: dict | None = None, drop_order=None,
        rule: str = "-", fixed=(), text_min: int = TEXT_MIN, wrap: str | None = None,
        wrap_min: int = 24) -> tuple[list[str], list[str]]:
    """(lines, hidden column names) of a table of string cells fitted to `width` display columns
    (`cols`: a wide character takes two).

    Steps, each only when the previous one left the table too wide: ids in their short form
    (from `shorten`, full id → short id); ISO times without fractional seconds; columns with no
    value left out; text columns cut, down to `text_min` characters at most (8 by default),
    room given back evenly (short columns whole first); then whole columns left out, in
    `drop_order` (names), then from the right, the first column last. Values of a vocabulary
    (`is_token`: an outcome, a failure class) are not cut, only their header, nor are those of
    the columns named in `fixed` (short enumerations such as `failure/nonzero_exit`). The column named `wrap` (the point
    of the table, e.g. a reason) is never cut nor left out: it comes last and its cells wrap
    onto more lines, the other columns fitted beside it with at least `wrap_min` columns left
    for it (on a terminal too narrow for that, each cell goes under its row, indented)."""
    if wrap is not None and wrap in headers:
        return _fit_wrapping(headers, rows, width, wrap, wrap_min, shorten=shorten, drop_order=drop_order,
                             rule=rule, fixed=fixed, text_min=text_min)
    n = len(headers)
    cells = [[r[k] for r in rows] for k in range(n)]
    kinds = ["fixed" if headers[k] in fixed else _kind(c) for k, c in enumerate(cells)]
    heads = [cols(h) for h in headers]

    def natural(cs):
        return [max([heads[k]] + [cols(v) for v in cs[k]]) for k in range(n)]

    def total(ws, keep):
        return sum(ws[k] for k in keep) + GAP * (len(keep) - 1)

    keep = list(range(n))
    widths = natural(cells)
    if total(widths, keep) > width and shorten:
        cells = [[shorten.get(v, v) for v in c] if kinds[k] == "id" else c for k, c in enumerate(cells)]
        widths = natural(cells)
    if total(widths, keep) > width:
        cells = [[compact_time(v) for v in c] if kinds[k] == "time" else c for k, c in enumerate(cells)]
        widths = natural(cells)
    hidden = []
    for k in range(n - 1, 0, -1):  # a column with no value: only its name is lost
        if kinds[k] == "empty" and total(widths, keep) > width:
            keep.remove(k)
            hidden.append(headers[k])
    if total(widths, keep) > width:
        # shrinking: a text or vocabulary column's header counts only up to text_min characters
        shrinks = ("text", "token", "empty")
        widths = [max([min(heads[k], text_min)] + [cols(v) for v in cells[k]]) if kinds[k] in shrinks
                  else widths[k] for k in range(n)]
        mins = [min(widths[k], text_min) if kinds[k] in ("text", "empty") else widths[k] for k in range(n)]

        def drop(order):
            while total(mins, keep) > width and len(keep) > 1:
                k = next(k for k in order if k in keep)
                keep.remove(k)
                hidden.append(headers[k])
        drop([headers.index(h) for h in (drop_order or []) if h in headers] + list(range(n - 1, 0, -1)))
        spare = width - total(mins, keep)
        target = list(mins)
        growable = [k for k in keep if target[k] < widths[k]]
        while growable and spare > 0:  # fair shares: columns needing less than theirs are whole
            share = spare // len(growable)
            whole = [k for k in growable if widths[k] - target[k] <= share]
            if not whole:
                for i, k in enumerate(growable):
                    target[k] += share + (1 if i < spare % len(growable) else 0)
                break
            for k in whole:
                spare -= widths[k] - target[k]
                target[k] = widths[k]
                growable.remove(k)
        widths = target
        if len(keep) == 1:
            widths[keep[0]] = min(widths[keep[0]], width)
    lines = ["  ".join(pad(clip(headers[k], widths[k]), widths[k]) for k in keep).rstrip(),
             "  ".join(rule * widths[k] for k in keep)]
    for i in range(len(rows)):
        lines.append("  ".join(pad(clip(cells[k][i], widths[k]), widths[k]) for k in keep).rstrip())
    return lines, hidden


def _fit_wrapping(headers, rows, width, wrap, wrap_min, **how):
    """`fit` with the column `wrap` last, whole, its cells wrapped (see fit)."""
    w = headers.index(wrap)
    others = [h for k, h in enumerate(headers) if k != w]
    rest = [[v for k, v in enumerate(r) if k != w] for r in rows]
    texts = [r[w] for r in rows]
    need = min(max([cols(wrap)] + [cols(t) for t in texts]), wrap_min)
    room = width - GAP - need
    if not others or room >= TEXT_MIN + 4:
        if others:
            lines, hidden = fit(others, rest, room, **how)
            used = cols(lines[1])
            lead = used + GAP
        else:
            lines, hidden, used, lead = ["", ""] + [""] * len(rows), [], 0, 0
        tw = width - lead
        natural = max([cols(wrap)] + [cols(line) for t in texts for line in lines_of(t, tw) or [""]])
        out = [(pad(lines[0], used) + "  " if others else "") + clip(wrap, tw),
               (lines[1] + "  " if others else "") + how.get("rule", "-") * min(tw, natural)]
        for i, t in enumerate(texts):
            parts = lines_of(t, tw) or [""]
            out.append(((pad(lines[2 + i], used) + "  ") if others else "") + parts[0])
            out += [" " * lead + p for p in parts[1:]]
        return [x.rstrip() for x in out], hidden
    # too narrow to have it beside the others: under each row, indented
    lines, hidden = fit(others, rest, width, **how)
    out = lines[:2]
    for i, t in enumerate(texts):
        out.append(lines[2 + i])
        out += ["    " + p for p in lines_of(t, max(width - 4, 1))]
    return out, hidden


def hidden_note(hidden: list, width: int) -> list[str]:
    if not hidden:
        return []
    return wrap(f"(not shown at {width} columns: {', '.join(hidden)}; --json prints every column)", width)


def plural(n: int, word: str, words: str | None = None, *, grouped: bool = False) -> str:
    """`1 turn`, `2 turns` (`words` for irregular plurals); `grouped`: `1,234 turns`."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}" if grouped else \
        f"{n} {word if n == 1 else (words or word + 's')}"


def size_text(n: int) -> str:
    """A file size for people: `812 bytes`, `40.3 KiB`, `16.1 MiB`, `3.56 GiB`."""
    if n < 1024:
        return plural(n, "byte")
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.2f} {unit}" if v < 10 and unit == "GiB" else f"{v:.1f} {unit}"
    return plural(n, "byte")


def segments_fit(head: str, text: str, tail: str, width: int, *, min_text: int = 12,
                 indent: str = "      ") -> list[tuple[str, str, str]]:
    """One line `head + text + tail` fitted to `width` as [(head, text, tail)] pieces: only
    `text` is cut; when that would leave it fewer than `min_text` columns, `tail` moves to a
    second line under `indent` (and is itself cut only if it alone is too wide)."""
    room = width - cols(head) - cols(tail)
    if room >= min(min_text, cols(text)):
        return [(head, clip(text, room), tail)]
    if cols(head) >= width:  # a narrow terminal: the head itself is cut (ids come first in it)
        return [(clip(head.rstrip(), width), "", ""), (indent, "", clip(tail.lstrip(), width - cols(indent)))]
    return [(head, clip(text, width - cols(head)), ""), (indent, "", clip(tail.lstrip(), width - cols(indent)))]


def join_fit(parts: list, width: int, *, sep: str = " · ", first: str = "", indent: str = "  ") -> list[str]:
    """`first` then `parts` joined by `sep` on as few lines as `width` allows (continuation
    lines start with `indent`; a part too wide for a line of its own is cut)."""
    lines, cur, fresh = [], first, True
    for p in parts:
        piece = p if fresh else sep + p
        if fresh or cols(cur) + cols(piece) <= width:
            cur, fresh = cur + piece, False
            continue
        lines.append(cur)
        cur = indent + p
    lines.append(cur)
    return [clip(x, width) for x in lines]
