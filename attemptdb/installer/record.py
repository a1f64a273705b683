"""What `attempt hook install` created in an agent's config, so that `uninstall` takes back
exactly that: the record `<config>.attemptdb.created`, beside the config (as its backups are).

Invariants: the record names only what install added — parts of the document that did not exist
before it (`hooks`, an event array, Cursor's `"version": 1`, each with what install wrote there)
and whether the file itself did not exist (or held only whitespace, kept to write back); a part
the user had, even empty, is never named. A fresh install (no entry of ours in the config) starts
a new record, since what is there then is the user's; a reinstall keeps what the first one
created and adds what it created itself. The record is written only after the config was
replaced, under the config's lock (never for a dry run, a no-op or a refused write), and removed
by the uninstall that takes our entries out. A record that is missing, unreadable, malformed or
a symbolic link is no record (an install by an older version): uninstall then drops what our
entries alone filled, as it always did. It holds key names and whitespace, never a value of the
user's.
"""

import json
import os

from ..errors import AttemptError
from . import fileops

SUFFIX = ".attemptdb.created"
FORMAT = 1
MAX_BYTES = 256 * 1024

# Record.file: what the config file was before the install that created the record
EXISTED = "existed"      # a document: the file stays whatever uninstall leaves in it
ABSENT = "absent"        # no file: uninstall removes it once nothing else is in it
BLANK = "blank"          # only whitespace (`blank` holds it): written back once nothing else is in it


class Record:
    """`created`: [{"path": [key, …], "kind": "object"|"array"} or {"path": [...], "value": v}],
    outermost first; `file` (EXISTED, ABSENT, BLANK) and `blank` (the text, for BLANK)."""

    __slots__ = ("file", "blank", "created")

    def __init__(self, file=EXISTED, blank=None, created=()):
        self.file = file
        self.blank = blank
        self.created = [dict(c) for c in created]

    def to_json(self):
        out = {"format": FORMAT, "file": self.file, "created": self.created}
        if self.file == BLANK:
            out["blank"] = self.blank
        return out

    def __eq__(self, other):
        return isinstance(other, Record) and self.to_json() == other.to_json()

    def paths(self):
        return [tuple(c["path"]) for c in self.created]

    @classmethod
    def before(cls, text, created):
        """The record of a fresh install into a config whose text was `text` (None: no file)."""
        if text is None:
            return cls(ABSENT, None, created)
        if not text.lstrip("\ufeff").strip():
            return cls(BLANK, text, created)
        return cls(EXISTED, None, created)

    def adding(self, created) -> "Record":
        """This record plus the parts a reinstall created (those it names already stay as they are)."""
        have = set(self.paths())
        return Record(self.file, self.blank, self.created + [c for c in created if tuple(c["path"]) not in have])


def record_path(config_path: str) -> str:
    """Beside the config as it is named (a link's record sits beside the link, as backups do)."""
    return os.path.abspath(config_path) + SUFFIX


def _valid_part(c) -> bool:
    if not isinstance(c, dict) or not isinstance(c.get("path"), list) or not c["path"]:
        return False
    if not all(isinstance(k, str) for k in c["path"]):
        return False
    if "value" in c:
        return set(c) == {"path", "value"}
    return set(c) == {"path", "kind"} and c["kind"] in ("object", "array")


def _parse(data: bytes):
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None
    file, created = doc.get("file"), doc.get("created")
    if file not in (EXISTED, ABSENT, BLANK) or not isinstance(created, list):
        return None
    if not all(_valid_part(c) for c in created):
        return None
    blank = doc.get("blank")
    if file == BLANK and not (isinstance(blank, str) and not blank.lstrip("\ufeff").strip()):
        return None
    return Record(file, blank if file == BLANK else None, created)


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
