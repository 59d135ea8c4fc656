"""pg_typeof(any): the argument's type, as `regtype` prints it (`integer`, `character
varying`, `unknown` for an untyped literal, `integer[]`).

The typing is static, so the call becomes a constant at plan time. The front end of our
own knows every expression's PostgreSQL type (planner.sql.bind); the sqlglot path knows
literals, casts and stored columns exactly, and other expressions through Spark's
annotation where that maps to one PostgreSQL type - anything else is refused (0A000)
rather than answered wrongly.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.types import SqlType

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


def replace_known(tree: exp.Expression, type_of_cast: Callable[[exp.DataType], SqlType],
                  column_types: dict[str, dict[str, SqlType]]) -> None:
    """Before translation: calls on a literal, a cast (the type as written) or a stored column.
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
        if name is None and isinstance(arg, exp.Column):
            name = _column_type(arg, column_types)
        if name is not None:
            call.replace(exp.Literal.string(name))


def _column_type(column: exp.Column, column_types: dict[str, dict[str, SqlType]]) -> str | None:
    col = column.name
    if column.table:
        found = [column_types.get(column.table, {}).get(col)]
    else:
        found = [cols[col] for cols in column_types.values() if col in cols]
    return regtype_name(found[0]) if len(found) == 1 and found[0] is not None else None


_T = exp.DataType.Type
_ANNOTATED = {
    _T.SMALLINT: "smallint", _T.INT: "integer", _T.BIGINT: "bigint", _T.DECIMAL: "numeric",
    _T.DOUBLE: "double precision", _T.FLOAT: "real", _T.BOOLEAN: "boolean", _T.DATE: "date",
    _T.TEXT: "text", _T.VARCHAR: "text",  # a string function's or operator's result
    _T.TIMESTAMPNTZ: "timestamp without time zone", _T.TIMESTAMPTZ: "timestamp with time zone",
    _T.TIMESTAMPLTZ: "timestamp with time zone",
}


def replace_annotated(typed: exp.Expression) -> None:
    """After Spark's type annotation: the remaining calls, where the type maps to one of
    PostgreSQL's; else 0A000."""
    for call in calls(typed):
        arg = call.expressions[0]
        t = arg.type
        name = _ANNOTATED.get(t.this) if t is not None else None
        if name is None:
            raise unsupported()
        call.replace(exp.Literal.string(name))


def unsupported() -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "pg_typeof of this expression is not supported; "
                                           "SET sql_frontend = postgres types every expression")
