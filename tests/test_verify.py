"""`attempt verify`: an untouched file is `ok:`; every tamper case exits 1 naming the first bad row
by seq and event id. The tampering is done the way an attacker with the file would: the REAL
sqlite3 shell, after dropping the immutability triggers (and putting them back, so only the
hashes can tell); the "rewrite" cases recompute every hash with our own library."""

import json
import os
import shutil

import apsw
import pytest
from conftest import SQLITE3, needs_shell, run_attempt
from conftest import sqlite3_shell as shell

from attemptdb.cli.main import run
from attemptdb.devtools import synth
from attemptdb.integrity import bulkcheck, checkpoint, keys
from attemptdb.integrity import chain as chain_mod
from attemptdb.integrity import verify as verify_mod
from attemptdb.model import event, fastjson, ids
from attemptdb.store import schema
from attemptdb.store.database import Store

TRIGGERS = ("events_no_update", "events_no_delete")
CP_TRIGGERS = ("checkpoints_no_update", "checkpoints_no_delete")


# --- helpers ---------------------------------------------------------------------------------

def trigger_sql(db, names):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        got = dict(conn.execute(f"SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN "
                                f"({','.join('?' * len(names))})", list(names)))
    finally:
        conn.close()
    assert set(got) == set(names)
    return got


def tamper(db, sql, triggers=TRIGGERS):
    """Run `sql` in the sqlite3 shell with the given triggers dropped, then put them back."""
    saved = trigger_sql(db, triggers)
    script = "BEGIN;\n" + "".join(f"DROP TRIGGER {n};\n" for n in saved) + sql.rstrip().rstrip(";") + ";\n"
    script += "".join(s + ";\n" for s in saved.values()) + "COMMIT;\n"
    shell(db, script)


