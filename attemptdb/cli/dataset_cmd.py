"""`attempt export --dataset DIR`: thin layer over attemptdb.exchange.dataset; and how a line
names a snapshot key it cannot hold (`attempt query --engine datafusion --from DIR`'s note)."""


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


def fit_snapshot_keys(text: str, width: int) -> str:
    """`text` (prose: a note) with each snapshot key in it told as `generation N of dev_…` when
    a line of `width` columns, indented by two as wrapped prose is, cannot hold it whole. A key
    is at least 81 characters, so an 80-column terminal never can: it is not printed past the
    line but named, and `--json` prints it whole (as `attempt export --dataset` does)."""
    from ..exchange import dataset
    from ..render.termtable import cols

    def told(found):
        key = found.group(0)
        if cols(key) + 2 <= width:
            return key
        _, _, device, generation = key.split("/")
        return f"generation {int(generation)} of {device} (its key: --json)"
    return dataset.SNAPSHOT_KEY.sub(told, text)
