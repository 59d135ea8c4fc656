"""Catalog constructs rewritten for Spark (planner/pg_compat.py) and the system relations'
rows (server/system_catalog.py), without Spark."""

from __future__ import annotations

import pytest
import sqlglot

from planner import pg_compat
from planner.errors import SqlError
from planner.params import infer_types
from planner.parser import parse_one
from planner.translate import SessionContext, TableSource, resolve_tree
from planner.types import BY_NAME, SqlType, column_type
from server import system_catalog as sc
from server.catalog_items import Column, Item

CTX = SessionContext("materialize", "materialize", "v", "2024-01-01 00:00:00.000000", 7)


def spark(sql: str) -> str:
    return pg_compat.rewrite(sqlglot.parse_one(pg_compat.preprocess(sql), read="postgres")).sql("spark")


def test_psql_operators_and_collations():
    out = spark("SELECT 1 WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default "
                "AND n.nspname !~ '^pg_toast' AND x ~* 'A'")
    assert out == ("SELECT 1 WHERE c.relname RLIKE '^(t)$' AND NOT n.nspname RLIKE '^pg_toast' "
                   "AND x RLIKE ('(?i)' || 'A')")


def test_qualified_functions_become_constants():
    out = spark("SELECT pg_catalog.pg_get_userbyid(c.relowner), pg_catalog.pg_encoding_to_char(6), "
                "has_table_privilege('t', 'SELECT'), obj_description(c.oid, 'pg_class'), "
                "pg_catalog.pg_total_relation_size(c.oid), current_schemas(true), current_schemas(false)")
    assert "pg_catalog." not in out
    assert "'materialize'" in out and "'UTF8'" in out and "TRUE" in out
    assert "CAST(NULL AS STRING)" in out and "CAST(0 AS BIGINT)" in out
    assert "ARRAY('pg_catalog', 'public'), ARRAY('public')" in out


def test_table_visibility_hides_schemas_off_the_search_path():
    out = spark("SELECT pg_catalog.pg_table_is_visible(c.oid) FROM pg_class c")
    assert out == (f"SELECT NOT (c.oid >= {pg_compat.HIDDEN_SYSTEM_OIDS} AND c.oid < "
                   f"{pg_compat.HIDDEN_SYSTEM_OIDS_END}) FROM pg_class AS c")


def test_regclass_and_regtype_casts():
    out = spark("SELECT 'cat_t'::regclass, 'public.t'::pg_catalog.regclass, c.oid::regclass")
    assert "(SELECT MAX(c.oid) FROM pg_catalog.pg_class AS c WHERE c.relname = 'cat_t')" in out
    assert "n.nspname = 'public'" in out
    # printed (a select list's item, or cast to text): the relation's name, else the OID's digits
    assert out.endswith("COALESCE((SELECT MAX(__rc.relname) FROM pg_catalog.pg_class AS __rc "
                        "WHERE __rc.oid = c.oid), CAST(c.oid AS STRING))")
    # compared: the OID, and a name no relation has is PostgreSQL's 42P01
    out = spark("SELECT 1 FROM pg_index WHERE indrelid = 'gone'::regclass AND indexrelid::regclass::text = 'i'")
    assert "RAISE_ERROR('sparkwire:42P01:relation \"gone\" does not exist')" in out
    assert "__rc.oid = indexrelid" in out and "indrelid = COALESCE((SELECT MAX(c.oid)" in out
    out = spark("SELECT 'integer'::regtype, 'pg_catalog.array_in'::regproc, x::oid, y::pg_catalog.int2[]")
    assert out == "SELECT 23, 'array_in', CAST(x AS BIGINT), CAST(y AS ARRAY<SMALLINT>)"
    assert "WHEN 'integer' THEN 23" in spark("SELECT $1::regtype")  # a parameter: looked up in Spark


def test_array_forms():
    out = spark("SELECT CASE WHEN pol.polroles = '{0}' THEN 1 END, "
                "array(SELECT rolname FROM pg_roles ORDER BY 1), x[s], name = '{a}'")
    assert "pol.polroles = ARRAY(0)" in out
    assert "(SELECT ARRAY_SORT(COLLECT_LIST(rolname)) FROM pg_roles)" in out
    assert "IF(s >= 1, TRY_ELEMENT_AT(x, s), NULL)" in out
    assert "name = '{a}'" in out  # a text column stays compared with text


@pytest.mark.parametrize("sql", [
    "SELECT cardinality(ARRAY[[1,2],[3,4]])",
    "SELECT array_length(ARRAY[[1,2],[3,4]], 2)",
    "SELECT array_upper(ARRAY[[1,2],[3,4]], 1)",
])
def test_a_multidimensional_array_is_refused_where_it_would_be_counted_as_one_dimension(sql):
    with pytest.raises(SqlError) as err:
        spark(sql)
    assert (err.value.sqlstate, err.value.message) == ("0A000", "multidimensional arrays are not supported")
    assert "SIZE(ARRAY(1, 2, 3))" in spark("SELECT cardinality(ARRAY[1,2,3])")


def test_array_subscripts_count_from_one_and_out_of_range_is_null():
    # sqlglot has already made a constant subscript 0-based: it is 1-based again here
    assert "IF(5 >= 1, TRY_ELEMENT_AT((ARRAY(10, 20, 30)), 5), NULL)" in spark("SELECT (ARRAY[10,20,30])[5]")
    assert "IF(0 >= 1, TRY_ELEMENT_AT(a, 0), NULL)" in spark("SELECT a[0]")
    assert "IF(-1 >= 1, TRY_ELEMENT_AT(a, -1), NULL)" in spark("SELECT a[-1]")  # not from the end


