"""What every transcript importer shares: reading a transcript's lines, and the driver that
stores reconstructed events (spec/transcripts.md).

Invariants: a file without one line of the importer's own format is refused before anything is
written when it was named, and skipped and reported when a directory held it (formats.py);
a line that is not a JSON object is counted, never fatal; importing is idempotent
(deterministic event ids); a reconstructed event a hook already captured is dropped (§5.5); an
event the store would refuse is dropped and counted, never half-stored.
"""

import bisect
import os

from ... import adapters
from ...adapters.draft import parse_observed
from ...model import event, fastjson, ids
from ...model.event import MAX_LINE

PEEK_LINES = 256


SKIPPED_NAMED = 5
"""How many unreadable lines an import names (file and line number); the rest are counted."""


LIVE_S = 600
"""A file written within this many seconds may still be growing (spec/transcripts.md "A file
still being written"): what only its end decides is held back."""


class Report:
    """What reading one file found. `live`, set by the caller before reading: the file may still
    grow, so the events only its end decides (the open API message, a turn or subagent ended at
    the end of the file) are counted in `held_back`, never yielded."""

    __slots__ = ("lines", "events", "skipped_lines", "session", "skipped_at", "live", "held_back")

    def __init__(self, live: bool = False):
        self.lines = self.events = self.skipped_lines = self.held_back = 0
        self.live = live
        self.session = None
        self.skipped_at = []  # line numbers of the first SKIPPED_NAMED unreadable lines

    def skip(self, lineno: int) -> None:
        self.skipped_lines += 1
        if len(self.skipped_at) < SKIPPED_NAMED:
            self.skipped_at.append(lineno)


def entries(stream, report):
    """(line number, entry dict) of every JSON-object line; anything else is counted."""
    from ..conformance import bounded_lines
    for n, raw in bounded_lines(stream, MAX_LINE):
        report.lines += 1
        if raw is None:  # longer than MAX_LINE: not read
            report.skip(n)
            continue
        if not raw.strip():
            continue
        entry, gap = adapters.parse_payload(raw)  # as a hook payload: bad UTF-8 and lone surrogates replaced
        if gap is None:
            yield n, entry
        else:
            report.skip(n)


def observed(entry):
    """The entry's `timestamp` in µs, or None."""
    return parse_observed(entry["timestamp"]) if "timestamp" in entry else None


def result_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


# --- importing into a store (discovery, reconciliation with hook events) --------------------

RECONCILE_KINDS = ("prompt_submitted", "turn_stopped", "session_started", "session_ended",
                   "subagent_started", "subagent_stopped", "compaction_finished")
RECONCILE_WINDOW_US = 10_000_000
BATCH = 2500


class ImportReport:
    __slots__ = ("files", "lines", "events", "accepted", "duplicates", "skipped_captured",
                 "skipped_lines", "rejected", "sessions", "skipped_where", "wrong_format", "unreadable",
                 "held_back", "held_back_files")

    def __init__(self):
        self.files = self.lines = self.events = self.accepted = self.duplicates = 0
        self.held_back = self.held_back_files = 0
        self.skipped_captured = self.skipped_lines = self.rejected = 0
        self.sessions = set()
        self.skipped_where = []  # (file, line number) of the first SKIPPED_NAMED unreadable lines
        self.wrong_format = []  # (file, the format it looks like or None): found, not imported
        self.unreadable = []  # (file, why): found in a directory, could not be read, not imported

    def as_dict(self) -> dict:
        return {"files": self.files, "sessions": len(self.sessions), "lines": self.lines,
                "events": self.events, "accepted": self.accepted, "duplicates": self.duplicates,
                "skipped_captured": self.skipped_captured, "skipped_lines": self.skipped_lines,
                "skipped_where": [{"file": f, "line": n} for f, n in self.skipped_where],
                "rejected": self.rejected,
                "wrong_format": [{"file": f, "looks_like": fmt} for f, fmt in self.wrong_format],
                "unreadable": [{"file": f, "why": why} for f, why in self.unreadable],
                "held_back": self.held_back, "held_back_files": self.held_back_files}


