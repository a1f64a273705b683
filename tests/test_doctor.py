"""attempt doctor / hook status: one state per agent (not_installed, installed, delivering,
broken), Codex trust, database reachability and the capture mode; exit 1 on problems."""

import hashlib
import json
import os

import pytest
from conftest import run_attempt

from attemptdb.installer import agents, codexconfig, doctor, install
from attemptdb.installer.command import Executable
from attemptdb.model import clock, event, ids
from attemptdb.store.database import Store

DAY = 86_400_000_000


@pytest.fixture
def exe(tmp_path):
    p = tmp_path / "bin" / "attempt"
    p.parent.mkdir()
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(0o755)
    return Executable([str(p)], "test")


def setup_agents(home, *providers):
    for p in providers:
        os.makedirs(os.path.dirname(agents.AGENTS[p].config_path()), exist_ok=True)


def add_event(db, provider, kind, captured_at, attrs=None):
    with Store.open(db) as s:
        env = {"event_id": ids.uuid7(), "schema_version": 1, "device_id": s.device_id,
               "observed_at": captured_at, "captured_at": captured_at, "provider": provider,
               "adapter_version": "0.1.1", "capture_mode": "metadata_only",
               "provider_event_name": "Test", "kind": kind,
               "project": ids.project_identity("/p", None, s.device_id),
               "session_id": ids.uuid7(), "provider_session_id": "s"}
        if attrs:
            env["attrs"] = attrs
        env = event.canonical(env)
        event.validate(env)
        s.append([env])


def agent(rep, provider):
    return next(a for a in rep["agents"] if a["provider"] == provider)


def backdate_install(provider, days):
    """Date the hooks' install `days` back (the record beside the config and the config)."""
    from attemptdb.installer import record
    path = agents.AGENTS[provider].config_path()
    when = (clock.now_us() - days * DAY) / 1e6
    for p in (record.record_path(path), path):
        if os.path.exists(p):
            os.utime(p, (when, when))


def test_nothing_installed_is_ok(home, db, exe):
    rep = doctor.run(db, executable=exe)
    assert [a["state"] for a in rep["agents"]] == ["not_installed"] * 4
    assert rep["ok"] and rep["database"]["exists"] is False


def test_installed_then_verified_then_delivering(home, db, exe):
    setup_agents(home, "claude_code", "cursor")
    install.install(["claude", "cursor"], executable=exe, verify=False)
    backdate_install("claude_code", 10)
    backdate_install("cursor", 10)
    rep = doctor.run(db, ["claude", "cursor"], executable=exe)
    assert agent(rep, "claude_code")["state"] == "installed"
    assert not rep["ok"]  # installed hooks, but no database yet
    assert "no database" in rep["problems"][0]

    now = clock.now_us()
    add_event(db, "claude_code", "capture_test", now)
    rep = doctor.run(db, ["claude", "cursor"], executable=exe)
    a = agent(rep, "claude_code")
    assert a["state"] == "installed" and a["verified"] and a["last_capture"] is None
    assert rep["ok"], rep
    assert rep["database"]["capture_mode"] in event.CAPTURE_MODES and rep["database"]["events"] == 1

    add_event(db, "claude_code", "tool_call_finished", now - 1000, attrs={"reconstructed": True})
    assert agent(doctor.run(db, ["claude"], executable=exe), "claude_code")["state"] == "installed"
    add_event(db, "cursor", "session_started", now - 8 * DAY)
    c = agent(doctor.run(db, ["cursor"], executable=exe), "cursor")
    assert c["state"] == "installed" and "no capture in the last 7 days" in c["notes"]
    add_event(db, "claude_code", "session_started", now - 2 * DAY)
    rep = doctor.run(db, ["claude", "cursor"], executable=exe)
    assert agent(rep, "claude_code")["state"] == "delivering"
    assert agent(rep, "cursor")["state"] == "installed"
    assert rep["ok"]


def _rewrite(path, fn):
    doc = json.load(open(path))
    fn(doc)
    open(path, "w").write(json.dumps(doc, indent=2))


