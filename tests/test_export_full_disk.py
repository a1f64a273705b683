"""A full disk under `attempt export DIR`, `attempt export --dataset DIR` and `attempt bundle
export OUT` is a coded error naming the place and the OS's reason, never a crash report, and
leaves nothing partial behind: no half-written Parquet file taken as an export, no generation
of the dataset without its manifest, no `.attempt-bundle-*.tmp`. The writer failing with ENOSPC
is simulated everywhere; as root a real full disk (a small tmpfs) is tried too."""

import errno
import os
import subprocess
import time

import pytest
from conftest import run_attempt

from attemptdb.cli.main import run
from attemptdb.devtools import synth
from attemptdb.exchange import stale_temp
from attemptdb.store.database import Store

pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

ENOSPC_PYARROW = "Error writing bytes to file. Detail: [errno 28] No space left on device"  # pyarrow's words


@pytest.fixture
def source(tmp_path, home):
    db = str(tmp_path / "a.db")
    st = Store.open(db)
    st.append(list(synth.generate(400, seed=7)))
    st.close()
    return db


def cli(capsys, *args):
    capsys.readouterr()
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def crash_reports(home) -> list:
    return sorted(str(p) for p in home.rglob("crash-*"))


def files_under(path) -> list:
    """Every file below `path` but a dataset device's export lock (kept: it holds nothing)."""
    return sorted(os.path.relpath(os.path.join(d, n), path) for d, _, names in os.walk(path) for n in names
                  if n != ".lock")


def full_after(monkeypatch, n: int):
    """Every ParquetWriter from the `n`th on fails its first write with ENOSPC, as pyarrow
    reports a full disk (after its file was created: a partial file is on disk). Returns the
    real one, to put back (monkeypatch.undo() would undo the isolated HOME too)."""
    real = pq.ParquetWriter
    made = [0]

    class Full:
        def __init__(self, path, schema, **kw):
            made[0] += 1
            self.n, self.w = made[0], real(path, schema, **kw)

        def write_batch(self, b):
            if self.n >= n:
                raise OSError(errno.ENOSPC, ENOSPC_PYARROW)
            self.w.write_batch(b)

        def close(self):
            self.w.close()
    monkeypatch.setattr(pq, "ParquetWriter", Full)
    return real


def check_coded(code, err, home, kind: str, where: str) -> None:
    assert code == 2, err
    assert f"error[{kind}.unwritable]: cannot write in {where}: No space left on device" in err, err  # was error[internal]
    assert "nothing was" in err and "Detail" not in err and "internal" not in err, err
    assert crash_reports(home) == []


def test_export_on_a_full_disk_is_coded_and_leaves_no_file(source, tmp_path, home, monkeypatch, capsys):
    out = tmp_path / "out"
    real = full_after(monkeypatch, 3)  # two tables placed, the third fails midway
    code, _, err = cli(capsys, "export", str(out), "--db", source)
    check_coded(code, err, home, "export", str(out))
    assert files_under(out) == []  # no manifest, no table file, no temporary file
    monkeypatch.setattr(pq, "ParquetWriter", real)
    code, _, err = cli(capsys, "export", str(out), "--db", source)  # with room again: a whole export
    assert code == 0, err
    assert "manifest.json" in files_under(out)


def test_export_force_on_a_full_disk_leaves_no_manifest_vouching(source, tmp_path, home, monkeypatch, capsys):
    out = tmp_path / "out"
    assert cli(capsys, "export", str(out), "--db", source)[0] == 0
    full_after(monkeypatch, 2)
    code, _, err = cli(capsys, "export", str(out), "--force", "--db", source)
    check_coded(code, err, home, "export", str(out))
    left = files_under(out)
    assert "manifest.json" not in left and not [n for n in left if n.startswith(".attempt-export-")], left


def test_dataset_export_on_a_full_disk_publishes_no_partial_generation(source, tmp_path, home, monkeypatch, capsys):
    ds = tmp_path / "ds"
    real = full_after(monkeypatch, 4)
    code, _, err = cli(capsys, "export", "--dataset", str(ds), "--db", source)
    check_coded(code, err, home, "dataset", str(ds))
    assert files_under(ds) == []  # no part file, no manifest, no .attempt-dataset-*.tmp
    monkeypatch.setattr(pq, "ParquetWriter", real)
    code, out, err = cli(capsys, "export", "--dataset", str(ds), "--db", source)  # the same generation, whole
    assert code == 0 and "generation 1 of" in out, err
    code, out, err = cli(capsys, "query", "--engine", "datafusion", "--from", str(ds), "--db", source,
                         "SELECT count(*) AS n FROM sessions")
    assert code == 0, err  # no file outside a manifest: the dataset reads


