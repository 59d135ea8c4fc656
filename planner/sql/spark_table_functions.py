"""The Spark SQL of a set-returning function in FROM (plan.TableFunction): a FROM-less
SELECT of Spark's generator over an array of the values, `explode` for one column,
`inline` for a record's columns.

generate_series gives PostgreSQL's rows where Spark's sequence would differ: none when
the stop lies the other way from the start (sequence counts back), 22023 for a zero step,
numeric bounds and steps (sequence takes integers only) as start + i * step for
i = 0 .. (stop - start) div step, exact, and timestamps stepped by an interval as PostgreSQL
steps them (planner.pg_interval.series: each row the last plus the step).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planner import interval_calls, pg_functions
from planner.functions import Function
from planner.sql import plan as p
from planner.types import SqlType

# generate_series over numerics, {0} start, {1} stop, {2} step, {var} the element index
_NUMERIC_SERIES = (
    "case when {2} = 0 then raise_error('sparkwire:22023:step size cannot equal zero') "
    "when ({2} > 0 and {0} <= {1}) or ({2} < 0 and {0} >= {1}) "
    "then transform(sequence(cast(0 as bigint), cast(({1} - {0}) div {2} as bigint)), "
    "{var} -> cast({0} + {var} * {2} as {type})) "
    "else array() end")


_TIMESTAMPS = ("timestamp without time zone", "timestamp with time zone")

Filler = Callable[[str, list[exp.Expression]], exp.Expression]  # a template filled with arguments
Keep = Callable[[list[exp.Expression]], exp.Expression]  # a condition, given the values' columns


def select(rel: p.TableFunction, args: list[exp.Expression], var: str, filled: Filler) -> exp.Select:
    """`SELECT explode(...) AS c0` (or `inline(...) AS (c0, c1)`) for `rel`, whose
    arguments' Spark SQL is `args`; `var` is a lambda variable free in them."""
    return exp.select(generator(rel, args, var, filled, 0))


def generator(rel: p.TableFunction, args: list[exp.Expression], var: str, filled: Filler,
              first: int, outer: bool = False, keep: Keep | None = None) -> exp.Expression:
    """The select item of `rel`'s values, its columns named c{first}, c{first + 1}, ...;
    `outer`: a row of NULLs where there are no values (Spark's explode_outer); `keep`: the
    condition the values kept meet, given their columns (a LEFT JOIN's ON)."""
    values = _values(rel.func, args, rel.columns[0].type, var, filled)
    if rel.ordinality:
        values = _numbered(rel, values, var, filled)
    if keep is not None:
        values = _kept(rel, values, f"{var}_k", keep)
    if len(rel.columns) == 1:
        explode = exp.Anonymous(this="explode_outer", expressions=[values]) if outer else exp.Explode(this=values)
        return exp.Alias(this=explode, alias=exp.to_identifier(f"c{first}"))
    names = [exp.to_identifier(f"c{first + i}") for i in range(len(rel.columns))]
    inline = "inline_outer" if outer else "inline"
    return exp.Aliases(this=exp.Anonymous(this=inline, expressions=[values]), expressions=names)


def _kept(rel: p.TableFunction, values: exp.Expression, var: str, keep: Keep) -> exp.Expression:
    """The values `keep` holds for, in order: Spark's filter, each value's columns read off
    the element (the value itself, a record's fields, or _numbered's)."""
    element = exp.column(var)
    if rel.ordinality:
        fields = [exp.Dot(this=element.copy(), expression=exp.to_identifier(f"f{i}")) for i in range(len(rel.columns))]
    elif len(rel.columns) > 1:
        fields = [exp.Dot(this=element.copy(), expression=exp.to_identifier(c.name)) for c in rel.columns]
    else:
        fields = [element]
    condition = exp.Coalesce(this=keep(fields), expressions=[exp.false()])  # NULL keeps nothing
    return exp.Anonymous(this="filter", expressions=[values, exp.Lambda(this=condition,
                                                                        expressions=[exp.to_identifier(var)])])


def _numbered(rel: p.TableFunction, values: exp.Expression, var: str, filled: Filler) -> exp.Expression:
    """WITH ORDINALITY: each value (or each record's fields) beside its number from 1, in
    the order of the array, one struct per row for `inline`."""
    value, number = f"{var}_v", f"{var}_n"
    width = len(rel.columns) - 1
    fields = [value] if width == 1 else [f"{value}.{c.name}" for c in rel.columns[:width]]
    pairs = ", ".join(f"'f{i}', {f}" for i, f in enumerate(fields))
    return filled(f"transform({{0}}, ({value}, {number}) -> named_struct({pairs}, 'f{width}', "
                  f"cast({number} + 1 as bigint)))", [values])


def lockstep(funcs: tuple[p.TableFunction, ...], args: list[list[exp.Expression]], variables: list[str],
             filled: Filler, first: int, outer: bool = False, keep: Keep | None = None) -> exp.Expression:
    """The select item of several functions' values side by side, as PostgreSQL runs the
    set-returning functions of a select list: as many rows as the longest gives, the
    others NULL past their end (arrays_zip pads so; a NULL array counts as empty)."""
    if len(funcs) == 1:
        return generator(funcs[0], args[0], variables[0], filled, first, outer, keep)
    assert not outer and keep is None  # a JOIN's function stands alone; a select list's run in lockstep
    arrays = [exp.Coalesce(this=_values(f.func, a, f.columns[0].type, v, filled),
                           expressions=[exp.Anonymous(this="array", expressions=[])])
              for f, a, v in zip(funcs, args, variables, strict=True)]
    names = [exp.to_identifier(f"c{first + i}") for i in range(len(funcs))]
    zipped = exp.Anonymous(this="arrays_zip", expressions=arrays)
    return exp.Aliases(this=exp.Anonymous(this="inline", expressions=[zipped]), expressions=names)


def _values(f: Function, args: list[exp.Expression], element: SqlType, var: str, filled: Filler) -> exp.Expression:
    """The array of the function's values (rows)."""
    if f.name == "generate_series":
        if element.base.name in _TIMESTAMPS:  # planner.pg_interval.series, as Spark's text
            texts = exp.Anonymous(this=interval_calls.UDF_NAMES["series"], expressions=[
                exp.Cast(this=args[0], to=exp.DataType.build("STRING")),
                exp.Cast(this=args[1], to=exp.DataType.build("STRING")), args[2]])
            return filled(f"transform({{0}}, {var} -> cast({var} as {element.spark}))", [texts])
        if element.base.name != "numeric":
            return pg_functions.series_values(*args)
        step = args[2] if len(args) > 2 else exp.Literal.number(1)
        return filled(_NUMERIC_SERIES.format("{0}", "{1}", "{2}", var=var, type=element.spark),
                       [args[0], args[1], step])
    generator = filled(f.spark, args)
    if not isinstance(generator, exp.Explode):
        raise p.NotYet(f"{f.name} in FROM cannot run on Spark yet")
    return generator.this

