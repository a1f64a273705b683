"""`attempt capture PROVIDER`: the hook entrypoint. stdin payload → one stored event.

Invariants (DESIGN.md invariant 4):
- Exit status 0, nothing on stdout (Gemini CLI: the `{"decision":"allow"}` it expects), no
  traceback, whatever arrives: a payload that cannot be read is still stored as an `unknown`
  event with a `capture_gap` reason; a locked, unwritable or corrupt database, or one known to
  be damaged (attemptdb.integrity.damage: nothing is written into it), sends the event to the spool,
  which the next capture or read ingests. An event no spool directory can take (every disk
  full or read-only) is counted where `attempt doctor` finds it, or said in one
  `error[capture.lost]` line on stderr: never dropped without a trace.
- Privacy before disk: the capture mode and the ingestion contract (secret redaction, attrs
  sanitiser) are applied in this process, so neither the database nor the spool ever sees
  what the mode forbids.
- Lean: imports only the stdlib C modules, apsw and our own hook-path modules — never click,
  jsonschema, cryptography, parsimonious, tabulate (a test checks `sys.modules`). Never signs.
- One pipeline: `run` is `prepare` (adapter, privacy contract: the event) then `deliver` (the
  spool drained a bounded share, then the append; the spool when the file cannot take it, and
  when spooled events are still waiting ahead of this one: chain order is arrival order, and a
  hook waits out a busy file once at most — spec/capture.md).
  The capture daemon runs the same `prepare`, then `receive` (spool the event) before it
  answers and `settle` (drain the spool into the file) after (spec/capture-daemon.md).
`--dry-run` prints the envelope the adapter produced (before ingestion) and stores nothing;
the context flags replace what the hook would detect (the golden harness uses them).
"""

import os
import sys

from . import hooklog
from .hookclient import GEMINI_ACK, GEMINI_NAMES, Hook, full_interpreter

HOOK_DRAIN_LIMIT = 100  # spooled events a hook ingests before its own (reads take the rest)
_STRICTNESS = ("metadata_only", "local_semantic", "full_sync")


def stricter(a: str, b: str) -> str:
    """The more private of two capture modes."""
    return a if _STRICTNESS.index(a) <= _STRICTNESS.index(b) else b
CAPTURE_BUSY_S = 2.0
_FLAGS = {"--capture-mode", "--project-root", "--repo-remote", "--captured-at", "--device-id",
          "--hook-version", "--event", "--db"}

USAGE = """Usage: attempt capture PROVIDER [OPTIONS] < payload.json

  The hook entrypoint: read one hook payload on stdin, store it as one event.
  Always exits 0 and prints nothing (Gemini CLI: its JSON ack).

Options:
  --dry-run              Print the envelope the adapter builds; store nothing.
  --db PATH              Database file (env ATTEMPTDB_PATH).
  --event NAME           Event name for payloads without hook_event_name.
  --capture-mode M       metadata_only | local_semantic | full_sync (default: the database's).
  --project-root PATH    Project root instead of detecting it from the payload's cwd.
  --repo-remote URL      Git remote instead of reading .git/config.
  --captured-at US       Capture time in microseconds since the epoch.
  --device-id UUID       Device id instead of the database's.
  --hook-version V       Hook version stamped on the event.
  -h, --help             Show this message.
"""


class _Args:
    def __init__(self):
        self.provider = None
        self.dry_run = False
        self.opts = {}


def _parse(argv) -> _Args:
    a = _Args()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--dry-run":
            a.dry_run = True
        elif arg.split("=", 1)[0] in _FLAGS:
            if "=" in arg:
                k, v = arg.split("=", 1)
            else:
                k = arg
                i += 1
                v = argv[i] if i < len(argv) else None
            a.opts[k[2:].replace("-", "_")] = v
        elif a.provider is None and not arg.startswith("-"):
            a.provider = arg
        i += 1
    return a


def _label(provider) -> str:
    """The provider as the hook log names it: what the agent's config passed, reduced to
    `[A-Za-z0-9_-]`, at most 64 characters, so a line is always one line."""
    if not isinstance(provider, str) or not provider:
        return "none"
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "?" for c in provider[:64])


