"""An aggregate's FILTER and ORDER BY in Spark SQL, and the aggregates that collect their
input (array_agg, string_agg, jsonb_agg, jsonb_object_agg, json_agg).

FILTER (WHERE c) of an aggregate that skips NULL inputs (PostgreSQL's strict ones: every
aggregate here but count(*) and the collecting ones) is the aggregate of its arguments
made NULL where c is not true. Spark's own FILTER clause attaches to one Spark aggregate,
while a catalog template may hold several (or none a sqlglot tree shows as one); a NULL
argument is what each of them skips. count(*) counts a constant that is NULL where c is
not true.

The collecting aggregates gather one struct per row (a struct is never NULL, so a NULL
value is kept, as array_agg keeps it) with collect_list, or with DISTINCT collect_set;
rows FILTER drops, and string_agg's NULL values, become NULL structs, which neither
collects. The array is then sorted by PostgreSQL's ORDER BY (array_sort with a comparator:
each key's direction and NULLS FIRST/LAST, the next key on a tie); rows whose keys tie keep
the order they arrived in (Spark's sort is stable), as without ORDER BY.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from planner import interval_calls, json_calls, jsonb_calls
from planner.sql_template import spark
from planner.types import SqlType

COLLECTING = frozenset({"array_agg", "string_agg", "jsonb_agg", "jsonb_object_agg", "json_agg"})
INTERVAL_AGGREGATES = frozenset({"sum", "avg", "max", "min"})


@dataclass(frozen=True)
class Key:
    """A sort key of a collecting aggregate: Spark SQL over the aggregate's input row."""

    value: exp.Expression
    descending: bool
    nulls_first: bool
    # the key as a value Spark orders as PostgreSQL orders the key's type (an array's NULLs last)
    as_sorted: Callable[[exp.Expression], exp.Expression] = lambda e: e


def _when(condition: exp.Expression, value: exp.Expression) -> exp.Expression:
    return exp.If(this=exp.Paren(this=condition.copy()), true=value, false=exp.Null())


def filtered(args: Sequence[exp.Expression], condition: exp.Expression, first: int = 0) -> list[exp.Expression]:
    """FILTER (WHERE `condition`) of an aggregate that skips NULL inputs: its aggregated
    arguments (from `first`: an ordered-set aggregate's direct arguments stay) NULL where the
    condition is not true."""
    return [a if i < first else _when(condition, exp.Paren(this=a)) for i, a in enumerate(args)]


def counted(condition: exp.Expression) -> exp.Expression:
    """count(*) FILTER (WHERE `condition`)."""
    return exp.Count(this=_when(condition, exp.Literal.number(1)))


def collected(fields: Sequence[exp.Expression], keys: Sequence[Key], condition: exp.Expression | None,
              distinct: bool, skip_null: bool = False) -> exp.Expression:
    """The group's rows as an array of structs (v0, v1, …: `fields`), in the order of `keys`.

    `condition` is FILTER's; `skip_null` leaves out rows whose first field is NULL
    (string_agg's values). With `distinct` the rows are distinct and every key is one of the
    fields (the binder saw to it, as PostgreSQL's 42P10 has it)."""
    named = [(f"v{i}", f) for i, f in enumerate(fields)]
    # Each key collected beside the fields in the form Spark orders as PostgreSQL does (a UDF
    # may compute it, which Spark refuses inside the comparator's lambda); with DISTINCT a key
    # is a function of one of the fields, so the rows stay as distinct as the fields are.
    sources = [fields[list(fields).index(k.value)] if distinct else k.value for k in keys]
    named += [(f"k{i}", k.as_sorted(source.copy())) for i, (k, source) in enumerate(zip(keys, sources, strict=True))]
    row: exp.Expression = exp.Struct(expressions=[exp.alias_(exp.Paren(this=e.copy()), name) for name, e in named])
    conditions = [condition] if condition is not None else []
    if skip_null:
        conditions.append(exp.Not(this=exp.Is(this=exp.Paren(this=fields[0].copy()), expression=exp.Null())))
    if conditions:
        row = _when(exp.and_(*(exp.Paren(this=c.copy()) for c in conditions)), row)
    rows = spark("collect_set({0})" if distinct else "collect_list({0})", row)
    if not keys:
        return rows
    comparator = exp.Lambda(this=_comparison(keys, [f"k{i}" for i in range(len(keys))]),
                            expressions=[exp.to_identifier("sw_l"), exp.to_identifier("sw_r")])
    return exp.ArraySort(this=rows, expression=comparator)


