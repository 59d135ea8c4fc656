"""Row values (planner/sql/bind_records.py): whole-row references and ROW(…) as arguments of
the json and jsonb functions, bound and written as Spark SQL without Spark. The answers are
compared with PostgreSQL 15 in tests/slt/own/records.test."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.types import column_type

_TABLES = {"t": (("id", "integer"), ("name", "text")), "u": (("t", "integer"), ("v", "text"))}


class _Catalog:
    def relation(self, schema, name):
        if name not in _TABLES:
            return None
        return bind.Relation(name, tuple(p.Column(c, column_type(t)) for c, t in _TABLES[name]))


def _bound(sql: str) -> p.Rel:
    return bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))


def _spark(sql: str) -> str:
    rel = _bound(sql)
    return spark_sql.to_spark(rel, lambda name: name, [c.type for c in p.columns(rel)])


@pytest.mark.parametrize("sql", ["SELECT row_to_json(t) FROM t", "SELECT row_to_json(t.*) FROM t",
                                 "SELECT row_to_json(x) FROM t AS x", "SELECT row_to_json(public.t.*) FROM t"])
def test_a_from_item_named_where_no_column_is_its_row(sql):
    text = _spark(sql)
    assert "SPARKWIRE_JSON_BUILD_ROW(ARRAY('id', 'name')" in text


def test_a_column_of_that_name_wins_over_the_row():
    # u has a column named t: `t` is that column in `FROM t, u`, as in PostgreSQL
    rel = _bound("SELECT to_json(t) FROM t, u")
    assert not p.contains(rel, p.Record)


def test_a_row_constructor_names_its_fields_f1_f2():
    assert "ARRAY('f1', 'f2')" in _spark("SELECT row_to_json(ROW(1, 'x'))")


def test_to_jsonb_of_a_row_is_its_object():
    assert "SPARKWIRE_JSONB_BUILD_OBJECT(ARRAY(SPARKWIRE_JSONB_KEY('id'" in _spark("SELECT to_jsonb(t) FROM t")


def test_json_agg_of_rows_starts_each_row_but_the_first_on_a_new_line():
    text = _spark("SELECT json_agg(t ORDER BY id) FROM t")
    assert "SPARKWIRE_JSON_AGG(" in text and "END), TRUE) AS c0" in text  # json_text.agg's `arrays`


def test_the_row_of_an_outer_join_s_nullable_side_is_refused():
    sql = "SELECT row_to_json(b) FROM t a LEFT JOIN t b ON a.id = b.id"
    with pytest.raises(SqlError) as err:
        _bound(sql)
    assert err.value.sqlstate == "0A000"
    assert err.value.position == sql.index("b)") + 1
    assert _bound("SELECT row_to_json(a) FROM t a LEFT JOIN t b ON a.id = b.id")  # the preserved side


@pytest.mark.parametrize("sql", [
    "SELECT upper(t) FROM t",  # a function that takes no row
    "SELECT ROW(1, 2) = ROW(1, 2)",  # row comparisons: the older path's
    "SELECT t FROM t",  # record output
])
def test_a_row_anywhere_else_is_left_to_the_older_path(sql):
    with pytest.raises(p.NotYet):
        _spark(sql)


def test_an_unknown_name_is_still_an_unknown_column():
    with pytest.raises(SqlError) as err:
        _bound("SELECT row_to_json(nosuch) FROM t")
    assert (err.value.sqlstate, err.value.message) == ("42703", 'column "nosuch" does not exist')
