"""Codex rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`) → Event v1: the history no
hook saw (reference/capture.md §5.6; spec/transcripts.md).

Invariants: as attemptdb.exchange.importers.claude_transcript — deterministic ids (tool calls take the
hooks' ids by call id; everything else `["rollout", session, ordinal or line, kind]`),
reconstructed marks, no raw, content by capture mode, hostile lines skipped and counted. Both
encodings are read: the classic one (`response_item` calls and outputs, `event_msg`
user/agent messages) and the modern one (`event_msg` `item_completed` items). A fact that both
carry is stored once: prompts and messages come only from `event_msg`, a call from whichever
encoding names its call id first (the second is the same event id, a duplicate). Reasoning,
developer and environment context, token records and settings never become events; an
unlisted `event_msg` type becomes a content-free `unknown` event. An exit code (an item's or
metadata's number, a `Process exited with code N` line) is read as the adapters read one
(`attemptdb.adapters.draft.exit_code`): any nonzero code is a failure, recorded only within
signed 64 bits (spec/canonical-event.md).
"""

import itertools
import os

from ...adapters import commands
from ...adapters.draft import UNSTORABLE, class_token, count, text, token
from ...adapters.draft import exit_code as read_exit_code
from ...model import fastjson
from .base import PEEK_LINES, Report, entries, observed
from .base import result_text as _item_text
from .claude_transcript import Transcript

PROVIDER = "codex"
RECONSTRUCTED_FROM = "codex_rollout"
SKIPPED_ITEMS = frozenset(("UserMessage", "AgentMessage", "Reasoning", "ContextCompaction"))
SKIPPED_EVENTS = frozenset((
    "token_count", "user_message", "agent_message", "agent_reasoning",
    "context_compacted", "item_started", "thread_settings_applied", "patch_apply_begin",
    "exec_command_begin", "exec_command_end", "mcp_tool_call_begin", "web_search_begin",
    "image_generation_begin", "item_updated",
))
_EXIT = "Process exited with code "


