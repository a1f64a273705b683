"""Correction and Retraction events: AttemptDB's own facts about its inferences.

Invariants:
- Both are canonical Event v1 envelopes (provider `attemptdb`, kinds `correction` /
  `retraction`, provider_event_name `Correction` / `Retraction`) placed in the session of their
  target (its provider session id copied, its projection session id forced), appended through
  `Store.append` like any fact. Nothing is ever edited: a wrong correction is corrected again, a
  wrong retraction can only be documented.
- Attrs hold ids and vocabulary only (correction_type, target, target_type, outcome,
  failure_class, reason, note_chars); the note text is content (`content.note`) and is left out
  under metadata_only, where only note_chars survives.
- A target is named by its full prefixed id or a unique prefix of at least 4 hex digits; an
  unknown, ambiguous or too-short id is a coded error listing candidates, never a guess.
- `--dry-run` appends inside a transaction, reads the changed rows, and rolls back.
"""

from .. import ADAPTER_VERSION, __version__, clock, event, ids
from ..errors import AttemptError

OUTCOMES = ("succeeded", "failed", "abandoned", "superseded")
OUTCOME_ALIASES = {"success": "succeeded", "failure": "failed"}
REASONS = ("benchmark", "test", "duplicate", "mistaken_import", "privacy", "revoked", "other")
MIN_HEX = 4
_HEX = set("0123456789abcdef")


# --- envelopes ----------------------------------------------------------------------------