def _hook_facts(conn, session_id: str):
    """(project of the session's newest hook event or None, {kind: [observed µs]}) of what
    hooks (not imports) stored for a session."""
    from ...model import clock
    rows = conn.execute(
        "SELECT kind, observed_at, project_id, project_root, project_name, repo_remote, branch, head "
        "FROM events WHERE session_id = ? AND coalesce(json_extract(attrs_json, '$.reconstructed'), 0) != 1 "
        "ORDER BY seq", ("ses_" + session_id,)).fetchall()
    times: dict = {}
    project = None
    for kind, at, pid, root, name, remote, branch, head in rows:
        if kind in RECONCILE_KINDS:
            times.setdefault(kind, []).append(clock.from_iso(at))
        project = {k: v for k, v in (("project_id", ids.bare(pid)), ("root", root), ("name", name),
                                     ("repo_remote", remote), ("branch", branch), ("head", head)) if v is not None}
    return project, times


def _reconciled(envs, conn, rep: ImportReport) -> list:
    """Drop the reconstructed events a hook already captured (§5.5): per session and kind, each
    hook event consumes at most one reconstructed event and each reconstructed event is consumed
    by at most one hook event, the closest pairs first, none more than 10 s apart (a session start
    at any distance); a cancelled turn end is never consumed. The session's hook project replaces
    the transcript's."""
    by_session: dict = {}
    for e in envs:
        by_session.setdefault(e["session_id"], []).append(e)
    kept = []
    for sid, items in by_session.items():
        project, times = _hook_facts(conn, sid)
        candidates: dict = {}
        for i, e in enumerate(items):
            if project is not None:
                e["project"] = project
            if e["kind"] in times and not (e["kind"] == "turn_stopped" and
                                           (e.get("outcome") or {}).get("status") == "cancelled"):
                candidates.setdefault(e["kind"], []).append(i)
        captured = set()
        for kind, idx in candidates.items():
            window = None if kind == "session_started" else RECONCILE_WINDOW_US
            at = [items[i]["observed_at"] for i in idx]
            captured.update(idx[k] for k in _paired(at, times[kind], window))
        rep.skipped_captured += len(captured)
        kept += [e for i, e in enumerate(items) if i not in captured]
    return kept


NEIGHBOURS = 16
"""Hook times on each side of a reconstructed time that may pair with it: a session packing
thousands of events of one kind into 10 s (a hostile file) costs linear work, not quadratic."""


def _paired(at: list, pool: list, window) -> set:
    """The positions in `at` (reconstructed times, µs) paired with a time of `pool` (hook times):
    the closest pair first, then the closest of the rest, each time in at most one pair, no pair
    more than `window` apart (None: any distance). Ties go to the earlier times."""
    hooks = sorted(pool)
    pairs = []
    for i, t in enumerate(at):
        lo = 0 if window is None else bisect.bisect_left(hooks, t - window)
        hi = len(hooks) if window is None else bisect.bisect_right(hooks, t + window)
        k = bisect.bisect_left(hooks, t)  # the NEIGHBOURS nearest on each side: pairs stay linear
        pairs += [(abs(hooks[j] - t), i, j) for j in range(max(lo, k - NEIGHBOURS), min(hi, k + NEIGHBOURS))]
    pairs.sort()
    taken, used = set(), set()
    for _, i, j in pairs:
        if i not in taken and j not in used:
            taken.add(i)
            used.add(j)
    return taken


def storable(env, rep) -> bool:
    """An event the store would refuse (a shape nobody anticipated) is dropped and counted."""
    try:
        event.validate(env)
        event.check_storable(env)
        return True
    except (event.EventError, UnicodeEncodeError):
        rep.rejected += 1
        return False