class _Rollout(Transcript):
    provider = PROVIDER
    reconstructed_from = RECONSTRUCTED_FROM
    id_root = "rollout"

    def __init__(self, psid, ctx_for, thread=None, parent=None, own_turns=frozenset(), own_from=None):
        super().__init__(psid, ctx_for, (thread, None) if parent else None)
        self.thread = thread
        self.own_turns = own_turns  # a subagent's turns, when its rollout names them
        self.own_from = own_from  # the ordinal where a subagent's own history starts, when its meta says
        self.own_reached = False
        self.cwd = None
        self.model = None
        self.version = None

    def _entry(self, entry) -> dict:
        """What draft/finish read from an entry: its time, the session's cwd and version."""
        e = {"timestamp": entry.get("timestamp"), "type": entry.get("type")}
        if self.cwd:
            e["cwd"] = self.cwd
        if self.version:
            e["version"] = self.version
        return e

    def read(self, n: int, entry: dict) -> list:
        if isinstance(entry.get("timestamp"), str):
            self.last_time = observed(entry) or self.last_time
        kind = entry.get("type") if isinstance(entry.get("type"), str) else None
        p = entry.get("payload") if isinstance(entry.get("payload"), dict) else {}
        key = str(entry["ordinal"]) if isinstance(entry.get("ordinal"), int) else f"line:{n}"
        e = self._entry(entry)
        out = []
        if kind == "session_meta":
            if self.started:
                return out  # a later meta is inherited context (a subagent's parent)
            self.cwd = text(p.get("cwd"))
            self.version = text(p.get("cli_version"))
            e = self._entry(entry)
            self.started = True
            if self.agent is not None:  # a subagent's thread: its parent's session started elsewhere
                return [self.finish(self.draft("subagent_start", e, "subagent_started"), e, key, "subagent_started")]
            d = self.draft("session_start", e, "session_started")
            d.turn = None
            d.provider_attr("originator", p.get("originator"))
            d.provider_attr("source", p.get("source"))
            d.attrs["source"] = "transcript"
            return [self.finish(d, e, key, "session_started")]
        if self.inherited(kind, p, entry.get("ordinal")):
            return out
        if kind == "turn_context":
            self.cwd = text(p.get("cwd")) or self.cwd
            self.model = text(p.get("model")) or self.model
            self.turn_id = text(p.get("turn_id")) or self.turn_id
            return out
        if kind == "compacted":
            return [self.finish(self.draft("compacted", e, "compaction_finished"), e, key, "compaction_finished")]
        if kind == "response_item":
            return self.response_item(e, key, p)
        if kind == "event_msg":
            return self.event_msg(e, key, p)
        if kind in ("world_state", "token_usage_record"):
            return out
        d = self.draft(kind if token(kind, 64) else "unknown", e, "unknown")
        return [self.finish(d, e, key, "unknown")]

    def inherited(self, kind, p, ordinal) -> bool:
        """A subagent's rollout starts with its parent's history, skipped: when its meta names
        the ordinal where its own history starts (`subagent_history_start_ordinal`), every entry
        before the first one at or past that ordinal; else the entries of a turn that is not the
        subagent's own (known from the items that name the subagent's thread)."""
        if self.own_from is not None:
            if isinstance(ordinal, int) and not isinstance(ordinal, bool) and ordinal >= self.own_from:
                self.own_reached = True
            return not self.own_reached
        if not self.own_turns:
            return False
        if kind == "turn_context" or (kind == "event_msg" and p.get("type") == "task_started"):
            self.turn_id = text(p.get("turn_id")) or self.turn_id
        return self.turn_id not in self.own_turns

    def end(self) -> list:
        if self.agent is not None and self.started and self.last_time is not None:
            e = {"timestamp": None, "type": "end"}
            d = self.draft("subagent_stop", e, "subagent_stopped")
            return [self.finish(d, e, "end", "subagent_stopped")]
        return []

    # --- prompts, messages, turns -----------------------------------------------------------

    def prompt(self, e, key, prompt, turn_id) -> list:
        from ...adapters import claude_code
        if prompt is None or claude_code.injected_source(prompt) is not None or \
                prompt.lstrip().startswith("<environment_context>"):
            return []
        self.turn_index += 1
        self.turn_id = text(turn_id) or self.turn_id
        d = self.draft("user", e, "prompt_submitted")
        d.provider_attr("prompt_kind", "text")
        d.prompt(prompt)
        return [self.finish(d, e, key, "prompt_submitted")]

    def message(self, e, key, message, phase) -> list:
        if not text(message):
            return []
        d = self.draft("agent_message", e, "agent_message")
        d.model = self.model
        d.provider_attr("message_chars", len(message))
        d.provider_attr("phase", phase if token(phase) else None)
        d.put("message", message)
        return [self.finish(d, e, key, "agent_message")]

    def turn_end(self, e, key, p, aborted=False) -> list:
        if text(p.get("turn_id")):
            self.turn_id = p["turn_id"]
        error = p.get("error") if isinstance(p.get("error"), dict) else None
        kind = "turn_failed" if aborted or error else "turn_stopped"
        d = self.draft("turn_aborted" if aborted else "task_complete", e, kind)
        dur = count(p.get("duration_ms"))
        if dur is not None:
            d.duration = dur
        if aborted:
            d.failure(cls=class_token(p.get("reason")) or "interrupted", status="cancelled")
        elif error:
            d.failure(error.get("message"), cls=class_token(p.get("codex_error_info") or error.get("codex_error_info")))
        return [self.finish(d, e, key, "turn_end")]

    # --- tool calls --------------------------------------------------------------------------

    def call(self, e, key, name, call_id, tool_input) -> list:
        d = self.draft("tool_call", e, "tool_call_started")
        d.model = self.model
        d.tool_call(name, call_id, tool_input)
        if text(call_id):
            self.calls[call_id] = (name, tool_input, False)
        return [self.finish(d, e, key, "tool_call_started")]

    def result(self, e, key, call_id, output, *, name=None, tool_input=None, failed=None, exit_code=None,
               error=None, duration=None) -> list:
        known = self.calls.pop(call_id, None) if text(call_id) else None
        if known:
            name, tool_input = name or known[0], tool_input if tool_input is not None else known[1]
        if exit_code is None and isinstance(output, str) and _EXIT in output:
            exit_code = _stated_exit_code(output)
        if failed is None:
            failed = bool(exit_code) or error is not None
        d = self.draft("tool_result", e, "tool_call_failed" if failed else "tool_call_finished")
        d.tool_call(name, call_id, tool_input)
        d.output(output, scan_tests=d.tool is not None and d.tool["category"] == "shell" and not failed)
        if duration is not None:
            d.duration = duration
        if failed:
            d.failure(error or (output if isinstance(output, str) else None), exit_code=exit_code)
        else:
            d.success(exit_code)
        return [self.finish(d, e, key, "tool_call_end")]

    def pair(self, e, key, name, call_id, tool_input, output, **kw) -> list:
        """A call the rollout records only once it completed: its start and its end."""
        return self.call(e, key, name, call_id, tool_input) + \
            self.result(e, key, call_id, output, name=name, tool_input=tool_input, **kw)

    def response_item(self, e, key, p) -> list:
        t = p.get("type")
        if t == "function_call":
            args = p.get("arguments")
            try:
                tool_input = fastjson.loads(args, exact_errors=False) if isinstance(args, str) else args
            except ValueError:
                tool_input = args
            return self.call(e, key, p.get("name"), p.get("call_id"), tool_input)
        if t == "custom_tool_call":
            name = p.get("name")
            return self.call(e, key, name, p.get("call_id"), {"input": p.get("input")} if name == "apply_patch"
                             else p.get("input"))
        if t in ("function_call_output", "custom_tool_call_output"):
            output = p.get("output")
            exit_code = None
            if t == "custom_tool_call_output" and isinstance(output, str) and output.startswith("{"):
                try:
                    parsed = fastjson.loads(output, exact_errors=False)
                    if isinstance(parsed, dict):
                        meta = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
                        exit_code = read_exit_code(meta.get("exit_code"))
                        output = parsed.get("output", output)
                except ValueError:
                    pass
            if isinstance(output, list):
                output = _item_text(output)
            return self.result(e, key, p.get("call_id"), output, exit_code=exit_code)
        return []  # messages (their event_msg twins are stored), reasoning, searches (their _end events)

    def event_msg(self, e, key, p) -> list:
        t = p.get("type")
        if t == "user_message":
            return self.prompt(e, key, p.get("message") if isinstance(p.get("message"), str) else None, None)
        if t == "agent_message":
            return self.message(e, key, p.get("message"), p.get("phase"))
        if t == "task_complete":
            return self.turn_end(e, key, p)
        if t == "turn_aborted":
            return self.turn_end(e, key, p, aborted=True)
        if t == "thread_rolled_back":
            d = self.draft("thread_rolled_back", e, "notification")
            d.attr("notification_type", "thread_rolled_back")
            d.provider_attr("num_turns", count(p.get("num_turns")))
            return [self.finish(d, e, key, "notification")]
        if t == "item_completed":
            item = p.get("item") if isinstance(p.get("item"), dict) else {}
            if self.thread and text(p.get("thread_id")) and p["thread_id"] != self.thread:
                return []  # a parent's item, inherited into a subagent's rollout
            return self.item(e, key, item, p.get("turn_id"))
        if t == "web_search_end":
            return self.pair(e, key, "web_search", p.get("call_id"), {"query": p.get("query")}, None)
        if t == "image_generation_end":
            failed = p.get("status") not in (None, "completed")
            return self.pair(e, key, "image_generation", p.get("call_id"), None, None, failed=failed)
        if t == "mcp_tool_call_end":
            inv = p.get("invocation") if isinstance(p.get("invocation"), dict) else {}
            res = p.get("result") if isinstance(p.get("result"), dict) else {}
            failed = "Err" in res or (isinstance(res.get("Ok"), dict) and res["Ok"].get("isError") is True)
            return self.pair(e, key, _mcp_name(inv.get("server"), inv.get("tool")), p.get("call_id"),
                             inv.get("arguments"), None, failed=failed)
        if t == "task_started":
            self.turn_id = text(p.get("turn_id")) or self.turn_id
            return []
        if t == "patch_apply_end":
            return []  # the custom_tool_call apply_patch with the same call id carries it
        if isinstance(t, str) and t in SKIPPED_EVENTS:
            return []
        d = self.draft(t if token(t, 64) else "unknown", e, "unknown")
        return [self.finish(d, e, key, "unknown")]

    def item(self, e, key, item, turn_id) -> list:
        t = item.get("type")
        iid = item.get("id")
        if t == "UserMessage":
            return self.prompt(e, key, _item_text(item.get("content")), turn_id)
        if t == "AgentMessage":
            return self.message(e, key, _item_text(item.get("content")), item.get("phase"))
        if t == "CommandExecution":
            cmd = item.get("command")
            if isinstance(cmd, list) and all(isinstance(x, str) for x in cmd):
                cmd = commands.command_text({"command": cmd}) or " ".join(cmd)
            code = read_exit_code(item.get("exit_code"))
            failed = item.get("status") == "failed" or bool(code)
            return self.pair(e, key, "exec_command", iid, {"cmd": cmd} if isinstance(cmd, str) else None,
                             item.get("aggregated_output"), failed=failed, exit_code=code,
                             duration=_duration(item.get("duration")))
        if t == "FileChange":
            changes = item.get("changes") if isinstance(item.get("changes"), dict) else {}
            paths = [k for k in changes if isinstance(k, str)]
            tool_input = {"path": paths[0]} if len(paths) == 1 else {"paths": paths}
            return self.pair(e, key, "apply_patch", iid, tool_input, None,
                             failed=item.get("status") not in (None, "completed"))
        if t == "McpToolCall":
            err = item.get("error") if isinstance(item.get("error"), dict) else None
            return self.pair(e, key, _mcp_name(item.get("server"), item.get("tool")), iid, item.get("arguments"),
                             None, failed=err is not None or item.get("status") == "failed",
                             error=err.get("message") if err else None, duration=_duration(item.get("duration")))
        if t == "ImageView":
            return self.pair(e, key, "view_image", iid, {"path": item.get("path")}, None)
        if t == "Extension":
            name = item.get("kind") if token(item.get("kind")) else "extension"
            return self.pair(e, key, name, iid, None, None, failed=item.get("status") == "failed")
        if isinstance(t, str) and t in SKIPPED_ITEMS:
            return []
        d = self.draft("item" if not token(t, 64) else f"item:{t}", e, "unknown")
        return [self.finish(d, e, key, "unknown")]


