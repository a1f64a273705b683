"""The table catalog types an exit code as what the store holds and the Arrow export writes: a
signed 64-bit integer (spec/canonical-event.md "`outcome.exit_code`"). It once said int32, while a
Windows status such as 3221225477 (0xC0000005) is stored, and exported, as it is."""

import json

import pytest
from test_capture import assert_silent, capture

from attemptdb.projections import catalog
from attemptdb.store.database import Store

WINDOWS_ACCESS_VIOLATION = 3221225477


@pytest.fixture(scope="module")
def documented():
    conn = catalog.shipped_schema_connection()
    try:
        yield catalog.build(conn)["tables"]
    finally:
        conn.close()


def test_every_exit_code_column_is_int64(documented):
    found = {(t["name"], c["name"]): c["type"] for t in documented for c in t["columns"]
             if "exit_code" in c["name"]}
    assert {"events", "tool_calls"} <= {t for t, _ in found}
    assert set(found.values()) == {"int64"}, found


@pytest.mark.parametrize("code", [WINDOWS_ACCESS_VIOLATION, -2**63, 2**63 - 1])
def test_a_code_past_int32_is_stored_as_it_is(db, code):
    payload = {"hook_event_name": "PostToolUse", "session_id": "s-exit", "tool_name": "Bash",
               "tool_use_id": "t-exit", "cwd": "/tmp", "tool_input": {"command": "prog.exe"},
               "tool_response": {"stdout": "", "exit_code": code}}
    assert_silent(capture(db, "claude-code", json.dumps(payload).encode()))
    st = Store.open(db, readonly=True)
    try:
        assert st.conn.execute("SELECT exit_code, typeof(exit_code) FROM events").fetchall() == [(code, "integer")]
        assert st.conn.execute("SELECT exit_code, outcome_status FROM tool_calls").fetchall() == [(code, "failure")]
    finally:
        st.close()
