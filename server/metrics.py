"""Prometheus metrics and the HTTP endpoint that serves them.

A deliberately small registry: counters, gauges and histograms with labels,
rendered in the Prometheus text exposition format. The endpoint is a bare
asyncio HTTP/1.0 responder, since `/metrics` is all it serves.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections import defaultdict
from collections.abc import Callable

log = logging.getLogger("sparkwire.metrics")

Labels = tuple[tuple[str, str], ...]


def _labels(labels: dict[str, str]) -> Labels:
    return tuple(sorted(labels.items()))


def _render_labels(labels: Labels, extra: str = "") -> str:
    parts = [f'{k}="{_escape(v)}"' for k, v in labels]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _number(value: float) -> str:
    """Exact: counters pass 1e6 quickly, and 6 significant digits would hide their growth."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metric:
    kind = "untyped"

    def __init__(self, name: str, help_text: str) -> None:
        self.name = name
        self.help = help_text

    def render(self) -> list[str]:
        raise NotImplementedError


class Counter(Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str) -> None:
        super().__init__(name, help_text)
        self.values: dict[Labels, float] = defaultdict(float)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self.values[_labels(labels)] += amount

    def get(self, **labels: str) -> float:
        return self.values.get(_labels(labels), 0.0)

    def render(self) -> list[str]:
        return [f"{self.name}{_render_labels(k)} {_number(v)}" for k, v in sorted(self.values.items())]


class Gauge(Counter):
    kind = "gauge"

    def set(self, value: float, **labels: str) -> None:
        self.values[_labels(labels)] = value

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        self.values[_labels(labels)] -= amount

    def remove(self, **labels: str) -> None:
        """Drop a series (its source or table is gone), rather than report a stale value."""
        self.values.pop(_labels(labels), None)


class Histogram(Metric):
    kind = "histogram"
    BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

    def __init__(self, name: str, help_text: str) -> None:
        super().__init__(name, help_text)
        self.counts: dict[Labels, list[int]] = {}
        self.sums: dict[Labels, float] = defaultdict(float)

    def observe(self, value: float, **labels: str) -> None:
        key = _labels(labels)
        counts = self.counts.setdefault(key, [0] * (len(self.BUCKETS) + 1))
        counts[bisect.bisect_left(self.BUCKETS, value)] += 1
        self.sums[key] += value

    def render(self) -> list[str]:
        out = []
        for key, counts in sorted(self.counts.items()):
            running = 0
            for bound, n in zip([*self.BUCKETS, float("inf")], counts):
                running += n
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                extra = 'le="' + le + '"'
                out.append(f"{self.name}_bucket{_render_labels(key, extra)} {running}")
            out.append(f"{self.name}_sum{_render_labels(key)} {_number(self.sums[key])}")
            out.append(f"{self.name}_count{_render_labels(key)} {running}")
        return out


class Registry:
    def __init__(self) -> None:
        self.metrics: list[Metric] = []

    def counter(self, name: str, help_text: str) -> Counter:
        return self._add(Counter(name, help_text))

    def gauge(self, name: str, help_text: str) -> Gauge:
        return self._add(Gauge(name, help_text))

    def histogram(self, name: str, help_text: str) -> Histogram:
        return self._add(Histogram(name, help_text))

    def _add(self, metric):
        self.metrics.append(metric)
        return metric

    def render(self) -> str:
        lines = []
        for metric in self.metrics:
            lines.append(f"# HELP {metric.name} {metric.help}")
            lines.append(f"# TYPE {metric.name} {metric.kind}")
            lines.extend(metric.render())
        return "\n".join(lines) + "\n"


REGISTRY = Registry()
SESSIONS = REGISTRY.gauge("sparkwire_sessions", "Open client sessions.")
STATEMENTS = REGISTRY.counter("sparkwire_statements_total", "Statements executed, by kind and outcome.")
ERRORS = REGISTRY.counter("sparkwire_errors_total", "Errors sent to clients, by SQLSTATE.")
SUBSCRIPTIONS = REGISTRY.counter("sparkwire_subscriptions_total",
                                 "SUBSCRIBEs started, by output mode.")
