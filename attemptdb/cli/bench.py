"""`attempt bench`: the performance harness (figures as medians and ratios against a baseline
measured in the same run). Thin layer over attemptdb.devtools.bench and attemptdb.devtools.bench_query."""

import click

from .common import echo_json, json_option, no_db_option, printable, say

_BENCH_NO_DB = no_db_option("the benchmarks build their own scratch databases in a temporary directory and never "
                            "open yours")


def _show(result: dict, as_json: bool):
    """The figures as `name  value` lines (names in one column, long values wrapped under
    their value) and each list of rows as a table fitted to the terminal, its widest text
    column (a statement) wrapped, never cut."""
    if as_json:
        echo_json(result)
        return
    from ..render import termtable
    width = termtable.terminal_width()
    keyw = max((len(k) for k, v in result.items() if not isinstance(v, list)), default=0) + 2
    for k, v in result.items():
        if isinstance(v, list):
            click.echo(f"{k}:")
            for line in _table(v, width - 2):
                click.echo(("  " + line).rstrip())
        else:
            text = printable(f"{k:<{keyw}}{'' if v is None else v}")
            click.echo("\n".join(termtable.prose(text, width, " " * keyw)))


def _table(rows: list, width: int) -> list[str]:
    """Rows (dicts) as a table of `width` columns; the widest column that is not numbers
    wraps (the point of the row: a statement), the others are fitted beside it."""
    from ..render import termtable
    if not rows or not all(isinstance(r, dict) for r in rows):
        return [printable(str(r)) for r in rows]
    headers = list(dict.fromkeys(h for r in rows for h in r))
    cells = [[printable("" if r.get(h) is None else str(r.get(h))) for h in headers] for r in rows]
    texts = [k for k, h in enumerate(headers) if not all(termtable.is_number(c[k]) or not c[k] for c in cells)]
    wrap = max(texts, key=lambda k: max(termtable.cols(c[k]) for c in cells), default=None)
    lines, hidden = termtable.fit(headers, cells, width, wrap=None if wrap is None else headers[wrap])
    return lines + termtable.hidden_note(hidden, width)


@click.group("bench")
def bench_group():
    """Measure capture, ingest, verify and query speed (medians; ratios against a baseline
    measured in the same run, because these machines are noisy)."""


@bench_group.command("ingest")
@_BENCH_NO_DB
@click.option("--events", type=click.IntRange(1, 100_000_000), default=100_000, show_default=True,
              help="Synthetic events to import.")
@click.option("--repeat", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="Runs of each side; medians are reported.")
@click.option("--seed", type=int, default=1, show_default=True, help="Generator seed.")
@json_option
def bench_ingest(events, repeat, seed, as_json):
    """`attempt import` of a synthetic stream into a fresh file vs a plain INSERT of the same
    rows into a bare table (events_per_s, baseline_rows_per_s, ratio)."""
    from ..devtools import bench
    _show(bench.ingest(events, seed=seed, repeat=repeat), as_json)


@bench_group.command("verify")
@_BENCH_NO_DB
@click.option("--events", type=click.IntRange(1, 100_000_000), default=100_000, show_default=True,
              help="Synthetic events to build and verify.")
@click.option("--repeat", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="Verifications; the median is reported.")
@click.option("--file", "db", type=click.Path(exists=True, dir_okay=False),
              help="Verify this existing database instead of a synthetic one.")
@json_option
def bench_verify(events, repeat, db, as_json):
    """Full verification rate (events_per_s) and its ratio to the same run's floor (floor_ratio:
    SHA-256 of the same canonical lines read from a file), with SQLite's integrity check and
    the chain each timed alone (integrity_seconds, chain_seconds, chain_floor_ratio)."""
    from ..devtools import bench
    _show(bench.verify_rate(events, repeat=repeat, db=db), as_json)


@bench_group.command("capture")
@_BENCH_NO_DB
@click.option("--runs", type=click.IntRange(2, 100_000), default=60, show_default=True,
              help="Captures (each a fresh process), interleaved with `python -c pass`.")
@json_option
def bench_capture(runs, as_json):
    """The installed hook command (`python -I -S …/__main__.py capture`) on a realistic 2-4 KB payload vs `python -c pass`
    (capture_p50_ms, capture_p95_ms, python_p50_ms, ratio_p50)."""
    from ..devtools import bench
    _show(bench.capture(runs), as_json)


@bench_group.command("query")
@_BENCH_NO_DB
@click.option("--events", type=click.IntRange(1, 100_000_000), default=1_450_000, show_default=True,
              help="Size of the synthetic history (the original's workload shape).")
@click.option("--reuse", type=click.Path(dir_okay=False),
              help="Keep the built history in FILE and reuse it when it exists.")
@click.option("--runs", type=click.IntRange(1, 100_000), default=5, show_default=True,
              help="Fresh processes per statement; medians are reported.")
