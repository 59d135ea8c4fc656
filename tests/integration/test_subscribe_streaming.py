"""SUBSCRIBE at any size (issue 18): snapshots and batches past any row cap, streamed in
bounded chunks, and a client that stops reading holding back only itself.

The servers here run with a small output budget (--subscribe-buffer-bytes 256kB), so that
a few hundred thousand rows are many budgets' worth; one also has a stall timeout, after
which a client that reads nothing is disconnected with 53400. Memory is watched through
the per-subscription gauges on /metrics, not through timing.
"""

from __future__ import annotations

import collections
import datetime
import math
import threading
import time

import psycopg
import pytest

from tests.support import connect, fresh, metric_by, metric_sum, now_ms, running_server, wait_until

pytestmark = pytest.mark.slow

BUDGET = 256 << 10




@pytest.fixture(scope="module")
def small(request):
    with running_server(extra_args=["--subscribe-buffer-bytes", "256kB"]) as proc:
        yield proc


@pytest.fixture(scope="module")
def stalling():
    with running_server(extra_args=["--subscribe-buffer-bytes", "64kB", "--subscribe-stall-timeout", "2"]) as proc:
        yield proc




def buffered_bytes(server) -> dict[str, float]:
    """Unread output per subscription, from /metrics."""
    return metric_by(server.metrics(), "sparkwire_subscribe_buffered_bytes", "subscription")


def lag_disconnects(server) -> float:
    return metric_sum(server.metrics(), "sparkwire_subscribe_lag_disconnects_total")


def fetch_all(cur, name: str = "c", timeout: str = "1s") -> list[tuple]:
    cur.execute(f"FETCH ALL {name} WITH (timeout = '{timeout}')")
    return cur.fetchall()




# --------------------------------------------------------------------------- snapshots


def test_snapshot_whose_narrow_columns_repeat_is_consolidated_by_every_column(small):
    """The first pass hashes only the numbers and dates; here they repeat in every row (three
    groups, one date), so the rows are told apart by their text: every distinct row once, the
    true duplicates with their count, whichever pass found them."""
    t = fresh("narrow")
    n = 120_000
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (grp int, day date, name text)")
        c.execute(f"INSERT INTO {t} SELECT g % 3, DATE '2026-01-01', 'name-' || g "
                  f"FROM generate_series(1, {n}) AS g")
        c.execute(f"INSERT INTO {t} VALUES (1, DATE '2026-01-01', 'name-1'), (0, NULL, NULL), (0, NULL, NULL)")
        up_to = now_ms() + 1
    with connect(small) as c, c.cursor().copy(f"COPY (SUBSCRIBE {t} UP TO {up_to}) TO STDOUT") as copy:
        got = collections.Counter()
        for ts, diff, *row in copy.rows():
            assert tuple(row) not in got, f"{row} twice in one timestamp"
            got[tuple(row)] = int(diff)
    assert len(got) == n + 1
    assert got[("1", "2026-01-01", "name-1")] == 2 and got[("0", None, None)] == 2
    assert got[("2", "2026-01-01", "name-2")] == 1
    # Numbers only: the one pass hashes every column.
    with connect(small) as c:
        c.execute("BEGIN")
        cur = c.cursor()
        cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE (SELECT grp, day FROM {t}) UP TO {up_to}")
        seen = {}
        while rows := cur.execute("FETCH 1000 c").fetchall():
            for _, diff, grp, day in rows:
                assert (grp, day) not in seen
                seen[(grp, day)] = diff
    assert seen[(1, datetime.date(2026, 1, 1))] == n // 3 + 1 and seen[(0, None)] == 2
    assert sum(seen.values()) == n + 3


