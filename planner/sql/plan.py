"""The operator tree a bound query becomes: Materialize's HIR in spirit.

Relations (`Rel`) have positional, typed output columns; scalar expressions (`Expr`)
refer to a column by (level, index): level 0 is the operator's own input, level k the
input k query levels out (a correlated reference). Every node carries its PostgreSQL
type, so nothing downstream has to guess: the Spark generator and, later, the
incremental engine read the same tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass, replace
from decimal import Decimal
from enum import Enum
from typing import Any

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.functions import Function
from planner.operators import Operator
from planner.types import SqlType


class NotYet(SqlError):
    """A query this front end does not cover yet (0A000): the caller may take the
    older path, which is why it is told apart from PostgreSQL's own 0A000 errors."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(FEATURE_NOT_SUPPORTED, message, position=position)


# -- scalar expressions ----------------------------------------------------------------------


@dataclass(frozen=True)
class ColRef:
    level: int  # 0: this query's input; k: k query levels out (correlated)
    index: int
    type: SqlType


@dataclass(frozen=True)
class Literal:
    value: int | float | Decimal | str | bool | bytes | None  # None is NULL
    type: SqlType


@dataclass(frozen=True)
class Call:
    """A catalogued function; `func` carries its PostgreSQL signature and Spark template."""

    func: Function
    args: tuple[Expr, ...]
    type: SqlType


@dataclass(frozen=True)
class OpCall:
    """A catalogued operator, binary or prefix (one argument)."""

    op: Operator
    args: tuple[Expr, ...]
    type: SqlType


@dataclass(frozen=True)
class Cast:
    arg: Expr
    type: SqlType


class BoolKind(Enum):
    AND = "and"
    OR = "or"
    NOT = "not"


@dataclass(frozen=True)
class BoolOp:
    kind: BoolKind
    args: tuple[Expr, ...]
    type: SqlType


@dataclass(frozen=True)
class IsNull:
    arg: Expr
    negated: bool  # IS NOT NULL
    type: SqlType


@dataclass(frozen=True)
class Case:
    whens: tuple[tuple[Expr, Expr], ...]  # (boolean condition, result)
    default: Expr
    type: SqlType


@dataclass(frozen=True)
class Coalesce:
    args: tuple[Expr, ...]
    type: SqlType


class SubqueryKind(Enum):
    EXISTS = "exists"
    SCALAR = "scalar"  # at most one row, one column; 21000 when more rows
    ANY = "any"  # `x op ANY (subquery)`, `x IN (subquery)`
    ALL = "all"  # `x op ALL (subquery)`


@dataclass(frozen=True)
class Subquery:
    kind: SubqueryKind
    rel: Rel  # refers to this query's columns at level 1
    type: SqlType
    # ANY/ALL: the left operand, one per subquery column (a row `(a, b) IN (SELECT x, y ...)`
    # has two), and each pair's comparison. A row is `=` when every pair is, `<>` when any
    # pair is (PostgreSQL's row comparison); a single operand is the comparison itself.
    lhs: tuple[Expr, ...] = ()
    op: tuple[Operator, ...] = ()


@dataclass(frozen=True)
class Record:
    """A row value: a whole-row reference (`t`, `t.*` naming a FROM item) or `ROW(…)`, its
    fields by name (`f1`, `f2`, … for ROW). Taken only by the json and jsonb functions,
    which write it as an object (planner.sql.bind_records)."""

    fields: tuple[Expr, ...]
    names: tuple[str, ...]
    type: SqlType
    # Fields that were string literals of no type yet (ROW(1, 'x')): text here, but unknown to
    # a row comparison, which types them from the other side ((d, n) > ('2020-01-01', 5)).
    untyped: tuple[int, ...] = ()


@dataclass(frozen=True)
class Param:
    """`$n` of a prepared statement, with the type the protocol or context gave it."""

    number: int
    type: SqlType


@dataclass(frozen=True)
class AggCall:
    """An aggregate, evaluated by `Reduce`; `distinct` as in count(DISTINCT x). `filter` is
    FILTER (WHERE …): the rows it is false or NULL for are not aggregated. `order` is an
    ORDER BY inside the call, kept only for the aggregates whose value depends on the order
    of their input (array_agg, string_agg, jsonb_agg, jsonb_object_agg, json_agg)."""

    func: Function
    args: tuple[Expr, ...]  # empty for count(*)
    distinct: bool
    type: SqlType
    filter: Expr | None = None
    order: tuple[WindowKey, ...] = ()


