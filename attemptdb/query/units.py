"""Work units as AttemptQL reads them: the rules of sql/85_work_units.sql, run now or as of t.

The phase and status rules of a work unit are written once, as the views of
sql/85_work_units.sql (`unit_base` → `unit_verdicts` → `work_units`). This module
does not restate them: it reads that file, expands its predicates (attemptdb.store.schema.expand) and
turns each view into a common table expression, so AttemptQL runs the very text the sqlite3
shell runs. Three things change, and only in what the views read and how often:

* **which units** — `unit_index` is shadowed by the units a statement asks about (a project, a
  session, an id list, the newest N), and `unit_base` and `unit_verdicts` are MATERIALIZED: each
  listed unit's row is computed once, where the views, flattened into one query, would compute
  it again for every reference `work_units` makes to it;
* **as of when** — for `STATE … AT t` every stored input the views read is shadowed by a CTE of
  the same name and the columns the statement names, showing it as it stood at t (`@now()` is
  bound to `:t`), and `unit_state` is computed from them by its view, `unit_state_live`:
  `unit_turns` holds the members of the listed units started by t, read from the member index,
  each as stored but for those whose activity, calls in flight, pending wait, stop, attempts or
  failures read otherwise at t: those are found first (`_may_differ`), judged by one statement
  (`members_at`) and bound as JSON; `tool_call_facts` the calls observed by t, an end after t
  unseen; `attempt_facts` the attempts started by t with outcomes masked (not ended by t →
  in_progress; superseded by an attempt that had not started by t → failed; a correction
  written after t ignored); `turn_facts` and `session_facts` ends after t unseen, a session's
  last activity read from the log up to t. Membership is the stored one, restricted to members
  started by t (spec/projections.md §12);
* **in how many statements** — SQLite copies and resolves a view's whole text again for every
  place that names it (and the text of each view it reads), so a chain of views read in many
  places costs more to prepare than to run. `bind_views` computes a chain's early links in
  statements of their own and binds their rows as JSON; the statement after reads them from
  there. As of t, `unit_state` is one statement, `unit_base` and `unit_verdicts` a second, and
  `work_units` with STATE's own columns (only those it reads: `_only_read`) the last.

The only other difference is a plan hint: without a time, `attempt_facts` is shadowed by itself
with `+outcome`, so a unit's failed attempts are read through its turns, not by walking every
failed attempt of the file through the outcome index.

Invariants: the views' text is the only statement of the rules (tests/test_attemptql_units.py
checks the answers against the views themselves, tests/test_units.py the members judged at t
against judging every member); every shadow reads its real table by key or index range
(`main.<table>`), so a statement costs the units it lists, not the history; values are bound
parameters.
"""


from .. import resources
from ..model import fastjson
from ..store import schema
from .sqltext import select_columns, split_first_statement

VIEW_FILE = "85_work_units.sql"
VIEWS = ("unit_state_base", "unit_state_live", "unit_base", "unit_verdicts", "work_units")
STATE_VIEWS = {"unit_state_base": "unit_state_base", "unit_state_live": "unit_state"}
"""The views that compute what `unit_state` stores: read as stored now, computed as of t (the
second under the table's name)."""
WAIT_WINDOW_US = 12 * 3600 * 1_000_000
"""A unit open at t had member activity within this window before t (a pending wait keeps a
session open for 12 h; an unfinished turn ages into abandoned after 2 h)."""

_RETRACTED_ATTEMPT = ("NOT EXISTS (SELECT 1 FROM main.attempt_facts ra WHERE ra.group_key = c.attempt_key "
                      "AND ra.retraction > 0)")

_OUTCOME_AT = ("CASE WHEN a.corr_outcome IS NOT NULL AND a.retraction = 0 AND NOT a.session_retracted "
            "AND coalesce((SELECT k.corrected_at FROM main.correction_facts k WHERE k.event_id = a.corr_by), '~') <= :t "
            "THEN a.corr_outcome "
            "WHEN a.ended_at IS NULL OR a.ended_at > :t THEN 'in_progress' "
            "WHEN a.inferred_outcome = 'superseded' AND coalesce((SELECT j.started_at FROM main.attempt_facts j "
            "WHERE j.group_key = a.superseded_by_key), '~') > :t THEN 'failed' "
            "ELSE a.inferred_outcome END")
