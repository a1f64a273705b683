"""`attempt recover`: rebuild a sound file from a damaged one (spec/recover.md). Thin layer
over attemptdb.integrity.recover."""

import sys

import click

from ..model import clock
from .common import db_option, db_path, echo_json, json_option, say


@click.command("recover")
@click.option("--out", "out", metavar="PATH",
              help="The new file (must not exist; default: <database>.recovered-<UTC time>).")
@db_option
@json_option
def recover_cmd(out, db, as_json):
    """Build a new database from a damaged one: every event that still verifies, at its own
    place in the chain (nothing re-chained), the projections rebuilt, and a report of what was
    lost by seq range. The damaged file is only read (from a copy), never changed; put the new
    file in its place yourself (the report says how). Exit 1 when the new file does not verify."""
    from ..integrity import recover
    src = db_path(db)
    if out is None:
        stamp = clock.iso(clock.now_us())[:19].replace("-", "").replace(":", "")
        out = f"{src}.recovered-{stamp}"
    rep = recover.recover(src, out)
    d = rep.as_dict()
    if as_json:
        echo_json(d)
    else:
        say(f"recovered {rep.kept:,} events into {rep.out} ({rep.from_sqlite:,} read through "
            f"SQLite, {rep.from_pages:,} from the pages of the damaged file)", paths=(rep.out,))
        if rep.lost:
            from ..render.termtable import plural
            click.echo(f"lost {plural(rep.lost_rows(), 'row', grouped=True)}:")
            for r in rep.lost:
                span = f"seq {r['from']}" if r["from"] == r["to"] else f"seq {r['from']}..{r['to']}"
                say(f"  {span}: {r['why']}", indent="    ")
        else:
            click.echo("lost nothing: every row of the chain verifies")
        if rep.repaired_links:
            say(f"{rep.repaired_links} damaged chain column(s) restored from the link the next row was "
                "written after")
        for n in rep.notes:
            say(f"note: {n}", paths=(src, rep.out))
        say(f"verify: {rep.verify_line}", fg="green" if rep.verify_ok else "red")
        q = lambda p: "'" + p.replace("'", "'\\''") + "'"  # noqa: E731
        # the paths are the database's (a directory name can hold anything): each line through the
        # commands' rule (say), so no control character in them reaches the terminal; one command
        # a line, its quoted paths whole
        click.echo("to use it (stop the agents first; the damaged file is kept beside it):")
        moves = [f"attempt daemon stop --db {q(src)}", f"mv {q(src)} {q(src + '.damaged')}",
                 f"mv {q(src + '-wal')} {q(src + '.damaged-wal')} 2>/dev/null", f"rm -f {q(src + '-shm')}",
                 f"mv {q(rep.out)} {q(src)}"]
        paths = [q(p) for p in (src, src + ".damaged", src + "-wal", src + ".damaged-wal", src + "-shm", rep.out)]
        for cmd in moves:
            say(f"  {cmd}", paths=paths, indent="    ")
    sys.exit(0 if rep.verify_ok else 1)