@dataclass(frozen=True)
class WindowKey:
    """An ORDER BY item over an expression: a window's, or one inside an aggregate's call."""

    expr: Expr
    descending: bool
    nulls_first: bool


class FrameMode(Enum):
    ROWS = "ROWS"
    RANGE = "RANGE"


class FrameSide(Enum):
    UNBOUNDED_PRECEDING = "UNBOUNDED PRECEDING"
    PRECEDING = "PRECEDING"
    CURRENT_ROW = "CURRENT ROW"
    FOLLOWING = "FOLLOWING"
    UNBOUNDED_FOLLOWING = "UNBOUNDED FOLLOWING"


@dataclass(frozen=True)
class FrameBound:
    side: FrameSide
    offset: int | None = None  # for PRECEDING and FOLLOWING

    @property
    def position(self) -> float:
        """Where the bound lies relative to the current row, to compare a frame's two."""
        match self.side:
            case FrameSide.UNBOUNDED_PRECEDING:
                return float("-inf")
            case FrameSide.PRECEDING:
                return -float(self.offset or 0)
            case FrameSide.FOLLOWING:
                return float(self.offset or 0)
            case FrameSide.UNBOUNDED_FOLLOWING:
                return float("inf")
        return 0.0


@dataclass(frozen=True)
class Frame:
    """`ROWS|RANGE BETWEEN start AND end`."""

    mode: FrameMode
    start: FrameBound
    end: FrameBound


@dataclass(frozen=True)
class WindowCall:
    """A window function, or an aggregate over a window, in a select list or ORDER BY.
    Without a frame, PostgreSQL's default: with an ORDER BY, from the partition's start to
    the current row's last peer (RANGE UNBOUNDED PRECEDING); without, the whole partition."""

    func: Function
    args: tuple[Expr, ...]
    partition: tuple[Expr, ...]
    order: tuple[WindowKey, ...]
    type: SqlType
    frame: Frame | None = None
    filter: Expr | None = None  # an aggregate's FILTER (WHERE …)


@dataclass(frozen=True)
class ArrayExpr:
    """`ARRAY[e1, e2, ...]`: the elements already of the array's element type."""

    elements: tuple[Expr, ...]
    type: SqlType  # an array type


@dataclass(frozen=True)
class Subscript:
    """`a[i]`: PostgreSQL's element i, counting from 1; NULL when i is out of range or NULL."""

    array: Expr
    index: Expr  # integer
    type: SqlType  # the element type


@dataclass(frozen=True)
class Slice:
    """`a[i:j]`: the elements from i to j, clipped to the array; an omitted bound (None) is
    the array's own; NULL when a bound is NULL."""

    array: Expr
    lower: Expr | None
    upper: Expr | None
    type: SqlType  # the array's type


@dataclass(frozen=True)
class ArrayCompare:
    """`x op ANY (array)` / `x op ALL (array)`, with SQL's three-valued answer: NULL for a
    NULL array, false (ANY) or true (ALL) for an empty one, NULL when only NULL comparisons
    leave it open. `op` compares `lhs` with each element."""

    op: Operator
    lhs: Expr
    array: Expr
    all: bool
    type: SqlType


Expr = (ColRef | Literal | Param | Call | OpCall | Cast | BoolOp | IsNull | Case | Coalesce | Subquery
        | WindowCall | ArrayExpr | Subscript | Slice | ArrayCompare | Record)

# -- relations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str  # the name PostgreSQL gives the output column (`?column?` when none)
    type: SqlType


@dataclass(frozen=True)
class Get:
    """A catalogued relation: `name` is what the catalog calls it, never user text."""

    name: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Constant:
    """VALUES, and a FROM-less SELECT (one row of no columns)."""

    rows: tuple[tuple[Expr, ...], ...]
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Map:
    """The input's columns followed by one column per expression."""

    input: Rel
    exprs: tuple[Expr, ...]
    names: tuple[str, ...]


@dataclass(frozen=True)
class Filter:
    input: Rel
    predicate: Expr


@dataclass(frozen=True)
class Project:
    """The input's columns at `outputs`, in that order (a column may repeat)."""

    input: Rel
    outputs: tuple[int, ...]
    names: tuple[str, ...]


class JoinKind(Enum):
    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"
    CROSS = "cross"


@dataclass(frozen=True)
class Join:
    """The left's columns followed by the right's; `on` sees both (level 0). A LATERAL
    right is bound as a query one level in: its level 1 is the left's columns, its level k
    the join's level k - 1 (as a subquery's plan is)."""

    kind: JoinKind
    left: Rel
    right: Rel
    on: Expr | None
    lateral: bool = False


