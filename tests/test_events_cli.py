"""`attempt events`: the facts, oldest first, with the scope flags every read command shares."""

import json

from conftest import run_attempt


def _demo(tmp_path):
    db = str(tmp_path / "demo.db")
    r = run_attempt(["demo", "--db", db, "--json"])
    assert r.returncode == 0, r.stderr
    return db


def _rows(db, *flags):
    r = run_attempt(["events", "--db", db, "--json", *flags])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_scope_flags_filter_the_facts(tmp_path, home):
    db = _demo(tmp_path)
    every = _rows(db)
    assert len(every) == 31
    assert [e["observed_at"] for e in every] == sorted(e["observed_at"] for e in every)
    codex = next(e for e in every if e["provider"] == "codex")
    short = codex["session_id"][:12]  # ses_ + 8 hex digits
    mine = _rows(db, "--session", short)
    assert mine and {e["session_id"] for e in mine} == {codex["session_id"]}
    assert len(_rows(db, "--project", "acme/shop")) == 31
    assert len(_rows(db, "--project", "shop")) == 31  # the repository part of owner/repo
    last3 = _rows(db, "-n", "3")
    assert [e["event_id"] for e in last3] == [e["event_id"] for e in every[-3:]]
    middle = every[10]["observed_at"]
    assert all(e["observed_at"] >= middle for e in _rows(db, "--since", middle))
    assert all(e["observed_at"] <= middle for e in _rows(db, "--until", middle))
    kinds = _rows(db, "--kind", "tool_call_failed,permission_requested")
    assert sorted(e["kind"] for e in kinds) == ["permission_requested", "tool_call_failed", "tool_call_failed"]
    assert "path_objects_json" not in every[0] and "event_hash" not in every[0]


def test_unresolvable_scope_is_a_coded_error(tmp_path, home):
    db = _demo(tmp_path)
    for flags in (["--session", "ses_ffffffff"], ["--project", "nobody/nothing"]):
        r = run_attempt(["events", "--db", db, *flags])
        assert r.returncode == 2 and r.stderr.decode().startswith("error[scope.unresolved]"), r.stderr
    r = run_attempt(["events", "--db", db, "--kind", "tool_call_failed,tool_call_fail"])
    assert r.returncode == 2 and r.stderr.decode().startswith("error[usage.bad_value]"), r.stderr
    assert "did you mean tool_call_failed?" in r.stderr.decode() and r.stdout == b""


