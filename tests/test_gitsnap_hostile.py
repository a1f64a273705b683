"""Git snapshots in hostile repositories (spec/evidence.md §4, DESIGN.md invariant 8): nothing a
nested repository configures runs (git never runs inside a submodule or an embedded
repository), and a FIFO where git reads a file cannot hang `attempt run` (every git call is
bounded; the run records no snapshot, says so in a note, and runs its command)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import run_attempt

from attemptdb.evidence import gitsnap

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
PY = sys.executable


def git(cwd, *args):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def commit(repo, name, text):
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-qm", name)
    return git(repo, "rev-parse", "HEAD").decode().strip()


@pytest.fixture
def nested(tmp_path, home):
    """(superproject, marker): `super/sub` is an embedded repository the superproject tracks as a
    gitlink, its HEAD one commit past the recorded one, and its own config names a clean filter
    that creates `marker` for every file; `sub/f` is stat-dirty, so a `git status` run inside
    `sub` runs that filter."""
    sup, marker = tmp_path / "super", tmp_path / "PWNED"
    sub = sup / "sub"
    sub.mkdir(parents=True)
    git(sub, "init", "-q")
    commit(sub, "f", "a\n")
    git(sup, "init", "-q")
    commit(sup, "top.txt", "top\n")
    git(sup, "add", "sub")  # an embedded repository: a gitlink (mode 160000)
    git(sup, "commit", "-qm", "sub")
    commit(sub, "g", "b\n")  # sub's HEAD moves past the commit the superproject records
    os.utime(sub / "f", (1577836800, 1577836800))
    git(sub, "update-index", "--refresh")
    git(sub, "config", "filter.evil.clean", f"touch '{marker}'; cat")
    (sub / ".git" / "info").mkdir(exist_ok=True)
    (sub / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    os.utime(sub / "f")  # stat-dirty: a status inside sub re-reads f through the filter
    return sup, marker


def test_a_nested_repositorys_filter_never_runs_and_the_superproject_is_still_recorded(nested, db, home):
    sup, marker = nested
    p = run_attempt(["snapshot", "--json", "--db", db], cwd=sup)
    assert not marker.exists(), "the nested repository's filter driver ran"
    assert p.returncode == 0, p.stderr
    snap = json.loads(p.stdout)["snapshot"]
    assert snap["root"] == str(sup) and snap["head"] == git(sup, "rev-parse", "HEAD").decode().strip()
    empty = "sha256:" + hashlib.sha256(b"").hexdigest()
    assert snap["staged_diff_hash"] == snap["untracked_files_hash"] == empty and snap["untracked_count"] == 0
    # the submodule's moved HEAD is seen from the superproject: the gitlink diff, no `-dirty`
    old, new = (git(sup, "rev-parse", "HEAD:sub").decode().strip(),
                git(sup / "sub", "rev-parse", "HEAD").decode().strip())
    want = (f"diff --git a/sub b/sub\nindex {old}..{new} 160000\n--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n"
            f"-Subproject commit {old}\n+Subproject commit {new}\n").encode()
    assert snap["unstaged_diff_hash"] == "sha256:" + hashlib.sha256(want).hexdigest() and snap["dirty"] is True
    assert not marker.exists()

    # a staged gitlink change is in the staged diff, still without entering sub
    git(sup, "add", "sub")
    os.utime(sup / "sub" / "f")
    staged = gitsnap.take(str(sup))
    assert staged["staged_diff_hash"] == "sha256:" + hashlib.sha256(want).hexdigest()
    assert staged["unstaged_diff_hash"] == empty and staged["dirty"] is True
    assert not marker.exists()

    # attempt run in the superproject: both snapshots taken, the command ran, its status kept
    p = run_attempt(["run", "--db", db, "--", PY, "-c", "print('RAN'); raise SystemExit(5)"], cwd=sup)
    assert p.returncode == 5 and p.stdout == b"RAN\n" and b"no git snapshot" not in p.stderr, p.stderr
    assert not marker.exists()
    p = run_attempt(["events", "--jsonl", "--db", db])
    snaps = [json.loads(x) for x in p.stdout.decode().splitlines() if '"git.snapshot"' in x]
    assert [e["attrs"]["x_attempt_snapshot"] for e in snaps] == ["manual", "run.start", "run.end"]


def release(repo, fifo):
    """End what a run that hung left behind: the git processes working in `repo` (only this test
    starts any there), else let a reader blocked on `fifo` see EOF."""
    if os.path.isdir("/proc/self"):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.readlink(f"/proc/{pid}/cwd") == str(repo):
                    os.kill(int(pid), 9)
            except OSError:
                pass
        return
    for _ in range(200):
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody is waiting
            time.sleep(0.05)
            continue
        os.close(fd)


@pytest.mark.parametrize("where", ["HEAD", "config"])
def test_a_fifo_in_dot_git_does_not_hang_run_and_the_command_runs(tmp_path, db, home, where):
    repo = tmp_path / "r"
    if where == "HEAD":
        (repo / ".git").mkdir(parents=True)
    else:
        repo.mkdir()
        git(repo, "init", "-q")
        os.unlink(repo / ".git" / "config")
    fifo = repo / ".git" / where
    os.mkfifo(fifo)
    try:
        t0 = time.monotonic()
        try:
            p = run_attempt(["run", "--db", db, "--", PY, "-c", "print('RAN'); raise SystemExit(7)"],
                            cwd=repo, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"attempt run hung on a FIFO at .git/{where}")
        took = time.monotonic() - t0
        assert p.returncode == 7 and p.stdout == b"RAN\n", p.stderr
        assert p.stderr.count(b"note: no git snapshot at run.") == 2, p.stderr
        assert b"error[snapshot.git_failed]" in p.stderr
        assert took < 4 * gitsnap.PROBE_TIMEOUT_S + 10, took

        p = run_attempt(["snapshot", "--db", db], cwd=repo, timeout=60)
        assert p.returncode == 1 and b"error[snapshot.git_failed]" in p.stderr, p.stderr
    finally:
        release(repo, fifo)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc")
def test_a_git_call_that_does_not_answer_is_killed_with_its_process_group(tmp_path, monkeypatch):
    """The bound covers git's own children: the whole group is gone when _git gives up."""
    fake = tmp_path / "bin"
    fake.mkdir()
    pidfile = tmp_path / "child.pid"
    (fake / "git").write_text(f"#!/bin/sh\nsleep 600 &\necho $! > '{pidfile}'\nwait\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ.get('PATH', '')}")
    t0 = time.monotonic()
    with pytest.raises(gitsnap.AttemptError) as e:
        gitsnap._git(str(tmp_path), ["diff"], dict(os.environ), timeout=1)
    assert e.value.code == "snapshot.git_failed" and time.monotonic() - t0 < 10
    child = int(pidfile.read_text())
    for _ in range(100):
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    break  # killed; only its reaping is left
        except OSError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        pytest.fail("git's child outlived the timeout")
