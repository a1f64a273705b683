"""Terminal output that fits (issue 17 item 3): at COLUMNS=80 no line of `failures`,
`query 'SHOW FAILED ATTEMPTS'`, `SHOW SESSIONS` or `timeline` is longer than 80 characters,
and every id printed resolves back (as `why`/`trace` resolve it) to the row it stands for;
timestamps are never cut; `timeline --turns N` caps the turns of each session."""

import glob
import json
import os
import re

import pytest
import scenario_db
from conftest import run_attempt

from attemptdb import adapters
from attemptdb.model import clock, ids
from attemptdb.query import resolve
from attemptdb.render import termtable
from attemptdb.store.database import Store
from attemptdb.store.readonly import connect

ID = re.compile(r"\b(?:att|ses|trn|tc|wu|ev)_[0-9a-f][0-9a-f-]{7,35}")
SCENARIOS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "scenarios", "*.json")))


@pytest.fixture(scope="module")
def scen(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("term") / "all.db")
    scenario_db.build(path, *SCENARIOS)
    return path


def attempt(args, db, width="80", **env):
    p = run_attempt(list(args) + ["--db", db], env=dict({"COLUMNS": width, "NO_COLOR": "1", "TZ": "UTC"}, **env))
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr.decode()
    return p.stdout.decode()


def assert_fits(out: str, width: int = 80):
    long = [line for line in out.splitlines() if len(line) > width]
    assert not long, f"{len(long)} line(s) wider than {width}: {long[:3]}"


def assert_ids_resolve(db, out: str, full: set):
    """Every id printed resolves (resolve.resolve_id, the lookup behind why/trace/EVIDENCE FOR) to
    exactly one row, and that row is one the listing stood for (its --json form lists it)."""
    printed = set(ID.findall(out))
    assert printed
    conn, _ = connect(db)
    try:
        for short in printed:
            _, found = resolve.resolve_id(conn, None, short, live=False)
            assert found.startswith(short) and found in full, (short, found)
    finally:
        conn.close()
    return printed


def test_failures_fit_80_columns_and_ids_resolve(scen):
    out = attempt(["failures", "-n", "1000"], scen)
    assert_fits(out)
    data = json.loads(attempt(["failures", "-n", "1000", "--json"], scen))
    full = {r["attempt_id"] for r in data["failures"]} | {r["superseded_by"] for r in data["failures"]}
    printed = assert_ids_resolve(scen, out, full)
    assert {p for p in printed if p.startswith("att_")}
    rows = [line for line in out.splitlines() if line.startswith("att_")]
    assert len(rows) == len(data["failures"])
    # the start times are whole values, never cut
    starts = [re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line) for line in rows]
    assert all(starts)
    # the header and the rule line up
    lines = out.splitlines()
    starts = [m.start() for m in re.finditer(r"-+", lines[1])]
    assert [m.start() for m in re.finditer(r"\S+", lines[0])] == starts
    assert all(line[starts[1]:starts[1] + 4] == "2026" for line in rows)


def test_query_failed_attempts_and_sessions_fit_80_columns(scen):
    for stmt, key in (("SHOW FAILED ATTEMPTS", "attempt_id"), ("SHOW SESSIONS", "session_id")):
        out = attempt(["query", stmt], scen)
        assert_fits(out)
        rows = json.loads(attempt(["query", stmt, "--json"], scen))
        full = {r[key] for r in rows} | {r.get("superseded_by") for r in rows}
        printed = assert_ids_resolve(scen, out, full)
        assert {p for p in printed if p.startswith(key[:3])} and len(out.splitlines()) > len(rows)
        # every timestamp printed is whole: RFC 3339 to the second at least, never cut
        for line in out.splitlines()[2:2 + len(rows)]:
            for t in re.findall(r"\d{4}-\d\d-\d\dT[\d:.]*Z?", line):
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z", t), line
    # this database holds two sessions whose ids share their first 8 hex digits (and more):
    # their short forms are longer, and each still names its own session
    out = attempt(["query", "SHOW SESSIONS"], scen)
    longer = [s for s in ID.findall(out) if s.startswith("ses_") and len(s) > len("ses_") + 8]
    assert len(longer) >= 2
    for s in longer[:2]:
        why = json.loads(attempt(["why", s, "--json"], scen))
        assert why and all(r["subject_id"].startswith(s) for r in why)


