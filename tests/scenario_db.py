"""Scenario databases for the read-surface tests: fixtures/scenarios/*.json (or scenario dicts)
built through the real adapters and appended to a real store (attemptdb.projections.scenario)."""

import hashlib

from attemptdb.projections import scenario
from attemptdb.store.database import Store


def build(path: str, *scenarios) -> list:
    """Append each scenario (a name or a dict) to the database at `path`; returns the Built
    objects (their `expand("{ses:…}")` names the ids)."""
    built = []
    st = Store.open(path)
    try:
        for s in scenarios:
            b = scenario.build(scenario.load(s) if isinstance(s, str) else dict(s))
            for env in scenario.arrival(b):
                st.append([env])
            built.append(b)
    finally:
        st.close()
    return built


def file_hashes(path: str) -> dict:
    """SHA-256 of the database file and of its -wal (what a write changes). A missing -wal and
    an empty one are the same state: a read-only reader may create the empty file."""
    out = {}
    for suffix in ("", "-wal"):
        try:
            with open(path + suffix, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        out[suffix or "db"] = hashlib.sha256(data).hexdigest()
    return out


def hook_event(built, *, project: str, session: str, payload: dict, at: str = "-00:00:01",
               provider: str = "claude_code") -> dict:
    """One more hook event of a scenario dated "now", as its adapter builds it."""
    from attemptdb import adapters
    proj = built.project(project)
    ctx = adapters.Context(built.device_id, "local_semantic", proj, built.at(at), hook_version="test")
    return adapters.build_event(provider, dict(payload, session_id=session, cwd=proj["root"]), None, ctx)


ANSWER_GATE = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t1",
               "tool_input": {"command": "rm -rf build"}, "tool_response": {"stdout": ""}}
"""units_needs_you: the permission request of session ny-g1 (project gate) answered."""
