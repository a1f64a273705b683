"""`attempt doctor` / `attempt hook status`: is every agent wired, and is it delivering?

Invariants:
- Each agent is in exactly one state: `not_installed` (no entries of ours), `broken` (the
  config cannot be read, its entries are stale — another or a missing binary, missing,
  obsolete or duplicate events, a different shape — or hooks are switched off),
  `delivering` (a real capture — not `capture_test`, not `attrs.reconstructed` — from that
  provider within the last 7 days and since the hooks were installed, by `captured_at` in the
  `events` table: captures made by hand before the install show nothing about the hooks), else
  `installed` (configured, no such capture; `verified` says a capture test arrived). The install
  is dated by the record the install writes beside the config (`record.record_path`), else by
  the config file itself.
- Codex hooks not (or no longer) trusted by the user are a problem (not ok, exit 1, with the
  step that fixes it) unless the agent is demonstrably delivering: Codex captures arrived
  since the hooks were installed.
- The database is opened read-only and never created; its capture mode is the stored one,
  and an unreadable value is reported as failing closed to `metadata_only`. A database file,
  -wal or -shm that the group or others may read or write is a problem (`[store.exposed]`,
  with the `chmod` to run), and so is a -wal or -shm this user cannot write beside a file it
  can (`[store.read_only_side]`: SQLite then refuses every write); doctor never changes a mode
  itself.
- Each installed agent names the database its hooks write to (`hooks_database`: the `--db`
  of its commands, None when they name none; `writes_to`), with a note when that is not the
  database the report reads. Given no database (`--db`, ATTEMPTDB_PATH), the report reads the
  one every installed agent's hooks name, when they all name the same (`named_by_hooks`).
- `ok` is false (exit 1) on any problem; nothing printed echoes config or event content.
"""

import os
import shlex
import shutil
import stat

from ..model import clock, event
from ..store import location
from . import agents as agents_mod
from . import codexconfig
from . import state as state_mod
from .command import find_hook_executable

NOT_INSTALLED = "not_installed"
INSTALLED = "installed"
DELIVERING = "delivering"
BROKEN = "broken"
WINDOW_DAYS = 7
_DAY_US = 86_400_000_000

RECENT_ROWS = 20_000

# newest real capture per provider (not capture_test, not reconstructed); a full scan, so
# `activity` first looks at the newest rows only (hooks append in real time)
_REAL_SQL = """
SELECT provider, max(captured_at) FROM events
WHERE provider IN ({}) AND seq > ? AND kind <> 'capture_test'
  AND coalesce(CASE WHEN json_valid(attrs_json) THEN json_extract(attrs_json, '$.reconstructed') END, 0)
      NOT IN (1, 'true')
GROUP BY provider
"""
# capture tests are few and indexed by kind
_TEST_SQL = """
SELECT provider, max(captured_at) FROM events
WHERE kind = 'capture_test' AND provider IN ({})
GROUP BY provider
"""