def test_timeline_fits_80_columns_and_ids_resolve(scen):
    for args in (["timeline", "-n", "100"], ["timeline", "-n", "100", "--tools"], ["timeline", "--units", "-n", "100"]):
        out = attempt(args, scen)
        assert_fits(out)
    out = attempt(["timeline", "-n", "100"], scen)
    data = json.loads(attempt(["timeline", "-n", "100", "--json"], scen))
    full = {s["session_id"] for s in data["sessions"]}
    full |= {a[k] for s in data["sessions"] for t in s["turns"] for a in t["attempts"]
             for k in ("attempt_id", "superseded_by") if a[k]}
    full |= {h[k] for h in data["handoffs"] for k in ("from_session", "to_session")}
    printed = assert_ids_resolve(scen, out, full)
    # the user's commands take them back: why on an attempt, trace on a session
    att = next(p for p in sorted(printed) if p.startswith("att_"))
    ses = next(p for p in sorted(printed) if p.startswith("ses_"))
    assert att in attempt(["why", att], scen)
    assert json.loads(attempt(["trace", ses, "--json"], scen)) is not None
    ev = json.loads(attempt(["query", f"SHOW EVIDENCE FOR {att}", "--json"], scen))
    assert ev and all(r["event_id"].startswith("ev_") for r in ev)


def test_fit_never_cuts_ids_or_times():
    full = "att_0123abcd-1111-5222-8333-444455556666"
    rows = [[full, "2026-08-28T09:12:04.123456Z", "x" * 70, "12"]]
    lines, hidden = termtable.fit(["attempt_id", "started_at", "approach", "n"], rows, 60,
                                  shorten={full: "att_0123abcd"})
    assert all(len(x) <= 60 for x in lines) and not hidden
    assert "att_0123abcd " in lines[2] and "2026-08-28T09:12:04Z" in lines[2] and "…" in lines[2]
    assert len(lines[0]) <= len(lines[1])  # the rule spans the header
    # without a vouched-for short form the id stays whole; columns that cannot fit are named
    lines, hidden = termtable.fit(["attempt_id", "started_at", "approach", "n"], rows, 60)
    assert full in lines[2] and lines[2].startswith(full) and {"n", "approach"} <= set(hidden)
    assert all(len(x) <= 60 for x in lines)
    assert termtable.hidden_note(hidden, 60)[0].startswith("(not shown at 60 columns:")


def test_terminal_width_reads_columns_then_defaults_to_80(monkeypatch):
    monkeypatch.setenv("COLUMNS", "132")
    assert termtable.terminal_width() == 132
    monkeypatch.delenv("COLUMNS")

    class Pipe:
        def isatty(self):
            return False
    assert termtable.terminal_width(Pipe()) == 80


def test_plurals():
    assert termtable.plural(1, "turn") == "1 turn" and termtable.plural(0, "turn") == "0 turns"
    assert termtable.plural(2, "tool call") == "2 tool calls"


@pytest.mark.parametrize("n,text", [(0, "0 bytes"), (1, "1 byte"), (1023, "1023 bytes"), (1024, "1.0 KiB"),
                                    (41_267, "40.3 KiB"), (16_851_048, "16.1 MiB"), (3_819_585_536, "3.56 GiB"),
                                    (50 << 30, "50.0 GiB")])
def test_sizes_read_as_people_read_them(n, text):
    assert termtable.size_text(n) == text


def test_status_shows_the_file_and_its_wal_in_units(scen):
    out = attempt(["status"], scen)
    line = next(ln for ln in out.splitlines() if ln.startswith("on disk"))
    assert re.fullmatch(r"on disk {7}\d+\.\d (KiB|MiB|GiB) · WAL (\d+ bytes|\d+\.\d+ (KiB|MiB|GiB))"
                        r"( \(the WAL's space is reused\))?", line), line


TURN_LINE = re.compile(r"^  \d\d:\d\d:\d\d turn \d+ ", re.M)
DEV = ids.derive("dev_", "term-tests")
PROJ = ids.project_identity("/work/long", "github.com/acme/long", DEV)


def _claude(name, at_us, **kw):
    ctx = adapters.Context(DEV, "local_semantic", PROJ, at_us, hook_version="t")
    return adapters.build_event("claude_code", dict(hook_event_name=name, session_id="long", cwd="/work/long", **kw),
                                None, ctx)


def test_timeline_caps_turns_per_session(tmp_path):
    db = str(tmp_path / "long.db")
    t0 = clock.from_iso("2026-08-28T09:00:00.000000Z")
    evs = []
    for i in range(25):
        evs.append(_claude("UserPromptSubmit", t0 + i * 60_000_000, prompt=f"step {i + 1}"))
        evs.append(_claude("Stop", t0 + i * 60_000_000 + 5_000_000))
    st = Store.open(db)
    st.append(evs)
    st.close()
    out = attempt(["timeline"], db)
    assert "25 turns" in out and "… 5 earlier turns not shown (--turns N shows more)" in out
    assert "turn 6 " in out and "turn 5 " not in out and len(TURN_LINE.findall(out)) == 20
    out = attempt(["timeline", "--turns", "24"], db)
    assert "… 1 earlier turn not shown" in out and len(TURN_LINE.findall(out)) == 24
    out = attempt(["timeline", "--turns", "30"], db)
    assert "earlier turn" not in out and len(TURN_LINE.findall(out)) == 25
    data = json.loads(attempt(["timeline", "--json", "--turns", "3"], db))
    assert data["sessions"][0]["more_turns"] == 22 and len(data["sessions"][0]["turns"]) == 3


