"""Event v1: validation, the canonical form, its one-line text, and the `events` row shape.

Invariants:
- `validate` accepts exactly the documents `spec/event-v1.schema.json` accepts (a test holds it
  against that schema and the anchor's with generated cases), without importing jsonschema.
- `canonical` orders keys as the Event v1 codec does (FIELD_ORDER; nested blocks in their own
  order; `attrs`, `content`, `raw` and `x_*` keys keep the writer's order), omits empty
  `attrs`/`paths`, writes `source_seq`/`hlc` always and `agent` always.
- `parse_line` (every imported line: `import jsonl`, bundles, sync segments, proofs) also holds
  `attrs` to their bounds (`attrs_problem`: strings ≤ 256 UTF-8 bytes, keys ≤ 64, int64,
  one level of nesting, ≤ 16 KiB as JSON), stricter than the schema: a line that breaks one is
  refused, never rewritten (spec/canonical-event.md "Bounds on attrs").
- The canonical line is compact JSON (`,`/`:`, non-ASCII kept) of the canonical form. It is
  what `attempt events --jsonl` prints and what `event_hash` is the SHA-256 of; it is assembled
  from a stored row by `line_from_row`, the one function both append and verify use.
"""

from ..errors import AttemptError
from . import clock, fastjson, ids, payload

KINDS = (
    "session_started", "session_ended", "prompt_submitted", "tool_call_started",
    "tool_call_finished", "tool_call_failed", "permission_requested", "permission_denied",
    "notification", "agent_message", "turn_stopped", "turn_failed", "subagent_started",
    "subagent_stopped", "task_created", "task_completed", "compaction_started",
    "compaction_finished", "config_changed", "cwd_changed", "file_changed", "worktree_created",
    "worktree_removed", "correction", "retraction", "capture_test", "unknown",
)
TOOL_CATEGORIES = ("shell", "file_read", "file_write", "file_edit", "search", "web", "mcp",
                   "subagent", "plan", "notebook", "other")
OUTCOME_STATUSES = ("success", "failure", "denied", "cancelled", "unknown")
CAPTURE_MODES = ("metadata_only", "local_semantic", "full_sync")

FIELD_ORDER = (
    "event_id", "schema_version", "device_id", "source_seq", "hlc", "observed_at",
    "captured_at", "ingested_at", "provider", "provider_version", "adapter_version",
    "hook_version", "capture_mode", "provider_event_name", "kind", "project", "session_id",
    "provider_session_id", "provider_turn_id", "span_id", "parent_span_id", "agent", "tool",
    "paths", "outcome", "duration_ms", "attrs", "content", "raw",
)
REQUIRED = ("event_id", "schema_version", "device_id", "observed_at", "captured_at", "provider",
            "adapter_version", "capture_mode", "provider_event_name", "kind", "project",
            "session_id", "provider_session_id")
PROJECT_ORDER = ("project_id", "root", "name", "repo_remote", "branch", "head")
AGENT_ORDER = ("agent_id", "provider_agent_id", "agent_type", "parent_agent_id", "model")
TOOL_ORDER = ("name", "category", "call_id")
PATH_ORDER = ("original", "logical", "repo_relative", "drive", "unc")
OUTCOME_ORDER = ("status", "class", "exit_code")
_KNOWN = frozenset(FIELD_ORDER)
MAX_LINE = 64 << 20  # bytes: the longest canonical line a reader takes in (longer is read past)
_I64 = 2**63 - 1
_CLOCK_MAX = 2**62
# bounds on attrs (spec/canonical-event.md "Bounds on attrs"; attrs_problem below)
MAX_ATTR_STRING = 256
"""Longest attrs string in UTF-8 bytes (the original's rule; reference capture.md §2.10)."""
MAX_ATTR_KEY = 64
"""Longest attrs key, and key of a member of an attrs object, in UTF-8 bytes."""
MAX_ATTRS_BYTES = 16 << 10
"""Largest `attrs` as compact JSON (its text in the canonical line), in UTF-8 bytes."""
ATTR_INT_MIN, ATTR_INT_MAX = -2**63, 2**63 - 1


