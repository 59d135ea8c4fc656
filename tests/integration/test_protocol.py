"""The pgwire protocol layer end to end: a real server process, real clients, real bytes.

Covers start-up (SSL/GSSENC refusal, missing user, unknown database, ParameterStatus,
BackendKeyData), the simple query protocol (several statements in one message, the
implicit transaction and its rollback), the extended protocol (psycopg text/binary
parameters and prepared statements, asyncpg, row-limited Execute / PortalSuspended),
ReadyForQuery transaction status, CancelRequest, malformed input, clients that vanish,
many concurrent connections, Terminate, SCRAM-SHA-256, and the psql binary.

One plain server for the module (the `server` fixture) and one started with
`$SPARKWIRE_PASSWORD` for the SCRAM tests.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import struct
import subprocess
import threading
import time

import asyncpg
import psycopg
import pytest
from psycopg import errors as pgerr
from psycopg import pq

from tests.support import ServerProcess, metric_sum, settled
from tests.wire import PROTOCOL_3, cstr, message, startup_packet

pytestmark = pytest.mark.slow

PSQL = "/usr/bin/psql"
PASSWORD = "s3cret"
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
INT4_OID, TEXT_OID = 23, 25


# --------------------------------------------------------------------------
# A tiny raw pgwire client: enough to send exact bytes and read every message back
# --------------------------------------------------------------------------


def query_msg(sql: str) -> bytes:
    return message(b"Q", cstr(sql))


def error_fields(payload: bytes) -> dict[str, str]:
    """The fields of an ErrorResponse/NoticeResponse body, by their one-letter code."""
    out = {}
    for part in payload.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode()
    return out


class Raw:
    """A socket speaking pgwire by hand."""

    def __init__(self, port: int, timeout: float = 120.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(f"connection closed with {len(self.buf)} of {n} bytes")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_message(self) -> tuple[bytes, bytes]:
        header = self.recv_exact(5)
        code, length = header[:1], struct.unpack("!i", header[1:])[0]
        return code, self.recv_exact(length - 4)

    def read_until(self, codes: bytes = b"Z") -> list[tuple[bytes, bytes]]:
        """Messages up to and including the first whose type is in `codes`."""
        out = []
        while True:
            msg = self.read_message()
            out.append(msg)
            if msg[0] in codes:
                return out

    def at_eof(self, timeout: float = 30.0) -> bool:
        """True if the server closes the connection (with nothing more to read)."""
        self.sock.settimeout(timeout)
        try:
            data = self.buf or self.sock.recv(65536)
        except ConnectionResetError:
            return True
        return data == b""

    def login(self, **params: str) -> list[tuple[bytes, bytes]]:
        self.send(startup_packet({"user": "materialize", "database": "materialize", **params}))
        return self.read_until(b"ZE")

    def close(self) -> None:
        self.sock.close()


def codes(messages: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(c for c, _ in messages)


def row_description(body: bytes) -> list[tuple[str, int, int]]:
    """(name, type oid, format code) of each field of a RowDescription."""
    count = struct.unpack("!h", body[:2])[0]
    pos, out = 2, []
    for _ in range(count):
        end = body.index(b"\0", pos)
        name = body[pos:end].decode()
        _table, _attnum, oid, _size, _typmod, fmt = struct.unpack("!ihihih", body[end + 1:end + 19])
        out.append((name, oid, fmt))
        pos = end + 19
    assert pos == len(body)
    return out


def raw_ready(server) -> Raw:
    raw = Raw(server.port)
    assert codes(raw.login())[-1:] == b"Z"
    return raw


def assert_server_alive(server) -> None:
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=10) as c:
        assert c.execute("SELECT 40 + 2").fetchone() == (42,)


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scram_server():
    """A second server that requires SCRAM-SHA-256 with password `s3cret`."""
    proc = ServerProcess(env={"SPARKWIRE_PASSWORD": PASSWORD}).start()
    try:
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(scope="module", autouse=True)
def _start_scram_early(request):
    """Once the main server is ready, start the SCRAM server: its Spark warms up while the
    other tests run (two Sparks starting at once on two cores slow each other down)."""
    if any("scram" in item.name for item in request.session.items if item.module is request.module):
        request.getfixturevalue("server")
        request.getfixturevalue("scram_server")


@pytest.fixture(scope="module")
def big(server):
    """A table of 300 000 rows; SLOW_SQL counts its join with 5 000 of them (1.5e9 pairs, ~20 s)."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE big (n int)")
        c.execute("INSERT INTO big SELECT generate_series(1, 300000)")
        assert c.execute("SELECT count(*) FROM big").fetchone() == (300000,)
    return "big"


# Slow, and still quick to cancel: the broadcast side is small, so Spark's tasks reach an
# interruption check between input batches.
SLOW_SQL = "SELECT count(*) FROM big a, big b WHERE b.n <= 5000 AND a.n + b.n > 0"


# A quick query over `big`: it queues behind any Spark job still running.
PROBE_SQL = "SELECT count(*) FROM big WHERE n <= 10"


