"""Privacy as a storage property: capture modes, the attrs sanitiser, the ingestion contract.

Invariants (reference/capture.md §2.10, §2.12, §3.4, §4.1–§4.2):
- `ingest` is applied to every event before it is stored (hook captures and imports alike)
  and is idempotent: `ingest(ingest(e)) == ingest(e)`, so a stream exported from one database
  re-imports with identical bytes and hashes.
- Under `metadata_only` (the event's own mode, the database's mode, or an unreadable mode —
  fail closed) no `content` and no `raw` survive, and the event says `metadata_only`.
- Every string in `content`, `raw` and top-level `x_*` extensions, and the free text of the
  metadata every mode keeps (_METADATA_TEXTS: versions, event names, provider ids, the model,
  the project's root, name, branch and remote, every path), is secret-redacted
  (`[REDACTED:<rule>]`); if the scanner fails, content and raw are dropped and
  `attrs.x_attemptdb_redaction_failed` is set.
- `attrs` only keeps allowlisted keys (or `x_<provider>_<name>`) with content-free values:
  strings ≤ 256 UTF-8 bytes, single-line, without an email address, a home directory or a
  secret; integers within signed 64 bits; arrays of such scalars; an object only under
  `provider`, with scalar members whose keys are attr-shaped. Keys are ≤ 64 bytes, and the
  whole object ≤ 16 KiB as compact JSON (the largest entries dropped first until it fits):
  the bounds `attemptdb.model.event.attrs_problem` refuses an imported line for, so a captured
  event always passes them. Every drop is counted into the integer `attrs.redactions`.
- The input envelope is never mutated. No `re`/`json` import: this module is on the hook path.
"""

from ..model.event import ATTR_INT_MAX, ATTR_INT_MIN, MAX_ATTR_KEY, MAX_ATTR_STRING, MAX_ATTRS_BYTES, json_bytes
from . import redaction as secrets

_MODE_ALIASES = {
    "metadata_only": "metadata_only", "metadata": "metadata_only",
    "local_semantic": "local_semantic", "local": "local_semantic",
    "full_sync": "full_sync", "full": "full_sync",
}

REDACTIONS_KEY = "redactions"
REDACTION_FAILED_KEY = "x_attemptdb_redaction_failed"
# MAX_ATTR_STRING (256): the longest attr string in UTF-8 bytes: metadata is short, anything
# longer is text in disguise. The attrs bounds live with the event model (parse_line refuses
# an imported line that breaks one); this module drops what breaks one from a captured event.
MAX_PROVIDER_KEY = MAX_ATTR_KEY
_MAX_COUNT = 2**53

ALLOWED_ATTR_KEYS = frozenset((
    # RFC 0006 §4.1
    "tool_input_bytes", "tool_output_bytes", "prompt_chars", "message_chars", "file_count",
    "line_count", "exit_code", "duration_ms", "permission_mode", "permission_decision",
    "notification_type", "stop_reason", "compaction_trigger", "task_status", "subagent_type",
    "model", "cwd_logical", "capture_gap", "consent_version", "coverage_grade", "git_dirty",
    "path_extensions", "matcher", "hook_event_name",
    # hook adapters
    "source", "reason", "trigger", "stop_hook_active", "cwd", "transcript_present",
    "prompt_lines", "prompt_has_code_fence", "prompt_has_question", "prompt_kind",
    "prompt_source", "command_bytes", "command_category", "command_subcategory",
    "git_subcommand", "file_ext", "file_is_test", "file_is_config", "file_is_doc",
    "lines_added", "lines_removed", "edit_count", "attachment_count", "image_count",
    "error_class", "error_bytes", "is_subagent", "agent_type", "task_id", "previous_cwd",
    "worktree_path", "config_source", "tool_output_truncated", "entrypoint", "pre_tokens",
    "post_tokens", "output_tokens",
    # test evidence and failure classes (newer adapters)
    "tests_passed", "tests_failed", "tests_skipped", "failure_class",
    # provider scalars (one object), adapter failures
    "provider", "adapter_error",
    # transcript import
    "reconstructed", "reconstructed_from", "transcript_entry_type", "is_sidechain",
    "turn_index_hint",
    # corrections and retractions
    "correction_type", "target", "target_type", "outcome", "note_chars",
    # capture timing, sync, ingestion itself
    "hook_us", "device_seq", REDACTIONS_KEY,
    # aliases the projections read (reference/inference.md §2.1): names and counts only
    "start_source", "end_reason", "prompt_length", "prompt_len",
))

