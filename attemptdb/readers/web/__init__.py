"""`attempt ui`: a local, read-only web UI on Datasette (the `ui` extra).

Modules: `serve` (the read-only database, the request guard, start-up), `plugin` (the
Datasette plugin: AttemptDB's own pages), `pages` (their data), `metadata` (catalog →
descriptions and recipes), `templates/attemptdb/` (the pages; Jinja autoescaping on).
"""
