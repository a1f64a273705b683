"""The fault-injection suite (attemptdb.devtools.faultbench), family by family: kill -9 of every writing
command, I/O errors injected below SQLite, a real full disk, read-only mounts, damaged files.
Every family must end with no acknowledged event lost, no traceback, no file failing
integrity_check or verify, and nothing else wrong (each failure is named).

Short in CI; `ATTEMPTDB_LONG=1` runs the long form (`attempt bench faults --long` prints the
same figures as a table)."""

import os
import random

import pytest

from attemptdb.devtools import faultbench
from attemptdb.devtools.faultbench.world import World

LONG = os.environ.get("ATTEMPTDB_LONG") == "1"
SIZES = faultbench.LONG if LONG else faultbench.SHORT
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def world(tmp_path):
    w = World(str(tmp_path / "faults"))
    os.makedirs(w.root)
    return w


def run(name, world, seed=14):
    tallies = faultbench.run_family(name, world, random.Random(seed), SIZES[name])
    for t in tallies:
        if t.extra.get("skipped"):
            pytest.skip(f"{t.family}: {t.extra['skipped']}")
        assert t.failures == [], t.failures
        # a short read injected mid-file is a file cut short under SQLite (ioerr._library_checks):
        # it may damage the file, and then verify must say so
        damaged_by_short_reads = t.extra.get("short_read_damage_reported_by_verify", 0)
        assert (t.acked_lost, t.tracebacks, t.integrity_failures - damaged_by_short_reads, t.verify_failures) \
            == (0, 0, 0, 0), t.as_dict()
        assert t.trials > 0 and t.faults > 0, t.as_dict()
    return tallies


@pytest.mark.parametrize("name", ["import", "reproject", "bundle", "transcripts"])
def test_kill_9(name, world):
    run(name, world)


@pytest.mark.parametrize("name", ["burst", "daemon"])
def test_kill_9_of_hooks_and_daemons_loses_no_acknowledged_event(name, world):
    """Every capture that returned to its hook is in the file or the spool, and in the file
    after the next read (the tally's acked_lost, asserted 0 by `run`)."""
    t = run(name, world)[0]
    assert t.extra["acked"] >= SIZES[name]["hooks"] and t.extra.get("hooks_killed", 0) > 0
    if name == "daemon":
        assert t.extra.get("daemons_killed", 0) > 0


def test_io_errors_below_sqlite(world):
    tallies = run("ioerr", world)
    assert [t.family for t in tallies] == ["I/O errors: capture", "I/O errors: import batch", "I/O errors: checkpoint"]
    # the sweep reached every kind of call on every path
    for t in tallies:
        calls = next(v for k, v in t.extra.items() if k.startswith("calls_"))
        assert all(calls[op] > 0 for op in ("read", "write", "sync", "lock")), calls


@pytest.mark.skipif(not ROOT, reason="a real full disk needs a small tmpfs, which needs root to mount")
def test_full_disk(world):
    t = run("disk", world)[0]
    # the file beside a full disk took what it could; what could go nowhere was counted
    assert t.extra["stored"] + t.extra["lost_counted"] + t.extra["lost_said_on_stderr"] == t.extra["captures"]


@pytest.mark.skipif(not ROOT, reason="read-only mounts need root (root ignores file modes)")
def test_read_only_file_folder_and_filesystem(world):
    t = run("readonly", world)[0]
    assert t.extra["reads_ok"] == 5 * t.trials


def test_damaged_files(world):
    t = run("damaged", world)[0]
    assert t.extra.get("verify_missed", 0) == 0 and t.extra.get("written_after_seen", 0) == 0
    assert t.extra["detected_by_verify"] >= t.extra["detected_by_integrity_check"] > 0
    assert t.extra["recovered_files"] >= 1
