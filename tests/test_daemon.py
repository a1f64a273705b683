"""The capture daemon, through real hook processes: the first hook starts it, later hooks hand
their payload over and store exactly what a hook writing the file itself stores; a daemon that
was killed (-9), whose file was replaced or whose code changed is never written through; many
hooks at once lose nothing; a hostile connection does not stop it."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import apsw
import pytest
from conftest import ROOT, run_attempt

from attemptdb.capture import daemon, hookclient, spool
from attemptdb.capture.hookclient import GEMINI_ACK

PROMPT = {"session_id": "sess-daemon-1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
          "prompt": "run the tests again"}


def tool(i, event="PostToolUse", session="sess-daemon-1"):
    p = {"session_id": session, "cwd": "/tmp", "hook_event_name": event, "tool_name": "Bash",
         "tool_use_id": f"toolu_daemon_{i}", "tool_input": {"command": "pytest -q"}}
    if event == "PostToolUse":
        p["tool_response"] = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    return p


class Env:
    """A hook environment of its own (HOME, state directory, database) with the daemon on."""

    def __init__(self, tmp_path, name="a"):
        self.root = tmp_path / name
        self.root.mkdir()
        self.cwd = str(tmp_path)  # the same working directory for every hook of a test
        self.db = str(self.root / "attempt.db")
        self.state = str(self.root / "state")
        self.vars = {"HOME": str(self.root), "XDG_STATE_HOME": self.state,
                     "XDG_DATA_HOME": str(self.root / "data"), "ATTEMPTDB_PATH": self.db,
                     "ATTEMPTDB_NO_DAEMON": "", "XDG_RUNTIME_DIR": ""}

    def capture(self, payload, *flags, provider="claude-code", daemon_on=True):
        env = dict(self.vars, ATTEMPTDB_NO_DAEMON="" if daemon_on else "1")
        p = run_attempt(["capture", provider, *flags], input=json.dumps(payload).encode(), env=env,
                        cwd=self.cwd)
        assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p
        return p

    @property
    def pid(self):
        return daemon.pid(self.db, os.path.join(self.state, "attemptdb"))

    @property
    def sock(self):
        return hookclient.endpoint(self.db, os.path.join(self.state, "attemptdb"))

    def wait_running(self, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pid = self.pid
            if pid and alive(pid) and os.path.exists(self.sock):
                return pid
            time.sleep(0.02)
        raise AssertionError("no daemon started")

    def settled(self, timeout=10.0):
        """Wait until the daemon has moved what it received into the file: it answers a hook
        once the event is spooled (spec/capture-daemon.md), and removes the spool file after
        the commit. (A spool file that stays — a damaged file, a lock held — is waited out.)"""
        end = time.monotonic() + timeout
        while spool.pending(self.db) and time.monotonic() < end:
            time.sleep(0.01)

    def rows(self, sql="SELECT seq, event_id, kind FROM events ORDER BY seq"):
        self.settled()
        conn = apsw.Connection(self.db, flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(10_000)  # a daemon starting on a fresh file may hold a lock a moment
        try:
            return list(conn.execute(sql))
        finally:
            conn.close()

    def hook_log(self):
        path = os.path.join(self.state, "attemptdb", "hook.log")
        return open(path).read() if os.path.exists(path) else ""

    def stop(self):
        """Kill every daemon serving this test's database, also one a hook started that has not
        written its pid file yet (it is in /proc as soon as the hook that spawned it returned)."""
        for pid in daemons_for(self.db):
            os.kill(pid, signal.SIGKILL)
            wait_dead(pid)


def daemons_for(db) -> list:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if b"daemon" in args and db.encode() in args and alive(int(d)):
                found.append(int(d))
    return found


def alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie (our own child, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def wait_dead(pid, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and alive(pid):
        time.sleep(0.02)
    assert not alive(pid), pid


@pytest.fixture
def hooks(tmp_path):
    made = []

    def make(name="a"):
        e = Env(tmp_path, name)
        made.append(e)
        return e
    yield make
    for e in made:
        e.stop()


# run in a fresh process so the module list is the hook's own
DRIVER = r"""
import sys
from attemptdb.capture import hook as capture
capture.main(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write("\n".join(sorted(sys.modules)))
"""


def hook_modules(e, payload, tmp_path) -> list:
    out = tmp_path / "modules.txt"
    env = dict(os.environ, **e.vars, PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", DRIVER, str(out), "claude-code"], input=json.dumps(payload).encode(),
                       env=env, cwd=e.cwd, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    return out.read_text().split("\n")


def test_first_hook_starts_it_and_later_hooks_hand_over_without_opening_the_file(hooks, tmp_path):
    e = hooks()
    e.capture(tool(0))  # no daemon yet: this hook writes the file and starts one
    assert len(e.rows()) == 1
    pid = e.wait_running()
    modules = hook_modules(e, tool(1), tmp_path)
    assert "attemptdb.capture.hookclient" in modules
    assert "apsw" not in modules and "attemptdb.store.database" not in modules  # the daemon stored it
    assert "attemptdb.adapters" not in modules  # nor built it
    assert "attemptdb.capture.daemon" not in modules  # the hook's side is hookclient alone
    for i in range(2, 6):
        e.capture(tool(i))
    assert [r[2] for r in e.rows()] == ["tool_call_finished"] * 6
    assert e.pid == pid  # one daemon served them all
    # the projections are current once the daemon committed: its insert ran the triggers
    assert e.rows("SELECT count(*) FROM tool_calls")[0][0] == 6
    p = run_attempt(["verify", "--db", e.db])
    assert p.returncode == 0 and p.stdout.startswith(b"ok: 6 events"), p.stdout
    assert e.hook_log() == ""


def test_stores_exactly_what_a_hook_writing_the_file_itself_stores(hooks):
    through, direct = hooks("through"), hooks("direct")
    through.capture(PROMPT)
    through.wait_running()
    flags = ["--device-id", "0190a000-0000-7000-8000-000000000001", "--captured-at", "1764500000000000"]
    stream = [tool(7, "PreToolUse"), tool(7), PROMPT, {"session_id": "sess-daemon-1", "hook_event_name": "Stop"},
              b"not json at all"]
    for i, payload in enumerate(stream):
        at = ["--captured-at", str(1764500000000000 + i * 1000)]
        for e, on in ((through, True), (direct, False)):
            if isinstance(payload, bytes):
                env = dict(e.vars, ATTEMPTDB_NO_DAEMON="" if on else "1")
                p = run_attempt(["capture", "claude-code", *flags, *at], input=payload, env=env, cwd=e.cwd)
                assert p.returncode == 0
            else:
                e.capture(payload, *flags, *at, daemon_on=on)
    assert not direct.pid  # the direct side never started one
    cols = ("kind, provider_event_name, session_id, device_id, observed_at, captured_at, project_id, "
            "attrs_json, content_json, raw_json, outcome_status, tool_category")
    a = through.rows(f"SELECT {cols} FROM events ORDER BY seq")[1:]  # after the first (start-up) event
    b = direct.rows(f"SELECT {cols} FROM events ORDER BY seq")
    assert len(a) == len(stream) and a == b
    # tool-call events have the same (derived) ids both ways
    ids_a = [r[0] for r in through.rows("SELECT event_id FROM events WHERE tool_call_id IS NOT NULL ORDER BY seq")]
    ids_b = [r[0] for r in direct.rows("SELECT event_id FROM events WHERE tool_call_id IS NOT NULL ORDER BY seq")]
    assert ids_a == ids_b and len(ids_a) == 2


def test_a_daemon_killed_with_sigkill_loses_nothing_and_is_replaced(hooks):
    e = hooks()
    e.capture(tool(0))
    first = e.wait_running()
    e.capture(tool(1))
    os.kill(first, signal.SIGKILL)
    wait_dead(first)
    assert os.path.exists(e.sock)  # it could not clean up: the next hook finds a dead socket
    e.capture(tool(2))
    assert len(e.rows()) == 3
    second = e.wait_running()
    assert second != first
    e.capture(tool(3))
    assert len(e.rows()) == 4
    assert run_attempt(["verify", "--db", e.db]).returncode == 0


def test_a_replaced_database_file_is_never_written_through_the_old_daemon(hooks):
    e = hooks()
    e.capture(tool(0))
    old = e.wait_running()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(e.db + suffix):
            os.unlink(e.db + suffix)
    e.capture(tool(1))  # the daemon's file is gone: it says stale, this hook makes a new file
    wait_dead(old)
    assert [r[2] for r in e.rows()] == ["tool_call_finished"]
    assert e.rows("SELECT count(*) FROM events WHERE tool_call_id = 'toolu_daemon_1'")[0][0] == 1


def test_a_daemon_from_other_code_answers_stale_and_leaves(hooks, monkeypatch):
    e = hooks()
    e.capture(tool(0))
    pid = e.wait_running()
    monkeypatch.setattr(hookclient, "code_id", lambda: "0.0.0:1:2")
    for k, v in e.vars.items():
        monkeypatch.setenv(k, v)
    hook = hookclient.Hook(json.dumps(tool(1)).encode(), False, e.cwd, None, 1764500000000000, None)
    assert hookclient.request(e.db, ["claude-code"], hook, hookclient.code_id()) == "stale"
    wait_dead(pid)
    assert len(e.rows()) == 1  # nothing was stored by the stale daemon


def at_once(e, numbers):
    """Start one hook process per number (tool call `number`, sessions s0..s3) before any has
    its payload, then feed them all: they run together. Each must exit 0 and print nothing."""
    env = dict(os.environ, **e.vars, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "attemptdb", "capture", "claude-code"]
    procs = [(i, subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, cwd=e.cwd)) for i in numbers]
    for i, p in procs:
        p.stdin.write(json.dumps(tool(i, session=f"s{i % 4}")).encode())
        p.stdin.close()
    for _, p in procs:
        assert p.wait(120) == 0 and p.stdout.read() == b"" and p.stderr.read() == b""
        p.stdout.close()
        p.stderr.close()


def test_many_hooks_at_once_through_one_daemon(hooks):
    e = hooks()
    e.capture(tool(0))
    e.wait_running()
    at_once(e, range(1, 25))
    assert len(e.rows()) == 25
    assert len({r[1] for r in e.rows()}) == 25
    assert run_attempt(["verify", "--db", e.db]).returncode == 0


def test_hostile_connections_get_an_answer_and_the_daemon_keeps_serving(hooks):
    import socket
    e = hooks()
    e.capture(tool(0))
    pid = e.wait_running()
    for junk in (b"not json\n", b'{"v": 1, "n": -5, "argv": []}\n', b'{"v": 1, "n": 3, "argv": [1]}\nabc',
                 b"\x00\xff" * 40000, b""):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(e.sock)
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            answer = s.recv(64)
            assert answer in (b"bad\n", b""), answer
    # a request naming another database is not served (and the daemon leaves)
    assert alive(pid)
    e.capture(tool(1))
    assert len(e.rows()) == 2 and e.pid == pid


def test_a_socket_directory_others_can_enter_is_not_used(hooks, tmp_path):
    e = hooks()
    e.capture(tool(0))
    pid = e.wait_running()
    run_dir = os.path.dirname(e.sock)
    os.chmod(run_dir, 0o755)
    try:
        modules = hook_modules(e, tool(1), tmp_path)
    finally:
        os.chmod(run_dir, 0o700)
    assert "apsw" in modules  # the hook wrote the file itself
    assert len(e.rows()) == 2 and e.pid == pid


def test_a_hook_that_retries_after_a_lost_answer_stores_nothing_twice(tmp_path, monkeypatch):
    """The daemon and the hook's own fallback use the hook's event id: if the daemon committed
    and died before answering, the hook's retry is a duplicate, not a second fact."""
    from attemptdb.capture import hook as capture
    from attemptdb.store.database import Store
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    db = str(tmp_path / "x.db")
    eid = "0190a000-0000-7000-8000-0000000000aa"
    for _ in range(2):
        hook = hookclient.Hook(json.dumps(PROMPT).encode(), False, str(tmp_path), None, 1764500000000000, eid)
        capture.run(["claude-code", "--db", db], hook)
        capture.seen["store"].close()
    st = Store.open(db, readonly=True)
    assert [r[0] for r in st.conn.execute("SELECT event_id FROM events")] == ["ev_" + eid]
    st.close()


def test_status_and_stop(hooks):
    e = hooks()
    e.capture(tool(0))
    pid = e.wait_running()
    env = dict(e.vars)
    p = run_attempt(["daemon", "status", "--json"], env=env)
    st = json.loads(p.stdout)
    assert p.returncode == 0 and st["running"] is True and st["pid"] == pid and st["socket"] == e.sock
    p = run_attempt(["daemon", "run"], env=env)  # it said nothing and exited 0
    said = " ".join(p.stderr.decode().split())
    assert p.returncode == 0 and f"a daemon already serves {e.db}: pid {pid}" in said, said
    p = run_attempt(["daemon", "stop"], env=env)
    assert p.returncode == 0 and f"stopped: pid {pid}".encode() in p.stdout
    wait_dead(pid)
    assert not os.path.exists(e.sock)  # a clean stop removes its socket
    p = run_attempt(["daemon", "status"], env=env)
    assert p.stdout == b"not running\n"
    e.capture(tool(1), daemon_on=False)
    assert len(e.rows()) == 2


def test_doctor_reports_the_daemon_and_a_socket_directory_others_can_enter(hooks, monkeypatch):
    from attemptdb.installer import doctor
    e = hooks()
    e.capture(tool(0))
    pid = e.wait_running()
    for k, v in e.vars.items():
        monkeypatch.setenv(k, v)
    state, problem = doctor.daemon_state(e.db)
    assert state == {"enabled": True, "running": True, "pid": pid, "socket": e.sock, "answers": True}
    assert problem is None
    # a hung daemon (stopped here): every hook waited REPLY_S for it and doctor said all was well
    os.kill(pid, signal.SIGSTOP)
    try:
        state, problem = doctor.daemon_state(e.db)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert state["answers"] is False and f"the capture daemon (pid {pid}) does not answer" in problem
    assert doctor.daemon_state(e.db)[1] is None  # going again
    assert len(e.rows()) == 1  # the probe stored nothing
    run_dir = os.path.dirname(e.sock)
    os.chmod(run_dir, 0o777)
    try:
        state, problem = doctor.daemon_state(e.db)
    finally:
        os.chmod(run_dir, 0o700)
    assert "not a directory of yours with mode 0700" in problem


def test_sixty_four_hooks_at_once_on_a_cold_database(hooks):
    """The issue's concurrency check with the daemon on, from nothing: no database, no daemon.
    All exit 0 silently, verify ok, and one daemon is left serving. On a loaded machine a hook
    that waited out its lock timeout spools its event (capture never fails the agent); the next
    capture drains the spool first, so after it every one of the 64 is stored, once."""
    e = hooks()
    at_once(e, range(64))
    assert run_attempt(["verify", "--db", e.db]).returncode == 0
    e.wait_running()
    time.sleep(0.5)  # any other starter has given up by now
    assert len(daemons_for(e.db)) == 1
    e.capture(tool(99))
    assert len(e.rows()) == 65 and len({r[1] for r in e.rows()}) == 65
    assert run_attempt(["verify", "--db", e.db]).returncode == 0


def test_gemini_gets_its_ack_through_the_daemon_and_its_names_match_the_registry(hooks):
    from attemptdb.adapters import registry
    assert hookclient.GEMINI_NAMES == {k for k, v in registry.ALIASES.items() if v == "gemini_cli"}
    e = hooks()
    e.capture(tool(0))
    e.wait_running()
    env = dict(e.vars)
    for name in ("gemini-cli", "Gemini"):
        p = run_attempt(["capture", name], input=json.dumps(
            {"session_id": "g1", "hook_event_name": "BeforeTool", "cwd": "/tmp", "tool_name": "run_shell_command",
             "tool_input": {"command": "ls"}}).encode(), env=env, cwd=e.cwd)
        assert p.returncode == 0 and p.stdout == b'{"decision":"allow"}\n' and p.stderr == b""
    assert e.rows("SELECT count(*) FROM events WHERE provider = 'gemini_cli'")[0][0] >= 1


def test_a_working_directory_that_is_not_utf8_still_stores_the_real_event(hooks, tmp_path):
    """Both ways (through the daemon and written by the hook itself): the undecodable bytes of
    the directory name become U+FFFD in the project root instead of making the event unstorable."""
    e = hooks()
    e.capture(tool(0))
    e.wait_running()
    odd = os.path.join(os.fsencode(str(tmp_path)), b"dir-\xff\xfe")
    os.mkdir(odd)
    for no_daemon in ("", "1"):
        payload = {"session_id": f"sess-odd{no_daemon}", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
        env = dict(os.environ, **dict(e.vars, ATTEMPTDB_NO_DAEMON=no_daemon), PYTHONPATH=ROOT)
        p = subprocess.run([sys.executable, "-m", "attemptdb", "capture", "claude-code"],
                           input=json.dumps(payload).encode(), env=env, cwd=odd, capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stdout == b"" and p.stderr == b""
    rows = e.rows("SELECT kind, attrs_json, project_root FROM events WHERE provider_session_id LIKE 'sess-odd%'")
    assert [r[0] for r in rows] == ["prompt_submitted"] * 2 and not any("capture_gap" in r[1] for r in rows)
    assert rows[0][2] == rows[1][2] and rows[0][2].endswith("dir-\ufffd\ufffd")
    assert e.hook_log() == ""


def test_stop_never_signals_a_process_a_leftover_pid_file_names(hooks):
    """After a `kill -9` the pid file stays; once its number belongs to another process,
    `daemon stop` must not signal that process. Only the process listening on the socket is
    a daemon of ours: with one running, it is the one stopped whatever the pid file says."""
    e = hooks()
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        os.makedirs(os.path.dirname(e.sock), mode=0o700, exist_ok=True)
        with open(e.sock + ".pid", "w") as f:  # a dead daemon's file; its pid reused by `sleep`
            f.write(f"{bystander.pid}\n")
        env = dict(e.vars)
        p = run_attempt(["daemon", "status", "--json"], env=env)
        assert json.loads(p.stdout)["running"] is False
        p = run_attempt(["daemon", "stop"], env=env)
        assert p.returncode == 0 and p.stdout == b"not running\n"
        time.sleep(0.2)
        assert bystander.poll() is None  # not signalled
        e.capture(tool(0))  # a real daemon starts (and rewrites the pid file)
        pid = e.wait_running()
        with open(e.sock + ".pid", "w") as f:
            f.write(f"{bystander.pid}\n")
        p = run_attempt(["daemon", "stop"], env=env)
        assert p.returncode == 0 and f"stopped: pid {pid}".encode() in p.stdout
        wait_dead(pid)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def lean(e, payload, *flags, provider="claude-code", daemon_on=True, importtime=False):
    """The installed hook command (installer.command.find_hook_executable): this interpreter,
    isolated, without `site`, on the package's __main__.py by path."""
    from attemptdb.installer.command import find_hook_executable
    argv = find_hook_executable().argv
    assert argv[1:3] == ["-I", "-S"] and argv[3] == os.path.join(ROOT, "attemptdb", "__main__.py")
    if importtime:
        argv = argv[:3] + ["-X", "importtime"] + argv[3:]
    env = dict(os.environ, **dict(e.vars, ATTEMPTDB_NO_DAEMON="" if daemon_on else "1"))
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    p = subprocess.run(argv + ["capture", provider, *flags], input=data, env=env, cwd=e.cwd,
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == (GEMINI_ACK if provider == "gemini" else b""), p
    return p


def imported(stderr: bytes) -> set:
    """The modules `-X importtime` names."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line} - {"imported package"}


def test_the_lean_hook_command_imports_no_site_packages_through_a_daemon_and_all_of_them_without(hooks):
    e = hooks()
    lean(e, tool(0))  # no daemon: the lean process loads the site-packages, stores, starts one
    assert [r[2] for r in e.rows()] == ["tool_call_finished"]
    e.wait_running()
    mods = imported(lean(e, tool(1), importtime=True).stderr)
    assert "attemptdb.capture.hookclient" in mods and "_socket" in mods
    for heavy in ("site", "apsw", "attemptdb.capture.hook", "attemptdb.store.database", "attemptdb.adapters", "json",
                  "hashlib", "socket", "enum", "_distutils_hack",
                  # not even `os` (posix serves), `_json` (a plain header needs no escaping),
                  # `location` (hookclient.locate answers a plain case itself) or `_sha256` (a shared
                  # library: the socket's name is hookclient.socket_digest's)
                  "os", "posixpath", "_collections_abc", "_json", "attemptdb.store.location", "_sha256"):
        assert heavy not in mods, heavy
    lean(e, tool(2), daemon_on=False)  # without a daemon: the full path, in the same process
    assert [r[2] for r in e.rows()] == ["tool_call_finished"] * 3
    assert e.rows("SELECT count(*) FROM tool_calls")[0][0] == 3
    assert e.hook_log() == ""
    p = lean(e, {"session_id": "g1", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                 "tool_input": {"command": "ls"}, "cwd": "/tmp"}, provider="gemini", daemon_on=True)
    assert p.stdout == GEMINI_ACK and len(e.rows()) == 4


@pytest.mark.parametrize("data,digest", [  # FNV-1a 128-bit test vectors, cut to 20 hex digits
    (b"", "6c62272e07bb014262b8"), (b"a", "d228cb696f1a8caf7891"), (b"foobar", "343e1662793c64bf6f0d")])
def test_the_socket_name_is_fnv1a_of_the_database_and_state_directory(data, digest):
    from attemptdb.capture import hookclient
    assert hookclient.socket_digest(data) == digest
    a, b = (hookclient.endpoint(p, "/tmp/state") for p in ("/tmp/one.db", "/tmp/two.db"))
    assert a != b and a == hookclient.endpoint("/tmp/one.db", "/tmp/state") and a.endswith(".sock")


def test_the_lean_hook_command_stores_exactly_what_a_hook_writing_the_file_itself_stores(hooks):
    through, direct = hooks("through"), hooks("direct")
    lean(through, PROMPT)
    through.wait_running()
    flags = ["--device-id", "0190a000-0000-7000-8000-000000000001"]
    stream = [tool(7, "PreToolUse"), tool(7), PROMPT, {"session_id": "sess-daemon-1", "hook_event_name": "Stop"},
              b"not json at all", b"\xff\xfe binary"]
    for i, payload in enumerate(stream):
        at = ["--captured-at", str(1764500000000000 + i * 1000)]
        lean(through, payload, *flags, *at)
        direct.capture(payload, *flags, *at, daemon_on=False) if not isinstance(payload, bytes) else \
            run_attempt(["capture", "claude-code", *flags, *at], input=payload,
                        env=dict(direct.vars, ATTEMPTDB_NO_DAEMON="1"), cwd=direct.cwd)
    assert not direct.pid
    cols = ("kind, provider_event_name, session_id, device_id, observed_at, captured_at, project_id, "
            "attrs_json, content_json, raw_json, outcome_status, tool_category")
    a = through.rows(f"SELECT {cols} FROM events ORDER BY seq")[1:]
    b = direct.rows(f"SELECT {cols} FROM events ORDER BY seq")
    assert len(a) == len(stream) and a == b
    assert through.hook_log() == ""


def test_the_hook_client_speaks_the_daemons_request_and_mints_v7_ids():
    from attemptdb.capture import hookclient
    from attemptdb.model import fastjson, ids
    hook = hookclient.Hook(b"{}", False, "/t\udcff\u00e9", None, 1764500000000000, ids.uuid7())
    line = hookclient.header("1:2:3", "/x/attempt.db", ["claude-code", "--db", "/x/attempt.db"], hook)
    req = fastjson.loads(line.decode("ascii"))
    assert req == {"v": 1, "code": "1:2:3", "db": "/x/attempt.db", "argv": ["claude-code", "--db", "/x/attempt.db"],
                   "cwd": "/t\udcff\u00e9", "claude_project_dir": None, "captured_at": 1764500000000000,
                   "event_id": hook.event_id, "truncated": False, "n": 2}
    u = hookclient.uuid7(1764500000000)
    assert ids.is_uuid(u) and u[14] == "7" and u[19] in "89ab" and u[:13] == ids.uuid7(1764500000000)[:13]
    assert hookclient.db_option(["x", "--db", "/a", "--db=/b"]) == "/b"
    assert hookclient.provider_of(["--event", "Stop", "--dry-run", "gemini"]) == "gemini"


def test_an_acknowledged_event_is_in_the_file_or_the_spool_when_the_hook_returns(hooks):
    """The daemon answers on its receipt (the event spooled), then commits: whenever one looks,
    the event is in one of the two, and in the file once the daemon is done."""
    e = hooks()
    lean(e, tool(0))
    e.wait_running()
    for i in range(1, 6):
        lean(e, tool(i))
        # the spool first: its file is removed only after the commit, so a file gone by now is stored
        spooled = []
        for path in spool.pending(e.db):
            try:
                with open(path, "rb") as f:
                    spooled += [path] if f"toolu_daemon_{i}".encode() in f.read() else []
            except FileNotFoundError:
                pass
        conn = apsw.Connection(e.db, flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(10_000)
        stored = list(conn.execute("SELECT count(*) FROM events WHERE tool_call_id = ?", (f"toolu_daemon_{i}",)))[0][0]
        conn.close()
        assert stored + len(spooled) >= 1, i
    assert len(e.rows()) == 6 and spool.pending(e.db) == []
    assert [n for n in os.listdir(e.db + ".spool") if n.endswith(spool.RESERVED)] != []  # the next receipt's file
    pid = e.pid
    e.stop()
    wait_dead(pid)


def test_an_edit_in_place_of_the_hook_code_makes_the_daemon_stale(hooks, tmp_path):
    """The hook names its code by version and package directory only; the daemon watches its
    own files. A file of the hook path rewritten in place (its folder's mtime unchanged): the
    next hook is answered `stale` and stores its event itself, and the daemon leaves."""
    copy = tmp_path / "copy"
    for name in ("attemptdb", "migrations", "sql", "grammar", "spec"):
        if os.path.isdir(os.path.join(ROOT, name)):
            shutil.copytree(os.path.join(ROOT, name), copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    e = hooks()
    argv = [sys.executable, "-I", "-S", str(copy / "attemptdb" / "__main__.py"), "capture", "claude-code"]
    env = dict(os.environ, **e.vars)

    def hook(i):
        p = subprocess.run(argv, input=json.dumps(tool(i)).encode(), env=env, cwd=e.cwd, capture_output=True,
                           timeout=60)
        assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p

    hook(0)
    pid = e.wait_running()
    hook(1)
    assert e.pid == pid and len(e.rows()) == 2
    target = copy / "attemptdb" / "capture" / "project.py"
    folder = os.stat(target.parent).st_mtime_ns
    with open(target, "a") as f:
        f.write("\n# edited in place\n")
    assert os.stat(target.parent).st_mtime_ns == folder
    hook(2)
    wait_dead(pid)
    assert [r[2] for r in e.rows()] == ["tool_call_finished"] * 3
    assert e.hook_log() == ""


@pytest.mark.parametrize("inotify", [True, False])
def test_the_code_watch_sees_a_file_written_created_or_removed(tmp_path, monkeypatch, inotify):
    from attemptdb.capture import codewatch
    folders = [str(tmp_path / "a"), str(tmp_path / "b")]
    for d in folders:
        os.mkdir(d)
        with open(os.path.join(d, "m.py"), "w") as f:
            f.write("x = 1\n")
    monkeypatch.setattr(hookclient, "code_folders", lambda: folders)
    if not inotify:
        monkeypatch.setattr(codewatch, "_inotify", lambda folders: None)
    for change in ("write", "create", "remove", "other"):
        w = codewatch.CodeWatch()
        assert (w.fd is not None) == (inotify and sys.platform.startswith("linux"))
        assert not w.changed()
        if change == "write":
            with open(os.path.join(folders[1], "m.py"), "a") as f:
                f.write("y = 2\n")
            os.utime(os.path.join(folders[1], "m.py"), ns=(1, 10 ** 18))  # a newer mtime for the stamp too
        elif change == "create":
            with open(os.path.join(folders[0], "n.py"), "w") as f:
                f.write("")
        elif change == "remove":
            os.unlink(os.path.join(folders[0], "n.py"))
        else:
            with open(os.path.join(folders[0], "notes.txt"), "w") as f:  # not code: no change
                f.write("hi")
        assert w.changed() is (change != "other"), change
        assert w.changed() is (change != "other")  # and it stays so
        w.close()


def test_the_hook_client_finds_the_database_location_finds(tmp_path, monkeypatch):
    """hookclient.locate answers plain cases from `posix` alone and hands the rest to
    store.location.resolve: either way the same path."""
    from attemptdb.store import location
    assert (hookclient.LOCAL_DIR, hookclient.DB_NAME, hookclient.MAX_WALK) == \
        (location.LOCAL_DIR, location.DB_NAME, location.MAX_WALK)
    home = tmp_path / "home"
    repo = tmp_path / "repo" / "sub"
    repo.mkdir(parents=True)
    cases = []
    for env in ({"HOME": str(home)}, {"HOME": str(home) + "/"}, {"HOME": "/"}, {"HOME": ""}, {},
                {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "data")},
                {"HOME": str(home), "XDG_DATA_HOME": "relative/data"},
                {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path) + "//data/./x/.."},
                {"HOME": str(home), "ATTEMPTDB_PATH": str(tmp_path / "env.db")},
                {"HOME": str(home), "ATTEMPTDB_PATH": "~/env.db"},
                {"HOME": str(home), "ATTEMPTDB_PATH": "rel/env.db"}):
        for explicit in (None, "", str(tmp_path / "x.db"), "x.db", "~/x.db", str(tmp_path) + "/a/../x.db"):
            for cwd in (str(repo), str(tmp_path), "/", None, str(repo) + "/"):
                cases.append((env, explicit, cwd))
    for local in (False, True):
        if local:  # a `.attemptdb` above the working directory: location judges it
            (tmp_path / "repo" / ".attemptdb").mkdir()
        for env, explicit, cwd in cases:
            for k in ("HOME", "XDG_DATA_HOME", "ATTEMPTDB_PATH"):
                monkeypatch.delenv(k, raising=False)
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            assert hookclient.locate(explicit, cwd) == location.resolve(explicit, cwd), (env, explicit, cwd)


def test_the_code_is_named_the_same_however_its_path_is_spelled(tmp_path, monkeypatch):
    """A hook run through a symlinked or otherwise spelled path names the same code (no daemon
    thrashing between two spellings), and another package directory another code."""
    here = hookclient.code_id()
    os.symlink(os.path.join(ROOT, "attemptdb"), tmp_path / "link")
    monkeypatch.setattr(hookclient, "__file__", str(tmp_path / "link" / "capture" / "hookclient.py"))
    assert hookclient.code_id() == here
    (tmp_path / "other" / "capture").mkdir(parents=True)
    monkeypatch.setattr(hookclient, "__file__", str(tmp_path / "other" / "capture" / "hookclient.py"))
    assert hookclient.code_id() != here


def test_a_hung_daemon_costs_one_hook_its_wait_not_every_hook(hooks):
    """A stopped or hung daemon still has its connections taken by the kernel, and its lock
    keeps another from starting: every hook waited REPLY_S (3 s) for it, then stored its own
    event. The first one to wait marks the socket `.slow`; the hooks of the next SLOW_S store
    theirs at once; then they hand over to the daemon again."""
    from attemptdb.capture import hookclient
    e = hooks()
    e.capture(tool(0))
    pid = e.wait_running()
    e.settled()
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        e.capture(tool(1))
        first = time.monotonic() - t0
        t0 = time.monotonic()
        for i in (2, 3):
            e.capture(tool(i))
        after = (time.monotonic() - t0) / 2
    finally:
        os.kill(pid, signal.SIGCONT)
    assert first >= hookclient.REPLY_S and after < hookclient.REPLY_S / 2, (first, after)
    assert os.path.exists(e.sock + ".slow")
    old = time.time() - hookclient.SLOW_S - 1
    os.utime(e.sock + ".slow", (old, old))
    e.capture(tool(4))  # the daemon again (it answers: awake)
    e.settled()
    assert len(e.rows()) == 5
