"""One-shot queries through the front end of our own (`planner.sql`), where it covers them.

The default (`SET sql_frontend = sqlglot` opts out). A query it does not cover yet
(`plan.NotYet`) returns None here and takes the sqlglot path; every other error is
PostgreSQL's and reaches the client.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from planner import pg_parse
from planner.sql import bind, coerce, delta, dml, json_checks, numeric_scale, spark_sql, value_scale
from planner.sql import plan as p
from planner.translate import SessionContext, TableSource
from planner.types import SqlType
from server import system_catalog
from server.catalog import Catalog, Item

log = logging.getLogger("sparkwire.frontend")
_fixpoints = itertools.count()  # WITH RECURSIVE … UNION views: unique in the Spark session


@dataclass(frozen=True)
class BoundQuery:
    spark_sql: str
    # what the coordinator registers before running it: tables (and system relations) by
    # catalog id, then WITH RECURSIVE … UNION results ("fixpoint:…", a spark_sql.Fixpoint)
    views: dict[str, tuple[str, Item | spark_sql.Fixpoint]]
    names: list[str]
    types: list[SqlType]
    reads: dict[str, str]  # every catalog item the query names, views too: id → name
    rel: p.Rel  # the operator tree spark_sql was generated from, for SUBSCRIBE's dataflow
    render: delta.Renderer  # how it and the dataflow's queries become Spark SQL


class _Relations:
    """The user's tables and views, as the binder sees them; sources and system relations
    are not covered yet. Every catalog item the binding looked at (None: a name it did not
    find) is kept in `seen`, so that the bound query can be reused while they stay the same."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.seen: dict[str, Item | None] = {}

    def relation(self, schema: str | None, name: str) -> bind.Relation | None:
        if schema not in (None, "public") or system_catalog.find(name) is not None:
            raise p.NotYet("system relations are not covered by this front end yet")
        item = self.seen[name] = self.catalog.get(name)
        if item is None:
            return None
        if item.kind == "view" and item.sql:
            # A view is its query, bound here with the same catalog, inlined where it is named.
            rel = bind.Binder(self, item.sql).query(pg_parse.parse_one(item.sql))
            return bind.Relation(item.name, p.columns(rel), plan=rel)
        if item.kind != "table":
            raise p.NotYet(f"a {item.kind} is not covered by this front end yet")
        return bind.Relation(item.name, tuple(p.Column(c.name, c.type) for c in item.columns))


@dataclass(frozen=True)
class _Bound:
    """A query bound and typed, before its Spark SQL: what a prepared statement reuses."""

    rel: p.Rel | None  # None: the front end does not cover it (it takes the sqlglot path)
    seen: tuple[tuple[str, Item | None], ...]
    names: list[str]
    types: list[SqlType]


# Bound queries by (text, declared parameter types): a prepared statement, or a query sent
# again, is neither parsed nor bound again while the catalog items it names are the same
# objects (catalog items are immutable; DDL replaces them).
_CACHE: OrderedDict[tuple, _Bound] = OrderedDict()
_CACHE_SIZE = 512


def _bind(text: str, catalog: Catalog, param_types: dict[int, SqlType], write: _Dml | None = None) -> _Bound:
    key = (text, tuple(sorted(param_types.items())), write if write is not None else None)
    hit = _CACHE.get(key)
    if hit is not None and all(catalog.get(name) is item for name, item in hit.seen):
        _CACHE.move_to_end(key)
        return hit
    relations = _Relations(catalog)
    try:
        node = statement = pg_parse.parse_one(text)
        cast_from = None
        values = None
        types = [param_types.get(n, coerce.UNKNOWN) for n in range(1, max(param_types, default=0) + 1)]
        if write is not None:
            relations.seen[write.table] = catalog.get(write.table)  # its columns shaped the query
            if write.returning:
                scope = dml.returning_scope(node)
                if scope is not None:  # PostgreSQL's errors, with the FROM list in scope
                    bind.Binder(relations, text, types).query(scope)
                node = dml.returning_select(node)
                if node is None:
                    raise p.NotYet("no RETURNING list")
            else:
                values = dml.insert_values(node) if pg_parse.node_type(node) == "InsertStmt" else None
                found = dml.rows_query(node, write.table, write.targets)
                if found is None:
                    raise p.NotYet("this form of the statement is not covered by this front end yet")
                node, cast_from = found
        binder = bind.Binder(relations, text, types, resolve_unknowns=cast_from is None)
        if values is not None:
            rel = dml.values_rel(statement, values, write.targets, lambda v: binder.expr_alone(v, "VALUES"))
        else:
            rel = binder.query(node)
        if cast_from is not None:
            rel = dml.cast_columns(rel, write.targets, cast_from)
        json_checks.check(rel)
        cols = p.columns(rel)
        out_types = numeric_scale.with_display_scales([c.type for c in cols], numeric_scale.output_scales(rel))
        bound = _Bound(rel, tuple(relations.seen.items()), [c.name for c in cols], out_types)
    except p.NotYet as why:
        log.debug("older path: %s: %s", why, text[:200])
        bound = _Bound(None, tuple(relations.seen.items()), [], [])
    _CACHE[key] = bound
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return bound


