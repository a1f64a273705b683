"""`attempt export --dataset DIR`: thin layer over attemptdb.exchange.dataset."""


from .common import echo_json, printable, say


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
    shown = printable(directory)
    if m.get("unchanged"):
        say(f"dataset {shown}: nothing new since generation {m['generation']}", paths=(shown,))
        return
    rows = sum(f["rows"] for f in m["files"])
    from ..render.termtable import cols, plural, terminal_width
    # the snapshot key last, whole on its own line when one holds it; it is wider than 80 columns
    # (its parts but the HLC are on the line already), so a narrower terminal names it only
    snapshot = m["snapshot"]
    if snapshot and cols(snapshot) + 2 > terminal_width():
        snapshot = "written (its key: --json)"
    say(f"dataset {shown}: generation {m['generation']} of {m['device_id']}: "
        f"{plural(len(m['files']), 'new file')}, {plural(rows, 'row', grouped=True)}, events through source_seq "
        f"{m['events_through']:,}; content {'included' if m['content'] else 'left out (null)'}"
        f"{'; projections snapshot ' + snapshot if snapshot else ''}", paths=(shown,))
