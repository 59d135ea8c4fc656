"""A bound plan → Spark SQL text, built as sqlglot expressions and printed by sqlglot's
Spark generator: Spark sees only what this module writes, never the user's text.

Every relation becomes a query whose columns are named c0, c1, ...; an operator reads
its input as a subquery under an alias unique in the whole statement, so a correlated
reference (a `ColRef` k levels out) is that level's alias and column. Function and
operator calls expand the catalog's Spark template (`{0}`, `{1}`: the arguments).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial

from sqlglot import exp

from planner import (
    interval_calls,
    json_calls,
    jsonb_calls,
    params,
    pg_extract,
    pg_format,
    pg_functions,
    pg_strings,
    pg_timezone,
)
from planner.codecs.text_in import decode_text
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.functions import ORDERED_SET, Kind, Semantics
from planner.sql import (
    hoist,
    numeric_scale,
    spark_aggregates,
    spark_keys,
    spark_records,
    spark_table_functions,
)
from planner.sql import plan as p
from planner.sql.coerce import BOOLEAN, TEXT, UNKNOWN
from planner.sql.spark_templates import check_template as _check_template
from planner.sql.spark_templates import filled as _template
from planner.sql.spark_templates import no_subquery_in_lambda as _no_subquery_in_lambda
from planner.translate import SESSION_FUNCTIONS, SessionContext
from planner.types import BY_NAME, SqlType

# Get.name → the Spark table or view that holds the relation's rows now.
TableName = Callable[[str], str]


@dataclass(frozen=True)
class Fixpoint:
    """A WITH RECURSIVE … UNION query, which Spark's loop cannot run (it keeps repeated
    rows): the runner computes it before the statement, as a view of the rows of `base`
    and then of `step` over the view `work` (the rows the iteration before added), each
    time less those already there, until none is new. Columns c0, c1, ..."""

    base: str  # Spark SQL
    step: str  # Spark SQL reading the view named `work`
    work: str


# Registers a Fixpoint to be computed before the statement runs; gives the view holding it.
FixpointView = Callable[[Fixpoint], str]
_work_views = itertools.count()  # Fixpoint.work names, unique in the process
# `SELECT FROM t`: rows of no column, which Spark's SELECT cannot write; a column no one reads
_NO_COLUMN = exp.false().as_("no_column")


def to_spark(rel: p.Rel, table_name: TableName, output_types: list[SqlType] | None = None,
             param_values: dict[int, object] | None = None) -> str:
    """The Spark SQL computing `rel`'s rows, columns named c0, c1, ... in order; with
    `output_types`, each column cast to its type's Spark form, so that the rows arrive
    as the wire encoders expect them whatever type Spark's functions chose. `param_values`
    None describes the query: every parameter is a NULL of its type, so the columns come
    out as they will when it runs with values."""
    return to_spark_query(rel, table_name, output_types, param_values).sql(dialect="spark")


def to_spark_query(rel: p.Rel, table_name: TableName, output_types: list[SqlType] | None = None,
                   param_values: dict[int, object] | None = None,
                   session: SessionContext | None = None, fixpoint: FixpointView | None = None) -> exp.Query:
    """`to_spark`'s query as a sqlglot tree (Spark dialect), for planners that wrap it: the
    SUBSCRIBE dataflow (planner.sql.delta) names the columns of its delta queries around it.
    `session` gives the values of now(), version() and the like (without it they are not
    covered); `fixpoint` registers what must be computed first (without it WITH RECURSIVE …
    UNION is not covered). Subqueries are first made to name one query level out at most
    (planner.sql.hoist)."""
    query = _Generator(table_name, param_values, session, fixpoint).query(hoist.forwarded(hoist.lifted(rel)))
    if output_types is not None:
        query = _cast_outputs(query, output_types)
    return query


def _cast_outputs(query: exp.Query, types: list[SqlType]) -> exp.Query:
    if not types:  # rows of no column (_NO_COLUMN)
        return query
    if isinstance(query, exp.Select):
        # In the outermost SELECT itself: wrapping it would put its ORDER BY in a subquery.
        for item, t in zip(query.expressions, types, strict=True):
            item.set("this", _output_cast(item.this, t))
        return query
    alias = "t_out"
    return exp.select(*(_as(_output_cast(exp.column(f"c{i}", alias), t), i)
                        for i, t in enumerate(types))).from_(query.subquery(alias))


def _output_cast(e: exp.Expression, t: SqlType) -> exp.Expression:
    """An output column as its type's Spark type; an unconstrained numeric whose scale the
    values decide keeps the scale Spark computed it with (v * v of two DECIMAL(38, 10)
    values is DECIMAL(38, 20): cast back to 10 digits it would lose the last ten)."""
    if t.base.name == "numeric" and not t.is_array and t.typmod < 0 and t.display_scale is None \
            and not t.per_value_scale:
        return e
    return exp.Cast(this=e, to=exp.DataType.build(t.spark, dialect="spark"))


class _Generator:
    def __init__(self, table_name: TableName, param_values: dict[int, object] | None,
                 session: SessionContext | None = None, fixpoint: FixpointView | None = None) -> None:
        self.table_name = table_name
        self.fixpoint = fixpoint
        self.param_values = param_values
        self.session = session
        self.aliases = (f"t{i}" for i in itertools.count())
        self.lambdas = (f"sw_any{i}" for i in itertools.count())  # element variables (ANY/ALL, ...)
        self.outer: list[list[exp.Expression]] = []  # enclosing levels' input columns, innermost last
        # id of a list of input columns → (the list, kept alive so the id stays its own; the
        # relation they are the columns of): for the numeric scale of what reads them
        self.sources: dict[int, tuple[list[exp.Expression], p.Rel]] = {}
        self.iterations: dict[str, str] = {}  # RecursiveRef.name → its Spark CTE's name

    # -- relations -------------------------------------------------------------------------

    def query(self, rel: p.Rel) -> exp.Query:
        match rel:
            case p.Get(name=name, columns=cols):
                alias = next(self.aliases)
                table = exp.to_table(self.table_name(name)).as_(alias)
                return exp.select(*(_as(exp.column(c.name, alias, quoted=True), i) for i, c in enumerate(cols))
                                  ).from_(table)
            case p.Constant(rows=rows, columns=cols):
                return self._constant(rows, cols)
            case p.Map(input=inner, exprs=exprs):
                return self._select(inner, lambda cols: cols + [self.scalar(e, cols) for e in exprs])
            case p.Filter(input=inner, predicate=pred):
                return self._select(inner, lambda cols: cols, where=lambda cols: self.scalar(pred, cols))
            case p.Project(input=p.TopK() as top, outputs=outputs):
                return self._top_k(top, outputs)
            case p.Project(input=p.Map() as m, outputs=outputs):
                return self._fused(m, outputs)
            case p.Project(input=inner, outputs=outputs):
                return self._select(inner, lambda cols: [cols[i] for i in outputs])
            case p.Join():
                return self._join(rel)
            case p.Reduce():
                return self._reduce(rel)
            case p.Distinct(input=inner):
                q, cols = self._source(inner)
                types = [c.type for c in p.columns(inner)]
                if not any(spark_keys.equal_by_key(t) for t in types):
                    return q.select(*(_as(e, i) for i, e in enumerate(cols))).distinct()
                outputs, groups = spark_keys.grouped(cols, types)
                return q.select(*(_as(e, i) for i, e in enumerate(outputs))).group_by(*groups)
            case p.SetOp(kind=p.SetKind.UNION, all=False, left=left, right=right) \
                    if any(spark_keys.equal_by_key(c.type) for c in p.columns(left)):
                return self.query(p.Distinct(p.SetOp(p.SetKind.UNION, True, left, right)))
            case p.SetOp(kind=p.SetKind.INTERSECT | p.SetKind.EXCEPT, left=left) \
                    if any(spark_keys.equal_by_key(c.type) for c in p.columns(left)):
                return self._set_by_key(rel)
            case p.SetOp(kind=kind, all=all_, left=left, right=right):
                op = {p.SetKind.UNION: exp.Union, p.SetKind.EXCEPT: exp.Except,
                      p.SetKind.INTERSECT: exp.Intersect}[kind]
                return op(this=self.query(left), expression=self.query(right), distinct=not all_)
            case p.TopK():
                return self._top_k(rel, None)
            case p.TableFunction(args=args):
                return spark_table_functions.select(rel, [self.scalar(a, []) for a in args], next(self.lambdas),
                                                    _template)
            case p.Recursive():
                return self._recursive(rel)
            case p.RecursiveRef(name=name, columns=cols):
                alias = next(self.aliases)
                return exp.select(*(_as(exp.column(f"c{i}", alias), i) for i in range(len(cols)))).from_(
                    exp.to_table(self.iterations[name]).as_(alias))
            case p.FlatMap(input=inner, funcs=funcs, outer=outer, on=on):
                # the input's columns beside Spark's generator over each row's values (those
                # `on` keeps: a condition over the input's columns and the values' fields)
                q, cols = self._source(inner)
                keep = (lambda fields: self.scalar(on, [*cols, *fields])) if on is not None else None
                each = spark_table_functions.lockstep(
                    funcs, [[self.scalar(a, cols) for a in f.args] for f in funcs],
                    [next(self.lambdas) for _ in funcs], _template, len(cols), outer, keep)
                return q.select(*(_as(e, i) for i, e in enumerate(cols)), each)
        raise p.NotYet(f"{type(rel).__name__} cannot run on Spark yet")

    def _recursive(self, r: p.Recursive) -> exp.Select:
        """UNION ALL: Spark's own recursive CTE (the anchor UNION ALL the step reading the CTE).
        UNION: a Fixpoint the runner computes first (Spark's loop keeps repeated rows). Each
        side is cast to the columns' types: Spark types the loop by the anchor."""
        width = len(r.columns)
        if not r.distinct:  # the CTE's name is the statement's own
            name = self.iterations[r.name] = f"sw_rec{len(self.iterations)}"
            sides = [self._typed(rel, r.columns) for rel in (r.base, r.step)]
            return exp.select(*(_as(exp.column(f"c{i}", name), i) for i in range(width))).from_(name).with_(
                f"{name}({', '.join(f'c{i}' for i in range(width))})", as_=exp.union(*sides, distinct=False),
                recursive=True)
        if any(spark_keys.equal_by_key(c.type) for c in r.columns):
            raise SqlError(FEATURE_NOT_SUPPORTED, "WITH RECURSIVE … UNION over an interval or jsonb column "
                                                  "is not supported", hint="Use UNION ALL.")
        if self.fixpoint is None:
            raise p.NotYet("WITH RECURSIVE … UNION is computed before the statement, which this plan cannot")
        # a temp view of the Spark session, which statements running at once share: unique
        work = self.iterations[r.name] = f"sw_work{next(_work_views)}"
        base, step = (self._typed(rel, r.columns).sql(dialect="spark") for rel in (r.base, r.step))
        name = self.fixpoint(Fixpoint(base, step, work))
        return exp.select(*(_as(exp.column(f"c{i}", name), i) for i in range(width))).from_(name)

    def _typed(self, rel: p.Rel, columns: tuple[p.Column, ...]) -> exp.Select:
        alias = next(self.aliases)
        return exp.select(*(_as(exp.Cast(this=exp.column(f"c{i}", alias),
                                         to=exp.DataType.build(c.type.spark, dialect="spark")), i)
                            for i, c in enumerate(columns))).from_(self.query(rel).subquery(alias))

    def _set_by_key(self, s: p.SetOp) -> exp.Select:
        """INTERSECT or EXCEPT [ALL] where equal values may differ in Spark's form (an interval,
        a jsonb): each side's rows numbered within their group of equal keys, the left's kept
        where the right has (INTERSECT) or lacks (EXCEPT) a row of the same key and number: the
        n-th of a group pairs with the n-th (ALL), the first stands for the group (without)."""
        types = [c.type for c in p.columns(s.left)]
        sides = []
        for rel in (s.left, s.right):
            q, cols = self._source(rel)
            keys = [spark_keys.equal_by(c.copy(), t) for c, t in zip(cols, types, strict=True)]
            number = exp.Window(this=exp.Anonymous(this="row_number"), partition_by=keys,
                                order=exp.Order(expressions=[exp.Ordered(this=keys[0].copy())]))
            q = q.select(*(_as(c, i) for i, c in enumerate(cols)),
                         *(exp.alias_(k.copy(), f"k{i}") for i, k in enumerate(keys)), exp.alias_(number, "n"))
            alias = next(self.aliases)
            if not s.all:
                q = exp.select("*").from_(q.subquery(next(self.aliases))).where("n = 1")
            sides.append((q.subquery(alias), alias))
        (left, a), (right, b) = sides
        on = exp.and_(*(exp.NullSafeEQ(this=exp.column(f"k{i}", a), expression=exp.column(f"k{i}", b))
                        for i in range(len(types))), exp.EQ(this=exp.column("n", a), expression=exp.column("n", b)))
        kind = "left semi" if s.kind is p.SetKind.INTERSECT else "left anti"
        return exp.select(*(_as(exp.column(f"c{i}", a), i) for i in range(len(types)))).from_(left).join(
            right, on=on, join_type=kind)

    def _from(self, rel: p.Rel) -> tuple[exp.Expression | None, list[exp.Expression]]:
        """`rel` as a FROM item, and its columns as seen from the query reading it."""
        if isinstance(rel, p.Constant) and rel.rows == ((),):
            return None, []
        alias = next(self.aliases)
        sub = self.query(rel).subquery(alias)
        return sub, self._columns_of(rel, [exp.column(f"c{i}", alias) for i in range(len(p.columns(rel)))])

    def _columns_of(self, rel: p.Rel, cols: list[exp.Expression]) -> list[exp.Expression]:
        self.sources[id(cols)] = (cols, rel)
        return cols

    def _scale(self, e: p.Expr, cols: list[exp.Expression]) -> int | None:
        """The display scale of numeric `e` over input columns `cols`, if every value has it."""
        source = self.sources.get(id(cols))
        inputs = numeric_scale.output_scales(source[1]) if source is not None else [None] * len(cols)
        return numeric_scale.expr_scale(e, inputs)

    def _source(self, inner: p.Rel) -> tuple[exp.Select, list[exp.Expression]]:
        """A SELECT reading `inner` (no select list yet), and `inner`'s columns in it. A join
        chain is read in place, so that a WHERE over it sits beside its FROM as the user
        wrote it: over a subquery of a 37-table join Spark's optimizer takes minutes."""
        if isinstance(inner, p.Join):
            return self._join_chain(inner)
        source, cols = self._from(inner)
        q = exp.select()
        return (q.from_(source) if source is not None else q), cols

    def _select(self, inner: p.Rel, outputs, where=None) -> exp.Select:
        q, cols = self._source(inner)
        q = q.select(*([_as(e, i) for i, e in enumerate(outputs(cols))] or [_NO_COLUMN.copy()]))
        if where is not None:
            q = q.where(where(cols))
        return q

    def _constant(self, rows, cols) -> exp.Query:
        if len(rows) == 1:
            return exp.select(*(_as(self.scalar(e, []), i) for i, e in enumerate(rows[0])))
        alias = next(self.aliases)
        rendered = [[self.scalar(e, []) for e in r] for r in rows]
        if not all(_foldable(e) for r in rendered for e in r):
            # Spark's inline table takes only values it can compute while planning (no UDF,
            # lambda or subquery): rows of other expressions are an array of structs, made
            # into rows when the query runs.
            structs = [exp.Anonymous(this="named_struct", expressions=[
                x for i, e in enumerate(r) for x in (exp.Literal.string(f"c{i}"), e)]) for r in rendered]
            rows_of = exp.select(exp.Anonymous(this="inline", expressions=[exp.Array(expressions=structs)]))
            return exp.select(*(_as(exp.column(f"c{i}", alias), i) for i in range(len(cols)))).from_(
                rows_of.subquery(alias))
        values = exp.Values(expressions=[exp.Tuple(expressions=r) for r in rendered],
                            alias=exp.TableAlias(this=exp.to_identifier(alias),
                                                 columns=[exp.to_identifier(f"c{i}") for i in range(len(cols))]))
        # The columns by name, not `*`: the output casts wrap each select item.
        return exp.select(*(_as(exp.column(f"c{i}", alias), i) for i in range(len(cols)))).from_(values)

    def _join(self, j: p.Join) -> exp.Select:
        q, cols = self._join_chain(j)
        return q.select(*(_as(e, i) for i, e in enumerate(cols)))

    def _join_chain(self, j: p.Join) -> tuple[exp.Select, list[exp.Expression]]:
        """A left-deep chain of joins as one FROM clause (`a JOIN b ON .. JOIN c ON ..` is
        left-associative in Spark's SQL as in PostgreSQL's), each leaf one subquery. Nesting
        a subquery per join that re-aliases every column below it makes Spark's optimizer
        quadratic or worse in the number of tables: a 37-table join took minutes to plan."""
        q, lcols = self._source(j.left)  # a join on the left continues the same FROM
        if j.lateral:  # the right reads the left's columns as its outer level
            self.outer.append(lcols)
            try:
                right, rcols = self._from(j.right)
            finally:
                self.outer.pop()
            right = exp.Lateral(this=exp.Subquery(this=right.this), alias=right.args["alias"])
        else:
            right, rcols = self._from(j.right)
        cols = self._columns_of(j, lcols + rcols)
        if right is None:
            return q, cols
        if q.find(exp.From) is None:  # the left is one row of no columns
            return q.from_(right), cols
        kind = {p.JoinKind.CROSS: "CROSS", p.JoinKind.INNER: "INNER", p.JoinKind.LEFT: "LEFT",
                p.JoinKind.RIGHT: "RIGHT", p.JoinKind.FULL: "FULL"}[j.kind]
        if kind == "CROSS":
            return q.join(right, join_type="CROSS"), cols
        on = self.scalar(j.on, cols) if j.on is not None else exp.true()
        return q.join(right, on=on, join_type=kind), cols

    def _reduce(self, r: p.Reduce) -> exp.Select:
        # its aggregates' inputs that Spark refuses inside them are already computed below
        # it: hoist.forwarded applied hoist.inputs_below (to_spark_query)
        source, cols = self._from(r.input)
        keys = [self.scalar(k, cols) for k in r.keys]
        aggs = [exp.Cast(this=exp.Literal.number(0), to=exp.DataType.build("INT"))
                if r.sets is None and a.func.oid == 0 and a.func.name == "grouping"  # one set: all grouped
                else self._aggregate(a, cols) for a in r.aggregates]
        if r.sets is not None:
            q = exp.select(*(_as(e, i) for i, e in enumerate(keys + aggs)))
            q = q.from_(source) if source is not None else q
            sets = [exp.Tuple(expressions=[spark_keys.not_ordinal(keys[i].copy()) for i in s]) for s in r.sets]
            q.set("group", exp.Group(expressions=[exp.GroupingSets(expressions=sets)]))
            return q
        outputs, groups = spark_keys.grouped(keys, [k.type for k in r.keys])
        q = exp.select(*(_as(e, i) for i, e in enumerate(outputs + aggs)))
        q = q.from_(source) if source is not None else q
        return q.group_by(*groups) if groups else q

    def _aggregate(self, a: p.AggCall, cols) -> exp.Expression:
        if a.func.name in _DOUBLE_ONLY_AGGREGATES and a.type.base.name == "numeric":
            # Spark computes these in double precision; PostgreSQL's numeric answer has every digit
            raise p.NotYet(f"{a.func.name} of a numeric is not covered by this front end yet")
        if a.func.name == "array_agg" and a.args and a.args[0].type.is_array:
            # PostgreSQL's answer is a multidimensional array
            raise p.NotYet("array_agg of arrays is not covered by this front end yet")
        # a row value only reaches json_agg and jsonb_agg (planner.sql.bind_records)
        args, types = self._json_args(a.args, cols, jsonb=a.func.name in jsonb_calls.AGGREGATES)
        condition = self.scalar(a.filter, cols) if a.filter is not None else None
        if a.func.name in spark_aggregates.COLLECTING:
            if a.distinct and a.func.name in json_calls.AGGREGATES:  # its values are text by then
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{a.func.name}(DISTINCT ...) is not supported")
            if a.distinct and a.func.name in jsonb_calls.AGGREGATES:
                raise p.NotYet(f"{a.func.name}(DISTINCT ...) is not covered by this front end yet")
            keys = [spark_aggregates.Key(self.scalar(k.expr, cols), k.descending, k.nulls_first,
                                         partial(spark_keys.sort_value, t=k.expr.type)) for k in a.order]
            return spark_aggregates.collecting(a.func.name, args, types, keys, condition, a.distinct)
        if a.func.name == "count" and not args:
            return spark_aggregates.counted(condition) if condition is not None else exp.Count(this=exp.Star())
        if a.args and spark_keys.is_interval(a.args[0].type) and a.func.name in spark_aggregates.INTERVAL_AGGREGATES:
            if condition is not None:
                args = spark_aggregates.filtered(args, condition)
            return spark_aggregates.interval(a.func.name, args[0], a.distinct)
        if condition is not None:  # the aggregated arguments: an ordered-set aggregate's last
            args = spark_aggregates.filtered(args, condition, len(args) - 1 if a.func.name in ORDERED_SET else 0)
        _check_template(a.func.name, a.func.spark, len(args))
        if a.func.name in ("max", "min") and a.type.is_array:
            # in PostgreSQL's order of arrays (spark_keys.sort_value), then back to the arrays
            ordered = _template(f"{a.func.name}({{0}})", [spark_keys.sort_value(args[0], a.type)])
            return _template("transform({0}, sw_o -> sw_o.v)", [ordered])
        if a.distinct and a.func.name == "count":
            args = [spark_keys.equal_by(e, x.type) for e, x in zip(args, a.args, strict=True)]
        call = _template(a.func.spark, args)
        if a.distinct:
            call = _distinct_args(call)
        return call

    def _concat(self, name: str, args: tuple[p.Expr, ...], cols: list[exp.Expression]) -> exp.Expression:
        """concat/concat_ws: each argument as its type's output function writes it, which is
        its cast to text but for a boolean (t/f, where the cast says true) and char(n)
        (padded, where the cast trims)."""
        texts = self._output_texts(args, cols)
        if name == "concat":  # NULLs count as empty
            return exp.Anonymous(this="concat", expressions=[
                exp.Coalesce(this=t, expressions=[exp.Literal.string("")]) for t in texts])
        return exp.Anonymous(this="concat_ws", expressions=texts)  # NULLs are skipped, a NULL separator is NULL

    def _output_texts(self, args: tuple[p.Expr, ...], cols: list[exp.Expression]) -> list[exp.Expression]:
        """Each argument as its type's output function writes it (concat, format): its cast
        to text but for a boolean (t/f, where the cast says true) and char(n) (padded, where
        the cast trims)."""
        texts = []
        for a in args:
            value = self.scalar(a, cols)
            if a.type.base.name == "record":
                texts.append(value)  # its text already
            elif a.type.is_array or a.type.base.name not in ("boolean", "character"):
                texts.append(self.scalar(p.Cast(arg=a, type=TEXT), cols))
            elif a.type.base.name == "boolean":
                texts.append(_template("CASE WHEN {0} THEN 't' WHEN NOT {0} THEN 'f' END", [value]))
            else:
                texts.append(exp.Cast(this=value, to=exp.DataType.build("STRING")))
        return texts

    def _array_to_string(self, args: tuple[p.Expr, ...], cols: list[exp.Expression]) -> exp.Expression:
        """array_to_string: each element as its type's output function writes it (t/f for a
        boolean, where Spark's cast says true), as concat's arguments."""
        _no_subquery_in_lambda("array_to_string", "->", args)
        element = SqlType(args[0].type.base, args[0].type.typmod)
        if element.base.name in _FLOATS:  # their text is a Python UDF, which a Spark lambda cannot call
            raise p.NotYet("array_to_string of a float array is not covered by this front end yet")
        var = next(self.lambdas)
        [text] = self._output_texts((p.ColRef(0, len(cols), element),), [*cols, exp.column(var)])
        texts = exp.Anonymous(this="transform", expressions=[
            self.scalar(args[0], cols), exp.Lambda(this=text, expressions=[exp.to_identifier(var)])])
        return exp.Anonymous(this="array_join", expressions=[texts, *(self.scalar(a, cols) for a in args[1:])])

    def _window(self, w: p.WindowCall, cols) -> exp.Expression:
        f, args = w.func, [self.scalar(x, cols) for x in w.args]
        if f.name in ("lag", "lead") and len(w.args) == 3 and w.type.base.name == "numeric":
            scales = {self._scale(w.args[0], cols), self._scale(w.args[2], cols)}
            if None not in scales and len(scales) > 1:  # one column of Spark's has one scale
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{f.name} with a default of another scale than its "
                                                      "argument's is not supported")
        constant = _WINDOW_CONSTANTS.get(f.name)
        if constant is not None:
            # Spark takes the offset (lag, lead, nth_value) or the bucket count (ntile) only
            # as a constant, which the catalog's template shows as a sample value.
            value = w.args[constant] if constant < len(w.args) else None
            if value is not None and not (isinstance(value, p.Literal) and isinstance(value.value, int)):
                raise p.NotYet(f"{f.name} with a computed {'count' if f.name == 'ntile' else 'offset'} "
                               "is not covered by this front end yet")
            call = exp.Anonymous(this=f.name, expressions=args)
        elif f.kind is Kind.AGGREGATE:
            call = self._aggregate(p.AggCall(f, w.args, False, w.type, w.filter), cols)
        else:
            _check_template(f.name, f.spark, len(args))
            call = _template(f.spark, args)
        order = [exp.Ordered(this=spark_keys.sort_value(spark_keys.not_ordinal(self.scalar(k.expr, cols)), k.expr.type),
                             desc=k.descending, nulls_first=k.nulls_first) for k in w.order]
        if not order and f.kind is Kind.WINDOW:
            # Spark wants an ORDER BY for these; PostgreSQL's OVER () makes every row a peer
            order = [exp.Ordered(this=exp.Literal.number(0))]
        # PostgreSQL ignores a frame for the functions that have no use for one; Spark refuses it
        framed = w.frame is not None and (f.kind is Kind.AGGREGATE or f.name in _FRAMED_WINDOW_FUNCTIONS)
        partition = [spark_keys.equal_by(self.scalar(x, cols), x.type) for x in w.partition]

        def over(e: exp.Expression) -> exp.Window:
            return exp.Window(this=e, partition_by=[x.copy() for x in partition] or None,
                              order=exp.Order(expressions=[o.copy() for o in order]) if order else None,
                              spec=_frame_spec(w.frame) if framed else None)

        # An aggregate's template around Spark aggregates (array_agg's is collect_list's
        # array made NULL when empty): each of them over the window, the rest per row.
        inner = [n for n in call.find_all(exp.AggFunc) if n.find_ancestor(exp.AggFunc) is None]
        if f.kind is not Kind.AGGREGATE or isinstance(call, exp.AggFunc) \
                or isinstance(call, exp.Anonymous) and not inner:  # an aggregate sqlglot does not know
            return over(call)
        if not inner:
            raise p.NotYet(f"{f.name} over a window is not covered by this front end yet")
        for node in inner:
            node.replace(over(node.copy()))
        return call

    def _fused(self, m: p.Map, outputs: tuple[int, ...], top: p.TopK | None = None) -> exp.Select:
        """Project ∘ [TopK ∘] Map [∘ Filter] as one SELECT: a correlated reference then
        stays in the subquery's own select list or WHERE, where Spark accepts it."""
        inner, where = (m.input.input, m.input.predicate) if isinstance(m.input, p.Filter) else (m.input, None)
        q, base = self._source(inner)
        cols = base + [self.scalar(e, base) for e in m.exprs]
        q = q.select(*([_as(cols[i].copy(), k) for k, i in enumerate(outputs)] or [_NO_COLUMN.copy()]))
        if where is not None:
            q = q.where(self.scalar(where, base))
        if top is None:
            return q
        # Spark takes a window function or a correlated subquery in ORDER BY only as a column
        # of the select list: such a key is sorted on by its output's name, and when it is not
        # one of the outputs, every key is selected beside them and sorted on from outside
        position = {i: k for k, i in enumerate(outputs)}
        keys = list(cols)
        hidden = [key.index for key in top.order if key.index not in position and spark_keys.unsortable(cols[key.index])]
        if not hidden:
            for i, k in position.items():
                if spark_keys.unsortable(cols[i]):
                    keys[i] = exp.column(f"c{k}")
            return self._order_limit(q, top, keys)
        alias = next(self.aliases)
        for n, i in enumerate(sorted({key.index for key in top.order if key.index not in position})):
            q = q.select(exp.alias_(cols[i].copy(), f"h{n}"))
            keys[i] = exp.column(f"h{n}", alias)
        for i, k in position.items():
            keys[i] = exp.column(f"c{k}", alias)
        outer = exp.select(*(_as(exp.column(f"c{k}", alias), k) for k in range(len(outputs))))
        return self._order_limit(outer.from_(q.subquery(alias)), top, keys)

    def _top_k(self, top: p.TopK, outputs: tuple[int, ...] | None) -> exp.Select:
        if outputs is not None and isinstance(top.input, p.Map):
            return self._fused(top.input, outputs, top)
        source, cols = self._from(top.input)
        shown = cols if outputs is None else [cols[i] for i in outputs]
        q = exp.select(*(_as(e.copy(), i) for i, e in enumerate(shown)))
        if source is not None:
            q = q.from_(source)
        return self._order_limit(q, top, cols)

    def _order_limit(self, q: exp.Select, top: p.TopK, cols: list[exp.Expression]) -> exp.Select:
        types = [c.type for c in p.columns(top.input)]
        order = [exp.Ordered(this=spark_keys.sort_value(spark_keys.not_ordinal(cols[k.index].copy()), types[k.index]),
                             desc=k.descending, nulls_first=k.nulls_first) for k in top.order]
        if (top.limit is not None or top.offset is not None) and p.refers_outward(top, 1):
            return self._numbered(q, order, top)
        if order:
            q = q.order_by(*order)
        if top.limit is not None:
            q = q.limit(self._count(top.limit))
        if top.offset is not None:
            q = q.offset(self._count(top.offset))
        return q

    def _numbered(self, q: exp.Select, order: list[exp.Ordered], top: p.TopK) -> exp.Select:
        """A LIMIT/OFFSET of a correlated subquery as the rows numbered in ORDER BY's order:
        Spark decorrelates `ORDER BY … LIMIT` into a global sort and a row_number() per outer
        row without an order, which the shuffle between them loses (a silent wrong row). A
        window ordered by the keys is decorrelated as one partition per outer row."""
        width = len(q.expressions)
        number = exp.Window(this=exp.Anonymous(this="row_number"),
                            order=exp.Order(expressions=order or [exp.Ordered(this=exp.Literal.number(0))]))
        alias = next(self.aliases)
        rn = exp.column("rn", alias)
        offset = self._count(top.offset) if top.offset is not None else None
        conditions = [] if offset is None else [exp.GT(this=rn.copy(), expression=offset.copy())]
        if top.limit is not None:
            limit = self._count(top.limit)
            last = limit if offset is None else exp.Add(this=exp.cast(offset.copy(), "BIGINT"), expression=limit)
            conditions.append(exp.LTE(this=rn.copy(), expression=last))
        return exp.select(*(_as(exp.column(f"c{k}", alias), k) for k in range(width))).from_(
            q.select(exp.alias_(number, "rn")).subquery(alias)).where(exp.and_(*conditions))

    def _constant_text(self, e: p.Expr) -> str | None:
        """A constant's value (a parameter's, 'UTC' while describing) as text; 0A000 else."""
        if isinstance(e, p.Param) and self.param_values is not None and e.number in self.param_values:
            value = self.param_values[e.number]
            return None if value is None else str(value)
        if isinstance(e, (p.Literal, p.Param)):
            return "UTC" if isinstance(e, p.Param) else None if e.value is None else str(e.value)
        raise pg_timezone.not_constant()

    def _count(self, e: p.Expr) -> exp.Expression:
        """A LIMIT/OFFSET: Spark takes only an INT there."""
        if isinstance(e, p.Literal) and isinstance(e.value, int) and not isinstance(e.value, bool):
            if not 0 <= e.value < 2**31:
                raise p.NotYet("LIMIT and OFFSET must be between 0 and 2147483647 here")
            return exp.Literal.number(e.value)
        return exp.Cast(this=self.scalar(e, []), to=exp.DataType.build("INT"))

    # -- scalars ---------------------------------------------------------------------------

    def scalar(self, e: p.Expr, cols: list[exp.Expression]) -> exp.Expression:
        match e:
            case p.ColRef(level=0, index=i):
                return cols[i].copy()
            case p.ColRef(level=level, index=i):
                if level > 1:
                    # Spark resolves an outer reference in the enclosing query only
                    raise SqlError(FEATURE_NOT_SUPPORTED, "a subquery that refers to a column of a query "
                                   "two or more levels out is not supported")
                return self.outer[-level][i].copy()
            case p.Literal(value=value, type=t):
                return _literal(value, t)
            case p.Param(number=n, type=t):
                t = TEXT if t == UNKNOWN else t
                if self.param_values is None:  # describing: the columns, not the values
                    return _literal(None, t)
                if n not in self.param_values:
                    raise SqlError("42P02", f"there is no parameter ${n}")
                return _literal(_param_value(self.param_values[n], t), t)
            case p.Call(func=f) if f.semantics is Semantics.SYSTEM and f.name in _SESSION_VALUED:
                if self.session is None:
                    raise p.NotYet(f"{f.name} is not covered by this front end here yet")
                return SESSION_FUNCTIONS[f.name](self.session)
            case p.Call(func=f, args=args) if f.name in jsonb_calls.TYPED:
                return jsonb_calls.call(f.name, *self._json_args(args, cols, jsonb=True))
            case p.Call(func=f, args=args) if f.name in json_calls.TYPED:
                return json_calls.call(f.name, *self._json_args(args, cols, jsonb=False))
            case p.Call(func=f, args=(p.Record() as row, *pretty)) if f.name == "row_to_json":
                return self._record(row, cols, False, self.scalar(pretty[0], cols) if pretty else None)
            case p.Call(func=f, args=(p.Literal(value=None), *_)) if f.name == "row_to_json":
                return exp.Null()  # strict
            case p.Record(fields=fields):  # anywhere else: its text, as record_out writes it
                return spark_records.record_text(self._output_texts(fields, cols), next(self.lambdas))
            case p.Call(func=f, args=args) if f.name == "format" and f.variadic:
                # each argument by its type's output function, as concat's
                return pg_format.call([self.scalar(args[0], cols), *self._output_texts(args[1:], cols)])
            case p.Call(func=f, args=args) if f.name == "array_to_string" and args[0].type.base.name != "text":
                return self._array_to_string(args, cols)
            case p.Call(func=f, args=(zone, value)) if f.name == "timezone":  # AT TIME ZONE
                return pg_timezone.at_zone(self._constant_text(zone), f.args[0], self.scalar(value, cols), f.args[1])
            case p.Call(func=f, args=(p.Literal(value=str() as unit), value)) if f.name == "date_trunc" \
                    and f.args[1] != "interval":  # an interval's is a UDF's (planner.pg_interval.trunc)
                return pg_extract.truncate(unit, self.scalar(value, cols), pg_extract.Source(f.args[1]))
            case p.Call(func=f, args=(p.Literal(value=str() as unit), value)) if f.name in ("extract", "date_part"):
                compute = pg_extract.extract if f.name == "extract" else pg_extract.date_part
                return compute(unit, self.scalar(value, cols), pg_extract.Source(f.args[1]))
            case p.Call(func=f, args=(text, start, count)) if f.name in ("substr", "substring") \
                    and f.args[1] == "integer":
                return pg_functions.positions(self.scalar(text, cols), self.scalar(start, cols),
                                              self.scalar(count, cols))
            case p.Call(func=f, args=(arg,)) if f.name == "age":
                # age(x) is age(current_date, x): the transaction's date, at midnight
                if self.session is None:
                    raise p.NotYet("age of one argument is not covered by this front end here yet")
                today = exp.Cast(this=SESSION_FUNCTIONS["now"](self.session), to=exp.DataType.build("DATE"))
                return exp.Anonymous(this=interval_calls.UDF_NAMES["age"], expressions=[
                    exp.Cast(this=today, to=exp.DataType.build("STRING")),
                    exp.Cast(this=self.scalar(arg, cols), to=exp.DataType.build("STRING"))])
            case p.Call(func=f, args=(arg,)) if f.name == "scale":
                # the display scale where PostgreSQL's rules fix it for every value; else
                # the digits the value shows (a stored unconstrained numeric has lost its
                # trailing zeros), as the catalog's text says
                known, value = self._scale(arg, cols), self.scalar(arg, cols)
                if known is None:
                    return _template(f.spark, [value])
                return exp.If(this=exp.Is(this=value, expression=exp.Null()), true=exp.Null(),
                              false=exp.Literal.number(known))
            case p.Call(func=f, args=args):
                if f.name in ("concat", "concat_ws"):
                    return self._concat(f.name, args, cols)
                if f.name in ("pow", "power") and f.result == "double precision":
                    # PostgreSQL's dpow (its errors, pow(1, NaN) = 1), as float8's ^ writes it
                    return _template(pg_functions.float_power_template(), [self.scalar(a, cols) for a in args])
                _check_template(f.name, f.spark, len(args))
                _no_subquery_in_lambda(f.name, f.spark, args)
                spark_args = [self.scalar(a, cols) for a in args]
                if f.name in _CHAR_LENGTHS and args[0].type.base.name == "character":
                    # char(n)'s length does not count the padding (bpcharlen)
                    spark_args[0] = exp.Anonymous(this="rtrim", expressions=[spark_args[0]])
                return _template(f.spark, spark_args)
            case p.OpCall(op=op, args=args):
                _check_template(op.name, op.spark, len(args))
                _no_subquery_in_lambda(op.name, op.spark, args)
                operands = [self.scalar(a, cols) for a in args]
                constant = interval_calls.folded(op.oid, operands)
                if constant is not None:
                    return constant
                if op.name == "/" and op.result == "numeric" and _integer_as_numeric(args[0]):
                    # Spark gives a quotient max(6, dividend's scale + divisor's precision + 1)
                    # digits after the point: an integer dividend at scale 10, not 0, keeps
                    # (1/3.0)::float4 at PostgreSQL's 0.33333334 rather than 0.333333
                    operands[0] = exp.Cast(this=self.scalar(args[0].arg, cols),
                                           to=exp.DataType.build(_UNCONSTRAINED.spark))
                pattern = args[1] if len(args) == 2 and isinstance(args[1], p.Call) else None  # ~ x is bitwise not
                if op.name in _LIKE_OPERATORS and pattern is not None and pattern.func.name == "like_escape":
                    # x LIKE p ESCAPE e: the pattern as Spark's LIKE reads it (pg_strings.like_escape)
                    operands[1] = _template(pg_strings.LIKE_ESCAPE_FOR_SPARK,
                                            [self.scalar(a, cols) for a in pattern.args])
                if op.name in ("~", "!~") and pattern is not None and pattern.func.name == "similar_to_escape":
                    # x SIMILAR TO p: matched as ARE matches (pg_strings.SIMILAR_MATCH)
                    match = _template(pg_strings.SIMILAR_MATCH, operands)
                    return exp.Paren(this=exp.Not(this=match) if op.name == "!~" else match)
                return exp.Paren(this=_template(op.spark, operands))
            case p.Cast(arg=p.Literal(value=Decimal() as value), type=t) if t.spark in ("DOUBLE", "FLOAT"):
                # 1e308::float8: straight from the digits (a DECIMAL cannot hold every constant);
                # a numeric has no negative zero, so (-0.0)::float8 is 0
                digits = str(value) if value else "0"
                return exp.Cast(this=exp.Literal.string(digits), to=exp.DataType.build(t.spark, dialect="spark"))
            case p.Cast(arg=arg, type=t) if spark_keys.is_interval(t) and arg.type.base.name in _TEXTS and not arg.type.is_array:
                # interval_in reads the text (22007 for what it cannot), interval_out writes it
                return exp.Anonymous(this=interval_calls.IN, expressions=[self.scalar(arg, cols)])
            case p.Cast(arg=arg, type=t) if arg.type.base.name == "bytea" and not arg.type.is_array \
                    and t.base.name in ("text", "character varying") and not t.is_array:
                return _template(pg_functions.BYTEA_TEXT, [self.scalar(arg, cols)])
            case p.Cast(arg=arg, type=t) if arg.type.base.name in pg_functions.FLOAT_TEXT_UDFS \
                    and not arg.type.is_array and t.base.name in ("text", "character varying") and not t.is_array:
                text = exp.Anonymous(this=pg_functions.FLOAT_TEXT_UDFS[arg.type.base.name],
                                     expressions=[self.scalar(arg, cols)])
                return pg_functions.varchar_cut(text, t.max_length) if t.max_length is not None else text
            case p.Cast(arg=arg, type=t) if arg.type.is_array and not t.is_array and t.base.name in (
                    "text", "character varying"):
                return _template(pg_functions.array_text_template(), [self.scalar(arg, cols)])
            case p.Cast(arg=arg, type=t) if arg.type.base.name == "character" and t.base.name in (
                    "text", "character varying") and not t.is_array and not arg.type.is_array:
                # char(n) to text drops the padding, as PostgreSQL's rtrim1 does
                trimmed = exp.Anonymous(this="rtrim", expressions=[self.scalar(arg, cols)])
                return exp.Cast(this=trimmed, to=exp.DataType.build(t.spark, dialect="spark"))
            case p.Cast(arg=arg, type=t) if arg.type.base.name == "timestamp with time zone" and t.base.name in (
                    "text", "character varying") and not t.is_array and not arg.type.is_array:
                # timestamptz_out writes the offset of the session's TimeZone, always UTC here
                text = _template("concat(cast({0} as string), '+00')", [self.scalar(arg, cols)])
                return pg_functions.varchar_cut(text, t.max_length) if t.max_length is not None else text
            case p.Cast(arg=arg, type=t) if arg.type.base.name == "numeric" and t.base.name in (
                    "text", "character varying") and not t.is_array and not arg.type.is_array:
                # Spark's scale is not PostgreSQL's (an unconstrained numeric is DECIMAL(38, 10)):
                # the text has the scale PostgreSQL's rules fix, as the wire's has; where the
                # values' own scales decide, no trailing zeros
                scale = self._scale(arg, cols)
                value = self.scalar(arg, cols)
                if scale is not None:
                    value = exp.Cast(this=value, to=exp.DataType.build(f"DECIMAL(38, {min(scale, 38)})"))
                text = exp.Cast(this=value, to=exp.DataType.build("STRING"))
                if scale is None:
                    text = _template(pg_functions.UNSCALED_NUMERIC_TEXT, [text])
                return pg_functions.varchar_cut(text, t.max_length) if t.max_length is not None else text
            case p.Cast(arg=arg, type=t) if t.base.name in ("character varying", "character") \
                    and t.max_length is not None and not t.is_array:
                # An explicit cast to varchar(n) or char(n) cuts the value to n characters, as
                # PostgreSQL's does (char(n)'s padding is its output's)
                return pg_functions.varchar_cut(self.scalar(arg, cols), t.max_length)
            case p.Cast(arg=arg, type=t) if arg.type.base.name in _FLOATS and t.base.name == "numeric" \
                    and not arg.type.is_array and not t.is_array:
                # float8_numeric/float4_numeric: the value's first 15 (float4: 6) significant
                # digits, as printf's %.15g writes them, then the target's scale; Spark's own
                # cast takes the binary value's digits (0.1::float4 was 0.1000000015 and
                # 1e-12::float8 was 0 at an unconstrained numeric's scale 10)
                digits = 6 if arg.type.base.name == "real" else 15
                text = exp.Anonymous(this="format_string", expressions=[
                    exp.Literal.string(f"%.{digits - 1}e"), self.scalar(arg, cols)])
                target = t.spark if t.typmod >= 0 else "DECIMAL(38, 18)"
                return exp.Cast(this=text, to=exp.DataType.build(target))
            case p.Cast(arg=arg, type=t) if arg.type.base.name in _INTEGERS and t == _UNCONSTRAINED \
                    and not arg.type.is_array:
                # An integer as a numeric has no fraction, and a constant no more digits than it
                # shows: as DECIMAL(38, 10) it would leave Spark's exact arithmetic 28 integer
                # digits for a sum, 18 for a product with another numeric, 23 for a quotient
                width = _INTEGER_DECIMALS[arg.type.base.name]
                if isinstance(arg, p.Literal) and isinstance(arg.value, int):
                    width = _decimal_type(Decimal(arg.value))
                return exp.Cast(this=self.scalar(arg, cols), to=exp.DataType.build(width))
            case p.Cast(arg=arg, type=t):
                value = self.scalar(arg, cols)
                rounded = _rounded_for(arg.type, t)
                if rounded is not None:
                    value = _template(rounded, [value])
                cast = exp.Cast(this=value, to=exp.DataType.build(t.spark, dialect="spark"))
                if _narrows_float(arg.type, t):
                    return _template(pg_functions.FLOAT4_NARROWING, [value, cast])
                return cast
            case p.WindowCall():
                return self._window(e, cols)
            case p.BoolOp(kind=p.BoolKind.NOT, args=(arg,)):
                return exp.Not(this=exp.Paren(this=self.scalar(arg, cols)))
            case p.BoolOp(kind=kind, args=args):
                joiner = exp.and_ if kind is p.BoolKind.AND else exp.or_
                return exp.Paren(this=joiner(*(exp.Paren(this=self.scalar(a, cols)) for a in args)))
            case p.IsNull(arg=arg, negated=negated):
                test = exp.Is(this=exp.Paren(this=self.scalar(arg, cols)), expression=exp.Null())
                return exp.Not(this=test) if negated else test
            case p.Case(whens=whens, default=default):
                case = exp.Case()
                for cond, result in whens:
                    case = case.when(self.scalar(cond, cols), self.scalar(result, cols))
                return case.else_(self.scalar(default, cols))
            case p.Coalesce(args=args):
                return exp.Coalesce(this=self.scalar(args[0], cols),
                                    expressions=[self.scalar(a, cols) for a in args[1:]])
            case p.Subquery():
                return self._subquery(e, cols)
            case p.ArrayExpr() | p.Subscript() | p.Slice() | p.ArrayCompare():
                return self._array(e, cols)
        raise p.NotYet(f"{type(e).__name__} cannot run on Spark yet")

    def _json_args(self, args: tuple[p.Expr, ...], cols: list[exp.Expression],
                   jsonb: bool) -> tuple[list[exp.Expression], list[SqlType]]:
        """A json (jsonb) function's arguments and their types, a row value as its object."""
        sqls = [self._record(a, cols, jsonb) if isinstance(a, p.Record) else self.scalar(a, cols) for a in args]
        return sqls, [jsonb_calls.JSONB if jsonb and isinstance(a, p.Record) else a.type for a in args]

    def _record(self, row: p.Record, cols: list[exp.Expression], jsonb: bool,
                pretty: exp.Expression | None = None) -> exp.Expression:
        fields, types = [self.scalar(f, cols) for f in row.fields], [f.type for f in row.fields]
        return jsonb_calls.record(row.names, fields, types) if jsonb else json_calls.record(row.names, fields, types,
                                                                                          pretty)

    def _array(self, e: p.Expr, cols: list[exp.Expression]) -> exp.Expression:
        """ARRAY[...], a[i], a[i:j] and x op ANY/ALL (a), with PostgreSQL's answers where
        Spark's element_at and slice count from the end or fail (0, negative, out of range)."""
        match e:
            case p.ArrayExpr(elements=(), type=t):
                return exp.Cast(this=exp.Array(expressions=[]), to=exp.DataType.build(t.spark, dialect="spark"))
            case p.ArrayExpr(elements=elements):
                return exp.Array(expressions=[self.scalar(x, cols) for x in elements])
            case p.Subscript(array=array, index=index):
                return _template(_SUBSCRIPT, [self.scalar(array, cols), self.scalar(index, cols)])
            case p.Slice(array=array, lower=lower, upper=upper):
                args = [self.scalar(x, cols) if x is not None else exp.Null() for x in (array, lower, upper)]
                return _template(_slice_template(lower is not None, upper is not None), args)
            case p.ArrayCompare(op=op, lhs=lhs, array=array, all=every):
                # exists/forall over the elements, three-valued as ANY/ALL are
                _no_subquery_in_lambda(f"{op.name} ANY/ALL (array)", "->", (lhs, array))
                var = next(self.lambdas)
                element = p.ColRef(0, len(cols), SqlType(array.type.base, array.type.typmod))
                body = self.scalar(p.OpCall(op, (lhs, element), BOOLEAN), [*cols, exp.column(var)])
                return exp.Anonymous(this="forall" if every else "exists", expressions=[
                    self.scalar(array, cols), exp.Lambda(this=body, expressions=[exp.to_identifier(var)])])
        raise p.NotYet(f"{type(e).__name__} cannot run on Spark yet")

    def _subquery(self, s: p.Subquery, cols: list[exp.Expression]) -> exp.Expression:
        self.outer.append(cols)
        try:
            if s.kind is p.SubqueryKind.EXISTS:
                return exp.Exists(this=self.query(s.rel))
            if s.kind is p.SubqueryKind.SCALAR:
                return exp.Subquery(this=self.query(s.rel))
            # x op ANY/ALL (sub), with SQL's three-valued answer: known true/false when some
            # row decides it, NULL when only NULL comparisons remain.
            inner = p.columns(s.rel)
            pairs = tuple(p.OpCall(op, (_shift(x), p.ColRef(0, i, inner[i].type)), BOOLEAN)
                          for i, (x, op) in enumerate(zip(s.lhs, s.op, strict=True)))
            # a row is equal when every pair is, unequal when any pair is (three-valued)
            row_rule = p.BoolKind.OR if s.op[0].name == "<>" else p.BoolKind.AND
            probe = pairs[0] if len(pairs) == 1 else p.BoolOp(row_rule, pairs, BOOLEAN)
            decided = p.BoolOp(p.BoolKind.NOT, (probe,), BOOLEAN) if s.kind is p.SubqueryKind.ALL else probe
            unknown = p.IsNull(probe, False, BOOLEAN)
            hit = exp.Exists(this=self.query(p.Filter(s.rel, decided)))
            maybe = exp.Exists(this=self.query(p.Filter(s.rel, unknown)))
        finally:
            self.outer.pop()
        found, rest = (exp.false(), exp.true()) if s.kind is p.SubqueryKind.ALL else (exp.true(), exp.false())
        return exp.Case().when(hit, found).when(maybe, exp.Null()).else_(rest)



