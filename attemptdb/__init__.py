"""AttemptDB: the database of what AI coding agents tried.

Library first: `attemptdb.store.Store` appends canonical Event v1 facts to one SQLite file;
the `attempt` command is a thin layer over this package.
"""

__version__ = "0.1.0"
ADAPTER_VERSION = "0.1.1"
