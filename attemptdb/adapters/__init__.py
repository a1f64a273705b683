"""Provider adapters: one hook payload + a capture context → one canonical Event v1 envelope.

The API the capture path calls:

    ctx = Context(device_id, capture_mode, project, captured_at, provider_version=None,
                  hook_version=None)
    payload, gap = parse_payload(data, truncated)
    cwd = hook_cwd(provider, payload)
    env = build_event(provider_name, payload, gap, ctx, event_hint=None, payload_bytes=0)

Invariants:
- `build_event` never raises and always returns an envelope that `attemptdb.model.event.validate`
  accepts, in canonical key order. Nothing is ever lost: a payload that cannot be read, a
  provider with no adapter, a payload without an event name, or an adapter failure each give a
  `kind: unknown` event with the reason in `attrs.capture_gap`.
- Under metadata_only the envelope has no `content` and no `raw`; `raw` never carries payload
  keys starting with `_` or transcript paths.
- The hook path: importing this package loads no re, json, uuid or hashlib (str methods,
  attemptdb.model.fastjson and attemptdb.model.ids only); a provider's adapter module loads on first use.
"""

from .. import ADAPTER_VERSION
from ..errors import AttemptError
from ..model import event, fastjson, ids
from . import registry
from .draft import ATTR_KEYS, Draft, count

__all__ = ("Context", "parse_payload", "hook_cwd", "build_event", "normalise", "ATTR_KEYS",
           "PAYLOAD_GAPS", "registry")

PAYLOAD_GAPS = ("invalid_json", "payload_not_object", "empty_payload", "payload_truncated",
                "payload_unrepresentable")
"""capture_gap reasons about the payload bytes themselves (they also record the byte count).
`invalid_json` is said only of a text shown to break the JSON grammar; `payload_unrepresentable`
of one that holds what no event can: a number past a float's range (`1e999`) or of more digits
than Python reads (4,300), or nesting deeper than the parser's limit (about 1,000 levels)."""
TRANSCRIPT_KEYS = ("transcript_path", "agent_transcript_path")
CAPTURE_TEST_NAMES = frozenset(registry.CAPTURE_TEST_EVENT.values())
def capture_mode(text) -> str | None:
    """A capture mode name or alias (case-insensitive, `-` for `_`), None when invalid."""
    from ..ingest.privacy import parse_mode
    return parse_mode(text)


class Context:
    """What the hook knows besides the payload. An invalid capture mode fails closed to
    metadata_only; a malformed device id, project or time is a caller bug (AttemptError)."""

    __slots__ = ("device_id", "capture_mode", "project", "captured_at", "provider_version",
                 "hook_version", "keep_raw", "adapter_version", "event_id")

    def __init__(self, device_id, capture_mode, project, captured_at, provider_version=None,
                 hook_version=None, keep_raw=True, event_id=None):
        dev = ids.bare(device_id) if isinstance(device_id, str) else None
        if not ids.is_uuid(dev):
            raise AttemptError("adapter.context", "device_id must be a lowercase UUID")
        if not isinstance(project, dict) or not ids.is_uuid(project.get("project_id")) or \
                not isinstance(project.get("root"), str) or not isinstance(project.get("name"), str):
            raise AttemptError("adapter.context", "project needs project_id (UUID), root and name")
        if isinstance(captured_at, bool) or not isinstance(captured_at, int):
            raise AttemptError("adapter.context", "captured_at must be integer microseconds")
        for v in (provider_version, hook_version):
            if v is not None and not isinstance(v, str):
                raise AttemptError("adapter.context", "versions must be strings")
        self.device_id = dev
        self.capture_mode = _mode(capture_mode)
        self.project = {k: project[k] for k in event.PROJECT_ORDER
                        if isinstance(project.get(k), str)}
        self.captured_at = captured_at
        self.provider_version = provider_version
        self.hook_version = hook_version
        self.keep_raw = bool(keep_raw)
        self.adapter_version = ADAPTER_VERSION
        # an id the hook minted already (the daemon stores it under the hook's id, so a hook
        # that retries on its own after a lost answer adds nothing)
        self.event_id = event_id if isinstance(event_id, str) and ids.is_uuid(event_id) else None

    @property
    def keeps_content(self) -> bool:
        return self.capture_mode != "metadata_only"

    def mint_id(self) -> str:
        if self.event_id:
            return self.event_id
        ms = self.captured_at // 1000
        return ids.uuid7(ms) if 0 <= ms < 2**48 else ids.uuid7()


