"""`attempt import claude-transcripts` (spec/transcripts.md): the anchor's transcript fixtures
and goldens, determinism, reconciliation with hook events, privacy, bad input, discovery."""

import json
import os
import shutil

from test_golden_parity import first_difference

from attemptdb import adapters
from attemptdb.cli.main import run
from attemptdb.exchange.importers import claude_transcript as ct
from attemptdb.model import event, ids
from attemptdb.store.database import Store

NIL = "00000000-0000-0000-0000-000000000000"
UNRECOVERED = ("prompt_submitted", "agent_message", "notification", "unknown")
"""Kinds whose original event-id suffix reference/golden-harness.md §5 could not recover: their
ids follow our rule `[transcript, session, entry, <kind…>]` and are compared zeroed."""


def fixture(anchor, name):
    return os.path.join(anchor, "fixtures", "transcripts", "claude_code", name)


def harness_ctx_for():
    """The transcript harness of reference/golden-harness.md §9: device from
    ["transcript-tests"], the §2 project (with its branch), content kept, no hook version."""
    device = ids.derive("dev_", "transcript-tests")
    project = ids.project_identity("/home/dev/example/project", "git@github.com:example/project.git", device)
    project["branch"] = "main"

    def ctx_for(cwd, version):
        return adapters.Context(device, "local_semantic", project, 1787904000000000, provider_version=version,
                                keep_raw=False)
    return ctx_for


def run_fixture(anchor, name):
    with open(fixture(anchor, name + ".jsonl"), "rb") as f:
        evs = list(ct.events(f, harness_ctx_for(), session_hint=name))
    for e in evs:
        event.validate(e)
        assert list(e) == list(event.canonical(e))
        assert "raw" not in e and "hook_version" not in e and "hook_event_name" not in e.get("attrs", {})
        assert e["attrs"]["reconstructed"] is True and e["provider_event_name"].startswith("transcript:")
    return evs


def zeroed(e):
    got = json.loads(json.dumps(e))
    got["device_id"], got["captured_at"] = NIL, 0
    got.pop("adapter_version")
    return got


def test_queued_and_usage_matches_its_golden(anchor):
    """The newest golden: every event, field for field (queued prompts, token usage once per API
    message, interim narration, server tools, api_error, cost-state, the turn end)."""
    got = run_fixture(anchor, "queued_and_usage")
    with open(fixture(anchor, "queued_and_usage.golden.json")) as f:
        golden = json.load(f)
    assert [e["kind"] for e in got] == [g["kind"] for g in golden]
    for e, g in zip(got, golden):
        e, g = zeroed(e), dict(g)
        g.pop("adapter_version", None)
        if e["kind"] in UNRECOVERED:
            e["event_id"] = g["event_id"] = NIL
        assert first_difference(e, g) is None, (e["kind"], first_difference(e, g))


def test_basic_turn_matches_its_older_golden_where_versions_agree(anchor):
    """basic_turn's golden comes from an older importer (reference §9): it dropped interim
    narration, kept only output_tokens, and used the legacy tool-call ids. Everything else must
    agree: kinds, times, turns, tools, paths, outcomes, durations, content and the other attrs."""
    got = [e for e in run_fixture(anchor, "basic_turn")
           if not e.get("attrs", {}).get("provider", {}).get("interim")]
    with open(fixture(anchor, "basic_turn.golden.json")) as f:
        golden = json.load(f)
    assert [e["kind"] for e in got] == [g["kind"] for g in golden]
    for e, g in zip(got, golden):
        for k in ("provider_event_name", "observed_at", "provider_turn_id", "session_id", "agent", "tool",
                  "paths", "outcome", "duration_ms", "content", "project"):
            assert e.get(k) == g.get(k), (e["kind"], k)
        assert {k: v for k, v in e["attrs"].items() if k != "provider"} == \
            {k: v for k, v in g["attrs"].items() if k != "provider"}
        if e["kind"] in ("session_started", "turn_stopped"):
            assert e["event_id"] == g["event_id"]
        if e["kind"] == "agent_message":
            assert e["attrs"]["provider"]["output_tokens"] == g["attrs"]["provider"]["output_tokens"]
            assert e["attrs"]["provider"]["stop_reason"] == g["attrs"]["provider"]["stop_reason"]


