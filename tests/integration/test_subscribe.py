"""SUBSCRIBE end to end (issue 3): a real server, real clients, real output.

One server for the module. Every subscription's output is checked as it is read
(`StreamChecker`): timestamps ascending, each timestamp consolidated (a row at
most once, never diff 0), PROGRESS rows with NULLs elsewhere, no data below a
frontier already announced. Results are checked against the one-shot
`SELECT ... AS OF ts` of the same query ("snapshot = history", DESIGN.md).

Commit timestamps come from `Clock`: every write transaction also inserts a
sequence number into a `ticks` table that a subscription watches, which tells
the test the timestamp its transaction committed at.
"""

from __future__ import annotations

import asyncio
import collections
import decimal
import itertools
import math
import queue
import re
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import psycopg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from psycopg import errors as pgerr

from tests.support import Subscriber, connect, fresh, metric_sum, now_ms, settled
from tests.support import wait_until as support_wait_until

pytestmark = pytest.mark.slow

NUMERIC, BOOL, INT8, INT4, TEXT = 1700, 16, 20, 23, 25









def wait_until(predicate, timeout: float, interval: float = 0.05, message: str = "condition"):
    return support_wait_until(predicate, timeout, interval, message)


# --------------------------------------------------------------------------- output checks


class StreamChecker:
    """Checks a SUBSCRIBE's rows as they arrive and accumulates its result."""

    def __init__(self, progress: bool) -> None:
        self.progress = progress
        self.last_ts: int | None = None
        self.frontier: int | None = None  # the latest progress row's timestamp
        self.at_ts: set[tuple] = set()
        self.data: list[tuple[int, int, tuple]] = []  # (ts, diff, row)
        self.progress_ts: list[int] = []

    def add(self, raw) -> tuple:
        row = tuple(raw)
        ts = row[0]
        assert isinstance(ts, (int, decimal.Decimal)), f"mz_timestamp {ts!r} is not numeric"
        assert ts == int(ts), f"mz_timestamp {ts!r} is not a whole number"
        ts = int(ts)
        assert self.last_ts is None or ts >= self.last_ts, \
            f"timestamps went backwards: {ts} after {self.last_ts} (row {row})"
        if ts != self.last_ts:
            self.at_ts = set()
        self.last_ts = ts
        if self.progress and row[1]:
            assert all(v is None for v in row[2:]), f"progress row with non-NULL columns: {row}"
            assert self.frontier is None or ts > self.frontier, \
                f"progress did not advance: {ts} after {self.frontier}"
            self.frontier = ts
            self.progress_ts.append(ts)
            return row
        if self.progress:
            assert row[1] is False, f"mz_progressed is {row[1]!r}, not false, in a data row {row}"
            diff, data = row[2], row[3:]
        else:
            diff, data = row[1], row[2:]
        assert isinstance(diff, int) and diff != 0, f"bad mz_diff {diff!r} in {row}"
        assert data not in self.at_ts, f"row {data} twice at timestamp {ts}: not consolidated"
        assert self.frontier is None or ts >= self.frontier, \
            f"data at {ts} after progress announced {self.frontier} complete: {row}"
        self.at_ts.add(data)
        self.data.append((ts, diff, data))
        return row

    def state_at(self, ts: int) -> collections.Counter:
        # Rows are counted by a key in which NaN equals NaN, as SQL groups them: Python's
        # float NaN equals nothing (and hashes by identity), so a retraction of a row with a
        # NaN would otherwise never meet its insertion.
        counts: collections.Counter = collections.Counter()
        rows: dict[tuple, tuple] = {}
        for t, diff, row in self.data:
            if t <= ts:
                key = tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)
                rows.setdefault(key, row)
                counts[key] += diff
        negative = {rows[k]: n for k, n in counts.items() if n < 0}
        assert not negative, f"negative multiplicities at {ts}: {negative}"
        return collections.Counter({rows[k]: n for k, n in counts.items() if n > 0})

    def data_timestamps(self) -> list[int]:
        return sorted({t for t, _, _ in self.data})


class Feed(Subscriber):
    """A subscription whose rows `StreamChecker` checks and accumulates as they arrive."""

    def __init__(self, server, sql: str, progress: bool = True, cursor: str = "c") -> None:
        super().__init__(server, sql, cursor)
        self.check = StreamChecker(progress)
        self.description = None

    def fetch(self, timeout: str | None = "0.2s", count: str = "ALL") -> list[tuple]:
        rows = self.fetch_rows(timeout, count)
        self.description = [(d.name, d.type_code) for d in self.cur.description]
        return [self.check.add(r) for r in rows]

    def until(self, predicate, timeout: float = 90.0, message: str = "rows") -> None:
        self.fetch_until(lambda: predicate(self), timeout,
                         lambda: f"timed out waiting for {message} on {self.sql!r}; "
                                 f"got {self.check.data[-10:]}, frontier {self.check.frontier}")

    def until_frontier(self, ts: int, timeout: float = 90.0) -> None:
        self.until(lambda f: f.check.frontier is not None and f.check.frontier > ts, timeout,
                   f"progress past {ts}")


class Clock:
    """Commits write transactions and learns their timestamps from a `ticks` subscription."""

    def __init__(self, server) -> None:
        self.server = server
        setup = connect(server)
        setup.execute("CREATE TABLE ticks (n bigint)")
        setup.close()
        self.feed = Feed(server, "SUBSCRIBE ticks WITH (SNAPSHOT = false)", progress=False, cursor="ticks")
        self.n = 0
        self.seen: dict[int, int] = {}

    def commit(self, conn: psycopg.Connection, statements: list[str]) -> int:
        """Run `statements` as one transaction; return its timestamp."""
        self.n += 1
        n = self.n
        conn.execute("BEGIN")
        try:
            for sql in statements:
                conn.execute(sql)
            conn.execute(f"INSERT INTO ticks VALUES ({n})")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return self.ts_of(n)

    def ts_of(self, n: int, timeout: float = 90.0) -> int:
        deadline = time.monotonic() + timeout
        while n not in self.seen:
            assert time.monotonic() < deadline, f"tick {n} never arrived"
            for ts, diff, k in self.feed.fetch("1s"):
                assert diff == 1
                self.seen[k] = int(ts)
        return self.seen[n]


@pytest.fixture(scope="module")
def clock(server):
    c = Clock(server)
    yield c
    c.feed.close()


def one_shot(conn: psycopg.Connection, query: str, ts: int) -> collections.Counter:
    return collections.Counter(tuple(r) for r in conn.execute(f"{query} AS OF {ts}").fetchall())


