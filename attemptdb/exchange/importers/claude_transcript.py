"""Claude Code transcripts (`~/.claude/projects/<slug>/<session>.jsonl`) → Event v1: the history
a hook did not see (reference/capture.md §5; spec/transcripts.md).

Invariants:
- Deterministic: every event id is a function of the session and the transcript's own entry
  (uuid, or `line:<n>`) and block; tool calls take the hook's ids (§5.4), so a call a hook
  already stored is a duplicate, and re-importing a transcript that grew reproduces the earlier
  events byte for byte.
- Every event says it was reconstructed (attrs `reconstructed`, `reconstructed_from`,
  `transcript_entry_type`, `transcript_present`, `turn_index_hint`; `provider_event_name`
  `transcript:…`), has no `raw` and no `hook_version`; content obeys the capture mode.
- Reasoning (thinking blocks), hook outputs, file snapshots and other bookkeeping never become
  events; text the harness injects is not a prompt; an unlisted entry type becomes a
  content-free `unknown` event. A line that is not a JSON object is counted and skipped.
- Reads a file once, holding at most one API message's entries at a time.
"""

import itertools
import os

from ...adapters import claude_code, paths
from ...adapters.draft import Draft, class_token, count, text, token
from ...model import fastjson, ids
from .base import PEEK_LINES, Report, entries, observed, result_text
from .formats import CLAUDE_SKIPPED

PROVIDER = "claude_code"
RECONSTRUCTED_FROM = "claude_code_transcript"
TERMINAL_STOPS = ("end_turn", "stop_sequence", "max_tokens", "refusal")
INTERRUPTED = "[Request interrupted by user"
SKIPPED_TYPES = CLAUDE_SKIPPED  # one list: formats.py knows them too (a file of only these is a transcript)
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class _Draft(Draft):
    """A Draft that knows the context (device, mode, project) of the entry it came from."""

    __slots__ = ("ctx",)


def session_of(lines: list) -> str | None:
    for _, e in lines:
        sid = e.get("sessionId")
        if isinstance(sid, str) and sid.strip():
            return sid
    return None


