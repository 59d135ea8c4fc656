"""Row values (planner/sql/bind_records.py, spark_records.py): whole-row references and ROW(…)
as arguments of the json and jsonb functions, as values in the select list, in row comparisons
and IS NULL, bound and written as Spark SQL without Spark. The answers are compared with
PostgreSQL 15 in tests/slt/own/records.test and own/row_values.test."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import bind, json_checks, spark_sql
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
    "SELECT t FROM t ORDER BY t NULLS FIRST",  # NULLS FIRST/LAST: the whole row's, not its fields'
    "SELECT DISTINCT ROW(id) FROM t",  # grouping, DISTINCT: its text does not compare as its fields
    "SELECT count(*) FROM t GROUP BY ROW(id, id)",
    "SELECT ROW(1, 2) = (SELECT ROW(1, 2))",  # a row from a subquery: its text
])
def test_a_row_anywhere_else_is_left_to_the_older_path(sql):
    with pytest.raises(p.NotYet):
        rel = _bound(sql)
        json_checks.check(rel)
        _spark(sql)


def test_ordering_by_a_row_value_orders_by_its_fields():
    # record_cmp: field by field, a NULL field above any value
    top = _first_top(_bound("SELECT id FROM t ORDER BY (id, id + 1) DESC"))
    assert [(k.descending, k.nulls_first) for k in top.order] == [(True, True), (True, True)]
    top = _first_top(_bound("SELECT t FROM t ORDER BY t"))  # a whole row: each of its columns
    assert len(top.order) > 1 and all((k.descending, k.nulls_first) == (False, False) for k in top.order)


def _first_top(rel):
    while not isinstance(rel, p.TopK):
        rel = rel.input
    return rel


def test_a_row_in_the_select_list_is_its_record_out_text():
    rel = _bound("SELECT t FROM t")
    assert [c.type.oid for c in p.columns(rel)] == [2249]
    text = _spark("SELECT t FROM t")
    # each field's output text, quoted where record_out quotes it, NULL as nothing
    assert "ARRAY_JOIN(TRANSFORM(ARRAY(CAST(t0.c0 AS STRING), CAST(t0.c1 AS STRING))" in text
    assert r"""RLIKE '[",()\\\\\\s]'""" in text
    assert _spark("SELECT ROW()").endswith("'()' AS STRING) AS c0")


def _where(sql: str) -> p.Expr:
    rel = _bound(sql)
    return next(n.predicate for n in p.nodes(rel) if isinstance(n, p.Filter))


def test_row_equality_is_every_pair_equal_and_ordering_the_first_pair_that_differs():
    equal = _where("SELECT 1 FROM t WHERE (id, name) = (1, 'x')")
    assert isinstance(equal, p.BoolOp) and equal.kind is p.BoolKind.AND and len(equal.args) == 2
    unequal = _where("SELECT 1 FROM t WHERE (id, name) <> (1, 'x')")
    assert unequal.kind is p.BoolKind.OR
    less = _where("SELECT 1 FROM t WHERE (id, name) < (1, 'x')")
    assert isinstance(less, p.Case) and len(less.whens) == 6  # per pair: a NULL, <, >
    assert less.default == p.Literal(False, less.type)
    assert _where("SELECT 1 FROM t WHERE (id, name) <= (1, 'x')").default == p.Literal(True, less.type)


def test_an_untyped_literal_in_a_row_takes_the_other_side_s_type():
    less = _where("SELECT 1 FROM t WHERE (id, 'x') > (1, name)")
    assert less.whens[4][0].args[0].type.base.name == "text"  # name > 'x': text > text
    with pytest.raises(SqlError) as err:
        _bound("SELECT ROW(1, 'x') = ROW(1, 1)")
    assert err.value.sqlstate == "22P02"  # 'x' read as an integer, as PostgreSQL does


@pytest.mark.parametrize(("sql", "state"), [
    ("SELECT ROW(1, 2) = ROW(1)", "42601"),  # unequal number of entries in row expressions
    ("SELECT ROW(1, 2) + ROW(1, 2)", "42804"),  # row comparison operator must yield type boolean
    ("SELECT ROW('a') ~~ ROW('b')", "0A000"),  # could not determine interpretation of …
    ("SELECT ROW(1)::integer", "42846"),  # cannot cast type record to integer
    ("SELECT ARRAY[ROW(1)]", "0A000"),
    ("SELECT (SELECT ROW(1)) IS NULL", "0A000"),  # its fields are not known here
])
def test_what_postgresql_refuses_of_rows(sql, state):
    with pytest.raises(SqlError) as err:
        _bound(sql)
    assert err.value.sqlstate == state


def test_a_row_is_null_when_every_field_is():
    test = next(e for e in p.nodes(_bound("SELECT ROW(id, ROW(name)) IS NULL FROM t")) if isinstance(e, p.Map)).exprs[-1]
    assert test == p.BoolOp(p.BoolKind.AND, (p.IsNull(p.ColRef(0, 0, test.args[0].arg.type), False, test.type),
                                             p.Literal(False, test.type)), test.type)


def test_an_unknown_name_is_still_an_unknown_column():
    with pytest.raises(SqlError) as err:
        _bound("SELECT row_to_json(nosuch) FROM t")
    assert (err.value.sqlstate, err.value.message) == ("42703", 'column "nosuch" does not exist')