_LOWER_DIGITS_US = "abcdefghijklmnopqrstuvwxyz0123456789_"
_LOCAL_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-"
_DOMAIN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-"
_SCALARS = (str, int, float, bool, type(None))


# --- capture modes --------------------------------------------------------------------------

def parse_mode(text) -> str | None:
    """The capture mode `text` names (`metadata_only|metadata`, `local_semantic|local`,
    `full_sync|full`; case-insensitive, `-` = `_`, surrounding blanks ignored), else None.
    Callers fail closed: None means `metadata_only`."""
    if not isinstance(text, str):
        return None
    return _MODE_ALIASES.get(text.strip().lower().replace("-", "_"))


def apply_capture_mode(env: dict, mode) -> dict:
    """A copy of `env` captured under `mode`: `capture_mode` set to it, and under
    `metadata_only` (or an unreadable mode) no `content` and no `raw`."""
    m = parse_mode(mode) or "metadata_only"
    out = dict(env)
    if m == "metadata_only":
        out.pop("content", None)
        out.pop("raw", None)
    out["capture_mode"] = m
    return out


# --- attrs ----------------------------------------------------------------------------------

def key_allowed(key) -> bool:
    """Allowlisted, or a provider extension `x_<provider>_<name>` (lowercase ASCII, digits,
    underscores; both segments non-empty)."""
    if not isinstance(key, str):
        return False
    if key in ALLOWED_ATTR_KEYS:
        return True
    if not key.startswith("x_") or not key.isascii():
        return False
    rest = key[2:]
    if rest.strip(_LOWER_DIGITS_US):
        return False
    provider, sep, name = rest.partition("_")
    return bool(provider and sep and name)


def has_email(s: str) -> bool:
    """An email address anywhere in `s`: a local part of `[A-Za-z0-9._%+-]`, `@`, a domain of
    `[A-Za-z0-9.-]` holding a dot, not starting with one (trailing dots/hyphens ignored)."""
    k = s.find("@")
    while k >= 0:
        before = s[max(0, k - 256):k]
        local = before[len(before.rstrip(_LOCAL_CHARS)):]
        if local:
            after = s[k + 1:k + 257]
            domain = after[:len(after) - len(after.lstrip(_DOMAIN_CHARS))].rstrip(".-")
            if "." in domain and not domain.startswith("."):
                return True
        k = s.find("@", k + 1)
    return False


def has_home_directory(s: str) -> bool:
    """`/Users/`, `/home/`, or `<drive>:\\Users\\` / `<drive>:/Users/` (either separator,
    any case) anywhere in `s`. Logical paths (`~/proj`) pass."""
    if "/Users/" in s or "/home/" in s:
        return True
    if ":" not in s:
        return False
    low = s.lower()
    for sep in ("\\users", "/users"):
        k = low.find(":" + sep)
        while k >= 0:
            if k > 0 and low[k - 1] in "abcdefghijklmnopqrstuvwxyz" \
                    and low[k + len(sep) + 1:k + len(sep) + 2] in ("/", "\\"):
                return True
            k = low.find(":" + sep, k + 1)
    return False


_ALLOWED: dict = {}
"""value_allowed answers for short strings: attr values (tool names, event names, paths)
recur on every event of a stream, and the answer is a pure function of the text (bounded)."""


def value_allowed(s) -> bool:
    """Whether an attr string is content-free: ≤ 256 UTF-8 bytes, one line, valid Unicode, no
    email address, no home directory, no secret (secrets-v2, and more strictly than there any
    issuer-prefixed token such as `ghp_` + 8 token characters)."""
    if type(s) is str and len(s) <= MAX_ATTR_STRING:
        ok = _ALLOWED.get(s)
        if ok is None:
            ok = _value_allowed(s)
            if len(_ALLOWED) >= 4096:
                _ALLOWED.clear()
            _ALLOWED[s] = ok
        return ok
    return _value_allowed(s)


def _value_allowed(s) -> bool:
    if not isinstance(s, str):
        return False
    if s.isascii():
        if len(s) > MAX_ATTR_STRING:
            return False
    else:
        try:
            if len(s.encode("utf-8")) > MAX_ATTR_STRING:
                return False
        except UnicodeEncodeError:  # a lone surrogate: not storable text
            return False
    if "\n" in s or "\r" in s:
        return False
    if "@" in s and has_email(s):
        return False
    if has_home_directory(s):
        return False
    return not secrets.has_issuer_prefix(s) and not secrets.find(s)


def _scalar_ok(v) -> bool:
    if isinstance(v, str):
        return value_allowed(v)
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    if v is None or isinstance(v, bool):
        return True
    return isinstance(v, int) and ATTR_INT_MIN <= v <= ATTR_INT_MAX


