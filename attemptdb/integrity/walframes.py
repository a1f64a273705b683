"""The committed pages of a `-wal` laid into a copy of its database file (SQLite's WAL format),
for `attempt recover` of a file truncated to nothing beside its -wal: SQLite deletes such a
-wal when it opens the file, so its pages are read here instead.

Invariants: only a copy is written (never the damaged file or its -wal); a frame counts only
when its salts are the -wal header's and a commit frame with those salts follows it (a
transaction that never committed, or frames of an earlier -wal generation, are left out); for
each page the newest such frame wins, as SQLite reads it. The frames' checksums are not
recomputed: every row taken from these pages is still kept only when it verifies and links
(recover's rule), so a torn frame costs its rows, never a wrong row.
"""

import mmap
import os
import struct

HEADER = 32
FRAME_HEADER = 24
MAGICS = (0x377F0682, 0x377F0683)


def committed_pages(wal) -> tuple[int, dict]:
    """(page size, {page number: offset of its newest committed frame's page in `wal`}, bytes or
    a memory map); (0, {}) for bytes that are not a -wal SQLite wrote."""
    if len(wal) < HEADER:
        return 0, {}
    magic, _version, size, _ckpt, salt1, salt2 = struct.unpack_from(">6I", wal, 0)
    if magic not in MAGICS or size < 512 or size > 65536 or size & (size - 1):
        return 0, {}
    pages, pending = {}, {}
    off = HEADER
    while off + FRAME_HEADER + size <= len(wal):
        pgno, commit, s1, s2 = struct.unpack_from(">4I", wal, off)
        if (s1, s2) != (salt1, salt2) or pgno == 0:
            break  # the end of this generation's frames
        pending[pgno] = off + FRAME_HEADER
        if commit:
            pages.update(pending)
            pending = {}
        off += FRAME_HEADER + size
    return size, pages


def lay_into(copy: str) -> int:
    """The committed pages of `copy`-wal written into `copy` at their places, then the -wal
    copy removed (its pages are in the file now, and SQLite would delete it anyway); the number
    of pages laid. A -wal that holds none is left as it is."""
    with open(copy + "-wal", "rb") as w:
        if os.fstat(w.fileno()).st_size < HEADER:
            return 0
        with mmap.mmap(w.fileno(), 0, access=mmap.ACCESS_READ) as wal:  # a -wal may be hundreds of MB
            size, pages = committed_pages(wal)
            if not pages:
                return 0
            with open(copy, "r+b") as f:
                for pgno in sorted(pages):
                    f.seek((pgno - 1) * size)
                    f.write(wal[pages[pgno]:pages[pgno] + size])
    os.remove(copy + "-wal")
    return len(pages)
