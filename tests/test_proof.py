"""Inclusion proofs (spec/proof.md): `attempt prove` / `attempt verify-proof`, and a verifier
written in this file from spec/proof.md alone (no attemptdb import) that agrees: every proof
verifies with both, and a change to any byte of the event, the path, the size or a signature
fails both, with a coded problem from ours."""

import base64
import hashlib
import json
import os
import re
import stat

import pytest
from conftest import run_attempt
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from attemptdb.devtools import synth
from attemptdb.integrity import proof as proof_mod
from attemptdb.store.database import Store

# --- an independent verifier, from spec/proof.md ----------------------------------------------

FIELD_ORDER = ["event_id", "schema_version", "device_id", "source_seq", "hlc", "observed_at", "captured_at",
               "ingested_at", "provider", "provider_version", "adapter_version", "hook_version", "capture_mode",
               "provider_event_name", "kind", "project", "session_id", "provider_session_id", "provider_turn_id",
               "span_id", "parent_span_id", "agent", "tool", "paths", "outcome", "duration_ms", "attrs", "content",
               "raw"]


def _sha(b):
    return hashlib.sha256(b).digest()


def _b64(text, n):
    raw = base64.b64decode(text, validate=True)
    if len(raw) != n:
        raise ValueError("length")
    return raw


def spec_verify(data: bytes, pin=None) -> bool:
    """True when the proof holds (spec/proof.md §4), False otherwise."""
    try:
        def no_dups(pairs):
            keys = [k for k, _ in pairs]
            if len(keys) != len(set(keys)):
                raise ValueError("duplicate")
            return dict(pairs)
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=no_dups)
        if doc["format"] != "attemptdb.proof.v1":
            return False
        ev, inc, cp = doc["event"], doc["inclusion"], doc["checkpoint"]
        line, event_hash, binding = ev["line"], ev["event_hash"], ev["binding"]
        index, size, path = inc["leaf_index"], inc["tree_size"], inc["path"]
        if not (type(index) is int and type(size) is int and isinstance(path, list) and len(path) <= 64):
            return False
        if not re.fullmatch(r"[0-9a-f]{64}", event_hash) or not all(re.fullmatch(r"[0-9a-f]{64}", p) for p in path):
            return False
        public = _b64(cp["public_key"], 32)
        identity = "id_" + _sha(public)[:16].hex()
        if pin is not None and pin not in (identity, cp["public_key"]):
            return False
        # the note (§2)
        note = cp["note"]
        body, _, sigs = note.partition("\n\n")
        body += "\n"
        lines = body.split("\n")[:-1]
        if len(lines) < 4 or not lines[0].startswith("attemptdb.local/") or not lines[3].startswith("time "):
            return False
        if not re.fullmatch(r"0|[1-9][0-9]*", lines[1]) or int(lines[1]) != size:
            return False
        merkle = [x[len("merkle "):] for x in lines[4:] if x.startswith("merkle ")]
        if len(merkle) != 1:
            return False
        head = _b64(merkle[0], 32)
        sig_line = [x for x in sigs.split("\n") if x.startswith("\u2014 ")]
        if len(sig_line) != 1:
            return False
        _, name, blob = sig_line[0].split(" ")
        blob = _b64(blob, 68)
        if name != identity or blob[:4] != _sha(name.encode() + b"\n\x01" + public)[:4]:
            return False
        Ed25519PublicKey.from_public_bytes(public).verify(blob[4:], body.encode("utf-8"))
        if not 0 <= index < size:
            return False
        # the line (§3): canonical JSON of an Event v1 envelope
        if "\n" in line:
            return False
        env = json.loads(line)
        if json.dumps(env, ensure_ascii=False, separators=(",", ":")) != line:
            return False
        top = [k for k in env if not k.startswith("x_")]
        if top != [k for k in FIELD_ORDER if k in env]:
            return False
        # the binding (§4.5)
        if binding == "hash":
            if hashlib.sha256(line.encode("utf-8")).hexdigest() != event_hash:
                return False
        elif binding == "attested":
            if "content" in env or "raw" in env or any(k.startswith("x_") for k in env) \
                    or env["capture_mode"] != "metadata_only":
                return False
            msg = (b"attemptdb.proof.v1 clamp\n" + event_hash.encode() + b"\n"
                   + hashlib.sha256(line.encode("utf-8")).hexdigest().encode() + b"\n")
            Ed25519PublicKey.from_public_bytes(public).verify(_b64(ev["attestation"], 64), msg)
        else:
            return False
        # the path (§4.6, RFC 9162 §2.1.3.2)
        fn, sn, r = index, size - 1, _sha(b"\x00" + bytes.fromhex(event_hash))
        for p in path:
            p = bytes.fromhex(p)
            if sn == 0:
                return False
            if fn % 2 == 1 or fn == sn:
                r = _sha(b"\x01" + p + r)
                if fn % 2 == 0:
                    while fn % 2 == 0 and fn != 0:
                        fn >>= 1
                        sn >>= 1
            else:
                r = _sha(b"\x01" + r + p)
            fn >>= 1
            sn >>= 1
        return sn == 0 and r == head
    except (ValueError, KeyError, TypeError, AttributeError, InvalidSignature, UnicodeDecodeError):
        return False


