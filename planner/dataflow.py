"""Planning a SUBSCRIBE's dataflow: how each micro-batch's change is computed.

The delta rules are the classic ones. A *linear* query (filters, projections,
maps, UNION ALL over tables and views) satisfies ΔQ(R) = Q(ΔR): running the
query over just the batch's updates, carrying each update's `__mz_ts` and
`__mz_diff` through, gives the change of the result. A *GROUP BY* with
count/sum/avg/min/max keeps state per group: Spark reduces the batch's updates
to one partial per (group, timestamp), and only the groups the batch touches
change. Anything else is *recomputed* at each timestamp and diffed against the
previous result, which EXPLAIN SUBSCRIBE reports. Common table expressions are
inlined first (a CTE is a view of one query), so they do not force a recompute.

Everything here is pure: sqlglot trees in, Spark SQL text out. This plans the older
(sqlglot) path's queries; the front end of our own plans from its operator tree with the
same rules and plans (planner.sql.delta).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from planner.spark_guard import spark_sql

DELTA_TS = "__mz_ts"
DELTA_DIFF = "__mz_diff"

AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}


@dataclass(frozen=True)
class Aggregate:
    kind: str  # count_star | count | sum | avg | min | max
    index: int  # position among the query's aggregates


@dataclass(frozen=True)
class AggregatePlan:
    """State per group: partial sums and counts, plus value multisets for min/max.

    Sums are exact: an update's value enters `__s<j>` negated for a retraction (every
    stored update has a diff of ±1: storage keeps one record per unit of multiplicity),
    so a decimal keeps its scale, where multiplying by the bigint diff would make Spark
    widen it past 38 digits and cut the scale to 6. A float sum cannot be both summed by
    Spark and retracted exactly, so for float arguments the server uses `float_sql`
    instead: the batch's values per group with their net counts, which it adds up
    exactly (see server.subscribe_state)."""

    key_count: int
    outputs: tuple[tuple[str, int], ...]  # ("key", i) or ("agg", j), in output column order
    aggregates: tuple[Aggregate, ...]
    partial_sql: str  # __k*, __mz_ts, __n, __c<j>, __s<j>: one row per (group, ts)
    extreme_sql: dict[int, str] = field(default_factory=dict)  # j → __k*, __mz_ts, __v, __n
    is_global: bool = False  # no GROUP BY: exactly one output row, always
    float_sql: dict[int, str] = field(default_factory=dict)  # sum/avg j → as extreme_sql


@dataclass(frozen=True)
class JoinPlan:
    """An inner equi-join of two linear inputs, with the matching rows kept per join key.

    Each side's SQL yields its referenced columns, the join key as __jk<i>, and
    __mz_ts/__mz_diff; the joined updates (columns l<i> and r<i>) are shaped
    by `post_sql`, which reads them from the view JOINED.
    """

    left_sql: str
    right_sql: str
    left_columns: tuple[str, ...]  # joined-view names of the left side's columns
    right_columns: tuple[str, ...]
    key_count: int
    post_sql: str


JOINED = "__sw_joined"


@dataclass(frozen=True)
class DataflowPlan:
    strategy: str  # linear | aggregate | join | recompute
    reason: str
    full_sql: str  # the query itself, for snapshots, recompute and result types
    delta_sql: str | None = None  # linear: the query's columns plus __mz_ts, __mz_diff
    aggregate: AggregatePlan | None = None
    join: JoinPlan | None = None

    def explain(self) -> list[str]:
        lines = {
            "linear": ["incremental: linear (filter / project / map / UNION ALL)",
                       "each micro-batch runs the query over the batch's updates only"],
            "aggregate": ["incremental: GROUP BY with state per group",
                          "each micro-batch reduces its updates to partials per (group, timestamp);",
                          "only the groups the batch touches are updated"],
            "join": ["incremental: equi-join with the matching rows kept per join key",
                     "each micro-batch computes ΔL ⋈ R + L' ⋈ ΔR for the batch's updates only"],
            "recompute": ["recompute-and-diff: the query is re-run in full at each timestamp",
                          "and diffed against the previous result"],
        }[self.strategy]
        out = [f"strategy: {self.strategy}", *lines]
        if self.reason:
            out.append(f"reason: {self.reason}")
        out.append(f"spark sql: {self.full_sql}")
        if self.delta_sql:
            out.append(f"delta sql: {self.delta_sql}")
        if self.aggregate:
            out.append(f"partial sql: {self.aggregate.partial_sql}")
        if self.join:
            out.extend([f"left sql: {self.join.left_sql}", f"right sql: {self.join.right_sql}",
                        f"post sql: {self.join.post_sql}"])
        return out


class NotIncremental(Exception):
    """The shape is not one we maintain incrementally; the message says why."""


def plan_dataflow(tree: exp.Expression) -> DataflowPlan:
    """Choose how to maintain a resolved, qualified query (see planner.translate)."""
    full_sql = spark_sql(tree)
    tree = inline_ctes(tree)
    try:
        return DataflowPlan("linear", "", full_sql, delta_sql=spark_sql(_linear(tree)))
    except NotIncremental as linear_reason:
        try:
            return DataflowPlan("aggregate", "", full_sql, aggregate=_aggregate(tree))
        except NotIncremental as agg_reason:
            try:
                return DataflowPlan("join", "", full_sql, join=_join(tree))
            except NotIncremental as join_reason:
                if isinstance(tree, exp.Select) and _has_aggregates(tree):
                    reason = str(agg_reason)
                elif isinstance(tree, exp.Select) and tree.args.get("joins"):
                    reason = str(join_reason)
                else:
                    reason = str(linear_reason)
                return DataflowPlan("recompute", reason, full_sql)


def inline_ctes(tree: exp.Expression) -> exp.Expression:
    """The query with each non-recursive CTE written out as a subquery where it is read:
    `WITH c AS (q) SELECT ... FROM c` is `SELECT ... FROM (q) AS c`. The delta rules then
    see through it as through a view."""
    tree = tree.copy()
    # Innermost first: a nested WITH may define a name again, and its readers are its own.
    for node in sorted(tree.find_all(exp.With), key=lambda n: -n.depth):
        if node.args.get("recursive"):
            continue
        owner = node.parent
        for cte in list(node.expressions):
            name = cte.alias_or_name.lower()
            body = cte.this
            later = [c.this for c in node.expressions[node.expressions.index(cte) + 1:]]
            for part in [*later, owner]:
                for table in list(part.find_all(exp.Table)):
                    if table.args.get("db") or not isinstance(table.this, exp.Identifier) \
                            or table.name.lower() != name or part is owner and _inside(table, node):
                        continue
                    alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(cte.alias_or_name,
                                                                                             quoted=True))
                    table.replace(exp.Subquery(this=body.copy(), alias=alias.copy()))
        owner.set("with_", None)
    return tree


def _inside(node: exp.Expression, ancestor: exp.Expression) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


# Clauses that change a SELECT's result as a whole, not row by row.
_SHAPING_CLAUSES = ("group", "having", "limit", "offset", "qualify", "distinct")


def _require_clauses_absent(select: exp.Select, clauses: tuple[str, ...], why: str) -> None:
    for clause in clauses:
        if select.args.get(clause):
            raise NotIncremental(f"{clause.upper()} {why}")


def _has_aggregates(select: exp.Select) -> bool:
    return bool(select.args.get("group")) or any(
        isinstance(n, exp.AggFunc) for e in select.expressions for n in e.walk())


def _from_alias(select: exp.Select) -> tuple[exp.Expression, str]:
    """The single input of a select, made linear, and its alias."""
    if select.args.get("joins"):
        raise NotIncremental("joins are recomputed")
    if select.args.get("laterals"):
        raise NotIncremental("LATERAL is recomputed")
    source = select.args.get("from_") or select.args.get("from")
    if source is None:
        raise NotIncremental("a query without FROM is recomputed")
    node = source.this
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        return node.copy(), node.alias_or_name
    if isinstance(node, exp.Subquery):
        inner = _linear(node.this)
        return exp.Subquery(this=inner, alias=node.args.get("alias").copy()), node.alias_or_name
    raise NotIncremental(f"FROM {node.sql('spark')} is recomputed")


def _no_subqueries(select: exp.Select) -> None:
    for part in [*select.expressions, select.args.get("where")]:
        if part is None:
            continue
        for n in part.walk():
            if isinstance(n, (exp.Subquery, exp.Exists)) or isinstance(n, exp.Select) and n is not select:
                raise NotIncremental("subqueries in expressions are recomputed")
            if isinstance(n, exp.Window):
                raise NotIncremental("window functions are recomputed")


def _linear(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Union):
        if node.args.get("distinct"):
            raise NotIncremental("UNION (distinct) is recomputed")
        return exp.union(_linear(node.this), _linear(node.expression), distinct=False)
    if isinstance(node, exp.Subquery):
        return _linear(node.this)
    if not isinstance(node, exp.Select):
        raise NotIncremental(f"{type(node).__name__} is recomputed")
    _require_clauses_absent(node, _SHAPING_CLAUSES, "is not linear")
    if _has_aggregates(node):
        raise NotIncremental("aggregates are not linear")
    _no_subqueries(node)
    source, alias = _from_alias(node)
    out = node.copy()
    out.set("order", None)
    out.set("from_", exp.From(this=source))
    ident = exp.to_identifier(alias, quoted=True)
    out.select(exp.alias_(exp.column(DELTA_TS, table=ident), DELTA_TS),
               exp.alias_(exp.column(DELTA_DIFF, table=ident), DELTA_DIFF), copy=False)
    return out


def _output_casts_folded(node: exp.Expression) -> exp.Expression:
    """`SELECT CAST(t.c1 AS T1) AS c0, ... FROM (SELECT ... GROUP BY ...) AS t` — how
    planner.sql writes an aggregate, each output cast to its column's type — as the inner
    SELECT with its outputs in the outer's order and names. The casts are dropped: they
    only fix each column's Spark type to the one its PostgreSQL type has, and the state
    gives every aggregate's value that type itself (server.subscribe_state)."""
    if not isinstance(node, exp.Select) or any(node.args.get(c) for c in (*_SHAPING_CLAUSES, "where", "joins",
                                                                        "laterals", "order", "with_")):
        return node
    source = node.args.get("from_") or node.args.get("from")
    inner = source.this if source is not None else None
    if not isinstance(inner, exp.Subquery) or not isinstance(inner.this, exp.Select) \
            or not _has_aggregates(inner.this):
        return node
    outputs = {e.alias_or_name: e for e in inner.this.expressions}
    picked = []
    for e in node.expressions:
        cast = e.this if isinstance(e, exp.Alias) else e
        column = cast.this if isinstance(cast, exp.Cast) else cast  # an unconstrained numeric is not cast
        if not isinstance(column, exp.Column) or column.table != inner.alias_or_name or column.name not in outputs:
            return node
        picked.append(exp.alias_(outputs[column.name].this.copy(), e.alias_or_name))
    folded = inner.this.copy()
    folded.set("expressions", picked)
    return folded


