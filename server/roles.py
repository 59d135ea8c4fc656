"""Roles with passwords: CREATE ROLE ... PASSWORD, ALTER ROLE ... PASSWORD, DROP ROLE.

Only the SCRAM-SHA-256 verifier is kept (durably, in the catalog), never the
password. Once any role has a password, every login is authenticated.
"""

from __future__ import annotations

from planner import source_syntax as srcs
from planner.errors import DUPLICATE_OBJECT, UNDEFINED_OBJECT, SqlError
from server.catalog_items import Item
from server.catalog_ops import SetDetails
from server.outcome import CommandDone
from server.protocol.scram import make_verifier
from server.statement_context import StatementContext


async def create_role(session: StatementContext, stmt: srcs.CreateRole, params, ptypes):
    session.no_ddl_in_transaction("ALTER ROLE" if stmt.alter else "CREATE ROLE")
    coord = session.coord
    existing = coord.catalog.get(stmt.name)
    verifier = make_verifier(stmt.password) if stmt.password is not None else None
    if stmt.alter:
        if existing is None or existing.kind != "role":
            raise SqlError(UNDEFINED_OBJECT, f'role "{stmt.name}" does not exist')
        await session.ddl(lambda: [SetDetails(existing.id, {"verifier": verifier})])
        return CommandDone("ALTER ROLE")
    if existing is not None:
        raise SqlError(DUPLICATE_OBJECT, f'role "{stmt.name}" already exists')
    item = Item(coord.catalog.allocate_id(), stmt.name, "role", (), coord.read_ts(),
                details={"verifier": verifier})
    await session.ddl(lambda: coord.catalog.plan_create(item))
    return CommandDone("CREATE ROLE")


HANDLERS = {srcs.CreateRole: create_role}