# --- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def proven(tmp_path_factory):
    """A signed file of 700 events (two full tree blocks and a partial one), and proofs."""
    tmp = tmp_path_factory.mktemp("proof")
    home = tmp / "home"
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state")}
    db = str(tmp / "p.db")
    assert run_attempt(["init", "--db", db], env=env).returncode == 0
    old = dict(os.environ)
    os.environ.update(env)
    try:
        st = Store.open(db)
        st.append(list(synth.generate(700, seed=11)))
        ids = [r[0] for r in st.conn.execute("SELECT event_id FROM events WHERE seq IN (1, 256, 257, 500, 700) "
                                             "ORDER BY seq")]
        content = st.conn.execute("SELECT event_id FROM events WHERE content_json IS NOT NULL LIMIT 1").fetchone()[0]
        st.close()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return {"db": db, "env": env, "ids": ids, "content_id": content, "tmp": tmp}


def prove(proven, eid, *extra):
    p = run_attempt(["prove", eid, "--db", proven["db"], *extra], env=proven["env"])
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_proofs_verify_with_attempt_and_with_a_verifier_written_from_the_spec(proven):
    key = json.loads(run_attempt(["keys", "show", "--json", "--db", proven["db"]], env=proven["env"]).stdout)
    for eid in proven["ids"]:
        data = prove(proven, eid)
        doc = json.loads(data)
        assert doc["format"] == "attemptdb.proof.v1" and doc["checkpoint"]["public_key"] == key["public_key"]
        assert json.loads(doc["event"]["line"])["event_id"] == eid[3:]
        assert spec_verify(data) and spec_verify(data, pin=key["key_id"])
        assert not spec_verify(data, pin="id_" + "0" * 32)
    path = proven["tmp"] / "one.json"
    data = prove(proven, proven["content_id"], "-o", str(path))
    # no database: another HOME, no ATTEMPTDB_PATH
    p = run_attempt(["verify-proof", str(path), "--key", key["key_id"]],
                    env={"HOME": str(proven["tmp"] / "elsewhere"), "ATTEMPTDB_PATH": str(proven["tmp"] / "none.db")})
    assert p.returncode == 0 and p.stdout.startswith(b"ok: event ev_") and b"(attested)" in p.stdout, p.stdout
    assert not os.path.exists(proven["tmp"] / "none.db")
    doc = json.loads(path.read_bytes())
    assert doc["event"]["binding"] == "attested" and "content" not in json.loads(doc["event"]["line"])
    full = prove(proven, proven["content_id"], "--include-content")
    doc = json.loads(full)
    assert doc["event"]["binding"] == "hash" and "content" in json.loads(doc["event"]["line"])
    assert spec_verify(full)
    p = run_attempt(["verify-proof", "-", "--json"], input=full)
    rep = json.loads(p.stdout)
    assert p.returncode == 0 and rep["ok"] and rep["binding"] == "hash" and rep["tree_size"] == 700
    p = run_attempt(["verify-proof", str(path), "--key", "id_" + "1" * 32])
    assert p.returncode == 1 and p.stdout.startswith(b"problem[proof.signer]:")


def _mutations(doc):
    """(what, mutated document bytes) for one change at a time of every part that matters."""
    def out(d):
        return json.dumps(d).encode()

    def alter(text, i):
        c = text[i]
        return text[:i] + ("1" if c != "1" else "2") + text[i + 1:]

    line = doc["event"]["line"]
    for i in range(len(line)):
        d = json.loads(json.dumps(doc))
        d["event"]["line"] = alter(line, i)
        yield f"line[{i}]", out(d)
    for i in range(64):
        d = json.loads(json.dumps(doc))
        d["event"]["event_hash"] = alter(doc["event"]["event_hash"], i)
        yield f"event_hash[{i}]", out(d)
    for j, h in enumerate(doc["inclusion"]["path"]):
        for i in range(0, 64, 3):
            d = json.loads(json.dumps(doc))
            d["inclusion"]["path"][j] = alter(h, i)
            yield f"path[{j}][{i}]", out(d)
    for field, delta in (("tree_size", 1), ("tree_size", -1), ("leaf_index", 1), ("leaf_index", -1)):
        d = json.loads(json.dumps(doc))
        d["inclusion"][field] += delta
        yield f"{field}{delta:+d}", out(d)
    note = doc["checkpoint"]["note"]
    sig_at = note.index("\u2014")
    for i in list(range(0, sig_at - 1)) + list(range(sig_at + 40, len(note) - 4)):
        if note[i] in "\n=":
            continue
        d = json.loads(json.dumps(doc))
        d["checkpoint"]["note"] = alter(note, i)
        yield f"note[{i}]", out(d)
    if "attestation" in doc["event"]:
        for i in range(0, 85, 2):
            d = json.loads(json.dumps(doc))
            d["event"]["attestation"] = alter(doc["event"]["attestation"], i)
            yield f"attestation[{i}]", out(d)
    d = json.loads(json.dumps(doc))
    d["checkpoint"]["public_key"] = base64.b64encode(os.urandom(32)).decode()
    yield "public_key", out(d)


