"""The bulk check of a range of stored rows (verify's, over a whole file): what chain.check_rows
checks, at a fraction of the Python work per row, and never the judge of a problem.

How: one SELECT hands each row over in the order of its canonical line, with the three large
JSON texts as bytes (hashed as stored, never decoded and encoded again), and the columns that
repeat from row to row in three slices (the session's, the event type's, the agent's). The
canonical line is `event.line_from_row` restated for that layout: each slice is rendered once
per distinct value (keyed by the exact Python values, so equal keys render the same text),
the rest row by row. Each row's SHA-256 must be its stored event_hash, its derived path
columns must follow (chain.paths_follow) and its link must be its stored chain_hash
(chain.link_digest); the Merkle leaves go to the caller as raw digests.

Invariants:
- A range it passes is a range chain.check_rows passes, row for row: where the restated line
  could differ from line_from_row (a column of another type than the writer stores, unknown
  top-level fields, reference columns set), the row is rendered by line_from_row itself
  (chain.row_verifies); tests hold both renderings equal.
- At the first row that does not hash, cut its line where the writer did (chain.spliced_ok:
  the texts that chain.holds_a_key are checked at the end of the range, in one executemany),
  derive, link or follow its predecessor, or any error
  (damage, text that is not UTF-8), the whole range is checked again by chain.check_rows,
  which names the first problem exactly as before: the report does not depend on this path.
- Reads only; a worker opens the file read-only with memory-mapped I/O (no copy through the
  page cache), its own connection per range.
- With `bounds` (attrs_bounds.Findings), every row's stored attrs are also held to their bounds,
  from the bytes this pass reads anyway (a range it does not pass is read again by
  attrs_bounds.scan): a warning's count, never a problem.
"""

from ..model import clock, fastjson, payload
from . import attrs_bounds, chain

MIN_ROWS = 2048
"""Below this many sequence numbers a range goes straight to chain.check_rows (the larger
statement and the rendered slices are not worth setting up)."""

MMAP_BYTES = 1 << 40  # SQLite maps no more than the file

# the row in the order of its canonical line; [8:22], [22:30], [30:35] are the repeating slices
_COLUMNS = (
    "seq, event_id, schema_version, source_seq, hlc, observed_at, captured_at, ingested_at, "
    # 8..21: the session's (device, provider, project, session)
    "device_id, provider, provider_version, adapter_version, hook_version, capture_mode, project_id, "
    "project_root, project_name, repo_remote, branch, head, session_id, provider_session_id, "
    # 22..29: the event type's (event name, kind, turn, tool, outcome)
    "provider_event_name, kind, provider_turn_id, tool_name, tool_category, outcome_status, outcome_class, "
    "exit_code, "
    # 30..34: the agent's
    "agent_id, provider_agent_id, agent_type, parent_agent_id, model, "
    # 35..42: the row's own
    "span_id, parent_span_id, tool_call_id, path_objects_json, path_logical, path_relative, paths_json, "
    "duration_ms")
# 43: the large texts are text (or NULL) and nothing outside the restated line is set
_PLAIN = ("typeof(attrs_json) = 'text' AND typeof(content_json) IN ('text', 'null') "
          "AND typeof(raw_json) IN ('text', 'null') AND typeof(path_objects_json) IN ('text', 'null') "
          "AND unknown_json IS NULL AND content_ref IS NULL AND raw_ref IS NULL")
SELECT = (f"SELECT {_COLUMNS}, {_PLAIN}, CAST(attrs_json AS BLOB), CAST(content_json AS BLOB), "
          "CAST(raw_json AS BLOB), event_hash, chain_hash FROM events WHERE seq >= ? AND seq < ? ORDER BY seq")
_ONE = chain.SELECT_RANGE.replace("seq >= ? AND seq < ?", "seq = ?")

_PATHS, _DURATION, _ATTRS, _CONTENT, _RAW = ',"paths":', ',"duration_ms":', b',"attrs":', b',"content":', b',"raw":'


class _Unlike(Exception):
    """A value the restated line does not render (line_from_row decides the row)."""


_q = fastjson.quote


