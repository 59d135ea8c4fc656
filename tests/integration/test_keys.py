"""PRIMARY KEY and UNIQUE side by side with PostgreSQL 15: declared, enforced on every
write path (INSERT of constants and of a query, UPDATE, COPY FROM, transaction blocks,
concurrent sessions, after a restart), refused with PostgreSQL's error, and shown in the
catalog as PostgreSQL shows them (pg_constraint, pg_index, pg_indexes, information_schema,
psql's \\d)."""

from __future__ import annotations

import shutil
import subprocess
import threading

import psycopg
import pytest

from tests.pgserver import PG_BIN, reference_postgres
from tests.support import ServerProcess, running_server

SCHEMA = [
    "CREATE TABLE k1 (id integer PRIMARY KEY, code text UNIQUE, note text)",
    "CREATE TABLE k2 (a integer, b text, c integer, PRIMARY KEY (a, b), CONSTRAINT k2_c_named UNIQUE (c))",
    "CREATE TABLE k3 (x double precision UNIQUE, n numeric(10,2) UNIQUE)",
]


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg:
        yield pg


def _both(server, postgres):
    ours = psycopg.connect(server.dsn, autocommit=True)
    theirs = psycopg.connect(postgres.dsn, autocommit=True)
    return ours, theirs


@pytest.fixture
def pair(server, postgres):
    """A connection to each, with the same fresh tables."""
    ours, theirs = _both(server, postgres)
    for conn in (ours, theirs):
        for name in ("k1", "k2", "k3"):
            conn.execute(f"DROP TABLE IF EXISTS {name}")
        for sql in SCHEMA:
            conn.execute(sql)
    yield ours, theirs
    ours.close()
    theirs.close()


def outcome(conn, sql, params=None):
    """Rows, or (SQLSTATE, message, detail) of the error; the session must stay usable."""
    try:
        cur = conn.execute(sql, params)
        return ("ok", cur.fetchall() if cur.description else cur.statusmessage)
    except psycopg.Error as err:
        diag = err.diag
        return ("error", diag.sqlstate, diag.message_primary, diag.message_detail)


def same(pair, sql, params=None):
    ours, theirs = pair
    got, want = outcome(ours, sql, params), outcome(theirs, sql, params)
    assert got == want, f"{sql}\nsparkwire:  {got}\npostgresql: {want}"
    return got


def rows(pair, sql):
    return same(pair, sql)[1]


@pytest.mark.parametrize("steps", [
    # a duplicate from another statement, and within one statement
    ["INSERT INTO k1 VALUES (1, 'a', 'x')", "INSERT INTO k1 VALUES (1, 'b', 'y')",
     "INSERT INTO k1 VALUES (2, 'c', NULL), (2, 'd', NULL)", "INSERT INTO k1 VALUES (3, 'a', NULL)"],
    # NULL: never a duplicate in UNIQUE; refused in a PRIMARY KEY column
    ["INSERT INTO k1 VALUES (1, NULL, NULL), (2, NULL, NULL)", "INSERT INTO k1 VALUES (NULL, 'z', NULL)"],
    # composite keys, a named constraint
    ["INSERT INTO k2 VALUES (1, 'a', 10), (1, 'b', 11), (2, 'a', 12)",
     "INSERT INTO k2 VALUES (1, 'a', 13)", "INSERT INTO k2 VALUES (3, 'c', 10)"],
    # INSERT ... SELECT (the Spark path), including one that duplicates within itself
    ["INSERT INTO k1 VALUES (1, 'a', NULL)", "INSERT INTO k1 SELECT id + 1, code || 'x', note FROM k1",
     "INSERT INTO k1 SELECT id, 'new', note FROM k1 WHERE id = 1",
     "INSERT INTO k1 SELECT 10, 'q', NULL FROM k1"],
    # UPDATE to a taken key, to a free one, and of every row at once
    ["INSERT INTO k1 VALUES (1, 'a', NULL), (2, 'b', NULL)", "UPDATE k1 SET id = 2 WHERE id = 1",
     "UPDATE k1 SET id = 5 WHERE id = 1", "UPDATE k1 SET code = 'same'", "SELECT * FROM k1 ORDER BY id"],
    # a key deleted is free again
    ["INSERT INTO k1 VALUES (1, 'a', NULL)", "DELETE FROM k1 WHERE id = 1", "INSERT INTO k1 VALUES (1, 'a', 'again')",
     "SELECT * FROM k1"],
    # floats compare as PostgreSQL compares them: NaN = NaN, -0 = 0; numerics by value
    ["INSERT INTO k3 VALUES ('NaN', 1)", "INSERT INTO k3 VALUES ('NaN', 2)", "INSERT INTO k3 VALUES (0, 3)",
     "INSERT INTO k3 VALUES ('-0', 4)", "INSERT INTO k3 VALUES (5, 1.001)"],
    # RETURNING of a refused insert returns nothing
    ["INSERT INTO k1 VALUES (1, 'a', NULL) RETURNING id", "INSERT INTO k1 VALUES (1, 'b', NULL) RETURNING id"],
])
def test_enforced_like_postgres(pair, steps):
    for sql in steps:
        same(pair, sql)
    assert rows(pair, "SELECT count(*) FROM k1") is not None


