"""Sources: secrets, connections, PostgreSQL sources, and the tables they feed.

A source is one replication slot upstream and one runner here. Each table
created FROM SOURCE binds an upstream table (by reference) and a projection of
its columns. The runner takes each table's snapshot (the first through the
source's own slot, as the postgres-sources design describes; later ones through
a temporary slot, so they join the running stream with no gap and no overlap),
then follows the stream: every upstream transaction is written whole at one
mz_timestamp (when transactions are waiting, several share one write), together
with the source's new LSN, so progress and data are durable together and the LSN
is confirmed upstream only after that. Values arrive as PostgreSQL's text output
and are converted a column at a time (writes.text_columns_to_updates).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import operator
import secrets as pysecrets
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa

from planner import source_syntax as srcs
from planner.codecs.text_in import decode_text
from planner.errors import (
    DUPLICATE_OBJECT,
    INVALID_PARAMETER_VALUE,
    UNDEFINED_COLUMN,
    UNDEFINED_OBJECT,
    WRONG_OBJECT_TYPE,
    SqlError,
)
from planner.types import SqlType
from server import kafka, writes
from server.catalog_items import Column, Item
from server.catalog_ops import CatalogOp, DropCollection, DropItem, SetDetails, SwapItems
from server.metrics import SOURCE_LAG, SOURCE_ROWS
from server.outcome import CommandDone
from server.statement_context import StatementContext
from spark_backend import pg_upstream, pgoutput
from spark_backend import postgres_source as pg

log = logging.getLogger("sparkwire.sources")


# -- bindings: what the stream thread needs to know about each fed table ---------------

@dataclass
class Binding:
    table: Item
    upstream: pg.UpstreamTable
    positions: list[int]  # upstream column index of each of our columns, by name at creation
    snapshot_lsn: int | None  # changes committed before it are in the snapshot
    error: str | None = None
    relation: object = None  # the stream's latest Relation message for the table, and
    relation_pick: Callable = tuple  # our columns' values from one of its rows

    @property
    def ready(self) -> bool:
        return self.snapshot_lsn is not None and self.error is None


@dataclass
class SourceStatus:
    status: str = "starting"  # starting | snapshotting | running | stalled | dropped
    error: str | None = None
    updated_at: float = field(default_factory=time.time)
    snapshot_rows: dict[str, tuple[int, int]] = field(default_factory=dict)  # table → (copied, expected)


class PostgresSourceRunner:
    """Keeps one PostgreSQL source ingesting until stopped."""

    def __init__(self, manager: SourceManager, source: Item) -> None:
        self.manager = manager
        self.coord = manager.coord
        self.source_id = source.id
        self.status = SourceStatus()
        self._stop = threading.Event()
        self._closing = False
        self._restart = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._snapshots_done: dict[str, asyncio.Future] = {}
        self._progressed = False  # something was ingested since the last failure
        self.bindings: dict[str, Binding] = {}

    @property
    def source(self) -> Item:
        return self.coord.catalog.items[self.source_id]

    def params(self) -> pg.Params:
        return self.manager.params_for(self.coord.catalog.items[self.source.details["connection_id"]])

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._closing = True
        self._stop.set()
        self._restart.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        SOURCE_LAG.remove(**self._lag_labels)

    @property
    def _lag_labels(self) -> dict[str, str]:
        item = self.coord.catalog.items.get(self.source_id)
        return {"source": item.name if item else self.source_id, "table": "", "unit": "bytes"}

    def add_table(self, table: Item) -> asyncio.Future:
        """Bind a new table; the future resolves once its snapshot is durable."""
        fut = asyncio.get_running_loop().create_future()
        self._snapshots_done[table.id] = fut
        self._stop.set()  # pause the stream so the snapshot can be taken in order
        self._restart.set()
        return fut

    # -- the loop --------------------------------------------------------------
    async def _run(self) -> None:
        backoff = 0.5
        while not self._closing:
            try:
                self._load_bindings()
                await self._snapshot_pending()
                self.status = SourceStatus("running", snapshot_rows=self.status.snapshot_rows)
                self._stop.clear()
                if not self.source.details.get("slot_created"):
                    # No table yet: nothing to stream until the first CREATE TABLE.
                    await self._restart.wait()
                    self._restart.clear()
                    continue
                await asyncio.to_thread(
                    pg.stream, self.params(), self.source.details["slot"],
                    self.source.details["publication"], self.source.details.get("lsn", 0),
                    self._apply_from_thread, self._stop, self._on_relation, self._on_idle_from_thread,
                    self._on_lag)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a dead upstream stalls only this source
                if self._progressed:  # back off afresh only after an attempt that got somewhere
                    backoff = 0.5
                self._progressed = False
                message = exc.message if isinstance(exc, SqlError) else pg.upstream_error(exc).message
                self.status = SourceStatus("stalled", message, snapshot_rows=self.status.snapshot_rows)
                log.warning("source stalled", extra={"event": "source_stalled", "source": self.source.name,
                                                     "error": message, "retry_in": backoff})
                for table_id, fut in list(self._snapshots_done.items()):
                    if isinstance(exc, SqlError) and not fut.done() and table_id not in self._retryable():
                        fut.set_exception(exc)
                try:
                    await asyncio.wait_for(self._restart.wait(), backoff)
                except TimeoutError:
                    pass
                self._restart.clear()
                backoff = min(backoff * 2, 10.0)

    def _retryable(self) -> set[str]:
        return set(self._snapshots_done)

    def _load_bindings(self) -> None:
        """Bindings for every table of this source, from the catalog."""
        for item in list(self.coord.catalog.items.values()):
            if item.source_id != self.source_id or item.id in self.bindings:
                continue
            info = item.details["source"]
            upstream = _upstream_from_json(info["upstream"])
            positions = [next(i for i, c in enumerate(upstream.columns) if c.name == name)
                         for name in info["upstream_columns"]]
            self.bindings[item.id] = Binding(item, upstream, positions, info.get("snapshot_lsn"),
                                             info.get("error"))
        for table_id in [t for t in self.bindings if t not in self.coord.catalog.items]:
            del self.bindings[table_id]

    async def _snapshot_pending(self) -> None:
        pending = [b for b in self.bindings.values() if b.snapshot_lsn is None]
        if not pending:
            return
        self.status = SourceStatus("snapshotting", snapshot_rows=self.status.snapshot_rows)
        details = self.source.details
        first = not details.get("slot_created")
        slot = details["slot"] if first else f"{details['slot']}_tmp_{pysecrets.token_hex(4)}"
        if first:
            await pg_upstream.drop_slot(self.params(), slot)  # a half-made earlier attempt
        tables = list({b.upstream.oid: b.upstream for b in pending}.values())
        log.info("snapshot", extra={"event": "snapshot_start", "source": self.source.name,
                                    "tables": [t.qualified for t in tables], "slot": slot})
        by_oid: dict[int, list[Binding]] = defaultdict(list)
        for b in pending:
            by_oid[b.upstream.oid].append(b)
        parts: dict[str, list[pa.Table]] = {b.table.id: [] for b in pending}
        unreadable: dict[str, SqlError] = {}
        logged = {"at": time.monotonic()}

        def on_batch(table: pg.UpstreamTable, columns: list[pa.Array], rows: int) -> None:
            # On the COPY's parsing thread: Arrow kernels, mostly without the GIL.
            for b in by_oid[table.oid]:
                if b.table.id in unreadable:
                    continue
                try:
                    parts[b.table.id].append(writes.text_columns_to_updates(
                        b.table, [columns[p] for p in b.positions], rows, decode=_decoder(b)))
                except _VALUE_ERRORS as exc:  # a value we cannot hold: not retryable, drop the new table
                    unreadable[b.table.id] = _ingest_error(b, exc)
                    parts[b.table.id].clear()

        def progress(table: pg.UpstreamTable, copied: int, expected: int) -> None:
            for b in by_oid[table.oid]:
                self.status.snapshot_rows[b.table.name] = (copied, expected)
            now = time.monotonic()
            if copied == expected or now - logged["at"] >= 5.0:
                logged["at"] = now
                log.info("snapshot progress", extra={"event": "snapshot_progress", "source": self.source.name,
                                                     "table": table.qualified, "copied": copied,
                                                     "expected": expected})

        lsn = await asyncio.to_thread(pg.take_snapshot, self.params(), slot, tables, not first, on_batch,
                                      progress)
        updates: dict[str, pa.Table] = {}
        ops: list[CatalogOp] = []
        for b in pending:
            if b.table.id in unreadable:
                ops += [DropItem(b.table.id), DropCollection(b.table.id)]
                continue
            if parts[b.table.id]:
                updates[b.table.id] = pa.concat_tables(parts[b.table.id])
            ops.append(SetDetails(b.table.id, {"source": {"snapshot_lsn": lsn}}))
        source_details: dict = {}
        if first:
            source_details = {"slot_created": True, "lsn": lsn}
        if source_details:
            ops.append(SetDetails(self.source_id, source_details))
        async with self.coord.write_lock:
            await self.coord.commit(ops, {k: v for k, v in updates.items() if v.num_rows})
        self._progressed = True
        for table_id, exc in unreadable.items():
            self.bindings.pop(table_id, None)
            fut = self._snapshots_done.pop(table_id, None)
            if fut is not None and not fut.done():
                fut.set_exception(exc)
        for b in pending:
            if b.table.id in unreadable:
                continue
            b.snapshot_lsn = lsn
            self._count_rows(b.table, updates[b.table.id].num_rows if b.table.id in updates else 0)
            fut = self._snapshots_done.pop(b.table.id, None)
            if fut is not None and not fut.done():
                fut.set_result(lsn)
        log.info("snapshot done", extra={"event": "snapshot_done", "source": self.source.name,
                                         "lsn": pgoutput.lsn_to_str(lsn),
                                         "rows": sum(t.num_rows for t in updates.values())})

    def _count_rows(self, table: Item, rows: int) -> None:
        SOURCE_ROWS.inc(rows, source=self.source.name, table=table.name)
        self.manager.rows_ingested += rows

    # -- called on the stream thread ------------------------------------------------
    def _on_relation(self, rel) -> None:
        for b in list(self.bindings.values()):
            if b.upstream.oid != rel.oid or b.error is not None:
                continue
            problem = _schema_problem(b, rel)
            if problem is not None:
                asyncio.run_coroutine_threadsafe(self._table_error(b, problem), self.manager.loop).result()

    def _apply_from_thread(self, txns: list[pg.Transaction]) -> concurrent.futures.Future:
        """Convert a batch of transactions here, on the stream thread, and have the event loop
        write it; the future completes once it is durable."""
        batch = self._prepare(txns)
        return asyncio.run_coroutine_threadsafe(self._commit_batch(batch), self.manager.loop)

    def _on_lag(self, wal_bytes: int) -> None:
        if not self._closing:  # stop() takes the series away
            SOURCE_LAG.set(wal_bytes, **self._lag_labels)

    def _on_idle_from_thread(self, lsn: int) -> None:
        self._progressed = True  # the stream is up and caught up
        # Idle: everything up to `lsn` is ingested (nothing published came before it),
        # so the progress relation moves on too, not only the slot upstream.
        if lsn > self.source.details.get("lsn", 0):
            asyncio.run_coroutine_threadsafe(self._advance(lsn), self.manager.loop).result()

    async def _advance(self, lsn: int) -> None:
        async with self.coord.write_lock:
            if lsn > self.source.details.get("lsn", 0):
                await self.coord.commit([SetDetails(self.source_id, {"lsn": lsn})], {})

    async def _table_error(self, b: Binding, problem: str) -> None:
        b.error = problem
        log.warning("table errored", extra={"event": "table_error", "table": b.table.name, "error": problem})
        async with self.coord.write_lock:
            await self.coord.commit([SetDetails(b.table.id, {"source": {"error": problem}})], {})

    def _prepare(self, txns: list[pg.Transaction]) -> _Batch:
        """Upstream transactions → updates per table, in commit order. A table that cannot
        take a transaction (a value it cannot hold, a TRUNCATE) keeps what came before it
        and errors; the other tables carry on."""
        by_oid: dict[int, list[Binding]] = defaultdict(list)
        for b in list(self.bindings.values()):
            by_oid[b.upstream.oid].append(b)
        segments: dict[str, list[tuple[list, list]]] = defaultdict(list)  # table → (new, old rows) per txn
        bound: dict[str, Binding] = {}
        batch = _Batch(txns[-1].end_lsn)
        for txn in txns:
            touched: dict[str, tuple[list, list]] = {}
            for change in txn.changes:
                for b in by_oid.get(change.relation.oid, ()):
                    if not b.ready or txn.commit_lsn < b.snapshot_lsn:
                        continue
                    rows = touched.get(b.table.id)
                    if rows is None:
                        rows = touched[b.table.id] = ([], [])
                        bound[b.table.id] = b
                    pick = _stream_picker(b, change.relation)
                    if change.new is not None:
                        rows[0].append(pick(change.new))
                    if change.old is not None:
                        rows[1].append(pick(change.old))
            for table_id, rows in touched.items():
                segments[table_id].append(rows)
            for oid in txn.truncated:
                for b in by_oid.get(oid, ()):
                    if b.ready:
                        batch.fail(b, f'upstream TRUNCATE of "{b.upstream.qualified}" cannot be ingested; '
                                      "drop and recreate the table")
        for table_id, segs in segments.items():
            b = bound[table_id]
            try:
                batch.updates[table_id] = _segments_to_updates(b, segs)
            except _VALUE_ERRORS:
                # Find the transaction it cannot take: the table keeps the ones before it.
                kept = []
                for seg in segs:
                    try:
                        kept.append(_segments_to_updates(b, [seg]))
                    except _VALUE_ERRORS as exc:
                        batch.fail(b, _ingest_error(b, exc).message)
                        break
                if kept:
                    batch.updates[table_id] = writes.concat_updates(kept)
        return batch

    async def _commit_batch(self, batch: _Batch) -> None:
        """One write at one timestamp: the batch's updates, the errors of tables that could not
        take it, and the source's new LSN."""
        async with self.coord.write_lock:
            items = self.coord.catalog.items
            source = items.get(self.source_id)
            if source is None or batch.end_lsn <= source.details.get("lsn", 0):
                return  # dropped while waiting for the lock, or already durable (a restart re-sent it)
            ops: list[CatalogOp] = [SetDetails(b.table.id, {"source": {"error": problem}})
                                    for b, problem in batch.errors if b.table.id in items]
            ops.append(SetDetails(self.source_id, {"lsn": batch.end_lsn}))
            updates = {k: v for k, v in batch.updates.items() if v.num_rows and k in items}
            await self.coord.commit(ops, updates)
        self._progressed = True
        for b, problem in batch.errors:
            log.warning("table errored", extra={"event": "table_error", "table": b.table.name, "error": problem})
        for table_id, t in updates.items():
            item = self.coord.catalog.items.get(table_id)
            if item is not None:
                self._count_rows(item, t.num_rows)


