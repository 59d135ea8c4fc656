"""A query's top-level numeric results whose scale PostgreSQL picks value by value,
computed value by value.

`numeric_scale.per_value_targets` finds them: a division, `^`, sqrt, ln, log, exp, power
or avg at the top of the select list (possibly cast to text). Here the plan is rewritten so
that each becomes a call of a Python UDF (spark_backend.numeric_udfs, planner.pg_numeric)
on its operands and their display scales, which returns PostgreSQL's text of the result
as a Spark STRING; the column keeps its numeric type, and the encoders print the text as
it is (`SqlType.per_value_scale`). An avg becomes its SUM and COUNT (and the largest
display scale summed, when the argument's is not fixed), added to the GROUP BY below.

A column the ORDER BY sorts on keeps Spark's own expression for the sort; the text is a
column of its own beside it. Nested uses (`a / b + 1`) are left as they were. The caller
gets the plan and the types together from `apply` (server.bound_query does for a
one-shot SELECT and a SUBSCRIBE), so that the types say what the generated query returns.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from planner import pg_to_number
from planner.functions import Function, Kind
from planner.pg_numeric import UDF_NAMES, VARIANCES
from planner.sql import numeric_scale
from planner.sql import plan as p
from planner.sql.coerce import BIGINT, INTEGER, NUMERIC
from planner.types import SqlType

# The UDFs' arguments: (a, b, dscale a, dscale b) for these; (x, dscale x) for sqrt, exp
# and ln; (sum, count, dscale of the sum) for avg.
BINARY = frozenset({"div", "power", "log"})
UNKNOWN_SCALE = -1  # a dscale argument meaning: the digits the value shows


def _udf(operation: str, nargs: int) -> Function:
    name = UDF_NAMES[operation]
    args = ", ".join(f"{{{i}}}" for i in range(nargs))
    return Function(0, name, ("numeric",) * nargs, "text", f"{name}({args})")


def _aggregate(name: str, template: str) -> Function:
    return Function(0, name, ("numeric",), "numeric", template, kind=Kind.AGGREGATE)


_TEN = Decimal(10)
_TO_NUMBER_TEXT = Function(0, pg_to_number.UDF_NAME, ("text", "text"), "text", pg_to_number.TEXT_TEMPLATE)
_SUM = _aggregate("sum", "sum({0})")
_SUM_WIDE = _aggregate("sum", "sum(cast({0} as decimal(38, 0)))")  # Spark's sum(bigint) overflows
_COUNT = _aggregate("count", "count({0})")
# The largest display scale among the values summed, which numeric_avg's sum has: the digits
# a value shows once its trailing zeros are stripped (Spark prints a decimal in full; its
# comparisons across decimal types round, so they cannot tell).
_MAX_DSCALE = _aggregate("max", "max(length(regexp_extract(cast({0} as string), '[.]([0-9]*[1-9])', 1)))")


def apply(rel: p.Rel, types: list[SqlType]) -> tuple[p.Rel, list[SqlType]]:
    """Query `rel` with its per-value numeric output columns computed by the UDFs, and its
    output types with those columns marked as arriving as PostgreSQL's text (both as they
    were when it has none). The columns, their names and order stay the same."""
    targets = _sortable(rel, numeric_scale.per_value_targets(rel))
    if not targets:
        return rel, types
    marked = numeric_scale.with_display_scales(
        types, [numeric_scale.PER_VALUE if i in targets else None for i in range(len(types))])
    return _rewrite(rel, targets), marked


def _sortable(rel: p.Rel, targets: dict[int, numeric_scale.Target]) -> dict[int, numeric_scale.Target]:
    """The targets but a window's avg the ORDER BY sorts on: the sort must keep Spark's window
    in the select list beside it, which Spark then no longer finds (the column keeps Spark's
    scale)."""
    found = numeric_scale.top_map(rel)
    if found is None or found[1] is None:
        return targets
    _project, top, m = found
    width = len(p.columns(m.input))
    sorted_on = {key.index - width for key in top.order}
    return {i: t for i, t in targets.items() if not (t.operation == "window_avg" and t.expr in sorted_on)}


def _rewrite(rel: p.Rel, targets: dict[int, numeric_scale.Target]) -> p.Rel:
    found = numeric_scale.top_map(rel)
    if not targets or found is None:
        return rel
    project, top, m = found
    width = len(p.columns(m.input))
    scales = numeric_scale.output_scales(m.input)
    source, avg_parts = _with_aggregate_parts(
        m, {t.expr: t.operation for t in targets.values() if t.operation in ("avg", "variance")})
    grown = len(p.columns(source)) - width

    def moved(k: int) -> int:  # a Map column's index once the source has grown
        return k if k < width else k + grown

    sorted_on = {key.index for key in top.order} if top is not None else set()
    exprs, extra, placed = list(m.exprs), [], {}
    for j in sorted({t.expr for t in targets.values()}):
        operation = next(t.operation for t in targets.values() if t.expr == j)
        call = _call(m.exprs[j], operation, scales, avg_parts.get(j))
        if width + j in sorted_on:  # the sort keeps Spark's value; the text goes beside it
            extra.append(call)
            placed[j] = width + grown + len(m.exprs) + len(extra) - 1
        else:
            exprs[j] = call
            placed[j] = width + grown + j
    body: p.Rel = p.Map(source, tuple(exprs + extra), m.names + ("?column?",) * len(extra))
    if top is not None:
        body = replace(top, input=body, order=tuple(replace(k, index=moved(k.index)) for k in top.order))
    outputs = project.outputs if project is not None else tuple(range(width + len(m.exprs)))
    names = project.names if project is not None else tuple(c.name for c in p.columns(rel))
    return p.Project(body, tuple(placed[targets[i].expr] if i in targets else moved(k)
                                 for i, k in enumerate(outputs)), names)


def _call(e: p.Expr, operation: str, scales: numeric_scale.Scales,
          avg_part: tuple[p.Expr, ...] | None) -> p.Call:
    """The UDF call computing select-list expression `e` (a target) as PostgreSQL's text."""
    result_type = e.type
    if isinstance(e, p.Cast):  # shown as text: the UDF's text is that text
        e = e.arg
    if operation in ("avg", "variance"):
        assert avg_part is not None
        return p.Call(_udf(operation, len(avg_part)), avg_part, result_type)
    if operation == "window_avg":
        parts = _window_avg_parts(e, scales)
        return p.Call(_udf("avg", len(parts)), parts, result_type)
    assert isinstance(e, (p.OpCall, p.Call))
    args = e.args
    if operation == "to_number":  # its scale is the input's: the UDF gives PostgreSQL's text
        return p.Call(_TO_NUMBER_TEXT, args, result_type)
    if operation == "log10":  # log(x) is log(10, x)
        args = (p.Literal(_TEN, NUMERIC), *args)
        operation = "log"
    if operation in BINARY:
        a, b = args
        return p.Call(_udf(operation, 4), (a, b, _scale_of(a, scales), _scale_of(b, scales)), result_type)
    [x] = args
    return p.Call(_udf(operation, 2), (x, _scale_of(x, scales)), result_type)


