"""`attempt export --dataset DIR`: thin layer over attemptdb.exchange.dataset."""

import click

from .common import echo_json, printable


def export_dataset(directory, include_content, db, as_json):
    from ..exchange import arrow_export as export_arrow
    from ..exchange import dataset
    from .stores import ensure_key, write_store
    export_arrow.require_pyarrow()
    st = write_store(db)  # the key's public half is recorded in the file on first use
    try:
        key, _ = ensure_key(st)
        m = dataset.export(st, directory, key, include_content=include_content)
    finally:
        st.close()
    if as_json:
        echo_json({"directory": directory, **m})
        return
    if m.get("unchanged"):
        click.echo(f"dataset {printable(directory)}: nothing new since generation {m['generation']}")
        return
    rows = sum(f["rows"] for f in m["files"])
    from ..render.termtable import plural
    click.echo(f"dataset {printable(directory)}: generation {m['generation']} of {m['device_id']}: "
               f"{plural(len(m['files']), 'new file')}, {plural(rows, 'row', grouped=True)} (events through source_seq "
               f"{m['events_through']:,}"
               f"{', projections snapshot ' + m['snapshot'] if m['snapshot'] else ''}); content "
               f"{'included' if m['content'] else 'left out (null)'}")