@pytest.mark.parametrize("n", [150_000])
def test_snapshot_past_any_row_cap_through_fetch_and_copy(small, n):
    t = fresh("snap")
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (id bigint, name text, price double precision)")
        c.execute(f"INSERT INTO {t} SELECT g, 'name-' || g, g * 1.5 FROM generate_series(1, {n}) AS g")
        c.execute(f"INSERT INTO {t} VALUES (1, 'name-1', 1.5), (-1, NULL, 'NaN'), (-1, NULL, 'NaN')")
        up_to = now_ms() + 1
    # FETCH: every row once, duplicates consolidated into one row with its count.
    with connect(small) as c:
        c.execute("BEGIN")
        cur = c.cursor()
        cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} UP TO {up_to}")
        got: collections.Counter = collections.Counter()
        peak = 0
        stamps = set()
        while True:
            cur.execute("FETCH 20000 c")
            rows = cur.fetchall()
            if not rows:
                break
            for ts, diff, *row in rows:
                key = tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)
                assert key not in got, f"{key} twice in one timestamp"
                got[key] = diff
                stamps.add(ts)
            peak = max(peak, *buffered_bytes(small).values(), 0)
        c.execute("COMMIT")
    assert len(stamps) == 1
    assert len(got) == n + 1
    assert got[(1, "name-1", 1.5)] == 2 and got[(-1, None, "NaN")] == 2
    assert all(v == 1 for k, v in got.items() if k[0] > 1)
    # Unread output never grew past the budget plus one chunk of a spilled table.
    assert peak <= BUDGET + (4 << 20), peak
    # COPY: the same rows as text.
    with connect(small) as c, c.cursor().copy(f"COPY (SUBSCRIBE {t} UP TO {up_to}) TO STDOUT") as copy:
        lines = sum(1 for _ in copy.rows())
    assert lines == n + 1


def test_fetches_of_changing_counts_and_formats_get_every_row_once(small):
    """After each FETCH n the cursor encodes its next rows ahead, in that FETCH's formats
    (server/fetch_ahead): a FETCH of another count, in binary after text and back, or ALL,
    still gets exactly the rows the subscription has, each once, and CLOSE drops the rest."""
    t = fresh("ahead")
    n = 60_000
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (id bigint, name text, price numeric(12,2))")
        c.execute(f"INSERT INTO {t} SELECT g, 'n' || g, g / 4.0 FROM generate_series(1, {n}) AS g")
        up_to = now_ms() + 1
        expected = c.execute(f"SELECT id, name, price FROM {t}").fetchall()
    with connect(small) as c:
        c.execute("BEGIN")
        text, binary = c.cursor(), c.cursor(binary=True)
        text.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} UP TO {up_to}")
        got: collections.Counter = collections.Counter()
        ahead_before = metric_sum(small.metrics(), "sparkwire_fetch_rows_encoded_ahead_total")
        plan = [(text, 1000), (text, 1000), (text, 1000), (text, 7), (binary, 25_000), (binary, 1),
                (text, 9000), (binary, 3000), (text, 3)]
        for cur, count in plan:
            cur.execute(f"FETCH {count} c")
            rows = cur.fetchall()
            assert len(rows) == count
            for _ts, diff, *row in rows:
                got[tuple(row)] += diff
        # FETCH ALL returns the rows ready now (rows sharing a hash are netted out after the
        # rest), so it is repeated until the subscription reaches UP TO and ends.
        while rows := text.execute("FETCH ALL c").fetchall():
            for _ts, diff, *row in rows:
                got[tuple(row)] += diff
        assert got == collections.Counter(expected)
        # The second and third FETCH 1000 were sent as encoded ahead.
        ahead = metric_sum(small.metrics(), "sparkwire_fetch_rows_encoded_ahead_total") - ahead_before
        assert ahead >= 2000, ahead
        # A cursor closed with rows encoded ahead: the session carries on.
        text.execute(f"DECLARE d CURSOR FOR SUBSCRIBE {t} UP TO {up_to}")
        text.execute("FETCH 100 d")
        assert len(text.fetchall()) == 100
        text.execute("CLOSE d")
        assert c.execute("SELECT count(*) FROM " + t).fetchone() == (n,)
        c.execute("COMMIT")


