"""Sequences' values: what nextval hands out, and how it stays unique across a crash.

As in PostgreSQL, a value is never transactional: once handed out it is gone, whether or
not the write that took it commits. And as PostgreSQL logs SEQ_LOG_VALS values ahead,
a value is handed out only once a catalog record has made durable a mark at or past it:
the mark moves `LOG_AHEAD` values beyond what a call needs, so most calls cost no write;
after a crash nextval resumes past the mark (a gap, as in PostgreSQL, never a repeat).

A sequence made by a transaction block that has not committed yet is not in the live
catalog: its state is staged with the block's DDL instead, exactly, at every call, and
reaches the log with the block's rows or not at all.

The mark and state live in the sequence item's details (`last_value`, `is_called`); the
values between the mark and the last one handed out live here, in memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
from sqlglot import exp

from planner import sequences as seq
from planner.errors import FEATURE_NOT_SUPPORTED, GENERATED_ALWAYS, SqlError
from planner.table_sequences import ALWAYS
from server.catalog import Catalog
from server.catalog_items import Column, Item
from server.catalog_ops import CatalogOp, SetDetails


class Committer(Protocol):
    """What values need of the coordinator (server.coordinator, which holds them)."""

    catalog: Catalog
    write_lock: asyncio.Lock

    async def commit(self, ops: list[CatalogOp], updates: dict) -> int: ...


class Stager(Protocol):
    """What values need of a transaction block (server.transaction)."""

    def stage_ddl(self, ops: list[CatalogOp], live: Catalog) -> None: ...

KIND = "sequence"
# What SELECT * FROM a sequence shows, as PostgreSQL's sequence relation has.
COLUMNS_SQL = "last_value int8, log_cnt int8, is_called bool"


def spec_of(item: Item) -> seq.Spec:
    return seq.Spec.from_json(item.details["spec"])


def durable_state(item: Item) -> seq.State:
    return seq.State(item.details["last_value"], item.details["is_called"])


def details(spec: seq.Spec, state: seq.State, owned_by: tuple[str, str] | None = None,
            identity: bool = False) -> dict:
    """A new sequence item's details."""
    out: dict = {"spec": spec.to_json(), "last_value": state.last_value, "is_called": state.is_called}
    if owned_by is not None:
        out["owned_by"] = {"table": owned_by[0], "column": owned_by[1], "identity": identity}
    return out


def owner(item: Item) -> tuple[str, str] | None:
    """The (table id, column name) a sequence belongs to: dropped with it."""
    owned = item.details.get("owned_by")
    return (owned["table"], owned["column"]) if owned else None


def owned_by(catalog: Catalog, table_id: str, column: str | None = None) -> list[Item]:
    """The sequences a table's columns (or one of them) own."""
    return [i for i in catalog.items.values() if i.kind == KIND and (owner(i) or ("", ""))[0] == table_id
            and (column is None or owner(i)[1] == column)]


def column_sequence(catalog: Catalog, table: Item, column: Column) -> Item | None:
    """The sequence a column draws its values from: an identity column's own, or the one a
    `nextval('s'::regclass)` default names."""
    if column.identity is not None:
        return next((i for i in owned_by(catalog, table.id, column.name) if i.details["owned_by"].get("identity")),
                    None)
    name = seq.sequence_in_default(column.default)
    if name is None:
        return None
    found = catalog.get(name)
    return found if found is not None and found.kind == KIND else None


def generated(catalog: Catalog, table: Item, given: set[int], overriding: str | None = None) -> dict[int, Item]:
    """The columns an INSERT fills from sequences: those not given whose default is nextval,
    and (OVERRIDING USER VALUE) every identity column, given or not."""
    out: dict[int, Item] = {}
    for pos, column in enumerate(table.columns):
        user_value_ignored = overriding == "user" and column.identity is not None
        if pos in given and not user_value_ignored:
            continue
        if column.identity is None and seq.sequence_in_default(column.default) is None:
            continue
        sequence = column_sequence(catalog, table, column)
        if sequence is None:
            raise SqlError("42P01", f'relation "{seq.sequence_in_default(column.default)}" does not exist')
        out[pos] = sequence
    return out


@dataclass(frozen=True)
class NextValue:
    """A row's value to come from a sequence, once the statement knows how many: its
    column's (`sequence` None: the DEFAULT of a serial or identity column) or the one an
    explicit `nextval('s')` names."""

    sequence: str | None = None

    def __repr__(self) -> str:
        return f"nextval({self.sequence!r})" if self.sequence else "NEXTVAL"


NEXTVAL = NextValue()


def check_identity_value(column: Column, overriding: str | None) -> None:
    """428C9 for a value given to a GENERATED ALWAYS identity column (rewriteTargetListIU)."""
    if column.identity == ALWAYS and overriding is None:  # USER VALUE: the value is ignored
        raise SqlError(GENERATED_ALWAYS, f'cannot insert a non-DEFAULT value into column "{column.name}"',
                       detail=f'Column "{column.name}" is an identity column defined as GENERATED ALWAYS.',
                       hint="Use OVERRIDING SYSTEM VALUE to override.")