def seconds(fn) -> float:
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def prompt(baseline: float) -> float:
    """A bound for 'about as fast as usual' that a ~20 s leftover Spark job would exceed."""
    return 8 + 4 * baseline


def sessions_gauge(server) -> float:
    return metric_sum(server.metrics(), "sparkwire_sessions")


def settled_sessions(server) -> float:
    """The open-sessions gauge once connections closed just before have been cleaned up."""
    return settled(lambda: sessions_gauge(server), polls=50)


def psql(server, *args: str, password: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PSQLRC"] = "/dev/null"
    if password is not None:
        env["PGPASSWORD"] = password
    return subprocess.run(
        [PSQL, "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize", "materialize", *args],
        check=False, env=env, capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------
# Start-up
# --------------------------------------------------------------------------


@pytest.mark.parametrize("code", [SSL_REQUEST, GSSENC_REQUEST], ids=["ssl", "gssenc"])
def test_encryption_requests_refused_then_startup_works(server, code):
    raw = Raw(server.port)
    try:
        raw.send(struct.pack("!ii", 8, code))
        assert raw.recv_exact(1) == b"N"
        msgs = raw.login()
        assert codes(msgs)[:1] == b"R" and msgs[0][1] == struct.pack("!i", 0)  # AuthenticationOk
        assert msgs[-1] == (b"Z", b"I")
        raw.send(query_msg("SELECT 5"))
        out = raw.read_until()
        assert codes(out) == b"TDCZ"
        assert out[1][1] == struct.pack("!hi", 1, 1) + b"5"
        assert out[2][1] == b"SELECT 1\0"
    finally:
        raw.close()


def test_ssl_then_gssenc_then_startup(server):
    """libpq with gssencmode=prefer and sslmode=prefer asks for both, in turn."""
    raw = Raw(server.port)
    try:
        raw.send(struct.pack("!ii", 8, GSSENC_REQUEST))
        assert raw.recv_exact(1) == b"N"
        raw.send(struct.pack("!ii", 8, SSL_REQUEST))
        assert raw.recv_exact(1) == b"N"
        assert raw.login()[-1] == (b"Z", b"I")
    finally:
        raw.close()


def test_startup_without_user_is_fatal_28000(server):
    raw = Raw(server.port)
    try:
        raw.send(startup_packet({"database": "materialize"}))
        code, body = raw.read_message()
        assert code == b"E"
        fields = error_fields(body)
        assert fields["S"] == "FATAL" and fields["C"] == "28000"
        assert "user" in fields["M"]
        assert raw.at_eof()
    finally:
        raw.close()


def test_unknown_database_3d000(server):
    # libpq does not keep the SQLSTATE of a failed connection: check the text there...
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(f"host=127.0.0.1 port={server.port} user=materialize dbname=nosuchdb")
    assert 'FATAL:  database "nosuchdb" does not exist' in str(info.value)

    async def via_asyncpg():
        with pytest.raises(asyncpg.exceptions.InvalidCatalogNameError) as err:
            await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="nosuchdb")
        return err.value.sqlstate

    # ...and the code with asyncpg and on the wire.
    assert asyncio.run(via_asyncpg()) == "3D000"
    raw = Raw(server.port)
    try:
        raw.send(startup_packet({"user": "materialize", "database": "other"}))
        code, body = raw.read_message()
        assert code == b"E" and error_fields(body)["C"] == "3D000"
        assert raw.at_eof()
    finally:
        raw.close()


def test_parameter_status_and_backend_key_data(server):
    with psycopg.connect(server.dsn + " application_name=proto_tests", autocommit=True) as c:
        info = c.info
        expected = {
            "server_version": "15.0",
            "server_encoding": "UTF8",
            "client_encoding": "UTF8",
            "DateStyle": "ISO, MDY",
            "TimeZone": "UTC",
            "integer_datetimes": "on",
            "standard_conforming_strings": "on",
            "application_name": "proto_tests",
        }
        assert {k: info.parameter_status(k) for k in expected} == expected
        pid = info.backend_pid
        assert isinstance(pid, int) and pid > 0
        assert info.server_version == 150000
        assert c.execute("SHOW application_name").fetchone() == ("proto_tests",)
        # SET of a reported variable sends a new ParameterStatus.
        c.execute("SET application_name = 'renamed'")
        assert info.parameter_status("application_name") == "renamed"
    with psycopg.connect(server.dsn, autocommit=True) as c2:
        assert c2.info.backend_pid != pid  # every connection gets its own key
        assert c2.info.parameter_status("application_name") == ""


def test_startup_raw_message_sequence(server):
    """R(Ok), ParameterStatus for each reported variable, one BackendKeyData, ReadyForQuery."""
    raw = Raw(server.port)
    try:
        msgs = raw.login(application_name="raw app")
        seq = codes(msgs)
        assert seq[:1] == b"R" and seq[-2:] == b"KZ" and set(seq[1:-2]) == {ord("S")}
        params = dict(tuple(p.decode() for p in body.split(b"\0")[:2]) for c, body in msgs if c == b"S")
        assert params["application_name"] == "raw app"
        assert params["server_encoding"] == "UTF8" and params["TimeZone"] == "UTC"
        key = dict(msgs)[b"K"]
        assert len(key) == 8
        pid, _secret = struct.unpack("!ii", key)
        assert pid > 0
    finally:
        raw.close()


def test_newer_protocol_minor_and_pq_options_are_negotiated(server):
    """A 3.2 StartupMessage with a _pq_ option gets NegotiateProtocolVersion(3.0, [option])."""
    raw = Raw(server.port)
    try:
        body = b"user\0materialize\0_pq_.frobnicate\0on\0\0"
        raw.send(struct.pack("!ii", len(body) + 8, PROTOCOL_3 | 2) + body)
        msgs = raw.read_until()
        assert msgs[0][0] == b"v"
        assert msgs[0][1] == struct.pack("!ii", PROTOCOL_3, 1) + b"_pq_.frobnicate\0"
        assert msgs[1] == (b"R", struct.pack("!i", 0))
        assert msgs[-1] == (b"Z", b"I")
        raw.send(query_msg("SELECT 'negotiated'"))
        assert codes(raw.read_until()) == b"TDCZ"
    finally:
        raw.close()


# --------------------------------------------------------------------------
# Simple query protocol
# --------------------------------------------------------------------------


def test_simple_query_several_statements_psycopg(conn):
    cur = conn.execute(
        "CREATE TABLE multi (a int, b text); "
        "INSERT INTO multi VALUES (1, 'one'), (2, 'two'); "
        "SELECT a, b FROM multi ORDER BY a; "
        "SELECT count(*) AS n FROM multi")
    results = []
    while True:
        results.append((cur.statusmessage, cur.fetchall() if cur.description else None))
        if not cur.nextset():
            break
    assert results == [
        ("CREATE TABLE", None),
        ("INSERT 0 2", None),
        ("SELECT 2", [(1, "one"), (2, "two")]),
        ("SELECT 1", [(2,)]),
    ]
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    # The implicit transaction committed: a new connection sees the rows.
    with psycopg.connect(conn.info.dsn, autocommit=True) as other:
        assert other.execute("SELECT a FROM multi ORDER BY a").fetchall() == [(1,), (2,)]


def test_simple_query_message_sequence_raw(server):
    raw = raw_ready(server)
    try:
        raw.send(query_msg("CREATE TABLE seqt (x int); INSERT INTO seqt VALUES (7), (8); "
                           "SELECT x FROM seqt ORDER BY x; SELECT 'a' AS s"))
        out = raw.read_until()
        assert codes(out) == b"CC" + b"TDDC" + b"TDC" + b"Z"
        assert [body for c, body in out if c == b"C"] == [
            b"CREATE TABLE\0", b"INSERT 0 2\0", b"SELECT 2\0", b"SELECT 1\0"]
        assert [body for c, body in out if c == b"D"] == [
            struct.pack("!hi", 1, 1) + b"7", struct.pack("!hi", 1, 1) + b"8", struct.pack("!hi", 1, 1) + b"a"]
        assert out[-1] == (b"Z", b"I")
        assert row_description(out[2][1]) == [("x", INT4_OID, 0)]
        assert row_description(out[6][1]) == [("s", TEXT_OID, 0)]
        # An empty query string: EmptyQueryResponse then ReadyForQuery.
        raw.send(query_msg(""))
        assert codes(raw.read_until()) == b"IZ"
        # Two Query messages in one write are answered in order, each with its ReadyForQuery.
        raw.send(query_msg("SELECT 'first'") + query_msg("SELECT 'second'"))
        first, second = raw.read_until(), raw.read_until()
        assert codes(first) == codes(second) == b"TDCZ"
        assert first[1][1].endswith(b"first") and second[1][1].endswith(b"second")
    finally:
        raw.close()


def test_error_mid_message_rolls_back_the_implicit_transaction(conn):
    conn.execute("CREATE TABLE atomic (n int)")
    conn.execute("INSERT INTO atomic VALUES (1)")
    with pytest.raises(pgerr.DivisionByZero) as info:
        conn.execute("INSERT INTO atomic VALUES (2); SELECT 1/0; INSERT INTO atomic VALUES (3)")
    assert info.value.sqlstate == "22012"
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    # Neither the INSERT before the error nor the one after it happened.
    assert conn.execute("SELECT n FROM atomic ORDER BY n").fetchall() == [(1,)]
    # A syntax error anywhere in the message: nothing runs at all.
    with pytest.raises(psycopg.Error) as info:
        conn.execute("INSERT INTO atomic VALUES (4); SELECT (1")
    assert info.value.sqlstate == "42601"
    assert conn.execute("SELECT n FROM atomic ORDER BY n").fetchall() == [(1,)]
    # And the session carries on with a fresh multi-statement message.
    cur = conn.execute("INSERT INTO atomic VALUES (5); SELECT sum(n) FROM atomic")
    assert cur.nextset() and cur.fetchall() == [(6,)]


def test_error_mid_message_raw_sequence(server):
    raw = raw_ready(server)
    try:
        raw.send(query_msg("CREATE TABLE atomic_raw (n int)"))
        assert codes(raw.read_until()) == b"CZ"
        raw.send(query_msg("INSERT INTO atomic_raw VALUES (1); SELECT 1/0; SELECT 99"))
        out = raw.read_until()
        assert codes(out) == b"CEZ"  # the statement after the error never ran
        assert error_fields(out[1][1])["C"] == "22012"
        assert error_fields(out[1][1])["S"] == "ERROR"
        assert out[-1] == (b"Z", b"I")
        raw.send(query_msg("SELECT count(*) FROM atomic_raw"))
        out = raw.read_until()
        assert codes(out) == b"TDCZ" and out[1][1] == struct.pack("!hi", 1, 1) + b"0"
    finally:
        raw.close()


# --------------------------------------------------------------------------
# Extended query protocol
# --------------------------------------------------------------------------


def test_psycopg_parameters_text_and_binary(conn):
    conn.execute("CREATE TABLE params (id int, name text, score double precision, ok boolean, born date)")
    rows = [(1, "ünïcode ✓", 1.5, True, datetime.date(2001, 2, 3)),
            (2, "two", -0.25, False, datetime.date(1999, 12, 31)),
            (3, None, None, None, None)]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO params VALUES (%s, %s, %s, %s, %s)", rows[:2])
        cur.execute("INSERT INTO params VALUES (%s, %s, %s, %s, %s)", rows[2], binary=True)
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute("SELECT id, name, score, ok, born FROM params WHERE id >= %s ORDER BY id", [1])
        assert cur.fetchall() == rows
        assert cur.pgresult.fformat(0) == (1 if binary else 0)
        cur.execute("SELECT %s::bigint * 2, %s::text || '!', %s::int + 1", [2**40, "hé", 41], binary=binary)
        assert cur.fetchone() == (2**41, "hé!", 42)
        cur.execute("SELECT name FROM params WHERE name = %s AND ok = %s", ["two", False], binary=binary)
        assert cur.fetchall() == [("two",)]
    # A bad parameter value is an error for that statement only.
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT %s::int", ["not a number"])
    assert info.value.sqlstate == "22P02"
    assert conn.execute("SELECT %s::int", ["12"]).fetchone() == (12,)


def test_psycopg_prepared_statements(conn):
    conn.execute("CREATE TABLE prep (k int, v text)")
    conn.execute("INSERT INTO prep VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    sql = "SELECT v FROM prep WHERE k = %s"
    got = [conn.execute(sql, [k], prepare=True).fetchall() for k in (1, 2, 3, 4)]
    assert got == [[("a",)], [("b",)], [("c",)], []]
    assert conn.execute(sql, [2], prepare=True, binary=True).fetchall() == [("b",)]
    # Prepared INSERTs with parameters.
    for k in (10, 11):
        conn.execute("INSERT INTO prep VALUES (%s, %s)", [k, f"v{k}"], prepare=True)
    assert conn.execute("SELECT k, v FROM prep WHERE k >= 10 ORDER BY k").fetchall() == [(10, "v10"), (11, "v11")]


def test_extended_protocol_raw_describe_and_portal_suspended(server, big):
    """Parse/Describe/Bind/Execute with a row limit: PortalSuspended, then the rest."""
    raw = raw_ready(server)
    try:
        sql = "SELECT n FROM big WHERE n <= $1 ORDER BY n"
        raw.send(message(b"P", cstr("s1") + cstr(sql) + struct.pack("!hi", 1, INT4_OID))
                 + message(b"D", b"S" + cstr("s1"))
                 + message(b"B", cstr("") + cstr("s1") + struct.pack("!hh", 1, 0)
                           + struct.pack("!hi", 1, 4) + b"1000" + struct.pack("!hh", 1, 1))
                 + message(b"D", b"P" + cstr(""))
                 + message(b"E", cstr("") + struct.pack("!i", 400))
                 + message(b"E", cstr("") + struct.pack("!i", 400))
                 + message(b"E", cstr("") + struct.pack("!i", 400))
                 + message(b"S"))
        out = raw.read_until()
        seq = codes(out)
        assert seq == b"1tT2T" + b"D" * 400 + b"s" + b"D" * 400 + b"s" + b"D" * 200 + b"CZ"
        assert out[1][1] == struct.pack("!hi", 1, INT4_OID)  # ParameterDescription
        assert row_description(out[2][1]) == [("n", INT4_OID, 0)]  # statement: formats unknown yet
        assert row_description(out[4][1]) == [("n", INT4_OID, 1)]  # portal: binary, as bound
        values = [struct.unpack("!hii", body)[2] for c, body in out if c == b"D"]  # binary int4
        assert values == list(range(1, 1001))
        assert out[-2] == (b"C", b"SELECT 200\0")
        assert out[-1] == (b"Z", b"I")
        # The named statement survives Sync and runs again with another parameter, text results.
        raw.send(message(b"B", cstr("") + cstr("s1") + struct.pack("!h", 0)
                         + struct.pack("!hi", 1, 1) + b"3" + struct.pack("!h", 0))
                 + message(b"E", cstr("") + struct.pack("!i", 0))
                 + message(b"C", b"S" + cstr("s1"))
                 + message(b"S"))
        out = raw.read_until()
        assert codes(out) == b"2DDDC3Z"
        assert [body for c, body in out if c == b"D"] == [struct.pack("!hi", 1, 1) + str(i).encode()
                                                          for i in (1, 2, 3)]
        # After Close it is gone: an error, then everything up to Sync is skipped.
        raw.send(message(b"B", cstr("") + cstr("s1") + struct.pack("!hh", 0, 0) + struct.pack("!h", 0))
                 + message(b"E", cstr("") + struct.pack("!i", 0))
                 + message(b"S"))
        out = raw.read_until()
        assert codes(out) == b"EZ"
        assert error_fields(out[0][1])["C"] == "26000"
    finally:
        raw.close()


def test_large_result_in_batches(server, big):
    """50 000 rows leave in several socket writes of DataRows; none is lost or reordered."""
    with psycopg.connect(server.dsn, autocommit=True) as c:
        for binary in (False, True):
            rows = c.execute("SELECT n, n * 2 AS m FROM big WHERE n <= 50000 ORDER BY n",
                             binary=binary).fetchall()
            assert len(rows) == 50000
            assert rows[0] == (1, 2) and rows[-1] == (50000, 100000)
            assert sum(n for n, _ in rows) == 50000 * 50001 // 2
            assert all(m == 2 * n for n, m in rows)


def test_named_portals_end_with_their_transaction(server):
    """A portal lives until its transaction ends: Sync outside BEGIN, or COMMIT."""
    def bind(portal: str, stmt: str) -> bytes:
        return message(b"B", cstr(portal) + cstr(stmt) + struct.pack("!hhh", 0, 0, 0))

    def execute(portal: str, max_rows: int) -> bytes:
        return message(b"E", cstr(portal) + struct.pack("!i", max_rows))

    raw = raw_ready(server)
    try:
        raw.send(message(b"P", cstr("two") + cstr("SELECT 1 AS n UNION ALL SELECT 2") + struct.pack("!h", 0))
                 + message(b"S"))
        assert codes(raw.read_until()) == b"1Z"
        # Inside BEGIN the portal stays suspended across Sync...
        raw.send(query_msg("BEGIN"))
        assert raw.read_until()[-1] == (b"Z", b"T")
        raw.send(bind("p1", "two") + execute("p1", 1) + message(b"S"))
        out = raw.read_until()
        assert codes(out) == b"2DsZ" and out[-1] == (b"Z", b"T")
        raw.send(execute("p1", 1) + message(b"S"))
        out = raw.read_until()
        assert codes(out) == b"DCZ" and out[0][1] == struct.pack("!hi", 1, 1) + b"2"
        raw.send(bind("p2", "two") + execute("p2", 1) + message(b"S"))
        assert codes(raw.read_until()) == b"2DsZ"
        # ...and is gone after COMMIT.
        raw.send(query_msg("COMMIT"))
        assert raw.read_until()[-1] == (b"Z", b"I")
        raw.send(execute("p2", 1) + message(b"S"))
        out = raw.read_until()
        assert codes(out) == b"EZ" and error_fields(out[0][1])["C"] == "34000"
        # Outside a transaction block, Sync ends the implicit transaction and the portal.
        raw.send(bind("p3", "two") + execute("p3", 1) + message(b"S"))
        assert codes(raw.read_until()) == b"2DsZ"
        raw.send(execute("p3", 1) + message(b"S"))
        out = raw.read_until()
        assert codes(out) == b"EZ" and error_fields(out[0][1])["C"] == "34000"
        # So the name can be bound again.
        raw.send(bind("p3", "two") + execute("p3", 0) + message(b"S"))
        assert codes(raw.read_until()) == b"2DDCZ"
    finally:
        raw.close()


def test_asyncpg_extended_protocol(server):
    async def main():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize",
                                  database="materialize")
        try:
            await c.execute("CREATE TABLE apg (id int, label text, weight double precision)")
            await c.executemany("INSERT INTO apg VALUES ($1, $2, $3)",
                                [(i, f"label {i}", i / 4) for i in range(1, 6)])
            stmt = await c.prepare("SELECT id, label, weight FROM apg WHERE id > $1 ORDER BY id")
            # From ParameterDescription and RowDescription (Describe of the statement).
            assert [t.name for t in stmt.get_parameters()] == ["int4"]
            assert [(a.name, a.type.name) for a in stmt.get_attributes()] == [
                ("id", "int4"), ("label", "text"), ("weight", "float8")]
            rows = await stmt.fetch(3)
            assert [tuple(r) for r in rows] == [(4, "label 4", 1.0), (5, "label 5", 1.25)]
            assert await stmt.fetchval(4) == 5
            assert await c.fetchval("SELECT $1::bigint * 3", 2**33) == 3 * 2**33
            assert await c.fetchrow("SELECT $1::text AS t, $2::boolean AS b, $3::date AS d",
                                    "x", True, datetime.date(2020, 2, 29)) == ("x", True, datetime.date(2020, 2, 29))
            assert await c.fetchval("SELECT count(*) FROM apg WHERE label = $1", "label 2") == 1
            with pytest.raises(asyncpg.exceptions.UndefinedTableError):
                await c.fetch("SELECT * FROM no_such_table WHERE x = $1", 1)
            assert await c.fetchval("SELECT 1") == 1  # usable after an error
        finally:
            await c.close()

    asyncio.run(main())


def test_asyncpg_cursor_prefetch_resumes_suspended_portal(server, big):
    async def main():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize",
                                  database="materialize")
        try:
            async with c.transaction():
                got = [r["n"] async for r in c.cursor("SELECT n FROM big WHERE n <= $1 ORDER BY n",
                                                      1000, prefetch=37)]
                assert got == list(range(1, 1001))
                cur = await c.cursor("SELECT n FROM big WHERE n <= 1000 ORDER BY n DESC")
                assert [r["n"] for r in await cur.fetch(5)] == [1000, 999, 998, 997, 996]
                assert len(await cur.fetch(90)) == 90
                assert (await cur.fetchrow())["n"] == 905
                assert [r["n"] for r in await cur.fetch(3)] == [904, 903, 902]
            assert c.is_in_transaction() is False
        finally:
            await c.close()

    asyncio.run(main())


