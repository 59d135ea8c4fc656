"""SQL through real clients against a real server: types, DML, DDL, queries,
session statements, transactions and AS OF.

One server for the module (the `server` fixture); each test uses its own
tables so the tests do not depend on one another's order.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from decimal import Decimal

import asyncpg
import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

UTC = dt.UTC

# -- one row of every supported column type --------------------------------------

TYPES_DDL = """CREATE TABLE {name} (
    k integer,
    b boolean, s smallint, i integer, bi bigint, r real, d double precision,
    n numeric(10,2), pn numeric, t text, vc varchar(5), by bytea, dt date, tm time,
    ts timestamp, tstz timestamptz, iv interval, u uuid, j jsonb, arr int[]
)"""

COLUMNS = ["b", "s", "i", "bi", "r", "d", "n", "pn", "t", "vc", "by", "dt", "tm", "ts", "tstz",
           "iv", "u", "j", "arr"]

# PostgreSQL's type OIDs for those columns, as pg_type has them.
OIDS = {"k": 23, "b": 16, "s": 21, "i": 23, "bi": 20, "r": 700, "d": 701, "n": 1700, "pn": 1700,
        "t": 25, "vc": 1043, "by": 17, "dt": 1082, "tm": 1083, "ts": 1114, "tstz": 1184,
        "iv": 1186, "u": 2950, "j": 3802, "arr": 1007}

UUID = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")

EXPECTED = {
    "b": True,
    "s": -12345,
    "i": 2147483647,
    "bi": 9007199254740993,  # not representable as a double: must not go through one
    "r": 1.5,
    "d": 3.141592653589793,
    "n": Decimal("12345678.91"),
    "pn": Decimal("3.14159"),
    "t": "héllo 'world' ✓",
    "vc": "abc",
    "by": b"\x00\xde\xad\xbe\xef",
    "dt": dt.date(2024, 2, 29),
    "tm": dt.time(12, 34, 56, 789000),
    "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
    "tstz": dt.datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC),
    "iv": dt.timedelta(days=1, hours=2, minutes=3, seconds=4),
    "u": UUID,
    "j": {"a": [1, 2], "b": None},
    "arr": [1, 2, 3],
}

LITERALS = ("true, -12345, 2147483647, 9007199254740993, 1.5, 3.141592653589793, "
            "12345678.91, 3.14159, 'héllo ''world'' ✓', 'abc', '\\x00deadbeef', '2024-02-29', "
            "'12:34:56.789', '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05+02', "
            "'1 day 02:03:04', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
            "'{\"a\": [1, 2], \"b\": null}', '{1,2,3}'")


def _check_row(row, expected, columns=COLUMNS):
    assert len(row) == len(columns)
    for name, got in zip(columns, row):
        want = expected[name]
        if name == "j" and isinstance(got, str):  # asyncpg returns jsonb as text
            got = json.loads(got)
        if name == "tstz":
            assert got == want and got.utcoffset() is not None, name
        else:
            assert got == want, f"column {name}: {got!r} != {want!r}"


def _adsn(server) -> dict:
    return {"host": "127.0.0.1", "port": server.port, "user": "materialize",
            "database": "materialize", "ssl": "disable"}


def _arun(coro):
    return asyncio.run(asyncio.wait_for(coro, 180))


@pytest.fixture(scope="module")
def typed(server):
    """A table holding one row of every type (k=1) and a row of NULLs (k=2)."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(TYPES_DDL.format(name="typed"))
        c.execute(f"INSERT INTO typed VALUES (1, {LITERALS})")
        c.execute(f"INSERT INTO typed VALUES (2{', NULL' * len(COLUMNS)})")
    return "typed"


# -- types: literals in, values out -----------------------------------------------

@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_every_type_reads_back_through_psycopg(conn, typed, binary):
    cur = conn.cursor()
    cur.execute(f"SELECT k, {', '.join(COLUMNS)} FROM typed ORDER BY k", binary=binary)
    assert [d.name for d in cur.description] == ["k", *COLUMNS]
    assert [d.type_code for d in cur.description] == [OIDS[c] for c in ["k", *COLUMNS]]
    rows = cur.fetchall()
    assert len(rows) == 2
    assert rows[0][0] == 1
    _check_row(rows[0][1:], EXPECTED)
    assert rows[1] == (2,) + (None,) * len(COLUMNS)


def test_every_type_reads_back_through_asyncpg(server, typed):
    """asyncpg always asks for binary results."""
    scalar_cols = COLUMNS

    async def go():
        con = await asyncpg.connect(**_adsn(server))
        try:
            stmt = await con.prepare(f"SELECT {', '.join(scalar_cols)} FROM typed WHERE k = $1")
            assert [a.type.oid for a in stmt.get_attributes()] == [OIDS[c] for c in scalar_cols]
            row = await stmt.fetchrow(1)
            nulls = await con.fetchrow(f"SELECT {', '.join(scalar_cols)} FROM typed WHERE k = 2")
            return tuple(row), tuple(nulls)
        finally:
            await con.close()

    row, nulls = _arun(go())
    _check_row(row, EXPECTED, scalar_cols)
    assert nulls == (None,) * len(scalar_cols)


def test_asyncpg_int_arrays(server, typed):
    """asyncpg learns how to decode int[] by introspecting pg_catalog.pg_type; that
    must finish (bounded here by a timeout) and give back the list."""

    async def go():
        con = await asyncpg.connect(**_adsn(server))
        try:
            got = await asyncio.wait_for(con.fetchval("SELECT arr FROM typed WHERE k = 1"), 90)
            await con.execute("CREATE TABLE arr_asyncpg (k int, a int[])")
            await asyncio.wait_for(con.execute("INSERT INTO arr_asyncpg VALUES ($1, $2)", 1, [4, 5]), 90)
            back = await con.fetchval("SELECT a FROM arr_asyncpg WHERE k = 1")
            return got, back
        finally:
            con.terminate()

    assert _arun(go()) == ([1, 2, 3], [4, 5])


