"""Safe file operations for agent configs: an exclusive lock, timestamped backups, and an
atomic replace that writes through symlinks.

Invariants:
- Lock: an advisory `flock` on `<config>.attemptdb.lock` (up to ~5 s of retries); the lock
  file is unlinked on release, and a holder re-checks that the path still names the inode it
  locked (so a release-and-unlink by another holder never lets two in at once).
- Backup: the bytes before a change go to `<config>.attemptdb.bak-<unix secs>` (`-1`, `-2` …
  on collision), created 0600 (configs can hold secrets); the 5 newest are kept.
- Replace: symlinks are followed (≤ 40 hops, relative targets resolved against the link's
  directory) so a dotfiles link stays a link and its target changes; the new bytes go to
  `<target>.attemptdb.tmp` (created 0600, then given the target's mode), are fsynced, renamed
  over the target, and the directory is fsynced. The temp file never outlives a failure.
  Given the bytes read before the edit, the replace is refused (`installer.config_changed`)
  when the file no longer holds them: the agent wrote it meanwhile (it takes no lock of ours).
  A backup the disk cannot hold is removed, never left half written.
- Remove: only a config our install created goes (`remove_created`, under the same `expect`
  check), the file a link names and never the link.
- Read-only: a config with no write bit for its owner (`chmod 444`: made read-only so that tools
  leave it alone), or one this user may not write, is never replaced or removed
  (`check_writable`, `installer.config_read_only`, naming the file and `chmod u+w`), although
  the replace, a rename in its folder, would succeed; its mode is never changed.
"""

import errno
import fcntl
import os
import shlex
import stat
import time

from ..errors import AttemptError

MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_LINK_HOPS = 40
BACKUPS_KEPT = 5
LOCK_TRIES = 200
LOCK_SLEEP_S = 0.025


class FileOpError(AttemptError):
    exit_status = 1

    def __init__(self, code, message):
        super().__init__(code, message, exit_status=1)