def screened(files, fmt: str, named=(), progress=None, unreadable=None) -> tuple:
    """(the files of format `fmt`, [(file, the format it looks like or None)] of the others),
    before anything is written. A file of another format that was `named` (given as a file, not
    found in a directory) refuses the import, and so do files none of which is of `fmt`. A file
    found in a directory that cannot be read is left out, (file, why) appended to `unreadable`
    (one bad file no longer stops the others); a named one refuses the import."""
    from ...errors import AttemptError
    from . import formats
    kept, foreign = [], []
    named = set(named)
    for path in files:
        try:
            s = formats.screen_file(path, fmt)
        except AttemptError as e:
            if path in named or unreadable is None or e.code != "import.unreadable":
                raise
            unreadable.append((path, e.message.rsplit(": ", 1)[-1]))
            if progress is not None:
                progress(1)
            continue
        if s.accepted:
            kept.append(path)
            continue
        if path in named:
            raise AttemptError("import.wrong_format", formats.describe(path, fmt, s))
        foreign.append((path, s.looks_like))
        if progress is not None:
            progress(1)
    if unreadable and not kept and not foreign:
        path, why = unreadable[0]
        raise AttemptError("import.unreadable", f"cannot read {path}: {why}"
                           + (f" (nor {len(unreadable) - 1:,} more files found)" if len(unreadable) > 1 else ""))
    if foreign and not kept:
        one = formats.NAMES[fmt][0]
        if len(foreign) == 1:
            path, looks = foreign[0]
            msg = f"the only file found, {path}, is not {one}" + (f"; {formats.hint(looks)}" if looks else "")
        else:
            msg = f"none of the {len(foreign):,} files found is {one}: {formats.brief(foreign)}"
            looks = {f for _, f in foreign}
            if len(looks) == 1 and None not in looks:
                _, many, command = formats.NAMES[looks.pop()]
                msg += f"; they look like {many}: `{command}`"
        raise AttemptError("import.wrong_format", msg)
    return kept, foreign


def import_files(store, files, *, dry_run: bool = False, now_us: int | None = None,
                 reader, fmt: str | None = None, named=(), progress=None, finished: bool = False) -> ImportReport:
    """Reconstruct and append the events of transcript files (idempotent). `reader(file, ctx_for,
    path, report)` yields a file's envelopes (claude_transcript.claude_reader, codex_rollout.read).
    With `fmt` (a formats name), the files are screened first (`screened`): those of another
    format are refused (`named` ones) or left out and listed in the report's `wrong_format`.
    `progress(1)` is told of every file done. A file written to in the last LIVE_S seconds holds
    back what only its end decides (Report), unless the caller says every file is `finished`."""
    from ...capture import project
    from ...errors import AttemptError
    from ...ingest.contract import ingest_for
    from ...model import clock
    rep = ImportReport()
    if fmt is not None:
        files, rep.wrong_format = screened(files, fmt, named, progress, rep.unreadable)
    device, mode = store.device_id, store.capture_mode
    now = clock.now_us() if now_us is None else now_us
    projects: dict = {}

    def ctx_for(cwd, version):
        if cwd not in projects:
            projects[cwd] = project.identify(cwd, {}, device)[0] if cwd else \
                ids.project_identity("/", None, device)
        return adapters.Context(device, mode, projects[cwd], now, provider_version=version, keep_raw=False)

    ingest = ingest_for(store)
    for path in files:
        try:
            f = open(path, "rb")
        except OSError as e:
            raise AttemptError("import.unreadable", f"cannot read {path}: {e.strerror}") from None
        with f:
            try:
                live = not finished and os.fstat(f.fileno()).st_mtime * 1_000_000 >= now - LIVE_S * 1_000_000
            except OSError:
                live = False
            per = Report(live)
            envs = [e for e in (ingest(x) for x in reader(f, ctx_for, path, per)) if storable(e, rep)]
        rep.files += 1
        rep.held_back_files += per.held_back > 0
        rep.held_back += per.held_back
        rep.lines += per.lines
        rep.skipped_lines += per.skipped_lines
        rep.skipped_where += [(path, n) for n in per.skipped_at][:SKIPPED_NAMED - len(rep.skipped_where)]
        rep.events += len(envs)
        rep.sessions.update(e["session_id"] for e in envs)
        envs = _reconciled(envs, store.conn, rep)
        if dry_run:
            known = {r[0][3:] for r in store.conn.execute(
                "SELECT event_id FROM events WHERE session_id IN (SELECT value FROM json_each(?))",
                (fastjson.dumps(sorted({"ses_" + e["session_id"] for e in envs})),))}
            dup = sum(1 for e in envs if e["event_id"] in known)
            rep.duplicates += dup
            rep.accepted += len(envs) - dup
        else:
            for i in range(0, len(envs), BATCH):
                res = store.append(envs[i:i + BATCH])
                rep.accepted += len(res.accepted)
                rep.duplicates += len(res.duplicates)
        if progress is not None:
            progress(1)
    return rep
