"""The hook path: hook entry, project identity, hook log, spool, capture daemon."""
