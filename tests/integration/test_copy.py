"""COPY ... FROM STDIN and COPY table TO STDOUT, next to PostgreSQL 15 on the same data.

Every case runs against sparkwire and a real PostgreSQL with the same table: the rows
that land, or the error (SQLSTATE, message and CONTEXT), must be the same. Clients:
psycopg's copy API (CopyData in chunks, CopyDone, CopyFail) and psql's \\copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from decimal import Decimal

import psycopg
import pytest

from tests.pgserver import PG_BIN, reference_postgres

PSQL = shutil.which("psql") or f"{PG_BIN}/psql"
TABLE = "CREATE TABLE cp (id int NOT NULL, name text, amount numeric(10,2), tags text[], flag boolean DEFAULT true)"


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg:
        yield pg


@pytest.fixture
def both(server, postgres):
    conns = [psycopg.connect(server.dsn, autocommit=True), psycopg.connect(postgres.dsn, autocommit=True)]
    for c in conns:
        c.execute("DROP TABLE IF EXISTS cp")
        c.execute(TABLE)
    yield conns
    for c in conns:
        c.close()


def copy_in(conn, sql: str, chunks: list[bytes]) -> tuple | None:
    """Send the data; None, or the error as (sqlstate, message, context)."""
    try:
        with conn.cursor() as cur, cur.copy(sql) as copy:
            for chunk in chunks:
                copy.write(chunk)
    except psycopg.Error as exc:
        return exc.sqlstate, exc.diag.message_primary, exc.diag.context
    return None


def rows(conn) -> list[tuple]:
    return conn.execute("SELECT id, name, amount, tags, flag FROM cp ORDER BY id").fetchall()


CASES = [
    # text: NULLs, escapes, an escaped delimiter, CRLF, a column list (flag takes its default)
    ("COPY cp (id, name, amount, tags) FROM STDIN",
     [b"1\tann\t10.5\t{a,b}\n2\t\\N\t\\N\t\\N\r\n", b"3\ta\\tb\\\\c\\nd\\\t!\t-1\t{}\n"]),
    # a row split across CopyData messages
    ("COPY cp FROM STDIN", [b"1\tx\t1", b".25\t{\"q r\"}\tf\n2\ty\t2\t\\N\tt\n"]),
    ("COPY cp FROM STDIN WITH (DELIMITER '|', NULL 'NULL')", [b"1|NULL|\\N|NULL|true\n"]),
    ("COPY cp FROM STDIN (FORMAT csv, HEADER)",
     [b'id,name,amount,tags,flag\n1,"",,"{x,y}",\n2,"multi\nline, ""quoted""",3,,false\n']),
    ("COPY cp (name, id) FROM STDIN CSV", [b"a,1\n,2\n"]),
    ("COPY cp FROM STDIN (FORMAT csv, DELIMITER ';', QUOTE '''', NULL 'n/a')", [b"1;'a;b';n/a;n/a;t\n"]),
    # spellings Arrow's casts refuse but PostgreSQL accepts go through the type's input function
    ("COPY cp (id, amount, flag) FROM STDIN", [b" 7\t1.255\tyes\n8\t-0.005\toff\n+9\t12345678.9\tTRUE\n"]),
    ("COPY cp (id, amount) FROM STDIN", [b"1\t123456789.1\n"]),
    ("COPY cp (id, flag) FROM STDIN", [b"1\tmaybe\n"]),
    # errors: the value, the line and the column are named; nothing lands
    ("COPY cp (id, name, amount) FROM STDIN", [b"1\ta\t1\n2\tb\tlots\n"]),
    ("COPY cp (id, name) FROM STDIN", [b"1\ta\n\\N\tb\n"]),
    ("COPY cp (id, name) FROM STDIN", [b"1\ta\n2\n"]),
    ("COPY cp (id, name) FROM STDIN", [b"1\ta\tb\n"]),
    ("COPY cp (id, name) FROM STDIN (FORMAT csv)", [b"1,a\n2,b,c\n"]),
    ("COPY cp (id) FROM STDIN", [b"99999999999\n"]),
    ("COPY cp (id, name) FROM STDIN", [b"1\t\xff\n"]),
]


