"""Options and rendering shared by every command.

Invariants: every command takes `--db PATH` (env ATTEMPTDB_PATH); data goes to stdout,
messages to stderr; JSON on a terminal never carries a raw C1 or disguising character
(`json_text`); `NO_COLOR` (or a non-terminal) means no ANSI colour; errors are one coded
line, never a traceback. Exit statuses: 0 ok, 1 a problem found, 2 bad usage or malformed input.
Importing this module imports no click (cli/lean.py runs reads without it): the option
decorators below load click when a command module calls them, and `echo` prints what
`click.echo` would, byte for byte.
"""

import os
import sys

from ..errors import AttemptError
from ..errors import printable as printable  # the commands' one rule for terminal-safe text
from ..model import fastjson
from ..store import location


def db_option(f):
    """`--db PATH`: the database file (default: ATTEMPTDB_PATH, a trusted ./.attemptdb, or the
    per-user data directory)."""
    import click
    return click.option("--db", "db", metavar="PATH", envvar="ATTEMPTDB_PATH",
                        help="Database file (env ATTEMPTDB_PATH; default: nearest trusted "
                             ".attemptdb/attempt.db, else the per-user data directory).")(f)


def no_db_option(why: str):
    """`--db` on a command that opens no database: refused with the reason (exit 2), rather
    than click's bare "no such option". ATTEMPTDB_PATH is not read by these commands."""
    import click

    def refuse(ctx, param, value):
        if value is not None:
            raise AttemptError("usage.no_db", f"`attempt {ctx.command_path.split(' ', 1)[-1]}` takes no --db: {why}")
        return value
    return click.option("--db", "no_db", metavar="PATH", expose_value=False, callback=refuse, hidden=True,
                        is_eager=False)


def json_option(f):
    import click
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(f)


def db_path(db: str | None) -> str:
    """The database of this command; `--db ''` (a script's unset variable) is refused, never
    read as "the default": that would write to another history without a word."""
    if db is not None and not db.strip():
        raise AttemptError("usage.bad_value", "--db is empty: name a database file, or leave --db out "
                           "for the default")
    return location.resolve(db)


OPENED: list = []
"""Database paths this command opened: where `schema_problem` looks when SQLite fails."""


def open_store(db: str | None, *, readonly: bool = False, create: bool = False):
    """Open the database for a command (readers never create it)."""
    from ..store.database import Store
    path = db_path(db)
    OPENED.append(path)
    st = Store.open(path, create=create, readonly=readonly)
    return st


def schema_problem() -> str | None:
    """After an SQLite error in a command: the first way a file it opened differs from the
    schema AttemptDB wrote (someone edited a view or trigger), or None (then it is ours)."""
    from ..store import schema_integrity
    from ..store.database import Store
    for path in dict.fromkeys(OPENED):
        try:
            st = Store.open(path, create=False, readonly=True)
            try:
                found = schema_integrity.differences(st.conn, st.user_version())
            finally:
                st.close()
        except Exception:
            continue
        if found:
            return f"{path}: {schema_integrity.summary(found)}"
    return None


def use_color(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") is not None:
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def style(text: str, **kw) -> str:
    if not use_color():
        return text
    import click
    return click.style(text, **kw)


def say(text: str, *, err: bool = False, fg: str | None = None, paths=(), indent: str = "  ") -> None:
    """One message as terminal-safe lines that fit the terminal of its stream, broken at spaces
    only (termtable.prose: ids, `paths` and commands stay whole to copy), continuation lines
    under `indent` (two spaces; a message that is itself indented, one level deeper)."""
    import click

    from ..render import termtable
    width = termtable.terminal_width(sys.stderr if err else sys.stdout)
    lines = "\n".join(termtable.prose(printable(text), width, indent, whole=tuple(printable(p) for p in paths if p)))
    click.echo(style(lines, fg=fg) if fg else lines, err=err)


def echo(message: str = "", *, err: bool = False, nl: bool = True, whole: bool = False) -> None:
    """`click.echo(message, err=err, nl=nl)` without importing click for what it would print
    unchanged: text with no ESC (click strips ANSI codes when the stream is no terminal) to a
    UTF-8 text stream (click rewraps an ASCII-configured one) on a POSIX system (Windows
    consoles are click's). Anything else goes to click.echo itself. Flushed, as click does.
    `whole`: a machine format's data (`--csv`), ESC included: never stripped."""
    stream = sys.stderr if err else sys.stdout
    encoding = str(getattr(stream, "encoding", None) or "").lower().replace("_", "-")
    if (not isinstance(message, str) or ("\x1b" in message and not whole) or encoding not in ("utf-8", "utf8")
            or not getattr(stream, "errors", None) or sys.platform == "win32"):
        import click
        click.echo(message, err=err, nl=nl)
        return
    if nl:
        message += "\n"
    if message:
        stream.write(message)
    stream.flush()


def json_text(text: str) -> str:
    """JSON text as stdout gets it: on a terminal with C1 controls and disguising characters as
    \\u escapes (render/jsonterm, the rule of every `--json` and `--jsonl`), else unchanged."""
    from ..render import jsonterm
    return jsonterm.for_stream(text, sys.stdout)


def echo_json(obj) -> None:
    echo(json_text(fastjson.dumps(obj)))


def err(message: str) -> None:
    echo(message, err=True)


def drop_stdout() -> None:
    """The reader went away (`attempt events | head`): not a failure of ours. Send what is still
    buffered to /dev/null so the interpreter's last flush cannot fail either."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def fail(code: str, message: str, status: int = 2):
    raise AttemptError(code, message, exit_status=status)