# --------------------------------------------------------------------------
# ReadyForQuery transaction status
# --------------------------------------------------------------------------


def test_transaction_status(conn):
    info = conn.info
    assert info.transaction_status == pq.TransactionStatus.IDLE
    conn.execute("BEGIN")
    assert info.transaction_status == pq.TransactionStatus.INTRANS
    assert conn.execute("SELECT 1").fetchone() == (1,)
    assert info.transaction_status == pq.TransactionStatus.INTRANS
    with pytest.raises(pgerr.DivisionByZero):
        conn.execute("SELECT 1/0")
    assert info.transaction_status == pq.TransactionStatus.INERROR
    with pytest.raises(pgerr.InFailedSqlTransaction) as err:
        conn.execute("SELECT 1")
    assert err.value.sqlstate == "25P02"
    assert info.transaction_status == pq.TransactionStatus.INERROR
    conn.execute("ROLLBACK")
    assert info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("SELECT 2").fetchone() == (2,)
    # COMMIT of a failed transaction reports ROLLBACK.
    conn.execute("BEGIN")
    with pytest.raises(pgerr.DivisionByZero):
        conn.execute("SELECT 1/0")
    cur = conn.execute("COMMIT")
    assert cur.statusmessage == "ROLLBACK"
    assert info.transaction_status == pq.TransactionStatus.IDLE


