"""ALTER TABLE side by side with PostgreSQL 15: ADD/DROP COLUMN, RENAME, ALTER COLUMN
SET/DROP DEFAULT and NOT NULL, ADD/DROP CONSTRAINT, several actions in one statement
(all or nothing), the subcommands refused with 0A000; and what an ALTER touches: the
catalog (information_schema, pg_attribute, pg_constraint, psql's \\d), views over the
table, a running SUBSCRIBE, transaction blocks, a table fed by a source, and a restart."""

from __future__ import annotations

import shutil
import subprocess

import psycopg
import pytest

from tests.pgserver import PG_BIN, reference_postgres
from tests.support import ServerProcess, Subscriber, running_server, wait_until

SCHEMA = [
    "CREATE TABLE a1 (id integer PRIMARY KEY, b text, c integer UNIQUE)",
    "INSERT INTO a1 VALUES (1, 'x', 10), (2, NULL, 20)",
    "CREATE TABLE a2 (k integer, v text)",
]


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg:
        yield pg


@pytest.fixture
def pair(server, postgres):
    """A connection to each, with the same fresh tables."""
    ours = psycopg.connect(server.dsn, autocommit=True)
    theirs = psycopg.connect(postgres.dsn, autocommit=True)
    for conn in (ours, theirs):
        for view in ("v_ab", "v_star", "v_over", "v_c", "w_view"):
            conn.execute(f"DROP VIEW IF EXISTS {view} CASCADE")
        for name in ("a1", "a2", "renamed"):
            conn.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
        for sql in SCHEMA:
            conn.execute(sql)
    yield ours, theirs
    ours.close()
    theirs.close()


def outcome(conn, sql):
    """Rows or the status, or (SQLSTATE, message, detail) of the error."""
    try:
        cur = conn.execute(sql)
        return ("ok", cur.fetchall() if cur.description else cur.statusmessage)
    except psycopg.Error as err:
        diag = err.diag
        return ("error", diag.sqlstate, diag.message_primary, diag.message_detail)


def same(pair, sql):
    ours, theirs = pair
    got, want = outcome(ours, sql), outcome(theirs, sql)
    assert got == want, f"{sql}\nsparkwire:  {got}\npostgresql: {want}"
    return got


SHAPE = ("SELECT column_name, ordinal_position, is_nullable, data_type FROM information_schema.columns "
         "WHERE table_name = '{t}' ORDER BY ordinal_position")
ROWS = "SELECT * FROM {t} ORDER BY 1, 2"


def same_table(pair, table="a1"):
    same(pair, SHAPE.format(t=table))
    same(pair, ROWS.format(t=table))


