"""`attempt run` and friends (spec/evidence.md): a real command through a real process, its
output as content-addressed artifacts, its exit status and signals, git snapshots, notes,
approvals and named sessions — and what the projections make of them."""

import hashlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, attempt_cmd, run_attempt

from attemptdb.store.database import Store

PY = sys.executable


def attempt(*args, db, ok=True, **kw):
    p = run_attempt([args[0], "--db", db, *args[1:]], **kw)
    if ok:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def events(db):
    p = run_attempt(["events", "--jsonl", "--db", db])
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.decode().splitlines()]


def by_name(evs, name):
    return [e for e in evs if e["provider_event_name"] == name]


def sql(db, query, *params):
    st = Store.open(db, readonly=True)
    try:
        return st.conn.execute(query, params).fetchall()
    finally:
        st.close()


@pytest.fixture
def repo(tmp_path, home):
    """A git repository with a commit (snapshots need one); git sees no user configuration."""
    r = tmp_path / "repo"
    r.mkdir()
    env = git_env(home)
    for cmd in (["init", "-q"], ["config", "user.email", "t@example.org"], ["config", "user.name", "T"]):
        subprocess.run(["git", *cmd], cwd=r, check=True, env=env)
    (r / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "a.txt"], cwd=r, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=r, check=True, env=env)
    return r


def git_env(home):
    return dict(os.environ, HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_DATE="2026-01-01T00:00:00",
                GIT_COMMITTER_DATE="2026-01-01T00:00:00")


def test_a_failing_command_exits_with_its_status_prints_its_output_and_is_recorded(db, repo):
    prog = 'import sys; print("x"); sys.exit(3)'
    p = run_attempt(["run", "--db", db, "--", PY, "-c", prog], cwd=repo)
    assert p.returncode == 3 and p.stdout == b"x\n" and p.stderr == b""
    evs = events(db)
    started, finished = by_name(evs, "command.started")[0], by_name(evs, "command.finished")[0]
    assert started["kind"] == "tool_call_started" and started["content"]["tool_input"]["argv"] == [PY, "-c", prog]
    assert started["content"]["tool_input"]["cwd"] == str(repo) and started["tool"]["category"] == "shell"
    assert finished["kind"] == "tool_call_failed" and finished["tool"]["call_id"] == started["tool"]["call_id"]
    assert finished["outcome"] == {"status": "failure", "class": "nonzero_exit", "exit_code": 3}
    digest = hashlib.sha256(b"x\n").hexdigest()
    attrs = finished["attrs"]
    assert attrs["x_attempt_stdout_sha256"] == "sha256:" + digest and attrs["x_attempt_stdout_bytes"] == 2
    assert attrs["x_attempt_stdout_artifact"] == "art_" + digest[:32] and "x_attempt_stderr_sha256" not in attrs
    assert sql(db, "SELECT artifact_id, sha256, size_bytes, media_type, purpose, redacted, content FROM artifacts") == [
        ("art_" + digest[:32], digest, 2, "text/plain; charset=utf-8", "command.stdout", 0, None)]
    assert [e["provider_event_name"] for e in evs] == [
        "session.started", "run.started", "git.snapshot", "command.started", "command.finished", "git.snapshot",
        "run.stopped", "session.stopped"]
    # the same output again: still one artifact; with --attach-output its bytes are added to it
    p = run_attempt(["run", "--db", db, "--attach-output", "--", PY, "-c", prog], cwd=repo)
    assert p.returncode == 3 and p.stdout == b"x\n"
    assert sql(db, "SELECT count(*), length(content) > 0 FROM artifacts") == [(1, 1)]
    p = run_attempt(["artifact", "art_" + digest[:32], "--db", db])
    assert p.returncode == 0 and p.stdout == b"x\n"
    # a failing run is a failed attempt with a class
    rows = sql(db, "SELECT outcome, failure_class FROM attempts ORDER BY started_at")
    assert rows == [("failed", "nonzero_exit"), ("failed", "nonzero_exit")]


