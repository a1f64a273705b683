"""Sync after the things that happen to real machines (spec/sync.md): a lost key replaced
(`keys init --replace-lost`), a copied home directory or an older copy of the file pushing
under the device's name, `attempt recover` keeping the pins and revocations, and a teammate's
content bundle meeting its sync segments."""

import json
import os
import shutil

import pytest
from sync_world import Device, events_by_device

from attemptdb.integrity import keys
from attemptdb.integrity import segments as segment
from attemptdb.store import location
from attemptdb.store.database import Store


def _key_dir(dev, monkeypatch) -> str:
    for k, v in dev.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("ATTEMPTDB_KEY_DIR", raising=False)  # as Device.cli runs it
    return location.key_dir()


def _world(tmp_path, monkeypatch, capsys, names=("laptop", "ci")):
    folder = str(tmp_path / "shared")
    os.makedirs(folder)
    devs = {n: Device(str(tmp_path), n) for n in names}
    evs = events_by_device()
    for n, d in devs.items():
        code, _, err = d.cli(monkeypatch, capsys, "init")
        assert code == 0, err
        d.capture(evs.get(n, evs["workstation"]))
    return folder, devs


def _note(dev, monkeypatch, capsys, text):
    code, out, err = dev.cli(monkeypatch, capsys, "note", text)
    assert code == 0, out + err


def _lose_key(dev, monkeypatch):
    kd = _key_dir(dev, monkeypatch)
    backup = kd + ".lost"
    shutil.move(kd, backup)
    os.makedirs(kd, mode=0o700)
    return backup


# --- 1. a replaced key: the device's own older segments -------------------------------------

def test_after_replace_lost_push_accepts_the_own_segments_the_replaced_key_signed(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    lap = devs["laptop"]
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    old_id = json.load(open(os.path.join(folder, lap.device_id(), segment.manifest_name(1))))["signature"]["key_id"]
    _lose_key(lap, monkeypatch)
    code, out, err = lap.cli(monkeypatch, capsys, "keys", "init", "--replace-lost")
    assert code == 0, out + err
    _note(lap, monkeypatch, capsys, "after the key was replaced")
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--json")
    assert code == 0, out + err
    assert json.loads(out)["pushed"]["segments"] == 1
    m2 = json.load(open(os.path.join(folder, lap.device_id(), segment.manifest_name(2))))
    assert m2["signature"]["key_id"] not in (old_id,)


def test_a_segment_the_replaced_key_signs_beyond_what_it_vouches_for_is_refused(tmp_path, monkeypatch, capsys):
    """A lost key may have been stolen: a segment it signs over events the file did not hold
    when the key was replaced is someone else writing under our name."""
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    lap = devs["laptop"]
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    backup = _lose_key(lap, monkeypatch)
    assert lap.cli(monkeypatch, capsys, "keys", "init", "--replace-lost")[0] == 0
    _note(lap, monkeypatch, capsys, "after the key was replaced")  # beyond the old key's rows
    # the thief publishes the new event with the old key
    lost = keys.load(lap.device_id()[4:], backup)
    monkeypatch.setattr(keys, "load", lambda *a, **k: lost)
    from attemptdb.sync import folder as sync_folder
    st = Store.open(lap.db)
    try:
        sync_folder.push(st, folder, lost)
    finally:
        st.close()
    monkeypatch.undo()
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder)
    assert code == 1 and "error[sync.key_mismatch]" in err and "does not vouch for" in err, out + err


# --- 2. verify with a replaced or a wrong key ------------------------------------------------