# a[i]: NULL for 0 and negative subscripts (try_element_at: NULL past the end only)
_SUBSCRIPT = "if({1} >= 1, try_element_at({0}, {1}), null)"


def _slice_template(lower: bool, upper: bool) -> str:
    """a[i:j] ({0} the array, {1} i, {2} j): from max(i, 1) to min(j, its length), empty
    when that is nothing; an omitted bound is the array's own, a NULL one gives NULL."""
    first = "greatest({1}, 1)" if lower else "1"
    last = "least({2}, size({0}))" if upper else "size({0})"
    sliced = f"slice({{0}}, {first}, case when {last} < {first} then 0 else {last} - {first} + 1 end)"
    nulls = [f"{{{i}}} is null" for i, given in ((1, lower), (2, upper)) if given]
    return f"case when {' or '.join(nulls)} then null else {sliced} end" if nulls else sliced


_CHAR_LENGTHS = ("length", "char_length", "character_length")
_LIKE_OPERATORS = ("~~", "!~~", "~~*", "!~~*")


_DOUBLE_ONLY_AGGREGATES = frozenset({"var_pop", "var_samp", "variance", "stddev", "stddev_pop", "stddev_samp"})
_INTEGERS = ("smallint", "integer", "bigint")
_TEXTS = ("text", "character varying", "character", "unknown")
_INTEGER_DECIMALS = {"smallint": "DECIMAL(5, 0)", "integer": "DECIMAL(10, 0)", "bigint": "DECIMAL(20, 0)"}
_UNCONSTRAINED = SqlType(BY_NAME["numeric"])
_FLOATS = ("real", "double precision")