class Transcript:
    """The state of one transcript being read: session, turn, open tool calls, the pending
    entries of the current API message. `draft` and `finish` are shared with other
    reconstructions (attemptdb.exchange.importers.codex_rollout), which set the class constants."""

    provider = PROVIDER
    reconstructed_from = RECONSTRUCTED_FROM
    id_root = "transcript"

    def __init__(self, psid, ctx_for, agent=None):
        self.psid = psid
        self.ctx_for = ctx_for  # cwd, version -> adapters.Context
        self.agent = agent  # (provider agent id, agent type) of a subagent transcript
        self.turn_index = 0
        self.turn_id = None
        self.started = False
        self.turn_open = False  # a prompt came and no turn end yet
        self.turn_active = False  # the assistant did something in the open turn
        self.last_assistant = None  # (entry, key, stop_reason) of the open turn's last assistant entry
        self.duration = None
        self.calls = {}  # call id -> (name, input, server tool?)
        self.group = []  # (entry, key, message) of the API message being read
        self.group_id = None
        self.sidechain = None  # whether this transcript's own entries are sidechain (a subagent file)
        self.last_time = None  # an entry without a timestamp happened at the last one seen

    def foreign(self, entry) -> bool:
        """An entry of an inline subagent (a sidechain entry in a main transcript): its events
        are the subagent's and never open or end one of the main agent's turns."""
        return (entry.get("isSidechain") is True) != bool(self.sidechain)

    # --- events -------------------------------------------------------------------------

    def draft(self, name: str, entry: dict, kind: str) -> _Draft:
        cwd = _cwd(entry)
        ctx = self.ctx_for(cwd, text(entry.get("version")))
        d = _Draft(self.provider, "transcript:" + name, ctx.project["root"])
        d.ctx = ctx
        d.attrs = {}
        d.kind = kind
        d.psid, d.session_missing = self.psid, self.psid == "unknown"
        d.turn = self.turn_id
        d.observed = observed(entry) or self.last_time
        if self.agent is not None:
            d.subagent(self.agent[0], self.agent[1])
        elif entry.get("isSidechain") is True:
            d.subagent(entry["agentId"] if token(entry.get("agentId")) else "sidechain", None)
        return d

    def finish(self, d: _Draft, entry: dict, key: str, suffix: str) -> dict:
        cwd, ctx = _cwd(entry), d.ctx
        a = d.attrs
        d.attrs = {"provider": a.pop("provider")} if "provider" in a else {}
        if cwd:
            d.attr("cwd", paths.elide_home(paths.logical_form(cwd)[0]))
        for k, v in (("reconstructed", True), ("reconstructed_from", self.reconstructed_from),
                     ("transcript_entry_type", _entry_type(entry)), ("transcript_present", True),
                     ("turn_index_hint", self.turn_index)):
            d.attr(k, v)
        if entry.get("isSidechain") is True:
            d.attr("is_sidechain", True)
        d.attrs.update(a)
        if d.observed is None:
            d.observed = ctx.captured_at
        env = d.envelope(ctx)
        if not (d.tool and d.tool.get("call_id") and not d.session_missing):  # else the hook's id (§5.4)
            env["event_id"] = ids.derive("ev_", self.id_root, self.psid, key, suffix)
        return env

    def session_start(self, entry, key):
        if self.sidechain:  # a subagent's transcript: its parent's session started elsewhere
            d = self.draft("subagent_start", entry, "subagent_started")
            d.turn = None
            return self.finish(d, entry, key, "subagent_started")
        d = self.draft("session_start", entry, "session_started")
        d.turn = None
        d.provider_attr("entrypoint", entry.get("entrypoint"))
        d.attrs["source"] = "transcript"
        return self.finish(d, entry, key, "session_started")

    def turn_end(self, status=None):
        """turn_stopped for the open turn, at its last assistant entry."""
        if not (self.turn_open and self.turn_active and self.last_assistant):
            self.turn_open = self.turn_active = False
            return []
        entry, key, stop = self.last_assistant
        d = self.draft("turn_end", entry, "turn_stopped")
        if stop:
            d.provider_attr("stop_reason", stop)
        if self.duration is not None:
            d.duration = self.duration
        if status == "cancelled":
            d.outcome = {"status": "cancelled", "class": "interrupted"}
            d.attr("error_class", "interrupted")
        self.turn_open = self.turn_active = False
        self.duration = None
        return [self.finish(d, entry, key, "turn_end")]

    # --- entries ------------------------------------------------------------------------

    def read(self, n: int, entry: dict) -> list:
        out = []
        kind = entry.get("type") if isinstance(entry.get("type"), str) else None
        key = entry["uuid"] if text(entry.get("uuid")) else f"line:{n}"
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        if self.group and not (kind == "assistant" and msg.get("id") == self.group_id and msg.get("id")):
            out += self.flush_group()
        if observed(entry) is not None:
            self.last_time = observed(entry)
        if not self.started and text(entry.get("timestamp")):
            self.started = True
            self.sidechain = entry.get("isSidechain") is True
            out.append(self.session_start(entry, key))
        if kind == "user":
            out += self.user(entry, key, msg)
        elif kind == "assistant":
            self.group.append((entry, key, msg))
            self.group_id = msg.get("id")
            self.turn_active = self.turn_active or not self.foreign(entry)
        elif kind == "attachment":
            out += self.attachment(entry, key)
        elif kind == "system":
            out += self.system(entry, key)
        elif kind == "summary" and text(entry.get("timestamp")):  # else: when is unknown
            out.append(self.finish(self.draft("summary", entry, "compaction_finished"), entry, key,
                                   "compaction_finished"))
        elif kind == "cost-state":
            out += self.cost_state(entry, key)
        elif kind in SKIPPED_TYPES or kind == "summary":
            return out
        else:
            d = self.draft(kind if token(kind, 64) else "unknown", entry, "unknown")
            out.append(self.finish(d, entry, key, "unknown"))
        return out

    def run(self, entries, rep):
        """Every event of (line number, entry) pairs, then those the end of the file decides;
        of a file that may still grow (`rep.live`) those are only counted (`rep.held_back`):
        its next lines can change them (the message's usage, where the turn ends, its
        duration), and an event once stored never changes."""
        for n, entry in entries:
            for env in self.read(n, entry):
                rep.events += 1
                yield env
        ended = self.end()
        if rep.live:
            rep.held_back += len(ended)
            return
        for env in ended:
            rep.events += 1
            yield env

    def end(self) -> list:
        out = self.flush_group()
        if self.last_assistant and self.last_assistant[2] in TERMINAL_STOPS:
            entry, key, _ = self.last_assistant
            out += self.turn_end()
            if self.sidechain:  # a subagent whose last answer is final has stopped, there
                out.append(self.finish(self.draft("subagent_stop", entry, "subagent_stopped"), entry, key,
                                       "subagent_stopped"))
        return out

    def user(self, entry, key, msg) -> list:
        content = msg.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            out = []
            for i, b in enumerate(content):
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out += self.tool_result(entry, key, b, i)
            return out
        prompt, images = _prompt_text(content)
        if prompt is None:
            return []
        if prompt.lstrip().startswith(INTERRUPTED):
            return self.turn_end(status="cancelled")
        if entry.get("isMeta") is True or entry.get("isCompactSummary") is True or \
                claude_code.injected_source(prompt) is not None:
            return []
        out = []
        if not self.foreign(entry):
            out = self.turn_end()
            self.turn_index += 1
            self.turn_id = text(entry.get("promptId"))
            self.turn_open, self.turn_active, self.last_assistant = True, False, None
        d = self.draft("user", entry, "prompt_submitted")
        d.provider_attr("prompt_kind", "text")
        source = entry.get("promptSource")
        d.provider_attr("prompt_source", source if token(source) else "typed")
        if images:
            d.provider_attr("image_count", images)
        d.provider_attr("entrypoint", entry.get("entrypoint"))
        d.prompt(prompt)
        out.append(self.finish(d, entry, key, "prompt_submitted"))
        return out

    def attachment(self, entry, key) -> list:
        att = entry.get("attachment")
        if not isinstance(att, dict) or att.get("type") != "queued_command":
            return []
        prompt, images = _prompt_text(att.get("prompt"))
        if prompt is None or claude_code.injected_source(prompt) is not None or \
                att.get("commandMode") not in (None, "prompt"):
            return []
        self.turn_index += 1
        self.turn_id = None
        self.turn_open, self.turn_active = True, False
        d = self.draft("user", entry, "prompt_submitted")
        d.provider_attr("prompt_kind", "text")
        d.provider_attr("prompt_source", "queued_command")
        if images:
            d.provider_attr("image_count", images)
        d.prompt(prompt)
        return [self.finish(d, entry, key, "prompt_submitted")]

    def system(self, entry, key) -> list:
        sub = entry.get("subtype")
        if sub == "turn_duration":
            self.duration = count(entry.get("durationMs"))
            return self.turn_end()
        if sub == "api_error":
            d = self.draft("system:api_error", entry, "notification")
            d.attr("notification_type", "api_error")
            err = entry.get("error") if isinstance(entry.get("error"), dict) else {}
            inner = err.get("error") if isinstance(err.get("error"), dict) else {}
            inner = inner.get("error") if isinstance(inner.get("error"), dict) else inner
            cls = class_token(inner.get("type"))
            message = text(entry.get("content"))
            if message:
                d.attr("error_bytes", len(message.encode("utf-8", "surrogatepass")))
            if cls:
                d.attr("error_class", cls)
            for k, v in (("http_status", err.get("status")), ("retry_attempt", entry.get("retryAttempt")),
                         ("max_retries", entry.get("maxRetries")), ("retry_in_ms", entry.get("retryInMs"))):
                if count(v) is not None:
                    d.provider_attr(k, count(v))
            d.put("message", message)
            return [self.finish(d, entry, key, "notification")]
        if sub == "compact_boundary":
            return [self.finish(self.draft("system:compact_boundary", entry, "compaction_finished"), entry, key,
                                "compaction_finished")]
        return []

    def cost_state(self, entry, key) -> list:
        d = self.draft("cost-state", entry, "unknown")
        for k, v in entry.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and token(k):
                d.provider_attr(k, v)
        if "provider" not in d.attrs:
            return []
        return [self.finish(d, entry, key, "unknown")]

    # --- assistant messages -------------------------------------------------------------

    def flush_group(self) -> list:
        """The events of one API message (its entries share message.id): usage goes once, on
        its first event; narration followed by more of the message is interim."""
        group, self.group, self.group_id = self.group, [], None
        blocks = []
        usage = {}
        for entry, key, msg in group:
            content = msg.get("content")
            for i, b in enumerate(content if isinstance(content, list) else []):
                if isinstance(b, dict):
                    blocks.append((entry, key, msg, i, b))
            if isinstance(msg.get("usage"), dict):
                usage = msg["usage"]  # the message's final figures
        out = []
        shown = [j for j, x in enumerate(blocks) if x[4].get("type") in ("text", "tool_use", "server_tool_use")
                 or str(x[4].get("type")).endswith("_tool_result")]
        for j, (entry, key, msg, i, b) in enumerate(blocks):
            t = str(b.get("type"))
            stop = msg.get("stop_reason")
            model = text(msg.get("model"))
            if t == "text" and text(b.get("text")):
                d = self.draft("assistant:text", entry, "agent_message")
                d.model = model
                d.provider_attr("message_chars", len(b["text"]))
                if stop == "tool_use" or any(p > j for p in shown):  # every entry of a message says its stop
                    d.provider_attr("interim", True)
                d.provider_attr("stop_reason", stop if token(stop) else None)
                d.put("message", b["text"])
                out.append((d, entry, key, f"agent_message:{i}"))
            elif t in ("tool_use", "server_tool_use"):
                d = self.draft(f"assistant:{t}", entry, "tool_call_started")
                d.model = model
                d.tool_call(b.get("name"), b.get("id"), b.get("input"))
                if t == "server_tool_use":  # shape only: what it searched or fetched stays in content
                    d.attrs = {}
                    d.provider_attr("server_tool", True)
                if text(b.get("id")):
                    self.calls[b["id"]] = (b.get("name"), b.get("input"), t == "server_tool_use")
                out.append((d, entry, key, f"tool_call_started:{i}"))
            elif t.endswith("_tool_result") and t != "tool_result":
                out += [(d, entry, key, f"tool_call_end:{i}") for d in self.server_result(entry, b)]
            if (stop is not None or t in ("text", "tool_use", "server_tool_use")) and not self.foreign(entry):
                self.last_assistant = (entry, key, stop if isinstance(stop, str) else None)
        if out and usage:
            d = out[0][0]
            for k in _USAGE_KEYS:
                if count(usage.get(k)) is not None:
                    d.provider_attr(k, count(usage[k]))
            server = usage.get("server_tool_use")
            if isinstance(server, dict):
                for k, v in server.items():
                    if count(v) is not None and token(k):
                        d.provider_attr(k, count(v))
        return [self.finish(d, entry, key, suffix) for d, entry, key, suffix in out]

    def server_result(self, entry, b) -> list:
        call = text(b.get("tool_use_id"))
        name, tool_input, _ = self.calls.pop(call, (None, None, True)) if call else (None, None, True)
        content = b.get("content")
        error = None
        if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
            error = class_token(content.get("error_code")) or "unknown"
        d = self.draft("assistant:server_tool_result", entry, "tool_call_failed" if error else "tool_call_finished")
        d.tool_call(name or b.get("type", "server_tool").replace("_tool_result", ""), call, None)
        d.attrs = {}
        d.provider_attr("server_tool", True)
        if tool_input:
            d.content = {"tool_input": tool_input}
        if error:
            d.outcome = {"status": "failure", "class": error}
            d.attr("error_class", error)
        else:
            d.outcome = {"status": "success"}
            if isinstance(content, list):
                d.provider_attr("result_count", len(content))
        return [d]

    def tool_result(self, entry, key, b, i) -> list:
        call = text(b.get("tool_use_id"))
        name, tool_input, _ = self.calls.pop(call, (None, None, False)) if call else (None, None, False)
        output = result_text(b.get("content"))
        failed = b.get("is_error") is True
        rejected = failed and isinstance(output, str) and "doesn't want to proceed" in output
        d = self.draft("user:tool_result", entry, "tool_call_failed" if failed else "tool_call_finished")
        self.turn_active = self.turn_active or not self.foreign(entry)
        d.tool_call(name, call, tool_input)
        d.output(output, scan_tests=d.tool is not None and d.tool["category"] == "shell" and not failed)
        if rejected:
            d.outcome = {"status": "denied"}
        elif failed and isinstance(output, str) and output.lstrip().startswith(INTERRUPTED):
            d.failure(output, cls="interrupted", status="cancelled")
        elif failed:
            d.failure(output)
        else:
            d.success()
        return [self.finish(d, entry, key, f"tool_call_end:{i}")]


