"""verify's bulk check (attemptdb.integrity.bulkcheck) held against chain.check_rows: on every
file it passes exactly what check_rows passes, whatever column of a row was edited and however
(another type, a NUL, a NULL, text that is not UTF-8, a consistent rehash), and every problem
is named by check_rows itself (the same report). Verify's worker processes find a tampered row
in any worker's range and report it as one process does."""

import hashlib
import json
import os
import shutil

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_

from attemptdb.cli.main import run
from attemptdb.devtools import synth
from attemptdb.integrity import bulkcheck, chain, checkpoint, keys, merkle
from attemptdb.integrity import verify as verify_mod
from attemptdb.model import event, ids
from attemptdb.store.database import Store

EVENT_TRIGGERS = ("events_no_update", "events_no_delete", "events_retracted_only_set")


@pytest.fixture(autouse=True)
def bulk_on_small_ranges(monkeypatch):
    monkeypatch.setattr(bulkcheck, "MIN_ROWS", 0)


def _uuid(i: int, tag: int) -> str:
    return f"{tag:08x}-{i:04x}-4000-8000-{i * 7919 + tag:012x}"


def varied(device: str, n: int = 48):
    """Envelopes that set (and leave out) every optional field, with text that needs escaping
    (quotes, backslashes, control characters, NUL, U+2028, non-BMP), unknown x_ fields, paths,
    outcomes and large texts."""
    t0 = 1_787_904_000_000_000
    project = {"project_id": ids.derive("prj_", "remote", "h/o/r"), "root": '/r/é "q" \\ x', "name": "o/r",
               "repo_remote": "h/o/r", "branch": "main\tx", "head": "abc123"}
    kinds = ("tool_call_started", "tool_call_finished", "prompt_submitted", "agent_message", "unknown")
    for i in range(n):
        env = {
            "event_id": _uuid(i, 1), "schema_version": 1, "device_id": device, "source_seq": i, "hlc": i,
            "observed_at": t0 + i * 1_000_003 - (i % 3) * 59_999_999, "captured_at": t0 + i * 1_000_007,
            "provider": "claude_code" if i % 4 else "codex\u2028", "adapter_version": "0.1.1",
            "capture_mode": "full_sync", "provider_event_name": 'Post"Tool\\Use' if i % 5 == 0 else "PostToolUse",
            "kind": kinds[i % len(kinds)],
            "project": dict(project) if i % 3 else {k: project[k] for k in ("project_id", "root", "name")},
            "session_id": _uuid(i // 10, 2), "provider_session_id": "s\x00nul" if i % 7 == 0 else f"s{i // 10}",
        }
        if i % 2:
            env["ingested_at"] = t0 + 10**9 + i
        if i % 3 == 1:
            env["provider_version"] = "1.2.3"
        if i % 4 != 3:
            env["hook_version"] = "h😀"
        if i % 5 == 1:
            env["provider_turn_id"] = f"turn-{i}"
        if i % 6 in (1, 2):
            env["span_id"] = _uuid(i, 3)
        if i % 6 == 2:
            env["parent_span_id"] = _uuid(i, 4)
        agent = {}
        if i % 4:
            agent["agent_id"] = _uuid(i % 5, 5)
        if i % 4 in (1, 2):
            agent.update(provider_agent_id="pa\x01", agent_type="general-purpose", parent_agent_id=_uuid(i % 3, 6))
        if i % 8 == 1:
            agent["model"] = "m-\U0001F600"
        env["agent"] = agent
        if i % 5:
            env["tool"] = {"name": "Bash", "category": "shell"}
            if i % 5 != 2:
                env["tool"]["call_id"] = f'call"{i}'
        if i % 3 == 0:
            env["paths"] = [{"original": f"/r/a{i}.py", "logical": f"/r/a{i}.py", "repo_relative": f"a{i}.py"},
                            {"original": "C:\\x", "logical": "/x/\u00e9", "drive": "C", "unc": False}]
        if i % 4 == 1:
            env["outcome"] = {"status": "failure", "class": "exit", "exit_code": -3 - i}
        elif i % 4 == 2:
            env["outcome"] = {"status": "success"}
        if i % 2 == 0:
            env["duration_ms"] = i * 13
        if i % 3 != 2:
            env["attrs"] = {"hook_event_name": "X", "command_bytes": i}
        if i % 2:
            env["content"] = {"command": 'echo "hi" \\\n\x01 é' * (1 + i % 4), "message": "\u2028\U0001F600"}
        if i % 3:
            env["raw"] = {"tool_input": {"k": [1, 2.5, None, True]}, "s": "x" * (i * 37)}
        if i % 9 == 4:
            env["x_extra"] = {"a": [1, "b"]}
        event.validate(env)
        yield event.canonical(env)


def build(db: str) -> None:
    st = Store.open(db)
    evs = list(synth.generate(40, seed=3, device_id=st.device_id)) + list(varied(st.device_id))
    st.append(evs)
    st.close()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("bulk") / "pristine.db")
    build(db)
    return db


