"""SUBSCRIBE output modifiers end to end (issue 4): a real server, real clients, real output.

WITHIN TIMESTAMP ORDER BY, ENVELOPE UPSERT and ENVELOPE DEBEZIUM as Materialize
ships them: the seed's three example sessions, PROGRESS with each mode, the
errors, the system flags (durable across a restart), the metrics, every way a
SUBSCRIBE can be read (cursor + FETCH, COPY TO STDOUT, bare SUBSCRIBE in psql,
the extended protocol) over tables, views, joins and aggregates, and a
randomized check that replaying UPSERT/DEBEZIUM output into a key→value map
gives the one-shot SELECT ... AS OF at every timestamp emitted.

Timestamps are wall-clock milliseconds, so they are compared only by order and
equality: each write below is one transaction, hence one timestamp.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import threading
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from spark_backend.storage import CHECKPOINT_EVERY
from tests.support import ServerProcess, Subscriber, fresh, metric_by

pytestmark = pytest.mark.slow

FLAGS = {
    "order_by": "enable_within_timestamp_order_by_in_subscribe",
    "upsert": "enable_envelope_upsert_in_subscribe",
    "debezium": "enable_envelope_debezium_in_subscribe",
}
MODIFIERS = {
    "order_by": "WITHIN TIMESTAMP ORDER BY key",
    "upsert": "ENVELOPE UPSERT (KEY (key))",
    "debezium": "ENVELOPE DEBEZIUM (KEY (key))",
}
WAIT = 90.0  # seconds to wait for expected rows before failing





# --------------------------------------------------------------------------- helpers


class Sub(Subscriber):
    """A SUBSCRIBE whose fetches return their rows (and note the columns)."""

    def __init__(self, server: ServerProcess, query: str, name: str = "c") -> None:
        super().__init__(server, query, cursor=name)
        self.columns: list[str] | None = None

    def fetch(self, timeout: str = "0.5s") -> list[tuple]:
        rows = self.fetch_rows(timeout)
        self.columns = [d.name for d in self.cur.description]
        return rows

    def until(self, done, what: str = "rows") -> list[tuple]:
        """Fetch until `done(rows fetched by this call)` holds."""
        rows: list[tuple] = []
        self.fetch_until(lambda: done(rows), WAIT, lambda: f"timed out waiting for {what}; got {rows}",
                         collect=rows.extend)
        return rows

    def take(self, n: int) -> list[tuple]:
        rows = self.until(lambda r: len(r) >= n, f"{n} rows")
        assert len(rows) == n, rows
        return rows


def write(conn: psycopg.Connection, *statements: str) -> None:
    """One write transaction: one timestamp."""
    conn.execute("BEGIN")
    try:
        for s in statements:
            conn.execute(s)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def run_steps(conn: psycopg.Connection, sub: Sub, steps: list[tuple[list[str], list[tuple]]]) -> None:
    """Each step: one write transaction, then exactly its expected rows (without mz_timestamp),
    in order, all at one timestamp later than the previous step's."""
    previous = None
    for i, (statements, expected) in enumerate(steps):
        if statements:
            write(conn, *statements)
        rows = sub.take(len(expected))
        stamps = {r[0] for r in rows}
        assert len(stamps) == 1, f"step {i}: one transaction, one timestamp: {rows}"
        (ts,) = stamps
        assert isinstance(ts, Decimal) and ts == int(ts)
        assert previous is None or ts > previous, f"step {i}: timestamps must increase"
        previous = ts
        assert [r[1:] for r in rows] == expected, f"step {i}"
    assert sub.fetch("1s") == [], "no rows beyond the expected ones"


def text_rows(rows) -> list[tuple]:
    """Rows as COPY's text format shows them, to compare typed and text clients."""
    return [tuple(None if v is None else str(v) for v in r) for r in rows]


def subscriptions_total(server: ServerProcess) -> dict[str, float]:
    return metric_by(server.metrics(), "sparkwire_subscriptions_total", "output_mode")


@contextlib.contextmanager
def watchdog(conn: psycopg.Connection, seconds: float = WAIT):
    """Cancel the connection's statement if it outlives `seconds`: a SUBSCRIBE that should
    have failed (or ended) fails the test instead of streaming forever."""
    timer = threading.Timer(seconds, conn.cancel)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _expect(conn: psycopg.Connection, sql: str, run, sqlstate: str, fragments: tuple[str, ...]) -> psycopg.Error:
    """`run()` (under the watchdog) fails with `sqlstate` and a message containing `fragments`."""
    err = None
    try:
        with watchdog(conn):
            run()
    except psycopg.Error as exc:
        err = exc
    if err is None or err.sqlstate is None:
        # No error from the server: the statement ran (a bare SUBSCRIBE started streaming,
        # which psycopg reports without a SQLSTATE). Drop the busy connection and fail.
        conn.close()
        pytest.fail(f"{sql!r} should fail with {sqlstate}, got {err!r}")
    assert err.sqlstate == sqlstate, (sql, err.sqlstate, str(err))
    for fragment in fragments:
        assert fragment in err.diag.message_primary, (sql, err.diag.message_primary)
    return err


