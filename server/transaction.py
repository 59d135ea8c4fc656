"""A transaction's staged state: its writes, its DDL, its savepoints and its NOTIFYs.

Writes inside a transaction are staged here and committed together at COMMIT,
at one timestamp. CREATE/DROP TABLE and VIEW are staged as catalog operations
against a scratch copy of the catalog, so the block sees its own tables, and
are checked against the live catalog at COMMIT. Savepoints mark how much was
staged, so ROLLBACK TO can cut back to them. Nothing here touches Spark or the
log; the session commits what is staged through the coordinator.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from planner.errors import NO_ACTIVE_SQL_TRANSACTION, SqlError
from server import writes
from server.catalog import Catalog
from server.catalog_items import ForeignKey
from server.catalog_ops import AlterItem, CatalogOp, CreateItem, DropCollection, DropItem
from server.coordinator import Overlay

SERIALIZATION_FAILURE = "40001"


@dataclass(frozen=True)
class ConstraintModes:
    """SET CONSTRAINTS in a transaction block: whether each DEFERRABLE constraint is checked
    at COMMIT (deferred) or after each statement, over its INITIALLY setting. ALL sets every
    one and forgets the names set before it, as PostgreSQL's after-trigger state does."""

    all_deferred: bool | None = None
    named: Mapping[str, bool] = field(default_factory=dict)  # foreign key id → deferred

    def deferred(self, fk: ForeignKey) -> bool:
        if not fk.deferrable:
            return False
        if fk.fk_id in self.named:
            return self.named[fk.fk_id]
        return fk.deferred if self.all_deferred is None else self.all_deferred

    def set(self, ids: list[str] | None, deferred: bool) -> ConstraintModes:
        if ids is None:
            return ConstraintModes(deferred, {})
        return ConstraintModes(self.all_deferred, {**self.named, **dict.fromkeys(ids, deferred)})


@dataclass(frozen=True)
class Savepoint:
    """What a transaction had staged when SAVEPOINT was given, to go back to."""

    name: str
    staged: dict[str, int]  # collection → how many staged update tables it had
    cursors: frozenset[str]  # cursors open then (later ones close on ROLLBACK TO)
    ddl: int = 0  # how many catalog operations the block had staged
    constraints: ConstraintModes = ConstraintModes()  # SET CONSTRAINTS then (ROLLBACK TO restores it)


@dataclass
class Transaction:
    explicit: bool
    started: datetime.datetime
    updates: dict[str, list[pa.Table]] = field(default_factory=dict)
    read_ts: int | None = None
    holds_lock: bool = False
    failed: bool = False
    isolation: str | None = None  # BEGIN ISOLATION LEVEL's, shown by SHOW transaction_isolation
    savepoints: list[Savepoint] = field(default_factory=list)  # oldest first
    notifies: list[tuple[str, str]] = field(default_factory=list)  # NOTIFY, sent at COMMIT
    # CREATE/DROP TABLE and VIEW in the block: their catalog operations, committed with its
    # writes at COMMIT, and the catalog as the block sees it (None while there are none).
    ddl_ops: list[CatalogOp] = field(default_factory=list)
    catalog: Catalog | None = None
    constraints: ConstraintModes = ConstraintModes()  # SET CONSTRAINTS in the block

    def overlay(self) -> Overlay | None:
        if not self.updates:
            return None
        return Overlay({k: writes.concat_updates(v) for k, v in self.updates.items()})

    # -- DDL ---------------------------------------------------------------------------
    def stage_ddl(self, ops: list[CatalogOp], live: Catalog) -> None:
        """Stage catalog operations planned against `self.catalog or live`."""
        scratch = self.catalog or live.copy()
        for op in ops:
            scratch.apply(op)
            if isinstance(op, DropCollection):
                self.updates.pop(op.id, None)  # writes to a table dropped after them
        self.ddl_ops.extend(ops)
        self.catalog = scratch

    def check_ddl(self, live: Catalog) -> None:
        """At COMMIT, under the write lock: 40001 if the catalog changed under the block so
        that its DDL no longer applies (a name it created was taken, an object it dropped
        is gone)."""
        for op in self.ddl_ops:
            match op:
                case CreateItem(item):
                    other = live.get(item.name)
                    taken = item.id in live.items or (other is not None and not any(
                        isinstance(o, DropItem) and o.id == other.id for o in self.ddl_ops))
                case DropItem(item_id):
                    taken = item_id not in live.items
                case AlterItem(item):  # ALTER TABLE, CREATE INDEX: the object, and a new name, still free
                    other = live.get(item.name)
                    made_here = any(isinstance(o, CreateItem) and o.item.id == item.id for o in self.ddl_ops)
                    taken = (item.id not in live.items and not made_here) or (
                        other is not None and other.id != item.id
                        and not any(isinstance(o, DropItem) and o.id == other.id for o in self.ddl_ops))
                case _:
                    continue
            if taken:
                raise SqlError(SERIALIZATION_FAILURE, "could not serialize access due to concurrent DDL: "
                               "the catalog changed while this transaction ran",
                               hint="Run the transaction again.")

    # -- savepoints --------------------------------------------------------------------
    def savepoint(self, name: str, cursors: frozenset[str]) -> None:
        self.savepoints.append(Savepoint(name, {k: len(v) for k, v in self.updates.items()},
                                         cursors, len(self.ddl_ops), self.constraints))

    def _find(self, name: str) -> int:
        for i in range(len(self.savepoints) - 1, -1, -1):  # the latest of that name, as PostgreSQL
            if self.savepoints[i].name == name:
                return i
        raise SqlError("3B001", f'savepoint "{name}" does not exist')

    def release(self, name: str) -> None:
        del self.savepoints[self._find(name):]

    def rollback_to(self, name: str, live: Catalog) -> frozenset[str]:
        """Undo what was staged since the savepoint, which stays; the transaction is usable
        again. Returns the cursors that were open at the savepoint (later ones close)."""
        index = self._find(name)
        mark = self.savepoints[index]
        del self.savepoints[index + 1:]
        for cid in list(self.updates):
            kept = self.updates[cid][:mark.staged.get(cid, 0)]
            if kept:
                self.updates[cid] = kept
            else:
                del self.updates[cid]
        if len(self.ddl_ops) > mark.ddl:
            del self.ddl_ops[mark.ddl:]
            self.catalog = None
            if self.ddl_ops:
                ops, self.ddl_ops = self.ddl_ops, []
                self.stage_ddl(ops, live)
        self.constraints = mark.constraints
        self.failed = False
        return mark.cursors


def explicit(txn: Transaction | None, what: str) -> Transaction:
    """The transaction block a savepoint command acts on; 25P01 outside one."""
    if txn is None or not txn.explicit:
        raise SqlError(NO_ACTIVE_SQL_TRANSACTION, f"{what} can only be used in transaction blocks")
    return txn
