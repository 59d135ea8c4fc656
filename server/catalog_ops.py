"""Catalog operations: the typed records of every change to the catalog.

DDL, a source's progress and a Kafka batch's errors are planned as these records; the
coordinator writes them to the durable log in the same record as the data they go with,
and `Catalog.apply` folds them in — at commit time and again when the log is replayed.

On disk each is a JSON object `{"op": <kind>, …}`. `to_json`/`from_json` keep that format
byte for byte (the same keys, in the same order), so data directories written before
these records existed load unchanged. The store reads `create_collection` and
`drop_collection` from that JSON itself: it sits below this layer and knows no records.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.catalog_items import Item


@dataclass(frozen=True)
class CreateItem:
    """A new catalog object (its OID already assigned)."""

    item: Item

    def to_json(self) -> dict:
        return {"op": "create", "item": self.item.to_json()}


@dataclass(frozen=True)
class DropItem:
    id: str

    def to_json(self) -> dict:
        return {"op": "drop", "id": self.id}


@dataclass(frozen=True)
class CreateCollection:
    """A table's storage collection (the store creates it)."""

    id: str

    def to_json(self) -> dict:
        return {"op": "create_collection", "collection": self.id}


@dataclass(frozen=True)
class DropCollection:
    id: str

    def to_json(self) -> dict:
        return {"op": "drop_collection", "collection": self.id}


@dataclass(frozen=True)
class SetDetails:
    """Facts merged into an object's details (source progress, a snapshot done, errors, …)."""

    id: str
    details: dict

    def to_json(self) -> dict:
        return {"op": "details", "id": self.id, "details": self.details}


@dataclass(frozen=True)
class SwapItems:
    """ALTER TABLE a SWAP WITH b: the two objects trade names."""

    a: str
    b: str

    def to_json(self) -> dict:
        return {"op": "swap", "a": self.a, "b": self.b}


@dataclass(frozen=True)
class SetSystem:
    """ALTER SYSTEM SET name = value."""

    name: str
    value: str

    def to_json(self) -> dict:
        return {"op": "system_set", "name": self.name, "value": self.value}


@dataclass(frozen=True)
class AlterItem:
    """An object replaced by a new version of itself (same id and OID): a table's indexes
    added or dropped."""

    item: Item

    def to_json(self) -> dict:
        return {"op": "alter", "item": self.item.to_json()}


CatalogOp = CreateItem | DropItem | CreateCollection | DropCollection | SetDetails | SwapItems | SetSystem | AlterItem


def from_json(d: dict) -> CatalogOp:
    """The record a log entry holds; an operation this version does not know is an error
    (a log written by a newer server), not something to skip."""
    match d.get("op"):
        case "create":
            return CreateItem(Item.from_json(d["item"]))
        case "drop":
            return DropItem(d["id"])
        case "create_collection":
            return CreateCollection(d["collection"])
        case "drop_collection":
            return DropCollection(d["collection"])
        case "details":
            return SetDetails(d["id"], d["details"])
        case "swap":
            return SwapItems(d["a"], d["b"])
        case "system_set":
            return SetSystem(d["name"], d["value"])
        case "alter":
            return AlterItem(Item.from_json(d["item"]))
    raise ValueError(f"unknown catalog operation {d.get('op')!r}")


def to_json(ops: list[CatalogOp]) -> list[dict]:
    return [op.to_json() for op in ops]
