"""Identifiers: UUIDv5 derivation under the AttemptDB namespace, UUIDv7 minting, prefixes.

Invariants (reference/capture.md §1.2–1.3): `derive(prefix, *parts)` is a pure function —
name = prefix, then for every part the byte 0x1F and the part's UTF-8, hashed with SHA-1
under NAMESPACE; text form is lowercase hyphenated. Prefixes (`ev_`, `ses_`, …) are the
display and storage form in the database; the Event v1 wire form carries bare UUIDs.
No `uuid`/`hashlib` import: this module is on the hook path.
"""

import os
import time

try:  # C modules directly: `hashlib` (OpenSSL) costs 2–4 ms of start-up on every call
    from _sha1 import sha1 as _sha1
except ImportError:  # pragma: no cover - interpreters without the builtin module
    from hashlib import sha1 as _sha1
try:
    from _sha256 import sha256  # noqa: F401  (Python 3.11; re-exported for the other modules)
except ImportError:  # pragma: no cover - Python ≥ 3.12 names it _sha2
    try:
        from _sha2 import sha256  # noqa: F401
    except ImportError:
        from hashlib import sha256  # noqa: F401

NAMESPACE = "3b9ac08e-7f21-4b1d-8e5a-1c2d9f6e4a77"
_NS_BYTES = bytes.fromhex(NAMESPACE.replace("-", ""))
NIL = "00000000-0000-0000-0000-000000000000"

PREFIXES = ("ev_", "dev_", "prj_", "ses_", "trn_", "spn_", "tc_", "agt_", "att_", "wu_",
            "dec_", "art_", "inf_", "cor_", "cmt_", "cfl_", "id_")


def _fmt(b: bytes) -> str:
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def derive(prefix: str, *parts: str) -> str:
    """UUIDv5 of (prefix, parts…) under the AttemptDB namespace, as bare lowercase text."""
    name = prefix + "".join("\x1f" + p for p in parts)
    d = bytearray(_sha1(_NS_BYTES + name.encode("utf-8", "surrogatepass")).digest()[:16])
    d[6] = (d[6] & 0x0F) | 0x50
    d[8] = (d[8] & 0x3F) | 0x80
    return _fmt(bytes(d))


def uuid7(now_ms: int | None = None) -> str:
    """A fresh UUIDv7: 48-bit Unix milliseconds, then random bits (RFC 9562)."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    r = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    r[6] = (r[6] & 0x0F) | 0x70
    r[8] = (r[8] & 0x3F) | 0x80
    return _fmt(bytes(r))


def is_uuid(text) -> bool:
    """True for lowercase hyphenated UUID text (the wire form)."""
    return (isinstance(text, str) and len(text) == 36
            and text[8] == text[13] == text[18] == text[23] == "-"
            and not (text[:8] + text[9:13] + text[14:18] + text[19:23] + text[24:]).strip("0123456789abcdef"))


def prefix_end(text: str) -> int:
    """Where an id's kind prefix ends: the index of the `_` after 2-4 lowercase ASCII letters
    (`ses_…`, `trn_…`), or -1 when `text` does not begin so."""
    i = text.find("_")
    prefix = text[:i]
    return i if 2 <= i <= 4 and prefix.isascii() and prefix.isalpha() and prefix.islower() else -1


def prefixed(prefix: str, bare: str | None) -> str | None:
    """`ses_` + uuid; None stays None."""
    return None if bare is None else prefix + bare


def bare(text: str | None) -> str | None:
    """Strip a display prefix (`ev_…` → uuid); text without one is returned unchanged."""
    if text is None:
        return None
    i = text.find("_")
    if 0 < i <= 4 and text[: i + 1] in PREFIXES:
        return text[i + 1:]
    return text


MIN_SHORT_HEX = 8
"""The fewest hex digits a short id may have, wherever one is typed (AttemptQL, the read
commands, `attempt correct` and `retract`): what `short` prints."""


def hyphenated(hexpart: str) -> str:
    """Hex digits of an id (a prefix of them) with the hyphens its canonical text has after
    digits 8, 12, 16 and 20: what a short id is matched against (`GLOB '<prefix><this>*'`)."""
    return "".join(("-" if i in (8, 12, 16, 20) else "") + c for i, c in enumerate(hexpart))


def short(prefixed_id: str) -> str:
    """Short display form: prefix + first 8 hex digits (`ev_01a04762`)."""
    i = prefixed_id.find("_")
    return prefixed_id[: i + 1 + 8] if i > 0 else prefixed_id[:8]


# --- identities of the things events are about -------------------------------------------

def session_id(provider: str, provider_session_id: str) -> str:
    return derive("ses_", provider, provider_session_id)


def agent_id(session: str) -> str:
    """Top-level agent of a session (session given as bare uuid text)."""
    return derive("agt_", "session", session)


def subagent_id(session: str, provider_agent_id: str) -> str:
    return derive("agt_", "subagent", session, provider_agent_id)


def tool_event_id(provider: str, provider_session_id: str, kind: str, call_id: str) -> str:
    """Deterministic id of a tool-call event (§5.4): finished and failed share slot tool_call_end."""
    slot = "tool_call_end" if kind in ("tool_call_finished", "tool_call_failed") else kind
    return derive("ev_", "event-v1", provider, provider_session_id, slot, "call:" + call_id)


_UNSAFE = frozenset([chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
                   + list("\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
"""Control characters (C0, DEL, C1) and the line/bidi controls a terminal or a reader could be
fooled by: never part of a project name (DESIGN.md invariant 8)."""


def safe_name(text: str) -> str:
    """`text` with every character of _UNSAFE replaced by U+FFFD (a display name)."""
    if text.isprintable():
        return text
    return "".join("\ufffd" if c in _UNSAFE else c for c in text)


def normalise_remote(remote) -> str | None:
    """Git remote → `host/owner/repo` (lowercase, no scheme, credentials or .git), or None.
    A remote holding a control character (an escape sequence in `.git/config`) is garbage:
    none."""
    if not isinstance(remote, str):
        return None
    r = remote.strip()
    if not r or not r.isprintable():
        return None
    if "://" in r:
        r = r.split("://", 1)[1]
    elif "@" in r:
        r = r.split("@", 1)[1]
    if "@" in r:
        r = r.rsplit("@", 1)[1]
    r = r.replace(":", "/", 1).rstrip("/")
    if r.endswith(".git"):
        r = r[:-4]
    r = r.rstrip("/").lower()
    if r.count("/") < 2:
        return None
    return r


def project_identity(root: str, remote, device_id: str) -> dict:
    """The `project` block: id/name from the normalised remote, else from (device, root)."""
    norm = normalise_remote(remote)
    if norm:
        pid = derive("prj_", "remote", norm)
        name = "/".join(norm.split("/")[-2:])
    else:
        pid = derive("prj_", "root", device_id, root)
        name = [c for c in root.rstrip("/").split("/") if c][-1:] or ["project"]
        name = safe_name(name[0])  # the root itself stays the exact path: it is data, not a label
    out = {"project_id": pid, "root": root, "name": name}
    if norm:
        out["repo_remote"] = norm
    return out