class EventError(AttemptError, ValueError):
    """An envelope that is not valid Event v1 (`event.invalid`). `path` is a JSON path
    (`$.project.root`); `str()` is `path: message`."""

    def __init__(self, path: str, message: str):
        super().__init__("event.invalid", message)
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


# --- validation ---------------------------------------------------------------------------

def _is_int(v) -> bool:
    # JSON Schema "integer": any number with a zero fractional part, never a boolean
    if type(v) is int:
        return True
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and v == v and v not in (float("inf"), float("-inf")) and v.is_integer()


_KEY_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"


def _is_x_key(k: str) -> bool:
    return len(k) >= 3 and k.startswith("x_") and not k[2:].strip(_KEY_CHARS)


def _is_attr_key(k: str) -> bool:
    return bool(k) and "a" <= k[0] <= "z" and not k.strip(_KEY_CHARS)


_ATTR_KEYS_SEEN: set = set()
"""attrs keys `validate` found attr-shaped (and no longer than MAX_ATTR_KEY), a bounded memo."""


def _need_str(obj, key, path, min_len=0):
    v = obj[key]
    if not isinstance(v, str):
        raise EventError(f"{path}.{key}", "must be a string")
    if len(v) < min_len:
        raise EventError(f"{path}.{key}", "must not be empty")


def _need_uuid(obj, key, path):
    if not ids.is_uuid(obj[key]):
        raise EventError(f"{path}.{key}", "must be a lowercase hyphenated UUID")


def _block(obj, path, order, required, check):
    if not isinstance(obj, dict):
        raise EventError(path, "must be an object")
    for k in obj:
        if k not in order:
            raise EventError(f"{path}.{k}", "is not allowed here")
    for k in required:
        if k not in obj:
            raise EventError(f"{path}.{k}", "is required")
    for k in obj:
        check(obj, k, path)


def _check_project(o, k, p):
    (_need_uuid if k == "project_id" else _need_str)(o, k, p)


def _check_agent(o, k, p):
    (_need_uuid if k in ("agent_id", "parent_agent_id") else _need_str)(o, k, p)


def _check_tool(o, k, p):
    if k == "category":
        if o[k] not in TOOL_CATEGORIES:
            raise EventError(f"{p}.{k}", "is not a tool category")
    else:
        _need_str(o, k, p)


def _check_path(o, k, p):
    if k == "unc":
        if not isinstance(o[k], bool):
            raise EventError(f"{p}.{k}", "must be a boolean")
    else:
        _need_str(o, k, p)


def _check_outcome(o, k, p):
    if k == "status":
        if o[k] not in OUTCOME_STATUSES:
            raise EventError(f"{p}.{k}", "is not an outcome status")
    elif k == "exit_code":
        if not _is_int(o[k]):
            raise EventError(f"{p}.{k}", "must be an integer")
    else:
        _need_str(o, k, p)