def _text(v) -> str:
    if type(v) is not str:
        raise _Unlike
    return _q(v)


def _optional(key: str, v) -> str:
    return "" if v is None else f',"{key}":{_text(v)}'


def _id(v, prefix: str) -> str:
    if type(v) is not str or not v.startswith(prefix):
        raise _Unlike
    return v[len(prefix):]


def _session(k: tuple) -> tuple:
    """(after schema_version, after captured_at/ingested_at, after kind) of the session slice."""
    dev, provider, pv, av, hv, mode, pid, root, name, remote, branch, head, sid, psid = k
    return (f',"device_id":"{_id(dev, "dev_")}","source_seq":',
            f',"provider":{_text(provider)}{_optional("provider_version", pv)},"adapter_version":{_text(av)}'
            f'{_optional("hook_version", hv)},"capture_mode":{_text(mode)}',
            f',"project":{{"project_id":"{_id(pid, "prj_")}","root":{_text(root)},"name":{_text(name)}'
            f'{_optional("repo_remote", remote)}{_optional("branch", branch)}{_optional("head", head)}}}'
            f',"session_id":"{_id(sid, "ses_")}","provider_session_id":{_text(psid)}')


def _event_type(k: tuple) -> tuple:
    """(name and kind, turn, the tool object without its call id and brace or None, the outcome)."""
    pen, kind, turn, tool, category, status, cls, code = k
    tool_open = None if tool is None else f',"tool":{{"name":{_text(tool)},"category":{_text(category)}'
    outcome = ""
    if status is not None:  # int() as line_from_row: equal keys (1 == 1.0) render the same
        code = "" if code is None else ',"exit_code":' + str(int(code))
        outcome = f',"outcome":{{"status":{_text(status)}{_optional("class", cls)}{code}}}'
    return (f',"provider_event_name":{_text(pen)},"kind":{_text(kind)}', _optional("provider_turn_id", turn),
            tool_open, outcome)


def _agent(k: tuple) -> str:
    agent_id, provider_agent_id, agent_type, parent, model = k
    members = []
    if agent_id is not None:
        members.append(f'"agent_id":"{_id(agent_id, "agt_")}"')
    if provider_agent_id is not None:
        members.append('"provider_agent_id":' + _text(provider_agent_id))
    if agent_type is not None:
        members.append('"agent_type":' + _text(agent_type))
    if parent is not None:
        members.append(f'"parent_agent_id":"{_id(parent, "agt_")}"')
    if model is not None:
        members.append('"model":' + _text(model))
    return ',"agent":{' + ",".join(members) + "}"


def _minute(prefix: str) -> int:
    """µs of `YYYY-MM-DDTHH:MM:` + `00.000000Z`, only when that is the text clock.iso writes
    (remembered: a stream's rows share their minutes)."""
    us = _MINUTES.get(prefix)
    if us is not None:
        return us
    full = prefix + "00.000000Z"
    try:
        us = clock.from_iso(full)
        ok = clock.iso(us) == full
    except (ValueError, OverflowError, TypeError):
        ok = False
    if not ok:
        raise _Unlike
    if len(_MINUTES) >= _MEMO_MAX:
        _MINUTES.clear()
    _MINUTES[prefix] = us
    return us


_MEMO_MAX = 1 << 16
_SESSIONS: dict = {}
_TYPES: dict = {}
_AGENTS: dict = {}
_MINUTES: dict = {}
_INGESTED: dict = {}


def _us(t) -> int:
    """µs of a stored time text, exactly the texts event.line_from_row accepts (a valid date,
    HH <= 23, MM <= 59, SS <= 59, six digits, Z)."""
    if type(t) is not str or len(t) != 27 or t[19] != "." or t[26] != "Z" or t[17] > "5":
        raise _Unlike
    digits = t[17:19] + t[20:26]
    if not (digits.isdigit() and digits.isascii()):
        raise _Unlike
    return _minute(t[:17]) + int(digits)


def _memo(table: dict, key, render):
    try:
        got = render(key)
    except (_Unlike, ValueError, TypeError, OverflowError):
        return None
    if len(table) >= _MEMO_MAX:
        table.clear()
    table[key] = got
    return got