def _cwd(entry) -> str | None:
    cwd = entry.get("cwd")
    return cwd if isinstance(cwd, str) and cwd.strip() else None


def _entry_type(entry) -> str:
    t = entry.get("type")
    return t if token(t, 64) else "unknown"


def _prompt_text(content) -> tuple:
    """(prompt text or None, image count) of a user message's content."""
    if isinstance(content, str):
        return (content if content.strip() else None), 0
    if not isinstance(content, list):
        return None, 0
    texts, images = [], 0
    for b in content:
        if isinstance(b, dict):
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif b.get("type") == "image":
                images += 1
    joined = "\n".join(texts)
    return (joined if joined.strip() else None), images


def events(stream, ctx_for, *, session_hint: str | None = None, agent=None, report: Report | None = None):
    """Yield the canonical envelopes of one transcript (a binary stream). `ctx_for(cwd,
    provider_version)` gives the adapters.Context of an entry (device, capture mode, project)."""
    rep = report or Report()
    lines = entries(stream, rep)
    head = list(itertools.islice(lines, PEEK_LINES))
    psid = session_of(head) or (session_hint if text(session_hint) else None) or "unknown"
    rep.session = psid
    yield from Transcript(psid, ctx_for, agent).run(itertools.chain(head, lines), rep)