def test_verify_after_replace_lost_names_the_replaced_key_and_a_wrong_key_as_itself(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    lap = devs["laptop"]
    assert lap.cli(monkeypatch, capsys, "checkpoint")[0] == 0
    backup = _lose_key(lap, monkeypatch)
    old_id = keys.load(lap.device_id()[4:], backup).identity
    assert lap.cli(monkeypatch, capsys, "keys", "init", "--replace-lost")[0] == 0
    assert lap.cli(monkeypatch, capsys, "checkpoint", "--adopt")[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "verify")
    assert code == 0, out + err
    assert f"signed by the previous key {old_id} are checked against its public key" in " ".join((out + err).split())
    # a wrong key file: reported as that, not as checkpoints with bad signatures
    kd = _key_dir(lap, monkeypatch)
    os.unlink(keys.key_path(lap.device_id()[4:], kd))
    wrong = keys.create(lap.device_id()[4:], kd)[0]
    code, out, err = lap.cli(monkeypatch, capsys, "verify", "--json")
    rep = json.loads(out)
    assert code == 1
    kinds = [p["kind"] for p in rep["problems"]]
    assert "key_mismatch" in kinds and set(kinds) <= {"key_mismatch", "checkpoint_signature"}, rep["problems"]
    assert wrong.identity in next(p["message"] for p in rep["problems"] if p["kind"] == "key_mismatch")
    assert not any("bad signature" in p["message"] for p in rep["problems"]), rep["problems"]
    assert all("the key the file records" in p["message"] for p in rep["problems"] if p["kind"] != "key_mismatch")


# --- 5. another copy of this device, or an older copy of the file ---------------------------

def test_a_copied_home_that_published_first_stops_the_originals_push(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    a = devs["laptop"]
    assert a.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    r = Device(str(tmp_path), "copy")
    shutil.rmtree(r.home)
    shutil.copytree(a.home, r.home)  # the same device id and key
    _note(r, monkeypatch, capsys, "the copy's own note")
    assert r.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    _note(a, monkeypatch, capsys, "the original's own note")  # the same source_seq, another event
    before = sorted(os.listdir(os.path.join(folder, a.device_id())))
    code, out, err = a.cli(monkeypatch, capsys, "sync", folder)
    assert code == 1 and "error[sync.own_diverged]" in err, out + err
    assert "publishes source_seq" in err and "Nothing was pushed" in err
    assert sorted(os.listdir(os.path.join(folder, a.device_id()))) == before


def test_a_file_restored_from_an_older_copy_does_not_reuse_published_numbers(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    a = devs["laptop"]
    old = str(tmp_path / "backup")
    shutil.copytree(a.home, old)  # the whole home directory: the file, its key, its checkpoint copy
    _note(a, monkeypatch, capsys, "published, then the file was restored")
    assert a.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    shutil.rmtree(a.home)
    shutil.copytree(old, a.home)
    _note(a, monkeypatch, capsys, "written after the restore")
    code, out, err = a.cli(monkeypatch, capsys, "sync", folder)
    assert code == 1 and "error[sync.own_diverged]" in err, out + err


def test_the_usual_pushes_pass_the_check(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    a = devs["laptop"]
    for content in ([], ["--include-content"], []):
        _note(a, monkeypatch, capsys, "one more")
        code, out, err = a.cli(monkeypatch, capsys, "sync", folder, *content)
        assert code == 0, out + err
    assert len(segment.list_segments(os.path.join(folder, a.device_id()))[0]) == 3


# --- 3. the recovery note and a replaced or wrong key ----------------------------------------

def _damage_events_page(db):
    """Flip one leaf page of the events table in the middle (its cell pointers too): rows lost."""
    import apsw
    conn = apsw.Connection(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    leaves = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' "
                                         "ORDER BY pageno")]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert len(leaves) >= 3, leaves
    page = leaves[len(leaves) // 2]
    with open(db, "r+b") as f:
        f.seek((page - 1) * size + 8)
        f.write(b"\xff" * 6)
        f.seek((page - 1) * size + 200)
        f.write(b"\xa5" * 64)


def _bigger(dev):
    evs = events_by_device()
    for who in ("laptop", "ci", "workstation"):
        dev.capture([dict(e, event_id=e["event_id"][:-4] + "f00d") for e in evs[who]])


def test_a_recovery_note_signed_by_a_since_replaced_key_is_vouched_for(tmp_path, monkeypatch, capsys):
    from attemptdb.integrity import recovery
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    lap = devs["laptop"]
    device = lap.device_id()[4:]
    backup = _lose_key(lap, monkeypatch)
    old = keys.load(device, backup)
    assert lap.cli(monkeypatch, capsys, "keys", "init", "--replace-lost")[0] == 0
    new = keys.load(device, _key_dir(lap, monkeypatch))
    upto = new.previous[0].upto
    within = recovery.parse(recovery.sign(old, device, upto, None, [(2, 3, None)], "2026-01-01T00:00:00.000000Z"))
    beyond = recovery.parse(recovery.sign(old, device, upto, None, [(upto, upto + 1, None)],
                                          "2026-01-01T00:00:00.000000Z"))
    assert recovery.check(within, new, device)
    assert not recovery.check(beyond, new, device)  # a stolen key declares no row it never vouched for
    assert recovery.check(recovery.parse(recovery.sign(new, device, 99, None, [(1, 1, None)], "t")), new, device)


def test_recover_never_signs_its_note_with_a_wrong_key(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    lap = devs["laptop"]
    _bigger(lap)
    assert lap.cli(monkeypatch, capsys, "checkpoint")[0] == 0
    _damage_events_page(lap.db)
    kd = _key_dir(lap, monkeypatch)
    device = lap.device_id()[4:]
    os.unlink(keys.key_path(device, kd))
    wrong = keys.create(device, kd)[0]
    out = str(tmp_path / "rec.db")
    code, text, err = lap.cli(monkeypatch, capsys, "recover", "--out", out, "--json")
    rep = json.loads(text)
    assert rep["lost_rows"] > 0 and rep["recovery_note_signed"] is False, rep
    assert any("could not be signed: error[keys.mismatch]" in n for n in rep["notes"]), rep["notes"]
    st = Store.open(out, readonly=True)
    try:
        assert wrong.identity not in st.meta("recovery")
    finally:
        st.close()


# --- 4. recover keeps the pins, revocations and kept manifests -------------------------------

@pytest.fixture
def revoked(tmp_path, monkeypatch, capsys):
    """Laptop and CI sync through a folder with the workstation, which then revoked the CI box;
    the CI box published more afterwards."""
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop", "ci", "workstation"))
    lap, ci, ws = devs["laptop"], devs["ci"], devs["workstation"]
    for d in (lap, ci, ws):
        assert d.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    assert ws.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    assert ws.cli(monkeypatch, capsys, "keys", "revoke", ci.device_id())[0] == 0
    _note(ci, monkeypatch, capsys, "after the revocation")
    _note(lap, monkeypatch, capsys, "laptop goes on")
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    return folder, lap, ci, ws


def _pins(dev, monkeypatch, capsys, db):
    code, out, err = dev.cli(monkeypatch, capsys, "keys", "list", "--json", "--db", db)
    assert code == 0, out + err
    return {r["device_id"]: r for r in json.loads(out)}


def test_recover_keeps_the_pins_and_a_revoked_device_stays_revoked(revoked, tmp_path, monkeypatch, capsys):
    folder, lap, ci, ws = revoked
    before = _pins(ws, monkeypatch, capsys, ws.db)
    out = str(tmp_path / "rec.db")
    code, text, err = ws.cli(monkeypatch, capsys, "recover", "--out", out, "--json")
    assert code == 0, text + err
    rep = json.loads(text)
    after = _pins(ws, monkeypatch, capsys, out)
    assert after == before and after[ci.device_id()]["revoked"] is True
    assert rep["sync"]["pins"] == 2 and rep["sync"]["revoked"] == 1 and rep["warnings"] == []
    ci_events = ws.count("device_id = ?", (ci.device_id(),))
    code, text, err = ws.cli(monkeypatch, capsys, "sync", folder, "--db", out, "--json")
    rep = json.loads(text)
    assert code == 1 and [p["code"] for p in rep["problems"]] == ["sync.key_revoked"], rep
    assert rep["pulled"][lap.device_id()]["accepted"] >= 1  # the laptop's new event, nothing re-imported
    st = Store.open(out, readonly=True)
    try:
        assert st.conn.execute("SELECT count(*) FROM events WHERE device_id = ?", (ci.device_id(),)).fetchone()[0] \
            == ci_events
    finally:
        st.close()
    code, text, err = ws.cli(monkeypatch, capsys, "verify", "--db", out)
    assert code == 0 and "other devices proven" in err, text + err


def test_pins_that_cannot_be_read_make_every_first_use_wait_for_keys_trust(revoked, tmp_path, monkeypatch, capsys):
    import apsw
    folder, lap, ci, ws = revoked
    conn = apsw.Connection(ws.db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sync_keys'").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(ws.db, "r+b") as f:  # the pins' page is garbage
        f.seek((page - 1) * size)
        f.write(b"\x42" * size)
    out = str(tmp_path / "rec.db")
    code, text, err = ws.cli(monkeypatch, capsys, "recover", "--out", out, "--json")
    rep = json.loads(text)
    assert [w["code"] for w in rep["warnings"]] == ["recover.sync_pins_unreadable"], rep
    assert rep["sync"]["pins_unreadable"] is True
    code, text, err = ws.cli(monkeypatch, capsys, "recover", "--out", str(tmp_path / "rec2.db"))
    assert "warning[recover.sync_pins_unreadable]" in text + err and "keys trust" in text + err
    code, text, err = ws.cli(monkeypatch, capsys, "sync", folder, "--db", out, "--json")
    rep = json.loads(text)
    assert code == 1 and {p["code"] for p in rep["problems"]} == {"sync.pin_unconfirmed"}, rep
    assert {p["device"] for p in rep["problems"]} == {lap.device_id(), ci.device_id()}
    assert _pins(ws, monkeypatch, capsys, out) == {} or all(
        not r["key_id"] for r in _pins(ws, monkeypatch, capsys, out).values())
    # the user vouches for the laptop; the CI box stays out
    lap_key = json.load(open(os.path.join(folder, lap.device_id(), segment.manifest_name(1))))["signature"]["key_id"]
    assert ws.cli(monkeypatch, capsys, "keys", "trust", lap.device_id(), lap_key, "--db", out)[0] == 0
    code, text, err = ws.cli(monkeypatch, capsys, "sync", folder, "--db", out, "--json")
    rep = json.loads(text)
    assert [p["device"] for p in rep["problems"]] == [ci.device_id()], rep
    assert rep["pulled"][lap.device_id()]["accepted"] >= 1


# --- 6. a teammate's content bundle, then its sync segments ----------------------------------

def test_a_content_bundle_of_a_teammate_warns_and_the_conflict_says_what_to_do(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys)
    lap, ci = devs["laptop"], devs["ci"]
    bundle = str(tmp_path / "ci.bundle")
    code, out, err = ci.cli(monkeypatch, capsys, "bundle", "export", bundle, "--include-content")
    assert code == 0, out + err
    code, out, err = lap.cli(monkeypatch, capsys, "bundle", "import", bundle, "--json")
    assert code == 0, out + err
    notes = json.loads(out)["notes"]
    assert any(f"events of {ci.device_id()} were imported with their content" in n and "sync.conflict" in n
               for n in notes), notes
    # its default sync segments then conflict, and the message says how to go on
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--json")
    rep = json.loads(out)
    assert code == 1 and [p["code"] for p in rep["problems"]] == ["sync.conflict"], rep
    msg = rep["problems"][0]["message"]
    assert "To go on" in msg and "--include-content to a new folder" in msg and "bundle" in msg
    # the first way on works: the device publishes its content to a new folder, pulled from there
    other = str(tmp_path / "shared-content")
    os.makedirs(other)
    assert ci.cli(monkeypatch, capsys, "sync", other, "--include-content")[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "sync", other, "--json")
    assert code == 0, out + err
    code, out, err = lap.cli(monkeypatch, capsys, "verify")
    assert code == 0, out + err


def test_a_default_bundle_of_a_teammate_adds_no_warning(tmp_path, monkeypatch, capsys):
    folder, devs = _world(tmp_path, monkeypatch, capsys)
    lap, ci = devs["laptop"], devs["ci"]
    bundle = str(tmp_path / "ci.bundle")
    assert ci.cli(monkeypatch, capsys, "bundle", "export", bundle)[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "bundle", "import", bundle, "--json")
    assert code == 0 and not any("sync.conflict" in n for n in json.loads(out)["notes"]), out
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0


def test_a_teammate_that_replaced_its_key_is_pulled_whole_after_keys_trust(tmp_path, monkeypatch, capsys):
    """The CI box published a segment with its old key that the laptop had not pulled yet, then
    replaced its lost key and published with the new one: after `keys trust` of the new key,
    the new key's segment vouches (through the chain) for the old key's segment before it."""
    folder, devs = _world(tmp_path, monkeypatch, capsys)
    lap, ci = devs["laptop"], devs["ci"]
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0  # pins the old key
    _note(ci, monkeypatch, capsys, "signed by the old key, not pulled yet")
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    _lose_key(ci, monkeypatch)
    code, out, err = ci.cli(monkeypatch, capsys, "keys", "init", "--replace-lost", "--json")
    assert code == 0, out + err
    _note(ci, monkeypatch, capsys, "signed by the new key")
    assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    new_id = json.load(open(os.path.join(folder, ci.device_id(), segment.manifest_name(3))))["signature"]["key_id"]
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--json")
    assert code == 1 and [p["code"] for p in json.loads(out)["problems"]] == ["sync.key_mismatch"]
    assert lap.cli(monkeypatch, capsys, "keys", "trust", ci.device_id(), new_id)[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--json")
    assert code == 0, out + err
    assert json.loads(out)["pulled"][ci.device_id()]["segments"] == 2
    code, out, err = lap.cli(monkeypatch, capsys, "verify")
    assert code == 0, out + err


def test_an_earlier_key_segment_after_the_trusted_keys_own_is_refused(tmp_path, monkeypatch, capsys):
    from sync_world import forge_segment, teammate_key
    folder, devs = _world(tmp_path, monkeypatch, capsys, names=("laptop",))
    lap = devs["laptop"]
    dev = "dev_00000000-0000-4000-8000-0000000000aa"
    ddir = os.path.join(folder, dev)
    evs = events_by_device()["ci"]
    from attemptdb.model import event as ev
    lines = [ev.line(ev.canonical(dict(e, device_id=dev[4:], source_seq=i + 1, hlc=i + 1,
                                       capture_mode="metadata_only"))).encode()
             for i, e in enumerate(evs[:3])]
    new = teammate_key(str(tmp_path / "k1"))
    old = keys.create("00000000-0000-4000-8000-0000000000bb", str(tmp_path / "k2"))[0]
    from attemptdb.integrity import chain
    h1 = forge_segment(ddir, dev, 1, chain.GENESIS, lines[:1], new, first_source_seq=1, last_source_seq=1)
    forge_segment(ddir, dev, 2, h1, lines[1:2], old, first_source_seq=2, last_source_seq=2)
    assert lap.cli(monkeypatch, capsys, "keys", "trust", dev, new.identity)[0] == 0
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--pull-only", "--json")
    probs = json.loads(out)["problems"]
    assert code == 1 and [(p["code"], p["segment"]) for p in probs] == [("sync.key_mismatch", 2)], out
