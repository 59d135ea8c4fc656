"""PostgreSQL's parse tree (pglast JSON) → a typed plan (`planner.sql.plan`).

Names are resolved against our catalog with PostgreSQL's scoping rules (FROM items,
USING/NATURAL joins, join aliases, correlated references to outer query levels);
every function and operator is looked up in the function and operator catalogs and
chosen by PostgreSQL's overload rules (`coerce`); errors are PostgreSQL's, with
SQLSTATE and position. Nothing here knows Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Protocol

from planner import functions, operators, typeof
from planner.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, SqlError
from planner.functions import Kind
from planner.pg_parse import Node, integer_at, names, node_type
from planner.pg_parse import position as _pos
from planner.pg_parse import position_of as _location
from planner.sql import bind_recursive, coerce, colnames, grouping_sets, hoist, value_functions
from planner.sql import plan as p
from planner.sql.bind_aggregates import AggregateBinding, not_an_aggregate
from planner.sql.bind_aggregates import AggSlot as _AggSlot
from planner.sql.bind_arrays import ArrayBinding
from planner.sql.bind_records import RecordBinding, record_null_test
from planner.sql.bind_recursive import RecursiveBinding
from planner.sql.bind_table_functions import TableFunctionBinding
from planner.sql.bind_windows import WindowBinding, window_definitions
from planner.sql.bind_windows import sort_key as _sort_key
from planner.sql.resolve import coerce_params as _coerce_params
from planner.sql.resolve import resolved_call as _resolved_call
from planner.sql.scope import UNDEFINED_COLUMN, UNDEFINED_TABLE, Scope, ScopeColumn, item_scope, one
from planner.types import COLUMN_TYPES, SqlType, column_type, lookup

GROUPING_ERROR = "42803"
CARDINALITY_VIOLATION = "21000"
INVALID_COLUMN_REFERENCE = "42P10"
DUPLICATE_ALIAS = "42712"


@dataclass(frozen=True)
class Relation:
    """A catalogued relation as the binder sees it."""

    name: str  # the catalog's name for it, carried into `plan.Get`
    columns: tuple[p.Column, ...]
    schema: str = "public"
    plan: p.Rel | None = None  # a view: its bound query, inlined where it is named


class Catalog(Protocol):
    def relation(self, schema: str | None, name: str) -> Relation | None:
        """The relation `schema.name` (schema None: on the search path), or None."""


@dataclass
class _Level:
    """One query level being bound: its FROM scope, and the aggregates its select list,
    HAVING and ORDER BY call (None where aggregates are not allowed)."""

    scope: Scope
    aggregates: list[p.AggCall] | None = None
    agg_context: str = ""  # where aggregates are refused: "WHERE", "JOIN conditions", ...
    srfs: list[p.TableFunction] | None = None  # the select list's set-returning functions, while bound
    windows: dict[str, dict] = field(default_factory=dict)  # the WINDOW clause's (bind_windows)


@dataclass
class Binder(AggregateBinding, ArrayBinding, RecordBinding, RecursiveBinding, TableFunctionBinding,
             WindowBinding):
    catalog: Catalog
    text: str = ""  # the statement's text: where the parse tree's locations point
    param_types: list[SqlType] = field(default_factory=list)
    _levels: list[_Level] = field(default_factory=list)
    _ctes: list[dict[str, p.Rel]] = field(default_factory=list)  # WITH queries in scope, innermost last
    # False for the query of INSERT … SELECT (and the SELECT an UPDATE becomes): its output
    # columns of unknown type stay unknown, to take the target column's type as PostgreSQL's do.
    resolve_unknowns: bool = True

    # -- queries --------------------------------------------------------------------------

    def query(self, node: Node) -> p.Rel:
        """A SELECT (or VALUES, or set operation) statement's plan."""
        kind = node_type(node)
        if kind != "SelectStmt":
            raise p.NotYet(f"{kind} is not a query")
        return self._select(node["SelectStmt"])

    def _select(self, s: dict, set_branch: bool = False) -> p.Rel:
        if not s.get("withClause"):
            return self._select_body(s, set_branch)
        self._ctes.append({})
        try:
            self._with(s["withClause"])
            return self._select_body(s, set_branch)
        finally:
            self._ctes.pop()

    def _with(self, w: dict) -> None:
        """Bind a WITH clause's queries, each seeing the ones before it (WITH RECURSIVE: in an
        order where each sees those it names, itself included: planner.sql.bind_recursive)."""
        names_here = self._ctes[-1]
        ctes = [item["CommonTableExpr"] for item in w["ctes"]]
        for i, cte in enumerate(ctes):
            if any(c["ctename"] == cte["ctename"] for c in ctes[:i]):
                raise SqlError(DUPLICATE_ALIAS, f'WITH query name "{cte["ctename"]}" specified more than once',
                               position=_pos(cte))
        recursive: set[str] = set()
        if w.get("recursive"):
            ctes, recursive = bind_recursive.ordered(ctes)
        for cte in ctes:
            name = cte["ctename"]
            if name in recursive:
                names_here[name] = self._recursive_cte(cte, names_here)
                continue
            if node_type(cte["ctequery"]) != "SelectStmt":
                raise p.NotYet("data-modifying statements in WITH are not supported yet")
            rel = self._select(cte["ctequery"]["SelectStmt"])
            if p.refers_outward(rel, 1):
                raise p.NotYet("a WITH query referring to an outer query is not supported yet")
            aliases = names(cte.get("aliascolnames"))
            cols = p.columns(rel)
            if len(aliases) > len(cols):
                raise SqlError(INVALID_COLUMN_REFERENCE, f'WITH query "{name}" has {len(cols)} columns available '
                                                         f"but {len(aliases)} columns specified", position=_pos(cte))
            if aliases:
                rel = p.Project(rel, tuple(range(len(cols))),
                                tuple(aliases) + tuple(c.name for c in cols[len(aliases):]))
            names_here[name] = rel

    def _cte(self, name: str) -> p.Rel | None:
        for scope in reversed(self._ctes):
            if name in scope:
                return scope[name]
        return None

    def _select_body(self, s: dict, set_branch: bool = False) -> p.Rel:
        if s.get("op", "SETOP_NONE") != "SETOP_NONE":
            rel = self._set_operation(s)
            return self._order_limit_of_output(rel, s)
        if s.get("valuesLists"):
            rel = self._values(s["valuesLists"])
            return self._order_limit_of_output(rel, s)
        return self._simple_select(s, set_branch)

    def _set_operation(self, s: dict) -> p.Rel:
        kind = {"SETOP_UNION": p.SetKind.UNION, "SETOP_EXCEPT": p.SetKind.EXCEPT,
                "SETOP_INTERSECT": p.SetKind.INTERSECT}[s["op"]]
        left = self._select(s["larg"], set_branch=True)
        right = self._select(s["rarg"], set_branch=True)
        lcols, rcols = p.columns(left), p.columns(right)
        word = kind.name
        if len(lcols) != len(rcols):
            raise SqlError(SYNTAX_ERROR, f"each {word} query must have the same number of columns")
        types = [coerce.common_type([a.type, b.type], word) for a, b in zip(lcols, rcols, strict=True)]
        left = coerce.cast_columns(left, types)
        right = coerce.cast_columns(right, types)
        return p.SetOp(kind, bool(s.get("all")), left, right)

    def _values(self, lists: list[Node]) -> p.Rel:
        rows = [[self.expr(e) for e in item["List"]["items"]] for item in lists]
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise SqlError(SYNTAX_ERROR, "VALUES lists must all be the same length")
        types = [coerce.common_type([r[i].type for r in rows], "VALUES") for i in range(width)]
        out = tuple(tuple(_coerce(e, t) for e, t in zip(r, types, strict=True)) for r in rows)
        return p.Constant(out, tuple(p.Column(f"column{i + 1}", t) for i, t in enumerate(types)))

    def _order_limit_of_output(self, rel: p.Rel, s: dict) -> p.Rel:
        """ORDER BY / LIMIT of a set operation or VALUES: by output name or ordinal only."""
        cols = p.columns(rel)
        keys = []
        for item in s.get("sortClause") or ():
            sort = item["SortBy"]
            index = _output_index(sort["node"], [c.name for c in cols])
            if index is None:
                raise SqlError(FEATURE_NOT_SUPPORTED, "invalid UNION/INTERSECT/EXCEPT ORDER BY clause",
                               detail="Only result column names can be used, not expressions or functions.",
                               position=_location(sort["node"]))
            keys.append(_sort_key(index, sort))
        return self._top_k(rel, keys, s)

    def _top_k(self, rel: p.Rel, keys: list[p.SortKey], s: dict) -> p.Rel:
        limit = self._limit_expr(s.get("limitCount"), "LIMIT")
        offset = self._limit_expr(s.get("limitOffset"), "OFFSET")
        if not keys and limit is None and offset is None:
            return rel
        return p.TopK(rel, tuple(keys), limit, offset)

    def _limit_expr(self, node: Node | None, clause: str) -> p.Expr | None:
        if node is None or (node_type(node) == "A_Const" and node["A_Const"].get("isnull")):
            return None
        return _coerce(self.expr_alone(node, clause), coerce.BIGINT, context=f"argument of {clause}")

    def expr_alone(self, node: Node, clause: str) -> p.Expr:
        """An expression of a clause that sees no columns of its own (LIMIT, a VALUES row of
        INSERT): outer queries' columns only, aggregates refused as `clause`'s."""
        self._levels.append(_Level(Scope(), None, clause))
        try:
            return self.expr(node)
        finally:
            self._levels.pop()

    def _simple_select(self, s: dict, set_branch: bool = False) -> p.Rel:
        keep_unknown = not self.resolve_unknowns  # only the outermost SELECT's outputs
        self.resolve_unknowns = True
        rel, scope = self._from(s.get("fromClause") or [])
        level = _Level(scope, windows=window_definitions(s.get("windowClause")))
        self._levels.append(level)
        try:
            if s.get("whereClause") is not None:
                level.agg_context = "WHERE"
                rel = p.Filter(rel, self._condition(s["whereClause"], "WHERE"))
            level.aggregates, level.agg_context = [], ""
            # An output column still of unknown type (`SELECT 'x'`) is text, as PostgreSQL
            # resolves it, except in a set operation's branch, where the other branches decide.
            level.srfs = []
            targets = [(n, _coerce(e, coerce.TEXT) if e.type == coerce.UNKNOWN and not (set_branch or keep_unknown)
                        else e)
                       for n, e in self._targets(s.get("targetList") or [], scope)]
            srfs, level.srfs = level.srfs, None
            names = [n for n, _ in targets]
            exprs = [e for _, e in targets]
            group, sets = self._group_keys(s.get("groupClause") or [], targets, level)
            if any(isinstance(k, p.Record) for k in group or ()):  # before ORDER BY takes its fields apart
                raise p.NotYet("grouping by a row value is not covered by this front end yet")
            having = (self._condition(s["havingClause"], "HAVING")
                      if s.get("havingClause") is not None else None)
            distinct = s.get("distinctClause")
            on_nodes = distinct if distinct and distinct != [{}] else None
            distinct = distinct and on_nodes is None
            order, hidden = self._order_by(s.get("sortClause") or [], names, exprs, bool(distinct))
            on = self._distinct_on(on_nodes, names, exprs, hidden, order) if on_nodes else None
            aggregated = group is not None or bool(level.aggregates) or having is not None
            self._no_aggregates_of_iteration(s, level.aggregates)  # planner.sql.bind_recursive
            if aggregated:
                # the select list's set-returning functions run over the groups: their
                # arguments are re-expressed over the Reduce as the select list is
                self._check_grouped_functions(srfs, group or [], level.aggregates)
                extra = [a for f in srfs for a in f.args]
                rel, both, hidden, having = self._reduce(rel, scope, group or [], sets, level.aggregates,
                                                         exprs + extra, hidden, having)
                exprs, srfs = both[:len(exprs)], self._with_arguments(srfs, both[len(exprs):])
                if having is not None:
                    rel = p.Filter(rel, having)
            if srfs:  # planner.sql.bind_table_functions
                rel, exprs, hidden = self._project_set(rel, srfs, exprs, hidden)
        finally:
            self._levels.pop()
        width = len(p.columns(rel))
        rel = p.Map(rel, tuple(exprs) + tuple(hidden),
                    tuple(names) + tuple(f"?order{i}" for i in range(len(hidden))))
        outputs = tuple(range(width, width + len(exprs)))
        if on is not None:
            rel = self._first_of_each(rel, width, on, order)
            # without ORDER BY, in the DISTINCT ON columns' order, as PostgreSQL's sort leaves them
            order = order or [p.SortKey(i, False, False) for i in dict.fromkeys(on)]
        if distinct:
            rel = p.Distinct(p.Project(rel, outputs, tuple(names)))
            return self._top_k(rel, order, s)
        rel = self._top_k(rel, [replace(k, index=k.index + width) for k in order], s)
        return p.Project(rel, outputs, tuple(names))

    # -- FROM -----------------------------------------------------------------------------

    def _from(self, items: list[Node]) -> tuple[p.Rel, Scope]:
        if not items:
            return p.Constant(((),), ()), Scope()
        rel, scope = self._from_item(items[0])
        for item in items[1:]:
            if node_type(item) == "RangeFunction":  # it may name the items before it (LATERAL)
                rel, scope = self._range_function(item["RangeFunction"], (rel, scope))
                continue
            right, rscope = self._from_item(item, beside=scope)
            width = len(p.columns(rel))
            scope = scope.combine(rscope.shifted(width), _location(item))
            rel = p.Join(p.JoinKind.CROSS, rel, right, None, lateral=_lateral(item))
        return rel, scope

    def _from_item(self, node: Node, beside: Scope | None = None) -> tuple[p.Rel, Scope]:
        """A FROM item; a LATERAL subquery sees the items `beside` it, to its left."""
        if _lateral(node) and beside is not None:
            self._levels.append(_Level(beside, None, "FROM clause of their own query level"))
            try:
                return self._from_item(node)
            finally:
                self._levels.pop()
        kind, n = node_type(node), next(iter(node.values()))
        if kind == "RangeVar":
            return self._range_var(n)
        if kind == "JoinExpr":
            return self._join(n)
        if kind == "RangeSubselect":
            alias = n.get("alias")
            if alias is None:
                raise SqlError(SYNTAX_ERROR, "subquery in FROM must have an alias")
            # Not LATERAL: the FROM items beside it are not visible (this query's level is not
            # on the stack while its FROM is bound), the queries around this one are.
            rel = self._select(n["subquery"]["SelectStmt"])
            return rel, _item_scope(alias["aliasname"], p.columns(rel), alias.get("colnames"))
        if kind == "RangeFunction":
            return self._range_function(n)  # planner.sql.bind_table_functions
        raise p.NotYet(f"{kind} in FROM is not supported yet")

    def _range_var(self, n: dict) -> tuple[p.Rel, Scope]:
        if n.get("catalogname"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "cross-database references are not implemented")
        schema, name = n.get("schemaname"), n["relname"]
        alias = n.get("alias")
        cte = self._cte(name) if schema is None else None
        if cte is not None:
            return cte, _item_scope(alias["aliasname"] if alias else name, p.columns(cte),
                                    alias.get("colnames") if alias else None)
        found = self.catalog.relation(schema, name)
        if found is None:
            shown = f"{schema}.{name}" if schema else name
            raise SqlError(UNDEFINED_TABLE, f'relation "{shown}" does not exist', position=_pos(n))
        rel = found.plan if found.plan is not None else p.Get(found.name, found.columns)
        if alias:
            return rel, _item_scope(alias["aliasname"], found.columns, alias.get("colnames"))
        scope = _item_scope(name, found.columns, None)
        return rel, Scope(tuple(replace(c, schema=found.schema) for c in scope.columns), scope.tables)

    def _join(self, j: dict) -> tuple[p.Rel, Scope]:
        # A LATERAL item on the left sees the FROM items before the join: the whole join was
        # then bound as a LATERAL item (_lateral), one level in, those items beside it.
        left, lscope = self._from_item(j["larg"])
        function = j["rarg"].get("RangeFunction")  # implicitly LATERAL: `flat` where it names the left
        right, rscope, flat = (self._function_item(function, (left, lscope)) if function is not None
                               else (*self._from_item(j["rarg"], beside=lscope), False))
        width = len(p.columns(left))
        kind = {"JOIN_INNER": p.JoinKind.INNER, "JOIN_LEFT": p.JoinKind.LEFT,
                "JOIN_RIGHT": p.JoinKind.RIGHT, "JOIN_FULL": p.JoinKind.FULL}[j["jointype"]]
        lscope = lscope.nullable() if kind in (p.JoinKind.RIGHT, p.JoinKind.FULL) else lscope
        rscope = (rscope.nullable() if kind in (p.JoinKind.LEFT, p.JoinKind.FULL) else rscope).shifted(width)
        scope = lscope.combine(rscope, None)
        lateral = _lateral(j["rarg"])
        outer = p.refs_at(right, 1 - flat) if (lateral or flat) and kind in (p.JoinKind.RIGHT, p.JoinKind.FULL) else []
        if outer:
            table = next(c.table for c in lscope.columns if c.index == outer[0].index)
            raise SqlError(INVALID_COLUMN_REFERENCE, f'invalid reference to FROM-clause entry for table "{table}"',
                           hint="The combining JOIN type must be INNER or LEFT for a LATERAL reference.")
        if lateral and (j.get("usingClause") or j.get("isNatural")):
            raise p.NotYet("a LATERAL subquery joined with USING is not supported yet")
        if lateral and kind in (p.JoinKind.RIGHT, p.JoinKind.FULL):  # naming no left column: a plain join
            right, lateral = hoist.shifted_levels(right, 2, -1), False
        using = names(j.get("usingClause"))
        if j.get("isNatural"):
            right_names = {c.name for c in rscope.columns if c.unqualified}
            using = [c.name for c in lscope.columns if c.unqualified and c.name in right_names]
        if using or j.get("isNatural"):
            rel, scope = self._using_join(kind, left, right, lscope, rscope, using, j, flat)
        else:
            on = None
            if j.get("quals") is not None:
                self._levels.append(_Level(scope, None, "JOIN conditions"))
                try:
                    on = self._condition(j["quals"], "JOIN/ON")
                finally:
                    self._levels.pop()
            elif kind is p.JoinKind.INNER:
                kind = p.JoinKind.CROSS
            rel = self._function_join(kind, left, right, on) if flat else p.Join(kind, left, right, on, lateral=lateral)
        alias = j.get("alias")
        if alias:
            scope = scope.aliased(alias["aliasname"], names(alias.get("colnames")))
        return rel, scope

    def _using_join(self, kind: p.JoinKind, left: p.Rel, right: p.Rel, lscope: Scope, rscope: Scope,
                    using: list[str], j: dict, flat: bool = False) -> tuple[p.Rel, Scope]:
        conditions, merged, used_l, used_r = [], [], set(), set()
        for name in using:
            lc = _using_side(lscope, name, "left")
            rc = _using_side(rscope, name, "right")
            common = coerce.common_type([lc.type, rc.type], "JOIN/USING")
            lref = _coerce(p.ColRef(0, lc.index, lc.type), common)
            rref = _coerce(p.ColRef(0, rc.index, rc.type), common)
            conditions.append(self._operator("=", [lref, rref], None))
            merged.append({p.JoinKind.RIGHT: rref, p.JoinKind.FULL: p.Coalesce((lref, rref), common)}.get(
                kind, lref))
            used_l.add(lc.index)
            used_r.add(rc.index)
        on = conditions[0] if len(conditions) == 1 else p.BoolOp(p.BoolKind.AND, tuple(conditions),
                                                                coerce.BOOLEAN) if conditions else None
        if kind is p.JoinKind.INNER and on is None:
            kind = p.JoinKind.CROSS
        width = len(p.columns(left)) + len(p.columns(right))
        joined = self._function_join(kind, left, right, on) if flat else p.Join(kind, left, right, on)
        rel = p.Map(joined, tuple(merged), tuple(using))
        alias = (j.get("join_using_alias") or {}).get("aliasname")
        out = [ScopeColumn(alias, name, width + i, e.type) for i, (name, e) in enumerate(zip(using, merged,
                                                                                          strict=True))]
        for side, used in ((lscope, used_l), (rscope, used_r)):
            out += [replace(c, unqualified=False, in_star=False) if c.index in used and c.unqualified else c
                    for c in side.columns]
        tables = lscope.tables + rscope.tables + ((alias,) if alias else ())
        return rel, Scope(tuple(out), tables)

    # -- the select list, GROUP BY, ORDER BY ------------------------------------------------

    def _targets(self, targets: list[Node], scope: Scope) -> list[tuple[str, p.Expr]]:
        out: list[tuple[str, p.Expr]] = []
        for t in targets:
            rt = t["ResTarget"]
            val = rt["val"]
            if node_type(val) == "ColumnRef" and "A_Star" in val["ColumnRef"]["fields"][-1]:
                out += self._star(val["ColumnRef"], scope)
                continue
            out.append((rt.get("name") or colnames.column_name(val), self.expr(val)))
        return out

    def _star(self, ref: dict, scope: Scope) -> list[tuple[str, p.Expr]]:
        quals = names(ref["fields"][:-1])
        if not quals:
            cols = scope.star()
            if not cols and not scope.columns:
                raise SqlError(SYNTAX_ERROR, "SELECT * with no tables specified is not valid",
                               position=_pos(ref))
        else:
            table, schema = quals[-1], (quals[-2] if len(quals) > 1 else None)
            if not scope.has_table(table, schema):
                raise SqlError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{table}"',
                               position=_pos(ref))
            cols = scope.star(table, schema)
        return [(c.name, p.ColRef(0, c.index, c.type)) for c in cols]

    def _group_keys(self, items: list[Node], targets: list[tuple[str, p.Expr]], level: _Level
                    ) -> tuple[list[p.Expr] | None, tuple[tuple[int, ...], ...] | None]:
        """The GROUP BY keys, and its grouping sets as indices of them (planner.sql.grouping_sets)."""
        if not items:
            return None, None
        expanded = grouping_sets.expand(items)
        nodes = items if expanded is None else [x for s in expanded for x in s]
        keys: list[p.Expr] = []
        of_node: dict[int, int] = {}  # id of a node → its key
        saved, level.aggregates, level.agg_context = level.aggregates, None, "GROUP BY"
        try:
            for item in nodes:
                if id(item) in of_node:
                    continue
                index = _ordinal(item, len(targets), "GROUP BY")
                if index is None and node_type(item) == "ColumnRef":
                    fields_ = names(item["ColumnRef"]["fields"])
                    if len(fields_) == 1 and not level.scope.find(fields_[0]):
                        matches = [i for i, (n, _) in enumerate(targets) if n == fields_[0]]
                        index = matches[0] if matches else None
                expr = targets[index][1] if index is not None else self.expr(item)
                if p.contains(expr, _AggSlot):
                    raise SqlError(GROUPING_ERROR, "aggregate functions are not allowed in GROUP BY",
                                   position=_location(item))
                if expr not in keys:
                    keys.append(expr)
                of_node[id(item)] = keys.index(expr)
        finally:
            level.aggregates, level.agg_context = saved, ""
        if expanded is None or len(expanded) == 1:
            return keys, None
        return keys, tuple(tuple(dict.fromkeys(of_node[id(x)] for x in s)) for s in expanded)

    def _grouping(self, n: dict) -> p.Expr:
        """GROUPING(a, ...): a bit per argument, set where the row's grouping set lacks it."""
        level = self._levels[-1] if self._levels else None
        if level is None or level.aggregates is None:
            context = (level.agg_context if level else "") or "this context"
            raise SqlError(GROUPING_ERROR, f"grouping operations are not allowed in {context}", position=_pos(n))
        collected, level.aggregates = level.aggregates, None
        try:
            args = tuple(self.expr(a) for a in n["args"])
        finally:
            level.aggregates = collected
        template = f"grouping_id({', '.join(f'{{{i}}}' for i in range(len(args)))})"
        func = functions.Function(0, "grouping", ("any",) * len(args), "integer", template, kind=Kind.AGGREGATE)
        level.aggregates.append(p.AggCall(func, args, False, coerce.INTEGER))
        return _AggSlot(len(level.aggregates) - 1, coerce.INTEGER)

    def _order_by(self, items: list[Node], names_: list[str], exprs: list[p.Expr],
                  distinct: bool) -> tuple[list[p.SortKey], list[p.Expr]]:
        """Sort keys over (the input's columns, the select list, hidden ORDER BY columns):
        indices are relative to the select list; hidden expressions follow it."""
        keys, hidden = [], []
        for item in items:
            sort = item["SortBy"]
            node = sort["node"]
            index = _output_index(node, names_)
            if index is None:
                expr = self.expr(node)
                if expr in exprs:
                    index = exprs.index(expr)
                elif distinct:
                    raise SqlError(INVALID_COLUMN_REFERENCE,
                                   "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                                   position=_location(node))
                else:
                    hidden.append(expr)
                    index = len(exprs) + len(hidden) - 1
            keys += self._record_order(_sort_key(index, sort), (exprs + hidden)[index], sort, exprs, hidden)
        return keys, hidden

    def _distinct_on(self, nodes: list[Node], names_: list[str], exprs: list[p.Expr], hidden: list[p.Expr],
                     order: list[p.SortKey]) -> list[int]:
        """DISTINCT ON's expressions as indices over (select list, hidden ORDER BY columns),
        found as ORDER BY's are (a new one joins `hidden`); PostgreSQL's 42P10 where ORDER BY
        does not begin with them (transformDistinctOnClause: no DISTINCT ON item after an
        ORDER BY item that is not one)."""
        on: list[tuple[int, int | None]] = []
        for node in nodes:
            index = _ordinal(node, len(names_), "DISTINCT ON")
            if index is None:
                index = _output_index(node, names_)
            if index is None:
                expr = self.expr(node)
                if expr not in exprs + hidden:
                    hidden.append(expr)
                index = (exprs + hidden).index(expr)
            on.append((index, _location(node)))
        indices = [i for i, _ in on]
        sorted_on = [k.index for k in order]
        # ORDER BY's items up to the first that is not a DISTINCT ON item; every DISTINCT ON
        # item ORDER BY has must be among them, and, when ORDER BY has another item, all of them
        leading = next((j for j, i in enumerate(sorted_on) if i not in indices), len(sorted_on))
        where_of = dict(reversed(on))  # an item's first place in DISTINCT ON
        misplaced = [where_of[i] for i in sorted_on[leading:] if i in indices]  # PostgreSQL's order of checks
        if leading < len(sorted_on):
            misplaced += [where for i, where in on if i not in sorted_on]
        if misplaced:
            raise SqlError(INVALID_COLUMN_REFERENCE, "SELECT DISTINCT ON expressions must match initial ORDER BY "
                                                     "expressions", position=misplaced[0])
        return indices

    def _first_of_each(self, rel: p.Rel, width: int, on: list[int], order: list[p.SortKey]) -> p.Rel:
        """DISTINCT ON: the first row, in ORDER BY's order, of each group of rows equal in the
        DISTINCT ON columns (NULLs equal): row_number() over them, kept where it is 1."""
        cols = p.columns(rel)

        def column(i: int) -> p.ColRef:
            return p.ColRef(0, width + i, cols[width + i].type)

        [row_number] = functions.overloads("row_number")
        numbered = p.WindowCall(row_number, (), tuple(column(i) for i in dict.fromkeys(on)),
                                tuple(p.WindowKey(column(k.index), k.descending, k.nulls_first) for k in order),
                                coerce.BIGINT)
        rel = p.Map(rel, (numbered,), ("?first",))
        first = self._operator("=", [p.ColRef(0, len(cols), coerce.BIGINT), p.Literal(1, coerce.INTEGER)], None)
        return p.Filter(rel, first)

    def _reduce(self, rel: p.Rel, scope: Scope, keys: list[p.Expr], sets: tuple[tuple[int, ...], ...] | None,
                aggs: list[p.AggCall], exprs: list[p.Expr], hidden: list[p.Expr], having: p.Expr | None):
        """The Reduce, and the select list, ORDER BY and HAVING re-expressed over its columns;
        a bare input column that is not a key is PostgreSQL's 42803."""
        n = len(keys)
        names_ = tuple(f"?key{i}" for i in range(n)) + tuple(a.func.name for a in aggs)
        for a in aggs:
            if a.func.oid == 0 and a.func.name == "grouping" and any(x not in keys for x in a.args):
                raise SqlError(GROUPING_ERROR, "arguments to GROUPING must be grouping expressions of the "
                                               "associated query level")
        reduce = p.Reduce(rel, tuple(keys), tuple(aggs), names_, sets)

        def over_reduce(e: p.Expr) -> p.Expr:
            if e in keys:
                return p.ColRef(0, keys.index(e), e.type)
            if isinstance(e, _AggSlot):
                return p.ColRef(0, n + e.index, e.type)
            if isinstance(e, p.ColRef) and e.level == 0:
                col = next((c for c in scope.columns if c.index == e.index), None)
                shown = f"{col.table}.{col.name}" if col and col.table else (col.name if col else "?")
                raise SqlError(GROUPING_ERROR,
                               f'column "{shown}" must appear in the GROUP BY clause or be used in an '
                               "aggregate function")
            if isinstance(e, p.Subquery) and p.refers_outward(e.rel, 1):
                raise p.NotYet("a correlated subquery in an aggregating query is not supported yet")
            return None

        def rewrite(e: p.Expr) -> p.Expr:
            return p.transform(e, over_reduce)

        return (reduce, [rewrite(e) for e in exprs], [rewrite(e) for e in hidden],
                rewrite(having) if having is not None else None)

    # -- expressions ---------------------------------------------------------------------

    def _condition(self, node: Node, clause: str) -> p.Expr:
        e = self.expr(node)
        if e.type == coerce.UNKNOWN:
            return _coerce(e, coerce.BOOLEAN)
        if e.type != coerce.BOOLEAN:
            raise SqlError("42804", f"argument of {clause} must be type boolean, not type {e.type.display()}",
                           position=_location(node))
        return e

    def expr(self, node: Node) -> p.Expr:
        kind = node_type(node)
        handler = _EXPRESSIONS.get(kind)
        if handler is None:
            raise p.NotYet(f"{kind} is not supported yet", position=_location(node))
        return handler(self, node[kind])

    def _column_ref(self, n: dict) -> p.Expr:
        parts = names(n["fields"])
        if 1 < len(n["fields"]) < 4 and "A_Star" in n["fields"][-1] and len(parts) == len(n["fields"]) - 1:
            row = self._whole_row(parts[-1], parts[-2] if len(parts) > 1 else None, n)  # `t.*` in an expression
            if row is not None:
                return row
            raise SqlError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{parts[-1]}"', position=_pos(n))
        if len(parts) > 4 or len(parts) != len(n["fields"]):
            raise SqlError(SYNTAX_ERROR, "improper qualified name (too many dotted names)", position=_pos(n))
        if len(parts) == 4:
            raise SqlError(FEATURE_NOT_SUPPORTED, "cross-database references are not implemented",
                           position=_pos(n))
        name = parts[-1]
        table = parts[-2] if len(parts) > 1 else None
        schema = parts[-3] if len(parts) > 2 else None
        text = ".".join(parts)
        for depth, level in enumerate(reversed(self._levels)):
            if table is not None and not level.scope.has_table(table, schema):
                continue
            found = one(level.scope.find(name, table, schema), text, _pos(n))
            if found is not None:
                return p.ColRef(depth, found.index, found.type)
            if table is not None:
                raise SqlError(UNDEFINED_COLUMN, f"column {text} does not exist", position=_pos(n))
        if table is not None:
            raise SqlError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{table}"', position=_pos(n))
        row = self._whole_row(name, None, n)  # no such column: a FROM item's whole row, if one is named so
        if row is not None:
            return row
        raise SqlError(UNDEFINED_COLUMN, f'column "{name}" does not exist', position=_pos(n))

    def _const(self, n: dict) -> p.Expr:
        if n.get("isnull"):
            return p.Literal(None, coerce.UNKNOWN)
        if "ival" in n:
            value = n["ival"].get("ival") if n["ival"] else self._integer_at(n.get("location", -1))
            return p.Literal(value, coerce.literal_type(value))
        if "fval" in n:
            text = n["fval"]["fval"]
            value: Any = int(text) if text.lstrip("-").isdigit() else Decimal(text)
            return p.Literal(value, coerce.literal_type(value))
        if "boolval" in n:
            return p.Literal(bool(n["boolval"].get("boolval", False)), coerce.BOOLEAN)
        if "sval" in n:
            return p.Literal(n["sval"]["sval"], coerce.UNKNOWN)
        raise p.NotYet("bit string constants are not supported", position=_pos(n))

    def _integer_at(self, location: int) -> int:
        value = integer_at(self.text, location)
        return 0 if value is None else value

    def _param(self, n: dict) -> p.Expr:
        number = n["number"]
        if number < 1:
            raise SqlError("42P02", f"there is no parameter ${number}", position=_pos(n))
        while len(self.param_types) < number:
            self.param_types.append(coerce.UNKNOWN)
        return p.Param(number, self.param_types[number - 1])

    def _a_expr(self, n: dict) -> p.Expr:
        kind = n["kind"]
        op = names(n.get("name"))[-1] if n.get("name") else ""
        where = _pos(n)
        if kind == "AEXPR_OP":
            args = ([self.expr(n["lexpr"])] if n.get("lexpr") is not None else []) + [self.expr(n["rexpr"])]
            return self._operator(op, args, where)
        if kind in ("AEXPR_LIKE", "AEXPR_ILIKE", "AEXPR_SIMILAR"):  # SIMILAR TO: ~ of similar_to_escape(...)
            return self._operator(op, [self.expr(n["lexpr"]), self.expr(n["rexpr"])], where)
        if kind == "AEXPR_IN":
            return self._in_list(n, op, where)
        if kind in ("AEXPR_OP_ANY", "AEXPR_OP_ALL"):  # x op ANY/ALL (array): planner.sql.bind_arrays
            return self._array_compare(n, op, kind == "AEXPR_OP_ALL", where)
        if kind in ("AEXPR_DISTINCT", "AEXPR_NOT_DISTINCT"):
            return self._distinct_from(self.expr(n["lexpr"]), self.expr(n["rexpr"]),
                                       kind == "AEXPR_DISTINCT", where)
        if kind == "AEXPR_NULLIF":
            a, b = self.expr(n["lexpr"]), self.expr(n["rexpr"])
            t = coerce.common_type([a.type, b.type], "NULLIF")
            equal = self._operator("=", [a, b], where)
            return p.Case(((equal, p.Literal(None, t)),), _coerce(a, t), t)
        if kind in ("AEXPR_BETWEEN", "AEXPR_NOT_BETWEEN"):
            x = self.expr(n["lexpr"])
            lo, hi = (self.expr(e) for e in n["rexpr"]["List"]["items"])
            inside = p.BoolOp(p.BoolKind.AND, (self._operator(">=", [x, lo], where),
                                               self._operator("<=", [x, hi], where)), coerce.BOOLEAN)
            return inside if kind == "AEXPR_BETWEEN" else p.BoolOp(p.BoolKind.NOT, (inside,), coerce.BOOLEAN)
        raise p.NotYet(f"{kind.removeprefix('AEXPR_')} expressions are not supported yet",
                       position=where)

    def _in_list(self, n: dict, op: str, where: int | None) -> p.Expr:
        x = self.expr(n["lexpr"])
        items = [self.expr(e) for e in n["rexpr"]["List"]["items"]]
        if isinstance(x, p.Record):  # (a, b) IN ((1, 'x'), …): row comparisons, each typed on its own
            tests = tuple(self._operator("=", [x, i], where) for i in items)
        else:
            t = coerce.common_type([x.type] + [i.type for i in items], "IN")
            tests = tuple(self._operator("=", [_coerce(x, t), _coerce(i, t)], where) for i in items)
        any_ = tests[0] if len(tests) == 1 else p.BoolOp(p.BoolKind.OR, tests, coerce.BOOLEAN)
        return any_ if op == "=" else p.BoolOp(p.BoolKind.NOT, (any_,), coerce.BOOLEAN)

    def _distinct_from(self, a: p.Expr, b: p.Expr, distinct: bool, where: int | None) -> p.Expr:
        """`a IS [NOT] DISTINCT FROM b`: equality where NULL equals NULL, never NULL itself; of
        two rows, field by field."""
        if isinstance(a, p.Record) and isinstance(b, p.Record):
            return self._rows_distinct(a, b, distinct, where)  # planner.sql.bind_records
        equal = self._operator("=", [a, b], where)
        both_null = p.BoolOp(p.BoolKind.AND, (p.IsNull(a, False, coerce.BOOLEAN),
                                               p.IsNull(b, False, coerce.BOOLEAN)), coerce.BOOLEAN)
        same = p.Case(((p.IsNull(equal, True, coerce.BOOLEAN), equal),), both_null, coerce.BOOLEAN)
        return p.BoolOp(p.BoolKind.NOT, (same,), coerce.BOOLEAN) if distinct else same

    def _operator(self, name: str, args: list[p.Expr], where: int | None) -> p.Expr:
        if len(args) == 2 and all(isinstance(a, p.Record) for a in args):
            return self._row_compare(name, args[0], args[1], where)  # planner.sql.bind_records
        if any(isinstance(a, p.Record) for a in args):
            raise p.NotYet("operators on row values are not covered by this front end yet", position=where)
        overloads = operators.overloads(name)
        if not overloads:
            shown = f"{name} {args[0].type.display()}" if len(args) == 1 else (
                f"{args[0].type.display()} {name} {args[1].type.display()}")
            raise SqlError("42883", f"operator does not exist: {shown}", position=where)
        try:
            op = coerce.resolve_operator(name, overloads, [a.type for a in args])
        except SqlError as err:
            if err.sqlstate == "42883" and any(a.type.base.name in _OLDER_PATH_OPERANDS for a in args):
                raise p.NotYet(f"operators on {args[0].type.display()} are not covered by this front end yet",
                               position=where) from None
            err.position = where
            raise
        params = ((op.left,) if op.left else ()) + (op.right,)
        bound = _coerce_params(args, params, where)
        return p.OpCall(op, bound, coerce.result_type(op.result, params, [a.type for a in bound]))

    def _bool_expr(self, n: dict) -> p.Expr:
        kind = {"AND_EXPR": p.BoolKind.AND, "OR_EXPR": p.BoolKind.OR, "NOT_EXPR": p.BoolKind.NOT}[n["boolop"]]
        args = tuple(self._condition(a, kind.name) for a in n["args"])
        return p.BoolOp(kind, args, coerce.BOOLEAN)

    def _null_test(self, n: dict) -> p.Expr:
        arg, negated = self.expr(n["arg"]), n["nulltesttype"] == "IS_NOT_NULL"
        return record_null_test(arg, negated, _pos(n)) if arg.type == coerce.RECORD else (  # bind_records
            p.IsNull(arg, negated, coerce.BOOLEAN))

    def _boolean_test(self, n: dict) -> p.Expr:
        x = self._condition(n["arg"], n["booltesttype"].replace("_", " "))
        test = n["booltesttype"]
        false = p.Literal(False, coerce.BOOLEAN)
        if test in ("IS_UNKNOWN", "IS_NOT_UNKNOWN"):
            return p.IsNull(x, test == "IS_NOT_UNKNOWN", coerce.BOOLEAN)
        value = x if test in ("IS_TRUE", "IS_NOT_TRUE") else p.BoolOp(p.BoolKind.NOT, (x,), coerce.BOOLEAN)
        holds = p.Coalesce((value, false), coerce.BOOLEAN)
        return holds if test in ("IS_TRUE", "IS_FALSE") else p.BoolOp(p.BoolKind.NOT, (holds,), coerce.BOOLEAN)

    def _case(self, n: dict) -> p.Expr:
        subject = self.expr(n["arg"]) if n.get("arg") is not None else None
        conditions, results = [], []
        for w in n["args"]:
            when = w["CaseWhen"]
            if subject is not None:
                conditions.append(self._operator("=", [subject, self.expr(when["expr"])], _pos(when)))
            else:
                conditions.append(self._condition(when["expr"], "CASE/WHEN"))
            results.append(self.expr(when["result"]))
        default = self.expr(n["defresult"]) if n.get("defresult") is not None else p.Literal(None, coerce.UNKNOWN)
        t = coerce.common_type([r.type for r in results] + [default.type], "CASE")
        whens = tuple((c, _coerce(r, t)) for c, r in zip(conditions, results, strict=True))
        return p.Case(whens, _coerce(default, t), t)

    def _coalesce(self, n: dict) -> p.Expr:
        args = [self.expr(a) for a in n["args"]]
        t = coerce.common_type([a.type for a in args], "COALESCE")
        return p.Coalesce(tuple(_coerce(a, t) for a in args), t)

    def _type_cast(self, n: dict) -> p.Expr:
        target = _type_name(n["typeName"])
        if node_type(n["arg"]) == "A_ArrayExpr" and target.is_array:
            return self._array_expr(n["arg"]["A_ArrayExpr"], target)  # each element cast, as PostgreSQL's
        return coerce.explicit_cast(self.expr(n["arg"]), target)

    def _func_call(self, n: dict) -> p.Expr:
        parts = names(n["funcname"])
        name, schema = parts[-1], (parts[-2] if len(parts) > 1 else None)
        where = _pos(n)
        if name == typeof.NAME and schema in (None, "pg_catalog") and n.get("over") is None:
            return self._pg_typeof(n, where)
        if n.get("over") is not None:
            return self._window_call(n, name, schema, where)
        overloads = [f for f in functions.overloads(name) if f.schema == (schema or "pg_catalog")]
        within = self._within_group(n, name, bool(overloads), where)  # planner.sql.bind_aggregates
        level = self._levels[-1] if self._levels else None
        if any(f.kind is Kind.TABLE for f in overloads):
            if level is None or level.srfs is None:
                raise p.NotYet(f"set-returning function {name} is not supported here yet", position=where)
            return self._select_list_function(n, name, level.srfs)  # planner.sql.bind_table_functions
        if any(f.kind is Kind.AGGREGATE for f in overloads):
            return self._aggregate_call(n, name, overloads, within, where)  # planner.sql.bind_aggregates
        raw = [*(n.get("args") or ()), *(within or ())]
        if name in functions.PARAMETERS and schema in (None, "pg_catalog"):
            args = self._named_arguments(name, raw, where)
        elif any(node_type(a) == "NamedArgExpr" for a in raw):
            raise p.NotYet("named arguments are not supported for this function yet", position=where)
        else:
            args = [self.expr(a) for a in raw]
        if name == "to_jsonb" and len(args) == 1 and args[0].type == coerce.UNKNOWN:
            raise SqlError("42804", "could not determine polymorphic type because input has type unknown",
                           position=where)
        func, bound, result = _resolved_call(name, overloads, args, where)
        not_an_aggregate(n, name, where)
        return p.Call(func, bound, result)

    def _named_arguments(self, name: str, nodes: list[Node], where: int | None) -> list[p.Expr]:
        """The arguments of a call of a function whose parameters have names and defaults
        (functions.PARAMETERS): the positional ones, then those named, the rest their
        defaults; PostgreSQL's 42883 for a name it lacks or a parameter given twice, 42601
        for a name used twice."""
        params = functions.PARAMETERS[name]
        known = [pname for pname, _ in params]
        positional: list[p.Expr] = []
        named: dict[str, p.Expr] = {}
        for node in nodes:
            if node_type(node) != "NamedArgExpr":
                positional.append(self.expr(node))
                continue
            arg = node["NamedArgExpr"]
            if arg["name"] in named:
                raise SqlError(SYNTAX_ERROR, f'argument name "{arg["name"]}" used more than once', position=_pos(arg))
            named[arg["name"]] = self.expr(arg["arg"])
        if len(positional) > len(params) or any(k not in known or known.index(k) < len(positional) for k in named):
            shown = [a.type.display() for a in positional] + [f"{k} => {v.type.display()}" for k, v in named.items()]
            raise SqlError("42883", f"function {name}({', '.join(shown)}) does not exist", position=where,
                           hint="No function matches the given name and argument types. "
                                "You might need to add explicit type casts.")
        return [positional[i] if i < len(positional) else named[pname] if pname in named else _constant(default)
                for i, (pname, default) in enumerate(params)]

    def _table_function_call(self, n: dict, scope: Scope | None) -> tuple[functions.Function, tuple[p.Expr, ...],
                                                                          SqlType | None]:
        """A set-returning function call, its arguments seeing `scope` alone (in FROM) or the
        query levels (None: in a select list): its signature, arguments and result type (None
        for a record, whose columns the caller knows)."""
        name = names(n["funcname"])[-1]
        overloads = [f for f in functions.overloads(name) if f.kind is Kind.TABLE and f.schema == "pg_catalog"]
        saved = self._levels
        if scope is not None:  # in FROM; else a select list's, in its query level
            self._levels = [_Level(scope, None, "functions in FROM")]
        try:
            args = [self.expr(a) for a in n.get("args") or ()]
        finally:
            self._levels = saved
        return _resolved_call(name, overloads, args, _pos(n), record_ok=True)

    def _pg_typeof(self, n: dict, where: int | None) -> p.Expr:
        """pg_typeof(x): x's type is known here, so the call is a constant."""
        args = [self.expr(a) for a in n.get("args") or ()]
        if len(args) != 1 or n.get("agg_star"):
            err = typeof.wrong_arguments(", ".join(a.type.display() for a in args))
            err.position = where
            raise err
        return p.Literal(typeof.regtype_name(args[0].type), coerce.TEXT)

    def _sub_link(self, n: dict) -> p.Expr:
        kind = n["subLinkType"]
        select = n["subselect"]["SelectStmt"]
        saved_aggs = self._levels[-1].aggregates if self._levels else None
        rel = self._select(select)
        if self._levels:
            self._levels[-1].aggregates = saved_aggs
        cols = p.columns(rel)
        if kind == "EXISTS_SUBLINK":
            return p.Subquery(p.SubqueryKind.EXISTS, rel, coerce.BOOLEAN)
        if kind == "EXPR_SUBLINK":
            if len(cols) != 1:
                raise SqlError(SYNTAX_ERROR, "subquery must return only one column", position=_pos(n))
            return p.Subquery(p.SubqueryKind.SCALAR, rel, cols[0].type)
        if kind in ("ANY_SUBLINK", "ALL_SUBLINK"):
            test = n["testexpr"]
            row = test["RowExpr"]["args"] if "RowExpr" in test else [test]
            if len(cols) != len(row):
                raise SqlError(SYNTAX_ERROR, "subquery has too many columns" if len(cols) > len(row)
                               else "subquery has too few columns", position=_pos(n))
            op_name = names(n.get("operName"))[-1] if n.get("operName") else "="
            if len(row) > 1 and op_name not in ("=", "<>"):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"row comparison with operator {op_name} against a "
                                                      "subquery is not supported", position=_pos(n))
            probes = [self._operator(op_name, [self.expr(x), p.ColRef(0, i, cols[i].type)], _pos(n))
                      for i, x in enumerate(row)]
            assert all(isinstance(probe, p.OpCall) for probe in probes)
            which = p.SubqueryKind.ANY if kind == "ANY_SUBLINK" else p.SubqueryKind.ALL
            return p.Subquery(which, rel, coerce.BOOLEAN, tuple(x.args[0] for x in probes),
                              tuple(x.op for x in probes))
        raise p.NotYet(f"{kind} subqueries are not supported yet", position=_pos(n))


