"""Kafka sources: a consumer per table, decoding and upsert per micro-batch, exactly once.

Each table created FROM a Kafka source reads the topic from the beginning with
its own offsets: a backlog as offset ranges that Spark's tasks read
(`spark_backend.kafka_read`), a few records by polling its own consumer. Every
batch becomes one write at one timestamp together with
the table's next offsets, so after a crash the table holds each record's
effect once. Decoding and, with ENVELOPE UPSERT, the choice of each key's
winner against the persisted rows are one Spark job per batch
(`spark_backend.kafka_batch`); the server holds no copy of the table, only
the keys in an error state (in the catalog, with the offsets).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from planner import kafka_syntax as ks
from planner import source_syntax as srcs
from planner.errors import INVALID_PARAMETER_VALUE, SqlError
from planner.types import BY_NAME, SqlType
from server.catalog_items import Column, Item
from server.catalog_ops import SetDetails
from server.metrics import KAFKA_BATCHES, SOURCE_LAG, SOURCE_ROWS
from server.outcome import CommandDone
from server.statement_context import StatementContext
from spark_backend import kafka_batch, kafka_consumer
from spark_backend.kafka_decode import DecodePlan, key_label
from spark_backend.kafka_read import Backlog, backlog_ranges

log = logging.getLogger("sparkwire.kafka")

_TYPES = {"text": "text", "bytes": "bytea", "json": "jsonb", "csv": "text"}
_META_TYPES = {"partition": "integer", "offset": "bigint", "timestamp": "timestamp without time zone",
               "headers": "jsonb"}


def _t(name: str) -> SqlType:
    return SqlType(BY_NAME[name])


def table_layout(spec: ks.KafkaSpec) -> tuple[list[Column], DecodePlan]:
    """A Kafka table's columns (key, value, [error], metadata) and its decoding plan."""
    key_cols: list[str] = []
    key_fmt = (spec.key_format.kind, spec.key_format.columns) if spec.key_format else None
    key_include = spec.include("key")
    if spec.envelope == "upsert" or key_include is not None:
        if key_fmt is None:
            raise SqlError(INVALID_PARAMETER_VALUE, "INCLUDE KEY needs a key format: KEY FORMAT ... VALUE FORMAT ...")
        if key_fmt[0] == "csv":
            raise SqlError("0A000", "KEY FORMAT CSV is not supported")
        key_cols = [key_include.name if key_include else "key"]
    vf = spec.value_format
    value_cols = {"text": ["text"], "bytes": ["data"], "json": ["data"]}.get(
        vf.kind, [f"column{i + 1}" for i in range(vf.columns)])
    columns = [Column(c, _t(_TYPES[key_fmt[0]])) for c in key_cols]
    columns += [Column(c, _t(_TYPES[vf.kind])) for c in value_cols]
    if spec.inline_errors:
        columns.append(Column("error", _t("text")))
    for inc in spec.includes:
        if inc.what != "key":
            columns.append(Column(inc.name, _t(_META_TYPES[inc.what])))
    names = [c.name for c in columns]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise SqlError("42701", f'column "{dup}" specified more than once: rename it with INCLUDE ... AS')
    plan = DecodePlan(key_fmt, (vf.kind, vf.columns), tuple(key_cols), tuple(value_cols),
                      spec.inline_errors, key_required=spec.envelope == "upsert")
    return columns, plan


_META_SOURCES = {"partition": "__partition", "offset": "__offset", "timestamp": "__ts", "headers": "__headers"}


def batch_target(table: Item, spec: ks.KafkaSpec, plan: DecodePlan) -> kafka_batch.Target:
    """Where each of the table's columns comes from in a decoded batch (the order of `table_layout`)."""
    sources = [*plan.key_columns, *plan.value_columns]
    if spec.inline_errors:
        sources.append("__err")
    sources += [_META_SOURCES[inc.what] for inc in spec.includes if inc.what != "key"]
    order = ks.order_kinds(spec) if spec.envelope == "upsert" else ()
    return kafka_batch.Target(table.id, tuple(table.column_types), tuple(sources), order, spec.inline_errors)