@pytest.mark.parametrize("steps", [
    # ADD COLUMN: existing rows read the default, or NULL
    ["ALTER TABLE a1 ADD COLUMN d integer DEFAULT 7", "ALTER TABLE a1 ADD e text",
     "INSERT INTO a1 (id, b, c) VALUES (3, 'y', 30)", "ALTER TABLE a1 ADD COLUMN f numeric(6,2) DEFAULT 1.5 NOT NULL"],
    # NOT NULL without a default over rows; IF NOT EXISTS; a name taken
    ["ALTER TABLE a1 ADD COLUMN d integer NOT NULL", "ALTER TABLE a1 ADD COLUMN b integer",
     "ALTER TABLE a1 ADD COLUMN IF NOT EXISTS b integer", "ALTER TABLE a2 ADD COLUMN n integer NOT NULL",
     "INSERT INTO a2 VALUES (1, 'v', NULL)", "INSERT INTO a2 VALUES (1, 'v', 5)"],
    # a missing table, IF EXISTS
    ["ALTER TABLE nope ADD COLUMN x integer", "ALTER TABLE IF EXISTS nope ADD COLUMN x integer"],
    # DROP COLUMN: the key on it goes with it
    ["ALTER TABLE a1 DROP COLUMN c", "INSERT INTO a1 VALUES (3, 'x')", "ALTER TABLE a1 DROP COLUMN nope",
     "ALTER TABLE a1 DROP COLUMN IF EXISTS nope", "ALTER TABLE a1 DROP id",
     "INSERT INTO a1 VALUES ('again')", "ALTER TABLE a1 ADD COLUMN z boolean DEFAULT true"],
    # SET/DROP DEFAULT, SET/DROP NOT NULL
    ["ALTER TABLE a1 ALTER COLUMN b SET DEFAULT 'dflt'", "INSERT INTO a1 (id, c) VALUES (3, 30)",
     "ALTER TABLE a1 ALTER b DROP DEFAULT", "INSERT INTO a1 (id, c) VALUES (4, 40)",
     "ALTER TABLE a1 ALTER COLUMN b SET NOT NULL", "ALTER TABLE a1 ALTER COLUMN c SET NOT NULL",
     "INSERT INTO a1 VALUES (5, 'q', NULL)", "ALTER TABLE a1 ALTER COLUMN c DROP NOT NULL",
     "INSERT INTO a1 VALUES (5, 'q', NULL)", "ALTER TABLE a1 ALTER COLUMN id DROP NOT NULL",
     "ALTER TABLE a1 ALTER COLUMN nope SET NOT NULL"],
    # ADD/DROP CONSTRAINT
    ["ALTER TABLE a1 ADD CONSTRAINT a1_b_key UNIQUE (b)", "INSERT INTO a1 VALUES (3, 'x', 30)",
     "ALTER TABLE a1 DROP CONSTRAINT a1_b_key", "INSERT INTO a1 VALUES (3, 'x', 30)",
     "ALTER TABLE a1 ADD UNIQUE (b)", "ALTER TABLE a1 ADD PRIMARY KEY (c)",
     "ALTER TABLE a1 DROP CONSTRAINT nope", "ALTER TABLE a1 DROP CONSTRAINT IF EXISTS nope",
     "ALTER TABLE a1 DROP CONSTRAINT a1_pkey", "ALTER TABLE a1 ADD CONSTRAINT a1_c_pk PRIMARY KEY (c)",
     "INSERT INTO a1 VALUES (1, 'z', 40)", "INSERT INTO a1 VALUES (9, 'z', 10)",
     "ALTER TABLE a2 ADD PRIMARY KEY (k)", "INSERT INTO a2 VALUES (NULL, 'n')",
     "ALTER TABLE a2 ADD CONSTRAINT a2_v UNIQUE (nope)"],
    # adding a key the rows break; a primary key over NULLs
    ["INSERT INTO a2 VALUES (1, 'a'), (1, 'b'), (NULL, 'c')", "ALTER TABLE a2 ADD UNIQUE (k)",
     "ALTER TABLE a2 ADD PRIMARY KEY (v)", "ALTER TABLE a2 ADD PRIMARY KEY (k)"],
    # RENAME
    ["ALTER TABLE a1 RENAME COLUMN b TO bee", "ALTER TABLE a1 RENAME c TO bee", "ALTER TABLE a1 RENAME nope TO x",
     "INSERT INTO a1 (id, bee, c) VALUES (3, 'x', 11)", "INSERT INTO a1 (id, bee, c) VALUES (4, 'x', 10)",
     "ALTER TABLE a1 RENAME TO renamed", "SELECT * FROM renamed ORDER BY 1", "ALTER TABLE renamed RENAME TO a2",
     "ALTER TABLE IF EXISTS nope RENAME TO x", "ALTER TABLE renamed RENAME TO a1"],
    # several actions: all or nothing
    ["ALTER TABLE a1 ADD COLUMN d integer DEFAULT 1, DROP COLUMN nope",
     "ALTER TABLE a1 ADD COLUMN d integer DEFAULT 1, ALTER COLUMN b SET NOT NULL",
     "ALTER TABLE a1 ALTER COLUMN b SET DEFAULT 'k', ADD CONSTRAINT a1_pkey UNIQUE (b)",
     "ALTER TABLE a1 ADD COLUMN d integer DEFAULT 1, ADD COLUMN e text DEFAULT 'e', DROP COLUMN c",
     "ALTER TABLE a1 ADD COLUMN g integer, ALTER COLUMN g SET DEFAULT 5", "INSERT INTO a1 (id) VALUES (7)"],
])
def test_alter_like_postgres(pair, steps):
    for sql in steps:
        same(pair, sql)
    same_table(pair)
    same_table(pair, "a2")