def validate(env) -> None:
    """Raise EventError at the first rule `env` breaks; return None when it is Event v1."""
    if not isinstance(env, dict):
        raise EventError("$", "an event must be a JSON object")
    if not _KNOWN.issuperset(env):
        for k in env:
            if k not in _KNOWN and not _is_x_key(k):
                raise EventError(f"$.{k}", "unknown top-level field (extensions must be named x_<name>)")
    for k in REQUIRED:
        if k not in env:
            raise EventError(f"$.{k}", "is required")
    for k in ("event_id", "device_id", "session_id", "span_id", "parent_span_id"):
        if k in env:
            _need_uuid(env, k, "$")
    sv = env["schema_version"]
    if not _is_int(sv) or sv != 1:
        raise EventError("$.schema_version", "must be 1")
    for k in ("source_seq", "hlc", "duration_ms"):
        if k in env and (not _is_int(env[k]) or env[k] < 0):
            raise EventError(f"$.{k}", "must be an integer >= 0")
    for k in ("observed_at", "captured_at", "ingested_at"):
        if k in env and not _is_int(env[k]):
            raise EventError(f"$.{k}", "must be an integer (microseconds since the epoch)")
    for k, n in (("provider", 1), ("adapter_version", 1), ("provider_event_name", 1),
                 ("provider_version", 0), ("hook_version", 0), ("provider_session_id", 0),
                 ("provider_turn_id", 0)):
        if k in env:
            _need_str(env, k, "$", n)
    if env["capture_mode"] not in CAPTURE_MODES:
        raise EventError("$.capture_mode", "must be metadata_only, local_semantic or full_sync")
    if env["kind"] not in KINDS:
        raise EventError("$.kind", "is not an Event v1 kind")
    _block(env["project"], "$.project", PROJECT_ORDER, ("project_id", "root", "name"), _check_project)
    if "agent" in env:
        _block(env["agent"], "$.agent", AGENT_ORDER, (), _check_agent)
    if "tool" in env:
        _block(env["tool"], "$.tool", TOOL_ORDER, ("name", "category"), _check_tool)
    if "paths" in env:
        if not isinstance(env["paths"], list):
            raise EventError("$.paths", "must be an array")
        for i, p in enumerate(env["paths"]):
            _block(p, f"$.paths[{i}]", PATH_ORDER, ("original", "logical"), _check_path)
    if "outcome" in env:
        _block(env["outcome"], "$.outcome", OUTCOME_ORDER, ("status",), _check_outcome)
    if "attrs" in env:
        attrs = env["attrs"]
        if not isinstance(attrs, dict):
            raise EventError("$.attrs", "must be an object")
        if not _ATTR_KEYS_SEEN.issuperset(attrs):  # the same few keys recur on every event
            for k in attrs:
                if not _is_attr_key(k):
                    raise EventError("$.attrs", "keys must match ^[a-z][a-z0-9_]*$")
            if len(_ATTR_KEYS_SEEN) > 4096:
                _ATTR_KEYS_SEEN.clear()
            _ATTR_KEYS_SEEN.update(k for k in attrs if len(k) <= MAX_ATTR_KEY)
    if "content" in env:
        c = env["content"]
        if not isinstance(c, dict):
            raise EventError("$.content", "must be an object")
        for k in ("prompt", "command", "message", "error"):
            if k in c:
                _need_str(c, k, "$.content")


# --- canonical form -----------------------------------------------------------------------

def _ordered(obj: dict, order) -> dict:
    out = {}
    for k in order:
        if k in obj:
            v = obj[k]
            out[k] = int(v) if isinstance(v, float) else v
    return out


def canonical(env: dict) -> dict:
    """The canonical form of a valid envelope (see module invariants). Does not validate."""
    out = {}
    for k in FIELD_ORDER:
        if k in env:
            v = env[k]
            if k == "project":
                v = _ordered(v, PROJECT_ORDER)
            elif k == "agent":
                v = _ordered(v, AGENT_ORDER)
            elif k == "tool":
                v = _ordered(v, TOOL_ORDER)
            elif k == "outcome":
                v = _ordered(v, OUTCOME_ORDER)
            elif k == "paths":
                if not v:
                    continue
                v = [_ordered(p, PATH_ORDER) for p in v]
            elif k == "attrs" and not v:
                continue
            elif isinstance(v, float) and k not in ("raw",):
                v = int(v)
            out[k] = v
        elif k in ("source_seq", "hlc"):
            out[k] = 0
        elif k == "agent":
            out[k] = {}
    if not _KNOWN.issuperset(env):
        for k in env:
            if k not in _KNOWN:
                out[k] = env[k]
    return out


def line(env: dict) -> str:
    """Canonical line of an envelope already in canonical form."""
    return fastjson.dumps(env)


# --- the events row -----------------------------------------------------------------------

COLUMNS = (
    "event_id", "schema_version", "device_id", "source_seq", "hlc", "observed_at",
    "captured_at", "ingested_at", "provider", "provider_version", "adapter_version",
    "hook_version", "capture_mode", "provider_event_name", "kind", "project_id",
    "project_root", "project_name", "repo_remote", "branch", "head", "session_id",
    "provider_session_id", "provider_turn_id", "span_id", "parent_span_id", "agent_id",
    "agent_type", "parent_agent_id", "model", "provider_agent_id", "tool_name",
    "tool_category", "tool_call_id", "path_logical", "path_relative", "paths_json",
    "outcome_status", "outcome_class", "exit_code", "duration_ms", "attrs_json",
    "content_json", "raw_json", "unknown_json", "path_objects_json",
)
"""Stored columns written at append, in INSERT order (storage columns seq/event_hash/chain_hash
and the projection-maintained `retracted` are added by the store)."""
_C = {name: i for i, name in enumerate(COLUMNS)}
_I_CONTENT, _I_RAW, _I_PSID, _I_CALL, _I_PEN = (_C[c] for c in (
    "content_json", "raw_json", "provider_session_id", "tool_call_id", "provider_event_name"))


