"""Adapter behaviour: the rules of reference/capture.md §2 one by one, the payload gaps, the
common contract, event ids, the context, and the lean hook path."""

import json
import os
import subprocess
import sys

import pytest

from attemptdb import adapters
from attemptdb.adapters import commands, failures, paths, registry, signals, tools
from attemptdb.errors import AttemptError
from attemptdb.model import event, ids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE = ids.derive("dev_", "unit-tests")
PROJECT = ids.project_identity("/home/dev/work/app", "git@github.com:acme/app.git", DEVICE)
NOW = 1796025600000000


def ctx(mode="local_semantic", **kw):
    return adapters.Context(DEVICE, mode, PROJECT, NOW, **kw)


def build(provider, payload, mode="local_semantic", **kw):
    env = adapters.build_event(provider, payload, None, ctx(mode), **kw)
    event.validate(env)
    return env


def claude(name, **fields):
    return {"session_id": "s-1", "cwd": "/home/dev/work/app", "hook_event_name": name, **fields}


# --- tool categories ---------------------------------------------------------------------

@pytest.mark.parametrize("name,category", [
    ("Bash", "shell"), (" run_shell_command ", "shell"), ("exec_command", "shell"),
    ("Read", "file_read"), ("read_many_files", "file_read"), ("Write", "file_write"),
    ("create_file", "file_write"), ("Edit", "file_edit"), ("MultiEdit", "file_edit"),
    ("apply_patch", "file_edit"), ("Delete", "file_edit"), ("NotebookEdit", "notebook"),
    ("Glob", "search"), ("codebase_search", "search"), ("WebFetch", "web"),
    ("google_web_search", "web"), ("Task", "subagent"), ("spawn_agent", "subagent"),
    ("TodoWrite", "plan"), ("update_plan", "plan"), ("mcp__github__create_issue", "mcp"),
    ("MCP:github:create_issue", "mcp"), ("mcp_github_create_issue", "mcp"),
    ("write_stdin", "other"), ("SomethingNew", "other"), (None, "other"), (42, "other"),
])
def test_tool_category(name, category):
    assert tools.category(name) == category
    assert category in event.TOOL_CATEGORIES


# --- shell commands ----------------------------------------------------------------------

@pytest.mark.parametrize("command,category,git_sub", [
    ("git commit -m 'x'", "git", "commit"),
    ("git -C /repo -c core.pager=cat log --oneline", "git", "log"),
    ("git add . && git commit -m wip && git push", "git", "commit"),
    ("git status; git push", "git", "push"),
    ("npm test", "test", None), ("npm run test:unit", "test", None), ("yarn", "install", None),
    ("pnpm run build", "build", None), ("npm run lint:fix", "run", None), ("npm run dev", "run", None),
    ("npm ci", "install", None), ("npm lint", "other", None), ("npx jest --watch", "test", None),
    ("cargo nextest run", "test", None), ("cargo clippy", "build", None), ("cargo run", "run", None),
    ("cargo add serde", "install", None), ("cargo fmt", "other", None), ("go vet ./...", "build", None),
    ("go get x", "install", None), ("dotnet test", "test", None), ("docker compose up", "run", None),
    ("docker push img", "network", None), ("make -j4", "build", None), ("pytest -q", "test", None),
    ("pip install -r requirements.txt", "install", None), ("brew list", "other", None),
    ("python manage.py runserver", "run", None), ("curl -s https://x", "network", None),
    ("ls -la | grep x", "fs", None), ("./scripts/deploy", "run", None), ("tools/gen.py", "run", None),
    ("FOO=1 BAR=2 sudo -E nice npm test", "test", None), ("bash -lc 'cargo test && git push'", "git", "push"),
    ("sh -c \"make\"", "build", None), ("bash", "run", None), ("bash deploy.sh", "run", None),
    ("rm -rf node_modules && npm install", "install", None), ("npm test 2>&1 | tail -5", "test", None),
    ("echo 'a && git push'", "fs", None), ("some-tool --flag", "other", None), ("", "other", None),
    ("   ", "other", None),
])
def test_command_category(command, category, git_sub):
    got = commands.classify(command)
    assert got[0] == category and got[2] == git_sub
    assert got[0] in commands.CATEGORIES


@pytest.mark.parametrize("command,subcategory", [
    ("git push origin main", "git.push"), ("git fetch", "git.sync"), ("git rebase -i HEAD~3", "git.rewrite"),
    ("git stash", "git.branch"), ("git init", "git.other"), ("gh pr create --fill", "github.pr_write"),
    ("gh issue list", "github.other"), ("npm run lint", "pkg.lint"), ("npm start", "pkg.run"),
    ("npm run build:prod", "pkg.build"), ("yarn whatever", "pkg.other"), ("go test ./...", "test.run"),
    ("ruff check .", "lint.run"), ("kubectl get pods", "infra.k8s"), ("terraform plan", "infra.iac"),
    ("cat README.md", "fs.read"), ("rg TODO", "fs.search"), ("mkdir -p build", "fs.create"),
    ("psql -c 'select 1'", "db.client"), ("vercel deploy", "deploy"), ("make", "build.sys"),
    ("cd src", "shell.nav"), ("brew install jq", "pkg.system"), ("ssh host", "net.transfer"),
    ("vim x", "editor"), ("expo start", "mobile.expo"), ("fastlane beta", "mobile.build"),
    ("cd src && npm test", "pkg.test"), ("echo hi | curl -d @- https://x", "shell.builtin"),
    ("git add . && git commit -m x && vercel deploy", "git.commit"),
    ("ls && docker build .", "infra.docker"), ("FOO=1", "unknown"), ("", "unknown"),
])
def test_command_subcategory(command, subcategory):
    assert commands.classify(command)[1] == subcategory


def test_segments_respect_quotes_escapes_and_redirections():
    assert commands.segments("git commit -m \"a && b; c\" && npm test 2>&1 | tail") == [
        ["git", "commit", "-m", "a && b; c"], ["npm", "test", "2>&1"], ["tail"]]
    assert commands.segments("echo a\\ b '' \"q\\\"x\"") == [["echo", "a b", "", 'q"x']]
    assert commands.segments("echo 'unterminated && rm") == [["echo", "unterminated && rm"]]


def test_command_text_forms():
    assert commands.command_text({"command": "ls"}) == "ls"
    assert commands.command_text({"command": ["bash", "-lc", "ls -a"]}) == "bash -lc ls -a"
    assert commands.command_text({"cmd": "make"}) == "make"
    assert commands.command_text({"command": ["a", 1]}) is None
    assert commands.command_text({"command": []}) is None
    assert commands.command_text("ls") is None


def test_git_subcommand_that_is_not_a_git_word_is_not_recorded():
    env = build("claude", claude("PreToolUse", tool_name="Bash", tool_input={"command": "git CANARY_x9"}))
    assert env["attrs"]["command_category"] == "git"
    assert "git_subcommand" not in env["attrs"]


# --- failure text ------------------------------------------------------------------------

@pytest.mark.parametrize("text,cls,code", [
    ("String to replace not found in file", "string_mismatch", None),
    ("old_string must be unique", "string_mismatch", None),
    ("ENOENT: no such file or directory", "file_not_found", None),
    ("Path does not exist", "file_not_found", None),
    ("EACCES: permission denied", "permission_denied", None), ("EPERM", "permission_denied", None),
    ("Command timed out after 120s", "timeout", None), ("request timeout", "timeout", None),
    ("Interrupted by user", "interrupted", None), ("Operation canceled", "interrupted", None),
    ("Command failed with exit code 2", "nonzero_exit", 2), ("exited with code 137", "nonzero_exit", 137),
    ("process exited with -1", "nonzero_exit", -1), ("returned exit code 3", "nonzero_exit", 3),
    ("exit status 0, then exit status 4", "nonzero_exit", 4), ("exit code 0", "unknown", None),
    ("non-zero result", "nonzero_exit", None), ("boom", "unknown", None), ("", "unknown", None),
    ("Permission denied (exit code 126)", "permission_denied", 126),
])
def test_classify_text(text, cls, code):
    assert failures.classify_text(text) == (cls, code)


def test_tokens_and_snake_case():
    assert failures.is_token("rate_limit") and not failures.is_token("two words")
    assert not failures.is_token("x" * 49) and not failures.is_token("")
    assert failures.snake("Rate-Limit Exceeded") == "rate_limit_exceeded"


# --- paths -------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,root,expected", [
    ("/home/dev/work/app/src/a.ts", "/home/dev/work/app",
     {"original": "~/work/app/src/a.ts", "logical": "~/work/app/src/a.ts", "repo_relative": "src/a.ts"}),
    ("src//b.ts", "/r", {"original": "src//b.ts", "logical": "src/b.ts", "repo_relative": "src/b.ts"}),
    ("/home/dev", "/r", {"original": "~", "logical": "~"}),
    ("/Users/ana/", "/r", {"original": "~", "logical": "~"}),
    ("/home//dev/x", "/r", {"original": "~/x", "logical": "~/x"}),
    ("/srv/app/x", "/srv/app", {"original": "/srv/app/x", "logical": "/srv/app/x", "repo_relative": "x"}),
    ("/srv/app", "/srv/app", {"original": "/srv/app", "logical": "/srv/app"}),
    ("/srv/application/x", "/srv/app", {"original": "/srv/application/x", "logical": "/srv/application/x"}),
    ("../outside.txt", "/r", {"original": "../outside.txt", "logical": "../outside.txt"}),
    ("c:\\Users\\bob\\proj\\x.ts", "C:\\Users\\bob\\proj",
     {"original": "~\\proj\\x.ts", "logical": "~/proj/x.ts", "repo_relative": "x.ts", "drive": "C"}),
    ("D:\\data\\y.csv", "/r", {"original": "D:\\data\\y.csv", "logical": "D:/data/y.csv", "drive": "D"}),
    ("\\\\server\\share\\z", "/r", {"original": "\\\\server\\share\\z", "logical": "//server/share/z", "unc": True}),
    ("\\\\?\\UNC\\server\\share\\z", "/r",
     {"original": "\\\\?\\UNC\\server\\share\\z", "logical": "//server/share/z", "unc": True}),
    ("\\\\?\\C:\\x", "/r", {"original": "\\\\?\\C:\\x", "logical": "C:/x", "drive": "C"}),
])
def test_portable_path(raw, root, expected):
    assert paths.portable(raw, root) == expected


