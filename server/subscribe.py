"""A running SUBSCRIBE: its dataflow, its state, and the buffer its client reads.

A subscription registers with the coordinator, takes its snapshot at `as_of`,
and from then on is woken by commits and by the advancing frontier. Each
wake-up is one micro-batch: the updates of every timestamp that became complete
are processed by Spark in one job, consolidated per timestamp, shaped by the
output formatter, and appended to a bounded buffer. Spark is only asked to work
when an input changed; an idle system costs nothing but progress rows.
"""

from __future__ import annotations

import asyncio
import collections
import decimal
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from planner.dataflow import DIFF as DELTA_DIFF
from planner.dataflow import TS as DELTA_TS
from planner.dataflow import AggregatePlan, DataflowPlan, plan_dataflow
from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SqlError
from planner.subscribe_syntax import Subscribe
from planner.translate import SessionContext, resolve_tree
from planner.types import SqlType
from server import metrics
from server.subscribe_format import OutputPlan, format_timestamp, plan_output, progress_row
from spark_backend import dataflow as sparkflow

log = logging.getLogger("sparkwire.subscribe")

MAX_BUFFERED_ROWS = 100_000  # per subscription; past it the client is disconnected
MAX_FUTURE_MS = 60_000  # AS OF at most this far past the current frontier
BUFFER_FULL = "53400"

_ids = itertools.count(1)


@dataclass
class GroupState:
    n: int = 0  # rows in the group
    counts: dict[int, int] = field(default_factory=dict)  # agg → non-NULL inputs
    sums: dict[int, object] = field(default_factory=dict)  # agg → sum of inputs
    values: dict[int, collections.Counter] = field(default_factory=dict)  # min/max → multiset


