"""Coded errors. Every failure a user can see carries a stable code and never echoes content.

Exit statuses (CLI): 1 = a problem was found (verify, conformance, doctor), 2 = bad usage or
malformed input. `AttemptError.exit_status` says which one an error is.

`CODES` is the registry: every code the package raises, with its exit status and what it means
(AttemptQL's own codes, `AQL####`, are registered in attemptdb.query.errors). A test walks the
package and fails on a raised code that is not registered here, or raised with another status.
"""


DISGUISING = ("\u061c\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
              "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff")
"""Characters that are no control character yet disguise what a line says: bidirectional
overrides, embeddings and isolates (text shown in another order than it is), zero-width
characters (two names that look alike), line and paragraph separators."""
_CONTROL = {c: "?" for c in list(range(0x20)) + list(range(0x7F, 0xA0)) + [ord(ch) for ch in DISGUISING]}


_CONTROL_LINES = {c: v for c, v in _CONTROL.items() if c not in (0x09, 0x0A)}


def printable(text, *, lines: bool = False) -> str:
    """Text made safe for a terminal: every C0/C1 control character (ESC included, so no escape
    sequence survives; newline too, so a line stays one line) and every DISGUISING character
    shown as `?`. Paths, names and stored values in messages come from hostile input. With
    `lines`, newline and tab stay (text shown as the lines it has, e.g. a command's output)."""
    return "" if text is None else str(text).translate(_CONTROL_LINES if lines else _CONTROL)


def did_you_mean(word: str, choices) -> str:
    """`; did you mean `<choice>`?` for the choice nearest `word` (difflib's close match), or ""
    when none is near: the one suggestion of every "unknown name" error (a command, a provider)."""
    import difflib
    near = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean `{near[0]}`?" if near else ""