def test_transaction_status_raw(server):
    raw = raw_ready(server)
    try:
        statuses = []
        for sql in ("BEGIN", "SELECT 1", "SELECT 1/0", "SELECT 1", "ROLLBACK", "SELECT 1"):
            raw.send(query_msg(sql))
            statuses.append(raw.read_until()[-1][1])
        assert statuses == [b"T", b"T", b"E", b"E", b"I", b"I"]
    finally:
        raw.close()


# --------------------------------------------------------------------------
# CancelRequest
# --------------------------------------------------------------------------


def test_cancel_request(server, big):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        baseline = seconds(lambda: c.execute(PROBE_SQL).fetchone())

        def cancel_soon():
            time.sleep(1.0)
            c.cancel_safe()

        thread = threading.Thread(target=cancel_soon)
        thread.start()
        started = time.monotonic()
        try:
            with pytest.raises(pgerr.QueryCanceled) as info:
                c.execute(SLOW_SQL)
        finally:
            thread.join()
        elapsed = time.monotonic() - started
        assert info.value.sqlstate == "57014"
        assert "canceling statement due to user request" in str(info.value)
        assert 0.9 < elapsed < 1 + prompt(baseline), elapsed  # uncancelled, it runs ~20 s
        assert c.info.transaction_status == pq.TransactionStatus.IDLE
        # The connection works, and promptly: the Spark job was really stopped.
        result = []
        took = seconds(lambda: result.append(c.execute(PROBE_SQL).fetchone()))
        assert result == [(10,)]
        assert took < prompt(baseline), (took, baseline)