class Oracle:
    """One-shot `SELECT ... AS OF ts`, several at a time (each on its own connection)."""

    def __init__(self, server, workers: int = 6) -> None:
        self.conns: queue.Queue = queue.Queue()
        for _ in range(workers):
            self.conns.put(connect(server))
        self.pool = ThreadPoolExecutor(workers)

    def _run(self, query: str, ts: int):
        conn = self.conns.get()
        try:
            return one_shot(conn, query, ts)
        except psycopg.Error as err:
            return err
        finally:
            self.conns.put(conn)

    def submit(self, jobs: dict) -> Callable[[], dict]:
        """name → (query, ts) in; returns a function that waits for name → Counter (or error).

        Equal jobs run once. A timestamp is readable as soon as its transaction committed,
        so the one-shot queries run while the subscriptions are still computing.
        """
        distinct = {job: self.pool.submit(self._run, *job) for job in set(jobs.values())}
        return lambda: {name: distinct[job].result() for name, job in jobs.items()}

    def many(self, jobs: dict) -> dict:
        return self.submit(jobs)()

    def close(self) -> None:
        self.pool.shutdown()
        while not self.conns.empty():
            self.conns.get().close()


def open_feeds(server, sqls: dict[str, str], progress: bool = True) -> dict:
    """Open several subscriptions at once; name → Feed, or the error that refused it."""
    def open_one(sql):
        try:
            return Feed(server, sql, progress=progress)
        except psycopg.Error as err:
            return err

    with ThreadPoolExecutor(8) as pool:
        futures = {name: pool.submit(open_one, sql) for name, sql in sqls.items()}
        return {name: f.result() for name, f in futures.items()}


class OracleRun:
    """Subscriptions (WITH PROGRESS) to `queries`, each compared with the one-shot
    `SELECT ... AS OF` of its query at the timestamps a test names; `history` (what the test
    committed) goes into a failure's message."""

    def __init__(self, server, queries: dict[str, str],
                 normalize: Callable[[collections.Counter], collections.Counter] = lambda c: c) -> None:
        self.queries = queries
        self.normalize = normalize
        self.history: list[str] = []
        self.oracle = Oracle(server)
        self.feeds = open_feeds(server, {name: f"SUBSCRIBE ({q}) WITH (PROGRESS)" for name, q in queries.items()})

    def refused(self) -> dict:
        """name → the error of each subscription that did not open."""
        return {name: f for name, f in self.feeds.items() if not isinstance(f, Feed)}

    def as_of(self, message: str) -> dict[str, int]:
        """name → the AS OF of each subscription: the timestamp of its first progress row."""
        for feed in self.feeds.values():
            feed.until(lambda f: f.check.frontier is not None, message=message)
        return {name: feed.check.progress_ts[0] for name, feed in self.feeds.items()}

    def compare(self, stamp: dict[str, int]) -> None:
        """Each subscription's accumulated output at stamp[name] equals its query AS OF then."""
        results = self.oracle.submit({name: (self.queries[name], stamp[name]) for name in self.feeds})
        for name, feed in self.feeds.items():
            feed.until_frontier(stamp[name])
        for name, want in results().items():
            assert not isinstance(want, BaseException), f"{name}: SELECT AS OF {stamp[name]}: {want}"
            got = self.normalize(self.feeds[name].check.state_at(stamp[name]))
            assert got == self.normalize(want), (
                f"{name} at {stamp[name]}: SUBSCRIBE accumulated {dict(got)}, SELECT AS OF gives "
                f"{dict(self.normalize(want))}\nhistory:\n" + "\n".join(self.history))

    def close(self) -> None:
        for feed in self.feeds.values():
            if isinstance(feed, Feed):
                feed.close()
        self.oracle.close()


# --------------------------------------------------------------------------- server observation


def active_subscriptions(server) -> int:
    return int(metric_sum(server.metrics(), "sparkwire_active_subscriptions"))


def batches_run(server) -> int:
    return int(metric_sum(server.metrics(), "sparkwire_subscribe_batch_seconds_count"))


def settled_active(server) -> int:
    """Active subscriptions once those of earlier tests (ending asynchronously) are gone."""
    return settled(lambda: active_subscriptions(server), polls=40)


def wait_active(server, expected: int, timeout: float = 2.0) -> float:
    """Wait until the server runs `expected` subscriptions; how long it took."""
    start = time.monotonic()
    wait_until(lambda: active_subscriptions(server) == expected, timeout,
               message=f"{expected} active subscriptions (now {active_subscriptions(server)})")
    return time.monotonic() - start


def make_table(conn: psycopg.Connection, prefix: str, columns: str, rows: str | None = None) -> str:
    name = fresh(prefix)
    conn.execute(f"CREATE TABLE {name} ({columns})")
    if rows:
        conn.execute(f"INSERT INTO {name} VALUES {rows}")
    return name


# =========================================================================== syntax and shapes

SHAPE_SETUP = [
    "CREATE TABLE sh_orders (id int, region text, amount int, price numeric(10,2))",
    "CREATE TABLE sh_regions (region text, zone text)",
    "CREATE VIEW sh_eu AS SELECT id, amount FROM sh_orders WHERE region = 'eu'",
    ("INSERT INTO sh_orders VALUES (1, 'eu', 10, 1.50), (2, 'eu', 60, 2.25), (3, 'us', 5, 0.10), "
     "(4, 'us', NULL, 3.00), (5, NULL, 7, 0.10)"),
    "INSERT INTO sh_regions VALUES ('eu', 'z1')",
]

SHAPE_SCRIPT = [
    ["INSERT INTO sh_regions VALUES ('us', 'z2'), ('ap', 'z1')",
     "UPDATE sh_orders SET amount = amount + 100 WHERE id = 1",
     "INSERT INTO sh_orders VALUES (6, 'eu', 60, 2.25)"],
    ["INSERT INTO sh_orders VALUES (7, 'ap', 42, 9.99)",
     "UPDATE sh_regions SET zone = 'z2' WHERE region = 'eu'",
     "DELETE FROM sh_orders WHERE id = 2 OR region = 'us'"],
    ["DELETE FROM sh_regions WHERE region = 'ap'", "INSERT INTO sh_regions VALUES ('zz', 'z3')",
     "INSERT INTO sh_orders VALUES (9, 'zz', 3, 0.50), (9, 'zz', 3, 0.50)"],
    ["DELETE FROM sh_orders"],
]