@pytest.mark.parametrize("steps", [
    # DO NOTHING: with a target, without one (any key), by constraint name, within one statement
    ["INSERT INTO k1 VALUES (1, 'a', 'x')", "INSERT INTO k1 VALUES (1, 'b', 'y') ON CONFLICT (id) DO NOTHING",
     "INSERT INTO k1 VALUES (2, 'a', 'y') ON CONFLICT DO NOTHING",
     "INSERT INTO k1 VALUES (2, 'a', 'y') ON CONFLICT (id) DO NOTHING",
     "INSERT INTO k1 VALUES (3, 'c', NULL), (3, 'd', NULL), (4, 'e', NULL) ON CONFLICT ON CONSTRAINT k1_pkey DO NOTHING",
     "SELECT * FROM k1 ORDER BY id"],
    # DO UPDATE: excluded, the target's alias and its own columns, WHERE, RETURNING, the tag's count
    ["INSERT INTO k1 VALUES (1, 'a', 'x'), (2, 'b', 'y')",
     "INSERT INTO k1 VALUES (1, 'z', 'new'), (5, 'f', NULL) ON CONFLICT (id) DO UPDATE SET note = excluded.note",
     ("INSERT INTO k1 AS t VALUES (2, 'q', 'w') ON CONFLICT (id) DO UPDATE SET note = t.note || '+' || excluded.note "
     "RETURNING id, code, note"),
     "INSERT INTO k1 VALUES (1, 'q', 'no') ON CONFLICT (id) DO UPDATE SET note = excluded.note WHERE k1.note = 'zzz'",
     ("INSERT INTO k1 VALUES (1, 'q', 'yes') ON CONFLICT (id) DO UPDATE SET note = excluded.note, code = 'qq' "
     "WHERE k1.note = 'new' RETURNING *"),
     "SELECT * FROM k1 ORDER BY id"],
    # INSERT ... SELECT with ON CONFLICT, and composite keys
    ["INSERT INTO k2 VALUES (1, 'a', 1), (2, 'b', 2)",
     "INSERT INTO k2 SELECT a, b, c + 10 FROM k2 ON CONFLICT (b, a) DO UPDATE SET c = excluded.c",
     "INSERT INTO k2 SELECT a + 1, b, c + 100 FROM k2 ON CONFLICT (a, b) DO NOTHING", "SELECT * FROM k2 ORDER BY a, b"],
    # errors: one key twice in DO UPDATE, no matching key, no such constraint, DO UPDATE with no target,
    # an update that collides with another key
    ["INSERT INTO k1 VALUES (1, 'a', NULL), (2, 'b', NULL)",
     "INSERT INTO k1 VALUES (1, 'x', NULL), (1, 'y', NULL) ON CONFLICT (id) DO UPDATE SET note = excluded.code",
     "INSERT INTO k1 VALUES (1, 'x', NULL) ON CONFLICT (note) DO NOTHING",
     "INSERT INTO k1 VALUES (1, 'x', NULL) ON CONFLICT (nope) DO NOTHING",
     "INSERT INTO k1 VALUES (1, 'x', NULL) ON CONFLICT ON CONSTRAINT nope DO NOTHING",
     "INSERT INTO k1 VALUES (1, 'x', NULL) ON CONFLICT DO UPDATE SET note = 'n'",
     "INSERT INTO k1 VALUES (1, 'x', NULL) ON CONFLICT (id) DO UPDATE SET code = 'b'",
     "INSERT INTO k1 VALUES (3, 'a', NULL) ON CONFLICT (id) DO NOTHING",
     "SELECT * FROM k1 ORDER BY id"],
    # in a transaction block, against its own staged rows
    ["BEGIN", "INSERT INTO k1 VALUES (1, 'a', 'x')", "INSERT INTO k1 VALUES (1, 'a', 'y') ON CONFLICT DO NOTHING",
     "INSERT INTO k1 VALUES (1, 'a', 'z') ON CONFLICT (id) DO UPDATE SET note = excluded.note", "COMMIT",
     "SELECT * FROM k1"],
])
def test_on_conflict(pair, steps):
    for sql in steps:
        same(pair, sql)