def test_cancel_with_wrong_key_is_ignored(server):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        pid = c.info.backend_pid
        raw = Raw(server.port)
        try:
            raw.send(struct.pack("!iiii", 16, 80877102, pid, 12345))
            assert raw.at_eof()  # the server answers a CancelRequest by closing
        finally:
            raw.close()
        assert c.execute("SELECT 3").fetchone() == (3,)


# --------------------------------------------------------------------------
# Bad protocol input, vanishing clients
# --------------------------------------------------------------------------


@pytest.mark.parametrize("payload, fragment", [
    (b"y" + struct.pack("!i", 4), "invalid frontend message type"),
    (b"Q" + struct.pack("!i", -1), "length"),
    (b"Q" + struct.pack("!i", 2), "length"),
    (b"Q" + struct.pack("!i", 64 * 1024 * 1024 + 1), "exceeds"),
    (b"P" + struct.pack("!i", 0x7FFFFFFF), "exceeds"),
    (b"S" + struct.pack("!i", 100_000), "exceeds"),
], ids=["unknown-type", "negative-length", "short-length", "over-64MiB", "max-int", "huge-sync"])
def test_bad_message_gets_08P01_and_close(server, payload, fragment):
    raw = raw_ready(server)
    try:
        raw.send(payload)
        code, body = raw.read_message()
        assert code == b"E"
        fields = error_fields(body)
        assert fields["C"] == "08P01"
        assert fields["S"] == "FATAL"
        assert fragment in fields["M"]
        assert raw.at_eof()
    finally:
        raw.close()
    assert_server_alive(server)


