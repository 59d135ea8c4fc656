"""PostgreSQL sources end to end (issue 5): a real PostgreSQL 15, a real sparkwire, real clients.

One upstream (`PostgresServer`, wal_level=logical, run as the postgres user) and one
sparkwire server for the module. sparkwire connects as a password-authenticated
replication role `repl` (scram in pg_hba.conf), once directly (source `shop`) and once
through `Proxy`, a small TCP proxy in this file that can cut every connection, refuse
new ones for a while, or cut once a number of bytes went downstream (mid-snapshot).

Everything is checked against the upstream's own state: after writes upstream the
test takes `pg_current_wal_lsn()` and waits until the source's progress relation
(`SELECT lsn FROM <source>`) passes it, then compares full table contents as
multisets (so both loss and duplicates fail). The randomized oracle also checks,
through a SUBSCRIBE over both of its tables, that every timestamp sparkwire shows
is a state the upstream really had, in commit order.

The tests share state and run in file order: most bring their own upstream tables, and the
fault tests re-check the tables earlier tests left behind. The oracle's seed is random and
printed; SPARKWIRE_ORACLE_SEED=<seed> repeats a run.
"""

from __future__ import annotations

import collections
import math
import os
import random
import re
import secrets
import socket
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.pgserver import PG_BIN, PostgresServer
from tests.support import Subscriber, free_port, metric
from tests.support import wait_until as support_wait_until

pytestmark = pytest.mark.slow

PASSWORD = f"Pw-{secrets.token_hex(8)}-zQ"  # the repl role's password: must never show
WRONG_PASSWORD = f"Wrong-{secrets.token_hex(8)}-xY"
SEED = int(os.environ.get("SPARKWIRE_ORACLE_SEED", "0")) or random.SystemRandom().randrange(1, 10**9)

# Upstream tables: (name, columns). All REPLICA IDENTITY FULL unless named below.
UPSTREAM_TABLES = {
    "orders": "id int, status text, total numeric(10,2)",
    "customers": "id int, name text",
    "typed": ("id int, b bool, i2 int2, i4 int4, i8 int8, num numeric, num2 numeric(12,3), f4 float4, "
              "f8 float8, t text, vc varchar(20), ch char(5), by bytea, d date, tm time, ts timestamp, "
              "tstz timestamptz, iv interval, u uuid, js json, jb jsonb, ia int[], ta text[]"),
    "odd": "id int, n numeric, ts timestamp",
    "wide": "id int, n numeric",
    "ri": "id int PRIMARY KEY, v int",
    "pts": "id int, p point, q text",
    "docs": "id int, big text, n int",
    "events": "id int, v int",
    "ra": "k int, v int",
    "rb": "k int, v int",
    "dropme": "a int, b text, c int",
    "trunc_t": "id int",
    "k9": "id int, v int",
    "nofull": "id int",
    "unpub": "id int",
    "big": "id int, pad text",
    "fl": "id int, v int",
    "metered": "id int, v int",
}
NOT_FULL = {"nofull"}
SHOP_PUB = ["orders", "customers", "typed", "odd", "wide", "ri", "pts", "docs", "events", "ra", "rb", "dropme",
            "trunc_t", "k9", "nofull", "metered"]
FLAKY_PUB = ["big", "fl"]
BIG_ROWS = 60_000


def lsn_int(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


def wait_until(predicate, timeout: float, interval: float = 0.3, message: str = "condition"):
    return support_wait_until(predicate, timeout, interval, message)


# --------------------------------------------------------------------------- upstream


class Upstream:
    """The upstream PostgreSQL, as its superuser, over one (re-made when broken) connection."""

    def __init__(self, pg: PostgresServer) -> None:
        self.pg = pg
        self._conn: psycopg.Connection | None = None

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.pg.dsn, autocommit=True)

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self.connect()
        return self._conn

    def sql(self, query: str, params=None) -> list[tuple] | None:
        cur = self.conn.execute(query, params)
        return cur.fetchall() if cur.description else None

    def lsn(self) -> int:
        return lsn_int(self.sql("SELECT pg_current_wal_lsn()::text")[0][0])

    def slots(self) -> list[tuple[str, bool, bool]]:
        """(slot_name, temporary, active) of sparkwire's slots."""
        return self.sql("SELECT slot_name, temporary, active FROM pg_replication_slots "
                        "WHERE slot_name LIKE 'sparkwire%' ORDER BY 1")

    def restart(self) -> None:
        self.pg._run(f"{PG_BIN}/pg_ctl", "-D", self.pg.data, "-l", os.path.join(self.pg.dir, "log"),
                     "-m", "fast", "-w", "restart")
        self._conn = None