def test_runs_project_like_any_other_events(db, repo, tmp_path):
    """A passing run is a succeeded attempt; a failing test run fails its attempt as a check and
    a later passing one supersedes it; notes and approvals open nothing; the projections equal a
    rebuild; the stream is Event v1."""
    test_file = repo / "test_t.py"
    test_file.write_text("import os\ndef test_it():\n    assert os.path.exists('ok')\n")
    pytest_exe = os.path.join(os.path.dirname(PY), "pytest")
    env = {"ATTEMPTDB_SESSION": "ci-1"}
    attempt("run", "--title", "job 1", "--", PY, "-c", "pass", db=db, cwd=repo, env=env)
    p = attempt("run", "--", pytest_exe, "-p", "no:cacheprovider", str(test_file), db=db, cwd=repo, env=env,
                ok=False)
    assert p.returncode == 1
    (repo / "ok").write_text("")
    attempt("run", "--", pytest_exe, "-p", "no:cacheprovider", str(test_file), db=db, cwd=repo, env=env)
    attempt("note", "looked at it", db=db, env=env)
    attempt("approve", "the fix", "--note", "fine", db=db, env=env)
    attempt("close", db=db, env=env)
    evs = events(db)
    assert {e["session_id"] for e in evs} == {evs[0]["session_id"]} and evs[0]["provider_session_id"] == "ci-1"
    assert evs[0]["content"]["title"] == "job 1"
    failed = [e for e in by_name(evs, "command.finished") if e["kind"] == "tool_call_failed"][0]
    assert failed["attrs"]["command_category"] == "test" and failed["attrs"]["tests_failed"] == 1
    att = sql(db, "SELECT outcome, failure_class, superseded_by FROM attempts ORDER BY started_at")
    assert [a[0] for a in att] == ["succeeded", "superseded", "succeeded"] and att[1][1] == "nonzero_exit", att
    assert sql(db, "SELECT state, tool_call_count FROM sessions") == [("closed", 3)]
    note, approval = by_name(evs, "session.note_added")[0], by_name(evs, "ai.approval")[0]
    assert note["kind"] == approval["kind"] == "notification" and note["content"] == {"note": "looked at it"}
    assert approval["content"] == {"subject": "the fix", "note": "fine"} and approval["attrs"]["x_attempt_approved"]
    assert sql(db, "SELECT count(*) FROM signals") == [(0,)]
    p = run_attempt(["reproject", "--check", "--db", db])
    assert p.returncode == 0, p.stdout + p.stderr
    stream = tmp_path / "s.jsonl"
    stream.write_bytes(run_attempt(["events", "--jsonl", "--db", db]).stdout)
    p = run_attempt(["conformance", str(stream)])
    assert p.returncode == 0 and b"COMPATIBLE" in p.stdout, p.stdout
    p = run_attempt(["verify", "--db", db])
    assert p.returncode == 0, p.stdout


def test_metadata_only_keeps_no_output_byte_anywhere(tmp_path, home, repo):
    db = str(tmp_path / "m.db")
    assert run_attempt(["init", "--capture-mode", "metadata_only", "--db", db]).returncode == 0
    prog = 'print("ZQ" + "XJ" * 20)'  # the output is not in the argv
    marker = b"ZQ" + b"XJ" * 20
    p = run_attempt(["run", "--attach-output", "--db", db, "--", PY, "-c", prog], cwd=repo)
    assert p.returncode == 0 and p.stdout == marker + b"\n"
    assert b"note: stdout not kept" not in p.stderr and b"metadata_only" in p.stderr
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            assert marker not in open(db + suffix, "rb").read(), suffix
    digest = hashlib.sha256(marker + b"\n").hexdigest()
    finished = by_name(events(db), "command.finished")[0]
    assert finished["capture_mode"] == "metadata_only" and "content" not in finished
    assert finished["attrs"]["x_attempt_stdout_sha256"] == "sha256:" + digest
    assert sql(db, "SELECT sha256, content FROM artifacts") == [(digest, None)]
    out = tmp_path / "b.zip"
    p = run_attempt(["bundle", "export", str(out), "--include-artifacts", "--include-content", "--db", db])
    assert p.returncode == 0, p.stderr
    assert marker not in out.read_bytes()
    import zipfile
    with zipfile.ZipFile(out) as zf:
        assert not [n for n in zf.namelist() if n.startswith("artifacts/")]
        assert all(marker not in zf.read(n) for n in zf.namelist())