def _last_resort(provider, nbytes: int, db_path: str | None):
    """Something failed before an event existed: record that a payload arrived anyway (a
    content-free `unknown` event with capture_gap adapter_error), in the database or spool."""
    from .. import ADAPTER_VERSION
    from ..model import clock, ids
    from ..store import location
    path = db_path or location.resolve(None)
    dev = _peek_device(path) or _fallback_device()
    now = clock.now_us()
    name = provider if isinstance(provider, str) and provider else "unknown"
    slug = "".join(c if c.isalnum() else "_" for c in name.lower())[:64] or "unknown"
    env = {"event_id": ids.uuid7(), "schema_version": 1, "device_id": dev, "source_seq": 0, "hlc": 0,
           "observed_at": now, "captured_at": now, "provider": slug, "adapter_version": ADAPTER_VERSION,
           "capture_mode": "metadata_only", "provider_event_name": "unknown", "kind": "unknown",
           "project": ids.project_identity("/", None, dev), "session_id": ids.session_id(slug, "unknown"),
           "provider_session_id": "unknown", "agent": {},
           "attrs": {"capture_gap": "adapter_error", "x_attemptdb_payload_bytes": nbytes}}
    try:
        from ..integrity import damage
        from ..store.database import Store
        st = Store.open(path, create=True, busy_timeout_s=CAPTURE_BUSY_S)
        if damage.refusal(st, path) is None:
            st.append([env])
            return
    except Exception:
        pass
    _spool_or_count(provider, path, env, "internal")


def _cwd(provider, payload, hook: Hook) -> str | None:
    from ..adapters import hook_cwd
    try:
        cwd = hook_cwd(provider, payload)
    except Exception:
        cwd = None
    return cwd or hook.claude_project_dir or hook.cwd


def _open_store(path: str, mode_override):
    from ..store.database import Store
    return Store.open(path, create=True, capture_mode=mode_override, busy_timeout_s=CAPTURE_BUSY_S)


def _fallback_device() -> str:
    from . import fallback
    return fallback.device()


seen = {"bytes": 0, "db": None, "store": None, "unsaid": False}
"""What the last capture in this process read and opened. Holding the open store here keeps
its connection alive past `run`, so the launcher's `os._exit` leaves before the close-time
WAL checkpoint (an fsync) instead of paying for it when `run`'s locals are freed."""


def run(argv, hook: Hook | None = None, store=None) -> int:
    """One hook invocation → one stored (or spooled) event. `store`: an open store to use (the
    daemon's) instead of opening the file."""
    event = prepare(argv, hook, store)
    if event is not None:
        deliver(event)
    return 0


class Prepared:
    """One hook's event after the adapter and the privacy contract, and where it goes: the
    database path, the open store (None when it could not be opened: `store_error` says why)."""

    __slots__ = ("provider", "db_path", "env", "store", "store_error", "spooled")

    def __init__(self, provider, db_path, env, store, store_error):
        self.provider, self.db_path, self.env, self.store, self.store_error = provider, db_path, env, store, store_error
        self.spooled = None  # the spool file `receive` wrote


def prepare(argv, hook: Hook | None = None, store=None) -> Prepared | None:
    """The event of one hook invocation, ready to store (None for --dry-run: it was printed).
    Nothing is written yet but a damage mark for a file SQLite reports malformed."""
    args = _parse(argv)
    opts = args.opts
    seen["unsaid"] = False
    from ..adapters import Context, build_event, parse_payload, registry
    from ..adapters import capture_mode as parse_mode
    from ..model import clock, ids
    from ..store import location
    hook = hook or Hook.from_process()
    data, truncated = hook.take_data(), hook.truncated
    nbytes = seen["bytes"] = len(data)
    payload, gap = parse_payload(data, truncated)
    del data  # the payload is parsed: a large prompt is held as its text from here on, not its bytes too
    provider = args.provider or ""
    db_path = location.resolve(opts.get("db"))
    seen["db"] = db_path
    mode_override = parse_mode(opts["capture_mode"]) if opts.get("capture_mode") else None
    if opts.get("capture_mode") and mode_override is None:
        mode_override = "metadata_only"  # an invalid mode fails closed
    device = opts.get("device_id")
    if device is not None and not ids.is_uuid(ids.bare(device)):
        device = None  # a malformed override must not cost the event: use the database's
    store_error = None
    if store is not None:
        store_device = store.device_id
    elif not args.dry_run:
        try:
            # never create a database in the flag's mode: a repository's own hook config may
            # pass --capture-mode, and it may only restrict what the user chose
            store = seen["store"] = _open_store(db_path, None)
            store_device = store.device_id  # a file without a valid identity is not used
        except Exception as e:  # locked, unwritable, corrupt, newer schema: spool instead
            store, store_error = None, hooklog.why(e)
            if getattr(e, "code", None) in ("store.corrupt", "store.not_a_database"):
                from ..integrity import damage
                damage.mark(db_path, "SQLite reports the file malformed", "capture")
    if device is None:
        if store is not None:
            device = store_device
        elif args.dry_run:
            device = _peek_device(db_path) or ids.NIL
        else:
            device = _peek_device(db_path) or _fallback_device()
    device = ids.bare(device)
    if store is not None:
        mode = store.capture_mode
    elif args.dry_run:
        mode = _peek_mode(db_path) or mode_override or "local_semantic"
    else:
        mode = "metadata_only"  # cannot read the database's setting: fail closed
    if mode_override is not None:
        mode = stricter(mode, mode_override) if not args.dry_run else mode_override
    captured = opts.get("captured_at")
    try:
        captured = int(captured) if captured is not None else hook.captured_at or clock.now_us()
    except ValueError:
        captured = clock.now_us()
    if not clock.MIN_US <= captured <= clock.MAX_US:
        captured = clock.now_us()  # the store could not hold it: the event must not pay for that
    cwd = _cwd(registry.provider_id(provider) or provider, payload, hook) if isinstance(payload, dict) else hook.cwd
    from .project import identify
    project, _root = identify(cwd, opts, device, hook.cwd)
    ctx = Context(device, mode, project, captured, hook_version=opts.get("hook_version") or _hook_version(),
                  event_id=hook.event_id)
    env = build_event(provider, payload, gap, ctx, event_hint=opts.get("event"), payload_bytes=nbytes)
    if args.dry_run:
        from ..model import fastjson
        sys.stdout.write(fastjson.dumps(env) + "\n")
        sys.stdout.flush()
        return None
    from ..ingest import privacy
    return Prepared(provider, db_path, privacy.ingest(env, db_mode=mode), store, store_error)


