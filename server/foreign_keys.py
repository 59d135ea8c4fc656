"""FOREIGN KEY constraints: planned against the catalog, and enforced where writes commit.

A foreign key's columns in the referencing table ("child") refer to a PRIMARY KEY or UNIQUE
set of the referenced one ("parent"). Both sides are counted in memory with the unique keys
(server.unique_keys counts each child's foreign-key columns too), so a check costs no Spark
job: a write that adds child rows must find each of their keys present in the parent, as the
commit leaves it; a write that removes a parent key (its last row with that value) must
leave no child row referring to it. NULL in a key column refers to nothing (MATCH SIMPLE).
Checked where every write commits (and for a transaction block's statements when they run,
unless the key is INITIALLY DEFERRED: then at COMMIT only), as NO ACTION is checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import pyarrow as pa

from planner import table_keys
from planner.codecs.text_out import encode_text
from planner.errors import DEPENDENT_OBJECTS_STILL_EXIST, FEATURE_NOT_SUPPORTED, SqlError
from planner.table_foreign_keys import ForeignKeySpec
from server.catalog import Catalog
from server.catalog_items import Column, ForeignKey, IndexDef, Item, UniqueKey
from server.catalog_ops import AlterItem, CatalogOp, DropItem
from server.unique_keys import KeyCounts, UniqueKeys, key_changes, net_changes

FOREIGN_KEY_VIOLATION = "23503"
INVALID_FOREIGN_KEY = "42830"
DATATYPE_MISMATCH = "42804"
# Types of one btree operator family in PostgreSQL (a foreign key may cross them), whose
# values compare equal across them as Python values do.
_FAMILIES = ({"smallint", "integer", "bigint"}, {"text", "character varying"}, {"real", "double precision"})


def plan(catalog: Catalog, table: str, table_id: str, columns: tuple[Column, ...],
         own_sets: tuple[UniqueKey | IndexDef, ...], specs: Iterable[ForeignKeySpec],
         existing: tuple[ForeignKey, ...] = ()) -> tuple[ForeignKey, ...]:
    """`specs` checked against the catalog and named as PostgreSQL names them (`c_pid_fkey`).
    A table may refer to itself: `own_sets` are its keys."""
    taken = constraint_names(catalog)
    own = {f.name for f in existing} | {k.name for k in own_sets}
    out: list[ForeignKey] = []
    by_name = {c.name: c for c in columns}
    for spec in specs:
        parent_columns, parent_sets, parent_id = _parent(catalog, table, table_id, columns, own_sets, spec)
        for col in spec.columns:
            if col not in by_name:
                raise SqlError("42703", f'column "{col}" referenced in foreign key constraint does not exist')
        refs = spec.ref_columns or _primary(parent_sets, spec.table)
        for col in refs:
            if col not in parent_columns:
                raise SqlError("42703", f'column "{col}" referenced in foreign key constraint does not exist')
        if len(refs) != len(spec.columns):
            raise SqlError(INVALID_FOREIGN_KEY, "number of referencing and referenced columns for foreign key disagree")
        if not any(set(k.columns) == set(refs) and len(k.columns) == len(refs) for k in parent_sets):
            raise SqlError(INVALID_FOREIGN_KEY,
                           f'there is no unique constraint matching given keys for referenced table "{spec.table}"')
        name = spec.name or table_keys.chosen_name(table, "_".join(spec.columns), "fkey", taken)
        if name in own:
            raise SqlError("42710", f'constraint "{name}" for relation "{table}" already exists')
        for col, ref in zip(spec.columns, refs, strict=True):
            mine, theirs = by_name[col].type, parent_columns[ref].type
            if not _comparable(mine.base.name, theirs.base.name) or mine.is_array != theirs.is_array:
                raise SqlError(DATATYPE_MISMATCH, f'foreign key constraint "{name}" cannot be implemented',
                               detail=f'Key columns "{col}" and "{ref}" are of incompatible types: '
                                      f"{mine.display()} and {theirs.display()}.")
        taken.add(name)
        own.add(name)
        out.append(ForeignKey(name, spec.columns, parent_id, tuple(refs), catalog.allocate_id(), spec.deferrable,
                              spec.deferred, spec.validate, spec.on_delete, spec.on_update))
    return tuple(out)


def _parent(catalog: Catalog, table: str, table_id: str, columns: tuple[Column, ...],
            own_sets: tuple[UniqueKey | IndexDef, ...], spec: ForeignKeySpec):
    if spec.table == table:
        return {c.name: c for c in columns}, own_sets, table_id
    parent = catalog.get(spec.table)
    if parent is None:
        raise SqlError("42P01", f'relation "{spec.table}" does not exist')
    if parent.kind != "table":
        raise SqlError("42809", f'referenced relation "{spec.table}" is not a table')
    return {c.name: c for c in parent.columns}, parent.unique_sets, parent.id


def _primary(sets: tuple[UniqueKey | IndexDef, ...], table: str) -> tuple[str, ...]:
    primary = next((k for k in sets if isinstance(k, UniqueKey) and k.primary), None)
    if primary is None:
        raise SqlError("42704", f'there is no primary key for referenced table "{table}"')
    return primary.columns


def _comparable(a: str, b: str) -> bool:
    return a == b or any(a in f and b in f for f in _FAMILIES)


def constraint_names(catalog: Catalog) -> set[str]:
    """Every constraint name in the schema (PostgreSQL picks a new one free of them all)."""
    return {n for i in catalog.items.values() if i.kind == "table"
            for n in (*(k.name for k in i.keys), *(c.name for c in i.checks), *(f.name for f in i.foreign_keys))}


def referencing(items: Iterable[Item], parent_id: str) -> list[tuple[Item, ForeignKey]]:
    """The foreign keys (of any table, the parent's own too) that refer to `parent_id`."""
    return [(child, fk) for child in items if child.kind == "table"
            for fk in child.foreign_keys if fk.table_id == parent_id]


def related(written: Iterable[str], items: dict[str, Item]) -> set[str]:
    """The tables whose counts a write to `written` is checked against: the ones they refer
    to and the ones referring to them."""
    out: set[str] = set()
    written = set(written)
    for item in items.values():
        for fk in item.foreign_keys:
            if item.id in written:
                out.add(fk.table_id)
            if fk.table_id in written:
                out.add(item.id)
    return out - written


def involved(written: Iterable[str], items: dict[str, Item]) -> set[str]:
    """The tables a write to `written` must count for its foreign keys (none: it has none)."""
    written = set(written)
    if not any(item.foreign_keys for item in items.values()):
        return set()
    own = {cid for cid in written if cid in items and (items[cid].foreign_keys or referencing(items.values(), cid))}
    return own | related(written, items) if own else set()


def parent_key(unique: UniqueKeys, parent: Item, fk: ForeignKey) -> KeyCounts | None:
    """The parent's counts of the key `fk` refers to."""
    return next((c for c in unique.counts(parent) if set(c.key.columns) == set(fk.ref_columns)), None)


def _in_parent_order(fk: ForeignKey, parent_counts: KeyCounts, child_key: tuple) -> tuple:
    """A child's key values in the order of the parent key's columns."""
    by_ref = dict(zip(fk.ref_columns, child_key, strict=True))
    return tuple(by_ref[c] for c in parent_counts.key.columns)


def violation(unique: UniqueKeys, updates: dict[str, pa.Table], items: dict[str, Item],
              deferred: Callable[[ForeignKey], bool] | None = None,
              earlier: Iterable[dict[str, pa.Table]] = ()) -> SqlError | None:
    """The first foreign key `updates` would break once committed over the present counts
    (and the `earlier` writes committed with them). `deferred`, at a transaction block's
    statement: the keys left to COMMIT (INITIALLY DEFERRED, or SET CONSTRAINTS … DEFERRED);
    None at COMMIT: every key."""
    nets: dict[tuple[str, str], dict[tuple, int]] = {}

    def net(item: Item, counts: KeyCounts) -> dict[tuple, int]:
        slot = (item.id, counts.key.name)
        if slot not in nets:
            tables = [t for w in [*earlier, updates] for cid, t in w.items() if cid == item.id and t.num_rows]
            nets[slot] = net_changes(tables, counts.positions)
        return nets[slot]

    for cid, table in updates.items():
        item = items.get(cid)
        if item is None or not table.num_rows:
            continue
        for fk in item.foreign_keys:
            if deferred is not None and deferred(fk):
                continue
            error = _missing_parent(unique, item, fk, table, items, net)
            if error is not None:
                return error
        for child, fk in referencing(items.values(), cid):
            if deferred is not None and deferred(fk):
                continue
            error = _still_referenced(unique, item, child, fk, items, net)
            if error is not None:
                return error
    return None


def _missing_parent(unique: UniqueKeys, child: Item, fk: ForeignKey, table: pa.Table, items: dict[str, Item],
                    net) -> SqlError | None:
    parent = items.get(fk.table_id)
    if parent is None:
        return None
    counts = parent_key(unique, parent, fk)
    if counts is None:
        return None
    positions = tuple(child.column_names.index(c) for c in fk.columns)
    parent_net = net(parent, counts)
    for key, change in key_changes(table, positions).items():
        if change.net <= 0:
            continue
        wanted = _in_parent_order(fk, counts, key)
        if counts.counts.get(wanted, 0) + parent_net.get(wanted, 0) <= 0:
            shown = _shown(child, fk.columns, change.values)
            return SqlError(FOREIGN_KEY_VIOLATION,
                            f'insert or update on table "{child.name}" violates foreign key constraint "{fk.name}"',
                            detail=f"Key ({', '.join(fk.columns)})=({shown}) is not present in table "
                                   f'"{parent.name}".')
    return None


def _still_referenced(unique: UniqueKeys, parent: Item, child: Item, fk: ForeignKey, items: dict[str, Item],
                      net) -> SqlError | None:
    counts = parent_key(unique, parent, fk)
    references = unique.find(child, fk.name)
    if counts is None or references is None:
        return None
    parent_net = net(parent, counts)
    child_net = net(child, references)
    for key, change in parent_net.items():
        if change >= 0 or counts.counts.get(key, 0) + change > 0:
            continue  # the key stays
        by_parent = dict(zip(counts.key.columns, key, strict=True))
        child_key = tuple(by_parent[r] for r in fk.ref_columns)
        if references.counts.get(child_key, 0) + child_net.get(child_key, 0) > 0:
            shown = _shown(parent, fk.ref_columns, child_key)
            return SqlError(FOREIGN_KEY_VIOLATION,
                            f'update or delete on table "{parent.name}" violates foreign key constraint "{fk.name}" '
                            f'on table "{child.name}"',
                            detail=f"Key ({', '.join(fk.ref_columns)})=({shown}) is still referenced from table "
                                   f'"{child.name}".')
    return None


def unreferenced(unique: UniqueKeys, child: Item, fk: ForeignKey, items: dict[str, Item]) -> SqlError | None:
    """ALTER TABLE … ADD FOREIGN KEY over rows there are: the first that refers to nothing."""
    parent = items.get(fk.table_id)
    references = unique.find(child, fk.name)
    counts = parent_key(unique, parent, fk) if parent is not None else None
    if references is None or counts is None:
        return None
    for key in references.counts:
        if counts.counts.get(_in_parent_order(fk, counts, key), 0) <= 0:
            return SqlError(FOREIGN_KEY_VIOLATION,
                            f'insert or update on table "{child.name}" violates foreign key constraint "{fk.name}"',
                            detail=f"Key ({', '.join(fk.columns)})=({_shown(child, fk.columns, key)}) is not "
                                   f'present in table "{parent.name}".')
    return None


def _shown(item: Item, columns: tuple[str, ...], values: tuple) -> str:
    return ", ".join(encode_text(item.column(c).type, v).decode() for c, v in zip(columns, values, strict=True))


def drop_references(catalog: Catalog, ops: list[CatalogOp], cascade: bool,
                    notices: list[tuple[str, str]]) -> list[CatalogOp]:
    """DROP TABLE of a table other tables' foreign keys refer to: 2BP01, or with CASCADE
    those constraints dropped (the tables stay), as PostgreSQL does."""
    dropped = {op.id for op in ops if isinstance(op, DropItem)}
    changed: dict[str, Item] = {}
    for parent_id in dropped:
        parent = catalog.items.get(parent_id)
        for child, fk in referencing(catalog.items.values(), parent_id):
            if child.id in dropped:
                continue
            if not cascade:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               f"cannot drop table {parent.name} because other objects depend on it",
                               detail=f"constraint {fk.name} on table {child.name} depends on table {parent.name}",
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            notices.append(("NOTICE", f"drop cascades to constraint {fk.name} on table {child.name}"))
            base = changed.get(child.id, child)
            changed[child.id] = dataclasses.replace(base, foreign_keys=tuple(
                f for f in base.foreign_keys if f.name != fk.name))
    return [*(AlterItem(c) for c in changed.values()), *ops]


def truncated(catalog: Catalog, tables: list[Item], cascade: bool, notices: list[tuple[str, str]]) -> list[Item]:
    """The tables TRUNCATE empties: those named, and with CASCADE every table referring to
    one of them, in turn (a NOTICE each, as PostgreSQL). Without CASCADE, a table others
    refer to, without them, is 0A000."""
    if not cascade:
        _check_truncate(catalog, tables)
        return tables
    out = list(tables)
    for table in out:  # grows as it goes
        for child, _fk in referencing(catalog.items.values(), table.id):
            if all(child.id != t.id for t in out):
                notices.append(("NOTICE", f'truncate cascades to table "{child.name}"'))
                out.append(child)
    return out


def _check_truncate(catalog: Catalog, tables: list[Item]) -> None:
    names = {t.id for t in tables}
    for table in tables:
        for child, _fk in referencing(catalog.items.values(), table.id):
            if child.id not in names:
                raise SqlError(FEATURE_NOT_SUPPORTED, "cannot truncate a table referenced in a foreign key constraint",
                               detail=f'Table "{child.name}" references "{table.name}".',
                               hint=f'Truncate table "{child.name}" at the same time, or use TRUNCATE ... CASCADE.')


def referring_to_column(catalog: Catalog, table: Item, column: str) -> tuple[Item, ForeignKey] | None:
    """A foreign key of another table that refers to `column` of `table`."""
    return next(((child, fk) for child, fk in referencing(catalog.items.values(), table.id)
                 if column in fk.ref_columns and child.id != table.id), None)


def key_in_use(catalog: Catalog, table: Item, key_columns: tuple[str, ...]) -> tuple[Item, ForeignKey] | None:
    """A foreign key that refers to this key of `table` (which then cannot be dropped)."""
    return next(((child, fk) for child, fk in referencing(catalog.items.values(), table.id)
                 if set(fk.ref_columns) == set(key_columns)), None)
