"""`attempt timeline`, `failures`, `correct`, `retract`, `reproject`: option parsing and rendering
over attemptdb.projections (the library does the work).

Invariant: output is data on stdout, messages on stderr; every string that came from an agent
(objectives, approaches, paths) is cleaned of control characters before it reaches a terminal;
`--json` prints the same data as one JSON document.
"""

import sys

import click

from ..errors import AttemptError
from ..model import fastjson
from .common import db_option, echo_json, err, json_option, printable, say, style
from .scope import scope_options, scope_where
from .stores import read_store, write_store

PROVIDERS = {"claude_code": "Claude Code", "codex": "Codex", "cursor": "Cursor", "gemini_cli": "Gemini CLI",
             "attemptdb": "AttemptDB"}
OUTCOME_MARKS = {"succeeded": ("✓", "green"), "failed": ("✗", "red"), "superseded": ("↻", "yellow"),
                 "abandoned": ("…", "bright_black"), "in_progress": ("▶", "cyan"), "unknown": ("?", None)}
TURN_STATUS = {"completed": "completed", "failed": "failed", "in_progress": "in progress",
               "unknown": "no stop seen"}
"""A turn still in progress in a session that is closed or went stale reads "no stop seen"."""


def _sessions_scope(conn, session, project, since, until):
    """(condition over the sessions view aliased s, params) for the scope flags: ids and
    projects resolved like every other read command; --since/--until select sessions active in
    the window."""
    cond, params = scope_where(conn, None, project, None, None, table="s")
    if session:
        cond, params = f"({cond}) AND s.session_id = ?", params + [_session_id(conn, session)]
    if since:
        c, p = scope_where(conn, None, None, since, None, table="s", time_col="last_event_at")
        cond, params = f"({cond}) AND ({c})", params + p
    if until:
        c, p = scope_where(conn, None, None, None, until, table="s", time_col="started_at")
        cond, params = f"({cond}) AND ({c})", params + p
    return cond, params


def _session_id(conn, text: str) -> str:
    """The full ses_ id a --session value names (resolved as AttemptQL resolves ids)."""
    from ..query import resolve
    from ..query.errors import AQLError
    try:
        found = resolve.resolve_id(conn, "session", text, live=False)
    except AQLError as e:
        raise AttemptError("scope.unresolved", e.message) from None
    return next(x for x in found if isinstance(x, str) and x.startswith("ses_"))


def _short(x, shorts=None):
    """The short form of an id for a terminal: from `shorts` (attemptdb.query.shortids: it resolves
    back to the same row), else the whole id."""
    if not x:
        return "-"
    return printable((shorts or {}).get(x, x))


def _printed_ids(data: dict) -> set:
    """The ids a timeline or failures listing prints (what `_short` is asked for)."""
    from ..query import shortids
    keys = ("session_id", "attempt_id", "superseded_by", "work_unit_id", "from_session", "to_session")
    found = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in keys and shortids.is_id(v):
                    found.add(v)
                elif isinstance(v, (list, dict)):
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(data)
    return found


# --- timeline -----------------------------------------------------------------------------

@click.command("timeline")
@scope_options
@click.option("--tools", is_flag=True, help="One line per tool call under each turn.")
@click.option("--all", "show_all", is_flag=True, help="Include sessions with no prompt and no tool call.")
@click.option("--units", "by_unit", is_flag=True,
              help="Group by work unit (a thread of work across sessions and agents) instead of by session.")
@click.option("--turns", "max_turns", type=click.IntRange(1, 1_000_000), default=20, show_default=True, metavar="N",
              help="At most the last N turns of each session (a line counts the rest).")
