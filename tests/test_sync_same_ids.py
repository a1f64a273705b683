"""One event id on two devices (spec/sync.md "One event id on two devices"): a tool call's id is
derived from the call (provider, session, slot, call id), so two devices that captured the same
Claude Code payload hold one id with other bytes. Sync keeps the first come, skips the other
copy (a note), and goes on with the rest of the segment and every later one, both ways; verify
accounts for the skipped leaf. An id reused for another provider event stays `sync.conflict`."""

import json
import os

from conftest import run_attempt
from sync_world import Device, forge_segment, teammate_key

from attemptdb.integrity import segments as segment


def _payload(call_id, session="shared-sess", command="pytest -q"):
    return {"session_id": session, "cwd": "/tmp", "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_use_id": call_id, "tool_input": {"command": command},
            "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}


def _capture(dev, payload):
    """`attempt capture claude-code` in its own process, as the device's hook runs it."""
    p = run_attempt(["capture", "claude-code", "--db", dev.db], input=json.dumps(payload).encode(), env=dev.env())
    assert p.returncode == 0 and p.stderr == b"", p.stderr.decode(errors="replace")


def _sync(dev, monkeypatch, capsys, folder):
    code, out, err = dev.cli(monkeypatch, capsys, "sync", folder, "--include-content", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["ok"], out + err
    assert not any(p["code"] == "sync.conflict" for p in rep["problems"])
    return rep


def _ids(dev, device=None):
    sql = "SELECT event_id FROM events" + (" WHERE device_id = ?" if device else "")
    return [r[0] for r in dev.rows(sql, (device,) if device else ())]


def test_two_devices_holding_one_tool_call_id_sync_everything_else_both_ways(tmp_path, monkeypatch, capsys):
    folder = str(tmp_path / "sc")
    os.makedirs(folder)
    n1, n2 = Device(str(tmp_path), "n1"), Device(str(tmp_path), "n2")
    for d in (n1, n2):
        assert d.cli(monkeypatch, capsys, "init")[0] == 0
        _capture(d, _payload("toolu_same"))  # the same payload on both: one id, other bytes
    (shared,) = set(_ids(n1)) & set(_ids(n2))
    assert n1.rows("SELECT event_hash FROM events") != n2.rows("SELECT event_hash FROM events")
    _capture(n1, _payload("toolu_n1_0", "s-n1"))
    notes = []
    for r in range(3):
        for d in (n1, n2):
            notes += _sync(d, monkeypatch, capsys, folder)["notes"]
        # more captures on both between syncs: later segments must keep flowing both ways
        _capture(n1, _payload(f"toolu_n1_{r + 1}", "s-n1", f"make {r}"))
        _capture(n2, _payload(f"toolu_n2_{r + 1}", "s-n2", f"cargo test {r}"))
        if r == 0:
            for d in (n1, n2):  # a second shared call, in a later segment of each
                _capture(d, _payload("toolu_same_2"))
    for _ in range(2):
        for d in (n1, n2):
            _sync(d, monkeypatch, capsys, folder)
    assert any("skipped" in n and "same provider event" in n for n in notes), notes
    id1, id2 = n1.device_id(), n2.device_id()
    own1, own2 = set(_ids(n1, id1)), set(_ids(n2, id2))
    assert len(own1) == 6 and len(own2) == 5
    both = own1 & own2
    assert shared in both and len(both) == 2
    for d in (n1, n2):
        everything = _ids(d)
        assert len(everything) == len(set(everything)) == len(own1 | own2) == 9  # the shared ids stored once
        assert set(everything) == own1 | own2
        code, out, err = d.cli(monkeypatch, capsys, "verify")
        assert code == 0 and out.startswith("ok:"), out + err
    # each holds every event of the other but the shared ones (its own copy of those stays)
    assert set(_ids(n1, id2)) == own2 - both
    assert set(_ids(n2, id1)) == own1 - both


def test_an_id_reused_for_another_provider_event_is_still_a_conflict(tmp_path, monkeypatch, capsys):
    """A device publishing, under its own name, an event that carries another device's event id
    but is about another tool call (the squatting spec/sync.md describes) is refused."""
    folder = str(tmp_path / "sc")
    os.makedirs(folder)
    n1, n2 = Device(str(tmp_path), "n1"), Device(str(tmp_path), "n2")
    for d in (n1, n2):
        assert d.cli(monkeypatch, capsys, "init")[0] == 0
    _capture(n1, _payload("toolu_real"))
    _capture(n2, _payload("toolu_n2"))
    assert n1.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    assert _sync(n2, monkeypatch, capsys, folder)["imported"] == 1
    line = open(os.path.join(folder, n1.device_id(), segment.data_name(1)), "rb").read().splitlines()[0]
    env = json.loads(line)
    squatter = "dev_" + "0badc0de-0000-4000-8000-00000000beef"
    env["device_id"] = squatter[4:]
    env["tool"]["call_id"] = "toolu_another"  # another call under the real event's id
    from attemptdb.model import event
    forged = event.line(event.canonical(env)).encode("utf-8")
    forge_segment(os.path.join(folder, squatter), squatter, 1, "0" * 64, [forged], teammate_key(str(tmp_path / "k")),
                  content=True)
    code, out, err = n2.cli(monkeypatch, capsys, "sync", folder, "--pull-only", "--json")
    rep = json.loads(out)
    assert code == 1 and [p["code"] for p in rep["problems"]] == ["sync.conflict"], out + err
    assert rep["problems"][0]["device"] == squatter and n1.device_id() in rep["problems"][0]["message"]
