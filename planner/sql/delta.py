"""A SUBSCRIBE's dataflow, planned on the operator tree (planner.sql.plan).

The strategies and the delta rules are planner.dataflow's (which plans the older path's
sqlglot trees): a *linear* query is run over each micro-batch's updates, each carrying
its `__mz_ts` and `__mz_diff` through; a GROUP BY of count/sum/avg/min/max over a
linear input keeps state per group; an inner equi-join of two linear inputs keeps each
side's rows per join key; anything else is recomputed and diffed. Here the shapes are
read from the bound operators, not from the Spark SQL generated for them, and every
query Spark runs is generated from operators by planner.sql.spark_sql.

The carrying is positional: the delta of a relation is the relation's columns followed
by `__mz_ts` and `__mz_diff`. Each operator above keeps that order (a Map's new columns
are moved before the two), so the expressions of the operators stay as they were bound:
a column reference means the same column in the query and in its delta.

Pure: operator trees in, Spark SQL text out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from sqlglot import exp

from planner.dataflow import (
    DELTA_DIFF,
    DELTA_TS,
    JOINED,
    Aggregate,
    AggregatePlan,
    DataflowPlan,
    JoinPlan,
    NotIncremental,
)
from planner.spark_guard import spark_sql
from planner.sql import plan as p
from planner.sql.coerce import BIGINT
from planner.sql.spark_keys import equal_by_key
from planner.sql.spark_sql import TableName, to_spark_query
from planner.translate import SessionContext
from planner.types import SqlType

_TS = p.Column(DELTA_TS, BIGINT)
_DIFF = p.Column(DELTA_DIFF, BIGINT)
_SUBQUERY_ALIAS = "__sw_d"

# The aggregates kept per group, and the argument types whose values the state folds as
# Spark and PostgreSQL agree: sums and averages of numbers (exactly, in Python); min and
# max of values Python orders as PostgreSQL does (an interval or a jsonb is PostgreSQL's
# text here, whose order is not the text's).
_SUMMED = frozenset(("smallint", "integer", "bigint", "numeric", "real", "double precision"))
_ORDERED = _SUMMED | {"text", "character varying", "date", "timestamp without time zone",
                      "timestamp with time zone"}


@dataclass(frozen=True)
class Renderer:
    """How an operator tree becomes Spark SQL for this query: its tables' Spark names."""

    table_name: TableName
    session: SessionContext | None = None

    def query(self, rel: p.Rel, types: list[SqlType] | None = None) -> exp.Query:
        """`rel`'s Spark query, columns c0, c1, ...; each cast to its type's Spark form."""
        if types is None:
            types = [c.type for c in p.columns(rel)]
        return to_spark_query(rel, self.table_name, types, None, self.session)

    def named(self, rel: p.Rel, names: list[str], types: list[SqlType] | None = None) -> str:
        """`rel`'s Spark SQL with its columns named `names`; a delta's (whose last two
        columns are __mz_ts and __mz_diff) with its query's output `types`."""
        if types is not None:
            types = [*types, BIGINT, BIGINT]
        source = self.query(rel, types).subquery(_SUBQUERY_ALIAS)
        return spark_sql(exp.select(*(exp.alias_(exp.column(f"c{i}", _SUBQUERY_ALIAS), n)
                                      for i, n in enumerate(names))).from_(source))


def plan_dataflow(rel: p.Rel, types: list[SqlType], full_sql: str, render: Renderer) -> DataflowPlan:
    """Choose how to maintain bound query `rel`, whose output columns have `types` and
    whose Spark SQL is `full_sql`. A step the Spark generator does not cover (p.NotYet)
    leaves the query to be recomputed: `full_sql` runs, as SELECT's does."""
    try:
        return DataflowPlan("linear", "", full_sql, delta_sql=_linear(rel, types, render))
    except (NotIncremental, p.NotYet) as linear_reason:
        core = _core(rel)
        if isinstance(core, p.Reduce):
            strategy, planner = "aggregate", _aggregate
        elif isinstance(core, p.Join):
            strategy, planner = "join", _join
        else:
            return DataflowPlan("recompute", str(linear_reason), full_sql)
        try:
            planned = planner(rel, types, render)
        except (NotIncremental, p.NotYet) as reason:
            return DataflowPlan("recompute", str(reason), full_sql)
        return DataflowPlan(strategy, "", full_sql, **{strategy: planned})