def expect_error(conn: psycopg.Connection, sql: str, sqlstate: str, *fragments: str) -> psycopg.Error:
    """`sql` (simple query protocol) fails with `sqlstate` and a message containing `fragments`."""
    return _expect(conn, sql, lambda: conn.execute(sql), sqlstate, fragments)


def expect_stream_error(conn: psycopg.Connection, sql: str, sqlstate: str, *fragments: str) -> psycopg.Error:
    """The same through the extended protocol (psycopg's stream(): Parse/Bind/Describe/Execute)."""
    def run() -> None:
        for _ in conn.cursor().stream(sql):
            break

    return _expect(conn, sql, run, sqlstate, fragments)


def expect_copy_error(conn: psycopg.Connection, sql: str, sqlstate: str, *fragments: str) -> psycopg.Error:
    """The same as COPY (...) TO STDOUT."""
    def run() -> None:
        with conn.cursor().copy(f"COPY ({sql}) TO STDOUT") as copy:
            list(copy)

    return _expect(conn, sql, run, sqlstate, fragments)


def assert_usable(conn: psycopg.Connection) -> None:
    assert conn.execute("SELECT 1 + 1").fetchone() == (2,)


@pytest.fixture(scope="module")
def kv(server):
    """A small table the error and flag tests subscribe to."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE kv (key int, value int)")
        c.execute("INSERT INTO kv VALUES (1, 10), (2, 20)")
    return "kv"


# --------------------------------------------------------------------------- the seed's sessions


def test_seed_within_timestamp_order_by(server, conn):
    t = fresh("seed_order")
    conn.execute(f"CREATE TABLE {t} (c1 int, c2 int, c3 text)")
    conn.execute(f"INSERT INTO {t} VALUES (2, 0, 'old'), (1, 2, 'bar')")
    with Sub(server, f"SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY c1, c2 DESC NULLS LAST, mz_diff") as sub:
        run_steps(conn, sub, [
            ([], [(1, 1, 2, "bar"), (1, 2, 0, "old")]),
            # The seed's timestamp 100, written in an order unlike the output's.
            ([f"DELETE FROM {t} WHERE c3 = 'old'",
              f"INSERT INTO {t} VALUES (2, 0, 'new'), (1, 0, 'data')",
              f"DELETE FROM {t} WHERE c3 = 'bar'",
              f"INSERT INTO {t} VALUES (1, 2, 'boo'), (1, 20, 'foo')"],
             [(1, 1, 20, "foo"),
              (-1, 1, 2, "bar"),
              (1, 1, 2, "boo"),
              (1, 1, 0, "data"),
              (-1, 2, 0, "old"),
              (1, 2, 0, "new")]),
        ])
        assert sub.columns == ["mz_timestamp", "mz_diff", "c1", "c2", "c3"]


def _kv_store_steps(t: str, debezium: bool) -> list[tuple[list[str], list[tuple]]]:
    if debezium:
        outputs = [
            [("insert", 1, None, 2), ("insert", 2, None, 4)],
            [("upsert", 1, 2, 10)],
            [("insert", 3, None, 6)],
            [("delete", 1, 10, None), ("delete", 2, 4, None), ("delete", 3, 6, None)],
            [("key_violation", 1, None, None)],
        ]
    else:
        outputs = [
            [("upsert", 1, 2), ("upsert", 2, 4)],
            [("upsert", 1, 10)],
            [("upsert", 3, 6)],
            [("delete", 1, None), ("delete", 2, None), ("delete", 3, None)],
            [("key_violation", 1, None)],
        ]
    writes = [
        [],  # the snapshot
        [f"UPDATE {t} SET value = 10 WHERE key = 1"],  # time 200
        [f"INSERT INTO {t} VALUES (3, 6)"],  # time 300
        [f"DELETE FROM {t}"],  # time 400: delete all rows
        [f"INSERT INTO {t} VALUES (1, 7)", f"INSERT INTO {t} VALUES (1, 8)"],  # time 500: two values for key 1
    ]
    return list(zip(writes, outputs))


@pytest.mark.parametrize("envelope", ["UPSERT", "DEBEZIUM"])
def test_seed_envelope(server, conn, envelope):
    t = fresh("kv_store")
    conn.execute(f"CREATE TABLE {t} (key int, value int)")
    conn.execute(f"INSERT INTO {t} VALUES (1, 2), (2, 4)")
    with Sub(server, f"SUBSCRIBE {t} ENVELOPE {envelope} (KEY (key))") as sub:
        run_steps(conn, sub, _kv_store_steps(t, envelope == "DEBEZIUM"))
        if envelope == "UPSERT":
            assert sub.columns == ["mz_timestamp", "mz_state", "key", "value"]
        else:
            assert sub.columns == ["mz_timestamp", "mz_state", "key", "before_value", "after_value"]


def test_within_timestamp_order_by_defaults_and_mz_diff_desc(server, conn):
    """ASC puts NULLs last and DESC first (PostgreSQL's defaults); mz_diff DESC puts insertions first."""
    t = fresh("order_nulls")
    conn.execute(f"CREATE TABLE {t} (a int, b text)")
    conn.execute(f"INSERT INTO {t} VALUES (2, 'x'), (NULL, 'n'), (1, 'y')")
    with Sub(server, f"SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY a", "asc") as asc, \
            Sub(server, f"SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY a DESC", "dsc") as dsc, \
            Sub(server, f"SUBSCRIBE {t} WITHIN TIMESTAMP ORDER BY mz_diff DESC, a NULLS FIRST", "dif") as dif:
        assert [r[1:] for r in asc.take(3)] == [(1, 1, "y"), (1, 2, "x"), (1, None, "n")]
        assert [r[1:] for r in dsc.take(3)] == [(1, None, "n"), (1, 2, "x"), (1, 1, "y")]
        assert [r[1:] for r in dif.take(3)] == [(1, None, "n"), (1, 1, "y"), (1, 2, "x")]
        write(conn, f"UPDATE {t} SET a = a + 10 WHERE a IS NOT NULL", f"DELETE FROM {t} WHERE a IS NULL")
        assert [r[1:] for r in dif.take(5)] == [
            (1, 11, "y"), (1, 12, "x"), (-1, None, "n"), (-1, 1, "y"), (-1, 2, "x")]
        assert [r[1:] for r in asc.take(5)] == [
            (-1, 1, "y"), (-1, 2, "x"), (1, 11, "y"), (1, 12, "x"), (-1, None, "n")]


def test_envelope_keys_in_any_order_with_null_keys(server, conn):
    """KEY (b, a) on (a, v, b): keys in KEY order, values in relation order; NULL is a key value."""
    t = fresh("multi_key")
    conn.execute(f"CREATE TABLE {t} (a int, v text, b int, w int)")
    conn.execute(f"INSERT INTO {t} VALUES (1, 'p', 1, 0), (1, 'q', NULL, 0), (NULL, 'r', NULL, 0)")
    with Sub(server, f"SUBSCRIBE {t} ENVELOPE UPSERT (KEY (b, a))", "u") as up, \
            Sub(server, f"SUBSCRIBE {t} ENVELOPE DEBEZIUM (KEY (b, a))", "d") as dbz:
        assert [r[1:] for r in up.take(3)] == [
            ("upsert", 1, 1, "p", 0), ("upsert", None, 1, "q", 0), ("upsert", None, None, "r", 0)]
        assert [r[1:] for r in dbz.take(3)] == [
            ("insert", 1, 1, None, None, "p", 0), ("insert", None, 1, None, None, "q", 0),
            ("insert", None, None, None, None, "r", 0)]
        assert up.columns == ["mz_timestamp", "mz_state", "b", "a", "v", "w"]
        assert dbz.columns == ["mz_timestamp", "mz_state", "b", "a", "before_v", "before_w",
                               "after_v", "after_w"]
        write(conn, f"UPDATE {t} SET v = 'Q', w = 1 WHERE b IS NULL AND a = 1",
              f"DELETE FROM {t} WHERE a IS NULL")
        assert [r[1:] for r in up.take(2)] == [("upsert", None, 1, "Q", 1), ("delete", None, None, None, None)]
        assert [r[1:] for r in dbz.take(2)] == [
            ("upsert", None, 1, "q", 0, "Q", 1), ("delete", None, None, "r", 0, None, None)]


# --------------------------------------------------------------------------- PROGRESS


PROGRESS_COLUMNS = {
    "order_by": ["mz_timestamp", "mz_progressed", "mz_diff", "key", "value"],
    "upsert": ["mz_timestamp", "mz_progressed", "mz_state", "key", "value"],
    "debezium": ["mz_timestamp", "mz_progressed", "mz_state", "key", "before_value", "after_value"],
}
PROGRESS_DATA = {
    "order_by": ([(1, 1, 2), (1, 2, 4)], [(-1, 1, 2), (1, 1, 10)]),
    "upsert": ([("upsert", 1, 2), ("upsert", 2, 4)], [("upsert", 1, 10)]),
    "debezium": ([("insert", 1, None, 2), ("insert", 2, None, 4)], [("upsert", 1, 2, 10)]),
}


def _check_progress_stream(rows: list[tuple], width: int) -> None:
    """Progress rows null every other column; no data row is older than a progress row before it."""
    frontier = None
    for r in rows:
        assert len(r) == width
        if r[1]:
            assert all(v is None for v in r[2:]), r
            assert frontier is None or r[0] > frontier, "progress timestamps must increase"
            frontier = r[0]
        else:
            assert r[1] is False
            assert frontier is None or r[0] >= frontier, f"data row {r} after progress {frontier}"


def _data_then_progress(n: int):
    def done(rows: list[tuple]) -> bool:
        data = [x for x in rows if not x[1]]
        return len(data) >= n and rows[-1][1] and rows[-1][0] > max(x[0] for x in data)
    return done


def test_progress_with_each_mode_modifier_before_or_after_with(server, conn):
    t = fresh("progress_kv")
    conn.execute(f"CREATE TABLE {t} (key int, value int)")
    conn.execute(f"INSERT INTO {t} VALUES (1, 2), (2, 4)")
    subs = {}
    try:
        for kind, modifier in MODIFIERS.items():
            if kind == "order_by":
                modifier = "WITHIN TIMESTAMP ORDER BY key, mz_diff"
            subs[kind, "before"] = Sub(server, f"SUBSCRIBE {t} {modifier} WITH (PROGRESS)", f"{kind}_b")
            subs[kind, "after"] = Sub(server, f"SUBSCRIBE {t} WITH (PROGRESS = true) {modifier}", f"{kind}_a")
        snapshots = {}
        for (kind, where), sub in subs.items():
            rows = sub.until(_data_then_progress(len(PROGRESS_DATA[kind][0])), "a progress row after the snapshot")
            data = [r for r in rows if not r[1]]
            assert [r[2:] for r in data] == PROGRESS_DATA[kind][0], (kind, where)
            # Materialize: the first row is a progress row at the AS OF, the snapshot's timestamp.
            assert rows[0][1] and rows[0][0] == data[0][0], (kind, where, rows[:2])
            assert sub.columns == PROGRESS_COLUMNS[kind], (kind, where)
            snapshots[kind, where] = data[0][0]
            _check_progress_stream(rows, len(PROGRESS_COLUMNS[kind]))
            sub.rows = rows
        write(conn, f"UPDATE {t} SET value = 10 WHERE key = 1")
        update_stamps = set()
        for (kind, where), sub in subs.items():
            expected = PROGRESS_DATA[kind][1]
            rows = sub.until(_data_then_progress(len(expected)), "the update and a progress row past it")
            data = [r for r in rows if not r[1]]
            assert [r[2:] for r in data] == expected, (kind, where)
            assert len({r[0] for r in data}) == 1 and data[0][0] > snapshots[kind, where]
            update_stamps.add(data[0][0])
            _check_progress_stream(sub.rows + rows, len(PROGRESS_COLUMNS[kind]))
        assert len(update_stamps) == 1, "one write, one timestamp, whatever the output mode"
    finally:
        for sub in subs.values():
            sub.close()


# --------------------------------------------------------------------------- errors


# A second output modifier is a parse error in Materialize's grammar (one modifier, right after
# the relation or at the very end), with its wording.
ERRORS = [
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY (nope))", "42703", ['"nope"'], id="upsert-unknown-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE DEBEZIUM (KEY (key, nope))", "42703", ['"nope"'],
                 id="debezium-unknown-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY (key, value, key))", "42701", ['"key"'],
                 id="upsert-duplicate-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE DEBEZIUM (KEY (value, value))", "42701", ['"value"'],
                 id="debezium-duplicate-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY ())", "42601", ["ENVELOPE UPSERT", "KEY"],
                 id="upsert-empty-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE DEBEZIUM (KEY ())", "42601", ["ENVELOPE DEBEZIUM", "KEY"],
                 id="debezium-empty-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY (mz_diff))", "42703", ['"mz_diff"'],
                 id="upsert-mz_diff-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE DEBEZIUM (KEY (key, mz_diff))", "42703", ['"mz_diff"'],
                 id="debezium-mz_diff-key"),
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY (key)) WITHIN TIMESTAMP ORDER BY key", "42601",
                 ["Expected end of statement, found WITHIN"], id="upsert-then-order-by"),
    pytest.param("SUBSCRIBE kv WITHIN TIMESTAMP ORDER BY key WITH (PROGRESS) ENVELOPE DEBEZIUM (KEY (key))",
                 "42601", ["Expected end of statement, found ENVELOPE"], id="order-by-then-debezium"),
    pytest.param("SUBSCRIBE kv ENVELOPE DEBEZIUM (KEY (key)) WITHIN TIMESTAMP ORDER BY mz_diff", "42601",
                 ["Expected end of statement, found WITHIN"], id="debezium-order-by-mz_diff"),
    pytest.param("SUBSCRIBE kv WITHIN TIMESTAMP ORDER BY key, mz_diff ENVELOPE UPSERT (KEY (key))", "42601",
                 ["Expected end of statement, found ENVELOPE"], id="order-by-mz_diff-then-upsert"),
    pytest.param("SUBSCRIBE kv WITHIN TIMESTAMP ORDER BY key, nope DESC", "42703", ['"nope"'],
                 id="order-by-unknown-column"),
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY (key)) ENVELOPE DEBEZIUM (KEY (key))", "42601",
                 ["Expected end of statement, found ENVELOPE"], id="two-envelopes"),
    pytest.param("SUBSCRIBE kv ENVELOPE UPSERT (KEY (key)) WITH (PROGRESS) ENVELOPE UPSERT (KEY (value))",
                 "42601", ["ENVELOPE"], id="two-envelopes-around-with"),
    pytest.param("SUBSCRIBE kv WITHIN TIMESTAMP ORDER BY key WITHIN TIMESTAMP ORDER BY value", "42601",
                 ["Expected end of statement, found WITHIN"], id="two-order-bys"),
]


