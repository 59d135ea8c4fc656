"""SET CONSTRAINTS { ALL | name [, ...] } { DEFERRED | IMMEDIATE }: when a transaction
block checks its DEFERRABLE foreign keys, after each statement or at COMMIT (Django checks
its deferred keys with `SET CONSTRAINTS ALL IMMEDIATE` at the end of each test).

As in PostgreSQL: outside a block it is a WARNING and changes nothing (the names are looked
up all the same); a name no constraint has is 42704, a constraint that is not deferrable
(every PRIMARY KEY, UNIQUE and CHECK here) 42809 when deferring it; switching to IMMEDIATE checks what the
block already wrote, at once; ROLLBACK TO restores the modes the savepoint saw."""

from __future__ import annotations

from planner import statements as st
from planner.errors import INVALID_SCHEMA_NAME, UNDEFINED_OBJECT, WRONG_OBJECT_TYPE, SqlError
from server import staging
from server.catalog import Catalog
from server.outcome import CommandDone, Outcome
from server.statement_context import StatementContext

TAG = "SET CONSTRAINTS"


async def set_constraints(session: StatementContext, stmt: st.SetConstraints, params, ptypes) -> Outcome:
    ids = None if stmt.names is None else [
        i for schema, name in stmt.names for i in deferrable_ids(session.catalog, schema, name, stmt.deferred)]
    txn = session.txn
    if txn is None or not txn.explicit:
        return CommandDone(TAG, notices=[("WARNING", "SET CONSTRAINTS can only be used in transaction blocks")])
    txn.constraints = txn.constraints.set(ids, stmt.deferred)
    if not stmt.deferred:
        await staging.check_staged_references(session)
    return CommandDone(TAG)


def deferrable_ids(catalog: Catalog, schema: str | None, name: str, deferring: bool) -> list[str]:
    """The ids of the deferrable foreign keys named `name` (every table's: names are not
    unique). Naming a constraint that cannot be deferred is an error only when deferring."""
    if schema not in (None, "public", "pg_catalog", "information_schema"):
        raise SqlError(INVALID_SCHEMA_NAME, f'schema "{schema}" does not exist')
    found, exists = [], False
    for item in catalog.items.values() if schema in (None, "public") else ():
        for fk in item.foreign_keys:
            if fk.name == name:
                exists = True
                if fk.deferrable:
                    found.append(fk.fk_id)
                elif deferring:
                    raise _not_deferrable(name)
        if any(k.name == name for k in item.keys) or any(c.name == name for c in item.checks):
            exists = True
            if deferring:
                raise _not_deferrable(name)
    if not exists:
        raise SqlError(UNDEFINED_OBJECT, f'constraint "{name}" does not exist')
    return found


def _not_deferrable(name: str) -> SqlError:
    return SqlError(WRONG_OBJECT_TYPE, f'constraint "{name}" is not deferrable')


HANDLERS = {st.SetConstraints: set_constraints}
