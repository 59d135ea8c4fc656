"""The server process: listener, Spark engine, coordinator, and the set of sessions."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import secrets
import signal
from dataclasses import dataclass

from server import metrics
from server.connection import Connection
from server.coordinator import Coordinator
from server.metrics import serve_metrics
from server.protocol.scram import make_verifier
from server.sources import SourceManager
from spark_backend.engine import SparkEngine

log = logging.getLogger("sparkwire")


@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 6875
    data_dir: str = "data"
    spark_master: str = "local[*]"
    password: str | None = None  # when set, SCRAM-SHA-256 for every user
    metrics_port: int = 6876  # 0 turns the /metrics endpoint off


class Server:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.engine = SparkEngine(config.spark_master)
        self.coordinator = Coordinator(config.data_dir, self.engine)
        self.sources = SourceManager(self.coordinator)
        self.sessions: dict[int, Connection] = {}
        self._pids = itertools.count(os.getpid() * 1000 % 2_000_000_000 + 1)
        self.mock_secret = secrets.token_bytes(16)
        self._verifier = make_verifier(config.password) if config.password else None
        self._server: asyncio.base_events.Server | None = None

    @property
    def password_required(self) -> bool:
        return self._verifier is not None

    def verifier_for(self, user: str) -> str | None:
        return self._verifier

    def next_pid(self) -> int:
        return next(self._pids)

    def cancel(self, pid: int, secret: int) -> None:
        conn = self.sessions.get(pid)
        if conn is not None and secrets.compare_digest(conn.secret.to_bytes(4, "big"),
                                                      secret.to_bytes(4, "big", signed=False)):
            log.info("cancel request", extra={"event": "cancel", "pid": pid})
            conn.cancel()

    def metrics_error(self, sqlstate: str) -> None:
        metrics.ERRORS.inc(sqlstate=sqlstate)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await Connection(self, reader, writer).run()

    async def start(self) -> None:
        self.coordinator.open()
        self.coordinator.start_ticking()
        self.sources.start_all()
        self.engine.start_in_background()
        self._server = await asyncio.start_server(self._handle, self.config.host, self.config.port,
                                                  limit=2**20, backlog=512)
        log.info("listening", extra={"event": "listening", "host": self.config.host,
                                     "port": self.config.port, "data_dir": self.config.data_dir})
        if self.config.metrics_port:
            await serve_metrics(self.config.host, self.config.metrics_port)
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
