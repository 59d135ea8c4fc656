"""pg_typeof(any): the argument's type, as `regtype` prints it (`integer`, `character
varying`, `unknown` for an untyped literal, `integer[]`).

The typing is static, so the call becomes a constant at plan time. The front end of our
own knows every expression's PostgreSQL type (planner.sql.bind); the sqlglot path knows
literals, casts, stored columns and functions with one result type - anything else is
refused (0A000) rather than answered wrongly.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planner import functions
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.types import SqlType, lookup

NAME = "pg_typeof"


def regtype_name(t: SqlType) -> str:
    """The name regtype's output function gives: no typmod, `[]` for an array."""
    return t.base.name + ("[]" if t.is_array else "")


def wrong_arguments(shown: str = "") -> SqlError:
    return SqlError("42883", f"function pg_typeof({shown}) does not exist",
                    hint="No function matches the given name and argument types. "
                         "You might need to add explicit type casts.")


def calls(tree: exp.Expression) -> list[exp.Anonymous]:
    return [c for c in tree.find_all(exp.Anonymous) if c.name.lower() == NAME]


def _literal_type(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Null) or isinstance(node, exp.Literal) and node.is_string:
        return "unknown"
    if isinstance(node, exp.Boolean):
        return "boolean"
    if isinstance(node, exp.Literal):
        text = node.this
        if text.isdigit():
            value = int(text)
            return "integer" if value < 2**31 else "bigint" if value < 2**63 else "numeric"
        return "numeric"
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return _literal_type(node.this)
    return None


def replace(tree: exp.Expression, type_of_cast: Callable[[exp.DataType], SqlType],
            column_types: dict[str, dict[str, SqlType]], function_name: Callable[[exp.Expression], str]) -> None:
    """Every call, before translation: on a literal, a cast (the type as written), a stored
    column, or a function whose every overload for that many arguments returns the same
    type. Anything else (an operator, an overloaded or polymorphic function) is 0A000: Spark's
    own typing of it differs from PostgreSQL's (`1.5 + 1` is double there, numeric here).
    `column_types` maps a relation's name or alias in the query to its columns' types."""
    for call in calls(tree):
        if len(call.expressions) != 1:
            raise wrong_arguments()
        arg = call.expressions[0]
        name = _literal_type(arg)
        if name is None and isinstance(arg, exp.Cast):
            try:
                name = regtype_name(type_of_cast(arg.to))
            except SqlError:
                name = None
        if name is None and isinstance(arg, exp.Column) and _one_level(tree):
            name = _column_type(arg, column_types)
        if name is None and isinstance(arg, (exp.Anonymous, exp.Func)) \
                and not isinstance(arg, (exp.Binary, exp.Unary, exp.Cast, exp.Case, exp.Coalesce)):
            name = _result_type(function_name(arg), len(list(arg.iter_expressions())))
        if name is None:
            raise unsupported()
        call.replace(exp.Literal.string(name))


def _one_level(tree: exp.Expression) -> bool:
    """A query of stored tables only: no subquery, view or CTE whose columns could shadow
    a stored table's."""
    return sum(1 for _ in tree.find_all(exp.Select)) == 1 and tree.find(exp.CTE) is None


def _column_type(column: exp.Column, column_types: dict[str, dict[str, SqlType]]) -> str | None:
    col = column.name
    if column.table:
        found = [column_types.get(column.table, {}).get(col)]
    else:
        found = [cols[col] for cols in column_types.values() if col in cols]
    return regtype_name(found[0]) if len(found) == 1 and found[0] is not None else None


def _result_type(name: str, nargs: int) -> str | None:
    results = {f.result for f in functions.overloads(name) if f.takes(nargs)}
    if len(results) != 1:
        return None
    base = lookup(results.pop())
    return base.name if base is not None else None


def unsupported() -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "pg_typeof of this expression is not supported; "
                                           "SET sql_frontend = postgres types every expression")