@pytest.fixture
def copy(pristine, tmp_path):
    db = str(tmp_path / "edited.db")
    shutil.copyfile(pristine, db)
    return db


def edit(db: str, sql: str, rehash_from: int | None = None) -> None:
    """`sql` with the events table's triggers dropped (and put back); with `rehash_from`, what an
    attacker with the library does next: every row from there on rehashed and relinked as
    line_from_row renders it (a row it cannot render keeps its hash)."""
    conn = apsw.Connection(db)
    saved = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events' "
                              f"AND name IN ({','.join('?' * len(EVENT_TRIGGERS))})", EVENT_TRIGGERS))
    with conn:
        for name in saved:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute(sql)
        if rehash_from is not None:
            prev = conn.execute("SELECT chain_hash FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1",
                                (rehash_from,)).fetchone()
            prev = prev[0] if prev else chain.GENESIS
            try:
                rows = list(conn.execute(chain.SELECT_RANGE, (rehash_from, 10**9)))
            except UnicodeDecodeError:  # text that is not UTF-8: the library cannot read it either
                rows = []
            for r in rows:
                try:
                    h = chain.hash_line(event.line_from_row(r[1:chain.NCOL + 1]), hashlib.sha256)
                except Exception:
                    h = r[-2]
                link = chain.link(prev, h)
                conn.execute("UPDATE events SET event_hash = ?, chain_hash = ? WHERE seq = ?", (h, link, r[0]))
                prev = link
        for s in saved.values():
            conn.execute(s)
    conn.close()