def deliver(event: Prepared) -> None:
    """Store the event: the spool drained first (a bounded share), then the append; into the
    spool instead when the file cannot take it (not open, damaged, the append failed) or when
    spooled events are still waiting ahead of it (more than the share, or the drain failed:
    chain order is arrival order, and a file that was busy or read-only for the drain is not
    waited for a second time)."""
    store, db_path, provider = event.store, event.db_path, event.provider
    store_error = event.store_error
    if store is not None:
        from ..integrity import damage
        if damage.refusal(store, db_path) is not None:  # never written into a damaged file
            store_error = "store.damaged"
        else:
            ahead, failed = _drain(store, db_path, provider)
            if failed is not None:
                store_error = hooklog.why(failed)
            elif ahead:
                store_error = "spool_backlog"
            else:
                from . import spool
                try:
                    spool.append(store, [event.env])
                    return
                except Exception as e:
                    store_error = hooklog.why(e)
                    if damage.is_corruption(e):
                        damage.mark(db_path, "SQLite reports the file malformed", "capture")
    _spool_or_count(provider, db_path, event.env, store_error)


def _drain(store, db_path: str, provider, known: dict | None = None, log: bool = True) -> tuple:
    """Events spooled earlier go first (chain order = arrival order), a bounded share:
    (events still waiting ahead: True/False, the error that stopped the drain or None)."""
    from ..integrity import damage
    from . import spool
    try:
        return not spool.drain_ahead(store, db_path, HOOK_DRAIN_LIMIT, known), None
    except Exception as e:
        if log:
            hooklog.log(f"provider={_label(provider)} err=spool_drain:{hooklog.why(e)}")
        if damage.is_corruption(e):
            damage.mark(db_path, "SQLite reports the file malformed", "capture")
        return True, e


def receive(event: Prepared, reserved=None) -> bool:
    """The capture daemon's receipt, before it answers `ok`: the event (after the privacy
    contract, like everything the spool holds) spooled — into `reserved` (spool.reserve) when
    it can serve — where it survives the daemon's death and every capture and read drains it.
    False when the file is not open or no spool took it: the daemon then delivers before
    answering, as a hook would."""
    if event.store is None:
        return False
    from . import spool
    try:
        event.spooled = spool.put(event.db_path, event.env, reserved)
    except Exception:
        return False
    return True


def settle(events: list, store=None, db_path: str | None = None, log: bool = True) -> tuple:
    """After the receipts were answered: the spool, these events last, into the file in one
    transaction (their envelopes taken as they are, not read back), unless the file is damaged:
    the events then wait in the spool, as a hook's would. All for one database: `store` and
    `db_path` (else the events' own), with no events the spool alone. Returns what `_drain`
    does: (events still waiting, the error that stopped the drain or None); `log`: a failed
    drain is said in the hook log (a daemon trying a busy file again says it once)."""
    from ..integrity import damage
    last = events[-1] if events else None
    store = store if store is not None else last.store
    db_path = db_path or last.db_path
    provider = last.provider if last is not None else "daemon"
    if damage.refusal(store, db_path) is not None:
        if log:
            hooklog.log(f"provider={_label(provider)} spooled reason=store.damaged")
        return False, None
    return _drain(store, db_path, provider, {e.spooled: e.env for e in events if e.spooled}, log)