@db_option
@json_option
def timeline_cmd(session, project, since, until, limit, tools, show_all, by_unit, max_turns, db, as_json):
    """Sessions → turns → attempts: what each agent tried and how it ended.

    Newest sessions first (10 unless -n), each with its last 20 turns (--turns N). Each attempt
    shows its outcome, failure class, approach, paths touched, duration and confidence;
    attempts are inferences: `attempt why <att_id>` shows the evidence. With --units: work units
    newest first (10 unless -n), each with its phase and status and why, then its turns in
    order, whichever session and agent they came from. Lines fit the terminal (COLUMNS, else
    80 when not a terminal); ids are printed as short ids that `why` and `trace` accept.
    """
    print_timeline(db, session, project, since, until, limit, tools, show_all, by_unit, max_turns, as_json)


def print_timeline(db, session=None, project=None, since=None, until=None, limit=None, tools=False,
                   show_all=False, by_unit=False, max_turns=20, as_json=False) -> None:
    """What `attempt timeline` prints (also the end of `attempt demo`)."""
    from ..query import read, shortids
    st = read_store(db)
    try:
        cond, params = _sessions_scope(st.conn, session, project, since, until)
        if by_unit:
            data = read.timeline_units(st.conn, cond, params, limit=10 if limit is None else limit, tools=tools)
        else:
            data = read.timeline(st.conn, cond, params, limit=10 if limit is None else limit,
                                 show_all=show_all or bool(session), tools=tools, turns=max_turns)  # named: shown
        shorts = {} if as_json else shortids.shorten(st.conn, _printed_ids(data))
        runs = {} if as_json else _run_texts(st.conn, data)
        empty = None if as_json or data.get("sessions") or data.get("work_units") else \
            _why_empty(st.conn, session, bool(session or project or since or until), data.get("sessions_without_turns"))
    finally:
        st.close()
    if empty is not None:
        from ..render.termtable import terminal_width, wrap
        click.echo("\n".join(wrap(empty, terminal_width())))
        return
    if as_json:
        echo_json(data)
        return
    from ..render.termtable import terminal_width
    width = terminal_width()
    if by_unit:
        _render_units(data, tools, shorts, width, runs)
    else:
        _render_timeline(data, tools, shorts, width, runs)


def _why_empty(conn, session, scoped: bool, quiet: int | None = 0) -> str | None:
    """Why a timeline shows no session, when it is not that none was ever recorded: the session
    named was retracted, the scope's only sessions hold no prompt and no tool call (`quiet` of
    them: notes, approvals or snapshots only, which `--all` shows), the scope holds none, or every
    session was retracted. None: nothing recorded yet (the timeline's own hint)."""
    from ..render.termtable import plural
    if quiet:
        return (f"no session with a prompt or a tool call{' in this scope' if scoped else ''}: "
                f"{plural(quiet, 'session')} {'holds' if quiet == 1 else 'hold'} only notes, approvals or "
                "snapshots (`--all` shows them; `attempt query \"SHOW NOTES\"` lists the notes).")
    if session:
        sid = _session_id(conn, session)
        row = conn.execute("SELECT retracted FROM sessions WHERE session_id = ?", (sid,)).fetchone()
        if row and row[0]:
            return (f"session {printable(sid)} was retracted: it left every projection (its events stay in the log; "
                    "`attempt events --session …` lists them, and AttemptQL shows it with INCLUDING RETRACTED).")
    if scoped:
        return "no sessions in this scope."
    gone = conn.execute("SELECT count(*) FROM sessions WHERE retracted").fetchone()[0]
    if gone:
        which = "the only session was" if gone == 1 else f"all {plural(gone, 'session')} were"
        return (f"no sessions to show: {which} retracted (the events stay in the log; AttemptQL shows "
                "retracted rows with INCLUDING RETRACTED).")
    return None


RUN_PROVIDER = "attempt"
"""The provider of the sessions `attempt run` records (spec/evidence.md)."""


def _content(row, key: str) -> str | None:
    """A text the event's content kept (a run's title, its command line), or None: nothing
    under metadata_only, where no content is stored."""
    if not row or not row[0] or row[1] == "metadata_only":
        return None
    try:
        v = fastjson.loads(row[0]).get(key)
    except (ValueError, TypeError, AttributeError):
        return None
    return v if isinstance(v, str) and v.strip() else None


