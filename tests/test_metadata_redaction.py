"""A privacy walkthrough found secrets in metadata every capture mode keeps, copied from the
hook payload unscanned into the file, exports, bundles and the sync folder: Cursor's
`cursor_version`, the model, the hook event name, the session id, the working directory (the
project's root) and the branch. The ingestion contract now redacts them like content; ids
derived from them stay what they were (two events of one session share it)."""

import json
import os
import subprocess

from conftest import run_attempt

from attemptdb.ingest import privacy

TOKEN = "ghp_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "0123456789"  # built from parts


def test_no_metadata_field_keeps_a_token_in_any_output(tmp_path, home):
    env = {"ATTEMPTDB_NO_DAEMON": "1"}
    db = str(tmp_path / "m.db")
    repo = tmp_path / f"work-{TOKEN}"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", f"feat/{TOKEN}", str(repo)], check=True)
    assert run_attempt(["init", "--db", db, "--capture-mode", "metadata_only"], env=env).returncode == 0
    payloads = [
        ("cursor", {"hook_event_name": "beforeSubmitPrompt", "conversation_id": "c1", "generation_id": "g1",
                    "cursor_version": f"1.7 {TOKEN}", "model": f"m-{TOKEN}", "workspace_roots": [str(repo)],
                    "prompt": "x"}),
        ("claude-code", {"hook_event_name": "SessionStart", "session_id": f"s-{TOKEN}", "cwd": str(repo),
                         "source": "startup", "model": f"claude-{TOKEN}"}),
        ("claude-code", {"hook_event_name": "UserPromptSubmit", "session_id": f"s-{TOKEN}", "cwd": str(repo),
                         "prompt": "y"}),
        ("claude-code", {"hook_event_name": f"Evt {TOKEN}", "session_id": "s2", "cwd": str(repo)}),
    ]
    for provider, p in payloads:
        r = run_attempt(["capture", provider, "--db", db], input=json.dumps(p).encode(), env=env, cwd=str(repo))
        assert r.returncode == 0
    lines = run_attempt(["events", "--jsonl", "--db", db], env=env).stdout
    assert len(lines.splitlines()) == 4 and TOKEN.encode() not in lines
    assert b"[REDACTED:github_token]" in lines
    events = [json.loads(x) for x in lines.splitlines()]
    assert events[1]["session_id"] == events[2]["session_id"]  # the id was derived before
    sync = tmp_path / "sync"
    sync.mkdir()
    assert run_attempt(["sync", str(sync), "--db", db], env=env).returncode == 0
    for d, _, names in os.walk(sync):
        for n in names:
            assert TOKEN.encode() not in open(os.path.join(d, n), "rb").read(), n
    with open(db, "rb") as f:
        raw = f.read()
    if os.path.exists(db + "-wal"):
        raw += open(db + "-wal", "rb").read()
    assert TOKEN.encode() not in raw
    assert run_attempt(["verify", "--db", db], env=env).returncode == 0


def test_the_contract_stays_idempotent_and_leaves_its_input_alone():
    env = {"capture_mode": "local_semantic", "provider_version": f"v {TOKEN}", "attrs": {},
           "project": {"project_id": "p", "root": f"/r/{TOKEN}", "name": "n", "branch": f"b-{TOKEN}"},
           "agent": {"model": f"m {TOKEN}"}, "paths": [{"original": f"/r/{TOKEN}/a", "logical": f"/r/{TOKEN}/a"}]}
    before = json.dumps(env, sort_keys=True)
    once = privacy.ingest(env)
    assert json.dumps(env, sort_keys=True) == before
    assert TOKEN not in json.dumps(once) and privacy.ingest(once) == once
