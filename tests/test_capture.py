"""`attempt capture` end to end (issue 3 §4): real `attempt` subprocesses fed on stdin, real
database files, nothing mocked.

Proves: a tool call captured twice (a hook registered twice, one after the other or at the
same moment) is one event while two identical prompts are two; 64 simultaneous captures on one
fresh file all land, chained and numbered 1..64, and a capture waits out a short lock; the hook
path imports none of the heavy or slow modules (checked in an interpreter started with -S, so
no site hook such as the editable-install finder imports `re` for us); `--dry-run` prints one
envelope, stores nothing and honours every context flag; a malformed or out-of-range flag never
costs the event; an internal failure still leaves a content-free gap event; the hook log stays
one line per problem; the committed event is left in the WAL (no close-time checkpoint).

The helpers at the top are shared with tests/test_capture_*.py and tests/test_spool.py.
"""

import json
import os
import subprocess
import sys

import apsw
import pytest
from conftest import ROOT, attempt_cmd, run_attempt

from attemptdb.model import payload

# --- helpers (shared with the other capture test modules) ----------------------------------

PROMPT = {"session_id": "sess-capture-1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
          "prompt": "run the tests again"}


def tool_payload(tool_use_id="toolu_capture_1", event="PostToolUse", session="sess-capture-1"):
    """A Claude Code tool-call payload (Bash), distinct per tool_use_id."""
    p = {"session_id": session, "cwd": "/tmp", "hook_event_name": event, "tool_name": "Bash",
         "tool_use_id": tool_use_id, "tool_input": {"command": "pytest -q", "description": "run tests"}}
    if event == "PostToolUse":
        p["tool_response"] = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    return p


def as_bytes(payload) -> bytes:
    return payload if isinstance(payload, bytes) else json.dumps(payload).encode()


def capture(db, provider, payload=b"", *flags, env=None, timeout=60):
    """Run `attempt capture PROVIDER --db DB FLAGS…` with `payload` (bytes or JSON) on stdin."""
    args = ["capture"] + ([provider] if provider is not None else []) + ["--db", str(db)] + list(flags)
    return run_attempt(args, input=as_bytes(payload), env=env, timeout=timeout)


def assert_silent(proc, stdout=b""):
    """The hook contract: exit 0, exactly `stdout` on stdout, nothing at all on stderr."""
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-2000:]
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")[-2000:]
    assert proc.stdout == stdout


def stored(db) -> list:
    """Every row of `events` (oldest first) as a dict, attrs/content/raw parsed; read with a
    plain read-only SQLite connection, independent of the code under test."""
    if not os.path.isfile(db):
        return []
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cur = conn.cursor()
        cur.execute("SELECT * FROM events ORDER BY seq")
        try:
            names = [d[0] for d in cur.getdescription()]
        except apsw.ExecutionCompleteError:  # no rows
            return []
        rows = [dict(zip(names, r)) for r in cur]
    finally:
        conn.close()
    for r in rows:
        r["raw_json"] = payload.expand(r["raw_json"], r["content_json"], [r[f] for f in payload.FIELDS])
        for col in ("attrs_json", "content_json", "raw_json"):
            r[col[:-5]] = None if r[col] is None else json.loads(r[col])
    return rows


def verify_ok(db, events: int):
    """`attempt verify` (the CLI) says ok for exactly `events` events."""
    p = run_attempt(["verify", "--db", str(db)])
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.startswith(f"ok: {events} {'event' if events == 1 else 'events'},".encode()), p.stdout


def spool_files(db, home=None) -> list:
    """Spooled event files for `db`: beside it, and (given the test home) the fallback."""
    out = []
    dirs = [str(db) + ".spool"]
    if home is not None:
        dirs.append(os.path.join(str(home), ".local", "state", "attemptdb", "spool"))
    for d in dirs:
        for base, _dirs, files in os.walk(d):
            if os.path.basename(base) == "quarantine":
                continue
            out.extend(os.path.join(base, f) for f in files if f.endswith(".event"))
    return sorted(out)


# --- a hook registered twice ----------------------------------------------------------------

