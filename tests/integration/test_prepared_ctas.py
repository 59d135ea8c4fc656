"""PREPARE / EXECUTE / DEALLOCATE, CREATE TABLE AS / SELECT INTO and pg_typeof, side by side
with a real PostgreSQL 15: the same statements on both give the same rows, command tags,
column names and errors (SQLSTATE and words)."""

from __future__ import annotations

import psycopg
import pytest

from tests.pgserver import reference_postgres


def _load(conn) -> None:
    conn.execute("CREATE TABLE t (a integer, b text, v varchar(5), n numeric(10,2))")
    conn.execute("INSERT INTO t VALUES (1, 'x', 'p', 1.50), (2, 'y', 'q', 2.25), (3, NULL, NULL, NULL)")


@pytest.fixture(scope="module")
def pg():
    with reference_postgres() as server, psycopg.connect(server.dsn, autocommit=True) as conn:
        _load(conn)
        yield conn


@pytest.fixture(scope="module")
def ours(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        _load(conn)
        yield conn


def _run(conn, sql: str):
    """(tag, columns, rows), or ('ERROR', sqlstate, words, detail)."""
    try:
        cur = conn.execute(sql)
    except psycopg.Error as err:
        return ("ERROR", err.sqlstate, err.diag.message_primary, err.diag.message_detail)
    columns = [d.name for d in cur.description] if cur.description else None
    rows = sorted(cur.fetchall(), key=repr) if cur.description else None
    return (cur.statusmessage, columns, rows)


def _same(ours, pg, *statements: str) -> list:
    out = []
    for sql in statements:
        mine, theirs = _run(ours, sql), _run(pg, sql)
        assert mine == theirs, (sql, mine, theirs)
        out.append(mine)
    return out


# -- PREPARE / EXECUTE / DEALLOCATE -----------------------------------------------------------

def test_prepare_and_execute_a_select(ours, pg):
    out = _same(ours, pg,
                "PREPARE sel1(int) AS SELECT a, b FROM t WHERE a = $1",
                "EXECUTE sel1(1)",
                "EXECUTE sel1(1.5)",  # numeric to integer by assignment: rounds to 2
                "EXECUTE sel1('3')",
                "EXECUTE sel1(NULL)",
                "PREPARE sel2 AS SELECT $1::int + 1 AS plus, $2 AS word",
                "EXECUTE sel2('41', 'hi')",
                "PREPARE sel3(text, int) AS SELECT upper($1) AS up, $2 * 2 AS twice",
                "EXECUTE sel3(1 + 1, 2 + 3)")
    assert out[0][0] == "PREPARE"
    assert out[1] == ("SELECT 1", ["a", "b"], [(1, "x")])
    ours.execute("DEALLOCATE ALL")
    pg.execute("DEALLOCATE ALL")


def test_execute_returns_typed_values(ours, pg):
    _same(ours, pg, "PREPARE typed(numeric, varchar, boolean, date) AS SELECT $1 AS n, $2 AS v, $3 AS b, $4 AS d")
    mine = ours.execute("EXECUTE typed(2.5, 'abc', true, '2024-02-29')").fetchone()
    theirs = pg.execute("EXECUTE typed(2.5, 'abc', true, '2024-02-29')").fetchone()
    assert mine == theirs
    for conn in (ours, pg):
        conn.execute("DEALLOCATE typed")


def test_prepared_writes_have_their_command_tags(ours, pg):
    out = _same(ours, pg,
                "CREATE TABLE w (a integer, b text)",
                "PREPARE ins(int, text) AS INSERT INTO w VALUES ($1, $2)",
                "EXECUTE ins(1, 'one')",
                "EXECUTE ins(2, 'two')",
                "PREPARE ins_inferred AS INSERT INTO w VALUES ($1, $2)",
                "EXECUTE ins_inferred(3, 'three')",
                "PREPARE upd AS UPDATE w SET b = $1 WHERE a > $2",
                "EXECUTE upd('big', 1)",
                "PREPARE del(int) AS DELETE FROM w WHERE a = $1",
                "EXECUTE del(3)",
                "SELECT * FROM w",
                "DEALLOCATE PREPARE ins", "DEALLOCATE ins_inferred", "DEALLOCATE upd", "DEALLOCATE del",
                "DROP TABLE w")
    tags = [o[0] for o in out]
    assert tags[2:4] == ["INSERT 0 1", "INSERT 0 1"] and tags[7] == "UPDATE 2" and tags[9] == "DELETE 1"
    assert out[10][2] == [(1, "one"), (2, "big")]


@pytest.mark.parametrize("sql", [
    "EXECUTE nosuch",
    "EXECUTE nosuch(1)",
    "DEALLOCATE nosuch",
    "PREPARE bad AS SELECT * FROM no_such_table",
    "PREPARE bad AS CREATE TABLE x (a int)",
    "PREPARE bad(nosuchtype) AS SELECT $1",
])
def test_bad_prepares_and_unknown_names(ours, pg, sql):
    mine = _same(ours, pg, sql)[0]
    assert mine[0] == "ERROR"


def test_bad_execute_arguments(ours, pg):
    _same(ours, pg, "PREPARE one(int) AS SELECT $1 AS x")
    out = _same(ours, pg,
                "EXECUTE one",  # 42601, "Expected 1 parameters but got 0."
                "EXECUTE one(1, 2)",
                "EXECUTE one(true)",  # 42804: boolean cannot be coerced to integer
                "EXECUTE one('1'::text)",
                "EXECUTE one('abc')",  # 22P02 from integer's input function
                "EXECUTE one(3000000000)",  # 22003
                "PREPARE one AS SELECT 2",  # 42P05
                "EXECUTE one(a)",  # 42703: an argument reads no table
                "EXECUTE one(7)")  # still the first one
    assert [o[1] for o in out[:8]] == ["42601", "42601", "42804", "42804", "22P02", "22003", "42P05", "42703"]
    assert out[8][2] == [(7,)]
    for conn in (ours, pg):
        conn.execute("DEALLOCATE one")


def test_sql_and_protocol_prepared_statements_share_one_namespace(ours):
    ours.execute("PREPARE shared AS SELECT 1")
    with ours.cursor() as cur:
        cur.execute("SELECT 1", prepare=True)  # psycopg's own, named _pg3_n
    assert ours.execute("EXECUTE shared").fetchone() == (1,)
    ours.execute("DEALLOCATE ALL")
    with pytest.raises(psycopg.errors.InvalidSqlStatementName):
        ours.execute("EXECUTE shared")


def test_execute_through_the_extended_protocol_is_described(ours, pg):
    for conn in (ours, pg):
        conn.execute("PREPARE ext(int) AS SELECT a, b FROM t WHERE a <= $1")
    # Parse/Describe/Bind/Execute of the EXECUTE (PostgreSQL takes no $n in a utility statement).
    mine = ours.execute("EXECUTE ext(2)", prepare=True)
    theirs = pg.execute("EXECUTE ext(2)", prepare=True)
    assert [d.name for d in mine.description] == [d.name for d in theirs.description] == ["a", "b"]
    assert sorted(mine.fetchall()) == sorted(theirs.fetchall())
    for conn in (ours, pg):
        conn.execute("DEALLOCATE ext")


# -- CREATE TABLE AS / SELECT INTO ------------------------------------------------------------

_COLUMNS = ("SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = '{}' ORDER BY ordinal_position")


def test_create_table_as_makes_a_table_with_the_querys_columns_and_rows(ours, pg):
    out = _same(ours, pg,
                "CREATE TABLE c1 AS SELECT a, b, a * 2 AS dbl, 'lit' AS l, 1.5::float8 AS f FROM t WHERE a < 3",
                "SELECT * FROM c1",
                _COLUMNS.format("c1"),
                "CREATE TABLE c2 (x, y) AS SELECT a, b FROM t",
                "SELECT * FROM c2",
                "CREATE TABLE c3 (x) AS SELECT a, b FROM t",
                "SELECT x, b FROM c3",
                "CREATE TABLE c4 AS SELECT a FROM t WITH NO DATA",
                "SELECT count(*) FROM c4",
                "CREATE TABLE c5 AS VALUES (1, 'a'), (2, 'b')",
                "SELECT * FROM c5",
                "SELECT a, b INTO c6 FROM t WHERE a = 2",
                "SELECT * FROM c6",
                "INSERT INTO c1 VALUES (9, 'new', 18, 'z', 0.5)",
                "SELECT count(*) FROM c1",
                "CREATE TABLE IF NOT EXISTS c1 AS SELECT 1",
                "DROP TABLE c1, c2, c3, c4, c5, c6")
    assert out[0][0] == "SELECT 2" and out[7][0] == "CREATE TABLE AS" and out[11][0] == "SELECT 1"
    assert out[2][2] == [("a", "integer"), ("b", "text"), ("dbl", "integer"), ("f", "double precision"),
                         ("l", "text")]


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t AS SELECT 1",  # 42P07
    "CREATE TABLE bad AS SELECT 1/0 AS x",  # 22012: the query fails, no table is left
    "CREATE TABLE bad AS SELECT a FROM nosuch",  # 42P01
    "CREATE TABLE bad (x, y, z) AS SELECT a, b FROM t",  # 42601
    "CREATE TABLE bad AS SELECT a, a FROM t",  # 42701
    "CREATE TABLE bad AS SELECT $1",  # 42P02
])
def test_bad_create_table_as_leaves_no_table(ours, pg, sql):
    out = _same(ours, pg, sql, "SELECT * FROM bad")
    assert out[0][0] == "ERROR" and out[1][1] == "42P01"