@dataclass
class _Batch:
    end_lsn: int
    updates: dict[str, pa.Table] = field(default_factory=dict)
    errors: list[tuple[Binding, str]] = field(default_factory=list)

    def fail(self, b: Binding, problem: str) -> None:
        b.error = problem  # the stream skips the table from here on
        self.errors.append((b, problem))


def _segments_to_updates(b: Binding, segments: list[tuple[list, list]]) -> pa.Table:
    new = [row for seg in segments for row in seg[0]]
    old = [row for seg in segments for row in seg[1]]
    parts = [_text_rows_to_updates(b, rows, diff) for rows, diff in ((new, 1), (old, -1)) if rows]
    return writes.concat_updates(parts) if parts else _empty(b.table)


def _text_rows_to_updates(b: Binding, rows: list[tuple], diff: int) -> pa.Table:
    columns = [pa.array(values, pa.binary()) for values in zip(*rows)]
    return writes.text_columns_to_updates(b.table, columns, len(rows), diff, decode=_decoder(b))


_VALUE_ERRORS = (SqlError, ArithmeticError, ValueError)


def _ingest_error(b: Binding, exc: Exception) -> SqlError:
    detail = exc.message if isinstance(exc, SqlError) else f"a value it cannot hold ({type(exc).__name__})"
    return SqlError(getattr(exc, "sqlstate", "22000"),
                    f'cannot ingest upstream table "{b.upstream.qualified}" into "{b.table.name}": {detail}')


