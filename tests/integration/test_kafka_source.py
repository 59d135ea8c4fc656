"""Kafka sources end to end (issue 6): a real Kafka-protocol broker, a real
sparkwire server, real clients (confluent-kafka producing, psycopg reading).

One broker (`noida-db`, started here on a free port with a fresh data
directory) and one sparkwire server (restartable on its data directory) for
the module. Ingestion is asynchronous and slow on a loaded machine: every
check polls with a deadline instead of sleeping a fixed time.

Covers: CREATE CONNECTION ... TO KAFKA checked on creation; CREATE SOURCE ...
(TOPIC ...); the source relation's progress; multi-partition topics; KEY/VALUE
FORMAT TEXT, BYTES, JSON, CSV; INCLUDE metadata with and without AS; ENVELOPE
NONE and UPSERT; ENVELOPE UPSERT (ORDER BY (...)) with every example of the
upsert-order-by seed and its persisted-vs-incoming table; the issue's example
with SUBSCRIBE; the single-statement form (<name>_progress + <name>); decode
errors (error state per key, VALUE DECODING ERRORS = INLINE); START OFFSET and
START TIMESTAMP; exactly once
across kill -9; a broker outage (stalled, then resumed without loss); the
ORDER BY across a restart.

KEEP_KAFKA_TEST_DIRS=1 keeps the server's data directory and log for a look afterwards.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import Node, free_port, metric
from tests.support import error_of as refused
from tests.tls_proxy import Certificates, TlsProxy

NOIDA = Path(sys.executable).parent / "noida-db"
DISTINCT_RECORDS = "count(DISTINCT CAST(partition AS TEXT) || '/' || CAST(\"offset\" AS TEXT))"
OIDS = {16: "bool", 17: "bytea", 20: "bigint", 23: "integer", 25: "text", 1114: "timestamp", 3802: "jsonb"}


def rec(**fields) -> dict:
    """One record to produce: key, value, timestamp (ms), partition, headers."""
    return fields


def ts(ms: int) -> datetime.datetime:
    """A Kafka timestamp (ms since the epoch) as the naive UTC timestamp sparkwire returns."""
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


# -- the broker and the server ---------------------------------------------------------

class Broker:
    """`noida-db start --only kafka` in the foreground, restartable on the same data dir and port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="sparkwire-kafka-"))
        self.data_dir = self.base / "noida"
        self.proc: subprocess.Popen | None = None
        self.log = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> None:
        self.log = open(self.base / "noida.log", "ab")  # noqa: SIM115 - closed in stop()
        # Its own process group: the wrapper starts the real broker as a child.
        self.proc = subprocess.Popen(
            [str(NOIDA), "start", "--data-dir", str(self.data_dir), "--only", "kafka",
             "--kafka-port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"noida-db exited early:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"noida-db did not listen in time:\n{self.log_text()}") from None
                time.sleep(0.2)
        # Listening is not serving yet: wait for metadata.
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while True:
            try:
                admin.list_topics(timeout=5)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # The port must be free again before a restart on it.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    time.sleep(0.2)
            except OSError:
                break
        if self.log is not None:
            self.log.close()
            self.log = None

    def log_text(self) -> str:
        try:
            return (self.base / "noida.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def create_topic(self, name: str, partitions: int = 1) -> str:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                                config={"retention.ms": "-1"})])
        for f in futures.values():
            f.result(timeout=30)
        return name

    def send(self, topic: str, *records: dict) -> None:
        """Produce records (dicts of key, value, timestamp, partition, headers) and wait for the acks."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        failures = []

        def delivered(err, msg):
            if err is not None:
                failures.append(err)

        for r in records:
            while True:
                try:
                    producer.produce(topic, on_delivery=delivered, **r)
                    break
                except BufferError:  # the local queue is full (a slow broker): wait for acks first
                    producer.poll(1)
            producer.poll(0)
        assert producer.flush(60) == 0, "records not delivered in time"
        assert not failures, failures

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def broker():
    b = Broker()
    try:
        b.start()
        yield b
    finally:
        b.cleanup()


@pytest.fixture(scope="module")
def node(broker):
    n = Node(prefix="sparkwire-kafka-node-")
    try:
        n.start()
        with n.connect() as c:
            # The issue's connection, named as in its example.
            c.execute(f"CREATE CONNECTION kafka TO KAFKA (BROKER '{broker.bootstrap}')")
        yield n
    finally:
        # The data is thrown away: no need to wait for a clean shutdown.
        n.close(kill=True, keep_dir=bool(os.environ.get("KEEP_KAFKA_TEST_DIRS")))


@pytest.fixture
def conn(node):
    with node.connect() as c:
        yield c


@pytest.fixture(autouse=True)
def drop_sources_afterwards(node):
    """Each test's sources and tables go when it ends: idle consumers cost a loaded machine."""
    yield
    with node.connect() as c:
        for name, kind, *_ in c.execute("SHOW SOURCES").fetchall():
            if kind == "kafka":
                c.execute(f'DROP SOURCE IF EXISTS "{name}" CASCADE')
        left = c.execute("SHOW SOURCES").fetchall()
        assert left == [], f"DROP SOURCE ... CASCADE left {left}"


# -- waiting ------------------------------------------------------------------------

def eventually(check, what: str, timeout: float = 60.0):
    """Poll `check` until it returns something truthy; its last result or error explains a timeout."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
            if result:
                return result
            last = result
        except (psycopg.Error, AssertionError) as exc:
            last = exc
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
        time.sleep(0.75)  # each poll is a Spark query competing with ingestion for the cores


def wait_rows(conn, sql: str, expected: list[tuple], timeout: float = 60.0) -> None:
    last: list = []

    def check():
        nonlocal last
        last = conn.execute(sql).fetchall()
        return last == expected

    try:
        eventually(check, f"{sql!r} to return {expected!r}", timeout)
    except pytest.fail.Exception:
        assert last == expected
        raise


def read_error(conn, sql: str) -> psycopg.Error | None:
    try:
        conn.execute(sql).fetchall()
    except psycopg.Error as exc:
        return exc
    return None


def wait_error(conn, sql: str, *fragments: str, timeout: float = 60.0) -> psycopg.Error:
    """Wait until reading fails with an error whose message contains every fragment."""
    def check():
        err = read_error(conn, sql)
        return err if err is not None and all(f in str(err) for f in fragments) else None

    last = None

    def check_noting():
        nonlocal last
        last = read_error(conn, sql)
        return check()

    try:
        return eventually(check_noting, f"{sql!r} to fail mentioning {fragments}", timeout)
    except pytest.fail.Exception:
        raise AssertionError(f"{sql!r} never failed mentioning {fragments}; last error: {last}") from None


def columns(conn, relation: str) -> list[tuple[str, str]]:
    cur = conn.execute(f"SELECT * FROM {relation} LIMIT 0")
    return [(d.name, OIDS.get(d.type_code, str(d.type_code))) for d in cur.description]


def source_rows(conn) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in conn.execute("SHOW SOURCES").fetchall()}


# -- connections and sources -------------------------------------------------------------

def test_connection_is_checked_on_creation(conn, broker):
    dead = f"127.0.0.1:{free_port()}"
    with pytest.raises(psycopg.Error) as exc:
        conn.execute(f"CREATE CONNECTION dead TO KAFKA (BROKER '{dead}')")
    assert "cannot reach Kafka broker" in str(exc.value) and dead in str(exc.value)
    assert exc.value.sqlstate == "08006"
    names = [r[0] for r in conn.execute("SHOW CONNECTIONS").fetchall()]
    assert "dead" not in names and "kafka" in names
    # Without validation it is created (and the broker is only contacted by a source).
    conn.execute(f"CREATE CONNECTION dead_unchecked TO KAFKA (BROKER '{dead}') WITH (VALIDATE = false)")
    # Security options are passed through to the client: PLAINTEXT works against the test broker.
    conn.execute(f"CREATE CONNECTION kplain TO KAFKA (BROKER '{broker.bootstrap}', "
                 "SECURITY PROTOCOL = 'PLAINTEXT')")
    with pytest.raises(psycopg.Error, match="(?i)unrecognized CONNECTION option"):
        conn.execute(f"CREATE CONNECTION kbad TO KAFKA (BROKER '{broker.bootstrap}', FLAVOR 'x')")


def test_tls_and_client_certificates_reach_the_broker(conn, broker):
    """SSL options hold PEM text or secrets, as in Materialize, and the connection check
    makes a real TLS handshake: server verification against the CA given, and a client
    certificate when the broker asks for one (a TLS proxy in front of the test broker)."""
    certs = Certificates()
    proxies = [TlsProxy(("127.0.0.1", broker.port), certs, require_client_cert=need) for need in (False, True)]
    plain, mutual = proxies
    try:
        conn.execute(f"CREATE SECRET tls_key AS '{certs.pem('client.key')}'")
        ca = certs.pem("ca.crt")
        conn.execute(f"CREATE CONNECTION k_tls TO KAFKA (BROKER '{plain.address}', SECURITY PROTOCOL 'ssl', "
                     f"SSL CERTIFICATE AUTHORITY '{ca}')")
        assert plain.clients == [None] * len(plain.clients) and plain.clients
        conn.execute(f"CREATE SECRET tls_ca AS '{ca}'")
        conn.execute(f"CREATE CONNECTION k_mtls TO KAFKA (BROKER '{mutual.address}', SECURITY PROTOCOL 'SSL', "
                     f"SSL CERTIFICATE AUTHORITY SECRET tls_ca, SSL CERTIFICATE '{certs.pem('client.crt')}', "
                     "SSL KEY SECRET tls_key)")
        assert mutual.clients and set(mutual.clients) == {"sparkwire"}
        # The broker's certificate is not signed by the CA given: refused, naming the broker.
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(f"CREATE CONNECTION k_wrong_ca TO KAFKA (BROKER '{plain.address}', "
                         f"SECURITY PROTOCOL 'SSL', SSL CERTIFICATE AUTHORITY '{certs.pem('other_ca.crt')}')")
        assert exc.value.sqlstate == "08006" and plain.address in str(exc.value)
        # The broker asks for a client certificate and none is given.
        failures = len(mutual.failures)
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(f"CREATE CONNECTION k_no_cert TO KAFKA (BROKER '{mutual.address}', "
                         f"SECURITY PROTOCOL 'SSL', SSL CERTIFICATE AUTHORITY '{ca}')")
        assert exc.value.sqlstate == "08006" and len(mutual.failures) > failures
        # Bad options are refused before anything is contacted.
        bad = {
            "SECURITY PROTOCOL 'TLS'": "invalid SECURITY PROTOCOL 'TLS': expected one of PLAINTEXT, SSL",
            "SASL MECHANISMS 'GSSAPI'": "invalid SASL MECHANISMS 'GSSAPI'",
            "SSL KEY 'inline'": "SSL KEY must name a secret",
            "SASL PASSWORD 'inline'": "SASL PASSWORD must name a secret",
            "SSL KEY SECRET tls_key": "SSL CERTIFICATE and SSL KEY must be given together",
            "SSL KEY SECRET no_such_secret": 'unknown secret "no_such_secret"',
            "SECURITY PROTOCOL SECRET tls_key": "SECURITY PROTOCOL cannot be a secret",
        }
        for option, message in bad.items():
            err = refused(conn, f"CREATE CONNECTION k_bad TO KAFKA (BROKER '{plain.address}', {option})")
            assert message in str(err) and err.sqlstate in ("22023", "42704"), (option, err.sqlstate, str(err))
        names = [r[0] for r in conn.execute("SHOW CONNECTIONS").fetchall()]
        assert "k_tls" in names and "k_mtls" in names and not {"k_wrong_ca", "k_no_cert", "k_bad"} & set(names)
        for name in ("k_tls", "k_mtls"):
            conn.execute(f"DROP CONNECTION {name}")
        for name in ("tls_key", "tls_ca"):
            conn.execute(f"DROP SECRET {name}")
    finally:
        for proxy in proxies:
            proxy.close()
        certs.cleanup()


def test_sasl_plain_reaches_the_broker(conn, broker):
    """SASL options reach the broker. With SASL_PLAINTEXT and PLAIN, which the test broker
    offers (taking any credentials), a table ingests over the authenticated connection; a
    mechanism the broker does not offer is refused when the connection is created, naming
    the broker. SASL options without a SECURITY PROTOCOL mean SASL_SSL, as in Materialize
    (refused here: the broker has no TLS), and missing or misplaced ones are refused before
    anything is contacted."""
    broker.create_topic("sasl")
    broker.send("sasl", rec(key=b"k", value=b"over sasl"))
    conn.execute("CREATE SECRET sasl_pw AS 'secret-password'")
    sasl = "SASL USERNAME 'sparkwire', SASL PASSWORD SECRET sasl_pw"
    try:
        conn.execute(f"CREATE CONNECTION k_sasl TO KAFKA (BROKER '{broker.bootstrap}', "
                     f"SECURITY PROTOCOL 'SASL_PLAINTEXT', SASL MECHANISMS 'PLAIN', {sasl})")
        conn.execute("CREATE SOURCE sasl_src FROM KAFKA CONNECTION k_sasl (TOPIC 'sasl')")
        conn.execute("CREATE TABLE sasl_t FROM SOURCE sasl_src (REFERENCE sasl) KEY FORMAT TEXT VALUE FORMAT TEXT "
                     "ENVELOPE UPSERT")
        wait_rows(conn, "SELECT key, text FROM sasl_t", [("k", "over sasl")])
        bad = {
            f"SECURITY PROTOCOL 'SASL_PLAINTEXT', SASL MECHANISMS 'SCRAM-SHA-256', {sasl}":
                ("08006", f"cannot reach Kafka broker {broker.bootstrap}"),
            f"SASL MECHANISMS 'PLAIN', {sasl}": ("08006", f"cannot reach Kafka broker {broker.bootstrap}"),
            "SECURITY PROTOCOL 'SASL_PLAINTEXT', SASL MECHANISMS 'PLAIN'":
                ("22023", "SECURITY PROTOCOL SASL_PLAINTEXT needs SASL USERNAME, SASL PASSWORD"),
            f"SECURITY PROTOCOL 'sasl_ssl', {sasl}": ("22023", "SECURITY PROTOCOL SASL_SSL needs SASL MECHANISMS"),
            f"SECURITY PROTOCOL 'PLAINTEXT', SASL MECHANISMS 'PLAIN', {sasl}":
                ("22023", "SASL MECHANISMS needs SECURITY PROTOCOL SASL_PLAINTEXT or SASL_SSL, not PLAINTEXT"),
        }
        for options, (state, fragment) in bad.items():
            err = refused(conn, f"CREATE CONNECTION k_sasl_bad TO KAFKA (BROKER '{broker.bootstrap}', {options})")
            assert err.sqlstate == state and fragment in str(err), (options, str(err))
        assert conn.execute("SELECT key, text FROM sasl_t").fetchall() == [("k", "over sasl")]
    finally:
        conn.execute("DROP SOURCE IF EXISTS sasl_src CASCADE")
        conn.execute("DROP CONNECTION IF EXISTS k_sasl")
        conn.execute("DROP SECRET IF EXISTS sasl_pw")


def test_source_needs_an_existing_topic(conn, broker):
    broker.create_topic("present")
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("CREATE SOURCE nope FROM KAFKA CONNECTION kafka (TOPIC 'absent')")
    assert 'topic "absent" does not exist' in str(exc.value)
    with pytest.raises(psycopg.Error, match="TOPIC"):
        conn.execute("CREATE SOURCE nope FROM KAFKA CONNECTION kafka")
    with pytest.raises(psycopg.Error, match="(?i)unrecognized KAFKA source option"):
        conn.execute("CREATE SOURCE nope FROM KAFKA CONNECTION kafka (TOPIC 'present', COLOR 'red')")
    with pytest.raises(psycopg.Error, match="unknown connection"):
        conn.execute("CREATE SOURCE nope FROM KAFKA CONNECTION missing (TOPIC 'present')")
    assert "nope" not in source_rows(conn)
    conn.execute("CREATE SOURCE present FROM KAFKA CONNECTION kafka (TOPIC 'present')")
    with pytest.raises(psycopg.Error, match='reads topic "present"'):
        conn.execute("CREATE TABLE wrong_ref FROM SOURCE present (REFERENCE other) FORMAT TEXT")


def test_start_offset_and_start_timestamp(conn, broker):
    broker.create_topic("starts", 2)
    broker.send("starts", *[rec(key=b"k", value=f"a{i}".encode(), partition=0, timestamp=1000 + i) for i in range(5)],
                *[rec(key=b"k", value=f"b{i}".encode(), partition=1, timestamp=2000 + i) for i in range(3)])
    read = 'SELECT partition, "offset" FROM {} ORDER BY 1, 2'

    def records(p0: range, p1: range) -> list[tuple[int, int]]:
        return [(0, o) for o in p0] + [(1, o) for o in p1]

    # START OFFSET: the first offset to read in partitions 0, 1, ...; the source relation
    # shows it as the next offset before anything is read.
    conn.execute("CREATE SOURCE s_list FROM KAFKA CONNECTION kafka (TOPIC 'starts', START OFFSET (3, 1))")
    conn.execute("CREATE TABLE t_list FROM SOURCE s_list (REFERENCE starts) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, read.format("t_list"), records(range(3, 5), range(1, 3)))
    wait_rows(conn, read.format("s_list"), [(0, 5), (1, 3)])
    # Fewer offsets than partitions: the others from their first; Materialize's [ ] and = spelling.
    conn.execute("CREATE SOURCE s_one FROM KAFKA CONNECTION kafka (TOPIC 'starts', START OFFSET = [4])")
    conn.execute("CREATE TABLE t_one FROM SOURCE s_one (REFERENCE starts) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, read.format("t_one"), records(range(4, 5), range(3)))
    # The single-statement form takes it too.
    conn.execute("CREATE SOURCE s_single FROM KAFKA CONNECTION kafka (TOPIC 'starts', START OFFSET 2) "
                 "FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, read.format("s_single"), records(range(2, 5), range(3)))

    # START TIMESTAMP: per partition the first record at or after it, or the end.
    conn.execute("CREATE SOURCE s_ts FROM KAFKA CONNECTION kafka (TOPIC 'starts', START TIMESTAMP 1003)")
    conn.execute("CREATE TABLE t_ts FROM SOURCE s_ts (REFERENCE starts) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, read.format("t_ts"), records(range(3, 5), range(3)))
    conn.execute("CREATE SOURCE s_late FROM KAFKA CONNECTION kafka (TOPIC 'starts', START TIMESTAMP 2001)")
    # Negative: that many milliseconds before now (these records are from 1970).
    conn.execute("CREATE SOURCE s_recent FROM KAFKA CONNECTION kafka (TOPIC 'starts', START TIMESTAMP -60000)")
    # Resolved once, when the source is created: a table made after more records arrive
    # starts where the source said, not at the new end.
    now = int(time.time() * 1000)
    broker.send("starts", rec(key=b"k", value=b"a5", partition=0, timestamp=900),
                rec(key=b"k", value=b"b3", partition=1, timestamp=now))
    conn.execute("CREATE TABLE t_late FROM SOURCE s_late (REFERENCE starts) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, read.format("t_late"), records(range(5, 6), range(1, 4)))
    conn.execute("CREATE TABLE t_recent FROM SOURCE s_recent (REFERENCE starts) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, read.format("t_recent"), records(range(5, 6), range(3, 4)))

    bad = {
        "START OFFSET (-1)": ("22023", "-1"),
        "START OFFSET ('x')": ("22023", "'x'"),
        "START OFFSET ()": ("22023", "at least one"),
        "START OFFSET (1.5)": ("22023", "1.5"),
        "START OFFSET (7, 0)": ("22023", "START OFFSET 7 for partition 0 of topic \"starts\" is past its end (offset 6)"),
        "START OFFSET (1), START TIMESTAMP 5": ("22023", "both START OFFSET and START TIMESTAMP"),
        "START TIMESTAMP 'yesterday'": ("22023", "START TIMESTAMP must be an integer"),
        "START OFFSET (1), START OFFSET (2)": ("22023", "more than once"),
        "GROUP ID PREFIX 'mine-'": ("0A000", "GROUP ID PREFIX is not supported"),
        "START OFFSET (0 1)": ("42601", "syntax error"),
    }
    for options, (sqlstate, fragment) in bad.items():
        err = refused(conn, f"CREATE SOURCE bad FROM KAFKA CONNECTION kafka (TOPIC 'starts', {options})")
        assert (err.sqlstate, fragment in str(err)) == (sqlstate, True), (options, err.sqlstate, str(err))
    assert "bad" not in source_rows(conn)
    assert conn.execute("SELECT 1").fetchall() == [(1,)]


def test_source_relation_before_any_ingestion(conn, broker):
    broker.create_topic("quiet", 2)
    conn.execute("CREATE SOURCE quiet FROM KAFKA CONNECTION kafka (TOPIC 'quiet')")
    # Nothing ingested yet: no progress rows, but a relation with the progress columns.
    assert conn.execute("SELECT * FROM quiet").fetchall() == []
    assert [n for n, _ in columns(conn, "quiet")] == ["partition", "offset"]


def test_multi_partition_topic_and_progress(conn, broker):
    broker.create_topic("multi", 3)
    per_partition = {0: 2, 1: 3, 2: 1}
    records = [rec(key=f"k{p}-{i}".encode(), value=f"v{p}-{i}".encode(), partition=p, timestamp=1000 + i)
               for p, n in per_partition.items() for i in range(n)]
    broker.send("multi", *records)
    conn.execute("CREATE SOURCE multi FROM KAFKA CONNECTION kafka (TOPIC 'multi')")
    conn.execute("CREATE TABLE multi_rows FROM SOURCE multi (REFERENCE multi) "
                 "FORMAT TEXT INCLUDE PARTITION, OFFSET")
    expected = sorted((f"v{p}-{i}", p, i) for p, n in per_partition.items() for i in range(n))
    wait_rows(conn, 'SELECT text, partition, "offset" FROM multi_rows ORDER BY 1', expected)
    # The source relation: the next offset to read per partition.
    wait_rows(conn, 'SELECT partition, "offset" FROM multi ORDER BY partition', sorted(per_partition.items()))
    assert columns(conn, "multi") == [("partition", "integer"), ("offset", "bigint")]
    assert source_rows(conn)["multi"][:2] == ("kafka", "running")
    assert source_rows(conn)["multi_rows"][:2] == ("table", "running")


def test_partitions_added_to_a_topic_are_read_and_the_others_go_on(conn, broker):
    """A partition added to a topic while a table reads it is found and read from its
    start; the partition read so far goes on from where it was, not from where the table
    started (nothing read twice: the later record on partition 0 comes after any repeat)."""
    from confluent_kafka.admin import NewPartitions

    broker.create_topic("grow")
    broker.send("grow", *[rec(key=f"a{i}".encode(), value=f"a{i}".encode()) for i in range(5)])
    conn.execute("CREATE SOURCE grow FROM KAFKA CONNECTION kafka (TOPIC 'grow')")
    conn.execute("CREATE TABLE grow_t FROM SOURCE grow (REFERENCE grow) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, "SELECT count(*) FROM grow_t", [(5,)])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_partitions([NewPartitions("grow", 2)]).values():
        future.result(timeout=30)
    broker.send("grow", *[rec(value=f"b{i}".encode(), partition=i % 2) for i in range(6)])
    check = f"SELECT count(*), {DISTINCT_RECORDS}, count(DISTINCT partition) FROM grow_t"
    wait_rows(conn, check, [(11, 11, 2)])
    broker.send("grow", rec(value=b"c", partition=0))
    wait_rows(conn, check, [(12, 12, 2)])


def test_partitions_added_while_records_keep_coming_are_read(conn, broker):
    """A table that is never idle (a record every 20 ms, so that no poll comes back empty)
    still learns of a partition added to its topic, every PARTITIONS_REFRESH_INTERVAL,
    while the records keep coming; and reads every record once."""
    from confluent_kafka.admin import NewPartitions

    from server.kafka import PARTITIONS_REFRESH_INTERVAL

    broker.create_topic("busy")
    stop, sent = threading.Event(), []

    def keep_sending() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        count = 0
        while not stop.is_set():
            producer.produce("busy", value=f"a{count}".encode(), partition=0)
            producer.poll(0)
            count += 1
            time.sleep(0.02)
        assert producer.flush(60) == 0
        sent.append(count)

    sender = threading.Thread(target=keep_sending, daemon=True)
    sender.start()
    try:
        conn.execute("CREATE SOURCE busy FROM KAFKA CONNECTION kafka (TOPIC 'busy')")
        conn.execute("CREATE TABLE busy_t FROM SOURCE busy (REFERENCE busy) FORMAT TEXT INCLUDE PARTITION, OFFSET")
        wait_rows(conn, "SELECT count(*) > 0 FROM busy_t", [(True,)])
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_partitions([NewPartitions("busy", 2)]).values():
            future.result(timeout=30)
        broker.send("busy", *[rec(value=f"b{i}".encode(), partition=1) for i in range(3)])
        wait_rows(conn, "SELECT count(*) FROM busy_t WHERE partition = 1", [(3,)],
                  timeout=PARTITIONS_REFRESH_INTERVAL + 60)
        assert sender.is_alive(), "the records must still be coming when the partition is found"
    finally:
        stop.set()
        sender.join(60)
    total = sent[0] + 3
    wait_rows(conn, f"SELECT count(*), {DISTINCT_RECORDS} FROM busy_t", [(total, total)])


def test_a_backlog_is_taken_in_full_batches(broker):
    """A backlog is taken max_records at a time, across partitions, until it is drained: a
    batch is not cut short while the broker holds more records than have arrived (the
    client's prefetch is bounded to 1 MB here, so records keep arriving while it is taken)."""
    from spark_backend.kafka_consumer import Consumer

    broker.create_topic("backlog", 3)
    value = b"v" * 1000
    broker.send("backlog", *(rec(key=f"k{i}".encode(), value=value, partition=i % 3) for i in range(30_000)))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "queued.max.messages.kbytes": 1024}, "backlog", {},
                        timestamps=False, headers=False)
    try:
        consumer.refresh_partitions()
        # What a batch waits for: the records past the consumer's position, partitions not
        # read from yet included (their watermarks are asked of the broker).
        backlog = [consumer.backlog()]
        # A generous fill wait: none of these polls may need it, however slow the machine.
        sizes, timed_out = [], []
        for _ in range(3):
            sizes.append(consumer.poll(max_records=12_000, fill_wait=60).num_rows)
            timed_out.append(consumer.fill_timed_out)
            if len(sizes) == 1:
                backlog.append(consumer.backlog())
        sizes.append(consumer.poll(max_records=12_000, timeout=0.5).num_rows)
        backlog.append(consumer.backlog())
    finally:
        consumer.close()
    assert sizes == [12_000, 12_000, 6_000, 0]
    assert backlog == [30_000, 18_000, 0]
    # The last 6,000 came without waiting out the fill wait: asked for a full batch, the
    # client's consume() would have held out for records the broker does not have.
    assert timed_out == [False, False, False]


def _fetch_requests(stats: list[dict]) -> int:
    """Fetch requests the client has sent, by its latest statistics."""
    return sum(b["req"].get("Fetch", 0) for b in stats[-1]["brokers"].values())


def test_a_caught_up_consumer_stops_fetching_until_its_next_poll(broker):
    """A poll that takes every record the broker holds pauses the partitions, so that a
    broker answering empty fetches at once (noida-db does) is not asked thousands of times
    a second while the batch runs;
    the next poll resumes at the record after the last one polled: nothing lost, nothing
    read twice, including a partition that delivered nothing since it was assigned at a
    stored offset (a resume there must not fall back to the earliest offset)."""
    from spark_backend.kafka_consumer import Consumer

    broker.create_topic("pause", 2)
    broker.send("pause", *(rec(key=f"a{i}".encode(), value=b"v", partition=i % 2) for i in range(10)))
    stats: list[dict] = []
    conf = {"bootstrap.servers": broker.bootstrap, "statistics.interval.ms": 100,
            "stats_cb": lambda text: stats.append(json.loads(text))}

    def poll_until(consumer: Consumer, count: int) -> list[bytes]:
        keys: list[bytes] = []
        eventually(lambda: keys.extend(consumer.poll().column("key").to_pylist()) or len(keys) >= count,
                   f"{count} records")
        return keys

    def fetches_while_idle(consumer: Consumer) -> int:
        # Statistics are served by polling the client itself, which returns no record while paused.
        consumer.consumer.poll(0.3)
        before = _fetch_requests(stats)
        time.sleep(0.5)
        consumer.consumer.poll(0.3)
        return _fetch_requests(stats) - before

    consumer = Consumer(conf, "pause", {}, timestamps=False, headers=False)
    try:
        consumer.refresh_partitions()
        assert sorted(poll_until(consumer, 10)) == sorted(f"a{i}".encode() for i in range(10))
        assert consumer.caught_up
        assert fetches_while_idle(consumer) < 10  # unpaused against noida-db: thousands
        broker.send("pause", *(rec(key=f"b{i}".encode(), value=b"v", partition=i % 2) for i in range(6)))
        assert sorted(poll_until(consumer, 6)) == sorted(f"b{i}".encode() for i in range(6))
        assert consumer.poll(timeout=0.5).num_rows == 0
    finally:
        consumer.close()
    # A restarted table: stored offsets, partition 1 has nothing new.
    broker.send("pause", rec(key=b"c0", value=b"v", partition=0))
    consumer = Consumer(conf, "pause", {0: 8, 1: 8}, timestamps=False, headers=False)
    try:
        consumer.refresh_partitions()
        assert poll_until(consumer, 1) == [b"c0"]
        assert consumer.caught_up
        broker.send("pause", rec(key=b"c1", value=b"v", partition=1))
        assert poll_until(consumer, 1) == [b"c1"]
        assert consumer.poll(timeout=0.5).num_rows == 0
    finally:
        consumer.close()


# -- formats and metadata ------------------------------------------------------------

def test_formats_and_included_metadata(conn, broker):
    broker.create_topic("fmt")
    t0 = 1_700_000_000_000
    broker.send("fmt",
                rec(key=b"k1", value=b"[1,2]", timestamp=t0, headers=[("h1", b"x"), ("h2", None)]),
                rec(key=b"k2", value=b"[3,4]", timestamp=t0 + 1500))
    conn.execute("CREATE SOURCE fmt FROM KAFKA CONNECTION kafka (TOPIC 'fmt')")
    tables = {
        "fmt_bytes": ("KEY FORMAT BYTES VALUE FORMAT BYTES INCLUDE KEY AS k",
                      [("k", "bytea"), ("data", "bytea")],
                      [(b"k1", b"[1,2]"), (b"k2", b"[3,4]")]),
        "fmt_json": ("VALUE FORMAT JSON",
                     [("data", "jsonb")],
                     [([1, 2],), ([3, 4],)]),
        "fmt_csv": ("VALUE FORMAT CSV WITH 2 COLUMNS",
                    [("column1", "text"), ("column2", "text")],
                    [("[1", "2]"), ("[3", "4]")]),
        "fmt_meta": (("KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY AS k, PARTITION AS p, OFFSET AS o, "
                      "TIMESTAMP AS t, HEADERS AS h"),
                     [("k", "text"), ("text", "text"), ("p", "integer"), ("o", "bigint"), ("t", "timestamp"),
                      ("h", "jsonb")],
                     [("k1", "[1,2]", 0, 0, ts(t0), [{"key": "h1", "value": "x"}, {"key": "h2", "value": None}]),
                      ("k2", "[3,4]", 0, 1, ts(t0 + 1500), [])]),
        "fmt_meta_default": ("FORMAT TEXT INCLUDE PARTITION, OFFSET, TIMESTAMP, HEADERS, KEY",
                             [("key", "text"), ("text", "text"), ("partition", "integer"), ("offset", "bigint"),
                              ("timestamp", "timestamp"), ("headers", "jsonb")],
                             None),
        "fmt_upsert_json": ("KEY FORMAT JSON VALUE FORMAT TEXT ENVELOPE UPSERT",
                            [("key", "jsonb"), ("text", "text")],
                            None),
    }
    for name, (clauses, _, _) in tables.items():
        conn.execute(f"CREATE TABLE {name} FROM SOURCE fmt (REFERENCE fmt) {clauses}")
    for name, (_, cols, _) in tables.items():
        assert columns(conn, name) == cols, name
    for name, (_, _, rows) in tables.items():
        if rows is not None:
            wait_rows(conn, f"SELECT * FROM {name} ORDER BY 1", rows)
    wait_rows(conn, "SELECT key, text, partition, \"offset\", timestamp FROM fmt_meta_default ORDER BY 1",
              [("k1", "[1,2]", 0, 0, ts(t0)), ("k2", "[3,4]", 0, 1, ts(t0 + 1500))])
    # A JSON key that is not valid JSON is a key decode error (b"k1" is not JSON).
    wait_error(conn, "SELECT * FROM fmt_upsert_json", "fmt_upsert_json", "offset 0")
    # Bad clauses fail with clear errors and create nothing.
    bad = {
        "FORMAT AVRO": "AVRO",
        "VALUE FORMAT CSV WITH 0 COLUMNS": "CSV",
        "FORMAT XML": "unknown format XML",
        "FORMAT TEXT INCLUDE TOPIC": "TOPIC",
        "FORMAT TEXT INCLUDE OFFSET, OFFSET AS o2": "more than once",
        "FORMAT TEXT INCLUDE OFFSET AS text": 'column "text"',
        "VALUE FORMAT TEXT ENVELOPE UPSERT": "needs a key",
        "VALUE FORMAT TEXT INCLUDE KEY": "key format",
        "FORMAT TEXT ENVELOPE DEBEZIUM": "DEBEZIUM",
        "FORMAT TEXT ENVELOPE NONE (VALUE DECODING ERRORS = INLINE)": "syntax error",
    }
    for clauses, fragment in bad.items():
        err = refused(conn, f"CREATE TABLE fmt_bad FROM SOURCE fmt (REFERENCE fmt) {clauses}")
        assert fragment in str(err), (clauses, str(err))
        assert "fmt_bad" not in source_rows(conn)


# -- envelopes ------------------------------------------------------------------------

def test_envelope_none_appends_every_record(conn, broker):
    broker.create_topic("appends", 2)
    broker.send("appends", *[rec(key=k, value=v, timestamp=1000) for k, v in
                             [(b"a", b"1"), (b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (None, b"4")]])
    conn.execute("CREATE SOURCE appends FROM KAFKA CONNECTION kafka (TOPIC 'appends')")
    conn.execute("CREATE TABLE appends_t FROM SOURCE appends (REFERENCE appends) "
                 "KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY ENVELOPE NONE")
    # Duplicates stay; a record without a key has a NULL key under ENVELOPE NONE.
    wait_rows(conn, "SELECT key, text FROM appends_t ORDER BY text, key",
              [("a", "1"), ("a", "1"), ("b", "2"), ("a", "3"), (None, "4")])


def test_envelope_upsert_latest_value_and_tombstones(conn, broker):
    broker.create_topic("kv", 2)
    broker.send("kv", *[rec(key=k, value=v, timestamp=t) for k, v, t in [
        (b"a", b"1", 3000), (b"b", b"1", 3000), (b"c", b"1", 3000),
        (b"a", b"2", 1000),   # an older timestamp, a later offset: the default order is the offset
        (b"b", None, 3000),   # tombstone
        (b"d", None, 3000),   # tombstone of a key never seen
        (b"c", None, 3000), (b"c", b"3", 3000),  # deleted, then back
    ]])
    conn.execute("CREATE SOURCE kv FROM KAFKA CONNECTION kafka (TOPIC 'kv')")
    conn.execute("CREATE TABLE kv_t FROM SOURCE kv (REFERENCE kv) KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "ENVELOPE UPSERT")
    wait_rows(conn, "SELECT * FROM kv_t ORDER BY key", [("a", "2"), ("c", "3")])


# -- ENVELOPE UPSERT (ORDER BY ...) ----------------------------------------------------

SEED_VALID = [
    "INCLUDE TIMESTAMP ENVELOPE UPSERT ( ORDER BY ( TIMESTAMP, OFFSET ) ASC )",
    "INCLUDE TIMESTAMP AS ts, OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( ts, o ) )",
    "INCLUDE OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( o ) )",
]
SEED_SYNTAX_ERRORS = {
    "INCLUDE TIMESTAMP ENVELOPE UPSERT ( ORDER BY TIMESTAMP, OFFSET )": "parentheses",
    "INCLUDE TIMESTAMP AS ts, OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( ts, o ) DESC )": "DESC",
}
SEED_SEMANTIC_ERRORS = {
    # OFFSET is not one of the ORDER BY columns.
    "INCLUDE OFFSET ENVELOPE UPSERT ( ORDER BY ( TIMESTAMP ) )": "OFFSET",
    # TIMESTAMP is not included.
    "INCLUDE OFFSET ENVELOPE UPSERT ( ORDER BY ( TIMESTAMP, OFFSET ) )": "INCLUDE TIMESTAMP",
    # p is not the TIMESTAMP or OFFSET column.
    "INCLUDE PARTITION AS p ENVELOPE UPSERT ( ORDER BY ( p ) )": "PARTITION",
}


def test_order_by_seed_examples(conn, broker):
    broker.create_topic("ob")
    formats = "KEY FORMAT TEXT VALUE FORMAT TEXT"
    for i, clauses in enumerate(SEED_VALID):
        # The seed's form: CREATE SOURCE ... <clauses>, creating ob<i>_progress and ob<i>.
        conn.execute(f"CREATE SOURCE ob{i} FROM KAFKA CONNECTION kafka (TOPIC 'ob') {formats} {clauses}")
        conn.execute(f"CREATE SOURCE obs{i} FROM KAFKA CONNECTION kafka (TOPIC 'ob')")
        conn.execute(f"CREATE TABLE obt{i} FROM SOURCE obs{i} (REFERENCE ob) {formats} {clauses}")
        assert f"ob{i}_progress" in source_rows(conn) and f"ob{i}" in source_rows(conn)
    assert [n for n, _ in columns(conn, "ob0")] == ["key", "text", "timestamp"]
    assert [n for n, _ in columns(conn, "ob1")] == ["key", "text", "ts", "o"]
    assert [n for n, _ in columns(conn, "ob2")] == ["key", "text", "o"]
    conn.execute("CREATE SOURCE obs_bad FROM KAFKA CONNECTION kafka (TOPIC 'ob')")
    cases = [(c, f, psycopg.errors.SyntaxError) for c, f in SEED_SYNTAX_ERRORS.items()]
    cases += [(c, f, None) for c, f in SEED_SEMANTIC_ERRORS.items()]
    cases += [
        ("INCLUDE TIMESTAMP ENVELOPE UPSERT ( ORDER BY ( TIMESTAMP ) )", "OFFSET", None),
        ("INCLUDE OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( o, o ) )", "more than once", None),
        ("INCLUDE OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( nope, o ) )", '"nope"', None),
        ("INCLUDE OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( o ) ASC", "", psycopg.errors.SyntaxError),
        ("INCLUDE OFFSET AS o ENVELOPE UPSERT ( ORDER BY ( ) )", "", psycopg.errors.SyntaxError),
        ("INCLUDE OFFSET AS o ENVELOPE NONE ( ORDER BY ( o ) )", "", psycopg.errors.SyntaxError),
    ]
    for clauses, fragment, kind in cases:
        for stmt in (f"CREATE SOURCE obx FROM KAFKA CONNECTION kafka (TOPIC 'ob') {formats} {clauses}",
                     f"CREATE TABLE obx FROM SOURCE obs_bad (REFERENCE ob) {formats} {clauses}"):
            err = refused(conn, stmt)
            assert fragment in str(err), (stmt, str(err))
            if kind is not None:
                assert isinstance(err, kind), (stmt, type(err), str(err))
            else:
                assert not isinstance(err, psycopg.errors.SyntaxError), (stmt, str(err))
            # A caret, if any, points into the statement at the offending clause, not elsewhere.
            pos = err.diag.statement_position
            if pos is not None:
                assert int(pos) - 1 >= stmt.index("ENVELOPE"), (stmt, pos, str(err))
            # Nothing is left behind, not even the single-statement form's progress source.
            rows = source_rows(conn)
            assert "obx" not in rows and "obx_progress" not in rows, (stmt, rows)
    # Options in one parenthesized, comma-separated list.
    conn.execute(f"CREATE TABLE ob_opts FROM SOURCE obs_bad (REFERENCE ob) {formats} INCLUDE TIMESTAMP AS ts, "
                 "OFFSET AS o ENVELOPE UPSERT (ORDER BY (ts, o), VALUE DECODING ERRORS = INLINE)")
    assert [n for n, _ in columns(conn, "ob_opts")] == ["key", "text", "error", "ts", "o"]


def test_seed_persisted_vs_incoming(conn, broker):
    """The seed's example table, offsets and timestamps as given."""
    broker.create_topic("seed")

    def v(s):
        return json.dumps({"v": s}).encode()

    # Previously persisted (offset 0 is a bystander so that the seed's offsets line up).
    broker.send("seed",
                rec(key=b"key0", value=v("zero"), timestamp=50),     # offset 0
                rec(key=b"key1", value=v("old1"), timestamp=100),    # offset 1
                rec(key=b"key2", value=v("old2"), timestamp=201),    # offset 2
                rec(key=b"key3", value=b"{some_error1", timestamp=150),  # offset 3
                rec(key=b"key4", value=v("old4"), timestamp=300))    # offset 4
    conn.execute("CREATE SOURCE seed FROM KAFKA CONNECTION kafka (TOPIC 'seed')")
    conn.execute("CREATE TABLE seed_t FROM SOURCE seed (REFERENCE seed) KEY FORMAT TEXT VALUE FORMAT JSON "
                 "INCLUDE TIMESTAMP AS ts, OFFSET AS o ENVELOPE UPSERT (ORDER BY (ts, o))")
    wait_rows(conn, 'SELECT * FROM seed', [(0, 5)])
    err = wait_error(conn, "SELECT * FROM seed_t", "'key3'", "offset 3")
    assert "invalid JSON" in str(err)
    # Incoming: the error is the newest by offset but the oldest by timestamp; it still wins.
    broker.send("seed",
                rec(key=b"key1", value=v("new1"), timestamp=200),    # offset 5
                rec(key=b"key2", value=v("new2"), timestamp=200),    # offset 6
                rec(key=b"key4", value=v("new4"), timestamp=300),    # offset 7
                rec(key=b"key3", value=b"{some_error2", timestamp=100))  # offset 8
    err = wait_error(conn, "SELECT * FROM seed_t", "'key3'", "offset 8")
    assert "offset 3" not in str(err), str(err)
    assert "(and" not in str(err), "only key3 is in error"
    # A tombstone (even with an old timestamp) replaces the error; the rest is the seed's Upsert Output.
    broker.send("seed", rec(key=b"key3", value=None, timestamp=1))  # offset 9
    wait_rows(conn, "SELECT key, data, ts, o FROM seed_t ORDER BY key", [
        ("key0", {"v": "zero"}, ts(50), 0),
        ("key1", {"v": "new1"}, ts(200), 5),   # (200, 5) > (100, 1)
        ("key2", {"v": "old2"}, ts(201), 2),   # (200, 6) < (201, 2)
        ("key4", {"v": "new4"}, ts(300), 7),   # (300, 7) > (300, 4)
    ])


def test_order_by_within_a_batch_and_tombstones(conn, broker):
    broker.create_topic("inbatch")
    broker.send("inbatch", *[rec(key=k, value=v, timestamp=t) for k, v, t in [
        (b"k1", b"v1", 300), (b"k1", b"v2", 100), (b"k1", b"v3", 300),  # tie on 300: the later offset
        (b"k2", b"v1", 500), (b"k2", None, 400),                       # an older tombstone loses
        (b"k3", b"v1", 100), (b"k3", None, 600),                       # a newer tombstone deletes
        (b"k4", None, 100),
    ]])
    conn.execute("CREATE SOURCE inbatch FROM KAFKA CONNECTION kafka (TOPIC 'inbatch') KEY FORMAT TEXT "
                 "VALUE FORMAT TEXT INCLUDE TIMESTAMP ENVELOPE UPSERT ( ORDER BY ( TIMESTAMP, OFFSET ) ASC )")
    wait_rows(conn, "SELECT * FROM inbatch ORDER BY key", [("k1", "v3", ts(300)), ("k2", "v1", ts(500))])
    broker.send("inbatch", *[rec(key=k, value=v, timestamp=t) for k, v, t in [
        (b"k1", b"older", 200), (b"k2", None, 600), (b"k3", b"back", 50), (b"k5", b"m", 1)]])
    wait_rows(conn, "SELECT * FROM inbatch ORDER BY key",
              [("k1", "v3", ts(300)), ("k3", "back", ts(50)), ("k5", "m", ts(1))])


def test_order_against_persisted_rows(conn, broker):
    """Winners are compared with the rows earlier batches stored, not with older history."""
    broker.create_topic("vsp")
    conn.execute("CREATE SOURCE vsp FROM KAFKA CONNECTION kafka (TOPIC 'vsp') KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "INCLUDE TIMESTAMP AS ts, OFFSET AS o ENVELOPE UPSERT (ORDER BY (ts, o))")
    broker.send("vsp", rec(key=b"a", value=b"a0", timestamp=100),    # offset 0
                rec(key=b"b", value=b"b0", timestamp=1000),          # offset 1
                rec(key=b"c", value=b"c0", timestamp=500))           # offset 2
    wait_rows(conn, "SELECT key, text FROM vsp ORDER BY key", [("a", "a0"), ("b", "b0"), ("c", "c0")])
    # One batch per value of a: the table's history now holds a0 and a1 with their retractions.
    for value, t in ((b"a1", 200), (b"a2", 300)):                     # offsets 3, 4
        broker.send("vsp", rec(key=b"a", value=value, timestamp=t))
        wait_rows(conn, "SELECT text FROM vsp WHERE key = 'a'", [(value.decode(),)])
    broker.send("vsp",
                rec(key=b"a", value=b"old", timestamp=250),   # 5: newer than a0 and a1, older than a2: loses
                rec(key=b"b", value=None, timestamp=900),     # 6: an older tombstone deletes nothing
                rec(key=b"c", value=b"\xff", timestamp=600),  # 7: an error replaces c0 ...
                rec(key=b"c", value=b"c1", timestamp=10),     # 8: ... and a later record heals it, old or not
                rec(key=b"d", value=b"d0", timestamp=5))      # 9
    wait_rows(conn, "SELECT key, text, ts, o FROM vsp ORDER BY key", [
        ("a", "a2", ts(300), 4), ("b", "b0", ts(1000), 1), ("c", "c1", ts(10), 8), ("d", "d0", ts(5), 9)])
    # A newer tombstone still deletes; then the key may come back with any timestamp.
    broker.send("vsp", rec(key=b"a", value=None, timestamp=301))
    wait_rows(conn, "SELECT key FROM vsp ORDER BY key", [("b",), ("c",), ("d",)])
    broker.send("vsp", rec(key=b"a", value=b"back", timestamp=1))
    wait_rows(conn, "SELECT key, text, o FROM vsp WHERE key = 'a'", [("a", "back", 11)])


def test_later_batches_replace_stored_rows_for_each_key_format(conn, broker):
    """A batch finds the stored row of each of its keys, whatever the key format: BYTES,
    and JSON keys written differently (spacing, key order) that are the same jsonb."""
    broker.create_topic("kf")
    conn.execute("CREATE SOURCE kf FROM KAFKA CONNECTION kafka (TOPIC 'kf')")
    conn.execute("CREATE TABLE kf_bytes FROM SOURCE kf (REFERENCE kf) KEY FORMAT BYTES VALUE FORMAT TEXT "
                 "ENVELOPE UPSERT")
    conn.execute("CREATE TABLE kf_json FROM SOURCE kf (REFERENCE kf) KEY FORMAT JSON VALUE FORMAT TEXT "
                 "ENVELOPE UPSERT")
    broker.send("kf", rec(key=b'{"id": 1, "r": "x"}', value=b"v1"), rec(key=b"[2]", value=b"w1"))
    wait_rows(conn, "SELECT text FROM kf_json ORDER BY 1", [("v1",), ("w1",)])
    wait_rows(conn, "SELECT text FROM kf_bytes ORDER BY 1", [("v1",), ("w1",)])
    broker.send("kf", rec(key=b'{"r":"x","id":1}', value=b"v2"), rec(key=b"[2]", value=None))
    wait_rows(conn, "SELECT key, text FROM kf_json", [({"id": 1, "r": "x"}, "v2")])
    wait_rows(conn, "SELECT key, text FROM kf_bytes ORDER BY text", [(b'{"id": 1, "r": "x"}', "v1"),
                                                                     (b'{"r":"x","id":1}', "v2")])


# -- the issue's example ------------------------------------------------------------------

def test_issue_example_with_subscribe(conn, node, broker):
    broker.create_topic("events", 2)
    broker.send("events", rec(key=b"a", value=b'{"n": 1}', timestamp=1000),
                rec(key=b"b", value=b'{"n": 2}', timestamp=1000))
    conn.execute("CREATE SOURCE events FROM KAFKA CONNECTION kafka (TOPIC 'events')")
    conn.execute('CREATE TABLE latest FROM SOURCE events (REFERENCE "events") '
                 "KEY FORMAT TEXT VALUE FORMAT JSON "
                 "INCLUDE TIMESTAMP AS ts, OFFSET AS o "
                 "ENVELOPE UPSERT (ORDER BY (ts, o))")
    with node.connect() as sub:
        sub.execute("BEGIN")
        cur = sub.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE latest ENVELOPE UPSERT (KEY (key))")
        seen: list[tuple] = []
        names: list[str] = []

        def fetch_until(pred, what):
            def step():
                cur.execute("FETCH ALL c WITH (timeout = '1s')")
                names[:] = [d.name for d in cur.description]
                seen.extend(cur.fetchall())
                return pred()
            eventually(step, what, timeout=90)

        def state():
            out = {}
            for row in seen:
                rec = dict(zip(names, row))
                if rec["mz_state"] == "upsert":
                    out[rec["key"]] = rec["data"]
                elif rec["mz_state"] == "delete":
                    out.pop(rec["key"], None)
            return out

        fetch_until(lambda: state() == {"a": {"n": 1}, "b": {"n": 2}}, "the first two upserts")
        assert names == ["mz_timestamp", "mz_state", "key", "data", "ts", "o"]
        broker.send("events",
                    rec(key=b"a", value=b'{"n": 3}', timestamp=2000),
                    rec(key=b"b", value=None, timestamp=2000),
                    rec(key=b"a", value=b'{"n": 0}', timestamp=500),   # older: never shown
                    rec(key=b"a", value=b'{"n": 4}', timestamp=4000))
        fetch_until(lambda: state() == {"a": {"n": 4}}, "a updated and b deleted")
        values_of_a = [dict(zip(names, r))["data"] for r in seen if dict(zip(names, r))["key"] == "a"]
        assert {"n": 0} not in values_of_a, values_of_a
        states = {dict(zip(names, r))["mz_state"] for r in seen}
        assert states <= {"upsert", "delete"}, states
    wait_rows(conn, "SELECT key, data, ts FROM latest", [("a", {"n": 4}, ts(4000))])


def test_single_statement_form(conn, broker):
    broker.create_topic("single", 2)
    broker.send("single", *[rec(key=f"k{i}".encode(), value=f"v{i}".encode(), timestamp=1000 + i)
                            for i in range(6)])
    conn.execute("CREATE SOURCE single FROM KAFKA CONNECTION kafka (TOPIC 'single') "
                 "KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE TIMESTAMP AS ts, OFFSET AS o "
                 "ENVELOPE UPSERT (ORDER BY (ts, o))")
    rows = source_rows(conn)
    assert rows["single_progress"][0] == "kafka" and rows["single"][0] == "table"
    wait_rows(conn, "SELECT key, text FROM single ORDER BY key", [(f"k{i}", f"v{i}") for i in range(6)])
    progress = conn.execute('SELECT partition, "offset" FROM single_progress').fetchall()
    assert sum(o for _, o in progress) == 6, progress
    with pytest.raises(psycopg.Error, match="already exists"):
        conn.execute("CREATE SOURCE single FROM KAFKA CONNECTION kafka (TOPIC 'single') FORMAT TEXT")


# -- decode errors ----------------------------------------------------------------------

def test_decode_errors_put_the_key_in_an_error_state(conn, broker):
    broker.create_topic("errs")
    broker.send("errs",
                rec(key=b"good", value=b'{"a": 1}'),       # offset 0
                rec(key=b"bad1", value=b"{nope"),          # offset 1
                rec(key=b"bad2", value=b"not json"))       # offset 2
    conn.execute("CREATE SOURCE errs FROM KAFKA CONNECTION kafka (TOPIC 'errs')")
    conn.execute("CREATE TABLE errs_up FROM SOURCE errs (REFERENCE errs) KEY FORMAT TEXT VALUE FORMAT JSON "
                 "ENVELOPE UPSERT")
    err = wait_error(conn, "SELECT * FROM errs_up", "'bad1'", "offset 1", "(and 1 more)")
    assert "errs_up" in str(err) and "invalid JSON" in str(err)
    # Every read fails, not only the bad key's.
    assert read_error(conn, "SELECT count(*) FROM errs_up WHERE key = 'good'") is not None
    # A later record heals bad1; a tombstone heals bad2.
    broker.send("errs", rec(key=b"bad1", value=b'{"ok": 1}'), rec(key=b"bad2", value=None))
    wait_rows(conn, "SELECT * FROM errs_up ORDER BY key", [("bad1", {"ok": 1}), ("good", {"a": 1})])
    # A new error replaces a good value, and a newer error the older one.
    broker.send("errs", rec(key=b"good", value=b"[1,"), rec(key=b"good", value=b"{x"))  # offsets 5, 6
    err = wait_error(conn, "SELECT * FROM errs_up", "'good'", "offset 6")
    assert "(and" not in str(err)


def test_undecodable_and_missing_keys_are_not_dropped(conn, broker):
    broker.create_topic("keys")
    broker.send("keys",
                rec(key=b"\xff1", value=b"x"),   # not UTF-8: key decode error
                rec(key=b"\xff2", value=b"y"),   # another one
                rec(key=b"ok", value=b"z"),
                rec(value=b"nokey"))             # no key at all
    conn.execute("CREATE SOURCE keys FROM KAFKA CONNECTION kafka (TOPIC 'keys')")
    conn.execute("CREATE TABLE keys_up FROM SOURCE keys (REFERENCE keys) KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "ENVELOPE UPSERT")
    conn.execute("CREATE TABLE keys_raw FROM SOURCE keys (REFERENCE keys) KEY FORMAT BYTES VALUE FORMAT TEXT "
                 "INCLUDE KEY")
    conn.execute("CREATE TABLE keys_none FROM SOURCE keys (REFERENCE keys) VALUE FORMAT JSON")
    # Three records in error, each reported: two undecodable keys and one without a key.
    err = wait_error(conn, "SELECT * FROM keys_up", "keys_up", "(and 2 more)")
    assert "offset" in str(err)
    wait_rows(conn, "SELECT key, text FROM keys_raw ORDER BY text",
              [(None, "nokey"), (b"\xff1", "x"), (b"\xff2", "y"), (b"ok", "z")])
    # ENVELOPE NONE: a record that cannot be decoded (x is not JSON) fails reads, naming its offset.
    err = wait_error(conn, "SELECT * FROM keys_none", "keys_none", "partition 0 offset 0", "(and 3 more)")
    assert "invalid JSON" in str(err)


def test_value_decoding_errors_inline(conn, broker):
    broker.create_topic("inline")
    broker.send("inline", rec(key=b"k1", value=b"{bad", timestamp=1000), rec(key=b"k2", value=b'{"a": 1}',
                                                                             timestamp=1000))
    conn.execute("CREATE SOURCE inline FROM KAFKA CONNECTION kafka (TOPIC 'inline')")
    conn.execute("CREATE TABLE inline_t FROM SOURCE inline (REFERENCE inline) KEY FORMAT TEXT VALUE FORMAT JSON "
                 "ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)")
    assert columns(conn, "inline_t") == [("key", "text"), ("data", "jsonb"), ("error", "text")]
    def inline_rows(done):
        def check():
            rows = conn.execute("SELECT * FROM inline_t ORDER BY key").fetchall()
            return rows if done(rows) else None
        return check

    rows = eventually(inline_rows(lambda r: len(r) == 2), "both keys inline")
    assert rows[0][0] == "k1" and rows[0][1] is None and "invalid JSON" in rows[0][2], rows
    assert rows[1] == ("k2", {"a": 1}, None)
    broker.send("inline", rec(key=b"k1", value=b'{"b": 2}', timestamp=2000), rec(key=b"k2", value=b"nope",
                                                                                 timestamp=2000))
    rows = eventually(inline_rows(lambda r: r[0][2] is None and r[1][2] is not None), "k1 healed, k2 in error")
    assert rows[0] == ("k1", {"b": 2}, None)
    assert rows[1][0] == "k2" and rows[1][1] is None and "invalid JSON" in rows[1][2], rows


def test_large_batches_follow_the_same_rules(conn, broker):
    """Batches of more than SMALL_BATCH records take another Spark plan (a shuffle per step
    instead of one partition): decode errors, healing, tombstones, ORDER BY (ts, o) within
    the batch and against the stored rows, and INLINE errors behave as in small batches. The
    interesting records come after tens of thousands of others in the same send, so they are
    in a large batch, and its hand-over file has more than one row group: key d's first
    record is in the first, the others in the last."""
    from spark_backend.kafka_batch import HANDOVER_ROW_GROUP, SMALL_BATCH

    filler_count = max(SMALL_BATCH, HANDOVER_ROW_GROUP) + 500
    broker.create_topic("bigb")

    def send(round_: int, t: int, *records: dict, lead: tuple[dict, ...] = ()) -> None:
        filler = [rec(key=f"f{i}".encode(), value=f'{{"i": {round_ * 100_000 + i}}}'.encode(), timestamp=t)
                  for i in range(filler_count)]
        broker.send("bigb", *lead, *filler, *records)

    send(1, 1000,
         rec(key=b"a", value=b'{"v": 1}', timestamp=500),
         rec(key=b"b", value=b"{bad", timestamp=500),
         rec(key=b"c", value=b'{"v": 1}', timestamp=500),
         rec(key=b"c", value=None, timestamp=600),            # a tombstone in the same batch
         rec(key=b"d", value=b'{"v": 1}', timestamp=900),
         rec(key=b"d", value=b'{"v": 2}', timestamp=800),     # later offset, older timestamp
         lead=(rec(key=b"d", value=b'{"v": 0}', timestamp=100),))  # older by offset and by timestamp
    conn.execute("CREATE SOURCE bigb FROM KAFKA CONNECTION kafka (TOPIC 'bigb')")
    formats = "KEY FORMAT TEXT VALUE FORMAT JSON"
    conn.execute(f"CREATE TABLE big_plain FROM SOURCE bigb (REFERENCE bigb) {formats} ENVELOPE UPSERT")
    conn.execute(f"CREATE TABLE big_ord FROM SOURCE bigb (REFERENCE bigb) {formats} INCLUDE TIMESTAMP AS ts, "
                 "OFFSET AS o ENVELOPE UPSERT (ORDER BY (ts, o))")
    conn.execute(f"CREATE TABLE big_inline FROM SOURCE bigb (REFERENCE bigb) {formats} "
                 "ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)")
    for table in ("big_plain", "big_ord"):
        wait_error(conn, f"SELECT * FROM {table}", "'b'", f"offset {filler_count + 2}")
    wait_rows(conn, "SELECT key, data, error IS NOT NULL FROM big_inline WHERE key NOT LIKE 'f%' ORDER BY key",
              [("a", {"v": 1}, False), ("b", None, True), ("d", {"v": 2}, False)])
    wait_rows(conn, "SELECT count(*), min(data->>'i'), max(data->>'i') FROM big_inline WHERE key LIKE 'f%'",
              [(filler_count, "100000", str(100_000 + filler_count - 1))])

    send(2, 2000,
         rec(key=b"b", value=b'{"v": 3}', timestamp=100),      # heals b, older or not
         rec(key=b"a", value=b'{"v": 0}', timestamp=400),      # older than a's stored 500
         rec(key=b"d", value=b"[1,", timestamp=950))           # d in error
    for table in ("big_plain", "big_ord"):
        err = wait_error(conn, f"SELECT * FROM {table}", "'d'")
        assert "'b'" not in str(err) and "(and" not in str(err), str(err)
    send(3, 3000, rec(key=b"d", value=None, timestamp=960))     # a tombstone heals d
    wait_rows(conn, "SELECT key, data FROM big_plain WHERE key NOT LIKE 'f%' ORDER BY key",
              [("a", {"v": 0}), ("b", {"v": 3})])
    wait_rows(conn, "SELECT key, data FROM big_ord WHERE key NOT LIKE 'f%' ORDER BY key",
              [("a", {"v": 1}), ("b", {"v": 3})])
    wait_rows(conn, "SELECT key, data, error FROM big_inline WHERE key NOT LIKE 'f%' ORDER BY key",
              [("a", {"v": 0}, None), ("b", {"v": 3}, None)])
    for table in ("big_plain", "big_ord", "big_inline"):
        wait_rows(conn, f"SELECT count(*), min(data->>'i'), max(data->>'i') FROM {table} WHERE key LIKE 'f%'",
                  [(filler_count, "300000", str(300_000 + filler_count - 1))])


def test_a_backlog_is_read_by_spark_tasks(conn, node, broker):
    """A backlog of at least SPARK_READS records is read by Spark's tasks, a slice of
    offsets each (kafka_read), with the effect polled records have: every record once,
    metadata included (ENVELOPE NONE); each key's winner by the ORDER BY across slices; a
    decode error naming its offset; a tombstone. The next offsets are the ranges' ends, and
    the few records that come later are polled by the server."""
    from server.kafka import SPARK_READS
    from spark_backend.kafka_read import MIN_SLICE

    broker.create_topic("spread", 2)
    t0 = 1_700_000_000_000
    fill = SPARK_READS + 2 * MIN_SLICE  # partition 0 holds 80%: more than one slice
    in_p1 = len(range(0, fill, 5))
    first = [rec(key=b"a", value=b'{"v": 0}', timestamp=t0 + 5, partition=0),
             rec(key=b"c", value=b'{"v": 0}', timestamp=t0, partition=0)]
    filler = [rec(key=f"f{i % 1000}".encode(), value=f'{{"i": {i}}}'.encode(), timestamp=t0 + i,
                  partition=1 if i % 5 == 0 else 0) for i in range(fill)]
    last = [rec(key=b"a", value=b'{"v": 1}', timestamp=t0 + 6, partition=0),  # newer: wins, a slice later
            rec(key=b"a", value=b'{"v": 2}', timestamp=t0 + 4, partition=0),  # a later offset, older: loses
            rec(key=b"c", value=None, timestamp=t0 + 1, partition=0),         # a tombstone
            rec(key=b"b", value=b"{bad", timestamp=t0, partition=1),
            rec(key=b"h", value=b'{"v": 3}', timestamp=t0, partition=1, headers=[("x", b"y")])]
    total = fill + len(first) + len(last)
    broker.send("spread", *first, *filler, *last)
    conn.execute("CREATE SOURCE spread FROM KAFKA CONNECTION kafka (TOPIC 'spread')")
    conn.execute("CREATE TABLE spread_up FROM SOURCE spread (REFERENCE spread) KEY FORMAT TEXT VALUE FORMAT JSON "
                 "INCLUDE TIMESTAMP AS ts, OFFSET AS o ENVELOPE UPSERT (ORDER BY (ts, o))")
    conn.execute("CREATE TABLE spread_all FROM SOURCE spread (REFERENCE spread) KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "INCLUDE PARTITION, OFFSET, TIMESTAMP, HEADERS")
    wait_rows(conn, f"SELECT count(*), {DISTINCT_RECORDS}, count(DISTINCT text), min(timestamp), max(timestamp) "
              "FROM spread_all", [(total, total, fill + 5, ts(t0), ts(t0 + fill - 1))], timeout=180)
    wait_rows(conn, "SELECT text, partition, \"offset\", headers FROM spread_all WHERE text = '{\"v\": 3}' "
              "OR partition = 1 AND \"offset\" = 0 ORDER BY text",
              [('{"i": 0}', 1, 0, []), ('{"v": 3}', 1, in_p1 + 1, [{"key": "x", "value": "y"}])])
    wait_error(conn, "SELECT * FROM spread_up", "'b'", f"offset {in_p1}", timeout=180)

    broker.send("spread", rec(key=b"b", value=b'{"v": 4}', timestamp=t0, partition=1))  # heals b
    wait_rows(conn, "SELECT key, data, ts FROM spread_up WHERE key NOT LIKE 'f%' ORDER BY key",
              [("a", {"v": 1}, ts(t0 + 6)), ("b", {"v": 4}, ts(t0)), ("h", {"v": 3}, ts(t0))])
    wait_rows(conn, "SELECT count(*), sum(CAST(data->>'i' AS BIGINT)) FROM spread_up WHERE key LIKE 'f%'",
              [(1000, sum(range(fill - 1000, fill)))])
    wait_rows(conn, 'SELECT sum("offset") FROM spread', [(total + 1,)])
    text = node.proc.metrics()
    for table in ("spread_up", "spread_all"):
        read_by = {who: metric(text, "sparkwire_kafka_batches_total", source="spread", table=table, read_by=who)
                   for who in ("spark", "server")}
        assert read_by["spark"] and read_by["spark"] >= 1 and read_by["server"] and read_by["server"] >= 1, \
            (table, read_by)


def test_a_backlog_read_by_spark_against_a_much_larger_table(broker, monkeypatch):
    """A backlog read by Spark's tasks into a table more than RESTRICT_RATIO times its size:
    the stored rows are then restricted to the batch's keys, which reads the batch twice
    (kept by Spark after one read from the broker). upsert_batch in this process, on a
    SparkSession with the server's settings, over a store of its own."""
    from pyspark.sql import SparkSession

    from planner.types import BY_NAME, SqlType
    from spark_backend import kafka_batch as kb
    from spark_backend.engine import _SPARK_CONF
    from spark_backend.kafka_decode import DecodePlan
    from spark_backend.kafka_read import Backlog
    from spark_backend.schema import TS
    from spark_backend.storage import Store

    broker.create_topic("restrict")
    stored, later = 5000, 1000
    assert later * kb.RESTRICT_RATIO < stored
    broker.send("restrict", *(rec(key=f"k{i}".encode(), value=b"old") for i in range(stored)))
    broker.send("restrict", *(rec(key=f"k{i * 3}".encode(), value=f"new{i}".encode()) for i in range(later)))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this virtualenv's
    builder = SparkSession.builder.master("local[2]").appName("test-kafka-restrict")
    for key, value in _SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    folder = tempfile.mkdtemp(prefix="sparkwire-kafka-restrict-")
    store = Store(os.path.join(folder, "store"))
    try:
        store.open()
        store.commit(1, [{"op": "create_collection", "collection": "t"}], {})
        text = SqlType(BY_NAME["text"])
        plan = DecodePlan(("text", 0), ("text", 0), ("key",), ("text",), False)
        target = kb.Target("t", (text, text, SqlType(BY_NAME["bigint"])), ("key", "text", "__offset"))
        config = {"bootstrap.servers": broker.bootstrap}
        results = []
        for ts, (start, end) in enumerate([(0, stored), (stored, stored + later)], start=2):
            result = kb.upsert_batch(spark, plan, Backlog(config, "restrict", ((0, start, end),), False, False),
                                     target, store, ts - 1, False)
            updates = result.updates.set_column(result.updates.schema.get_field_index(TS), TS,
                                                pa.array([ts] * result.updates.num_rows, pa.int64()))
            store.commit(ts, [], {"t": updates})
            results.append(result)
        assert [(r.inserted, r.retracted) for r in results] == [(stored, 0), (later, later)]
        rows = {(k, v, o) for k, v, o, diff in zip(*(results[1].updates.column(c).to_pylist() for c in
                                                     ("c0", "c1", "c2", "mz_diff"))) if diff > 0}
        assert rows == {(f"k{i * 3}", f"new{i}", stored + i) for i in range(later)}
    finally:
        store.close()
        spark.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_range_read_ends_at_its_end_or_says_why_not(broker):
    """A slice's reader takes exactly its offsets, and fails naming what it waited for."""
    from spark_backend.kafka_read import read_range

    broker.create_topic("ranges")
    broker.send("ranges", *(rec(key=f"k{i}".encode(), value=str(i).encode(), timestamp=1000 + i)
                            for i in range(30)))
    config = {"bootstrap.servers": broker.bootstrap}
    got = pa.concat_tables(read_range(config, "ranges", 0, 10, 20, timestamps=True, headers=False))
    assert got.column("offset").to_pylist() == list(range(10, 20))
    assert got.column("value").to_pylist() == [str(i).encode() for i in range(10, 20)]
    assert got.column("timestamp").to_pylist() == list(range(1010, 1020))
    assert got.column("headers").null_count == 10
    with pytest.raises(RuntimeError) as err:
        list(read_range(config, "ranges", 0, 25, 40, timestamps=False, headers=False, stall=1))
    assert str(err.value).startswith('kafka topic "ranges" partition 0: no record after offset 29 in 1 s, '
                                     "10 more expected up to offset 39"), str(err.value)


def test_a_slice_reader_passes_on_only_the_contenders_decoded(broker):
    """An upsert backlog's reader passes on only the records that can still decide a key's
    winner (kafka_contenders), checking every JSON value but decoding only theirs."""
    from spark_backend.kafka_contenders import Contest
    from spark_backend.kafka_read import Backlog, KafkaBacklogSource, source_options

    broker.create_topic("contest")
    t0 = 1_700_000_000_000
    broker.send("contest", *[rec(key=k, value=v, timestamp=t0 + ts) for k, v, ts in [
        (b"a", b'{"v": 1}', 9), (b"a", b'{"v": 2}', 1), (b"a", b"{x", 1), (b"a", b'{"v":[3,4],"b":1}', 2),
        (b"b", b'{"v": 1}', 1), (b"b", None, 1), (None, b'{"v": 9}', 1), (b"\xff", b"{}", 1),
        (b"c", b'{"v": 5}', 7), (b"c", b'{"v": 6}', 3)]])
    decoders = (("value", ("json", 0), 1, True),)

    def contenders(by_timestamp: bool) -> list[tuple]:
        backlog = Backlog({"bootstrap.servers": broker.bootstrap}, "contest", ((0, 0, 10),), True, False,
                          decoders, Contest(by_timestamp, True, ("key",)))
        reader = KafkaBacklogSource(source_options(backlog, 2)).reader(None)
        got = pa.Table.from_batches([b for part in reader.partitions() for b in reader.read(part)])
        return list(zip(got.column("offset").to_pylist(), got.column("__value").to_pylist()))

    # By offset: a's error and its one good record after it, b's tombstone, the record
    # without a key, the key that is not UTF-8 (both errors), c's last record.
    assert contenders(False) == [
        (2, {"c0": None, "err": "invalid JSON: invalid input syntax for type json"}),
        (3, {"c0": '{"b": 1, "v": [3, 4]}', "err": None}), (5, {"c0": None, "err": None}),
        (6, {"c0": '{"v": 9}', "err": None}), (7, {"c0": "{}", "err": None}), (9, {"c0": '{"v": 6}', "err": None})]
    # By timestamp: c's first record too, which no later one beats.
    assert [offset for offset, _ in contenders(True)] == [2, 3, 5, 6, 7, 8, 9]


# -- failures: broker outage, kill -9 --------------------------------------------------------

def test_broker_outage_stalls_then_resumes_without_loss(conn, broker):
    broker.create_topic("outage", 2)
    broker.send("outage", *[rec(key=f"k{i}".encode(), value=str(i).encode()) for i in range(50)])
    conn.execute("CREATE SOURCE outage FROM KAFKA CONNECTION kafka (TOPIC 'outage')")
    conn.execute("CREATE TABLE outage_t FROM SOURCE outage (REFERENCE outage) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    wait_rows(conn, "SELECT count(*) FROM outage_t", [(50,)])
    broker.stop()
    try:
        def stalled():
            row = source_rows(conn)["outage_t"]
            return row if row[1] == "stalled" else None

        row = eventually(stalled, "SHOW SOURCES to show the table stalled", timeout=60)
        assert row[2], "a stalled table says why"
        assert source_rows(conn)["outage"][1] == "stalled"
    finally:
        broker.start()
    eventually(lambda: source_rows(conn)["outage_t"][1] == "running", "the table running again", timeout=60)
    broker.send("outage", *[rec(key=f"k{i}".encode(), value=str(i).encode()) for i in range(50, 100)])
    wait_rows(conn, f"SELECT count(*), count(DISTINCT text), {DISTINCT_RECORDS} FROM outage_t",
              [(100, 100, 100)], timeout=90)
    assert source_rows(conn)["outage_t"][1:] == ("running", None)


def test_kill9_mid_ingestion_exactly_once_and_order_across_restart(node, broker):
    conn = node.connect()
    # Ordering state to carry across the restart: ts stored (ts, o) and ts only (offset not included);
    # and a key in an error state.
    for topic in ("ord", "perm"):
        broker.create_topic(topic)
        conn.execute(f"CREATE SOURCE {topic} FROM KAFKA CONNECTION kafka (TOPIC '{topic}')")
    # t: a millisecond value that float arithmetic (seconds * 1000) gets wrong by one.
    t = 1_095_191_858_636
    broker.send("ord", rec(key=b"k1", value=b"new", timestamp=t), rec(key=b"k2", value=b"x", timestamp=t))
    broker.send("perm", rec(key=b"g", value=b'{"a": 1}'), rec(key=b"bad", value=b"{x"))
    conn.execute("CREATE TABLE ord_a FROM SOURCE ord (REFERENCE ord) KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "INCLUDE TIMESTAMP AS ts, OFFSET AS o ENVELOPE UPSERT (ORDER BY (ts, o))")
    conn.execute("CREATE TABLE ord_b FROM SOURCE ord (REFERENCE ord) KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "INCLUDE TIMESTAMP ENVELOPE UPSERT (ORDER BY (TIMESTAMP, OFFSET))")
    conn.execute("CREATE TABLE perm_t FROM SOURCE perm (REFERENCE perm) KEY FORMAT TEXT VALUE FORMAT JSON "
                 "ENVELOPE UPSERT")
    n, nkeys = 4000, 500
    broker.create_topic("bulk", 3)
    conn.execute("CREATE SOURCE bulk FROM KAFKA CONNECTION kafka (TOPIC 'bulk')")
    conn.execute("CREATE TABLE bulk_none FROM SOURCE bulk (REFERENCE bulk) FORMAT TEXT INCLUDE PARTITION, OFFSET")
    conn.execute("CREATE TABLE bulk_up FROM SOURCE bulk (REFERENCE bulk) KEY FORMAT TEXT VALUE FORMAT TEXT "
                 "ENVELOPE UPSERT")
    for table in ("ord_a", "ord_b"):
        wait_rows(conn, f"SELECT key, text FROM {table} ORDER BY key", [("k1", "new"), ("k2", "x")])
    wait_error(conn, "SELECT * FROM perm_t", "'bad'", "offset 1")

    bulk = [rec(key=f"k{i % nkeys}".encode(), value=str(i).encode()) for i in range(n)]
    broker.send("bulk", *bulk[:n // 2])
    seen = eventually(lambda: conn.execute("SELECT count(*) FROM bulk_none").fetchall()[0][0],
                      "ingestion to start", timeout=90)
    conn.close()
    node.kill9()
    # The rest arrives while sparkwire is down.
    broker.send("bulk", *bulk[n // 2:])
    node.start()
    with node.connect() as conn:
        # The error state survived the restart.
        err = read_error(conn, "SELECT * FROM perm_t")
        assert err is not None and "'bad'" in str(err) and "offset 1" in str(err), err
        # After the restart: the ORDER BY is compared with the persisted winners; a record heals the error.
        broker.send("ord",
                    rec(key=b"k1", value=b"older", timestamp=t - 1),  # 1 ms older: loses
                    rec(key=b"k2", value=b"same", timestamp=t),       # same timestamp, later offset: wins
                    rec(key=b"k3", value=b"marker", timestamp=1))
        broker.send("perm", rec(key=b"bad", value=b'{"ok": true}'))
        wait_rows(conn, f"SELECT count(*), {DISTINCT_RECORDS}, count(DISTINCT text) FROM bulk_none",
                  [(n, n, n)], timeout=120)
        # Each key's latest value: the highest i (same key, same partition: the latest offset).
        wait_rows(conn, "SELECT count(*), sum(CAST(text AS BIGINT)) FROM bulk_up",
                  [(nkeys, sum(range(n - nkeys, n)))])
        # The source's progress survived with its tables' data.
        wait_rows(conn, 'SELECT sum("offset") FROM bulk', [(n,)])
        for table in ("ord_a", "ord_b"):
            wait_rows(conn, f"SELECT key, text FROM {table} ORDER BY key",
                      [("k1", "new"), ("k2", "same"), ("k3", "marker")])
        wait_rows(conn, "SELECT key, ts, o FROM ord_a ORDER BY key",
                  [("k1", ts(t), 0), ("k2", ts(t), 3), ("k3", ts(1), 4)])
        wait_rows(conn, "SELECT * FROM perm_t ORDER BY key", [("bad", {"ok": True}), ("g", {"a": 1})])
        assert {r[0]: r[2] for r in conn.execute("SHOW SOURCES").fetchall()}["bulk_up"] == "running"
    assert 0 < seen <= n // 2, seen


# -- metrics ---------------------------------------------------------------------------------

def test_metrics_rows_ingested_and_lag(conn, node, broker):
    broker.create_topic("metered", 2)
    n = 3000
    broker.send("metered", *[rec(key=f"k{i % 100}".encode(), value=str(i).encode(), partition=i % 2)
                             for i in range(n)])
    conn.execute("CREATE SOURCE metered FROM KAFKA CONNECTION kafka (TOPIC 'metered')")
    conn.execute("CREATE TABLE metered_all FROM SOURCE metered (REFERENCE metered) FORMAT TEXT")
    every = {"source": "metered", "table": "metered_all"}
    lags: list[float] = []
    deadline = time.monotonic() + 120
    while True:
        # Scraped often: the backlog is visible as lag before the first batch is committed.
        text = node.proc.metrics()
        lag = metric(text, "sparkwire_source_lag", **every, unit="messages")
        rows = metric(text, "sparkwire_source_rows_ingested_total", **every)
        if lag is not None:
            lags.append(lag)
        if rows == n and lag == 0:
            break
        assert time.monotonic() < deadline, f"rows ingested {rows}, lag {lag}; lags seen {lags[-5:]}"
        time.sleep(0.02)
    assert "# TYPE sparkwire_source_lag gauge" in text
    assert "# TYPE sparkwire_source_rows_ingested_total counter" in text
    assert lags[0] > 0 and max(lags) <= n, lags[:10]
    assert lags == sorted(lags, reverse=True), "the lag only shrinks while nothing is produced"
    # More records: counted once ingested; the lag returns to 0.
    broker.send("metered", *[rec(key=b"x", value=str(i).encode(), partition=i % 2) for i in range(10)])
    eventually(lambda: metric(node.proc.metrics(), "sparkwire_source_rows_ingested_total", **every) == n + 10,
               "10 more rows counted", timeout=60)
    eventually(lambda: metric(node.proc.metrics(), "sparkwire_source_lag", **every, unit="messages") == 0,
               "the lag back to 0", timeout=60)
    # An upsert table counts its updates, retractions included: at least one insert per key.
    conn.execute("CREATE TABLE metered_up FROM SOURCE metered (REFERENCE metered) KEY FORMAT TEXT "
                 "VALUE FORMAT TEXT ENVELOPE UPSERT")
    wait_rows(conn, "SELECT count(*) FROM metered_up", [(101,)])
    up = {"source": "metered", "table": "metered_up"}
    eventually(lambda: metric(node.proc.metrics(), "sparkwire_source_lag", **up, unit="messages") == 0,
               "the upsert table's lag at 0", timeout=60)
    text = node.proc.metrics()
    assert 101 <= metric(text, "sparkwire_source_rows_ingested_total", **up) <= 2 * (n + 10)
    # A dropped table's lag series goes with it.
    conn.execute("DROP TABLE metered_up")
    eventually(lambda: metric(node.proc.metrics(), "sparkwire_source_lag", **up, unit="messages") is None,
               "the dropped table's lag series removed", timeout=30)
