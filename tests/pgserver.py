"""A throwaway PostgreSQL 15 server for tests and benchmarks.

PostgreSQL refuses to run as root, so when we are root the server runs as the
`postgres` user, in a data directory made with mkdtemp (pytest's tmp_path sits
under a root-only folder) and handed to that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from tests.support import free_port

PG_BIN = "/usr/lib/postgresql/15/bin"


class PostgresServer:
    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="sparkwire-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.settings = {"wal_level": "logical", "max_wal_senders": "10",
                         "max_replication_slots": "10", "fsync": "on",
                         "unix_socket_directories": self.dir, **(settings or {})}

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            pg = pwd.getpwnam("postgres")
            os.chown(self.dir, pg.pw_uid, pg.pw_gid)
        self._run(f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8")
        opts = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        self._run(f"{PG_BIN}/pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"),
                  "-o", f"-p {self.port} -k {self.dir} -h 127.0.0.1 {opts}", "-w", "start")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run([f"{PG_BIN}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                              stdout=subprocess.DEVNULL, check=False).returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError("PostgreSQL did not start")

    def stop(self) -> None:
        try:
            self._run(f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "immediate", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def reference_postgres(settings: dict[str, str] | None = None) -> Iterator[PostgresServer]:
    """A PostgreSQL 15 to compare sparkwire with, for a test module; skips the module when
    the binaries are missing (scripts/install.sh installs them)."""
    import pytest  # here: the benchmarks use this module without pytest

    if not os.path.exists(f"{PG_BIN}/initdb"):
        pytest.skip(f"PostgreSQL 15 is not installed ({PG_BIN}): scripts/install.sh installs it")
    pg = PostgresServer(settings).start()
    try:
        yield pg
    finally:
        pg.stop()


@contextmanager
def loaded(dsn: str, load: Callable[[psycopg.Connection], None], *setup: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to `dsn`, after the `setup` statements and `load(conn)`: the
    same data in sparkwire and in the reference PostgreSQL of a side-by-side test module."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql in setup:
            conn.execute(sql)
        load(conn)
        yield conn