def _comparison(keys: Sequence[Key], names: Sequence[str]) -> exp.Expression:
    """-1, 0 or 1 as struct sw_l sorts before, with or after sw_r."""
    body: exp.Expression = exp.Literal.number(0)
    for key, name in reversed(list(zip(keys, names, strict=True))):
        left, right = exp.column(name, table="sw_l"), exp.column(name, table="sw_r")
        before, after = (1, -1) if key.descending else (-1, 1)
        null_side = -1 if key.nulls_first else 1
        body = exp.Case(ifs=[
            exp.If(this=exp.and_(null(left), exp.Not(this=null(right))), true=number(null_side)),
            exp.If(this=exp.and_(null(right), exp.Not(this=null(left))), true=number(-null_side)),
            exp.If(this=exp.LT(this=left.copy(), expression=right.copy()), true=number(before)),
            exp.If(this=exp.GT(this=left.copy(), expression=right.copy()), true=number(after)),
        ], default=body)
    return body


def number(n: int) -> exp.Expression:
    return exp.Literal.number(n) if n >= 0 else exp.Neg(this=exp.Literal.number(-n))


def null(e: exp.Expression) -> exp.Expression:
    return exp.Is(this=e.copy(), expression=exp.Null())


def array_agg(rows: exp.Expression) -> exp.Expression:
    """array_agg over collected rows (v0: the value): NULL for none."""
    return spark("if(size({0}) = 0, NULL, transform({0}, sw_e -> sw_e.v0))", rows)


def string_agg(rows: exp.Expression) -> exp.Expression:
    """string_agg over collected rows (v0: a value that is not NULL, v1: its delimiter): the
    values, each but the first preceded by its own row's delimiter (a NULL one adds
    nothing); NULL for none."""
    return spark("if(size({0}) = 0, NULL, array_join(transform({0}, (sw_e, sw_i) -> "
                 "if(sw_i = 0, sw_e.v0, concat(coalesce(sw_e.v1, ''), sw_e.v0))), ''))", rows)


def collecting(name: str, args: Sequence[exp.Expression], types: Sequence[SqlType], keys: Sequence[Key],
               condition: exp.Expression | None, distinct: bool) -> exp.Expression:
    """One of COLLECTING over Spark SQL arguments of these PostgreSQL types."""
    if name == "array_agg":
        return array_agg(collected(args, keys, condition, distinct))
    if name == "string_agg":
        return string_agg(collected(args, keys, condition, distinct, skip_null=True))
    if name == "json_agg":
        return json_calls.aggregate_of(collected(json_calls.aggregate_fields(list(args), list(types)), keys,
                                                 condition, distinct), list(types))
    fields = jsonb_calls.aggregate_fields(name, list(args), list(types))
    return jsonb_calls.aggregate_of(name, collected(fields, keys, condition, distinct), list(types))


def interval(name: str, arg: exp.Expression, distinct: bool) -> exp.Expression:
    """sum, avg, max or min of an interval (kept as its text): max and min the value of the
    largest or smallest span, sum and avg PostgreSQL's over the group's values."""
    if name in ("max", "min"):
        return spark(f"{name}_by({{0}}, {interval_calls.SPAN}({{0}}))", exp.Paren(this=arg))
    collect = "collect_set" if distinct else "collect_list"
    udf = interval_calls.UDF_NAMES["total" if name == "sum" else "mean"]
    return spark(f"{udf}({collect}({{0}}))", exp.Paren(this=arg))
