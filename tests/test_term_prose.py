"""Messages that fit the terminal, found by a user's walkthrough at COLUMNS=80: `bundle verify`'s
ok line (~187 columns), `bundle export`/`import`'s lines, the `failures` hint and the
`needs-you` note on stderr, and a DataFusion note that was broken inside a snapshot id. Prose
is wrapped at the terminal's width (termtable.terminal_width: COLUMNS, else the stream's
terminal, else 80) and only at spaces (termtable.prose): an id, a path or a command in
backticks is never broken, so it can be copied; --json is unchanged."""

import json

import pytest
import scenario_db
from conftest import run_attempt

from attemptdb.render import termtable

ENV = {"COLUMNS": "80", "NO_COLOR": "1", "TZ": "UTC", "ATTEMPTDB_NO_DAEMON": "1"}


def _home(root) -> dict:
    """The environment of an isolated HOME (the database's signing key lives there)."""
    return {"HOME": str(root), "XDG_DATA_HOME": str(root / ".local" / "share"),
            "XDG_STATE_HOME": str(root / ".local" / "state"), "XDG_CONFIG_HOME": str(root / ".config")}


def run(args, ok=(0,), **env):
    p = run_attempt(list(args), env=dict(ENV, **HOME, **env))
    assert p.returncode in ok and b"Traceback" not in p.stderr, p.stderr.decode()
    return p.stdout.decode(), p.stderr.decode()


def fits(text: str, width: int = 80, *, whole=()) -> None:
    """Every line within `width`, but a line that is one word of `whole` (an id wider than a
    line, printed whole on a line of its own)."""
    long = [ln for ln in text.splitlines() if termtable.cols(ln) > width and ln.strip() not in whole]
    assert not long, f"{len(long)} line(s) wider than {width} columns: {long[:3]}"


def joined(text: str) -> str:
    """The message a wrapped text holds (its continuation lines joined back with one space)."""
    return " ".join(ln.strip() for ln in text.splitlines())


HOME: dict = {}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("prose")
    (root / "home").mkdir()
    HOME.update(_home(root / "home"))
    path = str(root / "a.db")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in HOME.items():
            mp.setenv(k, v)
        scenario_db.build(path, "units_needs_you", "retry_supersession")
    yield path
    HOME.clear()


# --- termtable.prose ------------------------------------------------------------------------

def test_prose_breaks_only_at_spaces_and_keeps_commands_and_named_paths_whole():
    sid = "000000000034/00117745161914941440/dev_01a25099-d571-7af8-a830-c07419e2c625/000001"
    text = f"note: team dataset in /tmp/x/ds: 1 device, latest snapshot {sid}"
    lines = termtable.prose(text, 80, "  ")
    assert lines == ["note: team dataset in /tmp/x/ds: 1 device, latest snapshot", "  " + sid]
    assert termtable.wrap(text, 80, "  ")[1].strip() != sid  # the word-breaking wrap cut it
    hint = "attempts are Tier 1 inferences; run `attempt trace <att_id>` or `attempt why <att_id>` for the evidence"
    lines = termtable.prose(hint, 80, "  ")
    assert all(termtable.cols(ln) <= 80 for ln in lines) and joined("\n".join(lines)) == hint
    assert any("`attempt why <att_id>`" in ln for ln in lines)  # not `attempt why / <att_id>`
    path = "/home/me/My Bundles/week 12.zip"
    msg = "exported 34 events in 5 sessions to " + path + " (bun_01a25099-d6ce-7c29-8d78-2b97452734fc, signed)"
    for width in (40, 50, 60):
        lines = termtable.prose(msg, width, "  ", whole=(path,))
        assert any(path in ln for ln in lines), (width, lines)
        assert joined("\n".join(lines)) == msg
    # a command wider than a line is broken at its spaces rather than run past the width
    cmd = "note: run `attempt query --engine datafusion --from /data/team \"SELECT count(*) FROM events\"`"
    lines = termtable.prose(cmd, 40, "  ")
    assert all(termtable.cols(ln) <= 40 for ln in lines) and joined("\n".join(lines)) == cmd
    assert termtable.prose("a\x00b c", 80) == ["a\x00b c"]  # what holds a NUL is left as it is
    assert termtable.prose("", 80) == [""] and termtable.prose("short", 80) == ["short"]
    # an unclosed backtick is no span; the text is the text
    assert joined("\n".join(termtable.prose("a `b c d " * 20, 30))) == ("a `b c d " * 20).strip()


