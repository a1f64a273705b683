"""`attempt verify` leaves the damage mark a capture would (spec/recover.md "Whoever sees it
leaves a mark"), so `doctor` and `status` report the file after it: a file rolled back below
the device's signed checkpoint (its -wal lost), a file SQLite cannot open (a malformed page),
a file whose header is damaged where an AttemptDB was in use. Such a file is a `problem: the
file is damaged …` report (exit 1, `--json` prints it) pointing to `attempt recover`, never an
`error[store.corrupt]` that sends the user back to `verify`. Findings that are not damage (the
checkpoint copy beside the key missing, attrs outside today's bounds) leave no mark. All through
the real CLI."""

import json
import os
import shutil

from conftest import run_attempt, signed_demo

from attemptdb.integrity import damage
from attemptdb.store import location


def attempt(*args, env=None):
    p = run_attempt(list(args), env=env)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def _used(db, tmp_path):
    """A database in use: the demo's events (its key kept), then a few `attempt run`s (each
    signs a checkpoint beside the key)."""
    signed_demo(db)
    for _ in range(2):
        assert attempt("run", "--db", db, "--", "true")[0] == 0


def _rolled_back(db, tmp_path):
    """The file as it was before the newest signed rows, without its -wal (a restored backup,
    a copy that left the -wal behind)."""
    _used(db, tmp_path)
    old = str(tmp_path / "old.db")
    shutil.copyfile(db, old)
    assert attempt("run", "--db", db, "--", "true")[0] == 0
    shutil.copyfile(old, db)
    for s in ("-wal", "-shm"):
        if os.path.exists(db + s):
            os.unlink(db + s)


def test_verify_marks_a_rolled_back_file_and_doctor_and_status_report_it(db, tmp_path):
    _rolled_back(db, tmp_path)
    code, out, err = attempt("verify", "--db", db)
    assert code == 1 and out.startswith("problem: rows seq=") and "rolled back" in out, out + err
    m = damage.marked(db)
    assert m is not None and m["by"] == "verify" and "rolled back" in m["what"]  # was: no mark
    assert "`attempt recover`" in err  # what to do: the note says the file is marked
    code, out, _ = attempt("doctor", "--db", db)
    assert code == 1 and "the database is damaged" in out and "found by verify" in out, out
    code, out, _ = attempt("status", "--db", db, "--json")
    assert any("the database is damaged" in w for w in json.loads(out)["warnings"]), out


def test_verify_json_of_a_rolled_back_file_marks_it_too(db, tmp_path):
    _rolled_back(db, tmp_path)
    code, out, _ = attempt("verify", "--db", db, "--json")
    rep = json.loads(out)
    assert code == 1 and rep["problems"][0]["kind"] == "truncated"
    assert damage.marked(db) is not None
    assert any("marked damaged" in n for n in rep["notes"])


def test_a_missing_checkpoint_copy_is_a_problem_but_no_damage(db, tmp_path):
    _used(db, tmp_path)
    for name in os.listdir(location.key_dir()):
        if name.endswith(".checkpoint"):
            os.unlink(os.path.join(location.key_dir(), name))
    code, out, _ = attempt("verify", "--db", db)
    assert code == 1 and "the copy beside the key is missing" in out, out
    assert damage.marked(db) is None


def test_a_warning_only_finding_leaves_no_mark(db, tmp_path):
    from test_verify_attrs_bounds import _build
    _build(db)
    code, out, err = attempt("verify", "--db", db)
    assert code == 0 and out.startswith("ok: ") and "warning[attrs_bounds]" in err, out + err
    assert damage.marked(db) is None


def _half(db):
    with open(db, "r+b") as f:
        f.truncate(os.path.getsize(db) // 2)


def test_verify_reports_a_file_sqlite_cannot_open_as_damaged(db, tmp_path):
    _used(db, tmp_path)
    t = str(tmp_path / "t.db")
    shutil.copyfile(db, t)
    _half(t)
    code, out, err = attempt("verify", "--db", t)
    # was: error[store.corrupt] … "`attempt verify` says more", exit 2
    assert code == 1 and out.startswith("problem: the file is damaged: SQLite cannot open it"), out + err
    assert "`attempt recover`" in out and "error[" not in err
    code, out, err = attempt("verify", "--db", t, "--json")
    rep = json.loads(out)  # was: no JSON at all
    assert code == 1 and rep["ok"] is False and rep["problems"][0]["kind"] == "damaged", out + err
    m = damage.marked(t)
    assert m is not None and m["by"] == "verify"


def _damage_header(path):
    with open(path, "r+b") as f:
        f.write(b"X")


def test_a_damaged_header_at_the_database_in_use_is_damage(db, tmp_path):
    _used(db, tmp_path)
    for s in ("-wal", "-shm"):  # folded in and gone: only the path says it was in use
        if os.path.exists(db + s):
            os.unlink(db + s)
    _damage_header(db)
    code, out, err = attempt("verify", env={"ATTEMPTDB_PATH": db})
    # was: error[store.not_a_database] … is not an AttemptDB, exit 2
    assert code == 1 and out.startswith("problem: the file is damaged"), out + err
    assert "the database AttemptDB uses here" in out and "`attempt recover`" in out
    assert damage.marked(db) is not None
    code, out, _ = attempt("doctor", env={"ATTEMPTDB_PATH": db})
    assert code == 1 and "the database is damaged" in out, out


def test_a_damaged_header_with_a_wal_beside_it_is_damage_and_other_files_are_not(db, tmp_path):
    _used(db, tmp_path)
    h = str(tmp_path / "h.db")
    shutil.copyfile(db, h)
    _damage_header(h)
    code, _, err = attempt("verify", "--db", h)  # a copy alone: nothing says it was an AttemptDB
    assert code == 2 and err.startswith("error[store.not_a_database]"), err
    assert damage.marked(h) is None
    open(h + "-wal", "wb").close()
    code, out, err = attempt("verify", "--db", h, "--json")
    rep = json.loads(out)
    assert code == 1 and rep["problems"][0]["kind"] == "damaged" and "a -wal lies beside it" in out, out + err
    assert damage.marked(h) is not None
