"""Sequences in the catalog: CREATE SEQUENCE, ALTER SEQUENCE, DROP SEQUENCE, and the
sequences CREATE TABLE makes for its serial and identity columns.

A sequence is a catalog item of kind "sequence" (pg_class relkind 'S'), its options and
state in its details (server.sequences). One made for a column is owned by it and
dropped with its table; a serial column's default names it (`nextval('t_id_seq'::regclass)`),
so DROP SEQUENCE refuses while the default exists (2BP01), as PostgreSQL does.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from planner import sequence_syntax, table_keys
from planner import sequences as seq
from planner import statements as st
from planner.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    SqlError,
)
from server import sequences
from server.catalog import Catalog
from server.catalog_items import Column, Item
from server.catalog_ops import AlterItem, CatalogOp, DropItem, SetDetails
from server.outcome import CommandDone, Outcome
from server.statement_context import StatementContext


def table_columns(catalog: Catalog, stmt: st.CreateTable, table_id: str, created_at: int,
                  columns: list[Column]) -> tuple[list[Column], list[Item]]:
    """CREATE TABLE's columns with their sequences: a serial column's default names its
    new sequence, an identity column is marked; and the sequences, named as PostgreSQL
    names them (`t_id_seq`, then `t_id_seq1`, … while the name is taken)."""
    taken = {i.name for i in catalog.items.values()} | catalog.index_names() | {stmt.name}
    out: list[Column] = []
    made: list[Item] = []
    for column, definition in zip(columns, stmt.columns, strict=True):
        generated = definition.sequence
        if generated is None:
            out.append(column)
            continue
        name = generated.name or table_keys.chosen_name(stmt.name, column.name, "seq", taken)
        if name in taken:
            raise SqlError("42P07", f'relation "{name}" already exists')
        taken.add(name)
        made.append(Item(catalog.allocate_id(), name, sequences.KIND, (), created_at,
                         details=sequences.details(generated.spec, seq.start_state(generated.spec),
                                                   (table_id, column.name), generated.identity is not None)))
        if generated.identity is None:
            out.append(dataclasses.replace(column, default=seq.nextval_default(name)))
        else:
            out.append(dataclasses.replace(column, identity=generated.identity))
    return out, made


def check_nextval_defaults(catalog: Catalog, stmt: st.CreateTable) -> None:
    """42P01 for a `DEFAULT nextval('s')` when there is no sequence s."""
    for c in stmt.columns:
        name = seq.nextval_literal(c.default) if c.default is not None else None
        if name is not None:
            sequences.named(catalog, name)


def default_text(default: exp.Expression | None) -> str | None:
    """A column default as the catalog keeps it: PostgreSQL-dialect SQL, and
    `nextval('s'::regclass)` for a call of nextval, as PostgreSQL prints it."""
    if default is None:
        return None
    name = seq.nextval_literal(default)
    return seq.nextval_default(name) if name is not None else default.sql("postgres")


def drop_owned(catalog: Catalog, ops: list[CatalogOp]) -> list[CatalogOp]:
    """`ops` and the drops of the sequences owned by the tables they drop."""
    dropped = {op.id for op in ops if isinstance(op, DropItem)}
    extra = [DropItem(s.id) for t in dropped for s in sequences.owned_by(catalog, t) if s.id not in dropped]
    return ops + extra


async def restart_owned(session: StatementContext, tables: list[Item], lock_held: bool) -> None:
    """TRUNCATE … RESTART IDENTITY: the tables' own sequences back at their start, at once
    (PostgreSQL undoes it with a ROLLBACK; a sequence's state is not transactional here)."""
    for table in tables:
        for owned in sequences.owned_by(session.catalog, table.id):
            await session.coord.sequence_values.restart(owned, seq.start_state(sequences.spec_of(owned)),
                                                        session.txn, lock_held)


def plan_drop_sequences(catalog: Catalog, stmt: st.Drop) -> tuple[list[CatalogOp], list[str]]:
    """DROP SEQUENCE: refused (2BP01) while a column's default draws from it, unless
    CASCADE, which drops those defaults; an identity column's sequence cannot be dropped."""
    ops: list[CatalogOp] = []
    notices: list[str] = []
    altered: dict[str, Item] = {}
    for name in stmt.names:
        item = catalog.get(name)
        if item is None:
            if stmt.if_exists:
                notices.append(f'sequence "{name}" does not exist, skipping')
                continue
            raise SqlError(UNDEFINED_TABLE, f'sequence "{name}" does not exist')
        if item.kind != sequences.KIND:
            raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a sequence',
                           hint=f"Use DROP {item.kind.upper()} to remove it.")
        owned = item.details.get("owned_by")
        if owned and owned.get("identity"):
            table = catalog.items.get(owned["table"])
            raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                           f"cannot drop sequence {name} because column {owned['column']} of table "
                           f"{table.name if table else '?'} requires it",
                           hint=f"You can drop column {owned['column']} of table "
                                f"{table.name if table else '?'} instead.")
        for table in catalog.items.values():
            users = [c for c in table.columns if seq.sequence_in_default(c.default) == name]
            if not users or table.kind != "table":
                continue
            if not stmt.cascade:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               f"cannot drop sequence {name} because other objects depend on it"
                               if len(stmt.names) == 1 else
                               "cannot drop desired object(s) because other objects depend on them",
                               detail=f"default value for column {users[0].name} of table {table.name} "
                                      f"depends on sequence {name}",
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            base = altered.get(table.id, table)
            altered[table.id] = dataclasses.replace(base, columns=tuple(
                dataclasses.replace(c, default=None) if c in users else c for c in base.columns))
        ops.append(DropItem(item.id))
    return [*(AlterItem(t) for t in altered.values()), *ops], notices


