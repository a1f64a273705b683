"""Evidence bundles (spec/bundle.md): export, offline verify, import — and every way a hostile
or damaged bundle must be caught before anything is written."""

import hashlib
import json
import os
import zipfile

import pytest
from conftest import needs_shell, run_attempt, sqlite3_shell

from attemptdb.cli.main import run
from attemptdb.devtools import synth
from attemptdb.exchange import bundle
from attemptdb.integrity import keys
from attemptdb.model import fastjson
from attemptdb.store.database import Store


def make_db(db, n=400, seed=7):
    st = Store.open(db)
    st.append(list(synth.generate(n, seed=seed)))
    st.close()


def cli(capsys, *args):
    capsys.readouterr()
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(capsys, db, *scope):
    code, out, _ = cli(capsys, "events", "--jsonl", "--db", db, *scope)
    assert code == 0
    return out.splitlines()


def members(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def write_zip(path, files):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)


def manifest_of(files):
    return json.loads(files[bundle.MANIFEST])


def rebuild(src, dst, *, edit_member=None, edit_manifest=None, key=None, rehash=True):
    """Copy bundle `src` to `dst`, changing members and/or the manifest; with `key` the manifest
    is signed again (as an attacker holding some key would), after file hashes are recomputed
    when `rehash`."""
    files = members(src)
    if edit_member:
        edit_member(files)
    m = manifest_of(files)
    if rehash:  # what an attacker re-signing the bundle would also fix
        for f in m["files"]:
            if f["path"] in files:
                data = files[f["path"]]
                f["sha256"] = hashlib.sha256(data).hexdigest()
                f["size_bytes"] = len(data)
                f["events"] = data.count(b"\n")
        m["events"] = sum(f["events"] for f in m["files"])
    if edit_manifest:
        edit_manifest(m)
    if key is not None:
        m = bundle.sign_manifest(m, key)
    files[bundle.MANIFEST] = fastjson.dumps(m).encode()
    write_zip(dst, files)
    return dst


@pytest.fixture
def source(db):
    make_db(db)
    return db


@pytest.fixture
def exported(source, tmp_path, capsys):
    out = str(tmp_path / "b.zip")
    code, _, err = cli(capsys, "bundle", "export", out, "--db", source, "--include-content")
    assert code == 0, err
    return out


@pytest.fixture
def own_key(source):
    st = Store.open(source)
    k = keys.load(st.device_id)
    st.close()
    return k


@pytest.fixture
def other_key(tmp_path):
    k, _ = keys.create("11111111-2222-7333-8444-555555555555", str(tmp_path / "otherkeys"))
    return k


def unwrapped(text: str) -> str:
    """A command's messages one to a line again: they are wrapped to the terminal (continuation
    lines indented by two spaces, termtable.prose)."""
    return text.replace("\n  ", " ")


def verify_cli(capsys, path, *extra):
    code, out, err = cli(capsys, "bundle", "verify", path, *extra)
    return code, unwrapped(out), unwrapped(err)


def expect_problem(capsys, path, fragment, *extra):
    code, out, err = verify_cli(capsys, path, *extra)
    assert code == 1, out + err
    first = out.splitlines()[0]
    assert first.startswith("problem[bundle.") and fragment in first, out
    return out


# --- export and round trip -------------------------------------------------------------------

def test_round_trip_with_content_is_byte_exact(exported, source, tmp_path, capsys):
    code, out, _ = verify_cli(capsys, exported)
    assert code == 0 and out.startswith("ok: bundle bun_") and "400 events" in out
    assert "not pinned" in out
    fresh = str(tmp_path / "fresh.db")
    code, out, err = cli(capsys, "bundle", "import", exported, "--db", fresh)
    assert code == 0, err
    assert out.startswith("imported 400 events (0 already stored)")
    assert sorted(jsonl(capsys, fresh)) == sorted(jsonl(capsys, source))
    code, out, _ = cli(capsys, "verify", "--db", fresh)
    assert code == 0, out
    # idempotent: a second import, or one into the source, stores nothing new
    for target in (fresh, source):
        code, out, _ = cli(capsys, "bundle", "import", exported, "--db", target, "--json")
        rep = json.loads(out)
        assert code == 0 and rep["accepted"] == 0 and rep["duplicates"] == 400 and rep["ok"]


