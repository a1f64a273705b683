"""The database is private (README: "One file … mode 0600"): a file AttemptDB turns into a
database — an empty one a user `touch`ed with the umask's 0644 — gets mode 0600 before its
first byte (and so do its -wal and -shm, which SQLite creates with the file's mode), only when
it is the user's own and never through a symlink; `attempt init` on such a file says it created
the database; a database with content keeps the mode its user gave it, and `attempt doctor`
(and `init`) say so with a coded line and the chmod to run."""

import json
import os
import shutil
import stat
import tempfile

import pytest
from conftest import run_attempt

from attemptdb.store import sidefiles
from attemptdb.store.database import Store


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _touch(path, mode=0o644) -> str:
    with open(path, "wb"):
        pass
    os.chmod(path, mode)
    return str(path)


def _env(home, **extra):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "COLUMNS": "80", "NO_COLOR": "1", **extra}


def test_an_empty_file_made_a_database_is_0600_and_so_are_its_wal_and_shm(home, tmp_path):
    path = _touch(tmp_path / "e.db")
    st = Store.open(path)
    try:
        assert st.created
        assert _mode(path) == 0o600
        for side in ("-wal", "-shm"):  # while the connection holds them
            assert _mode(path + side) == 0o600, side
    finally:
        st.close()
    st = Store.open(path)  # opened again: nothing new
    assert not st.created
    st.close()


def test_a_note_into_a_touched_file_leaves_it_private(home, tmp_path):
    """The walkthrough: `touch e2.db; ATTEMPTDB_PATH=e2.db attempt note secret` left -rw-r--r--."""
    path = _touch(tmp_path / "e2.db")
    p = run_attempt(["note", "secret"], env=_env(home, ATTEMPTDB_PATH=path))
    assert p.returncode == 0, p.stderr.decode()
    assert _mode(path) == 0o600


def test_init_on_an_empty_file_says_created(home, tmp_path):
    path = _touch(tmp_path / "e3.db")
    p = run_attempt(["init", "--db", path], env=_env(home))
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().splitlines()[0] == f"{path}: created"
    assert _mode(path) == 0o600 and p.stderr == b""
    p = run_attempt(["init", "--db", path, "--json"], env=_env(home))
    assert json.loads(p.stdout)["created"] is False  # the second time it was there
    path2 = _touch(tmp_path / "e4.db")
    assert json.loads(run_attempt(["init", "--db", path2, "--json"], env=_env(home)).stdout)["created"] is True


def test_a_symlinked_database_is_never_chmodded_through_the_link(home, tmp_path):
    real = _touch(tmp_path / "real.db")
    link = str(tmp_path / "link.db")
    os.symlink(real, link)
    st = Store.open(link)
    st.close()
    assert _mode(real) == 0o644  # left as it was ...
    assert sidefiles.exposed(link) == [(real, 0o644)]  # ... and doctor will say so


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_someone_elses_empty_file_is_not_chmodded(home, tmp_path):
    path = _touch(tmp_path / "theirs.db")
    os.chown(path, 65534, 65534)
    sidefiles.make_private(path)
    assert _mode(path) == 0o644


@pytest.fixture
def short_dir():
    """A directory with a path short enough for a doctor line holding it to fit 80 columns."""
    d = tempfile.mkdtemp(prefix="adb-mode-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_database_with_content_keeps_its_mode_and_doctor_warns(home, short_dir):
    path = os.path.join(short_dir, "real db.db")
    assert run_attempt(["init", "--db", path], env=_env(home)).returncode == 0
    assert _mode(path) == 0o600
    assert run_attempt(["doctor", "--db", path], env=_env(home)).returncode == 0  # private: no problem
    os.chmod(path, 0o644)
    assert run_attempt(["note", "x", "--db", path], env=_env(home)).returncode == 0
    assert _mode(path) == 0o644  # never chmodded silently: the user made it readable
    p = run_attempt(["doctor", "--db", path], env=_env(home))
    out = p.stdout.decode()
    assert p.returncode == 1 and "Traceback" not in p.stderr.decode()
    text = " ".join(ln.strip() for ln in out.splitlines())
    assert "problem: the database is not private to you: " in text and "[store.exposed]" in text, out
    assert f"{path} (mode 644)" in text and f"`chmod 600 '{path}'" in text, out
    assert all(len(ln) <= 80 for ln in out.splitlines()), out
    rep = json.loads(run_attempt(["doctor", "--db", path, "--json"], env=_env(home)).stdout)
    loose = rep["database"]["exposed"]  # (with the -wal and -shm SQLite made 0644 beside it, if still there)
    assert rep["ok"] is False and loose[0] == {"path": path, "mode": "644"}
    assert {e["path"] for e in loose} <= {path, path + "-wal", path + "-shm"}
    assert any("[store.exposed]" in x for x in rep["problems"])
    p = run_attempt(["init", "--db", path], env=_env(home))  # init says so too, on stderr
    assert p.returncode == 0 and "[store.exposed]" in p.stderr.decode() and _mode(path) == 0o644
    for e in sidefiles.exposed(path):  # the chmod doctor said to run
        os.chmod(e[0], 0o600)
    assert run_attempt(["doctor", "--db", path], env=_env(home)).returncode == 0


def test_doctor_names_a_wal_others_can_read(home, tmp_path):
    path = str(tmp_path / "w.db")
    assert run_attempt(["init", "--db", path], env=_env(home)).returncode == 0
    st = Store.open(path)  # holds the -wal and -shm open, as a running daemon does
    try:
        st.set_meta("x", "1")
        os.chmod(path + "-wal", 0o640)
        assert sidefiles.exposed(path) == [(path + "-wal", 0o640)]
        p = run_attempt(["doctor", "--db", path, "--json"], env=_env(home))
        rep = json.loads(p.stdout)
        assert p.returncode == 1 and rep["database"]["exposed"] == [{"path": path + "-wal", "mode": "640"}]
        assert any(f"chmod 600 {path}-wal" in x for x in rep["problems"]), rep["problems"]
    finally:
        st.close()