def test_kept_output_is_secret_redacted_and_large_output_streams(db, repo, tmp_path):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    p = run_attempt(["run", "--attach-output", "--db", db, "--", PY, "-c", f"print('token={token}')"], cwd=repo)
    assert p.stdout == f"token={token}\n".encode()  # the terminal sees what the command wrote
    (aid, redacted, sha), = sql(db, "SELECT artifact_id, redacted, sha256 FROM artifacts")
    assert redacted == 1
    kept = run_attempt(["artifact", aid, "--db", db]).stdout
    assert token.encode() not in kept and b"[REDACTED:" in kept and hashlib.sha256(kept).hexdigest() == sha
    finished = by_name(events(db), "command.finished")[0]
    assert finished["attrs"]["x_attempt_stdout_sha256"] == "sha256:" + hashlib.sha256(p.stdout).hexdigest()
    # 200 MiB through a process whose peak memory stays far below it
    mib = 200
    prog = (f"import sys\nb = bytes(range(256)) * 4096\nfor _ in range({mib}): sys.stdout.buffer.write(b)")
    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([PY, "-c", probe, *attempt_cmd(), "run", "--attach-output", "--db", db, "--", PY, "-c", prog],
                         capture_output=True, env=env, cwd=repo, timeout=600)
    code, rss_kib = out.stdout.split()
    assert code == b"0" and int(rss_kib) < 120 * 1024, out
    digest = hashlib.sha256(bytes(range(256)) * 4096 * mib).hexdigest()
    rows = sql(db, "SELECT size_bytes, media_type, stored_bytes FROM artifacts WHERE sha256 = ?", digest)
    assert rows and rows[0][0] == mib << 20 and rows[0][1] == "application/octet-stream" and rows[0][2] < mib << 20