def _spool_or_count(provider, db_path: str, env: dict, store_error) -> None:
    """The event goes to the spool; when no spool directory can take it either (the disks
    are full or read-only), the loss is counted where `attempt doctor` finds it (spool.lost),
    and said on stderr when even that fails: never dropped without a trace."""
    from . import spool
    try:
        spool.put(db_path, env)
        hooklog.log(f"provider={_label(provider)} spooled reason={store_error}")
        return
    except Exception as e:
        why = hooklog.why(e)
    hooklog.log(f"provider={_label(provider)} err=lost:{why} after {store_error}")
    if not spool.count_lost(db_path, f"{why} after {store_error}"):
        seen["unsaid"] = True  # the daemon answers `error`: the hook tries, and says so, itself
        _say_lost()


def _say_lost() -> None:
    try:
        sys.stderr.write("attempt capture: error[capture.lost]: this event could not be stored, spooled or "
                         "counted (every place it could go is full or read-only); free space and run "
                         "`attempt doctor`\n")
        sys.stderr.flush()
    except Exception:
        pass


def _peek_device(db_path: str) -> str | None:
    from ..model import ids
    dev = _peek(db_path, "device_id")
    return dev if ids.is_uuid(dev) else None  # hostile text never becomes an event's device


def _peek_mode(db_path: str) -> str | None:
    mode = _peek(db_path, "capture_mode")
    return mode if mode in _STRICTNESS else None


def _peek(db_path: str, key: str):
    if not os.path.exists(db_path):
        return None
    try:
        from ..store.database import Store
        st = Store.open(db_path, readonly=True, busy_timeout_s=0.2)
        try:
            return st.meta(key)
        finally:
            st.close()
    except Exception:
        return None


def _hook_version() -> str:
    from .. import __version__
    return __version__


def main(argv, hook: Hook | None = None, *, answer: str | None = None, db_path: str | None = None) -> int:
    """The hook command. `hook`, `answer`, `db_path`: what hookclient.through_daemon already read and
    what the daemon answered it (this process then does the work, and starts a daemon when
    none was there)."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    provider = _parse(argv).provider
    is_gemini = isinstance(provider, str) and provider.strip().lower() in GEMINI_NAMES
    dry = "--dry-run" in argv
    try:
        if hook is None:
            hook = Hook.from_process()
            if not dry and _through_daemon(argv, hook):
                return _ack(is_gemini)
        elif answer is not None:
            _after_answer(answer, db_path)
        full_interpreter()  # a lean hook (`python -I -S`) no daemon served: apsw is needed now
        run(argv, hook)
    except BaseException as e:  # the agent must never see us fail
        if isinstance(e, KeyboardInterrupt):
            return 0
        hooklog.log(f"provider={_label(provider)} err=internal:{hooklog.why(e)}")
        if not dry:
            try:
                full_interpreter()
                _last_resort(provider, seen["bytes"], seen["db"])
            except Exception as e2:
                hooklog.log(f"provider={_label(provider)} err=lost:{hooklog.why(e2)}")
    return _ack(is_gemini and not dry)


def _ack(is_gemini: bool) -> int:
    if is_gemini:
        try:
            sys.stdout.buffer.write(GEMINI_ACK)
            sys.stdout.flush()
        except Exception:
            pass
    return 0


def _through_daemon(argv, hook: Hook) -> bool:
    """True when the capture daemon stored the event. Otherwise this process does the work
    (with the same capture time and event id, so nothing is stored twice) and, when no daemon
    was there, starts one for the next hook."""
    from . import hookclient
    if not hookclient.enabled():
        return False
    answer, db_path = hookclient.handover(argv, hook)
    if answer == "ok":
        return True
    _after_answer(answer, db_path)
    return False


def _after_answer(answer: str, db_path: str | None) -> None:
    """A daemon did not store the event: start one when none was there, log anything odd."""
    if db_path is not None:
        seen["db"] = db_path
    if answer.startswith("deliver:"):  # whatever went wrong on the way, this process still has the event
        hooklog.log(f"daemon err={answer}")
        return
    if answer in ("absent", "stale"):
        try:
            from . import daemon
            daemon.spawn(db_path)
        except Exception as e:
            hooklog.log(f"daemon err=spawn:{hooklog.why(e)}")
    elif answer not in ("unsupported", "none"):
        hooklog.log(f"daemon answer={''.join(c for c in answer[:16] if c.isalnum()) or 'none'}")