def _stream_picker(b: Binding, rel) -> Callable:
    """Our columns' values from a row of a Relation message: found by name, as upstream may
    have added or dropped other columns since the table was created."""
    if b.relation is not rel:
        index = {c.name: i for i, c in enumerate(rel.columns)}
        positions = [index[b.upstream.columns[p].name] for p in b.positions]
        if len(positions) == 1:
            p = positions[0]
            b.relation_pick = lambda row: (row[p],)
        else:
            b.relation_pick = operator.itemgetter(*positions) if positions else (lambda row: ())
        b.relation = rel
    return b.relation_pick


def _decoder(b: Binding) -> Callable[[int, bytes], object]:
    """How a value the column-at-a-time reader leaves is read: as the type's input function
    would, except that a plain numeric never rounds."""
    columns = b.table.columns

    def decode(pos: int, raw: bytes) -> object:
        return _decode_value(columns[pos], raw)

    return decode


def _decode_value(col: Column, raw: bytes) -> object:
    value = decode_text(col.type, bytes(raw))
    if isinstance(value, Decimal) and col.type.typmod < 0 and value.is_finite() \
            and value.as_tuple().exponent < -10 and value != round(value, 10):
        # A plain numeric is stored with scale 10 (writes.check_value): refuse, never round.
        raise SqlError("22003", f'value {value} of column "{col.name}" has more than 10 digits after '
                                "the decimal point", hint=f"Ingest it with WITH (TEXT COLUMNS ({col.name})).")
    return value


