"""AttemptQL works with whichever parsimonious setup.cfg allows, however it is installed.

`attemptdb/attemptql/peg_runtime.py` takes a start-up shortcut into parsimonious's internals and
must fall back to a plain `import parsimonious` whenever the shortcut cannot be taken. These
tests install nothing: each runs `attempt query` in a subprocess whose parsimonious is a copy of
the installed one, changed the way another release or install would differ (parsimonious 0.10's
`expressions` has no fallback from `regex` to `re`; a copy whose fallback engine is broken; the
package inside a zip), and checks the answers equal those of the ordinary install.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT, run_attempt, skip_when_the_interpreter_loads
from test_attemptql_scenario import A2, A3, build

STATEMENT = "SHOW FAILED ATTEMPTS"


def _installed_package() -> str:
    spec = importlib.util.find_spec("parsimonious")
    return spec.submodule_search_locations[0]


def _copy(dest_site: str) -> str:
    pkg = os.path.join(dest_site, "parsimonious")
    shutil.copytree(_installed_package(), pkg, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    return pkg


def _edit_expressions(pkg: str, replacement: str) -> None:
    """Replace the `regex`-or-`re` import of parsimonious.expressions by `replacement`."""
    path = os.path.join(pkg, "expressions.py")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    block = re.compile(r"^try:\n    import regex as re\nexcept ImportError:\n    import re[^\n]*\n", re.M)
    plain = re.compile(r"^import regex as re\n", re.M)  # parsimonious 0.10 installed
    new, n = block.subn(lambda m: replacement, src)
    if n == 0:
        new, n = plain.subn(lambda m: replacement, src)
    assert n == 1, "parsimonious.expressions no longer imports its regex engine the way this test knows"
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)


NO_RE_FALLBACK = "import regex as re\n"  # parsimonious 0.10.0's expressions.py, verbatim

BROKEN_RE_FALLBACK = '''try:
    import regex as re
except ImportError:
    import re as _re

    class re:  # a stand-in engine that imports fine and never matches
        I, L, M, S, U, X, A = _re.I, _re.L, _re.M, _re.S, _re.U, _re.X, _re.A
        IGNORECASE = _re.IGNORECASE

        @staticmethod
        def compile(pattern, flags=0):
            return _re.compile("(?!)")
'''


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A scenario database, an isolated HOME, and the ordinary install's answers."""
    root = tmp_path_factory.mktemp("compat")
    db = str(root / "scenario.db")
    build(db)
    home = root / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(root / "cache-ordinary")}
    ok = run_attempt(["query", STATEMENT, "--json", "--db", db], env=env)
    assert ok.returncode == 0, ok.stderr.decode()
    rows = json.loads(ok.stdout)
    assert {r["attempt_id"] for r in rows} == {A2, A3}
    bad = run_attempt(["query", "SHOW ATTEMPTS FOO", "--db", db], env=env)
    assert bad.returncode == 2 and b"error[AQL0201]" in bad.stderr
    return {"root": root, "db": db, "env": env, "json": ok.stdout, "bad": bad.stderr}