def _p(prefix, v):
    return None if v is None else prefix + v


_REST_ORDER = tuple(k for k in FIELD_ORDER[8:] if k not in ("attrs", "content", "raw"))


def path_columns(paths) -> tuple:
    """(path_logical, path_relative, paths_json): the columns derived from an envelope's
    `paths` (the first path; every path's repo-relative else logical text). The one
    definition append and verify share."""
    if not paths:
        return None, None, None
    first = paths[0]
    return (first["logical"], first.get("repo_relative"),
            fastjson.dumps([q.get("repo_relative", q["logical"]) for q in paths]))
_iso = clock.iso_fast


LARGE = 1 << 20
"""Characters: a text at least this long is hashed a slice at a time (never joined into the whole
line, nor encoded whole), and a raw payload this long is not kept beside its packed form (the
line expands it from the row when hashed). A capture holds a large prompt a few times, not ten."""
_RAW = object()  # in a Prepared's tail pieces: the raw payload, expanded from the row when needed


class Prepared:
    """An envelope made ready for the chain, everything but the writer's clocks: the row with
    placeholders for source_seq, hlc and ingested_at, and the canonical line in pieces around
    them. Preparing is pure (it can run in another process); `finish` (or `finish_hashed`) is
    the writer's part."""

    __slots__ = ("event_id", "device_id", "source_seq", "hlc", "ingested_at", "row", "pre", "mid", "rest",
                 "_tail")

    def __init__(self, env: dict):
        eid, dev = env["event_id"], env["device_id"]
        self.event_id, self.device_id = eid, dev
        self.source_seq, self.hlc = env["source_seq"], env["hlc"]
        self.ingested_at = env.get("ingested_at")
        project = env["project"]
        agent = env.get("agent") or {}
        tool = env.get("tool") or {}
        outcome = env.get("outcome") or {}
        paths = env.get("paths")
        unknown = None
        if not _KNOWN.issuperset(env):
            unknown = {k: env[k] for k in env if k not in _KNOWN} or None
        attrs = env.get("attrs")
        attrs_json = fastjson.dumps(attrs) if attrs else "{}"
        content_json, values = payload.content_text(env["content"]) if "content" in env else (None, ())
        raw_text = fastjson.dumps(env["raw"]) if "raw" in env else None
        raw_json = payload.pack(raw_text, content_json, values,
                                (env["provider_session_id"], tool.get("call_id"), env["provider_event_name"])
                                ) if raw_text is not None else None
        unknown_json = fastjson.dumps(unknown) if unknown else None
        paths_full = fastjson.dumps(paths) if paths else None
        obs, cap = env["observed_at"], env["captured_at"]
        self.row = (
            "ev_" + eid, env["schema_version"], "dev_" + dev, None, None, _iso(obs), _iso(cap), None,
            env["provider"], env.get("provider_version"), env["adapter_version"], env.get("hook_version"),
            env["capture_mode"], env["provider_event_name"], env["kind"], "prj_" + project["project_id"],
            project["root"], project["name"], project.get("repo_remote"), project.get("branch"),
            project.get("head"), "ses_" + env["session_id"], env["provider_session_id"],
            env.get("provider_turn_id"), _p("tc_", env.get("span_id")), _p("tc_", env.get("parent_span_id")),
            _p("agt_", agent.get("agent_id")), agent.get("agent_type"), _p("agt_", agent.get("parent_agent_id")),
            agent.get("model"), agent.get("provider_agent_id"),
            tool.get("name"), tool.get("category"), tool.get("call_id"),
            *path_columns(paths),
            outcome.get("status"), outcome.get("class"), outcome.get("exit_code"), env.get("duration_ms"),
            attrs_json, content_json, raw_json, unknown_json, paths_full,
        )
        # the end of the line, with the payload as sent: the writer need not expand raw_json
        # (unless the payload is large: it is then expanded from the row when hashed)
        self._tail = _tail_pieces(attrs_json, content_json,
                                  _RAW if raw_text is not None and len(raw_text) >= LARGE else raw_text,
                                  unknown_json)
        self.pre = f'{{"event_id":"{eid}","schema_version":{env["schema_version"]},"device_id":"{dev}",'
        self.mid = f'"observed_at":{obs},"captured_at":{cap}'
        # the scalar head after the clocks
        self.rest = "," + fastjson.dumps({k: env[k] for k in _REST_ORDER if k in env})[1:-1]

    @property
    def tail(self) -> str:
        """The end of the canonical line after the scalar head (attrs, content, raw, unknown
        fields, closing brace), as one text."""
        return "".join(self._tail_texts())

    def _tail_texts(self) -> list:
        r = self.row
        return [payload.expand(r[_I_RAW], r[_I_CONTENT], (r[_I_PSID], r[_I_CALL], r[_I_PEN])) if t is _RAW else t
                for t in self._tail]

    def as_tuple(self) -> tuple:
        """Plain data (str/int/None/tuples only: marshal-able) for another process."""
        return (self.event_id, self.device_id, self.source_seq, self.hlc, self.ingested_at,
                self.row, self.pre, self.mid, self.rest, self.tail)

    @classmethod
    def from_tuple(cls, t: tuple) -> "Prepared":
        p = cls.__new__(cls)
        (p.event_id, p.device_id, p.source_seq, p.hlc, p.ingested_at,
         p.row, p.pre, p.mid, p.rest, tail) = t
        p._tail = (tail,)
        return p

    def _finish(self, source_seq: int, hlc: int, ingested_at: int | None) -> tuple[tuple, list]:
        """(row, the canonical line's texts in order) once the writer assigned the clocks."""
        r = self.row
        ing_text = None if ingested_at is None else _iso(ingested_at)
        row = r[:3] + (source_seq, hlc) + r[5:7] + (ing_text,) + r[8:]
        ing = "" if ingested_at is None else f',"ingested_at":{ingested_at}'
        return row, [self.pre, f'"source_seq":{source_seq},"hlc":{hlc},', self.mid, ing, self.rest,
                     *self._tail_texts()]

    def finish(self, source_seq: int, hlc: int, ingested_at: int | None) -> tuple[tuple, str]:
        """(row, canonical line) once the writer assigned the clocks."""
        row, texts = self._finish(source_seq, hlc, ingested_at)
        return row, "".join(texts)

    def finish_hashed(self, source_seq: int, hlc: int, ingested_at: int | None, sha256) -> tuple[tuple, str]:
        """(row, event hash): `finish`, then the SHA-256 (hex) of the line as
        integrity.chain.hash_line takes it (EventError for text that is not valid Unicode),
        without the whole line or its bytes in memory when a text in it is LARGE."""
        row, texts = self._finish(source_seq, hlc, ingested_at)
        try:
            if sum(len(t) for t in texts) < LARGE:
                return row, sha256("".join(texts).encode("utf-8")).hexdigest()
            h = sha256()
            for t in texts:
                for i in range(0, len(t), LARGE):  # a slice's copy and bytes, never the whole text's
                    h.update(t[i:i + LARGE].encode("utf-8"))
        except UnicodeEncodeError:
            raise EventError("$", "text is not valid Unicode (a lone surrogate escape)") from None
        return row, h.hexdigest()


