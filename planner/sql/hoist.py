"""Subqueries that refer to a query two or more levels out, made to refer one level out only,
so that Spark can run them: lifted, or given the outer values as columns.

Spark resolves an outer reference in the enclosing query only. A subquery S inside a
subquery M that names columns of the query around M, and none of M's own, has one value per
row of that outer query: it is computed there, as a column beside the outer operator's input
(a correlated subquery one level deep, which Spark runs), and M reads that column as its own
outer reference. Only EXISTS and scalar subqueries that cannot give two rows, found among the
expressions of M's own query level, are lifted (another scalar subquery, computed for outer
rows M would not have run it for, could raise 21000 where PostgreSQL does not; an `x IN
(subquery)` compares a value of M's rows).

What is not lifted is *forwarded*: the operator of M's query whose expression holds S (a
WHERE or a select list) reads, beside its input's columns, the outer values S names, as
columns computed by a Map below it (`SELECT b, s1.a FROM s2`: a reference one level out,
which Spark resolves in a derived table of a subquery); S then names those columns of its
own enclosing query. Applied from the innermost subqueries out, a reference k levels out
moves one level per query it crosses. A reference elsewhere (a join's ON, an aggregate's
argument) stays the 0A000 it was. Pure: operator trees in and out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from typing import Any

from planner.sql import plan as p


def lifted(rel: p.Rel) -> p.Rel:
    """`rel` with each liftable subquery two levels deep computed one level out."""
    rel = _map_children(rel, lifted)
    if not isinstance(rel, p.Filter | p.Map):
        return rel
    found: list[p.Subquery] = []
    news = [_lift_in(e, found) for e in _exprs_of(rel)]
    if not found:
        return rel
    width = len(p.columns(rel.input))
    return _widened(rel, found, "lifted", [_renumbered(e, width) for e in news])


def _exprs_of(rel: p.Filter | p.Map) -> tuple[p.Expr, ...]:
    return (rel.predicate,) if isinstance(rel, p.Filter) else rel.exprs


def _widened(rel: p.Filter | p.Map, extra: list[p.Expr], prefix: str, news: list[p.Expr]) -> p.Rel:
    """`rel` over its input's columns and `extra` ones computed beside them by a Map, its
    expressions now `news` (which read them), the extra columns projected away again: the
    output is `rel`'s."""
    inner = rel.input
    width, n = len(p.columns(inner)), len(extra)
    below = p.Map(inner, tuple(extra), tuple(f"?{prefix}{i}" for i in range(n)))
    kept = tuple(c.name for c in p.columns(inner))
    if isinstance(rel, p.Filter):
        return p.Project(p.Filter(below, news[0]), tuple(range(width)), kept)
    outputs = (*range(width), *range(width + n, width + n + len(news)))
    return p.Project(p.Map(below, tuple(news), rel.names), outputs, kept + rel.names)


def forwarded(rel: p.Rel) -> p.Rel:
    """`rel` with every subquery in a Filter's or a Map's expressions (or an aggregate's input,
    computed by a Map below it) naming columns one level out at most; the outer values it named
    further out are columns of the operator's input."""
    # innermost first: what they forward, this level passes on
    return _forwarded_here(_map_children(rel, forwarded))


def _forwarded_here(rel: p.Rel) -> p.Rel:
    match rel:
        case p.Join(lateral=True, left=left, right=right, on=on):
            # the right sees the left's columns one level out, as a subquery its operator's
            width, slots = len(p.columns(left)), {}
            new_right = _redirected(right, width, slots)
            if not slots:
                return rel
            n, right_width = len(slots), len(p.columns(right))

            def past_left(x: p.ColRef, depth: int) -> p.ColRef | None:  # the right's columns move past them
                return replace(x, index=x.index + n) if x.level == depth and x.index >= width else None

            values = _outer_values(slots)
            join = replace(rel, left=p.Map(left, tuple(values), tuple(f"?outer{i}" for i in range(n))),
                           right=new_right,
                           on=_refs_mapped(on, past_left) if on is not None else None)
            outputs = (*range(width), *range(width + n, width + n + right_width))
            return p.Project(join, outputs, tuple(c.name for c in p.columns(rel)))
        case p.Reduce():
            below = inputs_below(rel)
            return rel if below is rel else replace(below, input=_forwarded_here(below.input))
        case p.Filter() | p.Map():
            width, slots = len(p.columns(rel.input)), {}
            news = [_forward_in(e, width, slots) for e in _exprs_of(rel)]
            return _widened(rel, _outer_values(slots), "outer", news) if slots else rel
    return rel


