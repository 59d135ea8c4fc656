"""Server start to ready (first query answered): sparkwire next to PostgreSQL 15.

    .venv/bin/python bench/bench_startup.py
"""

from __future__ import annotations

import time

from common import PostgresServer, ServerProcess, report


def main() -> None:
    start = time.perf_counter()
    sw = ServerProcess().start()
    listening = time.perf_counter() - start
    try:
        sw.wait_ready()
        ready = time.perf_counter() - start
    finally:
        sw.cleanup()
    start = time.perf_counter()
    pg = PostgresServer()
    pg.start()  # includes initdb
    pg_ready = time.perf_counter() - start
    pg.stop()
    report([
        ("start → listening, s", f"{listening:.2f}", ""),
        ("start → first query answered, s", f"{ready:.2f}", f"{pg_ready:.2f} (incl. initdb)"),
    ])


if __name__ == "__main__":
    main()
