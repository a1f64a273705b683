"""The hash chain: the one rule linking each event row to the row before it, and the check of
a range of stored rows against it (spec/canonical-event.md).

Invariants:
- `chain_hash(n) = SHA-256(chain_hash(n-1) ‖ event_hash(n))` over the raw 32-byte digests,
  with `chain_hash(0) = GENESIS`; `event_hash` is the SHA-256 of the row's canonical line
  (`event.line_from_row`). `link` (hex) and `link_digest` (raw digests) are the only places
  the rule is written; the store appends with it, verify, checkpoint signing and bundles
  check with it.
- A row verifies only when its spliced JSON texts cut the line where the writer cut it: the
  line splices attrs, content, the raw payload (expanded) and the unknown fields verbatim,
  so it is the same bytes however its text is shared out among those columns (a payload
  moved onto the end of content_json, the content into attrs_json, the x_ fields into the
  payload). A text moved across a cut carries the key the line writes there, so each of
  attrs, content and payload that holds one of those keys (`holds_a_key`) must be one JSON
  value, and the unknown fields one JSON object, by SQLite's json_valid (`spliced_ok`; the
  writer only stores texts that pass).
- `check_rows` reads only; it names the first row (by seq) that does not hash, derive or link.
  Verify reaches it through attemptdb.integrity.bulkcheck, whose faster pass over a large
  range hands every range it cannot pass back to it.
Only hashlib/_sha256 and our hook-path modules: the store imports this on the hook path.
"""

from ..model import event, fastjson, ids, payload

GENESIS = "0" * 64


def link(prev_chain: str, event_hash: str, sha256=ids.sha256) -> str:
    """The chain hash of a row whose event hash is `event_hash`, after a row whose chain hash
    is `prev_chain` (both hex)."""
    return sha256(bytes.fromhex(prev_chain + event_hash)).hexdigest()


def link_digest(prev_chain: bytes, event_hash: bytes, sha256=ids.sha256) -> bytes:
    """`link` over the raw 32-byte digests (the bulk check's form of the same rule)."""
    return sha256(prev_chain + event_hash).digest()


def bulk_sha256():
    """hashlib's OpenSSL SHA-256: ~5x faster per byte than `_sha256`, worth its import for
    more than a handful of rows."""
    from hashlib import sha256
    return sha256


def hash_line(line: str, sha256=ids.sha256) -> str:
    """SHA-256 (hex) of a canonical line. The builtin `_sha256` costs nothing to import (one
    event per hook call); bulk paths pass `bulk_sha256()`."""
    try:
        data = line.encode("utf-8")
    except UnicodeEncodeError:
        raise event.EventError("$", "text is not valid Unicode (a lone surrogate escape)") from None
    return sha256(data).hexdigest()


NCOL = len(event.COLUMNS)
SELECT_RANGE = (f"SELECT seq, {', '.join(event.COLUMNS)}, content_ref, raw_ref, event_hash, chain_hash "
                 "FROM events WHERE seq >= ? AND seq < ? ORDER BY seq")
_I_LOGICAL, _I_RELATIVE, _I_PATHS, _I_OBJECTS = (event.COLUMNS.index(c) for c in (
    "path_logical", "path_relative", "paths_json", "path_objects_json"))
_I_ATTRS, _I_CONTENT, _I_RAW, _I_UNKNOWN, _I_PSID, _I_CALL, _I_PEN = (event.COLUMNS.index(c) for c in (
    "attrs_json", "content_json", "raw_json", "unknown_json", "provider_session_id", "tool_call_id",
    "provider_event_name"))


_KEYS: dict = {}


def key_search(kind: type = str):
    """The search of `holds_a_key` for texts of `kind` (str or bytes), compiled once."""
    found = _KEYS.get(kind)
    if found is None:
        import re  # verify's, not the hook path's
        pattern = ',"(?:attrs":|content":|raw":|x_)'
        found = _KEYS[kind] = re.compile(pattern if kind is str else pattern.encode()).search
    return found


def holds_a_key(text) -> bool:
    """`text` (str or UTF-8 bytes) holds a key a canonical line writes between or after its
    spliced texts (`,"attrs":`, `,"content":`, `,"raw":`, `,"x_`): a text that took in or gave
    up part of its neighbour's does (a JSON string cannot hold one: its quotes are escaped)."""
    return key_search(type(text))(text) is not None


ONE_VALUE = "SELECT json_valid(CAST(? AS TEXT))"
_ONE_OBJECT = "SELECT CASE WHEN json_valid(?1) THEN json_type(?1) = 'object' ELSE 0 END"