@pytest.mark.parametrize("sql", [
    "ALTER TABLE a1 ALTER COLUMN c TYPE text",
    "ALTER TABLE a1 ADD CONSTRAINT ex EXCLUDE USING btree (c WITH =)",
    "ALTER TABLE a1 ADD FOREIGN KEY (c) REFERENCES a2 (k) MATCH FULL",
    "ALTER TABLE a1 OWNER TO materialize",
    "ALTER TABLE a1 ADD COLUMN d integer DEFAULT 1, ALTER COLUMN c TYPE text",
    "ALTER TABLE a1 ADD COLUMN r double precision DEFAULT random()",
    # each existing row would draw from a sequence that exists already (serial makes its own)
    "ALTER TABLE a1 ADD COLUMN s bigint DEFAULT nextval('a1_s_seq')",
])
def test_refused_cleanly(pair, sql):
    ours, _ = pair
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        ours.execute(sql)
    assert ours.execute(SHAPE.format(t="a1")).fetchall() == pair[1].execute(SHAPE.format(t="a1")).fetchall()


def test_default_computed_once(pair):
    ours, theirs = pair
    for conn in (ours, theirs):
        conn.execute("ALTER TABLE a1 ADD COLUMN at timestamptz DEFAULT now()")
        conn.execute("ALTER TABLE a1 ADD COLUMN t2 text DEFAULT 'a' || 'b'")
    got = ours.execute("SELECT count(DISTINCT at), bool_and(at IS NOT NULL), min(t2) FROM a1").fetchall()
    assert got == [(1, True, "ab")]


@pytest.mark.parametrize("sql", [
    ("SELECT attname, attnum, attnotnull, atthasdef FROM pg_attribute WHERE attrelid = "
    "(SELECT oid FROM pg_class WHERE relname = 'a1') AND attnum > 0 AND NOT attisdropped ORDER BY attnum"),
    ("SELECT column_name, ordinal_position, column_default, is_nullable FROM information_schema.columns "
    "WHERE table_name = 'a1' ORDER BY 2"),
    ("SELECT conname, contype, conkey FROM pg_constraint WHERE conrelid = "
    "(SELECT oid FROM pg_class WHERE relname = 'a1') ORDER BY 1"),
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'a1' ORDER BY 1",
])
def test_catalog_shows_the_new_shape(pair, sql):
    for step in ["ALTER TABLE a1 DROP COLUMN b", "ALTER TABLE a1 ADD COLUMN d integer DEFAULT 4 NOT NULL",
                 "ALTER TABLE a1 RENAME COLUMN c TO cc", "ALTER TABLE a1 ADD CONSTRAINT a1_d UNIQUE (d, cc)",
                 "CREATE INDEX a1_ix ON a1 (d)"]:
        same(pair, step)
    same(pair, sql)