@pytest.mark.parametrize("steps", [
    # recorded under PostgreSQL's names, shown in the catalog, dropped
    ["CREATE INDEX ON k1 (note)", "CREATE INDEX k1_by_code ON k1 USING btree (code DESC, note NULLS FIRST)",
     "CREATE INDEX IF NOT EXISTS k1_by_code ON k1 (note)", "CREATE INDEX k1_by_code ON k1 (note)",
     "CREATE INDEX ON k1 (note)", "CREATE INDEX h ON k1 USING hash (note)",
     "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'k1' ORDER BY 1",
     ("SELECT ci.relname, ci.relam, i.indisunique, i.indisprimary, array_to_string(i.indkey, ' '), i.indoption::text FROM pg_index i "
     "JOIN pg_class ci ON ci.oid = i.indexrelid JOIN pg_class ct ON ct.oid = i.indrelid WHERE ct.relname = 'k1' "
     "ORDER BY 1"),
     "DROP INDEX k1_note_idx, h", "DROP INDEX k1_note_idx", "DROP INDEX IF EXISTS k1_note_idx",
     "DROP INDEX k1_pkey", "DROP INDEX k1", "SELECT indexname FROM pg_indexes WHERE tablename = 'k1' ORDER BY 1"],
    # a unique index is enforced, and refused when the rows already break it
    ["INSERT INTO k1 VALUES (1, 'a', 'x'), (2, 'b', 'x')", "CREATE UNIQUE INDEX one_note ON k1 (note)",
     "CREATE UNIQUE INDEX k1_id_note ON k1 (id, note)", "INSERT INTO k1 VALUES (3, 'c', 'y')",
     "UPDATE k1 SET note = 'z' WHERE id = 1", "CREATE UNIQUE INDEX one_note ON k1 (note)",
     "CREATE UNIQUE INDEX one_code ON k1 (code)", "INSERT INTO k1 VALUES (4, 'c', 'w')",
     "INSERT INTO k1 VALUES (4, 'c', 'w') ON CONFLICT (code) DO UPDATE SET note = 'via index'",
     "DROP INDEX one_code", "INSERT INTO k1 VALUES (5, 'c', 'v')", "SELECT * FROM k1 ORDER BY id"],
    # bad indexes
    ["CREATE INDEX ON nope (a)", "CREATE INDEX ON k1 (nope)", "CREATE INDEX ON k1 USING nosuch (note)",
     "CREATE UNIQUE INDEX ON k1 USING hash (note)", "CREATE INDEX k2 ON k1 (note)", "BEGIN",
     "CREATE INDEX CONCURRENTLY ON k1 (note)", "ROLLBACK"],
    # in a transaction block: staged, committed or rolled back with it
    ["BEGIN", "CREATE INDEX staged ON k1 (note)", "ROLLBACK", "DROP INDEX staged",
     "BEGIN", "CREATE UNIQUE INDEX staged ON k1 (note)", "INSERT INTO k1 VALUES (1, 'a', 'n'), (2, 'b', 'm')", "COMMIT",
     "INSERT INTO k1 VALUES (3, 'c', 'n')", "SELECT indexname FROM pg_indexes WHERE tablename = 'k1' ORDER BY 1"],
])
def test_indexes(pair, steps):
    for sql in steps:
        same(pair, sql)