# --- the commands ---------------------------------------------------------------------------

def test_bundle_export_verify_and_import_fit_80_columns(db, tmp_path):
    out_dir = tmp_path / "my bundles"
    out_dir.mkdir()
    bundle = str(out_dir / "week twelve of the project.zip")
    out, err = run(["bundle", "export", bundle, "--db", db])
    fits(out + err, whole=(bundle,))
    assert any(bundle in ln for ln in out.splitlines()), out  # the path, spaces and all, on one line
    assert joined(out).startswith("exported ") and "signed by id_" in joined(out)
    out, err = run(["bundle", "verify", bundle])
    fits(out + err)
    data = json.loads(run(["bundle", "verify", bundle, "--json"])[0])
    from attemptdb.exchange import bundle as library
    assert joined(out) == library.verify(bundle).line()  # the library's text, unchanged, wrapped
    assert out.startswith("ok: bundle " + data["bundle_id"]) and data["signer"] in out.split()
    assert data["ok"] is True and data["bundle_id"].startswith("bun_")  # --json: as before
    out, err = run(["bundle", "import", bundle, "--db", str(tmp_path / "other.db")])
    fits(out + err)
    assert joined(out).startswith("imported ") and data["bundle_id"] in out  # whole, on one line


def test_a_bundle_problem_fits_too(db, tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    out, err = run(["bundle", "verify", str(bad)], ok=(1,))
    fits(out + err)
    assert out.startswith("problem[bundle.not_a_bundle]: not a bundle")


def test_the_failures_hint_fits_and_keeps_its_commands_whole(db):
    out, err = run(["failures", "--db", db])
    fits(out + err)
    assert "`attempt trace <att_id>`" in err and "`attempt why <att_id>`" in err
    assert joined(err) == ("attempts are Tier 1 inferences; run `attempt trace <att_id>` or "
                           "`attempt why <att_id>` for the evidence")
    assert json.loads(run(["failures", "--db", db, "--json"])[0])["failures"]


def test_the_needs_you_note_fits(db):
    out, err = run(["needs-you", "--db", db])
    fits(out + err)
    assert '`attempt query "SHOW EVIDENCE FOR <id>"`' in err and "`attempt why <id>`" in err
    assert joined(err).startswith("note: inferences with their evidence;")
    wide, err = run(["needs-you", "--db", db], COLUMNS="200")
    assert len(err.splitlines()) == 1  # a wider terminal: one line, as before


def test_the_datafusion_note_never_breaks_the_snapshot_id(db, tmp_path):
    """The snapshot key is 81 characters: a line that holds it whole has it (never broken);
    at 80 columns it fits no line, so the note names it (generation and device) and --json
    prints it whole."""
    pytest.importorskip("pyarrow", reason="the arrow extra is part of the test extra")
    pytest.importorskip("datafusion", reason="the arrow extra is part of the test extra")
    ds = str(tmp_path / "ds")
    run(["export", "--dataset", ds, "--db", db])
    sql = "SELECT count(*) AS n FROM sessions"
    out, err = run(["query", "--json", "--engine", "datafusion", "--from", ds, sql])
    assert err.startswith("note: team dataset") and len(err.splitlines()) == 1, err
    sid = err.split()[-1]
    assert len(sid) == 81 and sid.count("/") == 3 and "dev_" in sid, err
    out, _ = run(["query", "--engine", "datafusion", "--from", ds, sql], COLUMNS="83")
    note = out[out.index("note: team dataset"):]
    assert any(ln.strip() == sid for ln in note.splitlines()), note  # whole, on a line of its own
    fits(out, 83)
    out, _ = run(["query", "--engine", "datafusion", "--from", ds, sql])  # 80 columns
    fits(out)  # every line, the note's too
    note = joined(out[out.index("note: team dataset"):])
    _, _, device, gen = sid.split("/")
    assert note.endswith(f"latest snapshot generation {int(gen)} of {device} (its key: --json)"), note
