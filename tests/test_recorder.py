"""`attemptdb.Recorder` (spec/evidence.md §7): the Python API writes the same facts as the CLI,
through the same contract, opens and closes its session, signs what it wrote, and keeps
`import attemptdb` light."""

import hashlib
import json
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT, run_attempt

import attemptdb
from attemptdb.errors import AttemptError
from attemptdb.integrity import checkpoint
from attemptdb.store.database import Store


def events(db):
    p = run_attempt(["events", "--jsonl", "--db", db])
    return [json.loads(x) for x in p.stdout.decode().splitlines()]


def test_import_attemptdb_loads_nothing_more():
    code = "import sys, attemptdb; print(sorted(m for m in sys.modules if m.startswith('attemptdb')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": ROOT})
    assert out.stdout.strip() == "['attemptdb']", out


def test_the_recorder_writes_the_cli_facts_and_closes_its_session(db, tmp_path):
    run_attempt(["init", "--db", db])
    log = tmp_path / "deploy.log"
    log.write_bytes(b"deployed\n" * 1000)
    with attemptdb.Recorder(title="nightly", db=db, cwd=str(tmp_path)) as rec:
        res = rec.run([sys.executable, "-c", "print('hi')"], attach_output=True, echo=False)
        assert res.returncode == 0 and res.exit_status == 0
        assert res.artifacts["stdout"] == "art_" + hashlib.sha256(b"hi\n").hexdigest()[:32]
        arts = rec.command(["make", "deploy"], exit_code=2, duration_ms=1500, stdout=str(log))
        rec.note("a note")
        rec.approve("the plan")
        rec.reject("the hack", note="no")
        sid = rec.session_id
    evs = events(db)
    assert {"ses_" + e["session_id"] for e in evs} == {sid}
    assert [e["provider_event_name"] for e in evs] == [
        "session.started", "run.started", "command.started", "command.finished", "run.stopped",
        "run.started", "command.started", "command.finished", "run.stopped",
        "session.note_added", "ai.approval", "ai.approval", "session.stopped"]
    assert evs[0]["content"]["title"] == "nightly" and evs[0]["attrs"]["source"] == "api"
    assert evs[-1]["attrs"]["reason"] == "exit"
    deploy = evs[7]
    assert deploy["outcome"]["exit_code"] == 2 and deploy["duration_ms"] == 1500
    assert deploy["attrs"]["x_attempt_stdout_sha256"] == "sha256:" + hashlib.sha256(log.read_bytes()).hexdigest()
    assert arts == {"stdout": deploy["attrs"]["x_attempt_stdout_artifact"]}
    assert [e["attrs"]["x_attempt_approved"] for e in evs[10:12]] == [True, False]
    st = Store.open(db, readonly=True)
    assert checkpoint.latest(st)[0] == st.count()  # signed on close
    # each run and each recorded command is an attempt of its own (its own turn)
    assert st.conn.execute("SELECT outcome, objective FROM attempts ORDER BY turn_index").fetchall() == [
        ("succeeded", shlex.join([sys.executable, "-c", "print('hi')"])), ("failed", "make deploy")]
    st.close()


def test_an_exception_closes_the_session_as_an_error_and_a_named_one_can_stay_open(db, tmp_path):
    with pytest.raises(RuntimeError):
        with attemptdb.Recorder(db=db, cwd=str(tmp_path)) as rec:
            rec.note("before the failure")
            raise RuntimeError("boom")
    assert events(db)[-1]["attrs"]["reason"] == "error"
    with attemptdb.Recorder(db=db, session="ci-9", keep_open=True, cwd=str(tmp_path)) as rec:
        rec.note("step one")
    with attemptdb.Recorder(db=db, session="ci-9", cwd=str(tmp_path)) as rec:
        rec.note("step two")
    named = [e for e in events(db) if e["provider_session_id"] == "ci-9"]
    assert [e["provider_event_name"] for e in named] == [
        "session.started", "session.note_added", "session.note_added", "session.stopped"]
    with pytest.raises(AttemptError) as e:
        with attemptdb.Recorder(db=db, cwd=str(tmp_path)) as rec:
            rec.note("   ")
    assert getattr(e.value, "code", None) == "record.empty"