"""An attempt's outcome as of :t, over main.attempt_facts alias a: a correction written by t wins;
not ended by t → in_progress; superseded by an attempt not started by t → failed."""

def _started_by_t(a: str) -> str:
    """Member `a` started by :t. A member's order_key begins with its start, then '|': the first
    condition reads the members started by t as a range of the unit's member index."""
    return f"{a}.order_key < :t || '}}' AND {a}.started_at <= :t"


# column → expression as of :t, per shadowed table (alias in parentheses); every other column is
# read as stored
_AT = {
    "unit_turns": ("m", _started_by_t("m"), {
        "ended_at": "CASE WHEN m.ended_at <= :t THEN m.ended_at END",
        "active_until": (
            "CASE WHEN m.active_until <= :t THEN m.active_until ELSE max(m.started_at, "
            "CASE WHEN m.ended_at <= :t THEN m.ended_at ELSE '' END, coalesce(("
            "SELECT max(max(c.first_at, CASE WHEN c.finished_at <= :t THEN c.finished_at ELSE c.first_at END)) "
            "FROM main.tool_call_facts c WHERE c.turn_id = m.turn_id AND c.first_at <= :t AND "
            + _RETRACTED_ATTEMPT + "), '')) END"),
        "open_calls": (
            "CASE WHEN m.active_until <= :t THEN m.open_calls ELSE ("
            "SELECT count(*) FROM main.tool_call_facts c WHERE c.turn_id = m.turn_id AND c.started_at <= :t "
            "AND (c.end_event_id IS NULL OR c.finished_at > :t) AND " + _RETRACTED_ATTEMPT + ") END"),
        "stop_event_id": "CASE WHEN m.ended_at <= :t THEN m.stop_event_id END",
        # its attempts started by t, and those failed or superseded as of t
        # (a turn whose activity ended by t started and ended its attempts by t: as stored, unless
        # a correction was written after t)
        "attempt_ids": (
            "CASE WHEN m.active_until <= :t THEN m.attempt_ids ELSE "
            "(SELECT json_group_array(x.attempt_id) FROM (SELECT a.attempt_id FROM main.attempt_facts a "
            "WHERE a.turn_id = m.turn_id AND a.retraction = 0 AND a.started_at <= :t "
            "ORDER BY a.started_at, a.attempt_index) x) END"),
        "failed_attempts": (
            "CASE WHEN m.active_until <= :t AND coalesce((SELECT max(k.corrected_at) FROM main.correction_facts k), '') "
            "<= :t THEN m.failed_attempts ELSE "
            "(SELECT count(*) FROM main.attempt_facts a WHERE a.turn_id = m.turn_id AND a.retraction = 0 "
            "AND a.started_at <= :t AND (" + _OUTCOME_AT + ") IN ('failed', 'superseded')) END"),
        "waiting_since": (
            "(SELECT g.raised_at || '|' || g.event_id FROM main.signal_facts g WHERE g.session_id = m.session_id "
            "AND g.turn_id = m.turn_id AND g.blocking = 1 AND g.raised_at <= :t "
            "AND (g.cleared_at IS NULL OR g.cleared_at > :t) ORDER BY g.raised_at DESC, g.event_id DESC LIMIT 1)"),
    }),
    "tool_call_facts": ("c", "c.first_at <= :t", {
        "finished_at": "CASE WHEN c.finished_at <= :t THEN c.finished_at END",
        "end_event_id": "CASE WHEN c.finished_at <= :t THEN c.end_event_id END",
        "outcome_status": "CASE WHEN c.finished_at <= :t THEN c.outcome_status END",
        "outcome_class": "CASE WHEN c.finished_at <= :t THEN c.outcome_class END",
        "exit_code": "CASE WHEN c.finished_at <= :t THEN c.exit_code END",
        "duration_ms": "CASE WHEN c.finished_at <= :t THEN c.duration_ms END",
    }),
    "attempt_facts": ("a", "a.started_at <= :t", {
        "outcome": _OUTCOME_AT,
        "failure_class": (
            "CASE WHEN a.corr_outcome IS NOT NULL AND a.retraction = 0 AND NOT a.session_retracted "
            "AND coalesce((SELECT k.corrected_at FROM main.correction_facts k WHERE k.event_id = a.corr_by), '~') <= :t "
            "THEN a.failure_class WHEN a.ended_at IS NULL OR a.ended_at > :t THEN NULL "
            "ELSE a.inferred_failure_class END"),
        "failed": "CASE WHEN a.ended_at <= :t THEN a.failed ELSE 0 END",
        "ended_at": "CASE WHEN a.ended_at <= :t THEN a.ended_at END",
        "fail_event_id": "CASE WHEN a.boundary <= :t THEN a.fail_event_id END",
        "first_event_id": "CASE WHEN a.first_at <= :t THEN a.first_event_id END",
        "turn_status": "CASE WHEN a.turn_ended_at <= :t THEN a.turn_status ELSE 'in_progress' END",
        "turn_ended_at": "CASE WHEN a.turn_ended_at <= :t THEN a.turn_ended_at END",
        "turn_stop_id": "CASE WHEN a.turn_ended_at <= :t THEN a.turn_stop_id END",
    }),
    # a unit's edited paths: those first edited by t (the window's first key is its first
    # edit's time '|' event); the views read no other column of it
    "unit_path_windows": ("w", "substr(w.first_key, 1, 27) <= :t", {}),
    "turn_facts": ("t", None, {
        "ended_at": "CASE WHEN t.ended_at <= :t THEN t.ended_at END",
        "status": "CASE WHEN t.ended_at <= :t THEN t.status ELSE 'in_progress' END",
        "stop_event_id": "CASE WHEN t.ended_at <= :t THEN t.stop_event_id END",
    }),
    "session_facts": ("s", None, {
        "ended_at": "CASE WHEN s.ended_at <= :t THEN s.ended_at END",
        "end_event_id": "CASE WHEN s.ended_at <= :t THEN s.end_event_id END",
        "last_activity_at": (
            "CASE WHEN s.last_activity_at <= :t THEN s.last_activity_at ELSE ("
            "SELECT e.observed_at FROM main.events e WHERE e.session_id = s.raw_session_id AND e.observed_at <= :t "
            "AND e.project_id = s.project_id AND e.kind NOT IN ('session_ended', 'correction', 'retraction', "
            "'capture_test') ORDER BY e.observed_at DESC LIMIT 1) END"),
        "last_at": "CASE WHEN s.last_at <= :t THEN s.last_at END",
    }),
}