def test_bad_startup_packets(server):
    packets = [
        struct.pack("!ii", 4, PROTOCOL_3),  # length smaller than the header
        struct.pack("!ii", -8, PROTOCOL_3),  # negative length
        struct.pack("!ii", 1_000_000, PROTOCOL_3),  # far over the startup packet limit
        struct.pack("!ii", 12, PROTOCOL_3) + b"ab\0\0",  # a parameter without a value
    ]
    for packet in packets:
        raw = Raw(server.port)
        try:
            raw.send(packet)
            code, body = raw.read_message()
            assert code == b"E" and error_fields(body)["C"] == "08P01", body
            assert raw.at_eof()
        finally:
            raw.close()
    # A wrong protocol major version is 0A000.
    raw = Raw(server.port)
    try:
        raw.send(struct.pack("!ii", 9, 2 << 16) + b"\0")
        code, body = raw.read_message()
        assert code == b"E" and error_fields(body)["C"] == "0A000"
    finally:
        raw.close()
    assert_server_alive(server)


def test_data_after_ssl_request_without_waiting_is_rejected(server):
    """Bytes pipelined behind an SSLRequest could be injected plaintext (CVE-2021-23214)."""
    raw = Raw(server.port)
    try:
        raw.send(struct.pack("!ii", 8, SSL_REQUEST) + startup_packet({"user": "materialize"}))
        # PostgreSQL answers 'N' and then the error; refusing at once is as good.
        first = raw.recv_exact(1)
        if first != b"N":
            raw.buf = first + raw.buf
        code, body = raw.read_message()
        assert code == b"E"
        fields = error_fields(body)
        assert (fields["S"], fields["C"]) == ("FATAL", "08P01")
        assert "unencrypted data after SSL request" in fields["M"]
        assert raw.at_eof()
    finally:
        raw.close()
    assert_server_alive(server)