def to_row(env: dict) -> tuple:
    """The `events` row of a canonical envelope (ids prefixed, times as ISO text)."""
    return Prepared(env).finish(env["source_seq"], env["hlc"], env.get("ingested_at"))[0]


def row_and_line(env: dict) -> tuple[tuple, str]:
    """The row and the canonical line of a canonical envelope: the same text
    `line_from_row(row)` gives (a test holds them equal)."""
    return Prepared(env).finish(env["source_seq"], env["hlc"], env.get("ingested_at"))


_q = fastjson.quote


_DAYS: dict[str, int] = {}


_SECONDS: dict[str, int] = {}


def _us(t: str) -> int:
    """µs of a stored time text; ValueError unless it is exactly what clock.iso writes. The
    `YYYY-MM-DDTHH:MM:SS.` part is checked once and remembered (verify reads every row's three
    times; a stream's rows share their seconds), the six digits and the `Z` every time."""
    base = _SECONDS.get(t[:20])
    if base is not None:
        frac = t[20:26]
        if len(t) != 27 or t[26] != "Z" or not (frac.isascii() and frac.isdigit()):
            raise ValueError("time text is not canonical")
        return base + int(frac)
    us = _us_checked(t)
    if len(_SECONDS) > 65536:
        _SECONDS.clear()
    _SECONDS[t[:20]] = us - int(t[20:26])
    return us


