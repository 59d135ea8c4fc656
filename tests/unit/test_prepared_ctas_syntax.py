"""PREPARE / EXECUTE, CREATE TABLE AS / SELECT INTO and pg_typeof without Spark: the
statements they parse to, EXECUTE's argument coercion, a CTAS table's columns, and
pg_typeof's constant in both front ends."""

from __future__ import annotations

import decimal

import pytest

from planner import pg_parse
from planner import statements as st
from planner.errors import SqlError
from planner.parser import parse_one
from planner.sql import bind
from planner.sql import plan as p
from planner.translate import SessionContext, TableSource, to_spark
from planner.types import column_type
from server import create_table_as, prepared

CTX = SessionContext("materialize", "alice", "PostgreSQL 15.0 (sparkwire)", "2024-01-02 03:04:05.000000", 42)


def one(sql: str) -> st.Statement:
    return parse_one(sql).statement


# -- PREPARE / EXECUTE -----------------------------------------------------------------------

def test_prepare_keeps_the_parsed_statement_and_its_declared_types():
    stmt = one("PREPARE q(int, double precision, varchar(5), numeric(10,2), text[]) AS "
               "SELECT * FROM t WHERE a = $1")
    assert isinstance(stmt, st.Prepare) and stmt.name == "q"
    assert [t.display() for t in stmt.param_types] == [
        "integer", "double precision", "character varying(5)", "numeric(10,2)", "text[]"]
    assert isinstance(stmt.statement, st.Query) and stmt.text == "SELECT * FROM t WHERE a = $1"
    assert parse_one(stmt.text).params == [1]


@pytest.mark.parametrize("sql, kind", [
    ("PREPARE i AS INSERT INTO t VALUES ($1, $2)", st.Insert),
    ("prepare u as update t set b = $1 where a = $2", st.Update),
    ("PREPARE d AS DELETE FROM t WHERE a = $1;", st.Delete),
    ("PREPARE v AS VALUES (1), (2)", st.Query),
])
def test_prepare_takes_queries_and_writes(sql, kind):
    stmt = one(sql)
    assert isinstance(stmt, st.Prepare) and isinstance(stmt.statement, kind)


@pytest.mark.parametrize("sql, code, message", [
    ("PREPARE p AS CREATE TABLE x (a int)", "42601", 'syntax error at or near "CREATE"'),
    ("PREPARE p(nosuchtype) AS SELECT $1", "42704", 'type "nosuchtype" does not exist'),
    ("PREPARE p AS", "42601", "syntax error at end of input"),
    ("EXECUTE p((SELECT 1))", "0A000", "cannot use subquery in EXECUTE parameter"),
])
def test_bad_prepare_and_execute_are_postgresqls_errors(sql, code, message):
    with pytest.raises(SqlError) as info:
        one(sql)
    assert info.value.sqlstate == code and info.value.message.startswith(message)


def test_execute_arguments_are_expressions():
    stmt = one("EXECUTE p(1, 'a', 2 + 3, now(), NULL)")
    assert isinstance(stmt, st.Execute) and stmt.name == "p"
    assert [a.sql("postgres") for a in stmt.args] == ["1", "'a'", "2 + 3", "CURRENT_TIMESTAMP", "NULL"]
    assert one("EXECUTE p").args == ()
    assert one("DEALLOCATE PREPARE p") == st.Deallocate("p")


INT, TEXT, BOOL, NUM = (column_type(n) for n in ("integer", "text", "boolean", "numeric"))


def test_execute_coerces_arguments_by_assignment_rules():
    assert prepared.coerce("42", prepared.UNKNOWN, INT, 1) == 42  # an untyped literal: the input function
    assert prepared.coerce(decimal.Decimal("1.5"), NUM, INT, 1) == 2  # rounds half away from zero
    assert prepared.coerce(decimal.Decimal("-2.5"), NUM, INT, 1) == -3
    assert prepared.coerce(7, INT, TEXT, 1) == "7"  # anything to text
    assert prepared.coerce(None, BOOL, BOOL, 1) is None
    with pytest.raises(SqlError) as info:
        prepared.coerce(True, BOOL, INT, 2)
    assert info.value.sqlstate == "42804"
    assert info.value.message == "parameter $2 of type boolean cannot be coerced to the expected type integer"
    with pytest.raises(SqlError) as info:
        prepared.coerce(3_000_000_000, column_type("bigint"), INT, 1)
    assert info.value.sqlstate == "22003"
    with pytest.raises(SqlError) as info:
        prepared.coerce("abc", prepared.UNKNOWN, INT, 1)
    assert info.value.sqlstate == "22P02"