def _psql(dsn: str, command: str) -> str:
    psql = shutil.which("psql") or f"{PG_BIN}/psql"
    out = subprocess.run([psql, dsn, "-X", "-c", command], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_psql_describe(pair, server, postgres):
    for step in ["ALTER TABLE a1 DROP COLUMN b", "ALTER TABLE a1 ADD COLUMN d integer NOT NULL DEFAULT 4",
                 "ALTER TABLE a1 RENAME COLUMN c TO cc"]:
        same(pair, step)
    ours, theirs = _psql(server.dsn, r"\d a1"), _psql(postgres.dsn, r"\d a1")
    assert ours.split("Indexes:")[0] == theirs.split("Indexes:")[0]
    assert " d      | integer |           | not null | 4" in ours


def test_views_over_the_table(pair):
    for sql in ["CREATE VIEW v_ab AS SELECT id, b FROM a1", "CREATE VIEW v_star AS SELECT * FROM a1",
                "CREATE VIEW v_over AS SELECT b FROM v_ab", "CREATE VIEW v_c AS SELECT c FROM a1"]:
        same(pair, sql)
    same(pair, "ALTER TABLE a1 DROP COLUMN b")  # 2BP01, naming both views that read it
    same(pair, "ALTER TABLE a1 ADD COLUMN d integer DEFAULT 3")
    same(pair, "SELECT * FROM v_star ORDER BY 1")  # a view keeps the columns it had
    same(pair, "SELECT * FROM a1 ORDER BY 1")
    same(pair, "ALTER TABLE a1 DROP COLUMN d")  # v_star depends on every column it had... not d
    same(pair, "ALTER TABLE a1 DROP COLUMN c CASCADE")
    same(pair, "SELECT table_name FROM information_schema.views WHERE table_name LIKE 'v\\_%' ORDER BY 1")
    same(pair, "SELECT * FROM v_over ORDER BY 1")


def test_view_rename(pair):
    same(pair, "CREATE VIEW v_ab AS SELECT k, v FROM a2")
    same(pair, "ALTER VIEW v_ab RENAME TO w_view")
    same(pair, "SELECT * FROM w_view")
    same(pair, "ALTER VIEW a1 RENAME TO x")
    ours, _ = pair
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="view \"w_view\" reads it"):
        ours.execute("ALTER TABLE a2 RENAME TO a3")


def _next_rows(sub: Subscriber) -> list[tuple]:
    """The next non-empty FETCH (an update lands a moment after its commit)."""
    got: list[tuple] = []
    wait_until(lambda: got.extend(sub.fetch_rows()) or got, 60, message="the subscription's next update")
    return got


def test_subscribe_reading_the_table(server, pair):
    """A running SUBSCRIBE sees metadata-only ALTERs pass by; a rewrite (ADD/DROP COLUMN)
    ends it with 0A000, and a new SUBSCRIBE sees the new shape from its snapshot on."""
    ours, _ = pair
    with Subscriber(server, "SUBSCRIBE a1") as sub:
        got = _next_rows(sub)
        assert sorted(r[2:] for r in got) == [(1, "x", 10), (2, None, 20)]
        ours.execute("ALTER TABLE a1 ALTER COLUMN b SET DEFAULT 'd'")
        ours.execute("ALTER TABLE a1 RENAME COLUMN b TO bee")
        ours.execute("INSERT INTO a1 (id, c) VALUES (3, 30)")
        assert [r[1:] for r in _next_rows(sub)] == [(1, 3, "d", 30)]
        ours.execute("ALTER TABLE a1 ADD COLUMN d integer DEFAULT 4")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match='relation "materialize.public.a1" was altered'):
            wait_until(lambda: sub.fetch_rows() and False, 30, message="the subscription to end")
    with Subscriber(server, "SUBSCRIBE a1") as sub:
        got = _next_rows(sub)
        assert sorted(r[2:] for r in got) == [(1, "x", 10, 4), (2, None, 20, 4), (3, "d", 30, 4)]
        ours.execute("INSERT INTO a1 VALUES (5, 'e', 50, 5)")
        assert [r[1:] for r in _next_rows(sub)] == [(1, 5, "e", 50, 5)]


