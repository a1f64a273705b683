"""Codex's `config.toml`: the hooks feature flag, and reading (never writing) hook trust.

Facts (Codex docs and source): hooks are enabled by default in current Codex; `[features]
hooks = false` turns them off (`codex_hooks` is the deprecated alias — Codex ≥ 0.130 warns
about it; older Codex needed `codex_hooks = true`). Each non-managed hook must be trusted
by the user in Codex (`/hooks`); Codex records that in `[hooks.state."<hooks.json path>:
<event_snake>:<group>:<handler>"]` as `trusted_hash = "sha256:<hex>"` (and `enabled`), the
SHA-256 of the compact, key-sorted JSON of the normalised hook identity `{event_name, matcher?,
hooks: [{type: "command", command, timeout, async: false}]}`.

Invariants: when neither `hooks` nor `codex_hooks` is set we add `hooks = true` under
`[features]`, each added line marked `# added by attemptdb` so uninstall removes exactly what
we added; a value the user set is never changed (an explicit `false` is reported, not
overridden); every edit is re-parsed and must change nothing but that key, else nothing is
written; trust state is never written — only the user grants trust. The marked lines are what
uninstall takes back; the record beside config.toml (attemptdb.installer.record, shared with
`--mcp`'s server table) says what the file was before, so a config.toml that was empty or blank
comes back as it was and one install created goes once nothing else is in it.
"""

import hashlib
import json
import tomllib

from . import record

MARK = "# added by attemptdb"
KEY_LINE = "hooks = true  " + MARK
HEADER_LINE = "[features]  " + MARK

ENABLED = "enabled"          # set true (either key)
DEFAULT = "default"          # not set: current Codex enables hooks by default
DISABLED = "disabled"        # set false (or not a boolean)


def invalid_at(text: str | None) -> str:
    """Where tomllib stops reading `text`, as ` (line N, column M)`; '' when it reads it (only
    the place: never the text, which may hold a secret)."""
    try:
        tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        i = msg.rfind("(at line ")
        return f" ({msg[i + 4:]}" if i >= 0 and msg.endswith(")") else ""
    return ""


def load(text: str | None):
    """(parsed document or None, error code or None). A missing file is an empty document."""
    if text is None:
        return {}, None
    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError:
        return None, "installer.codex_config_invalid"


def hooks_feature(doc: dict) -> tuple[str, str | None]:
    """(state, the key that decides it). `hooks` wins over the deprecated `codex_hooks`."""
    features = doc.get("features") if isinstance(doc, dict) else None
    if not isinstance(features, dict):
        return DEFAULT, None
    for key in ("hooks", "codex_hooks"):
        if key in features:
            return (ENABLED if features[key] is True else DISABLED), key
    return DEFAULT, None


def _newline(text: str) -> str:
    i = text.find("\n")
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def _is_features_header(line: str) -> bool:
    s = line.strip()
    if "#" in s:
        s = s[: s.index("#")].strip()
    if not (s.startswith("[") and s.endswith("]")) or s.startswith("[["):
        return False
    return s[1:-1].strip() == "features"


def _without(doc, added_table: bool):
    """`doc` minus the key we add (and the table, if we added it)."""
    out = dict(doc)
    feats = dict(out.get("features", {}))
    feats.pop("hooks", None)
    if added_table and not feats:
        out.pop("features", None)
    else:
        out["features"] = feats
    return out


def ours(text: str | None) -> bool:
    """Whether config.toml holds a line we added (our key, or our `[features]` header)."""
    return text is not None and MARK in text and any(
        ln.rstrip() in (KEY_LINE, HEADER_LINE) for ln in text.splitlines())


class Plan:
    """A config.toml change: `text` (None = unchanged), `delete` (the file goes: install had
    created it), `note` for the user, `state` of the feature afterwards; `created` is
    record.Record's (none: our lines carry their mark)."""

    __slots__ = ("text", "note", "state", "error", "delete", "created")

    def __init__(self, text=None, note=None, state=None, error=None, delete=False):
        self.text, self.note, self.state, self.error = text, note, state, error
        self.delete, self.created = delete, []

    @property
    def changed(self):
        return self.text is not None or self.delete


