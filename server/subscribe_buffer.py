"""A subscription's unread output, bounded in bytes, with backpressure.

The dataflow `put`s Arrow tables (one timestamp's rows each, see subscribe_output) and
the client's delivery (FETCH, COPY, a portal) `take`s them. While the unread bytes are
at or over the budget, `put` waits: a client that does not read holds back its own
subscription, and nothing else. With a stall timeout, a `put` that has waited that long
without the client reading anything raises `Stalled` instead.
"""

from __future__ import annotations

import asyncio
import collections
import time

import pyarrow as pa

from server import metrics

DEFAULT_BUDGET = 16 << 20  # bytes of unread output per subscription (--subscribe-buffer-bytes)


class Stalled(Exception):
    """The client read nothing for the whole stall timeout while the buffer was full."""


class OutputBuffer:
    def __init__(self, budget: int = DEFAULT_BUDGET, stall_timeout: float | None = None,
                 label: str = "") -> None:
        self.budget = max(1, budget)
        self.stall_timeout = stall_timeout or None
        self.label = label  # the subscription, for the per-subscription gauges
        self._tables: collections.deque[pa.Table] = collections.deque()
        self.bytes = 0
        self.rows = 0
        # Output taken from here but not yet sent: a cursor's rows held ahead of its next
        # FETCH (server/fetch_ahead). Not under the budget, but unread all the same, so the
        # gauges count it.
        self.held_bytes = 0
        self.held_rows = 0
        self.closed = False
        self._discarded = False
        self._readable = asyncio.Event()  # rows to take, or closed
        self._room = asyncio.Event()  # under budget, or closed
        self._room.set()
        self.last_take = time.monotonic()

    def __len__(self) -> int:
        return self.rows

    # -- the dataflow's side ---------------------------------------------------------
    async def put(self, table: pa.Table) -> None:
        """Append `table`, first waiting while the unread bytes are at or over budget."""
        while self.bytes >= self.budget and not self.closed:
            self._room.clear()
            if self.stall_timeout is None:
                await self._room.wait()
                continue
            read_before = self.last_take
            try:
                await asyncio.wait_for(self._room.wait(), self.stall_timeout)
            except TimeoutError:
                if self.last_take == read_before:
                    raise Stalled from None
        if self.closed or table.num_rows == 0:
            return
        self._tables.append(table)
        self.bytes += table.nbytes
        self.rows += table.num_rows
        self._readable.set()
        self._gauges()

    # -- the client's side -----------------------------------------------------------
    def take(self, limit: int | None = None, max_bytes: int | None = None) -> list[pa.Table]:
        """Up to `limit` rows (None: all) and about `max_bytes`, oldest first; at least
        one row when any is buffered."""
        out: list[pa.Table] = []
        want = self.rows if limit is None else min(limit, self.rows)
        taken_bytes = 0
        while want > 0 and self._tables:
            table = self._tables[0]
            n = min(want, table.num_rows)
            if max_bytes is not None:
                fit = (max_bytes - taken_bytes) // max(1, table.nbytes // max(1, table.num_rows))
                if fit <= 0 and out:
                    break
                n = max(1, min(n, fit))
            if n == table.num_rows:
                self._tables.popleft()
                piece = table
            else:
                piece = table.slice(0, n)
                self._tables[0] = table.slice(n)
            size = piece.nbytes
            self.bytes = max(0, self.bytes - size)
            self.rows -= n
            taken_bytes += size
            want -= n
            out.append(piece)
        if not self._tables:
            self.bytes = self.rows = 0  # slices' sizes need not add up exactly
            if not self.closed:
                self._readable.clear()
        if out:
            self.last_take = time.monotonic()
        if self.bytes < self.budget:
            self._room.set()
        self._gauges()
        return out

    async def readable(self, timeout: float | None = None) -> None:
        """Until rows are buffered or the buffer is closed, or `timeout` passes."""
        if self.rows or self.closed:
            return
        if timeout is None:
            await self._readable.wait()
            return
        try:
            await asyncio.wait_for(self._readable.wait(), timeout)
        except TimeoutError:
            pass

    def close(self) -> None:
        """No more rows will come: wake whoever waits, on either side."""
        self.closed = True
        self._readable.set()
        self._room.set()

    def discard(self) -> None:
        """Drop what is buffered (the subscription is gone) and its gauges."""
        self.close()
        self._discarded = True
        self._tables.clear()
        self.bytes = self.rows = self.held_bytes = self.held_rows = 0
        metrics.SUBSCRIBE_BUFFERED_BYTES.remove(subscription=self.label)
        metrics.SUBSCRIBE_BUFFERED_ROWS.remove(subscription=self.label)

    def held(self, rows: int, size: int) -> None:
        """The client's reader holds `rows` rows of `size` bytes it took, not yet sent."""
        if self._discarded:
            return  # the subscription is gone, and its gauges with it
        self.held_rows, self.held_bytes = rows, size
        self._gauges()

    def _gauges(self) -> None:
        metrics.SUBSCRIBE_BUFFERED_BYTES.set(self.bytes + self.held_bytes, subscription=self.label)
        metrics.SUBSCRIBE_BUFFERED_ROWS.set(self.rows + self.held_rows, subscription=self.label)
