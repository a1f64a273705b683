"""`attempt sync` against a hostile or broken shared folder (spec/sync.md): a teammate's machine
(or the sync tool) writes whatever it likes beside our segments. Every problem is coded, loses
nothing already stored, never hangs or crashes, and memory stays bounded by a line, not a segment."""

import errno
import hashlib
import json
import os
import tracemalloc
import uuid

import pytest
from sync_world import Device, events_by_device, forge_segment, teammate_key

from attemptdb.integrity import chain
from attemptdb.integrity import segments as segment
from attemptdb.model import event
from attemptdb.store import plainfile
from attemptdb.store.database import Store
from attemptdb.sync import folder as sync_folder

FORGED = "dev_00000000-0000-4000-8000-000000000001"  # sorts before every real (time-based) device id


@pytest.fixture
def world(tmp_path, monkeypatch, capsys):
    """The laptop published one segment of its 10 events; the CI box (the victim) has not pulled."""
    folder = str(tmp_path / "shared")
    os.makedirs(folder)
    evs = events_by_device()
    devs = {}
    for name in ("laptop", "ci"):
        d = devs[name] = Device(str(tmp_path), name)
        assert d.cli(monkeypatch, capsys, "init")[0] == 0
        d.capture(evs[name])
    lap = devs["laptop"]
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    return folder, devs["laptop"], devs["ci"], os.path.join(folder, lap.device_id())


