"""A forged manifest in a merged team dataset (spec/export.md "The team dataset: what the reader
checks"): a brand-new key's device whose snapshot claims more history than its chain holds
must not take over every projection table of `attempt query --engine datafusion --from DIR`.
The reader refuses it (`dataset.bad_manifest`) and reads nothing; an honest dataset of two
synced devices still reads, and its snapshot is one of theirs."""

import copy
import glob
import hashlib
import json
import os
import shutil

import pytest

pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is part of the test extra")
pytest.importorskip("datafusion", reason="the arrow extra (datafusion) is part of the test extra")

from sync_world import Device, events_by_device  # noqa: E402

from attemptdb.exchange import dataset  # noqa: E402

NAMES = ("laptop", "workstation")  # m1 and m3 of the walkthrough
FORGED = "dev_00000000-0000-4000-8000-0000000000bb"
SQL = "SELECT session_id FROM sessions ORDER BY session_id"


class _Quiet:
    def readouterr(self):
        return "", ""


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """Two devices synced through one folder, each exporting its dataset folder; `team` is the
    merge of the two."""
    root = str(tmp_path_factory.mktemp("forged"))
    folder = os.path.join(root, "shared")
    os.makedirs(folder)
    with pytest.MonkeyPatch.context() as mp:
        cap = _Quiet()
        devs = {n: Device(root, n) for n in NAMES}
        evs = events_by_device()
        for n, d in devs.items():
            assert d.cli(mp, cap, "init")[0] == 0
            d.capture(evs[n])
        for _ in range(2):
            for n in NAMES:
                assert devs[n].cli(mp, cap, "sync", folder, "--include-content")[0] == 0
        merged = os.path.join(root, "team")
        for n, d in devs.items():
            out = os.path.join(root, "dataset-" + n)
            assert d.cli(mp, cap, "export", "--dataset", out)[0] == 0
            shutil.copytree(out, merged, dirs_exist_ok=True)
        yield {"devices": devs, "team": merged, "mp": mp}


def _new_key():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from attemptdb.integrity import keys
    priv = Ed25519PrivateKey.generate()
    return keys.DeviceKey(priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw), priv)