def test_the_same_tool_call_captured_twice_is_one_event(db):
    payload = tool_payload()
    for provider in ("claude-code", "claude_code"):  # user and project scope, two spellings
        assert_silent(capture(db, provider, payload))
    rows = stored(db)
    assert len(rows) == 1
    assert rows[0]["kind"] == "tool_call_finished" and rows[0]["tool_call_id"] == "toolu_capture_1"
    # the start of the same call is another fact, not a duplicate of the completion
    assert_silent(capture(db, "claude-code", tool_payload(event="PreToolUse")))
    assert [r["kind"] for r in stored(db)] == ["tool_call_finished", "tool_call_started"]
    # the twins may also arrive at the same moment
    twin = as_bytes(tool_payload("toolu_twin"))
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    procs = [subprocess.Popen(attempt_cmd() + ["capture", "claude-code", "--db", db], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(4)]
    for p in procs:  # all four are running before any of them gets its payload
        p.stdin.write(twin)
        p.stdin.close()
    assert [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs] == [(0, b"", b"")] * 4
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [r["tool_call_id"] for r in stored(db)] == ["toolu_capture_1", "toolu_capture_1", "toolu_twin"]
    verify_ok(db, 3)


def test_two_prompts_with_identical_text_are_two_events(db):
    for _ in range(2):
        assert_silent(capture(db, "claude-code", PROMPT))
    rows = stored(db)
    assert [r["kind"] for r in rows] == ["prompt_submitted", "prompt_submitted"]
    assert rows[0]["event_id"] != rows[1]["event_id"]
    assert rows[0]["session_id"] == rows[1]["session_id"]
    verify_ok(db, 2)


# --- concurrency ----------------------------------------------------------------------------

@pytest.mark.slow
def test_64_simultaneous_captures_on_one_fresh_file(db, home):
    """All exit 0 silently and all 64 land exactly once, numbered 1..64 in one valid chain.
    On an idle machine every capture stores directly; on a starved one (2 cores shared with
    other work) a capture whose lock wait passes its busy timeout spools instead, and the next
    read ingests it — which this test then requires. That the wait itself works is proven
    deterministically by test_a_capture_waits_out_a_short_lock."""
    n = 64
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    cmd = attempt_cmd() + ["capture", "claude-code", "--db", db]
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env) for _ in range(n)]
    # every process is running (blocked on stdin) before any payload arrives
    for i, p in enumerate(procs):
        p.stdin.write(as_bytes(tool_payload(f"toolu_conc_{i:02d}")))
        p.stdin.close()
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [r for r in results if r != (0, b"", b"")] == []
    direct = stored(db)
    spooled = spool_files(db, home)
    assert len(direct) + len(spooled) == n, (len(direct), len(spooled))
    print(f"64 captures: {len(direct)} stored directly, {len(spooled)} spooled")
    if spooled:
        p = run_attempt(["events", "--db", db, "--json"])
        assert p.returncode == 0, p.stderr
        assert spool_files(db, home) == []
    rows = stored(db)
    assert len(rows) == n
    assert rows[:len(direct)] == direct
    assert sorted(r["tool_call_id"] for r in rows) == [f"toolu_conc_{i:02d}" for i in range(n)]
    assert len({r["device_id"] for r in rows}) == 1
    assert sorted(r["source_seq"] for r in rows) == list(range(1, n + 1))
    assert [r["seq"] for r in rows] == list(range(1, n + 1))
    verify_ok(db, n)


LOCK_HOLDER = r"""
import sys, time, apsw
c = apsw.Connection(sys.argv[1])
c.execute("BEGIN IMMEDIATE")
c.execute("INSERT INTO meta(key, value) VALUES ('x_lock_test', '1')")
print("locked", flush=True)
if sys.argv[2] == "stdin":
    sys.stdin.readline()
else:
    time.sleep(float(sys.argv[2]))
print(time.time_ns() // 1000, flush=True)  # µs: the lock is released from here on
c.execute("ROLLBACK")
"""


