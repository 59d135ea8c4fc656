"""Window functions in the binder: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`, named
windows (`WINDOW w AS (...)`, `OVER w`, `OVER (w ORDER BY ...)`) and explicit frames.

PostgreSQL's parse_clause.c (transformWindowDefinitions) and parse_func.c for the rules
and errors: a window referred to by `OVER (w ...)` may not have its PARTITION BY
overridden, nor its ORDER BY when it has one, nor have a frame of its own (42P20); an
unknown window is 42704. Frames: ROWS and RANGE, bounded by UNBOUNDED, CURRENT ROW or a
constant offset (22004 for NULL, 22013 for a negative one; RANGE offsets over one numeric
ORDER BY key, 42P20 otherwise; 0A000 over a type PostgreSQL has no offsets for). Not here
yet (the older path runs them): GROUPS frames, EXCLUDE, offsets that are not integer
constants, RANGE offsets over dates, times and timestamps (interval offsets). A frame
that ends before it starts is 0A000 (PostgreSQL gives empty frames; Spark refuses it).
An aggregate over a window takes FILTER (WHERE …); DISTINCT or ORDER BY inside its call is
PostgreSQL's own 0A000. `Binder` (planner.sql.bind) takes these methods from `WindowBinding`.
"""

from __future__ import annotations

from typing import Any

from planner import functions
from planner.errors import FEATURE_NOT_SUPPORTED, WRONG_OBJECT_TYPE, SqlError
from planner.functions import ORDERED_SET, Kind
from planner.sql import coerce
from planner.sql import plan as p
from planner.sql.bind_records import order_fields
from planner.sql.resolve import resolved_call

GROUPING_ERROR = "42803"
WINDOWING_ERROR = "42P20"
UNDEFINED_OBJECT = "42704"

# PostgreSQL 15's FRAMEOPTION_* bits (nodes/parsenodes.h) that this reads.
_NONDEFAULT, _RANGE, _ROWS, _GROUPS = 0x1, 0x2, 0x4, 0x8
_START_UNBOUNDED_PRECEDING, _END_UNBOUNDED_PRECEDING = 0x20, 0x40
_START_UNBOUNDED_FOLLOWING, _END_UNBOUNDED_FOLLOWING = 0x80, 0x100
_START_CURRENT_ROW, _END_CURRENT_ROW = 0x200, 0x400
_START_OFFSET_PRECEDING, _END_OFFSET_PRECEDING = 0x800, 0x1000
_START_OFFSET_FOLLOWING, _END_OFFSET_FOLLOWING = 0x2000, 0x4000
_EXCLUDE = 0x8000 | 0x10000 | 0x20000
_DEFAULT_FRAME = 0x2 | 0x20 | 0x400  # RANGE UNBOUNDED PRECEDING to CURRENT ROW

# (bit, side) for a frame's start and its end
_STARTS = ((_START_UNBOUNDED_PRECEDING, p.FrameSide.UNBOUNDED_PRECEDING),
           (_START_UNBOUNDED_FOLLOWING, p.FrameSide.UNBOUNDED_FOLLOWING),
           (_START_CURRENT_ROW, p.FrameSide.CURRENT_ROW),
           (_START_OFFSET_PRECEDING, p.FrameSide.PRECEDING), (_START_OFFSET_FOLLOWING, p.FrameSide.FOLLOWING))
_ENDS = ((_END_UNBOUNDED_PRECEDING, p.FrameSide.UNBOUNDED_PRECEDING),
         (_END_UNBOUNDED_FOLLOWING, p.FrameSide.UNBOUNDED_FOLLOWING),
         (_END_CURRENT_ROW, p.FrameSide.CURRENT_ROW),
         (_END_OFFSET_PRECEDING, p.FrameSide.PRECEDING), (_END_OFFSET_FOLLOWING, p.FrameSide.FOLLOWING))
_RANGE_OFFSET_TYPES = frozenset({"smallint", "integer", "bigint", "numeric", "real", "double precision"})
# PostgreSQL takes interval offsets over these; not covered here yet
_RANGE_INTERVAL_TYPES = frozenset({"date", "time without time zone", "time with time zone",
                                   "timestamp without time zone", "timestamp with time zone", "interval"})


