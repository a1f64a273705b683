"""Reconciling a transcript with what hooks captured (spec/transcripts.md, never counting twice):
a hook event consumes the transcript event nearest to it, never one that a later transcript
event matches more closely, and never two."""

import json

from attemptdb import adapters
from attemptdb.cli.main import run
from attemptdb.model import clock, ids
from attemptdb.store.database import Store

SESSION = "66666666-6666-4666-8666-666666666666"
CWD = "/home/dev/example/project"


def _entry(n, kind, at, message, parent=None):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD, "sessionId": SESSION,
            "version": "2.1.190", "gitBranch": "main", "type": kind, "message": message,
            "uuid": f"b000000{n}-0000-4000-8000-000000000000", "timestamp": f"2026-08-24T10:00:{at}Z",
            "entrypoint": "cli"}


def _prompt(n, at, text, parent):
    e = _entry(n, "user", at, {"role": "user", "content": text}, parent)
    e["promptId"] = f"p000000{n}-0000-4000-8000-000000000000"
    e["promptSource"] = "typed"
    return e


def _answer(n, at, text, parent):
    return _entry(n, "assistant", at, {
        "id": f"msg_000{n}", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5}}, parent)


def transcript(path):
    """Prompt A at 10:00:00 answered at :02 (end_turn), prompt B at :06 answered at :08."""
    lines = [_prompt(1, "00.000", "prompt A", None), _answer(2, "02.000", "answer A", _uuid(1)),
             _prompt(3, "06.000", "prompt B", _uuid(2)), _answer(4, "08.000", "answer B", _uuid(3))]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def _uuid(n):
    return f"b000000{n}-0000-4000-8000-000000000000"


def hook(db, name, extra, iso):
    """A hook event as `attempt capture claude-code` builds it, observed at `iso`."""
    st = Store.open(db)
    try:
        device = st.device_id
        project = ids.project_identity(CWD, None, device)
        ctx = adapters.Context(device, "local_semantic", project, clock.from_iso(iso), hook_version="test")
        st.append([adapters.build_event("claude-code", {"hook_event_name": name, "session_id": SESSION,
                                                        "cwd": CWD, **extra}, None, ctx)])
    finally:
        st.close()


def test_a_hook_event_takes_its_nearest_transcript_event(db, tmp_path, capsys):
    assert run(["init", "--db", db]) == 0
    hook(db, "UserPromptSubmit", {"prompt": "prompt B"}, "2026-08-24T10:00:06.100Z")
    hook(db, "Stop", {}, "2026-08-24T10:00:08.100Z")
    capsys.readouterr()
    assert run(["import", "claude-transcripts", transcript(tmp_path / "t.jsonl"), "--db", db, "--json", "--finished"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["skipped_captured"] == 2
    st = Store.open(db, readonly=True)
    try:
        got = st.conn.execute(
            "SELECT kind, observed_at, coalesce(json_extract(attrs_json, '$.reconstructed'), 0) FROM events "
            "WHERE kind IN ('prompt_submitted', 'turn_stopped') ORDER BY observed_at, kind").fetchall()
    finally:
        st.close()
    assert [(k, clock.iso(clock.from_iso(at))[11:23], r) for k, at, r in got] == [
        ("prompt_submitted", "10:00:00.000", 1),  # A, only the transcript has it
        ("turn_stopped", "10:00:02.000", 1),
        ("prompt_submitted", "10:00:06.100", 0),  # B, once: the hook's
        ("turn_stopped", "10:00:08.100", 0),
    ]