def _empty(table: Item) -> pa.Table:
    return writes.rows_to_updates(table, [])


def _schema_problem(b: Binding, rel) -> str | None:
    if rel.replica_identity != "f":  # updates and deletes would come without their old rows
        return (f'upstream table "{b.upstream.qualified}" no longer has REPLICA IDENTITY FULL; run ALTER '
                f"TABLE {b.upstream.qualified} REPLICA IDENTITY FULL upstream, then drop and recreate this table")
    by_name = {c.name: c for c in rel.columns}
    for pos in b.positions:
        ours = b.upstream.columns[pos]
        theirs = by_name.get(ours.name)
        if theirs is None:
            return f'column "{ours.name}" of upstream table "{b.upstream.qualified}" was dropped'
        if theirs.type_oid != ours.type_oid:
            return (f'column "{ours.name}" of upstream table "{b.upstream.qualified}" changed type '
                    f"from {ours.type_name}")
    return None


def _upstream_to_json(t: pg.UpstreamTable) -> dict:
    return {"oid": t.oid, "schema": t.schema, "name": t.name, "replica_identity": t.replica_identity,
            "columns": [[c.name, c.type_oid, c.typmod, c.type_name, c.elem_oid, c.not_null] for c in t.columns]}


def _upstream_from_json(d: dict) -> pg.UpstreamTable:
    return pg.UpstreamTable(d["oid"], d["schema"], d["name"], d["replica_identity"],
                            tuple(pg.UpstreamColumn(*c) for c in d["columns"]))


