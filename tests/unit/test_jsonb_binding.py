"""jsonb's operators on both front ends, without Spark: the postgres front end binds them
by type (planner.operators), the sqlglot path rewrites sqlglot's nodes (planner.jsonb_sql)."""

from __future__ import annotations

import pytest
import sqlglot

from planner import pg_compat, pg_parse
from planner.errors import SqlError
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.types import column_type


class _Catalog:
    def relation(self, schema, name):
        if name != "docs":
            return None
        return bind.Relation(name, (p.Column("id", column_type("integer")), p.Column("j", column_type("jsonb"))))


def _bound(sql: str) -> tuple[list[str], str]:
    rel = bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))
    types = [c.type for c in p.columns(rel)]
    return [t.display() for t in types], spark_sql.to_spark(rel, lambda name: name, types)


@pytest.mark.parametrize("sql, result, udf", [
    ("SELECT j @> '{\"a\": 1}' FROM docs", "boolean", "sparkwire_jsonb_contains"),
    ("SELECT j <@ '{\"a\": 1}' FROM docs", "boolean", "sparkwire_jsonb_contains"),
    ("SELECT j ? 'a' FROM docs", "boolean", "sparkwire_jsonb_exists("),
    ("SELECT j ?| '{a,b}' FROM docs", "boolean", "sparkwire_jsonb_exists_any"),
    ("SELECT j ?& '{a,b}' FROM docs", "boolean", "sparkwire_jsonb_exists_all"),
    ("SELECT j #> '{a,0}' FROM docs", "jsonb", "sparkwire_jsonb_extract("),
    ("SELECT j - 'a' FROM docs", "jsonb", "sparkwire_jsonb_delete"),
    ("SELECT j || j FROM docs", "jsonb", "sparkwire_jsonb_concat"),
    # compared by PostgreSQL's order (planner.jsonb_order), not by the text: 1 = 1.0, 9 < 10
    ("SELECT j = '1.0' FROM docs", "boolean", "sparkwire_jsonb_sort_key"),
    ("SELECT j < '10' FROM docs", "boolean", "sparkwire_jsonb_sort_key"),
])
def test_postgres_front_end_binds_jsonb_operators(sql, result, udf):
    types, spark = _bound(sql)
    assert types == [result] and udf in spark.lower(), spark


def test_postgres_front_end_text_concat_is_still_text():
    types, spark = _bound("SELECT 'a' || 'b' FROM docs")
    assert types == ["text"] and "jsonb" not in spark


def _sqlglot(sql: str) -> str:
    return pg_compat.rewrite(sqlglot.parse_one(sql, read="postgres")).sql("spark").lower()


def test_sqlglot_path_rewrites_jsonb_operators():
    assert "sparkwire_jsonb_contains((j), ('{\"a\": 1}'))" in _sqlglot("SELECT j @> '{\"a\":1}' FROM docs")
    assert "sparkwire_jsonb_contains(('{\"a\": 1}'), (j))" in _sqlglot("SELECT j <@ '{\"a\":1}' FROM docs")
    assert "array('a', null)" in _sqlglot("SELECT j ?| '{a,NULL}' FROM docs")
    assert "sparkwire_jsonb_concat" in _sqlglot("SELECT j || '[1]'::jsonb FROM docs")
    assert "sparkwire_jsonb_delete" in _sqlglot("SELECT (j #> '{a}') - 'a' FROM docs")
    # without a visible jsonb operand, || and - keep their text and number meanings
    assert "jsonb" not in _sqlglot("SELECT 'a' || c, 1 - 2 FROM docs")


def test_sqlglot_path_refuses_arrays_and_bad_json():
    with pytest.raises(SqlError) as err:
        _sqlglot("SELECT ARRAY[1] @> ARRAY[1]")
    assert err.value.sqlstate == "0A000"
    with pytest.raises(SqlError) as err:
        _sqlglot("SELECT j @> 'nope' FROM docs")
    assert err.value.sqlstate == "22P02"


def test_order_by_jsonb_sorts_by_its_key():
    _, spark = _bound("SELECT id FROM docs ORDER BY j DESC")
    assert "ORDER BY SPARKWIRE_JSONB_SORT_KEY(" in spark.upper()
