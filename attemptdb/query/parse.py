"""AttemptQL text → parse tree (parsimonious, grammar/attemptql.peg) → AST (a NodeVisitor).

Invariants:
- `parse(text)` returns an `ast.Statement` or raises an `AQLError` with a code, a position and
  the expected tokens; nothing else escapes (no parsimonious exception, no traceback).
- The expected tokens come from the rules that failed at the furthest position the parser
  reached (`syntax_errors`: how a refused statement is worded).
- The grammar is built once per grammar text and cached (pickled) in the per-user cache
  directory, because building it costs ~35 ms and a statement's whole budget is ~2× the
  start-up of `attempt --version`. The cache is used only when it is the user's own private
  file and was written for the same grammar text, parsimonious (`peg_runtime.fingerprint()`:
  the installed distribution's version, location and regex engine), pickle protocol and Python.
- Nothing here reaches into parsimonious's internals: that is `peg_runtime`'s job (the parse
  loop, the packrat memo, the cached grammar's pattern classes, the start-up shortcut).
"""

import os
import stat
import sys

from .. import resources
from . import nodes as ast
from . import peg_runtime as peg
from .errors import AQLError
from .peg_runtime import NodeVisitor, Rules
from .sqltext import skip_space, skip_ws
from .syntax_errors import NOT_EVIDENCE_SUBJECTS, evidence_subject_error, prescan, syntax_error

try:
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover
    from hashlib import sha256 as _sha256
try:  # the C unpickler alone: importing pickle (needed only to write the cache) costs ~1.5 ms
    from _pickle import load as _unpickle
except ImportError:  # pragma: no cover
    from pickle import load as _unpickle
PICKLE_PROTOCOL = 5  # pickle.HIGHEST_PROTOCOL since Python 3.8; part of the cache key

MAX_STATEMENT_CHARS = 64 * 1024
MAX_INTEGER = 10 ** 9

_GRAMMAR = None


# --- grammar loading ----------------------------------------------------------------------


def _cache_dir() -> str:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "attemptdb")


def _private(path: str, want_dir: bool) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if want_dir != stat.S_ISDIR(st.st_mode) or (not want_dir and not stat.S_ISREG(st.st_mode)):
        return False
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return False
    return not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def grammar_text() -> str:
    with open(resources.path("grammar", "attemptql.peg"), encoding="utf-8") as f:
        return f.read()


def grammar() -> Rules:
    """The compiled AttemptQL grammar (rule name → Expression), built or loaded once."""
    global _GRAMMAR
    if _GRAMMAR is None:
        _GRAMMAR = _load_grammar()
    return _GRAMMAR


def _cache_key(text: str) -> str:
    return _sha256(f"{peg.fingerprint()}|{PICKLE_PROTOCOL}|{sys.version_info[:2]}|{text}"
                   .encode()).hexdigest()[:24]


def _load_grammar() -> Rules:
    text = grammar_text()
    d = _cache_dir()
    path = os.path.join(d, f"attemptql-{_cache_key(text)}.pickle")
    use_cache = os.environ.get("ATTEMPTDB_GRAMMAR_CACHE", "1") != "0"
    if use_cache and _private(d, True) and _private(path, False):
        try:
            with open(path, "rb") as f:
                g = _unpickle(f)
            if isinstance(g, Rules) and "statement" in g:
                return g
        except Exception:  # a damaged cache is rebuilt, never trusted
            pass
    g = peg.build(text)
    if use_cache:
        peg.make_lazy(g)
        _store_grammar(g, d, path)
    return g


def _store_grammar(g, d: str, path: str) -> None:
    import pickle
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        if not _private(d, True):
            return
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(g, f, protocol=PICKLE_PROTOCOL)
        os.replace(tmp, path)
        keep = os.path.basename(path)
        for name in os.listdir(d):  # grammars of other versions are dead weight
            if name.startswith("attemptql-") and name.endswith(".pickle") and name != keep:
                try:
                    os.unlink(os.path.join(d, name))
                except OSError:
                    pass
    except OSError:
        pass


# --- parse tree → AST --------------------------------------------------------------------

def _present(node) -> bool:
    """An optional (?) or repeated (*) node matched something."""
    return bool(node.children)


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'")


