"""AQL error codes and their rendering (RFC 0004 §7).

Invariant: every failure of a statement is an `AQLError` whose code lies in the range of its
category (AQL01 lexical … AQL06 evidence), whose message says what was expected and never
echoes database content, and which renders like

    error[AQL0102]: expected DOING after subject
      --> query:1:29
       |
     1 | WHAT IS project 'attemptdb' NOW
       |                             ^^^ expected 'DOING'

The only text shown back is the statement the user typed, and only in the source excerpt.
An error that names many alternatives (`listing`: a target's columns, the SHOW targets) fits
WIDTH columns: when its one line would not, the header keeps the message and the alternatives
go under the statement, packed into lines (`= columns: …`); `message` and `to_json` keep them
in one line, for machines.
"""

from ..errors import AttemptError, printable

# code → (category, one-line description). The table is the contract; tests check that every
# raised code is listed here and lies in its category's range.
CODES = {
    # AQL01xx lexical: the characters at a position do not form the token the statement needs
    "AQL0101": ("lexical", "unterminated string or quoted name"),
    "AQL0102": ("lexical", "expected keyword missing (the word at this position is not the keyword the statement needs)"),
    "AQL0103": ("lexical", "bad relative timestamp (not -N followed by m, h, d or w)"),
    "AQL0104": ("lexical", "invalid timestamp (not RFC 3339, a date, now/today/yesterday or a relative time)"),
    "AQL0105": ("lexical", "malformed id (prefix and hex digits expected)"),
    "AQL0106": ("lexical", "character that cannot start any token"),
    "AQL0107": ("lexical", "number out of range"),
    "AQL0108": ("lexical", "text that is not valid UTF-8 (bytes the terminal could not decode)"),
    # AQL02xx syntax: the tokens do not form a statement
    "AQL0201": ("syntax", "unexpected token (names what was expected)"),
    "AQL0202": ("syntax", "unexpected end of statement (names what was expected)"),
    "AQL0203": ("syntax", "empty statement"),
    "AQL0204": ("syntax", "more than one statement, or text after the end of the statement"),
    "AQL0205": ("syntax", "the same clause given twice"),
    "AQL0206": ("syntax", "unknown statement verb"),
    "AQL0207": ("syntax", "WHERE is not exactly one SQL expression (subqueries and statements are refused)"),
    "AQL0208": ("syntax", "statement too large or too complex to run safely"),
    # AQL03xx resolution: names and ids that do not resolve
    "AQL0301": ("resolution", "unknown id"),
    "AQL0302": ("resolution", "ambiguous short id (lists candidates)"),
    "AQL0303": ("resolution", "unknown project (suggests SHOW SESSIONS)"),
    "AQL0304": ("resolution", "id of the wrong kind for this position"),
    "AQL0305": ("resolution", "short id too short (at least 8 hex digits)"),
    "AQL0306": ("resolution", "unknown agent or provider"),
    "AQL0307": ("resolution", "unknown table (DESCRIBE)"),
    # AQL04xx semantics: a well-formed statement that asks for something that does not exist
    "AQL0401": ("semantics", "unknown state name (lists valid names)"),
    "AQL0402": ("semantics", "BETWEEN with identical agents"),
    "AQL0403": ("semantics", "DIFF with t1 >= t2"),
    "AQL0404": ("semantics", "filter not supported for this target (lists supported filters)"),
    "AQL0405": ("semantics", "unknown column (lists the target's columns)"),
    "AQL0406": ("semantics", "value outside the column's vocabulary (lists valid values)"),
    "AQL0407": ("semantics", "not supported yet (planned in RFC 0004)"),
    "AQL0408": ("semantics", "work units, decisions and conflicts are not in this file (written before they existed)"),
    "AQL0409": ("semantics", "subject not supported by this statement"),
    "AQL0410": ("semantics", "number outside its allowed range (LIMIT, DEPTH)"),
    "AQL0411": ("semantics", "state not supported for this kind of subject"),
    "AQL0412": ("semantics", "function not allowed in WHERE (lists allowed functions)"),
    # AQL05xx execution
    "AQL0501": ("execution", "timeout"),
    "AQL0502": ("execution", "memory or result size limit"),
    "AQL0503": ("execution", "cancelled"),
    "AQL0504": ("execution", "database unreadable (names the file)"),
    "AQL0505": ("execution", "SQL error reported by SQLite"),
    "AQL0506": ("execution", "read-only: the statement would write, change the schema or settings, attach or load"),
    "AQL0507": ("execution", "SQL statement kind not accepted (one SELECT/WITH/VALUES/EXPLAIN/DESCRIBE per call)"),
    # AQL06xx evidence
    "AQL0601": ("evidence", "inference without evidence (internal invariant violation; reported, never rendered)"),
}