def test_expression_result_types(conn):
    cur = conn.execute(
        "SELECT 1, 2::bigint, 1.5::numeric(3,1), 'x'::text, 1.5::real, 2.5::float8, true, "
        "date '2024-01-02', NULL::int, 7/2, 7 % 3, 7.0/2")
    assert [d.type_code for d in cur.description] == [23, 20, 1700, 25, 700, 701, 16, 1082, 23,
                                                      23, 23, 1700]
    row = cur.fetchone()
    assert row[:9] == (1, 2, Decimal("1.5"), "x", 1.5, 2.5, True, dt.date(2024, 1, 2), None)
    assert row[9] == 3  # integer division truncates, as in PostgreSQL
    assert row[10] == 1
    assert row[11] == Decimal("3.5")


def test_repeated_output_names_with_null_column(conn):
    # Two "?column?" outputs and a NULL: the NULL column must not make names ambiguous.
    row = conn.execute("SELECT 1 + 1, 2 + 2, NULL").fetchone()
    assert row == (2, 4, None)


def test_plain_numeric_holds_large_values(conn):
    conn.execute("CREATE TABLE bignum (k int, n numeric)")
    big = Decimal("12345678901234567890.123")
    conn.execute("INSERT INTO bignum VALUES (1, 12345678901234567890.123)")
    conn.execute("INSERT INTO bignum VALUES (2, %s)", [big])
    conn.execute("INSERT INTO bignum SELECT 3, n FROM bignum WHERE k = 1")
    for binary in (False, True):
        rows = conn.cursor().execute("SELECT k, n FROM bignum ORDER BY k", binary=binary).fetchall()
        assert rows == [(1, big), (2, big), (3, big)]
    with pytest.raises(pg_errors.NumericValueOutOfRange):  # more digits than sparkwire keeps
        conn.execute("INSERT INTO bignum VALUES (4, 123456789012345678901234567890)")


# -- parameters ------------------------------------------------------------------

PARAMS = {**EXPECTED, "j": Jsonb(EXPECTED["j"])}


@pytest.mark.parametrize("fmt", ["t", "b"], ids=["text", "binary"])
def test_psycopg_parameters_of_every_type(conn, fmt):
    table = f"params_{fmt}"
    conn.execute(TYPES_DDL.format(name=table))
    holes = ", ".join([f"%{fmt}"] * (len(COLUMNS) + 1))
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES ({holes})", [1, *[PARAMS[c] for c in COLUMNS]])
    assert cur.rowcount == 1
    cur.execute(f"INSERT INTO {table} VALUES ({holes})", [2, *[None] * len(COLUMNS)])
    for binary in (False, True):
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {table} WHERE k = %{fmt}", [1],
                    binary=binary)
        _check_row(cur.fetchone(), EXPECTED)
    # Every value as a WHERE parameter matches the row it was stored in.
    compared = [c for c in COLUMNS if c not in ("j", "arr")]
    cond = " AND ".join(f"{c} = %{fmt}" for c in compared)
    cur.execute(f"SELECT k FROM {table} WHERE {cond}", [PARAMS[c] for c in compared])
    assert cur.fetchall() == [(1,)]
    cur.execute(f"SELECT k FROM {table} WHERE i > %{fmt} AND t <> %{fmt} ORDER BY k LIMIT %{fmt}",
                [0, "zzz", 5])
    assert cur.fetchall() == [(1,)]
    cur.execute(f"SELECT k FROM {table} WHERE s IS NULL AND %{fmt}::int IS NULL", [None])
    assert cur.fetchall() == [(2,)]
    # And as UPDATE values (computed by Spark, unlike INSERT ... VALUES).
    sets = ", ".join(f"{c} = %{fmt}" for c in COLUMNS)
    cur.execute(f"UPDATE {table} SET {sets} WHERE k = %{fmt}", [*[PARAMS[c] for c in COLUMNS], 2])
    assert cur.rowcount == 1
    cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {table} WHERE k = 2")
    _check_row(cur.fetchone(), EXPECTED)


