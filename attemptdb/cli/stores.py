"""How a command opens the file: reads ingest the spool and sign a grown head first
(spec/checkpoint.md); writes are refused on a damaged file (attemptdb.integrity.damage)."""

import os

from ..errors import AttemptError
from .common import db_path, err, open_store, printable


def ensure_key(store):
    """(the key a command signs this file with, whether it was just made), recorded in the file.
    A key is made only for a file that never had one: a lost key (`keys.lost`) or another key
    in its place (`keys.mismatch`) is refused before anything is written
    (attemptdb.integrity.keys.signing_key)."""
    from ..integrity import keys
    key, created = keys.signing_key(store, create=True)
    keys.record(store, key)
    return key, created


def housekeeping(path: str, conn) -> None:
    """Before a read on a read-only connection `conn`: when the file's schema is older than this
    code's (an upgraded attemptdb reading a file no hook has written since: the statements it
    builds name the current tables), the spool holds events, or a checkpoint is due, open the
    file for writing just long enough to migrate, ingest and sign (spec/checkpoint.md). Nothing
    to do costs a directory listing and three indexed reads; any failure (read-only file, lock)
    leaves the read to go on."""
    from ..capture import spool
    from ..integrity import checkpoint
    from ..store import schema
    try:
        spool.prepare()
        older = conn.execute("PRAGMA user_version").fetchone()[0] < schema.latest()
        if not (older or spool.pending(path) or checkpoint.signable(conn)):
            return
        from ..store.database import Store
        st = Store.open(path, create=False)
        try:
            if writable(st, path):
                spool.drain(st)
                sign_head(st)
        finally:
            st.close()
    except Exception:
        pass


def sign_head(st) -> None:
    """checkpoint.maybe_checkpoint(st), its `note: no checkpoint signed: error[…]` (a lost or
    wrong key, a chain that does not verify: several sentences, a key path) printed wrapped to
    the terminal's width at spaces, never inside an id or a path (termtable.prose)."""
    import sys

    from ..integrity import checkpoint
    from ..render import termtable

    def say(note: str) -> None:
        err("\n".join(termtable.prose(note, termtable.terminal_width(sys.stderr), "  ")))
    checkpoint.maybe_checkpoint(st, say=say)


def writable(st, path: str) -> bool:
    """Nothing is drained into or signed on a damaged file (attemptdb.integrity.damage): say so."""
    from ..integrity import damage
    why = damage.refusal(st, path)
    if why is not None:
        err(printable(f"note: nothing was written to {path}: it is damaged ({why}); {damage.ADVICE}"))
        return False
    return True


def checkpoint_after_import(st) -> None:
    """An import that appended events signs the new head before it returns
    (spec/checkpoint.md); the events are stored whatever happens to the signature."""
    try:
        sign_head(st)
    except Exception:
        pass


def write_store(db, *, create=False, read=False):
    """Open the database for a command that appends (imports, corrections, checkpoints):
    refused with `error[store.damaged]` when the file is damaged (attemptdb.integrity.damage), since
    nothing may be written to it. `read`: a read_store (spool drained, head signed) first. A file
    this call creates gets its device's signing key (ensure_key), so what is written is signed."""
    from ..integrity import damage
    new = create and not read and not os.path.exists(db_path(db))
    st = read_store(db) if read else open_store(db, create=create)
    if new:  # a command that makes the file makes its device's key too, as `attempt init` does
        try:
            ensure_key(st)
        except BaseException:
            st.close()
            raise
    why = None if st.readonly else damage.refusal(st, st.path)
    if why is not None:
        st.close()
        raise AttemptError("store.damaged", f"{st.path} is damaged ({why}); nothing was written: "
                           f"{damage.ADVICE}", exit_status=1)
    return st


def read_store(db, *, readonly=False, sign=True, key=False):
    """Open the database for a read command: ingest the spool first, and sign the new head
    when the chain grew (spec/checkpoint.md; `sign=False` for repair tools, which must not
    vouch for a file they are about to judge). Never creates the database. `key`: the command
    signs with the file's key next (`bundle export`, `prove`): a lost or wrong key
    (keys.signing_key) is its error, raised here, once, not also a note that no checkpoint
    was signed."""
    from ..capture import spool
    try:
        st = open_store(db, readonly=readonly)
    except AttemptError as e:  # a full disk still reads (nothing is drained or signed)
        if e.code != "store.disk_full" or readonly:
            raise
        st = open_store(db, readonly=True)
    if not st.readonly and writable(st, st.path):
        spool.prepare()
        try:
            spool.drain(st)
        except Exception:
            pass
        if key:
            from ..integrity import keys
            try:
                keys.signing_key(st)
            except BaseException:
                st.close()
                raise
        if sign:
            sign_head(st)
    return st
