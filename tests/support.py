"""Starting a real sparkwire server process for integration tests, and what the tests that
talk to one share: fresh relation names, autocommit connections, the server's clock, its
/metrics and /health pages, and a SUBSCRIBE read through DECLARE/FETCH."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Self

import psycopg

ROOT = Path(__file__).resolve().parent.parent


_GIVEN: set[int] = set()  # ports handed out by this process


def free_port() -> int:
    """A port free now and not handed out before by this process: the kernel may give the
    same port to two binds in a row once the first socket is closed (a server's SQL and
    metrics ports were once the same, and it could not start)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


class ServerProcess:
    """`sparkwire serve` in a subprocess, on a free port and its own data directory."""

    def __init__(self, data_dir: str | None = None, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None, cwd: str | None = None,
                 prefix: list[str] | None = None) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="sparkwire-test-")
        self.extra_args = extra_args or []
        self.env = env or {}
        self.cwd = cwd or str(ROOT)  # the server's working directory
        self.prefix = prefix or []  # a command the server runs under (strace ... --)
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(self.data_dir).parent / f"{Path(self.data_dir).name}.log"

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=materialize dbname=materialize"

    def start(self, timeout: float = 120.0) -> ServerProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        self.log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "server", "serve", "--port", str(self.port),
             "--data-dir", self.data_dir, "--metrics-port", str(self.metrics_port), *self.extra_args],
            cwd=self.cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not listen in time:\n{self.log_text()}")

    def wait_ready(self, timeout: float = 120.0, password: str | None = None) -> None:
        """Wait until Spark is up (a query answers)."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=timeout, password=password) as conn:
            conn.execute("SELECT 1").fetchall()

    def metrics(self) -> str:
        """The server's Prometheus /metrics page."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=30) as resp:
            assert resp.status == 200
            return resp.read().decode()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9()
        if getattr(self, "log", None):
            self.log.close()

    def cleanup(self) -> None:
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.log_path.unlink(missing_ok=True)


@contextlib.contextmanager
def running_server(ready_timeout: float = 120.0, password: str | None = None,
                   **kw) -> Iterator[ServerProcess]:
    """A started server whose Spark answers, removed (with its own data dir) afterwards;
    `kw` goes to ServerProcess."""
    proc = ServerProcess(**kw).start()
    try:
        proc.wait_ready(timeout=ready_timeout, password=password)
        yield proc
    finally:
        proc.cleanup()


@contextlib.contextmanager
def tls_server(password: str, *extra_args: str) -> Iterator[ServerProcess]:
    """A running server with a fresh self-signed certificate that asks for `password`."""
    certs = Path(tempfile.mkdtemp(prefix="sparkwire-tls-"))
    try:
        cert, key = self_signed_cert(certs)
        with running_server(password=password, env={"SPARKWIRE_PASSWORD": password},
                            extra_args=["--tls-cert", str(cert), "--tls-key", str(key), *extra_args]) as proc:
            yield proc
    finally:
        shutil.rmtree(certs, ignore_errors=True)


class Node:
    """The server on one data directory that outlives its processes: restartable, kill -9
    included; `proc` is the current process."""

    def __init__(self, prefix: str) -> None:
        self.base = Path(tempfile.mkdtemp(prefix=prefix))
        self.data_dir = str(self.base / "data")
        self.proc: ServerProcess | None = None

    def start(self) -> ServerProcess:
        self.proc = ServerProcess(data_dir=self.data_dir).start()
        self.proc.wait_ready()
        return self.proc

    def kill9(self) -> None:
        self.proc.kill9()
        self.proc.stop()  # closes the log file; the process is already gone

    def restart_after_kill9(self) -> ServerProcess:
        self.kill9()
        return self.start()

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.proc.dsn, autocommit=True)

    def close(self, kill: bool = False, keep_dir: bool = False) -> None:
        """Stop the server (`kill`: with kill -9, when the data is thrown away anyway) and
        remove the data directory unless `keep_dir`."""
        if self.proc is not None:
            if kill:
                self.kill9()
            else:
                self.proc.stop()
        if not keep_dir:
            shutil.rmtree(self.base, ignore_errors=True)


_names = itertools.count(1)


def fresh(prefix: str) -> str:
    """A relation name no other test of this process uses."""
    return f"{prefix}_{next(_names)}"


def connect(server: ServerProcess, **kw) -> psycopg.Connection:
    return psycopg.connect(server.dsn, autocommit=True, **kw)


