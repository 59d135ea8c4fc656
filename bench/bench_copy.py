"""Bulk load with COPY ... FROM STDIN: rows/s into sparkwire next to PostgreSQL 15, same data.

    .venv/bin/python bench/bench_copy.py [--rows 1000000]

Each format (text, CSV) loads the same rows (bigint, text, numeric(12,2), timestamptz)
through psycopg's copy API in 64 KiB chunks, into a fresh table on each server, timed from
the COPY statement to its CommandComplete (the rows are durable on both then). Figures only.
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import PostgresServer, ServerProcess, machine_note, report

TABLE = "CREATE TABLE load_{fmt} (id bigint, name text, amount numeric(12,2), at timestamptz)"


def data(rows: int, fmt: str) -> bytes:
    sep = "\t" if fmt == "text" else ","
    return "".join(f"{i}{sep}name {i}{sep}{i % 100000}.25{sep}2024-01-01 00:00:{i % 60:02d}+00\n"
                   for i in range(rows)).encode()


def load(dsn: str, fmt: str, payload: bytes) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(TABLE.format(fmt=fmt))
        option = "" if fmt == "text" else " (FORMAT csv)"
        start = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY load_{fmt} FROM STDIN{option}") as copy:
            for i in range(0, len(payload), 1 << 16):
                copy.write(payload[i:i + (1 << 16)])
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    print(machine_note("bench_copy"), flush=True)
    pg = PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        lines = []
        for fmt in ("text", "csv"):
            payload = data(args.rows, fmt)
            ours = load(sw.dsn, fmt, payload)
            theirs = load(pg.dsn, fmt, payload)
            lines.append((f"COPY {args.rows:,} rows ({fmt}), rows/s", f"{args.rows / ours:,.0f}",
                          f"{args.rows / theirs:,.0f}"))
            lines.append((f"  ratio sparkwire/postgres time ({fmt})", f"{ours / theirs:.2f}x", ""))
        report(lines)
    finally:
        sw.cleanup()
        pg.stop()
    print(machine_note("done"), flush=True)


if __name__ == "__main__":
    main()
