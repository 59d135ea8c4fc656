"""Python's drivers and tools against sparkwire: the driver matrix of Python.

Each test is what an application does on its first day with psycopg 3, psycopg2, asyncpg,
SQLAlchemy 2 or pandas: placeholders one character apart, savepoints, DDL in a transaction
(create_all, to_sql), reflection, COPY in every format, LISTEN/NOTIFY, a pool that resets
its connections, pg_stat_activity and cancelling another session, psql's \\d family, and
the introspection queries of DBeaver, Metabase and Grafana.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import threading
import time

import asyncpg
import pandas as pd
import psycopg
import psycopg2
import pytest
import sqlalchemy as sa

from tests.support import wait_until


def _arun(coro):
    return asyncio.run(coro)


def test_placeholders_one_character_apart(conn):
    conn.execute("CREATE TABLE py_ph (a int, b text, c int)")
    with conn.cursor() as cur:
        cur.execute("INSERT INTO py_ph VALUES (%s,%s,%s)", (1, "x", 10))
        cur.executemany("INSERT INTO py_ph VALUES (%s,%s,%s)", [(2, "y", 20), (3, "z", 30)])
    assert conn.execute("SELECT a FROM py_ph WHERE a=%s OR b=%s ORDER BY a", (1, "z")).fetchall() == [(1,), (3,)]
    assert conn.execute("SELECT upper(%s),lower(%s)", ("a", "B")).fetchone() == ("A", "b")


def test_savepoints_undo_what_came_after_them(conn):
    conn.execute("CREATE TABLE py_sp (id int)")
    with conn.transaction():
        conn.execute("INSERT INTO py_sp VALUES (1)")
        with pytest.raises(psycopg.errors.UndefinedFunction), conn.transaction():  # a savepoint
            conn.execute("INSERT INTO py_sp VALUES (2)")
            conn.execute("SELECT nosuchfunction()")
        conn.execute("INSERT INTO py_sp VALUES (3)")
    assert conn.execute("SELECT id FROM py_sp ORDER BY id").fetchall() == [(1,), (3,)]
    with pytest.raises(psycopg.errors.NoActiveSqlTransaction):
        conn.execute("SAVEPOINT outside")
    conn.execute("BEGIN")
    with pytest.raises(psycopg.errors.InvalidSavepointSpecification):
        conn.execute("ROLLBACK TO SAVEPOINT nowhere")
    conn.execute("ROLLBACK")


def test_ddl_in_a_transaction_commits_with_it_or_not_at_all(server, conn):
    with conn.transaction():
        conn.execute("CREATE TABLE py_txn (id int, name text)")
        conn.execute("INSERT INTO py_txn VALUES (1, 'a'), (2, 'b')")
        conn.execute("CREATE VIEW py_txn_v AS SELECT 1 AS one")
    assert conn.execute("SELECT count(*) FROM py_txn").fetchone() == (2,)
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE py_gone (id int)")
    conn.execute("INSERT INTO py_gone VALUES (1)")
    conn.execute("DROP TABLE py_txn")
    conn.execute("ROLLBACK")
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("SELECT * FROM py_gone")
    assert conn.execute("SELECT count(*) FROM py_txn").fetchone() == (2,)
    # A name taken by another session meanwhile: COMMIT fails and nothing of the block stays.
    with psycopg.connect(server.dsn, autocommit=True) as other:
        conn.execute("BEGIN")
        conn.execute("CREATE TABLE py_race (id int)")
        other.execute("CREATE TABLE py_race (x text)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            conn.execute("COMMIT")
        assert other.execute("SELECT column_name FROM information_schema.columns "
                             "WHERE table_name = 'py_race'").fetchall() == [("x",)]


def test_server_side_cursors_over_select_and_subscribe(server):
    """Named cursors: psycopg 3 (which describes the DECLAREd cursor as a portal), psycopg2
    and asyncpg, each over a SELECT and over a SUBSCRIBE that then sees a later change."""
    with psycopg.connect(server.dsn, autocommit=True) as setup:
        setup.execute("CREATE TABLE py_cur (a int)")
        setup.execute("INSERT INTO py_cur SELECT g FROM generate_series(1, 5) AS g")
    changes = iter(range(100, 200))

    def insert_later() -> int:
        value = next(changes)
        with psycopg.connect(server.dsn, autocommit=True) as writer:
            writer.execute("INSERT INTO py_cur VALUES (%s)", (value,))
        return value

    with psycopg.connect(server.dsn) as conn:
        for binary in (False, True):
            with conn.cursor(name="sel", binary=binary) as cur:
                cur.execute("SELECT a, a::text FROM py_cur WHERE a <= 5 ORDER BY 1")  # `ORDER BY a` is ambiguous in PostgreSQL: two output columns are named a
                assert cur.fetchmany(2) == [(1, "1"), (2, "2")] and cur.fetchall() == [(3, "3"), (4, "4"), (5, "5")]
            conn.commit()
        with conn.cursor(name="sub") as cur:
            cur.execute("SUBSCRIBE (SELECT a FROM py_cur WHERE a <= 5 OR a >= 100)")
            assert sorted(r[1:] for r in cur.fetchmany(5)) == [(1, a) for a in range(1, 6)]
            value = insert_later()
            assert cur.fetchone()[1:] == (1, value)
        conn.rollback()
    legacy = psycopg2.connect(server.dsn)
    cur = legacy.cursor(name="sub2")
    cur.execute("SUBSCRIBE (SELECT a FROM py_cur WHERE a <= 5)")
    assert sorted(r[1:] for r in cur.fetchmany(5)) == [(1, a) for a in range(1, 6)]
    cur.close()
    legacy.rollback()
    legacy.close()

    async def with_asyncpg():
        conn = await asyncpg.connect(f"postgresql://materialize@127.0.0.1:{server.port}/materialize")
        async with conn.transaction():
            rows = [r["a"] async for r in conn.cursor("SELECT a FROM py_cur WHERE a <= 5 ORDER BY a", prefetch=2)]
            assert rows == [1, 2, 3, 4, 5]
            cursor = await conn.cursor("SUBSCRIBE (SELECT a FROM py_cur WHERE a >= 100)")
            before = [r["a"] for r in await cursor.fetch(1)]
            value = await asyncio.to_thread(insert_later)
            after = await cursor.fetch(1)
            assert (after[0]["mz_diff"], after[0]["a"]) == (1, value) and value not in before
        await conn.close()

    _arun(with_asyncpg())


def test_sqlalchemy_core_orm_and_reflection(server):
    for dialect in ("psycopg", "psycopg2"):
        engine = sa.create_engine(f"postgresql+{dialect}://materialize@127.0.0.1:{server.port}/materialize")
        metadata = sa.MetaData()
        table = sa.Table(f"sa_{dialect}", metadata, sa.Column("id", sa.Integer, nullable=False),
                         sa.Column("name", sa.Text), sa.Column("price", sa.Numeric(10, 2)))
        metadata.create_all(engine)
        with engine.begin() as c:
            c.execute(table.insert(), [{"id": i, "name": f"n{i}", "price": i * 1.5} for i in range(1, 4)])
        with engine.connect() as c:
            rows = c.execute(sa.select(table.c.id, table.c.name).order_by(table.c.id).limit(2).offset(1)).all()
            assert [tuple(r) for r in rows] == [(2, "n2"), (3, "n3")]
        with engine.connect() as c, c.begin():
            nested = c.begin_nested()  # a savepoint
            c.execute(table.delete())
            nested.rollback()
            assert c.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 3
        inspector = sa.inspect(engine)
        assert table.name in inspector.get_table_names()
        columns = inspector.get_columns(table.name)
        assert [(col["name"], col["nullable"]) for col in columns] == [("id", False), ("name", True),
                                                                      ("price", True)]
        assert str(columns[2]["type"]) == "NUMERIC(10, 2)"
        assert inspector.get_pk_constraint(table.name)["constrained_columns"] == []
        assert inspector.get_foreign_keys(table.name) == []
        assert inspector.get_indexes(table.name) == []
        assert inspector.get_unique_constraints(table.name) == []
        reflected = sa.Table(table.name, sa.MetaData(), autoload_with=engine)
        assert [c.name for c in reflected.columns] == ["id", "name", "price"]
        metadata.drop_all(engine)
        engine.dispose()


def test_pandas_to_sql_and_read_sql(server):
    engine = sa.create_engine(f"postgresql+psycopg2://materialize@127.0.0.1:{server.port}/materialize")
    frame = pd.DataFrame({"id": [1, 2, 3], "city": ["Oslo", "Lima", None], "temp": [3.5, 18.25, -1.0]})
    frame.to_sql("pd_weather", engine, index=False)  # CREATE TABLE and INSERT in one transaction
    back = pd.read_sql_table("pd_weather", engine).sort_values("id").reset_index(drop=True)
    assert back["id"].tolist() == [1, 2, 3] and back["temp"].tolist() == [3.5, 18.25, -1.0]
    assert back["city"].tolist()[:2] == ["Oslo", "Lima"]
    query = pd.read_sql_query(sa.text("SELECT city FROM pd_weather WHERE temp > :t ORDER BY id"), engine,
                              params={"t": 0})
    assert query["city"].tolist() == ["Oslo", "Lima"]
    engine.dispose()


def test_copy_in_and_out_in_every_format(server, conn):
    conn.execute("CREATE TABLE py_copy (id int, name text, price numeric(10,2), at timestamptz)")
    with conn.cursor() as cur:
        with cur.copy("COPY py_copy FROM STDIN (FORMAT csv, HEADER)") as copy:
            copy.write('id,name,price,at\n1,"a,b",1.50,2024-01-02 03:04:05+00\n2,,,\n')
        with cur.copy("COPY py_copy (id, name) FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(["int4", "text"])
            copy.write_row((3, "binary"))
        with cur.copy("COPY py_copy TO STDOUT WITH (FORMAT 'csv', HEADER)") as copy:
            text = b"".join(bytes(b) for b in copy)
        assert text.decode().splitlines() == ["id,name,price,at", '1,"a,b",1.50,2024-01-02 03:04:05+00',
                                              "2,,,", "3,binary,,"]
        with cur.copy("COPY (SELECT id, name FROM py_copy ORDER BY id) TO STDOUT (FORMAT binary)") as copy:
            copy.set_types(["int4", "text"])
            assert list(copy.rows()) == [(1, "a,b"), (2, None), (3, "binary")]
    raw = psycopg2.connect(server.dsn)
    out = io.StringIO()
    raw.cursor().copy_to(out, "py_copy", sep=",", columns=("id", "name"))
    assert out.getvalue().splitlines() == ["1,a\\,b", "2,\\N", "3,binary"]
    raw.close()

    async def go():
        con = await asyncpg.connect(f"postgresql://materialize@127.0.0.1:{server.port}/materialize")
        await con.copy_records_to_table("py_copy", records=[(4, "asyncpg", 2.5, None)], columns=["id", "name",
                                                                                                 "price", "at"])
        sink = io.BytesIO()
        await con.copy_from_query("SELECT id, name FROM py_copy WHERE id = 4", output=sink, format="csv")
        await con.close()
        return sink.getvalue()

    assert _arun(go()) == b"4,asyncpg\n"


def test_asyncpg_pool_resets_its_connections(server):
    async def go():
        pool = await asyncpg.create_pool(f"postgresql://materialize@127.0.0.1:{server.port}/materialize",
                                         min_size=1, max_size=2)
        values = []
        for i in range(4):  # each release runs the reset query: UNLISTEN *, RESET ALL, ...
            async with pool.acquire() as con:
                await con.execute("LISTEN somewhere")
                values.append(await con.fetchval("SELECT $1::int * 2", i))
        await pool.close()
        return values

    assert _arun(go()) == [0, 2, 4, 6]


def test_listen_notify(server, conn):
    with psycopg.connect(server.dsn, autocommit=True) as listener:
        listener.execute("LISTEN jobs")
        conn.execute("NOTIFY jobs, 'first'")
        with conn.transaction():
            conn.execute("NOTIFY jobs, 'at commit'")
            conn.execute("NOTIFY jobs, 'at commit'")  # folded, as in PostgreSQL
        conn.execute("BEGIN")
        conn.execute("NOTIFY jobs, 'rolled back'")
        conn.execute("ROLLBACK")
        got = []
        for note in listener.notifies(timeout=5, stop_after=2):
            got.append((note.channel, note.payload))
        assert got == [("jobs", "first"), ("jobs", "at commit")]
        listener.execute("UNLISTEN jobs")
        listener.execute("UNLISTEN *")


def test_pg_stat_activity_and_signalling_another_session(server, conn):
    victim = psycopg.connect(server.dsn, autocommit=True)
    victim.execute("SET application_name = 'victim'")
    pid = victim.info.backend_pid
    failures: list[BaseException] = []

    def long_query():
        try:
            victim.execute("SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b")
        except BaseException as exc:  # noqa: BLE001 - what the cancel makes of it
            failures.append(exc)

    worker = threading.Thread(target=long_query)
    worker.start()
    row = wait_until(lambda: conn.execute(
        "SELECT state, query, application_name, usename FROM pg_stat_activity WHERE pid = %s", (pid,)
    ).fetchone() if _active(conn, pid) else None, 60, message="the victim's query to be active")
    assert row[0] == "active" and "generate_series" in row[1] and row[2] == "victim" and row[3] == "materialize"
    assert conn.execute("SELECT pg_cancel_backend(%s)", (pid,)).fetchone() == (True,)
    worker.join(60)
    assert isinstance(failures[0], psycopg.errors.QueryCanceled)
    assert victim.execute("SELECT 1").fetchone() == (1,)
    assert conn.execute("SELECT pg_cancel_backend(999999)").fetchone() == (False,)
    # Another role may not signal it (there are no superusers).
    with psycopg.connect(server.dsn.replace("user=materialize", "user=mallory"), autocommit=True) as other:
        for call in ("pg_cancel_backend", "pg_terminate_backend"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                other.execute(f"SELECT {call}(%s)", (pid,))
        assert other.execute("SELECT 1").fetchone() == (1,)
    assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
    time.sleep(1)
    with pytest.raises(psycopg.OperationalError):
        victim.execute("SELECT 1")
    victim.close()
    # Secrets never show in pg_stat_activity.
    conn.execute("CREATE SECRET activity_secret AS 'do-not-show-7781'")
    texts = [r[0] for r in conn.execute("SELECT query FROM pg_stat_activity").fetchall()]
    assert not any("do-not-show" in t for t in texts)


def _active(conn, pid: int) -> bool:
    row = conn.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row is not None and row[0] == "active"


def test_set_transaction_isolation_as_jdbc_and_hikari_send_it(conn):
    for sql in ("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
                "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET SESSION TRANSACTION READ WRITE"):
        assert conn.execute(sql).statusmessage == "SET"
    assert conn.execute("SHOW transaction_isolation").fetchone() == ("serializable",)


@pytest.mark.parametrize("command", [
    r"\d", r"\dt+", r"\dv", r"\dn+", r"\df", r"\df upper", r"\dT", r"\du", r"\l+", r"\dd", r"\dL", r"\do",
    r"\dc", r"\dC", r"\des", r"\dew", r"\det", r"\dy", r"\ddp", r"\dp", r"\dx", r"\dF", r"\dFd", r"\dFp",
    r"\dFt", r"\dO", r"\dl", r"\dRp", r"\dRs", r"\drds", r"\dA", r"\dD", r"\di", r"\ds", r"\dm", r"\z",
])
def test_psql_describe_family(server, command):
    out = subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize",
                          "materialize", "-c", command], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0 and "ERROR" not in out.stderr, (command, out.stderr)


def test_psql_shows_a_views_query(server, conn):
    conn.execute("CREATE TABLE py_vt (a int)")
    conn.execute("CREATE VIEW py_vv AS SELECT a FROM py_vt WHERE a > 1")
    for command in (r"\sv py_vv", r"\d+ py_vv"):
        out = subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize",
                              "materialize", "-c", command], capture_output=True, text=True, timeout=120,
                             check=False)
        assert out.returncode == 0 and "a > 1" in out.stdout, (command, out.stdout, out.stderr)


# What DBeaver, Metabase and Grafana send when they connect and list a schema.
TOOL_QUERIES = [
    "SELECT current_schema(),session_user",
    ("SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d "
    "ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname"),
    "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='materialize'",
    "select * from pg_catalog.pg_settings where name='max_index_keys'",
    "SELECT string_agg(word, ',') from pg_catalog.pg_get_keywords() where word <> ALL ('{a,abs,absolute,action}'::text[])",
    ("SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description "
    "FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN "
    "pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid "
    "WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR "
    "et.typcategory <> 'C')"),
    ("select c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr, "
    "pg_catalog.pg_get_partkeydef(c.oid) as partition_key from pg_catalog.pg_class c left outer join "
    "pg_catalog.pg_description d on d.objoid=c.oid and d.objsubid=0 and d.classoid='pg_class'::regclass "
    "where c.relnamespace=2200 and c.relkind not in ('i','I','c')"),
    "SELECT inet_server_addr(), inet_server_port(), pg_backend_pid(), version()",
    "SHOW search_path",
    "select pid, usename, application_name, state, query from pg_catalog.pg_stat_activity",
    "SELECT relname, n_live_tup FROM pg_stat_user_tables",
    "SELECT constraint_name, constraint_type FROM information_schema.table_constraints WHERE table_schema = 'public'",
    "SELECT kcu.column_name FROM information_schema.key_column_usage kcu WHERE kcu.table_name = 'x'",
    ("SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('information_schema', 'pg_catalog') "
    "AND has_schema_privilege(nspname, 'USAGE')"),
    ("SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'public' "
    "ORDER BY table_name, ordinal_position"),
    ("SELECT table_name FROM information_schema.tables WHERE table_schema = ANY (current_schemas(false)) "
    "ORDER BY table_name"),
    "SELECT e.extname, e.extversion FROM pg_catalog.pg_extension e",
]


@pytest.mark.parametrize("sql", TOOL_QUERIES, ids=range(len(TOOL_QUERIES)))
def test_introspection_of_bi_tools(conn, sql):
    conn.execute(sql).fetchall()


def test_inet_server_addr_and_keywords(server, conn):
    assert conn.execute("SELECT inet_server_addr(), inet_server_port()").fetchone() == ("127.0.0.1", server.port)
    assert conn.execute("SELECT catcode FROM pg_get_keywords() WHERE word = 'select'").fetchone() == ("R",)
    assert conn.execute("SELECT 'x' <> ALL (ARRAY['a', 'b']), 'a' <> ALL (ARRAY['a']), 1 < ALL (ARRAY[2, 3]), "
                        "1 = ALL (ARRAY[]::int[])").fetchone() == (True, False, True, True)