def _fast(conn, lo: int, hi: int, bounds=None):
    """(rows, [event hash digests]) when every row with lo <= seq < hi verifies; None at the
    first one that does not (or anything unusual): the caller then checks the range row by row.
    `bounds` (attrs_bounds.Findings) hears of each row's attrs (the caller's to drop on None)."""
    sha = chain.bulk_sha256()
    link = chain.link_digest
    follow = chain.paths_follow
    sessions, types, agents, minutes = _SESSIONS, _TYPES, _AGENTS, _MINUTES
    before = conn.execute("SELECT seq, chain_hash FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1",
                          (lo,)).fetchone()
    prev_seq, prev = before if before else (0, chain.GENESIS)
    if type(prev) is not str:
        return None
    prev = bytes.fromhex(prev)
    digests, suspects = [], []
    keyed = chain.key_search(bytes)
    keep = digests.append
    passed = attrs_bounds.PASSED
    judge = bounds.row if bounds is not None else None
    for r in conn.execute(SELECT, (lo, hi)):
        seq = r[0]
        if seq != prev_seq + 1:
            return None
        prev_seq = seq
        d = None
        if r[43]:
            k = r[8:22]
            s = sessions.get(k) or _memo(sessions, k, _session)
            k = r[22:30]
            e = types.get(k) or _memo(types, k, _event_type)
            k = r[30:35]
            a = agents.get(k) or _memo(agents, k, _agent)
            line = None if s is None or e is None or a is None else _line(r, s, e, a, minutes)
            if line is not None:
                h = sha(line)
                if r[44] != b"{}":
                    h.update(_ATTRS)
                    h.update(r[44])
                if r[45] is not None:
                    h.update(_CONTENT)
                    h.update(r[45])
                if r[46] is not None:
                    h.update(_RAW)
                    raw = r[46]
                    if b"\x01" in raw:  # a stored payload's references (model/payload.py)
                        try:
                            raw = _payload(r)
                        except ValueError:
                            return None
                    h.update(raw)
                h.update(b"}")
                d = h.digest()
                if d.hex() != r[47]:
                    return None
                if keyed(r[44]) is not None:  # chain.spliced_ok, its SQL at the end of the range
                    suspects.append((r[44],))
                if r[45] is not None and keyed(r[45]) is not None:
                    suspects.append((r[45],))
                if r[46] is not None and keyed(raw) is not None:
                    suspects.append((raw,))
                if (r[38] is not None or r[39] is not None or r[40] is not None or r[41] is not None) \
                        and not follow(r[38], r[39:42]):
                    return None
        if d is None:  # a row the restated line does not cover: line_from_row's verdict
            full = conn.execute(_ONE, (seq,)).fetchone()
            if full is None or not chain.row_verifies(full, conn):
                return None
            d = bytes.fromhex(full[-2])
        prev = link(prev, d, sha)
        if prev.hex() != r[48]:
            return None
        keep(d)
        if judge is not None and r[44] not in passed:  # most attrs texts recur: one set lookup
            judge(seq, r[1], r[44])
    if suspects and not all(ok for (ok,) in conn.executemany(chain.ONE_VALUE, suspects)):
        return None
    return len(digests), digests


def _payload(r) -> bytes:
    """The payload a row's raw_json stores (references resolved: payload.expand) as bytes;
    ValueError when they do not resolve or a text is not UTF-8 (the texts are decoded only
    when the row's dictionary is not ASCII)."""
    got = payload.expand_ascii(r[46], r[45], (r[21], r[37], r[22]))
    if got is not None:
        return got
    content = None if r[45] is None else r[45].decode("utf-8")
    return payload.expand(r[46].decode("utf-8"), content, (r[21], r[37], r[22])).encode("utf-8")


