"""Every coded error the package raises is registered once, in attemptdb.errors.CODES, with the
exit status it is raised with; the package's own error classes are one tree under AttemptError."""

import ast
import os
import re

import pytest

from attemptdb.errors import CODES, AttemptError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = re.compile(r"[a-z_]+\.[a-z0-9_.]+")


def raised_codes():
    """(code, exit status, where) of every call that builds a coded error with a literal code."""
    out = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "attemptdb")):
        if os.sep + "devtools" in dirpath:
            continue  # the fault bench's own tallies are not user-facing errors
        for fn in files:
            if not fn.endswith(".py"):
                continue
            path = os.path.join(dirpath, fn)
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for code in re.findall(r"error\[([a-z_]+\.[a-z0-9_.]+)\]", node.value):
                        out.append((code, None, f"{os.path.relpath(path, ROOT)}:{node.lineno}"))
                    continue
                if isinstance(node, ast.arguments):  # a `code` parameter's default (jsonstyle's fail)
                    params = node.args[len(node.args) - len(node.defaults):]
                    for a, d in zip(params, node.defaults):
                        if a.arg == "code" and isinstance(d, ast.Constant) and isinstance(d.value, str) \
                                and CODE.fullmatch(d.value):
                            out.append((d.value, None, f"{os.path.relpath(path, ROOT)}:{d.lineno}"))
                    continue
                if isinstance(node, ast.Call):  # a code passed by keyword
                    for k in node.keywords:
                        if k.arg == "code" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str) \
                                and CODE.fullmatch(k.value.value):
                            out.append((k.value.value, None, f"{os.path.relpath(path, ROOT)}:{node.lineno}"))
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None) or ""
                first = node.args[0]
                # `__init__`: an error class that passes its code up (`super().__init__("x.y", …)`)
                if not (name.endswith("Error") or name in ("fail", "__init__")):
                    continue
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)
                        and CODE.fullmatch(first.value)):
                    continue
                status = 2
                for k in node.keywords:
                    if k.arg == "exit_status" and isinstance(k.value, ast.Constant):
                        status = k.value.value
                if name == "fail" and len(node.args) > 2 and isinstance(node.args[2], ast.Constant):
                    status = node.args[2].value
                out.append((first.value, status, f"{os.path.relpath(path, ROOT)}:{node.lineno}"))
    return out


RAISED = raised_codes()


def test_the_walk_finds_the_raises():
    assert len(RAISED) > 150 and any(c == "store.damaged" for c, _, _ in RAISED)


def test_every_raised_code_is_registered_with_its_exit_status():
    missing = sorted({f"{c} ({where})" for c, _, where in RAISED if c not in CODES})
    assert missing == []
    wrong = sorted(f"{c} raised with {s}, registered {CODES[c][0]} ({where})"
                   for c, s, where in RAISED if c in CODES and s is not None and CODES[c][0] != s)
    assert wrong == []


def test_every_registered_code_is_raised_and_means_something():
    raised = {c for c, _, _ in RAISED}
    class_codes = {"event.invalid", "json.malformed", "redaction.no_fixed_point"}
    assert sorted(set(CODES) - raised - class_codes) == []
    for code, (status, meaning) in CODES.items():
        assert status in (1, 2) and meaning.strip() and "\n" not in meaning, code


@pytest.mark.parametrize("cls,args,code", [
    ("attemptdb.model.event:EventError", ("$.kind", "is not a kind"), "event.invalid"),
    ("attemptdb.model.fastjson:JSONError", ("Expecting value", 3), "json.malformed"),
    ("attemptdb.ingest.redaction:RedactionError", (), "redaction.no_fixed_point"),
])
def test_the_value_errors_join_the_one_tree(cls, args, code):
    import importlib
    mod, name = cls.split(":")
    e = getattr(importlib.import_module(mod), name)(*args)
    assert isinstance(e, AttemptError) and e.code == code and code in CODES
    assert str(e) and "error[" not in str(e)  # the message reads as before, without the code
