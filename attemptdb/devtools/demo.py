"""`attempt demo`: a sample history built from the bundled story (fixtures/demo/story.json)
through the same pipeline a hook uses (adapter → ingestion contract → chained append), then a
summary of what was recorded.

Invariant: the demo only ever writes to a database it created itself (marked in `meta`); it
refuses to touch any other file. Nor does it leave anything in the user's key directory: its
checkpoint is signed by a one-off key made in a private temporary directory (with the
checkpoint copy kept beside a key) that is deleted once it has signed. The file records the
public key, so `attempt verify` still checks the signature (noting that no local key holds
it); a command that would sign the demo database again finds its key gone (`keys.lost`).
"""

import contextlib
import os
import shutil
import tempfile

from .. import resources
from ..errors import AttemptError
from ..model import clock, fastjson, ids

DEMO_DEVICE = ids.derive("dev_", "attempt-demo")


def _story() -> dict:
    with open(resources.path("fixtures", "demo", "story.json"), encoding="utf-8") as f:
        return fastjson.loads(f.read())


ONE_OFF_KEY = ("(signed by a one-off key, deleted after signing: no key is left behind, so",
               " no signed bundle or team dataset can be made from this file)")
KEY_DIR_ENV = "ATTEMPTDB_KEY_DIR"  # what location.key_dir() reads first


@contextlib.contextmanager
def _keys_in(directory: str | None):
    """Device keys and checkpoint copies go to `directory` meanwhile, or (None) to a private
    temporary directory removed afterwards, never to the user's key directory."""
    tmp = None
    if directory is None:
        directory = tmp = tempfile.mkdtemp(prefix="attemptdb-demo-keys-")
    else:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    old = os.environ.get(KEY_DIR_ENV)
    os.environ[KEY_DIR_ENV] = os.path.abspath(directory)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(KEY_DIR_ENV, None)
        else:
            os.environ[KEY_DIR_ENV] = old
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def run_demo(path: str, command: str = "attempt", *, key_dir: str | None = None) -> dict:
    """Build the demo history at `path`; the closing hints run `command` (shell words that
    start this same `attempt`). Its checkpoint is signed by a one-off key, deleted once it has
    signed, unless `key_dir` names where to keep that key (and the checkpoint copy beside it)
    for later commands run with ATTEMPTDB_KEY_DIR set to it: tests that need a signable demo
    database; `attempt demo` never keeps it."""
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
    with _keys_in(key_dir):
        key, _ = keys.create(st.device_id)
        st.set_meta("public_key", key.public_b64)
        checkpoint.create(st, key)
        if key_dir is not None:
            rep = verify(st)
    if key_dir is None:  # as `attempt verify` sees it now: against the public key the file records
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
    lines += ["", rep.line()]
    if rep.ok and rep.checkpoints and key_dir is None:
        lines += [f"  {line}" for line in ONE_OFF_KEY]
    lines += ["", "Look around:",
              f"  {command} events --db {db}",
              f"  {command} verify --db {db}"]
    if "attempts" in tables:
        lines.append(f"  {command} timeline --db {db}")
        lines.append(f"  {command} query --db {db} \"SHOW ATTEMPTS\"")
    lines.append(f"  sqlite3 {db} \"SELECT kind, count(*) FROM events GROUP BY kind\"")
    return {"path": path, "events": len(res.accepted), "verify": rep.as_dict(),
            "kinds": [{"provider": p, "kind": k, "count": n} for p, k, n in kinds],
            "text": "\n".join(lines)}
