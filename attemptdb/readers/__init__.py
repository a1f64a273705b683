"""Read surfaces for agents and people: `attempt mcp` (an MCP server over stdio) and `attempt ui`
(a local, read-only web UI on Datasette).

Invariant: nothing here is imported by the hook path (`attempt capture`), by the CLI's start-up
or by a plain install; the `mcp` and `ui` extras are imported only by the modules that serve
them (`mcp_server`, `web`), and only when their command runs.
"""