_EXPRESSIONS: dict[str, Callable[[Binder, dict], p.Expr]] = {
    "ColumnRef": Binder._column_ref,
    "RowExpr": Binder._row_expr,
    "A_Const": Binder._const,
    "ParamRef": Binder._param,
    "A_Expr": Binder._a_expr,
    "BoolExpr": Binder._bool_expr,
    "NullTest": Binder._null_test,
    "BooleanTest": Binder._boolean_test,
    "CaseExpr": Binder._case,
    "CoalesceExpr": Binder._coalesce,
    "TypeCast": Binder._type_cast,
    "FuncCall": Binder._func_call,
    "SQLValueFunction": lambda _binder, n: value_functions.bind(n),
    "SubLink": Binder._sub_link,
    "GroupingFunc": Binder._grouping,
    "A_ArrayExpr": Binder._array_expr,  # planner.sql.bind_arrays
    "A_Indirection": Binder._indirection,
}


# -- helpers -------------------------------------------------------------------------------

def _lateral(node: Node) -> bool:
    """A LATERAL subquery, or a join whose leftmost item is one (`FROM a, LATERAL (…) z JOIN b`:
    z sees a, so the join is bound as a LATERAL item)."""
    kind = node_type(node)
    if kind == "JoinExpr":
        return _lateral(node["JoinExpr"]["larg"])
    return kind == "RangeSubselect" and bool(node["RangeSubselect"].get("lateral"))