def _spec_from_json(d: dict) -> ks.KafkaSpec:
    return ks.parse_kafka_clauses(d["clauses"])


# How often the lag asks the broker for the high watermarks (in between, the
# watermarks the consumer learnt with its fetches are used: no round trip).
LAG_BROKER_INTERVAL = 5.0
# A backlog of at least this many records is read by Spark's tasks (kafka_read), one per
# partition or slice of one, rather than polled by the server's one consumer; fewer are
# polled, which is quicker for a few records (no tasks to start, no consumer to connect).
SPARK_READS = 100_000
IDLE_POLLS_PER_REFRESH = 5  # polls wait up to 0.2 s each: partitions and lag about once a second
# How often a table that is never idle (records keep coming, or backlogs keep Spark's tasks
# reading) asks for the topic's partitions, so that partitions added to it are read.
PARTITIONS_REFRESH_INTERVAL = 10.0


class KafkaTableRunner:
    """Consumes one topic into one table until stopped."""

    def __init__(self, manager, table: Item) -> None:
        self.manager = manager
        self.coord = manager.coord
        self.table_id = table.id
        self.status = "starting"
        self.error: str | None = None
        self._stop = threading.Event()
        self._task: asyncio.Task | None = None
        self.key_errors: dict[str, dict] = dict(table.details["source"].get("errors", {}))
        self._lag_asked = 0.0  # monotonic time the broker was last asked for watermarks
        self._partitions_asked = 0.0  # and for the topic's partitions
        self._labels: dict[str, str] | None = None
        self._poll_s = 0.0
        self._fill_timed_out = False

    @property
    def table(self) -> Item:
        return self.coord.catalog.items[self.table_id]

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._forget_lag()

    def _forget_lag(self) -> None:
        if self._labels is not None:
            # A dropped table has no lag; a stale figure would read as a stuck source.
            SOURCE_LAG.remove(**self._labels, unit="messages")

    def _dropped(self) -> bool:
        return self.table_id not in self.coord.catalog.items

    def _metric_labels(self) -> dict[str, str]:
        table = self.table
        source = self.coord.catalog.items[table.details["source"]["source_id"]]
        self._labels = {"source": source.name, "table": table.name}
        return self._labels

    async def _run(self) -> None:
        try:
            await self._consume()
        finally:
            self._forget_lag()

    async def _consume(self) -> None:
        backoff = 0.5
        # DROP TABLE (unlike DROP SOURCE) does not stop the runner: it ends itself.
        while not self._stop.is_set() and not self._dropped():
            consumer = None
            pending: asyncio.Future | None = None  # the next poll, under way during a batch
            try:
                info = self.table.details["source"]
                source = self.coord.catalog.items[info["source_id"]]
                config = self.manager.kafka_config(self.coord.catalog.items[source.details["connection_id"]])
                offsets = {int(p): o for p, o in info.get("offsets", {}).items()}
                spec = _spec_from_json(info)
                _, plan = table_layout(spec)
                target = batch_target(self.table, spec, plan)
                starting = time.perf_counter()
                consumer = await asyncio.to_thread(
                    kafka_consumer.Consumer, config, source.details["topic"], offsets,
                    timestamps="__ts" in target.sources or "timestamp" in target.order,
                    headers="__headers" in target.sources)
                # Backlogs of at least this many records are read by Spark's tasks.
                spark_reads = self.manager.kafka_spark_reads
                if spark_reads:
                    consumer.stand_aside()  # until the backlog is known to be small
                await asyncio.to_thread(consumer.refresh_partitions)
                self.status, self.error = "running", None
                await self._refresh_lag(consumer, ask_broker=True)
                log.debug("kafka consumer started", extra={"event": "kafka_consumer_started", "table": self.table_id,
                                                           "seconds": round(time.perf_counter() - starting, 3)})
                backoff = 0.5
                idle_polls = 0
                self._partitions_asked = time.monotonic()
                while not self._stop.is_set() and not self._dropped():
                    # Caught up, the consumer's next poll takes what comes; otherwise a large
                    # backlog (a new table's, or one left after a full poll) is Spark's to read.
                    if spark_reads and pending is None and (consumer.aside or not consumer.caught_up):
                        backlog = await self._backlog(consumer, config, spark_reads)
                        if backlog is not None:
                            self._poll_s, self._fill_timed_out = 0.0, False
                            await asyncio.to_thread(consumer.stand_aside)
                            await self._ingest(spec, plan, target, backlog)
                            # The lag is set by the next _backlog, which asks the broker.
                            await self._ask_partitions_now_and_then(consumer)
                            continue
                        if consumer.aside:
                            await asyncio.to_thread(consumer.take_over, self._next_offsets())
                    polling = time.perf_counter()
                    raw = await (pending if pending is not None else
                                 asyncio.to_thread(consumer.poll, spark_reads or kafka_consumer.MAX_BATCH))
                    pending = None
                    self._poll_s, self._fill_timed_out = time.perf_counter() - polling, consumer.fill_timed_out
                    await self._ask_partitions_now_and_then(consumer)
                    if consumer.errors:
                        self.status, self.error = "stalled", consumer.errors[-1]
                        consumer.errors.clear()
                    elif raw.num_rows:
                        self.status, self.error = "running", None
                    if raw.num_rows == 0:
                        idle_polls += 1
                        if idle_polls % IDLE_POLLS_PER_REFRESH == 0:
                            await asyncio.to_thread(consumer.refresh_partitions)
                            if self.status == "stalled" and not consumer.errors:
                                # The broker answers again: an idle topic must not stay "stalled".
                                self.status, self.error = "running", None
                            await self._refresh_lag(consumer)
                        continue
                    # With a backlog, the consumer thread builds the next batch while Spark
                    # works on this one. Nothing is acknowledged by polling: if this batch
                    # fails, the consumer is recreated from the durable offsets and the polled
                    # batch is dropped. Caught up, the next poll waits for the batch's end.
                    if not consumer.caught_up and not (spark_reads and consumer.remaining >= spark_reads):
                        pending = asyncio.ensure_future(asyncio.to_thread(consumer.poll, spark_reads or
                                                                          kafka_consumer.MAX_BATCH))
                    await self._ingest(spec, plan, target, raw)
                    await self._refresh_lag(consumer)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a broker problem stalls only this table
                self.status, self.error = "stalled", getattr(exc, "message", str(exc))
                log.warning("kafka table stalled", extra={"event": "kafka_stalled", "table": self.table_id,
                                                          "error": self.error})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10)
            finally:
                if pending is not None:
                    await asyncio.gather(pending, return_exceptions=True)  # before closing its consumer
                if consumer is not None:
                    await asyncio.to_thread(consumer.close)

    def _next_offsets(self) -> dict[int, int]:
        """The durable offsets: each partition's next record to ingest."""
        return {int(p): o for p, o in self.table.details["source"].get("offsets", {}).items()}

    async def _ask_partitions_now_and_then(self, consumer: kafka_consumer.Consumer) -> None:
        """Learn the topic's partitions every PARTITIONS_REFRESH_INTERVAL, for a table that is
        never idle. Called only while no poll runs in another thread: a refresh may re-assign."""
        if time.monotonic() - self._partitions_asked >= PARTITIONS_REFRESH_INTERVAL:
            self._partitions_asked = time.monotonic()
            await asyncio.to_thread(consumer.refresh_partitions)

    async def _backlog(self, consumer: kafka_consumer.Consumer, config: dict, at_least: int) -> Backlog | None:
        """The records not yet ingested, up to a batch's worth, when there are `at_least`;
        the lag gauge is set from the same watermarks."""
        # A consumer that fetches learns the watermarks with its fetches; one standing aside asks.
        unread = await asyncio.to_thread(consumer.unread, self._next_offsets(), consumer.aside)
        if unread is None:
            return None
        lag = sum(end - start for start, end in unread.values())
        if not self._dropped():
            SOURCE_LAG.set(lag, **self._metric_labels(), unit="messages")
            if consumer.aside:
                self._lag_asked = time.monotonic()
        if lag < at_least:
            return None
        return Backlog(config, consumer.topic, backlog_ranges(unread, kafka_consumer.MAX_BATCH),
                       consumer.timestamps, consumer.headers)

    async def _refresh_lag(self, consumer: kafka_consumer.Consumer, ask_broker: bool = False) -> None:
        """Set the lag gauge: what the topic holds beyond the table's durable offsets."""
        if self._dropped():
            return
        now = time.monotonic()
        if now - self._lag_asked >= LAG_BROKER_INTERVAL:
            ask_broker = True
        if ask_broker:
            self._lag_asked = now
        try:
            lag = await asyncio.to_thread(consumer.lag, self._next_offsets(), ask_broker)
        except Exception as exc:  # noqa: BLE001 - the figure waits for the next refresh
            log.debug("kafka lag unknown: %s", exc)
            return
        if lag is None and not ask_broker:
            self._lag_asked = 0.0  # not learnt from fetches yet: ask the broker next time
        elif lag is not None:
            SOURCE_LAG.set(lag, **self._metric_labels(), unit="messages")

    async def _ingest(self, spec: ks.KafkaSpec, plan: DecodePlan, target: kafka_batch.Target,
                      raw: kafka_batch.Records) -> None:
        started = time.perf_counter()
        read_by = "spark" if isinstance(raw, Backlog) else "server"
        if spec.envelope == "upsert":
            # Read the persisted rows at the latest commit: this runner is the table's only
            # writer and commits each batch before taking the next, so that is its state.
            result = await self.coord.engine.run(kafka_batch.upsert_batch, plan, raw, target, self.coord.store,
                                                 self.coord.read_ts(), bool(self.key_errors))
            errors = error_changes(result.events, self.key_errors)
        else:
            result = await self.coord.engine.run(kafka_batch.append_batch, plan, raw, target, self.coord.store)
            errors = result.errors
        if isinstance(raw, Backlog):
            offsets = raw.next_offsets()
        else:
            last = raw.group_by("partition").aggregate([("offset", "max")])
            offsets = {str(p): o + 1 for p, o in zip(last.column("partition").to_pylist(),
                                                     last.column("offset_max").to_pylist())}
        details = {"source": {"offsets": offsets}}
        if errors:
            # A new error always overrides an old one; None (a later record or tombstone) heals.
            merged = {k: v for k, v in {**self.key_errors, **errors}.items() if v is not None}
            details["source"]["errors"] = merged
        ops = [SetDetails(self.table_id, details)]
        if errors:
            # Errors are replaced wholesale: merging could not forget a healed key.
            ops.insert(0, SetDetails(self.table_id, {"source": {"errors": None}}))
        updates = result.updates
        spark_done = time.perf_counter()
        async with self.coord.write_lock:
            if self._dropped():
                return  # dropped while the batch ran: its collection is gone
            await self.coord.commit(ops, {self.table_id: updates} if updates.num_rows else {})
        log.debug("kafka batch", extra={
            "event": "kafka_batch", "table": self.table_id, "records": raw.num_rows,
            "read_by": read_by, "poll_s": round(self._poll_s, 3),
            "fill_timed_out": self._fill_timed_out,
            "inserted": result.inserted, "retracted": result.retracted,
            "spark_s": round(spark_done - started, 3), "commit_s": round(time.perf_counter() - spark_done, 3),
            **{f"{k}_s": round(v, 3) for k, v in result.seconds.items()}})
        if errors:
            self.key_errors = details["source"]["errors"]
        self.manager.rows_ingested += updates.num_rows
        SOURCE_ROWS.inc(updates.num_rows, **self._metric_labels())
        KAFKA_BATCHES.inc(1, **self._metric_labels(), read_by=read_by)