def plan_enable(text: str | None) -> Plan:
    """Make sure Codex runs hooks, touching the file only if neither key is set."""
    doc, err = load(text)
    if err:
        return Plan(note=f"config.toml is not valid TOML{invalid_at(text)}; left untouched (Codex will not "
                         "start until it is fixed)", error=err)
    state, key = hooks_feature(doc)
    if state == ENABLED:
        note = None
        if key == "codex_hooks":
            note = ("[features].codex_hooks is deprecated (Codex ≥ 0.130 warns about it); "
                    "rename it to hooks")
        return Plan(state=ENABLED, note=note)
    if state == DISABLED:
        return Plan(state=DISABLED,
                    note=f"Codex hooks are turned off ([features].{key} = false in config.toml); "
                         "left as you set it — attempt captures nothing from Codex until you "
                         "turn them on")
    body = text or ""
    nl = _newline(body) if body else "\n"
    lines = body.splitlines(keepends=True)
    features = doc.get("features")
    if isinstance(features, dict):
        at = next((i for i, ln in enumerate(lines) if _is_features_header(ln)), None)
        if at is None:
            return Plan(state=DEFAULT, note="config.toml defines [features] in a form we do not "
                                            "edit; hooks stay at Codex's default (on)")
        new_lines = lines[: at + 1] + [KEY_LINE + nl] + lines[at + 1:]
        if not lines[at].endswith("\n"):
            new_lines[at] = lines[at] + nl
        new = "".join(new_lines)
        added_table = False
    elif "features" in doc:
        return Plan(state=DEFAULT, note="config.toml has a non-table `features`; left untouched")
    else:
        # a file without a final newline keeps that style: our block then ends unterminated
        unterminated = bool(body) and not body.endswith("\n")
        new = body + (nl if unterminated else "")
        if new.strip():
            new += nl
        new += HEADER_LINE + nl + KEY_LINE + ("" if unterminated else nl)
        added_table = True
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if (after is None or hooks_feature(after) != (ENABLED, "hooks")
            or _without(after, added_table) != doc):
        return Plan(state=DEFAULT, note="could not add [features] hooks = true to config.toml "
                                        "safely; left untouched (Codex's default is on)")
    return Plan(text=new, state=ENABLED)


def plan_cleanup(text: str | None, rec=None) -> Plan:
    """Remove exactly the lines we added (the key; our `[features]` header once its table
    is empty again, with the blank line we put before it). Anything else stays; the result
    is re-parsed and must differ from the original only by what we added. Then the file as it
    was before install (`rec`: record.Record of config.toml; see `record.given_back`)."""
    if text is None or MARK not in text:
        return Plan()
    lines = text.splitlines(keepends=True)
    keep = [ln for ln in lines if ln.rstrip("\r\n").rstrip() != KEY_LINE]
    removed_key = len(keep) != len(lines)
    removed_header = False
    for i, ln in enumerate(keep):
        if ln.rstrip("\r\n").rstrip() != HEADER_LINE:
            continue
        j = i + 1
        while j < len(keep) and not keep[j].lstrip().startswith("["):
            if keep[j].strip() and not keep[j].lstrip().startswith("#"):
                break
            j += 1
        if j == len(keep) or keep[j].lstrip().startswith("["):
            del keep[i]
            removed_header = True
            if i > 0 and not keep[i - 1].strip():
                del keep[i - 1]
        break
    new = "".join(keep)
    if not text.endswith("\n") and new.endswith("\n"):  # our block ended an unterminated file
        new = new[:-2] if new.endswith("\r\n") else new[:-1]
    if new == text:
        return Plan()
    before, err = load(text)
    after, err2 = load(new)
    expect = dict(before or {})
    if removed_key and isinstance(expect.get("features"), dict):
        expect["features"] = {k: v for k, v in expect["features"].items() if k != "hooks"}
    if removed_header and expect.get("features") == {}:
        expect.pop("features")
    if err or err2 or after != expect:
        return Plan(note="config.toml changed in a way we do not recognise; left untouched")
    new, delete = record.given_back(rec, record.HOOKS, new)
    return Plan(delete=True) if delete else Plan(text=new)


# --- trust (read only) ------------------------------------------------------------------------

def event_label(event: str) -> str:
    """Codex's snake-case event key: `PreToolUse` → `pre_tool_use`."""
    out = []
    for i, c in enumerate(event):
        if c.isupper() and i:
            out.append("_")
        out.append(c.lower())
    return "".join(out)


def trust_hash(event: str, command: str, timeout: int, matcher: str | None = None) -> str:
    """The hash Codex records when the user trusts this hook (see the module docstring)."""
    label = event_label(event)
    t = max(int(timeout), 1)
    if label in ("session_end", "interrupt"):
        t = min(t, 3)
    ident = {"event_name": label,
             "hooks": [{"type": "command", "command": command, "timeout": t, "async": False}]}
    if matcher is not None and label not in ("user_prompt_submit", "stop", "interrupt"):
        ident["matcher"] = matcher
    data = json.dumps(ident, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


def trust_key(hooks_json_path: str, event: str, group: int, handler: int) -> str:
    return f"{hooks_json_path}:{event_label(event)}:{group}:{handler}"


TRUSTED = "trusted"
MODIFIED = "modified"
UNTRUSTED = "untrusted"


def hook_state(doc: dict | None, paths, event, group, handler, command, timeout):
    """(trust status, enabled) of one hook, looked up under every spelling of the path."""
    states = {}
    if isinstance(doc, dict):
        hooks = doc.get("hooks")
        if isinstance(hooks, dict) and isinstance(hooks.get("state"), dict):
            states = hooks["state"]
    want = trust_hash(event, command, timeout)
    for p in paths:
        rec = states.get(trust_key(p, event, group, handler))
        if isinstance(rec, dict):
            enabled = rec.get("enabled") is not False
            got = rec.get("trusted_hash")
            if got is None:
                return UNTRUSTED, enabled
            return (TRUSTED if got == want else MODIFIED), enabled
    return UNTRUSTED, True
