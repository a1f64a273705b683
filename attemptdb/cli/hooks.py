"""`attempt hook install|uninstall|status` and `attempt doctor` (thin layer over
attemptdb.installer and attemptdb.installer.doctor).

Invariant: options are parsed and results rendered here, nothing else; `--json` prints
the library's report unchanged; exit 1 when the report has a problem (a failed or refused
config, a failed capture test, a doctor problem).
"""

import os
import shlex
import sys

import click

from ..render import termtable
from ..render.termtable import plural
from ..store import location
from .common import db_option, db_path, echo_json, json_option, no_db_option, printable, style
from .readers import mcp_option, mcp_registrations, report_json

_WORDS = {"installed": "installed", "updated": "updated", "already_current": "already current",
          "removed": "removed", "not_installed": "not installed", "skipped": "skipped",
          "failed": "FAILED"}
_WOULD = {"installed": "would install", "updated": "would update", "removed": "would remove"}


def provider_option(f, default="every detected agent"):
    return click.option("--provider", "-p", "providers", multiple=True, metavar="P",
                        help="Agent to act on: claude-code, codex, cursor, gemini-cli "
                             f"(repeatable; default: {default}).")(f)


def report_provider_option(f):
    return provider_option(f, default="all four")


def dry_run_option(f):
    return click.option("--dry-run", is_flag=True,
                        help="Compute and show what would change; write nothing.")(f)


def _short(path):
    if not path:
        return ""
    home = os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def _lines(text: str, width: int, indent: str, *whole) -> str:
    """`text` (terminal-safe) as lines that fit `width`, broken at spaces only (a list of event
    names at its `, `), with `whole` (paths) never broken, continuation lines under `indent`."""
    return "\n".join(_prose(printable(text), width, indent, *whole))


def _tilde(text: str) -> str:
    """A message with the paths under the home directory written from `~/`, as `_short` does."""
    home = os.path.expanduser("~")
    if not home or home == "/":
        return text
    return text.replace(home + os.sep, "~" + os.sep)


def _print_actions(report):
    width = termtable.terminal_width()
    for a in report.actions:
        word = _WORDS.get(a.outcome, a.outcome)
        if report.dry_run:
            word = _WOULD.get(a.outcome, word)
        color = {"failed": "red", "skipped": "yellow"}.get(a.outcome, "green")
        head, path = f"{a.agent.label:<12} ", printable(_short(a.config_path))
        lines = _prose(f"{head}{word:<16} {path}", width, " " * len(head), path)
        if lines[0].startswith(head + word):  # the outcome in colour (a narrow terminal: plain)
            lines[0] = head + style(f"{word:<16}", fg=color) + lines[0][len(head) + 16:]
        click.echo("\n".join(lines))
        say = []
        if a.error:
            say.append((f"  error[{a.error[0]}]: {a.error[1]} (file left untouched)", ()))
        if a.reason:
            say.append((f"  {a.reason}", ()))
        verb = "would " if report.dry_run else ""
        if a.removed:
            say.append((f"  {verb}remove entries for {len(a.removed)} event(s): {', '.join(a.removed)}", ()))
        if a.added:
            say.append((f"  {verb}subscribe {len(a.added)} event(s): {', '.join(a.added)}", ()))
        if a.backup:
            say.append((f"  backup: {_short(a.backup)}", (_short(a.backup),)))
        if a.settings and a.settings.get("outcome") not in (None, "unchanged"):
            change = f" ({a.settings['change']})" if a.settings.get("change") and report.dry_run else ""
            bak = _short(a.settings.get("backup"))
            say.append((f"  {_short(a.settings['path'])}: {a.settings['outcome']}{change}"
                        + (f" (backup: {bak})" if bak else ""), (_short(a.settings["path"]), bak)))
        for n in a.notes:
            say.append((f"  note: {_tilde(n)}", ()))
        for text, whole in say:
            click.echo(_lines(text, width, "    ", *whole))


_MCP_WORDS = {"installed": "registered", "updated": "updated", "already_current": "already registered",
              "removed": "removed", "not_installed": "not registered", "skipped": "skipped", "failed": "FAILED"}


