"""The recovery note: what `attempt recover` declares about a file it rebuilt (spec/recover.md).

A recovered file keeps every row that still verifies with its original seq, event hash and
chain hash: nothing is re-chained, so every signed checkpoint of the rows kept still holds.
The rows that were lost leave gaps in `seq`. The note, signed with the device key and stored in
`meta` (key `recovery`), names each gap and *pins* the row after it (its seq, event hash and
chain hash): its link into the lost row before it cannot be recomputed, so the signature stands
in for it. A gap at the end (the newest rows were lost) has no pin; rows appended later start
after it (`meta.seq_floor`) and link to the last row kept, as any row does. The note also names
the device's last signed checkpoint when it was made, which may end in a lost row.

```
attemptdb.local/<device uuid>
recovery v1
signed <size> <head hex | ->
lost <lo> <hi> <pin seq>:<event hash>:<chain hash> | lost <lo> <hi> -
time <ISO-8601 UTC>

— id_<fingerprint> <base64(key hash ‖ Ed25519 signature)>
```

`verify`, checkpoint signing and the hook's damage check honour a gap only as the note declares
it, and the first two only when the signature verifies with the device key: rows deleted by
someone without the key stay `sequence_gap` problems.
Parsing needs no cryptography (the hook path reads the declared ranges); checking does.
"""


from . import signednote

META_KEY = "recovery"
FLOOR_KEY = "seq_floor"
HEADER = "recovery v1"


class Note:
    __slots__ = ("origin", "signed_size", "signed_head", "lost", "time", "body", "signer", "key_hash",
                 "signature")

    def __init__(self, origin, signed_size, signed_head, lost, time, body):
        self.origin, self.signed_size, self.signed_head = origin, signed_size, signed_head
        self.lost, self.time, self.body = lost, time, body
        self.signer = self.key_hash = self.signature = None

    def gaps(self) -> dict:
        """{seq of the row after the gap: (lo, hi, pin (event hash, chain hash) or None)}."""
        return {hi + 1: (lo, hi, None if pin is None else (pin[1], pin[2])) for lo, hi, pin in self.lost}

    def covers(self, seq: int) -> bool:
        return any(lo <= seq <= hi for lo, hi, _ in self.lost)

    def extent(self) -> int:
        """The rows the note speaks of: its signed size and every row it declares lost or pins."""
        return max([self.signed_size] + [hi + (pin is not None) for _lo, hi, pin in self.lost])

    def ranges(self) -> str:
        return ", ".join(f"{lo}..{hi}" if hi > lo else str(lo) for lo, hi, _ in self.lost) or "none"


def body_text(device: str, signed_size: int, signed_head: str | None, lost, time_text: str) -> str:
    lines = [f"attemptdb.local/{device}", HEADER, f"signed {signed_size} {signed_head or '-'}"]
    for lo, hi, pin in lost:
        lines.append(f"lost {lo} {hi} " + ("-" if pin is None else f"{pin[0]}:{pin[1]}:{pin[2]}"))
    lines.append(f"time {time_text}")
    return "\n".join(lines) + "\n"


def sign(key, device: str, signed_size: int, signed_head: str | None, lost, time_text: str) -> str:
    return signednote.signed(body_text(device, signed_size, signed_head, lost, time_text), key)


def parse(text) -> Note:
    """ValueError unless `text` is a recovery note (signature not checked)."""
    if not isinstance(text, str) or "\n\n" not in text:
        raise ValueError("not a recovery note")
    body, sigs = text.split("\n\n", 1)
    lines = body.split("\n")
    if len(lines) < 4 or lines[1] != HEADER or not lines[0].startswith("attemptdb.local/"):
        raise ValueError("not a recovery note")
    sig = lines[2].split(" ")
    if len(sig) != 3 or sig[0] != "signed":
        raise ValueError("not a recovery note")
    lost = []
    for line in lines[3:-1]:
        parts = line.split(" ")
        if len(parts) != 4 or parts[0] != "lost":
            raise ValueError("not a recovery note")
        lo, hi = int(parts[1]), int(parts[2])
        if parts[3] == "-":
            pin = None
        else:
            p = parts[3].split(":")
            if len(p) != 3 or int(p[0]) != hi + 1 or len(p[1]) != 64 or len(p[2]) != 64:
                raise ValueError("not a recovery note")
            pin = (int(p[0]), p[1], p[2])
        if not 1 <= lo <= hi:
            raise ValueError("not a recovery note")
        lost.append((lo, hi, pin))
    if not lines[-1].startswith("time "):
        raise ValueError("not a recovery note")
    note = Note(lines[0], int(sig[1]), None if sig[2] == "-" else sig[2], lost, lines[-1][5:], body + "\n")
    found = signednote.signatures(sigs)
    if found:  # the last well-formed line, as it always was
        note.signer, note.key_hash, note.signature = found[-1]
    return note


def read(conn) -> Note | None:
    """The file's recovery note, unchecked; None when it has none or it does not parse."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        return parse(row[0]) if row else None
    except ValueError:
        return None


def declared_lost(conn, seq: int) -> bool:
    """Does the file's recovery note (unchecked: the hook path) declare row `seq` lost?"""
    note = read(conn)
    return note is not None and note.covers(seq)


def check(note: Note, key, device: str) -> bool:
    """The note is this device's and its signature verifies with `key`, or with a key `key`
    replaced (`attempt keys init --replace-lost`) when the note speaks of no more rows than the
    file had when it was replaced (keys.DeviceKey.vouches)."""
    if key is None or note.signature is None or note.origin != f"attemptdb.local/{device}":
        return False
    by = key.vouches(note.signer, note.extent())
    if by is None or note.key_hash != by.note_hash:
        return False
    return by.verify(note.signature, note.body.encode("utf-8"))


def trusted_gaps(conn, key, device: str) -> tuple[dict, Note | None, bool]:
    """(gaps to honour, the note, whether a note is present but not trusted)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
    if row is None:
        return {}, None, False
    try:
        note = parse(row[0])
    except ValueError:
        return {}, None, True
    if not check(note, key, device):
        return {}, note, True
    return note.gaps(), note, False


def clock_floor(own_rows, lost) -> int:
    """The highest source_seq an own event of the device may have had, as far as the rows kept
    and the rows lost tell (spec/recover.md "own source_seq"): `own_rows` are the (seq,
    source_seq) of the device's own rows kept, in seq order; `lost` the [(lo, hi, pin)] gaps,
    in order. The device numbers its own events one after another as it appends them, so a lost
    row's source_seq is at most that of the last own row kept before it plus the rows lost since
    (each of which may have been one of its own)."""
    from bisect import bisect_left
    seqs = [s for s, _ in own_rows]
    top, best = [], 0
    for _s, src in own_rows:  # prefix maximum: the device's clock after each own row kept
        best = max(best, src)
        top.append(best)
    his, cum, n = [], [], 0
    for lo, hi, _pin in lost:
        n += hi - lo + 1
        his.append(hi)
        cum.append(n)
    for g, (lo, hi, _pin) in enumerate(lost):
        j = bisect_left(seqs, lo)
        base, after = (top[j - 1], seqs[j - 1]) if j else (0, 0)
        k = bisect_left(his, after)  # gaps wholly before the last own row kept before this one
        best = max(best, base + cum[g] - (cum[k - 1] if k else 0))
    return best
