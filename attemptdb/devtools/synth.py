"""A seeded, realistic synthetic event history for benchmarks and demos.

Invariant: `generate(n, seed)` yields exactly `n` valid canonical Event v1 envelopes, the same
ones for the same (n, seed), in observation order per session with sessions interleaved by time.
The shape follows the original's benchmark workload (reference/inference.md §5): provider mix per
session Claude Code 70 % / Codex 20 % / Cursor 7 % (end-only tool hooks) / Gemini 3 %; turns per
session 1–12 (median 2); tool calls per turn 1–900 (median 60); most calls inside subagents; tool
mix shell 70.5 %, edit 10.1 %, read 8.9 %, write 6.1 %, subagent 2.2 %, web 0.45 %; shell fails
2 %, edits 0.9 % (string_mismatch), 0.1 % denied; 12 projects (Zipf) of 160 paths each; think
time p50 0.7 s. Events are 1–4 KB of JSON (content and raw kept, local_semantic).
"""

import math
import random

from .. import ADAPTER_VERSION
from ..model import event, ids

START_US = 1_787_904_000_000_000  # 2026-08-28T08:00:00Z

PROVIDERS = (("claude_code", 0.70), ("codex", 0.20), ("cursor", 0.07), ("gemini_cli", 0.03))
TOOLS = (  # (category, weight)
    ("shell", 0.705), ("file_edit", 0.101), ("file_read", 0.089), ("file_write", 0.061),
    ("subagent", 0.022), ("web", 0.0045), ("search", 0.0175),
)
TOOL_NAMES = {
    "claude_code": {"shell": "Bash", "file_edit": "Edit", "file_read": "Read", "file_write": "Write",
                    "subagent": "Task", "web": "WebFetch", "search": "Grep"},
    "codex": {"shell": "shell", "file_edit": "apply_patch", "file_read": "read_file",
              "file_write": "write_file", "subagent": "spawn_agent", "web": "web_search", "search": "grep"},
    "cursor": {"shell": "Shell", "file_edit": "Edit", "file_read": "Read", "file_write": "Write",
               "subagent": "Task", "web": "WebSearch", "search": "Grep"},
    "gemini_cli": {"shell": "run_shell_command", "file_edit": "replace", "file_read": "read_file",
                   "file_write": "write_file", "subagent": "Task", "web": "web_fetch",
                   "search": "search_file_content"},
}
EVENT_NAMES = {
    "claude_code": {"session_started": "SessionStart", "session_ended": "SessionEnd",
                    "prompt_submitted": "UserPromptSubmit", "tool_call_started": "PreToolUse",
                    "tool_call_finished": "PostToolUse", "tool_call_failed": "PostToolUseFailure",
                    "turn_stopped": "Stop", "agent_message": "Stop", "subagent_started": "SubagentStart",
                    "subagent_stopped": "SubagentStop", "notification": "Notification",
                    "permission_denied": "PermissionDenied"},
    "codex": {"session_started": "SessionStart", "session_ended": "SessionEnd",
              "prompt_submitted": "UserPromptSubmit", "tool_call_started": "PreToolUse",
              "tool_call_finished": "PostToolUse", "tool_call_failed": "PostToolUse",
              "turn_stopped": "Stop", "agent_message": "Stop", "subagent_started": "SubagentStart",
              "subagent_stopped": "SubagentStop", "notification": "Stop",
              "permission_denied": "PermissionRequest"},
    "cursor": {"session_started": "sessionStart", "session_ended": "sessionEnd",
               "prompt_submitted": "beforeSubmitPrompt", "tool_call_started": "preToolUse",
               "tool_call_finished": "postToolUse", "tool_call_failed": "postToolUseFailure",
               "turn_stopped": "stop", "agent_message": "afterAgentResponse",
               "subagent_started": "subagentStart", "subagent_stopped": "subagentStop",
               "notification": "stop", "permission_denied": "postToolUseFailure"},
    "gemini_cli": {"session_started": "SessionStart", "session_ended": "SessionEnd",
                   "prompt_submitted": "BeforeAgent", "tool_call_started": "BeforeTool",
                   "tool_call_finished": "AfterTool", "tool_call_failed": "AfterTool",
                   "turn_stopped": "AfterAgent", "agent_message": "AfterAgent",
                   "subagent_started": "BeforeAgent", "subagent_stopped": "AfterAgent",
                   "notification": "Notification", "permission_denied": "AfterTool"},
}
COMMANDS = (
    ("npm test", "test"), ("cargo test --workspace", "test"), ("pytest -q tests", "test"),
    ("git status --short", "git"), ("git diff --stat", "git"), ("git add -A && git commit -m 'wip'", "git"),
    ("npm run build", "build"), ("cargo build --release", "build"), ("make -j4", "build"),
    ("ls -la src", "fs"), ("cat package.json", "fs"), ("rg -n 'TODO' src", "fs"),
    ("grep -rn handler src", "fs"), ("npm install", "install"), ("pip install -e .", "install"),
    ("curl -s https://registry.npmjs.org/left-pad", "network"), ("node scripts/check.js", "run"),
    ("python3 tools/gen.py", "run"),
)
WORDS = ("the handler retries the request when the upstream times out and logs the failure "
         "before returning an error to the caller so the queue can back off").split()