def _us_checked(t: str) -> int:
    day = _DAYS.get(t[:10])
    if day is None:
        day = clock.from_iso(t[:10] + "T00:00:00+00:00")
        if clock.iso(day)[:10] != t[:10]:
            raise ValueError("time text is not canonical")
        if len(_DAYS) > 4096:
            _DAYS.clear()
        _DAYS[t[:10]] = day
    if len(t) != 27 or t[10] != "T" or t[13] != ":" or t[16] != ":" or t[19] != "." or t[26] != "Z":
        raise ValueError("time text is not canonical")
    digits = t[11:13] + t[14:16] + t[17:19] + t[20:26]
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError("time text is not canonical")
    h, m, sec = int(t[11:13]), int(t[14:16]), int(t[17:19])
    if h > 23 or m > 59 or sec > 59:
        raise ValueError("time text is not canonical")
    return day + ((h * 60 + m) * 60 + sec) * 1_000_000 + int(t[20:26])


def _id(text: str, prefix: str) -> str:
    if not text.startswith(prefix):
        raise ValueError("id prefix")
    return text[len(prefix):]


def line_from_row(r) -> str:
    """Canonical line assembled from a stored row (indexable by COLUMNS order), splicing the
    stored JSON texts verbatim. The one definition of the hashed bytes (append and verify);
    ValueError when a column no longer holds what the codec writes (an id prefix, a time text)."""
    q = _q
    p = [f'{{"event_id":"{_id(r[0], "ev_")}","schema_version":{r[1]},"device_id":"{_id(r[2], "dev_")}"'
         f',"source_seq":{r[3]},"hlc":{r[4]},"observed_at":{_us(r[5])},"captured_at":{_us(r[6])}']
    if r[7] is not None:
        p.append(f',"ingested_at":{_us(r[7])}')
    p.append(',"provider":' + q(r[8]))
    if r[9] is not None:
        p.append(',"provider_version":' + q(r[9]))
    p.append(',"adapter_version":' + q(r[10]))
    if r[11] is not None:
        p.append(',"hook_version":' + q(r[11]))
    p.append(f',"capture_mode":{q(r[12])},"provider_event_name":{q(r[13])},"kind":{q(r[14])}'
             f',"project":{{"project_id":"{_id(r[15], "prj_")}","root":{q(r[16])},"name":{q(r[17])}')
    if r[18] is not None:
        p.append(',"repo_remote":' + q(r[18]))
    if r[19] is not None:
        p.append(',"branch":' + q(r[19]))
    if r[20] is not None:
        p.append(',"head":' + q(r[20]))
    p.append(f'}},"session_id":"{_id(r[21], "ses_")}","provider_session_id":{q(r[22])}')
    if r[23] is not None:
        p.append(',"provider_turn_id":' + q(r[23]))
    if r[24] is not None:
        p.append(f',"span_id":"{_id(r[24], "tc_")}"')
    if r[25] is not None:
        p.append(f',"parent_span_id":"{_id(r[25], "tc_")}"')
    agent = []
    if r[26] is not None:
        agent.append(f'"agent_id":"{_id(r[26], "agt_")}"')
    if r[30] is not None:
        agent.append('"provider_agent_id":' + q(r[30]))
    if r[27] is not None:
        agent.append('"agent_type":' + q(r[27]))
    if r[28] is not None:
        agent.append(f'"parent_agent_id":"{_id(r[28], "agt_")}"')
    if r[29] is not None:
        agent.append('"model":' + q(r[29]))
    p.append(',"agent":{' + ",".join(agent) + "}")
    if r[31] is not None:
        p.append(f',"tool":{{"name":{q(r[31])},"category":{q(r[32])}')
        if r[33] is not None:
            p.append(',"call_id":' + q(r[33]))
        p.append("}")
    if r[45] is not None:
        p.append(',"paths":' + r[45])
    if r[37] is not None:
        p.append(',"outcome":{"status":' + q(r[37]))
        if r[38] is not None:
            p.append(',"class":' + q(r[38]))
        if r[39] is not None:
            p.append(f',"exit_code":{int(r[39])}')
        p.append("}")
    if r[40] is not None:
        p.append(f',"duration_ms":{int(r[40])}')
    raw = None if r[43] is None else payload.expand(r[43], r[42], (r[22], r[33], r[13]))
    p.append(_tail(r[41], r[42], raw, r[44]))
    return "".join(p)


