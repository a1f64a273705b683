"""`attempt export --format arrow|parquet DIR`: the public tables for DataFusion and friends."""

import click

from ..render.termtable import plural
from .common import db_option, echo_json, json_option, open_store, printable, say


@click.command("export")
@click.argument("directory", type=click.Path(file_okay=False), required=False)
@click.option("--dataset", "dataset_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Add this device's new files to the team dataset in DIR (hive-partitioned Parquet, "
                   "incremental, a signed manifest per device; see the README).")
@click.option("--format", "fmt", type=click.Choice(["parquet", "arrow"]), default="parquet", show_default=True,
              help="Parquet files, or Arrow IPC files (Feather v2).")
@click.option("--include-content", is_flag=True,
              help="Keep prompts, commands, outputs, raw payloads and notes (null by default).")
@click.option("--force", is_flag=True, help="Write into a directory that is not empty (the export's files are replaced).")
@db_option
@json_option
def export_cmd(directory, dataset_dir, fmt, include_content, force, db, as_json):
    """Write every public table to DIRECTORY as one file each, plus manifest.json.

    Read them with DataFusion (`attempt query --engine datafusion --from DIRECTORY "SELECT …"`),
    pyarrow, DuckDB or Spark. Content columns are null unless --include-content.
    """
    from ..exchange import arrow_export as export_arrow
    if dataset_dir is not None:
        if directory is not None or force or fmt != "parquet":
            raise click.UsageError("--dataset DIR takes no DIRECTORY, --force or --format (it is Parquet, "
                                   "and never replaces a file)")
        from .dataset_cmd import export_dataset
        export_dataset(dataset_dir, include_content, db, as_json)
        return
    if directory is None:
        raise click.UsageError("give DIRECTORY, or --dataset DIR")
    export_arrow.require_pyarrow()
    from .progress import Progress
    st = open_store(db, readonly=True)
    bar = Progress("exporting", unit="tables", quiet=as_json)
    try:
        m = export_arrow.export(st, directory, fmt, include_content=include_content, force=force,
                                progress=bar.update)
    finally:
        bar.close()
        st.close()
    if as_json:
        echo_json({"directory": directory, **m})
        return
    rows = sum(t["rows"] for t in m["tables"])
    shown = printable(directory)
    say(f"exported {plural(len(m['tables']), 'table')} ({plural(rows, 'row', grouped=True)}, chain size "
        f"{m['chain']['size']:,}) to {shown} as {fmt}; content {'included' if m['content'] else 'left out (null)'} "
        f"{bar.rate(rows, 'rows')}", paths=(shown,))