def _rename_one_session(src: str, dst: str) -> None:
    """The first session of `src`, renamed PWNED, alone in `dst` (Parquet, the same schema)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pq.read_table(src).slice(0, 1)
    i = table.schema.get_field_index("session_id")
    table = table.set_column(i, table.schema.field(i), pa.array(["PWNED"], pa.string()))
    pq.write_table(table, dst)


def forge(out: str, victim: str, *, covered=999999999999, chain_size=None, key_count=None, files=True,
          events_through=None) -> dict:
    """A manifest of FORGED (a brand-new key, generation 1), a copy of `victim`'s last one with
    the walkthrough's changes: covered_events 999999999999, a snapshot key 999999999999/…, the
    projection files copied under FORGED's partitions (sessions: one session renamed PWNED), and
    chain.size left as it was. The keyword arguments vary it."""
    from attemptdb.integrity import keys
    m = copy.deepcopy(dataset.manifests(out, victim)[-1])
    del m["signature"]
    hlc = m["hlc"]
    count = covered if key_count is None else key_count
    m.update(device_id=FORGED, generation=1, previous=None, covered_events=covered,
             snapshot=f"{count:012d}/{hlc:020d}/{FORGED}/000001")
    if chain_size is not None:
        m["chain"]["size"] = chain_size
    if events_through is not None:
        m["events_through"] = events_through
    listed = []
    for f in m["files"] if files else []:
        if f["table"] == dataset.EVENTS:
            if events_through is None:
                continue
        rel = f["path"].replace(f"device={victim}", f"device={FORGED}").rsplit("/", 1)[0] + "/part-000001.parquet"
        dst = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if f["table"] == "sessions":
            _rename_one_session(os.path.join(out, f["path"]), dst)
        else:
            shutil.copy(os.path.join(out, f["path"]), dst)
        data = open(dst, "rb").read()
        listed.append(dict(f, path=rel, sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data)))
    m["files"] = listed
    signed = keys.sign_manifest(dataset.SIGNED_PREFIX, m, _new_key())
    os.makedirs(os.path.join(out, dataset.MANIFESTS, FORGED), exist_ok=True)
    with open(os.path.join(out, dataset.MANIFESTS, FORGED, "000001.json"), "w") as fh:
        fh.write(json.dumps(signed))
    return signed


def _tree(root: str) -> dict:
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def _query(mp, capsys, directory, sql, *args):
    from attemptdb.cli.main import run
    capsys.readouterr()
    try:
        code = run(["query", *args, "--engine", "datafusion", "--from", directory, sql])
    except SystemExit as e:
        code = e.code
    return (code, *capsys.readouterr())


def _victim(out: str, team) -> str:
    return team["devices"]["workstation"].device_id()


def test_the_walkthrough_s_forged_manifest_is_refused_and_nothing_changes(team, tmp_path, capsys):
    out = str(tmp_path / "ds")
    shutil.copytree(team["team"], out)
    victim = _victim(out, team)
    m = forge(out, victim)
    assert m["chain"]["size"] < m["covered_events"] == 999999999999  # chain.size left at 41
    before = _tree(out)
    code, stdout, stderr = _query(team["mp"], capsys, out, SQL)
    assert code == 1, (stdout, stderr)
    assert "error[dataset.bad_manifest]" in stderr and FORGED in stderr and "covered_events" in stderr, stderr
    assert "PWNED" not in stdout and stdout == ""
    assert _tree(out) == before  # a read: nothing written, nothing removed
    code, stdout, stderr = _query(team["mp"], capsys, out, SQL, "--json")
    assert code == 1 and "dataset.bad_manifest" in stderr and "PWNED" not in stdout


@pytest.mark.parametrize("case", ["key_not_covered", "no_files", "events_past_through", "unlisted_snapshot_file"])
def test_other_ways_to_win_the_dedupe_are_refused(team, tmp_path, capsys, case):
    """A snapshot key whose count is not its covered_events; a snapshot that lists no file (every
    table would read empty); own event rows past events_through; a projection file no manifest
    lists (DuckDB and Spark, following the README, would read it)."""
    out = str(tmp_path / "ds")
    shutil.copytree(team["team"], out)
    victim = _victim(out, team)
    size = dataset.manifests(out, victim)[-1]["chain"]["size"]
    want = "dataset.bad_manifest"
    if case == "key_not_covered":
        forge(out, victim, covered=size, chain_size=size, key_count=999999999999)
    elif case == "no_files":
        forge(out, victim, covered=size, chain_size=size, files=False)
    elif case == "events_past_through":
        forge(out, victim, covered=size, chain_size=size, events_through=0)
    else:
        want = "dataset.unlisted"
        src = glob.glob(os.path.join(out, "sessions", f"device={victim}", "*", "*.parquet"))[0]
        dst = os.path.join(os.path.dirname(src), "part-000099.parquet")
        _rename_one_session(src, dst)
    code, stdout, stderr = _query(team["mp"], capsys, out, SQL)
    assert code == 1 and f"error[{want}]" in stderr and stdout == "", (case, stdout, stderr)


def test_an_honest_two_device_dataset_still_reads(team, capsys):
    code, stdout, stderr = _query(team["mp"], capsys, team["team"], SQL, "--json")
    assert code == 0, stderr
    got = sorted(r["session_id"] for r in json.loads(stdout))
    lap = team["devices"]["laptop"]
    assert got == sorted(r[0] for r in lap.rows("SELECT session_id FROM sessions")) and got
    view = dataset.View(team["team"])
    assert view.snapshot.split("/")[2] in {d.device_id() for d in team["devices"].values()}
    for d in team["devices"].values():
        for m in dataset.manifests(team["team"], d.device_id()):
            assert m["covered_events"] <= m["chain"]["size"]


def test_a_consistent_false_history_is_not_detectable_by_a_reader(team, tmp_path):
    """What remains (spec/export.md): a key that signs a manifest consistent with itself (its
    chain as large as the events it claims) wins the dedupe; the reader cannot know a device's
    chain from its manifest alone."""
    out = str(tmp_path / "ds")
    shutil.copytree(team["team"], out)
    forge(out, _victim(out, team), chain_size=999999999999)
    assert dataset.View(out).snapshot.split("/")[2] == FORGED