def _tail_pieces(attrs: str, content: str | None, raw, unknown: str | None) -> tuple:
    """The end of a canonical line, in pieces (each text as it is, not copied): attrs (unless
    empty), content, raw (the payload as sent), the unknown top-level fields spliced in, and the
    closing brace."""
    parts = []
    if attrs != "{}":
        parts += (',"attrs":', attrs)
    if content is not None:
        parts += (',"content":', content)
    if raw is not None:
        parts += (',"raw":', raw)
    if unknown is not None and len(unknown) > 2:
        parts.append("," + unknown[1:-1])
    parts.append("}")
    return tuple(parts)


def _tail(attrs: str, content: str | None, raw: str | None, unknown: str | None) -> str:
    """`_tail_pieces` as one text."""
    return "".join(_tail_pieces(attrs, content, raw, unknown))


def check_storable(env: dict) -> None:
    """Raise EventError when a valid envelope cannot be stored losslessly (64-bit integers,
    years 0001–9999, strings that are not Unicode scalar values)."""
    for k in ("observed_at", "captured_at", "ingested_at"):
        if k in env and not clock.MIN_US <= env[k] <= clock.MAX_US:
            raise EventError(f"$.{k}", "timestamp outside years 0001-9999")
    for k in ("source_seq", "hlc"):  # headroom: the writer's next value must still fit
        if k in env and env[k] > _CLOCK_MAX:
            raise EventError(f"$.{k}", "is beyond what a writer's clock can reach (2^62)")
    if "duration_ms" in env and env["duration_ms"] > _I64:
        raise EventError("$.duration_ms", "does not fit a signed 64-bit integer")
    ec = (env.get("outcome") or {}).get("exit_code")
    if ec is not None and not -_I64 - 1 <= ec <= _I64:
        raise EventError("$.outcome.exit_code", "does not fit a signed 64-bit integer")


# --- bounds on attrs (spec/canonical-event.md "Bounds on attrs") --------------------------------

_SCALAR_ROOM = 26  # bytes a non-string scalar and its comma can take: an int64 is 20, a float 24


def json_bytes(value) -> int:
    """UTF-8 bytes of `value` as compact JSON (the canonical line's serialisation)."""
    text = fastjson.dumps(value)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _utf8_over(s: str, limit: int) -> bool:
    n = len(s)
    if n <= limit >> 2:  # four bytes a character at most
        return False
    if n > limit:
        return True
    return not s.isascii() and len(s.encode("utf-8", "surrogatepass")) > limit


def _scalar_problem(v) -> str | None:
    """Why an attrs scalar breaks a bound, or None (a container is not a scalar)."""
    t = type(v)
    if t is str:
        return f"a string longer than {MAX_ATTR_STRING} bytes" if _utf8_over(v, MAX_ATTR_STRING) else None
    if t is int:
        return None if ATTR_INT_MIN <= v <= ATTR_INT_MAX else "an integer outside signed 64 bits"
    if isinstance(v, (list, dict)):
        return "an array or object inside an array or object (attrs nest one level at most)"
    return None


def _container_room(v) -> int:
    """An upper bound of the JSON bytes of an array or object of scalars within the bounds."""
    if type(v) is list:
        return 2 + sum(6 * len(x) + 3 if type(x) is str else _SCALAR_ROOM for x in v)
    return 2 + sum(6 * len(k) + 4 + (6 * len(x) + 3 if type(x) is str else _SCALAR_ROOM) for k, x in v.items())


