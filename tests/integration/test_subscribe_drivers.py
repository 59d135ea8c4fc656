"""Driver cursors over SELECT and SUBSCRIBE (issue 18, part 2), with the real drivers.

A cursor's fetch of n rows over a SUBSCRIBE returns as soon as at least one row is ready
(up to n), as Materialize answers it: a driver asking for 5 rows when 1 exists must not
wait for 4 more that may never come. Through SQL that is `FETCH n` without a timeout;
through the extended protocol it is Execute with a row limit, which ends with
PortalSuspended. `FETCH 0` answers at once. Named (server-side) cursors of psycopg 3 and
psycopg2, asyncpg's cursors and pgjdbc's setFetchSize all go through these paths.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import asyncpg
import psycopg
import psycopg2
import pytest

from tests.support import fresh

pytestmark = pytest.mark.slow

JDBC_JAR = Path("/usr/share/java/postgresql.jar")




def table(server, prefix: str, columns: str, rows: str | None = None) -> str:
    name = fresh(prefix)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {name} ({columns})")
        if rows:
            c.execute(f"INSERT INTO {name} VALUES {rows}")
    return name


def insert_later(server, sql: str, delay: float) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        with psycopg.connect(server.dsn, autocommit=True) as c:
            c.execute(sql)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


# --------------------------------------------------------------------------- SQL FETCH


def test_fetch_n_returns_what_is_ready_and_fetch_0_at_once(server):
    t = table(server, "fetchn", "k int", "(1)")
    with psycopg.connect(server.dsn) as conn:
        cur = conn.cursor()
        cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t}")
        started = time.monotonic()
        cur.execute("FETCH 0 c")
        assert cur.fetchall() == [] and [d.name for d in cur.description] == ["mz_timestamp", "mz_diff", "k"]
        assert cur.statusmessage == "FETCH 0"
        cur.execute("FETCH 5 c")  # one row exists: it comes back alone, without waiting for five
        assert [r[1:] for r in cur.fetchall()] == [(1, 1)]
        assert time.monotonic() - started < 60
        writer = insert_later(server, f"INSERT INTO {t} VALUES (2)", 1.0)
        cur.execute("FETCH 5 c")  # nothing ready: waits for the next row, then returns it
        assert [r[1:] for r in cur.fetchall()] == [(1, 2)]
        writer.join()
        cur.execute("FETCH 0 c")
        assert cur.fetchall() == []


# --------------------------------------------------------------------------- psycopg 3


def test_psycopg3_named_cursor_over_select(server):
    t = table(server, "p3sel", "k int, v text", ", ".join(f"({i}, 'v{i}')" for i in range(25)))
    with psycopg.connect(server.dsn) as conn:
        with conn.cursor(name="sel") as cur:
            cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
            assert [d.name for d in cur.description] == ["k", "v"]
            assert cur.fetchone() == (0, "v0")
            assert cur.fetchmany(4) == [(i, f"v{i}") for i in range(1, 5)]
            assert [r[0] for r in cur.fetchall()] == list(range(5, 25))
        with conn.cursor(name="sel2", binary=True) as cur:
            cur.itersize = 7
            cur.execute(f"SELECT k FROM {t} WHERE k < %s ORDER BY k", (10,))
            assert [r[0] for r in cur] == list(range(10))


def test_psycopg3_named_cursor_over_subscribe(server):
    t = table(server, "p3sub", "k int", "(1), (2)")
    with psycopg.connect(server.dsn) as conn:
        with conn.cursor(name="sub") as cur:
            cur.execute(f"SUBSCRIBE {t} WITH (PROGRESS)")
            assert [d.name for d in cur.description] == ["mz_timestamp", "mz_progressed", "mz_diff", "k"]
            first = cur.fetchmany(10)
            assert first and first[0][1] is True  # the first row: progress at the AS OF
            rows = list(first)
            while sum(1 for r in rows if not r[1]) < 2:
                rows += cur.fetchmany(10)
            assert sorted(r[3] for r in rows if not r[1]) == [1, 2]
            writer = insert_later(server, f"INSERT INTO {t} VALUES (3)", 0.5)
            while not any(r[3] == 3 for r in rows):
                rows += cur.fetchmany(10)
            writer.join()
        conn.rollback()


# --------------------------------------------------------------------------- psycopg2


def test_psycopg2_named_cursors_over_select_and_subscribe(server):
    t = table(server, "p2", "k int", ", ".join(f"({i})" for i in range(30)))
    conn = psycopg2.connect(server.dsn)
    try:
        cur = conn.cursor("p2sel")
        cur.itersize = 8
        cur.execute(f"SELECT k FROM {t} ORDER BY k")
        assert [r[0] for r in cur] == list(range(30))
        cur.close()
        sub = conn.cursor("p2sub")
        sub.execute(f"SUBSCRIBE {t} WITH (SNAPSHOT = false)")
        writer = insert_later(server, f"INSERT INTO {t} VALUES (100)", 0.5)
        rows = sub.fetchmany(50)  # FETCH FORWARD 50: what is there once something is
        assert [r[1:] for r in rows] == [(1, 100)]
        writer.join()
        sub.close()
        conn.rollback()
    finally:
        conn.close()


# --------------------------------------------------------------------------- asyncpg


def test_asyncpg_cursor_fetch_returns_what_is_ready(server):
    t = table(server, "apg", "k int", "(1)")
    kw = {"host": "127.0.0.1", "port": server.port, "user": "materialize", "database": "materialize"}

    async def main() -> None:
        conn = await asyncpg.connect(**kw)
        other = await asyncpg.connect(**kw)
        try:
            async with conn.transaction():
                cur = await conn.cursor(f"SUBSCRIBE {t}")
                rows = await asyncio.wait_for(cur.fetch(5), 60)  # Execute with a row limit of 5
                assert [(r["mz_diff"], r["k"]) for r in rows] == [(1, 1)]
                # asyncpg takes a short batch for the end of the cursor: its fetch() returns []
                # from then on, without asking the server. Iterating keeps asking instead.
            async def write_later() -> None:
                await asyncio.sleep(1.0)
                await other.execute(f"INSERT INTO {t} VALUES (2), (3)")
                await asyncio.sleep(0.5)
                await other.execute(f"INSERT INTO {t} VALUES (4)")

            async with conn.transaction():
                got = []
                writes = asyncio.ensure_future(write_later())
                async for r in conn.cursor(f"SUBSCRIBE {t} WITH (SNAPSHOT = false)", prefetch=5):
                    got.append((r["mz_diff"], r["k"]))
                    if len(got) == 3:
                        break
                await writes
                assert sorted(got) == [(1, 2), (1, 3), (1, 4)]
            async with conn.transaction():
                cur = await conn.cursor(f"SELECT k FROM {t} ORDER BY k")
                assert [r["k"] for r in await cur.fetch(2)] == [1, 2]
                assert [r["k"] for r in await cur.fetch(5)] == [3, 4]
        finally:
            await conn.close()
            await other.close()

    asyncio.run(asyncio.wait_for(main(), 240))


# --------------------------------------------------------------------------- pgjdbc

JAVA = textwrap.dedent("""
    import java.sql.*;
    public class FetchSize {
        public static void main(String[] args) throws Exception {
            try (Connection c = DriverManager.getConnection(args[0], "materialize", "")) {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.setFetchSize(50);
                    try (ResultSet rs = s.executeQuery("SELECT k FROM " + args[1] + " ORDER BY k")) {
                        int n = 0;
                        while (rs.next()) n++;
                        System.out.println("select " + n);
                    }
                }
                try (Statement s = c.createStatement()) {
                    s.setFetchSize(50);
                    try (ResultSet rs = s.executeQuery("SUBSCRIBE " + args[1])) {
                        int n = 0;
                        while (n < 3 && rs.next()) n++;
                        System.out.println("subscribe " + n);
                    }
                }
                c.rollback();
            }
        }
    }
""")


@pytest.mark.skipif(not JDBC_JAR.exists() or shutil.which("javac") is None, reason="pgjdbc or javac not installed")
def test_pgjdbc_set_fetch_size_over_select_and_subscribe(server, tmp_path):
    t = table(server, "jdbc", "k int", ", ".join(f"({i})" for i in range(120)))
    (tmp_path / "FetchSize.java").write_text(JAVA)
    subprocess.run(["javac", "-cp", str(JDBC_JAR), "FetchSize.java"], cwd=tmp_path, check=True, timeout=120)
    url = f"jdbc:postgresql://127.0.0.1:{server.port}/materialize?preferQueryMode=extended"
    out = subprocess.run(["java", "-cp", f"{JDBC_JAR}:{tmp_path}", "FetchSize", url, t],
                         capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr
    # A fetch size of 50 over 120 rows: the snapshot leaves in pieces; three rows come
    # back without waiting for 50.
    assert out.stdout.split("\n")[:2] == ["select 120", "subscribe 3"], out.stdout