@dataclass(frozen=True)
class _Dml:
    """INSERT … SELECT, UPDATE or DELETE as the query computing its rows (planner.sql.dml),
    or (`returning`) as its RETURNING list over the rows it wrote."""

    table: str
    targets: tuple[dml.Target, ...]
    returning: bool = False


def param_types(text: str, catalog: Catalog, known: dict[int, SqlType],
                write: tuple[str, Sequence[dml.Target]] | None = None) -> dict[int, SqlType]:
    """The types this front end gives the parameters of `text` that `known` leaves out, as
    PostgreSQL's Parse infers them from what each meets (`$1 + 1`: integer, `upper($1)`:
    text); `write` is an INSERT, UPDATE or DELETE's table and target columns. Empty where
    the front end does not cover the statement or refuses it (the error comes when it runs)."""
    try:
        bound = _bind(text, catalog, known, _Dml(write[0], tuple(write[1])) if write is not None else None)
    except Exception:  # inference only: the statement's own error comes when it runs
        log.debug("parameter types not inferred: %s", text[:200], exc_info=True)
        return {}
    if bound.rel is None:
        return {}
    return {n: t for n, t in p.param_types(bound.rel).items() if n not in known}


def plan_write(text: str, table: str, targets: Sequence[dml.Target], catalog: Catalog, resolver_for,
               param_values: dict[int, object] | None = None,
               param_types: dict[int, SqlType] | None = None) -> BoundQuery | None:
    """The Spark SQL computing the rows of the INSERT, UPDATE or DELETE `text` on `table`
    (see planner.sql.dml for the columns of each), or None where this front end does not
    cover the statement yet."""
    return plan(text, catalog, resolver_for, param_values, param_types, _Dml(table, tuple(targets)))


def plan_returning(text: str, table: str, catalog: Catalog, resolver_for,
                   param_values: dict[int, object] | None = None,
                   param_types: dict[int, SqlType] | None = None) -> BoundQuery | None:
    """The Spark SQL of the RETURNING list of the INSERT, UPDATE or DELETE `text`, as a query
    over `table` (the caller registers the rows the statement wrote as that table), or None
    where this front end does not cover it."""
    return plan(text, catalog, resolver_for, param_values, param_types, _Dml(table, (), returning=True),
                per_value_scale=True)


def plan(text: str, catalog: Catalog, resolver_for, param_values: dict[int, object] | None = None,
         param_types: dict[int, SqlType] | None = None, write: _Dml | None = None,
         per_value_scale: bool = False, session: SessionContext | None = None) -> BoundQuery | None:
    """The Spark SQL of a query, or None when this front end does not cover it yet.

    `resolver_for(views)` gives the coordinator's name resolver, noting reads in `views`;
    `param_values` None plans it for Describe (parameters as typed NULLs). Errors other
    than "not covered" are PostgreSQL's and are raised (and not remembered).
    `per_value_scale`: a top-level division, avg, sqrt ... arrives as PostgreSQL's text of
    each value, with the scale PostgreSQL picks for it (planner.sql.value_scale). `session`
    supplies now(), version() and the like; without it a query calling them is not covered."""
    bound = _bind(text, catalog, param_types or {}, write)
    if bound.rel is None:
        return None
    rel, types = bound.rel, bound.types
    if per_value_scale:
        rel, types = value_scale.apply(rel, types)
    views: dict[str, tuple[str, Item | spark_sql.Fixpoint]] = {}
    resolve = resolver_for(views)

    def spark_name(name: str) -> str:
        source = resolve(name)  # notes the read (and checks a source-fed table's errors)
        assert isinstance(source, TableSource)
        return source.spark_name

    def fixpoint(fx: spark_sql.Fixpoint) -> str:
        # after the tables its queries read: the coordinator registers views in this order
        name = f"__sw_fix{next(_fixpoints)}"
        views[f"fixpoint:{name}"] = (name, fx)
        return name

    try:
        tree = spark_sql.to_spark_query(rel, spark_name, types, param_values, session, fixpoint)
    except p.NotYet as why:
        log.debug("older path: %s: %s", why, text[:200])
        return None
    reads = {item.id: item.name for _, item in bound.seen if item is not None}
    return BoundQuery(tree.sql(dialect="spark"), views, bound.names, types, reads, rel,
                      delta.Renderer(spark_name, session))