def check_update(table: Item, assignments: Iterable[tuple[str, exp.Expression]]) -> tuple[int, ...]:
    """UPDATE of a column drawing from a sequence: 428C9 for a value given to a GENERATED
    ALWAYS identity column. The positions of those set to DEFAULT: each row changed takes
    its sequence's next value (fill_columns)."""
    drawn = []
    for name, value in assignments:
        column = table.column(name)
        if column is None or not (column.identity or seq.sequence_in_default(column.default)):
            continue
        if is_default(value):
            drawn.append(table.column_names.index(name))
        elif column.identity == ALWAYS:
            raise SqlError(GENERATED_ALWAYS, f'column "{name}" can only be updated to DEFAULT',
                           detail=f'Column "{name}" is an identity column defined as GENERATED ALWAYS.')
    return tuple(drawn)


def is_default(value: exp.Expression) -> bool:
    """`DEFAULT` as an UPDATE's value, as sqlglot reads it."""
    return isinstance(value, (exp.Var, exp.Column)) and value.name.upper() == "DEFAULT"


@dataclass
class _Live:
    state: seq.State  # the last value handed out
    mark: seq.State  # durable: every value up to it may be handed out
    room: int  # how many values past `state` the mark still covers


class SequenceValues:
    """The sequences' values in memory, made durable ahead of use (see the module)."""

    def __init__(self, coord: Committer) -> None:
        self._coord = coord
        self._live: dict[str, _Live] = {}

    def current(self, item: Item) -> seq.State:
        """Where the sequence stands now (SELECT * FROM it, pg_sequences)."""
        live = self._live.get(item.id)
        return live.state if live is not None else durable_state(item)

    def states(self, catalog: Catalog) -> dict[str, tuple[int, bool, int]]:
        """Every sequence's (last value, is_called, values logged ahead) now."""
        out = {}
        for item in catalog.items.values():
            if item.kind == KIND:
                live = self._live.get(item.id)
                state = live.state if live is not None else durable_state(item)
                out[item.id] = (state.last_value, state.is_called, live.room if live is not None else 0)
        return out

    async def take(self, item: Item, count: int, txn: Stager | None, lock_held: bool) -> list[int]:
        """`count` values of nextval. `lock_held`: the caller holds the coordinator's write lock."""
        if count <= 0:
            return []
        if item.id not in self._coord.catalog.items:
            return self._take_staged(item, count, txn)
        values = self._from_room(item, count)
        if values is not None:
            return values
        if lock_held:
            return await self._reserve(item, count)
        async with self._coord.write_lock:
            return await self._reserve(item, count)

    async def restart(self, item: Item, state: seq.State, txn: Stager | None, lock_held: bool) -> None:
        """setval, ALTER SEQUENCE RESTART: the sequence stands at `state` from now on."""
        op = SetDetails(item.id, {"last_value": state.last_value, "is_called": state.is_called})
        if item.id not in self._coord.catalog.items:
            if txn is None:
                raise SqlError(FEATURE_NOT_SUPPORTED, "this sequence is not visible outside its transaction")
            txn.stage_ddl([op], self._coord.catalog)
        elif lock_held:
            await self._coord.commit([op], {})
        else:
            async with self._coord.write_lock:
                await self._coord.commit([op], {})
        self._live[item.id] = _Live(state, state, 0)

    def options_changed(self, item_id: str) -> None:
        """After ALTER SEQUENCE: the values left before the mark were counted with the old
        options, so the next call moves the mark again (from the last value handed out, as
        PostgreSQL's ALTER keeps last_value)."""
        live = self._live.get(item_id)
        if live is not None:
            live.room = 0

    def _entry(self, item: Item) -> _Live:
        live = self._live.get(item.id)
        if live is None:
            # The live catalog's item: a transaction block's copy of it may hold an older mark.
            state = durable_state(self._coord.catalog.items.get(item.id, item))
            live = self._live[item.id] = _Live(state, state, 0)
        return live

    def _from_room(self, item: Item, count: int) -> list[int] | None:
        live = self._entry(item)
        if live.room < count:
            return None
        values, live.state = seq.advance(spec_of(item), live.state, count, item.name)
        live.room -= count
        return values

    async def _reserve(self, item: Item, count: int) -> list[int]:
        """Values past the durable mark: a record moves the mark first (write lock held)."""
        spec = spec_of(item)
        while True:
            values = self._from_room(item, count)  # another caller may have moved the mark meanwhile
            if values is not None:
                return values
            live = self._entry(item)
            seq.advance(spec, live.state, count, item.name)  # 2200H now, before any record
            ahead = count + seq.LOG_AHEAD
            mark = seq.ahead(spec, live.state, ahead)
            await self._coord.commit([SetDetails(item.id, {"last_value": mark.last_value,
                                                           "is_called": mark.is_called})], {})
            live = self._entry(item)  # values another caller took from the room meanwhile
            live.mark, live.room = mark, _room(spec, live.state, mark, ahead)

    def _take_staged(self, item: Item, count: int, txn: Stager | None) -> list[int]:
        if txn is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "this sequence is not visible outside its transaction")
        live = self._entry(item)
        values, live.state = seq.advance(spec_of(item), live.state, count, item.name)
        live.mark, live.room = live.state, 0
        txn.stage_ddl([SetDetails(item.id, {"last_value": live.state.last_value, "is_called": True})],
                      self._coord.catalog)
        return values