def q(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def rows(db, sql, params=()):
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def eid_at(db, seq):
    return rows(db, "SELECT event_id FROM events WHERE seq = ?", (seq,))[0][0]


def verify_cli(db, capsys, *extra):
    capsys.readouterr()
    code = run(["verify", "--db", db, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def build(db, n=120, more=30, seed=11, sign=True):
    """n synthetic events, the device key, a checkpoint of all n, then `more` events."""
    st = Store.open(db)
    evs = list(synth.generate(n + more, seed=seed))
    st.append(evs[:n])
    if sign:
        key, _ = keys.create(st.device_id)
        st.set_meta("public_key", key.public_b64)
        assert checkpoint.create(st, key).size == n
    if more:
        st.append(evs[n:])
    st.close()


@pytest.fixture
def chain(db):
    build(db)
    return db


def expect_problem(db, capsys, seq, event_id=None, kind=None):
    code, out, err = verify_cli(db, capsys)
    assert code == 1, out + err
    first = out.splitlines()[0]
    assert first.startswith("problem: ") and f"seq={seq}" in first, first
    if event_id:
        assert event_id in first, first
    code, out, _ = verify_cli(db, capsys, "--json")
    rep = json.loads(out)
    assert code == 1 and rep["ok"] is False
    p = rep["problems"][0]
    assert p["seq"] == seq, p
    if event_id:
        assert p["event_id"] == event_id, p
    if kind:
        assert p["kind"] == kind, p
    return rep


def rehash_from(db, start, change=None):
    """What an attacker with the library (but not the key) does: change rows (change(row dict)),
    then recompute event_hash and chain_hash of every row from `start` on. Returns SQL."""
    cols = ("seq",) + event.COLUMNS + ("event_hash", "chain_hash")
    all_rows = [dict(zip(cols, r)) for r in rows(db, f"SELECT {', '.join(cols)} FROM events ORDER BY seq")]
    prev = chain_mod.GENESIS
    sql = []
    for r in all_rows:
        if r["seq"] >= start:
            if change:
                change(r)
            h = chain_mod.hash_line(event.line_from_row([r[c] for c in event.COLUMNS]))
            link = chain_mod.link(prev, h)
            sets = {c: r[c] for c in event.COLUMNS if c not in ("event_id",)}
            sets.update(event_hash=h, chain_hash=link)
            sql.append(f"UPDATE events SET {', '.join(f'{k} = {q(v)}' for k, v in sets.items())} "
                       f"WHERE seq = {r['seq']}")
            r["chain_hash"] = link
        prev = r["chain_hash"]
    return ";\n".join(sql)


def _edit_attrs(r):
    if r["seq"] == 30:
        a = fastjson.loads(r["attrs_json"])
        a["hook_event_name"] = "Forged"
        r["attrs_json"] = fastjson.dumps(a)


# --- untouched -------------------------------------------------------------------------------

def test_untouched_file_is_ok(chain, capsys):
    code, out, err = verify_cli(chain, capsys)
    assert code == 0 and out == "ok: 150 events, 1 checkpoint\n", out + err
    code, out, _ = verify_cli(chain, capsys, "--json")
    rep = json.loads(out)
    assert code == 0
    assert rep == {"ok": True, "events": 150, "checkpoints": 1, "problems": [], "warnings": [], "notes": rep["notes"]}
    assert isinstance(rep["notes"], list)


def test_real_process_exit_status_and_no_traceback(chain):
    p = run_attempt(["verify", "--db", chain])
    assert p.returncode == 0 and p.stdout == b"ok: 150 events, 1 checkpoint\n"
    if os.access(SQLITE3, os.X_OK):
        tamper(chain, "UPDATE events SET kind = 'unknown' WHERE seq = 7")
        p = run_attempt(["verify", "--db", chain])
        assert p.returncode == 1 and p.stdout.startswith(b"problem: row seq=7 (ev_")
        assert b"Traceback" not in p.stdout + p.stderr


def test_empty_file_and_no_checkpoint_notes(db, capsys):
    Store.open(db).close()
    code, out, _ = verify_cli(db, capsys)
    assert code == 0 and out == "ok: 0 events, 0 checkpoints\n"
    build(db, n=20, more=0, sign=False)
    code, out, err = verify_cli(db, capsys)
    assert code == 0 and out == "ok: 20 events, 0 checkpoints\n"
    assert "no signed checkpoint yet" in err  # notes go to stderr


@needs_shell
@pytest.mark.parametrize("target", ["event", "attempt", "session"])
def test_retracted_flag_is_not_a_tamper_when_a_retraction_covers_it(chain, capsys, target):
    # `retracted` is the one column that may change (0 -> 1, by the Retraction projection)
    from attemptdb.projections import meta
    st = Store.open(chain)
    if target == "event":
        meta.retract(st, event_id=eid_at(chain, 3), reason="test")
    elif target == "attempt":
        att = rows(chain, "SELECT attempt_id FROM attempts WHERE tool_call_count > 0 ORDER BY started_at DESC LIMIT 1")
        meta.retract(st, attempt=att[0][0], reason="benchmark")
    else:
        meta.retract(st, session=rows(chain, "SELECT session_id FROM events WHERE seq = 40")[0][0], reason="privacy")
    st.close()
    marked = rows(chain, "SELECT count(*) FROM events WHERE retracted = 1")[0][0]
    assert marked >= {"event": 1, "attempt": 2, "session": 100}[target], marked  # an attempt: its calls' start and end
    code, out, err = verify_cli(chain, capsys)
    assert code == 0, out + err
    p = shell(chain, "UPDATE events SET retracted = 0 WHERE retracted = 1", check=False)
    assert p.returncode != 0 and "only goes from 0 to 1" in p.stderr


@needs_shell
def test_a_retracted_mark_no_retraction_covers_is_a_problem(chain, capsys):
    # set from the shell: the mark would hide seq 9 from every projection and query
    shell(chain, "UPDATE events SET retracted = 1 WHERE seq = 9")
    rep = expect_problem(chain, capsys, 9, eid_at(chain, 9), kind="retraction_uncovered")
    assert "marked retracted" in rep["problems"][0]["message"]


@needs_shell
def test_the_retracted_trigger_missing_is_a_problem(chain, capsys):
    shell(chain, "DROP TRIGGER events_retracted_only_set")
    code, out, _ = verify_cli(chain, capsys)
    assert code == 1 and "events_retracted_only_set is missing" in out


# --- the triggers --------------------------------------------------------------------------------

@needs_shell
def test_triggers_abort_update_and_delete_from_the_shell(chain):
    for sql, msg in (("UPDATE events SET kind = 'unknown' WHERE seq = 5", "events are immutable"),
                     ("UPDATE events SET event_hash = 'x' WHERE seq = 5", "events are immutable"),
                     ("DELETE FROM events WHERE seq = 5", "events are immutable"),
                     ("DELETE FROM events", "events are immutable"),
                     ("UPDATE checkpoints SET size = 1", "checkpoints are immutable"),
                     ("DELETE FROM checkpoints", "checkpoints are immutable")):
        p = shell(chain, sql, check=False)
        assert p.returncode != 0 and msg in p.stderr, sql
    assert rows(chain, "SELECT count(*) FROM events")[0][0] == 150
    assert rows(chain, "SELECT count(*) FROM checkpoints")[0][0] == 1


@needs_shell
def test_missing_triggers_are_a_problem(chain, capsys):
    shell(chain, "DROP TRIGGER events_no_delete")
    code, out, _ = verify_cli(chain, capsys)
    assert code == 1 and "events_no_delete is missing" in out


# --- one column of one row edited ----------------------------------------------------------------

EDITS = {
    "kind": "UPDATE events SET kind = 'unknown' WHERE seq = {seq}",
    "attrs_json": "UPDATE events SET attrs_json = json_set(attrs_json, '$.hook_event_name', 'Forged') WHERE seq = {seq}",
    "content_json": "UPDATE events SET content_json = json_set(coalesce(content_json, '{{}}'), '$.prompt', 'edited') WHERE seq = {seq}",
    "observed_at": "UPDATE events SET observed_at = strftime('%Y-%m-%dT%H:%M:%S', observed_at, '+1 second') || substr(observed_at, 20) WHERE seq = {seq}",
    "observed_at_noncanonical": "UPDATE events SET observed_at = replace(observed_at, 'T', ' ') WHERE seq = {seq}",
    "provider": "UPDATE events SET provider = provider || '_' WHERE seq = {seq}",
    "session_id": "UPDATE events SET session_id = 'ses_' || '00000000-0000-0000-0000-000000000000' WHERE seq = {seq}",
    "raw_json": "UPDATE events SET raw_json = NULL WHERE seq = {seq}",
    "source_seq": "UPDATE events SET source_seq = source_seq + 1000 WHERE seq = {seq}",
    "hlc": "UPDATE events SET hlc = hlc - 1 WHERE seq = {seq}",
    "exit_code": "UPDATE events SET exit_code = exit_code + 7 WHERE seq = (SELECT min(seq) FROM events WHERE exit_code IS NOT NULL)",
    "exit_code_as_text": "UPDATE events SET exit_code = 'zero' WHERE seq = (SELECT min(seq) FROM events WHERE exit_code IS NOT NULL)",
    "exit_code_added": "UPDATE events SET exit_code = 0 WHERE seq = (SELECT min(seq) FROM events WHERE exit_code IS NULL AND outcome_status IS NOT NULL)",
    "event_hash": "UPDATE events SET event_hash = 'not hex' WHERE seq = {seq}",
    "path_relative": "UPDATE events SET path_relative = 'elsewhere.rs' WHERE seq = (SELECT min(seq) FROM events WHERE path_relative IS NOT NULL)",
    "paths_json": "UPDATE events SET paths_json = '[\"elsewhere.rs\"]' WHERE seq = (SELECT min(seq) FROM events WHERE paths_json IS NOT NULL)",
    "path_logical_added": "UPDATE events SET path_logical = '~/x' WHERE seq = (SELECT min(seq) FROM events WHERE path_objects_json IS NULL)",
    "content_ref": "UPDATE events SET content_ref = 'blob:1' WHERE seq = {seq}",
}


@needs_shell
@pytest.mark.parametrize("column", sorted(EDITS))
def test_one_column_of_one_row_edited(chain, capsys, column):
    sql = EDITS[column].format(seq=41)
    if "min(seq)" in sql:
        target = rows(chain, "SELECT " + sql.split("WHERE seq = (SELECT ", 1)[1].rstrip(")"))[0][0]
        assert target is not None
    else:
        target = 41
    before = rows(chain, f"SELECT * FROM events WHERE seq = {target}")
    tamper(chain, sql)
    assert rows(chain, f"SELECT * FROM events WHERE seq = {target}") != before, "the edit changed nothing"
    rep = expect_problem(chain, capsys, target, eid_at(chain, target))
    assert rep["problems"][0]["kind"] in ("event_hash", "derived_column", "chain")


@needs_shell
def test_edit_with_a_recomputed_event_hash_breaks_the_link(chain, capsys):
    # the attacker fixes event_hash of the edited row but cannot fix every later chain hash... and
    # even when they do (next test), the signed checkpoint catches it
    r = dict(zip(("seq",) + event.COLUMNS, rows(chain, f"SELECT seq, {', '.join(event.COLUMNS)} FROM events WHERE seq = 41")[0]))
    r["kind"] = "unknown"
    h = chain_mod.hash_line(event.line_from_row([r[c] for c in event.COLUMNS]))
    tamper(chain, f"UPDATE events SET kind = 'unknown', event_hash = '{h}' WHERE seq = 41")
    expect_problem(chain, capsys, 41, eid_at(chain, 41), kind="chain")


# --- rows deleted, inserted, swapped ----------------------------------------------------------------

@needs_shell
def test_row_deleted(chain, capsys):
    tamper(chain, "DELETE FROM events WHERE seq = 57")
    rep = expect_problem(chain, capsys, 58, eid_at(chain, 58), kind="sequence_gap")
    assert "follows seq=56" in rep["problems"][0]["message"]


@needs_shell
def test_row_deleted_and_renumbered(chain, capsys):
    tamper(chain, "DELETE FROM events WHERE seq = 57; UPDATE events SET seq = -seq WHERE seq > 57; "
                  "UPDATE events SET seq = -seq - 1 WHERE seq < 0")
    assert rows(chain, "SELECT count(*), max(seq) FROM events")[0] == (149, 149)
    expect_problem(chain, capsys, 57, eid_at(chain, 57), kind="chain")


def _forged_copy(db, seq, new_seq, link_correctly):
    cols = ("seq",) + event.COLUMNS + ("event_hash", "chain_hash")
    r = dict(zip(cols, rows(db, f"SELECT {', '.join(cols)} FROM events WHERE seq = ?", (seq,))[0]))
    r["seq"] = new_seq
    r["event_id"] = "ev_" + ids.uuid7()
    r["event_hash"] = chain_mod.hash_line(event.line_from_row([r[c] for c in event.COLUMNS]))
    if link_correctly:
        prev = rows(db, "SELECT chain_hash FROM events WHERE seq = ?", (new_seq - 1,))[0][0]
        r["chain_hash"] = chain_mod.link(prev, r["event_hash"])
    return r, (f"INSERT INTO events ({', '.join(cols)}) VALUES ({', '.join(q(r[c]) for c in cols)})")


@needs_shell
def test_forged_row_appended_with_a_wrong_event_hash(chain, capsys):
    cols = ", ".join(("event_id",) + event.COLUMNS[1:] + ("event_hash", "chain_hash"))
    tamper(chain, f"INSERT INTO events (seq, {cols}) SELECT 151, 'ev_' || lower(hex(randomblob(4))) || "
                  f"substr(event_id, 12), {cols.split(', ', 1)[1]} FROM events WHERE seq = 10")
    expect_problem(chain, capsys, 151, eid_at(chain, 151), kind="event_hash")


@needs_shell
@pytest.mark.parametrize("link_correctly", [False, True])
def test_forged_row_inserted_in_the_middle(chain, capsys, link_correctly):
    forged, insert = _forged_copy(chain, 60, 60, link_correctly)
    original_60 = eid_at(chain, 60)
    tamper(chain, "UPDATE events SET seq = -seq WHERE seq >= 60; UPDATE events SET seq = -seq + 1 WHERE seq < 0; "
           + insert)
    assert eid_at(chain, 60) == forged["event_id"] and eid_at(chain, 61) == original_60
    if link_correctly:  # the forged row links; the row after it cannot
        rep = expect_problem(chain, capsys, 61, original_60, kind="chain")
        assert forged["event_id"] in rep["problems"][0]["message"]  # names the row before it too
    else:
        expect_problem(chain, capsys, 60, forged["event_id"], kind="chain")


@needs_shell
@pytest.mark.parametrize("i,j", [(40, 41), (40, 90)])
def test_two_rows_swapped(chain, capsys, i, j):
    b = eid_at(chain, j)
    tamper(chain, f"UPDATE events SET seq = -1 WHERE seq = {i}; UPDATE events SET seq = {i} WHERE seq = {j}; "
                  f"UPDATE events SET seq = {j} WHERE seq = -1")
    assert eid_at(chain, i) == b
    expect_problem(chain, capsys, i, b, kind="chain")


# --- truncation and rollback --------------------------------------------------------------------

@needs_shell
def test_tail_truncated_below_the_checkpoint(chain, capsys):
    tamper(chain, "DELETE FROM events WHERE seq > 100")
    rep = expect_problem(chain, capsys, 101, kind="truncated")
    kinds = [p["kind"] for p in rep["problems"]]
    assert kinds.count("truncated") == 2  # the checkpoint in the file and the copy beside the key
    assert "covers 120 rows" in rep["problems"][0]["message"] and eid_at(chain, 100) in rep["problems"][0]["message"]


@needs_shell
def test_every_row_deleted(chain, capsys):
    tamper(chain, "DELETE FROM events")
    rep = expect_problem(chain, capsys, 1, kind="truncated")
    assert "rows seq=1..120 are missing" in rep["problems"][0]["message"]


@needs_shell
def test_truncated_with_the_files_checkpoints_deleted_too(chain, capsys):
    tamper(chain, "DELETE FROM events WHERE seq > 100")
    tamper(chain, "DELETE FROM checkpoints", triggers=CP_TRIGGERS)
    rep = expect_problem(chain, capsys, 101, kind="truncated")
    assert "kept beside the key" in rep["problems"][0]["message"]


@needs_shell
def test_truncated_with_only_the_in_file_checkpoint(chain, capsys):
    st = Store.open(chain, readonly=True)
    os.remove(checkpoint.outside_path(st.device_id))
    st.close()
    tamper(chain, "DELETE FROM events WHERE seq > 100")
    rep = expect_problem(chain, capsys, 101, kind="truncated")
    assert "in the file" in rep["problems"][0]["message"]
    assert "checkpoint_missing" in [p["kind"] for p in rep["problems"]]


def test_whole_file_rolled_back(chain, tmp_path, capsys):
    old = tmp_path / "old.db"
    shutil.copyfile(chain, old)  # the file closed cleanly: no -wal to copy
    assert not os.path.exists(chain + "-wal")
    st = Store.open(chain)
    st.append(list(synth.generate(40, seed=99)))
    assert checkpoint.create(st).size == 190
    st.close()
    os.replace(old, chain)
    for ext in ("-wal", "-shm"):
        if os.path.exists(chain + ext):
            os.remove(chain + ext)
    rep = expect_problem(chain, capsys, 151, kind="truncated")
    assert "covers 190 rows" in rep["problems"][0]["message"]


# --- the whole chain rewritten consistently, by someone without the key -------------------------

@needs_shell
def test_rewrite_is_caught_by_the_checkpoints(chain, capsys):
    tamper(chain, rehash_from(chain, 30, _edit_attrs))
    assert rows(chain, "SELECT json_extract(attrs_json, '$.hook_event_name') FROM events WHERE seq = 30")[0][0] == "Forged"
    # the chain itself is consistent again: only the signature can tell
    conn = apsw.Connection(chain, flags=apsw.SQLITE_OPEN_READONLY)
    assert chain_mod.check_rows(conn, 1, 10**9) == (150, None)
    conn.close()
    rep = expect_problem(chain, capsys, 120, eid_at(chain, 120), kind="checkpoint_mismatch")
    assert {p["kind"] for p in rep["problems"]} == {"checkpoint_mismatch"}
    assert len(rep["problems"]) == 2  # in the file and beside the key


@needs_shell
def test_rewrite_is_narrowed_by_several_checkpoints(db, capsys):
    st = Store.open(db)
    evs = list(synth.generate(100, seed=4))
    key, _ = keys.create(st.device_id)
    for lo, hi in ((0, 20), (20, 60), (60, 100)):
        st.append(evs[lo:hi])
        checkpoint.create(st, key)
    st.close()
    tamper(db, rehash_from(db, 30, _edit_attrs))
    rep = expect_problem(db, capsys, 60, eid_at(db, 60), kind="checkpoint_mismatch")
    assert "between seq=21 and seq=60" in rep["problems"][0]["message"]


@needs_shell
def test_rewrite_with_the_checkpoint_rows_deleted(chain, capsys):
    tamper(chain, rehash_from(chain, 30, _edit_attrs))
    tamper(chain, "DELETE FROM checkpoints", triggers=CP_TRIGGERS)
    rep = expect_problem(chain, capsys, 120, eid_at(chain, 120), kind="checkpoint_mismatch")
    assert "kept beside the key" in rep["problems"][0]["message"]


@needs_shell
def test_rewrite_with_a_checkpoint_forged_with_another_key(chain, tmp_path, capsys):
    st = Store.open(chain, readonly=True)
    device = st.device_id
    st.close()
    tamper(chain, rehash_from(chain, 30, _edit_attrs))
    attacker, _ = keys.create(device, directory=str(tmp_path / "attacker"))
    size, head = 150, rows(chain, "SELECT chain_hash FROM events WHERE seq = 150")[0][0]
    note = checkpoint.sign(attacker, device, size, head, "2026-08-28T09:00:00.000000Z")
    tamper(chain, "DELETE FROM checkpoints; INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) "
                  f"VALUES ({size}, '{head}', '2026-08-28T09:00:00.000000Z', '{attacker.identity}', {q(note)}); "
                  f"UPDATE meta SET value = '{attacker.public_b64}' WHERE key = 'public_key'",
           triggers=CP_TRIGGERS)
    rep = expect_problem(chain, capsys, 120, eid_at(chain, 120), kind="checkpoint_mismatch")
    kinds = [p["kind"] for p in rep["problems"]]
    assert "checkpoint_signature" in kinds  # the forged note does not verify with the device key
    assert "kept beside the key" in rep["problems"][0]["message"]


@needs_shell
def test_without_the_device_key_a_forged_checkpoint_is_only_a_note(chain, tmp_path, capsys):
    """The documented limit: on a machine without the device key (and without the copy beside
    it) verify can only use the public key recorded in the file, which an attacker rewrites
    too. It says so instead of claiming more."""
    st = Store.open(chain, readonly=True)
    device = st.device_id
    st.close()
    os.remove(keys.key_path(device))
    os.remove(checkpoint.outside_path(device))
    tamper(chain, rehash_from(chain, 30, _edit_attrs))
    attacker, _ = keys.create(device, directory=str(tmp_path / "attacker"))
    head = rows(chain, "SELECT chain_hash FROM events WHERE seq = 150")[0][0]
    note = checkpoint.sign(attacker, device, 150, head, "2026-08-28T09:00:00.000000Z")
    tamper(chain, "DELETE FROM checkpoints; INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) "
                  f"VALUES (150, '{head}', '2026-08-28T09:00:00.000000Z', '{attacker.identity}', {q(note)}); "
                  f"UPDATE meta SET value = '{attacker.public_b64}' WHERE key = 'public_key'",
           triggers=CP_TRIGGERS)
    code, out, err = verify_cli(chain, capsys)
    assert code == 0 and out.startswith("ok: 150 events, 1 checkpoint")
    assert "proves integrity only against accidents" in " ".join(err.split())  # wrapped to the terminal


@needs_shell
def test_a_checkpoint_signed_for_another_database_is_refused(chain, tmp_path, capsys):
    st = Store.open(chain, readonly=True)
    device = st.device_id
    st.close()
    key = keys.load(device)
    other = ids.uuid7()
    head = rows(chain, "SELECT chain_hash FROM events WHERE seq = 150")[0][0]
    note = checkpoint.sign(key, other, 150, head, "2026-08-28T09:00:00.000000Z")
    tamper(chain, f"INSERT INTO checkpoints(size, head_hash, created_at, key_id, note) VALUES "
                  f"(150, '{head}', 'x', '{key.identity}', {q(note)})", triggers=CP_TRIGGERS)
    code, out, _ = verify_cli(chain, capsys, "--json")
    assert code == 1 and "checkpoint_origin" in [p["kind"] for p in json.loads(out)["problems"]]


@needs_shell
@pytest.mark.parametrize("value", ["NULL", "'not-a-uuid'", "'../../../../../tmp/x'"])
def test_a_bad_device_identity_is_a_problem_not_a_path(chain, capsys, value):
    if value == "NULL":
        shell(chain, "DELETE FROM meta WHERE key = 'device_id'")
    else:
        shell(chain, f"UPDATE meta SET value = {value} WHERE key = 'device_id'")
    code, out, _ = verify_cli(chain, capsys, "--json")
    rep = json.loads(out)
    assert code == 1 and [p["kind"] for p in rep["problems"]] == ["identity"]


@needs_shell
def test_hostile_device_id_never_leaves_the_key_directory(chain, tmp_path):
    target = tmp_path / "escaped"
    keydir = os.path.join(os.environ["XDG_DATA_HOME"], "attemptdb", "keys")
    rel = os.path.relpath(str(target), keydir)
    shell(chain, f"UPDATE meta SET value = '{rel}' WHERE key = 'device_id'")
    run(["keys", "init", "--db", chain])
    run(["checkpoint", "--db", chain])
    assert not os.path.exists(str(target) + ".key") and not os.path.exists(str(target) + ".checkpoint")


def test_malformed_checkpoint_note_is_a_problem(chain, capsys):
    st = Store.open(chain, readonly=True)
    device = st.device_id
    st.close()
    with open(checkpoint.outside_path(device), "w") as f:
        f.write("garbage\n\n\x00")
    code, out, _ = verify_cli(chain, capsys, "--json")
    assert code == 1 and "checkpoint_malformed" in [p["kind"] for p in json.loads(out)["problems"]]


# --- output shape --------------------------------------------------------------------------------

@needs_shell
def test_json_output_shape(chain, capsys):
    tamper(chain, "UPDATE events SET kind = 'unknown' WHERE seq = 12")
    code, out, _ = verify_cli(chain, capsys, "--json")
    rep = json.loads(out)
    assert code == 1
    assert set(rep) == {"ok", "events", "checkpoints", "problems", "warnings", "notes"}
    assert rep["ok"] is False and rep["events"] == 150 and rep["checkpoints"] == 1
    for p in rep["problems"]:
        assert set(p) == {"kind", "message", "seq", "event_id"}
    assert rep["problems"][0] == {"kind": "event_hash", "seq": 12, "event_id": eid_at(chain, 12),
                                  "message": rep["problems"][0]["message"]}
    assert out.count("\n") == 1  # one JSON document on one line


# --- the parallel path on a large file -------------------------------------------------------------

SPY_DIR = None


def _spy_check_range(path, lo, hi, gaps=None, cuts=None):
    with open(os.path.join(SPY_DIR, f"{os.getpid()}-{lo}-{hi}"), "w"):
        pass
    return _REAL_CHECK_RANGE(path, lo, hi, gaps, cuts)


_REAL_CHECK_RANGE = bulkcheck.check_range


def _small_events(n, device):
    base = {
        "schema_version": 1, "device_id": device, "source_seq": 0, "hlc": 0,
        "provider": "claude_code", "adapter_version": "0.1.1", "capture_mode": "metadata_only",
        "provider_event_name": "PostToolUse", "kind": "tool_call_finished",
        "project": {"project_id": ids.derive("prj_", "remote", "h/o/r"), "root": "/r", "name": "o/r"},
        "session_id": ids.session_id("claude_code", "s"), "provider_session_id": "s", "agent": {},
        "tool": {"name": "Bash", "category": "shell"}, "outcome": {"status": "success", "exit_code": 0},
    }
    t = 1787904000000000
    for i in range(n):
        yield dict(base, event_id=f"{i:08x}-0000-4000-8000-000000000000", observed_at=t + i, captured_at=t + i,
                   attrs={"hook_event_name": "PostToolUse", "command_bytes": i})


def build_large(path, n):
    """A file of n small events, linked by the real append code, without the projection
    migrations (their triggers are not what this test is about and cost ~20x per row)."""
    conn = apsw.Connection(path)
    conn.execute("PRAGMA journal_mode=WAL")
    schema.build(conn, 1)  # the events table; and its immutability triggers:
    conn.execute(dict(schema.current_sql())["10_immutability.sql"])
    conn.execute("PRAGMA user_version = 1")
    st = Store(conn, path, False)
    st._create_identity(None)
    batch = []
    for env in _small_events(n, st.device_id):
        batch.append(event.canonical(env))
        if len(batch) == 10_000:
            st.append(batch)
            batch = []
    if batch:
        st.append(batch)
    st.close()


@pytest.mark.slow
@needs_shell
def test_large_file_uses_the_parallel_path_and_finds_a_tamper_in_the_second_half(tmp_path, home, capsys, monkeypatch):
    global SPY_DIR
    n = 60_000
    assert n >= verify_mod.PARALLEL_MIN
    db = str(tmp_path / "large.db")
    build_large(db, n)
    SPY_DIR = str(tmp_path / "spy")
    os.makedirs(SPY_DIR)
    monkeypatch.setattr(bulkcheck, "check_range", _spy_check_range)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # the same on any machine
    code, out, _ = verify_cli(db, capsys)
    assert code == 0 and out == f"ok: {n} events, 0 checkpoints\n"
    ranges = sorted(tuple(int(x) for x in name.split("-")) for name in os.listdir(SPY_DIR))
    # 2 worker processes (never this one) take CHUNKS_PER_WORKER consecutive ranges each, and
    # SQLite's integrity check besides
    k = 2 * verify_mod.CHUNKS_PER_WORKER
    assert len(ranges) == k and 1 <= len({pid for pid, _, _ in ranges}) <= 2
    assert os.getpid() not in {r[0] for r in ranges}
    spans = sorted((lo, hi) for _, lo, hi in ranges)
    assert spans[0][0] == 1 and spans[-1][1] == n + 1 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))

    target = 45_678
    tamper(db, f"UPDATE events SET attrs_json = replace(attrs_json, '{target - 1}', '1') WHERE seq = {target}")
    rep = expect_problem(db, capsys, target, eid_at(db, target), kind="event_hash")
    assert rep["events"] == n
    # the serial path finds the same first problem
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 10**9)
    code, out, _ = verify_cli(db, capsys, "--json")
    assert code == 1 and json.loads(out)["problems"][0] == rep["problems"][0]


