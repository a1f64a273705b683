"""The merge algorithm: a config's text in, the text with exactly our subscriptions out.

Invariants (pure functions, no I/O):
- Validation first: the top level must be an object, `hooks` (if present) an object, each of
  our events (if present) an array; otherwise the config is refused, never rewritten.
- Every hook object of ours is removed from every event (nested: from each group's `hooks`,
  a group emptied by that is dropped; flat: the objects themselves).
- Install then puts one subscription per capture event where our first one was (else at
  the end; new events at the end of `hooks`, `hooks` at the end of the document, a missing
  base key such as Cursor's `version` first) and names in `Result.created` each part it
  created (see `record`).
- Given the record of what install created, uninstall takes back exactly those parts, each
  only while it is what install wrote (a container empty without a comment, the same value),
  and the whole document when the file did not exist before and nothing else is left in it
  (`take_back`, the MCP server's uninstall's too: only the parts its own install made);
  a part the user had, even empty, stays. Without a record (an older install) an event array
  our removal emptied is dropped, and an emptied `hooks` object — never one holding a comment
  (JSONC: the user's text). Install always drops an array of an event it does not subscribe
  that held only entries of ours (a repair), on the same terms.
- A container of the user's that install puts the first child into while it holds only
  whitespace (`"hooks": {\n}`, `"PreToolUse": [ ]`, the document `{\n}`) is named in
  `Result.filled` with that whitespace (see `filled_part`); uninstall (with the record) writes
  the whitespace back into each one it leaves empty (`restore_filled`), since removing the last
  child of a container always leaves `{}` / `[]`.
- A config that already holds exactly the wanted subscriptions is left byte-for-byte alone;
  otherwise only the spliced parts change (see jsonstyle).
- A base key install added (Cursor's `"version": 1`, which the file's hooks are read under) is
  recorded with the SHA-256 of the hooks the document held then (`hooks_digest`, as
  `hooks_before`), and uninstall takes it back only while the hooks left are those: a hook the
  user added meanwhile keeps its `version` (a record without it: only once no hook is left).
"""

import hashlib
import json

from . import command as command_mod
from . import jsonstyle
from . import record as record_mod
from .agents import FLAT, NESTED, Agent

INSTALLED = "installed"
UPDATED = "updated"
CURRENT = "already_current"
REMOVED = "removed"
NOT_INSTALLED = "not_installed"


class ShapeError(jsonstyle.JSONStyleError):
    def __init__(self, message):
        super().__init__("installer.config_shape", message + "; refusing to modify it")


