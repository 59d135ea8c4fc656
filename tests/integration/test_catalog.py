"""The catalog for psql and drivers (issue 7, part 3), against a real server.

psql's describe commands are run with the real `psql` binary against sparkwire
and against a real PostgreSQL 15 holding the same objects, and the printed
listings are compared. Then each client — psycopg 3, psycopg2, asyncpg, pgjdbc
(a Java program compiled here) and node-postgres (installed from npm) —
connects, writes, queries, reads metadata and reads a SUBSCRIBE through a
cursor. Last, the system relations themselves: pg_catalog, information_schema
and mz_internal.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import psycopg
import pytest

from tests.pgserver import PG_BIN, reference_postgres

pytestmark = pytest.mark.slow

PSQL = shutil.which("psql") or f"{PG_BIN}/psql"

# The objects every listing is about, created alike in sparkwire and in PostgreSQL.
SETUP = [
    ("CREATE TABLE cat_t (a integer NOT NULL, b text DEFAULT 'x', c numeric(10,2), d varchar(20), "
    "e timestamp with time zone, f boolean DEFAULT true, g double precision, h jsonb, i date, "
    "j bigint DEFAULT 5, k integer DEFAULT -1, l char(3), m real, n text[])"),
    "CREATE TABLE cat_u (id bigint)",
    "CREATE VIEW cat_v AS SELECT a, b, c FROM cat_t",
]


@pytest.fixture(scope="module")
def objects(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        for sql in SETUP:
            c.execute(sql)
    return server


@pytest.fixture(scope="module")
def postgres():
    """PostgreSQL 15 with the same objects, owned by a role named like ours."""
    with reference_postgres() as pg:
        with psycopg.connect(pg.dsn, autocommit=True) as c:
            c.execute("CREATE ROLE materialize SUPERUSER LOGIN")
            c.execute("CREATE DATABASE materialize OWNER materialize")
        with psycopg.connect(f"host=127.0.0.1 port={pg.port} user=materialize dbname=materialize",
                             autocommit=True) as c:
            for sql in SETUP:
                c.execute(sql)
        yield pg


def psql(port: int, command: str, *flags: str) -> str:
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(port), "PGUSER": "materialize",
           "PGDATABASE": "materialize", "PGCONNECT_TIMEOUT": "60"}
    env.pop("PGPASSWORD", None)
    out = subprocess.run([PSQL, "-X", *flags, "-c", command], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0 and not out.stderr, f"psql {command!r} failed:\n{out.stderr}{out.stdout}"
    return out.stdout


# -- psql ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [r"\d", r"\dt", r"\dv", r"\d cat_t", r"\d cat_v", r"\d cat_u"])
def test_psql_describe_matches_postgres(objects, postgres, command):
    ours = psql(objects.port, command)
    theirs = psql(postgres.port, command)
    assert ours == theirs, f"{command}\n--- sparkwire\n{ours}\n--- PostgreSQL\n{theirs}"


def test_psql_describe_table_contents(objects):
    """Spelled out, so a failure reads without a PostgreSQL to compare with."""
    out = psql(objects.port, r"\d cat_t")
    assert out.splitlines()[0].strip() == 'Table "public.cat_t"'
    assert " Column |           Type           | Collation | Nullable |    Default    " in out.splitlines()
    for line in [
        " a      | integer                  |           | not null | ",
        " b      | text                     |           |          | 'x'::text",
        " c      | numeric(10,2)            |           |          | ",
        " d      | character varying(20)    |           |          | ",
        " f      | boolean                  |           |          | true",
        " j      | bigint                   |           |          | 5",
        " k      | integer                  |           |          | '-1'::integer",
        " l      | character(3)             |           |          | ",
        " n      | text[]                   |           |          | ",
    ]:
        assert line in out.splitlines(), f"missing {line!r} in\n{out}"
    listing = psql(objects.port, r"\d")
    assert listing.splitlines()[3:7] == [
        " public | cat_t | table | materialize",
        " public | cat_u | table | materialize",
        " public | cat_v | view  | materialize",
        "(3 rows)",
    ], listing


def test_psql_list_databases(objects, postgres):
    ours = psql(objects.port, r"\l")
    assert ours.splitlines()[3].split("|")[:3] == [" materialize ", " materialize ", " UTF8     "], ours
    ours_rows = psql(objects.port, r"\l", "-A").splitlines()
    theirs_rows = psql(postgres.port, r"\l", "-A").splitlines()
    assert ours_rows[:2] == theirs_rows[:2]  # title and column names
    ours_db = ours_rows[2].split("|")
    theirs_db = next(r for r in theirs_rows if r.startswith("materialize|")).split("|")
    # Name, Owner, Encoding, ICU Locale, Locale Provider, Access privileges (locale is the host's).
    keep = [0, 1, 2, 5, 6, 7]
    assert [ours_db[i] for i in keep] == [theirs_db[i] for i in keep]
    assert ours_rows[3:] == ["(1 row)"]


def test_psql_list_schemas(objects, postgres):
    ours = psql(objects.port, r"\dn", "-A").splitlines()
    theirs = psql(postgres.port, r"\dn", "-A").splitlines()
    assert ours[:2] == theirs[:2] == ["List of schemas", "Name|Owner"]
    # PostgreSQL has public only; Materialize also lists its own schemas.
    assert ours[2:] == ["mz_catalog|materialize", "mz_internal|materialize", "public|materialize",
                        "(3 rows)"]
    aligned = psql(objects.port, r"\dn")
    assert aligned.splitlines()[1] == "    Name     |    Owner    "


def test_psql_extended_describe(objects):
    """\\d+, \\dt+ and \\du run too (their footers and sizes are ours, not compared)."""
    out = psql(objects.port, r"\d+ cat_t")
    assert "Storage" in out and "Access method: heap" in out
    assert " public | cat_t | table | materialize | permanent   | heap          | 0 bytes | " \
        in psql(objects.port, r"\dt+").splitlines()
    assert "materialize" in psql(objects.port, r"\du")


# -- functions psql and drivers call, compared with PostgreSQL ---------------------------------

SAME_AS_POSTGRES = [
    ("SELECT format_type(23, -1), format_type(1043, 24), format_type(1043, -1), "
    "format_type(1700, 655366), format_type(1700, -1), format_type(1042, 7), format_type(1042, -1), "
    "format_type(1042, NULL), format_type(1009, -1), format_type(1015, 24), format_type(1114, 3), "
    "format_type(1184, -1), format_type(16, NULL), format_type(18, -1), format_type(NULL, -1), "
    "format_type(99999, -1)"),
    ("SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
    "WHERE a.attrelid = 'cat_t'::regclass AND a.attnum > 0 ORDER BY a.attnum"),
    ("SELECT current_schema(), current_schemas(true), current_schemas(false), "
    "pg_catalog.array_to_string(ARRAY['a', 'b'], ', '), pg_encoding_to_char(6)"),
    ("SELECT has_table_privilege('cat_t', 'SELECT'), has_schema_privilege('public', 'USAGE'), "
    "pg_catalog.pg_table_is_visible('cat_t'::regclass), pg_total_relation_size('cat_u'::regclass) * 0"),
    ("SELECT 'abc' OPERATOR(pg_catalog.~) '^a' COLLATE pg_catalog.default, 'abc' !~ 'b', "
    "'abc' ~* 'A', 'abc' !~* 'z'"),
    ("SELECT c.relname, c.relkind, c.relnatts FROM pg_catalog.pg_class c "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = 'public' ORDER BY 1"),
    ("SELECT table_name, table_type FROM information_schema.tables "
    "WHERE table_schema = 'public' ORDER BY 1"),
    ("SELECT column_name, ordinal_position, column_default, is_nullable, data_type, "
    "character_maximum_length, numeric_precision, numeric_scale, udt_name "
    "FROM information_schema.columns WHERE table_name = 'cat_t' ORDER BY ordinal_position"),
    ("SELECT a.attname, a.attnum, a.atttypid, a.atttypmod, a.attnotnull, a.atthasdef, a.attndims "
    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "WHERE c.relname = 'cat_v' AND a.attnum > 0 ORDER BY a.attnum"),
    ("SELECT t.typname, t.typlen, t.typtype, t.typcategory, t.typelem, t.typarray, t.typinput "
    "FROM pg_type t WHERE t.oid IN (16, 20, 23, 25, 1043, 1700, 1007, 3802) ORDER BY t.oid"),
    ("SELECT t.oid FROM pg_type t WHERE t.oid = to_regtype('integer') "
    "OR t.oid = 'pg_catalog.text'::regtype OR t.oid = 'int8[]'::regtype ORDER BY 1"),
    ("SELECT d.adnum, pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) FROM pg_catalog.pg_attrdef d "
    "WHERE d.adrelid = 'cat_t'::regclass ORDER BY 1"),
    ("SELECT datname, pg_encoding_to_char(encoding), datallowconn FROM pg_database "
    "WHERE datname = current_database()"),
    ("SELECT nspname FROM pg_namespace WHERE nspname IN ('pg_catalog', 'public', 'information_schema') "
    "ORDER BY 1"),
    "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 'cat_t'",
    # A regclass prints as its relation's name; compared, it is an OID.
    ("SELECT 'cat_t'::regclass, 'cat_v'::regclass::text, c.oid::regclass AS r, c.oid::regclass::text = c.relname, "
    "'pg_class'::regclass FROM pg_class c WHERE c.oid = 'cat_u'::regclass"),
    # NOT NULL as a CHECK, named <schema oid>_<table oid>_<attnum>_not_null (the OIDs differ)
    ("SELECT regexp_replace(constraint_name, '^[0-9]+_[0-9]+_', ''), table_name, constraint_type, is_deferrable "
    "FROM information_schema.table_constraints WHERE table_name LIKE 'cat%' ORDER BY 1"),
    ("SELECT regexp_replace(constraint_name, '^[0-9]+_[0-9]+_', ''), check_clause "
    "FROM information_schema.check_constraints WHERE constraint_schema = 'public' ORDER BY 1"),
]


@pytest.mark.parametrize("sql", SAME_AS_POSTGRES)
def test_catalog_queries_match_postgres(objects, postgres, sql):
    with psycopg.connect(objects.dsn, autocommit=True) as ours, \
            psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=materialize dbname=materialize",
                            autocommit=True) as theirs:
        got = ours.execute(sql).fetchall()
        want = theirs.execute(sql).fetchall()
    assert got == want, sql


def test_regclass_of_a_missing_relation_is_42p01_as_in_postgres(objects, postgres):
    sql = "SELECT a.attname FROM pg_attribute a WHERE a.attrelid = 'no_such''table'::regclass"
    errors = []
    for dsn in (objects.dsn, f"host=127.0.0.1 port={postgres.port} user=materialize dbname=materialize"):
        with psycopg.connect(dsn, autocommit=True) as c, pytest.raises(psycopg.errors.UndefinedTable) as info:
            c.execute(sql)
        errors.append(str(info.value).splitlines()[0])
    assert errors[0] == errors[1] == 'relation "no_such\'table" does not exist'


# -- drivers ------------------------------------------------------------------------------------

def _subscribed(rows, width: int) -> list[tuple]:
    """Data rows of a SUBSCRIBE read: (diff, *columns), sorted."""
    out = []
    for r in rows:
        assert int(r[0]) > 0 and len(r) == width, r
        out.append((int(r[1]), *r[2:]))
    return sorted(out)


def test_psycopg3(objects):
    from psycopg.types import TypeInfo

    with psycopg.connect(objects.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE drv_pg3 (id integer NOT NULL, name text)")
        c.execute("INSERT INTO drv_pg3 VALUES (%s, %s), (%s, %s)", [1, "one", 2, "two"])
        assert c.execute("SELECT id, name FROM drv_pg3 ORDER BY id").fetchall() == [(1, "one"), (2, "two")]
        # Metadata: the type lookups psycopg itself makes, and information_schema.
        info = TypeInfo.fetch(c, "jsonb")
        assert (info.name, info.oid, info.array_oid) == ("jsonb", 3802, 3807)
        info = TypeInfo.fetch(c, "text[]")
        assert (info.name, info.oid) == ("_text", 1009)
        assert c.execute("SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                         "WHERE table_name = %s ORDER BY ordinal_position", ["drv_pg3"]).fetchall() \
            == [("id", "integer", "NO"), ("name", "text", "YES")]
        with c.transaction():
            c.execute("DECLARE c CURSOR FOR SUBSCRIBE drv_pg3")
            cur = c.execute("FETCH ALL c WITH (timeout = '1s')")
            assert [d.name for d in cur.description] == ["mz_timestamp", "mz_diff", "id", "name"]
            assert _subscribed(cur.fetchall(), 4) == [(1, 1, "one"), (1, 2, "two")]


def test_psycopg2(objects):
    import psycopg2

    c = psycopg2.connect(objects.dsn)
    try:
        c.autocommit = True
        cur = c.cursor()
        cur.execute("CREATE TABLE drv_pg2 (id integer NOT NULL, price numeric(8,2))")
        cur.execute("INSERT INTO drv_pg2 VALUES (%s, %s), (%s, %s)", (1, "1.50", 2, "2.25"))
        cur.execute("SELECT id, price::text FROM drv_pg2 ORDER BY id")
        assert cur.fetchall() == [(1, "1.50"), (2, "2.25")]
        cur.execute("SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull "
                    "FROM pg_catalog.pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0 "
                    "ORDER BY a.attnum", ("drv_pg2",))
        assert cur.fetchall() == [("id", "integer", True), ("price", "numeric(8,2)", False)]
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_name = %s",
                    ("drv_pg2",))
        assert cur.fetchall() == [("drv_pg2",)]
        c.autocommit = False
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE drv_pg2")
        cur.execute("FETCH ALL c WITH (timeout = '1s')")
        assert [d.name for d in cur.description] == ["mz_timestamp", "mz_diff", "id", "price"]
        rows = [(r[0], r[1], r[2], str(r[3])) for r in cur.fetchall()]
        assert _subscribed(rows, 4) == [(1, 1, "1.50"), (1, 2, "2.25")]
        c.commit()
    finally:
        c.close()


def test_asyncpg(objects):
    import asyncpg
    from asyncpg import introspection

    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=objects.port, user="materialize",
                                  database="materialize")
        try:
            await c.execute("CREATE TABLE drv_apg (id integer NOT NULL, tags text[], scores integer[])")
            await c.execute("INSERT INTO drv_apg VALUES ($1, $2, ARRAY[3, 4])", 1, ["a", "b"])
            # asyncpg has no built-in codec for integer[]: reading it, asyncpg introspects the
            # type on its own (current_setting('jit'), then its recursive pg_type query).
            assert [tuple(r) for r in await c.fetch("SELECT id, tags, scores FROM drv_apg")] \
                == [(1, ["a", "b"], [3, 4])]
            # The same introspection query, checked row by row.
            rows = await c.fetch(c._intro_query, [23, 1009, 3802])
            got = {r["oid"]: (r["ns"], r["name"], r["kind"], r["elemtype"], r["depth"]) for r in rows}
            assert got[1009] == ("pg_catalog", "_text", b"b", 25, 0)
            assert got[3802] == ("pg_catalog", "jsonb", b"b", 0, 0)
            assert got[23] == ("pg_catalog", "int4", b"b", 0, 0)
            assert got[25][3:] == (0, 1)  # text, found as the element type of text[]
            typ = await c.fetchrow(introspection.TYPE_BY_NAME, "jsonb", "pg_catalog")
            assert (typ["oid"], typ["kind"]) == (3802, b"b")
            await c.set_type_codec("jsonb", schema="pg_catalog", encoder=json.dumps, decoder=json.loads)
            cols = await c.fetch("SELECT column_name, data_type FROM information_schema.columns "
                                 "WHERE table_name = $1 ORDER BY ordinal_position", "drv_apg")
            assert [tuple(r) for r in cols] == [("id", "integer"), ("tags", "ARRAY"), ("scores", "ARRAY")]
            async with c.transaction():
                await c.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT id, tags[1] AS tag, scores FROM drv_apg)")
                rows = await c.fetch("FETCH ALL c WITH (timeout = '1s')")
                assert list(rows[0].keys()) == ["mz_timestamp", "mz_diff", "id", "tag", "scores"]
                assert _subscribed([tuple(r) for r in rows], 5) == [(1, 1, "a", [3, 4])]
        finally:
            await c.close()

    asyncio.run(run())


JAVA = textwrap.dedent("""\
    import java.sql.*;

    public class SparkwireJdbc {
        public static void main(String[] args) throws Exception {
            String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/materialize";
            String table = args[1];
            try (Connection c = DriverManager.getConnection(url, "materialize", "")) {
                try (Statement s = c.createStatement()) {
                    s.execute("CREATE TABLE " + table + " (id integer NOT NULL, name text, price numeric(10,2))");
                }
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?, ?)")) {
                    ps.setInt(1, 1); ps.setString(2, "one"); ps.setBigDecimal(3, new java.math.BigDecimal("1.50"));
                    ps.executeUpdate();
                    ps.setInt(1, 2); ps.setString(2, "two"); ps.setBigDecimal(3, new java.math.BigDecimal("2.25"));
                    ps.executeUpdate();
                }
                try (Statement s = c.createStatement();
                     ResultSet rs = s.executeQuery("SELECT id, name, price FROM " + table + " ORDER BY id")) {
                    while (rs.next()) {
                        System.out.println("row\\t" + rs.getInt(1) + "\\t" + rs.getString(2) + "\\t" + rs.getBigDecimal(3));
                    }
                }
                DatabaseMetaData md = c.getMetaData();
                System.out.println("product\\t" + md.getDatabaseProductName() + "\\t" + md.getDatabaseProductVersion());
                try (ResultSet rs = md.getTables(null, "public", table, new String[] {"TABLE"})) {
                    while (rs.next()) {
                        System.out.println("table\\t" + rs.getString("TABLE_SCHEM") + "\\t" + rs.getString("TABLE_NAME")
                            + "\\t" + rs.getString("TABLE_TYPE"));
                    }
                }
                try (ResultSet rs = md.getColumns(null, "public", table, null)) {
                    while (rs.next()) {
                        System.out.println("column\\t" + rs.getString("COLUMN_NAME") + "\\t" + rs.getString("TYPE_NAME")
                            + "\\t" + rs.getInt("DATA_TYPE") + "\\t" + rs.getString("IS_NULLABLE")
                            + "\\t" + rs.getInt("ORDINAL_POSITION"));
                    }
                }
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("DECLARE c CURSOR FOR SUBSCRIBE " + table);
                    try (ResultSet rs = s.executeQuery("FETCH ALL c WITH (timeout = '1s')")) {
                        ResultSetMetaData rmd = rs.getMetaData();
                        StringBuilder names = new StringBuilder("subscribe_columns");
                        for (int i = 1; i <= rmd.getColumnCount(); i++) names.append("\\t").append(rmd.getColumnName(i));
                        System.out.println(names);
                        while (rs.next()) {
                            System.out.println("subscribe\\t" + rs.getLong("mz_timestamp") + "\\t" + rs.getLong("mz_diff")
                                + "\\t" + rs.getInt("id") + "\\t" + rs.getString("name"));
                        }
                    }
                    s.execute("CLOSE c");
                }
                c.commit();
            }
            System.out.println("done");
        }
    }
    """)
JDBC_JAR = "/usr/share/java/postgresql.jar"


def test_pgjdbc(objects, tmp_path):
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None or not os.path.exists(JDBC_JAR):
        pytest.skip("needs javac and pgjdbc (default-jdk-headless, libpostgresql-jdbc-java: "
                    "scripts/install.sh installs them)")
    (tmp_path / "SparkwireJdbc.java").write_text(JAVA)
    subprocess.run([javac, "-cp", JDBC_JAR, "-d", str(tmp_path), str(tmp_path / "SparkwireJdbc.java")],
                   check=True, capture_output=True, timeout=300)
    out = subprocess.run([java, "-cp", f"{JDBC_JAR}:{tmp_path}", "SparkwireJdbc", str(objects.port), "drv_jdbc"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line.split("\t") for line in out.stdout.splitlines()]
    assert [line for line in lines if line[0] == "row"] == [["row", "1", "one", "1.50"], ["row", "2", "two", "2.25"]]
    assert ["product", "PostgreSQL", "15.0"] in lines
    assert [line for line in lines if line[0] == "table"] == [["table", "public", "drv_jdbc", "TABLE"]]
    assert [line for line in lines if line[0] == "column"] == [
        ["column", "id", "int4", "4", "NO", "1"],          # java.sql.Types.INTEGER
        ["column", "name", "text", "12", "YES", "2"],      # VARCHAR
        ["column", "price", "numeric", "2", "YES", "3"],   # NUMERIC
    ]
    assert ["subscribe_columns", "mz_timestamp", "mz_diff", "id", "name", "price"] in lines
    subscribed = sorted(tuple(line[2:]) for line in lines if line[0] == "subscribe")
    assert subscribed == [("1", "1", "one"), ("1", "2", "two")]
    assert lines[-1] == ["done"]


NODE_CLIENT = textwrap.dedent("""\
    const { Client } = require('pg');

    async function main() {
      const [port, table] = process.argv.slice(2);
      const out = {};
      const c = new Client({ host: '127.0.0.1', port: Number(port), user: 'materialize', database: 'materialize' });
      await c.connect();
      await c.query(`CREATE TABLE ${table} (id integer NOT NULL, name text)`);
      await c.query(`INSERT INTO ${table} VALUES ($1, $2), ($3, $4)`, [1, 'one', 2, 'two']);
      out.rows = (await c.query(`SELECT id, name FROM ${table} ORDER BY id`)).rows;
      out.columns = (await c.query(
        `SELECT column_name, data_type, is_nullable FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, [table])).rows;
      out.types = (await c.query(
        `SELECT a.attname, t.typname FROM pg_catalog.pg_attribute a
         JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
         WHERE a.attrelid = $1::regclass AND a.attnum > 0 ORDER BY a.attnum`, [table])).rows;
      await c.query('BEGIN');
      await c.query(`DECLARE c CURSOR FOR SUBSCRIBE ${table}`);
      const fetched = await c.query(`FETCH ALL c WITH (timeout = '1s')`);
      out.subscribe_fields = fetched.fields.map((f) => f.name);
      out.subscribe = fetched.rows;
      await c.query('COMMIT');
      await c.end();
      console.log(JSON.stringify(out));
    }

    main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
    """)


@pytest.fixture(scope="module")
def node_pg():
    """A directory with node-postgres (`pg`) installed from npm."""
    node, npm = shutil.which("node") or "/usr/bin/node", shutil.which("npm")
    if npm is None or not os.path.exists(node):
        pytest.skip("node-postgres needs node and npm, and npm is not installed")
    work = Path(tempfile.mkdtemp(prefix="sparkwire-node-"))
    try:
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "pg"], cwd=work,
                       check=True, capture_output=True, timeout=600)
        (work / "client.js").write_text(NODE_CLIENT)
        yield node, work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_node_postgres(objects, node_pg):
    node, work = node_pg
    out = subprocess.run([node, "client.js", str(objects.port), "drv_node"], cwd=work,
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    got = json.loads(out.stdout)
    assert got["rows"] == [{"id": 1, "name": "one"}, {"id": 2, "name": "two"}]
    assert got["columns"] == [{"column_name": "id", "data_type": "integer", "is_nullable": "NO"},
                              {"column_name": "name", "data_type": "text", "is_nullable": "YES"}]
    assert got["types"] == [{"attname": "id", "typname": "int4"}, {"attname": "name", "typname": "text"}]
    assert got["subscribe_fields"] == ["mz_timestamp", "mz_diff", "id", "name"]
    rows = sorted((int(r["mz_diff"]), r["id"], r["name"]) for r in got["subscribe"])
    assert rows == [(1, 1, "one"), (1, 2, "two")]


# -- system relations ---------------------------------------------------------------------------

def test_unqualified_names_find_pg_catalog(objects, conn):
    qualified = conn.execute("SELECT count(*) FROM pg_catalog.pg_class").fetchone()
    assert conn.execute("SELECT count(*) FROM pg_class").fetchone() == qualified
    assert conn.execute("SELECT relname FROM pg_class WHERE relname = 'cat_u'").fetchall() == [("cat_u",)]
    # information_schema and mz_internal are not on the search path.
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("SELECT * FROM mz_subscriptions")


def test_system_relations_follow_the_catalog(objects, conn):
    assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'cat_tmp'") \
        .fetchone() == (0,)
    conn.execute("CREATE TABLE cat_tmp (x int)")
    try:
        assert conn.execute("SELECT table_type FROM information_schema.tables WHERE table_name = 'cat_tmp'") \
            .fetchall() == [("BASE TABLE",)]
        assert conn.execute("SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                            "WHERE c.relname = 'cat_tmp'").fetchone() == (1,)
    finally:
        conn.execute("DROP TABLE cat_tmp")
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname = 'cat_tmp'").fetchone() == (0,)
    names = {r[0] for r in conn.execute("SELECT schema_name FROM information_schema.schemata")}
    assert {"public", "pg_catalog", "information_schema", "mz_internal"} <= names
    settings = dict(conn.execute("SELECT name, setting FROM pg_settings").fetchall())
    assert settings["server_version"] == "15.0" and settings["client_encoding"] == "UTF8"
    roles = conn.execute("SELECT rolname, rolsuper FROM pg_roles").fetchall()
    assert ("materialize", True) in roles
    for rel in ["pg_description", "pg_constraint", "pg_inherits", "pg_index", "pg_collation"]:
        assert conn.execute(f"SELECT count(*) FROM pg_catalog.{rel}").fetchone() == (0,)
    assert conn.execute("SELECT spcname FROM pg_tablespace ORDER BY 1").fetchall() == \
        [("pg_default",), ("pg_global",)]


def test_mz_subscriptions(objects, conn):
    conn.execute("CREATE TABLE cat_sub (x int)")
    conn.execute("INSERT INTO cat_sub VALUES (1), (2), (3)")
    table_id = conn.execute("SELECT oid FROM pg_class WHERE relname = 'cat_sub'").fetchone()[0]
    assert table_id
    with psycopg.connect(objects.dsn) as sub:
        cur = sub.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE cat_sub ENVELOPE UPSERT (KEY (x))")
        cur.execute("FETCH ALL c WITH (timeout = '1s')")
        assert len(cur.fetchall()) == 3
        pid = sub.info.backend_pid
        rows = conn.execute(
            "SELECT id, session_id, user_name, sql, output_mode, rows_sent, created_at, "
            "cardinality(referenced_object_ids) FROM mz_internal.mz_subscriptions "
            "WHERE session_id = %s", [pid]).fetchall()
        assert len(rows) == 1, rows
        sid, session, user, sql, mode, sent, created, refs = rows[0]
        assert sid.startswith("s") and session == pid and user == "materialize"
        assert (sql, mode) == ("SUBSCRIBE cat_sub", "envelope_upsert")
        assert sent == 3 and refs == 1
        assert abs(created.timestamp() - time.time()) < 600
    # Closed with its session: gone from the relation.
    deadline = time.monotonic() + 30
    while conn.execute("SELECT count(*) FROM mz_internal.mz_subscriptions WHERE session_id = %s",
                       [pid]).fetchone() != (0,):
        assert time.monotonic() < deadline, "subscription still listed after its session ended"
        time.sleep(0.5)


def test_mz_source_statuses_columns(objects, conn):
    cur = conn.execute("SELECT * FROM mz_internal.mz_source_statuses")
    assert [d.name for d in cur.description] == [
        "id", "name", "type", "last_status_change_at", "status", "error", "details",
        "snapshot_records_staged", "snapshot_records_known"]


def test_mz_source_statuses_rows(objects, postgres, conn):
    """A PostgreSQL source and its table, with the snapshot's progress (rows copied of rows
    expected). Last in the module: it adds relations to every listing."""
    with psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=materialize dbname=materialize",
                         autocommit=True) as up:
        up.execute("CREATE TABLE src_t (id int PRIMARY KEY, v text)")
        up.execute("ALTER TABLE src_t REPLICA IDENTITY FULL")
        up.execute("INSERT INTO src_t SELECT g, 'v' || g FROM generate_series(1, 5) g")
        up.execute("CREATE PUBLICATION cat_pub FOR TABLE src_t")
    conn.execute(f"CREATE CONNECTION cat_pg TO POSTGRES (HOST '127.0.0.1', PORT {postgres.port}, "
                 "USER 'materialize', DATABASE 'materialize')")
    conn.execute("CREATE SOURCE cat_src FROM POSTGRES CONNECTION cat_pg (PUBLICATION 'cat_pub')")
    conn.execute("CREATE TABLE src_t FROM SOURCE cat_src (REFERENCE src_t)")
    ids = dict(conn.execute("SELECT relname, oid FROM pg_class WHERE relname IN ('cat_src', 'src_t')"))
    assert set(ids) == {"cat_src", "src_t"}
    deadline = time.monotonic() + 120
    while True:
        rows = conn.execute("SELECT name, type, status, error, snapshot_records_staged, "
                            "snapshot_records_known, last_status_change_at IS NOT NULL, id "
                            "FROM mz_internal.mz_source_statuses ORDER BY name").fetchall()
        by_name = {r[0]: r[1:] for r in rows}
        if by_name.get("src_t", (None, None))[1] == "running":
            break
        assert time.monotonic() < deadline, f"source not running: {rows}"
        time.sleep(1)
    assert by_name["cat_src"][:5] == ("postgres", "running", None, 5, 5), rows
    assert by_name["src_t"][:5] == ("table", "running", None, 5, 5), rows
    assert by_name["cat_src"][5] and by_name["cat_src"][6].startswith("u")
    assert conn.execute("SELECT count(*) FROM src_t").fetchone() == (5,)
    # The connection is not a relation: it is in no listing.
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname = 'cat_pg'").fetchone() == (0,)
