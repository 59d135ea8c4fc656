"""jsonb's operators side by side with PostgreSQL 15, on both front ends.

The same table of jsonb documents (objects, arrays, scalars, nested values, a JSON null
and an SQL NULL) on sparkwire and on a real PostgreSQL; every query must give the same
rows in jsonb's text form (keys by length then bytes, `", "` and `": "`), on the default
sqlglot path and with `SET sql_frontend = postgres`."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.string import TextLoader

from tests.pgserver import loaded, reference_postgres

DOCS = [
    (1, '{"a": 1, "b": [1, 2, {"c": "x"}], "bb": {"d": null}}'),
    (2, '{"a": 2.0, "e": true}'),
    (3, '["a", "b", 1, [1, 2], {"a": 1}]'),
    (4, '[]'),
    (5, '"a"'),
    (6, '1'),
    (7, 'null'),
    (8, None),
]


def _load(conn) -> None:
    conn.adapters.register_loader("jsonb", TextLoader)  # jsonb's text as the server sends it
    conn.execute("CREATE TABLE docs (id integer, j jsonb)")
    for row in DOCS:
        conn.execute("INSERT INTO docs VALUES (%s, %s::jsonb)", row)


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg, loaded(pg.dsn, _load) as conn:
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
    "SELECT id, j @> '{\"a\": 1}' FROM docs",
    "SELECT id, j @> '{\"b\": [{\"c\": \"x\"}]}', j @> '{\"b\": [3]}', j @> '{\"bb\": {}}' FROM docs",
    "SELECT id, j @> '[\"a\", [2]]', j @> '\"a\"', j @> '1', j @> '[1]' FROM docs",
    "SELECT id, j <@ '{\"a\": 1, \"b\": [1, 2, {\"c\": \"x\"}], \"bb\": {\"d\": null}, \"z\": 0}' FROM docs",
    "SELECT id, j ? 'a', j ? 'b', j ? 'd' FROM docs",
    "SELECT id, j ?| '{a,zz}', j ?& '{a,b}', j ?& '{}', j ?| '{}' FROM docs",
    "SELECT id, j #> '{b,2}', j #> '{b,-1,c}', j #> '{bb}', j #> '{0}', j #> '{}' FROM docs",
    "SELECT id, j #> '{a,b}', j #> '{3,1}', j #> '{nope}' FROM docs",
    "SELECT id, j - 'a', j - 'bb' FROM docs WHERE id <= 4",
    "SELECT id, j || '{\"a\": [9], \"zz\": 1}'::jsonb, j || '[1, \"q\"]'::jsonb, j || '2'::jsonb FROM docs",
    "SELECT '{\"b\": 1, \"aa\": 2}'::jsonb || '{\"b\": {\"c\": 3}}'::jsonb, '\"s\"'::jsonb || '[]'::jsonb",
    "SELECT id FROM docs WHERE j @> '{\"a\": 2}' OR j ? 'b'",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_same_answers_as_postgres(postgres, ours, sql):
    assert _rows(ours, sql) == _rows(postgres, sql)


def test_column_concat_merges_as_postgres(postgres, ours):
    # jsonb || jsonb of two columns: a merge, where the text's concatenation would be wrong
    sql = "SELECT a.id, b.id, a.j || b.j FROM docs a, docs b WHERE a.id IN (1, 3, 5) AND b.id IN (2, 4, 6)"
    assert _rows(ours, sql) == _rows(postgres, sql)


def test_jsonb_column_through_a_subquery(postgres, sparkwire):
    # The sqlglot path cannot type a subquery's column: it refuses rather than concatenate text.
    sql = "SELECT id, j || '[0]' FROM (SELECT id, j FROM docs) s"
    sparkwire.execute("SET sql_frontend = postgres")
    assert _rows(sparkwire, sql) == _rows(postgres, sql)
    sparkwire.execute("SET sql_frontend = sqlglot")
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        sparkwire.execute(sql)


@pytest.mark.parametrize("sql, sqlstate", [
    ("SELECT j - 'a' FROM docs WHERE id = 6", "22023"),  # cannot delete from scalar
    ("SELECT '{}'::jsonb @> 'not json'", "22P02"),
])
def test_same_errors_as_postgres(postgres, ours, sql, sqlstate):
    with pytest.raises(psycopg.Error) as theirs:
        postgres.execute(sql)
    with pytest.raises(psycopg.Error) as mine:
        ours.execute(sql)
    assert theirs.value.sqlstate == mine.value.sqlstate == sqlstate, str(mine.value)
    assert ours.execute("SELECT 1").fetchone() == (1,)


def test_postgres_front_end_sends_jsonb_typed(sparkwire):
    # The postgres front end types the results as PostgreSQL does (the sqlglot path sends text).
    sparkwire.execute("SET sql_frontend = postgres")
    cur = sparkwire.execute("SELECT j #> '{a}', j || j, j - 'a', j @> j FROM docs WHERE id = 1")
    assert [d.type_code for d in cur.description] == [3802, 3802, 3802, 16]
    assert cur.fetchall() == [("1", '{"a": 1, "b": [1, 2, {"c": "x"}], "bb": {"d": null}}',
                               '{"b": [1, 2, {"c": "x"}], "bb": {"d": null}}', True)]