@pytest.mark.parametrize(("sql", "chunks"), CASES, ids=[f"c{i}" for i in range(len(CASES))])
def test_copy_from_stdin_like_postgres(both, sql, chunks):
    ours, theirs = both
    expected_error = copy_in(theirs, sql, chunks)
    assert copy_in(ours, sql, chunks) == expected_error
    assert rows(ours) == rows(theirs)
    ours.execute("SELECT 1")  # the session is still usable


JSON_DOCUMENTS = [
    r'{"n": 123456}', r'{"b": 1, "a": 2, "aa": 3, "": 4, "\u00e9": 5, "zz": 6, "\ud83d\ude00": 7}',
    r'{"a": 1, "a": 2}', r'[1.50, 1e2, 1E-2, -0, -0.0, 0.000, 12345678901234567890123, 1.0e+20]',
    r'"tab\tquote\"back\\slash\u0001\u001f\u007f/"', r'"\u00e9\u4e2d\ud83d\ude00"', '"é中 raw"',
    r'{"nested": {"z": [true, false, null], "y": {}}, "list": [[], {}]}', '  "padded"  ', 'null', 'true',
    r'"\u0000"', r'"\ud800"', '{"a": }', '[1, 2', 'NaN', '{"a": 1} x',
]


@pytest.mark.parametrize("doc", JSON_DOCUMENTS, ids=[f"j{i}" for i in range(len(JSON_DOCUMENTS))])
def test_jsonb_input_like_postgres(server, postgres, doc):
    """jsonb's input function: the stored text (key order, numbers, escapes) or the error."""
    results = []
    for dsn in (server.dsn, postgres.dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS js")
            c.execute("CREATE TABLE js (d jsonb)")
            error = copy_in(c, "COPY js FROM STDIN (FORMAT csv, QUOTE '|')", [doc.encode() + b"\n"])
            stored = c.execute("SELECT d::text FROM js").fetchall()
            results.append((error[:2] if error else None, stored))
    assert results[0] == results[1]


@pytest.mark.parametrize("sql", [
    "COPY cp FROM STDIN (FORMAT xml)",
    "COPY cp FROM STDIN (FROBNICATE true)",
    "COPY cp FROM STDIN (DELIMITER 'ab')",
    "COPY cp FROM STDIN (DELIMITER 'a')",
    "COPY cp FROM STDIN (QUOTE '\"')",
    "COPY cp (nope) FROM STDIN",
    "COPY cp (id, id) FROM STDIN",
    "COPY nowhere FROM STDIN",
])
def test_bad_copy_statements_like_postgres(both, sql):
    ours, theirs = both
    expected = copy_in(theirs, sql, [])
    assert expected is not None
    got = copy_in(ours, sql, [])
    assert got is not None and got[0] == expected[0], (got, expected)
    ours.execute("SELECT 1")


def test_copy_fail_from_the_client_stores_nothing(conn):
    """psycopg answers an exception in the copy block with CopyFail, then raises it again."""
    conn.execute("CREATE TABLE cp_fail (id int)")
    with pytest.raises(RuntimeError, match="the client gives up"), conn.cursor() as cur, \
            cur.copy("COPY cp_fail FROM STDIN") as copy:
        copy.write(b"1\n2\n")
        raise RuntimeError("the client gives up")
    assert conn.execute("SELECT count(*) FROM cp_fail").fetchone() == (0,)


def test_copy_into_a_view_is_refused(conn):
    conn.execute("CREATE TABLE cp_base (id int)")
    conn.execute("CREATE VIEW cp_view AS SELECT id FROM cp_base")
    with pytest.raises(psycopg.errors.WrongObjectType, match='cannot copy to view "cp_view"'):
        copy_in_or_raise(conn, "COPY cp_view FROM STDIN", b"1\n")


def copy_in_or_raise(conn, sql: str, data: bytes) -> None:
    with conn.cursor() as cur, cur.copy(sql) as copy:
        copy.write(data)


def test_copy_in_a_transaction_commits_and_rolls_back_with_it(server, conn):
    conn.execute("CREATE TABLE cp_tx (id int, at timestamptz DEFAULT now())")
    with psycopg.connect(server.dsn) as c:
        copy_in_or_raise(c, "COPY cp_tx (id) FROM STDIN", b"1\n2\n")
        assert c.execute("SELECT count(*) FROM cp_tx").fetchone() == (2,)  # its own writes
        c.rollback()
        assert c.execute("SELECT count(*) FROM cp_tx").fetchone() == (0,)
        copy_in_or_raise(c, "COPY cp_tx (id) FROM STDIN", b"3\n")
        c.execute("INSERT INTO cp_tx (id) VALUES (4)")
        c.commit()
        # The default was evaluated (now(), in Spark) once for the statement.
        assert c.execute("SELECT id, at IS NOT NULL FROM cp_tx ORDER BY id").fetchall() == [(3, True), (4, True)]


def test_psql_copy_from_and_to_files(server, conn):
    conn.execute("CREATE TABLE cp_psql (id int, name text, amount numeric(10,2))")
    folder = tempfile.mkdtemp(prefix="sparkwire-copy-")
    try:
        src = os.path.join(folder, "in.csv")
        with open(src, "w") as f:
            f.write("id,name,amount\n")
            f.writelines(f"{i},name {i},{i}.5\n" for i in range(1000))
        out = os.path.join(folder, "out.tsv")
        result = subprocess.run([PSQL, server.dsn, "-X", "-v", "ON_ERROR_STOP=1",
                                 "-c", f"\\copy cp_psql from '{src}' with (format csv, header)",
                                 "-c", f"\\copy cp_psql to '{out}'"],
                                check=False, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["COPY 1000", "COPY 1000"]
        assert conn.execute("SELECT count(*), sum(amount) FROM cp_psql").fetchone() == \
            (1000, Decimal(sum(range(1000))) + 500)
        with open(out) as f:
            lines = sorted(f.read().splitlines(), key=lambda line: int(line.split("\t")[0]))
        assert lines[:2] == ["0\tname 0\t0.50", "1\tname 1\t1.50"] and len(lines) == 1000
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_copy_from_in_the_extended_protocol_is_refused(conn):
    conn.execute("CREATE TABLE cp_ext (id int)")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="simple query protocol"):
        conn.execute("COPY cp_ext FROM STDIN", prepare=True)
    assert conn.execute("SELECT count(*) FROM cp_ext").fetchone() == (0,)


def test_copy_into_serial_and_identity_columns_like_postgres(server, postgres):
    """A column left out of COPY's list takes its sequence's next value, row by row (and
    currval follows); a GENERATED ALWAYS column takes COPY's value, as PostgreSQL's COPY
    does not check it."""
    results = []
    for dsn in (server.dsn, postgres.dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS cps")
            c.execute("CREATE TABLE cps (id serial, g int GENERATED ALWAYS AS IDENTITY, name text)")
            c.execute("INSERT INTO cps (name) VALUES ('before')")
            assert copy_in(c, "COPY cps (name) FROM STDIN", [b"a\nb\n", b"c\n"]) is None
            assert copy_in(c, "COPY cps (id, g, name) FROM STDIN", [b"100\t200\td\n"]) is None
            assert copy_in(c, "COPY cps (name) FROM STDIN (FORMAT csv)", [b"e\n"]) is None
            rows = c.execute("SELECT id, g, name FROM cps ORDER BY name").fetchall()
            results.append((rows, c.execute("SELECT currval('cps_id_seq')").fetchone()))
    assert results[0] == results[1]
    assert results[0] == ([(2, 2, "a"), (3, 3, "b"), (1, 1, "before"), (4, 4, "c"), (100, 200, "d"),
                           (5, 5, "e")], (5,))
