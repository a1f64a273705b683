"""`attempt conformance FILE`: is a JSONL stream AttemptDB Event v1 (seed 000)?

Six checks, each a line of the report: Envelope, Identity, Temporal, Causality, Provenance,
Extensions. Rules a stream cannot exercise (tool-call pairing, sequence gaps, order in a
single-event stream) are notes, never failures.

Invariants: reads any bytes without crashing (binary, truncated, huge lines: a line longer than
MAX_LINE bytes is reported and skipped without being held in memory); names problems by line
number and rule, never by content (a key is echoed only when it is a short plain identifier);
the verdict is COMPATIBLE exactly when no check failed, and a stream without a single event
fails Envelope. The report prints the seed-000 layout (header, six checks, verdict); notes
follow the verdict, so a stream that exercises every rule prints exactly that layout.
"""

from ..ingest import privacy
from ..model import event, fastjson, ids
from ..model.event import MAX_LINE

CHECKS = (
    ("Envelope", "every line parses; schema_version 1; ids present and unique"),
    ("Identity", "session_id derives from (provider, provider_session_id)"),
    ("Temporal", "source_seq and hlc strictly increase per device"),
    ("Causality", "every parent_span_id resolves in the stream"),
    ("Provenance", "adapter_version present; no content under metadata_only"),
    ("Extensions", "attrs on the allowlist or x_-namespaced; values content-free"),
)
MAX_LISTED = 20
_CHUNK = 1 << 20
_SAFE_KEY = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_SAFE_PATH = _SAFE_KEY | frozenset("$.[]")
_SELF_SESSION_KINDS = ("correction", "retraction")  # carry the session they are about


class Report:
    def __init__(self):
        self.events = 0
        self.lines = 0
        self.problems = {name: [] for name, _ in CHECKS}
        self.counts = {name: 0 for name, _ in CHECKS}
        self.notes: list[str] = []

    def fail(self, check: str, line: int | None, message: str):
        self.counts[check] += 1
        if len(self.problems[check]) < MAX_LISTED:
            self.problems[check].append({"line": line, "message": message})

    @property
    def compatible(self) -> bool:
        return self.events > 0 and not any(self.counts.values())

    def as_dict(self):
        return {
            "format": "AttemptDB Event v1", "events": self.events, "lines": self.lines,
            "compatible": self.compatible,
            "checks": [{"name": n, "rule": r, "ok": self.counts[n] == 0, "checked": self.events > 0 or self.counts[n] > 0,
                        "problem_count": self.counts[n], "problems": self.problems[n]}
                       for n, r in CHECKS],
            "notes": self.notes,
        }

    def render(self, color=lambda s, ok: s, width: int | None = None) -> str:
        """The report for people; with `width`, each check line and note wrapped to it at spaces
        (termtable.prose), a check's text under its rule column, a note's under two spaces."""
        from ..render.termtable import prose

        def lines(text: str, indent: str) -> list[str]:
            return prose(text, width, indent) if width else [text]
        out = [f"AttemptDB Event v1 \u00b7 {self.events:,} event{'s' if self.events != 1 else ''}", ""]
        mark_at = 20
        for name, rule in CHECKS:
            n = self.counts[name]
            if n == 0 and not self.events:  # no event to hold it to: neither passed nor failed
                mark, ok, text = "-", None, f"{rule} (no readable event to check)"
            elif n == 0:
                mark, ok, text = chr(0x2713), True, rule
            else:
                first = self.problems[name][0]
                more = f" (+{n - 1} more)" if n > 1 else ""
                where = "" if first["line"] is None else f"line {first['line']}: "
                mark, ok, text = chr(0x2717), False, f"{where}{first['message']}{more}"
            shown = lines(f"{name:<{mark_at}}{mark}   {text}", " " * (mark_at + 4))
            if ok is not None:  # coloured after wrapping: the escape codes take no columns
                shown[0] = shown[0][:mark_at] + color(mark, ok) + shown[0][mark_at + 1:]
            out.extend(shown)
        out.append("")
        out.append("COMPATIBLE" if self.compatible else "NOT COMPATIBLE")
        if self.notes:
            out.append("")
            for n in self.notes:
                out.extend(lines(f"note: {n}", "  "))
        return "\n".join(out)


def _safe_key(k) -> bool:
    return isinstance(k, str) and 0 < len(k) <= 64 and all(c in _SAFE_KEY for c in k)


def _event_error(e: event.EventError) -> str:
    """The validator's message with its JSON path, unless the path holds a key that is not a
    short plain identifier (keys are input: they may hold text or terminal escapes)."""
    path = e.path
    if len(path) > 160 or not all(c in _SAFE_PATH for c in path):
        cut = 0
        while cut < len(path) and path[cut] in _SAFE_PATH and cut < 160:
            cut += 1
        head = path[:cut]
        head = head[:max(head.rfind("."), head.rfind("["), 1)]
        path = head + ".<key>"
    return f"{path}: {e.message}"