def test_unfinished_turn_of_a_stale_session_reads_no_stop_seen(tmp_path):
    """A headless transcript's last turn never stopped: once its session went stale the timeline
    says no stop was seen, not that it is in progress."""
    db = str(tmp_path / "stale.db")
    t0 = clock.from_iso("2026-08-28T09:00:00.000000Z")
    st = Store.open(db)
    st.append([_claude("UserPromptSubmit", t0, prompt="first"), _claude("Stop", t0 + 1_000_000),
               _claude("UserPromptSubmit", t0 + 2_000_000, prompt="second, never stopped")])
    st.close()
    out = attempt(["timeline"], db)
    assert "→ stale" in out
    assert "turn 2  no stop seen  second, never stopped" in out and "in progress  second" not in out
    assert "turn 1  completed  first" in out


def test_the_other_read_views_fit_80_columns(scen):
    att = json.loads(attempt(["failures", "--json"], scen))["failures"][0]["attempt_id"]
    for args in (["needs-you"], ["events", "-n", "300"], ["status"], ["why", att], ["handoffs"],
                 ["query", "SHOW WORK UNITS"], ["timeline", "--units", "--tools", "-n", "50"]):
        assert_fits(attempt(args, scen))
    out = attempt(["needs-you"], scen)
    data = json.loads(attempt(["needs-you", "--json"], scen))
    full = {r[k] for r in data["needs_you"] for k in ("session_id", "work_unit_id") if r[k]}
    full |= {i for r in data["needs_you"] for i in ID.findall(r["reason"])}  # a conflict names both units
    assert_ids_resolve(scen, out, full)


# The shapes a table column is classified by (and shortids.is_id) are written out, not regular
# expressions (a cold read does not import `re`). They agree with the patterns they replaced on
# every ASCII value without a line break; `$` would also have let one trailing newline through,
# and `\d` any Unicode digit: both are now refused.
_WAS = {
    termtable.is_time: r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?Z?",
    termtable.is_number: r"[-+]?\d+(\.\d+)?(e[-+]\d+)?%?",  # the exponent: how a table writes a decimal
    termtable.is_id_like: r"[a-z]{2,4}_[0-9a-f]{8}(-?[0-9a-f]+)*",
}
_ID_WAS = r"[a-z]{2,4}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _near(seed: str, rnd) -> str:
    """`seed` with a few characters changed, dropped or added, from the shapes' own alphabet."""
    alphabet = "0123456789abcdefgzA-_:.+%TZ /\u0663\n"
    s = list(seed)
    for _ in range(rnd.randint(0, 3)):
        op = rnd.randint(0, 2)
        at = rnd.randint(0, len(s))
        if op == 0 and s:
            s[min(at, len(s) - 1)] = rnd.choice(alphabet)
        elif op == 1 and s:
            del s[min(at, len(s) - 1)]
        else:
            s.insert(at, rnd.choice(alphabet))
    return "".join(s)


def test_written_out_shapes_agree_with_the_patterns_they_replaced():
    import random

    from attemptdb.query import shortids
    rnd = random.Random(19)
    seeds = ["2026-12-07T06:10:24Z", "2026-12-07 06:10", "2026-12-07T06:10:24.123456Z", "12", "-3.5%", "+7", "1.23456789012346e+29",
             "ses_0123abcd", "att_01234567-89ab-cdef-0123-456789abcdef", "tc_89abcdef-0", "wu_abcdef01-2-3", "", "-"]
    checked = 0
    for seed in seeds:
        for _ in range(3000):
            v = _near(seed, rnd)
            plain = v.isascii() and "\n" not in v
            for shape, pattern in _WAS.items():
                assert shape(v) == (plain and re.fullmatch(pattern, v) is not None), (shape.__name__, v)
            assert shortids.is_id(v) == (plain and re.fullmatch(_ID_WAS, v) is not None), v
            checked += 1
    assert checked == 3000 * len(seeds)
    assert not termtable.is_time("2026-12-07T06:10\n") and not termtable.is_number("\u0663")


def test_lines_of_wraps_as_textwrap_does():
    import random
    import textwrap
    rnd = random.Random(7)
    pieces = ["a", "word", "longerword", "x" * 25, " ", "  ", "\t", "\n", "\u00a0", "-", "id_0123-4567", "é", "\r"]
    checked = 0
    for _ in range(4000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 14)))
        width = rnd.randint(1, 30)
        indent = rnd.choice(["", "  ", "    "])
        for long_words in (True, False):
            want = textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False,
                                 break_long_words=long_words)
            assert termtable.lines_of(text, width, indent=indent, break_long_words=long_words) == want, \
                (text, width, indent, long_words)
            checked += 1
    assert checked == 8000
    with pytest.raises(ValueError):
        termtable.lines_of("a", 0)
