"""Putting results on the wire in batches: DataRows, COPY ... TO STDOUT, and the rows of a
running SUBSCRIBE, one socket write per batch.

The connection decides what to send (it matches the statement's Outcome); this module
only knows how: encode Arrow columns into DataRow or CopyData messages, hand them to
`send`, and `flush` (wait for the socket to drain) between batches, so that memory is
bounded by one batch and a slow client holds back the producer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from planner.codecs.datarow import EncodedRows, column_formats, encode_table
from planner.types import SqlType
from server import metrics
from server.copy_format import CopyOptions
from server.copy_out import CopyOut as CopyEncoder
from server.protocol import messages as m

if TYPE_CHECKING:
    from server.subscribe import Subscription

ROWS_PER_WRITE = 8192
# A streaming SUBSCRIBE takes at most about this much of its buffer per socket write, and
# waits for the socket to drain before taking more: the encoded copy stays small.
BYTES_PER_WRITE = 1 << 20


def format_of(formats: tuple[int, ...], i: int) -> int:
    """Column i's format code (0 text, 1 binary) from a Bind's result format list."""
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i]


def fields(names: list[str], types: list[SqlType], formats: tuple[int, ...]) -> list[m.FieldDescription]:
    """A RowDescription's fields for these columns, in these formats."""
    out = []
    for i, (name, t) in enumerate(zip(names, types)):
        size = -1 if t.is_array else t.base.typlen
        out.append(m.FieldDescription(name, t.oid, size, t.typmod, format_of(formats, i)))
    return out


class ResultWriter:
    """Sends result batches through a connection's `send` and `flush`.

    `wait_for_rows` waits until a subscription has rows (or news), giving way to a cancel
    request: the session's, so that a CancelRequest stops a SUBSCRIBE being sent."""

    def __init__(self, send: Callable[[bytes], None], flush: Callable[[], Awaitable[None]],
                 wait_for_rows: Callable[[Subscription], Awaitable[None]]) -> None:
        self.send = send
        self.flush = flush
        self.wait_for_rows = wait_for_rows

    async def rows(self, table: pa.Table, types: list[SqlType], formats: tuple[int, ...],
                   start: int, stop: int, encoded: EncodedRows | None = None) -> None:
        """DataRows for rows [start, stop) of a table, flushed every ROWS_PER_WRITE rows.
        `encoded`, when it covers the whole table in these formats, is sent as it is (its
        pieces not yet encoded are encoded here)."""
        column_fmts = column_formats(formats, len(types))
        if encoded is not None and (start, stop) == (0, table.num_rows) and encoded.formats == column_fmts:
            lo = 0
            for n, data in encoded.pieces:
                if data is None:
                    data = encode_table(table.slice(lo, n), types, column_fmts)
                else:
                    metrics.FETCH_ROWS_AHEAD.inc(n)
                self.send(data)
                lo += n
                await self.flush()
            return
        for lo in range(start, stop, ROWS_PER_WRITE):
            hi = min(stop, lo + ROWS_PER_WRITE)
            self.send(encode_table(table.slice(lo, hi - lo), types, column_fmts))
            if hi - lo == ROWS_PER_WRITE:
                await self.flush()

    async def copy_table(self, names: list[str], types: list[SqlType], options: CopyOptions,
                         table: pa.Table) -> int:
        """COPY ... TO STDOUT of a result table; the number of rows sent."""
        encoder = self._copy_start(names, types, options)
        for start in range(0, table.num_rows, ROWS_PER_WRITE):
            self.send(encoder.messages(table.slice(start, ROWS_PER_WRITE)))
            await self.flush()
        self._copy_end(encoder)
        return table.num_rows

    async def copy_stream(self, names: list[str], types: list[SqlType], options: CopyOptions,
                          sub: Subscription) -> int:
        """A SUBSCRIBE as COPY ... TO STDOUT, until it ends; the number of rows sent. The
        subscription is closed however this ends."""
        encoder = self._copy_start(names, types, options)
        count = 0
        try:
            while True:
                tables = await self._take(sub, None)
                if tables:
                    for table in tables:
                        self.send(encoder.messages(table))
                        count += table.num_rows
                    await self.flush()
                if _ended(sub):
                    break
        finally:
            sub.close()
        self._copy_end(encoder)
        return count

    async def stream_rows(self, sub: Subscription, types: list[SqlType], formats: tuple[int, ...],
                          max_rows: int) -> tuple[int, bool]:
        """Execute on a SUBSCRIBE portal: (rows sent, whether the subscription ended).

        Without a row limit, DataRows stream for as long as the subscription runs. With
        one, Execute returns as soon as any rows are ready (up to the limit) and the
        portal is suspended, as Materialize does: a driver's cursor.fetch(5) gets what
        there is rather than waiting for five rows that may never come."""
        sent = 0
        while True:
            tables = await self._take(sub, None if max_rows <= 0 else max_rows)
            for table in tables:
                await self.rows(table, types, formats, 0, table.num_rows)
                sent += table.num_rows
            if tables:
                await self.flush()
            if _ended(sub):
                return sent, True
            if max_rows > 0 and tables:
                return sent, False

    async def _take(self, sub: Subscription, limit: int | None) -> list[pa.Table]:
        await self.wait_for_rows(sub)
        return sub.take(limit, BYTES_PER_WRITE)

    def _copy_start(self, names: list[str], types: list[SqlType], options: CopyOptions) -> CopyEncoder:
        encoder = CopyEncoder(options, types)
        fmt = encoder.overall_format
        self.send(m.copy_out_response(fmt, [fmt] * len(types)))
        self.send(encoder.header(names))
        return encoder

    def _copy_end(self, encoder: CopyEncoder) -> None:
        self.send(encoder.trailer())
        self.send(m.copy_done())


def _ended(sub: Subscription) -> bool:
    """True once a subscription has sent everything; its error once its rows are out."""
    if sub.error is not None and not sub.buffered:
        raise sub.error
    return sub.drained