_FRAMED_WINDOW_FUNCTIONS = frozenset({"first_value", "last_value", "nth_value"})


def _frame_spec(frame: p.Frame) -> exp.WindowSpec:
    """`ROWS|RANGE BETWEEN ... AND ...` as sqlglot writes Spark's."""
    parts: dict[str, object] = {"kind": frame.mode.value}
    for prefix, bound in (("start", frame.start), ("end", frame.end)):
        match bound.side:
            case p.FrameSide.UNBOUNDED_PRECEDING | p.FrameSide.UNBOUNDED_FOLLOWING:
                parts[prefix], parts[f"{prefix}_side"] = "UNBOUNDED", bound.side.value.split()[1]
            case p.FrameSide.CURRENT_ROW:
                parts[prefix] = "CURRENT ROW"
            case _:
                parts[prefix], parts[f"{prefix}_side"] = exp.Literal.number(bound.offset), bound.side.value
    return exp.WindowSpec(**parts)


# Window functions whose argument at this position Spark takes only as a constant.
_WINDOW_CONSTANTS = {"lag": 1, "lead": 1, "nth_value": 1, "ntile": 0}


def _integer_as_numeric(e: p.Expr) -> bool:
    return isinstance(e, p.Cast) and e.arg.type.base.name in _INTEGERS and not e.arg.type.is_array \
        and e.type == _UNCONSTRAINED