def database_report(db, need_db: bool) -> tuple[dict, list[str], object]:
    """({path, exists, reachable, schema, schema_changes, events, capture_mode, fail_closed},
    problems, open store)."""
    path = location.resolve(db)
    out = {"path": path, "exists": os.path.exists(path), "reachable": False}
    problems = []
    from ..store.sidefiles import exposed
    loose = exposed(path) if out["exists"] else []
    out["exposed"] = [{"path": f, "mode": f"{m:o}"} for f, m in loose]
    if loose:  # a privacy problem whatever else the file has
        problems.append(exposed_problem(loose))
    from ..store.sqlerrors import read_only_sides, sides_said
    stuck = read_only_sides(path) if out["exists"] else []
    out["read_only_sides"] = [{"path": f, "mode": f"{m:o}", "uid": uid} for f, m, uid in stuck]
    if stuck:  # every write refused, though the file itself is writable
        problems.append(f"the database cannot be written: {sides_said(stuck)}; captures spool their events "
                        "meanwhile [store.read_only_side]")
    if not out["exists"]:
        if need_db:
            problems.append(f"no database at {path}: run `attempt hook install` (its capture "
                            "test creates it) or `attempt init`")
        return out, problems, None
    from ..errors import AttemptError
    from ..store.database import Store
    try:
        store = Store.open(path, readonly=True)
        out["schema"] = store.user_version()
        out["events"] = store.count()
        raw = store.meta("capture_mode")
    except AttemptError as e:
        problems.append(f"database cannot be opened: {e.message} [{e.code}]")
        if e.code in ("store.corrupt", "store.not_a_database"):
            _damaged(path)
        return out, problems, None
    except Exception as e:  # locked, corrupt, not a database …
        problems.append(f"database cannot be read ({type(e).__name__})")
        return out, problems, None
    out["reachable"] = True
    from ..store import schema_integrity
    try:
        changed = schema_integrity.differences(store.conn, out["schema"])
    except Exception as e:  # the schema pages themselves are damaged
        store.close()
        if not _damaged(path, e):
            raise
        out["reachable"] = False
        return out, problems, None
    out["schema_changes"] = len(changed)
    if changed:  # an edited trigger can stop every capture from being stored or projected
        problems.append("the database schema: " + schema_integrity.summary(changed))
    valid = raw in event.CAPTURE_MODES
    out["capture_mode"] = raw if valid else "metadata_only"
    out["fail_closed"] = not valid
    if not valid:
        problems.append("the stored capture mode is not valid: capture fails closed to metadata_only "
                        "(set it with `attempt init --capture-mode`)")
    from ..integrity import keys
    key_problem = keys.health(store)  # a lost or wrong signing key (keys.lost / keys.mismatch)
    if key_problem:
        problems.append(key_problem)
    return out, problems, store


def exposed_problem(loose) -> str:
    """The problem line for database files others may read or write (`sidefiles.exposed`: [(file,
    mode)]): which, their modes, and the chmod that makes them private again."""
    names = ", ".join(f"{f} (mode {m:o})" for f, m in loose)
    return (f"the database is not private to you: {names} can be read or written by your group or "
            f"others, and it holds your prompts, commands and output; run `chmod 600 "
            f"{' '.join(shlex.quote(f) for f, _ in loose)}` [store.exposed]")


def _damaged(path: str, e: BaseException | None = None) -> bool:
    """Mark the file damaged when SQLite said so (the problem itself is reported from the
    mark, by capture_health); True when `e` was that."""
    from ..integrity import damage
    if e is not None and not damage.is_corruption(e):
        return False
    damage.mark(path, "SQLite reports the file malformed", "doctor")
    return True


def activity(store, providers, cutoff: str = "") -> dict:
    """provider → (newest real capture, newest capture test) as ISO text or None. The newest
    `RECENT_ROWS` rows are searched first; providers without a capture since `cutoff` there
    are looked up in the whole table, so the answer is exact either way."""
    if store is None or not providers:
        return {}
    try:
        c = store.conn
        head = c.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
        marks = ", ".join("?" * len(providers))
        real = dict(c.execute(_REAL_SQL.format(marks), [*providers, head - RECENT_ROWS]).fetchall())
        rest = [p for p in providers if not (real.get(p) and real[p] >= cutoff)]
        if rest and head > RECENT_ROWS:
            older = dict(c.execute(_REAL_SQL.format(", ".join("?" * len(rest))), [*rest, 0]).fetchall())
            real.update({p: v for p, v in older.items() if v is not None})
        tests = dict(c.execute(_TEST_SQL.format(marks), list(providers)).fetchall())
    except Exception as e:
        _damaged(store.path, e)
        return {}
    return {p: (real.get(p), tests.get(p)) for p in providers if real.get(p) or tests.get(p)}


HOOK_LOG_TAIL = 64 * 1024


