"""One file edited by n open work units at once is n(n-1)/2 conflicting pairs: `attempt
needs-you` printed every pair (190 rows for 20 sessions), burying the agents waiting on a
permission. The table keeps every wait and the first CONFLICTS_SHOWN conflicts, then counts the
rest; --json keeps every row; rows are numbered, and --evidence labels follow the numbers."""

import json
import os

import pytest
from conftest import run_attempt

from attemptdb.cli.reads import CONFLICTS_SHOWN

SESSIONS = 8  # 28 pairs


@pytest.fixture(scope="module")
def crowded(tmp_path_factory):
    root = tmp_path_factory.mktemp("crowd")
    home = root / "home"
    home.mkdir()
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "d"), "XDG_STATE_HOME": str(home / "s"),
           "XDG_CONFIG_HOME": str(home / "c"), "ATTEMPTDB_NO_DAEMON": "1", "ATTEMPTDB_PATH": str(root / "a.db"),
           "COLUMNS": "100"}
    os.environ.pop("ATTEMPTDB_KEY_DIR", None)

    def hook(payload):
        r = run_attempt(["capture", "claude-code"], input=json.dumps(payload).encode(), env=env, cwd=str(repo))
        assert r.returncode == 0

    for i in range(SESSIONS):
        s = {"session_id": f"s{i}", "cwd": str(repo)}
        hook(dict(s, hook_event_name="UserPromptSubmit", prompt=f"change shared.rs, part {i}"))
        hook(dict(s, hook_event_name="PostToolUse", tool_name="Write", tool_use_id=f"w{i}",
                  tool_input={"file_path": str(repo / "src" / "shared.rs"), "content": "x"},
                  tool_response={"success": True}))
    hook({"session_id": "s0", "cwd": str(repo), "hook_event_name": "PermissionRequest", "tool_name": "Bash",
          "tool_use_id": "p1", "tool_input": {"command": "rm -rf build"}})
    return env


def test_many_pairs_are_counted_not_listed_and_the_wait_stays_first(crowded):
    data = json.loads(run_attempt(["needs-you", "--json"], env=crowded).stdout)["needs_you"]
    pairs = [r for r in data if r["kind"] == "work_conflict"]
    assert len(pairs) == SESSIONS * (SESSIONS - 1) // 2 and data[0]["kind"] == "permission_gate"
    r = run_attempt(["needs-you"], env=crowded)
    assert r.returncode == 0
    out = r.stdout.decode()
    lines = out.splitlines()
    assert lines[0].startswith(f"{len(data)} things need you")
    body = [ln for ln in lines[1:] if ln[:3].strip().isdigit()]
    assert len(body) == 1 + CONFLICTS_SHOWN, out
    assert body[0].split()[:2] == ["1", "permission"] and body[-1].split()[0] == str(1 + CONFLICTS_SHOWN)
    flat = " ".join(out.split())
    assert (f"… and {len(pairs) - CONFLICTS_SHOWN} more conflicting pairs of open work units ({len(pairs)} in all): "
            "`attempt query \"SHOW CONFLICTS\"` lists them") in flat, out


def test_evidence_lines_follow_the_row_numbers(crowded):
    out = run_attempt(["needs-you", "--evidence"], env=crowded).stdout.decode()
    labels = [ln.split(".")[0] for ln in out.splitlines() if ". evidence: " in ln]
    assert labels == [str(n) for n in range(1, 2 + CONFLICTS_SHOWN)], out
