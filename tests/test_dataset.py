"""`attempt export --dataset DIR` (spec/sync.md "Dataset"): the team dataset of three synced
devices answers every SQL recipe of the catalog with the SQLite rows of a synced file, in
DataFusion (`attempt query --engine datafusion --from`), DuckDB and Spark (local mode)."""

import datetime
import glob
import hashlib
import json
import os
import shutil
import subprocess

import pytest

pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is part of the test extra")
pytest.importorskip("datafusion", reason="the arrow extra (datafusion) is part of the test extra")

from sync_world import Device, events_by_device  # noqa: E402

from attemptdb.exchange import dataset
from attemptdb.projections import catalog

NAMES = ("laptop", "ci", "workstation")
SQL_RECIPES = [r["statement"] for r in catalog.load_docs()["recipes"]
               if r["statement"].upper().startswith(("SELECT", "WITH"))]
SNAPSHOT_TABLES = [t["name"] for t in catalog.load_docs()["tables"] if t["name"] != "events"]


class _Quiet:
    def readouterr(self):
        return "", ""


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """Three devices synced through one folder, each with its dataset folder; `team` is the
    copy of the three into one folder (the merge)."""
    root = str(tmp_path_factory.mktemp("world"))
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
        outs = {}
        for n, d in devs.items():
            outs[n] = os.path.join(root, "dataset-" + n)
            assert d.cli(mp, cap, "export", "--dataset", outs[n])[0] == 0
        merged = os.path.join(root, "team")
        for n in NAMES:
            shutil.copytree(outs[n], merged, dirs_exist_ok=True)
        yield {"devices": devs, "team": merged, "outs": outs, "root": root, "mp": mp, "cap": cap}


def _iso(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc)
        return v.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return v


def _norm(rows):
    return sorted((tuple(_iso(v) for v in r) for r in rows), key=repr)


def _sqlite(dev, sql):
    return _norm(dev.rows(sql))


def test_layout_is_hive_partitioned_with_signed_manifests(team):
    merged = team["team"]
    devices = dataset.devices(merged)
    assert devices == sorted(d.device_id() for d in team["devices"].values())
    for dev in devices:
        ms = dataset.manifests(merged, dev)  # checked: signature, chain, paths
        assert len(ms) == 1 and ms[0]["files"]
        for f in ms[0]["files"]:
            assert f["path"].startswith(f"{f['table']}/device={dev}/date=")
            assert hashlib.sha256(open(os.path.join(merged, f["path"]), "rb").read()).hexdigest() == f["sha256"]
    parts = glob.glob(os.path.join(merged, "events", "device=*", "date=*", "part-*.parquet"))
    assert len(parts) == 3
    import pyarrow.parquet as pq
    assert sum(pq.read_table(p).num_rows for p in parts) == 28  # each device's own events, once


@pytest.mark.parametrize("sql", SQL_RECIPES)
def test_datafusion_over_the_team_dataset_answers_as_sqlite(team, sql):
    lap = team["devices"]["laptop"]
    from attemptdb.query import datafusion_engine as engine_datafusion
    got = engine_datafusion.run(sql, directory=team["team"])
    assert _norm(got.rows) == _sqlite(lap, sql)


def test_some_recipes_have_answers(team):
    lap = team["devices"]["laptop"]
    assert sum(1 for sql in SQL_RECIPES if _sqlite(lap, sql)) >= 3


def test_an_export_never_writes_through_a_link_planted_in_the_dataset(team, tmp_path, capsys):
    dev = team["devices"]["ci"]
    mp, cap = team["mp"], capsys
    device = dev.device_id()
    for planted in ("events/device=" + device, "_manifests/" + device):
        out, outside = tmp_path / ("ds-" + planted[:2]), tmp_path / ("outside-" + planted[:2])
        outside.mkdir()
        (out / planted).parent.mkdir(parents=True)
        os.symlink(outside, out / planted)
        code, _, err = dev.cli(mp, cap, "export", "--dataset", str(out))
        assert code == 2 and "error[dataset.unwritable]" in err and "is a link" in err, err
        assert os.listdir(outside) == [], planted  # nothing written where the link points