def test_a_closed_stdout_keeps_the_command_s_exit_status(db, repo):
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run(attempt_cmd() + ["run", "--db", db, "--", "sh", "-c", "echo hi >&2; exit 3"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=repo, timeout=120,
                       preexec_fn=lambda: os.close(1))  # `attempt run … >&-`
    assert p.returncode == 3 and p.stderr == b"hi\n", p.stderr


def test_an_argument_that_is_not_utf8_runs_as_given_and_is_recorded_as_text(db, repo):
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [a.encode() for a in attempt_cmd()] + [b"run", b"--db", db.encode(), b"--", b"echo", b"a\xffb"]
    p = subprocess.run(cmd, capture_output=True, env=env, cwd=repo, timeout=120)
    assert p.returncode == 0 and p.stdout == b"a\xffb\n", p.stderr  # what the shell would have run
    assert b"not UTF-8" in p.stderr
    started = by_name(events(db), "command.started")[-1]
    assert "a\ufffdb" in json.dumps(started, ensure_ascii=False)


def test_a_working_directory_whose_name_is_not_utf8_is_recorded_as_text(db, tmp_path, home):
    """The command runs there; every event is stored (none set aside in quarantine), the
    directory recorded with U+FFFD for the bytes that are not UTF-8, as hooks record it."""
    where = os.path.join(os.fsencode(str(tmp_path)), b"nu\xffd")
    os.mkdir(where)
    cmd = [a.encode() for a in attempt_cmd()] + [b"run", b"--db", db.encode(), b"--", b"pwd"]
    p = subprocess.run(cmd, capture_output=True, env=dict(os.environ, PYTHONPATH=ROOT), cwd=where, timeout=120)
    assert p.returncode == 0 and p.stdout.rstrip(b"\n") == where and p.stderr == b"", p.stderr
    evs = events(db)
    assert [e["provider_event_name"] for e in evs] == [
        "session.started", "run.started", "command.started", "command.finished", "run.stopped", "session.stopped"]
    shown = os.fsdecode(where).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    assert evs[2]["content"]["tool_input"]["cwd"] == shown and "\ufffd" in shown
    assert {e["project"]["root"] for e in evs} == {shown}
    spool = run_attempt(["doctor", "--db", db])
    assert b"quarantine" not in spool.stdout + spool.stderr


def test_stdin_passes_through_and_a_missing_command_exits_127(db, repo):
    p = run_attempt(["run", "--db", db, "--", PY, "-c", "import sys; print(sys.stdin.read().upper())"],
                    input=b"hello", cwd=repo)
    assert p.returncode == 0 and p.stdout == b"HELLO\n"
    p = run_attempt(["run", "--db", db, "--", "no-such-command-here"], cwd=repo)
    assert p.returncode == 127 and p.stderr.startswith(b"attempt: no-such-command-here:")
    finished = by_name(events(db), "command.finished")[-1]
    assert finished["outcome"] == {"status": "failure", "class": "file_not_found", "exit_code": 127}


def _default_sigint():
    # a test runner started in the background inherits SIGINT ignored, and so would the command:
    # these tests are about what `attempt run` does with a signal a person sends
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(db, cwd, prog, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT)
    kw.setdefault("preexec_fn", _default_sigint)
    p = subprocess.Popen(attempt_cmd() + ["run", "--db", db, "--", PY, "-c", prog], stdout=subprocess.PIPE,
                         env=env, cwd=cwd, **kw)
    assert p.stdout.readline() == b"ready\n"
    return p


@pytest.mark.parametrize("sig, status, cls", [(signal.SIGTERM, "cancelled", "interrupted"),
                                               (signal.SIGINT, "cancelled", "interrupted")])
def test_a_signal_sent_to_attempt_reaches_the_command_and_is_recorded(db, repo, sig, status, cls):
    p = _start(db, repo, "import time; print('ready', flush=True); time.sleep(60)")
    p.send_signal(sig)
    assert p.wait(timeout=30) == -sig  # dies the way the command died
    finished = by_name(events(db), "command.finished")[0]
    assert finished["outcome"] == {"status": status, "class": cls, "exit_code": 128 + sig}
    assert finished["attrs"]["x_attempt_signal"] == signal.Signals(sig).name
    assert by_name(events(db), "run.stopped")[0]["kind"] == "turn_failed"


def test_a_command_killed_by_someone_else_is_recorded_as_killed(db, repo):
    prog = "import os, time; print('ready', flush=True); time.sleep(0.2); os.kill(os.getpid(), 9)"
    p = _start(db, repo, prog)
    assert p.wait(timeout=30) == -9
    finished = by_name(events(db), "command.finished")[0]
    assert finished["outcome"] == {"status": "failure", "class": "killed", "exit_code": 137}


def test_ctrl_c_at_a_terminal_reaches_the_command_once(db, repo):
    """The terminal sends SIGINT to the whole foreground group: attempt must not send it again."""
    prog = ("import signal, sys, time\nn = []\nsignal.signal(signal.SIGINT, lambda *a: n.append(1))\n"
            "print('ready', flush=True)\nwhile not n: time.sleep(0.01)\ntime.sleep(0.5)\nsys.exit(10 + len(n))")
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=ROOT)

    def controlling_tty():
        os.setsid()
        import fcntl
        import termios
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(attempt_cmd() + ["run", "--db", db, "--", PY, "-c", prog], stdin=slave, stdout=slave,
                         stderr=slave, env=env, cwd=repo, preexec_fn=controlling_tty)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"ready" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            seen += os.read(master, 1024)
    os.write(master, b"\x03")  # Ctrl-C
    assert p.wait(timeout=30) == 11  # one SIGINT, handled; the command's own exit status
    os.close(master)
    finished = by_name(events(db), "command.finished")[0]
    assert finished["outcome"]["exit_code"] == 11