def test_a_file_whose_pins_recover_could_not_read_takes_no_unpinned_device_from_a_bundle(
        exported, source, own_key, tmp_path, capsys):
    """`attempt recover` marks a file whose pins it could not read whole (a revoked device's pin
    may be lost): sync then pins nothing on first use, and a bundle may not add new events of a
    device without a pin either, until `attempt keys trust` pins it."""
    from attemptdb.integrity import sync_state
    target = str(tmp_path / "recovered.db")
    st = Store.open(target)
    st.set_meta(sync_state.PINS_UNCONFIRMED, "2026-12-07T00:00:00.000000Z")
    st.close()
    code, out, err = cli(capsys, "bundle", "import", exported, "--db", target, "--json")
    rep = json.loads(out)
    assert code == 1 and rep["code"] == "bundle.pin_unconfirmed" and "keys trust" in rep["problems"][0], rep
    st = Store.open(target)
    assert st.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0  # nothing written
    st.close()
    src = Store.open(source)
    devices = [r[0] for r in src.conn.execute("SELECT DISTINCT device_id FROM events")]
    src.close()
    assert len(rep["problems"]) == len(devices)  # each device named
    for device in devices:  # the synthetic history's devices, whose events the source's key signed
        assert cli(capsys, "keys", "trust", device, own_key.identity, "--db", target)[0] == 0
    code, out, err = cli(capsys, "bundle", "import", exported, "--db", target)
    assert code == 0 and out.startswith("imported 400 events"), out + err


def test_content_a_file_already_holds_without_is_not_added_and_the_import_says_so(exported, source, tmp_path, capsys):
    """Events stored from a default bundle (content left out) are duplicates when a content
    bundle of the same events comes: they stay as stored, and the import says their content was
    not added instead of only counting them as already stored."""
    plain = str(tmp_path / "plain.zip")
    assert cli(capsys, "bundle", "export", plain, "--db", source)[0] == 0
    fresh = str(tmp_path / "fresh.db")
    code, out, err = cli(capsys, "bundle", "import", plain, "--db", fresh)
    assert code == 0 and "content was not added" not in unwrapped(out + err)
    code, out, err = cli(capsys, "bundle", "import", exported, "--db", fresh, "--json")
    rep = json.loads(out)
    assert code == 0 and rep["accepted"] == 0 and rep["duplicates"] == 400
    st = Store.open(source)
    with_content = st.conn.execute("SELECT count(*) FROM events WHERE content_json IS NOT NULL "
                                   "OR raw_json IS NOT NULL").fetchone()[0]
    st.close()
    assert with_content > 0
    [note] = [n for n in rep["notes"] if "content was not added" in n]
    assert note.startswith(f"{with_content:,} of the bundle's events with content are stored here already without it")
    code, out, err = cli(capsys, "bundle", "import", exported, "--db", str(tmp_path / "other.db"))
    assert code == 0 and "content was not added" not in unwrapped(out + err)  # a fresh file takes the content


def test_layout_and_manifest(exported, source, own_key, capsys):
    files = members(exported)
    m = manifest_of(files)
    assert m["schema_version"] == "attestack.bundle.v1"
    assert m["content"] is True and m["events"] == 400
    st = Store.open(source)
    size, head = st.head()
    sessions = sorted(r[0] for r in st.conn.execute("SELECT DISTINCT session_id FROM events"))
    st.close()
    assert m["chain"] == {"size": size, "head": head}
    assert m["sessions"] == sessions
    assert sorted(files) == sorted([bundle.MANIFEST] + [f"sessions/{s}/events.jsonl" for s in sessions])
    assert m["signature"]["key_id"] == own_key.identity
    assert m["signature"]["public_key"] == own_key.public_b64
    for s in sessions:  # each session file: that session's events, in chain order
        assert files[f"sessions/{s}/events.jsonl"].decode().splitlines() == jsonl(capsys, source, "--session", s)


def test_content_is_left_out_by_default(source, tmp_path, capsys):
    out = str(tmp_path / "plain.zip")
    code, msg, err = cli(capsys, "bundle", "export", out, "--db", source)
    assert code == 0, err
    assert "content left out" in msg
    files = members(out)
    assert manifest_of(files)["content"] is False
    full = {json.loads(x)["event_id"]: json.loads(x) for x in jsonl(capsys, source)}
    assert any("content" in e or "raw" in e for e in full.values())  # the source has content
    n = 0
    for name, data in files.items():
        if name == bundle.MANIFEST:
            continue
        for line in data.decode().splitlines():
            e = json.loads(line)
            n += 1
            assert "content" not in e and "raw" not in e and e["capture_mode"] == "metadata_only"
            orig = full[e["event_id"]]
            assert e.get("attrs") == orig.get("attrs") and e["kind"] == orig["kind"]
            assert e.get("tool") == orig.get("tool") and e.get("paths") == orig.get("paths")
    assert n == 400
    assert verify_cli(capsys, out)[0] == 0
    fresh = str(tmp_path / "fresh.db")
    assert cli(capsys, "bundle", "import", out, "--db", fresh)[0] == 0
    assert all("content" not in json.loads(x) for x in jsonl(capsys, fresh))


