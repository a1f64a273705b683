"""Git snapshots (spec/evidence.md §4): the hashes equal the ones computed independently from
`git diff`, `git diff --staged` and the sorted untracked list, in a real repository holding all
three kinds of change; and they track the tree."""

import hashlib
import json
import os
import subprocess

from conftest import run_attempt

from attemptdb.evidence import gitsnap


def git(repo, *args, env):
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True).stdout


def test_snapshot_hashes_equal_the_ones_git_and_sha256_give(tmp_path, home):
    env = dict(os.environ, HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", env=env)
    git(repo, "config", "user.email", "t@example.org", env=env)
    git(repo, "config", "user.name", "T", env=env)
    (repo / "kept.txt").write_text("line 1\nline 2\nline 3\n")
    (repo / "staged.txt").write_text("old\n")
    git(repo, "add", ".", env=env)
    git(repo, "commit", "-qm", "init", env=env)
    # all three kinds of change
    (repo / "staged.txt").write_text("new\n")
    (repo / "added.txt").write_text("brand new\n")
    git(repo, "add", "staged.txt", "added.txt", env=env)
    (repo / "kept.txt").write_text("line 1\nline two\nline 3\n")
    (repo / "sub").mkdir()
    (repo / "zeta.log").write_text("u\n")
    (repo / "sub" / "alpha.txt").write_text("u\n")
    (repo / "Ünïcode name.txt").write_text("u\n")
    (repo / ".gitignore").write_text("*.ignored\n")
    (repo / "x.ignored").write_text("not listed\n")

    staged = git(repo, "diff", "--staged", "--full-index", "--binary", env=env)
    unstaged = git(repo, "diff", "--full-index", "--binary", env=env)
    listing = git(repo, "ls-files", "--others", "--exclude-standard", env=env)
    lines = sorted(listing.splitlines())
    assert staged and unstaged and len(lines) == 4  # .gitignore, sub/alpha.txt, zeta.log, the quoted name
    want = {"staged_diff_hash": "sha256:" + hashlib.sha256(staged).hexdigest(),
            "unstaged_diff_hash": "sha256:" + hashlib.sha256(unstaged).hexdigest(),
            "untracked_files_hash": "sha256:" + hashlib.sha256(b"".join(x + b"\n" for x in lines)).hexdigest()}

    db = str(tmp_path / "s.db")
    p = run_attempt(["snapshot", "--json", "--db", db], cwd=repo, env={"HOME": str(home)})
    assert p.returncode == 0, p.stderr
    snap = json.loads(p.stdout)["snapshot"]
    assert {k: snap[k] for k in want} == want
    head = git(repo, "rev-parse", "HEAD", env=env).decode().strip()
    assert snap["head"] == head and snap["dirty"] is True and snap["untracked_count"] == 4
    assert snap["repo_root_hash"] == "sha256:" + hashlib.sha256(str(repo).encode()).hexdigest()
    p = run_attempt(["events", "--jsonl", "--db", db])
    ev = [json.loads(x) for x in p.stdout.decode().splitlines() if '"git.snapshot"' in x][0]
    assert ev["kind"] == "unknown" and ev["project"]["head"] == head and ev["attrs"]["git_dirty"] is True
    assert {k: ev["attrs"]["x_attempt_" + k] for k in want} == want

    # a clean tree hashes three empty strings and is not dirty
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "all", env=env)
    clean = gitsnap.take(str(repo / "sub"))
    empty = "sha256:" + hashlib.sha256(b"").hexdigest()
    assert clean["root"] == str(repo) and clean["dirty"] is False
    assert clean["staged_diff_hash"] == clean["unstaged_diff_hash"] == clean["untracked_files_hash"] == empty