_TEXT: dict = {}
_NOT_NAME = bytes(c if chr(c).isalnum() or c == 95 else 32 for c in range(128)) + b" " * 128


def view_bodies(now_expr: str | None = None) -> list[tuple[str, str]]:
    """(name, SELECT text) of every view of sql/85_work_units.sql, in file order, with the
    shared predicates expanded; `now_expr` replaces `@now()` (None: the views' own clock)."""
    got = _TEXT.get(now_expr)
    if got is not None:
        return got
    with open(resources.path("sql", VIEW_FILE), encoding="utf-8") as f:
        text = f.read()
    preds = dict(schema.predicates())
    if now_expr is not None:
        preds["now"] = ("X", now_expr)
    text = schema.expand("\n".join(line for line in text.split("\n") if not line.startswith(schema.DEFINE)), preds)
    out = []
    rest = text
    while rest.strip():
        stmt, rest = split_first_statement(rest)
        body = _strip_comments(stmt).strip().rstrip(";").strip()
        if not body:
            continue
        words = body.split(None, 4)
        if words[:2] != ["CREATE", "VIEW"] or words[3].upper() != "AS":
            raise ValueError(f"{VIEW_FILE}: expected only CREATE VIEW name AS … statements")
        out.append((words[2], words[4]))
    _TEXT[now_expr] = out
    return out


