"""PostgreSQL source: initial snapshot and steady streaming, next to PostgreSQL's own
logical replication (CREATE SUBSCRIPTION into a second PostgreSQL) on the same data,
and the lag from an upstream commit to the row reaching a SUBSCRIBE client.

    .venv/bin/python bench/bench_pg_source.py [--rows 1000000] [--changes 100000] [--lag 100]
"""

from __future__ import annotations

import argparse
import threading
import time

import psycopg
from common import PostgresServer, ServerProcess, percentile, report

TABLE = "CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), at timestamptz)"


def wait_until(check, timeout: float = 1800.0, poll: float = 0.2) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if check():
            return time.perf_counter() - start
        time.sleep(poll)
    raise TimeoutError("condition not met in time")


def count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--lag", type=int, default=100)
    args = parser.parse_args()
    up, down = PostgresServer().start(), PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        with psycopg.connect(up.dsn, autocommit=True) as c:
            c.execute(TABLE)
            c.execute("ALTER TABLE items REPLICA IDENTITY FULL")
            c.execute("INSERT INTO items SELECT g, 'item ' || g, g % 1000 + 0.5, now() "
                      f"FROM generate_series(1, {args.rows}) g")
            c.execute("CREATE PUBLICATION bench FOR TABLE items")
        with psycopg.connect(down.dsn, autocommit=True) as c:
            c.execute(TABLE)
        # Native: a subscription copies the table, then streams.
        start = time.perf_counter()
        with psycopg.connect(down.dsn, autocommit=True) as c:
            c.execute(f"CREATE SUBSCRIPTION s CONNECTION 'host=127.0.0.1 port={up.port} user=postgres "
                      "dbname=postgres' PUBLICATION bench")
        wait_until(lambda: count(down.dsn, "items") == args.rows)
        native_snapshot = time.perf_counter() - start
        # sparkwire: CREATE TABLE ... FROM SOURCE returns once the snapshot is durable.
        with psycopg.connect(sw.dsn, autocommit=True) as c:
            c.execute(f"CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {up.port}, USER 'postgres', "
                      "DATABASE 'postgres')")
            c.execute("CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'bench')")
            start = time.perf_counter()
            c.execute("CREATE TABLE items FROM SOURCE shop (REFERENCE public.items)")
            ours_snapshot = time.perf_counter() - start
        assert count(sw.dsn, "items") == args.rows
        # Streaming: one upstream statement changes `changes` rows, in batches of 1000.
        start = time.perf_counter()
        with psycopg.connect(up.dsn, autocommit=True) as c:
            for lo in range(1, args.changes + 1, 1000):
                c.execute("UPDATE items SET price = price + 1 WHERE id BETWEEN %s AND %s",
                          (lo, min(args.changes, lo + 999)))
            target = c.execute("SELECT sum(price) FROM items").fetchone()[0]
        written = time.perf_counter() - start

        def caught_up(dsn: str) -> bool:
            with psycopg.connect(dsn, autocommit=True) as c:
                return c.execute("SELECT sum(price) FROM items").fetchone()[0] == target

        native_stream = written + wait_until(lambda: caught_up(down.dsn))
        ours_stream = written + wait_until(lambda: caught_up(sw.dsn), poll=0.5)
        lags = lag(up.dsn, sw.dsn, args.lag)
        report([
            (f"snapshot {args.rows} rows, s", f"{ours_snapshot:.1f}", f"{native_snapshot:.1f}"),
            ("snapshot rows/s", f"{args.rows / ours_snapshot:,.0f}", f"{args.rows / native_snapshot:,.0f}"),
            (f"stream {args.changes} row changes, s", f"{ours_stream:.1f}", f"{native_stream:.1f}"),
            ("stream row changes/s", f"{args.changes / ours_stream:,.0f}", f"{args.changes / native_stream:,.0f}"),
            (f"commit → SUBSCRIBE client p50 ms (n={len(lags)})", f"{percentile(lags, 50):.0f}", ""),
            (f"commit → SUBSCRIBE client p99 ms (n={len(lags)})", f"{percentile(lags, 99):.0f}", ""),
        ])
    finally:
        sw.cleanup()
        down.stop()
        up.stop()


def lag(up_dsn: str, sw_dsn: str, n: int) -> list[float]:
    """Upstream commit acknowledged → the row at a subscribed client, in ms."""
    seen: dict[int, float] = {}
    ready = threading.Event()

    def reader() -> None:
        with psycopg.connect(sw_dsn) as c:
            cur = c.cursor()
            cur.execute("BEGIN")
            cur.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT id FROM items WHERE id < 0) "
                        "WITH (SNAPSHOT = false)")
            ready.set()
            while len(seen) < n:
                cur.execute("FETCH ALL c WITH (timeout = '1s')")
                now = time.perf_counter()
                for _, _, ident in cur.fetchall():
                    seen.setdefault(-ident, now)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    ready.wait()
    out = []
    with psycopg.connect(up_dsn, autocommit=True) as c:
        for i in range(1, n + 1):
            c.execute("INSERT INTO items VALUES (%s, 'lag', 1, now())", (-i,))
            sent = time.perf_counter()
            wait_until(lambda i=i: i in seen, timeout=60, poll=0.002)
            out.append((seen[i] - sent) * 1000)
            time.sleep(0.05)
    return out


if __name__ == "__main__":
    main()
