"""The single-file store: creation, migrations, identity, append semantics, immutability."""

import json
import os
import signal
import sqlite3

import apsw
import pytest

from attemptdb.devtools import synth
from attemptdb.errors import AttemptError
from attemptdb.integrity import chain
from attemptdb.model import event, ids
from attemptdb.store import schema
from attemptdb.store.database import Store


def _events(n, seed=7, **kw):
    return list(synth.generate(n, seed=seed, **kw))


def test_create_sets_wal_version_identity_and_private_mode(db):
    st = Store.open(db)
    assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert st.user_version() == schema.latest()
    dev = st.device_id
    assert ids.is_uuid(dev) and dev[14] == "7"  # UUIDv7
    assert st.capture_mode == "local_semantic"
    st.close()
    assert os.stat(db).st_mode & 0o077 == 0
    again = Store.open(db)
    assert again.device_id == dev  # created once per file
    again.close()


def test_capture_mode_stored_and_unreadable_fails_closed(db):
    st = Store.open(db, capture_mode="metadata_only")
    assert st.capture_mode == "metadata_only"
    st.set_meta("capture_mode", "everything please")
    assert st.capture_mode == "metadata_only"
    st.close()


def test_newer_schema_is_refused(db):
    st = Store.open(db)
    st.conn.execute("PRAGMA user_version = 999")
    st.close()
    with pytest.raises(AttemptError) as e:
        Store.open(db)
    assert e.value.code == "store.newer_schema"
    with pytest.raises(AttemptError):
        Store.open(db, readonly=True)


def test_missing_and_garbage_files_are_coded_errors(tmp_path):
    with pytest.raises(AttemptError) as e:
        Store.open(str(tmp_path / "nope.db"), create=False)
    assert e.value.code == "store.missing"
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(AttemptError) as e:
        Store.open(str(junk))
    assert e.value.code == "store.not_a_database"


def test_migrations_are_idempotent_and_race_free(db):
    a = Store.open(db)
    b = Store.open(db)  # a second opener finds everything applied
    assert a.user_version() == b.user_version()
    assert a.device_id == b.device_id
    n = a.conn.execute("SELECT count(*) FROM meta WHERE key = 'device_id'").fetchone()[0]
    assert n == 1