def _lines(ddir, device, *, pad=0, count=None):
    """The laptop's published lines as another device's own: fresh event ids, `device`'s id,
    source_seq 1.. (`pad` characters of x_ attrs make lines as long as wanted)."""
    out = []
    tmpl = open(os.path.join(ddir, segment.data_name(1)), "rb").read().splitlines()
    for i in range(count or len(tmpl)):
        env = json.loads(tmpl[i % len(tmpl)])
        env.update(device_id=device[4:], event_id=str(uuid.UUID(int=i + 1, version=4)), source_seq=i + 1)
        if pad:  # in x_ attrs of at most 200 bytes each (an attrs string holds at most 256; x_<provider>_<name>)
            env["attrs"].update({f"x_test_pad{k:03d}": "a" * min(200, pad - 200 * k) for k in range(-(-pad // 200))})
        out.append(json.dumps(env, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return out


def _pull(dev, monkeypatch, capsys, folder, *more):
    code, out, err = dev.cli(monkeypatch, capsys, "sync", folder, "--pull-only", "--json", *more)
    assert "error[internal]" not in err, err
    return code, (json.loads(out) if out else None), err


# --- lines ------------------------------------------------------------------------------------

def test_a_lone_surrogate_in_a_line_is_a_bad_line_and_the_other_devices_still_pull(world, tmp_path, monkeypatch,
                                                                                    capsys):
    folder, lap, ci, ddir = world
    lines = _lines(ddir, FORGED)
    lines[1] = lines[1].replace(b'"cwd":"/work/demo"', b'"cwd":"\\ud800"', 1)
    assert b"\\ud800" in lines[1]
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, teammate_key(str(tmp_path)),
                  last_source_seq=len(lines))
    code, rep, err = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1, err  # was: exit 2, "error[input.not_utf8]: an argument is not valid UTF-8 text"
    assert [(p["code"], p["device"], p["segment"]) for p in rep["problems"]] == [("sync.bad_line", FORGED, 1)]
    assert "line 2" in rep["problems"][0]["message"]
    assert ci.count("device_id = ?", (FORGED,)) == 0
    assert ci.count("device_id = ?", (lap.device_id(),)) == 10  # the devices after it were pulled


CONTENT = "zq9PROMPTzq9"  # a marker no message may echo


@pytest.mark.parametrize("attrs,where", [
    ({"prompt_text": f"please fix the {CONTENT} bug"}, "$.attrs.prompt_text"),  # a key off the allowlist
    ({"x_zz_prompt": "line one\nline two " + CONTENT}, "$.attrs.x_zz_prompt"),  # text, not a fact
    ({"cwd": f"/home/alice/{CONTENT}"}, "$.attrs.cwd"),  # a home directory
    ({"model": f"{CONTENT}@example.com"}, "$.attrs.model"),  # an email address
    ({"reason": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"}, "$.attrs.reason"),  # a secret
    ({"provider": {"note": f"{CONTENT}\n"}}, "$.attrs.provider"),
], ids=["key", "multiline", "home", "email", "secret", "provider_member"])
def test_a_line_whose_attrs_carry_content_is_a_bad_line_and_the_other_devices_still_pull(world, tmp_path,
                                                                                        monkeypatch, capsys,
                                                                                        attrs, where):
    """A teammate's line is checked as an imported line is: attrs hold only allowlisted,
    content-free values (DESIGN.md invariant 5). An import drops such an entry; a signed line
    cannot be rewritten, so the device's segment is refused (it had been stored as signed)."""
    folder, lap, ci, ddir = world
    lines = _lines(ddir, FORGED)
    env = json.loads(lines[2])
    env["attrs"].update(attrs)
    lines[2] = event.line(event.canonical(env)).encode("utf-8")
    event.parse_line(lines[2], 3)  # within the bounds: only the content-free rules refuse it
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, teammate_key(str(tmp_path)),
                  last_source_seq=len(lines))
    before = ci.count()
    code, rep, err = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1, err
    assert [(p["code"], p["device"], p["segment"]) for p in rep["problems"]] == [("sync.bad_line", FORGED, 1)]
    assert f"line 3: {where}: " in rep["problems"][0]["message"]
    assert CONTENT not in json.dumps(rep) + err
    assert ci.count("device_id = ?", (FORGED,)) == 0  # was: all 10 stored, the content with them
    assert ci.count("device_id = ?", (lap.device_id(),)) == 10  # the other devices still pulled
    assert ci.count() == before + 10  # nothing already stored was lost
    assert not ci.rows("SELECT 1 FROM events WHERE attrs_json LIKE ?", (f"%{CONTENT}%",))


def test_a_teammates_content_free_attrs_still_pull_byte_for_byte(world, tmp_path, monkeypatch, capsys):
    """What the contract keeps passes: allowlisted and x_<provider>_<name> keys, counts, flags,
    logical paths, a provider object of scalars, a redactions count."""
    folder, lap, ci, ddir = world
    lines = _lines(ddir, FORGED)
    env = json.loads(lines[2])
    env["attrs"].update({"x_cursor_loop_count": 3, "cwd_logical": "~/proj", "file_is_test": True,
                         "path_extensions": ["py", "md"], "provider": {"status": "ok", "loop_count": 2},
                         "redactions": 2})
    lines[2] = event.line(event.canonical(env)).encode("utf-8")
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, teammate_key(str(tmp_path)),
                  last_source_seq=len(lines))
    code, rep, err = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["imported"] == 20, (rep, err)
    stored = ci.rows("SELECT event_hash FROM events WHERE event_id = ?", ("ev_" + env["event_id"],))
    assert stored == [(hashlib.sha256(lines[2]).hexdigest(),)]


def test_a_large_segment_is_streamed_not_read_whole(world, tmp_path, monkeypatch):
    """A 16 MiB segment (2,000 lines of 8 KiB) is hashed in chunks and imported a chunk at a
    time: the pull's Python heap stays far below the segment (it held it whole, twice, plus every
    envelope: a 255 MiB segment of 20,000 lines took 1,135 MiB of RSS, now 78 MiB)."""
    folder, lap, ci, ddir = world
    lines = _lines(ddir, FORGED, pad=8 << 10, count=2000)
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, teammate_key(str(tmp_path)),
                  last_source_seq=len(lines))
    size = os.path.getsize(os.path.join(folder, FORGED, segment.data_name(1)))
    assert size > 16 << 20
    del lines
    monkeypatch.setattr(sync_folder, "IMPORT_BYTES", 1 << 20, raising=False)
    monkeypatch.setattr(sync_folder, "IMPORT_CHUNK", 100, raising=False)
    st = Store.open(ci.db)
    try:
        tracemalloc.start()
        rep = sync_folder.pull(st, folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        st.close()
    assert rep.ok and rep.devices[FORGED]["accepted"] == 2000, [p.message for p in rep.problems]
    assert peak < size // 2, (peak, size)
    assert ci.count("device_id = ?", (FORGED,)) == 2000


def test_a_misplaced_manifest_does_not_echo_what_it_claims(world, tmp_path, monkeypatch, capsys):
    folder, lap, ci, ddir = world
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, _lines(ddir, FORGED),
                  teammate_key(str(tmp_path)), device_id="\x1b[31mEVIL-NAME", last_source_seq=10)
    code, rep, _ = _pull(ci, monkeypatch, capsys, folder)
    p = rep["problems"][0]
    assert code == 1 and p["code"] == "sync.misplaced" and "EVIL" not in p["message"]


# --- the state this file keeps, and other pulls -----------------------------------------------

def test_two_pulls_at_once_import_a_device_once_without_a_crash(world, monkeypatch):
    """Another `attempt sync` of this file imports the laptop between our checks and our write
    lock: ours checks again (it had died on the sync_segments primary key: error[internal])."""
    folder, lap, ci, ddir = world
    real = sync_folder.clock
    ran = []

    class Meanwhile:
        def __getattr__(self, name):
            return getattr(real, name)

        def iso(self, us):
            if not ran:
                ran.append(1)
                other = Store.open(ci.db)
                try:
                    assert sync_folder.pull(other, folder).imported == 10
                finally:
                    other.close()
            return real.iso(us)

    monkeypatch.setattr(sync_folder, "clock", Meanwhile())
    st = Store.open(ci.db)
    try:
        rep = sync_folder.pull(st, folder)
    finally:
        st.close()
    assert ran and rep.ok and rep.imported == 0
    assert ci.count("device_id = ?", (lap.device_id(),)) == 10
    assert ci.rows("SELECT count(*) FROM sync_segments") == [(1,)]


@pytest.mark.parametrize("sql,where", [
    ("UPDATE sync_segments SET manifest = 'not json'", "segment"),
    ("UPDATE sync_segments SET manifest = '" + "[" * 5000 + "]" * 5000 + "'", "segment"),
    ("UPDATE sync_segments SET segment = 'one'", "device"),
    ("UPDATE sync_keys SET key_id = NULL", "device"),
], ids=["not_json", "deep", "segment_text", "pin_null"])
def test_edited_kept_state_refuses_that_device_with_a_code(world, monkeypatch, capsys, sql, where):
    folder, lap, ci, ddir = world
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    st = Store.open(ci.db)
    if "key_id = NULL" in sql:  # the NOT NULL a hand edit removes
        st.conn.execute("DROP TABLE sync_keys; CREATE TABLE sync_keys(device_id TEXT PRIMARY KEY, key_id TEXT, "
                        "public_key TEXT, how TEXT, revoked INTEGER, pinned_at TEXT); INSERT INTO sync_keys "
                        "VALUES ('" + lap.device_id() + "', NULL, NULL, 'first_use', 0, 'x')")
    else:
        st.conn.execute(sql)
    st.close()
    before = ci.count()
    code, rep, err = _pull(ci, monkeypatch, capsys, folder)
    assert code == 1 and rep is not None, err  # was: a traceback, or an uncoded JSON message
    assert [(p["code"], p["device"]) for p in rep["problems"]] == [("sync.state_changed", lap.device_id())]
    assert ci.count() == before


@pytest.mark.parametrize("table", ["sync_segments", "sync_keys"])
def test_a_sync_table_of_another_shape_is_coded_for_sync_and_verify(world, monkeypatch, capsys, table):
    folder, lap, ci, ddir = world
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    st = Store.open(ci.db)
    st.conn.execute(f"DROP TABLE {table}; CREATE TABLE {table}(a)")
    st.close()
    for args in (("sync", folder, "--pull-only"), ("verify",), ("keys", "list")):
        code, out, err = ci.cli(monkeypatch, capsys, *args)
        assert code == 1 and "error[sync.state_changed]" in err, (args, out + err)


def _unlistable(monkeypatch, ddir):
    """os.listdir of `ddir` (by its path or a descriptor of it) refused (EACCES: the sandbox runs
    as root); returns the real one."""
    real = os.listdir

    def listdir(path="."):
        if isinstance(path, int):
            hit = os.path.samestat(os.fstat(path), os.stat(ddir))
        else:
            hit = isinstance(path, str) and os.path.abspath(path) == os.path.abspath(ddir)
        if hit:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path)
    monkeypatch.setattr(os, "listdir", listdir)
    return real


def test_an_unlistable_device_folder_is_unreadable_not_a_rollback(world, monkeypatch, capsys):
    folder, lap, ci, ddir = world
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0
    _unlistable(monkeypatch, ddir)
    code, rep, _ = _pull(ci, monkeypatch, capsys, folder)
    # was: sync.dropped ("the device's history was cut or rolled back"), or nothing at all
    assert code == 1 and [p["code"] for p in rep["problems"]] == ["sync.unreadable"]


def test_a_folder_full_of_other_names_gives_a_bounded_report(world, monkeypatch, capsys):
    folder, lap, ci, ddir = world
    for i in range(100):
        os.makedirs(os.path.join(folder, f"junk\n{i}"))
    code, rep, _ = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["imported"] == 10
    assert len(rep["notes"]) <= 22
    assert any("80 more" in n for n in rep["notes"])
    assert not any("\n" in n for n in rep["notes"])


def test_a_device_replaying_anothers_event_ids_is_named_in_the_conflict(world, tmp_path, monkeypatch, capsys):
    """What sync cannot prevent (spec/sync.md): a device whose segments are read first claims
    another device's event ids; the real device's segments then conflict. The problem names the
    device that holds them, so the user knows whom to revoke."""
    folder, lap, ci, ddir = world
    lines = [x.replace(lap.device_id()[4:].encode(), FORGED[4:].encode())
             for x in open(os.path.join(ddir, segment.data_name(1)), "rb").read().splitlines()]
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, teammate_key(str(tmp_path)),
                  last_source_seq=10)
    code, rep, _ = _pull(ci, monkeypatch, capsys, folder)
    p = rep["problems"]
    assert code == 1 and [(x["code"], x["device"]) for x in p] == [("sync.conflict", lap.device_id())]
    assert FORGED in p[0]["message"]


# --- push ---------------------------------------------------------------------------------------

def _more(lap):
    lap.capture([dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["ci"][:3]])


def test_push_never_rewrites_a_published_data_file_when_its_folder_cannot_be_listed(world, monkeypatch, capsys):
    folder, lap, ci, ddir = world
    _more(lap)
    published = {n: open(os.path.join(ddir, n), "rb").read() for n in os.listdir(ddir)}
    real = _unlistable(monkeypatch, ddir)
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")
    monkeypatch.setattr(os, "listdir", real)
    assert code == 2 and "error[sync.unreadable]" in err, out + err
    assert {n: open(os.path.join(ddir, n), "rb").read() for n in os.listdir(ddir)} == published


@pytest.mark.parametrize("how", ["folder_in_the_way", "disk_full"])
def test_a_push_that_cannot_write_is_coded_leaves_nothing_and_the_next_one_recovers(world, monkeypatch, capsys,
                                                                                   how):
    folder, lap, ci, ddir = world
    _more(lap)
    in_the_way = os.path.join(ddir, segment.data_name(2))
    real = os.fsync
    if how == "folder_in_the_way":
        os.makedirs(in_the_way)
    else:
        def fsync(fd):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(os, "fsync", fsync)
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")
    assert code == 2 and "error[sync.unwritable]" in err, out + err  # was: error[internal]
    assert not [n for n in os.listdir(ddir) if n.startswith(".")]  # no temporary file left behind
    assert not os.path.exists(os.path.join(ddir, segment.manifest_name(2)))
    if how == "folder_in_the_way":
        os.rmdir(in_the_way)
    monkeypatch.setattr(os, "fsync", real)
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    code, rep, _ = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["imported"] == 13
    assert ci.count("device_id = ?", (lap.device_id(),)) == 13


def test_a_push_killed_midway_leaves_nothing_the_next_push_or_pull_trips_on(world, monkeypatch, capsys):
    """kill -9 between the data file and its manifest, and inside a temporary file: the next
    push writes that number again and removes the temporary file (a sync tool would carry it)."""
    folder, lap, ci, ddir = world
    _more(lap)
    with open(os.path.join(ddir, segment.data_name(2)), "wb") as f:
        f.write(b"half a line")
    with open(os.path.join(ddir, ".attempt-sync-x1y2z3.tmp"), "wb") as f:
        f.write(b"\0" * 1000)
    assert _pull(ci, monkeypatch, capsys, folder)[0] == 0  # a data file alone is not a segment yet
    assert lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")[0] == 0
    assert sorted(os.listdir(ddir)) == [segment.data_name(1), segment.manifest_name(1), segment.data_name(2),
                                        segment.manifest_name(2)]
    code, rep, _ = _pull(ci, monkeypatch, capsys, folder)
    assert code == 0 and rep["imported"] == 3
    assert ci.count("device_id = ?", (lap.device_id(),)) == 13


def test_push_holds_the_write_lock_so_two_pushes_never_write_one_number(world, monkeypatch):
    """Two pushes of one file would both write the next segment number, one replacing the
    other's data file under the other's signed manifest (every pull: sync.file_changed)."""
    folder, lap, ci, ddir = world
    _more(lap)
    holder = Store.open(lap.db)
    holder.conn.execute("BEGIN IMMEDIATE")
    st = Store.open(lap.db)
    st.set_busy_timeout(0.05)
    try:
        from attemptdb.integrity import keys
        from attemptdb.store import location
        for k, v in lap.env().items():
            monkeypatch.setenv(k, v)
        key = keys.load(st.device_id, location.key_dir())
        assert key is not None
        with pytest.raises(Exception) as e:
            sync_folder.push(st, folder, key)
        assert "busy" in type(e.value).__name__.lower() or getattr(e.value, "code", "") == "store.busy"
        assert not os.path.exists(os.path.join(ddir, segment.data_name(2)))
    finally:
        holder.conn.execute("ROLLBACK")
        holder.close()
        st.close()


# --- a folder swapped for a symlink while sync works in it ------------------------------------

def _relabelled(lines, first_id: int):
    """`lines` with fresh event ids (first_id, first_id + 1, …)."""
    out = []
    for i, raw in enumerate(lines):
        env = json.loads(raw)
        env["event_id"] = str(uuid.UUID(int=first_id + i, version=4))
        out.append(event.line(event.canonical(env)).encode("utf-8"))
    return out


def _swap_for_symlink(folder: str, name: str, target: str) -> None:
    """`folder/name` (a directory) moved aside, inside the folder under a name pull ignores, and a
    symlink to `target` put in its place: what a teammate (or a sync tool) can do at any moment."""
    os.rename(os.path.join(folder, name), os.path.join(folder, ".aside-" + name))
    os.symlink(target, os.path.join(folder, name))


@pytest.fixture
def forged_and_outside(world, tmp_path):
    """A teammate's device FORGED with one segment in the sync folder (event ids 1..10), and a
    directory outside the sync folder holding another segment 1 of FORGED signed by the same key
    (event ids 1001..1010): what pull would import if it followed a swapped symlink."""
    folder, lap, ci, ddir = world
    key = teammate_key(str(tmp_path))
    lines = _lines(ddir, FORGED)
    forge_segment(os.path.join(folder, FORGED), FORGED, 1, chain.GENESIS, lines, key, last_source_seq=len(lines))
    outside = str(tmp_path / "outside")
    forge_segment(outside, FORGED, 1, chain.GENESIS, _relabelled(lines, 1001), key, last_source_seq=len(lines))
    assert sorted(os.listdir(folder))[0] == FORGED  # pulled first
    return folder, lap, ci, outside


def _pull_in_process(dev, folder):
    st = Store.open(dev.db)
    try:
        return sync_folder.pull(st, folder)
    finally:
        st.close()


OUTSIDE_IDS = tuple(f"ev_{uuid.UUID(int=1001 + i, version=4)}" for i in range(10))


@pytest.mark.parametrize("step", ["listing", "opening"])
def test_a_device_folder_swapped_for_a_symlink_after_it_was_opened_is_never_read_through(forged_and_outside,
                                                                                      monkeypatch, step):
    """The device folder is checked, then swapped for a symlink to a directory outside the sync
    folder just before its segments are listed (or its first manifest opened). Pull had listed
    and opened through the symlink and imported the outside segment; it now reads everything
    relative to the folder it opened (O_DIRECTORY | O_NOFOLLOW): only what was in the folder."""
    folder, lap, ci, outside = forged_and_outside
    swapped = []

    def swap():
        if not swapped:
            swapped.append(1)
            _swap_for_symlink(folder, FORGED, outside)

    if step == "listing":
        real = segment.list_segments

        def list_segments(device_dir):
            swap()
            return real(device_dir)
        monkeypatch.setattr(segment, "list_segments", list_segments)
    else:
        real = plainfile.open_regular

        def open_regular(path, *args, **kwargs):
            if path.endswith(".manifest.json"):
                swap()
            return real(path, *args, **kwargs)
        monkeypatch.setattr(plainfile, "open_regular", open_regular)
    rep = _pull_in_process(ci, folder)
    assert swapped
    assert ci.count(f"event_id IN ({','.join('?' * 10)})", OUTSIDE_IDS) == 0  # was: 10, read from outside
    assert rep.ok, [(p.code, p.message) for p in rep.problems]
    assert ci.count("device_id = ?", (FORGED,)) == 10 and ci.count("device_id = ?", (lap.device_id(),)) == 10


def test_a_device_folder_swapped_for_a_symlink_before_it_is_opened_is_refused_with_a_code(forged_and_outside,
                                                                                         monkeypatch):
    """Swapped between the listing of the sync folder and the opening of the device folder: the
    open refuses the symlink (sync.not_a_directory for that device); the others still pull."""
    folder, lap, ci, outside = forged_and_outside
    real = os.listdir

    def listdir(path="."):
        names = real(path)
        top = os.path.samestat(os.fstat(path), os.stat(folder)) if isinstance(path, int) \
            else isinstance(path, str) and os.path.abspath(path) == os.path.abspath(folder)
        if top and FORGED in names and not os.path.islink(os.path.join(folder, FORGED)):
            _swap_for_symlink(folder, FORGED, outside)
        return names
    monkeypatch.setattr(os, "listdir", listdir)
    rep = _pull_in_process(ci, folder)
    assert [(p.code, p.device) for p in rep.problems] == [("sync.not_a_directory", FORGED)]
    assert ci.count("device_id = ?", (FORGED,)) == 0
    assert ci.count("device_id = ?", (lap.device_id(),)) == 10


def test_push_never_writes_through_its_own_folder_swapped_for_a_symlink(world, tmp_path, monkeypatch, capsys):
    """This device's own folder is swapped for a symlink to a directory outside the sync folder
    once push has checked it: push had written the new segment (and cleared temporary files)
    through the symlink; it writes only in the folder it opened."""
    folder, lap, ci, ddir = world
    _more(lap)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / ".attempt-sync-keep.tmp").write_bytes(b"not ours")
    real = segment.list_segments
    swapped = []

    def list_segments(device_dir):
        if not swapped:
            swapped.append(1)
            _swap_for_symlink(folder, lap.device_id(), str(outside))
        return real(device_dir)
    monkeypatch.setattr(segment, "list_segments", list_segments)
    code, out, err = lap.cli(monkeypatch, capsys, "sync", folder, "--push-only")
    assert swapped
    assert sorted(os.listdir(outside)) == [".attempt-sync-keep.tmp"], (code, out, err)  # was: segment 1 written there
    aside = os.path.join(folder, ".aside-" + lap.device_id())
    assert code == 0 and os.path.exists(os.path.join(aside, segment.manifest_name(2))), out + err
