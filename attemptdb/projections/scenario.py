"""Scenarios: multi-event streams of provider hook payloads with their expected projection rows
(fixtures/scenarios/*.json, format in fixtures/scenarios/README.md).

Invariant: building a scenario is deterministic — every event id is derived from the scenario
name and the event's label (a scenario dated "now" places its events before the moment it is
built, so Needs You and open units can be checked; its times move, its ids do not), payloads become events through the real adapters
(`attemptdb.adapters.build_event`), and Correction/Retraction steps through the same builders
the CLI uses — so expected rows can name ids symbolically (`{att:e5}`) and hold on any machine,
in any arrival order.
"""

import os
import re

from .. import adapters, resources
from ..errors import AttemptError
from ..model import clock, fastjson, ids
from . import meta

DEFAULT_DATE = "2026-08-28"
DEFAULT_ROOT = "/work/demo"
DEFAULT_REMOTE = "github.com/acme/demo"
ID_COLUMNS = {
    "sessions": ("session_id",), "turns": ("turn_id",), "tool_calls": ("tool_call_id",),
    "attempts": ("attempt_id",), "signals": ("event_id",), "commits": ("commit_id",),
    "corrections": ("event_id",), "retractions": ("event_id",), "notes": ("event_id",), "approvals": ("event_id",),
    "handoffs": ("from_turn", "to_turn"), "edges": ("edge_kind", "from_id", "to_id"),
    "events": ("event_id",), "work_units": ("work_unit_id",), "decisions": ("decision_id",),
    "conflicts": ("first_work_unit", "second_work_unit"), "needs_you": ("kind", "work_unit_id"),
}
_REF = re.compile(r"\{([a-z0]+):([^{}]+)\}")


def folder() -> str:
    return resources.folder("fixtures") + os.sep + "scenarios"


def names() -> list[str]:
    """Scenario file names (without .json), sorted."""
    return sorted(n[:-5] for n in os.listdir(folder()) if n.endswith(".json"))


def load(name_or_path: str) -> dict:
    path = name_or_path if name_or_path.endswith(".json") else os.path.join(folder(), name_or_path + ".json")
    with open(path, encoding="utf-8") as f:
        scn = fastjson.loads(f.read())
    scn.setdefault("name", os.path.basename(path)[:-5])
    return scn