def _runtime(env: dict) -> dict:
    """What peg_runtime chose in a process with this environment."""
    code = ("import sys\nfrom attemptdb.query import peg_runtime as p\n"
            "deferred = sorted(m for m in p.DEFERRED if m in sys.modules)\n"
            "import json\n"  # json imports re
            "print(json.dumps({'shortcut': p.SHORTCUT, 'engine': p._ENGINE.__name__, "
            "'regex_loaded': 'regex' in sys.modules, 'version': p.version(), "
            "'deferred_loaded': deferred, 'file': p._E.__file__}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env={**os.environ, **env}, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def _answers_like_the_ordinary_install(world, env: dict) -> None:
    """A cold grammar cache (the grammar is built), then a warm one (the pickle is loaded)."""
    for _ in range(2):
        p = run_attempt(["query", STATEMENT, "--json", "--db", world["db"]], env=env)
        assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr.decode()
        assert p.stdout == world["json"]
        bad = run_attempt(["query", "SHOW ATTEMPTS FOO", "--db", world["db"]], env=env)
        assert bad.returncode == 2 and bad.stderr == world["bad"], bad.stderr.decode()
    assert [n for n in os.listdir(os.path.join(env["XDG_CACHE_HOME"], "attemptdb")) if n.startswith("attemptql-")]


def _env(world, name: str, path_entry: str) -> dict:
    return {**world["env"], "XDG_CACHE_HOME": str(world["root"] / f"cache-{name}"),
            "PYTHONPATH": os.pathsep.join([path_entry, ROOT])}


def test_the_shortcut_is_taken_with_the_installed_parsimonious(world):
    """The shortcut is what keeps a cold query near 2× `attempt --version`: with a parsimonious
    whose expressions fall back to `re` (0.11), it is taken and `regex` is never imported."""
    with open(os.path.join(_installed_package(), "expressions.py"), encoding="utf-8") as f:
        if "except ImportError" not in f.read():
            pytest.skip("the installed parsimonious (0.10) has no fallback to `re`: the plain import runs")
    skip_when_the_interpreter_loads(("re", "enum", "inspect", "ast", "textwrap"), world["env"])
    got = _runtime({**world["env"], "PYTHONPATH": ROOT})
    assert got["shortcut"] is True and got["engine"] == "re" and got["regex_loaded"] is False
    assert got["deferred_loaded"] == []  # inspect, ast, textwrap, re: stand-ins until used


STANDINS = r"""
import sys
from attemptdb.query import parse, peg_runtime as p
parse.parse("SHOW FAILED ATTEMPTS")
before = sorted(m for m in p.DEFERRED if m in sys.modules)
import json
import parsimonious.exceptions as X, parsimonious.expressions as E, parsimonious.utils as U
import parsimonious
out = {"before": before, "callable": [E.is_callable(len), E.is_callable(lambda: 1)],
       "literal": U.evaluate_string('"a\\nb"'), "dedent": X.dedent("  x\n  y"),
       "grammar": parsimonious.Grammar('a = "x"').parse("x").text,
       "real": {m: bool(getattr(sys.modules.get(m), "__file__", None)) for m in p.DEFERRED}}
print(json.dumps(out))
"""


def test_the_stand_ins_hand_over_to_the_real_modules(world):
    """What parsimonious takes from inspect, ast, textwrap and re works when first used: the
    real module is imported then, and is the one in sys.modules."""
    skip_when_the_interpreter_loads(("re", "enum", "inspect", "ast", "textwrap"), world["env"])
    if not _runtime({**world["env"], "PYTHONPATH": ROOT})["shortcut"]:
        pytest.skip("the shortcut is not taken with the installed parsimonious")
    p = subprocess.run([sys.executable, "-c", STANDINS], capture_output=True, timeout=60,
                       env={**os.environ, **world["env"], "PYTHONPATH": ROOT})
    assert p.returncode == 0, p.stderr.decode()
    got = json.loads(p.stdout)
    assert got["before"] == [] and got["callable"] == [False, True] and got["literal"] == "a\nb"
    assert got["dedent"] == "x\ny" and got["grammar"] == "x"
    assert got["real"] == {"inspect": True, "ast": True, "textwrap": True, "re": True}


def test_parsimonious_without_a_re_fallback_answers(world):
    """parsimonious 0.10 imports `regex` with no fallback: the shortcut's block of `regex` made
    every statement fail with error[internal]; now the plain import takes over."""
    site = world["root"] / "site-0.10"
    pkg = _copy(str(site))
    _edit_expressions(pkg, NO_RE_FALLBACK)
    os.mkdir(site / "parsimonious-0.10.0.dist-info")
    env = _env(world, "no-re-fallback", str(site))
    got = _runtime(env)
    assert got["file"].startswith(str(site)), got  # the copy is what runs
    assert (got["shortcut"], got["engine"], got["version"]) == (False, "regex", "0.10.0")
    _answers_like_the_ordinary_install(world, env)


def test_a_broken_engine_is_never_used_and_a_build_imports_the_plain_way(world):
    """The shortcut's imports succeed but its regex engine cannot match. A loaded grammar never
    asks the engine (keyword and fixed patterns); building one checks it first, and with this
    one drops what the shortcut loaded and imports parsimonious the plain way (with `regex`)."""
    site = world["root"] / "site-broken-re"
    pkg = _copy(str(site))
    _edit_expressions(pkg, BROKEN_RE_FALLBACK)
    env = _env(world, "broken-re", str(site))
    got = _runtime(env)
    assert got["file"].startswith(str(site)), got
    assert (got["shortcut"], got["engine"]) == (True, "re")
    code = ("from attemptdb.query import parse, peg_runtime as p\nparse.parse('SHOW FAILED ATTEMPTS')\n"
            "print(p.SHORTCUT, p._ENGINE.__name__)")
    cold = {**os.environ, **env, "XDG_CACHE_HOME": str(world["root"] / "cache-broken-build")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=cold, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.split() == [b"False", b"regex"]
    _answers_like_the_ordinary_install(world, env)


def test_parsimonious_inside_a_zip_answers(world):
    """A package the path finder serves from a zip has no source file for the stub to run:
    the shortcut is not taken (before, building the grammar raised NotADirectoryError)."""
    archive = world["root"] / "parsimonious.zip"
    src = _installed_package()
    with zipfile.ZipFile(archive, "w") as z:
        for name in sorted(os.listdir(src)):
            if name.endswith(".py"):
                z.write(os.path.join(src, name), f"parsimonious/{name}")
    env = _env(world, "zip", str(archive))
    got = _runtime(env)
    assert got["file"].startswith(str(archive)), got
    assert got["shortcut"] is False
    _answers_like_the_ordinary_install(world, env)


def test_an_unusable_parsimonious_is_a_coded_error(world):
    """A parsimonious that passes neither way is reported with a code and the tested range."""
    site = world["root"] / "site-unusable"
    pkg = site / "parsimonious"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('not this one')\n")
    env = _env(world, "unusable", str(site))
    p = run_attempt(["query", STATEMENT, "--db", world["db"]], env=env)
    err = p.stderr.decode()
    assert p.returncode == 2 and "Traceback" not in err, err
    assert err.startswith("error[query.parser_unavailable]") and "pip install 'parsimonious>=0.10,<0.12'" in err, err


def test_setup_cfg_allows_exactly_the_tested_releases():
    """The versions setup.cfg lets pip install are the ones peg_runtime names as tested."""
    from attemptdb.query import peg_runtime as peg
    with open(os.path.join(ROOT, "setup.cfg"), encoding="utf-8") as f:
        pins = [line.strip() for line in f if line.strip().startswith("parsimonious")]
    assert pins == ["parsimonious" + peg.TESTED] == ["parsimonious>=0.10,<0.12"]


def test_the_cache_key_follows_the_installed_distribution(tmp_path, monkeypatch):
    """The pickled grammar is keyed on the version in parsimonious's dist-info (it defines no
    `__version__`), read cheaply from the directory beside the package."""
    from importlib.metadata import version as dist_version

    from attemptdb.query import parse as P
    from attemptdb.query import peg_runtime as peg
    assert peg.version() == dist_version("parsimonious")
    text = P.grammar_text()
    pkg = tmp_path / "parsimonious"
    pkg.mkdir()
    (pkg / "expressions.py").write_text("")
    monkeypatch.setattr(peg, "_E", type("E", (), {"__file__": str(pkg / "expressions.py")}))
    keys = {}
    for v in ("0.10.0", "0.11.0"):
        info = tmp_path / f"parsimonious-{v}.dist-info"
        info.mkdir()
        assert peg.version() == v
        keys[v] = P._cache_key(text)
        info.rmdir()
    assert keys["0.10.0"] != keys["0.11.0"]