def _item_scope(name: str, cols: Sequence[p.Column], aliased: list[Node] | None) -> Scope:
    return item_scope(name, cols, names(aliased))


def _using_side(scope: Scope, name: str, side: str) -> ScopeColumn:
    found = scope.find(name)
    if len(found) > 1:
        raise SqlError("42702", f'common column name "{name}" appears more than once in {side} table')
    if not found:
        raise SqlError(UNDEFINED_COLUMN, f'column "{name}" specified in USING clause does not exist in '
                                         f"{side} table")
    return found[0]


# Operand types whose operators the catalog does not hold yet: the sqlglot path keeps its answers.
_OLDER_PATH_OPERANDS = frozenset({"json"})

# Types only the sqlglot path's catalog rewrites know (psql's and drivers' reflection queries).
_OLDER_PATH_TYPES = frozenset({"regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regoper",
                               "regoperator", "regrole", "regconfig", "regdictionary", "oidvector", "int2vector"})


def _type_name(t: dict) -> SqlType:
    parts = names(t.get("names"))
    name = parts[-1]
    mods = []
    for m in t.get("typmods") or ():
        const = m.get("A_Const", {})
        if "ival" not in const:
            raise SqlError(SYNTAX_ERROR, "type modifiers must be simple constants")
        mods.append(const["ival"].get("ival", 0))
    base = lookup(name)
    if (base is not None and base.name not in COLUMN_TYPES) or (base is None and name in _OLDER_PATH_TYPES):
        raise p.NotYet(f"casts to {name} are not covered by this front end yet")
    return column_type(name, tuple(mods), bool(t.get("arrayBounds")))  # unknown names: 42704