# name → (SUBSCRIBE target, the one-shot query it must agree with)
SHAPES = {
    "table": ("sh_orders", "SELECT * FROM sh_orders"),
    "view": ("sh_eu", "SELECT * FROM sh_eu"),
    "query_over_view": ("(SELECT id FROM sh_eu WHERE amount > 20)", "SELECT id FROM sh_eu WHERE amount > 20"),
}
QUERIES = {
    "filter": "SELECT id, region, amount FROM sh_orders WHERE amount > 6 AND region <> 'us'",
    "projection_functions":
        "SELECT id, upper(region) AS r, amount * 2 + 1 AS a2, abs(amount - 50) AS d, "
        "coalesce(region, 'none') || '#' || CAST(id AS text) AS label, "
        "CASE WHEN amount > 50 THEN 'big' ELSE 'small' END AS size, price * 2 AS p2 FROM sh_orders",
    "inner_join": "SELECT o.id, o.amount, r.zone FROM sh_orders o JOIN sh_regions r ON o.region = r.region",
    "left_join": "SELECT o.id, r.zone FROM sh_orders o LEFT JOIN sh_regions r ON o.region = r.region",
    "full_join": "SELECT o.id, r.region, r.zone FROM sh_orders o FULL OUTER JOIN sh_regions r "
                 "ON o.region = r.region",
    "group_by": "SELECT region, count(*) AS n, count(amount) AS na, sum(amount) AS total, "
                "min(amount) AS lo, max(amount) AS hi, avg(amount) AS mean, sum(price) AS p, "
                "avg(price) AS ap FROM sh_orders GROUP BY region",
    "global_aggregate": "SELECT count(*) AS n, sum(amount) AS total, max(amount) AS hi FROM sh_orders",
    "distinct": "SELECT DISTINCT region FROM sh_orders",
    "union": "SELECT region FROM sh_orders UNION SELECT region FROM sh_regions",
    "union_all": "SELECT region FROM sh_orders UNION ALL SELECT region FROM sh_regions",
    "in_subquery": "SELECT id FROM sh_orders WHERE region IN (SELECT region FROM sh_regions WHERE zone = 'z1')",
    "from_subquery_aggregate": "SELECT g.r, g.n FROM (SELECT region AS r, count(*) AS n FROM sh_orders "
                               "GROUP BY region) AS g WHERE g.n > 1",
    "scalar_subquery": "SELECT id, amount - (SELECT min(amount) FROM sh_orders) AS above_min FROM sh_orders",
    # Queries the sqlglot path answered wrongly or refused; SUBSCRIBE plans them as SELECT does.
    "parenthesized_cross_join": "SELECT count(*) AS n FROM (sh_orders AS a CROSS JOIN sh_regions b)",
    "join_using_star": "SELECT * FROM sh_orders JOIN sh_regions USING (region)",
    "cte_join": "WITH big AS (SELECT id, region FROM sh_orders WHERE amount > 6) "
                "SELECT b.id, r.zone FROM big b JOIN sh_regions r ON b.region = r.region",
    "aggregate_of_join": "SELECT r.zone, count(*) AS n, avg(o.amount) AS mean FROM sh_orders o "
                         "JOIN sh_regions r USING (region) GROUP BY r.zone",
    # Grouping sets: recomputed (the aggregate strategy keeps one set of keys).
    "rollup": "SELECT region, sum(amount) AS total, GROUPING(region) AS g, "
              "percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median FROM sh_orders GROUP BY ROLLUP (region)",
}
SHAPES.update({name: (f"({q})", q) for name, q in QUERIES.items()})


@pytest.fixture(scope="module")
def shape_run(server, clock, request):
    """Open a subscription per shape, run the write script once, check each against AS OF.

    Returns name → list of problems (empty when the shape behaved). A module may name the
    shapes it runs in SHAPES_RUN (tests/cluster_suite.py: one of each strategy).
    """
    shapes = {name: SHAPES[name] for name in getattr(request.module, "SHAPES_RUN", SHAPES)}
    admin = connect(server)
    for sql in SHAPE_SETUP:
        admin.execute(sql)
    problems: dict[str, list[str]] = {name: [] for name in shapes}
    opened = open_feeds(server, {name: f"SUBSCRIBE {target} WITH (PROGRESS)"
                                 for name, (target, _) in shapes.items()})
    feeds: dict[str, Feed] = {}
    for name, feed in opened.items():
        if isinstance(feed, Feed):
            feeds[name] = feed
        else:
            problems[name].append(f"SUBSCRIBE failed: {type(feed).__name__}: {feed}")
    snapshot_ts: dict[str, int] = {}
    oracle = Oracle(server)

    def check_all(stamp: dict[str, int]) -> None:
        """Wait for each feed to pass its timestamp, then compare with SELECT AS OF there."""
        results = oracle.submit({name: (SHAPES[name][1], stamp[name]) for name in feeds})
        for name in list(feeds):
            try:
                feeds[name].until_frontier(stamp[name])
            except (AssertionError, psycopg.Error) as err:
                problems[name].append(f"at {stamp[name]}: {type(err).__name__}: {err}")
                feeds.pop(name).close()
        wanted = results()
        for name, want in wanted.items():
            if name not in feeds:
                continue
            ts = stamp[name]
            if isinstance(want, BaseException):
                problems[name].append(f"SELECT AS OF {ts} failed: {want}")
                continue
            try:
                got = feeds[name].check.state_at(ts)
            except AssertionError as err:
                problems[name].append(f"at {ts}: {err}")
                continue
            if got != want:
                problems[name].append(f"at {ts}: subscribe accumulated {dict(got)} but "
                                      f"SELECT AS OF gives {dict(want)}")

    # The snapshot: everything at one timestamp, equal to the one-shot result there.
    for name, feed in list(feeds.items()):
        try:
            # The first row is a progress row at the AS OF, the snapshot's timestamp.
            feed.until(lambda f: len(f.check.progress_ts) >= 2, message="the snapshot")
            stamps = [ts for ts in feed.check.data_timestamps() if ts < feed.check.progress_ts[1]]
            snapshot_ts[name] = feed.check.progress_ts[0]
            if stamps and stamps != [snapshot_ts[name]]:
                problems[name].append(f"snapshot at {stamps}, first progress {snapshot_ts[name]}")
        except (AssertionError, psycopg.Error) as err:
            problems[name].append(f"snapshot: {type(err).__name__}: {err}")
            feeds.pop(name).close()
    check_all(snapshot_ts)

    commit_ts = []
    for statements in SHAPE_SCRIPT:
        ts = clock.commit(admin, statements)
        commit_ts.append(ts)
        check_all(dict.fromkeys(feeds, ts))
    for name, feed in feeds.items():
        extra = set(feed.check.data_timestamps()) - set(commit_ts) - {snapshot_ts[name]}
        if extra:
            problems[name].append(f"data at timestamps no transaction committed at: {sorted(extra)}")
        feed.close()
    oracle.close()
    admin.close()
    return problems