def test_transaction_block(pair):
    """Metadata-only ALTERs are staged and commit (or roll back) with the block; a rewrite
    is refused inside one (25001), as other DDL that cannot be staged is."""
    ours, theirs = pair
    for conn in (ours, theirs):
        conn.execute("BEGIN")
        conn.execute("ALTER TABLE a1 RENAME COLUMN b TO bee")
        conn.execute("ALTER TABLE a1 ADD CONSTRAINT a1_bee UNIQUE (bee)")
        conn.execute("INSERT INTO a1 (id, bee, c) VALUES (3, 'z', 30)")
        conn.execute("ROLLBACK")
    same_table(pair)
    for conn in (ours, theirs):
        conn.execute("BEGIN")
        conn.execute("ALTER TABLE a1 ALTER COLUMN b SET DEFAULT 'k'")
        conn.execute("INSERT INTO a1 (id, c) VALUES (3, 30)")
        conn.execute("ALTER TABLE a1 RENAME TO renamed")
        conn.execute("COMMIT")
    same_table(pair, "renamed")
    ours.execute("ALTER TABLE renamed RENAME TO a1")
    theirs.execute("ALTER TABLE renamed RENAME TO a1")
    # SET NOT NULL over a NULL the block itself wrote: refused at COMMIT at the latest
    ours.execute("BEGIN")
    ours.execute("INSERT INTO a1 (id, c) VALUES (4, 40)")
    ours.execute("ALTER TABLE a1 ALTER COLUMN b SET NOT NULL")
    with pytest.raises(psycopg.errors.NotNullViolation, match='column "b" of relation "a1" contains null values'):
        ours.execute("COMMIT")
    # a rewrite cannot be staged
    for sql in ("ALTER TABLE a1 ADD COLUMN d integer", "ALTER TABLE a1 ADD COLUMN d serial"):
        ours.execute("BEGIN")
        with pytest.raises(psycopg.errors.ActiveSqlTransaction, match="cannot run inside a transaction block"):
            ours.execute(sql)
        ours.execute("ROLLBACK")
    same_table(pair)


def test_concurrent_write_planned_before_a_rewrite(server, pair):
    """A block's write planned against the old columns, committed after ADD COLUMN: 40001,
    not a file of the wrong shape; the table keeps its rows."""
    ours, theirs = pair
    ours.execute("BEGIN")
    ours.execute("INSERT INTO a1 VALUES (3, 'y', 30)")
    with psycopg.connect(server.dsn, autocommit=True) as other:
        other.execute("ALTER TABLE a1 ADD COLUMN d integer DEFAULT 1")
    with pytest.raises(psycopg.errors.SerializationFailure):
        ours.execute("COMMIT")
    theirs.execute("ALTER TABLE a1 ADD COLUMN d integer DEFAULT 1")
    same_table(pair)
    # a NULL staged before another session's SET NOT NULL: refused at COMMIT
    ours.execute("BEGIN")
    ours.execute("INSERT INTO a1 (id, b) VALUES (4, NULL)")
    with psycopg.connect(server.dsn, autocommit=True) as other:
        other.execute("ALTER TABLE a1 ALTER COLUMN c SET NOT NULL")
    with pytest.raises(psycopg.errors.NotNullViolation, match='null value in column "c" of relation "a1"'):
        ours.execute("COMMIT")
    theirs.execute("ALTER TABLE a1 ALTER COLUMN c SET NOT NULL")
    same_table(pair)


def test_source_fed_table(server, postgres):
    """A table a source feeds: only RENAME TO; every other ALTER is refused by name."""
    with psycopg.connect(postgres.dsn, autocommit=True) as up:
        up.execute("DROP PUBLICATION IF EXISTS alt_pub")
        up.execute("DROP TABLE IF EXISTS alt_src")
        up.execute("CREATE TABLE alt_src (id int PRIMARY KEY, v text)")
        up.execute("ALTER TABLE alt_src REPLICA IDENTITY FULL")
        up.execute("INSERT INTO alt_src VALUES (1, 'one')")
        up.execute("CREATE PUBLICATION alt_pub FOR TABLE alt_src")
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE CONNECTION alt_pg TO POSTGRES (HOST '127.0.0.1', PORT {postgres.port}, "
                     "USER 'postgres', DATABASE 'postgres')")
        conn.execute("CREATE SOURCE alt_source FROM POSTGRES CONNECTION alt_pg (PUBLICATION 'alt_pub')")
        conn.execute("CREATE TABLE alt_src FROM SOURCE alt_source (REFERENCE alt_src)")
        wait_until(lambda: conn.execute("SELECT count(*) FROM alt_src").fetchone() == (1,), 120,
                   message="the snapshot")
        for sql in ["ALTER TABLE alt_src ADD COLUMN x int", "ALTER TABLE alt_src DROP COLUMN v",
                    "ALTER TABLE alt_src ALTER COLUMN v SET NOT NULL", "ALTER TABLE alt_src RENAME COLUMN v TO w"]:
            with pytest.raises(psycopg.errors.WrongObjectType, match="it is fed by a source"):
                conn.execute(sql)
        conn.execute("ALTER TABLE alt_src RENAME TO alt_fed")
        with psycopg.connect(postgres.dsn, autocommit=True) as up:
            up.execute("INSERT INTO alt_src VALUES (2, 'two')")
        wait_until(lambda: conn.execute("SELECT count(*) FROM alt_fed").fetchone() == (2,), 120,
                   message="the source to feed the renamed table")
        conn.execute("DROP SOURCE alt_source CASCADE")
        conn.execute("DROP CONNECTION alt_pg")


