"""The house keeps its shape (spec/architecture.md): folders named for the stages of the flow,
no import cycle among the package's modules, no private name used across modules, no module over
800 lines, and a map that names every folder there is."""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "attemptdb")
MAX_LINES = 800
TOP_LEVEL = {"__init__", "__main__", "errors", "launcher", "resources"}


def modules() -> dict:
    """{dotted name: (path, is_package)} for every module of the package."""
    out = {}
    for dirpath, dirs, files in os.walk(PKG):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        for fn in files:
            if fn.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, fn), ROOT)[:-3].split(os.sep)
                is_pkg = rel[-1] == "__init__"
                out[".".join(rel[:-1] if is_pkg else rel)] = (os.path.join(dirpath, fn), is_pkg)
    return out


MODULES = modules()


def resolve(name: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".") if is_pkg else name.split(".")[:-1]
    parts = parts[: len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def imports(name: str) -> tuple:
    """(modules it imports, private names it takes from other modules, as `mod._name`)."""
    path, is_pkg = MODULES[name]
    tree = ast.parse(open(path, encoding="utf-8").read())
    deps, private, aliases = set(), set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES:
                    deps.add(a.name)
                    if a.asname:
                        aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            base = resolve(name, is_pkg, node)
            if not base.startswith("attemptdb"):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in MODULES:
                    deps.add(full)
                    aliases[a.asname or a.name] = full
                else:
                    deps.add(base)
                    if a.name.startswith("_") and not a.name.startswith("__") and base != name:
                        private.add(f"{base}.{a.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__") and aliases[node.value.id] != name):
            private.add(f"{aliases[node.value.id]}.{node.attr}")
    deps.discard(name)
    # importing a.b.c also runs the packages a.b and a: those are not edges of the design
    return {d for d in deps if not (MODULES.get(d, (None, False))[1] and name.startswith(d + "."))}, private


GRAPH = {name: imports(name) for name in MODULES}


def test_no_import_cycle():
    edges = {n: {d for d in deps if d in MODULES} for n, (deps, _) in GRAPH.items()}
    # a package's __init__ importing its own submodules is its face, not a cycle of the design
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    assert cycles == [], f"import cycles: {cycles}"


def test_no_private_names_across_modules():
    found = sorted(f"{n} uses {p}" for n, (_, private) in GRAPH.items() for p in private)
    assert found == []


def test_no_module_over_the_limit():
    big = {n: sum(1 for _ in open(p, encoding="utf-8")) for n, (p, _) in MODULES.items()}
    assert {n: k for n, k in big.items() if k > MAX_LINES} == {}


def test_the_package_face_holds_only_a_handful_of_modules():
    flat = {fn[:-3] for fn in os.listdir(PKG) if fn.endswith(".py")}
    assert flat <= TOP_LEVEL, f"move into a stage folder: {sorted(flat - TOP_LEVEL)}"


def test_the_map_names_every_folder_and_every_folder_it_names_exists():
    text = open(os.path.join(ROOT, "spec", "architecture.md"), encoding="utf-8").read()
    named = set(re.findall(r"`attemptdb/([a-z_/]+)/`", text))
    assert named, "spec/architecture.md names its folders as `attemptdb/<folder>/`"
    folders = {os.path.relpath(d, PKG) for d, _, files in os.walk(PKG)
               if "__init__.py" in files and d != PKG}
    assert sorted(named - folders) == [], "named in the map but missing"
    assert sorted(folders - named) == [], "package folders the map does not name"


def floors() -> dict:
    """{folder or top-level module path: floor} from the map's `- floor N:` lines."""
    text = open(os.path.join(ROOT, "spec", "architecture.md"), encoding="utf-8").read()
    out = {}
    for n, rest in re.findall(r"^- floor (\d+): (.*(?:\n  .*)*)", text, re.M):
        for name in re.findall(r"`attemptdb/([a-z_/]+(?:/|\.py))`", rest):
            out[name] = int(n)
    return out


def floor_of(module: str, table: dict) -> int:
    path, is_pkg = MODULES[module]
    rel = os.path.relpath(path, PKG).replace(os.sep, "/")
    if "/" not in rel:
        return table[rel]
    folder = rel.rsplit("/", 1)[0] + "/"
    return table[folder]


def test_no_module_imports_a_higher_floor():
    table = floors()
    assert table, "spec/architecture.md lists its floors as `- floor N: ...`"
    up = sorted(f"{n} (floor {floor_of(n, table)}) imports {d} (floor {floor_of(d, table)})"
                for n, (deps, _) in GRAPH.items() for d in deps
                if d in MODULES and floor_of(d, table) > floor_of(n, table))
    assert up == []


@pytest.mark.parametrize("bad,expected", [
    ("from .x import _y", "attemptdb.fake.x._y"),
])
def test_the_private_name_check_can_fail(bad, expected, tmp_path, monkeypatch):
    """The checker itself: a private import across modules is seen."""
    p = tmp_path / "m.py"
    p.write_text(bad + "\n")
    monkeypatch.setitem(MODULES, "attemptdb.fake.m", (str(p), False))
    _, private = imports("attemptdb.fake.m")
    assert private == {expected}
