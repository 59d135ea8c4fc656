"""Latency of a small query, through each front end and next to PostgreSQL 15 (issue 20 item 7:
parsing and binding must not slow the hot paths; a prepared statement skips them).

    .venv/bin/python bench/bench_point_query.py [--count N]

For each front end (`sql_frontend` = postgres, the default, and sqlglot) a one-row lookup with
a parameter is timed twice: sent as a new statement each time (psycopg `prepare=False`: Parse,
Bind, Execute) and as a prepared statement (`prepare=True`: parsed once). Both run Spark;
what differs is the planning in front of it.
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import PostgresServer, ServerProcess, percentile, report

QUERY = "SELECT id, name, price * 2 FROM items WHERE id = %s AND name <> 'x'"


def latencies(dsn: str, count: int, prepare: bool, frontend: str | None) -> list[float]:
    options = f"-c sql_frontend={frontend}" if frontend else ""
    with psycopg.connect(dsn, autocommit=True, options=options) as conn:
        for i in range(5):  # warm
            conn.execute(QUERY, (i,), prepare=prepare).fetchall()
        out = []
        for i in range(count):
            start = time.perf_counter()
            rows = conn.execute(QUERY, (i % 100,), prepare=prepare).fetchall()
            out.append((time.perf_counter() - start) * 1000)
            assert len(rows) == 1, rows
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    pg = PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        for dsn in (pg.dsn, sw.dsn):
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE TABLE items (id bigint, name text, price double precision)")
                conn.execute("INSERT INTO items SELECT g, 'n' || g, g * 1.5 FROM generate_series(0, 99) AS g")
        rows = []
        for prepare in (False, True):
            how = "prepared" if prepare else "new statement"
            theirs = latencies(pg.dsn, args.count, prepare, None)
            for frontend in ("postgres", "sqlglot"):
                ours = latencies(sw.dsn, args.count, prepare, frontend)
                rows.append((f"{how}, sql_frontend={frontend}: p50 / p99 ms",
                             f"{percentile(ours, 50):.2f} / {percentile(ours, 99):.2f}",
                             f"{percentile(theirs, 50):.2f} / {percentile(theirs, 99):.2f}"))
        report(rows)
    finally:
        sw.cleanup()
        pg.stop()


if __name__ == "__main__":
    main()
