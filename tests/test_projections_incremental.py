"""Appending in order costs O(current turn), not O(session): a session of N tool calls appended
one event at a time, per-append times reported near call 100 and near call N (a figure printed
for the record, never a timed assertion). Asserts only what was projected.

Default N is short for CI; ATTEMPTDB_LONG=1 uses the brief's 1,000 calls.
"""

import json
import os
import statistics
import time

import pytest

from attemptdb import adapters
from attemptdb.model import ids
from attemptdb.projections import rebuild
from attemptdb.store.database import Store

N = 1000 if os.environ.get("ATTEMPTDB_LONG") == "1" else 300
DEV = ids.derive("dev_", "perf")
PROJ = ids.project_identity("/work/demo", "github.com/acme/demo", DEV)
T0 = 1_787_904_000_000_000


def events(n_calls: int, calls_per_turn: int):
    """A Claude Code session: prompts every `calls_per_turn` calls; reads, edits and shell calls."""
    out, t = [], T0

    def ev(payload):
        nonlocal t
        t += 500_000
        ctx = adapters.Context(DEV, "local_semantic", PROJ, t, hook_version="perf")
        out.append(adapters.build_event("claude_code", dict(payload, session_id="perf", cwd="/work/demo"), None, ctx))

    ev({"hook_event_name": "SessionStart", "source": "startup"})
    for i in range(n_calls):
        if i % calls_per_turn == 0:
            if i:
                ev({"hook_event_name": "Stop"})
            ev({"hook_event_name": "UserPromptSubmit", "prompt": f"step {i}"})
        kind = ("Read", "Edit", "Bash")[i % 3]
        inp = {"command": "pytest -q"} if kind == "Bash" else {"file_path": f"/work/demo/src/m{i % 40}.py"}
        if kind == "Edit":
            inp.update(old_string="a", new_string="b")
        ev({"hook_event_name": "PreToolUse", "tool_name": kind, "tool_use_id": f"c{i}", "tool_input": inp})
        ev({"hook_event_name": "PostToolUse", "tool_name": kind, "tool_use_id": f"c{i}", "tool_input": inp,
            "tool_response": {"exit_code": 0, "stdout": "1 passed in 0.1s"}})
    ev({"hook_event_name": "Stop"})
    return out


def measure(path, envs):
    st = Store.open(path)
    st.conn.execute("PRAGMA temp_store=MEMORY")  # see the report: the store should set this
    per_call, calls = [], 0
    try:
        for e in envs:
            t = time.perf_counter()
            st.append([e])
            dt = time.perf_counter() - t
            if e["kind"] == "tool_call_started":
                calls += 1
            if e["kind"] in ("tool_call_started", "tool_call_finished"):
                per_call.append((calls, dt))
        n = st.conn.execute("SELECT tool_call_count FROM sessions").fetchone()[0]
        clean = rebuild.reproject(st.conn, write=False).clean
    finally:
        st.close()
    return per_call, n, clean


def window(per_call, at, width=20):
    xs = [dt for c, dt in per_call if at - width < c <= at + width]
    return round(statistics.median(xs) * 1000, 3)


@pytest.mark.slow
@pytest.mark.parametrize("calls_per_turn", [10, N])
def test_append_cost_does_not_grow_with_the_session(tmp_path, calls_per_turn):
    per_call, projected, clean = measure(str(tmp_path / "p.db"), events(N, calls_per_turn))
    assert projected == N and clean
    figures = {"calls": N, "calls_per_turn": calls_per_turn,
               "append_ms_median_near_call_100": window(per_call, 100),
               f"append_ms_median_near_call_{N}": window(per_call, N - 20)}
    print("\nincremental append cost:", json.dumps(figures))
