"""A statement the grammar refuses → one coded, positional AQLError (RFC 0004 §7).

Invariants:
- The expected tokens come from the rules that failed at the furthest position the parser
  reached (collected while parsing), named by their labels (LABELS); a construct that failed as
  a whole (a subject, a timestamp) hides the alternatives inside it.
- Lexical slips the grammar cannot word well (an unterminated quote, a stray character) are
  caught first by `prescan`; a misspelt verb or target gets a did-you-mean.
- Nothing echoes the statement outside the source excerpt; a long list of alternatives (the
  SHOW targets) is the error's `listing`, so its header fits a terminal.
"""

from ..errors import did_you_mean
from . import peg_runtime as peg
from .errors import AQLError, article
from .sqltext import skip_space

_DESCENDANTS = None  # (grammar, its _descendants)


KEYWORD_LABELS = {"direction_name": "UP, DOWN or BOTH"}

LABELS = {
    "command": "a statement (SHOW, WHY, TRACE, STATE, DIFF, WHAT IS or EXPLAIN)",
    "subject": "a subject (project, session, work_unit, attempt, turn, span, event or agent)",
    "diff_subject": "a subject (project, session, work_unit or agent)",  # DIFF refuses the others (scope_of)
    "inference_ref": "an id (attempt, session, turn, tool call, work unit or event)",
    "id_value": "an id",
    "timestamp": "a timestamp ('2026-08-20T14:00:00Z', '2026-08-20', NOW or -2h)",
    "target": "a SHOW target",  # listed under the error (TARGET_WORDS)
    "state_name": "a state name (BLOCKED or FAILED)",
    "integer": "a whole number",
    "string": "a quoted string",
    "filter": "a filter (key = value)",
    "filter_key": "a filter key",
    "value": "a value",
    "agent_filter": "agent = '<name>'",
    "agent_name": "an agent name",
    "column_name": "a column name",
    "sql_expr": "an SQL expression",
    "sql_sum": "an SQL operand",
    "sql_product": "an SQL operand",
    "sql_unary": "an SQL operand",
    "sql_list": "an SQL expression",
    "compare_op": "an operator",
    "sum_op": "an operator",
    "product_op": "an operator",
    "equals": "'='",
    "comma": "','",
    "open_paren": "'('",
    "close_paren": "')'",
    "terminator": "';'",
    "end": "end of statement",
    "function_name": "a function name",
}

TARGET_WORDS = ("ATTEMPTS", "FAILED ATTEMPTS", "SUPERSEDED ATTEMPTS", "SESSIONS", "TURNS", "TOOL CALLS",
                "HANDOFFS", "EDGES", "SIGNALS", "COMMITS", "CORRECTIONS", "RETRACTIONS", "NOTES", "APPROVALS",
                "WORK UNITS", "DECISIONS", "CONFLICTS", "EVIDENCE FOR")
"""What an error expecting a SHOW target lists (spec/attemptql.md: every target)."""

CONTEXT = {
    "subject": "subject", "diff_subject": "subject", "target": "the SHOW target",
    "timestamp": "timestamp", "filter": "filter", "sql_expr": "WHERE expression",
    "integer": "number", "state_name": "state name", "id_value": "id", "inference_ref": "id",
    "column_name": "column name", "agent_filter": "agent filter", "value": "value",
    "direction_name": "direction",
}


def _descendants(g):
    """id(labelled rule) → ids of every named rule reachable inside it (worked out once per
    grammar `g`)."""
    global _DESCENDANTS
    if _DESCENDANTS is None or _DESCENDANTS[0] is not g:
        out = {}
        for name in set(LABELS) | set(CONTEXT) | set(KEYWORD_LABELS):
            if name not in g:
                continue
            seen = set()
            stack = list(peg.members(g[name]))
            while stack:
                e = stack.pop()
                if id(e) in seen:
                    continue
                seen.add(id(e))
                stack.extend(peg.members(e))
            out[id(g[name])] = seen
        _DESCENDANTS = (g, out)
    return _DESCENDANTS[1]


def _label(e) -> tuple[str, bool] | None:
    """(label, is_keyword) for a rule that may be named in an error, else None."""
    name = e.name
    if name in KEYWORD_LABELS:
        return KEYWORD_LABELS[name], True
    if name in LABELS:
        return LABELS[name], False
    if name and name.isupper():
        return name, True
    return None