def _run_texts(conn, data: dict) -> dict:
    """{session_id: title, turn_id: command} of what `attempt run` recorded in the sessions and
    turns listed (their turns have no prompt: the command is what was tried)."""
    out = {}
    sessions = data.get("sessions") or []
    for s in sessions:
        if s.get("provider") == RUN_PROVIDER and s.get("start_event_id"):
            title = _content(conn.execute("SELECT content_json, capture_mode FROM events WHERE event_id = ?",
                                          (s["start_event_id"],)).fetchone(), "title")
            if title:
                out[s["session_id"]] = title
    turns = [t for s in sessions for t in s.get("turns", [])]
    turns += [t for u in data.get("work_units") or [] for t in u.get("turns", [])]
    for t in turns:
        if t.get("provider") != RUN_PROVIDER or t.get("objective") or t.get("prompt_event_id"):
            continue
        calls = fastjson.loads(t.get("tool_call_ids") or "[]")
        if calls:
            command = _content(conn.execute(
                "SELECT e.content_json, e.capture_mode FROM tool_calls c JOIN events e ON e.event_id = c.start_event_id "
                "WHERE c.tool_call_id = ?", (calls[0],)).fetchone(), "command")
            if command:
                out[t["turn_id"]] = command
    return out


def _render_units(data: dict, tools: bool, shorts: dict, width: int, runs: dict):
    from ..query.read import clean, local_time
    from ..render.termtable import join_fit, plural, segments_fit, wrap
    c = data["counts"]
    if not data["work_units"]:
        click.echo("\n".join(wrap(f"no work units among the sessions in scope ({plural(data['events'], 'event')}); "
                                   "`attempt timeline` lists sessions", width)))
        return
    out = join_fit([f"{plural(c['work_units'], 'work unit')}, {plural(c['turns'], 'turn')}, "
                    f"{plural(c['attempts'], 'attempt')} from {plural(data['events'], 'event')}",
                    f"[inference {data['algorithm_version']}; units are heuristics, capped at 0.7]"],
                   width, sep="  ", indent="")
    for u in data["work_units"]:
        end = "open" if u["status"] == "open" else local_time(u["updated_at"], "%H:%M")
        agents = ", ".join(PROVIDERS.get(a, clean(a, 20)) for a in u["actors"])
        out.append("")
        head = f"◆ {u['phase']} · {u['status']}  "
        tail = f"  {local_time(u['started_at'])} → {end}  {_short(u['work_unit_id'], shorts)}"
        for h, t, tl in segments_fit(head, clean(u["project_name"]), tail, width, indent="  "):
            out.append(h + t + tl)
        out += join_fit([agents, plural(u["session_count"], "session"), plural(u["turn_count"], "turn"),
                         plural(u["attempt_count"], "attempt"), f"{u['failed_attempt_count']} failed",
                         f"conf {u['confidence']:.1f}"], width, first="  ", indent="  ")
        if u["objective"]:
            out.append(clip_line(f"  objective: {clean(u['objective'])}", width))
        out.append(clip_line(f"  phase: {clean(u['phase_reason'])}", width))
        out.append(clip_line(f"  status: {clean(u['status_reason'])}", width))
        for t in u["turns"]:
            who = f"{PROVIDERS.get(t['provider'], clean(t['provider'], 20))} {_short(t['session_id'], shorts)} "
            out.append(_turn_line(t, width, who, t.get("session_state"), runs.get(t["turn_id"])))
            out += _attempt_lines(t, tools, shorts, width)
    if data["more_units"]:
        out.append("")
        out += wrap(f"({plural(data['more_units'], 'more work unit')}; use --limit N, --project or --session)",
                    width)
    click.echo("\n".join(out))


