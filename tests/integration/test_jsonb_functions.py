"""jsonb's functions (to_jsonb, jsonb_build_object/_array, jsonb_agg, jsonb_object_agg,
jsonb_object_keys, jsonb_array_elements(_text), jsonb_each(_text), jsonb_set,
jsonb_strip_nulls, jsonb_pretty) and the operators `jsonb - text[]`, `jsonb - integer` and
`#-`, side by side with PostgreSQL 15 on both front ends, as test_jsonb.py does for the
other operators: the same rows in jsonb's text form, the same SQLSTATE for bad input."""

from __future__ import annotations

import json

import psycopg
import pytest
from psycopg.types.string import TextLoader

from tests.integration.test_jsonb import DOCS
from tests.pgserver import loaded, reference_postgres

VALS = [
    (1, "1.5", 2.5, "a\"b\n", True, "2020-01-02 03:04:05.5", "2020-01-02 03:04:05+00", "2020-01-02", [1, None, 3],
     '{"z": [1, {"y": null}]}'),
    (2, "-0.001", -1e100, "", False, "1999-12-31 23:59:59", "1999-12-31 23:59:59.25+00", "1999-12-31", [],
     "null"),
    (3, None, None, None, None, None, None, None, None, None),
]
BIG = 100_000  # elements of the big document


def _load(conn) -> None:
    for name in ("jsonb", "record"):  # their text as the server sends it
        conn.adapters.register_loader(name, TextLoader)
    conn.execute("CREATE TABLE docs (id integer, j jsonb)")
    for row in DOCS:
        conn.execute("INSERT INTO docs VALUES (%s, %s::jsonb)", row)
    conn.execute("CREATE TABLE vals (id integer, n numeric, f float8, t text, b boolean, ts timestamp, "
                 "tz timestamptz, d date, arr integer[], j jsonb)")
    for row in VALS:
        conn.execute("INSERT INTO vals VALUES (%s, %s::numeric, %s, %s, %s, %s::timestamp, %s::timestamptz, "
                     "%s::date, %s, %s::jsonb)", row)
    conn.execute("CREATE TABLE big (j jsonb)")
    conn.execute("INSERT INTO big VALUES (%s::jsonb)", (json.dumps([{"i": i} for i in range(BIG)]),))


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg, loaded(pg.dsn, _load, "SET TimeZone = 'UTC'") as conn:
        yield conn


@pytest.fixture(scope="module")
def sparkwire(server):
    with loaded(server.dsn, _load) as conn:
        yield conn


@pytest.fixture(params=["sqlglot", "postgres"])
def ours(request, sparkwire):
    sparkwire.execute(f"SET sql_frontend = {request.param}")
    return sparkwire


def _rows(conn, sql):
    return sorted(conn.execute(sql).fetchall(), key=repr)


