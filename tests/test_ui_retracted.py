"""`attempt ui`: a retracted session or attempt is not shown as live. A user's walkthrough
retracted an attempt (`attempt retract --attempt … --reason test`) and a session (`--reason
duplicate`) and the UI still answered 200 with the attempt's outcome, confidence and evidence
and the session as `open · 0 turns`, although the CLI says the session was retracted and
AttemptQL takes neither for a subject (AQL0301). Now such a page is 410 Gone: it names each
retraction that covers the subject (reason, when, the Retraction event) and nothing else of it;
the lists leave retracted rows out, as SHOW does. And a recipe the engine refuses is the same
400 on its page as in its JSON. A real `attempt ui` process, on the wire."""

import json
import urllib.parse

import pytest
import scenario_db
from conftest import run_attempt
from test_readers_hostile import _headers
from test_readers_ui import UI, cli_rows
from test_ui_bad_params import _secured

pytest.importorskip("datasette", reason="the ui extra is part of the test extra")

P = "/-/attemptdb"


def _retract(db, home, flag, target, reason):
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
           "ATTEMPTDB_NO_DAEMON": "1"}
    p = run_attempt(["retract", flag, target, "--reason", reason, "--yes", "--db", db], env=env)
    assert p.returncode == 0, p.stderr.decode()


@pytest.fixture(scope="module")
def hist(tmp_path_factory):
    """units_needs_you with one attempt of ny-f1 retracted for privacy and session ny-g1 (the
    one waiting on a permission) retracted as revoked; what the pages should and should not show."""
    tmp = tmp_path_factory.mktemp("ui-retracted")
    db = str(tmp / "attempt.db")
    built = scenario_db.build(db, "units_needs_you")[0]
    home = tmp / "home"
    home.mkdir()
    gone_att, live_att = built.expand("{att:f_t1e}"), built.expand("{att:f_t2e}")
    gone_ses, live_ses = built.expand("{ses:claude_code:ny-g1}"), built.expand("{ses:claude_code:ny-f1}")
    inner = cli_rows(db, f"SELECT attempt_id, turn_id FROM attempts WHERE session_id = '{gone_ses}'")
    assert inner, "the session to retract has an attempt"
    evidence = json.loads(cli_rows(db, f"SELECT evidence FROM attempts WHERE attempt_id = '{gone_att}'")[0]["evidence"])
    _retract(db, home, "--attempt", gone_att, "privacy")
    _retract(db, home, "--session", gone_ses, "revoked")
    by = {r["target"]: r["event_id"] for r in cli_rows(db, "SELECT target, event_id FROM retractions")}
    u = UI(db, home)
    yield u, {"gone_att": gone_att, "live_att": live_att, "gone_ses": gone_ses, "live_ses": live_ses,
              "inner_att": inner[0]["attempt_id"], "inner_turn": inner[0]["turn_id"], "evidence": evidence,
              "att_retraction": by[gone_att], "ses_retraction": by[gone_ses]}
    u.stop()


def test_a_retracted_attempts_page_is_410_with_its_retraction_and_no_evidence(hist):
    ui, h = hist
    for ident in (h["gone_att"], h["gone_att"][:12]):  # a short id, as the CLI prints it, too
        status, body = ui.request(f"{P}/attempt/{ident}")
        assert status == 410, (ident, status)
        assert 'id="adb-retracted"' in body and "privacy" in body and "this attempt" in body
        assert h["att_retraction"] in body and h["gone_att"] in body
        assert "adb-evidence" not in body and "confidence" not in body and "FAILED" not in body
        assert not [e for e in h["evidence"] if e in body], "the retracted attempt's evidence is shown"
    status, hdrs = _headers(ui, f"{P}/attempt/{h['gone_att']}")
    assert status == 410
    _secured(hdrs, "retracted attempt")


def test_a_retracted_sessions_page_and_its_attempts_pages_are_410(hist):
    ui, h = hist
    status, body = ui.request(f"{P}/session/{h['gone_ses']}")
    assert status == 410 and 'id="adb-retracted"' in body
    assert "revoked" in body and "this session" in body and h["ses_retraction"] in body
    assert h["inner_att"] not in body and h["inner_turn"] not in body and "class=\"adb-turn\"" not in body
    assert "open ·" not in body and " turns" not in body
    status, body = ui.request(f"{P}/attempt/{h['inner_att']}")
    assert status == 410 and "revoked" in body and h["ses_retraction"] in body
    assert f"its session <code class=\"adb-id\">{h['gone_ses']}</code>" in body and "adb-evidence" not in body


def test_live_pages_stay_and_lists_leave_retracted_rows_out(hist):
    ui, h = hist
    status, body = ui.request(f"{P}/session/{h['live_ses']}")
    assert status == 200 and h["live_att"] in body and h["gone_att"] not in body
    status, body = ui.request(f"{P}/attempt/{h['live_att']}")
    assert status == 200 and "adb-evidence" in body
    assert ui.request(f"{P}/attempt/att_00000000")[0] == 404  # never recorded: not there
    assert ui.request(f"{P}/session/ses_00000000")[0] == 404
    for page in ("", "/units", "/needs-you", "/needs-you.json"):
        status, body = ui.request(P + page)
        assert status == 200 and h["gone_ses"] not in body and h["gone_att"] not in body, page


@pytest.mark.parametrize("attempt,status", [("zzz", 400), ("x' OR 1=1 --", 400), ("gone", 400), ("live", 200)])
def test_a_recipes_page_answers_the_status_of_its_json(hist, attempt, status):
    ui, h = hist
    value = {"gone": h["gone_att"], "live": h["live_att"]}.get(attempt, attempt)
    path = f"{P}/recipes/what-caused-this-attempt?" + urllib.parse.urlencode({"attempt": value})
    got, page = ui.request(path)
    got_json, answer = ui.request(path + "&_format=json")
    assert (got, got_json) == (status, status), (attempt, got, got_json)
    if status == 400:
        code = json.loads(answer)["error"]["code"]
        assert f"error[{code}]" in page
