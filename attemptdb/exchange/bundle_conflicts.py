"""What a bundle import tells the user about bytes that differ from a copy elsewhere: events of
another device stored with other bytes than that device's default sync segments carry (content
kept, or paths rewritten by --omit-paths) make pulling those segments `sync.conflict` (an event
never changes), so the import says so, device by device; and events this file already holds
without their content, whose content the bundle carries, stay as stored (spec/bundle.md)."""

from ..ingest import privacy
from ..model import fastjson


def sync_conflict_notes(store, staged: str, manifest: dict, devices) -> list[str]:
    """One note per other device whose events the import of the staged lines `staged` (a
    bundle's, read before they are imported) is about to store with bytes its segments do not
    carry."""
    how = "with their paths rewritten (--omit-paths)" if manifest.get("paths_omitted") else "with their content"
    return [f"{n:,} events of dev_{dev} were imported {how}: if that device also syncs with this file through a "
            "folder, its segments carry other bytes for them (content left out unless it syncs with "
            "--include-content; paths as stored), so pulling its segments will stop at these events "
            "(sync.conflict: the copy stored here stays, an event never changes). From devices you sync with, "
            "import default bundles (spec/bundle.md)"
            for dev, n in sorted(_content_of_others(store, staged, manifest, devices).items())]


def _content_of_others(store, staged: str, manifest: dict, devices) -> dict:
    """bare device id → how many events of another device the import is about to store with other
    bytes than that device's default sync segments carry (content left out: privacy.clamp_line,
    paths as stored): with content (or a capture mode that keeps it) in a file that keeps
    content, or with paths rewritten (`--omit-paths`). Pulling those segments is then
    `sync.conflict`."""
    omitted = bool(manifest.get("paths_omitted"))
    keeps = manifest.get("content") and privacy.parse_mode(store.capture_mode) not in (None, "metadata_only")
    others = {d for d in devices if d != store.device_id}
    if not others or not (omitted or keeps):
        return {}
    out: dict = {}
    with open(staged, "rb") as f:
        for raw in f:
            env = fastjson.loads(raw)
            dev = env.get("device_id")
            if dev not in others:
                continue
            if not omitted and privacy.parse_mode(env.get("capture_mode")) in (None, "metadata_only") and not (
                    "content" in env or "raw" in env or any(k.startswith("x_") for k in env)):
                continue
            if store.conn.execute("SELECT 1 FROM events WHERE event_id = ?", ("ev_" + env["event_id"],)).fetchone():
                continue  # already stored: a duplicate, nothing changes
            out[dev] = out.get(dev, 0) + 1
    return out


def content_not_added(store, staged: str, manifest: dict) -> list[str]:
    """A note when the bundle carries content for events this file already stores without any
    (an earlier default bundle, or sync): duplicates by event id add nothing, so that content is
    not added, and the import says so instead of reporting them only as already stored."""
    if not manifest.get("content") or privacy.parse_mode(store.capture_mode) in (None, "metadata_only"):
        return []
    n = 0
    with open(staged, "rb") as f:
        for raw in f:
            env = fastjson.loads(raw)
            if not ("content" in env or "raw" in env):
                continue
            row = store.conn.execute("SELECT content_json IS NULL AND raw_json IS NULL FROM events WHERE event_id = ?",
                                     ("ev_" + env["event_id"],)).fetchone()
            n += bool(row and row[0])
    if not n:
        return []
    return [f"{n:,} of the bundle's events with content are stored here already without it: the copies stored here "
            "stay (an event never changes), so their content was not added (spec/bundle.md)"]