@pytest.mark.parametrize(("sql", "sqlstate", "fragments"), ERRORS)
def test_modifier_errors(server, conn, kv, sql, sqlstate, fragments):
    expect_error(conn, sql, sqlstate, *fragments)
    assert_usable(conn)
    # The same statement through DECLARE: the transaction fails, ROLLBACK recovers.
    conn.execute("BEGIN")
    expect_error(conn, f"DECLARE c CURSOR FOR {sql}", sqlstate, *fragments)
    conn.execute("ROLLBACK")
    assert_usable(conn)
    # As COPY (...) TO STDOUT, and through the extended protocol, which describes the SUBSCRIBE first.
    expect_copy_error(conn, sql, sqlstate, *fragments)
    assert_usable(conn)
    expect_stream_error(conn, sql, sqlstate, *fragments)
    assert_usable(conn)


def test_unknown_key_error_has_hint(server, conn, kv):
    err = expect_error(conn, "SUBSCRIBE kv ENVELOPE UPSERT (KEY (nope))", "42703", "nope")
    assert err.diag.message_hint and "key" in err.diag.message_hint.lower()


# --------------------------------------------------------------------------- flags


def _declare_and_fetch(conn: psycopg.Connection, sql: str) -> list[tuple]:
    with conn.transaction():
        conn.execute(f"DECLARE f CURSOR FOR {sql}")
        cur = conn.execute("FETCH ALL f WITH (timeout = '30s')")
        return cur.fetchall()