def _counting(signame, leave_group=False):
    """A command that counts each delivery of `signame` to it (into the file argv[1]) and ends
    on its own a second after the first, exiting 10 + the count. A second Ctrl-C is many
    programs' "force quit". (`leave_group`: it first moves to a process group of its own.)

    Two sends of a signal merge into one while the first is still pending, and a Python
    handler runs once for two deliveries close together: the command counts at the C level
    (one byte per delivery through the wakeup fd) and stays on the CPU (no sleeping call), so
    it usually takes each signal before a second send could merge into it. Usually: on a busy
    machine the two sends can still merge, which is why the tests also count the sends."""
    return ("import os, signal, sys, time\n"
            + ("os.setpgid(0, 0)\n" if leave_group else "")
            + "r, w = os.pipe()\nos.set_blocking(r, False)\nos.set_blocking(w, False)\n"
            f"signal.signal(signal.{signame}, lambda *a: None)\n"
            "signal.set_wakeup_fd(w, warn_on_full_buffer=False)\n"
            "print('ready', flush=True)\nn, end, stop = 0, None, time.monotonic() + 60\n"
            "while (end is None or time.monotonic() < end) and time.monotonic() < stop:\n"
            "    try:\n        got = len(os.read(r, 64))\n    except BlockingIOError:\n        continue\n"
            "    n += got\n"
            "    open(sys.argv[1], 'w').write(str(n))\n"
            "    end = end or time.monotonic() + 1.0\n"
            "sys.exit(10 + n)\n")


# `attempt run` itself (attemptdb.launcher, as bin/attempt runs it), with each signal it sends
# to another process logged first (argv[1]: the log): what it forwarded, counted exactly
_LOGGED_ATTEMPT = ("import os, sys\n"
                   "log, real, me = sys.argv.pop(1), os.kill, os.getpid()\n"
                   "def kill(pid, sig):\n"
                   "    if pid != me and sig != 9:\n"
                   "        with open(log, 'a') as f:\n"
                   "            f.write(f'{int(sig)}\\n')\n"
                   "    return real(pid, sig)\n"
                   "os.kill = kill\n"
                   "from attemptdb.launcher import main\n"
                   "sys.exit(main())\n")


def _start_counting(db, cwd, tmp_path, signame="SIGINT", leave_group=False):
    """`attempt run` of the counting command, as the leader of its own process group (what a
    shell with job control makes of a foreground job): the test can signal it alone, or its
    whole group as a terminal or a supervisor does. Returns (process, count file, sends log)."""
    out, log = tmp_path / "count", tmp_path / "sent"
    env = dict(os.environ, PYTHONPATH=ROOT)

    def own_group():
        _default_sigint()
        os.setpgid(0, 0)

    p = subprocess.Popen([PY, "-c", _LOGGED_ATTEMPT, str(log), "run", "--db", db, "--", PY, "-c",
                          _counting(signame, leave_group), str(out)],
                         stdout=subprocess.PIPE, env=env, cwd=cwd, preexec_fn=own_group)
    assert p.stdout.readline() == b"ready\n"
    assert os.getpgid(p.pid) == p.pid
    return p, out, log


def _sent(log):
    return log.read_text().split() if log.exists() else []


