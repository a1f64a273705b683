"""`attempt sync DIR` and `attempt keys trust | list | revoke`: thin layers over attemptdb.sync."""

import sys

import click

from ..errors import AttemptError
from ..render.termtable import plural
from .common import db_option, echo_json, json_option, printable, say


@click.command("sync")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--include-content", is_flag=True,
              help="Publish prompts, commands, outputs and raw payloads too (left out by default).")
@click.option("--push-only", is_flag=True, help="Only append this device's new segments.")
@click.option("--pull-only", is_flag=True, help="Only verify and import the other devices' segments.")
@db_option
@json_option
def sync_cmd(folder, include_content, push_only, pull_only, db, as_json):
    """Sync through a shared FOLDER (a git repository, a network drive, a synced folder).

    This device appends its own new events as immutable, signed segments under
    FOLDER/dev_<its id>/ and never writes anywhere else; every other device's new segments are
    verified (signature, pinned key, chain, no gaps) before anything of them is imported. The
    first key seen for a device is pinned (see `attempt keys list`). Exit 1 when a segment was
    refused (the others are still imported).
    """
    if push_only and pull_only:
        raise click.UsageError("--push-only and --pull-only are exclusive")
    from ..sync import folder as sync_folder
    from .stores import checkpoint_after_import, ensure_key, write_store
    st = write_store(db, create=True)
    try:
        key, _ = ensure_key(st)
        rep = sync_folder.sync(st, folder, key, include_content=include_content, push_only=push_only,
                               pull_only=pull_only)
        if rep.imported:
            checkpoint_after_import(st)
    finally:
        st.close()
    if as_json:
        echo_json(rep.as_dict())
    else:
        pulled = sum(d["segments"] for d in rep.devices.values())
        shown = printable(folder)
        say(f"sync {shown}: pushed {plural(rep.pushed_events, 'event', grouped=True)} in "
             f"{plural(rep.pushed_segments, 'segment')}; pulled {plural(pulled, 'segment')} from "
             f"{plural(len(rep.devices), 'device')}, {plural(rep.imported, 'new event', grouped=True)}", paths=(shown,))
        for p in rep.problems:
            say(f"problem[{p.code}]: {p.message}", fg="red", paths=(shown,))
        for n in rep.notes:
            say(f"note: {n}", err=True, paths=(shown,))
    sys.exit(0 if rep.ok else 1)


def _in_transaction(st, write) -> None:
    """`write(conn)` in one immediate transaction on the store `st`: committed, or rolled back
    and raised."""
    st.conn.execute("BEGIN IMMEDIATE")
    try:
        write(st.conn)
        st.conn.execute("COMMIT")
    except BaseException:
        st.conn.execute("ROLLBACK")
        raise