@dataclass(frozen=True)
class Reduce:
    """GROUP BY: the key expressions' columns, then one column per aggregate. With no key,
    exactly one row, even over no input (as `SELECT count(*) FROM empty`)."""

    input: Rel
    keys: tuple[Expr, ...]
    aggregates: tuple[AggCall, ...]
    names: tuple[str, ...]
    # GROUPING SETS/ROLLUP/CUBE: each set as indices of `keys` (None: one set, every key); a
    # key outside a row's set is NULL in it
    sets: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class Distinct:
    input: Rel


class SetKind(Enum):
    UNION = "union"
    EXCEPT = "except"
    INTERSECT = "intersect"


@dataclass(frozen=True)
class SetOp:
    kind: SetKind
    all: bool
    left: Rel
    right: Rel  # columns cast to the left's (the common types), by the binder


@dataclass(frozen=True)
class SortKey:
    index: int  # an input column
    descending: bool
    nulls_first: bool  # PostgreSQL's default: NULLS FIRST exactly when DESC


@dataclass(frozen=True)
class TopK:
    """ORDER BY / LIMIT / OFFSET; any of them may be empty."""

    input: Rel
    order: tuple[SortKey, ...]
    limit: Expr | None
    offset: Expr | None


@dataclass(frozen=True)
class TableFunction:
    """A set-returning function in FROM (`generate_series(1, 3)`, `jsonb_each(j)`): a row per
    value, or per record with its columns. Standing alone, its arguments refer to no FROM
    item; inside a FlatMap, to the FlatMap's input."""

    func: Function
    args: tuple[Expr, ...]
    columns: tuple[Column, ...]  # WITH ORDINALITY: the last is the row's number, bigint from 1
    ordinality: bool = False


@dataclass(frozen=True)
class FlatMap:
    """The input's columns followed by set-returning functions' columns, once per row of the
    functions' values for that input row (Materialize's FlatMap): a function in FROM whose
    arguments name earlier FROM items (PostgreSQL's implicit LATERAL), or the functions of a
    select list, which run in lockstep (as many rows as the longest gives, the others'
    columns NULL past their end). The functions' arguments refer to the input's columns at
    level 0."""

    input: Rel
    funcs: tuple[TableFunction, ...]
    outer: bool = False  # LEFT JOIN f(…) ON c: an input row f gives no row for (on c) is kept, with NULLs
    on: Expr | None = None  # c, over the input's columns and then the functions': the rows kept


@dataclass(frozen=True)
class Recursive:
    """WITH RECURSIVE's query: `base`'s rows, then `step`'s over the rows the iteration
    before added (`step` reads them as the RecursiveRef named `name`), until an iteration
    adds none. Both sides' columns are of `columns`' types. `distinct` (UNION rather than
    UNION ALL): a row already in the result, or repeated, is not added."""

    name: str  # unique in the statement
    base: Rel
    step: Rel
    columns: tuple[Column, ...]
    distinct: bool = False


@dataclass(frozen=True)
class RecursiveRef:
    """The rows the previous iteration of the Recursive named `name` added."""

    name: str
    columns: tuple[Column, ...]


Rel = (Get | Constant | Map | Filter | Project | Join | Reduce | Distinct | SetOp | TopK | TableFunction | FlatMap
       | Recursive | RecursiveRef)


def columns(rel: Rel) -> tuple[Column, ...]:
    """A relation's output columns."""
    match rel:
        case Get(columns=cols) | Constant(columns=cols) | TableFunction(columns=cols) | Recursive(columns=cols) \
                | RecursiveRef(columns=cols):
            return cols
        case Map(input=inner, exprs=exprs, names=names):
            return columns(inner) + tuple(Column(n, e.type) for n, e in zip(names, exprs, strict=True))
        case Filter(input=inner) | Distinct(input=inner) | TopK(input=inner):
            return columns(inner)
        case Project(input=inner, outputs=outputs, names=names):
            cols = columns(inner)
            return tuple(Column(n, cols[i].type) for n, i in zip(names, outputs, strict=True))
        case Join(left=left, right=right):
            return columns(left) + columns(right)
        case FlatMap(input=inner, funcs=funcs):
            return columns(inner) + tuple(c for f in funcs for c in f.columns)
        case Reduce(keys=keys, aggregates=aggs, names=names):
            types = [k.type for k in keys] + [a.type for a in aggs]
            return tuple(Column(n, t) for n, t in zip(names, types, strict=True))
        case SetOp(left=left):
            return columns(left)
    raise TypeError(f"not a relation: {rel!r}")