class Built:
    """A scenario turned into envelopes: `events` in listed (arrival) order, `labels` maps a
    label to its bare event uuid, `refs` expands `{kind:arg}` references."""

    def __init__(self, scn: dict):
        self.scn = scn
        self.name = scn["name"]
        self.device_id = ids.derive("dev_", "scenario", self.name)
        self.labels: dict[str, str] = {}
        self.events: list[dict] = []
        self.steps: list[dict] = []
        self.built_at = clock.now_us() // 1_000_000 * 1_000_000

    # --- references ---------------------------------------------------------------------

    def ref(self, kind: str, arg: str) -> str:
        if kind in ("ev", "att", "trn", "tc", "cmt", "wu", "deca", "decb"):
            if arg not in self.labels:
                raise AttemptError("scenario.ref", f"{self.name}: unknown event label {arg!r}")
            uid = self.labels[arg]
            if kind in ("deca", "decb"):  # a decision: its anchor's uuid with version digit a / b
                return "dec_" + uid[:14] + kind[3] + uid[15:]
            return {"ev": "ev_", "att": "att_", "trn": "trn_", "tc": "tc_", "cmt": "cmt_", "wu": "wu_"}[kind] + uid
        if kind in ("ses", "trn0", "agt", "att0"):
            provider, _, psid = arg.partition(":")
            sid = ids.session_id(provider, psid)
            return {"ses": "ses_", "trn0": "trn_", "agt": "agt_", "att0": "att_"}[kind] + (
                ids.agent_id(sid) if kind == "agt" else sid)
        if kind == "sub":
            provider, psid, agent = arg.split(":", 2)
            return "agt_" + ids.subagent_id(ids.session_id(provider, psid), agent)
        if kind == "prj":
            return "prj_" + self.project(arg)["project_id"]
        if kind == "sesu":  # the per-project session of a provider that sent no session id
            provider, _, proj = arg.partition(":")
            raw = ids.session_id(provider, "unknown")
            return "ses_" + raw[:19] + self.project(proj or None)["project_id"][19:]
        raise AttemptError("scenario.ref", f"{self.name}: unknown reference kind {kind!r}")

    def expand(self, value):
        """`value` with every `{kind:arg}` reference replaced by the id it names."""
        if isinstance(value, str):
            m = _REF.fullmatch(value)
            if m:
                return self.ref(m.group(1), m.group(2))
            return _REF.sub(lambda m: self.ref(m.group(1), m.group(2)), value)
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            return {k: self.expand(v) for k, v in value.items()}
        return value

    # --- building -----------------------------------------------------------------------

    def project(self, key: str | None) -> dict:
        projects = self.scn.get("projects") or {}
        spec = projects.get(key or "default") or {}
        root = spec.get("root", DEFAULT_ROOT)
        remote = spec.get("remote", DEFAULT_REMOTE if not projects else None)
        return ids.project_identity(root, remote, self.device_id)

    def at(self, text: str) -> int:
        date = self.scn.get("date", DEFAULT_DATE)
        if date == "now":  # "-HH:MM:SS" before the moment the scenario is built (whole seconds)
            sign, hms = text[0], text[1:]
            h, m, sec = (int(x) for x in hms.split(":"))
            if sign != "-":
                raise AttemptError("scenario.time", f"{self.name}: with date 'now' a time is '-HH:MM:SS', got {text!r}")
            return self.built_at - ((h * 60 + m) * 60 + sec) * 1_000_000
        t = text if "T" in text else f"{date}T{text}"
        if not t.endswith("Z"):
            t += "Z"
        return clock.from_iso(t)


def build(scn: dict) -> Built:
    """Envelopes for every step of `scn`, in listed order."""
    b = Built(scn)
    defaults = scn.get("defaults") or {}
    # labels first, so steps may reference later events
    for i, step in enumerate(scn["events"]):
        label = step.get("label") or f"#{i}"
        if label in b.labels:
            raise AttemptError("scenario.label", f"{b.name}: duplicate label {label!r}")
        b.labels[label] = ids.derive("ev_", "scenario", b.name, label)
    for i, step in enumerate(scn["events"]):
        label = step.get("label") or f"#{i}"
        at = b.at(step["at"])
        mode = step.get("capture_mode", scn.get("capture_mode", "local_semantic"))
        if "correct" in step or "retract" in step:
            env = _meta_step(b, step, at, mode)
        else:
            env = _hook_step(b, step, defaults, at, mode)
        env["event_id"] = b.labels[label]
        b.events.append(env)
        b.steps.append(step)
    return b


def _hook_step(b: Built, step: dict, defaults: dict, at: int, mode: str) -> dict:
    provider = step.get("provider", defaults.get("provider", "claude_code"))
    proj = dict(b.project(step.get("project", defaults.get("project"))))
    for k in ("head", "branch"):
        if step.get(k) is not None:
            proj[k] = step[k]
    payload = dict(defaults.get("payload") or {})
    payload.update(step.get("payload") or {})
    session = step.get("session", defaults.get("session"))
    if session is not None:
        key = "conversation_id" if provider == "cursor" else "session_id"
        payload.setdefault(key, session)
    payload.setdefault("cwd", proj["root"])
    ctx = adapters.Context(b.device_id, mode, proj, at, hook_version="scenario")
    env = adapters.build_event(provider, payload, None, ctx)
    return env


def _meta_step(b: Built, step: dict, at: int, mode: str) -> dict:
    if "correct" in step:
        c = b.expand(step["correct"])
        return meta.correction_envelope(
            target=c["target"], session=_target_session(b, c.get("session")),
            outcome=c.get("outcome"), failure_class=c.get("failure_class"), note=c.get("note"),
            device_id=b.device_id, capture_mode=mode, observed_at=at,
            correction_type=c.get("correction_type"))
    r = b.expand(step["retract"])
    target_type = next(k for k in ("session", "attempt", "event") if k in r)
    return meta.retraction_envelope(
        target=r[target_type], target_type=target_type, session=_target_session(b, r.get("in")),
        reason=r.get("reason", "test"), note=r.get("note"), device_id=b.device_id,
        capture_mode=mode, observed_at=at)


