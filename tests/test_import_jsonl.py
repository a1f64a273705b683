"""`attempt import jsonl` and `attempt events --jsonl`: exact round trips, idempotence, batches."""

import io
import json
import os
import subprocess

import pytest
from conftest import ROOT, attempt_cmd, run_attempt
from test_capture import as_bytes, spool_files, tool_payload

from attemptdb.devtools import synth
from attemptdb.errors import AttemptError
from attemptdb.exchange.importers import jsonl
from attemptdb.model import event
from attemptdb.store.database import PAGE_SIZE, Store


def _stream(n, seed=11):
    return "".join(event.line(e) + "\n" for e in synth.generate(n, seed=seed)).encode()


def _hashes(path):
    st = Store.open(path, readonly=True)
    out = [r[0] for r in st.conn.execute("SELECT event_hash FROM events ORDER BY seq")]
    st.close()
    return out


def test_round_trip_through_the_cli_is_exact(tmp_path, home):
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    src = tmp_path / "in.jsonl"
    src.write_bytes(_stream(300))
    assert run_attempt(["import", "jsonl", str(src), "--db", a]).returncode == 0
    out1 = run_attempt(["events", "--jsonl", "--db", a])
    assert out1.returncode == 0
    exported = tmp_path / "out.jsonl"
    exported.write_bytes(out1.stdout)
    assert run_attempt(["import", "jsonl", str(exported), "--db", b]).returncode == 0
    out2 = run_attempt(["events", "--jsonl", "--db", b])
    assert out2.stdout == out1.stdout  # same envelopes, byte for byte
    assert _hashes(a) == _hashes(b)  # same hashes, same chain
    lines = out1.stdout.decode().splitlines()
    assert len(lines) == 300
    first = json.loads(lines[0])
    assert first["source_seq"] == 1 and first["hlc"] > 0 and "ingested_at" in first


def test_an_import_that_creates_the_file_creates_its_key_and_signs(tmp_path, home):
    """A file an import creates is made as `attempt init` makes one: its device's key exists, so
    the import signs what it wrote (without a key a later `recover` could not vouch for it)."""
    db = str(tmp_path / "new.db")
    src = tmp_path / "in.jsonl"
    src.write_bytes(_stream(40))
    assert run_attempt(["import", "jsonl", str(src), "--db", db]).returncode == 0
    shown = run_attempt(["keys", "show", "--db", db])
    assert shown.returncode == 0 and shown.stdout.startswith(b"id_"), shown.stderr
    v = run_attempt(["verify", "--db", db, "--json"])
    assert v.returncode == 0 and json.loads(v.stdout)["checkpoints"] >= 1, v.stdout


def test_import_is_idempotent(tmp_path, home):
    db = str(tmp_path / "a.db")
    src = tmp_path / "in.jsonl"
    src.write_bytes(_stream(120))
    r1 = run_attempt(["import", "jsonl", str(src), "--db", db, "--json"])
    r2 = run_attempt(["import", "jsonl", str(src), "--db", db, "--json"])
    assert json.loads(r1.stdout) == {"lines": 120, "accepted": 120, "duplicates": 0, "conflicts": 0}
    assert json.loads(r2.stdout) == {"lines": 120, "accepted": 0, "duplicates": 120, "conflicts": 0}