def hold_write_lock(db, how):
    """A process holding a write transaction on `db` (until `how` seconds pass, or until a
    line arrives on its stdin when `how` is "stdin"); returns once the lock is held."""
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, db, how], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_capture_waits_out_a_short_lock(db, home):
    """A write transaction held for half the capture's busy timeout: the capture, started
    while the lock is held, waits for it and stores the event itself (no spool)."""
    from attemptdb.capture.hook import CAPTURE_BUSY_S
    from attemptdb.model import clock
    assert_silent(capture(db, "claude-code", PROMPT))
    holder = hold_write_lock(db, str(CAPTURE_BUSY_S / 2))
    try:
        assert_silent(capture(db, "claude-code", tool_payload()))
        released = int(holder.stdout.readline())
        assert holder.wait(timeout=30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()
    assert spool_files(db, home) == []
    rows = stored(db)
    assert [r["kind"] for r in rows] == ["prompt_submitted", "tool_call_finished"]
    # it started while the lock was held and committed after it was released
    assert clock.from_iso(rows[1]["captured_at"]) < released <= clock.from_iso(rows[1]["ingested_at"])
    verify_ok(db, 2)


# --- the hook path stays lean ---------------------------------------------------------------

HEAVY = ("click", "jsonschema", "cryptography", "parsimonious", "tabulate", "json", "re", "uuid",
         "hashlib", "mcp", "datasette", "uvicorn", "starlette", "pydantic", "anyio", "jinja2")

DRIVER = r"""
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]   # the project, then site-packages (for apsw)
from attemptdb.capture import hook as capture
capture.main(sys.argv[4:])
with open(sys.argv[3], "w") as f:
    f.write("\n".join(sorted(sys.modules)))
"""


def _site_packages() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(apsw.__file__)))


def _heavy(modules) -> list:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


