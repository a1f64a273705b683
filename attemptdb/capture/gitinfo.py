"""Git facts for a working directory, read from `.git` files: no subprocess, well under 1 ms.

Invariants (reference/capture.md §3.7):
- `git_info(cwd)` never raises and never runs `git`. It walks up at most 64 directories for
  `.git` (a directory holding `HEAD`, or a `gitdir: <path>` file as in worktrees and
  submodules), follows `commondir`, reads `HEAD` (a symref chain of at most 8 links through
  loose refs, then `packed-refs`; names with `..` or other malformed ref names refused; a bare
  40/64-hex HEAD is detached: no branch) and the remote URL (`[remote "origin"]`, else the
  first remote in the config file that has a url; quoted values unquoted).
- `root` is the worktree root (the directory holding `.git`), else `cwd` itself; anything
  unreadable or malformed degrades to None fields, never to an error. Every read is bounded.
- Imports only `os`, `stat` and store.plainfile (standard library only): this module is on the hook path.
"""

import os
import stat

from ..store import plainfile

MAX_UP = 64
MAX_SYMREF_DEPTH = 8
_SMALL = 4096             # HEAD, a loose ref, a gitdir or commondir file
_CONFIG_MAX = 1 << 20     # .git/config
_PACKED_MAX = 32 << 20    # packed-refs
_HEX = frozenset("0123456789abcdefABCDEF")
_PER_WORKTREE = ("refs/worktree/", "refs/bisect/", "refs/rewritten/")


class GitInfo(tuple):
    """(root, remote, branch, head): worktree root (else cwd), remote URL as written in the
    config, current branch (None when detached or unknown), HEAD commit (40/64 hex, lowercase)."""

    __slots__ = ()
    _fields = ("root", "remote", "branch", "head")

    def __new__(cls, root=None, remote=None, branch=None, head=None):
        return tuple.__new__(cls, (root, remote, branch, head))

    root = property(lambda self: self[0])
    remote = property(lambda self: self[1])
    branch = property(lambda self: self[2])
    head = property(lambda self: self[3])

    def __repr__(self):
        return "GitInfo(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self)) + ")"


def _read(path: str, limit: int):
    """The bytes of a regular file of at most `limit` bytes, else None."""
    try:  # a FIFO planted in .git must not hang the hook
        fd = plainfile.open_regular(path, follow_links=True)
    except (OSError, ValueError):
        return None
    try:
        if os.fstat(fd).st_size > limit:
            return None
        chunks = []
        total = 0
        while True:
            b = os.read(fd, min(1 << 20, limit + 1 - total))
            if not b:
                break
            chunks.append(b)
            total += len(b)
            if total > limit:
                return None
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(path: str, limit: int = _SMALL):
    b = _read(path, limit)
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_sha(s: str) -> bool:
    return len(s) in (40, 64) and all(c in _HEX for c in s)


def valid_ref_name(name: str) -> bool:
    """A ref name we follow: under `refs/`, and well-formed as git requires (no `..`, no
    control characters, space, `~^:?*[\\`, no `@{`, no component starting with `.` or ending
    `.lock`, no empty component, not ending with `/` or `.`)."""
    if not isinstance(name, str) or not name.startswith("refs/") or len(name) > 1024:
        return False
    if ".." in name or "@{" in name or "//" in name or name.endswith(("/", ".")):
        return False
    for c in name:
        if c < " " or c == "\x7f" or c in " ~^:?*[\\":
            return False
    for part in name.split("/"):
        if not part or part.startswith(".") or part.endswith(".lock"):
            return False
    return True


def _join(base: str, rel: str) -> str:
    return os.path.normpath(rel if os.path.isabs(rel) else os.path.join(base, rel))