@pytest.mark.parametrize("shape", list(SHAPES))
def test_subscribe_shape_matches_select_as_of(shape_run, shape):
    """SUBSCRIBE over a table, a view and each query shape equals SELECT AS OF at every timestamp."""
    assert shape_run[shape] == [], "\n".join(shape_run[shape])


# --------------------------------------------------------------------------- output columns


def test_output_columns_and_types(server, conn):
    t = make_table(conn, "cols", "k int, v text, n numeric(8,2), b bigint", "(1, 'a', 1.25, 10)")
    with_progress = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS)")
    with_progress.fetch("1s")
    assert with_progress.description == [
        ("mz_timestamp", NUMERIC), ("mz_progressed", BOOL), ("mz_diff", INT8),
        ("k", INT4), ("v", TEXT), ("n", NUMERIC), ("b", INT8)]
    [row] = [r for r in with_progress.check.data]
    assert row[1:] == (1, (1, "a", decimal.Decimal("1.25"), 10))
    with_progress.close()

    plain = Feed(server, f"SUBSCRIBE (SELECT v, k * 2 AS kk, b + 1 AS bb FROM {t})", progress=False)
    plain.fetch("1s")
    assert plain.description == [("mz_timestamp", NUMERIC), ("mz_diff", INT8), ("v", TEXT),
                                 ("kk", INT4), ("bb", INT8)]
    assert [(d, r) for _, d, r in plain.check.data] == [(1, ("a", 2, 11))]
    plain.close()

    # PostgreSQL's types, as SELECT gives them: avg(integer) and sum(bigint) are numeric.
    typed = Feed(server, f"SUBSCRIBE (SELECT k, avg(k) AS a, sum(b) AS s FROM {t} GROUP BY k)", progress=False)
    typed.fetch("1s")
    assert typed.description == [("mz_timestamp", NUMERIC), ("mz_diff", INT8), ("k", INT4),
                                 ("a", NUMERIC), ("s", NUMERIC)]
    assert [(d, r) for _, d, r in typed.check.data] == [(1, (1, 1, 10))]
    # avg's scale is PostgreSQL's, picked for the value (SELECT's too): 20 digits here.
    assert str(typed.check.data[0][2][1]) == "1.00000000000000000000"
    typed.close()


@pytest.mark.parametrize("form, snapshot, progress", [
    ("SUBSCRIBE {t}", True, False),
    ("SUBSCRIBE TO {t} WITH (SNAPSHOT)", True, False),
    ("SUBSCRIBE {t} WITH (SNAPSHOT = true, PROGRESS = false)", True, False),
    ("SUBSCRIBE TO {t} WITH (SNAPSHOT = false)", False, False),
    ("SUBSCRIBE {t} WITH (SNAPSHOT false, PROGRESS)", False, True),
    ("SUBSCRIBE (SELECT * FROM {t}) WITH (PROGRESS = true)", True, True),
    ("subscribe to {t} with (progress, snapshot = off)", False, True),
])
def test_snapshot_and_progress_options(server, conn, form, snapshot, progress):
    t = make_table(conn, "opt", "k int", "(1), (2)")
    feed = Feed(server, form.format(t=t), progress=progress)
    feed.fetch("1.2s")
    names = [n for n, _ in feed.description]
    assert names == ["mz_timestamp", *(["mz_progressed"] if progress else []), "mz_diff", "k"]
    got = sorted(r for _, _, r in feed.check.data)
    assert got == ([(1,), (2,)] if snapshot else [])
    if progress:
        assert feed.check.progress_ts, "no progress row"
    conn.execute(f"INSERT INTO {t} VALUES (3)")
    feed.until(lambda f: any(r == (3,) for _, _, r in f.check.data), message="the new row")
    assert sorted(r for _, _, r in feed.check.data) == ([(1,), (2,), (3,)] if snapshot else [(3,)])
    feed.close()


def test_update_is_retraction_and_insertion_at_one_timestamp(server, conn, clock):
    t = make_table(conn, "upd", "k int, v text", "(1, 'old'), (2, 'keep')")
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS)")
    ts = clock.commit(conn, [f"UPDATE {t} SET v = 'new' WHERE k = 1"])
    feed.until_frontier(ts)
    at = sorted((d, r) for t_, d, r in feed.check.data if t_ == ts)
    assert at == [(-1, (1, "old")), (1, (1, "new"))]
    assert all(t_ < ts for t_, _, r in feed.check.data if r == (2, "keep"))
    feed.close()


def test_each_timestamp_is_consolidated(server, conn, clock):
    t = make_table(conn, "cons", "k int")
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS)")
    # The same row twice: one row with diff 2.
    ts1 = clock.commit(conn, [f"INSERT INTO {t} VALUES (1)", f"INSERT INTO {t} VALUES (1), (2)"])
    # Inserted and deleted in one transaction: nothing at all.
    ts2 = clock.commit(conn, [f"INSERT INTO {t} VALUES (3)", f"DELETE FROM {t} WHERE k = 3"])
    # Deleting one of two equal rows is not possible by value; delete both and re-add one.
    ts3 = clock.commit(conn, [f"DELETE FROM {t} WHERE k = 1", f"INSERT INTO {t} VALUES (1)"])
    feed.until_frontier(ts3)
    by_ts = collections.defaultdict(list)
    for t_, d, r in feed.check.data:
        by_ts[t_].append((r, d))
    assert sorted(by_ts[ts1]) == [((1,), 2), ((2,), 1)]
    assert ts2 not in by_ts
    assert by_ts[ts3] == [((1,), -1)]
    feed.close()


def test_progress_rows_arrive_while_idle(server, conn):
    t = make_table(conn, "idle", "k int", "(1)")
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS)")
    feed.fetch("1s")
    batches_before = batches_run(server)
    arrivals: list[tuple[float, int]] = []
    start = time.monotonic()
    while time.monotonic() - start < 3.5:
        for row in feed.fetch("0.1s"):
            if row[1]:
                arrivals.append((time.monotonic(), int(row[0])))
    assert len(arrivals) >= 3, arrivals
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(arrivals)]
    assert max(gaps) <= 1.2, f"progress rows more than a second apart while idle: {gaps}"
    assert arrivals[-1][1] > arrivals[0][1]
    assert abs(arrivals[-1][1] - now_ms()) < 5000, "the frontier does not follow the clock"
    assert feed.check.data and len(feed.check.data) == 1
    assert batches_run(server) == batches_before, "an idle system ran Spark micro-batches"
    feed.close()


def test_progress_timestamps_are_readable_as_of(server, conn, clock):
    """A progress row says every time below it is complete, so SELECT AS OF there answers."""
    t = make_table(conn, "prog", "k int", "(1)")
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS)")
    ts = clock.commit(conn, [f"INSERT INTO {t} VALUES (2)"])
    feed.until(lambda f: f.check.frontier is not None and f.check.frontier > ts + 100,
               message="the frontier to move on with the clock")
    p = feed.check.frontier
    assert one_shot(conn, f"SELECT * FROM {t}", p - 1) == feed.check.state_at(p - 1)
    feed.close()