# -- linear ----------------------------------------------------------------------------------


def _linear(rel: p.Rel, types: list[SqlType], render: Renderer) -> str:
    return render.named(_delta(rel), [*(f"c{i}" for i in range(len(types))), DELTA_TS, DELTA_DIFF], types)


def _delta(rel: p.Rel, leaf: tuple[p.Rel, p.Rel] | None = None) -> p.Rel:
    """`rel` over its inputs' updates: its columns, then __mz_ts and __mz_diff. `leaf`
    replaces one relation inside `rel` by a relation that is already a delta."""
    if leaf is not None and rel is leaf[0]:
        return leaf[1]
    match rel:
        case p.Get(name=name, columns=cols):
            return p.Get(name, (*cols, _TS, _DIFF))
        case p.Filter(input=inner, predicate=pred):
            _row_by_row(pred)
            return p.Filter(_delta(inner, leaf), pred)
        case p.Map(input=inner, exprs=exprs, names=names):
            for e in exprs:
                _row_by_row(e)
            return _carried(p.Map(_delta(inner, leaf), exprs, names), inner, len(exprs))
        case p.FlatMap(input=inner, funcs=funcs, on=on):
            for e in [a for f in funcs for a in f.args] + ([on] if on is not None else []):
                _row_by_row(e)
            added = sum(len(f.columns) for f in funcs)
            w = len(p.columns(inner))  # `on` reads the functions' columns past the delta's two

            def past(e: object) -> p.Expr | None:
                return replace(e, index=e.index + 2) if isinstance(e, p.ColRef) and e.level == 0 and e.index >= w \
                    else None

            flat = replace(rel, input=_delta(inner, leaf), on=p.transform(on, past) if on is not None else None)
            return _carried(flat, inner, added)
        case p.Project(input=inner, outputs=outputs, names=names):
            w = len(p.columns(inner))
            return p.Project(_delta(inner, leaf), (*outputs, w, w + 1), (*names, DELTA_TS, DELTA_DIFF))
        case p.SetOp(kind=p.SetKind.UNION, all=True, left=left, right=right):
            return p.SetOp(p.SetKind.UNION, True, _delta(left, leaf), _delta(right, leaf))
        case p.SetOp(kind=kind, all=all_):
            raise NotIncremental(f"{kind.value.upper()}{' ALL' if all_ else ''} is recomputed")
        case p.TopK(input=inner, limit=None, offset=None):
            return _delta(inner, leaf)  # an ORDER BY alone: updates are ordered by time
        case p.TopK():
            raise NotIncremental("LIMIT and OFFSET are recomputed")
        case p.Reduce():
            raise NotIncremental("aggregates are not linear")
        case p.Distinct():
            raise NotIncremental("DISTINCT is recomputed")
        case p.Join():
            raise NotIncremental("joins are recomputed")
        case p.Constant() | p.TableFunction():
            raise NotIncremental("a query without a table is recomputed")
    raise NotIncremental(f"{type(rel).__name__} is recomputed")


def _carried(delta: p.Rel, inner: p.Rel, added: int) -> p.Project:
    """An operator that appended `added` columns to its input's delta, with __mz_ts and
    __mz_diff moved back behind them."""
    w = len(p.columns(inner))
    names = tuple(c.name for c in p.columns(delta))
    outputs = (*range(w), *range(w + 2, w + 2 + added), w, w + 1)
    return p.Project(delta, outputs, tuple(names[i] for i in outputs))


def _row_by_row(e: p.Expr) -> None:
    """Refuse an expression whose value depends on more than the row it is computed on."""
    if p.contains(e, p.Subquery):
        raise NotIncremental("subqueries in expressions are recomputed")
    if p.contains(e, p.WindowCall):
        raise NotIncremental("window functions are recomputed")


def _core(rel: p.Rel) -> p.Rel:
    """The operator under the row-by-row ones at the top (and an ORDER BY alone)."""
    while isinstance(rel, (p.Project, p.Map, p.Filter)) or isinstance(rel, p.TopK) and rel.limit is None \
            and rel.offset is None:
        rel = rel.input
    return rel


# -- aggregates ------------------------------------------------------------------------------


