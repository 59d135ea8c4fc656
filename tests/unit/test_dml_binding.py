"""INSERT … SELECT, UPDATE and DELETE bound as the query computing their rows
(planner/sql/dml.py through server/bound_query.plan_write): which statements are covered,
PostgreSQL's assignment rules for the values written, and errors. No Spark, no sockets."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import coerce, dml
from planner.types import column_type
from server import bound_query
from server.catalog_items import Column
from tests.catalog_stub import catalog_of, resolver_for

COLUMNS = (Column("a", column_type("integer")), Column("b", column_type("text")),
           Column("c", column_type("numeric", (8, 2))), Column("e", column_type("character varying", (3,))),
           Column("d", column_type("bytea")))


CATALOG = catalog_of({"t": [(c.name, c.type) for c in COLUMNS],
                      "s": [("x", column_type("integer")), ("y", column_type("text"))]})
TARGETS = [dml.Target(c.name, c.type, cast=c.type.base.name != "bytea") for c in COLUMNS]


def write(sql: str, targets=TARGETS):
    return bound_query.plan_write(sql, "t", targets, CATALOG, resolver_for(CATALOG))


def test_insert_select_casts_to_the_target_types():
    b = write("INSERT INTO t (a, b) SELECT 2.5::numeric, 12.50")
    assert [t.base.name for t in b.types] == ["integer", "text"]
    assert "__sw_t" not in b.spark_sql  # the target is not read


@pytest.mark.parametrize("sql", [
    "INSERT INTO t VALUES (1, 'x')",  # VALUES: typed row by row by the targets
    "INSERT INTO t DEFAULT VALUES",
    "UPDATE t SET (a, b) = (1, 'x')",
])
def test_forms_left_to_the_older_path(sql):
    assert write(sql) is None


def test_untyped_literals_take_the_column_type():
    b = write("INSERT INTO t (a, d) SELECT '5', '\\x00ff'", [TARGETS[0], TARGETS[4]])
    assert b.types[0].base.name == "integer"
    assert b.types[1].base.name == "unknown"  # bytea: read as text with bytea's input, where it is stored


@pytest.mark.parametrize(("sql", "message"), [
    ("INSERT INTO t (a) SELECT y FROM s", 'column "a" is of type integer but expression is of type text'),
    ("INSERT INTO t (a) SELECT true", 'column "a" is of type integer but expression is of type boolean'),
    ("UPDATE t SET a = b", 'column "a" is of type integer but expression is of type text'),
])
def test_a_value_the_column_cannot_take_is_42804(sql, message):
    with pytest.raises(SqlError) as err:
        write(sql)
    assert (err.value.sqlstate, err.value.message) == ("42804", message)


def test_update_reads_old_and_new_rows_under_its_alias():
    b = write("UPDATE t AS z SET b = z.b || '!' WHERE z.a = 3")
    assert len(b.types) == 2 * len(COLUMNS)
    assert [t.base.name for t in b.types[len(COLUMNS):]] == ["integer", "text", "numeric", "text", "bytea"]


def test_update_of_an_unknown_column_is_42703_at_its_name():
    sql = "UPDATE t SET nosuch = 1"
    with pytest.raises(SqlError) as err:
        write(sql)
    assert err.value.sqlstate == "42703"
    assert err.value.message == 'column "nosuch" of relation "t" does not exist'
    assert err.value.position == sql.index("nosuch") + 1


def test_delete_reads_every_column_of_the_rows_it_removes():
    b = write("DELETE FROM t WHERE a / 2 = 1")
    assert [t.base.name for t in b.types] == ["integer", "text", "numeric", "character varying", "bytea"]


def test_the_dml_query_of_an_insert_with_values_is_none():
    assert dml.insert_query(pg_parse.parse_one("INSERT INTO t VALUES (1)")) is None


@pytest.mark.parametrize(("source", "target", "ok"), [
    ("numeric", "integer", True), ("double precision", "bigint", True), ("bigint", "smallint", True),
    ("integer", "text", True), ("boolean", "character varying", True), ("timestamp with time zone", "date", True),
    ("text", "integer", False), ("boolean", "integer", False), ("date", "time without time zone", False),
    ("integer", "boolean", False), ("text", "bytea", False),
])
def test_assignment_rules(source, target, ok):
    assert coerce.can_assign(coerce.named(source), coerce.named(target)) is ok
