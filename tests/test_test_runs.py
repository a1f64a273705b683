"""Test runs recognised in shell commands (spec/capture.md, "Command categories" and "Test
counts"): the common Python forms classify as `test` (`python -m pytest`, `uv run pytest`, …),
pytest's `-q` summary line and unittest's summary give test counts, prose never does, and
through `attempt run` a failing `python -m pytest -q` is superseded by the passing one after it."""

import json
import os
import subprocess
import sys

import pytest
from conftest import run_attempt

from attemptdb.adapters import signals
from attemptdb.adapters.commands import classify

PY = sys.executable


# --- command categories --------------------------------------------------------------------

@pytest.mark.parametrize("command, category", [
    ("python -m pytest -q test_x.py", "test"),
    ("python3 -m pytest tests/", "test"),
    ("/work/main/.venv/bin/python -m pytest -q", "test"),
    ("python -B -W ignore -m pytest -x", "test"),
    ("python3 -u -mpytest", "test"),
    ("python -m unittest discover -s tests", "test"),
    ("python3 -m unittest", "test"),
    ("python -m tox -e py312", "test"),
    ("python -m pip install requests", "install"),
    ("python3 -m pip install -r requirements.txt", "install"),
    ("cd app && python -m pytest", "test"),
    ("bash -lc 'python -m pytest -q'", "test"),
    ("PYTHONPATH=. python -m pytest", "test"),
    ("uv run pytest -q", "test"),
    ("uv run --with pytest-cov pytest --cov", "test"),
    ("uv run python -m pytest", "test"),
    ("poetry run pytest", "test"),
    ("pipenv run pytest tests", "test"),
    ("pdm run pytest", "test"),
    ("hatch run pytest", "test"),
    ("hatch run test:pytest", "test"),
    ("rye run pytest", "test"),
    ("uv run python -m pip install x", "install"),
    ("uv run script.py", "run"),
    ("tox -e py312", "test"),
    ("nox -s tests", "test"),
    ("uvx pytest", "test"),
])
def test_python_test_runs_are_test(command, category):
    assert classify(command)[0] == category, command


@pytest.mark.parametrize("command, category", [
    ("python script.py", "run"),
    ("python3 script.py --flag", "run"),
    ("python -c 'import pytest'", "run"),
    ("python -c pass", "run"),
    ("python", "run"),
    ("python -m http.server 8000", "run"),  # a module nothing recognises stays run
    ("python -m mypackage", "run"),
    ("unittest", "other"),  # only through python -m
    ("uv pip install x", "other"),
    ("uv add x", "install"),
    ("uv sync", "install"),
    ("poetry add x", "install"),
    ("poetry install", "install"),
    ("pytest -q", "test"),
    ("npm test", "test"),
])
def test_other_forms_keep_their_categories(command, category):
    assert classify(command)[0] == category, command


def test_python_m_pytest_subcategory_is_a_test_run():
    assert classify("python -m pytest")[1] == "test.run"
    assert classify("uv run pytest")[1] == "test.run"
    assert classify("python script.py")[1] == "runtime"


# --- test counts ---------------------------------------------------------------------------

@pytest.mark.parametrize("output, counts", [
    ("1 failed, 1 passed in 0.85s", (1, 1, 0)),
    ("1 failed, 1 passed, 1 warning in 0.12s", (1, 1, 0)),
    ("3 passed in 0.01s", (3, 0, 0)),
    ("2 passed, 1 skipped, 1 xfailed in 1.23s", (2, 0, 1)),
    ("1 error in 0.10s", (0, 1, 0)),
    ("1 failed, 2 errors in 0.10s", (0, 3, 0)),
    ("no tests ran in 0.01s", (0, 0, 0)),
    ("3 passed in 61.02s (0:01:01)", (3, 0, 0)),
    ("  3 passed in 0.01s  \n", (3, 0, 0)),
    ("\x1b[31m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.85s\x1b[0m\n", (1, 1, 0)),
    (".F                                                         [100%]\n"
     "FAILED test_x.py::test_b - assert 0\n1 failed, 1 passed in 0.85s\n", (1, 1, 0)),
    ("1 passed in 0.01s\n...\n2 failed in 0.02s\n", (1, 2, 0)),  # every line is summed
    ("..\n----------------------------------------------------------------------\n"
     "Ran 3 tests in 0.001s\n\nOK\n", (3, 0, 0)),
    ("Ran 3 tests in 0.001s\n\nOK (skipped=1)\n", (2, 0, 1)),
    ("Ran 3 tests in 0.001s\n\nFAILED (failures=1)\n", (2, 1, 0)),
    ("Ran 5 tests in 0.010s\n\nFAILED (failures=1, errors=2, skipped=1)\n", (1, 3, 1)),
    ("Ran 1 test in 0.000s\n\nOK\n", (1, 0, 0)),
    ("Ran 2 tests in 0.000s\n\nOK (expected failures=1)\n", (1, 0, 0)),
    ("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n", (0, 0, 0)),
    ("2 passed in 0.01s\nRan 3 tests in 0.001s\n\nFAILED (errors=1)\n", (4, 1, 0)),
])
def test_summary_lines_count(output, counts):
    assert signals.test_counts(output) == counts