def same_value(a, b) -> bool:
    """JSON equality (True is not 1; key order does not matter)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def parse_config(agent: Agent, text: str | None):
    """(root node or None for a missing/blank file). Raises a coded error on malformed input."""
    if text is None or not text.lstrip(jsonstyle.BOM).strip():
        return None
    root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
    validate(agent, root)
    return root


def validate(agent: Agent, root) -> None:
    if root.kind != "object":
        raise ShapeError("the top level is not a JSON object")
    hooks = root.get("hooks")
    if hooks is None:
        return
    if hooks.value.kind != "object":
        raise ShapeError('"hooks" is not an object')
    for ev in agent.events:
        m = hooks.value.get(ev)
        if m is not None and m.value.kind != "array":
            raise ShapeError(f'"hooks.{ev}" is not an array')


# --- finding ours -----------------------------------------------------------------------------

class Found:
    """Our hook objects in one event array: `spots` = [(group index, handler index or None)]
    (flat: (index, None)); `first` = the array index of the first one."""

    __slots__ = ("event", "spots", "first", "whole_groups")

    def __init__(self, event):
        self.event = event
        self.spots = []
        self.first = None
        self.whole_groups = set()


def _is_ours(agent, node) -> bool:
    return node.kind == "object" and agent.is_ours_object(node.to_python())


def find_ours(agent: Agent, root) -> dict:
    """event name → Found, for every event array that holds something of ours."""
    out = {}
    hooks = root.get("hooks") if root is not None else None
    if hooks is None or hooks.value.kind != "object":
        return out
    for m in hooks.value.members:
        arr = m.value
        if arr.kind != "array":
            continue
        f = Found(m.key)
        for gi, item in enumerate(arr.items):
            if agent.shape == FLAT:
                if _is_ours(agent, item):
                    f.spots.append((gi, None))
                continue
            inner = item.get("hooks") if item.kind == "object" else None
            if inner is None or inner.value.kind != "array":
                continue
            hs = inner.value.items
            mine = [hi for hi, h in enumerate(hs) if _is_ours(agent, h)]
            for hi in mine:
                f.spots.append((gi, hi))
            if mine and len(mine) == len(hs):
                f.whole_groups.add(gi)
        if f.spots:
            f.first = f.spots[0][0]
            out[m.key] = f
    return out


def _tuned(t) -> bool:
    return isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0


def untimed(unit):
    """A subscription (a group of handlers, or one handler) without its handlers' `timeout`:
    the one field of our entries a user may tune (a positive number; any other value stays,
    and differs)."""
    def handler(h):
        if isinstance(h, dict) and _tuned(h.get("timeout")):
            return {k: v for k, v in h.items() if k != "timeout"}
        return h
    if isinstance(unit, dict) and isinstance(unit.get("hooks"), list):
        return {**unit, "hooks": [handler(h) for h in unit["hooks"]]}
    return handler(unit)


def user_timeouts(agent: Agent, root) -> dict:
    """event → the timeout of our one handler for it, where the user set another than ours
    (install keeps it)."""
    out = {}
    hooks = root.get("hooks") if root is not None else None
    for ev, f in find_ours(agent, root).items():
        if len(f.spots) != 1 or ev not in agent.events:
            continue
        gi, hi = f.spots[0]
        node = hooks.value.get(ev).value.items[gi]
        h = (node if hi is None else node.get("hooks").value.items[hi]).to_python()
        mine = agent.entry(ev, "").get("timeout")
        if _tuned(h.get("timeout")) and not same_value(h["timeout"], mine):
            out[ev] = h["timeout"]
    return out


def _timed(unit, timeout):
    """`unit` with its handler's timeout set to the user's `timeout` (None: ours)."""
    if timeout is None:
        return unit
    if isinstance(unit.get("hooks"), list):
        return {**unit, "hooks": [{**h, "timeout": timeout} for h in unit["hooks"]]}
    return {**unit, "timeout": timeout}


def is_current(agent: Agent, root, command: str) -> bool:
    """True when the config holds exactly one current subscription per capture event and
    nothing else of ours."""
    if root is None:
        return False
    if agent.base_document() and any(root.get(k) is None for k in agent.base_document()):
        return False
    hooks = root.get("hooks")
    if hooks is None:
        return False
    found = find_ours(agent, root)
    wanted = set(agent.events)
    if set(found) != wanted:
        return False
    for ev, f in found.items():
        if len(f.spots) != 1:
            return False
        gi, _ = f.spots[0]
        arr = hooks.value.get(ev).value
        if agent.shape == NESTED and gi not in f.whole_groups:
            return False
        if not same_value(untimed(arr.items[gi].to_python()), untimed(agent.unit(ev, command))):
            return False
    return True


# --- editing ----------------------------------------------------------------------------------

class Result:
    """What a merge would do: `text` (None = unchanged), `outcome`, the events whose entries
    were removed / added, the parts install `created` (record.Record.created), the user's empty
    containers it `filled` (record.Record.filled), and `delete`: the file goes (uninstall of a
    config install created)."""

    __slots__ = ("text", "outcome", "removed", "added", "created", "filled", "delete")

    def __init__(self, text, outcome, removed=(), added=(), created=(), delete=False, filled=()):
        self.text = text
        self.outcome = outcome
        self.removed = list(removed)
        self.added = list(added)
        self.created = list(created)
        self.filled = list(filled)
        self.delete = delete

    @property
    def changed(self) -> bool:
        return self.text is not None or self.delete


def _remove_one(agent, text, root) -> str | None:
    """Remove the last (in document order) hook object of ours; None when there is none."""
    found = find_ours(agent, root)
    if not found:
        return None
    hooks = root.get("hooks").value
    last_event = max(found, key=lambda ev: hooks.get(ev).start)
    f = found[last_event]
    arr = hooks.get(last_event).value
    gi, hi = f.spots[-1]
    if agent.shape == FLAT:
        return jsonstyle.remove_child(text, arr, gi)
    inner = arr.items[gi].get("hooks").value
    if len(inner.items) == 1:  # the group held only this one: it goes with it
        return jsonstyle.remove_child(text, arr, gi)
    return jsonstyle.remove_child(text, inner, hi)


def _strip_ours(agent, text, root):
    """Text with every hook object of ours removed, plus the Found map of the original."""
    found = find_ours(agent, root)
    cur_text, cur_root = text, root
    while True:
        nxt = _remove_one(agent, cur_text, cur_root)
        if nxt is None:
            return cur_text, cur_root, found
        cur_text = nxt
        cur_root = jsonstyle.parse(cur_text, allow_comments=agent.allow_comments)


def _drop_emptied(agent, text, root, found, keep=()):
    """Drop event arrays that removal emptied (except events in `keep`, and arrays that hold
    a comment)."""
    for ev in reversed(list(found)):
        if ev in keep:
            continue
        hooks = root.get("hooks").value
        m = hooks.get(ev)
        if m is not None and m.value.kind == "array" and not m.value.items and jsonstyle.bare(text, m.value):
            text = jsonstyle.remove_member(text, hooks, ev)
            root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
    return text, root


def _our_commands(agent, root):
    """The `command` of every hook object of ours in the config, in document order."""
    hooks = root.get("hooks") if root is not None else None
    out = []
    for ev, f in find_ours(agent, root).items():
        arr = hooks.value.get(ev).value
        for gi, hi in f.spots:
            node = arr.items[gi] if hi is None else arr.items[gi].get("hooks").value.items[hi]
            out.append(node.to_python().get("command"))
    return out


def hook_dbs(agent, root) -> set:
    """The databases our hook commands in the config name (`--db`; None for a command that
    names none: it resolves the database as every command does)."""
    return {command_mod.hook_db(c) for c in _our_commands(agent, root)}


def _added_capture_mode(agent, root) -> str | None:
    """The capture mode someone added to our current hook commands (command.added_capture_mode):
    the most private one when they differ, so a reinstall never raises it."""
    modes = {m for m in map(command_mod.added_capture_mode, _our_commands(agent, root)) if m is not None}
    for mode in ("metadata_only", "local_semantic", "full_sync"):
        if mode in modes:
            return mode
    return min(modes) if modes else None


def written_command(agent: Agent, root, command: str) -> str:
    """`command` as install writes it into this config: with the `--capture-mode` someone added
    to our current commands, so a reinstall never raises the mode."""
    mode = _added_capture_mode(agent, root)
    return command if mode is None else command_mod.with_capture_mode(command, mode)


def hooks_digest(root) -> str:
    """`sha256:<hex>` of the hooks a document holds: its `hooks` object less the event arrays
    that hold nothing, as JSON with sorted keys (no `hooks`, or one holding no hook, is `{}`)."""
    hooks = root.get("hooks") if root is not None and root.kind == "object" else None
    value = hooks.value.to_python() if hooks is not None else {}
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v != []}
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


NO_HOOKS = hooks_digest(None)


def filled_part(text: str, node, path) -> dict | None:
    """The record's `filled` entry for inserting the first child into container `node` (at
    `path`: its keys from the document, [] for the document itself), when it holds only
    whitespace, and some (else None: `{}` comes back as `{}`, and a comment stays by itself)."""
    if node.kind not in ("object", "array") or node.end - node.start <= 2 or not jsonstyle.bare(text, node):
        return None
    return {"path": list(path), "inner": text[node.start + 1:node.end - 1]}


def container_at(root, path):
    """The object or array at `path` (keys from the document; [] = the document), or None."""
    node = root
    for key in path:
        m = node.get(key) if node is not None and node.kind == "object" else None
        if m is None:
            return None
        node = m.value
    return node if node is not None and node.kind in ("object", "array") else None


def restore_filled(text, root, filled, allow_comments=False):
    """(text, root) with the whitespace of each filled container written back into it, where it
    is empty again exactly as removing its last child leaves it (`{}` / `[]`)."""
    for part in filled:
        node = container_at(root, part["path"])
        if node is None or node.end - node.start != 2:
            continue
        text = text[:node.start + 1] + part["inner"] + text[node.end - 1:]
        root = jsonstyle.parse(text, allow_comments=allow_comments)
    return text, root


def still_filled(text, filled, allow_comments=False):
    """The entries of `filled` whose container `text` still holds, with something in it (the
    others were written back, or are gone): what a later uninstall may still give back."""
    if not filled or text is None or not text.lstrip(jsonstyle.BOM).strip():
        return []
    try:
        root = jsonstyle.parse(text, allow_comments=allow_comments)
    except jsonstyle.JSONStyleError:
        return []
    out = []
    for part in filled:
        node = container_at(root, part["path"])
        if node is not None and (node.members if node.kind == "object" else node.items):
            out.append(part)
    return out


def plan_install(agent: Agent, text: str | None, command: str) -> Result:
    """Merge our subscriptions (`command`, with `written_command`) into a config's text."""
    root = parse_config(agent, text)
    command = written_command(agent, root, command)
    if root is not None and is_current(agent, root, command):
        return Result(None, CURRENT)
    created, filled = [], []

    def filling(node, path):
        part = filled_part(text, node, path)
        if part is not None:
            filled.append(part)

    if root is None:
        style = jsonstyle.Style()
        prefix = jsonstyle.BOM if text and text.startswith(jsonstyle.BOM) else ""
        text = prefix + jsonstyle.render_document(agent.base_document(), style)
        root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
        created += [{"path": [k], "value": v, "hooks_before": NO_HOOKS} for k, v in agent.base_document().items()]
    else:
        style = jsonstyle.detect_style(text, root)
    original = text
    timeouts = user_timeouts(agent, root)
    text, root, found = _strip_ours(agent, text, root)
    text, root = _drop_emptied(agent, text, root, found, keep=agent.events)
    for k, v in agent.base_document().items():  # Cursor: "version": 1 first if absent
        if root.get(k) is None:
            filling(root, [])
            before = hooks_digest(root)
            text = jsonstyle.insert_member(text, root, 0, k, v, style)
            root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
            created.append({"path": [k], "value": v, "hooks_before": before})
    if root.get("hooks") is None:
        filling(root, [])
        text = jsonstyle.insert_member(text, root, None, "hooks", {}, style)
        root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
        created.append({"path": ["hooks"], "kind": "object"})
    for ev in agent.events:
        hooks = root.get("hooks").value
        unit = _timed(agent.unit(ev, command), timeouts.get(ev))
        m = hooks.get(ev)
        if m is None:
            filling(hooks, ["hooks"])
            text = jsonstyle.insert_member(text, hooks, None, ev, [unit], style)
            created.append({"path": ["hooks", ev], "kind": "array"})
        else:
            f = found.get(ev)
            filling(m.value, ["hooks", ev])
            text = jsonstyle.insert_item(text, m.value, f.first if f else None, unit, style)
        root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
    if text == original:
        return Result(None, CURRENT)
    outcome = UPDATED if found else INSTALLED
    return Result(text, outcome, removed=list(found), added=list(agent.events), created=created, filled=filled)