# -- the manager and the statements ------------------------------------------------------

class SourceManager:
    def __init__(self, coord, kafka_spark_reads: int = kafka.SPARK_READS) -> None:
        self.coord = coord
        # A Kafka table's backlog of at least this many records is read by Spark's tasks
        # rather than polled by the server (0: never).
        self.kafka_spark_reads = kafka_spark_reads
        coord.sources = self  # mz_internal.mz_source_statuses reads the runners' status
        self.runners: dict[str, PostgresSourceRunner] = {}
        self.kafka_runners: dict[str, kafka.KafkaTableRunner] = {}  # by table id
        self.loop: asyncio.AbstractEventLoop | None = None
        self.rows_ingested = 0

    def start_all(self) -> None:
        self.loop = asyncio.get_running_loop()
        for item in self.coord.catalog.sorted_items("source"):
            if item.details.get("connector") == "postgres":
                self._start(item)
        for table in self.coord.catalog.sorted_items("table"):
            source = self.coord.catalog.items.get(table.source_id or "")
            if source is not None and source.details.get("connector") == "kafka":
                self.start_kafka_table(table)

    # -- Kafka ---------------------------------------------------------------------
    def kafka_config(self, connection: Item) -> dict:
        """The confluent-kafka client settings of a Kafka connection, its secrets resolved."""
        opts = connection.details["options"]
        config: dict[str, object] = {"bootstrap.servers": opts.get("broker") or opts.get("brokers")}
        for option, key in KAFKA_CLIENT_OPTIONS.items():
            if option in opts:
                config[key] = self._option(connection, option)
        return config

    def _option(self, connection: Item, name: str) -> object:
        """A connection option's value; one given as SECRET is stored as the secret's id."""
        value = connection.details["options"].get(name)
        if value is None or name not in connection.details.get("secret_options", _SECRET_ONLY):
            return value
        secret = self.coord.catalog.items.get(value)
        stored = self.coord.secrets.get(value) if secret is not None else None
        if stored is None:
            raise SqlError(UNDEFINED_OBJECT, f'the secret of connection "{connection.name}" was dropped')
        return stored

    async def check_kafka(self, connection: Item) -> None:
        await kafka.check_kafka(self, connection)

    async def create_kafka_source(self, session: StatementContext, stmt: srcs.CreateSource, connection: Item):
        return await kafka.create_kafka_source(self, session, stmt, connection)

    async def create_kafka_table(self, session: StatementContext, stmt: srcs.CreateTableFromSource,
                                 source: Item):
        return await kafka.create_kafka_table(self, session, stmt, source)

    def start_kafka_table(self, table: Item) -> None:
        runner = kafka.KafkaTableRunner(self, table)
        self.kafka_runners[table.id] = runner
        runner.start()

    async def forget_dropped(self) -> None:
        """Stop feeding tables that no longer exist (after any DROP)."""
        for runner in self.runners.values():
            runner._load_bindings()
        for table_id in [t for t in self.kafka_runners if t not in self.coord.catalog.items]:
            await self.kafka_runners.pop(table_id).stop()

    def _start(self, item: Item) -> PostgresSourceRunner:
        runner = PostgresSourceRunner(self, item)
        self.runners[item.id] = runner
        runner.start()
        return runner

    async def stop_all(self) -> None:
        for runner in [*self.runners.values(), *self.kafka_runners.values()]:
            await runner.stop()

    def params_for(self, connection: Item) -> pg.Params:
        opts = connection.details["options"]
        return pg.Params(opts["host"], int(opts.get("port", 5432)), opts["user"], self._option(connection, "password"),
                         opts.get("database", "postgres"))

    def status_rows(self) -> list[tuple]:
        """(name, type, status, error) for every source and every table fed by one."""
        out = []
        for item in self.coord.catalog.sorted_items("source"):
            if item.details.get("connector") == "kafka":
                tables = [t for t in self.coord.catalog.sorted_items("table") if t.source_id == item.id]
                runners = [self.kafka_runners.get(t.id) for t in tables]
                stalled = [r for r in runners if r is not None and r.status == "stalled"]
                out.append((item.name, "kafka", "stalled" if stalled else "running",
                            stalled[0].error if stalled else None))
                for t, r in zip(tables, runners):
                    out.append((t.name, "table", r.status if r else "stopped", r.error if r else None))
                continue
            runner = self.runners.get(item.id)
            status = runner.status if runner else SourceStatus("stopped")
            out.append((item.name, "postgres", status.status, status.error))
            for table in self.coord.catalog.sorted_items("table"):
                if table.source_id != item.id:
                    continue
                binding = runner.bindings.get(table.id) if runner else None
                error = binding.error if binding else table.details["source"].get("error")
                if error:
                    out.append((table.name, "table", "stalled", error))
                elif binding is not None and binding.snapshot_lsn is None:
                    out.append((table.name, "table", "snapshotting", None))
                else:
                    out.append((table.name, "table", status.status, status.error))
        return out