def _line(r, s, e, a, minutes):
    """The canonical line of row `r` up to its large texts (bytes) from the rendered slices,
    or None when a part is not one the restated line renders."""
    eid, sv, ss, hlc, o, c, ing = r[1:8]
    if type(eid) is not str or eid[:3] != "ev_" or type(sv) is not int or type(ss) is not int \
            or type(hlc) is not int or type(o) is not str or type(c) is not str or len(o) != 27 or len(c) != 27 \
            or o[19] != "." or c[19] != "." or o[26] != "Z" or c[26] != "Z" or o[17] > "5" or c[17] > "5":
        return None
    digits = o[17:19] + o[20:26] + c[17:19] + c[20:26]
    if not (digits.isdigit() and digits.isascii()):
        return None
    try:
        bo = minutes.get(o[:17]) or _minute(o[:17])
        bc = minutes.get(c[:17]) or _minute(c[:17])
        if ing is not None:
            t = _INGESTED.get(ing)
            if t is None:
                if len(_INGESTED) >= _MEMO_MAX:
                    _INGESTED.clear()
                t = _INGESTED[ing] = f',"ingested_at":{_us(ing)}'
            ing = t
        else:
            ing = ""
        span = ""
        if r[35] is not None:
            span = f',"span_id":"{_id(r[35], "tc_")}"'
        if r[36] is not None:
            span += f',"parent_span_id":"{_id(r[36], "tc_")}"'
        tool = e[2]
        if tool is None:
            tool = ""
        elif r[37] is None:
            tool += "}"
        else:
            tool = f'{tool},"call_id":{_text(r[37])}}}'
        paths = "" if r[38] is None else _PATHS + r[38]
        duration = "" if r[42] is None else f"{_DURATION}{int(r[42])}"
    except (_Unlike, ValueError, TypeError, OverflowError):
        return None
    return (f'{{"event_id":"{eid[3:]}","schema_version":{sv}{s[0]}{ss},"hlc":{hlc},'
            f'"observed_at":{bo + int(digits[:8])},"captured_at":{bc + int(digits[8:])}{ing}{s[1]}{e[0]}'
            f'{s[2]}{e[1]}{span}{a}{tool}{paths}{e[3]}{duration}').encode()


def check_rows(conn, lo: int, hi: int, leaves=None, gaps=None, bounds=None) -> tuple[int, dict | None]:
    """chain.check_rows, through the bulk check first (see the module invariants); the same
    result either way. `leaves` hears of every row's event hash, in order, as check_rows says
    (an object with `add_digests` takes them as raw digests in one call). `bounds`
    (attrs_bounds.Findings) takes in the range's rows whose attrs break a bound."""
    if hi - lo >= MIN_ROWS and not gaps:
        found = attrs_bounds.Findings() if bounds is not None else None
        try:
            got = _fast(conn, lo, hi, found)
        except Exception:  # damage, text that is not UTF-8, an unusual value: the row-by-row check says
            got = None
        if got is not None:
            if bounds is not None:
                bounds.add(found.result())
            n, digests = got
            if leaves is not None:
                if hasattr(leaves, "add_digests"):
                    leaves.add_digests(digests)
                else:
                    for d in digests:
                        leaves.add(d.hex())
            return n, None
    if bounds is not None:
        attrs_bounds.scan(conn, lo, hi, bounds)
    return chain.check_rows(conn, lo, hi, leaves, gaps)


def connect(path: str):
    """A read-only connection of its own to the file at `path`, its reads memory-mapped, for
    one thread (no mutex around each column read)."""
    import apsw
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_NOMUTEX)
    try:
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    except apsw.Error:
        conn.close()
        raise
    return conn


def check_range(path: str, lo: int, hi: int, gaps=None, cuts=None) -> tuple:
    """A worker process's task: `check_rows` of lo <= seq < hi on the file at `path` through a
    connection of its own. With `cuts` (the checkpoint sizes that sign a Merkle head; [] for
    none) the rows' Merkle tree is built too (merkle.Accumulator). Returns (rows, first problem
    or None, Accumulator.result() or None, attrs_bounds.Findings.result() of the range)."""
    from . import merkle
    acc = merkle.Accumulator(lo - 1, cuts) if cuts is not None else None
    bounds = attrs_bounds.Findings()
    conn = connect(path)
    try:
        n, found = check_rows(conn, lo, hi, acc, gaps, bounds)
        return n, found, acc.result() if acc is not None and found is None else None, bounds.result()
    finally:
        conn.close()