def _count_ok(v) -> bool:
    return type(v) is int and 0 <= v <= _MAX_COUNT


def _room(v) -> int:
    """An upper bound of the JSON bytes of a kept attrs value (scalars, arrays of scalars, an
    object of scalars under attr-shaped keys) and its comma: 6 bytes a character at most."""
    t = type(v)
    if t is str:
        return 6 * len(v) + 3
    if t is list:
        return 3 + sum(6 * len(x) + 3 if type(x) is str else 26 for x in v)
    if t is dict:
        return 3 + sum(len(k) + 4 + (6 * len(x) + 3 if type(x) is str else 26) for k, x in v.items())
    return 26  # an int64 is 20 bytes, a float 24


def _fit(out: dict, drops: int) -> int:
    """Drop the largest entries of `out` (the later first among equals; never `redactions`)
    until it, `redactions` grown by every drop, is at most MAX_ATTRS_BYTES as JSON. Returns
    the drops, this pass's included."""
    prior = out.get(REDACTIONS_KEY)
    # each entry `"k":v` with the "," or "}" after it; the object is "{" and those
    sizes = sorted(((json_bytes({k: v}) - 1, i, k) for i, (k, v) in enumerate(out.items())
                   if k != REDACTIONS_KEY), reverse=True)
    kept = sum(n for n, _, _ in sizes)
    for n, _, k in sizes:
        count = min((prior or 0) + drops, _MAX_COUNT)
        counter = len(f'"{REDACTIONS_KEY}":{count}') + 1 if drops or prior is not None else 0
        if 1 + kept + counter <= MAX_ATTRS_BYTES:
            break
        del out[k]
        kept -= n
        drops += 1
    return drops


def sanitise_attrs(attrs) -> tuple:
    """(a copy of `attrs` holding only content-free allowlisted entries within the bounds, in
    their order; the number of entries dropped by this pass). When anything was dropped the
    integer `redactions` grows by that number (appended if absent). Idempotent."""
    if not isinstance(attrs, dict):
        return {REDACTIONS_KEY: 1}, 1
    out = {}
    drops = 0
    # an upper bound of the output's JSON bytes, kept as it is built (6 bytes a character at
    # most): "{", 32 for a `redactions` entry still to come, each entry with its quotes,
    # colon and comma; most objects are far below the bound, known without serialising them
    room = 33
    allowed, known = ALLOWED_ATTR_KEYS, _ALLOWED
    for key, v in attrs.items():
        # the common cases first, without a call: an allowlisted key (all short), a string
        # whose answer is known, an integer
        if key not in allowed and (not key_allowed(key) or len(key) > MAX_ATTR_KEY):
            drops += 1
            continue
        t = type(v)
        if t is str and key != REDACTIONS_KEY:
            ok = known.get(v) if len(v) <= MAX_ATTR_STRING else False  # never hash a long text
            if ok or (ok is None and value_allowed(v)):
                out[key] = v
                room += len(key) + 6 * len(v) + 6
            else:
                drops += 1
            continue
        if t is int and key != REDACTIONS_KEY and -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
            out[key] = v
            room += len(key) + 29
            continue
        if key == REDACTIONS_KEY:
            if _count_ok(v):
                out[key] = v
            else:
                drops += 1
            continue
        if isinstance(v, dict):
            if key != "provider":
                drops += 1
                continue
            inner = {}
            for k, x in v.items():
                if (isinstance(k, str) and 0 < len(k) <= MAX_PROVIDER_KEY and "a" <= k[0] <= "z"
                        and k.isascii() and not k.strip(_LOWER_DIGITS_US) and _scalar_ok(x)):
                    inner[k] = x
                else:
                    drops += 1
            out[key] = inner
            room += len(key) + 3 + _room(inner)
        elif isinstance(v, list):
            if all(isinstance(x, _SCALARS) and _scalar_ok(x) for x in v):
                out[key] = v
                room += len(key) + 3 + _room(v)
            else:
                drops += 1
        elif _scalar_ok(v):
            out[key] = v
            room += len(key) + (6 * len(v) + 6 if type(v) is str else 29)
        else:
            drops += 1
    if room > MAX_ATTRS_BYTES:  # the bound on the whole
        drops = _fit(out, drops)
    if drops:
        prior = out.get(REDACTIONS_KEY, 0)
        out[REDACTIONS_KEY] = min(prior + drops, _MAX_COUNT)
    return out, drops


# --- the ingestion contract -----------------------------------------------------------------

