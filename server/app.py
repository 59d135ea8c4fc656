"""The server process: listener, Spark engine, coordinator, and the set of sessions."""

from __future__ import annotations

import asyncio
import datetime
import gc
import itertools
import logging
import os
import secrets
import signal
import ssl
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from planner.errors import INSUFFICIENT_PRIVILEGE, SqlError
from planner.pg_compat import DATABASE_OID
from server import metrics, prepared
from server.connection import Connection
from server.coordinator import Coordinator
from server.kafka import SPARK_READS
from server.metrics import serve_metrics
from server.protocol.scram import make_verifier
from server.sources import SourceManager
from server.subscribe import SubscribeLimits
from server.subscribe_buffer import DEFAULT_BUDGET
from spark_backend.engine import SparkEngine

log = logging.getLogger("sparkwire")

SWITCH_INTERVAL = 0.0005  # seconds (CPython's default is 0.005)
# Allocations between young collections, young collections between middle ones, middle ones
# between full ones (CPython's defaults: 700, 10, 10).
GC_THRESHOLDS = (10_000, 10, 100)


@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 6875
    data_dir: str = "data"
    spark_master: str = "local[*]"
    password: str | None = None  # when set, SCRAM-SHA-256 for every user
    metrics_port: int = 6876  # 0 turns the /metrics endpoint off
    tls_cert: str | None = None
    tls_key: str | None = None
    require_tls: bool = False
    users_file: str | None = None  # lines of user:password (or user:SCRAM-SHA-256$... verifiers)
    spark_conf: dict[str, str] = field(default_factory=dict)  # --spark-conf KEY=VALUE
    kafka_spark_reads: int = SPARK_READS  # --kafka-spark-reads
    subscribe_buffer_bytes: int = DEFAULT_BUDGET  # --subscribe-buffer-bytes
    subscribe_stall_timeout: float = 0.0  # --subscribe-stall-timeout; 0: never disconnect