@pytest.mark.parametrize("breakage,needle", [
    (lambda d: d.update(disableAllHooks=True), "disableAllHooks"),
    (lambda d: d["hooks"].pop("Stop"), "missing events: Stop"),
    (lambda d: d["hooks"]["Stop"].append(d["hooks"]["Stop"][0]), "duplicate entries: Stop"),
    (lambda d: d["hooks"].update(WorktreeCreate=[d["hooks"]["Stop"][0]]), "no longer captured: WorktreeCreate"),
    (lambda d: d["hooks"]["Stop"][0]["hooks"][0].update(type="prompt"), "differ from what"),
    (lambda d: d["hooks"]["Stop"][0]["hooks"][0].update(command="'/gone/attempt' capture claude-code"),
     "does not exist: /gone/attempt"),
])
def test_broken_claude_configs(home, db, exe, breakage, needle):
    setup_agents(home, "claude_code")
    install.install(["claude"], executable=exe, verify=False)
    add_event(db, "claude_code", "session_started", clock.now_us())
    _rewrite(agents.AGENTS["claude_code"].config_path(), breakage)
    rep = doctor.run(db, ["claude"], executable=exe)
    a = agent(rep, "claude_code")
    assert a["state"] == "broken" and not rep["ok"]
    assert any(needle in p for p in a["problems"]), a["problems"]


def test_another_attempt_is_broken(home, db, exe, tmp_path):
    setup_agents(home, "cursor")
    install.install(["cursor"], executable=exe, verify=False)
    other = tmp_path / "other" / "attempt"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    a = agent(doctor.run(db, ["cursor"], executable=Executable([str(other)], "t")), "cursor")
    assert a["state"] == "broken" and any("not this attempt" in p for p in a["problems"])


def test_malformed_config_is_broken_without_echoing_it(home, db, exe):
    setup_agents(home, "gemini_cli")
    path = agents.AGENTS["gemini_cli"].config_path()
    open(path, "w").write('{"apiKey": "canary-SECRET-42", ')
    rep = doctor.run(db, ["gemini"], executable=exe)
    a = agent(rep, "gemini_cli")
    assert a["state"] == "broken" and "canary-SECRET-42" not in json.dumps(rep)


def test_gemini_hooks_switched_off(home, db, exe):
    setup_agents(home, "gemini_cli")
    install.install(["gemini"], executable=exe, verify=False)
    _rewrite(agents.AGENTS["gemini_cli"].config_path(),
             lambda d: d.update(hooksConfig={"enabled": False}))
    a = agent(doctor.run(db, ["gemini"], executable=exe), "gemini_cli")
    assert a["state"] == "broken" and "hooksConfig.enabled" in a["problems"][0]


# --- Codex ------------------------------------------------------------------------------------

def test_codex_trust_hash_vector():
    ident = ('{"event_name":"pre_tool_use","hooks":[{"async":false,'
             '"command":"\'/opt/attempt\' capture codex","timeout":5,"type":"command"}]}')
    want = "sha256:" + hashlib.sha256(ident.encode()).hexdigest()
    assert codexconfig.trust_hash("PreToolUse", "'/opt/attempt' capture codex", 5) == want
    assert codexconfig.event_label("UserPromptSubmit") == "user_prompt_submit"
    assert codexconfig.trust_key("/h/.codex/hooks.json", "SessionEnd", 2, 0) == "/h/.codex/hooks.json:session_end:2:0"


def _trust_all(exe, *, bad=None, disabled=None):
    codex = agents.AGENTS["codex"]
    doc = json.load(open(codex.config_path()))
    base = open(codex.settings_path()).read() if os.path.exists(codex.settings_path()) else ""
    lines = [base.split("\n[hooks.state")[0]]  # Codex rewrites its records; so do we
    for ev, groups in doc["hooks"].items():
        for gi, g in enumerate(groups):
            for hi, h in enumerate(g["hooks"]):
                key = codexconfig.trust_key(codex.config_path(), ev, gi, hi)
                hsh = "sha256:bad" if ev == bad else codexconfig.trust_hash(ev, h["command"], h["timeout"])
                lines.append(f'\n[hooks.state."{key}"]\ntrusted_hash = "{hsh}"\n')
                if ev == disabled:
                    lines.append("enabled = false\n")
    open(codex.settings_path(), "w").write("".join(lines))