def test_flags_on_by_default(server, conn):
    for flag in FLAGS.values():
        assert conn.execute(f"SHOW {flag}").fetchall() == [("on",)]


@pytest.mark.parametrize("kind", list(FLAGS))
def test_flag_off_on_reset(server, conn, kv, kind):
    flag, modifier = FLAGS[kind], MODIFIERS[kind]
    sql = f"SUBSCRIBE kv {modifier}"
    assert len(_declare_and_fetch(conn, sql)) == 2
    try:
        assert conn.execute(f"ALTER SYSTEM SET {flag} = off").statusmessage == "ALTER SYSTEM"
        assert conn.execute(f"SHOW {flag}").fetchall() == [("off",)]
        # Every way of subscribing refuses, naming the flag.
        expect_error(conn, sql, "0A000", flag)
        expect_error(conn, f"SUBSCRIBE kv WITH (PROGRESS) {modifier}", "0A000", flag)
        with pytest.raises(psycopg.Error) as info:
            _declare_and_fetch(conn, sql)
        assert info.value.sqlstate == "0A000" and flag in info.value.diag.message_primary
        expect_copy_error(conn, sql, "0A000", flag)
        expect_stream_error(conn, sql, "0A000", flag)
        assert_usable(conn)
        # The other modifiers and plain SUBSCRIBE are unaffected.
        for other, other_modifier in MODIFIERS.items():
            if other != kind:
                assert len(_declare_and_fetch(conn, f"SUBSCRIBE kv {other_modifier}")) == 2
        assert len(_declare_and_fetch(conn, "SUBSCRIBE kv")) == 2

        conn.execute(f"ALTER SYSTEM SET {flag} = on")
        assert conn.execute(f"SHOW {flag}").fetchall() == [("on",)]
        assert len(_declare_and_fetch(conn, sql)) == 2

        conn.execute(f"ALTER SYSTEM SET {flag} TO false")
        expect_error(conn, sql, "0A000", flag)
        conn.execute(f"ALTER SYSTEM RESET {flag}")
        assert conn.execute(f"SHOW {flag}").fetchall() == [("on",)]
        assert len(_declare_and_fetch(conn, sql)) == 2
    finally:  # on a connection of its own: a failed check may have closed `conn`
        with psycopg.connect(server.dsn, autocommit=True) as other:
            other.execute(f"ALTER SYSTEM RESET {flag}")