@pytest.mark.parametrize("pipeline", [False, 2])
def test_a_line_that_differs_from_the_event_stored_under_its_id_is_a_conflict(tmp_path, home, pipeline):
    """An event id names one event: a line carrying a stored id with other content (an outcome
    flipped, a later source_seq) was counted "already stored" and the import said nothing. It is
    reported, never stored, the stored event kept; the rest of the file is imported; exit 1."""
    db = str(tmp_path / "a.db")
    envs = list(synth.generate(60, seed=5))
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(event.line(e).encode() + b"\n" for e in envs[:40]))
    assert run_attempt(["import", "jsonl", str(src), "--db", db]).returncode == 0
    before = run_attempt(["events", "--jsonl", "--db", db]).stdout
    stored = [json.loads(x) for x in before.splitlines()]
    changed = [dict(stored[3], provider_event_name="Forged"), dict(stored[7], source_seq=stored[7]["source_seq"] + 1000)]
    again = stored[10]  # the very line stored: a duplicate, no conflict
    fresh = [event.line(e) for e in envs[40:]]
    src.write_bytes("".join(json.dumps(e) + "\n" for e in changed + [again]).encode()
                    + "".join(x + "\n" for x in fresh).encode())
    st = Store.open(db)
    try:
        rep = jsonl.import_file(st, str(src), pipeline=pipeline)
    finally:
        st.close()
    assert (rep.accepted, rep.duplicates) == (20, 3)
    assert sorted(rep.conflicts) == sorted([changed[0]["event_id"], changed[1]["event_id"]])
    after = run_attempt(["events", "--jsonl", "--db", db]).stdout.splitlines()
    assert after[:40] == before.splitlines()  # the stored events kept, byte for byte
    assert run_attempt(["verify", "--db", db]).returncode == 0
    # the CLI: counts, then the coded error naming the ids, exit 1; a second run the same
    r = run_attempt(["import", "jsonl", str(src), "--db", db])
    assert r.returncode == 1, r.stderr
    assert b"imported 0 events (23 already stored)" in r.stdout
    err = r.stderr.decode()
    assert err.startswith("error[import.conflicting_events]: 2 events differ from the one stored under their id")
    assert "ev_" + changed[0]["event_id"] in err and "the stored events kept" in err
    r = run_attempt(["import", "jsonl", str(src), "--db", db, "--json"])
    assert json.loads(r.stdout) == {"lines": 23, "accepted": 0, "duplicates": 23, "conflicts": 2}


def test_two_lines_of_one_file_with_one_id_and_other_content_conflict(tmp_path, home):
    db = str(tmp_path / "a.db")
    e = next(iter(synth.generate(1, seed=9)))
    src = tmp_path / "in.jsonl"
    src.write_text(event.line(e) + "\n" + event.line(dict(e, provider_event_name="Other")) + "\n"
                   + event.line(e) + "\n")
    r = run_attempt(["import", "jsonl", str(src), "--db", db, "--json"])
    assert r.returncode == 1 and json.loads(r.stdout) == {"lines": 3, "accepted": 1, "duplicates": 2, "conflicts": 1}


def test_a_hook_payload_delivered_twice_is_no_conflict(tmp_path, home):
    """The store's duplicates of the capture path (a retried hook, a spool drained twice) leave
    the writer's clocks to it: the same event, whatever clocks the second delivery would get."""
    db = str(tmp_path / "h.db")
    for _ in range(2):
        r = run_attempt(["capture", "claude-code", "--db", db], input=as_bytes(tool_payload()),
                        env={"ATTEMPTDB_NO_DAEMON": "1"})
        assert r.returncode == 0
    st = Store.open(db)
    try:
        line = run_attempt(["events", "--jsonl", "--db", db]).stdout.splitlines()[-1]
        env = json.loads(line)
        for k in ("source_seq", "hlc", "ingested_at"):
            env.pop(k, None) if k == "ingested_at" else env.update({k: 0})
        res = st.append([env])
    finally:
        st.close()
    assert res.duplicates == [env["event_id"]] and res.conflicts == []


@pytest.mark.parametrize("bad,why", [
    (b"{not json", "malformed JSON"),
    (b'{"event_id": "x"}', "is required"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"[1, 2, 3]", "must be a JSON object"),
])
def test_bad_line_is_named_and_its_batch_is_not_half_written(tmp_path, home, bad, why):
    db = str(tmp_path / "a.db")
    good = _stream(25).splitlines()
    data = b"\n".join(good[:12] + [bad] + good[12:]) + b"\n"
    st = Store.open(db)
    with pytest.raises(AttemptError) as e:
        jsonl.import_stream(st, io.BytesIO(data), batch=10)
    assert e.value.code == "import.bad_line"
    assert "line 13" in e.value.message and why in e.value.message
    assert st.count() == 10  # the first batch; nothing of lines 11-20
    st.close()
    r = run_attempt(["import", "jsonl", "-", "--db", str(tmp_path / "b.db")], input=data)
    assert r.returncode == 2 and b"line 13" in r.stderr and b"Traceback" not in r.stderr


