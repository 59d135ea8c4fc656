"""A SUBSCRIBE snapshot of 1e6 and 1e7 rows delivered to psycopg, next to a one-shot SELECT
of the same rows on the same server and PostgreSQL's COPY (SELECT ...) TO STDOUT (issue 18).

    .venv/bin/python bench/bench_subscribe_snapshot.py [--rows 1000000 10000000]

For each size, in one run: rows/s of

- sparkwire SELECT, read with psycopg (`fetchmany`, the rows parsed into tuples);
- sparkwire SUBSCRIBE ... UP TO through DECLARE + `FETCH 100000` (parsed the same way);
- sparkwire COPY (SELECT ...) TO STDOUT and COPY (SUBSCRIBE ... UP TO ...) TO STDOUT, read
  as raw CopyData blocks (no parsing: what the server delivers);
- PostgreSQL 15: the same SELECT, and COPY (SELECT ...) TO STDOUT read raw;

and the peak resident memory of the sparkwire server process (and, apart, of its Spark JVM)
above what it held before each measurement. The sparkwire measurements run five times
(`--rounds`), after the load's compactions have finished: the first round includes the JVM
compiling each new query's code (1-3 CPU-seconds of its C2 compiler per query shape), the
others are the steady state, and one round's ratio moves by a third between rounds. Goals:
the SUBSCRIBE within 1.5x of sparkwire's own SELECT (the median of the rounds' ratios; the
worst round is printed beside it), and server RSS growth under 300 MB for the 1e7-row
snapshot. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import Self

import psycopg
from common import PostgresServer, ServerProcess, machine_note, median

TABLE = "CREATE TABLE big (id bigint, name text, price double precision)"
LOAD = "INSERT INTO big SELECT g, 'name-' || g, g * 1.5 FROM generate_series({lo}, {hi}) AS g"
QUERY = "SELECT id, name, price FROM big"
LOAD_STEP = 2_000_000  # rows per INSERT ... SELECT while loading


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except OSError:
                continue
    return out


class RssPeak:
    """Samples the server's RSS (and its JVM's) every 50 ms while a measurement runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.jvm = children(pid)
        self.base = rss_kb(pid)
        self.base_jvm = sum(rss_kb(c) for c in self.jvm)
        self.peak = self.base
        self.peak_jvm = self.base_jvm
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_kb(self.pid))
            self.peak_jvm = max(self.peak_jvm, sum(rss_kb(c) for c in self.jvm))

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.base) / 1024

    @property
    def jvm_growth_mb(self) -> float:
        return (self.peak_jvm - self.base_jvm) / 1024


def select_rows(dsn: str) -> int:
    n = 0
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(QUERY)
        while rows := cur.fetchmany(100_000):
            n += len(rows)
        conn.rollback()
    return n


def subscribe_fetch(dsn: str, up_to: int) -> int:
    n = 0
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE ({QUERY}) UP TO {up_to}")
        while True:
            cur.execute("FETCH 100000 c")
            rows = cur.fetchall()
            if not rows:
                break
            n += len(rows)
        conn.rollback()
    return n


def copy_bytes(dsn: str, sql: str) -> int:
    """Bytes of COPY output, read raw (psycopg hands over CopyData without parsing rows)."""
    size = 0
    with psycopg.connect(dsn, autocommit=True) as conn, conn.cursor() as cur, cur.copy(sql) as copy:
        while data := copy.read():
            size += len(data)
    return size


def settle(dsn: str) -> float:
    """Wait until the server runs no background work (the load's compactions); seconds waited."""
    start = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        quiet = 0
        while quiet < 2:  # idle twice, a second apart: a compaction may follow the last one
            time.sleep(1)
            running = conn.execute("SELECT count(*) FROM mz_internal.mz_background_work "
                                   "WHERE status = 'running'").fetchone()[0]
            quiet = quiet + 1 if running == 0 else 0
    return time.perf_counter() - start


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def load(dsn: str, rows: int) -> float:
    start = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS big")
        conn.execute(TABLE)
        for lo in range(1, rows + 1, LOAD_STEP):
            conn.execute(LOAD.format(lo=lo, hi=min(rows, lo + LOAD_STEP - 1)))
    return time.perf_counter() - start


