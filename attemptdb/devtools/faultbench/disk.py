"""A real full disk (a 3 MiB tmpfs) and read-only files, folders and filesystems (read-only
mounts). Needs root to mount; without it each family reports why it was skipped.

Full disk: captures keep exiting 0; an event that cannot be written anywhere is counted where
`attempt doctor` finds it (or said on stderr), never dropped without a trace; no empty temp
file is left in a spool; an import stops with a coded error and leaves a consistent file; after
space returns the spool drains and the file verifies.
Read-only: captures exit 0 and spool elsewhere (or count, or say, the loss); reads work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from . import kill
from .world import Tally, Trial, World

SMALL = "6m"


def mount_tmpfs(path: str, size: str) -> str | None:
    """Mount a tmpfs of `size` at `path`; the reason when that is not possible here."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "mounting a small filesystem needs root"
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return f"mount failed: {p.stderr.strip()[:200]}"
    return None


def umount(path: str) -> None:
    subprocess.run(["umount", "-l", path], capture_output=True)


def remount(path: str, mode: str, bind: bool = False) -> str | None:
    opts = f"remount,bind,{mode}" if bind else f"remount,{mode}"
    p = subprocess.run(["mount", "-o", opts, path], capture_output=True, text=True)
    return None if p.returncode == 0 else f"remount failed: {p.stderr.strip()[:200]}"


def bind_ro(path: str) -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "a read-only bind mount needs root"
    p = subprocess.run(["mount", "--bind", path, path], capture_output=True, text=True)
    if p.returncode != 0:
        return f"bind mount failed: {p.stderr.strip()[:200]}"
    reason = remount(path, "ro", bind=True)
    if reason:
        umount(path)
    return reason


def fill(directory: str) -> int:
    """Write a file in `directory` until the filesystem is full; its size."""
    path = os.path.join(directory, "filler")
    n = 0
    with open(path, "ab", buffering=0) as f:
        chunk = b"\0" * 65536
        while True:
            try:
                n += f.write(chunk)
            except OSError:
                break
        for size in (4096, 512, 1):
            while True:
                try:
                    n += f.write(b"\0" * size)
                except OSError:
                    break
    return n


def big_payload(marker: str, kb: int = 24) -> bytes:
    return json.dumps({"session_id": "fault-disk", "cwd": "/tmp", "hook_event_name": "PostToolUse",
                       "tool_name": "Bash", "tool_use_id": marker, "tool_input": {"command": "make test"},
                       "tool_response": {"stdout": ("all green " * 100 + "\n") * kb, "stderr": "",
                                         "interrupted": False}}).encode()


def _losses(t: Trial) -> int:
    from ...capture import spool
    with t.activated():
        return spool.losses()["count"]


def _tmp_files(t: Trial) -> int:
    from ...capture import spool
    n = 0
    with t.activated():
        for d in spool.directories(t.db):
            try:
                n += sum(1 for name in os.listdir(d) if name.endswith(".tmp"))
            except OSError:
                pass
    return n


def _stored(t: Trial, prefix: str) -> set:
    return {r[0] for r in t.rows("SELECT tool_call_id FROM events WHERE tool_call_id LIKE ?", (prefix + "%",))}


def _capture(t: Trial, tally: Tally, marker: str, payload: bytes) -> bool:
    """One hook; True when it said on stderr that the event was lost (a traced loss)."""
    r = t.run("capture", "claude-code", input=payload)
    if r.traceback:
        tally.tracebacks += 1
    said = b"error[capture.lost]" in r.err
    if r.rc != 0 or r.out or (r.err and not said):
        tally.fail(f"{marker}: capture rc={r.rc} out={r.out[:80]!r} err={r.err[-200:]!r}")
    return said


def _settle(t: Trial, tally: Tally, what: str, markers: list, said: set, counted: int, prefix: str) -> None:
    """Space (or writability) is back: a read drains the spool; every capture is now in the
    file, or its loss was counted or said."""
    r = t.run("events", "-n", "1")
    if r.traceback:
        tally.tracebacks += 1
    stored = _stored(t, prefix)
    missing = [m for m in markers if m not in stored and m not in said]
    untraced = len(missing) - counted
    tally.add("captures", len(markers))
    tally.add("stored", len(stored))
    tally.add("lost_counted", counted)
    tally.add("lost_said_on_stderr", len(said))
    if untraced > 0:
        tally.acked_lost += untraced
        tally.fail(f"{what}: {untraced} capture(s) neither stored, nor counted, nor said")
    if _tmp_files(t):
        tally.fail(f"{what}: {_tmp_files(t)} temp file(s) left in the spool")
    pending = t.spooled_lines()
    if pending:
        tally.fail(f"{what}: {len(pending)} event(s) still in the spool after a read")
    t.check(tally, what)


# --- full disk -------------------------------------------------------------------------------------

def full_disk(world: World, rng, captures: int) -> Tally:
    tally = Tally("full disk (6 MiB tmpfs)")
    for variant in ("runtime dir elsewhere", "everything on the full disk"):
        small = os.path.join(world.root, "small-" + variant.split()[0])
        reason = mount_tmpfs(small, SMALL)
        if reason:
            tally.extra["skipped"] = reason
            return tally
        try:
            _full_disk_trial(world, tally, small, variant, captures)
        finally:
            umount(small)
            shutil.rmtree(small, ignore_errors=True)
    return tally