def _strip_comments(stmt: str) -> str:
    return "\n".join(line for line in stmt.split("\n") if not line.lstrip().startswith("--"))


_COLUMNS: dict = {}


def _columns(conn, table: str) -> list[str]:
    key = (id(conn), table)
    if key not in _COLUMNS:
        _COLUMNS[key] = [r[1] for r in conn.execute(f"PRAGMA main.table_xinfo({table})")]
    return _COLUMNS[key]


def _shadow(conn, table: str, unit_in: str, used: frozenset, changed_in: str) -> str:
    """The CTE showing `table` as of :t, with the columns a statement names (`used`: a column no
    statement text names cannot be read, and SQLite copies a CTE's every column into each place
    that reads it before it drops the unused ones: the shadows are read some forty times)."""
    alias, where, over = _AT[table]
    every = _columns(conn, table)
    cols = [c for c in every if c in used]
    if table == "unit_turns":
        # the members of the listed units (`unit_in`, a list of bound ids) started by t, as
        # stored, but for the members whose values at t differ (`changed_in`, a list of bound
        # turn ids), read from a bound JSON object (:members_at, keyed by turn; see
        # members_at). Judged here (one subquery per column), this CTE the views read some
        # thirty times takes SQLite past its limit on nested subqueries; a subquery naming the
        # units would nest too deep again: hence the bound lists. Not materialised, each read is
        # an index search of the stored table (a materialised copy is searched through an
        # automatic index built again for every place that reads it).
        def col(c):
            if c not in over or changed_in == "()":
                return f"m.{c}"
            return (f"CASE WHEN m.turn_id IN {changed_in} THEN json_extract(:members_at, "
                    f"'$.\"' || m.turn_id || '\"[{every.index(c)}]') ELSE m.{c} END AS {c}")
        return (f"{table}(" + ", ".join(cols) + ") AS NOT MATERIALIZED ("
                f"SELECT {', '.join(col(c) for c in cols)} FROM main.unit_turns m "
                f"WHERE {where} AND m.work_unit_id IN {unit_in})")
    if table == "tool_call_facts":
        # every call of a member whose row is the same at t (its activity ended by t) was first
        # seen by t, and the views read calls only through the listed units' members: such a
        # call passes on its turn alone, read from the turn index, without a search of the
        # table for its first sighting (the recent calls of a unit's latest turns walk them)
        where = f"(c.turn_id NOT IN {changed_in} OR {where})"
    exprs = ", ".join(f"{over[c]} AS {c}" if c in over else f"{alias}.{c}" for c in cols)
    return (f"{table}(" + ", ".join(cols) + f") AS NOT MATERIALIZED (SELECT {exprs} "
            f"FROM main.{table} {alias}" + (f" WHERE {where}" if where else "") + ")")


_LATE_CORRECTION = "SELECT coalesce((SELECT max(k.corrected_at) FROM main.correction_facts k), '') > :t"


def _may_differ(unit_in: str, late_correction: bool = True) -> str:
    """The members of the units `unit_in` lists whose row can read otherwise at t: every value
    `_AT` judges is the stored one for a turn with no activity after t (its end, activity, calls
    in flight, stop and attempts), no wait pending now that was raised after t (a wait pending now
    and raised by t was pending at t, and no later one raised by t is pending now), none pending
    at t and cleared since, and no correction written after t (its failures: every member when
    `late_correction`, whether one was written after :t). Each arm reads an index."""
    return (f"SELECT m.turn_id FROM main.unit_turns m WHERE m.work_unit_id IN {unit_in} AND m.active_until > :t "
            "AND m.started_at <= :t "
            f"UNION SELECT m.turn_id FROM main.unit_turns m WHERE m.work_unit_id IN {unit_in} "
            "AND m.waiting_since > :t "
            "UNION SELECT g.turn_id FROM main.signal_facts g WHERE g.session_id IN "
            f"(SELECT x.session_id FROM main.unit_turns x WHERE x.work_unit_id IN {unit_in} AND {_started_by_t('x')}) "
            "AND g.raised_at <= :t AND g.cleared_at > :t AND g.turn_id IS NOT NULL"
            + (f" UNION SELECT m.turn_id FROM main.unit_turns m WHERE m.work_unit_id IN {unit_in}"
               if late_correction else ""))