def test_batch_past_any_row_cap_reaches_a_reading_subscriber(small):
    t = fresh("batch")
    n = 150_000
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (k bigint)")
    reader = connect(small)
    reader.execute("BEGIN")
    cur = reader.cursor()
    cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} WITH (SNAPSHOT = false, PROGRESS)")
    with connect(small) as w:
        w.execute(f"INSERT INTO {t} SELECT generate_series(1, {n})")
        w.execute(f"INSERT INTO {t} VALUES (-5)")
    received = collections.Counter()
    deadline = time.monotonic() + 180
    while received[-5] == 0:
        assert time.monotonic() < deadline, f"got {sum(received.values())} rows"
        for ts, progressed, diff, k in fetch_all(cur):
            if not progressed:
                received[k] += diff
    assert len(received) == n + 1 and set(received.values()) == {1}
    reader.close()


# --------------------------------------------------------------------------- backpressure


def test_client_that_stops_reading_holds_back_only_itself(small):
    t = fresh("held")
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (k bigint, pad text)")
    slow = connect(small)
    slow.execute("BEGIN")
    slow.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} WITH (SNAPSHOT = false)")  # and reads nothing for now
    fast = connect(small)
    fast.execute("BEGIN")
    fcur = fast.cursor()
    fcur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} WITH (SNAPSHOT = false)")
    per_batch, batches = 40_000, 4
    received = 0
    acks = []
    with connect(small) as w:
        for i in range(batches):
            w.execute(f"INSERT INTO {t} SELECT g, repeat('x', 20) FROM generate_series({i * per_batch + 1}, "
                      f"{(i + 1) * per_batch}) AS g")
            deadline = time.monotonic() + 120
            while received < (i + 1) * per_batch:
                assert time.monotonic() < deadline, f"the fast subscriber got {received} rows"
                received += len(fetch_all(fcur))
            # Writers are not held up by the subscriber that does not read.
            started = time.monotonic()
            w.execute(f"INSERT INTO {t} VALUES (0, 'tick')")
            acks.append(time.monotonic() - started)
            fcur.execute("FETCH ALL c WITH (timeout = '0.5s')")
            received += len(fcur.fetchall())
        # The slow subscriber's unread output stays within its budget (plus one output chunk).
        unread = buffered_bytes(small)
        assert max(unread.values()) <= BUDGET + (4 << 20), unread
    # Still connected, still correct: it now reads everything, each row exactly once.
    scur = slow.cursor()
    seen: collections.Counter = collections.Counter()
    deadline = time.monotonic() + 180
    while sum(seen.values()) < batches * (per_batch + 1):
        assert time.monotonic() < deadline, f"the slow subscriber got {sum(seen.values())} rows"
        for _ts, diff, k, _pad in fetch_all(scur):
            seen[k] += diff
    assert seen[0] == batches and len(seen) == batches * per_batch + 1
    assert slow.execute("SELECT 1").fetchone() == (1,)
    slow.close()
    fast.close()


def test_stalled_client_is_disconnected_after_the_timeout(stalling):
    t = fresh("stall")
    with connect(stalling) as c:
        c.execute(f"CREATE TABLE {t} (k bigint, pad text)")
        c.execute(f"INSERT INTO {t} SELECT g, repeat('y', 50) FROM generate_series(1, 60000) AS g")
    before = lag_disconnects(stalling)
    stalled = connect(stalling)
    stalled.execute("BEGIN")
    stalled.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t}")  # a snapshot many budgets big, never read
    reader = connect(stalling)
    reader.execute("BEGIN")
    rcur = reader.cursor()
    rcur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} WITH (SNAPSHOT = false)")
    wait_until(lambda: lag_disconnects(stalling) > before, 60, interval=0.5,
               message="the stalled subscriber to be disconnected")
    with pytest.raises(psycopg.OperationalError) as info:
        stalled.execute("FETCH ALL c WITH (timeout = '1s')")
    assert info.value.sqlstate == "53400", info.value
    assert "subscription buffer full" in str(info.value)
    # Everyone else carries on.
    with connect(stalling) as w:
        w.execute(f"INSERT INTO {t} VALUES (-1, 'after')")
    rows = []
    deadline = time.monotonic() + 60
    while not any(r[2] == -1 for r in rows):
        assert time.monotonic() < deadline
        rows += fetch_all(rcur)
    reader.close()
    stalled.close()