def both(db: str, monkeypatch=None):
    """(chain.check_rows's result, bulkcheck.check_rows's result) over the whole file, and
    whether the bulk check passed it without chain.check_rows."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        exact = chain.check_rows(conn, 1, 10**9)
        try:
            got = bulkcheck._fast(conn, 1, 10**9)
        except Exception:  # check_rows catches it and checks row by row
            got = None
        bulk = bulkcheck.check_rows(conn, 1, 10**9)
    finally:
        conn.close()
    return exact, bulk, got is not None


def test_the_restated_line_is_line_from_row_on_every_row_and_needs_no_row_by_row_check(pristine, monkeypatch):
    conn = apsw.Connection(pristine, flags=apsw.SQLITE_OPEN_READONLY)
    n = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    by_row = []
    real = chain.row_verifies
    monkeypatch.setattr(chain, "row_verifies", lambda r, conn: by_row.append(r[0]) or real(r, conn))
    got = bulkcheck._fast(conn, 1, 10**9)
    assert got is not None and got[0] == n == 88
    assert got[1] == [bytes.fromhex(r[0]) for r in conn.execute("SELECT event_hash FROM events ORDER BY seq")]
    # line_from_row itself renders only the rows with unknown x_ fields
    assert by_row == [40 + i + 1 for i in range(48) if i % 9 == 4]
    # and the leaves handed over make the same tree as check_rows's
    a, b = merkle.Accumulator(0, [5, 60]), merkle.Accumulator(0, [5, 60])
    assert chain.check_rows(conn, 1, 10**9, a) == bulkcheck.check_rows(conn, 1, 10**9, b) == (n, None)
    assert a.result() == b.result()
    conn.close()


def test_a_range_starting_mid_chain_links_to_the_stored_row_before_it(pristine):
    conn = apsw.Connection(pristine, flags=apsw.SQLITE_OPEN_READONLY)
    for lo, hi in ((2, 30), (41, 89), (60, 61)):
        assert bulkcheck._fast(conn, lo, hi)[0] == hi - lo
        assert bulkcheck.check_rows(conn, lo, hi) == chain.check_rows(conn, lo, hi) == (hi - lo, None)
    conn.close()


EDITS = [
    "event_id = event_id || 'x'", "event_id = 'xv_' || substr(event_id, 4)", "event_id = event_id || char(0)",
    "schema_version = 'one'", "schema_version = 2", "schema_version = 1.5", "schema_version = CAST('1' AS BLOB)",
    "device_id = CAST(device_id AS BLOB)", "device_id = 'dev_' || upper(substr(device_id, 5))",
    "source_seq = source_seq + 1", "source_seq = CAST(source_seq AS TEXT) || ' '", "hlc = hlc + 0.5",
    "observed_at = replace(observed_at, 'T', ' ')", "observed_at = replace(observed_at, 'Z', '+00:00')",
    "captured_at = substr(captured_at, 1, 17) || '60' || substr(captured_at, 20)",
    "captured_at = substr(captured_at, 1, 8) || '31' || substr(captured_at, 11)",
    "captured_at = substr(captured_at, 1, 20) || '12345' || substr(captured_at, 26)",
    "observed_at = substr(observed_at, 1, 11) || '24' || substr(observed_at, 14)",
    "ingested_at = NULL", "ingested_at = observed_at", "ingested_at = CAST(ingested_at AS BLOB)",
    "provider = provider || '\"'", "provider = CAST(provider AS BLOB)", "provider = 7",
    "provider = CAST(x'61ff' AS TEXT)", "provider_version = 'x'", "provider_version = x''",
    "provider_version = NULL", "hook_version = NULL", "hook_version = hook_version || char(0) || 'x'",
    "adapter_version = ''", "capture_mode = 'metadata_only'", "provider_event_name = provider_event_name || ' '",
    "kind = 'unknown'", "project_id = 'prj_' || substr(project_id, 6)", "project_root = project_root || char(0)",
    "project_name = 2", "repo_remote = NULL", "branch = CAST(branch AS BLOB)", "head = 'abc'", "head = NULL",
    "session_id = replace(session_id, 'ses_', 'tc_')", "provider_session_id = provider_session_id || char(10)",
    "provider_turn_id = 'T'", "provider_turn_id = NULL", "span_id = 'tc_' || substr(event_id, 4)",
    "span_id = NULL", "parent_span_id = span_id", "agent_id = NULL", "agent_id = 'agt_x'",
    "provider_agent_id = 5", "agent_type = 'x'", "parent_agent_id = NULL", "model = 'm'",
    "model = CAST('m' AS BLOB)", "tool_name = NULL", "tool_name = 'Bash'", "tool_category = NULL",
    "tool_category = 'web'", "tool_call_id = tool_call_id || 'x'", "tool_call_id = NULL",
    "tool_call_id = 'c'", "path_logical = 'x'", "path_relative = NULL", "paths_json = NULL",
    "path_objects_json = path_objects_json || ' '", "path_objects_json = NULL",
    "path_objects_json = CAST(path_objects_json AS BLOB)", "outcome_status = NULL", "outcome_status = 'success'",
    "outcome_class = 'c'", "exit_code = 1.5", "exit_code = '2'", "exit_code = exit_code + 1", "exit_code = NULL",
    "duration_ms = duration_ms + 1", "duration_ms = 3.5", "duration_ms = '7'", "duration_ms = NULL",
    "attrs_json = attrs_json || ' '", "attrs_json = CAST(attrs_json AS BLOB)", "attrs_json = '{}'",
    "content_json = NULL", "content_json = CAST(content_json AS BLOB)", "content_json = content_json || char(0)",
    "content_json = '{}'", "raw_json = NULL", "raw_json = replace(raw_json, 'x', 'y')",
    "raw_json = CAST(x'7bff7d' AS TEXT)", "unknown_json = '{\"x_a\":1}'", "unknown_json = NULL",
    "unknown_json = '{}'", "content_ref = 'r'", "raw_ref = x'00'", "retracted = 1",
    "event_hash = upper(event_hash)", "event_hash = 'zz'", "chain_hash = upper(chain_hash)",
    "chain_hash = NULL", "chain_hash = 5",
]


@pytest.mark.parametrize("sql", EDITS)
@pytest.mark.parametrize("seq", [1, 47, 63, 77, 88])
def test_any_edit_of_a_row_gets_the_report_check_rows_gives(copy, sql, seq):
    try:
        edit(copy, f"UPDATE events SET {sql} WHERE seq = {seq}")
    except apsw.ConstraintError:
        pytest.skip("a NOT NULL column")
    exact, bulk, passed = both(copy)
    assert bulk == exact and passed == (exact[1] is None)  # never passes what check_rows does not
    # the same edit made consistent by rehashing: check_rows may now pass the row, and so must the bulk check
    edit(copy, "SELECT 1", rehash_from=seq)
    exact, bulk, passed = both(copy)
    assert bulk == exact and passed == (exact[1] is None)


_EXPANDED = "(SELECT raw_json FROM event_payloads p WHERE p.seq = events.seq)"
MOVES = {
    # the raw payload taken into content_json after it
    "content takes raw": ("content_json IS NOT NULL AND raw_json IS NOT NULL AND unknown_json IS NULL",
                          f"content_json = content_json || ',\"raw\":' || {_EXPANDED}, raw_json = NULL"),
    # the content taken into attrs_json (the payload expanded: its references point into content)
    "attrs takes content": ("attrs_json != '{}' AND content_json IS NOT NULL AND unknown_json IS NULL",
                            f"attrs_json = attrs_json || ',\"content\":' || content_json, content_json = NULL, "
                            f"raw_json = {_EXPANDED}"),
    # the payload's tail given to the unknown fields after it (which now end with the line's brace)
    "raw gives its tail to the unknown fields": (
        "raw_json IS NOT NULL AND unknown_json IS NULL",
        f"raw_json = substr({_EXPANDED}, 1, instr({_EXPANDED}, ',') - 1), "
        f"unknown_json = '{{' || substr({_EXPANDED}, instr({_EXPANDED}, ',') + 1) || '}}'"),
    # the unknown x_ fields taken into the raw payload before them
    "raw takes the unknown fields": ("raw_json IS NOT NULL AND unknown_json IS NOT NULL",
                                     f"raw_json = {_EXPANDED} || ',' || substr(unknown_json, 2, length(unknown_json) - 2), "
                                     "unknown_json = NULL"),
}


@pytest.mark.parametrize("move", sorted(MOVES))
def test_text_moved_between_json_columns_keeps_the_hash_but_not_the_verdict(copy, capsys, move):
    where, sets = MOVES[move]
    conn = apsw.Connection(copy)
    seq = conn.execute(f"SELECT min(seq) FROM events WHERE {where}").fetchone()[0]
    before = event.line_from_row(conn.execute(chain.SELECT_RANGE, (seq, seq + 1)).fetchone()[1:chain.NCOL + 1])
    conn.close()
    edit(copy, f"UPDATE events SET {sets} WHERE seq = {seq}")
    conn = apsw.Connection(copy)
    row = conn.execute(chain.SELECT_RANGE, (seq, seq + 1)).fetchone()
    conn.close()
    assert event.line_from_row(row[1:chain.NCOL + 1]) == before  # the same bytes: the hash alone cannot tell
    exact, bulk, passed = both(copy)
    assert exact[1]["kind"] == "json_column" and exact[1]["seq"] == seq
    assert bulk == exact and not passed
    code, rep = _verify_json(copy, capsys)
    assert code != 0 and rep["problems"][0]["kind"] == "json_column" and rep["problems"][0]["seq"] == seq


@pytest.mark.parametrize("sql", ["DELETE FROM events WHERE seq = 30",
                                 "UPDATE events SET seq = seq + 100 WHERE seq = 88",
                                 "UPDATE events SET seq = 1000 WHERE seq = 1",
                                 "UPDATE events SET seq = -1 WHERE seq = 20; UPDATE events SET seq = 20 WHERE seq = 21; "
                                 "UPDATE events SET seq = 21 WHERE seq = -1"])
def test_rows_deleted_moved_or_swapped_get_the_report_check_rows_gives(copy, sql):
    edit(copy, sql)
    exact, bulk, passed = both(copy)
    assert bulk == exact and exact[1] is not None and not passed


_TEXT_COLUMNS = [c for c in event.COLUMNS if c not in (
    "schema_version", "source_seq", "hlc", "exit_code", "duration_ms", "attrs_json")]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(column=st_.sampled_from(_TEXT_COLUMNS), seq=st_.integers(1, 88),
       value=st_.one_of(st_.none(), st_.text(st_.characters(blacklist_categories=("Cs",)), max_size=12),
                        st_.integers(-3, 3), st_.binary(max_size=4)),
       rehash=st_.booleans())
def test_any_value_in_any_text_column_gets_the_report_check_rows_gives(pristine, tmp_path_factory, column, seq,
                                                                       value, rehash):
    db = str(tmp_path_factory.mktemp("h") / "h.db")
    shutil.copyfile(pristine, db)
    conn = apsw.Connection(db)
    saved = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"))
    try:
        with conn:
            for name in saved:
                conn.execute(f"DROP TRIGGER {name}")
            conn.execute(f"UPDATE events SET {column} = ? WHERE seq = ?", (value, seq))
            for s in saved.values():
                conn.execute(s)
    except apsw.ConstraintError:
        return
    finally:
        conn.close()
    if rehash:
        edit(db, "SELECT 1", rehash_from=seq)
    exact, bulk, passed = both(db)
    assert bulk == exact and passed == (exact[1] is None)


# --- verify's worker processes ------------------------------------------------------------------

def _verify_json(db: str, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = run(["verify", "--db", db, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _in(home: str, mp) -> None:
    mp.setenv("HOME", home)
    for var, sub in (("XDG_DATA_HOME", ".local/share"), ("XDG_STATE_HOME", ".local/state"), ("XDG_CONFIG_HOME", ".config")):
        mp.setenv(var, os.path.join(home, sub))


@pytest.fixture(scope="module")
def large_pristine(tmp_path_factory):
    """A file of 3000 synthetic events with its Merkle tree and a signed checkpoint inside the
    chain (its key in a home of its own)."""
    root = tmp_path_factory.mktemp("large")
    home, db = str(root / "home"), str(root / "large.db")
    os.makedirs(home)
    with pytest.MonkeyPatch.context() as mp:
        _in(home, mp)
        st = Store.open(db)
        evs = list(synth.generate(3000, seed=5, device_id=st.device_id))
        st.append(evs[:1234])
        key, _ = keys.create(st.device_id)
        st.set_meta("public_key", key.public_b64)
        checkpoint.create(st, key)
        st.append(evs[1234:])
        st.close()
    return home, db


@pytest.fixture
def large(large_pristine, tmp_path, monkeypatch):
    """A copy of it, verified by two worker processes in 8 ranges."""
    home, pristine_db = large_pristine
    db = str(tmp_path / "large.db")
    shutil.copyfile(pristine_db, db)
    _in(home, monkeypatch)
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 100)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return db


def test_workers_pass_an_untouched_file_with_its_merkle_heads_as_one_process_does(large, capsys, monkeypatch):
    code, rep = _verify_json(large, capsys)
    assert code == 0 and rep["ok"] and rep["events"] == 3000 and rep["checkpoints"] == 1, rep
    assert not any("Merkle" in n for n in rep["notes"])
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 10**9)
    assert _verify_json(large, capsys) == (code, rep)


@pytest.mark.parametrize("target", [1, 375, 376, 1234, 1235, 2250, 2624, 2999, 3000])
def test_a_tampered_row_in_any_workers_range_is_found_as_one_process_finds_it(large, capsys, monkeypatch, target):
    edit(large, f"UPDATE events SET attrs_json = replace(attrs_json, '\"', '\"') || ' ' WHERE seq = {target}")
    code, rep = _verify_json(large, capsys)
    assert code == 1 and rep["problems"][0]["seq"] == target and rep["problems"][0]["kind"] == "event_hash", rep
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 10**9)
    assert _verify_json(large, capsys) == (code, rep)
    monkeypatch.setattr(bulkcheck, "MIN_ROWS", 10**9)  # and check_rows alone, row by row
    assert _verify_json(large, capsys) == (code, rep)


def test_a_broken_link_and_a_merkle_node_are_found_by_the_workers_as_by_one_process(large, capsys, monkeypatch):
    edit(large, "UPDATE events SET chain_hash = upper(chain_hash) WHERE seq = 1501")
    code, rep = _verify_json(large, capsys)
    assert code == 1 and rep["problems"][0]["kind"] == "chain" and rep["problems"][0]["seq"] == 1501, rep
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 10**9)
    assert _verify_json(large, capsys) == (code, rep)
    edit(large, "UPDATE events SET chain_hash = lower(chain_hash) WHERE seq = 1501")
    conn = apsw.Connection(large)
    conn.execute("UPDATE merkle_nodes SET hash = zeroblob(32) WHERE level = 8 AND idx = 7")
    conn.close()
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 100)
    code, rep = _verify_json(large, capsys)
    assert code == 1 and rep["problems"][0]["kind"] == "merkle_node", rep
    monkeypatch.setattr(verify_mod, "PARALLEL_MIN", 10**9)
    assert _verify_json(large, capsys) == (code, rep)


def test_digests_handed_in_any_chunks_make_the_tree_one_leaf_at_a_time_does():
    hexes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3000)]
    cuts = [1, 255, 256, 257, 1000, 2048, 2999]
    one = merkle.Accumulator(0, cuts)
    for h in hexes:
        one.add(h)
    for sizes in ([3000], [1, 255, 256, 2488], [700] * 5):
        acc = merkle.Accumulator(0, cuts)
        i = 0
        for n in sizes:
            acc.add_digests([bytes.fromhex(h) for h in hexes[i:i + n]])
            i += n
        assert acc.result() == one.result()