def test_client_vanishes_mid_query(server, big):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        baseline = seconds(lambda: c.execute(PROBE_SQL).fetchone())
    sessions = settled_sessions(server)
    raw = raw_ready(server)
    assert sessions_gauge(server) == sessions + 1
    raw.send(query_msg(SLOW_SQL))
    time.sleep(1.0)
    raw.close()
    # The server notices at once and ends the session...
    deadline = time.monotonic() + 30
    while sessions_gauge(server) > sessions and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sessions_gauge(server) == sessions
    # ...carries on, and the abandoned query does not hog Spark.
    with psycopg.connect(server.dsn, autocommit=True) as c:
        result = []
        took = seconds(lambda: result.append(c.execute(PROBE_SQL).fetchone()))
        assert result == [(10,)]
        assert took < prompt(baseline), (took, baseline)
    # Vanishing between the startup packet and the first query is fine too.
    half = Raw(server.port)
    half.send(startup_packet({"user": "materialize"})[:10])
    half.close()
    assert_server_alive(server)


def test_terminate_closes_cleanly(server):
    raw = raw_ready(server)
    try:
        raw.send(query_msg("SELECT 1"))
        assert codes(raw.read_until()) == b"TDCZ"
        raw.send(message(b"X"))
        raw.sock.settimeout(30)
        assert raw.sock.recv(65536) == b""  # no error, no more messages: just EOF
    finally:
        raw.close()
    # psycopg's close() sends Terminate; the server is fine afterwards.
    c = psycopg.connect(server.dsn, autocommit=True)
    assert c.execute("SELECT 1").fetchone() == (1,)
    c.close()
    assert c.closed
    assert_server_alive(server)


# --------------------------------------------------------------------------
# Many connections
# --------------------------------------------------------------------------


def test_100_concurrent_connections(server):
    async def one(i: int):
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize",
                                  database="materialize", timeout=60)
        try:
            return await c.fetchval("SELECT $1::int * 2", i, timeout=120)
        finally:
            await c.close()

    async def main():
        return await asyncio.gather(*(one(i) for i in range(100)))

    started = time.monotonic()
    assert asyncio.run(main()) == [2 * i for i in range(100)]
    assert time.monotonic() - started < 90


# --------------------------------------------------------------------------
# SCRAM-SHA-256
# --------------------------------------------------------------------------


def test_scram_right_password(scram_server):
    dsn = scram_server.dsn + f" password={PASSWORD}"
    with psycopg.connect(dsn, autocommit=True, connect_timeout=120) as c:
        assert c.info.backend_pid > 0
        assert c.execute("SELECT 'scram ok'").fetchone() == ("scram ok",)


