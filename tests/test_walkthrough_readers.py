"""Findings of a user walkthrough, each on the surface the user met it: the note explaining an
empty objective names the real cause (a reader withholding content, or content never stored),
counts in terminal output agree with their noun (1 event, 3 evidence events), and revoking a
device that was never pinned is bad usage (exit 2), not "a problem was found" (exit 1)."""

import json
import os
import re

import pytest
from conftest import ROOT, run_attempt

WITHHELD = "objective text is withheld by this reader (start it with --include-content to show it)"
NOT_STORED = "objective text is unavailable (no prompt content captured; metadata_only mode?)"


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPATH": ROOT, "ATTEMPTDB_NO_DAEMON": "1", "COLUMNS": "120"}


def _captured(tmp, home, mode, *, calls=1, sessions=("s1",)):
    """A history captured the way hooks capture it (`attempt capture claude-code`) into a file
    made with `--capture-mode mode`: per session a prompt, then `calls` failing tool calls."""
    db = str(tmp / f"{mode}.db")
    assert run_attempt(["init", "--db", db, "--capture-mode", mode], env=_env(home)).returncode == 0
    for sid in sessions:
        base = {"session_id": sid, "transcript_path": "/tmp/x.jsonl", "cwd": "/work/shop",
                "permission_mode": "default"}
        payloads = [dict(base, hook_event_name="SessionStart", source="startup", model="m"),
                    dict(base, hook_event_name="UserPromptSubmit", prompt="make the build pass")]
        for i in range(calls):
            call = dict(base, tool_name="Bash", tool_use_id=f"toolu_{sid}_{i}", tool_input={"command": "make"})
            payloads += [dict(call, hook_event_name="PreToolUse"),
                         dict(call, hook_event_name="PostToolUseFailure", error="boom",
                              tool_response={"stdout": "", "stderr": "e"})]
        for p in payloads:
            r = run_attempt(["capture", "claude-code", "--db", db], input=json.dumps(p).encode(), env=_env(home))
            assert r.returncode == 0 and not r.stdout, r.stderr.decode()
    return db