@pytest.mark.parametrize("how", ["group", "alone", "group-then-alone", "alone-then-group"])
def test_sigint_reaches_the_command_once_whether_sent_to_the_group_or_to_attempt_alone(db, repo, tmp_path, how):
    """SIGINT sent to the whole process group (`kill -INT -PGID`, as a terminal's Ctrl-C, a
    supervisor or a CI runner's cancel do) already reached the command: `attempt run` forwarded
    it again, and the command could see two (its "force quit"). One sent to `attempt run`
    alone (`kill -INT PID`) reaches the command once, through `attempt run`."""
    p, out, log = _start_counting(db, repo, tmp_path)
    for i, step in enumerate(how.split("-then-")):
        if i:  # the command has taken the first: wait a little, as a person would
            deadline = time.monotonic() + 10
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)
        if step == "group":
            os.killpg(p.pid, signal.SIGINT)
        else:
            os.kill(p.pid, signal.SIGINT)
    want = how.count("group") + how.count("alone")
    assert p.wait(timeout=30) == 10 + want  # the command's own exit status: it counted `want`
    assert out.read_text() == str(want)
    assert _sent(log) == [str(int(signal.SIGINT))] * how.count("alone")
    finished = by_name(events(db), "command.finished")[0]
    assert finished["outcome"]["exit_code"] == 10 + want


def test_sigterm_sent_to_the_group_reaches_the_command_once(db, repo, tmp_path):
    """Every signal we forward: a SIGTERM to the group (a supervisor stopping a job) is not
    sent again either, and `attempt run` exits as the command did."""
    p, out, log = _start_counting(db, repo, tmp_path, "SIGTERM")
    os.killpg(p.pid, signal.SIGTERM)
    assert p.wait(timeout=30) == 11
    assert out.read_text() == "1" and _sent(log) == []


def test_a_group_signal_is_forwarded_to_a_command_that_left_the_group(db, repo, tmp_path):
    """A command that moved to a process group of its own (a shell with job control does) did
    not get what was sent to ours: `attempt run` sends it on, once."""
    p, out, log = _start_counting(db, repo, tmp_path, leave_group=True)
    os.killpg(p.pid, signal.SIGINT)
    assert p.wait(timeout=30) == 11
    assert out.read_text() == "1" and _sent(log) == [str(int(signal.SIGINT))]


def test_git_snapshots_do_not_run_what_the_repository_configures(db, repo, tmp_path, home):
    """fsmonitor, filter drivers and external diff named by a repository's own config never run."""
    pwned = tmp_path / "pwned"
    env = git_env(home)
    script = f"touch {pwned}; cat"
    for k, v in (("core.fsmonitor", f"touch {pwned}"), ("filter.evil.clean", script),
                 ("filter.evil.process", f"touch {pwned}"), ("diff.external", f"touch {pwned}")):
        subprocess.run(["git", "config", k, v], cwd=repo, check=True, env=env)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    subprocess.run(["git", "config", "diff.evil.textconv", f"touch {pwned}"], cwd=repo, check=True, env=env)
    (repo / "a.txt").write_text("changed\n")
    os.utime(repo / "a.txt", (1, 1))
    p = run_attempt(["snapshot", "--json", "--db", db], cwd=repo, env={"HOME": str(home)})
    assert p.returncode == 0, p.stderr
    snap = json.loads(p.stdout)["snapshot"]
    assert snap["dirty"] is True
    assert not pwned.exists()