CASES = {
    "claude_post_tool_use": ("claude-code", tool_payload()),
    "codex_prompt": ("codex", PROMPT),
    "cursor_shell": ("cursor", {"conversation_id": "c1", "hook_event_name": "afterShellExecution",
                                "command": "cargo test", "output": "ok", "workspace_roots": ["/tmp"]}),
    "gemini_before_tool": ("gemini-cli", {"session_id": "g1", "hook_event_name": "BeforeTool", "cwd": "/tmp",
                                          "tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    "not_json": ("claude-code", b'{"hook_event_name": "PostToolUse", not json'),
    "binary_garbage": ("claude-code", b"\xff\xfe\x00\x9c garbage \x00\x01"),
    "unknown_provider": ("frobnicator", PROMPT),
}


@pytest.mark.parametrize("case", sorted(CASES) + ["spooled"])
def test_capture_imports_nothing_heavy(case, tmp_path, db):
    provider, payload = CASES.get(case, ("claude-code", tool_payload()))
    if case == "spooled":
        os.mkdir(db)  # the database path is a directory: the event must go to the spool
    out = tmp_path / "modules.txt"
    p = subprocess.run([sys.executable, "-S", "-c", DRIVER, ROOT, _site_packages(), str(out), provider, "--db", db], input=as_bytes(payload), capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stderr == b"", p.stderr.decode(errors="replace")
    modules = out.read_text().split("\n")
    assert "attemptdb.capture.hook" in modules and "apsw" in modules and "site" not in modules
    assert _heavy(modules) == []
    # the capture really happened (stored or spooled), so every import it needed was made
    if case == "spooled":
        assert len(spool_files(db)) == 1
    else:
        assert len(stored(db)) == 1


def test_the_installed_launcher_imports_nothing_heavy(db):
    """bin/attempt → attemptdb.launcher → capture, as a hook runs it; `-X importtime` lists
    every module the process imported, `-S` keeps site hooks out of the picture."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, _site_packages()]))
    p = subprocess.run([sys.executable, "-S", "-X", "importtime", os.path.join(ROOT, "bin", "attempt"),
                        "capture", "claude-code", "--db", db], input=as_bytes(tool_payload()),
                       capture_output=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == b""
    lines = [ln for ln in p.stderr.decode().splitlines() if ln.startswith("import time:")]
    assert b"Traceback" not in p.stderr and len(lines) > 10
    modules = [ln.split("|")[-1].strip() for ln in lines[1:]]
    assert "attemptdb.capture.hook" in modules and "attemptdb.store.database" in modules
    assert "attemptdb.cli" not in modules and "attemptdb.cli.main" not in modules
    assert _heavy(modules) == []
    assert len(stored(db)) == 1


# --- --dry-run and the context flags --------------------------------------------------------

DEVICE = "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0001"


def _dry(db, provider, payload, *flags):
    p = capture(db, provider, payload, "--dry-run", *flags)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    assert p.stdout.endswith(b"\n") and p.stdout.count(b"\n") == 1
    env = json.loads(p.stdout)
    assert isinstance(env, dict)
    return env


def test_dry_run_prints_one_envelope_and_stores_nothing(db):
    env = _dry(db, "claude-code", tool_payload())
    assert env["kind"] == "tool_call_finished" and env["provider"] == "claude_code"
    assert env["tool"]["call_id"] == "toolu_capture_1"
    assert not os.path.exists(db), "a dry run created the database"
    assert spool_files(db) == []
    # on an existing database: nothing added, and the envelope uses the database's identity
    assert_silent(capture(db, "claude-code", PROMPT))
    before = stored(db)
    env = _dry(db, "claude-code", tool_payload("toolu_dry_2"))
    assert stored(db) == before
    assert env["device_id"] == before[0]["device_id"][len("dev_"):]
    # Gemini CLI: the envelope, not the ack
    env = _dry(db, "gemini-cli", {"session_id": "g1", "hook_event_name": "BeforeAgent", "prompt": "x"})
    assert env["provider"] == "gemini_cli" and "decision" not in env


def test_dry_run_honours_the_context_flags(db):
    flags = ["--capture-mode", "metadata_only", "--project-root", "/work/acme/shop",
             "--repo-remote", "git@github.com:acme/shop.git", "--captured-at", "1787904000000000",
             "--device-id", DEVICE, "--hook-version", "hook-9"]
    env = _dry(db, "claude-code", tool_payload(), *flags)
    assert env["capture_mode"] == "metadata_only" and "content" not in env and "raw" not in env
    assert env["project"]["root"] == "/work/acme/shop"
    assert env["project"]["repo_remote"] == "github.com/acme/shop"
    assert env["project"]["name"] == "acme/shop"
    assert env["captured_at"] == 1787904000000000
    assert env["device_id"] == DEVICE
    assert env["hook_version"] == "hook-9"
    # the `--flag=value` spelling is the same thing
    same = _dry(db, "claude-code", tool_payload(), *[f"{k}={v}" for k, v in zip(flags[::2], flags[1::2])])
    assert {k: v for k, v in same.items() if k != "event_id"} == {k: v for k, v in env.items() if k != "event_id"}
    # content modes keep content; the project id depends on root and remote, not on the flag spelling
    full = _dry(db, "claude-code", tool_payload(), "--capture-mode", "local-semantic", "--project-root", "/work/acme/shop",
                "--repo-remote", "git@github.com:acme/shop.git", "--device-id", DEVICE)
    assert full["capture_mode"] == "local_semantic" and full["raw"]["tool_input"]["command"] == "pytest -q"
    assert full["project"]["project_id"] == env["project"]["project_id"]
    # an invalid capture mode fails closed; --event names a payload without hook_event_name
    payload = {k: v for k, v in PROMPT.items() if k != "hook_event_name"}
    ev = _dry(db, "claude-code", payload, "--event", "UserPromptSubmit", "--capture-mode", "bogus")
    assert ev["kind"] == "prompt_submitted" and ev["capture_mode"] == "metadata_only"
    assert "capture_gap" not in ev["attrs"]
    assert not os.path.exists(db)


def test_context_flags_reach_the_stored_event(db):
    assert_silent(capture(db, "claude-code", tool_payload(), "--captured-at", "1787904000000000",
                          "--hook-version", "hook-9", "--project-root", "/work/acme/shop",
                          "--repo-remote", "https://github.com/acme/shop", "--capture-mode", "metadata_only"))
    (row,) = stored(db)
    assert row["captured_at"] == "2026-08-28T08:00:00.000000Z"
    assert row["hook_version"] == "hook-9"
    assert row["project_root"] == "/work/acme/shop" and row["repo_remote"] == "github.com/acme/shop"
    assert row["capture_mode"] == "metadata_only" and row["content"] is None and row["raw"] is None
    # a malformed --device-id or --captured-at never costs the event
    assert_silent(capture(db, "claude-code", tool_payload("toolu_2"), "--device-id", "not-a-uuid",
                          "--captured-at", "soon"))
    rows = stored(db)
    assert len(rows) == 2 and rows[1]["device_id"] == rows[0]["device_id"]
    verify_ok(db, 2)


def test_capture_help_goes_to_stdout_and_stores_nothing(db):
    p = run_attempt(["capture", "--help"])
    assert p.returncode == 0 and p.stdout.startswith(b"Usage: attempt capture PROVIDER")
    assert not os.path.exists(db)


def test_a_capture_leaves_its_commit_in_the_wal(db):
    """The launcher leaves with os._exit so that no close-time checkpoint (an fsync) runs on
    the hook path: the committed event stays in the WAL for the next writer to fold in."""
    p = run_attempt(["init", "--db", db])
    assert p.returncode == 0 and not os.path.exists(db + "-wal")  # a clean close folds the WAL
    assert_silent(capture(db, "claude-code", PROMPT))
    assert os.path.getsize(db + "-wal") > 0
    assert len(stored(db)) == 1


@pytest.mark.parametrize("value", ["99999999999999999999999", "253402300800000000", "-99999999999999999999"])
def test_an_out_of_range_captured_at_never_costs_the_event(db, home, value):
    """A --captured-at the store cannot hold (outside years 0001-9999) is replaced by the
    capture time, like a malformed one: the event is stored, not spooled nor quarantined."""
    assert_silent(capture(db, "claude-code", PROMPT))
    assert_silent(capture(db, "claude-code", tool_payload(), "--captured-at", value))
    rows = stored(db)
    assert [r["kind"] for r in rows] == ["prompt_submitted", "tool_call_finished"]
    assert rows[1]["captured_at"][:4] == rows[0]["captured_at"][:4]
    assert spool_files(db, home) == []
    verify_ok(db, 2)


FAULT_DRIVER = r"""
import sys
sys.path[:0] = [sys.argv[1]]
from attemptdb.capture import hook as capture
from attemptdb.ingest import privacy

def broken(*a, **k):  # a fault injected after the payload was read, before an event exists
    raise RuntimeError("CANARY_FAULT_3b1d secret detail")

privacy.ingest = broken
sys.exit(capture.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("provider, ack", [("claude-code", b""), ("gemini-cli", b'{"decision":"allow"}\n')])
def test_an_internal_failure_still_records_a_content_free_gap_event(db, home, provider, ack):
    data = as_bytes({"session_id": "s-fault", "hook_event_name": "UserPromptSubmit", "prompt": "CANARY_PROMPT_fault"})
    p = subprocess.run([sys.executable, "-c", FAULT_DRIVER, ROOT, provider, "--db", db], input=data,
                       capture_output=True, timeout=60)
    assert_silent(p, stdout=ack)
    (row,) = stored(db)
    assert row["kind"] == "unknown" and row["attrs"]["capture_gap"] == "adapter_error"
    assert row["attrs"]["x_attemptdb_payload_bytes"] == len(data)
    assert row["content"] is None and row["raw"] is None and row["capture_mode"] == "metadata_only"
    log = (home / ".local" / "state" / "attemptdb" / "hook.log").read_text()
    assert "err=internal:RuntimeError(" in log
    assert "CANARY" not in log and "secret detail" not in log
    verify_ok(db, 1)


def test_the_hook_log_is_one_line_per_problem_whatever_the_provider_name(db, home):
    os.mkdir(db)  # every capture spools and logs why
    assert_silent(capture(db, "evil\nprovider=claude-code err=forged", PROMPT))
    lines = (home / ".local" / "state" / "attemptdb" / "hook.log").read_text().splitlines()
    assert len(lines) == 1 and "spooled reason=store.not_a_file(" in lines[0]
    assert "\n" not in lines[0] and lines[0].count("provider=") == 1


def test_a_hook_flag_can_only_restrict_the_capture_mode(tmp_path, home):
    """A repository's own hook config may add `--capture-mode`; it may lower what the user
    chose, never raise it (and never decide the mode a new database is created in)."""
    db = str(tmp_path / "m.db")
    assert run_attempt(["init", "--db", db, "--capture-mode", "metadata_only"]).returncode == 0
    payload = b'{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":"my private prompt"}'
    r = run_attempt(["capture", "claude-code", "--db", db, "--capture-mode", "full_sync"], input=payload)
    assert r.returncode == 0 and r.stdout == b""
    rows = stored(db)
    assert len(rows) == 1 and rows[0]["content_json"] is None and rows[0]["capture_mode"] == "metadata_only"
    fresh = str(tmp_path / "fresh.db")
    assert run_attempt(["capture", "claude-code", "--db", fresh, "--capture-mode", "full_sync"], input=payload).returncode == 0
    from attemptdb.store.database import Store
    assert Store.open(fresh, readonly=True).capture_mode == "local_semantic"
    local = str(tmp_path / "l.db")
    assert run_attempt(["init", "--db", local]).returncode == 0
    run_attempt(["capture", "claude-code", "--db", local, "--capture-mode", "metadata"], input=payload)
    assert stored(local)[0]["content_json"] is None  # lowering works


def test_gemini_ack_whatever_the_argument_order(tmp_path, home):
    db = str(tmp_path / "g.db")
    r = run_attempt(["capture", "--db", db, "gemini-cli"], input=b'{"hook_event_name":"BeforeAgent","session_id":"g"}')
    assert r.returncode == 0 and json.loads(r.stdout) == {"decision": "allow"}
