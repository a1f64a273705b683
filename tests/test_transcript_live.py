"""A transcript imported while it is still being written (spec/transcripts.md "A file still being
written"). What only the end of a file decides (the open API message's usage, a turn ended at
the end of the file, where it ends and its duration, a subagent's stop) can change as the file
grows, and a stored event never changes: of a file written to in the last LIVE_S seconds those
events are held back, counted, and taken by the next import. Importing a growing transcript at
any line therefore stores exactly what one import of the finished file stores."""

import io
import json
import os
import time

from test_transcript_import import fixture, harness_ctx_for

from attemptdb.cli.main import run
from attemptdb.exchange.importers import base
from attemptdb.exchange.importers import claude_transcript as ct
from attemptdb.model import event
from attemptdb.store.database import Store

NAMES = ("basic_turn", "queued_and_usage", "interrupted_turn", "mixed_edge_cases", "compaction_summary",
         "subagent_sidechain")


def _lines(anchor, name) -> list:
    with open(fixture(anchor, name + ".jsonl"), "rb") as f:
        return f.readlines()


def _events(data: bytes, live: bool) -> dict:
    rep = base.Report(live)
    got = {e["event_id"]: event.line(e) for e in ct.events(io.BytesIO(data), harness_ctx_for(), report=rep)}
    return got, rep


def test_every_prefix_of_a_live_transcript_is_part_of_the_finished_one(anchor):
    for name in NAMES:
        lines = _lines(anchor, name)
        full, _ = _events(b"".join(lines), live=False)
        held = 0
        for cut in range(1, len(lines) + 1):
            part, rep = _events(b"".join(lines[:cut]), live=True)
            changed = {k for k, v in part.items() if full.get(k) != v}
            assert not changed, (name, cut, sorted(json.loads(part[k])["kind"] for k in changed))
            held += rep.held_back
        assert held, f"{name}: some prefix ends in what only its end decides"


def test_a_finished_file_read_as_live_holds_back_only_what_its_end_decides(anchor):
    for name in NAMES:
        data = b"".join(_lines(anchor, name))
        full, rep = _events(data, live=False)
        live, held = _events(data, live=True)
        assert rep.held_back == 0 and held.held_back > 0, name  # each fixture ends mid-message or at a turn's end
        assert {k: full[k] for k in live} == live and len(full) - len(live) == held.held_back, name


def _stored(db: str) -> dict:
    st = Store.open(db, readonly=True)
    try:
        # every fact of an event but the times of its capture (each import is captured anew)
        return {r[0]: r[1:] for r in st.conn.execute(
            "SELECT event_id, kind, observed_at, duration_ms, provider_turn_id, attrs_json, content_json, "
            "outcome_status FROM events")}
    finally:
        st.close()


def _import(path, db, capsys) -> dict:
    capsys.readouterr()
    assert run(["import", "claude-transcripts", str(path), "--db", db, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_importing_while_a_session_writes_stores_what_one_import_of_the_finished_file_stores(
        anchor, tmp_path, capsys):
    """basic_turn cut after its first end_turn entry: read whole, that end of the file ends the
    turn there, but the next line is more of the same message, so the finished file ends the turn
    one entry later, with the duration a `turn_duration` line adds."""
    lines = _lines(anchor, "basic_turn")
    path = tmp_path / "live" / "session.jsonl"
    path.parent.mkdir()
    db = str(tmp_path / "growing.db")
    for cut in (13, 14, 15, len(lines)):
        path.write_bytes(b"".join(lines[:cut]))  # written just now: live
        rep = _import(path, db, capsys)
        assert rep["held_back"] > 0 and rep["held_back_files"] == 1, (cut, rep)
    quiet = time.time() - base.LIVE_S - 60
    os.utime(path, (quiet, quiet))
    rep = _import(path, db, capsys)
    assert rep["held_back"] == 0 and rep["accepted"] > 0

    once = str(tmp_path / "once.db")
    _import(path, once, capsys)
    assert _stored(db) == _stored(once)  # nothing frozen early, no turn ended twice
    assert run(["verify", "--db", db]) == 0


def test_the_text_report_says_what_was_held_back_and_that_the_next_import_takes_it(anchor, tmp_path, capsys):
    lines = _lines(anchor, "queued_and_usage")
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:3]))  # the first API message still streaming
    db = str(tmp_path / "a.db")
    capsys.readouterr()
    assert run(["import", "claude-transcripts", str(path), "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"held back from 1 transcript written to in the last {base.LIVE_S // 60} min" in out, out
    assert "the next import takes them" in out
