"""Latency of a one-row INSERT (autocommit, acknowledged = durable): sparkwire next to PostgreSQL 15.

    .venv/bin/python bench/bench_insert.py [--count N] [--serial]

--serial: into `one (id serial, name text)`, the id drawn from the table's sequence (a row
in 32 also writes the sequence's mark ahead to the log, as PostgreSQL's WAL does).
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import PostgresServer, ServerProcess, percentile, report


def latencies(dsn: str, count: int, serial: bool) -> list[float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE one (id {'serial' if serial else 'int'}, name text)")
        insert = "INSERT INTO one (name) VALUES (%s)" if serial else "INSERT INTO one VALUES (%s, %s)"

        def values(i: int, name: str) -> tuple:
            return (name,) if serial else (i, name)

        for i in range(20):  # warm up
            conn.execute(insert, values(i, "warm"))
        out = []
        for i in range(count):
            start = time.perf_counter()
            conn.execute(insert, values(i, f"row {i}"))
            out.append((time.perf_counter() - start) * 1000)
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--serial", action="store_true", help="into a serial column, ids from its sequence")
    args = parser.parse_args()
    pg = PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        ours = latencies(sw.dsn, args.count, args.serial)
        theirs = latencies(pg.dsn, args.count, args.serial)
        report([
            (f"INSERT 1 row{' serial' if args.serial else ''} p50 ms (n={args.count})", f"{percentile(ours, 50):.2f}", f"{percentile(theirs, 50):.2f}"),
            (f"INSERT 1 row{' serial' if args.serial else ''} p99 ms (n={args.count})", f"{percentile(ours, 99):.2f}", f"{percentile(theirs, 99):.2f}"),
        ])
    finally:
        sw.cleanup()
        pg.stop()


if __name__ == "__main__":
    main()
