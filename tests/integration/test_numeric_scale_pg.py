"""Numeric results whose display scale PostgreSQL picks value by value (division, avg, sqrt,
ln, log, exp, power: planner.pg_numeric), side by side with a real PostgreSQL 15: the same
table in both, the same queries, every value compared digit for digit and scale for scale,
in text and in binary, and PostgreSQL's errors.

The stored unconstrained numerics are written without trailing zeros: sparkwire keeps such
a column at scale 10 and shows each value's digits (PostgreSQL would keep `2.50`'s)."""

from __future__ import annotations

from decimal import Decimal

import psycopg
import pytest

from tests.pgserver import loaded, reference_postgres

# id, n (numeric), f (numeric(12,4)), s (int2), i (int4), b (int8), g (group)
ROWS = [
    (1, "0", "0", 0, 0, 0, 1),
    (2, "1", "1", 1, 1, 1, 1),
    (3, "-1", "-1", -1, -1, -1, 1),
    (4, "2.5", "2.5", 2, 7, 9223372036854775807, 1),
    (5, "-7.25", "-7.25", -7, -300, 9223372036854775807, 2),
    (6, "0.0000000001", "0.0001", 3, 1000000, -9223372036854775808, 2),
    (7, "123456789012345678.123456789", "12345678.1234", 32767, 2147483647, 42, 2),
    (8, "99999999999999999999999999.9999999999", "99999999.9999", -32768, -2147483648, 7, 3),
    (9, "3", "3", 5, 11, 13, 3),
    (10, "0.5", "0.5", 9, 2, 3, 3),
    (11, "1.1", "1.1", 1, 1, 1, 3),
    (12, "10000", "10000", 100, 10000, 10000, 4),
    (13, "-0.001", "-0.001", -1, -1, -1, 4),
    (14, None, None, None, None, None, 4),
]


def _load(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE nums (id int, n numeric, f numeric(12,4), s smallint, i int, b bigint, g int)")
    for row in ROWS:
        conn.execute("INSERT INTO nums VALUES (%s, %s::numeric, %s::numeric, %s, %s, %s, %s)", row)


@pytest.fixture(scope="module")
def pg():
    with reference_postgres() as server, loaded(server.dsn, _load) as conn:
        yield conn


@pytest.fixture(scope="module")
def sw(server):
    with loaded(server.dsn, _load) as conn:
        yield conn


def _exact(value: object) -> object:
    """A value with its scale: Decimal('2.50') and Decimal('2.5') differ here."""
    return ("numeric", value.as_tuple()) if isinstance(value, Decimal) else value


def _run(conn: psycopg.Connection, sql: str, binary: bool = False) -> list[tuple] | tuple[str, str]:
    try:
        return [tuple(_exact(v) for v in row) for row in conn.execute(sql, binary=binary).fetchall()]
    except psycopg.Error as e:
        return (e.sqlstate or "", e.diag.message_primary or "")


def _same(sw: psycopg.Connection, pg: psycopg.Connection, sql: str, binary: bool = False) -> None:
    assert _run(sw, sql, binary) == _run(pg, sql, binary), sql


PAIRS = "FROM nums a CROSS JOIN nums b"


@pytest.mark.parametrize("column", ["n", "f", "s", "i"])
def test_division_of_every_pair_of_values(sw, pg, column):
    # tiny, huge, negative and zero dividends; an integer dividend is promoted to numeric
    other = "b.n" if column != "f" else "b.f"
    _same(sw, pg, f"SELECT a.id, b.id, a.{column} / {other} {PAIRS} WHERE {other} <> 0 ORDER BY 1, 2")
    _same(sw, pg, f"SELECT a.id, b.id, a.{column} / b.i::numeric {PAIRS} WHERE b.i <> 0 ORDER BY 1, 2")


def test_division_by_zero_is_postgres_error(sw, pg):
    _same(sw, pg, "SELECT n / 0 FROM nums WHERE id = 3")
    _same(sw, pg, "SELECT 1 / 0.0")


def test_division_in_binary_carries_the_scale(sw, pg):
    _same(sw, pg, f"SELECT a.id, b.id, a.n / b.f {PAIRS} WHERE b.f <> 0 ORDER BY 1, 2", binary=True)


@pytest.mark.parametrize("sql", [
    "SELECT id, sqrt(n), sqrt(f) FROM nums WHERE n >= 0 ORDER BY id",
    "SELECT id, ln(n), log(n), log10(f), ln(f) FROM nums WHERE n > 0 ORDER BY id",
    "SELECT a.id, b.id, log(a.n, b.n) " + PAIRS + " WHERE a.n > 0 AND b.n > 0 AND a.n <> 1 ORDER BY 1, 2",
    "SELECT id, exp(n), exp(f) FROM nums WHERE abs(n) < 100 ORDER BY id",
    "SELECT a.id, b.id, a.f ^ b.f, power(a.f, b.n) " + PAIRS
    + " WHERE a.f > 0 AND abs(b.n) < 50 AND abs(b.f) < 50 ORDER BY 1, 2",
    "SELECT a.id, b.id, a.n ^ b.s " + PAIRS + " WHERE a.n <> 0 AND b.s BETWEEN -9 AND 9 ORDER BY 1, 2",
    "SELECT 2.0 ^ 10, sqrt(2::numeric), ln(10::numeric), exp(1::numeric), 5.0 / 2, 1 / 3.0",
])
def test_functions_with_value_dependent_scale(sw, pg, sql):
    _same(sw, pg, sql)


@pytest.mark.parametrize("sql", [
    "SELECT sqrt(n) FROM nums WHERE id = 3",
    "SELECT ln(n) FROM nums WHERE id = 1",
    "SELECT ln(n) FROM nums WHERE id = 3",
    "SELECT log(n, 10::numeric) FROM nums WHERE id = 2",
    "SELECT n ^ -1.5 FROM nums WHERE id = 1",
    "SELECT n ^ 0.5 FROM nums WHERE id = 3",
    "SELECT exp(n) FROM nums WHERE id = 8",
])
def test_errors_keep_postgres_sqlstate_and_text(sw, pg, sql):
    _same(sw, pg, sql)


@pytest.mark.parametrize("column", ["s", "i", "b", "n", "f"])
def test_avg_of_every_type(sw, pg, column):
    _same(sw, pg, f"SELECT avg({column}) FROM nums")
    _same(sw, pg, f"SELECT g, avg({column}), avg({column})::text FROM nums GROUP BY g ORDER BY g")
    _same(sw, pg, f"SELECT g, avg({column}) FROM nums GROUP BY g HAVING count(*) > 2 ORDER BY 1")
    _same(sw, pg, f"SELECT avg({column}) FROM nums WHERE id > 100")  # no rows: NULL


def test_avg_in_binary_carries_the_scale(sw, pg):
    _same(sw, pg, "SELECT g, avg(s), avg(b), avg(f) FROM nums GROUP BY g ORDER BY g", binary=True)


def test_ordering_by_a_value_scaled_column_sorts_by_value(sw, pg):
    # (the sort itself is Spark's: a double for avg(int), so not past 15 digits)
    _same(sw, pg, "SELECT id, n / 3 FROM nums WHERE n IS NOT NULL ORDER BY 2, 1")
    _same(sw, pg, "SELECT g, avg(f), avg(s) FROM nums GROUP BY g ORDER BY avg(f) DESC")
    _same(sw, pg, "SELECT g, avg(i) FROM nums GROUP BY g ORDER BY 2, 1 LIMIT 3")
