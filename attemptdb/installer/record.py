"""What `attempt hook install` and `attempt hook install --mcp` created in an agent's config,
so that each uninstall takes back exactly that: the record `<config>.attemptdb.created`, beside
the config (as its backups are). One record per config file: Gemini CLI's settings.json holds
both our hooks and our MCP server, and both installs write it.

Invariants: the record names only what an install added — parts of the document that did not
exist before it (`hooks`, an event array, Cursor's `"version": 1`, `mcpServers`, each with what
install wrote there), listed under the install that made them (HOOKS, MCP: disjoint, and each
uninstall takes back only its own) — and whether the file itself did not exist before the first
of them (or held only whitespace, kept to write back); a part the user had, even empty, is
never named. An install that finds none of its entries in the config (a fresh one) starts its
own list anew, since what is there then is the user's; the other install's list and the file's
state stay while that install's entries are still there, else the record starts anew. A
reinstall keeps what the first one created and adds what it created itself. The record is
written only after the config was replaced, under the config's lock (never for a dry run, a
no-op or a refused write); an uninstall takes its own list out (and the record, once no other
install's entries are left). The file goes only when the uninstall leaves nothing in it, so
when both installs made it, only the second uninstall removes it. A record that is missing,
unreadable, malformed or a symbolic link is no record, and an install it does not list was made
by an older version: its uninstall then drops what its entries alone filled, as it always did.

It also names each container of the user's that was empty with whitespace inside (`{\n}`,
`[ ]`, a whole document `{\n}`) when an install put the first child into it (`filled`: its
path and that whitespace, one list for the file, since the document itself may be filled by
one install and emptied by the other's uninstall): an uninstall that leaves such a container
empty (`{}`, as removing the last child always does) writes the whitespace back, so the user's
bytes come back; a filled container that is still holding something stays listed until it is
emptied (see `pending`).
It holds key names and whitespace, never a value of the user's; beside a base key install added
(Cursor's `"version": 1`) the SHA-256 of the hooks the file held then (`hooks_before`, see
merge: the key goes back only while those are the hooks left), which says nothing the backups
beside the config (0600, the whole bytes) do not.

Codex's config.toml has the same record (the hooks' feature flag and `--mcp`'s server table
both write it), but what each install added there carries its own mark in the text (lines
`# added by attemptdb`, see codexconfig and mcpconfig): its lists name no part, and the record
keeps what only it can — the file's state before the first install (`given_back`).
"""

import json
import os

from ..errors import AttemptError
from . import fileops

SUFFIX = ".attemptdb.created"
FORMAT = 2          # format 1 (one list, all the hooks') is read as the hooks' list
MAX_BYTES = 256 * 1024

# the installs that write configs: `attempt hook install` and `attempt hook install --mcp`
HOOKS = "hooks"
MCP = "mcp"
OWNERS = (HOOKS, MCP)

# Record.file: what the config file was before the first install the record lists
EXISTED = "existed"      # a document: the file stays whatever uninstall leaves in it
ABSENT = "absent"        # no file: uninstall removes it once nothing else is in it
BLANK = "blank"          # only whitespace (`blank` holds it): written back once nothing else is in it


_WS = " \t\r\n"
MAX_INNER = 4096    # the whitespace kept for one filled container


def is_blank(text: str) -> bool:
    """Whether a config's text holds only whitespace (and a BOM)."""
    return not text.lstrip("\ufeff").strip()


def _merge_filled(have, more) -> list:
    """`have` plus the fills of `more` at paths `have` does not name (the first install's
    whitespace is the user's; a reinstall only ever finds `{}` where it was)."""
    paths = {tuple(f["path"]) for f in have}
    out = [dict(f) for f in have]
    for f in more or ():
        if tuple(f["path"]) not in paths:
            paths.add(tuple(f["path"]))
            out.append(dict(f))
    return out