def test_scope_and_refusals(source, tmp_path, capsys):
    st = Store.open(source)
    one = st.conn.execute("SELECT session_id, count(*) FROM events GROUP BY 1 ORDER BY 2 DESC").fetchone()
    st.close()
    out = str(tmp_path / "one.zip")
    code, _, err = cli(capsys, "bundle", "export", out, "--db", source, "--session", one[0])
    assert code == 0, err
    m = manifest_of(members(out))
    assert m["sessions"] == [one[0]] and m["events"] == one[1]
    # OUT exists: refused, untouched, unless --force
    before = open(out, "rb").read()
    code, _, err = cli(capsys, "bundle", "export", out, "--db", source)
    assert code == 2 and "error[bundle.exists]" in err and open(out, "rb").read() == before
    assert cli(capsys, "bundle", "export", out, "--db", source, "--force")[0] == 0
    assert manifest_of(members(out))["events"] == 400
    # nothing in scope: no file
    empty = str(tmp_path / "empty.zip")
    code, _, err = cli(capsys, "bundle", "export", empty, "--db", source, "--since", "2099-01-01")
    assert code == 2 and "error[bundle.empty]" in err and not os.path.exists(empty)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".attempt-bundle-")]  # no temp left
    code, _, err = cli(capsys, "bundle", "export", empty, "--db", source, "--session", "ses_nope")
    assert code == 2 and "error[" in err and not os.path.exists(empty)


def test_pinned_signer(exported, own_key, other_key, tmp_path, capsys):
    code, out, _ = verify_cli(capsys, exported, "--key", own_key.identity)
    assert code == 0 and "(the key you named)" in out
    code, out, _ = verify_cli(capsys, exported, "--key", own_key.public_b64)
    assert code == 0
    expect_problem(capsys, exported, "not by the key you named", "--key", other_key.identity)
    # re-signed by another key: valid as a signature, refused once the signer is pinned
    forged = rebuild(exported, str(tmp_path / "forged.zip"), key=other_key)
    code, out, _ = verify_cli(capsys, forged)
    assert code == 0 and other_key.identity in out
    expect_problem(capsys, forged, "not by the key you named", "--key", own_key.identity)


def test_real_process(exported, tmp_path):
    p = run_attempt(["bundle", "verify", exported, "--json"])
    assert p.returncode == 0 and json.loads(p.stdout)["ok"] is True
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    p = run_attempt(["bundle", "verify", str(bad)])
    assert p.returncode == 1 and p.stdout.startswith(b"problem[bundle.not_a_bundle]: not a bundle") and b"Traceback" not in p.stderr


# --- tampering: each must be a problem, exit 1 -------------------------------------------------

def first_session_file(files):
    return sorted(n for n in files if n != bundle.MANIFEST)[0]


def edit_line(files, change):
    name = first_session_file(files)
    lines = files[name].decode().splitlines()
    e = json.loads(lines[3])
    change(e)
    lines[3] = fastjson.dumps(e)
    files[name] = ("\n".join(lines) + "\n").encode()


def test_an_edited_event_breaks_the_hash(exported, tmp_path, capsys):
    def change(files):
        edit_line(files, lambda e: e.update(observed_at=e["observed_at"] + 1))
    bad = rebuild(exported, str(tmp_path / "t.zip"), edit_member=change, rehash=False)
    expect_problem(capsys, bad, "differs from what was signed")


def test_an_edited_manifest_breaks_the_signature(exported, tmp_path, capsys):
    bad = rebuild(exported, str(tmp_path / "t.zip"), rehash=False,
                  edit_manifest=lambda m: m.update(created_at="2020-01-01T00:00:00.000000Z"))
    expect_problem(capsys, bad, "signature does not verify")
    # the same edit with the key_id of another key: the id no longer names the enclosed key
    bad = rebuild(exported, str(tmp_path / "t2.zip"), rehash=False,
                  edit_manifest=lambda m: m["signature"].update(key_id="id_" + "0" * 32))
    expect_problem(capsys, bad, "not the fingerprint of its public key")


