"""Set-returning functions in FROM, in the binder: `FROM generate_series(1, 3) AS g(x)`,
`unnest(a)`, `jsonb_each(j)`, `jsonb_array_elements(j)`, `regexp_split_to_table(s, p)`.

PostgreSQL's parse_clause.c (transformRangeFunction) and its naming of the result: a
function returning one value gives one column, named by the alias's column list, else by
its OUT parameter (jsonb_array_elements: value), else by the alias, else after the
function; a record function gives its output columns (key, value). The FROM item is
named by the alias or after the function. `Binder`
(planner.sql.bind) takes `_range_function` from `TableFunctionBinding`.

A function whose arguments name earlier items of a FROM list (PostgreSQL reads functions in
FROM as LATERAL) becomes a FlatMap over them. Not here yet (the older path runs them): such
a LEFT JOIN of such a function on a condition with a subquery, ROWS FROM, column definition lists,
and functions of the system catalogs.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.functions import Function
from planner.pg_parse import Node, node_type, position_of
from planner.sql import coerce, numeric_scale
from planner.sql import plan as p
from planner.sql.scope import UNDEFINED_COLUMN, UNDEFINED_TABLE, Scope, ScopeColumn, item_scope
from planner.types import SqlType, column_type

# The functions bound here, and the output columns of those that return records.
SCALAR = frozenset({"generate_series", "unnest", "jsonb_array_elements", "jsonb_array_elements_text",
                    "jsonb_object_keys", "regexp_split_to_table"})
RECORDS: dict[str, tuple[tuple[str, SqlType], ...]] = {
    "jsonb_each": (("key", coerce.TEXT), ("value", column_type("jsonb"))),
    "jsonb_each_text": (("key", coerce.TEXT), ("value", coerce.TEXT)),
}


# Functions whose one output column PostgreSQL names by its OUT parameter, alias or not.
OUT_NAMES = {"jsonb_array_elements": "value", "jsonb_array_elements_text": "value"}


def _names(nodes: list[Node] | None) -> list[str]:
    return [n["String"]["sval"] for n in nodes or ()]


class TableFunctionBinding:
    """The set-returning functions of `planner.sql.bind.Binder`, in FROM and in select lists."""

    _table_function_call: Any  # Binder._table_function_call: a FuncCall and a scope → (function, args, result)

    def _select_list_function(self, n: dict, name: str, srfs: list[p.TableFunction]) -> p.Expr:
        """`SELECT unnest(a), generate_series(1, 3)`: the call collected into `srfs`, which run
        in lockstep after the FROM and WHERE (PostgreSQL's ProjectSet); its value a slot."""
        if name not in SCALAR:
            raise p.NotYet(f"{name} in a select list is not covered by this front end yet")
        func, args, result = self._table_function_call(n, None)
        if any(p.contains(a, SrfSlot) for a in args):
            raise p.NotYet("a set-returning function in another's arguments is not supported yet")
        _check_series(func, args, None)
        srfs.append(p.TableFunction(func, args, (p.Column(name, result),)))
        return SrfSlot(len(srfs) - 1, result)

    def _check_grouped_functions(self, srfs: list[p.TableFunction], keys: list[p.Expr],
                                 aggregates: list[p.AggCall]) -> None:
        """Where PostgreSQL refuses a select list's set-returning function in an aggregating
        query: inside an aggregate's arguments; grouped on, not covered here yet."""
        if not srfs:
            return
        if any(p.contains(a, SrfSlot) for agg in aggregates for a in agg.args):
            raise SqlError(FEATURE_NOT_SUPPORTED, "aggregate function calls cannot contain set-returning "
                                                  "function calls")
        if any(p.contains(k, SrfSlot) for k in keys):
            raise p.NotYet("grouping by a set-returning function is not supported yet")

    @staticmethod
    def _with_arguments(srfs: list[p.TableFunction], args: list[p.Expr]) -> list[p.TableFunction]:
        """The functions with their arguments replaced, in order, by `args`."""
        out, rest = [], iter(args)
        for f in srfs:
            out.append(replace(f, args=tuple(next(rest) for _ in f.args)))
        return out

    def _project_set(self, rel: p.Rel, srfs: list[p.TableFunction], exprs: list[p.Expr],
                     hidden: list[p.Expr]) -> tuple[p.Rel, list[p.Expr], list[p.Expr]]:
        """The select list's functions as a FlatMap over `rel` (after any grouping), each call
        in `exprs` and `hidden` (ORDER BY's) the FlatMap's column for it."""
        for e in exprs:
            where = _misplaced(e)
            if where is not None:
                raise SqlError(FEATURE_NOT_SUPPORTED, f"set-returning functions are not allowed in {where}")
            if p.contains(e, p.WindowCall) and p.contains(e, SrfSlot):
                raise p.NotYet("a set-returning function beside a window function is not supported yet")
        width = len(p.columns(rel))

        def column(e: Any) -> p.Expr | None:
            return p.ColRef(0, width + e.index, e.type) if isinstance(e, SrfSlot) else None

        return (p.FlatMap(rel, tuple(srfs)), [p.transform(e, column) for e in exprs],
                [p.transform(e, column) for e in hidden])

    def _range_function(self, n: dict, left: tuple[p.Rel, Scope] | None = None) -> tuple[p.Rel, Scope]:
        """A function in FROM; `left`: the FROM items before it, which its arguments may name
        (the result then holds them too: a cross join, or a FlatMap where they are named)."""
        rel, scope, lateral = self._function_item(n, left)
        if left is None:
            return rel, scope
        before, before_scope = left
        combined = before_scope.combine(scope.shifted(len(p.columns(before))), position_of({"RangeFunction": n}))
        if lateral:
            return p.FlatMap(before, (rel,)), combined
        return p.Join(p.JoinKind.CROSS, before, rel, None), combined

    @staticmethod
    def _function_join(kind: p.JoinKind, left: p.Rel, function: p.TableFunction, on: p.Expr | None) -> p.Rel:
        """`a [LEFT] JOIN f(a.x) AS u ON c`, f's arguments naming a (PostgreSQL reads a function
        in FROM as LATERAL): a FlatMap over a, filtered by c; LEFT keeps a row of a for which f
        gives no row that c holds for, with NULLs (c then filters f's values for each row)."""
        if kind in (p.JoinKind.INNER, p.JoinKind.CROSS):
            flat = p.FlatMap(left, (function,))
            return p.Filter(flat, on) if on is not None else flat
        assert kind is p.JoinKind.LEFT  # RIGHT and FULL naming the left are 42P10 (Binder._join)
        if on is None or on == p.Literal(True, coerce.BOOLEAN):
            return p.FlatMap(left, (function,), outer=True)
        if p.contains(on, p.Subquery):  # Spark runs the condition inside a lambda, where it refuses one
            raise p.NotYet("a LEFT JOIN of a function on a condition with a subquery is not covered yet")
        return p.FlatMap(left, (function,), outer=True, on=on)

    def _function_item(self, n: dict, before: tuple[p.Rel, Scope] | None) -> tuple[p.TableFunction, Scope, bool]:
        """A function in FROM, its scope, and whether its arguments name the items `before` it
        (its arguments then refer to their columns at level 0)."""
        items = n["functions"]
        if n.get("is_rowsfrom") or len(items) != 1:
            raise p.NotYet("ROWS FROM is not supported yet")
        call, column_defs = items[0]["List"]["items"]
        if column_defs or node_type(call) != "FuncCall":
            raise p.NotYet("a column definition list is not supported yet")
        fc = call["FuncCall"]
        name = fc["funcname"][-1]["String"]["sval"]
        if name not in SCALAR and name not in RECORDS or len(fc["funcname"]) > 1:
            raise p.NotYet(f"{name} in FROM is not covered by this front end yet")
        lateral = False
        try:
            func, args, result = self._table_function_call(fc, Scope())
        except p.NotYet:
            raise
        except SqlError as err:
            if err.sqlstate not in (UNDEFINED_COLUMN, UNDEFINED_TABLE):
                raise
            if before is None:  # the first FROM item: nothing before it here
                raise p.NotYet(f"{name} in FROM referring to other FROM items is not supported here yet") from None
            func, args, result = self._table_function_call(fc, before[1])  # its errors are PostgreSQL's
            lateral = True
        alias = n.get("alias")
        table = alias["aliasname"] if alias else name
        if name in RECORDS:
            columns = tuple(p.Column(c, t) for c, t in RECORDS[name])
        else:
            columns = (p.Column(OUT_NAMES.get(name, table), result),)
        ordinality = bool(n.get("ordinality"))
        if ordinality:  # WITH ORDINALITY: each row's number, from 1
            columns = (*columns, p.Column("ordinality", column_type("bigint")))
        _check_series(func, args, numeric_scale.output_scales(before[0]) if lateral and before else [])
        rel = p.TableFunction(func, args, columns, ordinality)
        scope = item_scope(table, columns, _names(alias.get("colnames")) if alias else [])
        if len(columns) == 1 and scope.columns[0].name != table:  # the item's name is its value too
            whole = ScopeColumn(None, table, 0, columns[0].type, in_star=False, whole_row=True)
            scope = Scope((*scope.columns, whole), scope.tables)
        return rel, scope, lateral


@dataclass(frozen=True)
class SrfSlot:
    """A select list's set-returning function call, until its column of the FlatMap is known."""

    index: int  # among the select list's set-returning functions
    type: SqlType


def _misplaced(e: Any) -> str | None:
    """Where in `e` a set-returning function sits that PostgreSQL refuses there, if any."""
    for cls, where in ((p.Case, "CASE"), (p.Coalesce, "COALESCE")):
        if isinstance(e, cls) and p.contains(e, SrfSlot):
            return where
    if isinstance(e, (p.Subquery, SqlType)) or not is_dataclass(e):
        return None
    return next((w for f in fields(e) for c in p.children(getattr(e, f.name)) if (w := _misplaced(c))), None)


def _check_series(func: Function, args: tuple[p.Expr, ...], inputs: numeric_scale.Scales | None) -> None:
    """generate_series over numerics: PostgreSQL's first value is the start with its own
    scale and the next ones start + step with the larger scale; one column of Spark's
    decimals has one scale, so a start with fewer digits after the point than its step
    is refused rather than shown with the wrong digits (a stored unconstrained numeric,
    whose scale is not known, prints without trailing zeros, as it always does)."""
    if func.name != "generate_series" or func.result != "numeric" or len(args) < 3:
        return
    if inputs is None:  # a select list's: the FROM's scales are not at hand; constants are
        if any(p.contains(a, p.ColRef) for a in (args[0], args[2])):
            raise p.NotYet("generate_series over numeric columns in a select list is not covered yet")
        inputs = []
    start, step = numeric_scale.expr_scale(args[0], inputs), numeric_scale.expr_scale(args[2], inputs)
    if start is not None and step is not None and start < step:
        raise SqlError(FEATURE_NOT_SUPPORTED, "generate_series over numerics whose step has more digits "
                                              "after the point than its start is not supported")