def spliced_ok(conn, r) -> bool:
    """Row `r` (check_rows layout, its line already rendered) cuts its line where the writer
    did (module invariants): every text of attrs, content and the expanded payload that
    `holds_a_key` is one JSON value, the unknown fields one JSON object. `conn`: any SQLite
    connection."""
    c = r[1:NCOL + 1]  # the row's columns, in COLUMNS order (as line_from_row reads them)
    raw = c[_I_RAW]
    if raw is not None:
        raw = payload.expand(raw, c[_I_CONTENT], (c[_I_PSID], c[_I_CALL], c[_I_PEN]))
    for text in (c[_I_ATTRS], c[_I_CONTENT], raw):
        if isinstance(text, str) and holds_a_key(text) and not conn.execute(ONE_VALUE, (text,)).fetchone()[0]:
            return False
    unknown = c[_I_UNKNOWN]
    return unknown is None or bool(conn.execute(_ONE_OBJECT, (unknown,)).fetchone()[0])


def problem(kind, message, seq=None, event_id=None) -> dict:
    """A problem as verify reports it."""
    return {"kind": kind, "message": message, "seq": seq, "event_id": event_id}


def unreadable_text(conn, after_seq: int, before_seq: int | None = None):
    """(seq, event id shown safely) of the first row after `after_seq` holding text SQLite
    hands back as bytes that are not UTF-8 (apsw cannot give it to Python as str), or None."""
    names = ("event_id",) + tuple(c for c in event.COLUMNS if c != "event_id") + (
        "content_ref", "raw_ref", "event_hash", "chain_hash")
    cols = ", ".join(f"CAST({c} AS BLOB)" for c in names)
    sql = f"SELECT seq, {cols} FROM events WHERE seq > ?" + ("" if before_seq is None else " AND seq < ?")
    args = (after_seq,) if before_seq is None else (after_seq, before_seq)
    for r in conn.execute(sql + " ORDER BY seq", args):
        for v in r[1:]:
            if isinstance(v, bytes):
                try:
                    v.decode("utf-8")
                except UnicodeDecodeError:
                    eid = r[1].decode("utf-8", "replace") if isinstance(r[1], bytes) else str(r[1])
                    return r[0], eid
    return None


def check_rows(conn, lo: int, hi: int, leaves=None, gaps=None) -> tuple[int, dict | None]:
    """Recompute the event hashes and chain links of the rows with lo <= seq < hi. Returns
    (rows checked, the first problem or None). The first row links to the stored chain hash of
    the row before it, whose own link is checked by whoever checks that row. `leaves` (an
    object with `add(event_hash)`, e.g. a Merkle compact range) hears of every row that
    verified, in order. `gaps` are the gaps a trusted recovery note declares
    (attemptdb.integrity.recovery): {seq after: (lo, hi, pin)}."""
    n = 0
    state = [0, None]
    try:
        return _check_rows(conn, lo, hi, gaps or {}, state, leaves)
    except UnicodeDecodeError:
        found = unreadable_text(conn, max(state[0], lo - 1), hi)
        if found is None:  # not in a column we read as text: still the row after the last good one
            row = conn.execute("SELECT seq, CAST(event_id AS BLOB) FROM events WHERE seq > ? ORDER BY seq LIMIT 1",
                               (max(state[0], lo - 1),)).fetchone()
            found = (row[0], row[1].decode("utf-8", "replace")) if row else (None, None)
        seq, eid = found
        return n, problem("not_utf8", f"row seq={seq} ({eid}) holds text that is not valid UTF-8: the row was "
                          "edited outside AttemptDB (or the file is damaged)", seq, eid)


