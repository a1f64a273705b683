"""A device folder removed whole from the sync folder (spec/sync.md, Pull): once a segment of a
device was imported, its removal is `sync.dropped`, whether its segments or its whole folder went.
Our own folder is push's: a pull does not look for it, and the next push publishes it again."""

import json
import os
import shutil

from sync_world import Device, events_by_device


def _world(tmp_path, monkeypatch, capsys):
    folder = str(tmp_path / "shared")
    os.makedirs(folder)
    devs = {n: Device(str(tmp_path), n) for n in ("laptop", "ci", "workstation")}
    evs = events_by_device()
    for n, d in devs.items():
        assert d.cli(monkeypatch, capsys, "init")[0] == 0
        d.capture(evs[n])
    for _ in range(2):
        for d in devs.values():
            assert d.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    return folder, devs


def _pull(dev, monkeypatch, capsys, folder):
    code, out, err = dev.cli(monkeypatch, capsys, "sync", folder, "--pull-only", "--json")
    return code, json.loads(out)


def test_a_device_folder_removed_whole_is_dropped(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys)
    ci, lap_id, ws_id = devs["ci"], devs["laptop"].device_id(), devs["workstation"].device_id()
    before = ci.count()
    saved = str(tmp_path / "saved")
    shutil.copytree(os.path.join(folder, lap_id), saved)
    shutil.rmtree(os.path.join(folder, lap_id))
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and not rep["ok"]
    assert [(p["code"], p["device"], p["segment"]) for p in rep["problems"]] == [("sync.dropped", lap_id, 1)]
    msg = rep["problems"][0]["message"]
    assert os.path.join(folder, lap_id) in msg and "gone" in msg
    assert ci.count() == before
    # the human report says so too, and the other devices go on
    devs["workstation"].capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["ci"][:2]])
    assert devs["workstation"].cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    code, out, err = ci.cli(monkeypatch, capsys, "sync", folder, "--pull-only")
    assert code == 1 and "sync.dropped" in out + err and lap_id in out + err
    assert ci.count("device_id = ?", (ws_id,)) == 9
    # the folder restored from a copy: nothing more to say
    shutil.copytree(saved, os.path.join(folder, lap_id))
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["problems"] == [], rep


def test_the_own_folder_removed_is_not_a_pull_problem_and_push_publishes_it_again(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys)
    ci = devs["ci"]
    own = os.path.join(folder, ci.device_id())
    shutil.rmtree(own)
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["ok"] and rep["problems"] == [], rep
    assert not os.path.exists(own)
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    assert sorted(os.listdir(own)) == ["000001.jsonl", "000001.manifest.json"]


def test_a_pinned_device_never_imported_may_have_no_folder(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys)
    ci = devs["ci"]
    code, out, err = ci.cli(monkeypatch, capsys, "keys", "trust", "dev_0badc0de-0000-4000-8000-00000000beef",
                            "id_" + "ab" * 16)
    assert code == 0, out + err
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["problems"] == [], rep
