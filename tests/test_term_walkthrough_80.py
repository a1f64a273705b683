"""A new user's README walkthrough at COLUMNS=80, the lines that still ran past it: `attempt
bench ingest`/`query` in text (names run into their values, statements on 211-column lines),
`conformance FILE`, `hook install/uninstall --mcp` (and its absolute paths beside the hooks'
`~/…`), `keys init --replace-lost`, `recover`, `verify` without the key, `verify-proof`, the
`retract` preview, `demo`'s first line, `export --dataset`'s snapshot key; `prove` and `bundle
export` saying `keys.lost` twice; the caret frame showing a control character as a space; the
`--since` error leaving `yesterday` out; `keys list` hiding the key; `hook install --provider
codx` neither echoing the name nor suggesting `codex`. Prose is wrapped at spaces through the
commands' `say` (termtable.prose: ids, paths and commands whole); --json is unchanged."""

import json
import os
import shutil

import pytest
from conftest import run_attempt, signed_demo
from test_term_prose import _home, fits, joined

ENV = {"COLUMNS": "80", "NO_COLOR": "1", "TZ": "UTC", "ATTEMPTDB_NO_DAEMON": "1"}
CALLER = "needs the change to attemptdb/cli/evidence.py named in its docstring"


def run(home: dict, args, ok=(0,), **env):
    p = run_attempt(list(args), env=dict(ENV, **home, **env))
    assert p.returncode in ok and b"Traceback" not in p.stderr, (args, p.returncode, p.stderr.decode())
    return p.stdout.decode(), p.stderr.decode()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo history (signed, three agents) in an isolated HOME: (home, db, root, what
    `attempt demo` printed). `attempt demo` deletes its key: the database is built again
    with its key kept in that HOME, so commands can sign it."""
    root = tmp_path_factory.mktemp("walk80")
    (root / "home").mkdir()
    home = _home(root / "home")
    db = str(root / "a demo dir" / "attemptdb-demo.db")
    os.mkdir(os.path.dirname(db))
    out, _ = run(home, ["demo", "--db", db])
    signed_demo(db, os.path.join(home["XDG_DATA_HOME"], "attemptdb", "keys"), home)
    return home, db, root, out


def _event(home, db, i=0) -> str:
    return json.loads(run(home, ["events", "--db", db, "--json"])[0])[i]["event_id"]


# --- 1. bench -------------------------------------------------------------------------------

def test_bench_text_names_and_values_apart_and_statements_wrapped(monkeypatch, capsys):
    from attemptdb.cli import bench
    monkeypatch.setenv("COLUMNS", "80")
    stmt = ("SELECT work_unit_id, phase, phase_reason, failed_attempt_count FROM work_units WHERE status = "
            "'open' AND failed_attempt_count >= 2 ORDER BY updated_at DESC")
    bench._show({"events": 2000, "chain_only_events_per_s": 4962, "json_floor_ratio_bound": 1.518,
                 "statements": [{"statement": "SHOW SESSIONS", "wall_ms": 51.9, "ratio": 0.78, "peak_rss_mb": 17.9},
                                {"statement": stmt, "wall_ms": 85.3, "ratio": 1.28, "peak_rss_mb": 17.4}]}, False)
    out = capsys.readouterr().out
    fits(out)
    lines = out.splitlines()
    assert lines[1].split() == ["chain_only_events_per_s", "4962"], out  # a name never runs into its value
    assert lines[2].split() == ["json_floor_ratio_bound", "1.518"], out
    assert lines[3] == "statements:" and lines[4].split() == ["wall_ms", "ratio", "peak_rss_mb", "statement"]
    assert lines[6].split() == ["51.9", "0.78", "17.9", "SHOW", "SESSIONS"]
    assert stmt in joined("\n".join(ln[lines[4].index("statement"):] for ln in lines[7:]))  # wrapped, whole
    bench._show({"events": 1, "statements": []}, True)
    assert json.loads(capsys.readouterr().out) == {"events": 1, "statements": []}  # --json as before


def test_bench_ingest_text_fits(tmp_path):
    home = _home(tmp_path)
    out, _ = run(home, ["bench", "ingest", "--events", "300", "--repeat", "1"])
    fits(out)
    pairs = dict(ln.split() for ln in out.splitlines())  # every line: a name, then its value
    assert pairs["events"] == "300" and "chain_only_events_per_s" in pairs and "json_floor_ratio_bound" in pairs


# --- 2. the lines that ignored COLUMNS ------------------------------------------------------

def test_demo_first_line_fits(demo):
    home, db, _, out = demo
    hints = out.split("Look around:\n", 1)[1].split("\n\n", 1)[0]  # commands to copy: one a line, whole
    fits(out, whole=(db, *(h.strip() for h in hints.splitlines())))
    first = out.split("\n\n", 1)[0]
    assert joined(first) == f"AttemptDB demo: 31 hook payloads from 3 agents recorded in {db}"
    assert any(ln.strip() == db or ln.endswith(" " + db) for ln in first.splitlines())  # the path whole


def test_conformance_fits_on_a_good_and_a_bad_stream(demo, tmp_path):
    home, db, _, _ = demo
    good = tmp_path / "good.jsonl"
    good.write_text(run(home, ["events", "--jsonl", "--db", db])[0])
    out, _ = run(home, ["conformance", str(good)])
    fits(out)
    assert "COMPATIBLE" in out.splitlines()
    envelope = out[out.index("Envelope"):out.index("Identity")]
    assert " ".join(envelope.split()) == "Envelope ✓ every line parses; schema_version 1; ids present and unique"
    assert envelope.splitlines()[1].startswith(" " * 24)  # continued under the rule column
    lines = [json.loads(x) for x in good.read_text().splitlines()]
    lines[1]["event_hash"] = "x" * 64
    lines[5], lines[6] = lines[6], lines[5]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(x) for x in lines[:3] + lines[4:]) + "\n")  # a gap in source_seq
    out, _ = run(home, ["conformance", str(bad)], ok=(1,))
    fits(out)
    assert "NOT COMPATIBLE" in out and "unknown top-level field (extensions must be named x_<name>)" in joined(out)
    assert any(ln.startswith("note: device dev_") for ln in out.splitlines())
    data = json.loads(run(home, ["conformance", str(bad), "--json"], ok=(1,))[0])
    assert data["compatible"] is False  # --json as before


def test_hook_install_and_uninstall_mcp_fit_and_name_paths_from_home(tmp_path):
    (tmp_path / ".claude").mkdir()
    home = _home(tmp_path)
    for args in (["hook", "install", "-p", "claude-code", "--mcp", "--no-verify"],
                 ["hook", "uninstall", "-p", "claude-code", "--mcp"]):
        out, err = run(home, args)
        fits(out + err)
        assert str(tmp_path) not in out, out  # `~/…`, as the hook block says its paths
        mcp = out[out.index("MCP server"):]
        assert mcp.split("\n", 1)[0].rstrip().endswith(" ~/.claude.json"), out
        assert "`claude mcp list`" in mcp and "restart Claude Code" in joined(mcp)
    assert "backup: ~/.claude.json.attemptdb.bak-" in out and "note: removed ~/.claude.json:" in out


@pytest.fixture
def lost_key(tmp_path):
    """A signed database whose key file was lost, with a signed checkpoint and an unsigned event
    after it: (home, db, key path)."""
    home = _home(tmp_path / "home")
    db = str(tmp_path / "attempt.db")
    run(home, ["init", "--db", db])
    run(home, ["note", "first", "--db", db])
    run(home, ["checkpoint", "--db", db])
    keydir = os.path.join(home["XDG_DATA_HOME"], "attemptdb", "keys")
    (name,) = [n for n in os.listdir(keydir) if n.endswith(".key")]
    shutil.move(keydir, str(tmp_path / "key-backup"))
    os.makedirs(keydir, mode=0o700)
    run(home, ["note", "second", "--db", db])  # a checkpoint is due, and cannot be signed
    return home, db, os.path.join(keydir, name)


def test_keys_init_replace_lost_fits_with_its_paths_and_command_whole(lost_key):
    home, db, key_path = lost_key
    replaced = key_path[:-len(".key")] + ".replaced"
    out, err = run(home, ["keys", "init", "--replace-lost", "--db", db])
    fits(out + err, whole=(key_path, replaced))
    new = json.loads(run(home, ["keys", "show", "--db", db, "--json"])[0])
    text = joined(out)
    assert text.startswith(f"replaced: {new['key_id']} is this database's signing key from now on")
    assert f"key file (mode 0600): {key_path}" in text and f"the record beside the key: {replaced}" in text
    assert f"`attempt keys trust {new['device_id']} {new['key_id']}`" in text  # what teammates run
    assert "`attempt checkpoint --adopt`" in out  # a command on one line, to copy


def test_verify_without_the_key_fits(lost_key):
    home, db, key_path = lost_key
    out, err = run(home, ["verify", "--db", db])
    fits(out + err)
    assert out.startswith("ok: ") and "note: no local signing key for this device:" in err
    assert "which proves integrity only against accidents" in joined(err)


def test_checkpoint_line_fits(tmp_path):
    home = _home(tmp_path / "home")
    db = str(tmp_path / "attempt.db")
    run(home, ["init", "--db", db])
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi", "cwd": "/tmp"}
    p = run_attempt(["capture", "claude_code", "--db", db], env=dict(ENV, **home), input=json.dumps(payload).encode())
    assert p.returncode == 0 and p.stderr == b""  # (the hook path signs nothing)
    out, err = run(home, ["checkpoint", "--db", db])
    fits(out + err)
    key = json.loads(run(home, ["keys", "show", "--db", db, "--json"])[0])["key_id"]
    assert joined(out).startswith("checkpoint: size ") and joined(out).endswith(f"signed by {key}")


def test_recover_fits_one_command_a_line(demo, tmp_path):
    home, db, _, _ = demo
    src = str(tmp_path / "a copy of the demo.db")
    shutil.copy(db, src)
    new = str(tmp_path / "recovered.db")
    out, err = run(home, ["recover", "--db", src, "--out", new])
    quoted = [f"'{p}'" for p in (src, src + ".damaged", src + "-wal", src + ".damaged-wal", src + "-shm", new)]
    fits(out + err, whole=(src, new, *quoted))
    assert joined(out).startswith(f"recovered 31 events into {new} (31 read through SQLite")
    steps = out[out.index("to use it"):].split("\n", 1)[1]
    commands = [f"attempt daemon stop --db {quoted[0]}", f"mv {quoted[0]} {quoted[1]}",
                f"mv {quoted[2]} {quoted[3]} 2>/dev/null", f"rm -f {quoted[4]}", f"mv {quoted[5]} {quoted[0]}"]
    assert [ln.split()[0] for ln in steps.splitlines() if not ln.startswith("    ")] == ["attempt", "mv", "mv", "rm", "mv"]
    assert joined(steps) == " ".join(commands)  # one command a line (its continuation lines under it)


def test_retract_preview_is_a_table_that_fits(demo):
    home, db, _, _ = demo
    att = json.loads(run(home, ["failures", "--db", db, "--json"])[0])["failures"][0]["attempt_id"]
    sid = json.loads(run(home, ["query", "SHOW SESSIONS", "--db", db, "--json"])[0])[0]["session_id"]
    for args in (["--attempt", att], ["--session", sid]):
        out, err = run(home, ["retract", *args, "--reason", "test", "--dry-run", "--db", db])
        fits(out + err)
        assert out.rstrip().endswith("(dry run — nothing was written)")
        rows = [ln.split() for ln in out.splitlines()]
        assert ["table", "before", "after"] in rows and ["changed", "field", "before", "after"] in rows, out
        assert all("…" not in r[0] for r in rows if r and r[0][:4] in ("att_", "trn_", "wu_0", "ses_")), out
    wide, _ = run(home, ["retract", "--attempt", att, "--reason", "test", "--dry-run", "--db", db], COLUMNS="200")
    assert any(r[:2] == [att, "retracted"] for r in (ln.split() for ln in wide.splitlines())), wide  # whole ids
    out, _ = run(home, ["correct", att, "--outcome", "failed", "--dry-run", "--db", db])
    fits(out)
    assert any(ln.split()[1:] == ["corrected_by", "-", "(this", "event)"] for ln in out.splitlines()), out


def test_export_dataset_fits_and_names_the_snapshot_key_where_it_fits(demo, tmp_path):
    pytest.importorskip("pyarrow", reason="the arrow extra is part of the test extra")
    home, db, _, _ = demo
    ds = str(tmp_path / "ds")
    out, _ = run(home, ["export", "--dataset", ds, "--db", db])
    fits(out, whole=(ds,))
    assert joined(out).endswith("projections snapshot written (its key: --json)")
    out, _ = run(home, ["export", "--dataset", str(tmp_path / "ds2"), "--db", db], COLUMNS="120")
    fits(out, 120)
    (manifests,) = os.listdir(tmp_path / "ds2" / "_manifests")
    m = json.loads((tmp_path / "ds2" / "_manifests" / manifests / "000001.json").read_text())
    assert joined(out).endswith(f"projections snapshot {m['snapshot']}")  # a terminal that holds it: whole


def test_verify_proof_ok_line_and_prove_line_fit(demo, tmp_path):
    """attemptdb/cli/evidence.py, verify_proof_cmd: `say(rep.line(), fg=…)` and `say(f"note: {n}",
    err=True)` in place of click.echo/err of printable(…); prove_cmd: its `proof of … written
    to OUT` line through `say(…, err=True, paths=(output,))`."""
    home, db, _, _ = demo
    proof = str(tmp_path / "p.json")
    out, err = run(home, ["prove", _event(home, db, 3), "-o", proof, "--db", db])
    fits(out + err, whole=(proof,))
    out, err = run(home, ["verify-proof", proof])
    fits(out + err)
    assert joined(out).startswith("ok: event ev_") and "(not pinned: pass --key to require a signer)" in joined(out)


# --- 3. keys.lost once ----------------------------------------------------------------------

def _lost_once(err: str) -> None:
    assert err.count("error[keys.lost]") == 1 and "no checkpoint signed" not in err, err
    assert err.startswith("error[keys.lost]: ")


def test_bundle_export_says_keys_lost_once(lost_key, tmp_path):
    home, db, _ = lost_key
    _, err = run(home, ["bundle", "export", str(tmp_path / "b.zip"), "--db", db], ok=(1,))
    _lost_once(err)
    assert not os.path.exists(tmp_path / "b.zip")
    _, err = run(home, ["events", "--db", db])  # a read still says, once, that nothing was signed
    assert err.count("error[keys.lost]") == 1 and err.startswith("note: no checkpoint signed:")


def test_prove_says_keys_lost_once(lost_key):
    """attemptdb/cli/evidence.py, prove_cmd: `st = read_store(db, key=True)`."""
    home, db, _ = lost_key
    _, err = run(home, ["prove", _event(home, db), "--db", db], ok=(1,))
    _lost_once(err)


# --- 5, 6, 8: what errors echo --------------------------------------------------------------

def test_the_caret_frame_shows_a_control_character_as_a_question_mark(demo):
    home, db, _, _ = demo
    _, err = run(home, ["why", "att_\x1b[31mx", "--db", db], ok=(2,))
    assert "WHY attempt 'att_?[31mx'" in err and "\x1b" not in err, err
    frame, caret = err.splitlines()[-2:]
    assert caret.index("^") == frame.index("attempt 'att_")  # still under the marked text, one for one
    assert caret.count("^") == len("attempt 'att_?[31mx'")
    _, err = run(home, ["query", "SHOW\t\x07x", "--db", db], ok=(2,))
    assert " 1 | SHOW ?x" in err and "\x07" not in err, err  # a tab is the space it stands for


def test_the_since_error_lists_yesterday(demo):
    home, db, _, _ = demo
    _, err = run(home, ["events", "--since", "bogus", "--db", db], ok=(2,))
    assert "expected RFC 3339, YYYY-MM-DD, now, today, yesterday or -15m/-2h/-3d/-1w" in err
    run(home, ["events", "--since", "yesterday", "--db", db])


def test_an_unknown_provider_is_echoed_with_the_nearest(tmp_path):
    home = _home(tmp_path)
    _, err = run(home, ["hook", "install", "--provider", "codx"], ok=(2,))
    assert err.startswith("error[installer.unknown_provider]: unknown provider 'codx'; did you mean `codex`? "
                          "(use one of: claude-code, codex, cursor, gemini-cli)"), err
    _, err = run(home, ["hook", "status", "--provider", "zzzz"], ok=(2,))
    assert "unknown provider 'zzzz' (use one of:" in err  # nothing near: no suggestion
    _, err = run(home, ["hoook"], ok=(2,))
    assert "No such command 'hoook'; did you mean `hook`?" in err  # the same rule as commands