def clip_line(text: str, width: int) -> str:
    from ..render.termtable import clip
    return clip(text, width)


def _turn_line(t: dict, width: int, who: str = "", session_state: str | None = None,
               command: str | None = None) -> str:
    from ..query.read import clean, local_time
    from ..render.termtable import clip
    run = t.get("provider") == RUN_PROVIDER  # a turn `attempt run` recorded: its objective is the command
    if t["objective"]:
        what = ("$ " if run else "") + clean(t["objective"])
    elif command:  # (files written before each run had a turn of its own: from the call)
        what = "$ " + clean(command)
    elif run and t.get("tool_call_count"):
        what = "(a command, its text not captured)"
    elif t["prompt_event_id"] and t["prompt_chars"] is not None:
        what = f"(prompt, {t['prompt_chars']} chars, content not captured)"
    elif t["prompt_event_id"]:
        what = "(prompt)"
    else:
        what = "(activity before the first prompt)"
    status = t["status"]
    if status == "in_progress" and session_state in ("stale", "closed"):
        status = "unknown"  # it never stopped, and its session is over or silent: no stop was seen
    head = (f"  {local_time(t['started_at'], '%H:%M:%S')} {who}turn {t['turn_index']}  "
            f"{TURN_STATUS.get(status, status)}  ")
    return clip(head + what, width)


def _attempt_lines(t: dict, tools: bool, shorts: dict, width: int) -> list:
    from ..query.read import clean, duration_text
    from ..render.termtable import clip, plural, segments_fit
    out = []
    for a in t["attempts"]:
        mark, color = OUTCOME_MARKS.get(a["outcome"], ("?", None))
        paths = fastjson.loads(a["paths"] or "[]")
        sid = _short(a["attempt_id"], shorts)
        verdict = mark + " " + a["outcome"].replace("_", " ")
        if a.get("corrected_by"):  # a person's correction, not the inference: say so
            was = a.get("inferred_outcome")
            fixed = " (corrected" + (f" from {clean(was, 16).replace('_', ' ')})" if was and was != a["outcome"] else ")")
        else:
            fixed = ""
        head = f"    {sid} {verdict}{fixed}" + (f" [{clean(a['failure_class'], 24)}]" if a["failure_class"] else "") + " "
        tail = f"  ({plural(len(paths), 'path')})"
        dur = duration_text(a["started_at"], a["ended_at"])
        if dur:
            tail += f"  {dur}"
        tail += f"  conf {a['confidence']:.1f}"
        if a["superseded_by"]:
            tail += f" → {_short(a['superseded_by'], shorts)}"
        for i, (h, txt, tl) in enumerate(segments_fit(head, clean(a["approach"]), tail, width)):
            if i == 0:  # colour only what was measured: the id and the verdict
                h = h.replace(sid, style(sid, fg="bright_black"), 1).replace(verdict, style(verdict, fg=color), 1)
            out.append(h + txt + tl)
        shas = [clean(x, 7)[:7] for x in fastjson.loads(a["commit_shas"] or "[]")]
        if shas:
            line, shown = "      ⎇ committed", 0
            for sha in shas:
                rest = len(shas) - shown - 1
                if len(line) + 1 + len(sha) + (len(f" +{rest} more") if rest else 0) > width:
                    break
                line += " " + sha
                shown += 1
            if shown < len(shas):
                line += f" +{len(shas) - shown} more"
            out.append(clip(line, width))
    if tools:
        for tc in t.get("tool_calls", []):
            status = tc["outcome_status"] or "in flight"
            p = fastjson.loads(tc["paths"] or "[]")
            head = (f"      · {clean(tc['tool_name'], 16):16s} {clean(status, 10):10s} "
                    f"{(str(tc['duration_ms']) + 'ms') if tc['duration_ms'] is not None else '':>8s} ")
            out.append(clip(head + clean(p[0] if p else ""), width).rstrip())
    return out


