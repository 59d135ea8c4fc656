"""Per-batch time of a GROUP BY subscription after one row changes, at 1e4 and 1e6 rows.

    .venv/bin/python bench/bench_groupby.py [--sizes 10000,1000000] [--changes 30] [--rounds 3]

Each size gets its own table, loaded with INSERT ... SELECT FROM generate_series, and
its own subscriber reading, through DECLARE/FETCH ALL,
    SUBSCRIBE (SELECT k % 100 AS b, count(*) AS n, sum(v) AS s FROM g_<rows> GROUP BY k % 100)
Then single-row INSERTs, one at a time: `--changes` per size, in `--rounds` blocks
that alternate between the sizes (with a pause between blocks), so a change in the
machine's load during the run touches every size alike. The batch time is measured
from the client side only: INSERT commit acknowledged → the group's retraction and
new value received by the subscriber. The ratio of the medians (largest size /
smallest) shows whether the cost follows the change (≈1) or the data.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import time

import psycopg
from common import CursorSubscriber, ServerProcess, machine_note, median, percentile

GOAL_RATIO = 2.0
WARM = 3
QUERY = "SELECT k % 100 AS b, count(*) AS n, sum(v) AS s FROM {table} GROUP BY k % 100"


class Size:
    def __init__(self, sw: ServerProcess, rows: int) -> None:
        self.rows = rows
        self.table = f"g_{rows}"
        self.rng = random.Random(rows)
        self.batch_ms: list[float] = []
        self.per_round: list[float] = []
        with psycopg.connect(sw.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {self.table} (k bigint, v bigint)")
            start = time.perf_counter()
            conn.execute(f"INSERT INTO {self.table} SELECT x, x FROM generate_series(1, {rows}) AS x")
            self.load_s = time.perf_counter() - start
            plan = conn.execute(f"EXPLAIN SUBSCRIBE ({QUERY.format(table=self.table)})").fetchall()
        self.strategy = next((p[0] for p in plan if p[0].startswith("strategy:")), "?")
        self.strategy = self.strategy.removeprefix("strategy: ")
        self.sub = CursorSubscriber(sw.dsn, f"SUBSCRIBE ({QUERY.format(table=self.table)})")
        start = time.perf_counter()
        self.sub.start()
        if not self.sub.wait_until(lambda: self.sub.rows >= 100, timeout=600):
            raise RuntimeError(f"snapshot of {self.table} did not arrive")
        self.snapshot_s = time.perf_counter() - start

    def change(self, conn: psycopg.Connection, keep: bool) -> None:
        sub = self.sub
        with sub.cond:
            seen = len(sub.batches)
        key = self.rng.randrange(1, self.rows + 1)
        bucket = key % 100
        conn.execute(f"INSERT INTO {self.table} VALUES (%s, %s)", (key, 1))
        acked = time.perf_counter()

        def arrived() -> bool:
            diffs = {r[1] for _, batch in sub.batches[seen:] for r in batch if r[2] == bucket}
            return diffs >= {-1, 1}

        if not sub.wait_until(arrived, timeout=600):
            raise RuntimeError(f"a change to {self.table} did not arrive")
        with sub.cond:
            at = next(t for t, batch in sub.batches[seen:]
                      if any(r[2] == bucket and r[1] == 1 for r in batch))
        if keep:
            self.batch_ms.append((at - acked) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--changes", type=int, default=30, help="measured changes per size")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between changes")
    parser.add_argument("--pause", type=float, default=3.0, help="seconds between blocks")
    args = parser.parse_args()
    print(machine_note("bench_groupby"), flush=True)
    sizes: list[Size] = []
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        for rows in (int(s) for s in args.sizes.split(",")):
            sizes.append(Size(sw, rows))
            print(machine_note(f"{rows} rows loaded and subscribed"), flush=True)
        time.sleep(args.pause)
        per_round = -(-args.changes // args.rounds)
        with psycopg.connect(sw.dsn, autocommit=True) as conn:
            for r in range(args.rounds):
                for size in sizes:
                    if r == 0:
                        for _ in range(WARM):
                            size.change(conn, keep=False)
                            time.sleep(args.gap)
                    before = len(size.batch_ms)
                    for _ in range(min(per_round, args.changes - before)):
                        size.change(conn, keep=True)
                        time.sleep(args.gap)
                    size.per_round.append(median(size.batch_ms[before:]))
                    time.sleep(args.pause)
                print(machine_note(f"round {r + 1}/{args.rounds} done"), flush=True)
    finally:
        for size in sizes:
            size.sub.stop()
        sw.cleanup()
    print(f"query: {QUERY.format(table='g_<rows>')}; 1 row inserted per change; times in ms")
    print(f"{'rows':>10}  {'strategy':<10} {'load s':>7} {'snapshot s':>10} {'changes':>7} "
          f"{'median':>8} {'p90':>8} {'min':>8} {'max':>8}  per-round medians")
    for s in sizes:
        b = s.batch_ms
        rounds = " ".join(f"{m:.0f}" for m in s.per_round)
        print(f"{s.rows:>10}  {s.strategy:<10} {s.load_s:>7.2f} {s.snapshot_s:>10.2f} {len(b):>7} "
              f"{median(b):>8.1f} {percentile(b, 90):>8.1f} {min(b):>8.1f} {max(b):>8.1f}  {rounds}")
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        ratio = median(large.batch_ms) / median(small.batch_ms)
        print(f"per-batch median ratio {large.rows:.0e}/{small.rows:.0e} rows = {ratio:.2f} "
              f"(goal ≤ {GOAL_RATIO:.0f}: {'met' if ratio <= GOAL_RATIO else 'not met'})")
    print(machine_note("done"))


if __name__ == "__main__":
    main()
