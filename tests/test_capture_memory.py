"""A large prompt costs a capture a few copies of itself, not dozens (migration 0014): the hook
holds the payload as its text once it is parsed, the canonical line is hashed a slice at a time,
and the projection triggers read the prompt's text once per statement that needs it instead of
carrying it through the queue row. Measured as the peak resident size (VmHWM, which exec
starts afresh: the size of the forking test process does not count) of a real capture, the
`attempt` launcher run as bin/attempt runs it, against the same command capturing a short prompt."""

import hashlib
import json
import os
import subprocess
import sys

import apsw
import pytest
from conftest import ROOT

from attemptdb.model import event

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM off /proc (Linux)")

MB = 1_000_000
SIZE = 8 * MB
BOUND = 16
"""Peak growth allowed per byte of prompt. The code before migration 0014 took ~29 bytes per byte
(this 8 MB prompt: 246 MB against 22 MB for a short one); now ~12 (114 against 21): the prompt's
text and its content_json in Python, and in SQLite the bound copy, the events record, and for
each of the two statements that read the text (human_prompt, the turn's objective) the column,
its JSON parse and the extracted text, the objective's record too."""


# bin/attempt, then this process's peak (what it is at exit: the launcher returns, it does not leave)
RUN = ("import sys\n"
       "from attemptdb.launcher import main\n"
       "code = main(sys.argv[1:])\n"
       "hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM:')][0].split()[1]\n"
       "sys.stderr.write('VmHWM ' + hwm + '\\n')\n"
       "sys.exit(code)\n")


def peak_kib(args, data: bytes, env, cwd) -> int:
    """Run the capture `args` with `data` on stdin; it must exit 0 and print nothing. Its peak
    resident size, KiB."""
    p = subprocess.run([sys.executable, "-c", RUN] + args, input=data, capture_output=True, env=env, cwd=cwd,
                       timeout=120)
    assert p.returncode == 0 and p.stdout == b"", p.stderr[-2000:]
    return int(p.stderr.split(b"VmHWM ")[-1].split()[0])


def prompt(session: str, text: str, cwd: str) -> bytes:
    return json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text,
                       "cwd": cwd}).encode()


def test_a_large_prompt_costs_a_capture_a_few_copies_of_itself(tmp_path, db):
    env = dict(os.environ, PYTHONPATH=ROOT, ATTEMPTDB_NO_DAEMON="1")
    args = ["capture", "claude-code", "--db", db]
    cwd = str(tmp_path)
    peak_kib(args, prompt("s1", "hello", cwd), env, cwd)  # the file and its schema
    small = peak_kib(args, prompt("s1", "run the tests again", cwd), env, cwd)
    line = "Fix the failing test in tests/test_x.py, then run \"make check\" again.\n\t"
    text = (line * (SIZE // len(line) + 1))[:SIZE]
    large = peak_kib(args, prompt("s1", text, cwd), env, cwd)
    grew = (large - small) * 1024
    assert grew < BOUND * SIZE, f"a {SIZE // MB} MB prompt: peak {large // 1024} MB, {grew / SIZE:.1f}x its size above a short prompt's"
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:  # stored whole, and projected whole
        got = conn.execute("SELECT t.prompt_chars, length(p.objective) FROM turn_facts t JOIN turn_prompts p "
                           "USING (turn_id) ORDER BY t.turn_index DESC LIMIT 1").fetchone()
        assert got == (SIZE, SIZE)
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 3
        # its event hash is the SHA-256 of its canonical line (hashed a slice at a time)
        row = conn.execute(f"SELECT {', '.join(event.COLUMNS)}, event_hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        assert hashlib.sha256(event.line_from_row(row).encode()).hexdigest() == row[-1]
    finally:
        conn.close()
