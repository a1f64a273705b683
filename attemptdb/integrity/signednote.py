"""The C2SP signed-note envelope that checkpoints and recovery notes share: a body, a blank
line, then signature lines `— <key name> <base64(4-byte key hash || Ed25519 signature)>`.

Invariant: the standard library only (a key object signs; reading a note needs no crypto).
"""

import binascii

DASH = "\u2014"


def b64encode(data: bytes) -> str:
    """Standard base64 text of `data`, as the base64 module writes it (that module pulls `re`
    into every read that checks its checkpoints)."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def b64decode(text: str) -> bytes:
    """The bytes of standard base64 text, validated as the base64 module's validate=True does:
    ValueError on anything but the exact alphabet and padding."""
    try:
        data = text.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError("string argument should contain only ASCII characters") from None
    return binascii.a2b_base64(data, strict_mode=True)


def signed(body: str, key) -> str:
    """`body` (ending in a newline) as a note signed by `key` (keys.DeviceKey)."""
    blob = b64encode(key.note_hash + key.sign(body.encode("utf-8")))
    return f"{body}\n{DASH} {key.identity} {blob}\n"


def signatures(lines_text: str) -> list:
    """(signer, key hash, signature) of every well-formed signature line, in order; a line
    that is not one (wrong shape, not base64, wrong length) is skipped."""
    out = []
    for line in lines_text.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == DASH:
            try:
                blob = b64decode(parts[2])
            except ValueError:
                continue
            if len(blob) == 68:
                out.append((parts[1], blob[:4], blob[4:]))
    return out