async def create_secret(session: StatementContext, stmt: srcs.CreateSecret, params, ptypes):
    session.no_ddl_in_transaction("CREATE SECRET")
    coord = session.coord
    if stmt.if_not_exists and coord.catalog.get(stmt.name) is not None:
        return CommandDone("CREATE SECRET")
    secret_id = coord.catalog.allocate_id()
    # The value goes to the secret store, durably, before the catalog record naming the
    # secret; the catalog and the log never see it.
    await asyncio.to_thread(coord.secrets.put, secret_id, stmt.value)

    def plan() -> list[CatalogOp]:
        if stmt.if_not_exists and coord.catalog.get(stmt.name) is not None:
            return []
        return coord.catalog.plan_create(Item(secret_id, stmt.name, "secret", (), coord.read_ts()))

    try:
        await session.ddl(plan)
    finally:
        live = {i.id for i in coord.catalog.items.values() if i.kind == "secret"}
        if secret_id not in live:
            await asyncio.to_thread(coord.secrets.keep_only, live)
    return CommandDone("CREATE SECRET")


# Materialize's Kafka connection options and the librdkafka settings they become. The SSL
# options hold PEM text (or a secret holding it), as in Materialize, not file paths.
KAFKA_CLIENT_OPTIONS = {
    "security protocol": "security.protocol", "sasl mechanisms": "sasl.mechanisms",
    "sasl username": "sasl.username", "sasl password": "sasl.password",
    "ssl certificate authority": "ssl.ca.pem", "ssl certificate": "ssl.certificate.pem", "ssl key": "ssl.key.pem",
}
_SECRET_ONLY = {"password", "sasl password", "ssl key"}
_SECRET_ALLOWED = {"postgres": {"password"},
                   "kafka": {"sasl username", "sasl password", "ssl certificate authority", "ssl certificate",
                             "ssl key"}}
_KAFKA_CHOICES = {
    "security protocol": ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    "sasl mechanisms": ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
}
_SASL_OPTIONS = [name for name in KAFKA_CLIENT_OPTIONS if name.startswith("sasl ")]
_SSL_OPTIONS = [name for name in KAFKA_CLIENT_OPTIONS if name.startswith("ssl ")]


def _check_kafka_options(options: dict[str, object]) -> None:
    for name, allowed in _KAFKA_CHOICES.items():
        if name in options:
            value = str(options[name]).upper()
            if value not in allowed:
                raise SqlError(INVALID_PARAMETER_VALUE, f"invalid {name.upper()} {options[name]!r}: expected one of "
                                                        f"{', '.join(allowed)}")
            options[name] = value
    if ("ssl certificate" in options) != ("ssl key" in options):
        raise SqlError(INVALID_PARAMETER_VALUE, "SSL CERTIFICATE and SSL KEY must be given together")
    sasl = [name for name in _SASL_OPTIONS if name in options]
    if "security protocol" not in options and (sasl or any(name in options for name in _SSL_OPTIONS)):
        # As in Materialize: SASL options mean SASL over TLS, TLS options alone TLS. librdkafka
        # would otherwise talk plaintext and leave the credentials unused, without a word.
        options["security protocol"] = "SASL_SSL" if sasl else "SSL"
    protocol = options.get("security protocol", "PLAINTEXT")
    if protocol.startswith("SASL_"):
        missing = [name.upper() for name in _SASL_OPTIONS if name not in options]
        if missing:
            raise SqlError(INVALID_PARAMETER_VALUE, f"SECURITY PROTOCOL {protocol} needs {', '.join(missing)}")
    elif sasl:
        raise SqlError(INVALID_PARAMETER_VALUE, f"{sasl[0].upper()} needs SECURITY PROTOCOL SASL_PLAINTEXT or "
                                                f"SASL_SSL, not {protocol}")


