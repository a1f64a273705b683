"""`attempt query` and `attempt needs-you` without click. Importing click costs ~20 ms, about
as much as a small query's whole work on top of the interpreter's start-up (issue #19: every
benchmark statement at most 1.5× `attempt --version`), so the arguments of these two read
commands are parsed here by hand when they are plain, and the command bodies (cli/reads.py)
run directly.

Invariants:
- click stays the one definition of these commands (cli/query.py: options, help, messages).
  `parse_query` / `parse_needs_you` accept an argument list only when they can produce exactly
  the keyword arguments the click command would be called with (tests/test_cli_lean.py holds
  the two side by side); anything else returns None and click runs the command from the start:
  --help, an unknown, repeated or short-attached option (`-n5`), `--`, a value that starts with
  '-', a missing or extra argument, a value click would refuse (`-n 0`, `--engine duckdb`),
  `--engine datafusion`, `--from`, `--json` with `--csv`, and shell completion
  (_ATTEMPT_COMPLETE).
- What a command prints and its exit status are the click path's, byte for byte: the same
  bodies, common.echo (click.echo's output), an AttemptError's coded line, "aborted" after
  Ctrl-C as click reports it, a closed pipe as cli/main.py treats it; any other failure is
  handed to cli/main.failed (the crash report, SQLite errors), which imports click then.
"""

import os

QUERY_FLAGS = {"--json": "as_json", "--csv": "as_csv", "--evidence": "evidence", "--explain": "explain"}
QUERY_VALUES = {"-n": "limit", "--limit": "limit", "--engine": "engine", "--db": "db"}
LIMIT_RANGE = (1, 10_000_000)  # click.IntRange of `query --limit`
NEEDS_YOU_FLAGS = {"--json": "as_json", "--evidence": "evidence"}
NEEDS_YOU_VALUES = {"--project": "project", "--db": "db"}
DB_ENV = "ATTEMPTDB_PATH"  # the envvar of common.db_option


def scan(args, flags: dict, values: dict) -> tuple[dict, list] | None:
    """(options, positional arguments) of `args`, or None for anything not plain."""
    opts = {name: False for name in flags.values()}
    opts.update({name: None for name in values.values()})
    given, positional = set(), []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if not a.startswith("-"):
            positional.append(a)
            continue
        if a in flags:
            opts[flags[a]] = True
            continue
        if a in values:
            if i >= len(args):
                return None
            opt, value = a, args[i]
            i += 1
        elif a.startswith("--") and "=" in a:
            opt, _, value = a.partition("=")
            if opt not in values:
                return None
        else:
            return None
        name = values[opt]
        if name in given or value.startswith("-"):
            return None
        given.add(name)
        opts[name] = value
    return opts, positional


def _db(opts: dict) -> None:
    if opts["db"] is None:  # click reads the envvar when --db is absent; an empty value is unset
        opts["db"] = os.environ.get(DB_ENV) or None


def parse_query(args) -> dict | None:
    """`attempt query` ARGS → query_cmd's keyword arguments, or None (click's to parse)."""
    found = scan(args, QUERY_FLAGS, QUERY_VALUES)
    if found is None:
        return None
    opts, positional = found
    if len(positional) != 1 or (opts["as_json"] and opts["as_csv"]):
        return None
    if opts["engine"] not in (None, "sqlite"):
        return None
    opts["engine"] = "sqlite"
    if opts["limit"] is not None:
        try:
            limit = int(opts["limit"])  # as click.INT converts
        except ValueError:
            return None
        if not LIMIT_RANGE[0] <= limit <= LIMIT_RANGE[1]:
            return None
        opts["limit"] = limit
    _db(opts)
    return {"statement": positional[0], **opts, "from_dir": None}


def parse_needs_you(args) -> dict | None:
    """`attempt needs-you` ARGS → needs_you_cmd's keyword arguments, or None."""
    found = scan(args, NEEDS_YOU_FLAGS, NEEDS_YOU_VALUES)
    if found is None or found[1]:
        return None
    opts = found[0]
    _db(opts)
    return opts


PARSERS = {"query": parse_query, "needs-you": parse_needs_you}  # the commands cli.LEAN names


def run(args) -> int | None:
    """Run `attempt ARGS` when it is a plain `query` or `needs-you`: its exit status; None when
    click has to (nothing was printed or opened yet)."""
    parser = PARSERS.get(args[0]) if args else None
    if parser is None or os.environ.get("_ATTEMPT_COMPLETE"):
        return None
    kw = parser(list(args[1:]))
    if kw is None:
        return None
    from .common import OPENED, drop_stdout, echo
    OPENED.clear()  # this command's files only, as cli/main.run does
    try:
        from . import reads
        if args[0] == "query":
            reads.run_statement(kw["db"], kw["statement"], explain=kw["explain"], as_json=kw["as_json"],
                                as_csv=kw["as_csv"], evidence=kw["evidence"], limit=kw["limit"])
        else:
            reads.needs_you(**kw)
        return 0
    except BrokenPipeError:  # as cli/main.LazyGroup: the reader went away
        drop_stdout()
        return 0
    except (KeyboardInterrupt, EOFError):  # click.main: a blank line, then Abort → "aborted", 1
        echo(err=True)
        echo("aborted", err=True)
        return 1
    except BaseException as e:
        from ..errors import AttemptError
        if isinstance(e, AttemptError):  # as cli/main.failed, without loading click
            echo(str(e), err=True)
            return e.exit_status
        from .main import failed
        return failed(e)
