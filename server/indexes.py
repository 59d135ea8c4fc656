"""CREATE INDEX and DROP INDEX: a table's indexes, recorded in its catalog item.

An index is recorded and shown in the catalog (pg_index, pg_indexes, psql's \\d); Spark
reads whole tables, so no query plan uses one. A UNIQUE index is enforced like a UNIQUE
constraint: creating it fails with 23505 when the table's rows already break it (checked
at COMMIT inside a transaction block), and later writes that would break it fail too.
"""

from __future__ import annotations

import dataclasses

from planner import statements as st
from planner import table_keys
from planner.errors import (
    DUPLICATE_TABLE,
    FEATURE_NOT_SUPPORTED,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    SqlError,
)
from server.catalog import Catalog
from server.catalog_items import IndexDef
from server.catalog_ops import AlterItem, CatalogOp
from server.outcome import CommandDone, Outcome
from server.statement_context import StatementContext

DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
UNDEFINED_OBJECT = "42704"


async def create_index(session: StatementContext, stmt: st.CreateIndex, params, ptypes) -> Outcome:
    if stmt.concurrently:
        session.no_ddl_in_transaction("CREATE INDEX CONCURRENTLY")
    notices: list[tuple[str, str]] = []

    def plan(catalog: Catalog) -> list[CatalogOp]:
        table = catalog.get(stmt.table)
        if table is None:
            raise SqlError(UNDEFINED_TABLE, f'relation "{stmt.table}" does not exist')
        if table.kind != "table":
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot create index on relation "{stmt.table}"',
                           detail=f"This operation is not supported for {table.kind}s.")
        if stmt.unique and table.source_id is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'cannot create a unique index on table "{table.name}": '
                                                  "it is fed by a source, which decides its rows")
        for col in stmt.columns:
            if table.column(col) is None:
                raise SqlError("42703", f'column "{col}" does not exist')
        taken = {i.name for i in catalog.items.values()} | catalog.index_names()
        name = table_keys.truncated(stmt.name) if stmt.name else table_keys.index_name(table.name, stmt.columns, taken)
        if name in taken:
            if stmt.if_not_exists:
                notices.append(("NOTICE", f'relation "{name}" already exists, skipping'))
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        index = IndexDef(name, stmt.columns, stmt.unique, catalog.allocate_id(), stmt.method, stmt.orders)
        return [AlterItem(dataclasses.replace(table, indexes=(*table.indexes, index)))]

    await session.table_ddl(plan)
    return CommandDone("CREATE INDEX", notices=notices)


async def drop_index(session: StatementContext, stmt: st.DropIndex, params, ptypes) -> Outcome:
    if stmt.concurrently:
        session.no_ddl_in_transaction("DROP INDEX CONCURRENTLY")
    notices: list[tuple[str, str]] = []

    def plan(catalog: Catalog) -> list[CatalogOp]:
        altered = {}
        for name in stmt.names:
            table = catalog.table_of_index(name)
            if table is not None:
                table = altered.get(table.id, table)
            if table is None or name not in table.index_names:
                if catalog.get(name) is not None:
                    raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not an index',
                                   hint="Use DROP TABLE to remove a table." if catalog.get(name).kind == "table" else None)
                if stmt.if_exists:
                    notices.append(("NOTICE", f'index "{name}" does not exist, skipping'))
                    continue
                raise SqlError(UNDEFINED_OBJECT, f'index "{name}" does not exist')
            if any(k.name == name for k in table.keys):
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               f"cannot drop index {name} because constraint {name} on table {table.name} requires it",
                               hint=f"You can drop constraint {name} on table {table.name} instead.")
            altered[table.id] = dataclasses.replace(table, indexes=tuple(i for i in table.indexes if i.name != name))
        return [AlterItem(item) for item in altered.values()]

    await session.table_ddl(plan)
    return CommandDone("DROP INDEX", notices=notices)


HANDLERS = {
    st.CreateIndex: create_index,
    st.DropIndex: drop_index,
}
