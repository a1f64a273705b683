"""`attempt bench faults`: runs the fault suite (attemptdb.devtools.faultbench) and prints its figures
as the closing-note table; exit 1 when anything went wrong."""

from click.testing import CliRunner

from attemptdb.cli.main import cli
from attemptdb.devtools import faultbench


def fake(failures=(), faults=58):
    def run(*, long=False, families=None, seed=14, progress=None):
        return {"long": long, "seed": seed, "seconds": 1.0, "tallies": [
            {"family": "kill -9: import jsonl", "trials": 60, "faults": faults, "integrity_failures": 0,
             "verify_failures": 0, "acked_lost": 0, "tracebacks": 0, "failures": list(failures)},
            {"family": "I/O errors: capture", "trials": 300, "faults": 300, "integrity_failures": 0,
             "verify_failures": 0, "acked_lost": 0, "tracebacks": 0, "failures": []}]}
    return run


def test_the_table_of_figures(monkeypatch):
    monkeypatch.setattr(faultbench, "run", fake())
    r = CliRunner().invoke(cli, ["bench", "faults", "--long"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("| fault family | trials | faults injected | integrity_check failures |")
    assert "| kill -9: import jsonl | 60 | 58 | 0 | 0 | 0 | 0 |" in lines
    assert "| **all** | **360** | **358** | **0** | **0** | **0** | **0** |" in lines
    assert "long form, seed 14" in r.output


def test_any_failure_is_exit_1_and_named(monkeypatch):
    monkeypatch.setattr(faultbench, "run", fake(["import trial 3: verify: problem"]))
    r = CliRunner().invoke(cli, ["bench", "faults"])
    assert r.exit_code == 1 and "failure: kill -9: import jsonl: import trial 3: verify: problem" in r.output


def test_an_unknown_family_is_bad_usage():
    r = CliRunner().invoke(cli, ["bench", "faults", "--family", "nope"])
    assert r.exit_code == 2 and "unknown family nope" in r.output


def test_a_family_that_injected_no_fault_is_said_to_prove_nothing(monkeypatch):
    monkeypatch.setattr(faultbench, "run", fake(faults=0))
    r = CliRunner().invoke(cli, ["bench", "faults"])
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "note: kill -9: import jsonl: no fault was injected in 60 trials" in said and "proves nothing" in said
    assert "I/O errors: capture: no fault" not in said
    monkeypatch.setattr(faultbench, "run", fake())
    assert "no fault was injected" not in CliRunner().invoke(cli, ["bench", "faults"]).output