def test_missing_and_unlisted_members(exported, own_key, tmp_path, capsys):
    bad = rebuild(exported, str(tmp_path / "m.zip"), rehash=False,
                  edit_member=lambda f: f.pop(first_session_file(f)))
    expect_problem(capsys, bad, "missing from the bundle")
    for name in ("extra.txt", "../../evil", "/etc/passwd", "sessions/x/events.jsonl"):
        bad = rebuild(exported, str(tmp_path / "u.zip"), rehash=False,
                      edit_member=lambda f, n=name: f.__setitem__(n, b"x"))
        out = expect_problem(capsys, bad, "not in its manifest")
        assert "\x1b" not in out
    # a member name with a terminal escape is shown without it
    bad = rebuild(exported, str(tmp_path / "e.zip"), rehash=False,
                  edit_member=lambda f: f.__setitem__("\x1b]0;owned\x07", b"x"))
    out = expect_problem(capsys, bad, "not in its manifest")
    assert "\x1b" not in out and "\x07" not in out


def test_signed_but_wrong_contents(exported, own_key, tmp_path, capsys):
    """Bundles correctly hashed and signed (by the device's own key, as a careless or malicious
    exporter could) whose lines are still wrong."""
    def resign(name, edit):
        return rebuild(exported, str(tmp_path / name), edit_member=edit, key=own_key)

    def not_canonical(files):
        n = first_session_file(files)
        lines = files[n].decode().splitlines()
        lines[0] = json.dumps(json.loads(lines[0]), indent=1).replace("\n", "")
        files[n] = ("\n".join(lines) + "\n").encode()
    expect_problem(capsys, resign("nc.zip", not_canonical), "line 1: not a canonical Event v1 line")

    def malformed(files):
        n = first_session_file(files)
        files[n] = files[n] + b'{"event_id": truncated\n'
    out = expect_problem(capsys, resign("mal.zip", malformed), "malformed JSON")
    assert "truncated" not in out  # never echo content

    def moved(files):  # a line moved into another session's file
        names = sorted(n for n in files if n != bundle.MANIFEST)
        a, b = files[names[0]].splitlines(keepends=True), files[names[1]]
        files[names[0]] = b"".join(a[1:])
        files[names[1]] = b + a[0]
    expect_problem(capsys, resign("mv.zip", moved), "an event of another session")

    def twice(files):
        n = first_session_file(files)
        files[n] = files[n] + files[n].splitlines(keepends=True)[0]
    expect_problem(capsys, resign("tw.zip", twice), "in the bundle twice")

    expect_problem(capsys, rebuild(exported, str(tmp_path / "ct.zip"), key=own_key,
                                   edit_manifest=lambda m: m.update(content=False)),
                   "carries content, but the manifest says it was left out")
    expect_problem(capsys, rebuild(exported, str(tmp_path / "cnt.zip"), key=own_key,
                                   edit_manifest=lambda m: m["files"][0].update(events=m["files"][0]["events"] + 1)),
                   "event count is not the sum")


def test_size_bounds_reading(exported, own_key, tmp_path, capsys):
    """A file larger than the signed manifest declares is not read past that size."""
    def grow(files):
        n = first_session_file(files)
        files[n] = files[n] + b"\n" * (5 << 20)
    bad = rebuild(exported, str(tmp_path / "big.zip"), edit_member=grow, rehash=False)
    expect_problem(capsys, bad, "holds more than the")


def test_versions_schema_and_unknown_fields(exported, own_key, tmp_path, capsys):
    bad = rebuild(exported, str(tmp_path / "v2.zip"), key=own_key,
                  edit_manifest=lambda m: m.update(schema_version="attestack.bundle.v2"))
    expect_problem(capsys, bad, "version v2 is not supported")
    bad = rebuild(exported, str(tmp_path / "nov.zip"), key=own_key, edit_manifest=lambda m: m.pop("schema_version"))
    expect_problem(capsys, bad, "no attestack.bundle.vN schema_version")
    bad = rebuild(exported, str(tmp_path / "sch.zip"), key=own_key,
                  edit_manifest=lambda m: m["files"][0].update(path="sessions/../../x/events.jsonl"))
    expect_problem(capsys, bad, "fails its schema")
    bad = rebuild(exported, str(tmp_path / "nl2.zip"), key=own_key,
                  edit_manifest=lambda m: m.update(sessions=[s + "\n" for s in m["sessions"]]))
    expect_problem(capsys, bad, "ends in a newline")
    extra = rebuild(exported, str(tmp_path / "x.zip"), key=own_key,
                    edit_manifest=lambda m: m.update(x_future={"a": 1}))
    code, out, err = verify_cli(capsys, extra)
    assert code == 0 and "note: manifest field 'x_future' is unknown" in err


