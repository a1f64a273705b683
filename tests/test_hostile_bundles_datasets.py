"""Hostile input to bundle import and the team dataset reader: a bundle anyone signed
must not add events as this device's own, nor as those of a device whose key is pinned (sync,
`keys trust`), and damaged Parquet files are coded errors, never a traceback."""

import hashlib
import json
import os
import uuid
import zipfile

import pytest
from conftest import run_attempt, signed_demo
from sync_world import Device, events_by_device

from attemptdb.exchange import bundle
from attemptdb.integrity import keys
from attemptdb.model import event, fastjson


def attempt(*args):
    p = run_attempt(list(args))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def device_of(db):
    code, out, _ = attempt("events", "--jsonl", "--db", db)
    assert code == 0, out
    return json.loads(out.splitlines()[0])["device_id"]


def count_events(db):
    code, out, _ = attempt("events", "--jsonl", "--db", db, "-n", "1000000")
    assert code == 0
    return len(out.splitlines())


def resigned(src, dst, edit):
    """`src`'s bundle with `edit(env)` applied to every line, signed by a key nobody pinned:
    what anyone can make."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    priv = Ed25519PrivateKey.generate()
    pub = priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    key = keys.DeviceKey(pub, priv)
    with zipfile.ZipFile(src) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    m = json.loads(files.pop(bundle.MANIFEST))
    m.pop("checkpoint", None)
    m.pop("consistency", None)
    for f in m["files"]:
        lines = []
        for text in files[f["path"]].decode().splitlines():
            env = json.loads(text)
            edit(env)
            lines.append(event.line(event.canonical(env)))
        data = ("\n".join(lines) + "\n").encode()
        files[f["path"]] = data
        f["sha256"], f["size_bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    files[bundle.MANIFEST] = (fastjson.dumps(bundle.sign_manifest(m, key)) + "\n").encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in files.items():
            zf.writestr(n, d)


def stranger_bundle(src, dst, device, shift=1000):
    """`src`'s events re-issued as events of `device` (new ids, source_seq `shift` ahead),
    signed by a key nobody pinned."""
    def reissue(env):
        env["device_id"], env["event_id"] = device, str(uuid.uuid4())
        env["source_seq"] += shift
    resigned(src, dst, reissue)


def test_a_bundle_signed_by_anyone_does_not_add_events_as_this_devices_own(tmp_path, home):
    src, mine = str(tmp_path / "src.db"), str(tmp_path / "mine.db")
    signed_demo(src)  # its key kept: the bundle is signed by it
    assert attempt("run", "--db", mine, "--", "echo", "hi")[0] == 0
    exported = str(tmp_path / "b.zip")
    assert attempt("bundle", "export", exported, "--include-content", "--db", src)[0] == 0
    forged = str(tmp_path / "forged.zip")
    stranger_bundle(exported, forged, device_of(mine))
    code, out, _ = attempt("bundle", "verify", forged)
    assert code == 0 and out.startswith("ok:")  # a valid signature: just not this device's
    before = count_events(mine)
    code, out, err = attempt("bundle", "import", forged, "--db", mine)
    assert code == 1 and out.startswith("problem[bundle.device_key]:") and "this device" in out, (out, err)
    assert "Traceback (most recent call last)" not in err
    assert count_events(mine) == before
    # nothing forged is signed and published by this device's sync
    folder = tmp_path / "sync"
    folder.mkdir()
    code, out, err = attempt("sync", str(folder), "--db", mine)
    assert code == 0, (out, err)
    assert f"pushed {before} events" in out.replace("\n  ", " ")  # wrapped to the terminal: one line again


def test_this_devices_own_bundle_and_a_relayed_one_still_import(tmp_path, home):
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    signed_demo(a)
    assert attempt("run", "--db", b, "--", "echo", "hi")[0] == 0
    a_zip, b_zip = str(tmp_path / "a.zip"), str(tmp_path / "b.zip")
    assert attempt("bundle", "export", a_zip, "--db", a)[0] == 0
    assert attempt("bundle", "import", a_zip, "--db", b)[0] == 0
    # b's bundle holds a's events again (signed by b): they are already stored in a
    assert attempt("bundle", "export", b_zip, "--db", b)[0] == 0
    code, out, err = attempt("bundle", "import", b_zip, "--db", a)
    assert code == 0 and out.startswith("imported "), (out, err)
    # a's own bundle, signed by a's key, back into a
    code, out, err = attempt("bundle", "import", a_zip, "--db", a)
    assert code == 0 and "already stored" in out, (out, err)


def pinned_world(tmp_path, monkeypatch, capsys, *, pin_by_sync=True):
    """The laptop published its events; the CI box pulled them (the laptop's key pinned there on
    first use) or, without `pin_by_sync`, pinned the laptop's key with `keys trust` only."""
    folder = str(tmp_path / "shared")
    os.makedirs(folder)
    lap, ci = Device(str(tmp_path), "laptop"), Device(str(tmp_path), "ci")
    evs = events_by_device()
    for d in (lap, ci):
        assert d.cli(monkeypatch, capsys, "init")[0] == 0
        d.capture(evs[d.name])
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    if pin_by_sync:
        assert ci.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    else:
        code, out, _ = lap.cli(monkeypatch, capsys, "keys", "show", "--json")
        assert code == 0, out
        assert ci.cli(monkeypatch, capsys, "keys", "trust", lap.device_id(), json.loads(out)["key_id"])[0] == 0
    return folder, lap, ci