def _member_at(root, path):
    """(the object holding the member at `path`, that member), or (None, None)."""
    node = root
    for key in path[:-1]:
        m = node.get(key) if node.kind == "object" else None
        if m is None:
            return None, None
        node = m.value
    if node.kind != "object":
        return None, None
    return node, node.get(path[-1])


def _still_as_written(text, node, part, root) -> bool:
    if "value" in part:  # a base key: also only while the hooks are those it was added beside
        return (same_value(node.to_python(), part["value"])
                and hooks_digest(root) == part.get("hooks_before", NO_HOOKS))
    if node.kind != part["kind"]:
        return False
    return not (node.members if node.kind == "object" else node.items) and jsonstyle.bare(text, node)


def _take_back(text, root, created, allow_comments):
    """Remove each part install created that is still as install wrote it, innermost (and
    last made) first: the inverse of the inserts."""
    order = sorted(range(len(created)), key=lambda i: (-len(created[i]["path"]), -i))
    for i in order:
        part = created[i]
        obj, m = _member_at(root, part["path"])
        if m is None or not _still_as_written(text, m.value, part, root):
            continue
        text = jsonstyle.remove_member(text, obj, m.key)
        root = jsonstyle.parse(text, allow_comments=allow_comments)
    return text, root


def take_back(text, root, record, owner, allow_comments=False):
    """(text, delete) once the parts `owner`'s install created (`record`) are taken back from a
    document its entries are already out of, and the whitespace of the user's containers the
    installs filled is back in those left empty: the file goes (`delete`) or gets its
    whitespace back when it was not there (or blank) before and nothing else is left in it.
    Shared by the hooks and the MCP server (attemptdb.installer.mcpconfig)."""
    text, root = _take_back(text, root, record.parts(owner), allow_comments)
    text, root = restore_filled(text, root, record.filled, allow_comments)
    return record.give_back(text, jsonstyle.empty_document(text, root))


