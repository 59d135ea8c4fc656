"""Deny by default, without a server: what the allowlist and the Spark guard refuse."""

from __future__ import annotations

import pytest

from planner import functions, operators, pg_parse
from planner.allowlist import known_type
from planner.errors import SqlError
from planner.parser import parse, parse_one
from planner.spark_guard import check_calls, check_relations, spark_sql, strip_comments
from planner.translate import SessionContext, TableSource, resolve_tree

CTX = SessionContext("materialize", "u", "v", "2024-01-01 00:00:00.000000", 7)


def _error(sql: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        parse(sql)
    return info.value


@pytest.mark.parametrize("sql, message", [
    ("SELECT x.value FROM IDENTIFIER('text.`/etc/passwd`') AS x", "function identifier(unknown) does not exist"),
    ("SELECT reflect('java.lang.System', 'getenv', 'HOME')", "function reflect(unknown, unknown, unknown)"),
    ("SELECT java_method('java.lang.System', 'exit', 0)", "function java_method(unknown, unknown, integer)"),
    ("SELECT try_reflect('java.lang.System', 'getenv', 'HOME')", "function try_reflect("),
    ("SELECT * FROM range(10)", "function range(integer) does not exist"),
    ("SELECT explode(array[1, 2])", "function explode(integer[]) does not exist"),
    ("SELECT input_file_name()", "function input_file_name() does not exist"),
    ("SELECT v FROM (SELECT 1 AS v) s WHERE reflect('a', 'b') IS NULL", "function reflect("),
    ("CREATE VIEW leak AS SELECT reflect('java.lang.System', 'getenv', 'HOME')", "function reflect("),
    ("INSERT INTO t SELECT java_method('a', 'b')", "function java_method("),
    ("UPDATE t SET a = reflect('a', 'b')", "function reflect("),
    ("DELETE FROM t WHERE reflect('a', 'b') = 'x'", "function reflect("),
    ("SELECT isfinite(1)", "function isfinite(integer) does not exist"),  # PostgreSQL has it; we do not yet
    ("SELECT public.upper('a')", "function public.upper(unknown) does not exist"),
    ("SELECT upper('a', 'b')", "function upper(unknown, unknown) does not exist"),
    ("SELECT sum(*) FROM t", "function sum() does not exist"),
])
def test_uncatalogued_functions_are_42883_before_spark(sql, message):
    err = _error(sql)
    assert err.sqlstate == "42883" and message in err.message, (err.sqlstate, err.message)
    assert err.hint and "explicit type casts" in err.hint


@pytest.mark.parametrize("sql", [
    "SELECT * FROM csv.`/etc/passwd`", "SELECT * FROM json.`/etc`", "SELECT * FROM parquet.`/data`",
    "SELECT * FROM orc.`/x`", "SELECT * FROM text.`/etc/hostname`", "SELECT * FROM binaryFile.`/etc`",
    "SELECT * FROM t LATERAL VIEW explode(array(1)) x", "SELECT 1,",
])
def test_spark_relation_syntax_is_a_postgresql_syntax_error(sql):
    assert _error(sql).sqlstate == "42601"


@pytest.mark.parametrize("sql, message", [
    ("SELECT 1 <=> 2", "operator does not exist: integer <=> integer"),
    ("SELECT 1 OPERATOR(public.+) 2", "operator does not exist: integer OPERATOR(public.+) integer"),
])
def test_uncatalogued_operators_are_42883(sql, message):
    err = _error(sql)
    assert err.sqlstate == "42883" and message in err.message, err.message


@pytest.mark.parametrize("sql", ["SELECT a @@ b FROM t", "SELECT '{}'::jsonb @? 'a'"])
def test_jsonpath_operators_are_not_supported(sql):
    # jsonb's jsonpath operators (and text search's @@) are known, not carried out: 0A000.
    err = _error(sql)
    assert err.sqlstate == "0A000" and "is not supported" in err.message, err.message


@pytest.mark.parametrize("sql, sqlstate, message", [
    ("SELECT 1::string", "42704", 'type "string" does not exist'),
    ("SELECT CAST(1 AS frobnicator)", "42704", 'type "frobnicator" does not exist'),
    ("CREATE TABLE pq (a int) USING parquet", "0A000", "CREATE TABLE ... USING is not supported"),
    ("CREATE TABLE pq (a int) LOCATION '/tmp/x'", "0A000", "LOCATION is not supported"),
    ("CREATE TABLE pq (a int) OPTIONS (path '/tmp/x')", "0A000", "OPTIONS is not supported"),
    ("CREATE TABLE pq (a int) TBLPROPERTIES ('k' = 'v')", "0A000", "TBLPROPERTIES is not supported"),
    ("CREATE TABLE pq (a int) PARTITIONED BY (a)", "0A000", "PARTITIONED is not supported"),
    ("CREATE TABLE pq (a int) WITH (fillfactor = 70)", "0A000", "WITH (storage parameters) is not supported"),
    ("CREATE TABLE pq (a int) TABLESPACE elsewhere", "0A000", "TABLESPACE is not supported"),
    ("CREATE TEMP TABLE tt (a int)", "0A000", "CREATE TEMPORARY TABLE is not supported"),
    ("CREATE TEMPORARY VIEW tv AS SELECT 1", "0A000", "CREATE TEMPORARY VIEW is not supported"),
    ("SELECT * FROM t TABLESAMPLE SYSTEM (10)", "0A000", "TABLESAMPLE is not supported"),
    # data-modifying WITH, at the top or inside a statement's query (sqlglot's syntax error before)
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "0A000", "data-modifying statement in WITH"),
    ("INSERT INTO t WITH d AS (UPDATE t SET a = 1 RETURNING a) SELECT a FROM d", "0A000",
     "data-modifying statement in WITH"),
    ("SELECT * FROM (WITH d AS (INSERT INTO t VALUES (1) RETURNING a) SELECT a FROM d) s", "0A000",
     "data-modifying statement in WITH"),
])
def test_refused_clauses_and_types(sql, sqlstate, message):
    err = _error(sql)
    assert err.sqlstate == sqlstate and message in err.message, (err.sqlstate, err.message)


