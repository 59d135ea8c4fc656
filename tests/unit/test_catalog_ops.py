"""Catalog operations as typed records: each writes the JSON the log has always held, byte
for byte, and a log written with the old dicts loads into the same catalog."""

from __future__ import annotations

import json

import pytest

from planner.types import column_type
from server import catalog_ops
from server.catalog import Catalog
from server.catalog_items import Column, Item
from server.catalog_ops import (
    CreateCollection,
    CreateItem,
    DropCollection,
    DropItem,
    SetDetails,
    SetSystem,
    SwapItems,
)
from spark_backend.storage import Store

TABLE = Item("u1", "t", "table", (Column("a", column_type("integer"), True, "1"),), 5, None, (), 20001,
             {"note": "x"})
VIEW = Item("u2", "v", "view", (Column("a", column_type("integer")),), 6, 'SELECT a FROM "t"', ("u1",), 20002)

# (record, the dict the server wrote before the records existed)
CASES = [
    (CreateItem(TABLE), {"op": "create", "item": TABLE.to_json()}),
    (CreateItem(VIEW), {"op": "create", "item": VIEW.to_json()}),
    (DropItem("u2"), {"op": "drop", "id": "u2"}),
    (CreateCollection("u1"), {"op": "create_collection", "collection": "u1"}),
    (DropCollection("u1"), {"op": "drop_collection", "collection": "u1"}),
    (SetDetails("u1", {"source": {"offsets": {"0": 7}, "errors": None}}),
     {"op": "details", "id": "u1", "details": {"source": {"offsets": {"0": 7}, "errors": None}}}),
    (SwapItems("u1", "u3"), {"op": "swap", "a": "u1", "b": "u3"}),
    (SetSystem("enable_envelope_upsert_in_subscribe", "on"),
     {"op": "system_set", "name": "enable_envelope_upsert_in_subscribe", "value": "on"}),
]


def _bytes(d: dict) -> bytes:
    return json.dumps(d, separators=(",", ":")).encode()  # as the store frames a record


@pytest.mark.parametrize(("op", "old"), CASES, ids=lambda c: type(c).__name__)
def test_a_record_writes_the_old_json_and_reads_back(op, old):
    assert _bytes(op.to_json()) == _bytes(old)
    assert catalog_ops.from_json(old) == op
    assert catalog_ops.from_json(json.loads(_bytes(op.to_json()))) == op


def test_an_unknown_operation_is_an_error_not_skipped():
    with pytest.raises(ValueError, match="unknown catalog operation 'rename'"):
        catalog_ops.from_json({"op": "rename", "id": "u1"})


def test_plans_are_records_the_catalog_applies():
    catalog = Catalog()
    item = Item(catalog.allocate_id(), "t", "table", TABLE.columns, 5)
    ops = catalog.plan_create(item)
    assert [type(op) for op in ops] == [CreateCollection, CreateItem]
    for op in ops:
        catalog.apply(op)
    assert catalog.require("t").oid == 20001
    drops, _ = catalog.plan_drop("TABLE", ("t",), False, False)
    assert drops == [DropItem("u1"), DropCollection("u1")]


def test_a_log_of_old_dicts_and_one_of_records_are_the_same_bytes_and_catalog(tmp_path):
    """The store frames what the coordinator hands it: records' JSON makes the same log
    file as the dicts did, and either replays into the same catalog."""
    old_ops = [old for _, old in CASES if old["op"] != "drop"]
    new_ops = [op for op, old in CASES if old["op"] != "drop"]
    logs = []
    for name, ops in (("old", old_ops), ("new", catalog_ops.to_json(new_ops))):
        store = Store(tmp_path / name)
        store.open()
        store.commit(1, ops, {})
        store.close()
        logs.append((tmp_path / name / "log.jsonl").read_bytes())
    assert logs[0] == logs[1]

    store = Store(tmp_path / "old")
    recovered = store.open()
    store.close()
    catalog = Catalog()
    for d in recovered.catalog_ops:
        catalog.apply(catalog_ops.from_json(d))
    direct = Catalog()
    for op in new_ops:
        direct.apply(op)
    assert catalog.to_json() == direct.to_json()
    assert [i.name for i in catalog.sorted_items()] == ["t", "v"]
    assert catalog.system == {"enable_envelope_upsert_in_subscribe": "on"}
    assert catalog.items["u1"].details == {"note": "x", "source": {"offsets": {"0": 7}, "errors": None}}