@needs_shell
def test_parallel_ranges_report_the_first_problem_across_ranges(tmp_path, home, capsys, monkeypatch):
    db = str(tmp_path / "p.db")
    build_large(db, 3000)
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 100)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    tamper(db, "UPDATE events SET kind = 'unknown' WHERE seq IN (2500, 1700)")
    expect_problem(db, capsys, 1700, eid_at(db, 1700), kind="event_hash")
    # a broken link exactly at a range boundary (first row of the second range)
    db2 = str(tmp_path / "q.db")
    build_large(db2, 3000)
    tamper(db2, "UPDATE events SET chain_hash = 'zz' WHERE seq = 1000")
    expect_problem(db2, capsys, 1000, eid_at(db2, 1000), kind="chain")


# --- files verify cannot read ---------------------------------------------------------------------

def test_not_a_database_missing_and_newer_files_are_coded_errors(tmp_path, home, capsys):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(bytes(range(256)) * 16)
    code, out, err = verify_cli(str(garbage), capsys)
    assert code == 2 and out == "" and err.startswith("error[store.not_a_database]")
    code, out, err = verify_cli(str(tmp_path / "missing.db"), capsys)
    assert code == 2 and err.startswith("error[store.missing]")
    assert not (tmp_path / "missing.db").exists()  # verify never creates a file


