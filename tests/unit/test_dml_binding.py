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


def test_values_rows_are_assigned_value_by_value_not_by_a_common_type():
    # PostgreSQL's transformInsertStmt: each value takes its own column's type, so a string
    # literal beside an expression of another type in one column is no VALUES type clash.
    b = write("INSERT INTO t (a, c) VALUES (1 + 1, '2.5'), ('7', 2.125 * 2)", [TARGETS[0], TARGETS[2]])
    assert [t.base.name for t in b.types] == ["integer", "numeric"]
    literals = write("INSERT INTO t (a, c) VALUES (-2, '2.5'), ('7', 2.125)", [TARGETS[0], TARGETS[2]])
    assert "INLINE(" not in literals.spark_sql  # literals and casts: Spark's inline table


def test_values_mixing_types_for_a_column_read_from_text_are_sent_as_text():
    arr = dml.Target("r", column_type("integer", is_array=True), cast=False)
    b = write("INSERT INTO t (r) VALUES (ARRAY[1, NULL]), ('{}')", [arr])
    assert b.types[0].base.name == "text"


def test_values_of_computed_expressions_are_rows_made_when_the_query_runs():
    b = write("INSERT INTO t (b) VALUES (upper('x')), ((SELECT y FROM s LIMIT 1))", [TARGETS[1]])
    assert "INLINE(ARRAY(NAMED_STRUCT(" in b.spark_sql


def test_values_default_is_the_column_default_or_null():
    targets = [dml.Target("a", column_type("integer"), default="40 + 2"), TARGETS[1]]
    b = write("INSERT INTO t (a, b) VALUES (DEFAULT, upper('x'))", targets)
    assert "40" in b.spark_sql and b.types[0].base.name == "integer"
    assert write("INSERT INTO t (a, b) VALUES (DEFAULT, upper('x'))") is not None


@pytest.mark.parametrize(("sql", "code", "message", "at"), [
    ("INSERT INTO t (a) VALUES (1 + 1), ('x' || 'y')", "42804",
     'column "a" is of type integer but expression is of type text', "'x'"),
    ("INSERT INTO t (a) VALUES (abs(1)), ('12x')", "22P02", 'invalid input syntax for type integer: "12x"', None),
    ("INSERT INTO t (a, b) VALUES (abs(1), 'x'), (2)", "42601", "VALUES lists must all be the same length", "2)"),
    ("INSERT INTO t (a, b) VALUES (abs(1))", "42601", "INSERT has more target columns than expressions", "b)"),
    ("INSERT INTO t (a) VALUES (abs(1), 2)", "42601", "INSERT has more expressions than target columns", "2)"),
    ("INSERT INTO t (a) VALUES (count(*))", "42803", "aggregate functions are not allowed in VALUES", None),
    ("INSERT INTO t (a) VALUES (nosuch + 1)", "42703", 'column "nosuch" does not exist', "nosuch"),
])
def test_values_errors_are_postgresql_s(sql, code, message, at):
    named = sql[sql.index("(") + 1:sql.index(")")].split(", ")
    targets = [t for t in TARGETS if t.name in named]
    with pytest.raises(SqlError) as err:
        write(sql, targets)
    assert (err.value.sqlstate, err.value.message) == (code, message)
    if at is not None:
        assert err.value.position == sql.index(at) + 1


def test_values_with_order_by_is_a_query_with_common_types():
    assert dml.insert_values(pg_parse.parse_one("INSERT INTO t VALUES (1), (2) LIMIT 1")) is None
    assert dml.insert_values(pg_parse.parse_one("INSERT INTO t SELECT 1")) is None
    assert dml.insert_values(pg_parse.parse_one("INSERT INTO t VALUES (1), (2)")) is not None


@pytest.mark.parametrize(("source", "target", "ok"), [
    ("numeric", "integer", True), ("double precision", "bigint", True), ("bigint", "smallint", True),
    ("integer", "text", True), ("boolean", "character varying", True), ("timestamp with time zone", "date", True),
    ("text", "integer", False), ("boolean", "integer", False), ("date", "time without time zone", False),
    ("integer", "boolean", False), ("text", "bytea", False),
])
def test_assignment_rules(source, target, ok):
    assert coerce.can_assign(coerce.named(source), coerce.named(target)) is ok


