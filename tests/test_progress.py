"""Progress on long work (issue 17 item 4): under a pseudo-terminal `attempt import jsonl` of
50,000 events draws progress on stderr; piped, or with --json, it draws none; the final line
says how many and how fast; unreadable transcript lines are named by file and line."""

import json
import os
import re
import subprocess

import pytest
from conftest import ROOT, attempt_cmd, attempt_on_pty, run_attempt

from attemptdb.devtools import synth

BAR = re.compile(rb"importing +\[[#-]+\] +\d+/\d+")


def _env(**extra):
    e = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1")
    e.pop("COLUMNS", None)
    e.update(extra)
    return e


def _under_pty(args):
    """Run `attempt args` with stderr on a pseudo-terminal and stdout on a pipe: (exit status,
    stdout bytes, everything the terminal received)."""
    return attempt_on_pty(args, env=_env())


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress-small")
    path = str(d / "2k.jsonl")
    synth.write_jsonl(path, 2_000)
    return d, path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress")
    path = str(d / "50k.jsonl")
    synth.write_jsonl(path, 50_000)
    with open(path, "rb") as f:
        assert sum(1 for _ in f) == 50_000
    return d, path


def test_import_of_50k_events_shows_progress_on_a_terminal_and_none_when_piped(big):
    d, path = big
    # the piped import runs beside the terminal one (same file, its own database)
    piped = subprocess.Popen(attempt_cmd() + ["import", "jsonl", path, "--db", str(d / "piped.db")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    code, out, term = _under_pty(["import", "jsonl", path, "--db", str(d / "tty.db")])
    p_out, p_err = piped.communicate(timeout=600)
    assert code == 0, term[-2000:]
    frames = BAR.findall(term)
    assert len(frames) >= 3, term[-2000:]  # it moved: several frames, ending at the whole file
    assert frames[-1].endswith(b"50000/50000")
    line = out.decode().strip()
    assert re.fullmatch(r"imported 50,000 events \(0 already stored\) from 50,000 lines "
                        r"in \d+\.\d s \([\d,]+ events/s\)", line), line
    assert piped.returncode == 0, p_err.decode()
    assert p_err == b"", p_err[:500]  # nothing drawn when stderr is not a terminal
    assert p_out.decode().startswith("imported 50,000 events (0 already stored) from 50,000 lines in ")


def test_json_output_draws_no_progress_even_on_a_terminal(small):
    d, small = small
    code, out, term = _under_pty(["import", "jsonl", small, "--db", str(d / "json.db"), "--json"])
    assert code == 0
    assert json.loads(out) == {"lines": 2000, "accepted": 2000, "duplicates": 0, "conflicts": 0}
    assert b"importing" not in term and b"[" not in term, term[:500]


def test_bundle_export_and_verify_progress_only_on_a_terminal(small):
    d, small = small
    db = str(d / "b.db")
    assert run_attempt(["import", "jsonl", small, "--db", db]).returncode == 0
    code, out, term = _under_pty(["bundle", "export", str(d / "b.zip"), "--db", db])
    assert code == 0 and re.search(rb"exporting +\[#+\] +2000/2000", term), term[-1000:]
    assert re.search(r"in \d+\.\d s \([\d,]+ events/s\)$", out.decode().strip().replace("\n  ", " "))  # wrapped to the terminal: one line again
    p = run_attempt(["bundle", "export", str(d / "b2.zip"), "--db", db])
    assert p.returncode == 0 and p.stderr == b""
    code, out, term = _under_pty(["verify", "--db", db])
    assert code == 0 and re.search(rb"verified 2,000 events in \d+\.\d s \([\d,]+ events/s\)", term)
    p = run_attempt(["verify", "--db", db])
    assert b"verified" not in p.stderr


def test_unreadable_transcript_lines_are_named(tmp_path):
    d = tmp_path / "transcripts"
    d.mkdir()
    good = json.dumps({"type": "user", "sessionId": "s-1", "cwd": str(tmp_path), "uuid": "u1",
                       "timestamp": "2026-08-28T09:00:00.000Z", "message": {"role": "user", "content": "hi"}})
    (d / "a.jsonl").write_text(good + "\nnot json\n" + good + "\n[1, 2]\n")
    (d / "b.jsonl").write_text("\n".join(["{broken"] * 6 + [good]) + "\n")
    db = str(tmp_path / "t.db")
    p = run_attempt(["import", "claude-transcripts", str(d), "--db", db])
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    a, b = str(d / "a.jsonl"), str(d / "b.jsonl")
    assert (f"8 unreadable lines skipped ({a} line 2, {a} line 4, {b} line 1, {b} line 2, {b} line 3, "
            "and 3 more)") in out, out
    p = run_attempt(["import", "claude-transcripts", str(d), "--db", db, "--json"])
    rep = json.loads(p.stdout)
    assert rep["skipped_lines"] == 8 and rep["skipped_where"][:2] == [{"file": a, "line": 2}, {"file": a, "line": 4}]
    assert len(rep["skipped_where"]) == 5