def _outputs_of_reduce(rel: p.Rel) -> tuple[p.Reduce, list[int]]:
    """The Reduce at the top of `rel` and, per output column, the Reduce column it is: the
    binder selects an aggregate's outputs through a Project (and a Map of references)."""
    match rel:
        case p.Reduce():
            return rel, list(range(len(p.columns(rel))))
        case p.TopK(input=inner, limit=None, offset=None):
            return _outputs_of_reduce(inner)
        case p.Project(input=inner, outputs=outputs):
            reduce, picks = _outputs_of_reduce(inner)
            return reduce, [picks[i] for i in outputs]
        case p.Map(input=inner, exprs=exprs):
            reduce, picks = _outputs_of_reduce(inner)
            for e in exprs:
                if not (isinstance(e, p.ColRef) and e.level == 0):
                    raise NotIncremental("an expression over an aggregate's result is recomputed")
                picks.append(picks[e.index])
            return reduce, picks
        case p.Filter():
            raise NotIncremental("HAVING is recomputed")
    raise NotIncremental("only a single SELECT ... GROUP BY is maintained per group")


def _aggregate(rel: p.Rel, _types: list[SqlType], render: Renderer) -> AggregatePlan:
    reduce, picks = _outputs_of_reduce(rel)
    if reduce.sets is not None:
        raise NotIncremental("grouping sets are recomputed")
    k = len(reduce.keys)
    for e in reduce.keys:
        _row_by_row(e)
        if equal_by_key(e.type):  # the state groups by the value, Spark by its equality key
            raise NotIncremental(f"GROUP BY a value of type {e.type.base.name} is recomputed")
    kinds, args = zip(*(_kind(a) for a in reduce.aggregates), strict=True) if reduce.aggregates else ((), ())
    # The input's updates beside each key's and each argument's value: one Spark query
    # reads them, and the partials are sums over it.
    w = len(p.columns(reduce.input))
    values = [*reduce.keys, *(a for a in args if a is not None)]
    source = render.query(p.Map(_delta(reduce.input), tuple(values), tuple(f"v{i}" for i in range(len(values)))))
    column = {id(e): _column(w + 2 + i) for i, e in enumerate(values)}
    keys = [column[id(e)] for e in reduce.keys]
    key_items = [exp.alias_(key.copy(), f"__k{i}") for i, key in enumerate(keys)]
    ts, diff = _column(w), _column(w + 1)

    def query(items: list[exp.Expression], where: exp.Expression | None = None,
              by: Iterable[exp.Expression] = ()) -> str:
        q = exp.select(*key_items, exp.alias_(ts.copy(), DELTA_TS), *items).from_(
            source.subquery(_SUBQUERY_ALIAS, copy=True))
        if where is not None:
            q = q.where(where)
        return spark_sql(q.group_by(*(e.copy() for e in (*keys, ts, *by))))

    partials: list[exp.Expression] = [exp.alias_(exp.Sum(this=diff.copy()), "__n")]
    extremes: dict[int, str] = {}
    floats: dict[int, str] = {}
    for j, (kind, arg) in enumerate(zip(kinds, args, strict=True)):
        if arg is None:
            continue
        value = column[id(arg)]
        present = exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))
        if kind in ("count", "sum", "avg"):
            counted = exp.If(this=present.copy(), true=diff.copy(), false=exp.Literal.number(0))
            partials.append(exp.alias_(exp.Sum(this=counted), f"__c{j}"))
        if kind in ("sum", "avg"):
            # Every stored update has a diff of ±1, so a retraction's value enters negated:
            # a decimal keeps its scale. A bigint is summed as a decimal: a batch's sum of
            # bigints may pass 2^63, which Spark's sum would wrap.
            summand = exp.cast(value.copy(), "DECIMAL(20, 0)") if arg.type.base.name == "bigint" else value
            signed = exp.If(this=exp.LT(this=diff.copy(), expression=exp.Literal.number(0)),
                            true=exp.Neg(this=exp.Paren(this=summand.copy())), false=summand.copy())
            partials.append(exp.alias_(exp.Sum(this=signed), f"__s{j}"))
        if kind in ("min", "max", "sum", "avg"):
            # The values with their net counts per group: min/max over what is left, and a
            # float sum added up exactly by the server (server.subscribe_state).
            sql = query([exp.alias_(value.copy(), "__v"), exp.alias_(exp.Sum(this=diff.copy()), "__n")],
                        where=present, by=[value])
            (extremes if kind in ("min", "max") else floats)[j] = sql
    outputs = tuple(("key", i) if i < k else ("agg", i - k) for i in picks)
    return AggregatePlan(k, outputs, tuple(Aggregate(kind, j) for j, kind in enumerate(kinds)),
                         query(partials), extremes, is_global=not reduce.keys, float_sql=floats)


