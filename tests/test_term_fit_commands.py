"""More lines that fit the terminal, found by a user's walkthrough at COLUMNS=80: `attempt doctor`
(~150 columns), `attempt keys list` (~111 columns, and no header row), `attempt sync FOLDER`'s
summary and notes (~97), `attempt export --dataset DIR` (~250) and the read path's
`note: no checkpoint signed: error[keys.lost] …` on stderr (one line of ~600). Prose is wrapped
at spaces to the terminal's width (termtable.prose), never inside an id, a snapshot key or a
path; `keys list` is a table with a header, fitted as the other tables are (termtable.fit);
--json is unchanged."""

import json
import os
import shutil

import pytest
from conftest import run_attempt
from test_term_prose import _home, fits, joined

from attemptdb.projections import catalog
from attemptdb.render import termtable

ENV = {"COLUMNS": "80", "NO_COLOR": "1", "TZ": "UTC", "ATTEMPTDB_NO_DAEMON": "1"}
PAYLOAD = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi", "cwd": "/tmp"}


def run(home: dict, args, ok=(0,), **env):
    p = run_attempt(list(args), env=dict(ENV, **home, **env))
    assert p.returncode in ok and b"Traceback" not in p.stderr, (args, p.returncode, p.stderr.decode())
    return p.stdout.decode(), p.stderr.decode()


def capture(home: dict, db: str, n: int = 3) -> None:
    for i in range(n):
        p = run_attempt(["capture", "claude_code", "--db", db], env=dict(ENV, **home),
                        input=json.dumps(dict(PAYLOAD, prompt=f"try {i}")).encode())
        assert p.returncode == 0 and p.stderr == b"", p.stderr


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """Two devices syncing through a folder whose name has a space: the laptop records three
    events and pushes them, the desk pulls them (so the desk pinned the laptop's key)."""
    root = tmp_path_factory.mktemp("fit-commands")
    homes = {}
    for name in ("laptop", "desk"):
        (root / name).mkdir()
        homes[name] = _home(root / name)
    folder = str(root / "team folder")
    os.mkdir(folder)
    dbs = {name: str(root / f"{name}.db") for name in homes}
    for name in homes:
        run(homes[name], ["init", "--db", dbs[name]])
    capture(homes["laptop"], dbs["laptop"])
    run(homes["laptop"], ["sync", folder, "--db", dbs["laptop"]])
    out, err = run(homes["desk"], ["sync", folder, "--db", dbs["desk"]])
    ids = {name: json.loads(run(homes[name], ["status", "--db", dbs[name], "--json"])[0])["device_id"]
           for name in homes}
    return {"root": root, "homes": homes, "dbs": dbs, "folder": folder, "first_pull": (out, err), "ids": ids}


def test_the_sync_summary_and_its_notes_fit_with_the_folder_whole(team):
    out, err = team["first_pull"]
    folder = team["folder"]
    fits(out + err, whole=(folder,))
    assert any(folder in ln for ln in out.splitlines()), out  # the path, spaces and all, on one line
    assert joined(out) == (f"sync {folder}: pushed 0 events in 0 segments; pulled 1 segment from 1 device, "
                           "3 new events")
    assert joined(err).startswith("note: pinned id_") and "(first use)" in err
    # --json: as before
    home, db = team["homes"]["desk"], team["dbs"]["desk"]
    data = json.loads(run(home, ["sync", team["folder"], "--db", db, "--json"])[0])
    assert data["ok"] is True and data["imported"] == 0 and data["pushed"]["events"] == 0


def test_keys_list_is_a_table_with_a_header_that_fits(team):
    home, db = team["homes"]["desk"], team["dbs"]["desk"]
    laptop = team["ids"]["laptop"]
    key = json.loads(run(home, ["keys", "list", "--db", db, "--json"])[0])[0]["key_id"]
    out, _ = run(home, ["keys", "list", "--db", db])
    fits(out)
    lines = out.splitlines()
    assert lines[0].split()[0] == "device" and "pin" in lines[0].split(), out  # a header row
    assert set(lines[1].replace(" ", "")) == {"-"}, out  # its rule
    row = lines[2].split()
    # the key, what the command is for, is shown; the device id too wide beside it is its short
    # form (never cut), which `keys revoke`/`keys trust` take back
    assert row == [laptop[:12], key, "first_use", "1", "3"], out
    assert "not shown" not in out
    wide, _ = run(home, ["keys", "list", "--db", db], COLUMNS="200")
    assert wide.splitlines()[0].split() == ["device", "key", "pin", "segments", "events"]
    assert wide.splitlines()[2].split() == [laptop, key, "first_use", "1", "3"]
    narrow, _ = run(home, ["keys", "list", "--db", db], COLUMNS="50")  # the counts, then the pin give way
    fits(narrow, 50)
    assert narrow.splitlines()[2].split() == [laptop[:12], key] and "pin" in joined(narrow).split("not shown")[1]