class Record:
    """`created`: {install (HOOKS, MCP): [{"path": [key, …], "kind": "object"|"array"} or
    {"path": [...], "value": v, "hooks_before": "sha256:…" (optional)}], outermost first}, an
    install listed (even with no part) being one whose entries this record knows; `file` (EXISTED, ABSENT, BLANK) and `blank` (the text,
    for BLANK); `filled`: [{"path": [key, …] ([] = the document), "inner": whitespace}], the
    user's empty containers an install put something into, with the whitespace they held."""

    __slots__ = ("file", "blank", "created", "filled")

    def __init__(self, file=EXISTED, blank=None, created=None, filled=None):
        self.file = file
        self.blank = blank
        self.created = {o: [dict(c) for c in parts] for o, parts in (created or {}).items()}
        self.filled = _merge_filled([], filled)

    def to_json(self):
        out = {"format": FORMAT, "file": self.file, "created": self.created}
        if self.file == BLANK:
            out["blank"] = self.blank
        if self.filled:
            out["filled"] = self.filled
        return out

    def __eq__(self, other):
        return isinstance(other, Record) and self.to_json() == other.to_json()

    def knows(self, owner) -> bool:
        """Whether this record lists what `owner`'s install created (else: an older install)."""
        return owner in self.created

    def parts(self, owner) -> list:
        return self.created.get(owner, [])

    def paths(self, owner):
        return [tuple(c["path"]) for c in self.parts(owner)]

    @classmethod
    def before(cls, text, owner, created, filled=()):
        """The record of a fresh install into a config whose text was `text` (None: no file)."""
        if text is None:
            return cls(ABSENT, None, {owner: created})  # (nothing of the user's to fill)
        if is_blank(text):
            return cls(BLANK, text, {owner: created})
        return cls(EXISTED, None, {owner: created}, filled)

    def _with(self, owner, parts, filled=()) -> "Record":
        return Record(self.file, self.blank, dict(self.created, **{owner: parts}),
                      _merge_filled(self.filled, filled))

    def adding(self, owner, created, filled=()) -> "Record":
        """This record plus the parts a reinstall created (those it names already stay as they are)."""
        have = set(self.paths(owner))
        return self._with(owner, self.parts(owner) + [c for c in created if tuple(c["path"]) not in have],
                          filled)

    def pending(self, still_filled) -> "Record":
        """This record keeping only the fills `still_filled(path)` says hold something yet (the
        others were written back, or their container is gone)."""
        return Record(self.file, self.blank, self.created,
                      [f for f in self.filled if still_filled(f["path"])])

    def give_back(self, text, empty) -> tuple:
        """(text, delete) for a config the listed installs' parts are out of, `empty` when
        nothing else is left in it: the file goes when it did not exist before (ABSENT), gets
        its whitespace back (BLANK), else stays as `text`."""
        if self.file == EXISTED or not empty:
            return text, False
        if self.file == ABSENT:
            return None, True
        return self.blank, False

    def keeping(self, owners) -> "Record | None":
        """Only the lists of `owners` (the installs whose entries are still there), or None when
        that is none: a record of nothing."""
        kept = {o: p for o, p in self.created.items() if o in owners}
        return Record(self.file, self.blank, kept, self.filled) if kept else None


def after_install(prior, owner, text, created, fresh, present, filled=()) -> "Record | None":
    """The record once `owner`'s install changed a config: `prior` (or None) the record it
    found, `text` what the config held before (None: no file), `created` the parts it made,
    `filled` the user's empty containers it put something into, `fresh` whether none of its
    entries was there, `present` the installs whose entries the config holds now. None: leave
    the record as it is."""
    if fresh:  # what is there is the user's, and what the other install (still there) made
        others = prior.keeping(set(present) - {owner}) if prior is not None else None
        if others is not None:
            return others._with(owner, created, filled)
        return Record.before(text, owner, created, filled)
    if prior is None or not prior.knows(owner):  # a reinstall over an older install's entries
        return None
    return prior.adding(owner, created, filled)