def make_parent(path: str) -> None:
    """The folder `path` goes in (0700 when made), or a coded error when it cannot be one (a
    file in its place)."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as e:
        raise FileOpError("installer.write_failed", f"cannot write beside {path} "
                          f"({folder}: {e.strerror or e.__class__.__name__})") from None


def resolve_links(path: str) -> str:
    """The file a (possibly symlinked) path finally names, as the kernel resolves it; the path
    itself when it is no link. Each step resolves the folder the link sits in first, so a
    relative target's `..` climbs from where the link really is (a dotfiles folder reached
    through a linked directory), not from the name it was reached by."""
    cur = os.path.join(os.getcwd(), path)
    for _ in range(MAX_LINK_HOPS):
        cur = os.path.join(os.path.realpath(os.path.dirname(cur)), os.path.basename(cur))
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return cur
        except OSError as e:
            raise FileOpError("installer.config_unreadable",
                              f"cannot inspect {cur} ({e.strerror or e.__class__.__name__})") from None
        if not stat.S_ISLNK(st.st_mode):
            return cur
        cur = os.path.join(os.path.dirname(cur), os.readlink(cur))
    raise FileOpError("installer.symlink_loop", f"{path}: more than {MAX_LINK_HOPS} symbolic links")


def read_config(path: str) -> bytes | None:
    """The config's bytes (through symlinks), None when it does not exist."""
    target = resolve_links(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise FileOpError("installer.config_unreadable",
                          f"cannot read {path} ({e.strerror or e.__class__.__name__})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileOpError("installer.config_not_a_file", f"{path} is not a regular file")
    if st.st_size > MAX_CONFIG_BYTES:
        raise FileOpError("installer.config_too_large",
                          f"{path} is larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB")
    try:
        with open(target, "rb") as f:
            return f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise FileOpError("installer.config_unreadable",
                          f"cannot read {path} ({e.strerror or e.__class__.__name__})") from None


def check_writable(path: str) -> None:
    """Refuse (`installer.config_read_only`) to change the file `path` finally names when its
    owner took its write bit away, or when this user may not write it: an atomic replace needs
    only the folder's write permission, so it would silently replace a file someone made
    read-only to keep tools out. No file (or one that cannot be inspected: reading it says
    why) passes."""
    target = resolve_links(path)
    try:
        st = os.stat(target)
    except OSError:
        return
    mode = stat.S_IMODE(st.st_mode)
    if not mode & stat.S_IWUSR:
        raise FileOpError("installer.config_read_only",
                          f"{path} is read-only (mode {mode:04o}): to let attempt edit it, "
                          f"run `chmod u+w {shlex.quote(path)}` and run the command again")
    if not os.access(target, os.W_OK):
        raise FileOpError("installer.config_read_only",
                          f"{path} is not writable by you (it belongs to uid {st.st_uid}, mode {mode:04o}); "
                          "make it writable for you, then run the command again")


class Lock:
    """`with Lock(config_path):` — exclusive, cross-process, removed on release."""

    def __init__(self, config_path: str, tries: int = LOCK_TRIES, sleep_s: float = LOCK_SLEEP_S):
        self.path = config_path + ".attemptdb.lock"
        self.tries = tries
        self.sleep_s = sleep_s
        self.fd = None

    def __enter__(self):
        for _ in range(self.tries):
            try:  # a symlink or a directory at the lock's path: refused, never followed
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            except OSError as e:
                raise FileOpError("installer.lock_failed", f"cannot lock {self.path} "
                                  f"({e.strerror or e.__class__.__name__})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise FileOpError("installer.lock_failed", f"cannot lock {self.path}") from None
                time.sleep(self.sleep_s)
                continue
            try:  # the previous holder may have unlinked the file we opened
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)
        raise FileOpError("installer.lock_timeout",
                          f"another process holds {self.path}; try again")

    def __exit__(self, *exc):
        if self.fd is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None


def _backup_number(name: str, prefix: str):
    rest = name[len(prefix):]
    secs, _, n = rest.partition("-")
    if not secs.isdigit() or (n and not n.isdigit()):
        return None
    return int(secs), int(n or 0)


def backups(config_path: str) -> list[str]:
    """Existing backups of `config_path`, oldest first."""
    d, base = os.path.split(os.path.abspath(config_path))
    prefix = base + ".attemptdb.bak-"
    found = []
    try:
        names = os.listdir(d)
    except OSError:
        return []
    for name in names:
        if name.startswith(prefix):
            key = _backup_number(name, prefix)
            if key is not None:
                found.append((key, os.path.join(d, name)))
    found.sort()
    return [p for _, p in found]


def backup(config_path: str, data: bytes, now: float | None = None, keep: int = BACKUPS_KEPT) -> str:
    """Write `data` (the bytes before a change) to a new backup and prune old ones."""
    secs = int(time.time() if now is None else now)
    base = os.path.abspath(config_path) + f".attemptdb.bak-{secs}"
    for n in range(1000):
        path = base if n == 0 else f"{base}-{n}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        except OSError as e:
            raise FileOpError("installer.backup_failed",
                              f"cannot write a backup beside {config_path} ({e.strerror})") from None
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:  # a full disk: no half backup left that looks like a whole one
            try:
                os.unlink(path)
            except OSError:
                pass
            raise FileOpError("installer.backup_failed",
                              f"cannot write a backup beside {config_path} ({e.strerror})") from None
        break
    else:
        raise FileOpError("installer.backup_failed", f"too many backups of {config_path} this second")
    existing = backups(config_path)
    for old in existing[:-keep] if keep > 0 else existing:
        try:
            os.unlink(old)
        except OSError:
            pass
    return path


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


ANY = object()


def _still(path: str, target: str, expect) -> None:
    """Refuse when the file no longer holds `expect` (its bytes when read; None: it did not
    exist): another program (the agent itself) wrote it since, and replacing it would lose
    that write. `ANY` checks nothing."""
    if expect is ANY:
        return
    try:
        with open(target, "rb") as f:
            now = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        now = None
    except OSError:
        now = ANY
    if now != expect:
        raise FileOpError("installer.config_changed", f"{path} changed while it was being edited "
                          "(another program wrote it); left as it is now: run the command again")


def atomic_write(path: str, data: bytes, *, default_mode: int = 0o600, expect=ANY,
                 follow_links: bool = True) -> str:
    """Replace the file `path` finally names with `data`, atomically; returns that target.
    With `expect` (the bytes read before the edit, None for no file) the replace is refused
    when the file no longer holds them. Without `follow_links` a link at `path` is replaced
    itself (our own files beside a config)."""
    target = resolve_links(path) if follow_links else os.path.abspath(path)
    d = os.path.dirname(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = default_mode
    tmp = target + ".attemptdb.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # a crashed earlier run (we hold the lock): replace its leftover
        try:
            if stat.S_ISREG(os.lstat(tmp).st_mode):
                os.unlink(tmp)
        except OSError:
            pass
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as e:
            raise FileOpError("installer.write_failed", f"cannot write beside {path} ({e.strerror})") from None
    except OSError as e:
        raise FileOpError("installer.write_failed", f"cannot write beside {path} ({e.strerror})") from None
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        _still(path, target, expect)
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise FileOpError("installer.write_failed", f"cannot replace {path} ({e.strerror})") from None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return target


def remove_created(path: str, *, expect=ANY) -> str:
    """Remove the file `path` finally names (a config our install created and our uninstall
    emptied again); a link at `path` stays, naming no file, as it did before. `expect`: as for
    `atomic_write`. Returns the file removed."""
    target = resolve_links(path)
    _still(path, target, expect)
    try:
        os.unlink(target)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise FileOpError("installer.write_failed", f"cannot remove {path} ({e.strerror})") from None
    return target
