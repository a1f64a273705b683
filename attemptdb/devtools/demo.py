"""`attempt demo`: a sample history built from the bundled story (fixtures/demo/story.json)
through the same pipeline a hook uses (adapter → ingestion contract → chained append), then a
summary of what was recorded.

Invariant: the demo only ever writes to a database it created itself (marked in `meta`); it
refuses to touch any other file.
"""

import os

from .. import resources
from ..errors import AttemptError
from ..model import clock, fastjson, ids

DEMO_DEVICE = ids.derive("dev_", "attempt-demo")


def _story() -> dict:
    with open(resources.path("fixtures", "demo", "story.json"), encoding="utf-8") as f:
        return fastjson.loads(f.read())


def run_demo(path: str, command: str = "attempt") -> dict:
    """Build the demo history at `path`; the closing hints run `command` (shell words that
    start this same `attempt`)."""
    from ..adapters import Context, build_event
    from ..ingest import privacy
    from ..integrity import checkpoint
    from ..integrity.verify import verify
    from ..store.database import Store
    if os.path.exists(path):
        st = Store.open(path, create=False)
        is_demo = st.meta("demo") == "1"
        st.close()
        if not is_demo:
            raise AttemptError("demo.not_a_demo_database",
                               f"{path} exists and was not made by `attempt demo`; choose another --db")
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(path + suffix)
            except FileNotFoundError:
                pass
    st = Store.open(path, create=True, capture_mode="local_semantic")
    st.set_meta("demo", "1")
    story = _story()
    project = ids.project_identity(story["project_root"], story["repo_remote"], st.device_id)
    project["branch"] = "main"
    start = clock.now_us() - 3600 * 1_000_000  # an hour ago, so sessions read as recent
    envs = []
    for item in story["events"]:
        at = start + int(item["at"] * 1_000_000)
        ctx = Context(st.device_id, st.capture_mode, project, at, hook_version="demo")
        payload = dict(item["payload"], timestamp=clock.iso(at))
        envs.append(privacy.ingest(build_event(item["provider"], payload, None, ctx), db_mode=st.capture_mode))
    res = st.append(envs)
    from ..integrity import keys
    key, _ = keys.create(st.device_id)
    st.set_meta("public_key", key.public_b64)
    checkpoint.create(st, key)
    rep = verify(st)
    kinds = st.conn.execute("SELECT provider, kind, count(*) FROM events GROUP BY provider, kind "
                            "ORDER BY provider, min(seq)").fetchall()
    failures = st.conn.execute(
        "SELECT provider, tool_name, outcome_class FROM events WHERE kind = 'tool_call_failed' ORDER BY seq").fetchall()
    tables = {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    st.close()
    lines = [f"AttemptDB demo: {len(res.accepted)} hook payloads from "
             f"{len({k[0] for k in kinds})} agents recorded in {path}", ""]
    current = None
    for provider, kind, n in kinds:
        if provider != current:
            lines.append(f"  {provider}")
            current = provider
        lines.append(f"    {n:>3}  {kind}")
    if failures:
        lines.append("")
        lines.append("  what failed:")
        for provider, tool, cls in failures:
            lines.append(f"    {provider} {tool}: {cls}")
    import shlex
    db = shlex.quote(path)
    lines += ["", rep.line(), "", "Look around:",
              f"  {command} events --db {db}",
              f"  {command} verify --db {db}"]
    if "attempts" in tables:
        lines.append(f"  {command} timeline --db {db}")
        lines.append(f"  {command} query --db {db} \"SHOW ATTEMPTS\"")
    lines.append(f"  sqlite3 {db} \"SELECT kind, count(*) FROM events GROUP BY kind\"")
    return {"path": path, "events": len(res.accepted), "verify": rep.as_dict(),
            "kinds": [{"provider": p, "kind": k, "count": n} for p, k, n in kinds],
            "text": "\n".join(lines)}