@pytest.mark.parametrize("sql, fragment", [
    ("CREATE INDEX ON k1 ((id + 1))", "indexes on expressions"),
    ("CREATE INDEX ON k1 USING gin (note)", "gin indexes"),
    ("CREATE INDEX ON k1 (note) WHERE id > 0", "partial indexes"),
    ("CREATE INDEX ON k1 (note) INCLUDE (code)", "INCLUDE"),
    ("CREATE TABLE bad (a int, b int GENERATED ALWAYS AS (a * 2) STORED)", "generated columns"),
    ("CREATE TABLE bad (a int REFERENCES k1 (id) ON DELETE SET NULL (a))", "SET NULL (columns)"),
    ("INSERT INTO k1 VALUES (1, 'a') ON CONFLICT (id) WHERE id > 0 DO NOTHING", "partial indexes"),
])
def test_refused_where_postgres_accepts(pair, sql, fragment):
    """What sparkwire cannot honour fails by name (PostgreSQL accepts it); nothing is created."""
    ours, _ = pair
    got = outcome(ours, sql)
    assert got[:2] == ("error", "0A000") and fragment in got[2], got
    assert outcome(ours, "SELECT count(*) FROM pg_indexes WHERE tablename = 'k1'") == ("ok", [(2,)])


def test_transaction_block(pair):
    """The duplicate fails the statement inside the block; the block is then aborted."""
    for sql in ["INSERT INTO k1 VALUES (1, 'a', NULL)", "BEGIN", "INSERT INTO k1 VALUES (2, 'b', NULL)",
                "INSERT INTO k1 VALUES (2, 'c', NULL)", "SELECT 1", "ROLLBACK",
                "BEGIN", "DELETE FROM k1 WHERE id = 1", "INSERT INTO k1 VALUES (1, 'z', NULL)", "COMMIT",
                "BEGIN", "INSERT INTO k1 VALUES (3, 'q', NULL)", "SAVEPOINT s", "INSERT INTO k1 VALUES (3, 'r', NULL)",
                "ROLLBACK TO s", "INSERT INTO k1 VALUES (4, 'r', NULL)", "COMMIT", "SELECT * FROM k1 ORDER BY id"]:
        same(pair, sql)


def test_table_created_in_the_block(pair):
    for sql in ["BEGIN", "CREATE TABLE k4 (a int PRIMARY KEY)", "INSERT INTO k4 VALUES (1)",
                "INSERT INTO k4 VALUES (1)", "ROLLBACK", "BEGIN", "CREATE TABLE k4 (a int PRIMARY KEY)",
                "INSERT INTO k4 VALUES (1), (2)", "COMMIT", "INSERT INTO k4 VALUES (2)",
                "SELECT * FROM k4 ORDER BY a", "DROP TABLE k4"]:
        same(pair, sql)


def test_copy_from(pair):
    ours, theirs = pair
    for conn in (ours, theirs):
        conn.execute("INSERT INTO k1 VALUES (1, 'a', NULL)")
        with pytest.raises(psycopg.errors.UniqueViolation) as info, conn.cursor().copy("COPY k1 FROM STDIN") as copy:
            copy.write("2\tb\t\\N\n1\tc\t\\N\n")
        assert info.value.diag.message_detail == "Key (id)=(1) already exists."
    assert rows(pair, "SELECT id, code FROM k1 ORDER BY id") == [(1, "a")]


def test_commit_loses_to_a_concurrent_insert(server):
    """Block A stages key 5, session B commits key 5 first: A's COMMIT fails with 23505
    (PostgreSQL would make B wait for A instead; either way one row of 5 remains)."""
    with psycopg.connect(server.dsn, autocommit=True) as a, psycopg.connect(server.dsn, autocommit=True) as b:
        a.execute("CREATE TABLE race (k int PRIMARY KEY, who text)")
        a.execute("BEGIN")
        a.execute("INSERT INTO race VALUES (5, 'a')")
        b.execute("INSERT INTO race VALUES (5, 'b')")
        with pytest.raises(psycopg.errors.UniqueViolation):
            a.execute("COMMIT")
        assert a.execute("SELECT * FROM race").fetchall() == [(5, "b")]
        a.execute("DROP TABLE race")


