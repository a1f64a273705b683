"""Opening a file that has to be a regular file (a device key, the checkpoint copy beside it, a
sync segment, a bundle) or a folder that has to be a real directory (a device's folder in a
sync folder): hostile paths (DESIGN.md invariant 8).

Invariants:
- `open_regular` never blocks (a named pipe nothing writes to opens at once, with O_NONBLOCK,
  which a regular file ignores) and returns a descriptor only of a regular file, judged by
  `fstat` of what was opened, not by the path; anything else is `NotRegular`.
- `open_directory` returns a descriptor only of a directory that its last path component names
  itself (O_DIRECTORY | O_NOFOLLOW): a symlink, even to a directory, is `NotDirectory`. Files
  opened relative to that descriptor (`dir_fd`) stay inside the directory that was opened,
  whatever is renamed or swapped for a symlink under its name afterwards.
"""

import errno
import os
import stat

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class NotRegular(OSError):
    """The path names a pipe, a folder, a device: `strerror` is "not a regular file"."""

    def __init__(self):
        super().__init__(errno.EINVAL, "not a regular file")


class NotDirectory(OSError):
    """The path names a symlink, a file, a pipe: `strerror` is "not a directory"."""

    def __init__(self):
        super().__init__(errno.ENOTDIR, "not a directory")


def open_regular(path: str, *, follow_links: bool = False, dir_fd: int | None = None) -> int:
    """A read-only descriptor of the regular file at `path` (relative to the directory
    descriptor `dir_fd` when given; close-on-exec; a final symlink is refused unless
    `follow_links`). OSError as os.open raises it, or NotRegular."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
    if not follow_links:
        flags |= _NOFOLLOW
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise NotRegular()
    return fd


def open_directory(path: str, *, dir_fd: int | None = None, follow_links: bool = False) -> int:
    """A read-only descriptor of the directory at `path` (relative to `dir_fd` when given;
    close-on-exec; a final symlink is refused unless `follow_links`: the user's own path to a
    folder may be one). OSError as os.open raises it (FileNotFoundError: nothing there), or
    NotDirectory for a symlink or anything that is not a directory."""
    flags = os.O_RDONLY | _DIRECTORY | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
    if not follow_links:
        flags |= _NOFOLLOW
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ELOOP):  # Linux: ENOTDIR for a symlink too; BSDs: ELOOP
            raise NotDirectory() from None
        raise
    try:
        directory = stat.S_ISDIR(os.fstat(fd).st_mode)  # without O_DIRECTORY (not on every system)
    except OSError:
        os.close(fd)
        raise
    if not directory:
        os.close(fd)
        raise NotDirectory()
    return fd