ACTIVE_SUBSCRIPTIONS = REGISTRY.gauge("sparkwire_active_subscriptions",
                                      "SUBSCRIBEs running now, by output mode.")
BATCH_SECONDS = REGISTRY.histogram("sparkwire_subscribe_batch_seconds",
                                   "Time to compute one SUBSCRIBE micro-batch (a snapshot, a catch-up "
                                   "from storage, or a batch of commits), by strategy; time spent "
                                   "waiting for the client to read is left out.")
ROWS_SENT = REGISTRY.counter("sparkwire_subscribe_rows_total", "Rows emitted by SUBSCRIBEs.")
# Label `subscription` is the id mz_internal.mz_subscriptions shows (s<n>); a series goes
# away with its subscription.
SUBSCRIBE_BUFFERED_BYTES = REGISTRY.gauge("sparkwire_subscribe_buffered_bytes",
                                          "Output a SUBSCRIBE's client has not read yet (buffered, or held ahead by its cursor), in bytes.")
SUBSCRIBE_BUFFERED_ROWS = REGISTRY.gauge("sparkwire_subscribe_buffered_rows",
                                         "Output rows a SUBSCRIBE's client has not read yet (buffered, or held ahead by its cursor).")
FETCH_ROWS_AHEAD = REGISTRY.counter(
    "sparkwire_fetch_rows_encoded_ahead_total",
    "Rows of a FETCH on a SUBSCRIBE cursor sent as encoded ahead, while the client read the previous FETCH.")
SUBSCRIBE_LAG_DISCONNECTS = REGISTRY.counter(
    "sparkwire_subscribe_lag_disconnects_total",
    "SUBSCRIBE clients disconnected because they read nothing for --subscribe-stall-timeout "
    "while their buffer was full.")
# Sources: label `source` is the source's name, `table` the table it feeds. Lag is
# what the upstream has that is not yet durable here, in the upstream's own unit:
# bytes of WAL for PostgreSQL, messages for Kafka (label `unit`).
SOURCE_ROWS = REGISTRY.counter("sparkwire_source_rows_ingested_total",
                               "Updates (inserts and retractions) written to tables from sources.")
KAFKA_BATCHES = REGISTRY.counter("sparkwire_kafka_batches_total",
                                 "Batches written to Kafka tables, by who read their records: the server "
                                 "(polled) or spark (a backlog read by Spark's tasks).")
SOURCE_LAG = REGISTRY.gauge("sparkwire_source_lag",
                            "Upstream data not yet ingested: WAL bytes (postgres) or messages (kafka).")


SPARK_READY = REGISTRY.gauge("sparkwire_spark_ready", "1 once the SparkSession answers queries.")


async def serve_metrics(host: str, port: int,
                        health: Callable[[], str | None] = lambda: None) -> asyncio.base_events.Server:
    """Serve GET /metrics, and GET /health: 200 `ready` while `health()` is None (Spark is up
    and runs a trivial job), else 503 with what `health()` says is wrong.
    Anything else is a plain 404."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            path = parts[1].split("?")[0] if len(parts) >= 2 and parts[0] == "GET" else None
            if path == "/metrics":
                SPARK_READY.set(1 if health() is None else 0)
                body = REGISTRY.render().encode()
                head = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            elif path == "/health":
                problem = health()
                up = problem is None
                body = b"ready\n" if up else f"{problem}\n".encode()
                head = ("HTTP/1.0 200 OK\r\n" if up else "HTTP/1.0 503 Service Unavailable\r\n") + \
                    "Content-Type: text/plain\r\n"
            else:
                body = b"not found\n"
                head = "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n"
            writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)