def projects_dirs() -> list:
    """Where Claude Code keeps transcripts: $CLAUDE_CONFIG_DIR/projects and ~/.claude/projects."""
    out = []
    for base in (os.environ.get("CLAUDE_CONFIG_DIR"), os.path.join(os.path.expanduser("~"), ".claude")):
        if base:
            d = os.path.join(base, "projects")
            if os.path.isdir(d) and d not in out:
                out.append(d)
    return out


def slug(directory: str) -> str:
    """Claude Code's folder name for a working directory: every non-alphanumeric char → `-`."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in directory)


def discover(paths=(), *, all_projects: bool = False, cwd: str | None = None) -> list:
    """Transcript files, sorted: each PATH (a file, or a directory searched for *.jsonl), else
    the transcripts of `cwd`'s repository (or of every project with `all_projects`)."""
    found = []

    def walk(d):
        # a linked folder is followed (a project directory linked from elsewhere holds
        # transcripts too), each real folder once: a link back up is no loop
        seen = {os.path.realpath(d)}
        for root, dirs, files in os.walk(d, followlinks=True):
            dirs.sort()
            keep = []
            for name in dirs:
                real = os.path.realpath(os.path.join(root, name))
                if real not in seen:
                    seen.add(real)
                    keep.append(name)
            dirs[:] = keep
            # regular files only (a symlink to one too): a FIFO or a device would block the read
            # or never end, a dangling or looping symlink cannot be read
            found.extend(p for p in (os.path.join(root, f) for f in sorted(files) if f.endswith(".jsonl"))
                         if os.path.isfile(p))

    if paths:
        for p in paths:
            if os.path.isdir(p):
                walk(p)
            elif os.path.isfile(p):
                found.append(p)
            else:
                from ...errors import AttemptError
                what = "not a regular file or directory" if os.path.lexists(p) else "no such file or directory"
                raise AttemptError("import.unreadable", f"{what}: {p}")
        return found
    for d in projects_dirs():
        if all_projects:
            walk(d)
        else:
            here = os.path.join(d, slug(os.path.abspath(cwd or os.getcwd())))
            if os.path.isdir(here):
                walk(here)
    return found


def _subagent_of(path: str):
    """(provider agent id, agent type) of a subagent transcript `…/subagents/…/agent-<id>.jsonl`
    (type from its `agent-<id>.meta.json`), else None."""
    name = os.path.basename(path)
    if not (name.startswith("agent-") and f"{os.sep}subagents{os.sep}" in os.path.abspath(path)):
        return None
    agent_id = name[len("agent-"):-len(".jsonl")]
    agent_type = None
    try:
        with open(path[:-len(".jsonl")] + ".meta.json", "rb") as f:
            meta = fastjson.loads(f.read(1 << 20).decode("utf-8"), exact_errors=False)
        if isinstance(meta, dict) and token(meta.get("agentType")):
            agent_type = meta["agentType"]
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    return (agent_id, agent_type) if token(agent_id) else None


def claude_reader(f, ctx_for, path, report):
    stem = os.path.basename(path)[:-len(".jsonl")] if path.endswith(".jsonl") else None
    return events(f, ctx_for, session_hint=stem, agent=_subagent_of(path), report=report)


