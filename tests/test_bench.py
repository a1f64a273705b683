"""`attempt bench` ingest / verify / capture on tiny sizes: the figures are there and
consistent (never timed assertions: performance is measured by running `attempt bench`)."""

import os

import pytest

from attemptdb.devtools import bench
from attemptdb.store import cores


def test_ingest_reports_both_halves_the_plain_insert_and_the_bytes_in_one_run():
    r = bench.ingest(300, repeat=1, batch=100)
    for k in ("seconds", "baseline_seconds", "prepare_seconds", "write_seconds", "chain_only_seconds"):
        assert r[k] > 0, k
    for k in ("ratio", "prepare_ratio", "write_ratio", "chain_only_ratio"):
        assert r[k] > 0, k
    assert r["events"] == 300 and r["jsonl_bytes_per_event"] == round(r["bytes"] / 300, 1)
    assert r["file_bytes_per_event"] == round(r["file_bytes"] / 300, 1)
    assert r["file_to_jsonl"] == round(r["file_bytes"] / r["bytes"], 3)
    # the bound: the plain INSERT against the JSON floor spread over every core (the figures
    # are rounded, and tiny here: only their presence and sign are checked)
    assert r["json_floor_seconds"] > 0 and r["json_floor_ratio_bound"] > 0 and r["cores"] == cores.available()


def test_json_floor_parses_every_line(tmp_path):
    src = tmp_path / "e.jsonl"
    src.write_bytes(b'{"a":1}\n{"b":[1,2]}\n{"c":\n')
    with pytest.raises(ValueError):
        bench._json_floor(str(src))
    src.write_bytes(b'{"a":1}\n{"b":[1,2]}\n')
    assert bench._json_floor(str(src)) > 0


def test_chain_only_stores_every_event_and_projects_none(tmp_path):
    from attemptdb.devtools import synth
    from attemptdb.store.database import Store
    src, db = str(tmp_path / "e.jsonl"), str(tmp_path / "c.db")
    synth.write_jsonl(src, 400, 2)
    assert bench._chain_only(db, src, 100) > 0
    st = Store.open(db, readonly=True)
    try:
        c = st.conn
        assert st.count() == 400
        assert c.execute("SELECT count(*) FROM session_facts").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM turn_facts").fetchone()[0] == 0
        sessions = c.execute("SELECT count(DISTINCT session_id) FROM events").fetchone()[0]
        assert c.execute("SELECT count(*) FROM projection_dirty").fetchone()[0] == sessions > 1
    finally:
        st.close()


def test_write_only_stores_what_the_import_stores(tmp_path):
    """The write-only side reads every prepared batch back (one message each, as a preparer
    sends it) and ends with the rows, in the order, and the projections a full import gives
    (hashes differ: each append stamps its own ingest time)."""
    from attemptdb.devtools import synth
    from attemptdb.exchange.importers.jsonl import import_file
    from attemptdb.store.database import Store
    src, prepared = str(tmp_path / "e.jsonl"), str(tmp_path / "p.marshal")
    synth.write_jsonl(src, 500, 3)
    bench._prepare_only(str(tmp_path), src, 120, prepared)
    assert bench._write_only(str(tmp_path / "w.db"), prepared, 5) > 0
    full = Store.open(str(tmp_path / "f.db"))
    import_file(full, src, batch=120)
    full.close()
    counts = "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM tool_call_facts), " \
             "(SELECT count(*) FROM attempt_facts), (SELECT group_concat(event_id, '') FROM (SELECT event_id FROM events ORDER BY seq))"
    got = []
    for name in ("w.db", "f.db"):
        st = Store.open(str(tmp_path / name), readonly=True)
        try:
            got.append(st.conn.execute(counts).fetchone())
        finally:
            st.close()
    assert got[0] == got[1] and got[0][0] == 500 and got[0][1] > 0


def test_verify_reports_a_same_run_floor():
    r = bench.verify_rate(200, repeat=1)
    assert r["events"] == 200 and r["line_bytes"] > 200 * 100
    assert r["floor_seconds"] >= 0 and r["floor_events_per_s"] > 0 and 0 <= r["floor_ratio"]
    assert r["cores"] == cores.available()
    assert r["integrity_seconds"] >= 0 and r["chain_seconds"] >= 0 and r["chain_floor_ratio"] >= 0
    assert r["read_hash_seconds"] > 0 and r["ceiling_ratio"] > 0


@pytest.mark.skipif(not hasattr(os, "posix_spawn"), reason="the capture daemon needs posix_spawn")
def test_capture_runs_the_installed_hook_command_and_the_attempt_executable(monkeypatch):
    monkeypatch.delenv("ATTEMPTDB_NO_DAEMON", raising=False)
    r = bench.capture(runs=4)
    assert r["events_stored"] == 1 + 3 * 4  # the first hook, then daemon, direct and attempt runs
    assert " -I -S " in r["command"] and r["command"].endswith("__main__.py capture claude-code")
    assert r["ratio_p50"] > 0 and r["direct_ratio_p50"] > 0 and r["attempt_exe_ratio_p50"] > 0
