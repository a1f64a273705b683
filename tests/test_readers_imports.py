"""The read surfaces' extras stay out of everything else: the CLI (every command loaded, as
`attempt --help` does), `attempt query` and the hook path import no MCP SDK, Datasette, web
server or their dependencies; only `attempt mcp` / `attempt ui` do."""

import json
import os
import subprocess
import sys

from conftest import ROOT

EXTRAS = ("mcp", "mcp_types", "datasette", "uvicorn", "starlette", "pydantic", "anyio", "jinja2", "httpx")

PROBE = r"""
import json, sys
from attemptdb.cli.main import cli, run
import click
ctx = click.Context(cli)
for name in cli.list_commands(ctx):      # loads every command module
    cli.get_command(ctx, name)
run(["query", "SELECT 1", "--db", sys.argv[1]])
run(["mcp", "--help"]); run(["ui", "--help"]); run(["hook", "install", "--help"])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))), file=sys.stderr)
"""


def test_the_cli_loads_no_reader_extra(tmp_path, db):
    from attemptdb.store.database import Store
    Store.open(db).close()
    p = subprocess.run([sys.executable, "-c", PROBE, db, ",".join(EXTRAS)], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stderr.strip().splitlines()[-1]) == []
    assert "MCP tools over stdio" in p.stdout and "read-only web UI" in p.stdout