def members_at(conn, unit_in: str, params: dict, candidates: str | None = None) -> str:
    """A JSON object: the members of the units `unit_in` lists (bound in `params`, with :t),
    started by :t, whose unit_turns row reads otherwise as of :t (activity, calls in flight, the
    wait, the stop, the attempts and failures judged at t), each turn id → the list of the row's
    columns at t. Only the members `_may_differ` finds are judged (`candidates`: another query
    of turn ids, for tests), one bound list: the judging statement searches them by key."""
    if candidates is None:
        late = conn.execute(_LATE_CORRECTION, params).fetchone()[0]
        candidates = _may_differ(unit_in, bool(late))
    found = [r[0] for r in conn.execute(candidates, params)]
    if not found:
        return "{}"
    p = dict(params)
    listed = _bind(p, "may", found)
    alias, where, over = _AT["unit_turns"]
    cols = _columns(conn, "unit_turns")
    exprs = ", ".join(f"{over.get(c, f'{alias}.{c}')} AS {c}" for c in cols)
    differs = " OR ".join(f"a.{c} IS NOT s.{c}" for c in over)
    sql = ("SELECT json_group_object(a.turn_id, json_array("
           + ", ".join(f"a.{c}" for c in cols) + f")) FROM (SELECT {exprs} FROM main.unit_turns {alias} "
           f"WHERE m.turn_id IN {listed} AND {where} AND m.work_unit_id IN {unit_in}) a "
           f"JOIN main.unit_turns s ON s.turn_id = a.turn_id WHERE {differs}")
    return conn.execute(sql, p).fetchone()[0]


def program(conn, units_sql: str, *, at: bool, materialize: bool = True, extra: tuple = (),
            clock: str | None = None, unit_in: str = "()", changed_in: str = "()", reads: str = "",
            given: tuple = ()) -> str:
    """The WITH clause that defines `unit_base`, `unit_verdicts` and `work_units`
    (columns as the views') for the units `units_sql` selects (a SELECT over `main.unit_index u`
    returning its rows, e.g. `SELECT u.* FROM main.unit_index u WHERE u.project_id = :p`). With
    `at`, every rule is judged as of the named parameter `:t` (shadowed inputs, `@now()` = :t;
    the members as of t bound as :members_at, and `unit_in` the listed units' ids as an SQL list
    of bound parameters, and `reads` the text of the statement's own SELECT, see state_sql);
    without, against the clock like the views. `materialize=False` leaves `unit_base` a plain
    CTE: cheaper when a statement reads only status (which does not read the recent calls).
    `extra`: further CTEs the statement's own SELECT reads, defined after these. `clock` (without
    `at`) binds `@now()` to that expression: the stored state judged at a given "now". `given`:
    views whose rows an earlier statement computed (bind_views), read from their parameters."""
    parts = [f"unit_index AS MATERIALIZED ({units_sql})"]
    views = []
    for name, body in view_bodies(":t" if at else clock):
        if name in STATE_VIEWS:
            if not at:
                continue  # read as stored (unit_state)
            # as of t: each listed unit's state computed once, under the stored table's name
            name = STATE_VIEWS[name]
            hint = "MATERIALIZED"
        else:
            hint = "MATERIALIZED" if name in ("unit_base", "unit_verdicts") and materialize else "NOT MATERIALIZED"
        if name in given:
            cols = [c for c, _ in _select(body)[0]]
            body = (f"SELECT {', '.join(f'j.value ->> {i} AS {c}' for i, c in enumerate(cols))} "
                    f"FROM json_each(:given_{name}) j")
            hint = "MATERIALIZED"
        elif name == "work_units" and at:
            body = _only_read(body, reads)
        views.append((name, hint, body))
    if at:
        # as of t, only the views the statement reads (named by its text, or by a view it
        # reads), and the shadows with the columns those name
        used = _words("\n".join(extra) + reads)
        kept = []
        for name, hint, body in reversed(views):
            if name in used:
                used = used | _words(body)
                kept.append((name, hint, body))
        views = kept[::-1]
        parts += [_shadow(conn, t, unit_in, used, changed_in) for t in ("unit_turns", "unit_path_windows", "tool_call_facts",
                                                                "attempt_facts", "turn_facts", "session_facts")]
    else:
        # a plan hint, not a rule: `+outcome` keeps SQLite from answering a unit's "attempts
        # that failed" by walking every failed attempt of the file through the outcome index
        cols = _columns(conn, "attempt_facts")
        parts.append("attempt_facts(" + ", ".join(cols) + ") AS NOT MATERIALIZED (SELECT "
                     + ", ".join("+a.outcome AS outcome" if c == "outcome" else f"a.{c}" for c in cols)
                     + " FROM main.attempt_facts a)")
    parts += [f"{name} AS {hint} (\n{body}\n)" for name, hint, body in views]
    parts += extra
    return "WITH " + ",\n".join(parts) + "\n"