def _print_mcp(regs, dry_run):
    """One line per agent: what `--mcp` did (or would do) to its MCP config, then its error,
    reason, backup and notes, written as the hooks' lines are (`~/…`, fitted to the terminal)."""
    width = termtable.terminal_width()
    for r in regs:
        word = _MCP_WORDS.get(r.outcome, r.outcome)
        if dry_run and r.outcome in ("installed", "updated", "removed"):
            word = "would be " + word
        color = {"failed": "red", "skipped": "yellow"}.get(r.outcome, "green")
        head, label, path = f"{r.agent.label:<12} ", f"MCP server {word:<20}", printable(_short(r.config_path))
        lines = _prose(f"{head}{label} {path}", width, " " * len(head), path)
        if lines[0].startswith(head + label):  # the outcome in colour (a narrow terminal: plain)
            lines[0] = head + style(label, fg=color) + lines[0][len(head) + len(label):]
        click.echo("\n".join(lines))
        say = ([f"error[{r.error[0]}]: {r.error[1]}"] if r.error else []) + ([r.reason] if r.reason else []) \
            + ([f"backup: {_short(r.backup)}"] if r.backup else []) + [f"note: {_tilde(n)}" for n in r.notes]
        for text in say:
            click.echo(_lines(f"  {text}", width, "    ", _short(r.config_path), _short(r.backup)))


@click.group("hook")
def hook_group():
    """Install, remove or inspect AttemptDB's hooks in each agent's own config
    (Claude Code, Codex, Cursor, Gemini CLI)."""


@hook_group.command("install")
@provider_option
@dry_run_option
@click.option("--no-verify", is_flag=True, help="Skip the capture test after installing.")
@mcp_option
@click.option("--force", is_flag=True,
              help="With --provider: install for a named agent even when it is not detected.")
@json_option
@db_option
def install_cmd(providers, dry_run, no_verify, mcp, force, as_json, db):
    """Subscribe `attempt capture` to every event we capture, in each agent's config.

    Idempotent (a second run changes nothing), keeps your own hooks and the file's
    formatting, backs the file up, writes it atomically (through symlinks). Ends with a
    capture test per agent: the written command is run with a test payload and must store
    a capture_test event in the database the hooks write to. Given --db (or ATTEMPTDB_PATH),
    the hooks carry `--db <absolute path>` and write there, wherever the agent works; without
    it, to the default database (a trusted ./.attemptdb where the agent works comes first).
    An agent named with --provider
    that is not detected is not installed: the output says where detection looked, and the
    exit status is 1 unless --force (which installs it anyway)."""
    from ..installer import install
    from ..installer.command import shell_quote
    report = install.install(list(providers) or None, dry_run=dry_run, verify=not no_verify, db=db,
                             force=force)
    regs = mcp_registrations(report, mcp, providers, dry_run)
    if as_json:
        echo_json(report_json(report, regs))
    else:
        _print_actions(report)
        _print_mcp(regs, dry_run)
        width = termtable.terminal_width()
        if report.executable is not None:
            exe = report.executable
            click.echo(_lines(f"hook command: {exe.command('<agent>', report.database)} (found: {exe.source})",
                              width, "  ", *map(shell_quote, exe.argv),
                              *([shell_quote(report.database)] if report.database else [])))
            click.echo(_lines(f"hooks write to: {_database(report.database)}", width, "  ",
                              _short(report.database or location.default_db())))
        for t in report.capture_tests:
            label = printable(t["hook_id"])
            if t["ok"]:
                click.echo(f"capture test {label}: {style('ok', fg='green')} "
                           f"({t['event_id']}, {t.get('ms', 0):g} ms)")
            else:
                lines = _prose(printable(f"capture test {t['hook_id']}: FAILED error[{t['error']['code']}]: "
                                         f"{t['error']['message']}"), width, "  ")
                head = f"capture test {label}: FAILED"
                if lines[0].startswith(head):
                    lines[0] = f"capture test {label}: {style('FAILED', fg='red')}" + lines[0][len(head):]
                click.echo("\n".join(lines))
    if report.missing and not as_json:
        click.echo("\n".join(termtable.prose(
            f"not installed: {', '.join(a.agent.label for a in report.missing)} not detected; "
            "pass --force to install anyway", termtable.terminal_width(sys.stderr), "  ")), err=True)
    sys.exit(0 if report.ok and not any(r.failed for r in regs) else 1)


@hook_group.command("uninstall")
@provider_option
@dry_run_option
@mcp_option
@json_option
@no_db_option("it removes AttemptDB's entries from the agents' configs whatever database they write to; "
              "the database itself is left as it is")
def uninstall_cmd(providers, dry_run, mcp, as_json):
    """Remove AttemptDB's hooks (only ours) from each agent's config."""
    from ..installer import install
    report = install.uninstall(list(providers) or None, dry_run=dry_run)
    regs = mcp_registrations(report, mcp, providers, dry_run, remove=True)
    if as_json:
        echo_json(report_json(report, regs))
    else:
        _print_actions(report)
        _print_mcp(regs, dry_run)
    sys.exit(0 if report.ok and not any(r.failed for r in regs) else 1)