class Subscription:
    """One SUBSCRIBE's dataflow; rows leave through `take` / `wait`."""

    def __init__(self, coord, stmt: Subscribe, ctx: SessionContext, user: str = "materialize",
                 on_overflow: Callable[[], None] | None = None) -> None:
        self.id = next(_ids)
        self.coord = coord
        self.stmt = stmt
        self.ctx = ctx
        self.user = user
        self.on_overflow = on_overflow
        self.created_at = time.time()
        self.buffer: collections.deque[tuple] = collections.deque()
        self.changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._pending: list[tuple[int, dict[str, pa.Table]]] = []
        self.error: SqlError | None = None
        self.finished = False
        self.rows_sent = 0
        self._task: asyncio.Task | None = None
        self._listening_from = 0
        self.frontier = 0
        self._last_progress = -1
        self._previous: collections.Counter | None = None  # recompute: last result
        self._groups: dict[tuple, GroupState] = {}  # aggregate: state per group
        # join: each side's rows per join key, as row → multiplicity
        self._sides: tuple[dict, dict] = ({}, {})
        self._side_schemas: tuple[pa.Schema | None, pa.Schema | None] = (None, None)

    # -- planning ------------------------------------------------------------------
    def plan(self) -> None:
        """Resolve names and choose the dataflow; no Spark work."""
        views: dict = {}
        if self.stmt.query is not None:
            query = self.stmt.query
        else:
            from sqlglot import exp

            self.coord.catalog.require(self.stmt.relation)
            # A Table node (not a bare Identifier), so name resolution sees the relation.
            query = exp.select("*").from_(exp.Table(this=exp.to_identifier(self.stmt.relation, quoted=True)))
        tree = resolve_tree(query, self.coord.resolver(views), self.ctx)
        if any(cid.startswith("system:") for cid in views):  # computed per query, no changelog
            raise SqlError(FEATURE_NOT_SUPPORTED, "SUBSCRIBE to a system relation is not supported")
        self.inputs = [sparkflow.Input(cid, spark_name, item.column_names, item.column_types)
                       for cid, (spark_name, item) in views.items()]
        self.input_ids = {rel.collection_id for rel in self.inputs}
        self.views = views
        self.dataflow: DataflowPlan = plan_dataflow(tree)

    async def describe(self) -> OutputPlan:
        shape = await self.coord.query(self.dataflow.full_sql, self.views, self.coord.read_ts(),
                                       describe_only=True)
        self.names, self.types = shape.names, shape.types
        self.output = plan_output(self.stmt.output, shape.names, shape.types, self.stmt.progress)
        return self.output

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Check times, take the snapshot, and start following commits."""
        if not hasattr(self, "dataflow"):
            self.plan()
        if not hasattr(self, "output"):
            await self.describe()
        now = self.coord.read_ts()
        as_of = self.stmt.as_of if self.stmt.as_of is not None else now
        up_to = self.stmt.up_to
        if up_to is not None and up_to < as_of:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f"UP TO ({up_to}) must be at least AS OF ({as_of})")
        if as_of > self.coord.frontier + MAX_FUTURE_MS:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f"AS OF {as_of} is too far in the future: the latest complete timestamp is "
                           f"{self.coord.frontier - 1}")
        since = max([self.coord.store.files(rel.collection_id, now)[1] for rel in self.inputs] or [0])
        if as_of < since:
            if self.stmt.as_of_at_least:
                as_of = since
            else:
                raise SqlError("22000",
                               f"AS OF {as_of} is not valid: history before {since} has been compacted; "
                               f"valid timestamps are {since} to {self.coord.frontier - 1}")
        while as_of >= self.coord.frontier:  # AS OF slightly in the future: wait for it
            await asyncio.sleep(0.05)
        self.as_of = as_of
        # Listen before reading, so no commit falls between snapshot and stream.
        self._listening_from = self.coord.read_ts()
        self.coord.listeners.add(self)
        self.coord.read_holds[self] = as_of
        try:
            await self._snapshot()
            if self._listening_from > as_of:
                await self._load_history(as_of, self._listening_from)
        except BaseException:
            self.close()
            raise
        self.frontier = max(as_of + 1, 0)
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._counted = True
        metrics.SUBSCRIPTIONS.inc(output_mode=self.stmt.output.label)
        metrics.ACTIVE_SUBSCRIPTIONS.inc(output_mode=self.stmt.output.label)
        log.info("subscription started", extra={
            "event": "subscribe_start", "subscription": self.id, "strategy": self.dataflow.strategy,
            "output_mode": self.stmt.output.label, "as_of": as_of})

    def close(self) -> None:
        """Stop the dataflow and forget it; safe to call more than once."""
        self.coord.listeners.discard(self)
        self.coord.read_holds.pop(self, None)
        if self._task is not None and not self._task.done() and self._task is not asyncio.current_task():
            self._task.cancel()
        if getattr(self, "_counted", False):
            self._counted = False
            metrics.ACTIVE_SUBSCRIPTIONS.dec(output_mode=self.stmt.output.label)
            log.info("subscription ended", extra={"event": "subscribe_end", "subscription": self.id,
                                                  "rows_sent": self.rows_sent})
        self.finished = True
        self.changed.set()

    # -- coordinator callbacks ---------------------------------------------------------
    def on_commit(self, ts: int, updates: dict[str, pa.Table]) -> None:
        if ts <= self._listening_from:
            return  # already part of the snapshot or the history read
        mine = {cid: t for cid, t in updates.items() if cid in self.input_ids}
        if mine:
            self._pending.append((ts, mine))
        self._wake.set()

    def on_frontier(self) -> None:
        self._wake.set()

    # -- the dataflow -------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            self._emit_progress(self.frontier)
            while not self.finished:
                await self._wake.wait()
                self._wake.clear()
                frontier = self.coord.frontier
                pending, self._pending = self._pending, []
                if pending:
                    await self._process(pending)
                self.frontier = max(self.frontier, frontier)
                self.coord.read_holds[self] = self.frontier - 1
                self._emit_progress(self.frontier)
                if self.stmt.up_to is not None and self.frontier >= self.stmt.up_to:
                    self.finished = True
                    self.changed.set()
        except asyncio.CancelledError:
            raise
        except SqlError as err:
            self._fail(err)
        except Exception as exc:
            log.exception("subscription failed")
            self._fail(SqlError("XX000", f"subscription failed: {exc}"))
        finally:
            self.coord.listeners.discard(self)
            self.coord.read_holds.pop(self, None)

    def _fail(self, err: SqlError) -> None:
        self.error = err
        self.finished = True
        self.changed.set()

    async def _snapshot(self) -> None:
        strategy = self.dataflow.strategy
        if strategy == "recompute":
            result = await self._recompute(self.as_of)
            self._previous = result
            updates = list(result.items())
        elif strategy == "linear":
            [table] = await self.coord.engine.run(sparkflow.run_over_snapshot, self.coord.store,
                                                  self.inputs, self.as_of, [self.dataflow.delta_sql])
            updates = _consolidate(table).get(self.as_of, [])
        elif strategy == "join":
            join = self.dataflow.join
            sides = await self.coord.engine.run(sparkflow.run_over_snapshot, self.coord.store,
                                                self.inputs, self.as_of, [join.left_sql, join.right_sql])
            updates = (await self._join_batch(sides)).get(self.as_of, [])
        else:
            tables = await self.coord.engine.run(sparkflow.run_over_snapshot, self.coord.store,
                                                 self.inputs, self.as_of, self._aggregate_sqls())
            per_ts = self._fold_aggregates(tables)
            updates = per_ts.get(self.as_of, [])
            if self.dataflow.aggregate.is_global and not updates:
                updates = [(self._global_empty_row(), 1)]
                self._groups.setdefault((), GroupState())
        if self.stmt.snapshot:
            self._emit(self.as_of, updates)

    async def _load_history(self, after: int, upto: int) -> None:
        """Updates between AS OF and the moment we started listening, from storage."""
        tables = {}
        for rel in self.inputs:
            tables[rel.collection_id] = await self.coord.engine.run(
                sparkflow.history, self.coord.store, rel, after, upto)
            since = self.coord.store.files(rel.collection_id, upto)[1]
            if since > after:  # compacted while we read: the history may have lost retractions
                raise SqlError("22000", f"AS OF {after} is not valid: history before {since} was "
                                        f"compacted while the SUBSCRIBE started; retry")
        by_ts: dict[int, dict[str, pa.Table]] = {}
        for cid, table in tables.items():
            if table.num_rows == 0:
                continue
            ts_col = table.column("mz_timestamp").to_pylist()
            for ts in sorted(set(ts_col)):
                mask = pa.array([t == ts for t in ts_col])
                by_ts.setdefault(ts, {})[cid] = table.filter(mask)
        self._pending = sorted(by_ts.items()) + self._pending
        self._wake.set()

    async def _process(self, pending: list[tuple[int, dict[str, pa.Table]]]) -> None:
        started = time.perf_counter()
        try:
            await self._process_batch(pending)
        finally:
            metrics.BATCH_SECONDS.observe(time.perf_counter() - started, strategy=self.dataflow.strategy)

    async def _process_batch(self, pending: list[tuple[int, dict[str, pa.Table]]]) -> None:
        strategy = self.dataflow.strategy
        if strategy == "recompute":
            for ts, _ in pending:
                result = await self._recompute(ts)
                diff = collections.Counter(result)
                diff.subtract(self._previous)
                self._previous = result
                self._emit(ts, [(row, n) for row, n in diff.items() if n])
            return
        merged: dict[str, list[pa.Table]] = {}
        for _, updates in pending:
            for cid, table in updates.items():
                merged.setdefault(cid, []).append(table)
        batch = {cid: pa.concat_tables(ts) for cid, ts in merged.items()}
        if strategy == "linear":
            sqls = [self.dataflow.delta_sql]
        elif strategy == "join":
            sqls = [self.dataflow.join.left_sql, self.dataflow.join.right_sql]
        else:
            sqls = self._aggregate_sqls()
        tables = await self.coord.engine.run(sparkflow.run_over_updates, self.inputs, batch, sqls)
        if strategy == "linear":
            per_ts = _consolidate(tables[0])
        elif strategy == "join":
            per_ts = await self._join_batch(tables)
        else:
            per_ts = self._fold_aggregates(tables)
        for ts in sorted(per_ts):
            self._emit(ts, per_ts[ts])

    async def _recompute(self, ts: int) -> collections.Counter:
        result = await self.coord.query(self.dataflow.full_sql, self.views, ts)
        return collections.Counter(_rows(result.table))

    # -- joins ---------------------------------------------------------------------
    async def _join_batch(self, sides: list[pa.Table]) -> dict[int, list[tuple[tuple, int]]]:
        """ΔL ⋈ R + L' ⋈ ΔR per timestamp against the kept state, shaped by Spark."""
        join = self.dataflow.join
        left_schema = self._side_schema(0, sides[0], join.left_columns)
        right_schema = self._side_schema(1, sides[1], join.right_columns)
        deltas = [_side_updates(sides[0], len(join.left_columns), join.key_count),
                  _side_updates(sides[1], len(join.right_columns), join.key_count)]
        joined: list[tuple] = []
        for ts in sorted(set(deltas[0]) | set(deltas[1])):
            for mine, other in ((0, 1), (1, 0)):
                # Left first against the old right state; then the right against the new left.
                state, opposite = self._sides[mine], self._sides[other]
                for key, row, diff in deltas[mine].get(ts, []):
                    if any(v is None for v in key):
                        continue  # NULL never equals anything
                    for other_row, n in opposite.get(key, {}).items():
                        pair = (row, other_row) if mine == 0 else (other_row, row)
                        joined.append((*pair[0], *pair[1], ts, diff * n))
                    rows = state.setdefault(key, collections.Counter())
                    rows[row] += diff
                    if rows[row] == 0:
                        del rows[row]
                        if not rows:
                            del state[key]
        if not joined:
            return {}
        schema = pa.schema([*left_schema, *right_schema, pa.field(DELTA_TS, pa.int64()),
                            pa.field(DELTA_DIFF, pa.int64())])
        table = pa.Table.from_arrays([pa.array(list(col), f.type) for col, f in zip(zip(*joined), schema)],
                                     schema=schema)
        shaped = await self.coord.engine.run(sparkflow.run_over_table, "__sw_joined", table, join.post_sql)
        return _consolidate(shaped)

    def _side_schema(self, side: int, table: pa.Table, columns: tuple[str, ...]) -> pa.Schema:
        known = self._side_schemas[side]
        if known is None:
            known = pa.schema([table.schema.field(c) for c in columns])
            self._side_schemas = (known, self._side_schemas[1]) if side == 0 else (self._side_schemas[0], known)
        return known

    # -- aggregates -----------------------------------------------------------------
    def _aggregate_sqls(self) -> list[str]:
        agg: AggregatePlan = self.dataflow.aggregate
        return [agg.partial_sql, *agg.extreme_sql.values()]

    def _fold_aggregates(self, tables: list[pa.Table]) -> dict[int, list[tuple[tuple, int]]]:
        """Apply partials to the per-group state; the changed output rows per timestamp."""
        agg: AggregatePlan = self.dataflow.aggregate
        k = agg.key_count
        events: dict[int, dict[tuple, list]] = {}
        for row in tables[0].to_pylist():
            key = tuple(row[f"__k{i}"] for i in range(k))
            events.setdefault(row[DELTA_TS], {}).setdefault(key, []).append(("partial", row))
        for j, table in zip(agg.extreme_sql, tables[1:]):
            for row in table.to_pylist():
                key = tuple(row[f"__k{i}"] for i in range(k))
                events.setdefault(row[DELTA_TS], {}).setdefault(key, []).append(("value", j, row))
        out: dict[int, list[tuple[tuple, int]]] = {}
        for ts in sorted(events):
            changes: collections.Counter = collections.Counter()
            for key, items in events[ts].items():
                state = self._groups.get(key)
                before = self._output_row(key, state) if state is not None and (state.n > 0 or agg.is_global) else None
                if state is None:
                    state = self._groups[key] = GroupState()
                for item in items:
                    if item[0] == "partial":
                        self._apply_partial(state, item[1])
                    else:
                        _, j, row = item
                        values = state.values.setdefault(j, collections.Counter())
                        values[row["__v"]] += row["__n"]
                        if values[row["__v"]] == 0:
                            del values[row["__v"]]
                after = self._output_row(key, state) if state.n > 0 or agg.is_global else None
                if state.n == 0 and not agg.is_global:
                    del self._groups[key]
                if before is not None:
                    changes[before] -= 1
                if after is not None:
                    changes[after] += 1
            out[ts] = [(row, n) for row, n in changes.items() if n]
        return out

    def _apply_partial(self, state: GroupState, row: dict) -> None:
        state.n += row["__n"]
        for a in self.dataflow.aggregate.aggregates:
            if a.kind in ("count", "sum", "avg"):
                state.counts[a.index] = state.counts.get(a.index, 0) + row[f"__c{a.index}"]
            if a.kind in ("sum", "avg"):
                s = row[f"__s{a.index}"]
                if s is not None:
                    prev = state.sums.get(a.index)
                    state.sums[a.index] = s if prev is None else prev + s

    def _global_empty_row(self) -> tuple:
        return self._output_row((), GroupState())

    def _output_row(self, key: tuple, state: GroupState) -> tuple:
        agg: AggregatePlan = self.dataflow.aggregate
        out = []
        for pos, (kind, i) in enumerate(agg.outputs):
            if kind == "key":
                out.append(key[i])
                continue
            a = agg.aggregates[i]
            out.append(_aggregate_value(a.kind, state, i, self.types[pos]))
        return tuple(out)

    # -- output -------------------------------------------------------------------
    def _emit(self, ts: int, updates: list[tuple[tuple, int]]) -> None:
        if self.stmt.up_to is not None and ts >= self.stmt.up_to:
            return
        if not updates:
            return
        rows = format_timestamp(self.output, ts, updates)
        self._push(rows)

    def _emit_progress(self, frontier: int) -> None:
        if not self.stmt.progress or frontier <= self._last_progress:
            return
        if self.stmt.up_to is not None and frontier > self.stmt.up_to:
            frontier = self.stmt.up_to
            if frontier <= self._last_progress:
                return
        self._last_progress = frontier
        self._push([progress_row(self.output, frontier)])

    def _push(self, rows: list[tuple]) -> None:
        if not rows:
            return
        if len(self.buffer) + len(rows) > MAX_BUFFERED_ROWS:
            self._fail(SqlError(BUFFER_FULL, f"subscription buffer full: the client has not read "
                                             f"{len(self.buffer)} rows; closing the connection"))
            self.close()
            if self.on_overflow is not None:
                self.on_overflow()
            return
        self.buffer.extend(rows)
        self.changed.set()

    def take(self, limit: int | None) -> list[tuple]:
        n = len(self.buffer) if limit is None else min(limit, len(self.buffer))
        rows = [self.buffer.popleft() for _ in range(n)]
        self.rows_sent += len(rows)
        metrics.ROWS_SENT.inc(len(rows))
        if not self.buffer:
            self.changed.clear()
        return rows

    async def wait(self, timeout: float | None = None) -> None:
        """Until rows are buffered, the subscription ends or fails, or `timeout` passes."""
        if self.buffer or self.finished:
            return
        self.changed.clear()
        if self.buffer or self.finished:
            return
        if timeout is None:
            await self.changed.wait()
        else:
            try:
                await asyncio.wait_for(self.changed.wait(), timeout)
            except TimeoutError:
                pass

    @property
    def drained(self) -> bool:
        return self.finished and not self.buffer