def test_every_type_through_spark_computed_writes(conn):
    """INSERT ... SELECT and INSERT with a non-constant value are computed by Spark;
    their text literals must be read as PostgreSQL reads them (bytea '\\x..', '{..}')."""
    conn.execute(TYPES_DDL.format(name="via_spark"))
    conn.execute(f"INSERT INTO via_spark SELECT 1, {LITERALS}")
    conn.execute(f"INSERT INTO via_spark VALUES (1 + 1, {LITERALS.replace('true,', 'NOT false,', 1)})")
    rows = conn.execute(f"SELECT k, {', '.join(COLUMNS)} FROM via_spark ORDER BY k").fetchall()
    assert [r[0] for r in rows] == [1, 2]
    for row in rows:
        _check_row(row[1:], EXPECTED)
    cur = conn.execute("UPDATE via_spark SET by = '\\xcafe', arr = '{7,NULL,9}', iv = '2 hours', "
                       "tm = '23:59:59', u = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12' WHERE k = 2")
    assert cur.rowcount == 1
    assert conn.execute("SELECT by, arr, iv, tm, u FROM via_spark WHERE k = 2").fetchone() == (
        b"\xca\xfe", [7, None, 9], dt.timedelta(hours=2), dt.time(23, 59, 59),
        uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"))
    with pytest.raises(pg_errors.InvalidTextRepresentation):
        conn.execute("INSERT INTO via_spark (k, arr) SELECT 3, '{1,x}'")


def test_asyncpg_parameters_of_every_type(server):
    cols = COLUMNS
    values = {**EXPECTED, "j": json.dumps(EXPECTED["j"])}

    async def go():
        con = await asyncpg.connect(**_adsn(server))
        try:
            await con.execute(TYPES_DDL.format(name="params_asyncpg"))
            holes = ", ".join(f"${i}" for i in range(1, len(cols) + 2))
            status = await con.execute(
                f"INSERT INTO params_asyncpg (k, {', '.join(cols)}) VALUES ({holes})",
                1, *[values[c] for c in cols])
            assert status == "INSERT 0 1"
            row = await con.fetchrow(f"SELECT {', '.join(cols)} FROM params_asyncpg WHERE k = $1", 1)
            compared = [c for c in cols if c != "j"]
            cond = " AND ".join(f"{c} = ${i}" for i, c in enumerate(compared, start=1))
            found = await con.fetch(f"SELECT k FROM params_asyncpg WHERE {cond}",
                                    *[values[c] for c in compared])
            return tuple(row), [tuple(r) for r in found]
        finally:
            await con.close()

    row, found = _arun(go())
    _check_row(row, EXPECTED, cols)
    assert found == [(1,)]


# -- DML --------------------------------------------------------------------------

def test_issue_example(conn):
    conn.execute("CREATE TABLE issue (id int, name text, price numeric(10,2), at timestamptz)")
    cur = conn.execute("INSERT INTO issue VALUES (1, 'a', 9.99, now()), (2, 'b', NULL, now())")
    assert cur.rowcount == 2
    assert conn.execute("UPDATE issue SET name = 'c' WHERE id = 2").rowcount == 1
    assert conn.execute("DELETE FROM issue WHERE id = 1").rowcount == 1
    cur = conn.execute("SELECT name, count(*) FROM issue GROUP BY name ORDER BY 1")
    assert [d.type_code for d in cur.description] == [25, 20]
    assert cur.fetchall() == [("c", 1)]
    row = conn.execute("SELECT id, name, price, at FROM issue").fetchone()
    assert row[:3] == (2, "c", None)
    assert abs(row[3] - dt.datetime.now(UTC)) < dt.timedelta(minutes=1)


def test_update_and_delete_row_counts(conn):
    conn.execute("CREATE TABLE counts (id int, grp text, v numeric(6,2))")
    cur = conn.cursor()
    cur.execute("INSERT INTO counts VALUES (1, 'x', 1.10), (2, 'x', 2.20), (3, 'y', 3.30), (4, 'z', NULL)")
    assert cur.rowcount == 4
    cur.execute("UPDATE counts SET v = v * 2, grp = upper(grp) WHERE grp = 'x'")
    assert cur.rowcount == 2
    assert cur.statusmessage == "UPDATE 2"
    cur.execute("UPDATE counts SET v = 0 WHERE id > 100")
    assert cur.rowcount == 0
    cur.execute("DELETE FROM counts WHERE v IS NULL OR id = %s", [3])
    assert cur.rowcount == 2
    assert cur.statusmessage == "DELETE 2"
    assert conn.execute("SELECT id, grp, v FROM counts ORDER BY id").fetchall() == [
        (1, "X", Decimal("2.20")), (2, "X", Decimal("4.40"))]
    cur.execute("UPDATE counts SET v = v + 1")  # no WHERE: every row
    assert cur.rowcount == 2
    cur.execute("DELETE FROM counts")
    assert cur.rowcount == 2
    assert conn.execute("SELECT count(*) FROM counts").fetchone() == (0,)


def test_batched_writes_are_atomic_until_sync(server, conn):
    """Extended-protocol statements up to a Sync form one implicit transaction:
    psycopg's executemany and pipelines, asyncpg's executemany."""
    conn.execute("CREATE TABLE batch (id int NOT NULL, v text)")
    cur = conn.cursor()
    cur.executemany("INSERT INTO batch VALUES (%s, %s)", [(i, f"v{i}") for i in range(10)])
    assert conn.execute("SELECT count(*), sum(id) FROM batch").fetchone() == (10, 45)
    with pytest.raises(pg_errors.NotNullViolation):
        cur.executemany("INSERT INTO batch VALUES (%s, %s)", [(50, "a"), (None, "b"), (52, "c")])
    assert conn.execute("SELECT count(*) FROM batch WHERE id >= 50").fetchone() == (0,)
    with conn.pipeline():
        conn.execute("INSERT INTO batch VALUES (100, 'p')")
        conn.execute("UPDATE batch SET v = 'q' WHERE id = 100")
        seen = conn.execute("SELECT v FROM batch WHERE id = 100")
    assert seen.fetchall() == [("q",)]
    with pytest.raises(pg_errors.DivisionByZero), conn.pipeline():
        conn.execute("INSERT INTO batch VALUES (101, 'p')")
        conn.execute("SELECT 1 / 0")
        conn.execute("INSERT INTO batch VALUES (102, 'p')")
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert conn.execute("SELECT id FROM batch WHERE id > 99 ORDER BY id").fetchall() == [(100,)]

    async def go():
        con = await asyncpg.connect(**_adsn(server))
        try:
            await con.executemany("INSERT INTO batch VALUES ($1, $2)", [(200 + i, "a") for i in range(5)])
            with pytest.raises(asyncpg.NotNullViolationError):
                await con.executemany("INSERT INTO batch VALUES ($1, $2)", [(300, "a"), (None, "b")])
            return await con.fetchval("SELECT count(*) FROM batch WHERE id >= 200")
        finally:
            await con.close()

    assert _arun(go()) == 5


def test_insert_select(conn):
    conn.execute("CREATE TABLE src (id int, name text)")
    conn.execute("CREATE TABLE dst (id bigint, name text, note text)")
    conn.execute("INSERT INTO src VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    cur = conn.execute("INSERT INTO dst (id, name) SELECT id * 10, upper(name) FROM src WHERE id < 3")
    assert cur.rowcount == 2
    cur = conn.execute("INSERT INTO dst SELECT id, name, 'copied' FROM src WHERE id = 3")
    assert cur.rowcount == 1
    assert conn.execute("SELECT id, name, note FROM dst ORDER BY id").fetchall() == [
        (3, "three", "copied"), (10, "ONE", None), (20, "TWO", None)]


def test_default_and_not_null(conn):
    conn.execute("CREATE TABLE defs (id int NOT NULL, label text DEFAULT 'none', n int DEFAULT 42)")
    conn.execute("INSERT INTO defs (id) VALUES (1)")
    conn.execute("INSERT INTO defs VALUES (2, DEFAULT, 7)")
    conn.execute("INSERT INTO defs (id, label) SELECT 3, 'sel'")
    conn.execute("INSERT INTO defs (n, id) VALUES (NULL, 4)")
    assert conn.execute("SELECT id, label, n FROM defs ORDER BY id").fetchall() == [
        (1, "none", 42), (2, "none", 7), (3, "sel", 42), (4, "none", None)]
    with pytest.raises(pg_errors.NotNullViolation):
        conn.execute("INSERT INTO defs (label) VALUES ('x')")
    with pytest.raises(pg_errors.NotNullViolation):
        conn.execute("UPDATE defs SET id = NULL WHERE id = 1")
    rows = conn.execute("SHOW COLUMNS FROM defs").fetchall()
    assert rows == [("id", False, "integer"), ("label", True, "text"), ("n", True, "integer")]
    assert conn.execute("SELECT count(*) FROM defs").fetchone() == (4,)


# -- DDL --------------------------------------------------------------------------

def test_non_ascii_and_mixed_case_names(conn):
    conn.execute('CREATE TABLE "tåble✓" ("b✓" int, "Mixed" text)')
    conn.execute('INSERT INTO "tåble✓" VALUES (1, \'één\'), (2, NULL)')
    cur = conn.execute('SELECT * FROM "tåble✓" ORDER BY "b✓"')
    assert [d.name for d in cur.description] == ["b✓", "Mixed"]
    assert cur.fetchall() == [(1, "één"), (2, None)]
    assert conn.execute('SELECT t.*, "b✓" * 2 AS "dóble" FROM "tåble✓" t WHERE "Mixed" IS NOT NULL'
                        ).fetchall() == [(1, "één", 2)]
    conn.execute('CREATE VIEW "vïew" AS SELECT "b✓" AS "ñ" FROM "tåble✓"')
    assert conn.execute('SELECT * FROM "vïew" ORDER BY 1').fetchall() == [(1,), (2,)]
    conn.execute('DROP VIEW "vïew"')
    conn.execute('DROP TABLE "tåble✓"')


def test_views_and_drop(conn):
    conn.execute("CREATE TABLE base (id int, v text)")
    conn.execute("INSERT INTO base VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    conn.execute("CREATE VIEW big AS SELECT id, upper(v) AS uv FROM base WHERE id >= 2")
    conn.execute("CREATE VIEW bigger AS SELECT count(*) AS n FROM big")
    assert conn.execute("SELECT * FROM big ORDER BY id").fetchall() == [(2, "B"), (3, "C")]
    assert conn.execute("SELECT n FROM bigger").fetchone() == (2,)
    conn.execute("INSERT INTO base VALUES (4, 'd')")  # a view is computed at read time
    assert conn.execute("SELECT n FROM bigger").fetchone() == (3,)
    names = {r[0] for r in conn.execute("SHOW VIEWS").fetchall()}
    assert {"big", "bigger"} <= names

    with pytest.raises(pg_errors.DependentObjectsStillExist) as err:
        conn.execute("DROP TABLE base")
    assert "big" in str(err.value)
    with pytest.raises(pg_errors.DependentObjectsStillExist):
        conn.execute("DROP VIEW big")
    conn.execute("DROP VIEW bigger")
    assert conn.execute("SELECT count(*) FROM big").fetchone() == (3,)
    conn.execute("CREATE VIEW bigger AS SELECT count(*) AS n FROM big")
    conn.execute("DROP TABLE base CASCADE")
    for name in ("base", "big", "bigger"):
        with pytest.raises(pg_errors.UndefinedTable):
            conn.execute(f"SELECT * FROM {name}")
    tables = {r[0] for r in conn.execute("SHOW TABLES").fetchall()}
    assert "base" not in tables

    conn.execute("DROP TABLE IF EXISTS base")  # a notice, not an error
    conn.execute("DROP VIEW IF EXISTS big")
    with pytest.raises(pg_errors.UndefinedTable):
        conn.execute("DROP TABLE base")
    conn.execute("CREATE TABLE base (other bigint)")  # the name is free again
    assert conn.execute("SHOW COLUMNS FROM base").fetchall() == [("other", True, "bigint")]
    conn.execute("DROP TABLE base")


def test_drop_if_exists_sends_notice(server):
    notices = []
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.add_notice_handler(lambda d: notices.append(d.message_primary))
        c.execute("DROP TABLE IF EXISTS never_there")
    assert any("never_there" in n for n in notices)


def test_show_tables_and_columns(conn):
    conn.execute("CREATE TABLE shown_b (x int)")
    conn.execute("CREATE TABLE shown_a (y text NOT NULL, z numeric(10,2), w varchar(7))")
    tables = [r[0] for r in conn.execute("SHOW TABLES").fetchall()]
    assert "shown_a" in tables and "shown_b" in tables
    assert tables == sorted(tables)
    cur = conn.execute("SHOW COLUMNS FROM shown_a")
    assert [d.name for d in cur.description] == ["name", "nullable", "type"]
    assert cur.fetchall() == [("y", False, "text"), ("z", True, "numeric(10,2)"),
                              ("w", True, "character varying(7)")]


# -- queries ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def people(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE dept (id int, name text)")
        c.execute("CREATE TABLE emp (id int, name text, dept_id int, salary numeric(10,2))")
        c.execute("INSERT INTO dept VALUES (1, 'eng'), (2, 'ops'), (3, 'empty')")
        c.execute("INSERT INTO emp VALUES (1, 'ann', 1, 100.00), (2, 'bob', 1, 80.50), "
                  "(3, 'cid', 2, 70.00), (4, 'dan', NULL, 60.00), (5, 'eve', 1, 80.50)")


QUERIES = [
    ("SELECT e.name, d.name FROM emp e JOIN dept d ON e.dept_id = d.id ORDER BY e.name",
     [("ann", "eng"), ("bob", "eng"), ("cid", "ops"), ("eve", "eng")]),
    ("SELECT e.name, d.name FROM emp e LEFT JOIN dept d ON e.dept_id = d.id ORDER BY e.id",
     [("ann", "eng"), ("bob", "eng"), ("cid", "ops"), ("dan", None), ("eve", "eng")]),
    (("SELECT e.name, d.name FROM emp e FULL JOIN dept d ON e.dept_id = d.id "
     "ORDER BY e.id NULLS LAST"),
     [("ann", "eng"), ("bob", "eng"), ("cid", "ops"), ("dan", None), ("eve", "eng"), (None, "empty")]),
    (("SELECT d.name, count(e.id), sum(e.salary), min(e.salary), max(e.name) FROM dept d "
     "LEFT JOIN emp e ON e.dept_id = d.id GROUP BY d.name ORDER BY d.name"),
     [("empty", 0, None, None, None), ("eng", 3, Decimal("261.00"), Decimal("80.50"), "eve"),
      ("ops", 1, Decimal("70.00"), Decimal("70.00"), "cid")]),
    ("SELECT dept_id, count(*) FROM emp GROUP BY dept_id HAVING count(*) > 1", [(1, 3)]),
    ("SELECT name FROM emp WHERE dept_id IN (SELECT id FROM dept WHERE name = 'eng') ORDER BY name",
     [("ann",), ("bob",), ("eve",)]),
    ("SELECT name FROM dept d WHERE NOT EXISTS (SELECT 1 FROM emp e WHERE e.dept_id = d.id)",
     [("empty",)]),
    ("SELECT name FROM emp WHERE salary = (SELECT max(salary) FROM emp)", [("ann",)]),
    (("SELECT name, (SELECT count(*) FROM emp e2 WHERE e2.dept_id = emp.dept_id) FROM emp "
     "WHERE id = 3"), [("cid", 1)]),
    ("SELECT DISTINCT salary FROM emp ORDER BY salary DESC",
     [(Decimal("100.00"),), (Decimal("80.50"),), (Decimal("70.00"),), (Decimal("60.00"),)]),
    ("SELECT DISTINCT dept_id % 2 FROM emp ORDER BY 1", [(0,), (1,), (None,)]),
    ("SELECT name FROM emp ORDER BY salary DESC, name LIMIT 2 OFFSET 1", [("bob",), ("eve",)]),
    ("SELECT upper(name) FROM emp ORDER BY 1 DESC LIMIT 2", [("EVE",), ("DAN",)]),
    ("SELECT dept_id FROM emp UNION SELECT id FROM dept ORDER BY 1", [(1,), (2,), (3,), (None,)]),
    ("SELECT dept_id FROM emp WHERE dept_id = 1 UNION ALL SELECT id FROM dept WHERE id = 1",
     [(1,), (1,), (1,), (1,)]),
    (("WITH rich AS (SELECT * FROM emp WHERE salary > 75), per AS "
     "(SELECT dept_id, count(*) AS n FROM rich GROUP BY dept_id) SELECT d.name, per.n FROM per "
     "JOIN dept d ON d.id = per.dept_id"), [("eng", 3)]),
    ("SELECT 7 / 2, -7 / 2, 7 % 3, 7.0 / 2, 1 + 2 * 3", [(3, -3, 1, Decimal("3.5"), 7)]),
    (("SELECT upper('abc'), lower('ABC'), length('héllo'), substring('hello' from 2 for 3), "
     "substring('hello', 2, 2), coalesce(NULL, 'x'), 'a' || 'b' || 1, abs(-4), abs(-2.5), "
     "round(2.567, 2), round(2.5)"),
     [("ABC", "abc", 5, "ell", "el", "x", "ab1", 4, Decimal("2.5"), Decimal("2.57"), Decimal(3))]),
    (("SELECT name, CASE WHEN salary >= 80 THEN 'high' WHEN salary >= 70 THEN 'mid' ELSE 'low' END "
     "FROM emp ORDER BY id"), [("ann", "high"), ("bob", "high"), ("cid", "mid"), ("dan", "low"),
                              ("eve", "high")]),
    (("SELECT date_trunc('month', timestamp '2024-03-14 15:09:26'), "
     "extract(year from date '2024-03-14'), extract(hour from timestamp '2024-03-14 15:09:26')"),
     [(dt.datetime(2024, 3, 1), 2024, 15)]),  # a timestamp without time zone, as in PostgreSQL
    ("SELECT count(*), count(dept_id), count(DISTINCT dept_id), avg(salary) FROM emp",
     [(5, 4, 2, Decimal("78.2"))]),
    # array_agg keeps NULLs, follows its ORDER BY (ASC: NULLs last) and is NULL over no rows.
    (("SELECT array_agg(name ORDER BY salary DESC, name), array_agg(dept_id ORDER BY id), "
      "array_agg(dept_id ORDER BY dept_id NULLS FIRST), array_agg(dept_id ORDER BY dept_id DESC) FROM emp"),
     [(["ann", "bob", "eve", "cid", "dan"], [1, 1, 2, None, 1], [None, 1, 1, 1, 2], [None, 2, 1, 1, 1])]),
    ("SELECT array_agg(id) FROM emp WHERE false", [(None,)]),
    (("SELECT d.name, array_agg(e.name ORDER BY e.name DESC) FROM dept d JOIN emp e ON e.dept_id = d.id "
      "GROUP BY d.name ORDER BY d.name"), [("eng", ["eve", "bob", "ann"]), ("ops", ["cid"])]),
]


@pytest.mark.parametrize("sql,expected", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_queries(conn, people, sql, expected):
    assert conn.execute(sql).fetchall() == expected


def test_now_is_a_timestamptz_near_the_clock(conn):
    cur = conn.execute("SELECT now(), current_timestamp")
    assert cur.description[0].type_code == 1184
    a, b = cur.fetchone()
    assert a == b  # both the transaction's start
    assert abs(a - dt.datetime.now(UTC)) < dt.timedelta(minutes=1)


def test_session_functions(conn):
    cur = conn.execute("SELECT version(), current_database(), current_user")
    version, database, user = cur.fetchone()
    assert version.startswith("PostgreSQL ")
    assert database == "materialize"
    assert user == "materialize"
    assert [d.type_code for d in cur.description] == [25, 25, 25]


# -- SET / SHOW / RESET -------------------------------------------------------------

def test_set_show_reset(conn):
    assert conn.execute("SHOW application_name").fetchone() == ("",)
    conn.execute("SET application_name = 'sparkwire-tests'")
    assert conn.execute("SHOW application_name").fetchone() == ("sparkwire-tests",)
    assert conn.info.parameter_status("application_name") == "sparkwire-tests"
    conn.execute("SET application_name TO other")
    assert conn.execute("SHOW application_name").fetchone() == ("other",)
    conn.execute("RESET application_name")
    assert conn.execute("SHOW application_name").fetchone() == ("",)
    assert conn.info.parameter_status("application_name") == ""
    with pytest.raises(pg_errors.UndefinedObject) as err:
        conn.execute("SET no_such_setting = 1")
    assert err.value.sqlstate == "42704"
    assert "no_such_setting" in str(err.value)
    with pytest.raises(pg_errors.UndefinedObject):
        conn.execute("SHOW no_such_setting")
    assert conn.execute("SELECT 1").fetchone() == (1,)


# -- transactions --------------------------------------------------------------------

def test_transaction_commits_atomically(server, conn):
    conn.execute("CREATE TABLE tx (id int, v text)")
    conn.execute("INSERT INTO tx VALUES (0, 'before')")
    with psycopg.connect(server.dsn, autocommit=True) as other:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO tx VALUES (1, 'one')")
        conn.execute("INSERT INTO tx VALUES (2, 'two')")
        assert conn.execute("UPDATE tx SET v = 'ZERO' WHERE id = 0").rowcount == 1
        # The transaction sees its own writes...
        assert conn.execute("SELECT id, v FROM tx ORDER BY id").fetchall() == [
            (0, "ZERO"), (1, "one"), (2, "two")]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        # ...nobody else does before COMMIT.
        assert other.execute("SELECT id, v FROM tx ORDER BY id").fetchall() == [(0, "before")]
        conn.execute("COMMIT")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert other.execute("SELECT id, v FROM tx ORDER BY id").fetchall() == [
            (0, "ZERO"), (1, "one"), (2, "two")]


def test_rollback_discards(server, conn):
    conn.execute("CREATE TABLE txr (id int)")
    conn.execute("INSERT INTO txr VALUES (1)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO txr VALUES (2)")
    conn.execute("DELETE FROM txr WHERE id = 1")
    assert conn.execute("SELECT id FROM txr").fetchall() == [(2,)]
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT id FROM txr").fetchall() == [(1,)]
    with psycopg.connect(server.dsn, autocommit=True) as other:
        assert other.execute("SELECT id FROM txr").fetchall() == [(1,)]


def test_psycopg_non_autocommit_transaction(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE txp (id int)")
    with psycopg.connect(server.dsn) as c:  # psycopg's own BEGIN ... COMMIT
        with c.transaction():
            c.execute("INSERT INTO txp VALUES (1)")
            c.execute("INSERT INTO txp VALUES (2)")
        with pytest.raises(RuntimeError), c.transaction():
            c.execute("INSERT INTO txp VALUES (3)")
            raise RuntimeError("roll it back")
        c.commit()
    with psycopg.connect(server.dsn, autocommit=True) as c:
        assert c.execute("SELECT id FROM txp ORDER BY id").fetchall() == [(1,), (2,)]


def test_psycopg_prepared_statements_survive_rollback_and_drop(server):
    """psycopg prepares a query run 5 times and then, after ROLLBACK or DROP, sends
    DEALLOCATE ALL; that must work, and the re-run query must be prepared afresh."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE prep (id int)")
        c.execute("INSERT INTO prep VALUES (1), (2)")
        for _ in range(7):
            assert c.execute("SELECT count(*) FROM prep WHERE id > %s", [0]).fetchone() == (2,)
        c.execute("BEGIN")
        c.execute("INSERT INTO prep VALUES (3)")
        c.execute("ROLLBACK")
        for _ in range(7):
            assert c.execute("SELECT count(*) FROM prep WHERE id > %s", [0]).fetchone() == (2,)
        c.execute("CREATE TABLE prep_gone (x int)")
        c.execute("DROP TABLE prep_gone")
        assert c.execute("SELECT count(*) FROM prep WHERE id > %s", [1]).fetchone() == (1,)
        c.execute("DEALLOCATE ALL")
        c.execute("DISCARD ALL")
        assert c.execute("SELECT count(*) FROM prep WHERE id > %s", [1]).fetchone() == (1,)


def test_error_aborts_transaction_until_rollback(server, conn):
    conn.execute("CREATE TABLE txe (id int)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO txe VALUES (1)")
    with pytest.raises(pg_errors.UndefinedTable):
        conn.execute("SELECT * FROM txe_missing")
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
    with pytest.raises(pg_errors.InFailedSqlTransaction) as err:
        conn.execute("SELECT 1")
    assert err.value.sqlstate == "25P02"
    with pytest.raises(pg_errors.InFailedSqlTransaction):
        conn.execute("INSERT INTO txe VALUES (2)")
    conn.execute("ROLLBACK")
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert conn.execute("SELECT count(*) FROM txe").fetchone() == (0,)
    conn.execute("INSERT INTO txe VALUES (3)")
    assert conn.execute("SELECT id FROM txe").fetchall() == [(3,)]


def test_commit_of_failed_transaction_rolls_back(conn):
    conn.execute("CREATE TABLE txf (id int)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO txf VALUES (1)")
    with pytest.raises(pg_errors.DivisionByZero):
        conn.execute("SELECT 1 / 0")
    cur = conn.execute("COMMIT")
    assert cur.statusmessage == "ROLLBACK"
    assert conn.execute("SELECT count(*) FROM txf").fetchone() == (0,)


def test_multi_statement_query_is_one_transaction(conn):
    conn.execute("CREATE TABLE txm (id int)")
    with pytest.raises(pg_errors.DivisionByZero):
        conn.execute("INSERT INTO txm VALUES (1); INSERT INTO txm VALUES (2); SELECT 1/0")
    assert conn.execute("SELECT count(*) FROM txm").fetchone() == (0,)
    conn.execute("INSERT INTO txm VALUES (1); INSERT INTO txm VALUES (2)")
    assert conn.execute("SELECT count(*) FROM txm").fetchone() == (2,)


# -- AS OF ---------------------------------------------------------------------------

def _now_ms() -> int:
    return int(time.time() * 1000)


def test_select_as_of(conn):
    """History is kept for a second (HISTORY_RETENTION_MS) before compaction folds
    it; the reads below are ordered so that no compaction can have reached the
    timestamps they ask for, however slow the machine."""
    before_create = _now_ms() - 1
    conn.execute("CREATE TABLE hist (id int, v text)")
    conn.execute("CREATE TABLE hist_tick (n int)")
    conn.execute("INSERT INTO hist VALUES (1, 'a')")
    time.sleep(0.02)
    t1 = _now_ms()
    time.sleep(0.02)
    conn.execute("INSERT INTO hist VALUES (2, 'b')")
    assert conn.execute(f"SELECT id, v FROM hist AS OF {t1}").fetchall() == [(1, "a")]
    conn.execute("UPDATE hist SET v = 'A' WHERE id = 1")
    assert conn.execute(f"SELECT id, v FROM hist AS OF {t1}").fetchall() == [(1, "a")]
    time.sleep(0.02)
    t2 = _now_ms()
    time.sleep(0.02)
    conn.execute("INSERT INTO hist_tick VALUES (1)")  # moves the latest timestamp past t2
    conn.execute("DELETE FROM hist WHERE id = 2")
    assert conn.execute("SELECT id, v FROM hist ORDER BY id").fetchall() == [(1, "A")]
    assert conn.execute(f"SELECT id, v FROM hist AS OF {t2} ORDER BY id").fetchall() == [
        (1, "A"), (2, "b")]
    assert conn.execute(f"SELECT count(*) FROM hist AS OF AT LEAST {t2}").fetchone() == (2,)
    with pytest.raises(psycopg.Error) as err:
        conn.execute(f"SELECT * FROM hist AS OF {before_create}")
    assert err.value.sqlstate == "22000"
    with pytest.raises(psycopg.Error) as err:
        conn.execute(f"SELECT * FROM hist AS OF {_now_ms() + 3_600_000}")
    assert "future" in str(err.value)
    assert conn.execute("SELECT id, v FROM hist ORDER BY id").fetchall() == [(1, "A")]


def test_jsonb_operators_and_functions(conn):
    """What a query over a Kafka JSON table (a jsonb `data` column) reaches for."""
    conn.execute("CREATE TABLE docs2 (id int, data jsonb)")
    conn.execute("""INSERT INTO docs2 VALUES
        (1, '{"a": {"b": 2}, "c": [1, "two", null], "s": "x", "n": null, "t": true}'),
        (2, '{"a": {"b": 5}, "s": "y"}')""")
    # -> keeps JSON (a string's quotes, a JSON null) and is sent as jsonb, which psycopg reads
    # as Python values, as from PostgreSQL; ->> and #>> give text, SQL NULL when absent.
    assert conn.execute("SELECT data->'s', data->'n', data->'a'->>'b', data->'c'->1, data->'c'->>1, "
                        "data->>'zz', data->'zz' FROM docs2 WHERE id = 1").fetchall() == \
        [("x", None, "2", "two", "two", None, None)]
    assert conn.execute("SELECT (data->'s')::text, (data->'n')::text, (data->'c'->1)::text FROM docs2 "
                        "WHERE id = 1").fetchall() == [('"x"', "null", '"two"')]
    assert conn.execute("SELECT data #>> '{a,b}', data #>> '{c,1}', jsonb_typeof(data), jsonb_typeof(data->'s'), "
                        "jsonb_typeof(data->'c'), jsonb_typeof(data->'n'), jsonb_typeof(data->'t'), "
                        "jsonb_typeof(data->'a'->'b'), jsonb_array_length(data->'c') "
                        "FROM docs2 WHERE id = 1").fetchall() == \
        [("2", "two", "object", "string", "array", "null", "boolean", "number", 3)]
    # A jsonb constant is normalised as PostgreSQL's jsonb input does: equal documents compare equal.
    assert conn.execute("""SELECT id FROM docs2 WHERE data = '{"s": "y", "a": {"b": 5}}'::jsonb""").fetchall() == [(2,)]
    assert conn.execute("""SELECT '{"bb": 1, "a": [1, 2.50], "bb": 3}'::jsonb::text, '[1,2 ]'::json::text""").fetchone() == \
        ('{"a": [1, 2.50], "bb": 3}', "[1,2 ]")
    assert conn.execute("SELECT (data->>'a')::text IS NOT NULL, (data->'a'->>'b')::int * 10 FROM docs2 "
                        "ORDER BY id").fetchall() == [(True, 20), (True, 50)]
    assert conn.execute("SELECT (data #- '{a}')::text FROM docs2 WHERE id = 2").fetchall() == [('{"s": "y"}',)]
    assert conn.execute("SELECT data::jsonb::text FROM docs2 WHERE id = 2").fetchall() == [('{"a": {"b": 5}, "s": "y"}',)]
    for sql, state in (("SELECT '{bad'::jsonb", "22P02"),):
        with pytest.raises(psycopg.Error) as err:
            conn.execute(sql)
        assert err.value.sqlstate == state, (sql, err.value)
    # jsonb's own operators (tests/integration/test_jsonb.py has them all, against PostgreSQL)
    assert conn.execute("""SELECT data #> '{a}', data @> '{"s": "x"}', data ? 's', data - 's' || '{"z": 1}'::jsonb """
                        "FROM docs2 WHERE id = 2").fetchall() == [({"b": 5}, False, True, {"a": {"b": 5}, "z": 1})]
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_insert_returning_columns(server, conn):
    """RETURNING gives the rows as stored (rounded, defaulted), through every client path."""
    conn.execute("CREATE TABLE ret (id int NOT NULL, name varchar(5), amount numeric(6,2), "
                 "at timestamptz DEFAULT now())")
    cur = conn.execute("INSERT INTO ret (id, name, amount) VALUES (1, 'ann', 1.005), (2, 'bob', 2) "
                       "RETURNING id, amount, ret.name AS who")
    assert [d.name for d in cur.description] == ["id", "amount", "who"]
    assert cur.fetchall() == [(1, Decimal("1.01"), "ann"), (2, Decimal("2.00"), "bob")]
    assert cur.statusmessage == "INSERT 0 2"
    # Extended protocol, parameters, prepared; INSERT ... SELECT; RETURNING *.
    assert conn.execute("INSERT INTO ret (id, name) VALUES (%s, %s) RETURNING id, name", (3, "cy"),
                        prepare=True).fetchall() == [(3, "cy")]
    rows = conn.execute("INSERT INTO ret SELECT id + 10, name, amount FROM ret WHERE id < 3 RETURNING *").fetchall()
    assert sorted(r[:3] for r in rows) == [(11, "ann", Decimal("1.01")), (12, "bob", Decimal("2.00"))]
    assert all(r[3] is not None for r in rows)

    async def with_asyncpg():
        c = await asyncpg.connect(**_adsn(server))
        try:
            return await c.fetchval("INSERT INTO ret (id) VALUES ($1) RETURNING id", 20)
        finally:
            await c.close()

    assert asyncio.run(with_asyncpg()) == 20
    # An expression is a query over the rows written (prepared: described too); an error in
    # it writes nothing.
    cur = conn.execute("INSERT INTO ret (id) VALUES (%s) RETURNING id * 2 AS twice, upper(name)", (98,), prepare=True)
    assert [d.name for d in cur.description] == ["twice", "upper"] and cur.fetchall() == [(196, None)]
    assert conn.execute("DELETE FROM ret WHERE id = 98 RETURNING id - 98").fetchall() == [(0,)]
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("INSERT INTO ret (id) VALUES (99) RETURNING 1 / (id - 99)")
    assert conn.execute("SELECT count(*), count(*) FILTER (WHERE id = 99) FROM ret").fetchone() == (6, 0)
    # UPDATE returns the new rows, DELETE the deleted ones.
    cur = conn.execute("UPDATE ret SET amount = amount * 2 WHERE id IN (1, 2) RETURNING id, amount")
    assert sorted(cur.fetchall()) == [(1, Decimal("2.02")), (2, Decimal("4.00"))] and cur.statusmessage == "UPDATE 2"
    cur = conn.execute("DELETE FROM ret WHERE id >= %s RETURNING name, id", (12,), prepare=True)
    assert sorted(cur.fetchall(), key=lambda r: r[1]) == [("bob", 12), (None, 20)]
    assert cur.statusmessage == "DELETE 2"
    assert conn.execute("SELECT count(*) FROM ret").fetchone() == (4,)