def _window_avg_parts(e: p.Expr, scales: numeric_scale.Scales) -> tuple[p.Expr, ...]:
    """avg(x) OVER w as what PostgreSQL's numeric_avg finishes it from, each over the same
    window: (sum, count, the largest display scale summed)."""
    assert isinstance(e, p.WindowCall)
    [arg] = e.args

    def over(func: Function, t: SqlType) -> p.WindowCall:
        return replace(e, func=func, args=(arg,), type=t)  # its frame (and FILTER) too

    if arg.type.base.name == "numeric":
        fixed = numeric_scale.expr_scale(arg, scales)
        dscale: p.Expr = p.Literal(fixed, INTEGER) if fixed is not None else over(_MAX_DSCALE, INTEGER)
        return over(_SUM, NUMERIC), over(_COUNT, BIGINT), dscale
    return over(_SUM_WIDE, NUMERIC), over(_COUNT, BIGINT), p.Literal(0, INTEGER)


def _scale_of(e: p.Expr, scales: numeric_scale.Scales) -> p.Literal:
    """An operand's display scale when every value of it has the same, else UNKNOWN_SCALE
    (the UDF then takes the digits the value shows)."""
    s = numeric_scale.expr_scale(e, scales)
    return p.Literal(UNKNOWN_SCALE if s is None else s, INTEGER)


