"""How a SUBSCRIBE's result changes, one class per strategy behind one interface.

The planner chooses a strategy once (planner.dataflow: linear, aggregate, join or
recompute); the subscription makes the matching `Strategy` when it plans and from then
on only calls it: `prepare` before the snapshot, `snapshot` at AS OF, `batch` for the
commits it was handed, `history` for updates it rereads from storage, `discard` when it
ends. Each strategy keeps its own state (the previous result, the groups, the join's
rows per key) and hands consolidated changes to its host, which formats and buffers
them. `name` is the plan's strategy name: the label of metrics, logs and EXPLAIN.

The linear strategy, which streams large results through spills, is in
server.subscribe_linear.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import pyarrow as pa

from planner.dataflow import DataflowPlan
from planner.subscribe_syntax import Subscribe
from server.subscribe_format import OutputPlan
from server.subscribe_state import (
    AggregateState,
    Changes,
    JoinState,
    Multiset,
    consolidate,
    difference,
    multiset,
)
from spark_backend import microbatch

Pending = list[tuple[int, dict[str, pa.Table]]]  # (timestamp, collection id → updates) per commit


class Host(Protocol):
    """What a strategy uses of its subscription (server.subscribe.Subscription)."""

    id: int
    coord: Any  # the coordinator: its store
    stmt: Subscribe
    dataflow: DataflowPlan
    inputs: list[microbatch.Input]
    views: dict
    types: list
    output: OutputPlan
    as_of: int

    async def spark(self, fn: Callable, *args: Any) -> Any: ...

    async def run_query(self, ts: int) -> Any: ...

    async def off_loop(self, fn: Callable, *args: Any) -> Any: ...

    async def emit_changes(self, changes: Changes) -> None: ...

    async def put(self, table: pa.Table) -> None: ...

    def wanted(self, ts: int) -> bool: ...

    def tables_of(self, ts: int, updates: list[tuple[tuple, int]]) -> list[pa.Table]: ...


class Strategy(ABC):
    """One way of maintaining a SUBSCRIBE's result."""

    name: ClassVar[str]  # as planner.dataflow names it: the metrics label

    def __init__(self, host: Host) -> None:
        self.host = host

    async def prepare(self) -> None:  # most strategies have nothing to prepare
        """Set up the state the snapshot builds on (before any output)."""

    @abstractmethod
    async def snapshot(self) -> None:
        """The result at the host's AS OF: state built, output emitted only WITH (SNAPSHOT)."""

    @abstractmethod
    async def batch(self, pending: Pending) -> None:
        """The change the commits in `pending` make."""

    @abstractmethod
    async def history(self, after: int, upto: int) -> None:
        """The change of the updates after `after` up to `upto`, read from storage."""

    def discard(self) -> None:  # only strategies with scratch files have any
        """The subscription ended: let go of anything kept outside memory."""

    @property
    def emits_snapshot(self) -> bool:
        return self.host.stmt.snapshot


class RecomputeStrategy(Strategy):
    """Any query: re-run in full at each timestamp and diffed against the last result."""

    name = "recompute"

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.previous = Multiset()

    async def snapshot(self) -> None:
        host = self.host
        result = await host.run_query(host.as_of)
        self.previous = await host.off_loop(multiset, result.table)
        if self.emits_snapshot:
            await host.emit_changes({host.as_of: self.previous.items()})

    async def batch(self, pending: Pending) -> None:
        for ts in sorted({ts for ts, _ in pending}):
            await self._recompute(ts)

    async def history(self, after: int, upto: int) -> None:
        host = self.host
        source = microbatch.History(after, upto)
        for ts in await host.spark(microbatch.timestamps, host.coord.store, host.inputs, source):
            await self._recompute(ts)

    async def _recompute(self, ts: int) -> None:
        host = self.host
        result = await host.run_query(ts)
        current = await host.off_loop(multiset, result.table)
        changes = await host.off_loop(difference, current, self.previous)
        self.previous = current
        await host.emit_changes({ts: changes})


class IncrementalStrategy(Strategy):
    """A strategy whose every input — snapshot, commits, history — is one Spark source
    run through the same `step`."""

    async def snapshot(self) -> None:
        await self.step(microbatch.Snapshot(self.host.as_of), snapshot=True)

    async def batch(self, pending: Pending) -> None:
        merged: dict[str, list[pa.Table]] = {}
        for _, updates in pending:
            for cid, table in updates.items():
                merged.setdefault(cid, []).append(table)
        await self.step(microbatch.Batch({cid: pa.concat_tables(ts) for cid, ts in merged.items()}))

    async def history(self, after: int, upto: int) -> None:
        await self.step(microbatch.History(after, upto))

    @abstractmethod
    async def step(self, source: microbatch.Source, snapshot: bool = False) -> None:
        """Run one source through the dataflow and emit what changed (a snapshot's output
        only WITH (SNAPSHOT), though its state is built either way)."""


class AggregateStrategy(IncrementalStrategy):
    """GROUP BY with count/sum/avg/min/max: partials per (group, timestamp) from Spark,
    folded into state per group; only touched groups change."""

    name = "aggregate"

    async def prepare(self) -> None:
        self.state = AggregateState(self.host.dataflow.aggregate, self.host.types, await self._float_args())

    async def _float_args(self) -> set[int]:
        """The sum/avg aggregates whose argument is a float (kept as exact sums)."""
        agg = self.host.dataflow.aggregate
        if not agg.float_sql:
            return set()
        [schema] = await self.host.spark(microbatch.describe, self.host.inputs, [agg.partial_sql])
        return {j for j in agg.float_sql if pa.types.is_floating(schema.field(f"__s{j}").type)}

    async def step(self, source: microbatch.Source, snapshot: bool = False) -> None:
        host, state = self.host, self.state
        tables = await host.spark(microbatch.run, host.coord.store, host.inputs, source, state.sqls())
        changes = await host.off_loop(state.apply, tables)
        if snapshot:
            extra = await host.off_loop(state.empty_global)
            if extra:
                changes = {host.as_of: changes.get(host.as_of, []) + extra}
        if self.emits_snapshot or not snapshot:
            await host.emit_changes(changes)


class JoinStrategy(IncrementalStrategy):
    """An inner equi-join: ΔL ⋈ R + L' ⋈ ΔR against the rows kept per join key."""

    name = "join"

    async def prepare(self) -> None:
        self.state = JoinState(self.host.dataflow.join)

    async def step(self, source: microbatch.Source, snapshot: bool = False) -> None:
        host, state = self.host, self.state
        sides = await host.spark(microbatch.run, host.coord.store, host.inputs, source, state.sqls())
        joined = await host.off_loop(state.apply, sides)
        if joined is not None and (self.emits_snapshot or not snapshot):
            shaped = await host.spark(microbatch.run_over_table, "__sw_joined", joined, state.plan.post_sql)
            await host.emit_changes(await host.off_loop(consolidate, shaped))