def _render_timeline(data: dict, tools: bool, shorts: dict, width: int, runs: dict):
    from ..query.read import clean, local_time
    from ..render.termtable import join_fit, plural, segments_fit, wrap
    out = []
    c = data["counts"]
    if not data["sessions"]:
        out += wrap(f"no sessions yet ({plural(data['events'], 'event')}). Work with a coding agent whose hooks "
                    "call `attempt capture`, then look again; check wiring with `attempt doctor`.", width)
        click.echo("\n".join(out))
        return
    out += join_fit([f"{plural(c['sessions'], 'session')}, {plural(c['turns'], 'turn')}, "
                     f"{plural(c['attempts'], 'attempt')}, {plural(c['handoffs'], 'handoff')} from "
                     f"{plural(data['events'], 'event')}", f"[inference {data['algorithm_version']}]"],
                    width, sep="  ", indent="")
    for s in data["sessions"]:
        end = {"closed": local_time(s["ended_at"], "%H:%M"), "open": "open", "stale": "stale"}[s["state"]]
        agent = PROVIDERS.get(s["provider"], clean(s["provider"], 20))
        out.append("")
        head = f"▌ {agent}  "
        tail = f"  {local_time(s['started_at'])} → {end}  {_short(s['session_id'], shorts)}"
        for i, (h, t, tl) in enumerate(segments_fit(head, clean(s["project_name"]), tail, width, indent="  ")):
            if i == 0:
                h = style("▌ ", fg="blue") + style(agent, bold=True) + "  "
            out.append(h + t + tl)
        recorded = [plural(s[k], k[:-1]) for k in ("notes", "approvals") if s.get(k)]
        out += join_fit([f"{s['coverage']} coverage", plural(s["turn_count"], "turn"),
                         plural(s["tool_call_count"], "tool call"), plural(s["failure_count"], "failure")] + recorded,
                        width, first="  ", indent="  ")
        title = runs.get(s["session_id"])
        commands = {runs.get(t["turn_id"]) for t in s["turns"]}
        if title and commands != {title}:  # a --title, or a named session of several runs
            out.append(clip_line(f"  title: {clean(title)}", width))
        if s.get("more_turns"):
            out.append(clip_line(f"  … {plural(s['more_turns'], 'earlier turn')} not shown (--turns N shows more)",
                                 width))
        for t in s["turns"]:
            out.append(_turn_line(t, width, session_state=s["state"], command=runs.get(t["turn_id"])))
            out += _attempt_lines(t, tools, shorts, width)
    if data["more_sessions"]:
        out.append("")
        out += wrap(f"({plural(data['more_sessions'], 'more session')}; use --limit N or --session ID)", width)
    for h in data["handoffs"]:
        shared = fastjson.loads(h["shared_paths"] or "[]")
        out += join_fit([f"{_short(h['from_session'], shorts)} → {_short(h['to_session'], shorts)}",
                         f"at {local_time(h['handoff_at'], '%H:%M:%S')}", f"after {h['gap_ms'] / 1000:.0f}s gap",
                         plural(len(shared), "shared path"), f"conf {h['confidence']:.1f}"],
                        width, first="⇄ handoff ", sep=", ", indent="    ")
    click.echo("\n".join(out))


# --- failures -----------------------------------------------------------------------------