PROMPTS = ("Fix the failing tests in the billing webhook", "Add retries to the sync client",
           "Why does the build fail on CI?", "Refactor the session store to use WAL mode",
           "Write tests for the path normaliser", "Update the README with the new commands")
PROJECTS = 12
PATHS_PER_PROJECT = 160
EXTS = ("ts", "tsx", "rs", "py", "md", "json", "go", "css")


def _pick(rng, table):
    x = rng.random()
    acc = 0.0
    for value, w in table:
        acc += w
        if x < acc:
            return value
    return table[-1][0]


def _uuid(rng, version=4):
    b = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
    b[6] = (b[6] & 0x0F) | (version << 4)
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _text(rng, n_bytes):
    out = []
    size = 0
    while size < n_bytes:
        w = WORDS[rng.randrange(len(WORDS))]
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def _lognormal_int(rng, median, sigma, lo, hi):
    return max(lo, min(hi, int(round(median * math.exp(rng.gauss(0, sigma))))))


class _Project:
    def __init__(self, i, device_id):
        self.name = f"acme/service-{i:02d}"
        self.root = f"/home/dev/src/service-{i:02d}"
        self.block = ids.project_identity(self.root, f"git@github.com:{self.name}.git", device_id)
        self.block["branch"] = "main"
        r = random.Random(1000 + i)
        dirs = ("src", "src/api", "src/store", "tests", "docs", "lib", "scripts")
        self.paths = [f"{dirs[r.randrange(len(dirs))]}/mod_{j:03d}.{EXTS[r.randrange(len(EXTS))]}"
                      for j in range(PATHS_PER_PROJECT)]