@pytest.mark.parametrize("sql", [
    "SELECT upper(a), lower(b), count(*), sum(c) FROM t GROUP BY 1, 2",
    "SELECT pg_catalog.format_type(23, NULL), trim(both 'x' from a), extract(year from d) FROM t",
    "SELECT * FROM generate_series(1, 3) g, unnest(array[1, 2]) u",
    "SELECT a LIKE 'x%', a ILIKE 'y', a ~ 'z', a || 'w', -a, 7 / 2, a IN (1, 2), a BETWEEN 1 AND 2 FROM t",
    "SELECT a SIMILAR TO 'x%', a NOT SIMILAR TO 'x' ESCAPE '#', a LIKE 'x#%' ESCAPE '#' FROM t",
    "SELECT row_number() OVER (ORDER BY a), lag(a) OVER (ORDER BY a) FROM t",
    "SELECT $1, $2, f.x FROM (SELECT $1::int AS x) f WHERE $1=$2",
    "SELECT '${env:HOME}', '${system:user.home}', '${spark.sql.warehouse.dir}'",
    "SELECT /*+ REPARTITION(3) */ 1",
    "SELECT 'x'::text, 1::int4, 2::pg_catalog.int8, '{}'::int[], 't'::regclass, 1::oid",
])
def test_catalogued_names_pass(sql):
    parse(sql)


def test_placeholders_one_character_apart_parse():
    # psycopg's %s,%s, JDBC's (?,?) and node's ($1,$2) all become $1,$2.
    for sql in ("SELECT $1,$2", "SELECT f.x FROM (SELECT 1 AS x) f WHERE $1=$2", "SELECT upper($1),lower($2)",
                "INSERT INTO t VALUES ($1,$2,$3)"):
        parse_one(sql)


def test_deep_nesting_is_statement_too_complex_not_a_crash():
    err = _error("SELECT " + "NOT " * 20000 + "true")
    assert err.sqlstate in ("54001", "42601")


def test_every_catalogued_function_is_accepted_by_name_and_arity():
    for f in functions.FUNCTIONS:
        schema = None if f.schema == "pg_catalog" else f.schema
        assert functions.lookup(f.name, len(f.args), in_from=f.kind is functions.Kind.TABLE,
                                schema=schema) is not None, f
    assert functions.lookup("_pg_expandarray", 1) is None  # only as information_schema._pg_expandarray
    assert functions.lookup("reflect", 3) is None
    assert functions.lookup("upper", 2) is None
    assert "<>" in operators.NAMES and "!=" in operators.NAMES and "@@" not in operators.NAMES


def test_catalog_oids_are_unique():
    assert len({f.oid for f in functions.FUNCTIONS}) == len(functions.FUNCTIONS)
    assert len({o.oid for o in operators.OPERATORS}) == len(operators.OPERATORS)


def test_types_known_and_unknown():
    for name in ("int4", "bpchar", "varchar", "numeric", "timestamptz", "jsonb", "regclass", "_oid", "text"):
        assert known_type(name), name
    for name in ("string", "double", "frobnicator", "binary"):
        assert not known_type(name), name


def test_the_spark_guard_refuses_what_translation_must_never_write():
    for sql in ("SELECT REFLECT('a', 'b')", "SELECT `reflect`('a', 'b')", "SELECT java_method('a')",
                "SELECT * FROM range(10)", "SELECT * FROM IDENTIFIER('x')", "SELECT input_file_name()"):
        with pytest.raises(SqlError) as info:
            check_calls(sql)
        assert info.value.sqlstate == "42883"
    with pytest.raises(SqlError):
        check_calls("SELECT /*+ REPARTITION(3) */ 1")
    check_calls("SELECT UPPER(a), CAST(b AS DECIMAL(38, 10)), x IN (1, 2) FROM v AS t(a, b, x)")


def test_the_spark_guard_reads_only_registered_views():
    tree = parse_one("SELECT * FROM a, b").statement.ast
    with pytest.raises(SqlError):
        check_relations(tree, {"a"})
    check_relations(tree, {"a", "b"})


def test_comments_and_hints_never_reach_spark():
    resolve = lambda name: TableSource("__sw_1_t", {"a": "INT"})
    tree = resolve_tree(parse_one("SELECT /*+ REPARTITION(3) */ a -- note\nFROM t /* more */").statement.ast,
                        resolve, CTX)
    text = spark_sql(strip_comments(tree))
    assert "/*" not in text and "--" not in text and "REPARTITION" not in text


def test_pg_parse_walks_deep_trees_without_recursion():
    tree = pg_parse.parse_one("SELECT " + " + ".join(["1"] * 400))
    assert sum(1 for kind, _ in pg_parse.walk(tree) if kind == "A_Expr") == 399
    with pytest.raises(SqlError) as info:  # deeper than the tree's reader goes: said plainly
        pg_parse.parse_one("SELECT " + " + ".join(["1"] * 3000))
    assert info.value.sqlstate == "54001" and info.value.message == "statement too complex"