# --------------------------------------------------------------------------- AS OF and UP TO


def test_as_of_replays_history_and_up_to_ends(server, conn, clock):
    t = make_table(conn, "hist", "k int, v text")
    ts1 = clock.commit(conn, [f"INSERT INTO {t} VALUES (1, 'a')"])
    ts2 = clock.commit(conn, [f"INSERT INTO {t} VALUES (2, 'b')"])
    ts3 = clock.commit(conn, [f"UPDATE {t} SET v = 'c' WHERE k = 1"])
    expected = {ts1: [(1, (1, "a"))], ts2: [(1, (2, "b"))], ts3: [(-1, (1, "a")), (1, (1, "c"))]}

    # COPY: from ts1 (its snapshot) through ts3, then CommandComplete.
    cur = conn.cursor()
    check = StreamChecker(progress=False)
    with cur.copy(f"COPY (SUBSCRIBE {t} AS OF {ts1} UP TO {ts3 + 1}) TO STDOUT") as copy:
        for row in copy.rows():
            check.add((int(row[0]), int(row[1]), int(row[2]), row[3]))
    got = collections.defaultdict(list)
    for ts, d, r in check.data:
        got[ts].append((d, r))
    assert {ts: sorted(v) for ts, v in got.items()} == expected
    assert conn.execute("SELECT 1").fetchone() == (1,)

    # A cursor AS OF ts2 with UP TO ts3: snapshot at ts2, nothing from ts3 on; then FETCH
    # without a timeout returns nothing, at once, for ever after.
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS) AS OF {ts2} UP TO {ts3}")
    start = time.monotonic()
    while True:
        rows = feed.fetch(timeout=None)
        if not rows:
            break
        assert time.monotonic() - start < 10, "UP TO never ended the cursor"
    assert sorted((ts, d, r) for ts, d, r in feed.check.data) == [(ts2, 1, (1, "a")), (ts2, 1, (2, "b"))]
    assert feed.check.frontier is not None and ts2 < feed.check.frontier <= ts3
    for _ in range(2):
        started = time.monotonic()
        assert feed.fetch(timeout=None) == []
        assert time.monotonic() - started < 1.0
    feed.close()

    # SNAPSHOT = false with AS OF: only the changes after it.
    with cur.copy(f"COPY (SUBSCRIBE {t} WITH (SNAPSHOT = false) AS OF {ts1} UP TO {ts3}) TO STDOUT") as copy:
        rows = [tuple(r) for r in copy.rows()]
    assert rows == [(str(ts2), "1", "2", "b")]


def test_up_to_in_the_future_ends_when_the_frontier_passes_it(server, conn, clock):
    t = make_table(conn, "upto", "k int", "(1)")
    up_to = now_ms() + 5000
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS) UP TO {up_to}")
    ts2 = clock.commit(conn, [f"INSERT INTO {t} VALUES (2)"])
    start = time.monotonic()
    while feed.fetch(timeout=None):
        assert time.monotonic() - start < 20, "UP TO never ended the cursor"
    assert now_ms() >= up_to
    # (On a very slow machine the insert may land after UP TO; then it must not appear.)
    assert sorted(r for _, _, r in feed.check.data) == ([(1,), (2,)] if ts2 < up_to else [(1,)])
    assert all(ts < up_to for ts, _, _ in feed.check.data)
    assert feed.check.frontier is not None and feed.check.frontier <= up_to
    conn.execute(f"INSERT INTO {t} VALUES (3)")
    time.sleep(0.3)
    assert feed.fetch(timeout=None) == []
    feed.close()


def test_as_of_before_compacted_history(server, conn, clock):
    t = make_table(conn, "compact", "k int, v int")
    ts1 = clock.commit(conn, [f"INSERT INTO {t} VALUES (1, 1), (2, 2)"])
    clock.commit(conn, [f"UPDATE {t} SET v = v + 1"])
    clock.commit(conn, [f"UPDATE {t} SET v = v + 1"])
    time.sleep(1.2)  # past the retention window

    def compacted():
        clock.commit(conn, [f"UPDATE {t} SET v = v + 1 WHERE k = 1"])  # compaction runs after commits
        try:
            Feed(server, f"SUBSCRIBE {t} AS OF {ts1}").close()
            return None
        except psycopg.Error as err:
            return err

    err = wait_until(compacted, 15, interval=0.3, message="history to be compacted")
    assert err.sqlstate is not None and err.sqlstate != "XX000", err
    m = re.search(r"valid timestamps are (\d+) to (\d+)", str(err))
    assert m, f"the error does not give the valid range: {err}"
    since, upper = int(m.group(1)), int(m.group(2))
    assert ts1 < since <= upper

    # AS OF AT LEAST moves up to the earliest valid time instead.
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS) AS OF AT LEAST {ts1}")
    feed.until(lambda f: f.check.frontier is not None, message="the snapshot")
    first = feed.check.data_timestamps()[0]
    assert first >= since
    last = clock.commit(conn, [f"UPDATE {t} SET v = v * 10 WHERE k = 2"])
    feed.until_frontier(last)
    current = collections.Counter(tuple(r) for r in conn.execute(f"SELECT * FROM {t}").fetchall())
    assert feed.check.state_at(last) == current
    feed.close()
    assert conn.execute("SELECT 1").fetchone() == (1,)


# =========================================================================== delivery


def test_declare_fetch_forms(server, conn):
    t = make_table(conn, "fetch", "k int", "(1), (2), (3), (4), (5)")
    feed = Feed(server, f"SUBSCRIBE {t}", progress=False)
    two = feed.fetch(timeout=None, count="2")
    assert len(two) == 2
    one = feed.fetch(timeout="1s", count="1")
    assert len(one) == 1
    nxt = feed.fetch(timeout="1s", count="NEXT")
    assert len(nxt) == 1
    rest = feed.fetch(timeout="1s")
    assert len(rest) == 1
    assert sorted(r for _, _, r in feed.check.data) == [(1,), (2,), (3,), (4,), (5,)]
    # With a timeout and nothing new: returns empty after about that long.
    started = time.monotonic()
    assert feed.fetch(timeout="1s") == []
    assert 0.8 <= time.monotonic() - started < 10.0
    feed.cur.execute("CLOSE c")
    assert feed.cur.statusmessage.startswith("CLOSE")
    feed.conn.execute("COMMIT")
    feed.close()


