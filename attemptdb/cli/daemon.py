"""`attempt daemon run|status|stop`: the capture daemon hooks start on their own
(spec/capture-daemon.md). These commands are for looking at it and for stopping it."""

import os
import signal
import time

import click

from .common import db_option, db_path, echo_json, json_option, say


@click.group("daemon")
def daemon_group():
    """The capture daemon: keeps the database open so each hook only hands over its payload.

    Hooks start it when none runs; it exits after 5 minutes without a call. Set
    ATTEMPTDB_NO_DAEMON=1 to have every hook write the file itself.
    """


@daemon_group.command("run")
@db_option
def run_cmd(db):
    """Serve one database in the foreground until idle (what a hook starts)."""
    from ..capture import daemon, daemon_server
    path = db_path(db)
    pid = daemon.serving_pid(path)
    if pid:  # it would leave at once, as a hook's start does when it lost the race
        say(f"a daemon already serves {path}: pid {pid} (`attempt daemon stop` stops it)", err=True, paths=(path,))
        raise SystemExit(0)
    raise SystemExit(daemon_server.run(path))


def _state(db):
    """(database, socket, pid of the daemon serving it now or None). The pid comes from the
    socket's listening process, not from a pid file that may outlive its daemon."""
    from ..capture import daemon, hookclient
    path = db_path(db)
    return path, hookclient.endpoint(path), daemon.serving_pid(path)


@daemon_group.command("status")
@db_option
@json_option
def status_cmd(db, as_json):
    """Is a daemon serving this database? (exit 0 either way)"""
    from ..capture import hookclient
    path, sock, pid = _state(db)
    if as_json:
        echo_json({"database": path, "socket": sock, "running": pid is not None, "pid": pid,
                   "enabled": hookclient.enabled()})
        return
    if pid:
        say(f"running: pid {pid}, socket {sock}", paths=(sock,))
    else:
        click.echo("not running" + ("" if hookclient.enabled() else " (ATTEMPTDB_NO_DAEMON is set)"))


@daemon_group.command("stop")
@db_option
@json_option
def stop_cmd(db, as_json):
    """Stop the daemon serving this database (hooks write directly until one starts again).

    Only the process listening on the database's socket is signalled, never a pid merely read
    from a leftover pid file."""
    _, _, pid = _state(db)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:  # it left on its own just now
            pid = None
        for _ in range(100 if pid else 0):
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.05)
    if as_json:
        echo_json({"stopped": pid})
    else:
        click.echo(f"stopped: pid {pid}" if pid else "not running")