def _check_event(env: dict, line: int, rep: Report, devices: dict, spans: set,
                 parents: list, starts: dict):
    # Identity
    if env["kind"] not in _SELF_SESSION_KINDS:
        want = ids.session_id(env["provider"], env["provider_session_id"])
        if env["session_id"] != want:
            rep.fail("Identity", line, "session_id is not UUIDv5 of (provider, provider_session_id)")
    # Temporal: only ingested events carry writer clocks
    seq, hlc = env.get("source_seq", 0), env.get("hlc", 0)
    dev = devices.setdefault(env["device_id"], {"seq": 0, "hlc": 0, "seqs": [], "pending": 0})
    if seq:
        if seq <= dev["seq"]:
            rep.fail("Temporal", line, f"source_seq {seq} does not increase on its device (after {dev['seq']})")
        dev["seq"] = max(dev["seq"], seq)
        dev["seqs"].append(seq)
    else:
        dev["pending"] += 1
    if hlc:
        if hlc <= dev["hlc"]:
            rep.fail("Temporal", line, "hlc does not increase on its device")
        dev["hlc"] = max(dev["hlc"], hlc)
    # Causality (resolved after the whole stream is read)
    if "span_id" in env:
        spans.add(env["span_id"])
    if "parent_span_id" in env:
        parents.append((line, env["parent_span_id"]))
    # Provenance
    if not env.get("adapter_version"):
        rep.fail("Provenance", line, "adapter_version is missing")
    if env["capture_mode"] == "metadata_only":
        for k in ("content", "raw"):
            if k in env:
                rep.fail("Provenance", line, f"{k} present under metadata_only")
    # Extensions
    attrs = env.get("attrs") or {}
    for k in attrs:
        if not privacy.key_allowed(k):
            rep.fail("Extensions", line, f"attrs key '{k}' is neither allowlisted nor x_-namespaced"
                     if _safe_key(k) else "an attrs key is neither allowlisted nor x_-namespaced")
            break
    else:
        _, drops = privacy.sanitise_attrs(attrs)
        if drops:
            rep.fail("Extensions", line, "an attrs value is not content-free (text, email, home path or secret)")
    # pairing note material
    tool = env.get("tool") or {}
    call = tool.get("call_id")
    if call:
        key = (env["session_id"], call)
        if env["kind"] == "tool_call_started":
            starts.setdefault(key, 0)
        elif env["kind"] in ("tool_call_finished", "tool_call_failed"):
            starts[key] = 1


def bounded_lines(stream, max_line: int):
    """(line number, bytes or None when longer than max_line) for every line of a binary
    stream; an over-long line is never held whole: its None comes after at most max_line + 1
    of its bytes were read (a caller may stop there), and the rest is consumed in chunks only
    when the caller goes on."""
    lineno = 0
    while True:
        raw = stream.readline(max_line + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > max_line and not raw.endswith(b"\n"):
            yield lineno, None
            while True:
                rest = stream.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            continue
        yield lineno, raw


def check_stream(stream, *, max_line: int | None = None) -> Report:
    """Run every rule over a binary stream of JSONL (anything with `readline`)."""
    rep = Report()
    seen_ids: dict = {}
    devices: dict = {}
    spans: set = set()
    parents: list = []
    starts: dict = {}
    limit = MAX_LINE if max_line is None else max_line
    for lineno, raw in bounded_lines(stream, limit):
        if raw is None:
            rep.lines += 1
            rep.fail("Envelope", lineno, f"longer than {limit:,} bytes (not read)")
            continue
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            continue
        rep.lines += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            rep.fail("Envelope", lineno, f"not UTF-8 (byte {e.start})")
            continue
        try:
            obj = fastjson.loads(text)
        except (ValueError, RecursionError):
            rep.fail("Envelope", lineno, "not a JSON document (malformed or truncated)")
            continue
        try:
            event.validate(obj)
        except event.EventError as e:
            rep.fail("Envelope", lineno, _event_error(e))
            continue
        rep.events += 1
        eid = obj["event_id"]
        if eid in seen_ids:
            rep.fail("Envelope", lineno, f"event_id repeats line {seen_ids[eid]}")
        else:
            seen_ids[eid] = lineno
        _check_event(obj, lineno, rep, devices, spans, parents, starts)
    for line, parent in parents:
        if parent not in spans:
            rep.fail("Causality", line, "parent_span_id does not resolve to a span_id in the stream")
    if rep.events == 0 and not rep.counts["Envelope"]:
        rep.fail("Envelope", None, "the stream holds no event")
    _notes(rep, devices, starts, parents)
    return rep


def _notes(rep: Report, devices: dict, starts: dict, parents: list):
    if rep.events == 0:
        rep.notes.append("no event could be read: the stream is empty or nothing in it parses")
        return
    if rep.events == 1:
        rep.notes.append("a single event cannot exercise ordering, uniqueness across events, "
                         "span resolution or tool-call pairing")
    for dev, d in devices.items():
        seqs = d["seqs"]
        if len(seqs) > 1:
            gaps = (max(seqs) - min(seqs) + 1) - len(set(seqs))
            if gaps > 0:
                rep.notes.append(f"device dev_{dev[:8]}: source_seq skips {gaps:,} "
                                 "value(s) between its first and last event (events outside this stream)")
        if d["pending"]:
            rep.notes.append(f"device dev_{dev[:8]}: {d['pending']:,} event(s) not yet ingested "
                             "(source_seq and hlc 0): their order is not checked")
    unpaired = sum(1 for v in starts.values() if v == 0)
    if unpaired:
        rep.notes.append(f"{unpaired:,} tool call(s) start without an end in this stream "
                         "(pairing is a projection rule, not a stream requirement)")
    if not parents:
        rep.notes.append("no event carries a parent_span_id: causality was not exercised")


def check_file(path: str) -> Report:
    from ..errors import AttemptError
    try:
        f = open(path, "rb")
    except OSError as e:
        raise AttemptError("conformance.unreadable", f"cannot read {path}: {e.strerror}") from None
    with f:
        return check_stream(f)