def _aggregate(node: exp.Expression) -> AggregatePlan:
    node = _output_casts_folded(node)
    if not isinstance(node, exp.Select):
        raise NotIncremental("only a single SELECT ... GROUP BY is maintained per group")
    _require_clauses_absent(node, tuple(c for c in _SHAPING_CLAUSES if c != "group"),
                            "with GROUP BY is recomputed")
    if not _has_aggregates(node):
        raise NotIncremental("not an aggregate")
    _no_subqueries(node)
    source, alias = _from_alias(node)
    group = node.args.get("group")
    if group is not None and any(isinstance(k, (exp.GroupingSets, exp.Cube, exp.Rollup)) for k in group.expressions):
        raise NotIncremental("grouping sets are recomputed")
    keys = [k.copy() for k in group.expressions] if group else []
    if any(isinstance(k, exp.Literal) for k in keys):
        raise NotIncremental("GROUP BY position is recomputed")
    outputs: list[tuple[str, int]] = []
    aggregates: list[tuple[Aggregate, exp.Expression | None]] = []
    for e in node.expressions:
        inner = e.this if isinstance(e, exp.Alias) else e
        match = next((i for i, k in enumerate(keys) if k == inner), None)
        if match is not None:
            outputs.append(("key", match))
            continue
        kind = AGGREGATES.get(type(inner))
        if kind is None:
            raise NotIncremental(f"the output {inner.sql('spark')} is neither a group key nor an aggregate")
        arg = inner.this
        if isinstance(arg, exp.Distinct):
            raise NotIncremental("DISTINCT aggregates are recomputed")
        if any(isinstance(n, exp.AggFunc) for n in arg.walk()) if arg is not None else False:
            raise NotIncremental("nested aggregates are recomputed")
        if kind == "count" and (arg is None or isinstance(arg, exp.Star)):
            kind, arg = "count_star", None
        outputs.append(("agg", len(aggregates)))
        aggregates.append((Aggregate(kind, len(aggregates)), arg))
    ident = exp.to_identifier(alias, quoted=True)
    ts_col = exp.column(DELTA_TS, table=ident)
    diff_col = exp.column(DELTA_DIFF, table=ident)
    key_cols = [exp.alias_(k.copy(), f"__k{i}") for i, k in enumerate(keys)]
    partials: list[exp.Expression] = [*key_cols, exp.alias_(ts_col.copy(), DELTA_TS),
                                      exp.alias_(exp.Sum(this=diff_col.copy()), "__n")]
    extremes: dict[int, str] = {}
    floats: dict[int, str] = {}
    where = node.args.get("where")
    for agg, arg in aggregates:
        if agg.kind in ("count", "sum", "avg"):
            nonnull = exp.If(this=exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null())),
                             true=diff_col.copy(), false=exp.Literal.number(0))
            partials.append(exp.alias_(exp.Sum(this=nonnull), f"__c{agg.index}"))
        if agg.kind in ("sum", "avg"):
            signed = exp.If(this=exp.LT(this=diff_col.copy(), expression=exp.Literal.number(0)),
                            true=exp.Neg(this=exp.Paren(this=arg.copy())), false=arg.copy())
            partials.append(exp.alias_(exp.Sum(this=signed), f"__s{agg.index}"))
        if agg.kind in ("min", "max", "sum", "avg"):
            cond = exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null()))
            q = exp.select(*[k.copy() for k in key_cols], exp.alias_(ts_col.copy(), DELTA_TS),
                           exp.alias_(arg.copy(), "__v"), exp.alias_(exp.Sum(this=diff_col.copy()), "__n"))
            q = q.from_(source.copy()).where(exp.and_(where.this.copy(), cond) if where else cond)
            q = q.group_by(*[k.copy() for k in keys], ts_col.copy(), arg.copy())
            (extremes if agg.kind in ("min", "max") else floats)[agg.index] = spark_sql(q)
    q = exp.select(*partials).from_(source.copy())
    if where is not None:
        q = q.where(where.this.copy())
    q = q.group_by(*[k.copy() for k in keys], ts_col.copy())
    return AggregatePlan(len(keys), tuple(outputs), tuple(a for a, _ in aggregates), spark_sql(q),
                         extremes, is_global=not keys, float_sql=floats)


