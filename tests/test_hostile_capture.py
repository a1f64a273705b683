"""The capture path against hostile delivery, through the installed (lean) hook command in real
subprocesses, with and without a capture daemon: a hook whose stdin never closes, or never
ends, returns within a bound and still stores what arrived (DESIGN.md invariant 4: never
blocks for long); a client that trickles its request into the daemon's socket is dropped
within the daemon's read limit, and the next hook is served (spec/capture-daemon.md: "a
connection must deliver within 5 s")."""

import json
import os
import socket
import subprocess
import time

import pytest
from test_daemon import GEMINI_ACK, Env, alive, hooks  # noqa: F401 (hooks: the fixture)

from attemptdb.capture import daemon_server, hookclient
from attemptdb.installer.command import find_hook_executable

BOUND_S = hookclient.STDIN_S + 10.0  # the stdin limit, and room for a loaded 2-core host
STOP = {"session_id": "sess-open-stdin", "cwd": "/tmp", "hook_event_name": "Stop"}


def start_hook(e: Env, provider="claude-code", stdin=subprocess.PIPE, daemon_on=False):
    argv = find_hook_executable().argv
    env = dict(os.environ, **dict(e.vars, ATTEMPTDB_NO_DAEMON="" if daemon_on else "1"))
    return subprocess.Popen(argv + ["capture", provider], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=e.cwd)


def finish(p, stdout=b""):
    """The hook ends within BOUND_S, exits 0 and says nothing (it is killed if it hangs)."""
    try:
        p.wait(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError(f"the hook was still running after {BOUND_S} s")
    finally:
        out, err = p.stdout.read(), p.stderr.read()
        p.stdout.close()
        p.stderr.close()
    assert p.returncode == 0 and out == stdout and err == b"", (p.returncode, out, err[-2000:])


def events(e: Env):
    return e.rows("SELECT kind, provider_session_id, json_extract(attrs_json, '$.capture_gap') FROM events "
                  "ORDER BY seq")


@pytest.mark.parametrize("daemon_on", [False, True], ids=["direct", "daemon"])
@pytest.mark.parametrize("written", [True, False], ids=["payload_written", "nothing_written"])
def test_a_hook_whose_stdin_is_never_closed_returns_and_stores_what_arrived(hooks, daemon_on, written):  # noqa: F811
    e = hooks()
    if daemon_on:
        e.capture(dict(STOP, session_id="first"))
        e.wait_running()
    p = start_hook(e, daemon_on=daemon_on)
    try:
        if written:
            p.stdin.write(json.dumps(STOP).encode())
            p.stdin.flush()
        finish(p)  # stdin still open: the agent neither closed it nor will
    finally:
        p.stdin.close()
    got = events(e)[1:] if daemon_on else events(e)
    assert got == ([("turn_stopped", "sess-open-stdin", None)] if written
                   else [("unknown", "unknown", "empty_payload")])


@pytest.mark.parametrize("source", ["endless_pipe", "endless_device"])
def test_a_stdin_that_never_ends_is_cut_at_the_cap_within_the_bound(hooks, source):  # noqa: F811
    e = hooks()
    if source == "endless_pipe":
        writer = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
        try:
            p = start_hook(e, provider="gemini-cli", stdin=writer.stdout)
            writer.stdout.close()
            finish(p, stdout=GEMINI_ACK)
        finally:
            writer.kill()
            writer.wait()
    else:
        with open("/dev/zero", "rb") as zero:
            finish(start_hook(e, provider="gemini-cli", stdin=zero), stdout=GEMINI_ACK)
    assert events(e) == [("unknown", "unknown", "payload_truncated")]


def test_a_request_trickled_into_the_daemon_is_dropped_and_the_next_hook_is_served(hooks):  # noqa: F811
    e = hooks()
    e.capture(dict(STOP, session_id="first"))
    pid = e.wait_running()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(e.sock)
    start = time.monotonic()
    dropped_after = None
    try:
        s.settimeout(0.5)
        while time.monotonic() - start < daemon_server.READ_S + 10:
            try:
                s.sendall(b" ")  # a byte every half second: each read sees one well within READ_S
                if s.recv(64) == b"":
                    dropped_after = time.monotonic() - start
                    break
            except socket.timeout:
                continue
            except OSError:  # reset by the daemon
                dropped_after = time.monotonic() - start
                break
    finally:
        s.close()
    assert dropped_after is not None and dropped_after < daemon_server.READ_S + 3, dropped_after
    # the daemon stayed up and serves the next hook at once (not after the hook's REPLY_S)
    t = time.monotonic()
    e.capture(dict(STOP, session_id="after"))
    assert time.monotonic() - t < hookclient.REPLY_S
    assert alive(pid) and e.pid == pid
    assert [r[1] for r in events(e)] == ["first", "after"]
    assert "answer=timeout" not in e.hook_log()
