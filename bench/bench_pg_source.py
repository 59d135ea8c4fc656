"""PostgreSQL source: initial snapshot and streaming of row changes, next to PostgreSQL's own
logical replication (CREATE SUBSCRIPTION into a second PostgreSQL 15) on the same data in the
same run, and the lag from an upstream commit to the row reaching a SUBSCRIBE client.

    .venv/bin/python bench/bench_pg_source.py [--rows 1000000] [--changes 100000]
        [--txn-rows 1000,10] [--lag 100]

One upstream table `items (id bigint PRIMARY KEY, name text, price numeric(12,2), at timestamptz)`,
REPLICA IDENTITY FULL, `--rows` rows, published. The replicas take turns, so neither competes
with the other for the two cores:

1. native snapshot: CREATE SUBSCRIPTION on the second PostgreSQL (a table with the same
   definition, primary key included, so updates find their row by index), timed until its
   table is synchronized (pg_subscription_rel) — then the row count is checked;
2. native streaming, for each `--txn-rows` size: `--changes` rows updated upstream
   (`UPDATE items SET price = price + 1 WHERE id BETWEEN ..`, `--txn-rows` rows per
   transaction, one writer), in two ways:
   * steady: the replica follows while the writer writes; time from the first write to the
     replica having the last transaction;
   * backlog: the replica is paused (ALTER SUBSCRIPTION DISABLE) while the writer writes, then
     resumed; time from resuming to having the last transaction — the apply rate alone;
3. the native subscription is disabled, then the same for sparkwire: the snapshot is
   `CREATE TABLE .. FROM SOURCE` (it returns once the snapshot is durable); sparkwire is
   "paused" for the backlog with SIGSTOP on its process, resumed with SIGCONT; it has the
   changes once its metric sparkwire_source_rows_ingested_total (counted after each write is
   durable: 2 updates, a retraction and an insertion, per row changed) says so — read over
   HTTP, as a query would wait for Spark, which background compaction may keep busy;
4. both replicas must then hold exactly the upstream's sum(price);
5. lag, once sparkwire's background compaction of the streamed changes is over: `--lag`
   single-row INSERTs upstream, 50 ms apart; the time from the INSERT's commit
   acknowledgement to the row reaching a client of `SUBSCRIBE (SELECT id FROM items WHERE
   id < 0)` (FETCH ALL loop), and to the row being visible on the native replica (polled
   every millisecond by primary key).

Row changes are upstream rows changed; sparkwire stores each as a retraction and an insertion.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import time
import urllib.request

import psycopg
from common import CursorSubscriber, PostgresServer, ServerProcess, machine_note, percentile, report

TABLE = "CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), at timestamptz)"


def wait_until(check, timeout: float = 1800.0, poll: float = 0.02) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if check():
            return time.perf_counter() - start
        time.sleep(poll)
    raise TimeoutError("condition not met in time")


def scalar(conn: psycopg.Connection, query: str, params=None):
    return conn.execute(query, params).fetchone()[0]


def write_changes(up_dsn: str, changes: int, txn_rows: int) -> float:
    """Update rows 1..changes, txn_rows per transaction; the seconds it took."""
    start = time.perf_counter()
    with psycopg.connect(up_dsn) as c:
        for lo in range(1, changes + 1, txn_rows):
            c.execute("UPDATE items SET price = price + 1 WHERE id BETWEEN %s AND %s",
                      (lo, min(changes, lo + txn_rows - 1)))
            c.commit()
    return time.perf_counter() - start


class Native:
    """The second PostgreSQL, subscribed to the upstream."""

    def __init__(self, up: PostgresServer, down: PostgresServer) -> None:
        self.up, self.down = up, down
        self.conn = psycopg.connect(down.dsn, autocommit=True)

    def snapshot(self, rows: int) -> float:
        start = time.perf_counter()
        self.conn.execute(f"CREATE SUBSCRIPTION s CONNECTION 'host=127.0.0.1 port={self.up.port} "
                          "user=postgres dbname=postgres' PUBLICATION bench")
        wait_until(lambda: scalar(self.conn, "SELECT count(*) FROM pg_subscription_rel "
                                             "WHERE srsubstate NOT IN ('r', 's')") == 0)
        took = time.perf_counter() - start
        got = scalar(self.conn, "SELECT count(*) FROM items")
        assert got == rows, f"native replica has {got} rows, not {rows}"
        return took

    def has(self, changes: int, price) -> bool:
        # Transactions are applied whole and in order: the last row of the last one has
        # its new price only once everything before it is there too.
        return scalar(self.conn, "SELECT price FROM items WHERE id = %s", (changes,)) == price

    def enable(self, on: bool) -> None:
        self.conn.execute(f"ALTER SUBSCRIPTION s {'ENABLE' if on else 'DISABLE'}")
        if not on:  # the walsender is gone once the slot is inactive
            with psycopg.connect(self.up.dsn, autocommit=True) as c:
                wait_until(lambda: not scalar(c, "SELECT active FROM pg_replication_slots "
                                                 "WHERE slot_name = 's'"), timeout=60, poll=0.05)


class Ours:
    def __init__(self, up: PostgresServer, sw: ServerProcess) -> None:
        self.up, self.sw = up, sw
        self.conn = psycopg.connect(sw.dsn, autocommit=True)

    def snapshot(self, rows: int) -> float:
        self.conn.execute(f"CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {self.up.port}, "
                          "USER 'postgres', DATABASE 'postgres')")
        self.conn.execute("CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'bench')")
        start = time.perf_counter()
        self.conn.execute("CREATE TABLE items FROM SOURCE shop (REFERENCE public.items)")
        took = time.perf_counter() - start
        got = scalar(self.conn, "SELECT count(*) FROM items")
        assert got == rows, f"sparkwire has {got} rows, not {rows}"
        return took

    def ingested(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.sw.metrics_port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        m = re.search(r'^sparkwire_source_rows_ingested_total\{source="shop",table="items"\} (\S+)$', text, re.MULTILINE)
        return int(float(m.group(1))) if m else 0

    def quiet(self) -> float:
        """Wait until no background work (compaction) runs; how long that took."""
        def idle() -> bool:
            return not scalar(self.conn, "SELECT count(*) FROM mz_internal.mz_background_work "
                                         "WHERE status = 'running'")
        return wait_until(lambda: idle() and (time.sleep(2) or idle()), timeout=900, poll=1.0)

    def pause(self, on: bool) -> None:
        os.kill(self.sw.proc.pid, signal.SIGSTOP if on else signal.SIGCONT)


def stream_native(native: Native, up_dsn: str, changes: int, txn_rows: int, backlog: bool) -> float:
    with psycopg.connect(up_dsn, autocommit=True) as c:
        price = scalar(c, "SELECT price + 1 FROM items WHERE id = %s", (changes,))
    if backlog:
        native.enable(False)
    written = write_changes(up_dsn, changes, txn_rows)
    print(f"  upstream writer: {written:.2f} s", flush=True)
    if backlog:
        start = time.perf_counter()
        native.enable(True)
        return time.perf_counter() - start + wait_until(lambda: native.has(changes, price), poll=0.005)
    return written + wait_until(lambda: native.has(changes, price), poll=0.005)


def stream_ours(ours: Ours, up_dsn: str, changes: int, txn_rows: int, backlog: bool) -> float:
    # The endpoint prints counters with 6 significant digits ("%g"): a count within half a
    # unit of the last digit of the target reads as the target. Writes come in whole
    # transactions of 2 * txn_rows updates, far more than that slack at these sizes.
    target = ours.ingested() + 2 * changes
    target -= 5 * 10 ** (len(str(target)) - 7) if target >= 1_000_000 else 0
    if backlog:
        ours.pause(True)
    try:
        written = write_changes(up_dsn, changes, txn_rows)
    finally:
        if backlog:
            start = time.perf_counter()
            ours.pause(False)
    print(f"  upstream writer: {written:.2f} s", flush=True)
    if backlog:
        return time.perf_counter() - start + wait_until(lambda: ours.ingested() >= target, poll=0.01)
    return written + wait_until(lambda: ours.ingested() >= target, poll=0.01)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--txn-rows", default="1000,10",
                        help="rows changed per upstream transaction; a comma-separated list runs each")
    parser.add_argument("--lag", type=int, default=100)
    args = parser.parse_args()
    txn_sizes = [int(x) for x in args.txn_rows.split(",")]
    # The launcher starts an enabled subscription's worker at most once per
    # wal_retrieve_retry_interval (5 s by default): not what a backlog's catch-up should time.
    up, down = PostgresServer().start(), PostgresServer({"wal_retrieve_retry_interval": "50ms"}).start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        print(machine_note("bench_pg_source"), flush=True)
        with psycopg.connect(up.dsn, autocommit=True) as c:
            c.execute(TABLE)
            c.execute("ALTER TABLE items REPLICA IDENTITY FULL")
            c.execute("INSERT INTO items SELECT g, 'item ' || g, g % 1000 + 0.5, "
                      "'2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second' "
                      f"FROM generate_series(1, {args.rows}) g")
            c.execute("VACUUM ANALYZE items")
            c.execute("CREATE PUBLICATION bench FOR TABLE items")
        with psycopg.connect(down.dsn, autocommit=True) as c:
            c.execute(TABLE)
        native, ours = Native(up, down), Ours(up, sw)
        figures: list[tuple[str, str, str]] = []

        def both(name: str, count: int, mine: float, theirs: float) -> None:
            figures.append((f"{name}, s", f"{mine:.2f}", f"{theirs:.2f}"))
            figures.append((f"{name}, rows/s", f"{count / mine:,.0f}", f"{count / theirs:,.0f}"))
            figures.append(("  ratio native/sparkwire rows/s", f"{mine / theirs:.2f}x", ""))

        native_snapshot = native.snapshot(args.rows)
        print(f"native snapshot {native_snapshot:.2f} s", flush=True)
        native_stream = {}
        for size in txn_sizes:
            for backlog in (False, True):
                native_stream[size, backlog] = stream_native(native, up.dsn, args.changes, size, backlog)
                print(f"native {'backlog' if backlog else 'steady'} {size} rows/txn: "
                      f"{native_stream[size, backlog]:.2f} s", flush=True)
        native.enable(False)
        ours_snapshot = ours.snapshot(args.rows)
        print(f"sparkwire snapshot {ours_snapshot:.2f} s", flush=True)
        both(f"snapshot {args.rows:,} rows", args.rows, ours_snapshot, native_snapshot)
        for size in txn_sizes:
            for backlog in (False, True):
                took = stream_ours(ours, up.dsn, args.changes, size, backlog)
                print(f"sparkwire {'backlog' if backlog else 'steady'} {size} rows/txn: {took:.2f} s", flush=True)
                both(f"stream {args.changes:,} changes, {size} rows/txn, {'backlog' if backlog else 'steady'}",
                     args.changes, took, native_stream[size, backlog])
        native.enable(True)
        with psycopg.connect(up.dsn, autocommit=True) as c:
            want = scalar(c, "SELECT sum(price) FROM items")
        wait_until(lambda: scalar(native.conn, "SELECT sum(price) FROM items") == want, timeout=300, poll=0.5)
        got = scalar(ours.conn, "SELECT sum(price) FROM items")
        assert got == want, f"sparkwire sum(price) {got} != upstream {want}"
        settled = ours.quiet()
        print(f"sparkwire background work (compaction) finished {settled:.1f} s after the last stream", flush=True)
        ours_lag, native_lag = lag(up.dsn, sw.dsn, native, args.lag)
        for p in (50, 99):
            figures.append((f"commit → row p{p} ms (n={len(ours_lag)}; ours: at a SUBSCRIBE client)",
                            f"{percentile(ours_lag, p):.1f}", f"{percentile(native_lag, p):.1f}"))
        report(figures)
        runs, seconds = ours.conn.execute("SELECT count(*), coalesce(sum(seconds), 0) FROM "
                                          "mz_internal.mz_background_work WHERE kind = 'compaction'").fetchone()
        print(f"sparkwire compactions during the run: {runs}, {seconds:.0f} s in all", flush=True)
        print(machine_note("done"), flush=True)
    finally:
        if sw.proc is not None and sw.proc.poll() is None:
            os.kill(sw.proc.pid, signal.SIGCONT)
        sw.cleanup()
        down.stop()
        up.stop()


def lag(up_dsn: str, sw_dsn: str, native: Native, n: int) -> tuple[list[float], list[float]]:
    """Upstream commit acknowledged → the row at a subscribed client / on the replica, in ms."""
    seen: dict[int, float] = {}

    def on_rows(rows, at: float) -> None:
        for row in rows:
            seen.setdefault(-row[-1], at)

    sub = CursorSubscriber(sw_dsn, "SUBSCRIBE (SELECT id FROM items WHERE id < 0) WITH (SNAPSHOT = false)",
                           keep=False, on_rows=on_rows)
    sub.start()
    sub.ready.wait(120)
    ours, theirs = [], []
    try:
        with psycopg.connect(up_dsn, autocommit=True) as c:
            for i in range(1, n + 1):
                c.execute("INSERT INTO items VALUES (%s, 'lag', 1, now())", (-i,))
                sent = time.perf_counter()
                replica_at = None
                while i not in seen or replica_at is None:
                    if replica_at is None and native.conn.execute(
                            "SELECT 1 FROM items WHERE id = %s", (-i,)).fetchone():
                        replica_at = time.perf_counter()
                    if time.perf_counter() - sent > 60:
                        raise TimeoutError(f"row {-i} did not arrive")
                    time.sleep(0.001)
                ours.append((seen[i] - sent) * 1000)
                theirs.append((replica_at - sent) * 1000)
                time.sleep(0.05)
    finally:
        sub.stop()
    return ours, theirs


if __name__ == "__main__":
    main()