def test_unnest_in_from_names_its_column():
    assert spark("SELECT x FROM pg_catalog.unnest(a) x") == "SELECT x FROM EXPLODE(a) AS x(x)"


def test_oid_array_parameters():
    parsed = parse_one("SELECT 1 FROM pg_type t WHERE t.oid = any($1::oid[])")
    types = infer_types(parsed.statement, parsed.params, {}, lambda name: None)
    assert types[1] == SqlType(BY_NAME["oid"], -1, True)


def test_asyncpg_introspection_is_plain_sql():
    from asyncpg import introspection

    out = spark(introspection.INTRO_LOOKUP_TYPES_13)
    assert "typebases" not in out  # the correlated recursive domain lookup is gone
    assert "CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE NULL END" in out
    assert "CASE WHEN t.typtype = 'c' THEN CAST(NULL AS ARRAY<STRING>) ELSE NULL END" in out


def test_names_resolve_with_their_schema():
    asked = []

    def resolve(name: str):
        asked.append(name)
        return TableSource(f"v_{name.replace('.', '_')}", {"oid": "BIGINT"})

    resolve_tree(parse_one("SELECT 1 FROM pg_catalog.pg_class, pg_type, public.t, "
                           "information_schema.tables, mz_internal.mz_subscriptions").statement.ast,
                 resolve, CTX)
    assert asked == ["pg_catalog.pg_class", "pg_type", "t", "information_schema.tables",
                     "mz_internal.mz_subscriptions"]


def test_distinct_order_by_uses_positions():
    def resolve(name: str):
        return TableSource("v_t", {"a": "INT", "b": "INT"})

    out = resolve_tree(parse_one("SELECT DISTINCT t.a, t.b FROM t ORDER BY t.b DESC").statement.ast,
                       resolve, CTX).sql("spark")
    assert out.endswith("ORDER BY 2 DESC NULLS FIRST")


def _item(oid: int, name: str, kind: str, columns=()) -> Item:
    return Item(f"u{oid - 20000}", name, kind, tuple(columns), 0, oid=oid)


def test_system_relations_from_the_catalog():
    items = [
        _item(20001, "t", "table", [Column("a", column_type("integer"), True),
                                    Column("b", column_type("text"), False, "'x'"),
                                    Column("c", column_type("numeric", (10, 2)))]),
        _item(20002, "v", "view", [Column("a", column_type("integer"))]),
        _item(20003, "secret_s", "secret"),
        _item(20004, "bob", "role"),
    ]
    snap = sc.Snapshot(items, [], {}, "materialize")

    def rows(name: str) -> list[dict]:
        return sc.build(sc.find(name), snap).table.rename_columns(
            [n for n, _ in sc.find(name).columns]).to_pylist()

    classes = {r["relname"]: r for r in rows("pg_class")}
    assert classes["t"]["relkind"] == "r" and classes["v"]["relkind"] == "v"
    assert classes["t"]["relnamespace"] == pg_compat.NAMESPACES["public"]
    assert "secret_s" not in classes and "bob" not in classes
    assert classes["pg_class"]["relnamespace"] == pg_compat.NAMESPACES["pg_catalog"]
    assert classes["mz_subscriptions"]["oid"] >= pg_compat.HIDDEN_SYSTEM_OIDS
    attrs = [(r["attname"], r["atttypid"], r["atttypmod"], r["attnotnull"], r["atthasdef"])
             for r in rows("pg_attribute") if r["attrelid"] == 20001]
    assert attrs == [("a", 23, -1, True, False), ("b", 25, -1, False, True),
                     ("c", 1700, (10 << 16 | 2) + 4, False, False)]
    assert [(r["adrelid"], r["adnum"], r["adbin"]) for r in rows("pg_attrdef")] == [(20001, 2, "'x'::text")]
    assert [r["rolname"] for r in rows("pg_roles")] == ["bob", "materialize"]
    tables = {(r["table_schema"], r["table_name"]): r["table_type"]
              for r in rows("information_schema.tables")}
    assert tables[("public", "t")] == "BASE TABLE" and tables[("public", "v")] == "VIEW"
    columns = [(r["column_name"], r["data_type"], r["is_nullable"], r["numeric_precision"])
               for r in rows("information_schema.columns") if r["table_name"] == "t"]
    assert columns == [("a", "integer", "NO", 32), ("b", "text", "YES", None),
                       ("c", "numeric", "YES", 10)]
    assert rows("mz_internal.mz_source_statuses") == []
    assert sc.find("pg_class") is sc.find("pg_catalog.pg_class")
    assert sc.find("mz_subscriptions") is None and sc.find("tables") is None


def test_defaults_print_as_postgresql_does():
    integer, text = SqlType(BY_NAME["integer"]), SqlType(BY_NAME["text"])
    assert sc.default_expr("-1", integer) == "'-1'::integer"
    assert sc.default_expr("'x'", text) == "'x'::text"
    assert sc.default_expr("TRUE", SqlType(BY_NAME["boolean"])) == "true"
    assert sc.default_expr("NOW()", SqlType(BY_NAME["timestamp with time zone"])) == "now()"
    assert sc.default_expr("5", SqlType(BY_NAME["bigint"])) == "5"
