"""What a statement handler outside the session may use of it: the coordinator, the
server's sources, and DDL's two rules (not in a transaction block; planned and committed
under the write lock). The session provides it; handlers for sources, connections,
secrets and roles (server.sources, server.kafka, server.roles) take it, so they need
neither the session's module nor its private members."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from planner.translate import SessionContext
from server.catalog import Catalog
from server.catalog_ops import CatalogOp
from server.coordinator import Coordinator


class StatementContext(Protocol):
    coord: Coordinator
    # The server's SourceManager (server.sources, which is above this module), None in
    # a session without one.
    server_sources: Any
    # The session's transaction (server.transaction.Transaction), None outside one.
    txn: Any
    database: str  # the database the session connected to

    @property
    def catalog(self) -> Catalog:
        """The catalog as this session sees it (with its transaction block's staged DDL)."""

    def context(self) -> SessionContext:
        """The values of the session functions for this statement (for a default's value)."""

    def no_ddl_in_transaction(self, what: str) -> None:
        """25001 inside an explicit transaction block: `what` cannot be staged."""

    async def ddl(self, plan: Callable[[], list[CatalogOp]]) -> None:
        """Plan catalog operations under the write lock, against the live catalog, and
        commit them at once (nothing when the plan is empty)."""

    async def table_ddl(self, plan: Callable[[Catalog], list[CatalogOp]]) -> None:
        """Plan catalog operations against the catalog as the session sees it, and commit
        them at once - or, in a transaction block, stage them for its COMMIT."""