def attrs_problem(attrs: dict) -> tuple | None:
    """(JSON path, what) of the first bound `attrs` (an object with attr-shaped keys, as
    `validate` leaves it) breaks, else None. Never quotes a value or an over-long key."""
    # attr keys are ASCII ([a-z0-9_]): characters are bytes; the keys validate saw are short
    if not _ATTR_KEYS_SEEN.issuperset(attrs) and max(map(len, attrs)) > MAX_ATTR_KEY:
        return "$.attrs", f"a key longer than {MAX_ATTR_KEY} bytes"
    # a sound upper bound of json_bytes(attrs), 6 bytes a character at most (\u001f): "{}",
    # per entry its key (<= 64), quotes, colon, comma and a non-string scalar, plus 6 a
    # character of each string value and the room of each array or object
    chars = room = 0
    for k, v in attrs.items():
        t = type(v)
        if t is str:
            n = len(v)
            if n > 64 and _utf8_over(v, MAX_ATTR_STRING):  # 64 characters are <= 256 bytes
                return f"$.attrs.{k}", f"a string longer than {MAX_ATTR_STRING} bytes"
            chars += n
        elif t is int:
            if not -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:  # ATTR_INT_MIN, ATTR_INT_MAX
                return f"$.attrs.{k}", "an integer outside signed 64 bits"
        elif t is list or t is dict:
            items = v if t is list else v.values()
            if t is dict:
                for kk in v:
                    if _utf8_over(kk, MAX_ATTR_KEY):
                        return f"$.attrs.{k}", f"a member key longer than {MAX_ATTR_KEY} bytes"
            for x in items:
                why = _scalar_problem(x)
                if why:
                    return f"$.attrs.{k}", why
            room += _container_room(v)
    room += 2 + len(attrs) * (MAX_ATTR_KEY + 4 + _SCALAR_ROOM) + 6 * chars
    if room > MAX_ATTRS_BYTES and json_bytes(attrs) > MAX_ATTRS_BYTES:
        return "$.attrs", f"longer than {MAX_ATTRS_BYTES:,} bytes as JSON"
    return None


def _unrepresentable(why: str) -> str:
    """What a line holds that `fastjson.loads` cannot (its JSONUnrepresentable reason)."""
    if "number" in why:
        return "holds a number no event can hold (past a float's range, or of more than 4,300 digits)"
    if "nest" in why:
        return "holds a value nested more deeply than an event can hold (about 1,000 levels)"
    return "holds a value no event can hold"


def parse_line(raw: bytes, lineno: int) -> dict:
    """One JSONL line → a valid canonical envelope within the attrs bounds, or AttemptError
    (`import.bad_line`) naming the line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AttemptError("import.bad_line", f"line {lineno}: not UTF-8 (byte {e.start})") from None
    try:
        obj = fastjson.loads(text)
    except fastjson.JSONUnrepresentable as e:
        # JSON (as far as the grammar goes) holding what no event can: said so, as capture
        # says it (spec/capture.md "A payload that cannot be read or held"); a text that also
        # breaks the grammar is malformed (is_json reads the whole of it, bounded)
        if fastjson.is_json(text) is False:
            raise AttemptError("import.bad_line", f"line {lineno}: malformed JSON") from None
        raise AttemptError("import.bad_line", f"line {lineno}: {_unrepresentable(e.msg)}") from None
    except (ValueError, RecursionError) as e:
        pos = getattr(e, "pos", None)
        where = f" at character {pos}" if isinstance(pos, int) else ""
        raise AttemptError("import.bad_line", f"line {lineno}: malformed JSON{where}") from None
    try:
        validate(obj)
        env = canonical(obj)
        check_storable(env)
        attrs = env.get("attrs")
        if attrs:  # the attrs bounds (stricter than the schema): refused, never rewritten
            problem = attrs_problem(attrs)
            if problem is not None:
                raise EventError(*problem)
    except EventError as e:
        raise AttemptError("import.bad_line", f"line {lineno}: {e}") from None
    return env