def _column(i: int) -> exp.Column:
    return exp.column(f"c{i}", _SUBQUERY_ALIAS)


def _kind(a: p.AggCall) -> tuple[str, p.Expr | None]:
    """An aggregate's kind in the state (planner.dataflow.Aggregate) and the value it folds:
    FILTER (WHERE …) is the aggregate of its argument made NULL where the condition is not
    true, so count(*) FILTER counts a constant."""
    name = a.func.name
    if a.func.schema != "pg_catalog" or name not in ("count", "sum", "avg", "min", "max"):
        raise NotIncremental(f"{name} is recomputed")
    if a.distinct:
        raise NotIncremental("DISTINCT aggregates are recomputed")
    if not a.args and a.filter is None:
        return "count_star", None
    arg = a.args[0] if a.args else p.Literal(1, BIGINT)
    _row_by_row(arg)
    if a.filter is not None:
        _row_by_row(a.filter)
        arg = p.Case(((a.filter, arg),), p.Literal(None, arg.type), arg.type)
    if name == "count":
        return "count", arg
    allowed = _SUMMED if name in ("sum", "avg") else _ORDERED
    if arg.type.is_array or arg.type.base.name not in allowed:
        raise NotIncremental(f"{name}({arg.type.base.name}) is recomputed")
    return name, arg


# -- joins -----------------------------------------------------------------------------------


def _join(rel: p.Rel, types: list[SqlType], render: Renderer) -> JoinPlan:
    """An inner join with an equality between its inputs, under row-by-row operators. The
    conditions of the join and of the filters right above it are one conjunction: its
    equalities between a left and a right expression are the join key, the rest is
    checked on the joined rows."""
    join = _core(rel)
    assert isinstance(join, p.Join)
    chain: list[p.Rel] = []  # the operators above the join, top first
    node = rel
    while node is not join:
        chain.append(node)
        node = node.input
    if join.kind not in (p.JoinKind.INNER, p.JoinKind.CROSS):
        raise NotIncremental("outer joins are recomputed")
    if join.lateral:
        raise NotIncremental("LATERAL is recomputed")
    if isinstance(join.left, p.Join) or isinstance(join.right, p.Join):
        raise NotIncremental("joins of more than two inputs are recomputed")
    conditions = _conjuncts(join.on)
    while chain and isinstance(chain[-1], p.Filter):  # the filters right above the join
        conditions += _conjuncts(chain.pop().predicate)
    wl, wr = len(p.columns(join.left)), len(p.columns(join.right))
    left_keys: list[p.Expr] = []
    right_keys: list[p.Expr] = []
    left_only: list[p.Expr] = []  # conditions on one input are checked before the join
    right_only: list[p.Expr] = []
    residual: list[p.Expr] = []
    for c in conditions:
        _row_by_row(c)
        pair = _key_pair(c, wl)
        refs = _refs([c])
        if pair is not None:
            left_keys.append(pair[0])
            right_keys.append(_shifted(pair[1], -wl))
        elif refs and max(refs) < wl:
            left_only.append(c)
        elif refs and min(refs) >= wl:
            right_only.append(_shifted(c, -wl))
        else:
            residual.append(c)
    if not left_keys:
        raise NotIncremental("a join without an equality between its inputs is recomputed")
    needed = sorted(_needed(chain, wl + wr) | _refs(residual))
    lefts = [i for i in needed if i < wl]
    rights = [i - wl for i in needed if i >= wl]
    left_names = tuple(f"l{i}" for i in range(len(lefts)))
    right_names = tuple(f"r{i}" for i in range(len(rights)))
    joined_types = [c.type for c in p.columns(join)]

    # The joined updates (l<i>, r<i>, __mz_ts, __mz_diff: server.subscribe_state.JoinState)
    # as a relation of the join's own columns, the unused ones NULL, so that the operators
    # above the join read it unchanged.
    kept = [*lefts, *(wl + i for i in rights)]
    get = p.Get(JOINED, (*(p.Column(n, joined_types[i]) for n, i in zip(left_names + right_names, kept,
                                                                         strict=True)), _TS, _DIFF))
    unused = [i for i in range(wl + wr) if i not in kept]
    nulls = p.Map(get, tuple(p.Literal(None, joined_types[i]) for i in unused), tuple(f"n{i}" for i in unused))
    position = {i: n for n, i in enumerate([*kept, wl + wr, wl + wr + 1, *unused])}
    joined: p.Rel = p.Project(nulls, (*(position[i] for i in range(wl + wr + 2)),),
                              tuple(c.name for c in p.columns(join)) + (DELTA_TS, DELTA_DIFF))
    if residual:
        joined = p.Filter(joined, _and(residual))
    post = _delta(chain[0], leaf=(chain[-1].input, joined)) if chain else joined
    names = [*(f"c{i}" for i in range(len(types))), DELTA_TS, DELTA_DIFF]

    def side(inner: p.Rel, conditions: list[p.Expr], columns: list[int], keys: list[p.Expr],
             names: tuple[str, ...]) -> str:
        w = len(p.columns(inner))
        if conditions:
            inner = p.Filter(inner, _and(conditions))
        keyed = p.Map(_delta(inner), tuple(keys), tuple(f"k{i}" for i in range(len(keys))))
        outputs = (*columns, *range(w + 2, w + 2 + len(keys)), w, w + 1)
        shaped = p.Project(keyed, outputs, tuple(f"o{i}" for i in range(len(outputs))))
        return render.named(shaped, [*names, *(f"__jk{i}" for i in range(len(keys))), DELTA_TS, DELTA_DIFF])

    joined_render = Renderer(lambda name: JOINED if name == JOINED else render.table_name(name), render.session)
    return JoinPlan(side(join.left, left_only, lefts, left_keys, left_names),
                    side(join.right, right_only, rights, right_keys, right_names),
                    left_names, right_names, len(left_keys), joined_render.named(post, names, types))


