"""`attempt bundle export/verify/import`: signed portable evidence (spec/bundle.md)."""

import sys

import click

from ..errors import AttemptError
from .common import db_option, echo_json, json_option, no_db_option, printable, say

_KEY_HELP = "Require this signer: an id_… identity or a base64 public key (`attempt keys show`)."


@click.group("bundle")
def bundle_group():
    """Signed portable evidence: a scope of the history in one file that verifies offline."""


@bundle_group.command("export")
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--session", "sessions", multiple=True, metavar="S",
              help="Only this session (ses_…, bare or short); repeat for more.")
@click.option("--project", metavar="P", help="Only this project (owner/repo, prj_ id or directory).")
@click.option("--since", metavar="T", help="Events observed from T (RFC 3339, YYYY-MM-DD, -2h, …).")
@click.option("--until", metavar="T", help="Events observed up to T.")
@click.option("--include-content", is_flag=True,
              help="Keep prompts, commands, outputs and raw payloads (left out by default).")
@click.option("--include-artifacts", is_flag=True,
              help="Carry the stored artifacts (command output) the events name, in artifacts/ (left out by default).")
@click.option("--omit-paths", is_flag=True,
              help="Replace local absolute paths and repository roots with placeholders (<repo>, ~, <path>/name).")
@click.option("--consistency-from", metavar="N|FILE",
              help="Prove the bundle's signed log extends an earlier checkpoint: its tree size, or an earlier "
                   "bundle or proof of this device holding it (RFC 9162 consistency proof).")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@db_option
@json_option
def export_cmd(out, sessions, project, since, until, include_content, include_artifacts, omit_paths,
               consistency_from, force, db, as_json):
    """Write the events in scope to the bundle OUT, signed with this device's key.

    One file per session, canonical Event v1 lines, and the newest signed checkpoint. Content
    is left out (the events say metadata_only) unless --include-content; command output unless
    --include-artifacts; paths and project names stay unless --omit-paths.
    """
    from ..exchange import bundle
    from .progress import Progress
    from .scope import scope_where
    from .stores import ensure_key, read_store
    st = read_store(db, key=True)
    bar = Progress("exporting", quiet=as_json)
    try:
        key, _ = ensure_key(st)
        where, params = scope_where(st.conn, None, project, since, until)
        if sessions:
            from ..query import resolve
            from ..query.errors import AQLError
            try:
                ids = [resolve.resolve_id(st.conn, "session", s, live=False)[1] for s in sessions]
            except AQLError as e:
                raise AttemptError("scope.unresolved", e.message) from None
            where += f" AND session_id IN ({','.join('?' * len(ids))})"
            params += ids
        source = bundle.consistency_source(consistency_from) if consistency_from is not None else None
        m, left = bundle.export(st, out, key, where=where, params=params, include_content=include_content,
                          force=force, include_artifacts=include_artifacts, omit_paths=omit_paths,
                          consistency_from=source, progress=bar.update)
        from ..projections import sessioncount
        counts = sessioncount.classify(st.conn, m["sessions"])
    finally:
        bar.close()
        st.close()
    if as_json:
        echo_json({"bundle": out, **{k: v for k, v in m.items() if k not in ("files", "signature", "artifacts")},
                   "files": len(m["files"]), "artifacts": len(m.get("artifacts", ())),
                   "signer": m["signature"]["key_id"], "session_counts": counts, "artifacts_left_out": left})
    else:
        from ..render.termtable import plural
        arts = f"; {plural(len(m['artifacts']), 'artifact', grouped=True)}" if "artifacts" in m else ""
        say(f"exported {plural(m['events'], 'event', grouped=True)} in "
             f"{plural(len(m['sessions']), 'session', grouped=True)} to {printable(out)} "
             f"({m['bundle_id']}, signed by {m['signature']['key_id']}; content "
             f"{'included' if m['content'] else 'left out'}{arts}"
             f"{'; local paths omitted' if m.get('paths_omitted') else ''}) {bar.rate(m['events'])}",
             paths=(printable(out),))
        if left["stored"]:
            say(f"note: {plural(left['stored'], 'artifact', grouped=True)} (command output) the events name "
                "stayed behind; --include-artifacts carries them", err=True)
        if left["not_stored"]:
            say(f"note: {plural(left['not_stored'], 'artifact', grouped=True)} the events name "
                f"{'has' if left['not_stored'] == 1 else 'have'} no bytes in this file (not kept when "
                "recorded): the events carry their hashes and sizes only", err=True)
        why = sessioncount.explain(counts, len(m["sessions"]))
        if why:
            say(f"note: {plural(len(m['sessions']), 'session', grouped=True)} in the bundle, {why}", err=True)


def _show(rep, as_json, file):
    if as_json:
        echo_json(rep.as_dict())
        return
    paths = (printable(file),)
    say(rep.line(), fg="green" if rep.ok else "red", paths=paths)
    for p in rep.problems[1:6]:
        say(f"problem: {p}", paths=paths)
    for n in rep.notes:
        say(f"note: {n}", err=True, paths=paths)


@bundle_group.command("verify")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--key", metavar="ID", help=_KEY_HELP)
@json_option
@no_db_option("it checks the bundle FILE alone, offline (`bundle import` takes --db)")
def verify_cmd(file, key, as_json):
    """Check a bundle offline: its signature, every file's hash and every event line.

    Prints `ok: …` (exit 0) or `problem: …` (exit 1). Needs no database. Without --key any
    valid signature passes, and the line says the signer was not pinned.
    """
    from ..exchange import bundle
    from ..integrity import keys
    rep = bundle.verify(file, key=None if key is None else keys.parse_pin(key)[0])
    _show(rep, as_json, file)
    sys.exit(0 if rep.ok else 1)


@bundle_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--key", metavar="ID", help=_KEY_HELP)
@db_option
@json_option
def import_cmd(file, key, db, as_json):
    """Verify a bundle, then import its events (idempotent; nothing is written unless the whole
    bundle verifies). The database's capture mode and privacy rules apply as to any import."""
    from ..exchange import bundle
    from ..integrity import keys
    from .progress import Progress
    from .stores import checkpoint_after_import, write_store
    key = None if key is None else keys.parse_pin(key)[0]
    st = write_store(db, create=True)
    bar = Progress("importing", quiet=as_json)
    try:
        rep, imp = bundle.import_bundle(st, file, key=key, progress=bar.update)
        if imp is not None:
            checkpoint_after_import(st)
    finally:
        bar.close()
        st.close()
    if imp is None:
        _show(rep, as_json, file)
        sys.exit(1)
    if as_json:
        echo_json({**rep.as_dict(), **imp.as_dict()})
    else:
        from ..render.termtable import plural
        say(f"imported {plural(imp.accepted, 'event', grouped=True)} ({imp.duplicates:,} already stored) from bundle "
             f"{rep.manifest['bundle_id']}, signed by {rep.signer}"
             + ("" if rep.pinned else " (not pinned: pass --key to require a signer)")
             + f" {bar.rate(imp.lines)}")
        for n in rep.notes:
            say(f"note: {n}", err=True)
        if imp.conflicts:  # after the notes that say why known cases differ (content, paths)
            n = len(imp.conflicts)
            say(f"note: {n:,} of the bundle's events differ from the ones stored here under their ids "
                f"(ev_{imp.conflicts[0]}{', …' if n > 1 else ''}): the stored events stay (an event never changes)",
                err=True)