@pytest.mark.parametrize("password", ["wrong", PASSWORD + "x"], ids=["wrong", "longer"])
def test_scram_wrong_password_28P01(scram_server, password):
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(scram_server.dsn + f" password='{password}'", connect_timeout=30)
    # libpq keeps no SQLSTATE for a failed connection; asyncpg (below) and the raw test do.
    assert 'FATAL:  password authentication failed for user "materialize"' in str(info.value)


def test_scram_unknown_user_fails_the_same_way(scram_server):
    dsn = f"host=127.0.0.1 port={scram_server.port} user=nobody dbname=materialize password=nope"
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(dsn, connect_timeout=30)
    assert 'FATAL:  password authentication failed for user "nobody"' in str(info.value)


def test_scram_asyncpg(scram_server):
    async def main():
        with pytest.raises(asyncpg.exceptions.InvalidPasswordError) as err:
            await asyncpg.connect(host="127.0.0.1", port=scram_server.port, user="materialize",
                                  database="materialize", password="bad")
        assert err.value.sqlstate == "28P01"
        c = await asyncpg.connect(host="127.0.0.1", port=scram_server.port, user="materialize",
                                  database="materialize", password=PASSWORD, timeout=120)
        try:
            return await c.fetchval("SELECT $1::int + 1", 1, timeout=120)
        finally:
            await c.close()

    assert asyncio.run(main()) == 2


def test_scram_psql(scram_server):
    ok = psql(scram_server, "-c", "SELECT 1 AS one", password=PASSWORD, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == " one \n-----\n   1\n(1 row)\n\n"
    bad = psql(scram_server, "-c", "SELECT 1", password="nope")
    assert bad.returncode == 2
    assert 'password authentication failed for user "materialize"' in bad.stderr


# --------------------------------------------------------------------------
# The psql binary
# --------------------------------------------------------------------------


def test_psql_select_1(server):
    out = psql(server, "-c", "SELECT 1")
    assert out.returncode == 0, out.stderr
    assert out.stdout == " ?column? \n----------\n        1\n(1 row)\n\n"
    assert out.stderr == ""


def test_psql_table_output(server):
    out = psql(server, "-c", "SELECT 1 AS a, 'hello' AS b UNION ALL SELECT 22, 'x' ORDER BY a")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [" a  |   b   ", "----+-------", "  1 | hello", " 22 | x", "(2 rows)", ""]


def test_psql_script_with_errors(server, tmp_path):
    script = tmp_path / "script.sql"
    script.write_text("CREATE TABLE psql_t (n int);\n"
                      "INSERT INTO psql_t VALUES (1), (2);\n"
                      "SELECT 1/0;\n"
                      "SELECT * FROM psql_missing;\n"
                      "SELEC oops;\n"
                      "SELECT sum(n) AS total FROM psql_t;\n")
    out = psql(server, "-f", str(script))
    assert out.returncode == 0  # psql carries on after errors without ON_ERROR_STOP
    errors = [line for line in out.stderr.splitlines() if "ERROR:" in line]
    assert len(errors) == 3, out.stderr
    assert errors[0] == f"psql:{script}:3: ERROR:  division by zero"
    assert errors[1].startswith(f"psql:{script}:4: ERROR:  ")
    assert 'relation "psql_missing" does not exist' in errors[1]
    assert errors[2].startswith(f"psql:{script}:5: ERROR:  ")
    assert out.stdout.splitlines() == ["CREATE TABLE", "INSERT 0 2", " total ", "-------", "     3",
                                       "(1 row)", ""]
    script.write_text("SELECT 1/0;\nSELECT * FROM psql_missing;\n")
    stop = psql(server, "-v", "ON_ERROR_STOP=1", "-f", str(script))
    assert stop.returncode == 3  # the first error stops the script
    assert stop.stderr.strip() == f"psql:{script}:1: ERROR:  division by zero"


def test_scram_raw_exchange(scram_server):
    """AuthenticationSASL offers SCRAM-SHA-256; a wrong proof gets FATAL 28P01 and a close."""
    raw = Raw(scram_server.port)
    try:
        raw.send(startup_packet({"user": "materialize", "database": "materialize"}))
        code, body = raw.read_message()
        assert code == b"R" and body == struct.pack("!i", 10) + b"SCRAM-SHA-256\0\0"
        first = b"n,,n=,r=rOprNGfwEbeRWgbNEkqO"
        raw.send(message(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first))
        code, body = raw.read_message()
        assert code == b"R" and struct.unpack("!i", body[:4])[0] == 11  # SASLContinue
        server_first = dict(part.split(b"=", 1) for part in body[4:].split(b","))
        assert server_first[b"r"].startswith(b"rOprNGfwEbeRWgbNEkqO")
        assert int(server_first[b"i"]) >= 4096
        final = b"c=biws,r=" + server_first[b"r"] + b",p=" + b"A" * 43 + b"="
        raw.send(message(b"p", final))
        code, body = raw.read_message()
        assert code == b"E"
        fields = error_fields(body)
        assert (fields["S"], fields["C"]) == ("FATAL", "28P01")
        assert raw.at_eof()
    finally:
        raw.close()