def error_changes(events: list[dict], key_errors: dict[str, dict]) -> dict[str, dict | None]:
    """How an upsert batch changes the keys in error: a winner that is an error puts its key
    in error (a new error always overrides an old one), any other winner of a key in error
    (a later record or a tombstone) heals it (None)."""
    out: dict[str, dict | None] = {}
    for ev in events:
        label = key_label(ev["__key"], ev["__key_raw"])
        if ev["__is_err"]:
            out[label] = {"partition": ev["__partition"], "offset": ev["__offset"], "message": ev["__err"]}
        elif label in key_errors:
            out[label] = None
    return out


# -- statements ----------------------------------------------------------------------

async def create_kafka_source(manager, session: StatementContext, stmt: srcs.CreateSource,
                              connection: Item):
    coord = session.coord
    options = dict(stmt.options)
    topic = options.get("topic")
    if not topic:
        raise SqlError(INVALID_PARAMETER_VALUE, "KAFKA sources need a TOPIC option")
    for opt in options:
        if opt == "group id prefix":
            raise SqlError("0A000", "GROUP ID PREFIX is not supported: sparkwire's consumers keep their offsets "
                                    "with the table's data, in no consumer group")
        if opt not in ("topic", "start offset", "start timestamp"):
            raise SqlError(INVALID_PARAMETER_VALUE, f"unrecognized KAFKA source option {opt.upper()}")
    start = _start_offsets(options)
    start_ms = _start_time(options["start timestamp"]) if "start timestamp" in options else None
    config = manager.kafka_config(connection)
    topics = await asyncio.to_thread(_topics, config)
    if topic not in topics:
        raise SqlError("42704", f'topic "{topic}" does not exist on the broker')
    if start_ms is not None:
        start = await asyncio.to_thread(_broker_call, "read the start offsets from", kafka_consumer.offsets_at,
                                        config, topic, start_ms)
    elif start:
        # Past a partition's end, the consumer would find its offset out of range and start
        # over from the beginning: refused rather than read from where it was not asked to.
        ends = await asyncio.to_thread(_broker_call, "read the start offsets from", kafka_consumer.end_offsets,
                                       config, topic)
        for p, (offset, end) in enumerate(zip(start, ends)):
            if offset > end:
                raise SqlError(INVALID_PARAMETER_VALUE, f"START OFFSET {offset} for partition {p} of topic "
                                                        f'"{topic}" is past its end (offset {end})')
    clauses = stmt.rest.strip()
    source_name = f"{stmt.name}_progress" if clauses else stmt.name
    if coord.catalog.get(source_name) is not None:
        raise SqlError("42P07", f'relation "{source_name}" already exists')
    if clauses:
        # Check the table's clauses and name first: a failed statement must leave no source behind.
        table_layout(_checked_spec(clauses))
        if coord.catalog.get(stmt.name) is not None:
            raise SqlError("42P07", f'relation "{stmt.name}" already exists')
    # START TIMESTAMP is resolved once, here: the source then behaves as if START OFFSET
    # had been given, the same for each of its tables and across restarts (as in Materialize).
    start_sql = f", START OFFSET ({', '.join(map(str, start))})" if start else ""
    source = Item(coord.catalog.allocate_id(), source_name, "source", (), coord.read_ts(),
                  sql=f'CREATE SOURCE "{source_name}" FROM KAFKA CONNECTION "{connection.name}" '
                      f"(TOPIC '{topic}'{start_sql})",
                  depends_on=(connection.id,),
                  details={"connector": "kafka", "connection_id": connection.id, "topic": topic,
                           "start_offsets": start})
    await session.ddl(lambda: coord.catalog.plan_create(source))
    if clauses:
        # The single-statement form: the source becomes <name>_progress, the data <name>.
        table_stmt = srcs.CreateTableFromSource(stmt.name, None, source_name, topic, (), False, clauses)
        await create_kafka_table(manager, session, table_stmt, coord.catalog.items[source.id])
    return CommandDone("CREATE SOURCE")