QUERIES = [
    "SELECT id, to_jsonb(j), to_jsonb(id), to_jsonb(j #> '{b}') FROM docs",
    ("SELECT id, to_jsonb(n), to_jsonb(f), to_jsonb(t), to_jsonb(b), to_jsonb(ts), to_jsonb(tz), to_jsonb(d), "
    "to_jsonb(arr), to_jsonb(j) FROM vals"),
    ("SELECT to_jsonb(1.50), to_jsonb('x'::text), to_jsonb(true), to_jsonb(NULL::int), to_jsonb(ARRAY[1, NULL]), "
    "to_jsonb('{\"b\": 1, \"a\": []}'::json), to_jsonb('2020-01-02 03:04:05.5'::timestamp), to_jsonb(ARRAY['a'])"),
    ("SELECT id, jsonb_build_object('a', id, 'b', j, 'c', NULL, 'a', 2), jsonb_build_array(id, j, 'x', NULL, 1.5) "
    "FROM docs"),
    ("SELECT jsonb_build_object(), jsonb_build_array(), "
    "jsonb_build_object(1, 2, true, 'x', 1.5::float8, '2020-01-01'::date, 'k', '[1]'::jsonb)"),
    "SELECT id, jsonb_build_object('n', n, 'f', f, 't', t, 'ts', ts, 'arr', arr), jsonb_build_array(b, d, tz) FROM vals",
    "SELECT id, jsonb_agg(j) FROM docs GROUP BY id",
    "SELECT jsonb_agg(j ORDER BY id), jsonb_agg(id ORDER BY id DESC) FROM docs",
    "SELECT jsonb_agg(id) FROM docs WHERE id > 100",
    "SELECT jsonb_object_agg(id, j) FROM docs",
    "SELECT jsonb_object_agg(t, n), jsonb_object_agg(b, arr) FROM vals WHERE t IS NOT NULL",
    "SELECT jsonb_object_keys(j) FROM docs WHERE id IN (1, 2)",
    "SELECT DISTINCT jsonb_object_keys(j) FROM docs WHERE id IN (1, 2)",
    "SELECT id, jsonb_array_elements(j) FROM docs WHERE id IN (3, 4)",
    "SELECT id, jsonb_array_elements_text(j) FROM docs WHERE id IN (3, 4)",
    "SELECT jsonb_array_elements(j) ->> 'a' FROM docs WHERE id = 3",
    "SELECT id, jsonb_each(j) FROM docs WHERE id IN (1, 2)",
    "SELECT id, jsonb_each_text(j) FROM docs WHERE id IN (1, 2)",
    "SELECT jsonb_object_keys('{\"b\": 1, \"aa\": 2, \"a\": 3}')",
    "SELECT * FROM jsonb_each('{\"a\": 1, \"b\": [2], \"c\": null}')",
    "SELECT * FROM jsonb_each_text('{\"a\": 1, \"b\": [2], \"c\": null}') AS e(k)",
    "SELECT * FROM jsonb_array_elements_text('[1, \"x\", null]') AS e(v)",
    "SELECT k FROM jsonb_object_keys('{\"a\": 1, \"bb\": 2}') AS k",
    "SELECT e.* FROM jsonb_array_elements('[{\"a\": 1}, 2]') e",
    "SELECT d.id, e.key, e.value FROM docs d, jsonb_each(d.j) e WHERE d.id IN (1, 2)",
    "SELECT d.id, v FROM docs d, jsonb_each_text(d.j) AS e(k, v) WHERE d.id IN (1, 2) AND k <> 'a'",
    "SELECT d.id, e.value FROM docs d CROSS JOIN LATERAL jsonb_array_elements(d.j) e WHERE d.id IN (3, 4)",
    "SELECT d.id, e.value FROM docs d LEFT JOIN LATERAL jsonb_array_elements_text(d.j) e ON true WHERE d.id IN (3, 4)",
    ("SELECT id, jsonb_set(j, '{a}', '[9]'), jsonb_set(j, '{b,0}', '\"x\"', false), jsonb_set(j, '{zz}', '1'), "
    "jsonb_set(j, '{-1}', '0') FROM docs WHERE id IN (1, 2)"),
    ("SELECT jsonb_set('{\"a\": [1, 2]}', '{a,-9}', 'true'), jsonb_set('[]', '{5}', '{\"k\": null}'), "
    "jsonb_set('{\"a\": 1}', '{a}', NULL)"),
    "SELECT id, jsonb_strip_nulls(j), jsonb_pretty(j) FROM docs",
    "SELECT id, j - '{a,b}'::text[], j #- '{b,2,c}', j #- '{bb,d}', j #- '{}' FROM docs WHERE id IN (1, 2)",
    ("SELECT id, j - '{a,b}'::text[], j #- '{3,0}', j #- '{-1}', jsonb_set(j, '{0}', '[0]'), "
    "jsonb_set(j, '{-9}', 'null') FROM docs WHERE id IN (3, 4)"),
    "SELECT id, j - 1, j - -1, j - 0 FROM docs WHERE id IN (3, 4)",
    "SELECT '{\"a\": 1, \"{a}\": 2}'::jsonb - '{a}', '[\"a\", \"b\"]'::jsonb - ARRAY['b', NULL]",
    "SELECT count(*), min(e.value ->> 'i'), max(e.value ->> 'i') FROM big b, jsonb_array_elements(b.j) e",
    ("SELECT jsonb_array_length(j - 0), jsonb_array_length(jsonb_set(j, '{-1}', '0')), "
    "jsonb_array_length(j #- '{5}') FROM big"),
]


@pytest.mark.parametrize("sql", QUERIES)
def test_same_answers_as_postgres(postgres, ours, sql):
    assert _rows(ours, sql) == _rows(postgres, sql)