def test_returning_is_a_select_of_its_list_over_the_table_under_its_alias():
    b = bound_query.plan_returning("INSERT INTO t AS x VALUES (1) RETURNING x.a * 2, upper(x.b)", "t", CATALOG,
                                   resolver_for(CATALOG))
    assert [t.base.name for t in b.types] == ["integer", "text"]
    assert "__sw_t" in b.spark_sql  # read as t: the caller registers the written rows there
    assert dml.returning_select(pg_parse.parse_one("DELETE FROM t")) is None


def test_returning_names_what_the_table_has():
    sql = "UPDATE t SET a = 1 RETURNING nosuch + 1"
    with pytest.raises(SqlError) as err:
        bound_query.plan_returning(sql, "t", CATALOG, resolver_for(CATALOG))
    assert (err.value.sqlstate, err.value.position) == ("42703", sql.index("nosuch") + 1)


def test_update_set_default_is_the_column_s_default_with_its_own_constants():
    targets = [dml.Target("a", column_type("integer"), default="-7"), dml.Target("b", column_type("text")),
               dml.Target("c", column_type("numeric", (8, 2)), default="0")]
    b = write("UPDATE t SET a = DEFAULT, b = DEFAULT, c = DEFAULT WHERE a = 1234567", targets)
    # -7 and 0 are read from the default's text, not from the statement's at the same place
    assert "-7" in b.spark_sql and "1234567" in b.spark_sql and "1234567 AS" not in b.spark_sql
    assert "CAST(NULL AS STRING)" in b.spark_sql  # b has no default


def test_a_parse_tree_spliced_into_another_statement_carries_its_integers():
    text = "SELECT -7, 0, 5, -(-3)"
    consts = [v["ResTarget"]["val"]["A_Const"]["ival"]
              for v in pg_parse.with_integers(pg_parse.parse_one(text), text)["SelectStmt"]["targetList"]]
    assert consts == [{"ival": -7}, {"ival": 0}, {"ival": 5}, {"ival": 3}]


def test_delete_using_reads_each_row_of_the_table_once():
    b = write("DELETE FROM t USING s WHERE s.x = t.a AND s.y = 'q'")
    assert "EXISTS" in b.spark_sql and b.spark_sql.count("JOIN") == 0  # a semi-join, not a join


def test_delete_using_the_table_itself_is_42712():
    from planner.parser import parse_statement
    with pytest.raises(SqlError) as err:
        parse_statement("DELETE FROM t USING t WHERE t.a = 1")
    assert (err.value.sqlstate, err.value.message) == ("42712", 'table name "t" specified more than once')


def test_update_from_takes_each_row_once_by_its_number_without_a_key():
    b = write("UPDATE t SET b = s.y FROM s WHERE s.x = t.a")
    # the target's rows numbered, then one kept per number (DISTINCT ON, a second numbering)
    assert b.spark_sql.upper().count("ROW_NUMBER()") == 2
    assert len(b.types) == 2 * len(TARGETS)  # old and new rows only: the number is not a column


def test_update_from_takes_each_row_once_by_its_primary_key():
    keyed = [dml.Target(t.name, t.type, cast=t.cast, in_key=t.name == "a") for t in TARGETS]
    b = write("UPDATE t AS z SET b = s.y FROM s WHERE s.x = z.a", keyed)
    assert b.spark_sql.upper().count("ROW_NUMBER()") == 1  # DISTINCT ON the key alone
    assert len(b.types) == 2 * len(TARGETS)


@pytest.mark.parametrize("sql, state", [
    ("UPDATE t SET b = 'x' FROM t WHERE true", "42712"),
    ("UPDATE t AS z SET b = 'x' FROM s AS z WHERE true", "42712"),
    ("UPDATE t SET a = s.y FROM s WHERE true", "42804"),
    ("UPDATE t SET b = 'x' FROM s WHERE nosuch.x = 1", "42P01"),
])
def test_update_from_errors(sql, state):
    with pytest.raises(SqlError) as err:
        write(sql)
    assert err.value.sqlstate == state


def test_a_with_list_before_a_write_is_read_by_its_query():
    b = write("WITH w AS (SELECT 5 AS n) UPDATE t SET a = (SELECT n FROM w) WHERE a = 1")
    assert len(b.types) == 2 * len(TARGETS)
    with pytest.raises(SqlError) as err:  # both lists naming one query
        write("WITH w AS (SELECT 1) INSERT INTO t (a) WITH w AS (SELECT 2) SELECT 1")
    assert err.value.sqlstate == "0A000"