def test_export_is_incremental_and_never_rewrites(team, tmp_path):
    lap = team["devices"]["workstation"]  # the others' files stay as the comparisons expect
    out = str(tmp_path / "ds")
    mp, cap = team["mp"], team["cap"]
    shutil.copytree(team["outs"]["workstation"], out)
    before = {p: open(p, "rb").read() for p in glob.glob(out + "/**/*", recursive=True) if os.path.isfile(p)}
    assert lap.cli(mp, cap, "export", "--dataset", out)[0] == 0  # nothing new: nothing written
    now = {p for p in glob.glob(out + "/**/*", recursive=True) if os.path.isfile(p)}
    assert now == set(before)
    extra = [dict(e, event_id=e["event_id"][:-4] + "cafe") for e in events_by_device()["laptop"][:4]]
    lap.capture(extra)
    assert lap.cli(mp, cap, "export", "--dataset", out)[0] == 0
    after = {p: open(p, "rb").read() for p in glob.glob(out + "/**/*", recursive=True) if os.path.isfile(p)}
    assert {p: after[p] for p in before} == before  # old files untouched
    new = sorted(os.path.relpath(p, out) for p in set(after) - set(before))
    dev = lap.device_id()
    assert f"_manifests/{dev}/000002.json" in new
    ev = [p for p in new if p.startswith("events/")]
    assert ev and all(p.endswith("part-000002.parquet") for p in ev)
    import pyarrow.parquet as pq
    assert sum(pq.read_table(os.path.join(out, p)).num_rows for p in ev) == 4
    ms = dataset.manifests(out, dev)
    assert ms[1]["previous"] == hashlib.sha256(open(os.path.join(out, "_manifests", dev, "000001.json"), "rb")
                                               .read()).hexdigest()


def test_a_file_no_manifest_lists_or_a_forged_manifest_is_refused(team, tmp_path):
    from attemptdb.errors import AttemptError
    from attemptdb.query import datafusion_engine as engine_datafusion
    out = str(tmp_path / "ds")
    shutil.copytree(team["team"], out)
    dev = dataset.devices(out)[0]
    extra = os.path.join(out, "events", f"device={dev}", "date=2026-08-28", "part-000099.parquet")
    shutil.copy(glob.glob(os.path.join(out, "events", f"device={dev}", "*", "*.parquet"))[0], extra)
    with pytest.raises(AttemptError) as e:
        engine_datafusion.run("SELECT count(*) FROM events", directory=out)
    assert e.value.code == "dataset.unlisted"
    os.unlink(extra)
    path = os.path.join(out, "_manifests", dev, "000001.json")
    m = json.load(open(path))
    m["covered_events"] = 10 ** 9  # claim the fullest picture without the key
    open(path, "w").write(json.dumps(m))
    with pytest.raises(AttemptError) as e:
        engine_datafusion.run("SELECT count(*) FROM sessions", directory=out)
    assert e.value.code == "dataset.signature" and dev in e.value.message