def _room(spec: seq.Spec, state: seq.State, mark: seq.State, most: int) -> int:
    """How many values after `state` the mark covers (at most `most`: the mark stops at a
    bound without CYCLE, and wraps with it)."""
    if spec.cycle:
        return most
    step = spec.increment
    first = state.last_value + step if state.is_called else state.last_value
    if (mark.last_value - first) * (1 if step > 0 else -1) < 0:
        return 0
    return min(most, (mark.last_value - first) // step + 1)


def overwrite(table: pa.Table, pos: int, values: list[int]) -> pa.Table:
    """`table` with column `pos` replaced by `values` (in the column's own Arrow type)."""
    field = table.schema.field(pos)
    return table.set_column(pos, field, pa.array(values, field.type))


async def fill_rows(values: SequenceValues, table: Item, catalog: Catalog, rows: list[list[object]],
                    txn: Stager | None, lock_held: bool, seen: Seen | None = None) -> list[list[object]]:
    """`rows` with each NextValue replaced by its sequence's next value, row by row in order."""
    for pos, column in enumerate(table.columns):
        wanted: dict[NextValue, list[list[object]]] = {}
        for row in rows:
            if isinstance(row[pos], NextValue):
                wanted.setdefault(row[pos], []).append(row)
        for marker, these in wanted.items():
            sequence = (column_sequence(catalog, table, column) if marker.sequence is None
                        else named(catalog, marker.sequence))
            if sequence is None:
                raise SqlError("42P01", f'relation "{seq.sequence_in_default(column.default)}" does not exist')
            taken = await values.take(sequence, len(these), txn, lock_held)
            if seen is not None:
                seen.record(sequence, taken)
            for row, value in zip(these, taken, strict=True):
                row[pos] = value
    return rows


def named(catalog: Catalog, name: str) -> Item:
    """The sequence `name` (42P01 when there is none, 42809 when it is something else)."""
    item = catalog.get(name)
    if item is None:
        raise SqlError("42P01", f'relation "{name}" does not exist')
    if item.kind != KIND:
        raise SqlError("42809", f'"{name}" is not a sequence')
    return item


@dataclass
class Seen:
    """A session's currval of each sequence it drew from, and lastval's sequence."""

    currval: dict[str, int] = field(default_factory=dict)  # sequence id → its last value here
    last: str | None = None

    def record(self, item: Item, values: list[int]) -> None:
        if values:
            self.currval[item.id] = values[-1]
            self.last = item.id


async def fill_table(values: SequenceValues, table: Item, catalog: Catalog, rows: pa.Table, given: list[int],
                     overriding: str | None, txn: Stager | None, lock_held: bool,
                     seen: Seen | None = None) -> pa.Table:
    """Spark's rows for `table` (a column per table column) with the columns an INSERT fills
    from sequences filled, in row order."""
    return await _fill(values, rows, generated(catalog, table, set(given), overriding), txn, lock_held, seen)


async def fill_columns(values: SequenceValues, table: Item, catalog: Catalog, rows: pa.Table,
                       positions: Iterable[int], txn: Stager | None, lock_held: bool,
                       seen: Seen | None = None) -> pa.Table:
    """`rows` (a column per table column) with the serial or identity columns at
    `positions` given their sequences' next values, in row order: UPDATE … SET c = DEFAULT."""
    sequences = {}
    for pos in positions:
        sequence = column_sequence(catalog, table, table.columns[pos])
        if sequence is None:
            raise SqlError("42P01", f'relation "{seq.sequence_in_default(table.columns[pos].default)}" does not exist')
        sequences[pos] = sequence
    return await _fill(values, rows, sequences, txn, lock_held, seen)


async def _fill(values: SequenceValues, rows: pa.Table, sequences: dict[int, Item], txn: Stager | None,
                lock_held: bool, seen: Seen | None) -> pa.Table:
    for pos, sequence in sequences.items():
        taken = await values.take(sequence, rows.num_rows, txn, lock_held)
        if seen is not None:
            seen.record(sequence, taken)
        rows = overwrite(rows, pos, taken)
    return rows