def capture_health(path: str, last_event_at: str | None) -> tuple[dict, list[str]]:
    """What the hook path left behind: events waiting in the spool (the database refused
    them so far), files set aside in quarantine, and hook-log lines written since the newest
    stored event (each a capture that hit a problem). Counts and codes only, never content."""
    from ..capture import spool
    from ..integrity import damage
    out = {"spooled": len(spool.pending(path)), "quarantined": 0, "hook_log_problems": 0}
    spool.prepare()
    lost = spool.losses()
    out["lost"] = lost["count"]
    out["lost_last_at"] = lost["last"]
    mark = damage.marked(path)
    out["damaged"] = mark
    for d in spool.directories(path):
        try:
            out["quarantined"] += len(os.listdir(os.path.join(d, "quarantine")))
        except OSError:
            pass
    try:
        with open(os.path.join(location.state_dir(), "hook.log"), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - HOOK_LOG_TAIL))
            lines = f.read().decode("utf-8", "replace").splitlines()
        out["hook_log_problems"] = sum(1 for ln in lines if ln[:27] > (last_event_at or ""))
    except OSError:
        pass
    problems = []
    out["daemon"], daemon_problem = daemon_state(path)
    if daemon_problem:
        problems.append(daemon_problem)
    if mark is not None:
        problems.append(f"the database is damaged: {mark.get('what')} (found by {mark.get('by')} at "
                        f"{mark.get('at')}); nothing is written to it: {damage.ADVICE}")
    if out["lost"]:
        problems.append(f"{out['lost']} captured event(s) could not be stored or spooled anywhere (the disks "
                        f"were full or read-only; the last at {lost['last']}): they are lost; free space, or "
                        f"make the database's directory writable")
    if out["spooled"]:
        problems.append(f"{out['spooled']} captured event(s) wait in the spool: the database has not "
                        "taken them yet (see the hook log; any read command retries)")
    if out["quarantined"]:
        problems.append(f"{out['quarantined']} spooled event(s) could not be stored and were set aside "
                        "in quarantine/ beside the spool")
    if out["hook_log_problems"]:
        problems.append(f"{out['hook_log_problems']} hook-log line(s) since the newest stored event: "
                        f"captures hit problems (see {os.path.join(location.state_dir(), 'hook.log')})")
    return out, problems


def daemon_state(path: str) -> tuple[dict, str | None]:
    """Is a capture daemon serving this database (spec/capture-daemon.md)? A socket directory
    others can enter is a problem: hooks then never use a daemon."""
    from ..capture import daemon, hookclient
    sock = hookclient.endpoint(path)
    pid = daemon.pid(path)
    if pid is not None:
        try:
            os.kill(pid, 0)
        except OSError:
            pid = None
    state = {"enabled": hookclient.enabled(), "running": pid is not None, "pid": pid, "socket": sock}
    run_dir = os.path.dirname(sock) if sock else None
    if state["enabled"] and run_dir and os.path.lexists(run_dir) and not hookclient.private_dir(run_dir):
        return state, (f"the capture daemon's socket directory {run_dir} is not a directory of yours "
                       "with mode 0700: hooks will not use a daemon (each opens the database itself)")
    if pid is not None and sock:
        state["answers"] = _answers(sock)
        if not state["answers"]:
            return state, (f"the capture daemon (pid {pid}) does not answer: every hook waits "
                           f"{hookclient.REPLY_S:g} s for it, then stores its event itself; `attempt daemon stop` "
                           f"(or `kill {pid}`) and the next hook starts a new one")
    return state, None


PROBE_S = 1.0


