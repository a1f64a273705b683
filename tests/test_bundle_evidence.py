"""Bundles carrying evidence (spec/bundle.md): artifacts only with --include-artifacts and
verified by hash on import, local paths omitted before signing, the source's signed checkpoint,
and a consistency proof between two exports of one log."""

import hashlib
import json
import os
import sys
import zipfile

from conftest import run_attempt
from test_bundle import manifest_of, members, rebuild

from attemptdb.exchange import bundle
from attemptdb.integrity import keys
from attemptdb.store.database import Store

PY = sys.executable


def export(db, out, *flags):
    p = run_attempt(["bundle", "export", str(out), "--db", db, *flags])
    assert p.returncode == 0, p.stderr
    return manifest_of(members(out))


def verify(path, *flags):
    p = run_attempt(["bundle", "verify", str(path), "--json", *flags])
    return p.returncode, json.loads(p.stdout)


def own_key(db):
    st = Store.open(db, readonly=True)
    try:
        return keys.load(st.device_id)
    finally:
        st.close()


def recorded(tmp_path, home):
    db = str(tmp_path / "src.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    work = tmp_path / "work dir"
    work.mkdir()
    for prog in ("print('out one')", "import sys; print('err', file=sys.stderr); print('out two')"):
        p = run_attempt(["run", "--attach-output", "--db", db, "--", PY, "-c", prog], cwd=work)
        assert p.returncode == 0, p.stderr
    return db, work


def test_artifacts_travel_only_when_asked_and_are_checked_on_import(tmp_path, home):
    db, _ = recorded(tmp_path, home)
    plain = export(db, tmp_path / "plain.zip")
    assert "artifacts" not in plain and not [n for n in members(tmp_path / "plain.zip") if n.startswith("artifacts/")]
    m = export(db, tmp_path / "arts.zip", "--include-artifacts")
    files = members(tmp_path / "arts.zip")
    assert len(m["artifacts"]) == 3 and {a["purpose"] for a in m["artifacts"]} == {"command.stdout", "command.stderr"}
    for a in m["artifacts"]:
        data = files[a["path"]]
        assert a["path"] == "artifacts/" + a["artifact_id"] and hashlib.sha256(data).hexdigest() == a["sha256"]
        assert a["size_bytes"] == len(data) and a["redacted"] is False
    assert b"out one\n" in files.values()
    code, rep = verify(tmp_path / "arts.zip")
    assert code == 0 and rep["artifacts"] == 3
    # imported: the bytes, checked; a metadata_only file keeps only their hashes
    dst = str(tmp_path / "dst.db")
    p = run_attempt(["bundle", "import", str(tmp_path / "arts.zip"), "--db", dst])
    assert p.returncode == 0, p.stderr
    st = Store.open(dst, readonly=True)
    rows = st.conn.execute("SELECT sha256, content IS NOT NULL FROM artifacts").fetchall()
    st.close()
    assert sorted(rows) == sorted((a["sha256"], 1) for a in m["artifacts"])
    aid = next(a["artifact_id"] for a in m["artifacts"] if files[a["path"]] == b"out one\n")
    assert run_attempt(["artifact", aid, "--db", dst]).stdout == b"out one\n"
    meta = str(tmp_path / "meta.db")
    assert run_attempt(["init", "--capture-mode", "metadata_only", "--db", meta]).returncode == 0
    assert run_attempt(["bundle", "import", str(tmp_path / "arts.zip"), "--db", meta]).returncode == 0
    st = Store.open(meta, readonly=True)
    assert st.conn.execute("SELECT count(*), count(content) FROM artifacts").fetchone() == (3, 0)
    st.close()
    # a changed artifact, even re-signed with the hash fixed in the files list, is caught

    def edit(files):  # same size, one byte changed
        path = next(a["path"] for a in m["artifacts"])
        files[path] = bytes([files[path][0] ^ 1]) + files[path][1:]
    rebuild(tmp_path / "arts.zip", tmp_path / "forged.zip", edit_member=edit)
    code, rep = verify(tmp_path / "forged.zip")
    assert code == 1 and "differs from what was signed" in rep["problems"][0]

    def longer(files):
        path = next(a["path"] for a in m["artifacts"])
        files[path] += b"more"
    rebuild(tmp_path / "arts.zip", tmp_path / "longer.zip", edit_member=longer)
    code, rep = verify(tmp_path / "longer.zip")
    assert code == 1 and "holds more than" in rep["problems"][0]

    def extra(files):
        files["artifacts/art_" + "0" * 32] = b"smuggled"
    rebuild(tmp_path / "arts.zip", tmp_path / "extra.zip", edit_member=extra)
    code, rep = verify(tmp_path / "extra.zip")
    assert code == 1 and "not in its manifest" in rep["problems"][0]
    before = Store.open(dst, readonly=True).count()
    assert run_attempt(["bundle", "import", str(tmp_path / "forged.zip"), "--db", dst]).returncode == 1
    assert Store.open(dst, readonly=True).count() == before


def test_an_export_says_which_named_artifacts_stay_behind_and_the_other_side_reads_what_the_events_say(
        tmp_path, home):
    db, work = recorded(tmp_path, home)  # three outputs kept
    p = run_attempt(["run", "--db", db, "--", PY, "-c", "print('not kept')"], cwd=work)  # hashed only
    assert p.returncode == 0, p.stderr
    p = run_attempt(["bundle", "export", str(tmp_path / "plain.zip"), "--db", db])
    assert p.returncode == 0, p.stderr
    err = " ".join(p.stderr.decode().split())
    assert "note: 3 artifacts (command output) the events name stayed behind; --include-artifacts carries them" in err
    assert "1 artifact the events name has no bytes in this file (not kept when recorded)" in err
    p = run_attempt(["bundle", "export", str(tmp_path / "arts.zip"), "--db", db, "--include-artifacts", "--json"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["artifacts_left_out"] == {"stored": 0, "not_stored": 1}
    src = Store.open(db, readonly=True)
    (aid, sha, size), = src.conn.execute("SELECT artifact_id, sha256, size_bytes FROM artifacts "
                                         "WHERE content IS NULL").fetchall()
    named_by = src.conn.execute("SELECT event_id FROM events WHERE instr(attrs_json, ?)", (aid,)).fetchone()[0]
    src.close()
    dst = str(tmp_path / "dst.db")
    for bundle_file in ("plain.zip", "arts.zip"):
        assert run_attempt(["bundle", "import", str(tmp_path / bundle_file), "--db", dst]).returncode == 0
    # the bytes never travelled: a coded error naming the event, and --info says what the event says
    p = run_attempt(["artifact", aid, "--db", dst])
    assert p.returncode == 1 and p.stdout == b""
    assert b"error[artifact.not_stored]" in p.stderr and named_by.encode() in p.stderr
    p = run_attempt(["artifact", aid, "--info", "--json", "--db", dst])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"artifact_id": aid, "sha256": sha, "size_bytes": size, "media_type": None,
                                    "purpose": "command.stdout", "stored": False, "named_by": named_by,
                                    "session_id": json.loads(p.stdout)["session_id"]}
    p = run_attempt(["artifact", aid, "--info", "--db", dst])
    assert p.returncode == 0 and b"stored      false" in p.stdout and b"media_type  unknown" in p.stdout
    p = run_attempt(["artifact", "art_" + "0" * 32, "--db", dst])  # named by nothing: unknown, as before
    assert p.returncode == 1 and b"error[artifact.unknown]" in p.stderr


def test_omitted_paths_leave_no_local_path_and_still_verify(tmp_path, home):
    db, work = recorded(tmp_path, home)
    m = export(db, tmp_path / "omit.zip", "--omit-paths", "--include-content")
    assert m["paths_omitted"] is True
    raw = b"".join(members(tmp_path / "omit.zip").values())
    assert str(work).encode() not in raw and str(home).encode() not in raw and str(tmp_path).encode() not in raw
    code, rep = verify(tmp_path / "omit.zip")
    assert code == 0 and rep["paths_omitted"] is True, rep
    lines = [json.loads(x) for n, d in members(tmp_path / "omit.zip").items() if n.endswith(".jsonl")
             for x in d.decode().splitlines()]
    assert {e["project"]["root"] for e in lines} == {"<repo>"}
    started = [e for e in lines if e["provider_event_name"] == "command.started"][0]
    assert started["content"]["tool_input"]["cwd"] == "<repo>"
    assert run_attempt(["bundle", "import", str(tmp_path / "omit.zip"), "--db", str(tmp_path / "o.db")]).returncode == 0
    # a line that keeps its root under a manifest saying paths were omitted is a problem
    key = own_key(db)  # the exporter itself, so only the line is wrong

    def unomit(files):
        for n in files:
            if n.endswith(".jsonl"):
                files[n] = files[n].replace(b'"root":"<repo>"', json.dumps(str(work)).encode().join(
                    [b'"root":', b""]), 1)
                break
    rebuild(tmp_path / "omit.zip", tmp_path / "leaky.zip", edit_member=unomit, key=key)
    code, rep = verify(tmp_path / "leaky.zip")
    assert code == 1 and "paths were omitted" in rep["problems"][0], rep


def test_a_bundle_proves_its_log_extends_an_earlier_export(tmp_path, home):
    db, work = recorded(tmp_path, home)
    first = export(db, tmp_path / "one.zip")
    assert "checkpoint" in first and "consistency" not in first
    assert run_attempt(["note", "later", "--db", db]).returncode == 0
    second = export(db, tmp_path / "two.zip", "--consistency-from", str(tmp_path / "one.zip"))
    assert second["consistency"]["from"]["note"] == first["checkpoint"]["note"]
    code, rep = verify(tmp_path / "two.zip")
    assert code == 0 and rep["consistent_from"]["size"] == first["chain"]["size"]
    assert rep["checkpoint"]["size"] == second["chain"]["size"]
    by_size = export(db, tmp_path / "three.zip", "--force", "--consistency-from", str(first["chain"]["size"]))
    assert by_size["consistency"]["path"] == second["consistency"]["path"]
    # a proof changed and the manifest re-signed by another key: the checkpoints are not that key's
    key, _ = keys.create("33333333-3333-4333-8333-333333333333")

    def bad_path(m):
        m["consistency"]["path"][0] = "0" * 64
    rebuild(tmp_path / "two.zip", tmp_path / "bad.zip", edit_manifest=bad_path, key=key)
    code, rep = verify(tmp_path / "bad.zip")
    assert code == 1 and "not signed by the bundle's key" in rep["problems"][0]
    # signed by the right key (an exporter lying about its own history): the proof itself fails
    rebuild(tmp_path / "two.zip", tmp_path / "lie.zip", edit_manifest=bad_path, key=own_key(db))
    code, rep = verify(tmp_path / "lie.zip")
    assert code == 1 and "consistency proof does not show" in rep["problems"][0], rep
    # another log's checkpoint cannot be proven consistent
    other = str(tmp_path / "other.db")
    assert run_attempt(["init", "--db", other]).returncode == 0
    assert run_attempt(["note", "x", "--db", other]).returncode == 0
    p = run_attempt(["bundle", "export", str(tmp_path / "x.zip"), "--db", other, "--consistency-from",
                     str(tmp_path / "one.zip")])
    assert p.returncode == 2 and b"error[bundle.consistency]" in p.stderr
    assert bundle.MAX_MEMBERS == 200_001 and os.path.exists(tmp_path / "two.zip")
    with zipfile.ZipFile(tmp_path / "two.zip") as zf:
        assert "manifest.json" in zf.namelist()