def bind_views(conn, units_sql: str, params: dict, stages: tuple, **kw) -> tuple:
    """Compute the views of each stage (a tuple of names) for the units `units_sql` selects, one
    statement per stage, each reading the stages before it from their parameters; bind each view's
    rows as a JSON array of arrays, `:given_<name>` in `params`; returns the names given (for
    program(given=…)). SQLite copies and resolves a view's whole text again for every place
    that names it, and the text of every view it reads: a materialised view read in six places
    and reading two more costs its chain six times over to prepare, where a bound array costs
    its rows. (Values are texts and integers: JSON keeps them as they are.)"""
    given = ()
    bodies = dict((STATE_VIEWS.get(n, n) if kw.get("at") else n, b) for n, b in view_bodies(
        ":t" if kw.get("at") else kw.get("clock")))
    for stage in stages:
        outs = []
        for name in stage:
            cols = ", ".join(f"x.{c}" for c, _ in _select(bodies[name])[0])
            outs.append(f"(SELECT json_group_array(json_array({cols})) FROM {name} x)")
        own = "SELECT " + ", ".join(outs)
        sql = program(conn, units_sql, given=given, **dict(kw, reads=own)) + own
        params.update(zip((f"given_{n}" for n in stage), conn.execute(sql, params).fetchone()))
        given += stage
    return given


def _only_read(body: str, reads: str) -> str:
    """The view text `body` with only the result columns the statement `reads` names (SQLite
    resolves every column of a view it inlines, read or not: a column's subqueries cost their
    preparation even when the statement drops it)."""
    cols, rest = _select(body)
    named = _words(reads)
    return "SELECT " + ",\n  ".join(text for name, text in cols if name in named) + "\n" + rest


_MEMO: dict = {}


def _select(body: str):
    """select_columns of a view's text, cut once per process."""
    key = ("select", body)
    if key not in _MEMO:
        _MEMO[key] = select_columns(body)
    return _MEMO[key]


def _words(text: str) -> frozenset:
    """The names a text holds (what `[A-Za-z_][A-Za-z0-9_]*` finds: each run of ASCII letters,
    digits and `_`, less its leading digits), found once per process for each text (without
    `re`: a cold `attempt query` does not import it)."""
    key = ("words", text)
    if key not in _MEMO:
        runs = text.encode("ascii", "replace").translate(_NOT_NAME).split()
        _MEMO[key] = frozenset(r.lstrip(b"0123456789").decode() for r in runs) - {""}
    return _MEMO[key]


