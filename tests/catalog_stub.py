"""A catalog of tables and views for planning tests without a server (server.bound_query
and what plans through it), and the name resolver the coordinator would give."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from planner.translate import TableSource
from planner.types import SqlType
from server.catalog import Catalog
from server.catalog_items import Column, Item


def catalog_of(tables: dict[str, Sequence[tuple[str, SqlType]]],
               views: dict[str, tuple[Sequence[tuple[str, SqlType]], str]] | None = None) -> Catalog:
    """Tables `name → columns` (ids u1, u2, ... in order), then views `name → (columns, sql)`."""
    catalog = Catalog()
    items = [(name, "table", cols, None) for name, cols in tables.items()]
    items += [(name, "view", cols, sql) for name, (cols, sql) in (views or {}).items()]
    for i, (name, kind, cols, sql) in enumerate(items, start=1):
        catalog.items[f"u{i}"] = Item(f"u{i}", name, kind, tuple(Column(c, t) for c, t in cols), 1, sql=sql)
    return catalog


def resolver_for(catalog: Catalog) -> Callable:
    """What bound_query.plan takes: given the dict to note reads in, a resolver of names to
    the Spark views `__sw_<name>`."""
    def for_views(views: dict):
        def resolve(name: str) -> TableSource:
            item = catalog.get(name)
            views[item.id] = (f"__sw_{name}", item)
            return TableSource(f"__sw_{name}", {c.name: c.type.spark for c in item.columns})
        return resolve
    return for_views
