"""Aggregate calls in the binder: `f(DISTINCT x ORDER BY y) FILTER (WHERE c)` and ordered-set
aggregates' `WITHIN GROUP (ORDER BY x)`.

PostgreSQL's parse_func.c (ParseFuncOrColumn) and parse_agg.c (transformAggregateCall) for
the rules and errors: the arguments, ORDER BY and FILTER are bound where aggregates are not
allowed (42803 "cannot be nested", or "not allowed in FILTER"; window functions 42803 or
42P20); FILTER is a boolean condition (42804); with DISTINCT every ORDER BY expression is
one of the arguments (42P10), and the input is sorted by the ORDER BY keys and then by the
remaining arguments — which is why `array_agg(DISTINCT x)` comes out in x's order. The
modifiers on a function that is not an aggregate are 42809. ORDER BY is kept only for the
aggregates whose value shows their input's order; the others' results do not depend on it.
`Binder` (planner.sql.bind) takes these methods from `AggregateBinding`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner import functions
from planner.errors import FEATURE_NOT_SUPPORTED, WRONG_OBJECT_TYPE, SqlError
from planner.functions import ORDERED_SET
from planner.pg_parse import Node
from planner.pg_parse import position_of as _location
from planner.sql import coerce
from planner.sql import plan as p
from planner.sql.bind_windows import sort_key
from planner.sql.resolve import resolved_call
from planner.types import SqlType

GROUPING_ERROR = "42803"
INVALID_COLUMN_REFERENCE = "42P10"
# The aggregates whose value shows the order of their input.
ORDER_SENSITIVE = frozenset({"array_agg", "string_agg", "jsonb_agg", "jsonb_object_agg", "json_agg"})


@dataclass(frozen=True)
class AggSlot:
    """An aggregate's place in the select list until the Reduce's columns are known."""

    index: int
    type: SqlType


class AggregateBinding:
    """The aggregate calls of `planner.sql.bind.Binder`."""

    expr: Any  # Binder.expr: a parse node → a bound expression
    _condition: Any  # Binder._condition: a parse node and its clause → a boolean expression
    _levels: list[Any]  # Binder._levels: each with .aggregates and .agg_context

    def _aggregate_call(self, n: dict, name: str, overloads: list[functions.Function],
                        within: list[Node] | None, where: int | None) -> AggSlot:
        """A call of an aggregate, collected into its query level's aggregates."""
        level = self._levels[-1] if self._levels else None
        if level is None or level.aggregates is None:
            context = level.agg_context if level else "this context"
            if not context:
                raise SqlError(GROUPING_ERROR, "aggregate function calls cannot be nested", position=where)
            raise SqlError(GROUPING_ERROR, f"aggregate functions are not allowed in {context}", position=where)
        star, distinct = bool(n.get("agg_star")), bool(n.get("agg_distinct"))
        collected, level.aggregates = level.aggregates, None
        try:
            given = [] if star else [self.expr(a) for a in n.get("args") or ()]
            args = given + [self.expr(x) for x in within or ()]
            sorts = [] if within is not None else [item["SortBy"] for item in n.get("agg_order") or ()]
            keys = [(self.expr(s["node"]), sort_key(0, s), _location(s["node"])) for s in sorts]
        finally:
            level.aggregates = collected
        condition = self._filter_condition(n)
        if name in ("jsonb_agg", "json_agg") and len(args) == 1 and args[0].type == coerce.UNKNOWN:
            raise SqlError("42804", "could not determine polymorphic type because input has type unknown",
                           position=where)
        if distinct:
            for key, _, at in keys:
                if key not in given:
                    raise SqlError(INVALID_COLUMN_REFERENCE, "in an aggregate with DISTINCT, ORDER BY "
                                                             "expressions must appear in argument list", position=at)
        func, bound, result = resolved_call(name, overloads, args, where)
        if within is not None and func.name not in ORDERED_SET:
            raise SqlError(WRONG_OBJECT_TYPE, f"WITHIN GROUP specified, but {name} is not an ordered-set "
                                              "aggregate function", position=where)
        if func.name in ORDERED_SET and (coerce.category(bound[-1].type) != "N" or bound[-1].type.is_array):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{name} over {bound[-1].type.display()} is not supported: "
                                                  "Spark's is over numbers only", position=where)
        order = _input_order(func.name, given, bound, keys, distinct)
        parts = [*bound, *(k.expr for k in order), *([condition] if condition is not None else [])]
        if parts and not any(p.refers_at(a, 0) for a in parts) and any(p.refers_outward(a, 1) for a in parts):
            # PostgreSQL evaluates such an aggregate in the outer query that owns its columns:
            # refused where that query cannot have one (a LATERAL subquery's FROM neighbours)
            owner = self._levels[-1 - min(lv for a in parts for lv in p.levels_used(a) if lv > 0)]
            if owner.aggregates is None and owner.agg_context:
                raise SqlError(GROUPING_ERROR, f"aggregate functions are not allowed in {owner.agg_context}",
                               position=where)
            raise p.NotYet("an aggregate of an outer query's columns is not supported yet", position=where)
        level.aggregates.append(p.AggCall(func, bound, distinct, result, condition, order))
        return AggSlot(len(level.aggregates) - 1, result)

    def _filter_condition(self, n: dict) -> p.Expr | None:
        """FILTER (WHERE c) of an aggregate call, plain or over a window: a boolean (42804),
        bound where aggregates and window functions are not allowed ("… not allowed in
        FILTER")."""
        if n.get("agg_filter") is None:
            return None
        level = self._levels[-1]
        saved, level.aggregates, level.agg_context = level.aggregates, None, "FILTER"
        try:
            return self._condition(n["agg_filter"], "FILTER")
        finally:
            level.aggregates, level.agg_context = saved, ""

    def _within_group(self, n: dict, name: str, known: bool, where: int | None) -> list[Node] | None:
        """An ordered-set aggregate's WITHIN GROUP (ORDER BY x): [x], which its signature takes
        after the direct arguments (None for any other call); PostgreSQL's 42809 for WITHIN
        GROUP on another function, or an ordered-set aggregate without it."""
        ordered_set = name in ORDERED_SET and known
        if not n.get("agg_within_group"):
            if ordered_set:
                raise SqlError(WRONG_OBJECT_TYPE, f"WITHIN GROUP is required for ordered-set aggregate {name}",
                               position=where)
            return None
        sorts = [item["SortBy"] for item in n["agg_order"]]
        if not ordered_set:  # found by every argument first, as PostgreSQL does (42883), then 42809
            return [sort["node"] for sort in sorts]
        if any(sort.get("sortby_dir", "SORTBY_DEFAULT") not in ("SORTBY_DEFAULT", "SORTBY_ASC")
               or sort.get("sortby_nulls", "SORTBY_NULLS_DEFAULT") != "SORTBY_NULLS_DEFAULT" or sort.get("useOp")
               for sort in sorts):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{name} WITHIN GROUP (ORDER BY ... DESC or NULLS) is not "
                                                  "supported", position=where)
        for a in n.get("args") or ():
            fraction = self.expr(a)
            if not isinstance(fraction, p.Literal):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{name} of a fraction that is not a constant is not "
                                                      "supported", position=where)
            value = fraction.value
            if value is not None and not isinstance(value, str) and not 0 <= value <= 1:
                raise SqlError("22003", f"percentile value {value} is not between 0 and 1", position=where)
        return [sort["node"] for sort in sorts]


