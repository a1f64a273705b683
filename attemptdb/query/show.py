"""SHOW: list a target's rows with filters, order and limit (compiled by sqlgen)."""



from . import sqlgen as C
from .beside import beside, in_halves
from .result import Result, decode_rows, list_columns

# ... SHOW

class ShowHandler:
    @staticmethod
    def queries(ctx, cmd):
        plan = C.compile_show(ctx, cmd)
        return [q for q in (plan.rows, plan.hidden) if q is not None]

    @staticmethod
    def reads_beside(cmd) -> bool:
        return cmd.target == "work_units"

    @staticmethod
    def run(ctx, cmd):
        if not ShowHandler.reads_beside(cmd):
            return ShowHandler.shown(ctx, cmd, C.compile_show(ctx, cmd), None)
        with beside(ctx) as other:  # the companion opens while the statement compiles
            return ShowHandler.shown(ctx, cmd, C.compile_show(ctx, cmd), other)

    @staticmethod
    def shown(ctx, cmd, plan, other):
        """The Result of a compiled SHOW; `other`: the beside that may read half of its units."""
        cols, rows = ctx.fetch(plan.rows) if plan.units is None else in_halves(ctx, other, *plan.units)
        target = plan.target
        # the target's note explains its columns: with no row to read it is noise
        notes = [n for n in plan.notes if rows or n != target.note]
        if plan.hidden is not None:
            n = ctx.conn.execute(plan.hidden.sql, plan.hidden.params).fetchone()[0]
            if n:
                notes.append(f"{n} retracted row(s) hidden; add INCLUDING RETRACTED to see them")
        elif cmd.including_retracted and target.retracted and "retracted" in cols:
            i = cols.index("retracted")
            notes.append(f"including {sum(1 for r in rows if r[i])} retracted row(s) (retracted = 1)")
        if not rows:
            notes.append(f"no {target.name.lower()} matched")
        elif len(rows) == plan.limit:
            notes.append(f"showing the first {plan.limit} row{'' if plan.limit == 1 else 's'} (LIMIT {plan.limit}); add LIMIT "
                         f"{min(C.MAX_LIMIT, plan.limit * 10)} for more")
        if target.table == "attempts" and rows and "objective" in cols:
            i = cols.index("objective")
            if all(r[i] is None for r in rows):
                notes.append(_no_objective(ctx, cols, rows))
        return Result(cols, decode_rows(cols, rows, lists=False), notes, display=plan.display,
                      encoded=list_columns(cols))


def _no_objective(ctx, cols, rows) -> str:
    """Why every listed attempt's objective is empty: attempts in turn 0 came before any prompt
    (there is no ask to show); the others' prompt text is withheld by this reader (`attempt mcp`
    or `attempt ui` without --include-content, whose authorizer reads it as NULL: readers.content)
    or was never stored (metadata_only). Told apart by the data: a turn's text is stored iff it
    has a turn_prompts row, whose objective is NOT NULL in the table, so a row that reads NULL
    is one this connection withholds."""
    ti = cols.index("turn_index") if "turn_index" in cols else None
    asked = [r for r in rows if ti is None or r[ti] != 0]
    before = len(rows) - len(asked)
    if not asked:
        return "objective is empty: these attempts came before any prompt (turn 0), so there is no ask to show"
    from ..model import fastjson
    if "turn_id" in cols:
        turns = fastjson.dumps(sorted({r[cols.index("turn_id")] for r in asked}))
        withheld = ctx.conn.execute("SELECT EXISTS (SELECT 1 FROM turn_prompts WHERE turn_id IN "
                                    "(SELECT value FROM json_each(?)) AND objective IS NULL)", (turns,)).fetchone()[0]
    else:
        withheld = ctx.conn.execute("SELECT EXISTS (SELECT 1 FROM turn_prompts WHERE objective IS NULL)").fetchone()[0]
    why = ("objective text is withheld by this reader (start it with --include-content to show it)" if withheld
           else "objective text is unavailable (no prompt content captured; metadata_only mode?)")
    return why if not before else f"{why}; {before} of them came before any prompt (turn 0)"
