"""Simulated devices for the sync tests: each its own HOME/XDG tree, database and key, driven
through the real CLI in-process (the environment switched per call)."""

import os

from attemptdb.cli.main import run
from attemptdb.projections import READ_CLOCK_COLUMNS, catalog, scenario
from attemptdb.store.database import Store

LOCAL_COLUMNS = {"events": ("seq", "chain_hash")}
"""A file's own chain position of an event: each file keeps its own chain, so these differ
between devices by design (spec/sync.md); every other public column must be equal."""

# one repository (github.com/acme/demo): Claude Code on the laptop edits and ends, Codex on the CI
# box continues ten minutes later (one handoff); a workstation runs Gemini in another repository
SCENARIO = {
    "name": "sync_three_devices",
    "projects": {"default": {"root": "/work/demo", "remote": "github.com/acme/demo"},
                 "other": {"root": "/work/other", "remote": "github.com/acme/other"}},
    "defaults": {"provider": "claude_code", "session": "h1"},
    "events": [],
}
_LAPTOP = ["a_st", "a_p", "a_e1s", "a_e1e", "a_e2s", "a_e2e", "a_e3s", "a_e3e", "a_stop", "a_end"]
_CI = ["b_st", "b_p", "b_r1s", "b_r1e", "b_r2s", "b_r2e", "b_r3s", "b_r3e", "b_es", "b_ee", "b_stop"]
_WORKSTATION = ["o2_st", "o2_p", "o2_rs", "o2_re", "o2_stop", "o3_p", "o3_stop"]


def events_by_device() -> dict:
    """{'laptop'|'ci'|'workstation': [envelopes without device, source_seq or hlc]}."""
    src = {e["label"]: e for e in scenario.load("handoffs")["events"]}
    scn = dict(SCENARIO, events=[src[x] for x in _LAPTOP + _CI + _WORKSTATION])
    b = scenario.build(scn)
    by_id = {b.labels[x]: x for x in b.labels}
    out = {"laptop": [], "ci": [], "workstation": []}
    for env in b.events:
        label = by_id[env["event_id"]]
        who = "laptop" if label in _LAPTOP else "ci" if label in _CI else "workstation"
        out[who].append(env)
    return out


class Device:
    def __init__(self, root: str, name: str):
        self.name = name
        self.home = os.path.join(root, name)
        os.makedirs(self.home, exist_ok=True)
        self.db = os.path.join(self.home, "attempt.db")

    def env(self) -> dict:
        h = self.home
        return {"HOME": h, "XDG_DATA_HOME": h + "/.local/share", "XDG_STATE_HOME": h + "/.local/state",
                "XDG_CONFIG_HOME": h + "/.config", "ATTEMPTDB_PATH": self.db}

    def cli(self, monkeypatch, capsys, *args):
        for k, v in self.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("ATTEMPTDB_KEY_DIR", raising=False)
        capsys.readouterr()
        try:
            code = run(list(args))
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err

    def device_id(self) -> str:
        st = Store.open(self.db, readonly=True)
        try:
            return "dev_" + st.device_id
        finally:
            st.close()

    def capture(self, envelopes) -> None:
        """Store envelopes as this device's own (what its hooks would have written)."""
        st = Store.open(self.db)
        try:
            from attemptdb.ingest.contract import ingest_for
            dev, ingest = st.device_id, ingest_for(st)  # the file's capture mode, as a hook's event gets it
            st.append([ingest(dict(e, device_id=dev, source_seq=0, hlc=0)) for e in envelopes])
        finally:
            st.close()

    def count(self, where="1", params=()) -> int:
        st = Store.open(self.db, readonly=True)
        try:
            return st.conn.execute(f"SELECT count(*) FROM events WHERE {where}", params).fetchone()[0]
        finally:
            st.close()

    def rows(self, sql, params=()):
        st = Store.open(self.db, readonly=True)
        try:
            return [tuple(r) for r in st.conn.execute(sql, params)]
        finally:
            st.close()


def public_tables(db: str) -> dict:
    """{table: sorted rows} of every public table, without the file's own chain positions and
    the columns that quote the clock of the read."""
    st = Store.open(db, readonly=True)
    try:
        out = {}
        for t in catalog.build(st.conn)["tables"]:
            skip = LOCAL_COLUMNS.get(t["name"], ()) + READ_CLOCK_COLUMNS.get(t["name"], ())
            cols = ", ".join(f'"{c["name"]}"' for c in t["columns"] if c["name"] not in skip)
            out[t["name"]] = sorted((tuple(r) for r in st.conn.execute(f'SELECT {cols} FROM "{t["name"]}"')), key=repr)
        return out
    finally:
        st.close()


def teammate_key(directory: str):
    """A key of a teammate's machine (any Ed25519 key: pull pins the first one it sees)."""
    from attemptdb.integrity import keys
    return keys.create("00000000-0000-4000-8000-0000000000ff", directory)[0]


def forge_segment(ddir: str, device: str, n: int, prev: str, lines, key, data: bytes | None = None, **fields) -> str:
    """Write segment `n` of `device` under `ddir` as a teammate's machine would, whatever its
    lines hold (bytes, no newline), signed by `key`; `fields` override manifest fields. Returns
    the chain head."""
    import hashlib

    from attemptdb.integrity import chain
    from attemptdb.integrity import segments as segment
    from attemptdb.model import fastjson
    data = b"".join(x + b"\n" for x in lines) if data is None else data
    head = prev
    for x in lines:
        head = chain.link(head, hashlib.sha256(x).hexdigest(), hashlib.sha256)
    body = {"schema_version": segment.SCHEMA_VERSION, "device_id": device, "segment": n,
            "file": segment.data_name(n), "sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data),
            "events": len(lines), "first_source_seq": 1, "last_source_seq": max(len(lines), 1),
            "chain": {"prev": prev, "head": head}, "content": False,
            "created_at": "2026-01-01T00:00:00.000000Z", "producer": "a teammate"}
    body.update(fields)
    os.makedirs(ddir, exist_ok=True)
    with open(os.path.join(ddir, segment.data_name(n)), "wb") as f:
        f.write(data)
    with open(os.path.join(ddir, segment.manifest_name(n)), "w", encoding="utf-8") as f:
        f.write(fastjson.dumps(segment.sign(body, key)) + "\n")
    return head