def _target_session(b: Built, spec) -> dict:
    """The session a meta event is written into: {provider, psid, project}."""
    spec = spec or {}
    provider = spec.get("provider", (b.scn.get("defaults") or {}).get("provider", "claude_code"))
    psid = spec.get("session", (b.scn.get("defaults") or {}).get("session", "unknown"))
    proj = b.project(spec.get("project"))
    return {"session_id": spec.get("session_id") or ids.session_id(provider, psid),
            "provider_session_id": psid, "project": proj}


def arrival(b: Built, order=None) -> list[dict]:
    """Envelopes in arrival order: `order` (labels), else the scenario's `arrival`, else listed."""
    order = order or b.scn.get("arrival")
    if not order:
        return [dict(e) for e in b.events]
    by_label = {lab: e for lab, e in zip(_labels(b), b.events)}
    if sorted(order) != sorted(by_label):
        raise AttemptError("scenario.arrival", f"{b.name}: arrival must list every label once")
    return [dict(by_label[lab]) for lab in order]


def _labels(b: Built) -> list[str]:
    return [s.get("label") or f"#{i}" for i, s in enumerate(b.scn["events"])]


# --- checking -----------------------------------------------------------------------------

def expected(b: Built, key: str = "expect") -> dict:
    """{table: [row dicts]} with references expanded (`expect`: exactly these rows;
    `expect_some`: at least these rows)."""
    return {t: [b.expand(r) for r in rows] for t, rows in (b.scn.get(key) or {}).items()}


def _key(table: str, row: dict):
    return tuple(row.get(c) for c in ID_COLUMNS[table])


def compare(table: str, want: list[dict], got: list[dict], exact_count: bool = True) -> list[str]:
    """Problems found matching expected rows (only the columns they name) to actual rows by the
    table's id columns; with `exact_count`, actual rows nobody expected are problems too."""
    problems = []
    index = {}
    for r in got:
        index.setdefault(_key(table, r), []).append(r)
    for w in want:
        k = _key(table, w)
        if None in k:
            problems.append(f"{table}: expected row without its id columns {ID_COLUMNS[table]}: {w}")
            continue
        rows = index.get(k)
        if not rows:
            problems.append(f"{table}: no row {k}")
            continue
        r = rows[0]
        for col, v in w.items():
            if col not in r:
                problems.append(f"{table} {k}: no column {col!r}")
            elif not equal(r[col], v):
                problems.append(f"{table} {k}: {col} = {r[col]!r}, expected {v!r}")
    if exact_count:
        wanted = {_key(table, w) for w in want}
        extra = [k for k in index if k not in wanted]
        if extra:
            problems.append(f"{table}: {len(extra)} unexpected row(s): {extra[:5]}")
    return problems


def equal(actual, want) -> bool:
    if isinstance(want, (list, dict)) and isinstance(actual, str):
        try:
            actual = fastjson.loads(actual)
        except ValueError:
            return False
    if isinstance(want, bool):
        return actual == int(want)
    if isinstance(want, float) or isinstance(actual, float):
        return actual is not None and want is not None and abs(float(actual) - float(want)) < 1e-9
    return actual == want


def check(rows_by_table: dict, b: Built) -> list[str]:
    """Every problem between a scenario's expectations and `rows_by_table` ({table: [dict]})."""
    problems = []
    exact = b.scn.get("exact", True)
    for key, exact_count in (("expect", exact), ("expect_some", False)):
        for table, want in expected(b, key).items():
            if table not in rows_by_table:
                problems.append(f"{table}: not read")
                continue
            problems += compare(table, want, rows_by_table[table], exact_count=exact_count)
    return problems
