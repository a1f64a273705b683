"""A turn costs the same work early and late in a long session (migrations/0007): appending one
more turn is O(that turn), not O(session). Work is counted in SQLite VM instructions (through
the progress handler), which are deterministic, never in seconds."""

import json
import os

from attemptdb import adapters
from attemptdb.exchange.importers import claude_transcript as ct
from attemptdb.model import ids
from attemptdb.store import schema
from attemptdb.store.database import Store

STEP = 100  # the progress handler runs every STEP VM instructions


def turn_entries(r: int) -> list:
    """One Claude Code turn (prompt, a failing then a passing shell call, the answer, its
    duration) as transcript entries, r minutes after the start."""
    t = lambda s: f"2026-08-20T{9 + r // 60:02d}:{r % 60:02d}:{s:02d}.000Z"  # noqa: E731
    base = {"sessionId": "77777777-7777-4777-8777-777777777777", "cwd": "/home/dev/long/project",
            "version": "2.1.190", "isSidechain": False}
    mid = f"msg_{r}"

    def assistant(uuid, s, blocks, stop):
        return {**base, "type": "assistant", "uuid": uuid, "timestamp": t(s),
                "message": {"id": mid + uuid[-1], "role": "assistant", "model": "m", "content": blocks,
                            "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 5}}}

    u = lambda n: f"{r:08x}-0000-4000-8000-00000000000{n}"  # noqa: E731
    return [
        {**base, "type": "user", "uuid": u(1), "timestamp": t(0), "promptId": f"p-{r}",
         "message": {"role": "user", "content": f"run the tests, round {r}"}},
        assistant(u(2), 1, [{"type": "tool_use", "id": f"a{r}", "name": "Bash", "input": {"command": "make test"}}],
                  "tool_use"),
        {**base, "type": "user", "uuid": u(3), "timestamp": t(2), "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"a{r}", "is_error": True, "content": "Exit code 2\nFAILED"}]}},
        assistant(u(4), 3, [{"type": "tool_use", "id": f"b{r}", "name": "Bash", "input": {"command": "make test"}}],
                  "tool_use"),
        {**base, "type": "user", "uuid": u(5), "timestamp": t(4), "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"b{r}", "content": "ok"}]}},
        assistant(u(6), 5, [{"type": "text", "text": "fixed"}], "end_turn"),
        {**base, "type": "system", "subtype": "turn_duration", "uuid": u(7), "timestamp": t(6), "durationMs": 6000},
    ]


def session_events(turns: int) -> list:
    import io
    data = "".join(json.dumps(e) + "\n" for r in range(turns) for e in turn_entries(r)).encode()
    device = ids.derive("dev_", "long-sessions")
    project = ids.project_identity("/home/dev/long/project", None, device)

    def ctx_for(cwd, version):
        return adapters.Context(device, "local_semantic", project, 1787904000000000, provider_version=version)
    return list(ct.events(io.BytesIO(data), ctx_for))


def steps_for(st, envs) -> int:
    n = [0]

    def count():
        n[0] += 1
        return False
    st.conn.set_progress_handler(count, STEP)
    try:
        st.append(envs)
    finally:
        st.conn.set_progress_handler(None)
    return n[0] * STEP


def test_a_turn_costs_the_same_early_and_late(db):
    evs = session_events(401)
    per_turn = len(evs) // 401
    assert per_turn * 401 + 1 == len(evs)  # a session start, then the same events every turn
    st = Store.open(db)
    try:
        st.append(evs[:1 + 40 * per_turn])
        early = steps_for(st, evs[1 + 40 * per_turn:1 + 41 * per_turn])
        st.append(evs[1 + 41 * per_turn:1 + 400 * per_turn])
        late = steps_for(st, evs[1 + 400 * per_turn:])
        turns = st.conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        failed = st.conn.execute("SELECT count(*) FROM attempts WHERE outcome = 'failed'").fetchone()[0]
    finally:
        st.close()
    assert turns == 401 and failed == 0  # every failure was retried and passed in its turn
    assert late < 1.5 * early, (early, late)  # without migration 0007 the 401st turn took 2.5x the 41st


def hook_session_with_an_unknown_event(device_name: str, session: str) -> list:
    """A session start, a hook name nobody knows (an `unknown` event without attrs.source), a
    prompt: three hook envelopes, one second apart."""
    device = ids.derive("dev_", device_name)
    project = ids.project_identity("/home/dev/p", None, device)
    ctx = adapters.Context(device, "local_semantic", project, 1787904000000000, hook_version="t")
    return [adapters.build_event("claude-code", {"hook_event_name": name, "session_id": session,
                                                 "timestamp": f"2026-08-20T09:00:0{i}Z"}, None, ctx)
            for i, name in enumerate(("SessionStart", "SomethingNew", "UserPromptSubmit"))]


def test_an_unknown_hook_event_is_projected_as_a_rebuild_would(db, capsys):
    """A hook name nobody knows becomes an `unknown` event without attrs.source. Before
    migration 0007 the incremental triggers skipped it (a NULL comparison) while a rebuild
    counted it, so `reproject --check` found the session row differing."""
    from attemptdb.cli.main import run
    envs = hook_session_with_an_unknown_event("unknown-events", "s-unknown")
    assert [e["kind"] for e in envs] == ["session_started", "unknown", "prompt_submitted"]
    assert "source" not in envs[1].get("attrs", {})
    st = Store.open(db)
    st.append(envs)
    count = st.conn.execute("SELECT event_count FROM session_facts").fetchone()[0]
    st.close()
    assert count == 3
    capsys.readouterr()
    assert run(["reproject", "--check", "--db", db]) == 0, capsys.readouterr().out


def test_a_file_from_before_0007_gets_its_unknown_events_projected(tmp_path, home, capsys):
    """A file migrated to 0006 by the code of its time, whose triggers skipped an unknown event
    (tests/data/file_at_0006.sql): opening it with this version migrates it, installs the
    current triggers, and migration 0007's after-install part re-derives that session once."""
    import apsw

    from attemptdb.cli.main import run
    db = str(tmp_path / "old.db")
    conn = apsw.Connection(db)
    with open(os.path.join(os.path.dirname(__file__), "data", "file_at_0006.sql"), encoding="utf-8") as f:
        conn.execute(f.read())
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    assert conn.execute("SELECT event_count FROM session_facts").fetchone()[0] == 2  # the old slip
    conn.close()
    st = Store.open(db)
    assert st.user_version() == schema.latest()
    assert st.conn.execute("SELECT event_count FROM session_facts").fetchone()[0] == 3
    st.close()
    capsys.readouterr()
    assert run(["reproject", "--check", "--db", db]) == 0, capsys.readouterr().out
    assert run(["verify", "--db", db]) == 0, capsys.readouterr()


def unit_sessions(n: int, project_root: str) -> list:
    """n short Claude sessions an hour apart in one project, each editing a file of its own: n
    work units that never link."""
    device = ids.derive("dev_", "long-sessions")
    project = ids.project_identity(project_root, None, device)
    envs = []
    for i in range(n):
        t = 1780000000000000 + i * 3_600_000_000
        ctx = adapters.Context(device, "local_semantic", project, t, hook_version="t")
        base = {"session_id": f"unit-{i}", "cwd": project_root}
        for k, p in enumerate((
                {"hook_event_name": "UserPromptSubmit", "prompt": f"task {i}"},
                {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": f"e{i}",
                 "tool_input": {"file_path": f"{project_root}/src/m{i}.py", "old_string": "a", "new_string": "b"}},
                {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": f"e{i}",
                 "tool_input": {"file_path": f"{project_root}/src/m{i}.py", "old_string": "a", "new_string": "b"},
                 "tool_response": {"filePath": f"{project_root}/src/m{i}.py"}},
                {"hook_event_name": "Stop"})):
            ctx = adapters.Context(device, "local_semantic", project, t + k * 1_000_000, hook_version="t")
            envs.append(adapters.build_event("claude-code", dict(base, **p), None, ctx))
    return envs


def test_a_turn_costs_the_same_early_and_late_in_a_project_of_1000_units(tmp_path):
    """Work units are kept per append for the turns it touched: with 1,000 units in the project,
    the 401st turn of a long session still costs what the 41st did, and the 41st costs what it
    costs in a project of its own (VM instructions, the unit refresh included)."""
    evs = session_events(401)
    per_turn = len(evs) // 401

    def measure(path, others):
        st = Store.open(path)
        try:
            for i in range(0, len(others), 500):
                st.append(others[i:i + 500])
            st.append(evs[:1 + 40 * per_turn])
            early = steps_for(st, evs[1 + 40 * per_turn:1 + 41 * per_turn])
            st.append(evs[1 + 41 * per_turn:1 + 400 * per_turn])
            late = steps_for(st, evs[1 + 400 * per_turn:])
            units = st.conn.execute("SELECT count(*) FROM work_units").fetchone()[0]
            long_unit = st.conn.execute("SELECT max(turn_count) FROM work_units").fetchone()[0]
        finally:
            st.close()
        return early, late, units, long_unit

    crowded = measure(str(tmp_path / "crowded.db"), unit_sessions(1000, "/home/dev/long/project"))
    alone = measure(str(tmp_path / "alone.db"), [])
    assert crowded[2:] == (1001, 401) and alone[2:] == (1, 401)  # the session's turns are adjacent: one unit
    early, late = crowded[:2]
    assert late < 1.5 * early, (early, late)
    assert early < 1.5 * alone[0], (early, alone[0])  # nothing per event grows with the project


def test_a_read_upgrades_a_file_no_hook_has_written_since_the_upgrade(tmp_path, home):
    """An upgraded attemptdb reading an older file: the statements it builds name today's tables
    (unit_state), so the read migrates the file first, as it drains the spool (cli/stores.py
    housekeeping), and then answers."""
    import apsw
    from conftest import run_attempt
    db = str(tmp_path / "old.db")
    conn = apsw.Connection(db)
    with open(os.path.join(os.path.dirname(__file__), "data", "file_at_0006.sql"), encoding="utf-8") as f:
        conn.execute(f.read())
    conn.close()
    r = run_attempt(["query", "SHOW WORK UNITS", "--json", "--db", db])
    assert r.returncode == 0, r.stderr
    conn = apsw.Connection(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.latest()
    assert conn.execute("SELECT count(*) FROM unit_state").fetchone()[0] == \
        conn.execute("SELECT count(*) FROM unit_index").fetchone()[0]
    conn.close()