async def create_kafka_table(manager, session: StatementContext, stmt: srcs.CreateTableFromSource,
                             source: Item):
    coord = session.coord
    reference = stmt.reference.strip('"')
    if reference != source.details["topic"]:
        raise SqlError(INVALID_PARAMETER_VALUE, f'source "{source.name}" reads topic '
                                                f'"{source.details["topic"]}", not "{reference}"')
    if stmt.columns is not None:
        raise SqlError("0A000", "a column list is not supported for tables from Kafka sources")
    spec = _checked_spec(stmt.rest)
    columns, _ = table_layout(spec)
    table = Item(coord.catalog.allocate_id(), stmt.name, "table", tuple(columns), coord.read_ts(),
                 sql=f'CREATE TABLE "{stmt.name}" FROM SOURCE "{source.name}" (REFERENCE "{reference}") '
                     f"{stmt.rest.strip()}",
                 depends_on=(source.id,),
                 details={"source": {"source_id": source.id, "reference": reference,
                                     "clauses": stmt.rest.strip(), "errors": {},
                                     # A table starts where its source says (the next offset to
                                     # read, per partition); unlisted partitions at their first.
                                     "offsets": {str(p): o for p, o in
                                                 enumerate(source.details.get("start_offsets", []))}}})
    await session.ddl(lambda: coord.catalog.plan_create(table))
    manager.start_kafka_table(coord.catalog.items[table.id])
    return CommandDone("CREATE TABLE")