def test_create_table_as_in_a_transaction_block_commits_or_rolls_back_with_it(ours, pg):
    _same(ours, pg, "BEGIN", "CREATE TABLE tx AS SELECT 42 AS x", "SELECT * FROM tx", "INSERT INTO tx VALUES (43)",
          "SELECT * FROM tx", "ROLLBACK", "SELECT * FROM tx",
          "BEGIN", "CREATE TABLE tx AS SELECT a FROM t", "INSERT INTO t VALUES (4, 'w', 'r', 4.00)",
          "COMMIT", "SELECT * FROM tx", "DELETE FROM t WHERE a = 4", "DROP TABLE tx")


# -- pg_typeof ----------------------------------------------------------------------------------

_TYPEOF = ("SELECT pg_typeof(1) AS i, pg_typeof(1.5) AS n, pg_typeof('x') AS u, pg_typeof('x'::text) AS t, "
           "pg_typeof('x'::varchar) AS v, pg_typeof(1.5::float8) AS d, pg_typeof(now()) AS ts, "
           "pg_typeof(NULL) AS nul, pg_typeof(1::bigint) AS big, pg_typeof(true) AS bo, "
           "pg_typeof(a) AS ca, pg_typeof(b) AS cb, pg_typeof(v) AS cv, pg_typeof(n) AS cn, "
           "pg_typeof(upper(b)) AS fn, pg_typeof(length(b)) AS len, pg_typeof(count(*)) AS c "
           "FROM t WHERE a = 1 GROUP BY a, b, v, n")