@pytest.mark.parametrize("pipeline", [False, True, 2, 3])
def test_an_overlong_line_stops_the_import_unread(tmp_path, home, monkeypatch, pipeline):
    """A line over MAX_LINE (64 MiB; lowered here) is named and never read whole: a file
    without newlines cannot make an import hold gigabytes."""
    monkeypatch.setattr(jsonl, "MAX_LINE", 65536)
    good = _stream(30).splitlines()
    head = b"\n".join(good[:20]) + b"\n"
    src = tmp_path / "in.jsonl"
    src.write_bytes(head + b"x" * 300_000 + b"\n" + b"\n".join(good[20:]) + b"\n")
    st = Store.open(str(tmp_path / "a.db"))
    with open(src, "rb") as f:
        with pytest.raises(AttemptError) as e:
            jsonl.import_stream(st, f, batch=10, pipeline=pipeline)
        assert e.value.code == "import.bad_line"
        assert e.value.message == "line 21: longer than 65,536 bytes (not read)"
        if not pipeline:
            assert f.tell() <= len(head) + 65536 + 1 + io.DEFAULT_BUFFER_SIZE
    assert st.count() == 20  # the batches before it, nothing after
    st.close()


def test_the_cli_says_what_was_stored_before_a_bad_line_and_how_big_a_batch_is(tmp_path, home):
    good = _stream(jsonl.BATCH + 5).splitlines()
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(good[:jsonl.BATCH + 2] + [b"{oops"] + good[jsonl.BATCH + 2:]) + b"\n")
    db = str(tmp_path / "a.db")
    r = run_attempt(["import", "jsonl", str(src), "--db", db])
    assert r.returncode == 2
    assert f"line {jsonl.BATCH + 3}".encode() in r.stderr
    assert f"{jsonl.BATCH:,} events of the lines before its batch stored".encode() in r.stderr
    r = run_attempt(["import", "jsonl", "--help"])
    assert f"one transaction per {jsonl.BATCH:,} lines".encode() in b" ".join(r.stdout.split())
    assert f"over {jsonl.MAX_LINE >> 20} MiB".encode() in b" ".join(r.stdout.split())


def test_error_messages_never_echo_content(tmp_path, home):
    secret = "CANARY_IMPORT_SECRET_9d1e"
    env = next(synth.generate(1, seed=2))
    env["kind"] = secret
    st = Store.open(str(tmp_path / "a.db"))
    with pytest.raises(AttemptError) as e:
        jsonl.import_stream(st, io.BytesIO((json.dumps(env) + "\n").encode()))
    assert secret not in str(e.value)


def test_pipeline_and_single_process_store_the_same_envelopes(tmp_path, home):
    src = tmp_path / "in.jsonl"
    src.write_bytes(_stream(2500, seed=5))
    rows = []
    for name, pipe in (("one.db", False), ("two.db", True), ("three.db", 2), ("four.db", 3)):
        st = Store.open(str(tmp_path / name))
        rep = jsonl.import_file(st, str(src), pipeline=pipe, batch=400)
        assert rep.accepted == 2500
        rows.append(st.conn.execute(
            f"SELECT {', '.join(c for c in event.COLUMNS if c not in ('ingested_at', 'hlc'))} "
            "FROM events ORDER BY seq").fetchall())
        st.close()
    assert len(rows) == 4 and all(r == rows[0] for r in rows[1:])


@pytest.mark.parametrize("parts", [1, 2, 3])
@pytest.mark.parametrize("bad", [3, 16, 26, 33])
def test_pipeline_reports_a_bad_line_too(tmp_path, home, parts, bad):
    """Whichever preparer owns the bad line's batch, the import stops there: the batches
    before it stored (other preparers may have prepared later ones: they are dropped)."""
    good = _stream(40).splitlines()
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(good[:bad - 1] + [b"{oops"] + good[bad - 1:]) + b"\n")
    st = Store.open(str(tmp_path / "a.db"))
    with pytest.raises(AttemptError) as e:
        jsonl.import_file(st, str(src), pipeline=parts, batch=10)
    assert f"line {bad}:" in e.value.message
    assert st.count() == (bad - 1) // 10 * 10
    st.close()