def test_alter_survives_a_restart():
    """After ALTERs, kill -9 and a restart (log replay), then a restart from the checkpoint
    the clean stop wrote, the table has its new shape, rows, defaults, keys and attnums."""
    with running_server(env={"SPARKWIRE_CHECKPOINT_EVERY": "1000"}) as first:
        with psycopg.connect(first.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE r (id int PRIMARY KEY, b text, c int)")
            conn.execute("INSERT INTO r SELECT g, 'b' || g, g FROM generate_series(1, 100) AS g")
            conn.execute("DELETE FROM r WHERE id = 7")
            conn.execute("ALTER TABLE r DROP COLUMN b")
            conn.execute("ALTER TABLE r ADD COLUMN d text DEFAULT 'dd' NOT NULL")
            conn.execute("ALTER TABLE r ADD CONSTRAINT r_c UNIQUE (c), ALTER COLUMN c SET NOT NULL")
            conn.execute("ALTER TABLE r RENAME COLUMN c TO cc")
            conn.execute("ALTER TABLE r ADD CONSTRAINT pos CHECK (cc > 0)")
            conn.execute("ALTER TABLE r ADD COLUMN s serial")  # 1 to 99 for the rows there, and its sequence
            conn.execute("INSERT INTO r (id, cc) VALUES (200, 200)")
            before = conn.execute("SELECT * FROM r ORDER BY id").fetchall()
            shape = conn.execute(SHAPE.format(t="r")).fetchall()
            attnums = conn.execute("SELECT attname, attnum FROM pg_attribute WHERE attrelid = "
                                   "(SELECT oid FROM pg_class WHERE relname = 'r') AND attnum > 0 ORDER BY 2").fetchall()
        assert attnums == [("id", 1), ("cc", 3), ("d", 4), ("s", 5)]
        assert len(before) == 100 and before[-1] == (200, 200, "dd", 100)
        assert sorted(r[3] for r in before) == list(range(1, 101))
        first.kill9()  # no checkpoint at exit: the next start replays the ALTERs' log records
        first.stop()  # closes its log file
        for _ in range(2):  # replaying the log, then from the checkpoint that start's stop wrote
            second = ServerProcess(data_dir=first.data_dir).start()
            try:
                second.wait_ready()
                with psycopg.connect(second.dsn, autocommit=True) as conn:
                    assert conn.execute("SELECT * FROM r ORDER BY id").fetchall() == before
                    assert conn.execute(SHAPE.format(t="r")).fetchall() == shape
                    with pytest.raises(psycopg.errors.UniqueViolation):
                        conn.execute("INSERT INTO r (id, cc) VALUES (300, 5)")
                    with pytest.raises(psycopg.errors.UniqueViolation):
                        conn.execute("INSERT INTO r (id, cc) VALUES (5, 301)")
                    with pytest.raises(psycopg.errors.NotNullViolation):
                        conn.execute("INSERT INTO r (id) VALUES (302)")
                    with pytest.raises(psycopg.errors.CheckViolation):
                        conn.execute("INSERT INTO r (id, cc) VALUES (303, -3)")
                    # past every value given out (a crash may skip some, as in PostgreSQL)
                    assert conn.execute("SELECT nextval('r_s_seq')").fetchone()[0] > 100
            finally:
                second.stop()
