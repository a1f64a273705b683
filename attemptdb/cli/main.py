"""The `attempt` click group. Commands load lazily (a command's module is imported only when
that command runs), so `attempt X` pays only for what X needs.

Invariant: no traceback ever reaches a user. AttemptError → its coded line and exit status;
click's refusal of a command line → a coded `usage.*` line (exit 2); anything unexpected → one
line naming the file the full report was written to, exit 2.
"""

import importlib
import os
import sys
import time
import traceback

import click

from .. import __version__
from ..errors import AttemptError, did_you_mean

# command name → "module:attribute" (module relative to attemptdb.cli)
COMMANDS = {
    "init": "core:init_cmd",
    "capture": "core:capture_cmd",
    "daemon": "daemon:daemon_group",
    "verify": "core:verify_cmd",
    "checkpoint": "core:checkpoint_cmd",
    "keys": "core:keys_group",
    "conformance": "core:conformance_cmd",
    "import": "core:import_group",
    "events": "core:events_cmd",
    "bundle": "bundle:bundle_group",
    "export": "export:export_cmd",
    "sync": "sync:sync_cmd",
    "bench": "bench:bench_group",
    "demo": "core:demo_cmd",
    "hook": "hooks:hook_group",
    "doctor": "hooks:doctor_cmd",
    "timeline": "projections:timeline_cmd",
    "failures": "projections:failures_cmd",
    "correct": "projections:correct_cmd",
    "retract": "projections:retract_cmd",
    "reproject": "projections:reproject_cmd",
    "recover": "recover:recover_cmd",
    "query": "query:query_cmd",
    "why": "query:why_cmd",
    "trace": "query:trace_cmd",
    "handoffs": "query:handoffs_cmd",
    "status": "query:status_cmd",
    "needs-you": "query:needs_you_cmd",
    "schema": "query:schema_cmd",
    "run": "evidence:run_cmd",
    "snapshot": "evidence:snapshot_cmd",
    "note": "evidence:note_cmd",
    "approve": "evidence:approve_cmd",
    "reject": "evidence:reject_cmd",
    "close": "evidence:close_cmd",
    "artifact": "evidence:artifact_cmd",
    "prove": "evidence:prove_cmd",
    "verify-proof": "evidence:verify_proof_cmd",
    "mcp": "readers:mcp_cmd",
    "ui": "readers:ui_cmd",
}


class NoSuchCommand(click.UsageError):
    """A command name `attempt` does not have (usage.unknown_command)."""


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(name for name in COMMANDS if self._load(name) is not None)

    def get_command(self, ctx, name):
        return self._load(name)

    def _load(self, name):
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        mod, attr = spec.split(":")
        try:
            module = importlib.import_module(f"attemptdb.cli.{mod}")
        except ModuleNotFoundError as e:
            if e.name == f"attemptdb.cli.{mod}":  # that area is not built yet
                return None
            raise
        return getattr(module, attr, None)

    def resolve_command(self, ctx, args):
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            raise NoSuchCommand(f"No such command {args[0]!r}{did_you_mean(args[0], COMMANDS)}", ctx=ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # click would exit 1 ("a problem was found")
            from .common import drop_stdout
            drop_stdout()
            raise SystemExit(0) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="attempt", message="%(prog)s %(version)s")
def cli():
    """AttemptDB: the database of what AI coding agents tried.

    Agent hooks call `attempt capture`; every payload becomes one immutable, hash-chained fact
    in a single SQLite file. Read it with the commands below, AttemptQL (`attempt query`) or
    plain SQL from the sqlite3 shell.
    """


def _report_dir() -> str:
    from ..store.location import state_dir
    return os.path.join(state_dir(), "reports")


