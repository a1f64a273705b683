"""`attempt sync DIR` (spec/sync.md): three simulated devices, each with its own home, database
and key, on one repository; tampered segments; provenance in `attempt verify`; key pins."""

import itertools
import json
import os
import shutil

import pytest
from sync_world import Device, events_by_device, public_tables

from attemptdb.integrity import chain, keys
from attemptdb.integrity import segments as segment
from attemptdb.model import fastjson
from attemptdb.store.database import Store

NAMES = ("laptop", "ci", "workstation")


def make_world(root, monkeypatch, capsys, mode=None):
    folder = os.path.join(root, "shared")
    os.makedirs(folder)
    devs = {n: Device(root, n) for n in NAMES}
    evs = events_by_device()
    for n, d in devs.items():
        code, out, err = d.cli(monkeypatch, capsys, "init", *(["--capture-mode", mode] if mode else []))
        assert code == 0, err
        d.capture(evs[n])
    return folder, devs


@pytest.mark.parametrize("order", list(itertools.permutations(NAMES)))
def test_three_devices_converge_in_every_order(tmp_path, monkeypatch, capsys, order):
    folder, devs = make_world(str(tmp_path), monkeypatch, capsys)
    for _ in range(2):  # the first round publishes, the second brings the late publishers' segments
        for n in order:
            code, out, err = devs[n].cli(monkeypatch, capsys, "sync", folder, "--include-content")
            assert code == 0, out + err
    tables = {n: public_tables(d.db) for n, d in devs.items()}
    first = tables[order[0]]
    for n in order[1:]:
        for t in first:
            assert tables[n][t] == first[t], (n, t)
    assert sum(map(len, first.values())) > 50
    for n, d in devs.items():
        code, out, err = d.cli(monkeypatch, capsys, "verify")
        assert code == 0 and out.startswith("ok:"), out + err
        assert "other devices proven" in err
        assert d.count() == 28
    # Claude Code on the laptop, then Codex on the CI box in the same repository: one handoff
    hand = devs[order[-1]].rows("SELECT from_provider, to_provider, from_session, to_session FROM handoffs")
    assert len(hand) == 1 and hand[0][:2] == ("claude_code", "codex")
    # every device wrote only under its own name, and only new files
    assert sorted(os.listdir(folder)) == sorted(d.device_id() for d in devs.values())


def test_default_sync_leaves_content_out_and_metadata_devices_converge(tmp_path, monkeypatch, capsys):
    folder, devs = make_world(str(tmp_path), monkeypatch, capsys, mode="metadata_only")
    for _ in range(2):
        for n in NAMES:
            assert devs[n].cli(monkeypatch, capsys, "sync", folder)[0] == 0
    tables = [public_tables(d.db) for d in devs.values()]
    assert tables[0] == tables[1] == tables[2]
    # a local_semantic device's default sync publishes no content
    other = Device(str(tmp_path), "extra")
    assert other.cli(monkeypatch, capsys, "init")[0] == 0
    other.capture(events_by_device()["laptop"][:3])
    assert other.count("content_json IS NOT NULL OR raw_json IS NOT NULL") > 0
    assert other.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    ddir = os.path.join(folder, other.device_id())
    m = json.load(open(os.path.join(ddir, segment.manifest_name(1))))
    assert m["content"] is False
    for line in open(os.path.join(ddir, segment.data_name(1)), encoding="utf-8"):
        env = json.loads(line)
        assert "content" not in env and "raw" not in env and env["capture_mode"] == "metadata_only"


def test_push_is_incremental_and_never_rewrites(tmp_path, monkeypatch, capsys):
    folder, devs = make_world(str(tmp_path), monkeypatch, capsys)
    lap = devs["laptop"]
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    ddir = os.path.join(folder, lap.device_id())
    before = {p: open(os.path.join(ddir, p), "rb").read() for p in os.listdir(ddir)}
    assert sorted(before) == [segment.data_name(1), segment.manifest_name(1)]
    code, out, _ = lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")
    assert code == 0 and "pushed 0 events" in out.replace("\n  ", " ")  # wrapped to the terminal
    lap.capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["ci"][:2]])
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    after = {p: open(os.path.join(ddir, p), "rb").read() for p in os.listdir(ddir)}
    assert {p: after[p] for p in before} == before
    m2 = json.load(open(os.path.join(ddir, segment.manifest_name(2))))
    m1 = json.load(open(os.path.join(ddir, segment.manifest_name(1))))
    assert m2["chain"]["prev"] == m1["chain"]["head"] and m2["first_source_seq"] == m1["last_source_seq"] + 1
    assert m2["events"] == 2