def _ordinal(node: Node, width: int, clause: str) -> int | None:
    if node_type(node) != "A_Const" or "ival" not in node["A_Const"]:
        return None
    k = node["A_Const"]["ival"].get("ival", 0)
    if not 1 <= k <= width:
        raise SqlError(INVALID_COLUMN_REFERENCE, f"{clause} position {k} is not in select list",
                       position=_location(node))
    return k - 1


def _output_index(node: Node, names_: list[str]) -> int | None:
    """An ORDER BY item naming an output column: its ordinal or its (unqualified) name."""
    index = _ordinal(node, len(names_), "ORDER BY")
    if index is not None:
        return index
    if node_type(node) == "ColumnRef":
        parts = names(node["ColumnRef"]["fields"])
        if len(parts) == 1 and len(node["ColumnRef"]["fields"]) == 1:
            matches = [i for i, n in enumerate(names_) if n == parts[0]]
            if len(matches) > 1:
                raise SqlError("42702", f'ORDER BY "{parts[0]}" is ambiguous', position=_location(node))
            if matches:
                return matches[0]
    return None


_coerce = coerce.to_type


def _constant(text: str) -> p.Literal:
    """A parameter's default, a constant in SQL: an integer or a numeric."""
    return p.Literal(Decimal(text), coerce.NUMERIC) if "." in text else p.Literal(int(text), coerce.INTEGER)


_typed_literal = coerce.typed_literal
