"""Sustained updates/s reaching a SUBSCRIBE client while several writers insert flat out.

    .venv/bin/python bench/bench_throughput.py [--writers 4] [--seconds 20] [--rows-per-insert 1]

`--writers` autocommit connections (threads) insert into one table as fast as their
INSERTs are acknowledged for `--seconds`, while one subscriber reads
`DECLARE c CURSOR FOR SUBSCRIBE (SELECT * FROM w) WITH (SNAPSHOT = false)` with
FETCH ALL in a loop and counts rows. Printed: rows/s acknowledged to the writers,
rows/s that reached the subscriber in the same window, and how long the subscriber
took to catch up after the writers stopped. The reference is PostgreSQL 15 (fsync on,
synchronous_commit on) taking the same writers for the same time, with no subscriber.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import threading
import time

import psycopg
from common import CursorSubscriber, PostgresServer, ServerProcess, machine_note, median


def writer(dsn: str, wid: int, rows_per_insert: int, deadline: float, counts: list[int],
           latencies: list[float], errors: list[BaseException]) -> None:
    values = ", ".join(["(%s, %s, %s)"] * rows_per_insert)
    sql = f"INSERT INTO w VALUES {values}"
    seq = 0
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while time.perf_counter() < deadline:
                params = []
                for _ in range(rows_per_insert):
                    params += [wid * 10_000_000 + seq, wid, seq]
                    seq += 1
                start = time.perf_counter()
                conn.execute(sql, params)
                latencies.append(time.perf_counter() - start)
                counts[wid] += rows_per_insert
    except BaseException as exc:  # noqa: BLE001 - reported below
        errors.append(exc)


def run_writers(dsn: str, args: argparse.Namespace) -> tuple[int, list[float], float, float]:
    """Rows acknowledged, each INSERT's latency, and the start and end of the window."""
    counts = [0] * args.writers
    latencies: list[float] = []
    errors: list[BaseException] = []
    start = time.perf_counter()
    deadline = start + args.seconds
    threads = [threading.Thread(target=writer, args=(dsn, i, args.rows_per_insert, deadline, counts, latencies,
                                                     errors))
               for i in range(args.writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"a writer failed: {errors[0]!r}")
    return sum(counts), latencies, start, time.perf_counter()


def postgres_reference(args: argparse.Namespace) -> tuple[float, float]:
    """PostgreSQL's rows/s and median INSERT latency with the same writers."""
    pg = PostgresServer().start()
    try:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE w (id bigint, writer integer, seq integer)")
        written, latencies, start, stopped = run_writers(pg.dsn, args)
        return written / (stopped - start), median(latencies)
    finally:
        pg.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rows-per-insert", type=int, default=1)
    parser.add_argument("--drain-timeout", type=float, default=120.0)
    args = parser.parse_args()
    print(machine_note("bench_throughput"), flush=True)
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        with psycopg.connect(sw.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE w (id bigint, writer integer, seq integer)")
        arrivals: list[tuple[float, int]] = []
        sub = CursorSubscriber(sw.dsn, "SUBSCRIBE (SELECT * FROM w) WITH (SNAPSHOT = false)", keep=False,
                               on_rows=lambda rows, at: arrivals.append((at, len(rows))))
        sub.start()
        sub.ready.wait(120)
        if sub.error is not None:
            raise RuntimeError(f"subscriber failed: {sub.error!r}")
        written, latencies, start, stopped = run_writers(sw.dsn, args)
        caught_up = sub.wait_until(lambda: sub.rows >= written, timeout=args.drain_timeout)
        sub.stop()
        last = arrivals[-1][0] if arrivals else stopped
    finally:
        sw.cleanup()
    pg_rate, pg_latency = postgres_reference(args)
    window = stopped - start
    in_window = sum(n for at, n in arrivals if at <= stopped)
    received = sum(n for _, n in arrivals)
    # the steady part: the second half of the window, away from start-up
    half = start + window / 2
    steady = sum(n for at, n in arrivals if half < at <= stopped)
    print(f"{args.writers} writers × INSERT of {args.rows_per_insert} row(s), autocommit, "
          f"{window:.1f} s; 1 subscriber (FETCH ALL loop)")
    print(f"  INSERT statements acknowledged      {len(latencies):>10,}   "
          f"median latency {median(latencies) * 1000:.1f} ms")
    print(f"  rows written (acknowledged)/s       {written / window:>10,.0f}")
    print(f"  PostgreSQL, same writers: rows/s    {pg_rate:>10,.0f}   median latency {pg_latency * 1000:.1f} ms")
    print(f"  rows received/s within the window   {in_window / window:>10,.0f}")
    print(f"  rows received/s, 2nd half of window {steady / (window / 2):>10,.0f}")
    print(f"  received {received:,} of {written:,} rows; "
          f"{'caught up' if caught_up else 'NOT caught up'} {max(0.0, last - stopped):.2f} s after "
          f"writers stopped; overall {received / (last - start):,.0f} rows/s")
    print(f"  FETCHes with rows {len(arrivals):,}; mean rows per FETCH "
          f"{received / max(1, len(arrivals)):.1f}")
    print(machine_note("done"))


if __name__ == "__main__":
    main()
