"""A transaction's staged state, without a server: savepoints and staged DDL."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from planner.errors import SqlError
from planner.types import BY_NAME, SqlType
from server.catalog import Catalog
from server.catalog_items import Column, ForeignKey, Item
from server.transaction import ConstraintModes, Transaction, explicit

INT = SqlType(BY_NAME["integer"])


def _txn() -> Transaction:
    return Transaction(explicit=True, started=datetime.datetime(2026, 1, 1))


def _rows(*values: int) -> pa.Table:
    return pa.table({"c0": list(values)})


def _create(catalog: Catalog, name: str) -> list[dict]:
    return catalog.plan_create(Item(catalog.allocate_id(), name, "table", (Column("a", INT),), 1))


def test_rollback_to_cuts_staged_writes_back_to_the_savepoint():
    txn = _txn()
    txn.updates["u1"] = [_rows(1)]
    txn.savepoint("a", frozenset({"c1"}))
    txn.updates["u1"].append(_rows(2))
    txn.updates["u2"] = [_rows(3)]
    txn.failed = True
    kept = txn.rollback_to("a", Catalog())
    assert kept == frozenset({"c1"})
    assert {k: len(v) for k, v in txn.updates.items()} == {"u1": 1}
    assert not txn.failed
    assert [s.name for s in txn.savepoints] == ["a"]  # ROLLBACK TO keeps the savepoint


def test_a_name_used_twice_means_the_latest_and_release_drops_the_later_ones():
    txn = _txn()
    for name in ("a", "b", "a", "c"):
        txn.savepoint(name, frozenset())
    txn.release("a")
    assert [s.name for s in txn.savepoints] == ["a", "b"]
    txn.release("a")
    assert txn.savepoints == []
    with pytest.raises(SqlError) as err:
        txn.release("a")
    assert err.value.sqlstate == "3B001"


def test_savepoints_need_a_transaction_block():
    with pytest.raises(SqlError) as err:
        explicit(None, "SAVEPOINT")
    assert err.value.sqlstate == "25P01"
    with pytest.raises(SqlError):
        explicit(Transaction(explicit=False, started=datetime.datetime(2026, 1, 1)), "SAVEPOINT")


def test_staged_ddl_is_seen_by_the_block_only_and_undone_by_rollback_to():
    live = Catalog()
    txn = _txn()
    txn.stage_ddl(_create(live.copy(), "t"), live)
    assert txn.catalog.get("t") is not None and live.get("t") is None
    txn.savepoint("s", frozenset())
    txn.stage_ddl(_create(txn.catalog, "u"), live)
    txn.updates[txn.catalog.require("u").id] = [_rows(5)]
    txn.rollback_to("s", live)
    assert txn.catalog.get("u") is None and txn.catalog.get("t") is not None
    assert txn.updates == {}


def test_dropping_a_table_drops_its_staged_writes():
    live = Catalog()
    for op in _create(live, "t"):
        live.apply(op)
    table = live.require("t").id
    txn = _txn()
    txn.updates[table] = [_rows(1)]
    ops, _ = live.plan_drop("TABLE", ("t",), False, False)
    txn.stage_ddl(ops, live)
    assert table not in txn.updates and txn.catalog.get("t") is None and live.get("t") is not None


def test_commit_check_refuses_a_name_taken_or_an_object_gone_meanwhile():
    live = Catalog()
    txn = _txn()
    txn.stage_ddl(_create(live.copy(), "t"), live)
    txn.check_ddl(live)  # nothing changed
    for op in _create(live, "other"):  # another session's table: ids do not collide
        live.apply(op)
    txn.check_ddl(live)
    for op in _create(live, "t"):
        live.apply(op)
    with pytest.raises(SqlError) as err:
        txn.check_ddl(live)
    assert err.value.sqlstate == "40001"
    dropper = _txn()
    ops, _ = live.plan_drop("TABLE", ("other",), False, False)
    dropper.stage_ddl(ops, live)
    for op in ops:
        live.apply(op)
    with pytest.raises(SqlError):
        dropper.check_ddl(live)


def test_set_constraints_modes_over_each_keys_initial_setting():
    def fk(fk_id: str, deferrable: bool, deferred: bool) -> ForeignKey:
        return ForeignKey(fk_id, ("a",), "p", ("id",), fk_id, deferrable, deferred)

    plain, later, now = fk("plain", False, False), fk("later", True, True), fk("now", True, False)
    modes = ConstraintModes()
    assert [modes.deferred(k) for k in (plain, later, now)] == [False, True, False]
    modes = modes.set(None, True)  # ALL DEFERRED: never a key that is not deferrable
    assert [modes.deferred(k) for k in (plain, later, now)] == [False, True, True]
    modes = modes.set(["later"], False)  # a name over ALL
    assert [modes.deferred(k) for k in (plain, later, now)] == [False, False, True]
    modes = modes.set(None, False)  # ALL forgets the names set before it
    assert modes.named == {} and [modes.deferred(k) for k in (plain, later, now)] == [False, False, False]
