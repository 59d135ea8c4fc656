"""Subqueries that refer to a query two levels out, lifted one level so that Spark can run them.

Spark resolves an outer reference in the enclosing query only. A subquery S inside a
subquery M that names columns of the query around M, and none of M's own, has one value per
row of that outer query: it is computed there, as a column beside the outer operator's input
(a correlated subquery one level deep, which Spark runs), and M reads that column as its own
outer reference. Only EXISTS and scalar subqueries that cannot give two rows, found among the
expressions of M's own query level, are lifted (another scalar subquery, computed for outer
rows M would not have run it for, could raise 21000 where PostgreSQL does not; an `x IN
(subquery)` compares a value of M's rows); what is not lifted stays the 0A000 it was. Pure: operator trees in and out.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

from planner.sql import plan as p


def lifted(rel: p.Rel) -> p.Rel:
    """`rel` with each liftable subquery two levels deep computed one level out."""
    rel = _map_children(rel, lifted)
    match rel:
        case p.Filter(input=inner, predicate=pred):
            found: list[p.Subquery] = []
            new = _lift_in(pred, found)
            if not found:
                return rel
            width = len(p.columns(inner))
            below = p.Map(inner, tuple(found), tuple(f"?lifted{i}" for i in range(len(found))))
            return p.Project(p.Filter(below, _renumbered(new, width)), tuple(range(width)),
                             tuple(c.name for c in p.columns(inner)))
        case p.Map(input=inner, exprs=exprs, names=names):
            found = []
            news = [_lift_in(e, found) for e in exprs]
            if not found:
                return rel
            width = len(p.columns(inner))
            below = p.Map(inner, tuple(found), tuple(f"?lifted{i}" for i in range(len(found))))
            top = p.Map(below, tuple(_renumbered(e, width) for e in news), names)
            outputs = tuple(range(width)) + tuple(range(width + len(found), width + len(found) + len(exprs)))
            return p.Project(top, outputs, tuple(c.name for c in p.columns(inner)) + names)
    return rel


def _rebuilt(rel: p.Rel, on_rel, on_expr) -> p.Rel:
    """`rel` with `on_rel` applied to its child relations and `on_expr` (a function for
    p.transform) to the expressions of its other fields."""
    changes = {}
    for f in fields(rel):
        value = getattr(rel, f.name)
        if isinstance(value, p.Rel.__args__):  # type: ignore[attr-defined]
            new = on_rel(value)
        elif isinstance(value, tuple) or (is_dataclass(value) and not isinstance(value, type)):
            new = _each(value, on_expr)
        else:
            continue
        if new != value:
            changes[f.name] = new
    return replace(rel, **changes) if changes else rel


def _map_children(rel: p.Rel, fn) -> p.Rel:
    """`rel` with `fn` applied to its child relations and to the plans of its subqueries."""
    return _rebuilt(rel, fn, lambda e: _subquery_mapped(e, fn))


def _each(value: Any, fn) -> Any:
    """An operator's field with `fn` applied to each expression in it (a field may be a
    tuple of them: a Map's expressions, a Reduce's keys and aggregates)."""
    if isinstance(value, tuple):
        return tuple(_each(v, fn) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return p.transform(value, fn)
    return value


def _subquery_mapped(e: Any, fn) -> Any:
    """A subquery with `fn` applied to its plan and to those of the subqueries in its left
    operands (None for another node: p.transform goes on into it)."""
    if not isinstance(e, p.Subquery):
        return None
    return replace(e, rel=fn(e.rel), lhs=tuple(p.transform(x, lambda y: _subquery_mapped(y, fn)) for x in e.lhs))


def _lift_in(e: p.Expr, found: list[p.Subquery]) -> p.Expr:
    """`e` (an expression of the outer operator) with the liftable subqueries inside each of
    its subqueries M replaced by M's outer references to new columns, numbered from 0 in
    `found` (placeholders: _renumbered moves them past the operator's input)."""
    def middle(m: Any) -> Any:
        if not isinstance(m, p.Subquery):
            return None
        return replace(m, rel=_replace_own_level(m.rel, found), lhs=tuple(_lift_in(x, found) for x in m.lhs))
    return p.transform(e, middle)


def _replace_own_level(rel: p.Rel, found: list[p.Subquery]) -> p.Rel:
    """M's plan with the liftable subqueries among its own expressions replaced."""
    def inner(s: Any) -> Any:
        if not isinstance(s, p.Subquery):
            return None
        if (s.kind is p.SubqueryKind.EXISTS or s.kind is p.SubqueryKind.SCALAR and _at_most_one_row(s.rel)) \
                and _only_two_out(s.rel):
            found.append(replace(s, rel=_shifted(s.rel, 1, -1)))
            return p.ColRef(1, -len(found), s.type)  # a placeholder: _renumbered sets the index
        return None

    def walk(r: p.Rel) -> p.Rel:
        return _rebuilt(r, walk, inner)

    return walk(rel)


def _at_most_one_row(rel: p.Rel) -> bool:
    """Whether a scalar subquery's plan cannot give two rows (an aggregate without GROUP BY, a
    LIMIT 1): lifted, it is computed for every row of the outer query, also those M would not
    have run it for, where a second row would be an error (21000) PostgreSQL never raised."""
    while isinstance(rel, p.Project | p.Map | p.Filter):
        rel = rel.input
    match rel:
        case p.Reduce(keys=(), sets=None):
            return True
        case p.TopK(limit=p.Literal(value=int() as n) | p.Cast(arg=p.Literal(value=int() as n))) if n <= 1:
            return True
    return False


def _only_two_out(rel: p.Rel) -> bool:
    """Whether a subquery's plan names the query two levels out and neither the one around it
    nor any further."""
    used = p.levels_used(rel)
    return 2 in used and 1 not in used and not any(level > 2 for level in used)


def _shifted(rel: p.Rel, beyond: int, by: int) -> p.Rel:
    """`rel` with its references to levels at or past `beyond` (counted from its root, one
    more inside each nested subquery) moved `by` levels."""
    def expr(e: Any, depth: int) -> Any:
        def fn(x: Any) -> Any:
            if isinstance(x, p.ColRef) and x.level >= beyond + depth:
                return replace(x, level=x.level + by)
            if isinstance(x, p.Subquery):
                return replace(x, rel=rels(x.rel, depth + 1), lhs=tuple(expr(y, depth) for y in x.lhs))
            return None
        return p.transform(e, fn)

    def rels(r: p.Rel, depth: int) -> p.Rel:
        return _rebuilt(r, lambda child: rels(child, depth), lambda x: expr(x, depth))

    return rels(rel, 0)


def _renumbered(e: p.Expr, width: int) -> p.Expr:
    """The placeholders `ColRef(1, -k)` inside `e`'s subqueries as the k-th lifted column,
    past the operator's `width` input columns."""
    def in_rel(r: p.Rel, depth: int) -> p.Rel:
        return _rebuilt(r, lambda child: in_rel(child, depth), lambda x: in_expr(x, depth))

    def in_expr(x: Any, depth: int) -> Any:
        def fn(y: Any) -> Any:
            if isinstance(y, p.ColRef) and y.index < 0 and y.level == depth:
                return replace(y, index=width - y.index - 1)
            if isinstance(y, p.Subquery):
                return replace(y, rel=in_rel(y.rel, depth + 1), lhs=tuple(in_expr(z, depth) for z in y.lhs))
            return None
        return p.transform(x, fn)

    return in_expr(e, 0)
