"""The catalog: tables and views by name, with their columns and dependencies.

It is pure state. Every change is an operation (`server.catalog_ops`) that the
coordinator writes to the durable log in the same record as the data it goes with,
and that `apply` folds in — at commit time and again when the log is replayed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from planner.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST,
    DUPLICATE_TABLE,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    SqlError,
)
from server.catalog_items import Item
from server.catalog_ops import (
    AlterItem,
    CatalogOp,
    CreateCollection,
    CreateItem,
    DropCollection,
    DropItem,
    SetDetails,
    SetSystem,
    SwapItems,
)

FIRST_USER_OID = 20000


@dataclass
class Catalog:
    items: dict[str, Item] = field(default_factory=dict)  # by id
    next_id: int = 1
    system: dict[str, str] = field(default_factory=dict)  # ALTER SYSTEM settings
    # A copy's ids come from the catalog it copies: ids a transaction block takes are then
    # taken for every session, and its COMMIT does not collide with another's CREATE.
    id_source: Catalog | None = field(default=None, repr=False, compare=False)

    def copy(self) -> Catalog:
        """An independent copy (items are immutable), for a transaction block's staged DDL."""
        return Catalog(dict(self.items), self.next_id, dict(self.system), self)

    # -- reading --------------------------------------------------------------
    def get(self, name: str) -> Item | None:
        for item in self.items.values():
            if item.name == name:
                return item
        return None

    def require(self, name: str, kind: str | None = None) -> Item:
        item = self.get(name)
        if item is None:
            raise SqlError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        if kind is not None and item.kind != kind:
            raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a {kind}')
        return item

    def dependents(self, item_id: str) -> list[Item]:
        """Items that read `item_id`, directly or through other views."""
        out: list[Item] = []
        frontier = [item_id]
        while frontier:
            current = frontier.pop()
            for other in self.items.values():
                if current in other.depends_on and other not in out:
                    out.append(other)
                    frontier.append(other.id)
        return out

    def index_names(self) -> set[str]:
        """The names of the indexes that back tables' keys: relations in PostgreSQL's terms,
        so no other relation may take them."""
        return {name for i in self.items.values() for name in i.index_names}

    def table_of_index(self, name: str) -> Item | None:
        return next((i for i in self.items.values() if name in i.index_names), None)

    def sorted_items(self, kind: str | None = None) -> list[Item]:
        return sorted((i for i in self.items.values() if kind is None or i.kind == kind),
                      key=lambda i: i.name)

    # -- planning changes (pure: they return operations) -----------------------
    def allocate_id(self) -> str:
        if self.id_source is not None:
            ident = self.id_source.allocate_id()
            self.next_id = max(self.next_id, int(ident[1:]) + 1)
            return ident
        ident = f"u{self.next_id}"
        self.next_id += 1
        return ident

    def plan_create(self, item: Item, if_not_exists: bool = False, replace: bool = False) -> list[CatalogOp]:
        existing = self.get(item.name)
        ops: list[CatalogOp] = []
        if existing is not None:
            if if_not_exists:
                return []
            if replace and existing.kind == item.kind == "view":
                if self.dependents(existing.id):
                    raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                                   f'cannot replace view "{item.name}" because other objects depend on it')
                ops.append(DropItem(existing.id))
            else:
                raise SqlError(DUPLICATE_TABLE, f'relation "{item.name}" already exists')
        elif item.name in self.index_names():
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{item.name}" already exists')
        item = dataclasses.replace(item, oid=FIRST_USER_OID + int(item.id[1:]))
        if item.kind == "table":
            ops.append(CreateCollection(item.id))
        ops.append(CreateItem(item))
        return ops

    def plan_drop(self, kind: str, names: tuple[str, ...], if_exists: bool,
                  cascade: bool) -> tuple[list[CatalogOp], list[str]]:
        """Operations dropping `names`, and notices for names that did not exist."""
        ops: list[CatalogOp] = []
        notices: list[str] = []
        dropped: set[str] = set()
        for name in names:
            item = self.get(name)
            if item is None:
                if if_exists:
                    notices.append(f'{kind.lower()} "{name}" does not exist, skipping')
                    continue
                if kind == "VIEW":
                    raise SqlError(UNDEFINED_TABLE, f'view "{name}" does not exist')
                raise SqlError(UNDEFINED_TABLE, f'table "{name}" does not exist')
            if item.kind != kind.lower():
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a {kind.lower()}',
                               hint=f"Use DROP {item.kind.upper()} to remove it.")
            deps = [d for d in self.dependents(item.id) if d.id not in dropped]
            if deps and not cascade:
                raise SqlError(
                    DEPENDENT_OBJECTS_STILL_EXIST,
                    f'cannot drop {kind.lower()} "{name}": still depended upon by '
                    + ", ".join(f'{d.kind} "{d.name}"' for d in deps),
                    hint="Use DROP ... CASCADE to drop the dependent objects too.",
                )
            for victim in [*reversed(deps), item]:
                if victim.id in dropped:
                    continue
                dropped.add(victim.id)
                ops.append(DropItem(victim.id))
                if victim.kind == "table":
                    ops.append(DropCollection(victim.id))
        return ops, notices

    # -- applying ----------------------------------------------------------------
    def apply(self, op: CatalogOp) -> None:
        match op:
            case CreateItem(item):
                self.items[item.id] = item
                self._ids_taken(item)
            case AlterItem(item):
                if item.id in self.items:
                    self.items[item.id] = item
                    self._ids_taken(item)
            case DropItem(item_id):
                self.items.pop(item_id, None)
            case SetSystem(name, value):
                self.system[name] = value
            case SetDetails(item_id, details):
                # Merge facts into an object's details (source progress, snapshot done, ...).
                item = self.items.get(item_id)
                if item is not None:
                    merged = _merge(item.details, details)
                    self.items[item.id] = dataclasses.replace(item, details=merged)
            case SwapItems(a_id, b_id):
                a, b = self.items.get(a_id), self.items.get(b_id)
                if a is not None and b is not None:
                    self.items[a.id] = dataclasses.replace(a, name=b.name, sql=_renamed(a.sql, a.name, b.name))
                    self.items[b.id] = dataclasses.replace(b, name=a.name, sql=_renamed(b.sql, b.name, a.name))
            case CreateCollection() | DropCollection():
                pass  # the store's: collections are not catalog objects

    def _ids_taken(self, item: Item) -> None:
        """Replaying the log must not hand out an id again: the item's, or its indexes'."""
        ids = [item.id, *(k.index_id for k in item.keys), *(i.index_id for i in item.indexes),
               *(c.check_id for c in item.checks), *(f.fk_id for f in item.foreign_keys)]
        self.next_id = max(self.next_id, *(int(i[1:]) + 1 for i in ids))

    def to_json(self) -> dict:
        return {"items": [i.to_json() for i in self.items.values()], "next_id": self.next_id,
                "system": self.system}

    @classmethod
    def from_json(cls, d: dict | None) -> Catalog:
        if not d:
            return cls()
        cat = cls({}, d["next_id"], dict(d.get("system", {})))
        for i in d["items"]:
            item = Item.from_json(i)
            cat.items[item.id] = item
        return cat


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _renamed(sql: str | None, old: str, new: str) -> str | None:
    """A stored CREATE statement under the object's new name (it starts with the name)."""
    return sql.replace(f'"{old}"', f'"{new}"', 1) if sql else sql