# --- the units a statement reads ------------------------------------------------------------

def candidates_sql(member_cond: str = "", *, window: bool = True, started: bool = True) -> str:
    """Units with a member started by :t (and, with `window`, a member active within 12 h
    before :t: named parameter :t_wait) whose members match `member_cond` (over unit_turns
    alias m). Without `started` a member stamped after :t counts too: a read judged now, as
    units_open_now judges (a provider clock ahead of the capture stamps a turn after now)."""
    conds = (["m.started_at <= :t"] if started else []) + (["m.active_until >= :t_wait"] if window else [])
    cond = " AND ".join(conds or ["1"]) + member_cond
    return (f"SELECT u.* FROM main.unit_index u WHERE u.work_unit_id IN "
            f"(SELECT m.work_unit_id FROM main.unit_turns m WHERE {cond})")


LAST_KEYS = """last_keys AS MATERIALIZED (
  SELECT b.work_unit_id, (
    -- a lower bound on its start: the latest earlier attempt in the three members most recently
    -- active by :t as stored (a member whose activity ended by t reads at t as stored; any
    -- earlier attempt bounds it, and only turns active since then can hold it)
    WITH lb AS MATERIALIZED (
      SELECT coalesce((
        SELECT max(a.started_at) FROM (SELECT r.turn_id, r.order_key FROM main.unit_turns r
                                       WHERE r.work_unit_id = b.work_unit_id AND r.active_until <= :t
                                       ORDER BY r.active_until DESC LIMIT 3) r
        CROSS JOIN attempt_facts a ON a.turn_id = r.turn_id
        WHERE a.retraction = 0 AND a.group_key <> b.last_attempt_key
          AND (a.started_at, r.order_key, a.attempt_index) <= (x.started_at, mx.order_key, x.attempt_index)), '') AS bound)
    -- the members started by t and active since the bound as stored (activity at t is never
    -- later), off the member index alone
    SELECT a.group_key FROM lb CROSS JOIN main.unit_turns m CROSS JOIN attempt_facts a ON a.turn_id = m.turn_id
    WHERE m.work_unit_id = b.work_unit_id AND """ + _started_by_t("m") + """
      AND m.active_until >= lb.bound AND a.retraction = 0 AND a.group_key <> b.last_attempt_key
      AND (a.started_at, m.order_key, a.attempt_index) <= (x.started_at, mx.order_key, x.attempt_index)
    ORDER BY a.started_at DESC, m.order_key DESC, a.attempt_index DESC LIMIT 1) AS previous_key
  FROM unit_base b CROSS JOIN attempt_facts x ON x.group_key = b.last_attempt_key
  CROSS JOIN unit_turns mx ON mx.turn_id = x.turn_id/*only*/)"""
"""Each unit's attempt before its last (in the order of the last: start, turn, index), found once
per unit, among the turns active since a bound read off its three members most recently active
by :t (the instant STATE judges)."""