def test_fetch_without_timeout_waits_for_a_row(server, conn):
    t = make_table(conn, "wait", "k int")
    feed = Feed(server, f"SUBSCRIBE {t}", progress=False)
    assert feed.fetch(timeout="0.5s") == []

    def later():
        time.sleep(1.0)
        with connect(server) as other:
            other.execute(f"INSERT INTO {t} VALUES (42)")

    writer = threading.Thread(target=later)
    started = time.monotonic()
    writer.start()
    rows = feed.fetch(timeout=None)
    waited = time.monotonic() - started
    writer.join()
    assert [r[2:] for r in rows] == [(42,)]
    assert waited >= 0.9, f"FETCH without timeout returned after {waited:.2f}s, before the insert"
    feed.close()


def test_close_stops_the_subscription(server, conn):
    t = make_table(conn, "close", "k int", "(1)")
    base = settled_active(server)
    feed = Feed(server, f"SUBSCRIBE {t} WITH (PROGRESS)")
    assert active_subscriptions(server) == base + 1
    feed.fetch("0.5s")
    feed.cur.execute("CLOSE c")
    assert wait_active(server, base) < 1.0
    with pytest.raises(pgerr.InvalidCursorName):
        feed.cur.execute("FETCH ALL c")
    feed.conn.execute("ROLLBACK")
    # No more work for the closed dataflow: writes to its input start no micro-batches.
    before = batches_run(server)
    conn.execute(f"INSERT INTO {t} VALUES (2)")
    time.sleep(1.0)
    assert batches_run(server) == before
    # The session goes on: a new cursor in a new transaction works.
    feed.conn.execute("BEGIN")
    feed.cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t}")
    feed.check = StreamChecker(progress=False)
    feed.fetch("1s")
    assert sorted(r for _, _, r in feed.check.data) == [(1,), (2,)]
    feed.close()
    wait_active(server, base)


def test_copy_subscribe_streams_rows_until_cancelled(server, conn):
    t = make_table(conn, "copy", "k int, v text", "(1, 'back\\slash'), (2, NULL)")
    base = settled_active(server)
    sub = connect(server)
    writer = connect(server)
    check = StreamChecker(progress=True)
    inserted = cancelled = False
    sql = f"COPY (SUBSCRIBE {t} WITH (PROGRESS)) TO STDOUT"
    with pytest.raises(pgerr.QueryCanceled), sub.cursor().copy(sql) as copy:
        for row in copy.rows():
            check.add((int(row[0]), row[1] == "t", None if row[2] is None else int(row[2]),
                       None if row[3] is None else int(row[3]), row[4]))
            if row[1] == "t" and not inserted:
                writer.execute(f"INSERT INTO {t} VALUES (3, 'c')")
                inserted = True
            if row[3] == "3" and not cancelled:
                sub.cancel_safe()
                cancelled = True
    assert sorted(r for _, _, r in check.data) == [(1, "back\\slash"), (2, None), (3, "c")]
    assert wait_active(server, base) < 1.0
    assert sub.execute("SELECT 1").fetchone() == (1,)
    sub.close()
    writer.close()


def test_copy_and_bare_subscribe_end_with_up_to(server, conn):
    t = make_table(conn, "copyupto", "k int", "(1), (2)")
    base = settled_active(server)
    cur = conn.cursor()
    with cur.copy(f"COPY (SUBSCRIBE {t} UP TO {now_ms() + 1000}) TO STDOUT") as copy:
        rows = [tuple(r) for r in copy.rows()]
    assert sorted(r[1:] for r in rows) == [("1", "1"), ("1", "2")]
    # A bare SUBSCRIBE streams the same way (CopyOut), as Materialize does.
    with cur.copy(f"SUBSCRIBE {t} WITH (PROGRESS) UP TO {now_ms() + 1000}") as copy:
        rows = [tuple(r) for r in copy.rows()]
    assert sorted(r[2:] for r in rows if r[1] == "f") == [("1", "1"), ("1", "2")]
    assert any(r[1] == "t" for r in rows)
    wait_active(server, base)
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_psql_prints_rows_and_exits(server, conn):
    t = make_table(conn, "psql", "k int, v text", "(1, 'x'), (2, 'y')")
    dsn = server.dsn
    for sql in (f"COPY (SUBSCRIBE {t} UP TO {now_ms() + 1000}) TO STDOUT",
                f"SUBSCRIBE {t} UP TO {now_ms() + 1000}"):
        out = subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1", dsn, "-c", sql],
                             capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        lines = sorted(line.split("\t")[1:] for line in out.stdout.splitlines() if line.strip())
        assert lines == [["1", "1", "x"], ["1", "2", "y"]], out.stdout


def test_stream_extended_protocol_stopped_by_cancel(server, conn):
    t = make_table(conn, "stream", "k int", "(1)")
    base = settled_active(server)
    sub = connect(server)
    cur = sub.cursor()
    check = StreamChecker(progress=True)
    inserted = False
    with pytest.raises(pgerr.QueryCanceled):
        for row in cur.stream(f"SUBSCRIBE {t} WITH (PROGRESS)"):
            check.add(row)
            if row[1] and not inserted:
                conn.execute(f"INSERT INTO {t} VALUES (2)")
                inserted = True
            if row[3] == 2:
                sub.cancel_safe()
    assert [(d.name, d.type_code) for d in cur.description] == [
        ("mz_timestamp", NUMERIC), ("mz_progressed", BOOL), ("mz_diff", INT8), ("k", INT4)]
    assert sorted(r for _, _, r in check.data) == [(1,), (2,)]
    assert wait_active(server, base) < 1.0
    assert sub.execute("SELECT 1").fetchone() == (1,)

    # Leaving the loop early (psycopg cancels) and closing the connection both stop it too.
    for row in cur.stream(f"SUBSCRIBE {t}"):
        break
    wait_active(server, base)
    assert sub.execute("SELECT 2").fetchone() == (2,)
    for row in cur.stream(f"SUBSCRIBE {t}"):
        assert active_subscriptions(server) == base + 1
        sub.close()
        break
    assert wait_active(server, base) < 1.5


