"""A transaction block's writes, staged: each statement's updates kept for COMMIT, after the
checks PostgreSQL makes at the statement — a duplicate key (23505) and, unless INITIALLY
DEFERRED, a foreign key (23503) — against what is committed and what the block staged
before. COMMIT checks again (server.coordinator.commit), against what others committed since."""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa

from server import foreign_keys, writes
from server.catalog import Catalog
from server.coordinator import Coordinator
from server.transaction import Transaction


class StagingSession(Protocol):
    coord: Coordinator
    txn: Transaction | None

    @property
    def catalog(self) -> Catalog: ...


async def stage(session: StagingSession, updates: dict[str, pa.Table]) -> None:
    """Stage a transaction block's write; a duplicate key fails the statement now, as in
    PostgreSQL (COMMIT checks again, against what other sessions committed since)."""
    if session.txn is None:
        return
    for cid, table in updates.items():
        if not table.num_rows:
            continue
        item = session.catalog.items.get(cid)
        if item is not None and item.unique_sets:
            if not session.coord.unique.built(item) and cid in session.coord.catalog.items:
                if session.txn.holds_lock:
                    await session.coord.count_keys([cid])
                else:
                    async with session.coord.write_lock:
                        await session.coord.count_keys([cid])
            error = session.coord.unique.staged_violation(item, table, session.txn.updates.get(cid, []))
            if error is not None:
                raise error
        session.txn.updates.setdefault(cid, []).append(table)
    await _check_references(session, [c for c, t in updates.items() if t.num_rows])


async def check_staged_references(session: StagingSession) -> None:
    """Every foreign key the block's writes so far involve, now (SET CONSTRAINTS … IMMEDIATE)."""
    await _check_references(session, list(session.txn.updates))


async def _check_references(session: StagingSession, written: list[str]) -> None:
    """FOREIGN KEY (not deferred) at the statement, over the block's writes so far, for the
    keys the collections `written` to are involved in; COMMIT checks again, all of them,
    against what others committed since."""
    touched = foreign_keys.involved(written, session.catalog.items)
    if not touched:
        return
    live = [c for c in touched if c in session.coord.catalog.items]
    if session.txn.holds_lock:
        await session.coord.count_keys(live, session.catalog.items)
    else:
        async with session.coord.write_lock:
            await session.coord.count_keys(live, session.catalog.items)
    staged = {cid: writes.concat_updates(tables) for cid, tables in session.txn.updates.items()}
    error = foreign_keys.violation(session.coord.unique, staged, session.catalog.items,
                                   deferred=session.txn.constraints.deferred)
    if error is not None:
        raise error