def test_hidden_underscore_and_linked_files_are_unlisted_too_and_a_snapshot_key_must_be_an_export_s(team, tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from attemptdb.errors import AttemptError
    from attemptdb.integrity import keys
    from attemptdb.query import datafusion_engine as engine_datafusion
    out = str(tmp_path / "ds")
    shutil.copytree(team["team"], out)
    dev = dataset.devices(out)[0]
    part = glob.glob(os.path.join(out, "events", f"device={dev}", "*", "*.parquet"))[0]
    for name in ("_x.parquet", ".x.parquet"):  # DataFusion reads these as well
        extra = os.path.join(os.path.dirname(part), name)
        shutil.copy(part, extra)
        with pytest.raises(AttemptError) as e:
            engine_datafusion.run("SELECT count(*) FROM events", directory=out)
        assert e.value.code == "dataset.unlisted", name
        os.unlink(extra)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(os.path.dirname(part), elsewhere)
    link = os.path.join(out, "events", "device=dev_00000000-0000-4000-8000-00000000000a")
    os.symlink(elsewhere, link)
    with pytest.raises(AttemptError) as e:
        engine_datafusion.run("SELECT count(*) FROM events", directory=out)
    assert e.value.code == "dataset.unlisted" and "link" in e.value.message
    os.unlink(link)
    # a device of its own (any key, first use) whose manifest's snapshot key is not text
    forged = "dev_00000000-0000-4000-8000-00000000000b"
    priv = Ed25519PrivateKey.generate()
    key = keys.DeviceKey(priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw), priv)
    for snap in (5, ["z"], "999999999999/99999999999999999999/" + forged + "/000002"):
        body = {"schema_version": dataset.SCHEMA_VERSION, "device_id": forged, "generation": 1,
                "snapshot": snap, "previous": None, "files": []}
        os.makedirs(os.path.join(out, "_manifests", forged), exist_ok=True)
        signed = keys.sign_manifest(dataset.SIGNED_PREFIX, body, key)
        with open(os.path.join(out, "_manifests", forged, "000001.json"), "w") as f:
            f.write(json.dumps(signed))
        with pytest.raises(AttemptError) as e:
            engine_datafusion.run("SELECT count(*) FROM sessions", directory=out)
        assert e.value.code == "dataset.bad_manifest" and "snapshot" in e.value.message, (snap, e.value)


@pytest.mark.parametrize("plant", ["fifo", "folder", "link"])
def test_a_manifest_that_is_no_regular_file_is_unreadable_at_once(team, tmp_path, plant):
    """A named pipe, a folder or a symbolic link in place of a manifest: `dataset.unreadable`
    naming it, without waiting on the pipe (store.plainfile.open_regular)."""
    from attemptdb.errors import AttemptError
    out = str(tmp_path / "ds")
    shutil.copytree(team["team"], out)
    dev = dataset.devices(out)[0]
    path = os.path.join(out, "_manifests", dev, "000001.json")
    os.rename(path, str(tmp_path / "kept.json"))
    {"fifo": lambda: os.mkfifo(path), "folder": lambda: os.mkdir(path),
     "link": lambda: os.symlink(str(tmp_path / "kept.json"), path)}[plant]()
    with pytest.raises(AttemptError) as e:
        dataset.manifests(out, dev)
    assert e.value.code == "dataset.unreadable" and "000001.json" in e.value.message, e.value


# --- other engines: the README's recipes --------------------------------------------------------

def duckdb_views(con, root):
    """The README's DuckDB recipe: events from every device; every other table the rows of the
    latest snapshot."""
    con.execute(f"CREATE VIEW events AS SELECT * FROM read_parquet('{root}/events/*/*/*.parquet', "
                "hive_partitioning = true)")
    for t in SNAPSHOT_TABLES:
        src = f"read_parquet('{root}/{t}/*/*/*.parquet', hive_partitioning = true)"
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM {src} WHERE _snapshot = (SELECT max(_snapshot) FROM {src})")


@pytest.mark.parametrize("sql", SQL_RECIPES)
def test_duckdb_over_the_team_dataset_answers_as_sqlite(team, sql):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the test extra")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    duckdb_views(con, team["team"])
    assert _norm(con.execute(sql).fetchall()) == _sqlite(team["devices"]["laptop"], sql)