_ENTITY_KINDS = {"SESSION": "session", "ATTEMPT": "attempt", "TURN": "turn", "SPAN": "span",
                 "TOOL_CALL": "span", "EVENT": "event", "work_unit_kind": "work_unit"}  # by grammar rule

_TARGETS = {
    "failed_attempts": "failed_attempts", "superseded_attempts": "superseded_attempts",
    "attempts_target": "attempts", "handoffs_target": "handoffs", "work_units_target": "work_units",
    "decisions_target": "decisions", "conflicts_target": "conflicts", "evidence_target": "evidence",
    "sessions_target": "sessions",
    "turns_target": "turns", "tool_calls_target": "tool_calls", "edges_target": "edges",
    "signals_target": "signals", "corrections_target": "corrections",
    "retractions_target": "retractions", "commits_target": "commits", "notes_target": "notes",
    "approvals_target": "approvals",
}


ONE_VALUE_FILTERS = ("project", "outcome", "phase")
"""FOR keys of which every SHOW target's row holds one value (path, session, provider… may match
several members of one row: `path = 'a' AND path = 'b'` is an AND that can hold; SHOW SIGNALS takes
status = 'pending' AND status = 'blocking')."""


class ASTBuilder(NodeVisitor):
    """Parse tree → `ast` nodes. Every method receives the already-visited children."""

    unwrapped_exceptions = (AQLError,)

    def __init__(self, text: str):
        self.text = text

    def generic_visit(self, node, visited_children):
        name = node.expr_name
        if name and name.isupper():
            return name
        return visited_children or node

    # statements
    def visit_statement(self, node, ch):
        explain = _present(node.children[1])
        return ast.Statement(node.start, node.end, command=ch[2], explain=explain, source=self.text)

    def visit_command(self, node, ch):
        return ch[0]

    def visit_what_is(self, node, ch):
        return ast.WhatIs(node.start, node.end, subject=ch[4])

    def visit_why(self, node, ch):
        st = node.children[5]
        return ast.Why(node.start, node.end, subject=ch[2], state=st.text.upper(),
                       state_pos=st.start, state_end=st.end)

    def visit_trace(self, node, ch):
        depth = direction = None
        depth_pos = 0
        seen = set()
        for opt_node, opt in zip(node.children[5].children, ch[5] if _present(node.children[5]) else []):
            kind = opt[0]
            if kind in seen:
                raise AQLError("AQL0205", f"{kind.upper()} is given twice", source=self.text,
                               pos=opt_node.start + (len(opt_node.text) - len(opt_node.text.lstrip())),
                               end=opt_node.end, label="second time")
            seen.add(kind)
            if kind == "depth":
                depth, depth_pos = opt[1], opt[2]
            else:
                direction = opt[1]
        return ast.Trace(node.start, node.end, subject=ch[2], depth=depth, depth_pos=depth_pos,
                         direction=direction)

    def visit_trace_option(self, node, ch):
        return ch[1][0]

    def visit_depth(self, node, ch):
        return ("depth", ch[2], node.children[2].start)

    def visit_direction(self, node, ch):
        return ("direction", node.children[2].text.upper())

    def visit_state(self, node, ch):
        known = ch[7][0] if _present(node.children[7]) else None
        return ast.State(node.start, node.end, subject=ch[2], at=ch[6], known_at=known)

    def visit_known_at(self, node, ch):
        return ch[7]

    def visit_diff(self, node, ch):
        subject = ch[4][0] if _present(node.children[4]) else None
        return ast.Diff(node.start, node.end, subject=subject, t1=ch[5], t2=ch[7])

    def visit_diff_scope(self, node, ch):
        return ch[0]

    def visit_diff_subject(self, node, ch):
        return ch[0]

    def visit_diff_project(self, node, ch):
        alt = node.children[0]
        if alt.expr_name == "PROJECT":
            return ast.Subject(node.start, node.end, kind="project", value=None)
        return ast.Subject(node.start, alt.children[2].end, kind="project",
                           value=_unquote(alt.children[2].text))

    # SHOW
    def visit_show(self, node, ch):
        target, target_pos, ref, between = ch[2]
        kw = {"filters": [], "where": None, "since": None, "until": None, "order": None,
              "limit": None, "limit_pos": 0, "including_retracted": False}
        seen = {}
        seen_keys = set()  # FOR keys given so far
        bounds = {}  # since/until → how it was first given: `FOR since = …` and SINCE set the same bound
        clauses = ch[3] if _present(node.children[3]) else []
        for clause in clauses:
            kind, value, pos, end = clause
            if kind != "for" and kind in seen:
                raise AQLError("AQL0205", f"{kind.upper()} is given twice in one SHOW", source=self.text,
                               pos=pos, end=end, label="second time")
            seen[kind] = True
            given = [(f.key, f"FOR {f.key}", f.pos, f.end) for f in value if f.key in ("since", "until")] \
                if kind == "for" else [(kind, kind.upper(), pos, end)] if kind in ("since", "until") else []
            for bound, how, b_pos, b_end in given:
                if bound in bounds:
                    raise AQLError("AQL0205", f"{bound.upper()} is given twice: as {bounds[bound]} and as {how}",
                                   source=self.text, pos=b_pos, end=b_end, label="second time")
                bounds[bound] = how
            if kind == "for":
                for f in value:
                    if f.key in ONE_VALUE_FILTERS and f.key in seen_keys:
                        raise AQLError("AQL0205", f"FOR {f.key} is given twice; a row has one {f.key} "
                                       "(one statement for each)", source=self.text,
                                       pos=f.pos, end=f.end, label="second time")
                    seen_keys.add(f.key)
                kw["filters"].extend(value)
            elif kind == "where":
                kw["where"] = value
            elif kind == "since":
                kw["since"] = value
            elif kind == "until":
                kw["until"] = value
            elif kind == "order":
                kw["order"] = value
            elif kind == "limit":
                kw["limit"], kw["limit_pos"] = value, pos
            elif kind == "including":
                kw["including_retracted"] = True
        kw["filters"] = tuple(kw["filters"])
        return ast.Show(node.start, node.end, target=target, target_pos=target_pos, ref=ref,
                        between=between, **kw)

    def visit_show_clause(self, node, ch):
        inner = node.children[1].children[0]
        value = ch[1][0]
        return (inner.expr_name.replace("_clause", ""), value, inner.start, inner.end)

    def visit_target(self, node, ch):
        inner = node.children[0]
        name = _TARGETS.get(inner.expr_name) or _TARGETS[inner.expr_name.lower() + "_target"]
        ref = between = None
        if name == "evidence":
            ref = ch[0]
        elif name == "handoffs":
            between = ch[0]
        return (name, inner.start, ref, between)

    def visit_evidence_target(self, node, ch):
        return ch[4]

    def visit_handoffs_target(self, node, ch):
        return ch[1][0] if _present(node.children[1]) else None

    def visit_between(self, node, ch):
        return (ch[3], ch[7])

    def visit_agent_filter(self, node, ch):
        return ast.AgentFilter(node.start, node.end, key=node.children[0].text.upper(), value=ch[4])

    def visit_inference_ref(self, node, ch):
        r = ch[0]
        if isinstance(r, ast.Subject):
            return r
        if node.text.strip("'\"").lower() in NOT_EVIDENCE_SUBJECTS:
            raise evidence_subject_error(self.text, node.start, node.end)
        return ast.Subject(node.start, node.end, kind="ref", value=r)

    def visit_for_clause(self, node, ch):
        filters = [ch[2]]
        if _present(node.children[3]):
            filters.extend(ch[3])
        return filters

    def visit_filter_more(self, node, ch):
        return ch[3]

    def visit_filter(self, node, ch):
        key = node.children[0]
        return ast.Filter(node.start, node.end, key=key.text.lower(), value=ch[4], key_pos=key.start)

    def visit_where_clause(self, node, ch):
        return ch[2]

    def visit_since_clause(self, node, ch):
        return ch[2]

    def visit_until_clause(self, node, ch):
        return ch[2]

    def visit_order_clause(self, node, ch):
        col = node.children[4]
        direction = "ASC"
        if _present(node.children[5]):
            direction = node.children[5].text.strip().upper()
        return (col.text.lower(), direction, col.start, col.end)

    def visit_limit_clause(self, node, ch):
        return ch[2]

    def visit_including_clause(self, node, ch):
        return True

    # subjects and values
    def visit_subject(self, node, ch):
        r = ch[0]
        if isinstance(r, ast.Subject):
            return r
        return ast.Subject(node.start, node.end, kind="ref", value=r)

    def visit_project_subject(self, node, ch):
        name = ch[1][0] if _present(node.children[1]) else None
        return ast.Subject(node.start, node.end, kind="project", value=name)

    def visit_project_name(self, node, ch):
        return ch[1]

    def visit_entity_subject(self, node, ch):
        # the rule that matched, not its text: `WORK -- a comment⏎UNIT` is a work unit too
        kind_rule = node.children[0].children[0].expr_name
        return ast.Subject(node.start, node.end, kind=_ENTITY_KINDS[kind_rule], value=ch[2])

    def visit_agent_subject(self, node, ch):
        return ast.Subject(node.start, node.end, kind="agent", value=ch[2])

    def visit_agent_name(self, node, ch):
        inner = node.children[0]
        return _unquote(inner.text) if inner.expr_name == "string" else inner.text

    def visit_id_value(self, node, ch):
        inner = node.children[0]
        return _unquote(inner.text) if inner.expr_name == "string" else inner.text

    def visit_string(self, node, ch):
        return _unquote(node.text)

    def visit_timestamp(self, node, ch):
        inner = node.children[0]
        kind = {"string": "string", "relative": "relative", "datetime": "datetime", "time_word": "word"}[inner.expr_name]
        text = _unquote(inner.text) if kind == "string" else inner.text
        if kind == "word":
            text = text.upper()
        return ast.Time(node.start, node.end, kind=kind, text=text)

    def visit_value(self, node, ch):
        inner = node.children[0]
        kind = inner.expr_name
        text = _unquote(inner.text) if kind == "string" else inner.text
        return ast.Value(node.start, node.end, kind=kind, text=text)

    def visit_integer(self, node, ch):
        digits = node.text.lstrip("0") or "0"
        if len(digits) > 10 or int(digits) > MAX_INTEGER:
            raise AQLError("AQL0107", f"number too large (at most {MAX_INTEGER})", source=self.text,
                           pos=node.start, end=node.end, label="too large")
        return int(digits)

    # WHERE
    def _chain(self, node, ch, more_index=1):
        left = ch[0]
        if _present(node.children[more_index]):
            for op, right, end in ch[more_index]:
                left = ast.SqlBinary(node.start, end, op=op, left=left, right=right)
        return left

    def visit_sql_expr(self, node, ch):
        return self._chain(node, ch)

    def visit_sql_expr_more(self, node, ch):
        return ("OR", ch[3], node.end)

    def visit_sql_and(self, node, ch):
        return self._chain(node, ch)

    def visit_sql_and_more(self, node, ch):
        return ("AND", ch[3], node.end)

    def visit_sql_not(self, node, ch):
        return ch[0]

    def visit_sql_negation(self, node, ch):
        return ast.SqlUnary(node.start, node.end, op="NOT", operand=ch[2])

    def visit_sql_predicate(self, node, ch):
        left = ch[0]
        if not _present(node.children[1]):
            return left
        tail = ch[1][0]
        kind = tail[0]
        if kind == "cmp":
            return ast.SqlBinary(node.start, node.end, op=tail[1], left=left, right=tail[2])
        if kind == "is":
            return ast.SqlBinary(node.start, node.end, op=tail[1], left=left, right=tail[2])
        if kind == "in":
            return ast.SqlIn(node.start, node.end, operand=left, items=tail[2], negated=tail[1])
        if kind == "like":
            op = ("NOT " if tail[1] else "") + tail[2]
            return ast.SqlBinary(node.start, node.end, op=op, left=left, right=tail[3])
        return ast.SqlBetween(node.start, node.end, operand=left, low=tail[2], high=tail[3], negated=tail[1])

    def visit_sql_predicate_tail(self, node, ch):
        return ch[1][0]

    def visit_sql_compare(self, node, ch):
        op = node.children[0].text
        return ("cmp", "=" if op == "==" else ("!=" if op == "<>" else op), ch[2])

    def visit_sql_is(self, node, ch):
        return ("is", "IS NOT" if _present(node.children[1]) else "IS", ch[3])

    def visit_sql_in(self, node, ch):
        return ("in", _present(node.children[0]), tuple(ch[5]))

    def visit_sql_list(self, node, ch):
        items = [ch[0]]
        if _present(node.children[1]):
            items.extend(ch[1])
        return items

    def visit_sql_list_more(self, node, ch):
        return ch[3]

    def visit_sql_like(self, node, ch):
        return ("like", _present(node.children[0]), node.children[1].text.upper(), ch[3])

    def visit_sql_between(self, node, ch):
        return ("between", _present(node.children[0]), ch[3], ch[7])

    def visit_sql_sum(self, node, ch):
        return self._chain(node, ch)

    def visit_sql_sum_more(self, node, ch):
        return (node.children[1].text, ch[3], node.end)

    def visit_sql_product(self, node, ch):
        return self._chain(node, ch)

    def visit_sql_product_more(self, node, ch):
        return (node.children[1].text, ch[3], node.end)

    def visit_sql_unary(self, node, ch):
        return ch[0]

    def visit_sql_minus(self, node, ch):
        return ast.SqlUnary(node.start, node.end, op="-", operand=ch[2])

    def visit_sql_atom(self, node, ch):
        return ch[0]

    def visit_sql_group(self, node, ch):
        return ch[2]

    def visit_sql_call(self, node, ch):
        name = node.children[1].text.lower()
        args, star = (), False
        if _present(node.children[5]):
            a = ch[5][0]
            if a == "*":
                star = True
            else:
                args = tuple(a)
        return ast.SqlCall(node.start, node.end, name=name, args=args, star=star)

    def visit_sql_arguments(self, node, ch):
        return "*" if node.children[0].expr_name == "sql_star" else ch[0]

    def visit_sql_literal(self, node, ch):
        inner = node.children[0]
        kind = inner.expr_name
        if kind == "string":
            return ast.SqlLiteral(node.start, node.end, kind="string", value=_unquote(inner.text))
        if kind == "number":
            t = inner.text
            try:
                v = int(t) if t.isdigit() else float(t)
            except ValueError:
                v = float(t)
            if isinstance(v, int) and abs(v) >= 2 ** 63:
                raise AQLError("AQL0107", "number too large for SQLite (64-bit integers)", source=self.text,
                               pos=node.start, end=node.end, label="too large")
            return ast.SqlLiteral(node.start, node.end, kind="number", value=v)
        return ast.SqlLiteral(node.start, node.end, kind=kind.lower(), value=None)

    def visit_sql_column(self, node, ch):
        ref = node.children[1].children[0]
        name = ref.text[1:-1].replace('""', '"') if ref.expr_name == "quoted_name" else ref.text
        return ast.SqlColumn(node.start, node.end, name=name.lower())