def _gitdir_from_file(dotgit: str, worktree: str):
    text = _text(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[7:].strip()
    if not target or "\x00" in target:
        return None
    return _join(worktree, target)


def _find_dotgit(cwd: str):
    """(worktree root, git dir or None) of the nearest `.git`, or (None, None)."""
    d = cwd
    for _ in range(MAX_UP):
        p = os.path.join(d, ".git")
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            st = None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                if os.path.isfile(os.path.join(p, "HEAD")):
                    return d, p
            elif stat.S_ISREG(st.st_mode):
                return d, _gitdir_from_file(p, d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return None, None


def _common_dir(gitdir: str) -> str:
    text = _text(os.path.join(gitdir, "commondir"))
    if text is None:
        return gitdir
    rel = text.strip()
    if not rel or "\x00" in rel:
        return gitdir
    return _join(gitdir, rel)


def _packed(common: str, name: str):
    data = _read(os.path.join(common, "packed-refs"), _PACKED_MAX)
    if not data:
        return None
    try:
        nb = name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    needle = b" " + nb
    k = data.find(needle)
    while k >= 0:
        end = k + len(needle)
        if end == len(data) or data[end:end + 1] in (b"\n", b"\r"):
            start = data.rfind(b"\n", 0, k) + 1
            sha = data[start:k].decode("ascii", "replace")
            if _is_sha(sha):
                return sha.lower()
        k = data.find(needle, k + 1)
    return None


def _resolve(gitdir: str, common: str, name: str):
    """(final ref name, sha or None) following symrefs; (None, None) when refused."""
    for _ in range(MAX_SYMREF_DEPTH):  # HEAD -> r1 -> ... -> r8: eight links at most
        if not valid_ref_name(name):
            return None, None
        bases = (gitdir, common) if name.startswith(_PER_WORKTREE) else (common, gitdir)
        text = None
        for base in dict.fromkeys(bases):
            text = _text(os.path.join(base, *name.split("/")))
            if text is not None:
                break
        if text is None:
            return name, _packed(common, name)
        value = text.strip()
        if value.startswith("ref:"):
            name = value[4:].strip()
            continue
        return name, (value.lower() if _is_sha(value) else None)
    return None, None


# --- config -----------------------------------------------------------------------------

_ESC = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}
_SPACE = " \t\x0b\x0c\r"
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def _skip_line(s: str, i: int) -> int:
    j = s.find("\n", i)
    return len(s) if j < 0 else j + 1


def _parse_value(s: str, i: int):
    """The value after `key =` at s[i], as git reads it: blanks around it dropped, runs of
    blanks inside become spaces, `"` toggles quoting, escapes \\n \\t \\b \\\\ \\" and a
    backslash-newline continuation, `#`/`;` outside quotes start a comment.
    Returns (value or None when malformed, index after the line)."""
    out = []
    quoted = False
    spaces = 0
    n = len(s)
    while i < n:
        c = s[i]
        i += 1
        if c == "\n":
            return (None if quoted else "".join(out)), i
        if not quoted:
            if c in _SPACE:
                if out:
                    spaces += 1
                continue
            if c in "#;":
                return "".join(out), _skip_line(s, i)
        if spaces:
            out.append(" " * spaces)
            spaces = 0
        if c == "\\":
            if i >= n:
                return None, n
            d = s[i]
            i += 1
            if d == "\n":
                continue
            if d not in _ESC:
                return None, _skip_line(s, i)
            out.append(_ESC[d])
        elif c == '"':
            quoted = not quoted
        else:
            out.append(c)
    return (None if quoted else "".join(out)), n


def _parse_header(s: str, i: int):
    """`[section]`, `[section "sub"]` or legacy `[section.sub]` at s[i] == "[":
    ((section lowercased, subsection or None), index after `]`), or (None, next line)."""
    n = len(s)
    k = i + 1
    while k < n and (s[k] in _KEY_CHARS or s[k] == "."):
        k += 1
    name = s[i + 1:k]
    if not name:
        return None, _skip_line(s, i)
    if k < n and s[k] == "]":
        if "." in name:
            sec, _, sub = name.partition(".")
            return (sec.lower(), sub.lower()), k + 1
        return (name.lower(), None), k + 1
    if "." in name or k >= n or s[k] not in " \t":
        return None, _skip_line(s, i)
    while k < n and s[k] in " \t":
        k += 1
    if k >= n or s[k] != '"':
        return None, _skip_line(s, i)
    k += 1
    sub = []
    while k < n and s[k] != '"':
        c = s[k]
        if c == "\n":
            return None, k + 1
        if c == "\\" and k + 1 < n and s[k + 1] != "\n":
            k += 1
            c = s[k]
        sub.append(c)
        k += 1
    if s[k + 1:k + 2] != "]":
        return None, _skip_line(s, i)
    return (name.lower(), "".join(sub)), k + 2


def remotes(config_text: str) -> list:
    """[(remote name, its first url)] in config-file order, for remotes that have a url.
    A malformed line is skipped; includes and `insteadOf` rewriting are not followed."""
    s = config_text.replace("\r\n", "\n")
    if s.startswith("\ufeff"):
        s = s[1:]
    n = len(s)
    i = 0
    section = None
    found: dict = {}
    while i < n:
        c = s[i]
        if c in _SPACE or c == "\n":
            i += 1
        elif c in "#;":
            i = _skip_line(s, i)
        elif c == "[":
            section, i = _parse_header(s, i)
        elif "a" <= c.lower() <= "z":
            j = i
            while j < n and s[j] in _KEY_CHARS:
                j += 1
            key = s[i:j].lower()
            while j < n and s[j] in " \t":
                j += 1
            if j < n and s[j] == "=":
                value, i = _parse_value(s, j + 1)
                if (key == "url" and value and section is not None and section[0] == "remote"
                        and section[1]):
                    found.setdefault(section[1], value)
            else:
                i = _skip_line(s, j)
        else:
            i = _skip_line(s, i)
    return list(found.items())


def _remote_url(common: str):
    text = _text(os.path.join(common, "config"), _CONFIG_MAX)
    if not text:
        return None
    found = remotes(text)
    for name, url in found:
        if name == "origin":
            return url
    return found[0][1] if found else None


# --- entry point --------------------------------------------------------------------------

def git_info(cwd) -> GitInfo:
    """Git facts for `cwd` (module invariants). Never raises."""
    try:
        if isinstance(cwd, bytes):
            cwd = os.fsdecode(cwd)
        elif not isinstance(cwd, str):
            cwd = os.fspath(cwd)
        if not cwd or "\x00" in cwd:
            return GitInfo()
        start = os.path.abspath(cwd)
    except Exception:
        return GitInfo()
    try:
        root, gitdir = _find_dotgit(start)
    except Exception:
        return GitInfo(start)
    if root is None:
        return GitInfo(start)
    if gitdir is None:
        return GitInfo(root)
    branch = head = remote = None
    try:
        common = _common_dir(gitdir)
        text = _text(os.path.join(gitdir, "HEAD"))
        value = text.strip() if text is not None else ""
        if value.startswith("ref:"):
            name, head = _resolve(gitdir, common, value[4:].strip())
            if name is not None and name.startswith("refs/heads/"):
                branch = name[11:]
        elif _is_sha(value):
            head = value.lower()
        remote = _remote_url(common)
    except Exception:
        pass
    return GitInfo(root, remote, branch, head)