def _rounded_for(source: SqlType, target: SqlType) -> str | None:
    """PostgreSQL rounds a float or numeric cast to an integer (float8 with rint, half to
    even; numeric half away from zero); Spark's CAST truncates."""
    if source.is_array or target.is_array or target.base.name not in _INTEGERS:
        return None
    if source.base.name in _FLOATS:
        return "rint({0})"
    if source.base.name == "numeric":
        return "round({0}, 0)"
    return None


def _narrows_float(source: SqlType, target: SqlType) -> bool:
    return (source.base.name == "double precision" and target.base.name == "real"
            and not source.is_array and not target.is_array)


def _shift(e: p.Expr) -> p.Expr:
    """An expression of the enclosing level, as seen from inside a subquery (one level out)."""
    return p.transform(e, lambda x: p.ColRef(x.level + 1, x.index, x.type) if isinstance(x, p.ColRef) else None)


_FOLDABLE = (exp.Literal, exp.Null, exp.Boolean, exp.Cast, exp.Neg, exp.Paren, exp.DataType, exp.DataTypeParam)


def _foldable(e: exp.Expression) -> bool:
    """Whether Spark computes `e` while planning: literals and casts of them."""
    return all(isinstance(node, _FOLDABLE) for node in e.walk())


def _as(e: exp.Expression, i: int) -> exp.Expression:
    # Always an Alias node (alias_ would name a subquery in place), so that the output
    # casts can wrap what it names.
    return exp.Alias(this=e, alias=exp.to_identifier(f"c{i}"))


