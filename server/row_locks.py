"""SELECT … FOR UPDATE | FOR NO KEY UPDATE | FOR SHARE | FOR KEY SHARE [OF t] [NOWAIT | SKIP LOCKED].

PostgreSQL locks the rows a locking SELECT returns until the transaction ends, so that no
other transaction changes them meanwhile: the read-then-write of an ORM's
`select_for_update`, or a job queue's `FOR UPDATE SKIP LOCKED LIMIT 1`. sparkwire's writes
are already serialized by one write lock, which a transaction block that writes after
reading holds until it ends (server.session). A locking SELECT in a block takes that lock
at once: until COMMIT or ROLLBACK no other session writes anything, a stronger lock than
PostgreSQL's rows, never a weaker one. While another block holds it, NOWAIT is PostgreSQL's
55P03 and SKIP LOCKED returns no rows (every row counts as locked); plain waits for it.
Outside a block the lock would end with the statement, so none is taken, as in PostgreSQL
where nothing can come between the statement's read and its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from planner import pg_parse
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from server.coordinator import Coordinator
from server.transaction import Transaction

LOCK_NOT_AVAILABLE = "55P03"
# A cheap test before parsing: most queries lock nothing.
_MAYBE = re.compile(r"\bfor\s+(update|share|no\s+key|key\s+share)\b", re.IGNORECASE)
_STRENGTHS = {"LCS_FORUPDATE": "FOR UPDATE", "LCS_FORNOKEYUPDATE": "FOR NO KEY UPDATE",
              "LCS_FORSHARE": "FOR SHARE", "LCS_FORKEYSHARE": "FOR KEY SHARE"}


@dataclass(frozen=True)
class Locking:
    """A query's locking clause: how it waits (pglast's LockWaitBlock, LockWaitError for
    NOWAIT, LockWaitSkip for SKIP LOCKED) and the relation a lock error names."""

    wait: str
    relation: str | None


class LockingSession(Protocol):
    coord: Coordinator
    txn: Transaction | None


def clause(text: str) -> Locking | None:
    """The query's own locking clause (its first), or None; 0A000 where PostgreSQL refuses
    one, 42P01 for an `OF` name that is no FROM item."""
    if not _MAYBE.search(text):
        return None
    tree = pg_parse.parse_one(text)
    select = tree.get("SelectStmt")
    if select is None or not select.get("lockingClause"):
        return None
    locking = select["lockingClause"][0]["LockingClause"]
    what = _STRENGTHS.get(locking.get("strength"), "FOR UPDATE")
    for field, name in (("distinctClause", "DISTINCT clause"), ("groupClause", "GROUP BY clause"),
                        ("havingClause", "HAVING clause")):
        if select.get(field):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not allowed with {name}")
    if select.get("op", "SETOP_NONE") != "SETOP_NONE":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not allowed with UNION/INTERSECT/EXCEPT")
    named = _from_items(select.get("fromClause") or [])
    locked = [node["RangeVar"]["relname"] for node in locking.get("lockedRels") or ()]
    for name in locked:
        if name not in named:
            raise SqlError("42P01", f'relation "{name}" in {what} clause not found in FROM clause')
    relation = named[locked[0]] if locked else next(iter(named.values()), None)
    return Locking(locking.get("waitPolicy", "LockWaitBlock"), relation)


def _from_items(from_clause: list) -> dict[str, str | None]:
    """The names FROM gives its items (an alias, else a table's name), in joins too, each
    with the table it reads (None for a subquery or a function)."""
    named: dict[str, str | None] = {}
    for kind, node in pg_parse.walk(from_clause):
        alias = (node.get("alias") or {}).get("aliasname")
        if kind == "RangeVar":
            named.setdefault(alias or node["relname"], node["relname"])
        elif kind in ("RangeSubselect", "RangeFunction") and alias:
            named.setdefault(alias, None)
    return named


async def take(session: LockingSession, text: str) -> bool:
    """Take what a locking SELECT needs before it reads; True when SKIP LOCKED must return
    no rows."""
    locking = clause(text)
    txn = session.txn
    if locking is None or txn is None or not txn.explicit or txn.holds_lock:
        return False
    lock = session.coord.write_lock
    if lock.locked() and locking.wait == "LockWaitError":
        raise SqlError(LOCK_NOT_AVAILABLE, "could not obtain lock on row" + (
            f' in relation "{locking.relation}"' if locking.relation else ""))
    if lock.locked() and locking.wait == "LockWaitSkip":
        return True
    await lock.acquire()
    txn.holds_lock = True
    return False
