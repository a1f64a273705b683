"""Locate the shipped data folders (`migrations/`, `grammar/`, `spec/`, `fixtures/`).

Invariant: the same names resolve in a source checkout (top-level folders beside the package)
and in an installed wheel (the folders are package data inside `attemptdb/`). No importlib:
this runs on the hook path.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def folder(name: str) -> str:
    inside = os.path.join(_HERE, name)
    if os.path.isdir(inside):
        return inside
    beside = os.path.join(os.path.dirname(_HERE), name)
    if os.path.isdir(beside):
        return beside
    raise FileNotFoundError(f"attemptdb data folder {name!r} is missing from this installation")


def path(name: str, *parts: str) -> str:
    return os.path.join(folder(name), *parts)


def isolated_argv() -> list:
    """`[python, "-I", <this package>/__main__.py]`, absolute: how to start AttemptDB isolated
    from the working directory and PYTHON* variables (attemptdb/__main__.py), with the running
    interpreter (its path as given, so a virtual environment stays itself) and this package."""
    import sys
    return [os.path.abspath(sys.executable), "-I", os.path.join(_HERE, "__main__.py")]


def lean_hook_argv() -> list:
    """`[python, "-I", "-S", <this package>/__main__.py]`: isolated_argv without `site`, the
    installed hook command (spec/capture-daemon.md): a hook the daemon serves imports the
    standard library only; one it does not loads the site-packages itself before the work."""
    argv = isolated_argv()
    return argv[:2] + ["-S"] + argv[2:]