@pytest.fixture(scope="module")
def histories(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("walkthrough-readers")
    home = tmp / "home"
    home.mkdir()
    return home, _captured(tmp, home, "local_semantic"), _captured(tmp, home, "metadata_only")


# --- 3. the objective note says why the objective is empty ---------------------------------------

def _objective_notes(answer):
    return [n for n in answer["notes"] if "objective" in n]


def test_a_reader_that_withholds_content_says_so_not_metadata_only(histories):
    """The walkthrough: `attempt mcp` (no --include-content) over a local_semantic file, whose
    prompts are stored, said "metadata_only mode?". It says the reader withholds the text."""
    pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")
    from attemptdb.readers import mcp_server
    _, semantic, _ = histories
    for call in (("timeline", {}), ("query", {"statement": "SHOW ATTEMPTS"}),
                 ("query", {"statement": "SHOW FAILED ATTEMPTS"})):
        hidden = mcp_server.Reader(semantic).call(*call)
        assert hidden["rows"], call
        assert _objective_notes(hidden) == [WITHHELD], (call, hidden["notes"])
    shown = mcp_server.Reader(semantic, include_content=True).call("query", {"statement": "SHOW ATTEMPTS"})
    assert {r["objective"] for r in shown["rows"]} == {"make the build pass"}
    assert _objective_notes(shown) == []


def test_content_that_was_never_stored_keeps_the_metadata_only_note(histories):
    """A metadata_only file holds no prompt text: behind the wall or not, the note says it was
    not captured (start-up flags would not show it)."""
    pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")
    from attemptdb.readers import mcp_server
    home, _, meta = histories
    for include in (False, True):
        got = mcp_server.Reader(meta, include_content=include).call("timeline", {})
        assert got["rows"] and _objective_notes(got) == [NOT_STORED], (include, got["notes"])
    p = run_attempt(["query", "--db", meta, "SHOW ATTEMPTS"], env=_env(home))
    assert p.returncode == 0 and NOT_STORED in (p.stdout + p.stderr).decode()
    p = run_attempt(["query", "--db", histories[1], "SHOW ATTEMPTS", "--json"], env=_env(home))
    assert p.returncode == 0 and b"objective text is" not in p.stdout + p.stderr  # the CLI reads content


# --- 4. plurals -----------------------------------------------------------------------------------

def _status_rows(db, home):
    """`attempt status`'s provider row and project row."""
    out = run_attempt(["status", "--db", db], env=_env(home)).stdout.decode()
    provider = [ln for ln in out.splitlines() if ln.startswith("  claude_code")]
    project = [ln for ln in out.splitlines() if ln.startswith("  shop")]
    assert len(provider) == 1 and len(project) == 1, out
    return provider[0], project[0]


def test_status_counts_one_event_and_one_session_in_the_singular(tmp_path, home):
    """`attempt status`'s provider and project rows said `1 events   1 sessions`: now
    `1 event  1 session`, and `3 events  2 sessions`, in the same columns."""
    db = str(tmp_path / "one.db")
    assert run_attempt(["init", "--db", db], env=_env(home)).returncode == 0
    start = {"session_id": "s1", "transcript_path": "/tmp/x.jsonl", "cwd": "/work/shop",
             "hook_event_name": "SessionStart", "source": "startup"}
    assert run_attempt(["capture", "claude-code", "--db", db], input=json.dumps(start).encode(),
                       env=_env(home)).returncode == 0
    one = _status_rows(db, home)
    for ln in one:
        assert re.search(r" 1 event +1 session( |$)", ln) and "events" not in ln and "sessions" not in ln, ln
    for sid in ("s1", "s2"):
        payload = dict(start, session_id=sid, hook_event_name="SessionEnd", reason="exit")
        assert run_attempt(["capture", "claude-code", "--db", db], input=json.dumps(payload).encode(),
                           env=_env(home)).returncode == 0
    many = _status_rows(db, home)
    for ln in many:
        assert re.search(r" 3 events +2 sessions( |$)", ln), ln
    # right-aligned as before: each count phrase ends in the same column, singular or plural
    assert len(one[1]) == len(many[1]) and one[0].index(" last ") == many[0].index(" last ")
    assert one[1].index("1 session") + len("1 session") == many[1].index("2 sessions") + len("2 sessions")


def test_why_counts_its_evidence_in_the_singular_and_the_plural():
    from attemptdb.query.why import _evidence_note
    assert _evidence_note("att_x", ["ev_1"], ["ev_1"]) == \
        "1 evidence event for attempt att_x; SHOW EVIDENCE FOR att_x lists them"
    assert _evidence_note("att_x", ["ev_1", "ev_2", "ev_3"], ["ev_1", "ev_2", "ev_3"]).startswith(
        "3 evidence events for attempt att_x; ")
    assert _evidence_note("att_x", [], ["ev_c"]).startswith("1 evidence event for attempt att_x: its own 0")
    assert "(s)" not in _evidence_note("att_x", ["ev_1"], ["ev_1", "ev_c"])


# --- 5. revoking a device that was never pinned ---------------------------------------------------

def test_revoking_a_device_that_was_never_pinned_is_bad_usage(tmp_path, home):
    """README: exit 1 is "a problem was found", 2 bad usage. A DEVICE with no pinned key is an
    argument the command cannot act on: exit 2, a coded usage error, nothing written."""
    db = str(tmp_path / "k.db")
    assert run_attempt(["init", "--db", db], env=_env(home)).returncode == 0
    before = os.path.getsize(db), run_attempt(["keys", "list", "--db", db, "--json"], env=_env(home)).stdout
    dev = "dev_01234567-89ab-7cde-8f01-23456789abcd"
    for extra in ([], ["--json"]):
        p = run_attempt(["keys", "revoke", dev, "--db", db, *extra], env=_env(home))
        err = p.stderr.decode()
        assert p.returncode == 2, (p.returncode, err)
        assert err.startswith(f"error[usage.bad_value]: DEVICE {dev}: no key is pinned for it"), err
        assert "nothing to revoke" in err and not p.stdout
    assert (os.path.getsize(db), run_attempt(["keys", "list", "--db", db, "--json"], env=_env(home)).stdout) == before