# --- tampering --------------------------------------------------------------------------------

@pytest.fixture
def published(tmp_path, monkeypatch, capsys):
    """The laptop published two segments; the CI box has not pulled yet."""
    folder, devs = make_world(str(tmp_path), monkeypatch, capsys)
    lap = devs["laptop"]
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    lap.capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["ci"][:3]])
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    return folder, devs, os.path.join(folder, lap.device_id())


def _pull(dev, monkeypatch, capsys, folder):
    code, out, err = dev.cli(monkeypatch, capsys, "sync", folder, "--pull-only", "--json")
    return code, json.loads(out)


def _resign(path, key):
    m = json.load(open(path))
    with open(path, "w") as f:
        f.write(fastjson.dumps(segment.sign(m, key)) + "\n")


def _other_key(tmp_path):
    return keys.create("00000000-0000-4000-8000-000000000000", str(tmp_path))[0]


TAMPER = {
    "edit_data": lambda d, tmp: _flip(os.path.join(d, segment.data_name(1))),
    "edit_manifest": lambda d, tmp: _edit_json(os.path.join(d, segment.manifest_name(2)), "events", 2),
    "drop_first": lambda d, tmp: [os.unlink(os.path.join(d, n)) for n in (segment.data_name(1), segment.manifest_name(1))],
    "drop_manifest": lambda d, tmp: os.unlink(os.path.join(d, segment.manifest_name(1))),
    "reorder": lambda d, tmp: _swap(d),
    "resign_other_key": lambda d, tmp: _resign(os.path.join(d, segment.manifest_name(2)), _other_key(tmp)),
    "edit_and_resign": lambda d, tmp: (_flip(os.path.join(d, segment.data_name(2))),
                                       _rehash(os.path.join(d, segment.manifest_name(2)),
                                               os.path.join(d, segment.data_name(2)), _other_key(tmp))),
}
CODES = {"edit_data": "sync.file_changed", "edit_manifest": "sync.signature", "drop_first": "sync.gap",
         "drop_manifest": "sync.gap", "reorder": "sync.misplaced", "resign_other_key": "sync.key_mismatch",
         "edit_and_resign": "sync.key_mismatch"}


def _flip(path):
    data = bytearray(open(path, "rb").read())
    i = data.index(b'"kind":"') + 8
    data[i:i + 1] = b"x" if data[i:i + 1] != b"x" else b"y"
    open(path, "wb").write(bytes(data))


def _edit_json(path, k, v):
    m = json.load(open(path))
    m[k] = v
    open(path, "w").write(json.dumps(m))


def _swap(d):
    for a, b in ((segment.data_name(1), segment.data_name(2)), (segment.manifest_name(1), segment.manifest_name(2))):
        os.rename(os.path.join(d, a), os.path.join(d, "tmp"))
        os.rename(os.path.join(d, b), os.path.join(d, a))
        os.rename(os.path.join(d, "tmp"), os.path.join(d, b))