def sort_key(index: int, sort: dict) -> p.SortKey:
    """An ORDER BY item's direction and NULL order, as PostgreSQL defaults them."""
    if sort.get("useOp"):
        raise p.NotYet("ORDER BY USING is not supported")
    descending = sort.get("sortby_dir") == "SORTBY_DESC"
    nulls = sort.get("sortby_nulls", "SORTBY_NULLS_DEFAULT")
    nulls_first = descending if nulls == "SORTBY_NULLS_DEFAULT" else nulls == "SORTBY_NULLS_FIRST"
    return p.SortKey(index, descending, nulls_first)


class WindowBinding:
    """The window functions of `planner.sql.bind.Binder`."""

    expr: Any  # Binder.expr: a parse node → a bound expression
    _filter_condition: Any  # Binder._filter_condition (planner.sql.bind_aggregates): FILTER's condition
    _levels: list[Any]  # Binder._levels: each with .aggregates, .agg_context and .windows

    def _window_call(self, n: dict, name: str, schema: str | None, where: int | None) -> p.Expr:
        """`f(...) OVER (...)`: a window function, or an aggregate over the window (not one
        of the query's aggregates: it keeps every row)."""
        level = self._levels[-1] if self._levels else None
        if level is None or level.aggregates is None:
            if level is not None and level.agg_context:
                raise SqlError(WINDOWING_ERROR, f"window functions are not allowed in {level.agg_context}",
                               position=where)
            raise SqlError(GROUPING_ERROR, "aggregate function calls cannot contain window function calls",
                           position=where)
        over = _resolved(n["over"], level.windows, where)
        if n.get("agg_distinct"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "DISTINCT is not implemented for window functions", position=where)
        if n.get("agg_within_group") and name in ORDERED_SET:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"OVER is not supported for ordered-set aggregate {name}",
                           position=where)
        if n.get("agg_order"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "aggregate ORDER BY is not implemented for window functions",
                           position=where)
        named = [f for f in functions.overloads(name) if f.schema == (schema or "pg_catalog")]
        overloads = [f for f in named if f.kind in (Kind.WINDOW, Kind.AGGREGATE)]
        args = [] if n.get("agg_star") else [self.expr(a) for a in n.get("args") or ()]
        if named and not overloads:
            raise SqlError(WRONG_OBJECT_TYPE, f"OVER specified, but {name} is not a window function nor an "
                                              "aggregate function", position=where)
        func, bound, result = resolved_call(name, overloads, args, where)
        if n.get("agg_filter") is not None and func.kind is not Kind.AGGREGATE:
            raise SqlError(FEATURE_NOT_SUPPORTED, "FILTER is not implemented for non-aggregate window functions",
                           position=where)
        condition = self._filter_condition(n)  # planner.sql.bind_aggregates
        partition = tuple(self.expr(x) for x in over.get("partitionClause") or ())
        order = []
        for item in over.get("orderClause") or ():
            sort = item["SortBy"]
            key, value = sort_key(0, sort), self.expr(sort["node"])
            fields = order_fields(value, sort)  # a row value: field by field, NULL last ascending
            order += ([p.WindowKey(f, key.descending, key.descending) for f in fields] if fields is not None
                      else [p.WindowKey(value, key.descending, key.nulls_first)])
        frame = self._frame(over, order, where)
        return p.WindowCall(func, bound, partition, tuple(order), result, frame, condition)

    def _frame(self, over: dict, order: list[p.WindowKey], where: int | None) -> p.Frame | None:
        """The window's frame; None for PostgreSQL's default."""
        options = over.get("frameOptions", _DEFAULT_FRAME)
        if not options & _NONDEFAULT:
            return None
        if options & _GROUPS:
            raise p.NotYet("GROUPS frames are not supported yet", position=where)
        if options & _EXCLUDE:
            raise p.NotYet("frame EXCLUDE is not supported yet", position=where)
        mode = p.FrameMode.ROWS if options & _ROWS else p.FrameMode.RANGE
        start = self._bound(options, _STARTS, over.get("startOffset"), "starting", where)
        end = self._bound(options, _ENDS, over.get("endOffset"), "ending", where)
        offsets = any(b.offset is not None for b in (start, end))
        if mode is p.FrameMode.RANGE and offsets:
            if len(order) != 1:
                raise SqlError(WINDOWING_ERROR, "RANGE with offset PRECEDING/FOLLOWING requires exactly one "
                                                "ORDER BY column", position=where)
            key_type = order[0].expr.type
            if key_type.base.name in _RANGE_INTERVAL_TYPES and not key_type.is_array:
                raise p.NotYet(f"RANGE offsets over {key_type.display()} are not covered yet", position=where)
            if key_type.is_array or key_type.base.name not in _RANGE_OFFSET_TYPES:
                raise SqlError(FEATURE_NOT_SUPPORTED, "RANGE with offset PRECEDING/FOLLOWING is not supported for "
                                                      f"column type {key_type.display()}", position=where)
        if start.position > end.position:
            raise SqlError(FEATURE_NOT_SUPPORTED, "a window frame that ends before it starts is not supported",
                           position=where)
        return p.Frame(mode, start, end)

    def _bound(self, options: int, bits: tuple, offset: dict | None, which: str,
               where: int | None) -> p.FrameBound:
        side = next(side for bit, side in bits if options & bit)
        if side not in (p.FrameSide.PRECEDING, p.FrameSide.FOLLOWING):
            return p.FrameBound(side)
        value = self.expr(offset)
        if isinstance(value, p.Literal) and value.value is None:
            raise SqlError("22004", f"frame {which} offset must not be null", position=where)
        if not isinstance(value, p.Literal) or not isinstance(value.value, int) or isinstance(value.value, bool) \
                or not coerce.category(value.type) == "N":
            raise p.NotYet("a frame offset other than an integer constant is not supported yet", position=where)
        if value.value < 0:
            raise SqlError("22013", f"frame {which} offset must not be negative", position=where)
        return p.FrameBound(side, value.value)


