"""What a bundle import tells the user about bytes that differ from a copy elsewhere: events of
another device stored with other bytes than that device's default sync segments carry (content
kept, or paths rewritten by --omit-paths) make pulling those segments `sync.conflict` (an event
never changes), so the import says so, device by device; and events this file already holds
without their content, whose content the bundle carries, stay as stored (spec/bundle.md)."""

from ..ingest import privacy
from ..model import fastjson


def import_notes(store, staged: str, manifest: dict, devices) -> list[str]:
    """The notes of importing the staged lines `staged` (a bundle's, read before they are
    imported), from one pass over them: one per other device whose events it is about to store
    with bytes that device's segments do not carry, and one when it carries content for events
    stored here already without any."""
    others, without = _passed(store, staged, manifest, devices)
    how = "with their paths rewritten (--omit-paths)" if manifest.get("paths_omitted") else "with their content"
    notes = [f"{n:,} events of dev_{dev} were imported {how}: if that device also syncs with this file through a "
             "folder, its segments carry other bytes for them (content left out unless it syncs with "
             "--include-content; paths as stored), so pulling its segments will stop at these events "
             "(sync.conflict: the copy stored here stays, an event never changes). From devices you sync with, "
             "import default bundles (spec/bundle.md)"
             for dev, n in sorted(others.items())]
    if without:
        notes.append(f"{without:,} of the bundle's events with content are stored here already without it: the copies "
                     "stored here stay (an event never changes), so their content was not added (spec/bundle.md)")
    return notes


def _passed(store, staged: str, manifest: dict, devices) -> tuple[dict, int]:
    """(bare device id → how many events of another device the import is about to store with
    other bytes than that device's default sync segments carry — content kept (privacy.clamp_line
    leaves it out of segments) or paths rewritten (`--omit-paths`), so pulling those segments is
    `sync.conflict` —, how many of the bundle's events with content this file stores already
    without any: duplicates by event id add nothing)."""
    omitted = bool(manifest.get("paths_omitted"))
    keeps = manifest.get("content") and privacy.parse_mode(store.capture_mode) not in (None, "metadata_only")
    others = {d for d in devices if d != store.device_id} if (omitted or keeps) else set()
    if not others and not keeps:
        return {}, 0
    new: dict = {}
    without = 0
    with open(staged, "rb") as f:
        for raw in f:
            env = fastjson.loads(raw)
            dev = env.get("device_id")
            content = "content" in env or "raw" in env
            mine = dev in others and (omitted or content or any(k.startswith("x_") for k in env)
                                      or privacy.parse_mode(env.get("capture_mode")) not in (None, "metadata_only"))
            if not (mine or (keeps and content)):
                continue
            row = store.conn.execute("SELECT content_json IS NULL AND raw_json IS NULL FROM events WHERE event_id = ?",
                                     ("ev_" + env["event_id"],)).fetchone()
            if row is None:
                if mine:
                    new[dev] = new.get(dev, 0) + 1
            elif keeps and content and row[0]:
                without += 1
    return new, without