def test_preparers_read_the_file_from_where_the_stream_stands(tmp_path, home):
    """Each preparer reads the file on an offset of its own, starting where the caller's
    stream stands (the caller's offset is untouched); a stream that is no plain file gets one
    preparer reading the stream itself."""
    lines = _stream(30).splitlines()
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    st = Store.open(str(tmp_path / "a.db"))
    with open(src, "rb") as f:
        f.readline()
        f.readline()
        at = f.tell()
        rep = jsonl.import_stream(st, f, batch=4, pipeline=3)
        assert f.tell() == at
    assert rep.accepted == 28 and st.count() == 28
    st.close()
    st = Store.open(str(tmp_path / "b.db"))
    rep = jsonl.import_stream(st, io.BytesIO(b"\n".join(lines) + b"\n"), batch=4, pipeline=3)
    assert rep.accepted == 30
    st.close()


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"), reason="pipe sizes are a Linux feature")
def test_the_pipeline_pipe_is_widened_and_widening_never_fails():
    import fcntl
    import multiprocessing
    recv, send = multiprocessing.Pipe(duplex=False)
    try:
        before = fcntl.fcntl(recv.fileno(), fcntl.F_GETPIPE_SZ)
        jsonl._widen(recv)
        after = fcntl.fcntl(recv.fileno(), fcntl.F_GETPIPE_SZ)
        with open("/proc/sys/fs/pipe-max-size") as f:
            limit = int(f.read())
        assert before < jsonl.PIPE_BYTES and after >= min(jsonl.PIPE_BYTES, limit)
        jsonl._widen(recv, size=1 << 40)  # refused by the kernel: no error reaches the import
    finally:
        recv.close()
        send.close()
    jsonl._widen(recv)  # a closed end: still no error