def test_table_output_is_one_line_per_event(tmp_path, home):
    db = _demo(tmp_path)
    r = run_attempt(["events", "--db", db, "--kind", "tool_call_failed"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    head, rule, *lines = r.stdout.decode().splitlines()
    assert head.split() == ["time", "session", "agent", "kind", "tool", "outcome", "path"] and set(rule) == {"-", " "}
    assert len(lines) == 2 and all("tool_call_failed" in ln and "claude_code" in ln for ln in lines)
    assert any("failure/string_mismatch" in ln for ln in lines)
    # at 80 columns (the width when none is known) each event is still one line: what cannot fit
    # is left out and named, the time, session, kind and outcome are kept whole
    r = run_attempt(["events", "--db", db, "--kind", "tool_call_failed"], env={"NO_COLOR": "1", "COLUMNS": "80"})
    head, rule, *narrow = r.stdout.decode().splitlines()
    note = narrow.pop()
    assert head.split() == ["time", "session", "kind", "outcome"] and note.startswith("(not shown at 80 columns:")
    assert len(narrow) == 2 and all(len(ln) <= 80 for ln in narrow)
    assert [ln.split()[-1] for ln in narrow] == ["failure/nonzero_exit", "failure/string_mismatch"]


def test_terminal_escapes_in_payloads_never_reach_the_terminal(tmp_path, home):
    db = str(tmp_path / "e.db")
    payload = json.dumps({"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Read",
                          "tool_use_id": "t1", "tool_input": {"file_path": "/tmp/\x1b]0;owned\x07\x1b[31mx.ts"},
                          "tool_response": {}}).encode()
    assert run_attempt(["capture", "claude-code", "--db", db], input=payload).returncode == 0
    r = run_attempt(["events", "--db", db])
    assert r.returncode == 0 and b"\x1b" not in r.stdout and b"\x07" not in r.stdout


def test_a_reader_that_goes_away_is_not_a_failure(tmp_path, home):
    """`attempt events --jsonl | head`: the broken pipe ends the command quietly with 0 (click
    alone exits 1, which this CLI reserves for 'a problem was found')."""
    import os
    import subprocess

    from conftest import ROOT, attempt_cmd

    from attemptdb.devtools import synth
    from attemptdb.store.database import Store
    db = str(tmp_path / "a.db")
    st = Store.open(db)
    st.append(list(synth.generate(600, seed=3)))  # ~1.6 MB of lines: far more than a pipe holds
    st.close()
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ROOT))
    for flags in (["--jsonl"], ["--json"], []):
        p = subprocess.Popen(attempt_cmd() + ["events", "--db", db] + flags, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert len(p.stdout.read(100)) == 100
        p.stdout.close()
        assert p.wait(timeout=60) == 0, flags
        assert p.stderr.read() == b"", flags
        p.stderr.close()


def test_json_rows_carry_the_payload_whole(tmp_path, home):
    """`attempt events --json` prints raw_json as the provider sent it (the row stores its
    shared texts once: model/payload.py); `--jsonl` lines carry the same payload."""
    import json

    import apsw

    from attemptdb.model import payload
    db = _demo(tmp_path)
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    stored = conn.execute("SELECT count(*) FROM events WHERE instr(raw_json, char(1)) > 0").fetchone()[0]
    conn.close()
    assert stored > 0  # the file holds references
    rows = _rows(db)
    with_raw = [r for r in rows if r["raw_json"]]
    assert with_raw and not any(payload.START in r["raw_json"] for r in with_raw)
    lines = run_attempt(["events", "--db", db, "--jsonl"]).stdout.decode().splitlines()
    raws = {"ev_" + e["event_id"]: e["raw"] for e in map(json.loads, lines) if "raw" in e}
    assert {r["event_id"]: json.loads(r["raw_json"]) for r in with_raw} == raws


def test_what_people_recorded_shows_its_name_and_an_approval_its_verdict(tmp_path, home):
    """An approval, a note and a snapshot are `notification` / `unknown` events: the table names
    them (ai.approval, session.note_added, git.snapshot) and shows an approval's verdict."""
    db = str(tmp_path / "hand.db")
    for args in (["reject", "migration 0042", "--note", "drops a column"], ["approve", "the parser fix"],
                 ["note", "remember the flag"]):
        assert run_attempt(args + ["--db", db]).returncode == 0
    p = run_attempt(["events", "--db", db], env={"COLUMNS": "120"})
    assert p.returncode == 0, p.stderr.decode()
    lines = p.stdout.decode().splitlines()
    approvals = [ln.split() for ln in lines if "ai.approval" in ln]
    assert [w[-1] for w in approvals] == ["rejected", "approved"]
    assert any("notification" in ln and "session.note_added" in ln for ln in lines)
    assert "drops a column" not in p.stdout.decode()  # content stays out of the table


def test_the_table_prints_local_time_and_today_is_the_local_day(tmp_path, home):
    """`events` printed UTC without saying so while timeline, failures and needs-you print local
    time; and `today` began at UTC midnight, so just after local midnight east of UTC it meant
    the local yesterday."""
    import time

    from attemptdb.model import clock
    from attemptdb.query import resolve
    db = str(tmp_path / "tz.db")
    assert run_attempt(["note", "x", "--db", db]).returncode == 0
    got = json.loads(run_attempt(["events", "--db", db, "--json"]).stdout)[0]["observed_at"]
    p = run_attempt(["events", "--db", db], env={"TZ": "Asia/Tokyo", "COLUMNS": "120"})
    tokyo = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(clock.from_iso(got) // 1_000_000 + 9 * 3600))
    assert p.stdout.decode().splitlines()[2].startswith(tokyo)
    # 2026-12-08 00:30 in Tokyo is 2026-12-07 15:30 UTC: today began at 15:00 UTC, not 00:00
    now = clock.from_iso("2026-12-07T15:30:00.000000Z")
    import os
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    try:
        assert clock.iso(resolve.resolve_time("text", "today", now)) == "2026-12-07T15:00:00.000000Z"
        assert clock.iso(resolve.resolve_time("text", "yesterday", now)) == "2026-12-06T15:00:00.000000Z"
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()
