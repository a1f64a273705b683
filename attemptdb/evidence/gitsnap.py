"""Git snapshots (seed 001 "Git Snapshot"; spec/evidence.md §4): HEAD, branch, dirty, and the
hashes of the staged diff, the unstaged diff and the sorted untracked-file list.

Invariants:
- The hashes are SHA-256 of exactly what these commands print, run at the worktree root
  (spec/evidence.md gives them for anyone to recompute):
  `git diff --cached DIFF_FLAGS` (staged), `git diff DIFF_FLAGS` (unstaged), and the lines of
  `git ls-files --others --exclude-standard` sorted bytewise, each ending in `\\n` (untracked).
  The flags pin every option a user's configuration could change (prefixes, context, rename
  detection, algorithm, abbreviation), so the same tree gives the same hashes on any machine.
- The repository is hostile (DESIGN.md invariant 8): git runs without a pager, fsmonitor,
  hooks, external diff, textconv or any filter driver the repository's configuration names
  (each is overridden through GIT_CONFIG_COUNT), with optional locks off, so nothing the
  repository holds runs as code and no index is rewritten. A git older than 2.31 cannot take
  those overrides: no diff hashes are computed with it.
- No git process runs inside a submodule or an embedded repository: those have configurations
  of their own (filter drivers, fsmonitor) that the overrides above do not reach, and
  `--ignore-submodules=none` would have `git diff` run `git status` in each of them. With
  `--ignore-submodules=dirty` a submodule is seen from the superproject alone: the gitlink
  commit in HEAD and the index (staged diff) and the commit its HEAD names (unstaged diff, read
  in-process from its refs as git always does), never whether its work tree is dirty.
- Every git call is bounded in wall time: the cheap probes (`git version`, `git config`) by
  PROBE_TIMEOUT_S, each diff or listing by TIMEOUT_S. A call that runs out is killed with its
  process group and the snapshot fails (`snapshot.git_failed`), so a FIFO planted in `.git`
  cannot hang `attempt run` (which then records no snapshot, with a note, and runs the command).
- Outputs are hashed as they stream; only the untracked list (paths) is held, to sort it.
"""

import hashlib
import os
import selectors
import signal
import subprocess
import time

from ..capture import gitinfo
from ..errors import AttemptError

DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--binary", "--full-index", "--no-renames",
              "--diff-algorithm=myers", "--indent-heuristic", "--unified=3", "--inter-hunk-context=0",
              "--src-prefix=a/", "--dst-prefix=b/", "--no-relative", "--submodule=short",
              "--ignore-submodules=dirty")  # `none` runs `git status` inside each submodule (module doc)
FIXED_CONFIG = (("core.fsmonitor", "false"), ("core.hooksPath", os.devnull), ("core.pager", "cat"),
                ("core.quotePath", "true"), ("diff.noprefix", "false"), ("diff.mnemonicPrefix", "false"),
                ("diff.suppressBlankEmpty", "false"), ("diff.orderFile", os.devnull), ("diff.external", ""))