async def create_sequence(session: StatementContext, stmt: st.CreateSequence, params, ptypes) -> Outcome:
    notices: list[tuple[str, str]] = []

    def plan(catalog: Catalog) -> list[CatalogOp]:
        if stmt.if_not_exists and (catalog.get(stmt.name) is not None or stmt.name in catalog.index_names()):
            notices.append(("NOTICE", f'relation "{stmt.name}" already exists, skipping'))
            return []
        owned_by = _owner(catalog, stmt.owned_by) if stmt.owned_by else None
        item = Item(catalog.allocate_id(), stmt.name, sequences.KIND, (), session.coord.read_ts(),
                    details=sequences.details(stmt.spec, seq.start_state(stmt.spec), owned_by))
        return catalog.plan_create(item)

    await session.table_ddl(plan)
    return CommandDone("CREATE SEQUENCE", notices=notices)


async def alter_sequence(session: StatementContext, stmt: st.AlterSequence, params, ptypes) -> Outcome:
    item = session.catalog.get(stmt.name)
    if item is None or item.kind != sequences.KIND:
        if item is None and stmt.if_exists:
            return CommandDone("ALTER SEQUENCE", notices=[("NOTICE", f'relation "{stmt.name}" does not exist, skipping')])
        if item is None:
            raise SqlError(UNDEFINED_TABLE, f'relation "{stmt.name}" does not exist')
        raise SqlError(WRONG_OBJECT_TYPE, f'"{stmt.name}" is not a sequence')
    spec, owned, restart = sequence_syntax.alter_options(stmt.text, sequences.spec_of(item))
    current = session.coord.sequence_values.current(item)
    if restart is None and not spec.minvalue <= current.last_value <= spec.maxvalue:
        # PostgreSQL checks the current value against the new bounds too.
        raise SqlError("22023", f"RESTART value ({current.last_value}) cannot be "
                                f"{'less than MINVALUE' if current.last_value < spec.minvalue else 'greater than MAXVALUE'}"
                                f" ({spec.minvalue if current.last_value < spec.minvalue else spec.maxvalue})")
    facts: dict = {"spec": spec.to_json()}
    if owned is not None:
        owner = _owner(session.catalog, owned) if owned else None
        facts["owned_by"] = {"table": owner[0], "column": owner[1], "identity": False} if owner else None

    def plan(catalog: Catalog) -> list[CatalogOp]:
        return [SetDetails(item.id, facts)]

    await session.table_ddl(plan)
    session.coord.sequence_values.options_changed(item.id)
    if restart is not None:
        txn = session.txn
        await session.coord.sequence_values.restart(item, seq.State(restart, False), txn,
                                                    lock_held=txn is not None and txn.holds_lock)
    return CommandDone("ALTER SEQUENCE")


def _owner(catalog: Catalog, parts: tuple[str, ...]) -> tuple[str, str]:
    if len(parts) < 2:
        raise SqlError("42601", "invalid OWNED BY option", hint="Specify OWNED BY table.column or OWNED BY NONE.")
    table_name, column = parts[-2], parts[-1]
    table = catalog.get(table_name)
    if table is None:
        raise SqlError(UNDEFINED_TABLE, f'relation "{table_name}" does not exist')
    if table.kind != "table":
        raise SqlError(WRONG_OBJECT_TYPE, f'sequence cannot be owned by relation "{table_name}"',
                       detail=f'This operation is not supported for {table.kind}s.')
    if table.column(column) is None:
        raise SqlError("42703", f'column "{column}" of relation "{table_name}" does not exist')
    return table.id, column


HANDLERS = {
    st.CreateSequence: create_sequence,
    st.AlterSequence: alter_sequence,
}
