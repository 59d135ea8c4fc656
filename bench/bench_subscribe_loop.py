"""Does a big SUBSCRIBE snapshot hold up other sessions? (issue 18, part 3)

    .venv/bin/python bench/bench_subscribe_loop.py [--rows 1000000]

A writer commits one-row INSERTs on its own connection, back to back, and records how long
each takes to be acknowledged: first for a quiet stretch, then while another client's
SUBSCRIBE of a join of two `--rows`-row tables builds its state (both sides kept per join
key) and sends its snapshot. The join's state is Python work; it runs on worker threads,
so the event loop should keep acknowledging writes. Goal: p99 under 100 ms during the
snapshot. Figures only.
"""

from __future__ import annotations

import argparse
import threading
import time

import psycopg
from common import ServerProcess, machine_note, percentile

JOIN = "SELECT l.k, l.v, r.w FROM l JOIN r ON l.k = r.k"


class Writer(threading.Thread):
    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.samples: list[tuple[float, float]] = []  # (start, seconds)
        self.halt = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            n = 0
            while not self.halt.is_set():
                n += 1
                start = time.perf_counter()
                conn.execute(f"INSERT INTO pings VALUES ({n})")
                self.samples.append((start, time.perf_counter() - start))
                time.sleep(0.005)

    def between(self, lo: float, hi: float) -> list[float]:
        return [s * 1000 for t, s in self.samples if lo <= t <= hi]


def summary(label: str, ms: list[float]) -> str:
    if not ms:
        return f"{label}: no samples"
    return (f"{label:<34} n={len(ms):5d}  p50 {percentile(ms, 50):7.1f} ms  p99 {percentile(ms, 99):7.1f} ms"
            f"  max {max(ms):7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--quiet", type=float, default=10.0, help="seconds of writes before the SUBSCRIBE")
    args = parser.parse_args()
    print(machine_note("bench_subscribe_loop"), flush=True)
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        with psycopg.connect(sw.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE l (k bigint, v text)")
            conn.execute("CREATE TABLE r (k bigint, w text)")
            conn.execute("CREATE TABLE pings (n bigint)")
            conn.execute(f"INSERT INTO l SELECT g, 'v' || g FROM generate_series(1, {args.rows}) AS g")
            conn.execute(f"INSERT INTO r SELECT g, 'w' || g FROM generate_series(1, {args.rows}) AS g")
            plan = [row[0] for row in conn.execute(f"EXPLAIN SUBSCRIBE ({JOIN})")]
            print(plan[0], flush=True)
        writer = Writer(sw.dsn)
        writer.start()
        time.sleep(args.quiet)
        quiet_end = time.perf_counter()
        rows = 0
        with psycopg.connect(sw.dsn) as sub, sub.cursor() as cur:
            start = time.perf_counter()
            cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE ({JOIN}) WITH (SNAPSHOT = true, PROGRESS)")
            declared = time.perf_counter() - start
            while rows < args.rows:
                cur.execute("FETCH ALL c WITH (timeout = '1s')")
                rows += sum(1 for r in cur.fetchall() if not r[1])
            snapshot_end = time.perf_counter()
            sub.rollback()
        writer.halt.set()
        writer.join()
        print(f"join snapshot: {rows:,} rows in {snapshot_end - start:.1f} s (DECLARE {declared:.1f} s)")
        print(summary("INSERT ack, quiet", writer.between(0, quiet_end)))
        print(summary("INSERT ack, during the snapshot", writer.between(start, snapshot_end)))
        print(machine_note("done"))
    finally:
        sw.cleanup()


if __name__ == "__main__":
    main()