def test_flag_errors(server, conn):
    flag = FLAGS["upsert"]
    expect_error(conn, f"ALTER SYSTEM SET {flag} = maybe", "22023", flag)
    expect_error(conn, f"ALTER SYSTEM SET {flag} = 2", "22023", flag)
    expect_error(conn, "ALTER SYSTEM SET enable_envelope_nonsense_in_subscribe = on", "42704",
                 "enable_envelope_nonsense_in_subscribe")
    expect_error(conn, "ALTER SYSTEM RESET enable_envelope_nonsense_in_subscribe", "42704",
                 "enable_envelope_nonsense_in_subscribe")
    assert conn.execute(f"SHOW {flag}").fetchall() == [("on",)]
    conn.execute("BEGIN")
    expect_error(conn, f"ALTER SYSTEM SET {flag} = off", "25001", "ALTER SYSTEM")
    conn.execute("ROLLBACK")
    assert conn.execute(f"SHOW {flag}").fetchall() == [("on",)]
    assert_usable(conn)


def test_flags_durable_across_restart():
    data_dir = tempfile.mkdtemp(prefix="sparkwire-flags-")
    order_by, upsert, debezium = FLAGS["order_by"], FLAGS["upsert"], FLAGS["debezium"]
    proc = ServerProcess(data_dir=data_dir)
    try:
        proc.start()
        with psycopg.connect(proc.dsn, autocommit=True, connect_timeout=60) as c:
            c.execute(f"ALTER SYSTEM SET {debezium} = off")
            c.execute(f"ALTER SYSTEM SET {order_by} = false")
            c.execute(f"ALTER SYSTEM SET {order_by} = on")
            # Enough further writes that the log is folded into a checkpoint
            # (spark_backend.storage.CHECKPOINT_EVERY): the flags must survive that too.
            with c.pipeline():
                for i in range(CHECKPOINT_EVERY + 10):
                    c.execute(f"ALTER SYSTEM SET {upsert} = {'off' if i % 2 else 'on'}")
            c.execute(f"ALTER SYSTEM RESET {upsert}")
        assert (Path(data_dir) / "checkpoint.json").exists()
        proc.stop()
        proc = ServerProcess(data_dir=data_dir)
        proc.start()
        with psycopg.connect(proc.dsn, autocommit=True, connect_timeout=60) as c:
            assert c.execute(f"SHOW {debezium}").fetchall() == [("off",)]
            assert c.execute(f"SHOW {order_by}").fetchall() == [("on",)]
            assert c.execute(f"SHOW {upsert}").fetchall() == [("on",)]
            c.execute("CREATE TABLE t (key int)")
            expect_error(c, "SUBSCRIBE t ENVELOPE DEBEZIUM (KEY (key))", "0A000", debezium)
            c.execute(f"ALTER SYSTEM RESET {debezium}")
            assert c.execute(f"SHOW {debezium}").fetchall() == [("on",)]
    finally:
        proc.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        Path(data_dir).parent.joinpath(f"{Path(data_dir).name}.log").unlink(missing_ok=True)