def _setup_upstream(pg: PostgresServer) -> None:
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        c.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{PASSWORD}'")
        c.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO repl")
        for name, cols in UPSTREAM_TABLES.items():
            c.execute(f"CREATE TABLE {name} ({cols})")
            if name not in NOT_FULL:
                c.execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
        c.execute(f"CREATE PUBLICATION shop_pub FOR TABLE {', '.join(SHOP_PUB)}")
        c.execute(f"CREATE PUBLICATION flaky_pub FOR TABLE {', '.join(FLAKY_PUB)}")
        c.execute("INSERT INTO orders VALUES (1, 'new', 9.99), (2, 'paid', 5), (3, 'new', NULL)")
        c.execute("INSERT INTO customers VALUES (1, 'ann'), (2, 'bob')")
        c.execute("INSERT INTO pts VALUES (1, '(1,2)', 'a'), (2, NULL, 'b')")
        c.execute("INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, %s) g", (BIG_ROWS,))
        # repl logs in with a password (the default rules trust everyone else).
        hba = Path(pg.data) / "pg_hba.conf"
        hba.write_text("host all repl 127.0.0.1/32 scram-sha-256\n"
                       "host replication repl 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        c.execute("SELECT pg_reload_conf()")


# --------------------------------------------------------------------------- the proxy


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of the upstream, with threads."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.socks: set[socket.socket] = set()
        self.refusing = False
        self.cut_at: int | None = None  # cut everything once this many bytes went downstream
        self.downstream = 0
        self.cuts = 0
        self.accepted = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.socks |= {client, upstream}
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, downstream: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                if downstream and self.cut_at is not None:
                    with self.lock:
                        self.downstream += len(data)
                        trigger = self.cut_at is not None and self.downstream >= self.cut_at
                        if trigger:
                            self.cut_at = None
                    if trigger:
                        self.cut_all()
                        return
        except OSError:
            pass
        finally:
            for s in (src, dst):
                self._kill(s)

    def _kill(self, s: socket.socket) -> None:
        with self.lock:
            self.socks.discard(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def cut_all(self) -> int:
        with self.lock:
            victims = list(self.socks)
            self.cuts += 1
        for s in victims:
            self._kill(s)
        return len(victims)

    def cut_after(self, nbytes: int) -> None:
        with self.lock:
            self.downstream = 0
            self.cut_at = nbytes

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.cut_all()


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def upstream():
    pg = PostgresServer()
    pg.start()
    try:
        _setup_upstream(pg)
        yield Upstream(pg)
    finally:
        pg.stop()


@pytest.fixture(scope="module")
def proxy(upstream):
    p = Proxy(upstream.pg.port)
    yield p
    p.close()


@pytest.fixture(scope="module")
def shop(server, upstream):
    """Secret, connection and the source `shop` (publication shop_pub), straight to upstream."""
    with sw(server) as c:
        c.execute(f"CREATE SECRET pgpass AS '{PASSWORD}'")
        c.execute(f"CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {upstream.pg.port}, "
                  "USER 'repl', PASSWORD SECRET pgpass, DATABASE 'postgres')")
        c.execute("CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'shop_pub')")
    return "shop"


@pytest.fixture(scope="module")
def flaky(server, upstream, proxy, shop):
    """The source `flaky` (publication flaky_pub), through the proxy."""
    with sw(server) as c:
        c.execute(f"CREATE CONNECTION viaproxy TO POSTGRES (HOST '127.0.0.1', PORT {proxy.port}, "
                  "USER 'repl', PASSWORD SECRET pgpass, DATABASE 'postgres')")
        c.execute("CREATE SOURCE flaky FROM POSTGRES CONNECTION viaproxy (PUBLICATION 'flaky_pub')")
    return "flaky"


ERRORS_SEEN: list[str] = []  # every error message a test provoked, checked for the password


def sw(server) -> psycopg.Connection:
    return psycopg.connect(server.dsn, autocommit=True)


def sw_run(conn: psycopg.Connection, query: str, timeout: float = 120.0) -> psycopg.Error | None:
    """Run a statement on a thread so a hang fails the test; its error, or None."""
    outcome: dict[str, BaseException | None] = {}

    def run() -> None:
        try:
            conn.execute(query)
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        conn.cancel()  # else closing the connection would wait for the statement forever
        thread.join(10)
        raise AssertionError(f"{query!r} still running after {timeout}s")
    err = outcome["error"]
    if err is not None and not isinstance(err, psycopg.Error):
        raise err
    return err


def sw_exec(conn: psycopg.Connection, query: str, timeout: float = 120.0) -> None:
    err = sw_run(conn, query, timeout)
    if err is not None:
        raise err


def sw_error(conn: psycopg.Connection, query: str, timeout: float = 60.0) -> psycopg.Error:
    """Run a statement that must fail (and must not hang); return its error."""
    err = sw_run(conn, query, timeout)
    assert err is not None, f"{query!r} should have failed"
    # What the server said (str(err) may also quote the statement back: libpq does that itself).
    d = err.diag
    ERRORS_SEEN.append(f"{d.message_primary} {d.message_detail or ''} {d.message_hint or ''} {d.context or ''}")
    return err


def source_lsn(conn: psycopg.Connection, source: str) -> int:
    rows = conn.execute(f"SELECT lsn FROM {source}").fetchall()
    assert len(rows) == 1, rows
    return int(rows[0][0])


def caught_up(server, upstream: Upstream, *sources: str, timeout: float = 90.0) -> int:
    """Wait until every source's progress passes upstream's current WAL position."""
    target = upstream.lsn()
    with sw(server) as c:
        for source in sources:
            wait_until(lambda s=source: source_lsn(c, s) >= target, timeout,
                       message=f"source {source} to reach LSN {target:X}; status "
                               f"{sources_status(c)}")
    return target


def sources_status(conn: psycopg.Connection) -> dict[str, tuple[str, str, str | None]]:
    return {name: (kind, status, error) for name, kind, status, error in conn.execute("SHOW SOURCES")}


def multiset(conn: psycopg.Connection, query: str) -> collections.Counter:
    return collections.Counter(tuple(r) for r in conn.execute(query).fetchall())


def assert_same(server, upstream: Upstream, ours: str, theirs: str, columns: str) -> int:
    """Our table equals the upstream table (projected to `columns`) as multisets."""
    with sw(server) as c:
        got = multiset(c, f"SELECT {columns} FROM {ours}")
    want = multiset(upstream.conn, f"SELECT {columns} FROM {theirs}")
    if got != want:
        missing, extra = want - got, got - want
        raise AssertionError(f"{ours} differs from upstream {theirs}: {sum(missing.values())} rows missing "
                             f"(e.g. {list(missing)[:5]}), {sum(extra.values())} extra or duplicated "
                             f"(e.g. {list(extra)[:5]})")
    return sum(want.values())


def log_size(server) -> int:
    return Path(server.log_path).stat().st_size


def log_since(server, offset: int) -> str:
    with open(server.log_path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


class Writer(threading.Thread):
    """Runs `step(conn, i)` upstream, one transaction each, until stopped."""

    def __init__(self, upstream: Upstream, step, pause: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.upstream, self.step, self.pause = upstream, step, pause
        self.stop_flag = threading.Event()
        self.count = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.upstream.connect() as conn:
                while not self.stop_flag.is_set():
                    with conn.transaction():
                        self.step(conn, self.count)
                    self.count += 1
                    time.sleep(self.pause)
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> int:
        self.stop_flag.set()
        self.join(30)
        if self.error is not None:
            raise self.error
        return self.count


# --------------------------------------------------------------------------- statements


def test_secrets_and_connections(server, upstream, shop):
    with sw(server) as c:
        c.execute(f"CREATE SECRET wrongpw AS '{WRONG_PASSWORD}'")
        port = upstream.pg.port
        # Checked on creation: a wrong password, port, host or database is a clear error.
        err = sw_error(c, f"CREATE CONNECTION bad TO POSTGRES (HOST '127.0.0.1', PORT {port}, USER 'repl', "
                          "PASSWORD SECRET wrongpw, DATABASE 'postgres')")
        assert "password authentication failed" in str(err), err
        assert err.sqlstate.startswith("08"), err.sqlstate
        err = sw_error(c, f"CREATE CONNECTION bad TO POSTGRES (HOST '127.0.0.1', PORT {free_port()}, "
                          "USER 'repl', PASSWORD SECRET pgpass, DATABASE 'postgres')")
        assert "refused" in str(err).lower(), err
        err = sw_error(c, f"CREATE CONNECTION bad TO POSTGRES (HOST 'nonexistent.invalid', PORT {port}, "
                          "USER 'repl', PASSWORD SECRET pgpass, DATABASE 'postgres')", timeout=30)
        assert "nonexistent.invalid" in str(err), err
        err = sw_error(c, f"CREATE CONNECTION bad TO POSTGRES (HOST '127.0.0.1', PORT {port}, USER 'repl', "
                          "PASSWORD SECRET pgpass, DATABASE 'nodb')")
        assert "nodb" in str(err), err
        err = sw_error(c, f"CREATE CONNECTION bad TO POSTGRES (HOST '127.0.0.1', PORT {port}, USER 'repl', "
                          "PASSWORD SECRET nosuchsecret, DATABASE 'postgres')")
        assert "nosuchsecret" in str(err), err
        # A literal password is refused, without echoing it.
        err = sw_error(c, f"CREATE CONNECTION bad TO POSTGRES (HOST '127.0.0.1', PORT {port}, USER 'repl', "
                          f"PASSWORD '{WRONG_PASSWORD}', DATABASE 'postgres')")
        assert WRONG_PASSWORD not in str(err)
        assert "bad" not in [r[0] for r in c.execute("SHOW CONNECTIONS")]
        # Secrets are never shown back.
        (_name, create_sql), = c.execute("SHOW CREATE CONNECTION pg").fetchall()
        assert 'PASSWORD SECRET "pgpass"' in create_sql or "PASSWORD SECRET pgpass" in create_sql, create_sql
        assert PASSWORD not in create_sql
        sw_error(c, f"CREATE SECRET pgpass AS '{PASSWORD}'")
        err = sw_error(c, f"CREATE SECRET s2 AS '{PASSWORD}' junk")
        assert err.sqlstate == "42601", err
        # In use → not dropped; unused → dropped.
        err = sw_error(c, "DROP SECRET pgpass")
        assert err.sqlstate == "2BP01", err
        c.execute("DROP SECRET wrongpw")
        secrets_now = [r[0] for r in c.execute("SHOW SECRETS")]
        assert "wrongpw" not in secrets_now and "pgpass" in secrets_now
        for e in ERRORS_SEEN:
            assert PASSWORD not in e and WRONG_PASSWORD not in e, e


def test_source_and_table_errors(server, upstream, shop):
    with sw(server) as c:
        err = sw_error(c, "CREATE SOURCE nope FROM POSTGRES CONNECTION pg (PUBLICATION 'no_such_pub')")
        assert "no_such_pub" in str(err), err
        err = sw_error(c, "CREATE TABLE t_bad FROM SOURCE shop (REFERENCE public.unpub)")
        assert "not in publication" in str(err) and "shop_pub" in str(err), err
        err = sw_error(c, "CREATE TABLE t_bad FROM SOURCE shop (REFERENCE public.no_such_table)")
        assert "no_such_table" in str(err) and err.sqlstate == "42P01", err
        err = sw_error(c, "CREATE TABLE t_bad FROM SOURCE shop (REFERENCE nofull)")
        assert "REPLICA IDENTITY FULL" in str(err), err
        assert "REPLICA IDENTITY FULL" in (err.diag.message_hint or ""), "the hint says how to fix it"
        err = sw_error(c, "CREATE TABLE t_bad (id, nosuchcol) FROM SOURCE shop (REFERENCE orders)")
        assert "nosuchcol" in str(err) and err.sqlstate == "42703", err
        err = sw_error(c, "CREATE TABLE t_bad FROM SOURCE no_such_source (REFERENCE orders)")
        assert "no_such_source" in str(err), err
        # An unsupported type: a clear error naming the column and its type, at CREATE TABLE.
        err = sw_error(c, "CREATE TABLE t_bad FROM SOURCE shop (REFERENCE pts)", timeout=20)
        assert '"p"' in str(err) and "point" in str(err), err
        assert "TEXT COLUMNS" in (err.diag.message_hint or "") + str(err)
        tables = [r[0] for r in c.execute("SHOW TABLES")]
        assert "t_bad" not in tables, "a failed CREATE TABLE leaves nothing behind"
        # ... or ingested as text.
        sw_exec(c, "CREATE TABLE pts FROM SOURCE shop (REFERENCE pts) WITH (TEXT COLUMNS (p))")
        got = c.execute("SELECT id, p, q FROM pts ORDER BY id").fetchall()
        assert got == [(1, "(1,2)", "a"), (2, None, "b")], got
        upstream.sql("INSERT INTO pts VALUES (3, '(-1.5,2e3)', 'c')")
        caught_up(server, upstream, "shop")
        assert_same(server, upstream, "pts", "pts", "id, p::text, q")
        (_, create_sql), = c.execute("SHOW CREATE TABLE pts").fetchall()
        assert "TEXT COLUMNS" in create_sql, create_sql


def test_snapshot_then_stream_and_statements(server, upstream, shop):
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE orders FROM SOURCE shop (REFERENCE public.orders)")
        sw_exec(c, "CREATE TABLE orders_narrow (id, total) FROM SOURCE shop (REFERENCE public.orders)")
        sw_exec(c, "CREATE TABLE customers FROM SOURCE shop (REFERENCE customers)")
        # The snapshot is there as soon as CREATE TABLE returns.
        assert multiset(c, "SELECT * FROM orders") == multiset(upstream.conn, "SELECT * FROM orders")
        assert [d.name for d in c.execute("SELECT * FROM orders_narrow").description] == ["id", "total"]
        lsn1 = source_lsn(c, "shop")
        assert [d.name for d in c.execute("SELECT * FROM shop").description] == ["lsn"]
        # Then the stream.
        upstream.sql("INSERT INTO orders VALUES (4, 'new', 1.25), (5, 'new', 100)")
        with upstream.conn.transaction():
            upstream.sql("UPDATE orders SET status = 'paid', total = total + 1 WHERE id IN (1, 4)")
            upstream.sql("DELETE FROM orders WHERE id = 2")
            upstream.sql("INSERT INTO customers VALUES (3, 'cy')")
        upstream.sql("UPDATE orders SET total = NULL WHERE id = 5")
        target = caught_up(server, upstream, "shop")
        lsn2 = source_lsn(c, "shop")
        assert lsn2 > lsn1 and lsn2 >= target
        assert_same(server, upstream, "orders", "orders", "id, status, total")
        assert_same(server, upstream, "orders_narrow", "orders", "id, total")
        assert_same(server, upstream, "customers", "customers", "id, name")

        status = sources_status(c)
        assert status["shop"][:2] == ("postgres", "running"), status
        for t in ("orders", "orders_narrow", "customers"):
            assert status[t][1] == "running" and status[t][2] is None, status
        (_, create_sql), = c.execute("SHOW CREATE SOURCE shop").fetchall()
        assert "FROM POSTGRES CONNECTION" in create_sql and "shop_pub" in create_sql, create_sql
        (_, create_sql), = c.execute("SHOW CREATE TABLE orders_narrow").fetchall()
        assert "(id, total)" in create_sql and "FROM SOURCE" in create_sql and "public.orders" in create_sql

        for stmt in ("INSERT INTO orders VALUES (99, 'x', 1)", "UPDATE orders SET total = 0",
                     "DELETE FROM orders WHERE id = 1", "INSERT INTO orders_narrow VALUES (99, 1)"):
            err = sw_error(c, stmt)
            assert "source" in str(err), err
        assert_same(server, upstream, "orders", "orders", "id, status, total")

    # One replication slot for the source, however many tables (no temporary slot left).
    slots = upstream.slots()
    assert len(slots) == 1 and slots[0][1] is False, slots


def test_types(server, upstream, shop):
    rows = [
        ("(1, true, 1, 2, 3, 1.5, 2.125, 1.25, 2.5, 'plain', 'vc', 'ab', '\\x00ff10'::bytea, '2024-02-29', "
        "'12:34:56.789', '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.5+02', "
        "'1 year 2 mons 3 days 04:05:06.789', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
        "'{\"a\": [1, 2.5, \"x\"]}', '{\"b\": {\"c\": null}, \"a\": true}', '{1,2,NULL}', "
        "'{\"x y\",\"q\\\"uote\",NULL,\"co,ma\",\"\"}')"),
        ("(2, false, -32768, -2147483648, -9223372036854775808, -12345678901234567.123456789, -0.001, "
        "'-Infinity', 'NaN', E'tab\\there\\nnewline \\\\ back \\\\N', 'ünïcödé ✓', 'x', '\\x5c0a094e'::bytea, "
        "'0001-01-01', '00:00:00', '1970-01-01 00:00:00', '1999-12-31 23:59:59.999999+00', "
        "'-1 day -00:00:01', '00000000-0000-0000-0000-000000000000', '[]', '[]', '{}', '{}')"),
        ("(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, NULL, NULL)"),
        ("(4, true, 32767, 2147483647, 9223372036854775807, 0.0000000001, 999999999.999, 3.4e38, 1e308, "
        "'', '', '', ''::bytea, '9999-12-31', '23:59:59.999999', '2038-01-19 03:14:08', "
        "'2200-04-11 23:47:16-07:30', '0', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '\"str\"', '123.5', "
        "'{-1}', '{\"NULL\",\"\\\\\\\\\",\"{}\"}')"),
    ]
    # Two rows in the snapshot (COPY's text format), two through the stream (pgoutput's).
    upstream.sql("INSERT INTO typed VALUES " + ", ".join(rows[:2]))
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE typed FROM SOURCE shop (REFERENCE typed)")
        upstream.sql("INSERT INTO typed VALUES " + ", ".join(rows[2:]))
        upstream.sql("UPDATE typed SET id = id + 10 WHERE id IN (1, 4)")  # old and new tuples
        caught_up(server, upstream, "shop")
        ours = c.execute("SELECT * FROM typed ORDER BY id")
        our_rows, our_types = ours.fetchall(), [(d.name, d.type_code) for d in ours.description]
        theirs = upstream.conn.execute("SELECT * FROM typed ORDER BY id")
        their_rows, their_types = theirs.fetchall(), [(d.name, d.type_code) for d in theirs.description]
    assert our_types == their_types
    assert len(our_rows) == len(their_rows) == 4, our_rows
    diffs = []
    for mine, up in zip(our_rows, their_rows):
        for (name, _), a, b in zip(their_types, mine, up):
            same = a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
            if not same:
                diffs.append((up[0], name, a, b))
    assert not diffs, "values differ (id, column, ours, upstream): " + "; ".join(map(repr, diffs))


def test_unrepresentable_values_error_the_table_not_the_source(server, upstream, shop):
    """numeric NaN, timestamp infinity, a plain numeric with more digits than sparkwire keeps:
    ingested right, or the table (not the source) errors; never silently changed."""
    upstream.sql("INSERT INTO odd VALUES (1, 'NaN', '2024-01-01'), (2, 1.5, 'infinity')")
    with sw(server) as c:
        try:
            sw_exec(c, "CREATE TABLE odd FROM SOURCE shop (REFERENCE odd)")
        except psycopg.Error as err:
            # Refused with a clear error (and nothing left behind), not a stalled source.
            assert "odd" in str(err), err
            assert "odd" not in [r[0] for r in c.execute("SHOW TABLES")]
            upstream.sql("DELETE FROM odd")
            sw_exec(c, "CREATE TABLE odd FROM SOURCE shop (REFERENCE odd)")
        sw_exec(c, "CREATE TABLE wide FROM SOURCE shop (REFERENCE wide)")
        upstream.sql("INSERT INTO odd VALUES (3, 'NaN', '2024-01-01'), (4, 2.5, '-infinity')")
        upstream.sql("INSERT INTO wide VALUES (1, 0.5), (2, 0.123456789012), (3, 1.000000000000)")
        upstream.sql("INSERT INTO customers VALUES (10, 'after-odd')")
        caught_up(server, upstream, "shop")
        status = sources_status(c)
        assert status["shop"][1] == "running", status
        for table, columns in (("odd", "id, n, ts"), ("wide", "id, n")):
            if status[table][1] == "running":
                assert_same(server, upstream, table, table, columns)
            else:
                assert status[table][1] == "stalled" and table in status[table][2], status
        assert_same(server, upstream, "customers", "customers", "id, name")


def test_toast_unchanged_value_on_update(server, upstream, shop):
    big = "SELECT string_agg(md5(random()::text || g::text), '') FROM generate_series(1, 400) g"  # ~12.8 kB
    upstream.sql(f"INSERT INTO docs VALUES (1, ({big}), 0), (2, 'small', 0)")
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE docs FROM SOURCE shop (REFERENCE docs)")
        upstream.sql(f"INSERT INTO docs VALUES (3, ({big}), 0)")
        # Updates that leave the TOASTed value alone: pgoutput sends it as 'unchanged'.
        upstream.sql("UPDATE docs SET n = n + 1")
        upstream.sql("UPDATE docs SET n = n + 1 WHERE id = 3")
        upstream.sql(f"UPDATE docs SET big = ({big}) WHERE id = 2")
        upstream.sql("UPDATE docs SET n = n + 10 WHERE id = 2")
        caught_up(server, upstream, "shop")
        assert upstream.sql("SELECT min(length(big)) FROM docs")[0][0] > 8000
        assert upstream.sql("SELECT count(*) FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid "
                            "WHERE c.relname = 'docs'")[0][0] == 1
    assert_same(server, upstream, "docs", "docs", "id, big, n")


def test_table_added_later_joins_without_gap_or_duplicate(server, upstream, shop):
    upstream.sql("INSERT INTO events SELECT g, 0 FROM generate_series(1, 200) g")

    def step(conn, i):
        n = 1000 + 2 * i
        conn.execute("INSERT INTO events VALUES (%s, 0), (%s, 0)", (n, n + 1))
        conn.execute("UPDATE events SET v = v + 1 WHERE id IN (%s, %s)", (i % 200 + 1, n - 2))
        if i % 3 == 0:
            conn.execute("DELETE FROM events WHERE id = %s", (n - 1,))

    writer = Writer(upstream, step)
    writer.start()
    try:
        time.sleep(0.5)
        with sw(server) as c:
            sw_exec(c, "CREATE TABLE events FROM SOURCE shop (REFERENCE events)")
        time.sleep(1.0)
    finally:
        n = writer.stop()
    assert n > 20, f"only {n} concurrent upstream transactions"
    caught_up(server, upstream, "shop")
    assert_same(server, upstream, "events", "events", "id, v")
    assert_same(server, upstream, "orders", "orders", "id, status, total")
    slots = upstream.slots()
    assert [s[1] for s in slots] == [False], f"one slot for the source, no temporary one left: {slots}"


class Subscription(Subscriber):
    """SUBSCRIBE (query) WITH (options); collects (ts, progressed, diff, row) of its data."""

    def __init__(self, server, query: str, options: str = "PROGRESS") -> None:
        super().__init__(server, f"SUBSCRIBE ({query}) WITH ({options})")
        self.rows: list[tuple[int, bool, int | None, tuple]] = []
        self.frontier = 0

    def fetch(self) -> None:
        for r in self.fetch_rows("0.5s"):
            ts, progressed, diff, data = int(r[0]), bool(r[1]), r[2], tuple(r[3:])
            if progressed:
                self.frontier = max(self.frontier, ts)
            else:
                assert ts >= self.frontier, f"data at {ts} below an announced frontier {self.frontier}"
                self.rows.append((ts, progressed, diff, data))

    def data(self) -> list[tuple[int, int, tuple]]:
        return [(ts, diff, row) for ts, _, diff, row in self.rows]

    def until(self, predicate, timeout: float, message: str) -> None:
        self.fetch_until(predicate, timeout, lambda: f"timed out waiting for {message}; got {self.rows[-10:]}")


def test_upstream_transaction_lands_at_one_timestamp(server, upstream, shop):
    sub = Subscription(server, "SELECT 'o' AS t, id FROM orders UNION ALL SELECT 'c' AS t, id FROM customers",
                       "SNAPSHOT = false, PROGRESS")
    try:
        sub.fetch()
        with upstream.conn.transaction():
            upstream.sql("INSERT INTO orders VALUES (1001, 'a', 1), (1002, 'b', 2), (1003, 'c', 3)")
            upstream.sql("INSERT INTO customers VALUES (1001, 'x'), (1002, 'y')")
            upstream.sql("UPDATE orders SET total = 7 WHERE id = 1001")
            upstream.sql("DELETE FROM customers WHERE id = 1002")
            upstream.sql("INSERT INTO customers VALUES (1003, 'z')")
        with upstream.conn.transaction():
            upstream.sql("DELETE FROM customers WHERE id = 1001")
            upstream.sql("DELETE FROM orders WHERE id = 1002")
        upstream.sql("INSERT INTO orders SELECT g, 'bulk', g FROM generate_series(2001, 2050) g")
        mine = lambda: [d for d in sub.data() if d[2][1] >= 1000]
        first = {("o", 1001): 1, ("o", 1002): 1, ("o", 1003): 1, ("c", 1001): 1, ("c", 1003): 1}
        second = {("c", 1001): -1, ("o", 1002): -1}
        third = {("o", g): 1 for g in range(2001, 2051)}

        def net(*parts: dict) -> dict:
            total: collections.Counter = collections.Counter()
            for part in parts:
                total.update(part)
            return {r: n for r, n in total.items() if n}

        sub.until(lambda: mine() and net(*({r: d} for _, d, r in mine())) == net(first, second, third)
                  and sub.frontier > max(t for t, _, _ in mine()), 60, "the three upstream transactions")
        by_ts = collections.defaultdict(collections.Counter)
        for ts, diff, row in mine():
            by_ts[ts][row] += diff
        batches = [{r: n for r, n in by_ts[ts].items() if n} for ts in sorted(by_ts)]
        # Never split, in commit order; transactions waiting together may share a timestamp.
        groupings = [[net(first), net(second), net(third)], [net(first, second), net(third)],
                     [net(first), net(second, third)], [net(first, second, third)]]
        assert batches in groupings, \
            f"each upstream transaction at exactly one mz_timestamp, in order; got {batches}"
    finally:
        sub.close()


def test_randomized_oracle(server, upstream, shop):
    """Random multi-table upstream transactions; every state sparkwire shows existed upstream."""
    rng = random.Random(SEED)
    print(f"oracle seed {SEED} (SPARKWIRE_ORACLE_SEED={SEED} to repeat)")
    model = {"a": collections.Counter(), "b": collections.Counter()}
    upstream.sql("INSERT INTO ra VALUES (1, 1), (2, 2), (2, 2)")
    upstream.sql("INSERT INTO rb VALUES (1, 10)")
    model["a"].update([(1, 1), (2, 2), (2, 2)])
    model["b"].update([(1, 10)])
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE ra FROM SOURCE shop (REFERENCE ra)")
        sw_exec(c, "CREATE TABLE rb FROM SOURCE shop (REFERENCE rb)")
    caught_up(server, upstream, "shop")

    def state() -> collections.Counter:
        out = collections.Counter()
        for t, rows in model.items():
            for (k, v), n in rows.items():
                if n:
                    out[(t, k, v)] += n
        return +out

    states = [state()]
    sub = Subscription(server, "SELECT 'a' AS t, k, v FROM ra UNION ALL SELECT 'b' AS t, k, v FROM rb")
    try:
        for batch in range(3):
            for _ in range(12):
                with upstream.conn.transaction():
                    for _ in range(rng.randint(1, 5)):
                        t = rng.choice("ab")
                        table = "r" + t
                        op = rng.random()
                        k = rng.randint(1, 6)
                        if op < 0.45:
                            v = rng.randint(0, 3)
                            n = rng.randint(1, 3)
                            upstream.sql(f"INSERT INTO {table} SELECT %s, %s FROM generate_series(1, %s)", (k, v, n))
                            model[t][(k, v)] += n
                        elif op < 0.75:
                            d = rng.randint(1, 2)
                            upstream.sql(f"UPDATE {table} SET v = v + %s WHERE k = %s", (d, k))
                            for (kk, vv), n in list(model[t].items()):
                                if kk == k and n:
                                    model[t][(kk, vv)] -= n
                                    model[t][(kk, vv + d)] += n
                        elif op < 0.95:
                            upstream.sql(f"DELETE FROM {table} WHERE k = %s", (k,))
                            for key in [key for key in model[t] if key[0] == k]:
                                del model[t][key]
                        else:
                            upstream.sql(f"UPDATE {table} SET k = k WHERE k = %s", (k,))  # a no-op change
                states.append(state())
            caught_up(server, upstream, "shop")
            union = "SELECT 'a', k, v FROM ra UNION ALL SELECT 'b', k, v FROM rb"
            assert multiset(upstream.conn, union) == states[-1], f"batch {batch}: the model is wrong (test bug)"
            with sw(server) as c:
                got = multiset(c, union)
            assert got == states[-1], (f"after batch {batch}: sparkwire differs from upstream: missing "
                                       f"{states[-1] - got}, extra {got - states[-1]}")

        # Every timestamp the subscription shows is an upstream state, in commit order.
        sub.until(lambda: sub.rows and sub.frontier > sub.rows[-1][0]
                  and _replay(sub.data())[-1][1] == states[-1], 60, "the subscription to catch up")
        position = 0
        for ts, seen in _replay(sub.data()):
            for j in range(position, len(states)):
                if states[j] == seen:
                    position = j
                    break
            else:
                raise AssertionError(f"at mz_timestamp {ts} sparkwire showed a state upstream never had "
                                     f"(after upstream transaction {position}): {sorted(seen.items())}")
        # Matching takes the earliest equal state, so a trailing no-op transaction leaves position
        # short of the end while the state shown is still the final one.
        assert states[position] == states[-1]
    finally:
        sub.close()


def _replay(data: list[tuple[int, int, tuple]]) -> list[tuple[int, collections.Counter]]:
    """The accumulated state at each timestamp of a subscription's output."""
    out: list[tuple[int, collections.Counter]] = []
    current: collections.Counter = collections.Counter()
    for ts in sorted({d[0] for d in data}):
        for t, diff, row in data:
            if t == ts:
                current[row] += diff
        assert all(n >= 0 for n in current.values()), f"negative multiplicity at {ts}"
        out.append((ts, +current))
    return out


def test_progress_while_published_tables_idle(server, upstream, shop):
    slot = upstream.slots()[0][0]
    caught_up(server, upstream, "shop")
    before = lsn_int(upstream.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                                  "WHERE slot_name = %s", (slot,))[0][0])
    upstream.sql("INSERT INTO unpub SELECT generate_series(1, 5000)")  # WAL, nothing published
    target = upstream.lsn()
    assert target > before

    def confirmed() -> int:
        return lsn_int(upstream.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                                    "WHERE slot_name = %s", (slot,))[0][0])

    wait_until(lambda: confirmed() >= target, 30, message=f"confirmed_flush_lsn to pass {target:X}")
    with sw(server) as c:
        wait_until(lambda: source_lsn(c, "shop") >= target, 30,
                   message="the source's progress relation to pass idle WAL")


def test_add_column_blue_green_swap(server, upstream, shop):
    slots_before = upstream.slots()
    upstream.sql("ALTER TABLE orders ADD COLUMN note text")
    upstream.sql("INSERT INTO orders VALUES (50, 'new', 50, 'with a note')")
    upstream.sql("UPDATE orders SET note = 'later' WHERE id = 1")
    caught_up(server, upstream, "shop")
    # Existing tables carry on with their columns.
    assert_same(server, upstream, "orders", "orders", "id, status, total")
    assert_same(server, upstream, "orders_narrow", "orders", "id, total")
    with sw(server) as c:
        assert sources_status(c)["orders"][1] == "running"
        offset = log_size(server)
        sw_exec(c, "CREATE TABLE orders_v2 FROM SOURCE shop (REFERENCE public.orders)")
        snapshots = [line for line in log_since(server, offset).splitlines() if "snapshot_start" in line]
        assert len(snapshots) == 1 and "tables=['public.orders']" in snapshots[0], \
            f"only the new table is snapshotted: {snapshots}"
        assert [d.name for d in c.execute("SELECT * FROM orders_v2").description] == \
            ["id", "status", "total", "note"]
        assert_same(server, upstream, "orders_v2", "orders", "id, status, total, note")
        assert [s[:2] for s in upstream.slots()] == [s[:2] for s in slots_before], "no new slot for the table"
        c.execute("ALTER TABLE orders SWAP WITH orders_v2")
        assert [d.name for d in c.execute("SELECT * FROM orders").description] == \
            ["id", "status", "total", "note"]
        assert [d.name for d in c.execute("SELECT * FROM orders_v2").description] == ["id", "status", "total"]
    upstream.sql("INSERT INTO orders VALUES (51, 'new', 51, 'after swap')")
    upstream.sql("UPDATE orders SET note = 'again' WHERE id = 50")
    caught_up(server, upstream, "shop")
    assert_same(server, upstream, "orders", "orders", "id, status, total, note")
    assert_same(server, upstream, "orders_v2", "orders", "id, status, total")


def test_show_create_after_swap_names_the_table(server, shop):
    with sw(server) as c:
        (_, create_sql), = c.execute("SHOW CREATE TABLE orders").fetchall()
    assert '"orders_v2"' not in create_sql, f"SHOW CREATE TABLE orders after the swap: {create_sql}"


def test_drop_column_errors_that_table_only(server, upstream, shop):
    upstream.sql("INSERT INTO dropme VALUES (1, 'one', 10), (2, 'two', 20)")
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE dc_full FROM SOURCE shop (REFERENCE dropme)")
        sw_exec(c, "CREATE TABLE dc_narrow (a, c) FROM SOURCE shop (REFERENCE dropme)")
        upstream.sql("ALTER TABLE dropme DROP COLUMN b")
        upstream.sql("INSERT INTO dropme VALUES (3, 30)")
        upstream.sql("UPDATE dropme SET c = c + 1 WHERE a = 1")
        upstream.sql("INSERT INTO customers VALUES (20, 'sibling')")
        caught_up(server, upstream, "shop")
        status = sources_status(c)
        assert status["dc_full"][1] == "stalled" and '"b"' in (status["dc_full"][2] or ""), status
        assert status["shop"][1] == "running", status
        assert status["customers"][1] == "running", status
    # A sibling on the same upstream table that does not use the column, and one on another table.
    assert_same(server, upstream, "dc_narrow", "dropme", "a, c")
    assert_same(server, upstream, "customers", "customers", "id, name")


def test_replica_identity_dropped_later(server, upstream, shop):
    """REPLICA IDENTITY FULL taken away upstream: updates come without old rows; never ingest them wrong."""
    upstream.sql("INSERT INTO ri VALUES (1, 1), (2, 2)")
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE ri FROM SOURCE shop (REFERENCE ri)")
        upstream.sql("ALTER TABLE ri REPLICA IDENTITY DEFAULT")  # the primary key
        upstream.sql("UPDATE ri SET v = v + 10")
        upstream.sql("DELETE FROM ri WHERE id = 2")
        upstream.sql("INSERT INTO customers VALUES (23, 'after-ri')")
        caught_up(server, upstream, "shop")
        status = sources_status(c)
        assert status["shop"][1] == "running", status
        if status["ri"][1] == "running":
            assert_same(server, upstream, "ri", "ri", "id, v")
        else:
            assert status["ri"][1] == "stalled" and "REPLICA IDENTITY" in status["ri"][2], status
    assert_same(server, upstream, "customers", "customers", "id, name")


def test_truncate_errors_that_table(server, upstream, shop):
    upstream.sql("INSERT INTO trunc_t VALUES (1), (2)")
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE trunc_t FROM SOURCE shop (REFERENCE trunc_t)")
        upstream.sql("TRUNCATE trunc_t")
        upstream.sql("INSERT INTO customers VALUES (21, 'after-truncate')")
        caught_up(server, upstream, "shop")
        status = sources_status(c)
        assert status["trunc_t"][1] == "stalled" and "TRUNCATE" in (status["trunc_t"][2] or ""), status
        assert status["shop"][1] == "running", status
    assert_same(server, upstream, "customers", "customers", "id, name")


def test_status_relation(server, shop):
    with sw(server) as c:
        rows = c.execute("SELECT name, type, status, error FROM mz_internal.mz_source_statuses").fetchall()
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["shop"][:2] == ("postgres", "running"), rows
    assert by_name["trunc_t"][1] == "stalled" and "TRUNCATE" in by_name["trunc_t"][2], rows
    assert by_name["dc_full"][1] == "stalled" and by_name["dc_narrow"][1] == "running", rows


def test_metrics_rows_ingested_and_wal_lag(server, upstream, shop):
    rows = {"source": "shop", "table": "metered"}
    lag = {"source": "shop", "table": "", "unit": "bytes"}
    upstream.sql("INSERT INTO metered SELECT g, 0 FROM generate_series(1, 500) g")
    text = server.metrics()
    assert "# TYPE sparkwire_source_rows_ingested_total counter" in text
    assert "# TYPE sparkwire_source_lag gauge" in text
    assert metric(text, "sparkwire_source_rows_ingested_total", **rows) is None
    offset = log_size(server)
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE metered FROM SOURCE shop (REFERENCE metered)")
        # Snapshot progress: rows copied of rows expected (counted in the snapshot itself).
        assert c.execute("SELECT snapshot_records_staged, snapshot_records_known FROM "
                         "mz_internal.mz_source_statuses WHERE name = 'metered'").fetchall() == [(500, 500)]
    assert re.search(r"event=snapshot_progress .*table=public\.metered copied=500 expected=500",
                     log_since(server, offset)), "snapshot progress logged"
    # The snapshot counts once it is durable, which CREATE TABLE waits for.
    assert metric(server.metrics(), "sparkwire_source_rows_ingested_total", **rows) == 500
    # Streamed: an insert is one update, an update a retraction and an insertion, a delete one.
    upstream.sql("INSERT INTO metered SELECT g, 0 FROM generate_series(501, 530) g")
    upstream.sql("UPDATE metered SET v = 1 WHERE id <= 10")
    upstream.sql("DELETE FROM metered WHERE id > 525")
    caught_up(server, upstream, "shop")
    assert metric(server.metrics(), "sparkwire_source_rows_ingested_total", **rows) == 500 + 30 + 2 * 10 + 5
    # Once idle, everything the walsender has sent is confirmed: no lag.
    wait_until(lambda: metric(server.metrics(), "sparkwire_source_lag", **lag) == 0, 60,
               interval=0.2, message="the WAL lag to return to 0")

    # A large transaction shows as lag, in bytes of its WAL, until it is durable.
    before = upstream.lsn()
    seen: list[float] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            value = metric(server.metrics(), "sparkwire_source_lag", **lag)
            if value is not None:
                seen.append(value)
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        upstream.sql("INSERT INTO metered SELECT g, 1 FROM generate_series(1001, 61000) g")
        after = upstream.lsn()
        caught_up(server, upstream, "shop")
        wait_until(lambda: metric(server.metrics(), "sparkwire_source_rows_ingested_total", **rows) == 555 + 60000,
                   60, interval=0.05, message="the big transaction counted")
        wait_until(lambda: seen and seen[-1] == 0, 60, interval=0.05, message="the lag back to 0")
    finally:
        done.set()
        watcher.join(10)
    assert all(v >= 0 for v in seen), seen
    # Bounded by the transaction's WAL, plus what the upstream writes on its own meanwhile
    # (autovacuum and analyze after 60k new rows, checkpoints): observed up to ~100 kB.
    assert 0 < max(seen) <= after - before + (1 << 20), (max(seen), after - before)
    assert_same(server, upstream, "metered", "metered", "id, v")


def test_drop_source(server, upstream, proxy, shop):
    with sw(server) as c:
        c.execute("CREATE SOURCE tmp_src FROM POSTGRES CONNECTION pg (PUBLICATION 'shop_pub')")
        sw_exec(c, "CREATE TABLE tmp_orders FROM SOURCE tmp_src (REFERENCE orders)")
        sw_exec(c, "CREATE TABLE tmp_customers FROM SOURCE tmp_src (REFERENCE customers)")
        slots = upstream.slots()
        assert [s[1] for s in slots] == [False, False], f"one slot per source: {slots}"
        assert_same(server, upstream, "tmp_orders", "orders", "id, status, total")
        c.execute("DROP TABLE tmp_customers")
        err = sw_error(c, "DROP SOURCE tmp_src")
        assert err.sqlstate == "2BP01", err
        assert "tmp_orders" in str(err), err
        c.execute("DROP SOURCE tmp_src CASCADE")
        tables = [r[0] for r in c.execute("SHOW TABLES")]
        assert "tmp_orders" not in tables and "tmp_customers" not in tables
        err = sw_error(c, "SELECT * FROM tmp_orders")
        assert err.sqlstate == "42P01"
        assert "tmp_src" not in sources_status(c)
        wait_until(lambda: len(upstream.slots()) == 1, 20, message="the dropped source's slot to go upstream")
        slots_left = upstream.slots()
        assert [s[0] for s in slots_left] in ([slots[0][0]], [slots[1][0]])
        # The remaining source is unaffected.
        upstream.sql("INSERT INTO customers VALUES (22, 'after-drop')")
        caught_up(server, upstream, "shop")
        assert_same(server, upstream, "customers", "customers", "id, name")

        # Upstream unreachable at DROP SOURCE: dropped here, and a warning names the slot left there.
        c.execute(f"CREATE CONNECTION tmp_conn TO POSTGRES (HOST '127.0.0.1', PORT {proxy.port}, "
                  "USER 'repl', PASSWORD SECRET pgpass, DATABASE 'postgres')")
        c.execute("CREATE SOURCE tmp_src2 FROM POSTGRES CONNECTION tmp_conn (PUBLICATION 'shop_pub')")
        sw_exec(c, "CREATE TABLE tmp_customers2 FROM SOURCE tmp_src2 (REFERENCE customers)")
        left = [s[0] for s in upstream.slots() if s[0] != slots_left[0][0]]
        assert len(left) == 1, upstream.slots()
        notices: list[str] = []
        c.add_notice_handler(lambda d: notices.append(f"{d.severity}: {d.message_primary}"))
        proxy.refusing = True
        proxy.cut_all()
        try:
            sw_exec(c, "DROP SOURCE tmp_src2 CASCADE")
        finally:
            proxy.refusing = False
        assert "tmp_src2" not in sources_status(c)
        assert any(left[0] in n and "WARNING" in n for n in notices), notices
        assert left[0] in [s[0] for s in upstream.slots()]
        upstream.sql("SELECT pg_drop_replication_slot(%s)", (left[0],))
        c.execute("DROP CONNECTION tmp_conn")


# --------------------------------------------------------------------------- faults


def test_connection_cut_mid_snapshot(server, upstream, proxy, flaky):
    cuts = proxy.cuts
    proxy.cut_after(256 * 1024)  # the COPY of `big` is ~3 MB
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE big FROM SOURCE flaky (REFERENCE big)")
        assert proxy.cuts == cuts + 1, "the snapshot's connection was cut"
        got = c.execute("SELECT count(*), count(DISTINCT id), sum(id), min(id), max(id) FROM big").fetchall()
    assert [tuple(int(x) for x in got[0])] == [(BIG_ROWS, BIG_ROWS, BIG_ROWS * (BIG_ROWS + 1) // 2, 1, BIG_ROWS)]
    # And a table added to the running source (its own temporary slot), cut mid-COPY too.
    proxy.cut_after(256 * 1024)
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE big_ids (id) FROM SOURCE flaky (REFERENCE big)")
        assert proxy.cuts == cuts + 2, "the later snapshot's connection was cut"
        got = c.execute("SELECT count(*), count(DISTINCT id), sum(id) FROM big_ids").fetchall()
    assert [tuple(int(x) for x in got[0])] == [(BIG_ROWS, BIG_ROWS, BIG_ROWS * (BIG_ROWS + 1) // 2)]
    upstream.sql("UPDATE big SET pad = 'x' WHERE id % 1000 = 0")
    upstream.sql("DELETE FROM big WHERE id % 997 = 0")
    caught_up(server, upstream, "flaky")
    assert_same(server, upstream, "big", "big", "id, pad")
    assert_same(server, upstream, "big_ids", "big", "id")
    slots = upstream.slots()
    assert len(slots) == 2 and not any(s[1] for s in slots), f"one slot per source: {slots}"


def test_connection_cut_mid_stream(server, upstream, proxy, flaky):
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE fl FROM SOURCE flaky (REFERENCE fl)")

    def step(conn, i):
        conn.execute("INSERT INTO fl VALUES (%s, 0), (%s, 0)", (2 * i, 2 * i + 1))
        conn.execute("UPDATE fl SET v = v + 1 WHERE id = %s", (i,))

    writer = Writer(upstream, step)
    writer.start()
    stalled = None
    offset = log_size(server)
    try:
        time.sleep(1.0)
        proxy.refusing = True
        proxy.cut_all()
        with sw(server) as c:
            deadline = time.monotonic() + 5  # unreachable for 5 s
            while time.monotonic() < deadline:
                status = sources_status(c)
                if status["flaky"][1] == "stalled":
                    stalled = status["flaky"]
                time.sleep(0.2)
        proxy.refusing = False
        for _ in range(2):
            time.sleep(1.5)
            proxy.cut_all()
        time.sleep(1.0)
    finally:
        proxy.refusing = False
        n = writer.stop()
    assert stalled is not None and stalled[2], "SHOW SOURCES shows the stall while upstream is unreachable"
    retries = [float(x) for x in re.findall(r"event=source_stalled source=flaky .*retry_in=([0-9.]+)",
                                           log_since(server, offset))]
    assert retries and max(retries) >= 2.0, f"retries back off while upstream stays unreachable: {retries}"
    assert n > 20
    caught_up(server, upstream, "flaky", "shop")
    with sw(server) as c:
        assert sources_status(c)["flaky"][1] == "running"
    assert_same(server, upstream, "fl", "fl", "id, v")
    assert_same(server, upstream, "big", "big", "id, pad")


def test_upstream_restart(server, upstream, proxy, flaky):
    upstream.sql("INSERT INTO fl VALUES (-1, -1)")
    upstream.sql("INSERT INTO customers VALUES (30, 'before restart')")
    offset = log_size(server)
    upstream.restart()
    upstream.sql("INSERT INTO fl VALUES (-2, -2)")
    with upstream.conn.transaction():
        upstream.sql("INSERT INTO customers VALUES (31, 'after restart')")
        upstream.sql("UPDATE orders SET status = 'restarted' WHERE id = 1")
    caught_up(server, upstream, "shop", "flaky")
    assert_same(server, upstream, "customers", "customers", "id, name")
    assert_same(server, upstream, "orders", "orders", "id, status, total, note")
    assert_same(server, upstream, "fl", "fl", "id, v")
    with sw(server) as c:
        status = sources_status(c)
    assert status["shop"][1] == "running" and status["flaky"][1] == "running", status
    assert "event=source_stalled source=shop" in log_since(server, offset), "the restart did cut the stream"


def test_kill9_and_restart_resumes(server, upstream, shop, flaky):
    with sw(server) as c:
        sw_exec(c, "CREATE TABLE k9 FROM SOURCE shop (REFERENCE k9)")
    durable_slots = lambda: [s[0] for s in upstream.slots() if not s[1]]
    slots_before = durable_slots()

    def step(conn, i):
        conn.execute("INSERT INTO k9 VALUES (%s, 0)", (i,))
        conn.execute("UPDATE k9 SET v = v + 1 WHERE id = %s", (i // 2,))
        conn.execute("INSERT INTO fl VALUES (%s, %s)", (100000 + i, i))

    writer = Writer(upstream, step, pause=0.005)
    writer.start()
    try:
        time.sleep(1.5)
        server.kill9()
        time.sleep(1.0)
    finally:
        n = writer.stop()
    assert n > 20
    server.log.close()
    offset = log_size(server)
    server.start()
    server.wait_ready()
    upstream.sql("INSERT INTO k9 VALUES (-1, -1)")
    caught_up(server, upstream, "shop", "flaky", timeout=120)
    assert "snapshot_start" not in log_since(server, offset), "resumed from the durable LSN, no new snapshot"
    assert_same(server, upstream, "k9", "k9", "id, v")
    assert_same(server, upstream, "fl", "fl", "id, v")
    assert_same(server, upstream, "orders", "orders", "id, status, total, note")
    assert_same(server, upstream, "orders_v2", "orders", "id, status, total")
    assert_same(server, upstream, "events", "events", "id, v")
    assert_same(server, upstream, "ra", "ra", "k, v")
    assert_same(server, upstream, "docs", "docs", "id, big, n")
    assert durable_slots() == slots_before and len(slots_before) == 2, "the restart kept its slots"
    with sw(server) as c:
        status = sources_status(c)
    assert status["dc_full"][1] == "stalled" and status["trunc_t"][1] == "stalled", "errors survive restart"
    assert status["dc_narrow"][1] == "running"


def test_secret_never_in_log(server):
    log_text = Path(server.log_path).read_text(errors="replace")
    assert "sparkwire" in log_text
    assert PASSWORD not in log_text and WRONG_PASSWORD not in log_text, "a secret leaked into the server log"
    for e in ERRORS_SEEN:
        assert PASSWORD not in e and WRONG_PASSWORD not in e, e