def _crash(exc: BaseException) -> int:
    try:
        d = _report_dir()
        os.makedirs(d, mode=0o700, exist_ok=True)
        path = os.path.join(d, f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.txt")
        from ..ingest import redaction
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
            # the command line and the exception's text can hold a note or a command: secrets out
            text = f"attempt {__version__}\nargv: {sys.argv!r}\n\n" + "".join(traceback.format_exception(exc))
            try:
                text = redaction.redact(text)[0]
            except Exception:  # not scanned: only what cannot hold a secret
                text = f"attempt {__version__}\n{type(exc).__name__} (the rest could not be scanned for secrets)\n"
            f.write(text)
        where = f"full report: {path}"
    except OSError:
        where = "no report could be written"
    click.echo(f"error[internal]: unexpected {type(exc).__name__} ({where})", err=True)
    return 2


def run(args) -> int:
    """`attempt ARGS` through click; the exit status. (cli.run tries the lean path first.)"""
    from .common import OPENED
    OPENED.clear()  # this command's files only (the entry point can run more than once in a process)
    try:
        cli.main(args=list(args), prog_name="attempt", standalone_mode=False)
        return 0
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:  # a group run bare: its help
        e.show()
        return 2
    except click.ClickException as e:
        found = usage_error(e)
        click.echo(str(found), err=True)
        return found.exit_status
    except BaseException as e:
        return failed(e)


def usage_error(e) -> AttemptError:
    """click's refusal of a command line as one coded line, like every other error (README
    "Commands"): the code says what kind, the message is click's, and where help is."""
    message = e.format_message().rstrip(".")
    ctx = getattr(e, "ctx", None)
    if ctx is not None:
        message += f" (`{ctx.command_path} --help` lists what it takes)"
    if isinstance(e, click.NoSuchOption):
        return AttemptError("usage.unknown_option", message)
    if isinstance(e, NoSuchCommand):
        return AttemptError("usage.unknown_command", message)
    if isinstance(e, click.MissingParameter):
        return AttemptError("usage.missing", message)
    if isinstance(e, click.BadParameter):
        return AttemptError("usage.bad_value", message)
    return AttemptError("usage.bad_usage", message)


def failed(e: BaseException) -> int:
    """What a command that raised `e` prints (one line on stderr) and its exit status; what is
    not a command's failure (GeneratorExit, …) is raised again."""
    if isinstance(e, AttemptError):
        click.echo(str(e), err=True)
        return e.exit_status
    if isinstance(e, SystemExit):
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    if isinstance(e, BrokenPipeError):
        return 0
    if isinstance(e, UnicodeEncodeError):
        if "surrogates" not in str(e):
            return _crash(e)
        # stored text is always UTF-8 (ingestion refuses lone surrogates): this came from an
        # argument whose bytes were not UTF-8 (Python hands them over as lone surrogates)
        click.echo("error[input.not_utf8]: an argument is not valid UTF-8 text", err=True)
        return 2
    if isinstance(e, KeyboardInterrupt):
        return 130
    if isinstance(e, OSError):
        why = _output_broken(e)
        if why is not None:  # a full disk or an I/O error under standard output: not a crash of ours
            click.echo(str(AttemptError("output.unwritable", f"cannot write the output: {why}")), err=True)
            return 2
    if isinstance(e, Exception):  # never a traceback on the user's terminal
        return _sqlite_failure(e)
    raise e


def _output_broken(e: OSError) -> str | None:
    """Why the output could not be written, when `e` was raised by the write or flush of an echo
    (ours, cli/common.echo, or click's: the innermost frame of its traceback): a full disk or an
    I/O error under the command's output, not a crash of ours. None otherwise. The undelivered
    rest is dropped (common.drop_stdout), so the interpreter's last flush does not fail again."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code if tb is not None else None
    from . import common
    if code is None or code.co_name != "echo" or not (
            code.co_filename in (common.__file__, click.utils.__file__)):
        return None
    common.drop_stdout()
    return e.strerror or type(e).__name__


def _opened() -> str | None:
    from .common import OPENED
    return OPENED[-1] if OPENED else None


def _sqlite_failure(e: BaseException) -> int:
    """An SQLite failure (or undecodable stored text) no command handled: its coded line
    (attemptdb.store.sqlerrors), a schema someone edited, else the crash report."""
    apsw = sys.modules.get("apsw")
    if apsw is None:
        return _crash(e)
    if isinstance(e, apsw.SQLError):
        from .common import printable, schema_problem
        found = schema_problem()
        if found:
            click.echo(f"error[store.schema_changed]: {printable(found)}", err=True)
            return 2
    from ..store.sqlerrors import coded
    found = coded(e, _opened())
    if found is not None:
        click.echo(str(found), err=True)
        return found.exit_status
    return _crash(e)