def _source(node: exp.Expression) -> tuple[exp.Expression, str]:
    """A FROM or JOIN operand made linear, and its alias."""
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        return node.copy(), node.alias_or_name
    if isinstance(node, exp.Subquery):
        return exp.Subquery(this=_linear(node.this), alias=node.args.get("alias").copy()), node.alias_or_name
    raise NotIncremental(f"join input {node.sql('spark')} is recomputed")


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def _tables_of(node: exp.Expression) -> set[str]:
    return {c.table for c in node.find_all(exp.Column)}


def _join(node: exp.Expression) -> JoinPlan:
    if not isinstance(node, exp.Select):
        raise NotIncremental("only SELECT ... JOIN is maintained per join key")
    joins = node.args.get("joins") or []
    if len(joins) != 1:
        raise NotIncremental("joins of more than two inputs are recomputed")
    _require_clauses_absent(node, _SHAPING_CLAUSES, "over a join is recomputed")
    if _has_aggregates(node):
        raise NotIncremental("aggregates over a join are recomputed")
    _no_subqueries(node)
    join = joins[0]
    if join.args.get("side") or (join.args.get("kind") or "").upper() not in ("", "INNER"):
        raise NotIncremental("outer and cross joins are recomputed")
    if join.args.get("using"):
        raise NotIncremental("JOIN ... USING is recomputed")
    source = node.args.get("from_") or node.args.get("from")
    left, a = _source(source.this)
    right, b = _source(join.this)
    if a == b:
        raise NotIncremental("a join of inputs with the same alias is recomputed")
    left_keys, right_keys, residual = [], [], []
    for c in _conjuncts(join.args.get("on")):
        if isinstance(c, exp.EQ):
            lt, rt = _tables_of(c.this), _tables_of(c.expression)
            if lt == {a} and rt == {b}:
                left_keys.append(c.this)
                right_keys.append(c.expression)
                continue
            if lt == {b} and rt == {a}:
                left_keys.append(c.expression)
                right_keys.append(c.this)
                continue
        residual.append(c)
    if not left_keys:
        raise NotIncremental("a join without an equality between its inputs is recomputed")
    columns = [c for part in [*node.expressions, node.args.get("where"), *residual] if part is not None
               for c in part.find_all(exp.Column)]
    if any(c.table not in (a, b) for c in columns):
        raise NotIncremental("columns that are not qualified by a join input are recomputed")
    names: dict[tuple[str, str], str] = {}
    for c in columns:
        side = "l" if c.table == a else "r"
        names.setdefault((c.table, c.name), f"{side}{sum(1 for k in names if k[0] == c.table)}")

    def side_sql(source: exp.Expression, alias: str, keys: list[exp.Expression]) -> tuple[str, tuple[str, ...]]:
        ident = exp.to_identifier(alias, quoted=True)
        cols = [(n, v) for (t, n), v in names.items() if t == alias]
        select = exp.select(
            *[exp.alias_(exp.column(n, table=ident, quoted=True), v) for n, v in cols],
            *[exp.alias_(k.copy(), f"__jk{i}") for i, k in enumerate(keys)],
            exp.alias_(exp.column(DELTA_TS, table=ident), DELTA_TS), exp.alias_(exp.column(DELTA_DIFF, table=ident), DELTA_DIFF),
        ).from_(source.copy())
        return spark_sql(select), tuple(v for _, v in cols)

    left_sql, left_cols = side_sql(left, a, left_keys)
    right_sql, right_cols = side_sql(right, b, right_keys)

    def rename(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and (n.table, n.name) in names:
            return exp.column(names[(n.table, n.name)], table=JOINED)
        return n

    post = exp.select(*[e.copy().transform(rename) for e in node.expressions],
                      exp.alias_(exp.column(DELTA_TS, table=JOINED), DELTA_TS),
                      exp.alias_(exp.column(DELTA_DIFF, table=JOINED), DELTA_DIFF)).from_(JOINED)
    conditions = [c.copy().transform(rename) for c in residual]
    where = node.args.get("where")
    if where is not None:
        conditions.append(where.this.copy().transform(rename))
    if conditions:
        post = post.where(exp.and_(*conditions))
    return JoinPlan(left_sql, right_sql, left_cols, right_cols, len(left_keys), spark_sql(post))