def measure(sw: ServerProcess, pg: PostgresServer, rows: int, rounds: int) -> list[str]:
    lines = [f"## {rows:,} rows (id bigint, name text, price double precision)"]
    lines.append(f"load: sparkwire {load(sw.dsn, rows):.1f} s, postgresql {load(pg.dsn, rows):.1f} s;"
                 f" compactions after it {settle(sw.dsn):.1f} s")
    up_to = int(time.time() * 1000) + 1
    figures: dict[str, float] = {}

    def run(name: str, server_pid: int | None, fn, *args) -> None:
        if server_pid is None:
            seconds, out = timed(fn, *args)
            extra = ""
        else:
            with RssPeak(server_pid) as peak:
                seconds, out = timed(fn, *args)
            extra = (f"   server RSS +{peak.growth_mb:,.0f} MB (peak {peak.peak / 1024:,.0f} MB), "
                     f"Spark JVM +{peak.jvm_growth_mb:,.0f} MB")
        figures[name] = seconds
        what = f"{out:,} rows" if "COPY" not in name else f"{out / 1e6:,.0f} MB of text"
        lines.append(f"{name:<32} {seconds:8.2f} s  {rows / seconds:>12,.0f} rows/s  ({what}){extra}")
        print(lines[-1], flush=True)

    pid = sw.proc.pid
    fetch_ratios: list[float] = []
    copy_ratios: list[float] = []
    run("postgresql SELECT", None, select_rows, pg.dsn)
    run("postgresql COPY (SELECT)", None, copy_bytes, pg.dsn, f"COPY ({QUERY}) TO STDOUT")
    for n in range(1, rounds + 1):
        lines.append(f"round {n}:")
        run("sparkwire SELECT", pid, select_rows, sw.dsn)
        run("sparkwire SUBSCRIBE (FETCH)", pid, subscribe_fetch, sw.dsn, up_to)
        run("sparkwire COPY (SELECT)", pid, copy_bytes, sw.dsn, f"COPY ({QUERY}) TO STDOUT")
        run("sparkwire COPY (SUBSCRIBE)", pid, copy_bytes, sw.dsn, f"COPY (SUBSCRIBE ({QUERY}) UP TO {up_to}) TO STDOUT")
        lines.append(f"round {n}: SUBSCRIBE (FETCH) / SELECT: "
                     f"{figures['sparkwire SUBSCRIBE (FETCH)'] / figures['sparkwire SELECT']:.2f}x;"
                     f" COPY (SUBSCRIBE) / COPY (SELECT): "
                     f"{figures['sparkwire COPY (SUBSCRIBE)'] / figures['sparkwire COPY (SELECT)']:.2f}x;"
                     f" COPY (SUBSCRIBE) / postgresql COPY: "
                     f"{figures['sparkwire COPY (SUBSCRIBE)'] / figures['postgresql COPY (SELECT)']:.2f}x  (goal <= 1.5x)")
        print(lines[-1], flush=True)
        fetch_ratios.append(figures['sparkwire SUBSCRIBE (FETCH)'] / figures['sparkwire SELECT'])
        copy_ratios.append(figures['sparkwire COPY (SUBSCRIBE)'] / figures['sparkwire COPY (SELECT)'])
    # One round's ratio moves by a third with the JVM's compiler and collector; the median of
    # the rounds is the figure the goal is read from, the worst round beside it.
    lines.append(f"median of {rounds} rounds: SUBSCRIBE (FETCH) / SELECT {median(fetch_ratios):.2f}x "
                 f"(worst {max(fetch_ratios):.2f}x); COPY (SUBSCRIBE) / COPY (SELECT) "
                 f"{median(copy_ratios):.2f}x (worst {max(copy_ratios):.2f}x)  (goal <= 1.5x)")
    print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--rounds", type=int, default=5, help="times each sparkwire measurement runs")
    args = parser.parse_args()
    print(machine_note("bench_subscribe_snapshot"), flush=True)
    pg = PostgresServer().start()
    sw = ServerProcess().start()
    try:
        sw.wait_ready()
        out = []
        for rows in args.rows:
            out += measure(sw, pg, rows, args.rounds)
            print(machine_note("after " + f"{rows:,}"), flush=True)
        print("\n".join(out))
    finally:
        sw.cleanup()
        pg.stop()


if __name__ == "__main__":
    main()
