"""The default front end's planning of one-shot and prepared queries (server/bound_query.py),
without Spark or sockets: a query sent again is neither parsed nor bound again while the
catalog items it names stay the same, and DDL that replaces one is seen at once."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.translate import TableSource
from planner.types import column_type
from server import bound_query
from server.catalog import Catalog
from server.catalog_items import Column, Item

INT = column_type("integer")


def _catalog(*columns: str) -> Catalog:
    catalog = Catalog()
    catalog.items["u1"] = Item("u1", "t", "table", tuple(Column(c, INT) for c in columns), 1)
    return catalog


def _resolver_for(catalog: Catalog):
    def resolver_for(views):
        def resolve(name):
            item = catalog.get(name)
            views[item.id] = (f"__sw_{name}", item)
            return TableSource(f"__sw_{name}", {c.name: c.type.spark for c in item.columns})
        return resolve
    return resolver_for


@pytest.fixture
def parses(monkeypatch):
    bound_query._CACHE.clear()
    calls: list[str] = []
    real = pg_parse.parse_one

    def counting(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(pg_parse, "parse_one", counting)
    return calls


def test_a_prepared_query_is_parsed_once_and_run_with_each_values(parses):
    catalog = _catalog("a", "b")
    sql = "SELECT b FROM t WHERE a = $1"
    first = bound_query.plan(sql, catalog, _resolver_for(catalog), {1: 5}, {1: INT})
    second = bound_query.plan(sql, catalog, _resolver_for(catalog), {1: 7}, {1: INT})
    assert parses == [sql]
    assert "5" in first.spark_sql and "7" in second.spark_sql and "__sw_t" in second.spark_sql
    assert set(second.views) == {"u1"}  # every run notes its reads for the coordinator
    assert [t.base.name for t in second.types] == ["integer"]


def test_ddl_that_replaces_a_named_item_is_bound_again(parses):
    catalog = _catalog("a")
    sql = "SELECT * FROM t"
    assert bound_query.plan(sql, catalog, _resolver_for(catalog)).names == ["a"]
    catalog.items["u1"] = Item("u1", "t", "table", (Column("a", INT), Column("c", INT)), 2)
    assert bound_query.plan(sql, catalog, _resolver_for(catalog)).names == ["a", "c"]
    assert parses == [sql, sql]


def test_a_name_created_after_a_miss_and_queries_not_covered(parses):
    catalog = Catalog()
    with pytest.raises(Exception) as err:
        bound_query.plan("SELECT * FROM t", catalog, _resolver_for(catalog))
    assert getattr(err.value, "sqlstate", None) == "42P01"  # errors are not remembered
    catalog.items["u1"] = Item("u1", "t", "table", (Column("a", INT),), 1)
    assert bound_query.plan("SELECT * FROM t", catalog, _resolver_for(catalog)).names == ["a"]
    ordinality = "SELECT * FROM ROWS FROM (generate_series(1, 3))"
    assert bound_query.plan(ordinality, catalog, _resolver_for(catalog)) is None  # the sqlglot path's
    assert bound_query.plan(ordinality, catalog, _resolver_for(catalog)) is None
    assert parses.count(ordinality) == 1


def test_results_of_types_the_front_end_does_not_carry_take_the_older_path(parses):
    catalog = Catalog()
    for sql in ("SELECT pg_advisory_unlock_all()", "SELECT inet_server_addr()", "SELECT inet_client_port() + 1"):
        assert bound_query.plan(sql, catalog, _resolver_for(catalog)) is None, sql
