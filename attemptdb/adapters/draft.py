"""The event under construction: what every adapter extracts in common, and the one place an
Event v1 envelope is assembled from it (reference/capture.md §1.6, §2.1, §2.6–§2.11).

Invariants:
- attrs (layer 1 of §2.10): only keys in ATTR_KEYS are ever written (anything else is a
  programming error and raises); values are numbers, booleans, adapter-made tokens, home-elided
  paths, or payload strings that pass `token()` (ASCII word characters and `_ - . :`, at most
  64 bytes) — so no prompt, command, output, message, email or home path can reach attrs.
  `hook_event_name` is the first key.
- content holds text only under its slot (prompt, command, message, error, tool_input,
  tool_output, then extra keys in insertion order) and only when non-empty; `envelope()` leaves
  content and raw out under metadata_only.
- The envelope comes out in canonical key order (attemptdb.model.event.FIELD_ORDER) with bare UUIDs;
  tool-call events with a call id and a real session id get the deterministic event id of §5.4.
"""

from ..model import clock, ids
from . import commands, failures, paths, signals, tools

ATTR_KEYS = frozenset((
    "hook_event_name", "capture_gap", "x_attemptdb_payload_bytes", "source", "reason",
    "notification_type", "trigger", "stop_hook_active", "permission_mode", "cwd",
    "transcript_present", "prompt_chars", "prompt_lines", "prompt_has_code_fence",
    "prompt_has_question", "command_bytes", "command_category", "command_subcategory",
    "git_subcommand", "file_ext", "file_is_test", "file_is_config", "file_is_doc", "file_count",
    "path_extensions", "lines_added", "lines_removed", "error_class", "error_bytes",
    "is_subagent", "agent_type", "task_id", "task_status", "previous_cwd", "worktree_path",
    "config_source", "tool_output_truncated", "provider", "message_chars", "pre_tokens",
    "duration_ms", "tests_passed", "tests_failed", "tests_skipped",
    # transcript and rollout import (attemptdb.exchange.importers)
    "reconstructed", "reconstructed_from", "transcript_entry_type", "is_sidechain", "turn_index_hint",
))
"""Layer 1 of the attrs allowlist: every key an adapter may write (reference §2.10, golden era)."""

TOOL_CALL_KINDS = frozenset(("tool_call_started", "tool_call_finished", "tool_call_failed",
                             "permission_requested", "permission_denied"))
CONTENT_SLOTS = ("prompt", "command", "message", "error", "tool_input", "tool_output")
_TOKEN_PUNCT = "_-.:"
_I64 = 2**63 - 1
KNOWN_GIT_SUBCOMMANDS = frozenset(commands.GIT_PRIORITY + (
    "init", "config", "remote", "restore", "grep", "blame", "bisect", "submodule", "describe",
    "apply", "am", "format-patch", "clean", "gc", "reflog", "rev-parse", "ls-files", "notes",
    "sparse-checkout", "lfs", "archive", "shortlog", "range-diff", "rev-list", "ls-remote",
    "symbolic-ref", "update-index", "cat-file", "for-each-ref", "maintenance", "help", "version"))


def text(value) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def token(value, max_len: int = 64) -> bool:
    """A content-free identifier from a payload: 1–64 ASCII letters, digits or `_ - . :`."""
    if not isinstance(value, str) or not 0 < len(value) <= max_len or not value.isascii():
        return False
    v = value
    for c in _TOKEN_PUNCT:
        if c in v:
            v = v.replace(c, "")
    return not v or v.isalnum()


def integer(value) -> int | None:
    """An integer payload value (integral floats accepted, booleans not), within 64 bits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
            return None
        value = int(value)
    if isinstance(value, int) and -_I64 - 1 <= value <= _I64:
        return value
    return None


class _Unstorable:
    """The exit code of a tool that reported a nonzero number no event can hold as one (past
    signed 64 bits, or not whole): a failure, its code not recorded. Truthy, and not an int,
    so no envelope can carry it (`Draft.success`/`failure` leave it out)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "UNSTORABLE_EXIT_CODE"


UNSTORABLE = _Unstorable()


def exit_code(value):
    """An exit code a payload states: the integer (integral floats accepted) within signed 64
    bits; UNSTORABLE for any other nonzero number (18446744073709551617, 1e300, 1.5): the tool
    failed, whatever its code; None for no number (absent, a string, a boolean)."""
    code = integer(value)
    if code is not None:
        return code
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value != 0:
        return UNSTORABLE
    return None


