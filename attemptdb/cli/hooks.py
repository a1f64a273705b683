"""`attempt hook install|uninstall|status` and `attempt doctor` (thin layer over
attemptdb.installer and attemptdb.installer.doctor).

Invariant: options are parsed and results rendered here, nothing else; `--json` prints
the library's report unchanged; exit 1 when the report has a problem (a failed or refused
config, a failed capture test, a doctor problem).
"""

import os
import sys

import click

from ..render import termtable
from ..render.termtable import plural
from .common import db_option, echo_json, json_option, no_db_option, printable, style
from .readers import mcp_option, mcp_registrations, print_mcp, report_json

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


def _print_actions(report):
    for a in report.actions:
        word = _WORDS.get(a.outcome, a.outcome)
        if report.dry_run:
            word = _WOULD.get(a.outcome, word)
        color = {"failed": "red", "skipped": "yellow"}.get(a.outcome, "green")
        line = f"{a.agent.label:<12} {style(f'{word:<16}', fg=color)} {printable(_short(a.config_path))}"
        click.echo(line)
        if a.error:
            click.echo(printable(f"  error[{a.error[0]}]: {a.error[1]} (file left untouched)"))
        if a.reason:
            click.echo(printable(f"  {a.reason}"))
        if a.added or a.removed:
            verb = "would " if report.dry_run else ""
            if a.removed:
                click.echo(printable(f"  {verb}remove entries for {len(a.removed)} event(s): {', '.join(a.removed)}"))
            if a.added:
                click.echo(printable(f"  {verb}subscribe {len(a.added)} event(s): {', '.join(a.added)}"))
        if a.backup:
            click.echo(printable(f"  backup: {_short(a.backup)}"))
        if a.settings and a.settings.get("outcome") not in (None, "unchanged"):
            change = f" ({a.settings['change']})" if a.settings.get("change") and report.dry_run else ""
            click.echo(printable(f"  {_short(a.settings['path'])}: {a.settings['outcome']}{change}"
                                 + (f" (backup: {_short(a.settings['backup'])})" if a.settings.get("backup") else "")))
        for n in a.notes:
            click.echo(printable(f"  note: {n}"))


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
    a capture_test event in the database (--db / ATTEMPTDB_PATH). An agent named with --provider
    that is not detected is not installed: the output says where detection looked, and the
    exit status is 1 unless --force (which installs it anyway)."""
    from ..installer import install
    report = install.install(list(providers) or None, dry_run=dry_run, verify=not no_verify, db=db,
                             force=force)
    regs = mcp_registrations(report, mcp, providers, dry_run)
    if as_json:
        echo_json(report_json(report, regs))
    else:
        _print_actions(report)
        print_mcp(regs, dry_run)
        if report.executable is not None:
            click.echo(printable(f"hook command: {report.executable.command('<agent>')} "
                                 f"(found: {report.executable.source})"))
        for t in report.capture_tests:
            label = printable(t["hook_id"])
            if t["ok"]:
                click.echo(f"capture test {label}: {style('ok', fg='green')} "
                           f"({t['event_id']}, {t.get('ms', 0):g} ms)")
            else:
                click.echo(f"capture test {label}: {style('FAILED', fg='red')} "
                           + printable(f"error[{t['error']['code']}]: {t['error']['message']}"))
    if report.missing and not as_json:
        click.echo(f"not installed: {', '.join(a.agent.label for a in report.missing)} not detected; "
                   "pass --force to install anyway", err=True)
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
        print_mcp(regs, dry_run)
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
        for p in a["problems"]:
            click.echo("\n".join(_prose(printable(f"  problem: {p}"), width, "    ")))
        for n in a["notes"]:
            click.echo("\n".join(_prose(printable(f"  note: {n}"), width, "    ")))
    if full:
        d = rep["database"]
        path = printable(_short(d["path"]))
        if d.get("reachable"):
            mode = d["capture_mode"] + (" (FAIL-CLOSED)" if d.get("fail_closed") else "")
            text = printable(f"database     {path}: {plural(d['events'], 'event')}, schema "
                             f"{d['schema']}, capture mode {mode}")
        else:
            text = f"database     {path}: " + ("not reachable" if d["exists"] else "does not exist yet")
        click.echo("\n".join(_prose(text, width, " " * 13, path)))
        for p in rep["problems"]:
            click.echo("\n".join(_prose(printable(f"  problem: {p}"), width, "    ")))
        exe = rep["executable"]
        argv = printable(" ".join(exe["argv"]))
        click.echo("\n".join(_prose(printable(f"executable   {argv} (found: {exe['source']}; "
                                               f"`attempt` on PATH: {'yes' if rep['on_path'] else 'no'})"),
                                      width, " " * 13, *exe["argv"])))
        click.echo(style("ok", fg="green") if rep["ok"] else style("problems found", fg="red"))


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
    rep = doctor.run(db, list(providers) or None)
    if as_json:
        echo_json(rep)
    else:
        _print_agents(rep, full=True)
    sys.exit(0 if rep["ok"] else 1)