async def create_connection(session: StatementContext, stmt: srcs.CreateConnection, params, ptypes):
    session.no_ddl_in_transaction("CREATE CONNECTION")
    coord = session.coord
    if stmt.if_not_exists and coord.catalog.get(stmt.name) is not None:
        return CommandDone("CREATE CONNECTION", notices=[("NOTICE", f'connection "{stmt.name}" already exists, skipping')])
    options: dict[str, object] = {}
    depends: list[str] = []
    secret_options: list[str] = []
    for name, value in stmt.options:
        if isinstance(value, tuple) and value[0] == "secret":
            if name not in _SECRET_ALLOWED[stmt.connector]:
                raise SqlError(INVALID_PARAMETER_VALUE, f"{name.upper()} cannot be a secret: give its value as text")
            secret_options.append(name)
            secret = coord.catalog.require(value[1], "secret") if coord.catalog.get(value[1]) else None
            if secret is None:
                raise SqlError(UNDEFINED_OBJECT, f'unknown secret "{value[1]}"')
            options[name] = secret.id
            depends.append(secret.id)
        elif name in _SECRET_ONLY:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f"{name.upper()} must name a secret: {name.upper()} SECRET name")
        else:
            options[name] = value
    if stmt.connector == "kafka":
        _check_kafka_options(options)
    if stmt.connector == "postgres":
        for required in ("host", "user"):
            if required not in options:
                raise SqlError(INVALID_PARAMETER_VALUE, f"POSTGRES connection needs a {required.upper()} option")
        if "port" in options and not str(options["port"]).isdigit():
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid PORT {options['port']!r}: expected a number")
    item = Item(coord.catalog.allocate_id(), stmt.name, "connection", (), coord.read_ts(),
                sql=_connection_sql(stmt), depends_on=tuple(depends),
                details={"connector": stmt.connector, "options": options, "secret_options": secret_options})
    if stmt.validate and stmt.connector == "postgres":
        await pg_upstream.check_connection(session.server_sources.params_for(item))
    elif stmt.validate and stmt.connector == "kafka":
        validator = getattr(session.server_sources, "check_kafka", None)
        if validator is not None:
            await validator(item)
    await session.ddl(lambda: coord.catalog.plan_create(item))
    return CommandDone("CREATE CONNECTION")


def _connection_sql(stmt: srcs.CreateConnection) -> str:
    parts = []
    for name, value in stmt.options:
        if isinstance(value, tuple):
            parts.append(f'{name.upper()} SECRET "{value[1]}"')
        elif isinstance(value, int):
            parts.append(f"{name.upper()} {value}")
        else:
            parts.append(f"{name.upper()} '{value}'")
    return f'CREATE CONNECTION "{stmt.name}" TO {stmt.connector.upper()} ({", ".join(parts)})'


async def create_source(session: StatementContext, stmt: srcs.CreateSource, params, ptypes):
    session.no_ddl_in_transaction("CREATE SOURCE")
    coord = session.coord
    if stmt.if_not_exists and coord.catalog.get(stmt.name) is not None:
        return CommandDone("CREATE SOURCE", notices=[("NOTICE", f'source "{stmt.name}" already exists, skipping')])
    connection = coord.catalog.get(stmt.connection)
    if connection is None or connection.kind != "connection":
        raise SqlError(UNDEFINED_OBJECT, f'unknown connection "{stmt.connection}"')
    if connection.details["connector"] != stmt.connector:
        raise SqlError(WRONG_OBJECT_TYPE, f'connection "{stmt.connection}" is a '
                                          f'{connection.details["connector"].upper()} connection, not '
                                          f'{stmt.connector.upper()}')
    if stmt.connector != "postgres":
        handler = getattr(session.server_sources, "create_kafka_source", None)
        if handler is None:
            raise SqlError("0A000", "Kafka sources are not supported yet")
        return await handler(session, stmt, connection)
    publication = str(dict(stmt.options)["publication"])
    manager = session.server_sources
    await pg_upstream.check_publication(manager.params_for(connection), publication)
    source_id = coord.catalog.allocate_id()
    slot = f"sparkwire_{source_id}_{pysecrets.token_hex(3)}"
    item = Item(source_id, stmt.name, "source", (Column("lsn", SqlType.from_json(
        {"name": "numeric", "typmod": -1})),), coord.read_ts(),
        sql=f'CREATE SOURCE "{stmt.name}" FROM POSTGRES CONNECTION "{connection.name}" '
            f"(PUBLICATION '{publication}')",
        depends_on=(connection.id,),
        details={"connector": "postgres", "connection_id": connection.id, "publication": publication,
                 "slot": slot, "slot_created": False, "lsn": 0})
    await session.ddl(lambda: coord.catalog.plan_create(item))
    manager._start(coord.catalog.items[source_id])
    return CommandDone("CREATE SOURCE")


