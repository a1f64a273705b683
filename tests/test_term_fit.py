"""Terminal output that fits, found by a new user's walkthrough: `needs-you` keeps its reasons
whole; wide characters (CJK, emoji) are measured in display columns; control characters show
as `?` in every table; `events` has a header and keeps the outcome; empty columns leave first
and vocabulary values are not cut; counts agree with their nouns; one rule line; `attempt
run` sessions show their command and title, corrected attempts are marked."""

import json
import os
import sys
import unicodedata

import pytest
import scenario_db
from conftest import run_attempt

from attemptdb import adapters
from attemptdb.model import clock, ids
from attemptdb.query.result import Result
from attemptdb.render import results, termtable
from attemptdb.store.database import Store


def attempt(args, db, width="80", ok=(0,), **env):
    p = run_attempt(list(args) + ["--db", db], env=dict({"COLUMNS": width, "NO_COLOR": "1", "TZ": "UTC",
                                                        "ATTEMPTDB_NO_DAEMON": "1"}, **env))
    assert p.returncode in ok and b"Traceback" not in p.stderr, p.stderr.decode()
    return p.stdout.decode()


def display(line: str) -> int:
    """Display columns, as a terminal counts them (independent of termtable.cols)."""
    n = 0
    for c in line:
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        n += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return n


def assert_fits(out: str, width: int):
    long = [line for line in out.splitlines() if display(line) > width]
    assert not long, f"{len(long)} line(s) wider than {width} columns: {long[:3]}"


@pytest.fixture(scope="module")
def needs(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fit") / "needs.db")
    scenario_db.build(path, "units_needs_you", "retry_supersession")
    return path


# --- 1. needs-you: the reason is the point ----------------------------------------------------

@pytest.mark.parametrize("width", [80, 60, 40, 120])
def test_needs_you_keeps_every_reason_whole(needs, width):
    data = json.loads(attempt(["needs-you", "--json"], needs))["needs_you"]
    assert data
    out = attempt(["needs-you"], needs, width=str(width))
    assert_fits(out, width)
    flat = " ".join(out.split())
    for r in data:
        if r["kind"] != "work_conflict":  # a conflict's reason names units: their short ids
            assert " ".join(r["reason"].split()) in flat, (r["reason"], out)
    assert "…" not in out.split("(not shown")[0]
    head = next(ln for ln in out.splitlines() if ln.startswith(("# ", "kind ")))
    assert head.split()[-1] == "reason" or (width < 50 and "reason" not in head)


@pytest.mark.parametrize("width", [80, 60])
def test_needs_you_evidence_fits_and_lists_every_id_whole(needs, width):
    """--evidence printed its table unfitted (lines of 250-320 columns): now the table fits and
    each row's evidence ids follow it, whole, wrapped to the width."""
    data = json.loads(attempt(["needs-you", "--json"], needs))["needs_you"]
    out = attempt(["needs-you", "--evidence"], needs, width=str(width))
    assert_fits(out, width)
    words = set(out.replace(",", " ").split())
    for r in data:
        assert r["evidence"] and set(r["evidence"]) <= words, r


def test_needs_you_at_80_columns_shows_since_short_and_the_reason_beside(needs):
    out = attempt(["needs-you"], needs)
    head = out.splitlines()[1].split()
    assert head[-1] == "reason" and "since" in head  # the time is short (HH:MM), not dropped first
    rule = out.splitlines()[2]
    assert set(rule) == {"-", " "}
    import re
    first = out.splitlines()[3].split()
    assert first[0] == "permission" and re.fullmatch(r"\d\d:\d\d", first[1]), out


# --- 2. wide characters -----------------------------------------------------------------------

def test_display_width_of_wide_combining_and_zero_width_characters():
    assert termtable.cols("abc") == 3
    assert termtable.cols("漢字テスト") == 10 and termtable.cols("🎉x") == 3
    assert termtable.cols("e\u0301") == 1  # e + combining acute
    assert termtable.cut("漢字テスト", 5) == "漢字" and termtable.cut("漢字", 1) == ""
    assert termtable.clip("漢字テスト", 6) == "漢字…" and termtable.cols(termtable.clip("漢字テスト", 6)) == 5
    assert termtable.cut("ae\u0301b", 2) == "ae\u0301"  # the mark stays with its letter
    for w in range(1, 12):
        c = termtable.clip("修复登录页面的错误🎉", w)
        assert termtable.cols(c) <= w and "\ufffd" not in c
    assert termtable.pad("漢", 4) == "漢  "
    assert termtable.lines_of("修复 登录页面的错误", 6) == ["修复", "登录页", "面的错", "误"]


def test_fit_measures_display_width():
    rows = [["att_0123abcd", "修复登录页面的错误并且添加测试用例以及更新文档说明和变更日志"], ["att_0123abce", "short"]]
    for width in (30, 40, 60, 80):
        lines, _ = termtable.fit(["attempt", "approach"], rows, width)
        assert all(display(x) <= width for x in lines), (width, lines)
        assert display(lines[0]) <= display(lines[1])


def _claude(name, at_us, sid="wide", **kw):
    dev = ids.derive("dev_", "fit-tests")
    proj = ids.project_identity("/work/wide", "github.com/acme/wide", dev)
    ctx = adapters.Context(dev, "local_semantic", proj, at_us, hook_version="t")
    return adapters.build_event("claude_code", dict(hook_event_name=name, session_id=sid, cwd="/work/wide", **kw),
                                None, ctx)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("wide") / "wide.db")
    t0 = clock.from_iso("2026-08-28T09:00:00.000000Z")
    prompts = ["修复登录页面的错误，并且为每一个表单字段添加完整的输入校验和单元测试用例，最后更新文档",
               "ログイン画面のバグを直して、すべてのフォーム項目に入力チェックとテストを追加してください",
               "🎉🚀✨ ship the release notes 🎉🚀✨ and celebrate 🎉🚀✨ with everyone on the team today"]
    evs = []
    for i, p in enumerate(prompts):
        evs.append(_claude("UserPromptSubmit", t0 + i * 60_000_000, prompt=p))
        evs.append(_claude("Stop", t0 + i * 60_000_000 + 5_000_000))
    st = Store.open(db)
    st.append(evs)
    st.close()
    return db


@pytest.mark.parametrize("width", [80, 60])
def test_wide_prompts_fit_the_timeline_and_query_tables(wide, width):
    for args in (["timeline"], ["query", "SELECT objective FROM turns"], ["query", "SHOW TURNS"],
                 ["timeline", "--units"]):
        out = attempt(args, wide, width=str(width))
        assert_fits(out, width)
    out = attempt(["query", "SELECT objective FROM turns"], wide, width=str(width))
    assert "修复" in out and "ログイン" in out and "🎉" in out


# --- 3. one rule for control characters -------------------------------------------------------

def test_query_cells_show_controls_as_the_timeline_does():
    from attemptdb.query.read import clean
    r = Result(columns=["v\x1bw"], rows=[["a\x1b[2Jb\x07c\x9bd"]])
    out = results.table(r)
    assert "a?[2Jb?c?d" in out and "v?w" in out
    assert clean("a\x1b[2Jb\x07c\x9bd") == "a?[2Jb?c?d"
    assert results.cell("x", "\ue000 \u00a0z") == "?  z"  # unprintable: `?`, an odd space a space


# --- 4 and 5. events keeps its outcome; empty columns first, vocabulary values whole ----------

def test_empty_columns_leave_first_and_vocabulary_values_are_not_cut():
    rows = [["att_0123abcd", "file_not_found", "edit the parser so that it reads the whole file at once", ""],
            ["att_0123abce", "nonzero_exit", "run the tests", ""]]
    lines, hidden = termtable.fit(["attempt", "class", "approach", "superseded_by"], rows, 44)
    assert hidden == ["superseded_by"]
    assert "file_not_found" in lines[2] and "nonzero_exit" in lines[3] and "…" in lines[2]
    # too narrow for the class whole: the column leaves (named) rather than show a cut value
    lines, hidden = termtable.fit(["attempt", "class", "approach", "superseded_by"], rows, 24)
    assert "class" in hidden and not any("file_not" in x for x in lines)


def test_show_failed_attempts_keeps_failure_classes_whole(tmp_path):
    db = str(tmp_path / "f.db")
    scenario_db.build(db, "retry_supersession", "units_needs_you", "agents_and_supersession")
    out = attempt(["query", "SHOW FAILED ATTEMPTS"], db)
    data = json.loads(attempt(["query", "SHOW FAILED ATTEMPTS", "--json"], db))
    classes = {r["failure_class"] for r in data if r["failure_class"]}
    assert classes and all(c in out for c in classes), out
    out = attempt(["failures", "-n", "2"], db)
    assert "superseded_…" not in out and "…" not in "".join(ln.split()[3] for ln in out.splitlines()[2:4])


# --- 6. plurals --------------------------------------------------------------------------------

def test_plural_groups_thousands_on_request():
    assert termtable.plural(1, "row", grouped=True) == "1 row"
    assert termtable.plural(12345, "row", grouped=True) == "12,345 rows"
    assert termtable.plural(12345, "row") == "12345 rows"