def _token_end(text: str, pos: int) -> int:
    """End of the token starting at pos (for the caret length)."""
    n = len(text)
    if pos >= n:
        return pos + 1
    c = text[pos]
    if c == "'" or c == '"':
        j = pos + 1
        while j < n:
            if text[j] == c:
                if j + 1 < n and text[j + 1] == c:
                    j += 2
                    continue
                return j + 1
            j += 1
        return n
    if c.isalnum() or c in "_-":
        j = pos + 1
        while j < n and (text[j].isalnum() or text[j] in "_-:.+"):
            j += 1
        return j
    return pos + 1


def prescan(text: str) -> None:
    """Lexical checks the grammar cannot word well: unterminated quotes, stray characters."""
    n = len(text)
    i = 0
    allowed = set("_-'\"(),;=<>!|+*/%.:")
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl + 1
        elif c in "'\"":
            j = i + 1
            while True:
                k = text.find(c, j)
                if k < 0:
                    kind = "string" if c == "'" else "quoted name"
                    raise AQLError("AQL0101", f"unterminated {kind}: the quote opened here is never closed",
                                   source=text, pos=i, end=i + 1, label=f"{kind} starts here")
                if k + 1 < n and text[k + 1] == c:
                    j = k + 2
                    continue
                i = k + 1
                break
        elif c.isascii() and (c.isalnum() or c in allowed):
            i += 1
        else:
            raise AQLError("AQL0106", "unexpected character: no AttemptQL token starts with it "
                           "(quote text as 'a string')", source=text, pos=i, end=i + 1,
                           label="not part of any token")


_VERBS = ("SHOW", "WHY", "TRACE", "STATE", "DIFF", "WHAT", "EXPLAIN")
_SUBQUERY_WORDS = {"SELECT", "WITH", "VALUES", "INSERT", "UPDATE", "DELETE", "DROP", "CREATE",
                   "ATTACH", "DETACH", "PRAGMA", "ALTER", "REPLACE", "UNION", "EXISTS", "CASE"}


def _near(word: str) -> str | None:
    w = word.upper()
    for v in _VERBS:
        if abs(len(v) - len(w)) <= 2 and _distance(v, w) <= 2:
            return v
    return None


def _distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _join(labels: list[str]) -> str:
    if len(labels) > 10:
        labels = labels[:9] + [f"{len(labels) - 9} more"]
    if len(labels) == 1:
        return labels[0]
    return ", ".join(labels[:-1]) + " or " + labels[-1]


NOT_EVIDENCE_SUBJECTS = ("project", "agent", "provider")
"""Words SHOW EVIDENCE FOR reads as an id but a user means as a subject it does not take."""


def evidence_subject_error(text: str, pos: int, end: int) -> AQLError:
    """SHOW EVIDENCE FOR a project or an agent: no single inference to show the evidence of."""
    word = text[pos:end].strip("'\"").lower()
    return AQLError("AQL0409", f"SHOW EVIDENCE FOR takes the id of an attempt, session, turn, tool call, work unit "
                    f"or event, not {article(word)}: SHOW ATTEMPTS FOR {word} = '<name>' lists its attempts",
                    source=text, pos=pos, end=end, label="not an id")


def _evidence_of_subject(text: str, memo: peg.Memo, g, pos: int) -> AQLError | None:
    """The evidence_subject_error when SHOW EVIDENCE FOR read `project`/`agent`/`provider` as
    its id and failed just after it (`SHOW EVIDENCE FOR project 'x'`)."""
    for start, node in memo.at(g["inference_ref"]):
        if node.end <= pos and skip_space(text, node.end) >= pos \
                and text[start:node.end].strip("'\"").lower() in NOT_EVIDENCE_SUBJECTS:
            return evidence_subject_error(text, start, node.end)
    return None


