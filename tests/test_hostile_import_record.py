"""Hostile input to `attempt import` and to what people record themselves (`attempt run`,
`note`, artifacts): each reproduced through the CLI or the library a caller uses."""

import json
import os
import shutil

import pytest
from conftest import run_attempt


def attempt(*args, db, env=None, **kw):
    return run_attempt(list(args), env={"ATTEMPTDB_PATH": db, **(env or {})}, **kw)


def one_event(db, tmp_path):
    """A canonical Event v1 line of a real history (a recorded run)."""
    p = attempt("run", "--", "true", db=db)
    assert p.returncode == 0, p.stderr
    p = attempt("events", "--jsonl", db=db)
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.decode().splitlines()]


def test_a_lone_surrogate_escape_is_a_bad_line_named_by_its_number(db, tmp_path):
    """`attempt import jsonl` of a line whose text holds a `\\ud800` escape: refused as
    import.bad_line with its line number (it was refused by the writer's hash of the whole
    batch, as event.invalid, naming no line), and nothing of its batch is stored."""
    evs = one_event(db, tmp_path)
    before = attempt("verify", db=db)
    assert before.returncode == 0
    good = dict(evs[-1], event_id=evs[-1]["event_id"][:-4] + "0f0f")
    bad = dict(evs[-1], event_id=evs[-1]["event_id"][:-4] + "0e0e",
               content={"command": "echo \ud800"})
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")  # json escapes the surrogate
    assert "\\ud800" in f.read_text()
    p = attempt("import", "jsonl", str(f), db=db)
    err = p.stderr.decode()
    assert p.returncode == 2 and "Traceback" not in err
    assert err.startswith("error[import.bad_line]: line 2: "), err
    count = attempt("query", "SELECT count(*) AS n FROM events", "--json", db=db)
    assert json.loads(count.stdout)[0]["n"] == len(evs)  # its batch (line 1 too) was not written
    assert attempt("verify", db=db).returncode == 0


@pytest.mark.parametrize("importer", ["claude-transcripts", "codex"])
def test_a_directory_of_transcripts_skips_what_is_no_regular_file(anchor, db, tmp_path, importer):
    """A FIFO or a symlink to /dev/zero named *.jsonl in a transcript directory hung the import
    forever; a dangling or looping symlink stopped it (codex's default discovery: an internal
    error). Only regular files are transcripts; the others are passed over. (Each importer
    is given a file of its own format: another format is refused, tests/test_import_mismatch.py.)"""
    src = os.path.join(anchor, "fixtures", "transcripts", *(("codex", "classic_turn.jsonl") if importer == "codex"
                                                           else ("claude_code", "basic_turn.jsonl")))
    home = tmp_path / "codex"
    d = home / "sessions" / "2026"
    d.mkdir(parents=True)
    shutil.copy(src, d / "a.jsonl")
    os.mkfifo(d / "b-fifo.jsonl")
    os.symlink("/dev/zero", d / "c-zero.jsonl")
    os.symlink("d-loop.jsonl", d / "d-loop.jsonl")
    os.symlink(str(tmp_path / "nowhere"), d / "e-dangling.jsonl")
    if importer == "codex":  # the default discovery ($CODEX_HOME), which also reads mtimes
        p = attempt("import", "codex", "--json", db=db, env={"CODEX_HOME": str(home)}, timeout=60)
    else:
        p = attempt("import", importer, str(d), "--json", db=db, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["files"] == 1
    assert attempt("verify", db=db).returncode == 0


def test_recorder_command_with_an_unreadable_output_path_is_a_coded_error(db, tmp_path):
    """`Recorder.command(..., stdout="deploy.log")` whose file is missing or a directory raised
    a bare FileNotFoundError / IsADirectoryError; it is record.bad_output, the block still ends
    its session, and the file verifies."""
    import attemptdb
    from attemptdb.errors import AttemptError
    with attemptdb.Recorder(title="ci", db=db) as rec:
        for bad in (tmp_path / "missing.log", tmp_path):
            with pytest.raises(AttemptError) as e:
                rec.command(["make", "deploy"], exit_code=0, stdout=bad)
            assert e.value.code == "record.bad_output" and str(bad) in e.value.message
        rec.note("still recording")
    assert attempt("verify", db=db).returncode == 0
