"""What a statement produced, for the wire layer to send: a tag, maybe rows, notices,
a stream (SUBSCRIBE), or COPY data to send or to collect."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from planner.types import BY_NAME, SqlType
from server.catalog import Item
from server.copy_format import CopyOptions
from spark_backend.schema import arrow_type

if TYPE_CHECKING:
    from server.subscribe import Subscription

TEXT = SqlType(BY_NAME["text"])


@dataclass(frozen=True)
class CopyIn:
    """Where the rows of a COPY ... FROM STDIN go, once the client has sent them."""

    item: Item
    positions: list[int]  # the table's column positions, in the data's order
    options: CopyOptions
    defaults: dict[int, object]  # values of the columns not in the data


@dataclass
class Outcome:
    """What a statement produced, for the wire layer to send."""

    tag: str
    names: list[str] | None = None
    types: list[SqlType] | None = None
    table: pa.Table | None = None
    notices: list[tuple[str, str]] = field(default_factory=list)  # (severity, message)
    parameter_changes: list[tuple[str, str]] = field(default_factory=list)
    stream: Subscription | None = None  # SUBSCRIBE: rows keep coming until it ends
    copy: bool = False  # send as COPY ... TO STDOUT
    copy_options: CopyOptions | None = None  # its format (text when None)
    copy_in: CopyIn | None = None  # COPY ... FROM STDIN: the wire layer collects the data

    @property
    def returns_rows(self) -> bool:
        return self.names is not None


def rows_outcome(names: list[str], rows: list[tuple], types: list[SqlType] | None = None,
                 tag: str | None = None) -> Outcome:
    """An Outcome from a few Python rows (SHOW results and the like)."""
    types = types or [TEXT] * len(names)
    arrays = [pa.array([r[i] for r in rows], arrow_type(t)) for i, t in enumerate(types)]
    table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(names))])
    return Outcome(tag or f"SELECT {len(rows)}", names, types, table)
