"""`UPDATE t SET (a, b) = (x, y)`: PostgreSQL's multiple-column assignment, spread into
`SET a = x, b = y` (what the rest of the write path reads), in UPDATE and in INSERT ... ON
CONFLICT DO UPDATE. A row from a subquery (`SET (a, b) = (SELECT ...)`) is left as written:
deny by default refuses it (0A000)."""

from __future__ import annotations

from pglast import ast, parse_sql
from pglast.parser import ParseError
from pglast.stream import RawStream

from planner.errors import SYNTAX_ERROR, SqlError


def spread(text: str) -> str:
    """`text` with every multiple-column assignment from a row constructor spread out; as it
    is when it has none (or PostgreSQL's grammar does not read it: the caller reports that)."""
    if "(" not in text:
        return text
    try:
        statements = parse_sql(text)
    except ParseError:
        return text
    changed = False
    for raw in statements:
        for targets_of in _target_lists(raw.stmt):
            targets = list(targets_of.targetList or ())
            for i, target in enumerate(targets):
                ref = target.val
                if isinstance(ref, ast.MultiAssignRef) and isinstance(ref.source, ast.RowExpr):
                    if len(ref.source.args) != ref.ncolumns:
                        raise SqlError(SYNTAX_ERROR, "number of columns does not match number of values",
                                       position=ref.source.location + 1 if ref.source.location >= 0 else None)
                    targets[i] = ast.ResTarget(name=target.name, indirection=target.indirection,
                                               val=ref.source.args[ref.colno - 1], location=target.location)
                    changed = True
            targets_of.targetList = tuple(targets)
    if not changed:
        return text
    return "; ".join(RawStream()(raw) for raw in statements)


def _target_lists(stmt: ast.Node) -> list[ast.Node]:
    """The nodes whose targetList holds SET assignments."""
    if isinstance(stmt, ast.UpdateStmt):
        return [stmt]
    if isinstance(stmt, ast.InsertStmt) and stmt.onConflictClause is not None \
            and stmt.onConflictClause.targetList:
        return [stmt.onConflictClause]
    return []