def _print_agents(rep, *, full):
    colors = {"delivering": "green", "installed": "green", "broken": "red", "not_installed": "yellow"}
    width = termtable.terminal_width()
    for a in rep["agents"]:
        state = a["state"]
        extra = ""
        if state == "installed":
            extra = " (capture test seen)" if a["verified"] else " (no capture yet)"
        elif state == "delivering":
            extra = f" (last capture {a['last_capture']})"
        det = "" if a["detected"] else " [not detected]"
        head = f"{a['agent']:<12} "
        path = printable(_short(a["config_path"]))
        lines = _prose(f"{head}{state}{printable(extra)}{det}  {path}", width, " " * len(head), path)
        if lines[0].startswith(head + state):  # (a terminal too narrow for the name and the state: plain)
            lines[0] = head + style(state, fg=colors.get(state)) + lines[0][len(head) + len(state):]
        click.echo("\n".join(lines))
        if "hooks_database" in a:
            where = _database(a["hooks_database"])
            click.echo("\n".join(_prose(printable(f"  writes to: {where}"), width, "    ",
                                         _short(a["writes_to"]))))
        for p in a["problems"]:
            click.echo("\n".join(_prose(printable(f"  problem: {p}"), width, "    ")))
        for n in a["notes"]:
            click.echo("\n".join(_prose(printable(f"  note: {n}"), width, "    ",
                                         a.get("writes_to"), rep["database"]["path"])))
    if full:
        d = rep["database"]
        path = printable(_short(d["path"]))
        if d.get("reachable"):
            mode = d["capture_mode"] + (" (FAIL-CLOSED)" if d.get("fail_closed") else "")
            text = printable(f"database     {path}{' (the hooks name it)' if d.get('named_by_hooks') else ''}: "
                             f"{plural(d['events'], 'event')}, schema "
                             f"{d['schema']}, capture mode {mode}")
        else:
            text = f"database     {path}: " + ("not reachable" if d["exists"] else "does not exist yet")
        click.echo("\n".join(_prose(text, width, " " * 13, path)))
        files = [d["path"]] + [e["path"] for e in d.get("exposed", ())]
        for p in rep["problems"]:  # (a path in them stays whole, quoted for a command too)
            click.echo("\n".join(_prose(printable(f"  problem: {p}"), width, "    ", *files,
                                         *map(shlex.quote, files))))
        exe = rep["executable"]
        argv = printable(" ".join(exe["argv"]))
        click.echo("\n".join(_prose(printable(f"executable   {argv} (found: {exe['source']}; "
                                               f"`attempt` on PATH: {'yes' if rep['on_path'] else 'no'})"),
                                      width, " " * 13, *exe["argv"])))
        click.echo(style("ok", fg="green") if rep["ok"] else style("problems found", fg="red"))


def _database(path: str | None) -> str:
    """Where hooks write, for a person: the database their `--db` names, else the default."""
    if path:
        return _short(path)
    return (f"the default database, {_short(location.default_db())} (a trusted .attemptdb/attempt.db "
            "where the agent works comes first)")


def _prose(text: str, width: int, indent: str, *whole) -> list[str]:
    """A line of the report as lines that fit the terminal, broken at spaces only: paths and
    ids stay whole to copy (termtable.prose), continuation lines under `indent`."""
    return termtable.prose(text, width, indent, whole=tuple(printable(w) for w in whole if w))


@hook_group.command("status")
@report_provider_option
@json_option
@db_option
def status_cmd(providers, as_json, db):
    """Show, per agent: not_installed, installed, delivering (a real capture in the last
    7 days) or broken."""
    from ..installer import doctor
    rep = doctor.run(db, list(providers) or None)
    if as_json:
        echo_json({"agents": rep["agents"], "executable": rep["executable"]})
    else:
        _print_agents(rep, full=False)


@click.command("doctor")
@report_provider_option
@json_option
@db_option
def doctor_cmd(providers, as_json, db):
    """Check that every agent is wired, trusted and delivering, and that the database is
    reachable with a valid capture mode. Exit 1 on any problem."""
    from ..installer import doctor
    rep = doctor.run(None if db is None else db_path(db), list(providers) or None)
    if as_json:
        echo_json(rep)
    else:
        _print_agents(rep, full=True)
    sys.exit(0 if rep["ok"] else 1)