def _check_rows(conn, lo, hi, gaps, state, leaves=None):
    sha256 = bulk_sha256()
    line_from_row = event.line_from_row
    before = conn.execute("SELECT seq, chain_hash, event_id FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1",
                          (lo,)).fetchone()
    prev_seq, prev, prev_eid = before if before else (0, GENESIS, None)
    state[0] = prev_seq
    n = 0
    for r in conn.execute(SELECT_RANGE, (lo, hi)):
        n += 1
        seq, eid, ev_hash, ch_hash = r[0], r[1], r[-2], r[-1]
        pinned = None
        if seq <= prev_seq:  # a scan in order of the primary key went backwards: only a broken b-tree does that
            return n, problem("damaged", f"the file is damaged: row seq={seq} ({eid}) comes after seq={prev_seq} "
                              "in a scan in sequence order (its b-tree is broken)", seq, eid)
        if seq != prev_seq + 1:
            gap = gaps.get(seq)
            if gap is None or gap[0] != prev_seq + 1:
                return n, problem("sequence_gap", f"row seq={seq} ({eid}) follows seq={prev_seq}: "
                                  "a row was deleted before it", seq, eid)
            pinned = gap[2]  # None: a row appended after the recovery links to the row before
        try:
            actual = sha256(line_from_row(r[1:NCOL + 1]).encode("utf-8")).hexdigest()
        except (ValueError, TypeError, AttributeError, IndexError, UnicodeEncodeError):
            actual = None  # a column no longer holds what the codec writes (type, prefix, time)
        if actual != ev_hash:
            return n, problem("event_hash", f"row seq={seq} ({eid}) does not match its event_hash: "
                              "the row was edited", seq, eid)
        if not spliced_ok(conn, r):
            return n, problem("json_column", f"row seq={seq} ({eid}) hashes, but its attrs, content, raw or "
                              "unknown-field text is not one JSON value: text was moved between its columns "
                              "(the row was edited)", seq, eid)
        if r[_I_OBJECTS + 1] is not None or r[_I_LOGICAL + 1] is not None or r[_I_RELATIVE + 1] is not None \
                or r[_I_PATHS + 1] is not None or r[NCOL + 1] is not None or r[NCOL + 2] is not None:
            if not _derived_ok(r):
                return n, problem("derived_column", f"row seq={seq} ({eid}) has path or reference columns "
                                  "that do not follow from its hashed content: the row was edited", seq, eid)
        if pinned is not None:
            ok = (ev_hash, ch_hash) == pinned
        else:
            try:
                ok = link(prev, ev_hash, sha256) == ch_hash
            except (ValueError, TypeError):  # a hash column holds no hex (edited)
                ok = False
        if not ok:
            return n, problem("chain", f"row seq={seq} ({eid}) does not link to the row before it "
                              f"(seq={prev_seq}, {prev_eid}): rows were deleted, inserted or reordered",
                              seq, eid)
        if leaves is not None:
            leaves.add(ev_hash)
        prev_seq, prev, prev_eid = seq, ch_hash, eid
        state[0] = seq
    return n, None


def row_verifies(r, conn) -> bool:
    """A row in the layout `check_rows` reads (seq, COLUMNS, content_ref, raw_ref, event_hash,
    chain_hash) hashes to its event_hash, its JSON texts are one value each (`spliced_ok`,
    asked of `conn`) and its derived columns follow: what verify checks of a row on its own,
    before its link."""
    try:
        if sha_line(event.line_from_row(r[1:NCOL + 1])) != r[-2] or not spliced_ok(conn, r):
            return False
    except (ValueError, TypeError, AttributeError, IndexError, UnicodeEncodeError, event.EventError):
        return False
    if r[_I_OBJECTS + 1] is None and r[_I_LOGICAL + 1] is None and r[_I_RELATIVE + 1] is None \
            and r[_I_PATHS + 1] is None and r[NCOL + 1] is None and r[NCOL + 2] is None:
        return isinstance(r[-1], str) and len(r[-1]) == 64
    return _derived_ok(r) and isinstance(r[-1], str) and len(r[-1]) == 64


def sha_line(line: str) -> str:
    return bulk_sha256()(line.encode("utf-8")).hexdigest()


_DERIVED: dict = {}


def _derive_paths(objects: str):
    """(path_logical, path_relative, paths_json) as event.Prepared derives them from the
    hashed path objects; None when the text is not a list of path objects. Memoised: the
    same files are touched again and again."""
    got = _DERIVED.get(objects)
    if got is None:
        try:
            paths = fastjson.loads(objects)
            got = event.path_columns(paths) if paths else False
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
            got = False
        if len(_DERIVED) > 8192:
            _DERIVED.clear()
        _DERIVED[objects] = got
    return got or None


def _derived_ok(r) -> bool:
    """The columns stored beside the hashed ones hold what the codec derives (event.Prepared):
    the first path's logical / repo_relative text, the display list of every path (the exact
    text the codec writes), and NULL content_ref / raw_ref (nothing writes them)."""
    if r[NCOL + 1] is not None or r[NCOL + 2] is not None:
        return False
    return paths_follow(r[_I_OBJECTS + 1], (r[_I_LOGICAL + 1], r[_I_RELATIVE + 1], r[_I_PATHS + 1]))


def paths_follow(objects, derived: tuple) -> bool:
    """(path_logical, path_relative, paths_json) are what the codec derives from the stored
    path objects `objects` (all three NULL without them)."""
    if objects is None:
        return derived == (None, None, None)
    return isinstance(objects, str) and derived == _derive_paths(objects)
