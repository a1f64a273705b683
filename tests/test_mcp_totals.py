"""`attempt mcp` tells an agent the truth about what it left out: `truncated` whenever rows
exist past what the answer holds (a SHOW's own LIMIT included), `total` only when every row was
counted; `timeline` in its own terms, its attempts those of exactly the turns it shows; and a
call the client cancels stops at once, the next call answering without waiting for it. Driven
through the MCP SDK's own client over the stdio of a real `attempt mcp` process."""

import json
import os
import time

import anyio
import pytest
import scenario_db
from conftest import ROOT, attempt_cmd

from attemptdb.readers import bounded, mcp_server

pytest.importorskip("mcp", reason="the mcp extra is part of the test extra")

TURNS = 230  # more than an answer holds (200), and than the old LIMIT 201
SMALL_TURNS = 3
LONG = ("WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 1e9) "
        "SELECT count(*) AS n FROM x")


def _hms(seconds: int) -> str:
    return f"-{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _turn(i: int, session: str, project: str, *, start: int, tools: int = 1) -> list:
    """One turn, `start` seconds before now less 10 s a call for each turn before it: a prompt,
    then `tools` Bash calls that each run and fail (an attempt each)."""
    base = start - i * 10 * (tools + 1)
    out = [{"at": _hms(base), "session": session,
            "project": project, "payload": {"hook_event_name": "UserPromptSubmit", "prompt": f"step {i}"}}]
    for k in range(tools):
        for j, (hook, extra) in enumerate((("PreToolUse", {}), ("PostToolUseFailure", {"error": "Exit code 1"}))):
            out.append({"at": _hms(base - 1 - 2 * k - j), "session": session,
                        "project": project,
                        "payload": dict({"hook_event_name": hook, "tool_name": "Bash", "tool_use_id": f"t{i}-{k}",
                                         "tool_input": {"command": f"make step{i}-{k}"}}, **extra)})
    return out


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """Project acme/plain-shop: one session of TURNS turns; project acme/tiny: SMALL_TURNS turns
    of four attempts each."""
    path = str(tmp_path_factory.mktemp("mcp-totals") / "attempt.db")
    events = [{"at": "-10:00:05", "session": "shop-1", "project": "shop",
               "payload": {"hook_event_name": "SessionStart", "source": "startup"}}]
    for i in range(TURNS):
        events += _turn(i, "shop-1", "shop", start=10 * 3600)
    events.append({"at": "-00:30:00", "session": "tiny-1", "project": "tiny",
                   "payload": {"hook_event_name": "SessionStart", "source": "startup"}})
    for i in range(SMALL_TURNS):
        events += _turn(i, "tiny-1", "tiny", start=40 * 60, tools=4)
    scenario_db.build(path, {"name": "many_turns", "description": "many turns", "date": "now",
                             "projects": {"shop": {"root": "/work/plain-shop", "remote": "github.com/acme/plain-shop"},
                                          "tiny": {"root": "/work/tiny", "remote": "github.com/acme/tiny"}},
                             "events": events})
    return path


def _env(home):
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONPATH": ROOT, "ATTEMPTDB_NO_DAEMON": "1"}