def _rehash(manifest_path, data_path, key):
    import hashlib
    data = open(data_path, "rb").read()
    m = json.load(open(manifest_path))
    m["sha256"], m["size_bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    head = m["chain"]["prev"]
    for line in data.splitlines():
        head = chain.link(head, hashlib.sha256(line).hexdigest(), hashlib.sha256)
    m["chain"]["head"] = head
    with open(manifest_path, "w") as f:
        f.write(fastjson.dumps(segment.sign(m, key)) + "\n")


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_tampered_segments_are_refused_and_nothing_is_imported(published, tmp_path, monkeypatch, capsys, how):
    folder, devs, ddir = published
    lap_id = devs["laptop"].device_id()
    TAMPER[how](ddir, tmp_path)
    ci = devs["ci"]
    before = ci.count()
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and not rep["ok"]
    assert [p["device"] for p in rep["problems"]] == [lap_id]
    assert rep["problems"][0]["code"] == CODES[how], rep["problems"]
    assert lap_id in rep["problems"][0]["message"]
    assert ci.count() == before and ci.count("device_id = ?", (lap_id,)) == 0
    # the text form names the code and the device too, and nothing is pinned for the device
    code, out, _ = ci.cli(monkeypatch, capsys, "sync", folder, "--pull-only")
    assert code == 1 and f"problem[{CODES[how]}]: device {lap_id}" in out
    code, out, _ = ci.cli(monkeypatch, capsys, "keys", "list", "--json")
    assert lap_id not in {r["device_id"] for r in json.loads(out)}


def test_after_a_pull_a_rewritten_dropped_or_resigned_segment_is_refused(published, tmp_path, monkeypatch, capsys):
    folder, devs, ddir = published
    ci, lap_id = devs["ci"], devs["laptop"].device_id()
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    n = ci.count("device_id = ?", (lap_id,))
    assert n == 13
    saved = str(tmp_path / "saved")
    shutil.copytree(ddir, saved)
    # the whole history re-signed by another key: refused, the pin holds
    other = _other_key(tmp_path)
    for i in (1, 2):
        _resign(os.path.join(ddir, segment.manifest_name(i)), other)
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and rep["problems"][0]["code"] in ("sync.key_mismatch", "sync.segment_changed")
    # a third segment by another key, after the real two
    shutil.rmtree(ddir)
    shutil.copytree(saved, ddir)
    lines = open(os.path.join(ddir, segment.data_name(2)), "rb").read().splitlines(keepends=True)
    m2 = json.load(open(os.path.join(ddir, segment.manifest_name(2))))
    env = json.loads(lines[-1])
    env.update(event_id="0" * 8 + env["event_id"][8:], source_seq=env["source_seq"] + 1)
    from attemptdb.model import event
    text = event.line(event.canonical(env)).encode() + b"\n"
    open(os.path.join(ddir, segment.data_name(3)), "wb").write(text)
    import hashlib
    body = dict(m2, segment=3, file=segment.data_name(3), sha256=hashlib.sha256(text).hexdigest(),
                size_bytes=len(text), events=1, first_source_seq=env["source_seq"], last_source_seq=env["source_seq"],
                chain={"prev": m2["chain"]["head"],
                       "head": chain.link(m2["chain"]["head"], hashlib.sha256(text[:-1]).hexdigest())})
    open(os.path.join(ddir, segment.manifest_name(3)), "w").write(fastjson.dumps(segment.sign(body, other)))
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and rep["problems"][0]["code"] == "sync.key_mismatch" and rep["problems"][0]["segment"] == 3
    # the last segment dropped after it was imported: a rollback
    os.unlink(os.path.join(ddir, segment.manifest_name(3)))
    os.unlink(os.path.join(ddir, segment.data_name(3)))
    os.unlink(os.path.join(ddir, segment.manifest_name(2)))
    os.unlink(os.path.join(ddir, segment.data_name(2)))
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and rep["problems"][0]["code"] == "sync.dropped"
    assert ci.count("device_id = ?", (lap_id,)) == n
    # `keys trust` with the new key (the device really rotated it) lets its segments in
    shutil.rmtree(ddir)
    shutil.copytree(saved, ddir)
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    code, out, _ = ci.cli(monkeypatch, capsys, "keys", "revoke", lap_id)
    assert code == 0
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and rep["problems"][0]["code"] == "sync.key_revoked"
    code, out, err = ci.cli(monkeypatch, capsys, "keys", "trust", lap_id, "id_" + "ab" * 16)
    assert code == 0, err
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0  # nothing new to import: the pinned key only governs new segments
    # a rotation trusted by the user: what was imported under the old key still verifies
    code, out, err = ci.cli(monkeypatch, capsys, "verify")
    assert code == 0, out + err


def test_a_segment_outside_the_own_folder_is_never_written(published, tmp_path, monkeypatch, capsys):
    folder, devs, ddir = published
    # someone else put a segment under the CI box's name, signed by their key: its push refuses
    ci = devs["ci"]
    own = os.path.join(folder, ci.device_id())
    shutil.copytree(ddir, own)
    code, out, err = ci.cli(monkeypatch, capsys, "sync", folder, "--push-only")
    assert code == 1 and ("sync.bad_manifest" in out + err or "sync.misplaced" in out + err)


# --- provenance ---------------------------------------------------------------------------------

def test_verify_names_device_and_seq_of_a_forged_foreign_event(published, monkeypatch, capsys):
    folder, devs, _ = published
    ci, lap_id = devs["ci"], devs["laptop"].device_id()
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    assert ci.cli(monkeypatch, capsys, "verify")[0] == 0
    # an event claiming to be the laptop's, never signed by it
    env = dict(events_by_device()["laptop"][0], event_id="01a2326d-0000-7000-8000-00000000beef",
               device_id=lap_id[4:], source_seq=2, hlc=0)
    st = Store.open(ci.db)
    st.append([env])
    seq = st.head()[0]
    st.close()
    code, out, _ = ci.cli(monkeypatch, capsys, "verify", "--json")
    rep = json.loads(out)
    assert code == 1
    p = [p for p in rep["problems"] if p["kind"] == "provenance"]
    assert p and p[0]["seq"] == seq and lap_id in p[0]["message"]


def test_verify_checks_the_kept_manifests(published, monkeypatch, capsys):
    folder, devs, _ = published
    ci, lap_id = devs["ci"], devs["laptop"].device_id()
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    st = Store.open(ci.db)
    text = st.conn.execute("SELECT manifest FROM sync_segments WHERE segment = 1").fetchone()[0]
    m = json.loads(text)
    m["last_source_seq"] += 0
    m["created_at"] = "2020-01-01T00:00:00.000000Z"
    st.conn.execute("UPDATE sync_segments SET manifest = ? WHERE segment = 1", (json.dumps(m),))
    st.close()
    code, out, _ = ci.cli(monkeypatch, capsys, "verify", "--json")
    rep = json.loads(out)
    assert code == 1 and any(p["kind"] == "provenance" and lap_id in p["message"] for p in rep["problems"])


def test_keys_trust_pins_before_first_use(published, tmp_path, monkeypatch, capsys):
    folder, devs, ddir = published
    ci, lap_id = devs["ci"], devs["laptop"].device_id()
    other = _other_key(tmp_path)
    code, _, err = ci.cli(monkeypatch, capsys, "keys", "trust", lap_id, other.public_b64)
    assert code == 0, err
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and rep["problems"][0]["code"] == "sync.key_mismatch"
    real = json.load(open(os.path.join(ddir, segment.manifest_name(1))))["signature"]["key_id"]
    assert ci.cli(monkeypatch, capsys, "keys", "trust", lap_id, real)[0] == 0
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    code, out, _ = ci.cli(monkeypatch, capsys, "keys", "list", "--json")
    rows = {r["device_id"]: r for r in json.loads(out)}
    assert rows[lap_id]["key_id"] == real and rows[lap_id]["how"] == "trusted" and rows[lap_id]["events"] == 13
    for bad in ("dev_nope", lap_id + "x"):
        assert ci.cli(monkeypatch, capsys, "keys", "trust", bad, real)[0] == 2
    assert ci.cli(monkeypatch, capsys, "keys", "trust", lap_id, "id_xyz")[0] == 2


def test_hostile_folder_entries(published, monkeypatch, capsys):
    folder, devs, ddir = published
    ci = devs["ci"]
    os.symlink("/etc", os.path.join(folder, "dev_00000000-0000-4000-8000-000000000001"))
    os.makedirs(os.path.join(folder, "not-a-device"))
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1
    assert {p["code"] for p in rep["problems"]} <= {"sync.not_a_directory"} or rep["problems"]
    assert any("not-a-device" in n for n in rep["notes"])
    assert ci.count("device_id = ?", (devs["laptop"].device_id(),)) == 13


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir], ids=["pipe", "folder"])
def test_a_pipe_or_folder_for_a_manifest_or_data_file_is_refused_never_waited_on(published, monkeypatch, capsys,
                                                                               make):
    folder, devs, ddir = published
    ci = devs["ci"]
    fake = os.path.join(folder, "dev_00000000-0000-4000-8000-000000000002")
    os.makedirs(fake)
    make(os.path.join(fake, segment.manifest_name(1)))
    open(os.path.join(ddir, "\u00b2.jsonl"), "w").close()  # '²'.isdigit(), int('²') fails: no segment
    data = os.path.join(ddir, segment.data_name(2))
    os.unlink(data)
    make(data)
    code, rep = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1
    codes = {p["device"]: p["code"] for p in rep["problems"]}
    assert codes["dev_00000000-0000-4000-8000-000000000002"] == "sync.unreadable"
    assert codes[devs["laptop"].device_id()] == "sync.unreadable"  # and the pull went on to the rest