def _mode(text) -> str:
    return capture_mode(text) or "metadata_only"


# --- the payload ---------------------------------------------------------------------------

def parse_payload(data, truncated: bool = False) -> tuple:
    """(payload, gap): the parsed JSON and None, or what is wrong with the bytes. A non-object
    JSON value comes back with gap "payload_not_object". Invalid UTF-8 is replaced, a BOM
    skipped, lone surrogates replaced by U+FFFD; NaN/Infinity are not JSON. A text whose first
    problem is a value too large or nesting too deep to hold is "payload_unrepresentable",
    unless the rest of it breaks the grammar (then "invalid_json"; a bounded check: a text
    nested too deeply to finish it in about a second stays "payload_unrepresentable")."""
    if truncated:
        return None, "payload_truncated"
    if isinstance(data, str):
        text = data
    else:
        text = bytes(data).decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text or text.isspace():
        return None, "empty_payload"
    try:
        obj = fastjson.loads(text, exact_errors=False)  # never import json/re on the hook path
    except fastjson.JSONUnrepresentable:
        return None, "invalid_json" if fastjson.is_json(text) is False else "payload_unrepresentable"
    except (ValueError, RecursionError):
        return None, "invalid_json"
    if "\\ud" in text or "\\uD" in text:
        obj = _replace_lone_surrogates(obj)
    if not isinstance(obj, dict):
        return obj, "payload_not_object"
    return obj, None


def _walk(obj):
    """Every container and scalar inside a parsed JSON value, without recursion."""
    stack = [obj]
    while stack:
        o = stack.pop()
        yield o
        if isinstance(o, dict):
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)


def _clean(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in s)


def _replace_lone_surrogates(obj):
    if isinstance(obj, str):
        return _clean(obj)
    for o in list(_walk(obj)):
        if isinstance(o, dict):
            for k in list(o):
                v = o[k]
                if isinstance(v, str):
                    o[k] = v = _clean(v)
                nk = _clean(k)
                if nk != k:
                    del o[k]
                    o[nk] = v
        elif isinstance(o, list):
            for i, v in enumerate(o):
                if isinstance(v, str):
                    o[i] = _clean(v)
    return obj


def hook_cwd(provider, payload) -> str | None:
    """The directory the agent worked in: payload `cwd`, for Cursor the first non-empty
    `workspace_roots` entry; None when the payload says nothing."""
    if not isinstance(payload, dict):
        return None
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd.strip():
        return cwd
    if registry.provider_id(provider) == "cursor":
        roots = payload.get("workspace_roots")
        if isinstance(roots, list):
            for r in roots:
                if isinstance(r, str) and r.strip():
                    return r
    return None


def raw_payload(payload: dict) -> dict:
    """The payload as `raw` keeps it: without `_…` keys and transcript paths, order kept."""
    return {k: v for k, v in payload.items() if not k.startswith("_") and k not in TRANSCRIPT_KEYS}


def provider_slug(name) -> str:
    """An unknown provider name as a lowercase snake identifier ("unknown" when nothing is left)."""
    if not isinstance(name, str):
        return "unknown"
    s = name.strip().lower()
    for c in "- .":
        s = s.replace(c, "_")
    s = "".join(c for c in s[:64] if c.isascii() and (c.isalnum() or c == "_")).strip("_")
    return s or "unknown"


def _event_name(payload, hint) -> str | None:
    name = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if isinstance(name, str) and name.strip():
        return name.strip()
    if isinstance(hint, str) and hint.strip():
        return hint.strip()
    return None


