"""The system catalog's view of FOREIGN KEY constraints: their pg_constraint rows (contype
'f'), pg_get_constraintdef's text, and information_schema's table_constraints,
key_column_usage, referential_constraints and constraint_column_usage — as PostgreSQL 15
fills them, so psql's `\\d` ("Foreign-key constraints", "Referenced by") and ORMs' schema
readers find them."""

from __future__ import annotations

from collections.abc import Iterator

from planner.pg_compat import NAMESPACES
from planner.table_foreign_keys import Action
from server.catalog import FIRST_USER_OID
from server.catalog_items import ForeignKey, IndexDef, Item, UniqueKey
from server.system_keys import CONSTRAINT_OID_OFFSET, DATABASE, quote_ident


def _references(tables: list[Item]) -> Iterator[tuple[Item, ForeignKey, Item, UniqueKey | IndexDef]]:
    """(child, its foreign key, the parent, the parent's key it refers to)."""
    by_id = {t.id: t for t in tables}
    for child in tables:
        for fk in child.foreign_keys:
            parent = by_id.get(fk.table_id)
            key = next((k for k in parent.unique_sets if set(k.columns) == set(fk.ref_columns)), None) \
                if parent is not None else None
            if key is not None:
                yield child, fk, parent, key


def constraint_oid(fk: ForeignKey) -> int:
    return FIRST_USER_OID + int(fk.fk_id[1:]) + CONSTRAINT_OID_OFFSET


def definition(fk: ForeignKey, parent: Item) -> str:
    """pg_get_constraintdef: `FOREIGN KEY (pid) REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED`."""
    text = (f"FOREIGN KEY ({', '.join(quote_ident(c) for c in fk.columns)}) REFERENCES "
            f"{quote_ident(parent.name)}({', '.join(quote_ident(c) for c in fk.ref_columns)})")
    if fk.on_update is not Action.NO_ACTION:  # ruleutils writes ON UPDATE first
        text += f" ON UPDATE {fk.on_update.sql}"
    if fk.on_delete is not Action.NO_ACTION:
        text += f" ON DELETE {fk.on_delete.sql}"
    if fk.deferrable:
        text += " DEFERRABLE"
    if fk.deferred:
        text += " INITIALLY DEFERRED"
    if not fk.validated:
        text += " NOT VALID"
    return text


def pg_constraint_rows(tables: list[Item]) -> Iterator[tuple]:
    for child, fk, parent, key in _references(tables):
        index = key.index_id
        yield (constraint_oid(fk), fk.name, NAMESPACES["public"], "f", fk.deferrable, fk.deferred, fk.validated,
               child.oid, 0, FIRST_USER_OID + int(index[1:]), 0, parent.oid, fk.on_update.value, fk.on_delete.value,
               "s", True, 0, True,
               [child.attnum(c) for c in fk.columns], [parent.attnum(c) for c in fk.ref_columns],
               None, None, None, None, None, None)


def definition_rows(tables: list[Item]) -> Iterator[tuple]:
    for _child, fk, parent, _key in _references(tables):
        text = definition(fk, parent)
        yield constraint_oid(fk), text, text


def table_constraints_rows(tables: list[Item]) -> Iterator[tuple]:
    for child, fk, _parent, _key in _references(tables):
        yield (DATABASE, "public", fk.name, DATABASE, "public", child.name, "FOREIGN KEY",
               "YES" if fk.deferrable else "NO", "YES" if fk.deferred else "NO", "YES", None)


def key_column_usage_rows(tables: list[Item]) -> Iterator[tuple]:
    for child, fk, _parent, key in _references(tables):
        for i, (col, ref) in enumerate(zip(fk.columns, fk.ref_columns, strict=True), start=1):
            yield DATABASE, "public", fk.name, DATABASE, "public", child.name, col, i, key.columns.index(ref) + 1


def referential_constraints_rows(tables: list[Item]) -> Iterator[tuple]:
    for _child, fk, _parent, key in _references(tables):
        yield (DATABASE, "public", fk.name, DATABASE, "public", key.name, "NONE", fk.on_update.sql,
               fk.on_delete.sql)


def constraint_column_usage_rows(tables: list[Item]) -> Iterator[tuple]:
    for _child, fk, parent, _key in _references(tables):
        for col in fk.ref_columns:
            yield DATABASE, "public", parent.name, col, DATABASE, "public", fk.name
