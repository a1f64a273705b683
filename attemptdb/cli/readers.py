"""`attempt mcp` and `attempt ui`: thin click layers over attemptdb.readers.

Invariant: options are parsed here and nothing else; the servers, their read-only guarantees
and their optional dependencies live in attemptdb.readers (imported only when a command runs).
Both read the database like every read command: events waiting in the spool are handed to
the store first (core.housekeeping), then only read-only connections touch the file.
"""

import click

from .common import db_option, db_path

CONTENT_HELP = ("Show content (prompt, command and output text, raw payloads, notes); "
                "without it those columns read as null.")


def mcp_option(f):
    return click.option("--mcp", is_flag=True, help="Also register (uninstall: remove) the `attempt mcp` server "
                        "in each agent's MCP config.")(f)


def mcp_registrations(report, mcp, providers, dry_run, remove=False):
    """The MCP registrations `--mcp` asks for (attemptdb.installer.mcpconfig), or []."""
    if not mcp:
        return []
    from ..installer import mcpconfig
    exe = report.executable
    if exe is not None and exe.source == "lean":
        exe = None  # the MCP server is a long-lived `attempt mcp`, not the lean hook command: the `attempt` executable
    # the server reads the database the hooks write to (`--db` when install was given one)
    return mcpconfig.register(list(providers) or None, dry_run=dry_run, remove=remove, executable=exe,
                              db=None if remove else report.database)


def report_json(report, regs):
    out = report.to_json()
    if regs:
        out["mcp"] = [r.to_json() for r in regs]
        out["ok"] = out["ok"] and not any(r.failed for r in regs)
    return out


def _housekeeping(path):
    from .stores import housekeeping
    return lambda conn: housekeeping(path, conn)


@click.command("mcp")
@click.option("--include-content", is_flag=True, help=CONTENT_HELP)
@db_option
def mcp_cmd(include_content, db):
    """Serve the history to coding agents as MCP tools over stdio (needs the mcp extra).

    Tools: query (one AttemptQL or read-only SQL statement), schema, needs_you, timeline,
    why, trace, evidence. Read-only; at most 200 rows per answer. `attempt hook install --mcp`
    registers it with Claude Code, Codex, Cursor and Gemini CLI."""
    from ..readers import mcp_server
    mcp_server.require_mcp()
    path = db_path(db)
    mcp_server.serve(mcp_server.Reader(path, include_content=include_content, before_read=_housekeeping(path)))


@click.command("ui")
@click.option("--port", type=click.IntRange(1, 65535), default=8001, show_default=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs --allow-remote.")
@click.option("--allow-remote", is_flag=True, help="Allow a --host other machines can reach (prints a warning).")
@click.option("--open", "open_browser", is_flag=True, help="Open the UI in the default web browser.")
@click.option("--include-content", is_flag=True, help=CONTENT_HELP)
@db_option
def ui_cmd(port, host, allow_remote, open_browser, include_content, db):
    """A local, read-only web UI over the live database (needs the ui extra: Datasette).

    Needs You (refreshing itself), open work units, session timelines, each attempt's
    evidence, every table with the catalog's column descriptions, and the catalog's recipes.
    Prints the address to open: it carries an access token, so other accounts on this
    machine cannot read the history. Ctrl-C stops it."""
    from ..readers.web import serve
    serve.require_datasette()
    path = db_path(db)
    ds = serve.build(path, include_content=include_content, before_read=_housekeeping(path))
    serve.serve(ds, host=host, port=port, allow_remote=allow_remote, open_browser=open_browser, echo=click.echo)
