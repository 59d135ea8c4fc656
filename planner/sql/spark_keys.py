"""Sort and equality keys in Spark SQL with PostgreSQL's meaning: the value Spark must order,
group or compare by where its own order or equality of the value's form is not
PostgreSQL's (an array's NULL elements, an interval's span, a jsonb's order), and the
forms Spark reads in ORDER BY and GROUP BY.
"""

from __future__ import annotations

from sqlglot import exp

from planner import interval_calls, jsonb_order
from planner.types import SqlType


def unsortable(e: exp.Expression) -> bool:
    """Whether Spark refuses `e` written out in an ORDER BY (it must name a selected column)."""
    return e.find(exp.Window, exp.Subquery, exp.Exists) is not None


def not_ordinal(e: exp.Expression) -> exp.Expression:
    """A sort or group key as Spark must read it: Spark takes an integer constant there for
    an output ordinal (`ORDER BY 8`), where the key here is the constant itself."""
    if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
        return exp.Cast(this=e, to=exp.DataType.build("DECIMAL(38, 0)"))
    return e


def is_interval(t: SqlType) -> bool:
    return t.base.name == "interval" and not t.is_array


def sort_value(e: exp.Expression, t: SqlType) -> exp.Expression:
    """A sort key in PostgreSQL's order: an array's NULL elements after every value (array_cmp;
    Spark's own order puts them first), as the array comparison operators have it; an
    interval by its span (interval_cmp_value), a jsonb by planner.jsonb_order's key, not their text."""
    if is_interval(t):
        return exp.Anonymous(this=interval_calls.SPAN, expressions=[e])
    if t.base.name == "jsonb" and not t.is_array:
        return exp.Anonymous(this=jsonb_order.UDF_NAME, expressions=[e])
    if not t.is_array:
        return e
    var = exp.to_identifier("sw_o")
    element = exp.column(var)
    pair = exp.Anonymous(this="named_struct", expressions=[
        exp.Literal.string("n"), exp.Is(this=element.copy(), expression=exp.Null()), exp.Literal.string("v"), element])
    return exp.Anonymous(this="transform", expressions=[e, exp.Lambda(this=pair, expressions=[var])])


def equal_by_key(t: SqlType) -> bool:
    """Whether equal values of type `t` may have different Spark forms: an interval ('1 day'
    = '24:00:00'), a jsonb ('1' = '1.0'). GROUP BY, DISTINCT, UNION and PARTITION BY compare
    them by a key (their sort key); the SUBSCRIBE state cannot (planner.sql.delta)."""
    return not t.is_array and (is_interval(t) or t.base.name == "jsonb")


def equal_by(e: exp.Expression, t: SqlType) -> exp.Expression:
    """`e` as PARTITION BY, count(DISTINCT …) and GROUP BY compare it: by its sort key where
    Spark's equality of its form is not PostgreSQL's (equal_by_key)."""
    return sort_value(e, t) if equal_by_key(t) else e


def grouped(values: list[exp.Expression], types: list[SqlType]) -> tuple[list[exp.Expression], list[exp.Expression]]:
    """GROUP BY (or DISTINCT over) `values`: the output of each and what to group by. A
    value whose equality is not Spark's is grouped by its key and shown as one of the group's
    values (any_value: PostgreSQL promises none in particular either)."""
    outputs = [exp.Anonymous(this="any_value", expressions=[e.copy()]) if equal_by_key(t) else e
               for e, t in zip(values, types, strict=True)]
    groups = [equal_by(not_ordinal(e.copy()), t) for e, t in zip(values, types, strict=True)]
    return outputs, groups