def test_buffer_gauges_go_away_with_their_subscription(small):
    t = fresh("gauge")
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (k int)")
        c.execute(f"INSERT INTO {t} VALUES (1), (2)")
    c = connect(small)
    c.execute("BEGIN")
    c.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t}")
    wait_until(lambda: any(v > 0 for v in buffered_bytes(small).values()), 30, message="a buffered snapshot")
    labels = set(buffered_bytes(small))
    text = small.metrics()
    assert "sparkwire_subscribe_buffered_rows{" in text
    c.execute("CLOSE c")
    c.execute("COMMIT")
    wait_until(lambda: not (set(buffered_bytes(small)) & labels), 10, message="the gauges to go")
    c.close()


def test_buffer_gauges_count_rows_a_cursor_holds_ahead(small):
    """After a FETCH n, the cursor takes the next n rows from its subscription's buffer and
    holds them, encoded, for the next FETCH: unread all the same, so the gauges count them."""
    t = fresh("held")
    n = 3000
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (k int)")
        c.execute(f"INSERT INTO {t} SELECT g FROM generate_series(1, {n}) AS g")
    def rows_of() -> dict[str, float]:
        return metric_by(small.metrics(), "sparkwire_subscribe_buffered_rows", "subscription")

    before = set(rows_of())
    c = connect(small)
    c.execute("BEGIN")
    c.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t}")
    wait_until(lambda: set(rows_of()) - before, 30, message="the subscription's gauges")
    [label] = set(rows_of()) - before
    wait_until(lambda: rows_of().get(label) == n, 30, message="the whole snapshot buffered")
    seen = 0
    for left in (n - 1000, n - 2000):
        seen += len(c.execute("FETCH 1000 c").fetchall())
        wait_until(lambda left=left: rows_of().get(label) == left, 10, message=f"{left} rows unread")
        time.sleep(0.5)  # the next 1000 are taken from the buffer and held by now
        assert rows_of().get(label) == left
    seen += len(c.execute("FETCH ALL c").fetchall())
    assert seen == n
    wait_until(lambda: rows_of().get(label) == 0, 10, message="nothing unread")
    c.execute("COMMIT")
    c.close()


def test_many_subscribers_of_a_large_snapshot_at_once(small):
    """Four clients read a snapshot together; each gets it whole, none waits for the others."""
    t = fresh("many")
    n = 60_000
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (k bigint)")
        c.execute(f"INSERT INTO {t} SELECT generate_series(1, {n})")
    up_to = now_ms() + 1
    counts: dict[int, int] = {}

    def read(i: int) -> None:
        with connect(small) as c, c.cursor().copy(f"COPY (SUBSCRIBE {t} UP TO {up_to}) TO STDOUT") as copy:
            counts[i] = sum(1 for _ in copy.rows())

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert counts == dict.fromkeys(range(4), n)


def test_snapshot_left_half_read_lets_go_of_spark(small):
    """A client that closes its cursor in the middle of a large snapshot: the partitions Spark
    was serving it are let go, and the next reader of the same table gets it whole."""
    t = fresh("half")
    n = 120_000
    with connect(small) as c:
        c.execute(f"CREATE TABLE {t} (k bigint, pad text)")
        c.execute(f"INSERT INTO {t} SELECT g, repeat('z', 30) FROM generate_series(1, {n}) AS g")
    up_to = now_ms() + 1
    for _ in range(3):
        with connect(small) as c:
            c.execute("BEGIN")
            cur = c.cursor()
            cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {t} UP TO {up_to}")
            cur.execute("FETCH 1000 c")
            assert len(cur.fetchall()) == 1000
            c.execute("CLOSE c")
            c.execute("COMMIT")
    with connect(small) as c, c.cursor().copy(f"COPY (SUBSCRIBE {t} UP TO {up_to}) TO STDOUT") as copy:
        assert sum(1 for _ in copy.rows()) == n
    with connect(small) as c:
        assert c.execute(f"SELECT count(*) FROM {t}").fetchone() == (n,)
