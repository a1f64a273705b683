"""gitinfo.git_info against real repositories made with `git` in temporary directories, compared
with what `git` itself reports; and garbage, which must degrade to None, never raise."""

import os
import shutil
import subprocess
import sys

import pytest

from attemptdb.capture import gitinfo
from attemptdb.capture.gitinfo import GitInfo, git_info

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def gitenv(tmp_path, monkeypatch):
    """`git` isolated from the user's and the system's configuration."""
    home = tmp_path / "githome"
    home.mkdir()
    for k, v in {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                 "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                 "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}.items():
        monkeypatch.setenv(k, v)
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE"):
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def git(cwd, *args, check=True):
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and p.returncode:
        raise AssertionError(f"git {' '.join(args)}: {p.stderr}")
    return p.stdout.strip() if p.returncode == 0 else None


def init(path, *extra, branch="main"):
    os.makedirs(path, exist_ok=True)
    git(path, "init", "-q", "-b", branch, *extra)
    return str(path)


def commit(path, msg="c"):
    git(path, "commit", "-q", "--allow-empty", "-m", msg)
    return git(path, "rev-parse", "HEAD")


def first_remote_url(path):
    """The remote §3.7 picks, from git: origin, else the first url in config-file order."""
    origin = git(path, "remote", "get-url", "origin", check=False)
    if origin is not None:
        return origin
    lines = git(path, "config", "--get-regexp", r"^remote\..*\.url$", check=False)
    if not lines:
        return None
    name = lines.splitlines()[0].split(" ", 1)[0][len("remote."):-len(".url")]
    return git(path, "remote", "get-url", name)


def what_git_says(cwd):
    root = git(cwd, "rev-parse", "--show-toplevel", check=False)
    branch = git(cwd, "branch", "--show-current", check=False) or None
    head = git(cwd, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return GitInfo(root, first_remote_url(cwd), branch, head)


def same_as_git(cwd):
    mine = git_info(cwd)
    assert mine == what_git_says(cwd), (mine, what_git_says(cwd))
    return mine


# --- compared with git ----------------------------------------------------------------------

def test_a_branch_with_commits_from_the_root_and_from_deep_inside(gitenv):
    r = init(gitenv / "repo")
    sha = commit(r)
    git(r, "remote", "add", "origin", "git@github.com:example/project.git")
    info = same_as_git(r)
    assert info == GitInfo(r, "git@github.com:example/project.git", "main", sha)
    deep = os.path.join(r, "a", "b", "c")
    os.makedirs(deep)
    assert same_as_git(deep) == info
    assert info.root == r and info.remote.endswith(".git") and info.branch == "main" and info.head == sha


def test_an_unborn_branch_has_a_name_but_no_head(gitenv):
    r = init(gitenv / "fresh", branch="trunk")
    assert same_as_git(r) == GitInfo(r, None, "trunk", None)


def test_a_slashed_branch_name(gitenv):
    r = init(gitenv / "repo")
    commit(r)
    git(r, "checkout", "-q", "-b", "feature/x-1")
    assert same_as_git(r).branch == "feature/x-1"


def test_detached_head_has_no_branch(gitenv):
    r = init(gitenv / "repo")
    first = commit(r, "one")
    commit(r, "two")
    git(r, "checkout", "-q", "--detach", first)
    assert same_as_git(r) == GitInfo(r, None, None, first)


def test_packed_refs_resolve_once_loose_refs_are_gone(gitenv):
    r = init(gitenv / "repo")
    sha = commit(r)
    git(r, "branch", "other")
    git(r, "tag", "-a", "v1", "-m", "annotated")  # a peeled `^` line in packed-refs
    git(r, "pack-refs", "--all")
    assert not os.path.exists(os.path.join(r, ".git", "refs", "heads", "main"))
    assert same_as_git(r) == GitInfo(r, None, "main", sha)
    git(r, "checkout", "-q", "other")
    assert same_as_git(r).branch == "other"


def test_a_loose_ref_wins_over_a_stale_packed_one(gitenv):
    r = init(gitenv / "repo")
    commit(r, "one")
    git(r, "pack-refs", "--all")
    newer = commit(r, "two")  # written loose, packed-refs still holds the old sha
    assert same_as_git(r).head == newer


def test_worktrees_read_their_gitdir_file_and_the_common_dir(gitenv):
    r = init(gitenv / "repo")
    sha = commit(r)
    git(r, "remote", "add", "origin", "https://example.com/acme/repo.git")
    wt = str(gitenv / "wt")
    git(r, "worktree", "add", "-q", "-b", "feature", wt)
    with open(os.path.join(wt, ".git")) as f:
        assert f.read().startswith("gitdir:")
    info = same_as_git(wt)
    assert info == GitInfo(wt, "https://example.com/acme/repo.git", "feature", sha)
    newer = commit(wt, "on feature")
    git(r, "pack-refs", "--all")
    assert same_as_git(wt).head == newer
    assert same_as_git(os.path.join(wt)).branch == "feature"
    assert same_as_git(r).branch == "main"


def test_a_detached_worktree(gitenv):
    r = init(gitenv / "repo")
    sha = commit(r)
    wt = str(gitenv / "wt")
    git(r, "worktree", "add", "-q", "--detach", wt)
    assert same_as_git(wt) == GitInfo(wt, None, None, sha)


def test_a_submodule_style_relative_gitdir(gitenv):
    lib = init(gitenv / "lib")
    commit(lib)
    top = init(gitenv / "top")
    commit(top)
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "sub")
    sub = os.path.join(top, "sub")
    with open(os.path.join(sub, ".git")) as f:
        assert f.read().strip() == "gitdir: ../.git/modules/sub"
    info = same_as_git(sub)
    assert info.root == sub and info.remote == lib and info.head == git(lib, "rev-parse", "HEAD")


