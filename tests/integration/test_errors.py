"""Bad input gets the right SQLSTATE and a message naming what was wrong; the
session, other sessions and the server all carry on.

One server for the module. Every case runs on the same connection, which must
still answer afterwards; a bystander connection opened before any of them
must too.
"""

from __future__ import annotations

import asyncio

import asyncpg
import psycopg
import pytest
from psycopg import pq

from tests.support import running_server


@pytest.fixture(scope="module")
def setup(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE items (id int NOT NULL, small smallint, price numeric(5,2), "
                  "code varchar(3), name text)")
        c.execute("INSERT INTO items VALUES (1, 1, 1.50, 'abc', 'one'), (2, 0, 2.50, 'de', 'two')")
        c.execute("CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 2")
    return server


@pytest.fixture(scope="module")
def session(setup):
    """One connection shared by every case: errors must not break it."""
    with psycopg.connect(setup.dsn, autocommit=True) as c:
        yield c


@pytest.fixture(scope="module")
def bystander(setup):
    with psycopg.connect(setup.dsn, autocommit=True) as c:
        c.execute("BEGIN")
        c.execute("INSERT INTO items VALUES (100, 1, 1.00, 'byr', 'bystander')")
        yield c


def _usable(conn, full: bool = False) -> None:
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("SELECT 1").fetchone() == (1,)
    if full:
        assert conn.execute("SELECT count(*) FROM items WHERE id IN (1, 2)").fetchone() == (2,)


# (sql, sqlstate, fragments the message must contain)
CASES = [
    ("SELECT 1 +", "42601", ["syntax error at end of input"]),  # PostgreSQL's words
    ("SELECT * FROM items WHERE", "42601", ["syntax error at end of input"]),
    ("SELECT * FROM nowhere", "42P01", ['"nowhere"']),
    ("SELECT a.id FROM items JOIN nowhere a ON true", "42P01", ['"nowhere"']),
    ("INSERT INTO nowhere VALUES (1)", "42P01", ['"nowhere"']),
    ("UPDATE nowhere SET x = 1", "42P01", ['"nowhere"']),
    ("DELETE FROM nowhere", "42P01", ['"nowhere"']),
    ("DROP TABLE nowhere", "42P01", ['"nowhere"']),
    ("SHOW COLUMNS FROM nowhere", "42P01", ['"nowhere"']),
    ("SELECT no_such_col FROM items", "42703", ['"no_such_col"']),
    ("SELECT id FROM items WHERE no_such_col = 1", "42703", ["no_such_col"]),
    ("INSERT INTO items (id, no_such_col) VALUES (1, 2)", "42703", ['"no_such_col"', '"items"']),
    ("UPDATE items SET no_such_col = 1", "42703", ['"no_such_col"']),
    ("CREATE TABLE items (x int)", "42P07", ['"items"']),
    ("CREATE VIEW cheap AS SELECT 1", "42P07", ['"cheap"']),
    ("CREATE TABLE dup_cols (a int, a text)", "42701", ['"a"']),
    ("GRANT SELECT ON items TO someone", "0A000", ["GRANT"]),
    ("CREATE INDEX items_idx ON items ((id + 1))", "0A000", ["indexes on expressions"]),
    ("PREPARE p AS SELECT * FROM nowhere", "42P01", ['"nowhere"']),
    ("EXECUTE nostmt", "26000", ['"nostmt"']),
    ("TRUNCATE nowhere", "42P01", ['"nowhere"']),
    ("VACUUM items", "0A000", ["VACUUM"]),
    ("CREATE TABLE chk (id int CHECK (id > (SELECT 1)))", "0A000", ["subquery in check constraint"]),
    # An error in RETURNING's expressions fails the statement before anything is written.
    ("INSERT INTO items VALUES (9, 1, 1, 'a', 'x') RETURNING id / (small - 1)", "22012", ["division by zero"]),
    ("INSERT INTO items VALUES (9, 1, 1, 'a', 'x') RETURNING (SELECT count(*) FROM items)", "0A000",
     ["RETURNING"]),
    ("INSERT INTO items VALUES (9, 1, 1, 'a', 'x') RETURNING nope", "42703", ['"nope"']),
    ("INSERT INTO items VALUES (9, 1, 1, 'a', 'x') ON CONFLICT (id) DO NOTHING", "42P10", ["ON CONFLICT"]),
    # Refused before anything is written.
    ("UPDATE items SET small = 1 RETURNING id / (small - 1)", "22012", ["division by zero"]),
    ("DELETE FROM items RETURNING upper(nope)", "42703", ['"nope"']),
    ("DELETE FROM items RETURNING 1 / (id - id)", "22012", ["division by zero"]),
    ("UPDATE items SET small = 1 WHERE id = 1 RETURNING nope", "42703", ['"nope"']),
    # RETURNING is computed from the written rows alone: PostgreSQL's * and the FROM list's
    # columns would need the joined rows, refused rather than answered without them
    ("UPDATE items SET small = 3 FROM cheap WHERE cheap.id = items.id RETURNING *", "0A000",
     ["RETURNING the FROM list's columns"]),
    ("UPDATE items SET small = 3 FROM (SELECT 1 AS k) s WHERE s.k = items.id RETURNING k", "0A000",
     ["RETURNING the FROM list's columns"]),
    ("UPDATE items SET small = 3 FROM (SELECT 1 AS k) s WHERE s.k = items.id RETURNING s.k + 1", "0A000",
     ["RETURNING the FROM list's columns"]),
    ("WITH d AS (DELETE FROM items RETURNING *) SELECT * FROM d", "0A000", ["data-modifying statement in WITH"]),
    ("WITH d AS (UPDATE items SET small = 3 RETURNING id) INSERT INTO items (id) SELECT id + 10 FROM d",
     "0A000", ["data-modifying statement in WITH"]),
    ("CREATE TABLE badtype (x frobnicator)", "42704", ['"frobnicator"']),
    ("INSERT INTO items (id, small) VALUES (3, 70000)", "22003", ["smallint"]),
    ("UPDATE items SET small = 70000 WHERE id = 1", "22003", ["smallint out of range"]),  # PostgreSQL's words
    ("INSERT INTO items (id, small) SELECT 3, 70000", "22003", ["smallint out of range"]),
    ("SELECT 2147483647 + 1", "22003", ["out of range"]),
    ("SELECT 32767::smallint + 1::smallint", "22003", ["smallint out of range"]),  # not Spark's "try_add"
    ("SELECT small + 32767::smallint FROM items WHERE id = 1", "22003", ["smallint out of range"]),
    ("INSERT INTO items (id, price) VALUES (3, 1000.00)", "22003", ["numeric field overflow"]),
    ("UPDATE items SET price = price * 1000", "22003", ["numeric field overflow"]),
    ("INSERT INTO items (id, price) SELECT 3, 1000.00", "22003", ["numeric field overflow"]),
    ("INSERT INTO items (id, small) SELECT 3, name FROM items", "42804",
     ['column "small" is of type smallint but expression is of type text']),
    ("UPDATE items SET small = name", "42804", ['column "small" is of type smallint but expression is of type text']),
    ("INSERT INTO items (id, code) VALUES (3, 'abcd')", "22001", ["character varying(3)"]),
    ("INSERT INTO items (id, code) SELECT 3, 'abcd'", "22001", ["character varying(3)"]),
    ("UPDATE items SET code = 'toolong' WHERE id = 2", "22001", ["character varying(3)"]),
    ("INSERT INTO items (id) VALUES (NULL)", "23502", ['"id"', '"items"']),
    ("INSERT INTO items (name) VALUES ('no id')", "23502", ['"id"', '"items"']),
    ("INSERT INTO items (id, name) SELECT NULL, 'x'", "23502", ['"id"']),
    ("UPDATE items SET id = NULL WHERE id = 2", "23502", ['"id"']),
    ("INSERT INTO items (id) VALUES ('abc')", "22P02", ["integer", '"abc"']),
    ("SELECT 'abc'::int", "22P02", ["integer", '"abc"']),
    ("SELECT '2024-13-45'::date", "22008", ["date", "2024-13-45"]),  # PostgreSQL: field value out of range
    ("INSERT INTO items (id, price) VALUES (3, 'cheap')", "22P02", ["numeric", '"cheap"']),
    ("SELECT 1 / 0", "22012", ["division by zero"]),
    ("SELECT id / (small - small) FROM items", "22012", ["division by zero"]),
    ("INSERT INTO cheap VALUES (5, 'five')", "42809", ['"cheap"']),
    ("UPDATE cheap SET name = 'x'", "42809", ['"cheap"']),
    ("DELETE FROM cheap", "42809", ['"cheap"']),
    ("DROP VIEW items", "42809", ['"items"']),
    ("DROP TABLE cheap", "42809", ['"cheap"']),
    ("DROP TABLE items", "2BP01", ['"items"', "cheap"]),
    ("INSERT INTO items (id) VALUES (1, 2)", "42601", ["more expressions than target columns"]),
    ("INSERT INTO items VALUES (1, 2, 3, 'a', 'b', 'extra')", "42601", ["more expressions"]),
    ("INSERT INTO items (id, name) VALUES (1)", "42601", ["more target columns"]),
    ("SELECT nosuchfunc(1)", "42883", ["nosuchfunc"]),
    ("SET nosuchvar = 1", "42704", ['"nosuchvar"']),
    ("SHOW nosuchvar", "42704", ['"nosuchvar"']),
    ("SET server_version = '1'", "55P02", ['"server_version"']),
    ("FETCH 1 FROM nocursor", "34000", ['"nocursor"']),
    ("CLOSE nocursor", "34000", ['"nocursor"']),
    ("DECLARE c CURSOR FOR SELECT 1", "25P01", ["DECLARE CURSOR"]),
    ("DEALLOCATE nostmt", "26000", ['"nostmt"']),
    ("SELECT id,, name FROM items", "42601", ['","']),
    ("CREATE TABLE t_bad_numeric (x numeric(1001,2))", "22023", ["precision 1001 must be between 1 and 1000"]),
    ("CREATE TABLE t_bad_numeric (x numeric(60,50))", "0A000", ["scale 50"]),
    ("SELECT * FROM items AS OF 5", "22000", []),
    # PostgreSQL has no limit; Spark stops a recursion at a million rows (a doubling reaches it
    # after 20 iterations), said plainly rather than as its "Exception thrown in awaitResult"
    (("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r CROSS JOIN (VALUES (1), (2)) v(x)) "
     "SELECT count(*) FROM r"), "54001", ["WITH RECURSIVE", "1,000,000"]),
    # PostgreSQL groups the previous iteration's rows; Spark's loop refuses to: said as ours
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3 GROUP BY n) SELECT * FROM r",
     "0A000", ["recursive term", "group, sort or use a window function"]),
    # PostgreSQL's rules for the form of a recursive query, before Spark is asked
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT count(*) FROM r) SELECT * FROM r", "42P19",
     ["aggregate functions are not allowed in a recursive query's recursive term"]),
]


