"""Rows/s streaming a 1e6-row SELECT to a psycopg client: sparkwire next to PostgreSQL 15.

    .venv/bin/python bench/bench_select.py [--rows N]
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import PostgresServer, ServerProcess, report

LOAD = "INSERT INTO big SELECT g, 'name-' || g, g * 1.5 FROM generate_series(1, {n}) AS g"
QUERY = "SELECT id, name, price FROM big"


def timed_select(dsn: str, binary: bool) -> tuple[float, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(QUERY + " LIMIT 1").fetchall()  # warm
        best = None
        for _ in range(3):
            start = time.perf_counter()
            cur = conn.cursor(binary=binary)
            rows = cur.execute(QUERY).fetchall()
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        return best, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    pg = PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        for dsn in (pg.dsn, sw.dsn):
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE TABLE big (id bigint, name text, price double precision)")
                conn.execute(LOAD.format(n=args.rows))
        rows = []
        for binary in (False, True):
            ours, n1 = timed_select(sw.dsn, binary)
            theirs, n2 = timed_select(pg.dsn, binary)
            assert n1 == n2 == args.rows, (n1, n2)
            fmt = "binary" if binary else "text"
            rows.append((f"SELECT {args.rows} rows ({fmt}), seconds", f"{ours:.2f}", f"{theirs:.2f}"))
            rows.append((f"SELECT {args.rows} rows ({fmt}), rows/s", f"{args.rows / ours:,.0f}",
                         f"{args.rows / theirs:,.0f}"))
            rows.append((f"  ratio sparkwire/postgres ({fmt})", f"{ours / theirs:.2f}x", ""))
        report(rows)
    finally:
        sw.cleanup()
        pg.stop()


if __name__ == "__main__":
    main()
