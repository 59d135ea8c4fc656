"""Freshness of SUBSCRIBE: INSERT commit acknowledged → row at a subscribed psycopg client.

    .venv/bin/python bench/bench_freshness.py [--count N] [--rounds R] [--gap S] [--preload ROWS]

One writer (autocommit) inserts a row, notes when `execute` returns (the commit
acknowledgement), and waits for the row to reach a second connection that reads
`DECLARE c CURSOR FOR SUBSCRIBE (SELECT * FROM t WHERE v >= 0)` with `FETCH ALL c`
in a loop; then it sleeps `--gap`, so every insert is its own micro-batch.

The floor is measured in the same run: the smallest Spark job (a one-row Arrow
table → createDataFrame → filter → toArrow) in a local SparkSession configured like
spark_backend/engine.py (_SPARK_CONF). Inserts and floor jobs alternate in
`--rounds` blocks, and the floor blocks run while the server is idle (the
subscription open, nothing written), so a change in the machine's load during the
run touches both figures alike. A second floor line does what a small micro-batch
does in the server (rows as a SQL VALUES list, a temp view, spark.sql, collect).
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import psycopg
from common import CursorSubscriber, ServerProcess, machine_note, percentile

GOAL_P50_MS = 150.0
GOAL_FLOOR_FACTOR = 2.0
WARM = 20


class Floor:
    """The smallest Spark job, in a local SparkSession configured like the server's."""

    def __init__(self) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        from spark_backend.engine import _SPARK_CONF

        builder = SparkSession.builder.appName("bench-floor").master("local[*]")
        for key, value in _SPARK_CONF.items():
            builder = builder.config(key, value)
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.arrow_ms: list[float] = []
        self.values_ms: list[float] = []
        self.run(WARM, keep=False)

    def run(self, count: int, keep: bool = True) -> None:
        import pyarrow as pa

        spark = self.spark
        for i in range(count):
            table = pa.table({"id": pa.array([i], pa.int64()), "v": pa.array([i], pa.int32()),
                              "tag": [f"row {i}"], "ts": pa.array([i], pa.int64()),
                              "diff": pa.array([1], pa.int64())})
            start = time.perf_counter()
            result = spark.createDataFrame(table).filter("v >= 0").toArrow()
            arrow_ms = (time.perf_counter() - start) * 1000
            start = time.perf_counter()
            spark.sql(f"SELECT * FROM (VALUES (CAST({i} AS BIGINT), CAST({i} AS INT), 'row {i}', "
                      f"CAST({i} AS BIGINT), CAST(1 AS BIGINT))) AS v(id, v, tag, ts, diff)"
                      ).createOrReplaceTempView("floor_t")
            rows = spark.sql("SELECT id, v, tag, ts, diff FROM floor_t WHERE v >= 0").collect()
            spark.catalog.dropTempView("floor_t")
            values_ms = (time.perf_counter() - start) * 1000
            if result.num_rows != 1 or len(rows) != 1:
                raise RuntimeError("floor job returned the wrong rows")
            if keep:
                self.arrow_ms.append(arrow_ms)
                self.values_ms.append(values_ms)

    def stop(self) -> None:
        self.spark.stop()


def line(name: str, values: list[float]) -> str:
    return (f"{name:<58} p50 {percentile(values, 50):8.1f}  p90 {percentile(values, 90):8.1f}  "
            f"p99 {percentile(values, 99):8.1f}  max {max(values):8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200, help="measured inserts (after 20 warm-up)")
    parser.add_argument("--rounds", type=int, default=4, help="alternating blocks of inserts / floor jobs")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between inserts")
    parser.add_argument("--preload", type=int, default=10_000, help="rows in t before subscribing")
    args = parser.parse_args()
    print(machine_note("bench_freshness"), flush=True)
    sw = ServerProcess().start()
    floor = None
    sub = None
    ack_ms, fresh_ms, total_ms = [], [], []
    arrived: dict[int, float] = {}
    try:
        sw.wait_ready()
        floor = Floor()
        with psycopg.connect(sw.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id bigint, v integer, tag text)")
            if args.preload:
                conn.execute(f"INSERT INTO t SELECT -g, -g, 'old' FROM generate_series(1, {args.preload}) AS g")

        def on_rows(rows: list[tuple], at: float) -> None:
            for row in rows:  # mz_timestamp, mz_diff, id, v, tag
                arrived[row[2]] = at

        sub = CursorSubscriber(sw.dsn, "SUBSCRIBE (SELECT * FROM t WHERE v >= 0) WITH (SNAPSHOT = false)",
                               keep=False, on_rows=on_rows)
        sub.start()
        sub.ready.wait(120)
        if sub.error is not None:
            raise RuntimeError(f"subscriber failed: {sub.error!r}")
        per_round = -(-args.count // args.rounds)
        with psycopg.connect(sw.dsn, autocommit=True) as conn:
            i = 0
            for r in range(args.rounds):
                todo = min(per_round, args.count - len(fresh_ms)) + (WARM if r == 0 else 0)
                for _ in range(todo):
                    start = time.perf_counter()
                    conn.execute("INSERT INTO t VALUES (%s, %s, %s)", (i, i, f"row {i}"))
                    acked = time.perf_counter()
                    if not sub.wait_until(lambda i=i: i in arrived, timeout=60):
                        raise RuntimeError(f"row {i} did not arrive within 60 s")
                    if i >= WARM:
                        ack_ms.append((acked - start) * 1000)
                        fresh_ms.append((arrived[i] - acked) * 1000)
                        total_ms.append((arrived[i] - start) * 1000)
                    i += 1
                    time.sleep(args.gap)
                time.sleep(1)  # server idle from here on, until the next round
                floor.run(todo - (WARM if r == 0 else 0))
                print(machine_note(f"round {r + 1}/{args.rounds} done"), flush=True)
    finally:
        if sub is not None:
            sub.stop()
        if floor is not None:
            floor.stop()
        sw.cleanup()
    print(f"all times in ms; {len(fresh_ms)} inserts, one micro-batch each; "
          f"floor over {len(floor.arrow_ms)} jobs, interleaved in {args.rounds} rounds")
    print(line("INSERT execute → ack (commit)", ack_ms))
    print(line("freshness: commit ack → row at subscriber", fresh_ms))
    print(line("INSERT sent → row at subscriber", total_ms))
    print(line("floor: createDataFrame(arrow) → filter → toArrow", floor.arrow_ms))
    print(line("floor, server's small-batch shape: VALUES view+sql+collect", floor.values_ms))
    p50 = percentile(fresh_ms, 50)
    floor50 = percentile(floor.arrow_ms, 50)
    print(f"freshness p50 / floor p50 = {p50 / floor50:.2f}x "
          f"(goal ≤ {GOAL_FLOOR_FACTOR:.0f}x: {'met' if p50 <= GOAL_FLOOR_FACTOR * floor50 else 'not met'})")
    print(f"freshness p50 = {p50:.1f} ms (goal ≤ {GOAL_P50_MS:.0f} ms: "
          f"{'met' if p50 <= GOAL_P50_MS else 'not met'})")
    print(machine_note("done"))


if __name__ == "__main__":
    main()