def test_keys_revoke_and_trust_take_back_the_short_device_id_keys_list_prints(team, tmp_path):
    home, laptop = team["homes"]["desk"], team["ids"]["laptop"]
    db = str(tmp_path / "desk copy.db")
    for suffix in ("", "-wal"):
        if os.path.exists(team["dbs"]["desk"] + suffix):
            shutil.copy(team["dbs"]["desk"] + suffix, db + suffix)
    key = json.loads(run(home, ["keys", "list", "--db", db, "--json"])[0])[0]["key_id"]
    short = run(home, ["keys", "list", "--db", db])[0].splitlines()[2].split()[0]
    assert short == laptop[:12]
    out, _ = run(home, ["keys", "revoke", short, "--db", db])
    assert out.strip() == f"revoked the key pinned for {laptop}"
    narrow, _ = run(home, ["keys", "list", "--db", db], COLUMNS="50")  # a hidden pin state still says REVOKED
    fits(narrow, 50)
    assert narrow.splitlines()[-1] == f"REVOKED: {short}"
    out, _ = run(home, ["keys", "trust", short, key, "--db", db])
    assert out.strip() == f"pinned {key} for {laptop}"
    for bad in ("dev_01a2", "dev_ffffffff", "nonsense"):  # too short, nobody's, no id
        _, err = run(home, ["keys", "revoke", bad, "--db", db], ok=(2,))
        assert err.startswith("error[keys.bad_device]: DEVICE is a device id (dev_<uuid>)"), err


def test_export_dataset_fits_with_the_snapshot_key_and_the_directory_whole(team):
    pytest.importorskip("pyarrow", reason="the arrow extra is part of the test extra")
    home, db = team["homes"]["laptop"], team["dbs"]["laptop"]
    ds = str(team["root"] / "team data")
    out, err = run(home, ["export", "--dataset", ds, "--db", db], COLUMNS="100")
    m = json.loads(open(os.path.join(ds, "_manifests", team["ids"]["laptop"], "000001.json")).read())
    fits(out + err, 100, whole=(ds,))
    assert any(ln.strip() == m["snapshot"] or ln.endswith(" " + m["snapshot"]) for ln in out.splitlines()), out
    assert any(ds in ln for ln in out.splitlines()), out
    assert joined(out).startswith(f"dataset {ds}: generation 1 of {team['ids']['laptop']}: ")
    assert joined(out).endswith(f"events through source_seq 3; content left out (null); projections snapshot "
                                f"{m['snapshot']}")
    # at 80 columns the key (81 characters) fits no line: named, not printed past the width
    out, err = run(home, ["export", "--dataset", ds + " 80", "--db", db])
    fits(out + err, whole=(ds + " 80",))
    assert joined(out).endswith("content left out (null); projections snapshot written (its key: --json)")
    out, _ = run(home, ["export", "--dataset", ds, "--db", db])
    fits(out, whole=(ds,))
    assert joined(out) == f"dataset {ds}: nothing new since generation 1"


def test_export_to_a_directory_fits(team, tmp_path):
    pytest.importorskip("pyarrow", reason="the arrow extra is part of the test extra")
    home, db = team["homes"]["laptop"], team["dbs"]["laptop"]
    out_dir = str(tmp_path / "an export dir")
    out, err = run(home, ["export", out_dir, "--db", db])
    fits(out + err, whole=(out_dir,))
    tables = len(catalog.build(catalog.shipped_schema_connection())["tables"])  # every public table
    assert joined(out).startswith(f"exported {tables} tables (") and f" to {out_dir} as parquet; " in joined(out)


@pytest.fixture(scope="module")
def lost(tmp_path_factory):
    """A signed database whose key file was then lost, with an unsigned event after it."""
    root = tmp_path_factory.mktemp("fit-lost-key")
    (root / "home").mkdir()
    home = _home(root / "home")
    db = str(root / "attempt.db")
    run(home, ["init", "--db", db])
    capture(home, db, 1)
    run(home, ["verify", "--db", db])  # signs the head
    keydir = os.path.join(home["XDG_DATA_HOME"], "attemptdb", "keys")
    (key_file,) = os.listdir(keydir)
    shutil.move(keydir, str(root / "key-backup"))
    os.makedirs(keydir, mode=0o700)
    capture(home, db, 1)  # a checkpoint is due, and cannot be signed
    return home, db, os.path.join(keydir, key_file)


def test_the_no_checkpoint_note_of_a_read_fits_with_the_key_path_whole(lost):
    home, db, key_path = lost
    for args in (["events", "--db", db], ["timeline", "--db", db], ["events", "--db", db, "--json"]):
        out, err = run(home, args)
        fits(err, whole=(key_path,))
        note = err[err.index("note: no checkpoint signed"):]
        assert note.startswith("note: no checkpoint signed: error[keys.lost]: "), err
        assert any(ln.strip() == key_path or ln.endswith(" " + key_path) for ln in note.splitlines()), note
        assert "`attempt keys init --replace-lost`" in note  # a command on one line, to copy
        assert len(note.splitlines()) > 1 and termtable.cols(note.splitlines()[0]) <= 80
    wide = run(home, ["events", "--db", db], COLUMNS="2000")[1]
    assert len(wide.strip().splitlines()) == 1  # a terminal wide enough: one line, as before


def test_doctor_fits_80_columns(lost):
    home, db, key_path = lost
    out, err = run(home, ["doctor", "--db", db], ok=(1,))
    fits(out + err, whole=(key_path,))
    assert "  problem: signing key: this database's signing key is missing:" in out, out
    text = out.replace("\n    ", " ")  # a problem's continuation lines, joined back
    assert "Restore the key file from a backup to" in text and text.rstrip().count(key_path) == 2
    assert "`attempt keys init --replace-lost` starts" in text and "[keys.lost]" in text
    assert out.rstrip().endswith("problems found")
    db_line = next(ln for ln in out.splitlines() if ln.startswith("database     "))
    assert db in db_line or db.replace(home["HOME"], "~") in db_line  # the path whole on the line
    rep = json.loads(run(home, ["doctor", "--db", db, "--json"], ok=(1,))[0])  # --json: as before
    assert any("[keys.lost]" in p for p in rep["problems"])