class _Session:
    """One agent session, emitting its events lazily in time order."""

    def __init__(self, rng, device_id, project, start_us):
        self.rng = rng
        self.device_id = device_id
        self.project = project
        self.provider = _pick(rng, PROVIDERS)
        self.psid = _uuid(rng)
        self.sid = ids.session_id(self.provider, self.psid)
        self.agent = ids.agent_id(self.sid)
        self.t = start_us
        self.events = self._events()

    def _env(self, kind, **kw):
        r = self.rng
        self.t += int(r.expovariate(1 / 700_000)) + 1000  # think time, mean ~0.7 s
        env = {
            "event_id": kw.pop("event_id", None) or _uuid(r, 7),
            "schema_version": 1, "device_id": self.device_id, "source_seq": 0, "hlc": 0,
            "observed_at": self.t, "captured_at": self.t + r.randrange(200, 4000),
            "provider": self.provider, "adapter_version": ADAPTER_VERSION, "hook_version": "bench",
            "capture_mode": "local_semantic",
            "provider_event_name": EVENT_NAMES[self.provider].get(kind, kind),
            "kind": kind, "project": self.project.block, "session_id": self.sid,
            "provider_session_id": self.psid,
        }
        env.update(kw)
        env.setdefault("agent", {"agent_id": self.agent})
        return event.canonical(env)

    def _events(self):
        r = self.rng
        if r.random() < 0.3:
            yield self._env("session_started", attrs={"hook_event_name": "SessionStart", "source": "startup"},
                            raw={"hook_event_name": "SessionStart", "session_id": self.psid, "source": "startup"})
        for turn in range(_lognormal_int(r, 2, 0.9, 1, 12)):
            prompt = PROMPTS[r.randrange(len(PROMPTS))] + ". " + _text(r, r.randrange(40, 600))
            tid = f"turn-{turn}" if self.provider == "codex" else None
            extra = {"provider_turn_id": tid} if tid else {}
            yield self._env("prompt_submitted", content={"prompt": prompt}, **extra,
                            attrs={"hook_event_name": EVENT_NAMES[self.provider]["prompt_submitted"],
                                   "prompt_chars": len(prompt), "prompt_lines": 1,
                                   "prompt_has_code_fence": False, "prompt_has_question": "?" in prompt},
                            raw={"hook_event_name": "UserPromptSubmit", "session_id": self.psid, "prompt": prompt})
            sub = None
            for _ in range(_lognormal_int(r, 60, 1.1, 1, 900)):
                if sub is None and r.random() < 0.08:
                    pa = _uuid(r)
                    sub = {"agent_id": ids.subagent_id(self.sid, pa), "provider_agent_id": pa,
                           "agent_type": "general-purpose", "parent_agent_id": self.agent}
                    yield self._env("subagent_started", agent=sub, attrs={"hook_event_name": "SubagentStart",
                                    "is_subagent": True, "agent_type": "general-purpose"})
                yield from self._tool_call(sub or {"agent_id": self.agent}, extra)
                if sub is not None and r.random() < 0.05:
                    yield self._env("subagent_stopped", agent=sub, attrs={"hook_event_name": "SubagentStop",
                                    "is_subagent": True, "agent_type": "general-purpose"})
                    sub = None
            if r.random() < 0.5:
                msg = _text(r, r.randrange(80, 900))
                yield self._env("agent_message", content={"message": msg}, **extra,
                                attrs={"hook_event_name": "Stop", "message_chars": len(msg)})
            yield self._env("turn_stopped", **extra, attrs={"hook_event_name": "Stop", "stop_hook_active": False})
        if r.random() < 0.1:
            yield self._env("session_ended", attrs={"hook_event_name": "SessionEnd", "reason": "exit"})

    def _tool_call(self, agent, extra):
        r = self.rng
        cat = _pick(r, TOOLS)
        name = TOOL_NAMES[self.provider][cat]
        call = "call_" + _uuid(r).replace("-", "")[:20]
        tool = {"name": name, "category": cat, "call_id": call}
        attrs = {}
        content = {}
        paths = None
        if cat == "shell":
            cmd, ccat = COMMANDS[r.randrange(len(COMMANDS))]
            tool_input = {"command": cmd, "description": _text(r, 40)}
            content["command"] = cmd
            attrs.update(command_bytes=len(cmd), command_category=ccat)
            if ccat == "git":
                attrs["git_subcommand"] = cmd.split()[1]
        else:
            rel = self.project.paths[r.randrange(PATHS_PER_PROJECT)]
            full = f"{self.project.root}/{rel}"
            logical = "~/" + full.split("/", 3)[3]
            paths = [{"original": logical, "logical": logical, "repo_relative": rel}]
            tool_input = {"file_path": full}
            if cat == "file_edit":
                tool_input.update(old_string=_text(r, r.randrange(30, 300)), new_string=_text(r, r.randrange(30, 400)))
                attrs.update(lines_added=r.randrange(1, 30), lines_removed=r.randrange(0, 20))
            elif cat == "file_write":
                tool_input["content"] = _text(r, r.randrange(200, 1500))
            attrs["file_ext"] = rel.rsplit(".", 1)[1]
        pre = {"hook_event_name": EVENT_NAMES[self.provider]["tool_call_started"]}
        end_only = self.provider == "cursor"
        if not end_only:
            yield self._env("tool_call_started", agent=agent, tool=tool, **extra,
                            event_id=ids.tool_event_id(self.provider, self.psid, "tool_call_started", call),
                            **({"paths": paths} if paths else {}),
                            attrs={**pre, **attrs}, content={**content, "tool_input": tool_input},
                            raw={"hook_event_name": pre["hook_event_name"], "session_id": self.psid,
                                 "tool_name": name, "tool_use_id": call, "tool_input": tool_input})
        fail = r.random() < (0.02 if cat == "shell" else 0.009 if cat == "file_edit" else 0.0)
        denied = r.random() < 0.001
        output = _text(r, r.randrange(100, 2000))
        if denied:
            kind, outcome = "permission_denied", {"status": "denied"}
        elif fail:
            kind = "tool_call_failed"
            if cat == "shell":
                outcome = {"status": "failure", "class": "nonzero_exit", "exit_code": 1}
            else:
                outcome = {"status": "failure", "class": "string_mismatch"}
            attrs.update(error_class=outcome["class"], error_bytes=60)
            content["error"] = "String to replace not found in file" if cat != "shell" else "Command failed with exit code 1"
        else:
            kind = "tool_call_finished"
            outcome = {"status": "success", **({"exit_code": 0} if cat == "shell" else {})}
            if cat == "shell" and attrs.get("command_category") == "test":
                attrs.update(tests_passed=r.randrange(5, 300), tests_failed=0)
        end_name = EVENT_NAMES[self.provider][kind if kind != "permission_denied" else "permission_denied"]
        yield self._env(kind, agent=agent, tool=tool, outcome=outcome, **extra,
                        event_id=ids.tool_event_id(self.provider, self.psid, kind, call),
                        duration_ms=r.randrange(5, 20_000), **({"paths": paths} if paths else {}),
                        attrs={"hook_event_name": end_name, **attrs},
                        content={**content, "tool_input": tool_input, "tool_output": output},
                        raw={"hook_event_name": end_name, "session_id": self.psid, "tool_name": name,
                             "tool_use_id": call, "tool_input": tool_input,
                             "tool_response": {"output": output}})