def syntax_error(text: str, err, memo: peg.Memo, g) -> AQLError:
    """The coded error of a statement grammar `g` did not match (`err`, `memo`: peg.match's)."""
    pos = max(err.pos, 0)
    desc = _descendants(g)
    found = err.found
    # a construct that failed as a whole hides the alternatives inside it
    kept = [e for e in found if not any(id(e) in desc.get(id(o), ()) for o in found if o is not e)]
    labels, all_keywords = [], True
    listing = ("targets", TARGET_WORDS) if any(e.name == "target" for e in kept) else None
    for e in kept:
        lk = _label(e)
        if lk is None:
            continue
        if lk[0] not in labels:
            labels.append(lk[0])
        all_keywords = all_keywords and lk[1]
    tok_end = _token_end(text, pos)
    at_end = pos >= len(text)
    token = text[pos:tok_end]

    # where did the last good construct end?
    prev_end = pos
    for start, node in memo.at(g["_"]):
        if node.end == pos and start < prev_end:
            prev_end = start
    context = None
    best = None
    if prev_end > 0:
        for start, node in memo.matches():
            if node.end != prev_end or start >= prev_end:
                continue
            e = node.expr
            name = e.name
            if not name or not (name in CONTEXT or name.isupper()):
                continue
            if best is None or start < best[0] or (
                    start == best[0] and id(best[1]) in desc.get(id(e), ())):
                best = (start, e)
        if best is not None:
            name = best[1].name
            context = CONTEXT.get(name) or name

    # special cases first
    stripped = skip_space(text, 0)
    if stripped >= len(text):
        return AQLError("AQL0203", "empty statement; expected SHOW, WHY, TRACE, STATE, DIFF, WHAT IS or EXPLAIN",
                        source=text, pos=0, end=1, label="expected a statement")
    if any(e.name == "command" for e in found) and g["command"] is not None:
        guess = _near(token) if token[:1].isalpha() else None
        hint = f"; did you mean {guess}?" if guess else ""
        return AQLError("AQL0206", f"unknown statement: expected SHOW, WHY, TRACE, STATE, DIFF, WHAT IS or EXPLAIN{hint}",
                        source=text, pos=pos, end=tok_end, label="expected a statement verb")
    in_where = bool(memo.at(g["WHERE"]))
    if in_where and (token.upper() in _SUBQUERY_WORDS or (token == ";" and skip_space(text, pos + 1) < len(text))):
        return AQLError("AQL0207", "WHERE takes exactly one SQL expression over the target's columns; "
                        "subqueries and further statements are refused", source=text, pos=pos,
                        end=tok_end, label="not part of one expression")
    if any(e.name == "end" for e in found) and text[:pos].rstrip().endswith(";"):
        return AQLError("AQL0204", "one statement per call: text follows the ';' that ended the statement",
                        source=text, pos=pos, end=tok_end, label="a second statement starts here")
    wrong_subject = (_evidence_of_subject(text, memo, g, pos) or _hyphenated_agent(text, memo, g, pos)
                     or _bare_diff_id(text, kept, pos, tok_end))
    if wrong_subject is not None:
        return wrong_subject
    if not labels:
        labels = ["a valid continuation of the statement"]
        all_keywords = False
    after = f" after {context}" if context else ""
    what = _join(labels)
    caret = "expected " + _join([f"'{x}'" if x.isupper() else x for x in labels]) if all_keywords else \
        "expected " + (labels[0] if len(labels) == 1 else "one of these")
    if all_keywords:
        return AQLError("AQL0102", f"expected {what}{after}", source=text, pos=pos, end=tok_end, label=caret)
    if at_end:
        return AQLError("AQL0202", f"unexpected end of statement; expected {what}{after}",
                        source=text, pos=pos, end=pos + 1, label=caret, listing=listing)
    near = did_you_mean(token.upper(), listing[1]) if listing and token[:1].isalpha() else ""
    return AQLError("AQL0201", "unexpected token" + (near or f"; expected {what}{after}"), source=text, pos=pos,
                    end=tok_end, label=caret, listing=listing)


def _hyphenated_agent(text, memo, g, pos):
    """AQL0201 with the quoted form when a bare agent name has a hyphen (`agent claude-code`:
    a bare name is one word; `agent 'claude-code'` is the hook id), else None."""
    if not text.startswith("-", pos) or "agent_name" not in g:
        return None
    start = next((s for s, node in memo.at(g["agent_name"]) if node.end == pos and s < pos), None)
    if start is None or text[start] == "'":
        return None
    end = pos
    while end < len(text) and (text[end].isalnum() or text[end] in "_-"):
        end += 1
    name = text[start:end]
    return AQLError("AQL0201", f"a name with a hyphen is quoted: agent '{name}'", source=text, pos=start, end=end,
                    label=f"write '{name}'")


_DIFF_KINDS = {"ses_": "session", "wu_": "work_unit"}


def _bare_diff_id(text, found, pos, tok_end):
    """AQL0201 naming the form DIFF STATE takes when its subject is a bare id (`DIFF STATE
    ses_… -2h now`: DIFF names the kind, `session ses_…`), else None."""
    token = text[pos:tok_end].strip("'")
    if not any(e.name == "diff_subject" for e in found) or "_" not in token:
        return None
    kind = _DIFF_KINDS.get(token[:token.index("_") + 1].lower())
    if kind is None:
        return AQLError("AQL0201", "DIFF STATE takes a project, a session, a work unit or an agent", source=text,
                        pos=pos, end=tok_end, label="not a DIFF STATE subject")
    return AQLError("AQL0201", f"DIFF STATE names the kind of its subject: {kind} {text[pos:tok_end]}",
                    source=text, pos=pos, end=tok_end, label=f"write {kind} {text[pos:tok_end]}")
