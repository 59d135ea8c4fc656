"""Latency of a one-row INSERT (autocommit, acknowledged = durable): sparkwire next to PostgreSQL 15.

    .venv/bin/python bench/bench_insert.py [--count N]
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import PostgresServer, ServerProcess, percentile, report


def latencies(dsn: str, count: int) -> list[float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE one (id int, name text)")
        for i in range(20):  # warm up
            conn.execute("INSERT INTO one VALUES (%s, %s)", (i, "warm"))
        out = []
        for i in range(count):
            start = time.perf_counter()
            conn.execute("INSERT INTO one VALUES (%s, %s)", (i, f"row {i}"))
            out.append((time.perf_counter() - start) * 1000)
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=500)
    args = parser.parse_args()
    pg = PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        ours = latencies(sw.dsn, args.count)
        theirs = latencies(pg.dsn, args.count)
        report([
            (f"INSERT 1 row p50 ms (n={args.count})", f"{percentile(ours, 50):.2f}", f"{percentile(theirs, 50):.2f}"),
            (f"INSERT 1 row p99 ms (n={args.count})", f"{percentile(ours, 99):.2f}", f"{percentile(theirs, 99):.2f}"),
        ])
    finally:
        sw.cleanup()
        pg.stop()


if __name__ == "__main__":
    main()
