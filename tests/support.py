"""Starting a real sparkwire server process for integration tests, and what the tests that
talk to one share: fresh relation names, autocommit connections, the server's clock."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


_names = itertools.count(1)


def fresh(prefix: str) -> str:
    """A relation name no other test of this process uses."""
    return f"{prefix}_{next(_names)}"


def connect(server: ServerProcess, **kw) -> psycopg.Connection:
    return psycopg.connect(server.dsn, autocommit=True, **kw)


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


def metric(text: str, name: str, **labels: object) -> float | None:
    """The value of one labelled series in a Prometheus text exposition, or None if absent."""
    want = {k: str(v) for k, v in labels.items()}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            inside, value = line[len(name) + 1:].rsplit("} ", 1)
            found = dict(part.split("=", 1) for part in inside.split(","))
            if {k: v.strip('"') for k, v in found.items()} == want:
                return float(value)
    return None


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost, and its key, written into `folder`."""
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key
