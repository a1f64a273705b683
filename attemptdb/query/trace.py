"""TRACE: walk the causal graph up or down from an entity, depth-bounded."""



from . import fixed_sql as F
from . import sqlgen as C
from .errors import AQLError
from .resolve import planned_error, table_exists
from .result import Result, dedup, loads_list, uncertainty

# ... TRACE

TRACE_COLUMNS = ("depth", "edge_type", "from_type", "from_id", "to_type", "to_id", "at", "edge_source", "evidence",
                 "uncertainty")


class TraceHandler:
    @staticmethod
    def _args(ctx, cmd):
        s = cmd.subject
        if s.kind == "work_unit" or (s.kind == "ref" and s.value.lower().startswith("wu_")):
            if not table_exists(ctx.conn, "work_units"):
                raise planned_error("work units", (ctx.source, s.pos, s.end))
        kind, ident = C.resolve_subject_entity(ctx, s)
        depth = C.DEFAULT_DEPTH if cmd.depth is None else cmd.depth
        if not 1 <= depth <= C.MAX_DEPTH:
            raise AQLError("AQL0410", f"DEPTH must be between 1 and {C.MAX_DEPTH}", source=ctx.source,
                           pos=cmd.depth_pos, end=cmd.depth_pos + len(str(cmd.depth)), label="out of range")
        return kind, ident, depth, cmd.direction or "UP"

    @classmethod
    def queries(cls, ctx, cmd):
        kind, ident, depth, direction = cls._args(ctx, cmd)
        return [_trace_query(ctx, direction, ident, depth)]

    @classmethod
    def run(cls, ctx, cmd):
        kind, ident, depth, direction = cls._args(ctx, cmd)
        return trace_result(ctx, kind, ident, depth, direction)


def _trace_query(ctx, direction, ident, depth) -> C.Query:
    arms = table_exists(ctx.conn, F.EDGE_ARMS[0][0])
    return C.Query("trace", F.trace_sql(direction, arms, arms and table_exists(ctx.conn, "unit_turns")),
                   {"start": ident, "depth": depth})


def trace_result(ctx, kind, ident, depth, direction):
    rows = ctx.dicts(_trace_query(ctx, direction, ident, depth))
    out = []
    beyond, cut_evidence = 0, []
    for r in rows:
        if r["row_kind"] != "edge":
            beyond += 1
            cut_evidence.extend(loads_list(r["evidence"]))
            continue
        conf = r["confidence"]
        reason = "deterministic" if conf is not None and conf >= 1.0 else "heuristic"
        note = f"{r['edge_source'] or 'projection'} edge ({r['algorithm_version'] or 'unversioned'})"
        out.append((r["depth"], r["edge_type"], r["from_type"], r["from_id"], r["to_type"], r["to_id"], r["at"],
                    r["edge_source"], loads_list(r["evidence"]), uncertainty(conf, reason, note)))
    edges = len(out)
    if beyond:
        note = (f"depth limit {depth} reached: {beyond} more edge(s) lie beyond; add DEPTH "
                f"{min(C.MAX_DEPTH, depth * 2)} to go further")
        out.append((depth + 1, None, None, None, None, None, None, None, dedup(cut_evidence)[:50],
                    uncertainty(None, "depth_limit", note)))
    notes = [f"trace from {C.KIND_LABEL[kind]} {ident} (direction {direction}, depth ≤ {depth}): {edges} edge(s) "
             f"over {', '.join(C.CAUSAL_EDGE_KINDS)}"]
    if kind == "work_unit":
        notes.append("a work unit is made of its turns: the walk steps to them first (parent_of, depth 1), then "
                     "follows the causal edges from each; DIRECTION BOTH also reaches the attempts their prompts "
                     "triggered")
    if not out:
        note = f"no causal edges reach {C.KIND_LABEL[kind]} {ident} (direction {direction})"
        out.append((0, None, None, None, None, None, None, None, [], uncertainty(0.0, "insufficient_evidence", note)))
    return Result(TRACE_COLUMNS, out, notes, kind="explanation")
