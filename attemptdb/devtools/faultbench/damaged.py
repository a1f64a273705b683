"""Damaged copies of a database: random bytes flipped (outside the 100-byte header), bytes
flipped inside a page of the events table, a lost `-wal` after signed captures, a truncated
file, a zeroed page. On each: `verify`, `status`, `doctor` and the read commands exit with a
coded error or their output, never a traceback; `verify` fails whenever SQLite's
integrity_check does; a capture exits 0 and, once the damage was seen, writes nothing into the
file (its event waits in the spool); `attempt recover` builds a file that passes integrity_check,
verify and a rebuild comparison.

The tally's integrity and verify columns count *recovered* files that fail (must be 0); what
the damage did to the copies is in `detected_by_integrity_check`, `detected_by_verify` and
`verify_missed` (must be 0).
"""

from __future__ import annotations

import hashlib
import os
import shutil

import apsw

from . import kill
from .world import Tally, Trial, World

KINDS = ("flip", "flip-events", "lost-wal", "truncate", "zero-page")
READS = (("verify",), ("status",), ("doctor",), ("events", "--jsonl"), ("timeline",), ("reproject", "--check"))


def _digest(path: str) -> str:
    """The bytes of the file and of any -wal content (an empty -wal SQLite creates on open
    holds nothing)."""
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        try:
            with open(path + suffix, "rb") as f:
                h.update(f.read())
        except FileNotFoundError:
            pass
    return h.hexdigest()


def _pages(path: str) -> tuple[int, int]:
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("PRAGMA page_size").fetchone()[0], conn.execute("PRAGMA page_count").fetchone()[0]
    finally:
        conn.close()


def _events_pages(path: str) -> list[int]:
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf'")]
    finally:
        conn.close()


def flip(path: str, rng, spots: int, lo: int = 100, hi: int | None = None) -> list:
    """Flip random bits at `spots` places of `path` between byte lo and hi."""
    size = os.path.getsize(path)
    hi = size if hi is None else min(hi, size)
    done = []
    with open(path, "r+b") as f:
        for _ in range(spots):
            at = rng.randrange(lo, hi)
            n = rng.randint(1, 16)
            f.seek(at)
            data = bytearray(f.read(n))
            for i in range(len(data)):
                data[i] ^= rng.randint(1, 255)
            f.seek(at)
            f.write(bytes(data))
            done.append((at, len(data)))
    return done


def damage(t: Trial, kind: str, rng) -> str:
    """Damage the trial's database in place; a description."""
    db = t.db
    if kind == "lost-wal":
        return _lose_wal(t)
    size, count = _pages(db)
    if kind == "flip":
        spots = flip(db, rng, rng.randint(1, 6))
        return f"{len(spots)} random spots flipped"
    if kind == "flip-events":
        pages = _events_pages(db)
        p = pages[rng.randrange(len(pages) // 4, len(pages) * 3 // 4 or 1)] if len(pages) > 3 else pages[0]
        flip(db, rng, rng.randint(1, 4), (p - 1) * size, p * size)
        return f"bytes flipped in events page {p} of {count}"
    if kind == "truncate":
        keep = rng.randint(2, max(2, count - 1))
        with open(db, "r+b") as f:
            f.truncate(keep * size)
        return f"truncated to {keep} of {count} pages"
    if kind == "zero-page":
        p = rng.randint(2, count)
        with open(db, "r+b") as f:
            f.seek((p - 1) * size)
            f.write(b"\0" * size)
        return f"page {p} of {count} zeroed"
    raise ValueError(kind)


def _lose_wal(t: Trial) -> str:
    """Signed captures that are only in the -wal, then the -wal is gone (a crash and a careless
    copy, a sync tool that skipped it)."""
    holder = apsw.Connection(t.db)  # keeps the -wal from being folded in and removed
    holder.execute("SELECT count(*) FROM events").fetchall()
    try:
        for i in range(5):
            t.run("capture", "claude-code", input=kill.burst_payload(77, i))
        t.run("checkpoint", "--db", t.db)  # the device signs them: the outside copy is ahead
        shutil.copyfile(t.db, t.db + ".main-only")
    finally:
        holder.close()
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(t.db + suffix)
        except FileNotFoundError:
            pass
    os.rename(t.db + ".main-only", t.db)
    return "5 signed captures lost with the -wal"


def damaged_files(world: World, rng, trials: int) -> Tally:
    tally = Tally("damaged files")
    base = kill.history(world, 800, "damaged-base", seed=31)
    base.run("events", "-n", "1")  # every page in the main file, nothing pending
    for k in range(trials):
        kind = KINDS[k % len(KINDS)]
        t = world.trial("damaged", base)
        try:
            what = damage(t, kind, rng)
        except (OSError, apsw.Error, ValueError) as e:
            tally.fail(f"trial {k} ({kind}): could not damage the copy: {e}")
            continue
        tally.trials += 1
        tally.faults += 1
        _judge(t, tally, f"trial {k} ({kind}: {what})")
        shutil.rmtree(t.root, ignore_errors=True)
    shutil.rmtree(base.root, ignore_errors=True)
    return tally


def _judge(t: Trial, tally: Tally, what: str) -> None:
    broken = bool(t.integrity())
    tally.add("detected_by_integrity_check", broken)
    said = {}
    for args in READS:
        r = t.run(*args)
        said[args[0] if args[0] != "events" else " ".join(args)] = r
        if r.traceback:
            tally.tracebacks += 1
            tally.fail(f"{what}: `attempt {' '.join(args)}`: {r}")
        elif not r.coded:
            tally.fail(f"{what}: `attempt {' '.join(args)}` exit {r.rc} without a coded error: {r}")
    v = said["verify"]
    tally.add("detected_by_verify", v.rc != 0)
    if broken and v.rc == 0:
        tally.add("verify_missed")
        tally.fail(f"{what}: integrity_check fails but verify says {v.out[-200:]!r}")
    if v.rc != 0:  # seen damaged: nothing may be written into it any more
        before = _digest(t.db)
        r = t.run("capture", "claude-code", input=kill.burst_payload(55, 0))
        if r.rc != 0 or r.out or r.err:
            tally.tracebacks += r.traceback
            tally.fail(f"{what}: capture on the damaged file: {r}")
        if _digest(t.db) != before:
            tally.add("written_after_seen")
            tally.fail(f"{what}: a capture wrote into the damaged file")
        if not any((e.get("tool") or {}).get("call_id") == "toolu_burst_55_0" for e in t.spooled_lines()):
            tally.acked_lost += 1
            tally.fail(f"{what}: the capture's event is not in the spool")
        _recover(t, tally, what)


def _recover(t: Trial, tally: Tally, what: str) -> None:
    out = t.db + ".recovered"
    r = t.run("recover", "--db", t.db, "--out", out, "--json")
    if r.traceback:
        tally.tracebacks += 1
    if not os.path.exists(out):
        if r.rc != 0 and r.coded:
            tally.add("recover_refused_coded")
            return
        tally.fail(f"{what}: recover made no file: {r}")
        return
    import json
    try:
        rep = json.loads(r.out)
        tally.add("recovered_rows", rep["kept"])
        tally.add("lost_rows", rep["lost_rows"])
    except (ValueError, KeyError):
        tally.fail(f"{what}: recover --json: {r}")
    tally.add("recovered_files")
    rec = Trial(t.root)
    rec.db = out
    rec.check(tally, f"{what}: the recovered file")