def test_a_separate_git_dir(gitenv):
    r = str(gitenv / "work")
    git(str(gitenv), "init", "-q", "-b", "main", "--separate-git-dir", str(gitenv / "store.git"), r)
    sha = commit(r)
    assert same_as_git(r) == GitInfo(r, None, "main", sha)


def test_a_symref_chain_is_followed(gitenv):
    r = init(gitenv / "repo")
    sha = commit(r)
    git(r, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    git(r, "symbolic-ref", "HEAD", "refs/heads/alias")
    assert same_as_git(r) == GitInfo(r, None, "main", sha)


def test_symref_chains_stop_after_eight_links(gitenv):
    r = init(gitenv / "repo")
    sha = commit(r)
    heads = os.path.join(r, ".git", "refs", "heads")
    for i in range(1, 10):
        with open(os.path.join(heads, f"s{i}"), "w") as f:
            f.write(f"ref: refs/heads/{'main' if i == 1 else f's{i - 1}'}\n")
    with open(os.path.join(r, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/s7\n")  # HEAD -> s7 -> ... -> s1 -> main: 8 links
    assert git_info(r) == GitInfo(r, None, "main", sha)
    with open(os.path.join(r, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/s8\n")  # 9 links
    assert git_info(r) == GitInfo(r, None, None, None)
    with open(os.path.join(heads, "s1"), "w") as f:
        f.write("ref: refs/heads/s2\n")  # a cycle
    with open(os.path.join(r, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/s2\n")
    assert git_info(r) == GitInfo(r, None, None, None)


def test_sha256_repositories_have_64_hex_heads(gitenv):
    r = init(gitenv / "s256", "--object-format=sha256")
    sha = commit(r)
    assert len(sha) == 64
    assert same_as_git(r) == GitInfo(r, None, "main", sha)
    git(r, "checkout", "-q", "--detach")
    git(r, "pack-refs", "--all")
    assert same_as_git(r) == GitInfo(r, None, None, sha)


def test_origin_wins_over_earlier_remotes_and_else_the_first_in_file_order(gitenv):
    r = init(gitenv / "repo")
    commit(r)
    git(r, "remote", "add", "zeta", "https://z.example/z.git")
    git(r, "remote", "add", "alpha", "https://a.example/a.git")
    assert same_as_git(r).remote == "https://z.example/z.git"  # `git remote` would list alpha first
    git(r, "config", "--add", "remote.zeta.url", "https://z2.example/z.git")
    assert same_as_git(r).remote == "https://z.example/z.git"  # a remote's first url
    git(r, "remote", "add", "origin", "ssh://git@example.com/o.git")
    assert same_as_git(r).remote == "ssh://git@example.com/o.git"


@pytest.mark.parametrize("body,url", [
    ('[remote "origin"]\n\turl = "https://example.com/with space.git"\n', "https://example.com/with space.git"),
    ('[remote "origin"]\n  URL=https://example.com/a.git ; a comment\n', "https://example.com/a.git"),
    ('[remote "origin"]\n\turl = https://example.com/a.git # comment\n', "https://example.com/a.git"),
    ('[Remote "origin"] url = https://example.com/same-line.git\n', "https://example.com/same-line.git"),
    ('[remote "origin"]\n\turl = "https://example.com/q\\"uote#x.git"\n', 'https://example.com/q"uote#x.git'),
    ('[remote "origin"]\n\turl = https://example.com/\\\n  continued.git\n', "https://example.com/  continued.git"),
    ('[remote "we\\"ird"]\n\turl = https://example.com/w.git\n', "https://example.com/w.git"),
    ('[remote "Origin"]\n\turl = https://example.com/upper.git\n[remote "origin"]\n\turl = https://example.com/lower.git\n',
     "https://example.com/lower.git"),
    ('[core]\n\tbare = false\n[remote "up"]\n\tfetch = +refs/heads/*:refs/remotes/up/*\n'
     '[remote "down"]\n\turl = https://example.com/down.git\n', "https://example.com/down.git"),
    ('[remote "origin"]\r\n\turl = https://example.com/crlf.git\r\n', "https://example.com/crlf.git"),
])
def test_config_syntax_is_read_as_git_reads_it(gitenv, body, url):
    r = init(gitenv / "repo")
    with open(os.path.join(r, ".git", "config"), "a", newline="") as f:
        f.write(body)
    assert same_as_git(r).remote == url


def test_a_plain_directory_and_an_empty_dotgit_are_not_repositories(gitenv):
    plain = gitenv / "plain" / "x"
    plain.mkdir(parents=True)
    assert git_info(str(plain)) == GitInfo(str(plain))
    assert git(str(plain), "rev-parse", "--show-toplevel", check=False) is None
    r = init(gitenv / "repo")
    sha = commit(r)
    fake = os.path.join(r, "vendored")
    os.makedirs(os.path.join(fake, ".git"))  # no HEAD: git walks on to the real repository
    assert same_as_git(fake) == GitInfo(r, None, "main", sha)


def test_the_walk_up_stops_after_64_directories(gitenv):
    r = init(gitenv / "repo")
    commit(r)
    d63 = os.path.join(r, *["d"] * 63)
    d64 = os.path.join(d63, "d")
    os.makedirs(d64)
    assert git_info(d63).root == r
    assert git_info(d64) == GitInfo(d64)


def test_relative_and_pathlike_cwds(gitenv, monkeypatch):
    r = init(gitenv / "repo")
    sha = commit(r)
    monkeypatch.chdir(r)
    assert git_info(".") == GitInfo(r, None, "main", sha)
    assert git_info(gitenv / "repo") == GitInfo(r, None, "main", sha)
    assert git_info(r.encode()) == GitInfo(r, None, "main", sha)


# --- garbage degrades to None ---------------------------------------------------------------

def write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


@pytest.mark.parametrize("head", [
    "", "garbage\n", "ref:\n", "ref: \n", "ref: refs/heads/../../config\n", "ref: ../../etc/passwd\n",
    "ref: /etc/passwd\n", "ref: refs/heads/a b\n", "ref: refs/heads/x.lock\n", "ref: refs/heads/.hidden\n",
    "ref: refs/heads/a\x00b\n", "ref: HEAD\n", "0123456789abcdef\n", "g" * 40 + "\n", "a" * 41 + "\n",
    b"\xff\xfe\x00ref: refs/heads/main", "x" * 100000,
])
def test_garbage_head_degrades(gitenv, head):
    r = init(gitenv / "repo")
    commit(r)
    write(os.path.join(r, ".git", "HEAD"), head, "wb" if isinstance(head, bytes) else "w")
    info = git_info(r)
    assert info.root == r and info.branch is None and info.head is None


def test_garbage_refs_and_packed_refs_degrade(gitenv):
    r = init(gitenv / "repo")
    commit(r)
    git(r, "pack-refs", "--all")
    write(os.path.join(r, ".git", "packed-refs"), b"\x00\xff garbage refs/heads/main\nnot-a-sha refs/heads/main", "wb")
    assert git_info(r) == GitInfo(r, None, "main", None)
    write(os.path.join(r, ".git", "refs", "heads", "main"), "not a sha\n")
    assert git_info(r) == GitInfo(r, None, "main", None)
    os.remove(os.path.join(r, ".git", "refs", "heads", "main"))
    os.makedirs(os.path.join(r, ".git", "refs", "heads", "main"))  # a directory where a ref should be
    assert git_info(r) == GitInfo(r, None, "main", None)


@pytest.mark.parametrize("content", [
    "", "garbage", "gitdir:", "gitdir: \n", "gitdir: does/not/exist\n", b"gitdir: \xff\xfe\n",
    "gitdir: /dev/null\n", "gitdir: " + "x/" * 3000 + "\n",
])
def test_a_garbage_dotgit_file_degrades(gitenv, content):
    w = gitenv / "wt"
    write(str(w / ".git"), content, "wb" if isinstance(content, bytes) else "w")
    assert git_info(str(w)) == GitInfo(str(w))


@pytest.mark.parametrize("config", [
    b"\x00\xff\xfe binary", "[remote \"origin\"\n\turl = x\n", "[remote \"origin\"]\n\turl = \"unterminated\n",
    "[remote \"origin\"]\n\turl = bad\\escape\n", "[remote]\n\turl = https://no-name\n", "=\n[\n]\n\"\n",
    "[remote \"origin\"]\n\turl\n", "[remote \"origin\"]\n\turl =\n", "x" * (2 << 20),
])
def test_garbage_config_degrades(gitenv, config):
    r = init(gitenv / "repo")
    sha = commit(r)
    write(os.path.join(r, ".git", "config"), config, "wb" if isinstance(config, bytes) else "w")
    assert git_info(r) == GitInfo(r, None, "main", sha)


def test_unreadable_files_and_odd_cwds_never_raise(gitenv):
    r = init(gitenv / "repo")
    commit(r)
    for cwd in [None, 12, "", "\x00", str(gitenv / "missing" / "dir"), os.path.join(r, "nope")]:
        info = git_info(cwd)
        assert isinstance(info, GitInfo)
    assert git_info(os.path.join(r, "nope")).root == r
    if os.geteuid() != 0:
        os.chmod(os.path.join(r, ".git", "HEAD"), 0)
        try:
            assert git_info(r) == GitInfo(r, None, None, None)
        finally:
            os.chmod(os.path.join(r, ".git", "HEAD"), 0o644)
    os.remove(os.path.join(r, ".git", "HEAD"))
    os.symlink("/dev/zero", os.path.join(r, ".git", "HEAD"))  # never read a device
    assert git_info(r).head is None


def test_valid_ref_names():
    for ok in ["refs/heads/main", "refs/heads/feature/x-1", "refs/heads/ünïcode", "refs/remotes/origin/HEAD"]:
        assert gitinfo.valid_ref_name(ok), ok
    for bad in ["HEAD", "refs/heads/", "refs//heads", "refs/heads/a..b", "refs/heads/a.lock", "refs/heads/.x",
                "refs/heads/a@{1}", "refs/heads/a:b", "refs/heads/a\\b", "refs/heads/a\x7f", "refs/heads/a.", "", None]:
        assert not gitinfo.valid_ref_name(bad), bad


def test_the_module_imports_no_subprocess_and_no_heavy_modules():
    code = ("import sys; import attemptdb.capture.gitinfo as g; g.git_info('.'); "
            "bad = [m for m in ('subprocess', 're', 'json', 'typing', 'collections') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": ROOT}, cwd=ROOT, check=True).stdout.strip()
    assert out == "[]"


def test_a_fifo_in_dot_git_does_not_hang(tmp_path):
    """A repository can plant a named pipe where a ref or config file belongs; reading it must
    not block the hook (the open is non-blocking, then fstat refuses anything not regular)."""
    import subprocess
    import sys
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(repo / ".git" / "commondir")
    os.mkfifo(repo / ".git" / "config")
    code = "import sys; sys.path.insert(0, sys.argv[1]); from attemptdb.capture import gitinfo; print(gitinfo.git_info(sys.argv[2]))"
    from conftest import ROOT
    p = subprocess.run([sys.executable, "-c", code, ROOT, str(repo)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "GitInfo" in p.stdout