def _java() -> str | None:
    exe = shutil.which("java")
    if exe is None:
        return None
    try:
        subprocess.run([exe, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return exe


@pytest.mark.spark
def test_spark_local_mode_over_the_team_dataset_answers_as_sqlite(team):
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install pyspark; it is not in "
                                                    "the test extra: ~300 MB and a Java runtime)")
    if _java() is None:
        pytest.skip("no Java runtime for Spark (Debian: apt-get install default-jre-headless)")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    spark = (SparkSession.builder.master("local[1]").appName("attemptdb-dataset")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false").getOrCreate())
    try:
        root = team["team"]
        spark.read.parquet(f"{root}/events").createOrReplaceTempView("events")
        for t in SNAPSHOT_TABLES:
            df = spark.read.parquet(f"{root}/{t}")
            latest = df.agg(F.max("_snapshot")).first()[0]
            df.where(F.col("_snapshot") == latest).createOrReplaceTempView(t)
        lap = team["devices"]["laptop"]
        for sql in SQL_RECIPES:
            got = [tuple(r) for r in spark.sql(sql).collect()]
            assert _norm(got) == _sqlite(lap, sql), sql
    finally:
        spark.stop()
    assert pyspark.__version__


def test_the_cli_reads_the_team_dataset(team, capsys):
    from attemptdb.cli.main import run
    sql = "SELECT kind, count(*) AS events FROM events WHERE retracted = false GROUP BY kind ORDER BY events DESC"
    capsys.readouterr()
    assert run(["query", "--json", "--engine", "datafusion", "--from", team["team"], sql]) == 0
    got = [tuple(r.values()) for r in json.loads(capsys.readouterr().out)]
    assert _norm(got) == _sqlite(team["devices"]["laptop"], sql)
    assert run(["query", "--engine", "datafusion", "--from", team["team"], "SELECT count(*) AS n FROM handoffs"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2] == "1" and "team dataset in" in out


def test_bench_sync_short_form(capsys):
    from attemptdb.cli.main import run
    capsys.readouterr()
    assert run(["bench", "sync", "--devices", "2", "--events", "150", "--new", "20", "--runs", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pull_events"] == 300 and out["incremental_sync_events"] == 20
    assert out["incremental_old_files_unchanged"] is True and out["incremental_new_event_rows"] == 20
    assert out["same_rows"] is True and out["events_in_team_dataset"] == 320


def test_what_a_killed_export_left_is_cleared_by_the_device_s_next_export(team, tmp_path, capsys):
    """kill -9 of `export --dataset` between its part files and its manifest left files no
    manifest lists: every reader refused the dataset (dataset.unlisted), and the device's next
    export stopped at its own leftovers (dataset.exists), for good. Its next export now clears
    them (its own partitions only, past its last manifest) and publishes; another export of the
    same device running at once is dataset.busy."""
    import fcntl

    from attemptdb.errors import AttemptError
    from attemptdb.query import datafusion_engine as engine_datafusion
    ws = team["devices"]["workstation"]
    mp, cap = team["mp"], capsys
    out = str(tmp_path / "ds")
    shutil.copytree(team["outs"]["workstation"], out)
    dev = ws.device_id()
    published = len(dataset.manifests(out, dev))
    first = glob.glob(os.path.join(out, "events", f"device={dev}", "*", "*.parquet"))[0]
    left = os.path.join(os.path.dirname(first), f"part-{published + 1:06d}.parquet")
    shutil.copy(first, left)
    tmp = os.path.join(os.path.dirname(first), ".attempt-dataset-ab_cd123.tmp")
    open(tmp, "wb").write(b"half")
    with pytest.raises(AttemptError) as e:
        engine_datafusion.run("SELECT count(*) FROM events", directory=out)
    assert e.value.code == "dataset.unlisted"
    lock = os.open(os.path.join(out, "_manifests", dev, dataset.LOCK), os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    code, _, said = ws.cli(mp, cap, "export", "--dataset", out)
    os.close(lock)
    assert code == 1 and "error[dataset.busy]" in said, said
    assert len(dataset.manifests(out, dev)) == published and os.path.exists(left)
    extra = [dict(e, event_id=e["event_id"][:-4] + "beef") for e in events_by_device()["workstation"][:3]]
    ws.capture(extra)
    code, _, said = ws.cli(mp, cap, "export", "--dataset", out)
    assert code == 0, said
    assert len(dataset.manifests(out, dev)) == published + 1 and not os.path.exists(tmp)
    engine_datafusion.run("SELECT count(*) FROM events", directory=out)  # every file listed again: read