def _stated_exit_code(output: str):
    """The exit code of a `Process exited with code N` line, read as the adapters read one
    (`attemptdb.adapters.draft.exit_code`): an int within signed 64 bits, UNSTORABLE for a
    nonzero code past them (a failure, its code not recorded), None for no number."""
    tail = output.split(_EXIT, 1)[1].split("\n", 1)[0].strip()
    digits = tail[1:] if tail[:1] == "-" else tail
    if not (digits.isascii() and digits.isdigit()):
        return None
    significant = digits.lstrip("0")
    if len(significant) > 19:  # past 2**63 whatever its sign: never converted (int() stops at 4,300 digits)
        return UNSTORABLE
    return read_exit_code(int(tail))


def _duration(d):
    if isinstance(d, dict):
        secs, nanos = count(d.get("secs")), count(d.get("nanos"))
        if secs is not None:
            return secs * 1000 + (nanos or 0) // 1_000_000
    return None


def _mcp_name(server, tool):
    return f"mcp__{server}__{tool}" if token(server) and token(tool) else "mcp"


def events(stream, ctx_for, *, report: Report | None = None):
    """Yield the canonical envelopes of one rollout (a binary stream). Its session_meta is looked
    for in the first PEEK_LINES lines (a rollout opens with it). A subagent's inherited prefix is
    decided by the meta's `subagent_history_start_ordinal` when it names one and the entries carry
    ordinals, streaming; else by the turns its items name, which takes the whole rollout in
    memory first (those items can come after a parent history of any length)."""
    rep = report or Report()
    lines = entries(stream, rep)
    head = list(itertools.islice(lines, PEEK_LINES))
    at, meta = next(((e.get("ordinal"), e["payload"]) for _, e in head if e.get("type") == "session_meta"
                     and isinstance(e.get("payload"), dict)), (None, {}))
    thread = text(meta.get("id"))
    parent = text(meta.get("parent_thread_id"))
    psid = text(meta.get("session_id")) or thread or "unknown"
    rep.session = psid
    sub = thread is not None and thread != psid and parent is not None
    start = count(meta.get("subagent_history_start_ordinal")) if sub else None
    own = frozenset()
    if start is None or count(at) is None:  # no ordinals to go by
        start = None
        if sub:
            head += list(lines)
            own = frozenset(e["payload"]["turn_id"] for _, e in head
                            if e.get("type") == "event_msg" and isinstance(e.get("payload"), dict)
                            and e["payload"].get("thread_id") == thread and text(e["payload"].get("turn_id")))
    r = _Rollout(psid, ctx_for, thread=thread if sub else None, parent=parent if sub else None, own_turns=own,
                 own_from=start)
    yield from r.run(itertools.chain(head, lines), rep)


def read(f, ctx_for, path, report):
    """The reader `base.import_files` takes."""
    return events(f, ctx_for, report=report)


def discover(paths=(), *, days: int = 30, now: float | None = None) -> list:
    """Rollout files, sorted: each PATH (a file, or a directory searched for *.jsonl), else
    `$CODEX_HOME/sessions` and `archived_sessions` (default ~/.codex), modified in the last
    `days` days (0: all)."""
    import time

    from .claude_transcript import discover as files_in
    if paths:
        return files_in(paths)
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    dirs = [d for d in (os.path.join(home, "sessions"), os.path.join(home, "archived_sessions")) if os.path.isdir(d)]
    found = files_in(dirs) if dirs else []
    if days:
        cutoff = (time.time() if now is None else now) - days * 86400
        found = [f for f in found if os.path.getmtime(f) >= cutoff]
    return found