def test_asyncpg_cursor_in_transaction(server, conn):
    t = make_table(conn, "apg", "k int, v text", "(1, 'a'), (2, 'b')")

    async def main():
        kw = {"host": "127.0.0.1", "port": server.port, "user": "materialize", "database": "materialize"}
        reader = await asyncpg.connect(**kw)
        writer = await asyncpg.connect(**kw)
        check = StreamChecker(progress=True)
        try:
            async with reader.transaction():
                cur = await reader.cursor(f"SUBSCRIBE {t} WITH (PROGRESS)")
                # cursor.fetch(n) returns what is ready, up to n rows, without waiting for n;
                # fetch(1) never comes back short, so asyncpg keeps the cursor open.
                first = [await cur.fetch(1) for _ in range(3)]
                first = [rows[0] for rows in first]
                assert first[0]["mz_progressed"], "the first row is a progress row at the AS OF"
                for r in first:
                    check.add(tuple(r.values()))
                assert {ts for ts, _, _ in check.data} == {check.progress_ts[0]}
                await writer.execute(f"INSERT INTO {t} VALUES (3, 'c')")
                while not any(r == (3, "c") for _, _, r in check.data):
                    for r in await cur.fetch(1):
                        check.add(tuple(r.values()))
                assert list(first[0].keys()) == ["mz_timestamp", "mz_progressed", "mz_diff", "k", "v"]
        finally:
            await reader.close()
            await writer.close()
        return check

    check = asyncio.run(asyncio.wait_for(main(), 60))
    assert sorted(r for _, _, r in check.data) == [(1, "a"), (2, "b"), (3, "c")]


# =========================================================================== stopping


