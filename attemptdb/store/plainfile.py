"""Opening a file that has to be a regular file (a device key, the checkpoint copy beside it, a
sync segment, a bundle): hostile paths (DESIGN.md invariant 8).

Invariant: `open_regular` never blocks (a named pipe nothing writes to opens at once, with
O_NONBLOCK, which a regular file ignores) and returns a descriptor only of a regular file,
judged by `fstat` of what was opened, not by the path; anything else is `NotRegular`.
"""

import errno
import os
import stat


class NotRegular(OSError):
    """The path names a pipe, a folder, a device: `strerror` is "not a regular file"."""

    def __init__(self):
        super().__init__(errno.EINVAL, "not a regular file")


def open_regular(path: str, *, follow_links: bool = False) -> int:
    """A read-only descriptor of the regular file at `path` (close-on-exec; a final symlink is
    refused unless `follow_links`). OSError as os.open raises it, or NotRegular."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise NotRegular()
    return fd