def not_an_aggregate(n: dict, name: str, where: int | None) -> None:
    """PostgreSQL's 42809 for an aggregate's modifiers on a call of a plain function."""
    for present, what in ((n.get("agg_star"), f"{name}(*)"), (n.get("agg_distinct"), "DISTINCT"),
                          (n.get("agg_within_group"), "WITHIN GROUP"),
                          (n.get("agg_order") and not n.get("agg_within_group"), "ORDER BY"),
                          (n.get("agg_filter") is not None, "FILTER")):
        if present:
            raise SqlError(WRONG_OBJECT_TYPE, f"{what} specified, but {name} is not an aggregate function",
                           position=where)


def _input_order(name: str, given: list[p.Expr], bound: tuple[p.Expr, ...],
                 keys: list[tuple[p.Expr, p.SortKey, int | None]], distinct: bool) -> tuple[p.WindowKey, ...]:
    """The order an aggregate reads its input in, where its value shows it: the ORDER BY keys
    (an argument named again is the argument as the signature takes it), then, with
    DISTINCT, the arguments not among them, ascending (PostgreSQL sorts to find duplicates)."""
    if name not in ORDER_SENSITIVE:
        return ()
    order = [p.WindowKey(bound[given.index(e)] if e in given else e, k.descending, k.nulls_first)
             for e, k, _ in keys]
    if distinct:
        order += [p.WindowKey(a, False, False) for a in bound if a not in [k.expr for k in order]]
    return tuple(order)
