"""A SUBSCRIBE cursor's next rows, taken and encoded while the client reads the last FETCH's.

`FETCH n` over a SUBSCRIBE is a round trip per n rows: the server encodes n rows, the
client parses them, then asks for more. Done one after the other, the two halves add up
(a 1e7-row snapshot: about 5 CPU-seconds of each). So once a FETCH n is sent, the cursor
takes up to n more rows from its subscription as they become ready and encodes them as
DataRows in the formats of that FETCH, a piece at a time, giving way to the event loop
between pieces. The next FETCH sends what is held: pieces already encoded as they are,
the rest encoded then; rows beyond what is held come from the subscription's buffer as
before. A FETCH of another count or in other formats still gets exactly its rows.

What is held ahead is at most n rows, and at most the subscription's budget of bytes,
beside that budget: rows leave the subscription's buffer only as fast as the client asks.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from planner.codecs.datarow import EncodedRows, encode_table
from planner.types import SqlType
from server import subscribe_output
from server.outcome import Rows

if TYPE_CHECKING:
    from server.subscribe import Subscription

PIECE_ROWS = 8192  # rows encoded at a time, between which the event loop runs


@dataclass
class _Piece:
    table: pa.Table
    data: bytes | None = None  # DataRows of `table` in the held formats, once encoded


class FetchAhead:
    """The rows of one SUBSCRIBE cursor between its FETCHes."""

    def __init__(self, sub: Subscription, names: list[str], types: list[SqlType]) -> None:
        self.sub = sub
        self.names = names
        self.types = types
        self._pieces: collections.deque[_Piece] = collections.deque()
        self._formats: tuple[int, ...] | None = None
        self._task: asyncio.Task | None = None

    @property
    def rows(self) -> int:
        """Rows held (a few pieces: counted when asked rather than kept in step)."""
        return sum(piece.table.num_rows for piece in self._pieces)

    def _report(self) -> None:
        """What is held, to the subscription's gauges of unread output."""
        size = sum(piece.table.nbytes + len(piece.data or b"") for piece in self._pieces)
        self.sub.out.held(self.rows, size)

    async def fetch(self, count: int | None, timeout: float | None,
                    wait_for_rows: Callable[[Subscription, float | None], Awaitable[None]]) -> Rows:
        """FETCH `count` (None: ALL): as soon as any row is ready, up to `count` rows."""
        sub = self.sub
        if not self.rows:
            await wait_for_rows(sub, timeout)
        if sub.error is not None and not sub.buffered and not self.rows:
            raise sub.error
        held = self.rows
        pieces = self._take(count)
        sub.count_sent(held - self.rows)  # the rest came from the buffer, counted there
        tables = [p.table for p in pieces]
        if not tables:
            return Rows("FETCH 0", self.names, self.types, subscribe_output.no_rows(len(self.names)))
        table = subscribe_output.concat(tables)
        encoded = None
        if self._formats is not None and all(t.schema == table.schema for t in tables):
            encoded = EncodedRows(self._formats, tuple((p.table.num_rows, p.data) for p in pieces))
        then = None
        if count is not None and not sub.drained and sub.error is None:
            def then(formats: tuple[int, ...]) -> None:
                self.start(count, formats)
        return Rows(f"FETCH {table.num_rows}", self.names, self.types, table, encoded=encoded, then=then)

    def start(self, count: int, formats: tuple[int, ...]) -> None:
        """After a FETCH `count` went out in `formats`: take and encode the next `count` rows."""
        self.stop()
        if formats != self._formats:
            for piece in self._pieces:
                piece.data = None
            self._formats = formats
            self._report()
        self._task = asyncio.get_running_loop().create_task(self._run(count, formats))

    def stop(self) -> None:
        """No more work ahead; what is held stays. The task only ever stops at an await,
        where what it has taken is already held."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self, count: int, formats: tuple[int, ...]) -> None:
        sub = self.sub
        budget = sub.out.budget
        while True:
            for piece in self._pieces:
                if piece.data is None:
                    piece.data = encode_table(piece.table, self.types, formats)
                    self._report()
                    await asyncio.sleep(0)
            if self.rows >= count:
                return
            await sub.wait()
            if sub.error is not None:
                return  # its rows, then its error, go to the next FETCH
            tables = sub.out.take(count - self.rows, budget)  # counted as sent when a FETCH sends them
            if not tables:
                return  # the subscription has ended
            self._hold(tables)

    def _hold(self, tables: list[pa.Table]) -> None:
        for table in tables:
            for lo in range(0, table.num_rows, PIECE_ROWS):
                piece = table.slice(lo, PIECE_ROWS)
                self._pieces.append(_Piece(piece))
        self._report()

    def _take(self, limit: int | None) -> list[_Piece]:
        """Up to `limit` rows (None: all): those held first, then the subscription's."""
        self.stop()
        out: list[_Piece] = []
        want = self.rows if limit is None else limit
        while self._pieces and want > 0:
            piece = self._pieces.popleft()
            n = piece.table.num_rows
            if n > want:  # split: the rest stays held, neither half encoded
                self._pieces.appendleft(_Piece(piece.table.slice(want)))
                piece = _Piece(piece.table.slice(0, want))
                n = want
            out.append(piece)
            want -= n
        self._report()
        if limit is None:
            out.extend(_Piece(t) for t in self.sub.take(None))
        elif want > 0:
            out.extend(_Piece(t) for t in self.sub.take(want))
        return out

    def close(self) -> None:
        self.stop()
        self._pieces.clear()
        self._report()