def _adapter(provider: str):
    if provider == "cursor":
        from . import cursor as module
    elif provider == "gemini_cli":
        from . import gemini_cli as module
    else:  # claude_code, and codex, which sends Claude-shaped payloads
        from . import claude_code as module
    return module


# --- events --------------------------------------------------------------------------------

def _normalised(provider: str, payload: dict, ctx: Context, name: str, gap=None) -> dict:
    d = Draft(provider, name, ctx.project["root"])
    if gap is not None:
        d.attr("capture_gap", gap)
    _adapter(provider).normalise(d, payload)
    if name in CAPTURE_TEST_NAMES:
        d.kind = "capture_test"
    raw = raw_payload(payload) if ctx.keeps_content and ctx.keep_raw else None
    return d.envelope(ctx, raw)


def _gap_event(provider: str, payload, ctx: Context, name, gap: str, payload_bytes=0) -> dict:
    """An `unknown` event that records why nothing better could be built."""
    d = Draft(provider, name or "unknown", ctx.project["root"])
    d.attr("capture_gap", gap)
    if gap in PAYLOAD_GAPS:
        d.attr("x_attemptdb_payload_bytes", count(payload_bytes) or 0)
    raw = None
    if isinstance(payload, dict):
        for key in ("session_id", "conversation_id"):
            v = payload.get(key)
            if isinstance(v, str) and v.strip():
                d.psid, d.session_missing = v, False
                break
        raw = raw_payload(payload)
    elif payload is not None:
        raw = payload
    return d.envelope(ctx, raw)


def normalise(provider, payload, ctx: Context, event_hint=None) -> dict:
    """The strict form of build_event: the envelope of a readable payload from a known
    provider, else AttemptError (adapter.unsupported_provider, adapter.payload_not_object,
    adapter.missing_event_name)."""
    pid = registry.provider_id(provider)
    if pid is None:
        raise AttemptError("adapter.unsupported_provider", "no adapter for this provider")
    if not isinstance(payload, dict):
        raise AttemptError("adapter.payload_not_object", "the hook payload is not a JSON object")
    name = _event_name(payload, event_hint)
    if name is None:
        raise AttemptError("adapter.missing_event_name", "the payload has no hook_event_name")
    return _normalised(pid, payload, ctx, name)


def build_event(provider_name, payload, gap, ctx: Context, event_hint=None, payload_bytes=0) -> dict:
    """One canonical Event v1 envelope for one hook invocation. Never raises (see module)."""
    try:
        env = _build(provider_name, payload, gap, ctx, event_hint, payload_bytes)
        event.validate(env)
        event.check_storable(env)  # what the store would refuse becomes an adapter_error event now
        return env
    except Exception:  # an adapter bug or a payload shape nobody anticipated
        return _adapter_error(provider_name, payload, ctx, event_hint)


def _build(provider_name, payload, gap, ctx, event_hint, payload_bytes) -> dict:
    pid = registry.provider_id(provider_name)
    if gap is None and not isinstance(payload, dict):
        gap = "empty_payload" if payload is None else "payload_not_object"
    name = _event_name(payload, event_hint)
    if gap is not None:
        return _gap_event(pid or provider_slug(provider_name), payload, ctx, name, gap, payload_bytes)
    if pid is None:
        return _gap_event(provider_slug(provider_name), payload, ctx, name, "unsupported_provider")
    if name is None:
        return _normalised(pid, payload, ctx, "unknown", gap="missing_event_name")
    return _normalised(pid, payload, ctx, name)


def _adapter_error(provider_name, payload, ctx, event_hint) -> dict:
    pid = registry.provider_id(provider_name) or provider_slug(provider_name)
    try:
        name = _event_name(payload, event_hint)
        env = _gap_event(pid, payload, ctx, name, "adapter_error")
        event.validate(env)
        return env
    except Exception:
        return _gap_event(pid, None, ctx, None, "adapter_error")
