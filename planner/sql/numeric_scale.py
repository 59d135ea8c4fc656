"""The display scale of unconstrained numeric results, where PostgreSQL's rules fix it.

A PostgreSQL numeric value carries its own scale (digits after the point): `10.10 * 2`
is 20.20, `1.5 + 1` is 2.5, `round(x, 3)` has three digits. Spark's decimals have one
scale per column, and sparkwire stores an unconstrained numeric at scale 10 and prints
it without the padding zeros. For a result computed from constants, typed columns and
these operations the scale is the same for every row, so it is known here and the result
is printed with it (`SqlType.display_scale`). Where it depends on the values (division,
avg, sqrt, a stored unconstrained numeric) this gives None, and the value prints without
its padding zeros, as it always has; a one-shot query's top-level division, avg, sqrt, ln,
log, exp or power (`per_value_targets`) can instead be computed value by value as
PostgreSQL would (planner.sql.value_scale, `SqlType.per_value_scale`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from planner import pg_extract
from planner.pg_numeric import VARIANCES
from planner.sql import plan as p
from planner.types import SqlType

# numeric_add/sub keep the larger scale, numeric_mul the sum; numeric_mod the larger.
_LARGER = frozenset({"+", "-", "%"})
# Functions whose numeric result has the scale of their (first) argument.
_SAME = frozenset({"abs", "numeric"})  # (sum, min and max are aggregates: _aggregate_scale)
# Functions whose result has no digits after the point (with no scale argument).
_WHOLE = frozenset({"ceil", "ceiling", "floor", "round", "trunc", "div"})

Scales = list[int | None]
# Window functions and aggregates whose numeric result has their first argument's scale.
_WINDOW_SAME = frozenset({"sum", "min", "max", "first_value", "last_value", "nth_value", "lag", "lead"})
# A scale meaning: PostgreSQL picks it value by value, and the value arrives as its text
PER_VALUE = -1

# The numeric operators and functions whose result scale depends on the operands' values,
# by OID (PostgreSQL 15's pg_operator / pg_proc), and the planner.pg_numeric operation.
_OPERATORS = {1761: "div", 1038: "power"}  # numeric / numeric, numeric ^ numeric
_FUNCTIONS = {1730: "sqrt", 1732: "exp", 1734: "ln", 1736: "log", 1741: "log10", 1481: "log10",
              1738: "power", 2169: "power", 1777: "to_number"}
_AVERAGES = frozenset({2100, 2101, 2102, 2103})  # avg of bigint, integer, smallint, numeric


@dataclass(frozen=True)
class Target:
    """A top-level output column computed value by value: the top Map's expression `expr`
    (its position among the Map's expressions), a pg_numeric operation, and whether the
    numeric is shown cast to text (`avg(x)::text`)."""

    expr: int
    operation: str
    as_text: bool


def top_map(rel: p.Rel) -> tuple[p.Project | None, p.TopK | None, p.Map] | None:
    """A query's top: [Project] ∘ [TopK] ∘ Map (the select list), or None."""
    project = rel if isinstance(rel, p.Project) else None
    inner = project.input if project is not None else rel
    top = inner if isinstance(inner, p.TopK) else None
    m = top.input if top is not None else inner
    return (project, top, m) if isinstance(m, p.Map) else None


def per_value_targets(rel: p.Rel) -> dict[int, Target]:
    """The output columns of query `rel` that are one of the value-scaled operations,
    applied at the top of its select list: {output column: Target}."""
    found = top_map(rel)
    if found is None:
        return {}
    project, _top, m = found
    width = len(p.columns(m.input))
    outputs = project.outputs if project is not None else range(width + len(m.exprs))
    targets = {}
    for i, k in enumerate(outputs):
        if k < width:
            continue
        e, as_text = m.exprs[k - width], False
        if isinstance(e, p.Cast) and _is_text(e.type) and _is_numeric(e.arg.type):
            e, as_text = e.arg, True
        operation = _operation(e, m.input)
        if operation is not None:
            targets[i] = Target(k - width, operation, as_text)
    return targets


def reduce_below(rel: p.Rel) -> p.Reduce | None:
    """The GROUP BY a select list reads, through its HAVING filters."""
    while isinstance(rel, p.Filter):
        rel = rel.input
    return rel if isinstance(rel, p.Reduce) else None


def _operation(e: p.Expr, source: p.Rel) -> str | None:
    if not _is_numeric(e.type):
        return None
    match e:
        case p.OpCall(op=op) if op.oid in _OPERATORS:
            return _OPERATORS[op.oid]
        case p.Call(func=f) if f.oid in _FUNCTIONS:
            return _FUNCTIONS[f.oid]
        case p.WindowCall(func=f) if f.oid in _AVERAGES:
            return "window_avg"
        case p.ColRef(level=0, index=i):
            r = reduce_below(source)
            if r is not None and i >= len(r.keys):
                agg = r.aggregates[i - len(r.keys)]
                if agg.func.oid in _AVERAGES and not agg.distinct:
                    return "avg"
                if agg.func.name in VARIANCES and not agg.distinct and variance_scale(agg, r) is not None:
                    return "variance"
    return None


def variance_scale(agg: p.AggCall, reduce: p.Reduce) -> int | None:
    """The scale of a variance-family aggregate's argument when every value has the same
    (0 for an integer): its squares are then summed exactly (planner.sql.value_scale)."""
    [arg] = agg.args
    if _is_integer(arg.type):
        return 0
    return expr_scale(arg, output_scales(reduce.input)) if _is_numeric(arg.type) else None


def _is_text(t: SqlType) -> bool:
    return t.base.name in ("text", "character varying") and t.typmod < 0 and not t.is_array


def output_scales(rel: p.Rel) -> Scales:
    """For each output column of `rel`, its numeric display scale if fixed, else None."""
    match rel:
        case p.Get(columns=cols):
            return [_declared(c.type) for c in cols]
        case p.Constant(rows=rows, columns=cols):
            if not rows:
                return [None] * len(cols)
            return [_same([expr_scale(e, []) for e in col if not _is_null(e)])
                    for col in zip(*rows, strict=True)]
        case p.Map(input=inner, exprs=exprs):
            base = output_scales(inner)
            return base + [expr_scale(e, base) for e in exprs]
        case p.Project(input=inner, outputs=outputs):
            base = output_scales(inner)
            return [base[i] for i in outputs]
        case p.Filter(input=inner) | p.Distinct(input=inner) | p.TopK(input=inner):
            return output_scales(inner)
        case p.Join(left=left, right=right):
            return output_scales(left) + output_scales(right)
        case p.Reduce(input=inner, keys=keys, aggregates=aggs):
            base = output_scales(inner)
            return [expr_scale(k, base) for k in keys] + [_aggregate_scale(a, base) for a in aggs]
        case p.TableFunction():
            return _function_scales(rel, [])
        case p.FlatMap(input=inner, funcs=funcs):
            base = output_scales(inner)
            return base + [s for f in funcs for s in _function_scales(f, base)]
        case p.SetOp(left=left, right=right):
            return [a if a == b else None
                    for a, b in zip(output_scales(left), output_scales(right), strict=True)]
    return [None] * len(p.columns(rel))


def _function_scales(f: p.TableFunction, inputs: Scales) -> Scales:
    if f.func.name == "generate_series" and f.func.result == "numeric":
        # the start, then start + i * step: the start's scale where it is the larger (the
        # binder refuses a step with more digits)
        return [expr_scale(f.args[0], inputs)] + [None] * f.ordinality
    return [None] * len(f.columns)


def expr_scale(e: p.Expr, inputs: Scales) -> int | None:
    """The scale every value of numeric expression `e` has, given its input columns'."""
    match e:
        case p.Literal(value=Decimal() as value) if value.is_finite():
            return max(-value.as_tuple().exponent, 0)
        case p.Literal(value=int() as value) if not isinstance(value, bool):
            return 0
        case p.ColRef(level=0, index=i):
            return inputs[i] if inputs[i] is not None else _declared(e.type)
        case p.ColRef():
            return _declared(e.type)
        case p.Cast(arg=arg, type=t):
            declared = _declared(t)
            if declared is not None:
                return declared
            if _is_integer(arg.type):
                return 0
            return expr_scale(arg, inputs) if _is_numeric(arg.type) else None
        case p.OpCall(op=op, args=(a, b)):
            left, right = expr_scale(a, inputs), expr_scale(b, inputs)
            if left is None or right is None:
                return None
            if op.name in _LARGER:
                return max(left, right)
            return left + right if op.name == "*" else None
        case p.OpCall(op=op, args=(a,)) if op.name in ("-", "+", "@"):
            return expr_scale(a, inputs)
        case p.Call(func=f, args=args):
            return _call_scale(f.name, args, inputs)
        case p.WindowCall(func=f, args=(arg, *rest)) if f.name in _WINDOW_SAME:
            # sum, min and max over a window as over a group; the value functions pass the
            # argument's value through (lag/lead's default too)
            if _is_integer(arg.type):
                return 0
            return _same([expr_scale(a, inputs) for a in (arg, *rest[1:]) if not _is_null(a)])
        case p.Coalesce(args=args):
            return _same([expr_scale(a, inputs) for a in args if not _is_null(a)])
        case p.Case(whens=whens, default=default):
            results = [r for _, r in whens] + [default]
            return _same([expr_scale(r, inputs) for r in results if not _is_null(r)])
    return None


def with_display_scales(types: list[SqlType], scales: Scales) -> list[SqlType]:
    """The output types, an unconstrained numeric one carrying its fixed scale (or the
    mark that PostgreSQL's text of each value arrives)."""
    return [_scaled(t, s) if s is not None and t.base.name == "numeric" and t.typmod < 0 and not t.is_array else t
            for t, s in zip(types, scales, strict=True)]


def _scaled(t: SqlType, s: int) -> SqlType:
    if s == PER_VALUE:
        return SqlType(t.base, t.typmod, t.is_array, per_value_scale=True)
    return SqlType(t.base, t.typmod, t.is_array, s)


def _call_scale(name: str, args: tuple[p.Expr, ...], inputs: Scales) -> int | None:
    if name == "extract" and len(args) == 2 and isinstance(args[0], p.Literal) and isinstance(args[0].value, str):
        return pg_extract.scale(args[0].value, pg_extract.Source(args[1].type.base.name))
    if name in ("round", "trunc") and len(args) == 2:
        digits = args[1]
        if isinstance(digits, p.Literal) and isinstance(digits.value, int) and _is_numeric(args[0].type):
            return max(digits.value, 0)
        return None
    if name in ("gcd", "lcm") and len(args) == 2 and _is_numeric(args[0].type):
        left, right = expr_scale(args[0], inputs), expr_scale(args[1], inputs)
        return max(left, right) if left is not None and right is not None else None
    if name in _WHOLE and _is_numeric(args[0].type if args else None):
        return 0
    if name in _SAME and len(args) == 1:
        return expr_scale(args[0], inputs)
    return None


def _aggregate_scale(a: p.AggCall, inputs: Scales) -> int | None:
    if a.func.name in ("sum", "min", "max") and len(a.args) == 1 and _is_numeric(a.type):
        if _is_integer(a.args[0].type):
            return 0
        return expr_scale(a.args[0], inputs)
    return None


def _same(scales: list[int | None]) -> int | None:
    """PostgreSQL's CASE and COALESCE pass the chosen value through with its scale."""
    return scales[0] if scales and len(set(scales)) == 1 else None


def _is_null(e: p.Expr) -> bool:
    """A NULL constant (possibly cast): it has no digits, so it does not unsettle a scale."""
    while isinstance(e, p.Cast):
        e = e.arg
    return isinstance(e, p.Literal) and e.value is None


def _declared(t: SqlType) -> int | None:
    return t.fixed_scale if _is_numeric(t) else None


def _is_numeric(t: SqlType | None) -> bool:
    return t is not None and t.base.name == "numeric" and not t.is_array


def _is_integer(t: SqlType | None) -> bool:
    return t is not None and t.base.name in ("smallint", "integer", "bigint") and not t.is_array