def forged_of(tmp_path, monkeypatch, capsys, lap, shift):
    """The laptop's own bundle, its events re-issued under new ids by a stranger's key."""
    exported, forged = str(tmp_path / f"lap{shift}.zip"), str(tmp_path / f"forged{shift}.zip")
    assert lap.cli(monkeypatch, capsys, "bundle", "export", exported, "--force")[0] == 0
    stranger_bundle(exported, forged, lap.device_id()[4:], shift=shift)
    return forged


@pytest.mark.parametrize("shift", [0, 1000], ids=["inside_signed_range", "beyond_signed_range"])
def test_a_bundle_signed_by_anyone_does_not_add_events_of_a_device_pinned_by_sync(tmp_path, monkeypatch, capsys,
                                                                                 shift):
    folder, lap, ci = pinned_world(tmp_path, monkeypatch, capsys)
    lap_id = lap.device_id()
    assert ci.rows("SELECT how FROM sync_keys WHERE device_id = ?", (lap_id,)) == [("first_use",)]
    forged = forged_of(tmp_path, monkeypatch, capsys, lap, shift)
    before, segments = ci.count(), ci.rows("SELECT * FROM sync_segments")
    code, out, err = ci.cli(monkeypatch, capsys, "bundle", "import", forged)
    assert code == 1, (out, err)
    out = out.replace("\n  ", " ")  # wrapped to the terminal: one line again
    assert out.startswith(f"problem[bundle.device_key]: it holds 10 events of {lap_id} ") and "pinned" in out
    assert "Traceback" not in err
    code, out, _ = ci.cli(monkeypatch, capsys, "bundle", "import", forged, "--json")
    rep = json.loads(out)
    assert code == 1 and rep["code"] == "bundle.device_key" and lap_id in rep["problems"][0]
    assert ci.count() == before and ci.rows("SELECT * FROM sync_segments") == segments
    # nothing of it is left to haunt verify or the next sync
    code, out, err = ci.cli(monkeypatch, capsys, "verify")
    assert code == 0 and out.startswith("ok:"), out + err
    lap.capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["workstation"][:2]])
    assert lap.cli(monkeypatch, capsys, "sync", folder)[0] == 0
    code, out, err = ci.cli(monkeypatch, capsys, "sync", folder)
    assert code == 0 and ", 2 new events" in out, out + err
    assert ci.cli(monkeypatch, capsys, "verify")[0] == 0