def test_append_assigns_clocks_hashes_and_dedups(db):
    st = Store.open(db)
    envs = _events(50, device_id=st.device_id)
    res = st.append(envs)
    assert len(res.accepted) == 50 and not res.duplicates
    rows = st.conn.execute("SELECT seq, source_seq, hlc, ingested_at FROM events ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == list(range(1, 51))
    assert [r[1] for r in rows] == list(range(1, 51))
    hlcs = [r[2] for r in rows]
    assert hlcs == sorted(hlcs) and len(set(hlcs)) == 50
    assert all(r[3].endswith("Z") and len(r[3]) == 27 for r in rows)
    again = st.append(envs[:10] + envs[:10])
    assert not again.accepted and len(again.duplicates) == 20
    assert st.count() == 50
    # within one batch, the second copy of an id is the duplicate
    fresh = _events(3, seed=99, device_id=st.device_id)
    res = st.append([fresh[0], fresh[1], fresh[0], fresh[2]])
    assert res.accepted == [fresh[0]["event_id"], fresh[1]["event_id"], fresh[2]["event_id"]]
    assert res.duplicates == [fresh[0]["event_id"]]


def test_given_clocks_are_kept_and_own_sequence_continues(db):
    st = Store.open(db)
    other = ids.derive("dev_", "other-machine")
    envs = _events(5, seed=3, device_id=other)
    for i, e in enumerate(envs):
        e["source_seq"], e["hlc"], e["ingested_at"] = 100 + i, (1_787_904_000_000 << 16) + i, e["captured_at"]
    st.append(envs)
    got = st.conn.execute("SELECT source_seq FROM events ORDER BY seq").fetchall()
    assert [g[0] for g in got] == [100, 101, 102, 103, 104]
    mine = _events(2, seed=4, device_id=st.device_id)
    st.append(mine)
    own = st.conn.execute("SELECT source_seq, hlc FROM events WHERE device_id = ? ORDER BY seq",
                          ("dev_" + st.device_id,)).fetchall()
    assert [o[0] for o in own] == [1, 2]
    assert own[0][1] > (1_787_904_000_000 << 16) + 4  # the clock observed the imported ones


def test_events_are_immutable_except_retracted_going_up(db):
    st = Store.open(db)
    st.append(_events(3, device_id=st.device_id))
    for sql in ("UPDATE events SET kind = 'unknown' WHERE seq = 1",
                "UPDATE events SET attrs_json = '{}' WHERE seq = 2",
                "DELETE FROM events WHERE seq = 3",
                "UPDATE events SET retracted = 2 WHERE seq = 1"):
        with pytest.raises(apsw.ConstraintError):
            st.conn.execute(sql)
    assert st.count() == 3
    # the same holds for the plain sqlite3 module (not only apsw)
    st.close()
    con = sqlite3.connect(db)
    with pytest.raises(sqlite3.IntegrityError):
        con.execute("DELETE FROM events")
    con.close()


def test_unknown_top_level_x_fields_survive(db):
    st = Store.open(db)
    env = _events(1, device_id=st.device_id)[0]
    env["x_acme_trace"] = {"span": [1, 2, {"deep": "é"}]}
    env["x_b"] = "second"
    st.append([env])
    row = st.conn.execute(f"SELECT {', '.join(event.COLUMNS)} FROM events").fetchone()
    back = json.loads(event.line_from_row(row))
    assert back["x_acme_trace"] == env["x_acme_trace"] and back["x_b"] == "second"
    assert list(back)[-2:] == ["x_acme_trace", "x_b"]


def test_unstorable_envelopes_are_refused_whole(db):
    st = Store.open(db)
    good, bad = _events(2, device_id=st.device_id)
    bad["observed_at"] = 10 ** 20  # far beyond year 9999
    with pytest.raises(event.EventError):
        st.append([good, bad])
    assert st.count() == 0  # nothing of the batch was written


def test_a_batch_failing_inside_sqlite_leaves_nothing_and_the_next_batch_is_whole(db):
    """A batch is one INSERT from a staging table: a row that SQLite refuses half-way (here a
    temporary trigger of this connection) undoes the whole batch, rows before it included,
    and the stage is empty for the next append."""
    st = Store.open(db)
    first = _events(5, device_id=st.device_id)
    st.append(first)
    head = st.head()
    batch = _events(6, seed=11, device_id=st.device_id)
    st.conn.execute("CREATE TEMP TRIGGER refuse AFTER INSERT ON main.events "
                    f"WHEN NEW.event_id = 'ev_{batch[4]['event_id']}' BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(apsw.ConstraintError):
        st.append(batch)
    assert st.count() == 5 and st.head() == head
    assert st.conn.execute("SELECT count(*) FROM temp.append_stage").fetchone()[0] == 0
    st.conn.execute("DROP TRIGGER temp.refuse")
    res = st.append(batch)
    assert len(res.accepted) == 6 and (res.first_seq, res.last_seq) == (6, 11)
    ids_in_order = [r[0] for r in st.conn.execute("SELECT event_id FROM events ORDER BY seq")]
    assert ids_in_order == ["ev_" + e["event_id"] for e in first + batch]


def test_readonly_connection_cannot_write(db):
    Store.open(db).close()
    ro = Store.open(db, readonly=True)
    with pytest.raises(apsw.ReadOnlyError):
        ro.conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")


def test_a_writer_closing_before_a_reader_leaves_no_large_wal(db):
    """A read command's writer (a migration, a drained spool) closes while its read-only
    connection is still open, and that one cannot checkpoint: the -wal stayed whole, and every
    later first reader rebuilt its index from all of it. The writer folds it in before it closes."""
    from attemptdb.store import database
    Store.open(db).close()
    ro = Store.open(db, readonly=True)
    st = Store.open(db)
    st.conn.execute("PRAGMA wal_autocheckpoint=0")  # the frames stay in the -wal, as in one big transaction
    st.append(_events(3000))
    assert os.path.getsize(db + "-wal") > database.WAL_FOLD_BYTES
    st.close()
    assert ro.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 3000
    ro.close()
    assert not os.path.exists(db + "-wal") or os.path.getsize(db + "-wal") == 0
    again = Store.open(db, readonly=True)
    assert again.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 3000
    again.close()


def test_a_small_wal_is_left_to_sqlite(db):
    """Below WAL_FOLD_BYTES closing a writer costs no checkpoint of its own (a hook's close)."""
    Store.open(db).close()
    ro = Store.open(db, readonly=True)
    st = Store.open(db)
    st.conn.execute("PRAGMA wal_autocheckpoint=0")
    st.append(_events(3))
    size = os.path.getsize(db + "-wal")
    assert 0 < size <= 4 << 20
    st.close()
    assert os.path.getsize(db + "-wal") == size  # the reader still holds the file: nothing folded
    ro.close()


def test_row_line_and_prepared_agree_on_awkward_text(db):
    st = Store.open(db)
    env = _events(1, device_id=st.device_id)[0]
    weird = 'q"\\\n\t\x00\x1f\x7f\u2028\u2029 é 😀 </script>'
    env["provider_session_id"] = weird
    env["session_id"] = ids.session_id(env["provider"], weird)
    env["project"] = dict(env["project"], root="/tmp/" + weird, name=weird)
    env["attrs"] = {"hook_event_name": weird[:3]}
    env["content"] = {"prompt": weird}
    st.append([env])
    row = st.conn.execute(f"SELECT {', '.join(event.COLUMNS)}, event_hash FROM events").fetchone()
    line = event.line_from_row(row[:-1])
    assert chain.hash_line(line) == row[-1]
    assert json.loads(line)["provider_session_id"] == weird


def test_foreign_clocks_cannot_wedge_the_writer(db):
    """An imported event with a huge hlc or source_seq must not push the writer's next value
    out of 64 bits (every later append would fail), nor drag its clock into the future."""
    st = Store.open(db)
    far = _events(2, seed=21, device_id=st.device_id)
    far[0]["hlc"] = 2**63 - 1
    with pytest.raises(event.EventError):
        st.append([far[0]])
    far[1]["hlc"], far[1]["source_seq"], far[1]["ingested_at"] = 2**62, 2**62 - 5, far[1]["captured_at"]
    st.append([far[1]])
    mine = _events(1, seed=22, device_id=st.device_id)
    st.append(mine)  # still works
    hlc = st.conn.execute("SELECT hlc FROM events ORDER BY seq DESC LIMIT 1").fetchone()[0]
    from attemptdb.model import clock
    assert clock.hlc_unpack(hlc)[0] <= clock.now_us() // 1000 + 1000  # not in the far future


def test_foreign_sqlite_files_are_never_migrated(tmp_path):
    """Someone else's SQLite file (or a gutted one) given as --db is refused, untouched."""
    foreign = str(tmp_path / "bookmarks.sqlite")
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE bookmarks (url TEXT)")
    con.execute("INSERT INTO bookmarks VALUES ('https://example.com')")
    con.commit()
    con.close()
    before = open(foreign, "rb").read()
    for kw in ({}, {"readonly": True}, {"create": False}):
        with pytest.raises(AttemptError) as e:
            Store.open(foreign, **kw)
        assert e.value.code == "store.not_attemptdb"
    assert open(foreign, "rb").read() == before
    gutted = str(tmp_path / "gutted.db")
    con = sqlite3.connect(gutted)
    con.execute("PRAGMA user_version = 5")
    con.commit()
    con.close()
    with pytest.raises(AttemptError) as e:
        Store.open(gutted)
    assert e.value.code == "store.not_attemptdb"


def test_a_directory_is_a_coded_error(tmp_path):
    d = tmp_path / "dir.db"
    d.mkdir()
    with pytest.raises(AttemptError) as e:
        Store.open(str(d))
    assert e.value.code == "store.not_a_file"


_CTRL_C = r"""
import os, signal, sys, threading, time
from attemptdb.store.database import Store
st = Store.open(sys.argv[1], readonly=sys.argv[2] == "ro")
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    st.conn.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000000) "
                    "SELECT count(*) FROM c").fetchall()
    print("finished")
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - t0, 1), st.count())
"""


@pytest.mark.parametrize("mode", ["rw", "ro"])
def test_ctrl_c_stops_a_long_statement(db, mode):
    """SQLite never returns to Python inside one statement; every connection's progress handler
    lets a pending Ctrl-C abort it (without it this statement runs for minutes)."""
    import subprocess
    import sys
    st = Store.open(db)
    st.append(_events(3))
    st.close()
    # SIGINT back to its default in the child: a runner started in the background passes it ignored
    r = subprocess.run([sys.executable, "-c", _CTRL_C, db, mode], capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    words = r.stdout.split()
    assert words[0] == "interrupted", r.stdout + r.stderr
    assert float(words[1]) < 10 and words[2] == "3"  # stopped soon, and the connection still works


def test_sqlite_stops_counting_allocations_before_the_first_connection_only(tmp_path):
    """store.database.stop_counting_allocations: a process that opens its first connection
    through Store.open runs SQLite without memory statistics (no global mutex per allocation);
    a process that already holds a connection keeps them (SQLite changes this only while no
    connection is open)."""
    import subprocess
    import sys
    code = ("import sys, apsw\n"
            "first = sys.argv[2] == 'first'\n"
            "other = None if first else apsw.Connection(':memory:')\n"
            "from attemptdb.store.database import Store\n"
            "s = Store.open(sys.argv[1])\n"
            "s.conn.execute('SELECT count(*) FROM events').fetchall()\n"
            "print(apsw.memory_used())\n")
    out = {}
    for mode in ("first", "after"):
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"{mode}.db"), mode],
                           capture_output=True, text=True, check=True)
        out[mode] = int(r.stdout.strip())
    assert out["first"] == 0 and out["after"] > 0