# --------------------------------------------------------------------------- metrics


def test_metrics_count_subscriptions_by_output_mode(server, conn, kv):
    text = server.metrics()
    assert "# TYPE sparkwire_subscriptions_total counter" in text
    modes = {
        "diffs": "SUBSCRIBE kv",
        "within_timestamp_order_by": f"SUBSCRIBE kv {MODIFIERS['order_by']}",
        "envelope_upsert": f"SUBSCRIBE kv {MODIFIERS['upsert']}",
        "envelope_debezium": f"SUBSCRIBE kv WITH (PROGRESS) {MODIFIERS['debezium']}",
    }
    for mode, sql in modes.items():
        before = subscriptions_total(server)
        _declare_and_fetch(conn, sql)
        after = subscriptions_total(server)
        assert after.get(mode, 0) == before.get(mode, 0) + 1, (mode, before, after)
        assert {m: v for m, v in after.items() if m != mode} == \
               {m: v for m, v in before.items() if m != mode}, mode
    # COPY counts too; a SUBSCRIBE that fails to plan does not.
    ts = int(_declare_and_fetch(conn, "SUBSCRIBE kv")[0][0])
    before = subscriptions_total(server)
    with watchdog(conn), conn.cursor().copy(f"COPY (SUBSCRIBE kv {MODIFIERS['upsert']} AS OF {ts} "
                                            f"UP TO {ts + 1}) TO STDOUT") as copy:
        assert len(list(copy.rows())) == 2
    expect_error(conn, "SUBSCRIBE kv ENVELOPE DEBEZIUM (KEY (nope))", "42703")
    after = subscriptions_total(server)
    assert after["envelope_upsert"] == before["envelope_upsert"] + 1
    assert after["envelope_debezium"] == before["envelope_debezium"]


# --------------------------------------------------------------------------- everywhere SUBSCRIBE works