def _start_offsets(options: dict) -> list[int]:
    """START OFFSET as the first offset to read in partitions 0, 1, ...: one number or a list."""
    if "start offset" not in options:
        return []
    if "start timestamp" in options:
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot specify both START OFFSET and START TIMESTAMP")
    value = options["start offset"]
    offsets = list(value) if isinstance(value, tuple) else [value]
    if not offsets:
        raise SqlError(INVALID_PARAMETER_VALUE, "START OFFSET needs at least one offset")
    for offset in offsets:
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise SqlError(INVALID_PARAMETER_VALUE, f"START OFFSET values must be integers of 0 or more, not {offset!r}")
    return offsets


def _start_time(value: object) -> int:
    """START TIMESTAMP in milliseconds since the epoch; a negative value is that long ago."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise SqlError(INVALID_PARAMETER_VALUE, f"START TIMESTAMP must be an integer number of milliseconds, "
                                                f"not {value!r}")
    return value if value >= 0 else int(time.time() * 1000) + value


def _broker_call(what: str, fn, config: dict, *args):
    """fn(config, *args), a question to the broker; a failure is 08006 saying what was asked."""
    try:
        return fn(config, *args)
    except Exception as exc:
        raise SqlError("08006", f"cannot {what} Kafka broker {config.get('bootstrap.servers')}: {exc}") from exc


def _checked_spec(clauses: str) -> ks.KafkaSpec:
    try:
        spec = ks.parse_kafka_clauses(clauses)
        ks.check(spec)
    except SqlError as err:
        err.position = None  # relative to the clauses, not the statement: no caret rather than a wrong one
        raise
    return spec


def _topics(config: dict) -> list[str]:
    return _broker_call("reach", kafka_consumer.check_broker, config)


async def check_kafka(manager, connection: Item) -> None:
    await asyncio.to_thread(_topics, manager.kafka_config(connection))