def count(value) -> int | None:
    """A non-negative integer (durations, token counts)."""
    if isinstance(value, float) and value == value and 0 <= value < 2**63:
        value = int(value)
    v = integer(value)
    return v if v is not None and v >= 0 else None


def class_token(value, bare: bool = True) -> str | None:
    """A provider-supplied failure class, snake-cased (`Rate Limit` → `rate_limit`). With
    `bare`, the value must already be a bare token (no whitespace) to count as a class."""
    if not isinstance(value, str) or (bare and not failures.is_token(value)):
        return None
    s = failures.snake(value)
    return s if token(s, failures.TOKEN_MAX_BYTES) else None


def exit_code_of(obj):
    """The exit code a tool result reports (`exit_code`, `exitCode` or `metadata.exit_code`),
    as `exit_code` reads it: an int, UNSTORABLE or None."""
    if not isinstance(obj, dict):
        return None
    for key in ("exit_code", "exitCode"):
        code = exit_code(obj.get(key))
        if code is not None:
            return code
    meta = obj.get("metadata")
    return exit_code(meta.get("exit_code")) if isinstance(meta, dict) else None


def output_text(value) -> str | None:
    """The text of a tool output worth scanning for test summaries."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = [value[k] for k in ("output", "stdout", "stderr") if isinstance(value.get(k), str)]
        return "\n".join(parts) if parts else None
    return None


def edit_delta(ti: dict):
    """(lines added, lines removed) of an edit-shaped tool input, or None."""
    lc = signals.line_count
    old, new = ti.get("old_string"), ti.get("new_string")
    if isinstance(old, str) or isinstance(new, str):
        return (lc(new) if isinstance(new, str) else 0), (lc(old) if isinstance(old, str) else 0)
    edits = ti.get("edits")
    if isinstance(edits, list):
        added = removed = 0
        seen = False
        for e in edits:
            if isinstance(e, dict):
                o, n = e.get("old_string"), e.get("new_string")
                if isinstance(o, str) or isinstance(n, str):
                    seen = True
                    added += lc(n) if isinstance(n, str) else 0
                    removed += lc(o) if isinstance(o, str) else 0
        if seen:
            return added, removed
    content = ti.get("content")
    if isinstance(content, str):
        return lc(content), 0
    return None


class Draft:
    """One event being built by an adapter. Adapters set `kind` and call the helpers."""

    __slots__ = ("provider", "name", "root", "kind", "psid", "session_missing", "turn", "model",
                 "sub_id", "sub_type", "tool", "paths", "_logicals", "files", "outcome",
                 "duration", "observed", "provider_version", "attrs", "content")

    def __init__(self, provider: str, name: str, root: str):
        self.provider = provider
        self.name = name
        self.root = root
        self.kind = "unknown"
        self.psid = "unknown"
        self.session_missing = True
        self.turn = self.model = self.sub_id = self.sub_type = self.tool = None
        self.outcome = self.duration = self.observed = self.provider_version = None
        self.paths = []
        self._logicals = set()
        self.files = []
        self.attrs = {"hook_event_name": name} if token(name, 128) else {}
        self.content = {}

    # --- attrs and content ----------------------------------------------------------------

    def attr(self, key: str, value) -> None:
        if key not in ATTR_KEYS:
            raise ValueError(f"attrs key {key!r} is not on the adapter allowlist")
        if value is not None:
            self.attrs[key] = value

    def token_attr(self, key: str, value) -> None:
        if token(value):
            self.attr(key, value)

    def provider_attr(self, key: str, value) -> None:
        """A content-free provider scalar under attrs.provider (tokens, numbers, booleans)."""
        if isinstance(value, (bool, int)) or token(value) or (
                isinstance(value, float) and value == value and abs(value) != float("inf")):
            self.attrs.setdefault("provider", {})[key] = value

    def put(self, slot: str, value) -> None:
        """A content slot or extra key, only when non-empty."""
        if value is None or value == "" or value == {} or value == []:
            return
        if slot in ("prompt", "command", "message", "error") and not isinstance(value, str):
            return
        self.content[slot] = value

    # --- the common contract (§2.1) -------------------------------------------------------

    def common(self, p: dict, session_keys, turn_keys) -> None:
        for k in session_keys:
            v = p.get(k)
            if isinstance(v, str) and v.strip():
                self.psid, self.session_missing = v, False
                break
        else:
            self.attrs.setdefault("capture_gap", "missing_session_id")
        for k in turn_keys:
            v = p.get(k)
            if text(v):
                self.turn = v
                break
        cwd = p.get("cwd")
        if isinstance(cwd, str) and cwd.strip():
            self.attr("cwd", paths.elide_home(paths.logical_form(cwd)[0]))
        self.token_attr("permission_mode", p.get("permission_mode"))
        tp = p.get("transcript_path")
        if isinstance(tp, str) and tp:
            self.attr("transcript_present", True)
        if text(p.get("model")):
            self.model = p["model"]
        d = count(p.get("duration_ms"))
        self.duration = d if d is not None else count(p.get("duration"))
        if "timestamp" in p:
            self.observed = parse_observed(p["timestamp"])

    def subagent(self, provider_agent_id, agent_type) -> None:
        self.sub_id = provider_agent_id
        self.sub_type = text(agent_type)
        self.attr("is_subagent", True)
        self.token_attr("agent_type", agent_type)

    def prompt(self, value) -> None:
        if isinstance(value, str):
            chars, lines, fence, question = signals.prompt_facts(value)
            self.attr("prompt_chars", chars)
            self.attr("prompt_lines", lines)
            self.attr("prompt_has_code_fence", fence)
            self.attr("prompt_has_question", question)
            self.put("prompt", value)

    # --- paths ----------------------------------------------------------------------------

    def add_path(self, raw, file: bool = False) -> dict | None:
        pp = paths.portable(raw, self.root)
        if pp is None or pp["logical"] in self._logicals:
            return None
        self._logicals.add(pp["logical"])
        self.paths.append(pp)
        if file:
            self.files.append(pp["logical"])
        return pp

    def file_facts(self) -> None:
        """file_* attrs of the first file; several files add file_count, path_extensions and
        OR the booleans (any touched file)."""
        if not self.files:
            return
        ext, is_test, is_config, is_doc = paths.file_facts(self.files[0])
        exts = {ext} if ext else set()
        for f in self.files[1:]:
            e, t, c, d = paths.file_facts(f)
            if e:
                exts.add(e)
            is_test, is_config, is_doc = is_test or t, is_config or c, is_doc or d
        if ext:
            self.attr("file_ext", ext)
        self.attr("file_is_test", is_test)
        self.attr("file_is_config", is_config)
        self.attr("file_is_doc", is_doc)
        if len(self.files) > 1:
            self.attr("file_count", len(self.files))
            self.attr("path_extensions", sorted(exts))

    # --- tool calls -----------------------------------------------------------------------

    def tool_call(self, name, call_id, tool_input) -> None:
        """tool block + everything derived from the tool input + content.tool_input."""
        category = tools.category(name)
        if text(name):
            self.tool = {"name": name, "category": category}
            if text(call_id):
                self.tool["call_id"] = call_id
        is_patch = isinstance(name, str) and name.strip().lower() == "apply_patch"
        if not is_patch and category in ("shell", "other"):
            cmd = commands.command_text(tool_input)
            if cmd is not None:
                self.command(cmd)
        if isinstance(tool_input, dict):
            for key in ("file_path", "notebook_path", "path", "absolute_path"):
                self.add_path(tool_input.get(key), file=True)
            patch = None
            if is_patch:
                for key in ("patch", "input", "command"):
                    if isinstance(tool_input.get(key), str):
                        patch = tool_input[key]
                        break
            else:
                for key in ("patch", "input"):
                    if paths.looks_like_patch(tool_input.get(key)):
                        patch = tool_input[key]
                        break
            delta = None
            if patch is not None:
                files, added, removed = paths.patch_summary(patch)
                for f in files:
                    self.add_path(f, file=True)
                delta = (added, removed)
            self.file_facts()
            if delta is None:
                delta = edit_delta(tool_input)
            if delta is not None:
                self.attr("lines_added", delta[0])
                self.attr("lines_removed", delta[1])
            self.token_attr("agent_type", tool_input.get("subagent_type"))
        self.put("tool_input", tool_input)

    def command(self, cmd: str) -> None:
        category, subcategory, git_sub = commands.classify(cmd)
        self.attr("command_bytes", len(cmd.encode("utf-8", "surrogatepass")))
        self.attr("command_category", category)
        self.attr("command_subcategory", subcategory)
        if git_sub in KNOWN_GIT_SUBCOMMANDS:
            self.attr("git_subcommand", git_sub)
        self.put("command", cmd)

    def output(self, value, scan_tests: bool = False) -> None:
        """content.tool_output (bounded) and, for shell tools, the test summary counts."""
        bounded, cut = signals.bound_output(value)
        self.put("tool_output", bounded)
        if cut:
            self.attr("tool_output_truncated", True)
        if scan_tests:
            counts = signals.test_counts(output_text(value))
            if counts is not None:
                self.attr("tests_passed", counts[0])
                self.attr("tests_failed", counts[1])
                self.attr("tests_skipped", counts[2])

    def success(self, exit_code=None) -> None:
        self.outcome = {"status": "success"}
        if type(exit_code) is int:
            self.outcome["exit_code"] = exit_code

    def failure(self, message=None, cls=None, exit_code=None, status="failure") -> None:
        """A failed/cancelled outcome: class from `cls` (a token), else from the message; an
        exit code from `exit_code`, else from the message; unknown + exit code → nonzero_exit.
        An UNSTORABLE code counts as nonzero and is not recorded."""
        msg = text(message)
        text_cls, text_code = failures.classify_text(msg) if msg else ("unknown", None)
        c = cls or text_cls
        code = exit_code if exit_code is not None else text_code
        if c == "unknown" and code:
            c = "nonzero_exit"
        self.outcome = {"status": status, "class": c}
        if type(code) is int:
            self.outcome["exit_code"] = code
        self.attr("error_class", c)
        if msg:
            self.attr("error_bytes", len(msg.encode("utf-8", "surrogatepass")))
            self.put("error", msg)

    # --- the envelope ---------------------------------------------------------------------

    def envelope(self, ctx, raw=None) -> dict:
        sid = ids.session_id(self.provider, self.psid)
        top = ids.agent_id(sid)
        if self.sub_id:
            agent = {"agent_id": ids.subagent_id(sid, self.sub_id), "provider_agent_id": self.sub_id}
            if self.sub_type:
                agent["agent_type"] = self.sub_type
            agent["parent_agent_id"] = top
        else:
            agent = {"agent_id": top}
        if self.model:
            agent["model"] = self.model
        call_id = self.tool.get("call_id") if self.tool else None
        if call_id and not self.session_missing and self.kind in TOOL_CALL_KINDS:
            event_id = ids.tool_event_id(self.provider, self.psid, self.kind, call_id)
        else:
            event_id = ctx.mint_id()
        env = {
            "event_id": event_id, "schema_version": 1, "device_id": ctx.device_id,
            "source_seq": 0, "hlc": 0,
            "observed_at": clock.observed_or_captured(self.observed, ctx.captured_at),
            "captured_at": ctx.captured_at, "provider": self.provider,
        }
        pv = ctx.provider_version or self.provider_version
        if pv is not None:
            env["provider_version"] = pv
        env["adapter_version"] = ctx.adapter_version
        if ctx.hook_version is not None:
            env["hook_version"] = ctx.hook_version
        env["capture_mode"] = ctx.capture_mode
        env["provider_event_name"] = self.name
        env["kind"] = self.kind
        env["project"] = ctx.project
        env["session_id"] = sid
        env["provider_session_id"] = self.psid
        if self.turn is not None:
            env["provider_turn_id"] = self.turn
        env["agent"] = agent
        if self.tool is not None:
            env["tool"] = self.tool
        if self.paths:
            env["paths"] = self.paths
        if self.outcome is not None:
            env["outcome"] = self.outcome
        if self.duration is not None:
            env["duration_ms"] = self.duration
        if self.attrs:
            env["attrs"] = self.attrs
        if ctx.keeps_content:
            if self.content:
                c = self.content
                ordered = {k: c[k] for k in CONTENT_SLOTS if k in c}
                if len(ordered) < len(c):
                    for k in c:
                        if k not in ordered:
                            ordered[k] = c[k]
                env["content"] = ordered
            if raw is not None and ctx.keep_raw:
                env["raw"] = raw
        return env


def parse_observed(value) -> int | None:
    us = clock.observed_from_payload(value)
    if us is None or not clock.MIN_US <= us <= clock.MAX_US:
        return None
    return us