def test_a_longer_transcript_reproduces_the_earlier_events(anchor, tmp_path):
    with open(fixture(anchor, "queued_and_usage.jsonl"), "rb") as f:
        lines = f.readlines()
    cut = next(i for i, l in enumerate(lines) if b'"turn_duration"' in l) + 1
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(lines[:cut]))
    ctx_for = harness_ctx_for()
    with open(short, "rb") as f:
        before = [event.line(e) for e in ct.events(f, ctx_for)]
    with open(fixture(anchor, "queued_and_usage.jsonl"), "rb") as f:
        after = [event.line(e) for e in ct.events(f, ctx_for)]
    assert len(before) == 13 and after[:len(before)] == before and len(after) > len(before)


def test_the_other_fixtures_import_and_verify(anchor, db, capsys):
    capsys.readouterr()
    d = os.path.join(anchor, "fixtures", "transcripts", "claude_code")
    assert run(["import", "claude-transcripts", d, "--db", db, "--json", "--finished"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["files"] == 6 and rep["accepted"] == rep["events"] > 50
    assert rep["skipped_lines"] == 2  # mixed_edge_cases: a line that is not JSON, a bare array
    assert run(["import", "claude-transcripts", d, "--db", db, "--json", "--finished"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["accepted"] == 0 and again["duplicates"] == rep["accepted"]
    assert run(["verify", "--db", db]) == 0
    st = Store.open(db, readonly=True)
    kinds = dict(st.conn.execute("SELECT kind, count(*) FROM events GROUP BY kind").fetchall())
    interrupted = st.conn.execute(
        "SELECT count(*) FROM events WHERE kind = 'turn_stopped' AND outcome_status = 'cancelled'").fetchone()[0]
    denied = st.conn.execute("SELECT count(*) FROM tool_calls WHERE outcome_status = 'denied'").fetchone()[0]
    side = st.conn.execute("SELECT count(DISTINCT agent_id) FROM events WHERE parent_agent_id IS NOT NULL").fetchone()[0]
    thinking = st.conn.execute("SELECT count(*) FROM events WHERE content_json LIKE '%CANARY_THINKING%'").fetchone()[0]
    st.close()
    assert kinds["compaction_finished"] == 1 and kinds["unknown"] >= 2  # compact_boundary; future-thing, …
    # the subagent's own file: it starts and, its last answer final, stops; no session start of its own
    assert kinds["subagent_started"] == 1 and kinds["subagent_stopped"] == 1
    assert kinds["session_started"] == 5  # one for each of the five main transcripts
    assert interrupted == 2 and denied == 1  # interrupted_turn: two interruptions, a rejected call
    assert side >= 2  # subagent_sidechain's agent and mixed_edge_cases' inline sidechain
    assert thinking == 0  # reasoning never kept


def _hook_event(db, name, payload_extra, observed_us):
    device = Store.open(db).device_id
    project = ids.project_identity("/srv/hooked/project", "github.com/hooked/project", device)
    ctx = adapters.Context(device, "local_semantic", project, observed_us, hook_version="test")
    payload = {"hook_event_name": name, "session_id": "55555555-5555-4555-8555-555555555555",
               "cwd": "/srv/hooked/project", **payload_extra}
    env = adapters.build_event("claude-code", payload, None, ctx)
    st = Store.open(db)
    st.append([env])
    st.close()
    return env


def test_reconciles_with_what_hooks_captured(anchor, db, capsys):
    """A prompt a hook stored 0.5 s off, the hook's PreToolUse of the same call, and the hook's
    project: nothing is counted twice, and the transcript's events take the hook's project."""
    t0 = 1787565600000000  # the transcript's first prompt
    _hook_event(db, "UserPromptSubmit", {"prompt": "CANARY_PROMPT_Q start the refactor"}, t0 + 500_000)
    pre = _hook_event(db, "PreToolUse", {"tool_name": "Bash", "tool_use_id": "toolu_q001",
                                         "tool_input": {"command": "ls src"}}, t0 + 1_500_000)
    capsys.readouterr()
    assert run(["import", "claude-transcripts", fixture(anchor, "queued_and_usage.jsonl"), "--db", db, "--json", "--finished"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["skipped_captured"] == 1 and rep["duplicates"] == 1  # the prompt; the tool call by id
    st = Store.open(db, readonly=True)
    prompts = st.conn.execute("SELECT count(*) FROM events WHERE kind = 'prompt_submitted' "
                              "AND observed_at < '2026-08-24T10:00:01'").fetchone()[0]
    starts = st.conn.execute("SELECT event_id FROM events WHERE kind = 'tool_call_started'").fetchall()
    projects = {r[0] for r in st.conn.execute("SELECT DISTINCT project_root FROM events")}
    st.close()
    assert prompts == 1
    assert ("ev_" + pre["event_id"],) in starts
    assert projects == {"/srv/hooked/project"}


def test_metadata_only_keeps_no_text(anchor, tmp_path, capsys):
    db = str(tmp_path / "meta.db")
    assert run(["init", "--db", db, "--capture-mode", "metadata_only"]) == 0
    d = os.path.join(anchor, "fixtures", "transcripts", "claude_code")
    assert run(["import", "claude-transcripts", d, "--db", db, "--finished"]) == 0
    st = Store.open(db)
    st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    n = st.count()
    st.close()
    assert n > 50
    with open(db, "rb") as f:
        data = f.read()
    assert b"CANARY" not in data  # no prompt, message, command, output, title or cost note


def test_hostile_input_never_crashes(tmp_path, db, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "binary.jsonl").write_bytes(os.urandom(20000))
    (bad / "weird.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"type": "user", "timestamp": "2026-08-20T09:00:00Z", "message": {"content": [{"type": "tool_result"}]}},
        {"type": "assistant", "timestamp": "not a time", "message": {"id": 5, "content": [{"type": "tool_use"}, 7]}},
        {"type": "user", "timestamp": 1e400, "message": "x", "sessionId": 12},
        {"type": "system", "subtype": "api_error", "error": [1], "timestamp": "2026-08-20T09:00:01Z"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 10}], "stop_reason": "end_turn",
                                           "usage": {"output_tokens": -3, "input_tokens": "many"}}},
        {"type": "\x1b[31m", "timestamp": "2026-08-20T09:00:02Z"},
        {"type": "cost-state", "totalCostUSD": float("1e308"), "timestamp": "2026-08-20T09:00:03Z"},
        {"type": "user", "timestamp": "2026-08-20T09:00:04Z", "cwd": "/home/dev/\udc80x", "promptId": "\ud800",
         "message": {"content": "lone \ud800 surrogate"}},
        {"type": "assistant", "timestamp": "2026-08-20T09:00:05Z", "message": {"id": "m", "stop_reason": "tool_use",
         "content": [{"type": "tool_use", "id": "t\ud800", "name": "Bash\udc00", "input": {"command": "ls \ud800"}}]}},
        {"type": "assistant", "timestamp": "2026-08-20T09:00:06Z"}, {"type": "assistant", "message": []},
        {"type": ["user"], "timestamp": "2026-08-20T09:00:07Z"}, {"type": {"a": 1}}, {"type": "user", "message": {}},
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": [{"type": "image"}]}},
        [], "text", None,
    ]) + "\n")
    capsys.readouterr()
    code = run(["import", "claude-transcripts", str(bad), "--db", db, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rep = json.loads(out)
    # random bytes hold no transcript entry: found in a directory, reported and not imported
    assert rep["wrong_format"] == [{"file": str(bad / "binary.jsonl"), "looks_like": None}]
    assert rep["files"] == 1 and rep["accepted"] >= 3 and rep["skipped_lines"] >= 3
    assert run(["verify", "--db", db]) == 0
    code = run(["import", "claude-transcripts", str(tmp_path / "missing"), "--db", db])
    assert code == 2 and "error[import.unreadable]: no such file or directory" in capsys.readouterr().err
    os.mkfifo(tmp_path / "pipe.jsonl")  # there, but nothing a transcript can be
    code = run(["import", "claude-transcripts", str(tmp_path / "pipe.jsonl"), "--db", db])
    assert code == 2 and "error[import.unreadable]: not a regular file or directory" in capsys.readouterr().err


def test_discovery_subagents_and_dry_run(anchor, tmp_path, monkeypatch, db, capsys):
    config = tmp_path / "claude"
    work = tmp_path / "my repo"
    work.mkdir()
    here = config / "projects" / ct.slug(str(work))
    sub = here / "11111111-1111-4111-8111-111111111111" / "subagents"
    sub.mkdir(parents=True)
    shutil.copy(fixture(anchor, "basic_turn.jsonl"), here / "11111111-1111-4111-8111-111111111111.jsonl")
    shutil.copy(fixture(anchor, "subagent_sidechain.jsonl"), sub / "agent-a1b2c3d4.jsonl")
    (sub / "agent-a1b2c3d4.meta.json").write_text(json.dumps({"agentType": "Explore", "toolUseId": "toolu_0003"}))
    other = config / "projects" / "-elsewhere"
    other.mkdir()
    shutil.copy(fixture(anchor, "interrupted_turn.jsonl"), other / "x.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.chdir(work)
    assert ct.slug("/home/dev/my repo.x") == "-home-dev-my-repo-x"
    capsys.readouterr()
    assert run(["import", "claude-transcripts", "--db", db, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] and dry["files"] == 2 and dry["accepted"] > 0
    assert not os.path.exists(db) or Store.open(db).count() == 0
    assert run(["import", "claude-transcripts", "--db", db, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["accepted"] == dry["accepted"] and rep["files"] == 2
    st = Store.open(db, readonly=True)
    agent = st.conn.execute("SELECT DISTINCT provider_agent_id, agent_type FROM events "
                            "WHERE provider_agent_id IS NOT NULL").fetchall()
    st.close()
    assert agent == [("a1b2c3d4", "Explore")]
    assert run(["import", "claude-transcripts", "--db", db, "--all-projects", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == 3
    monkeypatch.chdir(tmp_path)
    assert run(["import", "claude-transcripts", "--db", db]) == 2
    assert "error[import.nothing]" in capsys.readouterr().err


def test_a_linked_project_directory_is_read_and_a_link_loop_is_not(anchor, tmp_path, monkeypatch):
    """`--all-projects` skipped a project directory that is a symlink (os.walk follows none):
    its transcripts were never imported, and nothing said so. Each real folder is read once."""
    config = tmp_path / "claude"
    projects = config / "projects"
    projects.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(fixture(anchor, "basic_turn.jsonl"), elsewhere / "a.jsonl")
    os.symlink(elsewhere, projects / "-linked-project")
    os.symlink(projects, elsewhere / "loop")  # a link back up: no loop, no file twice
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    found = ct.discover(all_projects=True)
    assert [os.path.basename(p) for p in found] == ["a.jsonl"]


def test_one_unreadable_file_in_a_directory_is_skipped_and_named(anchor, tmp_path, db, capsys):
    """A file of the directory that cannot be read (EIO here) stopped the whole import, 0
    events stored; it is now left out and named, and the others are imported. Alone, or named
    on the command line, it is still the import's error."""
    d = tmp_path / "dir"
    d.mkdir()
    shutil.copy(fixture(anchor, "basic_turn.jsonl"), d / "a.jsonl")
    os.symlink("/proc/self/mem", d / "b.jsonl")  # a regular file whose read fails: EIO
    capsys.readouterr()
    assert run(["import", "claude-transcripts", str(d), "--db", db, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["accepted"] > 0 and rep["unreadable"] == [{"file": str(d / "b.jsonl"), "why": "Input/output error"}]
    os.unlink(d / "a.jsonl")
    assert run(["import", "claude-transcripts", str(d), "--db", db]) == 2
    assert "error[import.unreadable]: cannot read" in capsys.readouterr().err
