"""A file given to the wrong importer is refused whole (spec/transcripts.md, "Which files"):
`attempt import codex` on a Claude Code transcript, `claude-transcripts` on a Codex rollout,
either on canonical Event v1 lines, `jsonl` on either. Through the real CLI; nothing is written
on a refusal; a directory's files of another format are reported, not imported."""

import json
import os
import shutil

import pytest
from conftest import run_attempt

from attemptdb.store.database import Store


def transcripts(anchor, *parts):
    return os.path.join(anchor, "fixtures", "transcripts", *parts)


@pytest.fixture
def seeded(tmp_path, home, anchor):
    """A database holding one imported rollout (so "nothing written" is not "still empty")."""
    db = str(tmp_path / "seeded.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    r = run_attempt(["import", "codex", transcripts(anchor, "codex", "modern_turn.jsonl"), "--db", db, "--finished"])
    assert r.returncode == 0, r.stderr
    return db


def facts(db):
    """(events, sessions, chain head) of a database."""
    st = Store.open(db, readonly=True)
    try:
        n = st.conn.execute("SELECT count(*) FROM events").fetchone()[0]
        s = st.conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        head = st.conn.execute("SELECT chain_hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return n, s, head
    finally:
        st.close()


def refused(db, args):
    before = facts(db)
    r = run_attempt(["import", *args, "--db", db])
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "Traceback" not in err
    assert facts(db) == before  # nothing written
    return err


def test_codex_refuses_a_claude_transcript(seeded, anchor):
    f = transcripts(anchor, "claude_code", "basic_turn.jsonl")
    err = refused(seeded, ["codex", f])
    assert err.startswith("error[import.wrong_format]: ")
    assert f"{f} is not a Codex rollout" in err
    assert "this looks like a Claude Code transcript: `attempt import claude-transcripts`" in err
    err = refused(seeded, ["codex", f, "--dry-run"])
    assert "error[import.wrong_format]" in err


def test_claude_refuses_a_codex_rollout(seeded, anchor):
    for name in ("classic_turn.jsonl", "modern_turn.jsonl", "subagent_thread.jsonl"):
        f = transcripts(anchor, "codex", name)
        err = refused(seeded, ["claude-transcripts", f])
        assert err.startswith("error[import.wrong_format]: ")
        assert f"{f} is not a Claude Code transcript; this looks like a Codex rollout: `attempt import codex`" in err


def test_a_named_file_of_another_format_refuses_the_whole_import(seeded, anchor, tmp_path):
    """The right file named beside a wrong one is not imported either: nothing is written."""
    good = transcripts(anchor, "claude_code", "basic_turn.jsonl")
    wrong = transcripts(anchor, "codex", "classic_turn.jsonl")
    err = refused(seeded, ["claude-transcripts", good, wrong])
    assert f"{wrong} is not a Claude Code transcript" in err and good not in err


def test_transcript_importers_refuse_canonical_event_lines(seeded, tmp_path):
    out = run_attempt(["events", "--jsonl", "--db", seeded])
    assert out.returncode == 0 and out.stdout
    f = tmp_path / "events.jsonl"
    f.write_bytes(out.stdout)
    for importer in ("claude-transcripts", "codex"):
        err = refused(seeded, [importer, str(f)])
        assert "error[import.wrong_format]" in err
        assert "this looks like canonical Event v1 lines: `attempt import jsonl`" in err


def test_unrecognised_lines_are_refused_without_a_guess(seeded, tmp_path):
    f = tmp_path / "notes.jsonl"
    f.write_text('{"a": 1}\n[1, 2]\nnot json\n{"type": "note", "payload": {}}\n')
    for importer, what in (("claude-transcripts", "a Claude Code transcript"), ("codex", "a Codex rollout")):
        err = refused(seeded, [importer, str(f)])
        assert f"error[import.wrong_format]: {f} is not {what}: none of its 4 lines is one of its entries" in err
        assert "looks like" not in err


def test_jsonl_refuses_transcripts_and_says_what_they_are(seeded, anchor):
    for sub, name, command in (("claude_code", "basic_turn.jsonl", "claude-transcripts"),
                               ("claude_code", "queued_and_usage.jsonl", "claude-transcripts"),
                               ("codex", "classic_turn.jsonl", "codex"), ("codex", "modern_turn.jsonl", "codex")):
        err = refused(seeded, ["jsonl", transcripts(anchor, sub, name)])
        assert err.startswith("error[import.bad_line]: line 1: ")
        assert f": `attempt import {command}`" in err


def test_a_directory_mixing_formats_imports_its_own_and_reports_the_rest(anchor, tmp_path, home):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(transcripts(anchor, "codex", "classic_turn.jsonl"), mixed / "a-rollout.jsonl")
    shutil.copy(transcripts(anchor, "claude_code", "basic_turn.jsonl"), mixed / "b-claude.jsonl")
    (mixed / "c-junk.jsonl").write_bytes(b"\x00\xff binary\n")
    (mixed / "d-empty.jsonl").write_bytes(b"")  # nobody's format; nothing to import either
    alone, db = str(tmp_path / "alone.db"), str(tmp_path / "mixed.db")
    r = run_attempt(["import", "codex", transcripts(anchor, "codex", "classic_turn.jsonl"), "--db", alone, "--json", "--finished"])
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)

    r = run_attempt(["import", "codex", str(mixed), "--db", db, "--json", "--finished"])
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["files"] == 2 and rep["accepted"] == want["accepted"] and rep["sessions"] == 1
    assert rep["wrong_format"] == [{"file": str(mixed / "b-claude.jsonl"), "looks_like": "claude_code"},
                                   {"file": str(mixed / "c-junk.jsonl"), "looks_like": None}]
    assert facts(db)[:2] == facts(alone)[:2]
    st = Store.open(db, readonly=True)
    providers = {r[0] for r in st.conn.execute("SELECT DISTINCT provider FROM events")}
    st.close()
    assert providers == {"codex"}

    r = run_attempt(["import", "claude-transcripts", str(mixed), "--db", db, "--finished"])
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert "from 2 transcripts" in out
    assert (f"; 2 files skipped, not transcripts: {mixed / 'a-rollout.jsonl'} (a Codex rollout), "
            f"{mixed / 'c-junk.jsonl'}") in out
    st = Store.open(db, readonly=True)
    claude = st.conn.execute("SELECT count(*), count(DISTINCT provider_session_id) FROM events "
                             "WHERE provider = 'claude_code'").fetchone()
    unknown = st.conn.execute("SELECT count(*) FROM events WHERE provider_session_id = 'unknown'").fetchone()[0]
    st.close()
    assert claude[0] > 0 and claude[1] == 1 and unknown == 0


def test_a_directory_of_another_format_only_is_refused(seeded, anchor, tmp_path):
    d = tmp_path / "rollouts"
    d.mkdir()
    shutil.copy(transcripts(anchor, "codex", "classic_turn.jsonl"), d / "one.jsonl")
    err = refused(seeded, ["claude-transcripts", str(d)])
    assert (f"error[import.wrong_format]: the only file found, {d / 'one.jsonl'}, is not a Claude Code "
            "transcript; this looks like a Codex rollout: `attempt import codex`") in err
    shutil.copy(transcripts(anchor, "codex", "modern_turn.jsonl"), d / "two.jsonl")
    err = refused(seeded, ["claude-transcripts", str(d)])
    assert ("error[import.wrong_format]: none of the 2 files found is a Claude Code transcript: "
            f"{d / 'one.jsonl'} (a Codex rollout), {d / 'two.jsonl'} (a Codex rollout); "
            "they look like Codex rollouts: `attempt import codex`") in err
    err = refused(seeded, ["codex", transcripts(anchor, "claude_code")])
    assert "none of the 6 files found is a Codex rollout" in err
    assert "they look like Claude Code transcripts: `attempt import claude-transcripts`" in err


def test_nothing_found_says_where_it_looked(seeded, tmp_path):
    d = tmp_path / "emptydir.jsonl"
    d.mkdir()
    err = refused(seeded, ["claude-transcripts", str(d)])
    assert f"error[import.nothing]: no Claude Code transcripts found (looked for *.jsonl files in {d})" in err
    assert "~/.claude" not in err
    err = refused(seeded, ["codex", str(d)])
    assert f"error[import.nothing]: no Codex rollouts found (looked for *.jsonl files in {d})" in err
    assert "CODEX_HOME" not in err
