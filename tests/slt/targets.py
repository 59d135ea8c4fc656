"""The two servers a file runs against, each giving every file a clean slate: a real
PostgreSQL 15 (a fresh database per file) and sparkwire (every table and view dropped before
and after the file; sparkwire has one database and no CREATE SCHEMA)."""

from __future__ import annotations

import contextlib
import itertools
import os

import psycopg
from psycopg.types.string import TextLoader

from tests.pgserver import PG_BIN, PostgresServer
from tests.slt.executor import Session
from tests.support import ServerProcess

# Values that keep their Python type; every other type arrives as the server's own text, so a
# `T` column compares what PostgreSQL prints (floats, numerics, arrays, bytea, json, dates).
_TYPED = {"bool", "int2", "int4", "int8", "oid"}


def text_connection(dsn: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True, connect_timeout=60)
    for info in psycopg.adapters.types:
        if info.name not in _TYPED:
            conn.adapters.register_loader(info.oid, TextLoader)
        if info.array_oid:
            conn.adapters.register_loader(info.array_oid, TextLoader)
    return conn


class PostgresTarget:
    name = "postgresql"

    def __init__(self, timeout: float) -> None:
        if not os.path.exists(f"{PG_BIN}/initdb"):
            raise RuntimeError(f"PostgreSQL 15 is not installed ({PG_BIN}): scripts/install.sh installs it")
        # Durability is no part of what we measure.
        self.server = PostgresServer({"fsync": "off", "synchronous_commit": "off",
                                      "full_page_writes": "off"}).start()
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._databases: dict[int, str] = {}  # id(session) → its database
        self._admin = psycopg.connect(self.server.dsn, autocommit=True)

    def session(self) -> Session:
        db = f"slt_{next(self._ids)}"
        self._admin.execute(f"CREATE DATABASE {db}")
        dsn = self.server.dsn.replace("dbname=postgres", f"dbname={db}")
        session = Session(lambda: text_connection(dsn), self.timeout)
        self._databases[id(session)] = db
        return session

    def finish(self, session: Session) -> None:
        session.close()
        self._admin.execute(f"DROP DATABASE {self._databases.pop(id(session))} WITH (FORCE)")

    def stop(self) -> None:
        self._admin.close()
        self.server.stop()


class SparkwireTarget:
    name = "sparkwire"

    def __init__(self, timeout: float, dsn: str | None = None, frontend: str | None = None) -> None:
        """A server of its own, or the one at `dsn` (whose public tables and views it drops);
        `frontend` sets the sessions' `sql_frontend` (sqlglot or postgres)."""
        self.process: ServerProcess | None = None
        if dsn is None:
            self.process = ServerProcess().start()
            self.process.wait_ready()
            dsn = self.process.dsn
        self.dsn = f"{dsn} options='-c sql_frontend={frontend}'" if frontend else dsn
        self.timeout = timeout

    def session(self) -> Session:
        session = Session(lambda: text_connection(self.dsn), self.timeout)
        self._drop_everything(session)
        return session

    def finish(self, session: Session) -> None:
        try:
            self._drop_everything(session)
        finally:
            session.close()

    def _drop_everything(self, session: Session) -> None:
        # Views before tables; a view over a view needs a second pass.
        for _ in range(5):
            left = 0
            for show, kind in (("SHOW VIEWS", "VIEW"), ("SHOW MATERIALIZED VIEWS", "MATERIALIZED VIEW"),
                               ("SHOW TABLES", "TABLE"),
                               ("SELECT relname FROM pg_catalog.pg_class WHERE relkind = 'S'", "SEQUENCE")):
                names: list[str] = []
                with contextlib.suppress(Exception):  # a kind this server does not have
                    names = [row[0] for row in session.run(show) or []]
                left += len(names)
                for name in names:
                    with contextlib.suppress(Exception):  # a dependent object: the next pass retries
                        session.run(f'DROP {kind} IF EXISTS "{name}"')
            if not left:
                return
        raise RuntimeError("sparkwire: could not drop what the previous file created")

    def stop(self) -> None:
        if self.process:
            self.process.cleanup()