def test_portable_path_rejects_blank_and_non_strings():
    assert paths.portable("  ", "/r") is None and paths.portable(7, "/r") is None


@pytest.mark.parametrize("path,facts", [
    ("src/app.ts", ("ts", False, False, False)), ("tests/x.py", ("py", True, False, False)),
    ("/a/__tests__/b.js", ("js", True, False, False)), ("test_cart.py", ("py", True, False, False)),
    ("cart.spec.ts", ("ts", True, False, False)), ("pkg/x_test.go", ("go", True, False, False)),
    ("package.json", ("json", False, True, False)), ("Dockerfile", (None, False, True, False)),
    (".gitignore", (None, False, True, False)), (".env.local", ("local", False, True, False)),
    ("vite.config.ts", ("ts", False, True, False)), (".eslintrc.cjs", ("cjs", False, True, False)),
    ("Cargo.lock", ("lock", False, True, False)), ("docs/guide.md", ("md", False, False, True)),
    ("LICENSE", (None, False, False, True)), ("README.rst", ("rst", False, False, True)),
    ("archive.tar.GZ", ("gz", False, False, False)), ("dir.d/", (None, False, False, False)),
])
def test_file_facts(path, facts):
    assert paths.file_facts(path) == facts


def test_patch_summary():
    text = ("*** Begin Patch\n*** Add File: a/new.rs\n+fn a() {}\n*** Update File: b.rs\n"
            "*** Move to: c.rs\n@@\n-old\n+new\n+more\n*** Delete File: d.md\n*** End Patch")
    assert paths.patch_summary(text) == (["a/new.rs", "b.rs", "c.rs", "d.md"], 3, 1)


# --- signals -----------------------------------------------------------------------------

def test_prompt_facts_and_line_count():
    assert signals.prompt_facts("안녕?\n```py\nx\n```\n") == (16, 4, True, True)
    assert signals.prompt_facts("") == (0, 0, False, False)
    assert signals.prompt_facts("a？") == (2, 1, False, True)
    assert signals.line_count("a\r\nb") == 2 and signals.line_count("\n") == 1


@pytest.mark.parametrize("output,counts", [
    ("test result: ok. 12 passed; 1 failed; 2 ignored; 0 measured", (12, 1, 2)),
    ("test result: ok. 3 passed; 0 failed; 0 ignored\ntest result: ok. 4 passed; 0 failed; 1 ignored", (7, 0, 1)),
    ("     Summary [   1.2s] 10 tests run: 9 passed (1 slow), 1 failed, 2 skipped", (9, 1, 2)),
    ("Tests:       1 failed, 2 skipped, 1 todo, 12 passed, 16 total", (12, 1, 3)),
    ("\x1b[2m Test Files \x1b[22m 1 passed (1)\n\x1b[2m      Tests \x1b[22m 3 failed | 14 passed | 1 skipped (18)", (14, 3, 1)),
    ("==== 3 failed, 10 passed, 2 skipped, 1 error in 0.12s ====", (10, 4, 2)),
    ("============ 5 passed in 0.01s =============", (5, 0, 0)),
    ("  12 passing (30ms)\n  2 pending\n  1 failing", (12, 1, 2)),
    ("12 examples, 2 failures, 1 pending", (9, 2, 1)),
    ("OK (8 tests, 20 assertions)", (8, 0, 0)),
    ("Tests: 10, Assertions: 30, Failures: 2, Errors: 1, Skipped: 1.", (6, 3, 1)),
    ("Passed!  - Failed:     0, Passed:    12, Skipped:     1, Total:    13, Duration: 1 s", (12, 0, 1)),
    ("--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.01s)\n--- SKIP: TestC", (1, 1, 1)),
    ("All 12 tests pass and 3 failed builds were fixed", None),
    ("==== short test summary info ====", None), ("", None), (None, None),
])
def test_test_counts(output, counts):
    assert signals.test_counts(output) == counts


@pytest.mark.parametrize("output", ["test result: \u00b2 passed", "test result: 1\u0661 passed",
                                    "12\u00b2 passing", "Failures: \u00b3, Tests: 4", "test result: " + "9" * 5000 + " passed",
                                    "test result: 9999999999999 passed"])
def test_test_counts_of_digits_int_does_not_take_are_no_summary(output):
    """Hostile output: a character str.isdigit calls a digit that int() refuses (or reads as
    another number), or a count too long to be one, is no count, never an error."""
    got = signals.test_counts(output)
    assert got is None or all(0 <= c < 2 ** 53 for c in got)
    assert got != (1, 0, 0)


def test_a_hook_whose_tool_output_holds_such_digits_is_captured_as_its_call():
    """The hook's adapter reads the same summary: a Bash output ending `test result: ² passed`
    is its tool call's end, not an adapter error."""
    env = build("claude", claude("PostToolUse", tool_name="Bash", tool_use_id="t1", tool_input={"command": "cargo test"},
                                 tool_response={"stdout": "test result: \u00b2 passed", "stderr": ""}))
    assert env["kind"] == "tool_call_finished" and "capture_gap" not in env["attrs"], env