def _device(text: str, known=None) -> str:
    """DEVICE as written: a device id (dev_<uuid>, or the bare uuid), or, given the `known`
    devices of the file (pinned or synced from), the start of one of their ids, as the short
    form `attempt keys list` prints; anything else, or a start several share, keys.bad_device."""
    from ..model import ids
    bare = (text[4:] if text.startswith("dev_") else text).lower()
    if ids.is_uuid(bare):
        return "dev_" + bare
    if known is not None and _short_shaped(bare):
        hits = [d for d in known if d.startswith("dev_" + bare)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise AttemptError("keys.bad_device", f"DEVICE is a device id (dev_<uuid>); dev_{printable(bare)} "
                               f"starts {len(hits)} devices' ids: give more of it")
    raise AttemptError("keys.bad_device", "DEVICE is a device id (dev_<uuid>), or the short form "
                       "`attempt keys list` prints of a device it lists")


def _whole_device(text: str) -> str | None:
    """DEVICE checked before the file is opened: its id when written whole, None when it can be
    a short form (`_device` resolves it with the file's devices), else keys.bad_device."""
    bare = (text[4:] if text.startswith("dev_") else text).lower()
    try:
        return _device(text)
    except AttemptError:
        if _short_shaped(bare):
            return None
        raise


def _short_shaped(bare: str) -> bool:
    """The start of a uuid that a short device id can be: 8 hex digits at least."""
    from ..model import ids
    return (len(bare) >= ids.MIN_SHORT_HEX and all(c in "0123456789abcdef-" for c in bare)
            and all(c != "-" for c in bare[:8]))


def _known_devices(conn) -> list[str]:
    """The other devices this file knows: pinned, revoked or synced from (keys list's rows)."""
    from ..integrity import sync_state as state
    return [r["device_id"] for r in state.summary(conn)]


def _short_devices(devices: list[str]) -> dict:
    """{device id: its shortest start, dev_ and 8 hex digits at least and never ending on a
    hyphen, that no other of `devices` starts with} (what `_device` resolves back)."""
    from ..model import ids
    out = {}
    for d in devices:
        n = len("dev_") + ids.MIN_SHORT_HEX
        while n < len(d) and (d[n - 1] == "-" or any(o != d and o.startswith(d[:n]) for o in devices)):
            n += 1
        out[d] = d[:n]
    return out


@click.command("trust")
@click.argument("device")
@click.argument("key")
@db_option
@json_option
def keys_trust(device, key, db, as_json):
    """Pin KEY (an id_ fingerprint or a base64 Ed25519 public key) for another DEVICE: its sync
    segments must be signed by it from now on (replaces a pin, lifts a revocation)."""
    from ..integrity import keys
    from ..integrity import sync_state as state
    from .stores import write_store
    dev = _whole_device(device)  # None: a short form, resolved against the file's devices below
    key_id, public = keys.parse_pin(key)
    st = write_store(db, create=True)
    try:
        dev = dev or _device(device, _known_devices(st.conn))
        if dev == "dev_" + st.device_id:
            raise AttemptError("keys.own_device", "that is this device: its own key is `attempt keys show`")
        _in_transaction(st, lambda c: (state.ensure(c), state.pin(c, dev, key_id, public, "trusted")))
    finally:
        st.close()
    if as_json:
        echo_json({"device_id": dev, "key_id": key_id, "how": "trusted"})
    else:
        click.echo(f"pinned {key_id} for {dev}")


@click.command("list")
@db_option
@json_option
def keys_list(db, as_json):
    """The other devices' pinned keys, and what was synced from each."""
    from ..integrity import sync_state as state
    from .common import open_store
    st = open_store(db, readonly=True)
    try:
        rows = state.summary(st.conn)
    finally:
        st.close()
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("no other device is pinned yet (`attempt sync DIR` pins each on first use)")
        return
    from ..render import termtable
    headers = ["device", "key", "pin", "segments", "events"]
    table = [[r["device_id"], r["key_id"] or "-", "REVOKED" if r["revoked"] else (r["how"] or "-"),
              f"{r['segments']:,}", f"{r['events'] or 0:,}"] for r in rows]
    table = [[printable(v) for v in row] for row in table]
    width = termtable.terminal_width()
    # ids are never cut: a device id too wide is its short form (`keys trust`/`revoke` take it
    # back), then the counts give way, then the pin state; the key, what the command is for,
    # stays (a revocation a left-out pin state would hide is named below the table)
    shorts = {k: printable(v) for k, v in _short_devices([r["device_id"] for r in rows]).items()}
    lines, hidden = termtable.fit(headers, table, width, shorten=shorts, drop_order=["events", "segments", "pin"])
    click.echo("\n".join(lines + termtable.hidden_note(hidden, width)))
    revoked = [shorts.get(r["device_id"], r["device_id"]) for r in rows if r["revoked"]]
    if "pin" in hidden and revoked:
        say(f"REVOKED: {', '.join(revoked)}", fg="red")


@click.command("revoke")
@click.argument("device")
@db_option
@json_option
def keys_revoke(device, db, as_json):
    """Stop trusting DEVICE's pinned key: its segments are refused until `attempt keys trust`
    pins another. What was imported stays (verify keeps checking it against its signatures).
    A DEVICE with no pinned key is bad usage (exit 2): there is nothing to revoke, and saying
    ok would claim its segments are refused when its first sync would pin its key."""
    from ..integrity import sync_state as state
    from .stores import write_store
    dev = _whole_device(device)
    st = write_store(db)
    try:
        dev = dev or _device(device, _known_devices(st.conn))
        _in_transaction(st, lambda c: state.revoke(c, dev))
    except AttemptError as e:
        if e.code != "keys.not_pinned":
            raise
        raise AttemptError("usage.bad_value", f"DEVICE {dev}: no key is pinned for it, so there is nothing "
                           "to revoke (`attempt keys list` shows the pinned devices; `attempt keys trust` pins "
                           "one before its first sync)") from None
    finally:
        st.close()
    if as_json:
        echo_json({"device_id": dev, "revoked": True})
    else:
        click.echo(f"revoked the key pinned for {dev}")
