"""Arrays on the front end of our own (planner.sql.bind_arrays), without Spark or sockets:
ARRAY[...], subscripts and slices, op ANY/ALL (array), the array operators, polymorphic
resolution, and the Spark SQL they become."""

from __future__ import annotations

import pytest

from planner import operators, pg_parse, spark_guard
from planner.errors import SqlError
from planner.sql import bind, coerce, spark_sql
from planner.sql import plan as p
from planner.types import column_type

INT, TEXT, UNKNOWN = coerce.INTEGER, coerce.TEXT, coerce.UNKNOWN
INT_ARRAY = coerce.named("integer[]")

TABLES = {"arr": (("id", "integer"), ("a", "integer[]"), ("t", "text[]"), ("n", "numeric"))}


class _Catalog:
    def relation(self, schema, name):
        cols = TABLES.get(name)
        if cols is None or schema not in (None, "public"):
            return None
        return bind.Relation(name, tuple(p.Column(n, column_type(t.removesuffix("[]"), (), t.endswith("[]")))
                                         for n, t in cols))


def _bind(sql: str) -> p.Rel:
    return bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))


def _shape(sql: str) -> list[tuple[str, str]]:
    return [(c.name, c.type.display()) for c in p.columns(_bind(sql))]


def _exprs(sql: str) -> tuple[p.Expr, ...]:
    """The select list's expressions (the top Map's)."""
    rel = _bind(sql)
    while not isinstance(rel, p.Map):
        rel = rel.input
    return rel.exprs


def _spark(sql: str) -> str:
    rel = _bind(sql)
    text = spark_sql.to_spark(rel, lambda name: name, [c.type for c in p.columns(rel)])
    spark_guard.check_calls(text)  # only functions our catalogs let generated SQL call
    return text


def _error(sql: str) -> SqlError:
    with pytest.raises(SqlError) as err:
        _bind(sql)
    assert not isinstance(err.value, p.NotYet), err.value.message
    return err.value


@pytest.mark.parametrize("sql, shape", [
    ("SELECT ARRAY[1, 2]", [("array", "integer[]")]),
    ("SELECT ARRAY['a', NULL]", [("array", "text[]")]),  # unknown literals resolve as text
    ("SELECT ARRAY[NULL]", [("array", "text[]")]),
    ("SELECT ARRAY[1, 2.5::float8]", [("array", "double precision[]")]),
    ("SELECT ARRAY[1::smallint, 2::bigint]", [("array", "bigint[]")]),
    ("SELECT ARRAY[]::int[]", [("array", "integer[]")]),
    ("SELECT ARRAY['1', '2']::int[]", [("array", "integer[]")]),
    ("SELECT ARRAY[1, 2]::text", [("array", "text")]),
    ("SELECT ARRAY[1] AS x", [("x", "integer[]")]),
    ("SELECT (ARRAY[10, 20])[1]", [("array", "integer")]),
    ("SELECT a[1], t[2], a[1:2], a[:2], a[2:] FROM arr",
     [("a", "integer"), ("t", "text"), ("a", "integer[]"), ("a", "integer[]"), ("a", "integer[]")]),
    ("SELECT (a || 1)[1] FROM arr", [("?column?", "integer")]),
    ("SELECT array_cat(NULL::int[], ARRAY[1])", [("array_cat", "integer[]")]),
    ("SELECT ARRAY[1, 2] || 3, 0 || ARRAY[1], ARRAY[1] || ARRAY[2]",
     [("?column?", "integer[]"), ("?column?", "integer[]"), ("?column?", "integer[]")]),
    ("SELECT 1 = ANY(ARRAY[1, 2]), 1 <> ALL(a) FROM arr", [("?column?", "boolean"), ("?column?", "boolean")]),
    ("SELECT array_append(ARRAY[1], 2::bigint)", [("array_append", "bigint[]")]),  # anycompatible: common type
    ("SELECT pg_typeof(ARRAY['a'])", [("pg_typeof", "text")]),
])
def test_array_expressions_have_postgresqls_types_and_names(sql, shape):
    assert _shape(sql) == shape


def test_pg_typeof_of_an_array_names_the_array_type():
    (e,) = _exprs("SELECT pg_typeof(ARRAY[1])")
    assert e == p.Literal("integer[]", TEXT)


def test_array_elements_take_the_common_type():
    (e,) = _exprs("SELECT ARRAY[1, 2::bigint, NULL]")
    assert isinstance(e, p.ArrayExpr) and e.type.display() == "bigint[]"
    assert [x.type.display() for x in e.elements] == ["bigint"] * 3
    assert e.elements[2] == p.Literal(None, coerce.BIGINT)
    # a cast of the constructor casts each element, as PostgreSQL's transformArrayExpr does
    (e,) = _exprs("SELECT ARRAY['1', '2']::int[]")
    assert e == p.ArrayExpr((p.Literal(1, INT), p.Literal(2, INT)), INT_ARRAY)


