"""Helpers shared by the benchmarks: servers side by side, subscribers, and figures."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pgserver import PostgresServer
from tests.support import ServerProcess

__all__ = ["CursorSubscriber", "PostgresServer", "ServerProcess", "machine_note", "median",
           "percentile", "report", "tree_cpu_seconds"]


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by a process, its threads and every live
    descendant (a server's JVM, a broker's children), read from /proc. Compare two readings
    taken while the same processes live: a descendant that exits takes its figure along."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(ticks.get(p, 0) for p in tree) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def report(rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'sparkwire':>14}  {'postgresql 15':>14}")
    for name, ours, theirs in rows:
        print(f"{name:<{width}}  {ours:>14}  {theirs:>14}")


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine_note(label: str) -> str:
    """Date, cores and load average: other work on a 2-core box moves every figure."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    return (f"# {label}: {now}, {os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()}, load average {load}")


class CursorSubscriber(threading.Thread):
    """A psycopg client reading `DECLARE c CURSOR FOR SUBSCRIBE ...` with FETCH ALL in a loop.

    It always has a FETCH waiting on the server, so a row is timed (perf_counter) the
    moment it reaches the client. Each FETCH's rows are handed to `on_rows(rows, at)`
    and, if `keep` is set, appended to `self.batches`; `self.cond` is notified.
    """

    def __init__(self, dsn: str, subscribe_sql: str, keep: bool = True,
                 on_rows=None, fetch_timeout: str = "0.5s") -> None:
        super().__init__(daemon=True, name="subscriber")
        self.dsn = dsn
        self.subscribe_sql = subscribe_sql
        self.keep = keep
        self.on_rows = on_rows
        self.fetch_timeout = fetch_timeout
        self.cond = threading.Condition()
        self.batches: list[tuple[float, list[tuple]]] = []
        self.rows = 0
        self.fetches = 0  # FETCHes that returned at least one row
        self.columns: list[str] = []
        self.declared_in: float | None = None  # seconds DECLARE took (the snapshot)
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.dsn) as conn:
                cur = conn.cursor()
                start = time.perf_counter()
                cur.execute(f"DECLARE c CURSOR FOR {self.subscribe_sql}")
                self.declared_in = time.perf_counter() - start
                self.ready.set()
                while not self._halt.is_set():
                    cur.execute(f"FETCH ALL c WITH (timeout = '{self.fetch_timeout}')")
                    rows = cur.fetchall()
                    at = time.perf_counter()
                    if not rows:
                        continue
                    if not self.columns:
                        self.columns = [d.name for d in cur.description]
                    with self.cond:
                        self.rows += len(rows)
                        self.fetches += 1
                        if self.keep:
                            self.batches.append((at, rows))
                        if self.on_rows is not None:
                            self.on_rows(rows, at)
                        self.cond.notify_all()
                cur.execute("CLOSE c")
                conn.rollback()
        except BaseException as exc:  # noqa: BLE001 - reported by the benchmark
            self.error = exc
            self.ready.set()
            with self.cond:
                self.cond.notify_all()

    def wait_until(self, predicate, timeout: float) -> bool:
        """Wait (holding `cond`) until predicate() is true; False on timeout or error."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                if self.error is not None:
                    raise RuntimeError(f"subscriber failed: {self.error!r}") from self.error
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def stop(self, timeout: float = 10.0) -> None:
        self._halt.set()
        self.join(timeout)
