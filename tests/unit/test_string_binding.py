"""The string functions of planner.pg_strings / pg_regex / pg_format on both front ends,
without Spark: the postgres front end binds them from the catalog (LIKE ... ESCAPE and
SIMILAR TO as the operators PostgreSQL's grammar makes of them), the sqlglot path
rewrites sqlglot's nodes into the same UDF calls."""

from __future__ import annotations

import pytest
import sqlglot

from planner import pg_compat, pg_parse
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.types import column_type


class _Catalog:
    def relation(self, schema, name):
        if name != "t":
            return None
        return bind.Relation(name, (p.Column("s", column_type("text")), p.Column("n", column_type("integer")),
                                    p.Column("x", column_type("numeric"))))


def _bound(sql: str) -> tuple[list[str], str]:
    rel = bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))
    types = [c.type for c in p.columns(rel)]
    return [t.display() for t in types], spark_sql.to_spark(rel, lambda name: name, types).lower()


@pytest.mark.parametrize("sql, result, spark", [
    ("SELECT regexp_replace(s, 'a', 'b', 'g') FROM t", "text", "sparkwire_regexp_replace("),
    ("SELECT regexp_match(s, 'a') FROM t", "text[]", "sparkwire_regexp_match("),
    ("SELECT regexp_split_to_array(s, ',') FROM t", "text[]", "sparkwire_regexp_split("),
    ("SELECT s LIKE 'a#%' ESCAPE '#' FROM t", "boolean", "sparkwire_like_escape(('a#%'), ('#'), true)"),
    ("SELECT s NOT ILIKE 'a#%' ESCAPE '#' FROM t", "boolean", "sparkwire_like_escape(('a#%'), ('#'), true)"),
    ("SELECT like_escape(s, '#') FROM t", "text", "sparkwire_like_escape((t0.c0), ('#'), false)"),
    ("SELECT s SIMILAR TO 'a%' FROM t", "boolean", "sparkwire_regexp_like((t0.c0), (sparkwire_similar_to_escape("),
    ("SELECT s NOT SIMILAR TO 'a%' ESCAPE '#' FROM t", "boolean", "not sparkwire_regexp_like("),
    ("SELECT substring(s FROM 'a(.)') FROM t", "text", "sparkwire_regexp_substring("),
    ("SELECT substring(s FROM 2) FROM t", "text", "substring("),
    ("SELECT encode(decode(s, 'hex'), 'base64') FROM t", "text", "sparkwire_encode((sparkwire_decode("),
    ("SELECT chr(n) FROM t", "text", "sparkwire_chr("),
    ("SELECT format('%s %s', s, n = 1) FROM t", "text", "sparkwire_format("),
])
def test_postgres_front_end_binds_string_functions(sql, result, spark):
    types, text = _bound(sql)
    assert types == [result] and spark in text, text


def test_format_writes_each_argument_as_its_output_function_does():
    types, text = _bound("SELECT format('%s %s %s', x, n = 1, s) FROM t")
    assert types == ["text"] and "'t'" in text and "sparkwire_format(" in text


def _sqlglot(sql: str) -> str:
    return pg_compat.rewrite(sqlglot.parse_one(sql, read="postgres")).sql("spark").lower()




def test_sqlglot_path_writes_the_same_calls():
    assert "sparkwire_regexp_replace(s, 'a', 'b', '')" in _sqlglot("SELECT regexp_replace(s, 'a', 'b') FROM t")
    assert "sparkwire_regexp_replace(s, 'a', 'b', x)" in _sqlglot("SELECT regexp_replace(s, 'a', 'b', x) FROM t")
    assert "sparkwire_regexp_like(s, sparkwire_similar_to_escape('a%', '#'))" in _sqlglot(
        "SELECT s SIMILAR TO 'a%' ESCAPE '#' FROM t")
    assert "explode(sparkwire_regexp_split(" in _sqlglot("SELECT regexp_split_to_table(s, ',') FROM t")
    assert "sparkwire_regexp_split(" in _sqlglot("SELECT * FROM regexp_split_to_table('a,b', ',') AS r(w)")


def test_sqlglot_path_marks_array_results_for_their_text():
    tree = pg_compat.rewrite(sqlglot.parse_one("SELECT regexp_match(s, 'a') FROM t", read="postgres"))
    call = tree.find(sqlglot.exp.Anonymous)
    assert call is not None and call.meta.get("pg_array")


def test_sqlglot_path_writes_format_over_its_arguments_text():
    tree = pg_compat.rewrite(sqlglot.parse_one("SELECT format('%s', s) FROM t", read="postgres"))
    call = tree.find(sqlglot.exp.Anonymous)
    assert call is not None and call.name == "sparkwire_format" and call.meta.get("pg_format")


def test_bitwise_not_is_not_taken_for_a_pattern_match():
    types, text = _bound("SELECT ~ n FROM t")
    assert types == ["integer"] and "~" in text