def _redacted(env: dict, out: dict, memo) -> None:
    """Redact secrets in content, raw and top-level x_* values of `env` into `out`."""
    counter = [0]
    if memo is None:
        memo = {}
    redact_value = secrets.redact_value
    try:
        # values are independent (a pure function each, the memo only saves scans), so the
        # order they are redacted in does not matter; `out` keeps its own key order
        for key in ("content", "raw"):
            if key in env:
                out[key] = redact_value(env[key], counter, memo)
        try:  # one C pass over the names rules out extension keys on most events
            names = "\0".join(env)
            extended = names.startswith("x_") or "\0x_" in names
        except TypeError:  # a name that is not a string
            extended = True
        if extended:
            for key in [k for k in env if isinstance(k, str) and k.startswith("x_")]:
                out[key] = redact_value(env[key], counter, memo)
    finally:
        if isinstance(memo, secrets.RedactionMemo):
            memo.end_event()


_METADATA_TEXTS = (("provider_version", "provider_event_name", "provider_session_id", "provider_turn_id"),
                   ("agent", ("model", "agent_type", "provider_agent_id")),
                   ("tool", ("name", "call_id")),
                   ("project", ("root", "name", "branch", "head", "repo_remote")))
"""The free text of an envelope's metadata, as a hook sends it: kept in every capture mode, so
a secret in it (a token in a branch, a working directory, a model or version field) is
redacted like one in content. Ids derived from them (session, project) were derived before."""


_CLEAN: set = set()
_CLEAN_MAX = 4096


def _redacted_metadata(out: dict, memo) -> None:
    """Redact secrets in the metadata texts of `out` (and every text of its paths), in place;
    blocks and lists are copied before a change, so the caller's envelope stays as it was."""
    def text(v):
        if not isinstance(v, str) or v in _CLEAN:
            return v
        got = secrets.redact_value(v, None, memo)
        if got is v:  # nothing found: remembered (a session's ids, root and branch recur on every event)
            if len(_CLEAN) >= _CLEAN_MAX:
                _CLEAN.clear()
            _CLEAN.add(v)
        return got

    for key in _METADATA_TEXTS[0]:
        v = out.get(key)
        if v is not None and v.__class__ is str and v not in _CLEAN:
            out[key] = text(v)
    for block, keys in _METADATA_TEXTS[1:]:
        b = out.get(block)
        if isinstance(b, dict) and any(b.get(k).__class__ is str and b[k] not in _CLEAN for k in keys):
            out[block] = {k: text(v) if k in keys else v for k, v in b.items()}
    paths = out.get("paths")
    if isinstance(paths, list) and any(not isinstance(p, dict) or any(
            v.__class__ is str and v not in _CLEAN for v in p.values()) for p in paths):
        out["paths"] = [{k: text(v) for k, v in p.items()} if isinstance(p, dict) else p for p in paths]


def ingest(env: dict, *, redact_secrets: bool = True, db_mode=None, memo=None) -> dict:
    """The ingestion contract (module invariants), returning a new envelope. `memo` (a
    secrets.RedactionMemo) lets a stream of events share the scans of texts that recur."""
    if not isinstance(env, dict):
        return env
    out = dict(env)
    mode = parse_mode(out.get("capture_mode"))
    strict = mode is None or mode == "metadata_only"
    if db_mode is not None and parse_mode(db_mode) in (None, "metadata_only"):
        strict = True
    if strict:
        out.pop("content", None)
        out.pop("raw", None)
        for key in [k for k in out if isinstance(k, str) and k.startswith("x_")]:
            out.pop(key)  # a writer's extension can carry anything: content-bearing by default
        out["capture_mode"] = "metadata_only"
    attrs = out.get("attrs")
    failed = False
    if redact_secrets:
        try:
            _redacted_metadata(out, memo)
            _redacted(out, out, memo)
        except Exception:  # the scanner must never cost the event: drop its content instead
            failed = True
            out.pop("content", None)
            out.pop("raw", None)
            for key in list(out):
                if isinstance(key, str) and key.startswith("x_"):
                    out.pop(key)
    if failed:
        attrs = dict(attrs) if isinstance(attrs, dict) else {}
        attrs[REDACTION_FAILED_KEY] = True
    if attrs is not None or "attrs" in out:
        attrs, _ = sanitise_attrs(attrs)
        out["attrs"] = attrs
    return out


def clamp_line(line: str) -> str:
    """A canonical line with its content left out, as `ingest` does under metadata_only (no
    content, raw or x_* extension; capture_mode metadata_only): what bundles and proofs
    disclose by default."""
    from ..model import event, fastjson
    env = ingest(fastjson.loads(line), db_mode="metadata_only", redact_secrets=False)
    return event.line(event.canonical(env))
