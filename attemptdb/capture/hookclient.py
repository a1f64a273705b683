"""The hook's side of the capture daemon, in the standard library alone: a hook that a daemon
serves imports `_socket` (`_json` only for a header with characters to escape), this
module and its package, and nothing from the site-packages, not even `os`: the operating system
is the builtin `posix` module, which the interpreter has loaded before any code runs. The
installed hook command runs it without `site` at all (`python -I -S …/attemptdb/__main__.py
capture ID`, spec/capture-daemon.md).

Invariants:
- Nothing lost: `through_daemon` hands the payload to the daemon and is done only on `ok` (the
  event is committed or spooled there); on any other answer, none within REPLY_S, or anything
  raised on the way, the full `attempt capture` path (capture.hook.main, which loads the
  site-packages when they were left out) stores the same bytes with the same capture time and
  event id.
- The request, the socket name, the code's name and its stamp are defined here once, for both
  ends: the daemon (capture.daemon_server, capture.codewatch) and whoever starts or finds one
  (capture.daemon) use them.
- The same database as everywhere else: `locate` is `store.location.resolve`, answered from
  `posix` when the answer is plain (an absolute normal path in `--db` or ATTEMPTDB_PATH; no
  `.attemptdb` entry at or above the working directory and a HOME to build the default on) and
  by `location.resolve` itself otherwise; a test holds both to the same answers.
- Exit status 0, nothing on stdout but Gemini CLI's ack (decided from the provider name).
"""

import sys

try:
    import posix as _sys_os  # builtin and already loaded: `os` would cost ~1 ms of imports
except ImportError:  # pragma: no cover - Windows: no daemon there; `os` serves the rest
    import os as _sys_os

STDIN_CAP = 16 * 1024 * 1024
STDIN_S = 5.0  # stdin still open after this long: the hook goes on with what arrived
REPLY_S = 3.0  # the hook waits this long for the daemon's receipt, then does the work itself
SLOW_S = 60.0
"""After a daemon left a hook without an answer for REPLY_S (stopped, hung: the kernel still
takes its connections, and its lock keeps another from starting), the hooks of the next SLOW_S
seconds store their events themselves (a `<socket>.slow` marker's time) instead of each waiting
REPLY_S for it; then they try it again."""
GEMINI_ACK = b'{"decision":"allow"}\n'
# the names adapters.registry.ALIASES maps to gemini_cli (a test keeps them equal): known
# without importing the adapters, which a hook the daemon serves never needs
GEMINI_NAMES = frozenset(("gemini_cli", "gemini-cli", "gemini"))
_VALUE_FLAGS = frozenset(("--capture-mode", "--project-root", "--repo-remote", "--captured-at", "--device-id",
                          "--hook-version", "--event", "--db"))


lean = False  # this process was started as the lean hook command (`-I -S`, attemptdb/__main__.py)
_site_loaded = False


def full_interpreter() -> None:
    """In a process the lean hook command started (`-S`: no `site`), add the site-packages
    now, as `site` would have at start (apsw, click and friends live there). Idempotent;
    nothing to do in a process started otherwise (one that set up its own paths keeps them)."""
    global _site_loaded
    if _site_loaded or not lean or not sys.flags.no_site:
        return
    _site_loaded = True
    import site
    site.main()


def leave(code: int) -> None:
    """End a hook process at once with `code`, after flushing stdout and stderr: skipping
    interpreter teardown and the last connection's close-time WAL checkpoint (an fsync) saves
    ~10 ms on a hook that wrote the file itself. Committed work is already durable in the WAL;
    the next writer's autocheckpoint folds it in."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    _sys_os._exit(code)


# --- the few `os` and `os.path` pieces the hook needs, from `posix` ---------------------------

def _env(name: str):
    """os.environ.get(name): os.environ itself once `os` is loaded (it sees later changes),
    else the same decoding of the process's environment that `os` would make."""
    os_mod = sys.modules.get("os")
    if os_mod is not None:
        return os_mod.environ.get(name)
    value = _sys_os.environ.get(name.encode())
    return None if value is None else value.decode(sys.getfilesystemencoding(), "surrogateescape")