def _full_disk_trial(world: World, tally: Tally, small: str, variant: str, captures: int) -> None:
    t = Trial(os.path.join(small, "t"))
    if variant.startswith("runtime"):
        run = os.path.join(world.root, "runtime-" + str(world.n))
        os.makedirs(run, mode=0o700, exist_ok=True)
        t.env["XDG_RUNTIME_DIR"] = run
    if t.run("init", "--db", t.db).rc != 0:
        raise RuntimeError("attempt init failed on the small filesystem")
    from .. import synth
    src = os.path.join(world.root, "disk-history.jsonl")
    if not os.path.exists(src):
        synth.write_jsonl(src, 100, 21)
    t.run("import", "jsonl", src, "--db", t.db)
    before = _losses(t)
    fill(small)
    tally.trials += 1
    prefix = f"toolu_disk_{world.n}_"
    markers, said = [], set()
    for i in range(captures):
        m = f"{prefix}{i}"
        markers.append(m)
        tally.faults += 1
        if _capture(t, tally, m, big_payload(m, 8)):
            said.add(m)
        if i % 10 == 9:  # reads on a full disk: coded, never a traceback
            for args in (("events", "-n", "1"), ("status",), ("verify",)):
                r = t.run(*args)
                if r.traceback or not r.coded:
                    tally.tracebacks += r.traceback
                    tally.fail(f"{variant}: `attempt {args[0]}` on a full disk: {r}")
                if r.rc != 0:
                    tally.add("reads_refused_coded")
    more = os.path.join(world.root, "disk-more.jsonl")
    if not os.path.exists(more):
        synth.write_jsonl(more, 60, 22)
    r = t.run("import", "jsonl", more, "--db", t.db)
    tally.faults += 1
    if r.rc == 0 or b"error[store.disk_full]" not in r.err or r.traceback:
        tally.tracebacks += r.traceback
        tally.fail(f"{variant}: import on a full disk: {r}")
    found = t.integrity()  # SQLite cannot even make the -shm it reads with: checked once space is back
    if found and not any(f.startswith(("IOError", "CantOpenError", "FullError")) for f in found):
        tally.integrity_failures += 1
        tally.fail(f"{variant}: integrity_check on the full disk: {found[:2]}")
    tmp = _tmp_files(t)
    if tmp:
        tally.fail(f"{variant}: {tmp} empty temp file(s) left in the spool on the full disk")
    counted = _losses(t) - before
    d = t.run("doctor", "--json")
    try:
        health = json.loads(d.out)["database"]["capture_health"]
        if health.get("lost", 0) < counted:
            tally.fail(f"{variant}: doctor reports {health.get('lost')} lost, the counter {counted}")
    except (ValueError, KeyError, TypeError):
        tally.fail(f"{variant}: doctor --json on a full disk: {d}")
    os.unlink(os.path.join(small, "filler"))
    _settle(t, tally, variant, markers, said, counted, prefix)
    r = t.run("import", "jsonl", more, "--db", t.db)
    if r.rc != 0:
        tally.fail(f"{variant}: the import once space is back: {r}")


# --- read-only ------------------------------------------------------------------------------------

def read_only(world: World, rng, captures: int) -> list:
    tally = Tally("read-only file, folder, filesystem")
    for variant in ("file", "folder", "filesystem", "filesystem, runtime dir too"):
        reason = _read_only_trial(world, tally, variant, captures)
        if reason:
            tally.extra["skipped"] = reason
            break
    return [tally]


def _read_only_trial(world: World, tally: Tally, variant: str, captures: int) -> str | None:
    fs = os.path.join(world.root, "ro-" + variant.split(",")[0] + str(world.n))
    reason = mount_tmpfs(fs, "64m")
    if reason:
        return reason
    mounts = [fs]
    try:
        t = Trial(os.path.join(fs, "t"))
        if variant in ("file", "folder", "filesystem"):
            run = os.path.join(world.root, "runtime-" + str(world.n))
            os.makedirs(run, mode=0o700, exist_ok=True)
            t.env["XDG_RUNTIME_DIR"] = run
        base = kill.history(world, 200, "ro-history", seed=23)
        base.copy_into(t)
        shutil.rmtree(base.root, ignore_errors=True)
        t.run("events", "-n", "1")  # settle the copy (its -wal folded in, nothing pending)
        if variant == "file":
            reason = bind_ro(t.db)
            mounts.insert(0, t.db)
        elif variant == "folder":
            reason = bind_ro(os.path.dirname(t.db))
            mounts.insert(0, os.path.dirname(t.db))
        else:
            reason = remount(fs, "ro")
        if reason:
            return reason
        tally.trials += 1
        prefix = f"toolu_ro_{world.n}_"
        markers, said = [], set()
        for i in range(captures):
            m = f"{prefix}{i}"
            markers.append(m)
            tally.faults += 1
            if _capture(t, tally, m, kill.burst_payload(0, 0).replace(b"toolu_burst_0_0", m.encode())):
                said.add(m)
        for args in (("events", "-n", "3"), ("status",), ("verify",), ("timeline",), ("query", "SHOW SESSIONS")):
            r = t.run(*args)
            if r.rc != 0 or r.traceback:
                tally.tracebacks += r.traceback
                tally.fail(f"read-only {variant}: `attempt {' '.join(args)}` does not work: {r}")
            else:
                tally.add("reads_ok")
        for m in mounts[:-1]:
            umount(m)
        if variant.startswith("filesystem"):
            remount(fs, "rw")
        counted = _losses(t)
        _settle(t, tally, f"read-only {variant}", markers, said, counted, prefix)
        return None
    finally:
        for m in mounts:
            umount(m)
        shutil.rmtree(fs, ignore_errors=True)