class AttemptError(Exception):
    """A user-facing failure: `code` is stable (`store.newer_schema`), `message` is one line.
    Its printed line (`str`) shows control and disguising characters in the message as `?`
    (`printable`); `message` keeps them, for machine formats that escape them."""

    exit_status = 2

    def __init__(self, code: str, message: str, *, exit_status: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        if exit_status is not None:
            self.exit_status = exit_status

    def __str__(self) -> str:
        return f"error[{self.code}]: {printable(self.message)}"


# code: (exit status, meaning; `…` stands for what the message fills in)
CODES = {
    'adapter.context': (2, 'device_id must be a lowercase UUID'),
    'adapter.missing_event_name': (2, 'the payload has no hook_event_name'),
    'adapter.payload_not_object': (2, 'the hook payload is not a JSON object'),
    'adapter.unsupported_provider': (2, 'no adapter for this provider'),
    'artifact.ambiguous': (1, 'ambiguous short id: matches …; give more hex digits'),
    'artifact.changed': (1, "the stored bytes do not match the artifact's SHA-256"),
    'artifact.corrupt': (1, '…: its stored bytes do not decompress'),
    'artifact.exists': (2, '… exists; pass --force to replace it'),
    'artifact.malformed': (1, '…: its row in this file is malformed (…)'),
    'artifact.not_stored': (1, '…: its bytes are not stored in this file'),
    'artifact.unknown': (1, 'no such artifact in this file'),
    'artifact.unwritable': (2, 'cannot write …: …'),
    'bundle.artifact_changed': (1, 'the stored bytes of … do not match its SHA-256; nothing was exported'),
    'bundle.checkpoint': (1, 'the checkpoint … is not a signed AttemptDB checkpoint of the bundle\'s chain, or its consistency proof does not hold'),
    'bundle.consistency': (2, 'the earlier checkpoint given cannot be used for a consistency proof'),
    'bundle.device_key': (1, 'the bundle holds events of a device whose key this file knows (its own, or one pinned for sync) that are not stored here, and that key did not sign it: nothing was imported'),
    'bundle.empty': (2, 'no events in this scope: nothing to export'),
    'bundle.events': (1, '… holds … events, the manifest says …; or a line that is not a valid event'),
    'bundle.exists': (2, '… exists; pass --force to replace it'),
    'bundle.manifest': (1, 'manifest.json is not JSON, fails its schema, or does not add up (…)'),
    'bundle.member': (1, '… is missing, unreadable, larger than declared, not in the manifest, or differs from what was signed'),
    'bundle.no_checkpoint': (2, 'no signed checkpoint with a Merkle tree head yet: nothing to prove consistency with (`attempt checkpoint` …'),
    'bundle.not_a_bundle': (1, 'not a bundle (not a readable ZIP file, no manifest.json, a name twice, too many files)'),
    'bundle.not_extended': (1, 'this log does not extend the earlier checkpoint given: not this log, or history was rewritten'),
    'bundle.pin_unconfirmed': (1, 'the bundle holds new events of a device with no pinned key, in a file `attempt recover` made without reading all its pins: nothing was imported; `attempt keys trust` that device first'),
    'bundle.row_changed': (1, 'row seq=… (…) is not what was written; `attempt verify` says more. Nothing was exported'),
    'bundle.signature': (1, 'the manifest\'s signature does not verify: it was changed after signing'),
    'bundle.signer': (1, 'signed by …, not by the key you named (…)'),
    'bundle.unreadable': (2, 'cannot read …: …'),
    'bundle.unwritable': (2, 'cannot write in …: …'),
    'bundle.version': (1, 'bundle version v… is not supported (this attempt reads v1)'),
    'capture.lost': (2, 'a hook payload could not be stored, spooled or counted (said on stderr; the hook still exits 0)'),
    'checkpoint.copy': (1, 'this file is a copy of … (both hold the history of dev_…): nothing was signed'),
    'checkpoint.diverged': (1, "this file's chain does not extend the device's last signed checkpoint (size …): rows were removed, the …"),
    'checkpoint.malformed': (2, 'not an AttemptDB checkpoint: …'),
    'checkpoint.outside_missing': (1, 'the file holds signed checkpoints but the copy beside the key (…) is missing, so rows deleted after the …'),
    'checkpoint.outside_unreadable': (1, 'the checkpoint kept beside the key is not a valid signed note; run `attempt verify`'),
    'checkpoint.unreadable': (2, 'cannot read …: …'),
    'checkpoint.unverified': (1, 'nothing was signed: …; run `attempt verify`'),
    'checkpoint.unwritable': (1, 'cannot write the checkpoint beside the key (…): …; nothing was signed'),
    'conformance.unreadable': (2, 'cannot read …: …'),
    'correct.class_needs_outcome': (2, '--failure-class needs --outcome'),
    'correct.failure_class': (2, 'a failure class is a short token (letters, digits, _ - .), e.g. compile_error'),
    'correct.not_applied': (1, 'the projection would not apply this correction (status: …)'),
    'correct.nothing': (2, 'give --outcome and/or --note for an attempt'),
    'correct.outcome': (2, 'outcome must be one of …'),
    'correct.turn_fields': (2, "a turn takes only --note (it becomes the turn's objective)"),
    'daemon.socket_dir': (2, 'the socket directory is not private to this user'),
    'dataset.bad_manifest': (1, '… is not a manifest of … generation …'),
    'dataset.busy': (1, '…: another export of this device into it is running; nothing was written (run it again when that one …'),
    'dataset.chain': (1, '…/…: generation … does not continue the one before it'),
    'dataset.exists': (1, '… exists: a dataset file is never rewritten'),
    'dataset.file_changed': (1, '… is not the file its manifest signed'),
    'dataset.gap': (1, '…/…: generation … is missing'),
    'dataset.key_mismatch': (1, "…: the manifests under … are signed by another key than this device's: nothing was written"),
    'dataset.missing': (1, '… is listed by a manifest but missing'),
    'dataset.signature': (1, '…: its signature does not verify (device …)'),
    'dataset.unlisted': (1, '… is in the dataset but in no signed manifest: refused'),
    'dataset.unreadable': (2, 'cannot list …: …'),
    'dataset.unwritable': (2, 'cannot write in …: …'),
    'event.invalid': (2, 'an envelope that is not valid Event v1 (names the JSON path)'),
    'events.row_unreadable': (1, 'row seq=… (…) holds text that is not valid UTF-8: it was edited outside AttemptDB or the file is damaged; …'),
    'export.bad_value': (2, '….… holds a value that is not …; `attempt verify` and `attempt reproject --check` say what changed'),
    'export.exists': (2, "… is not empty; pass --force to replace the export's files in it (other files stay)"),
    'export.format': (2, 'unknown format …: arrow or parquet'),
    'export.needs_arrow': (2, 'this needs pyarrow; …'),
    'export.not_a_directory': (2, '… exists and is not a directory'),
    'export.unwritable': (2, 'cannot write in …: …'),
    'import.bad_line': (2, 'line …: not UTF-8 (byte …)'),
    'import.conflicting_events': (1, '… event differs from the one stored under its id (ev_…): not imported, the stored event kept'),
    'import.nothing': (2, 'no Claude Code transcripts found (looked in ……)'),
    'import.unreadable': (2, 'cannot read …: …'),
    'import.worker': (2, 'the import worker stopped unexpectedly'),
    'import.wrong_format': (2, '… is not a Codex rollout; this looks like a Claude Code transcript: `attempt import claude-transcripts`'),
    'init.local_not_ours': (2, '… exists and is not a directory of yours; move it away, then run `attempt init --local` again'),
    'input.not_utf8': (2, 'a command-line argument is not valid UTF-8 text'),
    'installer.backup_failed': (2, 'cannot write a backup beside … (…), or too many backups of … this second'),
    'installer.codex_config_invalid': (1, '… is not valid TOML; left untouched'),
    'installer.codex_config_shape': (1, 'could not change [mcp_servers.…] in … without touching anything else; left untouched'),
    'installer.config_changed': (2, '… changed while it was being edited (another program wrote it); left as it is now: run the command again'),
    'installer.config_duplicate_key': (1, 'a key occurs twice in one object of the config (line …, column …); an agent would keep only one: left untouched'),
    'installer.config_invalid_json': (1, 'the config is not JSON we can edit safely (what, line …, column …); left untouched'),
    'installer.config_not_a_file': (2, '… is not a regular file'),
    'installer.config_not_utf8': (2, "an agent's config file is not valid UTF-8; it is left as it is"),
    'installer.config_read_only': (2, '… is read-only (mode …), or not writable by you: nothing written (`chmod u+w …`, then run the command again)'),
    'installer.config_shape': (2, '…: the top level is not a JSON object; refusing to modify it'),
    'installer.config_too_large': (2, '… is larger than … MiB'),
    'installer.config_unreadable': (2, 'cannot read … (…)'),
    'installer.lock_failed': (2, 'cannot lock …'),
    'installer.lock_timeout': (2, 'another process holds …; try again'),
    'installer.mcp_name_taken': (1, '… names an MCP server `attemptdb` that is not AttemptDB\'s; left untouched (rename or remove it, then install again)'),
    'installer.symlink_loop': (2, '…: more than … symbolic links'),
    'installer.unknown_provider': (2, 'no agent of that name (the message lists the providers)'),
    'installer.write_failed': (2, 'cannot write beside … (…)'),
    'json.malformed': (2, 'malformed JSON text (names the character offset)'),
    'keys.bad_device': (2, 'DEVICE is a device id (dev_<uuid>)'),
    'keys.bad_key': (2, 'KEY is id_ followed by 32 hex digits, or a base64 public key'),
    'keys.corrupt': (2, 'the device key … is not 64 hex digits'),
    'keys.exposed': (1, 'the device key … is not private to this user (mode …); `chmod 600` it, or make a new key if someone else …'),
    'keys.lost': (1, "this database's signing key is missing: … does not exist, but the database was signed with key …. No new key was made and nothing was signed: restore the key file from a backup, or `attempt keys init --replace-lost` if it is truly gone"),
    'keys.mismatch': (1, 'the key file … holds key …, but this database was signed with key …: nothing was signed with it; move that file away, then restore the right one (or `attempt keys init --replace-lost`)'),
    'keys.missing': (1, 'this device has no signing key (run `attempt keys init`)'),
    'keys.no_private_key': (2, 'this key is verify-only'),
    'keys.not_lost': (2, "this database's signing key is there (…): --replace-lost only replaces a key that is lost"),
    'keys.not_pinned': (1, 'no key is pinned for …'),
    'keys.own_device': (2, 'that is this device: its own key is `attempt keys show`'),
    'keys.unreadable': (2, 'cannot read the device key …: …'),
    'keys.unwritable': (1, 'cannot write the device key in …: …; no key was made'),
    'mcp.bad_arguments': (2, 'a tool argument of the wrong type or out of range (names the argument and what it takes)'),
    'mcp.needs_mcp': (2, '`attempt mcp` needs version 2 of the MCP SDK (found ….x); …'),
    'mcp.unknown_tool': (2, 'no tool named that; the tools are …'),
    'meta.duplicate': (2, 'this event is already in the log'),
    'meta.note': (2, 'an empty note says nothing; leave --note out'),
    'output.unwritable': (2, 'cannot write the output: … (a full disk, an I/O error; what was stored is unchanged)'),
    'proof.unreadable': (2, 'cannot read …: …'),
    'prove.ambiguous': (2, 'more than one event starts with those digits: give more'),
    'prove.exists': (2, '… exists; pass --force to replace it'),
    'prove.inconsistent': (1, 'the proof drawn from this file does not verify (…); run `attempt verify`'),
    'prove.no_checkpoint': (1, 'no signed checkpoint with a Merkle tree head covers this event yet; `attempt checkpoint` signs one when …'),
    'prove.recovered_file': (1, 'this file was rebuilt by `attempt recover`: its log has the gaps its recovery note declares, and no Merkle …'),
    'prove.row_changed': (1, 'row seq=… is not what was written; `attempt verify` says more. Nothing was proven'),
    'prove.unknown_event': (2, 'no such event in this file (give its ev_ id, or at least its first 8 hex digits)'),
    'prove.unwritable': (2, 'cannot write …: …; nothing was written'),
    'query.bad_export': (2, '…/…: unknown format'),
    'query.datafusion': (2, '(no message)'),
    'query.engine': (2, '--engine datafusion runs SQL (SELECT, WITH, VALUES, EXPLAIN); AttemptQL, DESCRIBE and SHOW TABLES run on …'),
    'query.needs_datafusion': (2, '--engine datafusion needs datafusion; …'),
    'query.parser_unavailable': (2, "AttemptQL cannot use the installed parsimonious (…); install a tested version: pip install 'parsimonious…'"),
    'record.bad_exit_code': (2, 'exit_code must be an integer'),
    'record.bad_output': (2, 'output must be bytes, a path or a binary file'),
    'record.bad_signal': (2, 'signal must be a name such as SIGTERM'),
    'record.empty': (2, 'the … is empty'),
    'record.too_long': (2, 'the … is longer than … characters'),
    'recover.exists': (2, '… exists: recover writes a new file and never replaces one; choose another --out'),
    'recover.missing': (2, 'no database file at …'),
    'recover.no_identity': (1, "the damaged file's device identity (meta device_id) cannot be read, so its rows cannot be tied to its key …"),
    'recover.same_file': (2, 'the recovered file must not be the damaged file'),
    'recover.sync_pins_unreadable': (1, "a warning in `attempt recover`'s report: the damaged file's pinned sync keys could not all be read (a revocation may be lost), so the new file pins no device on first use until `attempt keys trust` …"),
    'recover.unreadable': (2, 'cannot read …: …'),
    'recover.unwritable': (2, 'cannot write in …: …'),
    'redaction.no_fixed_point': (2, 'redaction did not reach a fixed point; the content is dropped'),
    'retract.aborted': (1, 'not confirmed; nothing was written'),
    'retract.already': (2, '… … is already retracted'),
    'retract.meta_event': (2, 'a correction or retraction cannot be retracted (the audit trail stays)'),
    'retract.reason': (2, 'reason must be one of …'),
    'retract.target': (2, 'give exactly one of --session, --attempt, --event'),
    'retract.unconfirmed': (1, 'refusing to retract without confirmation; pass --yes (or run in a terminal and type `retract`)'),
    'run.bad_argument': (2, 'the command, an argument or its environment holds a NUL byte (or a name with =): no process can take it'),
    'run.no_command': (2, 'no command to run (attempt run [OPTIONS] -- COMMAND [ARGS…])'),
    'scenario.arrival': (2, '…: arrival must list every label once'),
    'scenario.label': (2, '…: duplicate label …'),
    'scenario.ref': (2, '…: unknown reference kind …'),
    'scenario.time': (2, "…: with date 'now' a time is '-HH:MM:SS', got …"),
    'scope.project': (2, 'no sessions recorded for the repository at …'),
    'scope.unresolved': (2, '(no message)'),
    'session.bad_name': (2, 'a session name is 1-… printable characters without leading or trailing blanks'),
    'session.foreign': (2, '… is a … session; runs, notes and approvals go into sessions of their own (provider attempt): pass a name …'),
    'session.none': (2, 'which session? pass --session S (or set …)'),
    'session.not_open': (1, 'session … is not open'),
    'session.unknown': (2, 'no session … in this file (a new session takes a name, not an id)'),
    'snapshot.git_failed': (1, '`git …` failed in the repository (exit …): is it a repository git accepts (safe.directory)?'),
    'snapshot.no_git': (1, 'git is not installed (or cannot be run)'),
    'snapshot.not_git': (1, 'not inside a git repository'),
    'snapshot.old_git': (1, "git 2.31 or newer is needed (older ones cannot be told to run none of the repository's filters)"),
    'store.bad_row': (1, "a stored event's JSON is malformed (edited outside AttemptDB, or damage); verify names it, recover skips it"),
    'store.busy': (2, 'another process held the write lock longer than the busy timeout; what was committed stays, try again'),
    'store.cannot_open': (2, 'cannot open … (…)'),
    'store.corrupt': (2, '… is damaged: SQLite cannot read part of it (a malformed page); nothing more is written to it. `attempt …'),
    'store.damaged': (1, '… is damaged (…); nothing was written: …'),
    'store.disk_full': (2, 'the disk holding the database… is full; what was already committed stays, free some space and run the …'),
    'store.emptied': (1, '… is empty, but it held the history of …: the file was truncated or replaced by an empty one. Nothing …'),
    'store.empty': (2, '… is empty, not yet an AttemptDB (run `attempt init`, or let a hook create it)'),
    'store.identity': (1, '… has no valid device identity (meta.device_id is not a UUID)'),
    'store.io': (2, 'the disk returned an I/O error on …; what was committed stays (SQLite rolls back what was not); check the …'),
    'store.local_replaced': (1, '… is not the database `attempt init --local` made here (another device identity: a `git pull` or a copy …'),
    'store.missing': (2, 'no database at … (run `attempt init`, or let a hook create it)'),
    'store.newer_schema': (1, '… was written by a newer AttemptDB (schema …; this one knows up to …); upgrade attemptdb to read it'),
    'store.no_transaction': (2, 'append_uncommitted needs an open write transaction'),
    'store.not_a_database': (2, '… is not an AttemptDB (SQLite) file'),
    'store.not_a_file': (2, '… is not a regular file (a directory, device or pipe); choose another --db'),
    'store.not_attemptdb': (2, '… is a SQLite file but not an AttemptDB database; choose another --db'),
    'store.path_not_utf8': (2, 'the database path is not valid UTF-8 text'),
    'store.read_only': (2, '… cannot be written (a read-only file, directory or filesystem); commands that only read still work'),
    'store.read_only_wal': (2, '… is on read-only storage and its -wal still holds committed rows that only a writer can fold in; copy the …'),
    'store.schema_changed': (2, '… … …; AttemptDB does not rewrite a table (or remove another object under its name): restore the file from …'),
    'store.version_reset': (1, '… says schema version 0 (a file never written) but holds AttemptDB\'s tables: its `PRAGMA user_version` was …'),
    'store.wal_without_file': (1, '… is empty, but the -wal beside it holds … bytes of its newest writes: the file was truncated or …'),
    'store.text_not_utf8': (1, 'the file holds text that is not valid UTF-8 (edited outside AttemptDB, or damage); verify names it'),
    'store.write_ignored': (1, '… of … events written did not land in the events table: a trigger that is not AttemptDB\'s dropped them; …'),
    'sync.exists': (1, '… exists: a published segment is never rewritten'),
    'sync.no_folder': (2, '… does not exist (create the shared folder first)'),
    'sync.not_a_directory': (1, '… is not a directory (a symlink or a file): refused'),
    'sync.not_a_folder': (2, 'the sync folder given is not a directory'),
    'sync.own_diverged': (1, "this file no longer holds, byte for byte, the events its device's last published segment carries (another copy of this device published under its name, or the file is an older copy): nothing was pushed; …"),
    'sync.own_order': (1, 'two events of this device share source_seq …: `attempt verify` says more; nothing more was pushed'),
    'sync.state_changed': (1, "the file's sync tables (pins, kept manifests) were edited outside AttemptDB: …"),
    'sync.unreadable': (2, 'cannot read …: …'),
    'sync.unwritable': (2, 'cannot create …: …'),
    'target.ambiguous': (2, '…… matches several: …'),
    'target.kind': (2, 'expected an id starting with …'),
    'target.malformed': (2, 'not an attempt id (att_ and hex digits expected)'),
    'target.not_found': (1, 'no … ……'),
    'target.short': (2, 'give at least … hex digits after …'),
    'ui.cannot_listen': (2, 'cannot listen on … port … (…); choose another with --port (or --host)'),
    'ui.needs_datasette': (2, '`attempt ui` needs Datasette; …'),
    'ui.read_only': (2, 'the UI never writes the database'),
    'ui.remote_host': (2, '--host … is not a loopback address: the history would be reachable from other machines; add --allow-remote …'),
    'usage.bad_usage': (2, 'the command line does not fit the command (click says how; `… --help` lists what it takes)'),
    'usage.bad_value': (2, 'an option or argument has a value it does not take (click says which and why)'),
    'usage.missing': (2, 'a required argument or option is missing (click names it)'),
    'usage.no_db': (2, 'the command opens no database, so it takes no --db (the message says why)'),
    'usage.unknown_command': (2, 'no such command (a near command name suggested if any)'),
    'usage.unknown_option': (2, 'no such option for this command (click names it, and a near match if any)'),
}