def generate(n: int, seed: int = 1, start_us: int = START_US, device_id: str | None = None):
    """Yield `n` canonical envelopes. Sessions overlap in time: a few run concurrently, and the
    stream interleaves them in observation order."""
    rng = random.Random(seed)
    device = device_id or ids.derive("dev_", "synthetic", str(seed))
    weights = [1 / (i + 1) for i in range(PROJECTS)]
    total = sum(weights)
    zipf = [(i, w / total) for i, w in enumerate(weights)]
    projects = [_Project(i, device) for i in range(PROJECTS)]
    live = []
    t = start_us
    made = 0
    while made < n:
        while len(live) < 3:  # a few concurrent sessions
            t += int(rng.expovariate(1 / 600_000_000))
            s = _Session(random.Random(rng.getrandbits(64)), device, projects[_pick(rng, zipf)], t)
            live.append([s, next(s.events, None)])
        live = [x for x in live if x[1] is not None]
        if not live:
            continue
        i = min(range(len(live)), key=lambda k: live[k][1]["observed_at"])
        yield live[i][1]
        made += 1
        live[i][1] = next(live[i][0].events, None)
        t = max(t, live[i][0].t)


def write_jsonl(path: str, n: int, seed: int = 1, **kw) -> int:
    """Write `n` generated envelopes as canonical lines; returns the byte size written."""
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        for env in generate(n, seed, **kw):
            line = event.line(env) + "\n"
            size += len(line.encode("utf-8"))
            f.write(line)
    return size