def _with_aggregate_parts(m: p.Map, aggregates: dict[int, str]) -> tuple[p.Rel, dict[int, tuple[p.Expr, ...]]]:
    """The Map's source with, for each avg or variance-family aggregate its expressions
    `aggregates` read, the aggregates PostgreSQL finishes it from appended to the GROUP BY:
    {expr: (sum, count, dscale)} for avg, {expr: (count, sum, sum of squares, dscale, which)}
    for the variance family."""
    if not aggregates:
        return m.input, {}
    filters: list[p.Filter] = []
    rel = m.input
    while isinstance(rel, p.Filter):
        filters.append(rel)
        rel = rel.input
    assert isinstance(rel, p.Reduce)
    reduce = rel
    arg_scales = numeric_scale.output_scales(reduce.input)
    aggregates_, names = list(reduce.aggregates), list(reduce.names)
    parts: dict[int, tuple[p.Expr, ...]] = {}
    base = len(reduce.keys)

    def add(func: Function, agg: p.AggCall, t) -> p.ColRef:
        """`func` over the argument of `agg` and the rows it reads (its FILTER too)."""
        aggregates_.append(p.AggCall(func, agg.args, False, t, agg.filter))
        names.append(func.name)
        return p.ColRef(0, base + len(aggregates_) - 1, t)

    for j, operation in sorted(aggregates.items()):
        e = m.exprs[j]
        ref = e.arg if isinstance(e, p.Cast) else e
        assert isinstance(ref, p.ColRef)
        agg = reduce.aggregates[ref.index - base]
        [arg] = agg.args
        if arg.type.base.name == "numeric":
            total = add(_SUM, agg, NUMERIC)
            fixed = numeric_scale.expr_scale(arg, arg_scales)
            dscale: p.Expr = p.Literal(fixed, INTEGER) if fixed is not None else add(_MAX_DSCALE, agg, INTEGER)
        else:  # an integer: summed as a decimal wide enough not to overflow, as PostgreSQL's is
            total, dscale = add(_SUM_WIDE, agg, NUMERIC), p.Literal(0, INTEGER)
        count = add(_COUNT, agg, BIGINT)
        if operation == "avg":
            parts[j] = (total, count, dscale)
            continue
        scale = numeric_scale.variance_scale(agg, reduce)
        assert scale is not None
        squares = add(_sum_of_squares(scale), agg, NUMERIC)
        which = p.Literal(list(VARIANCES).index(agg.func.name), INTEGER)
        parts[j] = (count, total, squares, p.Literal(scale, INTEGER), which)
        # The aggregate itself is no longer read here (Spark would compute it in double
        # precision): it gives its place to the count, unless something else reads it.
        if not _read_elsewhere(m, filters, ref.index, j):
            aggregates_[ref.index - base] = aggregates_[count.index - base]
    rel = replace(reduce, aggregates=tuple(aggregates_), names=tuple(names))
    for f in reversed(filters):
        rel = p.Filter(rel, f.predicate)
    return rel, parts


def _sum_of_squares(scale: int) -> Function:
    """The exact sum of the squares of values of this scale: decimal(18, s) squared is
    decimal(37, 2s), within Spark's 38 digits (a larger value fails with an overflow)."""
    x = f"cast({{0}} as decimal(18, {scale}))"
    return _aggregate("sum", f"sum({x} * {x})")


def _read_elsewhere(m: p.Map, filters: list[p.Filter], index: int, target: int) -> bool:
    """Whether column `index` of the GROUP BY is read other than by select-list expression
    `target` (by another expression or a HAVING)."""
    exprs = [e for k, e in enumerate(m.exprs) if k != target] + [f.predicate for f in filters]
    if any(p.contains(e, p.Subquery) for e in exprs):
        return True  # a subquery's plan is not looked into: it may read it
    found = False

    def look(node: object) -> None:
        nonlocal found
        found = found or (isinstance(node, p.ColRef) and node.level == 0 and node.index == index)

    for e in exprs:
        p.transform(e, look)
    return found