def _answers(sock: str) -> bool:
    """Does the daemon at `sock` answer a request it refuses (`bad`: nothing is stored) within
    PROBE_S? A stopped or hung process takes the connection (the kernel does) but never replies."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(PROBE_S)
    try:
        s.connect(sock)
        s.sendall(b'{"v": 0}\n')
        return s.recv(16).startswith(b"bad")
    except OSError:
        return False
    finally:
        s.close()


def installed_at(config_path: str | None) -> str | None:
    """When the hooks in `config_path` were last installed, as ISO text: the modification time
    of the record the install writes beside the config (only installs write it), else of the
    config file; None when neither can be read."""
    from .record import record_path
    if not config_path:
        return None
    for path, follow in ((record_path(config_path), False), (config_path, True)):  # a linked record is none
        try:
            st = os.stat(path, follow_symlinks=follow)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            return clock.iso(st.st_mtime_ns // 1000)
    return None


def _database_notes(a: dict, named: str | None, read: str) -> None:
    """`writes_to`: the database an agent's hooks write to (the one their `--db` names, else
    the per-user default, which a trusted ./.attemptdb where the agent works takes over), and a
    note when that is not the database this report reads (its deliveries are not seen here)."""
    default = location.default_db()
    a["writes_to"] = named or default
    if (named or default) != read:
        where = named or f"the default database ({default})"
        a["notes"].append(f"these hooks write to {where}, not to the database this report reads "
                          f"({read}): run `attempt doctor --db {shlex.quote(named or default)}` to see what they deliver")


def run(db=None, providers=None, *, executable=None, now_us=None) -> dict:
    """The full report (see the module docstring)."""
    exe = executable or find_hook_executable()
    now = clock.now_us() if now_us is None else now_us
    cutoff = clock.iso(now - WINDOW_DAYS * _DAY_US)
    states = [state_mod.inspect(a, exe) for a in agents_mod.select(providers)]
    need_db = any(s.entries for s in states)
    named = {s.database for s in states if s.entries}
    follow = not (db or os.environ.get("ATTEMPTDB_PATH")) and len(named) == 1 and None not in named
    dbrep, problems, store = database_report(named.pop() if follow else db, need_db)
    dbrep["named_by_hooks"] = follow
    last_event_at = None
    try:
        act = activity(store, [s.agent.provider for s in states], cutoff)
        if store is not None:
            try:
                last_event_at = store.conn.execute("SELECT max(ingested_at) FROM events").fetchone()[0]
            except Exception as e:
                if not _damaged(dbrep["path"], e):
                    raise
    finally:
        if store is not None:
            store.close()
    health, health_problems = capture_health(dbrep["path"], last_event_at)
    dbrep["capture_health"] = health
    problems += health_problems
    agents_out = []
    for s in states:
        real, test = act.get(s.agent.provider, (None, None))
        a = s.to_json()
        a_problems = list(s.problems)
        since = installed_at(s.config_path) if s.config_state != state_mod.NOT_INSTALLED else None
        before_install = real is not None and since is not None and real < since
        if s.config_state == state_mod.BROKEN:
            st = BROKEN
        elif s.config_state == state_mod.NOT_INSTALLED:
            st = NOT_INSTALLED
        elif real is not None and real >= cutoff and not before_install:
            st = DELIVERING
        else:
            st = INSTALLED
        a["installed_at"] = since
        if s.trust is not None and s.trust != codexconfig.TRUSTED and st != NOT_INSTALLED:
            msg = ("Codex has not trusted these hooks yet" if s.trust == codexconfig.UNTRUSTED
                   else "Codex's trust records do not match these hooks (they changed since "
                        "you approved them)")
            msg += f" ({s.trust_detail}): open Codex and approve them with /hooks"
            if st == DELIVERING:
                a["notes"].append(msg)
            else:
                a_problems.append(msg)
        if st == INSTALLED and before_install:
            a["notes"].append(f"no capture since the hooks were installed ({since}); the last one "
                              f"({real}) came before, so it does not show the hooks deliver")
        elif st == INSTALLED and real is not None:
            a["notes"].append("no capture in the last 7 days")
        if s.entries:
            _database_notes(a, s.database, dbrep["path"])
        a["state"] = st
        a["problems"] = a_problems
        a["last_capture"] = real
        a["last_capture_test"] = test
        a["verified"] = test is not None
        agents_out.append(a)
    detected = [a["agent"] for a in agents_out if a["detected"]]
    if detected and all(a["state"] == NOT_INSTALLED for a in agents_out):
        problems.append(f"no agent's hooks are installed ({', '.join(detected)} "
                        f"{'is' if len(detected) == 1 else 'are'} here): nothing is captured; "
                        "`attempt hook install` wires them")
    ok = not problems and not any(a["problems"] for a in agents_out)
    return {"ok": ok, "executable": exe.to_json(), "on_path": shutil.which("attempt") is not None,
            "database": dbrep, "problems": problems, "agents": agents_out}
