"""AttemptDB: the database of what AI coding agents tried.

Library first: `attemptdb.store.database.Store` appends canonical Event v1 facts to one SQLite file;
the `attempt` command is a thin layer over this package. `attemptdb.Recorder` records
commands, git snapshots, notes and approvals from Python (attemptdb/evidence/recorder.py).

Importing this package loads nothing else (it is on the hook path): `Recorder` is loaded on
first use.
"""

__version__ = "0.1.0"
ADAPTER_VERSION = "0.1.1"


def __getattr__(name):
    if name == "Recorder":
        from .evidence.recorder import Recorder
        return Recorder
    raise AttributeError(f"module 'attemptdb' has no attribute {name!r}")
