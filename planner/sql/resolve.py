"""A function call resolved against the catalog by PostgreSQL's rules: which signature (42883
where none fits, 42725 where several do), and the arguments coerced to its parameter types."""

from __future__ import annotations

from collections.abc import Sequence

from planner import functions
from planner.errors import SqlError
from planner.sql import coerce
from planner.sql import plan as p
from planner.sql.bind_records import check_arguments
from planner.types import SqlType


def resolved_call(name: str, overloads: list, args: list[p.Expr], where: int | None,
                   record_ok: bool = False) -> tuple[functions.Function, tuple[p.Expr, ...], SqlType]:
    """The catalog signature a call of `name` resolves to (PostgreSQL's 42883/42725 where none
    or several fit), its arguments coerced to the signature's types, and its result type."""
    check_arguments(name, args, where)
    if not overloads:
        shown = ", ".join(a.type.display() for a in args)
        raise SqlError("42883", f"function {name}({shown}) does not exist", position=where,
                       hint="No function matches the given name and argument types. "
                            "You might need to add explicit type casts.")
    try:
        func = coerce.resolve_function(name, overloads, [a.type for a in args])
    except SqlError as err:
        err.position = where
        raise
    params = coerce.expand_args(func, len(args))
    bound = coerce_params(args, params, where)
    if record_ok and func.result == "record":
        return func, bound, None
    return func, bound, coerce.result_type(func.result, params, [a.type for a in bound])


def coerce_params(args: Sequence[p.Expr], params: Sequence[str], where: int | None) -> tuple[p.Expr, ...]:
    """The arguments as the catalog signature's parameter types, polymorphic ones resolved
    (coerce.param_types; an unknown literal for "any" as text)."""
    try:
        types = coerce.param_types(params, [a.type for a in args])
    except SqlError as err:
        err.position = where
        raise
    return tuple((coerce.to_type(a, coerce.TEXT) if a.type == coerce.UNKNOWN else a) if t is None else coerce.to_type(a, t)
                 for a, t in zip(args, types, strict=True))