EVERYWHERE = {
    "table": {
        "setup": ["CREATE TABLE {p}_t (k int, v text)", "INSERT INTO {p}_t VALUES (1, 'a'), (2, 'b')"],
        "relation": "{p}_t", "modifier": "ENVELOPE UPSERT (KEY (k))",
        "write": ["INSERT INTO {p}_t VALUES (3, 'c')"],
        "columns": ["mz_timestamp", "mz_state", "k", "v"],
        "steps": [[("upsert", 1, "a"), ("upsert", 2, "b")], [("upsert", 3, "c")]]},
    "view": {
        "setup": ["CREATE TABLE {p}_t (k int, v text)",
               "CREATE VIEW {p}_v AS SELECT k, max(v) AS top FROM {p}_t WHERE k > 0 GROUP BY k",
               "INSERT INTO {p}_t VALUES (1, 'a'), (-1, 'z'), (2, 'c')"],
        "relation": "{p}_v", "modifier": "ENVELOPE DEBEZIUM (KEY (k))",
        "write": ["INSERT INTO {p}_t VALUES (1, 'b'), (3, 'd'), (-2, 'q')"],
        "columns": ["mz_timestamp", "mz_state", "k", "before_top", "after_top"],
        "steps": [[("insert", 1, None, "a"), ("insert", 2, None, "c")],
               [("upsert", 1, "a", "b"), ("insert", 3, None, "d")]]},
    "join": {
        "setup": ["CREATE TABLE {p}_a (k int, v text)", "CREATE TABLE {p}_b (k int, w int)",
               "INSERT INTO {p}_a VALUES (1, 'x'), (2, 'y')", "INSERT INTO {p}_b VALUES (1, 10), (3, 30)"],
        "relation": "(SELECT a.k, a.v, b.w FROM {p}_a AS a JOIN {p}_b AS b ON a.k = b.k)",
        "modifier": "WITHIN TIMESTAMP ORDER BY k DESC, mz_diff",
        "write": ["INSERT INTO {p}_b VALUES (2, 20)", "INSERT INTO {p}_a VALUES (3, 'z')",
               "INSERT INTO {p}_b VALUES (1, 11)"],
        "columns": ["mz_timestamp", "mz_diff", "k", "v", "w"],
        "steps": [[(1, 1, "x", 10)], [(1, 3, "z", 30), (1, 2, "y", 20), (1, 1, "x", 11)]]},
    "join-upsert": {
        "setup": ["CREATE TABLE {p}_a (k int, v text)", "CREATE TABLE {p}_b (k int, w int)",
               "INSERT INTO {p}_a VALUES (1, 'x'), (2, 'y')", "INSERT INTO {p}_b VALUES (1, 10), (3, 30)"],
        "relation": "(SELECT a.k, a.v, b.w FROM {p}_a AS a JOIN {p}_b AS b ON a.k = b.k)",
        "modifier": "ENVELOPE UPSERT (KEY (k))",
        "write": ["INSERT INTO {p}_b VALUES (2, 20)", "INSERT INTO {p}_a VALUES (3, 'z')"],
        "columns": ["mz_timestamp", "mz_state", "k", "v", "w"],
        "steps": [[("upsert", 1, "x", 10)], [("upsert", 2, "y", 20), ("upsert", 3, "z", 30)]]},
    "aggregate": {
        "setup": ["CREATE TABLE {p}_g (g text, x int)", "INSERT INTO {p}_g VALUES ('a', 1), ('b', 2)"],
        "relation": "(SELECT g, count(*) AS n, sum(x) AS s FROM {p}_g GROUP BY g)",
        "modifier": "ENVELOPE UPSERT (KEY (g))",
        "write": ["INSERT INTO {p}_g VALUES ('a', 5), ('c', 7)"],
        "columns": ["mz_timestamp", "mz_state", "g", "n", "s"],
        "steps": [[("upsert", "a", 1, 1), ("upsert", "b", 1, 2)], [("upsert", "a", 2, 6), ("upsert", "c", 1, 7)]]},
}


@pytest.mark.parametrize("case", list(EVERYWHERE))
def test_works_everywhere_subscribe_does(server, conn, case):
    """Cursor + FETCH, COPY TO STDOUT, bare SUBSCRIBE (psql) and the extended protocol agree.

    The cursor follows the live writes; the others replay the same span with
    AS OF / UP TO (history is insert-only, so compaction keeps it readable).
    """
    spec = EVERYWHERE[case]
    p = fresh("everywhere")
    for sql in spec["setup"]:
        conn.execute(sql.format(p=p))
    relation, modifier = spec["relation"].format(p=p), spec["modifier"]
    with Sub(server, f"SUBSCRIBE {relation} {modifier}") as sub:
        first = sub.take(len(spec["steps"][0]))
        write(conn, *[s.format(p=p) for s in spec["write"]])
        second = sub.take(len(spec["steps"][1]))
        assert sub.fetch("1s") == []
        assert sub.columns == spec["columns"]
    t1, t2 = first[0][0], second[0][0]
    assert {r[0] for r in first} == {t1} and {r[0] for r in second} == {t2} and t2 > t1
    assert [r[1:] for r in first] == spec["steps"][0]
    assert [r[1:] for r in second] == spec["steps"][1]
    live = text_rows(first + second)

    query = f"SUBSCRIBE {relation} {modifier} AS OF {t1} UP TO {t2 + 1}"
    # COPY (SUBSCRIBE ...) TO STDOUT: a CopyOut stream that ends at UP TO.
    cur = conn.cursor()
    with watchdog(conn), cur.copy(f"COPY ({query}) TO STDOUT") as copy:
        copied = list(copy.rows())
    assert copied == live
    # A bare SUBSCRIBE from psql (it arrives as COPY data).
    done = subprocess.run(["psql", server.dsn, "-X", "-v", "ON_ERROR_STOP=1", "-c", query],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = [tuple(None if f == "\\N" else f for f in line.split("\t")) for line in done.stdout.splitlines()]
    assert lines == live
    # The extended protocol (Parse/Bind/Describe/Execute), typed values.
    cur = conn.cursor()
    with watchdog(conn):
        streamed = list(cur.stream(query))
    assert [d.name for d in cur.description] == spec["columns"]
    assert text_rows(streamed) == live
    assert streamed == first + second
    assert_usable(conn)


# --------------------------------------------------------------------------- randomized replay


_VALUES = st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.one_of(st.none(), st.sampled_from("abc")))
_OPS = st.one_of(
    st.tuples(st.just("insert"), _VALUES),
    st.tuples(st.just("update"), st.integers(0, 99), _VALUES),
    st.tuples(st.just("delete"), st.integers(0, 99)),
    st.tuples(st.just("rekey"), st.integers(0, 99)),
)
_TRANSACTIONS = st.lists(st.lists(_OPS, min_size=1, max_size=4), min_size=1, max_size=5)


def _lit(value) -> str:
    if value is None:
        return "NULL"
    return str(value) if isinstance(value, int) else f"'{value}'"