@json_option
def bench_query(events, reuse, runs, as_json):
    """Each benchmark statement as a fresh process vs `attempt --version` (wall_ms, ratio,
    peak_rss_mb)."""
    from ..devtools import bench_query as bq
    _show(bq.run(events=events, reuse=reuse, runs=runs), as_json)


@bench_group.command("proof")
@_BENCH_NO_DB
@click.option("--events", type=click.IntRange(1, 100_000_000), default=1_450_000, show_default=True,
              help="Size of the synthetic history.")
@click.option("--reuse", type=click.Path(dir_okay=False),
              help="Keep the built history in FILE (its key in FILE.keys/) and reuse it when it exists.")
@click.option("--runs", type=click.IntRange(1, 100_000), default=21, show_default=True,
              help="Events proven (spread over the log); medians are reported.")
@json_option
def bench_proof(events, reuse, runs, as_json):
    """Proving one event: `prove` in process (p50/p95/max ms), `verify-proof` in process, and
    `attempt prove` as a fresh process vs `attempt --version`; plus the first signature of the
    history (every row verified, the Merkle tree head computed)."""
    from ..devtools import bench_proof as bp
    _show(bp.run(events=events, reuse=reuse, runs=runs), as_json)


@bench_group.command("faults")
@_BENCH_NO_DB
@click.option("--long", "long_form", is_flag=True, envvar="ATTEMPTDB_LONG",
              help="The long form (hundreds of kill -9 trials and I/O errors; env ATTEMPTDB_LONG=1).")
@click.option("--family", "families", multiple=True, metavar="NAME",
              help="Only these families: import, burst, daemon, reproject, bundle, transcripts, ioerr, "
                   "disk, readonly, damaged (repeatable).")
@click.option("--seed", type=int, default=14, show_default=True, help="Seed of the random moments and bytes.")
@json_option
def bench_faults(long_form, families, seed, as_json):
    """Break things on purpose and count what survives: kill -9 of every writing command, I/O
    errors injected below SQLite, a real full disk, read-only mounts, damaged files (the full
    disk and read-only families need root to mount). Prints the table of trials, faults,
    integrity_check and verify failures, acknowledged events lost and tracebacks; exit 1 when
    anything went wrong."""
    import sys

    from ..devtools import faultbench
    bad = [f for f in families if f not in faultbench.FAMILIES]
    if bad:
        raise click.BadParameter(f"unknown family {bad[0]}; one of {', '.join(faultbench.FAMILIES)}",
                                 param_hint="--family")

    def progress(t):  # on stderr, also with --json: a long form runs for an hour
        click.echo(f"{t.family}: {t.trials} trials, {t.faults} faults, {len(t.failures)} failure(s)"
                   + (f" (skipped: {t.extra['skipped']})" if t.extra.get("skipped") else ""), err=True)
    result = faultbench.run(long=long_form, families=list(families) or None, seed=seed, progress=progress)
    failures = [f"{t['family']}: {f}" for t in result["tallies"] for f in t["failures"]]
    if as_json:
        echo_json(result)
    else:
        click.echo(faultbench.table(result), nl=False)
        click.echo(f"{'long' if long_form else 'short'} form, seed {seed}, {result['seconds']} s")
        for f in failures[:40]:
            click.echo(f"failure: {f}")
        for t in result["tallies"]:  # a family whose every kill came too late proves nothing: say so
            if t["trials"] and not t["faults"] and not t.get("skipped"):
                say(f"note: {t['family']}: no fault was injected in {t['trials']} trials (each came after the "
                    "command had ended): its row proves nothing; `--long` or another `--seed` injects some",
                    err=True)
    sys.exit(1 if failures else 0)


@bench_group.command("sync")
@_BENCH_NO_DB
@click.option("--devices", type=click.IntRange(2, 1000), default=10, show_default=True,
              help="Simulated devices, each with its own file and key.")
@click.option("--events", type=click.IntRange(1, 100_000_000), default=150_000, show_default=True,
              help="Synthetic events each device records.")
@click.option("--new", "new", type=click.IntRange(1, 10_000_000), default=1_000, show_default=True,
              help="Events one device records before the incremental export.")
@click.option("--runs", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Runs of each query; medians are reported.")
@click.option("--keep", type=click.Path(file_okay=False), help="Build in this folder and keep it (files, dataset).")
@json_option
def bench_sync(devices, events, new, runs, keep, as_json):
    """Devices x events through `attempt sync` and `attempt export --dataset`: pull rate, the
    incremental export of --new events (only new files), and the catalog's GROUP BY recipe in
    DataFusion over the team dataset vs SQLite over the merged file."""
    from ..devtools import bench_sync
    _show(bench_sync.team(devices, events, new, runs=runs, keep=keep,
                          progress=lambda m: click.echo(m, err=True)), as_json)