@pytest.mark.parametrize("which", [0, 2, 4])
def test_a_change_to_any_byte_fails_both_verifiers_with_a_coded_problem(proven, which):
    for disclosed in ([], ["--include-content"]):
        data = prove(proven, proven["ids"][which], *disclosed)
        doc = json.loads(data)
        assert proof_mod.verify(data).ok and spec_verify(data)
        n = 0
        for what, bad in _mutations(doc):
            rep = proof_mod.verify(bad)
            assert not rep.ok, what
            assert rep.problems[0][0].startswith("proof."), (what, rep.problems)
            assert not spec_verify(bad), what
            n += 1
        assert n > 1000
    # the CLI says so with a coded line and exit 1
    bad = dict(doc, inclusion=dict(doc["inclusion"], tree_size=doc["inclusion"]["tree_size"] + 1))
    path = proven["tmp"] / f"bad{which}.json"
    path.write_text(json.dumps(bad))
    p = run_attempt(["verify-proof", str(path)])
    assert p.returncode == 1 and p.stdout.startswith(b"problem[proof.checkpoint]:"), p.stdout


def test_hostile_proof_files_are_refused_with_codes(proven, tmp_path):
    data = prove(proven, proven["ids"][1])
    doc = json.loads(data)
    cases = {
        b"not json": "proof.unreadable",
        b"[1, 2]": "proof.unreadable",
        b'{"format": "attemptdb.proof.v1", "format": "x"}': "proof.malformed",
        json.dumps(dict(doc, format="attemptdb.proof.v2")).encode(): "proof.version",
        json.dumps({k: v for k, v in doc.items() if k != "inclusion"}).encode(): "proof.malformed",
        json.dumps(dict(doc, inclusion=dict(doc["inclusion"], path=["zz"]))).encode(): "proof.malformed",
        json.dumps(dict(doc, inclusion=dict(doc["inclusion"], leaf_index=True))).encode(): "proof.malformed",
        json.dumps(dict(doc, inclusion=dict(doc["inclusion"], path=doc["inclusion"]["path"] * 30))).encode():
            "proof.malformed",
        json.dumps(dict(doc, event=dict(doc["event"], binding="trust me"))).encode(): "proof.malformed",
        json.dumps(dict(doc, checkpoint=dict(doc["checkpoint"], note="hello"))).encode(): "proof.checkpoint",
        b"{" + b'"a":' * 100_000 + b"1" + b"}" * 100_000: "proof.unreadable",
        b'{"format": NaN}': "proof.unreadable",
    }
    for data_bad, code in cases.items():
        rep = proof_mod.verify(data_bad)
        assert not rep.ok and rep.problems[0][0] == code, (data_bad[:60], rep.problems)
    rep = proof_mod.verify(json.dumps(dict(doc, extra=1)).encode())
    assert rep.ok and rep.notes  # an unknown top-level member: a note
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(proof_mod.MAX_BYTES + 10)
    p = run_attempt(["verify-proof", str(big)])
    assert p.returncode == 1 and p.stdout.startswith(b"problem[proof.unreadable]")
    p = run_attempt(["verify-proof", str(tmp_path / "missing.json")])
    assert p.returncode == 2 and p.stderr.startswith(b"error[proof.unreadable]")


def test_prove_names_what_it_cannot_prove(proven, tmp_path, home):
    p = run_attempt(["prove", "ev_" + "0" * 8, "--db", proven["db"]], env=proven["env"])
    assert p.returncode == 2 and p.stderr.startswith(b"error[prove.unknown_event]")
    p = run_attempt(["prove", "nonsense!", "--db", proven["db"]], env=proven["env"])
    assert p.returncode == 2 and p.stderr.startswith(b"error[prove.unknown_event]")
    out = tmp_path / "exists.json"
    out.write_text("x")
    p = run_attempt(["prove", proven["ids"][0], "-o", str(out), "--db", proven["db"]], env=proven["env"])
    assert p.returncode == 2 and b"error[prove.exists]" in p.stderr and out.read_text() == "x"
    # a device without a key has no signed checkpoint to prove against
    db = str(tmp_path / "nokey.db")
    st = Store.open(db)
    st.append(list(synth.generate(3, seed=1)))
    eid = st.conn.execute("SELECT event_id FROM events LIMIT 1").fetchone()[0]
    st.close()
    p = run_attempt(["prove", eid, "--db", db])
    assert p.returncode == 1 and p.stderr.startswith(b"error[prove.no_checkpoint]"), p.stderr


