"""`attempt bench faults`: the fault-injection suite, as figures (tests/faults runs its short
form and asserts on the same figures).

Families: kill -9 of the writing commands (attemptdb.devtools.faultbench.kill), I/O errors injected
below SQLite through a VFS (ioerr), a real full disk and read-only files, folders and
filesystems (disk), damaged copies of a database (damaged). Each returns a Tally: trials,
faults injected, files failing integrity_check, files failing `attempt verify`, acknowledged
events lost (must be 0) and tracebacks (must be 0), plus what went wrong, named.

Nothing here is imported by a command other than `attempt bench faults`.
"""

from __future__ import annotations

import random
import time

SHORT = {
    "import": dict(trials=2, events=4000), "burst": dict(trials=2, hooks=18), "daemon": dict(trials=2, hooks=18),
    "reproject": dict(trials=3, events=2000), "bundle": dict(trials=2, events=2000),
    "transcripts": dict(trials=2, sessions=4, turns=60),
    "ioerr": dict(per_op=2), "disk": dict(captures=24), "readonly": dict(captures=4), "damaged": dict(trials=5),
}
LONG = {
    "import": dict(trials=50, events=5000), "burst": dict(trials=30, hooks=30),
    "daemon": dict(trials=30, hooks=30), "reproject": dict(trials=40, events=2500),
    "bundle": dict(trials=30, events=2500), "transcripts": dict(trials=30, sessions=6, turns=80),
    "ioerr": dict(per_op=40), "disk": dict(captures=100), "readonly": dict(captures=20), "damaged": dict(trials=50),
}
FAMILIES = tuple(SHORT)


def run_family(name: str, world, rng, size: dict):
    import importlib
    mod = {"ioerr": "ioerr", "disk": "disk", "readonly": "disk", "damaged": "damaged"}.get(name, "kill")
    m = importlib.import_module(f"attemptdb.devtools.faultbench.{mod}")
    kill = ioerr = disk = damaged = m
    if name == "import":
        return [kill.import_jsonl(world, rng, size["trials"], size["events"])]
    if name == "burst":
        return [kill.capture_burst(world, rng, size["trials"], size["hooks"], daemon=False)]
    if name == "daemon":
        return [kill.capture_burst(world, rng, size["trials"], size["hooks"], daemon=True)]
    if name == "reproject":
        return [kill.reproject(world, rng, size["trials"], size["events"])]
    if name == "bundle":
        return [kill.bundle_import(world, rng, size["trials"], size["events"])]
    if name == "transcripts":
        return [kill.transcripts(world, rng, size["trials"], size["sessions"], size["turns"])]
    if name == "ioerr":
        return ioerr.sweep(world, rng, size["per_op"])
    if name == "disk":
        return [disk.full_disk(world, rng, size["captures"])]
    if name == "readonly":
        return disk.read_only(world, rng, size["captures"])
    if name == "damaged":
        return [damaged.damaged_files(world, rng, size["trials"])]
    raise ValueError(f"no fault family {name}")


def run(*, long: bool = False, families=None, seed: int = 14, progress=None) -> dict:
    """Every family (or `families`) at the short or long size; {"tallies": [...], "seconds"}."""
    from .world import World
    sizes = LONG if long else SHORT
    rng = random.Random(seed)
    world = World()
    tallies = []
    t0 = time.monotonic()
    try:
        for name in families or FAMILIES:
            t1 = time.monotonic()
            for tally in run_family(name, world, rng, sizes[name]):
                tally.extra["seconds"] = round(time.monotonic() - t1, 1)
                tallies.append(tally)
                if progress:
                    progress(tally)
    finally:
        world.close()
    return {"long": long, "seed": seed, "seconds": round(time.monotonic() - t0, 1),
            "tallies": [t.as_dict() for t in tallies]}


def table(result: dict) -> str:
    """The closing-note table (markdown)."""
    head = ("| fault family | trials | faults injected | integrity_check failures | verify failures | "
            "acknowledged events lost | tracebacks |\n|---|---:|---:|---:|---:|---:|---:|\n")
    rows = []
    tot = [0] * 6
    for t in result["tallies"]:
        vals = [t["trials"], t["faults"], t["integrity_failures"], t["verify_failures"], t["acked_lost"],
                t["tracebacks"]]
        tot = [a + b for a, b in zip(tot, vals)]
        rows.append(f"| {t['family']} | " + " | ".join(f"{v:,}" for v in vals) + " |")
    rows.append("| **all** | " + " | ".join(f"**{v:,}**" for v in tot) + " |")
    return head + "\n".join(rows) + "\n"