# A diff or listing of a big repository on a cold cache or a network file system can take tens of
# seconds, so each gets two minutes. The probes (`git version`, `git config` of a few files) take
# milliseconds when the repository is healthy; their short bound is what makes a FIFO planted at
# `.git/HEAD` or `.git/config` cost `attempt run` seconds (one probe at run.start, one at run.end).
TIMEOUT_S = 120
PROBE_TIMEOUT_S = 3
_DROP_ENV = ("GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_PAGER", "PAGER", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS")


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Snapshot(dict):
    """root, branch, head, dirty, repo_root_hash, staged_diff_hash, unstaged_diff_hash,
    untracked_files_hash, untracked_count."""


def _env(overrides) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV and not k.startswith("GIT_CONFIG_KEY_")
           and not k.startswith("GIT_CONFIG_VALUE_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_CONFIG_COUNT=str(len(overrides)))
    for i, (k, v) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{i}"] = k
        env[f"GIT_CONFIG_VALUE_{i}"] = v
    return env


def _git(root: str, args, env: dict, sink=None, timeout: float = TIMEOUT_S) -> bytes | None:
    """Run git in `root`; stdout hashed into `sink` (a hashlib object) or returned. Bounded by
    `timeout` seconds of wall time from the start: then git and its process group are killed and
    `snapshot.git_failed` is raised (with `timed_out` set)."""
    deadline = time.monotonic() + timeout
    try:
        p = subprocess.Popen(["git", "--no-pager", *args], cwd=root, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        raise AttemptError("snapshot.no_git", "git is not installed (or cannot be run)", exit_status=1) from None
    chunks = []
    code = None
    fd = p.stdout.fileno()
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    break  # no answer in time
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = p.wait(timeout=max(0.0, deadline - time.monotonic()))
                    break
                if sink is not None:
                    sink.update(chunk)
                else:
                    chunks.append(chunk)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        if p.returncode is None:  # timed out, or interrupted: nothing git started outlives us
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
        p.stdout.close()
    if code is None:
        err = AttemptError("snapshot.git_failed", f"`git {args[0]}` failed in the repository (no answer within "
                           f"{timeout:g} s): does it read a FIFO, or a file system that hangs?", exit_status=1)
        err.timed_out = True
        raise err
    if code != 0:
        raise AttemptError("snapshot.git_failed", f"`git {args[0]}` failed in the repository (exit {code}): is "
                           "it a repository git accepts (safe.directory)?", exit_status=1)
    return None if sink is not None else b"".join(chunks)


_VERSION_OK: list = []


def _version_ok(env: dict) -> bool:
    if not _VERSION_OK:
        out = _git("/", ["version"], env, timeout=PROBE_TIMEOUT_S).decode("ascii", "replace").split()
        try:
            major, minor = (int(x) for x in out[2].split(".")[:2])
            _VERSION_OK.append((major, minor) >= (2, 31))
        except (IndexError, ValueError):
            _VERSION_OK.append(False)
    return _VERSION_OK[0]


def _filter_drivers(root: str, env: dict) -> list:
    """The filter drivers the repository's configuration (or the user's) defines."""
    try:
        out = _git(root, ["config", "--null", "--get-regexp", r"^filter\."], env, timeout=PROBE_TIMEOUT_S)
    except AttemptError as e:  # exit 1: no such key (another failure fails the diff next)
        if getattr(e, "timed_out", False):
            raise
        return []
    names = set()
    for item in out.split(b"\0"):
        key = item.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        if key.startswith("filter.") and key.count(".") >= 2:
            names.add(key[len("filter."):key.rfind(".")])
    return sorted(names)


def take(directory: str) -> Snapshot:
    """The snapshot of the repository holding `directory`; AttemptError `snapshot.not_git`
    outside a repository, `snapshot.git_failed` when git fails."""
    info = gitinfo.git_info(directory)
    if info.head is None and info.branch is None and not os.path.lexists(os.path.join(info.root or directory, ".git")):
        raise AttemptError("snapshot.not_git", "not inside a git repository", exit_status=1)
    root = info.root or directory
    env = _env(FIXED_CONFIG)
    if not _version_ok(env):
        raise AttemptError("snapshot.old_git", "git 2.31 or newer is needed (older ones cannot be told to run "
                           "none of the repository's filters)", exit_status=1)
    overrides = list(FIXED_CONFIG)
    for name in _filter_drivers(root, env):
        overrides += [(f"filter.{name}.clean", ""), (f"filter.{name}.smudge", ""), (f"filter.{name}.process", ""),
                      (f"filter.{name}.required", "false")]
    env = _env(overrides)
    staged, unstaged = hashlib.sha256(), hashlib.sha256()
    _git(root, ["diff", "--cached", *DIFF_FLAGS], env, staged)
    _git(root, ["diff", *DIFF_FLAGS], env, unstaged)
    listing = _git(root, ["ls-files", "--others", "--exclude-standard"], env)
    lines = sorted(x for x in listing.split(b"\n") if x)
    untracked = b"".join(x + b"\n" for x in lines)
    empty = hashlib.sha256(b"").hexdigest()
    snap = Snapshot(root=root, branch=info.branch, head=info.head,
                    repo_root_hash=sha(root.encode("utf-8", "surrogateescape")),
                    staged_diff_hash="sha256:" + staged.hexdigest(),
                    unstaged_diff_hash="sha256:" + unstaged.hexdigest(),
                    untracked_files_hash=sha(untracked), untracked_count=len(lines))
    snap["dirty"] = bool(lines) or staged.hexdigest() != empty or unstaged.hexdigest() != empty
    return snap