def given_back(prior, owner, text) -> tuple:
    """(text, delete) once `owner`'s marked lines are out of a config (Codex's config.toml),
    leaving `text`: as `Record.give_back` when `prior` lists `owner`'s install; else (an older
    install's, or no record) the file goes once nothing at all is left in it, as it always did."""
    if prior is not None and prior.knows(owner):
        return prior.give_back(text, is_blank(text))
    return (None, True) if text == "" else (text, False)


def after_uninstall(prior, owner, present) -> "Record | None":
    """The record once `owner`'s entries were taken out: the lists of the other installs whose
    entries are still there (`present`), or None (no record)."""
    return prior.keeping(set(present) - {owner}) if prior is not None else None


def record_path(config_path: str) -> str:
    """Beside the config as it is named (a link's record sits beside the link, as backups do)."""
    return os.path.abspath(config_path) + SUFFIX


def _is_digest(v) -> bool:
    return (isinstance(v, str) and v.startswith("sha256:") and len(v) == 71
            and all(ch in "0123456789abcdef" for ch in v[7:]))


def _valid_part(c) -> bool:
    if not isinstance(c, dict) or not isinstance(c.get("path"), list) or not c["path"]:
        return False
    if not all(isinstance(k, str) for k in c["path"]):
        return False
    if "value" in c:  # a base key (Cursor's version), with the hooks it was added beside
        return set(c) <= {"path", "value", "hooks_before"} and (
            "hooks_before" not in c or _is_digest(c["hooks_before"]))
    return set(c) == {"path", "kind"} and c["kind"] in ("object", "array")


def is_fill(f) -> bool:
    """A well-formed `filled` entry: a path of key names (empty: the document) and the
    whitespace (only JSON whitespace, not none) its container held."""
    return (isinstance(f, dict) and set(f) == {"path", "inner"} and isinstance(f["path"], list)
            and all(isinstance(k, str) for k in f["path"]) and isinstance(f["inner"], str)
            and 0 < len(f["inner"]) <= MAX_INNER and not f["inner"].strip(_WS))


def _parse(data: bytes):
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("format") not in (1, FORMAT):
        return None
    file, created = doc.get("file"), doc.get("created")
    if doc["format"] == 1:
        created = {HOOKS: created}
    if file not in (EXISTED, ABSENT, BLANK) or not isinstance(created, dict) or not set(created) <= set(OWNERS):
        return None
    if not all(isinstance(parts, list) and all(_valid_part(c) for c in parts) for parts in created.values()):
        return None
    ws = doc.get("blank")
    if file == BLANK and not (isinstance(ws, str) and is_blank(ws)):
        return None
    filled = doc.get("filled", [])
    if not isinstance(filled, list) or not all(is_fill(f) for f in filled):
        return None
    return Record(file, ws if file == BLANK else None, created, filled)


def load(config_path: str) -> Record | None:
    """The record for `config_path`, or None (none, or one we cannot trust: see the module)."""
    try:
        fd = os.open(record_path(config_path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_BYTES:
        return None
    return _parse(data)


def save(config_path: str, rec: Record) -> None:
    """Write the record atomically (a link in its place is replaced, never followed)."""
    data = (json.dumps(rec.to_json(), ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    fileops.atomic_write(record_path(config_path), data, follow_links=False)


def drop(config_path: str) -> None:
    """Remove the record (there being none is fine)."""
    path = record_path(config_path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise fileops.FileOpError("installer.write_failed",
                                  f"cannot remove {path} ({e.strerror or e.__class__.__name__})") from None


def save_quietly(config_path: str, rec: Record | None, notes: list) -> None:
    """`save` (or `drop` for None) after the config was written: a failure is a note, not a
    failed command (the config is as asked; the next uninstall then works as for an install
    by an older version)."""
    try:
        if rec is None:
            drop(config_path)
        else:
            save(config_path, rec)
    except AttemptError as e:
        notes.append(f"could not {'remove' if rec is None else 'write'} the record of what install "
                     f"created ({e.message}); uninstall then removes our entries and what only they filled")
