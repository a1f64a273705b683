"""A database keeps one signing key for its whole life (spec/checkpoint.md "The key"): when its
key file is lost, or another key sits in its place, every command that signs refuses with a
coded error (`keys.lost`, `keys.mismatch`) naming the key file and the key id to restore, and
writes nothing (no new key, no meta change, nothing pushed or exported); restoring the file
makes everything work again; a key that is truly gone is replaced only on request
(`attempt keys init --replace-lost`), and the old key's checkpoints keep verifying."""

import json
import os
import shutil

import pytest
from conftest import run_attempt

from attemptdb.integrity import checkpoint, keys
from attemptdb.store import location
from attemptdb.store.database import Store


def attempt(*args, ok=None):
    p = run_attempt(list(args))
    out, err = p.stdout.decode(), p.stderr.decode()
    if ok is True:
        assert p.returncode == 0, (args, out, err)
    return p.returncode, out, err


def snapshot(db):
    """What the refusal must leave alone: the file's meta and checkpoints, and the key directory."""
    st = Store.open(db, readonly=True)
    try:
        meta = dict(st.conn.execute("SELECT key, value FROM meta").fetchall())
        cps = st.conn.execute("SELECT size, key_id, note FROM checkpoints ORDER BY size").fetchall()
    finally:
        st.close()
    kd = location.key_dir()
    return meta, cps, sorted(os.listdir(kd)) if os.path.isdir(kd) else []


@pytest.fixture
def signed(home, tmp_path):
    """A database with a public key and a signed checkpoint whose key directory was then lost
    (moved to a backup): (db, device, key id, key path, backup dir)."""
    db = str(tmp_path / "attempt.db")
    code, out, _ = attempt("init", "--db", db, "--json", ok=True)
    info = json.loads(out)
    attempt("note", "first", "--db", db, ok=True)
    assert attempt("verify", "--db", db)[0] == 0
    device = info["device_id"][4:]
    path = keys.key_path(device)
    assert os.path.exists(path) and os.path.exists(checkpoint.outside_path(device))
    backup = tmp_path / "key-backup"
    shutil.move(location.key_dir(), backup)
    os.makedirs(location.key_dir(), mode=0o700)
    return db, device, info["key_id"], path, str(backup)


def restore(backup):
    for name in os.listdir(backup):
        shutil.copy2(os.path.join(backup, name), location.key_dir())


def assert_lost(code, err, key_id, path):
    assert code == 1, err
    assert "error[keys.lost]" in err and key_id in err and path in err
    assert "estore the key file from a backup" in err and "--replace-lost" in err
    assert "Traceback" not in err


def command(name, tmp_path, db):
    folder = tmp_path / "shared"
    folder.mkdir(exist_ok=True)
    return {
        "sync": ["sync", str(folder), "--db", db],
        "checkpoint": ["checkpoint", "--db", db],
        "init": ["init", "--db", db],
        "keys init": ["keys", "init", "--db", db],
        "bundle export": ["bundle", "export", str(tmp_path / "out.bundle"), "--db", db],
        "export --dataset": ["export", "--dataset", str(tmp_path / "dataset"), "--db", db],
    }[name]


@pytest.mark.parametrize("name", ["sync", "checkpoint", "init", "keys init", "bundle export", "export --dataset"])
def test_a_lost_key_is_refused_and_nothing_is_written_until_it_is_restored(signed, tmp_path, name):
    if name == "export --dataset":
        pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is part of the test extra")
    db, device, key_id, path, backup = signed
    before = snapshot(db)
    args = command(name, tmp_path, db)
    code, out, err = attempt(*args)
    assert_lost(code, err, key_id, path)
    assert snapshot(db) == before  # no new key file, no meta.public_key/key_id change, nothing signed
    assert not os.path.exists(path)
    assert os.listdir(tmp_path / "shared") == []  # nothing pushed
    assert not os.path.exists(tmp_path / "out.bundle")
    assert not os.path.exists(tmp_path / "dataset") or os.listdir(tmp_path / "dataset") == []
    # verify still passes against the recorded public key: the history is not damaged
    code, out, err = attempt("verify", "--db", db)
    assert code == 0 and "bad signature" not in out, out + err
    # the key file restored from the backup: the command works, signed by the original key
    restore(backup)
    code, out, err = attempt(*args)
    assert code == 0, out + err
    assert "error[" not in err
    if name in ("init", "keys init"):
        assert key_id in out
    st = Store.open(db, readonly=True)
    try:
        assert st.meta("key_id") == key_id
    finally:
        st.close()
    assert attempt("verify", "--db", db)[0] == 0
    if name == "sync":
        manifest = [f for f in os.listdir(tmp_path / "shared" / f"dev_{device}") if f.endswith(".json")]
        assert manifest