@pytest.mark.parametrize("frontend", ["sqlglot", "postgres"])
def test_pg_typeof_names_the_type_as_postgresql(ours, pg, frontend):
    ours.execute(f"SET sql_frontend = {frontend}")
    try:
        mine = ours.execute(_TYPEOF).fetchall()
        assert [tuple(str(v) for v in r) for r in mine] == pg.execute(_TYPEOF).fetchall()
        assert mine[0][:3] == ("integer", "numeric", "unknown")
        _same(ours, pg, "SELECT pg_typeof()", "SELECT pg_typeof(a) FROM t WHERE pg_typeof(a)::text = 'integer'")
    finally:
        ours.execute("RESET sql_frontend")


# Where Spark's typing differs from PostgreSQL's (`1.5 + 1` is double there), the default path
# refuses rather than answer wrongly; the front end of our own types them as PostgreSQL does.
_TYPED_ONLY_BY_OUR_FRONT_END = [
    "SELECT pg_typeof(1.5 + 1)", "SELECT pg_typeof(a / 2) FROM t", "SELECT pg_typeof(coalesce(a, 1)) FROM t",
    "SELECT pg_typeof(avg(a)) FROM t", "SELECT pg_typeof(max(v)) FROM t",
    "SELECT pg_typeof(a) FROM (SELECT b AS a FROM t) AS s",
]


@pytest.mark.parametrize("sql", _TYPED_ONLY_BY_OUR_FRONT_END)
def test_pg_typeof_is_never_a_wrong_answer(ours, pg, sql):
    ours.execute("SET sql_frontend = sqlglot")
    try:
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            ours.execute(sql)
    finally:
        ours.execute("RESET sql_frontend")
    _same(ours, pg, sql)  # the default front end types every expression


def test_create_table_as_keeps_postgresqls_types_with_the_front_end_of_our_own(ours, pg):
    sql = "CREATE TABLE typed_ctas AS SELECT v, n, 'x'::varchar(3) AS w, a / 2 AS half, 1.5::float8 AS f FROM t"
    ours.execute("SET sql_frontend = postgres")
    try:
        _same(ours, pg, sql, _COLUMNS.format("typed_ctas"), "SELECT v, n, w, half FROM typed_ctas",
              "DROP TABLE typed_ctas")
    finally:
        ours.execute("RESET sql_frontend")


def test_pg_prepared_statements_lists_the_sessions_statements(ours, pg):
    listed = ("SELECT name, statement, parameter_types, from_sql, generic_plans FROM pg_prepared_statements "
              "WHERE name LIKE 'pps%' ORDER BY name")
    out = _same(ours, pg,
                "PREPARE pps1(int, varchar) AS SELECT $1, $2",
                "PREPARE pps2 AS INSERT INTO t (a, b) VALUES ($1, $2)",
                listed,
                "DEALLOCATE pps1",
                listed,
                "DEALLOCATE pps2")
    assert out[2][2] == [("pps1", "PREPARE pps1(int, varchar) AS SELECT $1, $2", ["integer", "character varying"],
                          True, 0),
                         ("pps2", "PREPARE pps2 AS INSERT INTO t (a, b) VALUES ($1, $2)", ["integer", "text"],
                          True, 0)]