def _raw_startup(port: int) -> socket.socket:
    """A bare pgwire client, to go away without saying goodbye."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    params = b"user\0materialize\0database\0materialize\0\0"
    sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    buf = b""
    while b"Z\0\0\0\x05" not in buf:  # ReadyForQuery
        chunk = sock.recv(65536)
        assert chunk, "server closed the connection during start-up"
        buf += chunk
    return sock


def _raw_query(sock: socket.socket, sql: str) -> None:
    body = sql.encode() + b"\0"
    sock.sendall(b"Q" + struct.pack("!i", 4 + len(body)) + body)


def test_client_going_away_stops_the_subscription(server, conn):
    t = make_table(conn, "gone", "k int", "(1)")
    base = settled_active(server)
    # Mid-COPY: the socket just closes.
    sock = _raw_startup(server.port)
    _raw_query(sock, f"SUBSCRIBE {t} WITH (PROGRESS)")
    assert sock.recv(65536)  # CopyOutResponse and the first rows
    assert active_subscriptions(server) == base + 1
    sock.close()
    assert wait_active(server, base) < 1.5
    # Waiting in FETCH without timeout, then reset.
    sock = _raw_startup(server.port)
    _raw_query(sock, f"BEGIN; DECLARE c CURSOR FOR SUBSCRIBE {t} WITH (SNAPSHOT = false)")
    wait_until(lambda: active_subscriptions(server) == base + 1, 10)
    _raw_query(sock, "FETCH ALL c")
    time.sleep(0.3)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    assert wait_active(server, base) < 1.5
    # A psycopg connection closed with a cursor open.
    feed = Feed(server, f"SUBSCRIBE {t}")
    assert active_subscriptions(server) == base + 1
    feed.close()
    assert wait_active(server, base) < 1.5
    before = batches_run(server)
    conn.execute(f"INSERT INTO {t} VALUES (2)")
    time.sleep(1.0)
    assert batches_run(server) == before, "a stopped dataflow still runs micro-batches"
    # And the server carries on.
    sql = f"COPY (SUBSCRIBE {t} UP TO {now_ms() + 500}) TO STDOUT"
    with connect(server) as other, other.cursor().copy(sql) as copy:
        assert sorted(r[2] for r in copy.rows()) == ["1", "2"]


def test_cancel_fetch_without_timeout(server, conn):
    t = make_table(conn, "cfetch", "k int")
    base = settled_active(server)
    feed = Feed(server, f"SUBSCRIBE {t}", progress=False)
    timer = threading.Timer(0.7, feed.conn.cancel_safe)
    timer.start()
    started = time.monotonic()
    with pytest.raises(pgerr.QueryCanceled):
        feed.fetch(timeout=None)
    assert 0.5 < time.monotonic() - started < 10
    timer.join()
    feed.conn.execute("ROLLBACK")  # the transaction failed; its cursor goes with it
    assert wait_active(server, base) < 1.0
    assert feed.conn.execute("SELECT 1").fetchone() == (1,)
    feed.close()


# =========================================================================== randomized oracle

KEYS = st.integers(0, 4)
GROUPS = st.sampled_from(["x", "y", "z"])
VALUES = st.one_of(st.none(), st.integers(-3, 9))
OPS = st.one_of(
    st.tuples(st.just("ins_a"), KEYS, GROUPS, VALUES),
    st.tuples(st.just("add_a"), KEYS, st.integers(-3, 3)),
    st.tuples(st.just("mov_a"), KEYS, GROUPS),
    st.tuples(st.just("del_a"), KEYS),
    st.tuples(st.just("del_a_lt"), st.integers(-2, 6)),
    st.tuples(st.just("ins_b"), KEYS, st.sampled_from(["p", "q"])),
    st.tuples(st.just("set_b"), KEYS, st.sampled_from(["p", "q", "r"])),
    st.tuples(st.just("del_b"), KEYS),
)
TRANSACTIONS = st.lists(st.lists(OPS, min_size=1, max_size=4), min_size=2, max_size=4)


def _sql(op: tuple, a: str, b: str) -> str:
    kind = op[0]
    if kind == "ins_a":
        v = "NULL" if op[3] is None else op[3]
        return f"INSERT INTO {a} VALUES ({op[1]}, '{op[2]}', {v})"
    if kind == "add_a":
        return f"UPDATE {a} SET v = v + {op[2]} WHERE k = {op[1]}"
    if kind == "mov_a":
        return f"UPDATE {a} SET g = '{op[2]}' WHERE k = {op[1]}"
    if kind == "del_a":
        return f"DELETE FROM {a} WHERE k = {op[1]}"
    if kind == "del_a_lt":
        return f"DELETE FROM {a} WHERE v < {op[1]}"
    if kind == "ins_b":
        return f"INSERT INTO {b} VALUES ({op[1]}, '{op[2]}')"
    if kind == "set_b":
        return f"UPDATE {b} SET w = '{op[2]}' WHERE k = {op[1]}"
    return f"DELETE FROM {b} WHERE k = {op[1]}"


ORACLE_QUERIES = {
    "filter": "SELECT k, g, v FROM {a} WHERE v > 2 OR g = 'x'",
    "group_by": "SELECT g, count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS lo, max(v) AS hi "
                "FROM {a} GROUP BY g",
    "join": "SELECT {a}.k, {a}.v, {b}.w FROM {a} JOIN {b} ON {a}.k = {b}.k",
    "left_join_count": "SELECT {b}.w, count({a}.k) AS n FROM {b} LEFT JOIN {a} ON {a}.k = {b}.k GROUP BY {b}.w",
}


@settings(max_examples=5, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(initial=st.lists(st.tuples(KEYS, GROUPS, VALUES), max_size=5), transactions=TRANSACTIONS)
def test_randomized_subscribe_equals_select_as_of(server, clock, initial, transactions):
    admin = connect(server)
    a, b = fresh("ra"), fresh("rb")
    admin.execute(f"CREATE TABLE {a} (k int, g text, v int)")
    admin.execute(f"CREATE TABLE {b} (k int, w text)")
    setup = [f"INSERT INTO {a} VALUES ({k}, '{g}', {'NULL' if v is None else v})" for k, g, v in initial]
    setup.append(f"INSERT INTO {b} VALUES (0, 'p'), (1, 'q'), (3, 'p')")
    clock.commit(admin, setup)
    run = OracleRun(server, {name: q.format(a=a, b=b) for name, q in ORACLE_QUERIES.items()})
    try:
        failed = run.refused()
        assert not failed, f"SUBSCRIBE refused: {failed}"
        snap = run.as_of("the snapshot")
        stamps = {name: {ts} for name, ts in snap.items()}
        run.compare(snap)
        for statements in transactions:
            sqls = [_sql(op, a, b) for op in statements]
            ts = clock.commit(admin, sqls)
            run.history.append(f"{ts}: {sqls}")
            for name in run.feeds:
                stamps[name].add(ts)
            run.compare(dict.fromkeys(run.feeds, ts))
        for name, feed in run.feeds.items():
            extra = set(feed.check.data_timestamps()) - stamps[name]
            assert not extra, f"{name}: data at timestamps no transaction committed at: {extra}"
    finally:
        run.close()
        admin.close()


# =========================================================================== many clients


def test_fifty_concurrent_subscriptions_all_receive_every_update(server, conn):
    t = make_table(conn, "fifty", "k int, v text", "(0, 'before')")
    n_subs, values = 50, [1, 2, 3]
    base = settled_active(server)

    async def main():
        conns = [await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) for _ in range(n_subs)]

        async def declare(c):
            await c.execute("BEGIN")
            await c.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} WITH (SNAPSHOT = false, PROGRESS)")

        async def read(c):
            check = StreamChecker(progress=True)
            deadline = time.monotonic() + 90
            while len(check.data) < len(values):
                assert time.monotonic() < deadline, f"only got {check.data}"
                cur = await c.execute("FETCH ALL c WITH (timeout = '1s')")
                for r in await cur.fetchall():
                    check.add(r)
            return check

        try:
            await asyncio.gather(*(declare(c) for c in conns))
            readers = [asyncio.ensure_future(read(c)) for c in conns]
            writer = await psycopg.AsyncConnection.connect(server.dsn, autocommit=True)
            for v in values:
                await writer.execute(f"INSERT INTO {t} VALUES ({v}, 'v{v}')")
            await writer.close()
            return await asyncio.gather(*readers)
        finally:
            for c in conns:
                await c.close()

    checks = asyncio.run(asyncio.wait_for(main(), 150))
    assert len(checks) == n_subs
    first = sorted(checks[0].data)
    assert [(d, r) for _, d, r in first] == [(1, (v, f"v{v}")) for v in values]
    for check in checks:
        assert sorted(check.data) == first, "subscribers disagree on the updates or their timestamps"
    wait_active(server, base, timeout=30)  # all 50 dataflows stop when their clients go


# =========================================================================== bad input


@pytest.fixture(scope="module")
def bad_table(server):
    with connect(server) as c:
        c.execute("CREATE TABLE bad_t (k int)")
    return "bad_t"


BAD_SUBSCRIBES = [
    ("unknown_relation", "SUBSCRIBE no_such_relation", "42P01"),
    ("unknown_column", "SUBSCRIBE (SELECT no_such_column FROM bad_t)", "42703"),
    ("snapshot_not_a_bool", "SUBSCRIBE bad_t WITH (SNAPSHOT = 'x')", "22023"),
    ("progress_not_a_bool", "SUBSCRIBE bad_t WITH (PROGRESS = 7)", "22023"),
    ("unknown_option", "SUBSCRIBE bad_t WITH (BOGUS = true)", "22023"),
    ("as_of_far_future", "SUBSCRIBE bad_t AS OF {far}", "22023"),
    ("up_to_before_as_of", "SUBSCRIBE bad_t AS OF {now} UP TO {before}", "22023"),
    ("as_of_not_a_number", "SUBSCRIBE bad_t AS OF 'yesterday'", "22023"),
]


@pytest.mark.parametrize("how", ["bare", "declare", "copy"])
@pytest.mark.parametrize("name, sql, sqlstate", BAD_SUBSCRIBES, ids=[b[0] for b in BAD_SUBSCRIBES])
def test_bad_subscribe_is_a_clear_error(server, conn, bad_table, name, sql, sqlstate, how):
    sql = sql.format(far=now_ms() + 86_400_000, now=now_ms(), before=now_ms() - 60_000)
    base = settled_active(server)
    if how == "declare":
        conn.execute("BEGIN")
        stmt = f"DECLARE c CURSOR FOR {sql}"
    elif how == "copy":
        stmt = f"COPY ({sql}) TO STDOUT"
    else:
        stmt = sql
    with pytest.raises(psycopg.Error) as info:
        if how == "copy":
            with conn.cursor().copy(stmt) as copy:
                list(copy)
        else:
            conn.execute(stmt)
    err = info.value
    assert err.sqlstate == sqlstate, f"{err.sqlstate}: {err}"
    assert str(err).strip()
    if how == "declare":
        with pytest.raises(pgerr.InFailedSqlTransaction):
            conn.execute("SELECT 1")
        conn.execute("ROLLBACK")
    assert conn.execute("SELECT 1").fetchone() == (1,)
    assert active_subscriptions(server) == base


def test_fetch_unknown_cursor_and_declare_outside_transaction(server, conn, bad_table):
    with pytest.raises(pgerr.InvalidCursorName) as info:
        conn.execute("FETCH ALL nope")
    assert info.value.sqlstate == "34000" and "nope" in str(info.value)
    conn.execute("BEGIN")
    with pytest.raises(pgerr.InvalidCursorName):
        conn.execute("FETCH 1 nope WITH (timeout = '1s')")
    conn.execute("ROLLBACK")
    with pytest.raises(pgerr.NoActiveSqlTransaction) as info:
        conn.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {bad_table}")
    assert info.value.sqlstate == "25P01"
    with pytest.raises(pgerr.InvalidCursorName):
        conn.execute("CLOSE c")
    # A duplicate cursor name is refused (and aborts the transaction, as in PostgreSQL).
    conn.execute("BEGIN")
    conn.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {bad_table}")
    with pytest.raises(pgerr.DuplicateCursor):
        conn.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {bad_table}")
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT 1").fetchone() == (1,)