def test_damaged_containers(exported, tmp_path, capsys):
    data = open(exported, "rb").read()
    cases = {
        "empty": b"",
        "text": b"hello\n",
        "truncated": data[: len(data) // 2],
        "tail_cut": data[:-30],
        "random": os.urandom(4096),
    }
    for name, blob in cases.items():
        p = tmp_path / f"{name}.zip"
        p.write_bytes(blob)
        code, out, err = verify_cli(capsys, str(p))
        assert code == 1 and out.startswith("problem[bundle."), (name, out, err)
        assert "error[internal]" not in err
    # a flipped byte inside a compressed member: CRC / inflate error or hash mismatch, never a crash
    with zipfile.ZipFile(exported) as zf:
        info = zf.getinfo(first_session_file({n: None for n in zf.namelist()}))
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 100
    flipped = bytearray(data)
    flipped[start] ^= 0xFF
    p = tmp_path / "flip.zip"
    p.write_bytes(bytes(flipped))
    code, out, err = verify_cli(capsys, str(p))
    assert code == 1 and "error[internal]" not in err, out + err
    code, _, err = verify_cli(capsys, str(tmp_path / "absent.zip"))
    assert code == 2 and "error[bundle.unreadable]" in err
    code, _, err = verify_cli(capsys, str(tmp_path))
    assert code == 2


def test_a_named_pipe_is_refused_at_once_not_waited_on(source, tmp_path, home):
    fifo = str(tmp_path / "bundle.zip")
    os.mkfifo(fifo)  # nothing ever writes to it: opening it for reading would wait forever
    for args in (("bundle", "verify", fifo), ("bundle", "import", fifo, "--db", source)):
        p = run_attempt(args, timeout=60)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.startswith(f"error[bundle.unreadable]: {fifo} is not a regular file"), err


def test_import_of_a_bad_bundle_writes_nothing(exported, source, tmp_path, capsys):
    def change(files):
        n = sorted(x for x in files if x != bundle.MANIFEST)[-1]  # the last file: earlier ones verify
        files[n] = files[n][:-2] + b" \n"
    bad = rebuild(exported, str(tmp_path / "bad.zip"), edit_member=change, rehash=False)
    target = str(tmp_path / "target.db")
    make_db(target, n=50, seed=99)
    before = jsonl(capsys, target)
    code, out, _ = cli(capsys, "bundle", "import", bad, "--db", target)
    assert code == 1 and out.startswith("problem[bundle.")
    assert jsonl(capsys, target) == before


def test_import_follows_the_database_capture_mode(exported, tmp_path, capsys):
    target = str(tmp_path / "meta.db")
    assert cli(capsys, "init", "--db", target, "--capture-mode", "metadata_only")[0] == 0
    assert cli(capsys, "bundle", "import", exported, "--db", target)[0] == 0
    lines = [json.loads(x) for x in jsonl(capsys, target)]
    assert len(lines) == 400 and all("content" not in e and "raw" not in e for e in lines)


def test_public_key_in_signature_is_what_verifies(exported, other_key, tmp_path, capsys):
    """Swapping in another public key (with its matching id) cannot keep the old signature."""
    def swap(m):
        m["signature"]["public_key"] = other_key.public_b64
        m["signature"]["key_id"] = other_key.identity
    bad = rebuild(exported, str(tmp_path / "k.zip"), edit_manifest=swap, rehash=False)
    expect_problem(capsys, bad, "signature does not verify")


@needs_shell
def test_export_refuses_a_row_edited_in_the_file(source, tmp_path, capsys):
    """A bundle signs what the chain vouches for: a row changed behind the triggers' back (in
    the sqlite3 shell) stops the export, and no file is left."""
    sqlite3_shell(source, "DROP TRIGGER events_no_update; "
                          "UPDATE events SET tool_name = 'Forged' WHERE seq = (SELECT min(seq) FROM events "
                          "WHERE tool_name IS NOT NULL);")
    out = tmp_path / "x.zip"
    code, _, err = cli(capsys, "bundle", "export", str(out), "--db", source)
    assert code == 1 and "error[bundle.row_changed]" in err and "seq=" in err
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".attempt-bundle-")]
