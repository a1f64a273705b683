"""The evidence layer (spec/evidence.md) fed hostile input: a database file whose artifact rows
were edited (a decompression bomb, an encoding this version does not know, columns of the wrong
type, a row whose digest and bytes were swapped together), a command whose output or background
processes misbehave, a test summary no parser expects, an argv no process can take. Each gives a
coded error or a recorded run, never a crash, a hang or output without bound."""

import hashlib
import json
import os
import signal
import sys
import time
import zlib

import apsw
import pytest
from conftest import run_attempt

import attemptdb
from attemptdb.errors import AttemptError
from attemptdb.evidence import artifacts
from attemptdb.store.database import Store

PY = sys.executable
OUT = b"hello\n"
DIGEST = hashlib.sha256(OUT).hexdigest()
AID = "art_" + DIGEST[:32]


def events(db):
    p = run_attempt(["events", "--jsonl", "--db", db])
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.decode().splitlines()]


def names(db):
    return [e["provider_event_name"] for e in events(db)]


def kept(db, tmp_path, data=repr(OUT)):
    """A database holding the bytes of the expression `data` as a kept stdout artifact."""
    p = run_attempt(["run", "--db", db, "--attach-output", "--", PY, "-c",
                     f"import sys; sys.stdout.buffer.write({data})"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return db


def edit(db, sql, *params):
    """Edit the file behind the store's back, as anyone holding it can."""
    c = apsw.Connection(db)
    try:
        c.execute(sql, params)
    finally:
        c.close()


def code_of(p) -> str:
    line = p.stderr.decode(errors="replace").strip().splitlines()[-1]
    assert line.startswith("error["), p.stderr
    return line[6:line.index("]")]


# --- an artifact row edited in the file -----------------------------------------------------

def test_a_decompression_bomb_stops_at_the_artifact_s_size(db, tmp_path):
    kept(db, tmp_path)
    z = zlib.compressobj(9)
    bomb = b"".join(z.compress(b"\0" * (1 << 20)) for _ in range(64)) + z.flush()  # 64 MiB in ~64 KB
    edit(db, "UPDATE artifacts SET content = ?, stored_bytes = ? WHERE artifact_id = ?", bomb, len(bomb), AID)
    p = run_attempt(["artifact", AID, "--db", db])  # to a pipe
    assert p.returncode == 1 and code_of(p) == "artifact.changed"
    assert len(p.stdout) <= len(OUT) + 1  # not 64 MiB: nothing is inflated past the size
    out = tmp_path / "out.bin"
    p = run_attempt(["artifact", AID, "--db", db, "-o", str(out)])
    assert p.returncode == 1 and code_of(p) == "artifact.changed"
    assert not out.exists()  # a file that is not the artifact is not left behind


@pytest.mark.parametrize("encoding", ["zstd", None, "ZLIB"])
def test_an_encoding_this_version_does_not_read_writes_nothing(db, tmp_path, encoding):
    kept(db, tmp_path)
    edit(db, "UPDATE artifacts SET encoding = ? WHERE artifact_id = ?", encoding, AID)
    p = run_attempt(["artifact", AID, "--db", db])
    assert p.returncode == 1 and code_of(p) == "artifact.corrupt" and p.stdout == b""


@pytest.mark.parametrize("content", [5, 1.5, "hello"])
def test_content_that_is_not_a_blob_is_corrupt_not_a_crash(db, tmp_path, content):
    kept(db, tmp_path)
    edit(db, "UPDATE artifacts SET content = ? WHERE artifact_id = ?", content, AID)
    p = run_attempt(["artifact", AID, "--db", db])
    assert p.returncode == 1 and code_of(p) == "artifact.corrupt" and p.stdout == b""


def test_a_truncated_stream_is_corrupt_and_leaves_no_file(db, tmp_path):
    kept(db, tmp_path, 'b"line of output\\n" * 5000')
    edit(db, "UPDATE artifacts SET content = substr(content, 1, 30)")
    aid = artifacts.artifact_id(hashlib.sha256(b"line of output\n" * 5000).hexdigest())
    out = tmp_path / "out.bin"
    p = run_attempt(["artifact", aid, "--db", db, "-o", str(out)])
    assert p.returncode == 1 and code_of(p) == "artifact.corrupt" and not out.exists()


def test_an_artifact_is_named_by_its_short_id_and_replaces_a_file_only_with_force_once_checked(db, tmp_path):
    kept(db, tmp_path)
    p = run_attempt(["artifact", AID[:12], "--db", db])  # art_ and 8 hex digits, as `short` prints
    assert p.returncode == 0 and p.stdout == OUT, p.stderr
    for typed in (AID[:11], "art_XYZ" + AID[7:], "ev_" + DIGEST[:8]):
        p = run_attempt(["artifact", typed, "--db", db])
        assert p.returncode == 1 and code_of(p) == "artifact.unknown", typed
    twin = AID[:12] + "0" * 24  # another row whose id shares the 8 digits typed
    edit(db, "INSERT INTO artifacts (artifact_id, sha256, size_bytes, media_type, purpose, created_at) "
         "VALUES (?, ?, 0, 'text/plain', 'command.stdout', '2026-01-01T00:00:00Z')", twin, twin[4:] + "0" * 32)
    p = run_attempt(["artifact", AID[:12], "--db", db])
    assert p.returncode == 1 and code_of(p) == "artifact.ambiguous"
    assert AID in p.stderr.decode() and twin in p.stderr.decode()
    p = run_attempt(["artifact", AID[:13], "--db", db])  # one digit more tells them apart
    assert p.returncode == 0 and p.stdout == OUT, p.stderr
    out = tmp_path / "out.bin"
    out.write_bytes(b"mine")
    p = run_attempt(["artifact", AID[:13], "--db", db, "-o", str(out)])
    assert p.returncode == 2 and code_of(p) == "artifact.exists" and out.read_bytes() == b"mine"
    edit(db, "UPDATE artifacts SET content = substr(content, 1, 3) WHERE artifact_id = ?", AID)
    p = run_attempt(["artifact", AID, "--db", db, "-o", str(out), "--force"])
    assert p.returncode == 1 and code_of(p) == "artifact.corrupt"
    assert out.read_bytes() == b"mine"  # a failed copy replaces nothing
    edit(db, "UPDATE artifacts SET content = ? WHERE artifact_id = ?", zlib.compress(OUT), AID)
    p = run_attempt(["artifact", AID, "--db", db, "-o", str(out), "--force"])
    assert p.returncode == 0 and out.read_bytes() == OUT, p.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(n for n in os.listdir(tmp_path) if not n.startswith(".attempt-"))


@pytest.mark.parametrize("column, value", [
    ("sha256", b"\x00\xff"), ("media_type", b"\x1b[31m"), ("purpose", b"\x07"), ("size_bytes", -1),
    ("size_bytes", "six"), ("sha256", "Z" * 64), ("redacted", "yes")])
def test_a_column_of_the_wrong_type_is_a_coded_error_for_bytes_info_and_json(db, tmp_path, column, value):
    kept(db, tmp_path)
    edit(db, f"UPDATE artifacts SET {column} = ? WHERE artifact_id = ?", value, AID)
    for extra in ([], ["--info"], ["--json"]):
        p = run_attempt(["artifact", AID, "--db", db, *extra])
        assert p.returncode == 1 and code_of(p) == "artifact.malformed", (extra, p.stderr)
        assert p.stdout == b"" and b"\x1b" not in p.stderr


def test_other_bytes_under_an_artifact_s_id_are_refused(db, tmp_path):
    """Whoever rewrites a row's sha256 and content together cannot pass other bytes off under
    the id the events name: the id is the digest's first 128 bits."""
    kept(db, tmp_path)
    other = b"rm -rf ~\n"
    edit(db, "UPDATE artifacts SET sha256 = ?, size_bytes = ?, content = ?, stored_bytes = ? WHERE artifact_id = ?",
         hashlib.sha256(other).hexdigest(), len(other), zlib.compress(other), len(zlib.compress(other)), AID)
    for extra in ([], ["--info"]):
        p = run_attempt(["artifact", AID, "--db", db, *extra])
        assert p.returncode == 1 and code_of(p) == "artifact.malformed" and p.stdout == b""


def test_a_run_repairs_kept_bytes_that_no_longer_match(db, tmp_path):
    """The same output kept again finds its row: when the bytes stored there do not verify
    (edited, truncated), this run's bytes replace them instead of being dropped."""
    kept(db, tmp_path)
    edit(db, "UPDATE artifacts SET content = X'00' WHERE artifact_id = ?", AID)
    kept(db, tmp_path)
    p = run_attempt(["artifact", AID, "--db", db])
    assert p.returncode == 0 and p.stdout == OUT, p.stderr


# --- hostile commands -----------------------------------------------------------------------

@pytest.mark.parametrize("summary", [
    "test result: \u00b2 passed",              # a digit str.isdigit accepts and int() does not
    "test result: " + "9" * 5000 + " passed",  # more digits than int() takes from text
    "test result: 99999999999999999999999999 passed; 1 failed",
    "12\u0663 passing"])
def test_a_test_summary_no_parser_expects_still_records_the_run(db, tmp_path, summary):
    p = run_attempt(["run", "--db", db, "--", PY, "-c", f"print({summary!r})"], cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    evs = events(db)
    fin = [e for e in evs if e["provider_event_name"] == "command.finished"]
    assert len(fin) == 1 and fin[0]["kind"] == "tool_call_finished"
    for k in ("tests_passed", "tests_failed", "tests_skipped"):
        assert 0 <= fin[0]["attrs"].get(k, 0) < 2 ** 53


def test_a_background_process_that_keeps_writing_does_not_hold_run_open(db, tmp_path):
    """The command exits and leaves behind a process that writes to its stdout forever: the
    run ends anyway (its output is drained for a bounded time), and is recorded."""
    pidfile = tmp_path / "bg.pid"
    prog = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
            "    while True:\n"
            "        print('x', flush=True); time.sleep(0.05)\n"
            "sys.exit(0)\n")
    try:
        p = run_attempt(["run", "--db", db, "--", PY, "-c", prog], cwd=tmp_path, timeout=60)
        assert p.returncode == 0
        assert names(db).count("command.finished") == 1
        pid = int(pidfile.read_text())
        for _ in range(100):  # its pipe is closed: its next write ends it (SIGPIPE/EPIPE)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the background writer outlived its closed pipe")
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_a_command_line_longer_than_a_title_runs_and_is_recorded(db, tmp_path):
    """The default title is the command line: a long one (many file names) is cut to fit, not
    refused before the command runs."""
    args = [f"file-{i:06d}.txt" for i in range(8000)]  # ~ 128 K characters
    p = run_attempt(["run", "--db", db, "--", PY, "-c", "import sys; print(len(sys.argv))", *args], cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == b"8001\n", p.stderr
    evs = events(db)
    title = [e for e in evs if e["provider_event_name"] == "session.started"][0]["content"]["title"]
    assert len(title) == 64 << 10 and title.endswith("…")
    started = [e for e in evs if e["provider_event_name"] == "command.started"][0]
    assert started["content"]["tool_input"]["argv"][1:] == ["-c", "import sys; print(len(sys.argv))", *args]


@pytest.mark.parametrize("argv, env", [(["echo", "a\0b"], None), (["\0"], None),
                                       (["echo", "x"], {"A": "b\0c"}), (["echo", "x"], {"A\0": "b"}),
                                       (["echo", "x"], {"A=B": "c"})])
def test_an_argv_or_environment_no_process_can_take_is_refused_before_anything_is_written(
        db, tmp_path, argv, env):
    with attemptdb.Recorder(db=db, cwd=str(tmp_path)) as rec:
        with pytest.raises(AttemptError) as e:
            rec.run(argv, env=env, echo=False)
        assert e.value.code == "run.bad_argument" and "\0" not in str(e.value)
    assert "command.started" not in names(db)


def test_an_edited_row_never_reaches_the_store_as_a_crash(db, tmp_path):
    """The library readers raise coded errors for each edited row, and the file is unchanged."""
    kept(db, tmp_path)
    edit(db, "UPDATE artifacts SET encoding = 'x' WHERE artifact_id = ?", AID)
    before = open(db, "rb").read()
    st = Store.open(db, readonly=True)
    try:
        with pytest.raises(AttemptError) as e:
            b"".join(artifacts.read_chunks(st.conn, AID))
        assert e.value.code == "artifact.corrupt"
    finally:
        st.close()
    assert open(db, "rb").read() == before


@pytest.mark.parametrize("name, code", [("ev_0190aaaa-0000-7000-8000-000000000000", "session.bad_name"),
                                        ("art_" + "ab" * 16, "session.bad_name"),
                                        ("ses_01a24feb", "session.unknown"),  # a short id no session has
                                        ("tc_0190aaaa-0000-7000-8000-000000000000", "session.bad_name")])
def test_an_id_of_another_kind_is_not_taken_as_a_new_session_s_name(db, tmp_path, name, code):
    p = run_attempt(["note", "hi", "--session", name, "--db", db], cwd=tmp_path)
    assert p.returncode == 2 and code_of(p) == code
    assert not os.path.exists(db) or "session.note_added" not in names(db)


def test_a_closed_stdout_is_a_coded_error(db, tmp_path):
    kept(db, tmp_path)
    import subprocess

    from conftest import attempt_cmd
    p = subprocess.run(attempt_cmd() + ["artifact", AID, "--db", db], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=60)
    assert p.returncode == 2 and b"error[artifact.unwritable]" in p.stderr