@pytest.mark.parametrize("sql", [
    "SELECT jsonb_build_object('a', 1, 'b')",
    "SELECT jsonb_build_object(NULL::text, 1)",
    "SELECT jsonb_build_object(j, 1) FROM docs WHERE id = 1",
    "SELECT jsonb_build_object(arr, 1) FROM vals WHERE id = 1",
    "SELECT jsonb_object_agg(t, n) FROM vals",
    "SELECT jsonb_object_keys(j) FROM docs WHERE id IN (1, 3)",
    "SELECT jsonb_array_elements(j) FROM docs WHERE id = 1",
    "SELECT * FROM jsonb_each('[1]')",
    "SELECT * FROM docs d, jsonb_array_elements_text(d.j) e WHERE d.id IN (1, 3)",
    "SELECT jsonb_set(j, '{b,x}', '1') FROM docs WHERE id = 1",
    "SELECT jsonb_set(j, ARRAY['a', NULL], '1') FROM docs WHERE id = 1",
    "SELECT jsonb_set('1', '{a}', '1')",
    "SELECT jsonb_set('{}', '{a}', 'nope')",
    "SELECT j - 1 FROM docs WHERE id = 1",
    "SELECT j - '{a}'::text[] FROM docs WHERE id = 6",
    "SELECT j #- '{a}' FROM docs WHERE id = 6",
    "SELECT j #- '{b,x}' FROM docs WHERE id = 1",
    "SELECT to_jsonb('x')",
    "SELECT jsonb_strip_nulls('{')",
])
def test_same_errors_as_postgres(postgres, ours, sql):
    with pytest.raises(psycopg.Error) as theirs:
        postgres.execute(sql)
    with pytest.raises(psycopg.Error) as mine:
        ours.execute(sql)
    assert mine.value.sqlstate == theirs.value.sqlstate, str(mine.value)
    assert mine.value.diag.message_primary == theirs.value.diag.message_primary
    assert ours.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.parametrize("sql", [
    "SELECT j @? '$.a' FROM docs",
    "SELECT j @@ '$.a == 1' FROM docs",
    "SELECT jsonb_build_object(VARIADIC ARRAY['a', 'b'])",
    "SELECT id FROM docs WHERE jsonb_object_keys(j) = 'a'",  # PostgreSQL: not allowed in WHERE, 0A000
])
def test_refused_rather_than_answered_differently(ours, sql):
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        ours.execute(sql)
    assert ours.execute("SELECT 1").fetchone() == (1,)


def test_set_returning_functions_in_lockstep_on_the_front_end(postgres, sparkwire):
    # The older path refuses two set-returning functions in one select list (0A000); the
    # front end runs them in lockstep as PostgreSQL does, its errors PostgreSQL's too.
    sparkwire.execute("SET sql_frontend = sqlglot")
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        sparkwire.execute("SELECT jsonb_array_elements(j), jsonb_object_keys(j) FROM docs WHERE id = 3")
    sparkwire.execute("SET sql_frontend = postgres")
    sql = """SELECT id, jsonb_array_elements(j), jsonb_object_keys('{"x": 1, "y": 2}') FROM docs WHERE id IN (3, 4)"""
    assert _rows(sparkwire, sql) == _rows(postgres, sql)
    with pytest.raises(psycopg.Error) as theirs:
        postgres.execute("SELECT jsonb_array_elements(j), jsonb_object_keys(j) FROM docs WHERE id = 3")
    with pytest.raises(psycopg.Error) as mine:
        sparkwire.execute("SELECT jsonb_array_elements(j), jsonb_object_keys(j) FROM docs WHERE id = 3")
    assert (mine.value.sqlstate, mine.value.diag.message_primary) == (
        theirs.value.sqlstate, theirs.value.diag.message_primary)


def test_untyped_arguments_on_the_sqlglot_path(postgres, sparkwire):
    # The sqlglot path cannot type `id + 1`: 0A000 there; the postgres front end types it.
    sql = "SELECT to_jsonb(id + 1), jsonb_build_array(id * 2) FROM docs"
    sparkwire.execute("SET sql_frontend = sqlglot")
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        sparkwire.execute(sql)
    sparkwire.execute("SET sql_frontend = postgres")
    assert _rows(sparkwire, sql) == _rows(postgres, sql)


def test_postgres_front_end_sends_jsonb_typed(sparkwire):
    sparkwire.execute("SET sql_frontend = postgres")
    cur = sparkwire.execute("SELECT to_jsonb(id), jsonb_build_object('k', j), jsonb_set(j, '{0}', '2'), "
                            "j - 1, jsonb_pretty(j) FROM docs WHERE id = 4")
    assert [d.type_code for d in cur.description] == [3802, 3802, 3802, 3802, 25]
    assert cur.fetchall() == [("4", '{"k": []}', "[2]", "[]", "[\n]")]