def test_bulk_settings_last_only_as_long_as_the_import(tmp_path, home):
    """An import writes with a large page cache, a long checkpoint interval and no cyclic GC;
    the connection and the interpreter get their own settings back, after a failure too."""
    import gc
    st = Store.open(str(tmp_path / "a.db"))
    before = [st.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("cache_size", "wal_autocheckpoint")]
    seen = []
    real_write = jsonl._write

    def spy(store, batches, rep, progress=None):
        seen.append((store.conn.execute("PRAGMA cache_size").fetchone()[0],
                     store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0], gc.isenabled()))
        return real_write(store, batches, rep, progress)

    jsonl._write = spy
    try:
        jsonl.import_stream(st, io.BytesIO(_stream(5)))
        with pytest.raises(AttemptError):
            jsonl.import_stream(st, io.BytesIO(b"{oops\n"))
    finally:
        jsonl._write = real_write
    assert seen == [(-jsonl.IMPORT_CACHE_KIB, jsonl.IMPORT_WAL_BYTES // PAGE_SIZE, False)] * 2
    assert jsonl.checkpoint_pages(4096) == 4 * jsonl.checkpoint_pages(PAGE_SIZE) == 65536  # bytes, whatever the pages
    jsonl.import_stream(st, io.BytesIO(_stream(30, seed=2)))
    assert os.path.getsize(st.path + "-wal") == 0  # the connection is open, its WAL is empty
    after = [st.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("cache_size", "wal_autocheckpoint")]
    assert after == before and gc.isenabled()


def test_metadata_only_database_clamps_imported_content(tmp_path, home):
    db = str(tmp_path / "m.db")
    Store.open(db, capture_mode="metadata_only").close()
    src = tmp_path / "in.jsonl"
    src.write_bytes(_stream(40))
    assert run_attempt(["import", "jsonl", str(src), "--db", db]).returncode == 0
    st = Store.open(db, readonly=True)
    n = st.conn.execute("SELECT count(*) FROM events WHERE content_json IS NOT NULL OR raw_json IS NOT NULL "
                        "OR capture_mode != 'metadata_only'").fetchone()[0]
    assert n == 0


def test_imports_and_hooks_at_once_on_one_file(tmp_path, home):
    """Three `attempt import` processes (one stream overlapping another) and eight hooks write
    one file at the same time: every distinct event is stored once, the chain verifies, and the
    projections the triggers kept equal a rebuild from the events."""
    a, b = _stream(3000, seed=21), _stream(3000, seed=22)
    overlap = b"".join(a.splitlines(keepends=True)[1000:2000]) + _stream(500, seed=23)
    files = []
    for name, data in (("a.jsonl", a), ("b.jsonl", b), ("c.jsonl", overlap)):
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    db = str(tmp_path / "x.db")
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    imports = [subprocess.Popen(attempt_cmd() + ["import", "jsonl", f, "--db", db], **pipes) for f in files]
    hooks = [subprocess.Popen(attempt_cmd() + ["capture", "claude-code", "--db", db],
                              stdin=subprocess.PIPE, **pipes) for _ in range(8)]
    for i, h in enumerate(hooks):
        h.stdin.write(as_bytes(tool_payload(f"toolu_at_once_{i}", session="sess-at-once")))
        h.stdin.close()
    for p in imports + hooks:
        p.wait(timeout=300)
        err = p.stderr.read()
        p.stdout.close()
        p.stderr.close()
        assert (p.returncode, err) == (0, b""), err
    wanted = {json.loads(line)["event_id"] for data in (a, b, overlap) for line in data.splitlines()}
    # on a starved machine a hook whose lock wait passes its busy timeout spools (by design, as in
    # test_64_simultaneous_captures_on_one_fresh_file): the next read ingests what it spooled
    assert run_attempt(["events", "--db", db, "--json"]).returncode == 0
    st = Store.open(db, readonly=True)
    stored = [r[0] for r in st.conn.execute("SELECT event_id FROM events")]
    st.close()
    assert len(stored) == len(set(stored)) == len(wanted) + len(hooks)
    assert wanted <= {e[len("ev_"):] for e in stored}
    r = run_attempt(["verify", "--db", db])
    assert r.returncode == 0 and r.stdout.startswith(f"ok: {len(stored)} events".encode()), r.stdout
    r = run_attempt(["reproject", "--check", "--db", db], timeout=300)
    assert r.returncode == 0 and b"ok: the incremental state equals a rebuild" in r.stdout, r.stdout


def test_hooks_get_their_turn_during_a_long_import(tmp_path, home):
    """A hook waits at most 2 s for the lock before it spools; an import holds the lock for one
    batch at a time and unpacks the next one outside its transaction, so hooks that arrive
    mid-import are written straight into the file."""
    src, db, total, imp, _preparers = _start_import_and_wait_until_writing(tmp_path, seed=31)
    st = Store.open(db, readonly=True)
    stored_before = st.count()
    st.close()
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    for i in range(4):
        r = subprocess.run(attempt_cmd() + ["capture", "claude-code", "--db", db], env=env, timeout=60,
                           input=as_bytes(tool_payload(f"toolu_turn_{i}", session="sess-turn")),
                           capture_output=True)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert imp.poll() is None, "the import was still writing when the last hook was done"
    assert imp.wait(timeout=300) == 0, imp.stderr.read()
    imp.stdout.close()
    imp.stderr.close()
    assert 0 < stored_before < total, "the hooks ran while the import was writing"
    assert spool_files(db, home) == [], "a hook had to spool: the import did not let it in"
    st = Store.open(db, readonly=True)
    assert st.count() == total + 4
    st.close()


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start_import_and_wait_until_writing(tmp_path, seed):
    """A 6-batch import running in its own process, past its first commit: (src, db, total,
    the import process, the pids of its preparing children)."""
    import time
    total = jsonl.BATCH * 6
    src = tmp_path / "big.jsonl"
    src.write_bytes(_stream(total, seed=seed))
    db = str(tmp_path / "x.db")
    Store.open(db).close()
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    imp = subprocess.Popen(attempt_cmd() + ["import", "jsonl", str(src), "--db", db],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    stored = 0
    while stored == 0 and imp.poll() is None:
        time.sleep(0.02)
        st = Store.open(db, readonly=True)
        stored = st.count()
        st.close()
    assert imp.poll() is None, "the import ended before the crash"
    children = _children(imp.pid)
    if os.path.exists("/proc/self/task"):
        assert len(children) == jsonl.preparers() >= 2, "a large file is prepared in preparers() children"
    return src, db, total, imp, children


def _intact_and_resumable(src, db, total):
    st = Store.open(db, readonly=True)
    stored = st.count()
    st.close()
    assert 0 < stored < total and stored % jsonl.BATCH == 0, "whole batches only"
    r = run_attempt(["verify", "--db", db])
    assert r.returncode == 0 and r.stdout.startswith(f"ok: {stored} events".encode()), r.stdout
    r = run_attempt(["reproject", "--check", "--db", db], timeout=300)
    assert r.returncode == 0 and b"ok: the incremental state equals a rebuild" in r.stdout, r.stdout
    r = run_attempt(["import", "jsonl", str(src), "--db", db, "--json"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"lines": total, "accepted": total - stored, "duplicates": stored, "conflicts": 0}


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the worker through /proc (Linux)")
def test_kill_9_of_the_preparing_process(tmp_path, home):
    """The writer is told its workers died (a coded error, exit 2); what it stored is whole
    batches, verifies and re-runs to completion."""
    import signal
    src, db, total, imp, children = _start_import_and_wait_until_writing(tmp_path, seed=41)
    for child in children:
        os.kill(child, signal.SIGKILL)
    assert imp.wait(timeout=60) == 2
    err = imp.stderr.read()
    imp.stdout.close()
    imp.stderr.close()
    assert err.startswith(b"error[import.worker]: the import worker stopped unexpectedly"), err
    assert b"Traceback" not in err
    _intact_and_resumable(src, db, total)


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the worker through /proc (Linux)")
def test_kill_9_of_the_writing_process(tmp_path, home):
    """No worker outlives its writer; the file recovers whole batches from its WAL, verifies
    and re-runs to completion."""
    import signal
    import time
    src, db, total, imp, children = _start_import_and_wait_until_writing(tmp_path, seed=43)
    os.kill(imp.pid, signal.SIGKILL)
    imp.wait(timeout=60)
    imp.stdout.close()
    imp.stderr.close()
    end = time.monotonic() + 30
    while any(_alive(c) for c in children) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(_alive(c) for c in children), "a preparing process outlived its writer"
    _intact_and_resumable(src, db, total)


def test_a_full_disk_is_a_coded_error_and_the_worker_stays_quiet(tmp_path, home, monkeypatch, capfd):
    """SQLITE_FULL in the writer: `error[store.disk_full]`, exit 2, the batches before it
    stored; the preparing process finds its pipe closed and leaves without a traceback."""
    import apsw

    from attemptdb.cli.main import run
    src = tmp_path / "big.jsonl"
    src.write_bytes(_stream(jsonl.BATCH * 3, seed=47))
    db = str(tmp_path / "x.db")
    Store.open(db).close()
    real = Store.append_prepared
    calls = []

    def filling_up(self, items, **kw):
        calls.append(len(items))
        if len(calls) == 2:
            raise apsw.FullError("database or disk is full")
        return real(self, items, **kw)

    monkeypatch.setattr(Store, "append_prepared", filling_up)
    assert run(["import", "jsonl", str(src), "--db", db]) == 2
    out, err = capfd.readouterr()
    assert err.startswith("error[store.disk_full]") and "Traceback" not in err, err
    st = Store.open(db, readonly=True)
    assert st.count() == jsonl.BATCH
    st.close()


def test_one_core_prepares_in_the_writing_process(tmp_path, home, monkeypatch):
    """Under `taskset -c 0` (or a one-core cpuset) an import forks no preparer: they would
    only take turns with the writer on its one core."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(_stream(30))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)

    def forked(*a, **k):
        raise AssertionError("a preparer was forked on one core")
    monkeypatch.setattr(jsonl, "_from_child", forked)
    st = Store.open(str(tmp_path / "a.db"))
    assert jsonl.import_file(st, str(src), pipeline=True, batch=10).accepted == 30
    st.close()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert jsonl.preparers() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert jsonl.preparers() == jsonl.MAX_PREPARERS == 4