def test_test_counts_scan_only_the_tail():
    head = "test result: ok. 99 passed; 0 failed; 0 ignored\n"
    assert signals.test_counts(head + "x" * 20000) is None
    assert signals.test_counts("x" * 20000 + "\n" + head) == (99, 0, 0)


def test_output_bound():
    small = {"stdout": "ok"}
    assert signals.bound_output(small) == (small, False)
    big = "é" * 40000  # 80 000 bytes
    cut, truncated = signals.bound_output(big)
    assert truncated and len(cut.encode()) <= signals.OUTPUT_LIMIT and cut == "é" * (signals.OUTPUT_LIMIT // 2)
    obj_cut, truncated = signals.bound_output({"stdout": "x" * 70000})
    assert truncated and isinstance(obj_cut, str) and obj_cut.startswith('{"stdout":"xxx')
    assert len(obj_cut.encode()) == signals.OUTPUT_LIMIT


def test_truncated_output_is_flagged_in_attrs():
    env = build("claude", claude("PostToolUse", tool_name="Bash", tool_input={"command": "cat big"},
                                 tool_response={"stdout": "y" * 70000}))
    assert env["attrs"]["tool_output_truncated"] is True
    assert isinstance(env["content"]["tool_output"], str)
    assert env["raw"]["tool_response"]["stdout"] == "y" * 70000


# --- the payload -------------------------------------------------------------------------

@pytest.mark.parametrize("data,truncated,gap", [
    (b"", False, "empty_payload"), (b"  \n\t", False, "empty_payload"), (b"\xef\xbb\xbf", False, "empty_payload"),
    (b"{not json", False, "invalid_json"), (b"\x00\xff\xfe garbage", False, "invalid_json"),
    (b'{"a": NaN}', False, "invalid_json"), (b"[1, 2]", False, "payload_not_object"),
    (b'"text"', False, "payload_not_object"), (b"{}", True, "payload_truncated"),
    (b"[" * 100000, False, "invalid_json"), (b'{"a": 1} {"b": 2}', False, "invalid_json"),
])
def test_parse_payload_gaps(data, truncated, gap):
    assert adapters.parse_payload(data, truncated)[1] == gap


def test_parse_payload_reads_objects_bom_and_odd_text():
    assert adapters.parse_payload(b'\xef\xbb\xbf{"a": 1}', False) == ({"a": 1}, None)
    assert adapters.parse_payload(b'{"a": "NaN Infinity"}', False) == ({"a": "NaN Infinity"}, None)
    payload, gap = adapters.parse_payload(b'{"a": "x\\ud800y", "\\udfffk": ["\\ud83d\\ude00"]}', False)
    assert gap is None and payload == {"a": "x\ufffdy", "\ufffdk": ["\U0001f600"]}
    payload, gap = adapters.parse_payload(b'{"a": "\xff"}', False)
    assert gap is None and payload == {"a": "\ufffd"}


def test_hook_cwd():
    assert adapters.hook_cwd("claude-code", {"cwd": "/x"}) == "/x"
    assert adapters.hook_cwd("cursor", {"workspace_roots": ["", 3, "/w"]}) == "/w"
    assert adapters.hook_cwd("cursor", {"cwd": "/c", "workspace_roots": ["/w"]}) == "/c"
    assert adapters.hook_cwd("claude-code", {"workspace_roots": ["/w"]}) is None
    assert adapters.hook_cwd("codex", {"cwd": "  "}) is None
    assert adapters.hook_cwd("codex", ["/x"]) is None


# --- gaps and unknowns -------------------------------------------------------------------

@pytest.mark.parametrize("gap", adapters.PAYLOAD_GAPS)
def test_payload_gap_is_an_unknown_event_with_the_byte_count(gap):
    env = adapters.build_event("claude-code", None, gap, ctx(), event_hint="PostToolUse", payload_bytes=1234)
    event.validate(env)
    assert env["kind"] == "unknown" and env["provider"] == "claude_code"
    assert env["provider_event_name"] == "PostToolUse"
    assert env["provider_session_id"] == "unknown"
    assert env["attrs"] == {"hook_event_name": "PostToolUse", "capture_gap": gap,
                            "x_attemptdb_payload_bytes": 1234}
    assert "raw" not in env and "content" not in env


def test_non_object_payload_keeps_the_value_as_raw():
    payload, gap = adapters.parse_payload(b"[1, 2]", False)
    env = adapters.build_event("gemini", payload, gap, ctx())
    assert env["provider"] == "gemini_cli" and env["attrs"]["capture_gap"] == "payload_not_object"
    assert env["provider_event_name"] == "unknown" and env["raw"] == [1, 2]
    assert "raw" not in adapters.build_event("gemini", payload, gap, ctx("metadata_only"))


def test_missing_event_name_uses_the_hint_else_records_a_gap():
    p = {"session_id": "s-9", "tool_name": "Read", "tool_use_id": "t1", "tool_input": {"file_path": "a.py"}}
    env = build("claude", p)
    assert env["kind"] == "unknown" and env["provider_event_name"] == "unknown"
    assert env["attrs"]["capture_gap"] == "missing_event_name"
    assert env["provider_session_id"] == "s-9" and env["tool"]["name"] == "Read"
    hinted = build("claude", p, event_hint=" PreToolUse ")
    assert hinted["kind"] == "tool_call_started" and hinted["provider_event_name"] == "PreToolUse"
    assert "capture_gap" not in hinted["attrs"]
    assert build("claude", {"hook_event_name": " Stop ", "session_id": "s"})["provider_event_name"] == "Stop"


@pytest.mark.parametrize("session", ["", "   ", None, 42, ["s"], {"id": "s"}, True])
def test_missing_or_wrong_typed_session_id(session):
    p = claude("Stop")
    if session is None:
        del p["session_id"]
    else:
        p["session_id"] = session
    env = build("claude", p)
    assert env["provider_session_id"] == "unknown"
    assert env["session_id"] == ids.session_id("claude_code", "unknown")
    assert env["attrs"]["capture_gap"] == "missing_session_id"
    assert list(env["attrs"])[:2] == ["hook_event_name", "capture_gap"]


@pytest.mark.parametrize("name,slug", [("Windsurf-IDE", "windsurf_ide"), ("  ", "unknown"),
                                       ("Zed Agent 2.0", "zed_agent_2_0"), ("ü", "unknown")])
def test_unknown_provider(name, slug):
    payload = {"hook_event_name": "AfterEdit", "session_id": "w-1", "_note": "x", "prompt": "hi"}
    env = build(name, payload)
    assert env["provider"] == slug and env["kind"] == "unknown"
    assert env["attrs"] == {"hook_event_name": "AfterEdit", "capture_gap": "unsupported_provider"}
    assert env["provider_session_id"] == "w-1"
    assert env["raw"] == {"hook_event_name": "AfterEdit", "session_id": "w-1", "prompt": "hi"}
    assert "content" not in env


def test_an_adapter_exception_becomes_an_adapter_error_event(monkeypatch):
    from attemptdb.adapters import claude_code

    def broken(d, p):
        raise RuntimeError("adapter bug")
    monkeypatch.setattr(claude_code, "normalise", broken)
    env = build("claude", claude("PreToolUse", transcript_path="/home/dev/t.jsonl", _x=1))
    assert env["kind"] == "unknown" and env["attrs"]["capture_gap"] == "adapter_error"
    assert env["provider_event_name"] == "PreToolUse" and env["provider_session_id"] == "s-1"
    assert "transcript_path" not in env["raw"] and "_x" not in env["raw"]


def test_an_attr_outside_the_allowlist_is_an_adapter_error(monkeypatch):
    from attemptdb.adapters import gemini_cli
    monkeypatch.setattr(gemini_cli, "_HANDLERS", {"SessionStart": lambda d, p: d.attr("prompt_text", "x")})
    env = build("gemini", {"hook_event_name": "SessionStart", "session_id": "g"})
    assert env["attrs"]["capture_gap"] == "adapter_error"


def test_unknown_event_keeps_tool_call_facts():
    env = build("claude", claude("PostToolBatch", tool_name="Bash", tool_use_id="t9",
                                 tool_input={"command": "npm test"}, message="drop me"))
    assert env["kind"] == "unknown" and env["tool"] == {"name": "Bash", "category": "shell", "call_id": "t9"}
    assert env["attrs"]["command_category"] == "test"
    assert env["content"] == {"command": "npm test", "tool_input": {"command": "npm test"}}


@pytest.mark.parametrize("provider,name", [("claude-code", "AttemptDBCaptureTest"), ("codex", "AttemptDBCaptureTest"),
                                           ("cursor", "attemptdbCaptureTest"), ("gemini-cli", "AttemptDBCaptureTest")])
def test_capture_test_kind(provider, name):
    payload = {"hook_event_name": name, "session_id": "attemptdb-capture-test-1",
               "conversation_id": "attemptdb-capture-test-1", "cwd": "/home/dev/work/app",
               "_attemptdb_capture_test": True}
    env = build(provider, payload)
    assert env["kind"] == "capture_test" and env["provider_session_id"] == "attemptdb-capture-test-1"
    assert "_attemptdb_capture_test" not in env["raw"]
    assert registry.CAPTURE_TEST_EVENT[registry.provider_id(provider)] == name


# --- common contract ---------------------------------------------------------------------

def test_observed_at_from_payload_timestamp_forms():
    def observed(ts):
        return build("gemini", {"hook_event_name": "SessionStart", "session_id": "g", "timestamp": ts})["observed_at"]
    assert observed("2026-11-30T09:00:00Z") == NOW + 3_600_000_000
    assert observed(1796029200) == NOW + 3_600_000_000            # seconds
    assert observed(1796029200000) == NOW + 3_600_000_000         # milliseconds
    assert observed(1796029200000000) == NOW + 3_600_000_000      # microseconds
    for bad in (0, -5, "yesterday", True, None, [1], 1e300, float("nan")):
        assert observed(bad) == NOW
    # a time far past the capture is no clock (it would keep a session open for ever): the capture
    # time stands in; a skewed clock days ahead keeps its time
    for far in ("9999-12-31T23:59:59.999Z", "2200-01-01T00:00:00Z", 99999999999999, "2026-12-07T08:00:01Z"):
        assert observed(far) == NOW, far
    assert observed("2026-12-07T08:00:00Z") == NOW + 7 * 86_400_000_000


def test_duration_sources():
    base = claude("PostToolUse", tool_name="Read", tool_input={})
    assert build("claude", {**base, "duration_ms": 12})["duration_ms"] == 12
    assert build("claude", {**base, "duration": 7.9})["duration_ms"] == 7
    assert build("claude", {**base, "duration_ms": 5, "duration": 9})["duration_ms"] == 5
    for bad in (-1, "12", True, None, float("inf")):
        assert "duration_ms" not in build("claude", {**base, "duration_ms": bad})


def test_common_attrs_and_agent():
    env = build("claude", claude("SessionStart", cwd="/Users/ana/app", permission_mode="plan",
                                 transcript_path="/Users/ana/.claude/x.jsonl", model="m-1", source="startup"))
    assert env["attrs"] == {"hook_event_name": "SessionStart", "cwd": "~/app", "permission_mode": "plan",
                            "transcript_present": True, "source": "startup"}
    assert env["agent"] == {"agent_id": ids.agent_id(env["session_id"]), "model": "m-1"}
    assert env["raw"] == {"session_id": "s-1", "cwd": "/Users/ana/app", "hook_event_name": "SessionStart",
                          "permission_mode": "plan", "model": "m-1", "source": "startup"}


def test_payload_strings_that_are_not_tokens_never_become_attrs():
    env = build("claude", claude("SessionEnd", reason="the user typed: my secret plan", permission_mode="x\ny",
                                 agent_type="a b"))
    assert set(env["attrs"]) == {"hook_event_name", "cwd"}


def test_subagent_identity_and_turn_ids():
    env = build("codex", {"hook_event_name": "PreToolUse", "session_id": "c-1", "turn_id": "t-1",
                          "agent_id": "sub-1", "agent_type": "worker", "tool_name": "shell",
                          "tool_use_id": "call_1", "tool_input": {"command": ["ls"]}})
    sid = ids.session_id("codex", "c-1")
    assert env["agent"] == {"agent_id": ids.subagent_id(sid, "sub-1"), "provider_agent_id": "sub-1",
                            "agent_type": "worker", "parent_agent_id": ids.agent_id(sid)}
    assert env["provider_turn_id"] == "t-1" and env["attrs"]["is_subagent"] is True
    lone = build("claude", claude("Stop", agent_type="Explore", prompt_id="p-1"))
    assert lone["agent"] == {"agent_id": ids.agent_id(lone["session_id"])}
    assert lone["attrs"]["agent_type"] == "Explore" and lone["provider_turn_id"] == "p-1"


def test_cursor_session_and_versions():
    payload = {"hook_event_name": "stop", "session_id": "s", "conversation_id": "c",
               "parent_conversation_id": "parent", "cursor_version": "1.7"}
    env = build("cursor", payload)
    assert env["provider_session_id"] == "parent" and env["provider_version"] == "1.7"
    env = adapters.build_event("cursor", payload, None, ctx(provider_version="from-ctx", hook_version="9"))
    assert env["provider_version"] == "from-ctx" and env["hook_version"] == "9"
    assert build("cursor", {"hook_event_name": "stop", "conversation_id": "", "session_id": "s"})[
        "provider_session_id"] == "s"


# --- kinds and outcomes ------------------------------------------------------------------

def test_post_tool_use_exit_codes_and_interrupts():
    base = claude("PostToolUse", tool_name="Bash", tool_use_id="t", tool_input={"command": "make"})
    ok = build("claude", {**base, "tool_response": {"stdout": "", "exit_code": 0}})
    assert ok["kind"] == "tool_call_finished" and ok["outcome"] == {"status": "success", "exit_code": 0}
    failed = build("claude", {**base, "tool_response": {"metadata": {"exit_code": 2}}})
    assert failed["kind"] == "tool_call_failed"
    assert failed["outcome"] == {"status": "failure", "class": "nonzero_exit", "exit_code": 2}
    assert failed["event_id"] == ok["event_id"], "finished and failed share the tool_call_end slot"
    cut = build("claude", {**base, "tool_response": {"interrupted": True, "exit_code": 130}})
    assert cut["outcome"] == {"status": "cancelled", "class": "interrupted"}
    assert cut["attrs"]["error_class"] == "interrupted" and "error_bytes" not in cut["attrs"]


def test_post_tool_use_failure_message_sources():
    base = claude("PostToolUseFailure", tool_name="Bash", tool_input={"command": "x"})
    assert build("claude", {**base, "error_message": "timed out"})["outcome"]["class"] == "timeout"
    env = build("claude", {**base, "tool_response": "Error: ENOENT"})
    assert env["content"]["error"] == "Error: ENOENT" and env["outcome"]["class"] == "file_not_found"
    env = build("claude", {**base, "tool_response": {"stderr": "boom", "exit_code": 4}})
    assert env["outcome"] == {"status": "failure", "class": "nonzero_exit", "exit_code": 4}
    assert env["content"]["tool_output"] == {"stderr": "boom", "exit_code": 4}
    env = build("claude", base)
    assert env["outcome"] == {"status": "failure", "class": "unknown"} and "content" in env
    assert "error_bytes" not in env["attrs"]


def test_stop_failure_class_sources():
    def outcome(**f):
        env = build("claude", claude("StopFailure", **f))
        return env["outcome"], env.get("content", {}).get("error")
    assert outcome(error="rate_limit") == ({"status": "failure", "class": "rate_limit"}, None)
    assert outcome(matcher="Server Error", error_message="500") == ({"status": "failure", "class": "server_error"}, "500")
    assert outcome(error="Connection reset by peer") == ({"status": "failure", "class": "unknown"}, "Connection reset by peer")
    assert outcome(error_type="bad/class!", message="request timed out")[0] == {"status": "failure", "class": "timeout"}


def test_codex_interrupt_and_claude_notifications():
    env = build("codex", {"hook_event_name": "Interrupt", "session_id": "c"})
    assert env["kind"] == "turn_failed" and env["outcome"] == {"status": "cancelled", "class": "interrupted"}
    env = build("claude", claude("Notification", type="auth_success", message="ok", title="t"))
    assert env["attrs"]["notification_type"] == "auth_success" and env["content"] == {"message": "ok", "title": "t"}


@pytest.mark.parametrize("prompt,tag", [
    ("<task-notification>done</task-notification>", "task_notification"),
    ("[SYSTEM NOTIFICATION] x", "task_notification"), ("\n <local-command-stdout>x", "local_command"),
    ("<local-command-caveat>x", "local_command"), ("<bash-stderr>e</bash-stderr>", "shell_output"),
    ("<bash-stdout>o", "shell_output"), ("<system-reminder>r", "system_reminder"),
])
def test_injected_prompts_are_notifications(prompt, tag):
    env = build("claude", claude("UserPromptSubmit", prompt=prompt))
    assert env["kind"] == "notification"
    assert env["attrs"]["notification_type"] == "injected_prompt" and env["attrs"]["source"] == tag
    assert build("claude", claude("UserPromptSubmit", prompt="please read <system-reminder>"))["kind"] == "prompt_submitted"


def test_gemini_after_tool_failure_rules():
    base = {"hook_event_name": "AfterTool", "session_id": "g", "tool_name": "read_file", "tool_args": {}}

    def run(**f):
        env = build("gemini", {**base, **f})
        return env["kind"], env.get("outcome"), env.get("content", {}).get("error")
    assert run(tool_response={"error": None})[0] == "tool_call_finished"
    assert run(tool_response={"error": False})[0] == "tool_call_finished"
    assert run(tool_response={"error": ""})[0] == "tool_call_finished"
    assert run(tool_response={"error": True}) == ("tool_call_failed", {"status": "failure", "class": "unknown"}, None)
    assert run(tool_response={"error": {"code": 7}})[2] == '{"code":7}'
    assert run(tool_response={"status": "failed"})[0] == "tool_call_failed"
    assert run(tool_response={"success": False})[0] == "tool_call_failed"
    assert run(success=False)[0] == "tool_call_failed"
    assert run(error="denied by policy")[2] == "denied by policy"
    assert run(tool_response={"exitCode": 3})[1] == {"status": "failure", "class": "nonzero_exit", "exit_code": 3}
    assert run(tool_response={"exit_code": 0})[1] == {"status": "success", "exit_code": 0}


def test_cursor_tool_output_json_text_and_stop_status():
    base = {"hook_event_name": "postToolUse", "conversation_id": "c", "tool_name": "Shell",
            "tool_input": {"command": "npm test"}}
    env = build("cursor", {**base, "tool_output": '{"output": "Tests: 2 failed, 3 total", "exitCode": 1}'})
    assert env["kind"] == "tool_call_failed" and env["outcome"]["exit_code"] == 1
    assert env["attrs"]["tests_failed"] == 2
    env = build("cursor", {**base, "tool_output": "{broken json"})
    assert env["kind"] == "tool_call_finished" and env["content"]["tool_output"] == "{broken json"
    env = build("cursor", {"hook_event_name": "stop", "conversation_id": "c", "status": "aborted"})
    assert env["kind"] == "turn_failed" and env["outcome"] == {"status": "cancelled", "class": "aborted"}


# --- event ids ---------------------------------------------------------------------------

def test_tool_call_events_get_deterministic_ids():
    p = claude("PreToolUse", tool_name="Bash", tool_use_id="toolu_1", tool_input={"command": "ls"})
    a, b = build("claude", p), build("claude", p)
    assert a["event_id"] == b["event_id"] == ids.tool_event_id("claude_code", "s-1", "tool_call_started", "toolu_1")
    for name, kind in (("PermissionRequest", "permission_requested"), ("PermissionDenied", "permission_denied"),
                       ("PostToolUseFailure", "tool_call_failed")):
        env = build("claude", {**p, "hook_event_name": name})
        assert env["event_id"] == ids.tool_event_id("claude_code", "s-1", kind, "toolu_1")
    no_call = {k: v for k, v in p.items() if k != "tool_use_id"}
    no_session = {k: v for k, v in p.items() if k != "session_id"}
    for payload in (no_call, no_session):
        x, y = build("claude", payload), build("claude", payload)
        assert x["event_id"] != y["event_id"] and x["event_id"][14] == "7"
    prompt = claude("UserPromptSubmit", prompt="continue")
    assert build("claude", prompt)["event_id"] != build("claude", prompt)["event_id"]


def test_codex_vector_from_the_reference():
    assert ids.tool_event_id("codex", "s", "tool_call_finished", "c") == "46f8db97-7cd5-5bed-a370-090b55d565fa"


# --- the context -------------------------------------------------------------------------

def test_context_validation_and_modes():
    assert adapters.Context("dev_" + DEVICE, "LOCAL", PROJECT, NOW).capture_mode == "local_semantic"
    assert adapters.Context(DEVICE, "full-sync", PROJECT, NOW).capture_mode == "full_sync"
    assert adapters.Context(DEVICE, "bogus", PROJECT, NOW).capture_mode == "metadata_only"
    assert adapters.Context(DEVICE, None, PROJECT, NOW).capture_mode == "metadata_only"
    for bad in (dict(device_id="nope"), dict(project={"root": "/x"}), dict(captured_at="now"),
                dict(captured_at=True), dict(hook_version=3)):
        args = dict(device_id=DEVICE, capture_mode="local", project=PROJECT, captured_at=NOW)
        args.update(bad)
        with pytest.raises(AttemptError) as e:
            adapters.Context(**args)
        assert e.value.code == "adapter.context"


def test_keep_raw_false_drops_raw_only():
    c = adapters.Context(DEVICE, "local_semantic", PROJECT, NOW, keep_raw=False)
    env = adapters.build_event("claude", claude("UserPromptSubmit", prompt="hi"), None, c)
    assert "raw" not in env and env["content"] == {"prompt": "hi"}


def test_strict_normalise_raises_coded_errors():
    with pytest.raises(AttemptError) as e:
        adapters.normalise("nope", {"hook_event_name": "X"}, ctx())
    assert e.value.code == "adapter.unsupported_provider"
    with pytest.raises(AttemptError) as e:
        adapters.normalise("codex", [1], ctx())
    assert e.value.code == "adapter.payload_not_object"
    with pytest.raises(AttemptError) as e:
        adapters.normalise("codex", {"session_id": "s"}, ctx())
    assert e.value.code == "adapter.missing_event_name"
    assert adapters.normalise("codex", {"hook_event_name": "Stop", "session_id": "s"}, ctx())["kind"] == "turn_stopped"


# --- registry ----------------------------------------------------------------------------

def test_registry_lists():
    for p in registry.PROVIDERS:
        assert set(registry.CAPTURE_EVENTS[p]) <= set(registry.SUPPORTED_EVENTS[p])
    assert "WorktreeCreate" not in registry.CAPTURE_EVENTS["claude_code"]
    assert "FileChanged" not in registry.CAPTURE_EVENTS["claude_code"]
    assert "afterShellExecution" not in registry.CAPTURE_EVENTS["cursor"]
    assert "PostToolUseFailure" not in registry.SUPPORTED_EVENTS["codex"]
    from attemptdb.adapters import claude_code, cursor, gemini_cli
    modules = {"claude_code": claude_code, "codex": claude_code, "cursor": cursor, "gemini_cli": gemini_cli}
    for p, names in registry.SUPPORTED_EVENTS.items():
        assert set(names) <= set(modules[p].KINDS), p


# --- the hook path -----------------------------------------------------------------------

def test_importing_and_running_the_adapters_loads_no_heavy_modules():
    code = (
        "import sys, attemptdb.adapters as a, attemptdb.model.ids as ids\n"
        "dev = ids.derive('dev_', 'x')\n"
        "c = a.Context(dev, 'local', ids.project_identity('/r', None, dev), 1)\n"
        "for prov, name in (('claude-code', 'PostToolUse'), ('cursor', 'postToolUse'), ('gemini', 'AfterTool')):\n"
        "    p, g = a.parse_payload(('{\"hook_event_name\": \"%s\", \"session_id\": \"s\", \"tool_name\": \"Bash\", '\n"
        "        '\"tool_input\": {\"command\": \"git commit -m x\"}, \"tool_response\": {\"stdout\": \"ok\"}}' % name).encode(), False)\n"
        "    a.build_event(prov, p, g, c)\n"
        "a.build_event('x', None, 'invalid_json', c)\n"
        "print(sorted(m for m in ('re', 'json', 'uuid', 'hashlib', 'click', 'jsonschema', 'cryptography',\n"
        "    'parsimonious', 'tabulate', 'shlex') if m in sys.modules))\n"
    )
    # -S: no site hooks (an editable install's path finder imports re at start-up by itself)
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": ROOT}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.replace("'", '"')) == []


def test_an_absurd_exit_code_in_a_message_never_costs_the_event():
    """A failure text stating an exit code beyond 64 bits is not an exit code; the event must
    still be storable (the store refuses integers outside 64 bits)."""
    from attemptdb.adapters import Context, build_event
    from attemptdb.model import event, ids
    dev = ids.derive("dev_", "t")
    ctx = Context(dev, "local_semantic", ids.project_identity("/tmp/p", None, dev), 1_796_025_600_000_000)
    env = build_event("claude-code", {"hook_event_name": "PostToolUseFailure", "session_id": "s", "tool_name": "Bash",
                                      "tool_use_id": "t1", "tool_input": {"command": "x"},
                                      "error": "Command failed with exit code 99999999999999999999"}, None, ctx)
    event.check_storable(env)
    assert env["kind"] == "tool_call_failed" and "exit_code" not in env["outcome"]