def test_codex_untrusted_modified_trusted_disabled(home, db, exe):
    setup_agents(home, "codex")
    install.install(["codex"], executable=exe, verify=False)
    add_event(db, "codex", "capture_test", clock.now_us())
    a = agent(doctor.run(db, ["codex"], executable=exe), "codex")
    assert a["state"] == "installed" and a["trust"] == "untrusted"
    assert any("/hooks" in p for p in a["problems"])

    _trust_all(exe, bad="Stop")
    a = agent(doctor.run(db, ["codex"], executable=exe), "codex")
    assert a["trust"] == "modified" and a["problems"]

    install.uninstall(["codex"])
    install.install(["codex"], executable=exe, verify=False)
    _trust_all(exe)
    rep = doctor.run(db, ["codex"], executable=exe)
    a = agent(rep, "codex")
    assert a["trust"] == "trusted" and a["problems"] == [] and rep["ok"]

    install.uninstall(["codex"])
    install.install(["codex"], executable=exe, verify=False)
    _trust_all(exe, disabled="PreToolUse")
    a = agent(doctor.run(db, ["codex"], executable=exe), "codex")
    assert a["state"] == "broken" and any("disabled in Codex" in p for p in a["problems"])


def test_codex_feature_off_is_broken(home, db, exe):
    setup_agents(home, "codex")
    open(agents.AGENTS["codex"].settings_path(), "w").write("[features]\nhooks = false\n")
    install.install(["codex"], executable=exe, verify=False)
    a = agent(doctor.run(db, ["codex"], executable=exe), "codex")
    assert a["state"] == "broken" and any("turned off" in p for p in a["problems"])


def test_codex_delivering_turns_trust_into_a_note(home, db, exe):
    setup_agents(home, "codex")
    install.install(["codex"], executable=exe, verify=False)
    add_event(db, "codex", "tool_call_finished", clock.now_us())
    rep = doctor.run(db, ["codex"], executable=exe)
    a = agent(rep, "codex")
    assert a["state"] == "delivering" and a["problems"] == [] and rep["ok"]
    assert any("/hooks" in n for n in a["notes"])


# --- database ---------------------------------------------------------------------------------

def test_invalid_stored_capture_mode_fails_closed(home, db, exe):
    add_event(db, "claude_code", "capture_test", clock.now_us())
    with Store.open(db) as s:
        s.set_meta("capture_mode", "everything please")
    rep = doctor.run(db, executable=exe)
    assert rep["database"]["fail_closed"] and rep["database"]["capture_mode"] == "metadata_only"
    assert not rep["ok"] and "fails closed" in rep["problems"][0]


def test_unreadable_database_is_a_problem(home, db, exe):
    open(db, "wb").write(b"this is not sqlite at all" * 100)
    rep = doctor.run(db, executable=exe)
    assert rep["database"]["reachable"] is False and not rep["ok"]


def test_cli_doctor_and_status(home, db):
    setup_agents(home, "cursor")
    env = {"HOME": str(home)}
    p = run_attempt(["doctor", "--json", "--db", db], env=env)
    rep = json.loads(p.stdout)
    # Cursor is here and no agent is wired: nothing is captured (doctor said ok)
    assert p.returncode == 1 and rep["ok"] is False, p.stderr
    assert rep["problems"] == ["no agent's hooks are installed (Cursor is here): nothing is captured; "
                               "`attempt hook install` wires them"]
    assert run_attempt(["hook", "install", "-p", "cursor", "--no-verify"], env=env).returncode == 0
    p = run_attempt(["doctor", "--db", db], env=env)
    assert p.returncode == 1 and b"no database" in p.stdout
    add_event(db, "cursor", "session_started", clock.now_us())
    p = run_attempt(["doctor", "--db", db, "--json"], env=env)
    rep = json.loads(p.stdout)
    assert p.returncode == 0 and agent(rep, "cursor")["state"] == "delivering"
    p = run_attempt(["hook", "status", "--db", db, "--json"], env=env)
    assert p.returncode == 0 and agent(json.loads(p.stdout), "cursor")["state"] == "delivering"
    p = run_attempt(["hook", "status", "--db", db], env=env)
    assert b"delivering" in p.stdout and b"Traceback" not in p.stderr


