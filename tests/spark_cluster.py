"""Real Spark daemons for the cluster tests: a standalone master with workers, or a
Spark Connect server, all started from the pyspark package's own scripts and jars.

Each daemon runs in its own process group (spark-class execs a JVM that may start
children of its own) and logs to a file in one temporary directory, which also holds
the workers' and executors' scratch space; `SparkDaemons.stop()` ends the groups and
removes the directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from tests.support import ServerProcess, free_port, metric, running_server

# The servers of the cluster and Connect modules leave a Kafka backlog of this many records
# or more to Spark's tasks (--kafka-spark-reads), as check_backlog_read_by_spark needs.
SPARK_READS = 1000

SPARK_HOME = Path(pyspark.__file__).resolve().parent
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def get_json(url: str, timeout: float = 60.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


@dataclass
class Standalone:
    """A running standalone cluster: where its master listens and where its UIs answer."""

    master_url: str
    master_ui: str
    worker_uis: list[str]

    def state(self) -> dict:
        return get_json(f"{self.master_ui}/json")


class SparkDaemons:
    """Spark JVMs started for one test module, and everything they leave on disk."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="sparkwire-spark-"))
        self.procs: dict[str, subprocess.Popen] = {}
        self.argv: dict[str, list[str]] = {}
        self._logs: dict[str, object] = {}

    def env(self) -> dict[str, str]:
        # Workers launch executors, and executors launch Python workers with this
        # interpreter: the test's own, which has pyarrow.
        return {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(self.base / "local"),
            "SPARK_WORKER_DIR": str(self.base / "work"),
            "SPARK_LOG_DIR": str(self.base / "logs"),
            "SPARK_PID_DIR": str(self.base / "pids"),
            "PYSPARK_PYTHON": sys.executable,
            "TZ": "UTC",
        }

    def log_path(self, name: str) -> Path:
        return self.base / f"{name}.log"

    def log_text(self, name: str, tail: int = 4000) -> str:
        try:
            return self.log_path(name).read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.log_path(name), "ab")  # noqa: SIM115 - closed in stop()
        self._logs[name] = log
        self.argv[name] = argv
        proc = subprocess.Popen(argv, cwd=self.base, env=env or self.env(), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log_text(name)}")

    # -- a standalone cluster ---------------------------------------------------------
    def start_standalone(self, workers: int = 2, cores: int = 1, memory: str = "1g",
                         timeout: float = 120.0) -> Standalone:
        port, ui = free_port(), free_port()
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        self.spawn("master", [spark_class, "org.apache.spark.deploy.master.Master",
                              "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)])
        cluster = Standalone(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", [])
        for i in range(workers):
            worker_ui = free_port()
            cluster.worker_uis.append(f"http://127.0.0.1:{worker_ui}")
            self.spawn(f"worker{i}", [
                spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--webui-port", str(worker_ui), "--cores", str(cores), "--memory", memory,
                "--work-dir", str(self.base / "work" / f"worker{i}"), cluster.master_url])
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            try:
                alive = [w for w in cluster.state().get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) == workers:
                    return cluster
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workers} workers did not register in {timeout}s:\n"
                                   f"{self.log_text('master')}")
            time.sleep(0.5)

    def executor_logs(self) -> dict[str, str]:
        """Each executor's stderr (its log), by `worker<i>/<app>/<executor>`."""
        out = {}
        for path in sorted((self.base / "work").glob("worker*/app-*/*/stderr")):
            out[str(path.parent.relative_to(self.base / "work"))] = path.read_text(errors="replace")
        return out

    # -- a Spark Connect server -------------------------------------------------------
    def start_connect(self, master: str = "local[2]", timeout: float = 180.0) -> tuple[int, int]:
        """The server's gRPC port and the port of its web UI (whose REST API lists jobs).

        The Python workers of a Connect server run the interpreter named by its
        environment's PYSPARK_PYTHON (spark.pyspark.python is not read there): `env()`
        sets it to this one, which has pyarrow."""
        port, ui = free_port(), free_port()
        self.spawn("connect", [
            str(SPARK_HOME / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS,
            "--name", "sparkwire-connect-test", "--master", master,
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", f"spark.ui.port={ui}", "--conf", "spark.port.maxRetries=0",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.driver.memory=2g",
            "--conf", "spark.sql.shuffle.partitions=2"])
        self.wait_listening("connect", port, timeout)
        return port, ui

    def restart_connect(self, port: int, timeout: float = 180.0) -> None:
        """Kill the Connect server and start it again on the same port: every session it
        had is gone."""
        self.kill("connect")
        self.spawn("connect", self.argv["connect"])
        self.wait_listening("connect", port, timeout)

    def kill(self, name: str) -> None:
        """End one daemon (its whole process group) and wait for it."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        self._logs.pop(name).close()

    def wait_listening(self, name: str, port: int, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not listen on {port} in {timeout}s:\n{self.log_text(name)}")
            time.sleep(0.5)

    # -- teardown ---------------------------------------------------------------------
    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            # Executors are children of a worker but in its group; make sure none is left.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for log in self._logs.values():
            log.close()
        if not os.environ.get("KEEP_SPARK_TEST_DIRS"):
            shutil.rmtree(self.base, ignore_errors=True)


def spark_server(master: str, *extra_args: str) -> AbstractContextManager[ServerProcess]:
    """A running sparkwire server whose Spark is `master`, leaving Kafka backlogs of
    SPARK_READS records or more to Spark's tasks."""
    return running_server(ready_timeout=180, extra_args=[
        "--spark-master", master, "--kafka-spark-reads", str(SPARK_READS), *extra_args])


# -- Kafka: the one place Spark runs sparkwire's own Python -----------------------------

@contextmanager
def kafka_broker(server) -> Iterator:
    """test_kafka_source's broker, with the connection named `kafka` its tests expect."""
    import psycopg

    from tests.integration.test_kafka_source import Broker

    broker = Broker()
    try:
        broker.start()
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE CONNECTION kafka TO KAFKA (BROKER '{broker.bootstrap}')")
        yield broker
    finally:
        broker.cleanup()


def _wait_rows(conn, table: str, sql: str, expected: list, timeout: float) -> None:
    """Poll `sql` until it returns `expected`; fail as soon as `table` stalls, with the
    error it stalled on, rather than wait out the timeout."""
    deadline = time.monotonic() + timeout
    while (rows := conn.execute(sql).fetchall()) != expected:
        status = {r[0]: r[2:] for r in conn.execute("SHOW SOURCES").fetchall()}.get(table)
        assert status is None or status[0] != "stalled", f"{table} stalled: {status[1]}"
        assert time.monotonic() < deadline, f"{sql!r} still returns {rows} after {timeout}s"
        time.sleep(0.5)


def check_kafka_decoding(conn, broker, timeout: float = 120.0) -> None:
    """JSON and CSV records are decoded by a Python function (mapInArrow) that imports
    sparkwire's code: on a standalone cluster the executors' Python workers run it,
    through Connect the Connect server's. (TEXT and BYTES decode in Spark SQL.)"""
    from tests.integration.test_kafka_source import rec

    broker.create_topic("json_in")
    broker.create_topic("csv_in")
    broker.send("json_in", rec(value=b'{"a": 1}'), rec(value=b'{"a": [2, 3]}'))
    broker.send("csv_in", rec(value=b"1,x"), rec(value=b"2,y"))
    try:
        conn.execute("CREATE SOURCE json_in FROM KAFKA CONNECTION kafka (TOPIC 'json_in')")
        conn.execute("CREATE TABLE json_t FROM SOURCE json_in (REFERENCE json_in) VALUE FORMAT JSON")
        conn.execute("CREATE SOURCE csv_in FROM KAFKA CONNECTION kafka (TOPIC 'csv_in')")
        conn.execute("CREATE TABLE csv_t FROM SOURCE csv_in (REFERENCE csv_in) "
                     "VALUE FORMAT CSV WITH 2 COLUMNS")
        _wait_rows(conn, "json_t", "SELECT data FROM json_t ORDER BY data::text",
                   [({"a": 1},), ({"a": [2, 3]},)], timeout)
        _wait_rows(conn, "csv_t", "SELECT column1, column2 FROM csv_t ORDER BY 1",
                   [("1", "x"), ("2", "y")], timeout)
    finally:
        conn.execute("DROP SOURCE IF EXISTS json_in CASCADE")
        conn.execute("DROP SOURCE IF EXISTS csv_in CASCADE")


def check_backlog_read_by_spark(conn, server, broker, timeout: float = 120.0) -> None:
    """A Kafka backlog is read by Spark's tasks (kafka_read), where they run: on a
    standalone cluster in the executors' Python workers, through Connect in the Connect
    server's; each such consumer reaches the broker itself."""
    from tests.integration.test_kafka_source import rec

    n = 3 * SPARK_READS
    broker.create_topic("backlog_in", 2)
    broker.send("backlog_in", *[rec(key=f"k{i % 100}".encode(), value=str(i).encode(), partition=i % 2)
                                for i in range(n)])
    try:
        conn.execute("CREATE SOURCE backlog_in FROM KAFKA CONNECTION kafka (TOPIC 'backlog_in')")
        conn.execute("CREATE TABLE backlog_t FROM SOURCE backlog_in (REFERENCE backlog_in) "
                     "KEY FORMAT TEXT VALUE FORMAT TEXT ENVELOPE UPSERT")
        _wait_rows(conn, "backlog_t", "SELECT count(*), sum(CAST(text AS BIGINT)) FROM backlog_t",
                   [(100, sum(range(n - 100, n)))], timeout)
        batches = metric(server.metrics(), "sparkwire_kafka_batches_total", source="backlog_in", table="backlog_t",
                         read_by="spark")
        assert batches is not None and batches >= 1, batches
    finally:
        conn.execute("DROP SOURCE IF EXISTS backlog_in CASCADE")


def check_upsert_ingests(conn, broker, timeout: float = 120.0) -> None:
    """ENVELOPE UPSERT of JSON records: decoded in Python, then each key's winner picked
    and compared with the stored row in Spark SQL over temporary views."""
    from tests.integration.test_kafka_source import rec

    broker.create_topic("upserts")
    broker.send("upserts", *[rec(key=k, value=v) for k, v in [
        (b'"a"', b"1"), (b'"b"', b"1"), (b'"a"', b'{"v": 2}'), (b'"b"', None)]])
    try:
        conn.execute("CREATE SOURCE upserts FROM KAFKA CONNECTION kafka (TOPIC 'upserts')")
        conn.execute("CREATE TABLE upserts_t FROM SOURCE upserts (REFERENCE upserts) "
                     "KEY FORMAT JSON VALUE FORMAT JSON ENVELOPE UPSERT")
        _wait_rows(conn, "upserts_t", "SELECT key, data FROM upserts_t ORDER BY key::text",
                   [("a", {"v": 2})], timeout)
    finally:
        conn.execute("DROP SOURCE IF EXISTS upserts CASCADE")
