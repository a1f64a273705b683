"""The wheel, not only the source tree: built and installed non-editable, `attempt` finds its
grammar, migrations, spec and fixtures as package data and runs init/demo/verify."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    # build from a copy without build/ or *.egg-info: a stale build/lib from an earlier build would
    # hide a subpackage the metadata forgot to list
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", ".venv",
                                                                "__pycache__", ".pytest_cache", ".hypothesis"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(work / "dist"), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    wheel = next((work / "dist").glob("attemptdb-*.whl"))
    target = work / "site"
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                           str(target), str(wheel)], capture_output=True, text=True)
    assert inst.returncode == 0, inst.stderr
    return wheel, target


def _run(target, args, cwd, home):
    env = dict(os.environ, PYTHONPATH=str(target), HOME=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_STATE_HOME=str(home / "state"), NO_COLOR="1")
    env.pop("ATTEMPTDB_PATH", None)
    return subprocess.run([sys.executable, str(target / "bin" / "attempt")] + args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_wheel_ships_data_folders_and_the_script(installed):
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("attemptdb/migrations/0001_events.sql", "attemptdb/spec/canonical-event.md",
                   "attemptdb/spec/bundle-v1.schema.json",
                   "attemptdb/fixtures/demo/story.json", "attemptdb-0.1.0.data/scripts/attempt",
                   "attemptdb/readers/web/templates/attemptdb/needs_you.html"):
        assert needed in names, needed
    assert any(n.startswith("attemptdb/grammar/") and n.endswith(".peg") for n in names)
    assert not any(n.startswith("tests/") for n in names)
    # every subpackage of the source tree, found rather than listed, so a new one cannot be left out
    sources = sorted(p.relative_to(ROOT).as_posix() for p in (Path(ROOT) / "attemptdb").rglob("*.py")
                     if "__pycache__" not in p.parts)
    assert "attemptdb/projections/__init__.py" in sources
    missing = [s for s in sources if s not in names]
    assert missing == [], missing


def test_installed_attempt_runs_init_demo_verify(installed, tmp_path):
    _, target = installed
    home = tmp_path / "home"
    home.mkdir()
    cwd = tmp_path / "elsewhere"  # not the source tree: nothing may come from there
    cwd.mkdir()
    r = _run(target, ["--help"], cwd, home)
    assert r.returncode == 0 and "capture" in r.stdout
    r = _run(target, ["init"], cwd, home)
    assert r.returncode == 0, r.stderr
    assert (home / "data" / "attemptdb" / "attempt.db").exists()
    r = _run(target, ["demo", "--db", str(tmp_path / "demo.db")], cwd, home)
    assert r.returncode == 0, r.stderr
    assert "ok: " in r.stdout
    r = _run(target, ["verify", "--db", str(tmp_path / "demo.db")], cwd, home)
    assert r.returncode == 0 and r.stdout.startswith("ok: ")
    keys = os.listdir(home / "data" / "attemptdb" / "keys")
    assert len([k for k in keys if k.endswith(".key")]) == 1, keys  # init's: the demo left none
    # a bundle (its manifest schema is package data) exported and verified by the wheel: of the
    # database `init` made (the demo deletes its one-off key, so nothing signs its file again)
    r = _run(target, ["note", "a bundle needs an event"], cwd, home)
    assert r.returncode == 0, r.stderr
    bundle = str(tmp_path / "note.zip")
    r = _run(target, ["bundle", "export", bundle], cwd, home)
    assert r.returncode == 0, r.stderr
    r = _run(target, ["bundle", "verify", bundle], cwd, home)
    assert r.returncode == 0 and r.stdout.startswith("ok: bundle bun_"), r.stdout + r.stderr
    mod = subprocess.run([sys.executable, "-c", "import attemptdb.resources as r; print(r.folder('migrations'))"],
                         env=dict(os.environ, PYTHONPATH=str(target)), cwd=cwd, capture_output=True, text=True)
    assert mod.stdout.strip().startswith(str(target))