def test_activity_looks_past_the_recent_window_when_needed(home, db, exe, monkeypatch):
    monkeypatch.setattr(doctor, "RECENT_ROWS", 2)
    now = clock.now_us()
    add_event(db, "gemini_cli", "session_started", now - DAY)          # old row, recent capture
    for _ in range(3):
        add_event(db, "claude_code", "session_started", now - 30 * DAY)
    add_event(db, "codex", "capture_test", now - 90 * DAY)
    with Store.open(db, readonly=True) as s:
        act = doctor.activity(s, ["claude_code", "codex", "cursor", "gemini_cli"],
                              clock.iso(now - 7 * DAY))
    assert act["gemini_cli"][0] == clock.iso(now - DAY)
    assert act["claude_code"][0] == clock.iso(now - 30 * DAY)
    assert act["codex"] == (None, clock.iso(now - 90 * DAY))
    assert "cursor" not in act


def test_spool_quarantine_and_hook_log_problems_are_reported(home, db, exe):
    """A database that refuses captures still looks fine by its events; doctor also reads what
    the hook path left behind: a spooled event, a quarantined one, hook-log problem lines."""
    from attemptdb.capture import spool
    from attemptdb.store import location
    st = Store.open(db)
    st.close()
    rep = doctor.run(db, executable=exe)
    health = rep["database"]["capture_health"]
    assert health.pop("daemon")["running"] is False  # the suite runs with ATTEMPTDB_NO_DAEMON=1
    assert health == {"spooled": 0, "quarantined": 0, "hook_log_problems": 0, "lost": 0, "lost_last_at": None,
                      "damaged": None}
    os.makedirs(os.path.join(db + ".spool", "quarantine"))
    open(os.path.join(db + ".spool", "quarantine", "x.event"), "w").close()
    spool.put(db, {"event_id": ids.uuid7(), "schema_version": 1, "device_id": ids.uuid7(),
                   "source_seq": 0, "hlc": 0, "observed_at": 1, "captured_at": 1, "provider": "p",
                   "adapter_version": "1", "capture_mode": "metadata_only", "provider_event_name": "x",
                   "kind": "unknown", "project": ids.project_identity("/", None, ids.NIL),
                   "session_id": ids.session_id("p", "s"), "provider_session_id": "s", "agent": {}})
    os.makedirs(location.state_dir(), exist_ok=True)
    with open(os.path.join(location.state_dir(), "hook.log"), "a") as f:
        f.write(f"{clock.iso(clock.now_us())} provider=claude-code spooled reason=BusyError(store.py:1)\n")
    rep = doctor.run(db, executable=exe)
    rep["database"]["capture_health"].pop("daemon")
    assert rep["database"]["capture_health"] == {"spooled": 1, "quarantined": 1, "hook_log_problems": 1,
                                                 "lost": 0, "lost_last_at": None, "damaged": None}
    assert not rep["ok"] and len(rep["problems"]) == 3


def test_an_edited_schema_is_a_problem(home, db, exe):
    add_event(db, "claude_code", "capture_test", clock.now_us())
    rep = doctor.run(db, executable=exe)
    assert rep["ok"] and rep["database"]["schema_changes"] == 0
    with Store.open(db) as s:  # what someone in the sqlite3 shell could do: captures stop projecting
        s.conn.execute('DROP TRIGGER events_apply; CREATE TRIGGER "x\x1b[2J" AFTER INSERT ON events '
                       "BEGIN SELECT 1; END;")
    rep = doctor.run(db, executable=exe)
    assert not rep["ok"] and rep["database"]["schema_changes"] == 2
    assert rep["problems"] == ["the database schema: trigger events_apply is missing (sql/40_events.sql creates "
                               "it) (and 1 more); it was changed after AttemptDB wrote it (`attempt verify` "
                               "lists what, `attempt reproject` puts views and triggers back)"]
    p = run_attempt(["doctor", "--db", db], env={"HOME": str(home)})
    assert p.returncode == 1 and b"problem: the database schema: trigger events_apply" in p.stdout
    p = run_attempt(["verify", "--db", db], env={"HOME": str(home)})
    assert p.returncode == 1 and b"\x1b" not in p.stdout + p.stderr and b"x?[2J" in p.stdout