def _side_updates(table: pa.Table, width: int, keys: int) -> dict[int, list[tuple[tuple, tuple, int]]]:
    """One join input's batch as (key, row, diff) per timestamp."""
    cols = [_values(c) for c in table.columns]
    out: dict[int, list[tuple[tuple, tuple, int]]] = {}
    ts_col, diff_col = cols[width + keys], cols[width + keys + 1]
    for r in range(table.num_rows):
        row = tuple(cols[i][r] for i in range(width))
        key = tuple(cols[width + i][r] for i in range(keys))
        out.setdefault(ts_col[r], []).append((key, row, diff_col[r]))
    return out


def _values(column: pa.ChunkedArray | pa.Array) -> list:
    """A column's Python values, arrays as tuples: rows are counted in dicts, so hashable."""
    values = column.to_pylist()
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        return [None if v is None else tuple(v) for v in values]
    return values


def _rows(table: pa.Table) -> list[tuple]:
    columns = [_values(c) for c in table.columns]
    return list(zip(*columns)) if columns else []


def _consolidate(table: pa.Table) -> dict[int, list[tuple[tuple, int]]]:
    """Delta SQL output (columns, __mz_ts, __mz_diff) as consolidated updates per timestamp."""
    if table.num_rows == 0:
        return {}
    names = table.column_names
    ts_i, diff_i = names.index(DELTA_TS), names.index(DELTA_DIFF)
    data_cols = [i for i in range(len(names)) if i not in (ts_i, diff_i)]
    columns = [_values(table.column(i)) for i in range(len(names))]
    per_ts: dict[int, collections.Counter] = {}
    for r in range(table.num_rows):
        row = tuple(columns[i][r] for i in data_cols)
        per_ts.setdefault(columns[ts_i][r], collections.Counter())[row] += columns[diff_i][r]
    return {ts: [(row, n) for row, n in c.items() if n] for ts, c in per_ts.items()}


def _aggregate_value(kind: str, state: GroupState, i: int, t: SqlType) -> object:
    """An aggregate's value from its state, typed as Spark's one-shot result would be."""
    if kind == "count_star":
        return state.n
    if kind == "count":
        return state.counts.get(i, 0)
    if kind in ("min", "max"):
        values = [v for v, n in state.values.get(i, {}).items() if n > 0]
        if not values:
            return None
        return min(values) if kind == "min" else max(values)
    if state.counts.get(i, 0) == 0:
        return None
    total = state.sums.get(i)
    if kind == "sum":
        return total
    count = state.counts[i]
    if t.base.name == "numeric":
        ps = t.precision_scale
        scale = ps[1] if ps else 6
        with decimal.localcontext() as ctx:
            ctx.prec = 80
            value = decimal.Decimal(total) / count
            return value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    return float(total) / count
