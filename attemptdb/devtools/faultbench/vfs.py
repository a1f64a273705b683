"""A SQLite VFS that fails on purpose: the Nth read, write, sync or lock of one database's
files returns EIO, ENOSPC or EACCES as SQLite's own error codes (or a read comes back short),
once or from then on. It wraps the default `unix` VFS through apsw's VFS classes and is made
the process default only for the length of a trial (`FaultVFS.installed()`), so the product
code runs unchanged: nothing in attemptdb reads a flag to fail.

Used by attemptdb.devtools.faultbench (`attempt bench faults`) and tests/faults; never by a command.
"""

import contextlib

import apsw

OPS = ("read", "write", "sync", "lock")
ERRORS = ("EIO", "ENOSPC", "EACCES", "short")

_CODES = {
    ("read", "EIO"): apsw.SQLITE_IOERR_READ, ("read", "ENOSPC"): apsw.SQLITE_IOERR_READ,
    ("read", "EACCES"): apsw.SQLITE_IOERR_READ,
    ("write", "EIO"): apsw.SQLITE_IOERR_WRITE, ("write", "ENOSPC"): apsw.SQLITE_FULL,
    ("write", "EACCES"): apsw.SQLITE_IOERR_WRITE,
    ("sync", "EIO"): apsw.SQLITE_IOERR_FSYNC, ("sync", "ENOSPC"): apsw.SQLITE_FULL,
    ("sync", "EACCES"): apsw.SQLITE_IOERR_FSYNC,
    ("lock", "EIO"): apsw.SQLITE_IOERR_LOCK, ("lock", "ENOSPC"): apsw.SQLITE_IOERR_LOCK,
    ("lock", "EACCES"): apsw.SQLITE_BUSY,
}


class Fault:
    """Fail the `nth` call of `op` (1-based) on files whose name starts with `prefix`, with
    `error`; `persist`: every later call of that op fails too (a disk gone bad)."""

    def __init__(self, op: str, nth: int, error: str = "EIO", persist: bool = False):
        if op not in OPS or error not in ERRORS or (error == "short" and op != "read"):
            raise ValueError(f"no such fault: {op} {error}")
        self.op, self.nth, self.error, self.persist = op, nth, error, persist
        self.fired = 0

    def __repr__(self):
        return f"Fault({self.op} #{self.nth} {self.error}{' persist' if self.persist else ''})"


class FaultVFS(apsw.VFS):
    NAME = "attemptdb-faults"

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.fault = None
        self.counts = dict.fromkeys(OPS, 0)
        super().__init__(self.NAME, "unix", makedefault=True)

    def xOpen(self, name, flags):
        return _File(self, name, flags)

    def arm(self, fault: Fault | None):
        self.fault = fault
        self.counts = dict.fromkeys(OPS, 0)

    def hit(self, op: str, path: str):
        """Count one call; raise when the armed fault says so (True: short read)."""
        if not path or not path.startswith(self.prefix):
            return False
        self.counts[op] += 1
        f = self.fault
        if f is None or f.op != op:
            return False
        n = self.counts[op]
        if n == f.nth or (f.persist and n > f.nth):
            f.fired += 1
            if f.error == "short":
                return True
            raise apsw.exception_for(_CODES[(op, f.error)])
        return False

    @classmethod
    @contextlib.contextmanager
    def installed(cls, prefix: str):
        """The VFS as the process default for the block. An error this VFS raises where SQLite
        cannot return it (a close-time checkpoint when a connection is freed) would reach
        `sys.unraisablehook` as a Python traceback, which a real disk's error never does: it is
        counted in `unraisable` instead of printed."""
        import sys
        vfs = cls(prefix)
        vfs.unraisable = 0
        old = sys.unraisablehook

        def hook(info):
            if isinstance(info.exc_value, apsw.Error):
                vfs.unraisable += 1
            else:
                old(info)
        sys.unraisablehook = hook
        try:
            yield vfs
        finally:
            vfs.arm(None)
            vfs.unregister()
            sys.unraisablehook = old


class _File(apsw.VFSFile):
    def __init__(self, vfs: FaultVFS, name, flags):
        self._vfs = vfs
        try:
            self._path = name.filename() if hasattr(name, "filename") else (name or "")
        except Exception:
            self._path = ""
        super().__init__("unix", name, flags)

    def xRead(self, amount, offset):
        short = self._vfs.hit("read", self._path)
        data = super().xRead(amount, offset)
        if short:
            return data[:max(0, len(data) // 2 - 1)]  # apsw zero-fills it and says SHORT_READ
        return data

    def xWrite(self, data, offset):
        self._vfs.hit("write", self._path)
        return super().xWrite(data, offset)

    def xSync(self, flags):
        self._vfs.hit("sync", self._path)
        return super().xSync(flags)

    def xLock(self, level):
        self._vfs.hit("lock", self._path)
        return super().xLock(level)
