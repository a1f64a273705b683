"""Has the capture daemon's own code changed on disk since it started? A hook names the code it
runs (`hookclient.code_id`: the version and the package directory, one stat), and the daemon
answers `stale` when that is not its own, or when a file of the hook path changed under it —
so the hook itself never scans the package (~0.35 ms a tool call).

Invariant: `changed()` is True once any `.py` or `.sql` file of the folders the hook path runs
from (hookclient.code_folders) was written, created, removed or renamed after `CodeWatch`
began, or the stamp (hookclient.code_stamp: the newest mtime and the number of those files)
differs from the one taken when the daemon started. Linux: inotify, read without blocking on
each request (a change is queued by the kernel before the writer's call returns, so a request
that follows an edit sees it); elsewhere, or when inotify cannot be had: the stamp, recomputed
on each request.
"""

import os
import struct

from . import hookclient

# inotify(7)
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_Q_OVERFLOW, _IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_DELETE_SELF | _IN_MOVE_SELF)
_SELF = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_Q_OVERFLOW | _IN_IGNORED
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


class CodeWatch:
    def __init__(self):
        self.stamp = hookclient.code_stamp()
        self.fd = _inotify(hookclient.code_folders())
        self.seen = self.stamp != hookclient.code_stamp()  # changed while the watch was being set up

    def changed(self) -> bool:
        if self.seen:
            return True
        if self.fd is None:
            self.seen = hookclient.code_stamp() != self.stamp
            return self.seen
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return False
            except OSError:
                self.seen = True
                return True
            if not data:
                return False
            off = 0
            while off + _HEADER.size <= len(data):
                _wd, mask, _cookie, length = _HEADER.unpack_from(data, off)
                name = data[off + _HEADER.size:off + _HEADER.size + length].rstrip(b"\0")
                off += _HEADER.size + length
                if mask & _SELF or name.endswith((b".py", b".sql")):
                    self.seen = True
            if self.seen:
                return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _inotify(folders) -> int | None:
    """An inotify descriptor watching every existing folder of `folders`, or None."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return None
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    watched = 0
    for d in folders:
        if os.path.isdir(d):
            if libc.inotify_add_watch(fd, os.fsencode(d), _MASK) < 0:
                os.close(fd)
                return None
            watched += 1
    if not watched:
        os.close(fd)
        return None
    return fd