def test_dataset_manifest_on_a_full_disk_publishes_nothing(source, tmp_path, home, monkeypatch, capsys):
    ds = tmp_path / "ds"
    real = os.fsync

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert cli(capsys, "export", "--dataset", str(tmp_path / "first"), "--db", source)[0] == 0  # the key exists
    monkeypatch.setattr(os, "fsync", fsync)  # the manifest's write is the one that fails
    code, _, err = cli(capsys, "export", "--dataset", str(ds), "--db", source)
    monkeypatch.setattr(os, "fsync", real)
    check_coded(code, err, home, "dataset", str(ds))
    assert files_under(ds) == []


@pytest.mark.parametrize("content", [False, True])
def test_bundle_export_on_a_full_disk_is_coded_and_leaves_no_temporary(source, tmp_path, home, monkeypatch, capsys,
                                                                       content):
    assert cli(capsys, "bundle", "export", str(tmp_path / "first.zip"), "--db", source)[0] == 0  # the key exists
    outdir = tmp_path / "out"
    outdir.mkdir()
    real = os.fsync

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", fsync)
    code, _, err = cli(capsys, "bundle", "export", str(outdir / "b.zip"), "--db", source,
                       *(["--include-content"] if content else []))
    monkeypatch.setattr(os, "fsync", real)
    check_coded(code, err, home, "bundle", str(outdir))
    assert os.listdir(outdir) == []  # neither OUT nor .attempt-bundle-*.tmp


def test_bundle_export_removes_only_the_stale_temporaries_of_dead_writers(source, tmp_path, home, capsys):
    dead = subprocess.Popen(["true"])
    dead.wait()
    old = time.time() - 2 * stale_temp.STALE_AFTER_S
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")

    def tmp(name, *, pid, mtime=old, link=False):
        p = tmp_path / name.format(pid=pid)
        if link:
            p.symlink_to(outside)
        else:
            p.write_bytes(b"PK half a bundle")
        os.utime(p, (mtime, mtime), follow_symlinks=not link)
        return p.name
    stale = tmp(".attempt-bundle-{pid}-ab_cd123.tmp", pid=dead.pid)  # what kill -9 leaves
    kept = [tmp(".attempt-bundle-{pid}-ab_cd124.tmp", pid=os.getpid()),  # its writer is alive
            tmp(".attempt-bundle-{pid}-ab_cd125.tmp", pid=dead.pid, mtime=time.time()),  # fresh: maybe elsewhere
            tmp(".attempt-bundle-{pid}-ab_cd126.tmp", pid=dead.pid, link=True),  # a link: never
            tmp(".attempt-bundle-{pid}-ab_cd127.tmp.keep", pid=dead.pid),  # not our name
            tmp(".attempt-bundle-ab_cd128.tmp", pid=dead.pid),  # an older version's name: no pid
            tmp(".attempt-bundle-0-ab_cd129.tmp", pid=0)]
    code, _, err = cli(capsys, "bundle", "export", str(tmp_path / "b.zip"), "--db", source)
    assert code == 0, err
    left = os.listdir(tmp_path)
    assert stale not in left and all(k in left for k in kept), left
    assert outside.read_text() == "keep"


def _mount_full(path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a real full disk needs root (mount -t tmpfs); the simulated ENOSPC tests cover the path")
    os.makedirs(path)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {p.stderr.strip()}")


@pytest.mark.parametrize("command", ["export", "dataset", "bundle"])
def test_a_real_full_disk(source, tmp_path, home, command):
    full = tmp_path / "full"
    _mount_full(full)
    try:
        target = full / "out"
        args = {"export": ["export", str(target)], "dataset": ["export", "--dataset", str(target)],
                "bundle": ["bundle", "export", str(target), "--include-content"]}[command]
        p = run_attempt([*args, "--db", source])
        err = p.stderr.decode()
        kind, where = {"export": ("export", target), "dataset": ("dataset", target),
                       "bundle": ("bundle", full)}[command]
        check_coded(p.returncode, err, home, kind, str(where))
        assert files_under(full) == []  # folders at most: no file, partial or temporary
    finally:
        subprocess.run(["umount", str(full)], capture_output=True)


def test_export_removes_the_stale_temporaries_of_a_killed_export(source, tmp_path, home, capsys):
    """`attempt export DIR` killed with -9 left `.attempt-export-<pid>-<table>.parquet` files
    that no later export removed (stale_temp: the pid dead, an hour untouched)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    out = tmp_path / "x"
    out.mkdir()
    old = time.time() - 2 * stale_temp.STALE_AFTER_S
    stale = out / f".attempt-export-{dead.pid}-sessions.parquet"
    fresh = out / f".attempt-export-{dead.pid}-turns.parquet"
    other = out / f".attempt-export-{dead.pid}-turns.parquet.bak"
    for p in (stale, fresh, other):
        p.write_bytes(b"PAR1 half")
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    code, _, err = cli(capsys, "export", str(out), "--db", source)
    assert code == 0, err
    left = set(os.listdir(out))
    assert stale.name not in left and {fresh.name, other.name} <= left and "manifest.json" in left