def _envelope(kind: str, session: dict, attrs: dict, note, device_id: str, capture_mode: str,
              observed_at: int) -> dict:
    sid = ids.bare(session["session_id"])
    proj = {k: v for k, v in session["project"].items() if k in event.PROJECT_ORDER and v is not None}
    proj["project_id"] = ids.bare(proj["project_id"])
    env = {
        "event_id": ids.uuid7(observed_at // 1000 if observed_at > 0 else None),
        "schema_version": 1, "device_id": ids.bare(device_id), "source_seq": 0, "hlc": 0,
        "observed_at": observed_at, "captured_at": observed_at, "provider": "attemptdb",
        "adapter_version": ADAPTER_VERSION, "hook_version": __version__,
        "capture_mode": capture_mode,
        "provider_event_name": "Correction" if kind == "correction" else "Retraction",
        "kind": kind, "project": proj, "session_id": sid,
        "provider_session_id": session["provider_session_id"],
        "agent": {"agent_id": ids.derive("agt_", "session", sid)},
    }
    if note:
        attrs["note_chars"] = len(note)
    env["attrs"] = attrs
    if note and capture_mode != "metadata_only":
        env["content"] = {"note": note}
    env = event.canonical(env)
    event.validate(env)
    return env


def correction_envelope(*, target: str, session: dict, outcome=None, failure_class=None,
                        note=None, device_id: str, capture_mode: str, observed_at: int,
                        correction_type=None) -> dict:
    """A Correction of `target` (att_/trn_ id) written into `session` ({session_id,
    provider_session_id, project})."""
    if correction_type is None:
        if target.startswith("trn_"):
            correction_type = "turn_objective"
        else:
            correction_type = "attempt_outcome" if outcome else "attempt_note"
    attrs = {"correction_type": correction_type, "target": target,
             "target_type": {"att_": "attempt", "trn_": "turn", "ses_": "session"}.get(target[:4], "attempt")}
    if outcome:
        attrs["outcome"] = OUTCOME_ALIASES.get(outcome, outcome)
    if failure_class:
        attrs["failure_class"] = failure_class
    return _envelope("correction", session, attrs, note, device_id, capture_mode, observed_at)


def retraction_envelope(*, target: str, target_type: str, session: dict, reason: str, note=None,
                        device_id: str, capture_mode: str, observed_at: int) -> dict:
    attrs = {"target_type": target_type, "target": target, "reason": reason}
    return _envelope("retraction", session, attrs, note, device_id, capture_mode, observed_at)


# --- targets ------------------------------------------------------------------------------

_LOOKUPS = {
    # prefix → (kind, SQL listing candidate ids for a GLOB pattern, SQL of the session)
    "att_": ("attempt", "SELECT attempt_id FROM attempt_base WHERE attempt_id GLOB ? LIMIT 6",
             "SELECT session_id FROM attempt_base WHERE attempt_id = ?"),
    "trn_": ("turn", "SELECT turn_id FROM turn_facts WHERE turn_id GLOB ? LIMIT 6",
             "SELECT session_id FROM turn_facts WHERE turn_id = ?"),
    "ses_": ("session", "SELECT DISTINCT raw_session_id FROM session_facts WHERE raw_session_id GLOB ? LIMIT 6",
             "SELECT session_id FROM session_facts WHERE raw_session_id = ? ORDER BY started_at LIMIT 1"),
    "ev_": ("event", "SELECT event_id FROM events WHERE event_id GLOB ? LIMIT 6", None),
}


def resolve(conn, text: str, prefixes: tuple) -> str:
    """The full id `text` names (full id or unique prefix ≥ 4 hex digits) among `prefixes`."""
    t = (text or "").strip().lower()
    prefix = next((p for p in prefixes if t.startswith(p)), None)
    if prefix is None:
        raise AttemptError("target.kind", f"expected an id starting with {' or '.join(prefixes)}")
    body = t[len(prefix):]
    hexpart = body.replace("-", "")
    if not hexpart or any(c not in _HEX for c in hexpart) or len(hexpart) > 32:
        raise AttemptError("target.malformed", f"not a {prefix}… id (hex digits expected after the prefix)")
    if len(hexpart) < MIN_HEX:
        raise AttemptError("target.short", f"give at least {MIN_HEX} hex digits after {prefix}")
    # the canonical text has hyphens after hex digits 8, 12, 16, 20
    canon = ""
    for i, c in enumerate(hexpart):
        if i in (8, 12, 16, 20):
            canon += "-"
        canon += c
    rows = [r[0] for r in conn.execute(_LOOKUPS[prefix][1], (prefix + canon + "*",))]
    if not rows:
        raise AttemptError("target.not_found", f"no {_LOOKUPS[prefix][0]} {prefix}{canon}", exit_status=1)
    if len(rows) > 1:
        listed = ", ".join(ids.short(r) for r in rows[:5])
        raise AttemptError("target.ambiguous", f"{prefix}{canon} matches several: {listed}")
    return rows[0]


def target_session(conn, target: str) -> dict:
    """{session_id, provider_session_id, project} of the projection session holding `target`."""
    if target.startswith("ev_"):
        row = conn.execute("SELECT gsid FROM project_input WHERE event_id = ?", (target,)).fetchone()
    else:
        row = conn.execute(_LOOKUPS[target[:4]][2], (target,)).fetchone()
    info = None if row is None else conn.execute(
        "SELECT s.session_id, s.provider_session_id, e.project_id, e.project_root, e.project_name, "
        "e.repo_remote FROM session_facts s JOIN events e ON e.event_id = s.first_event_id "
        "WHERE s.session_id = ?", (row[0],)).fetchone()
    if info is None:
        raise AttemptError("target.not_found", f"no projected session holds {target}", exit_status=1)
    project = {"project_id": info[2], "root": info[3], "name": info[4]}
    if info[5]:
        project["repo_remote"] = info[5]
    return {"session_id": info[0], "provider_session_id": info[1], "project": project}


# --- writing ------------------------------------------------------------------------------

def parse_outcome(text):
    if text is None:
        return None
    t = OUTCOME_ALIASES.get(text.strip().lower(), text.strip().lower())
    if t not in OUTCOMES:
        raise AttemptError("correct.outcome", f"outcome must be one of {', '.join(OUTCOMES)}")
    return t


def parse_reason(text) -> str:
    t = (text or "").strip().lower()
    if t not in REASONS:
        raise AttemptError("retract.reason", f"reason must be one of {', '.join(REASONS)}")
    return t


def check_class(text):
    if text is None:
        return None
    t = text.strip()
    if not t or len(t) > 64 or not t.isascii() or not all(c.isalnum() or c in "_-." for c in t):
        raise AttemptError("correct.failure_class",
                           "a failure class is a short token (letters, digits, _ - .), e.g. compile_error")
    return t


def check_note(text):
    if text is None:
        return None
    if not text.strip():
        raise AttemptError("meta.note", "an empty note says nothing; leave --note out")
    if len(text) > 4096:
        raise AttemptError("meta.note", "a note is at most 4096 characters")
    return text
