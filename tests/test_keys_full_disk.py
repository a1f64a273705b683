"""A full disk under the key directory: making the device key, or writing the checkpoint copy
beside it, was an unexpected OSError (error[internal] and a crash report) on the first `keys
init`, `bundle export` or `export --dataset` of a new database; now a coded error, nothing
half-written, and the database untouched."""

import errno
import os

from attemptdb.cli.main import run
from attemptdb.integrity import keys


def _full(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_key_that_cannot_be_written_is_a_coded_error(tmp_path, home, monkeypatch, capsys):
    db = str(tmp_path / "a.db")
    monkeypatch.setenv("ATTEMPTDB_KEY_DIR", str(tmp_path / "keys-elsewhere"))
    monkeypatch.setattr(keys, "write_private", _full)
    code = run(["init", "--db", db])
    err = capsys.readouterr().err
    assert code == 1 and "error[keys.unwritable]: cannot write the device key in " in err, err
    assert "No space left on device; no key was made" in err
    assert not list(home.rglob("crash-*")) and not os.listdir(tmp_path / "keys-elsewhere")


def test_a_checkpoint_copy_that_cannot_be_written_signs_nothing(tmp_path, home, monkeypatch, capsys):
    db = str(tmp_path / "a.db")
    assert run(["init", "--db", db]) == 0
    real = keys.write_private
    monkeypatch.setattr(keys, "write_private", lambda path, *a, **k: _full() if path.endswith(".checkpoint")
                        else real(path, *a, **k))
    assert run(["note", "hello", "--db", db]) == 0  # recorded; its signature is what cannot be written
    capsys.readouterr()
    code = run(["checkpoint", "--db", db])
    err = capsys.readouterr().err
    assert code == 1 and "error[checkpoint.unwritable]: cannot write the checkpoint beside the key" in err, err
    assert not list(home.rglob("crash-*"))
    monkeypatch.setattr(keys, "write_private", real)
    assert run(["verify", "--db", db]) == 0
    assert os.path.exists(db)