@click.command("failures")
@scope_options
@db_option
@json_option
def failures_cmd(session, project, since, until, limit, db, as_json):
    """Failed and superseded attempts, newest first (50 unless -n).

    The table fits the terminal (COLUMNS, else 80 when not a terminal): attempt ids are short
    ids that `why` and `trace` accept; columns that cannot fit are named in a note."""
    from ..query import read, shortids
    from ..render import termtable
    st = read_store(db)
    try:
        cond, params = _sessions_scope(st.conn, session, project, since, until)
        data = read.failures(st.conn, cond, params, limit=50 if limit is None else limit)
        shorts = {} if as_json else shortids.shorten(st.conn, _printed_ids(data))
    finally:
        st.close()
    if as_json:
        echo_json(data)
        return
    width = termtable.terminal_width()
    rows = data["failures"]
    if not rows:
        click.echo("\n".join(termtable.wrap(
            f"no failed or superseded attempts among {termtable.plural(data['attempts_considered'], 'attempt')} "
            f"({data['algorithm_version']})", width)))
        return
    table = [[r["attempt_id"], read.clean(r["provider"]), read.clean(r["project_name"], 30),
              read.local_time(r["started_at"], "%Y-%m-%d %H:%M:%S"), r["outcome"],
              read.clean(r["failure_class"], 24), read.clean(r["approach"], 50),
              r["superseded_by"] or "", f"{r['confidence']:.1f}"] for r in rows]
    lines, hidden = termtable.fit(["attempt", "provider", "project", "started", "outcome", "class", "approach",
                                   "superseded_by", "conf"], table, width,
                                  shorten={k: printable(v) for k, v in shorts.items()},
                                  drop_order=["provider", "project", "conf", "superseded_by"], rule="-",
                                  fixed=("outcome",), text_min=12)
    click.echo("\n".join(lines + termtable.hidden_note(hidden, width)))
    err("\n".join(termtable.prose("attempts are Tier 1 inferences; run `attempt trace <att_id>` or "
                                   "`attempt why <att_id>` for the evidence",
                                   termtable.terminal_width(sys.stderr), "  ")))


# --- correct / retract ----------------------------------------------------------------------

def _change_ids(res) -> set:
    """The ids a correction's or retraction's preview prints (its target, the changed rows, the
    values before and after that are ids)."""
    from ..query import shortids
    vals = [res.get("target")] + [v for ch in res.get("changes") or () for v in (ch["entity"], ch["before"], ch["after"])]
    return {v for v in vals if isinstance(v, str) and shortids.is_id(v)}


def _shorts(conn, res) -> dict:
    """{id: its short form, terminal-safe} for the ids of a preview (query.shortids)."""
    from ..query import shortids
    return {k: printable(v) for k, v in shortids.shorten(conn, _change_ids(res)).items()}


def _render_changes(changes, counts=None, shorts=None, this: str | None = None) -> list[str]:
    """The projection changes as tables fitted to the terminal (indented two spaces): rows per
    table, then each changed field with its value before and after. Ids are whole when the
    table fits, else their short forms (they resolve back); the event written (`this`, named on
    the line above) reads `(this event)`; other values are cut with … last."""
    from ..query.read import clean
    from ..render import termtable
    width, shorts, lines = termtable.terminal_width() - 2, shorts or {}, []
    if counts:
        rows = [[clean(k), str(v["before"]), str(v["after"])] for k, v in counts.items()]
        table, hidden = termtable.fit(["table", "before", "after"], rows, width)
        lines += table + termtable.hidden_note(hidden, width)
    if changes:
        def rows(short: bool) -> list:
            def value(v):
                v = "" if v is None else str(v)
                if this and v == this:
                    return "(this event)"
                return (shorts.get(v, v) if short else v) if v in shorts else clean(v) or "-"
            return [[value(ch["entity"]), clean(ch["field"]), value(ch["before"]), value(ch["after"])]
                    for ch in changes]
        heads = ["changed", "field", "before", "after"]
        whole = rows(False)
        natural = max(termtable.cols("  ".join(r)) for r in whole + [heads])
        table, hidden = termtable.fit(heads, whole if natural <= width else rows(True), width, shorten=shorts,
                                      fixed=("field",))
        lines += ([""] if lines else []) + table + termtable.hidden_note(hidden, width)
    return ["  " + ln if ln else "" for ln in lines]