class Server:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.engine = SparkEngine(config.spark_master, conf=config.spark_conf, data_dir=config.data_dir)
        self.coordinator = Coordinator(config.data_dir, self.engine)
        self.sources = SourceManager(self.coordinator, config.kafka_spark_reads)
        self.coordinator.activity = self.activity_rows
        self.coordinator.prepared_statements = self.prepared_rows
        self.sessions: dict[int, Connection] = {}
        self.subscribe_limits = SubscribeLimits(config.subscribe_buffer_bytes,
                                                config.subscribe_stall_timeout or None)
        self._pids = itertools.count(os.getpid() * 1000 % 2_000_000_000 + 1)
        self.mock_secret = secrets.token_bytes(16)
        self._verifier = make_verifier(config.password) if config.password else None
        self._file_users = load_users(config.users_file) if config.users_file else {}
        self.tls = tls_context(config.tls_cert, config.tls_key) if config.tls_cert else None
        if config.require_tls and self.tls is None:
            raise SystemExit("--require-tls needs --tls-cert and --tls-key")
        self._server: asyncio.base_events.Server | None = None

    @property
    def password_required(self) -> bool:
        """Password authentication once any password exists: --password, a users file,
        or a role created WITH PASSWORD; trust otherwise."""
        return self._verifier is not None or bool(self._file_users) or any(
            i.kind == "role" for i in self.coordinator.catalog.items.values())

    def verifier_for(self, user: str) -> str | None:
        role = self.coordinator.catalog.get(user)
        if role is not None and role.kind == "role":
            return role.details.get("verifier")
        return self._file_users.get(user) or self._verifier

    def next_pid(self) -> int:
        return next(self._pids)

    def cancel(self, pid: int, secret: int) -> None:
        conn = self.sessions.get(pid)
        if conn is not None and secrets.compare_digest(conn.secret.to_bytes(4, "big"),
                                                      secret.to_bytes(4, "big", signed=False)):
            log.info("cancel request", extra={"event": "cancel", "pid": pid})
            conn.cancel()

    def activity_rows(self) -> list[tuple]:
        """pg_stat_activity: one row per logged-in session."""
        rows = []
        for conn in list(self.sessions.values()):
            session, activity = getattr(conn, "session", None), getattr(conn, "activity", None)
            if session is None or activity is None:
                continue
            activity.application_name = session.settings.values.get("application_name", "")
            xact_start = session.txn.started.replace(tzinfo=datetime.UTC) if session.txn is not None else None
            rows.append(activity.row(DATABASE_OID, session.database, session.status, xact_start))
        return rows

    def prepared_rows(self, pid: int) -> list[tuple]:
        """pg_prepared_statements: the prepared statements of the session with this pid."""
        session = getattr(self.sessions.get(pid), "session", None)
        return prepared.rows(session.prepared) if session is not None else []

    def signal(self, caller_user: str, pid: int, terminate: bool) -> bool:
        """pg_cancel_backend / pg_terminate_backend: False when no session has that pid; a
        session of another user may not be signalled (42501)."""
        conn = self.sessions.get(pid)
        if conn is None or getattr(conn, "session", None) is None:
            return False
        if conn.session.user != caller_user:
            raise SqlError(INSUFFICIENT_PRIVILEGE, "permission denied to "
                           + ("terminate process" if terminate else "cancel query"),
                           detail="Only a session of the same role may be signalled.")
        if terminate:
            conn.terminate()
        else:
            conn.cancel()
        return True

    def notify(self, from_pid: int, channel: str, payload: str) -> None:
        """Deliver a NOTIFY to every session that LISTENs to the channel (its own included)."""
        for conn in list(self.sessions.values()):
            session = getattr(conn, "session", None)
            if session is not None and channel in session.listening:
                conn.notification(from_pid, channel, payload)

    def metrics_error(self, sqlstate: str) -> None:
        metrics.ERRORS.inc(sqlstate=sqlstate)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await Connection(self, reader, writer).run()

    async def start(self) -> None:
        # Worker threads run Python over whole batches (a join's state, a snapshot's rows);
        # a thread that wants the GIL waits up to the switch interval for it, and the event
        # loop wants it back after every socket read and every finished thread call. The
        # default 5 ms, several times per statement, delays every session's replies.
        sys.setswitchinterval(SWITCH_INTERVAL)
        # A full collection walks every tracked object with the GIL held: ~100-170 ms each
        # once a join's state holds a million rows per side, and with the defaults one ran
        # every few hundred milliseconds while that state was built (each time the objects
        # that survived grew by a quarter), so other sessions' one-row INSERTs waited: p99
        # 165 ms. With these thresholds full collections come a hundred times less often
        # (p99 38 ms in bench_subscribe_loop.py); cyclic garbage, which mostly dies young,
        # is still collected by the young collections.
        gc.set_threshold(*GC_THRESHOLDS)
        # Replication streams hold a thread each for as long as they run, and every Kafka
        # poll borrows one: the default pool (cores + 4 threads) would starve.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=128, thread_name_prefix="io"))
        self.coordinator.open()
        self.coordinator.start_ticking()
        self.sources.start_all()
        self.engine.start_in_background()
        self._server = await asyncio.start_server(self._handle, self.config.host, self.config.port,
                                                  limit=2**20, backlog=512)
        log.info("listening", extra={"event": "listening", "host": self.config.host,
                                     "port": self.config.port, "data_dir": self.config.data_dir})
        if self.config.metrics_port:
            await serve_metrics(self.config.host, self.config.metrics_port, self.engine.health)
            log.info("metrics endpoint", extra={"event": "metrics_listening",
                                                "url": f"http://{self.config.host}:{self.config.metrics_port}/metrics"})

    async def serve_forever(self) -> None:
        await self.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down", extra={"event": "shutdown"})
        self._server.close()
        for conn in list(self.sessions.values()):
            await conn.shutdown()
        await self.sources.stop_all()
        self.coordinator.close()
        self.engine.stop()


def load_users(path: str) -> dict[str, str]:
    """`user:password` or `user:SCRAM-SHA-256$...` lines; blank lines and # comments skipped."""
    users = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, secret = line.partition(":")
            if not sep or not name:
                raise SystemExit(f"{path}:{n}: expected user:password")
            users[name] = secret if secret.startswith("SCRAM-SHA-256$") else make_verifier(secret)
    return users


def tls_context(cert: str, key: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx
