"""`attempt correct` / `attempt retract`: the events they write, what the projections do with
them, --dry-run, and every refusal as a coded error."""

import json

import pytest
from click.testing import CliRunner

from attemptdb.cli.main import cli
from attemptdb.model import fastjson
from attemptdb.projections import meta, scenario
from attemptdb.query.read import rows
from attemptdb.store.database import Store


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A database holding the retry_supersession scenario: {att:e1f} superseded by {att:e2s}."""
    monkeypatch.setenv("TZ", "UTC")
    path = str(tmp_path / "c.db")
    b = scenario.build(scenario.load("retry_supersession"))
    st = Store.open(path)
    st.append(scenario.arrival(b))
    st.close()
    return path, b


class Ran:
    def __init__(self, exit_code, output):
        self.exit_code, self.output = exit_code, output


def run(*args):
    """Invoke like the `attempt` entry point does: a coded error becomes its one-line message
    and exit status (attemptdb.cli.main.run), never a traceback."""
    from attemptdb.errors import AttemptError
    res = CliRunner().invoke(cli, list(args))
    if isinstance(res.exception, AttemptError):
        return Ran(res.exception.exit_status, res.output + str(res.exception) + "\n")
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return Ran(res.exit_code, res.output)


def one(path, sql, params=()):
    st = Store.open(path)
    try:
        return rows(st.conn, sql, params)
    finally:
        st.close()


def count_events(path):
    return one(path, "SELECT count(*) AS n FROM events")[0]["n"]


def test_correct_dry_run_shows_changes_and_writes_nothing(demo):
    path, b = demo
    att = b.ref("att", "e2s")
    before = count_events(path)
    res = run("correct", att[:12], "--outcome", "failed", "--failure-class", "perf_regression", "--dry-run", "--db", path)
    assert res.exit_code == 0, res.output
    assert res.output.startswith("would write correction ev_")
    rows = [ln.split() for ln in res.output.splitlines()]  # a table fitted to 80 columns: the id whole or short
    assert any(r[1:] == ["outcome", "succeeded", "failed"] and att.startswith(r[0]) for r in rows if r), res.output
    assert "(dry run — nothing was written)" in res.output
    assert count_events(path) == before
    assert one(path, "SELECT outcome FROM attempts WHERE attempt_id = ?", (att,))[0]["outcome"] == "succeeded"


def test_correct_writes_a_correction_event_and_latest_wins(demo):
    path, b = demo
    att = b.ref("att", "e2s")
    res = run("correct", att, "--outcome", "failed", "--failure-class", "perf_regression", "--note", "slower", "--json",
              "--db", path)
    assert res.exit_code == 0, res.output
    first = json.loads(res.output)
    assert first["status"] == "applied" and first["written"] and first["note_stored"]
    ev = one(path, "SELECT * FROM events WHERE event_id = ?", (first["event_id"],))[0]
    assert (ev["provider"], ev["kind"], ev["provider_event_name"]) == ("attemptdb", "correction", "Correction")
    assert ev["session_id"] == b.ref("ses", "claude_code:s1") and ev["provider_session_id"] == "s1"
    attrs = fastjson.loads(ev["attrs_json"])
    assert attrs == {"correction_type": "attempt_outcome", "target": att, "target_type": "attempt",
                     "outcome": "failed", "failure_class": "perf_regression", "note_chars": 6}
    assert fastjson.loads(ev["content_json"]) == {"note": "slower"}
    res = run("correct", att, "--outcome", "superseded", "--db", path)
    assert res.exit_code == 0, res.output
    a = one(path, "SELECT * FROM attempts WHERE attempt_id = ?", (att,))[0]
    assert a["outcome"] == "superseded"                # latest wins
    assert a["failure_class"] == "perf_regression"     # kept: still a failure
    assert a["inferred_outcome"] == "succeeded"        # the projection's own reading stays beside it
    assert a["note"] == "slower" and a["correction_type"] == "attempt_outcome"
    res = run("correct", att, "--outcome", "succeeded", "--db", path)
    a = one(path, "SELECT * FROM attempts WHERE attempt_id = ?", (att,))[0]
    assert (a["outcome"], a["failure_class"]) == ("succeeded", None)  # no longer a failure: class dropped


def test_correct_turn_objective(demo):
    path, b = demo
    trn = b.ref("trn", "p1")
    res = run("correct", trn, "--note", "Fix pagination off-by-one", "--db", path)
    assert res.exit_code == 0, res.output
    t = one(path, "SELECT * FROM turns WHERE turn_id = ?", (trn,))[0]
    assert t["objective"] == "Fix pagination off-by-one"
    assert t["inferred_objective"] == "Fix the off-by-one in src/pager.py"
    objs = {r["objective"] for r in one(path, "SELECT objective FROM attempts WHERE turn_id = ?", (trn,))}
    assert objs == {"Fix pagination off-by-one"}


@pytest.mark.parametrize("args, code", [
    (["att_00000000-0000-4000-8000-000000000000", "--outcome", "failed"], "target.not_found"),
    (["att_01", "--outcome", "failed"], "target.short"),
    (["att_0123abc", "--outcome", "failed"], "target.short"),  # 8 hex digits, as AttemptQL asks
    (["att_zzzz", "--outcome", "failed"], "target.malformed"),
    (["ses_0000", "--note", "x"], "target.kind"),
    (["{att}", "--failure-class", "x"], "correct.class_needs_outcome"),
    (["{att}", "--outcome", "great"], "correct.outcome"),
    (["{att}"], "correct.nothing"),
    (["{trn}", "--outcome", "failed"], "correct.turn_fields"),
    (["{trn}"], "correct.nothing"),
    (["{att}", "--outcome", "failed", "--failure-class", "has space"], "correct.failure_class"),
])
def test_correct_refusals_are_coded(demo, args, code):
    path, b = demo
    args = [a.replace("{att}", b.ref("att", "e2s")).replace("{trn}", b.ref("trn", "p1")) for a in args]
    before = count_events(path)
    res = run("correct", *args, "--db", path)
    assert res.exit_code in (1, 2)
    assert f"error[{code}]" in res.output
    assert "Traceback" not in res.output
    assert count_events(path) == before


@pytest.mark.parametrize("option, given, says", [
    ("--session", "{att}", "expected a session id (ses_…), got an attempt id ({att})"),
    ("--attempt", "{ses}", "expected an attempt id (att_…), got a session id ({ses})"),
    ("--event", "zz", "not an event id (ev_ and hex digits expected)"),
])
def test_retract_names_the_kind_of_id_it_was_given(demo, option, given, says):
    """`retract --session att_…` said "not a ses_… id (hex digits expected after the prefix)":
    the digits were there, the kind was wrong (and "a att_")."""
    path, b = demo
    att = b.ref("att", "e2s")
    ses = one(path, "SELECT session_id FROM attempts WHERE attempt_id = ?", (att,))[0]["session_id"]
    given = given.replace("{att}", att).replace("{ses}", ses)
    res = run("retract", option, given, "--reason", "mistake", "--dry-run", "--db", path)
    assert res.exit_code == 2
    assert says.replace("{att}", att).replace("{ses}", ses) in res.output, res.output


def test_correct_on_a_retracted_attempt_is_refused(demo):
    path, b = demo
    att = b.ref("att", "e1f")
    assert run("retract", "--attempt", att, "--reason", "test", "--yes", "--db", path).exit_code == 0
    before = count_events(path)
    res = run("correct", att, "--outcome", "succeeded", "--db", path)
    assert res.exit_code == 1 and "error[correct.not_applied]" in res.output and "target_retracted" in res.output
    assert count_events(path) == before


def test_metadata_only_keeps_note_chars_not_the_note(tmp_path, monkeypatch):
    path = str(tmp_path / "m.db")
    b = scenario.build(scenario.load("retry_supersession"))
    st = Store.open(path, capture_mode="metadata_only")
    st.append(scenario.arrival(b))
    st.close()
    att = b.ref("att", "e2s")
    res = run("correct", att, "--outcome", "failed", "--note", "secret words", "--db", path)
    assert res.exit_code == 0, res.output
    assert "note text not stored (capture mode metadata_only); note_chars kept" in res.output
    ev = one(path, "SELECT attrs_json, content_json FROM events WHERE kind = 'correction'")[0]
    assert ev["content_json"] is None and "secret" not in ev["attrs_json"]
    assert fastjson.loads(ev["attrs_json"])["note_chars"] == 12
    # a note-only correction has nothing to apply under metadata_only
    res = run("correct", att, "--note", "more words", "--db", path)
    assert res.exit_code == 1 and "content_unavailable" in res.output


def test_retract_attempt_dry_run_then_write(demo):
    path, b = demo
    att = b.ref("att", "e1f")
    before = count_events(path)
    res = run("retract", "--attempt", att[:12], "--reason", "test", "--dry-run", "--db", path)
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"retract attempt {att}: turn 1 #0, superseded")
    assert "effect  4 fact event(s) leave every projection" in res.output
    assert ["attempts", "2", "1"] in [ln.split() for ln in res.output.splitlines()]  # the counts table
    assert "(dry run — nothing was written)" in res.output and count_events(path) == before
    res = run("retract", "--attempt", att, "--reason", "test", "--note", "a rehearsal", "--json", "--yes", "--db", path)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["written"] and out["matched"] and out["retracted_events"] == 4
    a = one(path, "SELECT retracted FROM attempts WHERE attempt_id = ?", (att,))[0]
    assert a["retracted"] == 1
    nxt = one(path, "SELECT supersedes FROM attempts WHERE attempt_id = ?", (b.ref("att", "e2s"),))[0]
    assert nxt["supersedes"] is None
    marked = {r["event_id"] for r in one(path, "SELECT event_id FROM events WHERE retracted = 1")}
    assert marked == {b.ref("ev", x) for x in ("r1s", "r1e", "e1s", "e1f")}
    s = one(path, "SELECT tool_call_count, failure_count FROM sessions")[0]
    assert (s["tool_call_count"], s["failure_count"]) == (2, 0)


def test_retract_session_hides_it_from_timeline(demo):
    path, b = demo
    ses = b.ref("ses", "claude_code:s1")
    res = run("retract", "--session", ses, "--reason", "benchmark", "--yes", "--db", path)
    assert res.exit_code == 0, res.output
    assert "wrote retraction ev_" in res.output and "undo is not possible" in res.output
    assert one(path, "SELECT retracted FROM sessions")[0]["retracted"] == 1
    assert one(path, "SELECT count(*) AS n FROM events WHERE retracted = 0 AND kind <> 'retraction'")[0]["n"] == 0
    res = run("timeline", "--db", path)
    assert " ".join(res.output.split()).startswith("no sessions to show: the only session was retracted")


def test_privacy_retraction_blanks_the_objective(demo):
    path, b = demo
    assert run("retract", "--attempt", b.ref("att", "e1f"), "--reason", "privacy", "--yes", "--db", path).exit_code == 0
    t = one(path, "SELECT objective FROM turns")[0]
    assert t["objective"] is None
    assert {r["objective"] for r in one(path, "SELECT objective FROM attempts")} == {None}


@pytest.mark.parametrize("args, code, status", [
    (["--attempt", "{att}", "--session", "{ses}", "--reason", "test", "--yes"], "retract.target", 2),
    (["--reason", "test", "--yes"], "retract.target", 2),
    (["--attempt", "{att}", "--reason", "because", "--yes"], "retract.reason", 2),
    (["--attempt", "{att}", "--reason", "test"], "retract.unconfirmed", 1),
])
def test_retract_refusals_are_coded(demo, args, code, status):
    path, b = demo
    args = [a.replace("{att}", b.ref("att", "e1f")).replace("{ses}", b.ref("ses", "claude_code:s1")) for a in args]
    before = count_events(path)
    res = run("retract", *args, "--db", path)
    assert res.exit_code == status, res.output
    assert f"error[{code}]" in res.output
    assert count_events(path) == before


def test_retract_json_needs_yes_or_dry_run(demo):
    path, b = demo
    res = run("retract", "--attempt", b.ref("att", "e1f"), "--reason", "test", "--json", "--db", path)
    assert res.exit_code == 2 and "--json needs --yes or --dry-run" in res.output


def test_retract_twice_and_meta_events_are_refused(demo):
    path, b = demo
    att = b.ref("att", "e1f")
    assert run("retract", "--attempt", att, "--reason", "test", "--yes", "--db", path).exit_code == 0
    res = run("retract", "--attempt", att, "--reason", "test", "--yes", "--db", path)
    assert "error[retract.already]" in res.output
    corr = json.loads(run("correct", b.ref("att", "e2s"), "--note", "ok", "--json", "--db", path).output)
    res = run("retract", "--event", corr["event_id"], "--reason", "other", "--yes", "--db", path)
    assert "error[retract.meta_event]" in res.output
    ev = b.ref("ev", "stop")
    assert run("retract", "--event", ev, "--reason", "duplicate", "--yes", "--db", path).exit_code == 0
    res = run("retract", "--event", ev, "--reason", "duplicate", "--yes", "--db", path)
    assert "error[retract.already]" in res.output


def test_event_retraction_reprojects_its_session(demo):
    path, b = demo
    # without the failed end the first edit is in flight: nothing failed, the attempts merge
    assert run("retract", "--event", b.ref("ev", "e1f"), "--reason", "mistaken_import", "--yes", "--db", path).exit_code == 0
    atts = one(path, "SELECT attempt_id, outcome, tool_call_count FROM attempts ORDER BY attempt_index")
    assert atts == [{"attempt_id": b.ref("att", "r1s"), "outcome": "succeeded", "tool_call_count": 4}]
    res = run("reproject", "--check", "--db", path)
    assert res.exit_code == 0 and "ok:" in res.output


def test_envelopes_are_valid_event_v1(demo):
    from attemptdb.model import event
    path, b = demo
    st = Store.open(path)
    try:
        env = meta.correction_envelope(target=b.ref("att", "e2s"), session=meta.target_session(st.conn, b.ref("att", "e2s")),
                                       outcome="failed", note="n", device_id=st.device_id, capture_mode="local_semantic",
                                       observed_at=1_787_904_000_000_000)
        event.validate(env)
        assert env["provider"] == "attemptdb" and env["agent"]["agent_id"]
        env = meta.retraction_envelope(target=b.ref("ses", "claude_code:s1"), target_type="session",
                                       session=meta.target_session(st.conn, b.ref("att", "e2s")), reason="test",
                                       device_id=st.device_id, capture_mode="metadata_only", observed_at=1_787_904_000_000_000)
        event.validate(env)
        assert "content" not in env
    finally:
        st.close()


def test_retract_a_session_by_its_projection_id(tmp_path):
    """A provider that sent no session id gets one session per project; the id the views show
    retracts the raw session (every project's share of it)."""
    path = str(tmp_path / "u.db")
    b = scenario.build(scenario.load("unknown_session_per_project"))
    st = Store.open(path)
    st.append(b.events)
    st.close()
    shown = b.ref("sesu", "claude_code:default")
    res = run("retract", "--session", shown, "--reason", "test", "--yes", "--json", "--db", path)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["target"] == "ses_" + __import__("attemptdb.model.ids", fromlist=["x"]).session_id("claude_code", "unknown")
    assert {r["retracted"] for r in one(path, "SELECT retracted FROM sessions")} == {1}