@pytest.mark.parametrize("output", [
    "2 passed in review",
    "2 passed in review.",
    "all 3 passed in 0.01s",
    "we saw 1 failed, 1 passed in 0.85s on CI",
    "1 failed, 1 passed",
    "3 apples in 0.01s",
    "2 passed in 0.01 seconds",
    "Ran 3 tests in 0.001s",  # no status line after it
    "Ran 3 tests today\n\nOK\n",
    "I ran 3 tests in 0.001s\n\nOK\n",
    "OK (skipped=1)",
    "FAILED (failures=1)",
])
def test_prose_never_counts(output):
    assert signals.test_counts(output) is None


@pytest.mark.parametrize("line, counts", [
    ("============================== 1 failed, 1 passed in 0.85s ==============================", (1, 1, 0)),
    ("=== 2 passed, 1 skipped, 1 xfailed in 1.23s ===", (2, 0, 1)),
    ("==== 1 error in 0.10s ====", (0, 1, 0)),
    ("==== 3 deselected in 0.10s ====", None),
    ("==== no tests ran in 0.01s ====", (0, 0, 0)),
])
def test_the_wrapped_line_counts_once(line, counts):
    """The `=== … ===` line is the same summary with wrappers: counted once, as before."""
    assert signals.test_counts(line) == counts
    assert signals.test_counts("collected 2 items\n\ntest_x.py .F\n\n" + line + "\n") == counts


def test_a_line_cut_by_the_scan_window_does_not_count():
    """The 8 KiB window may begin mid-line: `…1 failed, 1 passed in 0.1s` must not be read as
    `1 passed in 0.1s`."""
    head = "x" * (signals.TEST_SCAN + 100) + ", 1 passed in 0.1s"
    assert signals.test_counts(head) is None
    assert signals.test_counts(head + "\n2 passed in 0.2s\n") == (2, 0, 0)
    first, last = "Ran 3 tests in 0.1s\n", "OK\n"
    window = first + "\n" * (signals.TEST_SCAN - len(first) - len(last)) + last
    assert signals.test_counts(window) == (3, 0, 0)  # exactly the window: nothing cut
    assert signals.test_counts("I " + window) is None  # `I ran 3 tests …` cut to `ran 3 tests …`


# --- end to end through `attempt run` ------------------------------------------------------

def _attempt(args, db, cwd, env, ok=True):
    p = run_attempt([args[0], "--db", db, *args[1:]], cwd=cwd, env=env)
    if ok:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def test_a_failing_python_m_pytest_run_is_superseded_by_the_passing_one(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "tmp").mkdir(mode=0o700)
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
           "TMPDIR": str(tmp_path / "tmp"), "ATTEMPTDB_NO_DAEMON": "1", "ATTEMPTDB_SESSION": "py-1",
           "GIT_CONFIG_NOSYSTEM": "1", "PYTEST_ADDOPTS": "", "PYTHONDONTWRITEBYTECODE": "1"}
    repo = tmp_path / "repo"
    repo.mkdir()
    for cmd in (["init", "-q"], ["config", "user.email", "t@example.org"], ["config", "user.name", "T"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, env=dict(os.environ, **env))
    db = str(tmp_path / "attempt.db")
    test_file = repo / "test_x.py"
    test_file.write_text("def test_one():\n    assert 1 + 1 == 3\n")
    argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"]
    p = _attempt(["run", "--", *argv], db, repo, env, ok=False)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert b"1 failed in " in p.stdout
    test_file.write_text("def test_one():\n    assert 1 + 1 == 2\n")
    p = _attempt(["run", "--", *argv], db, repo, env)
    assert b"1 passed in " in p.stdout

    evs = [json.loads(x) for x in _attempt(["events", "--jsonl"], db, repo, env).stdout.decode().splitlines()]
    finished = [e for e in evs if e["provider_event_name"] == "command.finished"]
    assert [e["kind"] for e in finished] == ["tool_call_failed", "tool_call_finished"]
    assert finished[0]["attrs"]["command_category"] == "test"
    assert finished[0]["attrs"]["tests_failed"] == 1 and finished[0]["attrs"]["tests_passed"] == 0
    assert finished[1]["attrs"]["tests_failed"] == 0 and finished[1]["attrs"]["tests_passed"] == 1

    p = run_attempt(["query", "--db", db, "--json", "SHOW ATTEMPTS"], cwd=repo, env=env)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    rows = sorted(rows, key=lambda r: r["started_at"])
    assert [r["outcome"] for r in rows] == ["superseded", "succeeded"], rows
    assert rows[0]["superseded_by"] == rows[1]["attempt_id"], rows