def test_a_key_pinned_with_keys_trust_guards_bundle_import_too(tmp_path, monkeypatch, capsys):
    folder, lap, ci = pinned_world(tmp_path, monkeypatch, capsys, pin_by_sync=False)
    lap_id = lap.device_id()
    forged = forged_of(tmp_path, monkeypatch, capsys, lap, 0)
    code, out, _ = ci.cli(monkeypatch, capsys, "bundle", "import", forged)
    assert code == 1 and out.startswith("problem[bundle.device_key]:") and lap_id in out, out
    assert ci.count("device_id = ?", (lap_id,)) == 0
    # the laptop's own bundle, signed by the pinned key: its events come in
    own = str(tmp_path / "lap-own.zip")
    assert lap.cli(monkeypatch, capsys, "bundle", "export", own)[0] == 0
    code, out, err = ci.cli(monkeypatch, capsys, "bundle", "import", own)
    assert code == 0 and out.startswith("imported 10 events"), out + err
    # a revoked key adds nothing new, even to its own device; what is stored stays importable
    assert ci.cli(monkeypatch, capsys, "keys", "revoke", lap_id)[0] == 0
    code, out, err = ci.cli(monkeypatch, capsys, "bundle", "import", own)
    assert code == 0 and "(10 already stored)" in out, out + err
    lap.capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["workstation"][:2]])
    assert lap.cli(monkeypatch, capsys, "bundle", "export", own, "--force")[0] == 0
    code, out, _ = ci.cli(monkeypatch, capsys, "bundle", "import", own)
    out = out.replace("\n  ", " ")  # wrapped to the terminal: one line again
    assert code == 1 and out.startswith(f"problem[bundle.device_key]: it holds 2 events of {lap_id} ") \
        and "revoked" in out, out
    assert ci.count("device_id = ?", (lap_id,)) == 10


def damage_footer_length(path):
    data = bytearray(open(path, "rb").read())
    for i in range(len(data) - 8, len(data) - 4):
        data[i] ^= 0xA5
    open(path, "wb").write(bytes(data))  # same size: the size check alone passes it


def test_a_damaged_parquet_footer_in_the_team_dataset_is_a_coded_error(tmp_path, home):
    pytest.importorskip("pyarrow")
    pytest.importorskip("datafusion")
    db, ds = str(tmp_path / "a.db"), str(tmp_path / "ds")
    signed_demo(db)
    assert attempt("export", "--dataset", ds, "--db", db)[0] == 0
    for table in ("events", "sessions"):
        root = os.path.join(ds, table)
        part = next(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet"))
        saved = open(part, "rb").read()
        damage_footer_length(part)
        code, out, err = attempt("query", "--engine", "datafusion", "--from", ds, f"SELECT count(*) FROM {table}")
        assert code == 1 and "error[dataset.file_changed]" in err, (out, err)
        assert "Traceback (most recent call last)" not in err
        open(part, "wb").write(saved)
    code, out, err = attempt("query", "--engine", "datafusion", "--from", ds, "SELECT count(*) FROM sessions")
    assert code == 0, err


def test_a_damaged_parquet_footer_in_an_export_is_a_coded_error(tmp_path, home):
    pytest.importorskip("pyarrow")
    pytest.importorskip("datafusion")
    db, out_dir = str(tmp_path / "a.db"), str(tmp_path / "exp")
    signed_demo(db)
    assert attempt("export", "--format", "parquet", out_dir, "--db", db)[0] == 0
    damage_footer_length(os.path.join(out_dir, "sessions.parquet"))
    code, out, err = attempt("query", "--engine", "datafusion", "--from", out_dir, "SELECT count(*) FROM sessions")
    assert code == 2 and "error[query.bad_export]" in err, (out, err)
    assert "Traceback (most recent call last)" not in err


def _zip_of(path, names):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name in names:
            zf.writestr(name, b"")


def test_a_file_index_of_too_many_members_is_refused_before_it_is_read(tmp_path):
    """zipfile builds an object for every record of the index before anyone can count them: a
    bundle's own count is taken record by record, with bounded memory, and stops at the first
    too many (the zip64 end record included: more than 65,535 members)."""
    many = str(tmp_path / "many.zip")
    _zip_of(many, (str(i) for i in range(bundle.MAX_MEMBERS + 1)))
    rep = bundle.verify(many)
    assert not rep.ok and rep.problems[0].startswith(f"more than {bundle.MAX_MEMBERS:,} files")
    assert "file index" in rep.problems[0]  # counted in the index, before zipfile read it


def test_a_large_index_within_the_member_limit_is_read_as_before(tmp_path):
    fewer = str(tmp_path / "fewer.zip")
    names = [f"sessions/{uuid.UUID(int=i)}.jsonl/{'x' * 40}" for i in range(90_000)]
    _zip_of(fewer, names)
    assert len(names) * (46 + len(names[0])) > bundle.MAX_MEMBERS * 46  # counted, not just sized
    rep = bundle.verify(fewer)
    assert not rep.ok and not any(p.startswith("more than") for p in rep.problems)
    assert any("manifest" in p for p in rep.problems)
