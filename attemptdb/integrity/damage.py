"""A database file known to be damaged, and the check a writer makes before appending to it.

A file is *damaged* when SQLite reports it malformed (a page it cannot read, a file that is no
longer a database), or when it no longer extends the device's last signed checkpoint, the copy
kept beside the key (rolled back, its `-wal` lost, rows removed). Appending to such a file
would write into pages SQLite cannot read, or put new rows where signed ones were: so nothing
is written to it. Whoever notices (a capture, the daemon, `verify`, any command SQLite fails
on) leaves a *mark* in the state directory naming the file by device and inode, so a recovered
file moved into its place is not taken for it. Captures then spool instead of writing, reads do
not drain the spool into it, and `status`, `doctor` and `verify` say what is wrong and what to
do (`attempt recover`, spec/recover.md).

`refusal(store, path)` is the writer's check: the mark, then the signed head (the outside
checkpoint's size and head read as text, no signature check: that is `verify`'s job) against
the file. It costs a stat, a small file read and one indexed lookup.
Only os and C modules: the hook path runs it.
"""

import os

MARK_DIR = "damaged"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
ADVICE = ("captures wait in the spool; `attempt verify` says what is wrong, `attempt recover` rebuilds "
          "a sound copy (spec/recover.md)")


def _tag(db_path: str) -> str:
    from ..model.ids import sha256
    return sha256(os.path.abspath(db_path).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def mark_path(db_path: str) -> str:
    from ..store import location
    return os.path.join(location.state_dir(), MARK_DIR, _tag(db_path))


def _file_id(db_path: str):
    try:
        st = os.stat(db_path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def mark(db_path: str, what: str, by: str) -> bool:
    """Record that the file at `db_path` (as it is now: device and inode) is damaged. Best
    effort (a full or read-only state directory keeps no mark); True when written."""
    fid = _file_id(db_path)
    if fid is None:
        return False
    from ..model import clock, fastjson
    path = mark_path(db_path)
    tmp = f"{path}.{os.getpid()}.tmp"
    body = fastjson.dumps({"db": os.path.abspath(db_path), "dev": fid[0], "ino": fid[1],
                           "at": clock.iso(clock.now_us()), "by": by, "what": what[:300]})
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
        try:
            os.write(fd, body.encode("utf-8", "replace") + b"\n")
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def marked(db_path: str) -> dict | None:
    """The mark of the file now at `db_path` ({db, at, by, what}), or None. A mark left for
    another file at that path (a recovered file moved into place) is removed."""
    path = mark_path(db_path)
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    from ..model import fastjson
    try:
        m = fastjson.loads(data.decode("utf-8"))
        same = (m["dev"], m["ino"]) == _file_id(db_path)
    except (ValueError, KeyError, TypeError):
        same = False
        m = None
    if not same:
        clear(db_path)
        return None
    return m


def clear(db_path: str) -> None:
    try:
        os.unlink(mark_path(db_path))
    except OSError:
        pass


def is_corruption(e: BaseException) -> bool:
    """SQLite says the file itself is malformed (not locked, full or read-only)."""
    import apsw
    return isinstance(e, (apsw.CorruptError, apsw.NotADBError))


def _outside_head(device_id: str):
    """(size, head hex) of the checkpoint kept beside the key, read as text; None if none or
    unreadable (verify reports an unreadable one)."""
    from ..store import location, plainfile
    try:  # a named pipe there must not hang a hook (it is no checkpoint: None)
        fd = plainfile.open_regular(os.path.join(location.key_dir(), f"{device_id}.checkpoint"))
    except OSError:
        return None
    try:
        text = os.read(fd, 65536).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = text.split("\n")
    try:
        import binascii
        return int(lines[1]), binascii.a2b_base64(lines[2].encode("ascii")).hex()
    except (IndexError, ValueError, binascii.Error, UnicodeEncodeError):
        return None


def behind_signed(store) -> str | None:
    """Why the file does not extend the device's last signed checkpoint, or None when it does
    (or there is none). A row the signed size names that a recovery declared lost is no
    reason (spec/recover.md)."""
    got = _outside_head(store.device_id)
    if got is None:
        return None
    size, head = got
    if size <= 0:
        return None
    row = store.conn.execute("SELECT chain_hash FROM events WHERE seq = ?", (size,)).fetchone()
    if row is not None and row[0] == head:
        return None
    from . import recovery
    if row is None and recovery.declared_lost(store.conn, size):
        return None
    if row is None:
        top = store.conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
        if top < size:
            return (f"the file ends at seq={top} but the device signed {size} rows: its newest rows are "
                    "gone (the file was rolled back or its -wal lost)")
        return f"row seq={size}, which the device signed, is missing"
    return f"row seq={size} is not the row the device signed: the file was rolled back or rewritten"


def refusal(store, db_path: str) -> str | None:
    """Why nothing may be written to this open file now (a mark, or a chain behind the signed
    head, which is then marked), or None. Never raises. When it is damaged, closing `store`
    writes nothing into it either (SQLite would fold its -wal in: evidence for `attempt
    recover`, maybe another database's pages)."""
    why = _refusal(store, db_path)
    if why is not None:
        _keep_untouched(store)
    return why


def _keep_untouched(store) -> None:
    try:
        store.keep_untouched()
    except Exception:  # a store of another shape, or a connection already closed
        pass


def _refusal(store, db_path: str) -> str | None:
    try:
        m = marked(db_path)
        if m is not None:
            return f"{m.get('what')}, found by {m.get('by')} at {m.get('at')}"
        why = behind_signed(store)
    except Exception as e:  # a read that fails here fails the append too: let it say why
        if is_corruption(e):
            what = "SQLite reports the file malformed"
            mark(db_path, what, "capture")
            return what
        return None
    if why is not None:
        mark(db_path, why, "capture")
    return why