def test_the_walkthrough_repro_sync_then_verify(signed, tmp_path):
    """The user's walkthrough: the key lost, `attempt sync` pushed with a new key (exit 0) and
    `attempt verify` failed for good; the sync folder then pinned the wrong key."""
    db, device, key_id, path, backup = signed
    code, _, err = attempt("sync", str(tmp_path / "s"), "--db", db)
    assert code == 1 and "error[keys.lost]" in err
    assert attempt("verify", "--db", db)[0] == 0
    restore(backup)
    os.makedirs(tmp_path / "s2")
    attempt("sync", str(tmp_path / "s2"), "--db", db, ok=True)
    again = attempt("sync", str(tmp_path / "s2"), "--db", db)
    assert again[0] == 0, again
    assert attempt("verify", "--db", db)[0] == 0


def test_keys_show_and_doctor_report_a_lost_key_with_the_restore_advice(signed):
    db, device, key_id, path, backup = signed
    code, out, err = attempt("keys", "show", "--db", db)
    assert_lost(code, err, key_id, path)
    assert "run `attempt keys init`" not in err
    code, out, err = attempt("doctor", "--json", "--db", db)
    rep = json.loads(out)
    assert code == 1 and not rep["ok"]
    lost = [p for p in rep["problems"] if "[keys.lost]" in p]
    assert lost and key_id in lost[0] and path in lost[0] and "run `attempt keys init`" not in lost[0]
    code, out, _ = attempt("doctor", "--db", db)
    assert code == 1 and "keys.lost" in out
    restore(backup)
    code, out, _ = attempt("keys", "show", "--db", db)
    assert code == 0 and out.startswith(key_id)
    code, out, _ = attempt("doctor", "--json", "--db", db)
    assert not any("keys." in p for p in json.loads(out)["problems"])


def test_status_warns_of_a_lost_key(signed):
    """`attempt status` said nothing of a lost key (the next `events` printed keys.lost)."""
    db, device, key_id, path, backup = signed
    code, out, err = attempt("status", "--db", db)
    flat = " ".join(err.split())
    assert code == 0 and f"warning: the signing key file is missing: this database was signed with {key_id}" in flat
    assert json.loads(attempt("status", "--db", db, "--json")[1])["warnings"]
    restore(backup)
    code, out, err = attempt("status", "--db", db)
    assert code == 0 and "signing key" not in err, err


def test_a_read_or_a_capture_with_a_lost_key_stores_the_event_and_signs_nothing(signed, tmp_path):
    db, device, key_id, path, backup = signed
    before = snapshot(db)
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi",
                          "cwd": str(tmp_path)}).encode()
    p = run_attempt(["capture", "claude_code", "--db", db], input=payload)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b""
    code, out, err = attempt("events", "--db", db, "--json")
    assert code == 0 and "keys.lost" in err  # one note: nothing was signed, and why
    after = snapshot(db)
    assert [after[0].get(k) for k in ("public_key", "key_id")] == [before[0][k] for k in ("public_key", "key_id")]
    assert after[1] == before[1] and after[2] == []
    st = Store.open(db, readonly=True)
    try:
        assert st.count() == 4
    finally:
        st.close()


def test_the_signer_the_daemon_and_housekeeping_use_never_signs_with_a_wrong_key(home, tmp_path):
    """maybe_checkpoint (the capture daemon, imports, reads): a key file that is not the one
    the file records signs nothing, quietly."""
    db = str(tmp_path / "attempt.db")
    attempt("init", "--db", db, ok=True)
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi"}).encode()
    assert run_attempt(["capture", "claude_code", "--db", db], input=payload).returncode == 0
    st = Store.open(db)
    try:
        os.unlink(keys.key_path(st.device_id))
        keys.create(st.device_id)  # another key in its place
        assert checkpoint.maybe_checkpoint(st, quiet=True) is None
        assert st.conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
        with pytest.raises(Exception) as e:
            checkpoint.create(st)
        assert getattr(e.value, "code", None) == "keys.mismatch"
    finally:
        st.close()


def test_a_wrong_key_restored_is_refused_not_adopted(signed, tmp_path):
    db, device, key_id, path, backup = signed
    wrong, _ = keys.create(device)  # a key file, but not this database's
    before = snapshot(db)
    for args in (["checkpoint", "--db", db], ["sync", str(tmp_path), "--db", db], ["keys", "show", "--db", db],
                 ["keys", "init", "--db", db], ["keys", "init", "--replace-lost", "--db", db]):
        code, out, err = attempt(*args)
        assert code == 1 and "error[keys.mismatch]" in err, (args, out, err)
        assert wrong.identity in err and key_id in err and path in err
    assert snapshot(db) == before
    code, out, _ = attempt("doctor", "--json", "--db", db)
    assert code == 1 and any("[keys.mismatch]" in p for p in json.loads(out)["problems"])
    os.unlink(path)
    restore(backup)
    attempt("checkpoint", "--db", db, ok=True)


