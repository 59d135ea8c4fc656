"""The json type's constructors as Spark SQL: calls of the UDFs of `planner.json_text`,
written from the arguments' Spark SQL and their PostgreSQL types (as planner.jsonb_calls
does for jsonb's)."""

from __future__ import annotations

from sqlglot import exp

from planner import pg_functions
from planner.json_text import UDF_NAMES
from planner.jsonb_calls import known
from planner.jsonb_funcs import type_tag
from planner.types import SqlType

TYPED = frozenset(("to_json", "json_build_object", "json_build_array"))
RECORD_NAME = "record"  # planner.sql.coerce.RECORD: a row value, its text written by `record`
AGGREGATES = frozenset(("json_agg",))


def udf(op: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=UDF_NAMES[op], expressions=list(args))


def value(arg: exp.Expression, t: SqlType) -> exp.Expression:
    """The json text of a value of type `t` (SQL NULL stays NULL)."""
    if t.base.name == RECORD_NAME:  # already its object's text (`record`)
        return arg
    t = known(t)
    if t.base.name == "json" and not t.is_array:
        return arg
    return udf("to_json", arg, exp.Literal.string(type_tag(t)))


def record(names: tuple[str, ...], fields: list[exp.Expression], types: list[SqlType],
           pretty: exp.Expression | None = None) -> exp.Expression:
    """A row value's json object (composite_to_json): `{"name":value,…}` in field order."""
    keys = exp.Array(expressions=[exp.Literal.string(n) for n in names])
    values = exp.Array(expressions=[value(f, t) for f, t in zip(fields, types, strict=True)])
    return udf("build_row", keys, values, pretty if pretty is not None else exp.false())


def call(name: str, args: list[exp.Expression], types: list[SqlType]) -> exp.Expression:
    """A call of one of TYPED, its arguments already Spark SQL of these PostgreSQL types."""
    if name == "to_json":
        return value(args[0], types[0])
    if name == "json_build_object":
        if len(args) % 2:
            return pg_functions.pg_error("22023", "argument list must have even number of elements")
        keys = [udf("key", args[i], exp.Literal.string(type_tag(known(types[i]))), exp.Literal.number(i + 1))
                for i in range(0, len(args), 2)]
        values = [value(args[i], types[i]) for i in range(1, len(args), 2)]
        return udf("build_object", exp.Array(expressions=keys), exp.Array(expressions=values))
    if name == "json_build_array":
        return udf("build_array", exp.Array(expressions=[value(a, t) for a, t in zip(args, types, strict=True)]))
    raise KeyError(name)


def aggregate_fields(args: list[exp.Expression], types: list[SqlType]) -> list[exp.Expression]:
    """What json_agg collects of each row: the value's json text."""
    return [value(args[0], types[0])]


def aggregate_of(rows: exp.Expression, types: list[SqlType]) -> exp.Expression:
    """json_agg of `rows`, an array of structs of `aggregate_fields` (v0) in order: NULL for
    no rows, a NULL value as JSON null (a struct keeps it where collect_list drops NULLs)."""
    # json_agg_transfn's new line before each structured value (an array, a row) but the first
    return udf("agg", rows, exp.Boolean(this=types[0].is_array or types[0].base.name == RECORD_NAME))