def test_concurrent_inserts_of_one_key(server):
    """Writers that share a group commit: exactly one of them gets the key."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE crowd (k int PRIMARY KEY, who int)")
    results: list[str] = []

    def insert(who: int) -> None:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for k in range(5):
                try:
                    conn.execute("INSERT INTO crowd VALUES (%s, %s)", (k, who))
                    results.append("ok")
                except psycopg.errors.UniqueViolation:
                    results.append("dup")

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 5 and results.count("dup") == 25
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT k, count(*) FROM crowd GROUP BY k ORDER BY k").fetchall() == [
            (k, 1) for k in range(5)]
        conn.execute("DROP TABLE crowd")


@pytest.mark.parametrize("sql", [
    "CREATE TABLE bad (a int PRIMARY KEY, b int PRIMARY KEY)",
    "CREATE TABLE bad (a int, PRIMARY KEY (nope))",
    "CREATE TABLE bad (a int, UNIQUE (a, a))",
    "CREATE TABLE bad (a int, PRIMARY KEY (a, a))",
    "CREATE TABLE bad (a json UNIQUE)",
    "CREATE TABLE bad (a int CONSTRAINT k1 UNIQUE)",
    "CREATE TABLE k1_pkey (a int)",
])
def test_bad_declarations(pair, sql):
    got = same(pair, sql)
    assert got[0] == "error"
    assert outcome(pair[0], "SELECT 1") == ("ok", [(1,)])


def test_keys_on_the_same_columns_are_one(pair):
    """PostgreSQL builds one index for keys on the same columns; the PRIMARY KEY's name wins."""
    for sql in ["CREATE TABLE one (a int, CONSTRAINT s1 UNIQUE (a), CONSTRAINT s2 PRIMARY KEY (a))",
                "CREATE TABLE two (a int UNIQUE, UNIQUE (a), b int, CONSTRAINT same UNIQUE (b), UNIQUE (b))",
                ("SELECT c.relname, conname, contype FROM pg_constraint con JOIN pg_class c ON c.oid = conrelid "
                "WHERE c.relname IN ('one', 'two') ORDER BY 1, 2"),
                "DROP TABLE one", "DROP TABLE two"]:
        same(pair, sql)


def test_names_as_postgres_chooses_them(pair):
    long = "t" * 60
    for sql in [f"CREATE TABLE {long} (a int PRIMARY KEY, {long}x int UNIQUE, UNIQUE (a, {long}x))",
                "CREATE TABLE k5 (a int UNIQUE, b int, UNIQUE (a), UNIQUE (b), PRIMARY KEY (b))",
                "CREATE TABLE k6 (a int CONSTRAINT k6_a_key UNIQUE, b int UNIQUE, UNIQUE (a, b))"]:
        same(pair, sql)
    catalog = ("SELECT c.relname, con.conname, con.contype, con.conkey FROM pg_constraint con "
               f"JOIN pg_class c ON c.oid = con.conrelid WHERE c.relname IN ('{long}', 'k5', 'k6') "
               "ORDER BY 1, 2")
    assert rows(pair, catalog)
    for name in (long, "k5", "k6"):
        same(pair, f"DROP TABLE {name}")


