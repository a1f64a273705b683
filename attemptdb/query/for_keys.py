"""The FOR keys a SHOW is given, checked against its target before any SQL is built.

- A key no target takes, or one this target does not take, is AQL0404 naming the keys this
  target takes (the nearest one suggested): never a key the target would refuse in turn.
- A key whose row holds one value given twice is AQL0205 (it could match nothing), and so are
  two keys that read the same one-value column: on ATTEMPTS, SESSIONS, TURNS, TOOL CALLS and
  APPROVALS `outcome` and `status` are one key (`outcome = 'failed' AND status = 'succeeded'`).
"""

from ..errors import did_you_mean
from .errors import AQLError


def check_filters(ctx, target, filters, rules: dict, known: tuple, single: tuple) -> None:
    """Raise for the first FOR filter of `filters` that SHOW `target` cannot take. `rules`: the
    target's key → (builder, argument); `known`: every FOR key, in order; `single`: the
    builders of a column a row holds one value of."""
    taken = [k for k in known if k in rules]
    read = {}  # (builder, argument) of a one-value column → the filter that read it first
    for f in filters:
        rule = rules.get(f.key)
        if rule is None:
            what = "unknown filter" if f.key not in known else f"filter {f.key} is not supported for SHOW {target.name}"
            raise AQLError("AQL0404", what + did_you_mean(f.key, taken), source=ctx.source, pos=f.key_pos,
                           end=f.key_pos + len(f.key),
                           label="unknown filter" if f.key not in known else "not supported here",
                           listing=("supported", taken or ["none"]))
        builder, arg = rule
        if builder not in single:
            continue
        column = (builder.__name__, repr(arg))
        first = read.get(column)
        if first is not None:
            what = (f"FOR {f.key} is given twice; a row has one {f.key}" if first.key == f.key
                    else f"FOR {first.key} and FOR {f.key} are one key here; a row has one value")
            raise AQLError("AQL0205", what,
                           source=ctx.source, pos=f.pos, end=f.end, label="second time")
        read[column] = f