def test_sessions_by_name_and_their_refusals(db, repo):
    env = {"ATTEMPTDB_SESSION": ""}
    attempt("note", "first", "--session", "work 1", "--title", "T", db=db, cwd=repo, env=env)
    attempt("note", "second", "--session", "work 1", db=db, cwd=repo, env=env)
    evs = events(db)
    assert [e["provider_event_name"] for e in evs] == ["session.started", "session.note_added", "session.note_added"]
    sid = "ses_" + evs[0]["session_id"]
    attempt("note", "third", "--session", sid[:12], db=db, cwd=repo, env=env)  # the short id a table prints
    assert [e["session_id"] for e in events(db)][-1] == evs[0]["session_id"]
    attempt("close", "--session", sid, db=db, env=env)
    p = attempt("close", "--session", "work 1", db=db, env=env, ok=False)
    assert p.returncode == 1 and b"error[session.not_open]" in p.stderr
    p = attempt("close", db=db, env=env, ok=False)
    assert p.returncode == 2 and b"error[session.none]" in p.stderr
    for bad in ("", " x", "a\x1b[2Jb", "x" * 129):
        p = attempt("note", "n", "--session", bad, db=db, env=env, ok=False)
        assert p.returncode == 2 and b"error[session.bad_name]" in p.stderr, bad
    fixture = os.path.join(ROOT, "fixtures", "providers", "claude_code", "session_start_resume.json")
    with open(fixture, "rb") as f:
        assert run_attempt(["capture", "claude-code", "--db", db], input=f.read()).returncode == 0
    other = sql(db, "SELECT session_id FROM events WHERE provider = 'claude_code'")[0][0]
    p = attempt("note", "n", "--session", other, db=db, env=env, ok=False)
    assert p.returncode == 2 and b"error[session.foreign]" in p.stderr
    p = attempt("snapshot", db=db, cwd=os.path.dirname(db), env=env, ok=False)
    assert p.returncode == 1 and b"error[snapshot.not_git]" in p.stderr