class Replay:
    """A subscription's UPSERT or DEBEZIUM output folded into a client-side key → value map."""

    def __init__(self, sub: Sub, debezium: bool) -> None:
        self.sub = sub
        self.debezium = debezium
        self.state: dict[int, tuple] = {}
        self.frontier = None  # the latest progress timestamp
        self.emitted: list[Decimal] = []  # data timestamps, in order

    def _is_marker(self, row: tuple, marker: int) -> bool:
        return not row[1] and row[3] == 0 and (row[6] if self.debezium else row[4]) == marker

    def advance(self, marker: int) -> Decimal:
        """Read until the marker row's new value and a progress row past it; apply; the timestamp."""
        def done(rows):
            hit = [r[0] for r in rows if self._is_marker(r, marker)]
            return bool(hit) and any(r[1] and r[0] > hit[0] for r in rows)

        rows = self.sub.until(done, f"marker {marker}")
        stamps = {r[0] for r in rows if not r[1]}
        assert len(stamps) == 1, f"one transaction, one timestamp: {rows}"
        for row in rows:
            ts, progressed, mz_state, key = row[:4]
            if progressed:
                assert all(v is None for v in row[2:]), row
                assert self.frontier is None or ts > self.frontier, row
                self.frontier = ts
                continue
            assert self.frontier is None or ts >= self.frontier, f"{row} is behind progress {self.frontier}"
            if not self.emitted or self.emitted[-1] != ts:
                self.emitted.append(ts)
            if self.debezium:
                before, after = row[4:6], row[6:8]
                if mz_state == "insert":
                    assert key not in self.state, row
                    self.state[key] = after
                elif mz_state == "upsert":
                    assert self.state.get(key) == before, (row, self.state.get(key))
                    self.state[key] = after
                elif mz_state == "delete":
                    assert self.state.get(key) == before and after == (None, None), row
                    del self.state[key]
                else:
                    raise AssertionError(f"unexpected {mz_state} with unique keys: {row}")
            else:
                if mz_state == "upsert":
                    self.state[key] = row[4:6]
                elif mz_state == "delete":
                    assert key in self.state and row[4:6] == (None, None), row
                    del self.state[key]
                else:
                    raise AssertionError(f"unexpected {mz_state} with unique keys: {row}")
        return stamps.pop()


# Few examples, no shrinking: each example costs seconds of Spark work; a failure
# still reports the transactions that produced it.
@settings(max_examples=3, deadline=None, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(transactions=_TRANSACTIONS)
def test_randomized_envelopes_replay_to_select_as_of(server, transactions):
    t = fresh("random_kv")
    # Key k sits between the value columns; key 0 is a marker whose v counts transactions,
    # so every transaction changes something and can be recognised in the output.
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {t} (v int, k int, s text)")
        c.execute(f"INSERT INTO {t} VALUES (0, 0, 'marker'), (1, 1, 'a'), (NULL, 2, NULL)")
        keys, next_key = [1, 2], 3
        subs = [Sub(server, f"SUBSCRIBE {t} ENVELOPE UPSERT (KEY (k)) WITH (PROGRESS)", "u"),
                Sub(server, f"SUBSCRIBE {t} WITH (PROGRESS) ENVELOPE DEBEZIUM (KEY (k))", "d")]
        try:
            replays = [Replay(subs[0], debezium=False), Replay(subs[1], debezium=True)]

            def check(marker: int) -> None:
                stamps = {r.advance(marker) for r in replays}
                assert len(stamps) == 1, stamps
                (ts,) = stamps
                rows = c.execute(f"SELECT k, v, s FROM {t} AS OF {ts}").fetchall()
                expected = {k: (v, s) for k, v, s in rows}
                assert len(expected) == len(rows), f"keys must be unique: {rows}"
                for r in replays:
                    assert r.state == expected, (("debezium" if r.debezium else "upsert"), ts)

            check(0)
            for marker, ops in enumerate(transactions, start=1):
                statements = []
                for op in ops:
                    if op[0] != "insert" and not keys:
                        op = ("insert", (None, None))
                    if op[0] == "insert":
                        (v, s) = op[1]
                        statements.append(f"INSERT INTO {t} VALUES ({_lit(v)}, {next_key}, {_lit(s)})")
                        keys.append(next_key)
                        next_key += 1
                        continue
                    key = keys[op[1] % len(keys)]
                    if op[0] == "update":
                        (v, s) = op[2]
                        statements.append(f"UPDATE {t} SET v = {_lit(v)}, s = {_lit(s)} WHERE k = {key}")
                    elif op[0] == "delete":
                        statements.append(f"DELETE FROM {t} WHERE k = {key}")
                        keys.remove(key)
                    else:
                        statements.append(f"UPDATE {t} SET k = {next_key} WHERE k = {key}")
                        keys[keys.index(key)] = next_key
                        next_key += 1
                statements.append(f"UPDATE {t} SET v = v + 1 WHERE k = 0")
                write(c, *statements)
                check(marker)
            assert replays[0].emitted == replays[1].emitted
            assert len(replays[0].emitted) == len(transactions) + 1
        finally:
            for sub in subs:
                sub.close()