async def create_table_from_source(session: StatementContext, stmt: srcs.CreateTableFromSource, params,
                                   ptypes):
    session.no_ddl_in_transaction("CREATE TABLE")
    coord = session.coord
    manager: SourceManager = session.server_sources
    if stmt.if_not_exists and coord.catalog.get(stmt.name) is not None:
        return CommandDone("CREATE TABLE", notices=[("NOTICE", f'relation "{stmt.name}" already exists, skipping')])
    if coord.catalog.get(stmt.name) is not None:
        raise SqlError("42P07", f'relation "{stmt.name}" already exists')
    source = coord.catalog.get(stmt.source)
    if source is None or source.kind != "source":
        raise SqlError(UNDEFINED_OBJECT, f'unknown source "{stmt.source}"')
    if source.details["connector"] != "postgres":
        handler = getattr(manager, "create_kafka_table", None)
        if handler is None:
            raise SqlError("0A000", "tables from Kafka sources are not supported yet")
        return await handler(session, stmt, source)
    connection = coord.catalog.items[source.details["connection_id"]]
    upstream = await pg_upstream.describe_table(manager.params_for(connection), stmt.reference,
                                             source.details["publication"])
    if upstream.replica_identity != "f":
        raise SqlError("55000",
                       f'upstream table "{upstream.qualified}" does not have REPLICA IDENTITY FULL',
                       hint=f"Run ALTER TABLE {upstream.qualified} REPLICA IDENTITY FULL; upstream.")
    by_name = {c.name: c for c in upstream.columns}
    wanted = list(stmt.columns) if stmt.columns is not None else [c.name for c in upstream.columns]
    if len(set(wanted)) != len(wanted):
        dup = next(c for c in wanted if wanted.count(c) > 1)
        raise SqlError("42701", f'column "{dup}" specified more than once')
    for name in [*wanted, *stmt.text_columns]:
        if name not in by_name:
            raise SqlError(UNDEFINED_COLUMN, f'column "{name}" does not exist in upstream table '
                                             f'"{upstream.qualified}"')
    columns = tuple(Column(n, pg.sql_type_for(by_name[n], n in stmt.text_columns), by_name[n].not_null)
                    for n in wanted)
    table = Item(coord.catalog.allocate_id(), stmt.name, "table", columns, coord.read_ts(),
                 sql=(f'CREATE TABLE "{stmt.name}"' + (f" ({', '.join(wanted)})" if stmt.columns else "")
                      + f' FROM SOURCE "{source.name}" (REFERENCE {upstream.qualified})'
                      + (f" WITH (TEXT COLUMNS ({', '.join(stmt.text_columns)}))" if stmt.text_columns else "")),
                 depends_on=(source.id,),
                 details={"source": {"source_id": source.id, "reference": upstream.qualified,
                                     "upstream": _upstream_to_json(upstream), "upstream_columns": wanted,
                                     "snapshot_lsn": None}})
    await session.ddl(lambda: coord.catalog.plan_create(table))
    runner = manager.runners.get(source.id)
    if runner is None:
        runner = manager._start(source)
    await runner.add_table(coord.catalog.items[table.id])
    return CommandDone("CREATE TABLE")


async def drop_objects(session: StatementContext, stmt: srcs.DropObjects, params, ptypes):
    session.no_ddl_in_transaction(f"DROP {stmt.object_type}")
    coord = session.coord
    manager: SourceManager = session.server_sources
    notices: list[tuple[str, str]] = []
    dropped_sources: list[Item] = []

    def plan() -> list[CatalogOp]:
        ops, skipped = coord.catalog.plan_drop(stmt.object_type, stmt.names, stmt.if_exists, stmt.cascade)
        notices.extend(("NOTICE", n) for n in skipped)
        for op in ops:
            item = coord.catalog.items.get(op.id) if isinstance(op, DropItem) else None
            if item is not None and item.kind == "source":
                dropped_sources.append(item)
        return ops

    async with coord.write_lock:
        ops = plan()
        for source in dropped_sources:
            runner = manager.runners.pop(source.id, None)
            if runner is not None:
                await runner.stop()
        if ops:
            await coord.commit(ops, {})
    for source in dropped_sources:
        if source.details.get("connector") == "postgres" and source.details.get("slot_created"):
            connection = coord.catalog.items.get(source.details["connection_id"]) or None
            if connection is not None:
                slot = source.details["slot"]
                if not await pg_upstream.drop_slot(manager.params_for(connection), slot):
                    # Say so: a slot left upstream keeps its WAL there until someone drops it.
                    warning = (f'could not drop replication slot "{slot}" upstream; drop it there: '
                               f"SELECT pg_drop_replication_slot('{slot}')")
                    notices.append(("WARNING", warning))
    await manager.forget_dropped()
    if stmt.object_type == "SECRET":
        live = {i.id for i in coord.catalog.items.values() if i.kind == "secret"}
        await asyncio.to_thread(coord.secrets.keep_only, live)
    return CommandDone(f"DROP {stmt.object_type}", notices=notices)


async def swap_tables(session: StatementContext, stmt: srcs.SwapTables, params, ptypes):
    session.no_ddl_in_transaction("ALTER TABLE")
    coord = session.coord
    a = coord.catalog.require(stmt.first, "table")
    b = coord.catalog.require(stmt.second, "table")
    if a.id == b.id:
        raise SqlError(DUPLICATE_OBJECT, "cannot swap a table with itself")
    await session.ddl(lambda: [SwapItems(a.id, b.id)])
    return CommandDone("ALTER TABLE")


def check_writable(item: Item, verb: str) -> None:
    if item.source_id is not None:
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot {verb} table "{item.name}": it is fed by a source '
                                          "and read-only")


HANDLERS = {
    srcs.CreateSecret: create_secret,
    srcs.CreateConnection: create_connection,
    srcs.CreateSource: create_source,
    srcs.CreateTableFromSource: create_table_from_source,
    srcs.DropObjects: drop_objects,
    srcs.SwapTables: swap_tables,
}

