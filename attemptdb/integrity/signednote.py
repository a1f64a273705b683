"""The C2SP signed-note envelope that checkpoints and recovery notes share: a body, a blank
line, then signature lines `— <key name> <base64(4-byte key hash || Ed25519 signature)>`.

Invariant: the standard library only (a key object signs; reading a note needs no crypto).
"""

import base64

DASH = "\u2014"


def signed(body: str, key) -> str:
    """`body` (ending in a newline) as a note signed by `key` (keys.DeviceKey)."""
    blob = base64.b64encode(key.note_hash + key.sign(body.encode("utf-8"))).decode("ascii")
    return f"{body}\n{DASH} {key.identity} {blob}\n"


def signatures(lines_text: str) -> list:
    """(signer, key hash, signature) of every well-formed signature line, in order; a line
    that is not one (wrong shape, not base64, wrong length) is skipped."""
    out = []
    for line in lines_text.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == DASH:
            try:
                blob = base64.b64decode(parts[2], validate=True)
            except ValueError:
                continue
            if len(blob) == 68:
                out.append((parts[1], blob[:4], blob[4:]))
    return out