def _resolved(over: dict, windows: dict[str, dict], where: int | None) -> dict:
    """An OVER clause with the named window it refers to filled in, by PostgreSQL's rules."""
    if over.get("name"):  # OVER w: the window as defined
        return _defined(over["name"], windows, where)
    refname = over.get("refname")
    if not refname:
        return over
    base = _defined(refname, windows, where)
    if over.get("partitionClause"):
        raise SqlError(WINDOWING_ERROR, f'cannot override PARTITION BY clause of window "{refname}"',
                       position=where)
    if over.get("orderClause") and base.get("orderClause"):
        raise SqlError(WINDOWING_ERROR, f'cannot override ORDER BY clause of window "{refname}"', position=where)
    if base.get("frameOptions", _DEFAULT_FRAME) & _NONDEFAULT:
        raise SqlError(WINDOWING_ERROR, f'cannot copy window "{refname}" because it has a frame clause',
                       position=where, hint="Omit the parentheses in this OVER clause.")
    return {**over, "partitionClause": base.get("partitionClause"),
            "orderClause": over.get("orderClause") or base.get("orderClause")}


def _defined(name: str, windows: dict[str, dict], where: int | None) -> dict:
    found = windows.get(name)
    if found is None:
        raise SqlError(UNDEFINED_OBJECT, f'window "{name}" does not exist', position=where)
    # a window of the WINDOW clause may itself build on an earlier one
    return _resolved({**found, "name": None}, windows, where)


def window_definitions(clause: list[dict] | None) -> dict[str, dict]:
    """The WINDOW clause's definitions by name (42P20 for a name defined twice)."""
    out: dict[str, dict] = {}
    for item in clause or ():
        w = item["WindowDef"]
        if w["name"] in out:
            raise SqlError(WINDOWING_ERROR, f'window "{w["name"]}" is already defined')
        out[w["name"]] = w
    return out