def test_a_reader_that_goes_away_stops_the_command_as_it_would_without_attempt(db, repo):
    """`attempt run -- yes | head -1` ends: the command gets its broken pipe."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    prog = "import itertools\nfor i in itertools.count(): print('y' * 100)"
    p = subprocess.Popen(attempt_cmd() + ["run", "--db", db, "--", PY, "-c", prog], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, cwd=repo)
    assert p.stdout.readline() == b"y" * 100 + b"\n"
    p.stdout.close()
    assert p.wait(timeout=60) == 1  # Python reports its broken pipe with exit status 1
    finished = by_name(events(db), "command.finished")[0]
    assert finished["outcome"]["exit_code"] == 1 and finished["attrs"]["x_attempt_stdout_bytes"] > 0


@pytest.mark.parametrize("args", [["--jsn", "--", "true"], ["--verbose", "--titel", "x", "--", "true"], ["-x", "true"]])
def test_a_mistyped_option_is_a_usage_error_not_a_failed_command(db, repo, args):
    """Before `--` (or the command's first word) a word starting with `-` that names no option of
    `attempt run` is refused as one (exit 2): it is never run as the command and recorded as a
    failed attempt. After `--` it is the command's."""
    p = attempt("run", *args, db=db, ok=False, cwd=repo)
    assert p.returncode == 2 and b"error[usage.unknown_option]" in p.stderr, p.stderr
    assert not os.path.exists(db) or sql(db, "SELECT count(*) FROM events")[0][0] == 0
    p = attempt("run", "--title=t", "-v", "--", sys.executable, "-c", "pass", db=db, cwd=repo)
    assert [e["provider_event_name"] for e in events(db)].count("command.finished") == 1


def test_a_damaged_database_never_stops_the_command_and_the_run_waits_in_the_spool(tmp_path, home, repo):
    """A file rolled back below its signed checkpoint is damaged (writes refused): `attempt run`
    refused to run the command at all (a CI step's tests never ran). Now the command runs, its
    exit status is its own, and the run's events wait in the spool, as a hook's do."""
    import shutil
    db = str(tmp_path / "d.db")
    attempt("run", "--", "true", db=db, cwd=repo)
    shutil.copy(db, str(tmp_path / "old.db"))
    attempt("run", "--", "true", db=db, cwd=repo)  # signs a checkpoint past the copy
    for side in ("", "-wal", "-shm"):
        if os.path.exists(db + side):
            os.remove(db + side)
    shutil.copy(str(tmp_path / "old.db"), db)
    p = attempt("run", "--", PY, "-c", "print('HELLO'); raise SystemExit(3)", db=db, ok=False, cwd=repo)
    assert p.returncode == 3 and p.stdout.decode() == "HELLO\n", p.stderr
    assert b"error[store.damaged]" in p.stderr and b"wait in the spool" in p.stderr
    spooled = os.listdir(db + ".spool")
    assert len(spooled) >= 4  # run.started, command.started, command.finished, run.stopped at least


def test_a_named_session_is_retracted_by_its_name(tmp_path, home):
    db = str(tmp_path / "a.db")
    attempt("run", "--session", "ci-4711", "--", PY, "-c", "pass", db=db, cwd=tmp_path)
    attempt("run", "--session", "ci-4712", "--", PY, "-c", "pass", db=db, cwd=tmp_path)
    p = attempt("retract", "--session", "ci-4711", "--reason", "test", "--yes", "--json", db=db)
    target = json.loads(p.stdout)["target"]
    assert sql(db, "SELECT retracted FROM sessions WHERE session_id = ?", target) == [(1,)]
    assert sql(db, "SELECT count(*) FROM sessions WHERE NOT retracted") == [(1,)]  # ci-4712 stays
    p = attempt("retract", "--session", "ci-9999", "--reason", "test", "--yes", db=db, ok=False)
    assert p.returncode != 0 and b"error[target." in p.stderr


def test_the_timeline_of_a_retracted_session_says_so_not_that_nothing_was_recorded(tmp_path, home):
    db = str(tmp_path / "a.db")
    attempt("run", "--session", "ci-4711", "--", PY, "-c", "pass", db=db, cwd=tmp_path)
    attempt("retract", "--session", "ci-4711", "--reason", "test", "--yes", db=db)
    for args in (["--session", "ci-4711"], []):
        out = " ".join(attempt("timeline", *args, db=db).stdout.decode().split())
        assert "no sessions yet" not in out and "retracted" in out, (args, out)
    out = " ".join(attempt("timeline", "--since", "2000-01-01", "--until", "2000-01-02", db=db).stdout.decode().split())
    assert out == "no sessions in this scope."


def test_snapshot_json_prints_what_was_stored_never_a_token_in_a_branch_name(db, repo, home):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    subprocess.run(["git", "checkout", "-qb", f"feature/{token}"], cwd=repo, check=True, env=git_env(home))
    p = run_attempt(["snapshot", "--json", "--db", db], cwd=repo, env={"HOME": str(home)})
    assert p.returncode == 0, p.stderr
    assert token.encode() not in p.stdout and b"[REDACTED:" in p.stdout
    stored = run_attempt(["events", "--jsonl", "--db", db])
    assert token.encode() not in stored.stdout


def test_run_and_note_in_a_deleted_working_directory_still_work(db, tmp_path, home):
    """A shell runs a command in a directory deleted under it; `attempt run` does too (the
    command's status, its events recorded), `note` records, `snapshot` is a coded error."""
    import shlex

    from conftest import ROOT, attempt_cmd
    gone = tmp_path / "gone"
    gone.mkdir()
    exe = " ".join(shlex.quote(a) for a in attempt_cmd())
    env = dict(os.environ, PYTHONPATH=ROOT, HOME=str(home), ATTEMPTDB_NO_DAEMON="1")

    def in_gone(args):
        return subprocess.run(["sh", "-c", f"mkdir -p {shlex.quote(str(gone))} && cd {shlex.quote(str(gone))} && "
                               f"rmdir {shlex.quote(str(gone))} && exec {exe} {args}"],
                              capture_output=True, env=env, timeout=120)
    p = in_gone(f"run --db {shlex.quote(db)} -- {shlex.quote(PY)} -c 'import sys; print(1); sys.exit(3)'")
    assert p.returncode == 3 and p.stdout == b"1\n" and b"error[" not in p.stderr, p.stderr
    assert by_name(events(db), "command.finished")[-1]["outcome"]["exit_code"] == 3
    p = in_gone(f"note hello --db {shlex.quote(db)}")
    assert p.returncode == 0, p.stderr
    p = in_gone(f"snapshot --db {shlex.quote(db)}")
    assert p.returncode == 1 and p.stderr.startswith(b"error[snapshot.not_git]"), p.stderr