@needs_shell
def test_a_newer_schema_is_refused(chain, capsys):
    shell(chain, "PRAGMA user_version = 999")
    code, out, err = verify_cli(chain, capsys)
    assert code == 1 and err.startswith("error[store.newer_schema]")


@needs_shell
def test_exporting_a_tampered_row_is_a_coded_error(chain, capsys):
    tamper(chain, "UPDATE events SET observed_at = 'garbage' WHERE seq = 3")
    capsys.readouterr()
    code = run(["events", "--jsonl", "--db", chain])
    _, err = capsys.readouterr()
    assert "error[internal]" not in err and "seq=3" in err and code == 1


def test_the_key_never_signs_a_copy_or_a_rolled_back_file(tmp_path, home):
    """A copy of a database carries its device id; the device key must not sign the copy's
    diverging history, nor move the outside checkpoint back to a shorter chain."""
    import shutil

    from attemptdb.devtools import synth
    from attemptdb.errors import AttemptError
    from attemptdb.integrity import checkpoint as cp_mod
    a = str(tmp_path / "a.db")
    assert run(["init", "--db", a]) == 0
    st = Store.open(a)
    st.append(list(synth.generate(5, seed=1, device_id=st.device_id)))
    cp_mod.create(st)
    st.close()
    b = str(tmp_path / "b.db")
    shutil.copyfile(a, b)
    sa, sb = Store.open(a), Store.open(b)
    sa.append(list(synth.generate(3, seed=2, device_id=sa.device_id)))
    sb.append(list(synth.generate(4, seed=3, device_id=sb.device_id)))
    cp_mod.create(sa)  # the original goes on
    with pytest.raises(AttemptError) as e:
        cp_mod.create(sb)  # the copy diverged: refused
    assert e.value.code == "checkpoint.copy"  # recorded as a copy of a.db before its chain is read
    assert cp_mod.maybe_checkpoint(sb) is None  # read commands skip it silently
    outside = cp_mod.parse(cp_mod.read_outside(sa.device_id))
    assert outside.size == 8 and sa.conn.execute("SELECT chain_hash FROM events WHERE seq = 8").fetchone()[0] == outside.head


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_key_others_can_read_signs_nothing(tmp_path, home):
    """Like ssh with a private key: group or world access to the key file is refused (coded,
    exit 1), with the fix in the message."""
    db = str(tmp_path / "a.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    st = Store.open(db)
    st.append(list(synth.generate(3, seed=5, device_id=st.device_id)))
    path = keys.key_path(st.device_id)
    st.close()
    os.chmod(path, 0o640)
    for cmd in (["checkpoint"], ["keys", "show"]):
        r = run_attempt(cmd + ["--db", db])
        assert r.returncode == 1 and r.stderr.startswith(b"error[keys.exposed]"), r.stderr
        assert b"mode 640" in r.stderr and b"chmod 600" in r.stderr
    os.chmod(path, 0o600)
    assert run_attempt(["checkpoint", "--db", db]).returncode == 0


def test_a_broken_key_never_fails_a_read_and_says_so(tmp_path, home):
    """A checkpoint falls due during a read; the key cannot be loaded. The read (and an
    import) still succeed and print one note naming the key problem; nothing is signed."""
    db = str(tmp_path / "a.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    st = Store.open(db)
    path = keys.key_path(st.device_id)
    st.close()
    with open(path, "w") as f:
        f.write("not a key\n")
    src = tmp_path / "in.jsonl"
    src.write_bytes("".join(event.line(e) + "\n" for e in synth.generate(5, seed=9)).encode())
    r = run_attempt(["import", "jsonl", str(src), "--db", db], timeout=300)
    assert r.returncode == 0 and b"note: no checkpoint signed: error[keys.corrupt]" in r.stderr, r.stderr
    r = run_attempt(["timeline", "--db", db])
    assert r.returncode == 0 and b"error[keys.corrupt]" in r.stderr and r.stdout
    st = Store.open(db, readonly=True)
    assert checkpoint.latest(st) is None
    st.close()