def test_prove_writes_its_file_whole_or_says_why_not(proven, tmp_path, home):
    """-o into a folder that is missing, a path through a file or a full disk is a coded error,
    never a crash report; --force over a symlink replaces the link, never writes through it."""
    eid = proven["ids"][0]
    for where in (tmp_path / "nodir" / "p.json", tmp_path / "afile" / "p.json", "/dev/full"):
        (tmp_path / "afile").write_text("x")
        p = run_attempt(["prove", eid, "-o", str(where), "--force", "--db", proven["db"]], env=proven["env"])
        assert p.returncode == 2 and p.stderr.startswith(b"error[prove.unwritable]"), (where, p.stderr)
        assert b"crash report" not in p.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # a device is never replaced (as root a rename would)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    p = run_attempt(["prove", eid, "-o", str(link), "--force", "--db", proven["db"]], env=proven["env"])
    assert p.returncode == 0, p.stderr
    assert target.read_text() == "keep me" and not link.is_symlink()
    assert json.loads(link.read_text())["event"]["line"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".attempt-")]  # no temporary file left
    assert run_attempt(["verify-proof", str(link)]).returncode == 0


def test_a_new_event_is_provable_at_once(tmp_path, home):
    """prove, as a read, signs the grown chain first: the newest event is covered."""
    db = str(tmp_path / "n.db")
    assert run_attempt(["init", "--db", db]).returncode == 0
    assert run_attempt(["note", "proof me", "--db", db]).returncode == 0
    st = Store.open(db)
    eid = st.conn.execute("SELECT event_id FROM events WHERE provider_event_name = 'session.note_added'").fetchone()[0]
    st.close()
    assert run_attempt(["note", "one more", "--db", db]).returncode == 0
    st = Store.open(db)
    last = st.conn.execute("SELECT event_id FROM events ORDER BY seq DESC LIMIT 1").fetchone()[0]
    st.close()
    for e in (eid, last):
        p = run_attempt(["prove", e, "--db", db])
        assert p.returncode == 0, p.stderr
        assert spec_verify(p.stdout)


def test_bench_proof_reports_its_figures(tmp_path, home):
    p = run_attempt(["bench", "proof", "--events", "300", "--runs", "3", "--json"], timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["events"] == 300 and out["proofs"] >= 3 and out["first_signature_s"] is not None
    assert 0 < out["prove_ms_p50"] <= out["prove_ms_max"] and out["path_length_max"] == 9
    assert out["cli_prove_wall_ms"] > 0 and out["version_wall_ms"] > 0


def test_no_writer_puts_a_file_in_place_of_a_device(proven, tmp_path, home):
    """`bundle export --force` onto a device: refused, coded (run as
    root, a rename would have replaced /dev/full itself)."""
    p = run_attempt(["bundle", "export", "/dev/full", "--force", "--db", proven["db"]], env=proven["env"])
    assert p.returncode == 2 and b"error[bundle.unwritable]" in p.stderr and b"not a regular file" in p.stderr, p.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_named_key_is_read_in_any_case_and_a_malformed_one_is_a_usage_error(proven, tmp_path):
    key = json.loads(run_attempt(["keys", "show", "--json", "--db", proven["db"]], env=proven["env"]).stdout)
    path = tmp_path / "p.json"
    path.write_bytes(prove(proven, proven["ids"][0]))
    for named in (key["key_id"].upper(), "ID_" + key["key_id"][3:], key["public_key"]):
        p = run_attempt(["verify-proof", str(path), "--key", named])
        assert p.returncode == 0 and p.stdout.startswith(b"ok: "), (named, p.stdout)
    for cmd in (["verify-proof", str(path)], ["bundle", "verify", str(path)]):
        p = run_attempt(cmd + ["--key", "garbage"])
        assert p.returncode == 2 and p.stderr.startswith(b"error[keys.bad_key]"), (cmd, p.stderr)


def test_verify_proof_never_blocks_on_a_fifo(tmp_path):
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    p = run_attempt(["verify-proof", str(fifo)], timeout=30)
    assert p.returncode == 2 and p.stderr.startswith(b"error[proof.unreadable]") and b"not a regular file" in p.stderr
