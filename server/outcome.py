"""What a statement produced, for the wire layer to send: one of a few kinds, each a frozen
dataclass, that the connection matches once.

- :class:`CommandDone`: a command tag and nothing else (CREATE, INSERT without RETURNING, SET…);
- :class:`EmptyQuery`: the statement was empty (an EmptyQueryResponse instead of a tag);
- :class:`Rows`: a result table (SELECT, SHOW, FETCH, RETURNING…);
- :class:`CopyOut`: a result table sent as COPY ... TO STDOUT;
- :class:`Stream`: a SUBSCRIBE, whose rows keep coming until it ends;
- :class:`CopyIn`: COPY ... FROM STDIN, whose data the wire layer collects from the client.

Every kind carries the notices and parameter changes the statement raised, sent before it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import pyarrow as pa

from planner.codecs.datarow import EncodedRows
from planner.types import BY_NAME, SqlType
from server.catalog_items import Item
from server.copy_format import CopyOptions
from spark_backend.schema import arrow_type

if TYPE_CHECKING:
    from server.subscribe import Subscription

TEXT = SqlType(BY_NAME["text"])

Notice = tuple[str, str]  # (severity, message)
ParameterChange = tuple[str, str]  # (name, value): a ParameterStatus to send


@dataclass(frozen=True)
class Outcome:
    """What every kind of outcome has: what to tell the client before its result.

    Keyword-only, so each kind's own fields stay positional. The kinds whose tag is fixed
    have it as a class attribute; the others as their first field."""

    notices: Sequence[Notice] = field(default=(), kw_only=True)
    parameter_changes: Sequence[ParameterChange] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        # Producers build these as lists; the outcome keeps its own, unchangeable copy.
        object.__setattr__(self, "notices", tuple(self.notices))
        object.__setattr__(self, "parameter_changes", tuple(self.parameter_changes))


@dataclass(frozen=True)
class CommandDone(Outcome):
    """A statement that returns no rows: only its tag goes back."""

    tag: str


@dataclass(frozen=True)
class EmptyQuery(Outcome):
    """An empty statement: PostgreSQL answers EmptyQueryResponse, not a tag."""

    tag: ClassVar[str] = ""


@dataclass(frozen=True)
class Rows(Outcome):
    """A result table, sent as RowDescription and DataRows."""

    tag: str
    names: list[str]
    types: list[SqlType]
    table: pa.Table
    # The table's DataRows encoded ahead (a FETCH on a SUBSCRIBE cursor), used when the
    # formats agree; and what to call, with each column's format, once all rows are sent
    # (that cursor starts on its next FETCH's rows).
    encoded: EncodedRows | None = None
    then: Callable[[tuple[int, ...]], None] | None = None


@dataclass(frozen=True)
class CopyOut(Outcome):
    """A result table sent as COPY ... TO STDOUT (tag "COPY n")."""

    names: list[str]
    types: list[SqlType]
    table: pa.Table
    options: CopyOptions
    tag: ClassVar[str] = "COPY"


@dataclass(frozen=True)
class Stream(Outcome):
    """A SUBSCRIBE: rows keep coming until it ends (tag "SUBSCRIBE").

    The simple query protocol sends it as COPY ... TO STDOUT, in `copy_options` (text when
    None: a bare SUBSCRIBE); the extended protocol sends its rows as DataRows to Execute."""

    names: list[str]
    types: list[SqlType]
    subscription: Subscription
    copy_options: CopyOptions | None = None
    tag: ClassVar[str] = "SUBSCRIBE"


@dataclass(frozen=True)
class CopyIn(Outcome):
    """COPY ... FROM STDIN: where the rows go, once the client has sent them."""

    item: Item
    positions: list[int]  # the table's column positions, in the data's order
    options: CopyOptions
    defaults: dict[int, object]  # values of the columns not in the data
    tag: ClassVar[str] = "COPY"


def rows_outcome(names: list[str], rows: list[tuple], types: list[SqlType] | None = None,
                 tag: str | None = None, notices: Sequence[Notice] = ()) -> Rows:
    """A Rows outcome from a few Python rows (SHOW results and the like)."""
    types = types or [TEXT] * len(names)
    arrays = [pa.array([r[i] for r in rows], arrow_type(t)) for i, t in enumerate(types)]
    table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(names))])
    return Rows(tag or f"SELECT {len(rows)}", names, types, table, notices=notices)