def _literal(value, t: SqlType) -> exp.Expression:
    if isinstance(value, int) and not isinstance(value, bool) and t.base.name == "integer" and not t.is_array:
        return exp.Literal.number(value)  # Spark's own type for it: INT
    if isinstance(value, Decimal) and value.is_finite():
        return exp.Cast(this=exp.Literal.string(f"{value:f}"), to=exp.DataType.build(_decimal_type(value)))
    if isinstance(value, Decimal) and t.base.name == "numeric":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"numeric {value} is not supported",
                       detail="sparkwire computes numerics as Spark decimals, which have no NaN or infinity; "
                              "double precision has both.")
    return params.literal(value, t)


# The session-valued functions this front end gives values to (translate.SESSION_FUNCTIONS has
# them all; inet_* would need the inet type on the wire).
_SESSION_VALUED = frozenset({"now", "transaction_timestamp", "statement_timestamp", "current_database",
                             "version", "pg_backend_pid"})


def _param_value(value: object, t: SqlType) -> object:
    """A parameter's value as `t`: one the client sent as text (its type left to the
    server) is read by the type's input function, as PostgreSQL would."""
    if isinstance(value, str) and t.spark != "STRING":
        return decode_text(t, value.encode())
    return value


def _decimal_type(d: Decimal) -> str:
    """The exact DECIMAL a numeric constant needs (PostgreSQL keeps every digit written)."""
    _sign, digits, exponent = d.as_tuple()
    scale = max(0, -exponent)
    precision = max(len(digits) + max(0, exponent), scale + 1)  # 1e3 is 1000: four digits
    return f"DECIMAL({min(precision, 38)},{min(scale, 38)})"


def _distinct_args(call: exp.Expression) -> exp.Expression:
    """count(DISTINCT x) and the like: the aggregate over distinct argument values."""
    agg = call if isinstance(call, exp.AggFunc) else call.find(exp.AggFunc)
    if agg is None:
        raise p.NotYet("DISTINCT is not supported for this aggregate yet")
    agg.set("this", exp.Distinct(expressions=[agg.this]))
    return call