class Subscriber:
    """A SUBSCRIBE (or any query) read through DECLARE ... CURSOR and FETCH on a connection
    of its own: DECLARE needs a transaction, which stays open until close(). Subclasses say
    what a fetch keeps of the rows (`fetch`) and what they wait for (`fetch_until`)."""

    def __init__(self, server: ServerProcess, sql: str, cursor: str = "c") -> None:
        self.sql = sql
        self.cursor_name = cursor
        self.conn = connect(server)
        self.conn.execute("BEGIN")
        self.cur = self.conn.cursor()
        self.cur.execute(f"DECLARE {cursor} CURSOR FOR {sql}")

    def fetch_rows(self, timeout: str | None = "0.5s", count: str = "ALL") -> list[tuple]:
        """One FETCH, waiting up to `timeout` for a first row (None: as long as it takes)."""
        opt = f" WITH (timeout = '{timeout}')" if timeout is not None else ""
        self.cur.execute(f"FETCH {count} {self.cursor_name}{opt}")
        return self.cur.fetchall()

    def fetch(self) -> object:
        return self.fetch_rows()

    def fetch_until(self, done: Callable[[], object], timeout: float, describe: Callable[[], str],
                    collect: Callable[[object], object] | None = None) -> None:
        """fetch() until `done()` holds, handing each fetch's result to `collect`; past
        `timeout` seconds fail with `describe()`."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(describe())
            got = self.fetch()
            if collect is not None:
                collect(got)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def now_ms() -> int:
    """Wall-clock milliseconds since the Unix epoch, the unit of mz_timestamp."""
    return int(time.time() * 1000)


def wait_until(predicate, timeout: float, interval: float = 0.1, message: str = "condition"):
    """Poll `predicate` until it returns something truthy (returned), or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


# One series of the exposition: name{label="value",...} value (labels optional).
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """The series of a Prometheus text exposition: (name, labels, value), comments skipped."""
    for line in text.splitlines():
        found = _SAMPLE.match(line)
        if found is None:
            continue
        name, inside, value = found.groups()
        labels = {k: re.sub(r"\\.", lambda m: _UNESCAPE.get(m.group(), m.group()), v)
                  for k, v in _LABEL.findall(inside or "")}
        yield name, labels, float(value)


def metric(text: str, name: str, **labels: object) -> float | None:
    """The value of the series `name` with exactly these labels, or None if absent."""
    want = {k: str(v) for k, v in labels.items()}
    for found, got, value in samples(text):
        if found == name and got == want:
            return value
    return None


def metric_sum(text: str, name: str) -> float:
    """The sum over every series of `name` whatever its labels (0 when there is none)."""
    return sum((value for found, _, value in samples(text) if found == name), 0.0)


def metric_by(text: str, name: str, label: str) -> dict[str, float]:
    """The series of `name`, keyed by the value of one of their labels."""
    return {got[label]: value for found, got, value in samples(text) if found == name and label in got}


def settled(read: Callable[[], float], polls: int, interval: float = 0.2) -> float:
    """`read()` once two reads `interval` apart agree (or after `polls` reads): a gauge that
    work ending asynchronously (closed sessions, cancelled subscriptions) still moves."""
    previous = read()
    for _ in range(polls):
        time.sleep(interval)
        now = read()
        if now == previous:
            return now
        previous = now
    return previous


def health(port: int) -> tuple[int, str] | None:
    """The status and text of the server's /health page, or None while nothing listens."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return None


def error_of(conn: psycopg.Connection, sql: str) -> psycopg.Error:
    """The error of a statement that must fail."""
    import pytest  # here: the benchmarks use this module without pytest

    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    return info.value


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost, and its key, written into `folder`."""
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def writes_until_crash(proc: ServerProcess, create: str, insert: str, count: int,
                       stop: Callable[[ServerProcess], None]) -> tuple[list[int], int | None]:
    """Start `proc`, run `create`, then `insert` with each of 1..count until the server dies:
    (the values acknowledged, the value under way when it died — None if it died before).
    `stop` kills the server afterwards, whatever happened."""
    acked: list[int] = []
    try:
        proc.start()
        with psycopg.connect(proc.dsn, autocommit=True) as c:
            c.execute(create)
            for i in range(1, count + 1):
                try:
                    c.execute(insert, (i,))
                except psycopg.OperationalError:
                    return acked, i
                acked.append(i)
    except (RuntimeError, psycopg.OperationalError):  # the crash came at start or at `create`
        return acked, None
    finally:
        stop(proc)
    return acked, None