async def _client(db, home, body):
    """Run `body(session)` against a real `attempt mcp` through the SDK's stdio client."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    cmd = attempt_cmd()
    params = StdioServerParameters(command=cmd[0], args=cmd[1:] + ["mcp", "--db", db], env=_env(home))
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def talk(db, home, calls):
    async def body(session):
        return [(await session.call_tool(name, args)).structured_content for name, args in calls]
    return anyio.run(_client, db, home, body)


def test_a_show_whose_own_limit_stopped_the_read_says_truncated_and_no_total(shop, home):
    stmt = "SHOW TURNS FOR project = 'acme/plain-shop'"
    default, wide, exact, few, sql = talk(shop, home, [
        ("query", {"statement": stmt}),
        ("query", {"statement": stmt + " LIMIT 1000"}),
        ("query", {"statement": stmt + f" LIMIT {TURNS}"}),
        ("query", {"statement": "SHOW TURNS FOR project = 'acme/tiny'"}),
        ("query", {"statement": "SELECT turn_id FROM turns"})])
    # the default LIMIT 100 stopped the read: 230 turns exist (the answer holds as many of the 100
    # as fit in an agent's context, and says so)
    assert 0 < default["row_count"] < 100 and default["truncated"] is True and default["total"] is None, default
    assert not any("LIMIT 1000" in n for n in default["notes"]), default["notes"]
    assert any("LIMIT 100 stopped the read" in n and "LIMIT 200" in n for n in default["notes"]), default["notes"]
    assert any(f"fit in an answer of {mcp_server.ANSWER_CHARS} characters" in n for n in default["notes"])
    # LIMIT 1000 read every turn: the total is known, the answer holds what fits of them
    assert wide["row_count"] == default["row_count"] and wide["truncated"] is True and wide["total"] == TURNS, wide
    # as many rows as the LIMIT allows, and no more exist: the total is exact
    assert exact["truncated"] is True and exact["total"] == TURNS, exact
    assert not any("stopped the read" in n or "showing the first" in n for n in exact["notes"]), exact["notes"]
    # fewer rows than the LIMIT: every row, counted
    assert few["row_count"] == SMALL_TURNS and few["truncated"] is False and few["total"] == SMALL_TURNS, few
    assert sql["row_count"] == 200 and sql["truncated"] is True and sql["total"] is None


def test_the_limit_probe_is_made_only_of_the_statement_itself():
    """The probe reads the same SHOW with one more row: its LIMIT's digits replaced, or a LIMIT
    added after a terminator or a comment."""
    for text, probe in (("SHOW TURNS LIMIT 99 SINCE '-1d'", "SHOW TURNS LIMIT 100 SINCE '-1d'"),
                        ("SHOW TURNS; -- all of them", "SHOW TURNS\nLIMIT 101"),
                        ("SHOW TURNS -- all of them", "SHOW TURNS -- all of them\nLIMIT 101")):
        show = bounded.parsed_show(text)
        limit = 100 if show.limit is None else show.limit
        assert bounded.with_limit(text, show, limit + 1) == probe
    assert bounded.parsed_show("EXPLAIN SHOW TURNS") is None and bounded.parsed_show("SELECT 1") is None


def test_timeline_says_older_turns_are_left_out_in_its_own_terms(shop, home):
    full, tiny = talk(shop, home, [("timeline", {"project": "acme/plain-shop"}), ("timeline", {"project": "acme/tiny"})])
    # as many of the newest 200 turns, with their attempts, as fit in an agent's context
    assert 0 < full["row_count"] < 200 and full["truncated"] is True and full["total"] is None, \
        {k: full[k] for k in ("row_count", "truncated", "total", "notes")}
    assert len(json.dumps(full)) <= mcp_server.ANSWER_CHARS + 2 * mcp_server.VALUE_CHARS
    notes = full["notes"]
    assert len(notes) == len(set(notes)), notes
    assert not any("LIMIT" in n for n in notes), notes
    assert any("older turns are left out" in n and "`since`" in n for n in notes), notes
    # the attempts of exactly the turns shown, every one of them
    assert all(len(t["attempts"]) == 1 and t["attempts_complete"] for t in full["rows"])
    assert full["attempt_count"] == full["row_count"]
    assert tiny["row_count"] == SMALL_TURNS and tiny["truncated"] is False and tiny["total"] == SMALL_TURNS
    assert [len(t["attempts"]) for t in tiny["rows"]] == [4] * SMALL_TURNS


def test_timeline_says_which_turns_attempts_were_capped(shop, home, monkeypatch):
    monkeypatch.setattr(mcp_server, "MAX_TIMELINE_ATTEMPTS", 6)
    got = mcp_server.Reader(shop).call("timeline", {"project": "acme/tiny"})
    assert got["truncated"] is True and got["attempt_count"] == 6
    newest, middle, oldest = got["rows"]
    assert [len(t["attempts"]) for t in got["rows"]] == [4, 2, 0]
    assert newest["attempts_complete"] and not middle["attempts_complete"] and not oldest["attempts_complete"]
    assert any("attempts of 2 turn(s) may be incomplete" in n for n in got["notes"]), got["notes"]


def test_a_cancelled_long_query_stops_and_the_next_call_answers_at_once(shop, home):
    async def body(session):
        started = time.monotonic()
        with anyio.move_on_after(1.0):
            await session.call_tool("query", {"statement": LONG})
        cancelled_at = time.monotonic()
        quick = await session.call_tool("query", {"statement": "SELECT 42 AS n"})
        return cancelled_at - started, time.monotonic() - cancelled_at, quick.structured_content

    waited, next_took, quick = anyio.run(_client, shop, home, body)
    assert waited < 3, waited
    assert quick["rows"] == [{"n": 42}], quick
    assert next_took < 5, f"the call after a cancelled one waited {next_took:.1f} s"


def test_a_reader_call_interrupted_from_another_thread_is_cancelled_and_the_next_runs(shop):
    import threading
    r = mcp_server.Reader(shop)
    cancel, out = threading.Event(), {}

    def long_call():
        try:
            r.call("query", {"statement": LONG}, cancel)
        except Exception as e:
            out["error"] = mcp_server.error_payload(e)

    t = threading.Thread(target=long_call)
    t.start()
    time.sleep(0.5)
    started = time.monotonic()
    while t.is_alive() and time.monotonic() - started < 10:
        r.interrupt(cancel)
        t.join(0.05)
    assert not t.is_alive() and time.monotonic() - started < 3
    assert out["error"]["code"] == "AQL0503", out
    assert r.call("query", {"statement": "SELECT 42 AS n"})["rows"] == [{"n": 42}]
    # a call not yet begun when cancelled never runs
    with pytest.raises(Exception) as e:
        r.call("query", {"statement": "SELECT 1"}, cancel)
    assert mcp_server.error_payload(e.value)["code"] == "AQL0503"


def test_every_answer_fits_an_agents_context(shop):
    """Claude Code refuses a tool answer over 25,000 tokens and files one over 50,000 characters
    away: every tool's text (what the client gets) stays within ANSWER_CHARS and the envelope,
    on a history of 230 turns, and says what it left out."""
    r = mcp_server.Reader(shop)
    calls = [("query", {"statement": "SHOW ATTEMPTS LIMIT 1000"}), ("query", {"statement": "SHOW TURNS LIMIT 200"}),
             ("query", {"statement": "SELECT * FROM events LIMIT 200"}), ("timeline", {"project": "acme/plain-shop"}),
             ("needs_you", {}), ("schema", {}), ("schema", {"table": "events"})]
    for name, args in calls:
        out = r.call(name, args)
        text = mcp_server.terminal_safe_json(out)
        assert len(text) <= mcp_server.ANSWER_CHARS + 8_000, (name, args, len(text))
        if name in ("query", "timeline"):
            assert out["truncated"] is True and any("fit in an answer" in n for n in out["notes"]), (name, out["notes"])
    listing = r.call("schema", {})["catalog"]
    events = next(t for t in listing["tables"] if t["name"] == "events")
    assert "seq" in events["columns"] and "`table`" in listing["columns_described"]
    described = r.call("schema", {"table": "events"})["catalog"]["tables"][0]["columns"][0]
    assert described["name"] == "seq" and described["meaning"]