# --- bundles of synced devices (spec/bundle.md "Import", spec/sync.md "Trust") -------------------

def test_bundles_of_a_synced_device_add_its_events_only_under_its_own_key(tmp_path, monkeypatch, capsys):
    """The laptop's key is pinned on the CI box and the workstation through sync. The laptop's
    own bundle brings its unsynced events to the CI box; the CI box's bundle relays the laptop's
    events: the ones a device already holds are fine, new ones signed only by the CI box are not,
    until sync brought them."""
    folder, devs = make_world(str(tmp_path), monkeypatch, capsys)
    lap, ci, ws = devs["laptop"], devs["ci"], devs["workstation"]
    lap_id = lap.device_id()
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    for d in (ci, ws):
        assert d.cli(monkeypatch, capsys, "sync", folder, "--pull-only")[0] == 0
        assert d.count("device_id = ?", (lap_id,)) == 10
    lap.capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["ci"][:2]])
    # the laptop's own bundle, signed by the pinned key: accepted on the CI box
    lap_zip, ci_zip = str(tmp_path / "lap.zip"), str(tmp_path / "ci.zip")
    assert lap.cli(monkeypatch, capsys, "bundle", "export", lap_zip)[0] == 0
    code, out, err = ci.cli(monkeypatch, capsys, "bundle", "import", lap_zip)
    assert code == 0 and out.startswith("imported 2 events (10 already stored)"), out + err
    code, out, err = ci.cli(monkeypatch, capsys, "verify")
    assert code == 0 and "2 events of " + lap_id + " are newer than its last signed segment" in " ".join(err.split()), \
        out + err  # (a note wrapped to the terminal)
    # the CI box re-exports everything it holds, signed by its own key
    assert ci.cli(monkeypatch, capsys, "bundle", "export", ci_zip)[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "bundle", "import", ci_zip)  # its own events are all stored
    assert code == 0 and out.startswith("imported 11 events (12 already stored)"), out + err
    before = ws.count()
    code, out, _ = ws.cli(monkeypatch, capsys, "bundle", "import", ci_zip)  # 2 laptop events it does not have
    out = out.replace("\n  ", " ")  # wrapped to the terminal: one line again
    assert code == 1 and out.startswith(f"problem[bundle.device_key]: it holds 2 events of {lap_id} "), out
    assert ws.count() == before  # nothing of the bundle, not even the CI box's own events
    # once sync brought the laptop's events, the relayed bundle imports
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    assert ws.cli(monkeypatch, capsys, "sync", folder, "--pull-only")[0] == 0
    code, out, err = ws.cli(monkeypatch, capsys, "bundle", "import", ci_zip)
    assert code == 0 and out.startswith("imported 11 events (12 already stored)"), out + err
    # the CI box's bundle copies are the bytes the laptop signed: its pull agrees, verify is clean
    code, out, err = ci.cli(monkeypatch, capsys, "sync", folder, "--pull-only")
    assert code == 0, out + err
    for d in (lap, ci, ws):
        code, out, err = d.cli(monkeypatch, capsys, "verify")
        assert code == 0 and out.startswith("ok:"), (d.name, out + err)