@pytest.mark.parametrize("sql,sqlstate,fragments", CASES, ids=[c[0][:40] for c in CASES])
def test_error(session, bystander, sql, sqlstate, fragments):
    with pytest.raises(psycopg.Error) as info:
        session.execute(sql)
    err = info.value
    assert err.sqlstate == sqlstate, f"{sql}: {err.sqlstate} {err}"
    message = err.diag.message_primary or ""
    for fragment in fragments:
        assert fragment in message, f"{sql}: {message!r} lacks {fragment!r}"
    _usable(session)
    # The bystander's open transaction is untouched.
    assert bystander.info.transaction_status == pq.TransactionStatus.INTRANS


def test_failed_statement_changed_nothing(session, bystander):
    # The bystander still sees its own uncommitted row; nobody else does.
    assert bystander.execute("SELECT name FROM items WHERE id = 100").fetchone() == ("bystander",)
    assert session.execute("SELECT count(*) FROM items WHERE id = 100").fetchone() == (0,)
    _usable(session, full=True)
    rows = session.execute("SELECT id, small, price, code, name FROM items ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [1, 2]
    assert rows[0][1:] == (1, __import__("decimal").Decimal("1.50"), "abc", "one")
    assert session.execute("SHOW TABLES").fetchall() == [("items",)]
    assert session.execute("SHOW VIEWS").fetchall() == [("cheap",)]


def test_syntax_error_position(session):
    with pytest.raises(psycopg.errors.SyntaxError) as info:
        session.execute("SELECT id,, name FROM items")
    assert info.value.diag.statement_position == "11"  # 1-based, at the second comma
    with pytest.raises(psycopg.errors.SyntaxError) as info:
        session.execute("SELECT 1; SELECT 2 +;")
    assert info.value.diag.statement_position == "21"  # counted in the whole query string, as PostgreSQL
    _usable(session)


def test_unsupported_statement_names_itself(session):
    for sql, name in [("ALTER TABLE items ALTER COLUMN id TYPE text", "ALTER TABLE"),
                      ("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'", "CREATE FUNCTION"),
                      ("CREATE TYPE mood AS ENUM ('sad')", "CREATE TYPE"), ("LOCK TABLE items", "LOCK"),
                      ("CALL proc()", "CALL")]:
        with pytest.raises(psycopg.errors.FeatureNotSupported) as info:
            session.execute(sql)
        assert name in str(info.value), sql
    _usable(session)


def test_bad_parameters_extended_protocol(session):
    # psycopg sends a str as an untyped parameter: the server types it from the column.
    with pytest.raises(psycopg.errors.InvalidTextRepresentation) as info:
        session.execute("INSERT INTO items (id) VALUES (%s)", ["abc"])
    assert '"abc"' in str(info.value)
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        session.execute("SELECT name FROM items WHERE id = %s", ["abc"])
    with pytest.raises(psycopg.errors.NumericValueOutOfRange):
        session.execute("INSERT INTO items (id, small) VALUES (3, %s)", [70000])
    with pytest.raises(psycopg.errors.NotNullViolation):
        session.execute("INSERT INTO items (id) VALUES (%s)", [None])
    with pytest.raises(psycopg.errors.StringDataRightTruncation):
        session.execute("INSERT INTO items (id, code) VALUES (3, %s)", ["abcd"])
    _usable(session)

    # Raw Parse/Bind with declared types and formats.
    pg = session.pgconn
    res = pg.exec_params(b"SELECT $1 + 1", [b"abc"], [23], [0])
    assert res.status == pq.ExecStatus.FATAL_ERROR
    assert res.error_field(pq.DiagnosticField.SQLSTATE) == b"22P02"
    res = pg.exec_params(b"SELECT $1 + 1", [b"\x00\x01"], [23], [1])  # 2 bytes for an int4
    assert res.status == pq.ExecStatus.FATAL_ERROR
    assert res.error_field(pq.DiagnosticField.SQLSTATE) == b"22P03"
    res = pg.exec_params(b"SELECT $1::int + 1", [b"41"], [0], [0])
    assert res.status == pq.ExecStatus.TUPLES_OK and res.get_value(0, 0) == b"42"
    res = pg.prepare(b"two", b"SELECT $1::int + $2::int")
    assert res.status == pq.ExecStatus.COMMAND_OK
    res = pg.exec_prepared(b"two", [b"1"])  # one value for two parameters
    assert res.status == pq.ExecStatus.FATAL_ERROR
    assert res.error_field(pq.DiagnosticField.SQLSTATE) == b"08P01"
    res = pg.exec_prepared(b"missing", [])
    assert res.error_field(pq.DiagnosticField.SQLSTATE) == b"26000"
    _usable(session)


def test_asyncpg_errors_leave_connection_usable(setup):
    async def go():
        con = await asyncpg.connect(host="127.0.0.1", port=setup.port, user="materialize",
                                    database="materialize", ssl="disable")
        try:
            with pytest.raises(asyncpg.UndefinedTableError):
                await con.fetch("SELECT * FROM nowhere")
            with pytest.raises(asyncpg.PostgresSyntaxError):
                await con.fetch("SELECT 1 +")
            with pytest.raises(asyncpg.DivisionByZeroError):
                await con.fetch("SELECT id / $1 FROM items", 0)
            with pytest.raises(asyncpg.NotNullViolationError):
                await con.execute("INSERT INTO items (id) VALUES ($1)", None)
            with pytest.raises(asyncpg.StringDataRightTruncationError):
                await con.execute("INSERT INTO items (id, code) VALUES ($1, $2)", 3, "abcd")
            return await con.fetchval("SELECT count(*) FROM items WHERE id IN (1, 2)")
        finally:
            await con.close()

    assert asyncio.run(asyncio.wait_for(go(), 120)) == 2


def test_error_in_transaction_then_rollback(session):
    session.execute("BEGIN")
    session.execute("INSERT INTO items (id, name) VALUES (50, 'in txn')")
    with pytest.raises(psycopg.errors.NumericValueOutOfRange):
        session.execute("INSERT INTO items (id, small) VALUES (51, 99999)")
    with pytest.raises(psycopg.errors.InFailedSqlTransaction):
        session.execute("SELECT 1")
    session.execute("ROLLBACK")
    _usable(session)
    assert session.execute("SELECT count(*) FROM items WHERE id = 50").fetchone() == (0,)


def test_ddl_inside_transaction_is_rejected(session):
    # CREATE/DROP TABLE and VIEW commit with the block (test_drivers_python.py); the DDL that
    # reaches outside (secrets, sources, connections, system settings) runs on its own only.
    session.execute("BEGIN")
    with pytest.raises(psycopg.errors.ActiveSqlTransaction):
        session.execute("CREATE SECRET in_txn AS 'x'")
    session.execute("ROLLBACK")
    _usable(session)


def test_numeric_wider_than_spark_holds(session):
    """numeric(p, s) with p over 38 is PostgreSQL's (p up to 1000), stored in Spark's 38
    digits: a value that needs more is refused with 22003 and says why, never rounded."""
    session.execute("CREATE TABLE wide_num (v numeric(210,10))")
    try:
        session.execute("INSERT INTO wide_num VALUES (123456789012345678.5)")
        with pytest.raises(psycopg.Error) as info:
            session.execute("INSERT INTO wide_num VALUES (1e30)")
        assert info.value.sqlstate == "22003"
        assert "38 digits" in (info.value.diag.message_detail or "")
        _usable(session)
        assert session.execute("SELECT v, v * 2 FROM wide_num").fetchall() == [
            (__import__("decimal").Decimal("123456789012345678.5000000000"),
             __import__("decimal").Decimal("246913578024691357.0000000000"))]
        assert session.execute("SELECT numeric_precision, numeric_scale FROM information_schema.columns "
                               "WHERE table_name = 'wide_num'").fetchall() == [(210, 10)]
    finally:
        session.execute("DROP TABLE wide_num")


def test_server_survived(setup, bystander):
    assert setup.proc.poll() is None
    with psycopg.connect(setup.dsn, autocommit=True) as fresh:
        assert fresh.execute("SELECT count(*) FROM items").fetchone() == (2,)
    bystander.execute("COMMIT")
    with psycopg.connect(setup.dsn, autocommit=True) as fresh:
        assert fresh.execute("SELECT name FROM items WHERE id = 100").fetchone() == ("bystander",)


def test_with_recursive_past_the_iteration_limit_of_either_loop():
    # PostgreSQL has no limit; both of ours (Spark's loop for UNION ALL, the fixpoint for
    # UNION) stop at spark.sql.cteRecursionLevelLimit: 54001, not a hang or Spark's words
    with running_server(extra_args=["--spark-conf", "spark.sql.cteRecursionLevelLimit=4"]) as server, \
            psycopg.connect(server.dsn, autocommit=True) as conn:
        within = "WITH RECURSIVE t(n) AS (SELECT 1 UNION{} SELECT n + 1 FROM t WHERE n < 4) SELECT sum(n) FROM t"
        beyond = "WITH RECURSIVE t(n) AS (SELECT 1 UNION{} SELECT n + 1 FROM t) SELECT sum(n) FROM t"
        for union in ("", " ALL"):
            assert conn.execute(within.format(union)).fetchone() == (10,)
            with pytest.raises(psycopg.Error) as err:
                conn.execute(beyond.format(union))
            assert err.value.sqlstate == "54001", err.value
            assert "WITH RECURSIVE ran more iterations than" in str(err.value)
