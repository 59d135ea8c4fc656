"""PRIMARY KEY and UNIQUE without sockets: declarations read from PostgreSQL's parse tree,
names chosen as PostgreSQL chooses them, and the key counts that enforce them."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from planner import parser
from planner.errors import SqlError
from planner.table_keys import KeySpec, constraint_name, resolved_keys
from planner.types import column_type
from server.catalog_items import Column, Item, UniqueKey
from server.unique_keys import KeyCounts, UniqueKeys, key_changes, net_changes
from spark_backend.schema import storage_arrow_schema


def keys_of(sql: str) -> tuple[KeySpec, ...]:
    return parser.parse_one(sql).statement.keys


def test_column_and_table_constraints():
    assert keys_of("CREATE TABLE t (a int PRIMARY KEY, b text UNIQUE NOT NULL, c int, "
                   "CONSTRAINT named UNIQUE (b, c))") == (
        KeySpec(("a",), True), KeySpec(("b",), False), KeySpec(("b", "c"), False, "named"))
    assert keys_of("CREATE TABLE t (a int, b int, PRIMARY KEY (b, a))") == (KeySpec(("b", "a"), True),)
    assert keys_of('CREATE TABLE t ("A" int CONSTRAINT "My Key" PRIMARY KEY)') == (KeySpec(("A",), True, "My Key"),)


@pytest.mark.parametrize("sql, fragment", [
    ("CREATE TABLE t (a int, EXCLUDE USING gist (a WITH =))", "EXCLUDE constraints"),
    ("CREATE TABLE t (a int, b int GENERATED ALWAYS AS (a * 2) STORED)", "generated columns"),
    ("CREATE TABLE t (a int UNIQUE NULLS NOT DISTINCT)", "NULLS NOT DISTINCT"),
    ("CREATE TABLE t (a int PRIMARY KEY DEFERRABLE)", "DEFERRABLE"),
])
def test_constraints_not_enforced_are_refused(sql, fragment):
    with pytest.raises(SqlError) as info:
        parser.parse_one(sql)
    assert info.value.sqlstate == "0A000" and fragment in info.value.message


def test_names_postgres_chooses():
    assert constraint_name("t", ("a",), True, set()) == "t_pkey"
    assert constraint_name("t", ("a", "b"), False, set()) == "t_a_b_key"
    assert constraint_name("t", ("a",), False, {"t_a_key", "t_a_key1"}) == "t_a_key2"
    long = "x" * 70
    name = constraint_name(long, ("col",), False, set())
    assert len(name) == 63 and name.endswith("_col_key")


@pytest.mark.parametrize("specs, sqlstate", [
    ((KeySpec(("a",), True), KeySpec(("b",), True)), "42P16"),
    ((KeySpec(("zz",), False),), "42703"),
    ((KeySpec(("a", "a"), False),), "42701"),
    ((KeySpec(("a",), False, "taken"),), "42P07"),
])
def test_bad_keys(specs, sqlstate):
    with pytest.raises(SqlError) as info:
        resolved_keys("t", ["a", "b"], specs, {"taken"})
    assert info.value.sqlstate == sqlstate


def test_keys_on_the_same_columns_are_one():
    got = resolved_keys("t", ["a"], (KeySpec(("a",), False, "u1"), KeySpec(("a",), True, "p1")), set())
    assert got == (KeySpec(("a",), True, "p1"),)


def _item(*types: str) -> Item:
    cols = tuple(Column(f"c{i}", column_type(t)) for i, t in enumerate(types))
    return Item("u1", "t", "table", cols, 0, keys=(UniqueKey("t_pkey", ("c0",), True, "u2"),))


def _updates(item: Item, rows: list[tuple], diff: int = 1) -> pa.Table:
    schema = storage_arrow_schema(item.column_types)
    columns = [list(col) for col in zip(*rows)] if rows else [[] for _ in item.columns]
    arrays = [pa.array(c, schema.field(i).type) for i, c in enumerate(columns)]
    n = len(rows)
    return pa.Table.from_arrays([*arrays, pa.array([0] * n, pa.int64()), pa.array([diff] * n, pa.int64())],
                                schema=schema)


def test_key_changes_net_out_and_skip_nulls():
    item = _item("integer", "text")
    table = pa.concat_tables([_updates(item, [(1, "a"), (2, "b"), (None, "c")]), _updates(item, [(1, "a")], -1)])
    changes = key_changes(table, (0,))
    assert {k: c.net for k, c in changes.items()} == {(1,): 0, (2,): 1}


def test_float_keys_compare_as_postgres():
    item = _item("double precision")
    changes = key_changes(_updates(item, [(math.nan,), (math.nan,), (0.0,), (-0.0,)]), (0,))
    assert sorted(c.net for c in changes.values()) == [2, 2]


def test_violations_in_commit_order():
    item = _item("integer", "text")
    keys = UniqueKeys(store=None)
    keys.created(item)
    keys.committed({item.id: _updates(item, [(1, "x")])})
    writes = [{item.id: _updates(item, [(1, "dup")])},  # already there
              {item.id: _updates(item, [(2, "first")])},
              {item.id: _updates(item, [(2, "second")])},  # the write before it took 2
              {item.id: _updates(item, [(1, "x")], -1)}]  # a retraction is never refused
    errors = keys.violations(writes, {item.id: item})
    assert [e is not None for e in errors] == [True, False, True, False]
    assert errors[0].sqlstate == "23505"
    assert errors[0].message == 'duplicate key value violates unique constraint "t_pkey"'
    assert errors[2].detail == "Key (c0)=(2) already exists."


def test_counts_follow_commits():
    item = _item("integer")
    counts = KeyCounts(item, item.keys[0])
    counts.add(key_changes(_updates(item, [(1,), (2,)]), (0,)))
    counts.add(key_changes(_updates(item, [(1,)], -1), (0,)))
    assert counts.counts == {(2,): 1}
    assert counts.violation(key_changes(_updates(item, [(1,)]), (0,))) is None
    staged = net_changes([_updates(item, [(1,)])], (0,))
    assert counts.violation(key_changes(_updates(item, [(1,)]), (0,)), staged) is not None


def test_keys_are_kept_in_the_catalog_log():
    item = _item("integer")
    data = item.to_json()
    assert data["keys"] == [{"name": "t_pkey", "columns": ["c0"], "primary": True, "index_id": "u2"}]
    assert Item.from_json(data).keys == item.keys
    plain = Item("u3", "p", "table", item.columns, 0)
    assert "keys" not in plain.to_json()  # items without keys are written as before


@pytest.mark.parametrize("sql, columns, orders, unique, method", [
    ("CREATE INDEX ON t (a DESC, b)", ("a", "b"), ("DESC", ""), False, "btree"),
    ("CREATE UNIQUE INDEX x ON public.t (a NULLS FIRST)", ("a",), ("NULLS FIRST",), True, "btree"),
    ("CREATE INDEX x ON t (a DESC NULLS FIRST, b ASC NULLS LAST)", ("a", "b"), ("DESC", ""), False, "btree"),
    ("CREATE INDEX x ON t USING hash (a)", ("a",), ("",), False, "hash"),
])
def test_create_index(sql, columns, orders, unique, method):
    stmt = parser.parse_one(sql).statement
    assert (stmt.table, stmt.columns, stmt.orders, stmt.unique, stmt.method) == ("t", columns, orders, unique, method)


@pytest.mark.parametrize("sql, sqlstate", [
    ("CREATE INDEX ON t ((a + 1))", "0A000"),
    ("CREATE INDEX ON t USING gist (a)", "0A000"),
    ("CREATE INDEX ON t USING nosuch (a)", "42704"),
    ("CREATE UNIQUE INDEX ON t USING hash (a)", "0A000"),
    ("CREATE INDEX ON t (a) WHERE a > 0", "0A000"),
    ("CREATE INDEX ON other_schema.t (a)", "3F000"),
])
def test_bad_indexes(sql, sqlstate):
    with pytest.raises(SqlError) as info:
        parser.parse_one(sql)
    assert info.value.sqlstate == sqlstate


def test_drop_index():
    stmt = parser.parse_one("DROP INDEX IF EXISTS a, public.b CASCADE").statement
    assert (stmt.names, stmt.if_exists) == (("a", "b"), True)


def test_catalog_functions_read_relations_that_exist():
    """pg_get_constraintdef/pg_get_indexdef become subqueries over system relations: those
    relations must be ones the catalog has."""
    from sqlglot import exp

    from planner import catalog_defs
    from server import system_catalog

    trees = [catalog_defs.constraint_definition(exp.column("o")),
             catalog_defs.index_definition(exp.column("o"), exp.column("n"), exp.true())]
    for tree in trees:
        tables = list(tree.find_all(exp.Table))
        assert tables
        for table in tables:
            assert system_catalog.find(f"{table.db}.{table.name}") is not None, table.sql()