def test_replace_lost_starts_a_new_identity_and_the_old_checkpoints_still_verify(signed, tmp_path):
    db, device, key_id, path, backup = signed
    code, out, err = attempt("keys", "init", "--replace-lost", "--db", db)
    assert code == 0, out + err
    st = Store.open(db, readonly=True)
    try:
        new_id = st.meta("key_id")
        notes = json.loads(st.meta("key_replaced"))
    finally:
        st.close()
    assert new_id != key_id and os.path.exists(path) and len(notes) == 1
    assert f"replaced: {new_id}" in out and key_id in out
    assert f"attempt keys trust dev_{device} {new_id}" in " ".join(out.split())  # what teammates run (wrapped)
    assert "attempt checkpoint --adopt" in out  # the copy beside the key was lost with it
    # the old checkpoint verifies against the old key; only the lost copy beside the key is missing
    code, out, err = attempt("verify", "--db", db)
    assert "bad signature" not in out and "checkpoint_missing" not in out
    assert code == 1 and "copy beside the key is missing" in out
    code, out, err = attempt("checkpoint", "--adopt", "--db", db)
    assert code == 0 and "copy beside the key is the newest checkpoint again" in out, out + err
    assert attempt("verify", "--db", db) [0] == 0
    # new history is signed with the new key, and everything verifies
    attempt("note", "second", "--db", db, ok=True)
    attempt("checkpoint", "--db", db)
    code, out, err = attempt("verify", "--db", db)
    assert code == 0, out + err
    st = Store.open(db, readonly=True)
    try:
        signers = [r[0] for r in st.conn.execute("SELECT key_id FROM checkpoints ORDER BY size")]
    finally:
        st.close()
    assert signers[0] == key_id and signers[-1] == new_id
    code, out, _ = attempt("keys", "show", "--db", db)
    assert code == 0 and out.startswith(new_id) and f"replaces {key_id}" in out
    # the old key, found again later, is not taken back silently
    os.unlink(path)
    shutil.copy2(os.path.join(backup, os.path.basename(path)), path)
    code, _, err = attempt("checkpoint", "--db", db)
    assert code == 1 and "error[keys.mismatch]" in err


def test_replace_lost_only_replaces_a_lost_key(signed):
    db, device, key_id, path, backup = signed
    restore(backup)
    code, out, _ = attempt("keys", "init", "--replace-lost", "--db", db)
    assert code == 0 and out.startswith(f"exists: {key_id}")
    st = Store.open(db, readonly=True)
    try:
        assert st.meta("key_replaced") is None and st.meta("key_id") == key_id
    finally:
        st.close()


def test_a_replaced_key_vouches_only_for_the_rows_the_file_had(signed, tmp_path):
    """A lost key may have been stolen: a note it signs over more rows than the file had when
    it was replaced does not verify."""
    db, device, key_id, path, backup = signed
    attempt("keys", "init", "--replace-lost", "--db", db, ok=True)
    old = keys.load(device, backup)
    new = keys.load(device)
    st = Store.open(db, readonly=True)
    try:
        size, head = st.head()
    finally:
        st.close()
    assert [k.identity for k in new.previous] == [key_id] and new.previous[0].upto == size
    within = checkpoint.parse(checkpoint.sign(old, device, size, head, "2026-01-01T00:00:00.000000Z"))
    beyond = checkpoint.parse(checkpoint.sign(old, device, size + 1, head, "2026-01-01T00:00:00.000000Z"))
    assert checkpoint.check_signature(within, new)
    assert not checkpoint.check_signature(beyond, new)
    # notes are trusted only when the new key signed them: a forged one names no previous key
    forged = keys.replacement_body(device, [("id_" + "0" * 32, None)], 10 ** 6, None, "2026-01-01T00:00:00.000000Z")
    k = keys.from_public_b64(new.public_b64)
    k.add_notes([forged + "\n\u2014 id_x AAAA\n"])
    assert k.previous == []
    assert keys.replacement_lines(new) and key_id in keys.replacement_lines(new)[0]


def test_prove_with_a_lost_key_says_so_instead_of_advising_keys_init(signed):
    db, device, key_id, path, backup = signed
    st = Store.open(db, readonly=True)
    try:
        event_id = st.conn.execute("SELECT event_id FROM events ORDER BY seq LIMIT 1").fetchone()[0]
    finally:
        st.close()
    code, out, err = attempt("prove", event_id, "--db", db)
    assert_lost(code, err, key_id, path)
    restore(backup)
    code, out, err = attempt("prove", event_id, "--db", db)
    assert code == 0, out + err


def test_verifying_key_trusts_the_files_replacement_notes_and_reports_a_wrong_key(signed):
    """keys.verifying_key, for `attempt verify`: the notes in the file stand in for the copy
    beside the key; a key file holding another key is a problem, never the key checked against."""
    db, device, key_id, path, backup = signed
    attempt("keys", "init", "--replace-lost", "--db", db, ok=True)
    os.unlink(keys.replaced_path(device))
    st = Store.open(db, readonly=True)
    try:
        key, notes, problems = keys.verifying_key(st)
        assert key.vouches(key_id, 1) is not None and problems == []
        assert any(key_id in n and "--replace-lost" in n for n in notes)
        os.unlink(path)
        keys.create(device)  # another key in its place
        key, notes, problems = keys.verifying_key(st)
        assert problems and "keys init --replace-lost" in problems[0]
        assert key.identity == st.meta("key_id") and key.vouches(key_id, 1) is not None
    finally:
        st.close()