STATE_SQL = """SELECT w.work_unit_id, w.project_id, w.project_name, w.objective_event_id, w.phase, w.phase_reason,
  w.status, w.status_reason, w.started_at, w.updated_at, w.sessions, w.session_count, w.attempt_count,
  w.failed_attempt_count, w.last_attempt, w.blocking_signal, w.actors, w.confidence,
  b.last_turn_id, b.last_attempt_key,
  (SELECT t.turn_index FROM main.turn_facts t WHERE t.turn_id = b.last_turn_id) AS turn_index,
  (SELECT t.session_id FROM main.turn_facts t WHERE t.turn_id = b.last_turn_id) AS last_session_id,
  (SELECT t.status FROM turn_facts t WHERE t.turn_id = b.last_turn_id) AS turn_status,
  (SELECT coalesce(t.prompt_event_id, t.first_event_id) FROM turn_facts t WHERE t.turn_id = b.last_turn_id)
    AS turn_event_id,
  (SELECT sum(m.open_calls) FROM unit_turns m WHERE m.work_unit_id = w.work_unit_id) AS in_flight,
  l.outcome AS last_outcome, l.failure_class AS last_failure_class,
  l.first_event_id AS last_first_event, l.fail_event_id AS last_fail_event,
  p.attempt_id AS previous_attempt, p.outcome AS previous_outcome, p.failure_class AS previous_failure_class,
  p.first_event_id AS previous_first_event, p.fail_event_id AS previous_fail_event,
  (SELECT g.raised_at FROM main.signal_facts g WHERE g.event_id = w.blocking_signal) AS signal_raised_at,
  (SELECT g.kind FROM main.signal_facts g WHERE g.event_id = w.blocking_signal) AS signal_kind
FROM work_units w JOIN unit_base b ON b.work_unit_id = w.work_unit_id
LEFT JOIN attempt_facts l ON l.group_key = b.last_attempt_key
LEFT JOIN last_keys k ON k.work_unit_id = w.work_unit_id
LEFT JOIN attempt_facts p ON p.group_key = k.previous_key/*only*/
ORDER BY w.updated_at DESC, w.work_unit_id"""
"""One row per unit of the program, as STATE shows it: the work_units columns, its last turn
(status as of the program's instant), calls in flight, and its last two attempts (outcomes as of
that instant) for the repeated-failure rule."""


def _bind(params: dict, prefix: str, values: list) -> str:
    """Bind `values` in `params` as :prefix_0, :prefix_1, …; the SQL list of them, `(…)`."""
    params.update((f"{prefix}_{i}", v) for i, v in enumerate(values))
    return "(" + ", ".join(f":{prefix}_{i}" for i in range(len(values))) + ")"


_OPEN = "IN (SELECT v.work_unit_id FROM unit_verdicts v WHERE substr(v.status_x, 1, 9) NOT IN ('completed', 'abandoned'))"
"""The units not closed (completed or abandoned) as of the program's instant, read off their
verdicts (computed before the columns STATE shows)."""


def state_select(open_only: bool) -> tuple[str, str]:
    """(LAST_KEYS, STATE_SQL), with `open_only` both restricted to the units not closed at the
    program's instant: a closed unit's row is never built (STATE … AT lists only the open ones);
    each row then tells how many units were judged in all (`judged_units`)."""
    if not open_only:
        return LAST_KEYS.replace("/*only*/", ""), STATE_SQL.replace("/*only*/", "")
    select = STATE_SQL.replace("/*only*/", f"\nWHERE w.work_unit_id {_OPEN}")
    select = select.replace("SELECT w.work_unit_id,", "SELECT (SELECT count(*) FROM unit_index) AS judged_units, w.work_unit_id,", 1)
    return LAST_KEYS.replace("/*only*/", f"\n  WHERE b.work_unit_id {_OPEN}"), select


def state_sql(conn, units_sql: str, params: dict, *, now: bool = False, open_only: bool = False) -> str:
    """The statement judging the units `units_sql` selects as of :t (named parameters :t and
    whatever units_sql names); reads their members as of t into `params` (:members_at). With
    `now` (t is the reading's own now), the stored state is what there is: the views' text with
    their clock at :t, nothing shadowed. With `open_only`, the rows of the units not closed at
    t only (state_select)."""
    last_keys, select = state_select(open_only)
    if now:
        return program(conn, units_sql, at=False, clock=":t", extra=(last_keys,)) + select
    ids = [r[0] for r in conn.execute(f"SELECT x.work_unit_id FROM ({units_sql}) x", params)]
    unit_in = _bind(params, "unit", ids)
    changed = members_at(conn, unit_in, params)
    params["members_at"] = changed
    changed_in = _bind(params, "changed", list(fastjson.loads(changed)))
    kw = dict(at=True, unit_in=unit_in, changed_in=changed_in, reads=select)
    given = bind_views(conn, units_sql, params, (("unit_state",), ("unit_base", "unit_verdicts")), **kw)
    return program(conn, units_sql, extra=(last_keys,), given=given, **kw) + select