def test_verify_counts_one_checkpoint_and_show_limit_one_row(tmp_path):
    from attemptdb.integrity.verify import Report
    rep = Report()
    rep.events, rep.checkpoints = 1, 1
    assert rep.line() == "ok: 1 event, 1 checkpoint"  # singular, as every other count
    rep.events, rep.checkpoints = 0, 0
    assert rep.line() == "ok: 0 events, 0 checkpoints"
    rep.events, rep.checkpoints = 150, 2
    assert rep.line() == "ok: 150 events, 2 checkpoints"
    db = str(tmp_path / "d.db")
    assert run_attempt(["demo", "--db", db, "--json"]).returncode == 0
    out = attempt(["query", "SHOW SESSIONS LIMIT 1"], db)
    assert "showing the first 1 row (LIMIT 1)" in out
    import re
    for f in json.loads(attempt(["failures", "--json"], db))["failures"]:
        out = attempt(["retract", "--attempt", f["attempt_id"], "--reason", "test", "--dry-run"], db)
        n, noun = re.search(r", (\d+) (tool calls?)\n", out).groups()
        assert noun == ("tool call" if n == "1" else "tool calls"), out
    sid = json.loads(attempt(["query", "SHOW SESSIONS", "--json"], db))[0]["session_id"]
    out = attempt(["retract", "--session", sid, "--reason", "test", "--dry-run"], db)
    assert not re.search(r"\b1 (events|turns|attempts)\b", out), out


# --- 7. one rule line ---------------------------------------------------------------------------

def test_every_table_draws_the_same_rule(needs):
    for args in (["query", "SHOW SESSIONS"], ["failures"], ["needs-you"], ["events", "-n", "3"]):
        out = attempt(args, needs)
        assert "─" not in out
        assert any(set(ln) == {"-", " "} or set(ln) == {"-"} for ln in out.splitlines()), (args, out)


# --- 8. attempt run in the timeline; corrections marked ----------------------------------------

def test_timeline_shows_a_runs_command_and_title_and_marks_corrections(tmp_path):
    db = str(tmp_path / "run.db")
    e = {"ATTEMPTDB_NO_DAEMON": "1"}
    assert run_attempt(["init", "--db", db], env=e).returncode == 0
    p = run_attempt(["run", "--db", db, "--title", "build the 修复 thing", "--", sys.executable, "-c",
                     "import sys; sys.exit(3)"], env=e, cwd=str(tmp_path))
    assert p.returncode == 3, p.stderr
    out = attempt(["timeline"], db)
    assert "title: build the 修复 thing" in out
    turn = next(ln for ln in out.splitlines() if " turn 1 " in ln)  # a run is a turn of its own
    assert "$ " + os.path.basename(sys.executable)[:4] in turn or "$ /" in turn, out
    assert "activity before the first prompt" not in out
    att = json.loads(attempt(["failures", "--json"], db))["failures"][0]["attempt_id"]
    assert "(corrected" not in out
    attempt(["correct", att, "--outcome", "succeeded"], db)
    out = attempt(["timeline"], db)
    assert "✓ succeeded (corrected from failed)" in out
    assert "(corrected from failed)" in attempt(["timeline", "--units"], db)


def test_timeline_shows_no_command_text_under_metadata_only(tmp_path):
    db = str(tmp_path / "meta.db")
    e = {"ATTEMPTDB_NO_DAEMON": "1"}
    assert run_attempt(["init", "--db", db, "--capture-mode", "metadata_only"], env=e).returncode == 0
    p = run_attempt(["run", "--db", db, "--title", "secret title", "--", sys.executable, "-c", "pass"],
                    env=e, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    out = attempt(["timeline"], db)
    assert "secret title" not in out and "$ " not in out and "-c pass" not in out
    assert "turn 1  completed  (a command, its text not captured)" in out


def test_needs_you_since_is_short_for_the_last_24_hours_across_midnight():
    """A wait begun before midnight printed `12-07 23:14` after it: the wider time made the
    80-column table drop the column (the test above failed between 00:00 and 01:00)."""
    from attemptdb.cli import reads
    from attemptdb.model import clock
    now = clock.now_us()
    assert len(reads.since_text(clock.iso(now - 3600 * 10**6))) == 5  # an hour ago, whatever the day
    assert len(reads.since_text(clock.iso(now - 2 * reads.DAY_US))) == 11  # two days ago: with its date
    assert reads.since_text(None) == "-" and reads.since_text("not a time") == "not a time"