RANGES = {"lexical": "AQL01", "syntax": "AQL02", "resolution": "AQL03", "semantics": "AQL04",
          "execution": "AQL05", "evidence": "AQL06"}


SHOWN_CHARS = 120
"""At most this much of a long statement line is echoed under an error, around the mark."""

WIDTH = 80
"""The columns a rendered error's header and list lines fit in (a terminal's)."""


def article(noun: str) -> str:
    """`noun` after its indefinite article, as a message says it: "an attempt", "a session",
    "a work unit", "a unit" (`u` read as "you" takes `a`)."""
    low = noun.lower()
    vowel = low[:1] in ("a", "e", "i", "o") or (low[:1] == "u" and not low.startswith(("uni", "use", "usu")))
    return f"{'an' if vowel else 'a'} {noun}"


class AQLError(AttemptError):
    """A statement failure. `pos`/`end` are character offsets into `source` (the statement
    text) when the failure has a position; `label` is the short text under the caret."""

    def __init__(self, code: str, message: str, *, source: str | None = None,
                 pos: int | None = None, end: int | None = None, label: str | None = None,
                 exit_status: int | None = None, listing: tuple[str, tuple | list] | None = None):
        """`listing` = (name, alternatives), e.g. ("columns", [...]): the message is `message`
        followed by `; name: a, b, c` (after a question, by ` name: …`)."""
        if code not in CODES:  # a programming error: keep the contract honest
            raise ValueError(f"unknown AQL code {code}")
        if exit_status is None:  # a refused or malformed statement is bad input (2); a statement
            # that could not finish (time, memory, an unreadable file) or broke an invariant is 1
            exit_status = 1 if code.startswith(("AQL06", "AQL0501", "AQL0502", "AQL0503", "AQL0504")) else 2
        self.brief = message
        self.listing = (listing[0], tuple(listing[1])) if listing else None
        if self.listing:
            message += ("" if message.endswith("?") else ";") + f" {self.listing[0]}: {', '.join(self.listing[1])}"
        super().__init__(code, message, exit_status=exit_status)
        self.source = source
        self.pos = pos
        self.end = end
        self.label = label
        self.origin = "query"  # where the statement came from: a command that built it names itself

    @property
    def category(self) -> str:
        return CODES[self.code][0]

    def located(self, source: str, pos: int | None = None, end: int | None = None,
                label: str | None = None) -> "AQLError":
        """Attach a position (if the error has none yet) and the statement text."""
        if self.source is None:
            self.source = source
        if self.pos is None and pos is not None:
            self.pos, self.end = pos, end
            if label is not None and self.label is None:
                self.label = label
        return self

    def line_col(self) -> tuple[int, int] | None:
        if self.source is None or self.pos is None:
            return None
        pos = max(0, min(self.pos, len(self.source)))
        line = self.source.count("\n", 0, pos) + 1
        col = pos - (self.source.rfind("\n", 0, pos) + 1) + 1
        return line, col

    def render(self) -> str:
        from ..render.results import safe_chars
        from ..render.termtable import cols
        head = f"error[{self.code}]: {printable(self.message)}"
        listed = self.listing is not None and cols(head) > WIDTH
        if listed:  # the alternatives go under the statement, so the header fits
            head = f"error[{self.code}]: {printable(self.brief)}"
        if cols(head) > WIDTH:  # a long message wraps, each line under the first's text
            from ..render.termtable import lines_of
            head = "\n".join(lines_of(head, WIDTH, indent=" " * len(f"error[{self.code}]: ")))
        lc = self.line_col()
        if lc is None:
            return "\n".join([head] + (self._listed(1) if listed else []))
        line, col = lc
        src_line = self.source.split("\n")[line - 1]
        # the rule of every line (a control character shows as `?`, one for one), a tab in the
        # statement's layout as the space it stands for
        shown = safe_chars(src_line.replace("\t", " "))
        width = len(str(line))
        pos = max(0, min(self.pos, len(self.source)))
        end = self.end if self.end is not None else pos + 1
        line_end = pos + (len(src_line) - (col - 1))
        n = max(1, min(end, line_end) - pos)
        start, stop = col - 1, col - 1 + n  # the marked characters of `shown`
        lead, tail = "", ""
        if len(shown) > SHOWN_CHARS:  # a long line: the part around the mark, cut at both ends
            a = max(0, min(start - SHOWN_CHARS // 3, len(shown) - SHOWN_CHARS))
            b = min(len(shown), max(a + SHOWN_CHARS, stop))
            lead, tail = ("…" if a else ""), ("…" if b < len(shown) else "")
            shown, start, stop = shown[a:b], start - a, min(stop, b) - a
        # the caret under the marked characters as a terminal lays them out (a wide character
        # takes two columns)
        caret = " " * (cols(lead) + cols(shown[:start])) + "^" * max(1, cols(shown[start:stop]))
        under = []  # a label too long for the caret's line goes under it, wrapped
        if self.label and cols(caret) + 1 + cols(printable(self.label)) <= WIDTH - (width + 4):
            caret += f" {printable(self.label)}"
        elif self.label:
            from ..render.termtable import lines_of
            room = WIDTH - (width + 4)
            at = len(caret) - len(caret.lstrip())  # under the caret when that leaves half the line
            indent = " " * (at if at <= room // 2 else 0)
            under = [f"{' ' * (width + 2)}| {indent}{x}" for x in lines_of(printable(self.label), room - len(indent))]
        shown = lead + shown + tail
        return "\n".join([
            head,
            f"{' ' * (width + 1)}--> {self.origin}:{line}:{col}",
            f"{' ' * (width + 2)}|",
            f" {line:>{width}} | {shown}",
            f"{' ' * (width + 2)}| {caret}",
        ] + under + (self._listed(width + 2) if listed else []))

    def _listed(self, indent: int) -> list[str]:
        """The alternatives as lines of at most WIDTH columns, `= name: a, b,` then the rest
        aligned under the first (under the name after a long one); an alternative is never split
        between lines."""
        from ..render.termtable import cols
        name, items = self.listing
        lead = f"{' ' * indent}= {printable(name)}: "
        hang = " " * (cols(lead) if cols(lead) <= WIDTH // 3 else indent + 2)
        lines, line = [], lead
        for i, item in enumerate(items):
            word = printable(item) + ("," if i < len(items) - 1 else "")
            if line == lead:
                line += word
            elif cols(line) + 1 + cols(word) > WIDTH:
                lines.append(line)
                line = hang + word
            else:
                line += " " + word
        return lines + [line]

    def to_json(self) -> dict:
        out = {"code": self.code, "category": self.category, "message": self.message}
        lc = self.line_col()
        if lc is not None:
            out["line"], out["column"] = lc
            out["offset"] = self.pos
            if self.label:
                out["expected"] = self.label
        if self.listing:
            out["choices"] = list(self.listing[1])
        return out

    def __str__(self) -> str:
        return self.render()
