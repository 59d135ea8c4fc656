"""CHECK constraints side by side with PostgreSQL 15: declared on a column or the table,
named as PostgreSQL names them, enforced on INSERT, UPDATE, COPY FROM and at COMMIT with
23514 and `Failing row contains (...)`, added by ALTER TABLE (checked against the rows, or
NOT VALID), dropped, renamed with their column, and shown in pg_constraint."""

from __future__ import annotations

import shutil
import subprocess

import psycopg
import pytest

from tests.pgserver import PG_BIN, reference_postgres

SCHEMA = [
    ("CREATE TABLE chk (v integer CHECK (v > 0), w text, CONSTRAINT w_short CHECK (length(w) < 5), "
     "CHECK (v < 100 AND w <> 'x'))"),
    "CREATE TABLE chk2 (a integer, b integer, CHECK (a < b), CONSTRAINT w_short CHECK (a > 0))",
]


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg:
        yield pg


@pytest.fixture
def pair(server, postgres):
    ours = psycopg.connect(server.dsn, autocommit=True)
    theirs = psycopg.connect(postgres.dsn, autocommit=True)
    for conn in (ours, theirs):
        conn.execute("DROP TABLE IF EXISTS chk, chk2, chk3")
        for sql in SCHEMA:
            conn.execute(sql)
    yield ours, theirs
    ours.close()
    theirs.close()


def outcome(conn, sql):
    try:
        cur = conn.execute(sql)
        return ("ok", cur.fetchall() if cur.description else cur.statusmessage)
    except psycopg.Error as err:
        return ("error", err.diag.sqlstate, err.diag.message_primary, err.diag.message_detail)


def same(pair, sql):
    got, want = outcome(pair[0], sql), outcome(pair[1], sql)
    assert got == want, f"{sql}\nsparkwire:  {got}\npostgresql: {want}"
    return got


CONSTRAINTS = ("SELECT conname, contype, conkey FROM pg_constraint WHERE conrelid = "
               "(SELECT oid FROM pg_class WHERE relname = '{t}') ORDER BY 1")
# pg_get_constraintdef of checks PostgreSQL prints as written; it parenthesizes every operator
# and casts literals (`((v < 100) AND (w <> 'x'::text))`), which sparkwire does not.
DEFINITIONS = ("SELECT conname, pg_get_constraintdef(c.oid) FROM pg_constraint AS c WHERE contype = 'c' AND conname "
               "IN ('chk_v_check', 'w_short', 'chk_n_check', 'chk_v_check1', 'chk2_check') ORDER BY 1, 2")


@pytest.mark.parametrize("steps", [
    ["INSERT INTO chk VALUES (0, 'a')", "INSERT INTO chk VALUES (1, 'abcdef')", "INSERT INTO chk VALUES (NULL, NULL)",
     "INSERT INTO chk VALUES (5, 'x')", "INSERT INTO chk VALUES (5, 'ok'), (6, 'fine')",
     "INSERT INTO chk VALUES (7, 'ok'), (-7, 'bad')", "UPDATE chk SET v = -1 WHERE v = 5",
     "UPDATE chk SET v = v + 1", "INSERT INTO chk SELECT g, 'g' FROM generate_series(8, 9) AS g",
     "INSERT INTO chk SELECT g, 'g' FROM generate_series(-1, 1) AS g"],
    ["INSERT INTO chk VALUES (5, 'ok')", "ALTER TABLE chk ADD CONSTRAINT big CHECK (v > 10)",
     "ALTER TABLE chk ADD CONSTRAINT big CHECK (v > 10) NOT VALID", "INSERT INTO chk VALUES (3, 'a')",
     "ALTER TABLE chk DROP CONSTRAINT big", "INSERT INTO chk VALUES (3, 'a')", "ALTER TABLE chk ADD CHECK (v <> 7)",
     "INSERT INTO chk VALUES (7, 'a')", "ALTER TABLE chk RENAME COLUMN v TO vv", "INSERT INTO chk VALUES (7, 'a')",
     "INSERT INTO chk VALUES (8, 'a')", "ALTER TABLE chk DROP COLUMN vv", "INSERT INTO chk VALUES ('abcdefg')",
     "ALTER TABLE chk ADD COLUMN n integer DEFAULT -1 CHECK (n > 0)",
     "ALTER TABLE chk ADD COLUMN n integer DEFAULT 1 CHECK (n > 0)", "INSERT INTO chk VALUES ('a', 0)"],
    ["INSERT INTO chk2 VALUES (1, 2)", "INSERT INTO chk2 VALUES (2, 1)", "INSERT INTO chk2 VALUES (0, 1)",
     "ALTER TABLE chk2 ADD CONSTRAINT w_short CHECK (b > 0)", "ALTER TABLE chk2 ADD CHECK (nope > 0)",
     "CREATE TABLE chk3 (a integer CHECK (a > 0), CHECK (a > 0))"],
])
def test_checks_like_postgres(pair, steps):
    for sql in steps:
        same(pair, sql)
    same(pair, "SELECT * FROM chk ORDER BY 1, 2")
    for table in ("chk", "chk2", "chk3"):
        same(pair, CONSTRAINTS.format(t=table))
    same(pair, DEFINITIONS)
    same(pair, "SELECT constraint_name, constraint_type FROM information_schema.table_constraints "
               "WHERE table_name LIKE 'chk%' ORDER BY 1")


def test_copy_and_transaction_block(pair):
    ours, theirs = pair
    for conn in (ours, theirs):
        with pytest.raises(psycopg.errors.CheckViolation) as info, conn.cursor() as cur, \
                cur.copy("COPY chk FROM STDIN") as copy:
            copy.write("1\tok\n0\tno\n")
        assert info.value.diag.message_primary == 'new row for relation "chk" violates check constraint "chk_v_check"'
    ours.execute("BEGIN")
    ours.execute("INSERT INTO chk VALUES (1, 'ok')")
    ours.execute("INSERT INTO chk VALUES (0, 'no')")  # refused at COMMIT at the latest
    with pytest.raises(psycopg.errors.CheckViolation):
        ours.execute("COMMIT")
    assert ours.execute("SELECT count(*) FROM chk").fetchone() == (0,)


def test_psql_describe_shows_the_checks(pair, server, postgres):
    psql = shutil.which("psql") or f"{PG_BIN}/psql"

    def describe(dsn: str) -> str:
        out = subprocess.run([psql, dsn, "-X", "-c", r"\d chk2"], capture_output=True, text=True, timeout=120,
                             check=False)
        assert out.returncode == 0, out.stderr
        return out.stdout

    ours, theirs = describe(server.dsn), describe(postgres.dsn)
    assert ours.split("Check constraints:")[1] == theirs.split("Check constraints:")[1]
    assert '"chk2_check" CHECK (a < b)' in ours