@click.command("correct")
@click.argument("target")
@click.option("--outcome", metavar="O", help="succeeded | failed | abandoned | superseded (an attempt).")
@click.option("--failure-class", "failure_class", metavar="C", help="A failure class token (needs --outcome).")
@click.option("--note", metavar="TEXT", help="A note (attempt), or the turn's objective (turn). Content: "
                                             "not stored under metadata_only.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@db_option
@json_option
def correct_cmd(target, outcome, failure_class, note, dry_run, db, as_json):
    """Correct an inference: an attempt's outcome or note (att_…), a turn's objective (trn_…).

    Writes a Correction event into the target's session; the projections apply the latest one
    and keep the inferred value beside it (inferred_outcome, inferred_objective).
    """
    from ..projections import meta
    st = read_store(db) if dry_run else write_store(db, read=True)
    try:
        res = meta.correct(st, target, outcome=outcome, failure_class=failure_class, note=note,
                           dry_run=dry_run)
        shorts = {} if as_json else _shorts(st.conn, res)
    finally:
        st.close()
    if as_json:
        echo_json(res)
        return
    say(f"{'would write' if dry_run else 'wrote'} correction {res['event_id']} "
        f"({res['correction_type']} on {res['target']})")
    lines = []
    if note and not res["note_stored"]:
        lines.append(f"note text not stored (capture mode {res['capture_mode']}); note_chars kept")
    if res["changes"]:
        lines.append("projection changes:")
        lines += _render_changes(res["changes"], shorts=shorts, this=res["event_id"])
    else:
        lines.append("projection unchanged (the target may already carry this value)")
    if dry_run:
        lines.append("(dry run — nothing was written)")
    click.echo("\n".join(lines))


@click.command("retract")
@click.option("--session", metavar="ID", help="Retract a whole session (ses_…).")
@click.option("--attempt", metavar="ID", help="Retract one attempt and its tool calls (att_…).")
@click.option("--event", "event_id", metavar="ID", help="Retract one fact event (ev_…).")
@click.option("--reason", required=True, metavar="R",
              help="benchmark | test | duplicate | mistaken_import | privacy | revoked | other")
@click.option("--note", metavar="TEXT", help="Why, for the audit trail (content: not stored under metadata_only).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Show what would leave the projections; write nothing.")
@db_option
@json_option
def retract_cmd(session, attempt, event_id, reason, note, yes, dry_run, db, as_json):
    """Remove a session, attempt or event from every projection. The facts stay in the log; the
    Retraction is itself a fact and cannot be undone."""
    from ..projections import meta
    if as_json and not (yes or dry_run):
        raise click.UsageError("--json needs --yes or --dry-run (there is no prompt to answer)")
    st = read_store(db) if dry_run else write_store(db, read=True)
    try:
        preview = meta.retract(st, session=session, attempt=attempt, event_id=event_id, reason=reason,
                               note=note, dry_run=True)
        shorts = {} if as_json else _shorts(st.conn, preview)
        if dry_run:
            res = preview
        else:
            if not as_json:
                _render_retraction(preview, shorts)
            if not yes:
                if not sys.stdin.isatty():
                    raise AttemptError("retract.unconfirmed", "refusing to retract without confirmation; "
                                       "pass --yes (or run in a terminal and type `retract`)", exit_status=1)
                answer = click.prompt("type `retract` to write the retraction", default="", show_default=False)
                if answer.strip() != "retract":
                    raise AttemptError("retract.aborted", "not confirmed; nothing was written", exit_status=1)
            res = meta.retract(st, session=session, attempt=attempt, event_id=event_id, reason=reason,
                               note=note, dry_run=False)
    finally:
        st.close()
    if as_json:
        echo_json(res)
        return
    if dry_run:
        _render_retraction(res, shorts)
        click.echo("(dry run — nothing was written)")
    else:
        say(f"wrote retraction {res['event_id']} ({res['target_type']} {res['target']})")
        say("undo is not possible: retractions are facts too; a wrong one can only be documented "
            "with `attempt correct`")


def _render_retraction(res, shorts: dict):
    from ..query.read import clean, local_time
    from ..render.termtable import plural
    d = res["description"]
    if res["target_type"] == "session":
        what = (f"session {res['target']}: {PROVIDERS.get(d.get('provider'), clean(d.get('provider'), 20))}, "
                f"{clean(d.get('project_name'), 40)}, {plural(d.get('event_count') or 0, 'event')}, "
                f"{plural(d.get('turn_count') or 0, 'turn')}, {plural(d.get('attempts') or 0, 'attempt')}, "
                f"{local_time(d.get('started_at'))} → "
                f"{local_time(d.get('ended_at')) if d.get('ended_at') else d.get('state', 'open')}")
    elif res["target_type"] == "attempt":
        what = (f"attempt {res['target']}: turn {d.get('turn_index')} #{d.get('attempt_index')}, "
                f"{d.get('outcome')}, {clean(d.get('approach'), 60)}, {plural(d.get('tool_call_count') or 0, 'tool call')}")
    else:
        what = (f"event {res['target']}: {clean(d.get('provider'), 20)} {d.get('kind')} "
                f"{clean(d.get('tool_name') or '', 20)} at {local_time(d.get('observed_at'), '%Y-%m-%d %H:%M:%S')}")
    say(f"retract {what}")
    click.echo(f"reason  {printable(res['reason'])}")
    say(f"effect  {res['retracted_events']} fact event(s) leave every projection and the sanitized "
        "export; the events stay in the log", indent=" " * 8)
    ch = _render_changes(res["changes"], res["counts"], shorts)
    if ch:
        click.echo("\n".join(["projection changes:"] + ch))


# --- reproject ----------------------------------------------------------------------------

@click.command("reproject")
@click.option("--check", is_flag=True, help="Compare only: rebuild inside a transaction and roll it back.")
@db_option
@json_option
def reproject_cmd(check, db, as_json):
    """Rebuild every projection from the events and report any difference with the state the
    triggers maintained (none is expected). Views, indexes and triggers that were edited since
    their migrations wrote them (see `attempt verify`) are put back first. Exit 1 when
    something differed."""
    from ..projections import rebuild
    from .progress import Ticker
    st = read_store(db, sign=False)
    try:
        from ..integrity import damage
        why = damage.refusal(st, st.path)
        if why is not None:  # a rebuild would read (and a reproject write) a file seen damaged
            raise AttemptError("store.damaged", f"{st.path} is damaged ({why}): its projections can be neither "
                               f"checked nor rebuilt from it; {damage.ADVICE}", exit_status=1)
        with Ticker("checking projections" if check else "rebuilding projections", quiet=as_json):
            rep = rebuild.reproject(st.conn, write=not check)
    finally:
        st.close()
    d = rep.as_dict()
    if as_json:
        echo_json(d)
    else:
        verb = "checked" if check else "rebuilt"
        from ..render.termtable import plural
        from .progress import rate
        click.echo(f"{verb} projections from {plural(rep.events, 'event', grouped=True)} "
                   f"({plural(rep.sessions, 'session', grouped=True)}) "
                   f"{rate(rep.events, rep.seconds)}")
        for what in rep.restored:
            click.echo(f"schema{' (rolled back)' if check else ''}: {printable(what)}")
        if rep.clean:
            click.echo("ok: the incremental state equals a rebuild from the events")
        else:
            for table, info in rep.differences.items():
                click.echo(f"differs: {table}: {info['only_before']} row(s) only in the incremental state, "
                           f"{info['only_after']} only in the rebuild")
            if rep.missing_marks:
                click.echo(f"differs: events.retracted: {len(rep.missing_marks)} event(s) were not marked "
                           f"retracted{'' if check else ' (now marked)'}")
        if rep.extra_marks:
            click.echo(f"note: {len(rep.extra_marks)} event(s) stay marked retracted though no retraction "
                       "covers them now (marks only go 0 → 1)")
    if not rep.clean:
        sys.exit(1)