def _normal_abs(path) -> bool:
    """An absolute path that os.path.abspath returns unchanged (no `.`, `..`, `//`, trailing `/`)."""
    return (isinstance(path, str) and path.startswith("/") and "//" not in path and "/./" not in path
            and "/../" not in path and not path.endswith(("/.", "/..")) and (path == "/" or path[-1] != "/"))


def _abspath(path: str) -> str:
    if _normal_abs(path):
        return path
    import os
    return os.path.abspath(path)


def _join(path: str, *parts: str) -> str:
    """posixpath.join for text."""
    for part in parts:
        if part.startswith("/"):
            path = part
        elif not path or path.endswith("/"):
            path += part
        else:
            path += "/" + part
    return path


def _dirname(path: str) -> str:
    """posixpath.dirname for text."""
    head = path[:path.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def _isdir(path: str) -> bool:
    try:
        return (_sys_os.stat(path).st_mode & 0o170000) == 0o040000
    except (OSError, ValueError):
        return False


def enabled() -> bool:
    """On unless ATTEMPTDB_NO_DAEMON is set; only where Unix sockets and posix_spawn exist."""
    return ((_env("ATTEMPTDB_NO_DAEMON") or "") in ("", "0") and hasattr(_sys_os, "getuid")
            and hasattr(_sys_os, "posix_spawn"))


# --- which database, which socket ---------------------------------------------------------------

LOCAL_DIR, DB_NAME, MAX_WALK = ".attemptdb", "attempt.db", 64  # store.location's (a test keeps them equal)


def _user_dir(xdg_var: str, *under_home: str) -> str | None:
    """location.data_dir / state_dir: `$XDG_…/attemptdb` (absolute values only), else
    `~/<under_home>/attemptdb`; None when HOME is unset (`location` then asks the password file)."""
    xdg = _env(xdg_var) or ""
    if xdg.startswith("/"):
        return _join(xdg, "attemptdb")
    home = _env("HOME")
    if home is None or _sys_os.__name__ != "posix":
        return None
    return _join(home.rstrip("/") or "/", *under_home, "attemptdb")


def _local_candidate(cwd: str) -> bool:
    """Is there any `.attemptdb` entry at or above `cwd`, where location.find_local looks?"""
    d = cwd
    for _ in range(MAX_WALK):
        try:
            _sys_os.lstat(_join(d, LOCAL_DIR))
            return True
        except OSError:
            pass
        parent = _dirname(d)
        if parent == d:
            break
        d = parent
    return False


def locate(explicit, cwd) -> str:
    """store.location.resolve(explicit, cwd), the database of this invocation; without `os`
    when the answer is plain, from `location` itself when anything needs its judgement (a
    relative or `~` path, a `.attemptdb` to check for trust, no HOME)."""
    path = explicit or _env("ATTEMPTDB_PATH")
    if path:
        if _normal_abs(path):
            return path
    elif _normal_abs(cwd) and not _local_candidate(cwd):
        data = _user_dir("XDG_DATA_HOME", ".local", "share")
        if data is not None:
            return _join(data, DB_NAME)
    from ..store import location
    return location.resolve(explicit, cwd)


HOOK_PATH_FOLDERS = ("adapters", "capture", "ingest", "integrity", "model", "store")


def _package() -> str:
    return _dirname(_dirname(_abspath(__file__)))


def code_id() -> str:
    """The code a hook runs, as its request names it: the version and the package directory
    (its device and inode: the same however the path is spelled, and new when a reinstall makes
    the directory anew). One stat: the daemon itself notices when a file under it changes
    (capture.codewatch)."""
    from .. import __version__
    st = _sys_os.stat(_package())
    return f"{__version__}:{st.st_dev}:{st.st_ino}"


def code_folders() -> list:
    """The folders the hook path runs from, and the migrations and schema SQL (the package's
    data folders, or a checkout's beside it: resources.folder)."""
    pkg = _package()
    return [pkg, *(_join(pkg, f) for f in HOOK_PATH_FOLDERS),
            *(_join(base, f) for f in ("migrations", "sql") for base in (pkg, _dirname(pkg)))]


def code_stamp() -> str:
    """Changes whenever the installed hook code changes: the version, and the newest mtime and
    the number of the `.py` and `.sql` files of code_folders (an upgrade, an edit, a new
    migration). The daemon takes it when it starts (capture.codewatch)."""
    from .. import __version__
    newest = count = 0
    for d in code_folders():
        try:
            with _sys_os.scandir(d) as it:
                for entry in it:
                    if entry.name.endswith((".py", ".sql")):
                        count += 1
                        newest = max(newest, entry.stat().st_mtime_ns)
        except OSError:
            continue
    return f"{__version__}:{newest}:{count}"


_FNV_OFFSET, _FNV_PRIME, _MASK128 = 0x6C62272E07BB014262B821756295C58D, (1 << 88) + 0x13B, (1 << 128) - 1


def socket_digest(data: bytes) -> str:
    """20 hex digits naming a socket: FNV-1a (128-bit) of `data`, in plain Python. Not SHA-256:
    its module is a shared library, and loading it cost every hook ~0.4 ms here. A name two
    databases share costs nothing but speed: the daemon answers `stale` to a request for any
    database but its own, and the hook stores the event itself."""
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _MASK128
    return ("%032x" % h)[:20]


def endpoint(db_path: str, state: str | None = None) -> str | None:
    """The socket for this database and state directory (default: this process's): in
    `$XDG_RUNTIME_DIR/attemptdb`, else `<state>/run`, else (a path too long for a Unix socket)
    `/tmp/attemptdb-<uid>`; None when even that is too long (hooks then write directly)."""
    if not state:
        state = _user_dir("XDG_STATE_HOME", ".local", "state")
        if state is None:
            from ..store import location
            state = location.state_dir()
    digest = socket_digest(f"{_abspath(db_path)}\0{state}".encode("utf-8", "surrogatepass"))
    base = _env("XDG_RUNTIME_DIR") or ""
    run_dir = _join(base, "attemptdb") if base.startswith("/") and _isdir(base) else _join(state, "run")
    for d in (run_dir, _join("/tmp", f"attemptdb-{_sys_os.getuid()}")):  # sun_path holds ~100 bytes
        path = _join(d, f"capture-{digest}.sock")
        if len(path.encode("utf-8", "surrogatepass")) < 100:
            return path
    return None


def private_dir(path: str) -> bool:
    """The socket directory is ours alone: a directory (not a symlink), our uid, mode 0700."""
    try:
        st = _sys_os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == _sys_os.getuid() and not st.st_mode & 0o077


def peer_uid_ok(sock) -> bool:
    import _socket
    if not hasattr(_socket, "SO_PEERCRED"):
        return True  # the 0700 directory is the only check there
    try:
        cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    except OSError:
        return False
    return int.from_bytes(cred[4:8], sys.byteorder) == _sys_os.getuid()


def _read_stdin() -> tuple[bytes, bool]:
    """stdin up to end-of-file, at most STDIN_CAP bytes kept (and whether there was more),
    and never for longer than STDIN_S: an agent that leaves the pipe open (or a stream that
    never ends) does not hang on its hook; the event is built from what arrived by then."""
    if _sys_os.__name__ != "posix":  # pragma: no cover - Windows: select cannot wait on a pipe there
        return _read_stdin_object()
    try:
        fd = sys.stdin.fileno()
        kind = _sys_os.fstat(fd).st_mode & 0o170000
    except (OSError, ValueError, AttributeError):
        return _read_stdin_object()
    from time import monotonic
    end = monotonic() + STDIN_S
    # a pipe or a socket is read without blocking (select only when nothing is there yet:
    # an agent has usually written and closed it before this process runs); a terminal is
    # waited on with select; a file or a device never keeps a read waiting
    pipe = kind in (0o010000, 0o140000)
    tty = not pipe and _sys_os.isatty(fd)
    unblocked = False
    chunks, size = [], 0
    try:
        if pipe and _sys_os.get_blocking(fd):
            _sys_os.set_blocking(fd, False)
            unblocked = True
        while True:
            left = end - monotonic()
            if left <= 0:
                break
            if tty:
                import select
                if not select.select([fd], [], [], left)[0]:
                    break
            try:
                chunk = _sys_os.read(fd, 1 << 20)
            except BlockingIOError:
                import select
                select.select([fd], [], [], left)
                continue
            if not chunk:
                break
            if size <= STDIN_CAP:
                chunks.append(chunk)
            elif not pipe:
                break  # past the cap a pipe is drained (its writer never blocks on us), not kept
            size += len(chunk)
    except (OSError, ValueError):
        pass
    finally:
        if unblocked:
            try:
                _sys_os.set_blocking(fd, True)
            except OSError:
                pass
    data = b"".join(chunks)
    return (data[:STDIN_CAP], True) if size > STDIN_CAP else (data, False)


def _read_stdin_object() -> tuple[bytes, bool]:
    """A stdin without a file descriptor (replaced in-process): read as it is."""
    try:
        data = sys.stdin.buffer.read(STDIN_CAP + 1)
    except (OSError, ValueError, AttributeError):
        return b"", False
    if len(data) > STDIN_CAP:
        # drain the rest so the agent's pipe never blocks on us, but keep only the cap
        try:
            while sys.stdin.buffer.read(1 << 20):
                pass
        except (OSError, ValueError):
            pass
        return data[:STDIN_CAP], True
    return data, False


def _getcwd():
    try:
        return _sys_os.getcwd()
    except OSError:
        return None


class Hook:
    """What one hook invocation brings besides its argv: the stdin bytes (and whether they were
    cut at STDIN_CAP), the working directory, `CLAUDE_PROJECT_DIR`, and — when a daemon runs it
    on the hook's behalf — the hook's capture time and the event id it minted."""

    __slots__ = ("data", "truncated", "cwd", "claude_project_dir", "captured_at", "event_id")

    def __init__(self, data: bytes, truncated: bool, cwd, claude_project_dir, captured_at=None, event_id=None):
        self.data, self.truncated, self.cwd = data, truncated, cwd
        self.claude_project_dir, self.captured_at, self.event_id = claude_project_dir, captured_at, event_id

    def take_data(self) -> bytes:
        """The stdin bytes, handed over once: the hook holds b"" afterwards, so the capture
        keeps a large payload once (as it parses it), not also for the rest of the process."""
        data, self.data = self.data, b""
        return data

    @classmethod
    def from_process(cls) -> "Hook":
        data, truncated = _read_stdin()
        return cls(data, truncated, _getcwd(), _env("CLAUDE_PROJECT_DIR") or None)


def _hexs(b: bytes) -> str:
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid7(now_ms: int) -> str:
    """A fresh UUIDv7 (as ids.uuid7, which a test keeps equal in form)."""
    r = bytearray(now_ms.to_bytes(6, "big") + _sys_os.urandom(10))
    r[6] = (r[6] & 0x0F) | 0x70
    r[8] = (r[8] & 0x3F) | 0x80
    return _hexs(bytes(r))


def _json_str(s: str) -> str:
    """json's ASCII form of a string (lone surrogates escaped): as is between quotes when it
    holds only printable ASCII but `"` and `\\` (no `_json` import), else `_json`'s."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    from _json import encode_basestring_ascii
    return encode_basestring_ascii(s)


def _json_text(v) -> str:
    """A JSON value of the header: str, int, bool, None, list of str."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _json_str(v)
    return "[" + ",".join(_json_str(s) for s in v) + "]"


def header(stamp: str, db_path: str, argv, hook: Hook) -> bytes:
    """The request's first line (spec/capture-daemon.md "One request"), ASCII."""
    fields = (("v", 1), ("code", stamp), ("db", _abspath(db_path)), ("argv", list(argv)),
              ("cwd", hook.cwd), ("claude_project_dir", hook.claude_project_dir),
              ("captured_at", hook.captured_at), ("event_id", hook.event_id),
              ("truncated", hook.truncated), ("n", len(hook.data)))
    return ("{" + ",".join(f'"{k}":{_json_text(v)}' for k, v in fields) + "}\n").encode("ascii")


def request(db_path: str, argv, hook: Hook, stamp: str) -> str:
    """Hand one hook invocation to the daemon. Returns "ok" (committed or spooled by the
    daemon), "absent" (no daemon: start one), or another word (do the work here)."""
    path = endpoint(db_path)
    if path is None:
        return "unsupported"
    if not private_dir(_dirname(path)):
        return "absent"
    from time import time
    try:
        if time() - _sys_os.stat(path + ".slow").st_mtime < SLOW_S:
            return "slow"
    except OSError:
        pass
    message = header(stamp, db_path, argv, hook) + hook.data  # ready before the daemon wakes
    import _socket
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(REPLY_S)
        try:
            s.connect(path)
        except OSError:
            return "absent"
        if not peer_uid_ok(s):
            return "foreign"
        s.sendall(message)
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 64:
            chunk = s.recv(64)
            if not chunk:
                break
            answer += chunk
        return answer.strip().decode("ascii", "replace") or "closed"
    except OSError:
        _mark_slow(path)
        return "timeout"
    finally:
        s.close()


def _mark_slow(path: str) -> None:
    """`<socket>.slow`, its time now (SLOW_S): in the 0700 socket directory, never through a link."""
    try:
        fd = _sys_os.open(path + ".slow", _sys_os.O_WRONLY | _sys_os.O_CREAT | _sys_os.O_TRUNC
                          | getattr(_sys_os, "O_NOFOLLOW", 0), 0o600)
        _sys_os.close(fd)
        _sys_os.utime(path + ".slow")
    except OSError:
        pass


def db_option(argv):
    """The `--db` value of a capture argv (as capture._parse reads it), or None."""
    i = 0
    found = None
    while i < len(argv):
        arg = argv[i]
        key = arg.split("=", 1)[0]
        if key in _VALUE_FLAGS:
            if "=" in arg:
                v = arg.split("=", 1)[1]
            else:
                i += 1
                v = argv[i] if i < len(argv) else None
            if key == "--db":
                found = v
        i += 1
    return found


def provider_of(argv):
    """The first word of a capture argv that is neither a flag nor a flag's value."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.split("=", 1)[0] in _VALUE_FLAGS:
            i += 1 if "=" in arg else 2
            continue
        if arg != "--dry-run" and not arg.startswith("-"):
            return arg
        i += 1
    return None


def handover(argv, hook: Hook) -> tuple[str, str | None]:
    """(answer, database path): mint the capture time and event id into `hook` and ask the
    daemon to store it. Never raises: whatever went wrong, the caller still has the event."""
    from time import time_ns
    now = time_ns() // 1000
    hook.captured_at = now
    hook.event_id = uuid7(now // 1000)
    db_path = None
    try:
        db_path = locate(db_option(argv), hook.cwd)
        return request(db_path, argv, hook, code_id()), db_path
    except Exception as e:
        return "deliver:" + type(e).__name__, db_path


def through_daemon(argv):
    """`attempt capture …` as a hook runs it, the daemon's part: (0, …) when the daemon stored
    the event (Gemini CLI's ack already written), else (None, hook, answer, database path): what
    the full capture path (capture.hook.main, which attemptdb.launcher runs next) needs to
    store the same bytes with the same capture time and event id (hook None: it reads stdin)."""
    if "-h" in argv or "--help" in argv or "--dry-run" in argv or not enabled():
        return None, None, None, None
    answer, db_path = "none", None
    hook = None
    try:
        hook = Hook.from_process()
        answer, db_path = handover(argv, hook)
    except BaseException as e:  # the full path still stores what arrived
        if isinstance(e, KeyboardInterrupt):
            return 0, None, None, None
        answer = "deliver:" + type(e).__name__
    if answer == "ok":
        provider = provider_of(argv)
        if isinstance(provider, str) and provider.strip().lower() in GEMINI_NAMES:
            try:
                sys.stdout.buffer.write(GEMINI_ACK)
                sys.stdout.flush()
            except Exception:
                pass
        return 0, None, None, None
    return None, hook, answer, db_path