# -- CREATE TABLE AS / SELECT INTO -----------------------------------------------------------

def test_create_table_as_forms():
    stmt = one("CREATE TABLE IF NOT EXISTS c (x, \"Y\") AS SELECT a, b FROM t WITH NO DATA")
    assert isinstance(stmt, st.CreateTableAs)
    assert (stmt.name, stmt.column_names, stmt.if_not_exists, stmt.with_data) == ("c", ("x", "Y"), True, False)
    assert stmt.query.text == "SELECT a, b FROM t"
    assert one("create table c as (select 1) with data").with_data
    assert isinstance(one("CREATE TABLE c AS VALUES (1)").query, st.Query)
    # a column list with types is an ordinary CREATE TABLE
    assert isinstance(one("CREATE TABLE c (x int, y text)"), st.CreateTable)


def test_select_into_is_create_table_as():
    stmt = one("SELECT a, b INTO TEMP TABLE c FROM t WHERE a > (SELECT 1)")
    assert isinstance(stmt, st.CreateTableAs) and stmt.select_into and stmt.name == "c"
    assert parse_one(stmt.query.text).statement.ast.sql("postgres") == "SELECT a, b FROM t WHERE a > (SELECT 1)"
    assert isinstance(one("SELECT a FROM t"), st.Query)
    assert isinstance(one("INSERT INTO t SELECT a FROM t"), st.Insert)


@pytest.mark.parametrize("sql, code", [
    ("CREATE TABLE c AS INSERT INTO t VALUES (1)", "42601"),
    ("CREATE TABLE c (x, x) AS SELECT 1, 2", "42701"),
])
def test_bad_create_table_as(sql, code):
    with pytest.raises(SqlError) as info:
        one(sql)
    assert info.value.sqlstate == code


def test_a_new_tables_columns_come_from_the_result():
    cols = create_table_as.table_columns(["a", "b"], [INT, bind.coerce.UNKNOWN], ("x",))
    assert [(c.name, c.type.display()) for c in cols] == [("x", "integer"), ("b", "text")]
    for names, renamed, code in ((["a", "b"], ("x", "y", "z"), "42601"), (["a", "a"], (), "42701")):
        with pytest.raises(SqlError) as info:
            create_table_as.table_columns(names, [INT, INT], renamed)
        assert info.value.sqlstate == code


# -- pg_typeof ----------------------------------------------------------------------------------

class _Catalog:
    def relation(self, schema, name):
        if name != "t":
            return None
        return bind.Relation("t", (p.Column("a", INT), p.Column("v", column_type("character varying", (5,)))))


def test_pg_typeof_is_a_constant_in_the_binder():
    sql = "SELECT pg_typeof(a), pg_typeof(v), pg_typeof('x'), pg_typeof(1.5), pg_typeof('{1}'::int[]) FROM t"
    rel = bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))
    exprs = rel.exprs if hasattr(rel, "exprs") else rel.input.exprs
    assert [e.value for e in exprs] == ["integer", "character varying", "unknown", "numeric", "integer[]"]
    with pytest.raises(SqlError) as info:
        bind.Binder(_Catalog(), "SELECT pg_typeof(1, 2)").query(pg_parse.parse_one("SELECT pg_typeof(1, 2)"))
    assert info.value.sqlstate == "42883"


def test_pg_typeof_is_a_constant_on_the_sqlglot_path():
    def resolve(name):
        if name == "t":
            return TableSource("__sw_1_t", {"a": "INT", "v": "STRING"},
                               pg_types={"a": INT, "v": column_type("character varying", (5,))})
        return None

    tree = one("SELECT pg_typeof(a), pg_typeof(x.v), pg_typeof(NULL), pg_typeof('1'::timestamptz), "
               "pg_typeof(length(v)) FROM t AS x").ast
    spark = to_spark(tree, resolve, CTX)
    assert "pg_typeof(" not in spark.lower()
    for name in ("'integer'", "'character varying'", "'unknown'", "'timestamp with time zone'"):
        assert name in spark, spark
    # Spark's typing of an operator or an overloaded function is not PostgreSQL's: refused
    for sql in ("SELECT pg_typeof(a + 1) FROM t", "SELECT pg_typeof(abs(a)) FROM t",
                "SELECT pg_typeof(a) FROM (SELECT v AS a FROM t) AS s"):
        with pytest.raises(SqlError) as info:
            to_spark(one(sql).ast, resolve, CTX)
        assert info.value.sqlstate == "0A000"
