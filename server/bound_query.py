"""One-shot queries through the front end of our own (`planner.sql`), where it covers them.

Opt-in per session (`SET sql_frontend = postgres`) while it grows: a query it does not
cover yet (`plan.NotYet`) returns None here and takes the sqlglot path; every other
error is PostgreSQL's and reaches the client.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner import pg_parse
from planner.sql import bind, coerce, numeric_scale, spark_sql
from planner.sql import plan as p
from planner.translate import Resolver, TableSource
from planner.types import SqlType
from server import system_catalog
from server.catalog import Catalog, Item

# Result types the wire encoders know only as the sqlglot path shapes them.
_OLDER_PATH_RESULTS = frozenset({"void", "inet", "record"})


@dataclass(frozen=True)
class BoundQuery:
    spark_sql: str
    views: dict[str, tuple[str, Item]]  # what the coordinator registers before running it
    names: list[str]
    types: list[SqlType]


class _Relations:
    """The user's tables and views, as the binder sees them; sources and system relations
    are not covered yet."""

    def __init__(self, catalog: Catalog, resolve: Resolver) -> None:
        self.catalog = catalog
        self.resolve = resolve

    def relation(self, schema: str | None, name: str) -> bind.Relation | None:
        if schema not in (None, "public") or system_catalog.find(name) is not None:
            raise p.NotYet("system relations are not covered by this front end yet")
        item = self.catalog.get(name)
        if item is None:
            return None
        if item.kind == "view" and item.sql:
            # A view is its query, bound here with the same catalog, inlined where it is named.
            rel = bind.Binder(self, item.sql).query(pg_parse.parse_one(item.sql))
            return bind.Relation(item.name, p.columns(rel), plan=rel)
        if item.kind != "table":
            raise p.NotYet(f"a {item.kind} is not covered by this front end yet")
        source = self.resolve(name)  # notes the read (and checks a source-fed table's errors)
        assert isinstance(source, TableSource)
        return bind.Relation(source.spark_name, tuple(p.Column(c.name, c.type) for c in item.columns))


def plan(text: str, catalog: Catalog, resolver_for, param_values: dict[int, object] | None = None,
         param_types: dict[int, SqlType] | None = None) -> BoundQuery | None:
    """The Spark SQL of a query, or None when this front end does not cover it yet.

    `resolver_for(views)` gives the coordinator's name resolver, noting reads in `views`;
    `param_values` None plans it for Describe (parameters as typed NULLs)."""
    views: dict[str, tuple[str, Item]] = {}
    try:
        node = pg_parse.parse_one(text)
        declared = param_types or {}
        types = [declared.get(n, coerce.UNKNOWN) for n in range(1, max(declared, default=0) + 1)]
        rel = bind.Binder(_Relations(catalog, resolver_for(views)), text, types).query(node)
        cols = p.columns(rel)
        if any(c.type.base.name in _OLDER_PATH_RESULTS for c in cols):
            raise p.NotYet("a result of this type is not covered by this front end yet")
        types = numeric_scale.with_display_scales([c.type for c in cols], numeric_scale.output_scales(rel))
        sql = spark_sql.to_spark(rel, lambda name: name, types, param_values)
    except p.NotYet:
        return None
    return BoundQuery(sql, views, [c.name for c in cols], types)