@pytest.mark.parametrize("sql, oid", [
    ("SELECT ARRAY[1] || 3", 349),  # array_append
    ("SELECT 0 || ARRAY[1]", 374),  # array_prepend
    ("SELECT ARRAY[1] || ARRAY[2]", 375),  # array_cat
    ("SELECT ARRAY[1] || NULL", 375),  # the unknown is taken as the other side's array type
    ("SELECT NULL || ARRAY[1]", 375),
    ("SELECT ARRAY[1] || '{2}'", 375),
    ("SELECT ARRAY[1] @> ARRAY[1]", 2751),
    ("SELECT ARRAY[1] <@ ARRAY[1]", 2752),
    ("SELECT ARRAY[1] && ARRAY[1]", 2750),
    ("SELECT ARRAY[1] = ARRAY[1]", 1070),
])
def test_array_operators_as_postgresql_resolves_them(sql, oid):
    (e,) = _exprs(sql)
    assert isinstance(e, p.OpCall) and e.op.oid == oid


@pytest.mark.parametrize("args, identity", [
    ([INT_ARRAY, UNKNOWN], "anycompatiblearray || anycompatiblearray"),
    ([UNKNOWN, INT_ARRAY], "anycompatiblearray || anycompatiblearray"),
    ([INT_ARRAY, INT], "anycompatiblearray || anycompatible"),
    ([INT, INT_ARRAY], "anycompatible || anycompatiblearray"),
    ([INT_ARRAY, coerce.BIGINT], "anycompatiblearray || anycompatible"),
])
def test_concatenation_overloads(args, identity):
    assert coerce.resolve_operator("||", operators.overloads("||"), args).identity == identity


def test_polymorphic_arguments_must_agree():
    bigint_array = coerce.named("bigint[]")
    # anyarray takes one array type exactly; anycompatiblearray the common type
    assert coerce.param_types(("anyarray", "anyarray"), [INT_ARRAY, INT_ARRAY]) == [INT_ARRAY, INT_ARRAY]
    assert coerce.param_types(("anycompatiblearray", "anycompatible"), [INT_ARRAY, coerce.BIGINT]) == [
        bigint_array, coerce.BIGINT]
    assert coerce.param_types(("anycompatiblearray", "anycompatible"), [UNKNOWN, UNKNOWN]) == [
        coerce.named("text[]"), TEXT]
    with pytest.raises(SqlError) as err:
        coerce.param_types(("anyarray", "integer"), [UNKNOWN, INT])
    assert (err.value.sqlstate, err.value.message) == (
        "42804", "could not determine polymorphic type because input has type unknown")
    for args in ([TEXT, INT_ARRAY], [INT_ARRAY, TEXT]):
        with pytest.raises(SqlError) as err:
            coerce.resolve_operator("||", operators.overloads("||"), args)
        assert err.value.sqlstate == "42883"


def test_array_append_coerces_its_arguments_to_the_common_type():
    (e,) = _exprs("SELECT array_append(ARRAY[1], 2::bigint)")
    assert isinstance(e, p.Call) and e.args[0] == p.Cast(p.ArrayExpr((p.Literal(1, INT),), INT_ARRAY),
                                                          coerce.named("bigint[]"))


def test_any_and_all_over_an_array():
    (any_, all_) = _exprs("SELECT 1 = ANY(ARRAY[2]), id <> ALL(a) FROM arr")
    assert isinstance(any_, p.ArrayCompare) and not any_.all and any_.op.identity == "integer = integer"
    assert isinstance(all_, p.ArrayCompare) and all_.all and all_.op.identity == "integer <> integer"
    # an untyped array literal is read as the array of the operator's right operand
    (e,) = _exprs("SELECT 1 = ANY('{1,2}')")
    assert e.array == p.Literal([1, 2], INT_ARRAY)
    # the left operand and the elements are coerced to the operator's types
    (e,) = _exprs("SELECT 2.5 > ANY(ARRAY[1, 3])")
    assert e.op.identity == "numeric > numeric" and e.array.type.display() == "numeric[]"
    (e,) = _exprs("SELECT 'b' LIKE ANY(ARRAY['a%'])")
    assert e.op.name == "~~" and e.lhs == p.Literal("b", TEXT)


def test_subscripts_are_integers():
    (e,) = _exprs("SELECT a['2'] FROM arr")
    assert isinstance(e, p.Subscript) and e.index == p.Literal(2, INT)
    (e,) = _exprs("SELECT a[id::bigint] FROM arr")
    assert e.index.type == INT and isinstance(e.index, p.Cast)  # an assignment cast, as PostgreSQL's
    (e,) = _exprs("SELECT a[:2] FROM arr")
    assert isinstance(e, p.Slice) and e.lower is None and e.upper == p.Literal(2, INT)


