"""`attempt bench query` reports each statement process's own peak RSS, not its parent's.

Memory figures with wide margins only (never timings): a child's `ru_maxrss` on Linux includes
the memory it ran in before exec, so a bench process that has grown (building a history takes
~180 MB) used to give every statement its own size."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="ru_maxrss is in KiB and inherited across exec as described on Linux")

PROBE = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from attemptdb.devtools.bench_query import Launcher
big = b"x" * (300 << 20)  # the parent now has a 300 MiB high-water mark
with Launcher(dict(os.environ)) as launcher:
    small = launcher.run([sys.executable, "-S", "-c", "pass"])
    grown = launcher.run([sys.executable, "-S", "-c", "b = b'x' * (150 << 20)"])
    failed = launcher.run([sys.executable, "-S", "-c", "raise SystemExit(3)"])
    missing = launcher.run(["/nonexistent/attempt", "--version"])
print(json.dumps({"small": small, "grown": grown, "failed": failed, "missing": missing}))
"""


def test_a_statement_process_reports_its_own_peak_rss_not_the_bench_process():
    p = subprocess.run([sys.executable, "-c", PROBE, ROOT], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    got = json.loads(p.stdout)
    wall, rss, status = got["small"]
    assert status == 0 and wall > 0
    assert 1 < rss < 100, got  # a bare interpreter: ~10 MiB, not the parent's 300+
    wall, rss, status = got["grown"]
    assert status == 0 and rss > 150, got  # the child's own growth is what is reported
    assert got["failed"][2] == 3
    assert got["missing"][2] == 127