def inputs_below(r: p.Reduce) -> p.Reduce:
    """The Reduce with each aggregate input (argument, FILTER, ORDER BY key) that holds a
    subquery or an outer query's column computed below it, by a Map. Spark refuses a
    subquery inside a higher-order function (the collecting aggregates' transform and
    array_sort) and an aggregate over an expression mixing outer and local columns (its
    "correlated predicate that has both outer and local references")."""
    base = len(p.columns(r.input))
    lifted: list[p.Expr] = []

    def lift(e: p.Expr) -> p.Expr:
        if not (p.contains(e, p.Subquery) or p.refers_outward(e, 1)):
            return e
        if e not in lifted:
            lifted.append(e)
        return p.ColRef(0, base + lifted.index(e), e.type)

    aggregates = tuple(a if a.func.oid == 0 else  # grouping(): its arguments are keys
                       replace(a, args=tuple(lift(x) for x in a.args),
                               filter=lift(a.filter) if a.filter is not None else None,
                               order=tuple(replace(k, expr=lift(k.expr)) for k in a.order))
                       for a in r.aggregates)
    if not lifted:
        return r
    names = tuple(f"?input{i}" for i in range(len(lifted)))
    return replace(r, input=p.Map(r.input, tuple(lifted), names), aggregates=aggregates)


def _outer_values(slots: dict[tuple[int, int], p.ColRef]) -> list[p.Expr]:
    """The outer columns in `slots`, in slot order, as the operator holding them sees them."""
    return [p.ColRef(level, index, ref.type) for (level, index), ref in slots.items()]


def _forward_in(e: p.Expr, width: int, slots: dict[tuple[int, int], p.ColRef]) -> p.Expr:
    """`e` (an operator's expression over `width` input columns) with each reference inside
    its subqueries to a column two or more levels out of the subquery — (level, index) as
    the operator sees it — replaced by a reference to input column `width + slot`."""
    def outer(x: Any) -> Any:
        if not isinstance(x, p.Subquery):
            return None
        return replace(x, rel=_redirected(x.rel, width, slots), lhs=tuple(_forward_in(y, width, slots) for y in x.lhs))
    return p.transform(e, outer)


def _redirected(rel: p.Rel, width: int, slots: dict[tuple[int, int], p.ColRef]) -> p.Rel:
    """A subquery's plan with its references past the operator holding it redirected to the
    slots' columns of the operator's input (one level out of the subquery's root)."""
    def redirect(x: p.ColRef, depth: int) -> p.ColRef | None:
        if x.level - depth < 2:
            return None
        key = (x.level - depth - 1, x.index)  # as the operator holding the subquery sees it
        slots.setdefault(key, x)
        return p.ColRef(depth + 1, width + list(slots).index(key), x.type)

    return _refs_mapped(rel, redirect)


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
            found.append(replace(s, rel=shifted_levels(s.rel, 1, -1)))
            return p.ColRef(1, -len(found), s.type)  # a placeholder: _renumbered sets the index
        return None

    def walk(r: p.Rel) -> p.Rel:
        if isinstance(r, p.Join) and r.lateral:  # its right is a level further in
            return replace(r, left=walk(r.left), on=p.transform(r.on, inner) if r.on is not None else None)
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


def shifted_levels(rel: p.Rel, beyond: int, by: int) -> p.Rel:
    """`rel` with its references to levels at or past `beyond` (counted from its root, one
    more inside each nested subquery) moved `by` levels."""
    return _refs_mapped(rel, lambda x, depth: replace(x, level=x.level + by) if x.level >= beyond + depth else None)


def _renumbered(e: p.Expr, width: int) -> p.Expr:
    """The placeholders `ColRef(1, -k)` inside `e`'s subqueries as the k-th lifted column,
    past the operator's `width` input columns."""
    return _refs_mapped(e, lambda y, depth: replace(y, index=width - y.index - 1)
                        if y.index < 0 and y.level == depth else None)


def _refs_mapped(value: Any, on_ref: Callable[[p.ColRef, int], p.Expr | None], depth: int = 0) -> Any:
    """`value` (a plan or an expression) with `on_ref(ref, depth)` in place of each column
    reference it gives a replacement for; `depth` counts the subqueries around the reference
    inside `value`, so a reference's level minus its depth is the level it names as seen
    from `value`'s root."""
    def fn(x: Any) -> Any:
        if isinstance(x, p.ColRef):
            return on_ref(x, depth)
        if isinstance(x, p.Subquery):
            return replace(x, rel=_refs_mapped(x.rel, on_ref, depth + 1),
                           lhs=tuple(_refs_mapped(y, on_ref, depth) for y in x.lhs))
        return None

    if isinstance(value, p.Join) and value.lateral:  # its right is a level further in
        return replace(value, left=_refs_mapped(value.left, on_ref, depth),
                       right=_refs_mapped(value.right, on_ref, depth + 1),
                       on=p.transform(value.on, fn) if value.on is not None else None)
    if isinstance(value, p.Rel.__args__):  # type: ignore[attr-defined]
        return _rebuilt(value, lambda child: _refs_mapped(child, on_ref, depth), fn)
    return p.transform(value, fn)