@pytest.mark.parametrize("sql, sqlstate, message", [
    ("SELECT ARRAY[]", "42P18", "cannot determine type of empty array"),
    ("SELECT ARRAY[[1, 2], [3, 4]]", "0A000", "multidimensional arrays are not supported"),
    ("SELECT ARRAY[a, a] FROM arr", "0A000", "multidimensional arrays are not supported"),
    ("SELECT ARRAY[1, 'a'::text]", "42804", "ARRAY types integer and text cannot be matched"),
    ("SELECT (1)[1]", "42804", "cannot subscript type integer because it does not support subscripting"),
    ("SELECT a['x'::text] FROM arr", "42804", "array subscript must have type integer"),
    ("SELECT 1 = ANY(1)", "42809", "op ANY/ALL (array) requires array on right side"),
    ("SELECT 1 + ANY(ARRAY[1])", "42809", "op ANY/ALL (array) requires operator to yield boolean"),
    ("SELECT ARRAY[1] @> ARRAY[1::bigint]", "42883", "operator does not exist: integer[] @> bigint[]"),
    ("SELECT ARRAY[1] = ARRAY['a'::text]", "42883", "operator does not exist: integer[] = text[]"),
    ("SELECT ARRAY[1] || 'x'::text", "42883", "operator does not exist: integer[] || text"),
    ("SELECT array_length(NULL, 1)", "42804", "could not determine polymorphic type because input has type unknown"),
])
def test_array_errors_are_postgresqls(sql, sqlstate, message):
    err = _error(sql)
    assert (err.sqlstate, err.message) == (sqlstate, message)


def test_the_empty_array_hint():
    assert _error("SELECT ARRAY[]").hint == "Explicitly cast to the desired type, for example ARRAY[]::integer[]."


@pytest.mark.parametrize("sql", [
    "SELECT a[1][1] FROM arr",  # two subscripts
    "SELECT ARRAY(SELECT 1)",  # ARRAY(subquery)
    "SELECT ARRAY[1.5, 2]",  # numeric elements keep their own scales in PostgreSQL
    "SELECT ARRAY[n] FROM arr",
    "SELECT unnest(a), count(*) FROM arr GROUP BY 1",  # set-returning beside an aggregate
    "SELECT ('{\"a\": 1}'::jsonb)['a']",  # jsonb subscripting
])
def test_shapes_not_covered_yet_take_the_older_path(sql):
    with pytest.raises(p.NotYet):
        _bind(sql)


@pytest.mark.parametrize("sql", [
    "SELECT (SELECT 1) = ANY(ARRAY[1])",
    "SELECT 1 = ANY(ARRAY[(SELECT 1)])",
    "SELECT ARRAY[(SELECT 1)] @> ARRAY[1]",
    "SELECT array_to_string(ARRAY[(SELECT true)], ',')",
])
def test_a_subquery_inside_a_spark_lambda_takes_the_older_path(sql):
    _bind(sql)  # bound; Spark refuses subqueries in higher-order functions
    with pytest.raises(p.NotYet):
        _spark(sql)


def test_spark_sql_gives_postgresqls_answers_at_the_edges():
    text = _spark("SELECT a[id] FROM arr")
    assert "IF((t0.c0) >= 1, TRY_ELEMENT_AT((t0.c1), (t0.c0)), NULL)" in text  # no error for 0 or past the end
    text = _spark("SELECT 1 = ANY(a), 1 <> ALL(a) FROM arr")
    assert "EXISTS(t0.c1, sw_any0 -> ((1) = (sw_any0)))" in text
    assert "FORALL(t0.c1, sw_any1 -> ((1) <> (sw_any1)))" in text
    assert "CAST(ARRAY() AS ARRAY<INT>)" in _spark("SELECT ARRAY[]::int[]")
    text = _spark("SELECT a[2:3] FROM arr")
    assert "SLICE(" in text and "GREATEST((2), 1)" in text and "LEAST((3), SIZE((t0.c1)))" in text
    assert "IS NULL THEN NULL" in text  # a NULL bound gives NULL (greatest/least would skip it)
    # array || array leaves a NULL side out; array || element appends to an empty array for NULL
    assert "CASE WHEN (ARRAY(1)) IS NULL THEN" in _spark("SELECT ARRAY[1] || ARRAY[2]")
    assert "ARRAY_APPEND(COALESCE((t0.c1), ARRAY()), (t0.c0))" in _spark("SELECT a || id FROM arr")
    assert "FORALL(" in _spark("SELECT a @> ARRAY[1] FROM arr")


def test_array_agg_of_arrays_is_multidimensional_and_not_covered_yet():
    assert _shape("SELECT array_agg(a) FROM arr") == [("array_agg", "integer[]")]
    with pytest.raises(p.NotYet):
        _spark("SELECT array_agg(a) FROM arr")


def test_arrays_sort_with_null_elements_last():
    text = _spark("SELECT a FROM arr ORDER BY a DESC")
    assert "ORDER BY TRANSFORM(t0.c1, sw_o -> NAMED_STRUCT('n', sw_o IS NULL, 'v', sw_o)) DESC" in text
    assert "ORDER BY t0.c0" in _spark("SELECT a FROM arr ORDER BY id")

    text = _spark("SELECT max(a) FROM arr")  # in the same order, then back to the arrays
    assert "TRANSFORM((MAX((TRANSFORM(t1.c1, sw_o -> NAMED_STRUCT('n', sw_o IS NULL, 'v', sw_o))))), sw_o -> sw_o.v)" in text