# -- walking expressions ---------------------------------------------------------------------

def children(value: Any) -> Iterator[Any]:
    """The dataclass nodes directly inside a field's value."""
    if isinstance(value, tuple):
        for v in value:
            yield from children(v)
    elif is_dataclass(value) and not isinstance(value, type):
        yield value


def contains(e: Any, cls: type) -> bool:
    if isinstance(e, cls):
        return True
    if isinstance(e, Subquery):
        return False
    return is_dataclass(e) and any(contains(c, cls) for f in fields(e) for c in children(getattr(e, f.name)))


def nodes(e: Any) -> Iterator[Any]:
    """`e` and every operator and expression inside it, subquery plans included, outer first
    (not the types and catalog entries they carry)."""
    if not is_dataclass(e) or isinstance(e, (SqlType, Column, Function, Operator)):
        return
    yield e
    for f in fields(e):
        for c in children(getattr(e, f.name)):
            yield from nodes(c)


def param_types(e: Any) -> dict[int, SqlType]:
    """The type of each `$n` in `e`, subquery plans included, where one was given to it: by
    the operator, function or column it meets (a Param the binder typed) or by a cast. A
    parameter typed twice keeps the first, as PostgreSQL's Parse does with the first use."""
    found: dict[int, SqlType] = {}
    for v in nodes(e):
        if isinstance(v, Param) and v.type.base.name != "unknown":
            found.setdefault(v.number, v.type)
        elif isinstance(v, Cast) and isinstance(v.arg, Param) and v.arg.type.base.name == "unknown":
            found.setdefault(v.arg.number, v.type)
    return found


def transform(e: Any, fn: Callable[[Any], Any]) -> Any:
    """`e` with every subexpression `fn` maps (to non-None) replaced, top-down; subquery
    plans are left as they are."""
    out = fn(e)
    if out is not None:
        return out
    if isinstance(e, Subquery):
        return replace(e, lhs=tuple(transform(x, fn) for x in e.lhs))
    if not is_dataclass(e) or isinstance(e, (Column, SqlType)):
        return e
    changes = {}
    for f in fields(e):
        value = getattr(e, f.name)
        if isinstance(value, tuple):
            new = tuple(_transform_item(v, fn) for v in value)
        elif is_dataclass(value) and not isinstance(value, (SqlType, Function, Operator)):
            new = transform(value, fn)
        else:
            continue
        if new != value:
            changes[f.name] = new
    return replace(e, **changes) if changes else e


def _transform_item(v: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(v, tuple):
        return tuple(_transform_item(x, fn) for x in v)
    if is_dataclass(v) and not isinstance(v, (SqlType, Function, Operator)):
        return transform(v, fn)
    return v


def levels_used(e: Any) -> set[int]:
    """The query levels an expression or plan refers to, counted from its own (0)."""
    return {ref.level - depth for ref, depth in _refs(e, 0) if ref.level >= depth}


def refs_at(e: Any, level: int) -> list[ColRef]:
    """The references in `e` to columns of query level `level` (counted from its own)."""
    return [ref for ref, depth in _refs(e, 0) if ref.level - depth == level]


def _refs(e: Any, depth: int) -> Iterator[tuple[ColRef, int]]:
    """Every column reference in `e`, with the number of query levels between it and `e`'s
    (a subquery's plan and a LATERAL join's right are one further in)."""
    if isinstance(e, ColRef):
        yield e, depth
    elif isinstance(e, Subquery):
        yield from _refs(e.rel, depth + 1)
        for x in e.lhs:
            yield from _refs(x, depth)
    elif isinstance(e, Join) and e.lateral:
        yield from _refs(e.left, depth)
        yield from _refs(e.right, depth + 1)
        if e.on is not None:
            yield from _refs(e.on, depth)
    elif is_dataclass(e) and not isinstance(e, (SqlType, Function, Operator, Column)):
        for f in fields(e):
            for c in children(getattr(e, f.name)):
                yield from _refs(c, depth)


def refers_at(e: Any, level: int) -> bool:
    """Whether `e` refers to a column of exactly query level `level` (0: its own)."""
    return level in levels_used(e)


def refers_outward(e: Any, level: int) -> bool:
    """Whether `e` refers to a column `level` or more query levels out."""
    return any(used >= level for used in levels_used(e))