def _conjuncts(e: p.Expr | None) -> list[p.Expr]:
    if e is None:
        return []
    if isinstance(e, p.BoolOp) and e.kind is p.BoolKind.AND:
        return [c for a in e.args for c in _conjuncts(a)]
    return [e]


def _and(conditions: list[p.Expr]) -> p.Expr:
    return conditions[0] if len(conditions) == 1 else p.BoolOp(p.BoolKind.AND, tuple(conditions),
                                                               conditions[0].type)


def _key_pair(c: p.Expr, wl: int) -> tuple[p.Expr, p.Expr] | None:
    """(left, right) when `c` is `l = r` of an expression of each input. Only an equality
    Spark computes as `=` is a key: the state matches keys by their values' equality."""
    if not (isinstance(c, p.OpCall) and c.op.name == "=" and c.op.spark == "{0} = {1}" and len(c.args) == 2):
        return None
    a, b = (_refs([x]) for x in c.args)
    if p.levels_used(c) - {0}:
        return None
    if a and b and max(a) < wl <= min(b):
        return c.args[0], c.args[1]
    if a and b and max(b) < wl <= min(a):
        return c.args[1], c.args[0]
    return None


def _refs(exprs: Iterable[p.Expr]) -> set[int]:
    """The input columns (level 0) the expressions read."""
    return {ref.index for e in exprs for ref in p.refs_at(e, 0)}


def _shifted(e: p.Expr, by: int) -> p.Expr:
    return p.transform(e, lambda n: p.ColRef(0, n.index + by, n.type)
                       if isinstance(n, p.ColRef) and n.level == 0 else None)


def _needed(chain: list[p.Rel], width: int) -> set[int]:
    """The columns of the relation under `chain` (top first) that its operators read."""
    need = set(range(len(p.columns(chain[0])))) if chain else set(range(width))
    for op in chain:
        match op:
            case p.Project(outputs=outputs):
                need = {outputs[i] for i in need}
            case p.Map(input=inner, exprs=exprs):
                w = len(p.columns(inner))
                need = {i for i in need if i < w} | _refs(exprs[i - w] for i in need if i >= w)
            case p.Filter(predicate=pred):
                need |= _refs([pred])
    return need


