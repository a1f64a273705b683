"""`attempt run` when its own stdout or stderr cannot take the command's output (a full disk,
a closed descriptor), and how it names a command it could not start (spec/evidence.md §2)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, attempt_cmd, run_attempt

PY = sys.executable
needs_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def _run(db, cwd, args, *, stdout=None, stderr=None, close_stdout=False):
    """`attempt run --db db -- args` with its stdout/stderr sent where given (default: captured)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [os.fsencode(a) for a in [*attempt_cmd(), "run", "--db", db, "--", *args]]
    return subprocess.run(cmd,
                          stdout=subprocess.PIPE if stdout is None else stdout,
                          stderr=subprocess.PIPE if stderr is None else stderr, env=env, cwd=cwd, timeout=120,
                          preexec_fn=(lambda: os.close(1)) if close_stdout else None)


def _finished(db):
    p = run_attempt(["events", "--jsonl", "--db", db])
    assert p.returncode == 0, p.stderr
    evs = [json.loads(x) for x in p.stdout.decode().splitlines()]
    return [e for e in evs if e["provider_event_name"] == "command.finished"][-1]


@needs_full
def test_a_full_disk_under_stdout_is_said_and_fails_the_run_while_the_command_s_outcome_is_kept(db, tmp_path):
    with open("/dev/full", "wb") as full:
        p = _run(db, tmp_path, ["echo", "hi"], stdout=full)
    assert p.returncode == 1, p.stderr  # a shell's `echo hi >/dev/full`: write error, 1
    assert p.stderr.count(b"\n") == 1 and p.stderr.startswith(b"error[output.unwritable]: cannot write the "
                                                              b"command's stdout: No space left on device")
    fin = _finished(db)
    assert fin["outcome"] == {"status": "success", "exit_code": 0}  # the command's own, unchanged
    assert fin["attrs"]["x_attempt_stdout_undelivered"] == "ENOSPC"
    assert fin["attrs"]["x_attempt_stdout_bytes"] == 3


@needs_full
def test_large_output_to_a_full_disk_runs_to_its_end_and_keeps_the_command_s_failure(db, tmp_path):
    """Not a SIGPIPE (141): the command runs on, every byte is hashed, its own status is kept."""
    prog = "import sys\nfor i in range(100000): print(i)\nsys.exit(3)"
    with open("/dev/full", "wb") as full:
        p = _run(db, tmp_path, [PY, "-c", prog], stdout=full)
    assert p.returncode == 3 and b"error[output.unwritable]" in p.stderr, p.stderr
    fin = _finished(db)
    assert fin["outcome"]["exit_code"] == 3
    assert fin["attrs"]["x_attempt_stdout_bytes"] == len("".join(f"{i}\n" for i in range(100000)))
    assert fin["attrs"]["x_attempt_stdout_undelivered"] == "ENOSPC"


def test_output_to_a_closed_stdout_is_not_lost_silently(db, tmp_path):
    p = _run(db, tmp_path, ["echo", "hi"], stdout=subprocess.DEVNULL, close_stdout=True)  # `>&-`
    assert p.returncode == 1 and b"error[output.unwritable]" in p.stderr, p.stderr
    assert _finished(db)["attrs"]["x_attempt_stdout_undelivered"] == "EBADF"


@needs_full
def test_a_full_disk_under_stderr_fails_the_run_without_a_crash(db, tmp_path):
    with open("/dev/full", "wb") as full:
        p = _run(db, tmp_path, ["sh", "-c", "echo oops >&2; echo out"], stderr=full)
    assert p.returncode == 1 and p.stdout == b"out\n"
    assert _finished(db)["attrs"]["x_attempt_stderr_undelivered"] == "ENOSPC"


def test_an_empty_command_name_is_not_found(db, tmp_path):
    p = _run(db, tmp_path, [""])
    assert p.returncode == 127 and p.stderr == b"attempt: '': command not found\n", p.stderr
    assert _finished(db)["outcome"] == {"status": "failure", "class": "file_not_found", "exit_code": 127}


def test_a_command_name_that_is_not_utf8_is_shown_with_question_marks(db, tmp_path):
    p = _run(db, tmp_path, [os.fsdecode(b"\xff\xfeabc")])
    assert p.returncode == 127, p.stderr
    first = p.stderr.splitlines()[0]
    assert first == b"attempt: ??abc: No such file or directory", p.stderr
    assert b"\\udc" not in p.stderr


@needs_full
@pytest.mark.parametrize("size", [10, 300_000])  # the final flush, and writes on the way
def test_an_artifact_sent_to_a_full_disk_is_a_coded_error(db, tmp_path, size):
    prog = f"import sys; sys.stdout.write('x' * {size})"
    p = run_attempt(["run", "--db", db, "--attach-output", "--", PY, "-c", prog], cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    art = _finished(db)["attrs"]["x_attempt_stdout_artifact"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    with open("/dev/full", "wb") as full:
        q = subprocess.run([*attempt_cmd(), "artifact", art, "--db", db], stdout=full, stderr=subprocess.PIPE,
                           env=env, timeout=120)
    assert q.returncode == 2 and q.stderr.startswith(b"error[output.unwritable]: cannot write the output"), q.stderr
    assert b"crash report" not in q.stderr
