"""The linear strategy: a filter/project/map/UNION ALL query, whose change is the query
run over the change (ΔQ(R) = Q(ΔR)), so it keeps no state.

A snapshot or batch of more than `SPILL_ROWS` input updates is not collected. A snapshot
of plain diffs is streamed: Spark serves its result a partition at a time, first the rows'
hashes (the rows whose hash repeats are the only ones that may need netting out), then the
rows, Arrow batches passed on as fast as the client reads (spark_backend.arrow_stream): the
server never holds more than one chunk and a hash per row, and Spark's work overlaps the
client's. Anything else (a batch, an ordered or enveloped output, Spark Connect, a larger
snapshot) is spilled by Spark, and consolidated rows are read back chunk by chunk
(spark_backend.spill).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from planner.types import row_key
from server import subscribe_output as output
from server.subscribe_state import consolidate
from server.subscribe_strategy import IncrementalStrategy
from spark_backend import microbatch
from spark_backend import spill as spilling

# A linear snapshot or batch of more input updates than this is spilled by Spark and read
# back in chunks rather than collected (a spill costs a Parquet write: ~0.2 s at least).
SPILL_ROWS = 50_000
# A streamed snapshot holds a 4-byte hash per row until it is sent: up to this many rows
# (64 MB); a larger one spills, whose read-back looks at hashes a bucket at a time.
STREAM_ROWS = 16_000_000


class LinearStrategy(IncrementalStrategy):
    name = "linear"

    def __init__(self, host) -> None:
        super().__init__(host)
        self.spills: list[spilling.Spill] = []  # being read back now
        self.streams: list[microbatch.SnapshotStream] = []  # being read now

    async def step(self, source: microbatch.Source, snapshot: bool = False) -> None:
        if snapshot and not self.emits_snapshot:
            return  # no state to build
        host = self.host
        store = host.coord.store
        estimate = microbatch.estimated_rows(store, host.inputs, source)
        if snapshot and host.output.kind == "diffs" and SPILL_ROWS < estimate <= STREAM_ROWS:
            with store.reading():  # the files it reads stay until the last partition is read
                stream = await host.spark(microbatch.stream_delta, store, host.inputs, source,
                                          host.dataflow.delta_sql)
                if stream is not None:
                    await self._emit_stream(stream, source.as_of)
                    return
        if estimate > SPILL_ROWS:
            spilled = await host.spark(microbatch.spill_delta, store, host.inputs, source,
                                       host.dataflow.delta_sql, self._spill_order(), f"s{host.id}")
            if spilled is not None:
                await self._emit_spill(spilled)
                return
        [table] = await host.spark(microbatch.run, store, host.inputs, source, [host.dataflow.delta_sql])
        await host.emit_changes(await host.off_loop(consolidate, table))

    def discard(self) -> None:
        for stream in self.streams:
            stream.close()
        for spilled in self.spills:
            spilled.remove()
        # A spill whose job finished after the subscription's task was cancelled is found by its name.
        scratch = self.host.coord.store.scratch / "subscribe"
        for path in scratch.glob(f"s{self.host.id}-*") if scratch.exists() else []:
            shutil.rmtree(path, ignore_errors=True)

    async def _emit_stream(self, stream: microbatch.SnapshotStream, ts: int) -> None:
        """A streamed snapshot: the repeated hashes first, then the rows, a chunk at a time.
        Reading waits on Spark's jobs, so it runs on the engine's threads."""
        host = self.host
        self.streams.append(stream)
        try:
            repeated = await host.spark(_repeated_hashes, stream)
            if not host.wanted(ts):
                return
            chunks = self._stream_tables(stream, repeated, ts)
            # The first read starts the Spark thread that serves the rows, whose jobs carry the
            # dataflow's job group from then on; later reads only drain its socket, and skip
            # the two Py4J calls a job group costs per read.
            grouped = True
            while True:
                table = await host.spark(_next, chunks, grouped=grouped)
                grouped = False
                if table is None:
                    break
                await host.put(table)
        finally:
            stream.close()
            self.streams.remove(stream)

    def _stream_tables(self, stream: microbatch.SnapshotStream, repeated: pa.Array | None,
                       ts: int) -> Iterator[pa.Table]:
        width = stream.width
        names = [*spilling.data_columns(width), spilling.DELTA_DIFF]
        for chunk in spilling.net_out(_chunks(stream.rows), repeated, names):
            yield output.updates_table(self.host.output, ts, chunk.select(list(range(width))), chunk.column(width))

    def _spill_order(self) -> tuple[spilling.SortKey, ...] | None:
        """How Spark must order a spilled timestamp for the output modifier (None: plain
        diffs, which need no order and are consolidated as they are read back)."""
        plan = self.host.output
        everything = [spilling.SortKey(i) for i in range(plan.relation_arity)] + [spilling.SortKey(None)]
        if plan.kind == "order_by":
            return tuple(spilling.SortKey(k.column, k.descending, k.nulls_first) for k in plan.sort) \
                + tuple(everything)
        if plan.kind in ("upsert", "debezium"):
            return tuple(spilling.SortKey(i) for i in plan.key_indexes)
        return None

    async def _emit_spill(self, spilled: spilling.Spill) -> None:
        """A spilled result, one timestamp at a time, a chunk at a time."""
        host = self.host
        self.spills.append(spilled)
        try:
            for ts in spilled.timestamps:
                if not host.wanted(ts):
                    break
                chunks = self._spill_tables(spilled, ts)
                while True:
                    table = await host.off_loop(next, chunks, None)
                    if table is None:
                        break
                    await host.put(table)
        finally:
            spilled.remove()
            self.spills.remove(spilled)

    def _spill_tables(self, spilled: spilling.Spill, ts: int) -> Iterator[pa.Table]:
        plan = self.host.output
        width = spilled.width
        if plan.kind in ("diffs", "order_by"):
            for chunk in spilled.consolidated(ts):
                yield output.updates_table(plan, ts, chunk.select(list(range(width))), chunk.column(width))
            return
        # Envelopes: rows come sorted by key; a key's rows may straddle two chunks, so the
        # last key of each chunk waits for the next.
        keys = plan.key_indexes
        carry: list[tuple[tuple, int]] = []
        for chunk in spilled.consolidated(ts):
            updates = carry + [(row[:-1], row[-1]) for row in output.python_rows(chunk)]
            last = row_key(tuple(updates[-1][0][i] for i in keys))
            cut = len(updates)
            while cut > 0 and row_key(tuple(updates[cut - 1][0][i] for i in keys)) == last:
                cut -= 1
            carry = updates[cut:]
            if cut:
                yield from self.host.tables_of(ts, updates[:cut])
        if carry:
            yield from self.host.tables_of(ts, carry)


def _repeated_hashes(spark, stream: microbatch.SnapshotStream) -> pa.Array | None:
    """The hashes that occur more than once in the stream's first pass (None: none do), from
    the first of its hash choices whose repeated rows are few enough to net out in Python."""
    for index in range(len(stream.choices)):
        parts = [batch.column(0).to_numpy(zero_copy_only=False) for batch in stream.hashes(index)]
        rows = sum(len(part) for part in parts)
        found, sharing = spilling.repeats(np.concatenate(parts)) if parts else (np.zeros(0, np.int32), 0)
        if index == len(stream.choices) - 1 or sharing <= spilling.tolerable_repeats(rows):
            stream.choose(index, rows)
            return pa.array(found, pa.int32()) if found.size else None
    raise AssertionError("unreachable: the last choice is always taken")


def _next(spark, chunks: Iterator[pa.Table]) -> pa.Table | None:
    return next(chunks, None)


def _chunks(batches) -> Iterator[pa.Table]:
    """Record batches (Spark's are 10,000 rows) grouped into tables of about a spill chunk."""
    group: list[pa.RecordBatch] = []
    size = rows = 0
    for batch in batches:
        group.append(batch)
        size += batch.nbytes
        rows += batch.num_rows
        if size >= spilling.CHUNK_BYTES or rows >= spilling.CHUNK_ROWS:
            yield pa.Table.from_batches(group)
            group, size, rows = [], 0, 0
    if group:
        yield pa.Table.from_batches(group)
