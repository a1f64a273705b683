"""`attempt bench sync`: many devices, one history, one team dataset (spec/sync.md).

D devices each record E synthetic events of their own (shared repositories, so projections
span devices), publish them as sync segments and export their dataset folder; a hub file pulls
every segment (the merged file) and exports the full-picture projections; then one device
records N more events and exports again (incremental: only new files), the hub pulls those;
finally the catalog's GROUP BY recipe runs in DataFusion over the whole team dataset and in
SQLite over the merged file (medians, same rows checked). Figures are wall times on this
machine and their ratio, measured in the same run.
"""

import glob
import hashlib
import os
import shutil
import statistics
import tempfile
import time

from ..integrity import keys
from ..store.database import Store
from . import synth

RECIPE = "SELECT kind, count(*) AS events FROM events WHERE retracted = false GROUP BY kind ORDER BY events DESC"


def _files(root: str) -> dict:
    out = {}
    for p in glob.glob(os.path.join(root, "**", "*"), recursive=True):
        if os.path.isfile(p):
            st = os.stat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def _digest(root: str, names) -> dict:
    out = {}
    for n in names:
        with open(os.path.join(root, n), "rb") as f:
            out[n] = hashlib.sha256(f.read()).hexdigest()
    return out


def _median_time(fn, runs: int):
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def team(devices: int = 10, events: int = 150_000, new: int = 1_000, *, seed: int = 1, runs: int = 3,
         keep: str | None = None, progress=None) -> dict:
    from ..exchange import dataset
    from ..exchange.importers.jsonl import import_file
    from ..query import datafusion_engine as engine_datafusion
    from ..sync import folder as sync_folder
    say = progress or (lambda msg: None)
    tmp = keep or tempfile.mkdtemp(prefix="attempt-bench-sync-")
    os.makedirs(tmp, exist_ok=True)
    keydir = os.path.join(tmp, "keys")
    shared = os.path.join(tmp, "shared")
    teamdir = os.path.join(tmp, "team")
    os.makedirs(shared, exist_ok=True)
    out: dict = {"devices": devices, "events_per_device": events, "new_events": new}
    try:
        stores, dkeys = [], []
        t_ingest = t_push = t_export = 0.0
        for i in range(devices):
            path = os.path.join(tmp, f"device{i}.db")
            st = Store.open(path)
            key, _ = keys.create(st.device_id, keydir)
            src = os.path.join(tmp, f"device{i}.jsonl")
            synth.write_jsonl(src, events, seed + i, device_id=st.device_id)
            t0 = time.perf_counter()
            import_file(st, src)
            t_ingest += time.perf_counter() - t0
            os.unlink(src)
            t0 = time.perf_counter()
            sync_folder.push(st, shared, key)
            t_push += time.perf_counter() - t0
            t0 = time.perf_counter()
            dataset.export(st, os.path.join(tmp, f"dataset{i}"), key)
            t_export += time.perf_counter() - t0
            stores.append(st)
            dkeys.append(key)
            say(f"device {i + 1}/{devices}: {events:,} events recorded, pushed and exported")
        out["ingest_s_per_device"] = round(t_ingest / devices, 2)
        out["push_events_per_s"] = round(devices * events / t_push)
        out["first_export_s_per_device"] = round(t_export / devices, 2)
        hub = Store.open(os.path.join(tmp, "hub.db"))
        hub_key, _ = keys.create(hub.device_id, keydir)
        t0 = time.perf_counter()
        rep = sync_folder.pull(hub, shared)
        dt = time.perf_counter() - t0
        if not rep.ok or rep.imported != devices * events:
            raise RuntimeError(f"bench pull imported {rep.imported} of {devices * events} events: "
                               f"{[p.message for p in rep.problems][:2]}")
        out["pull_events"] = rep.imported
        out["pull_s"] = round(dt, 1)
        out["pull_events_per_s"] = round(rep.imported / dt)
        say(f"hub pulled {rep.imported:,} events in {dt:.0f} s")
        # incremental: device 0 records `new` more events and exports again
        d0 = os.path.join(tmp, "dataset0")
        before = _files(d0)
        old_digests = _digest(d0, before)
        src = os.path.join(tmp, "new.jsonl")
        synth.write_jsonl(src, new, seed + 10_000, device_id=stores[0].device_id, start_us=synth.START_US + 10 ** 13)
        import_file(stores[0], src)
        t0 = time.perf_counter()
        m = dataset.export(stores[0], d0, dkeys[0])
        out["incremental_export_s"] = round(time.perf_counter() - t0, 2)
        after = _files(d0)
        added = sorted(set(after) - set(before))
        out["incremental_new_files"] = len(added)
        out["incremental_new_event_rows"] = sum(f["rows"] for f in m["files"] if f["table"] == "events")
        out["incremental_new_bytes"] = sum(after[n][0] for n in added)
        out["incremental_old_files"] = len(before)
        out["incremental_old_files_unchanged"] = (all(after[n] == before[n] for n in before)
                                                  and _digest(d0, before) == old_digests)
        t0 = time.perf_counter()
        sync_folder.push(stores[0], shared, dkeys[0])
        rep = sync_folder.pull(hub, shared)
        out["incremental_sync_s"] = round(time.perf_counter() - t0, 2)
        out["incremental_sync_events"] = rep.imported
        for st in stores:
            st.close()
        # the hub saw the full picture: its export carries the projections everyone reads
        t0 = time.perf_counter()
        dataset.export(hub, os.path.join(tmp, "dataset-hub"), hub_key)
        out["hub_export_s"] = round(time.perf_counter() - t0, 1)
        for i in list(range(devices)) + ["-hub"]:
            shutil.copytree(os.path.join(tmp, f"dataset{i}"), teamdir, dirs_exist_ok=True)
        out["team_dataset_bytes"] = sum(v[0] for v in _files(teamdir).values())
        out["merged_file_bytes"] = os.path.getsize(hub.path)
        say("team dataset assembled; timing the GROUP BY recipe")
        out["recipe"] = RECIPE
        t_df, res = _median_time(lambda: engine_datafusion.run(RECIPE, directory=teamdir), runs)
        t_sq, rows = _median_time(lambda: [tuple(r) for r in hub.conn.execute(RECIPE)], runs)
        out["datafusion_s"] = round(t_df, 3)
        out["sqlite_s"] = round(t_sq, 3)
        out["datafusion_over_sqlite"] = round(t_df / t_sq, 2) if t_sq else None
        out["same_rows"] = sorted(map(tuple, res.rows)) == sorted(rows)
        out["events_in_team_dataset"] = sum(r[1] for r in res.rows)
        hub.close()
        return out
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
