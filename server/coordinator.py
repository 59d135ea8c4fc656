"""The coordinator: catalog, timestamp oracle, and the sequencing of writes.

All writes go through one lock: a write transaction reads the latest state,
computes its updates and commits them at one timestamp, strictly after every
earlier one. Reads run concurrently at the latest committed timestamp. Spark
work runs on the engine's threads; the durable log is written from one thread
so that commits stay in timestamp order.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pyarrow as pa
from sqlglot import exp

from planner.errors import FEATURE_NOT_SUPPORTED, UNDEFINED_TABLE, SqlError
from planner.parser import parse_one
from planner.spark_guard import spark_sql
from planner.sql.spark_sql import Fixpoint
from planner.translate import Resolver, SessionContext, TableSource, ViewSource, resolve_tree
from planner.types import SqlType
from server import alter_checks, catalog_ops, check_constraints, foreign_keys, sequences, system_catalog
from server.catalog import Catalog
from server.catalog_items import Item
from server.secret_store import SecretStore
from server.sequences import SequenceValues
from server.unique_keys import UniqueKeys
from spark_backend import fixpoint
from spark_backend.consolidate import consolidate
from spark_backend.engine import SparkEngine
from spark_backend.errors import DataCorrupted, StorageError
from spark_backend.reads import consolidated_arrow, rows_df
from spark_backend.schema import sql_type_of_spark, storage_arrow_schema
from spark_backend.storage import StorageDamaged, Store

log = logging.getLogger("sparkwire.coordinator")

SERVER_VERSION = "15.0"
VERSION_STRING = "PostgreSQL 15.0 (sparkwire on Apache Spark 4.3.0)"

_SIMPLE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

# How long history is kept before compaction folds it (Materialize's default
# logical compaction window for tables is one second).
HISTORY_RETENTION_MS = 1000
# Retractions alone make a collection worth folding at most this often (seconds):
# a table that is updated constantly would otherwise be rewritten on every commit.
RETRACTION_FOLD_EVERY = 10.0
# Folds of up to this many updates run in pyarrow: a Spark job with a shuffle costs
# seconds of both cores, which a busy source's frequent small folds cannot afford.
LOCAL_FOLD_ROWS = 1_000_000
# How often the frontier advances with the clock when nothing is written.
TICK_INTERVAL = 0.5
# After a storage failure: the time the clients of the failed writes get to read their
# error before the process exits, and its exit status (2: the data directory cannot be opened).
FAIL_STOP_GRACE = 1.0
EXIT_STORAGE_FAILED = 3
EXIT_CANNOT_OPEN = 2


@dataclass
class QueryResult:
    names: list[str]
    types: list[SqlType]
    table: pa.Table


@dataclass
class Overlay:
    """Uncommitted updates of an open transaction, visible to its own reads."""

    updates: dict[str, pa.Table]


class Coordinator:
    def __init__(self, data_dir: str, engine: SparkEngine) -> None:
        self.store = Store(data_dir)
        self.secrets = SecretStore(data_dir)
        self.engine = engine
        self.catalog = Catalog()
        self.unique = UniqueKeys(self.store)  # PRIMARY KEY and UNIQUE: the keys present
        self.sequence_values = SequenceValues(self)  # nextval's values, logged ahead
        self.write_lock = asyncio.Lock()
        self._log_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log")
        self._dropped_names: dict[str, str] = {}  # id → name, for writes that lost a race with DROP
        # Tables ALTER TABLE rewrote since start, and when: a SUBSCRIBE that read one ends.
        self.rewritten: dict[str, int] = {}
        self._query_ids = itertools.count(1)
        self._compacting = False
        self._last_oracle = 0
        self._frontier = 0  # every timestamp below it is complete: no write will land there
        self.listeners: set = set()  # objects with on_commit(ts, updates) and on_frontier()
        self.sources = None  # the server's SourceManager (set by it), for mz_source_statuses
        self.activity: Callable[[], list[tuple]] = list  # pg_stat_activity's rows (set by the server)
        # pg_prepared_statements' rows for the session with this pid (set by the server).
        self.prepared_statements: Callable[[int], list[tuple]] = lambda pid: []
        self.read_holds: dict[object, int] = {}  # holder → oldest timestamp it still reads
        self._ticker: asyncio.Task | None = None
        self._committing: int | None = None  # timestamp of the commit being written, if any
        # Blind writes waiting for the next group commit, and whether one is under way.
        self._pending_writes: list[tuple[dict[str, pa.Table], asyncio.Future]] = []
        self._group_commits: asyncio.Task | None = None
        # Long background work (compactions), newest last, for mz_internal.mz_background_work.
        self.background: collections.deque[BackgroundWork] = collections.deque(maxlen=100)
        self._last_compacted: dict[str, float] = {}  # collection → monotonic time of its last fold
        self._stopping: asyncio.TimerHandle | None = None  # the exit after a storage failure

    # -- start-up ----------------------------------------------------------------
    def open(self) -> None:
        """Recover the catalog and collections; a data directory that is damaged or cannot be
        written stops the start with a log line saying why and what to do."""
        try:
            recovered = self.store.open()
        except StorageDamaged as exc:
            log.critical("the data directory is damaged: %s", exc, extra={"event": "storage_damaged"})
            raise SystemExit(EXIT_CANNOT_OPEN) from None
        except OSError as exc:
            log.critical("cannot open the data directory %s for writing: %s", self.store.root, exc,
                         extra={"event": "storage_unavailable"})
            raise SystemExit(EXIT_CANNOT_OPEN) from None
        self.store.label = self._relation_name
        self.catalog = Catalog.from_json(recovered.catalog_snapshot)
        for op in recovered.catalog_ops:
            self.catalog.apply(catalog_ops.from_json(op))
        self._open_secrets()
        self._last_oracle = recovered.last_ts
        self._frontier = recovered.last_ts + 1
        log.info("catalog recovered", extra={"event": "recovered", "items": len(self.catalog.items),
                                             "last_ts": recovered.last_ts})

    def _open_secrets(self) -> None:
        """Load the secret store; a data directory from before it existed has secret values
        in its catalog (and so in checkpoint.json and log.jsonl): move them to the store and
        write a checkpoint, which also empties the log, so that no plaintext copy is left."""
        self.secrets.load()
        secrets = [i for i in self.catalog.items.values() if i.kind == "secret"]
        legacy = [i for i in secrets if "value" in i.details]
        for item in legacy:
            self.secrets.put(item.id, item.details["value"])
            self.catalog.items[item.id] = replace(
                item, details={k: v for k, v in item.details.items() if k != "value"})
        if legacy:
            self.store.checkpoint(self.catalog.to_json())
            log.info("secret values moved to the secret store", extra={"event": "secrets_migrated",
                                                                        "secrets": len(legacy)})
        self.secrets.keep_only({i.id for i in secrets})

    def start_ticking(self, interval: float = TICK_INTERVAL) -> None:
        """Advance the frontier with the clock, so subscribers see progress while idle."""
        async def tick() -> None:
            while True:
                await asyncio.sleep(interval)
                self.advance_frontier(int(time.time() * 1000))

        self._ticker = asyncio.get_running_loop().create_task(tick())

    def advance_frontier(self, to: int) -> None:
        if self._committing is not None:
            # A commit is being written at that timestamp: the frontier must not pass it
            # before its listeners have its updates (the clock ticks during the write).
            to = min(to, self._committing)
        if to > self._frontier:
            self._frontier = to
            for listener in list(self.listeners):
                listener.on_frontier()

    @property
    def frontier(self) -> int:
        return self._frontier

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        self.store.close()
        self._log_thread.shutdown(wait=True)

    # -- time ----------------------------------------------------------------
    def read_ts(self) -> int:
        """The latest committed timestamp: a read there sees every acknowledged write."""
        return self.store.last_ts

    def _next_ts(self) -> int:
        ts = max(int(time.time() * 1000), self._last_oracle + 1, self.store.last_ts + 1,
                 self._frontier)
        self._last_oracle = ts
        return ts

    # -- writes ------------------------------------------------------------------
    async def commit_write(self, updates: dict[str, pa.Table]) -> int:
        """Commit a write that read nothing (INSERT ... VALUES outside a transaction), in a
        group with the others that arrive meanwhile; returns its timestamp.

        Writers that come while a commit is being made durable wait for the next one and
        share it: one timestamp, one log record and one file per table for all of them, as
        Materialize's group commit does. A write that read nothing cannot conflict with
        another, so only the durable log decides their order."""
        future = asyncio.get_running_loop().create_future()
        self._pending_writes.append((updates, future))
        if self._group_commits is None or self._group_commits.done():
            # A task of its own: a writer whose client goes away must not strand the others.
            self._group_commits = asyncio.ensure_future(self._commit_pending_writes())
        return await future

    async def _commit_pending_writes(self) -> None:
        while self._pending_writes:
            async with self.write_lock:
                # A write whose statement was cancelled before its group formed is not made.
                group = [(u, f) for u, f in self._pending_writes if not f.cancelled()]
                self._pending_writes = []
                await self._commit_group(group)

    async def _commit_group(self, group: list[tuple[dict[str, pa.Table], asyncio.Future]]) -> None:
        live = []
        for updates, future in group:
            dropped = (self._dropped_while_running(updates)
                       or alter_checks.stale_layout(updates, self.catalog.items, self.rewritten))
            if dropped is None:
                live.append((updates, future))
            elif not future.done():
                future.set_exception(dropped)
        if live:
            written = {cid for updates, _ in live for cid in updates}
            await self.count_keys([*written, *foreign_keys.related(written, self.catalog.items)])
            refused = self.unique.violations([updates for updates, _ in live], self.catalog.items)
            accepted: list[dict[str, pa.Table]] = []
            for i, (updates, _) in enumerate(live):  # FOREIGN KEY: over the writes let through before
                if refused[i] is None:
                    refused[i] = foreign_keys.violation(self.unique, updates, self.catalog.items, earlier=accepted)
                    if refused[i] is None:
                        accepted.append(updates)
            for (_, future), error in zip(live, refused):
                if error is not None and not future.done():
                    future.set_exception(error)
            live = [w for w, error in zip(live, refused) if error is None]
            checked = []
            for updates, future in live:  # CHECK constraints: a Spark job per write to a table with one
                try:
                    error = (alter_checks.nulls_written(updates, self.catalog.items)
                             or await check_constraints.violation(self, updates, self.catalog.items))
                except (SqlError, StorageError) as exc:  # that writer's failure, not the group's
                    error = exc
                if error is None:
                    checked.append((updates, future))
                elif not future.done():
                    future.set_exception(error)
            live = checked
        by_table: dict[str, list[pa.Table]] = {}
        for updates, _ in live:
            for cid, table in updates.items():
                by_table.setdefault(cid, []).append(table)
        # Every write is in its table's storage layout, so a table's writes concatenate.
        merged = {cid: pa.concat_tables(tables) for cid, tables in by_table.items()}
        try:
            ts = await self._commit_checked([], merged) if live else 0
        except BaseException as exc:
            for _, future in live:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for _, future in live:
            if not future.done():
                future.set_result(ts)

    def _dropped_while_running(self, updates: dict[str, pa.Table],
                               created: frozenset[str] = frozenset()) -> SqlError | None:
        """A write checked its table before waiting for the lock, and a DROP TABLE that held
        the lock may have removed it since: a record naming a gone collection would make
        the log unreadable at the next start. (`created`: collections the same record creates.)"""
        gone = next((cid for cid, t in updates.items()
                     if t.num_rows and cid not in self.store.collections and cid not in created), None)
        if gone is None:
            return None
        return SqlError(UNDEFINED_TABLE, f'relation "{self._dropped_names.get(gone, gone)}" does not exist: '
                                         "it was dropped while this statement ran")

    async def commit(self, ops: list[catalog_ops.CatalogOp], updates: dict[str, pa.Table]) -> int:
        """Commit catalog changes and updates at one new timestamp, refused (23505) when they
        would duplicate a key. Hold `write_lock`."""
        assert self.write_lock.locked(), "commits are sequenced by the write lock"
        # Tables this commit creates have no rows yet; one whose indexes it changes is
        # counted by its new keys, which the rows it has must not already break. A table
        # ALTER TABLE rewrites (its collection dropped and made again with its rows in the
        # new layout) was checked by ALTER TABLE on those rows; its counts start afresh.
        changed = {op.item.id: op.item for op in ops if isinstance(op, (catalog_ops.CreateItem, catalog_ops.AlterItem))}
        items = {**self.catalog.items, **changed}
        rewritten = alter_checks.rewritten(ops)
        altered = [op.item.id for op in ops if isinstance(op, catalog_ops.AlterItem) and op.item.id not in rewritten
                   and op.item.kind == "table"]
        checked = {cid: t for cid, t in updates.items() if cid not in rewritten}
        await self.count_keys([*checked, *altered, *foreign_keys.related([*checked, *altered], items)], items)
        for cid in altered:
            refused = self.unique.duplicated(items[cid]) or self._new_references_unmet(items[cid], items)
            if refused is not None:
                raise refused
            if cid in self.catalog.items and cid in self.store.collections:
                loop = asyncio.get_running_loop()
                refused = await loop.run_in_executor(None, alter_checks.nulls_refused, self.store,
                                                     self.catalog.items[cid], items[cid], updates.get(cid))
                if refused is not None:
                    raise refused
        refused = (self.unique.violations([checked], items)[0] or foreign_keys.violation(self.unique, checked, items)
                   or alter_checks.nulls_written(checked, items) or await check_constraints.violation(self, checked, items))
        if refused is not None:
            raise refused
        return await self._commit_checked(ops, updates)

    def _new_references_unmet(self, item: Item, items: dict[str, Item]) -> SqlError | None:
        """ALTER TABLE … ADD FOREIGN KEY (not NOT VALID): a row there is that refers to nothing."""
        before = self.catalog.items.get(item.id)
        had = {f.name for f in before.foreign_keys} if before is not None else set()
        for fk in item.foreign_keys:
            if fk.name not in had and fk.validated:
                refused = foreign_keys.unreferenced(self.unique, item, fk, items)
                if refused is not None:
                    return refused
        return None

    async def _commit_checked(self, ops: list[catalog_ops.CatalogOp], updates: dict[str, pa.Table]) -> int:
        """`commit` once the keys are checked (a group commit checks each writer's own)."""
        assert self.write_lock.locked(), "commits are sequenced by the write lock"
        created = frozenset(op.id for op in ops if isinstance(op, catalog_ops.CreateCollection))
        dropped = self._dropped_while_running(updates, created)
        if dropped is not None:
            raise dropped
        changed = {op.item.id: op.item for op in ops if isinstance(op, (catalog_ops.CreateItem, catalog_ops.AlterItem))}
        stale = alter_checks.stale_layout(updates, {**self.catalog.items, **changed}, self.rewritten)
        if stale is not None:
            raise stale
        rewritten = alter_checks.rewritten(ops)
        ts = self._next_ts()
        stamped = {cid: _stamp(t, ts) for cid, t in updates.items() if t.num_rows}
        loop = asyncio.get_running_loop()
        self._committing = ts
        try:
            await loop.run_in_executor(self._log_thread, self.store.commit, ts, catalog_ops.to_json(ops), stamped)
        except StorageError as err:
            if err.fatal:
                self._storage_failed(err)
            raise
        finally:
            self._committing = None
        for cid in rewritten:
            self.unique.forget(cid)  # counted again from the new files at the next write
            self.rewritten[cid] = ts
        for op in ops:
            if isinstance(op, catalog_ops.DropItem) and op.id in self.catalog.items:
                self._dropped_names[op.id] = self.catalog.items[op.id].name
                self.unique.forget(op.id)
            self.catalog.apply(op)
            if isinstance(op, catalog_ops.CreateItem):
                self.unique.created(op.item)
        self.unique.committed(stamped)
        # Listeners get the commit before the frontier passes it, so a frontier
        # they observe never runs ahead of the updates they have been given.
        for listener in list(self.listeners):
            listener.on_commit(ts, stamped)
        self.advance_frontier(ts + 1)
        if self.store.checkpoint_due():
            # The commit is durable whatever happens to the checkpoint: its writer gets the ack.
            try:
                await loop.run_in_executor(self._log_thread, self.store.checkpoint, self.catalog.to_json())
            except StorageError as err:
                log.error("checkpoint failed: %s", err.message, extra={"event": "checkpoint_failed"})
                if err.fatal:
                    self._storage_failed(err)
        self._maybe_compact()
        return ts

    async def count_keys(self, collection_ids: Iterable[str], items: dict[str, Item] | None = None) -> None:
        """Make sure the key counts of these tables exist (hold `write_lock`): a table's first
        write since start reads its keys from its files. `items`: the tables as a commit will
        leave them (the catalog's when None); those it creates have no files to read."""
        loop = asyncio.get_running_loop()
        for cid in set(collection_ids):
            item = (items or self.catalog.items).get(cid)
            if item is not None and cid in self.store.collections and not self.unique.built(item):
                await loop.run_in_executor(None, self.unique.build, item)

    def _storage_failed(self, err: StorageError) -> None:
        """Fail-stop: no more writes (the store refuses them), and the process exits after
        FAIL_STOP_GRACE, so that a restart recovers to exactly the acknowledged writes. A write
        whose outcome is unknown gets no answer at all: the exit is immediate."""
        if err.outcome_unknown:
            log.critical("storage failed and the failed write could not be taken back; exiting at once "
                         "without answering: %s", err.message, extra={"event": "storage_failed_exit"})
            _exit_now()
        if self._stopping is None:
            log.critical("storage failed: %s; no more writes are accepted and the server exits in %.0f s; "
                         "a restart recovers to the acknowledged writes", err.message, FAIL_STOP_GRACE,
                         extra={"event": "storage_failed_exit"})
            self._stopping = asyncio.get_running_loop().call_later(FAIL_STOP_GRACE, _exit_now)

    def _relation_name(self, collection_id: str) -> str:
        item = self.catalog.items.get(collection_id)
        return item.name if item is not None else collection_id

    # -- read holds ----------------------------------------------------------------
    def hold(self, holder: object, ts: int) -> None:
        """Keep compaction from folding history past `ts` until `release(holder)`."""
        self.read_holds[holder] = ts

    def release(self, holder: object) -> None:
        self.read_holds.pop(holder, None)

    # -- reads ------------------------------------------------------------------
    def resolver(self, views: dict[str, tuple[str, Item]], ctx: SessionContext | None = None,
                 catalog: Catalog | None = None) -> Resolver:
        """Resolve names against the catalog, noting each table read in `views`.

        `catalog` is the one a transaction block sees, with the tables and views it created
        or dropped (the live one when None). System relations (pg_catalog,
        information_schema, mz_internal) are computed now, from that catalog, and noted as
        `system:<schema>.<name>`.
        """
        qid = next(self._query_ids)
        catalog = catalog or self.catalog

        def resolve(name: str):
            system = system_catalog.find(name)
            if system is not None:
                return self._system_source(system, views, qid, ctx, catalog)
            if "." in name:
                return None
            item = catalog.get(name)
            if item is None:
                return None
            if item.kind in ("view", "source"):
                text = item.sql if item.kind == "view" else source_progress_sql(item, catalog)
                return ViewSource(parse_one(text).statement.ast)
            if item.kind == sequences.KIND:  # its one row: last_value, log_cnt, is_called
                last, called, logged = self.sequence_values.states(catalog)[item.id]
                return self._system_source(system_catalog.Relation(
                    "public", item.name, system_catalog.columns(sequences.COLUMNS_SQL),
                    lambda _snap: [(last, logged, called)],
                    "S", item.oid), views, qid, ctx, catalog)
            if item.kind != "table":
                raise SqlError("42809", f'"{name}" is a {item.kind}, not a relation')
            item.check_readable()
            spark_name = f"__sw_{qid}_{name if _SIMPLE_NAME.match(name) else item.id}"
            views[item.id] = (spark_name, item)
            return TableSource(spark_name, {c.name: c.type.spark for c in item.columns},
                               pg_types={c.name: c.type for c in item.columns})

        return resolve

    def _system_source(self, rel: system_catalog.Relation, views: dict, qid: int,
                       ctx: SessionContext | None, catalog: Catalog) -> TableSource:
        key = f"system:{rel.qualified}"
        if key not in views:
            snapshot = system_catalog.Snapshot(
                catalog.sorted_items(), [s for s in self.listeners if hasattr(s, "rows_sent")],
                dict(catalog.system), ctx.user if ctx is not None else system_catalog.OWNER,
                self.sources, self.background_rows(), self.activity() if rel.name == "pg_stat_activity" else [],
                self.prepared_statements(ctx.backend_pid)
                if rel.name == "pg_prepared_statements" and ctx is not None else [],
                self.sequence_values.states(catalog))
            views[key] = (f"__sw_{qid}_{rel.schema}_{rel.name}", system_catalog.build(rel, snapshot))
        spark_name, table = views[key]
        return TableSource(spark_name, {n: t.spark for n, t in zip(table.column_names, table.column_types)},
                           rel.oid, dict(zip(table.column_names, table.column_types)))

    def plan_query(self, ast: exp.Expression, ctx: SessionContext,
                   params: dict[int, exp.Expression] | None = None,
                   catalog: Catalog | None = None) -> tuple[str, dict[str, tuple[str, Item]]]:
        views: dict[str, tuple[str, Item]] = {}
        tree = resolve_tree(ast, self.resolver(views, ctx, catalog), ctx, params)
        return spark_sql(tree), views

    async def query(self, spark_sql: str, views: dict[str, tuple[str, Item]], as_of: int,
                    overlay: Overlay | None = None, group: str | None = None,
                    describe_only: bool = False) -> QueryResult:
        """Run a query at `as_of`, holding compaction back from `as_of` (and the files it
        reads from deletion) until it is done, however long it waits for Spark."""
        holder = object()
        self.hold(holder, as_of)
        try:
            with self.store.reading():
                return await self.engine.run(self._query_in_spark, spark_sql, views, as_of, overlay,
                                             describe_only, group=group)
        except DataCorrupted as err:
            raise DataCorrupted(self._relation_name(err.table), err.path, err.why) from None
        finally:
            self.release(holder)

    def _query_in_spark(self, spark, spark_sql: str, views: dict[str, tuple[str, Item]],
                        as_of: int, overlay: Overlay | None, describe_only: bool) -> QueryResult:
        registered = []
        try:
            for item_id, (spark_name, item) in views.items():
                if isinstance(item, system_catalog.SystemTable):
                    df = system_catalog.dataframe(spark, item)
                elif isinstance(item, Fixpoint):  # it reads the tables registered before it
                    df = fixpoint.describe(spark, item) if describe_only else fixpoint.materialize(spark, item)
                else:
                    extra = overlay.updates.get(item_id) if overlay else None
                    # A table the reading transaction block created has no files yet: only
                    # the rows the block staged.
                    pending = ([], 0) if item_id not in self.catalog.items else None
                    df = rows_df(spark, self.store, item_id, item.column_names, item.column_types,
                                 as_of, extra, pending)
                df.createOrReplaceTempView(spark_name)
                registered.append(spark_name)
            df = spark.sql(spark_sql)
            df = _presentable(df)
            names = [f.name for f in df.schema.fields]
            types = [sql_type_of_spark(f) for f in df.schema.fields]
            if describe_only:
                return QueryResult(names, types, pa.table({}))
            table = df.toArrow()
            return QueryResult(names, types, _arrow_for_wire(table, types))
        finally:
            for name in registered:
                spark.catalog.dropTempView(name)

    # -- compaction ---------------------------------------------------------------
    def _maybe_compact(self) -> None:
        if self._compacting or not self.engine.ready:
            return
        frontier = min([self.read_ts() - HISTORY_RETENTION_MS, *self.read_holds.values()])
        now = time.monotonic()
        candidates = self.store.compaction_candidates(
            frontier, retraction_ok=lambda cid: now - self._last_compacted.get(cid, 0.0) >= RETRACTION_FOLD_EVERY)
        if candidates:
            self._compacting = True
            asyncio.get_running_loop().create_task(self._compact(candidates, frontier))

    async def _compact(self, ids: list[str], frontier: int) -> None:
        work: BackgroundWork | None = None
        loop = asyncio.get_running_loop()
        try:
            for n, cid in enumerate(ids, 1):
                item = self.catalog.items.get(cid)
                files = self.store.files_to_compact(cid, frontier)
                if item is None or len(files) < 2:
                    continue
                rows = sum(f.rows for f in files)
                work = BackgroundWork("compaction", item.name, time.time(),
                                      f"collection {n} of {len(ids)}: folding {len(files)} files, {rows} updates")
                self.background.append(work)
                log.info("compacting", extra={"event": "compacting", "collection": cid, "relation": item.name,
                                              "files": len(files), "updates": rows, "step": n, "of": len(ids)})
                since = max(f.max_ts for f in files)
                table = None
                if rows <= LOCAL_FOLD_ROWS:
                    table = await loop.run_in_executor(None, self._fold_locally, files, item, since)
                if table is None:
                    table = await self.engine.run(consolidated_arrow, self.store, cid,
                                                  item.column_types, files, since)
                # Written before taking the write lock: commits wait only for the log record.
                new = await loop.run_in_executor(None, self.store.write_compacted, cid, since, table)
                async with self.write_lock:
                    if (any(hold < since for hold in self.read_holds.values()) or cid not in self.catalog.items
                            or not self.store.holds(cid, files)):  # ALTER TABLE rewrote it meanwhile
                        # A reader (AS OF) started before `since` meanwhile: keep history.
                        self.store.abandon_compaction(new)
                        work.finish("skipped", "a read still needs the history")
                        continue
                    try:
                        await loop.run_in_executor(self._log_thread, self.store.finish_compaction,
                                                   cid, since, files, new)
                    except StorageError as err:
                        if not err.outcome_unknown:
                            self.store.abandon_compaction(new)
                        raise
                self._last_compacted[cid] = time.monotonic()
                work.finish("done", f"{len(files)} files, {rows} updates → {table.num_rows} rows")
                log.info("compacted", extra={"event": "compacted", "collection": cid, "relation": item.name,
                                             "files": len(files), "rows": table.num_rows,
                                             "seconds": round(work.seconds, 3)})
            self.store.collect_garbage()
        except StorageError as err:
            if work is not None and work.status == "running":
                work.finish("failed", err.message)
            log.error("compaction failed: %s", err.message, extra={"event": "compaction_failed"})
            if err.fatal:
                self._storage_failed(err)
        except Exception as exc:
            if work is not None and work.status == "running":
                work.finish("failed", str(exc))
            log.exception("compaction failed")
        finally:
            self._compacting = False

    async def current_rows(self, item: Item) -> pa.Table:
        """A table's rows now, netted out (each row with its positive count) in its storage
        layout. Hold `write_lock`, so that no commit lands before the caller's."""
        files, since = self.store.files(item.id, self.store.last_ts)
        schema = storage_arrow_schema(item.column_types)
        if not files:
            return schema.empty_table()
        since = max([since, *(f.max_ts for f in files)])
        table = None
        with self.store.reading():
            if sum(f.rows for f in files) <= LOCAL_FOLD_ROWS:
                loop = asyncio.get_running_loop()
                table = await loop.run_in_executor(None, self._fold_locally, files, item, since)
            if table is None:
                table = await self.engine.run(consolidated_arrow, self.store, item.id, item.column_types,
                                              files, since)
        return table.cast(schema)

    def _fold_locally(self, files: list, item: Item, since: int) -> pa.Table | None:
        schema = storage_arrow_schema(item.column_types)
        return consolidate(self.store.read_local(files, schema, item.id), since)

    def background_rows(self) -> list[tuple]:
        """Spark start-up and recent compactions, for mz_internal.mz_background_work."""
        engine = self.engine
        started = time.time() - (time.monotonic() - engine.started_at)
        if engine.ready:
            spark = BackgroundWork("spark start", engine.master, started, f"ready after {engine.ready_after:.1f} s",
                                   "done", started + (engine.ready_after or 0))
        else:
            spark = BackgroundWork("spark start", engine.master, started, "starting", "running")
        return [w.row() for w in [spark, *self.background]]


def _exit_now() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(EXIT_STORAGE_FAILED)


@dataclass
class BackgroundWork:
    """One piece of long work the server does on its own, with its progress."""

    kind: str
    target: str
    started_at: float  # seconds since the epoch
    detail: str
    status: str = "running"
    finished_at: float | None = None

    def finish(self, status: str, detail: str) -> None:
        self.status, self.detail, self.finished_at = status, detail, time.time()

    @property
    def seconds(self) -> float:
        return (self.finished_at or time.time()) - self.started_at

    def row(self) -> tuple:
        def at(t: float | None) -> datetime.datetime | None:
            return None if t is None else datetime.datetime.fromtimestamp(t, datetime.UTC)

        return (self.kind, self.target, self.status, self.detail, at(self.started_at),
                at(self.finished_at), round(self.seconds, 3))


def source_progress_sql(source: Item, catalog: Catalog | None = None) -> str:
    """`SELECT * FROM <source>`: how far upstream its tables are ingested (LSN, or
    the next offset per Kafka partition)."""
    if source.details.get("connector") != "kafka":
        return f"SELECT CAST({int(source.details.get('lsn', 0))} AS NUMERIC(20,0)) AS lsn"
    offsets: dict[int, int] = {}
    for item in (catalog.items.values() if catalog else []):
        if item.kind == "table" and item.source_id == source.id:
            for p, o in item.details["source"].get("offsets", {}).items():
                offsets[int(p)] = max(offsets.get(int(p), 0), o)
    rows = ", ".join(f"({p}, {o})" for p, o in sorted(offsets.items())) or "(0, 0)"
    where = "" if offsets else " WHERE false"
    return (f'SELECT CAST(p AS INTEGER) AS partition, CAST(o AS BIGINT) AS "offset" '
            f"FROM (VALUES {rows}) AS progress(p, o){where}")


def _stamp(updates: pa.Table, ts: int) -> pa.Table:
    idx = updates.schema.get_field_index("mz_timestamp")
    return updates.set_column(idx, "mz_timestamp", pa.array([ts] * updates.num_rows, pa.int64()))


def _presentable(df):
    """Turn result columns the wire has no type for into text Spark can render."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fields = df.schema.fields
    if not any(isinstance(f.dataType, (T.StructType, T.MapType, T.YearMonthIntervalType,
                                       T.CalendarIntervalType, T.NullType)) for f in fields):
        return df
    # Output names may repeat (`SELECT NULL, NULL`): refer to columns by position.
    df = df.toDF(*[f"__p{i}" for i in range(len(fields))])
    cols = []
    for i, f in enumerate(fields):
        col = F.col(f"__p{i}")
        if isinstance(f.dataType, T.StructType):
            # a row value: PostgreSQL writes it as record_out does, which the front end covers
            # (planner.sql.spark_records); here its fields' types are Spark's, not known
            raise SqlError(FEATURE_NOT_SUPPORTED, "a row value in this query's result is not supported",
                           hint="Select its fields as columns instead.")
        if isinstance(f.dataType, T.MapType):
            col = F.to_json(col)
        elif isinstance(f.dataType, (T.YearMonthIntervalType, T.CalendarIntervalType, T.NullType)):
            col = col.cast("string")
        cols.append(col.alias(f.name, metadata=f.metadata) if f.metadata else col.alias(f.name))
    return df.select(*cols)


def _arrow_for_wire(table: pa.Table, types: list[SqlType]) -> pa.Table:
    """Make Arrow columns hold what the value encoders expect for their type."""
    for i, t in enumerate(types):
        col = table.column(i)
        if t.base.name == "interval" and pa.types.is_duration(col.type):
            text = pa.array([None if v is None else format_interval(v) for v in col.to_pylist()],
                            pa.string())
            table = table.set_column(i, table.field(i).name, text)
    return table


def format_interval(delta: datetime.timedelta) -> str:
    """A day-time interval in PostgreSQL's output style."""
    total_us = delta // datetime.timedelta(microseconds=1)
    sign = "-" if total_us < 0 else ""
    total_us = abs(total_us)
    days, rest = divmod(total_us, 86_400_000_000)
    secs, us = divmod(rest, 1_000_000)
    hh, rem = divmod(secs, 3600)
    mm, ss = divmod(rem, 60)
    parts = []
    if days:
        parts.append(f"{sign}{days} day{'s' if days != 1 else ''}")
    if rest or not days:
        frac = f".{us:06d}".rstrip("0") if us else ""
        parts.append(f"{sign}{hh:02d}:{mm:02d}:{ss:02d}{frac}")
    return " ".join(parts)