def plan_uninstall(agent: Agent, text: str | None, record=None) -> Result:
    """Remove every subscription of ours from a config's text, and what install created for
    them (`record`: record.Record; None, or one that does not list the hooks' install, when
    unknown: what only our entries filled)."""
    root = parse_config(agent, text)
    if root is None:
        return Result(None, NOT_INSTALLED)
    found = find_ours(agent, root)
    if not found:
        return Result(None, NOT_INSTALLED)
    text, root, found = _strip_ours(agent, text, root)
    if record is None or not record.knows(record_mod.HOOKS):
        text, root = _drop_emptied(agent, text, root, found)
        hooks = root.get("hooks")
        if (hooks is not None and hooks.value.kind == "object" and not hooks.value.members
                and jsonstyle.bare(text, hooks.value)):
            text = jsonstyle.remove_member(text, root, "hooks")
            root = jsonstyle.parse(text, allow_comments=agent.allow_comments)
        if record is not None:  # the other install's record: a document it filled, emptied now
            text, root = restore_filled(text, root, record.filled, agent.allow_comments)
        return Result(text, REMOVED, removed=list(found))
    text, delete = take_back(text, root, record, record_mod.HOOKS, agent.allow_comments)
    return Result(text, REMOVED, removed=list(found), delete=delete)