def parse(text: str) -> ast.Statement:
    """Parse one AttemptQL statement. Raises AQLError (never anything else)."""
    if not isinstance(text, str):
        raise AQLError("AQL0203", "empty statement; expected SHOW, WHY, TRACE, STATE, DIFF, WHAT IS or EXPLAIN")
    if len(text) > MAX_STATEMENT_CHARS:
        raise AQLError("AQL0208", f"the statement is too large to run safely (more than "
                       f"{MAX_STATEMENT_CHARS} characters); split it or use SQL")
    if skip_space(text, 0) >= len(text):
        raise AQLError("AQL0203", "empty statement; expected SHOW, WHY, TRACE, STATE, DIFF, WHAT IS or EXPLAIN",
                       source=text, pos=0, end=1, label="expected a statement")
    lead = skip_ws(text)
    if lead > skip_space(text, 0):  # a /* … */ comment before the statement: skipped as SQL skips it
        blank = "".join(c if c == "\n" else " " for c in text[:lead]) + text[lead:]  # same positions
        try:
            stmt = _parse(blank)
        except AQLError as e:
            if e.source == blank:
                e.source = text
            raise
        stmt.source = text
        return stmt
    return _parse(text)


def _parse(text: str) -> ast.Statement:
    prescan(text)
    g = grammar()
    try:
        node, err, memo = peg.match(g["statement"], text)
    except RecursionError:
        raise AQLError("AQL0208", "the statement nests too deeply to run safely; simplify the WHERE expression",
                       source=text) from None
    if node is None or node.end != len(text):
        raise syntax_error(text, err, memo, g)
    try:
        return ASTBuilder(text).visit(node)
    except RecursionError:
        raise AQLError("AQL0208", "the statement nests too deeply to run safely; simplify the WHERE expression",
                       source=text) from None