CATALOG_QUERIES = [
    ("SELECT conname, contype, condeferrable, condeferred, convalidated, conkey, confupdtype, conislocal "
    "FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid WHERE c.relname LIKE 'k_' ORDER BY conname"),
    ("SELECT ci.relname, ci.relkind, ct.relname, i.indnatts, i.indisunique, i.indisprimary, array_to_string(i.indkey, ' ') "
    "FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid JOIN pg_class ct ON ct.oid = i.indrelid "
    "WHERE ct.relname LIKE 'k_' ORDER BY ci.relname"),
    "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'k_' ORDER BY indexname",
    "SELECT tablename, hasindexes FROM pg_tables WHERE tablename LIKE 'k_' ORDER BY 1",
    ("SELECT constraint_name, table_name, constraint_type, is_deferrable, initially_deferred, enforced, nulls_distinct "
    "FROM information_schema.table_constraints WHERE table_name LIKE 'k_' AND constraint_type <> 'CHECK' ORDER BY 1"),
    ("SELECT constraint_name, table_name, column_name, ordinal_position FROM information_schema.key_column_usage "
    "WHERE table_name LIKE 'k_' ORDER BY 1, 4"),
    ("SELECT constraint_name, table_name, column_name FROM information_schema.constraint_column_usage "
    "WHERE table_name LIKE 'k_' ORDER BY 1, 3"),
    ("SELECT con.conname, pg_get_constraintdef(con.oid), pg_get_constraintdef(con.oid, true), "
    "pg_get_indexdef(con.conindid) FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid "
    "WHERE c.relname LIKE 'k_' ORDER BY 1"),
    ("SELECT c.relname, pg_get_indexdef(i.indexrelid, 1, false), pg_get_indexdef(i.indexrelid, 2, true), "
     "pg_get_indexdef(i.indexrelid, 0, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
     "JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname LIKE 'k_' ORDER BY 1"),
    ("SELECT a.attname, a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "WHERE c.relname = 'k2' AND a.attnum > 0 ORDER BY a.attnum"),
]


@pytest.mark.parametrize("sql", CATALOG_QUERIES)
def test_catalog(pair, sql):
    assert rows(pair, sql)


def test_sqlalchemy_inspector(pair, server, postgres):
    """What SQLAlchemy's inspector reflects of keys and indexes, as from PostgreSQL."""
    import sqlalchemy as sa

    for conn in pair:
        conn.execute("CREATE INDEX k1_note_code ON k1 (note DESC, code)")
        conn.execute("CREATE UNIQUE INDEX k3_both ON k3 (n, x)")

    def reflect(dsn: str) -> dict:
        parts = dict(p.split("=") for p in dsn.split())
        engine = sa.create_engine(f"postgresql+psycopg://{parts['user']}@{parts['host']}:{parts['port']}/{parts['dbname']}")
        try:
            inspector = sa.inspect(engine)
            return {table: (inspector.get_pk_constraint(table), inspector.get_indexes(table),
                            inspector.get_unique_constraints(table)) for table in ("k1", "k2", "k3")}
        finally:
            engine.dispose()

    assert reflect(server.dsn) == reflect(postgres.dsn)


def _psql(dsn: str, command: str) -> str:
    psql = shutil.which("psql") or f"{PG_BIN}/psql"
    out = subprocess.run([psql, dsn, "-X", "-c", command], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_psql_describe_shows_the_indexes(pair, server, postgres):
    ours = _psql(server.dsn, r"\d k2")
    theirs = _psql(postgres.dsn, r"\d k2")
    assert ours.split("Indexes:")[1] == theirs.split("Indexes:")[1]
    assert '"k2_pkey" PRIMARY KEY, btree (a, b)' in ours


def test_keys_and_indexes_survive_a_restart():
    """After a restart the key counts are rebuilt from the tables' files, the indexes are
    still there, and no id an index took is handed out again."""
    with running_server() as first:
        with psycopg.connect(first.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (k int PRIMARY KEY, v text UNIQUE)")
            conn.execute("INSERT INTO kept SELECT g, 'v' || g FROM generate_series(1, 1000) AS g")
            conn.execute("DELETE FROM kept WHERE k = 7")
            conn.execute("CREATE TABLE ix (a int, b text)")
            conn.execute("INSERT INTO ix VALUES (1, 'x')")
            conn.execute("CREATE UNIQUE INDEX ix_b ON ix (b)")
            conn.execute("CREATE INDEX ON ix (a)")
            conn.execute("CREATE TABLE later (c int)")  # takes the id after the indexes'
        first.stop()
        second = ServerProcess(data_dir=first.data_dir).start()
        try:
            second.wait_ready()
            with psycopg.connect(second.dsn, autocommit=True) as conn:
                with pytest.raises(psycopg.errors.UniqueViolation) as info:
                    conn.execute("INSERT INTO kept VALUES (500, 'fresh')")
                assert info.value.diag.message_detail == "Key (k)=(500) already exists."
                with pytest.raises(psycopg.errors.UniqueViolation):
                    conn.execute("INSERT INTO kept VALUES (2000, 'v3')")
                conn.execute("INSERT INTO kept VALUES (7, 'v7')")
                assert conn.execute("SELECT count(*) FROM kept").fetchone() == (1000,)

                assert conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'ix' ORDER BY 1"
                                    ).fetchall() == [("ix_a_idx",), ("ix_b",)]
                with pytest.raises(psycopg.errors.UniqueViolation):
                    conn.execute("INSERT INTO ix VALUES (2, 'x')")
                conn.execute("CREATE TABLE newer (d int)")
                oids = conn.execute("SELECT oid FROM pg_class WHERE relname IN ('ix', 'ix_b', 'ix_a_idx', 'later', 'newer')"
                                    ).fetchall()
                assert len(set(oids)) == 5
                conn.execute("DROP TABLE ix")
                assert conn.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'ix'").fetchone() == (0,)
                conn.execute("CREATE TABLE ix_b (e int)")  # the name is free again
        finally:
            second.stop()
